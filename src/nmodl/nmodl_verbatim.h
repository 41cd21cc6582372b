/* NEURON's C helpers for VERBATIM blocks (src/nmodl/nmodl_verbatim.c):
 * CMake embeds this file as text (ns_nmodl_verbatim_header) and the
 * translator writes it into the header of each mechanism whose file has
 * VERBATIM C, before that C, so that the names real files call mean what
 * they mean in NEURON. Host C, and in a --cuda build also C++ (nvcc's host
 * pass); the helpers marked NSV_HD have device versions, which VERBATIM C
 * compiled for the GPU may call (nmodl_cuda_verbatim.c: the allow-list).
 * Written for neurosolve from NEURON's documented behaviour (hoc_Exp,
 * mcell_ran4's hash, nrnran123's Philox4x32 streams), so that draws agree
 * with NEURON's. Needs nmodl_random.h (nsm_philox4x32) first. */
#ifndef NSM_VERBATIM
#define NSM_VERBATIM
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>

/* a helper with a device version (host and device in a CUDA build) */
#if defined(__CUDACC__)
#define NSV_HD __host__ __device__
#else
#define NSV_HD
#endif

/* Errors (ABI 5, docs/mechanisms.md "Errors in a mechanism"): NEURON's
 * hoc_execerror(a, b) stops the simulation with the message; here it records
 * the message, the mechanism and the .mod file and line (__FILE__ and
 * __LINE__ under the VERBATIM block's #line) in the ppack's error
 * (ns_mech_error, the loop's) and jumps back to the entry point that the loop
 * called (NSV_GUARD: every host entry point of such a mechanism is one), so
 * that the C after it does not run, as NEURON's longjmp back to hoc; the loop
 * then stops after the step and returns the error. exit(n) and abort() in
 * the C do the same (a mechanism never ends the process). The calling
 * thread's context (the bound entry point's error, its jump and the
 * mechanism) lives in libneurosolve, which is never unloaded: the loader
 * binds it (nsm_NAME_verbatim_bind, ns_mech_verbatim_ctx in mechanism.h);
 * unbound (a loader of its own), the messages go to stderr and the C goes on. */
static ns_mech_verbatim_ctx_fn nsv_ctx_fn = NULL;
#define NSV_BIND(fn) \
    __attribute__((visibility("default"))) void fn(ns_mech_verbatim_ctx_fn ctx); \
    void fn(ns_mech_verbatim_ctx_fn ctx) { nsv_ctx_fn = ctx; }
static inline ns_mech_verbatim_ctx *nsv_ctx(void) { return nsv_ctx_fn ? nsv_ctx_fn() : NULL; }
static inline void nsv_copy(char *dst, size_t n, const char *src) {
    size_t k = strlen(src);
    if (k >= n) src += k - (n - 1); /* a long path: its end */
    snprintf(dst, n, "%s", src);
}
static inline void nsv_error(const char *file, int line, const char *a, const char *b) {
    ns_mech_verbatim_ctx *const c = nsv_ctx();
    ns_mech_error *e = c ? c->err : NULL;
    const char *mech = c && c->mech ? c->mech : "";
    if (e && !e->set) {
        e->set = 1;
        e->line = line;
        nsv_copy(e->mech, sizeof e->mech, mech);
        nsv_copy(e->file, sizeof e->file, file);
        snprintf(e->msg, sizeof e->msg, "%s%s%s", a ? a : "", a && b && *b ? " " : "", b ? b : "");
    } else if (!e) { /* a caller without an error channel (ppack.error NULL): the message is not lost */
        fprintf(stderr, "neurosolve: %s:%d: mechanism %s: %s %s\n", file, line, mech, a ? a : "", b ? b : "");
    }
    if (c && c->jmp) longjmp(*(jmp_buf *)c->jmp, 1);
    /* called outside an entry point (no loop to stop): the error stays recorded where there is one */
}
#define hoc_execerror(a, b) nsv_error(__FILE__, __LINE__, (a), (b))
#define hoc_execerr_ext(...) nsv_error(__FILE__, __LINE__, "hoc_execerr_ext", NULL)
static inline void nsv_exit(const char *file, int line, int code) {
    char what[48];
    snprintf(what, sizeof what, "exit(%d) in VERBATIM C", code);
    nsv_error(file, line, what, NULL);
}
#define exit(n) nsv_exit(__FILE__, __LINE__, (int)(n))
#define abort() nsv_error(__FILE__, __LINE__, "abort() in VERBATIM C", NULL)
/* NEURON's hoc_warning(a, b): the message on stderr, and on (as the C's own printf) */
static inline void nsv_warning(const char *file, int line, const char *a, const char *b) {
    fprintf(stderr, "neurosolve: %s:%d: %s %s\n", file, line, a ? a : "", b ? b : "");
}
#define hoc_warning(a, b) nsv_warning(__FILE__, __LINE__, (a), (b))
/* An entry point run under the error channel: bound to p->error, returning at
 * once where it is already set, the C's hoc_execerror jumping back here.
 * NSV_GUARDS_name (the translator's, before the descriptor) names these. */
#define NSV_TRY(p, name, call)                                                                   \
    do {                                                                                         \
        ns_mech_verbatim_ctx *const nsv_c_ = nsv_ctx();                                          \
        if (!nsv_c_) {                                                                           \
            if (!((p)->error && (p)->error->set)) call;                                         \
            break;                                                                               \
        }                                                                                        \
        jmp_buf nsv_jb_;                                                                         \
        void *const nsv_pj_ = nsv_c_->jmp;                                                       \
        ns_mech_error *const nsv_pe_ = nsv_c_->err;                                              \
        const char *const nsv_pm_ = nsv_c_->mech;                                                \
        nsv_c_->err = (p)->error;                                                                \
        nsv_c_->mech = (name);                                                                   \
        if (!(nsv_c_->err && nsv_c_->err->set) && !setjmp(nsv_jb_)) {                           \
            nsv_c_->jmp = &nsv_jb_;                                                              \
            call;                                                                                \
        }                                                                                        \
        nsv_c_->jmp = nsv_pj_;                                                                   \
        nsv_c_->err = nsv_pe_;                                                                   \
        nsv_c_->mech = nsv_pm_;                                                                  \
    } while (0)
#define NSV_GUARD(name, fn)                                                                      \
    static void nsv_g_##fn(ns_mech_ppack *p) { NSV_TRY(p, name, fn(p)); }
#define NSV_GUARD_RECV(name, fn)                                                                 \
    static void nsv_g_##fn(ns_mech_ppack *p, int i, double w) { NSV_TRY(p, name, fn(p, i, w)); }
#define NSV_GUARD_RECV_W(name, fn)                                                               \
    static void nsv_g_##fn(ns_mech_ppack *p, int i, double *w, double f) { NSV_TRY(p, name, fn(p, i, w, f)); }
#define NSV_GUARD_IW(name, fn)                                                                   \
    static void nsv_g_##fn(ns_mech_ppack *p, int i, double *w) { NSV_TRY(p, name, fn(p, i, w)); }
#define NSV_GUARD_WATCH(name, fn)                                                                \
    static double nsv_g_##fn(ns_mech_ppack *p, int i, int k) {                                    \
        volatile double r_ = 0.0;                                                                \
        NSV_TRY(p, name, r_ = fn(p, i, k));                                                      \
        return r_;                                                                               \
    }
#define NSV_GUARD_TABLE(name, fn)                                                                \
    static int nsv_g_##fn(ns_mech_ppack *p) {                                                    \
        volatile int r_ = 0;                                                                     \
        NSV_TRY(p, name, r_ = fn(p));                                                            \
        return r_;                                                                               \
    }
/* NEURON's hoc types, opaque: C outside the functions may declare with them (pointers, the
 * prototypes of hoc's functions); C that uses them is left out where only hoc could call it,
 * refused elsewhere (src/nmodl/nmodl_verbatim.c) */
typedef struct Object Object;
typedef struct Symbol Symbol;
typedef struct IvocVect IvocVect;
typedef struct Section Section;
typedef struct Node Node;
typedef struct Prop Prop;
typedef struct Datum Datum;
typedef struct Point_process Point_process;
typedef struct NrnThread NrnThread;
/* NEURON's flag of its variable-step method: neurosolve's steps are fixed */
static int cvode_active_ = 0;
/* a NEURON function that needs the hoc interpreter, reached at run time (a
 * Random object that only hoc could have set: never, here) */
static inline double nsv_hoc_only(const char *file, int line, const char *what) {
    nsv_error(file, line, what, "needs NEURON's hoc interpreter, which neurosolve does not have");
    return 0.0;
}
/* NEURON's hoc_Exp: 0 below -700, exp(700) with a warning above 700 (on the host; the device's
 * returns the same values without the warning) */
static int nsv_exp_warnings = 0;
static inline NSV_HD double hoc_Exp(double x) {
    if (x < -700.) return 0.;
#if defined(__CUDA_ARCH__)
    if (x > 700.) return exp(700.);
#else
    if (x > 700.) {
        errno = ERANGE;
        if (++nsv_exp_warnings < 5) fprintf(stderr, "exp(%g) out of range, returning exp(700)\n", x);
        if (nsv_exp_warnings == 5) fprintf(stderr, "No more errno warnings during this execution\n");
        return exp(700.);
    }
#endif
    return exp(x);
}
/* A hoc Random or Vector: none exists here (only hoc creates them), so a file's `if (_p_rng)
 * nrn_random_pick(_p_rng) else exprand(1)` takes its else, and VecStim's `vv = *((void **)(&space));
 * if (vv) { size = vector_capacity(vv); ... }` too, as NEURON's does until hoc gives a Vector; and
 * its DESTRUCTOR's `if (vv) hoc_obj_unref(*vector_pobj(vv));`. Functions (files declare their
 * prototypes, C outside the blocks may call them), which stop the run where reached; the blocks'
 * C reaches them through macros that name its .mod line (nmodl_gen_entry.c, NSV_AFTER_TOP: after
 * the C outside the blocks), host and device (nsv_dev_hoc_only, below). */
static inline NSV_HD Object **nsv_no_object(void) { /* the device has its own */
    static Object *none = NULL;
    return &none;
}
static inline double nrn_random_pick(void *r) {
    (void)r;
    return nsv_hoc_only(__FILE__, __LINE__, "nrn_random_pick");
}
static inline int vector_capacity(void *v) {
    (void)v;
    return (int)nsv_hoc_only(__FILE__, __LINE__, "vector_capacity");
}
static inline double *vector_vec(void *v) {
    (void)v;
    nsv_hoc_only(__FILE__, __LINE__, "vector_vec");
    return NULL;
}
static inline Object **vector_pobj(void *v) {
    (void)v;
    nsv_hoc_only(__FILE__, __LINE__, "vector_pobj");
    return nsv_no_object();
}
static inline void hoc_obj_ref(Object *o) {
    (void)o;
    nsv_hoc_only(__FILE__, __LINE__, "hoc_obj_ref");
}
static inline void hoc_obj_unref(Object *o) {
    (void)o;
    nsv_hoc_only(__FILE__, __LINE__, "hoc_obj_unref");
}
static inline void *emalloc(size_t n) {
    void *p = malloc(n);
    if (!p && n) hoc_execerror("out of memory", NULL);
    return p;
}
static inline void *ecalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (!p) hoc_execerror("out of memory", NULL);
    return p;
}
static inline void *erealloc(void *p, size_t n) {
    void *q = realloc(p, n);
    if (!q && n) hoc_execerror("out of memory", NULL);
    return q;
}
/* hoc's allocation (hoc_Emalloc, hoc_Ecalloc: the error at once, so hoc_malchk() has none left to
 * raise) */
static inline void *hoc_Emalloc(size_t n) { return emalloc(n); }
static inline void *hoc_Ecalloc(size_t n, size_t size) { return ecalloc(n, size); }
static inline void hoc_malchk(void) {}
/* hoc's names: none exists here, so hoc_lookup gives NULL (a file's `s = hoc_lookup("precall"); if (s)
 * { hoc_pushx(x); hoc_call_func(s, 1); }` skips the call, as NEURON does where hoc defines no
 * precall); hoc_pushx and hoc_call_func stop the run where reached */
static inline Symbol *hoc_lookup(const char *name) {
    (void)name;
    return NULL;
}
static inline void hoc_pushx(double x) {
    (void)x;
    nsv_hoc_only(__FILE__, __LINE__, "hoc_pushx");
}
static inline double hoc_call_func(Symbol *s, int narg) {
    (void)s;
    (void)narg;
    return nsv_hoc_only(__FILE__, __LINE__, "hoc_call_func");
}
/* a CONSTRUCTOR's hoc arguments (`new X(x, n)` in NEURON): neurosolve makes point processes from
 * their placement, without hoc arguments, so ifarg(k) is 1 only for a point process's location
 * (k = 1) and getarg stops the run where reached */
static inline int nsv_ctor_ifarg(int located, int k) { return located && k == 1; }
static inline double *nsv_ctor_getarg(const char *file, int line, int k) {
    static double none = 0.0;
    char what[64];
    snprintf(what, sizeof what, "getarg(%d) in a CONSTRUCTOR", k);
    nsv_error(file, line, what, "(neurosolve makes point processes without hoc arguments)");
    return &none;
}

/* NEURON's nrn_ghk(v, ci, co, z) [mA/cm2 per cm/s], at the simulation's celsius, which the
 * translator passes (nsv_ghk(p->celsius, ...)) */
static inline NSV_HD double nsv_efun(double x) { return fabs(x) < 1e-4 ? 1. - x / 2. : x / (exp(x) - 1); }
static inline NSV_HD double nsv_ghk(double celsius, double v, double ci, double co, double z) {
    const double ktf = 1000. * 8.31446261815324 * (celsius + 273.15) / 96485.33212331001;
    const double temp = z * v / ktf, eco = co * nsv_efun(temp), eci = ci * nsv_efun(-temp);
    return .001 * z * 96485.33212331001 * (eci - eco);
}

/* mcell_ran4: NEURON's 64-bit hash (a variant of Numerical Recipes' psdes)
 * of the index *high (advanced by one per value) and the low index of
 * mcell_ran4_init; values in [0, range) */
static uint32_t nsv_ran4_low = 0;
static inline void mcell_ran4_init(uint32_t low) { nsv_ran4_low = low; }
static inline NSV_HD uint32_t nrnRan4int(uint32_t *idx1, uint32_t idx2) {
    uint32_t n = (*idx1)++, m = idx2, w = n ^ 0xbaa96887u, v = w >> 16, u;
    w &= 0xffffu;
    u = ~((v - w) * (v + w));
    m ^= (((u >> 16) | (u << 16)) ^ 0x4b0f3b58u) + w * v;
    w = m ^ 0x1e17d32cu;
    v = w >> 16;
    w &= 0xffffu;
    u = ~((v - w) * (v + w));
    n ^= (((u >> 16) | (u << 16)) ^ 0xe874f0c3u) + w * v;
    return n;
}
static inline NSV_HD double nrnRan4dbl(uint32_t *idx1, uint32_t idx2) {
    return (double)nrnRan4int(idx1, idx2) * (1.0 / 4294967296.0);
}
static inline double mcell_ran4(uint32_t *high, double *x, unsigned int n, double range) {
    for (unsigned int i = 0; i < n; i++) x[i] = range * nrnRan4dbl(high, nsv_ran4_low);
    return x[0];
}
static inline double mcell_ran4a(uint32_t *high) { return nrnRan4dbl(high, nsv_ran4_low); }
static inline uint32_t mcell_iran4(uint32_t *high) { return nrnRan4int(high, nsv_ran4_low); }

/* nrnran123: a stream is Philox4x32-10 (nmodl_random.h) of the counter
 * {seq, id3, id1, id2} under the key {global index 0, 0}, four 32-bit
 * values per counter, as NEURON's nrnran123.cpp; NEURON 9's overloads by
 * argument count as macros. What works on a stream's state is host and
 * device code (NSV_HD: a stream where the device's C has it, CoreNEURON's
 * per-instance streams); making and freeing one is host memory. */
typedef struct nrnran123_State {
    uint32_t c[4], r[4];
    char which_;
} nrnran123_State;
typedef struct nrnran123_array4x32 {
    uint32_t v[4];
} nrnran123_array4x32;
static inline NSV_HD void nsv_ran123_fill(nrnran123_State *s) {
    static const uint32_t key[2] = {0, 0};
    memcpy(s->r, s->c, sizeof s->r);
    nsm_philox4x32(s->r, key);
}
static inline NSV_HD void nsv_ran123_setseq3(nrnran123_State *s, uint32_t seq, char which) {
    s->which_ = which > 3 || which < 0 ? 0 : which;
    s->c[0] = seq;
    nsv_ran123_fill(s);
}
static inline NSV_HD void nsv_ran123_setseq2(nrnran123_State *s, double seq4which) {
    if (seq4which < 0.0 || seq4which > (double)0xffffffffffLL) seq4which = 0.0;
    const unsigned long long x = ((unsigned long long)seq4which) & 0x3ffffffffLL;
    nsv_ran123_setseq3(s, (uint32_t)(x >> 2), (char)(x & 3));
}
static inline nrnran123_State *nsv_ran123_new(uint32_t id1, uint32_t id2, uint32_t id3) {
    nrnran123_State *s = (nrnran123_State *)ecalloc(1, sizeof *s);
    s->c[1] = id3;
    s->c[2] = id1;
    s->c[3] = id2;
    nsv_ran123_setseq3(s, 0, 0);
    return s;
}
static inline nrnran123_State *nrnran123_newstream3(uint32_t id1, uint32_t id2, uint32_t id3) {
    return nsv_ran123_new(id1, id2, id3);
}
static inline void nrnran123_deletestream(nrnran123_State *s) { free(s); }
static inline NSV_HD void nrnran123_getseq(nrnran123_State *s, uint32_t *seq, char *which) {
    *seq = s->c[0];
    *which = s->which_;
}
static inline NSV_HD void nsv_ran123_getids2(nrnran123_State *s, uint32_t *id1, uint32_t *id2) {
    *id1 = s->c[2];
    *id2 = s->c[3];
}
static inline NSV_HD void nrnran123_getids3(nrnran123_State *s, uint32_t *id1, uint32_t *id2, uint32_t *id3) {
    *id3 = s->c[1];
    nsv_ran123_getids2(s, id1, id2);
}
static inline NSV_HD void nrnran123_setids(nrnran123_State *s, uint32_t id1, uint32_t id2, uint32_t id3) {
    s->c[1] = id3;
    s->c[2] = id1;
    s->c[3] = id2;
}
static inline NSV_HD uint32_t nrnran123_ipick(nrnran123_State *s) {
    char which = s->which_;
    const uint32_t r = s->r[(int)which++];
    if (which > 3) {
        which = 0;
        if (++s->c[0] == 0) ++s->c[1]; /* Random123's counter increment */
        nsv_ran123_fill(s);
    }
    s->which_ = which;
    return r;
}
static inline NSV_HD double nrnran123_dblpick(nrnran123_State *s) {
    return ((double)nrnran123_ipick(s) + 1.0) * (1.0 / 4294967297.0);
}
static inline NSV_HD double nsv_ran123_negexp2(nrnran123_State *s, double mean) { return -log(nrnran123_dblpick(s)) * mean; }
static inline NSV_HD double nsv_ran123_uniform3(nrnran123_State *s, double a, double b) {
    return a + nrnran123_dblpick(s) * (b - a);
}
static inline NSV_HD double nsv_ran123_normal3(nrnran123_State *s, double mu, double sigma) {
    double w, u1, u2;
    do { /* the polar method, NEURON's */
        u1 = 2. * nrnran123_dblpick(s) - 1.;
        u2 = 2. * nrnran123_dblpick(s) - 1.;
        w = u1 * u1 + u2 * u2;
    } while (w > 1);
    return mu + u1 * sqrt(-2. * log(w) / w) * sigma;
}
static inline NSV_HD nrnran123_array4x32 nrnran123_iran3(uint32_t seq, uint32_t id1, uint32_t id2, uint32_t id3) {
    const uint32_t key[2] = {0, 0};
    nrnran123_array4x32 a = {{seq, id3, id1, id2}};
    nsm_philox4x32(a.v, key);
    return a;
}
static inline NSV_HD nrnran123_array4x32 nrnran123_iran(uint32_t seq, uint32_t id1, uint32_t id2) {
    return nrnran123_iran3(seq, id1, id2, 0);
}
/* the function for 4, 3, 2 or 1 arguments */
#define NSV_ARGN(a, b, c, d, n, ...) n
#define nrnran123_newstream(...) NSV_ARGN(__VA_ARGS__, , nsv_ran123_new, nsv_ran123_new2, , )(__VA_ARGS__)
#define nsv_ran123_new2(a, b) nsv_ran123_new((a), (b), 0)
#define nrnran123_setseq(...) NSV_ARGN(__VA_ARGS__, , nsv_ran123_setseq3, nsv_ran123_setseq2, , )(__VA_ARGS__)
#define nrnran123_getids(...) NSV_ARGN(__VA_ARGS__, nrnran123_getids3, nsv_ran123_getids2, , , )(__VA_ARGS__)
#define nrnran123_negexp(...) NSV_ARGN(__VA_ARGS__, , , nsv_ran123_negexp2, nsv_ran123_negexp1, )(__VA_ARGS__)
#define nsv_ran123_negexp1(s) nsv_ran123_negexp2((s), 1.0)
#define nrnran123_uniform(...) NSV_ARGN(__VA_ARGS__, , nsv_ran123_uniform3, , nrnran123_dblpick, )(__VA_ARGS__)
#define nrnran123_normal(...) NSV_ARGN(__VA_ARGS__, , nsv_ran123_normal3, , nsv_ran123_normal1, )(__VA_ARGS__)
#define nsv_ran123_normal1(s) nsv_ran123_normal3((s), 0.0, 1.0)
#if defined(__CUDA_ARCH__)
/* The device's (a point process's C on the GPU loop, nmodl_cuda_verbatim.c): the first error of
 * the type's instances into the ppack's error (device memory, the GPU loop's), which the loop
 * reads at the end of each interval and returns as the CPU loop does; a device has no longjmp,
 * so the C after the call runs on and the interval ends. `p` is the entry point's ppack; in the
 * host functions that nvcc's device pass reads too (C outside the blocks that only the host
 * runs), the file-scope p below, and nothing happens there. */
static const ns_mech_ppack *const p __attribute__((unused)) = 0;
static __device__ inline void nsv_dev_copy(char *dst, int n, const char *a, const char *b) {
    int k = 0;
    for (; a && *a && k < n - 1; ++a) dst[k++] = *a;
    if (a && b && *b && k < n - 1) dst[k++] = ' ';
    for (; b && *b && k < n - 1; ++b) dst[k++] = *b;
    dst[k] = 0;
}
static __host__ __device__ inline void nsv_dev_error(const ns_mech_ppack *pp, const char *file, int line,
                                                     const char *a, const char *b) {
#if defined(__CUDA_ARCH__)
    ns_mech_error *e = pp ? pp->error : NULL;
    if (!e || atomicCAS(&e->set, 0, 2) != 0) return; /* 2: being written; the loop reads 1 */
    e->line = line;
    const char *f = file;
    for (const char *q = file; *q; ++q)
        if (*q == '/') f = q + 1; /* the .mod file's name */
    nsv_dev_copy(e->file, (int)sizeof e->file, f, NULL);
    nsv_dev_copy(e->msg, (int)sizeof e->msg, a, b);
    __threadfence();
    atomicExch(&e->set, 1);
    if (e->flag) atomicExch(e->flag, 1); /* the loop's "any error" word (NS_MECH_CUDA_ERRORS_FLAGGED) */
#else
    (void)pp, (void)file, (void)line, (void)a, (void)b;
#endif
}
#undef hoc_execerror
#undef hoc_execerr_ext
#undef hoc_warning
#undef exit
#undef abort
#define hoc_execerror(a, b) nsv_dev_error(p, __FILE__, __LINE__, (a), (b))
#define hoc_execerr_ext(...) nsv_dev_error(p, __FILE__, __LINE__, "hoc_execerr_ext", NULL)
#define hoc_warning(a, b) printf("neurosolve: %s:%d: %s %s\n", __FILE__, __LINE__, (a) ? (a) : "", (b) ? (b) : "")
#define exit(n) nsv_dev_error(p, __FILE__, __LINE__, "exit() in VERBATIM C", NULL)
#define abort() nsv_dev_error(p, __FILE__, __LINE__, "abort() in VERBATIM C", NULL)
/* The device's stop where a hoc Random or Vector is needed (NSV_AFTER_TOP's macros: nrn_random_pick
 * and the Vector calls above, reached only where the C found a handle, which hoc never gave here) */
static __device__ inline double nsv_dev_hoc_only(const ns_mech_ppack *pp, const char *file, int line, const char *what) {
    nsv_dev_error(pp, file, line, what, "needs NEURON's hoc interpreter, which neurosolve does not have");
    return 0.0;
}
#endif
#endif
