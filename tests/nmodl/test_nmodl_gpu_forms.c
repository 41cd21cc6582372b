/* The GPU's arithmetic of the generated code (NSM_DIVC, NSM_POWK, NSM_GPU: docs/mechanisms.md,
 * "The GPU's arithmetic") checked on a host without a GPU: BBP's mechanisms and NEURON's built with
 * the system C compiler twice, as the host's C and with the device's forms (a compiler wrapper that
 * defines __CUDA_ARCH__, and atomicAdd as +=, so that the generated headers take their device
 * branches: products by reciprocals, x^k as products, the cnexp targets with their common factors
 * cancelled), also the solver-form cases (NMODL_FORM_CASES and their files, tests/common/nmodl_driver.h),
 * each run by
 * test_nmodl_neuron's one-compartment driver (tests/common/nmodl_driver.h) over the same cases with spikes; the two must agree to rounding (|dv| within 1e-6 mV, cai within
 * 1e-9 relative, every step: the L5 soma's ten spikes over 300 ms amplify the last bits to 4e-8 mV,
 * the single channels stay under 2e-12), and the forms must have been taken (some bits differ). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#include "nmodl_driver.h"

/* zero-filled tails of the initialisers are intended */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

static const tcase CASES[] = {
    {"hh", 6.3, -65, 50, {"hh"}, {{0}}, {{2, 30, 0.2}}, {{0, 0}}, 0, 0, 0, 0},
    {"Exp2Syn", 6.3, -70, 40, {"pas", "Exp2Syn"},
     {{"pas", "g", 1e-4}, {"pas", "e", -70}, {"Exp2Syn", "tau1", 0.5}, {"Exp2Syn", "tau2", 3}, {"Exp2Syn", "e", 0}},
     {{0}}, {{5, 0.01}, {15, 0.02}}, 0, 0, 0, 0},
    NMODL_BBP_CHANNELS,
    NMODL_L5SOMA(300),
    NMODL_FORM_CASES,
};

/* The case's trace (v, cai or the probe, eca per step) with the mechanisms of libs; NULL on failure. */
static double *trace(ns_mech_library_t *const *libs, const tcase *tc, long steps) {
    comp c;
    memset(&c, 0, sizeof c);
    c.celsius = tc->celsius;
    for (int k = 0; k < MAX_MECH && tc->mechs[k]; ++k) {
        const ns_mech_desc *d = find(libs, 3, tc->mechs[k]);
        CHECK_MSG(d != NULL, "%s: no mechanism %s", tc->name, tc->mechs[k]);
        if (!d || add_mech(&c, d)) { free_comp(&c); return NULL; }
    }
    for (int k = 0; k < 24 && tc->params[k].mech; ++k)
        for (int j = 0; j < c.n; ++j)
            if (!strcmp(c.m[j].d->name, tc->params[k].mech)) {
                int idx = -1;
                CHECK_OK(ns_mech_field_index(c.m[j].d, tc->params[k].name, &idx));
                if (idx >= 0) c.m[j].fields[idx] = tc->params[k].value;
            }
    double *out = malloc((size_t)steps * 3 * sizeof *out);
    if (out && simulate(&c, tc, steps, out) != 0) {
        CHECK_MSG(0, "%s: not finite", tc->name);
        free(out);
        out = NULL;
    }
    free_comp(&c);
    return out;
}

int main(void) {
    if (tmpdir_make("ns_gpu_forms")) return 77;
    /* the device's branches of the generated headers on the host: __CUDA_ARCH__, __device__ and __host__ as
     * nothing, the atomics that VERBATIM C's device error report uses as one thread's plain operations */
    char *wrap = tmp("cc-device-forms");
    FILE *f = fopen(wrap, "w");
    CHECK(f != NULL);
    if (!f) return tmpdir_remove(), check_summary("test_nmodl_gpu_forms");
    fputs("#!/bin/sh\nexec cc -D__CUDA_ARCH__=900 -D__device__= -D__host__= '-D__threadfence()=((void)0)' "
          "'-DatomicAdd(a,x)=(*(a)+=(x))' '-DatomicCAS(a,c,v)=(*(a)==(c)?(*(a)=(v),(c)):*(a))' "
          "'-DatomicExch(a,v)=(*(a)=(v))' \"$@\"\n", f);
    fclose(f);
    CHECK(chmod(wrap, 0755) == 0);
    ns_mechanisms_build_options host = {0}, device = {0};
    device.cc = wrap;
    ns_mech_library_t *h[3] = {NULL, NULL, NULL}, *g[3] = {NULL, NULL, NULL};
    const char *dirs[3] = {MECH_DIR "/neuron", MECH_DIR "/bbp",
                           test_mech_copy(NMODL_FORM_FILES(MECH_DIR))};
    CHECK(dirs[2] != NULL);
    if (!dirs[2]) return tmpdir_remove(), check_summary("test_nmodl_gpu_forms");
    const char *hn[3] = {"libneuron.so", "libbbp.so", "liblang.so"};
    const char *gn[3] = {"libneuron_dev.so", "libbbp_dev.so", "liblang_dev.so"};
    int skip = 0;
    for (int k = 0; k < 3 && !skip; ++k) {
        /* BBP's host library: the run's fixture mechlib_bbp (tests/CMakeLists.txt) */
        h[k] = k == 1 ? test_mech_shared("NS_TEST_LIBBBP", dirs[k], hn[k], &skip) : test_mech_build(dirs[k], hn[k], &host, &skip);
        if (!skip) g[k] = test_mech_build(dirs[k], gn[k], &device, &skip);
    }
    if (skip) return tmpdir_remove(), 77;
    if (!h[0] || !h[1] || !h[2] || !g[0] || !g[1] || !g[2]) return tmpdir_remove(), check_summary("test_nmodl_gpu_forms");
    int differ = 0; /* cases where the forms changed some bit */
    for (size_t k = 0; k < sizeof CASES / sizeof *CASES; ++k) {
        const tcase *tc = &CASES[k];
        const long steps = (long)(tc->tstop / DT + 0.5);
        double *a = trace(h, tc, steps), *b = trace(g, tc, steps);
        double dv = 0.0, dca = 0.0;
        int spikes = 0;
        for (long s = 0; a && b && s < steps; ++s) {
            dv = fmax(dv, fabs(a[3 * s] - b[3 * s]));
            if (tc->calcium) dca = fmax(dca, fabs(a[3 * s + 1] - b[3 * s + 1]) / fabs(a[3 * s + 1]));
            spikes += s > 0 && a[3 * s - 3] < 0.0 && a[3 * s] >= 0.0;
            differ += a[3 * s] != b[3 * s];
        }
        printf("%-9s host C against the device's forms: max |dv| %.2e mV, cai %.2e relative (%d spikes)\n", tc->name,
               dv, dca, spikes);
        CHECK_MSG(a && b && dv <= 1e-6 && dca <= 1e-9, "%s: the device's forms differ from the host's C beyond rounding",
                  tc->name);
        free(a);
        free(b);
    }
    CHECK_MSG(differ > 0, "the device's forms were not taken (the libraries give the same bits)");
    for (int k = 0; k < 3; ++k) {
        ns_mech_library_close(h[k]);
        ns_mech_library_close(g[k]);
    }
    tmpdir_remove();
    return check_summary("test_nmodl_gpu_forms");
}
