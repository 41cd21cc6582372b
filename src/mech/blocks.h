/* Private: the mechanism runtime: a model's mechanism instances on one lane
 * block (w cells of one shape) and the calls of their entry points
 * (mech/blocks.c; the fused pass, mech/blocks_fused.c), which the CPU loop
 * (sim/cpu/step.c), the network's synapses (net/) and the gradients run. */
#ifndef NS_MECH_BLOCKS_H
#define NS_MECH_BLOCKS_H

#include "mech/model_impl.h"

typedef struct model_block model_block;
typedef struct model_tables model_tables;

/* A ppack's step values: the voltages, rhs and d (NULL outside the current
 * phase), the time, dt and celsius (the blocks and the network's points). */
static inline void ns_mech_ppack_bind(ns_mech_ppack *p, double *v, double *rhs, double *d, double t, double dt,
                                      double celsius) {
    p->v = v;
    p->rhs = rhs;
    p->d = d;
    p->t = t;
    p->dt = dt;
    p->celsius = celsius;
}

/* The TABLEs of `model`'s mechanisms (and the fused hh's rows), one copy for
 * the blocks created with it. ns_model_tables_update builds them for celsius
 * and the GLOBALs (what each TABLE depends on) on one thread before the blocks
 * run (finitialize, each advance), as NEURON checks its tables before a step;
 * the blocks' loops then only read them (the split passes of several threads
 * on one block included). Freed after the blocks. */
ns_status ns_model_tables_create(const sim_model *model, model_tables **out);
ns_status ns_model_tables_update(const sim_model *model, model_tables *t, double celsius);
void ns_model_tables_free(model_tables *t);

/* The instances of every mechanism of `model` on w cells of shape `shape`
 * (n compartments each), node i's values at lane-nodes pos[i] * w + lane
 * (pos: the CPU loop's node order, cpu_shape.pos; NULL: i * w + lane).
 * tables: the simulation's (ns_model_tables_create); NULL: the block's own,
 * which its loops keep current themselves (one block per thread: the
 * gradient's cells). */
ns_status ns_model_block_create(const sim_model *model, model_tables *tables, int32_t shape, int32_t n, int32_t w,
                                const int32_t *pos, model_block **out);
void ns_model_block_free(model_block *b);
/* area [um^2] per lane-node, then diam [um] per lane-node (ns_mech_ppack.area, .diam) */
const double *ns_model_block_geom(const model_block *b);
/* The block's error channel (ns_mech_ppack.error of its mechanisms and point processes): set once a
 * mechanism's C reported an error (VERBATIM hoc_execerror); the loop then stops */
ns_mech_error *ns_model_block_error(model_block *b);
/* NEURON's finitialize for the block: parameters, ion values, Nernst, the
 * INITIAL blocks in type order at v (already v_init). cell: the w cells of
 * the lanes (the random streams' ids, ns_mech_desc.random_field). */
void ns_model_block_init(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                         const int32_t *pos, const int64_t *cell, double *v, double dt, double celsius);
/* finitialize's first part: the ions' values from the model (i and didv 0), e by Nernst where a
 * concentration is written (the gradient's sweeps, src/grad, restart the INITIALs from there). */
void ns_model_block_init_ions(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                              const int32_t *pos, double celsius);
/* e by Nernst after mechanism k where it writes a concentration (nothing otherwise) */
void ns_model_block_nernst(const sim_model *model, model_block *b, int32_t k, double celsius);
/* the block's lane-nodes (n * w): the length of each ion array */
int32_t ns_model_block_nodes(const model_block *b);
/* per lane-node: 1 where ion `ion`'s e follows its concentrations by Nernst */
const unsigned char *ns_model_block_ion_written(const model_block *b, int32_t ion);
/* Current phase: zero every ion's i and didv, then mechanism k's current()
 * (rhs -= I, d += dI/dv) at time t. */
void ns_model_block_zero_ions(const sim_model *model, model_block *b);
void ns_model_block_current(const sim_model *model, model_block *b, int32_t k, double *v, double *rhs, double *d,
                            double t, double dt, double celsius);
/* State phase: every mechanism's state() at time t, Nernst after a writer. */
void ns_model_block_states(const sim_model *model, model_block *b, double *v, double t, double dt, double celsius);
/* After the states (the mechanisms' and the synapses'): LONGITUDINAL_DIFFUSION of every mechanism
 * that has it (mech/ldifus.c, NEURON's long_difus_solve), each of the block's w cells on its own;
 * a bad pivot sets the block's error */
void ns_ldifus_step(model_block *b, int32_t w, double *v, double t, double dt, double celsius);
/* Mechanism k's INITIAL (init 1; at t = 0) or state() alone (init 0), without
 * Nernst (ns_model_block_nernst after it): the gradient's sweeps (src/grad). */
void ns_model_block_phase(const sim_model *model, model_block *b, int32_t k, int init, double *v, double t, double dt,
                          double celsius);
/* Mechanism k's instances bound as phase (0 INITIAL, 1 current(), 2
 * state()) is at time t, for its derivative code (ns_mech_desc.vjp_*):
 * the gradient's sweeps (src/grad), which refuse a mechanism without it. */
ns_mech_ppack *ns_model_block_bind(model_block *b, int32_t k, int phase, double *v, double t, double dt,
                                   double celsius);

/* BEFORE/AFTER block h (NS_MECH_BEFORE_BREAKPOINT ...) of every mechanism that has one, in
 * type order, at time t (Nernst after a writer). ns_model_block_init runs BEFORE/AFTER
 * INITIAL, BEFORE STEP and the CONSTRUCTORs (at the first), ns_model_block_free the
 * DESTRUCTORs. */
void ns_model_block_hook(const sim_model *model, model_block *b, int h, double *v, double t, double dt,
                         double celsius);

/* The fused pass (mech/blocks_fused.c), for a model that can take it
 * (ns_model_fusable: the built-in pas and hh, hh's table in use, no ion
 * current read nor concentration written) and a network whose synapse
 * types are all built-in ones (ns_model_point_fusable: ExpSyn, Exp2Syn,
 * before hh in NEURON's type order). Per step, at the half step t: first
 * rhs and d from zero and pas's current; (the loop's clamps and synapses);
 * second hh's current and the capacitance cap; after the solve the states.
 * `last`: the call's last step (the assigned variables are stored then). */
int ns_model_fusable(const sim_model *model);
int ns_model_point_fusable(const ns_mech_desc *desc);
void ns_model_block_fused_first(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                                double t, double dt, double celsius, int last);
void ns_model_block_fused_second(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                                 const double *cap, double t, double dt, double celsius, int last);
void ns_model_block_fused_states(const sim_model *model, model_block *b, int32_t w, double *v, double t, double dt,
                                 double celsius, int last);
/* The same passes over the nodes [r0, r1) of the block (a cell split across
 * threads: each thread its range, sim/cpu/step.c), phase 0 first, 1 second,
 * 2 the states, the assigned variables stored when `last`. Every fused pass
 * reads the tables as ns_model_tables_update left them. */
void ns_model_block_fused_range(const sim_model *model, model_block *b, int32_t w, int phase, int32_t r0, int32_t r1,
                                double *v, double *rhs, double *d, const double *cap, double t, double dt,
                                double celsius, int last);

/* Variable q (0 e, 1 ci, 2 co, 3 i, 4 didv) of the simulation's ion `ion`
 * over the block, at [pos[node] * w + lane]. */
const double *ns_model_block_ion(const model_block *b, int32_t ion, int q);
/* The block's storage of ion `ion`: e, ci, co, i, didv, each n * w (net.c's
 * point processes share it). */
double *ns_model_block_ion_data(model_block *b, int32_t ion);
/* The block's fields or ions are handed out for writing
 * (ns_sim_state_field): the fused pass then reads every instance's
 * parameters and ions' e, none once per segment. */
void ns_model_block_expose(model_block *b);
/* Field f of mechanism k over the block's instances ((node, lane) order). */
const double *ns_model_block_field(const model_block *b, int32_t k, int f);
/* the same, writable (a POINTER's target, net/pointer.c) */
double *ns_model_block_field_data(model_block *b, int32_t k, int f);
/* A density mechanism k's POINTERs in the block: the address of POINTER q of
 * the block's instance i ((slot, lane) order: slot * w + lane) at
 * (*out)[q][i], all NULL; the block owns them (freed with it, made again
 * by the next call). NS_OK, or out of memory. */
ns_status ns_model_block_pointers(model_block *b, int32_t k, double ****out);
/* those arrays as the last ns_model_block_pointers made them (NULL: none) */
double ***ns_model_block_pointer_arrays(model_block *b, int32_t k);
/* a double of mechanism k's in the block for an unconnected POINTER to reach (0 at each init) */
double *ns_model_block_pointer_unset(model_block *b, int32_t k);
/* Mechanism k's GLOBALs in the block (its own copy of the model's, desc->n_globals; the gradient's
 * GLOBAL parameters, src/grad) */
double *ns_model_block_globals(model_block *b, int32_t k);
/* Mechanism k's instances in the block: how many (n * lanes) and the
 * lane-node of each (pos[node] * w + lane). */
int64_t ns_model_block_instances(const model_block *b, int32_t k);
const int *ns_model_block_node_index(const model_block *b, int32_t k);
/* The block's slot (its instance order, over the lanes: slot * w + lane)
 * of mechanism k's instance `inst` of the model (sim_mech_shape order):
 * the block keeps its instances in its node order. */
int32_t ns_model_block_slot(const model_block *b, int32_t k, int32_t inst);

/* The same for one cell of a CPU simulation of a model (sim/cpu/step.c), into
 * out[compartment]: for tests (the ion state is not public API yet). i and
 * didv exist only for an ion whose current some mechanism reads. */

#endif
