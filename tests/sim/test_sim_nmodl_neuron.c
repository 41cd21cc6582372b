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
 *   brkzero: finitialize's evaluation of every mechanism's currents at t = 0 after INITIAL
 *     (test/brkzero.mod: capump's `if (t == 0) {parms()}` in BREAKPOINT sets the compartment
 *     that its KINETIC scheme divides by; without that evaluation the state is NaN): v and o;
 *   einit: a concentration read (test/einit.mod: READ nai) makes ena computed by Nernst at
 *     finitialize (NEURON's ion style, nrn_promote's einit): v and ena;
 *   bahook: BEFORE/AFTER blocks and a CONSTRUCTOR (test/bahook.mod, each block's effect in
 *     its current) with hh: v and the current u that BEFORE STEP sets; on the GPU too (the
 *     blocks as device launches, ns_mech_desc.cuda_hooks);
 *   kbstep: a KINETIC block SOLVEd by sparse in BEFORE STEP as well as BREAKPOINT
 *     (test/kbstep.mod: two sparse steps a time step) with pas: v and the state o; on the GPU too;
 *   ftab: FUNCTION_TABLEs (test/ftab.mod) given by ns_sim_model_set_function_table, after
 *     the refusal of the model without them: v and ninf; the same tables in the model text
 *     (table.NAME = x ... ; y ..., range N LO HI), and that text's errors by FILE:LINE;
 *   hocerr (data/mechanisms/hoc/hocerr.mod): hoc_execerror in BREAKPOINT's VERBATIM C once t
 *     passes terr stops ns_sim_advance with NS_ERR_MECHANISM naming the .mod file, the line of
 *     the call, the mechanism and the message, after as many completed steps as NEURON's
 *     fadvance, v then equal to NEURON's; the process goes on (NEURON's longjmp, not an abort);
 *     exit() and abort() in the C do the same; INITIAL's hoc_execerror (g < 0) stops
 *     finitialize; on 1 and 2 threads the same; on the GPU the same messages, the run stopped
 *     at the end of the interval (the ns_sim_advance call);
 *   vbstatic.mod: a static variable in VERBATIM C: the descriptor says why it is not thread
 *     safe; 2 threads asked for are refused (NEURON's finitialize refuses it on 2 threads too),
 *     OpenMP's default runs it on one.
 * And a TABLE that DEPENDs on a RANGE parameter (dtab, written here), which the
 * translator reads from a block's first instance (the TABLE is built from the
 * PARAMETER defaults, k = 1; a new k makes it build again): the CPU loop keeps one
 * TABLE per simulation for all its blocks, and one per block once two blocks would
 * each build it (mech/blocks.c, model_tables): two cells of two shapes (two
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
    int ftab;                          /* ftab.mod's FUNCTION_TABLEs (ftab_tables): 1 by the C API, 2 in the text */
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
    if (sc->ftab == 1) { /* without the values the simulation refuses the model, naming the table */
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
            /* the GPU divides by a constant as a product by its reciprocal (NSM_DIVC, docs/mechanisms.md,
             * "The GPU's arithmetic"): within an ulp there, the same double on the CPU */
            const double tol = strcmp(what, "GPU") == 0 ? 2.3e-16 * (D[i] / 10) : 0.0;
            CHECK_MSG(fabs(x[i] - D[i] / 10) <= tol, "%s: s at compartment %d: %.17g, want diam/10 = %.17g", what, i,
                      x[i], D[i] / 10);
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

#define HOC_CELLS 3
/* NEURON's values (tests/data/nmodl/hocerr.txt) */
static long ref_steps = -1, ref_init = -1, ref_nthread = -1;
static double ref_v = NAN;
static int read_hoc_ref(void) {
    FILE *f = fopen(NS_TEST_DATA "/nmodl/hocerr.txt", "r");
    if (!f) return -1;
    char line[256], key[64];
    while (fgets(line, sizeof line, f)) {
        double x;
        if (line[0] == '#' || sscanf(line, "%63s %lf", key, &x) != 2) continue;
        if (!strcmp(key, "steps_completed")) ref_steps = lround(x);
        if (!strcmp(key, "v_last")) ref_v = x;
        if (!strcmp(key, "init_stops")) ref_init = lround(x);
        if (!strcmp(key, "vbstatic_nthread2_refused")) ref_nthread = lround(x);
    }
    fclose(f);
    return ref_steps > 0 && ref_init >= 0 && ref_nthread >= 0 && isfinite(ref_v) ? 0 : -1;
}

static ns_status hoc_make(ns_mech_library_t *lib, const ns_cell_t *cell, const char *text, ns_backend backend,
                         int threads, ns_sim_model_t **model, ns_sim_t **sim) {
    *sim = NULL;
    CHECK_OK(ns_sim_model_create(lib, model));
    if (!*model) return NS_ERR_INTERNAL;
    CHECK_OK(ns_sim_model_parse(*model, text, strlen(text), "case.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.v_init = -65;
    p.dt = 0.025;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    if (backend == NS_BACKEND_CPU) o.method = NS_HINES_OPENMP;
    o.threads = threads;
    o.model = *model;
    const ns_cell_t *shapes[1] = {cell};
    return ns_sim_create(1, shapes, HOC_CELLS, NULL, &p, &o, sim);
}

/* hocerr with `how` (0 hoc_execerror, 1 exit, 2 abort) on `threads` threads */
static void hoc_stops(ns_mech_library_t *lib, const ns_cell_t *cell, int how, int threads) {
    char text[256];
    snprintf(text, sizeof text, "all.insert = hocerr\nall.e_hocerr = -70\nall.terr_hocerr = 5\nall.how_hocerr = %d\n",
             how);
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(hoc_make(lib, cell, text, NS_BACKEND_CPU, threads, &model, &sim));
    for (int64_t k = 0; sim && k < HOC_CELLS; ++k) CHECK_OK(ns_sim_add_recording(sim, k, 0, NULL));
    const ns_status s = sim ? ns_sim_advance(sim, 4 * ref_steps) : NS_OK;
    const char *e = ns_last_error();
    const char *what[] = {"hocerr: t passed terr (stopping)", "exit(3) in VERBATIM C", "abort() in VERBATIM C"};
    const char *line[] = {"hocerr.mod:30:", "hocerr.mod:28:", "hocerr.mod:29:"};
    printf("how %d, %d threads: %s\n", how, threads, e);
    CHECK_MSG(s == NS_ERR_MECHANISM, "how %d: status %d (%s)", how, (int)s, e);
    CHECK_MSG(strstr(e, line[how]) && strstr(e, "mechanism hocerr") && strstr(e, what[how]),
              "how %d: message names the file, line, mechanism and what it said: %s", how, e);
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = sim ? ns_sim_traces(sim, &samples, &sites) : NULL;
    /* the steps before the one that stopped: NEURON's completed fadvance calls, and their v */
    CHECK_MSG(samples == ref_steps + 1, "how %d: %lld samples, NEURON completed %ld steps", how, (long long)samples,
              ref_steps);
    for (int k = 0; tr && samples == ref_steps + 1 && k < HOC_CELLS; ++k)
        CHECK_MSG(fabs(tr[ref_steps * sites + k] - ref_v) <= 1e-9, "how %d: v %.17g, NEURON %.17g", how,
                  tr[ref_steps * sites + k], ref_v);
    /* stopped: again only after ns_sim_init, which starts without the error */
    if (sim) CHECK(ns_sim_advance(sim, 1) == NS_ERR_MECHANISM && strstr(ns_last_error(), "a mechanism's error"));
    if (sim) CHECK_OK(ns_sim_init(sim));
    if (sim) CHECK_OK(ns_sim_advance(sim, ref_steps));
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
}

/* A mechanism's errors and thread safety (data/mechanisms/hoc) against NEURON 9.0.2
 * (tests/data/nmodl/hocerr.txt, validation/nmodl_hoc_errors.py) */
static void hoc_errors(ns_mech_library_t *lib, const ns_cell_t *cell) {
    CHECK_MSG(read_hoc_ref() == 0, "cannot read NEURON's tests/data/nmodl/hocerr.txt");
    if (lib && cell && ref_steps > 0) {
        CHECK(ref_init == 1 && ref_nthread == 1); /* what NEURON does */
        for (int how = 0; how < 3; ++how) hoc_stops(lib, cell, how, 1);
        hoc_stops(lib, cell, 0, 2);
        /* INITIAL's hoc_execerror: finitialize (in ns_sim_create) stops */
        ns_sim_model_t *model = NULL;
        ns_sim_t *sim = NULL;
        const ns_status s = hoc_make(lib, cell, "all.insert = hocerr\nall.g_hocerr = -1\n", NS_BACKEND_CPU, 1, &model, &sim);
        CHECK_MSG(s == NS_ERR_MECHANISM && !sim && strstr(ns_last_error(), "hocerr.mod:21:") &&
                      strstr(ns_last_error(), "g must not be negative") && strstr(ns_last_error(), "finitialize"),
                  "INITIAL: status %d: %s", (int)s, ns_last_error());
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
        /* vbstatic: not thread safe */
        const ns_mech_desc *d = NULL;
        for (int k = 0; k < ns_mech_library_count(lib); ++k)
            if (!strcmp(ns_mech_library_get(lib, k)->name, "vbstatic")) d = ns_mech_library_get(lib, k);
        CHECK(d && d->thread_unsafe && strstr(d->thread_unsafe, "vbstatic.mod:18:") &&
              strstr(d->thread_unsafe, "file-scope variable ncalls"));
        for (int k = 0; k < ns_mech_library_count(lib); ++k)
            if (!strcmp(ns_mech_library_get(lib, k)->name, "hocerr")) CHECK(!ns_mech_library_get(lib, k)->thread_unsafe);
#ifdef NS_HAVE_OPENMP
        const ns_status s2 = hoc_make(lib, cell, "all.insert = vbstatic\n", NS_BACKEND_CPU, 2, &model, &sim);
        CHECK_MSG(s2 == NS_ERR_UNSUPPORTED && !sim && strstr(ns_last_error(), "vbstatic.mod:18:") &&
                      strstr(ns_last_error(), "not thread safe") && strstr(ns_last_error(), "threads = 1"),
                  "vbstatic on 2 threads: status %d: %s", (int)s2, ns_last_error());
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
#endif
        CHECK_OK(hoc_make(lib, cell, "all.insert = vbstatic\n", NS_BACKEND_CPU, 0, &model, &sim)); /* OpenMP's default: one thread */
        if (sim) CHECK_OK(ns_sim_advance(sim, 10));
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
    }
}

#ifdef NS_NVCC
/* hocerr on the GPU loop (a density mechanism's device error channel): the first error's file, line,
 * mechanism and message, read at the end of the interval (the ns_sim_advance call); then stopped until
 * ns_sim_init; INITIAL's error stops finitialize */
static void hoc_errors_gpu(ns_mech_library_t *lib, const ns_cell_t *cell) {
    /* the device's exit(n) says exit() (no formatting on the device) */
    const char *what[] = {"hocerr: t passed terr (stopping)", "exit() in VERBATIM C", "abort() in VERBATIM C"};
    const char *line[] = {"hocerr.mod:30:", "hocerr.mod:28:", "hocerr.mod:29:"};
    for (int how = 0; how < 3 && ref_steps > 0; ++how) {
        char text[256];
        /* how 2 beside pas, which cannot fail on the device: hocerr the channel's one record */
        snprintf(text, sizeof text, "all.insert = %s\nall.e_hocerr = -70\nall.terr_hocerr = 5\nall.how_hocerr = %d\n",
                 how == 2 ? "pas hocerr" : "hocerr", how);
        ns_sim_model_t *model = NULL;
        ns_sim_t *sim = NULL;
        CHECK_OK(hoc_make(lib, cell, text, NS_BACKEND_CUDA, 0, &model, &sim));
        if (sim) CHECK_OK(ns_sim_advance(sim, ref_steps)); /* NEURON's completed steps: no error */
        const ns_status s = sim ? ns_sim_advance(sim, ref_steps) : NS_OK;
        const char *e = ns_last_error();
        printf("GPU, how %d: %s\n", how, e);
        CHECK_MSG(s == NS_ERR_MECHANISM && strstr(e, line[how]) && strstr(e, "mechanism hocerr") && strstr(e, what[how]) &&
                      strstr(e, "end of the interval"),
                  "GPU, how %d: status %d: %s", how, (int)s, e);
        if (sim) CHECK(ns_sim_advance(sim, 1) == NS_ERR_MECHANISM && strstr(ns_last_error(), "a mechanism's error"));
        if (sim) CHECK_OK(ns_sim_init(sim));
        if (sim) CHECK_OK(ns_sim_advance(sim, ref_steps));
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
    }
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    const ns_status s = hoc_make(lib, cell, "all.insert = hocerr\nall.g_hocerr = -1\n", NS_BACKEND_CUDA, 0, &model, &sim);
    CHECK_MSG(s == NS_ERR_MECHANISM && !sim && strstr(ns_last_error(), "hocerr.mod:21:") &&
                  strstr(ns_last_error(), "g must not be negative") && strstr(ns_last_error(), "finitialize"),
              "GPU, INITIAL: status %d: %s", (int)s, ns_last_error());
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
}
#endif

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
    const int32_t n0 = ns_tree_size(ns_cell_tree(cells[0])), n1 = ns_tree_size(ns_cell_tree(cells[1]));
    const size_t nmax = (size_t)(n0 > n1 ? n0 : n1); /* v and y serve both cells */
    double *k = malloc((size_t)n1 * sizeof *k), *v = malloc(nmax * sizeof *v), *y = malloc(nmax * sizeof *y);
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
    const double e0 = fmax(dtab_error(sim, 0, n0, 1.0, v, y),
                           dtab_error(sim, 1, n1, 1.0, v, y));
    for (int32_t i = 0; i < n1; ++i) k[i] = 3.0;
    CHECK_OK(ns_sim_set_model_var(sim, 1, "k_dtab", k));
    CHECK_OK(ns_sim_advance(sim, 4)); /* the second block's DEPEND differs: a TABLE per block */
    const double e1 = dtab_error(sim, 1, n1, 1.0, v, y);
    const double e2 = dtab_error(sim, 0, n0, 1.0, v, y);
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

/* ftab.mod's tables as model text: table.tabninf_ftab = x ... ; y ...  and  range ... ; range ... ; y ... */
static char ftab_text[4096];
static void ftab_model_text(void) {
    ns_mech_ftable t[2];
    ftab_tables(t);
    size_t n = (size_t)snprintf(ftab_text, sizeof ftab_text, "all.insert = pas ftab\ntable.tabninf_ftab = x");
    for (int i = 0; i < 10; ++i) n += (size_t)snprintf(ftab_text + n, sizeof ftab_text - n, " %.17g", ft_x[i]);
    n += (size_t)snprintf(ftab_text + n, sizeof ftab_text - n, " ; y");
    for (int i = 0; i < 10; ++i) n += (size_t)snprintf(ftab_text + n, sizeof ftab_text - n, " %.17g", ft_ninf[i]);
    n += (size_t)snprintf(ftab_text + n, sizeof ftab_text - n, "\ntable.tabntau_ftab = range 16 -100 50 ; range 3 1 3 ; y");
    for (int i = 0; i < 48; ++i) n += (size_t)snprintf(ftab_text + n, sizeof ftab_text - n, " %.17g", ft_tau[i]);
    snprintf(ftab_text + n, sizeof ftab_text - n, "\n");
}

/* the model text's FUNCTION_TABLE errors: FILE:LINE, the table, what is wrong; the model unchanged */
static void ftab_text_errors(ns_mech_library_t *lib) {
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"table.tabninf_ftab = x -1 1 ; y 1\n", "case.model:1: table.tabninf_ftab: 1 values for 1 argument of 2 points"},
        {"\ntable.tabntau_ftab = range 4 0 1 ; y 1 2 3 4\n", "case.model:2: table.tabntau_ftab: 4 values for 1 argument"},
        {"table.tabninf_ftab = x 1 0 ; y 1 2\n", "case.model:1: table.tabninf_ftab: FUNCTION_TABLE tabninf_ftab: argument 1's abscissae do not increase"},
        {"table.tabninf_ftab = z 1 ; y 1\n", "case.model:1: table.tabninf_ftab: 'z': expected x X1 X2 ..."},
        {"table.nosuch_ftab = y 1\n", "case.model:1: table.nosuch_ftab: FUNCTION_TABLE nosuch_ftab: no mechanism"},
        {"table.tabninf_ftab = y 2\nnonsense\n", "case.model:2: expected REGION.NAME = VALUE"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        ns_sim_model_t *model = NULL;
        CHECK_OK(ns_sim_model_create(lib, &model));
        if (!model) return;
        CHECK(ns_sim_model_parse(model, bad[k].text, strlen(bad[k].text), "case.model") != NS_OK);
        CHECK_MSG(strstr(ns_last_error(), bad[k].want) != NULL, "case %zu: %s", k, ns_last_error());
        /* nothing stored: the simulation still finds tabninf without values */
        const char *ins = "all.insert = pas ftab\n";
        CHECK_OK(ns_sim_model_parse(model, ins, strlen(ins), "ins.model"));
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.model = model;
        ns_cell_t *cell = test_cylinder();
        const ns_cell_t *shapes[1] = {cell};
        ns_sim_t *sim = NULL;
        CHECK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim) == NS_ERR_INVALID_ARGUMENT &&
              strstr(ns_last_error(), "FUNCTION_TABLE tabninf has no values"));
        ns_sim_destroy(sim);
        ns_cell_destroy(cell);
        ns_sim_model_destroy(model);
    }
}

int main(void) {
    if (tmpdir_make("ns_sim_nmodl_neuron")) return 1;
    int skip = 0;
    FILE *dtab = fopen(tmp("dtab.mod"), "w");
    CHECK(dtab != NULL && fputs(DTAB_MOD, dtab) >= 0 && fclose(dtab) == 0);
    char files[2048];
    snprintf(files, sizeof files, "%s %s", MECH_DIR "/test/geom.mod " MECH_DIR "/test/wena.mod " MECH_DIR
             "/test/wenai.mod " MECH_DIR "/test/bahook.mod " MECH_DIR "/test/ftab.mod " MECH_DIR
             "/test/brkzero.mod " MECH_DIR "/test/einit.mod " MECH_DIR "/test/kbstep.mod " MECH_DIR "/hoc/hocerr.mod " MECH_DIR "/hoc/vbstatic.mod", tmp("dtab.mod"));
    ns_mech_library_t *lib = test_mech_from_files(files, "libcases.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_cell_t *cells[2] = {tapered(), test_cylinder()};
    ftab_model_text();
    const scase cases[9] = {{"geomcell", "all.insert = pas geom\n", "s_geom", 1.0 / 6.0, 5, 20, 0.1, 1, 0},
                            {"wena", "all.insert = hh wena\n", "ena", 0.5, 2, 30, 0.2, 0, 0},
                            {"wenai", "all.insert = hh wenai\n", "ena", 0.5, 2, 30, 0.2, 0, 0},
                            {"bahook", "all.insert = hh bahook\n", "u_bahook", 0.5, 2, 30, 0.2, 0, 0},
                            {"kbstep", "all.insert = pas kbstep\n", "o_kbstep", 0.5, 5, 20, 0.1, 0, 0},
                            {"brkzero", "all.insert = pas brkzero\n", "o_brkzero", 0.5, 5, 20, 0.1, 0, 0},
                            {"einit", "all.insert = pas einit\n", "ena", 0.5, 5, 20, 0.1, 0, 0},
                            {"ftab", "all.insert = pas ftab\n", "ninf_ftab", 0.5, 5, 20, 0.3, 0, 1},
                            {"ftab", ftab_text, "ninf_ftab", 0.5, 5, 20, 0.3, 0, 2}};
    for (int k = 0; k < 9 && lib && cells[0] && cells[1]; ++k) run(lib, cells[k > 0], &cases[k], NS_BACKEND_CPU, "CPU");
    if (lib) ftab_text_errors(lib);
    if (lib && cells[1]) hoc_errors(lib, cells[1]);
    if (lib && cells[0] && cells[1]) table_per_block(lib, cells);
    ns_mech_library_close(lib);
#ifdef NS_NVCC
    int devices = 0;
    if (cells[0] && cells[1] && ns_cuda_device_count(&devices) == NS_OK && devices > 0) {
        ns_mechanisms_build_options o = {0};
        o.nvcc = NS_NVCC;
        o.cuda_arch = NS_CUDA_ARCH;
        remove(tmp("mod/vbstatic.mod")); /* static storage in VERBATIM C: a --cuda build refuses it */
        ns_mech_library_t *glib = test_mech_build(tmp("mod"), "libcases_cuda.so", &o, &skip);
        for (int k = 0; k < 7 && glib; ++k) run(glib, cells[k > 0], &cases[k], NS_BACKEND_CUDA, "GPU");
        if (glib) hoc_errors_gpu(glib, cells[1]);
        ns_mech_library_close(glib);
    }
#endif
    ns_cell_destroy(cells[0]);
    ns_cell_destroy(cells[1]);
    tmpdir_remove();
    return check_summary("test_sim_nmodl_neuron");
}
