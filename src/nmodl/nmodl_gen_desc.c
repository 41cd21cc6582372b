/* The NMODL back end's descriptor and CUDA (nmodl_gen.h): NAME.c's names, defaults and
 * ns_mech_desc, VERBATIM C's guards, and NAME.cu's kernels and launchers. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_gen.h"

static void emit_strs(buf *b, const char *mech, const char *label, const char *const *s, int n) {
    nm_put(b, "static const char *const nsm_%s_%s[] = {", mech, label);
    for (int i = 0; i < n; i++) nm_put(b, "%s\"%s\"", i ? ", " : "", s[i]);
    if (!n) nm_put(b, "NULL");
    nm_put(b, "};\n");
}
/* the name of element k of v: "x", or "x[k]" for an array (in the emit call's arena) */
static const char *element_name(const var *v, int k) {
    if (!v->size) return v->name;
    size_t n = strlen(v->name) + 16;
    char *s = nm_calloc(nm_gen_arena, n, 1);
    if (s) snprintf(s, n, "%s[%d]", v->name, k);
    return s ? s : v->name;
}

/* names and defaults go before the loops (the TABLE builder uses the defaults) */
void nm_emit_desc_data(gen *g) {
    const struct ns_nmodl *m = g->m;
    buf *b = g->b;
    const char *name = m->name;
    const char **fn = calloc((size_t)m->n_fields + 1, sizeof *fn);
    const char **gn = calloc((size_t)m->n_globals + 1, sizeof *gn);
    double *fd = calloc((size_t)m->n_fields + 1, sizeof *fd), *gd = calloc((size_t)m->n_globals + 1, sizeof *gd);
    if (!fn || !gn || !fd || !gd) { b->oom = 1; free(fn); free(gn); free(fd); free(gd); return; }
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        for (int k = 0; k < (v->size ? v->size : 1); k++) {
            if (v->field >= 0) fn[v->field + k] = element_name(v, k), fd[v->field + k] = v->cls == V_PARAM ? v->value : 0.0;
            if (v->global >= 0) gn[v->global + k] = element_name(v, k), gd[v->global + k] = v->value;
        }
    }
    nm_put(b, "static const double nsm_%s_defaults[] = {", name);
    for (int f = 0; f < m->n_fields; f++) nm_put(b, "%s%.17g", f ? ", " : "", fd[f]);
    if (!m->n_fields) nm_put(b, "0.0");
    nm_put(b, "};\n");
    emit_strs(b, name, "names", fn, m->n_fields);
    nm_put(b, "static const double nsm_%s_gdefaults[] = {", name);
    for (int k = 0; k < m->n_globals; k++) nm_put(b, "%s%.17g", k ? ", " : "", gd[k]);
    if (!m->n_globals) nm_put(b, "0.0");
    nm_put(b, "};\n");
    emit_strs(b, name, "gnames", gn, m->n_globals);
    emit_strs(b, name, "pnames", (const char *const *)m->pointers, m->n_pointers);
    {
        const char **ft = calloc((size_t)m->n_ftables + 1, sizeof *ft);
        if (!ft) { b->oom = 1; free(fn); free(gn); free(fd); free(gd); return; }
        nm_put(b, "static const int nsm_%s_ftdims[] = {", name);
        for (int i = 0, k = 0; i < m->n_blocks; i++)
            if (m->blocks[i]->ftable) {
                ft[m->blocks[i]->ftable - 1] = m->blocks[i]->name;
                nm_put(b, "%s%d", k++ ? ", " : "", m->blocks[i]->n_args);
            }
        nm_put(b, "%s};\n", m->n_ftables ? "" : "0");
        emit_strs(b, name, "ftnames", ft, m->n_ftables);
        free(ft);
    }
    nm_put(b, "static const ns_mech_ion_use nsm_%s_ions[] = {", name);
    for (int k = 0; k < m->n_ions; k++)
        nm_put(b, "%s{\"%s\", %d, %uu}", k ? ", " : "", m->ions[k].name, m->ions[k].charge, m->ions[k].flags);
    if (!m->n_ions) nm_put(b, "{NULL, 0, 0u}");
    nm_put(b, "};\n\n");
    free(fn);
    free(gn);
    free(fd);
    free(gd);
}

/* VERBATIM C's errors (nmodl_verbatim.h, ABI 5): each host entry point in the
 * descriptor is its guard, which runs it under the ppack's error channel */
static void emit_guards(gen *g) {
    const struct ns_nmodl *m = g->m;
    const char *n = m->name;
    const char *what[] = {"init", "current", "state"};
    nm_put(g->b, "NSV_BIND(nsm_%s_verbatim_bind)\n", n); /* the context's accessor (mechanism.h) */
    for (int k = 0; k < 3; k++) nm_put(g->b, "NSV_GUARD(\"%s\", nsm_%s_%s)\n#define nsm_%s_%s nsv_g_nsm_%s_%s\n", n, n, what[k], n, what[k], n, what[k]);
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (m->hooks[h]) nm_put(g->b, "NSV_GUARD(\"%s\", nsm_%s_hook%d)\n#define nsm_%s_hook%d nsv_g_nsm_%s_hook%d\n", n, n, h, n, h, n, h);
    const struct { int on; const char *guard, *fn; } more[] = {{m->net_receive != NULL, "RECV", "net_receive"},
        {m->net_receive != NULL, "RECV_W", "net_receive_w"}, {m->net_initial != NULL, "IW", "net_init"},
        {m->n_watch > 0, "WATCH", "watch"}, {m->table_size > 0, "TABLE", "table_update"}};
    for (int k = 0; k < 5; k++)
        if (more[k].on)
            nm_put(g->b, "NSV_GUARD_%s(\"%s\", nsm_%s_%s)\n#define nsm_%s_%s nsv_g_nsm_%s_%s\n", more[k].guard, n, n,
                more[k].fn, n, more[k].fn, n, more[k].fn);
}

/* a C string literal of s, or NULL */
static void put_cstr(buf *b, const char *s) {
    if (!s) { nm_put(b, "NULL"); return; }
    nm_put(b, "\"");
    for (const char *c = s; *c; c++) nm_put(b, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    nm_put(b, "\"");
}

void nm_emit_desc(gen *g, const char *why) {
    const struct ns_nmodl *m = g->m;
    const char *n = m->name;
    if (m->verbatim) emit_guards(g);
    if (nm_fused_member(m)) nm_put(g->b, "#if defined(NS_MECH_WITH_CUDA) && defined(NSM_LIBRARY_FUSED)\n#include \"nsm_library_fused.h\"\n#endif\n");
    nm_put(g->b, "#ifdef NS_MECH_WITH_CUDA\nint nsm_%s_cuda_init(const ns_mech_ppack *, void *);\n"
              "int nsm_%s_cuda_current(const ns_mech_ppack *, void *);\nint nsm_%s_cuda_state(const ns_mech_ppack *, void *);\n",
        n, n, n);
    for (int h = 0; h < NS_MECH_N_HOOKS && !nm_cuda_host_only(m); h++)
        if (nm_hook_on_device(m, h)) nm_put(g->b, "int nsm_%s_cuda_hook%d(const ns_mech_ppack *, void *);\n", n, h);
    for (int k = 0; k < 3 && !why && !m->point && !nm_cuda_host_only(m) && !nm_recursive(m); k++)
        nm_put(g->b, "int nsm_%s_cuda_vjp_%s(const ns_mech_ppack *, const double *, double *, double *, double *, void *);\n",
            n, k == 0 ? "init" : k == 1 ? "current" : "state");
    /* self events, net_event, WATCH, artificial cells, VERBATIM and the hooks
     * stay on the host: no CUDA entry points, and cuda_why_not says where
     * (the GPU loop refuses the mechanism, docs/mechanisms.md "Events");
     * per-connection state and NET_RECEIVE's INITIAL run on the device */
    const int host_only = nm_cuda_host_only(m);
    const int cuda_init = !host_only && m->net_initial;
    if (host_only)
        nm_put(g->b, "#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n#else\n#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n"
                  "#endif\n");
    else if (m->net_receive)
        nm_put(g->b, "int nsm_%s_cuda_net_receive(const ns_mech_ppack *, const ns_mech_event *, const int64_t *, int64_t, "
                  "void *);\n%s%s%s#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init, nsm_##x##_cuda_current, nsm_##x##_cuda_state, "
                  "nsm_##x##_cuda_net_receive\n#else\n#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n#endif\n",
            n, cuda_init ? "int nsm_" : "", cuda_init ? n : "",
            cuda_init ? "_cuda_net_init(const ns_mech_ppack *, const ns_mech_event *, const int64_t *, int64_t, void *);\n" : "");
    else
        nm_put(g->b, "#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init, nsm_##x##_cuda_current, nsm_##x##_cuda_state, NULL\n"
                  "#else\n#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n#endif\n");
    nm_put(g->b, "const ns_mech_desc nsm_%s_desc = {\n    NS_MECH_ABI_VERSION, \"%s\", %s,\n    %d, %d, %d, %d, nsm_%s_names, nsm_%s_defaults,\n"
              "    %d, nsm_%s_gnames, nsm_%s_gdefaults,\n    %d, nsm_%s_ions,\n    %d, %d,\n"
              "    nsm_%s_init, nsm_%s_current, nsm_%s_state,\n    %s%s%s,\n    %s%s%s,\n    NSM_CUDA_FNS(%s)",
        n, n, m->point ? "NS_MECH_POINT" : "NS_MECH_DENSITY", m->n_fields, m->n_params, m->n_assigned, m->n_states, n, n,
        m->n_globals, n, n, m->n_ions, n, m->table_size, m->net_receive != NULL, n, n, n,
        m->net_receive ? "nsm_" : "NULL", m->net_receive ? n : "", m->net_receive ? "_net_receive" : "",
        m->table_size ? "nsm_" : "NULL", m->table_size ? n : "", m->table_size ? "_table_update" : "", n);
    nm_put(g->b, ",\n    %d, %d", m->n_streams, m->random_field >= 0 ? m->random_field : 0); /* random */
    nm_put(g->b, ",\n    %d, nsm_%s_pnames", m->n_pointers, n);                                       /* POINTER */
    nm_put(g->b, ",\n    %d, %d, %uu, %s%s%s, %s%s%s,\n    %d, %s%s%s", /* events */
        m->n_net_args, m->artificial, m->events, m->net_receive ? "nsm_" : "NULL", m->net_receive ? n : "",
        m->net_receive ? "_net_receive_w" : "", m->net_initial ? "nsm_" : "NULL", m->net_initial ? n : "",
        m->net_initial ? "_net_init" : "", m->n_watch, m->n_watch ? "nsm_" : "NULL", m->n_watch ? n : "",
        m->n_watch ? "_watch" : "");
    nm_put(g->b, ",\n    {"); /* the hooks and FUNCTION_TABLEs (ABI 4) */
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        if (m->hooks[h]) nm_put(g->b, "%snsm_%s_hook%d", h ? ", " : "", n, h);
        else nm_put(g->b, "%sNULL", h ? ", " : "");
    }
    nm_put(g->b, "},\n    %d, nsm_%s_ftnames, nsm_%s_ftdims", m->n_ftables, n, n);
    /* derivatives (ABI 5, nmodl_diff.c): the vector-Jacobian products, or why there are none */
    if (!why) nm_put(g->b, ",\n    nsm_%s_vjp_init, nsm_%s_vjp_current, nsm_%s_vjp_state, ", n, n, n);
    else nm_put(g->b, ",\n    NULL, NULL, NULL, ");
    put_cstr(g->b, why);
    nm_put(g->b, ",\n    "); /* ABI 5: why not thread-safe (nmodl_verbatim.c) */
    put_cstr(g->b, m->thread_unsafe);
    /* ABI 5: NET_RECEIVE's INITIAL on the device; why there is no CUDA code */
    if (cuda_init) nm_put(g->b, ",\n#ifdef NS_MECH_WITH_CUDA\n    nsm_%s_cuda_net_init,\n#else\n    NULL,\n#endif\n    ", n);
    else nm_put(g->b, ",\n    NULL, ");
    put_cstr(g->b, !host_only             ? NULL
                   : m->verbatim_gpu_why[0] ? m->verbatim_gpu_why
                   : m->gpu_why[0]          ? m->gpu_why
                                            : "events run on the CPU loop only");
    /* ABI 6: the library's fused launches, where `mechanisms build --cuda` made them (mechlib_fused.c) */
    if (nm_fused_member(m))
        nm_put(g->b, ",\n#if defined(NS_MECH_WITH_CUDA) && defined(NSM_LIBRARY_FUSED)\n    NSM_FUSED_INDEX_%s, "
                  "nsm_library_fused_current, nsm_library_fused_state\n#else\n    -1, NULL, NULL\n#endif\n", n);
    else nm_put(g->b, ",\n    -1, NULL, NULL");
    /* ABI 7: the derivatives over a block of instances (nmodl_diff.c) */
    if (!why) nm_put(g->b, ",\n    nsm_%s_vjpn_init, nsm_%s_vjpn_current, nsm_%s_vjpn_state", n, n, n);
    else nm_put(g->b, ",\n    NULL, NULL, NULL");
    /* ABI 7: the hooks on the device */
    int dev_hooks = 0;
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) dev_hooks |= !nm_cuda_host_only(m) && nm_hook_on_device(m, h);
    nm_put(g->b, ",\n");
    if (dev_hooks) {
        nm_put(g->b, "#ifdef NS_MECH_WITH_CUDA\n    {");
        for (int h = 0; h < NS_MECH_N_HOOKS; h++)
            if (nm_hook_on_device(m, h)) nm_put(g->b, "%snsm_%s_cuda_hook%d", h ? ", " : "", n, h);
            else nm_put(g->b, "%sNULL", h ? ", " : "");
        nm_put(g->b, "},\n#else\n");
    }
    nm_put(g->b, "    {");
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) nm_put(g->b, "%sNULL", h ? ", " : "");
    nm_put(g->b, dev_hooks ? "},\n#endif\n" : "},\n");
    /* ABI 8: whether the device code can record an error (nmodl_cuda_verbatim.c), NET_RECEIVE's
     * derivative (nmodl_diff.c), LONGITUDINAL_DIFFUSION */
    nm_put(g->b, "    %s,\n", m->cuda_may_fail ? "NS_MECH_CUDA_ERRORS_FLAGGED" : "NS_MECH_CUDA_ERRORS_NONE");
    if (!why && m->net_receive) nm_put(g->b, "    nsm_%s_vjp_net_receive,\n", n);
    else nm_put(g->b, "    NULL,\n");
    if (m->n_ldifus) nm_put(g->b, "    %d, nsm_%s_ldfields, nsm_%s_ldifus,\n", m->n_ldifus, n, n);
    else nm_put(g->b, "    0, NULL, NULL,\n");
    /* ABI 9: the products with constant ion values (nmodl_diff.c defines which) */
    if (!why) nm_put(g->b, "    NSD_%s_VJPN_CI,\n", n);
    else nm_put(g->b, "    NULL, NULL, NULL,\n");
    /* ABI 10: a density mechanism's products on the device (nm_emit_cuda) */
    if (!why && !m->point && !host_only && !nm_recursive(m))
        nm_put(g->b, "#ifdef NS_MECH_WITH_CUDA\n    nsm_%s_cuda_vjp_init, nsm_%s_cuda_vjp_current, nsm_%s_cuda_vjp_state\n"
                  "#else\n    NULL, NULL, NULL\n#endif\n};\n", n, n, n);
    else nm_put(g->b, "    NULL, NULL, NULL\n};\n");
}

void nm_emit_cuda(gen *g) {
    const char *n = g->m->name;
    if (g->m->verbatim_gpu_why[0]) { /* VERBATIM C that is not device C (nmodl_cuda_verbatim.c) */
        g->status = ns_fail(NS_ERR_UNSUPPORTED, "%s: mechanism %s is built for the CPU only (build its library "
                            "without --cuda and run it on the CPU backend)", g->m->verbatim_gpu_why, n);
        return;
    }
    nm_put(g->b, "/* Generated by neurosolve's NMODL translator from %s: do not edit. */\n#include \"%s.h\"\n"
              "#include <cuda_runtime.h>\n\n", g->m->file, n);
    const char *what[] = {"init", "current", "state"};
    for (int k = 0; k < 3; k++) {
        nm_put(g->b, "__global__ void nsm_%s_k_%s(ns_mech_ppack pp) {\n"
                  "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < pp.n) nsm_%s_%s_one(&pp, i, pp.node_index ? pp.node_index[i] : pp.node_begin + i);\n}\n"
                  "extern \"C\" int nsm_%s_cuda_%s(const ns_mech_ppack *p, void *stream) {\n"
                  "    if (p->n <= 0) return 0;\n    NSM_STACK_CHECK();\n    const int threads = 128;\n"
                  "    nsm_%s_k_%s<<<(p->n + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            n, what[k], n, what[k], n, what[k], n, what[k]);
    }
    if (nm_cuda_host_only(g->m)) return;
    /* the BEFORE/AFTER blocks and a density mechanism's CONSTRUCTOR (ABI 7's cuda_hooks): a thread per instance */
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        if (!nm_hook_on_device(g->m, h)) continue;
        nm_put(g->b, "__global__ void nsm_%s_k_hook%d(ns_mech_ppack pp) {\n"
                  "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < pp.n) nsm_%s_hook%d_one(&pp, i, pp.node_index ? pp.node_index[i] : pp.node_begin + i);\n}\n"
                  "extern \"C\" int nsm_%s_cuda_hook%d(const ns_mech_ppack *p, void *stream) {\n"
                  "    if (p->n <= 0) return 0;\n    NSM_STACK_CHECK();\n    const int threads = 128;\n"
                  "    nsm_%s_k_hook%d<<<(p->n + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            n, h, n, h, n, h, n, h);
    }
    /* the events of one step (or the connections of NET_RECEIVE's INITIAL):
     * an instance's are adjacent, in delivery order; the thread at the first
     * of them applies them all; the weight vector is the connection's in
     * pp.wvec (per-connection state, written back) or the event's weight */
    if (g->m->net_receive && (g->m->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH))) {
        /* self events (mechanism.h's ns_mech_dev_events): a thread per instance
         * each step delivers its due connection events (range: the step's,
         * sorted by instance, time, number; NULL: none) and its self events
         * due at *pp.dev.until, merged in NEURON's order (time; at one time a
         * connection's first, self events in send order), those it sends
         * meanwhile included */
        const int nw = g->m->n_net_args;
        nm_put(g->b, "__global__ void nsm_%s_k_net_receive(ns_mech_ppack pp, const ns_mech_event *ev, const int64_t *range) {\n"
                  "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i >= pp.n) return;\n"
                  "    int64_t q = 0, e = 0;\n"
                  "    if (range) {\n"
                  "        int64_t lo = range[0], hi = range[1];\n"
                  "        e = hi;\n"
                  "        while (lo < hi) {\n"
                  "            const int64_t mid = lo + (hi - lo) / 2;\n"
                  "            if (ev[mid].instance < i) lo = mid + 1;\n"
                  "            else hi = mid;\n"
                  "        }\n"
                  "        q = lo;\n"
                  "    }\n"
                  "    const double until = *pp.dev.until;\n"
                  "    const int node = pp.node_index ? pp.node_index[i] : pp.node_begin + i;\n"
                  "    const int S = pp.dev.slots;\n"
                  "    const int64_t at = (int64_t)i * S;\n",
            g->m->name);
        if (g->m->n_watch)
            nm_put(g->b,
                  "    for (int k = 0; pp.dev.w_on && k < pp.dev.n_watch; ++k) { /* WATCH at the step's start, first */\n"
                  "        const int64_t wk = (int64_t)i * pp.dev.n_watch + k;\n"
                  "        if (!pp.dev.w_on[wk]) continue;\n"
                  "        pp.t = *pp.dev.t_step;\n"
                  "        if (!(nsm_%s_watch_one(&pp, i, node, k) > 0.0)) {\n"
                  "            pp.dev.w_above[wk] = 0;\n"
                  "            continue;\n"
                  "        }\n"
                  "        if (pp.dev.w_above[wk]) continue;\n"
                  "        pp.dev.w_above[wk] = 1;\n"
                  "        ns_mech_dev_push(&pp, i, pp.t, pp.dev.w_flag[wk], -1);\n"
                  "    }\n",
                g->m->name);
        nm_put(g->b,
                  "    for (;;) {\n"
                  "        int b = -1;\n"
                  "        for (int s = 0; s < S; ++s) {\n"
                  "            if (pp.dev.q_seq[at + s] < 0 || !(pp.dev.q_t[at + s] <= until)) continue;\n"
                  "            if (b < 0 || pp.dev.q_t[at + s] < pp.dev.q_t[at + b] ||\n"
                  "                (pp.dev.q_t[at + s] == pp.dev.q_t[at + b] && pp.dev.q_seq[at + s] < pp.dev.q_seq[at + b]))\n"
                  "                b = s;\n"
                  "        }\n"
                  "        const int conn = q < e && ev[q].instance == i;\n"
                  "        if (!conn && b < 0) break;\n"
                  "        if (conn && (b < 0 || ev[q].t <= pp.dev.q_t[at + b])) {\n"
                  "            pp.t = ev[q].t;\n"
                  "            double w1 = ev[q].weight;\n"
                  "            double *w = pp.wvec ? pp.wvec + (int64_t)ev[q].conn * %d : &w1;\n"
                  "            nsm_%s_net_receive_one(&pp, i, node, w, 0.0);\n"
                  "            ++q;\n"
                  "        } else {\n"
                  "            pp.t = pp.dev.q_t[at + b];\n"
                  "            const double flag = pp.dev.q_flag[at + b];\n"
                  "            const int32_t c = pp.dev.q_conn[at + b];\n"
                  "            pp.dev.q_seq[at + b] = -1;\n"
                  "            double wz[%d] = {0};\n"
                  "            double *w = c >= 0 && pp.wvec ? pp.wvec + (int64_t)c * %d : wz;\n"
                  "            nsm_%s_net_receive_one(&pp, i, node, w, flag);\n"
                  "        }\n    }\n}\n"
                  "extern \"C\" int nsm_%s_cuda_net_receive(const ns_mech_ppack *p, const ns_mech_event *events, "
                  "const int64_t *range, int64_t max, void *stream) {\n"
                  "    (void)max;\n    if (p->n <= 0) return 0;\n    NSM_STACK_CHECK();\n    const int threads = 128;\n"
                  "    nsm_%s_k_net_receive<<<(p->n + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p, events, range);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            nw, g->m->name, nw, nw, g->m->name, g->m->name, g->m->name);
    }
    for (int k = 0; k < 2; k++) {
        const char *fn = k ? "net_init" : "net_receive";
        if (!(k ? g->m->net_initial : g->m->net_receive) || (!k && (g->m->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH))))
            continue;
        nm_put(g->b, "__global__ void nsm_%s_k_%s(ns_mech_ppack pp, const ns_mech_event *ev, const int64_t *range) {\n"
                  "    const int64_t b = range[0], e = range[1];\n"
                  "    for (int64_t k = b + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < e;\n"
                  "         k += (int64_t)gridDim.x * blockDim.x) {\n"
                  "        const int i = ev[k].instance;\n"
                  "        if (k > b && ev[k - 1].instance == i) continue;\n"
                  "        const int node = pp.node_index ? pp.node_index[i] : pp.node_begin + i;\n"
                  "        for (int64_t q = k; q < e && ev[q].instance == i; ++q) {\n"
                  "            pp.t = ev[q].t;\n"
                  "            double w1 = ev[q].weight;\n"
                  "            double *w = pp.wvec ? pp.wvec + (int64_t)ev[q].conn * %d : &w1;\n"
                  "            nsm_%s_%s_one(&pp, i, node, w%s);\n"
                  "        }\n    }\n}\n"
                  "extern \"C\" int nsm_%s_cuda_%s(const ns_mech_ppack *p, const ns_mech_event *events, "
                  "const int64_t *range, int64_t max, void *stream) {\n"
                  "    if (max <= 0) return 0;\n    NSM_STACK_CHECK();\n    const int threads = 128;\n"
                  "    const int64_t want = (max + threads - 1) / threads;\n"
                  "    const unsigned blocks = (unsigned)(want < 1024 ? want : 1024);\n"
                  "    nsm_%s_k_%s<<<blocks, threads, 0, (cudaStream_t)stream>>>(*p, events, range);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            n, fn, g->m->n_net_args, n, fn, k ? "" : ", 0.0", n, fn, n, fn);
    }
    /* ABI 10: a density mechanism's products on the device (nmodl_diff.c; none where the C has none, nor
     * with recursion: nm_recursive) */
    if (g->m->point || nm_recursive(g->m)) return;
    char why[400];
    if (nm_diff_emit(g, why, sizeof why, 1) < 0) g->status = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory generating %s", n);
}
