/* Private to the gradient (src/grad): the handle, its cells and parameters,
 * and what the CPU sweep (grad.c) shares with the GPU sweep (cuda/grad.c):
 * the parameters' values before INITIAL and on the cable, the loss's
 * adjoint, the parameters' derivatives from a cell's adjoints. */
#ifndef NS_GRAD_IMPL_H
#define NS_GRAD_IMPL_H

#include <stdint.h>

#include "grad/grad_events.h"
#include "grad/grad_ion.h"
#include "mech/blocks.h"
#include "sim/sim_impl.h"
#include "neurosolve/grad.h"

enum { P_CM, P_RA, P_VINIT, P_FIELD, P_GLOBAL, P_NET };

typedef struct gparam {
    int64_t cell;
    int kind;
    int32_t mech, field; /* P_FIELD: the field; P_GLOBAL: the GLOBAL; P_NET: field, its index in grad_events.c */
    unsigned char *on;   /* per node of the cell's shape: selected (P_CM, P_FIELD) */
    int set;
    double value;
} gparam;

typedef struct gcell {
    int64_t cell;
    int32_t shape, n;
    model_block *mb;
    int64_t S;           /* doubles of the state: v, the density mechanisms' fields, the synapses' (ev), the ions' */
    int64_t o_ion;       /* where its ion part starts (grad_ion.h): after the fields and the synapses' */
    double *snap;        /* the ion parts before each mechanism's INITIAL or state() (n_mechs + 1) */
    gev_cell *ev;        /* its synapses and events (grad_events.c), NULL: none */
    double *a, *b, *cap; /* this cell's coefficients (Ra, cm applied) */
    double ra_scale;     /* a and b are the shape's times this */
    double v_init;
    int32_t n_stims;
    sim_stim *stims;
    /* work */
    double *v, *rhs, *d, *x, *vn, *y, *dw, *Fc, *lS, *lSn, *lFc, *out, *jac;
    double *la, *lb, *lcap; /* adjoints of a, b, cap summed over the steps */
    double l_vinit;
    double *lglob;       /* adjoints of the GLOBALs that are parameters (g->gwant), summed over the steps */
    double *ck;          /* during a run: the checkpoints, then one segment's states */
    double **fptr;       /* a block product's field arrays (mech_vjp): room for the most fields */
    double *gat;         /* the node_index blocks' gathered values (grad_gather.h), mechanism k's at gato[k] */
    size_t *gato;
    int64_t *gkeep;      /* per mechanism: the run (ns_grad.runs) of its last gather, 0: none yet */
    ns_mech_ion_view *gview; /* and its ion views */
} gcell;

struct ns_grad {
    const ns_sim_t *sim;
    const sim_model *model;
    gev *ev;                /* the network (grad_events.c), NULL: none */
    ns_grad_options options;
    int64_t n_cells;
    gcell *cells;
    int32_t n_params, cap_params;
    gparam *params;
    size_t work_bytes;      /* the cells' work arrays */
    int32_t *goff;          /* mechanism k's GLOBALs at goff[k] of lglob and gwant */
    unsigned char *gwant;   /* a GLOBAL some cell's parameter names: its derivative is computed */
    unsigned char *ci;      /* per mechanism: its ion values are constants (gion_constant) */
    size_t bytes;
    gion *ion;              /* the live ions (grad_ion.c) */
    ns_backend backend;     /* the sweep's: NS_BACKEND_CPU or NS_BACKEND_CUDA (grad_backend_choose) */
    double **tbuf;          /* the CPU sweep's stored states, one buffer per thread, kept between runs */
    size_t *tcap;           /* their sizes in doubles */
    int64_t n_tbuf;
    int64_t runs;           /* CPU runs so far (ggather's keep) */
};

typedef struct run_ctx {
    int64_t steps, K, samples;
    const ns_grad_loss *loss;
    double *traces;    /* samples x sites (the caller's or ours) */
    int64_t *fault_step; /* per cell: the step after which v was not finite, 0: none */
    int32_t *fault_node; /* and its first such compartment */
} run_ctx;

/* Shared by the two sweeps (grad.c) */
void grad_pre_init_fields(const ns_grad_t *g, const gcell *gc, int32_t k, double *F);
void grad_apply_cable(const ns_grad_t *g, gcell *gc);
double grad_param_grad(const ns_grad_t *g, const gcell *gc, const gparam *p);
double grad_dl_dy(const ns_grad_t *g, const run_ctx *r, int64_t sample, int32_t site);

/* The backend a gradient runs on (docs/gradients.md, "On the GPU"): requested
 * (ns_grad_options.backend), the simulation's, and why_not (NULL: the model
 * is within the GPU sweep's scope). NS_BACKEND_AUTO takes the GPU sweep for a
 * simulation on CUDA whose model it supports, else the CPU's; NS_BACKEND_CUDA
 * asked for a model outside it is refused (the caller's error names why_not). */
ns_backend grad_backend_choose(ns_backend requested, ns_backend sim_backend, const char *why_not);
/* Why the GPU sweep cannot run the handle's model (a synapse, an event, a live ion, a
 * mechanism without device products, a GLOBAL parameter), written into why (room for n); 0
 * where it can */
int grad_cuda_why_not(const ns_grad_t *g, char *why, size_t n);

/* The GPU sweep (cuda/grad.c; nocuda/grad.c refuses): every cell's forward pass and reverse
 * sweep on the device with checkpoints every r->K steps in device memory, r->traces filled,
 * gval[c * (n_params + 1) + q] the derivative of parameter q of cell c; *bytes the device
 * memory it held */
ns_status grad_cuda_sweep(ns_grad_t *g, const run_ctx *r, double *gval, size_t *bytes);

#endif
