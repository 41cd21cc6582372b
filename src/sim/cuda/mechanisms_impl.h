/* Private to the GPU loop's mechanisms (sim/cuda/mechanisms.c: a model's density mechanisms;
 * sim/cuda/mechanisms_points.c: a network's point types): their storage on the device and the
 * helpers both use. */
#ifndef NS_SIM_CUDA_MECHANISMS_IMPL_H
#define NS_SIM_CUDA_MECHANISMS_IMPL_H

#include <string.h>
#include <cuda_runtime_api.h>

#include "sim/cuda/mechanisms.h"
#include "sim/cuda/library_fused.h"
#include "core/cuda_check.h"
#include "core/error.h"

/* A hook that the GPU loop runs on the host, as NEURON with CoreNEURON does: a point process's CONSTRUCTOR over
 * the host copy of the instances before it goes to the device, a DESTRUCTOR over the device's copy
 * brought back when the loop frees them (ns_gpu_host_hook) */
static inline int host_side_hook(const ns_mech_desc *d, int h) {
    return h == NS_MECH_DESTRUCTOR || (h == NS_MECH_CONSTRUCTOR && d->kind == NS_MECH_POINT);
}
/* BEFORE/AFTER blocks and a density mechanism's CONSTRUCTOR without device code
 * (ns_mech_desc.cuda_hooks, ABI 7: a library built for an older ABI) */
static inline int host_hooks(const ns_mech_desc *d) {
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (d->hooks[h] && !d->cuda_hooks[h] && !host_side_hook(d, h)) return 1;
    return 0;
}
static inline ns_status host_hooks_refused(const ns_mech_desc *d) {
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "simulation: mechanism %s has BEFORE/AFTER, CONSTRUCTOR or DESTRUCTOR blocks without device code "
                   "(its library was built for mechanism ABI %d: build it again with `neurosolve mechanisms build "
                   "--cuda`, or use the CPU backend; docs/mechanisms.md, \"BEFORE, AFTER, CONSTRUCTOR\")",
                   d->name, d->abi_version);
}

/* The device errors of n mechanisms (a model's density mechanisms, or a network's point types;
 * ns_mech_ppack.error): records only for those that may record one (ns_sim_gpu_error_slots),
 * after a one-word flag that the FLAGGED ones set with their record, in one device allocation;
 * host: the same bytes, where they are read (sim/cuda/mechanisms.c). Nothing where no mechanism
 * can fail. */
typedef struct gpu_errors {
    int32_t n_mechs, n_records, n_unflagged; /* the unflagged records first: read with the flag */
    int32_t *slot;       /* host: per mechanism its record, -1: none */
    unsigned char *dev;  /* device: the flag (an int), then the records at GPU_ERRORS_HEAD; NULL: none */
    unsigned char *host; /* host: the same, read into */
} gpu_errors;
#define GPU_ERRORS_HEAD 16 /* [bytes] the flag and padding before the records */

typedef struct gpu_mech {
    ns_mech_ppack p;       /* device pointers; t, dt, celsius set per call */
    double *fields;        /* device: n_fields arrays of p.n */
    int constructed;       /* a point type: its host CONSTRUCTOR ran over these instances */
    double **ptr_addr;     /* device: a density mechanism's POINTERs, n_pointers arrays of p.n addresses */
    double *ptr_unset;     /* device: the double an unconnected one reaches (ns_sim_create's initialisation) */
    void *allocs[16];
    int n_allocs;
} gpu_mech;

struct gpu_model {
    const sim_model *model;
    int64_t nodes;
    const int32_t *pos;  /* host: the group's position of each compartment (onchip: one shape); NULL: itself */
    double *v, *rhs, *d; /* the group's (device) */
    gpu_mech *m;
    unsigned char *constructed; /* per mechanism: its CONSTRUCTOR ran (the first finitialize) */
    gpu_errors m_err;           /* the mechanisms' device errors (ns_mech_ppack.error: nsv_dev_error) */
    int m_err_seen;             /* an error was read from m_err since finitialize */
    double *ion;            /* device: per ion j, e, ci, co, i, didv at [(5 * j + q) * nodes] */
    unsigned char *written; /* device: per ion j at [j * nodes]: e by Nernst there */
    double *geom;           /* device: area per node, then diam per node (ns_mech_ppack.area, .diam) */
    /* a network's synapses (ns_gpu_model_points): the point types present, in
     * NEURON's type order, their instances in the group's cell order */
    int32_t n_points;
    gpu_mech *pt;
    const ns_mech_desc **pt_desc;
    int32_t *pt_key;
    gpu_libfused *lf; /* the tree group's: the library's fused launches (sim/cuda/library_fused.h), or NULL */
    const double *t_dev[2]; /* not NULL: where the fused launches read t (current, state; ns_gpu_model_clock) */
    gpu_errors pt_err;     /* the point types' device errors (ns_mech_ppack.error: nsv_dev_error) */
};

static inline ns_status alloc_up(gpu_mech *gm, void **dst, const void *src, size_t bytes) {
    NS_CUDA_TRY(cudaMalloc(dst, bytes ? bytes : 8));
    gm->allocs[gm->n_allocs++] = *dst;
    if (src && bytes) NS_CUDA_TRY(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return NS_OK;
}

/* Instances for a hook on the host: cnt of them, their fields the n_fields arrays of cnt at f (host
 * memory), GLOBALs glob, nodes (host; NULL: node_begin + i), the step and temperature. */
typedef struct gpu_host_set {
    double *f;
    int64_t cnt;
    const double *glob;
    const int32_t *nodes;
    int node_begin;
    double dt, celsius;
} gpu_host_set;
/* Hook h of d on the host (host_side_hook) over the instances s, with their nodes' area, diam and
 * ions brought back from the device (no v, as on the CPU loop); an error of its C (hoc_execerror)
 * is returned, when: where (sim/cuda/mechanisms.c). */
ns_status ns_gpu_host_hook(const gpu_model *g, const ns_mech_desc *d, int h, const gpu_host_set *s, const char *when);
/* d's DESTRUCTOR over gm's instances, where it has one: their fields, nodes and GLOBALs brought back
 * from the device, then ns_gpu_host_hook; its error is dropped (the loop is freeing them, as the CPU
 * loop's ns_sim_destroy) */
void ns_gpu_destruct(const gpu_model *g, const ns_mech_desc *d, const gpu_mech *gm);

/* A mechanism's FUNCTION_TABLEs on the device (sim/cuda/mechanisms.c). */
ns_status ns_gpu_ftables_up(gpu_mech *gm, const ns_mech_desc *d, const ns_mech_ftable *t, const ns_mech_ftable **out);

struct net_ptr;
/* The device address of POINTER target `to` (its cell the group's local cell j): v, an ion's
 * variable or a density mechanism's field (NULL: that mechanism is not inserted there;
 * sim/cuda/mechanisms_points.c). */
double *ns_gpu_pointer_target(const ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id,
                              const int64_t *cell_base, int64_t j, const struct net_ptr *to);

/* Node of compartment i of local cell j. */
static inline int64_t node_at(const gpu_model *g, const int64_t *cell_base, int64_t j, int32_t i) {
    return cell_base[j] + (g->pos ? g->pos[i] : i);
}

static inline void set_time(gpu_mech *gm, double t, const ns_sim_t *sim) {
    gm->p.t = t;
    gm->p.dt = sim->params.dt;
    gm->p.celsius = sim->params.celsius;
}

static inline ns_status launched(int rc, const char *what, const char *name) {
    if (rc == 0) return NS_OK;
    cudaError_t e = cudaGetLastError();
    return ns_fail(NS_ERR_CUDA, "simulation: %s of %s: %s", what, name, cudaGetErrorString(e));
}

/* A mechanism's ppack over its cnt instances: the group's arrays and its own device arrays (t,
 * dt, celsius: set_time; a point type's weight, POINTERs and error: set by its caller). */
static inline void ppack_bind(gpu_mech *gm, const gpu_model *g, int64_t cnt, int32_t *nodes_d, double **fptr_d,
                              double *globals_d, double *table_d, ns_mech_ion_view *ions_d,
                              const ns_mech_ftable *ftab_d) {
    memset(&gm->p, 0, sizeof gm->p);
    gm->p.ftable = ftab_d;
    gm->p.n = (int)cnt;
    gm->p.node_index = nodes_d;
    gm->p.v = g->v;
    gm->p.rhs = g->rhs;
    gm->p.d = g->d;
    gm->p.field = fptr_d;
    gm->p.global = globals_d;
    gm->p.table = table_d;
    gm->p.ion = ions_d;
    gm->p.area = g->geom;
    gm->p.diam = g->geom + g->nodes;
}

/* NS_ERR_UNSUPPORTED: WHAT NAME has no CUDA code, with why (desc->cuda_why_not) and what to do */
ns_status ns_gpu_no_cuda_code(const char *what, const ns_mech_desc *d);

/* The error channel of n mechanisms whose descriptors desc(g, k) give: allocated once, with no
 * error yet, and each mechanism's ppack.error bound to its record (NULL: none) by the caller
 * through ns_gpu_errors_record; reset: no error again (finitialize); free: e zeroed. */
ns_status ns_gpu_errors_create(gpu_errors *e, const gpu_model *g, int32_t n,
                               const ns_mech_desc *(*desc)(const gpu_model *, int32_t));
ns_mech_error *ns_gpu_errors_record(const gpu_errors *e, int32_t k);
ns_status ns_gpu_errors_reset(gpu_errors *e);
void ns_gpu_errors_free(gpu_errors *e);
/* The first error that the VERBATIM C of the mechanisms recorded on the device (hoc_execerror,
 * exit, abort: nmodl_verbatim.h's nsv_dev_error), in their order, as the CPU loop words it; when:
 * where. One copy of the flag and the unflagged records; the rest only when the flag is set. */
ns_status ns_gpu_errors_read(gpu_errors *e, const gpu_model *g, const ns_mech_desc *(*desc)(const gpu_model *, int32_t),
                             const char *when);
/* The BEFORE/AFTER blocks or CONSTRUCTOR h (ns_mech_desc.cuda_hooks) at time t: of the density
 * mechanisms in type order (Nernst after one that writes a concentration), as the CPU loop's
 * ns_model_block_hook, where `density`; then of the point types, as its ns_net_hook, where `points`
 * (sim/cuda/mechanisms.c) */
ns_status ns_gpu_hooks_run(const ns_sim_t *sim, gpu_model *g, int h, double t, int density, int points,
                           cudaStream_t stream);

/* Free the network's point types (sim/cuda/mechanisms_points.c). */
void ns_gpu_points_free(gpu_model *g);

#endif
