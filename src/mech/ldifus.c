/* LONGITUDINAL_DIFFUSION (ns_mech_desc.ldifus_*, ABI 8): NEURON's ldifus.cpp
 * `stagger`, the fixed step's implicit diffusion of a KINETIC state between
 * neighbouring segments, after every mechanism's states (fadvance.cpp's
 * nonvint: the states, then long_difus_solve).
 *
 * Per mechanism, per diffusing state element j, per cell: over the nodes
 * where the mechanism is inserted, in node order, each with its parent among
 * them (NEURON's longdifusalloc: the node's parent; past a zero-area node its
 * parent; failing that the first segment of the parent section), with
 *   af = 2 / dxp / (dxc + dxp),  bf = 2 / dxc / (dxc + dxp)
 * (dx: the section's L / nseg, c the node's, p its parent's; NEURON's
 * rallbranch is 1 here), dc and vol the statement's flux coefficient and the
 * COMPARTMENT volume at each node (ldifus_coef), and
 *   a[i] = -af dcm / vol[p],  b[i] = -bf dcm / vol[i],  dcm = (dc[i] + dc[p]) / 2
 *   d[i] = 1/dt - b[i] - sum over children c of a[c],  rhs[i] = x[i] / dt
 * solved on the tree (src/hines, ns_hines_solve_one, NEURON's triang and
 * bksub) into the new x. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neurosolve/hines.h"
#include "mech/blocks_impl.h"
#include "core/error.h"

struct ldifus_plan {
    int32_t n;        /* instances per lane */
    int32_t *slot;    /* n + 1: slot[1 + i] the block slot of the i-th instance in node order (0: the root) */
    int32_t *parent;  /* n + 1: the parent of 1 + i in that order, 0 (the virtual root) for none */
    double *af, *bf;  /* n + 1 */
    double *a, *b, *d, *rhs; /* n + 1 each: one lane's system */
    double *dc, *vol; /* one per instance of the block (lane-interleaved, as the fields) */
};

static ns_status cell_geometry(const ns_cell_t *cell, double **dx_out, int32_t **par_out) {
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    const int32_t n = info.compartments;
    const double *area = ns_cell_area(cell);
    const int32_t *sec = ns_cell_section(cell);
    const int32_t *parent = ns_tree_parent(ns_cell_tree(cell));
    double *dx = malloc((size_t)(n > 0 ? n : 1) * sizeof *dx);
    int32_t *par = malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *par);
    if (!dx || !par) {
        free(dx);
        free(par);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "model: LONGITUDINAL_DIFFUSION geometry");
    }
    for (int32_t i = 0; i < n; ++i) {
        ns_section_info si, ps;
        if (ns_cell_get_section(cell, sec[i], &si) != NS_OK) {
            free(dx);
            free(par);
            return ns_fail(NS_ERR_INTERNAL, "model: compartment %d names section %d, which the cell lacks", (int)i,
                           (int)sec[i]);
        }
        dx[i] = area[i] > 0.0 ? si.length / (double)si.nseg : 0.0;
        par[i] = parent[i];
        par[n + i] = si.parent >= 0 && ns_cell_get_section(cell, si.parent, &ps) == NS_OK ? ps.first_node : -1;
    }
    *dx_out = dx;
    *par_out = par;
    return NS_OK;
}

ns_status ns_ldifus_geometry(sim_model *r, const ns_cell_t *const *cells) {
    int ldifus = 0;
    for (int32_t m = 0; m < r->n_mechs; ++m) ldifus |= r->mechs[m].desc->n_ldifus > 0;
    if (!ldifus) return NS_OK;
    r->ldx = calloc((size_t)(r->n_shapes > 0 ? r->n_shapes : 1), sizeof *r->ldx);
    r->lpar = calloc((size_t)(r->n_shapes > 0 ? r->n_shapes : 1), sizeof *r->lpar);
    if (!r->ldx || !r->lpar) return ns_fail(NS_ERR_OUT_OF_MEMORY, "model: LONGITUDINAL_DIFFUSION geometry");
    ns_status st = NS_OK;
    for (int32_t k = 0; k < r->n_shapes && st == NS_OK; ++k) st = cell_geometry(cells[k], &r->ldx[k], &r->lpar[k]);
    return st;
}

/* NEURON's longdifusalloc: the parent (among the instances, map: node -> instance or -1) of node i */
static int32_t plan_parent(const int32_t *par, int32_t n, const int32_t *map, int32_t i) {
    const int32_t p = par[i];
    if (p < 0) return -1;
    if (map[p] >= 0) return map[p];
    const int32_t pp = par[p]; /* past a zero-area node */
    const int32_t first = par[n + i];
    if (pp >= 0 && map[pp] >= 0) return map[pp];
    return first >= 0 ? map[first] : -1;
}

void ns_ldifus_plan_free(ldifus_plan *pl) {
    if (!pl) return;
    free(pl->slot);
    free(pl->parent);
    free(pl->af);
    free(pl->bf);
    free(pl->a);
    free(pl->dc);
    free(pl);
}

ldifus_plan *ns_ldifus_plan_create(const sim_model *model, const model_block *b, int32_t k, int32_t shape,
                                   int32_t n_nodes, int32_t w) {
    const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + k];
    const int32_t n = ms->n;
    const size_t m = (size_t)n + 1, cnt = (size_t)(n > 0 ? n : 1) * (size_t)w;
    ldifus_plan *pl = calloc(1, sizeof *pl);
    int32_t *map = malloc((size_t)(n_nodes > 0 ? n_nodes : 1) * sizeof *map);
    if (pl) {
        pl->n = n;
        pl->slot = malloc(m * sizeof *pl->slot);
        pl->parent = malloc(m * sizeof *pl->parent);
        pl->af = calloc(m, sizeof *pl->af);
        pl->bf = calloc(m, sizeof *pl->bf);
        pl->a = malloc(4 * m * sizeof *pl->a);
        pl->dc = malloc(2 * cnt * sizeof *pl->dc);
    }
    if (!pl || !map || !pl->slot || !pl->parent || !pl->af || !pl->bf || !pl->a || !pl->dc) {
        free(map);
        ns_ldifus_plan_free(pl);
        return NULL;
    }
    pl->b = pl->a + m;
    pl->d = pl->b + m;
    pl->rhs = pl->d + m;
    pl->vol = pl->dc + cnt;
    const double *dx = model->ldx[shape];
    const int32_t *par = model->lpar[shape];
    for (int32_t i = 0; i < n_nodes; ++i) map[i] = -1;
    for (int32_t i = 0; i < n; ++i) map[ms->node[i]] = i; /* ms->node ascends: node order */
    pl->slot[0] = -1;
    pl->parent[0] = -1;
    for (int32_t i = 0; i < n; ++i) {
        const int32_t node = ms->node[i], p = plan_parent(par, n_nodes, map, node);
        pl->slot[1 + i] = ns_model_block_slot(b, k, i);
        pl->parent[1 + i] = p + 1;
        if (p >= 0) {
            const double dxc = dx[node], dxp = dx[ms->node[p]];
            pl->af[1 + i] = 2.0 / dxp / (dxc + dxp);
            pl->bf[1 + i] = 2.0 / dxc / (dxc + dxp);
        }
    }
    free(map);
    return pl;
}

/* one lane's system for state x (NEURON's stagger), solved into x; 0, or -1 at a bad pivot */
static int solve_lane(ldifus_plan *pl, int32_t w, int32_t lane, double *x, double dt) {
    const int32_t m = pl->n + 1;
    double *a = pl->a, *b = pl->b, *d = pl->d, *rhs = pl->rhs;
    a[0] = b[0] = 0.0;
    d[0] = 1.0; /* the virtual root: uncoupled (a = b = 0), so the cells' roots solve as NEURON's pindex -1 */
    rhs[0] = 0.0;
    for (int32_t i = 1; i < m; ++i) {
        const int32_t q = pl->slot[i] * w + lane, p = pl->parent[i];
        d[i] = 0.0;
        a[i] = b[i] = 0.0;
        if (p > 0) {
            const int32_t qp = pl->slot[p] * w + lane;
            const double dcm = (pl->dc[q] + pl->dc[qp]) / 2.;
            a[i] = -pl->af[i] * dcm / pl->vol[qp];
            b[i] = -pl->bf[i] * dcm / pl->vol[q];
        }
    }
    for (int32_t i = 1; i < m; ++i) {
        const int32_t q = pl->slot[i] * w + lane, p = pl->parent[i];
        d[i] += 1. / dt;
        rhs[i] = x[q] / dt;
        if (p > 0) {
            d[i] -= b[i];
            d[p] -= a[i];
        }
    }
    if (ns_hines_solve_one(m, pl->parent, a, b, d, rhs) >= 0) return -1;
    for (int32_t i = 1; i < m; ++i) x[pl->slot[i] * w + lane] = rhs[i];
    return 0;
}

/* The ion whose internal concentration the diffusing field f is (a STATE `nai` of a mechanism that
 * WRITEs nai: nadifl.mod), or -1. Such a state is the mechanism's copy of the ion's value, which
 * its next state() reads back from the ion (nocmodl's `nai = _ion_nai`), so the diffusion must reach
 * the ion, as NEURON's reaches the ion's nai. */
static int ion_of(const ns_mech_desc *d, int f) {
    const char *name = d->field_names[f];
    for (int u = 0; u < d->n_ions; ++u) {
        const size_t n = strlen(d->ions[u].name);
        if ((d->ions[u].flags & NS_MECH_ION_WRITE_CI) && !strncmp(name, d->ions[u].name, n) && name[n] == 'i' &&
            !name[n + 1])
            return u;
    }
    return -1;
}

/* the new x of ion u's concentration field into the ion's ci at each instance's slot (NSM_ION) */
static void to_ion(const ns_mech_ppack *p, int u, const ldifus_plan *pl, int32_t w, int32_t lane, const double *x) {
    const ns_mech_ion_view *iv = &p->ion[u];
    for (int32_t i = 1; i <= pl->n; ++i) {
        const int32_t q = pl->slot[i] * w + lane;
        const int node = p->node_index ? p->node_index[q] : p->node_begin + q;
        iv->ci[p->node_index && iv->index ? iv->index[q] : node] = x[q];
    }
}

void ns_ldifus_step(model_block *b, int32_t w, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < b->n_mechs && !b->err.set; ++k) {
        mech_block *mb = &b->m[k];
        ldifus_plan *pl = mb->ld;
        if (!pl || pl->n == 0) continue;
        const ns_mech_desc *d = mb->desc;
        ns_mech_ppack *p = ns_model_block_bind(b, k, 2, v, t, dt, celsius);
        for (int j = 0; j < d->n_ldifus && !b->err.set; ++j) {
            d->ldifus_coef(p, j, pl->dc, pl->vol);
            const int u = ion_of(d, d->ldifus_field[j]);
            for (int32_t lane = 0; lane < w; ++lane) {
                if (solve_lane(pl, w, lane, mb->field[d->ldifus_field[j]], dt) == 0) {
                    if (u >= 0) to_ion(p, u, pl, w, lane, mb->field[d->ldifus_field[j]]);
                    continue;
                }
                b->err.set = 1;
                snprintf(b->err.mech, sizeof b->err.mech, "%s", d->name);
                snprintf(b->err.file, sizeof b->err.file, "%s", "LONGITUDINAL_DIFFUSION");
                snprintf(b->err.msg, sizeof b->err.msg,
                         "the diffusion of %s has a zero or non-finite pivot (a zero or non-finite COMPARTMENT "
                         "volume or flux coefficient)", d->field_names[d->ldifus_field[j]]);
                break;
            }
        }
    }
}
