/* The morphology handle: construction from checked points, accessors. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "morph/morph_impl.h"

const char *ns_soma_style_name(ns_soma_style style) {
    switch (style) {
    case NS_SOMA_NONE: return "none";
    case NS_SOMA_SINGLE_POINT: return "single-point";
    case NS_SOMA_THREE_POINT: return "three-point";
    case NS_SOMA_MULTI_POINT: return "multi-point";
    case NS_SOMA_CONTOUR: return "contour";
    }
    return "unknown";
}

static char *dup_string(const char *s) {
    const char *src = s ? s : "(memory)";
    size_t n = strlen(src) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, src, n);
    return d;
}

ns_status ns_morph_adopt(const char *name, ns_morph_point *points, int64_t n, ns_morph_t **out) {
    *out = NULL;
    if (n <= 0 || !points) {
        free(points);
        return ns_fail(NS_ERR_EMPTY, "%s: no points", name ? name : "(memory)");
    }
    for (int64_t i = 0; i < n; ++i) {
        int32_t p = points[i].parent;
        if ((i == 0 && p != -1) || (i > 0 && (p < 0 || p >= i))) {
            free(points);
            return ns_fail(NS_ERR_TOPOLOGY, "%s: point %lld has parent index %d: parents must come first",
                           name ? name : "(memory)", (long long)i, (int)p);
        }
    }
    ns_morph_t *m = calloc(1, sizeof *m);
    char *nm = dup_string(name);
    if (!m || !nm) {
        free(m);
        free(nm);
        free(points);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "morphology of %lld points", (long long)n);
    }
    m->name = nm;
    m->points = points;
    m->n_points = n;
    m->info.points_read = n;
    m->info.points = n;
    m->info.roots = 1;
    m->info.roots_kept = 1;
    for (int64_t i = 0; i < n; ++i)
        if (points[i].type == NS_SWC_SOMA) m->info.soma_points++;
    m->info.soma = ns_morph_detect_soma(points, n);
    *out = m;
    return NS_OK;
}

void ns_morph_destroy(ns_morph_t *morph) {
    if (!morph) return;
    free(morph->points);
    free(morph->name);
    free(morph);
}

void ns_morph_get_info(const ns_morph_t *morph, ns_morph_info *info) {
    if (!info) return;
    if (!morph) {
        memset(info, 0, sizeof *info);
        return;
    }
    *info = morph->info;
}

const ns_morph_point *ns_morph_points(const ns_morph_t *morph, int64_t *count) {
    if (count) *count = morph ? morph->n_points : 0;
    return morph ? morph->points : NULL;
}

const char *ns_morph_name(const ns_morph_t *morph) { return morph ? morph->name : NULL; }

ns_status ns_morph_from_points(const char *name, const ns_morph_point *points, int64_t count,
                               ns_morph_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_morph_from_points: out is NULL");
    *out = NULL;
    if (count <= 0 || !points) return ns_fail(NS_ERR_EMPTY, "%s: no points", name ? name : "(memory)");
    for (int64_t i = 0; i < count; ++i)
        if (!(points[i].r > 0.0))
            return ns_fail(NS_ERR_PARSE, "%s: point %lld has radius %g: radii must be > 0",
                           name ? name : "(memory)", (long long)i, points[i].r);
    ns_morph_point *copy = malloc((size_t)count * sizeof *copy);
    if (!copy) return ns_fail(NS_ERR_OUT_OF_MEMORY, "morphology of %lld points", (long long)count);
    memcpy(copy, points, (size_t)count * sizeof *copy);
    return ns_morph_adopt(name, copy, count, out);
}
