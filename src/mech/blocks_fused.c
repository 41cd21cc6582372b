/* The fused pass of the mechanism runtime (mech/blocks.h,
 * ns_model_block_fused_*): the built-in pas and hh's generated per-instance
 * functions inside the CPU loop's own passes over a block's lane-nodes
 * (mech/blocks_impl.h, "The fused pass"). */
#include <stdlib.h>
#include <string.h>

#include "mech/blocks_impl.h"
#include "core/error.h"

/* As the generated loops (nmodl_gen.c): every call inlined into one
 * function per instruction set, chosen at load time, so that the
 * per-instance functions' fields stay in vector registers. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__INTEL_COMPILER) && !defined(NS_NO_CLONES)
#define FUSED_FN static __attribute__((target_clones("avx512f", "avx2", "default"), flatten))
#elif defined(__GNUC__) || defined(__clang__)
#define FUSED_FN static __attribute__((flatten))
#else
#define FUSED_FN static
#endif
/* a loop clang does not vectorise despite the pragma is no error (-Werror
 * builds), as in the generated loops */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#if defined(_OPENMP) || defined(NS_HAVE_OPENMP_SIMD)
#define FUSED_SIMD _Pragma("omp simd")
#else
#define FUSED_SIMD
#endif
#if defined(__GNUC__) || defined(__clang__)
#define FUSED_INLINE static inline __attribute__((always_inline))
#else
#define FUSED_INLINE static inline
#endif

/* Mechanism mb's ppack over the block's lane-nodes (instance i at
 * lane-node q: the loops pass both), its globals `global`. */
FUSED_INLINE ns_mech_ppack fused_pack(const mech_block *mb, double *v, double *rhs, double *d, double t, double dt,
                                      double celsius, double *global) {
    ns_mech_ppack p = mb->p;
    p.node_index = NULL;
    p.node_begin = 0;
    ns_mech_ppack_bind(&p, v, rhs, d, t, dt, celsius);
    p.global = global;
    return p;
}

/* The lane-node of the l-th of a pass's instances i0 + l: consecutive from
 * q0 over a segment, the instance's own (node_index) in an instance pass
 * (gather) */
#define FUSED_Q(l) (gather ? ni[(int)i0 + (l)] : (int)q0 + (l))

/* pas's current over the len instances from i0 (at lane-nodes from q0: rhs
 * and d from zero there first; gather: at their own, zeroed by the caller) */
FUSED_INLINE void pas_current(const mech_block *mb, const ns_mech_ppack *pp, double *restrict rhs, double *restrict d,
                              int64_t q0, int64_t len, int64_t i0, const int uniform, const int last,
                              const int gather) {
    double *restrict P0 = mb->field[0], *restrict P1 = mb->field[1], *restrict P2 = mb->field[2];
    const int *restrict ni = mb->node_index;
    const double u0 = P0[i0], u1 = P1[i0];
    FUSED_SIMD
    for (int l = 0; l < (int)len; ++l) {
        const int i = (int)i0 + l, q = FUSED_Q(l);
        double F0 = uniform ? u0 : P0[i], F1 = uniform ? u1 : P1[i], F2 = 0.0;
        if (!gather) {
            rhs[q] = 0.0;
            d[q] = 0.0;
        }
        nsm_pas_current_F((ns_mech_ppack *)pp, &F0, &F1, &F2, i, q);
        if (last) P2[i] = F2;
    }
}

/* hh's fields as locals: the parameters (once for a uniform segment), the
 * assigned variables 0 (set before read), the states; the e of its ions
 * (ena, ek: once for a uniform segment) */
#define FUSED_HH_LOCALS                                                                                    \
    double F0 = uniform ? u0 : P0[i], F1 = uniform ? u1 : P1[i], F2 = uniform ? u2 : P2[i];               \
    double F3 = uniform ? u3 : P3[i];                                                                      \
    double F4 = 0.0, F5 = 0.0, F6 = 0.0, F7 = 0.0, F8 = 0.0, F9 = 0.0, F10 = 0.0, F11 = 0.0, F12 = 0.0;  \
    double F13 = 0.0, F14 = 0.0, F15 = P15[i], F16 = P16[i], F17 = P17[i];                              \
    double I0 = uniform ? ue0 : E0[q], I1 = uniform ? ue1 : E1[q]
/* the fields' arrays as restrict pointers of their own, the parameters of
 * instance i0 */
#define FUSED_HH_FIELD_PTRS                                                                                \
    double *restrict P0 = mb->field[0], *restrict P1 = mb->field[1], *restrict P2 = mb->field[2];          \
    double *restrict P3 = mb->field[3], *restrict P4 = mb->field[4], *restrict P5 = mb->field[5];          \
    double *restrict P6 = mb->field[6], *restrict P7 = mb->field[7], *restrict P8 = mb->field[8];          \
    double *restrict P9 = mb->field[9], *restrict P10 = mb->field[10], *restrict P11 = mb->field[11];      \
    double *restrict P12 = mb->field[12], *restrict P13 = mb->field[13], *restrict P14 = mb->field[14];    \
    double *restrict P15 = mb->field[15], *restrict P16 = mb->field[16], *restrict P17 = mb->field[17];    \
    const double u0 = P0[i0], u1 = P1[i0], u2 = P2[i0], u3 = P3[i0];                                      \
    const double *restrict E0 = pp->ion[0].e, *restrict E1 = pp->ion[1].e; /* ena, ek */                  \
    const double ue0 = E0[q0], ue1 = E1[q0];                                                                \
    (void)P4, (void)P5, (void)P6, (void)P7, (void)P8, (void)P9, (void)P10, (void)P11, (void)P12, (void)P13,     \
        (void)P14
#define FUSED_HH_ARGS \
    &F0, &F1, &F2, &F3, &F4, &F5, &F6, &F7, &F8, &F9, &F10, &F11, &F12, &F13, &F14, &F15, &F16, &F17, &I0, &I1

/* hh's current over the len instances from i0, then the capacitance (at
 * lane-nodes from q0; gather: at their own, the capacitance added by the
 * caller after) */
FUSED_INLINE void hh_current(const mech_block *mb, const ns_mech_ppack *pp, double *restrict d,
                             const double *restrict cap, int64_t q0, int64_t len, int64_t i0, const int uniform,
                             const int last, const int gather) {
    FUSED_HH_FIELD_PTRS;
    const int *restrict ni = mb->node_index;
    FUSED_SIMD
    for (int l = 0; l < (int)len; ++l) {
        const int i = (int)i0 + l, q = FUSED_Q(l);
        FUSED_HH_LOCALS;
        nsm_hh_current_F((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, q);
        if (last) {
            P4[i] = F4;
            P5[i] = F5;
            P6[i] = F6;
            P7[i] = F7;
            P8[i] = F8;
        }
        if (!gather) d[q] += cap[q];
    }
}

/* hh's rates at lane-nodes l < len from its table's rows R (the rows from
 * NSM_hh_rates_LEAD, nsm_hh_p_rates_rows) at entries ix with weights th:
 * c + th d, the columns' a + th (b - a) (nsm_hh_p_rates), into y[c *
 * FUSED_CHUNK + l] for the TABLE's variable c. With gcc or clang and
 * `transpose`, 8 lane-nodes at a time as vectors of 8 doubles: each row's
 * interpolation in one multiply-add of whole rows, then the 8 x 8
 * transpose, where the loads of the values one by one took 12 loads per
 * lane-node (gcc assembles them from scalar loads); else those loads. */
#define FUSED_CHUNK 64
#if NSM_hh_rates_ROW != 16 || NSM_hh_rates_COLS > 8
#error "the fused state pass transposes rows of 8 values and 8 differences (NSM_hh_rates_ROW)"
#endif
#if defined(__GNUC__) || defined(__clang__)
typedef double ns_v8d __attribute__((vector_size(64)));
#if defined(__clang__)
#define NS_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef long long ns_v8l __attribute__((vector_size(64)));
#define NS_SHUF(a, b, ...) __builtin_shuffle(a, b, (ns_v8l){__VA_ARGS__})
#endif
FUSED_INLINE void row_values(const double *restrict rows, int k, double th, ns_v8d *out) {
    ns_v8d c, d;
    memcpy(&c, rows + (size_t)k * NSM_hh_rates_ROW, sizeof c);
    memcpy(&d, rows + (size_t)k * NSM_hh_rates_ROW + NSM_hh_rates_ROW / 2, sizeof d);
    const ns_v8d t = {th, th, th, th, th, th, th, th};
    *out = c + t * d;
}
#endif

FUSED_INLINE void rates_of_rows(const double *restrict rows, const int transpose, const int *restrict ix,
                                const double *restrict th, int len, double *restrict y) {
    int l0 = 0;
#if defined(__GNUC__) || defined(__clang__)
    for (int l = 0; transpose && l + 8 <= len; l += 8, l0 = l) {
        ns_v8d r[8], e[4], o[4], q[8], c[8];
        for (int k = 0; k < 8; ++k) row_values(rows, ix[l + k], th[l + k], &r[k]);
        /* pairs of rows: their even columns, their odd columns */
        for (int k = 0; k < 4; ++k) {
            e[k] = NS_SHUF(r[2 * k], r[2 * k + 1], 0, 8, 2, 10, 4, 12, 6, 14);
            o[k] = NS_SHUF(r[2 * k], r[2 * k + 1], 1, 9, 3, 11, 5, 13, 7, 15);
        }
        /* rows 4 h to 4 h + 3: q[4 h + k] holds their columns k and k + 4 */
        for (int h = 0; h < 2; ++h) {
            q[4 * h] = NS_SHUF(e[2 * h], e[2 * h + 1], 0, 1, 8, 9, 4, 5, 12, 13);
            q[4 * h + 1] = NS_SHUF(o[2 * h], o[2 * h + 1], 0, 1, 8, 9, 4, 5, 12, 13);
            q[4 * h + 2] = NS_SHUF(e[2 * h], e[2 * h + 1], 2, 3, 10, 11, 6, 7, 14, 15);
            q[4 * h + 3] = NS_SHUF(o[2 * h], o[2 * h + 1], 2, 3, 10, 11, 6, 7, 14, 15);
        }
        /* the eight rows' column k */
        for (int k = 0; k < 4; ++k) {
            c[k] = NS_SHUF(q[k], q[4 + k], 0, 1, 2, 3, 8, 9, 10, 11);
            c[k + 4] = NS_SHUF(q[k], q[4 + k], 4, 5, 6, 7, 12, 13, 14, 15);
        }
        for (int k = 0; k < NSM_hh_rates_COLS; ++k) memcpy(y + k * FUSED_CHUNK + l, &c[k], sizeof c[k]);
    }
#else
    (void)transpose;
#endif
    FUSED_SIMD
    for (int l = l0; l < len; ++l) {
        const double *restrict c = rows + (size_t)ix[l] * NSM_hh_rates_ROW, *restrict d = c + NSM_hh_rates_ROW / 2;
        for (int k = 0; k < NSM_hh_rates_COLS; ++k) y[k * FUSED_CHUNK + l] = c[k] + th[l] * d[k];
    }
}

/* hh's state over lane-nodes [q0, q1) from instance i0, in chunks of
 * FUSED_CHUNK lane-nodes, each in the stages of the generated cnexp
 * (nmodl_gen.c, cnexp_staged): the table's entries and weights
 * (nsm_hh_p_rates_at), the rates from its rows (rates_of_rows), the
 * exponents and targets from them (nsm_hh_d_states_pre_set: the
 * arithmetic of nsm_hh_d_states_pre after its lookup, where the taus are
 * in one division's range; elsewhere that lane-node's _pre, outside the
 * vector loop), the exponentials, the updates (_post). One loop per stage keeps few values
 * live, where one loop over the whole function kept the AVX-512 clone
 * spilling (473 stack operands, gcc 13). */
/* Where the cnexp targets minf, hinf, ninf (_pre_set's t0, t1, t2: fields
 * 9, 10, 11) lie in rates_of_rows's y: the TABLE's columns 0, 2, 4 (TABLE
 * minf, mtau, hinf, htau, ninf, ntau; tests/mech/test_table_rows.c checks
 * that _pre_set returns them), read there by the update instead of a copy
 * stored per lane-node */
#define FUSED_HH_TARGET(g) ((2 * (g)) * FUSED_CHUNK)
FUSED_INLINE void hh_state(const mech_block *mb, const ns_mech_ppack *pp, const double *restrict rows,
                           const int transpose, int64_t q0, int64_t n_inst, int64_t i0, const int uniform,
                           const int last, const int gather) {
    FUSED_HH_FIELD_PTRS;
    const int *restrict ni = mb->node_index;
    const double *restrict v = pp->v;
    for (int c0 = 0; c0 < (int)n_inst; c0 += FUSED_CHUNK) {
        const int len = (int)n_inst - c0 < FUSED_CHUNK ? (int)n_inst - c0 : FUSED_CHUNK;
        double A[3 * FUSED_CHUNK], y[NSM_hh_rates_COLS * FUSED_CHUNK], th[FUSED_CHUNK];
        int ix[FUSED_CHUNK], in[FUSED_CHUNK];
        FUSED_SIMD
        for (int l = 0; l < len; ++l) nsm_hh_p_rates_at(pp, v[FUSED_Q(c0 + l)], &ix[l], &th[l]);
        rates_of_rows(rows, transpose, ix, th, len, y);
        FUSED_SIMD
        for (int l = 0; l < len; ++l) {
            const int i = (int)i0 + c0 + l, q = FUSED_Q(c0 + l);
            FUSED_HH_LOCALS;
            double t0, t1, t2; /* the targets: the rows' values (FUSED_HH_TARGET), not stored again */
            in[l] = nsm_hh_d_states_pre_set((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, q, v[q], y + l, FUSED_CHUNK, &A[l],
                                            &t0, &A[len + l], &t1, &A[2 * len + l], &t2);
            if (last) {
                P9[i] = F9;
                P10[i] = F10;
                P11[i] = F11;
                P12[i] = F12;
                P13[i] = F13;
                P14[i] = F14;
            }
        }
        /* lane-nodes whose exponents are out of one division's range: their
         * first stage again, as the per-step path's (nsm_hh_d_states_pre,
         * its lookup the columns': the same values) */
        int all = 1;
        for (int l = 0; l < len; ++l) all &= in[l];
        for (int l = 0; !all && l < len; ++l) {
            if (in[l]) continue;
            const int i = (int)i0 + c0 + l, q = FUSED_Q(c0 + l);
            FUSED_HH_LOCALS;
            double t0, t1, t2; /* the columns' values: the rows' (test_table_rows) */
            nsm_hh_d_states_pre((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, q, v[q], &A[l], &t0, &A[len + l], &t1,
                                &A[2 * len + l], &t2);
        }
        FUSED_SIMD
        for (int l = 0; l < 3 * len; ++l) A[l] = nsm_exp(A[l]);
        FUSED_SIMD
        for (int l = 0; l < len; ++l) {
            const int i = (int)i0 + c0 + l, q = FUSED_Q(c0 + l);
            FUSED_HH_LOCALS;
            nsm_hh_d_states_post((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, A[l], y[FUSED_HH_TARGET(0) + l], A[len + l],
                                 y[FUSED_HH_TARGET(1) + l], A[2 * len + l], y[FUSED_HH_TARGET(2) + l]);
            P15[i] = F15;
            P16[i] = F16;
            P17[i] = F17;
        }
    }
}

/* fn(args..., uniform, last, gather) with the flags as constants, so that
 * each combination is compiled on its own */
#define FUSED_CALL(fn, uniform, last, gather, ...)                                                        \
    do {                                                                                                 \
        if (gather) {                                                                                    \
            if (uniform) {                                                                               \
                if (last) fn(__VA_ARGS__, 1, 1, 1);                                                      \
                else fn(__VA_ARGS__, 1, 0, 1);                                                           \
            } else {                                                                                     \
                if (last) fn(__VA_ARGS__, 0, 1, 1);                                                      \
                else fn(__VA_ARGS__, 0, 0, 1);                                                           \
            }                                                                                            \
        } else if (uniform) {                                                                            \
            if (last) fn(__VA_ARGS__, 1, 1, 0);                                                          \
            else fn(__VA_ARGS__, 1, 0, 0);                                                               \
        } else {                                                                                         \
            if (last) fn(__VA_ARGS__, 0, 1, 0);                                                          \
            else fn(__VA_ARGS__, 0, 0, 0);                                                               \
        }                                                                                                \
    } while (0)

/* The instances [*ia, *ib) of mechanism block mb whose lane-nodes lie in
 * [q0, q1) (node_index ascending: an instance pass, b->gather) */
static void instance_range(const mech_block *mb, int64_t q0, int64_t q1, int64_t *ia, int64_t *ib) {
    int64_t bound[2];
    const int64_t at[2] = {q0, q1};
    for (int e = 0; e < 2; ++e) {
        int64_t lo = 0, hi = mb->p.n;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (mb->node_index[mid] < at[e]) lo = mid + 1;
            else hi = mid;
        }
        bound[e] = lo;
    }
    *ia = bound[0];
    *ib = bound[1];
}

/* The lane-nodes of the block's nodes [r0, r1) */
static inline void lane_range(const model_block *b, int32_t w, int32_t r0, int32_t r1, int64_t *q0, int64_t *q1) {
    *q0 = (int64_t)r0 * w;
    *q1 = (int64_t)r1 * w < b->nw ? (int64_t)r1 * w : b->nw;
}

/* Segment sg clipped to the nodes [r0, r1) (a cell split across threads runs
 * its node range; the whole block: [0, INT32_MAX)): false when they do not
 * meet; else its lane-nodes [*q0, *q1) and, for mechanism f, the lane-node
 * of its instance at *q0 (the instances of a segment are consecutive). */
static inline int clip(const fused_seg *sg, int32_t w, int32_t r0, int32_t r1, int f, int64_t *q0, int64_t *q1,
                       int64_t *i0) {
    const int32_t n0 = sg->n0 > r0 ? sg->n0 : r0, n1 = sg->n1 < r1 ? sg->n1 : r1;
    *q0 = (int64_t)n0 * w;
    *q1 = (int64_t)n1 * w;
    *i0 = sg->inst[f] < 0 ? -1 : (int64_t)(sg->inst[f] + (n0 - sg->n0)) * w;
    return n0 < n1;
}

FUSED_FN void fused_first(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                          double t, double dt, double celsius, int last, int32_t r0, int32_t r1) {
    const int32_t k = b->fused_k[0];
    mech_block *mb = k >= 0 ? &b->m[k] : NULL;
    ns_mech_ppack pp;
    if (mb) pp = fused_pack(mb, v, rhs, d, t, dt, celsius, mb->p.global);
    if (!mb || b->gather[0]) { /* without pas: every segment's lane-nodes from zero, in one loop */
        int64_t q0, q1, ia, ib;
        lane_range(b, w, r0, r1, &q0, &q1);
        for (int64_t q = q0; q < q1; ++q) {
            rhs[q] = 0.0;
            d[q] = 0.0;
        }
        if (!mb) return;
        instance_range(mb, q0, q1, &ia, &ib);
        if (ia < ib) FUSED_CALL(pas_current, b->g_uniform[0], last, 1, mb, &pp, rhs, d, mb->node_index[ia], ib - ia, ia);
        return;
    }
    for (int32_t s = 0; s < b->n_segs; ++s) {
        const fused_seg *sg = &b->segs[s];
        int64_t q0, q1, i0;
        if (!clip(sg, w, r0, r1, 0, &q0, &q1, &i0)) continue;
        if (sg->inst[0] < 0) {
            for (int64_t q = q0; q < q1; ++q) {
                rhs[q] = 0.0;
                d[q] = 0.0;
            }
            continue;
        }
        FUSED_CALL(pas_current, sg->uniform[0], last, 0, mb, &pp, rhs, d, q0, q1 - q0, i0);
    }
    (void)model;
}

FUSED_FN void fused_second(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                           const double *cap, double t, double dt, double celsius, int last, int32_t r0, int32_t r1) {
    const int32_t k = b->fused_k[1];
    mech_block *mb = k >= 0 ? &b->m[k] : NULL;
    double g1[1] = {1.0}; /* usetable_hh: on (ns_model_block_fused) */
    ns_mech_ppack pp;
    ns_mech_ion_view ions[2] = {{0}}; /* e only: no ion current is kept (fusable), so no branch on it in the loop */
    (void)model;
    if (mb) {
        pp = fused_pack(mb, v, rhs, d, t, dt, celsius, g1);
        for (int j = 0; j < 2; ++j) ions[j] = (ns_mech_ion_view){mb->ions[j].e, NULL, NULL, NULL, NULL, NULL};
        pp.ion = ions;
    }
    if (!mb || b->gather[1]) { /* without hh: the capacitance of every segment's lane-nodes, in one loop */
        int64_t q0, q1, ia = 0, ib = 0;
        lane_range(b, w, r0, r1, &q0, &q1);
        if (mb) instance_range(mb, q0, q1, &ia, &ib);
        if (ia < ib)
            FUSED_CALL(hh_current, b->g_uniform[1], last, 1, mb, &pp, d, cap, mb->node_index[ia], ib - ia, ia);
        for (int64_t q = q0; q < q1; ++q) d[q] += cap[q];
        return;
    }
    for (int32_t s = 0; s < b->n_segs; ++s) {
        const fused_seg *sg = &b->segs[s];
        int64_t q0, q1, i0;
        if (!clip(sg, w, r0, r1, 1, &q0, &q1, &i0)) continue;
        if (sg->inst[1] < 0) {
            for (int64_t q = q0; q < q1; ++q) d[q] += cap[q];
            continue;
        }
        FUSED_CALL(hh_current, sg->uniform[1], last, 0, mb, &pp, d, cap, q0, q1 - q0, i0);
    }
}

FUSED_FN void fused_states(const sim_model *model, model_block *b, int32_t w, double *v, double t, double dt,
                           double celsius, int last, int32_t r0, int32_t r1) {
    const int32_t k = b->fused_k[1];
    (void)model;
    if (k < 0) return; /* pas has no state */
    mech_block *mb = &b->m[k];
    double g1[1] = {1.0};
    const ns_mech_ppack pp = fused_pack(mb, v, NULL, NULL, t, dt, celsius, g1);
    if (b->gather[1]) {
        int64_t q0, q1, ia, ib;
        lane_range(b, w, r0, r1, &q0, &q1);
        instance_range(mb, q0, q1, &ia, &ib);
        if (ia < ib)
            FUSED_CALL(hh_state, b->g_uniform[1], last, 1, mb, &pp, b->tab->rows + NSM_hh_rates_LEAD, b->tab->transpose,
                       mb->node_index[ia], ib - ia, ia);
        return;
    }
    for (int32_t s = 0; s < b->n_segs; ++s) {
        const fused_seg *sg = &b->segs[s];
        int64_t q0, q1, i0;
        if (sg->inst[1] < 0 || !clip(sg, w, r0, r1, 1, &q0, &q1, &i0)) continue;
        FUSED_CALL(hh_state, sg->uniform[1], last, 0, mb, &pp, b->tab->rows + NSM_hh_rates_LEAD, b->tab->transpose, q0,
                   q1 - q0, i0);
    }
}

void ns_model_block_fused_first(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                                double t, double dt, double celsius, int last) {
    fused_first(model, b, w, v, rhs, d, t, dt, celsius, last, 0, INT32_MAX);
}
void ns_model_block_fused_second(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                                 const double *cap, double t, double dt, double celsius, int last) {
    fused_second(model, b, w, v, rhs, d, cap, t, dt, celsius, last, 0, INT32_MAX);
}
void ns_model_block_fused_states(const sim_model *model, model_block *b, int32_t w, double *v, double t, double dt,
                                 double celsius, int last) {
    fused_states(model, b, w, v, t, dt, celsius, last, 0, INT32_MAX);
}
void ns_model_block_fused_range(const sim_model *model, model_block *b, int32_t w, int phase, int32_t r0, int32_t r1,
                                double *v, double *rhs, double *d, const double *cap, double t, double dt,
                                double celsius, int last) {
    if (phase == 0) fused_first(model, b, w, v, rhs, d, t, dt, celsius, last, r0, r1);
    else if (phase == 1) fused_second(model, b, w, v, rhs, d, cap, t, dt, celsius, last, r0, r1);
    else fused_states(model, b, w, v, t, dt, celsius, last, r0, r1);
}
