/* The on-chip kernel's schedule: runs, their positions, their tree, and
 * which lane of a cell walks which run in each step of the two sweeps.
 * Host code, once per shape and lane count. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/cuda/onchip_plan.h"

/* Node updates a run start is worth when balancing lanes (descriptor and
 * child loads before the first node) [node updates]. */
#define RUN_START_COST 2

void ns_onchip_plan_free(ns_onchip_plan *plan) {
    if (!plan) return;
    free(plan->data);
    memset(plan, 0, sizeof *plan);
}

void ns_onchip_plan_bind(const ns_onchip_plan *plan, const int32_t *base, ns_onchip_sched *out) {
    out->n = plan->n;
    out->lanes = plan->lanes;
    out->n_bwd = plan->n_bwd;
    out->n_fwd = plan->n_fwd;
    out->identity = plan->identity;
    out->core = (int32_t)plan->pos_of_node;
    out->base = base;
    out->bwd_begin = base + plan->bwd_begin;
    out->bwd_desc = base + plan->bwd_desc;
    out->fwd_begin = base + plan->fwd_begin;
    out->fwd_desc = base + plan->fwd_desc;
    out->child_pos = base + plan->child_pos;
    out->pos_of_node = base + plan->pos_of_node;
    out->node_of_pos = base + plan->node_of_pos;
}

/* Runs of one step, sorted by decreasing cost for the greedy assignment. */
typedef struct {
    int32_t run;
    int32_t cost;
} run_cost;

static int by_cost_desc(const void *x, const void *y) {
    const run_cost *a = x, *b = y;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return a->run < b->run ? -1 : a->run > b->run; /* deterministic order */
}

typedef struct {
    int64_t cost;  /* sum over steps of the busiest lane's cost */
    int64_t items; /* sum over steps of the busiest lane's run count */
} path;

/* Fill begin[step * L + lane] and the descriptors (4 entries per item,
 * copied from run_desc) for n_steps steps, where run r belongs to step
 * step_of[r] and costs cost[r]. Scratch: items (n_runs), lane_of (n_runs),
 * step_start (n_steps + 1), order (n_runs), load (2 L). */
static path assign(int32_t n_runs, int32_t n_steps, int32_t L, const int32_t *step_of,
                   const int32_t *cost, const int32_t *run_desc, int32_t *begin, int32_t *desc,
                   run_cost *items, int32_t *lane_of, int32_t *step_start, int32_t *order,
                   int64_t *load) {
    int64_t *count = load + L;
    /* Bucket runs by step (counting sort into `order`). */
    memset(step_start, 0, (size_t)(n_steps + 1) * sizeof *step_start);
    for (int32_t r = 0; r < n_runs; ++r) step_start[step_of[r] + 1]++;
    for (int32_t s = 0; s < n_steps; ++s) step_start[s + 1] += step_start[s];
    for (int32_t r = 0; r < n_runs; ++r) order[step_start[step_of[r]]++] = r;
    for (int32_t s = n_steps; s > 0; --s) step_start[s] = step_start[s - 1];
    step_start[0] = 0;
    path total = {0, 0};
    int32_t q = 0;
    for (int32_t s = 0; s < n_steps; ++s) {
        int32_t m = 0;
        for (int32_t k = step_start[s]; k < step_start[s + 1]; ++k)
            items[m++] = (run_cost){order[k], cost[order[k]]};
        qsort(items, (size_t)m, sizeof *items, by_cost_desc);
        memset(load, 0, 2 * (size_t)L * sizeof *load);
        for (int32_t k = 0; k < m; ++k) {
            int best = 0;
            for (int l = 1; l < L; ++l)
                if (load[l] < load[best]) best = l;
            load[best] += items[k].cost;
            count[best]++;
            lane_of[items[k].run] = best;
        }
        int64_t busiest = 0, most = 0;
        for (int l = 0; l < L; ++l) {
            if (load[l] > busiest) busiest = load[l];
            if (count[l] > most) most = count[l];
            begin[s * L + l] = q;
            for (int32_t k = 0; k < m; ++k)
                if (lane_of[items[k].run] == l) {
                    memcpy(desc + 4 * (size_t)q, run_desc + 4 * (size_t)items[k].run,
                           4 * sizeof *desc);
                    q++;
                }
        }
        total.cost += busiest;
        total.items += most;
    }
    begin[n_steps * L] = q;
    return total;
}

static size_t round4(size_t x) { return (x + 3) & ~(size_t)3; }

ns_status ns_onchip_plan_build(int32_t n, const int32_t *parent, int32_t lanes,
                               ns_onchip_plan *plan) {
    const int32_t L = lanes;
    memset(plan, 0, sizeof *plan);
    if (n <= 0 || !parent) return ns_fail(NS_ERR_INVALID_ARGUMENT, "onchip plan: empty tree");
    if (n > NS_ONCHIP_MAX_N)
        return ns_fail(NS_ERR_UNSUPPORTED, "onchip plan: %d compartments exceed %d", (int)n,
                       NS_ONCHIP_MAX_N);
    if (L < 1 || L > NS_ONCHIP_LANES || (L & (L - 1)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "onchip plan: %d lanes per cell (1, 2, 4, ..., 32)",
                       (int)L);
    ns_status st = NS_OK;
    int32_t *nchild = calloc((size_t)n, sizeof *nchild);
    int32_t *run_of = malloc((size_t)n * sizeof *run_of);
    int32_t *scratch = NULL, *run_desc = NULL;
    int64_t *load = malloc(2 * (size_t)L * sizeof *load);
    if (!nchild || !run_of || !load) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "onchip plan of %d compartments", (int)n);
        goto done;
    }
    for (int32_t i = 1; i < n; ++i) nchild[parent[i]]++;
    /* A node continues its parent's run when it is the parent's only child. */
    int32_t n_runs = 0;
    for (int32_t i = 0; i < n; ++i)
        run_of[i] = (i > 0 && nchild[parent[i]] == 1) ? run_of[parent[i]] : n_runs++;

    /* Scratch: per-run arrays (first node, parent run, depth, height, length,
     * costs x2, child count, lane, start position, cursor) and the sort buffer. */
    scratch = malloc((size_t)n_runs * 11 * sizeof *scratch + (size_t)(n + 2) * sizeof *scratch +
                     (size_t)n_runs * sizeof(run_cost));
    run_desc = malloc((size_t)n_runs * 4 * sizeof *run_desc);
    if (!scratch || !run_desc) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "onchip plan of %d runs", (int)n_runs);
        goto done;
    }
    int32_t *first = scratch, *prun = first + n_runs, *depth = prun + n_runs;
    int32_t *height = depth + n_runs, *len = height + n_runs, *bcost = len + n_runs;
    int32_t *fcost = bcost + n_runs, *nkids = fcost + n_runs, *lane_of = nkids + n_runs;
    int32_t *start = lane_of + n_runs, *cursor = start + n_runs;
    int32_t *step_start = cursor + n_runs;
    run_cost *items = (run_cost *)(step_start + n + 2);

    memset(len, 0, (size_t)n_runs * sizeof *len);
    memset(nkids, 0, (size_t)n_runs * sizeof *nkids);
    memset(height, 0, (size_t)n_runs * sizeof *height);
    for (int32_t i = n - 1; i >= 0; --i) first[run_of[i]] = i; /* smallest node of each run */
    for (int32_t i = 0; i < n; ++i) len[run_of[i]]++;
    int32_t n_fwd = 1;
    for (int32_t r = 0; r < n_runs; ++r) {
        prun[r] = r == 0 ? -1 : run_of[parent[first[r]]]; /* < r: runs numbered by first node */
        depth[r] = r == 0 ? 0 : depth[prun[r]] + 1;
        if (r > 0) nkids[prun[r]]++;
        if (depth[r] + 1 > n_fwd) n_fwd = depth[r] + 1;
    }
    for (int32_t r = n_runs - 1; r > 0; --r)
        if (height[r] + 1 > height[prun[r]]) height[prun[r]] = height[r] + 1;
    const int32_t n_bwd = height[0] + 1;
    for (int32_t r = 0; r < n_runs; ++r) {
        bcost[r] = len[r] + nkids[r] + RUN_START_COST; /* nodes + child runs folded in */
        fcost[r] = len[r] + RUN_START_COST;
    }
    /* Positions: runs in run order, each run's nodes root side first. */
    start[0] = 0;
    for (int32_t r = 1; r < n_runs; ++r) start[r] = start[r - 1] + len[r - 1];

    const size_t counts[7] = {4 * (size_t)n_runs,      4 * (size_t)n_runs, (size_t)n_bwd * L + 1,
                              (size_t)n_fwd * L + 1,    (size_t)n_runs,     (size_t)n,
                              (size_t)n};
    size_t offs[7], total = 0;
    for (int k = 0; k < 7; ++k) {
        offs[k] = total;
        total = round4(total + counts[k]); /* descriptors stay 16-byte aligned */
    }
    plan->data = calloc(total, sizeof *plan->data);
    if (!plan->data) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "onchip plan of %zu entries", total);
        goto done;
    }
    plan->count = total;
    plan->n = n;
    plan->lanes = L;
    plan->n_runs = n_runs;
    plan->n_bwd = n_bwd;
    plan->n_fwd = n_fwd;
    plan->bwd_desc = offs[0];
    plan->fwd_desc = offs[1];
    plan->bwd_begin = offs[2];
    plan->fwd_begin = offs[3];
    plan->child_pos = offs[4];
    plan->pos_of_node = offs[5];
    plan->node_of_pos = offs[6];
    int32_t *d = plan->data;
    int32_t *child_pos = d + offs[4], *pos_of_node = d + offs[5], *node_of_pos = d + offs[6];

    memcpy(cursor, start, (size_t)n_runs * sizeof *cursor);
    plan->identity = 1;
    for (int32_t i = 0; i < n; ++i) { /* increasing i: root side first within a run */
        const int32_t p = cursor[run_of[i]]++;
        pos_of_node[i] = p;
        node_of_pos[p] = i;
        if (p != i) plan->identity = 0;
    }
    /* Child runs grouped by parent run; descriptors. */
    int32_t cb = 0;
    for (int32_t r = 0; r < n_runs; ++r) {
        cursor[r] = cb;
        cb += nkids[r];
    }
    for (int32_t r = 1; r < n_runs; ++r) child_pos[cursor[prun[r]]++] = start[r];
    for (int32_t r = 0; r < n_runs; ++r) {
        int32_t *x = run_desc + 4 * (size_t)r;
        x[0] = start[r];
        x[1] = start[r] + len[r] - 1;
        x[2] = r == 0 ? -1 : pos_of_node[parent[first[r]]];
        x[3] = (int32_t)(((uint32_t)(cursor[r] - nkids[r]) << 16) | (uint32_t)nkids[r]);
    }
    const path bp = assign(n_runs, n_bwd, L, height, bcost, run_desc, d + offs[2], d + offs[0],
                           items, lane_of, step_start, cursor, load);
    const path fp = assign(n_runs, n_fwd, L, depth, fcost, run_desc, d + offs[3], d + offs[1],
                           items, lane_of, step_start, cursor, load);
    plan->bwd_cost = bp.cost;
    plan->bwd_items = bp.items;
    plan->fwd_cost = fp.cost;
    plan->fwd_items = fp.items;
done:
    free(nchild);
    free(run_of);
    free(scratch);
    free(run_desc);
    free(load);
    if (st != NS_OK) ns_onchip_plan_free(plan);
    return st;
}
