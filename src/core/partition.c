/* Partitions of work over processes. Pure functions: no MPI calls, so that
 * they are tested on their own (tests/mpi/test_mpi_partition.c); declared in neurosolve/dist.h. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/partition.h"
#include "neurosolve/dist.h"

typedef struct item {
    int64_t weight, index;
} item;

/* Heaviest first; equal weights keep the lower index first, so the result
 * does not depend on qsort's (unstable) order. */
static int by_weight_desc(const void *pa, const void *pb) {
    const item *a = pa, *b = pb;
    if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* A min-heap of parts keyed by (load, part). */
typedef struct heap {
    int32_t *part;
    int64_t *load; /* indexed by part */
    int32_t n;
} heap;

static int heap_less(const heap *h, int32_t i, int32_t j) {
    const int32_t a = h->part[i], b = h->part[j];
    return h->load[a] < h->load[b] || (h->load[a] == h->load[b] && a < b);
}

static void heap_down(heap *h, int32_t i) {
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && heap_less(h, l, m)) m = l;
        if (r < h->n && heap_less(h, r, m)) m = r;
        if (m == i) return;
        const int32_t t = h->part[i];
        h->part[i] = h->part[m];
        h->part[m] = t;
        i = m;
    }
}

int ns_lpt(int64_t n_items, const int64_t *weight, int32_t n_parts, int64_t *load, int32_t *owner, int64_t *order) {
    item *items = malloc((size_t)(n_items > 0 ? n_items : 1) * sizeof *items);
    heap h = {malloc((size_t)n_parts * sizeof(int32_t)), load, n_parts};
    if (!items || !h.part) {
        free(items);
        free(h.part);
        return 0;
    }
    for (int64_t i = 0; i < n_items; ++i) items[i] = (item){weight[i], i};
    qsort(items, (size_t)n_items, sizeof *items, by_weight_desc);
    for (int32_t p = 0; p < n_parts; ++p) h.part[p] = p;
    for (int32_t i = n_parts / 2 - 1; i >= 0; --i) heap_down(&h, i); /* the starting loads' heap */
    for (int64_t k = 0; k < n_items; ++k) {
        const int32_t p = h.part[0]; /* the least loaded part */
        owner[items[k].index] = p;
        h.load[p] += items[k].weight;
        if (order) order[k] = items[k].index;
        heap_down(&h, 0);
    }
    free(items);
    free(h.part);
    return 1;
}

ns_status ns_partition_lpt(int64_t n_items, const int64_t *weight, int32_t n_parts, int32_t *owner,
                           int64_t *load) {
    if (n_items < 0 || n_parts < 1 || (n_items > 0 && (!weight || !owner)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_partition_lpt: %lld items over %d parts",
                       (long long)n_items, (int)n_parts);
    for (int64_t i = 0; i < n_items; ++i)
        if (weight[i] < 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_partition_lpt: weight[%lld] = %lld is negative",
                           (long long)i, (long long)weight[i]);
    int64_t *part_load = calloc((size_t)n_parts, sizeof *part_load);
    if (!part_load || !ns_lpt(n_items, weight, n_parts, part_load, owner, NULL)) {
        free(part_load);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_partition_lpt: %lld items", (long long)n_items);
    }
    if (load) memcpy(load, part_load, (size_t)n_parts * sizeof *load);
    free(part_load);
    return NS_OK;
}

ns_status ns_partition_contiguous(int64_t n_items, const int64_t *weight, int32_t n_parts,
                                  int64_t *first) {
    if (n_items < 0 || n_parts < 1 || !first || (n_items > 0 && !weight))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_partition_contiguous: %lld items over %d parts",
                       (long long)n_items, (int)n_parts);
    long double total = 0.0L;
    for (int64_t i = 0; i < n_items; ++i) {
        if (weight[i] < 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "ns_partition_contiguous: weight[%lld] = %lld is negative", (long long)i,
                           (long long)weight[i]);
        total += (long double)weight[i];
    }
    /* Part p starts at the first item whose preceding weights reach
     * p / n_parts of the total. */
    first[0] = 0;
    long double before = 0.0L; /* summed weight of items [0, i) */
    int64_t i = 0;
    for (int32_t p = 1; p < n_parts; ++p) {
        const long double target = total * (long double)p / (long double)n_parts;
        while (i < n_items && before + (long double)weight[i] / 2.0L < target) before += (long double)weight[i++];
        first[p] = i;
    }
    first[n_parts] = n_items;
    /* With at least as many items as parts, give every part one item or
     * more (a part with nothing to do idles in every collective). */
    if (n_items >= n_parts) {
        for (int32_t p = 1; p < n_parts; ++p)
            if (first[p] < first[p - 1] + 1) first[p] = first[p - 1] + 1;
        for (int32_t p = n_parts - 1; p >= 1; --p)
            if (first[p] > first[p + 1] - 1) first[p] = first[p + 1] - 1;
    }
    return NS_OK;
}

void ns_cells_partition_free(ns_cells_partition *p) {
    if (!p) return;
    free(p->owner);
    free(p->global_offset);
    free(p->part_comp);
    free(p->local_cells);
    free(p->local_shape);
    memset(p, 0, sizeof *p);
}

ns_status ns_partition_cells(int32_t n_shapes, const int64_t *shape_size, int64_t n_cells,
                             const int32_t *cell_shape, int32_t n_parts, int32_t part, ns_cells_partition *out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_partition_cells: NULL argument");
    memset(out, 0, sizeof *out);
    if (n_shapes < 1 || !shape_size || n_cells < 0 || n_parts < 1 || part < 0 || part >= n_parts)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_partition_cells: %lld cells of %d shapes over %d parts (part %d)",
                       (long long)n_cells, (int)n_shapes, (int)n_parts, (int)part);
    /* each cell has a compartment or more, 8 bytes each in a value array:
     * more cells than that can address would wrap the sizes below */
    if (n_cells > (int64_t)(PTRDIFF_MAX / (ptrdiff_t)sizeof(double)))
        return ns_fail(NS_ERR_SIZE, "%lld cells are more than the %lld compartments a value array can hold",
                       (long long)n_cells, (long long)(PTRDIFF_MAX / (ptrdiff_t)sizeof(double)));
    const size_t n = (size_t)(n_cells > 0 ? n_cells : 1);
    int64_t *weight = malloc(n * sizeof *weight);
    out->owner = malloc(n * sizeof *out->owner);
    out->global_offset = malloc((n + 1) * sizeof *out->global_offset);
    out->part_comp = calloc((size_t)n_parts, sizeof *out->part_comp);
    ns_status st = weight && out->owner && out->global_offset && out->part_comp
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "partition of %lld cells", (long long)n_cells);
    out->n_cells = n_cells;
    if (st == NS_OK) {
        out->global_offset[0] = 0;
        for (int64_t c = 0; c < n_cells; ++c) {
            weight[c] = shape_size[cell_shape ? cell_shape[c] : (int32_t)(c % n_shapes)];
            out->global_offset[c + 1] = out->global_offset[c] + weight[c];
        }
        out->n_comp = out->global_offset[n_cells];
        st = ns_partition_lpt(n_cells, weight, n_parts, out->owner, out->part_comp);
    }
    free(weight);
    for (int64_t c = 0; st == NS_OK && c < n_cells; ++c) out->n_local += out->owner[c] == part;
    if (st == NS_OK) {
        const size_t m = (size_t)(out->n_local > 0 ? out->n_local : 1);
        out->local_cells = malloc(m * sizeof *out->local_cells);
        out->local_shape = malloc(m * sizeof *out->local_shape);
        if (!out->local_cells || !out->local_shape) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "local cell list");
    }
    for (int64_t c = 0, k = 0; st == NS_OK && c < n_cells; ++c)
        if (out->owner[c] == part) {
            out->local_cells[k] = c;
            out->local_shape[k++] = cell_shape ? cell_shape[c] : (int32_t)(c % n_shapes);
        }
    if (st == NS_OK) out->n_local_comp = out->part_comp[part];
    else ns_cells_partition_free(out);
    return st;
}
