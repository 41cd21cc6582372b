/* Gradients by the discrete adjoint of the fixed step (docs/gradients.md).
 *
 * Per cell: the state S = (v, every field of every mechanism instance, the
 * live ions' values: grad_ion.c). One
 * step S^n -> S^{n+1} is the CPU loop's (sim/cpu/step.c, the per-step path):
 * the mechanisms' current() in type order with the clamps, the capacitance
 * and axial constants on d, the axial terms on rhs, the Hines solve A x = r,
 * v += x, then every state() at the new v. The forward pass stores S every
 * K steps; the reverse sweep walks the segments from the last, recomputes
 * each segment's states from its checkpoint and applies the transpose of
 * each phase in reverse order: the states' vector-Jacobian product, the
 * solve's (A^T y = the adjoint of x: the same tree with a and b exchanged,
 * solved by hines' reference solve), the assembly's, the currents'. The
 * mechanisms' Jacobians (mech_vjp) are the translator's derivative code
 * (ns_mech_desc.vjp_*, src/nmodl/nmodl_diff.c): exact to rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grad/grad_gather.h"
#include "grad/grad_impl.h"
#include "grad/grad_ion.h"
#include "grad/grad_events.h"
#include "mech/blocks.h"
#include "sim/sim_impl.h"
#include "neurosolve/grad.h"
#include "neurosolve/hines.h"
#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

void ns_grad_options_init(ns_grad_options *options) {
    if (!options) return;
    memset(options, 0, sizeof *options);
}

/* ---- the state ---- */

static int64_t n_fields_of(const ns_grad_t *g, const gcell *gc, int32_t k) {
    return (int64_t)g->model->mechs[k].desc->n_fields * ns_model_block_instances(gc->mb, k);
}

static void save_state(const ns_grad_t *g, const gcell *gc, double *S) {
    memcpy(S, gc->v, (size_t)gc->n * sizeof *S);
    int64_t o = gc->n;
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const int64_t ni = ns_model_block_instances(gc->mb, k);
        for (int f = 0; f < g->model->mechs[k].desc->n_fields; ++f, o += ni)
            memcpy(S + o, ns_model_block_field(gc->mb, k, f), (size_t)ni * sizeof *S);
    }
    gion_save(g->ion, gc->mb, gc->n, S + gc->o_ion);
    if (gc->ev) gev_save(gc->ev, S + o);
}

static void load_state(const ns_grad_t *g, gcell *gc, const double *S) {
    memcpy(gc->v, S, (size_t)gc->n * sizeof *S);
    int64_t o = gc->n;
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const int64_t ni = ns_model_block_instances(gc->mb, k);
        for (int f = 0; f < g->model->mechs[k].desc->n_fields; ++f, o += ni)
            memcpy(ns_model_block_field_data(gc->mb, k, f), S + o, (size_t)ni * sizeof *S);
    }
    gion_load(g->ion, gc->mb, gc->n, S + gc->o_ion);
    if (gc->ev) gev_load(gc->ev, S + o);
}

/* mechanism k's fields from F (field-major, n_fields * instances) */
static void put_fields(gcell *gc, int32_t k, int nf, int64_t ni, const double *F) {
    for (int f = 0; f < nf; ++f) memcpy(ns_model_block_field_data(gc->mb, k, f), F + f * ni, (size_t)ni * sizeof *F);
}

/* ---- the step ---- */

static void clamps(const gcell *gc, const sim_shape *s, double tm, double *rhs) {
    for (int32_t q = 0; q < gc->n_stims; ++q) {
        const sim_stim *st = &gc->stims[q];
        const double i = (tm < st->del + st->dur && tm >= st->del) ? st->amp : 0.0;
        rhs[st->node] += i * s->stim_scale[st->node];
    }
}

/* The current phase at the half step tm from the loaded state: rhs and d
 * (the capacitance and axial constants included), the fields after it. */
static void currents(const ns_grad_t *g, gcell *gc, double tm) {
    const ns_sim_t *sim = g->sim;
    const sim_shape *s = &sim->shapes[gc->shape];
    const sim_model *model = g->model;
    const int32_t n = gc->n;
    memset(gc->rhs, 0, (size_t)n * sizeof *gc->rhs);
    memset(gc->d, 0, (size_t)n * sizeof *gc->d);
    ns_model_block_zero_ions(model, gc->mb);
    const double dt = sim->params.dt, celsius = sim->params.celsius;
    int32_t slot = 0; /* the synapses' types merged in by NEURON's type order, as sim/cpu/step.c's model_pass */
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        if (k == model->n_before_clamp) clamps(gc, s, tm, gc->rhs);
        if (gc->ev && k >= model->n_before_clamp) gev_current(gc->ev, &slot, model->mechs[k].key, tm, dt, celsius);
        ns_model_block_current(model, gc->mb, k, gc->v, gc->rhs, gc->d, tm, dt, celsius);
    }
    if (model->n_before_clamp == model->n_mechs) clamps(gc, s, tm, gc->rhs);
    if (gc->ev) gev_current(gc->ev, &slot, INT32_MAX, tm, dt, celsius);
    for (int32_t i = 0; i < n; ++i) gc->d[i] += gc->cap[i];
    for (int32_t i = 1; i < n; ++i) {
        gc->d[i] -= gc->b[i];
        gc->d[s->parent[i]] -= gc->a[i];
    }
}

/* The solve: x from rhs and the axial terms of v (gc->x), d kept (gc->d);
 * returns 0, or -1 on a bad pivot */
static int solve(const ns_grad_t *g, gcell *gc) {
    const sim_shape *s = &g->sim->shapes[gc->shape];
    const int32_t n = gc->n;
    memcpy(gc->x, gc->rhs, (size_t)n * sizeof *gc->x);
    for (int32_t i = n - 1; i >= 1; --i) {
        const int32_t p = s->parent[i];
        const double dv = gc->v[p] - gc->v[i];
        gc->x[i] -= gc->b[i] * dv;
        gc->x[p] += gc->a[i] * dv;
    }
    memcpy(gc->dw, gc->d, (size_t)n * sizeof *gc->dw);
    return ns_hines_solve_one(n, s->parent, gc->a, gc->b, gc->dw, gc->x) >= 0 ? -1 : 0;
}

/* The tape of one step of a recomputed segment: S^n (after the step's
 * events), then the state after the current phase (v^n and the fields F^c),
 * x and d of the solve, the synapses' fields before the events. */
static size_t tape_of(const gcell *gc) { return 2 * (size_t)gc->S + 2 * (size_t)gc->n + (size_t)gev_fields(gc->ev); }

/* One step from the loaded state at time t (v, fields updated). With tape,
 * its record is written (the state before it included); last: the step's
 * state phase is skipped (the segment's last step, whose result the
 * reverse sweep has). Returns 0, or -1 when v is not finite or a pivot was
 * bad. */
static int step(const ns_grad_t *g, gcell *gc, int64_t n, double t, double *tape, int last) {
    const double dt = g->sim->params.dt;
    if (gc->ev) { /* the events of step n (NEURON's deliver_net_events) */
        if (tape) gev_save(gc->ev, tape + 2 * gc->S + 2 * gc->n);
        gev_deliver(g->ev, gc->ev, n, t, dt, g->sim->params.celsius);
    }
    if (tape) save_state(g, gc, tape);
    currents(g, gc, ns_sim_half_step(t, dt));
    if (tape) save_state(g, gc, tape + gc->S);
    if (solve(g, gc)) return -1;
    if (tape) {
        memcpy(tape + 2 * gc->S, gc->x, (size_t)gc->n * sizeof *tape);
        memcpy(tape + 2 * gc->S + gc->n, gc->d, (size_t)gc->n * sizeof *tape);
    }
    if (last) return 0;
    int bad = 0;
    for (int32_t i = 0; i < gc->n; ++i) {
        gc->v[i] += gc->x[i];
        bad |= !isfinite(gc->v[i]);
    }
    const double t1 = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        ns_model_block_phase(g->model, gc->mb, k, 0, gc->v, t1, dt, g->sim->params.celsius);
        ns_model_block_nernst(g->model, gc->mb, k, g->sim->params.celsius);
    }
    if (gc->ev) gev_state(gc->ev, t1, dt, g->sim->params.celsius);
    return bad ? -1 : 0;
}

/* Mechanism k's fields before INITIAL (field-major into F): its parameters,
 * the model's or those of the gradient's parameters that are set; zeros */
void grad_pre_init_fields(const ns_grad_t *g, const gcell *gc, int32_t k, double *F) {
    const ns_mech_desc *d = g->model->mechs[k].desc;
    const sim_mech_shape *ms = &g->model->per_shape[(size_t)gc->shape * g->model->n_mechs + k];
    const int64_t ni = ms->n;
    for (int64_t j = 0; j < (int64_t)d->n_fields * ni; ++j)
        F[j] = j < (int64_t)d->n_params * ni ? ms->param[j] : 0.0;
    for (int32_t q = 0; q < g->n_params; ++q) {
        const gparam *p = &g->params[q];
        if (p->cell != gc->cell || p->kind != P_FIELD || p->mech != k || !p->set) continue;
        for (int64_t i = 0; i < ni; ++i)
            if (p->on[ms->node[i]]) F[(int64_t)p->field * ni + i] = p->value;
    }
}

/* finitialize with the parameters' values: v = v_init, the ions (the
 * model's block init, its ions then restarted), then each mechanism's fields
 * before INITIAL and its INITIAL in type order, Nernst after a concentration
 * writer. F: room for a mechanism's fields; snap (or NULL): the ion parts
 * before each INITIAL and after the last. */
static void initialize(const ns_grad_t *g, gcell *gc, double *F, double *snap) {
    const ns_sim_t *sim = g->sim;
    for (int32_t i = 0; i < gc->n; ++i) gc->v[i] = gc->v_init;
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const ns_mech_desc *d = g->model->mechs[k].desc;
        memcpy(ns_model_block_globals(gc->mb, k), g->model->mechs[k].globals, (size_t)d->n_globals * sizeof(double));
    }
    for (int32_t q = 0; q < g->n_params; ++q)
        if (g->params[q].cell == gc->cell && g->params[q].kind == P_GLOBAL && g->params[q].set)
            ns_model_block_globals(gc->mb, g->params[q].mech)[g->params[q].field] = g->params[q].value;
    ns_model_block_init(g->model, gc->mb, gc->shape, gc->n, 1, NULL, &gc->cell, gc->v, sim->params.dt,
                        sim->params.celsius);
    ns_model_block_init_ions(g->model, gc->mb, gc->shape, gc->n, 1, NULL, sim->params.celsius);
    const size_t ion_S = (size_t)(gc->S - gc->o_ion);
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const ns_mech_desc *d = g->model->mechs[k].desc;
        const int64_t ni = ns_model_block_instances(gc->mb, k);
        if (snap) gion_save(g->ion, gc->mb, gc->n, snap + (size_t)k * ion_S);
        grad_pre_init_fields(g, gc, k, F);
        put_fields(gc, k, d->n_fields, ni, F);
        ns_model_block_phase(g->model, gc->mb, k, 1, gc->v, 0.0, sim->params.dt, sim->params.celsius);
        ns_model_block_nernst(g->model, gc->mb, k, sim->params.celsius);
    }
    if (snap) gion_save(g->ion, gc->mb, gc->n, snap + (size_t)g->model->n_mechs * ion_S);
    if (gc->ev) gev_init(g->ev, gc->ev, sim->params.dt, sim->params.celsius);
}

/* ---- mechanisms' vector-Jacobian products ---- */

enum { PH_INIT, PH_CURRENT, PH_STATE };

/* l_in += J^T l_out for mechanism k's phase at (v, F): l_out has the
 * fields' adjoints then (PH_CURRENT) those of its rhs and d contributions;
 * l_v (per node) and l_F (its fields) accumulate, and the adjoints of the
 * GLOBALs that are parameters. J: each instance's Jacobian as the
 * translator's derivative code computes it and applies it to the adjoints
 * (ns_mech_desc.vjp_*: exact, of the computed values): over the block of
 * instances in one call (vjp_*_n, ABI 7), or for a library built for ABI 5
 * or 6 per instance (its outputs' adjoints gathered, its inputs' spread;
 * none where they are all zero). The two give the same bits. PH_INIT takes
 * v and the parameters as inputs (the rest are zeros before INITIAL: their
 * rows of l_F are not read). The block products read v and F where they
 * are (the translator's products read the fields and v and write neither);
 * the per-instance ones from the block, F copied into it. With
 * live ions, lion is the ion part's adjoints (grad_ion.h) and the block's
 * ions hold the values the phase reads: the ion values it writes take
 * their adjoints into l_out first, and those it reads get their lanes'. */
static void mech_vjp(const ns_grad_t *g, gcell *gc, int32_t k, int phase, double t, const double *v, const double *F,
                     double *l_out, double *l_v, double *l_F, double *lion) {
    const ns_sim_t *sim = g->sim;
    const ns_mech_desc *d = g->model->mechs[k].desc;
    const int nf = d->n_fields, ng = d->n_globals, n_out = nf + (phase == PH_CURRENT ? 2 : 0);
    const int n_in = 1 + nf + ng + 4 * d->n_ions; /* ABI 8's ion rows (a library built before writes none) */
    const int n_fin = phase == PH_INIT ? d->n_params : nf;
    const int64_t ni = ns_model_block_instances(gc->mb, k);
    if (ni == 0) return;
    const int *node = ns_model_block_node_index(gc->mb, k);
    void (*vjp)(ns_mech_ppack *, int, const double *, double *) =
        phase == PH_INIT ? d->vjp_init : phase == PH_CURRENT ? d->vjp_current : d->vjp_state;
    void (*vjpn)(ns_mech_ppack *, const double *, double *, double *, double *) =
        phase == PH_INIT ? d->vjp_init_n : phase == PH_CURRENT ? d->vjp_current_n : d->vjp_state_n;
    /* constant ion values (gion_constant): the product without their lanes, where it has one */
    void (*vjpc)(ns_mech_ppack *, const double *, double *, double *, double *) =
        !g->ci[k] ? NULL : phase == PH_INIT ? d->vjp_init_n_ci : phase == PH_CURRENT ? d->vjp_current_n_ci : d->vjp_state_n_ci;
    if (vjpc) vjpn = vjpc;
    const unsigned char *want = g->gwant + g->goff[k];
    double *lg = gc->lglob + g->goff[k];
    if (lion) gion_out(g->ion, k, phase, ni, node, gc->n, l_out, lion);
    if (vjpn) {
        ns_mech_ppack pk = *ns_model_block_bind(gc->mb, k, phase, (double *)v, t, sim->params.dt, sim->params.celsius);
        for (int f = 0; f < nf; ++f) gc->fptr[f] = (double *)F + (int64_t)f * ni;
        pk.field = gc->fptr;
        const int gathered = pk.node_index != NULL;
        const int keep = !gc->gkeep[k] ? 0 : gc->gkeep[k] == g->runs && g->ci[k] ? 2 : 1;
        double *lv = gathered ? ggather(gc->gat + gc->gato[k], gc->gview, &pk, d, keep) : l_v;
        if (gathered) gc->gkeep[k] = g->runs;
        /* the GLOBALs' and ions' per instance (room: their rows of the most instances); the ion
         * rows of a mechanism without live ions are scratch, never read */
        double *lgi = gc->jac;
        const int live = lion && gion_uses(g->ion, k);
        memset(lgi, 0, (size_t)(ng + (live ? 4 * d->n_ions : 0)) * (size_t)ni * sizeof *lgi);
        vjpn(&pk, l_out, lv, l_F, lgi);
        for (int64_t i = 0; gathered && i < ni; ++i) l_v[node[i]] += lv[i];
        for (int q = 0; q < ng; ++q)
            for (int64_t i = 0; want[q] && i < ni; ++i) lg[q] += lgi[(int64_t)q * ni + i];
        if (live) gion_in(g->ion, g->model, k, ni, node, gc->n, l_F, lgi + (size_t)ng * (size_t)ni, lion);
        return;
    }
    double *vp = gc->out, *lo = gc->jac, *li = gc->jac + n_out;
    memcpy(vp, v, (size_t)gc->n * sizeof *v);
    put_fields(gc, k, nf, ni, F);
    ns_mech_ppack *p = ns_model_block_bind(gc->mb, k, phase, vp, t, sim->params.dt, sim->params.celsius);
    for (int64_t i = 0; i < ni; ++i) {
        int any = 0;
        for (int o = 0; o < n_out; ++o) any |= (lo[o] = l_out[o * ni + i]) != 0.0;
        if (!any) continue;
        memset(li, 0, (size_t)n_in * sizeof *li);
        vjp(p, (int)i, lo, li);
        l_v[node[i]] += li[0];
        for (int f = 0; f < n_fin; ++f) l_F[f * ni + i] += li[1 + f];
        for (int q = 0; q < ng; ++q)
            if (want[q]) lg[q] += li[1 + nf + q];
    }
}

/* ---- the reverse step ---- */

static int64_t field_off(const ns_grad_t *g, const gcell *gc, int32_t k) {
    int64_t o = gc->n;
    for (int32_t j = 0; j < k; ++j) o += n_fields_of(g, gc, j);
    return o;
}

/* Mechanism k's rows in gc->lFc: S's layout with two more rows after each
 * mechanism's fields (the adjoints of its rhs and d contributions), so that
 * the current phase's product reads its outputs' adjoints where the state
 * phase's left them; the synapses' at lfc_off(n_mechs) */
static int64_t lfc_off(const ns_grad_t *g, const gcell *gc, int32_t k) {
    int64_t o = gc->n;
    for (int32_t j = 0; j < k; ++j) o += n_fields_of(g, gc, j) + 2 * ns_model_block_instances(gc->mb, j);
    return o;
}

/* With live ions: the ion parts before each mechanism's state() and after
 * the last (gc->snap), from the state after the currents Fc: the
 * concentration writers' state() and Nernst run again, in type order. */
static void state_ions(const ns_grad_t *g, gcell *gc, const double *Fc, double t1) {
    const size_t ion_S = (size_t)(gc->S - gc->o_ion);
    memcpy(gc->snap, Fc + gc->o_ion, ion_S * sizeof *gc->snap);
    gion_load(g->ion, gc->mb, gc->n, Fc + gc->o_ion);
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        if (gion_writer(g->ion, k)) {
            put_fields(gc, k, g->model->mechs[k].desc->n_fields, ns_model_block_instances(gc->mb, k),
                       Fc + field_off(g, gc, k));
            ns_model_block_phase(g->model, gc->mb, k, 0, gc->vn, t1, g->sim->params.dt, g->sim->params.celsius);
            ns_model_block_nernst(g->model, gc->mb, k, g->sim->params.celsius);
        }
        gion_save(g->ion, gc->mb, gc->n, gc->snap + (size_t)(k + 1) * ion_S);
    }
}

/* Before mechanism k's product (state() or INITIAL, in reverse type order):
 * the transpose of the Nernst after it, and the block's ions as it read them */
static void ions_before(const ns_grad_t *g, gcell *gc, int32_t k, double *lion) {
    const size_t ion_S = (size_t)(gc->S - gc->o_ion);
    gion_nernst_adj(g->ion, g->model, gc->mb, k, g->sim->params.celsius, gc->n, gc->snap + (size_t)(k + 1) * ion_S,
                    lion);
    gion_load(g->ion, gc->mb, gc->n, gc->snap + (size_t)k * ion_S);
}

/* From the tape T of step `step` (tape_of) at time t and the adjoint lS of
 * S^{n+1}: lS becomes that of S^n. */
static void reverse_step(const ns_grad_t *g, gcell *gc, const double *T, int64_t step, double t) {
    const ns_sim_t *sim = g->sim;
    const sim_shape *s = &sim->shapes[gc->shape];
    const sim_model *model = g->model;
    const int32_t n = gc->n;
    const double dt = sim->params.dt, tm = ns_sim_half_step(t, dt), t1 = ns_sim_half_step(tm, dt);
    const double *S = T, *Fc = T + gc->S, *x = T + 2 * gc->S, *d = x + n;
    for (int32_t i = 0; i < n; ++i) gc->vn[i] = S[i] + x[i];
    /* states: l(vn) and l(Fc) from l(S^{n+1}); with live ions in reverse type order, the ions'
     * adjoints (from lS's ion part) becoming those after the currents */
    double *lv = gc->lS; /* l(v^{n+1}), becomes l(vn) */
    double *lion = gion_live(g->ion) ? gc->lS + gc->o_ion : NULL;
    const int64_t o_syn = field_off(g, gc, model->n_mechs), lo_syn = lfc_off(g, gc, model->n_mechs);
    for (int32_t k = 0; k < model->n_mechs; ++k) /* the fields' rows (the currents' rhs and d rows: written below) */
        memset(gc->lFc + lfc_off(g, gc, k), 0, (size_t)n_fields_of(g, gc, k) * sizeof *gc->lFc);
    memset(gc->lFc + lo_syn, 0, (size_t)(gc->S - o_syn) * sizeof *gc->lFc);
    if (lion) state_ions(g, gc, Fc, t1);
    for (int32_t q = 0; q < model->n_mechs; ++q) {
        const int32_t k = lion ? model->n_mechs - 1 - q : q;
        const int64_t o = field_off(g, gc, k);
        if (lion) ions_before(g, gc, k, lion);
        mech_vjp(g, gc, k, PH_STATE, t1, gc->vn, Fc + o, gc->lS + o, lv, gc->lFc + lfc_off(g, gc, k), lion);
    }
    const double celsius = sim->params.celsius;
    /* the synapses' fields in S at o_syn, their adjoints in lFc at lo_syn */
    if (gc->ev) gev_vjp_state(gc->ev, t1, gc->vn, Fc + o_syn, gc->lS + o_syn, lv, gc->lFc + lo_syn, dt, celsius);
    /* the solve: A^T y = l(x) = l(vn); l(v^n) = l(vn) + the axial terms' */
    memcpy(gc->y, lv, (size_t)n * sizeof *gc->y);
    memcpy(gc->dw, d, (size_t)n * sizeof *gc->dw);
    ns_hines_solve_one(n, s->parent, gc->b, gc->a, gc->dw, gc->y);
    double *ld = gc->dw; /* l(d) = -y x */
    for (int32_t i = 0; i < n; ++i) ld[i] = -gc->y[i] * x[i];
    double *lvn = gc->lSn; /* l(v^n) */
    memcpy(lvn, lv, (size_t)n * sizeof *lvn);
    for (int32_t i = 1; i < n; ++i) {
        const int32_t p = s->parent[i];
        const double dv = S[p] - S[i];
        gc->lb[i] += -gc->y[i] * x[p] - gc->y[i] * dv - ld[i];
        gc->la[i] += -gc->y[p] * x[i] + gc->y[p] * dv - ld[p];
        const double ldv = -gc->b[i] * gc->y[i] + gc->a[i] * gc->y[p];
        lvn[p] += ldv;
        lvn[i] -= ldv;
    }
    for (int32_t i = 0; i < n; ++i) gc->lcap[i] += ld[i];
    /* the currents: outputs (fields, rhs, d) with adjoints (lFc, y, l(d)); the ions' adjoints
     * pass through (they read e, ci, co of S^n and add to i, which the phase zeroed first) */
    memset(gc->lSn + n, 0, (size_t)(gc->S - n) * sizeof *gc->lSn);
    double *lion_n = lion ? gc->lSn + gc->o_ion : NULL;
    if (lion) {
        memcpy(lion_n, lion, (size_t)(gc->S - gc->o_ion) * sizeof *lion_n);
        gion_load(g->ion, gc->mb, n, S + gc->o_ion);
    }
    int64_t o = n;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const int64_t ni = ns_model_block_instances(gc->mb, k), m = n_fields_of(g, gc, k);
        const int *node = ns_model_block_node_index(gc->mb, k);
        double *lo = gc->lFc + lfc_off(g, gc, k); /* l_out: fields (the state phase's), rhs, d */
        for (int64_t i = 0; i < ni; ++i) {
            lo[m + i] = gc->y[node[i]];
            lo[m + ni + i] = ld[node[i]];
        }
        mech_vjp(g, gc, k, PH_CURRENT, tm, S, S + o, lo, lvn, gc->lSn + o, lion_n);
        o += m;
    }
    if (lion_n) gion_zero_i(g->ion, n, lion_n);
    if (gc->ev) gev_vjp_current(gc->ev, tm, S, S + o, gc->lFc + lo_syn, gc->y, ld, lvn, gc->lSn + o, dt, celsius);
    double *sw = gc->lS;
    gc->lS = gc->lSn;
    gc->lSn = sw;
    /* the step's events: S above is after them; the fields before them are taped last */
    if (gc->ev) gev_vjp_deliver(g->ev, gc->ev, step, S, x + 2 * n, gc->lS + o_syn, gc->lS, dt, celsius);
}

/* ---- runs ---- */



/* l(y) of sample `sample` at site `site` */
double grad_dl_dy(const ns_grad_t *g, const run_ctx *r, int64_t sample, int32_t site) {
    const size_t q = (size_t)sample * (size_t)g->sim->n_recs + (size_t)site;
    if (r->loss->dldy) return r->loss->dldy[q];
    const double w = r->loss->weight ? r->loss->weight[q] : 1.0;
    return 2.0 * w * (r->traces[q] - r->loss->target[q]);
}

static void record(const ns_grad_t *g, const gcell *gc, const run_ctx *r, int64_t step) {
    const ns_sim_t *sim = g->sim;
    const int64_t every = sim->options.record_every;
    if (step % every) return;
    for (int32_t k = 0; k < sim->n_recs; ++k)
        if (sim->recs[k].cell == gc->cell)
            r->traces[(size_t)(step / every) * (size_t)sim->n_recs + (size_t)k] = gc->v[sim->recs[k].node];
}

static void add_loss_adjoint(const ns_grad_t *g, gcell *gc, const run_ctx *r, int64_t step) {
    const ns_sim_t *sim = g->sim;
    const int64_t every = sim->options.record_every;
    if (step % every) return;
    for (int32_t k = 0; k < sim->n_recs; ++k)
        if (sim->recs[k].cell == gc->cell) gc->lS[sim->recs[k].node] += grad_dl_dy(g, r, step / every, k);
}

/* Where a run's buffer gc->ck holds (for checkpoints every K steps, n_ck of
 * them): the checkpoints (n_ck states), one segment's tape (K records), its
 * steps' times (K), the checkpoints' times (n_ck). */
static size_t ck_doubles(const gcell *gc, int64_t n_ck, int64_t K) {
    return (size_t)n_ck * ((size_t)gc->S + 1) + (size_t)K * (tape_of(gc) + 1);
}
/* Steps per segment: checkpoint_every, or (0) the whole run when its tape fits
 * tape_bytes (0: NS_GRAD_TAPE_BYTES) per thread, else about sqrt(steps) */
static int64_t segment_of(const ns_grad_t *g, int64_t steps) {
    int64_t K = g->options.checkpoint_every;
    if (K <= 0) {
        const size_t limit = g->options.tape_bytes ? g->options.tape_bytes : NS_GRAD_TAPE_BYTES;
        size_t most = 0;
        for (int64_t c = 0; c < g->n_cells; ++c) {
            const size_t want = ck_doubles(&g->cells[c], 1, steps);
            if (g->backend == NS_BACKEND_CUDA) most += want; /* every cell's at once, in device memory */
            else most = want > most ? want : most;
        }
        if ((double)most * sizeof(double) <= (double)limit) return steps;
        K = (int64_t)ceil(sqrt((double)steps));
        while (K * K < steps) ++K;
    }
    if (K > steps) K = steps;
    return K < 1 ? 1 : K;
}

static double *ck_times(gcell *gc, const run_ctx *r) {
    const int64_t n_ck = (r->steps + r->K - 1) / r->K;
    return gc->ck + (size_t)n_ck * (size_t)gc->S + (size_t)r->K * (tape_of(gc) + 1);
}

/* Returns 0, or -1 when v stopped being finite (r's fault_* filled in: the
 * error is made on the calling thread, whose message the caller reads). */
static int forward_cell(const ns_grad_t *g, gcell *gc, const run_ctx *r, int64_t c) {
    const double dt = g->sim->params.dt;
    initialize(g, gc, gc->Fc, NULL);
    record(g, gc, r, 0);
    double t = 0.0;
    /* the last segment (with one segment, the whole run: every state kept): the forward pass
     * writes its tape, which the reverse sweep walks first without recomputing it */
    const int64_t n_ck = (r->steps + r->K - 1) / r->K, n_last = (n_ck - 1) * r->K;
    double *tape = gc->ck + (size_t)n_ck * (size_t)gc->S, *times = tape + (size_t)r->K * tape_of(gc);
    for (int64_t n = 0; n < r->steps; ++n) {
        if (n % r->K == 0) {
            save_state(g, gc, gc->ck + (size_t)(n / r->K) * (size_t)gc->S);
            ck_times(gc, r)[n / r->K] = t;
        }
        const int taped = n >= n_last;
        if (taped) times[n - n_last] = t;
        if (step(g, gc, n, t, taped ? tape + (size_t)(n - n_last) * tape_of(gc) : NULL, 0)) {
            int32_t bad = 0;
            while (bad < gc->n - 1 && isfinite(gc->v[bad])) ++bad;
            r->fault_step[c] = n + 1;
            r->fault_node[c] = bad;
            return -1;
        }
        t = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
        record(g, gc, r, n + 1);
    }
    return 0;
}

static void reverse_cell(const ns_grad_t *g, gcell *gc, const run_ctx *r) {
    const double dt = g->sim->params.dt;
    const int32_t n = gc->n;
    memset(gc->lS, 0, (size_t)gc->S * sizeof *gc->lS);
    memset(gc->la, 0, (size_t)n * sizeof *gc->la);
    memset(gc->lb, 0, (size_t)n * sizeof *gc->lb);
    memset(gc->lcap, 0, (size_t)n * sizeof *gc->lcap);
    memset(gc->lglob, 0, (size_t)g->goff[g->model->n_mechs] * sizeof *gc->lglob);
    if (gc->ev) gev_reverse_begin(gc->ev);
    const int64_t n_ck = (r->steps + r->K - 1) / r->K;
    const size_t R = tape_of(gc);
    double *seg = gc->ck + (size_t)n_ck * (size_t)gc->S, *times = seg + (size_t)r->K * R;
    for (int64_t c = n_ck - 1; c >= 0; --c) {
        const int64_t n0 = c * r->K, n1 = n0 + r->K < r->steps ? n0 + r->K : r->steps;
        double t = ck_times(gc, r)[c]; /* the checkpoint's time, as the forward pass accumulated it */
        load_state(g, gc, gc->ck + (size_t)c * (size_t)gc->S);
        for (int64_t q = c == n_ck - 1 ? n1 : n0; q < n1; ++q) { /* the last: the forward pass taped it */
            times[q - n0] = t;
            step(g, gc, q, t, seg + (size_t)(q - n0) * R, q + 1 == n1);
            t = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
        }
        for (int64_t q = n1 - 1; q >= n0; --q) {
            add_loss_adjoint(g, gc, r, q + 1);
            reverse_step(g, gc, seg + (size_t)(q - n0) * R, q, times[q - n0]);
        }
    }
    add_loss_adjoint(g, gc, r, 0);
    /* finitialize: v = v_init, the fields from INITIAL (its inputs v and the parameters; with
     * live ions in reverse type order, through the ions and Nernst) */
    double *lion = gion_live(g->ion) ? gc->lS + gc->o_ion : NULL;
    initialize(g, gc, gc->Fc, lion ? gc->snap : NULL);
    double l_vnodes = 0.0;
    memset(gc->lSn, 0, (size_t)gc->S * sizeof *gc->lSn);
    for (int32_t q = 0; q < g->model->n_mechs; ++q) {
        const int32_t k = lion ? g->model->n_mechs - 1 - q : q;
        const int64_t o = field_off(g, gc, k);
        if (lion) ions_before(g, gc, k, lion);
        grad_pre_init_fields(g, gc, k, gc->Fc + o);
        mech_vjp(g, gc, k, PH_INIT, 0.0, gc->v, gc->Fc + o, gc->lS + o, gc->lSn, gc->lSn + o, lion);
    }
    if (gc->ev)
        gev_vjp_init(g->ev, gc->ev, gc->lS + field_off(g, gc, g->model->n_mechs), gc->lSn, g->sim->params.dt,
                     g->sim->params.celsius);
    for (int32_t i = 0; i < n; ++i) l_vnodes += gc->lS[i] + gc->lSn[i];
    gc->l_vinit = l_vnodes;
    /* lSn now holds l(fields before INITIAL) (from n on) */
}

/* The cell's parameters' derivatives from its adjoints */
double grad_param_grad(const ns_grad_t *g, const gcell *gc, const gparam *p) {
    const sim_shape *s = &g->sim->shapes[gc->shape];
    double acc = 0.0;
    switch (p->kind) {
    case P_CM:
        for (int32_t i = 0; i < gc->n; ++i)
            if (p->on[i] && s->region[i] >= 0) acc += ns_sim_cap_factor(g->sim) * gc->lcap[i];
        return acc;
    case P_RA: {
        /* a, b proportional to 1/Ra */
        const double ra = g->sim->params.Ra / gc->ra_scale;
        for (int32_t i = 1; i < gc->n; ++i) acc += gc->la[i] * gc->a[i] + gc->lb[i] * gc->b[i];
        return -acc / ra;
    }
    case P_VINIT: return gc->l_vinit;
    case P_GLOBAL: return gc->lglob[g->goff[p->mech] + p->field];
    case P_NET: return gev_param_grad(g->ev, gc->ev, p->field);
    default: {
        int64_t o = gc->n;
        for (int32_t k = 0; k < p->mech; ++k) o += n_fields_of(g, gc, k);
        const int64_t ni = ns_model_block_instances(gc->mb, p->mech);
        const int *node = ns_model_block_node_index(gc->mb, p->mech);
        for (int64_t i = 0; i < ni; ++i)
            if (p->on[node[i]]) acc += gc->lSn[o + (int64_t)p->field * ni + i];
        return acc;
    }
    }
}

/* cm, Ra and v_init of the cell from the parameters */
void grad_apply_cable(const ns_grad_t *g, gcell *gc) {
    const sim_shape *s = &g->sim->shapes[gc->shape];
    gc->ra_scale = 1.0;
    gc->v_init = g->sim->params.v_init;
    memcpy(gc->cap, s->cap, (size_t)gc->n * sizeof *gc->cap);
    for (int32_t q = 0; q < g->n_params; ++q) {
        const gparam *p = &g->params[q];
        if (p->cell != gc->cell || !p->set) continue;
        if (p->kind == P_RA) gc->ra_scale = g->sim->params.Ra / p->value;
        if (p->kind == P_VINIT) gc->v_init = p->value;
        if (p->kind == P_CM)
            for (int32_t i = 0; i < gc->n; ++i)
                if (p->on[i] && s->region[i] >= 0) gc->cap[i] = ns_sim_cap_factor(g->sim) * p->value;
    }
    for (int32_t i = 0; i < gc->n; ++i) {
        gc->a[i] = s->a[i] * gc->ra_scale;
        gc->b[i] = s->b[i] * gc->ra_scale;
    }
}

/* The run's events (grad_events.c): the trains'; with detectors that reach
 * synapses, every cell in lockstep (the simulation's phases) to find their
 * spikes, which the gradient then holds fixed */
static ns_status events_pass(ns_grad_t *g, int64_t steps) {
    const double dt = g->sim->params.dt;
    ns_status st = gev_run_begin(g->ev);
    if (st == NS_OK && gev_needs_raster(g->ev)) {
        for (int64_t c = 0; c < g->n_cells && st == NS_OK; ++c) {
            grad_apply_cable(g, &g->cells[c]);
            initialize(g, &g->cells[c], g->cells[c].Fc, NULL);
            st = gev_detect(g->ev, c, g->cells[c].v, 0.0);
        }
        double t = 0.0;
        for (int64_t n = 0; n < steps && st == NS_OK; ++n) {
            const double t1 = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
            for (int64_t c = 0; c < g->n_cells; ++c) step(g, &g->cells[c], n, t, NULL, 0); /* faults: forward_cell's */
            for (int64_t c = 0; c < g->n_cells && st == NS_OK; ++c) st = gev_detect(g->ev, c, g->cells[c].v, t1);
            t = t1;
        }
    }
    gev_run_ready(g->ev, steps, dt);
    return st;
}

/* Every cell forward and back, `threads` at once: gval as grad_cuda_sweep's */
static void cpu_sweep(ns_grad_t *g, const run_ctx *rp, double *gval, int64_t threads) {
    const run_ctx r = *rp;
    const int64_t nc = g->n_cells, n_ck = (r.steps + r.K - 1) / r.K;
    (void)threads; /* without OpenMP: one */
#ifdef NS_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads((int)threads)
#endif
    for (int64_t c = 0; c < nc; ++c) {
        gcell *gc = &g->cells[c];
        int64_t th = 0;
#ifdef NS_HAVE_OPENMP
        th = omp_get_thread_num();
#endif
        const size_t want = ck_doubles(gc, n_ck, r.K);
        if (g->tcap[th] < want) { /* grown, never shrunk: a new buffer's pages are faulted in on first touch */
            free(g->tbuf[th]);
            g->tbuf[th] = malloc(want * sizeof(double));
            g->tcap[th] = g->tbuf[th] ? want : 0;
        }
        gc->ck = g->tbuf[th];
        if (!gc->ck) {
            r.fault_step[c] = -1;
            continue;
        }
        grad_apply_cable(g, gc);
        if (forward_cell(g, gc, &r, c) == 0) {
            reverse_cell(g, gc, &r);
            for (int32_t q = 0; q < g->n_params; ++q)
                if (g->params[q].cell == gc->cell)
                    gval[(size_t)c * (size_t)(g->n_params + 1) + (size_t)q] = grad_param_grad(g, gc, &g->params[q]);
        }
        gc->ck = NULL;
    }
}

/* Room for `threads` buffers of stored states (cpu_sweep); 0, or -1 out of memory */
static int tbuf_reserve(ns_grad_t *g, int64_t threads) {
    if (threads <= g->n_tbuf) return 0;
    double **b = realloc(g->tbuf, (size_t)threads * sizeof *b);
    if (b) g->tbuf = b;
    size_t *c = realloc(g->tcap, (size_t)threads * sizeof *c);
    if (c) g->tcap = c;
    if (!b || !c) return -1;
    for (int64_t t = g->n_tbuf; t < threads; ++t) {
        g->tbuf[t] = NULL;
        g->tcap[t] = 0;
    }
    g->n_tbuf = threads;
    return 0;
}

ns_status ns_grad_run(ns_grad_t *g, int64_t steps, const ns_grad_loss *loss, double *value, double *grad_out,
                      double *traces) {
    if (!g || !loss || !value || (!grad_out && g && g->n_params > 0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_run: grad, loss, value and grad_out must not be NULL");
    if (steps < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_run: steps = %lld must be >= 1", (long long)steps);
    if (!loss->dldy && !loss->target)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_run: the loss needs a target or dldy");
    const ns_sim_t *sim = g->sim;
    run_ctx r = {steps, segment_of(g, steps), steps / sim->options.record_every + 1, loss, traces, NULL, NULL};
    const size_t n_samp = (size_t)r.samples * (size_t)sim->n_recs;
    double *own = NULL;
    if (!r.traces) r.traces = own = calloc(n_samp ? n_samp : 1, sizeof *own);
    r.fault_step = calloc((size_t)g->n_cells, sizeof *r.fault_step);
    r.fault_node = calloc((size_t)g->n_cells, sizeof *r.fault_node);
    double *gval = calloc((size_t)g->n_cells * (size_t)(g->n_params + 1), sizeof *gval);
    const int64_t n_ck = (steps + r.K - 1) / r.K;
    ns_status st = NS_OK;
    if (!r.traces || !r.fault_step || !r.fault_node || !gval)
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: run of %lld steps", (long long)steps);
    const int64_t nc = g->n_cells;
    int64_t threads = 1;
#ifdef NS_HAVE_OPENMP
    threads = g->options.threads > 0 ? g->options.threads : omp_get_max_threads();
#endif
    /* the stored states of the cells being worked on: one per thread (each
     * cell's loss adjoint reads its own samples only, so a cell goes forward
     * and back before the next) */
    size_t most = 0;
    for (int64_t c = 0; c < nc; ++c) {
        const size_t want = ck_doubles(&g->cells[c], n_ck, r.K) * sizeof(double);
        most = want > most ? want : most;
    }
    g->bytes = g->work_bytes + most * (size_t)(threads < nc ? threads : nc);
    if (st == NS_OK && g->ev) st = events_pass(g, steps);
    if (st == NS_OK) {
        ++g->runs;
        memset(r.traces, 0, n_samp * sizeof *r.traces);
        if (g->backend == NS_BACKEND_CUDA) st = grad_cuda_sweep(g, &r, gval, &g->bytes);
        else if (tbuf_reserve(g, threads))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: buffers of %lld threads", (long long)threads);
        else cpu_sweep(g, &r, gval, threads);
        for (int64_t c = 0; c < nc && st == NS_OK; ++c) {
            if (r.fault_step[c] < 0)
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: stored states of cell %lld (%lld steps)", (long long)c,
                             (long long)steps);
            else if (r.fault_step[c])
                st = ns_fail(NS_ERR_NOT_FINITE, "gradient: v not finite after step %lld in cell %lld (compartment %d)",
                             (long long)r.fault_step[c], (long long)c, r.fault_node[c]);
        }
    }
    if (st == NS_OK) {
        double L = 0.0;
        for (size_t q = 0; q < n_samp; ++q) {
            if (loss->dldy) L += loss->dldy[q] * r.traces[q];
            else {
                const double w = loss->weight ? loss->weight[q] : 1.0, e = r.traces[q] - loss->target[q];
                L += w * e * e;
            }
        }
        *value = L;
        for (int32_t q = 0; q < g->n_params; ++q) {
            double acc = 0.0;
            for (int64_t c = 0; c < nc; ++c) acc += gval[(size_t)c * (size_t)(g->n_params + 1) + (size_t)q];
            grad_out[q] = acc;
        }
    }
    free(own);
    free(r.fault_step);
    free(r.fault_node);
    free(gval);
    return st;
}

/* ---- the handle ---- */

static ns_status refuse(const ns_mech_desc *d) {
    if (d->has_random)
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient: mechanism %s draws random numbers: not differentiable",
                       d->name);
    if (d->n_ldifus) /* the sweeps run no diffusion between segments (mech/ldifus.c) */
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient: mechanism %s has LONGITUDINAL_DIFFUSION of %s: not "
                       "differentiable yet", d->name, d->field_names[d->ldifus_field[0]]);
    if (d->n_pointers)
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient: mechanism %s has POINTER %s: not differentiable yet", d->name,
                       d->pointer_names[0]);
    if (!d->vjp_init || !d->vjp_current || !d->vjp_state)
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient: mechanism %s has no derivative code: %s", d->name,
                       d->vjp_why_not ? d->vjp_why_not : "(none given)");
    return NS_OK;
}

void ns_grad_destroy(ns_grad_t *g) {
    if (!g) return;
    for (int64_t c = 0; g->cells && c < g->n_cells; ++c) {
        gcell *gc = &g->cells[c];
        ns_model_block_free(gc->mb);
        free(gc->stims);
        free(gc->a);
        free(gc->lglob);
        free(gc->snap);
        free(gc->fptr);
        free(gc->gat);
        free(gc->gato);
        free(gc->gkeep);
        free(gc->gview);
    }
    gion_free(g->ion);
    for (int64_t t = 0; t < g->n_tbuf; ++t) free(g->tbuf[t]);
    free(g->tbuf);
    free(g->tcap);
    for (int32_t q = 0; q < g->n_params; ++q) free(g->params[q].on);
    free(g->params);
    gev_destroy(g->ev);
    free(g->goff);
    free(g->gwant);
    free(g->ci);
    free(g->cells);
    free(g);
}

ns_status ns_grad_create(const ns_sim_t *sim, const ns_grad_options *options, ns_grad_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_create: out is NULL");
    *out = NULL;
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_create: sim is NULL");
    if (!sim->model)
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient: the simulation needs a model (ns_sim_options.model: the "
                                           "built-in pas and hh or a mechanism library)");
    if (sim->dist) return ns_fail(NS_ERR_UNSUPPORTED, "gradient: a simulation spread over processes");
    if (options && (options->checkpoint_every < 0 || options->threads < 0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_create: checkpoint_every = %lld and threads = %d must be >= 0",
                       (long long)options->checkpoint_every, options->threads);
    ns_grad_t *g = calloc(1, sizeof *g);
    if (!g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: handle");
    ns_status e = gion_create(sim->model, &g->ion);
    for (int32_t k = 0; e == NS_OK && k < sim->model->n_mechs; ++k) {
        e = refuse(sim->model->mechs[k].desc);
        if (e == NS_OK) e = gion_refuse(g->ion, sim->model, k);
    }
    if (e) {
        gion_free(g->ion);
        free(g);
        return e;
    }
    g->sim = sim;
    g->model = sim->model;
    if (options) g->options = *options;
    g->n_cells = sim->n_cells;
    g->cells = calloc((size_t)sim->n_cells, sizeof *g->cells);
    g->goff = calloc((size_t)sim->model->n_mechs + 1, sizeof *g->goff);
    ns_status ste = gev_create(sim, &g->ev);
    if (ste) {
        ns_grad_destroy(g);
        return ste;
    }
    for (int32_t k = 0; g->goff && k < sim->model->n_mechs; ++k)
        g->goff[k + 1] = g->goff[k] + sim->model->mechs[k].desc->n_globals;
    const size_t n_glob = g->goff ? (size_t)g->goff[sim->model->n_mechs] : 0;
    g->gwant = calloc(n_glob + 1, 1);
    g->ci = calloc((size_t)sim->model->n_mechs + 1, 1);
    for (int32_t k = 0; g->ci && k < sim->model->n_mechs; ++k) g->ci[k] = (unsigned char)gion_constant(sim->model, k);
    ns_status st = g->cells && g->goff && g->gwant && g->ci
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: %lld cells", (long long)sim->n_cells);
    for (int64_t c = 0; st == NS_OK && c < sim->n_cells; ++c) {
        gcell *gc = &g->cells[c];
        gc->cell = c;
        gc->shape = sim->cell_shape[c];
        gc->n = sim->shapes[gc->shape].n;
        st = ns_model_block_create(sim->model, NULL, gc->shape, gc->n, 1, NULL, &gc->mb); /* its own TABLEs */
        if (st) break;
        gc->ev = gev_cell_of(g->ev, c);
        gc->S = gc->n + gev_fields(gc->ev);
        int64_t gap = 0, max_jac = 0; /* gap: lFc's rows of the currents' rhs and d (lfc_off) */
        int max_nf = 1, max_ions = 1;
        for (int32_t k = 0; k < sim->model->n_mechs; ++k) {
            const ns_mech_desc *d = sim->model->mechs[k].desc;
            const int64_t ni = ns_model_block_instances(gc->mb, k);
            if (d->n_fields > max_nf) max_nf = d->n_fields;
            if (d->n_ions > max_ions) max_ions = d->n_ions;
            const int64_t nio = 4 * d->n_ions,
                          j = (int64_t)(d->n_fields + 2) + (1 + d->n_fields + d->n_globals + nio) +
                              (d->n_globals + nio) * ni;
            gc->S += n_fields_of(g, gc, k);
            gap += 2 * ni;
            if (j > max_jac) max_jac = j;
        }
        gc->o_ion = gc->S;
        gc->S += 4 * (int64_t)gc->n * gion_live(g->ion);
        for (int64_t q = 0; q < sim->n_stims; ++q) gc->n_stims += sim->stims[q].cell == c;
        gc->stims = malloc((size_t)(gc->n_stims ? gc->n_stims : 1) * sizeof *gc->stims);
        const size_t n = (size_t)gc->n, S = (size_t)gc->S;
        /* a, b, cap, rhs, d, x, vn, y, dw, la, lb, lcap: n each; v: n; Fc: S; lFc: S + gap
         * (lfc_off); lS, lSn: S each; out: v (n); jac: an instance's outputs' adjoints and its
         * inputs' (the vector-Jacobian product), or a block's GLOBALs' */
        const size_t tot = 12 * n + n + S + (S + (size_t)gap) + 2 * S + n + (size_t)max_jac;
        gc->a = calloc(tot, sizeof(double));
        gc->v = gc->a ? gc->a + 12 * n : NULL;
        gc->lglob = calloc(n_glob + 1, sizeof *gc->lglob);
        const size_t n_snap = (size_t)(sim->model->n_mechs + 1) * (size_t)(gc->S - gc->o_ion);
        gc->snap = n_snap ? malloc(n_snap * sizeof *gc->snap) : NULL;
        g->work_bytes += n_snap * sizeof *gc->snap;
        gc->fptr = malloc((size_t)max_nf * sizeof *gc->fptr);
        const int32_t nm = sim->model->n_mechs;
        gc->gato = malloc((size_t)(nm + 1) * sizeof *gc->gato);
        gc->gkeep = calloc((size_t)nm + 1, sizeof *gc->gkeep);
        for (int32_t k = 0; gc->gato && k <= nm; ++k)
            gc->gato[k] = !k ? 0
                             : gc->gato[k - 1] + ggather_doubles(ns_model_block_instances(gc->mb, k - 1),
                                                                 sim->model->mechs[k - 1].desc->n_ions);
        gc->gat = gc->gato ? malloc((gc->gato[nm] ? gc->gato[nm] : 1) * sizeof *gc->gat) : NULL;
        gc->gview = malloc((size_t)max_ions * sizeof *gc->gview);
        g->work_bytes += gc->gato ? gc->gato[nm] * sizeof *gc->gat : 0;
        if (!gc->stims || !gc->a || !gc->lglob || (n_snap && !gc->snap) || !gc->fptr || !gc->gat || !gc->gview ||
            !gc->gkeep) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: cell %lld", (long long)c);
            break;
        }
        for (int64_t q = 0, j = 0; q < sim->n_stims; ++q)
            if (sim->stims[q].cell == c) gc->stims[j++] = sim->stims[q];
        double *w = gc->a;
        gc->b = w + n;
        gc->cap = w + 2 * n;
        gc->rhs = w + 3 * n;
        gc->d = w + 4 * n;
        gc->x = w + 5 * n;
        gc->vn = w + 6 * n;
        gc->y = w + 7 * n;
        gc->dw = w + 8 * n;
        gc->la = w + 9 * n;
        gc->lb = w + 10 * n;
        gc->lcap = w + 11 * n;
        gc->Fc = gc->v + n;
        gc->lFc = gc->Fc + S;
        gc->lS = gc->lFc + S + (size_t)gap;
        gc->lSn = gc->lS + S;
        gc->out = gc->lSn + S;
        gc->jac = gc->out + n;
        g->work_bytes += tot * sizeof(double);
        if (gc->ev) st = gev_cell_bind(g->ev, c, gc->v, gc->rhs, gc->d, gc->mb);
    }
    g->work_bytes += gev_bytes(g->ev);
    char why[256] = "";
    if (st == NS_OK) {
        const int no = grad_cuda_why_not(g, why, sizeof why);
        g->backend = grad_backend_choose(g->options.backend, sim->backend, no ? why : NULL);
        if (g->options.backend == NS_BACKEND_CUDA && no)
            st = ns_fail(NS_ERR_UNSUPPORTED, "gradient on the GPU: %s (docs/gradients.md, \"On the GPU\")", why);
    }
    if (st) {
        ns_grad_destroy(g);
        return st;
    }
    *out = g;
    return NS_OK;
}

int32_t ns_grad_params(const ns_grad_t *g) { return g ? g->n_params : 0; }
size_t ns_grad_bytes(const ns_grad_t *g) { return g ? g->bytes : 0; }
ns_backend ns_grad_backend(const ns_grad_t *g) { return g ? g->backend : NS_BACKEND_CPU; }
int64_t ns_grad_samples(const ns_grad_t *g, int64_t steps) {
    return g && steps >= 0 ? steps / g->sim->options.record_every + 1 : 0;
}
int32_t ns_grad_sites(const ns_grad_t *g) { return g ? g->sim->n_recs : 0; }
