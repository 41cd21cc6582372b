/* SONATA input and output (docs/networks.md, "SONATA"): a config (JSON),
 * nodes and edges (HDF5) with their type tables (CSV) read into the network
 * description of netfile.c (through netfile_build.h), so that one apply
 * (ns_network_apply, ns_network_sim_create, ns_network_create_sim) serves
 * both formats; and the raster written as a SONATA spikes file. HDF5 is
 * optional: without it (NS_HAVE_HDF5 undefined) both calls answer
 * NS_ERR_UNSUPPORTED. */
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

#ifndef NS_HAVE_HDF5

ns_status ns_network_read_sonata(const char *config, const char *input_spikes, ns_network_t **out) {
    (void)input_spikes;
    if (out) *out = NULL;
    return ns_fail(NS_ERR_UNSUPPORTED, "%s: SONATA needs HDF5: neurosolve was built without HDF5 (libhdf5)",
                   config ? config : "(null)");
}

ns_status ns_network_write_spikes(const ns_network_t *net, const char *path, int64_t n, const int64_t *source,
                                  const double *t) {
    (void)net, (void)n, (void)source, (void)t;
    return ns_fail(NS_ERR_UNSUPPORTED, "%s: SONATA spikes need HDF5: neurosolve was built without HDF5 (libhdf5)",
                   path ? path : "(null)");
}

#else
#include "io/sonata_impl.h"

/* ------------------------------------------------------------ HDF5 quiet */

void ns_son_quiet_on(h5quiet *q) {
    H5Eget_auto2(H5E_DEFAULT, &q->fn, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
void ns_son_quiet_off(const h5quiet *q) { H5Eset_auto2(H5E_DEFAULT, q->fn, q->data); }

/* ------------------------------------------------------------ paths */

static void dir_of(const char *path, char *dir, size_t len) {
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, len, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
}


static void manifest_free(manifest *m) {
    for (int k = 0; k < m->n; ++k) {
        free(m->key[k]);
        free(m->val[k]);
    }
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* DIR/FILE into out; 0 when it does not fit. */
int ns_son_join(char *out, size_t len, const char *dir, const char *file) {
    const int w = snprintf(out, len, "%s/%s", dir, file);
    return w >= 0 && (size_t)w < len;
}

static char *dup_str(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static ns_status manifest_load(manifest *m, const ns_json *root, const char *config) {
    memset(m, 0, sizeof *m);
    dir_of(config, m->dir, sizeof m->dir);
    snprintf(m->name, sizeof m->name, "%s", config);
    const ns_json *man = ns_json_get(root, "manifest");
    if (!man) return NS_OK;
    if (man->kind != NS_JSON_OBJECT)
        return ns_fail(NS_ERR_PARSE, "%s: manifest (line %d) is %s, not an object", config, man->line,
                       ns_json_kind_name(man->kind));
    m->key = calloc(man->n + 1, sizeof *m->key);
    m->val = calloc(man->n + 1, sizeof *m->val);
    if (!m->key || !m->val) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: manifest", config);
    for (size_t k = 0; k < man->n; ++k) {
        if (man->items[k].kind != NS_JSON_STRING)
            return ns_fail(NS_ERR_PARSE, "%s: manifest.%s (line %d) is %s, not a string", config, man->keys[k],
                           man->items[k].line, ns_json_kind_name(man->items[k].kind));
        if (man->keys[k][0] != '$' || !man->keys[k][1])
            return ns_fail(NS_ERR_PARSE, "%s: manifest key '%s' (line %d) does not start with '$'", config,
                           man->keys[k], man->items[k].line);
        m->key[m->n] = dup_str(man->keys[k]);
        m->val[m->n] = dup_str(man->items[k].string);
        if (!m->key[m->n] || !m->val[m->n]) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: manifest", config);
        m->n++;
    }
    return NS_OK;
}

/* A path of the config: ${configdir} and the manifest's $NAMEs substituted
 * (longest name first; at most 16 rounds, more is a cycle), then relative
 * to the config's folder. `what` names the entry in errors. */
ns_status ns_son_resolve(const manifest *m, const char *text, const char *what, char *out, size_t len) {
    char cur[SON_PATH], next[SON_PATH];
    if (strlen(text) >= sizeof cur) return ns_fail(NS_ERR_PARSE, "%s: %s: path too long", m->name, what);
    snprintf(cur, sizeof cur, "%s", text);
    int anchored = 0; /* ${configdir} was put in: the path starts at the config's folder already */
    for (int round = 0;; ++round) {
        if (round == 16)
            return ns_fail(NS_ERR_PARSE, "%s: %s: '%s': the manifest's variables refer to each other in a cycle",
                           m->name, what, text);
        const char *dollar = strchr(cur, '$');
        if (!dollar) break;
        size_t nlen = 0;
        const char *value = NULL;
        if (strncmp(dollar, "${configdir}", 12) == 0) {
            nlen = 12;
            value = m->dir;
            anchored |= dollar == cur;
        } else
            for (int k = 0; k < m->n; ++k) {
                const size_t kl = strlen(m->key[k]);
                if (kl > nlen && strncmp(dollar, m->key[k], kl) == 0 && !isalnum((unsigned char)dollar[kl]) &&
                    dollar[kl] != '_') {
                    nlen = kl;
                    value = m->val[k];
                }
            }
        if (!value) {
            size_t q = 1;
            while (dollar[q] && (isalnum((unsigned char)dollar[q]) || dollar[q] == '_' || dollar[q] == '{' || dollar[q] == '}')) ++q;
            return ns_fail(NS_ERR_PARSE, "%s: %s: '%s': unknown manifest variable '%.*s'", m->name, what, text,
                           (int)q, dollar);
        }
        const int w = snprintf(next, sizeof next, "%.*s%s%s", (int)(dollar - cur), cur, value, dollar + nlen);
        if (w < 0 || (size_t)w >= sizeof next) return ns_fail(NS_ERR_PARSE, "%s: %s: path too long", m->name, what);
        memcpy(cur, next, (size_t)w + 1);
    }
    int w;
    if (cur[0] == '/' || anchored || !m->dir[0]) w = snprintf(out, len, "%s", cur);
    else w = snprintf(out, len, "%s/%s", m->dir, cur);
    if (w < 0 || (size_t)w >= len) return ns_fail(NS_ERR_PARSE, "%s: %s: path too long", m->name, what);
    return NS_OK;
}

static ns_status get_string(const manifest *m, const ns_json *obj, const char *key, const char *what, int required,
                            const char **out) {
    *out = NULL;
    const ns_json *v = ns_json_get(obj, key);
    if (!v) return required ? ns_fail(NS_ERR_PARSE, "%s: %s: no \"%s\"", m->name, what, key) : NS_OK;
    if (v->kind != NS_JSON_STRING)
        return ns_fail(NS_ERR_PARSE, "%s: %s.%s (line %d) is %s, not a string", m->name, what, key, v->line,
                       ns_json_kind_name(v->kind));
    *out = v->string;
    return NS_OK;
}

static ns_status get_number(const manifest *m, const ns_json *obj, const char *key, const char *what, double *out) {
    *out = NAN;
    const ns_json *v = ns_json_get(obj, key);
    if (!v) return NS_OK;
    if (v->kind != NS_JSON_NUMBER)
        return ns_fail(NS_ERR_PARSE, "%s: %s.%s (line %d) is %s, not a number", m->name, what, key, v->line,
                       ns_json_kind_name(v->kind));
    *out = v->number;
    return NS_OK;
}

/* ------------------------------------------------------------ type tables (CSV): sonata_table.h */


/* ------------------------------------------------------------ HDF5 datasets */

int ns_son_h5_exists(hid_t loc, const char *name) { return H5Lexists(loc, name, H5P_DEFAULT) > 0; }

/* A 1-D dataset of numbers read as int64 (integers only) or double. */
ns_status ns_son_h5_read(hid_t g, const char *name, const char *where, int want_int, void **out, int64_t *n) {
    *out = NULL;
    *n = 0;
    if (!ns_son_h5_exists(g, name)) return ns_fail(NS_ERR_PARSE, "%s: no dataset '%s'", where, name);
    hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
    if (ds < 0) return ns_fail(NS_ERR_PARSE, "%s: '%s' is not a dataset", where, name);
    ns_status st = NS_OK;
    hid_t sp = H5Dget_space(ds), ty = H5Dget_type(ds);
    const H5T_class_t cls = ty >= 0 ? H5Tget_class(ty) : H5T_NO_CLASS;
    hsize_t dims[2] = {0, 0};
    if (sp < 0 || H5Sget_simple_extent_ndims(sp) != 1)
        st = ns_fail(NS_ERR_PARSE, "%s/%s: not a one-dimensional dataset", where, name);
    else if (cls != H5T_INTEGER && (want_int || cls != H5T_FLOAT))
        st = ns_fail(NS_ERR_PARSE, "%s/%s: %s expected", where, name, want_int ? "integers" : "numbers");
    else {
        H5Sget_simple_extent_dims(sp, dims, NULL);
        if (dims[0] > (hsize_t)SON_MAX_ROWS)
            st = ns_fail(NS_ERR_SIZE, "%s/%s: %llu entries (at most %lld)", where, name, (unsigned long long)dims[0],
                         (long long)SON_MAX_ROWS);
    }
    if (st == NS_OK) {
        void *buf = malloc((size_t)(dims[0] > 0 ? dims[0] : 1) * 8);
        if (!buf) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s/%s", where, name);
        else if (dims[0] > 0 &&
                 H5Dread(ds, want_int ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
            free(buf);
            st = ns_fail(NS_ERR_IO, "%s/%s: read failed", where, name);
        } else {
            *out = buf;
            *n = (int64_t)dims[0];
        }
    }
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    H5Dclose(ds);
    return st;
}

/* A string attribute (fixed or variable length). */
ns_status ns_son_h5_attr_string(hid_t obj, const char *attr, const char *where, char *out, size_t len) {
    if (H5Aexists(obj, attr) <= 0) return ns_fail(NS_ERR_PARSE, "%s: no attribute '%s'", where, attr);
    hid_t a = H5Aopen(obj, attr, H5P_DEFAULT);
    if (a < 0) return ns_fail(NS_ERR_PARSE, "%s: attribute '%s' cannot be opened", where, attr);
    hid_t ty = H5Aget_type(a);
    ns_status st = NS_OK;
    if (ty < 0 || H5Tget_class(ty) != H5T_STRING) st = ns_fail(NS_ERR_PARSE, "%s: attribute '%s' is not a string", where, attr);
    else if (H5Tis_variable_str(ty) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ty));
        char *s = NULL;
        if (H5Aread(a, mt, &s) < 0 || !s) st = ns_fail(NS_ERR_IO, "%s: attribute '%s': read failed", where, attr);
        else {
            snprintf(out, len, "%s", s);
            H5free_memory(s);
        }
        H5Tclose(mt);
    } else {
        const size_t sz = H5Tget_size(ty);
        char *buf = calloc(sz + 1, 1);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, sz + 1);
        if (!buf) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
        else if (H5Aread(a, mt, buf) < 0) st = ns_fail(NS_ERR_IO, "%s: attribute '%s': read failed", where, attr);
        else snprintf(out, len, "%s", buf);
        H5Tclose(mt);
        free(buf);
    }
    if (ty >= 0) H5Tclose(ty);
    H5Aclose(a);
    return st;
}

/* The names of a group's members, in HDF5's name order. */
ns_status ns_son_h5_members(hid_t g, const char *where, char ***names, int *n) {
    H5G_info_t info;
    *names = NULL;
    *n = 0;
    if (H5Gget_info(g, &info) < 0) return ns_fail(NS_ERR_PARSE, "%s: not a group", where);
    if (info.nlinks > 100000) return ns_fail(NS_ERR_SIZE, "%s: %llu members", where, (unsigned long long)info.nlinks);
    char **v = calloc(info.nlinks + 1, sizeof *v);
    if (!v) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
    for (hsize_t k = 0; k < info.nlinks; ++k) {
        char buf[256];
        if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, k, buf, sizeof buf, H5P_DEFAULT) < 0 ||
            !(v[k] = dup_str(buf))) {
            for (hsize_t q = 0; q < k; ++q) free(v[q]);
            free(v);
            return ns_fail(NS_ERR_PARSE, "%s: member %llu cannot be named", where, (unsigned long long)k);
        }
    }
    *names = v;
    *n = (int)info.nlinks;
    return NS_OK;
}

void ns_son_free_names(char **v, int n) {
    for (int k = 0; k < n; ++k) free(v[k]);
    free(v);
}

int ns_son_is_group(hid_t loc, const char *name) {
    if (!ns_son_h5_exists(loc, name)) return 0;
    hid_t o = H5Oopen(loc, name, H5P_DEFAULT);
    if (o < 0) return 0;
    const int yes = H5Iget_type(o) == H5I_GROUP;
    H5Oclose(o);
    return yes;
}

/* The HDF5 file h5path (*f) and its group /NAME (*g), with the group's
 * members; *f and *g stay negative where not opened (the caller closes the
 * others and frees the names). */
ns_status ns_son_h5_open_group(const char *h5path, const char *name, hid_t *f, hid_t *g, char ***names, int *n) {
    *f = H5Fopen(h5path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*f < 0) return ns_fail(NS_ERR_IO, "%s: cannot open as HDF5", h5path);
    if (!ns_son_is_group(*f, name)) return ns_fail(NS_ERR_PARSE, "%s: no group /%s", h5path, name);
    *g = H5Gopen2(*f, name, H5P_DEFAULT);
    char where[SON_PATH + 16];
    snprintf(where, sizeof where, "%s: /%s", h5path, name);
    return ns_son_h5_members(*g, where, names, n);
}

ns_status ns_son_each_population(const char *h5path, const char *group, int at_least_one, ns_son_population_fn fn,
                                 void *arg) {
    h5quiet hq;
    ns_son_quiet_on(&hq);
    hid_t f = H5I_INVALID_HID, g = H5I_INVALID_HID;
    char **names = NULL;
    int n_names = 0;
    ns_status st = ns_son_h5_open_group(h5path, group, &f, &g, &names, &n_names);
    if (st == NS_OK && at_least_one && n_names == 0)
        st = ns_fail(NS_ERR_PARSE, "%s: no population in /%s", h5path, group);
    for (int k = 0; k < n_names && st == NS_OK; ++k) st = fn(arg, g, names[k]);
    ns_son_free_names(names, n_names);
    if (g >= 0) H5Gclose(g);
    if (f >= 0) H5Fclose(f);
    ns_son_quiet_off(&hq);
    return st;
}

static void reader_free(reader *r) {
    for (int k = 0; k < r->n_pops; ++k) {
        pop *p = &r->pops[k];
        free(p->kind);
        free(p->cell);
        free(p->source);
        for (int64_t q = 0; p->times && q < p->n; ++q) free(p->times[q]);
        free(p->times);
        free(p->n_times);
        free(p->cap_times);
    }
    free(r->pops);
    manifest_free(&r->man);
    manifest_free(&r->sim);
    ns_json_free(r->cfg);
    ns_json_free(r->circuit);
}

pop *ns_son_find_pop(reader *r, const char *name) {
    for (int k = 0; k < r->n_pops; ++k)
        if (strcmp(r->pops[k].name, name) == 0) return &r->pops[k];
    return NULL;
}

static ns_status components(reader *r, const ns_json *root) {
    const ns_json *c = ns_json_get(root, "components");
    if (c && c->kind != NS_JSON_OBJECT)
        return ns_fail(NS_ERR_PARSE, "%s: components (line %d) is %s, not an object", r->man.name, c->line,
                       ns_json_kind_name(c->kind));
    struct {
        const char *key;
        char *dst;
        int *has;
    } dirs[3] = {{"morphologies_dir", r->morph_dir, &r->has_morph_dir},
                 {"biophysical_neuron_models_dir", r->model_dir, &r->has_model_dir},
                 {"synaptic_models_dir", r->syn_dir, &r->has_syn_dir}};
    for (int k = 0; k < 3; ++k) {
        const char *s;
        ns_status st = get_string(&r->man, c, dirs[k].key, "components", 0, &s);
        if (st == NS_OK && s) {
            char what[128];
            snprintf(what, sizeof what, "components.%s", dirs[k].key);
            st = ns_son_resolve(&r->man, s, what, dirs[k].dst, SON_PATH);
            *dirs[k].has = 1;
        }
        if (st != NS_OK) return st;
    }
    return NS_OK;
}

/* Entry idx of networks.nodes or networks.edges (list): an object whose
 * `file_key` names the HDF5 file and `types_key` the CSV types table (keyed by
 * `id_column`), both resolved (h5path, csvpath: SON_PATH bytes), the table
 * read into *types. */
ns_status ns_son_open_entry(reader *r, const ns_json *entry, const char *list, int idx, const char *file_key,
                            const char *types_key, const char *id_column, char *h5path, char *csvpath,
                            ns_son_table *types) {
    char what[64];
    snprintf(what, sizeof what, "networks.%s[%d]", list, idx);
    if (entry->kind != NS_JSON_OBJECT)
        return ns_fail(NS_ERR_PARSE, "%s: %s (line %d) is %s, not an object", r->man.name, what, entry->line,
                       ns_json_kind_name(entry->kind));
    const char *s1, *s2;
    ns_status st = get_string(&r->man, entry, file_key, what, 1, &s1);
    if (st == NS_OK) st = get_string(&r->man, entry, types_key, what, 1, &s2);
    if (st == NS_OK) st = ns_son_resolve(&r->man, s1, what, h5path, SON_PATH);
    if (st == NS_OK) st = ns_son_resolve(&r->man, s2, what, csvpath, SON_PATH);
    if (st != NS_OK) return st;
    return ns_son_table_read(csvpath, id_column, types);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A SONATA spikes file: /spikes/POP/{timestamps,node_ids} for the virtual
 * populations (`only`: that population; NULL: every one in the file). */
static ns_status read_spikes(reader *r, const char *path, const char *only) {
    h5quiet hq;
    ns_son_quiet_on(&hq);
    ns_status st = NS_OK;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) st = ns_fail(NS_ERR_IO, "%s: cannot open as HDF5 (a SONATA spikes file)", path);
    hid_t sp = H5I_INVALID_HID;
    if (st == NS_OK && !ns_son_is_group(f, "spikes")) st = ns_fail(NS_ERR_PARSE, "%s: no group /spikes", path);
    if (st == NS_OK) sp = H5Gopen2(f, "spikes", H5P_DEFAULT);
    char **names = NULL;
    int n_names = 0;
    if (st == NS_OK) {
        char where[SON_PATH + 16];
        snprintf(where, sizeof where, "%s: /spikes", path);
        st = ns_son_h5_members(sp, where, &names, &n_names);
    }
    if (st == NS_OK && only && !ns_son_is_group(sp, only))
        st = ns_fail(NS_ERR_PARSE, "%s: no population /spikes/%s (the input's node_set)", path, only);
    int used = 0;
    for (int k = 0; k < n_names && st == NS_OK; ++k) {
        if (only && strcmp(names[k], only) != 0) continue;
        char where[SON_PATH + 300];
        snprintf(where, sizeof where, "%s: /spikes/%s", path, names[k]);
        if (!ns_son_is_group(sp, names[k])) {
            if (only) st = ns_fail(NS_ERR_PARSE, "%s: not a group (old-style /spikes/timestamps is not read)", where);
            continue;
        }
        pop *p = ns_son_find_pop(r, names[k]);
        if (!p) {
            st = ns_fail(NS_ERR_PARSE, "%s: no node population '%s' in the network", where, names[k]);
            break;
        }
        if (p->virtual_ != 1) {
            st = ns_fail(NS_ERR_PARSE, "%s: population '%s' is not virtual: input spikes drive virtual nodes only",
                         where, names[k]);
            break;
        }
        hid_t g = H5Gopen2(sp, names[k], H5P_DEFAULT);
        double *t = NULL;
        int64_t *id = NULL, nt = 0, ni = 0;
        st = ns_son_h5_read(g, "timestamps", where, 0, (void **)&t, &nt);
        if (st == NS_OK) st = ns_son_h5_read(g, "node_ids", where, 1, (void **)&id, &ni);
        if (st == NS_OK && nt != ni)
            st = ns_fail(NS_ERR_PARSE, "%s: timestamps has %lld entries, node_ids %lld", where, (long long)nt,
                         (long long)ni);
        for (int64_t s = 0; s < nt && st == NS_OK; ++s) {
            if (id[s] < 0 || id[s] >= p->n)
                st = ns_fail(NS_ERR_PARSE, "%s: spike %lld: node id %lld is outside population %s (%lld nodes)", where,
                             (long long)s, (long long)id[s], p->name, (long long)p->n);
            else if (!isfinite(t[s]) || t[s] < 0.0)
                st = ns_fail(NS_ERR_PARSE, "%s: spike %lld: time %g ms (finite and >= 0 only)", where, (long long)s,
                             t[s]);
            else {
                const int64_t v = id[s];
                if (p->n_times[v] == p->cap_times[v]) {
                    const int64_t c = p->cap_times[v] ? 2 * p->cap_times[v] : 8;
                    double *x = realloc(p->times[v], (size_t)c * sizeof *x);
                    if (!x) {
                        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", where);
                        break;
                    }
                    p->times[v] = x;
                    p->cap_times[v] = c;
                }
                p->times[v][p->n_times[v]++] = t[s];
            }
        }
        p->has_input = 1;
        ++used;
        free(t);
        free(id);
        H5Gclose(g);
    }
    if (st == NS_OK && used == 0) st = ns_fail(NS_ERR_PARSE, "%s: no population of spikes in /spikes", path);
    ns_son_free_names(names, n_names);
    if (sp >= 0) H5Gclose(sp);
    if (f >= 0) H5Fclose(f);
    ns_son_quiet_off(&hq);
    return st;
}

static ns_status read_inputs(reader *r, const char *input_spikes) {
    if (input_spikes) return read_spikes(r, input_spikes, NULL);
    const ns_json *in = ns_json_get(r->cfg, "inputs");
    if (!in) return NS_OK;
    if (in->kind != NS_JSON_OBJECT)
        return ns_fail(NS_ERR_PARSE, "%s: inputs (line %d) is %s, not an object", r->sim.name, in->line,
                       ns_json_kind_name(in->kind));
    for (size_t k = 0; k < in->n; ++k) {
        char what[300];
        snprintf(what, sizeof what, "inputs.%.200s", in->keys[k]);
        const ns_json *e = &in->items[k];
        const char *type, *module, *file, *node_set;
        ns_status st = get_string(&r->sim, e, "input_type", what, 1, &type);
        if (st == NS_OK) st = get_string(&r->sim, e, "module", what, 0, &module);
        if (st == NS_OK) st = get_string(&r->sim, e, "input_file", what, 1, &file);
        if (st == NS_OK) st = get_string(&r->sim, e, "node_set", what, 1, &node_set);
        if (st != NS_OK) return st;
        if (strcmp(type, "spikes") != 0)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: %s (line %d): input_type '%s' is not read (spikes only)",
                           r->sim.name, what, e->line, type);
        if (module && strcmp(module, "sonata") != 0 && strcmp(module, "h5") != 0)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "%s: %s (line %d): module '%s' is not read (sonata or h5: a SONATA spikes file)",
                           r->sim.name, what, e->line, module);
        char path[SON_PATH];
        if ((st = ns_son_resolve(&r->sim, file, what, path, sizeof path)) != NS_OK) return st;
        pop *p = ns_son_find_pop(r, node_set);
        if (!p)
            return ns_fail(NS_ERR_PARSE, "%s: %s: node_set '%s' is not a node population of the network (node set "
                           "files are not read)", r->sim.name, what, node_set);
        if ((st = read_spikes(r, path, node_set)) != NS_OK) return st;
    }
    return NS_OK;
}

static ns_status read_all(reader *r, const char *config, const char *input_spikes) {
    ns_status st = ns_json_read(config, &r->cfg);
    if (st != NS_OK) return st;
    if (r->cfg->kind != NS_JSON_OBJECT) return ns_fail(NS_ERR_PARSE, "%s: not a JSON object", config);
    if ((st = manifest_load(&r->sim, r->cfg, config)) != NS_OK) return st;
    /* a simulation config names its circuit config in "network" */
    const ns_json *root = r->cfg;
    const char *circuit = NULL;
    if (!ns_json_get(r->cfg, "networks")) {
        if ((st = get_string(&r->sim, r->cfg, "network", "config", 0, &circuit)) != NS_OK) return st;
        if (!circuit)
            return ns_fail(NS_ERR_PARSE, "%s: neither \"networks\" (a circuit config) nor \"network\" (a simulation "
                           "config naming its circuit config)", config);
        char path[SON_PATH];
        if ((st = ns_son_resolve(&r->sim, circuit, "network", path, sizeof path)) != NS_OK) return st;
        if ((st = ns_json_read(path, &r->circuit)) != NS_OK) return st;
        if (r->circuit->kind != NS_JSON_OBJECT) return ns_fail(NS_ERR_PARSE, "%s: not a JSON object", path);
        root = r->circuit;
        if ((st = manifest_load(&r->man, root, path)) != NS_OK) return st;
    } else if ((st = manifest_load(&r->man, root, config)) != NS_OK)
        return st;
    if ((st = components(r, root)) != NS_OK) return st;
    const ns_json *nets = ns_json_get(root, "networks");
    if (!nets || nets->kind != NS_JSON_OBJECT)
        return ns_fail(NS_ERR_PARSE, "%s: \"networks\" must be an object with \"nodes\" and \"edges\"", r->man.name);
    const ns_json *nodes = ns_json_get(nets, "nodes"), *edges = ns_json_get(nets, "edges");
    if (!nodes || nodes->kind != NS_JSON_ARRAY || nodes->n == 0)
        return ns_fail(NS_ERR_PARSE, "%s: networks.nodes must be a non-empty array", r->man.name);
    if (edges && edges->kind != NS_JSON_ARRAY)
        return ns_fail(NS_ERR_PARSE, "%s: networks.edges (line %d) must be an array", r->man.name, edges->line);
    /* run settings */
    double run[5];
    const ns_json *rn = ns_json_get(r->cfg, "run"), *cond = ns_json_get(r->cfg, "conditions");
    if ((st = get_number(&r->sim, rn, "tstop", "run", &run[0])) != NS_OK ||
        (st = get_number(&r->sim, rn, "dt", "run", &run[1])) != NS_OK ||
        (st = get_number(&r->sim, cond, "celsius", "conditions", &run[2])) != NS_OK ||
        (st = get_number(&r->sim, cond, "v_init", "conditions", &run[3])) != NS_OK ||
        (st = get_number(&r->sim, rn, "spike_threshold", "run", &run[4])) != NS_OK)
        return st;
    r->threshold = isnan(run[4]) ? -15.0 : run[4]; /* BMTK's default */
    char name[SON_PATH];
    snprintf(name, sizeof name, "%s", config);
    if ((st = ns_netbuild_create(name, &r->net)) != NS_OK) return st;
    ns_netbuild_run(r->net, run[0], run[1], run[2], run[3], r->threshold);
    char model[SON_PATH] = "", model_from[SON_PATH + 64] = "";
    for (size_t k = 0; k < nodes->n && st == NS_OK; ++k)
        st = ns_son_read_nodes(r, &nodes->items[k], (int)k, model, sizeof model, model_from, sizeof model_from);
    if (st == NS_OK && model[0]) st = ns_netbuild_model(r->net, model);
    if (st == NS_OK) st = ns_netbuild_finish(r->net);
    /* sources: the detectors of the cells, then the trains of the virtual nodes */
    if (st == NS_OK) st = ns_netbuild_detectors(r->net, r->threshold);
    int64_t n_src = ns_network_cells(r->net);
    for (int k = 0; k < r->n_pops && st == NS_OK; ++k)
        for (int64_t q = 0; q < r->pops[k].n; ++q)
            if (r->pops[k].kind[q] == 1) r->pops[k].source[q] = r->pops[k].cell[q];
    if (st == NS_OK) st = read_inputs(r, input_spikes);
    for (int k = 0; k < r->n_pops && st == NS_OK; ++k) {
        pop *p = &r->pops[k];
        if (p->virtual_ == -1)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: biophysical and virtual nodes in one population (one kind per "
                           "population)", p->where);
        if (p->virtual_ != 1) continue;
        if (!p->has_input)
            return ns_fail(NS_ERR_PARSE, "%s: virtual population '%s' has no spikes (an \"inputs\" entry of "
                           "input_type spikes with node_set '%s', or an input spikes file)", p->where, p->name, p->name);
        for (int64_t q = 0; q < p->n && st == NS_OK; ++q) {
            qsort(p->times[q], (size_t)p->n_times[q], sizeof(double), cmp_double);
            p->source[q] = n_src++;
            st = ns_netbuild_train(r->net, p->times[q], p->n_times[q]);
        }
    }
    /* the sources' nodes, for the spikes file */
    if (st == NS_OK) {
        int32_t *sp = malloc((size_t)(n_src + 1) * sizeof *sp);
        int64_t *sn = malloc((size_t)(n_src + 1) * sizeof *sn);
        const char **pn = malloc((size_t)(r->n_pops + 1) * sizeof *pn);
        if (!sp || !sn || !pn) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", config);
        for (int k = 0; k < r->n_pops && st == NS_OK; ++k) {
            pn[k] = r->pops[k].name;
            for (int64_t q = 0; q < r->pops[k].n; ++q) {
                sp[r->pops[k].source[q]] = k;
                sn[r->pops[k].source[q]] = q;
            }
        }
        if (st == NS_OK) st = ns_netbuild_populations(r->net, r->n_pops, pn);
        if (st == NS_OK) st = ns_netbuild_source_nodes(r->net, sp, sn, n_src);
        free(sp);
        free(sn);
        free(pn);
    }
    for (size_t k = 0; edges && k < edges->n && st == NS_OK; ++k) st = ns_son_read_edges(r, &edges->items[k], (int)k);
    return st;
}

ns_status ns_network_read_sonata(const char *config, const char *input_spikes, ns_network_t **out) {
    if (!config || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_read_sonata: NULL argument");
    *out = NULL;
    reader r;
    memset(&r, 0, sizeof r);
    ns_status st = read_all(&r, config, input_spikes);
    if (st != NS_OK) ns_network_destroy(r.net);
    else *out = r.net;
    reader_free(&r);
    return st;
}

/* ------------------------------------------------------------ spikes output */

typedef struct spk {
    double t;
    int64_t node;
} spk;
static int cmp_spk(const void *a, const void *b) {
    const spk *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

static herr_t write_string_attr(hid_t obj, const char *name, const char *value) {
    hid_t ty = H5Tcopy(H5T_C_S1);
    H5Tset_size(ty, H5T_VARIABLE);
    H5Tset_cset(ty, H5T_CSET_UTF8);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, ty, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Awrite(a, ty, &value);
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(ty);
    return e;
}

/* Object creation properties without modification times: the same spikes give the same bytes
 * (one process or many, today or tomorrow). */
static hid_t untimed(hid_t cls) {
    hid_t p = H5Pcreate(cls);
    if (p >= 0) H5Pset_obj_track_times(p, 0);
    return p;
}

static herr_t write_1d(hid_t g, const char *name, hid_t file_type, hid_t mem_type, int64_t n, const void *data) {
    hsize_t dims[1] = {(hsize_t)n};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = untimed(H5P_DATASET_CREATE);
    hid_t ds = H5Dcreate2(g, name, file_type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dcpl >= 0) H5Pclose(dcpl);
    herr_t e = ds < 0 ? -1 : n > 0 ? H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
    if (e >= 0 && ds >= 0 && !strcmp(name, "timestamps")) e = write_string_attr(ds, "units", "ms");
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(sp);
    return e;
}

ns_status ns_network_write_spikes(const ns_network_t *net, const char *path, int64_t n, const int64_t *source,
                                  const double *t) {
    if (!net || !path || n < 0 || (n > 0 && (!source || !t)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_write_spikes: NULL argument");
    const int32_t n_pops = ns_network_populations(net);
    if (n_pops == 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: not a SONATA network (no node populations)", path);
    const int64_t n_cells = ns_network_cells(net);
    int32_t *pop_of = malloc((size_t)(n > 0 ? n : 1) * sizeof *pop_of);
    spk *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof *buf);
    ns_status st = pop_of && buf ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    int *has = calloc((size_t)n_pops, sizeof *has);
    if (!has) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    for (int64_t k = 0; k < n && st == NS_OK; ++k) {
        int64_t node;
        if (source[k] < 0 || source[k] >= ns_network_sources(net))
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: spike %lld: no source %lld", path, (long long)k, (long long)source[k]);
        else if (!isfinite(t[k]))
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: spike %lld: time %g", path, (long long)k, t[k]);
        else if ((st = ns_network_source_node(net, source[k], &pop_of[k], &node)) == NS_OK && source[k] < n_cells)
            has[pop_of[k]] = 1;
    }
    h5quiet hq;
    ns_son_quiet_on(&hq);
    hid_t f = st == NS_OK ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT) : H5I_INVALID_HID;
    if (st == NS_OK && f < 0) st = ns_fail(NS_ERR_IO, "%s: cannot create an HDF5 file", path);
    hid_t gcpl = untimed(H5P_GROUP_CREATE);
    hid_t top = st == NS_OK ? H5Gcreate2(f, "spikes", H5P_DEFAULT, gcpl, H5P_DEFAULT) : H5I_INVALID_HID;
    if (st == NS_OK && top < 0) st = ns_fail(NS_ERR_IO, "%s: cannot create /spikes", path);
    for (int32_t p = 0; p < n_pops && st == NS_OK; ++p) {
        if (!has[p]) continue;
        int64_t m = 0;
        for (int64_t k = 0; k < n; ++k) {
            int32_t pp;
            int64_t node;
            if (source[k] < n_cells && pop_of[k] == p && ns_network_source_node(net, source[k], &pp, &node) == NS_OK)
                buf[m++] = (spk){t[k], node};
        }
        qsort(buf, (size_t)m, sizeof *buf, cmp_spk);
        double *ts = malloc((size_t)(m > 0 ? m : 1) * sizeof *ts);
        uint64_t *ids = malloc((size_t)(m > 0 ? m : 1) * sizeof *ids);
        if (!ts || !ids) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
        for (int64_t k = 0; k < m && st == NS_OK; ++k) {
            ts[k] = buf[k].t;
            ids[k] = (uint64_t)buf[k].node;
        }
        hid_t g = st == NS_OK ? H5Gcreate2(top, ns_network_population(net, p), H5P_DEFAULT, gcpl, H5P_DEFAULT)
                              : H5I_INVALID_HID;
        if (st == NS_OK &&
            (g < 0 || write_string_attr(g, "sorting", "by_time") < 0 ||
             write_1d(g, "timestamps", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, m, ts) < 0 ||
             write_1d(g, "node_ids", H5T_STD_U64LE, H5T_NATIVE_UINT64, m, ids) < 0))
            st = ns_fail(NS_ERR_IO, "%s: writing /spikes/%s failed", path, ns_network_population(net, p));
        if (g >= 0) H5Gclose(g);
        free(ts);
        free(ids);
    }
    if (top >= 0) H5Gclose(top);
    if (gcpl >= 0) H5Pclose(gcpl);
    if (f >= 0 && H5Fclose(f) < 0 && st == NS_OK) st = ns_fail(NS_ERR_IO, "%s: closing failed", path);
    ns_son_quiet_off(&hq);
    free(pop_of);
    free(buf);
    free(has);
    return st;
}

#endif /* NS_HAVE_HDF5 */
