/* A mechanism's errors and thread safety in the CPU loop, against NEURON 9.0.2
 * (tests/data/nmodl/hocerr.txt, validation/nmodl_hoc_errors.py):
 *   hocerr.mod (data/mechanisms/hoc): hoc_execerror in BREAKPOINT's VERBATIM C once t
 *     passes terr stops ns_sim_advance with NS_ERR_MECHANISM naming the .mod file, the line
 *     of the call, the mechanism and the message, after as many completed steps as NEURON's
 *     fadvance, v then equal to NEURON's; the process goes on (NEURON's longjmp, not an abort);
 *     exit() and abort() in the C do the same; INITIAL's hoc_execerror (g < 0) stops
 *     finitialize; each on 1 and 2 threads, the same;
 *   vbstatic.mod: a static variable in VERBATIM C: the descriptor says why it is not thread
 *     safe; 2 threads asked for are refused (NEURON's pc.nthread(2) refuses it too), OpenMP's
 *     default runs it on one.
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
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define N_CELLS 3

/* NEURON's values (tests/data/nmodl/hocerr.txt) */
static long ref_steps = -1, ref_init = -1, ref_nthread = -1;
static double ref_v = NAN;
static int read_ref(void) {
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

static ns_status make(ns_mech_library_t *lib, const ns_cell_t *cell, const char *text, int threads,
                      ns_sim_model_t **model, ns_sim_t **sim) {
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
    o.backend = NS_BACKEND_CPU;
    o.method = NS_HINES_OPENMP;
    o.threads = threads;
    o.model = *model;
    const ns_cell_t *shapes[1] = {cell};
    return ns_sim_create(1, shapes, N_CELLS, NULL, &p, &o, sim);
}

/* hocerr with `how` (0 hoc_execerror, 1 exit, 2 abort) on `threads` threads */
static void stops(ns_mech_library_t *lib, const ns_cell_t *cell, int how, int threads) {
    char text[256];
    snprintf(text, sizeof text, "all.insert = hocerr\nall.e_hocerr = -70\nall.terr_hocerr = 5\nall.how_hocerr = %d\n",
             how);
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(make(lib, cell, text, threads, &model, &sim));
    for (int64_t k = 0; sim && k < N_CELLS; ++k) CHECK_OK(ns_sim_add_recording(sim, k, 0, NULL));
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
    for (int k = 0; tr && samples == ref_steps + 1 && k < N_CELLS; ++k)
        CHECK_MSG(fabs(tr[ref_steps * sites + k] - ref_v) <= 1e-9, "how %d: v %.17g, NEURON %.17g", how,
                  tr[ref_steps * sites + k], ref_v);
    /* stopped: again only after ns_sim_init, which starts without the error */
    if (sim) CHECK(ns_sim_advance(sim, 1) != NS_OK);
    if (sim) CHECK_OK(ns_sim_init(sim));
    if (sim) CHECK_OK(ns_sim_advance(sim, ref_steps));
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
}

int main(void) {
    if (tmpdir_make("ns_sim_hoc")) return 1;
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(MECH_DIR "/hoc/hocerr.mod " MECH_DIR "/hoc/vbstatic.mod",
                                                  "libhoc.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    CHECK_MSG(read_ref() == 0, "cannot read NEURON's tests/data/nmodl/hocerr.txt");
    ns_cell_t *cell = test_cylinder();
    if (lib && cell && ref_steps > 0) {
        CHECK(ref_init == 1 && ref_nthread == 1); /* what NEURON does */
        for (int how = 0; how < 3; ++how) stops(lib, cell, how, 1);
        stops(lib, cell, 0, 2);
        /* INITIAL's hoc_execerror: finitialize (in ns_sim_create) stops */
        ns_sim_model_t *model = NULL;
        ns_sim_t *sim = NULL;
        const ns_status s = make(lib, cell, "all.insert = hocerr\nall.g_hocerr = -1\n", 1, &model, &sim);
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
        const ns_status s2 = make(lib, cell, "all.insert = vbstatic\n", 2, &model, &sim);
        CHECK_MSG(s2 == NS_ERR_UNSUPPORTED && !sim && strstr(ns_last_error(), "vbstatic.mod:18:") &&
                      strstr(ns_last_error(), "not thread safe") && strstr(ns_last_error(), "threads = 1"),
                  "vbstatic on 2 threads: status %d: %s", (int)s2, ns_last_error());
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
#endif
        CHECK_OK(make(lib, cell, "all.insert = vbstatic\n", 0, &model, &sim)); /* OpenMP's default: one thread */
        if (sim) CHECK_OK(ns_sim_advance(sim, 10));
        ns_sim_destroy(sim);
        ns_sim_model_destroy(model);
    }
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_sim_hoc");
}
