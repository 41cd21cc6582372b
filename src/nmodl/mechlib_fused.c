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

/* The kernels' fixed part: a member's ppack at one node for current() (v,
 * rhs and d the thread's locals, the per-node arrays offset to the node,
 * node_ 0) and over its instances for state(). */
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
    "    p.ftable = s.ftable;\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < NI; ++j) {\n"
    "        const ns_mech_ion_view w = s.ion[j];\n"
    "        ion[j] = ns_mech_ion_view{w.e + x, w.ci + x, w.co + x, w.i ? w.i + x : nullptr,\n"
    "                                  w.didv ? w.didv + x : nullptr, nullptr};\n"
    "    }\n"
    "    p.ion = ion;\n"
    "    p.area = s.area ? s.area + x : nullptr;\n"
    "    p.diam = s.diam ? s.diam + x : nullptr;\n"
    "}\n\n"
    "// the ppack of slot s's instances as its own launches take it, with the launch's t, dt, celsius\n"
    "__device__ __forceinline__ void nsm_fused_bind_one(ns_mech_ppack &p, const ns_mech_ppack &s, double t, double dt,\n"
    "                                                   double celsius) {\n"
    "    p = ns_mech_ppack{};\n"
    "    p.n = s.n;\n"
    "    p.node_begin = s.node_begin;\n"
    "    p.node_index = s.node_index;\n"
    "    p.t = t;\n"
    "    p.dt = dt;\n"
    "    p.celsius = celsius;\n"
    "    p.v = s.v;\n"
    "    p.rhs = s.rhs;\n"
    "    p.d = s.d;\n"
    "    p.field = s.field;\n"
    "    p.global = s.global;\n"
    "    p.table = s.table;\n"
    "    p.ftable = s.ftable;\n"
    "    p.ion = s.ion;\n"
    "    p.area = s.area;\n"
    "    p.diam = s.diam;\n"
    "}\n\n";

/* current(): a thread per node. Each member's case is inlined (v, rhs and
 * d in and out by value): for the BBP library's 12 mechanisms 57 registers
 * and 1,136 instructions, called cases 60 and 1,304 (sm_90, nvcc 13.0). */
static const char *const head =
    "// current() of every member at the node into rhs and d (from their values), one write\n"
    "__global__ void nsm_library_k_current(ns_mech_fused f) {\n"
    "    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (x >= f.nodes) return;\n"
    "    const int32_t c = f.node_cell[x];\n"
    "    const int32_t r = f.cell_row[c] + (int32_t)(x - f.cell_base[c]);\n"
    "    const int32_t e0 = f.row_begin[r], e1 = f.row_begin[r + 1];\n"
    "    if (e0 == e1) return;\n"
    "    double vl = f.v[x], rl = f.rhs[x], dl = f.d[x];\n"
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

/* state(): thread x runs instance x of each slot in turn (a density
 * mechanism has at most one instance per node, so nodes threads cover every
 * slot), as the per-mechanism launches do: a warp's threads run one
 * mechanism on consecutive instances, and only the tail of a slot idles.
 * Slot s + 1 at instance x may run before slot s at another: the caller ends
 * a launch after a member that writes a concentration (whose Nernst follows
 * it at the instance's node), so that no state() reads what another in the
 * same launch writes. */
static const char *const state_head =
    "// state() of slots [slot_lo, slot_hi), instance x of each, then e by Nernst after a concentration writer\n"
    "__global__ void nsm_library_k_state(ns_mech_fused f) {\n"
    "    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (x >= f.nodes) return;\n"
    "    const double t = f.t_dev ? *f.t_dev : f.t;\n"
    "    for (int32_t s = f.slot_lo; s < f.slot_hi; ++s) {\n"
    "        const ns_mech_fused_slot &sl = f.slots[s];\n"
    "        if (x >= sl.p.n) continue;\n"
    "        const int i = (int)x;\n"
    "        const int node = sl.p.node_index ? sl.p.node_index[i] : sl.p.node_begin + i;\n"
    "        switch (sl.index) {\n";

static const char *const tail =
    "        default: break;\n"
    "        }\n"
    "    }\n"
    "    if (any) f.rhs[x] = rl, f.d[x] = dl;\n"
    "}\n\n";

static const char *const state_tail =
    "        default: break;\n"
    "        }\n"
    "        for (int j = 0; j < sl.n_ions && j < NS_MECH_FUSED_IONS; ++j)\n"
    "            if (sl.nernst[j] && sl.nernst[j][node]) {\n"
    "                const ns_mech_ion_view w = sl.p.ion[j];\n"
    "                w.e[node] = ns_mech_nernst_ktf(w.ci[node], w.co[node], sl.charge[j], f.ktf);\n"
    "            }\n"
    "    }\n"
    "}\n"
    "}  // namespace\n\n"
    "#ifndef NSM_STACK_CHECK\n#define NSM_STACK_CHECK() ((void)0)\n#endif\n"
    "extern \"C\" int nsm_library_fused_current(const ns_mech_fused *f, void *stream) {\n"
    "    if (f->nodes <= 0) return 0;\n"
    "    NSM_STACK_CHECK();\n"
    "    const int threads = 128;\n"
    "    nsm_library_k_current<<<(unsigned)((f->nodes + threads - 1) / threads), threads, 0, (cudaStream_t)stream>>>(*f);\n"
    "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n"
    "}\n"
    "extern \"C\" int nsm_library_fused_state(const ns_mech_fused *f, void *stream) {\n"
    "    if (f->nodes <= 0) return 0;\n"
    "    NSM_STACK_CHECK();\n"
    "    const int threads = 128;\n"
    "    nsm_library_k_state<<<(unsigned)((f->nodes + threads - 1) / threads), threads, 0, (cudaStream_t)stream>>>(*f);\n"
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
             "__device__ __forceinline__ double2 nsm_fused_current_%s(const ns_mech_ppack &s, int64_t x, int q, double vl,\n"
             "                                                   double rl, double dl, double t, double dt, double celsius) {\n"
             "    ns_mech_ppack p;\n"
             "    ns_mech_ion_view ion[%d];\n"
             "    nsm_fused_bind<%d>(p, ion, s, x, &vl, &rl, &dl, t, dt, celsius);\n"
             "    nsm_%s_current_one(&p, q, 0);\n"
             "    return make_double2(rl, dl);\n"
             "}\n"
             "__device__ __forceinline__ void nsm_fused_state_%s(const ns_mech_ppack &s, int i, int node, double t, double dt,\n"
             "                                               double celsius) {\n"
             "    ns_mech_ppack p;\n"
             "    nsm_fused_bind_one(p, s, t, dt, celsius);\n"
             "    nsm_%s_state_one(&p, i, node);\n"
             "}\n\n",
             names[k], n_ions[k] > 0 ? n_ions[k] : 1, n_ions[k], names[k], names[k], names[k]);
    }
    fput(&cu, "%s", head);
    for (size_t k = 0; k < n; ++k) {
        if (!member[k]) continue;
        fput(&cu,
             "        case NSM_FUSED_INDEX_%s: {\n"
             "            const double2 r2 = nsm_fused_current_%s(sl.p, x, q, vl, rl, dl, t, f.dt, f.celsius);\n"
             "            rl = r2.x, dl = r2.y;\n"
             "            break;\n"
             "        }\n",
             names[k], names[k]);
    }
    fput(&cu, "%s%s", tail, state_head);
    for (size_t k = 0; k < n; ++k)
        if (member[k])
            fput(&cu, "        case NSM_FUSED_INDEX_%s: nsm_fused_state_%s(sl.p, i, node, t, f.dt, f.celsius); break;\n",
                 names[k], names[k]);
    fput(&cu, "%s", state_tail);
    ns_status s = write_file(work, "nsm_library_fused.h", &h, NULL);
    if (!s) s = write_file(work, "nsm_library_fused.cu", &cu, cu_path);
    free(h.s);
    free(cu.s);
    return s;
}
