/* Private: the on-chip kernel's schedule for one shape and one lane count,
 * built on the host once per solver (docs/methods.md, "onchip"). */
#ifndef NS_HINES_CUDA_ONCHIP_PLAN_H
#define NS_HINES_CUDA_ONCHIP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "hines/cuda/hines_kernels.h"
#include "neurosolve/status.h"

typedef struct ns_onchip_plan {
    int32_t *data;       /* every array of ns_onchip_sched, packed (descriptors 16-byte aligned) */
    size_t count;        /* int32 entries in data */
    int32_t n, lanes, n_runs, n_bwd, n_fwd, identity;
    /* where each array of ns_onchip_sched starts in data [entries] */
    size_t bwd_desc, fwd_desc, bwd_begin, fwd_begin, child_pos, pos_of_node, node_of_pos;
    int64_t bwd_cost;    /* critical path of the backward sweep [node updates]: sum over
                            steps of the busiest lane's nodes + folded children */
    int64_t fwd_cost;    /* the same for the forward sweep [node updates] */
    int64_t bwd_items;   /* sum over steps of the busiest lane's run count (run starts) */
    int64_t fwd_items;
} ns_onchip_plan;

/* Largest cell the schedule can describe (16-bit fields in the descriptors). */
#define NS_ONCHIP_MAX_N 65535

/* Cut the tree (n nodes, parent[i] < i) into runs, give every run a
 * contiguous range of positions, and spread the runs of each step over
 * `lanes` lanes (1, 2, 4, 8, 16 or 32; longest first onto the least loaded
 * lane). */
ns_status ns_onchip_plan_build(int32_t n, const int32_t *parent, int32_t lanes,
                               ns_onchip_plan *plan);
/* The schedule with its pointers into `base` (a copy of plan->data, on the
 * host or on a device). */
void ns_onchip_plan_bind(const ns_onchip_plan *plan, const int32_t *base, ns_onchip_sched *out);
void ns_onchip_plan_free(ns_onchip_plan *plan);

#endif
