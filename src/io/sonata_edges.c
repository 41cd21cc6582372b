/* SONATA edges (docs/networks.md, "SONATA"): an edges entry of the config,
 * its HDF5 populations and CSV edge types, read into the network
 * description's connections and synapses (netfile_build.h's edge blocks). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "io/netfile_build.h"
#include "io/sonata_table.h"
#include "neurosolve/network.h"
#include "neurosolve/number.h"

#ifdef NS_HAVE_HDF5
#include "io/sonata_impl.h"

/* A synapse type of an edge type: BMTK's exp2syn/expsyn, or a point process by name. */
typedef struct mapped {
    char mech[NS_NETBUILD_NAME];
    int bmtk; /* 1 exp2syn, 2 expsyn, 0 a library's point process */
} mapped;

/* A dynamics parameter's name on the mechanism (BMTK's names for its two
 * built-ins: erev is e; expsyn's tau1 is tau). NULL: refused. */
static const char *param_name(const mapped *m, const char *key) {
    if (m->bmtk == 1) {
        if (!strcmp(key, "tau1") || !strcmp(key, "tau2")) return key;
        if (!strcmp(key, "erev")) return "e";
        return NULL;
    }
    if (m->bmtk == 2) {
        if (!strcmp(key, "tau1")) return "tau";
        if (!strcmp(key, "erev")) return "e";
        return NULL;
    }
    return key;
}

static ns_status syntype_of(reader *r, const ns_son_table *types, int64_t row, const char *csvpath,
                            ns_netbuild_syntype *out, mapped *m) {
    memset(out, 0, sizeof *out);
    memset(m, 0, sizeof *m);
    const int line = types->line[row];
    const long long id = (long long)types->id[row];
    const char *tpl = ns_son_table_get(types, row, ns_son_table_col(types, "model_template"));
    const char *dyn = ns_son_table_get(types, row, ns_son_table_col(types, "dynamics_params"));
    const char *wf = ns_son_table_get(types, row, ns_son_table_col(types, "weight_function"));
    if (!tpl) return ns_fail(NS_ERR_PARSE, "%s:%d: edge type %lld: no model_template (exp2syn, expsyn or a "
                             "POINT_PROCESS)", csvpath, line, id);
    if (wf && strcmp(wf, "wmax") != 0)
        return ns_fail(NS_ERR_UNSUPPORTED, "%s:%d: edge type %lld: weight_function '%s' is not applied (BMTK's Python "
                       "functions are not run): syn_weight is the weight", csvpath, line, id, wf);
    if (!strcmp(tpl, "exp2syn")) m->bmtk = 1, snprintf(m->mech, sizeof m->mech, "Exp2Syn");
    else if (!strcmp(tpl, "expsyn")) m->bmtk = 2, snprintf(m->mech, sizeof m->mech, "ExpSyn");
    else {
        size_t k = 0;
        while (tpl[k] && (isalnum((unsigned char)tpl[k]) || tpl[k] == '_')) ++k;
        if (tpl[k] || k == 0 || k >= NS_NETBUILD_NAME || isdigit((unsigned char)tpl[0]))
            return ns_fail(NS_ERR_PARSE, "%s:%d: edge type %lld: model_template '%s' is not a mechanism name", csvpath,
                           line, id, tpl);
        snprintf(m->mech, sizeof m->mech, "%s", tpl);
    }
    snprintf(out->mech, sizeof out->mech, "%s", m->mech);
    if (!dyn) return NS_OK;
    char path[SON_PATH];
    if (r->has_syn_dir && dyn[0] != '/') {
        if (!ns_son_join(path, sizeof path, r->syn_dir, dyn))
            return ns_fail(NS_ERR_PARSE, "%s:%d: edge type %lld: path too long", csvpath, line, id);
    } else {
        ns_status st = ns_son_resolve(&r->man, dyn, "dynamics_params", path, sizeof path);
        if (st != NS_OK) return st;
    }
    ns_json *j = NULL;
    ns_status st = ns_json_read(path, &j);
    if (st != NS_OK) {
        char where[SON_PATH + 80];
        snprintf(where, sizeof where, "%s:%d: edge type %lld: dynamics_params", csvpath, line, id);
        ns_error_prefix(where);
        return st;
    }
    if (j->kind != NS_JSON_OBJECT) st = ns_fail(NS_ERR_PARSE, "%s: not an object", path);
    out->name = calloc(j->n + 1, sizeof *out->name);
    out->value = calloc(j->n + 1, sizeof *out->value);
    if (st == NS_OK && (!out->name || !out->value)) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    for (size_t k = 0; k < j->n && st == NS_OK; ++k) {
        if (!strcmp(j->keys[k], "level_of_detail")) continue; /* BMTK's note of the model, a string */
        const char *pn = param_name(m, j->keys[k]);
        if (!pn)
            st = ns_fail(NS_ERR_UNSUPPORTED, "%s: \"%s\" (line %d): BMTK's %s reads tau1%s and erev only", path,
                         j->keys[k], j->items[k].line, tpl, m->bmtk == 1 ? ", tau2" : "");
        else if (j->items[k].kind != NS_JSON_NUMBER)
            st = ns_fail(NS_ERR_PARSE, "%s: \"%s\" (line %d) is %s, not a number", path, j->keys[k], j->items[k].line,
                         ns_json_kind_name(j->items[k].kind));
        else if (strlen(pn) >= NS_NETBUILD_NAME)
            st = ns_fail(NS_ERR_PARSE, "%s: \"%s\": name too long", path, j->keys[k]);
        else {
            snprintf(out->name[out->n_params], NS_NETBUILD_NAME, "%s", pn);
            out->value[out->n_params++] = j->items[k].number;
        }
    }
    ns_json_free(j);
    return st;
}

/* The edge types of an edges entry: the CSV table, and each type's synapse,
 * weight and delay (NaN: not in the table). */
typedef struct edge_types {
    reader *r;
    char h5path[SON_PATH], csvpath[SON_PATH];
    ns_son_table types;
    ns_netbuild_syntype *syn;
    mapped *maps;
    double *tw, *td;
} edge_types;

/* Every type's synapse, weight and delay, checked before any edge. */
static ns_status edge_types_read(reader *r, edge_types *et) {
    const ns_son_table *types = &et->types;
    const size_t rows = (size_t)(types->nrow + 1);
    et->syn = calloc(rows, sizeof *et->syn);
    et->maps = calloc(rows, sizeof *et->maps);
    et->tw = malloc(rows * sizeof *et->tw);
    et->td = malloc(rows * sizeof *et->td);
    ns_status st = NS_OK;
    if (!et->syn || !et->maps || !et->tw || !et->td) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", et->csvpath);
    const int c_w = ns_son_table_col(types, "syn_weight"), c_d = ns_son_table_col(types, "delay");
    for (int64_t row = 0; row < types->nrow && st == NS_OK; ++row) {
        st = syntype_of(r, types, row, et->csvpath, &et->syn[row], &et->maps[row]);
        const char *sv[2] = {ns_son_table_get(types, row, c_w), ns_son_table_get(types, row, c_d)};
        double *dst[2] = {&et->tw[row], &et->td[row]};
        for (int k = 0; k < 2 && st == NS_OK; ++k) {
            *dst[k] = NAN;
            if (!sv[k]) continue;
            if ((st = ns_number_parse(sv[k], -HUGE_VAL, HUGE_VAL, dst[k])) != NS_OK) {
                char pre[SON_PATH + 160];
                snprintf(pre, sizeof pre, "%s:%d: edge type %lld: %s", et->csvpath, types->line[row],
                         (long long)types->id[row], k ? "delay" : "syn_weight");
                ns_error_prefix(pre);
            }
        }
    }
    return st;
}

static void edge_types_free(edge_types *et) {
    for (int64_t row = 0; et->syn && row < et->types.nrow; ++row) {
        free(et->syn[row].name);
        free(et->syn[row].value);
    }
    free(et->syn);
    free(et->maps);
    free(et->tw);
    free(et->td);
    ns_son_table_free(&et->types);
}

/* The datasets of an edge population, one entry per edge. */
typedef struct edge_ids {
    int64_t *src, *tgt, *tid, *gid, *gix;
    int64_t n;
} edge_ids;

/* The five datasets of one length; errors name `where`. */
static ns_status edge_ids_read(hid_t g, const char *where, edge_ids *ids) {
    static const char *const dsn[5] = {"source_node_id", "target_node_id", "edge_type_id", "edge_group_id",
                                       "edge_group_index"};
    int64_t **dst[5] = {&ids->src, &ids->tgt, &ids->tid, &ids->gid, &ids->gix}, n[5] = {0};
    ns_status st = NS_OK;
    for (int w = 0; w < 5 && st == NS_OK; ++w) st = ns_son_h5_read(g, dsn[w], where, 1, (void **)dst[w], &n[w]);
    for (int w = 1; w < 5 && st == NS_OK; ++w)
        if (n[w] != n[0])
            st = ns_fail(NS_ERR_PARSE, "%s: %s has %lld entries, source_node_id %lld", where, dsn[w], (long long)n[w],
                         (long long)n[0]);
    ids->n = n[0];
    return st;
}

static void edge_ids_free(edge_ids *ids) {
    int64_t *v[5] = {ids->src, ids->tgt, ids->tid, ids->gid, ids->gix};
    for (int k = 0; k < 5; ++k) free(v[k]);
}

/* The node populations of the sources and targets (the node_population attributes of their datasets). */
static ns_status edge_populations(reader *r, hid_t g, const char *where, pop **sp, pop **tp) {
    static const char *const dsn[2] = {"source_node_id", "target_node_id"};
    char pop_name[2][256] = {"", ""};
    ns_status st = NS_OK;
    for (int k = 0; k < 2 && st == NS_OK; ++k) {
        char w2[SON_PATH + 340];
        snprintf(w2, sizeof w2, "%s/%s", where, dsn[k]);
        hid_t ds = H5Dopen2(g, dsn[k], H5P_DEFAULT);
        st = ns_son_h5_attr_string(ds, "node_population", w2, pop_name[k], sizeof pop_name[k]);
        H5Dclose(ds);
    }
    pop **found[2] = {sp, tp};
    for (int k = 0; k < 2 && st == NS_OK; ++k)
        if (!(*found[k] = ns_son_find_pop(r, pop_name[k])))
            st = ns_fail(NS_ERR_PARSE, "%s/%s: node_population '%s' is not a node population of the network", where,
                         dsn[k], pop_name[k]);
    return st;
}

/* The block's label (the end of a long path: the population stays readable) and arrays of n edges. */
static ns_status edges_alloc(ns_netbuild_edges *e, const char *where, int64_t ne) {
    const size_t wl = strlen(where);
    const char *tail = wl >= sizeof e->label ? where + wl - (sizeof e->label - 4) : where;
    memcpy(e->label, wl >= sizeof e->label ? "..." : "", wl >= sizeof e->label ? 3 : 0);
    memcpy(e->label + (wl >= sizeof e->label ? 3 : 0), tail, strlen(tail) + 1);
    e->n = ne;
    const size_t m = (size_t)(ne > 0 ? ne : 1);
    e->src = malloc(m * 8), e->cell = malloc(m * 8), e->node = malloc(m * 8);
    e->section = malloc(m * 4), e->type = malloc(m * 4);
    e->x = malloc(m * 8), e->weight = malloc(m * 8), e->delay = malloc(m * 8);
    if (!e->src || !e->cell || !e->node || !e->section || !e->type || !e->x || !e->weight || !e->delay)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
    return NS_OK;
}

/* An edge group: its datasets, read once each. */
typedef struct egroup {
    int64_t id, len;
    double *w, *d, *x, *nsyns;
    int64_t *sec;
    int n_pp;
    char (*pp_name)[NS_NETBUILD_NAME];
    double **pp;
} egroup;

static void groups_free(egroup *groups, int n_groups) {
    for (int gi = 0; gi < n_groups; ++gi) {
        free(groups[gi].w);
        free(groups[gi].d);
        free(groups[gi].x);
        free(groups[gi].nsyns);
        free(groups[gi].sec);
        for (int w = 0; w < groups[gi].n_pp; ++w) free(groups[gi].pp[w]);
        free(groups[gi].pp);
        free(groups[gi].pp_name);
    }
    free(groups);
}

/* The group of an id (one of them: read_groups read every group an edge names). */
static const egroup *group_of(const egroup *groups, int n_groups, int64_t id) {
    int gi = 0;
    while (gi < n_groups && groups[gi].id != id) ++gi;
    return &groups[gi];
}

/* A group's per-edge dynamics parameters (its dynamics_params group), as long as its other datasets. */
static ns_status group_dynamics_read(hid_t gg, const char *gw, egroup *eg) {
    hid_t dg = H5Gopen2(gg, "dynamics_params", H5P_DEFAULT);
    char **dn = NULL;
    int ndn = 0;
    char dw[SON_PATH + 400];
    snprintf(dw, sizeof dw, "%s/dynamics_params", gw);
    ns_status st = ns_son_h5_members(dg, dw, &dn, &ndn);
    eg->pp_name = calloc((size_t)ndn + 1, sizeof *eg->pp_name);
    eg->pp = calloc((size_t)ndn + 1, sizeof *eg->pp);
    if (st == NS_OK && (!eg->pp_name || !eg->pp)) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", dw);
    for (int w = 0; w < ndn && st == NS_OK; ++w) {
        int64_t len;
        if (strlen(dn[w]) >= NS_NETBUILD_NAME) {
            st = ns_fail(NS_ERR_PARSE, "%s/%s: name too long", dw, dn[w]);
            break;
        }
        st = ns_son_h5_read(dg, dn[w], dw, 0, (void **)&eg->pp[w], &len);
        if (st == NS_OK && len != eg->len)
            st = ns_fail(NS_ERR_PARSE, "%s/%s has %lld entries, other datasets of the group %lld", dw, dn[w],
                         (long long)len, (long long)eg->len);
        snprintf(eg->pp_name[w], NS_NETBUILD_NAME, "%s", dn[w]);
        eg->n_pp = w + 1;
    }
    ns_son_free_names(dn, ndn);
    H5Gclose(dg);
    return st;
}

/* A group's datasets (gg: the group, gw: its place for messages). */
static ns_status group_read(hid_t gg, const char *gw, egroup *eg) {
    struct {
        const char *name, *alt;
        void **dst;
        int is_int;
    } want[5] = {{"syn_weight", NULL, (void **)&eg->w, 0},
                 {"delay", NULL, (void **)&eg->d, 0},
                 {"afferent_section_id", "sec_id", (void **)&eg->sec, 1},
                 {"afferent_section_pos", "sec_x", (void **)&eg->x, 0},
                 {"nsyns", NULL, (void **)&eg->nsyns, 0}};
    ns_status st = NS_OK;
    for (int w = 0; w < 5 && st == NS_OK; ++w) {
        const char *nm = ns_son_h5_exists(gg, want[w].name)                       ? want[w].name
                         : want[w].alt && ns_son_h5_exists(gg, want[w].alt) ? want[w].alt
                                                                              : NULL;
        if (!nm) continue;
        int64_t len;
        st = ns_son_h5_read(gg, nm, gw, want[w].is_int, want[w].dst, &len);
        if (st == NS_OK && eg->len >= 0 && len != eg->len)
            st = ns_fail(NS_ERR_PARSE, "%s/%s has %lld entries, other datasets of the group %lld", gw, nm,
                         (long long)len, (long long)eg->len);
        eg->len = len;
    }
    if (st == NS_OK && !eg->sec)
        st = ns_fail(NS_ERR_UNSUPPORTED,
                     "%s: no afferent_section_id (or sec_id): synapses placed at run time (BMTK's nsyns with "
                     "target_sections and distance_range) are not read",
                     gw);
    if (st == NS_OK && !eg->x)
        st = ns_fail(NS_ERR_PARSE, "%s: no afferent_section_pos (or sec_x) beside the section ids", gw);
    if (st == NS_OK && ns_son_is_group(gg, "dynamics_params")) st = group_dynamics_read(gg, gw, eg);
    return st;
}

/* Every group that an edge names, in the order of the edges (g: the population named name). */
static ns_status groups_read(hid_t g, const char *name, const char *where, const edge_ids *ids, egroup **groups,
                             int *n_groups) {
    ns_status st = NS_OK;
    for (int64_t q = 0; q < ids->n && st == NS_OK; ++q) {
        const int64_t id = ids->gid[q];
        int gi = 0;
        while (gi < *n_groups && (*groups)[gi].id != id) ++gi;
        if (gi < *n_groups) continue;
        char gname[32];
        snprintf(gname, sizeof gname, "%lld", (long long)id);
        if (id < 0 || !ns_son_is_group(g, gname))
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: edge_group_id %lld: no group %s/%s", where, (long long)q,
                           (long long)id, name, gname);
        egroup *ng = realloc(*groups, (size_t)(*n_groups + 1) * sizeof *ng);
        if (!ng) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
        *groups = ng;
        egroup *eg = &ng[(*n_groups)++];
        memset(eg, 0, sizeof *eg);
        eg->id = id;
        eg->len = -1;
        char gw[SON_PATH + 340];
        snprintf(gw, sizeof gw, "%s/%s", where, gname);
        hid_t gg = H5Gopen2(g, gname, H5P_DEFAULT);
        st = group_read(gg, gw, eg);
        H5Gclose(gg);
    }
    return st;
}

/* Each edge checked and put into the block: its source, target cell and
 * node, section, position, type, weight and delay. */
static ns_status edges_fill(const edge_types *et, const char *where, const edge_ids *ids, const egroup *groups,
                            int n_groups, const pop *sp, const pop *tp, ns_netbuild_edges *e) {
    const int64_t *src = ids->src, *tgt = ids->tgt;
    for (int64_t q = 0; q < ids->n; ++q) {
        const egroup *eg = group_of(groups, n_groups, ids->gid[q]);
        const int64_t row = ns_son_table_row(&et->types, ids->tid[q]);
        const int64_t ix = ids->gix[q];
        if (row < 0)
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: edge_type_id %lld is not in %s", where, (long long)q,
                           (long long)ids->tid[q], et->csvpath);
        if (ix < 0 || ix >= eg->len)
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: edge_group_index %lld is outside group %lld (%lld entries)",
                           where, (long long)q, (long long)ix, (long long)eg->id, (long long)eg->len);
        if (src[q] < 0 || src[q] >= sp->n)
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: source node %lld is outside population %s (%lld nodes)",
                           where, (long long)q, (long long)src[q], sp->name, (long long)sp->n);
        if (tgt[q] < 0 || tgt[q] >= tp->n)
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: target node %lld is outside population %s (%lld nodes)",
                           where, (long long)q, (long long)tgt[q], tp->name, (long long)tp->n);
        if (tp->kind[tgt[q]] != 1)
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: target node %lld of %s is virtual (no synapse there)", where,
                           (long long)q, (long long)tgt[q], tp->name);
        if (eg->nsyns && eg->nsyns[ix] != 1.0)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: edge %lld: nsyns %g: one synapse per edge only", where,
                           (long long)q, eg->nsyns[ix]);
        const double w = eg->w ? eg->w[ix] : et->tw[row], d = eg->d ? eg->d[ix] : et->td[row];
        if (isnan(w) || isnan(d))
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: no %s (a dataset of group %lld or a column of %s)", where,
                           (long long)q, isnan(w) ? "syn_weight" : "delay", (long long)eg->id, et->csvpath);
        if (!isfinite(w) || !(d > 0.0) || !isfinite(d))
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: %s %g (%s)", where, (long long)q,
                           !isfinite(w) ? "syn_weight" : "delay", !isfinite(w) ? w : d,
                           !isfinite(w) ? "finite only" : "a delay must be > 0 ms");
        const double x = eg->x[ix];
        if (!(x >= 0.0 && x <= 1.0))
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: afferent_section_pos %g is not in [0, 1]", where,
                           (long long)q, x);
        if (eg->sec[ix] < 0 || eg->sec[ix] > INT32_MAX)
            return ns_fail(NS_ERR_PARSE, "%s: edge %lld: afferent_section_id %lld < 0", where, (long long)q,
                           (long long)eg->sec[ix]);
        e->src[q] = sp->source[src[q]];
        e->cell[q] = tp->cell[tgt[q]];
        e->node[q] = tgt[q];
        e->section[q] = (int32_t)eg->sec[ix];
        e->type[q] = (int32_t)row;
        e->x[q] = x;
        e->weight[q] = w;
        e->delay[q] = d;
    }
    return NS_OK;
}

/* The per-edge dynamics: the union of the groups' names (one column each in
 * the block), NaN where a group has none, under the names the mechanism has
 * them (BMTK's exp2syn/expsyn: erev is e). */
static ns_status edges_dynamics(const edge_types *et, const char *where, const edge_ids *ids, const egroup *groups,
                                int n_groups, ns_netbuild_edges *e) {
    const int64_t ne = ids->n;
    char (*pp_names)[NS_NETBUILD_NAME] = NULL;
    int n_pp = 0;
    ns_status st = NS_OK;
    for (int gi = 0; gi < n_groups && st == NS_OK; ++gi)
        for (int w = 0; w < groups[gi].n_pp && st == NS_OK; ++w) {
            int have = 0;
            while (have < n_pp && strcmp(pp_names[have], groups[gi].pp_name[w]) != 0) ++have;
            if (have < n_pp) continue;
            char (*nn)[NS_NETBUILD_NAME] = realloc(pp_names, (size_t)(n_pp + 1) * sizeof *nn);
            if (!nn) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
                break;
            }
            pp_names = nn;
            snprintf(pp_names[n_pp++], NS_NETBUILD_NAME, "%s", groups[gi].pp_name[w]);
        }
    if (st == NS_OK && n_pp > 0) {
        e->pp = malloc((size_t)(ne > 0 ? ne : 1) * (size_t)n_pp * sizeof *e->pp);
        e->pp_names = calloc((size_t)n_pp, sizeof *e->pp_names);
        if (!e->pp || !e->pp_names) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
        e->n_pp = n_pp;
    }
    for (int64_t q = 0; q < ne && st == NS_OK && n_pp > 0; ++q) {
        const egroup *eg = group_of(groups, n_groups, ids->gid[q]);
        const mapped *m = &et->maps[e->type[q]];
        for (int p = 0; p < n_pp && st == NS_OK; ++p) {
            double *v = &e->pp[q * n_pp + p];
            *v = NAN;
            for (int w = 0; w < eg->n_pp; ++w)
                if (!strcmp(eg->pp_name[w], pp_names[p])) *v = eg->pp[w][ids->gix[q]];
            if (isnan(*v)) continue;
            const char *pn = param_name(m, pp_names[p]);
            if (!pn)
                st = ns_fail(NS_ERR_UNSUPPORTED,
                             "%s: edge %lld: dynamics_params/%s: BMTK's %s reads tau1%s and erev only", where,
                             (long long)q, pp_names[p], m->bmtk == 1 ? "exp2syn" : "expsyn",
                             m->bmtk == 1 ? ", tau2" : "");
            else if (!isfinite(*v))
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: dynamics_params/%s is %g", where, (long long)q,
                             pp_names[p], *v);
        }
    }
    /* the mapped names: the same mapping for every edge of a name when the types agree on it */
    for (int p = 0; p < n_pp && st == NS_OK; ++p) {
        const char *pn = NULL;
        for (int64_t q = 0; q < ne && st == NS_OK; ++q) {
            if (isnan(e->pp[q * n_pp + p])) continue;
            const char *this_pn = param_name(&et->maps[e->type[q]], pp_names[p]);
            if (pn && strcmp(pn, this_pn) != 0)
                st = ns_fail(NS_ERR_UNSUPPORTED, "%s: dynamics_params/%s means %s and %s for edges of different "
                             "synapse types: one population per synapse model", where, pp_names[p], pn, this_pn);
            pn = this_pn;
        }
        snprintf(e->pp_names[p], NS_NETBUILD_NAME, "%s", pn ? pn : pp_names[p]);
    }
    free(pp_names);
    return st;
}

/* The types, copied into the block. */
static ns_status edges_copy_types(const edge_types *et, const char *where, ns_netbuild_edges *e) {
    const int64_t nrow = et->types.nrow;
    e->types = calloc((size_t)(nrow + 1), sizeof *e->types);
    if (!e->types) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
    e->n_types = (int32_t)nrow;
    for (int64_t t = 0; t < nrow; ++t) {
        const ns_netbuild_syntype *syn = &et->syn[t];
        e->types[t] = *syn;
        e->types[t].name = calloc((size_t)syn->n_params + 1, sizeof *e->types[t].name);
        e->types[t].value = calloc((size_t)syn->n_params + 1, sizeof *e->types[t].value);
        if (!e->types[t].name || !e->types[t].value) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
        memcpy(e->types[t].name, syn->name, (size_t)syn->n_params * sizeof *syn->name);
        memcpy(e->types[t].value, syn->value, (size_t)syn->n_params * sizeof *syn->value);
    }
    return NS_OK;
}

/* One edge population (/edges/NAME of the entry's file) into a block of the network. */
static ns_status edge_population_read(void *arg, hid_t edges, const char *name) {
    const edge_types *et = arg;
    reader *r = et->r;
    char where[SON_PATH + 300];
    snprintf(where, sizeof where, "%s: /edges/%s", et->h5path, name);
    if (!ns_son_is_group(edges, name)) return ns_fail(NS_ERR_PARSE, "%s: not a group", where);
    hid_t g = H5Gopen2(edges, name, H5P_DEFAULT);
    edge_ids ids = {0};
    ns_status st = edge_ids_read(g, where, &ids);
    pop *sp = NULL, *tp = NULL;
    if (st == NS_OK) st = edge_populations(r, g, where, &sp, &tp);
    ns_netbuild_edges e;
    memset(&e, 0, sizeof e);
    if (st == NS_OK) st = edges_alloc(&e, where, ids.n);
    egroup *groups = NULL;
    int n_groups = 0;
    if (st == NS_OK) st = groups_read(g, name, where, &ids, &groups, &n_groups);
    if (st == NS_OK) st = edges_fill(et, where, &ids, groups, n_groups, sp, tp, &e);
    if (st == NS_OK) st = edges_dynamics(et, where, &ids, groups, n_groups, &e);
    if (st == NS_OK) st = edges_copy_types(et, where, &e);
    if (st == NS_OK) st = ns_netbuild_edges_add(r->net, &e); /* takes the arrays */
    else ns_netbuild_edges_free(&e);
    groups_free(groups, n_groups);
    edge_ids_free(&ids);
    H5Gclose(g);
    return st;
}

ns_status ns_son_read_edges(reader *r, const ns_json *entry, int idx) {
    edge_types et = {.r = r};
    ns_status st = ns_son_open_entry(r, entry, "edges", idx, "edges_file", "edge_types_file", "edge_type_id", et.h5path,
                                     et.csvpath, &et.types);
    if (st != NS_OK) return st;
    st = edge_types_read(r, &et);
    if (st == NS_OK) st = ns_son_each_population(et.h5path, "edges", 0, edge_population_read, &et);
    edge_types_free(&et);
    return st;
}

#endif /* NS_HAVE_HDF5 */
