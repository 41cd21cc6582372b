/* Private: the longest-processing-time rule, shared by ns_partition_lpt
 * (cells over processes, neurosolve/dist.h) and ns_cpu_partition (blocks of
 * work over threads, sim/cpu/policy.h). */
#ifndef NS_CORE_PARTITION_H
#define NS_CORE_PARTITION_H

#include <stdint.h>

/* Items by weight descending (equal weights: the lower index first), each to
 * the part of least load (equal loads: the lower part). load[0 .. n_parts-1]
 * holds the parts' starting loads and receives the final ones; owner[i] the
 * part of item i; order (unless NULL) the items in the order given out.
 * 1 on success, 0 when out of memory. */
int ns_lpt(int64_t n_items, const int64_t *weight, int32_t n_parts, int64_t *load, int32_t *owner, int64_t *order);

#endif
