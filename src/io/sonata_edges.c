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

ns_status ns_son_read_edges(reader *r, const ns_json *entry, int idx) {
    char what[64], h5path[SON_PATH], csvpath[SON_PATH];
    snprintf(what, sizeof what, "networks.edges[%d]", idx);
    ns_son_table types;
    ns_status st =
        ns_son_open_entry(r, entry, what, "edges_file", "edge_types_file", "edge_type_id", h5path, csvpath, &types);
    if (st != NS_OK) return st;
    /* every type's synapse, checked before any edge */
    ns_netbuild_syntype *syn = calloc((size_t)(types.nrow + 1), sizeof *syn);
    mapped *maps = calloc((size_t)(types.nrow + 1), sizeof *maps);
    double *tw = malloc((size_t)(types.nrow + 1) * sizeof *tw), *td = malloc((size_t)(types.nrow + 1) * sizeof *td);
    if (!syn || !maps || !tw || !td) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", csvpath);
    const int c_w = ns_son_table_col(&types, "syn_weight"), c_d = ns_son_table_col(&types, "delay");
    for (int64_t row = 0; row < types.nrow && st == NS_OK; ++row) {
        st = syntype_of(r, &types, row, csvpath, &syn[row], &maps[row]);
        const char *sv[2] = {ns_son_table_get(&types, row, c_w), ns_son_table_get(&types, row, c_d)};
        double *dst[2] = {&tw[row], &td[row]};
        for (int k = 0; k < 2 && st == NS_OK; ++k) {
            *dst[k] = NAN;
            if (!sv[k]) continue;
            if ((st = ns_number_parse(sv[k], -HUGE_VAL, HUGE_VAL, dst[k])) != NS_OK) {
                char pre[SON_PATH + 160];
                snprintf(pre, sizeof pre, "%s:%d: edge type %lld: %s", csvpath, types.line[row],
                         (long long)types.id[row], k ? "delay" : "syn_weight");
                ns_error_prefix(pre);
            }
        }
    }
    h5quiet hq;
    ns_son_quiet_on(&hq);
    hid_t f = H5I_INVALID_HID, edges = H5I_INVALID_HID;
    char **names = NULL;
    int n_names = 0;
    if (st == NS_OK) st = ns_son_h5_open_group(h5path, "edges", &f, &edges, &names, &n_names);
    for (int k = 0; k < n_names && st == NS_OK; ++k) {
        char where[SON_PATH + 300];
        snprintf(where, sizeof where, "%s: /edges/%s", h5path, names[k]);
        if (!ns_son_is_group(edges, names[k])) {
            st = ns_fail(NS_ERR_PARSE, "%s: not a group", where);
            break;
        }
        hid_t g = H5Gopen2(edges, names[k], H5P_DEFAULT);
        int64_t *src = NULL, *tgt = NULL, *tid = NULL, *gid = NULL, *gix = NULL, n[5] = {0};
        st = ns_son_h5_read(g, "source_node_id", where, 1, (void **)&src, &n[0]);
        if (st == NS_OK) st = ns_son_h5_read(g, "target_node_id", where, 1, (void **)&tgt, &n[1]);
        if (st == NS_OK) st = ns_son_h5_read(g, "edge_type_id", where, 1, (void **)&tid, &n[2]);
        if (st == NS_OK) st = ns_son_h5_read(g, "edge_group_id", where, 1, (void **)&gid, &n[3]);
        if (st == NS_OK) st = ns_son_h5_read(g, "edge_group_index", where, 1, (void **)&gix, &n[4]);
        static const char *const dsn[5] = {"source_node_id", "target_node_id", "edge_type_id", "edge_group_id",
                                           "edge_group_index"};
        for (int w = 1; w < 5 && st == NS_OK; ++w)
            if (n[w] != n[0])
                st = ns_fail(NS_ERR_PARSE, "%s: %s has %lld entries, source_node_id %lld", where, dsn[w],
                             (long long)n[w], (long long)n[0]);
        char spop_name[256] = "", tpop_name[256] = "";
        pop *sp = NULL, *tp = NULL;
        if (st == NS_OK) {
            char w2[SON_PATH + 340];
            snprintf(w2, sizeof w2, "%s/source_node_id", where);
            hid_t ds = H5Dopen2(g, "source_node_id", H5P_DEFAULT);
            st = ns_son_h5_attr_string(ds, "node_population", w2, spop_name, sizeof spop_name);
            H5Dclose(ds);
            if (st == NS_OK) {
                snprintf(w2, sizeof w2, "%s/target_node_id", where);
                ds = H5Dopen2(g, "target_node_id", H5P_DEFAULT);
                st = ns_son_h5_attr_string(ds, "node_population", w2, tpop_name, sizeof tpop_name);
                H5Dclose(ds);
            }
            if (st == NS_OK && !(sp = ns_son_find_pop(r, spop_name)))
                st = ns_fail(NS_ERR_PARSE, "%s/source_node_id: node_population '%s' is not a node population of the "
                             "network", where, spop_name);
            if (st == NS_OK && !(tp = ns_son_find_pop(r, tpop_name)))
                st = ns_fail(NS_ERR_PARSE, "%s/target_node_id: node_population '%s' is not a node population of the "
                             "network", where, tpop_name);
        }
        ns_netbuild_edges e;
        memset(&e, 0, sizeof e);
        const int64_t ne = n[0];
        if (st == NS_OK) {
            const size_t wl = strlen(where);
            /* the end of a long path: the population stays readable */
            const char *tail = wl >= sizeof e.label ? where + wl - (sizeof e.label - 4) : where;
            memcpy(e.label, wl >= sizeof e.label ? "..." : "", wl >= sizeof e.label ? 3 : 0);
            memcpy(e.label + (wl >= sizeof e.label ? 3 : 0), tail, strlen(tail) + 1);
            e.n = ne;
            const size_t m = (size_t)(ne > 0 ? ne : 1);
            e.src = malloc(m * 8), e.cell = malloc(m * 8), e.node = malloc(m * 8);
            e.section = malloc(m * 4), e.type = malloc(m * 4);
            e.x = malloc(m * 8), e.weight = malloc(m * 8), e.delay = malloc(m * 8);
            if (!e.src || !e.cell || !e.node || !e.section || !e.type || !e.x || !e.weight || !e.delay)
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
        }
        /* the groups: their datasets, read once each */
        typedef struct egroup {
            int64_t id, len;
            double *w, *d, *x, *nsyns;
            int64_t *sec;
            int n_pp;
            char (*pp_name)[NS_NETBUILD_NAME];
            double **pp;
        } egroup;
        egroup *groups = NULL;
        int n_groups = 0;
        /* the per-edge dynamics names of all groups (one column each in the block) */
        char (*pp_names)[NS_NETBUILD_NAME] = NULL;
        int n_pp = 0;
        for (int64_t q = 0; q < ne && st == NS_OK; ++q) {
            int gi = 0;
            while (gi < n_groups && groups[gi].id != gid[q]) ++gi;
            if (gi < n_groups) continue;
            char gname[32];
            snprintf(gname, sizeof gname, "%lld", (long long)gid[q]);
            if (gid[q] < 0 || !ns_son_is_group(g, gname)) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: edge_group_id %lld: no group %s/%s", where, (long long)q,
                             (long long)gid[q], names[k], gname);
                break;
            }
            egroup *ng = realloc(groups, (size_t)(n_groups + 1) * sizeof *ng);
            if (!ng) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
                break;
            }
            groups = ng;
            egroup *eg = &groups[n_groups++];
            memset(eg, 0, sizeof *eg);
            eg->id = gid[q];
            eg->len = -1;
            char gw[SON_PATH + 340];
            snprintf(gw, sizeof gw, "%s/%s", where, gname);
            hid_t gg = H5Gopen2(g, gname, H5P_DEFAULT);
            struct {
                const char *name, *alt;
                void **dst;
                int is_int;
            } want[5] = {{"syn_weight", NULL, (void **)&eg->w, 0},
                         {"delay", NULL, (void **)&eg->d, 0},
                         {"afferent_section_id", "sec_id", (void **)&eg->sec, 1},
                         {"afferent_section_pos", "sec_x", (void **)&eg->x, 0},
                         {"nsyns", NULL, (void **)&eg->nsyns, 0}};
            for (int w = 0; w < 5 && st == NS_OK; ++w) {
                const char *nm = ns_son_h5_exists(gg, want[w].name) ? want[w].name
                                 : want[w].alt && ns_son_h5_exists(gg, want[w].alt) ? want[w].alt : NULL;
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
            if (st == NS_OK && ns_son_is_group(gg, "dynamics_params")) {
                hid_t dg = H5Gopen2(gg, "dynamics_params", H5P_DEFAULT);
                char **dn = NULL;
                int ndn = 0;
                char dw[SON_PATH + 400];
                snprintf(dw, sizeof dw, "%s/dynamics_params", gw);
                st = ns_son_h5_members(dg, dw, &dn, &ndn);
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
                        st = ns_fail(NS_ERR_PARSE, "%s/%s has %lld entries, other datasets of the group %lld", dw,
                                     dn[w], (long long)len, (long long)eg->len);
                    snprintf(eg->pp_name[w], NS_NETBUILD_NAME, "%s", dn[w]);
                    eg->n_pp = w + 1;
                }
                ns_son_free_names(dn, ndn);
                H5Gclose(dg);
            }
            H5Gclose(gg);
        }
        /* each edge */
        for (int64_t q = 0; q < ne && st == NS_OK; ++q) {
            int gi = 0;
            while (gi < n_groups && groups[gi].id != gid[q]) ++gi;
            const egroup *eg = &groups[gi];
            const int64_t row = ns_son_table_row(&types, tid[q]);
            const int64_t ix = gix[q];
            if (row < 0) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: edge_type_id %lld is not in %s", where, (long long)q,
                             (long long)tid[q], csvpath);
                break;
            }
            if (ix < 0 || ix >= eg->len) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: edge_group_index %lld is outside group %lld (%lld entries)",
                             where, (long long)q, (long long)ix, (long long)eg->id, (long long)eg->len);
                break;
            }
            if (src[q] < 0 || src[q] >= sp->n) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: source node %lld is outside population %s (%lld nodes)",
                             where, (long long)q, (long long)src[q], sp->name, (long long)sp->n);
                break;
            }
            if (tgt[q] < 0 || tgt[q] >= tp->n) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: target node %lld is outside population %s (%lld nodes)",
                             where, (long long)q, (long long)tgt[q], tp->name, (long long)tp->n);
                break;
            }
            if (tp->kind[tgt[q]] != 1) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: target node %lld of %s is virtual (no synapse there)", where,
                             (long long)q, (long long)tgt[q], tp->name);
                break;
            }
            if (eg->nsyns && eg->nsyns[ix] != 1.0) {
                st = ns_fail(NS_ERR_UNSUPPORTED, "%s: edge %lld: nsyns %g: one synapse per edge only", where,
                             (long long)q, eg->nsyns[ix]);
                break;
            }
            const double w = eg->w ? eg->w[ix] : tw[row], d = eg->d ? eg->d[ix] : td[row];
            if (isnan(w) || isnan(d)) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: no %s (a dataset of group %lld or a column of %s)", where,
                             (long long)q, isnan(w) ? "syn_weight" : "delay", (long long)eg->id, csvpath);
                break;
            }
            if (!isfinite(w) || !(d > 0.0) || !isfinite(d)) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: %s %g (%s)", where, (long long)q,
                             !isfinite(w) ? "syn_weight" : "delay", !isfinite(w) ? w : d,
                             !isfinite(w) ? "finite only" : "a delay must be > 0 ms");
                break;
            }
            const double x = eg->x[ix];
            if (!(x >= 0.0 && x <= 1.0)) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: afferent_section_pos %g is not in [0, 1]", where,
                             (long long)q, x);
                break;
            }
            if (eg->sec[ix] < 0 || eg->sec[ix] > INT32_MAX) {
                st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: afferent_section_id %lld < 0", where, (long long)q,
                             (long long)eg->sec[ix]);
                break;
            }
            e.src[q] = sp->source[src[q]];
            e.cell[q] = tp->cell[tgt[q]];
            e.node[q] = tgt[q];
            e.section[q] = (int32_t)eg->sec[ix];
            e.type[q] = (int32_t)row;
            e.x[q] = x;
            e.weight[q] = w;
            e.delay[q] = d;
        }
        /* the per-edge dynamics: the union of the groups' names, NaN where a group has none */
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
            e.pp = malloc((size_t)(ne > 0 ? ne : 1) * (size_t)n_pp * sizeof *e.pp);
            e.pp_names = calloc((size_t)n_pp, sizeof *e.pp_names);
            if (!e.pp || !e.pp_names) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
            e.n_pp = n_pp;
        }
        for (int64_t q = 0; q < ne && st == NS_OK && n_pp > 0; ++q) {
            int gi = 0;
            while (gi < n_groups && groups[gi].id != gid[q]) ++gi;
            const mapped *m = &maps[e.type[q]];
            for (int p = 0; p < n_pp && st == NS_OK; ++p) {
                e.pp[q * n_pp + p] = NAN;
                for (int w = 0; w < groups[gi].n_pp; ++w)
                    if (!strcmp(groups[gi].pp_name[w], pp_names[p])) e.pp[q * n_pp + p] = groups[gi].pp[w][gix[q]];
                if (isnan(e.pp[q * n_pp + p])) continue;
                /* names as the mechanism has them (BMTK's exp2syn/expsyn: erev is e) */
                const char *pn = param_name(m, pp_names[p]);
                if (!pn)
                    st = ns_fail(NS_ERR_UNSUPPORTED, "%s: edge %lld: dynamics_params/%s: BMTK's %s reads tau1%s and erev only",
                                 where, (long long)q, pp_names[p], m->bmtk == 1 ? "exp2syn" : "expsyn",
                                 m->bmtk == 1 ? ", tau2" : "");
                else if (!isfinite(e.pp[q * n_pp + p]))
                    st = ns_fail(NS_ERR_PARSE, "%s: edge %lld: dynamics_params/%s is %g", where, (long long)q,
                                 pp_names[p], e.pp[q * n_pp + p]);
            }
        }
        /* the mapped names: the same mapping for every edge of a name when the types agree on it */
        for (int p = 0; p < n_pp && st == NS_OK; ++p) {
            const char *pn = NULL;
            for (int64_t q = 0; q < ne && st == NS_OK; ++q) {
                if (isnan(e.pp[q * n_pp + p])) continue;
                const char *this_pn = param_name(&maps[e.type[q]], pp_names[p]);
                if (pn && strcmp(pn, this_pn) != 0)
                    st = ns_fail(NS_ERR_UNSUPPORTED, "%s: dynamics_params/%s means %s and %s for edges of different "
                                 "synapse types: one population per synapse model", where, pp_names[p], pn, this_pn);
                pn = this_pn;
            }
            snprintf(e.pp_names[p], NS_NETBUILD_NAME, "%s", pn ? pn : pp_names[p]);
        }
        if (st == NS_OK) {
            /* the types, copied into the block */
            e.types = calloc((size_t)(types.nrow + 1), sizeof *e.types);
            if (!e.types) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
            e.n_types = (int32_t)types.nrow;
            for (int64_t t = 0; t < types.nrow && st == NS_OK; ++t) {
                e.types[t] = syn[t];
                e.types[t].name = calloc((size_t)syn[t].n_params + 1, sizeof *e.types[t].name);
                e.types[t].value = calloc((size_t)syn[t].n_params + 1, sizeof *e.types[t].value);
                if (!e.types[t].name || !e.types[t].value) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
                else {
                    memcpy(e.types[t].name, syn[t].name, (size_t)syn[t].n_params * sizeof *syn[t].name);
                    memcpy(e.types[t].value, syn[t].value, (size_t)syn[t].n_params * sizeof *syn[t].value);
                }
            }
        }
        if (st == NS_OK) st = ns_netbuild_edges_add(r->net, &e); /* takes the arrays */
        else ns_netbuild_edges_free(&e);
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
        free(pp_names);
        free(src);
        free(tgt);
        free(tid);
        free(gid);
        free(gix);
        H5Gclose(g);
    }
    ns_son_free_names(names, n_names);
    if (edges >= 0) H5Gclose(edges);
    if (f >= 0) H5Fclose(f);
    ns_son_quiet_off(&hq);
    for (int64_t row = 0; syn && row < types.nrow; ++row) {
        free(syn[row].name);
        free(syn[row].value);
    }
    free(syn);
    free(maps);
    free(tw);
    free(td);
    ns_son_table_free(&types);
    return st;
}

#endif /* NS_HAVE_HDF5 */
