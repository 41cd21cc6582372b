/* Points -> NEURON sections, following what NEURON's Import3d does with an
 * SWC file (read_swc.hoc: sectionify, mark_branch, mksection; import3d_gui.hoc:
 * chk_valid, sphere_rep). Written from a reading of that code; every rule is
 * listed in docs/discretisation.md. The points come in our topological order
 * (every parent first, each unbranched run contiguous); Import3d applies the
 * same rules to points sorted by SWC id, so the two agree whenever the file
 * is itself in that order (true for every well-formed NeuroMorpho file). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "morph/discretize_impl.h"

/* Import3d counts children as 1 each, plus 0.01 for a child that does not
 * follow its parent directly and 0.01 for a change of type; a point ends a
 * section when the count is not exactly 1. We count in hundredths. */
#define ONE_CHILD 100

void disc_sections_free(disc_sections *s) {
    if (!s) return;
    free(s->sec);
    free(s->pts);
    memset(s, 0, sizeof *s);
}

typedef struct work {
    const ns_morph_point *p;
    int64_t n;
    int32_t *par;        /* parents (Import3d rewrites one for the 3-point soma) */
    int32_t *nchild;     /* hundredths, see ONE_CHILD */
    int32_t *nchild_soma;
    unsigned char *prox; /* connect2prox: attach at x = 0 of the parent section */
    int32_t *sec_of;     /* point -> section */
    int soma3;           /* NeuroMorpho three-point soma treated as a sphere */
} work;

static double dist(const ns_morph_point *a, const ns_morph_point *b) {
    double dx = a->x - b->x, dy = a->y - b->y, dz = a->z - b->z;
    return sqrt(dx * dx + dy * dy + dz * dz);
}

/* mark_branch(): children counts, contiguity and type breaks, and the two
 * "connect to the proximal end" cases. */
static void mark_branch(work *w) {
    const ns_morph_point *p = w->p;
    for (int64_t i = 1; i < w->n; ++i) {
        int32_t q = w->par[i];
        w->nchild[q] += ONE_CHILD;
        if (q != i - 1) {
            w->nchild[q] += 1;
            if (q > 1) {
                /* q is the first point of a neurite hanging from the soma:
                 * a second branch from q goes to x = 0 of q's section. */
                if (p[q].type != 1 && p[w->par[q]].type == 1) {
                    w->prox[i] = 1;
                    w->nchild[q] = ONE_CHILD;
                }
            } else if (q == 0 && p[0].type != 1) {
                /* branches from a non-soma root go to x = 0 of the root section */
                w->prox[i] = 1;
                w->nchild[q] = ONE_CHILD;
            }
        }
        if (p[q].type != p[i].type) w->nchild[q] += 1;
    }
}

/* NeuroMorpho's three-point soma: points 1 and 2 hang from point 0, have no
 * children, the same diameter as 0, and lie one diameter apart in total. */
static void check_soma3(work *w) {
    const ns_morph_point *p = w->p;
    if (w->n < 3 || w->par[1] != 0 || w->par[2] != 0) return;
    if (w->nchild[1] != 0 || w->nchild[2] != 0) return;
    if (p[1].r != p[0].r || p[2].r != p[0].r) return;
    double len = dist(&p[1], &p[0]) + dist(&p[2], &p[0]);
    if (fabs(len / (2.0 * p[0].r) - 1.0) < 0.01) {
        w->soma3 = 1;
        w->par[2] = 1; /* as Import3d: keeps the three in one section */
    }
}

/* sectionify(): returns the number of sections and fills sec_of. */
static int32_t sectionify(work *w) {
    const ns_morph_point *p = w->p;
    int64_t nsoma = 0;
    for (int64_t i = 0; i < w->n; ++i) {
        if (p[i].type != 1) continue;
        ++nsoma;
        if (i > 0 && p[w->par[i]].type == 1) w->nchild_soma[w->par[i]]++;
    }
    if (nsoma == 3) check_soma3(w);
    /* a chain of consecutive soma points stays one section even where
     * neurites leave it, unless a soma point (other than the root) has
     * several soma children */
    for (int64_t i = 0; i + 1 < w->n; ++i)
        if (p[i].type == 1 && p[i + 1].type == 1 && w->par[i + 1] == i &&
            !(i != 0 && w->nchild_soma[i] > 1))
            w->nchild[i] = ONE_CHILD;
    int32_t s = 0;
    for (int64_t i = 0; i < w->n; ++i) {
        w->sec_of[i] = s;
        if (w->nchild[i] != ONE_CHILD) ++s;
    }
    return s; /* the last point is a leaf, so it always closes a section */
}

/* mksection() for a non-root section: parentx, the wire flag and the
 * diameter of the copied parent point. */
static void attach(const work *w, disc_section *secs, int32_t k, int *wire, double *copy_d) {
    const ns_morph_point *p = w->p;
    disc_section *s = &secs[k];
    int64_t first = s->first, own = s->last - s->first + 1;
    int32_t pp = w->par[first];
    int32_t ps = w->sec_of[pp];
    const disc_section *psec = &secs[ps];
    int con_soma = psec->type == 1;
    int den_con_soma = con_soma && p[first].type != 1;
    /* Import3d's point count of the parent: the root has its own points (one
     * for the three-point soma), other sections one more (the parent copy) */
    int64_t psize = ps == 0 ? (w->soma3 ? 1 : psec->last - psec->first + 1)
                            : psec->last - psec->first + 2;
    int handled = 0;
    s->parent = ps;
    s->parent_x = 1.0;
    *wire = 0;
    if (ps == 0) {
        handled = 1;
        if (den_con_soma && psize == 1) { /* single-point (sphere) soma */
            s->parent_x = 0.5;
            if (own > 1) *wire = 1;
        } else if (pp == psec->first) { /* the root section's first point */
            s->parent_x = 0.0;
            if (p[first].type != 1 && w->nchild_soma[pp] > 1) *wire = 1;
        } else {
            handled = 0;
        }
    }
    if (!handled && con_soma) {
        int64_t offset = ps == 0 ? -1 : -2;
        if (pp < psec->first + psize + offset) { /* interior soma point */
            s->parent_x = 0.5;
            if (den_con_soma && own > 1) *wire = 1;
        } else if (own > 1 && w->nchild_soma[pp] > 1 && p[first].type != 1) {
            *wire = 1;
        }
    }
    /* a neurite leaving the soma starts with its own diameter, not the soma's */
    *copy_d = 2.0 * (con_soma && s->type != 1 ? p[first].r : p[pp].r);
    if (w->prox[first]) s->parent_x = 0.0;
}

static void put(disc_pt3d *q, double x, double y, double z, double d) {
    q->x = x;
    q->y = y;
    q->z = z;
    q->d = d;
    q->arc = 0.0;
}

/* chk_valid(): drop non-root sections left with one 3D point, or with two
 * at the same place; their children move to the dropped section's parent
 * at its parentx. Returns the number of sections kept (renumbered). */
static int32_t drop_degenerate(disc_section *secs, int32_t n, const disc_pt3d *pts) {
    int32_t *keep = malloc((size_t)n * sizeof *keep);
    if (!keep) return -1;
    for (int32_t k = n - 1; k >= 0; --k) {
        keep[k] = 1;
        if (k == 0) break;
        const disc_section *s = &secs[k];
        const disc_pt3d *a = &pts[s->pt_begin];
        int bad = s->n3d <= 1 ||
                  (s->n3d == 2 && a[0].x == a[1].x && a[0].y == a[1].y && a[0].z == a[1].z);
        if (!bad) continue;
        keep[k] = 0;
        for (int32_t j = k + 1; j < n; ++j)
            if (secs[j].parent == k) {
                secs[j].parent = s->parent;
                secs[j].parent_x = s->parent_x;
            }
    }
    int32_t m = 0;
    for (int32_t k = 0; k < n; ++k) {
        if (!keep[k]) continue;
        keep[k] = m; /* new index */
        secs[m] = secs[k];
        if (secs[m].parent >= 0) secs[m].parent = keep[secs[m].parent];
        ++m;
    }
    free(keep);
    return m;
}

static ns_status build(work *w, int32_t nsec, const char *name, disc_sections *out) {
    const ns_morph_point *p = w->p;
    disc_section *secs = calloc((size_t)nsec, sizeof *secs);
    disc_pt3d *pts = malloc((size_t)(w->n + nsec + 3) * sizeof *pts);
    if (!secs || !pts) {
        free(secs);
        free(pts);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %d sections", name, (int)nsec);
    }
    int64_t i = 0, np = 0;
    for (int32_t k = 0; k < nsec; ++k) {
        disc_section *s = &secs[k];
        s->first = i;
        while (i + 1 < w->n && w->sec_of[i + 1] == k) ++i;
        s->last = i++;
        s->type = p[s->first].type;
        /* inside a section every point must follow its parent directly */
        for (int64_t j = s->first + 1; j <= s->last; ++j)
            if (w->par[j] != j - 1) {
                free(secs);
                free(pts);
                return ns_fail(NS_ERR_TOPOLOGY,
                               "%s: point %lld (id %lld) does not follow its parent: each unbranched "
                               "run must be contiguous", name, (long long)j, (long long)p[j].id);
            }
        s->pt_begin = np;
        if (k == 0) {
            s->parent = -1;
            s->parent_x = 0.0;
            int64_t last = w->soma3 ? s->first : s->last;
            /* A root chain of zero length (all its points at one place, as in
             * the NeuroML-converted C. elegans cells) would be a 1e-9 um
             * section in NEURON, with an axial conductance near 1e9 uS that
             * makes the matrix nearly singular. We read it as a sphere of the
             * first point's radius instead (docs/discretisation.md). */
            int zero_length = 1;
            for (int64_t j = s->first + 1; j <= last && zero_length; ++j)
                zero_length = dist(&p[j], &p[s->first]) == 0.0;
            if (zero_length && last != s->first) { /* NEURON's points all lie at one place */
                s->point_root = 1;
                s->anchor[0] = p[0].x, s->anchor[1] = p[0].y, s->anchor[2] = p[0].z;
            }
            if (zero_length) last = s->first;
            if (last == s->first) { /* one point: NEURON's sphere_rep, a cylinder L = diam along x */
                double d = 2.0 * p[0].r;
                put(&pts[np++], p[0].x - d / 2, p[0].y, p[0].z, d);
                put(&pts[np++], p[0].x, p[0].y, p[0].z, d);
                put(&pts[np++], p[0].x + d / 2, p[0].y, p[0].z, d);
            } else {
                for (int64_t j = s->first; j <= last; ++j)
                    put(&pts[np++], p[j].x, p[j].y, p[j].z, 2.0 * p[j].r);
            }
        } else {
            int wire;
            double copy_d;
            attach(w, secs, k, &wire, &copy_d);
            const ns_morph_point *pp = &p[w->par[s->first]];
            if (!wire) put(&pts[np++], pp->x, pp->y, pp->z, copy_d);
            s->wire = wire;
            s->anchor[0] = pp->x, s->anchor[1] = pp->y, s->anchor[2] = pp->z;
            for (int64_t j = s->first; j <= s->last; ++j)
                put(&pts[np++], p[j].x, p[j].y, p[j].z, 2.0 * p[j].r);
        }
        s->n3d = (int32_t)(np - s->pt_begin);
    }
    int32_t m = drop_degenerate(secs, nsec, pts);
    if (m < 0) {
        free(secs);
        free(pts);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %d sections", name, (int)nsec);
    }
    for (int32_t k = 0; k < m; ++k) {
        disc_arcs(&secs[k], pts);
        const disc_pt3d *q = &pts[secs[k].pt_begin];
        /* A length that overflows, or a neurite whose points all lie at one
         * place (no membrane, an axial conductance of ~1e15 uS from the
         * 1e-15 um clamp: a simulation ends in NaN) are rejected here, where
         * the file and line are known (a zero-length root became a sphere). */
        const ns_morph_point *f = &p[secs[k].first];
        ns_status bad = NS_OK;
        if (!isfinite(secs[k].length))
            bad = ns_fail(NS_ERR_NOT_FINITE, "%s:%lld: section %d (SWC ids %lld-%lld): length %g overflows a double",
                          name, (long long)f->line, (int)k, (long long)f->id, (long long)p[secs[k].last].id,
                          secs[k].length);
        else if (k > 0 && secs[k].length == 0.0)
            bad = ns_fail(NS_ERR_PARSE,
                          "%s:%lld: section %d (SWC ids %lld-%lld) has zero length: its %d points lie at one "
                          "place (%g, %g, %g), so it has no membrane and no axial resistance",
                          name, (long long)f->line, (int)k, (long long)f->id, (long long)p[secs[k].last].id,
                          (int)secs[k].n3d, q[0].x, q[0].y, q[0].z);
        if (bad != NS_OK) {
            free(secs);
            free(pts);
            return bad;
        }
    }
    out->sec = secs;
    out->n = m;
    out->pts = pts;
    out->n_pts = np;
    return NS_OK;
}

/* nrn_define_shape and nrn_translate_shape (NEURON's treeset.cpp), for sections joined by their
 * 0 end (all of Import3d's): the target is lerp(parent's first, parent's last 3-D point, parentx),
 * the chord's point, not the point at that arc length. NEURON adds the shift in float; here in
 * double (a difference of the float rounding of the coordinates). */
void disc_define_shape(disc_sections *S) {
    for (int32_t k = 0; k < S->n; ++k) {
        disc_section *s = &S->sec[k];
        if (s->parent < 0 || s->n3d < 1) continue;
        const disc_section *ps = &S->sec[s->parent]; /* parents come first: already moved */
        const disc_pt3d *a = &S->pts[ps->pt_begin], *b = a + (ps->n3d - 1);
        const double x = s->parent_x;
        disc_pt3d *q = &S->pts[s->pt_begin];
        const double from[3] = {s->wire ? s->anchor[0] : q->x, s->wire ? s->anchor[1] : q->y,
                                s->wire ? s->anchor[2] : q->z};
        const double to[3] = {ps->point_root ? ps->anchor[0] : b->x * x + a->x * (1.0 - x),
                              ps->point_root ? ps->anchor[1] : b->y * x + a->y * (1.0 - x),
                              ps->point_root ? ps->anchor[2] : b->z * x + a->z * (1.0 - x)};
        const double d[3] = {to[0] - from[0], to[1] - from[1], to[2] - from[2]};
        for (int32_t j = 0; j < s->n3d; ++j) {
            q[j].x += d[0];
            q[j].y += d[1];
            q[j].z += d[2];
        }
        for (int c = 0; c < 3; ++c) s->anchor[c] += d[c];
    }
}

void disc_arcs(disc_section *s, disc_pt3d *pts) {
    /* arc lengths as NEURON's nrn_pt3dmodified computes them */
    disc_pt3d *q = &pts[s->pt_begin];
    q[0].arc = 0.0;
    for (int32_t j = 1; j < s->n3d; ++j) {
        double dx = q[j].x - q[j - 1].x, dy = q[j].y - q[j - 1].y, dz = q[j].z - q[j - 1].z;
        q[j].arc = q[j - 1].arc + sqrt(dx * dx + dy * dy + dz * dz);
    }
    s->length = q[s->n3d - 1].arc;
}

ns_status disc_build_sections(const ns_morph_point *points, int64_t n, const char *name,
                              disc_sections *out) {
    memset(out, 0, sizeof *out);
    if (n <= 0 || !points) return ns_fail(NS_ERR_EMPTY, "%s: no points to discretise", name);
    if (n > INT32_MAX / 2)
        return ns_fail(NS_ERR_SIZE, "%s: %lld points is more than a cell can hold", name, (long long)n);
    work w = {points, n, NULL, NULL, NULL, NULL, NULL, 0};
    w.par = malloc((size_t)n * sizeof *w.par);
    w.nchild = calloc((size_t)n, sizeof *w.nchild);
    w.nchild_soma = calloc((size_t)n, sizeof *w.nchild_soma);
    w.prox = calloc((size_t)n, 1);
    w.sec_of = malloc((size_t)n * sizeof *w.sec_of);
    ns_status st = NS_OK;
    if (!w.par || !w.nchild || !w.nchild_soma || !w.prox || !w.sec_of) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: work space for %lld points", name, (long long)n);
        goto done;
    }
    for (int64_t i = 0; i < n; ++i) {
        w.par[i] = points[i].parent;
        if ((i == 0 && w.par[i] != -1) || (i > 0 && (w.par[i] < 0 || w.par[i] >= i))) {
            st = ns_fail(NS_ERR_TOPOLOGY, "%s: point %lld has parent %d: parents must come first",
                         name, (long long)i, (int)w.par[i]);
            goto done;
        }
        if (!(points[i].r > 0.0)) {
            st = ns_fail(NS_ERR_PARSE, "%s: point %lld (id %lld) has radius %g: radii must be > 0",
                         name, (long long)i, (long long)points[i].id, points[i].r);
            goto done;
        }
        /* finite coordinates and radii can still overflow once combined
         * (1e308 um): every diameter and every distance to the parent must
         * be finite, or lengths and areas become inf and nan downstream */
        if (!isfinite(2.0 * points[i].r) || (i > 0 && !isfinite(dist(&points[i], &points[w.par[i]])))) {
            st = ns_fail(NS_ERR_NOT_FINITE,
                         "%s:%lld: point id %lld: its %s overflows a double (radius %g, position %g %g %g): "
                         "coordinates and radii must be below about 1e150 um",
                         name, (long long)points[i].line, (long long)points[i].id,
                         isfinite(2.0 * points[i].r) ? "distance to its parent" : "diameter", points[i].r,
                         points[i].x, points[i].y, points[i].z);
            goto done;
        }
    }
    mark_branch(&w);
    int32_t nsec = sectionify(&w);
    st = build(&w, nsec, name, out);
done:
    free(w.par);
    free(w.nchild);
    free(w.nchild_soma);
    free(w.prox);
    free(w.sec_of);
    return st;
}
