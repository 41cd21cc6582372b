/* NMODL's random-number builtins (normrand, exprand, scop_random, set_seed;
 * src/nmodl/nmodl_random.h, docs/mechanisms.md "Random numbers"):
 *   1. the Philox4x32-10 block function against Random123's known-answer
 *      vectors (kat_vectors: philox4x32 10);
 *   2. tests/data/nmodl_random/rnd.mod, built with the system compiler, in
 *      the CPU loop on 64 one-compartment cells, 150 steps: the draws of
 *      normrand(1, 2), exprand(3) and scop_random() against their exact
 *      distributions (mean and variance within 5 standard errors, the
 *      Kolmogorov-Smirnov statistic below its 0.1% critical value, the
 *      exact CDFs from libm's erfc and exp), and no two instances alike;
 *   3. reproducibility: 1 and 2 threads bit for bit; cells 0 .. 4 alone (a
 *      different lane-block layout) draw what they draw among 64; set_seed:
 *      the same seed the same draws, another seed other draws;
 *   4. NEURON 9's RANDOM variables (rndvar.mod: random_normal, random_negexp,
 *      random_uniform(r, a, b), random_setseq): their distributions as in 2,
 *      1 and 2 threads bit for bit, random_setseq moving one stream only.
 * Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define NS_MECH_FN static inline
#include "neurosolve/mechanism.h"
#include "nmodl/nmodl_random.h"

#define N_CELLS 64
#define STEPS 150

/* 1. Random123's known answers */
static void philox_kat(void) {
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1}};
    for (int k = 0; k < 3; ++k) {
        uint32_t c[4] = {kat[k][0], kat[k][1], kat[k][2], kat[k][3]};
        const uint32_t key[2] = {kat[k][4], kat[k][5]};
        nsm_philox4x32(c, key);
        for (int j = 0; j < 4; ++j)
            CHECK_MSG(c[j] == kat[k][6 + j], "Philox4x32-10 vector %d word %d: %08x (want %08x)", k, j, c[j],
                      kat[k][6 + j]);
    }
    /* the (0, 1) mapping: the extremes stay inside */
    CHECK(nsm_rng_u01(0, 0) > 0.0 && nsm_rng_u01(0xffffffffu, 0xffffffffu) < 1.0);
}

/* x, y, u of rnd at each step of `cells` cells (the first `keep` kept), at
 * `threads` threads; seed: the PARAMETER (0: not set) */
static void run(ns_mech_library_t *lib, const ns_cell_t *cell, const char *mech, int64_t cells, int threads, double seed,
                double *out, int64_t keep) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (!model) return;
    char text[200];
    snprintf(text, sizeof text, "all.insert = pas %s\nall.seed_%s = %g\n", mech, mech, seed);
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "rnd.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.threads = threads;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, cells, NULL, &p, &o, &sim));
    for (int s = 0; sim && s < STEPS; ++s) {
        CHECK_OK(ns_sim_advance(sim, 1));
        for (int64_t c = 0; c < keep; ++c)
            for (int q = 0; q < 3; ++q) {
                char name[40];
                snprintf(name, sizeof name, "%c_%s", "xyu"[q], mech);
                double x[4];
                CHECK_OK(ns_sim_get_model_var(sim, c, name, x));
                out[((size_t)q * STEPS + (size_t)s) * (size_t)keep + (size_t)c] = x[0];
            }
    }
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double cdf_normal(double x) { return 0.5 * erfc(-(x - 1.0) / (2.0 * sqrt(2.0))); }
static double cdf_exp(double x) { return x <= 0.0 ? 0.0 : 1.0 - exp(-x / 3.0); }
static double cdf_uniform(double x) { return x <= 0.0 ? 0.0 : x >= 1.0 ? 1.0 : x; }
static double cdf_uniform25(double x) { return cdf_uniform((x - 2.0) / 3.0); }

/* 2. the moments and the KS statistic of n draws against the distribution */
static void statistics(const char *name, double *x, size_t n, double mean, double var, double (*cdf)(double)) {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += x[i];
    const double m = s / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; ++i) ss += (x[i] - m) * (x[i] - m);
    const double v = ss / (double)(n - 1);
    qsort(x, n, sizeof *x, cmp_double);
    double d = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const double f = cdf(x[i]);
        d = fmax(d, fmax(fabs((double)(i + 1) / (double)n - f), fabs(f - (double)i / (double)n)));
    }
    const double crit = 1.949 / sqrt((double)n); /* scipy.stats.kstwobign.ppf(0.999) = 1.9495 */
    printf("%s: %zu draws, mean %.4f (want %g), variance %.4f (want %g), KS D %.4f (0.1%% critical %.4f)\n", name, n,
           m, mean, v, var, d, crit);
    CHECK_MSG(fabs(m - mean) <= 5.0 * sqrt(var / (double)n), "%s: mean %g, want %g", name, m, mean);
    /* the variance's standard error from the fourth moment: 2 var^2 for the normal, 8 var^2 for the exponential */
    CHECK_MSG(fabs(v - var) <= 5.0 * sqrt(8.0 * var * var / (double)n), "%s: variance %g, want %g", name, v, var);
    CHECK_MSG(d < crit, "%s: KS statistic %g above the 0.1%% critical value %g", name, d, crit);
}

int main(void) {
    philox_kat();
    if (tmpdir_make("ns_nmodl_random")) return 1;
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(NS_TEST_DATA "/nmodl_random/*.mod", "librnd.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_cell_t *cell = test_cylinder();
    const size_t n = (size_t)3 * STEPS * N_CELLS;
    double *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
    if (lib && cell && a && b && c) {
        run(lib, cell, "rnd", N_CELLS, 1, 0, a, N_CELLS);
        /* 3. two threads, bit for bit */
        run(lib, cell, "rnd", N_CELLS, 2, 0, b, N_CELLS);
        CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "1 and 2 threads draw differently");
        /* five cells alone: their own lane blocks, the same draws */
        double *five = calloc((size_t)3 * STEPS * 5, sizeof *five);
        if (five) {
            run(lib, cell, "rnd", 5, 1, 0, five, 5);
            int same = 1;
            for (int q = 0; q < 3; ++q)
                for (int st = 0; st < STEPS; ++st)
                    for (int k = 0; k < 5; ++k)
                        same &= five[((size_t)q * STEPS + (size_t)st) * 5 + (size_t)k] ==
                                a[((size_t)q * STEPS + (size_t)st) * N_CELLS + (size_t)k];
            CHECK_MSG(same, "cells 0 .. 4 draw differently alone than among %d", N_CELLS);
        }
        free(five);
        /* set_seed: the same seed twice the same, another seed different */
        run(lib, cell, "rnd", N_CELLS, 1, 7, b, N_CELLS);
        run(lib, cell, "rnd", N_CELLS, 2, 7, c, N_CELLS);
        CHECK_MSG(memcmp(b, c, n * sizeof *b) == 0, "set_seed(7): two runs differ");
        CHECK_MSG(memcmp(a, b, n * sizeof *a) != 0, "set_seed(7) draws what seed 0 draws");
        /* no two instances draw the same first normal */
        double first[N_CELLS];
        memcpy(first, a, sizeof first);
        qsort(first, N_CELLS, sizeof *first, cmp_double);
        int distinct = 1;
        for (int k = 1; k < N_CELLS; ++k) distinct &= first[k] != first[k - 1];
        CHECK_MSG(distinct, "two instances drew the same normrand");
        /* 2. the distributions */
        const size_t m = (size_t)STEPS * N_CELLS;
        statistics("normrand(1, 2)", a, m, 1.0, 4.0, cdf_normal);
        statistics("exprand(3)", a + m, m, 3.0, 9.0, cdf_exp);
        statistics("scop_random()", a + 2 * m, m, 0.5, 1.0 / 12.0, cdf_uniform);
        statistics("normrand(1, 2), set_seed(7)", b, m, 1.0, 4.0, cdf_normal);
        /* 4. NEURON 9's RANDOM variables: three streams, 1 and 2 threads alike */
        run(lib, cell, "rndvar", N_CELLS, 1, 0, a, N_CELLS);
        run(lib, cell, "rndvar", N_CELLS, 2, 0, b, N_CELLS);
        CHECK_MSG(memcmp(a, b, n * sizeof *a) == 0, "RANDOM: 1 and 2 threads draw differently");
        /* random_setseq(ra, 10) in INITIAL: ra's draws move 10 blocks on (a step draws one: a
         * BREAKPOINT without currents runs once, in state(), as nocmodl puts it in nrn_state),
         * rb's and rc's stay */
        run(lib, cell, "rndvar", N_CELLS, 1, 10, c, N_CELLS);
        int moved = 1, kept = 1;
        for (int st = 0; st + 10 < STEPS; ++st)
            for (int k = 0; k < N_CELLS; ++k) {
                moved &= c[(size_t)st * N_CELLS + (size_t)k] == a[(size_t)(st + 10) * N_CELLS + (size_t)k];
                for (int q = 1; q < 3; ++q)
                    kept &= c[((size_t)q * STEPS + (size_t)st) * N_CELLS + (size_t)k] ==
                            a[((size_t)q * STEPS + (size_t)st) * N_CELLS + (size_t)k];
            }
        CHECK_MSG(moved, "random_setseq(ra, 10): ra's draws are not those 10 steps later");
        CHECK_MSG(kept, "random_setseq(ra, 10) changed rb's or rc's draws");
        statistics("random_normal(ra, 1, 2)", a, m, 1.0, 4.0, cdf_normal);
        statistics("random_negexp(rb, 3)", a + m, m, 3.0, 9.0, cdf_exp);
        statistics("random_uniform(rc, 2, 5)", a + 2 * m, m, 3.5, 0.75, cdf_uniform25);
    }
    free(a);
    free(b);
    free(c);
    ns_cell_destroy(cell);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_nmodl_random");
}
