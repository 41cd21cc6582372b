/* The derivative code's (nmodl_diff.c) dual numbers' runtime: each
 * arithmetic operation and math call an inline function on duals
 * nsd_TYPE {v, d[K]}, written out lane by lane for a type of K lanes; the
 * products' loops over a block of instances and the lanes of their
 * constant-ion variants. */
#include <stdio.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

#define P(...) nm_gen_put(g, __VA_ARGS__)

/* the functions' qualifiers: the host's (the C file), the device's (the CUDA file: device
 * functions, called by the products' kernels only) */
static const char *const host_fns =
    "#if defined(__GNUC__) || defined(__clang__)\n"
    "#define NSD_@_FN static inline __attribute__((always_inline, unused))\n"
    "#define NSD_@_TWIN static inline __attribute__((unused))\n"
    "#define NSD_@_ENTRY static __attribute__((flatten, noinline))\n"
    "#ifdef NSM_CLONES\n"
    "#define NSD_@_HOT static __attribute__((target_clones(\"avx2\", \"default\"), flatten, noinline))\n"
    "#else\n#define NSD_@_HOT NSD_@_ENTRY\n#endif\n"
    "#else\n#define NSD_@_FN static inline\n#define NSD_@_TWIN static inline\n#define NSD_@_ENTRY static\n"
    "#define NSD_@_HOT static\n#endif\n";
static const char *const device_fns = "#define NSD_@_FN static __device__ __forceinline__ __attribute__((unused))\n"
                                      "#define NSD_@_TWIN static __device__ inline __attribute__((unused))\n";
/* The dual numbers' arithmetic, '@' the mechanism's name. Derivatives of the
 * library functions are the textbook ones at the computed value. */
static const char *const runtime[] = {
    "typedef struct nsd_@ { double v, d[NSD_@_K]; } nsd_@;\n"
    "#define NSD_@_OP(body) nsd_@ r; body; return r\n"
    "NSD_@_FN nsd_@ nsd_@_c(double x) { NSD_@_OP(r.v = x; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = 0.0); }\n"
    "NSD_@_FN nsd_@ nsd_@_add(nsd_@ a, nsd_@ b) {\n"
    "    NSD_@_OP(r.v = a.v + b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k] + b.d[k]);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_sub(nsd_@ a, nsd_@ b) {\n"
    "    NSD_@_OP(r.v = a.v - b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k] - b.d[k]);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_mul(nsd_@ a, nsd_@ b) {\n"
    "    NSD_@_OP(r.v = a.v * b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k] * b.v + a.v * b.d[k]);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_div(nsd_@ a, nsd_@ b) {\n"
    "    NSD_@_OP(r.v = a.v / b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = (a.d[k] - r.v * b.d[k]) / b.v);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_neg(nsd_@ a) { NSD_@_OP(r.v = -a.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = -a.d[k]); }\n"
    /* f(a) with f'(a) = df */
    "NSD_@_FN nsd_@ nsd_@_f1(nsd_@ a, double f, double df) {\n"
    "    NSD_@_OP(r.v = f; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = df * a.d[k]);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_exp(nsd_@ a) { const double e = nsm_exp(a.v); return nsd_@_f1(a, e, e); }\n"
    "NSD_@_FN nsd_@ nsd_@_expm1(nsd_@ a) { return nsd_@_f1(a, expm1(a.v), exp(a.v)); }\n"
    "NSD_@_FN nsd_@ nsd_@_log(nsd_@ a) { return nsd_@_f1(a, log(a.v), 1.0 / a.v); }\n"
    "NSD_@_FN nsd_@ nsd_@_log10(nsd_@ a) { return nsd_@_f1(a, log10(a.v), 1.0 / (a.v * 2.302585092994045684)); }\n"
    "NSD_@_FN nsd_@ nsd_@_sqrt(nsd_@ a) { const double s = sqrt(a.v); return nsd_@_f1(a, s, 0.5 / s); }\n"
    "NSD_@_FN nsd_@ nsd_@_fabs(nsd_@ a) { return nsd_@_f1(a, fabs(a.v), a.v < 0.0 ? -1.0 : 1.0); }\n"
    "NSD_@_FN nsd_@ nsd_@_sin(nsd_@ a) { return nsd_@_f1(a, sin(a.v), cos(a.v)); }\n"
    "NSD_@_FN nsd_@ nsd_@_cos(nsd_@ a) { return nsd_@_f1(a, cos(a.v), -sin(a.v)); }\n"
    "NSD_@_FN nsd_@ nsd_@_tan(nsd_@ a) { const double t = tan(a.v); return nsd_@_f1(a, t, 1.0 + t * t); }\n"
    "NSD_@_FN nsd_@ nsd_@_tanh(nsd_@ a) { const double t = tanh(a.v); return nsd_@_f1(a, t, 1.0 - t * t); }\n"
    "NSD_@_FN nsd_@ nsd_@_atan(nsd_@ a) { return nsd_@_f1(a, atan(a.v), 1.0 / (1.0 + a.v * a.v)); }\n"
    "NSD_@_FN nsd_@ nsd_@_floor(nsd_@ a) { return nsd_@_f1(a, floor(a.v), 0.0); }\n"
    "NSD_@_FN nsd_@ nsd_@_ceil(nsd_@ a) { return nsd_@_f1(a, ceil(a.v), 0.0); }\n"
    /* x / (exp(x) - 1): -1/2 where 1 + x == 1 (the value is 1 there) */
    "NSD_@_FN nsd_@ nsd_@_exprelr(nsd_@ a) {\n"
    "    if (1.0 + a.v == 1.0) return nsd_@_f1(a, 1.0, -0.5);\n"
    "    const double e = expm1(a.v);\n"
    "    return nsd_@_f1(a, a.v / e, (e - a.v * (e + 1.0)) / (e * e));\n}\n"
    "NSD_@_FN nsd_@ nsd_@_pow(nsd_@ a, nsd_@ b) {\n"
    "    const double f = pow(a.v, b.v);\n"
    "    const double da = b.v == 0.0 ? 0.0 : b.v * pow(a.v, b.v - 1.0), db = a.v > 0.0 ? f * log(a.v) : 0.0;\n"
    "    NSD_@_OP(r.v = f; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = da * a.d[k] + (b.d[k] != 0.0 ? db * b.d[k] : 0.0));\n}\n"
    /* c ? a : b lane by lane: an IF's branch written as selects (dst) */
    "NSD_@_FN nsd_@ nsd_@_sel(int c, nsd_@ a, nsd_@ b) {\n"
    "    NSD_@_OP(r.v = c ? a.v : b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = c ? a.d[k] : b.d[k]);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_fmin(nsd_@ a, nsd_@ b) { nsd_@ r = fmin(a.v, b.v) == a.v ? a : b; r.v = fmin(a.v, b.v); return r; }\n"
    "NSD_@_FN nsd_@ nsd_@_fmax(nsd_@ a, nsd_@ b) { nsd_@ r = fmax(a.v, b.v) == a.v ? a : b; r.v = fmax(a.v, b.v); return r; }\n",
    /* an operand that is a constant (a double: no lanes): _r on the right, _l on the left */
    "NSD_@_FN nsd_@ nsd_@_add_r(nsd_@ a, double c) { NSD_@_OP(r.v = a.v + c; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k]); }\n"
    "NSD_@_FN nsd_@ nsd_@_sub_r(nsd_@ a, double c) { NSD_@_OP(r.v = a.v - c; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k]); }\n"
    "NSD_@_FN nsd_@ nsd_@_mul_r(nsd_@ a, double c) { NSD_@_OP(r.v = a.v * c; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k] * c); }\n"
    "NSD_@_FN nsd_@ nsd_@_div_r(nsd_@ a, double c) { NSD_@_OP(r.v = a.v / c; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = a.d[k] / c); }\n"
    "NSD_@_FN nsd_@ nsd_@_pow_r(nsd_@ a, double c) {\n"
    "    const double f = pow(a.v, c), da = c == 0.0 ? 0.0 : c * pow(a.v, c - 1.0);\n"
    "    return nsd_@_f1(a, f, da);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_add_l(double c, nsd_@ b) { NSD_@_OP(r.v = c + b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = b.d[k]); }\n"
    "NSD_@_FN nsd_@ nsd_@_sub_l(double c, nsd_@ b) { NSD_@_OP(r.v = c - b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = -b.d[k]); }\n"
    "NSD_@_FN nsd_@ nsd_@_mul_l(double c, nsd_@ b) { NSD_@_OP(r.v = c * b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = c * b.d[k]); }\n"
    "NSD_@_FN nsd_@ nsd_@_div_l(double c, nsd_@ b) {\n"
    "    NSD_@_OP(r.v = c / b.v; for (int k = 0; k < NSD_@_K; ++k) r.d[k] = -r.v * b.d[k] / b.v);\n}\n"
    "NSD_@_FN nsd_@ nsd_@_pow_l(double c, nsd_@ b) {\n"
    "    const double f = pow(c, b.v);\n"
    "    return nsd_@_f1(b, f, c > 0.0 ? f * log(c) : 0.0);\n}\n",
    /* J X = R in place (J n x n, R n x m, row-major): Gaussian elimination, partial pivoting */
    "NSD_@_TWIN void nsd_@_gauss(int n, double *J, double *R, int m) {\n"
    "    for (int c = 0; c < n; ++c) {\n"
    "        int pv = c;\n"
    "        for (int r = c + 1; r < n; ++r)\n            if (fabs(J[r * n + c]) > fabs(J[pv * n + c])) pv = r;\n"
    "        for (int k = 0; pv != c && k < n; ++k) { const double t = J[c * n + k]; J[c * n + k] = J[pv * n + k]; J[pv * n + k] = t; }\n"
    "        for (int k = 0; pv != c && k < m; ++k) { const double t = R[c * m + k]; R[c * m + k] = R[pv * m + k]; R[pv * m + k] = t; }\n"
    "        for (int r = c + 1; r < n; ++r) {\n"
    "            const double f = J[r * n + c] / J[c * n + c];\n"
    "            for (int k = c; k < n; ++k) J[r * n + k] -= f * J[c * n + k];\n"
    "            for (int k = 0; k < m; ++k) R[r * m + k] -= f * R[c * m + k];\n"
    "        }\n    }\n"
    "    for (int c = n - 1; c >= 0; --c)\n"
    "        for (int k = 0; k < m; ++k) {\n"
    "            double s = R[c * m + k];\n"
    "            for (int j = c + 1; j < n; ++j) s -= J[c * n + j] * R[j * m + k];\n"
    "            R[c * m + k] = s / J[c * n + c];\n"
    "        }\n}\n"};

/* a runtime string with '@' the dual type's name and each lane loop
 * "for (int k = 0; k < NSD_@_K; ++k) S" written out as S for k = 0 ... K-1
 * (S ends at its ';' or at the unmatched ')' of NSD_@_OP): straight-line
 * code, no loop in the loop over the instances, which then vectorises (the
 * same operations in the same order: the same bits) */
static void put_unrolled(struct gen *g, const char *M, const char *c, int K) {
    static const char loop[] = "for (int k = 0; k < NSD_@_K; ++k) ";
    while (*c) {
        const char *at = strchr(c, '@'), *lp = strstr(c, loop);
        if (lp && (!at || lp <= at)) {
            P("%.*s", (int)(lp - c), c);
            const char *s = lp + sizeof loop - 1, *e = s;
            for (int depth = 0; *e && !(depth == 0 && (*e == ';' || *e == ')')); ++e) depth += (*e == '(') - (*e == ')');
            for (int j = 0; j < K; ++j) {
                for (const char *q = s; q < e; ++q) {
                    if (*q == '@') P("%s", M);
                    else if (!strncmp(q, "[k]", 3)) {
                        P("[%d]", j);
                        q += 2;
                    } else P("%c", *q);
                }
                P("%s", j + 1 < K ? "; " : "");
            }
            if (*e == ';') P(";");
            c = *e == ';' ? e + 1 : e;
            continue;
        }
        if (!at) {
            P("%s", c);
            break;
        }
        P("%.*s%s", (int)(at - c), c, M);
        c = at + 1;
    }
}

void nm_diff_put_runtime(struct gen *g, const char *M, int K, int gpu) {
    put_unrolled(g, M, gpu ? device_fns : host_fns, K);
    for (size_t q = 0; q < sizeof runtime / sizeof *runtime; ++q) put_unrolled(g, M, runtime[q], K);
}

/* the loop over a block's instances (nsm_NAME_vjpn_PHASE, ABI 7): rows of p->n,
 * v's per node; as the forward loops (nmodl_gen_entry.c's emit_paths), the
 * contiguous path (instance i alone at node node_begin + i) and a density
 * mechanism's node_index path have no dependence between instances (simd);
 * a point process's instances can share a node, so that loop stays as written */
static void put_paths(struct gen *g, const struct ns_nmodl *m, const char *phase, const char *ind) {
    static const char *simd = "#if defined(_OPENMP) || defined(NSM_OMP_SIMD)\n#pragma omp simd\n"
                              "#elif defined(__GNUC__) && !defined(__clang__)\n#pragma GCC ivdep\n"
                              "#elif defined(__clang__)\n#pragma clang loop vectorize(assume_safety)\n#endif\n";
    const char *M = m->name;
    P("%sif (!ni_) {\n%s    q_.node_index = NULL; /* known here: ion slots are the nodes */\n%s", ind, ind, simd);
    P("%s    for (int i = 0; i < n_; ++i) nsm_%s_vjpa_%s(&q_, i, b_ + i, lo_ + i, n_, lv_ + b_ + i, lf_ + i, lg_ + i);\n",
      ind, M, phase);
    P("%s} else {\n%s", ind, m->point ? "" : simd);
    P("%s    for (int i = 0; i < n_; ++i) nsm_%s_vjpa_%s(&q_, i, ni_[i], lo_ + i, n_, lv_ + ni_[i], lf_ + i, lg_ + i);\n"
      "%s}\n", ind, M, phase, ind);
}

/* The device's product of a phase (ns_mech_desc.cuda_vjp_*, ABI 10): a kernel of a thread per
 * instance, each at its own node (a density mechanism's), running nsm_NAME_vjpa_PHASE with the
 * block's rows, and its launch nsm_NAME_cuda_vjp_PHASE */
void nm_diff_put_kernel(struct gen *g, const char *M, const char *phase) {
    P("__global__ void nsm_%s_k_vjp_%s(ns_mech_ppack pp, const double *lo_, double *lv_, double *lf_, double *lg_) {\n"
      "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= pp.n) return;\n"
      "    const int node = pp.node_index ? pp.node_index[i] : pp.node_begin + i;\n"
      "    nsm_%s_vjpa_%s(&pp, i, node, lo_ + i, pp.n, lv_ + node, lf_ + i, lg_ + i);\n}\n"
      "extern \"C\" int nsm_%s_cuda_vjp_%s(const ns_mech_ppack *p, const double *lo, double *lv, double *lf, "
      "double *lg, void *stream) {\n"
      "    if (p->n <= 0) return 0;\n    const int threads = 128;\n"
      "    nsm_%s_k_vjp_%s<<<(p->n + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p, lo, lv, lf, lg);\n"
      "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
      M, phase, M, phase, M, phase, M, phase);
}

/* The GLOBALs in a local copy (no store of the loop can change them), and
 * with TABLEs the loop twice, as the forward loops: where every usetable is
 * not 0 (set to 1 in the copy) and where every one is 0 (set to +0), so that
 * the test of a lookup is a constant there (no branch left); the rest as is */
void nm_diff_put_block_loop(struct gen *g, const struct ns_nmodl *m, const char *T, const char *phase) {
    const int ng = m->n_globals;
    P("NSD_%s_%s void nsm_%s_vjpn_%s(ns_mech_ppack *p, const double *lo_, double *lv_, double *lf_, double *lg_) {\n"
      "    const int n_ = p->n, b_ = p->node_begin, *ni_ = p->node_index;\n    ns_mech_ppack q_ = *p;\n",
      T, strncmp(phase, "init", 4) ? "HOT" : "ENTRY", m->name, phase);
    if (ng) P("    double g_[%d];\n    memcpy(g_, p->global, sizeof g_);\n    q_.global = g_;\n", ng);
    int ut[64], nt = 0;
    for (int i = 0; i < m->n_blocks && nt < 64; i++)
        if (m->blocks[i]->table) ut[nt++] = m->blocks[i]->table->usetable;
    if (!nt || !ng) {
        put_paths(g, m, phase, "    ");
        P("}\n\n");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        P("    %sif (", pass ? "} else " : "");
        for (int k = 0; k < nt; k++) P("%sg_[%d] %s 0.0", k ? " && " : "", ut[k], pass ? "==" : "!=");
        P(") {\n");
        for (int k = 0; k < nt; k++) P("        g_[%d] = %s;\n", ut[k], pass ? "0.0" : "1.0");
        put_paths(g, m, phase, "        ");
    }
    if (nt > 1) {
        P("    } else {\n");
        put_paths(g, m, phase, "        ");
    }
    P("    }\n}\n\n");
}

/* The lanes of a phase's constant-ion variant (ABI 9's vjp_*_n_ci): those of
 * lane[] without the ion values e, ci, co it reads (rows of no field: ena,
 * cai read only), which are then constants of the product; an ion current
 * read (ica) keeps its lane. The variant's lane count, 0 where the phase reads
 * no such value (no variant). */
int nm_diff_ci_lanes(const struct ns_nmodl *m, const int *lane, int *out) {
    const int nf = m->n_fields, n_in = 1 + nf + m->n_globals + 4 * m->n_ions, g0 = 1 + nf + m->n_globals;
    int n = 0, dropped = 0;
    for (int j = 0; j < n_in; j++) {
        const int ion_value = j >= g0 && (j - g0) % 4 != 3;
        if (lane[j] >= 0 && ion_value) {
            out[j] = -1;
            dropped = 1;
        } else out[j] = lane[j] >= 0 ? n++ : lane[j];
    }
    return dropped ? (n > 0 ? n : 1) : 0;
}

