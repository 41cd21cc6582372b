/* NMODL constructs that need the simulation's loops, against NEURON 9.0.2's
 * traces (tests/data/nmodl, validation/nmodl_neuron_traces.py), in two cells
 * of one lane block:
 *   geomcell: area and diam, data/mechanisms/test/geom.mod (a leak whose
 *     conductance follows the segment's area and diam, a state set from diam)
 *     with pas in a tapered section of three segments (3D points of diameters
 *     2, 4, 2 um at 0, 4, 10 um: each segment its own area and diam): v at
 *     x = 0.5 (RMS, max, spike), s at x = 1/6; and the per-segment values
 *     themselves: s at INITIAL is diam/10 at every segment, gs after the first
 *     step g area / (3.14159 diam^2) s, from ns_cell_area and ns_cell_diam;
 *   wena, wenai: WRITE ena (test/wena.mod without a current, its BREAKPOINT
 *     after the v update; wenai.mod with its own ina, stored by finitialize's
 *     currents too) with hh, which reads ena: v and the ion's ena;
 *   bahook: BEFORE/AFTER blocks and a CONSTRUCTOR (test/bahook.mod, each block's effect in
 *     its current) with hh: v and the current u that BEFORE STEP sets; on the GPU the
 *     simulation refuses it (host code), naming the mechanism;
 *   ftab: FUNCTION_TABLEs (test/ftab.mod) given by ns_sim_model_set_function_table, after
 *     the refusal of the model without them: v and ninf.
 * And a TABLE that DEPENDs on a RANGE parameter (dtab, written here), which the
 * translator reads from a block's first instance (the TABLE is built from the
 * PARAMETER defaults, k = 1; a new k makes it build again): the CPU loop keeps one
 * TABLE per simulation for all its blocks, and one per block once two blocks would
 * each build it (sim/cpu/mechanisms.c, model_tables): two cells of two shapes (two
 * blocks), k = 1 in both and then 3 in the second; each cell's lookups k_default v^2.
 * On the CPU; also on the GPU where there is one and the test was given an
 * nvcc (tests/sim_nmodl_neuron.cmake). Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "nmodl_ref.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define DT 0.025
#define N_CELLS 2

static ns_cell_t *tapered(void) {
    const ns_morph_point pts[3] = {{0, 0, 0, 1.0, 3, -1, 1, 1}, {0, 4, 0, 2.0, 3, 0, 2, 2}, {0, 10, 0, 1.0, 3, 1, 3, 3}};
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_morph_from_points("tapered", pts, 3, &morph));
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.rule = NS_NSEG_FIXED_LENGTH;
    o.max_length = 4.0; /* 3 segments, as NEURON's nseg = 3 */
    if (morph) CHECK_OK(ns_discretize(morph, &o, &cell));
    ns_morph_destroy(morph);
    return cell;
}

typedef struct scase {
    const char *name, *model, *probe; /* NEURON's trace, the model, the probed variable */
    double probe_x, del, dur, amp;     /* where the probe is; the clamp at x = 0.5 */
    int geometry;                      /* the per-segment checks of geom.mod */
    int ftab;                          /* ftab.mod's FUNCTION_TABLEs (ftab_tables) */
} scase;

/* test/ftab.mod's tables, as validation/nmodl_neuron_traces.py's ftab_tables() makes them */
static double ft_x[10] = {-100, -85, -70, -62, -50, -35, -20, 0, 30, 60}, ft_ninf[10], ft_tau[48];
static void ftab_tables(ns_mech_ftable t[2]) {
    for (int i = 0; i < 10; ++i) ft_ninf[i] = 1 / (1 + exp(-(ft_x[i] + 45) / 9));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 3; ++j) {
            const double a = (-100 + 10 * i + 50) / 25.0;
            ft_tau[3 * i + j] = 1 + 4 * exp(-(a * a)) * (0.5 + 0.4 * j);
        }
    t[0] = (ns_mech_ftable){1, {10}, {ft_x}, {0}, {0}, ft_ninf};
    t[1] = (ns_mech_ftable){2, {16, 3}, {NULL, NULL}, {-100, 1}, {50, 3}, ft_tau};
}

static void run(ns_mech_library_t *lib, const ns_cell_t *cell, const scase *sc, ns_backend backend,
                const char *what) {
    ref rf;
    CHECK_MSG(read_ref(sc->name, &rf) == 0 && rf.n > 300, "cannot read NEURON's %s trace", sc->name);
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    const int32_t n = ns_tree_size(ns_cell_tree(cell));
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    if (!rf.row || !x || !y) goto out;
    int32_t mid = -1, first = -1;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &mid));
    CHECK_OK(ns_cell_locate(cell, 0, sc->probe_x, &first));
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) goto out;
    CHECK_OK(ns_sim_model_parse(model, sc->model, strlen(sc->model), "case.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    if (sc->ftab) { /* without the values the simulation refuses the model, naming the table */
        CHECK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim) == NS_ERR_INVALID_ARGUMENT && !sim);
        CHECK_MSG(strstr(ns_last_error(), "FUNCTION_TABLE tabninf has no values") &&
                      strstr(ns_last_error(), "tabninf_ftab"), "%s", ns_last_error());
        ns_mech_ftable t[2];
        ftab_tables(t);
        CHECK(ns_sim_model_set_function_table(model, "tabninf_ftab", &t[1]) == NS_ERR_INVALID_ARGUMENT);
        CHECK(ns_sim_model_set_function_table(model, "tabnone_ftab", &t[0]) == NS_ERR_INVALID_ARGUMENT);
        CHECK_OK(ns_sim_model_set_function_table(model, "tabninf_ftab", &t[0]));
        CHECK_OK(ns_sim_model_set_function_table(model, "tabntau_ftab", &t[1]));
        memset(ft_ninf, 0, sizeof ft_ninf); /* the model keeps copies */
    }
    p.celsius = 6.3;
    p.v_init = -65;
    p.dt = DT;
    CHECK_OK(ns_sim_create(1, shapes, N_CELLS, NULL, &p, &o, &sim));
    if (!sim) goto out;
    for (int64_t k = 0; k < N_CELLS; ++k) {
        CHECK_OK(ns_sim_add_iclamp(sim, k, mid, sc->del, sc->dur, sc->amp));
        CHECK_OK(ns_sim_add_recording(sim, k, mid, NULL));
    }
    /* the row at t = 0: after finitialize (wenai: its currents' ena) */
    CHECK_OK(ns_sim_get_model_var(sim, 0, sc->probe, x));
    double worst_s = fabs(x[first] - rf.row[2]) / fabs(rf.row[2]);
    /* every segment: s = diam/10 at INITIAL; after one step gs = g area / (3.14159 diam^2) s(0) */
    const double *A = ns_cell_area(cell), *D = ns_cell_diam(cell);
    if (sc->geometry) {
    CHECK_OK(ns_sim_get_model_var(sim, N_CELLS - 1, "s_geom", x));
    int segs = 0;
    for (int32_t i = 0; i < n; ++i)
        if (A[i] > 0.0) {
            segs++;
            CHECK_MSG(x[i] == D[i] / 10, "%s: s at compartment %d: %.17g, want diam/10 = %.17g", what, i, x[i],
                      D[i] / 10);
        }
    CHECK(segs == 3 && D[first] != D[mid] && A[first] != A[mid]); /* the segments differ */
    CHECK_OK(ns_sim_advance(sim, 1));
    CHECK_OK(ns_sim_get_model_var(sim, 0, "gs_geom", y));
    for (int32_t i = 0; i < n; ++i)
        if (A[i] > 0.0) {
            const double want = 1e-4 * A[i] / (3.14159 * D[i] * D[i]) * (D[i] / 10);
            CHECK_MSG(fabs(y[i] - want) <= 1e-15 * want, "%s: gs at compartment %d: %.17g, want %.17g", what, i,
                      y[i], want);
        }
    }
    /* against NEURON */
    for (int j = 1; j < rf.n; ++j) {
        CHECK_OK(ns_sim_advance(sim, lround(rf.row[4 * j] / DT) - lround(ns_sim_time(sim) / DT)));
        for (int64_t k = 0; k < N_CELLS; ++k) {
            CHECK_OK(ns_sim_get_model_var(sim, k, sc->probe, x));
            const double ds = fabs(x[first] - rf.row[4 * j + 2]) / fabs(rf.row[4 * j + 2]);
            if (!(ds <= worst_s)) worst_s = ds;
        }
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    const long steps = lround(rf.row[4 * (rf.n - 1)] / DT);
    CHECK(tr && samples == steps + 1 && sites == N_CELLS);
    for (int k = 0; tr && samples == steps + 1 && k < N_CELLS; ++k) {
        double sum = 0.0, worst = 0.0, prev = tr[k], spike = -1.0;
        for (int j = 0; j < rf.n; ++j) {
            const double dv = tr[lround(rf.row[4 * j] / DT) * sites + k] - rf.row[4 * j + 1];
            sum += dv * dv;
            if (!(fabs(dv) <= worst)) worst = fabs(dv);
        }
        for (long s = 1; s <= steps && spike < 0.0; ++s) {
            const double v = tr[s * sites + k];
            if (prev < 0.0 && v >= 0.0) spike = (s - 1) * DT + (0.0 - prev) * DT / (v - prev);
            prev = v;
        }
        const double rms = sqrt(sum / rf.n);
        printf("%s (%s), cell %d: RMS of v %.3e mV, max %.3e mV, first spike at %.9f ms (NEURON %.9f)\n", sc->name,
               what, k, rms, worst, spike, rf.n_spikes ? rf.spikes[0] : -1.0);
        CHECK_MSG(rms <= 1e-6 && worst <= 1e-4, "%s: cell %d: v differs from NEURON's: RMS %g mV, max %g mV", what,
                  k, rms, worst);
        CHECK(rf.n_spikes ? fabs(spike - rf.spikes[0]) < 1e-5 : spike < 0.0);
    }
    printf("%s (%s): %s at x = %.3g within %.3e of NEURON's (relative)\n", sc->name, what, sc->probe, sc->probe_x,
           worst_s);
    CHECK_MSG(worst_s <= 1e-8, "%s (%s): %s differs from NEURON's by %g (relative)", sc->name, what, sc->probe,
              worst_s);
out:
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    free(rf.row);
    free(x);
    free(y);
}

/* dtab.mod: y = f(v) = k v^2 by a TABLE that DEPENDs on k, a RANGE parameter (built with k's default) */
static const char *DTAB_MOD = "NEURON { SUFFIX dtab RANGE k, y }\nPARAMETER { k = 1 }\nASSIGNED { v y }\n"
                              "BREAKPOINT { y = f(v) }\n"
                              "FUNCTION f(u) {\n  TABLE DEPEND k FROM -100 TO 100 WITH 200\n  f = k*u*u\n}\n";

/* y of every compartment of cell c within the table's interpolation of k v^2 (a 1 mV grid: at most
 * 0.25 off where v^2 ~ 4000); the largest relative error */
static double dtab_error(ns_sim_t *sim, int64_t c, int32_t n, double k, double *v, double *y) {
    double worst = 0.0;
    CHECK_OK(ns_sim_get_state(sim, c, v));
    CHECK_OK(ns_sim_get_model_var(sim, c, "y_dtab", y));
    for (int32_t i = 0; i < n; ++i) worst = fmax(worst, fabs(y[i] - k * v[i] * v[i]) / (k * v[i] * v[i]));
    return worst;
}

static void table_per_block(ns_mech_library_t *lib, ns_cell_t *const cells[2]) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    const int32_t n1 = ns_tree_size(ns_cell_tree(cells[1]));
    double *k = malloc((size_t)n1 * sizeof *k), *v = malloc((size_t)n1 * sizeof *v), *y = malloc((size_t)n1 * sizeof *y);
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model || !k || !v || !y) goto out;
    CHECK_OK(ns_sim_model_parse(model, "all.insert = pas dtab\n", strlen("all.insert = pas dtab\n"), "dtab.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.model = model;
    const ns_cell_t *shapes[2] = {cells[0], cells[1]};
    const int32_t shape_of[2] = {0, 1};
    CHECK_OK(ns_sim_create(2, shapes, 2, shape_of, &p, &o, &sim));
    if (!sim) goto out;
    CHECK_OK(ns_sim_add_iclamp(sim, 1, 0, 0.0, 5.0, 0.05));
    CHECK_OK(ns_sim_advance(sim, 4)); /* both blocks on the one TABLE of k = 1 */
    const double e0 = fmax(dtab_error(sim, 0, ns_tree_size(ns_cell_tree(cells[0])), 1.0, v, y),
                           dtab_error(sim, 1, n1, 1.0, v, y));
    for (int32_t i = 0; i < n1; ++i) k[i] = 3.0;
    CHECK_OK(ns_sim_set_model_var(sim, 1, "k_dtab", k));
    CHECK_OK(ns_sim_advance(sim, 4)); /* the second block's DEPEND differs: a TABLE per block */
    const double e1 = dtab_error(sim, 1, n1, 1.0, v, y);
    const double e2 = dtab_error(sim, 0, ns_tree_size(ns_cell_tree(cells[0])), 1.0, v, y);
    printf("TABLE DEPEND on a RANGE parameter, two blocks: k v^2 within %.1e (shared), %.1e and %.1e (per block)\n",
           e0, e1, e2);
    CHECK_MSG(e0 < 1e-4 && e1 < 1e-4 && e2 < 1e-4, "dtab: k v^2 off by %g, %g, %g (relative)", e0, e1, e2);
out:
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    free(k);
    free(v);
    free(y);
}

#ifdef NS_NVCC
/* BEFORE/AFTER blocks are host code: the GPU loop refuses the mechanism, naming it */
static void hooks_refused_on_gpu(ns_mech_library_t *lib, const ns_cell_t *cell) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) return;
    const char *text = "all.insert = hh bahook\n";
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "case.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CUDA;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    const ns_status s = ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim);
    CHECK_MSG(s == NS_ERR_UNSUPPORTED, "bahook on the GPU: status %d", (int)s);
    CHECK_MSG(strstr(ns_last_error(), "bahook") && strstr(ns_last_error(), "CPU only"), "message: %s",
              ns_last_error());
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
}
#endif

int main(void) {
    if (tmpdir_make("ns_sim_nmodl_neuron")) return 1;
    int skip = 0;
    FILE *dtab = fopen(tmp("dtab.mod"), "w");
    CHECK(dtab != NULL && fputs(DTAB_MOD, dtab) >= 0 && fclose(dtab) == 0);
    char files[2048];
    snprintf(files, sizeof files, "%s %s", MECH_DIR "/test/geom.mod " MECH_DIR "/test/wena.mod " MECH_DIR
             "/test/wenai.mod " MECH_DIR "/test/bahook.mod " MECH_DIR "/test/ftab.mod", tmp("dtab.mod"));
    ns_mech_library_t *lib = test_mech_from_files(files, "libcases.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_cell_t *cells[2] = {tapered(), test_cylinder()};
    const scase cases[5] = {{"geomcell", "all.insert = pas geom\n", "s_geom", 1.0 / 6.0, 5, 20, 0.1, 1, 0},
                            {"wena", "all.insert = hh wena\n", "ena", 0.5, 2, 30, 0.2, 0, 0},
                            {"wenai", "all.insert = hh wenai\n", "ena", 0.5, 2, 30, 0.2, 0, 0},
                            {"bahook", "all.insert = hh bahook\n", "u_bahook", 0.5, 2, 30, 0.2, 0, 0},
                            {"ftab", "all.insert = pas ftab\n", "ninf_ftab", 0.5, 5, 20, 0.3, 0, 1}};
    for (int k = 0; k < 5 && lib && cells[0] && cells[1]; ++k) run(lib, cells[k > 0], &cases[k], NS_BACKEND_CPU, "CPU");
    if (lib && cells[0] && cells[1]) table_per_block(lib, cells);
    ns_mech_library_close(lib);
#ifdef NS_NVCC
    int devices = 0;
    if (cells[0] && cells[1] && ns_cuda_device_count(&devices) == NS_OK && devices > 0) {
        ns_mechanisms_build_options o = {0};
        o.nvcc = NS_NVCC;
        o.cuda_arch = NS_CUDA_ARCH;
        ns_mech_library_t *glib = test_mech_build(tmp("mod"), "libcases_cuda.so", &o, &skip);
        for (int k = 0; k < 3 && glib; ++k) run(glib, cells[k > 0], &cases[k], NS_BACKEND_CUDA, "GPU");
        if (glib) hooks_refused_on_gpu(glib, cells[1]);
        ns_mech_library_close(glib);
    }
#endif
    ns_cell_destroy(cells[0]);
    ns_cell_destroy(cells[1]);
    tmpdir_remove();
    return check_summary("test_sim_nmodl_neuron");
}
