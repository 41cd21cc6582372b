/* The NMODL translator's front end: a lexer, a recursive-descent parser of
 * the subset that channel and synapse files use (docs/mechanisms.md), and the
 * checks that give every variable its class (parameter, assigned, state,
 * global, ion, constant). Errors name the file and line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_impl.h"

/* ---- lexer ---- */

enum { T_EOF, T_NAME, T_NUM, T_PUNCT };

typedef struct tok {
    int kind;
    int punct;     /* T_PUNCT: one character or 'l' (<=), 'g' (>=), 'e' (==), 'n' (!=), '&', '|' */
    int line;
    size_t start, end; /* in the source text */
    char *text;    /* T_NAME, T_NUM */
    double num;
} tok;

typedef struct parser {
    const char *src;
    const char *file;
    tok *toks;
    int n, cap, pos;
    ns_status status;
    struct ns_nmodl *m;
    int seen_breakpoint, seen_neuron;
    int in_initial; /* check_list is in INITIAL (where SOLVE ... STEADYSTATE goes) */
    int depth; /* nesting of expressions and blocks: bounded, so that no input overflows the stack */
} parser;

#define MAX_DEPTH 600 /* three per parenthesis: parse_expr, parse_unary, parse_power */
#define MAX_TREE 2000

static char *dupn(const char *s, size_t n) {
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}
static char *dup(const char *s) { return dupn(s, strlen(s)); }

/* The AST, token texts and name lists of the module being parsed live in its
 * arena (freed by ns_nmodl_destroy): the parser's error paths leak nothing. */
static _Thread_local nm_arena *AR;
static char *ar_dupn(const char *s, size_t n) {
    char *r = nm_calloc(AR, n + 1, 1);
    if (r) memcpy(r, s, n);
    return r;
}

static int perr(parser *p, ns_status status, int line, const char *fmt, ...) NS_PRINTF_LIKE(4, 5);
static int perr(parser *p, ns_status status, int line, const char *fmt, ...) {
    if (p->status) return -1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->status = ns_fail(status, "%s:%d: %s", p->file, line, msg);
    return -1;
}

static const char *const UNSUPPORTED[] = {
    "VERBATIM", "POINTER", "BBCOREPOINTER", "LINEAR", "NONLINEAR", "PARTIAL",
    "DISCRETE", "FUNCTION_TABLE", "LONGITUDINAL_DIFFUSION", "ELECTRODE_CURRENT", "EXTERNAL",
    "BEFORE", "AFTER", "LAG", "SENS", "MATCH", "TERMINAL", "SWEEP", "WATCH", "FOR_NETCONS", "net_send", "net_event", "net_move", "WHILE",
    "FROM", "CONSTRUCTOR", "DESTRUCTOR", "REPRESENTS", "RANDOM", "NONSPECIFIC_CONDUCTANCE",
    /* Arbor's extensions */
    "POST_EVENT", "JUNCTION_PROCESS", "VOLTAGE_PROCESS", "WHITE_NOISE", NULL};

static int push(parser *p, tok t) {
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 256;
        tok *n = realloc(p->toks, (size_t)cap * sizeof *n);
        if (!n) return perr(p, NS_ERR_OUT_OF_MEMORY, t.line, "out of memory");
        p->toks = n;
        p->cap = cap;
    }
    p->toks[p->n++] = t;
    return 0;
}

static int lex(parser *p) {
    const char *s = p->src;
    size_t i = 0;
    int line = 1;
    while (s[i]) {
        char c = s[i];
        if (c == '\n') { line++; i++; continue; }
        if (isspace((unsigned char)c)) { i++; continue; }
        if (c == ':' || c == '?') { /* comment to the end of the line */
            while (s[i] && s[i] != '\n') i++;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            size_t b = i;
            while (isalnum((unsigned char)s[i]) || s[i] == '_') i++;
            size_t len = i - b;
            if (len == 5 && !strncmp(s + b, "TITLE", 5)) {
                while (s[i] && s[i] != '\n') i++;
                continue;
            }
            if (len == 7 && !strncmp(s + b, "COMMENT", 7)) {
                const char *e = strstr(s + i, "ENDCOMMENT");
                if (!e) return perr(p, NS_ERR_PARSE, line, "COMMENT without ENDCOMMENT");
                for (; s + i < e; i++)
                    if (s[i] == '\n') line++;
                i += 10;
                continue;
            }
            if ((len == 8 && (!strncmp(s + b, "UNITSOFF", 8))) || (len == 7 && !strncmp(s + b, "UNITSON", 7)) ||
                (len == 10 && !strncmp(s + b, "THREADSAFE", 10)))
                continue;
            if (len == 8 && !strncmp(s + b, "VERBATIM", 8))
                return perr(p, NS_ERR_UNSUPPORTED, line, "VERBATIM is not supported (C code in a .mod file)");
            tok t = {T_NAME, 0, line, b, i, ar_dupn(s + b, len), 0};
            if (!t.text || push(p, t)) return -1;
            continue;
        }
        if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) {
            size_t b = i;
            while (isdigit((unsigned char)s[i])) i++;
            if (s[i] == '.') { i++; while (isdigit((unsigned char)s[i])) i++; }
            if ((s[i] == 'e' || s[i] == 'E') &&
                (isdigit((unsigned char)s[i + 1]) ||
                 ((s[i + 1] == '-' || s[i + 1] == '+') && isdigit((unsigned char)s[i + 2])))) {
                i += 2;
                while (isdigit((unsigned char)s[i])) i++;
            }
            tok t = {T_NUM, 0, line, b, i, ar_dupn(s + b, i - b), 0};
            if (!t.text) return -1;
            t.num = strtod(t.text, NULL);
            if (push(p, t)) return -1;
            continue;
        }
        int punct = c;
        size_t b = i;
        if (s[i + 1] == '=' && (c == '<' || c == '>' || c == '=' || c == '!')) {
            punct = c == '<' ? 'l' : c == '>' ? 'g' : c == '=' ? 'e' : 'n';
            i += 2;
        } else if ((c == '&' && s[i + 1] == '&') || (c == '|' && s[i + 1] == '|')) {
            i += 2;
        } else if (strchr("{}()=,'+-*/^<>!~", c)) {
            i++;
        } else {
            return perr(p, NS_ERR_PARSE, line, "unexpected character '%c'", c);
        }
        if (push(p, (tok){T_PUNCT, punct, line, b, i, NULL, 0})) return -1;
    }
    return push(p, (tok){T_EOF, 0, line, i, i, NULL, 0});
}

/* ---- token helpers ---- */

/* The current token; past the end it stays on the final T_EOF, so that a step over a token
 * that was not checked can never read beyond the array (the fuzzer found `FROM` at EOF). */
static tok *cur(parser *p) { return &p->toks[p->pos < p->n ? p->pos : p->n - 1]; }
static int is_punct(parser *p, int c) { return cur(p)->kind == T_PUNCT && cur(p)->punct == c; }
static int is_name(parser *p, const char *s) { return cur(p)->kind == T_NAME && !strcmp(cur(p)->text, s); }
static const char *describe(tok *t) {
    static _Thread_local char buf[64];
    if (t->kind == T_EOF) return "end of file";
    if (t->kind == T_PUNCT) {
        switch (t->punct) {
        case 'l': return "'<='";
        case 'g': return "'>='";
        case 'e': return "'=='";
        case 'n': return "'!='";
        case '&': return "'&&'";
        case '|': return "'||'";
        }
        snprintf(buf, sizeof buf, "'%c'", t->punct);
        return buf;
    }
    snprintf(buf, sizeof buf, "'%.40s'", t->text);
    return buf;
}
static int expect(parser *p, int c) {
    if (!is_punct(p, c)) return perr(p, NS_ERR_PARSE, cur(p)->line, "expected '%c', found %s", c, describe(cur(p)));
    p->pos++;
    return 0;
}
static char *expect_name(parser *p) {
    if (cur(p)->kind != T_NAME) {
        perr(p, NS_ERR_PARSE, cur(p)->line, "expected a name, found %s", describe(cur(p)));
        return NULL;
    }
    return p->toks[p->pos++].text;
}
static int unsupported_name(const char *s) {
    for (int i = 0; UNSUPPORTED[i]; i++)
        if (!strcmp(UNSUPPORTED[i], s)) return 1;
    return 0;
}
/* Skip a units annotation "(...)" if there is one. */
static int skip_units(parser *p) {
    if (!is_punct(p, '(')) return 0;
    int depth = 0;
    do {
        if (cur(p)->kind == T_EOF) return perr(p, NS_ERR_PARSE, cur(p)->line, "unterminated units");
        if (is_punct(p, '(')) depth++;
        if (is_punct(p, ')')) depth--;
        p->pos++;
    } while (depth > 0);
    return 0;
}
/* Skip a limits annotation "<lo, hi>". */
static int skip_limits(parser *p) {
    if (!is_punct(p, '<')) return 0;
    while (!is_punct(p, '>')) {
        if (cur(p)->kind == T_EOF) return perr(p, NS_ERR_PARSE, cur(p)->line, "unterminated limits");
        p->pos++;
    }
    p->pos++;
    return 0;
}

/* ---- expressions ---- */

static ex *ex_new(ex_kind k) {
    ex *e = nm_calloc(AR, 1, sizeof *e);
    if (e) e->kind = k;
    return e;
}

static ex *parse_expr(parser *p);
static int dmax(int a, int b) { return a > b ? a : b; }

static ex *parse_primary(parser *p) {
    tok *t = cur(p);
    if (t->kind == T_NUM) {
        p->pos++;
        ex *e = ex_new(EX_NUM);
        if (!e) return NULL;
        e->num = t->num;
        e->text = t->text;
        return e;
    }
    if (t->kind == T_NAME) {
        if (unsupported_name(t->text)) {
            perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
            return NULL;
        }
        p->pos++;
        if (is_punct(p, '(')) {
            p->pos++;
            ex *e = ex_new(EX_CALL);
            if (!e) return NULL;
            e->text = t->text;
            if (!is_punct(p, ')')) {
                for (;;) {
                    ex *a = parse_expr(p);
                    if (!a) return NULL;
                    ex **na = nm_realloc(AR, e->args, (size_t)(e->n_args + 1) * sizeof *na);
                    if (!na) return NULL;
                    e->args = na;
                    e->args[e->n_args++] = a;
                    e->depth = dmax(e->depth, 1 + a->depth);
                    if (is_punct(p, ',')) { p->pos++; continue; }
                    break;
                }
            }
            if (expect(p, ')')) return NULL;
            return e;
        }
        ex *e = ex_new(EX_VAR);
        if (e) e->text = t->text;
        return e;
    }
    if (is_punct(p, '(')) {
        p->pos++;
        ex *e = parse_expr(p);
        if (!e || expect(p, ')')) return NULL;
        return e;
    }
    perr(p, NS_ERR_PARSE, t->line, "expected an expression, found %s", describe(t));
    return NULL;
}

/* NMODL's precedence (nocmodl's parse1.y): || < && < comparisons < + - <
 * * / < unary - ! < ^ (right associative). */
static ex *parse_power_(parser *p);
static ex *parse_power(parser *p) {
    if (++p->depth > MAX_DEPTH) {
        perr(p, NS_ERR_PARSE, cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    ex *e = parse_power_(p);
    p->depth--;
    return e;
}
static ex *parse_power_(parser *p) {
    ex *a = parse_primary(p);
    if (!a) return NULL;
    if (is_punct(p, '^')) {
        p->pos++;
        ex *b;
        if (is_punct(p, '-')) { /* x^-2 */
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
        perr(p, NS_ERR_PARSE, cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    ex *e = parse_unary_(p);
    p->depth--;
    return e;
}
static ex *parse_unary_(parser *p) {
    if (is_punct(p, '-') || is_punct(p, '!')) {
        int neg = is_punct(p, '-');
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
    if (is_punct(p, '+')) { p->pos++; return parse_unary(p); }
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
    while (a && (is_punct(p, '*') || is_punct(p, '/'))) {
        int op = cur(p)->punct;
        p->pos++;
        a = bin(op, a, parse_unary(p));
    }
    return a;
}
static ex *parse_add(parser *p) {
    ex *a = parse_mul(p);
    while (a && (is_punct(p, '+') || is_punct(p, '-'))) {
        int op = cur(p)->punct;
        p->pos++;
        a = bin(op, a, parse_mul(p));
    }
    return a;
}
static ex *parse_cmp(parser *p) {
    ex *a = parse_add(p);
    while (a && cur(p)->kind == T_PUNCT && strchr("<>lgen", cur(p)->punct) && cur(p)->punct) {
        int op = cur(p)->punct;
        p->pos++;
        a = bin(op, a, parse_add(p));
    }
    return a;
}
static ex *parse_and(parser *p) {
    ex *a = parse_cmp(p);
    while (a && is_punct(p, '&')) {
        p->pos++;
        a = bin('&', a, parse_cmp(p));
    }
    return a;
}
static ex *parse_expr_(parser *p);
static ex *parse_expr(parser *p) {
    if (++p->depth > MAX_DEPTH) {
        perr(p, NS_ERR_PARSE, cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    ex *e = parse_expr_(p);
    p->depth--;
    if (e && e->depth > MAX_TREE) {
        perr(p, NS_ERR_PARSE, cur(p)->line, "expression more than %d operations deep", MAX_TREE);
        return NULL;
    }
    return e;
}
static ex *parse_expr_(parser *p) {
    ex *a = parse_and(p);
    while (a && is_punct(p, '|')) {
        p->pos++;
        a = bin('|', a, parse_and(p));
    }
    return a;
}

/* ---- statements ---- */

static stlist *parse_block(parser *p, block *owner);

static int add_st(parser *p, stlist *l, st *s) {
    st **n = nm_realloc(AR, l->s, (size_t)(l->n + 1) * sizeof *n);
    if (!n) return perr(p, NS_ERR_OUT_OF_MEMORY, s->line, "out of memory");
    l->s = n;
    l->s[l->n++] = s;
    return 0;
}
static int add_name(char ***list, int *n, char *name) {
    char **nl = nm_realloc(AR, *list, (size_t)(*n + 1) * sizeof *nl);
    if (!nl) return -1;
    *list = nl;
    nl[(*n)++] = name;
    return 0;
}

static int parse_table(parser *p, block *owner) {
    int line = cur(p)->line;
    p->pos++; /* TABLE */
    if (!owner || owner->kind == B_DERIVATIVE || owner->kind == B_KINETIC)
        return perr(p, NS_ERR_PARSE, line, "TABLE outside a FUNCTION or PROCEDURE");
    if (owner->n_args != 1)
        return perr(p, NS_ERR_UNSUPPORTED, line, "TABLE in %s: only one argument is supported", owner->name);
    table_decl *t = nm_calloc(AR, 1, sizeof *t);
    if (!t) return -1;
    owner->table = t;
    while (cur(p)->kind == T_NAME && !is_name(p, "DEPEND") && !is_name(p, "FROM")) {
        if (add_name(&t->names, &t->n_names, p->toks[p->pos++].text)) return -1;
        if (is_punct(p, ',')) p->pos++;
    }
    if (is_name(p, "DEPEND")) {
        p->pos++;
        while (cur(p)->kind == T_NAME && !is_name(p, "FROM")) {
            if (add_name(&t->depend, &t->n_depend, p->toks[p->pos++].text)) return -1;
            if (is_punct(p, ',')) p->pos++;
        }
    }
    if (!is_name(p, "FROM")) return perr(p, NS_ERR_PARSE, cur(p)->line, "TABLE: expected FROM");
    p->pos++;
    if (!(t->from = parse_expr(p))) return -1;
    if (!is_name(p, "TO")) return perr(p, NS_ERR_PARSE, cur(p)->line, "TABLE: expected TO");
    p->pos++;
    if (!(t->to = parse_expr(p))) return -1;
    if (!is_name(p, "WITH")) return perr(p, NS_ERR_PARSE, cur(p)->line, "TABLE: expected WITH");
    p->pos++;
    if (cur(p)->kind != T_NUM || cur(p)->num < 1 || cur(p)->num > 1e6)
        return perr(p, NS_ERR_PARSE, cur(p)->line, "TABLE: WITH needs a positive integer");
    t->with = (int)p->toks[p->pos++].num;
    if (owner->kind == B_PROCEDURE && t->n_names == 0)
        return perr(p, NS_ERR_PARSE, line, "TABLE in PROCEDURE %s names no variables", owner->name);
    return 0;
}

/* KINETIC: the terms of a reaction or CONSERVE, [n] NAME + [n] NAME ... */
static int parse_rterms(parser *p, rterm **out, int *n) {
    for (;;) {
        int num = 1, line = cur(p)->line;
        if (cur(p)->kind == T_NUM) {
            double d = cur(p)->num;
            if (d != (int)d || d < 1 || d > 100)
                return perr(p, NS_ERR_PARSE, line, "a stoichiometric coefficient must be a positive integer");
            num = (int)d;
            p->pos++;
        }
        char *name = expect_name(p);
        if (!name) return -1;
        if (is_punct(p, '['))
            return perr(p, NS_ERR_UNSUPPORTED, line, "array states in a reaction ('%s[...]') are not supported", name);
        rterm *r = nm_realloc(AR, *out, (size_t)(*n + 1) * sizeof *r);
        if (!r) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
        *out = r;
        r[*n].name = name;
        r[*n].num = num;
        ++*n;
        if (!is_punct(p, '+')) return 0;
        p->pos++;
    }
}
/* ~ lhs <-> rhs (kf, kb) | ~ lhs -> rhs (kf) | ~ lhs << (flux) */
static int parse_reaction(parser *p, st *s) {
    p->pos++; /* ~ */
    s->kind = ST_REACTION;
    if (parse_rterms(p, &s->lhs, &s->n_lhs)) return -1;
    tok *a = cur(p), *b = &p->toks[p->pos + 1 < p->n ? p->pos + 1 : p->n - 1];
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
        return perr(p, NS_ERR_PARSE, a->line, "reaction: expected '<->', '->' or '<<', found %s", describe(a));
    }
    if (s->react == '<') {
        if (s->n_lhs != 1 || s->lhs[0].num != 1)
            return perr(p, NS_ERR_PARSE, s->line, "'<<' takes one state on its left");
        if (expect(p, '(') || !(s->e = parse_expr(p)) || expect(p, ')')) return -1;
        return 0;
    }
    if (parse_rterms(p, &s->rhs, &s->n_rhs) || expect(p, '(') || !(s->e = parse_expr(p))) return -1;
    if (s->react == 'R' && (expect(p, ',') || !(s->e2 = parse_expr(p)))) return -1;
    return expect(p, ')');
}

static st *parse_statement(parser *p, stlist *l, block *owner) {
    tok *t = cur(p);
    st *s = nm_calloc(AR, 1, sizeof *s);
    if (!s) return NULL;
    s->line = t->line;
    int in_kinetic = owner && owner->kind == B_KINETIC;
    if (in_kinetic && is_punct(p, '~')) return parse_reaction(p, s) ? NULL : s;
    if (in_kinetic && (is_name(p, "CONSERVE") || is_name(p, "COMPARTMENT"))) {
        p->pos++;
        if (!strcmp(t->text, "CONSERVE")) {
            s->kind = ST_CONSERVE;
            if (parse_rterms(p, &s->lhs, &s->n_lhs) || expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
            return s;
        }
        s->kind = ST_COMPARTMENT;
        if (!(s->e = parse_expr(p))) return NULL;
        if (is_punct(p, ',')) {
            perr(p, NS_ERR_UNSUPPORTED, s->line, "COMPARTMENT with an index (array states) is not supported");
            return NULL;
        }
        if (expect(p, '{')) return NULL;
        while (!is_punct(p, '}')) {
            char *n = expect_name(p);
            if (!n) return NULL;
            rterm *r = nm_realloc(AR, s->lhs, (size_t)(s->n_lhs + 1) * sizeof *r);
            if (!r) return NULL;
            s->lhs = r;
            r[s->n_lhs].name = n;
            r[s->n_lhs++].num = 1;
        }
        p->pos++;
        return s;
    }
    if (t->kind != T_NAME) {
        if (is_punct(p, '~'))
            perr(p, NS_ERR_PARSE, t->line, "a reaction ('~') outside a KINETIC block");
        else
            perr(p, NS_ERR_PARSE, t->line, "expected a statement, found %s", describe(t));
        return NULL;
    }
    if (unsupported_name(t->text)) {
        perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
        return NULL;
    }
    if (!strcmp(t->text, "LOCAL")) {
        p->pos++;
        for (;;) {
            char *n = expect_name(p);
            if (!n || add_name(&l->locals, &l->n_locals, n)) return NULL;
            if (is_punct(p, ',')) { p->pos++; continue; }
            break;
        }
        return (st *)l; /* marker: nothing to add (s stays in the arena) */
    }
    if (!strcmp(t->text, "TABLE")) {
        if (parse_table(p, owner)) return NULL;
        return (st *)l;
    }
    if (!strcmp(t->text, "UNITSOFF") || !strcmp(t->text, "UNITSON")) {
        p->pos++;
        return (st *)l;
    }
    if (!strcmp(t->text, "SOLVE")) {
        p->pos++;
        s->kind = ST_SOLVE;
        if (!(s->name = expect_name(p))) return NULL;
        s->method = M_NONE;
        if (is_name(p, "METHOD")) {
            p->pos++;
            char *m = expect_name(p);
            if (!m) return NULL;
            if (!strcmp(m, "cnexp")) s->method = M_CNEXP;
            else if (!strcmp(m, "derivimplicit")) s->method = M_DERIVIMPLICIT;
            else if (!strcmp(m, "euler")) s->method = M_EULER;
            else if (!strcmp(m, "sparse")) s->method = M_SPARSE;
            else {
                perr(p, NS_ERR_UNSUPPORTED, s->line,
                     "SOLVE %s METHOD %s is not supported (cnexp, derivimplicit, euler, sparse)", s->name, m);
                return NULL;
            }
        } else if (is_name(p, "STEADYSTATE")) {
            p->pos++;
            char *m = expect_name(p);
            if (!m) return NULL;
            s->steady = 1;
            if (!strcmp(m, "sparse")) s->method = M_SPARSE;
            else {
                perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s STEADYSTATE %s is not supported (sparse)", s->name, m);
                return NULL;
            }
        }
        return s;
    }
    if (!strcmp(t->text, "if")) {
        p->pos++;
        s->kind = ST_IF;
        if (expect(p, '(') || !(s->e = parse_expr(p)) || expect(p, ')')) return NULL;
        if (!(s->then_ = parse_block(p, owner))) return NULL;
        if (is_name(p, "else")) {
            p->pos++;
            if (is_name(p, "if")) {
                stlist *el = nm_calloc(AR, 1, sizeof *el);
                if (!el) return NULL;
                st *inner = parse_statement(p, el, owner);
                if (!inner || add_st(p, el, inner)) return NULL;
                s->else_ = el;
            } else if (!(s->else_ = parse_block(p, owner))) {
                return NULL;
            }
        }
        return s;
    }
    p->pos++;
    if (is_punct(p, '\'')) {
        p->pos++;
        s->kind = ST_DERIV;
        s->name = t->text;
        if (expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
        return s;
    }
    if (is_punct(p, '=')) {
        p->pos++;
        s->kind = ST_ASSIGN;
        s->name = t->text;
        if (!(s->e = parse_expr(p))) return NULL;
        return s;
    }
    if (is_punct(p, '(')) {
        p->pos--;
        s->kind = ST_CALL;
        if (!(s->e = parse_primary(p))) return NULL;
        return s;
    }
    perr(p, NS_ERR_PARSE, t->line, "expected '=', '(' or \"'\" after '%s', found %s", t->text, describe(cur(p)));
    return NULL;
}

static stlist *parse_block_(parser *p, block *owner);
static stlist *parse_block(parser *p, block *owner) {
    if (++p->depth > MAX_DEPTH) {
        perr(p, NS_ERR_PARSE, cur(p)->line, "nested more than %d deep", MAX_DEPTH);
        return NULL;
    }
    stlist *l = parse_block_(p, owner);
    p->depth--;
    return l;
}
static stlist *parse_block_(parser *p, block *owner) {
    if (expect(p, '{')) return NULL;
    stlist *l = nm_calloc(AR, 1, sizeof *l);
    if (!l) return NULL;
    while (!is_punct(p, '}')) {
        if (cur(p)->kind == T_EOF) {
            perr(p, NS_ERR_PARSE, cur(p)->line, "missing '}'");
            return NULL;
        }
        if (is_punct(p, '{')) { /* a nested plain block */
            stlist *in = parse_block(p, owner);
            if (!in) return NULL;
            st *s = nm_calloc(AR, 1, sizeof *s);
            if (!s) return NULL;
            s->kind = ST_IF;
            s->line = cur(p)->line;
            s->e = ex_new(EX_NUM);
            if (!s->e) return NULL;
            s->e->num = 1;
            s->e->text = "1";
            s->then_ = in;
            if (add_st(p, l, s)) return NULL;
            continue;
        }
        st *s = parse_statement(p, l, owner);
        if (!s) return NULL;
        if (s != (st *)l && add_st(p, l, s)) return NULL;
    }
    p->pos++;
    return l;
}

/* ---- declarations ---- */

static var *find_var(struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_vars; i++)
        if (!strcmp(m->vars[i].name, name)) return &m->vars[i];
    return NULL;
}
static int is_special(const char *n) {
    return !strcmp(n, "v") || !strcmp(n, "t") || !strcmp(n, "dt") || !strcmp(n, "celsius") ||
           !strcmp(n, "area") || !strcmp(n, "diam");
}

static var *add_var(parser *p, const char *name, int cls, double value, int line) {
    struct ns_nmodl *m = p->m;
    var *old = find_var(m, name);
    if (old) {
        /* an ion variable may be declared ASSIGNED (or STATE: cai) as well */
        if (old->ion >= 0) {
            if (cls == V_STATE) old->cls = V_STATE;
            return old;
        }
        perr(p, NS_ERR_PARSE, line, "'%s' declared twice", name);
        return NULL;
    }
    if (m->n_vars == m->cap_vars) {
        int cap = m->cap_vars ? 2 * m->cap_vars : 32;
        var *n = realloc(m->vars, (size_t)cap * sizeof *n);
        if (!n) {
            perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
            return NULL;
        }
        m->vars = n;
        m->cap_vars = cap;
    }
    var *v = &m->vars[m->n_vars++];
    memset(v, 0, sizeof *v);
    v->name = dup(name);
    v->cls = cls;
    v->value = value;
    v->field = v->global = v->ion = -1;
    v->line = line;
    return v;
}

static const struct {
    const char *name;
    int charge;
} KNOWN_IONS[] = {{"na", 1}, {"k", 1}, {"ca", 2}, {"cl", -1}};

static int parse_neuron(parser *p) {
    struct ns_nmodl *m = p->m;
    if (expect(p, '{')) return -1;
    while (!is_punct(p, '}')) {
        tok *t = cur(p);
        if (t->kind != T_NAME) return perr(p, NS_ERR_PARSE, t->line, "NEURON block: unexpected %s", describe(t));
        p->pos++;
        if (!strcmp(t->text, "SUFFIX") || !strcmp(t->text, "POINT_PROCESS") || !strcmp(t->text, "ARTIFICIAL_CELL")) {
            if (!strcmp(t->text, "ARTIFICIAL_CELL"))
                return perr(p, NS_ERR_UNSUPPORTED, t->line, "ARTIFICIAL_CELL is not supported");
            if (m->name) return perr(p, NS_ERR_PARSE, t->line, "a second SUFFIX or POINT_PROCESS");
            char *n = expect_name(p);
            if (!n) return -1;
            m->name = dup(n);
            m->point = !strcmp(t->text, "POINT_PROCESS");
        } else if (!strcmp(t->text, "USEION")) {
            char *ion = expect_name(p);
            if (!ion) return -1;
            if (m->n_ions == 8) return perr(p, NS_ERR_UNSUPPORTED, t->line, "more than 8 ions");
            ion_use *u = &m->ions[m->n_ions];
            u->name = ar_dupn(ion, strlen(ion));
            u->charge = 0;
            for (size_t k = 0; k < sizeof KNOWN_IONS / sizeof *KNOWN_IONS; k++)
                if (!strcmp(KNOWN_IONS[k].name, ion)) u->charge = KNOWN_IONS[k].charge;
            int mode = 0; /* 1 READ, 2 WRITE */
            char *names[16];
            int modes[16], n_names = 0;
            for (;;) {
                if (is_name(p, "READ")) { mode = 1; p->pos++; continue; }
                if (is_name(p, "WRITE")) { mode = 2; p->pos++; continue; }
                if (is_name(p, "VALENCE")) {
                    p->pos++;
                    int neg = 0;
                    if (is_punct(p, '-')) { neg = 1; p->pos++; }
                    if (cur(p)->kind != T_NUM) return perr(p, NS_ERR_PARSE, cur(p)->line, "VALENCE needs a number");
                    u->charge = (int)p->toks[p->pos++].num * (neg ? -1 : 1);
                    continue;
                }
                if (is_punct(p, ',')) { p->pos++; continue; }
                if (mode && cur(p)->kind == T_NAME && n_names < 16) {
                    const char *nm = cur(p)->text;
                    if (!strcmp(nm, "SUFFIX") || !strcmp(nm, "USEION") || !strcmp(nm, "RANGE") || !strcmp(nm, "GLOBAL") ||
                        !strcmp(nm, "NONSPECIFIC_CURRENT") || !strcmp(nm, "POINT_PROCESS") || unsupported_name(nm))
                        break;
                    names[n_names] = p->toks[p->pos].text;
                    modes[n_names++] = mode;
                    p->pos++;
                    continue;
                }
                break;
            }
            if (u->charge == 0) {
                return perr(p, NS_ERR_INVALID_ARGUMENT, t->line,
                            "unknown ion '%s' (known: na, k, ca, cl; give others a VALENCE)", ion);
            }
            size_t il = strlen(ion);
            for (int k = 0; k < n_names; k++) {
                const char *nm = names[k];
                int what = 0;
                if (nm[0] == 'e' && !strcmp(nm + 1, ion)) what = 'e';
                else if (nm[0] == 'i' && !strcmp(nm + 1, ion)) what = 'i';
                else if (!strncmp(nm, ion, il) && !strcmp(nm + il, "i")) what = 'c';
                else if (!strncmp(nm, ion, il) && !strcmp(nm + il, "o")) what = 'o';
                if (!what)
                    return perr(p, NS_ERR_PARSE, t->line, "USEION %s: '%s' is not e%s, i%s, %si or %so", ion, nm, ion,
                                ion, ion, ion);
                unsigned f = 0;
                if (modes[k] == 1)
                    f = what == 'e' ? NS_MECH_ION_READ_E : what == 'i' ? NS_MECH_ION_READ_I
                        : what == 'c' ? NS_MECH_ION_READ_CI : NS_MECH_ION_READ_CO;
                else if (what == 'i') f = NS_MECH_ION_WRITE_I;
                else if (what == 'c') f = NS_MECH_ION_WRITE_CI;
                else if (what == 'o') f = NS_MECH_ION_WRITE_CO;
                else return perr(p, NS_ERR_UNSUPPORTED, t->line, "USEION %s WRITE %s: writing a reversal potential is not supported", ion, nm);
                u->flags |= f;
                var *v = find_var(m, nm);
                if (!v && !(v = add_var(p, nm, modes[k] == 1 ? V_ION_READ : V_ASSIGNED, 0, t->line))) return -1;
                if (modes[k] == 2) v->cls = V_ASSIGNED;
                v->ion = m->n_ions;
                v->ion_what = what;
                if (modes[k] == 2 && what == 'i' && add_name(&m->currents, &m->n_currents, v->name)) return -1;
            }
            m->n_ions++;
        } else if (!strcmp(t->text, "NONSPECIFIC_CURRENT")) {
            for (;;) {
                char *n = expect_name(p);
                if (!n) return -1;
                if (!find_var(m, n) && !add_var(p, n, V_ASSIGNED, 0, t->line)) return -1;
                if (add_name(&m->currents, &m->n_currents, n)) return -1;
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "RANGE") || !strcmp(t->text, "GLOBAL")) {
            int range = !strcmp(t->text, "RANGE");
            for (;;) {
                char *n = expect_name(p);
                if (!n) return -1;
                if (range ? add_name(&m->range, &m->n_range, n) : add_name(&m->globals_decl, &m->n_globals_decl, n))
                    return -1;
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (unsupported_name(t->text)) {
            return perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
        } else if (!strcmp(t->text, "CONDUCTANCE")) {
            p->pos++; /* a hint for NEURON's CVODE; nothing to do */
        } else {
            return perr(p, NS_ERR_PARSE, t->line, "NEURON block: unknown keyword '%s'", t->text);
        }
    }
    p->pos++;
    return 0;
}

/* PARAMETER / ASSIGNED / STATE / CONSTANT: name [= value] [(units)] [<lo,hi>] [FROM a TO b] */
static int parse_decls(parser *p, int cls) {
    if (expect(p, '{')) return -1;
    while (!is_punct(p, '}')) {
        tok *t = cur(p);
        if (t->kind != T_NAME) return perr(p, NS_ERR_PARSE, t->line, "expected a name, found %s", describe(t));
        p->pos++;
        double value = 0;
        int has_value = 0;
        if (is_punct(p, '=')) {
            p->pos++;
            int neg = 0;
            if (is_punct(p, '-')) { neg = 1; p->pos++; }
            if (cur(p)->kind != T_NUM) return perr(p, NS_ERR_PARSE, cur(p)->line, "expected a number after '%s ='", t->text);
            value = p->toks[p->pos++].num * (neg ? -1 : 1);
            has_value = 1;
        }
        if (skip_units(p) || skip_limits(p)) return -1;
        if (is_name(p, "FROM")) { /* STATE x FROM 0 TO 1: bounds are ignored by NEURON's solvers */
            for (int k = 0; k < 2; ++k) {
                if (k == 1 && !is_name(p, "TO")) return perr(p, NS_ERR_PARSE, cur(p)->line, "expected TO, found %s", describe(cur(p)));
                p->pos++;
                if (is_punct(p, '-')) p->pos++;
                if (cur(p)->kind != T_NUM)
                    return perr(p, NS_ERR_PARSE, cur(p)->line, "expected a number after %s, found %s", k ? "TO" : "FROM", describe(cur(p)));
                p->pos++;
            }
        }
        if (is_special(t->text)) {
            if (!strcmp(t->text, "area") || !strcmp(t->text, "diam"))
                return perr(p, NS_ERR_UNSUPPORTED, t->line, "'%s' in a mechanism is not supported", t->text);
            continue; /* v, celsius, dt, t: the loop's */
        }
        if (cls == V_ASSIGNED && find_var(p->m, t->text)) {
            var *v = find_var(p->m, t->text);
            if (v->ion >= 0 || v->cls == V_ASSIGNED) continue;
        }
        if (cls == V_STATE && has_value) return perr(p, NS_ERR_PARSE, t->line, "STATE '%s' with a value", t->text);
        if (!add_var(p, t->text, cls, value, t->line)) return -1;
    }
    p->pos++;
    return 0;
}

/* UNITS: (a) = (b) pairs are ignored; NAME = (faraday) (coulomb) style constants. */
static int parse_units(parser *p) {
    if (expect(p, '{')) return -1;
    while (!is_punct(p, '}')) {
        if (cur(p)->kind == T_EOF) return perr(p, NS_ERR_PARSE, cur(p)->line, "missing '}'");
        if (is_punct(p, '(')) {
            if (skip_units(p)) return -1;
            if (expect(p, '=') || skip_units(p)) return -1;
            continue;
        }
        if (cur(p)->kind == T_NAME) {
            tok *t = &p->toks[p->pos++];
            if (expect(p, '=')) return -1;
            size_t b = cur(p)->start;
            if (skip_units(p)) return -1;
            char what[64] = {0};
            size_t k = 0;
            for (size_t i = b; i < p->toks[p->pos - 1].end && k < 63; i++)
                if (!isspace((unsigned char)p->src[i])) what[k++] = p->src[i];
            b = cur(p)->start;
            if (skip_units(p)) return -1;
            char unit[64] = {0};
            k = 0;
            for (size_t i = b; i < p->toks[p->pos - 1].end && k < 63; i++)
                if (!isspace((unsigned char)p->src[i])) unit[k++] = p->src[i];
            double value;
            /* NEURON 9's nrnunits.lib (2019 SI): faraday, R */
            if (!strcmp(what, "(faraday)") && !strcmp(unit, "(coulomb)")) value = 96485.33212331001;
            else if (!strcmp(what, "(faraday)") && !strcmp(unit, "(kilocoulombs)")) value = 96.48533212331001;
            else if (!strcmp(what, "(k-mole)") && !strcmp(unit, "(joule/degC)")) value = 8.31446261815324;
            else if (!strcmp(what, "(R)") && !strcmp(unit, "(joule/degC)")) value = 8.31446261815324;
            else
                return perr(p, NS_ERR_UNSUPPORTED, t->line, "UNITS constant %s = %s %s is not supported", t->text,
                            what, unit);
            if (!add_var(p, t->text, V_CONST, value, t->line)) return -1;
            continue;
        }
        return perr(p, NS_ERR_PARSE, cur(p)->line, "UNITS block: unexpected %s", describe(cur(p)));
    }
    p->pos++;
    return 0;
}

static int add_block(parser *p, block *b) {
    block **n = realloc(p->m->blocks, (size_t)(p->m->n_blocks + 1) * sizeof *n);
    if (!n) return perr(p, NS_ERR_OUT_OF_MEMORY, b->line, "out of memory");
    p->m->blocks = n;
    n[p->m->n_blocks++] = b;
    return 0;
}

static int parse_callable(parser *p, int kind) {
    block *b = nm_calloc(AR, 1, sizeof *b);
    if (!b) return -1;
    b->kind = kind;
    b->line = cur(p)->line;
    if (!(b->name = expect_name(p))) return -1;
    for (int i = 0; i < p->m->n_blocks; i++)
        if (!strcmp(p->m->blocks[i]->name, b->name))
            return perr(p, NS_ERR_PARSE, b->line, "'%s' defined twice", b->name);
    if (kind != B_DERIVATIVE && kind != B_KINETIC) {
        if (expect(p, '(')) return -1;
        while (!is_punct(p, ')')) {
            char *a = expect_name(p);
            if (!a || add_name(&b->args, &b->n_args, a) || skip_units(p)) return -1;
            if (is_punct(p, ',')) p->pos++;
            else if (!is_punct(p, ')')) return perr(p, NS_ERR_PARSE, cur(p)->line, "expected ',' or ')'");
        }
        p->pos++;
        if (skip_units(p)) return -1;
    }
    if (!(b->body = parse_block(p, b))) return -1;
    return add_block(p, b);
}

static int parse_top(parser *p) {
    struct ns_nmodl *m = p->m;
    while (cur(p)->kind != T_EOF) {
        tok *t = cur(p);
        if (t->kind != T_NAME) return perr(p, NS_ERR_PARSE, t->line, "expected a block keyword, found %s", describe(t));
        p->pos++;
        const char *k = t->text;
        if (!strcmp(k, "NEURON")) {
            if (parse_neuron(p)) return -1;
            p->seen_neuron = 1;
        } else if (!strcmp(k, "UNITS")) {
            if (parse_units(p)) return -1;
        } else if (!strcmp(k, "PARAMETER")) {
            if (parse_decls(p, V_PARAM)) return -1;
        } else if (!strcmp(k, "CONSTANT")) {
            if (parse_decls(p, V_CONST)) return -1;
        } else if (!strcmp(k, "ASSIGNED")) {
            if (parse_decls(p, V_ASSIGNED)) return -1;
        } else if (!strcmp(k, "STATE")) {
            if (parse_decls(p, V_STATE)) return -1;
        } else if (!strcmp(k, "INDEPENDENT")) {
            int depth = 0;
            do {
                if (cur(p)->kind == T_EOF) return perr(p, NS_ERR_PARSE, t->line, "unterminated INDEPENDENT");
                if (is_punct(p, '{')) depth++;
                if (is_punct(p, '}')) depth--;
                p->pos++;
            } while (depth > 0);
        } else if (!strcmp(k, "DEFINE")) {
            char *n = expect_name(p);
            if (!n) return -1;
            if (cur(p)->kind != T_NUM) return perr(p, NS_ERR_PARSE, cur(p)->line, "DEFINE needs a number");
            if (!add_var(p, n, V_CONST, p->toks[p->pos++].num, t->line)) return -1;
        } else if (!strcmp(k, "INITIAL") || !strcmp(k, "BREAKPOINT")) {
            stlist **dst = !strcmp(k, "INITIAL") ? &m->initial : &m->breakpoint;
            if (*dst) return perr(p, NS_ERR_PARSE, t->line, "a second %s block", k);
            if (!(*dst = parse_block(p, NULL))) return -1;
        } else if (!strcmp(k, "DERIVATIVE")) {
            if (parse_callable(p, B_DERIVATIVE)) return -1;
        } else if (!strcmp(k, "KINETIC")) {
            if (parse_callable(p, B_KINETIC)) return -1;
        } else if (!strcmp(k, "PROCEDURE")) {
            if (parse_callable(p, B_PROCEDURE)) return -1;
        } else if (!strcmp(k, "FUNCTION")) {
            if (parse_callable(p, B_FUNCTION)) return -1;
        } else if (!strcmp(k, "NET_RECEIVE")) {
            if (m->net_receive) return perr(p, NS_ERR_PARSE, t->line, "a second NET_RECEIVE");
            if (expect(p, '(')) return -1;
            if (!(m->net_weight = expect_name(p)) || skip_units(p)) return -1;
            if (!is_punct(p, ')'))
                return perr(p, NS_ERR_UNSUPPORTED, t->line,
                            "NET_RECEIVE with more than one argument (per-connection state) is not supported");
            p->pos++;
            if (!(m->net_receive = parse_block(p, NULL))) return -1;
        } else if (unsupported_name(k)) {
            return perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", k);
        } else {
            return perr(p, NS_ERR_PARSE, t->line, "unknown block '%s'", k);
        }
    }
    return 0;
}

/* ---- checks: classes, fields and globals ---- */

static int in_list(char **l, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (!strcmp(l[i], s)) return 1;
    return 0;
}
static block *find_block(struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_blocks; i++)
        if (!strcmp(m->blocks[i]->name, name)) return m->blocks[i];
    return NULL;
}

static int check_ex(parser *p, ex *e, char **locals, int n_locals, int line);
static int builtin_arity(const char *f) {
    static const char *one[] = {"exp", "log", "log10", "sqrt", "fabs", "sin", "cos", "tan", "tanh", "sinh", "cosh",
                                "floor", "ceil", "atan", "asin", "acos", "exprelr", "expm1", "log1p", "erf", NULL};
    static const char *two[] = {"pow", "fmin", "fmax", "atan2", "fmod", "min", "max", NULL};
    for (int i = 0; one[i]; i++)
        if (!strcmp(one[i], f)) return 1;
    for (int i = 0; two[i]; i++)
        if (!strcmp(two[i], f)) return 2;
    return -1;
}
static int check_ex(parser *p, ex *e, char **locals, int n_locals, int line) {
    switch (e->kind) {
    case EX_NUM: return 0;
    case EX_VAR:
        if (in_list(locals, n_locals, e->text) || is_special(e->text) || find_var(p->m, e->text)) return 0;
        if (!strcmp(e->text, "FARADAY")) return 0;
        return perr(p, NS_ERR_INVALID_ARGUMENT, line, "'%s' is not declared", e->text);
    case EX_CALL: {
        block *b = find_block(p->m, e->text);
        int ar = builtin_arity(e->text);
        if (b && (b->kind == B_DERIVATIVE || b->kind == B_KINETIC))
            return perr(p, NS_ERR_PARSE, line, "%s %s called as a function", b->kind == B_KINETIC ? "KINETIC" : "DERIVATIVE",
                        e->text);
        if (!b && ar < 0) {
            if (unsupported_name(e->text)) return perr(p, NS_ERR_UNSUPPORTED, line, "%s is not supported", e->text);
            return perr(p, NS_ERR_INVALID_ARGUMENT, line, "unknown function '%s'", e->text);
        }
        int want = b ? b->n_args : ar;
        if (e->n_args != want)
            return perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s takes %d argument%s, given %d", e->text, want,
                        want == 1 ? "" : "s", e->n_args);
        for (int i = 0; i < e->n_args; i++)
            if (check_ex(p, e->args[i], locals, n_locals, line)) return -1;
        return 0;
    }
    case EX_NEG:
    case EX_NOT: return check_ex(p, e->a, locals, n_locals, line);
    case EX_BIN:
        return check_ex(p, e->a, locals, n_locals, line) || check_ex(p, e->b, locals, n_locals, line) ? -1 : 0;
    }
    return 0;
}

/* scope: the LOCALs of enclosing blocks and the arguments */
static int check_list(parser *p, stlist *l, block *owner, char ***scope, int *n_scope) {
    int base = *n_scope;
    for (int i = 0; i < l->n_locals; i++)
        if (add_name(scope, n_scope, l->locals[i])) return -1;
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        switch (s->kind) {
        case ST_ASSIGN: {
            int fn_ret = owner && owner->kind == B_FUNCTION && !strcmp(owner->name, s->name);
            if (!fn_ret && !in_list(*scope, *n_scope, s->name)) {
                var *v = find_var(p->m, s->name);
                if (!v) {
                    if (is_special(s->name))
                        return perr(p, NS_ERR_UNSUPPORTED, s->line, "assigning '%s' is not supported", s->name);
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not declared", s->name);
                }
                if (v->cls == V_CONST || v->cls == V_ION_READ)
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is read-only here", s->name);
            }
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_DERIV: {
            var *v = find_var(p->m, s->name);
            if (!owner || owner->kind != B_DERIVATIVE)
                return perr(p, NS_ERR_PARSE, s->line, "%s' outside a DERIVATIVE block", s->name);
            if (!v || v->cls != V_STATE) return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not a STATE", s->name);
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_IF:
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            if (check_list(p, s->then_, owner, scope, n_scope)) return -1;
            if (s->else_ && check_list(p, s->else_, owner, scope, n_scope)) return -1;
            break;
        case ST_CALL: {
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_REACTION:
        case ST_CONSERVE:
        case ST_COMPARTMENT: /* lowered before the checks (nm_kinetic_lower) */
            return perr(p, NS_ERR_PARSE, s->line, "a KINETIC statement outside a KINETIC block");
        case ST_SOLVE: {
            block *b = find_block(p->m, s->name);
            if (!b) return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "SOLVE %s: no such block", s->name);
            if (b->kind == B_DERIVATIVE && s->method == M_NONE)
                return perr(p, NS_ERR_PARSE, s->line, "SOLVE %s needs a METHOD", s->name);
            if (b->kind == B_KINETIC && s->method != M_SPARSE)
                return perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s: a KINETIC block needs METHOD sparse", s->name);
            if (b->kind == B_DERIVATIVE && s->method == M_SPARSE)
                return perr(p, NS_ERR_PARSE, s->line, "SOLVE %s: METHOD sparse needs a KINETIC block", s->name);
            {
                const int in_initial = p->in_initial;
                if (s->steady && !in_initial)
                    return perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s STEADYSTATE: only in INITIAL", s->name);
                if (!s->steady && in_initial)
                    return perr(p, NS_ERR_UNSUPPORTED, s->line,
                                "SOLVE %s in INITIAL: only SOLVE ... STEADYSTATE sparse is supported there", s->name);
            }
            if (b->kind == B_FUNCTION || (b->kind == B_PROCEDURE && (s->method != M_NONE || b->n_args)))
                return perr(p, NS_ERR_PARSE, s->line, "SOLVE %s: not a DERIVATIVE block", s->name);
            if (p->m->breakpoint == NULL) return perr(p, NS_ERR_PARSE, s->line, "SOLVE outside BREAKPOINT");
            break;
        }
        }
    }
    *n_scope = base;
    return 0;
}

static int finish(parser *p) {
    struct ns_nmodl *m = p->m;
    if (!p->seen_neuron || !m->name) return perr(p, NS_ERR_PARSE, 1, "no NEURON block with a SUFFIX or POINT_PROCESS");
    if (!m->breakpoint) {
        m->breakpoint = nm_calloc(AR, 1, sizeof *m->breakpoint);
        if (!m->breakpoint) return -1;
    }
    /* SOLVE only in BREAKPOINT, at its top level */
    for (int i = 0; i < m->n_vars; i++) {
        var *v = &m->vars[i];
        if (v->cls == V_PARAM && in_list(m->globals_decl, m->n_globals_decl, v->name)) v->cls = V_GLOBAL;
        /* NEURON: a PARAMETER that is not RANGE is GLOBAL */
        if (v->cls == V_PARAM && !in_list(m->range, m->n_range, v->name)) v->cls = V_GLOBAL;
    }
    for (int i = 0; i < m->n_range; i++) {
        var *v = find_var(m, m->range[i]);
        if (!v) return perr(p, NS_ERR_INVALID_ARGUMENT, 1, "RANGE %s: not declared in PARAMETER, ASSIGNED or STATE",
                            m->range[i]);
    }
    for (int i = 0; i < m->n_globals_decl; i++) {
        var *v = find_var(m, m->globals_decl[i]);
        if (!v) return perr(p, NS_ERR_INVALID_ARGUMENT, 1, "GLOBAL %s: not declared", m->globals_decl[i]);
    }
    /* fields: parameters, assigned (GLOBAL assigned are per instance: they
     * are written before they are read, CoreNEURON does the same), states */
    int nf = 0;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_PARAM) m->vars[i].field = nf++;
    m->n_params = nf;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_ASSIGNED) m->vars[i].field = nf++;
    m->n_assigned = nf - m->n_params;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_STATE) m->vars[i].field = nf++;
    m->n_states = nf - m->n_params - m->n_assigned;
    m->n_fields = nf;
    int ng = 0;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_GLOBAL) m->vars[i].global = ng++;
    int tsize = 0;
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        if (!b->table) continue;
        table_decl *t = b->table;
        for (int k = 0; k < t->n_names; k++) {
            var *v = find_var(m, t->names[k]);
            if (!v || v->field < 0 || v->cls != V_ASSIGNED)
                return perr(p, NS_ERR_INVALID_ARGUMENT, b->line, "TABLE %s in %s: not an ASSIGNED variable", t->names[k],
                            b->name);
        }
        for (int k = 0; k < t->n_depend; k++) {
            var *v = find_var(m, t->depend[k]);
            if (strcmp(t->depend[k], "celsius") && (!v || v->cls != V_GLOBAL))
                return perr(p, NS_ERR_INVALID_ARGUMENT, b->line, "TABLE DEPEND %s in %s: not a GLOBAL", t->depend[k],
                            b->name);
        }
        t->offset = tsize;
        int cols = b->kind == B_FUNCTION ? 1 : t->n_names;
        tsize += 4 + t->n_depend + cols * (t->with + 1);
        b->table->with = t->with;
        /* usetable_<name> is a GLOBAL, 1 by default, as NEURON has it */
        char name[128];
        snprintf(name, sizeof name, "usetable_%s", b->name);
        var *u = add_var(p, name, V_GLOBAL, 1, b->line);
        if (!u) return -1;
        u->global = ng++;
    }
    m->n_globals = ng;
    m->table_size = tsize;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->kind == B_KINETIC && (p->status = nm_kinetic_lower(m, m->blocks[i]))) return -1;
    /* names and calls */
    char **scope = NULL;
    int n_scope = 0;
    p->in_initial = 1;
    if (m->initial && check_list(p, m->initial, NULL, &scope, &n_scope)) goto fail;
    p->in_initial = 0;
    if (check_list(p, m->breakpoint, NULL, &scope, &n_scope)) goto fail;
    for (int i = 0; i < m->breakpoint->n; i++) {
        st *s = m->breakpoint->s[i];
        if (s->kind == ST_SOLVE && i != 0) {
            /* NEURON runs SOLVE in nrn_state wherever it stands; we take it
             * from the top only (where every real file has it). */
            for (int k = 0; k < i; k++)
                if (m->breakpoint->s[k]->kind != ST_SOLVE) {
                    perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE after other statements in BREAKPOINT is not supported");
                    goto fail;
                }
        }
    }
    if (m->net_receive) {
        if (!m->point) {
            perr(p, NS_ERR_UNSUPPORTED, 1, "NET_RECEIVE in a density mechanism (SUFFIX %s)", m->name);
            goto fail;
        }
        if (add_name(&scope, &n_scope, m->net_weight)) goto fail;
        if (check_list(p, m->net_receive, NULL, &scope, &n_scope)) goto fail;
        n_scope = 0;
    }
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        n_scope = 0;
        for (int k = 0; k < b->n_args; k++)
            if (add_name(&scope, &n_scope, b->args[k])) goto fail;
        if (check_list(p, b->body, b, &scope, &n_scope)) goto fail;
    }
    return 0; /* scope lives in the arena */
fail:
    return -1;
}

ns_status ns_nmodl_parse_string(const char *text, const char *name, ns_nmodl_t **out) {
    if (!text || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_parse_string: NULL argument");
    *out = NULL;
    parser p = {0};
    p.src = text;
    p.file = name ? name : "<string>";
    p.m = calloc(1, sizeof *p.m);
    if (!p.m) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    p.m->file = dup(p.file);
    AR = &p.m->arena;
    if (lex(&p) == 0 && parse_top(&p) == 0) finish(&p);
    /* the tokens' texts are kept (the AST points at them); the array goes */
    free(p.toks);
    AR = NULL;
    if (p.status) {
        /* the AST is leaked on error paths only through this small arena-less
         * design; keep it simple: the structure is freed shallowly */
        ns_nmodl_destroy(p.m);
        return p.status;
    }
    *out = p.m;
    return NS_OK;
}

ns_status ns_nmodl_parse_file(const char *path, ns_nmodl_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_parse_file: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > ((size_t)64 << 20)) { free(buf); fclose(f); return ns_fail(NS_ERR_SIZE, "%s: larger than 64 MiB", path); }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); fclose(f); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return ns_fail(NS_ERR_IO, "%s: read error", path); }
    buf[n] = 0;
    if (memchr(buf, 0, n)) { free(buf); return ns_fail(NS_ERR_PARSE, "%s: binary file (NUL byte)", path); }
    const char *base = strrchr(path, '/');
    ns_status s = ns_nmodl_parse_string(buf, base ? base + 1 : path, out);
    free(buf);
    return s;
}

const char *ns_nmodl_name(const ns_nmodl_t *m) { return m ? m->name : NULL; }

void ns_nmodl_destroy(ns_nmodl_t *m) {
    if (!m) return;
    /* The AST nodes are small and point into token texts; they are owned by
     * the module and freed here shallowly (names of vars and the lists). */
    for (int i = 0; i < m->n_vars; i++) free(m->vars[i].name);
    free(m->vars);
    nm_arena_free(&m->arena); /* the AST, the token texts and the name lists */
    free(m->name);
    free(m->file);
    free(m->blocks);
    free(m);
}

void ns_nmodl_free(void *ptr) { free(ptr); }
