/* Soma style of a checked point array (declared in morph_impl.h and called
 * by ns_morph_adopt). The rules, and where they differ from NEURON's
 * Import3d, are in docs/swc.md:
 *   no type-1 point                         -> none
 *   one type-1 point                        -> single point (sphere)
 *   three type-1 points, NeuroMorpho layout -> three-point
 *   four or more, on an outline, thin       -> contour
 *   anything else                           -> multi-point (stack of frusta) */
#include <math.h>
#include <stdint.h>

#include "morph/morph_impl.h"

/* Tolerances for the three-point soma, relative to the soma radius: the
 * side points sit at distance r from the centre within 5 % (files round
 * coordinates to 0.01 um, a 1 um soma then misses by up to ~3 %), opposite
 * each other within 5 %, and all three radii agree within 1 %. */
#define THREE_POINT_DISTANCE_TOL 0.05
#define THREE_POINT_RADIUS_TOL 0.01

/* A contour: every soma point at least this fraction of the mean distance
 * from the centroid (an outline has no point near its centre) ... */
#define CONTOUR_MIN_DISTANCE 0.5
/* ... and every soma radius at most this fraction of the mean distance
 * (outline points are thin markers, not cross-sections of the body). */
#define CONTOUR_MAX_RADIUS 0.2

static double dist3(const ns_morph_point *a, double x, double y, double z) {
    return sqrt((a->x - x) * (a->x - x) + (a->y - y) * (a->y - y) + (a->z - z) * (a->z - z));
}

/* s[0..2] are the indices of the three soma points. */
static int is_three_point(const ns_morph_point *p, int64_t n, const int64_t s[3]) {
    for (int c = 0; c < 3; ++c) {
        int64_t a = s[(c + 1) % 3], b = s[(c + 2) % 3];
        if (p[a].parent != s[c] || p[b].parent != s[c]) continue;
        const ns_morph_point *m = &p[s[c]];
        double r = m->r;
        if (!(r > 0.0)) return 0;
        if (fabs(p[a].r - r) > THREE_POINT_RADIUS_TOL * r || fabs(p[b].r - r) > THREE_POINT_RADIUS_TOL * r)
            return 0;
        double da = dist3(&p[a], m->x, m->y, m->z), db = dist3(&p[b], m->x, m->y, m->z);
        if (fabs(da - r) > THREE_POINT_DISTANCE_TOL * r || fabs(db - r) > THREE_POINT_DISTANCE_TOL * r)
            return 0;
        /* opposite: (a - m) + (b - m) ~ 0 */
        double sx = p[a].x + p[b].x - 2 * m->x, sy = p[a].y + p[b].y - 2 * m->y,
               sz = p[a].z + p[b].z - 2 * m->z;
        if (sqrt(sx * sx + sy * sy + sz * sz) > THREE_POINT_DISTANCE_TOL * r) return 0;
        /* the side points are leaves: nothing attaches to them */
        for (int64_t i = 0; i < n; ++i)
            if (p[i].parent == a || p[i].parent == b) return 0;
        return 1;
    }
    return 0;
}

static int is_contour(const ns_morph_point *p, int64_t n, int64_t count) {
    double cx = 0, cy = 0, cz = 0;
    for (int64_t i = 0; i < n; ++i)
        if (p[i].type == NS_SWC_SOMA) {
            cx += p[i].x;
            cy += p[i].y;
            cz += p[i].z;
        }
    cx /= (double)count;
    cy /= (double)count;
    cz /= (double)count;
    double mean = 0, dmin = INFINITY, rmax = 0;
    for (int64_t i = 0; i < n; ++i)
        if (p[i].type == NS_SWC_SOMA) {
            double d = dist3(&p[i], cx, cy, cz);
            mean += d;
            if (d < dmin) dmin = d;
            if (p[i].r > rmax) rmax = p[i].r;
        }
    mean /= (double)count;
    return mean > 0.0 && dmin >= CONTOUR_MIN_DISTANCE * mean && rmax <= CONTOUR_MAX_RADIUS * mean;
}

ns_soma_style ns_morph_detect_soma(const ns_morph_point *points, int64_t n) {
    int64_t count = 0, s[3] = {-1, -1, -1};
    for (int64_t i = 0; i < n; ++i)
        if (points[i].type == NS_SWC_SOMA) {
            if (count < 3) s[count] = i;
            count++;
        }
    if (count == 0) return NS_SOMA_NONE;
    if (count == 1) return NS_SOMA_SINGLE_POINT;
    if (count == 3 && is_three_point(points, n, s)) return NS_SOMA_THREE_POINT;
    if (count >= 4 && is_contour(points, n, count)) return NS_SOMA_CONTOUR;
    return NS_SOMA_MULTI_POINT;
}
