/* Models: which NMODL mechanisms are inserted where (ns_sim_model, the model
 * file, parameter expressions in the distance from the soma) and their
 * resolution per node of each shape (model_impl.h), docs/simulation.md,
 * "Models: mechanisms from NMODL". */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech/builtin/builtin.h"
#include "mech/model_build.h"
#include "core/error.h"
#include "core/file.h"
#include "core/number.h"

/* ------------------------------------------------------------ the model */

/* *dst = src with its arrays in one allocation (dst->values first: free((void *)dst->values)) */
ns_status ns_model_ftable_copy(const ns_mech_ftable *src, ns_mech_ftable *dst) {
    size_t n = 1, nx = 0;
    for (int k = 0; k < src->dims; ++k) {
        n *= (size_t)src->size[k];
        if (src->x[k]) nx += (size_t)src->size[k];
    }
    double *blk = malloc((n + nx) * sizeof *blk);
    if (!blk) return ns_fail(NS_ERR_OUT_OF_MEMORY, "FUNCTION_TABLE values");
    *dst = *src;
    memcpy(blk, src->values, n * sizeof *blk);
    dst->values = blk;
    double *x = blk + n;
    for (int k = 0; k < src->dims; ++k)
        if (src->x[k]) {
            memcpy(x, src->x[k], (size_t)src->size[k] * sizeof *x);
            dst->x[k] = x;
            x += src->size[k];
        }
    return NS_OK;
}

/* FUNCTION_TABLE `name` (NAME_MECH) of the catalogue: its entry and table index, or an error */
static ns_status find_ftable(const ns_sim_model_t *m, const char *name, int *desc_out, int *k_out) {
    int desc = -1, k = -1;
    for (int q = 0; q < m->n_descs && desc < 0; ++q) {
        const ns_mech_desc *d = m->descs[q];
        const size_t nl = strlen(name), ml = strlen(d->name);
        for (int j = 0; j < d->n_ftables && desc < 0; ++j) {
            const size_t fl = strlen(d->ftable_names[j]);
            if (nl == fl + 1 + ml && !strncmp(name, d->ftable_names[j], fl) && name[fl] == '_' &&
                !strcmp(name + fl + 1, d->name))
                desc = q, k = j;
        }
    }
    if (desc < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "FUNCTION_TABLE %s: no mechanism of the model's library has it (NAME_MECH: the table's "
                       "name in the .mod file, '_', the mechanism's)", name);
    *desc_out = desc;
    *k_out = k;
    return NS_OK;
}

static ns_status ftable_store(ns_sim_model_t *m, const char *name, const ns_mech_ftable *t, int desc, int k,
                              int store);

ns_status ns_sim_model_set_function_table(ns_sim_model_t *m, const char *name, const ns_mech_ftable *t) {
    if (!m || !name || !t) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_model_set_function_table: NULL argument");
    int desc = -1, k = -1;
    const ns_status found = find_ftable(m, name, &desc, &k);
    if (found != NS_OK) return found;
    return ftable_store(m, name, t, desc, k, 1);
}

/* Check table t for entry k of catalogue entry desc; store a copy when `store` */
static ns_status ftable_store(ns_sim_model_t *m, const char *name, const ns_mech_ftable *t, int desc, int k,
                              int store) {
    const ns_mech_desc *d = m->descs[desc];
    if (t->dims != d->ftable_dims[k])
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "FUNCTION_TABLE %s: %d arguments given, the .mod file declares %d", name,
                       t->dims, d->ftable_dims[k]);
    if (!t->values) return ns_fail(NS_ERR_INVALID_ARGUMENT, "FUNCTION_TABLE %s: no values", name);
    for (int q = 0; q < t->dims; ++q) {
        if (t->size[q] < 1 || t->size[q] > (1 << 24))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "FUNCTION_TABLE %s: argument %d has %d points", name, q + 1,
                           t->size[q]);
        if (!t->x[q] && !(t->lo[q] <= t->hi[q]))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "FUNCTION_TABLE %s: argument %d: lo %g above hi %g", name, q + 1,
                           t->lo[q], t->hi[q]);
        for (int j = 1; t->x[q] && j < t->size[q]; ++j)
            if (!(t->x[q][j] > t->x[q][j - 1]))
                return ns_fail(NS_ERR_INVALID_ARGUMENT,
                               "FUNCTION_TABLE %s: argument %d's abscissae do not increase at %d (%g after %g)", name,
                               q + 1, j, t->x[q][j], t->x[q][j - 1]);
    }
    if (!store) return NS_OK;
    int at = 0;
    while (at < m->n_ftabs && !(m->ftabs[at].desc == desc && m->ftabs[at].k == k)) ++at;
    if (at == m->n_ftabs) {
        model_ftable *n = realloc(m->ftabs, (size_t)(m->n_ftabs + 1) * sizeof *n);
        if (!n) return ns_fail(NS_ERR_OUT_OF_MEMORY, "FUNCTION_TABLE %s", name);
        m->ftabs = n;
        m->n_ftabs++;
    } else {
        free((void *)m->ftabs[at].t.values);
    }
    m->ftabs[at].desc = desc;
    m->ftabs[at].k = k;
    ns_status st = ns_model_ftable_copy(t, &m->ftabs[at].t);
    if (st != NS_OK) m->ftabs[at] = m->ftabs[--m->n_ftabs];
    return st;
}

/* The model text's `table.NAME_MECH = PART ; PART ...` (docs/simulation.md, "Models"): per argument
 * `x X1 X2 ...` (increasing abscissae) or `range N LO HI` (N points from LO to HI), then `y V ...`
 * (the values in row order); `y V` alone: a constant (NEURON's table_f(value)). */
static ns_status model_table(ns_sim_model_t *m, const char *name, char *value, int store) {
    int desc = -1, k = -1;
    ns_status st = find_ftable(m, name, &desc, &k);
    if (st != NS_OK) return st;
    const int dims = m->descs[desc]->ftable_dims[k];
    ns_mech_ftable t;
    memset(&t, 0, sizeof t);
    size_t n = 0, cap = 0, x_at[4] = {0}, y_at = 0;
    double *num = NULL;
    int parts = 0, have_y = 0, x_part[4] = {0};
    char *save = NULL;
    for (char *part = strtok_r(value, ";", &save); part && st == NS_OK; part = strtok_r(NULL, ";", &save)) {
        char *tok_save = NULL, *kw = strtok_r(part, " \t,", &tok_save);
        if (!kw) continue;
        if (have_y) { st = ns_fail(NS_ERR_PARSE, "a part after the values (y comes last)"); break; }
        const int is_x = !strcmp(kw, "x"), is_range = !strcmp(kw, "range"), is_y = !strcmp(kw, "y");
        if (!is_x && !is_range && !is_y) {
            st = ns_fail(NS_ERR_PARSE, "'%s': expected x X1 X2 ..., range N LO HI or y V1 V2 ...", kw);
            break;
        }
        if (!is_y && parts == dims) {
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "more arguments than the .mod file's %d", dims);
            break;
        }
        const size_t from = n;
        for (char *tok = strtok_r(NULL, " \t,", &tok_save); tok && st == NS_OK; tok = strtok_r(NULL, " \t,", &tok_save)) {
            if (n == cap) {
                double *g = realloc(num, (cap = cap ? 2 * cap : 64) * sizeof *g);
                if (!g) { st = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); break; }
                num = g;
            }
            st = ns_number_parse(tok, -HUGE_VAL, HUGE_VAL, &num[n++]);
        }
        if (st != NS_OK) break;
        const size_t got = n - from;
        if (is_range) {
            if (got != 3 || !(num[from] >= 1 && num[from] <= (1 << 24) && num[from] == floor(num[from]))) {
                st = ns_fail(NS_ERR_PARSE, "range N LO HI: three numbers, N a count of points");
                break;
            }
            t.size[parts] = (int)num[from];
            t.lo[parts] = num[from + 1];
            t.hi[parts] = num[from + 2];
        } else if (is_x) {
            if (got < 1 || got > (1 << 24)) { st = ns_fail(NS_ERR_PARSE, "x: no abscissae"); break; }
            t.size[parts] = (int)got;
            x_at[parts] = from;
            x_part[parts] = 1;
        } else {
            y_at = from;
            have_y = 1;
            size_t want = 1;
            for (int q = 0; q < parts; ++q) want *= (size_t)t.size[q];
            if (parts == 0 && got == 1) { /* a constant: one point per argument */
                for (int q = 0; q < dims; ++q) t.size[q] = 1;
                parts = dims;
            } else if (parts != dims || got != want) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%zu values for %d argument%s of %zu points in all (the .mod "
                             "file declares %d arguments)", got, parts, parts == 1 ? "" : "s", want, dims);
                break;
            }
            continue;
        }
        parts++;
    }
    if (st == NS_OK && !have_y) st = ns_fail(NS_ERR_PARSE, "no values (y V1 V2 ...)");
    if (st == NS_OK) {
        t.dims = dims;
        for (int q = 0; q < dims; ++q) t.x[q] = x_part[q] ? num + x_at[q] : NULL;
        t.values = num + y_at;
        st = ftable_store(m, name, &t, desc, k, store);
    }
    free(num);
    return st;
}

static const char *const REGION_SELECTORS =
    "soma, axon, basal, apical, other, dend, all, sec:K (section index K), swc:ID (the section whose first SWC "
    "point has id ID) or one section by NEURON's name (dend[3], apic[12], axon[0]; `neurosolve morph FILE "
    "--sections` lists them), each with (X) for its segment containing x = X";

/* A region name, or one section (ns_location_parse's grammar): sec:K, swc:ID,
 * dend[3], or one segment: sec:K(X), swc:ID(X), dend[3](X) (NEURON's sec(x):
 * the segment containing x, 0 <= X <= 1). */
static int region_mask(const char *where, selector *sel) {
    sel->regions = (1u << NS_REGION_COUNT) - 1u;
    sel->has_loc = 0;
    for (int r = 0; r < NS_REGION_COUNT; ++r)
        if (strcmp(where, ns_region_name((ns_region)r)) == 0) {
            sel->regions = 1u << r;
            return 0;
        }
    if (strcmp(where, "dend") == 0) sel->regions = (1u << NS_REGION_BASAL) | (1u << NS_REGION_APICAL);
    else if (strcmp(where, "all") == 0) return 0;
    else if (ns_location_parse(where, &sel->loc) == NS_OK &&
             (sel->loc.kind == NS_LOCATION_SECTION || sel->loc.kind == NS_LOCATION_SWC_ID ||
              sel->loc.kind == NS_LOCATION_NAMED))
        sel->has_loc = 1;
    else {
        ns_clear_error();
        return -1;
    }
    return 0;
}

ns_status ns_sim_model_create(const ns_mech_library_t *library, ns_sim_model_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_model_create: out is NULL");
    *out = NULL;
    ns_sim_model_t *m = calloc(1, sizeof *m);
    const ns_mech_catalogue *bi = ns_mech_builtin();
    const int n_lib = library ? ns_mech_library_count(library) : 0;
    if (m) m->descs = malloc((size_t)(n_lib + bi->n) * sizeof *m->descs);
    if (!m || !m->descs) {
        free(m);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_model_create");
    }
    for (int k = 0; k < n_lib; ++k) m->descs[m->n_descs++] = ns_mech_library_get(library, k);
    for (int k = 0; k < bi->n; ++k) {
        int shadowed = 0;
        for (int q = 0; q < n_lib; ++q) shadowed |= strcmp(m->descs[q]->name, bi->mechs[k]->name) == 0;
        if (!shadowed) m->descs[m->n_descs++] = bi->mechs[k];
    }
    *out = m;
    return NS_OK;
}

void ns_sim_model_destroy(ns_sim_model_t *m) {
    if (!m) return;
    for (int k = 0; k < m->n; ++k) free(m->stmts[k].value.ops);
    for (int k = 0; k < m->n_ftabs; ++k) free((void *)m->ftabs[k].t.values);
    free(m->ftabs);
    free(m->stmts);
    free(m->descs);
    free(m);
}

/* The names of the model's mechanisms, for messages. */
static void name_list(const ns_sim_model_t *m, char *list, size_t size) {
    size_t used = 0;
    list[0] = 0;
    for (int k = 0; k < m->n_descs && used + 40 < size; ++k)
        used += (size_t)snprintf(list + used, size - used, "%s%s", k ? ", " : "", m->descs[k]->name);
}

static stmt *push(ns_sim_model_t *m) {
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 32;
        stmt *s = realloc(m->stmts, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        m->stmts = s;
        m->cap = cap;
    }
    stmt *s = &m->stmts[m->n];
    memset(s, 0, sizeof *s);
    return s;
}

static ns_status bad_where(const char *fn, const char *where) {
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: region '%s' is not one of %s", fn, where ? where : "(null)",
                   REGION_SELECTORS);
}

static void set_where(stmt *s, const char *fn) { snprintf(s->where, sizeof s->where, "%s", fn); }

/* ctx: the statement's place for messages (a file position), or NULL: the call. */
static ns_status model_insert(ns_sim_model_t *m, const char *where, const char *mechanism, const char *ctx) {
    const char *fn = ctx ? ctx : "ns_sim_model_insert";
    if (!m || !mechanism) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    selector sel;
    if (!where || region_mask(where, &sel) != 0) return bad_where(fn, where);
    int idx = -1;
    for (int k = 0; k < m->n_descs && idx < 0; ++k)
        if (strcmp(m->descs[k]->name, mechanism) == 0) idx = k;
    if (idx < 0) {
        char list[512];
        name_list(m, list, sizeof list);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: no mechanism '%s' (the library and the built-in set have: %s)",
                       fn, mechanism, list);
    }
    const ns_mech_desc *d = m->descs[idx];
    if (d->kind != NS_MECH_DENSITY)
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: %s is a POINT_PROCESS: a model inserts density mechanisms (SUFFIX)",
                       fn, mechanism);
    stmt *s = push(m);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    s->kind = ST_INSERT;
    s->regions = sel.regions;
    s->has_loc = sel.has_loc;
    s->loc = sel.loc;
    snprintf(s->loc_text, sizeof s->loc_text, "%s", where);
    s->mech = idx;
    set_where(s, fn);
    snprintf(s->text, sizeof s->text, "%s.insert %s", where, mechanism);
    ++m->n;
    return NS_OK;
}

/* An ion variable eX, Xi, Xo of an ion NEURON knows (na, k, ca, cl) or a
 * mechanism declares: 1 with ion and which set, else 0. */
static int ion_name(const ns_sim_model_t *m, const char *name, char *ion, int *which) {
    static const char *const known[] = {"na", "k", "ca", "cl"};
    for (int k = -1; k < m->n_descs; ++k) {
        const int count = k < 0 ? 4 : m->descs[k]->n_ions;
        for (int j = 0; j < count; ++j) {
            const char *x = k < 0 ? known[j] : m->descs[k]->ions[j].name;
            const int q = ion_var_of(name, x);
            if (q >= 0 && q <= 2 && strlen(x) < 16) {
                snprintf(ion, 16, "%s", x);
                *which = q; /* ION_E, ION_CI, ION_CO */
                return 1;
            }
        }
    }
    return 0;
}

/* NAME_MECH: the mechanism (library index) whose name ends `name` after an
 * underscore, and the prefix. */
static int split_suffix(const ns_sim_model_t *m, const char *name, char *prefix, size_t prefix_size) {
    int best = -1;
    size_t best_len = 0;
    for (int k = 0; k < m->n_descs; ++k) {
        const size_t ml = suffix_match(name, m->descs[k]->name);
        if (ml > best_len) best = k, best_len = ml;
    }
    if (best >= 0) snprintf(prefix, prefix_size, "%.*s", (int)(strlen(name) - best_len - 1), name);
    return best;
}

static ns_status unknown_name(const ns_sim_model_t *m, const char *fn, const char *name) {
    char list[512];
    name_list(m, list, sizeof list);
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "%s: '%s' is neither NAME_MECH for a mechanism of the library (%s) nor an ion's eX, Xi, Xo", fn,
                   name, list);
}

static ns_status model_set(ns_sim_model_t *m, const char *where, const char *name, const char *text,
                           const char *ctx) {
    const char *fn = ctx ? ctx : "ns_sim_model_set";
    if (!m || !name || !text) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    selector sel;
    if (!where || region_mask(where, &sel) != 0) return bad_where(fn, where);
    stmt s;
    memset(&s, 0, sizeof s);
    s.regions = sel.regions;
    s.has_loc = sel.has_loc;
    s.loc = sel.loc;
    snprintf(s.loc_text, sizeof s.loc_text, "%s", where);
    char prefix[96];
    const int mech = strcmp(name, "cm") == 0 ? -1 : split_suffix(m, name, prefix, sizeof prefix);
    if (strcmp(name, "cm") == 0) {
        s.kind = ST_CM; /* NEURON's cm, a range variable: per section or segment as any parameter */
    } else if (mech >= 0) {
        const ns_mech_desc *d = m->descs[mech];
        int f;
        ns_status st = ns_mech_field_index(d, prefix, &f);
        if (st == NS_OK && f >= d->n_params)
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "'%s' is not a PARAMETER of %s (assigned and state variables are "
                                                  "computed by the mechanism)", prefix, d->name);
        if (st != NS_OK) {
            char pre[160];
            snprintf(pre, sizeof pre, "%s: %s", fn, name);
            ns_error_prefix(pre);
            return st;
        }
        s.kind = ST_SET;
        s.mech = mech;
        s.field = f;
    } else if (ion_name(m, name, s.ion, &s.which)) {
        s.kind = ST_ION;
    } else {
        /* eX_fixed: NEURON's ion_style(X, c, 1, 0, 0, .): e a parameter even where a concentration is written */
        const size_t len = strlen(name);
        char base[64];
        if (len > 6 && len - 6 < sizeof base && !strcmp(name + len - 6, "_fixed")) {
            snprintf(base, sizeof base, "%.*s", (int)(len - 6), name);
            if (ion_name(m, base, s.ion, &s.which) && s.which == ION_E) s.kind = ST_ION, s.e_fixed = 1;
            else return unknown_name(m, fn, name);
        } else return unknown_name(m, fn, name);
    }
    char msg[200];
    if (ns_model_expr_compile(text, &s.value, msg, sizeof msg) != NS_OK)
        return ns_fail(NS_ERR_PARSE, "%s: %s = %.60s%s: %s", fn, name, text, strlen(text) > 60 ? "..." : "",
                       msg); /* the reason after at most 60 characters of the text */
    stmt *slot = push(m);
    if (!slot) {
        free(s.value.ops);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
    }
    *slot = s;
    set_where(slot, fn);
    snprintf(slot->text, sizeof slot->text, "%s.%s", where, name);
    ++m->n;
    return NS_OK;
}

static ns_status model_set_global(ns_sim_model_t *m, const char *name, double value, const char *ctx) {
    const char *fn = ctx ? ctx : "ns_sim_model_set_global";
    if (!m || !name) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (!isfinite(value)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s = %g must be finite", fn, name, value);
    char prefix[96];
    const int mech = split_suffix(m, name, prefix, sizeof prefix);
    if (mech < 0) return unknown_name(m, fn, name);
    const ns_mech_desc *d = m->descs[mech];
    int g;
    ns_status st = ns_mech_global_index(d, prefix, &g);
    /* NEURON's usetable_MECH is one flag for every TABLE of the mechanism;
     * the translator keeps one per FUNCTION or PROCEDURE (usetable_rates):
     * usetable_MECH sets them all */
    int n_tables = 0;
    if (st != NS_OK && strcmp(prefix, "usetable") == 0)
        for (int k = 0; k < d->n_globals; ++k) n_tables += strncmp(d->global_names[k], "usetable_", 9) == 0;
    if (st != NS_OK && n_tables == 0) {
        char pre[160];
        snprintf(pre, sizeof pre, "%s: %s", fn, name);
        ns_error_prefix(pre);
        return st;
    }
    const int n0 = m->n;
    for (int k = 0; k < (n_tables ? d->n_globals : 1); ++k) {
        if (n_tables && strncmp(d->global_names[k], "usetable_", 9) != 0) continue;
        stmt *s = push(m);
        if (!s) {
            m->n = n0; /* nothing added (a global statement owns no memory) */
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", fn);
        }
        s->kind = ST_GLOBAL;
        s->mech = mech;
        s->field = n_tables ? k : g;
        s->number = value;
        set_where(s, fn);
        snprintf(s->text, sizeof s->text, "global.%s", name);
        ++m->n;
    }
    return NS_OK;
}

ns_status ns_sim_model_insert(ns_sim_model_t *m, const char *where, const char *mechanism) {
    return model_insert(m, where, mechanism, NULL);
}

ns_status ns_sim_model_set(ns_sim_model_t *m, const char *where, const char *name, const char *value) {
    return model_set(m, where, name, value, NULL);
}

ns_status ns_sim_model_set_global(ns_sim_model_t *m, const char *name, double value) {
    return model_set_global(m, name, value, NULL);
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) ++s;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

ns_status ns_sim_model_parse(ns_sim_model_t *m, const char *text, size_t length, const char *name) {
    if (!m || (!text && length)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_model_parse: NULL argument");
    if (!name) name = "model";
    char *buf = malloc(length + 1);
    if (!buf) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_model_parse");
    if (length) memcpy(buf, text, length);
    buf[length] = 0;
    if (memchr(buf, 0, length))
        return free(buf), ns_fail(NS_ERR_PARSE, "%s: a NUL byte in the text", name);
    /* statements go to a copy first: a failed parse leaves the model unchanged */
    const int n0 = m->n;
    ns_status st = NS_OK;
    int line = 0, n_tables = 0;
    char *save = NULL, where[96], **tables = NULL;
    for (char *ln = buf; ln && st == NS_OK; ln = save) {
        save = strchr(ln, '\n');
        if (save) *save++ = 0;
        ++line;
        char *hash = strchr(ln, '#');
        if (hash) *hash = 0;
        char *s = trim(ln);
        if (!*s) continue;
        snprintf(where, sizeof where, "%s:%d", name, line);
        char *eq = strchr(s, '=');
        char *close = strchr(s, ')'); /* sec:K(X).NAME: the dot after the position */
        char *dot = strchr(close && (!eq || close < eq) ? close : s, '.');
        if (!eq || !dot || dot > eq) {
            st = ns_fail(NS_ERR_PARSE, "%s: expected REGION.NAME = VALUE (or REGION.insert = MECH ...)", where);
            break;
        }
        *eq = 0;
        *dot = 0;
        char *region = trim(s), *key = trim(dot + 1), *value = trim(eq + 1);
        if (!*key || !*value) {
            st = ns_fail(NS_ERR_PARSE, "%s: empty name or value", where);
            break;
        }
        if (strcmp(region, "table") == 0) { /* checked here, stored after every line parsed */
            const size_t kl = strlen(key), vl = strlen(value);
            char *copy = malloc(kl + vl + 2);
            if (!copy) { st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_model_parse"); break; }
            memcpy(copy, key, kl + 1);
            memcpy(copy + kl + 1, value, vl + 1);
            if ((st = model_table(m, key, value, 0)) != NS_OK) {
                char pre[600];
                snprintf(pre, sizeof pre, "%s: table.%s", where, key);
                ns_error_prefix(pre);
                free(copy);
            } else {
                char **g = realloc(tables, (size_t)(n_tables + 1) * sizeof *g);
                if (!g) { free(copy); st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_model_parse"); break; }
                tables = g;
                tables[n_tables++] = copy;
            }
        } else if (strcmp(region, "global") == 0) {
            double x = 0.0;
            if ((st = ns_number_parse(value, -HUGE_VAL, HUGE_VAL, &x)) != NS_OK) {
                char pre[600];
                snprintf(pre, sizeof pre, "%s: global.%s", where, key);
                ns_error_prefix(pre);
            } else st = model_set_global(m, key, x, where);
        } else if (strcmp(key, "insert") == 0) {
            char *tok_save = NULL;
            for (char *tok = strtok_r(value, " \t,", &tok_save); tok && st == NS_OK;
                 tok = strtok_r(NULL, " \t,", &tok_save))
                st = model_insert(m, region, tok, where);
        } else st = model_set(m, region, key, value, where);
    }
    for (int q = 0; q < n_tables; ++q) { /* the FUNCTION_TABLEs, once the whole text is good */
        if (st == NS_OK) st = model_table(m, tables[q], tables[q] + strlen(tables[q]) + 1, 1);
        free(tables[q]);
    }
    free(tables);
    free(buf);
    if (st != NS_OK) {
        for (int k = n0; k < m->n; ++k) free(m->stmts[k].value.ops);
        m->n = n0;
    }
    return st;
}

ns_status ns_sim_model_read(ns_sim_model_t *m, const char *path) {
    if (!m || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_model_read: NULL argument");
    char *buf = NULL;
    size_t n = 0;
    ns_status st = ns_file_read_all(path, (size_t)64 << 20, "model file", &buf, &n);
    if (st == NS_OK) st = ns_sim_model_parse(m, buf, n, path);
    free(buf);
    return st;
}

int ns_sim_model_has_cuda(const ns_sim_model_t *model) {
    for (int q = 0; model && q < model->n; ++q) {
        const ns_mech_desc *d = model->descs[model->stmts[q].mech];
        if (model->stmts[q].kind == ST_INSERT && (!d->cuda_init || !d->cuda_current || !d->cuda_state)) return 0;
    }
    return 1;
}

