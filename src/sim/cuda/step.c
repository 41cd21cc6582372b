/* The GPU simulation loops' step, host side: the groups of sim/cuda/layout.c
 * (onchip: a warp per 32 / L cells of one shape, state in shared memory;
 * tree: every shape that does not run onchip in one population-wide group of
 * sim/cuda/tree.cu, the solver's tree-contraction groups, one launch) advanced
 * with the state kept on the device, steps launched in parts of at most
 * PART_STEPS with the recorded samples and spike times copied out after each
 * part (no host round trip per step); a network's intervals
 * (gpu_advance_net); the backend's table (sim_ops). The loop of each shape
 * (`auto`): sim/cuda/policy.c (docs/simulation.md, "GPU loops"). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/layout.h"
#include "core/cuda_check.h"
#include "sim/network.h"

#define NET_MAX_INTERVAL 1000 /* steps per interval of a network (gpu_advance_net) */

/* The LFP inside the loop (sim_impl.h's snap): every group's positions from their sum before it. */
static ns_status check_snap(const ns_sim_t *sim, const gpu_state *s) {
    int64_t total = 0;
    for (int32_t k = 0; k < s->n_groups; ++k) total += (int64_t)state_size(&s->groups[k]);
    if (total != sim->snap_stride)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "LFP: the simulation's state has %lld positions, the probe was made for %lld (its cells "
                       "were regrouped at ns_sim_init: create the probe after ns_sim_init)",
                       (long long)total, (long long)sim->snap_stride);
    return NS_OK;
}

/* The device's trace buffer for `rows` samples of a launch. */
static ns_status grow_traces(const ns_sim_t *sim, gpu_state *s, int64_t rows) {
    if (sim->n_recs == 0 || rows <= s->trace_rows) return NS_OK;
    cudaFree(s->traces);
    s->traces = NULL;
    size_t free_b = 0, total_b = 0;
    NS_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
    const double bytes = (double)rows * (double)sim->n_recs * 8.0;
    if (bytes > (double)free_b)
        return ns_fail(NS_ERR_DEVICE_MEMORY,
                       "simulation: the traces of %d recording sites over %lld samples per launch need %.2f GB "
                       "of GPU memory, %.2f GB are free: fewer sites or a larger record_every",
                       (int)sim->n_recs, (long long)rows, bytes / 1e9, (double)free_b / 1e9);
    NS_CUDA_TRY(cudaMalloc((void **)&s->traces, (size_t)rows * (size_t)sim->n_recs * sizeof(double)));
    s->trace_rows = rows;
    return NS_OK;
}

/* What every kernel of a launch of `part` steps from step0 at t0 reads. */
static ns_sim_gpu_run part_run(const ns_sim_t *sim, int64_t step0, double t0, int64_t part, int64_t first_sample,
                               int64_t snap_first) {
    ns_sim_gpu_run run;
    memset(&run, 0, sizeof run);
    run.t0 = t0;
    run.dt = sim->params.dt;
    run.threshold = sim->params.spike_threshold;
    run.netcon = sim->params.netcon_spikes;
    run.step0 = step0;
    run.steps = part;
    run.every = sim->options.record_every;
    run.check = sim->options.check_every;
    run.first_sample = first_sample;
    run.n_sites = sim->n_recs;
    run.spike_cap = SPIKE_CAP;
    run.snap_every = sim->snap ? sim->sample_every : 1;
    run.snap_first = snap_first;
    run.snap_ld = sim->snap_ld;
    run.snap_norm_at = sim->snap_norm_at;
    run.snap_norm_ld = sim->snap_norm_ld;
    return run;
}

/* A model in the tree loop step by step: the mechanisms' launchers around the tree loop's step
 * (sim/cuda/step_graph.h), one captured step replayed where the rule allows. */
static ns_status tree_per_step(ns_sim_t *sim, gpu_state *s, const gpu_group *gr, const ns_sim_gpu_run *run,
                               cudaStream_t stream) {
    int graphed = 0;
    ns_status mst = ns_sim_step_graph_part(sim, &s->graph, s->model, s->net != NULL, &gr->t, &gr->layout, &gr->g,
                                           run, stream, &graphed);
    if (mst != NS_OK) return mst;
    double tk = run->t0;
    for (int64_t k1 = 0; !graphed && k1 < run->steps; ++k1) {
        ns_sim_gpu_run r1 = *run;
        r1.t0 = tk;
        r1.step0 = run->step0 + k1;
        r1.steps = 1;
        r1.k0 = k1;
        r1.continued = k1 > 0;
        r1.preassembled = 1;
        if ((mst = ns_sim_gpu_step_phases(sim, s->model, s->net, s->net_step, &gr->t, &gr->layout, &gr->g, &r1,
                                          stream)) != NS_OK)
            return mst;
        tk = ns_sim_half_step(ns_sim_half_step(tk, run->dt), run->dt);
        s->net_step++;
    }
    return NS_OK;
}

/* Group k's launch of the part: onchip, the tree kernel with the model fused into it (`fused`), the
 * tree loop step by step with a model, or the tree kernel alone. */
static ns_status launch_group(ns_sim_t *sim, gpu_state *s, int32_t k, const ns_sim_fused *fused,
                              const ns_sim_gpu_run *run) {
    const gpu_group *gr = &s->groups[k];
    cudaStream_t stream = s->streams[k % s->n_streams];
    const cudaStream_t three[3] = {stream, s->streams[(k + 1) % s->n_streams], s->streams[(k + 2) % s->n_streams]};
    if (gr->tree && fused) {
        /* the model's built-in mechanisms inside the tree kernel: the whole part in one
         * launch; with a network, its share of the interval (the events and spike buffer
         * of sim/cuda/network.c, on the stream that sorted them, for all three kinds of group) */
        ns_sim_fused f = *fused;
        const int with_net = f.net.slots > 0 && s->net;
        if (with_net) ns_sim_fused_net_bind(&f, s->net, s->net_step);
        else f.net.slots = 0;
        const cudaStream_t one[3] = {stream, stream, stream};
        NS_CUDA_TRY(ns_sim_launch_tree_fused(&gr->t, &gr->layout, &gr->g, run, &f, with_net ? one : three));
        if (with_net) s->net_step += run->steps;
    } else if (gr->tree && s->model) {
        return tree_per_step(sim, s, gr, run, stream);
    } else if (gr->tree) {
        NS_CUDA_TRY(ns_sim_launch_tree(&gr->t, &gr->layout, &gr->g, run, three));
    } else
        NS_CUDA_TRY(ns_sim_launch_onchip(&gr->oc.sched, &gr->oc.launch, &gr->g, run, stream));
    return NS_OK;
}

/* The launch's first fault over the groups' keys (NS_SIM_FAULT_NONE: none): the earliest step
 * first, then the lowest global cell; *key_group its group. */
static ns_status first_fault(const gpu_state *s, unsigned long long *key_out, int32_t *key_group) {
    unsigned long long keys[64], key = NS_SIM_FAULT_NONE;
    *key_group = -1;
    for (int32_t k0 = 0; k0 < s->n_groups; k0 += 64) {
        const int32_t cnt = s->n_groups - k0 < 64 ? s->n_groups - k0 : 64;
        NS_CUDA_TRY(cudaMemcpy(keys, s->fault + k0, (size_t)cnt * sizeof *keys, cudaMemcpyDeviceToHost));
        for (int32_t q = 0; q < cnt; ++q) {
            if (keys[q] == NS_SIM_FAULT_NONE) continue;
            /* earliest step first, then the lowest global cell */
            const int64_t c = s->groups[k0 + q].cell_id[keys[q] & 0xFFFFFF];
            if (key == NS_SIM_FAULT_NONE || (keys[q] >> 24) < (key >> 24) ||
                ((keys[q] >> 24) == (key >> 24) && c < s->groups[*key_group].cell_id[key & 0xFFFFFF])) {
                key = keys[q];
                *key_group = k0 + q;
            }
        }
    }
    *key_out = key;
    return NS_OK;
}

/* The launch's spikes of every group into sim_spike_out. */
static ns_status collect_spikes(ns_sim_t *sim, gpu_state *s, int64_t part) {
    for (int32_t k = 0; k < s->n_groups; ++k) {
        gpu_group *gr = &s->groups[k];
        const int64_t N = gr->g.cells;
        NS_CUDA_TRY(cudaMemcpy(s->spike_count_host, gr->g.spike_count, (size_t)N * sizeof(int32_t),
                               cudaMemcpyDeviceToHost));
        /* the counted spikes only: the first `most` of each cell's SPIKE_CAP slots (the whole
         * buffer was 10 MB per launch at 10,000 cells) */
        int32_t most = 0;
        for (int64_t j = 0; j < N; ++j)
            if (s->spike_count_host[j] > most) most = s->spike_count_host[j];
        if (most > SPIKE_CAP) most = SPIKE_CAP;
        if (most > 0)
            NS_CUDA_TRY(cudaMemcpy2D(s->spike_t_host, SPIKE_CAP * sizeof(double), gr->g.spike_t,
                                     SPIKE_CAP * sizeof(double), (size_t)most * sizeof(double), (size_t)N,
                                     cudaMemcpyDeviceToHost));
        for (int64_t j = 0; j < N; ++j) {
            const int32_t cnt = s->spike_count_host[j];
            if (cnt > SPIKE_CAP)
                return ns_fail(NS_ERR_SIZE, "simulation: cell %lld spiked %d times in %d steps (GPU limit %d)",
                               (long long)gr->cell_id[j], (int)cnt, (int)part, SPIKE_CAP);
            for (int32_t q = 0; q < cnt; ++q)
                if (ns_spike_out_push(&sim->spikes, gr->cell_id[j], s->spike_t_host[j * SPIKE_CAP + q]) != 0)
                    return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: spike storage");
        }
    }
    return NS_OK;
}

/* The fault of `key` (group key_group's) into *fault: the failed cell stopped at its step, its state
 * read back; the first compartment whose v is not finite (a zero pivot with finite v: node 0, NaN). */
static ns_status report_fault(ns_sim_t *sim, gpu_state *s, unsigned long long key, int32_t key_group,
                              int64_t step0, sim_fault *fault) {
    const int64_t local_step = (int64_t)(key >> 24);
    gpu_group *gr = &s->groups[key_group];
    const int64_t c = gr->cell_id[key & 0xFFFFFF];
    ns_status st = ns_gpu_transfer_state(sim, gr, 0);
    if (st != NS_OK) return st;
    fault->step = step0 + local_step;
    fault->cell = c;
    fault->node = 0;
    fault->value = NAN; /* a zero pivot with finite v */
    const double *v = sim->v + sim->cell_offset[c];
    const int32_t nc = sim->shapes[sim->cell_shape[c]].n;
    for (int32_t i = 0; i < nc; ++i)
        if (!isfinite(v[i])) {
            fault->node = i;
            fault->value = v[i];
            break;
        }
    return NS_OK;
}

/* The density mechanisms' device errors of every group (seen_only: of those that had one) */
static ns_status models_errors(gpu_state *s, int seen_only) {
    ns_status st = NS_OK;
    for (int32_t k = -1; k < s->n_groups && st == NS_OK; ++k) {
        gpu_model *m = k < 0 ? s->model : s->groups[k].model;
        if (!seen_only || ns_gpu_model_error_seen(m)) st = ns_gpu_model_errors(m);
    }
    return st;
}

/* The backend's advance: the steps in parts of at most PART_STEPS, each part one launch per group
 * (launch_group) on the groups' streams, then its samples, spikes and first fault copied out. */
static ns_status gpu_advance(ns_sim_t *sim, int64_t steps, sim_fault *fault) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    const int64_t every = sim->options.record_every;
    ns_status sst = models_errors(s, 1); /* stopped by a mechanism's error: again only after ns_sim_init */
    if (sst != NS_OK) return sst;
    sst = ns_gpu_sync_sites(sim, s); /* stimuli or recordings added since */
    if (sst != NS_OK) return sst;
    s->host_current = 0;
    if (s->external_pending) { /* the loop's streams wait for the caller's reads and writes */
        for (int k = 0; k < s->n_streams; ++k) NS_CUDA_TRY(cudaStreamWaitEvent(s->streams[k], s->external, 0));
        s->external_pending = 0;
    }
    /* a model: its mechanisms fused into the tree kernel, or per step (sim/cuda/fused.h) */
    const ns_sim_fused *fused = NULL;
    if (s->model && (sst = ns_sim_fused_pick(sim, s->fused, &fused)) != NS_OK) return sst;
    if (sim->snap && (sst = check_snap(sim, s)) != NS_OK) return sst;
    int64_t step0 = sim->steps;
    double t0 = sim->t;
    while (steps > 0) {
        int64_t part = steps < PART_STEPS ? steps : PART_STEPS;
        const int64_t snap_first = sim->snap ? step0 / sim->sample_every + 1 : 0;
        if (sim->snap && (snap_first + sim->snap_rows - 1) * sim->sample_every - step0 < part)
            part = (snap_first + sim->snap_rows - 1) * sim->sample_every - step0; /* the buffer's rows */
        const int64_t first_sample = step0 / every + 1;
        const int64_t rows = (step0 + part) / every - step0 / every;
        if ((sst = grow_traces(sim, s, rows)) != NS_OK) return sst;
        NS_CUDA_TRY(cudaMemset(s->fault, 0xFF, (size_t)s->n_groups * sizeof *s->fault)); /* NS_SIM_FAULT_NONE */
        const ns_sim_gpu_run run = part_run(sim, step0, t0, part, first_sample, snap_first);
        int64_t snap_at = 0;
        for (int32_t k = 0; k < s->n_groups; ++k) {
            s->groups[k].g.traces = s->traces;
            s->groups[k].g.fault = s->fault + k;
            s->groups[k].g.snap = sim->snap;
            s->groups[k].g.snap_col = sim->snap ? sim->snap_col + snap_at : NULL;
            s->groups[k].g.snap_g = sim->snap ? sim->snap_g + snap_at : NULL;
            s->groups[k].g.snap_slot = sim->snap && sim->snap_slot ? sim->snap_slot + snap_at : NULL;
            s->groups[k].g.snap_at = snap_at;
            snap_at += (int64_t)state_size(&s->groups[k]);
            if ((sst = launch_group(sim, s, k, fused, &run)) != NS_OK) return sst;
        }
        /* the simulation's own streams only (every launch above is on them), not the device */
        for (int k = 0; k < s->n_streams; ++k) NS_CUDA_TRY(cudaStreamSynchronize(s->streams[k]));
        unsigned long long key = NS_SIM_FAULT_NONE;
        int32_t key_group = -1;
        if ((sst = first_fault(s, &key, &key_group)) != NS_OK) return sst;
        if (rows > 0 && sim->n_recs > 0)
            NS_CUDA_TRY(cudaMemcpy(sim->traces + (size_t)first_sample * (size_t)sim->n_recs, s->traces,
                                   (size_t)rows * (size_t)sim->n_recs * sizeof(double), cudaMemcpyDeviceToHost));
        if ((sst = collect_spikes(sim, s, part)) != NS_OK) return sst;
        if (key != NS_SIM_FAULT_NONE) return report_fault(sim, s, key, key_group, step0, fault);
        if (sim->snap) { /* the launch's LFP samples (src/lfp/cuda) */
            const ns_status fst = sim->sample_flush(sim, sim->sample_ctx, step0, t0, part);
            if (fst != NS_OK) return fst;
        }
        for (int64_t k = 0; k < part; ++k) t0 = ns_sim_half_step(ns_sim_half_step(t0, sim->params.dt), sim->params.dt);
        step0 += part;
        steps -= part;
    }
    return models_errors(s, 0);
}

/* A network's run (sim/network.c's interval loop, the CPU loop's exchange): per
 * interval, the device's events of the spikes queued for it (fan-out, sort,
 * sim/cuda/network.c), the interval's steps (gpu_advance: delivery, synapses and
 * detectors in the model's step), then its spikes to the host for the exchange. */
static ns_status gpu_advance_net(ns_sim_t *sim, net_loop *L, sim_fault *fault) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    ns_status st = NS_OK;
    int32_t tree = -1;
    for (int32_t k = 0; k < s->n_groups; ++k)
        if (s->groups[k].tree) tree = k;
    if (!s->net || tree < 0)
        return ns_fail(NS_ERR_INTERNAL, "network: the GPU loop has no network state (ns_sim_init not called?)");
    const cudaStream_t stream = s->streams[tree % s->n_streams];
    /* at most NET_MAX_INTERVAL steps per interval (shorter than the minimum
     * delay is always correct): the spike buffer and the offsets stay small
     * when the delays are long or there are no connections */
    if (L->interval > NET_MAX_INTERVAL) L->interval = NET_MAX_INTERVAL;
    for (;;) {
        const int64_t len = ns_net_loop_next(sim, L, fault, &st);
        if (len == 0) break;
        if ((st = ns_gpu_net_interval(sim, s->net, len, stream)) != NS_OK) break;
        s->net_step = 0;
        if ((st = gpu_advance(sim, len, fault)) != NS_OK) break;
        if (fault->step != INT64_MAX) break;
        if ((st = ns_gpu_net_collect(sim, s->net)) != NS_OK) break;
        if ((st = ns_gpu_model_events_check(s->model)) != NS_OK) break;
    }
    return st;
}

const sim_ops *ns_sim_cuda_ops(void) {
    static const sim_ops ops = {"cuda",
                                ns_gpu_create,
                                ns_gpu_destroy,
                                ns_gpu_init,
                                gpu_advance,
                                ns_gpu_sync_state,
                                ns_gpu_load_state,
                                ns_gpu_read_var,
                                ns_gpu_write_var,
                                ns_gpu_cell_var,
                                gpu_advance_net,
                                ns_gpu_state_parts,
                                ns_gpu_state_part,
                                ns_gpu_state_done,
                                ns_gpu_state_field};
    return &ops;
}
