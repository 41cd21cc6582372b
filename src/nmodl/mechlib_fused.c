/* A library's fused launches (ABI 6, include/neurosolve/mechanism.h's
 * ns_mech_fused; docs/mechanisms.md, "One launch per phase"): at `mechanisms
 * build --cuda`, one CUDA file with a current and a state kernel over the
 * nodes of a GPU group that call the per-instance functions (NAME.h's
 * nsm_NAME_current_one, nsm_NAME_state_one) of every member mechanism
 * (nm_fused_member), and the header that gives each member its case
 * (NSM_FUSED_INDEX_NAME, its ns_mech_desc.fused_index). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_impl.h"

/* A growing text; NULL after a failure (then every append is a no-op). */
typedef struct ftext {
    char *s;
    size_t n, cap;
} ftext;

static void fput(ftext *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fput(ftext *t, const char *fmt, ...) {
    if (!t->s && t->cap) return; /* failed before */
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || t->n + (size_t)k + 1 > (size_t)1 << 30) {
        free(t->s), t->s = NULL, t->cap = 1;
        return;
    }
    if (t->n + (size_t)k + 1 > t->cap) {
        size_t cap = t->cap > 1 ? t->cap : 4096;
        while (cap < t->n + (size_t)k + 1) cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            free(t->s), t->s = NULL, t->cap = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    t->n += (size_t)k;
}

static ns_status write_file(const char *work, const char *name, const ftext *t, char **path) {
    if (!t->s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    const size_t n = strlen(work) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(p, n, "%s/%s", work, name);
    FILE *f = fopen(p, "wb");
    int bad = !f;
    if (f) {
        bad = fwrite(t->s, 1, t->n, f) != t->n;
        bad |= fclose(f) != 0;
    }
    if (bad) {
        ns_status s = ns_fail(NS_ERR_IO, "%s: cannot write", p);
        free(p);
        return s;
    }
    if (path) *path = p;
    else free(p);
    return NS_OK;
}

/* The kernels' fixed part: a member's ppack at one node (v, rhs and d the
 * thread's locals, the per-node arrays offset to the node, node_ 0), the
 * node's entries, and the phases' loop around the cases. */
static const char *const bind =
    "namespace {\n"
    "// the ppack of slot s's mechanism at node x: v, rhs, d the thread's locals, the per-node arrays from x\n"
    "template <int NI>\n"
    "__device__ __forceinline__ void nsm_fused_bind(ns_mech_ppack &p, ns_mech_ion_view *ion, const ns_mech_ppack &s,\n"
    "                                               int64_t x, double *vl, double *rl, double *dl, double t,\n"
    "                                               double dt, double celsius) {\n"
    "    p = ns_mech_ppack{};\n"
    "    p.n = s.n;\n"
    "    p.t = t;\n"
    "    p.dt = dt;\n"
    "    p.celsius = celsius;\n"
    "    p.v = vl;\n"
    "    p.rhs = rl;\n"
    "    p.d = dl;\n"
    "    p.field = s.field;\n"
    "    p.global = s.global;\n"
    "    p.table = s.table;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < NI; ++j) {\n"
    "        const ns_mech_ion_view w = s.ion[j];\n"
    "        ion[j] = ns_mech_ion_view{w.e + x, w.ci + x, w.co + x, w.i ? w.i + x : nullptr,\n"
    "                                  w.didv ? w.didv + x : nullptr, nullptr};\n"
    "    }\n"
    "    p.ion = ion;\n"
    "    p.area = s.area ? s.area + x : nullptr;\n"
    "    p.diam = s.diam ? s.diam + x : nullptr;\n"
    "}\n\n";

/* Each member's case is a function of its own, not inlined: inlined into one
 * switch the cases' registers added up (181 for the BBP library's state(),
 * 8 warps per SM), called they take the largest case's (70; sm_90, nvcc
 * 13.0). v, rhs and d go in and out by value, so nothing is on a stack. */
static const char *const head =
    "// STATE 0: current() of every member at the node into rhs and d (from their values), one write;\n"
    "// 1: state(), then e by Nernst after a concentration writer where its slot says\n"
    "template <int STATE>\n"
    "__global__ void nsm_library_k_fused(ns_mech_fused f) {\n"
    "    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (x >= f.nodes) return;\n"
    "    const int32_t c = f.node_cell[x];\n"
    "    const int32_t r = f.cell_row[c] + (int32_t)(x - f.cell_base[c]);\n"
    "    const int32_t e0 = f.row_begin[r], e1 = f.row_begin[r + 1];\n"
    "    if (e0 == e1) return;\n"
    "    double vl = f.v[x], rl = 0.0, dl = 0.0;\n"
    "    if (!STATE) rl = f.rhs[x], dl = f.d[x];\n"
    "    const double t = f.t_dev ? *f.t_dev : f.t;\n"
    "    bool any = false;\n"
    "    for (int32_t e = e0; e < e1; ++e) {\n"
    "        const int32_t code = f.entries[e], s = code >> 24;\n"
    "        if (s < f.slot_lo) continue;\n"
    "        if (s >= f.slot_hi) break;\n"
    "        any = true;\n"
    "        const ns_mech_fused_slot &sl = f.slots[s];\n"
    "        const int q = f.cell_inst[(int64_t)c * f.n_slots + s] + (code & 0xFFFFFF);\n"
    "        switch (sl.index) {\n";

static const char *const tail =
    "        default: break;\n"
    "        }\n"
    "        if (STATE)\n"
    "            for (int j = 0; j < sl.n_ions && j < NS_MECH_FUSED_IONS; ++j)\n"
    "                if (sl.nernst[j] && sl.nernst[j][x]) {\n"
    "                    const ns_mech_ion_view w = sl.p.ion[j];\n"
    "                    w.e[x] = ns_mech_nernst_ktf(w.ci[x], w.co[x], sl.charge[j], f.ktf);\n"
    "                }\n"
    "    }\n"
    "    if (!STATE && any) f.rhs[x] = rl, f.d[x] = dl;\n"
    "}\n"
    "}  // namespace\n\n"
    "extern \"C\" int nsm_library_fused_current(const ns_mech_fused *f, void *stream) {\n"
    "    if (f->nodes <= 0) return 0;\n"
    "    const int threads = 128;\n"
    "    nsm_library_k_fused<0><<<(unsigned)((f->nodes + threads - 1) / threads), threads, 0, (cudaStream_t)stream>>>(*f);\n"
    "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n"
    "}\n"
    "extern \"C\" int nsm_library_fused_state(const ns_mech_fused *f, void *stream) {\n"
    "    if (f->nodes <= 0) return 0;\n"
    "    const int threads = 128;\n"
    "    nsm_library_k_fused<1><<<(unsigned)((f->nodes + threads - 1) / threads), threads, 0, (cudaStream_t)stream>>>(*f);\n"
    "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n"
    "}\n";

ns_status nm_write_fused(const char *work, const char *const *names, const int *member, const int *n_ions, size_t n,
                         char **cu_path) {
    *cu_path = NULL;
    ftext h = {0}, cu = {0};
    fput(&h, "/* Generated by neurosolve mechanisms build: do not edit. The library's fused launches\n"
             " * (ns_mech_fused) and each member mechanism's case in them (ns_mech_desc.fused_index). */\n"
             "#ifndef NSM_LIBRARY_FUSED_H\n#define NSM_LIBRARY_FUSED_H\n#include \"neurosolve/mechanism.h\"\n"
             "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
             "int nsm_library_fused_current(const ns_mech_fused *f, void *stream);\n"
             "int nsm_library_fused_state(const ns_mech_fused *f, void *stream);\n"
             "#ifdef __cplusplus\n}\n#endif\n");
    fput(&cu, "/* Generated by neurosolve mechanisms build: do not edit. One launch per phase for the\n"
              " * library's density mechanisms (include/neurosolve/mechanism.h, ns_mech_fused). */\n");
    int index = 0;
    for (size_t k = 0; k < n; ++k) {
        if (!member[k]) continue;
        if (n_ions[k] > NS_MECH_FUSED_IONS)
            return free(h.s), free(cu.s), ns_fail(NS_ERR_UNSUPPORTED, "mechanism %s uses %d ions (at most %d)", names[k],
                                                  n_ions[k], NS_MECH_FUSED_IONS);
        fput(&h, "#define NSM_FUSED_INDEX_%s %d\n", names[k], index++);
        fput(&cu, "#include \"%s.h\"\n", names[k]);
    }
    fput(&h, "#endif\n");
    fput(&cu, "#include \"nsm_library_fused.h\"\n#include <cuda_runtime.h>\n\n%s", bind);
    for (size_t k = 0; k < n; ++k) {
        if (!member[k]) continue;
        fput(&cu,
             "template <int STATE>\n"
             "__device__ __noinline__ double2 nsm_fused_%s(const ns_mech_ppack &s, int64_t x, int q, double vl, double rl,\n"
             "                                           double dl, double t, double dt, double celsius) {\n"
             "    ns_mech_ppack p;\n"
             "    ns_mech_ion_view ion[%d];\n"
             "    nsm_fused_bind<%d>(p, ion, s, x, &vl, &rl, &dl, t, dt, celsius);\n"
             "    if (STATE) nsm_%s_state_one(&p, q, 0);\n"
             "    else nsm_%s_current_one(&p, q, 0);\n"
             "    return make_double2(rl, dl);\n"
             "}\n\n",
             names[k], n_ions[k] > 0 ? n_ions[k] : 1, n_ions[k], names[k], names[k]);
    }
    fput(&cu, "%s", head);
    for (size_t k = 0; k < n; ++k) {
        if (!member[k]) continue;
        fput(&cu,
             "        case NSM_FUSED_INDEX_%s: {\n"
             "            const double2 r2 = nsm_fused_%s<STATE>(sl.p, x, q, vl, rl, dl, t, f.dt, f.celsius);\n"
             "            rl = r2.x, dl = r2.y;\n"
             "            break;\n"
             "        }\n",
             names[k], names[k]);
    }
    fput(&cu, "%s", tail);
    ns_status s = write_file(work, "nsm_library_fused.h", &h, NULL);
    if (!s) s = write_file(work, "nsm_library_fused.cu", &cu, cu_path);
    free(h.s);
    free(cu.s);
    return s;
}
