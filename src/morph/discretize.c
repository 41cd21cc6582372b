/* ns_discretize(): NEURON's node set in Hines order, the junction policy and
 * the cell's accessors. Sections come from discretize_sections.c, segment
 * geometry from discretize_geom.c (docs/discretisation.md).
 *
 * NEURON's nodes, in our numbering (NS_JUNCTIONS_NEURON):
 *   node 0              x = 0 of the root section (zero area)
 *   then per section s  its nseg segment nodes, then its x = 1 node (zero area)
 * A section attached at parentx = 1 hangs from the parent's x = 1 node, at
 * 0 < parentx < 1 from the parent's segment containing parentx, at parentx = 0
 * from the node the parent itself hangs from. Sections come parents first,
 * so every parent node has a smaller index than its children. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "morph/cell_impl.h"
#include "morph/discretize_impl.h"
#include "morph/morph_impl.h"

void ns_discretize_options_init(ns_discretize_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->rule = NS_NSEG_D_LAMBDA;
    o->d_lambda = 0.1;
    o->frequency = 100.0;
    o->max_length = 20.0;
    o->Ra = 35.4;
    o->cm = 1.0;
    o->junctions = NS_JUNCTIONS_MINIMAL;
}

static ns_status check_options(const ns_discretize_options *o) {
    if (o->rule != NS_NSEG_D_LAMBDA && o->rule != NS_NSEG_FIXED_LENGTH && o->rule != NS_NSEG_ONE)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: unknown nseg rule %d", (int)o->rule);
    if (o->junctions != NS_JUNCTIONS_MINIMAL && o->junctions != NS_JUNCTIONS_NEURON)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: unknown junction policy %d", (int)o->junctions);
    if (!(o->Ra > 0.0) || !isfinite(o->Ra))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: Ra = %g ohm cm must be > 0", o->Ra);
    if (o->rule == NS_NSEG_D_LAMBDA) {
        if (!(o->d_lambda > 0.0) || !isfinite(o->d_lambda))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: d_lambda = %g must be > 0", o->d_lambda);
        if (!(o->frequency >= 0.0) || !isfinite(o->frequency))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: frequency = %g Hz must be >= 0", o->frequency);
        if (!(o->cm >= 0.0) || !isfinite(o->cm))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: cm = %g uF/cm^2 must be >= 0", o->cm);
    }
    if (o->rule == NS_NSEG_FIXED_LENGTH && (!(o->max_length > 0.0) || !isfinite(o->max_length)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "discretise: max_length = %g um must be > 0", o->max_length);
    return NS_OK;
}

/* NEURON's full node set before the junction policy. */
typedef struct full_nodes {
    int32_t n;
    int32_t *parent;
    double *area, *diam, *ri, *x; /* [um^2], [um], [MOhm], position */
    int32_t *section;
    unsigned char *junction;
    int32_t *end_node, *at0_node; /* per section: its x = 1 node; the node it hangs from */
    double *seg;                  /* 6 per node: the 3-D start and end points (ns_cell_segments) */
} full_nodes;

static void full_free(full_nodes *f) {
    free(f->parent); free(f->area); free(f->diam); free(f->ri); free(f->x);
    free(f->section); free(f->junction); free(f->end_node); free(f->at0_node); free(f->seg);
}

/* The 3-D point at normalised arc position u in [0, 1] along a section's
 * points (NEURON's x3d/y3d/z3d interpolated linearly in arc3d / L, as
 * LFPy's np.interp over the section's points). */
static void point_at(const disc_section *s, const disc_pt3d *pts, double u, double *out) {
    const disc_pt3d *p = pts + s->pt_begin;
    const int32_t n = s->n3d;
    const double L = p[n - 1].arc;
    if (n < 2 || !(L > 0.0) || u <= 0.0) {
        out[0] = p[0].x, out[1] = p[0].y, out[2] = p[0].z;
        return;
    }
    const double a = u * L;
    int32_t k = 0;
    while (k < n - 2 && p[k + 1].arc < a) ++k;
    const double span = p[k + 1].arc - p[k].arc;
    double w = span > 0.0 ? (a - p[k].arc) / span : 1.0;
    if (w > 1.0) w = 1.0;
    out[0] = p[k].x + w * (p[k + 1].x - p[k].x);
    out[1] = p[k].y + w * (p[k + 1].y - p[k].y);
    out[2] = p[k].z + w * (p[k + 1].z - p[k].z);
}

static ns_status build_full(const disc_sections *S, const ns_discretize_options *o, full_nodes *f,
                            ns_section_info *info, const ns_morph_point *pts) {
    int64_t total = 1, maxseg = 1;
    for (int32_t k = 0; k < S->n; ++k) {
        total += S->sec[k].nseg + 1;
        if (S->sec[k].nseg > maxseg) maxseg = S->sec[k].nseg;
    }
    if (total > INT32_MAX / 2) return ns_fail(NS_ERR_SIZE, "discretise: %lld compartments", (long long)total);
    size_t n = (size_t)total;
    f->n = (int32_t)total;
    double *area, *rhalf;
    const ns_array_spec arrays[] = {
        NS_ARRAY(f->parent, n),   NS_ARRAY(f->area, n),        NS_ARRAY(f->diam, n),
        NS_ARRAY(f->ri, n),       NS_ARRAY(f->x, n),           NS_ARRAY(f->section, n),
        NS_ARRAY(f->junction, n), NS_ARRAY(f->end_node, S->n), NS_ARRAY(f->at0_node, S->n),
        NS_ARRAY(f->seg, n * 6),  NS_ARRAY(area, maxseg * 2),  NS_ARRAY(rhalf, maxseg * 2)};
    if (!ns_alloc_arrays(arrays, sizeof arrays / sizeof *arrays)) {
        free(area);
        free(rhalf);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "discretise: %lld nodes", (long long)total);
    }
    double *diam = area + maxseg;
    f->parent[0] = -1;
    f->area[0] = f->diam[0] = 0.0;
    f->ri[0] = 0.0;
    f->x[0] = 0.0;
    f->section[0] = 0;
    f->junction[0] = 1;
    if (S->n > 0) {
        point_at(&S->sec[0], S->pts, 0.0, f->seg);
        memcpy(f->seg + 3, f->seg, 3 * sizeof *f->seg);
    }
    int32_t next = 1;
    for (int32_t k = 0; k < S->n; ++k) {
        const disc_section *s = &S->sec[k];
        int32_t hang; /* the node this section's first segment hangs from */
        if (s->parent < 0) {
            hang = 0;
        } else {
            const disc_section *ps = &S->sec[s->parent];
            if (s->parent_x >= 1.0) {
                hang = f->end_node[s->parent];
            } else if (s->parent_x <= 0.0) {
                hang = f->at0_node[s->parent];
            } else {
                int32_t j = (int32_t)(s->parent_x * ps->nseg);
                if (j > ps->nseg - 1) j = ps->nseg - 1;
                hang = info[s->parent].first_node + j;
            }
        }
        f->at0_node[k] = hang;
        disc_segments(s, S->pts, area, diam, rhalf);
        ns_section_info *si = &info[k];
        si->parent = s->parent;
        si->parent_x = s->parent_x;
        si->type = s->type;
        si->nseg = s->nseg;
        si->Ra = s->Ra;
        si->first_node = next;
        si->length = s->length;
        si->n3d = s->n3d;
        si->first_point_id = pts[s->first].id;
        si->last_point_id = pts[s->last].id;
        si->area = 0.0;
        si->ri_sum = 0.0;
        for (int32_t j = 0; j < s->nseg; ++j) {
            int32_t v = next++;
            f->parent[v] = j == 0 ? hang : v - 1;
            f->area[v] = area[j];
            f->diam[v] = diam[j];
            f->ri[v] = (j == 0 ? 0.0 : rhalf[2 * j - 1]) + rhalf[2 * j];
            f->x[v] = (j + 0.5) / s->nseg;
            f->section[v] = k;
            f->junction[v] = 0;
            point_at(s, S->pts, (double)j / s->nseg, f->seg + 6 * (size_t)v);
            point_at(s, S->pts, (double)(j + 1) / s->nseg, f->seg + 6 * (size_t)v + 3);
            si->area += area[j];
        }
        for (int32_t h = 0; h < 2 * s->nseg; ++h) si->ri_sum += rhalf[h];
        int32_t e = next++;
        f->parent[e] = e - 1;
        f->area[e] = f->diam[e] = 0.0;
        f->ri[e] = rhalf[2 * s->nseg - 1];
        f->x[e] = 1.0;
        f->section[e] = k;
        f->junction[e] = 1;
        f->end_node[k] = e;
        point_at(s, S->pts, 1.0, f->seg + 6 * (size_t)e);
        memcpy(f->seg + 6 * (size_t)e + 3, f->seg + 6 * (size_t)e, 3 * sizeof *f->seg);
    }
    free(area);
    free(rhalf);
    return NS_OK;
}

/* The minimal policy: a zero-area node with at most two neighbours is two
 * resistances in series (no membrane current flows there), so it can be
 * folded into its child exactly. keep[] receives the decision; parent[]
 * and ri[] are updated in place. */
static ns_status fold_junctions(full_nodes *f, unsigned char *keep) {
    int32_t n = f->n;
    int32_t *count = calloc((size_t)n, sizeof *count);
    int32_t *c1 = malloc((size_t)n * sizeof *c1);
    int32_t *c2 = malloc((size_t)n * sizeof *c2);
    if (!count || !c1 || !c2) {
        free(count); free(c1); free(c2);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "discretise: %d nodes", (int)n);
    }
    for (int32_t i = 1; i < n; ++i) {
        int32_t p = f->parent[i];
        if (count[p] == 0) c1[p] = i;
        else if (count[p] == 1) c2[p] = i;
        count[p]++;
    }
    for (int32_t i = 0; i < n; ++i) {
        keep[i] = 1;
        if (!f->junction[i]) continue;
        if (f->parent[i] < 0) { /* the root's x = 0 node */
            if (count[i] == 1) {
                keep[i] = 0;
                f->parent[c1[i]] = -1;
                f->ri[c1[i]] = 0.0;
            } else if (count[i] == 2) {
                keep[i] = 0;
                f->parent[c1[i]] = -1;
                f->parent[c2[i]] = c1[i];
                f->ri[c2[i]] += f->ri[c1[i]];
                f->ri[c1[i]] = 0.0;
            }
        } else if (count[i] == 0) {
            keep[i] = 0;
        } else if (count[i] == 1) {
            keep[i] = 0;
            f->parent[c1[i]] = f->parent[i];
            f->ri[c1[i]] += f->ri[i];
        }
    }
    free(count); free(c1); free(c2);
    return NS_OK;
}

static ns_status assemble(ns_cell_t *c, full_nodes *f, const unsigned char *keep) {
    int32_t n = f->n, m = 0;
    int32_t *newidx = malloc((size_t)n * sizeof *newidx);
    if (!newidx) return ns_fail(NS_ERR_OUT_OF_MEMORY, "discretise: %d nodes", (int)n);
    for (int32_t i = 0; i < n; ++i) newidx[i] = keep[i] ? m++ : -1;
    size_t sz = (size_t)m;
    int32_t *parent;
    const ns_array_spec arrays[] = {NS_ARRAY(parent, sz),     NS_ARRAY(c->area, sz),    NS_ARRAY(c->diam, sz),
                                    NS_ARRAY(c->g_axial, sz), NS_ARRAY(c->type, sz),    NS_ARRAY(c->section, sz),
                                    NS_ARRAY(c->x, sz),       NS_ARRAY(c->seg, sz * 6)};
    if (!ns_alloc_arrays(arrays, sizeof arrays / sizeof *arrays)) {
        free(newidx);
        free(parent);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "discretise: %d compartments", (int)m);
    }
    for (int32_t i = 0; i < n; ++i) {
        int32_t v = newidx[i];
        if (v < 0) continue;
        int32_t p = f->parent[i];
        parent[v] = p < 0 ? -1 : newidx[p];
        c->area[v] = f->area[i];
        c->diam[v] = f->diam[i];
        c->g_axial[v] = p < 0 ? 0.0 : 1.0 / f->ri[i]; /* [uS] = 1/[MOhm] */
        c->section[v] = f->section[i];
        c->type[v] = c->sections[f->section[i]].type;
        c->x[v] = f->x[i];
        memcpy(c->seg + 6 * (size_t)v, f->seg + 6 * (size_t)i, 6 * sizeof *c->seg);
    }
    for (int32_t k = 0; k < c->n_sections; ++k)
        c->sections[k].first_node = newidx[c->sections[k].first_node];
    free(newidx);
    ns_status st = ns_tree_create(m, parent, &c->tree);
    free(parent);
    if (st != NS_OK) ns_error_prefix("discretise: internal numbering");
    return st;
}

static void fill_info(ns_cell_t *c) {
    ns_cell_info *in = &c->info;
    in->compartments = ns_tree_size(c->tree);
    in->sections = c->n_sections;
    in->total_area = 0.0;
    in->total_length = 0.0;
    in->branch_depth = 0;
    for (int32_t i = 0; i < in->compartments; ++i) in->total_area += c->area[i];
    int32_t *depth = malloc((size_t)c->n_sections * sizeof *depth);
    for (int32_t k = 0; k < c->n_sections; ++k) {
        in->total_length += c->sections[k].length;
        if (!depth) continue;
        int32_t p = c->sections[k].parent;
        depth[k] = p < 0 ? 1 : depth[p] + 1;
        if (depth[k] > in->branch_depth) in->branch_depth = depth[k];
    }
    free(depth);
}

/* Areas and conductances from finite points can still overflow (radii near
 * 1e154 make y1 * y2 infinite, a conductance 1 / 0), and so can the cable
 * matrix's rows, 1e2 g / A with the node's and its parent's area (a
 * conductance near DBL_MAX over a small area: radii near 1e153 over a short
 * neurite, found by fuzz_swc); name the section. */
static ns_status check_geometry(const ns_cell_t *c, const disc_sections *S, const ns_morph_t *morph) {
    const int32_t *parent = ns_tree_parent(c->tree);
    for (int32_t v = 0; v < c->info.compartments; ++v) {
        const double g = c->g_axial[v], A = c->area[v] > 0.0 ? c->area[v] : JUNCTION_AREA;
        const double Ap = v > 0 && c->area[parent[v]] > 0.0 ? c->area[parent[v]] : JUNCTION_AREA;
        if (isfinite(c->area[v]) && c->area[v] >= 0.0 && isfinite(g) && g >= 0.0 && isfinite(1e2 * g / A) &&
            isfinite(1e2 * g / Ap))
            continue;
        const int32_t k = c->section[v];
        const ns_morph_point *p = &morph->points[S->sec[k].first];
        return ns_fail(NS_ERR_NOT_FINITE,
                       "%s:%lld: section %d (SWC ids %lld-%lld): compartment %d has area %g um^2 and axial "
                       "conductance %g uS: the radii or coordinates are out of range",
                       morph->name, (long long)p->line, (int)k, (long long)p->id,
                       (long long)morph->points[S->sec[k].last].id, (int)v, c->area[v], c->g_axial[v]);
    }
    if (!isfinite(c->info.total_area) || !isfinite(c->info.total_length))
        return ns_fail(NS_ERR_NOT_FINITE, "%s: total length %g um and area %g um^2: the sum overflows a double",
                       morph->name, c->info.total_length, c->info.total_area);
    return NS_OK;
}

ns_status ns_discretize(const ns_morph_t *morph, const ns_discretize_options *options,
                        ns_cell_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_discretize: out is NULL");
    *out = NULL;
    if (!morph) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_discretize: morphology is NULL");
    ns_discretize_options o;
    if (options) o = *options;
    else ns_discretize_options_init(&o);
    ns_status st = check_options(&o);
    if (st != NS_OK) return st;

    disc_sections S;
    st = disc_build_sections(morph->points, morph->n_points, morph->name, &S);
    if (st != NS_OK) return st;
    for (int32_t k = 0; k < S.n; ++k) {
        S.sec[k].Ra = o.Ra;
        S.sec[k].cm = o.cm;
        S.sec[k].nseg = 0;
    }
    if (o.sections) {
        st = disc_apply_spec(&S, morph->points, o.sections, o.sections_length, o.sections_name);
        if (st != NS_OK) {
            disc_sections_free(&S);
            return st;
        }
    }
    for (int32_t k = 0; k < S.n; ++k)
        if (S.sec[k].nseg == 0) S.sec[k].nseg = disc_nseg(&S.sec[k], S.pts, &o);
    disc_define_shape(&S);

    ns_cell_t *c = calloc(1, sizeof *c);
    full_nodes f;
    memset(&f, 0, sizeof f);
    unsigned char *keep = NULL;
    if (!c || !(c->sections = calloc((size_t)S.n, sizeof *c->sections))) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: cell of %d sections", morph->name, (int)S.n);
        goto fail;
    }
    c->n_sections = S.n;
    st = build_full(&S, &o, &f, c->sections, morph->points);
    if (st != NS_OK) goto fail;
    keep = malloc((size_t)f.n);
    if (!keep) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %d nodes", morph->name, (int)f.n);
        goto fail;
    }
    if (o.junctions == NS_JUNCTIONS_MINIMAL) {
        st = fold_junctions(&f, keep);
        if (st != NS_OK) goto fail;
    } else {
        memset(keep, 1, (size_t)f.n);
    }
    st = assemble(c, &f, keep);
    if (st != NS_OK) goto fail;
    fill_info(c);
    st = check_geometry(c, &S, morph);
    if (st != NS_OK) goto fail;
    free(keep);
    full_free(&f);
    disc_sections_free(&S);
    *out = c;
    return NS_OK;
fail:
    free(keep);
    full_free(&f);
    disc_sections_free(&S);
    ns_cell_destroy(c);
    return st;
}

void ns_cell_destroy(ns_cell_t *cell) {
    if (!cell) return;
    ns_tree_destroy(cell->tree);
    free(cell->area);
    free(cell->diam);
    free(cell->g_axial);
    free(cell->type);
    free(cell->section);
    free(cell->x);
    free(cell->seg);
    free(cell->sections);
    free(cell);
}

void ns_cell_get_info(const ns_cell_t *cell, ns_cell_info *info) {
    if (!info) return;
    if (!cell) {
        memset(info, 0, sizeof *info);
        return;
    }
    *info = cell->info;
}

ns_status ns_cell_get_section(const ns_cell_t *cell, int32_t section, ns_section_info *info) {
    if (!cell || !info) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_get_section: NULL argument");
    if (section < 0 || section >= cell->n_sections)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_get_section: section %d out of range [0, %d)",
                       (int)section, (int)cell->n_sections);
    *info = cell->sections[section];
    return NS_OK;
}

const ns_tree_t *ns_cell_tree(const ns_cell_t *cell) { return cell ? cell->tree : NULL; }
const double *ns_cell_area(const ns_cell_t *cell) { return cell ? cell->area : NULL; }
const double *ns_cell_diam(const ns_cell_t *cell) { return cell ? cell->diam : NULL; }
const double *ns_cell_axial_conductance(const ns_cell_t *cell) { return cell ? cell->g_axial : NULL; }
const int32_t *ns_cell_type(const ns_cell_t *cell) { return cell ? cell->type : NULL; }
const int32_t *ns_cell_section(const ns_cell_t *cell) { return cell ? cell->section : NULL; }
const double *ns_cell_position(const ns_cell_t *cell) { return cell ? cell->x : NULL; }
const double *ns_cell_segments(const ns_cell_t *cell) { return cell ? cell->seg : NULL; }
