/* SONATA nodes (docs/networks.md, "SONATA"): a nodes entry of the config, its
 * CSV node types and HDF5 populations, read into the network description's
 * cells (netfile_build.h) and the reader's node populations. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "io/netfile_build.h"
#include "io/sonata_table.h"
#include "neurosolve/network.h"

#ifdef NS_HAVE_HDF5
#include "io/sonata_impl.h"

/* The node types of a nodes entry: the CSV table and its columns. */
typedef struct node_types {
    reader *r;
    char h5path[SON_PATH], csvpath[SON_PATH];
    ns_son_table types;
    int c_model_type, c_morph, c_template, c_proc;
} node_types;

/* A biophysical type's model_template (neurosolve:FILE): one model per
 * network, its path and the type that named it first in model_path and
 * model_from. */
static ns_status type_model(reader *r, const node_types *nt, int64_t row, const char *tpl, char *model_path,
                            size_t model_len, char *model_from, size_t from_len) {
    const long long id = (long long)nt->types.id[row];
    const int line = nt->types.line[row];
    const char *csvpath = nt->csvpath;
    if (strncmp(tpl, "neurosolve:", 11) != 0 || !tpl[11])
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "%s:%d: node type %lld: model_template '%s': only neurosolve:FILE (a neurosolve model "
                       "file, docs/simulation.md) is read; NEURON hoc templates and Allen's genome JSON are not "
                       "(leave it empty and give one model to the run)",
                       csvpath, line, id, tpl);
    char path[SON_PATH];
    ns_status st = NS_OK;
    if (r->has_model_dir && tpl[11] != '/') {
        if (!ns_son_join(path, sizeof path, r->model_dir, tpl + 11))
            st = ns_fail(NS_ERR_PARSE, "%s:%d: node type %lld: path too long", csvpath, line, id);
    } else st = ns_son_resolve(&r->man, tpl + 11, "model_template", path, sizeof path);
    char from[SON_PATH + 64];
    snprintf(from, sizeof from, "%s:%d", csvpath, line);
    if (st == NS_OK && model_path[0] && strcmp(model_path, path) != 0)
        st = ns_fail(NS_ERR_UNSUPPORTED,
                     "%s: node type %lld: model %s, but %s names %s: one model per network (per-type "
                     "models are not supported yet)",
                     from, id, path, model_from, model_path);
    else if (st == NS_OK && !model_path[0]) {
        snprintf(model_path, model_len, "%s", path);
        snprintf(model_from, from_len, "%s", from);
    }
    return st;
}

/* Every type's meaning, checked before any node. */
static ns_status types_check(reader *r, const node_types *nt, char *model_path, size_t model_len, char *model_from,
                             size_t from_len) {
    const ns_son_table *types = &nt->types;
    const char *csvpath = nt->csvpath;
    ns_status st = NS_OK;
    for (int64_t row = 0; row < types->nrow && st == NS_OK; ++row) {
        const char *mt = ns_son_table_get(types, row, nt->c_model_type);
        const char *tpl = ns_son_table_get(types, row, nt->c_template);
        const char *proc = ns_son_table_get(types, row, nt->c_proc);
        const long long id = (long long)types->id[row];
        const int line = types->line[row];
        if (!mt) st = ns_fail(NS_ERR_PARSE, "%s:%d: node type %lld: no model_type", csvpath, line, id);
        else if (strcmp(mt, "virtual") == 0) continue;
        else if (strcmp(mt, "biophysical") != 0)
            st = ns_fail(NS_ERR_UNSUPPORTED,
                         "%s:%d: node type %lld: model_type '%s' is not read (biophysical and virtual only)", csvpath,
                         line, id, mt);
        else if (!ns_son_table_get(types, row, nt->c_morph))
            st = ns_fail(NS_ERR_PARSE, "%s:%d: node type %lld: a biophysical type needs a morphology", csvpath, line,
                         id);
        else if (proc)
            st = ns_fail(NS_ERR_UNSUPPORTED,
                         "%s:%d: node type %lld: model_processing '%s' is not applied (it changes the sections, "
                         "e.g. BMTK's aibs_perisomatic axon stub): leave it empty",
                         csvpath, line, id, proc);
        else if (tpl) st = type_model(r, nt, row, tpl, model_path, model_len, model_from, from_len);
    }
    return st;
}

/* The datasets of a node population, one entry per node. */
typedef struct node_ids {
    int64_t *type_id, *gid, *gix, *nid;
    int64_t n;
} node_ids;

/* The datasets of one length (node_id, when present, 0 .. n-1 in order). */
static ns_status node_ids_read(hid_t g, const pop *p, node_ids *ids) {
    int64_t n1 = 0, n2 = 0, n3 = 0, n4 = 0;
    ns_status st = ns_son_h5_read(g, "node_type_id", p->where, 1, (void **)&ids->type_id, &n1);
    if (st == NS_OK) st = ns_son_h5_read(g, "node_group_id", p->where, 1, (void **)&ids->gid, &n2);
    if (st == NS_OK) st = ns_son_h5_read(g, "node_group_index", p->where, 1, (void **)&ids->gix, &n3);
    if (st == NS_OK && (n2 != n1 || n3 != n1))
        st = ns_fail(NS_ERR_PARSE, "%s: node_type_id has %lld entries, node_group_id %lld, node_group_index %lld",
                     p->where, (long long)n1, (long long)n2, (long long)n3);
    if (st == NS_OK && ns_son_h5_exists(g, "node_id")) {
        st = ns_son_h5_read(g, "node_id", p->where, 1, (void **)&ids->nid, &n4);
        if (st == NS_OK && n4 != n1)
            st = ns_fail(NS_ERR_PARSE, "%s: node_id has %lld entries, node_type_id %lld", p->where, (long long)n4,
                         (long long)n1);
        for (int64_t q = 0; q < n4 && st == NS_OK; ++q)
            if (ids->nid[q] != q)
                st = ns_fail(NS_ERR_UNSUPPORTED, "%s/node_id: entry %lld is %lld: node ids 0 .. n-1 in order only",
                             p->where, (long long)q, (long long)ids->nid[q]);
    }
    ids->n = n1;
    return st;
}

static void node_ids_free(node_ids *ids) {
    int64_t *v[4] = {ids->type_id, ids->gid, ids->gix, ids->nid};
    for (int k = 0; k < 4; ++k) free(v[k]);
}

/* The population's per-node arrays. */
static ns_status pop_alloc(pop *p, int64_t n) {
    p->kind = calloc((size_t)(n + 1), sizeof *p->kind);
    p->cell = malloc((size_t)(n + 1) * sizeof *p->cell);
    p->source = malloc((size_t)(n + 1) * sizeof *p->source);
    p->times = calloc((size_t)(n + 1), sizeof *p->times);
    p->n_times = calloc((size_t)(n + 1), sizeof *p->n_times);
    p->cap_times = calloc((size_t)(n + 1), sizeof *p->cap_times);
    if (!p->kind || !p->cell || !p->source || !p->times || !p->n_times || !p->cap_times)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", p->where);
    return NS_OK;
}

/* A node group (gg, named gname): no per-node model, datasets of one length
 * (into *len; -1: none). */
static ns_status group_check(hid_t gg, const pop *p, const char *gname, const char *csvpath, int64_t *len) {
    static const char *const per_node[] = {"morphology", "model_template", "model_type", "model_processing",
                                           "dynamics_params"};
    ns_status st = NS_OK;
    for (int w = 0; w < 5 && st == NS_OK; ++w)
        if (ns_son_h5_exists(gg, per_node[w]))
            st = ns_fail(NS_ERR_UNSUPPORTED, "%s/%s/%s: per-node %s is not read: give it per node type in %s",
                         p->where, gname, per_node[w], per_node[w], csvpath);
    char **dn = NULL;
    int ndn = 0;
    char gw[SON_PATH + 340];
    snprintf(gw, sizeof gw, "%s/%s", p->where, gname);
    if (st == NS_OK) st = ns_son_h5_members(gg, gw, &dn, &ndn);
    const char *first = NULL;
    for (int w = 0; w < ndn && st == NS_OK; ++w) {
        hid_t o = H5Oopen(gg, dn[w], H5P_DEFAULT);
        if (o < 0) continue;
        if (H5Iget_type(o) == H5I_DATASET) {
            hid_t sp = H5Dget_space(o);
            hsize_t dims[8] = {0};
            const int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
            if (nd >= 1 && nd <= 8) H5Sget_simple_extent_dims(sp, dims, NULL);
            const int64_t n = nd >= 1 && nd <= 8 ? (int64_t)dims[0] : 0;
            if (*len >= 0 && n != *len)
                st = ns_fail(NS_ERR_PARSE, "%s: %s has %lld entries, %s %lld", gw, dn[w], (long long)n, first,
                             (long long)*len);
            else if (*len < 0) {
                *len = n;
                first = dn[w];
            }
            if (sp >= 0) H5Sclose(sp);
        }
        H5Oclose(o);
    }
    ns_son_free_names(dn, ndn);
    return st;
}

/* The groups the nodes name: present, datasets of one length, indices inside
 * it, no per-node model. */
static ns_status groups_check(hid_t g, const pop *p, const node_ids *ids, const char *csvpath) {
    int64_t *glen = NULL, *gids = NULL; /* per group seen: its id and its datasets' length (-1: none) */
    int n_seen = 0;
    ns_status st = NS_OK;
    for (int64_t q = 0; q < ids->n && st == NS_OK; ++q) {
        const int64_t id = ids->gid[q];
        int gi = 0;
        while (gi < n_seen && gids[gi] != id) ++gi;
        if (gi == n_seen) {
            char gname[32];
            snprintf(gname, sizeof gname, "%lld", (long long)id);
            if (id < 0 || !ns_son_is_group(g, gname)) {
                st = ns_fail(NS_ERR_PARSE, "%s: node %lld: node_group_id %lld: no group /nodes/%s/%s", p->where,
                             (long long)q, (long long)id, p->name, gname);
                break;
            }
            int64_t *a = realloc(gids, (size_t)(n_seen + 1) * sizeof *a);
            if (a) gids = a;
            int64_t *b = realloc(glen, (size_t)(n_seen + 1) * sizeof *b);
            if (b) glen = b;
            if (!a || !b) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", p->where);
                break;
            }
            gids[n_seen] = id;
            glen[n_seen] = -1;
            ++n_seen;
            hid_t gg = H5Gopen2(g, gname, H5P_DEFAULT);
            st = group_check(gg, p, gname, csvpath, &glen[gi]);
            H5Gclose(gg);
        }
        const int64_t ix = ids->gix[q];
        if (st == NS_OK && (ix < 0 || (glen[gi] >= 0 && ix >= glen[gi])))
            st = ns_fail(NS_ERR_PARSE, "%s: node %lld: node_group_index %lld is outside group %lld (%lld entries)",
                         p->where, (long long)q, (long long)ix, (long long)id, (long long)glen[gi]);
    }
    free(gids);
    free(glen);
    return st;
}

/* A biophysical node's morphology file (the type's morphology, in the
 * components' morphologies_dir; .swc unless it has an extension). */
static ns_status node_morphology(reader *r, const pop *p, int64_t q, const char *m, char *path, size_t size) {
    ns_status st = NS_OK;
    const int has_ext = strrchr(m, '.') && !strchr(strrchr(m, '.'), '/');
    int w;
    if (m[0] == '/' || !r->has_morph_dir) {
        st = ns_son_resolve(&r->man, m, "morphology", path, size);
        w = (int)strlen(path);
        if (st == NS_OK && !has_ext) w = snprintf(path + w, size - (size_t)w, ".swc") + w;
    } else
        w = snprintf(path, size, "%s/%s%s", r->morph_dir, m, has_ext ? "" : ".swc");
    if (st == NS_OK && (w < 0 || (size_t)w >= size))
        st = ns_fail(NS_ERR_PARSE, "%s: node %lld: morphology path too long", p->where, (long long)q);
    return st;
}

/* Each node's type: virtual, or a biophysical cell of the network with its morphology. */
static ns_status nodes_apply_types(reader *r, pop *p, const node_ids *ids, const node_types *nt) {
    int n_bio = 0, n_virt = 0;
    ns_status st = NS_OK;
    for (int64_t q = 0; q < ids->n && st == NS_OK; ++q) {
        const int64_t row = ns_son_table_row(&nt->types, ids->type_id[q]);
        if (row < 0) {
            st = ns_fail(NS_ERR_PARSE, "%s: node %lld: node_type_id %lld is not in %s", p->where, (long long)q,
                         (long long)ids->type_id[q], nt->csvpath);
            break;
        }
        const int virt = strcmp(ns_son_table_get(&nt->types, row, nt->c_model_type), "virtual") == 0;
        p->kind[q] = virt ? 2 : 1;
        p->cell[q] = -1;
        n_virt += virt;
        n_bio += !virt;
        if (!virt) {
            char path[SON_PATH];
            st = node_morphology(r, p, q, ns_son_table_get(&nt->types, row, nt->c_morph), path, sizeof path);
            if (st == NS_OK) {
                p->cell[q] = ns_network_cells(r->net);
                st = ns_netbuild_cells(r->net, 1, path);
            }
        }
    }
    p->virtual_ = n_bio == 0 ? 1 : n_virt == 0 ? 0 : -1;
    return st;
}

/* One node population (/nodes/NAME of the entry's file) into the reader's populations. */
static ns_status node_population_read(void *arg, hid_t nodes, const char *name) {
    const node_types *nt = arg;
    reader *r = nt->r;
    if (ns_son_find_pop(r, name))
        return ns_fail(NS_ERR_PARSE, "%s: population '%s' again (node population names are unique)", nt->h5path,
                       name);
    pop *np = realloc(r->pops, (size_t)(r->n_pops + 1) * sizeof *np);
    if (!np) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", nt->h5path);
    r->pops = np;
    pop *p = &r->pops[r->n_pops++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->where, sizeof p->where, "%s: /nodes/%s", nt->h5path, name);
    if (!ns_son_is_group(nodes, name)) return ns_fail(NS_ERR_PARSE, "%s: not a group", p->where);
    hid_t g = H5Gopen2(nodes, name, H5P_DEFAULT);
    node_ids ids = {0};
    ns_status st = node_ids_read(g, p, &ids);
    p->n = ids.n;
    if (st == NS_OK) st = pop_alloc(p, ids.n);
    if (st == NS_OK) st = groups_check(g, p, &ids, nt->csvpath);
    if (st == NS_OK) st = nodes_apply_types(r, p, &ids, nt);
    node_ids_free(&ids);
    H5Gclose(g);
    return st;
}

ns_status ns_son_read_nodes(reader *r, const ns_json *entry, int idx, char *model_path, size_t model_len,
                            char *model_from, size_t from_len) {
    node_types nt = {.r = r};
    ns_status st = ns_son_open_entry(r, entry, "nodes", idx, "nodes_file", "node_types_file", "node_type_id", nt.h5path,
                                     nt.csvpath, &nt.types);
    if (st != NS_OK) return st;
    nt.c_model_type = ns_son_table_col(&nt.types, "model_type");
    nt.c_morph = ns_son_table_col(&nt.types, "morphology");
    nt.c_template = ns_son_table_col(&nt.types, "model_template");
    nt.c_proc = ns_son_table_col(&nt.types, "model_processing");
    if (nt.c_model_type < 0) st = ns_fail(NS_ERR_PARSE, "%s: no column model_type", nt.csvpath);
    if (st == NS_OK) st = types_check(r, &nt, model_path, model_len, model_from, from_len);
    if (st == NS_OK) st = ns_son_each_population(nt.h5path, "nodes", 1, node_population_read, &nt);
    ns_son_table_free(&nt.types);
    return st;
}

#endif /* NS_HAVE_HDF5 */
