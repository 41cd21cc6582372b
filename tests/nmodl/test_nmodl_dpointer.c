/* A density mechanism's POINTER (docs/mechanisms.md, "POINTER"):
 * data/mechanisms/pointer/ptrtest.mod (NEURON's own test file, unchanged) and
 * dgap.mod (a gap junction written as a SUFFIX mechanism), connected with
 * ns_sim_set_model_pointer (NEURON's setpointer), the model file's statement
 * and the network file's:
 *   1. the case of validation/nmodl_density_pointer.py against NEURON 9.0.2's
 *      trace tests/data/nmodl/dpointer.csv: POINTERs to another cell's v, to
 *      another node's v and ena on the same cell, to hh's m on another cell, to
 *      hh's h at another node; v at the four nodes and ptrtest's out every
 *      step, RMS and max (a target on another cell read as of the step's start,
 *      against()); the coupling matters (without dgap's POINTERs
 *      to the other cell, B is far from NEURON's); one thread and two, bit
 *      for bit; the same case from a network file, bit for bit; a checkpoint
 *      restored into a new simulation with the same POINTERs continues bit
 *      for bit;
 *   2. the refusals: an unknown POINTER, a mechanism not inserted there, a
 *      target that is not there, an instance left unconnected at ns_sim_init
 *      (NEURON's "wasn't made to point to anything"), each naming what is wrong;
 *   3. `test_nmodl_dpointer cuda` (ctest test_nmodl_dpointer_cuda; skips
 *      without a GPU or CUDA): the files built with nvcc, the case of part 1 on
 *      the GPU loop against NEURON's trace (every target read in place there,
 *      so every column at NEURON's own step), and the unconnected refusal.
 * Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define DT 0.025
#define STEPS 1600
#define COLS 8 /* t, v of A's three nodes and B's, out_ptrtest of A's three */
#define OUT_EVERY 8 /* out_ptrtest read every OUT_EVERY steps (STEPS a multiple) */
#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms/pointer"

static ns_backend BACKEND = NS_BACKEND_CPU;

/* A: L = 60 um, diam 2 um, three segments (type 3: basal); B: L = diam = 20 um, one (soma) */
static ns_cell_t *cable(int soma) {
    const ns_morph_point a[2] = {{0, 0, 0, 1.0, 3, -1, 1, 1}, {0, 60, 0, 1.0, 3, 0, 2, 2}};
    const ns_morph_point b[2] = {{0, 0, 0, 10, 1, -1, 1, 1}, {20, 0, 0, 10, 1, 0, 2, 2}};
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_morph_from_points(soma ? "b" : "a", soma ? b : a, 2, &morph));
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.rule = soma ? NS_NSEG_ONE : NS_NSEG_FIXED_LENGTH;
    o.max_length = 20.0;
    if (morph) CHECK_OK(ns_discretize(morph, &o, &cell));
    ns_morph_destroy(morph);
    return cell;
}

static const char *MODEL = "all.insert = hh dgap\n"
                           "basal.insert = ptrtest\n"
                           "basal.g_dgap = 2e-3\n"
                           "soma.g_dgap = 5e-4\n";

/* The network file of the same POINTERs (cells a, then b) */
static const char *NETWORK = "cells a 1 a.swc\ncells b 1 b.swc\n"
                             "pointer a sec:0(0.1666666666666667) vgap_dgap b soma v\n"
                             "pointer a sec:0(0.5) vgap_dgap a sec:0(0.1666666666666667) v\n"
                             "pointer a sec:0(0.8333333333333333) vgap_dgap a sec:0(0.5) ena\n"
                             "pointer b soma vgap_dgap a sec:0(0.1666666666666667) v\n"
                             "pointer a sec:0(0.1666666666666667) src_ptrtest b soma m_hh\n"
                             "pointer a sec:0(0.5) src_ptrtest a sec:0(0.8333333333333333) h_hh\n"
                             "pointer a sec:0(0.8333333333333333) src_ptrtest b soma v\n";

typedef struct made {
    ns_sim_t *sim;
    ns_sim_model_t *model;
    int32_t node[3]; /* A's compartments at 1/6, 1/2, 5/6 */
} made;

/* the simulation of the case (cell 0: A, cell 1: B); how: 0 the C API, 1 none connected, 2 B's dgap
 * not connected, 3 the network file */
static made make(ns_mech_library_t *lib, ns_cell_t *const cells[2], int threads, int how) {
    made m = {0};
    CHECK_OK(ns_sim_model_create(lib, &m.model));
    if (!m.model) return m;
    CHECK_OK(ns_sim_model_parse(m.model, MODEL, strlen(MODEL), "dpointer.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = 6.3;
    p.v_init = -65;
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = BACKEND;
    o.threads = threads;
    o.model = m.model;
    const ns_cell_t *shapes[2] = {cells[0], cells[1]};
    const int32_t of[2] = {0, 1};
    CHECK_OK(ns_sim_create(2, shapes, 2, of, &p, &o, &m.sim));
    if (!m.sim) return m;
    for (int k = 0; k < 3; ++k) CHECK_OK(ns_cell_locate(cells[0], 0, (2 * k + 1) / 6.0, &m.node[k]));
    CHECK_OK(ns_sim_add_iclamp(m.sim, 1, 0, 2, 30, 0.2));
    for (int k = 0; k < 3; ++k) CHECK_OK(ns_sim_add_recording(m.sim, 0, m.node[k], NULL));
    CHECK_OK(ns_sim_add_recording(m.sim, 1, 0, NULL));
    const int32_t *n = m.node;
    if (how == 0 || how == 2) {
        CHECK_OK(ns_sim_set_model_pointer(m.sim, 0, n[0], "vgap_dgap", 1, 0, "v"));
        CHECK_OK(ns_sim_set_model_pointer(m.sim, 0, n[1], "vgap_dgap", 0, n[0], "v"));
        CHECK_OK(ns_sim_set_model_pointer(m.sim, 0, n[2], "vgap_dgap", 0, n[1], "ena"));
        if (how == 0) CHECK_OK(ns_sim_set_model_pointer(m.sim, 1, 0, "vgap_dgap", 0, n[0], "v"));
        CHECK_OK(ns_sim_set_model_pointer(m.sim, 0, n[0], "src_ptrtest", 1, 0, "m_hh"));
        CHECK_OK(ns_sim_set_model_pointer(m.sim, 0, n[1], "src_ptrtest", 0, n[2], "h_hh"));
        CHECK_OK(ns_sim_set_model_pointer(m.sim, 0, n[2], "src_ptrtest", 1, 0, "v"));
    } else if (how == 3) {
        ns_network_t *net = NULL;
        CHECK_OK(ns_network_parse(NETWORK, strlen(NETWORK), "dpointer.net", ".", &net));
        if (net) CHECK_OK(ns_network_apply(net, m.sim, shapes));
        ns_network_destroy(net);
    }
    return m;
}

static void unmake(made *m) {
    ns_sim_destroy(m->sim);
    ns_sim_model_destroy(m->model);
}

/* STEPS + 1 rows of COLS - 1 (the four v, the three out), or NULL */
static double *run(ns_mech_library_t *lib, ns_cell_t *const cells[2], int threads, int how) {
    made m = make(lib, cells, threads, how);
    const int W = COLS - 1;
    double *out = m.sim ? calloc((size_t)(STEPS + 1) * W, sizeof *out) : NULL;
    ns_cell_info info;
    ns_cell_get_info(cells[0], &info);
    double *vals = malloc((size_t)info.compartments * sizeof *vals);
    if (out && vals) CHECK_OK(ns_sim_init(m.sim));
    for (int j = 0; out && vals && j <= STEPS; j += OUT_EVERY) {
        if (j > 0) CHECK_OK(ns_sim_advance(m.sim, OUT_EVERY));
        CHECK_OK(ns_sim_get_model_var(m.sim, 0, "out_ptrtest", vals));
        for (int k = 0; k < 3; ++k) out[(size_t)j * W + 4 + k] = vals[m.node[k]];
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = out ? ns_sim_traces(m.sim, &samples, &sites) : NULL; /* v: every step */
    CHECK(!out || (tr && samples == STEPS + 1 && sites == 4));
    for (int j = 0; tr && samples == STEPS + 1 && sites == 4 && j <= STEPS; ++j)
        for (int k = 0; k < 4; ++k) out[(size_t)j * W + k] = tr[(size_t)j * 4 + k];
    free(vals);
    unmake(&m);
    return out;
}

/* NEURON's rows (t and the seven columns) */
static double *read_ref(int *n) {
    FILE *f = fopen(NS_TEST_DATA "/nmodl/dpointer.csv", "r");
    *n = 0;
    if (!f) return NULL;
    double *r = malloc((size_t)COLS * (STEPS + 1) * sizeof *r);
    char line[1024];
    while (r && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == 't') continue;
        double *x = r + (size_t)COLS * *n;
        if (*n > STEPS || sscanf(line, "%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &x[0], &x[1], &x[2], &x[3], &x[4], &x[5],
                                 &x[6], &x[7]) != COLS) {
            *n = -1;
            break;
        }
        ++*n;
    }
    fclose(f);
    return r;
}

/* the worst column's RMS and max of x against NEURON's (worst of v: *v, of out: *o). ptrtest's out
 * at A(1/6) and A(5/6) (columns 4 and 6) reads B, another cell, which every phase reads as of the
 * step's start (docs/mechanisms.md, "POINTER"); ptrtest's BREAKPOINT runs after the solve, where
 * NEURON's one thread reads B's new value: out of step j is NEURON's of step j - 1 there (from
 * step 1; at INITIAL the copy precedes hh's INITIAL). copies 0: the GPU loop, which reads every
 * target in place, as NEURON. */
static void against(const double *ref, const double *x, const char *what, int copies, double *rms_v,
                    double *rms_o) {
    *rms_v = *rms_o = 0.0;
    for (int k = 0; k < COLS - 1; ++k) {
        const int late = copies && (k == 4 || k == 6);
        double sum = 0.0, worst = 0.0;
        int rows = 0;
        for (int j = k < 4 ? 0 : OUT_EVERY * late; j <= STEPS; j += k < 4 ? 1 : OUT_EVERY, ++rows) {
            const double d = x[(size_t)j * (COLS - 1) + k] - ref[(size_t)(j - late) * COLS + 1 + k];
            sum += d * d;
            worst = fmax(worst, fabs(d));
        }
        const double rms = sqrt(sum / rows);
        printf("%s, column %d (%s): RMS against NEURON %.3e, max %.3e\n", what, k, k < 4 ? "v, mV" : "out_ptrtest",
               rms, worst);
        if (k < 4) *rms_v = fmax(*rms_v, rms);
        else *rms_o = fmax(*rms_o, rms);
    }
}

static void expect_fail(ns_status s, const char *a, const char *b) {
    CHECK(s != NS_OK);
    const char *msg = ns_last_error();
    CHECK_MSG(strstr(msg, a) && (!b || strstr(msg, b)), "message '%s' lacks '%s' / '%s'", msg, a, b ? b : "");
}

static void checkpoint(ns_mech_library_t *lib, ns_cell_t *const cells[2], const double *whole);

/* 1. against NEURON: one thread, two, the network file; without the coupling */
static void against_neuron(ns_mech_library_t *lib, ns_cell_t *const cells[2]) {
    int n = 0;
    double *ref = read_ref(&n);
    CHECK_MSG(ref && n == STEPS + 1, "cannot read NEURON's trace (%d rows)", n);
    double *a = run(lib, cells, 1, 0), *b = run(lib, cells, 2, 0), *f = run(lib, cells, 1, 3);
    for (int j = 0; ref && n == STEPS + 1 && j <= STEPS; ++j) CHECK(fabs(ref[(size_t)j * COLS] - j * DT) < 1e-9);
    if (ref && n == STEPS + 1 && a) {
        double rv = 0.0, ro = 0.0;
        against(ref, a, "CPU", 1, &rv, &ro);
        CHECK_MSG(rv <= 1e-6 && ro <= 1e-6, "RMS %g mV (v), %g (out) from NEURON's", rv, ro);
        /* B's dgap to A's v unconnected in NEURON's sense: pointed at B's own v (no current) */
        made m = make(lib, cells, 1, 2);
        if (m.sim) CHECK_OK(ns_sim_set_model_pointer(m.sim, 1, 0, "vgap_dgap", 1, 0, "v"));
        if (m.sim) CHECK_OK(ns_sim_init(m.sim));
        if (m.sim) CHECK_OK(ns_sim_advance(m.sim, STEPS));
        int64_t samples = 0;
        int32_t sites = 0;
        const double *tr = m.sim ? ns_sim_traces(m.sim, &samples, &sites) : NULL;
        double apart = 0.0;
        for (int j = 0; tr && samples == STEPS + 1 && j <= STEPS; ++j)
            apart = fmax(apart, fabs(tr[(size_t)j * 4 + 3] - ref[(size_t)j * COLS + 4]));
        printf("B without its coupling to A: %.2f mV from NEURON's\n", apart);
        CHECK_MSG(apart > 1.0, "B's coupling to A changes its v by %g mV only", apart);
        unmake(&m);
    }
    const size_t bytes = (size_t)(STEPS + 1) * (COLS - 1) * sizeof(double);
    CHECK_MSG(a && b && memcmp(a, b, bytes) == 0, "1 and 2 threads differ");
    CHECK_MSG(a && f && memcmp(a, f, bytes) == 0, "the network file's run differs from the C API's");
    checkpoint(lib, cells, a);
    free(ref);
    free(a);
    free(b);
    free(f);
}

/* 1b. a checkpoint at step STEPS / 2 restored into a new simulation with the same POINTERs: the
 * rest of the run bit for bit as the uninterrupted one's (ptrtest's out at the end too) */
static void checkpoint(ns_mech_library_t *lib, ns_cell_t *const cells[2], const double *whole) {
    char *path = tmp("dpointer.ckpt");
    made m = make(lib, cells, 1, 0), r = make(lib, cells, 2, 0);
    double out[2][3] = {{0}};
    int ok = m.sim && r.sim && whole;
    if (ok) {
        CHECK_OK(ns_sim_init(m.sim));
        CHECK_OK(ns_sim_advance(m.sim, STEPS / 2));
        CHECK_OK(ns_sim_save_state(m.sim, path));
        CHECK_OK(ns_sim_advance(m.sim, STEPS / 2));
        CHECK_OK(ns_sim_init(r.sim));
        CHECK_OK(ns_sim_restore_state(r.sim, path));
        CHECK_OK(ns_sim_advance(r.sim, STEPS / 2));
    }
    for (int k = 0; ok && k < 2; ++k) {
        double vals[8];
        CHECK_OK(ns_sim_get_model_var(k ? r.sim : m.sim, 0, "out_ptrtest", vals));
        for (int j = 0; j < 3; ++j) out[k][j] = vals[m.node[j]];
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ok ? ns_sim_traces(r.sim, &samples, &sites) : NULL;
    CHECK_MSG(tr && samples == STEPS + 1 && sites == 4, "the restored run's traces (%lld samples)", (long long)samples);
    int same = tr && samples == STEPS + 1 && memcmp(out[0], out[1], sizeof out[0]) == 0;
    for (int j = 0; same && j <= STEPS; ++j)
        for (int k = 0; k < 4; ++k) same &= tr[(size_t)j * 4 + k] == whole[(size_t)j * (COLS - 1) + k];
    CHECK_MSG(same, "the run restored from the checkpoint differs from the uninterrupted one");
    unmake(&m);
    unmake(&r);
}

/* 2. the refusals */
static void refusals(ns_mech_library_t *lib, ns_cell_t *const cells[2]) {
    made m = make(lib, cells, 1, 1);
    if (m.sim) {
        expect_fail(ns_sim_advance(m.sim, 1), "POINTER is not connected", "ns_sim_set_model_pointer");
        expect_fail(ns_sim_set_model_pointer(m.sim, 0, 0, "vgp_dgap", 1, 0, "v"), "no density mechanism's POINTER "
                    "'vgp_dgap'", "vgap_dgap, src_ptrtest");
        expect_fail(ns_sim_set_model_pointer(m.sim, 1, 0, "src_ptrtest", 0, 0, "v"), "ptrtest is not inserted at "
                    "compartment 0 of cell 1", NULL);
        expect_fail(ns_sim_set_model_pointer(m.sim, 0, 0, "src_ptrtest", 0, 0, "m_pas"), "m_pas", NULL);
        expect_fail(ns_sim_set_model_pointer(m.sim, 0, 0, "src_ptrtest", 1, 0, "out_ptrtest"),
                    "ptrtest is not inserted at compartment 0 of cell 1", NULL);
        expect_fail(ns_sim_set_model_pointer(m.sim, 0, 0, "src_ptrtest", 5, 0, "v"), "cell 5", NULL);
        expect_fail(ns_sim_init(m.sim), "is not connected", "wasn't made to point to anything");
        expect_fail(ns_sim_advance(m.sim, 1), "POINTER is not connected", "ns_sim_set_model_pointer");
        unmake(&m);
    }
    static const char *bad = "cells a 1 a.swc\ncells b 1 b.swc\npointer a sec:0(0.5) vgap_dgap b soma vv\n";
    m = make(lib, cells, 1, 1);
    ns_network_t *net = NULL;
    CHECK_OK(ns_network_parse(bad, strlen(bad), "bad.net", ".", &net));
    const ns_cell_t *shapes[2] = {cells[0], cells[1]};
    if (m.sim && net) expect_fail(ns_network_apply(net, m.sim, shapes), "bad.net:3", "vv");
    ns_network_destroy(net);
    unmake(&m);
}

#ifdef NS_NVCC
/* 3. the GPU loop: the case of part 1 against NEURON's trace */
static int on_gpu(ns_cell_t *const cells[2]) {
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files_cuda(MECH_DIR "/*.mod", "libdpointer_cuda.so", &skip);
    if (skip) return 77;
    int n = 0;
    double *ref = read_ref(&n);
    CHECK_MSG(ref && n == STEPS + 1, "cannot read NEURON's trace (%d rows)", n);
    BACKEND = NS_BACKEND_CUDA;
    double *a = lib ? run(lib, cells, 1, 0) : NULL;
    if (a && ref && n == STEPS + 1) {
        double rv = 0.0, ro = 0.0;
        against(ref, a, "GPU", 0, &rv, &ro);
        CHECK_MSG(rv <= 1e-6 && ro <= 1e-6, "GPU: RMS %g mV (v), %g (out) from NEURON's", rv, ro);
    }
    free(a);
    free(ref);
    made m = lib ? make(lib, cells, 1, 1) : (made){0};
    if (m.sim) {
        expect_fail(ns_sim_advance(m.sim, 1), "POINTER is not connected", "ns_sim_set_model_pointer");
        expect_fail(ns_sim_init(m.sim), "is not connected", "wasn't made to point to anything");
    }
    unmake(&m);
    ns_mech_library_close(lib);
    return 0;
}
#endif

int main(int argc, char **argv) {
    if (tmpdir_make("ns_nmodl_dpointer")) return 1;
    ns_cell_t *cells[2] = {cable(0), cable(1)};
    int rc = 0;
    if (argc > 1 && !strcmp(argv[1], "cuda")) {
#ifdef NS_NVCC
        rc = cells[0] && cells[1] ? on_gpu(cells) : 1;
#else
        printf("SKIP: built without CUDA\n");
        rc = 77;
#endif
    } else {
        int skip = 0;
        ns_mech_library_t *lib = test_mech_from_files(MECH_DIR "/*.mod", "libdpointer.so", &skip);
        if (skip) rc = 77;
        else if (lib && cells[0] && cells[1]) {
            against_neuron(lib, cells);
            refusals(lib, cells);
        }
        ns_mech_library_close(lib);
    }
    ns_cell_destroy(cells[0]);
    ns_cell_destroy(cells[1]);
    tmpdir_remove();
    return rc == 77 ? 77 : check_summary(argc > 1 ? "test_nmodl_dpointer cuda" : "test_nmodl_dpointer");
}
