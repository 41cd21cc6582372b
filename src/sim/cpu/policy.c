/* The CPU loop's decisions (sim/cpu/policy.h). */
#include "sim/cpu/policy.h"
#include "core/partition.h"

#include <stdlib.h>
#include <string.h>

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

int ns_cpu_cut_make(int32_t n, const int32_t *parent, int32_t threads, int32_t pieces, ns_cpu_cut *cut) {
    memset(cut, 0, sizeof *cut);
    if (threads < 1) threads = 1;
    if (pieces < 1) pieces = 1;
    const int64_t limit = n / ((int64_t)threads * pieces) > 1 ? n / ((int64_t)threads * pieces) : 1;
    int32_t *size = malloc((size_t)(n > 0 ? n : 1) * sizeof *size);
    int32_t *hi = malloc((size_t)(n > 0 ? n : 1) * sizeof *hi);
    signed char *kind = malloc((size_t)(n > 0 ? n : 1)); /* 0 top, 1 cut root, 2 inside a cut */
    cut->threads = threads;
    cut->range = malloc((size_t)(threads + 1) * sizeof *cut->range);
    cut->cut_first = malloc((size_t)(threads + 1) * sizeof *cut->cut_first);
    int ok = size && hi && kind && cut->range && cut->cut_first;
    for (int32_t i = 0; ok && i < n; ++i) {
        size[i] = 1;
        hi[i] = i;
    }
    for (int32_t i = n - 1; ok && i >= 1; --i) {
        size[parent[i]] += size[i];
        if (hi[i] > hi[parent[i]]) hi[parent[i]] = hi[i];
    }
    for (int32_t i = 0; ok && i < n; ++i) {
        /* a subtree of at most `limit` nodes that is the range [i, i + size) */
        const int cuttable = i > 0 && size[i] <= limit && hi[i] - i + 1 == size[i];
        kind[i] = (signed char)(i == 0 || kind[parent[i]] == 0 ? (cuttable ? 1 : 0) : 2);
        if (kind[i] == 1) cut->n_cuts++;
        if (kind[i] != 2) cut->n_top++;
    }
    if (ok) {
        cut->root = malloc((size_t)(cut->n_cuts + 1) * sizeof *cut->root);
        cut->end = malloc((size_t)(cut->n_cuts + 1) * sizeof *cut->end);
        cut->top = malloc((size_t)(cut->n_top + 1) * sizeof *cut->top);
        ok = cut->root && cut->end && cut->top;
    }
    if (ok) {
        int32_t c = 0, e = 0;
        for (int32_t i = 0; i < n; ++i) {
            if (kind[i] == 1) {
                cut->root[c] = i;
                cut->end[c++] = i + size[i];
            }
            if (kind[i] != 2) cut->top[e++] = kind[i] == 1 ? -1 - i : i;
        }
        /* each boundary the one nearest to n t / threads that is not inside
         * a cut subtree */
        cut->range[0] = 0;
        cut->range[threads] = n;
        c = 0;
        for (int32_t t = 1; t < threads; ++t) {
            int32_t x = (int32_t)((int64_t)n * t / threads);
            if (x < n && kind[x] == 2) {
                while (c + 1 < cut->n_cuts && cut->root[c + 1] <= x) ++c;
                x = x - cut->root[c] <= cut->end[c] - x ? cut->root[c] : cut->end[c];
            }
            cut->range[t] = x > cut->range[t - 1] ? x : cut->range[t - 1];
        }
        c = 0;
        for (int32_t t = 0; t <= threads; ++t) {
            while (c < cut->n_cuts && cut->root[c] < cut->range[t]) ++c;
            cut->cut_first[t] = c;
        }
    }
    free(size);
    free(hi);
    free(kind);
    if (!ok) {
        ns_cpu_cut_free(cut);
        return -1;
    }
    return 0;
}

void ns_cpu_cut_free(ns_cpu_cut *cut) {
    if (!cut) return;
    free(cut->range);
    free(cut->cut_first);
    free(cut->root);
    free(cut->end);
    free(cut->top);
    memset(cut, 0, sizeof *cut);
}

int32_t ns_cpu_threads(int32_t requested, int64_t blocks) {
    if (requested < 1) requested = 1;
    if (blocks < requested) requested = blocks < 1 ? 1 : (int32_t)blocks;
    return requested;
}

int64_t ns_cpu_partition(int64_t count, const int64_t *weight, int32_t threads, const int64_t *load0,
                         int32_t *owner, int64_t *order_out) {
    if (threads < 1) threads = 1;
    int64_t *load = calloc((size_t)threads, sizeof *load);
    if (!load) return -1;
    for (int32_t t = 0; load0 && t < threads; ++t) load[t] = load0[t];
    int64_t load_max = -1;
    if (ns_lpt(count, weight, threads, load, owner, order_out)) {
        load_max = 0;
        for (int32_t t = 0; t < threads; ++t)
            if (load[t] > load_max) load_max = load[t];
    }
    free(load);
    return load_max;
}

int ns_cpu_reorder(int64_t hh_nodes, int64_t hh_runs) {
    return hh_runs > 0 && hh_nodes < (int64_t)NS_CPU_REORDER_RUN * hh_runs;
}
