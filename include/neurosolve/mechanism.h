/* neurosolve: the mechanism ABI, what code generated from NMODL compiles against.
 *
 * A mechanism library (neurosolve mechanisms build DIR) exports one symbol,
 * NS_MECH_CATALOGUE_SYMBOL, a function returning its ns_mech_catalogue. Each
 * mechanism is described by an ns_mech_desc (names, defaults, ions, entry
 * points) and runs over an ns_mech_ppack: a structure of arrays over the
 * mechanism's instances, with a node index per instance into the loop's
 * compartment arrays (docs/mechanisms.md, "ABI").
 *
 * This header is self-contained (no other neurosolve header) so that the
 * generated C and CUDA need nothing else. C11 and C++ clean; no CUDA types. */
#ifndef NEUROSOLVE_MECHANISM_H
#define NEUROSOLVE_MECHANISM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 2: ns_mech_desc.cuda_net_receive (a library built for 1 is refused)
 * 3: ns_mech_desc.has_random, random_field (random numbers); n_pointers,
 *    pointer_names and ns_mech_ppack.pointer (POINTER); ns_mech_ppack.area
 *    and .diam (area/diam in a mechanism); events (ns_mech_ppack.ev*,
 *    ns_mech_desc.n_weights and after)
 * 4: ns_mech_desc.hooks (BEFORE/AFTER blocks, CONSTRUCTOR, DESTRUCTOR) and
 *    n_ftables, ftable_names, ftable_dims; ns_mech_ppack.ftable (FUNCTION_TABLE);
 *    ns_mech_desc.jac_init, jac_current, jac_state, jac_why_not (derivatives).
 * 5: the derivatives as vector-Jacobian products: vjp_init, vjp_current,
 *    vjp_state, vjp_why_not in the place of jac_* (a version 4 library loads
 *    without them); ns_mech_ppack.error (a mechanism's errors: NEURON's
 *    hoc_execerror) and ns_mech_desc.thread_unsafe; ns_mech_desc.cuda_net_init
 *    and cuda_why_not; ns_mech_ppack.wvec, .dev and ns_mech_event.conn
 *    (per-connection state, self events, net_event and net_move on the GPU).
 *    A library built for 3 or 4 still loads, without them.
 * 6: ns_mech_desc.fused_index, cuda_fused_current, cuda_fused_state: a library's
 *    density mechanisms in one launch per phase (ns_mech_fused below). A
 *    library built for 3 to 5 still loads, without them (one launch per
 *    mechanism and phase).
 * 7: ns_mech_desc.vjp_init_n, vjp_current_n, vjp_state_n: the derivatives over
 *    all of a call's instances at once; ns_mech_desc.cuda_hooks: the BEFORE/AFTER
 *    blocks and a density mechanism's CONSTRUCTOR on the device. A library built
 *    for 3 to 6 still loads, without them (the gradients call vjp_* once per
 *    instance; a mechanism with hooks stays off the GPU).
 * 8: the derivatives' ion lanes: the vjp_* and vjp_*_n products add the adjoints
 *    of the ion values an instance reads (ena, cai, ica, ...) after the GLOBALs'
 *    (4 per USEION of desc->ions: e, ci, co, i), and a field the entry point
 *    loads from an ion (cai of a concentration writer) takes the ion's adjoint
 *    as its input's; ns_mech_desc.cuda_errors and ns_mech_error.flag (whether the
 *    device code can record an error; older libraries: it may, read after every
 *    interval). A library built for 3 to 7 still loads; the gradients refuse its
 *    mechanisms where an ion's values change (docs/gradients.md); and
 *    ns_mech_desc.vjp_net_receive: the derivative of a point process's NET_RECEIVE
 *    (the gradients of synapses and weights; without it, a library's point
 *    processes are not differentiable); ns_mech_desc.n_ldifus, ldifus_field,
 *    ldifus_coef: LONGITUDINAL_DIFFUSION (the CPU loop's diffusion between
 *    segments after the states; none in an older library).
 * 9: ns_mech_desc.vjp_init_n_ci, vjp_current_n_ci, vjp_state_n_ci: the derivatives over a
 *    block with constant ion values (no lanes for e, ci, co). A library built for 3 to 8
 *    still loads, without them (the gradients call vjp_*_n).
 * 10: ns_mech_desc.cuda_vjp_init, cuda_vjp_current, cuda_vjp_state: vjp_*_n on the device
 *    (a density mechanism's, where it has CUDA code). A library built for 3 to 9 still
 *    loads, without them. */
#define NS_MECH_ABI_VERSION 10
#define NS_MECH_ABI_OLDEST 3 /* the oldest version a library may have been built for */
#define NS_MECH_CATALOGUE_SYMBOL "ns_mech_catalogue_v1"

/* exp for the host loops: the generated mechanisms' host code (nsm_exp; the
 * CUDA code calls the C library's exp) and the CPU simulation loop. */
#if defined(__GNUC__) || defined(__clang__)
#define NS_MECH_ALWAYS_INLINE __attribute__((always_inline))
#else
#define NS_MECH_ALWAYS_INLINE
#endif
/* exp(x) in arithmetic the compiler vectorises (no table, no call): x =
 * k ln2 + r with |r| <= ln2/2 (ln2 in two parts, Cody and Waite), exp(r) by
 * a polynomial of degree 11 (its error below 2^-55 of the result), then 2^k in two factors (so that results down to the smallest subnormal
 * and up to DBL_MAX come out). Within 1 ulp of the C library's exp; where
 * they differ the last bit does (docs/simulation.md, "CPU loop": the effect
 * on traces; tests/sim/test_exp_lanes.c checks it). NaN in, NaN out; below
 * -745.2: 0; above 709.8: Inf. */
static inline NS_MECH_ALWAYS_INLINE double ns_mech_exp(double x) {
    const double inv_ln2 = 1.4426950408889634074, shift = 6755399441055744.0; /* 1.5 * 2^52 */
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double xc = x < -746.0 ? -746.0 : x; /* NaN stays NaN here... */
    xc = xc > 710.0 ? 710.0 : xc;
    const double xs = xc == xc ? xc : 0.0; /* ...and 0 for the bits */
    /* k = round(xs / ln2), its halves k1 + k2 = k, all as doubles: AVX2 has
     * no 64-bit arithmetic shift, so no signed 64-bit integers here */
    const double kd = (xs * inv_ln2 + shift) - shift;
    const double k1 = (kd * 0.5 + shift) - shift, k2 = kd - k1; /* |k1|, |k2| <= 539 */
    const double r = (xs - kd * ln2_hi) - kd * ln2_lo;
    /* exp(r) = 1 + (r + r^2 q(r)), q of degree 9 in Estrin's scheme (a short
     * dependency chain: independent products the core overlaps); q's
     * coefficients are the Chebyshev fit of (exp(r) - 1 - r) / r^2 on
     * [-ln2/2, ln2/2] (mpmath.chebyfit, 40 digits, rounded to double): the
     * polynomial is within 1.6e-17 (2^-55.8) of exp(r) relatively, measured
     * at 2,001 points in 40 digits. It replaced the Taylor series to r^13 in
     * Horner's form (a 26-operation dependency chain), for a faster CPU
     * loop (docs/simulation.md) */
    const double r2 = r * r, r4 = r2 * r2;
    const double b0 = 0.5000000000000001 + 0.16666666666666669 * r;
    const double b1 = 0.04166666666662413 + 0.008333333333330062 * r;
    const double b2 = 0.0013888888917213717 + 0.00019841269863053618 * r;
    const double b3 = 2.4801521295954376e-05 + 2.7557268459997064e-06 * r;
    const double b4 = 2.7620088445409746e-07 + 2.510038549551032e-08 * r;
    const double q = ((b0 + b1 * r2) + (b2 + b3 * r2) * r4) + b4 * (r4 * r4);
    const double p = 1.0 + (r + r2 * q);
    /* 2^k = 2^k1 * 2^k2, each exponent within the normal range: k + 1023 + shift
     * holds k + 1023 in its low mantissa bits, shifted into the exponent field */
    double e1 = k1 + (1023.0 + shift), e2 = k2 + (1023.0 + shift);
    uint64_t u1, u2;
    memcpy(&u1, &e1, sizeof u1);
    memcpy(&u2, &e2, sizeof u2);
    u1 <<= 52;
    u2 <<= 52;
    double s1, s2;
    memcpy(&s1, &u1, sizeof s1);
    memcpy(&s2, &u2, sizeof s2);
    const double y = p * s1 * s2;
    return xc == xc ? y : x;
}

#if defined(__CUDACC__)
#define NS_MECH_HD __host__ __device__
#else
#define NS_MECH_HD
#endif
/* NEURON 9's nrn_nernst (src/nrnoc/eion.cpp) with its gas constant and
 * Faraday constant (2019 SI, as NEURON 9.0.2 reports h.R, h.FARADAY):
 * ktf = 1000 R (celsius + 273.15) / F [mV], computed once by the loops, and
 * e of an ion of charge `charge` from its internal and external
 * concentrations (ns_mech_nernst is the two in one) */
static inline NS_MECH_HD double ns_mech_ktf(double celsius) {
    return 1000. * 8.31446261815324 * (celsius + 273.15) / 96485.33212331001;
}
static inline NS_MECH_HD double ns_mech_nernst_ktf(double ci, double co, int charge, double ktf) {
    return charge == 0 ? 0.0 : ci <= 0.0 ? 1e6 : co <= 0.0 ? -1e6 : ktf / charge * log(co / ci);
}

typedef enum ns_mech_kind {
    NS_MECH_DENSITY = 0, /* SUFFIX: one instance per compartment, currents in mA/cm^2 */
    NS_MECH_POINT = 1    /* POINT_PROCESS: currents in nA, scaled by weight = 1e2/area[um^2] */
} ns_mech_kind;

/* What a mechanism does with one ion (USEION), bit flags. */
enum {
    NS_MECH_ION_READ_E = 1,   /* reads the reversal potential (ena) */
    NS_MECH_ION_READ_CI = 2,  /* reads the internal concentration (nai) */
    NS_MECH_ION_READ_CO = 4,  /* reads the external concentration (nao) */
    NS_MECH_ION_READ_I = 8,   /* reads the ion's total current (ina) */
    NS_MECH_ION_WRITE_I = 16, /* contributes to the current: ion i += I, didv += dI/dv */
    NS_MECH_ION_WRITE_CI = 32,/* writes the internal concentration (the loop then updates e by Nernst) */
    NS_MECH_ION_WRITE_CO = 64,/* writes the external concentration */
    NS_MECH_ION_WRITE_E = 128 /* writes the reversal potential (WRITE ena: e then not by Nernst) */
};

/* One ion as the loop stores it: arrays over ion slots. */
typedef struct ns_mech_ion_view {
    double *e;        /* reversal potential [mV] */
    double *ci, *co;  /* internal and external concentration [mM] */
    double *i;        /* total current of the ion [mA/cm^2]: zeroed by the loop before current();
                         NULL when no mechanism reads it (current() then skips it) */
    double *didv;     /* its slope d i / d v [S/cm^2]; NULL as i */
    const int *index; /* instance -> ion slot, used only with ppack.node_index; NULL (and always
                         on the contiguous path): the slot is the instance's node index */
} ns_mech_ion_view;

/* A spike of a point process's net_event on the GPU loop (source: the
 * simulation's spike source number), as the network's exchange takes it. */
typedef struct ns_mech_spike {
    double t;
    int64_t source;
} ns_mech_spike;

/* ABI 5: the GPU loop's events of one point type (device memory; q_t NULL:
 * none), which the device versions of ns_mech_net_send, ns_mech_net_event and
 * ns_mech_net_move use (docs/mechanisms.md, "Events"). Instance i's pending
 * self events are slots [i * slots, (i + 1) * slots) of the q_ arrays. */
typedef struct ns_mech_dev_events {
    int slots, n_weights;   /* self events an instance may have pending; NET_RECEIVE's arguments */
    double *q_t, *q_flag;   /* a pending self event's time [ms] and flag */
    int64_t *q_seq;         /* its number within the instance, in send order (-1: a free slot) */
    int32_t *q_conn;        /* the weight vector it carries (ppack.wvec's; -1: zeros, sent from INITIAL) */
    int64_t *next_seq;      /* per instance: the next self event's number */
    int64_t *tq;            /* per instance: the number of its latest flag-1 self event (net_move's) */
    const int64_t *source;  /* per instance: its spike source (net_event), -1: none */
    int64_t wvec_len;       /* doubles in ppack.wvec */
    ns_mech_spike *spikes;  /* net_event's spikes, spikes_n of them (atomic), at most spikes_cap */
    unsigned long long *spikes_n;
    int64_t spikes_cap;
    const double *until;    /* the step's bound t_j + dt/2: the self events due at it are delivered */
    const double *t_step;   /* the step's start t_j: WATCH conditions are checked there first */
    /* WATCH (n_watch per instance, at [instance * n_watch + k]; w_on NULL: none): on, its flag,
     * and whether it held at the last check */
    int n_watch;
    unsigned char *w_on, *w_above;
    double *w_flag;
    /* the first error (0: none; NS_MECH_DEV_*), its instance and time */
    int *error;
    int *error_inst;
    double *error_t;
} ns_mech_dev_events;

enum {
    NS_MECH_DEV_FULL = 1,   /* a self event with every slot of the instance taken */
    NS_MECH_DEV_SEND = 2,   /* net_send with a negative delay */
    NS_MECH_DEV_MOVE = 3,   /* net_move with no flag-1 self event pending, or to a time before t */
    NS_MECH_DEV_EVENT = 4,  /* net_event at a time before t */
    NS_MECH_DEV_SPIKES = 5  /* more net_event spikes in an interval than spikes_cap */
};

/* The instances of one mechanism that one call runs over. For the CUDA entry
 * points the structure itself is on the host (passed to the kernel by value)
 * and every pointer in it, field and ion included, is device memory. */
typedef struct ns_mech_ppack {
    int n;                   /* instances */
    int node_begin;          /* node_index NULL: instance i sits at node node_begin + i (fast path) */
    const int *node_index;   /* else: instance -> node */
    double t, dt, celsius;   /* [ms], [ms], [degC] */
    double *v;               /* [mV] per node (read) */
    double *rhs;             /* per node: current() subtracts I [mA/cm^2] */
    double *d;               /* per node: current() adds dI/dv [S/cm^2] */
    const double *weight;    /* point processes: per instance 1e2/area [1/um^2 * 1e2]; NULL for density */
    double *const *field;    /* desc->n_fields arrays of n doubles: parameters, assigned, states */
    double *global;          /* desc->n_globals values (GLOBAL parameters, usetable_*) */
    double *table;           /* desc->table_size doubles (TABLE), kept by table_update */
    const ns_mech_ion_view *ion; /* desc->n_ions views, in the order of desc->ions */
    /* POINTER variables (ABI version 3): desc->n_pointers arrays of n
     * addresses, where each instance's POINTER reads and writes (what the
     * simulation connected it to); NULL when desc->n_pointers is 0 */
    double *const *const *pointer;
    /* area/diam in a mechanism (ABI 3): per node, indexed as v: the segment's area [um^2]
     * (NEURON's 100 at a zero-area node, where only point processes sit) and its diameter [um]
     * (NEURON's: the mean over the segment's length of the 3D points' diameters) */
    const double *area, *diam;
    /* Events (ABI 3, NET_RECEIVE's net_send / net_event / net_move, docs/mechanisms.md
     * "Events"): the host loop's queue, called by the generated code through
     * ns_mech_net_send and the two below; ev NULL: the loop has none (the calls do nothing).
     * net_send(t, flag, w): a self event at absolute time t for `instance` with the
     * weight vector w (NULL from INITIAL); net_event(t): the instance's spike at t;
     * net_move(t): its pending flag-1 self event to t. Host pointers, never called on a device. */
    void *ev;
    void (*ev_send)(void *ev, int instance, double t, double flag, double *w);
    void (*ev_event)(void *ev, int instance, double t);
    void (*ev_move)(void *ev, int instance, double t);
    /* WATCH k of NET_RECEIVE with its flag; first: the first WATCH of this
     * NET_RECEIVE call, which ends the instance's earlier watches (nocmodl's _watch_rm) */
    void (*ev_watch)(void *ev, int instance, int k, double flag, int first);
    /* FOR_NETCONS: the weight vector of the instance's connection q, NULL past the last */
    double *(*ev_netcon)(void *ev, int instance, int q);
    /* FUNCTION_TABLE values (ABI 4): desc->n_ftables tables, which the simulation
     * takes from the user (docs/mechanisms.md, "FUNCTION_TABLE"); for the CUDA
     * entry points a copy in device memory, its arrays too; NULL when
     * desc->n_ftables is 0 */
    const struct ns_mech_ftable *ftable;
    /* ABI 5: where the mechanism's C reports an error that stops the
     * simulation (NEURON's hoc_execerror, exit or abort in VERBATIM C): the
     * loop's, one per lane block and thread; the first error is kept and
     * the entry points of every mechanism bound to it then return at once;
     * the loop stops after the step and returns it as an ns_status
     * (docs/mechanisms.md, "Errors in a mechanism"). For the CUDA entry points
     * of a network's point type: device memory, which the device's
     * hoc_execerror fills and the GPU loop reads at each interval's end
     * ("VERBATIM on the GPU"). NULL: none. */
    struct ns_mech_error *error;
    /* ABI 5, the CUDA NET_RECEIVE and its INITIAL (device memory): the weight
     * vectors of the connections (desc->n_weights doubles each), event k's at
     * wvec + events[k].conn * n_weights, read and written back; NULL: the
     * weight is the event's (a NET_RECEIVE of the weight alone) */
    double *wvec;
    /* ABI 5: the GPU loop's self events and net_event spikes (above) */
    ns_mech_dev_events dev;
} ns_mech_ppack;

/* A mechanism's error (ABI 5), filled in by its C; set is 0 until then. */
typedef struct ns_mech_error {
    int set;
    int line;       /* the .mod file's line */
    char mech[64];  /* the mechanism (SUFFIX or POINT_PROCESS name) */
    char file[128]; /* the .mod file */
    char msg[256];  /* what it said */
    /* ABI 8 (appended): device memory, NULL, or the GPU loop's one-word "any error" of the
     * records it reads together; the device's error (a library whose descriptor says
     * NS_MECH_CUDA_ERRORS_FLAGGED) sets it to 1 after the record, so that the loop reads one
     * word after an interval and the records only when it is set */
    int *flag;
} ns_mech_error;

/* VERBATIM C's error context (ABI 5, an optional symbol): the calling thread's
 * entry point, bound to its ppack's error channel (err), its setjmp buffer
 * (jmp, a jmp_buf *: hoc_execerror jumps back there) and its mechanism. It
 * lives in libneurosolve (a mechanism library may be unloaded while the
 * simulation's threads live on): a library whose C has VERBATIM exports
 * nsm_NAME_verbatim_bind (NS_MECH_VERBATIM_BIND, NAME the mechanism), which
 * ns_mech_library_open calls with the accessor of the calling thread's
 * context. A library built before it (its context in its own thread-local
 * storage) has no such symbol and loads as before. */
typedef struct ns_mech_verbatim_ctx {
    struct ns_mech_error *err;
    void *jmp;
    const char *mech;
} ns_mech_verbatim_ctx;
typedef ns_mech_verbatim_ctx *(*ns_mech_verbatim_ctx_fn)(void);
#define NS_MECH_VERBATIM_BIND "nsm_%s_verbatim_bind"


/* The generated code's event calls: on the host the loop's queue (ppack.ev);
 * on the device (ABI 5) the point type's self-event slots, WATCH state and
 * spike buffer (ppack.dev); FOR_NETCONS is host only (a mechanism with it has
 * no CUDA entry points). ns_mech_watch's value (ABI 5): the condition's value
 * at the call, which the device keeps (the host asks watch_value). */
#if defined(__CUDACC__) /* device functions (declared in nvcc's host pass too: kernels name them) */
static __device__ inline void ns_mech_dev_fail(const ns_mech_ppack *p, int i, int code, double t) {
    if (atomicCAS(p->dev.error, 0, code) == 0) {
        *p->dev.error_inst = i;
        *p->dev.error_t = t;
    }
}
/* a self event at t with flag and weight vector conn (-1: zeros) in a free slot; its number, -1 when full */
static __device__ inline int64_t ns_mech_dev_push(const ns_mech_ppack *p, int i, double t, double flag, int32_t conn) {
    const ns_mech_dev_events *e = &p->dev;
    const int64_t at = (int64_t)i * e->slots;
    int s = 0;
    while (s < e->slots && e->q_seq[at + s] >= 0) ++s;
    if (s == e->slots) {
        ns_mech_dev_fail(p, i, NS_MECH_DEV_FULL, t);
        return -1;
    }
    const int64_t seq = e->next_seq[i]++;
    e->q_t[at + s] = t;
    e->q_flag[at + s] = flag;
    e->q_seq[at + s] = seq;
    e->q_conn[at + s] = conn;
    return seq;
}
/* NEURON's net_send: a self event at t with flag, carrying the weight vector w */
static __device__ inline void ns_mech_dev_send(const ns_mech_ppack *p, int i, double t, double flag, const double *w) {
    const ns_mech_dev_events *e = &p->dev;
    if (!e->q_t) return;
    if (!(t >= p->t)) {
        ns_mech_dev_fail(p, i, NS_MECH_DEV_SEND, t);
        return;
    }
    const int64_t wi = w && p->wvec ? (int64_t)(w - p->wvec) : -1;
    const int64_t seq =
        ns_mech_dev_push(p, i, t, flag, wi >= 0 && wi < e->wvec_len ? (int32_t)(wi / e->n_weights) : -1);
    if (seq >= 0 && flag == 1.0) e->tq[i] = seq;
}
/* WATCH k with its flag from NET_RECEIVE (value: the condition's now); the
 * first of a call ends the instance's others; one that holds already waits
 * until it has not (events.c's ev_watch) */
static __device__ inline void ns_mech_dev_watch(const ns_mech_ppack *p, int i, int k, double flag, int first,
                                                double value) {
    const ns_mech_dev_events *e = &p->dev;
    if (!e->w_on) return;
    const int64_t at = (int64_t)i * e->n_watch;
    for (int q = 0; first && q < e->n_watch; ++q) e->w_on[at + q] = 0;
    e->w_on[at + k] = 1;
    e->w_flag[at + k] = flag;
    e->w_above[at + k] = value >= -1e-11;
}
/* NEURON's net_move: the latest flag-1 self event, still pending, to t */
static __device__ inline void ns_mech_dev_move(const ns_mech_ppack *p, int i, double t) {
    const ns_mech_dev_events *e = &p->dev;
    if (!e->q_t) return;
    const int64_t at = (int64_t)i * e->slots;
    for (int s = 0; s < e->slots && t >= p->t; ++s)
        if (e->q_seq[at + s] >= 0 && e->q_seq[at + s] == e->tq[i]) {
            e->q_t[at + s] = t;
            return;
        }
    ns_mech_dev_fail(p, i, NS_MECH_DEV_MOVE, t);
}
/* NEURON's net_event: a spike of the instance's source at t */
static __device__ inline void ns_mech_dev_event(const ns_mech_ppack *p, int i, double t) {
    const ns_mech_dev_events *e = &p->dev;
    if (!e->q_t) return;
    if (!(t >= p->t)) {
        ns_mech_dev_fail(p, i, NS_MECH_DEV_EVENT, t);
        return;
    }
    if (e->source[i] < 0) return; /* no connection from it */
    const unsigned long long k = atomicAdd(e->spikes_n, 1ULL);
    if (k < (unsigned long long)e->spikes_cap) e->spikes[k] = ns_mech_spike{t, e->source[i]};
    else ns_mech_dev_fail(p, i, NS_MECH_DEV_SPIKES, t);
}
#endif
#if defined(__CUDA_ARCH__)
#define ns_mech_net_send(p, i, t, flag, w) ns_mech_dev_send((p), (i), (t), (flag), (w))
#define ns_mech_net_event(p, i, t) ns_mech_dev_event((p), (i), (t))
#define ns_mech_net_move(p, i, t) ns_mech_dev_move((p), (i), (t))
#define ns_mech_watch(p, i, k, flag, first, value) ns_mech_dev_watch((p), (i), (k), (flag), (first), (value))
#define ns_mech_netcon(p, i, q) ((double *)0)
#else
#define ns_mech_net_send(p, i, t, flag, w) ((p)->ev ? (p)->ev_send((p)->ev, (i), (t), (flag), (w)) : (void)0)
#define ns_mech_net_event(p, i, t) ((p)->ev ? (p)->ev_event((p)->ev, (i), (t)) : (void)0)
#define ns_mech_net_move(p, i, t) ((p)->ev ? (p)->ev_move((p)->ev, (i), (t)) : (void)0)
#define ns_mech_watch(p, i, k, flag, first, value) \
    ((p)->ev ? (p)->ev_watch((p)->ev, (i), (k), (flag), (first)) : (void)0)
#define ns_mech_netcon(p, i, q) ((p)->ev ? (p)->ev_netcon((p)->ev, (i), (q)) : (double *)0)
#endif

/* A FUNCTION_TABLE's values, NEURON's hoc table_NAME(): over dims (1 to 4)
 * arguments, values[size[0]][size[1]]... in row order; per argument k the
 * abscissae x[k] (size[k] increasing values) or, x[k] NULL, size[k] points
 * evenly from lo[k] to hi[k]. A lookup interpolates linearly in each
 * argument (for 1 and 2 arguments; 3 and 4 take the entry below, as NEURON's
 * hoc_func_table) and holds the end values outside the range. values NULL:
 * not supplied. */
typedef struct ns_mech_ftable {
    int dims;
    int size[4];
    const double *x[4];
    double lo[4], hi[4];
    const double *values;
} ns_mech_ftable;

typedef struct ns_mech_ion_use {
    const char *name; /* "na", "k", "ca", "cl" or a VALENCE ion */
    int charge;
    unsigned flags;   /* NS_MECH_ION_* */
} ns_mech_ion_use;

/* An event for a CUDA NET_RECEIVE launch (device memory): NET_RECEIVE of
 * `instance` with `weight`, the mechanism's t set to `t` [ms]; conn (ABI 5):
 * its connection's weight vector in ppack.wvec, where that is not NULL. */
typedef struct ns_mech_event {
    double t, weight;
    int32_t instance, conn;
} ns_mech_event;

typedef void (*ns_mech_fn)(ns_mech_ppack *p);
/* Returns 0 when the launch succeeded, -1 otherwise. */
typedef int (*ns_mech_cuda_fn)(const ns_mech_ppack *p, void *stream);
/* A CUDA NET_RECEIVE launch over events[range[0] .. range[1]) (range: two
 * device int64 read by the kernel, so that the host need not know them),
 * grouped by instance and in delivery order within an instance: one thread
 * applies an instance's events one after the other (deterministic). `max`
 * (host) bounds range[1] - range[0] and sizes the grid. */
typedef int (*ns_mech_cuda_net_fn)(const ns_mech_ppack *p, const ns_mech_event *events, const int64_t *range,
                                   int64_t max, void *stream);

/* ns_mech_desc.hooks: NEURON's BEFORE/AFTER blocks (nocmodl's BA blocks),
 * where the loops run them (docs/mechanisms.md, "BEFORE, AFTER, CONSTRUCTOR"),
 * and CONSTRUCTOR/DESTRUCTOR, once per instance when the instances are made
 * and when they are freed (no v, no time: p->v is NULL then). */
enum {
    NS_MECH_BEFORE_BREAKPOINT = 0, /* each step, before the currents */
    NS_MECH_AFTER_SOLVE,           /* each step, after the states (v is the step's new v) */
    NS_MECH_BEFORE_INITIAL,        /* finitialize, before the INITIAL blocks */
    NS_MECH_AFTER_INITIAL,         /* finitialize, after them */
    NS_MECH_BEFORE_STEP,           /* finitialize's end and each step's, after AFTER SOLVE */
    NS_MECH_CONSTRUCTOR,
    NS_MECH_DESTRUCTOR,
    NS_MECH_N_HOOKS
};

/* ABI 6: one launch per phase for all of a library's density mechanisms
 * (docs/mechanisms.md, "One launch per phase"). current: a thread per node
 * of a GPU group reads v once, calls the per-instance function of each
 * mechanism inserted at the node in the order of `slots` (the model's),
 * accumulates rhs and d in registers and writes them once. state: thread x
 * runs instance x of each slot in turn, and after one that writes a
 * concentration sets e by Nernst at its node where `nernst` says so; the
 * caller ends a state launch after each such slot (a later slot's state()
 * may read the concentration). Deterministic: a node's sums in the order of
 * the per-mechanism launches, no atomics. Everything is device memory but
 * the structure itself (passed by value). */
#define NS_MECH_FUSED_IONS 8
typedef struct ns_mech_fused_slot {
    int32_t index;    /* the mechanism's ns_mech_desc.fused_index */
    int32_t n_ions;   /* its desc->n_ions */
    ns_mech_ppack p;  /* its instances' storage as its launchers take it (t, dt, celsius unused) */
    /* state: per ion of its desc whose concentration it writes, the nodes (over the group's)
     * where e follows by Nernst after its state(); NULL: none */
    const unsigned char *nernst[NS_MECH_FUSED_IONS];
    int32_t charge[NS_MECH_FUSED_IONS];
} ns_mech_fused_slot;

typedef struct ns_mech_fused {
    int64_t nodes;                   /* the group's nodes: one thread each */
    int32_t n_slots, slot_lo, slot_hi; /* this launch runs slots [slot_lo, slot_hi) */
    const ns_mech_fused_slot *slots; /* n_slots, in the model's order */
    /* the mechanisms at node x of local cell c = node_cell[x]: row r = cell_row[c] + x -
     * cell_base[c] holds entries [row_begin[r], row_begin[r + 1]), each slot << 24 | rank in
     * increasing slot order; the slot's instance there is cell_inst[c * n_slots + slot] + rank */
    const int32_t *node_cell, *cell_row, *row_begin, *entries, *cell_inst;
    const int64_t *cell_base;
    double *v, *rhs, *d;             /* the group's: current() adds to rhs and d as they are */
    double t, dt, celsius;
    const double *t_dev;             /* not NULL: the phase's t is read here (a replayed CUDA graph) */
    double ktf;                      /* 1000 R (celsius + 273.15) / F, as ns_mech_nernst */
} ns_mech_fused;
/* Returns 0 when the launch succeeded, -1 otherwise. */
/* ABI 10: a vector-Jacobian product over a block's instances on the device (ns_mech_desc.cuda_vjp_*) */
typedef int (*ns_mech_cuda_vjp_fn)(const ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields,
                                   double *l_globals, void *stream);
typedef int (*ns_mech_cuda_fused_fn)(const ns_mech_fused *f, void *stream);

typedef struct ns_mech_desc {
    int abi_version;                /* NS_MECH_ABI_VERSION */
    const char *name;               /* SUFFIX or POINT_PROCESS name */
    ns_mech_kind kind;
    int n_fields;                   /* = n_params + n_assigned + n_states */
    int n_params, n_assigned, n_states;
    const char *const *field_names; /* parameters, then assigned, then states */
    const double *field_defaults;   /* the PARAMETER values; 0 for the rest */
    int n_globals;
    const char *const *global_names;
    const double *global_defaults;
    int n_ions;
    const ns_mech_ion_use *ions;
    int table_size;                 /* doubles of ppack.table (0: no TABLE) */
    int has_net_receive;
    /* Host entry points over all n instances (vectorisable loops). init and
     * state write states; current accumulates rhs, d and the ion currents. */
    ns_mech_fn init, current, state;
    void (*net_receive)(ns_mech_ppack *p, int instance, double weight);
    /* Rebuild the TABLEs when usetable is on and celsius or a DEPEND global
     * changed (host memory); returns 1 when it rebuilt them. NULL: no TABLE. */
    int (*table_update)(ns_mech_ppack *p);
    /* CUDA launchers, one thread per instance; NULL when built without CUDA.
     * Point processes add into rhs, d and the ion arrays atomically. */
    ns_mech_cuda_fn cuda_init, cuda_current, cuda_state;
    /* NET_RECEIVE over a device event list (ns_mech_cuda_net_fn); NULL without
     * NET_RECEIVE or without CUDA (ABI version 2). */
    ns_mech_cuda_net_fn cuda_net_receive;
    /* Random numbers (normrand, exprand, scop_random, set_seed, NEURON 9's
     * RANDOM variables; ABI version 3): has_random, the instance's streams (0:
     * none; stream 0 for normrand and the like, stream k + 1 for RANDOM
     * variable k); fields random_field + 4 s .. + 3 are stream s: ids 1 and
     * 2, which the loop sets before init (1: the cell, 2: the node within
     * the cell, or for a point process the synapse's index,
     * ns_sim_add_synapse's order), then for stream 0 its seed and its
     * counter (0 at init), for a RANDOM variable's nrnran123 stream id 3 (the
     * mechanism's key plus s) and its position (0), or what
     * ns_sim_synapse_set gave them. docs/mechanisms.md, "Random numbers". */
    int has_random, random_field;
    /* POINTER variables (ABI version 3), in declaration order: ppack.pointer[k]
     * holds each instance's address of pointer_names[k]. */
    int n_pointers;
    const char *const *pointer_names;
    /* Events (ABI 3, docs/mechanisms.md "Events"). NET_RECEIVE's arguments: the
     * weight, then per-connection state (NEURON's NetCon weight vector; 0
     * without NET_RECEIVE). artificial: an ARTIFICIAL_CELL (reads no v and no
     * ion; NEURON's IntFire1). events: NS_MECH_EV_* flags of what it calls. */
    int n_weights;
    int artificial;
    unsigned events;
    /* NET_RECEIVE with the connection's weight vector w (n_weights values,
     * written back: per-connection state) and the event's flag (0 for a
     * connection's event, net_send's flag for a self event) */
    void (*net_receive_w)(ns_mech_ppack *p, int instance, double *w, double flag);
    /* NET_RECEIVE's INITIAL block for one connection (finitialize), NULL: none */
    void (*net_init)(ns_mech_ppack *p, int instance, double *w);
    /* WATCH statements (conditions numbered in file order): watch_value(p,
     * instance, k) is condition k's value, > 0 where it holds (nocmodl's
     * a - b for a > b); NULL and 0: none */
    int n_watch;
    double (*watch_value)(ns_mech_ppack *p, int instance, int k);
    /* ABI 4: the BEFORE/AFTER blocks, CONSTRUCTOR and DESTRUCTOR over all n
     * instances (NS_MECH_BEFORE_BREAKPOINT ...; NULL: none), on the host (the
     * device's: cuda_hooks). */
    ns_mech_fn hooks[NS_MECH_N_HOOKS];
    /* ABI 4: FUNCTION_TABLEs, by name (the NMODL name) and number of arguments;
     * ppack.ftable[k] holds table k's values (on the CPU and GPU loops). */
    int n_ftables;
    const char *const *ftable_names;
    const int *ftable_dims;
    /* Derivatives (ABI 5; the gradients, docs/gradients.md): the
     * vector-Jacobian products of instance `instance`'s INITIAL, current()
     * and state() as the host entry points compute them: l_in += J^T l_out,
     * J the phase's Jacobian. Inputs (l_in, n_in = 1 + n_fields + n_globals
     * + 4 n_ions): v at its node, the instance's fields, the GLOBALs, and
     * (ABI 8) the ion values it reads that are no field, 4 per desc->ions
     * (e, ci, co, i; a field loaded from an ion, cai of a concentration
     * writer, stands for the ion's value as an input); outputs (l_out,
     * n_out): the fields after the phase (n_fields), and for current() then
     * its rhs and d contributions (n_fields + 2). p bound as for the phase
     * (v, t, dt, celsius, ions, a current table); nothing but l_in is
     * written. NULL when the translator
     * could not differentiate the mechanism: vjp_why_not says why (FILE:LINE
     * and the construct). */
    void (*vjp_init)(ns_mech_ppack *p, int instance, const double *l_out, double *l_in);
    void (*vjp_current)(ns_mech_ppack *p, int instance, const double *l_out, double *l_in);
    void (*vjp_state)(ns_mech_ppack *p, int instance, const double *l_out, double *l_in);
    const char *vjp_why_not;
    /* ABI 5: NULL, or why the mechanism is not thread-safe (FILE:LINE and the
     * construct: VERBATIM C with static or file-scope variables, NEURON's
     * "not thread safe"): the CPU loop then refuses more than one thread,
     * as NEURON's ParallelContext.nthread does (docs/mechanisms.md, "VERBATIM") */
    const char *thread_unsafe;
    /* ABI 5: NET_RECEIVE's INITIAL on the device, one call per connection
     * (events[k]: instance, conn; t 0) in the order given, which groups them by
     * instance in creation order (ns_mech_cuda_net_fn); NULL without it or
     * without CUDA. cuda_why_not: why the mechanism has no CUDA entry points
     * ("FILE:LINE: the construct"), NULL where it has them or the translator
     * knows no reason (built without CUDA). */
    ns_mech_cuda_net_fn cuda_net_init;
    const char *cuda_why_not;
    /* ABI 6: the library's fused launches (ns_mech_fused; one pair per library, shared by all
     * of its density mechanisms with CUDA code) and this mechanism's case in them; -1 and
     * NULL: not in them (a point process, no CUDA code, or compiled outside `mechanisms
     * build --cuda`) */
    int fused_index;
    ns_mech_cuda_fused_fn cuda_fused_current, cuda_fused_state;
    /* ABI 7: the vector-Jacobian products of vjp_* over all p->n instances in
     * one call (the same bits as vjp_* one instance at a time; one call per
     * mechanism and phase for the gradients): l_in += J^T l_out with one
     * row of p->n per output and input: output r of instance i at
     * l_out[r * p->n + i]; l_v per node, indexed as p->v (the instances of a
     * density mechanism's call sit at distinct nodes); l_fields n_fields rows
     * and l_globals n_globals rows (each instance's share) of p->n, then
     * (ABI 8) 4 n_ions rows of the ion values read, as in vjp_*. NULL
     * where vjp_* are, and in a library built for ABI 3 to 6. */
    void (*vjp_init_n)(ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields, double *l_globals);
    void (*vjp_current_n)(ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields, double *l_globals);
    void (*vjp_state_n)(ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields, double *l_globals);
    /* ABI 7: hooks[h] as a launch over the p->n instances on the device, where
     * the mechanism has CUDA code: the BEFORE/AFTER blocks, and a density
     * mechanism's CONSTRUCTOR (run once, at the first finitialize, as on the
     * host); NULL where hooks[h] is, and for a DESTRUCTOR (the mechanism then
     * has no CUDA entry points: cuda_why_not) and a point process's
     * CONSTRUCTOR (likewise). */
    ns_mech_cuda_fn cuda_hooks[NS_MECH_N_HOOKS];
    /* ABI 8 (appended after them): whether the CUDA entry points can record an error in
     * ppack.error (NS_MECH_CUDA_ERRORS_*, below); the GPU loop gives a mechanism that cannot
     * no error record and reads nothing for it */
    int cuda_errors;
    /* ABI 8: the vector-Jacobian product of NET_RECEIVE at instance
     * `instance` for a connection's event of weight `weight` (flag 0):
     * l_in += J^T l_out, outputs the fields after it (n_fields), inputs (l_in,
     * 2 + n_fields + n_globals) v at its node, the fields, the GLOBALs, then
     * the weight. p bound as for net_receive; nothing but l_in is written.
     * NULL where vjp_* are, without NET_RECEIVE, and in a library built for
     * ABI 3 to 7. */
    void (*vjp_net_receive)(ns_mech_ppack *p, int instance, double weight, const double *l_out, double *l_in);
    /* ABI 8: LONGITUDINAL_DIFFUSION of KINETIC states (NEURON's ldifus.cpp, docs/mechanisms.md
     * "LONGITUDINAL_DIFFUSION"): n_ldifus diffusing state elements (each element of an array
     * state its own), in NEURON's order; ldifus_field[j] the field of the j-th. ldifus_coef(p, j,
     * dc, vol) writes, for each of the p->n instances i bound as for state(), dc[i] = the
     * statement's flux coefficient (diffusion constant x cross-section area) and vol[i] = the
     * state's COMPARTMENT volume at element j; the CPU loop then solves the implicit
     * diffusion of field ldifus_field[j] along each cell's tree after every mechanism's
     * states. 0 and NULL: none. A mechanism with it has no CUDA entry points (cuda_why_not). */
    int n_ldifus;
    const int *ldifus_field;
    void (*ldifus_coef)(ns_mech_ppack *p, int j, double *dc, double *vol);
    /* ABI 9: vjp_init_n, vjp_current_n, vjp_state_n with the ion values e, ci, co that the
     * phase reads taken as constants (no lanes for them: a cheaper product); their rows of
     * l_globals are not written, the rest are the same bits. The gradients call them where
     * no mechanism of the model writes a concentration of an ion the mechanism uses (the
     * values are then constants of the run; docs/gradients.md "Cost"). NULL for a phase that
     * reads no such value, where vjp_*_n are NULL, and in a library built for ABI 3 to 8. */
    void (*vjp_init_n_ci)(ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields, double *l_globals);
    void (*vjp_current_n_ci)(ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields, double *l_globals);
    void (*vjp_state_n_ci)(ns_mech_ppack *p, const double *l_out, double *l_v, double *l_fields, double *l_globals);
    /* ABI 10: vjp_init_n, vjp_current_n, vjp_state_n on the device, one thread per instance
     * (the same rows; p, l_out, l_v, l_fields and l_globals in device memory, p bound as for
     * cuda_init, cuda_current, cuda_state); 0, or -1 when the launch failed. The same
     * operations per instance as the host's products (their values differ only where the
     * device's exp, pow and the like differ from the host's in the last bit). NULL for a
     * point process (its instances can share a node: l_v would need a sum across
     * threads), where vjp_*_n or the CUDA entry points are, and in a library built for ABI
     * 3 to 9. */
    ns_mech_cuda_vjp_fn cuda_vjp_init, cuda_vjp_current, cuda_vjp_state;
} ns_mech_desc;

/* ns_mech_desc.cuda_errors. UNKNOWN (0, a library built before the field or a descriptor that
 * does not say): may record one, without setting ns_mech_error.flag (the loop reads its record
 * after every interval). NONE: the device code cannot (no device C calls hoc_execerror,
 * hoc_execerr_ext, exit or abort). FLAGGED: it may, and sets ns_mech_error.flag with it. */
enum { NS_MECH_CUDA_ERRORS_UNKNOWN = 0, NS_MECH_CUDA_ERRORS_NONE = 1, NS_MECH_CUDA_ERRORS_FLAGGED = 2 };

enum {
    NS_MECH_EV_SEND = 1,  /* net_send (self events) */
    NS_MECH_EV_EVENT = 2, /* net_event (a spike source) */
    NS_MECH_EV_MOVE = 4,  /* net_move */
    NS_MECH_EV_INIT = 8,  /* INITIAL inside NET_RECEIVE */
    NS_MECH_EV_WATCH = 16, /* WATCH */
    NS_MECH_EV_NETCONS = 32 /* FOR_NETCONS */
};

typedef struct ns_mech_catalogue {
    int abi_version;
    int n;
    const ns_mech_desc *const *mechs;
} ns_mech_catalogue;

typedef const ns_mech_catalogue *(*ns_mech_catalogue_fn)(void);

#ifdef __cplusplus
}
#endif
#endif
