/* The on-chip kernel's schedule: runs, their tree, and which lane walks
 * which run in each step of the two sweeps. Host code, once per shape. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/cuda/onchip_plan.h"

void ns_onchip_plan_free(ns_onchip_plan *plan) {
    if (!plan) return;
    free(plan->data);
    memset(plan, 0, sizeof *plan);
}

void ns_onchip_plan_bind(const ns_onchip_plan *plan, const int32_t *base, ns_onchip_sched *out) {
    out->n = plan->n;
    out->n_runs = plan->n_runs;
    out->n_bwd = plan->n_bwd;
    out->n_fwd = plan->n_fwd;
    out->run_nodes = base + plan->run_nodes;
    out->run_begin = base + plan->run_begin;
    out->run_parent = base + plan->run_parent;
    out->child_begin = base + plan->child_begin;
    out->child_first = base + plan->child_first;
    out->bwd_begin = base + plan->bwd_begin;
    out->bwd_runs = base + plan->bwd_runs;
    out->fwd_begin = base + plan->fwd_begin;
    out->fwd_runs = base + plan->fwd_runs;
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

/* Fill begin[step * 32 + lane] / runs for n_steps steps, where run r belongs
 * to step step_of[r] and costs cost[r]; returns the sum over steps of the
 * busiest lane's cost. `items` is scratch of n_runs entries. */
static int64_t assign(int32_t n_runs, int32_t n_steps, const int32_t *step_of, const int32_t *cost,
                      int32_t *begin, int32_t *runs, run_cost *items, int32_t *lane_of,
                      int32_t *step_start, int32_t *order) {
    enum { L = NS_ONCHIP_LANES };
    /* Bucket runs by step (counting sort into `order`). */
    memset(step_start, 0, (size_t)(n_steps + 1) * sizeof *step_start);
    for (int32_t r = 0; r < n_runs; ++r) step_start[step_of[r] + 1]++;
    for (int32_t s = 0; s < n_steps; ++s) step_start[s + 1] += step_start[s];
    for (int32_t r = 0; r < n_runs; ++r) order[step_start[step_of[r]]++] = r;
    for (int32_t s = n_steps; s > 0; --s) step_start[s] = step_start[s - 1];
    step_start[0] = 0;
    int64_t total = 0;
    int32_t q = 0;
    for (int32_t s = 0; s < n_steps; ++s) {
        int32_t m = 0;
        for (int32_t k = step_start[s]; k < step_start[s + 1]; ++k)
            items[m++] = (run_cost){order[k], cost[order[k]]};
        qsort(items, (size_t)m, sizeof *items, by_cost_desc);
        int64_t load[L] = {0};
        for (int32_t k = 0; k < m; ++k) {
            int best = 0;
            for (int l = 1; l < L; ++l)
                if (load[l] < load[best]) best = l;
            load[best] += items[k].cost;
            lane_of[items[k].run] = best;
        }
        int64_t busiest = 0;
        for (int l = 0; l < L; ++l) {
            if (load[l] > busiest) busiest = load[l];
            begin[s * L + l] = q;
            for (int32_t k = 0; k < m; ++k)
                if (lane_of[items[k].run] == l) runs[q++] = items[k].run;
        }
        total += busiest;
    }
    begin[n_steps * L] = q;
    return total;
}

ns_status ns_onchip_plan_build(int32_t n, const int32_t *parent, ns_onchip_plan *plan) {
    enum { L = NS_ONCHIP_LANES };
    memset(plan, 0, sizeof *plan);
    if (n <= 0 || !parent) return ns_fail(NS_ERR_INVALID_ARGUMENT, "onchip plan: empty tree");
    ns_status st = NS_OK;
    int32_t *nchild = calloc((size_t)n, sizeof *nchild);
    int32_t *run_of = malloc((size_t)n * sizeof *run_of);
    int32_t *scratch = NULL;
    if (!nchild || !run_of) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "onchip plan of %d compartments", (int)n);
        goto done;
    }
    for (int32_t i = 1; i < n; ++i) nchild[parent[i]]++;
    /* A node continues its parent's run when it is the parent's only child. */
    int32_t n_runs = 0;
    for (int32_t i = 0; i < n; ++i)
        run_of[i] = (i > 0 && nchild[parent[i]] == 1) ? run_of[parent[i]] : n_runs++;

    /* Scratch: per-run arrays (len, parent run, depth, height, costs x2,
     * step of x2, lane, step starts) and the sort buffer. */
    scratch = malloc((size_t)n_runs * 9 * sizeof *scratch + (size_t)(n + 2) * sizeof *scratch +
                     (size_t)n_runs * sizeof(run_cost));
    if (!scratch) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "onchip plan of %d runs", (int)n_runs);
        goto done;
    }
    int32_t *first = scratch, *prun = first + n_runs, *depth = prun + n_runs;
    int32_t *height = depth + n_runs, *bcost = height + n_runs, *fcost = bcost + n_runs;
    int32_t *nkids = fcost + n_runs, *lane_of = nkids + n_runs, *tmp = lane_of + n_runs;
    int32_t *step_start = tmp + n_runs;
    run_cost *items = (run_cost *)(step_start + n + 2);

    memset(fcost, 0, (size_t)n_runs * sizeof *fcost);
    memset(nkids, 0, (size_t)n_runs * sizeof *nkids);
    memset(height, 0, (size_t)n_runs * sizeof *height);
    for (int32_t i = n - 1; i >= 0; --i) first[run_of[i]] = i; /* smallest node of each run */
    for (int32_t i = 0; i < n; ++i) fcost[run_of[i]]++;         /* run lengths */
    int32_t n_bwd = 1, n_fwd = 1;
    for (int32_t r = 0; r < n_runs; ++r) {
        prun[r] = r == 0 ? -1 : run_of[parent[first[r]]]; /* < r: runs numbered by first node */
        depth[r] = r == 0 ? 0 : depth[prun[r]] + 1;
        if (r > 0) nkids[prun[r]]++;
        if (depth[r] + 1 > n_fwd) n_fwd = depth[r] + 1;
    }
    for (int32_t r = n_runs - 1; r > 0; --r)
        if (height[r] + 1 > height[prun[r]]) height[prun[r]] = height[r] + 1;
    n_bwd = height[0] + 1;
    /* Backward work of a run: its nodes plus the child runs it folds in. */
    for (int32_t r = 0; r < n_runs; ++r) bcost[r] = fcost[r] + nkids[r];

    const size_t counts[9] = {(size_t)n,          (size_t)n_runs + 1,         (size_t)n_runs,
                              (size_t)n_runs + 1, (size_t)n_runs,             (size_t)n_bwd * L + 1,
                              (size_t)n_runs,     (size_t)n_fwd * L + 1,      (size_t)n_runs};
    size_t offs[9], total = 0;
    for (int k = 0; k < 9; ++k) {
        offs[k] = total;
        total += counts[k];
    }
    plan->data = malloc(total * sizeof *plan->data);
    if (!plan->data) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "onchip plan of %zu entries", total);
        goto done;
    }
    plan->count = total;
    plan->n = n;
    plan->n_runs = n_runs;
    plan->n_bwd = n_bwd;
    plan->n_fwd = n_fwd;
    plan->run_nodes = offs[0];
    plan->run_begin = offs[1];
    plan->run_parent = offs[2];
    plan->child_begin = offs[3];
    plan->child_first = offs[4];
    plan->bwd_begin = offs[5];
    plan->bwd_runs = offs[6];
    plan->fwd_begin = offs[7];
    plan->fwd_runs = offs[8];
    int32_t *d = plan->data;
    int32_t *run_nodes = d + offs[0], *run_begin = d + offs[1], *run_parent = d + offs[2];
    int32_t *child_begin = d + offs[3], *child_first = d + offs[4];

    /* Runs' nodes, root side first (nodes increase along a run). */
    run_begin[0] = 0;
    for (int32_t r = 0; r < n_runs; ++r) run_begin[r + 1] = run_begin[r] + fcost[r];
    for (int32_t r = 0; r < n_runs; ++r) tmp[r] = run_begin[r];
    for (int32_t i = 0; i < n; ++i) run_nodes[tmp[run_of[i]]++] = i;
    for (int32_t r = 0; r < n_runs; ++r) run_parent[r] = r == 0 ? -1 : parent[first[r]];
    /* Child runs grouped by parent run. */
    child_begin[0] = 0;
    for (int32_t r = 0; r < n_runs; ++r) child_begin[r + 1] = child_begin[r] + nkids[r];
    for (int32_t r = 0; r < n_runs; ++r) tmp[r] = child_begin[r];
    for (int32_t r = 1; r < n_runs; ++r) child_first[tmp[prun[r]]++] = first[r];

    plan->bwd_cost = assign(n_runs, n_bwd, height, bcost, d + offs[5], d + offs[6], items, lane_of,
                            step_start, tmp);
    plan->fwd_cost = assign(n_runs, n_fwd, depth, fcost, d + offs[7], d + offs[8], items, lane_of,
                            step_start, tmp);
done:
    free(nchild);
    free(run_of);
    free(scratch);
    if (st != NS_OK) ns_onchip_plan_free(plan);
    return st;
}
