/* A probe, never built into the library: the hh gate update of one block
 * (2,400 lane-nodes, L2-resident) by the hand-written loop's arithmetic
 * (step_cpu.c, gates) against the generated hh's fused states pass
 * (model_cpu.c, hh_state) and variants of it, each compiled with the
 * library's clones; min over rounds of ns per lane-node, and a check that
 * all give the hand-written values bit for bit.
 * Build: bench/probe/gates_micro.sh */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>
#include "cable/builtin/hh.h"
#include "cable/exp_lanes.h"
#include "cable/mech.h"

#define NL (300 * 8)
#define CHUNK 64
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default"), noinline))
#define SIMD _Pragma("omp simd")

static double V[NL], S0[3][NL], S[3][NL];
static double P[18][NL];
static ns_hh_table TAB;
static double GT[5 + 6 * NS_HH_TABLE_N];
static const double DT = 0.025;
static unsigned long long ST[2][4]; /* cycles: lookup, ex (hand) or 0, update, exp */

/* hand: step_cpu.c's gates (table path, no mask) */
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
        const double c0 = col[i], c1 = col[i1];                                                          \
        out = c0 + th * (c1 - c0);                                                                       \
    } while (0)
            LK(t_minf, minf[l]);
            LK(t_mtau, mtau[l]);
            LK(t_hinf, hinf[l]);
            LK(t_htau, htau[l]);
            LK(t_ninf, ninf[l]);
            LK(t_ntau, ntau[l]);
        }
        for (int l = 0; l < len; ++l) {
            ex[l] = dt * ((-1.0) / mtau[l]);
            ex[len + l] = dt * ((-1.0) / htau[l]);
            ex[2 * len + l] = dt * ((-1.0) / ntau[l]);
        }
        for (int l = 0; l < 3 * len; ++l) ex[l] = exp_lanes(ex[l]);
        for (int l = 0; l < len; ++l) {
            const int64_t k = k0 + l;
            m[k] = m[k] + (1. - ex[l]) * (minf[l] - m[k]);
            h[k] = h[k] + (1. - ex[len + l]) * (hinf[l] - h[k]);
            gn[k] = gn[k] + (1. - ex[2 * len + l]) * (ninf[l] - gn[k]);
        }
    }
}

/* hand with a timer per stage */
CLONES static void hand_st(const double *restrict v, double *restrict m, double *restrict h, double *restrict gn,
                        const ns_hh_table *tab, int64_t b, int64_t e) {
    const double dt = DT;
    const double *restrict t_minf = tab->minf, *restrict t_mtau = tab->mtau;
    const double *restrict t_hinf = tab->hinf, *restrict t_htau = tab->htau;
    const double *restrict t_ninf = tab->ninf, *restrict t_ntau = tab->ntau;
    for (int64_t k0 = b; k0 < e; k0 += CHUNK) {
        const int len = (int)(e - k0 < CHUNK ? e - k0 : CHUNK);
        double minf[CHUNK], mtau[CHUNK], hinf[CHUNK], htau[CHUNK], ninf[CHUNK], ntau[CHUNK];
        double ex[3 * CHUNK];
        unsigned long long c0 = __rdtsc();
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
#undef LK
#define LK(col, out)                                                                                     \
    do {                                                                                                 \
        const double c0 = col[i], c1 = col[i1];                                                          \
        out = c0 + th * (c1 - c0);                                                                       \
    } while (0)
            LK(t_minf, minf[l]);
            LK(t_mtau, mtau[l]);
            LK(t_hinf, hinf[l]);
            LK(t_htau, htau[l]);
            LK(t_ninf, ninf[l]);
            LK(t_ntau, ntau[l]);
        }
        unsigned long long c1 = __rdtsc();
        for (int l = 0; l < len; ++l) {
            ex[l] = dt * ((-1.0) / mtau[l]);
            ex[len + l] = dt * ((-1.0) / htau[l]);
            ex[2 * len + l] = dt * ((-1.0) / ntau[l]);
        }
        unsigned long long c2 = __rdtsc();
        for (int l = 0; l < 3 * len; ++l) ex[l] = exp_lanes(ex[l]);
        unsigned long long c3 = __rdtsc();
        for (int l = 0; l < len; ++l) {
            const int64_t k = k0 + l;
            m[k] = m[k] + (1. - ex[l]) * (minf[l] - m[k]);
            h[k] = h[k] + (1. - ex[len + l]) * (hinf[l] - h[k]);
            gn[k] = gn[k] + (1. - ex[2 * len + l]) * (ninf[l] - gn[k]);
        }
        unsigned long long c4 = __rdtsc();
        ST[0][0] += c1 - c0, ST[0][1] += c2 - c1, ST[0][2] += c4 - c3, ST[0][3] += c3 - c2;
    }
}

/* model_cpu.c's locals of hh (uniform, last = 0) */
#define LOCALS                                                                                             \
    double F0 = u0, F1 = u1, F2 = u2, F3 = u3;                                                             \
    double F4 = 0.0, F5 = 0.0, F6 = 0.0, F7 = 0.0, F8 = 0.0, F9 = 0.0, F10 = 0.0, F11 = 0.0, F12 = 0.0;  \
    double F13 = 0.0, F14 = 0.0, F15 = P15[i], F16 = P16[i], F17 = P17[i];                              \
    double I0 = ue0, I1 = ue1
#define ARGS &F0, &F1, &F2, &F3, &F4, &F5, &F6, &F7, &F8, &F9, &F10, &F11, &F12, &F13, &F14, &F15, &F16, &F17, &I0, &I1
#define PTRS                                                                                               \
    double *restrict P15 = P[15], *restrict P16 = P[16], *restrict P17 = P[17];                            \
    const double u0 = 0.12, u1 = 0.036, u2 = 0.0003, u3 = -54.3, ue0 = 50.0, ue1 = -77.0

static inline ns_mech_ppack pack(const double *v, double *g1) {
    ns_mech_ppack p = {0};
    p.v = (double *)v;
    p.dt = DT;
    p.celsius = 6.3;
    p.table = GT;
    p.global = g1;
    return p;
}

/* gen0: model_cpu.c's hh_state (chunks of C lane-nodes; the library's is 64) */\
#define GEN0(NAME, C) CLONES static void NAME(const double *restrict v, int q0, int q1) {\
    double g1[1] = {1.0};\
    const ns_mech_ppack pk = pack(v, g1), *pp = &pk;\
    PTRS;\
    for (int c0 = q0; c0 < q1; c0 += C) {\
        const int len = q1 - c0 < C ? q1 - c0 : C;\
        double A[3 * C], T[3 * C];\
        SIMD\
        for (int l = 0; l < len; ++l) {\
            const int q = c0 + l, i = q;\
            LOCALS;\
            double a0, t0, a1, t1, a2, t2;\
            nsm_hh_d_states_pre((ns_mech_ppack *)pp, ARGS, i, q, v[q], &a0, &t0, &a1, &t1, &a2, &t2);\
            A[l] = a0;\
            A[C + l] = a1;\
            A[2 * C + l] = a2;\
            T[l] = t0;\
            T[C + l] = t1;\
            T[2 * C + l] = t2;\
        }\
        for (int k = 0; k < 3; ++k) {\
            double *restrict x = A + k * C;\
            SIMD\
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);\
        }\
        SIMD\
        for (int l = 0; l < len; ++l) {\
            const int q = c0 + l, i = q;\
            LOCALS;\
            nsm_hh_d_states_post((ns_mech_ppack *)pp, ARGS, i, A[l], T[l], A[C + l], T[C + l],\
                                 A[2 * C + l], T[2 * C + l]);\
            P15[i] = F15;\
            P16[i] = F16;\
            P17[i] = F17;\
        }\
    }\
}
#define GEN0ST(NAME, C) CLONES static void NAME(const double *restrict v, int q0, int q1) {\
    double g1[1] = {1.0};\
    const ns_mech_ppack pk = pack(v, g1), *pp = &pk;\
    PTRS;\
    for (int c0 = q0; c0 < q1; c0 += C) {\
        const int len = q1 - c0 < C ? q1 - c0 : C;\
        double A[3 * C], T[3 * C]; unsigned long long r0 = __rdtsc();\
        SIMD\
        for (int l = 0; l < len; ++l) {\
            const int q = c0 + l, i = q;\
            LOCALS;\
            double a0, t0, a1, t1, a2, t2;\
            nsm_hh_d_states_pre((ns_mech_ppack *)pp, ARGS, i, q, v[q], &a0, &t0, &a1, &t1, &a2, &t2);\
            A[l] = a0;\
            A[C + l] = a1;\
            A[2 * C + l] = a2;\
            T[l] = t0;\
            T[C + l] = t1;\
            T[2 * C + l] = t2;\
        }\
        unsigned long long r1 = __rdtsc();\
        for (int k = 0; k < 3; ++k) {\
            double *restrict x = A + k * C;\
            SIMD\
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);\
        }\
        unsigned long long r2 = __rdtsc();\
        SIMD\
        for (int l = 0; l < len; ++l) {\
            const int q = c0 + l, i = q;\
            LOCALS;\
            nsm_hh_d_states_post((ns_mech_ppack *)pp, ARGS, i, A[l], T[l], A[C + l], T[C + l],\
                                 A[2 * C + l], T[2 * C + l]);\
            P15[i] = F15;\
            P16[i] = F16;\
            P17[i] = F17;\
        }\
        unsigned long long r3 = __rdtsc();\
        ST[1][0] += r1 - r0, ST[1][2] += r3 - r2, ST[1][3] += r2 - r1;\
    }\
}
GEN0ST(gen0_st, 64)
GEN0(gen0, 64)
GEN0(gen0_32, 32)
GEN0(gen0_128, 128)

/* gen1: the rates (the DERIVATIVE block's statements) in a loop of their
 * own into chunk arrays of the assigned fields, then the exponents and
 * targets from them, as the hand-written loop's lookup and ex loops */
CLONES static void gen1(const double *restrict v, int q0, int q1) {
    double g1[1] = {1.0};
    const ns_mech_ppack pk = pack(v, g1), *pp = &pk;
    PTRS;
    for (int c0 = q0; c0 < q1; c0 += CHUNK) {
        const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;
        double R[6][CHUNK], A[3 * CHUNK];
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l, i = q;
            LOCALS;
            nsm_hh_p_rates((ns_mech_ppack *)pp, ARGS, i, q, v[q], v[q]);
            R[0][l] = F9;
            R[1][l] = F10;
            R[2][l] = F11;
            R[3][l] = F12;
            R[4][l] = F13;
            R[5][l] = F14;
        }
        SIMD
        for (int l = 0; l < len; ++l) {
            A[l] = pp->dt * ((-1.0) / R[3][l]);
            A[len + l] = pp->dt * ((-1.0) / R[4][l]);
            A[2 * len + l] = pp->dt * ((-1.0) / R[5][l]);
        }
        SIMD
        for (int l = 0; l < 3 * len; ++l) A[l] = nsm_exp(A[l]);
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l, i = q;
            LOCALS;
            nsm_hh_d_states_post((ns_mech_ppack *)pp, ARGS, i, A[l], R[0][l], A[len + l], R[1][l], A[2 * len + l],
                                 R[2][l]);
            P15[i] = F15;
            P16[i] = F16;
            P17[i] = F17;
        }
    }
}

/* gen2: gen0 without omp simd on the stages (the compiler's own choice, as
 * the hand-written ex and update loops) */
CLONES static void gen2(const double *restrict v, int q0, int q1) {
    double g1[1] = {1.0};
    const ns_mech_ppack pk = pack(v, g1), *pp = &pk;
    PTRS;
    for (int c0 = q0; c0 < q1; c0 += CHUNK) {
        const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;
        double R[6][CHUNK], A[3 * CHUNK];
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l, i = q;
            LOCALS;
            nsm_hh_p_rates((ns_mech_ppack *)pp, ARGS, i, q, v[q], v[q]);
            R[0][l] = F9;
            R[1][l] = F10;
            R[2][l] = F11;
            R[3][l] = F12;
            R[4][l] = F13;
            R[5][l] = F14;
        }
        for (int l = 0; l < len; ++l) {
            A[l] = pp->dt * ((-1.0) / R[3][l]);
            A[len + l] = pp->dt * ((-1.0) / R[4][l]);
            A[2 * len + l] = pp->dt * ((-1.0) / R[5][l]);
        }
        for (int l = 0; l < 3 * len; ++l) A[l] = nsm_exp(A[l]);
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l, i = q;
            LOCALS;
            nsm_hh_d_states_post((ns_mech_ppack *)pp, ARGS, i, A[l], R[0][l], A[len + l], R[1][l], A[2 * len + l],
                                 R[2][l]);
            P15[i] = F15;
            P16[i] = F16;
            P17[i] = F17;
        }
    }
}


/* gen3: gen0 with the table's bounds as literals (hh.mod's FROM -100 TO 100
 * WITH 200) instead of T_[2], T_[3] */
#define LOOKUP3(T_, A_v)                                                                                    \
    const double xi_ = 1.0 * (A_v - (-100.0));                                                             \
    const int in_ = (xi_ > 0.) & (xi_ < 200.), hi_ = xi_ >= 200., nan_ = xi_ != xi_;                       \
    const double xc_ = xi_ == xi_ ? xi_ : 0.0, xd_ = xc_ < 201. ? xc_ : 201.;                              \
    const double xs_ = (xd_ > -1. ? xd_ : -1.) * (double)in_;                                              \
    const int j_ = (int)xs_, k_ = j_ * in_ + 200 * hi_, k1_ = k_ + (k_ < 200);                             \
    const double t_ = (xs_ - (double)j_) + (nan_ ? xi_ : 0.0);                                             \
    double F9, F10, F11, F12, F13, F14;                                                                    \
    { const double a_ = T_[5 + k_], b_ = T_[5 + k1_]; F9 = a_ + t_ * (b_ - a_); }                          \
    { const double a_ = T_[206 + k_], b_ = T_[206 + k1_]; F12 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = T_[407 + k_], b_ = T_[407 + k1_]; F10 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = T_[608 + k_], b_ = T_[608 + k1_]; F13 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = T_[809 + k_], b_ = T_[809 + k1_]; F11 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = T_[1010 + k_], b_ = T_[1010 + k1_]; F14 = a_ + t_ * (b_ - a_); }
CLONES static void gen3(const double *restrict v, int q0, int q1) {
    const double *restrict T_ = GT;
    const double dt = DT;
    double *restrict P15 = P[15], *restrict P16 = P[16], *restrict P17 = P[17];
    for (int c0 = q0; c0 < q1; c0 += CHUNK) {
        const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;
        double A[3 * CHUNK], T[3 * CHUNK];
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l;
            LOOKUP3(T_, v[q]);
            A[l] = dt * ((-1.0) / F12);
            A[CHUNK + l] = dt * ((-1.0) / F13);
            A[2 * CHUNK + l] = dt * ((-1.0) / F14);
            T[l] = F9;
            T[CHUNK + l] = F10;
            T[2 * CHUNK + l] = F11;
        }
        for (int k = 0; k < 3; ++k) {
            double *restrict x = A + k * CHUNK;
            SIMD
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);
        }
        SIMD
        for (int l = 0; l < len; ++l) {
            const int i = c0 + l;
            P15[i] = P15[i] + (1. - A[l]) * (T[l] - P15[i]);
            P16[i] = P16[i] + (1. - A[CHUNK + l]) * (T[CHUNK + l] - P16[i]);
            P17[i] = P17[i] + (1. - A[2 * CHUNK + l]) * (T[2 * CHUNK + l] - P17[i]);
        }
    }
}

/* gen5: gen3 with a pointer per column, so that the columns share their
 * index vectors k_ and k1_ (gcc emulates the gathers lane by lane from an
 * index vector: T_[206 + k_] made one per column) */
#define LOOKUP5(T_, A_v)                                                                                    \
    const double xi_ = 1.0 * (A_v - (-100.0));                                                             \
    const int in_ = (xi_ > 0.) & (xi_ < 200.), hi_ = xi_ >= 200., nan_ = xi_ != xi_;                       \
    const double xc_ = xi_ == xi_ ? xi_ : 0.0, xd_ = xc_ < 201. ? xc_ : 201.;                              \
    const double xs_ = (xd_ > -1. ? xd_ : -1.) * (double)in_;                                              \
    const int j_ = (int)xs_, k_ = j_ * in_ + 200 * hi_, k1_ = k_ + (k_ < 200);                             \
    const double t_ = (xs_ - (double)j_) + (nan_ ? xi_ : 0.0);                                             \
    double F9, F10, F11, F12, F13, F14;                                                                    \
    { const double a_ = (T_ + 5)[k_], b_ = (T_ + 5)[k1_]; F9 = a_ + t_ * (b_ - a_); }                          \
    { const double a_ = (T_ + 206)[k_], b_ = (T_ + 206)[k1_]; F12 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = (T_ + 407)[k_], b_ = (T_ + 407)[k1_]; F10 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = (T_ + 608)[k_], b_ = (T_ + 608)[k1_]; F13 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = (T_ + 809)[k_], b_ = (T_ + 809)[k1_]; F11 = a_ + t_ * (b_ - a_); }                     \
    { const double a_ = (T_ + 1010)[k_], b_ = (T_ + 1010)[k1_]; F14 = a_ + t_ * (b_ - a_); }
CLONES static void gen5(const double *restrict v, int q0, int q1) {
    const double *restrict T_ = GT;
    const double dt = DT;
    double *restrict P15 = P[15], *restrict P16 = P[16], *restrict P17 = P[17];
    for (int c0 = q0; c0 < q1; c0 += CHUNK) {
        const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;
        double A[3 * CHUNK], T[3 * CHUNK];
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l;
            LOOKUP5(T_, v[q]);
            A[l] = dt * ((-1.0) / F12);
            A[CHUNK + l] = dt * ((-1.0) / F13);
            A[2 * CHUNK + l] = dt * ((-1.0) / F14);
            T[l] = F9;
            T[CHUNK + l] = F10;
            T[2 * CHUNK + l] = F11;
        }
        for (int k = 0; k < 3; ++k) {
            double *restrict x = A + k * CHUNK;
            SIMD
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);
        }
        SIMD
        for (int l = 0; l < len; ++l) {
            const int i = c0 + l;
            P15[i] = P15[i] + (1. - A[l]) * (T[l] - P15[i]);
            P16[i] = P16[i] + (1. - A[CHUNK + l]) * (T[CHUNK + l] - P16[i]);
            P17[i] = P17[i] + (1. - A[2 * CHUNK + l]) * (T[2 * CHUNK + l] - P17[i]);
        }
    }
}

/* gen4: gen3 with the lookups alone in the first loop (into the targets and
 * taus), the exponents in a second: the hand-written loop's split */
CLONES static void gen4(const double *restrict v, int q0, int q1) {
    const double *restrict T_ = GT;
    const double dt = DT;
    double *restrict P15 = P[15], *restrict P16 = P[16], *restrict P17 = P[17];
    for (int c0 = q0; c0 < q1; c0 += CHUNK) {
        const int len = q1 - c0 < CHUNK ? q1 - c0 : CHUNK;
        double A[3 * CHUNK], T[3 * CHUNK], U[3 * CHUNK];
        SIMD
        for (int l = 0; l < len; ++l) {
            const int q = c0 + l;
            LOOKUP3(T_, v[q]);
            U[l] = F12;
            U[CHUNK + l] = F13;
            U[2 * CHUNK + l] = F14;
            T[l] = F9;
            T[CHUNK + l] = F10;
            T[2 * CHUNK + l] = F11;
        }
        for (int l = 0; l < len; ++l) {
            A[l] = dt * ((-1.0) / U[l]);
            A[CHUNK + l] = dt * ((-1.0) / U[CHUNK + l]);
            A[2 * CHUNK + l] = dt * ((-1.0) / U[2 * CHUNK + l]);
        }
        for (int k = 0; k < 3; ++k) {
            double *restrict x = A + k * CHUNK;
            SIMD
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);
        }
        SIMD
        for (int l = 0; l < len; ++l) {
            const int i = c0 + l;
            P15[i] = P15[i] + (1. - A[l]) * (T[l] - P15[i]);
            P16[i] = P16[i] + (1. - A[CHUNK + l]) * (T[CHUNK + l] - P16[i]);
            P17[i] = P17[i] + (1. - A[2 * CHUNK + l]) * (T[2 * CHUNK + l] - P17[i]);
        }
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void reset(void) {
    for (int k = 0; k < 3; ++k) {
        memcpy(S[k], S0[k], sizeof S[k]);
        memcpy(P[15 + k], S0[k], sizeof S[k]);
    }
}

static void run(int kk) {
    switch (kk) {
    case 0: hand(V, S[0], S[1], S[2], &TAB, 0, NL); break;
    case 1: gen0(V, 0, NL); break;
    case 2: gen1(V, 0, NL); break;
    case 3: gen2(V, 0, NL); break;
    case 4: gen0_32(V, 0, NL); break;
    case 5: gen0_128(V, 0, NL); break;
    case 6: gen3(V, 0, NL); break;
    case 7: gen4(V, 0, NL); break;
    default: gen5(V, 0, NL);
    }
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 20, iters = argc > 2 ? atoi(argv[2]) : 400;
    srand(7);
    for (int q = 0; q < NL; ++q) {
        V[q] = -80.0 + 120.0 * rand() / (double)RAND_MAX;
        for (int k = 0; k < 3; ++k) S0[k][q] = rand() / (double)RAND_MAX;
    }
    /* one table, in both layouts: hh's rates at 6.3 degC */
    GT[2] = NS_HH_TABLE_VMIN;
    GT[3] = 1.0 / NS_HH_TABLE_DV;
    for (int k = 0; k < NS_HH_TABLE_N; ++k) {
        ns_hh_rates r;
        ns_hh_rates_exact(NS_HH_TABLE_VMIN + k * NS_HH_TABLE_DV, 1.0, &r);
        TAB.minf[k] = r.minf, TAB.mtau[k] = r.mtau, TAB.hinf[k] = r.hinf;
        TAB.htau[k] = r.htau, TAB.ninf[k] = r.ninf, TAB.ntau[k] = r.ntau;
        GT[5 + k] = r.minf, GT[206 + k] = r.mtau, GT[407 + k] = r.hinf;
        GT[608 + k] = r.htau, GT[809 + k] = r.ninf, GT[1010 + k] = r.ntau;
    }
    /* values: every kernel gives the hand-written loop's, bit for bit */
    reset();
    for (int it = 0; it < 3; ++it) hand(V, S[0], S[1], S[2], &TAB, 0, NL);
    double ref[3][NL];
    memcpy(ref, S, sizeof ref);
    const char *name[9] = {"hand", "gen0", "gen1", "gen2", "gen0_32", "gen0_128", "gen3", "gen4", "gen5"};
    int bad = 0;
    for (int kk = 1; kk < 9; ++kk) {
        reset();
        for (int it = 0; it < 3; ++it) run(kk);
        if (memcmp(ref[0], P[15], sizeof ref[0]) || memcmp(ref[1], P[16], sizeof ref[1]) ||
            memcmp(ref[2], P[17], sizeof ref[2])) {
            printf("%s: values differ from hand\n", name[kk]);
            bad = 1;
        }
    }
    double best[9] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < rounds; ++r)
        for (int kk = 0; kk < 9; ++kk) {
            reset();
            const double t0 = now();
            for (int it = 0; it < iters; ++it) run(kk);
            const double t = (now() - t0) / ((double)iters * NL) * 1e9;
            if (t < best[kk]) best[kk] = t;
        }
    for (int kk = 0; kk < 9; ++kk)
        printf("%s: %.3f ns per lane-node (min of %d rounds), %.3f of hand\n", name[kk], best[kk], rounds,
               best[kk] / best[0]);
    memset(ST, 0, sizeof ST);
    for (int r = 0; r < rounds; ++r) {
        reset();
        for (int it = 0; it < iters; ++it) hand_st(V, S[0], S[1], S[2], &TAB, 0, NL);
        reset();
        for (int it = 0; it < iters; ++it) gen0_st(V, 0, NL);
    }
    const double per = (double)rounds * iters * NL;
    for (int k = 0; k < 2; ++k)
        printf("stages %s (TSC cycles per lane-node): lookup%s %.2f, ex %.2f, exp %.2f, update %.2f\n", k ? "gen0" : "hand",
               k ? "+ex" : "", ST[k][0] / per, ST[k][1] / per, ST[k][3] / per, ST[k][2] / per);
    return bad;
}
