/* The CPU loop: cells spread over OpenMP threads; each thread advances one
 * cell through all the steps of a call before taking the next (cells are
 * independent, so this keeps a cell's state in cache). One step is NEURON's
 * nrn_fixed_step_thread (fadvance.cpp, treeset.cpp) for one cell:
 *
 *   t += dt/2
 *   rhs = 0, d = 0
 *   pas:    rhs -= i(v),              d += (i(v + .001) - i(v)) / .001
 *   IClamp: rhs += i(t) * 1e2 / area  (in the order the clamps were added)
 *   hh:     rhs -= i(v),              d += (i(v + .001) - i(v)) / .001
 *   d += cm * 1e-3/dt
 *   axial, for every node i with parent p in index order:
 *           rhs[i] -= b[i] (v[p] - v[i]),  rhs[p] += a[i] (v[p] - v[i])
 *           d[i] -= b[i],                  d[p] -= a[i]
 *   Hines solve (triang from the leaves, bksub from the root); v += rhs
 *   t += dt/2
 *   hh gates by cnexp with the new v
 *
 * Mechanisms run one after the other over the whole cell, as NEURON runs them
 * (pas before IClamp before hh: NEURON's mechanism type order), so that the
 * sums at each node add in NEURON's order. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "cable/sim_impl.h"
#include "core/error.h"

static void init_cell(const ns_sim_t *sim, int64_t c) {
    const sim_shape *s = &sim->shapes[sim->cell_shape[c]];
    const int64_t o = sim->cell_offset[c];
    double *v = sim->v + o, *m = sim->m + o, *h = sim->h + o, *n = sim->n + o;
    for (int32_t i = 0; i < s->n; ++i) {
        v[i] = sim->params.v_init;
        m[i] = h[i] = n[i] = 0.0;
        const int r = s->region[i];
        if (r < 0 || !sim->region[r].hh) continue;
        /* hh's INITIAL: rates(v); m = minf; h = hinf; n = ninf */
        ns_hh_rates q;
        ns_hh_rates_of(&sim->table, sim->params.usetable, sim->q10, v[i], &q);
        m[i] = q.minf;
        h[i] = q.hinf;
        n[i] = q.ninf;
    }
}

static ns_status cpu_init(ns_sim_t *sim) {
    const int64_t nc = sim->n_cells;
#ifdef NS_HAVE_OPENMP
    const int threads = sim->options.threads > 0 ? sim->options.threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (sim->method == NS_HINES_OPENMP)
#endif
    for (int64_t c = 0; c < nc; ++c) init_cell(sim, c);
    return NS_OK;
}

/* The local fault of one cell: the first step it went non-finite. */
typedef struct cell_fault {
    int64_t step;
    int32_t node;
    double value;
} cell_fault;

/* Advance cell c by `steps` steps from step count `step0` at time t0.
 * d and rhs are scratch of at least the cell's size. Returns 0, or 1 on a
 * fault (filled in), or -1 when a spike could not be stored. */
static int run_cell(ns_sim_t *sim, int64_t c, int64_t step0, int64_t steps, double t0, double *d,
                    double *rhs, cell_fault *fault) {
    const sim_shape *s = &sim->shapes[sim->cell_shape[c]];
    const int32_t n = s->n;
    const int64_t o = sim->cell_offset[c];
    double *v = sim->v + o, *m = sim->m + o, *h = sim->h + o, *gn = sim->n + o;
    const int32_t *parent = s->parent;
    const double *a = s->a, *b = s->b;
    const int8_t *region = s->region;
    const sim_region *R = sim->region;
    const double dt = sim->params.dt;
    const double thr = sim->params.spike_threshold;
    const int usetable = sim->params.usetable;
    const double q10 = sim->q10;
    const ns_hh_table *table = &sim->table;
    const int64_t every = sim->options.record_every, check = sim->options.check_every;
    const int64_t st_begin = sim->stim_begin[c], st_end = sim->stim_begin[c + 1];
    const int64_t rc_begin = sim->rec_begin[c], rc_end = sim->rec_begin[c + 1];
    const int32_t nrec = sim->n_recs;
    double t = t0;
    for (int64_t k = 0; k < steps; ++k) {
        const double tp = t;
        const double tm = ns_sim_half_step(t, dt);
        /* pas (and the zero start of rhs and d) */
        for (int32_t i = 0; i < n; ++i) {
            rhs[i] = 0.0;
            d[i] = 0.0;
            const int r = region[i];
            if (r < 0 || !R[r].pas) continue;
            const double g1 = ns_pas_current(v[i] + .001, R[r].g_pas, R[r].e_pas);
            const double i0 = ns_pas_current(v[i], R[r].g_pas, R[r].e_pas);
            rhs[i] -= i0;
            d[i] += (g1 - i0) / .001;
        }
        /* IClamp: an ELECTRODE_CURRENT in nA, turned into mA/cm^2 by 1e2/area;
         * its slope is 0, so d is left alone */
        for (int64_t q = st_begin; q < st_end; ++q) {
            const sim_stim *stim = &sim->stims[sim->stim_order[q]];
            const double i = (tm < stim->del + stim->dur && tm >= stim->del) ? stim->amp : 0.0;
            rhs[stim->node] += i * s->stim_scale[stim->node];
        }
        /* hh, then the capacitance */
        for (int32_t i = 0; i < n; ++i) {
            const int r = region[i];
            if (r < 0) continue;
            if (R[r].hh) {
                const sim_region *q = &R[r];
                const double g1 = ns_hh_current(v[i] + .001, m[i], h[i], gn[i], q->gnabar, q->gkbar, q->gl,
                                                q->el, q->ena, q->ek);
                const double i0 =
                    ns_hh_current(v[i], m[i], h[i], gn[i], q->gnabar, q->gkbar, q->gl, q->el, q->ena, q->ek);
                rhs[i] -= i0;
                d[i] += (g1 - i0) / .001;
            }
            d[i] += s->cap[i];
        }
        /* axial terms */
        for (int32_t i = 1; i < n; ++i) {
            const int32_t p = parent[i];
            const double dv = v[p] - v[i];
            rhs[i] -= b[i] * dv;
            rhs[p] += a[i] * dv;
            d[i] -= b[i];
            d[p] -= a[i];
        }
        const int32_t bad = ns_hines_solve_one(n, parent, a, b, d, rhs);
        const double v_spike_old = v[s->spike_node];
        for (int32_t i = 0; i < n; ++i) v[i] += rhs[i];
        t = ns_sim_half_step(tm, dt);
        const int64_t step = step0 + k + 1;
        if (bad >= 0) { /* a zero or non-finite pivot: the solve stopped there */
            fault->step = step;
            fault->node = bad;
            fault->value = NAN;
            return 1;
        }
        if ((step % check) == 0 || k == steps - 1) {
            for (int32_t i = 0; i < n; ++i)
                if (!isfinite(v[i])) {
                    fault->step = step;
                    fault->node = i;
                    fault->value = v[i];
                    return 1;
                }
        }
        /* hh gates from the new v */
        for (int32_t i = 0; i < n; ++i) {
            const int r = region[i];
            if (r < 0 || !R[r].hh) continue;
            ns_hh_rates q;
            ns_hh_rates_of(table, usetable, q10, v[i], &q);
            m[i] = ns_cnexp(m[i], q.minf, q.mtau, dt);
            h[i] = ns_cnexp(h[i], q.hinf, q.htau, dt);
            gn[i] = ns_cnexp(gn[i], q.ninf, q.ntau, dt);
        }
        const double v_spike = v[s->spike_node];
        if (v_spike_old < thr && v_spike >= thr) {
            const double tc = tp + (t - tp) * (thr - v_spike_old) / (v_spike - v_spike_old);
            if (ns_sim_push_spike(sim, c, tc) != 0) return -1;
        }
        if (step % every == 0 && rc_end > rc_begin) {
            double *row = sim->traces + (size_t)(step / every) * (size_t)nrec;
            for (int64_t q = rc_begin; q < rc_end; ++q) {
                const int32_t site = sim->rec_order[q];
                row[site] = v[sim->recs[site].node];
            }
        }
    }
    return 0;
}

static ns_status cpu_advance(ns_sim_t *sim, int64_t steps, sim_fault *fault) {
    const int64_t nc = sim->n_cells;
    const int64_t step0 = sim->steps;
    const double t0 = sim->t;
    int out_of_memory = 0;
    int threads = 1;
#ifdef NS_HAVE_OPENMP
    if (sim->method == NS_HINES_OPENMP)
        threads = sim->options.threads > 0 ? sim->options.threads : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
#endif
    {
        double *d = malloc((size_t)sim->max_n * sizeof *d);
        double *rhs = malloc((size_t)sim->max_n * sizeof *rhs);
        sim_fault mine = {INT64_MAX, -1, -1, 0.0};
        int oom = !d || !rhs;
#ifdef NS_HAVE_OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
        for (int64_t c = 0; c < nc; ++c) {
            if (oom) continue;
            cell_fault f;
            const int r = run_cell(sim, c, step0, steps, t0, d, rhs, &f);
            if (r < 0) oom = 1;
            if (r > 0 && (f.step < mine.step || (f.step == mine.step && c < mine.cell))) {
                mine.step = f.step;
                mine.cell = c;
                mine.node = f.node;
                mine.value = f.value;
            }
        }
        free(d);
        free(rhs);
#ifdef NS_HAVE_OPENMP
#pragma omp critical(ns_sim_fault)
#endif
        {
            if (oom) out_of_memory = 1;
            if (mine.step < fault->step || (mine.step == fault->step && mine.cell < fault->cell)) *fault = mine;
        }
    }
    (void)threads;
    if (out_of_memory) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: scratch or spike storage");
    return NS_OK;
}

static ns_status cpu_create(ns_sim_t *sim) {
    (void)sim;
    return NS_OK;
}

static void cpu_destroy(ns_sim_t *sim) { (void)sim; }

const sim_ops *ns_sim_cpu_ops(void) {
    static const sim_ops ops = {"cpu", cpu_create, cpu_destroy, cpu_init, cpu_advance, NULL, NULL};
    return &ops;
}
