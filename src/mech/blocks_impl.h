/* Private to the mechanism runtime (mech/blocks.c, mech/blocks_fused.c): a
 * lane block's instances of a model's mechanisms and the simulation's
 * TABLEs (the types mech/blocks.h declares). */
#ifndef NS_MECH_BLOCKS_IMPL_H
#define NS_MECH_BLOCKS_IMPL_H

#include "mech/builtin/builtin.h"
#include "mech/builtin/hh.h"
#include "mech/builtin/pas.h"
#include "mech/blocks.h"

extern const ns_mech_desc nsm_pas_desc, nsm_hh_desc, nsm_ExpSyn_desc, nsm_Exp2Syn_desc;

typedef struct ldifus_plan ldifus_plan;

typedef struct mech_block {
    ns_mech_ppack p;
    double *store;    /* n_fields fields of cnt values, each from a cache line (lines), then globals */
    double *table;    /* the block's own TABLE (model_tables.own), else NULL: p.table is the shared one */
    double **field;   /* n_fields pointers into store */
    int *node_index;  /* cnt */
    int32_t *ord;     /* the block's instances in position order (so that a reordered shape's region
                         runs are runs of consecutive instances too): ord[k] the model's ordinal
                         (sim_mech_shape) of the block's k-th; rank its inverse; both NULL: the same
                         order (no node order) */
    int32_t *rank;
    ns_mech_ion_view ions[NS_SIM_MECH_IONS_MAX];
    /* runs of consecutive nodes: one call each on the contiguous path
     * (node_begin, vectorised loops) with the fields from the run's first
     * instance; n_runs 0: one call over node_index */
    int32_t n_runs;
    ns_mech_ppack *runs;
    double **run_field; /* n_runs * n_fields */
    const ns_mech_desc *desc;
    int constructed;    /* its CONSTRUCTOR ran (at the first init): the DESTRUCTOR runs at free */
    ldifus_plan *ld;    /* LONGITUDINAL_DIFFUSION (mech/ldifus.c), NULL: none */
    /* a density mechanism's POINTERs (ns_model_block_pointers): n_pointers
     * arrays of p.n addresses in ptr_store (p.pointer); per run its own
     * n_pointers arrays from the run's first instance (run_ptr) */
    double **ptr_store;
    double ***ptr;
    double ***run_ptr;
    double unset;       /* what an unconnected POINTER reaches while ns_sim_create initialises */
} mech_block;

/* The fused pass (ns_model_block_fused_*): a model whose mechanisms are the
 * built-in pas and hh runs their generated per-instance functions
 * (nsm_pas_current_F, nsm_hh_current_F, and nsm_hh_state_F's stages)
 * inside the loop's own passes over a block's lane-nodes, as the GPU's
 * fused loop does (src/sim/cuda/fused.h): an instance's fields in
 * locals, which the compiler keeps in vector registers; the parameters and
 * ions' e of a segment whose instances share them loaded once; the
 * assigned variables stored in the call's last step only
 * (ns_sim_get_model_var then reads what the per-step path leaves: no
 * assigned variable of pas or hh is read before it is written in a phase;
 * hh's current() sets fields 4 .. 8, its state() 9 .. 14). The field
 * layouts: builtin.h, NS_FUSED_*. */

/* Nodes [n0, n1) of a block where each fused mechanism (0 pas, 1 hh) is
 * inserted at every node or at none: its instance ordinal at n0 (-1: none)
 * and whether the instances' parameters are all those of the first
 * (uniform: loaded once). The segments cover the shape's nodes in order. */
typedef struct fused_seg {
    int32_t n0, n1;
    int32_t inst[2];
    int32_t uniform[2];
} fused_seg;

struct model_block {
    int32_t n_mechs;
    mech_block *m;
    int32_t fused_k[2]; /* a model that can take the fused pass (fusable): the mechanism index of its
                           pas and hh, -1 when absent */
    int32_t n_segs;
    fused_seg *segs;
    int32_t gather[2];    /* per fused mechanism: its passes run over the instances, v gathered and rhs,
                             d scattered (short segments: fused_gather) */
    int32_t g_uniform[2]; /* with gather: every instance's parameters and e those of the first */
    int64_t nw;
    double *ion;            /* per ion j: e, ci, co, i, didv at [(5 * j + q) * nw] */
    unsigned char *written; /* per ion j at [j * nw]: e by Nernst at that lane-node */
    double *geom;           /* area at [lane-node], diam at [nw + lane-node] (ns_mech_ppack.area, .diam) */
    double *scratch;        /* rhs and d (2 nw) of finitialize's currents; NULL without mechanisms */
    model_tables *tab;      /* the TABLEs it reads (the simulation's; its own when tab_own) */
    int tab_own;
    ns_mech_error err;      /* the mechanisms' errors (ns_mech_ppack.error): every ppack of the block's */
};

/* A model's TABLEs, shared by the blocks of one simulation. A TABLE depends on
 * celsius and on the GLOBALs it DEPENDs on, the same in every block, so one
 * copy serves them all (ns_model_tables_update builds it on one thread before
 * the blocks run; the generated loops' table_update then finds it current and
 * only reads it), where a copy per block cost each block its own 10 KB (hh)
 * and the fused hh's 26 KB of rows in the caches. A mechanism whose TABLE
 * two blocks would build differently (a DEPEND on a RANGE variable, which the
 * translator reads from the block's first instance) gets one per block. */
struct model_tables {
    int32_t n_mechs;
    double **table;      /* per mechanism: the shared TABLE (table_size doubles), NULL without one */
    unsigned char *own;  /* per mechanism: a TABLE per block instead (mech_block.table) */
    int32_t hh;          /* the fused hh's mechanism (fusable), else -1 */
    double *rows;        /* with it: its TABLE as rows (nsm_hh_p_rates_rows), 64-byte aligned */
    int transpose;       /* the state pass transposes 8 rows at a time (rows_transpose) */
    int64_t n_blocks, cap_blocks;
    model_block **blocks; /* the blocks that read them (ns_model_block_create) */
};

/* LONGITUDINAL_DIFFUSION (mech/ldifus.c): mechanism k's plan on block b (w cells of shape `shape`,
 * n_nodes compartments each; NULL when out of memory), and its release */
ldifus_plan *ns_ldifus_plan_create(const sim_model *model, const model_block *b, int32_t k, int32_t shape,
                                   int32_t n_nodes, int32_t w);
void ns_ldifus_plan_free(ldifus_plan *pl);

#endif
