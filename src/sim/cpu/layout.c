/* The CPU loop's lane blocks (sim/cpu/layout.h; docs/simulation.md, "CPU
 * loop"): the blocks of each shape's cells and their threads (sim/cpu/policy.h),
 * the node order and the narrow blocks' solve streams, the split cells' cuts,
 * the model's instances per block (mech/blocks.h) and the network's
 * (sim/network_build.c) at finitialize; the host arrays from and into the
 * blocks; a model's variables and the state's parts (ns_sim_state_part). The
 * step's phases that advance them: sim/cpu/step.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "sim/cpu/layout.h"
#include "mech/blocks.h"
#include "sim/policy.h"
#include "core/error.h"

/* The nodes with a membrane (the mechanisms are inserted at nodes with area
 * only) among reg[0 .. n) (regions in array order, -1: a zero-area node) and
 * their runs (maximal sequences of one region): ns_cpu_reorder's facts. */
static void membrane_runs_of(const int8_t *reg, int32_t n, int64_t *nodes, int64_t *runs) {
    *nodes = *runs = 0;
    for (int32_t i = 0; i < n; ++i) {
        const int m = reg[i] >= 0;
        *nodes += m;
        *runs += m && (i == 0 || reg[i - 1] != reg[i]);
    }
}

void *ns_cpu_aligned(size_t bytes) {
    const size_t z = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    return aligned_alloc(ALIGN, z ? z : ALIGN);
}

/* Each node's constant part of d: its capacitance (cm 1e-3/dt, 0 at
 * zero-area nodes), then its axial terms in NEURON's index order, its own
 * (-b[i]) and its children's links (-a[c]); neither depends on v, so the
 * membrane passes add it with the capacitance, and the elimination
 * (eliminate_node) does not carry them in its chain of divisions. */
static void diagonal_constant(const sim_shape *s, double *dc) {
    for (int32_t i = 0; i < s->n; ++i) dc[i] = s->cap[i];
    for (int32_t i = 1; i < s->n; ++i) {
        dc[i] -= s->b[i];
        dc[s->parent[i]] -= s->a[i];
    }
}

static int32_t requested_threads(const ns_sim_t *sim) {
#ifdef NS_HAVE_OPENMP
    if (sim->method == NS_HINES_OPENMP)
        return sim->options.threads > 0 ? sim->options.threads : omp_get_max_threads();
#else
    (void)sim;
#endif
    return 1;
}

void ns_cpu_destroy(ns_sim_t *sim) {
    cpu_state *st = sim->backend_state;
    if (!st) return;
    if (st->shapes)
        for (int32_t k = 0; k < sim->n_shapes; ++k) {
            free(st->shapes[k].pos);
            free(st->shapes[k].ppar);
            free(st->shapes[k].top);
            free(st->shapes[k].order);
            for (int l = 0; l <= LOG2_LANES_MAX; ++l) free(st->shapes[k].cap[l]);
        }
    free(st->shapes);
    for (int64_t b = 0; st->blocks && b < st->n_blocks; ++b) ns_model_block_free(st->blocks[b].mech);
    ns_model_tables_free(st->tables);
    free(st->blocks);
    free(st->thread_begin);
    free(st->order);
    free(st->next);
    free(st->lane_of);
    free(st->split);
    free(st->split_at);
    free(st->split_stopped);
    for (int64_t q = 0; st->split_cut && q < st->n_split; ++q) ns_cpu_cut_free(&st->split_cut[q]);
    free(st->split_cut);
    free(st->split_bad);
    free(st->split_nan);
    free(st->split_spike_top);
    free(st->split_d);
    free(st->split_rhs);
    free(st->store);
    free(st->part_flat);
    free(st->part_base);
    free(st);
    sim->backend_state = NULL;
}

/* How the loop runs a model's mechanisms: the GPU's rule (sim/policy.h,
 * ns_sim_gpu_mechanisms_rule) over the CPU's facts, fused (mech/blocks.c,
 * ns_model_block_fused_*) or per step; at create, and at each advance with
 * the network's synapse types. */
ns_status ns_cpu_mechanisms(ns_sim_t *sim, const cpu_state *st) {
    ns_sim_mech_facts f;
    memset(&f, 0, sizeof f);
    f.requested = (int)sim->options.gpu_mechanisms;
    f.builtin_only = ns_model_fusable(sim->model);
    for (int32_t k = 0; k < sim->model->n_mechs; ++k) f.writes_concentration |= sim->model->mechs[k].writes_c != 0;
    f.network_fused = 1;
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        const net_block *nb = st->blocks[b].net;
        f.network |= nb != NULL;
        for (int32_t t = 0; nb && t < nb->n_points; ++t) f.network_fused &= ns_model_point_fusable(nb->points[t].desc);
    }
    return ns_sim_mechanisms_choose(&f, "the CPU loop's fused pass", &sim->gpu_mechanisms);
}

/* A mechanism that is not thread-safe (ns_mech_desc.thread_unsafe, VERBATIM C with static state)
 * runs on one thread: OpenMP's default thread count becomes 1, an explicit request for more is
 * refused, as NEURON's ParallelContext.nthread refuses it (docs/mechanisms.md, "VERBATIM") */
static ns_status thread_unsafe(const ns_sim_t *sim, const ns_mech_desc *d, int32_t threads) {
    if (threads <= 1 || d->abi_version < 5 || !d->thread_unsafe) return NS_OK;
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "%s: mechanism %s is not thread safe, and the simulation asks for %d threads: run it with one "
                   "thread (threads = 1%s)",
                   d->thread_unsafe, d->name, (int)threads,
                   sim->options.threads > 1 ? "" : "; OpenMP's default was more");
}

/* The node order of each shape whose cells are not split (ns_cpu_reorder: its membrane nodes region
 * by region, then its zero-area nodes, each in node order). 0, or -1 when out of memory. */
static int node_orders(const ns_sim_t *sim, cpu_state *st, int split_ok, int32_t requested) {
    const int32_t ns = sim->n_shapes;
    for (int32_t k = 0; k < ns; ++k) {
        const sim_shape *s = &sim->shapes[k];
        cpu_shape *cs = &st->shapes[k];
        int64_t m_nodes, m_runs;
        membrane_runs_of(s->region, s->n, &m_nodes, &m_runs);
        const int split = split_ok && ns_cpu_split(s->n, sim->n_comp, requested);
        if (!split && ns_cpu_reorder(m_nodes, m_runs)) {
            cs->pos = malloc((size_t)s->n * sizeof *cs->pos);
            cs->ppar = malloc((size_t)s->n * sizeof *cs->ppar);
            if (!cs->pos || !cs->ppar) return -1;
            int32_t next[INT8_MAX + 3] = {0}; /* start of each key: regions, zero-area nodes (-1) as INT8_MAX + 1 */
            for (int32_t i = 0; i < s->n; ++i) next[(s->region[i] < 0 ? INT8_MAX + 1 : s->region[i]) + 1]++;
            for (int r = 1; r <= INT8_MAX + 1; ++r) next[r] += next[r - 1];
            for (int32_t i = 0; i < s->n; ++i) cs->pos[i] = next[s->region[i] < 0 ? INT8_MAX + 1 : s->region[i]]++;
            cs->ppar[0] = 0;
            for (int32_t i = 1; i < s->n; ++i) cs->ppar[i] = cs->pos[s->parent[i]];
        }
    }
    return 0;
}

/* The solve's streams of cut subtrees and its top, for the shapes with a block of at most
 * SOLVE_STREAMS_W_MAX lanes (solve_lanes). 0, or -1 when out of memory. */
static int solve_streams(const ns_sim_t *sim, cpu_state *st) {
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        const sim_shape *s = &sim->shapes[st->blocks[b].shape];
        cpu_shape *cs = &st->shapes[st->blocks[b].shape];
        if (st->blocks[b].w > SOLVE_STREAMS_W_MAX || cs->order) continue;
        ns_cpu_cut cut;
        if (ns_cpu_cut_make(s->n, s->parent, SOLVE_STREAMS, 2, &cut) != 0) return -1;
        int32_t longest = 0;
        for (int32_t t = 0; t < SOLVE_STREAMS; ++t) {
            int32_t len = 0;
            for (int32_t c = cut.cut_first[t]; c < cut.cut_first[t + 1]; ++c) len += cut.end[c] - cut.root[c] - 1;
            if (len > longest) longest = len;
        }
        cs->n_order = longest * SOLVE_STREAMS;
        cs->order = malloc(((size_t)cs->n_order + 1) * sizeof *cs->order);
        cs->top = cut.top;
        cs->n_top = cut.n_top;
        cut.top = NULL;
        for (int32_t k = 0; cs->order && k < cs->n_order; ++k) cs->order[k] = (solve_entry){-1, 0, 0.0, 0.0};
        for (int32_t t = 0; cs->order && t < SOLVE_STREAMS; ++t) {
            int32_t len = 0;
            for (int32_t c = cut.cut_first[t]; c < cut.cut_first[t + 1]; ++c)
                for (int32_t i = cut.end[c] - 1; i > cut.root[c]; --i)
                    cs->order[len++ * SOLVE_STREAMS + t] =
                        (solve_entry){pos_of(cs->pos, i), cs->ppar ? cs->ppar[i] : s->parent[i], s->a[i], s->b[i]};
        }
        ns_cpu_cut_free(&cut);
        if (!cs->order) return -1;
    }
    return 0;
}

/* The blocks' state storage, and the shapes' capacitance at the widths used. 0, or -1 when out of
 * memory. */
static int block_storage(const ns_sim_t *sim, cpu_state *st) {
    int64_t total = 0;
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        const cpu_block *blk = &st->blocks[b];
        const int64_t nw = (int64_t)sim->shapes[blk->shape].n * blk->w;
        const int64_t padded = (nw + ALIGN / 8 - 1) / (ALIGN / 8) * (ALIGN / 8);
        total += padded;
        if (nw > st->max_nw) st->max_nw = nw;
        cpu_shape *cs = &st->shapes[blk->shape];
        const int l = log2w(blk->w);
        if (!cs->cap[l]) {
            cs->cap[l] = ns_cpu_aligned((size_t)nw * sizeof(double));
            if (!cs->cap[l]) return -1;
            const sim_shape *s = &sim->shapes[blk->shape];
            double *dc = malloc((size_t)s->n * sizeof *dc);
            if (!dc) return -1;
            diagonal_constant(s, dc);
            for (int32_t i = 0; i < s->n; ++i)
                for (int32_t j = 0; j < blk->w; ++j) cs->cap[l][(int64_t)pos_of(cs->pos, i) * blk->w + j] = dc[i];
            free(dc);
        }
    }
    st->store = ns_cpu_aligned((size_t)total * sizeof(double));
    if (!st->store) return -1;
    {
        double *p = st->store;
        for (int64_t b = 0; b < st->n_blocks; ++b) {
            cpu_block *blk = &st->blocks[b];
            const int64_t nw = (int64_t)sim->shapes[blk->shape].n * blk->w;
            const int64_t padded = (nw + ALIGN / 8 - 1) / (ALIGN / 8) * (ALIGN / 8);
            blk->v = p;
            p += padded;
        }
    }
    return 0;
}

/* The cells split across the threads (sim/cpu/policy.h; split_ok: ns_cpu_create), then the threads
 * and the other blocks' owners. 0, or -1 when out of memory. */
static int thread_plan(const ns_sim_t *sim, cpu_state *st, int split_ok, int32_t requested) {
    int64_t split_total = 0;
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        const int32_t n = sim->shapes[blk->shape].n;
        blk->split = split_ok && ns_cpu_split(n, sim->n_comp, requested);
        if (blk->split) {
            st->n_split++;
            split_total += (int64_t)n * blk->w;
        }
    }
    st->threads = st->n_split > 0 ? requested : ns_cpu_threads(requested, st->n_blocks);
    {
        const int64_t rest = st->n_blocks - st->n_split;
        /* weight is reused below as one fill position per thread: a split
         * cell runs on `requested` threads, which can exceed the blocks */
        const int64_t wlen = (st->n_blocks > st->threads ? st->n_blocks : st->threads) + 1;
        int64_t *weight = malloc((size_t)wlen * sizeof *weight);
        int64_t *index = malloc((size_t)(st->n_blocks + 1) * sizeof *index);
        int32_t *owner = malloc((size_t)(st->n_blocks + 1) * sizeof *owner);
        int64_t *placed = malloc((size_t)(st->n_blocks + 1) * sizeof *placed);
        st->thread_begin = calloc((size_t)st->threads + 1, sizeof *st->thread_begin);
        st->order = malloc((size_t)(st->n_blocks + 1) * sizeof *st->order);
        st->next = ns_cpu_aligned((size_t)st->threads * sizeof *st->next);
        st->split = malloc((size_t)(st->n_split + 1) * sizeof *st->split);
        st->split_at = malloc((size_t)(st->n_split + 1) * sizeof *st->split_at);
        st->split_stopped = calloc((size_t)(st->n_split + 1), sizeof *st->split_stopped);
        st->split_cut = calloc((size_t)(st->n_split + 1), sizeof *st->split_cut);
        st->split_bad = calloc((size_t)(st->n_split + 1), sizeof *st->split_bad);
        st->split_nan = calloc((size_t)(st->n_split + 1), sizeof *st->split_nan);
        st->split_spike_top = calloc((size_t)(st->n_split + 1), sizeof *st->split_spike_top);
        st->split_d = ns_cpu_aligned((size_t)split_total * sizeof(double));
        st->split_rhs = ns_cpu_aligned((size_t)split_total * sizeof(double));
        int64_t *load0 = calloc((size_t)st->threads, sizeof *load0);
        int ok = weight && index && owner && placed && st->thread_begin && st->order && st->next && st->split && st->split_at &&
                 st->split_stopped && st->split_cut && st->split_bad && st->split_nan && st->split_spike_top &&
                 st->split_d && st->split_rhs && load0;
        if (ok) {
            int64_t q = 0, p = 0;
            for (int64_t b = 0; ok && b < st->n_blocks; ++b) {
                const cpu_block *blk = &st->blocks[b];
                const sim_shape *sh = &sim->shapes[blk->shape];
                if (blk->split) {
                    const cpu_block *prev = p > 0 ? &st->blocks[st->split[p - 1]] : NULL;
                    st->split_at[p] = prev ? st->split_at[p - 1] + (int64_t)sim->shapes[prev->shape].n * prev->w : 0;
                    ok = ns_cpu_cut_make(sh->n, sh->parent, st->threads, NS_CPU_SPLIT_PIECES, &st->split_cut[p]) == 0;
                    /* thread p solves the block's top while the others advance
                     * their blocks: about a third of a compartment-step per entry */
                    if (ok) load0[p] = (int64_t)st->split_cut[p].n_top * blk->w / 3;
                    for (int32_t e = 0; ok && e < st->split_cut[p].n_top; ++e)
                        if (st->split_cut[p].top[e] == sh->spike_node) st->split_spike_top[p] = 1;
                    atomic_init(&st->split_bad[p], 0);
                    atomic_init(&st->split_nan[p], 0);
                    st->split[p++] = b;
                    continue;
                }
                index[q] = b;
                weight[q++] = (int64_t)sh->n * blk->w;
            }
            /* the other blocks over every thread, those solving a top
             * starting with its work (n_split < threads: a split cell has
             * more than 1/threads of the compartments) */
            ok = ok && ns_cpu_partition(rest, weight, st->threads, st->n_split ? load0 : NULL, owner, placed) >= 0;
        }
        free(load0);
        if (ok) {
            for (int64_t q = 0; q < rest; ++q) st->thread_begin[owner[q] + 1]++;
            for (int32_t t = 0; t < st->threads; ++t) st->thread_begin[t + 1] += st->thread_begin[t];
            int64_t *at = weight; /* reused as fill positions */
            for (int32_t t = 0; t < st->threads; ++t) at[t] = st->thread_begin[t];
            /* each thread's blocks in the order they were placed, longest
             * first, so that its list ends with its shortest blocks, the ones
             * other threads take */
            for (int64_t k = 0; k < rest; ++k) st->order[at[owner[placed[k]]]++] = index[placed[k]];
            for (int32_t t = 0; t < st->threads; ++t) atomic_init(&st->next[t].q, st->thread_begin[t]);
        }
        free(weight);
        free(index);
        free(owner);
        free(placed);
        return ok ? 0 : -1;
    }
}

ns_status ns_cpu_create(ns_sim_t *sim) {
    cpu_state *st = calloc(1, sizeof *st);
    if (!st) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: CPU layout");
    sim->backend_state = st;
    const int32_t ns = sim->n_shapes;
    const int64_t nc = sim->n_cells;
    int32_t requested = requested_threads(sim);
    for (int32_t k = 0; sim->model && k < sim->model->n_mechs; ++k) {
        const ns_mech_desc *d = sim->model->mechs[k].desc;
        if (d->abi_version >= 5 && d->thread_unsafe && sim->options.threads <= 0) requested = 1;
        const ns_status e = thread_unsafe(sim, d, requested);
        if (e != NS_OK) return e;
    }
    st->shapes = calloc((size_t)ns, sizeof *st->shapes);
    int64_t *count = calloc((size_t)ns, sizeof *count);
    int32_t *wmax = malloc((size_t)ns * sizeof *wmax);
    st->lane_of = malloc((size_t)nc * sizeof *st->lane_of);
    if (!st->shapes || !count || !wmax || !st->lane_of) goto oom;
    for (int64_t c = 0; c < nc; ++c) count[sim->cell_shape[c]]++;
    /* a cell split across the threads runs the built-in pas and hh fused into the split passes over
     * each thread's node range (ns_model_block_fused_range); other models, and a network, run its
     * block whole on one thread at each step (cpu_steps) */
    const int split_ok = ns_model_fusable(sim->model) && sim->options.gpu_mechanisms != NS_SIM_GPU_MECHANISMS_PER_STEP &&
                         sim->options.gpu_mechanisms != NS_SIM_GPU_MECHANISMS_PER_MECHANISM;
    if (node_orders(sim, st, split_ok, requested) != 0) goto oom;
    /* blocks: the widest width per shape, then the cells in ascending order */
    for (int32_t k = 0; k < ns; ++k) {
        /* a shape whose cells are split across the threads goes in the
         * widest blocks its count allows: the split passes then vectorise
         * across the lanes, and one solve serves the block's cells (the
         * same chain of divisions, w lanes wide) */
        wmax[k] = split_ok && ns_cpu_split(sim->shapes[k].n, sim->n_comp, requested)
                      ? NS_CPU_LANES_MAX
                      : ns_cpu_lane_width(sim->shapes[k].n, sim->n_comp, requested);
        st->n_blocks += ns_cpu_blocks(count[k], wmax[k], NULL);
    }
    st->blocks = calloc((size_t)st->n_blocks, sizeof *st->blocks);
    if (!st->blocks) goto oom;
    {
        int32_t widths[64];
        int64_t b = 0;
        int64_t *next = calloc((size_t)ns, sizeof *next); /* first block of each shape */
        int64_t *fill = calloc((size_t)st->n_blocks, sizeof *fill);
        if (!next || !fill) {
            free(next);
            free(fill);
            goto oom;
        }
        for (int32_t k = 0; k < ns; ++k) {
            next[k] = b;
            int64_t full = count[k] / wmax[k];
            for (int64_t q = 0; q < full; ++q, ++b) {
                st->blocks[b].shape = k;
                st->blocks[b].w = wmax[k];
            }
            const int64_t rest = ns_cpu_blocks(count[k] - full * wmax[k], wmax[k], widths);
            for (int64_t q = 0; q < rest; ++q, ++b) {
                st->blocks[b].shape = k;
                st->blocks[b].w = widths[q];
            }
        }
        for (int64_t c = 0; c < nc; ++c) {
            const int32_t k = sim->cell_shape[c];
            int64_t q = next[k];
            cpu_block *blk = &st->blocks[q];
            blk->cell[fill[q]] = c;
            st->lane_of[c] = q * NS_CPU_LANES_MAX + fill[q];
            if (++fill[q] == blk->w) next[k]++;
        }
        free(next);
        free(fill);
    }
    if (solve_streams(sim, st) != 0 || block_storage(sim, st) != 0) goto oom;
    /* a model's mechanism instances per block, its TABLEs one copy for all */
    ns_status made = ns_model_tables_create(sim->model, &st->tables);
    for (int64_t b = 0; made == NS_OK && b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        made = ns_model_block_create(sim->model, st->tables, blk->shape, sim->shapes[blk->shape].n, blk->w,
                                     st->shapes[blk->shape].pos, &blk->mech);
    }
    if (made != NS_OK) {
        free(count);
        free(wmax);
        return made;
    }
    if (thread_plan(sim, st, split_ok, requested) != 0) goto oom;
    free(count);
    free(wmax);
    return ns_cpu_mechanisms(sim, st);
oom:
    free(count);
    free(wmax);
    return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: CPU layout of %lld cells", (long long)nc);
}

/* The host arrays' initial state (sim.c), into the lane blocks. */
ns_status ns_cpu_init(ns_sim_t *sim) {
    ns_status e = ns_cpu_load_state(sim);
    cpu_state *st = sim->backend_state;
    net_block_in *in = malloc((size_t)(st->n_blocks > 0 ? st->n_blocks : 1) * sizeof *in);
    if (!in) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: %lld blocks", (long long)st->n_blocks);
    for (int64_t b = 0; b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        in[b] = (net_block_in){blk->shape, blk->w, blk->cell, blk->mech, blk->v, st->shapes[blk->shape].pos};
    }
    /* the density mechanisms' POINTERs, which their INITIAL may read */
    if (e == NS_OK) e = ns_net_density_pointers(sim, st->n_blocks, in);
    if (e == NS_OK) e = ns_model_tables_update(sim->model, st->tables, sim->params.celsius);
    for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b) {
        cpu_block *blk = &st->blocks[b];
        ns_model_block_init(sim->model, blk->mech, blk->shape, sim->shapes[blk->shape].n, blk->w,
                            st->shapes[blk->shape].pos, blk->cell, blk->v, sim->params.dt, sim->params.celsius);
    }
    /* the network's instances per block (sim/network_build.c), after the density
     * mechanisms' INITIAL, as NEURON's type order has them after pas */
    for (int64_t b = 0; b < st->n_blocks; ++b) st->blocks[b].net = NULL;
    if (e == NS_OK && sim->net) {
        e = ns_net_build(sim, st->n_blocks, in);
        for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b) st->blocks[b].net = sim->net->blocks[b];
    }
    free(in);
    for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b) /* the synapse types: known from here */
        for (int32_t k = 0; e == NS_OK && st->blocks[b].net && k < st->blocks[b].net->n_points; ++k)
            e = thread_unsafe(sim, st->blocks[b].net->points[k].desc, st->threads);
    /* a mechanism's error in CONSTRUCTOR, INITIAL or the hooks of finitialize: the first block's */
    for (int64_t b = 0; e == NS_OK && b < st->n_blocks; ++b)
        if (st->blocks[b].mech && ns_model_block_error(st->blocks[b].mech)->set)
            e = ns_sim_mech_error(ns_model_block_error(st->blocks[b].mech), 0.0, -1);
    return e;
}

ns_status ns_cpu_sync_state(ns_sim_t *sim) {
    cpu_state *st = sim->backend_state;
    for (int64_t c = 0; c < sim->n_cells; ++c) {
        const cpu_block *blk = &st->blocks[st->lane_of[c] / NS_CPU_LANES_MAX];
        const int32_t j = (int32_t)(st->lane_of[c] % NS_CPU_LANES_MAX), w = blk->w;
        const int64_t o = sim->cell_offset[c];
        const int32_t n = sim->shapes[blk->shape].n, *pos = st->shapes[blk->shape].pos;
        for (int32_t i = 0; i < n; ++i) {
            const int64_t k = (int64_t)pos_of(pos, i) * w + j;
            sim->v[o + i] = blk->v[k];
        }
    }
    return NS_OK;
}

/* The host arrays into the lane blocks: the inverse of ns_cpu_sync_state, for
 * a state set through ns_sim_set_state or a checkpoint (sim.c). */
ns_status ns_cpu_load_state(ns_sim_t *sim) {
    cpu_state *st = sim->backend_state;
    for (int64_t c = 0; c < sim->n_cells; ++c) {
        cpu_block *blk = &st->blocks[st->lane_of[c] / NS_CPU_LANES_MAX];
        const int32_t j = (int32_t)(st->lane_of[c] % NS_CPU_LANES_MAX), w = blk->w;
        const int64_t o = sim->cell_offset[c];
        const int32_t n = sim->shapes[blk->shape].n, *pos = st->shapes[blk->shape].pos;
        for (int32_t i = 0; i < n; ++i) {
            const int64_t k = (int64_t)pos_of(pos, i) * w + j;
            blk->v[k] = sim->v[o + i];
        }
    }
    return NS_OK;
}

/* A model's variable of one cell in its lane block, read or written. */
ns_status ns_cpu_model_var(ns_sim_t *sim, int64_t cell, int32_t mech, int32_t field, int32_t ion, int32_t q,
                        double *io, int write) {
    const cpu_state *st = sim->backend_state;
    const cpu_block *blk = &st->blocks[st->lane_of[cell] / NS_CPU_LANES_MAX];
    const int32_t lane = (int32_t)(st->lane_of[cell] % NS_CPU_LANES_MAX), w = blk->w;
    const int32_t n = sim->shapes[blk->shape].n;
    /* a parameter or an ion's value written: the fused pass reloads it per node from now on */
    if (write && (mech < 0 || field < sim->model->mechs[mech].desc->n_params)) ns_model_block_expose(blk->mech);
    if (mech < 0) {
        double *x = (double *)ns_model_block_ion(blk->mech, ion, q);
        const int32_t *pos = st->shapes[blk->shape].pos;
        for (int32_t i = 0; i < n; ++i) {
            double *at = &x[(int64_t)pos_of(pos, i) * w + lane];
            if (write) *at = io[i];
            else io[i] = *at;
        }
        return NS_OK;
    }
    const sim_mech_shape *ms = &sim->model->per_shape[(size_t)blk->shape * sim->model->n_mechs + mech];
    double *x = (double *)ns_model_block_field(blk->mech, mech, field);
    if (!write)
        for (int32_t i = 0; i < n; ++i) io[i] = NAN;
    for (int32_t k = 0; k < ms->n; ++k) {
        const int64_t at = (int64_t)ns_model_block_slot(blk->mech, mech, k) * w + lane;
        if (write) x[at] = io[ms->node[k]];
        else io[ms->node[k]] = x[at];
    }
    return NS_OK;
}

/* ns_sim_state_part: a part is a lane block, v[node * w + lane] (the
 * blocks' arrays themselves; the host copy is refreshed from them whenever
 * it is read, so writes need no notice). */
int64_t ns_cpu_state_parts(const ns_sim_t *sim) {
    return ((const cpu_state *)sim->backend_state)->n_blocks;
}

ns_status ns_cpu_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out) {
    static const int64_t lane[NS_CPU_LANES_MAX] = {0, 1, 2, 3, 4, 5, 6, 7};
    cpu_state *st = sim->backend_state;
    if (!st->part_flat) {
        int64_t *base = malloc((size_t)(st->n_blocks + 1) * sizeof *base);
        int64_t *flat = malloc((size_t)(sim->n_comp ? sim->n_comp : 1) * sizeof *flat);
        if (!base || !flat) {
            free(base), free(flat);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_state_part: map of %lld compartments",
                           (long long)sim->n_comp);
        }
        base[0] = 0;
        for (int64_t b = 0; b < st->n_blocks; ++b) {
            const cpu_block *blk = &st->blocks[b];
            const int32_t n = sim->shapes[blk->shape].n, w = blk->w, *pos = st->shapes[blk->shape].pos;
            for (int32_t j = 0; j < w; ++j)
                for (int32_t i = 0; i < n; ++i)
                    flat[base[b] + (int64_t)pos_of(pos, i) * w + j] = sim->cell_offset[blk->cell[j]] + i;
            base[b + 1] = base[b] + (int64_t)n * w;
        }
        st->part_flat = flat;
        st->part_base = base;
    }
    cpu_block *blk = &st->blocks[part];
    out->v = blk->v;
    out->size = st->part_base[part + 1] - st->part_base[part];
    out->flat_of = st->part_flat + st->part_base[part];
    out->cells = blk->w;
    out->cell = blk->cell;
    out->first = lane;
    out->stride = blk->w;
    out->node_pos = st->shapes[blk->shape].pos;
    out->device = -1;
    return NS_OK;
}

/* ns_sim_state_field: the block's arrays of the model (mech/blocks.c): a
 * mechanism's field over its instances (node_index: their lane-nodes, the
 * block's positions), an ion's array over the lane-nodes. */
ns_status ns_cpu_state_field(ns_sim_t *sim, int64_t part, int32_t mech, int32_t field, int32_t ion, int32_t q,
                          ns_sim_field *out) {
    cpu_state *st = sim->backend_state;
    cpu_block *blk = &st->blocks[part];
    const int64_t nw = (int64_t)sim->shapes[blk->shape].n * blk->w;
    out->device = -1;
    if (mech < 0) {
        ns_model_block_expose(blk->mech); /* an e written there is used from the next step */
        out->data = ns_model_block_ion_data(blk->mech, ion) + (size_t)q * (size_t)nw;
        out->size = nw;
        out->pos = NULL;
        return NS_OK;
    }
    ns_model_block_expose(blk->mech); /* a parameter written there is used from the next step */
    out->data = (double *)ns_model_block_field(blk->mech, mech, field);
    out->size = ns_model_block_instances(blk->mech, mech);
    out->pos = (const int32_t *)ns_model_block_node_index(blk->mech, mech);
    return NS_OK;
}
