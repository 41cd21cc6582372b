/* Private: the gradient's synapses and events (grad_events.c,
 * docs/gradients.md "Synapses, weights and events"): per cell, the
 * instances of the network's point processes (their fields in the state S
 * after the density mechanisms'), the events each run delivers to them (times
 * from the forward run, fixed for the reverse sweep), their phases forward
 * and transposed, and the parameters: connections' weights and point
 * processes' RANGE parameters. grad.c calls these at its phases. */
#ifndef NS_GRAD_EVENTS_H
#define NS_GRAD_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "mech/blocks.h"
#include "sim/sim_impl.h"

typedef struct gev gev;           /* a handle's network part */
typedef struct gev_cell gev_cell; /* one cell's */

/* NULL in *out where the simulation has no network; refuses what the
 * gradient does not differentiate (NS_ERR_UNSUPPORTED, naming it). */
ns_status gev_create(const ns_sim_t *sim, gev **out);
void gev_destroy(gev *e);
/* cell c's part, bound to its arrays (v, rhs, d per node; its model block
 * for area, diam and the error channel) */
ns_status gev_cell_bind(gev *e, int64_t c, double *v, double *rhs, double *d, model_block *mb);
gev_cell *gev_cell_of(gev *e, int64_t c);
int64_t gev_fields(const gev_cell *ce); /* doubles of its synapses' fields (in S) */
size_t gev_bytes(const gev *e);

void gev_save(const gev_cell *ce, double *F);
void gev_load(gev_cell *ce, const double *F);

/* The run's events: gev_run_begin empties them and adds the trains'; with
 * detectors that reach synapses (gev_needs_raster) the caller runs every cell
 * in lockstep, calling gev_detect after each step (and at t = 0), whose spikes
 * queue events for their targets; gev_run_ready fixes each event's step. */
ns_status gev_run_begin(gev *e);
int gev_needs_raster(const gev *e);
ns_status gev_detect(gev *e, int64_t c, const double *v, double t);
void gev_run_ready(gev *e, int64_t steps, double dt);

/* the forward phases of cell ce: fields before INITIAL and INITIAL at v; the
 * events of step n; current() of the types whose key is below `below` from
 * *slot on (type order, sim/cpu/step.c); state(). t: the step's start. */
void gev_init(const gev *e, gev_cell *ce, double dt, double celsius);
void gev_deliver(const gev *e, gev_cell *ce, int64_t n, double t, double dt, double celsius);
void gev_current(gev_cell *ce, int32_t *slot, int32_t below, double tm, double dt, double celsius);
void gev_state(gev_cell *ce, double t, double dt, double celsius);

/* the transposes (l_in += J^T l_out): state() at (vn, F) with l_out the
 * fields' adjoints lF1 into lv and lF; current() at (v, F) with the fields'
 * adjoints lFc and y, ld per node into lv and lF; the events of step n from
 * the fields before them F0 (v unchanged), lF in place, into lv and the
 * weights; INITIAL: the fields' adjoints lF into those before it (kept for
 * gev_param_grad) and lv. F, F0: the cell's synapse fields as gev_save
 * writes them. */
void gev_vjp_state(gev_cell *ce, double t, const double *vn, const double *F, const double *lF1, double *lv,
                   double *lF, double dt, double celsius);
void gev_vjp_current(gev_cell *ce, double tm, const double *v, const double *F, const double *lFc, const double *y,
                     const double *ld, double *lv, double *lF, double dt, double celsius);
void gev_vjp_deliver(const gev *e, gev_cell *ce, int64_t n, const double *v, const double *F0, double *lF, double *lv,
                     double dt, double celsius);
void gev_vjp_init(const gev *e, gev_cell *ce, const double *lF, double *lv, double dt, double celsius);
/* before a cell's reverse sweep: the weights' adjoints to zero */
void gev_reverse_begin(gev_cell *ce);

/* Parameters: *local -1 (NS_OK) where `name` is none of the network's
 * (weight, NAME_MECH of a synapse type); else *local, its index here, or the
 * error naming it. */
ns_status gev_add_param(gev *e, int64_t cell, const char *where, const char *name, int32_t *local);
void gev_set_param(gev *e, int32_t local, double value);
double gev_get_param(const gev *e, int32_t local);
double gev_param_grad(const gev *e, const gev_cell *ce, int32_t local);

#endif
