/* The GPU simulation loops, host side: shape groups uploaded once, each
 * with the onchip loop (a warp per 32 / L cells of one shape, state in
 * shared memory) or, for every shape that does not run onchip, one
 * population-wide group of the tree loop
 * (sim/cuda/tree.cu: the solver's tree-contraction groups, any shapes, one
 * launch); the state kept on the device, steps launched in parts of at
 * most PART_STEPS with the recorded samples and spike times copied out
 * after each part (no host round trip per step). Initialisation runs on the
 * host (the CPU loop's) and is uploaded. The choice per shape (`auto`) is
 * choose_loop below (docs/simulation.md, "GPU loops"). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/step.h"
#include "sim/policy.h"
#include "core/cuda/device_args.h"
#include "core/cuda_check.h"
#include "neurosolve/device.h"
#include "hines/cuda/tree_backend.h"
#include "sim/cuda/mechanisms.h"
#include "sim/cuda/network.h"
#include "sim/network.h"
#include "sim/cuda/fused.h"
#include "sim/cuda/step_graph.h"

#define PART_STEPS NS_SIM_GPU_LAUNCH_STEPS /* steps per launch */
#define SPIKE_CAP 128    /* spikes per cell per launch (more is an error) */
#define NET_MAX_INTERVAL 1000 /* steps per interval of a network (gpu_advance_net) */
/* Shape groups run concurrently, group k on stream k % STREAMS: a
 * population of many morphologies with few cells each would otherwise run
 * one small kernel after another. */
#define STREAMS 16
/* Nodes per small group of the tree loop at most (a block of
 * NS_SIM_TREE_THREADS threads with the group's d, rhs and solve scratch in
 * shared memory: 40 bytes per node, two blocks per SM), except to fill one
 * wave (tree_group_cap): then up to what TREE_GROUPS_PER_SM blocks per SM
 * hold in the device's shared memory. */
#define TREE_GROUP_NODES 2048
#define TREE_GROUPS_PER_SM 2

enum { LOOP_ONCHIP = NS_SIM_LOOP_ONCHIP, LOOP_TREE = NS_SIM_LOOP_TREE };

typedef struct gpu_group {
    ns_sim_gpu_group g;
    int64_t *cell_id; /* host: global cell of each local cell */
    int32_t shape;            /* -1: the tree group (several shapes) */
    int onchip;               /* 1: onchip loop (oc) */
    int tree;                 /* 1: tree loop (layout, t) */
    ns_sim_onchip_group oc;
    ns_contract_dev layout;   /* tree: the solver's groups on the device */
    ns_sim_tree t;
    int64_t *cell_base;       /* tree (and onchip with a model), host: first node of each local cell (cells + 1) */
    gpu_model *model;         /* onchip: the model's mechanisms over the group's cells (sim/cuda/mechanisms.c),
                                 run by the onchip kernel (sim/cuda/fused.h) */
    int64_t *flat_of;         /* device: the Flat index of each state position (made by the first
                                 ns_sim_read_var / ns_sim_write_var) */
    int64_t *first;           /* onchip, host: first position of each local cell, j * n
                                 (ns_sim_state_part; made on first use) */
    void *allocs[24];     /* shape constants, state, outputs */
    int n_allocs;
    void *site_allocs[12]; /* stimulus and recording indexes (replaced when they change) */
    int n_site_allocs;
} gpu_group;

typedef struct gpu_state {
    gpu_group *groups;
    int32_t n_groups;
    double *traces;            /* device, rows x n_sites */
    int64_t trace_rows;
    int32_t *spike_count_host; /* per local cell of the largest group */
    double *spike_t_host;
    unsigned long long *fault;
    cudaStream_t streams[STREAMS];
    int n_streams;
    int host_current;          /* host arrays hold the device state */
    int64_t sites_stims;       /* stimuli and recordings in the uploaded indexes */
    int32_t sites_recs;
    /* a caller's stream touched the state (ns_sim_read_var / write_var):
     * recorded behind that work, waited for before the state changes again */
    cudaEvent_t external;
    int external_pending;
    gpu_model *model;          /* a model's mechanisms (sim->model) over the tree group's cells */
    gpu_net *net;              /* a network (sim->net, sim/cuda/network.c), on the tree group's stream */
    int64_t net_step;          /* the step within the network's interval */
    ns_sim_fused_state *fused; /* the model's built-in mechanisms in the tree kernel (sim/cuda/fused.h), or NULL */
    ns_sim_step_graph graph;   /* the per-step path's replayed step (sim/cuda/step_graph.h) */
} gpu_state;

static ns_status dalloc(gpu_group *gr, void **p, size_t bytes) {
    NS_CUDA_TRY(cudaMalloc(p, bytes ? bytes : 8));
    gr->allocs[gr->n_allocs++] = *p;
    return NS_OK;
}

static ns_status upload(gpu_group *gr, void **dst, const void *src, size_t bytes) {
    ns_status st = dalloc(gr, dst, bytes);
    if (st != NS_OK) return st;
    if (bytes) NS_CUDA_TRY(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return NS_OK;
}

static ns_status upload_site(gpu_group *gr, void **dst, const void *src, size_t bytes) {
    NS_CUDA_TRY(cudaMalloc(dst, bytes ? bytes : 8));
    gr->site_allocs[gr->n_site_allocs++] = *dst;
    if (bytes) NS_CUDA_TRY(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return NS_OK;
}

static void free_state(gpu_state *s) {
    if (!s) return;
    for (int32_t k = 0; k < s->n_groups; ++k) {
        for (int a = 0; a < s->groups[k].n_allocs; ++a) cudaFree(s->groups[k].allocs[a]);
        for (int a = 0; a < s->groups[k].n_site_allocs; ++a) cudaFree(s->groups[k].site_allocs[a]);
        ns_sim_onchip_release(&s->groups[k].oc);
        ns_gpu_model_free(s->groups[k].model);
        ns_contract_dev_free(&s->groups[k].layout);
        free(s->groups[k].cell_id);
        free(s->groups[k].cell_base);
        cudaFree(s->groups[k].flat_of);
        free(s->groups[k].first);
    }
    ns_gpu_net_free(s->net);
    ns_sim_fused_free(s->fused);
    ns_sim_step_graph_free(&s->graph);
    ns_gpu_model_free(s->model);
    free(s->groups);
    cudaFree(s->traces);
    cudaFree(s->fault);
    for (int k = 0; k < s->n_streams; ++k) cudaStreamDestroy(s->streams[k]);
    if (s->external) cudaEventDestroy(s->external);
    free(s->spike_count_host);
    free(s->spike_t_host);
    free(s);
}

/* Where the kernel finds compartment i: itself (tree) or its position (onchip). */
static int32_t node_index(const gpu_group *gr, int32_t i) {
    return gr->onchip ? gr->oc.plan.data[gr->oc.plan.pos_of_node + (size_t)i] : i;
}

/* Index of compartment i of local cell j in the group's device state. */
static size_t state_index(const gpu_group *gr, int64_t j, int32_t i) {
    if (gr->tree) return (size_t)gr->cell_base[j] + (size_t)i;
    return (size_t)j * (size_t)gr->g.n + (size_t)node_index(gr, i);
}

/* Positions of the group's state arrays. */
static size_t state_size(const gpu_group *gr) {
    const size_t N = (size_t)gr->g.cells;
    return gr->tree ? (size_t)gr->cell_base[N] : (size_t)gr->g.n * N;
}

/* Compartments of local cell j. */
static int32_t cell_size(const ns_sim_t *sim, const gpu_group *gr, int64_t j) {
    return sim->shapes[sim->cell_shape[gr->cell_id[j]]].n;
}

static void gpu_destroy(ns_sim_t *sim) {
    free_state((gpu_state *)sim->backend_state);
    sim->backend_state = NULL;
}

/* The loop of every shape (LOOP_*), the onchip preparations of those that
 * run onchip (oc[k]), and the rule: docs/simulation.md, "GPU loops". A
 * model runs onchip where the onchip kernel has its mechanisms
 * (ns_sim_fused_onchip_ok) and not `tree_only` (a network: gpu_init). */
static ns_status choose_loops(ns_sim_t *sim, const int64_t *cells, int sms, int tree_only, int *loop,
                              ns_sim_onchip_group *oc) {
    const int model = sim->model != NULL;
    const int model_onchip = model && !tree_only && ns_sim_fused_onchip_ok(sim);
    for (int32_t k = 0; k < sim->n_shapes; ++k) {
        loop[k] = LOOP_TREE;
        if (model && !model_onchip && sim->method == NS_HINES_ONCHIP)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "simulation: the onchip loop runs a model of the built-in pas and hh (fused: "
                           "docs/simulation.md, \"Models: the fused loop\") without a network; this one %s: method "
                           "'tree' or 'auto'",
                           tree_only ? "has a network" : "needs the tree loop (other mechanisms, a concentration "
                                                         "writer or gpu_mechanisms = per-step)");
        if (cells[k] == 0 || sim->method == NS_HINES_TREE || (model && !model_onchip)) continue;
        if (sim->method == NS_HINES_AUTO && !ns_sim_auto_needs_onchip(cells[k], sms)) continue;
        int fits = 0;
        ns_status st = ns_sim_onchip_prepare(&sim->shapes[k], sim->options.gpu_lanes, &oc[k], &fits);
        if (st != NS_OK) return st;
        if (sim->method == NS_HINES_ONCHIP) {
            if (!fits || (model && !oc[k].launch.in_shared))
                return ns_fail(NS_ERR_UNSUPPORTED,
                               "simulation: a cell of %d compartments is beyond the onchip loop's %s (use 'tree')",
                               (int)sim->shapes[k].n, fits ? "shared memory (a model runs there only)" : "schedule");
            loop[k] = LOOP_ONCHIP;
            continue;
        }
        const ns_sim_loop_facts f = {cells[k], sms, fits, fits && oc[k].launch.in_shared,
                                     fits ? oc[k].plan.bwd_cost + oc[k].plan.fwd_cost : INT64_MAX, model,
                                     model_onchip};
        loop[k] = ns_sim_auto_loop(&f);
        if (loop[k] != LOOP_ONCHIP) ns_sim_onchip_release(&oc[k]);
    }
    return NS_OK;
}

/* Small groups of the tree loop that the greedy packing (consecutive cells
 * while their nodes fit `cap` and the group has < NS_SIM_TREE_THREADS
 * cells; ns_contract_layout_create) makes; a cell above cap is a group of its
 * own of another class. */
static int64_t tree_small_groups(const ns_sim_t *sim, const gpu_group *gr, int64_t cap) {
    int64_t groups = 0, nodes = 0, cells = 0;
    int open = 0;
    for (int64_t j = 0; j < gr->g.cells; ++j) {
        const int32_t n = sim->shapes[sim->cell_shape[gr->cell_id[j]]].n;
        if (n > cap) {
            open = 0;
            continue;
        }
        if (open && nodes + n <= cap && cells < NS_SIM_TREE_THREADS) {
            nodes += n, ++cells;
            continue;
        }
        ++groups, nodes = n, cells = 1, open = 1;
    }
    return groups;
}

/* The most nodes per small group of the tree loop. The rule: the
 * population's nodes spread over the `slots` blocks the GPU runs at once,
 * at most TREE_GROUP_NODES; and where that packing leaves a partial second
 * wave (slots < groups <= 2 slots) of small cells (at most half the cap),
 * the least cap up to group_max that packs them into one wave: a greedy
 * group then holds more than cap - largest nodes, so ceil(total / slots) +
 * largest - 1 makes at most `slots` groups. The few groups of a partial wave
 * run at the latency of a full one. Measured (bench/README.md at 01b826c,
 * "The tree loop's groups"): one wave instead of a partial second one
 * speeds up a busyring population of 10,000 small cells; a rule that
 * filled whole waves everywhere (bigger groups for many waves and for
 * mixed sizes) was slower on ca1_h10 x 10,000 and the bundled mixed
 * population, so it applies only to the partial second wave. */
static int32_t tree_group_cap(const ns_sim_t *sim, const gpu_group *gr, int32_t shared_nodes, int32_t group_max,
                              int64_t slots) {
    int64_t total = 0;
    for (int64_t j = 0; j < gr->g.cells; ++j) {
        const int32_t n = sim->shapes[sim->cell_shape[gr->cell_id[j]]].n;
        if (n <= shared_nodes) total += n;
    }
    int64_t cap = (total + slots - 1) / slots;
    if (cap > TREE_GROUP_NODES) cap = TREE_GROUP_NODES;
    if (cap < 1) cap = 1;
    const int64_t groups = tree_small_groups(sim, gr, cap);
    if (groups <= slots || groups > 2 * slots) return (int32_t)cap;
    int64_t small = 0;
    int32_t largest = 1;
    for (int64_t j = 0; j < gr->g.cells; ++j) {
        const int32_t n = sim->shapes[sim->cell_shape[gr->cell_id[j]]].n;
        if (n > cap) continue;
        small += n;
        if (n > largest) largest = n;
    }
    if (2 * (int64_t)largest > cap) return (int32_t)cap;
    const int64_t one_wave = (small + slots - 1) / slots + largest - 1;
    if (one_wave <= group_max && tree_small_groups(sim, gr, one_wave) <= slots) return (int32_t)one_wave;
    return (int32_t)cap;
}

/* The tree group: the solver's layout of its cells (a batch of their
 * shapes) and the per-node constants, Flat in the group's cell order. */
static ns_status setup_tree(ns_sim_t *sim, gpu_group *gr, const int *loop, int sms) {
    const int64_t N = gr->g.cells;
    ns_status st = NS_OK;
    int32_t *map = malloc((size_t)sim->n_shapes * sizeof *map), *cshape = malloc((size_t)N * sizeof *cshape);
    ns_tree_t **trees = calloc((size_t)sim->n_shapes, sizeof *trees);
    ns_batch_t *batch = NULL;
    ns_contract_layout L;
    memset(&L, 0, sizeof L);
    double *ha = NULL, *hb = NULL, *hcap = NULL;
    int8_t *hreg = NULL;
    int32_t *hpar = NULL, *hcb = NULL, *hch = NULL, *hspike = NULL, *hg0 = NULL;
    gr->cell_base = malloc((size_t)(N + 1) * sizeof *gr->cell_base);
    if (!map || !cshape || !trees || !gr->cell_base) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: tree group");
        goto out;
    }
    int32_t nt = 0;
    for (int32_t k = 0; k < sim->n_shapes && st == NS_OK; ++k) {
        map[k] = -1;
        if (loop[k] != LOOP_TREE) continue;
        st = ns_tree_create(sim->shapes[k].n, sim->shapes[k].parent, &trees[nt]);
        map[k] = nt++;
    }
    if (st != NS_OK) goto out;
    int64_t nodes = 0;
    for (int64_t j = 0; j < N; ++j) {
        const int32_t k = sim->cell_shape[gr->cell_id[j]];
        cshape[j] = map[k];
        gr->cell_base[j] = nodes;
        nodes += sim->shapes[k].n;
    }
    gr->cell_base[N] = nodes;
    if (nodes >= ((int64_t)1 << 31)) {
        st = ns_fail(NS_ERR_SIZE, "simulation: %lld compartments in the tree loop (the GPU loop takes < 2^31)",
                     (long long)nodes);
        goto out;
    }
    if ((st = ns_batch_create(nt, (const ns_tree_t *const *)trees, N, cshape, &batch)) != NS_OK) goto out;
    int optin = 0, per_sm = 0, dev = 0, resident = 0;
    NS_CUDA_GOTO(cudaGetDevice(&dev), st, out);
    NS_CUDA_GOTO(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), st, out);
    NS_CUDA_GOTO(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev), st, out);
    /* a cell beyond the opt-in shared memory runs in device memory */
    const int32_t shared_nodes = (int32_t)(((size_t)optin - 64) / ns_contract_shared_bytes(1));
    /* small groups: at most the nodes that TREE_GROUPS_PER_SM blocks per SM
     * hold (1 KiB per block for the runtime) */
    int32_t group_max = (int32_t)(((size_t)per_sm / TREE_GROUPS_PER_SM - 1024) / ns_contract_shared_bytes(1));
    if (group_max > shared_nodes) group_max = shared_nodes;
    /* one shape: tree_group_cap; several: the population spread over
     * TREE_GROUPS_PER_SM groups per SM, at most TREE_GROUP_NODES each (the
     * rule before tree_group_cap: on the bundled mixed population x5 the cap
     * was 11 % slower, H200, 2026-11-28, bench/README.md at 01b826c "The tree loop's
     * groups") */
    if (nt == 1) {
        NS_CUDA_GOTO(ns_sim_tree_setup(ns_contract_shared_bytes(group_max)), st, out);
        NS_CUDA_GOTO(ns_sim_tree_resident(ns_contract_shared_bytes(group_max), &resident), st, out);
        const int32_t cap =
            tree_group_cap(sim, gr, shared_nodes, group_max, (int64_t)(resident > 0 ? resident : 1) * sms);
        st = ns_tree_layout_for(batch, cap, INT32_MAX, shared_nodes, 0, NS_SIM_TREE_THREADS, shared_nodes, &L);
    } else
        st = ns_tree_layout_for(batch, TREE_GROUP_NODES, INT32_MAX, shared_nodes, TREE_GROUPS_PER_SM * sms,
                                NS_SIM_TREE_THREADS, shared_nodes, &L);
    if (st != NS_OK) goto out;
    /* per-node constants; parents and children local to the node's group */
    const size_t n = (size_t)nodes;
    ha = malloc(n * sizeof *ha), hb = malloc(n * sizeof *hb), hcap = malloc(n * sizeof *hcap);
    hreg = malloc(n), hpar = malloc(n * sizeof *hpar), hcb = malloc((n + 1) * sizeof *hcb);
    hch = malloc((n + 1) * sizeof *hch), hspike = malloc((size_t)N * sizeof *hspike);
    hg0 = malloc(((size_t)L.n_groups + 1) * sizeof *hg0);
    if (!ha || !hb || !hcap || !hreg || !hpar || !hcb || !hch || !hspike || !hg0) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: tree constants");
        goto out;
    }
    int32_t g = 0;
    int64_t gbase = 0, nch = 0;
    for (int64_t j = 0; j < N; ++j) {
        const sim_shape *sh = &sim->shapes[sim->cell_shape[gr->cell_id[j]]];
        const int64_t o = gr->cell_base[j];
        while (g < L.n_groups && L.g_base[g] <= o) hg0[g] = (int32_t)j, gbase = L.g_base[g], ++g;
        hspike[j] = sh->spike_node;
        for (int32_t i = 0; i < sh->n; ++i) {
            ha[o + i] = sh->a[i];
            hb[o + i] = sh->b[i];
            hcap[o + i] = sh->cap[i];
            hreg[o + i] = sh->region[i];
            hpar[o + i] = sh->parent[i] >= 0 ? (int32_t)(o - gbase + sh->parent[i]) : -1;
        }
        /* children CSR in increasing child order: starts, then a fill
         * that advances hcb[p] (undone by shifting back below) */
        for (int32_t i = 0; i < sh->n; ++i) hcb[o + i] = 0;
        for (int32_t i = 1; i < sh->n; ++i) hcb[o + sh->parent[i]]++;
        for (int32_t i = 0; i < sh->n; ++i) {
            const int32_t c = hcb[o + i];
            hcb[o + i] = (int32_t)nch;
            nch += c;
        }
        for (int32_t i = 1; i < sh->n; ++i) hch[hcb[o + sh->parent[i]]++] = (int32_t)(o - gbase + i);
    }
    hg0[L.n_groups] = (int32_t)N;
    /* after the fill hcb[i] is the end of i's children = the start of i + 1's */
    for (size_t i = n; i-- > 1;) hcb[i] = hcb[i - 1];
    hcb[0] = 0;
    hcb[n] = (int32_t)nch;
    ns_sim_tree *t = &gr->t;
    if ((st = upload(gr, (void **)&t->a, ha, n * sizeof *ha)) != NS_OK ||
        (st = upload(gr, (void **)&t->b, hb, n * sizeof *hb)) != NS_OK ||
        (st = upload(gr, (void **)&t->cap, hcap, n * sizeof *hcap)) != NS_OK ||
        (st = upload(gr, (void **)&t->region, hreg, n)) != NS_OK ||
        (st = upload(gr, (void **)&t->parent, hpar, n * sizeof *hpar)) != NS_OK ||
        (st = upload(gr, (void **)&t->child_begin, hcb, (n + 1) * sizeof *hcb)) != NS_OK ||
        (st = upload(gr, (void **)&t->child, hch, (size_t)(nch ? nch : 1) * sizeof *hch)) != NS_OK ||
        (st = upload(gr, (void **)&t->cell_base, gr->cell_base, (size_t)(N + 1) * sizeof *gr->cell_base)) != NS_OK ||
        (st = upload(gr, (void **)&t->spike_node, hspike, (size_t)N * sizeof *hspike)) != NS_OK ||
        (st = upload(gr, (void **)&t->g_cell0, hg0, ((size_t)L.n_groups + 1) * sizeof *hg0)) != NS_OK ||
        (st = dalloc(gr, (void **)&t->up, n * sizeof(double))) != NS_OK ||
        (st = dalloc(gr, (void **)&t->down, n * sizeof(double))) != NS_OK ||
        (st = dalloc(gr, (void **)&t->lo, n * sizeof(double))) != NS_OK ||
        (st = dalloc(gr, (void **)&t->flags, 2 * (size_t)(L.n_big ? L.n_big : 1) * sizeof *t->flags)) != NS_OK)
        goto out;
    st = ns_cuda_status(ns_contract_dev_upload(&L, &gr->layout), "tree layout upload", __FILE__, __LINE__);
    if (st == NS_OK) {
        int32_t most = L.max_medium_nodes > L.max_small_nodes ? L.max_medium_nodes : L.max_small_nodes;
        if (L.max_tail_nodes > most) most = L.max_tail_nodes;
        st = ns_cuda_status(ns_sim_tree_setup(ns_contract_shared_bytes(most)), "tree loop setup", __FILE__, __LINE__);
    }
out:
    for (int32_t k = 0; trees && k < sim->n_shapes; ++k) ns_tree_destroy(trees[k]);
    free(trees), free(map), free(cshape);
    ns_batch_destroy(batch);
    ns_contract_layout_destroy(&L);
    free(ha), free(hb), free(hcap), free(hreg), free(hpar), free(hcb), free(hch), free(hspike), free(hg0);
    return st;
}

/* The groups of the simulation (the shapes' loops, their state and
 * constants); tree_only: every shape in the tree loop (a model with a
 * network). */
static ns_status create_groups(ns_sim_t *sim, int tree_only) {
    /* usable devices: the build has code for their compute capability */
    int count = 0;
    if (ns_cuda_device_count(&count) != NS_OK || count == 0)
        return ns_fail(NS_ERR_NO_DEVICE, "simulation: no usable GPU (none, or none this build has code for: "
                                         "docs/install.md)");
    /* options.device, resolved by sim.c, which gives the caller's device back */
    NS_CUDA_TRY(cudaSetDevice(sim->device));
    gpu_state *s = calloc(1, sizeof *s);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU state");
    sim->backend_state = s;
    s->groups = calloc((size_t)sim->n_shapes + 1, sizeof *s->groups);
    int64_t *cells = calloc((size_t)sim->n_shapes, sizeof *cells);
    int *loop = calloc((size_t)sim->n_shapes, sizeof *loop);
    ns_sim_onchip_group *oc = calloc((size_t)sim->n_shapes, sizeof *oc);
    ns_status st = NS_OK;
    if (!s->groups || !cells || !loop || !oc) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU groups");
        goto out;
    }
    int dev = 0, sms = 0;
    NS_CUDA_GOTO(cudaGetDevice(&dev), st, out);
    NS_CUDA_GOTO(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), st, out);
    for (int64_t c = 0; c < sim->n_cells; ++c) cells[sim->cell_shape[c]]++;
    if ((st = choose_loops(sim, cells, sms, tree_only, loop, oc)) != NS_OK) goto out;
    /* What the groups will hold, known before the first allocation: refused
     * when it exceeds the device's free memory (a lower bound: the shape
     * constants of the onchip groups and the per-launch traces come on top;
     * the trace buffer is checked where it is allocated). Per compartment:
     * v for onchip; v, d, rhs, a, b, cap, up, down, lo and 13 bytes of
     * indexes for the tree loop (the mechanisms' fields below). Per cell:
     * SPIKE_CAP spike times and a count. */
    {
        double need = 0.0;
        for (int32_t k = 0; k < sim->n_shapes; ++k) {
            const double comps = (double)cells[k] * (double)sim->shapes[k].n;
            if (loop[k] == LOOP_TREE) need += comps * (9.0 * 8.0 + 13.0) + (double)cells[k] * 12.0;
            else need += comps * 8.0;
            need += (double)cells[k] * (SPIKE_CAP * 8.0 + 4.0);
            /* a model: each instance's fields and node index, each ion's 5 arrays */
            for (int32_t m = 0; sim->model && m < sim->model->n_mechs; ++m)
                need += (double)cells[k] * (double)sim->model->per_shape[(size_t)k * sim->model->n_mechs + m].n *
                        (8.0 * sim->model->mechs[m].desc->n_fields + 4.0);
            if (sim->model) need += comps * 40.0 * sim->model->n_ions;
        }
        size_t free_b = 0, total_b = 0;
        NS_CUDA_GOTO(cudaMemGetInfo(&free_b, &total_b), st, out);
        if (need > (double)free_b) {
            st = ns_fail(NS_ERR_DEVICE_MEMORY,
                         "simulation: %lld cells (%lld compartments) need at least %.2f GB of GPU memory, more than "
                         "the %.2f GB free on GPU %d (of %.2f GB): fewer cells, or the CPU backend",
                         (long long)sim->n_cells, (long long)sim->n_comp, need / 1e9, (double)free_b / 1e9, dev,
                         (double)total_b / 1e9);
            goto out;
        }
    }
    int64_t largest = 0, tree_cells = 0;
    int used[3] = {0, 0, 0}; /* by LOOP_* */
    for (int32_t k = 0; k < sim->n_shapes; ++k) {
        if (cells[k] == 0) continue;
        if (loop[k] == LOOP_TREE) {
            tree_cells += cells[k];
            continue;
        }
        gpu_group *gr = &s->groups[s->n_groups];
        const sim_shape *sh = &sim->shapes[k];
        if (cells[k] >= ((int64_t)1 << 24)) {
            st = ns_fail(NS_ERR_SIZE, "simulation: %lld cells of one shape (the GPU loop takes < 2^24)",
                         (long long)cells[k]);
            goto out;
        }
        gr->shape = k;
        gr->cell_id = malloc((size_t)cells[k] * sizeof *gr->cell_id);
        if (!gr->cell_id) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU group");
            goto out;
        }
        for (int64_t c = 0, j = 0; c < sim->n_cells; ++c)
            if (sim->cell_shape[c] == k) gr->cell_id[j++] = c;
        s->n_groups++;
        if (cells[k] > largest) largest = cells[k];
        ns_sim_gpu_group *g = &gr->g;
        g->n = sh->n;
        g->cells = cells[k];
        if (loop[k] == LOOP_ONCHIP) {
            gr->oc = oc[k];
            memset(&oc[k], 0, sizeof oc[k]);
            gr->onchip = 1;
            const int32_t L = gr->oc.plan.lanes;
            sim->gpu_lanes = !used[LOOP_ONCHIP] || sim->gpu_lanes == L ? L : -1;
        }
        used[loop[k]] = 1;
        g->spike_node = node_index(gr, sh->spike_node);
        const size_t n = (size_t)sh->n, z = n * (size_t)cells[k] * sizeof(double);
        if ((st = dalloc(gr, (void **)&g->v, z)) != NS_OK ||
            (st = dalloc(gr, (void **)&g->spike_count, (size_t)cells[k] * sizeof(int32_t))) != NS_OK ||
            (st = dalloc(gr, (void **)&g->spike_t, (size_t)cells[k] * SPIKE_CAP * sizeof(double))) != NS_OK)
            goto out;
        /* the model's mechanisms over the group's cells (positions), run by the onchip kernel */
        if (sim->model && gr->onchip) {
            gr->cell_base = malloc(((size_t)cells[k] + 1) * sizeof *gr->cell_base);
            if (!gr->cell_base) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU group");
                goto out;
            }
            for (int64_t j = 0; j <= cells[k]; ++j) gr->cell_base[j] = j * (int64_t)sh->n;
            if ((st = ns_gpu_model_create(sim, gr->cell_id, gr->cell_base, cells[k],
                                          gr->oc.plan.data + gr->oc.plan.pos_of_node, g->v, NULL, NULL, &gr->model)) !=
                    NS_OK ||
                (st = ns_sim_fused_onchip(sim, gr->model, k, &gr->oc)) != NS_OK)
                goto out;
            sim->gpu_mechanisms = NS_SIM_GPU_MECHANISMS_FUSED;
        }
    }
    if (tree_cells > 0) {
        gpu_group *gr = &s->groups[s->n_groups++];
        if (tree_cells >= ((int64_t)1 << 24)) {
            st = ns_fail(NS_ERR_SIZE, "simulation: %lld cells in the tree loop (the GPU loop takes < 2^24)",
                         (long long)tree_cells);
            goto out;
        }
        gr->shape = -1;
        gr->tree = 1;
        used[LOOP_TREE] = 1;
        gr->g.cells = tree_cells;
        gr->cell_id = malloc((size_t)tree_cells * sizeof *gr->cell_id);
        if (!gr->cell_id) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU tree group");
            goto out;
        }
        for (int64_t c = 0, j = 0; c < sim->n_cells; ++c)
            if (loop[sim->cell_shape[c]] == LOOP_TREE) gr->cell_id[j++] = c;
        if (tree_cells > largest) largest = tree_cells;
        if ((st = setup_tree(sim, gr, loop, sms)) != NS_OK) goto out;
        ns_sim_gpu_group *g = &gr->g;
        const size_t z = (size_t)gr->cell_base[tree_cells] * sizeof(double);
        if ((st = dalloc(gr, (void **)&g->v, z)) != NS_OK || (st = dalloc(gr, (void **)&g->d, z)) != NS_OK || (st = dalloc(gr, (void **)&g->rhs, z)) != NS_OK ||
            (st = dalloc(gr, (void **)&g->spike_count, (size_t)tree_cells * sizeof(int32_t))) != NS_OK ||
            (st = dalloc(gr, (void **)&g->spike_t, (size_t)tree_cells * SPIKE_CAP * sizeof(double))) != NS_OK)
            goto out;
        if (sim->model &&
            (st = ns_gpu_model_create(sim, gr->cell_id, gr->cell_base, tree_cells, NULL, g->v, g->rhs, g->d, &s->model)) !=
                NS_OK)
            goto out;
        /* fused or per step (sim/cuda/fused.h) */
        if (sim->model && (st = ns_sim_fused_create(sim, s->model, gr->cell_id, gr->cell_base, tree_cells,
                                                    &s->fused)) != NS_OK)
            goto out;
    }
    /* the method the loops resolved to (AUTO: several loops in use) */
    if (used[LOOP_ONCHIP] + used[LOOP_TREE] == 1) sim->method = used[LOOP_ONCHIP] ? NS_HINES_ONCHIP : NS_HINES_TREE;
    NS_CUDA_GOTO(cudaMalloc((void **)&s->fault, (size_t)s->n_groups * sizeof *s->fault), st, out);
    /* blocking streams: they wait for the default stream's memsets and copies */
    const int32_t want_streams = s->n_groups + (tree_cells > 0 ? 2 : 0);
    for (; s->n_streams < STREAMS && s->n_streams < want_streams; ++s->n_streams)
        NS_CUDA_GOTO(cudaStreamCreate(&s->streams[s->n_streams]), st, out);
    s->spike_count_host = malloc((size_t)largest * sizeof *s->spike_count_host);
    s->spike_t_host = malloc((size_t)largest * SPIKE_CAP * sizeof *s->spike_t_host);
    if (!s->spike_count_host || !s->spike_t_host) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: spike buffers");
out:
    for (int32_t k = 0; oc && k < sim->n_shapes; ++k) ns_sim_onchip_release(&oc[k]);
    free(cells), free(loop), free(oc);
    return st;
}

static ns_status gpu_create(ns_sim_t *sim) { return create_groups(sim, 0); }

/* Host Flat v <-> device v of one group (the group's layout). */
static ns_status transfer_state(ns_sim_t *sim, gpu_group *gr, int to_device) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    if (s->external_pending) { /* a caller's stream may still read or write the state */
        NS_CUDA_TRY(cudaEventSynchronize(s->external));
        s->external_pending = 0;
    }
    ns_sim_gpu_group *g = &gr->g;
    const size_t N = (size_t)g->cells;
    const size_t total = state_size(gr);
    double *buf = malloc(total * sizeof *buf);
    if (!buf) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: state transfer");
    ns_status st = NS_OK;
    if (to_device) {
        for (size_t j = 0; j < N; ++j) {
            const double *src = sim->v + sim->cell_offset[gr->cell_id[j]];
            const int32_t n = cell_size(sim, gr, (int64_t)j);
            for (int32_t i = 0; i < n; ++i) buf[state_index(gr, (int64_t)j, i)] = src[i];
        }
        NS_CUDA_GOTO(cudaMemcpy(g->v, buf, total * sizeof *buf, cudaMemcpyHostToDevice), st, out);
    } else {
        NS_CUDA_GOTO(cudaMemcpy(buf, g->v, total * sizeof *buf, cudaMemcpyDeviceToHost), st, out);
        for (size_t j = 0; j < N; ++j) {
            double *dst = sim->v + sim->cell_offset[gr->cell_id[j]];
            const int32_t n = cell_size(sim, gr, (int64_t)j);
            for (int32_t i = 0; i < n; ++i) dst[i] = buf[state_index(gr, (int64_t)j, i)];
        }
    }
out:
    free(buf);
    return st;
}

/* Upload the per-cell stimulus and recording indexes (after ns_sim_index). */
static ns_status upload_sites(ns_sim_t *sim, gpu_group *gr) {
    ns_sim_gpu_group *g = &gr->g;
    const int64_t N = g->cells;
    int64_t ns = 0, nr = 0;
    for (int64_t j = 0; j < N; ++j) {
        const int64_t c = gr->cell_id[j];
        ns += sim->stim_begin[c + 1] - sim->stim_begin[c];
        nr += sim->rec_begin[c + 1] - sim->rec_begin[c];
    }
    int64_t *sb = malloc((size_t)(N + 1) * sizeof *sb), *rb = malloc((size_t)(N + 1) * sizeof *rb);
    int32_t *snode = malloc((size_t)(ns + 1) * sizeof *snode), *rnode = malloc((size_t)(nr + 1) * sizeof *rnode);
    int32_t *rsite = malloc((size_t)(nr + 1) * sizeof *rsite);
    double *sdel = malloc((size_t)(ns + 1) * sizeof *sdel), *sdur = malloc((size_t)(ns + 1) * sizeof *sdur);
    double *samp = malloc((size_t)(ns + 1) * sizeof *samp), *sscale = malloc((size_t)(ns + 1) * sizeof *sscale);
    ns_status st = NS_OK;
    if (!sb || !rb || !snode || !rnode || !rsite || !sdel || !sdur || !samp || !sscale) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU stimulus index");
        goto out;
    }
    sb[0] = rb[0] = 0;
    for (int64_t j = 0, s = 0, r = 0; j < N; ++j) {
        const int64_t c = gr->cell_id[j];
        const sim_shape *sh = &sim->shapes[sim->cell_shape[c]];
        for (int64_t q = sim->stim_begin[c]; q < sim->stim_begin[c + 1]; ++q, ++s) {
            const sim_stim *x = &sim->stims[sim->stim_order[q]];
            snode[s] = node_index(gr, x->node), sdel[s] = x->del, sdur[s] = x->dur, samp[s] = x->amp;
            sscale[s] = sh->stim_scale[x->node];
        }
        for (int64_t q = sim->rec_begin[c]; q < sim->rec_begin[c + 1]; ++q, ++r) {
            rsite[r] = sim->rec_order[q];
            rnode[r] = node_index(gr, sim->recs[rsite[r]].node);
        }
        sb[j + 1] = s;
        rb[j + 1] = r;
    }
    for (int a = 0; a < gr->n_site_allocs; ++a) cudaFree(gr->site_allocs[a]);
    gr->n_site_allocs = 0;
    if ((st = upload_site(gr, (void **)&g->stim_begin, sb, (size_t)(N + 1) * sizeof *sb)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->stim_node, snode, (size_t)ns * sizeof *snode)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->stim_del, sdel, (size_t)ns * sizeof *sdel)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->stim_dur, sdur, (size_t)ns * sizeof *sdur)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->stim_amp, samp, (size_t)ns * sizeof *samp)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->stim_scale, sscale, (size_t)ns * sizeof *sscale)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->rec_begin, rb, (size_t)(N + 1) * sizeof *rb)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->rec_node, rnode, (size_t)nr * sizeof *rnode)) != NS_OK ||
        (st = upload_site(gr, (void **)&g->rec_site, rsite, (size_t)nr * sizeof *rsite)) != NS_OK)
        goto out;
out:
    free(sb), free(rb), free(snode), free(rnode), free(rsite), free(sdel), free(sdur), free(samp), free(sscale);
    return st;
}

static ns_status sync_sites(ns_sim_t *sim, gpu_state *s) {
    if (s->sites_stims == sim->n_stims && s->sites_recs == sim->n_recs && s->groups[0].n_site_allocs) return NS_OK;
    for (int32_t k = 0; k < s->n_groups; ++k) {
        ns_status st = upload_sites(sim, &s->groups[k]);
        if (st != NS_OK) return st;
    }
    s->sites_stims = sim->n_stims;
    s->sites_recs = sim->n_recs;
    return NS_OK;
}

static ns_status gpu_init(ns_sim_t *sim) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    ns_status st = NS_OK;
    /* a network runs in the tree loop (docs/networks.md, "The GPU loop"): a
     * model's cells that went onchip at create move there (the groups made
     * again), unless onchip was asked for by name */
    int onchip_model = 0;
    for (int32_t k = 0; k < s->n_groups; ++k) onchip_model |= s->groups[k].model != NULL;
    if (sim->net && onchip_model) {
        if (sim->options.method == NS_HINES_ONCHIP)
            return ns_fail(NS_ERR_UNSUPPORTED, "simulation: a network runs in the GPU's tree loop, not onchip: "
                                               "method 'tree' or 'auto'");
        free_state(s);
        sim->backend_state = NULL;
        sim->method = sim->options.method;
        sim->gpu_lanes = 0;
        if ((st = create_groups(sim, 1)) != NS_OK) return st;
        s = (gpu_state *)sim->backend_state;
    }
    ns_gpu_net_free(s->net);
    s->net = NULL;
    for (int32_t k = 0; k < s->n_groups; ++k) {
        st = transfer_state(sim, &s->groups[k], 1);
        if (st != NS_OK) return st;
        const gpu_group *gr = &s->groups[k];
        if (s->model && gr->tree &&
            (st = ns_gpu_model_init(sim, s->model, gr->cell_id, gr->cell_base, gr->g.cells, s->streams[0])) != NS_OK)
            return st;
        if (gr->model &&
            (st = ns_gpu_model_init(sim, gr->model, gr->cell_id, gr->cell_base, gr->g.cells, s->streams[0])) != NS_OK)
            return st;
        /* a network: its synapses' instances and INITIAL, its detectors and
         * connections, the check at t = 0 (sim/network_build.c's ns_net_build for the CPU) */
        if (sim->net && s->model && gr->tree) {
            const cudaStream_t stream = s->streams[k % s->n_streams];
            if ((st = ns_net_build_device(sim)) != NS_OK) return st;
            const int64_t n_syns = sim->net->n_syns;
            int32_t *slot = malloc((size_t)(n_syns + 1) * sizeof *slot);
            int32_t *inst = malloc((size_t)(n_syns + 1) * sizeof *inst);
            int32_t *conn_w = malloc((size_t)(sim->net->n_conns + 1) * sizeof *conn_w);
            if (!slot || !inst || !conn_w)
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld synapses", (long long)n_syns);
            if (st == NS_OK)
                st = ns_gpu_model_points_build(sim, s->model, gr->cell_id, gr->cell_base, gr->g.cells, slot, inst,
                                               conn_w, stream);
            if (st == NS_OK)
                st = ns_gpu_net_create(sim, gr->cell_id, gr->cell_base, gr->g.cells, slot, inst, conn_w,
                                       ns_gpu_model_points(s->model), gr->g.v, stream, &s->net);
            free(slot);
            free(inst);
            free(conn_w);
            if (st == NS_OK) NS_CUDA_TRY(cudaStreamSynchronize(stream));
            if (st != NS_OK) return st;
        }
        /* the network's synapses, events and detectors inside the fused kernel where the rule allows */
        if (s->fused && gr->tree &&
            (st = ns_sim_fused_net_build(sim, s->fused, s->model, sim->net ? s->net : NULL, gr->cell_base,
                                         gr->g.cells)) != NS_OK)
            return st;
    }
    s->host_current = 1;
    return sync_sites(sim, s);
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

static ns_status gpu_advance(ns_sim_t *sim, int64_t steps, sim_fault *fault) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    const int64_t every = sim->options.record_every;
    ns_status sst = models_errors(s, 1); /* stopped by a mechanism's error: again only after ns_sim_init */
    if (sst != NS_OK) return sst;
    sst = sync_sites(sim, s); /* stimuli or recordings added since */
    if (sst != NS_OK) return sst;
    s->host_current = 0;
    if (s->external_pending) { /* the loop's streams wait for the caller's reads and writes */
        for (int k = 0; k < s->n_streams; ++k) NS_CUDA_TRY(cudaStreamWaitEvent(s->streams[k], s->external, 0));
        s->external_pending = 0;
    }
    /* a model: its mechanisms fused into the tree kernel, or per step (sim/cuda/fused.h) */
    const ns_sim_fused *fused = NULL;
    if (s->model && (sst = ns_sim_fused_pick(sim, s->fused, &fused)) != NS_OK) return sst;
    /* the LFP inside the loop (sim_impl.h's snap): every group's positions from their sum before it */
    if (sim->snap) {
        int64_t total = 0;
        for (int32_t k = 0; k < s->n_groups; ++k) total += (int64_t)state_size(&s->groups[k]);
        if (total != sim->snap_stride)
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "LFP: the simulation's state has %lld positions, the probe was made for %lld (its cells "
                           "were regrouped at ns_sim_init: create the probe after ns_sim_init)",
                           (long long)total, (long long)sim->snap_stride);
    }
    int64_t step0 = sim->steps;
    double t0 = sim->t;
    while (steps > 0) {
        int64_t part = steps < PART_STEPS ? steps : PART_STEPS;
        const int64_t snap_first = sim->snap ? step0 / sim->sample_every + 1 : 0;
        if (sim->snap && (snap_first + sim->snap_rows - 1) * sim->sample_every - step0 < part)
            part = (snap_first + sim->snap_rows - 1) * sim->sample_every - step0; /* the buffer's rows */
        const int64_t first_sample = step0 / every + 1;
        const int64_t rows = (step0 + part) / every - step0 / every;
        if (sim->n_recs > 0 && rows > s->trace_rows) {
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
        }
        NS_CUDA_TRY(cudaMemset(s->fault, 0xFF, (size_t)s->n_groups * sizeof *s->fault)); /* NS_SIM_FAULT_NONE */
        ns_sim_gpu_run run;
        memset(&run, 0, sizeof run);
        run.t0 = t0;
        run.dt = sim->params.dt;
        run.threshold = sim->params.spike_threshold;
        run.netcon = sim->params.netcon_spikes;
        run.step0 = step0;
        run.steps = part;
        run.every = every;
        run.check = sim->options.check_every;
        run.first_sample = first_sample;
        run.n_sites = sim->n_recs;
        run.spike_cap = SPIKE_CAP;
        run.snap_every = sim->snap ? sim->sample_every : 1;
        run.snap_first = snap_first;
        run.snap_stride = sim->snap_stride;
        int64_t snap_at = 0;
        for (int32_t k = 0; k < s->n_groups; ++k) {
            s->groups[k].g.traces = s->traces;
            s->groups[k].g.fault = s->fault + k;
            s->groups[k].g.snap = sim->snap ? sim->snap + snap_at : NULL;
            snap_at += (int64_t)state_size(&s->groups[k]);
            const gpu_group *gr = &s->groups[k];
            cudaStream_t stream = s->streams[k % s->n_streams];
            if (gr->tree && fused) {
                /* the model's built-in mechanisms inside the tree kernel: the whole part in one
                 * launch; with a network, its share of the interval (the events and spike buffer
                 * of sim/cuda/network.c, on the stream that sorted them, for all three kinds of group) */
                ns_sim_fused f = *fused;
                const int with_net = f.net.slots > 0 && s->net;
                if (with_net) ns_sim_fused_net_bind(&f, s->net, s->net_step);
                else f.net.slots = 0;
                const cudaStream_t three[3] = {stream, s->streams[(k + 1) % s->n_streams],
                                               s->streams[(k + 2) % s->n_streams]};
                const cudaStream_t one[3] = {stream, stream, stream};
                NS_CUDA_TRY(ns_sim_launch_tree_fused(&gr->t, &gr->layout, &gr->g, &run, &f, with_net ? one : three));
                if (with_net) s->net_step += part;
            } else if (gr->tree && s->model) {
                /* a model: step by step, the mechanisms' launchers around the tree loop's step
                 * (sim/cuda/step_graph.h), one captured step replayed where the rule allows */
                int graphed = 0;
                ns_status mst = ns_sim_step_graph_part(sim, &s->graph, s->model, s->net != NULL, &gr->t, &gr->layout,
                                                       &gr->g, &run, stream, &graphed);
                if (mst != NS_OK) return mst;
                double tk = t0;
                for (int64_t k1 = 0; !graphed && k1 < part; ++k1) {
                    ns_sim_gpu_run r1 = run;
                    r1.t0 = tk;
                    r1.step0 = step0 + k1;
                    r1.steps = 1;
                    r1.k0 = k1;
                    r1.continued = k1 > 0;
                    r1.preassembled = 1;
                    if ((mst = ns_sim_gpu_step_phases(sim, s->model, s->net, s->net_step, &gr->t, &gr->layout, &gr->g, &r1,
                                                 stream)) != NS_OK)
                        return mst;
                    tk = ns_sim_half_step(ns_sim_half_step(tk, run.dt), run.dt);
                    s->net_step++;
                }
            } else if (gr->tree) {
                const cudaStream_t three[3] = {stream, s->streams[(k + 1) % s->n_streams],
                                               s->streams[(k + 2) % s->n_streams]};
                NS_CUDA_TRY(ns_sim_launch_tree(&gr->t, &gr->layout, &gr->g, &run, three));
            }
            else NS_CUDA_TRY(ns_sim_launch_onchip(&gr->oc.sched, &gr->oc.launch, &gr->g, &run, stream));
        }
        /* the simulation's own streams only (every launch above is on them), not the device */
        for (int k = 0; k < s->n_streams; ++k) NS_CUDA_TRY(cudaStreamSynchronize(s->streams[k]));
        unsigned long long keys[64], key = NS_SIM_FAULT_NONE;
        int32_t key_group = -1;
        for (int32_t k0 = 0; k0 < s->n_groups; k0 += 64) {
            const int32_t cnt = s->n_groups - k0 < 64 ? s->n_groups - k0 : 64;
            NS_CUDA_TRY(cudaMemcpy(keys, s->fault + k0, (size_t)cnt * sizeof *keys, cudaMemcpyDeviceToHost));
            for (int32_t q = 0; q < cnt; ++q) {
                if (keys[q] == NS_SIM_FAULT_NONE) continue;
                /* earliest step first, then the lowest global cell */
                const int64_t c = s->groups[k0 + q].cell_id[keys[q] & 0xFFFFFF];
                if (key == NS_SIM_FAULT_NONE || (keys[q] >> 24) < (key >> 24) ||
                    ((keys[q] >> 24) == (key >> 24) && c < s->groups[key_group].cell_id[key & 0xFFFFFF])) {
                    key = keys[q];
                    key_group = k0 + q;
                }
            }
        }
        if (rows > 0 && sim->n_recs > 0)
            NS_CUDA_TRY(cudaMemcpy(sim->traces + (size_t)first_sample * (size_t)sim->n_recs, s->traces,
                                   (size_t)rows * (size_t)sim->n_recs * sizeof(double), cudaMemcpyDeviceToHost));
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
        if (key != NS_SIM_FAULT_NONE) {
            /* the failed cell stopped at its step: read its state back */
            const int64_t local_step = (int64_t)(key >> 24);
            gpu_group *gr = &s->groups[key_group];
            const int64_t c = gr->cell_id[key & 0xFFFFFF];
            ns_status st = transfer_state(sim, gr, 0);
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

static ns_status gpu_sync(ns_sim_t *sim) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    if (s->host_current) return NS_OK;
    for (int32_t k = 0; k < s->n_groups; ++k) {
        ns_status st = transfer_state(sim, &s->groups[k], 0);
        if (st != NS_OK) return st;
    }
    s->host_current = 1;
    return NS_OK;
}

/* Host copy -> device after ns_sim_set_state (a restored checkpoint). The
 * group streams are blocking streams (cudaStreamCreate), so these copies on
 * the default stream are ordered after any work queued on them and before
 * the next launch; the synchronisation first makes that explicit (every
 * advance already ends with one). */
static ns_status gpu_load(ns_sim_t *sim) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    NS_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy)); /* the legacy stream waits for the blocking group streams */
    for (int32_t k = 0; k < s->n_groups; ++k) {
        ns_status st = transfer_state(sim, &s->groups[k], 1);
        if (st != NS_OK) return st;
    }
    s->host_current = 1;
    return NS_OK;
}

/* The group's map from its state positions to Flat indexes, on first use. */
static ns_status ensure_flat_map(ns_sim_t *sim, gpu_group *gr) {
    if (gr->flat_of) return NS_OK;
    const size_t total = state_size(gr);
    int64_t *map = malloc((total ? total : 1) * sizeof *map);
    if (!map) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: state map");
    for (int64_t j = 0; j < gr->g.cells; ++j) {
        const int64_t o = sim->cell_offset[gr->cell_id[j]];
        const int32_t n = cell_size(sim, gr, j);
        for (int32_t i = 0; i < n; ++i) map[state_index(gr, j, i)] = o + i;
    }
    ns_status st = NS_OK;
    /* on the simulation's stream, then waited for: a cudaMemcpy from pageable
     * memory may return before its DMA lands, and the map is read next on
     * the caller's stream (non-blocking: no implicit order with the legacy
     * stream). Without the wait, read_var and the state parts read a map
     * still being written; on the H100 that showed only with other GPU
     * processes running (test_sim_state) */
    const cudaStream_t q = ((gpu_state *)sim->backend_state)->streams[0];
    cudaError_t e = cudaMalloc((void **)&gr->flat_of, (total ? total : 1) * sizeof *map);
    if (e == cudaSuccess) e = cudaMemcpyAsync(gr->flat_of, map, total * sizeof *map, cudaMemcpyHostToDevice, q);
    if (e == cudaSuccess) e = cudaStreamSynchronize(q);
    if (e != cudaSuccess) {
        cudaFree(gr->flat_of);
        gr->flat_of = NULL;
        st = ns_fail(e == cudaErrorMemoryAllocation ? NS_ERR_DEVICE_MEMORY : NS_ERR_CUDA, "simulation: state map: %s",
                     cudaGetErrorString(e));
    }
    free(map);
    return st;
}

static ns_status gpu_var(ns_sim_t *sim, ns_sim_var var, double *flat, void *stream, int to_flat) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    const char *who = to_flat ? "ns_sim_read_var" : "ns_sim_write_var";
    const cudaStream_t q = (cudaStream_t)stream;
    ns_status st = ns_device_args_pointer(sim->device, who, flat, (size_t)sim->n_comp * sizeof(double), "flat");
    if (st == NS_OK) st = ns_device_args_stream(sim->device, who, q);
    if (st != NS_OK) return st;
    if (!s->external) NS_CUDA_TRY(cudaEventCreateWithFlags(&s->external, cudaEventDisableTiming));
    for (int32_t k = 0; k < s->n_groups; ++k) {
        gpu_group *gr = &s->groups[k];
        if ((st = ensure_flat_map(sim, gr)) != NS_OK) return st;
        (void)var; /* NS_SIM_VAR_V: the one variable of the loop's state (a mechanism's: ns_sim_state_field) */
        NS_CUDA_TRY(ns_sim_launch_state_copy(gr->g.v, gr->flat_of, (int64_t)state_size(gr), flat, to_flat, q));
    }
    NS_CUDA_TRY(cudaEventRecord(s->external, q));
    s->external_pending = 1;
    if (!to_flat) s->host_current = 0;
    return NS_OK;
}

static ns_status gpu_read_var(ns_sim_t *sim, ns_sim_var var, double *flat, void *stream) {
    return gpu_var(sim, var, flat, stream, 1);
}

static ns_status gpu_write_var(ns_sim_t *sim, ns_sim_var var, const double *flat, void *stream) {
    return gpu_var(sim, var, (double *)flat, stream, 0);
}

/* Whether values `io` of a parameter (or an ion's array) of local cell j
 * differ from the group's, where the mechanism is inserted. */
static ns_status parameter_changed(ns_sim_t *sim, const gpu_model *model, const gpu_group *gr, int64_t j,
                                   int32_t mech, int32_t field, int32_t ion, int32_t q, const double *io,
                                   int *changed) {
    const int32_t n = sim->shapes[sim->cell_shape[gr->cell_id[j]]].n;
    double *now = malloc((size_t)n * sizeof *now);
    if (!now) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_set_model_var");
    ns_status st = ns_gpu_model_var(sim, model, gr->cell_id, gr->cell_base, j, mech, field, ion, q, now, 0);
    *changed = 0;
    for (int32_t i = 0; st == NS_OK && i < n && !*changed; ++i) *changed = !isnan(now[i]) && now[i] != io[i];
    free(now);
    return st;
}

/* ns_sim_get_model_var / ns_sim_set_model_var. The fused kernels read copies
 * of the parameters and the ions' e made at create: a write that changes one
 * makes the tree loop's model run per step from now on (as
 * ns_sim_state_field); the onchip kernel has no per-step path, so there it is
 * refused. A write that changes nothing (a checkpoint restored into the
 * simulation it came from) keeps the fused path. */
static ns_status gpu_model_var(ns_sim_t *sim, int64_t cell, int32_t mech, int32_t field, int32_t ion, int32_t q,
                               double *io, int write) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    if (s->external_pending) { /* a caller's stream may still write a field (ns_sim_state_field) */
        NS_CUDA_TRY(cudaEventSynchronize(s->external));
        s->external_pending = 0;
    }
    const int parameter = mech < 0 || field < sim->model->mechs[mech].desc->n_params;
    for (int32_t k = 0; k < s->n_groups; ++k) {
        const gpu_group *gr = &s->groups[k];
        const gpu_model *model = gr->tree ? s->model : gr->model;
        if (!model) continue;
        for (int64_t j = 0; j < gr->g.cells; ++j) {
            if (gr->cell_id[j] != cell) continue;
            int changed = 0;
            ns_status st = NS_OK;
            if (write && parameter) st = parameter_changed(sim, model, gr, j, mech, field, ion, q, io, &changed);
            if (st != NS_OK) return st;
            if (changed && !gr->tree)
                return ns_fail(NS_ERR_UNSUPPORTED,
                               "ns_sim_set_model_var: cell %lld runs onchip, whose kernel reads copies of the "
                               "parameters and ions' e made at create: a state or assigned variable only (method "
                               "'tree' takes new parameters)",
                               (long long)cell);
            if (changed) ns_sim_fused_expose(s->fused);
            return ns_gpu_model_var(sim, model, gr->cell_id, gr->cell_base, j, mech, field, ion, q, io, write);
        }
    }
    return ns_fail(NS_ERR_INTERNAL, "ns_sim_%s_model_var: cell %lld is in no group with the model",
                   write ? "set" : "get", (long long)cell);
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

/* ns_sim_state_part: a part is a shape group, in its kernel's layout
 * (state_index above). */
static int64_t gpu_state_parts(const ns_sim_t *sim) { return ((const gpu_state *)sim->backend_state)->n_groups; }

static ns_status gpu_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    gpu_group *gr = &s->groups[part];
    ns_status st = ensure_flat_map(sim, gr);
    if (st != NS_OK) return st;
    if (!gr->tree && !gr->first) {
        gr->first = malloc((size_t)(gr->g.cells ? gr->g.cells : 1) * sizeof *gr->first);
        if (!gr->first) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_state_part: cell positions");
        for (int64_t j = 0; j < gr->g.cells; ++j) gr->first[j] = j * (int64_t)gr->g.n;
    }
    /* the loop's own work (launches, a model's initialisation) is finished:
     * any stream may touch the arrays from here on */
    for (int k = 0; k < s->n_streams; ++k) NS_CUDA_TRY(cudaStreamSynchronize(s->streams[k]));
    s->host_current = 0; /* the caller may write: the host copy is read again when needed */
    out->v = gr->g.v;
    out->size = (int64_t)state_size(gr);
    out->flat_of = gr->flat_of;
    out->cells = gr->g.cells;
    out->cell = gr->cell_id;
    out->first = gr->tree ? gr->cell_base : gr->first;
    out->stride = 1;
    out->node_pos = gr->onchip ? gr->oc.plan.data + gr->oc.plan.pos_of_node : NULL;
    out->device = sim->device;
    return NS_OK;
}

static ns_status gpu_state_done(ns_sim_t *sim, void *stream) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    const cudaStream_t q = (cudaStream_t)stream;
    ns_status st = ns_device_args_stream(sim->device, "ns_sim_state_done", q);
    if (st != NS_OK) return st;
    if (!s->external) NS_CUDA_TRY(cudaEventCreateWithFlags(&s->external, cudaEventDisableTiming));
    NS_CUDA_TRY(cudaEventRecord(s->external, q));
    s->external_pending = 1;
    s->host_current = 0;
    return NS_OK;
}

/* ns_sim_state_field: a model's arrays are sim/cuda/mechanisms.c's
 * (instances in the group's node positions: the tree group's, or an onchip
 * group's in its position order). */
static ns_status gpu_state_field(ns_sim_t *sim, int64_t part, int32_t mech, int32_t field, int32_t ion, int32_t q,
                                 ns_sim_field *out) {
    gpu_state *s = (gpu_state *)sim->backend_state;
    const gpu_group *gr = &s->groups[part];
    const gpu_model *model = gr->tree ? s->model : gr->model;
    if (!model) return ns_fail(NS_ERR_INTERNAL, "ns_sim_state_field: part %lld holds no model", (long long)part);
    const int parameter = mech < 0 || field < sim->model->mechs[mech].desc->n_params;
    if (!gr->tree && parameter) /* the onchip kernel has no per-step path to fall back to */
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "ns_sim_state_field: part %lld runs onchip, whose kernel reads copies of the parameters and "
                       "ions' e made at create: a state or assigned variable only (method 'tree' hands out "
                       "parameters)",
                       (long long)part);
    for (int k = 0; k < s->n_streams; ++k) NS_CUDA_TRY(cudaStreamSynchronize(s->streams[k]));
    /* a parameter or an ion's array the caller may write: the fused kernel
     * reads copies of them, so the model runs per step from now on */
    if (parameter) ns_sim_fused_expose(s->fused);
    ns_gpu_model_field(model, mech, field, ion, q, &out->data, &out->size, &out->pos);
    out->device = sim->device;
    return NS_OK;
}

const sim_ops *ns_sim_cuda_ops(void) {
    static const sim_ops ops = {"cuda",   gpu_create, gpu_destroy,  gpu_init,      gpu_advance,
                                gpu_sync, gpu_load,   gpu_read_var, gpu_write_var, gpu_model_var,
                                gpu_advance_net, gpu_state_parts, gpu_state_part, gpu_state_done, gpu_state_field};
    return &ops;
}
