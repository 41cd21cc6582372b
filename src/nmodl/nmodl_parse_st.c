/* The NMODL parser's expressions and statements (nmodl_parse.h): recursive descent over
 * the tokens, every statement form, KINETIC reactions, TABLE, and blocks with their LOCALs. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_parse.h"

/* ---- expressions ---- */

static ex *ex_new(ex_kind k) {
    ex *e = nm_calloc(nm_parse_arena, 1, sizeof *e);
    if (e) e->kind = k;
    return e;
}

static ex *parse_expr(parser *p);
static int dmax(int a, int b) { return a > b ? a : b; }

static ex *parse_primary(parser *p) {
    tok *t = nm_cur(p);
    if (t->kind == T_NUM) {
        p->pos++;
        ex *e = ex_new(EX_NUM);
        if (!e) return NULL;
        e->num = t->num;
        e->text = t->text;
        /* `0.001 (mV)`: a units annotation, which nocmodl checks and drops (no factor) */
        if (nm_skip_units(p)) return NULL;
        return e;
    }
    if (t->kind == T_STR) {
        p->pos++;
        ex *e = ex_new(EX_STR);
        if (e) e->text = t->text;
        return e;
    }
    if (t->kind == T_NAME) {
        if (nm_unsupported_name(t->text)) {
            nm_perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
            return NULL;
        }
        p->pos++;
        if (nm_is_punct(p, '(')) {
            p->pos++;
            ex *e = ex_new(EX_CALL);
            if (!e) return NULL;
            e->text = t->text;
            if (!nm_is_punct(p, ')')) {
                for (;;) {
                    ex *a = parse_expr(p);
                    if (!a) return NULL;
                    ex **na = nm_realloc(nm_parse_arena, e->args, (size_t)(e->n_args + 1) * sizeof *na);
                    if (!na) return NULL;
                    e->args = na;
                    e->args[e->n_args++] = a;
                    e->depth = dmax(e->depth, 1 + a->depth);
                    if (nm_is_punct(p, ',')) { p->pos++; continue; }
                    break;
                }
            }
            if (nm_expect(p, ')')) return NULL;
            return e;
        }
        ex *e = ex_new(EX_VAR);
        if (!e) return NULL;
        e->text = t->text;
        if (nm_is_punct(p, '[')) { /* an array's element */
            p->pos++;
            if (!(e->a = parse_expr(p)) || nm_expect(p, ']')) return NULL;
            e->depth = 1 + e->a->depth;
        }
        return e;
    }
    if (nm_is_punct(p, '(')) {
        p->pos++;
        ex *e = parse_expr(p);
        if (!e || nm_expect(p, ')')) return NULL;
        return e;
    }
    nm_perr(p, NS_ERR_PARSE, t->line, "expected an expression, found %s", nm_describe(t));
    return NULL;
}

/* NMODL's precedence (nocmodl's parse1.y): || < && < comparisons < + - <
 * * / < unary - ! < ^ (right associative). */
static ex *parse_power_(parser *p);
static ex *parse_power(parser *p) {
    if (++p->depth > MAX_DEPTH) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    ex *e = parse_power_(p);
    p->depth--;
    return e;
}
static ex *parse_power_(parser *p) {
    ex *a = parse_primary(p);
    if (!a) return NULL;
    if (nm_is_punct(p, '^')) {
        p->pos++;
        ex *b;
        if (nm_is_punct(p, '-')) { /* x^-2 */
            p->pos++;
            ex *c = parse_power(p);
            if (!c) return NULL;
            b = ex_new(EX_NEG);
            if (!b) return NULL;
            b->a = c;
            b->depth = 1 + c->depth;
        } else {
            b = parse_power(p);
        }
        if (!b) return NULL;
        ex *e = ex_new(EX_BIN);
        if (!e) return NULL;
        e->op = '^';
        e->a = a;
        e->b = b;
        e->depth = 1 + dmax(a->depth, b->depth);
        return e;
    }
    return a;
}
static ex *parse_unary_(parser *p);
static ex *parse_unary(parser *p) {
    if (++p->depth > MAX_DEPTH) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    ex *e = parse_unary_(p);
    p->depth--;
    return e;
}
static ex *parse_unary_(parser *p) {
    if (nm_is_punct(p, '-') || nm_is_punct(p, '!')) {
        int neg = nm_is_punct(p, '-');
        p->pos++;
        ex *a = parse_unary(p);
        if (!a) return NULL;
        ex *e = ex_new(neg ? EX_NEG : EX_NOT);
        if (e) {
            e->a = a;
            e->depth = 1 + a->depth;
        }
        return e;
    }
    if (nm_is_punct(p, '+')) { p->pos++; return parse_unary(p); }
    return parse_power(p);
}
static ex *bin(int op, ex *a, ex *b) {
    if (!a || !b) return NULL;
    ex *e = ex_new(EX_BIN);
    if (!e) return NULL;
    e->op = op;
    e->a = a;
    e->b = b;
    e->depth = 1 + dmax(a->depth, b->depth);
    return e;
}
static ex *parse_mul(parser *p) {
    ex *a = parse_unary(p);
    while (a && (nm_is_punct(p, '*') || nm_is_punct(p, '/'))) {
        int op = nm_cur(p)->punct;
        p->pos++;
        a = bin(op, a, parse_unary(p));
    }
    return a;
}
static ex *parse_add(parser *p) {
    ex *a = parse_mul(p);
    while (a && (nm_is_punct(p, '+') || nm_is_punct(p, '-'))) {
        int op = nm_cur(p)->punct;
        p->pos++;
        a = bin(op, a, parse_mul(p));
    }
    return a;
}
static ex *parse_cmp(parser *p) {
    ex *a = parse_add(p);
    while (a && nm_cur(p)->kind == T_PUNCT && strchr("<>lgen", nm_cur(p)->punct) && nm_cur(p)->punct) {
        int op = nm_cur(p)->punct;
        p->pos++;
        a = bin(op, a, parse_add(p));
    }
    return a;
}
static ex *parse_and(parser *p) {
    ex *a = parse_cmp(p);
    while (a && nm_is_punct(p, '&')) {
        p->pos++;
        a = bin('&', a, parse_cmp(p));
    }
    return a;
}
static ex *parse_expr_(parser *p);
static ex *parse_expr(parser *p) {
    if (++p->depth > MAX_DEPTH) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    ex *e = parse_expr_(p);
    p->depth--;
    if (e && e->depth > MAX_TREE) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expression more than %d operations deep", MAX_TREE);
        return NULL;
    }
    return e;
}
static ex *parse_expr_(parser *p) {
    ex *a = parse_and(p);
    while (a && nm_is_punct(p, '|')) {
        p->pos++;
        a = bin('|', a, parse_and(p));
    }
    return a;
}

/* ---- statements ---- */


int nm_add_st(parser *p, stlist *l, st *s) {
    st **n = nm_realloc(nm_parse_arena, l->s, (size_t)(l->n + 1) * sizeof *n);
    if (!n) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, s->line, "out of memory");
    l->s = n;
    l->s[l->n++] = s;
    return 0;
}
int nm_add_name(char ***list, int *n, char *name) {
    char **nl = nm_realloc(nm_parse_arena, *list, (size_t)(*n + 1) * sizeof *nl);
    if (!nl) return -1;
    *list = nl;
    nl[(*n)++] = name;
    return 0;
}


/* An array's size after its name, `[n]` (0 where there is none). */
int nm_parse_dim(parser *p, int *size) {
    *size = 0;
    if (!nm_is_punct(p, '[')) return 0;
    p->pos++;
    double n = nm_cur(p)->num;
    if (nm_cur(p)->kind == T_NAME) { /* a DEFINE'd size */
        var *d = nm_var(p->m, nm_cur(p)->text);
        n = d && d->cls == V_CONST ? d->value : 0;
    } else if (nm_cur(p)->kind != T_NUM) {
        n = 0;
    }
    if (!(n >= 1 && n <= 1e6) || n != (int)n)
        return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "an array size must be an integer in [1, 1000000], found %s",
                    nm_describe(nm_cur(p)));
    p->pos++;
    *size = (int)n;
    return nm_expect(p, ']');
}

static int parse_table(parser *p, block *owner) {
    int line = nm_cur(p)->line;
    p->pos++; /* TABLE */
    if (!owner || owner->kind == B_DERIVATIVE || owner->kind == B_KINETIC)
        return nm_perr(p, NS_ERR_PARSE, line, "TABLE outside a FUNCTION or PROCEDURE");
    if (owner->n_args != 1)
        return nm_perr(p, NS_ERR_UNSUPPORTED, line, "TABLE in %s: only one argument is supported", owner->name);
    table_decl *t = nm_calloc(nm_parse_arena, 1, sizeof *t);
    if (!t) return -1;
    t->line = line;
    owner->table = t;
    while (nm_cur(p)->kind == T_NAME && !nm_is_name(p, "DEPEND") && !nm_is_name(p, "FROM")) {
        if (nm_add_name(&t->names, &t->n_names, p->toks[p->pos++].text)) return -1;
        if (nm_is_punct(p, ',')) p->pos++;
    }
    if (nm_is_name(p, "DEPEND")) {
        p->pos++;
        while (nm_cur(p)->kind == T_NAME && !nm_is_name(p, "FROM")) {
            if (nm_add_name(&t->depend, &t->n_depend, p->toks[p->pos++].text)) return -1;
            if (nm_is_punct(p, ',')) p->pos++;
        }
    }
    if (!nm_is_name(p, "FROM")) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "TABLE: expected FROM");
    p->pos++;
    if (!(t->from = parse_expr(p))) return -1;
    if (!nm_is_name(p, "TO")) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "TABLE: expected TO");
    p->pos++;
    if (!(t->to = parse_expr(p))) return -1;
    if (!nm_is_name(p, "WITH")) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "TABLE: expected WITH");
    p->pos++;
    if (nm_cur(p)->kind != T_NUM || nm_cur(p)->num < 1 || nm_cur(p)->num > 1e6)
        return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "TABLE: WITH needs a positive integer");
    t->with = (int)p->toks[p->pos++].num;
    if (owner->kind == B_PROCEDURE && t->n_names == 0)
        return nm_perr(p, NS_ERR_PARSE, line, "TABLE in PROCEDURE %s names no variables", owner->name);
    return 0;
}

/* KINETIC: the terms of a reaction or CONSERVE, [n] NAME + [n] NAME ... */
static int parse_rterms(parser *p, rterm **out, int *n) {
    for (;;) {
        int num = 1, line = nm_cur(p)->line;
        if (nm_cur(p)->kind == T_NUM) {
            double d = nm_cur(p)->num;
            if (d != (int)d || d < 1 || d > 100)
                return nm_perr(p, NS_ERR_PARSE, line, "a stoichiometric coefficient must be a positive integer");
            num = (int)d;
            p->pos++;
        }
        char *name = nm_expect_name(p);
        if (!name) return -1;
        ex *index = NULL;
        if (nm_is_punct(p, '[')) { /* an array state's element (nm_kinetic_lower: a constant after unrolling FROM) */
            p->pos++;
            if (!(index = parse_expr(p)) || nm_expect(p, ']')) return -1;
        }
        rterm *r = nm_realloc(nm_parse_arena, *out, (size_t)(*n + 1) * sizeof *r);
        if (!r) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
        *out = r;
        r[*n].name = name;
        r[*n].num = num;
        r[*n].index = index;
        r[*n].elem = 0;
        ++*n;
        if (!nm_is_punct(p, '+')) return 0;
        p->pos++;
    }
}
/* ~ lhs <-> rhs (kf, kb) | ~ lhs -> rhs (kf) | ~ lhs << (flux) */
static int parse_reaction(parser *p, st *s) {
    p->pos++; /* ~ */
    s->kind = ST_REACTION;
    if (parse_rterms(p, &s->lhs, &s->n_lhs)) return -1;
    tok *a = nm_cur(p), *b = &p->toks[p->pos + 1 < p->n ? p->pos + 1 : p->n - 1];
    tok *c = &p->toks[p->pos + 2 < p->n ? p->pos + 2 : p->n - 1];
    int bi = a->kind == T_PUNCT && b->kind == T_PUNCT, tri = bi && c->kind == T_PUNCT;
    if (tri && a->punct == '<' && b->punct == '-' && c->punct == '>') {
        s->react = 'R';
        p->pos += 3;
    } else if (bi && a->punct == '<' && b->punct == '<') {
        s->react = '<';
        p->pos += 2;
    } else if (bi && a->punct == '-' && b->punct == '>') {
        s->react = '>';
        p->pos += 2;
    } else {
        return nm_perr(p, NS_ERR_PARSE, a->line, "reaction: expected '<->', '->' or '<<', found %s", nm_describe(a));
    }
    if (s->react == '<') {
        if (s->n_lhs != 1 || s->lhs[0].num != 1)
            return nm_perr(p, NS_ERR_PARSE, s->line, "'<<' takes one state on its left");
        if (nm_expect(p, '(') || !(s->e = parse_expr(p)) || nm_expect(p, ')')) return -1;
        return 0;
    }
    if (s->react == '>' && nm_is_punct(p, '(')) { /* ~ x -> (k): x flows out at k x (nocmodl's flux, a '->' to nothing) */
        if (s->n_lhs != 1 || s->lhs[0].num != 1)
            return nm_perr(p, NS_ERR_PARSE, s->line, "'~ x -> (rate)' takes one state on its left");
        if (nm_expect(p, '(') || !(s->e = parse_expr(p))) return -1;
        return nm_expect(p, ')');
    }
    if (parse_rterms(p, &s->rhs, &s->n_rhs) || nm_expect(p, '(') || !(s->e = parse_expr(p))) return -1;
    if (s->react == 'R' && (nm_expect(p, ',') || !(s->e2 = parse_expr(p)))) return -1;
    return nm_expect(p, ')');
}

/* KINETIC's CONSERVE a + b = e and COMPARTMENT [i,] size {names} */
static st *parse_conserve(parser *p, st *s, const tok *t) {
    p->pos++;
    if (!strcmp(t->text, "CONSERVE")) {
        s->kind = ST_CONSERVE;
        if (parse_rterms(p, &s->lhs, &s->n_lhs) || nm_expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
        return s;
    }
    const int ld = !strcmp(t->text, "LONGITUDINAL_DIFFUSION");
    s->kind = ld ? ST_LDIFUS : ST_COMPARTMENT;
    if (ld) nm_cpu_only(p, s->line, "LONGITUDINAL_DIFFUSION runs on the CPU loop only (a tree solve per species "
                                    "after the states, its coefficients host code; CoreNEURON never ran it either: "
                                    "docs/mechanisms.md)");
    if (!(s->e = parse_expr(p))) return NULL;
    if (nm_is_punct(p, ',')) { /* COMPARTMENT i, size(i) {arrays}: element i's size */
        p->pos++;
        if (s->e->kind != EX_VAR || s->e->a) {
            nm_perr(p, NS_ERR_PARSE, s->line, "%s index, %s {...}: the index must be a name", t->text,
                    ld ? "flux" : "size");
            return NULL;
        }
        s->name = s->e->text;
        if (!(s->e = parse_expr(p))) return NULL;
    }
    if (nm_expect(p, '{')) return NULL;
    while (!nm_is_punct(p, '}')) {
        char *n = nm_expect_name(p);
        if (!n) return NULL;
        rterm *r = nm_realloc(nm_parse_arena, s->lhs, (size_t)(s->n_lhs + 1) * sizeof *r);
        if (!r) return NULL;
        s->lhs = r;
        r[s->n_lhs].name = n;
        r[s->n_lhs++].num = 1;
    }
    p->pos++;
    return s;
}

/* WATCH (a > b) flag [, (c < d) flag ...]: calls in a plain block */
static st *parse_watch(parser *p, st *s, const tok *t) {
    p->pos++;
    s->kind = ST_IF;
    if (!(s->e = ex_new(EX_NUM)) || !(s->then_ = nm_calloc(nm_parse_arena, 1, sizeof *s->then_))) return NULL;
    s->e->num = 1;
    s->e->text = "1";
    for (;;) {
        st *c = nm_calloc(nm_parse_arena, 1, sizeof *c);
        ex *e = ex_new(EX_CALL);
        ex **args = nm_calloc(nm_parse_arena, 2, sizeof *args);
        if (!c || !e || !args) return NULL;
        c->kind = ST_CALL;
        c->line = t->line;
        c->e = e;
        e->text = t->text;
        e->op = NM_WATCH_OP;
        e->args = args;
        e->n_args = 2;
        if (nm_expect(p, '(') || !(args[0] = parse_expr(p)) || nm_expect(p, ')') || !(args[1] = parse_expr(p)))
            return NULL;
        ex **w = nm_realloc(nm_parse_arena, p->m->watch_cond, (size_t)(p->m->n_watch + 1) * sizeof *w);
        if (!w) return NULL;
        p->m->watch_cond = w;
        e->num = p->m->n_watch;
        w[p->m->n_watch++] = args[0];
        if (nm_add_st(p, s->then_, c)) return NULL;
        if (!nm_is_punct(p, ',')) break;
        p->pos++;
    }
    return s;
}

/* FOR_NETCONS (a, b, ...) { body } */
static st *parse_netcons(parser *p, st *s, const tok *t, block *owner) {
    p->pos++;
    s->kind = ST_CALL;
    if (!(s->e = ex_new(EX_CALL)) || nm_expect(p, '(')) return NULL;
    s->e->text = t->text;
    s->e->op = NM_NETCONS_OP;
    for (;;) {
        ex *a = ex_new(EX_VAR);
        ex **args = nm_realloc(nm_parse_arena, s->e->args, (size_t)(s->e->n_args + 1) * sizeof *args);
        if (!a || !args || !(a->text = nm_expect_name(p)) || nm_skip_units(p)) return NULL;
        s->e->args = args;
        args[s->e->n_args++] = a;
        if (!nm_is_punct(p, ',')) break;
        p->pos++;
    }
    if (nm_expect(p, ')') || !(s->then_ = nm_parse_block(p, owner))) return NULL;
    return s;
}

/* LOCAL names of a block: l's (the marker l: no statement) */
static st *parse_local(parser *p, stlist *l) {
    p->pos++;
    for (;;) {
        char *n = nm_expect_name(p);
        int size = 0;
        if (!n || nm_parse_dim(p, &size)) return NULL;
        int *ns = nm_realloc(nm_parse_arena, l->local_size, (size_t)(l->n_locals + 1) * sizeof *ns);
        if (!ns) return NULL;
        l->local_size = ns;
        ns[l->n_locals] = size;
        if (nm_add_name(&l->locals, &l->n_locals, n) || nm_skip_units(p)) return NULL;
        if (nm_is_punct(p, ',')) { p->pos++; continue; }
        break;
    }
    return (st *)l; /* marker: nothing to add (s stays in the arena) */
}

/* FROM i = a TO b [BY c] { }: i an integer, the bounds included */
static st *parse_from(parser *p, st *s, block *owner) {
    p->pos++;
    s->kind = ST_FROM;
    if (!(s->name = nm_expect_name(p)) || nm_expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
    if (!nm_is_name(p, "TO")) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "FROM %s: expected TO, found %s", s->name, nm_describe(nm_cur(p)));
        return NULL;
    }
    p->pos++;
    if (!(s->to = parse_expr(p))) return NULL;
    if (nm_is_name(p, "BY")) {
        p->pos++;
        if (!(s->by = parse_expr(p))) return NULL;
    }
    if (!(s->then_ = nm_parse_block(p, owner))) return NULL;
    return s;
}

/* SOLVE name [METHOD m | STEADYSTATE m] */
static st *parse_solve(parser *p, st *s) {
    p->pos++;
    s->kind = ST_SOLVE;
    if (!(s->name = nm_expect_name(p))) return NULL;
    s->method = M_NONE;
    if (nm_is_name(p, "METHOD")) {
        p->pos++;
        char *m = nm_expect_name(p);
        if (!m) return NULL;
        if (!strcmp(m, "cnexp")) s->method = M_CNEXP;
        else if (!strcmp(m, "derivimplicit")) s->method = M_DERIVIMPLICIT;
        else if (!strcmp(m, "euler")) s->method = M_EULER;
        else if (!strcmp(m, "sparse")) s->method = M_SPARSE;
        else if (!strcmp(m, "runge")) s->method = M_RUNGE;
        else if (!strcmp(m, "after_cvode")) s->method = M_NONE; /* a PROCEDURE, run in state() as nocmodl's */
        else {
            nm_perr(p, NS_ERR_UNSUPPORTED, s->line,
                 "SOLVE %s METHOD %s is not supported (cnexp, derivimplicit, euler, runge, sparse)", s->name, m);
            return NULL;
        }
    } else if (nm_is_name(p, "STEADYSTATE")) {
        p->pos++;
        char *m = nm_expect_name(p);
        if (!m) return NULL;
        s->steady = 1;
        if (!strcmp(m, "sparse")) s->method = M_SPARSE;
        else if (!strcmp(m, "derivimplicit")) s->method = M_DERIVIMPLICIT;
        else if (!strcmp(m, "cnexp")) s->method = M_CNEXP; /* nocmodl: derivimplicit's (solve.cpp's rename) */
        else {
            nm_perr(p, NS_ERR_UNSUPPORTED, s->line,
                    "SOLVE %s STEADYSTATE %s: NEURON has sparse and derivimplicit (nocmodl writes a call of "
                    "_ss_%s_thread, which NEURON's scopmath lacks, and the build of its C fails)", s->name, m, m);
            return NULL;
        }
    }
    return s;
}

/* if (e) { } [else if ... | else { }] */
static st *parse_if(parser *p, st *s, block *owner) {
    p->pos++;
    s->kind = ST_IF;
    if (nm_expect(p, '(') || !(s->e = parse_expr(p)) || nm_expect(p, ')')) return NULL;
    if (!(s->then_ = nm_parse_block(p, owner))) return NULL;
    if (nm_is_name(p, "else")) {
        p->pos++;
        if (nm_is_name(p, "if")) {
            stlist *el = nm_calloc(nm_parse_arena, 1, sizeof *el);
            if (!el) return NULL;
            st *inner = nm_parse_statement(p, el, owner);
            if (!inner || nm_add_st(p, el, inner)) return NULL;
            s->else_ = el;
        } else if (!(s->else_ = nm_parse_block(p, owner))) {
            return NULL;
        }
    }
    return s;
}

st *nm_parse_statement(parser *p, stlist *l, block *owner) {
    tok *t = nm_cur(p);
    st *s = nm_calloc(nm_parse_arena, 1, sizeof *s);
    if (!s) return NULL;
    s->line = t->line;
    int in_kinetic = owner && owner->kind == B_KINETIC;
    if (in_kinetic && nm_is_punct(p, '~')) return parse_reaction(p, s) ? NULL : s;
    if (owner && owner->alg && nm_is_punct(p, '~')) { /* LINEAR / NONLINEAR: ~ e = e2 */
        p->pos++;
        const tok *plus = nm_cur(p);
        if (nm_is_punct(p, '+') && plus->start == t->end) { /* ~+ (one token, nocmodl's): terms added to the last */
            p->pos++;
            s->react = '+';
        }
        s->kind = ST_EQUATION;
        if (!(s->e = parse_expr(p)) || nm_expect(p, '=') || !(s->e2 = parse_expr(p))) return NULL;
        return s;
    }
    if (in_kinetic && (nm_is_name(p, "CONSERVE") || nm_is_name(p, "COMPARTMENT") ||
                       nm_is_name(p, "LONGITUDINAL_DIFFUSION")))
        return parse_conserve(p, s, t);
    if (t->kind == T_RETURN) {
        p->pos++;
        s->kind = ST_RETURN;
        return s;
    }
    /* nocmodl's thread-safety markers: MUTEXLOCK/MUTEXUNLOCK around a block,
     * PROTECT before an assignment (a mutex around it in NEURON). An instance
     * is one thread's here, and a module-level LOCAL a field per instance: no lock */
    if (nm_is_name(p, "MUTEXLOCK") || nm_is_name(p, "MUTEXUNLOCK")) {
        p->pos++;
        return (st *)l;
    }
    if (nm_is_name(p, "PROTECT")) {
        p->pos++;
        st *a = nm_parse_statement(p, l, owner);
        if (a && a->kind != ST_ASSIGN) {
            nm_perr(p, NS_ERR_PARSE, t->line, "PROTECT must be followed by an assignment");
            return NULL;
        }
        if (a) a->protect = 1;
        return a;
    }
    if (t->kind == T_VERBATIM) { /* C as written (nmodl_verbatim.c) */
        p->pos++;
        s->kind = ST_VERBATIM;
        s->name = t->text;
        s->file = (t->line >> LINE_BITS) ? p->files[t->line >> LINE_BITS] : p->m->file; /* (the arena's, or m's) */
        s->file_line = t->line & ((1 << LINE_BITS) - 1);
        return s;
    }
    if (t->kind != T_NAME) {
        if (nm_is_punct(p, '~'))
            nm_perr(p, NS_ERR_PARSE, t->line, "a reaction ('~') outside a KINETIC block");
        else
            nm_perr(p, NS_ERR_PARSE, t->line, "expected a statement, found %s", nm_describe(t));
        return NULL;
    }
    if (!strcmp(t->text, "LONGITUDINAL_DIFFUSION")) { /* in a KINETIC block: parse_conserve */
        nm_perr(p, NS_ERR_PARSE, t->line, "LONGITUDINAL_DIFFUSION outside a KINETIC block (NEURON takes it only in one)");
        return NULL;
    }
    if (nm_unsupported_name(t->text)) {
        nm_perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
        return NULL;
    }
    if (!strcmp(t->text, "WATCH")) return parse_watch(p, s, t);
    if (!strcmp(t->text, "state_discontinuity")) { /* NEURON 9: state_discontinuity(x, e) is x = e */
        p->pos++;
        s->kind = ST_ASSIGN;
        if (nm_expect(p, '(') || !(s->name = nm_expect_name(p))) return NULL;
        if (nm_is_punct(p, '[')) {
            p->pos++;
            if (!(s->index = parse_expr(p)) || nm_expect(p, ']')) return NULL;
        }
        if (nm_expect(p, ',') || !(s->e = parse_expr(p)) || nm_expect(p, ')')) return NULL;
        return s;
    }
    if (!strcmp(t->text, "FOR_NETCONS")) return parse_netcons(p, s, t, owner);
    if (!strcmp(t->text, "LOCAL")) return parse_local(p, l);
    if (!strcmp(t->text, "WHILE") || !strcmp(t->text, "while")) {
        p->pos++;
        s->kind = ST_WHILE;
        if (nm_expect(p, '(') || !(s->e = parse_expr(p)) || nm_expect(p, ')')) return NULL;
        if (!(s->then_ = nm_parse_block(p, owner))) return NULL;
        return s;
    }
    if (!strcmp(t->text, "FROM")) return parse_from(p, s, owner);
    if (!strcmp(t->text, "TABLE")) {
        if (parse_table(p, owner)) return NULL;
        return (st *)l;
    }
    if (!strcmp(t->text, "UNITSOFF") || !strcmp(t->text, "UNITSON")) {
        p->pos++;
        return (st *)l;
    }
    if (!strcmp(t->text, "SOLVE")) return parse_solve(p, s);
    if (!strcmp(t->text, "if")) return parse_if(p, s, owner);
    p->pos++;
    if (nm_is_punct(p, '\'')) {
        p->pos++;
        s->kind = ST_DERIV;
        s->name = t->text;
        if (nm_is_punct(p, '[')) { /* an array STATE's element: x'[i] = e (nm_deriv_arrays_lower) */
            p->pos++;
            if (!(s->index = parse_expr(p)) || nm_expect(p, ']')) return NULL;
        }
        if (nm_expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
        return s;
    }
    if (nm_is_punct(p, '[')) { /* an array's element: x[i] = e */
        p->pos++;
        if (!(s->index = parse_expr(p)) || nm_expect(p, ']')) return NULL;
        if (!nm_is_punct(p, '=')) {
            nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected '=' after '%s[...]', found %s", t->text, nm_describe(nm_cur(p)));
            return NULL;
        }
    }
    if (nm_is_punct(p, '=')) {
        p->pos++;
        s->kind = ST_ASSIGN;
        s->name = t->text;
        if (!(s->e = parse_expr(p))) return NULL;
        return s;
    }
    if (nm_is_punct(p, '(')) {
        p->pos--;
        s->kind = ST_CALL;
        if (!(s->e = parse_primary(p))) return NULL;
        return s;
    }
    nm_perr(p, NS_ERR_PARSE, t->line, "expected '=', '(' or \"'\" after '%s', found %s", t->text, nm_describe(nm_cur(p)));
    return NULL;
}

static stlist *parse_block_(parser *p, block *owner);
stlist *nm_parse_block(parser *p, block *owner) {
    if (++p->depth > MAX_DEPTH) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    stlist *l = parse_block_(p, owner);
    p->depth--;
    return l;
}
static stlist *parse_block_(parser *p, block *owner) {
    if (nm_expect(p, '{')) return NULL;
    stlist *l = nm_calloc(nm_parse_arena, 1, sizeof *l);
    if (!l) return NULL;
    while (!nm_is_punct(p, '}')) {
        if (nm_cur(p)->kind == T_EOF) {
            nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "missing '}'");
            return NULL;
        }
        if (nm_is_punct(p, '{')) { /* a nested plain block */
            stlist *in = nm_parse_block(p, owner);
            if (!in) return NULL;
            st *s = nm_calloc(nm_parse_arena, 1, sizeof *s);
            if (!s) return NULL;
            s->kind = ST_IF;
            s->line = nm_cur(p)->line;
            s->e = ex_new(EX_NUM);
            if (!s->e) return NULL;
            s->e->num = 1;
            s->e->text = "1";
            s->then_ = in;
            if (nm_add_st(p, l, s)) return NULL;
            continue;
        }
        if (p->net_depth && p->depth == p->net_depth && nm_is_name(p, "INITIAL")) { /* NET_RECEIVE's own */
            const int line = nm_cur(p)->line;
            if (p->m->net_initial) {
                nm_perr(p, NS_ERR_PARSE, line, "a second INITIAL in NET_RECEIVE");
                return NULL;
            }
            p->pos++;
            const int depth = p->net_depth;
            p->net_depth = -1; /* no INITIAL inside it */
            p->m->net_initial = nm_parse_block(p, owner);
            p->net_depth = depth;
            if (!p->m->net_initial) return NULL;
            continue;
        }
        st *s = nm_parse_statement(p, l, owner);
        if (!s) return NULL;
        if (s != (st *)l && nm_add_st(p, l, s)) return NULL;
    }
    p->pos++;
    return l;
}
