/* Private: the on-chip kernel's schedule for one shape, built on the host
 * once per solver (docs/methods.md, "onchip"). */
#ifndef NS_HINES_CUDA_ONCHIP_PLAN_H
#define NS_HINES_CUDA_ONCHIP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "hines/cuda/hines_kernels.h"
#include "neurosolve/status.h"

typedef struct ns_onchip_plan {
    int32_t *data;       /* every array of ns_onchip_sched, packed */
    size_t count;        /* int32 entries in data */
    int32_t n, n_runs, n_bwd, n_fwd;
    /* where each array of ns_onchip_sched starts in data [entries] */
    size_t run_nodes, run_begin, run_parent, child_begin, child_first;
    size_t bwd_begin, bwd_runs, fwd_begin, fwd_runs;
    int64_t bwd_cost;    /* critical path of the backward sweep [node updates]:
                            sum over steps of the busiest lane's work */
    int64_t fwd_cost;    /* the same for the forward sweep */
} ns_onchip_plan;

/* Cut the tree (n nodes, parent[i] < i) into runs and spread the runs of
 * each step over the 32 lanes (longest first, onto the least loaded lane). */
ns_status ns_onchip_plan_build(int32_t n, const int32_t *parent, ns_onchip_plan *plan);
/* The schedule with its pointers into `base` (a copy of plan->data, on the
 * host or on a device). */
void ns_onchip_plan_bind(const ns_onchip_plan *plan, const int32_t *base, ns_onchip_sched *out);
void ns_onchip_plan_free(ns_onchip_plan *plan);

#endif
