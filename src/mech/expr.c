/* A model's parameter expressions in the distance from the soma (docs/simulation.md, "Models"):
 * compiled to a postfix program over a value stack, and evaluated. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech/model_build.h"
#include "core/error.h"
#include "core/number.h"


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

ns_status ns_model_expr_compile(const char *text, expr *out, char *msg, size_t msg_size) {
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

double ns_model_expr_eval(const expr *e, double d) {
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
    const double r = sp > 0 ? st[0] : NAN; /* the program leaves one value (ns_model_expr_compile) */
    if (st != stack_small) free(st);
    return r;
}

