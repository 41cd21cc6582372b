/* Data restructuring (the paper's Section 4.1.2): copies of Phi sorted by
 * atom or by voxel. A stable counting sort keeps the original order inside
 * each sub-vector, costs O(n_coeffs + n_keys) and is built once per model. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "life/life_impl.h"

static ns_status build(const ns_life_model_t *m, int by_atom, ns_life_layout *l) {
    const int64_t n = m->n_coeffs;
    const int32_t keys = by_atom ? m->n_atoms : m->n_voxels;
    const int32_t *key = by_atom ? m->atom : m->voxel;
    memset(l, 0, sizeof *l);
    l->start = calloc((size_t)keys + 1, sizeof *l->start);
    l->atom = malloc((size_t)n * sizeof *l->atom);
    l->voxel = malloc((size_t)n * sizeof *l->voxel);
    l->fiber = malloc((size_t)n * sizeof *l->fiber);
    l->value = malloc((size_t)n * sizeof *l->value);
    int64_t *next = malloc((size_t)keys * sizeof *next);
    if (!l->start || !l->atom || !l->voxel || !l->fiber || !l->value || !next) {
        free(next);
        ns_life_layout_free(l);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s-sorted copy of %lld coefficients",
                       by_atom ? "atom" : "voxel", (long long)n);
    }
    for (int64_t k = 0; k < n; ++k) ++l->start[key[k] + 1];
    for (int32_t g = 0; g < keys; ++g) l->start[g + 1] += l->start[g];
    memcpy(next, l->start, (size_t)keys * sizeof *next);
    for (int64_t k = 0; k < n; ++k) {
        const int64_t j = next[key[k]]++;
        l->atom[j] = m->atom[k];
        l->voxel[j] = m->voxel[k];
        l->fiber[j] = m->fiber[k];
        l->value[j] = m->value[k];
    }
    free(next);
    l->n_keys = keys;
    l->built = 1;
    return NS_OK;
}

ns_status ns_life_layout_get(ns_life_model_t *m, int order, const ns_life_layout **out) {
    if (order == NS_LIFE_ORDER_ORIGINAL) {
        /* A view of the model's own arrays (no start: unsorted). */
        ns_life_layout *o = &m->original;
        o->atom = m->atom;
        o->voxel = m->voxel;
        o->fiber = m->fiber;
        o->value = m->value;
        o->start = NULL;
        o->n_keys = 0;
        o->built = 1;
        *out = o;
        return NS_OK;
    }
    ns_life_layout *l = order == NS_LIFE_ORDER_ATOM ? &m->by_atom : &m->by_voxel;
    if (!l->built) {
        ns_status s = build(m, order == NS_LIFE_ORDER_ATOM, l);
        if (s != NS_OK) return s;
    }
    *out = l;
    return NS_OK;
}
