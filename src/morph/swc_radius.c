/* Radius policy on a checked tree (points in preorder: parents first).
 *
 * NS_RADIUS_REPAIR replaces each radius <= 0 by
 *   1. the radius of the nearest ancestor with a positive radius, else
 *   2. the radius of the nearest descendant with a positive one (fewest
 *      edges; ties to the first in breadth-first order, children in file
 *      order), else
 *   3. the radius its parent received (a zero branch hanging from a root
 *      that was itself repaired from another branch).
 * All three passes are linear: (1) forward, (2) backward over the points
 * with no positive ancestor, (3) forward again. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "morph/swc_impl.h"

static ns_status repair(const char *name, ns_morph_point *pts, int64_t n, int64_t *repaired) {
    int64_t positive = 0, first_bad = -1;
    for (int64_t i = 0; i < n; ++i) {
        if (pts[i].r > 0.0) positive++;
        else if (first_bad < 0 || pts[i].line < pts[first_bad].line) first_bad = i;
    }
    if (first_bad < 0) return NS_OK;
    if (positive == 0)
        return ns_fail(NS_ERR_PARSE,
                       "%s: no positive radius: a tracing without diameters; give a default radius "
                       "(NS_RADIUS_DEFAULT; CLI: --radii default:R)",
                       name);
    /* orig[i]: 1 if the file gave a positive radius. Pass 1 (ancestors)
     * writes into r directly; unresolved points keep r <= 0. */
    unsigned char *orig = malloc((size_t)n);
    int32_t *dist = malloc((size_t)n * sizeof *dist); /* edges to the nearest positive descendant */
    double *near = malloc((size_t)n * sizeof *near);   /* that descendant's radius */
    if (!orig || !dist || !near) {
        free(orig);
        free(dist);
        free(near);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: radius repair of %lld points", name, (long long)n);
    }
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
        orig[i] = pts[i].r > 0.0;
        if (!orig[i]) {
            count++;
            int32_t p = pts[i].parent;
            if (p >= 0 && pts[p].r > 0.0) pts[i].r = pts[p].r;
        }
    }
    /* Pass 2: children come after their parent, so a backward sweep sees
     * all children of a point before the point. Children of one parent are
     * met in reverse file order; "<=" lets the earlier child win a tie. */
    for (int64_t i = 0; i < n; ++i) dist[i] = INT32_MAX;
    for (int64_t i = n - 1; i > 0; --i) {
        int32_t p = pts[i].parent;
        int32_t d;
        double r;
        if (orig[i]) {
            d = 1;
            r = pts[i].r;
        } else if (dist[i] != INT32_MAX && !(pts[i].r > 0.0)) {
            d = dist[i] + 1;
            r = near[i];
        } else {
            continue;
        }
        if (!(pts[p].r > 0.0) && d <= dist[p]) {
            dist[p] = d;
            near[p] = r;
        }
    }
    for (int64_t i = 0; i < n; ++i)
        if (!(pts[i].r > 0.0) && dist[i] != INT32_MAX) pts[i].r = near[i];
    /* Pass 3: whatever is left takes its (now repaired) parent's radius. */
    for (int64_t i = 0; i < n; ++i)
        if (!(pts[i].r > 0.0) && pts[i].parent >= 0) pts[i].r = pts[pts[i].parent].r;
    free(orig);
    free(dist);
    free(near);
    *repaired = count;
    return NS_OK;
}

ns_status swc_apply_radius_policy(const char *name, ns_morph_point *pts, int64_t n,
                                  const ns_swc_options *options, int64_t *repaired) {
    *repaired = 0;
    if (options->radii == NS_RADIUS_REPAIR) return repair(name, pts, n, repaired);
    int64_t count = 0, first_bad = -1;
    for (int64_t i = 0; i < n; ++i) {
        if (pts[i].r > 0.0) continue;
        if (first_bad < 0 || pts[i].line < pts[first_bad].line) first_bad = i;
        if (options->radii == NS_RADIUS_DEFAULT) pts[i].r = options->default_radius;
        count++;
    }
    if (options->radii == NS_RADIUS_REJECT && first_bad >= 0)
        return ns_fail(NS_ERR_PARSE, "%s:%lld: radius %g of point %lld is not positive (%lld such points; "
                       "radius policy: reject)",
                       name, (long long)pts[first_bad].line, pts[first_bad].r,
                       (long long)pts[first_bad].id, (long long)count);
    *repaired = count;
    return NS_OK;
}
