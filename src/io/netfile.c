/* Network files (docs/networks.md, "Network files"): the native text format
 * of a network, parsed into a description (ns_network_t) that is applied to
 * a simulation through the public network calls of cable.h.
 *
 * One statement per line, '#' starts a comment, tokens split at blanks:
 *   cells NAME COUNT FILE.swc
 *   model FILE | model: STATEMENT
 *   synapse NAME CELLS LOC MECH [PARAM=VALUE ...]
 *   detector NAME CELLS LOC THRESHOLD
 *   train NAME T [T ...]
 *   poisson NAME COUNT RATE_HZ START STOP SEED
 *   connect SOURCES SYNAPSES WEIGHT DELAY [all | p=P [seed=S]]
 *   pointer SYNAPSES NAME CELLS LOC VAR
 *   pointer CELLS LOC NAME CELLS LOC VAR   (a density mechanism's POINTER, NAME = POINTER_MECH)
 *   source NAME SYNAPSES   (point sources: the net_event spikes of each synapse)
 * CELLS, SOURCES, SYNAPSES: REF[+REF...], REF = NAME or NAME[LIST], LIST =
 * ITEM[,ITEM...], ITEM = I, A-B or A-B:STEP (indices within the group, from 0); `cell`
 * names every cell by its global number. A name used again by a statement
 * of its kind appends to the group. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "io/netfile_impl.h"
#include "sim/dist_impl.h"
#include "sim/policy.h"
#include "core/device_impl.h"
#include "neurosolve/network.h"
#include "neurosolve/number.h"

/* ------------------------------------------------------------ helpers */

static int grow(void **p, int64_t n, int64_t *cap, size_t size) {
    if (n < *cap) return 0;
    const int64_t c = *cap ? 2 * *cap : 8;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* Ids held by all lists of the description being parsed (NET_MAX_ITEMS). */
static _Thread_local int64_t ids_held;

static int ids_push(ids *s, int64_t v) {
    if (++ids_held > NET_MAX_ITEMS) return -1;
    if (grow((void **)&s->v, s->n, &s->cap, sizeof *s->v) != 0) return -1;
    s->v[s->n++] = v;
    return 0;
}

static void stmt_free(stmt *s) {
    free(s->a.v);
    free(s->b.v);
    free(s->pname);
    free(s->pvalue);
    free(s->times);
    if (s->edges) {
        ns_netbuild_edges_free(s->edges);
        free(s->edges);
    }
}

void ns_network_destroy(ns_network_t *net) {
    if (!net) return;
    free(net->cell_morph);
    for (int32_t k = 0; k < net->n_morph; ++k) free(net->morph[k]);
    free(net->morph);
    free(net->model_file);
    free(net->model_text);
    for (int32_t g = 0; g < net->n_groups; ++g) free(net->groups[g].m.v);
    free(net->groups);
    for (int64_t s = 0; s < net->n_stmts; ++s) stmt_free(&net->stmts[s]);
    free(net->stmts);
    for (int32_t k = 0; k < net->n_pops; ++k) free(net->pops[k]);
    free(net->pops);
    free(net->src_pop);
    free(net->src_node);
    free(net);
}

/* The parser's state: the file's name and the line, for messages. */
typedef struct ctx {
    ns_network_t *net;
    const char *base;
    int line;
} ctx;

#define FAIL(c, ...) fail_at(c, NS_ERR_PARSE, __VA_ARGS__)

static ns_status fail_at(const ctx *c, ns_status st, const char *fmt, ...) NS_PRINTF_LIKE(3, 4);
static ns_status fail_at(const ctx *c, ns_status st, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ns_fail(st, "%s:%d: %s", c->net->name, c->line, msg);
}

/* Numbers through the one reader (neurosolve/number.h): the same grammar as
 * every other file and option. parse_int answers 1 or 0 (the
 * caller names what was expected); num and integer fail with "FILE:LINE:
 * WHAT: REASON", the reader's reason. */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    return ns_integer_parse(s, lo, hi, out) == NS_OK;
}

/* NS_OK where the reader took the text (ok), else "FILE:LINE: WHAT: REASON",
 * WHAT from fmt, REASON the reader's message. */
static ns_status read_ok(const ctx *c, int ok, const char *fmt, ...) NS_PRINTF_LIKE(3, 4);
static ns_status read_ok(const ctx *c, int ok, const char *fmt, ...) {
    if (ok) return NS_OK;
    char what[256], why[320];
    snprintf(why, sizeof why, "%s", ns_last_error());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return FAIL(c, "%s: %s", what, why);
}

/* A number (an integer) of the text in [min, max] into *out; the message's WHAT from the format and arguments. */
#define num(c, text, min, max, out, ...) read_ok(c, ns_number_parse(text, min, max, out) == NS_OK, __VA_ARGS__)
#define integer(c, text, min, max, out, ...) read_ok(c, ns_integer_parse(text, min, max, out) == NS_OK, __VA_ARGS__)

static int valid_name(const char *s) {
    if (!isalpha((unsigned char)*s) && *s != '_') return 0;
    size_t n = 0;
    for (; *s; ++s, ++n)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return n < NET_NAME;
}

/* A synapse's PARAM: NAME, an array element NAME[K] (VClamp's dur[0]) or a RANDOM variable's
 * stream NAME.NAME (NetStim's ranvar.id1: ns_sim_synapse_set) */
static int valid_param(const char *s) {
    char head[NET_NAME];
    const size_t n = strcspn(s, "[.");
    if (n >= sizeof head) return 0;
    memcpy(head, s, n);
    head[n] = 0;
    if (!valid_name(head)) return 0;
    if (!s[n]) return 1;
    if (s[n] == '.') return valid_name(s + n + 1);
    size_t d = strspn(s + n + 1, "0123456789");
    return d > 0 && d < 10 && s[n + 1 + d] == ']' && !s[n + 2 + d];
}

static group *find_group(ns_network_t *net, const char *name) {
    for (int32_t g = 0; g < net->n_groups; ++g)
        if (strcmp(net->groups[g].name, name) == 0) return &net->groups[g];
    return NULL;
}

/* The group NAME of `kind` a statement adds to: new, or one of the same kind. */
static ns_status group_for(ctx *c, const char *name, gkind kind, group **out) {
    if (!valid_name(name))
        return FAIL(c, "'%s' is not a name (letters, digits and _, not starting with a digit, < %d characters)", name,
                    NET_NAME);
    if (strcmp(name, "cell") == 0) return FAIL(c, "'cell' is reserved (every cell by its number)");
    group *g = find_group(c->net, name);
    if (g && g->kind != kind)
        return FAIL(c, "'%s' names %s (line %d), not %s", name, KIND_NAME[g->kind], g->line, KIND_NAME[kind]);
    if (!g) {
        ns_network_t *net = c->net;
        int64_t cap = net->cap_groups;
        if (grow((void **)&net->groups, net->n_groups, &cap, sizeof *net->groups) != 0)
            return fail_at(c, NS_ERR_OUT_OF_MEMORY, "groups");
        net->cap_groups = (int32_t)cap;
        g = &net->groups[net->n_groups++];
        memset(g, 0, sizeof *g);
        snprintf(g->name, sizeof g->name, "%s", name);
        g->kind = kind;
        g->line = c->line;
    }
    *out = g;
    return NS_OK;
}

static ns_status parse_ref_in(ctx *c, char *buf, const char *text, gkind kind, const char *what, ids *out);

/* REF[+REF...] with REF = NAME or NAME[LIST]: the members, in order. */
static ns_status parse_ref(ctx *c, const char *text, gkind kind, const char *what, ids *out) {
    char *buf = malloc(strlen(text) + 1);
    if (!buf) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "%s", what);
    strcpy(buf, text);
    ns_status st = parse_ref_in(c, buf, text, kind, what, out);
    free(buf);
    return st;
}

static ns_status parse_ref_in(ctx *c, char *buf, const char *text, gkind kind, const char *what, ids *out) {
    ns_network_t *net = c->net;
    char *save = NULL;
    for (char *ref = strtok_r(buf, "+", &save); ref; ref = strtok_r(NULL, "+", &save)) {
        char *br = strchr(ref, '[');
        char *list = NULL;
        if (br) {
            const size_t n = strlen(br);
            if (n < 2 || br[n - 1] != ']') return FAIL(c, "%s '%s': expected NAME[LIST]", what, ref);
            br[n - 1] = 0;
            *br = 0;
            list = br + 1;
        }
        const group *g = NULL;
        int64_t size;
        if (kind == G_CELLS && strcmp(ref, "cell") == 0) size = net->n_cells;
        else {
            g = find_group(net, ref);
            if (!g) return FAIL(c, "%s: no %s named '%s'", what, KIND_NAME[kind], ref);
            if (g->kind != kind)
                return FAIL(c, "%s: '%s' names %s (line %d), not %s", what, ref, KIND_NAME[g->kind], g->line,
                            KIND_NAME[kind]);
            size = g->m.n;
        }
        if (!list) {
            for (int64_t k = 0; k < size; ++k)
                if (out->n >= NET_MAX_ITEMS || ids_push(out, g ? g->m.v[k] : k) != 0)
                    return fail_at(c, NS_ERR_SIZE, "%s: %lld members (at most %lld ids in all lists)", what,
                                   (long long)out->n, (long long)NET_MAX_ITEMS);
            continue;
        }
        char *isave = NULL;
        int any = 0;
        for (char *item = strtok_r(list, ",", &isave); item; item = strtok_r(NULL, ",", &isave)) {
            any = 1;
            int64_t lo, hi, step = 1;
            char *dash = strchr(item + (*item == '-'), '-');
            if (dash) {
                *dash = 0;
                char *colon = strchr(dash + 1, ':');
                if (colon) {
                    *colon = 0;
                    if (!parse_int(colon + 1, 1, INT32_MAX, &step))
                        return FAIL(c, "%s: step '%s' in %s[...] is not an integer >= 1", what, colon + 1, ref);
                }
                if (!parse_int(item, 0, INT64_MAX, &lo) || !parse_int(dash + 1, 0, INT64_MAX, &hi) || hi < lo)
                    return FAIL(c, "%s: '%s-%s' in %s[...] is not a range A-B with 0 <= A <= B", what, item, dash + 1,
                                ref);
            } else if (!parse_int(item, 0, INT64_MAX, &lo))
                return FAIL(c, "%s: '%s' in %s[...] is not an index >= 0", what, item, ref);
            else hi = lo;
            if (hi >= size)
                return FAIL(c, "%s: index %lld is outside %s (%lld %s)", what, (long long)hi, ref, (long long)size,
                            KIND_NAME[kind]);
            for (int64_t k = lo; k <= hi; k += step)
                if (out->n >= NET_MAX_ITEMS || ids_push(out, g ? g->m.v[k] : k) != 0)
                    return fail_at(c, NS_ERR_SIZE, "%s: %lld members (at most %lld ids in all lists)", what,
                                   (long long)out->n, (long long)NET_MAX_ITEMS);
        }
        if (!any) return FAIL(c, "%s: empty list in %s[]", what, ref);
    }
    if (out->n == 0) return FAIL(c, "%s: '%s' has no members", what, text);
    return NS_OK;
}

/* A location: ns_location_parse's grammar (soma, dend[3](0.5), sec:K(X), swc:ID(X), cN, ...). */
static ns_status parse_loc(ctx *c, const char *text, loc *l) {
    memset(l, 0, sizeof *l);
    snprintf(l->text, sizeof l->text, "%s", text);
    if (ns_location_parse(text, &l->at) != NS_OK) {
        char msg[512]; /* a copy: the message is formatted into the error buffer */
        snprintf(msg, sizeof msg, "%s", ns_last_error());
        return FAIL(c, "%s", msg);
    }
    return NS_OK;
}

static ns_status resolve_path(ctx *c, const char *file, char **out) {
    const size_t n = strlen(file) + (c->base ? strlen(c->base) : 0) + 2;
    *out = malloc(n);
    if (!*out) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "path");
    if (file[0] == '/' || !c->base || !*c->base) snprintf(*out, n, "%s", file);
    else snprintf(*out, n, "%s/%s", c->base, file);
    return NS_OK;
}

static ns_status new_stmt(ctx *c, skind kind, stmt **out) {
    ns_network_t *net = c->net;
    if (grow((void **)&net->stmts, net->n_stmts, &net->cap_stmts, sizeof *net->stmts) != 0)
        return fail_at(c, NS_ERR_OUT_OF_MEMORY, "statements");
    stmt *s = &net->stmts[net->n_stmts++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->line = c->line;
    *out = s;
    return NS_OK;
}

/* Add `n` new members numbered from `first` to a group. */
static ns_status add_members(ctx *c, group *g, int64_t first, int64_t n) {
    for (int64_t k = 0; k < n; ++k)
        if (ids_push(&g->m, first + k) != 0)
            return fail_at(c, NS_ERR_SIZE, "%s: %lld members (at most %lld ids in all lists)", g->name,
                           (long long)g->m.n, (long long)NET_MAX_ITEMS);
    return NS_OK;
}

/* `n` new items (synapses or sources, counted by *count) as members of g;
 * `stmt NAME: too many ITEMS` past the limit. */
static ns_status add_items(ctx *c, group *g, int64_t *count, int64_t n, const char *stmt_name, const char *name,
                           const char *items) {
    if (*count + n > NET_MAX_ITEMS) return FAIL(c, "%s %s: too many %s", stmt_name, name, items);
    const ns_status st = add_members(c, g, *count, n);
    *count += n;
    return st;
}

/* ------------------------------------------------------------ statements */

static ns_status st_cells(ctx *c, char **tok, int n) {
    ns_network_t *net = c->net;
    if (n != 4) return FAIL(c, "expected: cells NAME COUNT FILE.swc");
    group *g;
    ns_status st = group_for(c, tok[1], G_CELLS, &g);
    if (st != NS_OK) return st;
    int64_t count;
    if (!parse_int(tok[2], 1, NET_MAX_CELLS, &count) || net->n_cells + count > NET_MAX_CELLS)
        return FAIL(c, "cells %s: COUNT '%s' must be an integer from 1 (at most %lld cells in all)", tok[1], tok[2],
                    (long long)NET_MAX_CELLS);
    char *path;
    if ((st = resolve_path(c, tok[3], &path)) != NS_OK) return st;
    int32_t k = 0;
    while (k < net->n_morph && strcmp(net->morph[k], path) != 0) ++k;
    if (k == net->n_morph) {
        int64_t cap = net->cap_morph;
        if (grow((void **)&net->morph, net->n_morph, &cap, sizeof *net->morph) != 0) {
            free(path);
            return fail_at(c, NS_ERR_OUT_OF_MEMORY, "morphologies");
        }
        net->cap_morph = (int32_t)cap;
        net->morph[net->n_morph++] = path;
    } else free(path);
    while (net->n_cells + count > net->cap_cells) {
        const int64_t cap = net->cap_cells ? 2 * net->cap_cells : 64;
        int32_t *p = realloc(net->cell_morph, (size_t)cap * sizeof *p);
        if (!p) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "%lld cells", (long long)(net->n_cells + count));
        net->cell_morph = p;
        net->cap_cells = cap;
    }
    for (int64_t q = 0; q < count; ++q) net->cell_morph[net->n_cells + q] = k;
    st = add_members(c, g, net->n_cells, count);
    net->n_cells += count;
    return st;
}

static ns_status st_model(ctx *c, char **tok, int n) {
    ns_network_t *net = c->net;
    if (n != 2) return FAIL(c, "expected: model FILE (or model: STATEMENT)");
    if (net->model_file) return FAIL(c, "a second model file (the first on line %d)", net->model_line);
    net->model_line = c->line;
    return resolve_path(c, tok[1], &net->model_file);
}

/* The start of a statement `WORD NAME CELLS LOC ...` that places items on
 * cells: NAME's group (of `gk`), the new statement, its cells and location. */
/* A statement of kind sk that adds to the group NAME (tok[1]) of kind gk. */
static ns_status group_stmt(ctx *c, char **tok, gkind gk, skind sk, group **g, stmt **s) {
    ns_status st = group_for(c, tok[1], gk, g);
    if (st == NS_OK) st = new_stmt(c, sk, s);
    return st;
}

/* A statement of kind sk that adds sources to the group NAME (tok[1]); `expected: USAGE` unless arity_ok. */
static ns_status sources_stmt(ctx *c, char **tok, int arity_ok, const char *usage, skind sk, group **g, stmt **s) {
    if (!arity_ok) return FAIL(c, "expected: %s", usage);
    return group_stmt(c, tok, G_SOURCES, sk, g, s);
}

static ns_status placed_stmt(ctx *c, char **tok, const char *word, gkind gk, skind sk, group **g, stmt **s) {
    ns_status st = group_stmt(c, tok, gk, sk, g, s);
    char what[96];
    snprintf(what, sizeof what, "%s %.64s", word, tok[1]);
    if (st == NS_OK) st = parse_ref(c, tok[2], G_CELLS, what, &(*s)->a);
    if (st == NS_OK) st = parse_loc(c, tok[3], &(*s)->where);
    return st;
}

static ns_status st_synapse(ctx *c, char **tok, int n) {
    if (n < 5) return FAIL(c, "expected: synapse NAME CELLS LOC MECH [PARAM=VALUE ...]");
    group *g;
    stmt *s;
    ns_status st = placed_stmt(c, tok, "synapse", G_SYNAPSES, S_SYN, &g, &s);
    if (st != NS_OK) return st;
    if (!valid_name(tok[4])) return FAIL(c, "synapse %s: '%s' is not a mechanism name", tok[1], tok[4]);
    snprintf(s->mech, sizeof s->mech, "%s", tok[4]);
    s->n_params = n - 5;
    s->pname = calloc((size_t)(n - 5 + 1), sizeof *s->pname);
    s->pvalue = calloc((size_t)(n - 5 + 1), sizeof *s->pvalue);
    if (!s->pname || !s->pvalue) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "synapse");
    for (int k = 5; k < n; ++k) {
        char *eq = strchr(tok[k], '=');
        if (!eq) return FAIL(c, "synapse %s: '%s': expected PARAM=VALUE", tok[1], tok[k]);
        *eq = 0;
        if (!valid_param(tok[k]) || strlen(tok[k]) >= NET_NAME)
            return FAIL(c, "synapse %s: '%s=%s': expected PARAM=NUMBER (PARAM a name, NAME[K] or NAME.NAME)", tok[1],
                        tok[k], eq + 1);
        if ((st = num(c, eq + 1, -HUGE_VAL, HUGE_VAL, &s->pvalue[k - 5], "synapse %s: %s", tok[1], tok[k])) != NS_OK)
            return st;
        snprintf(s->pname[k - 5], NET_NAME, "%s", tok[k]);
    }
    return add_items(c, g, &c->net->n_syns, s->a.n, "synapse", tok[1], "synapses");
}

/* pointer SYNAPSES NAME CELLS LOC VAR: POINTER NAME of each synapse to VAR at
 * LOC of the cell of the same rank in CELLS (or of its one cell) */
static ns_status st_pointer(ctx *c, char **tok, int n) {
    if (n != 6 && n != 7)
        return FAIL(c, "expected: pointer SYNAPSES NAME CELLS LOC VAR, or pointer CELLS LOC NAME CELLS LOC VAR (a "
                       "density mechanism's POINTER_MECH)");
    const int dens = n == 7, at = dens; /* the density form: CELLS LOC in place of SYNAPSES */
    stmt *s;
    ns_status st = new_stmt(c, dens ? S_DPOINTER : S_POINTER, &s);
    if (st == NS_OK) st = parse_ref(c, tok[1], dens ? G_CELLS : G_SYNAPSES, "pointer", &s->a);
    if (st == NS_OK && dens) st = parse_loc(c, tok[2], &s->where);
    if (st == NS_OK) st = parse_ref(c, tok[3 + at], G_CELLS, "pointer", &s->b);
    if (st == NS_OK) st = parse_loc(c, tok[4 + at], dens ? &s->to : &s->where);
    if (st != NS_OK) return st;
    if (!valid_name(tok[2 + at])) return FAIL(c, "pointer: '%s' is not a POINTER name", tok[2 + at]);
    if (!valid_name(tok[5 + at]))
        return FAIL(c, "pointer: '%s' is not a variable name (v, eX, FIELD_MECH)", tok[5 + at]);
    if (s->b.n != s->a.n && s->b.n != 1)
        return FAIL(c, "pointer: %lld %s and %lld cells (equal counts, or one cell)", (long long)s->a.n,
                    dens ? "cells" : "synapses", (long long)s->b.n);
    snprintf(s->mech, sizeof s->mech, "%s", tok[2 + at]);
    snprintf(s->var, sizeof s->var, "%s", tok[5 + at]);
    return NS_OK;
}

/* source NAME SYNAPSES: a point source of each synapse (its net_event spikes, ns_sim_add_point_source) */
static ns_status st_source(ctx *c, char **tok, int n) {
    group *g;
    stmt *s;
    ns_status st = sources_stmt(c, tok, n == 3, "source NAME SYNAPSES", S_POINT_SOURCE, &g, &s);
    if (st == NS_OK) st = parse_ref(c, tok[2], G_SYNAPSES, "source", &s->a);
    if (st != NS_OK) return st;
    return add_items(c, g, &c->net->n_sources, s->a.n, "source", tok[1], "sources");
}

static ns_status st_detector(ctx *c, char **tok, int n) {
    if (n != 5) return FAIL(c, "expected: detector NAME CELLS LOC THRESHOLD");
    group *g;
    stmt *s;
    ns_status st = placed_stmt(c, tok, "detector", G_SOURCES, S_DET, &g, &s);
    if (st != NS_OK) return st;
    if ((st = num(c, tok[4], -NS_SIM_MAX_POTENTIAL, NS_SIM_MAX_POTENTIAL, &s->threshold, "detector %s: threshold [mV]",
                  tok[1])) != NS_OK)
        return st;
    return add_items(c, g, &c->net->n_sources, s->a.n, "detector", tok[1], "sources");
}

static ns_status st_train(ctx *c, char **tok, int n) {
    group *g;
    stmt *s;
    ns_status st = sources_stmt(c, tok, n >= 3, "train NAME T [T ...] (times in ms)", S_TRAIN, &g, &s);
    if (st != NS_OK) return st;
    s->times = malloc((size_t)(n - 2) * sizeof *s->times);
    if (!s->times) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "train");
    for (int k = 2; k < n; ++k)
        if ((st = num(c, tok[k], 0.0, HUGE_VAL, &s->times[k - 2], "train %s: time %d [ms]", tok[1], k - 1)) != NS_OK)
            return st;
    s->n_times = n - 2;
    st = add_members(c, g, c->net->n_sources, 1);
    c->net->n_sources += 1;
    return st;
}

static ns_status st_poisson(ctx *c, char **tok, int n) {
    group *g;
    stmt *s;
    ns_status st = sources_stmt(c, tok, n == 7, "poisson NAME COUNT RATE_HZ START STOP SEED", S_POISSON, &g, &s);
    if (st != NS_OK) return st;
    int64_t seed;
    if ((st = integer(c, tok[2], 1, NET_MAX_ITEMS, &s->count, "poisson %s: COUNT", tok[1])) != NS_OK ||
        (st = num(c, tok[3], 0.0, 1e6, &s->rate, "poisson %s: rate [Hz]", tok[1])) != NS_OK ||
        (st = num(c, tok[4], 0.0, HUGE_VAL, &s->start, "poisson %s: start [ms]", tok[1])) != NS_OK)
        return st;
    if (strcmp(tok[5], "inf") == 0) s->stop = INFINITY; /* a word of the statement, not a number */
    else if ((st = num(c, tok[5], s->start, HUGE_VAL, &s->stop, "poisson %s: stop [ms] (>= start or inf)", tok[1])) !=
             NS_OK)
        return st;
    if ((st = integer(c, tok[6], 0, INT64_MAX, &seed, "poisson %s: seed", tok[1])) != NS_OK) return st;
    s->seed = (uint64_t)seed;
    return add_items(c, g, &c->net->n_sources, s->count, "poisson", tok[1], "sources");
}

static ns_status st_connect(ctx *c, char **tok, int n) {
    if (n < 5) return FAIL(c, "expected: connect SOURCES SYNAPSES WEIGHT DELAY [all | p=P [seed=S]]");
    stmt *s;
    ns_status st = new_stmt(c, S_CONNECT, &s);
    if (st == NS_OK) st = parse_ref(c, tok[1], G_SOURCES, "connect", &s->a);
    if (st == NS_OK) st = parse_ref(c, tok[2], G_SYNAPSES, "connect", &s->b);
    if (st != NS_OK) return st;
    if ((st = num(c, tok[3], -HUGE_VAL, HUGE_VAL, &s->weight, "connect %s %s: weight", tok[1], tok[2])) != NS_OK ||
        (st = num(c, tok[4], -HUGE_VAL, HUGE_VAL, &s->delay, "connect %s %s: delay [ms]", tok[1], tok[2])) != NS_OK)
        return st;
    if (!(s->delay > 0.0)) return FAIL(c, "connect %s %s: delay '%s' must be a number > 0 [ms]", tok[1], tok[2], tok[4]);
    s->p = 1.0;
    int has_p = 0, has_seed = 0;
    for (int k = 5; k < n; ++k) {
        int64_t seed;
        if (strcmp(tok[k], "all") == 0) s->pairs = 1;
        else if (strncmp(tok[k], "p=", 2) == 0) {
            if ((st = num(c, tok[k] + 2, 0.0, 1.0, &s->p, "connect %s %s: p", tok[1], tok[2])) != NS_OK) return st;
            s->pairs = has_p = 1;
        } else if (strncmp(tok[k], "seed=", 5) == 0) {
            if ((st = integer(c, tok[k] + 5, 0, INT64_MAX, &seed, "connect %s %s: seed", tok[1], tok[2])) != NS_OK)
                return st;
            s->seed = (uint64_t)seed;
            has_seed = 1;
        } else return FAIL(c, "connect %s %s: unknown option '%s' (all, p=P, seed=S)", tok[1], tok[2], tok[k]);
    }
    if (has_seed && !has_p) return FAIL(c, "connect %s %s: seed= without p=", tok[1], tok[2]);
    if (s->pairs) {
        if ((double)s->a.n * (double)s->b.n > (double)NET_MAX_PAIRS)
            return FAIL(c, "connect %s %s: %lld x %lld pairs is more than %lld", tok[1], tok[2], (long long)s->a.n,
                        (long long)s->b.n, (long long)NET_MAX_PAIRS);
        c->net->n_expected += (int64_t)((double)s->a.n * (double)s->b.n * s->p);
        if (!has_p) c->net->n_fixed += s->a.n * s->b.n;
    } else {
        if (s->a.n != s->b.n && s->a.n != 1 && s->b.n != 1)
            return FAIL(c,
                        "connect %s %s: %lld sources and %lld synapses: pairs need equal counts or one of them 1 "
                        "(`all` or p= connect every pair)",
                        tok[1], tok[2], (long long)s->a.n, (long long)s->b.n);
        c->net->n_fixed += s->a.n > s->b.n ? s->a.n : s->b.n;
        c->net->n_expected += s->a.n > s->b.n ? s->a.n : s->b.n;
    }
    if (c->net->n_expected > NET_MAX_CONNS)
        return fail_at(c, NS_ERR_SIZE, "connect %s %s: more than %lld connections in all", tok[1], tok[2],
                       (long long)NET_MAX_CONNS);
    return NS_OK;
}

/* ------------------------------------------------------------ parse */

/* Room for `more` bytes after the model text (capacity doubling: a line each). */
static int model_room(ns_network_t *net, size_t more) {
    if (net->model_len + more <= net->model_cap) return 0;
    size_t cap = net->model_cap ? net->model_cap : 256;
    while (cap < net->model_len + more) cap *= 2;
    char *p = realloc(net->model_text, cap);
    if (!p) return -1;
    net->model_text = p;
    net->model_cap = cap;
    return 0;
}

static ns_status parse_line(ctx *c, char *ln) {
    ns_network_t *net = c->net;
    while (isspace((unsigned char)*ln)) ++ln;
    if (strncmp(ln, "model:", 6) == 0) {
        /* the statement goes to the model text at its own line number */
        const char *text = ln + 6;
        const size_t n = strlen(text);
        if (model_room(net, n + 2) != 0) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "model");
        memcpy(net->model_text + net->model_len, text, n);
        net->model_len += n;
        net->has_inline = 1;
        return NS_OK;
    }
    char *hash = strchr(ln, '#');
    if (hash) *hash = 0;
    /* fields: at most one per two characters */
    char **tok = malloc((strlen(ln) / 2 + 2) * sizeof *tok);
    if (!tok) return fail_at(c, NS_ERR_OUT_OF_MEMORY, "a line of %zu characters", strlen(ln));
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(ln, " \t\r\v\f", &save); t; t = strtok_r(NULL, " \t\r\v\f", &save)) tok[n++] = t;
    ns_status st = NS_OK;
    if (n == 0) st = NS_OK;
    else if (strcmp(tok[0], "cells") == 0) st = st_cells(c, tok, n);
    else if (strcmp(tok[0], "model") == 0) st = st_model(c, tok, n);
    else if (strcmp(tok[0], "synapse") == 0) st = st_synapse(c, tok, n);
    else if (strcmp(tok[0], "detector") == 0) st = st_detector(c, tok, n);
    else if (strcmp(tok[0], "train") == 0) st = st_train(c, tok, n);
    else if (strcmp(tok[0], "poisson") == 0) st = st_poisson(c, tok, n);
    else if (strcmp(tok[0], "connect") == 0) st = st_connect(c, tok, n);
    else if (strcmp(tok[0], "pointer") == 0) st = st_pointer(c, tok, n);
    else if (strcmp(tok[0], "source") == 0) st = st_source(c, tok, n);
    else st = FAIL(c, "unknown statement '%.64s' (cells, model, synapse, detector, train, poisson, connect, pointer, "
                   "source)", tok[0]);
    free(tok);
    return st;
}

ns_status ns_network_parse(const char *text, size_t length, const char *name, const char *base_dir,
                           ns_network_t **out) {
    if (!out || (!text && length)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_parse: NULL argument");
    *out = NULL;
    ns_network_t *net = calloc(1, sizeof *net);
    char *buf = malloc(length + 1);
    if (!net || !buf) {
        free(net);
        free(buf);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_network_parse");
    }
    snprintf(net->name, sizeof net->name, "%s", name ? name : "network");
    if (length) memcpy(buf, text, length);
    buf[length] = 0;
    ns_status st = NS_OK;
    ids_held = 0;
    if (memchr(buf, 0, length)) st = ns_fail(NS_ERR_PARSE, "%s: a NUL byte in the text", net->name);
    ctx c = {net, base_dir, 0};
    for (char *ln = buf, *next; ln && st == NS_OK; ln = next) {
        next = strchr(ln, '\n');
        if (next) *next++ = 0;
        ++c.line;
        st = parse_line(&c, ln);
        /* every line ends the model text, so that its line numbers are the file's */
        if (st == NS_OK) {
            if (model_room(net, 2) != 0) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_network_parse");
            else {
                net->model_text[net->model_len++] = '\n';
                net->model_text[net->model_len] = 0;
            }
        }
    }
    free(buf);
    if (st == NS_OK && net->n_cells == 0) st = ns_fail(NS_ERR_PARSE, "%s: no cells (a `cells NAME COUNT FILE` line)", net->name);
    if (st != NS_OK) {
        ns_network_destroy(net);
        return st;
    }
    *out = net;
    return NS_OK;
}

/* ------------------------------------------------------------ accessors */

int64_t ns_network_cells(const ns_network_t *net) { return net ? net->n_cells : 0; }
int32_t ns_network_morphologies(const ns_network_t *net) { return net ? net->n_morph : 0; }
const char *ns_network_morphology(const ns_network_t *net, int32_t k) {
    return net && k >= 0 && k < net->n_morph ? net->morph[k] : NULL;
}
const int32_t *ns_network_cell_morphology(const ns_network_t *net) { return net ? net->cell_morph : NULL; }
int64_t ns_network_synapses(const ns_network_t *net) { return net ? net->n_syns : 0; }
int64_t ns_network_sources(const ns_network_t *net) { return net ? net->n_sources : 0; }
int64_t ns_network_fixed_connections(const ns_network_t *net) { return net ? net->n_fixed : 0; }

double ns_network_expected_input_spikes(const ns_network_t *net, double tstop) {
    if (!net || !(tstop > 0.0)) return 0.0;
    double n = 0.0;
    for (int64_t q = 0; q < net->n_stmts; ++q) {
        const stmt *s = &net->stmts[q];
        if (s->kind == S_TRAIN)
            for (int64_t k = 0; k < s->n_times; ++k) n += s->times[k] <= tstop;
        else if (s->kind == S_POISSON) {
            const double end = s->stop < tstop ? s->stop : tstop;
            if (end > s->start) n += (double)s->count * s->rate * 1e-3 * (end - s->start);
        }
    }
    return n;
}

ns_status ns_network_model(const ns_network_t *net, const ns_mech_library_t *library, ns_sim_model_t **out) {
    if (!net || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_model: NULL argument");
    *out = NULL;
    if (!net->model_file && !net->has_inline) return NS_OK;
    ns_sim_model_t *m = NULL;
    ns_status st = ns_sim_model_create(library, &m);
    if (st == NS_OK && net->model_file) {
        st = ns_sim_model_read(m, net->model_file);
        if (st != NS_OK) {
            char where[300];
            snprintf(where, sizeof where, "%s:%d: model", net->name, net->model_line);
            ns_error_prefix(where);
        }
    }
    if (st == NS_OK && net->has_inline) st = ns_sim_model_parse(m, net->model_text, net->model_len, net->name);
    if (st != NS_OK) {
        ns_sim_model_destroy(m);
        return st;
    }
    *out = m;
    return NS_OK;
}

/* ------------------------------------------------------------ building (netfile_build.h) */

ns_status ns_netbuild_create(const char *name, ns_network_t **out) {
    ns_network_t *net = calloc(1, sizeof *net);
    if (!net) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", name);
    snprintf(net->name, sizeof net->name, "%s", name);
    net->run_tstop = net->run_dt = net->run_celsius = net->run_v_init = net->run_threshold = NAN;
    *out = net;
    return NS_OK;
}

static ns_status build_stmt(ns_network_t *net, skind kind, stmt **out) {
    ctx c = {net, NULL, 0};
    return new_stmt(&c, kind, out);
}

ns_status ns_netbuild_cells(ns_network_t *net, int64_t count, const char *path) {
    if (count < 1 || net->n_cells + count > NET_MAX_CELLS)
        return ns_fail(NS_ERR_SIZE, "%s: %lld cells (at most %lld)", net->name, (long long)(net->n_cells + count),
                       (long long)NET_MAX_CELLS);
    int32_t k = 0;
    while (k < net->n_morph && strcmp(net->morph[k], path) != 0) ++k;
    if (k == net->n_morph) {
        int64_t cap = net->cap_morph;
        char *copy = malloc(strlen(path) + 1);
        if (!copy || grow((void **)&net->morph, net->n_morph, &cap, sizeof *net->morph) != 0) {
            free(copy);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "morphologies");
        }
        strcpy(copy, path);
        net->cap_morph = (int32_t)cap;
        net->morph[net->n_morph++] = copy;
    }
    while (net->n_cells + count > net->cap_cells) {
        const int64_t cap = net->cap_cells ? 2 * net->cap_cells : 64;
        int32_t *p = realloc(net->cell_morph, (size_t)cap * sizeof *p);
        if (!p) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%lld cells", (long long)(net->n_cells + count));
        net->cell_morph = p;
        net->cap_cells = cap;
    }
    for (int64_t q = 0; q < count; ++q) net->cell_morph[net->n_cells + q] = k;
    net->n_cells += count;
    return NS_OK;
}

ns_status ns_netbuild_model(ns_network_t *net, const char *path) {
    free(net->model_file);
    net->model_file = malloc(strlen(path) + 1);
    if (!net->model_file) return ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    strcpy(net->model_file, path);
    return NS_OK;
}

ns_status ns_netbuild_detectors(ns_network_t *net, double threshold) {
    if (net->n_cells == 0) return NS_OK;
    stmt *s = NULL;
    ns_status st = build_stmt(net, S_DET, &s);
    if (st != NS_OK) return st;
    s->where.at.kind = NS_LOCATION_ROOT;
    s->where.at.x = 0.5;
    snprintf(s->where.text, sizeof s->where.text, "soma(0.5)");
    s->threshold = threshold;
    s->a.v = malloc((size_t)net->n_cells * sizeof *s->a.v);
    if (!s->a.v) return ns_fail(NS_ERR_OUT_OF_MEMORY, "detectors");
    for (int64_t c = 0; c < net->n_cells; ++c) s->a.v[c] = c;
    s->a.n = s->a.cap = net->n_cells;
    net->n_sources += net->n_cells;
    return NS_OK;
}

ns_status ns_netbuild_train(ns_network_t *net, const double *times, int64_t count) {
    if (net->n_sources + 1 > NET_MAX_ITEMS) return ns_fail(NS_ERR_SIZE, "%s: too many sources", net->name);
    stmt *s = NULL;
    ns_status st = build_stmt(net, S_TRAIN, &s);
    if (st != NS_OK) return st;
    s->times = malloc((size_t)(count > 0 ? count : 1) * sizeof *s->times);
    if (!s->times) return ns_fail(NS_ERR_OUT_OF_MEMORY, "train");
    if (count > 0) memcpy(s->times, times, (size_t)count * sizeof *times);
    s->n_times = count;
    net->n_sources += 1;
    return NS_OK;
}

void ns_netbuild_edges_free(ns_netbuild_edges *e) {
    if (!e) return;
    free(e->src);
    free(e->cell);
    free(e->node);
    free(e->section);
    free(e->type);
    free(e->x);
    free(e->weight);
    free(e->delay);
    for (int32_t k = 0; e->types && k < e->n_types; ++k) {
        free(e->types[k].name);
        free(e->types[k].value);
    }
    free(e->types);
    free(e->pp_names);
    free(e->pp);
    memset(e, 0, sizeof *e);
}

ns_status ns_netbuild_edges_add(ns_network_t *net, ns_netbuild_edges *block) {
    ns_netbuild_edges *e = malloc(sizeof *e);
    if (!e) {
        ns_netbuild_edges_free(block);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", block->label);
    }
    *e = *block;
    memset(block, 0, sizeof *block);
    if (net->n_syns + e->n > NET_MAX_ITEMS) {
        ns_status st = ns_fail(NS_ERR_SIZE, "%s: %lld synapses in all (at most %lld)", e->label,
                               (long long)(net->n_syns + e->n), (long long)NET_MAX_ITEMS);
        ns_netbuild_edges_free(e);
        free(e);
        return st;
    }
    stmt *s = NULL;
    ns_status st = build_stmt(net, S_EDGES, &s);
    if (st != NS_OK) {
        ns_netbuild_edges_free(e);
        free(e);
        return st;
    }
    s->edges = e;
    net->n_syns += e->n;
    net->n_fixed += e->n;
    return NS_OK;
}

ns_status ns_netbuild_populations(ns_network_t *net, int32_t n, const char *const *names) {
    net->pops = calloc((size_t)(n > 0 ? n : 1), sizeof *net->pops);
    if (!net->pops) return ns_fail(NS_ERR_OUT_OF_MEMORY, "populations");
    for (int32_t k = 0; k < n; ++k) {
        net->pops[k] = malloc(strlen(names[k]) + 1);
        if (!net->pops[k]) return ns_fail(NS_ERR_OUT_OF_MEMORY, "populations");
        strcpy(net->pops[k], names[k]);
        net->n_pops = k + 1;
    }
    return NS_OK;
}

ns_status ns_netbuild_source_nodes(ns_network_t *net, const int32_t *population, const int64_t *node, int64_t n) {
    net->src_pop = malloc((size_t)(n > 0 ? n : 1) * sizeof *net->src_pop);
    net->src_node = malloc((size_t)(n > 0 ? n : 1) * sizeof *net->src_node);
    if (!net->src_pop || !net->src_node) return ns_fail(NS_ERR_OUT_OF_MEMORY, "source nodes");
    if (n > 0) {
        memcpy(net->src_pop, population, (size_t)n * sizeof *population);
        memcpy(net->src_node, node, (size_t)n * sizeof *node);
    }
    return NS_OK;
}

void ns_netbuild_run(ns_network_t *net, double tstop, double dt, double celsius, double v_init,
                     double spike_threshold) {
    net->has_run = 1;
    net->run_tstop = tstop;
    net->run_dt = dt;
    net->run_celsius = celsius;
    net->run_v_init = v_init;
    net->run_threshold = spike_threshold;
}

ns_status ns_netbuild_finish(ns_network_t *net) {
    if (net->n_cells == 0)
        return ns_fail(NS_ERR_PARSE, "%s: no cells (no biophysical node in any population)", net->name);
    return NS_OK;
}

/* ------------------------------------------------------------ SONATA accessors */

int32_t ns_network_populations(const ns_network_t *net) { return net ? net->n_pops : 0; }
const char *ns_network_population(const ns_network_t *net, int32_t k) {
    return net && k >= 0 && k < net->n_pops ? net->pops[k] : NULL;
}
ns_status ns_network_source_node(const ns_network_t *net, int64_t source, int32_t *population, int64_t *node_id) {
    if (!net || !population || !node_id) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_source_node: NULL argument");
    if (!net->src_pop) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s is not a SONATA network: no node ids", net->name);
    if (source < 0 || source >= net->n_sources)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: no source %lld (%lld sources)", net->name, (long long)source,
                       (long long)net->n_sources);
    *population = net->src_pop[source];
    *node_id = net->src_node[source];
    return NS_OK;
}
ns_status ns_network_run_params(const ns_network_t *net, ns_sim_params *p) {
    if (!net || !p) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_run_params: NULL argument");
    if (!net->has_run) return NS_OK;
    ns_status st = NS_OK;
    const char *key[5] = {"tstop", "dt", "celsius", "v_init", "spike_threshold"};
    const double val[5] = {net->run_tstop, net->run_dt, net->run_celsius, net->run_v_init, net->run_threshold};
    for (int k = 0; k < 5 && st == NS_OK; ++k)
        if (!isnan(val[k])) st = ns_sim_params_set(p, key[k], val[k]);
    if (st != NS_OK) ns_error_prefix(net->name);
    return st;
}
