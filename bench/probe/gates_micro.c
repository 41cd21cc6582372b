/* A probe, never built into the library: the hh gate update of one block
 * (2,400 lane-nodes, L2-resident), each kernel compiled with the library's
 * flags and clones:
 *   hand   the hand-written loop's arithmetic (step_cpu.c, gates);
 *   gen0   the generated hh's fused states stages (model_cpu.c, hh_state),
 *          through src/cable/builtin/hh.h as it is now;
 *   offset the same stages with the table lookup written inline, each column
 *          read as T_[c + k_] (the translator's form before 2026-11-29);
 *   column the same with each column a pointer of its own, (T_ + c)[k_]
 *          (the form since: the columns share their index vectors).
 * Prints the min over rounds of ns per lane-node, TSC cycles per stage of
 * hand and gen0, and fails when a kernel's values differ from hand's by a
 * bit. Build and run: bench/probe/gates_micro.sh (bench/README.md, "The
 * table lookup's index vectors"). */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#include "mech/builtin/hh.h"
#include "sim/cpu/exp_lanes.h"
#include "sim/membrane.h"

#define NL (300 * 8)
#define CHUNK 64
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default"), noinline))
#define SIMD _Pragma("omp simd")
#define NK 4

static double V[NL], S0[3][NL], S[3][NL];
static ns_hh_table TAB;
static double GT[5 + 6 * NS_HH_TABLE_N]; /* the generated table: header, then the columns */
static const double DT = 0.025;
static unsigned long long ST[2][4]; /* TSC cycles of hand and gen0: lookup, ex, exp, update */

/* hand: step_cpu.c's gates (table path, no mask), with a timer per stage */
CLONES static void hand(const double *restrict v, double *restrict m, double *restrict h, double *restrict gn,
                        const ns_hh_table *tab, int64_t b, int64_t e) {
    const double dt = DT;
    const double *restrict t_minf = tab->minf, *restrict t_mtau = tab->mtau;
    const double *restrict t_hinf = tab->hinf, *restrict t_htau = tab->htau;
    const double *restrict t_ninf = tab->ninf, *restrict t_ntau = tab->ntau;
    for (int64_t k0 = b; k0 < e; k0 += CHUNK) {
        const int len = (int)(e - k0 < CHUNK ? e - k0 : CHUNK);
        double minf[CHUNK], mtau[CHUNK], hinf[CHUNK], htau[CHUNK], ninf[CHUNK], ntau[CHUNK];
        double ex[3 * CHUNK];
        const unsigned long long c0 = __rdtsc();
        SIMD
        for (int l = 0; l < len; ++l) {
            const double xi = (1.0 / NS_HH_TABLE_DV) * (v[k0 + l] - NS_HH_TABLE_VMIN);
            const int inside = (xi > 0.0) & (xi < (double)(NS_HH_TABLE_N - 1));
            const int high = xi >= (double)(NS_HH_TABLE_N - 1);
            const int nan = xi != xi;
            const double xc = xi == xi ? xi : 0.0;
            const double xd = xc < 300.0 ? xc : 300.0;
            const double xs = (xd > -300.0 ? xd : -300.0) * (double)inside;
            const int j = (int)xs;
            const int i = j * inside + (NS_HH_TABLE_N - 1) * high;
            const int i1 = i + (i < NS_HH_TABLE_N - 1);
            const double th = (xs - (double)j) + (nan ? xi : 0.0);
#define LK(col, out)                                                                                     \
    do {                                                                                                 \
        const double c0_ = col[i], c1_ = col[i1];                                                        \
        out = c0_ + th * (c1_ - c0_);                                                                    \
    } while (0)
            LK(t_minf, minf[l]);
            LK(t_mtau, mtau[l]);
            LK(t_hinf, hinf[l]);
            LK(t_htau, htau[l]);
            LK(t_ninf, ninf[l]);
            LK(t_ntau, ntau[l]);
#undef LK
        }
        const unsigned long long c1 = __rdtsc();
        for (int l = 0; l < len; ++l) {
            ex[l] = dt * ((-1.0) / mtau[l]);
            ex[len + l] = dt * ((-1.0) / htau[l]);
            ex[2 * len + l] = dt * ((-1.0) / ntau[l]);
        }
        const unsigned long long c2 = __rdtsc();
        for (int l = 0; l < 3 * len; ++l) ex[l] = exp_lanes(ex[l]);
        const unsigned long long c3 = __rdtsc();
        for (int l = 0; l < len; ++l) {
            const int64_t k = k0 + l;
            m[k] = m[k] + (1. - ex[l]) * (minf[l] - m[k]);
            h[k] = h[k] + (1. - ex[len + l]) * (hinf[l] - h[k]);
            gn[k] = gn[k] + (1. - ex[2 * len + l]) * (ninf[l] - gn[k]);
        }
        const unsigned long long c4 = __rdtsc();
        ST[0][0] += c1 - c0, ST[0][1] += c2 - c1, ST[0][2] += c3 - c2, ST[0][3] += c4 - c3;
    }
}

/* gen0: model_cpu.c's hh_state (uniform parameters, last = 0), with a
 * timer per stage (the lookup stage includes the exponents' divisions) */
CLONES static void gen0(const double *restrict v, double *restrict P15, double *restrict P16, double *restrict P17,
                        int q0, int q1) {
    double g1[1] = {1.0};
    ns_mech_ppack pk = {0};
    pk.v = (double *)v, pk.dt = DT, pk.celsius = 6.3, pk.table = GT, pk.global = g1;
    const ns_mech_ppack *pp = &pk;
    const double u0 = 0.12, u1 = 0.036, u2 = 0.0003, u3 = -54.3, ue0 = 50.0, ue1 = -77.0;
#define LOCALS                                                                                             \
    double F0 = u0, F1 = u1, F2 = u2, F3 = u3;                                                             \
    double F4 = 0.0, F5 = 0.0, F6 = 0.0, F7 = 0.0, F8 = 0.0, F9 = 0.0, F10 = 0.0, F11 = 0.0, F12 = 0.0;  \
    double F13 = 0.0, F14 = 0.0, F15 = P15[i], F16 = P16[i], F17 = P17[i];                              \
    double I0 = ue0, I1 = ue1
#define ARGS &F0, &F1, &F2, &F3, &F4, &F5, &F6, &F7, &F8, &F9, &F10, &F11, &F12, &F13, &F14, &F15, &F16, &F17, &I0, &I1
    for (int c0 = q0; c0 < q1; c0 += CHUNK) {
        const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;
        double A[3 * CHUNK], T[3 * CHUNK];
        const unsigned long long r0 = __rdtsc();
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l, i = q;
            LOCALS;
            double a0, t0, a1, t1, a2, t2;
            nsm_hh_d_states_pre((ns_mech_ppack *)pp, ARGS, i, q, v[q], &a0, &t0, &a1, &t1, &a2, &t2);
            A[l] = a0, A[CHUNK + l] = a1, A[2 * CHUNK + l] = a2;
            T[l] = t0, T[CHUNK + l] = t1, T[2 * CHUNK + l] = t2;
        }
        const unsigned long long r1 = __rdtsc();
        for (int k = 0; k < 3; ++k) {
            double *restrict x = A + k * CHUNK;
            SIMD
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);
        }
        const unsigned long long r2 = __rdtsc();
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l, i = q;
            LOCALS;
            nsm_hh_d_states_post((ns_mech_ppack *)pp, ARGS, i, A[l], T[l], A[CHUNK + l], T[CHUNK + l],
                                 A[2 * CHUNK + l], T[2 * CHUNK + l]);
            P15[i] = F15, P16[i] = F16, P17[i] = F17;
        }
        const unsigned long long r3 = __rdtsc();
        ST[1][0] += r1 - r0, ST[1][2] += r2 - r1, ST[1][3] += r3 - r2;
    }
#undef LOCALS
#undef ARGS
}

/* The generated lookup of hh.mod's TABLE (FROM -100 TO 100 WITH 200) with
 * column c read through COL(c, k): the states stages around it as gen0's */
#define LOOKUP_STAGES(NAME, COL)                                                                           \
    CLONES static void NAME(const double *restrict v, double *restrict P15, double *restrict P16,           \
                            double *restrict P17, int q0, int q1) {                                        \
        const double *restrict T_ = GT;                                                                    \
        for (int c0 = q0; c0 < q1; c0 += CHUNK) {                                                          \
            const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;                                             \
            double A[3 * CHUNK], T[3 * CHUNK];                                                             \
            SIMD                                                                                           \
            for (int l = 0; l < len; ++l) {                                                                \
                const double xi_ = 1.0 * (v[c0 + l] - (-100.0));                                           \
                const int in_ = (xi_ > 0.) & (xi_ < 200.), hi_ = xi_ >= 200., nan_ = xi_ != xi_;           \
                const double xc_ = xi_ == xi_ ? xi_ : 0.0, xd_ = xc_ < 201. ? xc_ : 201.;                  \
                const double xs_ = (xd_ > -1. ? xd_ : -1.) * (double)in_;                                  \
                const int j_ = (int)xs_, k_ = j_ * in_ + 200 * hi_, k1_ = k_ + (k_ < 200);                 \
                const double t_ = (xs_ - (double)j_) + (nan_ ? xi_ : 0.0);                                 \
                double R[6];                                                                               \
                for (int c = 0; c < 6; ++c) {                                                              \
                    const double a_ = COL(5 + 201 * c, k_), b_ = COL(5 + 201 * c, k1_);                    \
                    R[c] = a_ + t_ * (b_ - a_);                                                            \
                }                                                                                          \
                /* columns: minf mtau hinf htau ninf ntau */                                               \
                for (int g = 0; g < 3; ++g) {                                                              \
                    A[g * CHUNK + l] = DT * ((-1.0) / R[2 * g + 1]);                                       \
                    T[g * CHUNK + l] = R[2 * g];                                                           \
                }                                                                                          \
            }                                                                                              \
            for (int k = 0; k < 3; ++k) {                                                                  \
                double *restrict x = A + k * CHUNK;                                                        \
                SIMD                                                                                       \
                for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);                                        \
            }                                                                                              \
            SIMD                                                                                           \
            for (int l = 0; l < len; ++l) {                                                                \
                const int i = c0 + l;                                                                      \
                P15[i] = P15[i] + (1. - A[l]) * (T[l] - P15[i]);                                           \
                P16[i] = P16[i] + (1. - A[CHUNK + l]) * (T[CHUNK + l] - P16[i]);                           \
                P17[i] = P17[i] + (1. - A[2 * CHUNK + l]) * (T[2 * CHUNK + l] - P17[i]);                   \
            }                                                                                              \
        }                                                                                                  \
    }
#define COL_OFFSET(c, k) T_[(c) + (k)]
#define COL_POINTER(c, k) (T_ + (c))[k]
LOOKUP_STAGES(offset, COL_OFFSET)
LOOKUP_STAGES(column, COL_POINTER)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *const NAME[NK] = {"hand", "gen0", "offset", "column"};

static void run(int k) {
    switch (k) {
    case 0: hand(V, S[0], S[1], S[2], &TAB, 0, NL); break;
    case 1: gen0(V, S[0], S[1], S[2], 0, NL); break;
    case 2: offset(V, S[0], S[1], S[2], 0, NL); break;
    default: column(V, S[0], S[1], S[2], 0, NL);
    }
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 20, iters = argc > 2 ? atoi(argv[2]) : 400;
    srand(7);
    for (int q = 0; q < NL; ++q) {
        V[q] = -80.0 + 120.0 * rand() / (double)RAND_MAX;
        for (int k = 0; k < 3; ++k) S0[k][q] = rand() / (double)RAND_MAX;
    }
    /* one table in both layouts: hh's rates at 6.3 degC */
    GT[2] = NS_HH_TABLE_VMIN;
    GT[3] = 1.0 / NS_HH_TABLE_DV;
    for (int k = 0; k < NS_HH_TABLE_N; ++k) {
        ns_hh_rates r;
        ns_hh_rates_exact(NS_HH_TABLE_VMIN + k * NS_HH_TABLE_DV, 1.0, &r);
        const double col[6] = {r.minf, r.mtau, r.hinf, r.htau, r.ninf, r.ntau};
        double *const tab[6] = {TAB.minf, TAB.mtau, TAB.hinf, TAB.htau, TAB.ninf, TAB.ntau};
        for (int c = 0; c < 6; ++c) tab[c][k] = GT[5 + 201 * c + k] = col[c];
    }
    /* hh.h's column order: minf mtau hinf htau ninf ntau at 5, 206, ... (nsm_hh_p_rates) */
    int bad = 0;
    double ref[3][NL];
    for (int k = 0; k < NK; ++k) {
        memcpy(S, S0, sizeof S);
        for (int it = 0; it < 3; ++it) run(k);
        if (k == 0) memcpy(ref, S, sizeof ref);
        else if (memcmp(ref, S, sizeof ref)) printf("%s: values differ from hand\n", NAME[k]), bad = 1;
    }
    double best[NK];
    for (int k = 0; k < NK; ++k) best[k] = 1e30;
    memset(ST, 0, sizeof ST);
    for (int r = 0; r < rounds; ++r)
        for (int k = 0; k < NK; ++k) {
            memcpy(S, S0, sizeof S);
            const double t0 = now();
            for (int it = 0; it < iters; ++it) run(k);
            const double t = (now() - t0) / ((double)iters * NL) * 1e9;
            if (t < best[k]) best[k] = t;
        }
    for (int k = 0; k < NK; ++k)
        printf("%s: %.3f ns per lane-node (min of %d rounds), %.3f of hand\n", NAME[k], best[k], rounds,
               best[k] / best[0]);
    const double per = (double)rounds * iters * NL;
    printf("stages hand (TSC cycles per lane-node): lookup %.2f, exponents %.2f, exp %.2f, update %.2f\n",
           ST[0][0] / per, ST[0][1] / per, ST[0][2] / per, ST[0][3] / per);
    printf("stages gen0 (TSC cycles per lane-node): lookup and exponents %.2f, exp %.2f, update %.2f\n",
           ST[1][0] / per, ST[1][2] / per, ST[1][3] / per);
    return bad;
}
