/* The CPU loop's decisions (cpu_policy.h). */
#include "cable/cpu_policy.h"

#include <stdlib.h>

int32_t ns_cpu_lane_width(int32_t n, int64_t total, int32_t threads) {
    if (n <= 0 || threads <= 0) return 1;
    const int64_t share = total / threads;
    int32_t w = NS_CPU_LANES_MAX;
    while (w > 1 && (int64_t)w * n > share) w /= 2;
    return w;
}

int64_t ns_cpu_blocks(int64_t cells, int32_t wmax, int32_t *widths) {
    int64_t k = 0;
    for (int32_t w = wmax; w >= 1 && cells > 0; w /= 2)
        while (cells >= w) {
            if (widths) widths[k] = w;
            ++k;
            cells -= w;
            if (w < wmax) break; /* below wmax each width at most once (binary digits) */
        }
    return k;
}

int ns_cpu_split(int32_t n, int64_t total, int32_t threads) {
    if (threads <= 1 || n <= 0) return 0;
    return (int64_t)n * threads > total && (int64_t)n >= (int64_t)NS_CPU_SPLIT_MIN_PER_THREAD * threads;
}

int32_t ns_cpu_threads(int32_t requested, int64_t blocks) {
    if (requested < 1) requested = 1;
    if (blocks < requested) requested = blocks < 1 ? 1 : (int32_t)blocks;
    return requested;
}

typedef struct wb {
    int64_t weight, block;
} wb;

/* weight descending, then block ascending (a deterministic order) */
static int by_weight(const void *x, const void *y) {
    const wb *a = x, *b = y;
    if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
    return (a->block > b->block) - (a->block < b->block);
}

int64_t ns_cpu_partition(int64_t count, const int64_t *weight, int32_t threads, int32_t *owner) {
    if (threads < 1) threads = 1;
    int64_t *load = calloc((size_t)threads, sizeof *load);
    wb *order = malloc((size_t)(count > 0 ? count : 1) * sizeof *order);
    if (!load || !order) {
        free(load);
        free(order);
        return -1;
    }
    for (int64_t b = 0; b < count; ++b) {
        order[b].weight = weight[b];
        order[b].block = b;
    }
    qsort(order, (size_t)count, sizeof *order, by_weight);
    for (int64_t k = 0; k < count; ++k) {
        int32_t best = 0;
        for (int32_t t = 1; t < threads; ++t)
            if (load[t] < load[best]) best = t;
        owner[order[k].block] = best;
        load[best] += order[k].weight;
    }
    int64_t load_max = 0;
    for (int32_t t = 0; t < threads; ++t)
        if (load[t] > load_max) load_max = load[t];
    free(load);
    free(order);
    return load_max;
}
