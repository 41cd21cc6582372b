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
#include "mech/model_impl.h"
#include "core/error.h"
#include "core/file.h"
#include "core/number.h"

/* ------------------------------------------------------------ expressions
 * Compiled to a postfix program over a value stack. */

typedef enum {
    OP_NUM, OP_D, OP_NEG, OP_NOT, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ,
    OP_NE, OP_AND, OP_OR, OP_EXP, OP_LOG, OP_SQRT, OP_FABS, OP_POWF, OP_MIN, OP_MAX
} op_kind;

typedef struct op {
    op_kind kind;
    double value;
} op;

typedef struct expr {
    op *ops;
    int n, cap, depth;
} expr;

typedef struct parser {
    const char *s, *p;
    expr *e;
    int stack, err;
    int nest; /* recursion depth: parentheses, arguments, prefix operators, ^ */
    char msg[160];
} parser;

/* Deeper nesting is refused instead of overflowing the C stack (a model
 * line of 200,000 '(' crashed the parser). */
#define EXPR_NEST_MAX 256

static void emit(parser *ps, op_kind k, double value, int push) {
    if (ps->err) return;
    expr *e = ps->e;
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 16;
        op *ops = realloc(e->ops, (size_t)cap * sizeof *ops);
        if (!ops) {
            ps->err = 1;
            snprintf(ps->msg, sizeof ps->msg, "out of memory");
            return;
        }
        e->ops = ops;
        e->cap = cap;
    }
    e->ops[e->n++] = (op){k, value};
    ps->stack += push;
    if (ps->stack > e->depth) e->depth = ps->stack;
}

static void skip(parser *ps) {
    while (*ps->p && isspace((unsigned char)*ps->p)) ++ps->p;
}

static int accept(parser *ps, const char *tok) {
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) == 0) {
        ps->p += n;
        return 1;
    }
    return 0;
}

static void fail_at(parser *ps, const char *what) {
    if (ps->err) return;
    ps->err = 1;
    snprintf(ps->msg, sizeof ps->msg, "%s at column %d", what, (int)(ps->p - ps->s) + 1);
}

static void p_or(parser *ps);

/* 1 when one more level may be entered (counted in ps->nest), else the error. */
static int nest_in(parser *ps) {
    if (ps->err) return 0;
    if (ps->nest >= EXPR_NEST_MAX) {
        fail_at(ps, "expression nested too deeply (at most 256 levels: a parenthesis or a function's "
                    "argument counts 3, a prefix operator or ^ 1)");
        return 0;
    }
    ++ps->nest;
    return 1;
}

static void p_primary(parser *ps) {
    skip(ps);
    if (ps->err) return;
    const char *p = ps->p;
    if (accept(ps, "(")) {
        p_or(ps);
        if (!accept(ps, ")")) fail_at(ps, "expected ')'");
        return;
    }
    if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
        /* the one number reader (neurosolve/number.h): the word that starts
         * here (digits, letters, '.', '_') must be one decimal number, so that
         * 0x10 is refused, not read as 16 */
        size_t n = ns_number_length(p, strlen(p));
        const char *w = p + n;
        while (isalnum((unsigned char)*w) || *w == '_' || *w == '.') ++w;
        double x = 0.0;
        if (ns_number_span(p, (size_t)(w - p), -HUGE_VAL, HUGE_VAL, &x) != NS_OK) {
            fail_at(ps, ns_last_error());
            return;
        }
        ps->p = w;
        emit(ps, OP_NUM, x, 1);
        return;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_') ++q;
        const size_t len = (size_t)(q - p);
        ps->p = q;
        if (len == 1 && *p == 'd') {
            emit(ps, OP_D, 0, 1);
            return;
        }
        static const struct { const char *name; op_kind k; int args; } fns[] = {
            {"exp", OP_EXP, 1}, {"log", OP_LOG, 1},   {"sqrt", OP_SQRT, 1}, {"fabs", OP_FABS, 1},
            {"pow", OP_POWF, 2}, {"min", OP_MIN, 2}, {"max", OP_MAX, 2}};
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; ++f)
            if (strlen(fns[f].name) == len && strncmp(fns[f].name, p, len) == 0) {
                if (!accept(ps, "(")) {
                    fail_at(ps, "expected '(' after a function name");
                    return;
                }
                p_or(ps);
                if (fns[f].args == 2) {
                    if (!accept(ps, ",")) {
                        fail_at(ps, "expected ','");
                        return;
                    }
                    p_or(ps);
                }
                if (!accept(ps, ")")) {
                    fail_at(ps, "expected ')'");
                    return;
                }
                emit(ps, fns[f].k, 0, 1 - fns[f].args);
                return;
            }
        ps->p = p;
        fail_at(ps, "unknown name (only d and exp log sqrt fabs pow min max)");
        return;
    }
    fail_at(ps, *p ? "expected a number, d, a function or '('" : "unexpected end");
}

/* ^ binds tighter than unary minus and is right-associative (NMODL's rule). */
static void p_power(parser *ps) {
    if (!nest_in(ps)) return;
    p_primary(ps);
    if (accept(ps, "^")) {
        skip(ps);
        if (*ps->p == '-') { /* 2^-1 */
            ++ps->p;
            p_power(ps);
            emit(ps, OP_NEG, 0, 0);
        } else p_power(ps);
        emit(ps, OP_POW, 0, -1);
    }
    --ps->nest;
}

static void p_unary(parser *ps) {
    if (!nest_in(ps)) return;
    if (accept(ps, "-")) {
        p_unary(ps);
        emit(ps, OP_NEG, 0, 0);
    } else if (accept(ps, "+")) p_unary(ps);
    else if (skip(ps), ps->p[0] == '!' && ps->p[1] != '=') {
        ++ps->p;
        p_unary(ps);
        emit(ps, OP_NOT, 0, 0);
    } else p_power(ps);
    --ps->nest;
}

static void p_mul(parser *ps) {
    p_unary(ps);
    for (;;) {
        if (accept(ps, "*")) { p_unary(ps); emit(ps, OP_MUL, 0, -1); }
        else if (accept(ps, "/")) { p_unary(ps); emit(ps, OP_DIV, 0, -1); }
        else return;
    }
}

static void p_add(parser *ps) {
    p_mul(ps);
    for (;;) {
        if (accept(ps, "+")) { p_mul(ps); emit(ps, OP_ADD, 0, -1); }
        else if (accept(ps, "-")) { p_mul(ps); emit(ps, OP_SUB, 0, -1); }
        else return;
    }
}

static void p_cmp(parser *ps) {
    p_add(ps);
    for (;;) {
        op_kind k;
        if (accept(ps, "<=")) k = OP_LE;
        else if (accept(ps, ">=")) k = OP_GE;
        else if (accept(ps, "==")) k = OP_EQ;
        else if (accept(ps, "!=")) k = OP_NE;
        else if (accept(ps, "<")) k = OP_LT;
        else if (accept(ps, ">")) k = OP_GT;
        else return;
        p_add(ps);
        emit(ps, k, 0, -1);
    }
}

static void p_and(parser *ps) {
    p_cmp(ps);
    while (accept(ps, "&&")) {
        p_cmp(ps);
        emit(ps, OP_AND, 0, -1);
    }
}

static void p_or(parser *ps) {
    if (!nest_in(ps)) return;
    p_and(ps);
    while (accept(ps, "||")) {
        p_and(ps);
        emit(ps, OP_OR, 0, -1);
    }
    --ps->nest;
}

static ns_status expr_compile(const char *text, expr *out, char *msg, size_t msg_size) {
    memset(out, 0, sizeof *out);
    parser ps = {text, text, out, 0, 0, 0, {0}};
    p_or(&ps);
    skip(&ps);
    if (!ps.err && *ps.p) fail_at(&ps, "unexpected text");
    if (!ps.err && out->n == 0) fail_at(&ps, "empty expression");
    if (ps.err) {
        free(out->ops);
        memset(out, 0, sizeof *out);
        snprintf(msg, msg_size, "%s", ps.msg);
        return NS_ERR_PARSE;
    }
    return NS_OK;
}

static double expr_eval(const expr *e, double d) {
    double stack_small[32] = {0};
    double *st = e->depth <= 32 ? stack_small : malloc((size_t)e->depth * sizeof *st);
    if (!st) return NAN;
    int sp = 0;
    for (int k = 0; k < e->n; ++k) {
        const op *o = &e->ops[k];
        double a, b;
        switch (o->kind) {
        case OP_NUM: st[sp++] = o->value; break;
        case OP_D: st[sp++] = d; break;
        case OP_NEG: st[sp - 1] = -st[sp - 1]; break;
        case OP_NOT: st[sp - 1] = st[sp - 1] == 0.0; break;
        case OP_EXP: st[sp - 1] = exp(st[sp - 1]); break;
        case OP_LOG: st[sp - 1] = log(st[sp - 1]); break;
        case OP_SQRT: st[sp - 1] = sqrt(st[sp - 1]); break;
        case OP_FABS: st[sp - 1] = fabs(st[sp - 1]); break;
        default:
            b = st[--sp];
            a = st[sp - 1];
            switch (o->kind) {
            case OP_ADD: a = a + b; break;
            case OP_SUB: a = a - b; break;
            case OP_MUL: a = a * b; break;
            case OP_DIV: a = a / b; break;
            case OP_POW: case OP_POWF: a = pow(a, b); break;
            case OP_LT: a = a < b; break;
            case OP_LE: a = a <= b; break;
            case OP_GT: a = a > b; break;
            case OP_GE: a = a >= b; break;
            case OP_EQ: a = a == b; break;
            case OP_NE: a = a != b; break;
            case OP_AND: a = (a != 0.0) && (b != 0.0); break;
            case OP_OR: a = (a != 0.0) || (b != 0.0); break;
            case OP_MIN: a = fmin(a, b); break;
            case OP_MAX: a = fmax(a, b); break;
            default: break;
            }
            st[sp - 1] = a;
        }
    }
    const double r = st[0];
    if (st != stack_small) free(st);
    return r;
}

/* ------------------------------------------------------------ the model */

typedef enum { ST_INSERT, ST_SET, ST_ION, ST_GLOBAL, ST_CM } stmt_kind; /* ST_CM: REGION.cm = EXPR */
enum { ION_E = 0, ION_CI = 1, ION_CO = 2 };

typedef struct stmt {
    stmt_kind kind;
    unsigned regions;  /* bit per ns_region */
    int has_loc;       /* 1: only the section `loc` names (sec:K, swc:ID, dend[3]); with loc.has_x only
                          its segment containing x (NEURON's sec(x)) */
    ns_location loc;
    char loc_text[48]; /* its text, for messages */
    int mech;          /* library index (insert, set, global) */
    int field;         /* parameter index (set), global index (global) */
    char ion[16];      /* ion name (ST_ION) */
    int which;         /* ION_E, ION_CI, ION_CO */
    int e_fixed;       /* eX_fixed: e stays this value where a mechanism writes the concentration (NEURON's
                          ion_style e_style 1 without einit/eadvance) */
    expr value;
    double number;     /* ST_GLOBAL */
    char where[96];    /* "file:line" or the call, for messages */
    char text[96];     /* the statement's name, for messages */
} stmt;

/* FUNCTION_TABLE k of catalogue entry desc: a copy (ftable_copy) */
typedef struct model_ftable {
    int desc, k;
    ns_mech_ftable t;
} model_ftable;

struct ns_sim_model {
    /* the library's mechanisms, then the built-in ones it does not shadow */
    const ns_mech_desc **descs;
    int n_descs;
    stmt *stmts;
    int n, cap;
    model_ftable *ftabs;
    int n_ftabs;
};

/* *dst = src with its arrays in one allocation (dst->values first: free((void *)dst->values)) */
static ns_status ftable_copy(const ns_mech_ftable *src, ns_mech_ftable *dst) {
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
    ns_status st = ftable_copy(t, &m->ftabs[at].t);
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

typedef struct selector {
    unsigned regions;
    int has_loc;
    ns_location loc;
} selector;

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

/* Is the segment at position pos (its centre, (j + 0.5) / nseg) the one containing x? NEURON's
 * sec(x): segment int(x nseg), the last one for x = 1. */
static int in_segment(double pos, int32_t nseg, double x) {
    int32_t j = (int32_t)(x * nseg), jp = (int32_t)(pos * nseg);
    if (j > nseg - 1) j = nseg - 1;
    if (jp > nseg - 1) jp = nseg - 1;
    return j == jp;
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
    if (d->n_pointers > 0)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "%s: %s has a POINTER (%s): a density mechanism's POINTERs cannot be connected yet (a point "
                       "process's can: ns_sim_set_pointer)",
                       fn, mechanism, d->pointer_names[0]);
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

/* Which of an ion's variables `name` is: 0 eX, 1 Xi, 2 Xo, 3 iX (its
 * current), or -1. */
static int ion_var_of(const char *name, const char *ion) {
    const size_t len = strlen(ion);
    if (strlen(name) != len + 1) return -1;
    if (name[0] == 'e' && !strcmp(name + 1, ion)) return 0;
    if (name[0] == 'i' && !strcmp(name + 1, ion)) return 3;
    if (!strncmp(name, ion, len)) return name[len] == 'i' ? 1 : name[len] == 'o' ? 2 : -1;
    return -1;
}

/* The length of the mechanism name `mech` when `name` is FIELD_MECH (a
 * non-empty FIELD, an underscore, then mech), else 0. */
static size_t suffix_match(const char *name, const char *mech) {
    const size_t n = strlen(name), ml = strlen(mech);
    return ml + 2 <= n && name[n - ml - 1] == '_' && strcmp(name + n - ml, mech) == 0 ? ml : 0;
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
    if (expr_compile(text, &s.value, msg, sizeof msg) != NS_OK)
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

/* ------------------------------------------------------------ resolution */

void ns_sim_model_free(sim_model *m) {
    if (!m) return;
    for (int32_t k = 0; k < m->n_mechs; ++k) free(m->mechs[k].globals);
    if (m->per_shape)
        for (int64_t q = 0; q < (int64_t)m->n_shapes * m->n_mechs; ++q) {
            free(m->per_shape[q].node);
            free(m->per_shape[q].param);
        }
    if (m->ion_init)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->ion_init[s]);
    if (m->written)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->written[s]);
    if (m->geom)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->geom[s]);
    free(m->geom);
    if (m->cm)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->cm[s]);
    free(m->cm);
    free(m->ion_init);
    free(m->written);
    free(m->per_shape);
    free(m->mechs);
    for (int k = 0; m->ftables && k < m->n_descs; ++k) {
        for (int j = 0; m->ftables[k] && j < m->descs[k]->n_ftables; ++j) free((void *)m->ftables[k][j].values);
        free(m->ftables[k]);
    }
    free(m->ftables);
    free(m->descs);
    free(m);
}

/* NEURON's type order (memb_order_, NEURON 9.0.2): pas (type 4), then every
 * mechanism that writes an ion's concentration (WRITE xi or xo: nocmodl's
 * nrn_writes_conc), then [IClamp 7], ExpSyn (9), Exp2Syn (10), hh (17)
 * (h.MechanismType's internal_type()), then the library's other mechanisms
 * in catalogue order (file names, nrnivmodl's registration order). NEURON's
 * nrn_writes_conc puts each writer right after the ions (types 6 on, after
 * pas and extracellular) as it registers, so the writers run in reverse
 * registration order. One key per catalogue entry `desc` of `n_lib`; the
 * writers' keys are 1..n_lib, those of the rest above them. */
static int type_rank(const char *name) {
    static const char *const builtin[] = {"pas", "ExpSyn", "Exp2Syn", "hh"};
    for (int k = 0; k < 4; ++k)
        if (strcmp(name, builtin[k]) == 0) return k;
    return 4;
}

static int writes_concentration(const ns_mech_desc *d) {
    for (int j = 0; j < d->n_ions; ++j)
        if (d->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO)) return 1;
    return 0;
}

static int32_t key_of(const ns_mech_desc *d, int32_t desc, int32_t n_lib) {
    const int rank = type_rank(d->name);
    if (rank == 0) return 0;
    if (writes_concentration(d)) return 1 + (n_lib - 1 - desc);
    return n_lib + (rank < 4 ? rank : 4 + desc);
}

int32_t ns_sim_model_key(const sim_model *m, int32_t desc) { return key_of(m->descs[desc], desc, m->n_descs); }

int32_t ns_sim_model_find(const sim_model *m, const char *name) {
    for (int32_t k = 0; k < m->n_descs; ++k)
        if (strcmp(m->descs[k]->name, name) == 0) return k;
    return -1;
}

/* NEURON's ion defaults (na_ion, k_ion, ca_ion at 6.3 degC): e, ci, co; the
 * charge. 0: no defaults. */
static int ion_defaults(const char *name, double v[3], int *charge) {
    if (strcmp(name, "na") == 0) { v[0] = 50.0; v[1] = 10.0; v[2] = 140.0; *charge = 1; return 1; }
    if (strcmp(name, "k") == 0) { v[0] = -77.0; v[1] = 54.4; v[2] = 2.5; *charge = 1; return 1; }
    if (strcmp(name, "ca") == 0) { v[0] = 132.4579341637009; v[1] = 5e-5; v[2] = 2.0; *charge = 2; return 1; }
    return 0;
}

/* Path distance [um] of every node from the root section's middle. */
static ns_status distances(const ns_cell_t *cell, int32_t k, double *dist) {
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    const int32_t ns = info.sections, n = info.compartments;
    double *start = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *start);
    ns_section_info *sec = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *sec);
    if (!start || !sec) {
        free(start);
        free(sec);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "shape %d: distances", (int)k);
    }
    ns_status st = NS_OK;
    for (int32_t s = 0; s < ns && st == NS_OK; ++s) st = ns_cell_get_section(cell, s, &sec[s]);
    /* sections are numbered parents first (Import3d's order): one pass */
    for (int32_t s = 0; s < ns && st == NS_OK; ++s) {
        const int32_t p = sec[s].parent;
        if (p < 0) start[s] = 0.0;
        else if (p >= s) st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: section %d before its parent", (int)k, (int)s);
        else start[s] = sec[p].parent < 0 ? fabs(sec[s].parent_x - 0.5) * sec[p].length
                                            : start[p] + sec[s].parent_x * sec[p].length;
    }
    const int32_t *secn = ns_cell_section(cell);
    const double *x = ns_cell_position(cell);
    for (int32_t i = 0; i < n && st == NS_OK; ++i) {
        const int32_t s = secn[i];
        dist[i] = sec[s].parent < 0 ? fabs(x[i] - 0.5) * sec[s].length : start[s] + x[i] * sec[s].length;
    }
    free(start);
    free(sec);
    return st;
}

static int find_ion(sim_model *r, const char *name) {
    for (int32_t j = 0; j < r->n_ions; ++j)
        if (strcmp(r->ions[j].name, name) == 0) return j;
    return -1;
}

/* The model of shape k: shape_models[k], or `model` where that is NULL. */
static const ns_sim_model_t *model_of_shape(const ns_sim_model_t *model, const ns_sim_model_t *const *shape_models,
                                            int32_t k) {
    return shape_models && shape_models[k] ? shape_models[k] : model;
}

ns_status ns_sim_model_ftables_given(const sim_model *r, int32_t desc) {
    const ns_mech_desc *d = r->descs[desc];
    for (int j = 0; j < d->n_ftables; ++j)
        if (!r->ftables || !r->ftables[desc] || !r->ftables[desc][j].values)
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "model: mechanism %s: FUNCTION_TABLE %s has no values: give them with "
                           "ns_sim_model_set_function_table(model, \"%s_%s\", ...) (NEURON: hoc's table_%s_%s)",
                           d->name, d->ftable_names[j], d->ftable_names[j], d->name, d->ftable_names[j], d->name);
    return NS_OK;
}

ns_status ns_sim_model_resolve(const ns_sim_model_t *model, const ns_sim_model_t *const *shape_models,
                               int32_t n_shapes, const ns_cell_t *const *cells, const ns_sim_params *params,
                               sim_model **out) {
    (void)params;
    *out = NULL;
    /* the distinct models (usually one), in order of first use */
    const ns_sim_model_t **uniq = malloc((size_t)(n_shapes > 0 ? n_shapes : 1) * sizeof *uniq);
    int32_t *shape_u = malloc((size_t)(n_shapes > 0 ? n_shapes : 1) * sizeof *shape_u);
    int32_t n_uniq = 0;
    if (!uniq || !shape_u) {
        free(uniq);
        free(shape_u);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    ns_status st = NS_OK;
    for (int32_t k = 0; k < n_shapes && st == NS_OK; ++k) {
        const ns_sim_model_t *mk = model_of_shape(model, shape_models, k);
        if (!mk) {
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "model: shape %d has no model (shape_models[%d] and model are NULL)",
                         (int)k, (int)k);
            break;
        }
        int32_t u = 0;
        while (u < n_uniq && uniq[u] != mk) ++u;
        if (u == n_uniq) {
            /* one catalogue for the simulation: the synapses and the type order */
            int same = n_uniq == 0 || mk->n_descs == uniq[0]->n_descs;
            for (int q = 0; same && n_uniq > 0 && q < mk->n_descs; ++q) same = mk->descs[q] == uniq[0]->descs[q];
            if (!same) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "model: the model of shape %d was made with another mechanism library than shape %d's "
                             "(one library per simulation)", (int)k, 0);
                break;
            }
            uniq[n_uniq++] = mk;
        }
        shape_u[k] = u;
    }
    if (st != NS_OK || n_uniq == 0) {
        free(uniq);
        free(shape_u);
        return st != NS_OK ? st : ns_fail(NS_ERR_INVALID_ARGUMENT, "model: no shapes");
    }
    const ns_sim_model_t *const first = uniq[0];
    const int n_lib = first->n_descs;
    sim_model *r = calloc(1, sizeof *r);
    int *lib_to = malloc((size_t)(n_lib > 0 ? n_lib : 1) * sizeof *lib_to);
    const stmt ***gset = calloc((size_t)(n_lib > 0 ? n_lib : 1), sizeof *gset); /* per mech: who set each global */
    if (!r || !lib_to || !gset) {
        free(r);
        free(lib_to);
        free(gset);
        free(uniq);
        free(shape_u);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    /* the catalogue (library and built-ins), for the synapses (net.c) */
    r->descs = malloc((size_t)(n_lib > 0 ? n_lib : 1) * sizeof *r->descs);
    if (!r->descs) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    for (int k = 0; k < n_lib && st == NS_OK; ++k) r->descs[r->n_descs++] = first->descs[k];
    /* the FUNCTION_TABLEs' values (the first model's; a synapse type's too) */
    r->ftables = calloc((size_t)(n_lib > 0 ? n_lib : 1), sizeof *r->ftables);
    if (!r->ftables) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    for (int k = 0; k < r->n_descs && st == NS_OK; ++k)
        if (r->descs[k]->n_ftables && !(r->ftables[k] = calloc((size_t)r->descs[k]->n_ftables, sizeof **r->ftables)))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    for (int q = 0; q < first->n_ftabs && st == NS_OK; ++q)
        st = ftable_copy(&first->ftabs[q].t, &r->ftables[first->ftabs[q].desc][first->ftabs[q].k]);
    /* the mechanisms inserted anywhere by any model, in NEURON's type order */
    for (int k = 0; k < n_lib; ++k) lib_to[k] = -1;
    int n_used = 0;
    for (int32_t u = 0; u < n_uniq; ++u)
        for (int q = 0; q < uniq[u]->n; ++q)
            if (uniq[u]->stmts[q].kind == ST_INSERT && lib_to[uniq[u]->stmts[q].mech] == -1) {
                lib_to[uniq[u]->stmts[q].mech] = 0;
                ++n_used;
            }
    r->mechs = calloc((size_t)(n_used > 0 ? n_used : 1), sizeof *r->mechs);
    if (!r->mechs) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    /* by key (the keys are distinct); IClamp follows pas and the writers */
    for (int32_t last = -1; st == NS_OK;) {
        int next = -1;
        for (int k = 0; k < n_lib; ++k)
            if (lib_to[k] >= 0 && key_of(first->descs[k], k, n_lib) > last &&
                (next < 0 || key_of(first->descs[k], k, n_lib) < key_of(first->descs[next], next, n_lib)))
                next = k;
        if (next < 0) break;
        last = key_of(first->descs[next], next, n_lib);
        lib_to[next] = r->n_mechs;
        r->mechs[r->n_mechs].key = last;
        r->mechs[r->n_mechs].ftable = r->ftables ? r->ftables[next] : NULL;
        if (st == NS_OK) st = ns_sim_model_ftables_given(r, next);
        r->mechs[r->n_mechs++].desc = first->descs[next];
        if (last <= n_lib) r->n_before_clamp = r->n_mechs;
    }
    /* ions and globals */
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        sim_mech *sm = &r->mechs[m];
        const ns_mech_desc *d = sm->desc;
        if (d->n_ions > NS_SIM_MECH_IONS_MAX) {
            st = ns_fail(NS_ERR_UNSUPPORTED, "model: %s uses %d ions (at most %d)", d->name, d->n_ions,
                         NS_SIM_MECH_IONS_MAX);
            break;
        }
        sm->globals = malloc((size_t)(d->n_globals > 0 ? d->n_globals : 1) * sizeof(double));
        gset[m] = calloc((size_t)(d->n_globals > 0 ? d->n_globals : 1), sizeof *gset[m]);
        if (!sm->globals || !gset[m]) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
            break;
        }
        for (int g = 0; g < d->n_globals; ++g) sm->globals[g] = d->global_defaults[g];
        for (int j = 0; j < d->n_ions; ++j) {
            int ion = find_ion(r, d->ions[j].name);
            if (ion < 0) {
                if (r->n_ions == NS_SIM_IONS_MAX) {
                    st = ns_fail(NS_ERR_UNSUPPORTED, "model: more than %d ions", NS_SIM_IONS_MAX);
                    break;
                }
                ion = r->n_ions++;
                snprintf(r->ions[ion].name, sizeof r->ions[ion].name, "%s", d->ions[j].name);
                r->ions[ion].charge = d->ions[j].charge;
            }
            sm->ion[j] = ion;
            if (d->ions[j].flags & NS_MECH_ION_READ_I) r->ions[ion].read_i = 1;
            if (d->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO)) {
                r->ions[ion].write_c = 1;
                sm->writes_c = 1;
            }
        }
    }
    /* a GLOBAL is one value per simulation (as in NEURON): models that set
     * it must agree */
    for (int32_t u = 0; u < n_uniq && st == NS_OK; ++u)
        for (int q = 0; q < uniq[u]->n && st == NS_OK; ++q) {
            const stmt *s = &uniq[u]->stmts[q];
            if (s->kind != ST_GLOBAL) continue;
            const int m = lib_to[s->mech];
            if (m < 0) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: %s is not inserted anywhere", s->where, s->text,
                             first->descs[s->mech]->name);
                break;
            }
            const stmt **who = gset[m];
            const int other = who[s->field] && (who[s->field] < uniq[u]->stmts || who[s->field] >= uniq[u]->stmts + uniq[u]->n);
            if (other && who[s->field]->number != s->number) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "%s: %s = %.17g differs from %s's %.17g: a GLOBAL has one value in a simulation",
                             s->where, s->text, s->number, who[s->field]->where, who[s->field]->number);
                break;
            }
            who[s->field] = s;
            r->mechs[m].globals[s->field] = s->number;
        }
    for (int32_t u = 0; u < n_uniq && st == NS_OK; ++u)
        for (int q = 0; q < uniq[u]->n && st == NS_OK; ++q) {
            const stmt *s = &uniq[u]->stmts[q];
            if (s->kind != ST_ION) continue;
            if (find_ion(r, s->ion) < 0)
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: no inserted mechanism uses the ion %s", s->where,
                             s->text, s->ion);
        }
    r->n_shapes = n_shapes;
    if (st == NS_OK) {
        r->per_shape = calloc((size_t)n_shapes * (size_t)(r->n_mechs > 0 ? r->n_mechs : 1), sizeof *r->per_shape);
        r->ion_init = calloc((size_t)n_shapes, sizeof *r->ion_init);
        r->written = calloc((size_t)n_shapes, sizeof *r->written);
        r->geom = calloc((size_t)n_shapes, sizeof *r->geom);
        r->cm = calloc((size_t)n_shapes, sizeof *r->cm);
        if (!r->per_shape || !r->ion_init || !r->written || !r->geom || !r->cm)
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    /* the statements that applied, per distinct model: at matched + moff[u] */
    int64_t *moff = malloc((size_t)(n_uniq + 1) * sizeof *moff);
    unsigned char *matched = NULL;
    if (moff) {
        moff[0] = 0;
        for (int32_t u = 0; u < n_uniq; ++u) moff[u + 1] = moff[u] + uniq[u]->n;
        matched = calloc((size_t)(moff[n_uniq] > 0 ? moff[n_uniq] : 1), 1);
    }
    if ((!moff || !matched) && st == NS_OK) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    /* per shape: apply its model's statements node by node */
    for (int32_t k = 0; k < n_shapes && st == NS_OK; ++k) {
        const ns_sim_model_t *mdl = uniq[shape_u[k]];
        unsigned char *matched_k = matched + moff[shape_u[k]];
        const ns_cell_t *cell = cells[k];
        ns_cell_info info;
        ns_cell_get_info(cell, &info);
        const int32_t n = info.compartments;
        const double *area = ns_cell_area(cell);
        const int32_t *type = ns_cell_type(cell);
        const int32_t *secn = ns_cell_section(cell);
        int32_t *nseg = malloc((size_t)(info.sections > 0 ? info.sections : 1) * sizeof *nseg);
        const double *pos = ns_cell_position(cell);
        for (int32_t c = 0; nseg && c < info.sections; ++c) {
            ns_section_info si;
            nseg[c] = ns_cell_get_section(cell, c, &si) == NS_OK ? si.nseg : 1;
        }
        const size_t nm = (size_t)(r->n_mechs > 0 ? r->n_mechs : 1);
        double *dist = malloc((size_t)n * sizeof *dist);
        unsigned char *ins = calloc((size_t)n * nm, 1);  /* [i * nm + m] */
        double **param = calloc(nm, sizeof *param);       /* per mech: n_params * n (all nodes) */
        unsigned char *ion_set = calloc((size_t)n * (size_t)(r->n_ions > 0 ? r->n_ions : 1), 1);
        int32_t *user_e = calloc((size_t)n * (size_t)(r->n_ions > 0 ? r->n_ions : 1), sizeof *user_e); /* stmt + 1 */
        unsigned char *written = r->written[k] = calloc((size_t)n * (size_t)(r->n_ions > 0 ? r->n_ions : 1), 1);
        r->ion_init[k] = malloc((size_t)(3 * (r->n_ions > 0 ? r->n_ions : 1)) * (size_t)n * sizeof(double));
        double *geom = r->geom[k] = malloc(2 * (size_t)n * sizeof(double));
        r->cm[k] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
        for (int32_t i = 0; r->cm[k] && i < n; ++i) r->cm[k][i] = NAN; /* the params' cm of the region */
        if (!dist || !ins || !param || !ion_set || !user_e || !written || !r->ion_init[k] || !r->cm[k] || !nseg ||
            !geom)
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
        const double *diam = ns_cell_diam(cell);
        for (int32_t i = 0; geom && i < n; ++i) { /* area/diam in a mechanism */
            geom[i] = area[i] > 0.0 ? area[i] : 100.0;
            geom[n + i] = diam ? diam[i] : 0.0;
        }
        for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
            const int np = r->mechs[m].desc->n_params;
            param[m] = malloc((size_t)(np > 0 ? np : 1) * (size_t)n * sizeof(double));
            if (!param[m]) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
        }
        if (st == NS_OK) st = distances(cell, k, dist);
        double *ion0 = r->ion_init[k];
        for (int32_t j = 0; j < r->n_ions && st == NS_OK; ++j) {
            double v[3] = {0, 0, 0};
            int charge;
            const int has = ion_defaults(r->ions[j].name, v, &charge);
            for (int q = 0; q < 3; ++q)
                for (int32_t i = 0; i < n; ++i) ion0[(3 * j + q) * (int64_t)n + i] = v[q];
            if (has)
                for (int32_t i = 0; i < n; ++i) ion_set[(size_t)i * r->n_ions + j] = 7;
        }
        for (int q = 0; q < mdl->n && st == NS_OK; ++q) {
            const stmt *s = &mdl->stmts[q];
            if (s->kind == ST_GLOBAL) continue;
            const int m = s->kind == ST_ION || s->kind == ST_CM ? -1 : lib_to[s->mech];
            const int ion = s->kind == ST_ION ? find_ion(r, s->ion) : -1;
            if (s->kind == ST_SET && m < 0) { /* a parameter of a mechanism inserted nowhere */
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: %s: %s: %s is not inserted anywhere", (int)k,
                             s->where, s->text, mdl->descs[s->mech]->name);
                break;
            }
            int32_t only = -1; /* the one section of a section selector; none in this shape: skipped */
            if (s->has_loc && ns_location_section(cell, &s->loc, &only) != NS_OK) {
                ns_clear_error();
                continue;
            }
            for (int32_t i = 0; i < n && st == NS_OK; ++i) {
                if (!(area[i] > 0.0)) continue; /* zero-area nodes carry no membrane */
                if (!(s->regions & (1u << ns_region_of_swc_type(type[i])))) continue;
                if (s->has_loc && secn[i] != only) continue;
                if (s->has_loc && s->loc.has_x && !in_segment(pos[i], nseg[secn[i]], s->loc.x)) continue;
                matched_k[q] = 1;
                if (s->kind == ST_INSERT) {
                    if (!ins[(size_t)i * nm + m]) {
                        ins[(size_t)i * nm + m] = 1;
                        const ns_mech_desc *d = r->mechs[m].desc;
                        for (int p = 0; p < d->n_params; ++p) param[m][(int64_t)p * n + i] = d->field_defaults[p];
                    }
                    continue;
                }
                if (s->kind == ST_SET && !ins[(size_t)i * nm + m]) {
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                                 "shape %d: %s: %s: %s is not inserted at compartment %d (region %s)", (int)k,
                                 s->where, s->text, r->mechs[m].desc->name, (int)i,
                                 ns_region_name(ns_region_of_swc_type(type[i])));
                    break;
                }
                const double x = expr_eval(&s->value, dist[i]);
                if (!isfinite(x)) {
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: %s: %s is %g at compartment %d (d = %g um)",
                                 (int)k, s->where, s->text, x, (int)i, dist[i]);
                    break;
                }
                if (s->kind == ST_CM) {
                    if (!(x > 0.0)) {
                        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: %s: %s is %g uF/cm2 at compartment %d: must "
                                     "be > 0", (int)k, s->where, s->text, x, (int)i);
                        break;
                    }
                    r->cm[k][i] = x;
                    continue;
                }
                if (s->kind == ST_ION && s->which != ION_E && x < 0.0) {
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                                 "shape %d: %s: %s is %g at compartment %d (d = %g um): a concentration must be >= 0 "
                                 "mM", (int)k, s->where, s->text, x, (int)i, dist[i]);
                    break;
                }
                if (s->kind == ST_SET) param[m][(int64_t)s->field * n + i] = x;
                else {
                    ion0[(3 * ion + s->which) * (int64_t)n + i] = x;
                    ion_set[(size_t)i * r->n_ions + ion] |= (unsigned char)(1u << s->which);
                    if (s->which == ION_E) user_e[(size_t)i * r->n_ions + ion] = s->e_fixed ? -(q + 1) : q + 1;
                }
            }
        }
        /* where a mechanism inserted at a node writes an ion's concentration,
         * e follows by Nernst there (NEURON's ion style, per section) */
        for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
            const ns_mech_desc *d = r->mechs[m].desc;
            for (int j = 0; j < d->n_ions; ++j)
                if (d->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO))
                    for (int32_t i = 0; i < n; ++i)
                        if (ins[(size_t)i * nm + m]) written[(size_t)r->mechs[m].ion[j] * n + i] = 1;
        }
        /* eX_fixed keeps e (and the need for it) where the concentration is written */
        for (int32_t j = 0; j < r->n_ions && st == NS_OK; ++j)
            for (int32_t i = 0; i < n; ++i)
                if (user_e[(size_t)i * r->n_ions + j] < 0) written[(size_t)j * n + i] = 0;
        /* an eX there would be overwritten (NEURON does so silently): refused */
        for (int32_t j = 0; j < r->n_ions && st == NS_OK; ++j)
            for (int32_t i = 0; i < n; ++i)
                if (written[(size_t)j * n + i] && user_e[(size_t)i * r->n_ions + j] > 0) {
                    const stmt *s = &mdl->stmts[user_e[(size_t)i * r->n_ions + j] - 1];
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                                 "shape %d: %s: %s: at compartment %d a mechanism writes the concentration of %s, "
                                 "so e%s follows from %si and %so by Nernst there (set those)",
                                 (int)k, s->where, s->text, (int)i, r->ions[j].name, r->ions[j].name,
                                 r->ions[j].name, r->ions[j].name);
                    break;
                }
        /* every ion a mechanism uses has values where it is used: a default
         * ion (na, k, ca), or values the model gives (e where no mechanism
         * writes the concentrations; ci and co where one does) */
        for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
            const ns_mech_desc *d = r->mechs[m].desc;
            for (int j = 0; j < d->n_ions && st == NS_OK; ++j) {
                const int ion = r->mechs[m].ion[j];
                for (int32_t i = 0; i < n; ++i) {
                    const int w = written[(size_t)ion * n + i];
                    const unsigned need = w ? 6u : 1u;
                    if (ins[(size_t)i * nm + m] && (ion_set[(size_t)i * r->n_ions + ion] & need) != need) {
                        st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                                     "shape %d: model: %s uses the ion %s, which has no default values and no "
                                     "mechanism provides: set %s in the model (compartment %d)",
                                     (int)k, d->name, r->ions[ion].name,
                                     w ? "its concentrations Xi and Xo" : "its eX", (int)i);
                        break;
                    }
                }
            }
        }
        /* instances: the nodes where each mechanism is inserted */
        for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
            sim_mech_shape *ms = &r->per_shape[(size_t)k * r->n_mechs + m];
            const int np = r->mechs[m].desc->n_params;
            int32_t cnt = 0;
            for (int32_t i = 0; i < n; ++i) cnt += ins[(size_t)i * nm + m];
            ms->n = cnt;
            ms->node = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *ms->node);
            ms->param = malloc((size_t)(np > 0 ? np : 1) * (size_t)(cnt > 0 ? cnt : 1) * sizeof *ms->param);
            if (!ms->node || !ms->param) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
                break;
            }
            int32_t c = 0;
            for (int32_t i = 0; i < n; ++i)
                if (ins[(size_t)i * nm + m]) {
                    ms->node[c] = i;
                    for (int p = 0; p < np; ++p) ms->param[(int64_t)p * cnt + c] = param[m][(int64_t)p * n + i];
                    ++c;
                }
        }
        for (int32_t m = 0; m < r->n_mechs; ++m) free(param ? param[m] : NULL);
        free(param);
        free(dist);
        free(ins);
        free(ion_set);
        free(user_e);
        free(nseg);
    }
    /* a section selector that names no section of any of its model's shapes is a mistake */
    for (int32_t u = 0; u < n_uniq && st == NS_OK; ++u)
        for (int q = 0; q < uniq[u]->n && st == NS_OK; ++q) {
            const stmt *s = &uniq[u]->stmts[q];
            if (s->kind != ST_GLOBAL && s->has_loc && !matched[moff[u] + q])
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: %s is no section with membrane of any shape%s",
                             s->where, s->text, s->loc_text, n_uniq > 1 ? " of this model" : "");
        }
    free(matched);
    free(moff);
    for (int32_t m = 0; m < r->n_mechs; ++m) free(gset[m]);
    free(gset);
    free(uniq);
    free(shape_u);
    free(lib_to);
    if (st != NS_OK) {
        ns_sim_model_free(r);
        return st;
    }
    *out = r;
    return NS_OK;
}

ns_status ns_sim_model_var_lookup(const sim_model *md, const char *name, int32_t *mech, int *field, int32_t *ion,
                                  int *q) {
    *mech = *ion = -1;
    *field = *q = -1;
    for (int32_t j = 0; j < md->n_ions && *ion < 0; ++j)
        if ((*q = ion_var_of(name, md->ions[j].name)) >= 0) *ion = j;
    if (*ion >= 0) {
        if (*q == 3 && !md->ions[*ion].read_i)
            return ns_fail(NS_ERR_UNSUPPORTED, "ns_sim_get_model_var: %s: no mechanism reads the current of %s, so "
                                               "it is not kept", name, md->ions[*ion].name);
        return NS_OK;
    }
    size_t best = 0; /* FIELD_MECH: the longest mechanism name that ends it */
    for (int32_t k = 0; k < md->n_mechs; ++k) {
        const size_t ml = suffix_match(name, md->mechs[k].desc->name);
        if (ml > best) best = ml, *mech = k;
    }
    if (*mech >= 0) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(name) - best - 1), name);
        ns_status st = ns_mech_field_index(md->mechs[*mech].desc, prefix, field);
        if (st != NS_OK) ns_error_prefix("ns_sim_get_model_var");
        return st;
    }
    char list[512] = "";
    size_t used = 0;
    for (int32_t k = 0; k < md->n_mechs && used + 40 < sizeof list; ++k)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", md->mechs[k].desc->name);
    for (int32_t j = 0; j < md->n_ions && used + 40 < sizeof list; ++j)
        used += (size_t)snprintf(list + used, sizeof list - used, ", ions e%s %si %so", md->ions[j].name,
                                 md->ions[j].name, md->ions[j].name);
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "ns_sim_get_model_var: '%s' is neither FIELD_MECH of an inserted mechanism (%s) nor an ion's "
                   "value", name, list);
}
