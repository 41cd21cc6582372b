/* The simulation handle: shapes' constants, stimuli, recordings, results and
 * the run loop that hands the steps to a backend (sim/cpu/step.c, cuda/). */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "sim/network.h"
#include "sim/sim_impl.h"
#include "sim/policy.h"
#include "core/device_impl.h"
#include "core/error.h"
#include "core/names.h"
#include "core/population.h"
#include "core/timer.h"
#include "neurosolve/device.h"
#include "sim/dist_impl.h"

void ns_sim_options_init(ns_sim_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = NS_BACKEND_AUTO;
    o->method = NS_HINES_AUTO;
    o->threads = 0;
    o->record_every = 1;
    o->check_every = 1;
    o->device = NS_DEVICE_CURRENT;
}

/* A CUDA simulation's calls run on its device and give the caller's
 * current device back (core/device_impl.h). */
static int enter(const ns_sim_t *sim) { return ns_cuda_enter_device(sim->device); }
static void leave(const ns_sim_t *sim, int caller) { ns_cuda_leave_device(sim->device, caller); }

static void shape_free(sim_shape *s) {
    free(s->parent);
    free(s->a);
    free(s->b);
    free(s->cap);
    free(s->stim_scale);
    free(s->region);
    free(s->section);
    free(s->x);
}

static ns_status shape_build(sim_shape *s, const ns_cell_t *cell, const ns_sim_params *p, int32_t k) {
    const ns_tree_t *tree = ns_cell_tree(cell);
    const int32_t n = tree ? ns_tree_size(tree) : 0;
    if (n <= 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: empty cell", (int)k);
    s->n = n;
    size_t z = (size_t)n;
    const ns_array_spec arrays[] = {NS_ARRAY(s->parent, z), NS_ARRAY(s->a, z),          NS_ARRAY(s->b, z),
                                    NS_ARRAY(s->cap, z),    NS_ARRAY(s->stim_scale, z), NS_ARRAY(s->region, z),
                                    NS_ARRAY(s->section, z), NS_ARRAY(s->x, z)};
    if (!ns_alloc_arrays(arrays, sizeof arrays / sizeof *arrays))
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "shape %d: %d compartments", (int)k, (int)n);
    memcpy(s->parent, ns_tree_parent(tree), z * sizeof *s->parent);
    /* a and b are NEURON's (treeset.cpp connection_coef); the d that the
     * matrix call also returns is rebuilt every step, so it is scratch here. */
    ns_status st = ns_cell_matrix(cell, 1.0, p->dt, NS_FORM_NEURON, s->a, s->b, s->cap);
    if (st != NS_OK) {
        char where[48];
        snprintf(where, sizeof where, "shape %d", (int)k);
        ns_error_prefix(where);
        return st;
    }
    const double *area = ns_cell_area(cell);
    const int32_t *type = ns_cell_type(cell);
    const int32_t *sec = ns_cell_section(cell);
    const double *x = ns_cell_position(cell);
    const double cfac = .001 / p->dt; /* NEURON's nrn_cap_jacob factor */
    for (int32_t i = 0; i < n; ++i) {
        if (!(area[i] >= 0.0) || !isfinite(area[i]))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: compartment %d has area %g um^2", (int)k,
                           (int)i, area[i]);
        const int membrane = area[i] > 0.0;
        const ns_region r = ns_region_of_swc_type(type[i]);
        s->region[i] = membrane ? (int8_t)r : (int8_t)-1;
        s->cap[i] = membrane ? cfac * p->region[r].cm : 0.0;
        s->stim_scale[i] = 1.e2 / (membrane ? area[i] : 100.0);
        s->section[i] = sec[i];
        s->x[i] = x[i];
    }
    return ns_cell_locate(cell, 0, 0.5, &s->spike_node);
}


/* The backend and loop through the family's table (core/registry.h) and
 * its auto rule (sim/policy.c). */
static ns_status choose_backend(ns_sim_t *sim) {
    ns_backend be = sim->options.backend;
    ns_hines_method me = sim->options.method;
    const ns_impl_table table = ns_sim_impls();
    const ns_impl *impl = NULL;
    if (me != NS_HINES_AUTO) {
        impl = ns_registry_find(table, (int32_t)me, NULL);
        if (!impl)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "simulation: method '%s' is not a simulation loop (sequential, openmp, onchip, tree)",
                           ns_hines_method_name(me));
        if (be != NS_BACKEND_AUTO && be != impl->backend)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "simulation: method '%s' does not run on backend '%s'",
                           ns_hines_method_name(me), ns_backend_name(be));
        be = impl->backend;
    } else {
        if (be == NS_BACKEND_AUTO) {
            const ns_impl *cuda = ns_registry_for_backend(table, NS_BACKEND_CUDA);
            int have_cuda = ns_sim_model_has_cuda(sim->options.model);
            for (int32_t k = 0; sim->options.shape_models && k < sim->n_shapes; ++k)
                have_cuda &= ns_sim_model_has_cuda(sim->options.shape_models[k]);
            be = ns_sim_auto_backend(cuda && cuda->ops() ? ns_cuda_usable_devices() : 0, have_cuda);
        }
        if (be != NS_BACKEND_CPU && be != NS_BACKEND_CUDA)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "simulation: unknown backend %d", (int)be);
        impl = ns_registry_for_backend(table, be);
        /* the CPU: openmp; CUDA: AUTO stays AUTO, the GPU loop chooses per
         * shape group (src/sim/cuda/policy.c, docs/simulation.md) */
        if (be == NS_BACKEND_CPU) me = NS_HINES_OPENMP;
    }
    ns_status ready = ns_registry_ready(impl, "simulation");
    if (ready != NS_OK) return ready;
    sim->ops = impl->ops();
    sim->backend = be;
    sim->method = me;
    if (be == NS_BACKEND_CUDA) return ns_cuda_resolve_device(sim->options.device, "simulation", &sim->device);
    return NS_OK;
}

ns_status ns_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                        const int32_t *cell_shape, const ns_sim_params *params,
                        const ns_sim_options *options, ns_sim_t **out) {
    if (options && options->dist)
        return ns_dist_sim_create(n_shapes, shapes, n_cells, cell_shape, params, options, out);
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: out is NULL");
    *out = NULL;
    ns_status st = ns_population_check("ns_sim_create", n_shapes, shapes != NULL, n_cells, cell_shape);
    if (st != NS_OK) return st;
    st = ns_sim_params_check(params);
    if (st != NS_OK) return st;
    ns_sim_options o;
    if (options) o = *options;
    else ns_sim_options_init(&o);
    if (o.gpu_lanes < 0 || o.gpu_lanes > 32 || (o.gpu_lanes & (o.gpu_lanes - 1)) != 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: gpu_lanes = %d is not 0, 1, 2, 4, 8, 16 or 32",
                       (int)o.gpu_lanes);
    if (o.gpu_mechanisms < NS_SIM_GPU_MECHANISMS_AUTO || o.gpu_mechanisms > NS_SIM_GPU_MECHANISMS_PER_MECHANISM)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: gpu_mechanisms = %d is not AUTO, FUSED, PER_STEP or PER_MECHANISM",
                       (int)o.gpu_mechanisms);
    if (o.device < NS_DEVICE_CURRENT)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "ns_sim_create: device = %d is neither a device ordinal nor NS_DEVICE_CURRENT", (int)o.device);
    if (o.record_every < 1 || o.check_every < 1 || o.threads < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "ns_sim_create: record_every = %d and check_every = %d must be >= 1, threads = %d >= 0",
                       (int)o.record_every, (int)o.check_every, (int)o.threads);
    for (int32_t k = 0; k < n_shapes; ++k)
        if (!shapes[k]) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_create: shape %d is NULL", (int)k);

    ns_sim_t *sim = calloc(1, sizeof *sim);
    if (!sim) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_create");
    sim->device = -1;
    sim->params = *params;
    sim->options = o;
    sim->n_shapes = n_shapes;
    sim->n_cells = n_cells;
    st = choose_backend(sim);
    if (st != NS_OK) goto fail;
    sim->shapes = calloc((size_t)n_shapes, sizeof *sim->shapes);
    sim->cell_shape = malloc((size_t)n_cells * sizeof *sim->cell_shape);
    sim->cell_offset = malloc((size_t)(n_cells + 1) * sizeof *sim->cell_offset);
    sim->spikes.t = calloc((size_t)n_cells, sizeof *sim->spikes.t);
    sim->spikes.n = calloc((size_t)n_cells, sizeof *sim->spikes.n);
    sim->spikes.cap = calloc((size_t)n_cells, sizeof *sim->spikes.cap);
    if (!sim->shapes || !sim->cell_shape || !sim->cell_offset || !sim->spikes.t || !sim->spikes.n ||
        !sim->spikes.cap) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_create: %lld cells", (long long)n_cells);
        goto fail;
    }
    for (int32_t k = 0; k < n_shapes; ++k) {
        st = shape_build(&sim->shapes[k], shapes[k], params, k);
        if (st != NS_OK) goto fail;
        if (sim->shapes[k].n > sim->max_n) sim->max_n = sim->shapes[k].n;
    }
    {
        /* every simulation runs a model: the options' or the one the params'
         * membrane keys stand for (ns_sim_params_model) */
        ns_sim_model_t *shorthand = NULL;
        if (!o.model && !o.shape_models) st = ns_sim_params_model(params, &shorthand);
        if (st == NS_OK)
            st = ns_sim_model_resolve(shorthand ? shorthand : o.model, o.shape_models, n_shapes, shapes, params,
                                      &sim->model);
        ns_sim_model_destroy(shorthand);
        if (st != NS_OK) goto fail;
        for (int32_t k = 0; k < n_shapes; ++k) /* the model's cm statements (NEURON's cm per segment) */
            for (int32_t i = 0; i < sim->shapes[k].n; ++i)
                if (sim->shapes[k].region[i] >= 0 && !isnan(sim->model->cm[k][i]))
                    sim->shapes[k].cap[i] = .001 / params->dt * sim->model->cm[k][i];
        sim->options.model = NULL; /* read during the call only */
        sim->options.shape_models = NULL;
    }
    sim->cell_offset[0] = 0;
    for (int64_t c = 0; c < n_cells; ++c) {
        sim->cell_shape[c] = cell_shape ? cell_shape[c] : (int32_t)(c % n_shapes);
        sim->cell_offset[c + 1] = sim->cell_offset[c] + sim->shapes[sim->cell_shape[c]].n;
    }
    sim->n_comp = sim->cell_offset[n_cells];
    size_t z = (size_t)sim->n_comp;
    sim->v = malloc(z * sizeof *sim->v);
    if (!sim->v) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_create: state of %lld compartments",
                     (long long)sim->n_comp);
        goto fail;
    }
    sim->dirty = 1;
    {
        const int caller = enter(sim);
        st = sim->ops->create(sim);
        leave(sim, caller);
    }
    if (st != NS_OK) goto fail;
    sim->creating = 1;
    st = ns_sim_init(sim);
    sim->creating = 0;
    if (st != NS_OK) goto fail;
    *out = sim;
    return NS_OK;
fail:
    ns_sim_destroy(sim);
    return st;
}

void ns_sim_destroy(ns_sim_t *sim) {
    if (!sim) return;
    if (sim->dist) {
        ns_dist_sim_destroy(sim->dist); /* and the handle */
        return;
    }
    if (sim->ops && sim->ops->destroy) {
        const int caller = enter(sim);
        sim->ops->destroy(sim);
        leave(sim, caller);
    }
    if (sim->shapes)
        for (int32_t k = 0; k < sim->n_shapes; ++k) shape_free(&sim->shapes[k]);
    free(sim->shapes);
    ns_sim_model_free(sim->model);
    ns_net_free(sim->net);
    free(sim->cell_shape);
    free(sim->cell_offset);
    free(sim->v);
    free(sim->stims);
    free(sim->recs);
    free(sim->stim_begin);
    free(sim->stim_order);
    free(sim->rec_begin);
    free(sim->rec_order);
    free(sim->traces);
    if (sim->spikes.t)
        for (int64_t c = 0; c < sim->n_cells; ++c) free(sim->spikes.t[c]);
    free(sim->spikes.t);
    free(sim->spikes.n);
    free(sim->spikes.cap);
    free(sim);
}

static ns_status grow_traces(ns_sim_t *sim, int64_t upto);
ns_status ns_sim_grow_traces(ns_sim_t *sim, int64_t upto) { return grow_traces(sim, upto); }

ns_status ns_sim_check_site(const ns_sim_t *sim, const char *what, int64_t cell, int32_t node) {
    if (cell < 0 || cell >= sim->n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld is not in the simulation (%lld cells)", what,
                       (long long)cell, (long long)sim->n_cells);
    const int32_t n = sim->shapes[sim->cell_shape[cell]].n;
    if (node < 0 || node >= n)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: compartment %d is outside cell %lld (%d compartments)",
                       what, (int)node, (long long)cell, (int)n);
    return NS_OK;
}

ns_status ns_sim_add_iclamp(ns_sim_t *sim, int64_t cell, int32_t compartment, double delay,
                            double duration, double amplitude) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_add_iclamp: sim is NULL");
    if (sim->dist) return ns_dist_sim_add_iclamp(sim->dist, cell, compartment, delay, duration, amplitude);
    ns_status st = ns_sim_check_site(sim, "IClamp", cell, compartment);
    if (st != NS_OK) return st;
    if (!isfinite(delay) || !isfinite(duration) || !isfinite(amplitude) || duration < 0.0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "IClamp in cell %lld, compartment %d: del = %g ms, dur = %g ms, amp = %g nA must be finite "
                       "with dur >= 0",
                       (long long)cell, (int)compartment, delay, duration, amplitude);
    if (sim->n_stims == sim->cap_stims) {
        int64_t cap = sim->cap_stims ? 2 * sim->cap_stims : 16;
        sim_stim *grown = realloc(sim->stims, (size_t)cap * sizeof *grown);
        if (!grown) return ns_fail(NS_ERR_OUT_OF_MEMORY, "IClamp: %lld stimuli", (long long)cap);
        sim->stims = grown;
        sim->cap_stims = cap;
    }
    sim_stim *s = &sim->stims[sim->n_stims++];
    s->cell = cell;
    s->node = compartment;
    s->del = delay;
    s->dur = duration;
    s->amp = amplitude;
    sim->dirty = 1;
    return NS_OK;
}

ns_status ns_sim_add_recording(ns_sim_t *sim, int64_t cell, int32_t compartment, int32_t *site) {
    if (sim && sim->dist) return ns_dist_sim_add_recording(sim->dist, cell, compartment, site);
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_add_recording: sim is NULL");
    ns_status st = ns_sim_check_site(sim, "recording", cell, compartment);
    if (st != NS_OK) return st;
    if (sim->steps > 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "recording: add sites before the first step (or after ns_sim_init)");
    if (sim->n_recs == sim->cap_recs) {
        if (sim->cap_recs > INT32_MAX / 4) return ns_fail(NS_ERR_SIZE, "recording: too many sites");
        int32_t cap = sim->cap_recs ? 2 * sim->cap_recs : 16;
        sim_rec *grown = realloc(sim->recs, (size_t)cap * sizeof *grown);
        if (!grown) return ns_fail(NS_ERR_OUT_OF_MEMORY, "recording: %d sites", (int)cap);
        sim->recs = grown;
        sim->cap_recs = cap;
    }
    sim->recs[sim->n_recs].cell = cell;
    sim->recs[sim->n_recs].node = compartment;
    if (site) *site = sim->n_recs;
    sim->n_recs++;
    sim->dirty = 1;
    /* the trace buffer's row length changed: start it again with sample 0
     * (only sample 0 exists before the first step) */
    free(sim->traces);
    sim->traces = NULL;
    sim->cap_samples = 0;
    ns_status gs = grow_traces(sim, 1);
    if (gs != NS_OK) return gs;
    for (int32_t k = 0; k < sim->n_recs; ++k) sim->traces[k] = sim->params.v_init;
    sim->samples = 1;
    return NS_OK;
}

ns_status ns_sim_index(ns_sim_t *sim) {
    if (!sim->dirty) return NS_OK;
    const int64_t nc = sim->n_cells;
    free(sim->stim_begin);
    free(sim->stim_order);
    free(sim->rec_begin);
    free(sim->rec_order);
    sim->stim_begin = calloc((size_t)nc + 1, sizeof *sim->stim_begin);
    sim->stim_order = malloc((size_t)(sim->n_stims ? sim->n_stims : 1) * sizeof *sim->stim_order);
    sim->rec_begin = calloc((size_t)nc + 1, sizeof *sim->rec_begin);
    sim->rec_order = malloc((size_t)(sim->n_recs ? sim->n_recs : 1) * sizeof *sim->rec_order);
    if (!sim->stim_begin || !sim->stim_order || !sim->rec_begin || !sim->rec_order)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: indexes of %lld cells", (long long)nc);
    /* counting sort by cell, keeping the order of addition within a cell
     * (NEURON applies point processes of one node in creation order) */
    for (int64_t k = 0; k < sim->n_stims; ++k) sim->stim_begin[sim->stims[k].cell + 1]++;
    for (int64_t c = 0; c < nc; ++c) sim->stim_begin[c + 1] += sim->stim_begin[c];
    for (int64_t k = 0; k < sim->n_recs; ++k) sim->rec_begin[sim->recs[k].cell + 1]++;
    for (int64_t c = 0; c < nc; ++c) sim->rec_begin[c + 1] += sim->rec_begin[c];
    int64_t *fill = malloc((size_t)nc * sizeof *fill);
    if (!fill) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: indexes of %lld cells", (long long)nc);
    memcpy(fill, sim->stim_begin, (size_t)nc * sizeof *fill);
    for (int64_t k = 0; k < sim->n_stims; ++k) sim->stim_order[fill[sim->stims[k].cell]++] = k;
    memcpy(fill, sim->rec_begin, (size_t)nc * sizeof *fill);
    for (int32_t k = 0; k < sim->n_recs; ++k) sim->rec_order[fill[sim->recs[k].cell]++] = k;
    free(fill);
    sim->dirty = 0;
    return NS_OK;
}

/* Room for samples [0, upto) in the trace buffer. */
static ns_status grow_traces(ns_sim_t *sim, int64_t upto) {
    if (sim->n_recs == 0 || upto <= sim->cap_samples) return NS_OK;
    int64_t cap = sim->cap_samples ? sim->cap_samples : 256;
    while (cap < upto) cap *= 2;
    double *grown = realloc(sim->traces, (size_t)cap * (size_t)sim->n_recs * sizeof *grown);
    if (!grown)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "recording: %lld samples of %d sites", (long long)cap,
                       (int)sim->n_recs);
    sim->traces = grown;
    sim->cap_samples = cap;
    return NS_OK;
}

ns_status ns_sim_init(ns_sim_t *sim) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_init: sim is NULL");
    if (sim->dist) return ns_dist_sim_init(sim->dist);
    ns_status st = ns_sim_index(sim);
    if (st != NS_OK) return st;
    sim->t = 0.0;
    sim->steps = 0;
    sim->failed = NS_OK;
    sim->state_set = 0;
    sim->samples = 0;
    for (int64_t c = 0; c < sim->n_cells; ++c) sim->spikes.n[c] = 0;
    /* the host arrays' initial state, from which every backend's init starts: v at v_init (the
     * mechanisms' states are their INITIAL's) */
    for (int64_t i = 0; i < sim->n_comp; ++i) sim->v[i] = sim->params.v_init;
    st = ns_net_density_unset(sim);
    if (st != NS_OK) return st;
    const int caller = enter(sim);
    st = sim->ops->init(sim);
    leave(sim, caller);
    if (st != NS_OK) return st;
    st = grow_traces(sim, 1);
    if (st != NS_OK) return st;
    /* sample 0: v_init everywhere */
    for (int32_t k = 0; k < sim->n_recs; ++k) sim->traces[k] = sim->params.v_init;
    sim->samples = 1;
    return NS_OK;
}

ns_status ns_sim_mech_error(const ns_mech_error *e, double t, int64_t step) {
    if (step < 0)
        return ns_fail(NS_ERR_MECHANISM, "%s:%d: mechanism %s: %s (at finitialize)", e->file, e->line, e->mech, e->msg);
    return ns_fail(NS_ERR_MECHANISM, "%s:%d: mechanism %s: %s (at t = %g ms, step %lld)", e->file, e->line, e->mech,
                   e->msg, t, (long long)step);
}

/* Drop spikes after time t [ms] (a failed run keeps what came before). */
static void trim_spikes(ns_sim_t *sim, double t) {
    for (int64_t c = 0; c < sim->n_cells; ++c)
        while (sim->spikes.n[c] > 0 && sim->spikes.t[c][sim->spikes.n[c] - 1] > t) sim->spikes.n[c]--;
}

/* what stopped the last run, for the refusals until ns_sim_init */
const char *ns_sim_failed_what(const ns_sim_t *sim) {
    return sim->failed == NS_ERR_NOT_FINITE ? "on NaN/Inf" : sim->failed == NS_ERR_MECHANISM ? "on a mechanism's error" : "on an error";
}

ns_status ns_sim_advance(ns_sim_t *sim, int64_t steps) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_advance: sim is NULL");
    if (sim->dist) return ns_dist_sim_advance(sim->dist, steps);
    if (steps < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_advance: %lld steps", (long long)steps);
    if (sim->failed != NS_OK)
        return ns_fail(sim->failed, "simulation: a previous run stopped %s; call ns_sim_init", ns_sim_failed_what(sim));
    if (sim->net && sim->net->dirty)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "ns_sim_advance: synapses, sources or connections changed since ns_sim_init: call ns_sim_init "
                       "(they take effect there, as NEURON's finitialize)");
    if (sim->ptr_unset)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_advance: a density mechanism's POINTER is not connected "
                       "(ns_sim_set_model_pointer, then ns_sim_init)");
    if (steps == 0) return NS_OK;
    ns_status st = ns_sim_index(sim);
    if (st != NS_OK) return st;
    const int64_t every = sim->options.record_every;
    st = grow_traces(sim, (sim->steps + steps) / every + 1);
    if (st != NS_OK) return st;
    if (sim->state_set && sim->ops->load_state) {
        const int caller = enter(sim);
        st = sim->ops->load_state(sim);
        leave(sim, caller);
        if (st != NS_OK) return st;
    }
    sim->state_set = 0;
    sim_fault fault = {INT64_MAX, -1, -1, 0.0, NULL};
    const double t0 = ns_time_ms();
    const double t_before = sim->t;
    const int caller = enter(sim);
    int64_t done = 0;
    if (sim->sample) /* cut at the sampled steps (an LFP probe on the CPU: src/lfp) */
        while (st == NS_OK && fault.step == INT64_MAX && done < steps) {
            const int64_t k = sim->sample_every - sim->steps % sim->sample_every;
            const int64_t chunk = k < steps - done ? k : steps - done;
            st = sim->net ? ns_net_advance(sim, chunk, &fault) : sim->ops->advance(sim, chunk, &fault);
            if (st != NS_OK || fault.step != INT64_MAX) break;
            double t_prev = sim->t;
            sim->steps += chunk;
            for (int64_t q = 0; q < chunk; ++q)
                t_prev = sim->t, sim->t = ns_sim_half_step(ns_sim_half_step(sim->t, sim->params.dt), sim->params.dt);
            done += chunk;
            if (sim->steps % sim->sample_every == 0)
                st = sim->sample(sim, sim->sample_ctx, ns_sim_half_step(t_prev, sim->params.dt),
                                 done + sim->sample_every > steps);
        }
    else
        st = sim->net ? ns_net_advance(sim, steps, &fault) : sim->ops->advance(sim, steps, &fault);
    if (sim->sample_finish) { /* the last launch's LFP reduction (src/lfp/cuda) */
        const ns_status fst = sim->sample_finish(sim, sim->sample_ctx);
        if (st == NS_OK) st = fst;
    }
    leave(sim, caller);
    sim->elapsed_ms += ns_time_ms() - t0;
    sim->steps -= done; /* the chunks' steps and time are counted again below */
    if (done > 0) sim->t = t_before;
    if (st != NS_OK) {
        /* keep what the completed calls recorded (sim->samples is unchanged):
         * drop the spikes of the failed call */
        sim->failed = st;
        trim_spikes(sim, t_before);
        return st;
    }
    if (fault.step != INT64_MAX) {
        sim->failed = fault.mech ? NS_ERR_MECHANISM : NS_ERR_NOT_FINITE;
        const sim_shape *s = &sim->shapes[sim->cell_shape[fault.cell]];
        /* the time of the step's end, as NEURON's t would read */
        double t = 0.0, t_good = 0.0;
        for (int64_t k = 0; k < fault.step; ++k) {
            t_good = t;
            t = ns_sim_half_step(ns_sim_half_step(t, sim->params.dt), sim->params.dt);
        }
        /* every cell ran at least to the step before the fault: the samples
         * and spikes up to it are results (ns_sim_traces, ns_sim_spikes) */
        sim->samples = (fault.step - 1) / every + 1;
        trim_spikes(sim, t_good);
        if (fault.mech)
            return ns_sim_mech_error(fault.mech, t, fault.step);
        return ns_fail(NS_ERR_NOT_FINITE,
                       "simulation: NaN/Inf (v = %g) in cell %lld, compartment %d (section %d, x = %g) at t = %g ms "
                       "(step %lld)",
                       fault.value, (long long)fault.cell, (int)fault.node, (int)s->section[fault.node],
                       s->x[fault.node], t, (long long)fault.step);
    }
    sim->steps += steps;
    for (int64_t k = 0; k < steps; ++k) sim->t = ns_sim_half_step(ns_sim_half_step(sim->t, sim->params.dt), sim->params.dt);
    sim->samples = sim->steps / every + 1;
    return NS_OK;
}

int64_t ns_sim_steps_for(const ns_sim_t *sim, double tstop) {
    if (!sim || !(tstop > 0.0)) return 0;
    int64_t steps = 0;
    return ns_sim_count_steps(tstop, sim->params.dt, &steps) == NS_OK ? steps : -1;
}

double ns_sim_time(const ns_sim_t *sim) { return sim ? sim->t : 0.0; }
int64_t ns_sim_step_count(const ns_sim_t *sim) { return sim ? sim->steps : 0; }
int64_t ns_sim_cells(const ns_sim_t *sim) { return sim ? sim->n_cells : 0; }
int64_t ns_sim_compartments(const ns_sim_t *sim) { return sim ? sim->n_comp : 0; }

double ns_sim_step_min_bytes(const ns_sim_t *sim) {
    if (!sim || !sim->model) return 0.0;
    const sim_model *m = sim->model;
    ns_sim_bytes_mech *mechs = calloc((size_t)m->n_mechs + 1, sizeof *mechs);
    ns_sim_bytes_ion ions[NS_SIM_IONS_MAX];
    memset(ions, 0, sizeof ions);
    int64_t *per_shape = calloc((size_t)m->n_shapes + 1, sizeof *per_shape); /* cells of each shape */
    unsigned char *used = malloc((size_t)(sim->max_n > 0 ? sim->max_n : 1));
    double bytes = 0.0;
    if (mechs && per_shape && used) {
        for (int64_t c = 0; c < sim->n_cells; ++c) per_shape[sim->cell_shape[c]]++;
        for (int32_t k = 0; k < m->n_mechs; ++k) {
            const ns_mech_desc *d = m->mechs[k].desc;
            mechs[k].n_params = d->n_params;
            mechs[k].n_states = d->n_states;
            for (int32_t s = 0; s < m->n_shapes; ++s)
                mechs[k].instances += per_shape[s] * m->per_shape[(size_t)s * m->n_mechs + k].n;
            for (int q = 0; q < d->n_ions; ++q) ions[m->mechs[k].ion[q]].flags |= d->ions[q].flags;
        }
        /* an ion's slots: the nodes where some mechanism using it is inserted */
        for (int32_t j = 0; j < m->n_ions; ++j)
            for (int32_t s = 0; s < m->n_shapes; ++s) {
                memset(used, 0, (size_t)sim->shapes[s].n);
                int64_t slots = 0;
                for (int32_t k = 0; k < m->n_mechs; ++k) {
                    const ns_mech_desc *d = m->mechs[k].desc;
                    int uses = 0;
                    for (int q = 0; q < d->n_ions; ++q) uses |= m->mechs[k].ion[q] == j;
                    const sim_mech_shape *ms = &m->per_shape[(size_t)s * m->n_mechs + k];
                    for (int32_t i = 0; uses && i < ms->n; ++i)
                        if (!used[ms->node[i]]) used[ms->node[i]] = 1, ++slots;
                }
                ions[j].slots += per_shape[s] * slots;
            }
        bytes = ns_sim_min_bytes(sim->n_comp, m->n_mechs, mechs, m->n_ions, ions);
    }
    free(mechs), free(per_shape), free(used);
    return bytes;
}
ns_backend ns_sim_backend(const ns_sim_t *sim) { return sim ? sim->backend : NS_BACKEND_AUTO; }
ns_hines_method ns_sim_method(const ns_sim_t *sim) { return sim ? sim->method : NS_HINES_AUTO; }
int32_t ns_sim_gpu_lanes(const ns_sim_t *sim) { return sim ? sim->gpu_lanes : 0; }
ns_sim_gpu_mechanisms ns_sim_gpu_mechanisms_of(const ns_sim_t *sim) {
    return sim ? sim->gpu_mechanisms : NS_SIM_GPU_MECHANISMS_AUTO;
}

int ns_sim_gpu_graph_of(const ns_sim_t *sim, const char **why) {
    if (why) *why = sim ? sim->gpu_graph_why : "";
    return sim ? sim->gpu_graph : 0;
}

static const char *const GPU_MECHANISMS[4] = {"auto", "fused", "per-step", "per-mechanism"};

const char *ns_sim_gpu_mechanisms_name(ns_sim_gpu_mechanisms m) { return ns_name_of(GPU_MECHANISMS, 4, (int)m, NULL); }

ns_status ns_sim_gpu_mechanisms_from_name(const char *name, ns_sim_gpu_mechanisms *out) {
    if (!name || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_gpu_mechanisms_from_name: NULL argument");
    const int k = ns_name_index(GPU_MECHANISMS, 4, name);
    if (k >= 0) *out = (ns_sim_gpu_mechanisms)k;
    return k >= 0 ? NS_OK : ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown GPU mechanisms path '%s' (auto, fused, per-step, per-mechanism)", name);
}
double ns_sim_elapsed_ms(const ns_sim_t *sim) { return sim ? sim->elapsed_ms : 0.0; }

int32_t ns_sim_spike_compartment(const ns_sim_t *sim, int64_t cell) {
    if (sim && sim->dist) return ns_dist_sim_spike_compartment(sim->dist, cell);
    if (!sim || cell < 0 || cell >= sim->n_cells) return -1;
    return sim->shapes[sim->cell_shape[cell]].spike_node;
}

const double *ns_sim_traces(const ns_sim_t *sim, int64_t *samples, int32_t *sites) {
    if (sim && sim->dist) return ns_dist_sim_traces(sim->dist, samples, sites);
    if (samples) *samples = sim ? sim->samples : 0;
    if (sites) *sites = sim ? sim->n_recs : 0;
    return sim ? sim->traces : NULL;
}

const double *ns_sim_spikes(const ns_sim_t *sim, int64_t cell, int64_t *count) {
    if (sim && sim->dist) return ns_dist_sim_spikes(sim->dist, cell, count);
    if (!sim || cell < 0 || cell >= sim->n_cells) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = sim->spikes.n[cell];
    return sim->spikes.t[cell];
}

/* After ns_sim_set_state the host copy is the state; else a backend that
 * keeps its own brings the host copy up to date. */
static ns_status sync_host(ns_sim_t *sim) {
    if (!sim->ops->sync_state || sim->state_set) return NS_OK;
    const int caller = enter(sim);
    ns_status st = sim->ops->sync_state(sim);
    leave(sim, caller);
    return st;
}

static ns_status check_cell(const ns_sim_t *sim, const char *who, int64_t cell) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", who);
    if (sim->dist) return ns_dist_sim_refuse(who);
    if (cell < 0 || cell >= sim->n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld of %lld", who, (long long)cell,
                       (long long)sim->n_cells);
    return NS_OK;
}

ns_status ns_sim_get_state(ns_sim_t *sim, int64_t cell, double *v) {
    ns_status st = check_cell(sim, "ns_sim_get_state", cell);
    if (st == NS_OK) st = sync_host(sim);
    if (st != NS_OK) return st;
    const int64_t o = sim->cell_offset[cell];
    if (v) memcpy(v, sim->v + o, (size_t)(sim->cell_offset[cell + 1] - o) * sizeof(double));
    return NS_OK;
}

ns_status ns_sim_set_state(ns_sim_t *sim, int64_t cell, const double *v) {
    ns_status st = check_cell(sim, "ns_sim_set_state", cell);
    if (st != NS_OK || !v) return st;
    /* the other cells' host copy must be current before it is pushed back */
    if ((st = sync_host(sim)) != NS_OK) return st;
    const int64_t o = sim->cell_offset[cell];
    const int32_t cnt = (int32_t)(sim->cell_offset[cell + 1] - o);
    for (int32_t i = 0; i < cnt; ++i)
        if (!isfinite(v[i]))
            return ns_fail(NS_ERR_NOT_FINITE, "ns_sim_set_state: cell %lld, compartment %d: v = %g", (long long)cell,
                           (int)i, v[i]);
    memcpy(sim->v + o, v, (size_t)cnt * sizeof(double));
    sim->state_set = 1;
    return NS_OK;
}

int64_t ns_sim_cell_offset(const ns_sim_t *sim, int64_t cell) {
    if (sim && sim->dist) return cell >= 0 && cell <= sim->n_cells ? sim->dist->global_offset[cell] : -1;
    if (!sim || cell < 0 || cell > sim->n_cells) return -1;
    return sim->cell_offset[cell];
}

/* The host array of a variable (sim_impl.h: Flat, the host copy). */
static double *host_var(ns_sim_t *sim, ns_sim_var var) {
    (void)var; /* NS_SIM_VAR_V, the one variable of the handle (a mechanism's: ns_sim_state_field) */
    return sim->v;
}

static ns_status check_var(const ns_sim_t *sim, const char *who, ns_sim_var var, const void *flat, void *stream) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: sim is NULL", who);
    if (sim->dist) return ns_dist_sim_refuse(who);
    if ((int)var < 0 || var >= NS_SIM_VAR_COUNT)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: var %d is not an ns_sim_var (0..%d)", who, (int)var,
                       NS_SIM_VAR_COUNT - 1);
    if (!flat) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: flat is NULL", who);
    if (stream && !sim->ops->read_var)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: stream given for a %s simulation (host memory, no stream)", who,
                       sim->ops->name);
    return NS_OK;
}

/* Host changes (ns_sim_set_state) go to the backend before its memory is
 * read or written there. */
static ns_status push_host_state(ns_sim_t *sim) {
    if (!sim->state_set || !sim->ops->load_state) return NS_OK;
    ns_status st = sim->ops->load_state(sim);
    if (st == NS_OK) sim->state_set = 0;
    return st;
}

/* Both directions: the backend's memory (its read_var / write_var), or the
 * host arrays (brought up to date first, marked as the state after a write). */
static ns_status copy_var(ns_sim_t *sim, const char *who, ns_sim_var var, double *flat, void *stream, int read) {
    ns_status st = check_var(sim, who, var, flat, stream);
    if (st != NS_OK) return st;
    const int caller = enter(sim);
    if (sim->ops->read_var) {
        st = push_host_state(sim);
        if (st == NS_OK) st = read ? sim->ops->read_var(sim, var, flat, stream) : sim->ops->write_var(sim, var, flat, stream);
    } else {
        if (sim->ops->sync_state && !sim->state_set) st = sim->ops->sync_state(sim);
        const size_t bytes = (size_t)sim->n_comp * sizeof(double);
        if (st == NS_OK && read) memcpy(flat, host_var(sim, var), bytes);
        if (st == NS_OK && !read) {
            memcpy(host_var(sim, var), flat, bytes);
            sim->state_set = 1;
        }
    }
    leave(sim, caller);
    return st;
}

ns_status ns_sim_read_var(ns_sim_t *sim, ns_sim_var var, double *flat, void *stream) {
    return copy_var(sim, "ns_sim_read_var", var, flat, stream, 1);
}

ns_status ns_sim_write_var(ns_sim_t *sim, ns_sim_var var, const double *flat, void *stream) {
    return copy_var(sim, "ns_sim_write_var", var, (double *)flat, stream, 0);
}

int64_t ns_sim_state_parts(const ns_sim_t *sim) { return sim && !sim->dist ? sim->ops->state_parts(sim) : -1; }

ns_status ns_sim_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_part: sim is NULL");
    if (sim->dist) return ns_dist_sim_refuse("ns_sim_state_part");
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_part: out is NULL");
    const int64_t parts = sim->ops->state_parts(sim);
    if (part < 0 || part >= parts)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_part: part %lld of %lld", (long long)part,
                       (long long)parts);
    memset(out, 0, sizeof *out);
    const int caller = enter(sim);
    ns_status st = push_host_state(sim); /* a pending ns_sim_set_state: into the loop's arrays first */
    if (st == NS_OK) st = sim->ops->state_part(sim, part, out);
    leave(sim, caller);
    return st;
}

ns_status ns_sim_state_done(ns_sim_t *sim, void *stream) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_done: sim is NULL");
    if (sim->dist) return ns_dist_sim_refuse("ns_sim_state_done");
    if (stream && sim->device < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_done: stream given for a %s simulation (host memory, "
                                                "no stream)",
                       sim->ops->name);
    const int caller = enter(sim);
    ns_status st = sim->ops->state_done ? sim->ops->state_done(sim, stream) : NS_OK;
    leave(sim, caller);
    return st;
}

ns_status ns_sim_state_field(ns_sim_t *sim, int64_t part, const char *name, ns_sim_field *out) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_field: sim is NULL");
    if (sim->dist) return ns_dist_sim_refuse("ns_sim_state_field");
    if (!name) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_field: name is NULL");
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_field: out is NULL");
    const int64_t parts = sim->ops->state_parts(sim);
    if (part < 0 || part >= parts)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_state_field: part %lld of %lld", (long long)part,
                       (long long)parts);
    int32_t mech, ion;
    int field, q;
    ns_status st = ns_sim_model_var_lookup(sim->model, name, &mech, &field, &ion, &q);
    if (st != NS_OK) return st;
    memset(out, 0, sizeof *out);
    const int caller = enter(sim);
    st = push_host_state(sim);
    if (st == NS_OK) st = sim->ops->state_field(sim, part, mech, field, ion, q, out);
    leave(sim, caller);
    return st;
}

/* ns_sim_get_model_var and ns_sim_set_model_var: the name resolved
 * (ns_sim_model_var_lookup), the values through the backend. A write of
 * the cell's host copy of v pending (ns_sim_set_state) stays pending: the
 * two are separate arrays. */
static ns_status model_var(ns_sim_t *sim, const char *who, int64_t cell, const char *name, double *values,
                           int write) {
    ns_status st = check_cell(sim, who, cell);
    if (st != NS_OK) return st;
    if (!name || !values) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: NULL argument", who);
    int32_t mech, ion;
    int field, q;
    if ((st = ns_sim_model_var_lookup(sim->model, name, &mech, &field, &ion, &q)) != NS_OK) return st;
    if (write) {
        const int64_t n = sim->cell_offset[cell + 1] - sim->cell_offset[cell];
        const int32_t shape = sim->cell_shape[cell];
        for (int64_t i = 0; i < n; ++i) {
            int present = 1;
            if (mech >= 0) { /* only where the mechanism is inserted */
                const sim_mech_shape *ms = &sim->model->per_shape[(size_t)shape * sim->model->n_mechs + mech];
                present = 0;
                for (int32_t k = 0; k < ms->n && !present; ++k) present = ms->node[k] == (int32_t)i;
            }
            if (present && !isfinite(values[i]))
                return ns_fail(NS_ERR_NOT_FINITE, "%s: cell %lld, compartment %lld: %s = %g", who, (long long)cell,
                               (long long)i, name, values[i]);
        }
    }
    const int caller = enter(sim);
    st = sim->ops->model_var(sim, cell, mech, field, ion, q, values, write);
    leave(sim, caller);
    return st;
}

ns_status ns_sim_get_model_var(ns_sim_t *sim, int64_t cell, const char *name, double *values) {
    return model_var(sim, "ns_sim_get_model_var", cell, name, values, 0);
}

ns_status ns_sim_set_model_var(ns_sim_t *sim, int64_t cell, const char *name, const double *values) {
    return model_var(sim, "ns_sim_set_model_var", cell, name, (double *)values, 1);
}

/* The family's implementations (core/registry.h): the GPU loops take the
 * solver's onchip and tree kernels (docs/simulation.md). */
static const void *impl_cpu(void) { return ns_sim_cpu_ops(); }
static const void *impl_cuda(void) { return ns_sim_cuda_ops(); }
static const ns_impl impls[] = {
    {NS_FAMILY_SIM, NS_BACKEND_CPU, "cpu", NS_METHOD_BIT(NS_HINES_SEQUENTIAL) | NS_METHOD_BIT(NS_HINES_OPENMP),
     impl_cpu, NULL},
    {NS_FAMILY_SIM, NS_BACKEND_CUDA, "cuda", NS_METHOD_BIT(NS_HINES_ONCHIP) | NS_METHOD_BIT(NS_HINES_TREE), impl_cuda,
     NULL},
};

ns_impl_table ns_sim_impls(void) { return NS_IMPL_TABLE(impls); }
