/* POINTER (docs/mechanisms.md, "POINTER"): data/mechanisms/test/gap.mod, a
 * gap junction as ModelDB's gap.mod files write it, built with the system
 * compiler and connected with ns_sim_set_pointer (NEURON's setpointer):
 *   1. two hh cells coupled by a gap on each (vgap -> the other's v), an
 *      IClamp on cell 0, against NEURON 9.0.2's trace tests/data/nmodl/gap.csv
 *      (validation/nmodl_gap_junction.py): both cells' v every step, RMS and
 *      max; the coupling matters (cell 1 uncoupled stays more than 10 mV away);
 *      one thread (one lane block: the other's v in place) and two (a
 *      block each: through the copy made at each step's start), bit for bit;
 *   2. a POINTER to an ion's variable: vgap -> ena makes gap a leak to ena,
 *      the same trace as pas with g = 1e2 / (area r), e = ena (to rounding);
 *   3. the refusals: an unknown POINTER name, an unconnected POINTER, a
 *      variable that is not there, a connection to a synapse without
 *      NET_RECEIVE, all naming what is wrong (a density mechanism's POINTERs:
 *      test_nmodl_dpointer.c);
 *   4. the network file's `pointer` statement: the pair of part 1 from a
 *      file, bit for bit as through the C API;
 *   5. `test_nmodl_pointer cuda` (ctest test_nmodl_pointer_cuda; skips without
 *      a GPU or CUDA): gap.mod built with nvcc on the GPU loop: the pair of
 *      part 1 against NEURON's trace as on the CPU, and vgap -> ena, -> v of
 *      another cell and -> a field of hh (m_hh) against the CPU loop's run.
 * Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "net/net_impl.h"
#include "sim/sim_impl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define DT 0.025
#define STEPS 1600
#define AREA_UM2 (3.14159265358979323846 * 20.0 * 20.0)

typedef struct sim_case {
    int64_t cells;
    int threads;
    const char *model;
    int gaps;          /* 2: the coupled pair; 1: a gap on cell 0 to `target`; 0: none */
    const char *target; /* gaps == 1: the variable vgap reaches on cell 0 */
    double r;
} sim_case;

static ns_backend BACKEND = NS_BACKEND_CPU; /* the loop that make() builds on */

static ns_sim_t *make(ns_mech_library_t *lib, const ns_cell_t *cell, const sim_case *c, ns_sim_model_t **model) {
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_model_create(lib, model));
    if (!*model) return NULL;
    CHECK_OK(ns_sim_model_parse(*model, c->model, strlen(c->model), "gap.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = 6.3;
    p.v_init = -65;
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = BACKEND;
    o.threads = c->threads;
    o.model = *model;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, c->cells, NULL, &p, &o, &sim));
    if (!sim) return NULL;
    CHECK_OK(ns_sim_add_iclamp(sim, 0, 0, 2, 30, 0.2));
    for (int64_t k = 0; k < 2 && k < c->cells; ++k) CHECK_OK(ns_sim_add_recording(sim, k, 0, NULL));
    for (int k = 0; k < c->gaps; ++k) {
        int64_t g = -1;
        CHECK_OK(ns_sim_add_synapse(sim, k, 0, "gap", &g));
        CHECK_OK(ns_sim_synapse_set(sim, g, "r", c->r));
        CHECK_OK(ns_sim_set_pointer(sim, g, "vgap", c->gaps == 2 ? 1 - k : 0, 0, c->gaps == 2 ? "v" : c->target));
    }
    CHECK_OK(ns_sim_init(sim));
    return sim;
}

/* the traces of cells 0 and 1 (STEPS + 1 rows of 2), or NULL; *copies: the
 * POINTERs read through a per-step copy (their target in another lane block) */
static double *run(ns_mech_library_t *lib, const ns_cell_t *cell, const sim_case *c, int64_t *copies) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = make(lib, cell, c, &model);
    double *out = NULL;
    if (sim && copies) *copies = sim->net ? sim->net->n_snap : 0;
    if (sim) {
        CHECK_OK(ns_sim_advance(sim, STEPS));
        int64_t samples = 0;
        int32_t sites = 0;
        const double *tr = ns_sim_traces(sim, &samples, &sites);
        CHECK(tr && samples == STEPS + 1 && sites == 2);
        if (tr && samples == STEPS + 1 && sites == 2 && (out = malloc(2 * (STEPS + 1) * sizeof *out)))
            memcpy(out, tr, 2 * (STEPS + 1) * sizeof *out);
    }
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    return out;
}

static void expect_fail(ns_status s, const char *a, const char *b);

/* 4. the network file's `pointer` statement: the pair of part 1 from a file
 * (ns_network_parse, ns_network_apply) runs bit for bit as through the C
 * API; a bad POINTER name is refused naming the line */
static void network_file(ns_mech_library_t *lib, const ns_cell_t *cell, const double *api) {
    static const char *text = "cells c 2 cyl.swc\n"
                              "synapse g c soma gap r=100\n"
                              "pointer g[0] vgap c[1] soma v\n"
                              "pointer g[1] vgap c[0] soma v\n";
    static const char *bad = "cells c 2 cyl.swc\nsynapse g c soma gap r=100\npointer g vgx c soma v\n";
    for (int b = 0; b < 2; ++b) {
        const char *t = b ? bad : text;
        ns_network_t *net = NULL;
        CHECK_OK(ns_network_parse(t, strlen(t), "gap.net", ".", &net));
        const sim_case c = {2, 1, "all.insert = hh\n", 0, NULL, 100.0};
        ns_sim_model_t *model = NULL;
        ns_sim_t *sim = net ? make(lib, cell, &c, &model) : NULL;
        const ns_cell_t *shapes[1] = {cell};
        if (sim && !b) {
            CHECK_OK(ns_network_apply(net, sim, shapes));
            CHECK_OK(ns_sim_init(sim));
            CHECK_OK(ns_sim_advance(sim, STEPS));
            int64_t samples = 0;
            int32_t sites = 0;
            const double *tr = ns_sim_traces(sim, &samples, &sites);
            CHECK_MSG(tr && api && samples == STEPS + 1 && sites == 2 &&
                          memcmp(tr, api, 2 * (STEPS + 1) * sizeof *tr) == 0,
                      "the network file's gap junction differs from the C API's");
        } else if (sim) {
            expect_fail(ns_network_apply(net, sim, shapes), "gap.net:3", "no POINTER 'vgx'");
        }
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
        ns_network_destroy(net);
    }
}

/* NEURON's t, v0, v1 */
static double *read_gap(int *n) {
    FILE *f = fopen(NS_TEST_DATA "/nmodl/gap.csv", "r");
    *n = 0;
    if (!f) return NULL;
    double *r = malloc(3 * (STEPS + 1) * sizeof *r);
    char line[512];
    while (r && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == 't') continue;
        if (*n > STEPS || sscanf(line, "%lf,%lf,%lf", &r[3 * *n], &r[3 * *n + 1], &r[3 * *n + 2]) != 3) {
            *n = -1;
            break;
        }
        ++*n;
    }
    fclose(f);
    return r;
}

static void against_neuron(ns_mech_library_t *lib, const ns_cell_t *cell) {
    int n = 0;
    double *ref = read_gap(&n);
    CHECK_MSG(ref && n == STEPS + 1, "cannot read NEURON's gap trace (%d rows)", n);
    /* one thread: the two cells in one lane block, the other's v in place;
     * two threads: a block each, the other's v through the per-step copy */
    int64_t copies[2] = {-1, -1};
    const sim_case pair = {2, 1, "all.insert = hh\n", 2, NULL, 100.0};
    double *a = run(lib, cell, &pair, &copies[0]);
    const sim_case pair2 = {2, 2, "all.insert = hh\n", 2, NULL, 100.0};
    double *b = run(lib, cell, &pair2, &copies[1]);
    const sim_case alone = {2, 1, "all.insert = hh\n", 0, NULL, 100.0};
    double *u = run(lib, cell, &alone, NULL);
    printf("POINTERs read through copies: %lld (1 thread), %lld (2 threads)\n", (long long)copies[0],
           (long long)copies[1]);
    /* two blocks, so the copies, only where the library runs threads (an OpenMP build) */
    ns_build_info bi;
    ns_get_build_info(&bi);
    CHECK_MSG(copies[0] == 0 && copies[1] == (bi.openmp ? 2 : 0),
              "the paths (in place; copies with OpenMP: %d) are not those expected", (int)bi.openmp);
    for (int run_ = 0; ref && n == STEPS + 1 && a && b && u && run_ < 2; ++run_) {
        const double *x = run_ ? b : a;
        for (int k = 0; k < 2; ++k) {
            double sum = 0.0, worst = 0.0, apart = 0.0;
            for (int j = 0; j <= STEPS; ++j) {
                CHECK(fabs(ref[3 * j] - j * DT) < 1e-9);
                const double dv = x[2 * j + k] - ref[3 * j + 1 + k];
                sum += dv * dv;
                worst = fmax(worst, fabs(dv));
                apart = fmax(apart, fabs(u[2 * j + k] - ref[3 * j + 1 + k]));
            }
            const double rms = sqrt(sum / (STEPS + 1));
            printf("gap junction (%s), cell %d: RMS of v against NEURON %.3e mV, max %.3e mV (uncoupled: %.1f mV "
                   "away)\n", run_ ? "two blocks" : "one block", k, rms, worst, apart);
            CHECK_MSG(rms <= 1e-6 && worst <= 1e-5, "cell %d: RMS %g mV, max %g mV from NEURON's", k, rms, worst);
            CHECK_MSG(apart > 10.0, "cell %d: the coupling changes v by %g mV only", k, apart);
        }
    }
    if (a && b) CHECK_MSG(memcmp(a, b, 2 * (STEPS + 1) * sizeof *a) == 0, "1 and 2 threads differ");
    network_file(lib, cell, a);
    free(ref);
    free(a);
    free(b);
    free(u);
}

/* 2. vgap -> ena: a leak to ena of conductance 1/r, as pas */
static void to_ion(ns_mech_library_t *lib, const ns_cell_t *cell) {
    const double r = 300.0;
    const sim_case leak = {2, 1, "all.insert = hh\n", 1, "ena", r};
    double *a = run(lib, cell, &leak, NULL);
    char model[200];
    snprintf(model, sizeof model, "all.insert = pas hh\nall.g_pas = %.17g\nall.e_pas = 50\n", 1e2 / (AREA_UM2 * r));
    const sim_case pas = {2, 1, model, 0, NULL, r};
    double *b = run(lib, cell, &pas, NULL);
    const sim_case alone = {2, 1, "all.insert = hh\n", 0, NULL, r};
    double *u = run(lib, cell, &alone, NULL);
    if (a && b && u) {
        double worst = 0.0, moved = 0.0;
        for (int j = 0; j <= STEPS; ++j) {
            worst = fmax(worst, fabs(a[2 * j] - b[2 * j]));
            moved = fmax(moved, fabs(a[2 * j] - u[2 * j]));
        }
        printf("gap to ena against pas: max %.3e mV (without either: %.1f mV away)\n", worst, moved);
        CHECK_MSG(worst <= 1e-6, "vgap -> ena differs from pas by %g mV", worst);
        CHECK_MSG(moved > 1.0, "the leak to ena moves v by %g mV only", moved);
    }
    free(a);
    free(b);
    free(u);
}

static void expect_fail(ns_status s, const char *a, const char *b) {
    CHECK(s != NS_OK);
    const char *msg = ns_last_error();
    CHECK_MSG(strstr(msg, a) && (!b || strstr(msg, b)), "message '%s' lacks '%s' / '%s'", msg, a, b ? b : "");
}

/* 3. the refusals */
static void refusals(ns_mech_library_t *lib, const ns_cell_t *cell) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) return;
    const char *text = "all.insert = hh\n";
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "gap.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, 16, NULL, &p, &o, &sim));
    if (sim) {
        int64_t g = -1, src = -1;
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "gap", &g));
        expect_fail(ns_sim_set_pointer(sim, g, "vgp", 1, 0, "v"), "no POINTER 'vgp'", "vgap");
        expect_fail(ns_sim_set_pointer(sim, g, "vgap", 1, 0, "m_pas"), "m_pas", NULL);
        expect_fail(ns_sim_set_pointer(sim, g, "vgap", 99, 0, "v"), "cell 99", NULL);
        CHECK_OK(ns_sim_add_spike_source(sim, (const double[]){1.0}, 1, &src));
        expect_fail(ns_sim_connect(sim, src, g, 1.0, 1.0), "gap has no NET_RECEIVE", NULL);
        expect_fail(ns_sim_init(sim), "POINTER vgap is not connected", "setpointer");
        CHECK_OK(ns_sim_set_pointer(sim, g, "vgap", 1, 0, "m_hh"));
        CHECK_OK(ns_sim_init(sim)); /* a density mechanism's field at the node: accepted */
        CHECK_OK(ns_sim_advance(sim, 10));
    }
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
}

#ifdef NS_NVCC
/* 5. the GPU loop: NEURON's pair, and each kind of target against the CPU loop */
static int on_gpu(ns_cell_t *cell) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) {
        printf("SKIP: no GPU\n");
        return 77;
    }
    ns_mechanisms_build_options bo = {0};
    bo.nvcc = NS_NVCC;
    bo.cuda_arch = NS_CUDA_ARCH;
    int skip = 0;
    char *dir = tmp("mod");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/../../data/mechanisms/test/gap.mod %s/", dir, NS_TEST_DATA, dir);
    CHECK(system(cmd) == 0);
    ns_mech_library_t *lib = test_mech_build(dir, "libgap_cuda.so", &bo, &skip);
    if (skip) return 77;
    int n = 0;
    double *ref = read_gap(&n);
    CHECK_MSG(ref && n == STEPS + 1, "cannot read NEURON's gap trace (%d rows)", n);
    const sim_case pair = {2, 1, "all.insert = hh\n", 2, NULL, 100.0};
    BACKEND = NS_BACKEND_CUDA;
    double *a = lib ? run(lib, cell, &pair, NULL) : NULL;
    for (int k = 0; ref && n == STEPS + 1 && a && k < 2; ++k) {
        double sum = 0.0, worst = 0.0;
        for (int j = 0; j <= STEPS; ++j) {
            const double dv = a[2 * j + k] - ref[3 * j + 1 + k];
            sum += dv * dv;
            worst = fmax(worst, fabs(dv));
        }
        printf("GPU gap junction, cell %d: RMS of v against NEURON %.3e mV, max %.3e mV\n", k, sqrt(sum / (STEPS + 1)),
               worst);
        CHECK_MSG(sqrt(sum / (STEPS + 1)) <= 1e-6 && worst <= 1e-5, "GPU, cell %d: %g mV from NEURON's", k, worst);
    }
    free(a);
    free(ref);
    /* an ion's variable, v of the other cell (three cells: the group's second), a field of hh */
    const sim_case cases[3] = {{2, 1, "all.insert = hh\n", 1, "ena", 300.0},
                               {3, 1, "all.insert = hh\n", 2, NULL, 100.0},
                               {2, 1, "all.insert = hh\n", 1, "m_hh", 1e4}};
    for (int c = 0; lib && c < 3; ++c) {
        BACKEND = NS_BACKEND_CPU;
        double *x = run(lib, cell, &cases[c], NULL);
        BACKEND = NS_BACKEND_CUDA;
        double *y = run(lib, cell, &cases[c], NULL);
        double worst = 0.0;
        for (int j = 0; x && y && j < 2 * (STEPS + 1); ++j) worst = fmax(worst, fabs(x[j] - y[j]));
        printf("GPU POINTER case %d: max %.3e mV from the CPU loop\n", c, worst);
        CHECK_MSG(x && y && worst <= 1e-6, "GPU POINTER case %d: %g mV from the CPU loop", c, worst);
        free(x);
        free(y);
    }
    ns_mech_library_close(lib);
    return 0;
}
#endif

int main(int argc, char **argv) {
    if (tmpdir_make("ns_nmodl_pointer")) return 1;
    if (argc > 1 && !strcmp(argv[1], "cuda")) {
#ifdef NS_NVCC
        ns_cell_t *cell = test_cylinder();
        const int rc = cell ? on_gpu(cell) : 1;
        ns_cell_destroy(cell);
        tmpdir_remove();
        return rc == 77 ? 77 : check_summary("test_nmodl_pointer cuda");
#else
        printf("SKIP: built without CUDA\n");
        tmpdir_remove();
        return 77;
#endif
    }
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(NS_TEST_DATA "/../../data/mechanisms/test/gap.mod", "libgap.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_cell_t *cell = test_cylinder();
    if (lib && cell) {
        against_neuron(lib, cell);
        to_ion(lib, cell);
        refusals(lib, cell);
    }
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_nmodl_pointer");
}
