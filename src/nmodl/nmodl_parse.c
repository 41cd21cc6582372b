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

/* A token's line: the line in its file, plus the file's index (the file, its
 * INCLUDEs) times 2^LINE_BITS; a file of at most 64 MiB has fewer lines. */
#define LINE_BITS 27
#define NM_MAX_FILES 8

enum { T_EOF, T_NAME, T_NUM, T_PUNCT, T_STR, T_RETURN /* VERBATIM return 0; ENDVERBATIM */,
       T_VERBATIM /* VERBATIM C ENDVERBATIM: text is the C */ };

typedef struct tok {
    int kind;
    int punct;     /* T_PUNCT: one character or 'l' (<=), 'g' (>=), 'e' (==), 'n' (!=), '&', '|' */
    int line;
    size_t start, end; /* in the source text src */
    const char *src;
    char *text;    /* T_NAME, T_NUM, T_STR (with its quotes) */
    double num;
} tok;

typedef struct parser {
    const char *src;
    const char *file;
    const char *dir;   /* the .mod file's folder (INCLUDE); NULL: parsed from a string */
    const char *files[NM_MAX_FILES]; /* the file and those it INCLUDEs: a token's line says which */
    int n_files;
    tok *toks;
    int n, cap, pos;
    ns_status status;
    struct ns_nmodl *m;
    int in_initial; /* check_list is in INITIAL (where SOLVE ... STEADYSTATE goes) */
    int ev_ctx;     /* check_list is in this block for the event calls (NM_EV_*) */
    int net_depth;  /* parse_block's depth of the NET_RECEIVE block (its INITIAL), 0: none */
    int ev_line;    /* the line of the first event call */
    int depth; /* nesting of expressions and blocks: bounded, so that no input overflows the stack */
    int *scope_size; /* check_list's scope: per name 0 (a scalar), the size of an array, -1 (FROM's integer) */
    int cap_scope_size;
    int threadsafe; /* the NEURON block says THREADSAFE */
    int in_hook;    /* check_list is in a BEFORE/AFTER block, CONSTRUCTOR or DESTRUCTOR */
    const stlist *vbody; /* check_list's block: names its VERBATIM C declares are C's (nm_verbatim_declares) */
} parser;

#define MAX_DEPTH 600 /* three per parenthesis: parse_expr, parse_unary, parse_power */
#define MAX_SLOTS 1000000 /* fields, and GLOBALs, of a mechanism */
#define MAX_TABLE 100000000 /* values of a mechanism's TABLEs (800 MB) */
#define MAX_TREE 500 /* operations deep: real files stay under 50, and every pass over a tree recurses (a 1,800-deep chain overflowed the fuzzer's stack) */

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
    const int f = line >> LINE_BITS;
    p->status = ns_fail(status, "%s:%d: %s", f < p->n_files ? p->files[f] : p->file, line & ((1 << LINE_BITS) - 1), msg);
    return -1;
}

/* The first construct that keeps the mechanism on the CPU loop (ns_mech_desc.cuda_why_not) */
static void cpu_only(parser *p, int line, const char *what) {
    if (p->m->gpu_why[0]) return;
    const int f = line >> LINE_BITS;
    snprintf(p->m->gpu_why, sizeof p->m->gpu_why, "%s:%d: %s", f < p->n_files ? p->files[f] : p->file,
             line & ((1 << LINE_BITS) - 1), what);
}

static const char *const UNSUPPORTED[] = {
    "PARTIAL",
    "DISCRETE", "LONGITUDINAL_DIFFUSION", "EXTERNAL",
    "LAG", "SENS", "MATCH", "TERMINAL", "SWEEP", "NONSPECIFIC_CONDUCTANCE",
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

/* A line ends at LF, CRLF or a CR alone (old Mac files), as nocmodl reads them. */
static int is_eol(char c) { return c == '\n' || c == '\r'; }
/* the length of the line end at s (0: none) */
static size_t eol_len(const char *s) { return s[0] == '\r' && s[1] == '\n' ? 2 : is_eol(s[0]) ? 1 : 0; }
static int count_lines(const char *s, size_t n) {
    int k = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= n || s[i + 1] != '\n'))) k++;
    return k;
}

/* What a VERBATIM ... ENDVERBATIM block holds: 0 blanks only, 1 `return 0;`
 * and blanks, -1 other C code. */
static int verbatim_kind(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i == n) return 0;
    if (n - i < 6 || strncmp(s + i, "return", 6)) return -1;
    i += 6;
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i == n || s[i] != '0') return -1;
    i++;
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i == n || s[i] != ';') return -1;
    i++;
    while (i < n && isspace((unsigned char)s[i])) i++;
    return i == n ? 1 : -1;
}

static int read_text(const char *path, char **out, ns_status *status);

/* INCLUDE "file" at s (after the keyword): the file, relative to the .mod
 * file's folder, lexed in place (nocmodl also searches the working folder
 * and $MODL_INCLUDE, which a library does not read). */
static int lex(parser *p, const char *s, int file);
static int lex_include(parser *p, const char *s, size_t *i, int line) {
    while (s[*i] == ' ' || s[*i] == '\t') (*i)++;
    if (s[*i] != '"') return perr(p, NS_ERR_PARSE, line, "INCLUDE needs a file name in quotes");
    size_t b = ++*i;
    while (s[*i] && s[*i] != '"' && !is_eol(s[*i])) (*i)++;
    if (s[*i] != '"') return perr(p, NS_ERR_PARSE, line, "INCLUDE: a file name without its closing '\"'");
    char *name = ar_dupn(s + b, *i - b);
    (*i)++;
    if (!name) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    if (!p->dir) return perr(p, NS_ERR_UNSUPPORTED, line, "INCLUDE \"%s\" in text without a file (parse the file)", name);
    if (p->n_files == NM_MAX_FILES)
        return perr(p, NS_ERR_UNSUPPORTED, line, "INCLUDE \"%s\": more than %d files", name, NM_MAX_FILES - 1);
    size_t n = strlen(p->dir) + strlen(name) + 2;
    char *path = nm_calloc(AR, n, 1);
    if (!path) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    snprintf(path, n, "%s%s%s", name[0] == '/' ? "" : p->dir, name[0] == '/' || !p->dir[0] ? "" : "/", name);
    char *text = NULL;
    ns_status rs = NS_OK;
    if (read_text(path, &text, &rs)) return perr(p, rs, line, "INCLUDE \"%s\": %s", name, ns_last_error());
    char *kept = ar_dupn(text, strlen(text)); /* the tokens point into it */
    free(text);
    if (!kept) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    const char *slash = strrchr(name, '/');
    p->files[p->n_files] = slash ? slash + 1 : name;
    return lex(p, kept, p->n_files++);
}

static int lex(parser *p, const char *s, int file) {
    size_t i = 0;
    int line = (file << LINE_BITS) + 1;
    while (s[i]) {
        char c = s[i];
        if (is_eol(c)) { line++; i += eol_len(s + i); continue; }
        if (isspace((unsigned char)c)) { i++; continue; }
        if (c == ':' || c == '?') { /* comment to the end of the line */
            while (s[i] && !is_eol(s[i])) i++;
            continue;
        }
        if (c == '"') { /* a string: printf's format, INCLUDE's file */
            size_t b = i++;
            while (s[i] && s[i] != '"' && !is_eol(s[i])) i += s[i] == '\\' && s[i + 1] && !is_eol(s[i + 1]) ? 2 : 1;
            if (s[i] != '"') return perr(p, NS_ERR_PARSE, line, "a string without its closing '\"'");
            i++;
            tok t = {T_STR, 0, line, b, i, s, ar_dupn(s + b, i - b), 0};
            if (!t.text || push(p, t)) return -1;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            size_t b = i;
            while (isalnum((unsigned char)s[i]) || s[i] == '_') i++;
            size_t len = i - b;
            if (len == 5 && !strncmp(s + b, "TITLE", 5)) {
                while (s[i] && !is_eol(s[i])) i++;
                continue;
            }
            if (len == 7 && !strncmp(s + b, "COMMENT", 7)) {
                const char *e = strstr(s + i, "ENDCOMMENT");
                if (!e) return perr(p, NS_ERR_PARSE, line, "COMMENT without ENDCOMMENT");
                line += count_lines(s + i, (size_t)(e - (s + i)));
                i = (size_t)(e - s) + 10;
                continue;
            }
            if (len == 7 && !strncmp(s + b, "INCLUDE", 7)) {
                if (lex_include(p, s, &i, line)) return -1;
                continue;
            }
            if ((len == 8 && (!strncmp(s + b, "UNITSOFF", 8))) || (len == 7 && !strncmp(s + b, "UNITSON", 7)))
                continue;
            if (len == 10 && !strncmp(s + b, "THREADSAFE", 10)) {
                p->threadsafe = 1;
                continue;
            }
            if (len == 8 && !strncmp(s + b, "VERBATIM", 8)) {
                /* empty: nothing; only `return 0;` (ST_RETURN), what most real files' blocks
                 * hold; other C: T_VERBATIM, compiled as written (nmodl_verbatim.c) */
                const char *e = strstr(s + i, "ENDVERBATIM");
                if (!e) return perr(p, NS_ERR_PARSE, line, "VERBATIM without ENDVERBATIM");
                const size_t n = (size_t)(e - (s + i));
                const int kind = verbatim_kind(s + i, n);
                if (kind) {
                    tok t = {kind == 1 ? T_RETURN : T_VERBATIM, 0, line, b, i, s, kind == 1 ? NULL : ar_dupn(s + i, n), 0};
                    if ((kind < 0 && !t.text) || push(p, t)) return -1;
                }
                line += count_lines(s + i, n);
                i = (size_t)(e - s) + 11;
                continue;
            }
            tok t = {T_NAME, 0, line, b, i, s, ar_dupn(s + b, len), 0};
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
            tok t = {T_NUM, 0, line, b, i, s, ar_dupn(s + b, i - b), 0};
            if (!t.text) return -1;
            t.num = strtod(t.text, NULL);
            if (!isfinite(t.num))
                return perr(p, NS_ERR_PARSE, line, "the number %.40s is out of the range of a double", t.text);
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
        } else if (strchr("{}()[]=,'+-*/^<>!~", c)) {
            i++;
        } else {
            return perr(p, NS_ERR_PARSE, line, "unexpected character '%c'", c);
        }
        if (push(p, (tok){T_PUNCT, punct, line, b, i, s, NULL, 0})) return -1;
    }
    return file ? 0 : push(p, (tok){T_EOF, 0, line, i, i, s, NULL, 0});
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
    if (t->kind == T_RETURN) return "VERBATIM return 0; ENDVERBATIM";
    if (t->kind == T_VERBATIM) return "a VERBATIM block";
    if (t->kind == T_STR) return "a string";
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
        /* `0.001 (mV)`: a units annotation, which nocmodl checks and drops (no factor) */
        if (skip_units(p)) return NULL;
        return e;
    }
    if (t->kind == T_STR) {
        p->pos++;
        ex *e = ex_new(EX_STR);
        if (e) e->text = t->text;
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
        if (!e) return NULL;
        e->text = t->text;
        if (is_punct(p, '[')) { /* an array's element */
            p->pos++;
            if (!(e->a = parse_expr(p)) || expect(p, ']')) return NULL;
            e->depth = 1 + e->a->depth;
        }
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
static int in_list(char **l, int n, const char *s);
static int add_name(char ***list, int *n, char *name) {
    char **nl = nm_realloc(AR, *list, (size_t)(*n + 1) * sizeof *nl);
    if (!nl) return -1;
    *list = nl;
    nl[(*n)++] = name;
    return 0;
}

static var *find_var(struct ns_nmodl *m, const char *name);

/* An array's size after its name, `[n]` (0 where there is none). */
static int parse_dim(parser *p, int *size) {
    *size = 0;
    if (!is_punct(p, '[')) return 0;
    p->pos++;
    double n = cur(p)->num;
    if (cur(p)->kind == T_NAME) { /* a DEFINE'd size */
        var *d = find_var(p->m, cur(p)->text);
        n = d && d->cls == V_CONST ? d->value : 0;
    } else if (cur(p)->kind != T_NUM) {
        n = 0;
    }
    if (!(n >= 1 && n <= 1e6) || n != (int)n)
        return perr(p, NS_ERR_PARSE, cur(p)->line, "an array size must be an integer in [1, 1000000], found %s",
                    describe(cur(p)));
    p->pos++;
    *size = (int)n;
    return expect(p, ']');
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
    t->line = line;
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
        ex *index = NULL;
        if (is_punct(p, '[')) { /* an array state's element (nm_kinetic_lower: a constant after unrolling FROM) */
            p->pos++;
            if (!(index = parse_expr(p)) || expect(p, ']')) return -1;
        }
        rterm *r = nm_realloc(AR, *out, (size_t)(*n + 1) * sizeof *r);
        if (!r) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
        *out = r;
        r[*n].name = name;
        r[*n].num = num;
        r[*n].index = index;
        r[*n].elem = 0;
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
    if (s->react == '>' && is_punct(p, '(')) { /* ~ x -> (k): x flows out at k x (nocmodl's flux, a '->' to nothing) */
        if (s->n_lhs != 1 || s->lhs[0].num != 1)
            return perr(p, NS_ERR_PARSE, s->line, "'~ x -> (rate)' takes one state on its left");
        if (expect(p, '(') || !(s->e = parse_expr(p))) return -1;
        return expect(p, ')');
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
    if (owner && owner->alg && is_punct(p, '~')) { /* LINEAR / NONLINEAR: ~ e = e2 */
        p->pos++;
        if (is_punct(p, '+')) {
            perr(p, NS_ERR_UNSUPPORTED, t->line, "'~+' (terms added to the previous equation) is not supported");
            return NULL;
        }
        s->kind = ST_EQUATION;
        if (!(s->e = parse_expr(p)) || expect(p, '=') || !(s->e2 = parse_expr(p))) return NULL;
        return s;
    }
    if (in_kinetic && (is_name(p, "CONSERVE") || is_name(p, "COMPARTMENT"))) {
        p->pos++;
        if (!strcmp(t->text, "CONSERVE")) {
            s->kind = ST_CONSERVE;
            if (parse_rterms(p, &s->lhs, &s->n_lhs) || expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
            return s;
        }
        s->kind = ST_COMPARTMENT;
        if (!(s->e = parse_expr(p))) return NULL;
        if (is_punct(p, ',')) { /* COMPARTMENT i, size(i) {arrays}: element i's size */
            p->pos++;
            if (s->e->kind != EX_VAR || s->e->a) {
                perr(p, NS_ERR_PARSE, s->line, "COMPARTMENT index, size {...}: the index must be a name");
                return NULL;
            }
            s->name = s->e->text;
            if (!(s->e = parse_expr(p))) return NULL;
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
    if (t->kind == T_RETURN) {
        p->pos++;
        s->kind = ST_RETURN;
        return s;
    }
    /* nocmodl's thread-safety markers: MUTEXLOCK/MUTEXUNLOCK around a block,
     * PROTECT before an assignment (a mutex around it in NEURON). An instance
     * is one thread's here, and a module-level LOCAL a field per instance: no lock */
    if (is_name(p, "MUTEXLOCK") || is_name(p, "MUTEXUNLOCK")) {
        p->pos++;
        return (st *)l;
    }
    if (is_name(p, "PROTECT")) {
        p->pos++;
        st *a = parse_statement(p, l, owner);
        if (a && a->kind != ST_ASSIGN) {
            perr(p, NS_ERR_PARSE, t->line, "PROTECT must be followed by an assignment");
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
    if (!strcmp(t->text, "WATCH")) { /* WATCH (a > b) flag [, (c < d) flag ...]: calls in a plain block */
        p->pos++;
        s->kind = ST_IF;
        if (!(s->e = ex_new(EX_NUM)) || !(s->then_ = nm_calloc(AR, 1, sizeof *s->then_))) return NULL;
        s->e->num = 1;
        s->e->text = "1";
        for (;;) {
            st *c = nm_calloc(AR, 1, sizeof *c);
            ex *e = ex_new(EX_CALL);
            ex **args = nm_calloc(AR, 2, sizeof *args);
            if (!c || !e || !args) return NULL;
            c->kind = ST_CALL;
            c->line = t->line;
            c->e = e;
            e->text = t->text;
            e->op = NM_WATCH_OP;
            e->args = args;
            e->n_args = 2;
            if (expect(p, '(') || !(args[0] = parse_expr(p)) || expect(p, ')') || !(args[1] = parse_expr(p)))
                return NULL;
            ex **w = nm_realloc(AR, p->m->watch_cond, (size_t)(p->m->n_watch + 1) * sizeof *w);
            if (!w) return NULL;
            p->m->watch_cond = w;
            e->num = p->m->n_watch;
            w[p->m->n_watch++] = args[0];
            if (add_st(p, s->then_, c)) return NULL;
            if (!is_punct(p, ',')) break;
            p->pos++;
        }
        return s;
    }
    if (!strcmp(t->text, "state_discontinuity")) { /* NEURON 9: state_discontinuity(x, e) is x = e */
        p->pos++;
        s->kind = ST_ASSIGN;
        if (expect(p, '(') || !(s->name = expect_name(p))) return NULL;
        if (is_punct(p, '[')) {
            p->pos++;
            if (!(s->index = parse_expr(p)) || expect(p, ']')) return NULL;
        }
        if (expect(p, ',') || !(s->e = parse_expr(p)) || expect(p, ')')) return NULL;
        return s;
    }
    if (!strcmp(t->text, "FOR_NETCONS")) { /* FOR_NETCONS (a, b, ...) { body } */
        p->pos++;
        s->kind = ST_CALL;
        if (!(s->e = ex_new(EX_CALL)) || expect(p, '(')) return NULL;
        s->e->text = t->text;
        s->e->op = NM_NETCONS_OP;
        for (;;) {
            ex *a = ex_new(EX_VAR);
            ex **args = nm_realloc(AR, s->e->args, (size_t)(s->e->n_args + 1) * sizeof *args);
            if (!a || !args || !(a->text = expect_name(p)) || skip_units(p)) return NULL;
            s->e->args = args;
            args[s->e->n_args++] = a;
            if (!is_punct(p, ',')) break;
            p->pos++;
        }
        if (expect(p, ')') || !(s->then_ = parse_block(p, owner))) return NULL;
        return s;
    }
    if (!strcmp(t->text, "LOCAL")) {
        p->pos++;
        for (;;) {
            char *n = expect_name(p);
            int size = 0;
            if (!n || parse_dim(p, &size)) return NULL;
            int *ns = nm_realloc(AR, l->local_size, (size_t)(l->n_locals + 1) * sizeof *ns);
            if (!ns) return NULL;
            l->local_size = ns;
            ns[l->n_locals] = size;
            if (add_name(&l->locals, &l->n_locals, n) || skip_units(p)) return NULL;
            if (is_punct(p, ',')) { p->pos++; continue; }
            break;
        }
        return (st *)l; /* marker: nothing to add (s stays in the arena) */
    }
    if (!strcmp(t->text, "WHILE") || !strcmp(t->text, "while")) {
        p->pos++;
        s->kind = ST_WHILE;
        if (expect(p, '(') || !(s->e = parse_expr(p)) || expect(p, ')')) return NULL;
        if (!(s->then_ = parse_block(p, owner))) return NULL;
        return s;
    }
    if (!strcmp(t->text, "FROM")) { /* FROM i = a TO b [BY c] { }: i an integer, the bounds included */
        p->pos++;
        s->kind = ST_FROM;
        if (!(s->name = expect_name(p)) || expect(p, '=') || !(s->e = parse_expr(p))) return NULL;
        if (!is_name(p, "TO")) {
            perr(p, NS_ERR_PARSE, cur(p)->line, "FROM %s: expected TO, found %s", s->name, describe(cur(p)));
            return NULL;
        }
        p->pos++;
        if (!(s->to = parse_expr(p))) return NULL;
        if (is_name(p, "BY")) {
            p->pos++;
            if (!(s->by = parse_expr(p))) return NULL;
        }
        if (!(s->then_ = parse_block(p, owner))) return NULL;
        return s;
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
            else if (!strcmp(m, "runge")) s->method = M_RUNGE;
            else if (!strcmp(m, "after_cvode")) s->method = M_NONE; /* a PROCEDURE, run in state() as nocmodl's */
            else {
                perr(p, NS_ERR_UNSUPPORTED, s->line,
                     "SOLVE %s METHOD %s is not supported (cnexp, derivimplicit, euler, runge, sparse)", s->name, m);
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
    if (is_punct(p, '[')) { /* an array's element: x[i] = e */
        p->pos++;
        if (!(s->index = parse_expr(p)) || expect(p, ']')) return NULL;
        if (!is_punct(p, '=')) {
            perr(p, NS_ERR_PARSE, cur(p)->line, "expected '=' after '%s[...]', found %s", t->text, describe(cur(p)));
            return NULL;
        }
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
        if (p->net_depth && p->depth == p->net_depth && is_name(p, "INITIAL")) { /* NET_RECEIVE's own */
            const int line = cur(p)->line;
            if (p->m->net_initial) {
                perr(p, NS_ERR_PARSE, line, "a second INITIAL in NET_RECEIVE");
                return NULL;
            }
            p->pos++;
            const int depth = p->net_depth;
            p->net_depth = -1; /* no INITIAL inside it */
            p->m->net_initial = parse_block(p, owner);
            p->net_depth = depth;
            if (!p->m->net_initial) return NULL;
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
        if (old->implicit) { /* a NONSPECIFIC/ELECTRODE_CURRENT name, declared once anywhere (nocmodl) */
            old->implicit = 0;
            old->cls = cls;
            old->value = value;
            old->line = line;
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
    v->field = v->global = v->ion = v->pointer = -1;
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
            /* a second one replaces the first, as in nocmodl (MyExp2Sid.mod names two POINT_PROCESSes) */
            char *n = expect_name(p);
            if (!n) return -1;
            free(m->name);
            m->name = dup(n);
            m->artificial = !strcmp(t->text, "ARTIFICIAL_CELL"); /* a point process without v (nmodl_events.c) */
            m->point = m->artificial || !strcmp(t->text, "POINT_PROCESS");
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
                if (is_name(p, "VALENCE") || is_name(p, "CHARGE")) { /* nocmodl: CHARGE is VALENCE */
                    p->pos++;
                    int neg = 0;
                    if (is_punct(p, '-')) { neg = 1; p->pos++; }
                    if (cur(p)->kind != T_NUM) return perr(p, NS_ERR_PARSE, cur(p)->line, "%s needs a number", p->toks[p->pos - 1 - neg].text);
                    u->charge = (int)p->toks[p->pos++].num * (neg ? -1 : 1);
                    continue;
                }
                if (is_punct(p, ',')) { p->pos++; continue; }
                if (mode && cur(p)->kind == T_NAME && n_names < 16) {
                    const char *nm = cur(p)->text;
                    if (!strcmp(nm, "SUFFIX") || !strcmp(nm, "USEION") || !strcmp(nm, "RANGE") || !strcmp(nm, "GLOBAL") ||
                        !strcmp(nm, "NONSPECIFIC_CURRENT") || !strcmp(nm, "POINT_PROCESS") ||
                        !strcmp(nm, "ELECTRODE_CURRENT") || !strcmp(nm, "REPRESENTS") || unsupported_name(nm))
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
                else f = NS_MECH_ION_WRITE_E;
                u->flags |= f;
                var *v = find_var(m, nm);
                if (!v && !(v = add_var(p, nm, modes[k] == 1 ? V_ION_READ : V_ASSIGNED, 0, t->line))) return -1;
                /* declared before the NEURON block (PARAMETER { ek (mV) }, Migliore's files): the ion's
                 * value all the same, as nocmodl reads it (the declaration gives only units) */
                if (modes[k] == 1 && v->ion < 0 && (v->cls == V_PARAM || v->cls == V_ASSIGNED)) v->cls = V_ION_READ;
                if (modes[k] == 2) v->cls = V_ASSIGNED;
                v->ion = m->n_ions;
                v->ion_what = what;
                if (modes[k] == 2 && what == 'i' && add_name(&m->currents, &m->n_currents, v->name)) return -1;
            }
            m->n_ions++;
        } else if (!strcmp(t->text, "NONSPECIFIC_CURRENT") || !strcmp(t->text, "ELECTRODE_CURRENT")) {
            /* ELECTRODE_CURRENT: a current injected into the cell (nocmodl's
             * electrode_current: the node's rhs gets +I and d -dI/dv) */
            if (t->text[0] == 'E') m->electrode = 1;
            for (;;) {
                char *n = expect_name(p);
                if (!n) return -1;
                var *v = find_var(m, n);
                if (!v) {
                    if (!(v = add_var(p, n, V_ASSIGNED, 0, t->line))) return -1;
                    v->implicit = 1;
                }
                if (add_name(&m->currents, &m->n_currents, n)) return -1;
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "RANGE") || !strcmp(t->text, "GLOBAL")) {
            int range = !strcmp(t->text, "RANGE");
            for (;;) {
                int line = cur(p)->line;
                char *n = expect_name(p);
                if (!n) return -1;
                if (!range) {
                    int *gl = nm_realloc(AR, m->globals_line, (size_t)(m->n_globals_decl + 1) * sizeof *gl);
                    if (!gl) return -1;
                    m->globals_line = gl;
                    gl[m->n_globals_decl] = line;
                }
                if (range ? add_name(&m->range, &m->n_range, n) : add_name(&m->globals_decl, &m->n_globals_decl, n))
                    return -1;
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "RANDOM")) { /* NEURON 9: a Random123 stream per instance */
            for (;;) {
                int line = cur(p)->line;
                char *n = expect_name(p);
                if (!n) return -1;
                int *rl = nm_realloc(AR, m->randoms_line, (size_t)(m->n_randoms + 1) * sizeof *rl);
                if (!rl) return -1;
                m->randoms_line = rl;
                rl[m->n_randoms] = line;
                if (add_name(&m->randoms, &m->n_randoms, n)) return -1;
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "POINTER") || !strcmp(t->text, "BBCOREPOINTER")) {
            /* POINTER: a variable read and written through ppack.pointer (connected by the simulation);
             * BBCOREPOINTER: CoreNEURON's opaque handle, which only VERBATIM C uses: an ASSIGNED field */
            const int bbcore = t->text[0] == 'B';
            for (;;) {
                int line = cur(p)->line;
                char *n = expect_name(p);
                if (!n) return -1;
                if (!bbcore) {
                    int *pl = nm_realloc(AR, m->pointers_line, (size_t)(m->n_pointers + 1) * sizeof *pl);
                    if (!pl) return -1;
                    m->pointers_line = pl;
                    pl[m->n_pointers] = line;
                    if (add_name(&m->pointers, &m->n_pointers, n)) return -1;
                }
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (unsupported_name(t->text)) {
            return perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
        } else if (!strcmp(t->text, "CONDUCTANCE")) {
            p->pos++; /* a hint for NEURON's CVODE; nothing to do */
        } else if (!strcmp(t->text, "REPRESENTS")) {
            /* an ontology tag, `REPRESENTS NCIT:C17145` (the rest of the line
             * after ':' is a comment): an annotation, as nocmodl 9 ignores it */
            if (!expect_name(p)) return -1;
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
        double value = 0, start = 0;
        int has_value = 0, size = 0;
        if (parse_dim(p, &size)) return -1;
        if (size && cls == V_CONST)
            return perr(p, NS_ERR_UNSUPPORTED, t->line, "CONSTANT arrays are not supported ('%s')", t->text);
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
        if (cls == V_STATE && is_name(p, "START")) { /* STATE x START 15.7: x's value before INITIAL (nocmodl's x0) */
            p->pos++;
            int neg = 0;
            if (is_punct(p, '-')) { neg = 1; p->pos++; }
            if (cur(p)->kind != T_NUM) return perr(p, NS_ERR_PARSE, cur(p)->line, "expected a number after START");
            start = p->toks[p->pos++].num * (neg ? -1 : 1);
            if (skip_units(p)) return -1;
        }
        if (is_special(t->text)) continue; /* v, celsius, dt, t, area, diam: the loop's */
        if (cls == V_ASSIGNED && find_var(p->m, t->text)) {
            var *v = find_var(p->m, t->text);
            if (v->ion >= 0 || v->cls == V_ASSIGNED) {
                v->implicit = 0;
                continue;
            }
        }
        if (cls == V_STATE && has_value) return perr(p, NS_ERR_PARSE, t->line, "STATE '%s' with a value", t->text);
        var *v = add_var(p, t->text, cls, cls == V_STATE ? start : value, t->line);
        if (!v) return -1;
        v->size = size;
    }
    p->pos++;
    return 0;
}

/* The text inside a units annotation "(...)" at the current token (without
 * the parentheses), stepped over; NULL (and an error) where there is none. */
static char *units_text(parser *p) {
    if (!is_punct(p, '(')) {
        perr(p, NS_ERR_PARSE, cur(p)->line, "expected units in parentheses, found %s", describe(cur(p)));
        return NULL;
    }
    const tok *open = cur(p);
    if (skip_units(p)) return NULL;
    const tok *close = &p->toks[p->pos - 1];
    if (close->src != open->src) { /* an INCLUDE inside the parentheses */
        perr(p, NS_ERR_PARSE, open->line, "units cut by an INCLUDE");
        return NULL;
    }
    return ar_dupn(open->src + open->end, close->start - open->end);
}

/* UNITS: `(a) = (b)` defines the name a for the constants that follow (the
 * expressions are not converted: NEURON's files are written in consistent
 * units); named constants `NAME = number (units)` (the number), `NAME = (u1)
 * (u2)` and `NAME = (u1) -> (u2)` (u1 in units of u2, from the units
 * database of nmodl_units.c, as nocmodl computes them). */
static int parse_units(parser *p) {
    const char **alias = NULL;
    int n_alias = 0;
    if (expect(p, '{')) return -1;
    while (!is_punct(p, '}')) {
        if (cur(p)->kind == T_EOF) return perr(p, NS_ERR_PARSE, cur(p)->line, "missing '}'");
        if (is_punct(p, '(')) { /* (a) = (b): a defined as b, for the constants below */
            char *a = units_text(p), *b;
            if (!a || expect(p, '=') || !(b = units_text(p))) return -1;
            const char **na = nm_realloc(AR, alias, (size_t)(n_alias + 1) * 2 * sizeof *na);
            if (!na) return perr(p, NS_ERR_OUT_OF_MEMORY, cur(p)->line, "out of memory");
            alias = na;
            alias[2 * n_alias] = a;
            alias[2 * n_alias++ + 1] = b;
            continue;
        }
        if (cur(p)->kind == T_NAME) {
            tok *t = &p->toks[p->pos++];
            if (expect(p, '=')) return -1;
            double value;
            if (cur(p)->kind == T_NUM || is_punct(p, '-')) {
                int neg = is_punct(p, '-');
                if (neg) p->pos++;
                if (cur(p)->kind != T_NUM)
                    return perr(p, NS_ERR_PARSE, cur(p)->line, "UNITS %s: expected a number, found %s", t->text,
                                describe(cur(p)));
                value = p->toks[p->pos++].num * (neg ? -1 : 1);
                if (units_text(p) == NULL) return -1;
            } else {
                char *what = units_text(p);
                if (!what) return -1;
                if (is_punct(p, '-') && p->toks[p->pos + 1].kind == T_PUNCT && p->toks[p->pos + 1].punct == '>')
                    p->pos += 2; /* (u1) -> (u2) */
                char *unit = units_text(p);
                if (!unit) return -1;
                char msg[200];
                if (nm_units_convert(what, unit, alias, n_alias, &value, msg, sizeof msg))
                    return perr(p, NS_ERR_UNSUPPORTED, t->line, "UNITS %s = (%.60s) (%.60s): %s", t->text, what, unit,
                                msg);
            }
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

static int parse_callable(parser *p, int kind, int alg, int ftable) {
    block *b = nm_calloc(AR, 1, sizeof *b);
    if (!b) return -1;
    b->kind = kind;
    b->alg = alg;
    b->line = cur(p)->line;
    if (!(b->name = expect_name(p))) return -1;
    for (int i = 0; i < p->m->n_blocks; i++)
        if (!strcmp(p->m->blocks[i]->name, b->name))
            return perr(p, NS_ERR_PARSE, b->line, "'%s' defined twice", b->name);
    if (alg && is_name(p, "SOLVEFOR")) { /* LINEAR name SOLVEFOR a, b { } */
        p->pos++;
        for (;;) {
            char *n = expect_name(p);
            if (!n || add_name(&b->unknowns, &b->n_unknowns, n)) return -1;
            if (!is_punct(p, ',')) break;
            p->pos++;
        }
    }
    if (kind != B_DERIVATIVE && kind != B_KINETIC && !alg) {
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
    if (ftable) { /* FUNCTION_TABLE name(args): its values come from the user (nocmodl: hoc's table_name) */
        if (!b->n_args)
            return perr(p, NS_ERR_PARSE, b->line, "FUNCTION_TABLE %s needs one or more arguments", b->name);
        if (b->n_args > 4)
            return perr(p, NS_ERR_UNSUPPORTED, b->line, "FUNCTION_TABLE %s: %d arguments (at most 4)", b->name,
                        b->n_args);
        if (!(b->body = nm_calloc(AR, 1, sizeof *b->body))) return -1;
        b->ftable = ++p->m->n_ftables; /* on the GPU too: the loop uploads the values (ns_mech_ppack.ftable) */
        return add_block(p, b);
    }
    if (!(b->body = parse_block(p, b))) return -1;
    return add_block(p, b);
}

/* A block into *dst: the first, or a second one of the kind after the first (netcon.inc's
 * BREAKPOINT and the file's, two AFTER SOLVE blocks): nocmodl runs both, in order */
static int append_block(parser *p, stlist **dst, stlist *l, const char *k, int line) {
    if (!*dst) {
        *dst = l;
        return 0;
    }
    stlist *d = *dst;
    for (int i = 0; i < l->n; i++)
        if (add_st(p, d, l->s[i])) return -1;
    for (int i = 0; i < l->n_locals; i++) {
        if (in_list(d->locals, d->n_locals, l->locals[i]))
            return perr(p, NS_ERR_PARSE, line, "%s: LOCAL %s in both %s blocks", k, l->locals[i], k);
        int *ns = nm_realloc(AR, d->local_size, (size_t)(d->n_locals + 1) * sizeof *ns);
        if (!ns) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
        d->local_size = ns;
        ns[d->n_locals] = l->local_size ? l->local_size[i] : 0;
        if (add_name(&d->locals, &d->n_locals, l->locals[i])) return perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    }
    return 0;
}

static int parse_top(parser *p) {
    struct ns_nmodl *m = p->m;
    while (cur(p)->kind != T_EOF) {
        tok *t = cur(p);
        if (t->kind == T_VERBATIM) { /* C at the top: before the file's functions (nmodl_verbatim.c) */
            if (!m->verbatim_top && !(m->verbatim_top = nm_calloc(AR, 1, sizeof *m->verbatim_top))) return -1;
            st *s = parse_statement(p, m->verbatim_top, NULL);
            if (!s || add_st(p, m->verbatim_top, s)) return -1;
            continue;
        }
        if (t->kind != T_NAME) return perr(p, NS_ERR_PARSE, t->line, "expected a block keyword, found %s", describe(t));
        p->pos++;
        const char *k = t->text;
        if (!strcmp(k, "NEURON")) {
            if (parse_neuron(p)) return -1;
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
        } else if (!strcmp(k, "LOCAL")) {
            /* a module-level LOCAL: in NEURON one value per thread, shared by
             * every instance; here a field per instance (the same results
             * wherever an instance writes it before it reads it, and
             * thread-safe) */
            for (;;) {
                tok *n = cur(p);
                char *name = expect_name(p);
                int size = 0;
                if (!name || parse_dim(p, &size)) return -1;
                var *old = find_var(m, name);
                if (old && old->cls == V_ASSIGNED && old->size == size) { /* also ASSIGNED: nocmodl takes it as one */
                    if (!is_punct(p, ',')) break;
                    p->pos++;
                    continue;
                }
                var *v = add_var(p, name, V_ASSIGNED, 0, n->line);
                if (!v) return -1;
                v->size = size;
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(k, "DEFINE")) {
            char *n = expect_name(p);
            if (!n) return -1;
            if (cur(p)->kind != T_NUM) return perr(p, NS_ERR_PARSE, cur(p)->line, "DEFINE needs a number");
            if (!add_var(p, n, V_CONST, p->toks[p->pos++].num, t->line)) return -1;
        } else if (!strcmp(k, "INITIAL") || !strcmp(k, "BREAKPOINT")) {
            stlist **dst = !strcmp(k, "INITIAL") ? &m->initial : &m->breakpoint;
            stlist *l = parse_block(p, NULL);
            if (!l) return -1;
            if (append_block(p, dst, l, k, t->line)) return -1;
        } else if (!strcmp(k, "BEFORE") || !strcmp(k, "AFTER") || !strcmp(k, "CONSTRUCTOR") ||
                   !strcmp(k, "DESTRUCTOR")) {
            /* nocmodl's BA blocks: BEFORE BREAKPOINT, BEFORE/AFTER INITIAL, AFTER SOLVE,
             * BEFORE STEP (and the spellings it accepts that NEURON never runs: refused) */
            int h = k[0] == 'C' ? NS_MECH_CONSTRUCTOR : k[0] == 'D' ? NS_MECH_DESTRUCTOR : -1;
            char label[32];
            snprintf(label, sizeof label, "%s", k);
            if (h < 0) {
                const int before = k[0] == 'B';
                const char *w = cur(p)->kind == T_NAME ? cur(p)->text : "";
                h = before && !strcmp(w, "BREAKPOINT") ? NS_MECH_BEFORE_BREAKPOINT
                    : !before && !strcmp(w, "SOLVE")   ? NS_MECH_AFTER_SOLVE
                    : !strcmp(w, "INITIAL")            ? (before ? NS_MECH_BEFORE_INITIAL : NS_MECH_AFTER_INITIAL)
                    : before && !strcmp(w, "STEP")     ? NS_MECH_BEFORE_STEP
                                                       : -1;
                if (h < 0)
                    return perr(p, NS_ERR_UNSUPPORTED, t->line,
                                "%s %s: NEURON runs BEFORE BREAKPOINT, AFTER SOLVE, BEFORE INITIAL, AFTER INITIAL and "
                                "BEFORE STEP",
                                k, *w ? w : describe(cur(p)));
                snprintf(label, sizeof label, "%s %s", k, w);
                p->pos++;
            }
            stlist *l = parse_block(p, NULL);
            if (!l) return -1;
            if (!m->hooks[h]) m->hooks_line[h] = t->line;
            cpu_only(p, t->line, h < NS_MECH_CONSTRUCTOR ? "a BEFORE/AFTER block runs on the CPU loop only"
                                                         : "CONSTRUCTOR/DESTRUCTOR runs on the CPU loop only");
            if (append_block(p, &m->hooks[h], l, label, t->line)) return -1;
        } else if (!strcmp(k, "DERIVATIVE")) {
            if (parse_callable(p, B_DERIVATIVE, 0, 0)) return -1;
        } else if (!strcmp(k, "KINETIC")) {
            if (parse_callable(p, B_KINETIC, 0, 0)) return -1;
        } else if (!strcmp(k, "PROCEDURE")) {
            if (parse_callable(p, B_PROCEDURE, 0, 0)) return -1;
        } else if (!strcmp(k, "FUNCTION")) {
            if (parse_callable(p, B_FUNCTION, 0, 0)) return -1;
        } else if (!strcmp(k, "FUNCTION_TABLE")) {
            if (parse_callable(p, B_FUNCTION, 0, 1)) return -1;
        } else if (!strcmp(k, "LINEAR") || !strcmp(k, "NONLINEAR")) {
            if (parse_callable(p, B_PROCEDURE, k[0] == 'L' ? 'L' : 'N', 0)) return -1;
        } else if (!strcmp(k, "NET_RECEIVE")) {
            if (m->net_receive) return perr(p, NS_ERR_PARSE, t->line, "a second NET_RECEIVE");
            if (expect(p, '(')) return -1;
            /* the arguments: the weight vector, weight first (per-connection state after it) */
            for (;;) {
                char *a = expect_name(p);
                if (!a || skip_units(p)) return -1;
                if (in_list(m->net_args, m->n_net_args, a))
                    return perr(p, NS_ERR_PARSE, t->line, "NET_RECEIVE: argument '%s' twice", a);
                if (add_name(&m->net_args, &m->n_net_args, a)) return perr(p, NS_ERR_OUT_OF_MEMORY, t->line, "out of memory");
                if (!is_punct(p, ',')) break;
                p->pos++;
            }
            if (expect(p, ')')) return -1;
            m->net_weight = m->net_args[0];
            p->net_depth = p->depth + 1;
            m->net_receive = parse_block(p, NULL);
            p->net_depth = 0;
            if (!m->net_receive) return -1;
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
                                "floor", "ceil", "atan", "asin", "acos", "exprelr", "expm1", "log1p", "erf", "at_time", NULL};
    static const char *two[] = {"pow", "fmin", "fmax", "atan2", "fmod", "min", "max", NULL};
    for (int i = 0; one[i]; i++)
        if (!strcmp(one[i], f)) return 1;
    for (int i = 0; two[i]; i++)
        if (!strcmp(two[i], f)) return 2;
    return nm_random_arity(f); /* normrand, exprand, scop_random, set_seed */
}
/* The size of the innermost scope entry `name` (scope_size: 0 a scalar, n an
 * array, -1 a FROM loop's integer), or -2 where it is not in scope. */
static int scope_size_of(parser *p, char **scope, int n_scope, const char *name) {
    for (int i = n_scope - 1; i >= 0; i--)
        if (!strcmp(scope[i], name)) return p->scope_size[i];
    return -2;
}
static int scope_add(parser *p, char ***scope, int *n_scope, char *name, int size) {
    if (*n_scope >= p->cap_scope_size) {
        int cap = p->cap_scope_size ? 2 * p->cap_scope_size : 64;
        int *n = nm_realloc(AR, p->scope_size, (size_t)cap * sizeof *n);
        if (!n) return perr(p, NS_ERR_OUT_OF_MEMORY, 1, "out of memory");
        p->scope_size = n;
        p->cap_scope_size = cap;
    }
    p->scope_size[*n_scope] = size;
    return add_name(scope, n_scope, name);
}
/* a name with or without an index: arrays only with one, the rest only without */
static int check_index(parser *p, const char *name, const ex *index, char **scope, int n_scope, int line) {
    int size = scope_size_of(p, scope, n_scope, name);
    if (size == -2) {
        var *v = find_var(p->m, name);
        size = v ? v->size : 0;
    }
    if (index && size <= 0) return perr(p, NS_ERR_INVALID_ARGUMENT, line, "'%s' is not an array", name);
    if (!index && size > 0) return perr(p, NS_ERR_INVALID_ARGUMENT, line, "the array '%s' needs an index", name);
    if (index && index->kind == EX_NUM && !(index->num >= 0 && index->num < size))
        return perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s[%g]: out of the array's %d elements", name, index->num, size);
    return 0;
}
static int check_ex(parser *p, ex *e, char **locals, int n_locals, int line) {
    switch (e->kind) {
    case EX_NUM: return 0;
    case EX_STR: return perr(p, NS_ERR_PARSE, line, "a string outside printf");
    case EX_VAR:
        if (e->a && check_ex(p, e->a, locals, n_locals, line)) return -1;
        if (!in_list(locals, n_locals, e->text) && find_var(p->m, e->text) && find_var(p->m, e->text)->cls == V_RANDOM)
            return perr(p, NS_ERR_INVALID_ARGUMENT, line, "RANDOM %s is a stream, not a value (random_uniform(%s), ...)",
                        e->text, e->text);
        if (in_list(locals, n_locals, e->text) || is_special(e->text) || find_var(p->m, e->text))
            return check_index(p, e->text, e->a, locals, n_locals, line);
        if (!strcmp(e->text, "FARADAY")) return 0;
        if (!e->a && p->vbody && nm_verbatim_declares(p->vbody, e->text)) { /* nocmodl passes it through to the C */
            e->op = NM_C_NAME;
            return 0;
        }
        return perr(p, NS_ERR_INVALID_ARGUMENT, line, "'%s' is not declared", e->text);
    case EX_CALL: {
        if (!find_block(p->m, e->text) && nm_random_api(e->text, e->n_args) >= 0) {
            /* random_uniform(r[, a, b]), random_negexp(r[, mean]), random_normal(r[, mean, sd]),
             * random_setseq(r, n), random_setids(r, id1, id2, id3): r a RANDOM variable */
            if (!nm_random_api(e->text, e->n_args))
                return perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s: %d arguments (NEURON's forms: random_uniform(r), "
                            "random_uniform(r, a, b), random_negexp(r[, mean]), random_normal(r[, mean, sd]), "
                            "random_setseq(r, n), random_setids(r, id1, id2, id3))", e->text, e->n_args);
            const var *rv = e->args[0]->kind == EX_VAR && !e->args[0]->a ? find_var(p->m, e->args[0]->text) : NULL;
            if (!rv || rv->cls != V_RANDOM)
                return perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s: the first argument must be a RANDOM variable",
                            e->text);
            for (int i = 1; i < e->n_args; i++)
                if (check_ex(p, e->args[i], locals, n_locals, line)) return -1;
            return 0;
        }
        block *b = find_block(p->m, e->text);
        if (!b && !strcmp(e->text, "printf"))
            return perr(p, NS_ERR_UNSUPPORTED, line, "printf as a value (it is supported as a statement)");
        int ar = builtin_arity(e->text);
        if (!b && !strcmp(e->text, "at_time")) p->m->uses_at_time = 1;
        unsigned evf = 0;
        if (!b && e->op == NM_WATCH_OP) { /* a WATCH statement's (parse_statement) */
            const ex *c = e->args[0];
            if (p->ev_ctx != NM_EV_RECEIVE)
                return perr(p, NS_ERR_INVALID_ARGUMENT, line, "WATCH is allowed only in the NET_RECEIVE block");
            if (c->kind != EX_BIN || !strchr("<>lg", c->op))
                return perr(p, NS_ERR_INVALID_ARGUMENT, line, "WATCH needs a condition a > b or a < b");
            p->m->events |= NS_MECH_EV_WATCH;
            return check_ex(p, e->args[0], locals, n_locals, line) || check_ex(p, e->args[1], locals, n_locals, line)
                       ? -1 : 0;
        }
        if (!b && nm_event_call(e->text, &ar, &evf)) { /* net_send, net_event, net_move (nmodl_events.c) */
            const char *why = nm_event_misplaced(e->text, p->ev_ctx);
            if (why) return perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s %s", e->text, why);
            p->m->events |= evf;
            if (!p->ev_line) p->ev_line = line;

        }
        if (b && (b->kind == B_DERIVATIVE || b->kind == B_KINETIC))
            return perr(p, NS_ERR_PARSE, line, "%s %s called as a function", b->kind == B_KINETIC ? "KINETIC" : "DERIVATIVE",
                        e->text);
        /* a C function that the file's VERBATIM C declares (nocmodl passes the call through) */
        const int c_fn = !b && ar < 0 && (nm_verbatim_declares(p->m->verbatim_top, e->text) ||
                                          (p->vbody && nm_verbatim_declares(p->vbody, e->text)));
        if (!b && ar < 0 && !c_fn) {
            if (unsupported_name(e->text)) return perr(p, NS_ERR_UNSUPPORTED, line, "%s is not supported", e->text);
            return perr(p, NS_ERR_INVALID_ARGUMENT, line, "unknown function '%s'", e->text);
        }
        int want = b ? b->n_args : ar;
        if (!c_fn && e->n_args != want) /* (the C compiler checks a C function's arguments) */
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
        if (scope_add(p, scope, n_scope, l->locals[i], l->local_size ? l->local_size[i] : 0)) return -1;
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        switch (s->kind) {
        case ST_ASSIGN: {
            int fn_ret = owner && owner->kind == B_FUNCTION && !strcmp(owner->name, s->name);
            int local = scope_size_of(p, *scope, *n_scope, s->name);
            if (local == -1) return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is FROM's loop variable", s->name);
            if (!fn_ret && local == -2) {
                var *v = find_var(p->m, s->name);
                if (!v) {
                    if (is_special(s->name))
                        return perr(p, NS_ERR_UNSUPPORTED, s->line, "assigning '%s' is not supported", s->name);
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not declared", s->name);
                }
                if (v->cls == V_CONST || v->cls == V_ION_READ || v->cls == V_RANDOM)
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is read-only here", s->name);
            }
            if (!fn_ret && check_index(p, s->name, s->index, *scope, *n_scope, s->line)) return -1;
            if (s->index && check_ex(p, s->index, *scope, *n_scope, s->line)) return -1;
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_DERIV: {
            var *v = find_var(p->m, s->name);
            if (!owner || owner->kind != B_DERIVATIVE)
                return perr(p, NS_ERR_PARSE, s->line, "%s' outside a DERIVATIVE block", s->name);
            if (!v || v->cls != V_STATE) return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not a STATE", s->name);
            if (v->size)
                return perr(p, NS_ERR_UNSUPPORTED, s->line, "%s' of an array STATE is not supported (a KINETIC block "
                            "takes array states)", s->name);
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_IF:
        case ST_WHILE:
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            if (check_list(p, s->then_, owner, scope, n_scope)) return -1;
            if (s->else_ && check_list(p, s->else_, owner, scope, n_scope)) return -1;
            break;
        case ST_FROM: {
            if (check_ex(p, s->e, *scope, *n_scope, s->line) || check_ex(p, s->to, *scope, *n_scope, s->line))
                return -1;
            /* BY: an integer constant, as nocmodl's grammar has it (the step, in method) */
            const ex *by = s->by && s->by->kind == EX_NEG ? s->by->a : s->by;
            double step = !s->by ? 1 : by->kind == EX_NUM ? (s->by->kind == EX_NEG ? -by->num : by->num) : 0;
            if (step == 0 || step != (int)step || fabs(step) > 1e6)
                return perr(p, NS_ERR_PARSE, s->line, "FROM %s: BY needs a nonzero integer", s->name);
            s->method = (int)step;
            int at = *n_scope;
            if (scope_add(p, scope, n_scope, s->name, -1) || check_list(p, s->then_, owner, scope, n_scope)) return -1;
            *n_scope = at;
            break;
        }
        case ST_VERBATIM: break; /* nm_verbatim_check */
        case ST_RETURN:
            if (!owner || owner->kind == B_DERIVATIVE)
                return perr(p, NS_ERR_UNSUPPORTED, s->line,
                            "VERBATIM return 0; is supported in a FUNCTION or PROCEDURE only");
            break;
        case ST_CALL: {
            const ex *e = s->e;
            if (!find_block(p->m, e->text) && !strcmp(e->text, "printf")) { /* printf("format", args): the host's */
                if (e->n_args < 1 || e->args[0]->kind != EX_STR)
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "printf needs a format string first");
                p->m->uses_printf = 1;
                for (int k = 1; k < e->n_args; k++)
                    if (check_ex(p, e->args[k], *scope, *n_scope, s->line)) return -1;
                break;
            }
            if (e->op == NM_NETCONS_OP) { /* FOR_NETCONS: its names for each connection's weight vector */
                if (p->ev_ctx != NM_EV_RECEIVE)
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "FOR_NETCONS is allowed only in the NET_RECEIVE block");
                if (e->n_args > p->m->n_net_args)
                    return perr(p, NS_ERR_INVALID_ARGUMENT, s->line,
                                "FOR_NETCONS names %d arguments, NET_RECEIVE has %d", e->n_args, p->m->n_net_args);
                const int at = *n_scope;
                for (int k = 0; k < e->n_args; k++)
                    if (scope_add(p, scope, n_scope, e->args[k]->text, 0)) return -1;
                if (check_list(p, s->then_, owner, scope, n_scope)) return -1;
                *n_scope = at;
                p->m->events |= NS_MECH_EV_NETCONS;
                cpu_only(p, s->line, "FOR_NETCONS runs on the CPU loop only");
                break;
            }
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_REACTION:
        case ST_CONSERVE:
        case ST_COMPARTMENT: /* lowered before the checks (nm_kinetic_lower) */
            return perr(p, NS_ERR_PARSE, s->line, "a KINETIC statement outside a KINETIC block");
        case ST_EQUATION: /* top level of a LINEAR or NONLINEAR block (parse_statement) */
            if (l != owner->body)
                return perr(p, NS_ERR_UNSUPPORTED, s->line, "an equation ('~') inside an if or a loop is not supported");
            if (check_ex(p, s->e, *scope, *n_scope, s->line) || check_ex(p, s->e2, *scope, *n_scope, s->line)) return -1;
            break;
        case ST_SOLVE: {
            if (p->in_hook && !owner)
                return perr(p, NS_ERR_UNSUPPORTED, s->line,
                            "SOLVE %s in a BEFORE/AFTER block, CONSTRUCTOR or DESTRUCTOR: NEURON solves only in "
                            "BREAKPOINT and INITIAL", s->name);
            block *b = find_block(p->m, s->name);
            if (!b) return perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "SOLVE %s: no such block", s->name);
            if (b->alg) { /* LINEAR / NONLINEAR: solved in place, wherever the SOLVE is (nocmodl) */
                if (s->method != M_NONE || s->steady)
                    return perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s: a %s block takes no METHOD", s->name,
                                b->alg == 'L' ? "LINEAR" : "NONLINEAR");
                if (!owner && !p->in_initial && !p->ev_ctx)
                    return perr(p, NS_ERR_UNSUPPORTED, s->line,
                                "SOLVE %s in BREAKPOINT: a %s block is supported in INITIAL, a PROCEDURE or a "
                                "FUNCTION (call one from BREAKPOINT)", s->name, b->alg == 'L' ? "LINEAR" : "NONLINEAR");
                if (owner == b) return perr(p, NS_ERR_PARSE, s->line, "SOLVE %s inside itself", s->name);
                break;
            }
            if (b->kind == B_DERIVATIVE && s->method == M_NONE)
                return perr(p, NS_ERR_PARSE, s->line, "SOLVE %s needs a METHOD", s->name);
            if (b->kind == B_KINETIC && s->method != M_SPARSE)
                return perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s: a KINETIC block needs METHOD sparse, euler or runge",
                            s->name);
            if (b->kind == B_DERIVATIVE && s->method == M_SPARSE)
                return perr(p, NS_ERR_PARSE, s->line, "SOLVE %s: METHOD sparse needs a KINETIC block", s->name);
            {
                const int in_initial = p->in_initial;
                if (s->steady && !in_initial && !owner) /* a PROCEDURE or FUNCTION may (cabpump.mod's ss()) */
                    return perr(p, NS_ERR_UNSUPPORTED, s->line,
                                "SOLVE %s STEADYSTATE: only in INITIAL, a PROCEDURE or a FUNCTION", s->name);
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

/* Is name a LOCAL of l or an enclosing list (scope), or an argument? */
typedef struct wscope {
    const stlist *l;
    const struct wscope *up;
} wscope;
static int shadowed(const wscope *w, char **args, int n_args, const char *name) {
    for (; w; w = w->up)
        if (in_list(w->l->locals, w->l->n_locals, name)) return 1;
    return in_list(args, n_args, name);
}
static int mark_writes(parser *p, const stlist *l, const wscope *up, char **args, int n_args) {
    wscope w = {l, up};
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_ASSIGN && !shadowed(&w, args, n_args, s->name)) {
            var *v = find_var(p->m, s->name);
            if (!v && !strcmp(s->name, "v")) {
                /* v = v + 10 in a PROCEDURE: NEURON's mechanism has its own copy of
                 * v, set from the node's at each entry; the membrane keeps its own */
                if (!(v = add_var(p, "v", V_ASSIGNED, 0, s->line))) return -1;
                v->copy_in = 1;
            } else if (v && v->cls == V_ION_READ) {
                v->cls = V_ASSIGNED; /* written READ ion variable: a copy, set from the ion at each entry */
                v->copy_in = 1;
            }
        }
        if (s->kind == ST_IF || s->kind == ST_WHILE || s->kind == ST_FROM || (s->kind == ST_CALL && s->then_)) {
            if (mark_writes(p, s->then_, &w, args, n_args)) return -1;
            if (s->else_ && mark_writes(p, s->else_, &w, args, n_args)) return -1;
        }
    }
    return 0;
}

/* FUNCTIONs and PROCEDUREs must not call themselves, directly or through
 * others: the generated code inlines calls (NEURON's recurses; no real file
 * we know relies on it). A depth-first search of the call graph; state per
 * block: 0 unseen, 1 on the path, 2 done. */
static int calls_in_list(parser *p, const stlist *l, int from, int *state);
static int visit_block(parser *p, int b, int *state) {
    if (state[b] == 2) return 0;
    if (state[b] == 1) return 1;
    state[b] = 1;
    if (calls_in_list(p, p->m->blocks[b]->body, b, state)) return 1;
    state[b] = 2;
    return 0;
}
static int calls_in_ex(parser *p, const ex *e, int from, int *state, int line) {
    if (!e) return 0;
    if (e->kind == EX_CALL) {
        for (int i = 0; i < p->m->n_blocks; i++)
            if (!strcmp(p->m->blocks[i]->name, e->text) && visit_block(p, i, state)) {
                const block *b = p->m->blocks[from];
                perr(p, NS_ERR_UNSUPPORTED, line, "recursion is not supported: %s calls %s, which leads back to %s",
                     b->name, e->text, b->name);
                return 1;
            }
        for (int i = 0; i < e->n_args; i++)
            if (calls_in_ex(p, e->args[i], from, state, line)) return 1;
        return 0;
    }
    return calls_in_ex(p, e->a, from, state, line) || calls_in_ex(p, e->b, from, state, line);
}
static int calls_in_list(parser *p, const stlist *l, int from, int *state) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (calls_in_ex(p, s->e, from, state, s->line) || calls_in_ex(p, s->index, from, state, s->line) ||
            calls_in_ex(p, s->to, from, state, s->line) || calls_in_ex(p, s->by, from, state, s->line))
            return 1;
        if (s->then_ && calls_in_list(p, s->then_, from, state)) return 1;
        if (s->else_ && calls_in_list(p, s->else_, from, state)) return 1;
    }
    return 0;
}
static int no_recursion(parser *p) {
    int *state = nm_calloc(AR, (size_t)p->m->n_blocks + 1, sizeof *state);
    if (!state) return perr(p, NS_ERR_OUT_OF_MEMORY, 1, "out of memory");
    for (int i = 0; i < p->m->n_blocks; i++)
        if (visit_block(p, i, state)) return -1;
    return 0;
}

/* the STATEs that e names, appended to b's unknowns in order of first appearance */
static int states_in(parser *p, block *b, const ex *e) {
    if (!e) return 0;
    if (e->kind == EX_VAR) {
        const var *v = find_var(p->m, e->text);
        if (v && v->cls == V_STATE && !in_list(b->unknowns, b->n_unknowns, e->text)) {
            if (v->size) return perr(p, NS_ERR_UNSUPPORTED, b->line, "%s: array states are not supported", b->name);
            if (add_name(&b->unknowns, &b->n_unknowns, e->text)) return perr(p, NS_ERR_OUT_OF_MEMORY, b->line, "out of memory");
        }
        return 0;
    }
    for (int k = 0; k < e->n_args; k++)
        if (states_in(p, b, e->args[k])) return -1;
    return states_in(p, b, e->a) || states_in(p, b, e->b);
}
/* LINEAR / NONLINEAR: the unknowns (SOLVEFOR's, else the STATEs of the equations), as many as equations */
static int alg_unknowns(parser *p, block *b) {
    const char *what = b->alg == 'L' ? "LINEAR" : "NONLINEAR";
    int n_eq = 0;
    const int solvefor = b->n_unknowns > 0;
    for (int i = 0; i < b->body->n; i++) {
        const st *s = b->body->s[i];
        if (s->kind != ST_EQUATION) continue;
        n_eq++;
        if (!solvefor && (states_in(p, b, s->e) || states_in(p, b, s->e2))) return -1;
    }
    for (int k = 0; k < b->n_unknowns; k++) {
        const var *v = find_var(p->m, b->unknowns[k]);
        if (!v || v->cls != V_STATE)
            return perr(p, NS_ERR_INVALID_ARGUMENT, b->line, "%s %s: SOLVEFOR %s is not a STATE", what, b->name,
                        b->unknowns[k]);
    }
    if (n_eq == 0) return perr(p, NS_ERR_PARSE, b->line, "%s %s has no equations", what, b->name);
    if (n_eq != b->n_unknowns)
        return perr(p, NS_ERR_INVALID_ARGUMENT, b->line, "%s %s: %d equations for %d unknown STATEs", what, b->name,
                    n_eq, b->n_unknowns);
    return 0;
}

/* does l (or a block inside it) assign name, other than after PROTECT? */
static int assigns(const stlist *l, const char *name) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_ASSIGN && !s->protect && !strcmp(s->name, name)) return 1;
        if (s->then_ && assigns(s->then_, name)) return 1;
        if (s->else_ && assigns(s->else_, name)) return 1;
    }
    return 0;
}

static int finish(parser *p) {
    struct ns_nmodl *m = p->m;
    if (!m->name || !strcmp(m->name, "nothing")) {
        /* no NEURON block, no SUFFIX in it, or `SUFFIX nothing`: nocmodl names the
         * (density) mechanism after the file, without its extension */
        const char *dot = strrchr(m->file, '.');
        const size_t n = dot ? (size_t)(dot - m->file) : strlen(m->file);
        int ok = n > 0 && (isalpha((unsigned char)m->file[0]) || m->file[0] == '_');
        for (size_t i = 0; ok && i < n; i++) ok = isalnum((unsigned char)m->file[i]) || m->file[i] == '_';
        if (!ok)
            return perr(p, NS_ERR_PARSE, 1,
                        "no SUFFIX or POINT_PROCESS, and the file name '%s' is no mechanism name (a letter, then letters, "
                        "digits or '_', as nocmodl takes it)",
                        m->file);
        free(m->name);
        if (!(m->name = dupn(m->file, n))) return perr(p, NS_ERR_OUT_OF_MEMORY, 1, "out of memory");
    }
    if (!m->breakpoint) {
        m->breakpoint = nm_calloc(AR, 1, sizeof *m->breakpoint);
        if (!m->breakpoint) return -1;
    }
    /* v and READ ion variables that the file assigns: per-instance copies (NEURON's) */
    if (m->initial && mark_writes(p, m->initial, NULL, NULL, 0)) return -1;
    if (mark_writes(p, m->breakpoint, NULL, NULL, 0)) return -1;
    if (m->net_receive && mark_writes(p, m->net_receive, NULL, m->net_args, m->n_net_args)) return -1;
    if (m->net_initial && mark_writes(p, m->net_initial, NULL, m->net_args, m->n_net_args)) return -1;
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (m->hooks[h] && mark_writes(p, m->hooks[h], NULL, NULL, 0)) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (mark_writes(p, m->blocks[i]->body, NULL, m->blocks[i]->args, m->blocks[i]->n_args)) return -1;
    for (int i = 0; i < m->n_vars; i++) {
        var *v = &m->vars[i];
        if (v->cls == V_PARAM && in_list(m->globals_decl, m->n_globals_decl, v->name)) v->cls = V_GLOBAL;
        /* NEURON: a PARAMETER that is not RANGE is GLOBAL */
        if (v->cls == V_PARAM && !in_list(m->range, m->n_range, v->name)) v->cls = V_GLOBAL;
    }
    /* a RANGE name that is never declared is ignored, as nocmodl does; a GLOBAL one is an error there too,
     * except in a THREADSAFE file that assigns it (not after PROTECT): nocmodl makes it a per-thread global
     * (it warns), which is an ASSIGNED field here, as a module-level LOCAL */
    for (int i = 0; i < m->n_globals_decl; i++) {
        if (find_var(m, m->globals_decl[i])) continue;
        int written = m->initial && assigns(m->initial, m->globals_decl[i]);
        written = written || assigns(m->breakpoint, m->globals_decl[i]);
        for (int h = 0; h < NS_MECH_N_HOOKS && !written; h++)
            written = m->hooks[h] && assigns(m->hooks[h], m->globals_decl[i]);
        for (int b = 0; b < m->n_blocks && !written; b++) written = assigns(m->blocks[b]->body, m->globals_decl[i]);
        if (!p->threadsafe || !written)
            return perr(p, NS_ERR_INVALID_ARGUMENT, m->globals_line[i],
                        "GLOBAL %s: not declared in PARAMETER or ASSIGNED%s", m->globals_decl[i],
                        p->threadsafe ? "" : " (nocmodl takes an undeclared GLOBAL only in a THREADSAFE file that assigns it unPROTECTed)");
        if (!add_var(p, m->globals_decl[i], V_ASSIGNED, 0, m->globals_line[i])) return -1;
    }
    /* POINTER names: declared in ASSIGNED (or nowhere, as nocmodl allows), no field */
    for (int k = 0; k < m->n_pointers; k++) {
        var *v = find_var(m, m->pointers[k]);
        if (!v && !(v = add_var(p, m->pointers[k], V_POINTER, 0, m->pointers_line[k]))) return -1;
        /* declared in PARAMETER (NEURON's gap.mod: its units; a value is ignored) or ASSIGNED, as nocmodl takes it */
        if (v->cls != V_ASSIGNED && v->cls != V_POINTER && v->cls != V_PARAM && v->cls != V_GLOBAL)
            return perr(p, NS_ERR_INVALID_ARGUMENT, m->pointers_line[k],
                        "POINTER %s: declared as a STATE, CONSTANT or ion variable too", m->pointers[k]);
        if (v->size) return perr(p, NS_ERR_UNSUPPORTED, m->pointers_line[k], "POINTER %s: an array", m->pointers[k]);
        if (v->pointer >= 0) return perr(p, NS_ERR_PARSE, m->pointers_line[k], "POINTER %s twice", m->pointers[k]);
        v->cls = V_POINTER;
        v->pointer = k;
    }
    /* VERBATIM C: what it names must mean something here (before the random
     * streams: its C may draw too) */
    m->threadsafe = p->threadsafe;
    if ((p->status = nm_verbatim_check(m))) return -1;
    /* random numbers: the instance's streams in hidden ASSIGNED fields, numbered last among them:
     * stream 0 for normrand and the like, stream k + 1 for RANDOM variable k */
    m->random_field = -1;
    m->n_streams = 0;
    for (int k = 0; k < m->n_randoms; k++) {
        if (find_var(m, m->randoms[k]))
            return perr(p, NS_ERR_INVALID_ARGUMENT, m->randoms_line[k], "RANDOM %s: declared elsewhere too",
                        m->randoms[k]);
        var *v = add_var(p, m->randoms[k], V_RANDOM, 0, m->randoms_line[k]);
        if (!v) return -1;
        v->stream = k + 1;
    }
    if (nm_random_used(m)) {
        m->n_streams = 1 + m->n_randoms;
        for (int q = 0; q < m->n_streams; q++)
            for (int k = 0; k < 4; k++) {
                char *name = (char *)nm_random_field_names[k];
                if (q) { /* __ran_<RANDOM>_id1, _id2, _id3, _seq: an nrnran123 stream (nmodl_random.h) */
                    size_t nl = strlen(m->randoms[q - 1]) + 16;
                    if (!(name = nm_calloc(AR, nl, 1))) return -1;
                    snprintf(name, nl, "__ran_%s_%s", m->randoms[q - 1], nm_random_stream_fields[k]);
                }
                if (find_var(m, name) || !add_var(p, name, V_ASSIGNED, 0, 1))
                    return p->status ? -1 : perr(p, NS_ERR_INVALID_ARGUMENT, 1, "%s is reserved", name);
            }
    }
    /* fields: parameters, assigned (GLOBAL assigned are per instance: they
     * are written before they are read, CoreNEURON does the same), states */
    /* an array takes `size` consecutive fields (globals); the sums are bounded by
     * the number of variables times parse_dim's 1e6 */
    long long nf = 0;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_PARAM) m->vars[i].field = (int)nf, nf += m->vars[i].size ? m->vars[i].size : 1;
    m->n_params = (int)nf;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_ASSIGNED) m->vars[i].field = (int)nf, nf += m->vars[i].size ? m->vars[i].size : 1;
    m->n_assigned = (int)nf - m->n_params;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_STATE) m->vars[i].field = (int)nf, nf += m->vars[i].size ? m->vars[i].size : 1;
    long long ng = 0;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_GLOBAL) m->vars[i].global = (int)ng, ng += m->vars[i].size ? m->vars[i].size : 1;
    if (nf > MAX_SLOTS || ng > MAX_SLOTS)
        return perr(p, NS_ERR_SIZE, 1, "%lld fields and %lld GLOBALs per instance: more than %d", nf, ng, MAX_SLOTS);
    m->n_states = (int)nf - m->n_params - m->n_assigned;
    m->n_fields = (int)nf;
    if (find_var(m, nm_random_field_names[0])) m->random_field = find_var(m, nm_random_field_names[0])->field;
    long long tsize = 0;
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        if (!b->table) continue;
        table_decl *t = b->table;
        for (int k = 0; k < t->n_names; k++) {
            var *v = find_var(m, t->names[k]);
            if (!v || v->field < 0 || v->cls != V_ASSIGNED)
                return perr(p, NS_ERR_INVALID_ARGUMENT, t->line, "TABLE %s in %s: not an ASSIGNED variable", t->names[k],
                            b->name);
        }
        for (int k = 0; k < t->n_depend; k++) {
            /* a GLOBAL, celsius, dt, or a RANGE variable (as nocmodl, the table
             * then follows the value of the first instance: the builder's) */
            var *v = find_var(m, t->depend[k]);
            if (strcmp(t->depend[k], "celsius") && strcmp(t->depend[k], "dt") &&
                (!v || v->size || (v->cls != V_GLOBAL && v->cls != V_PARAM && v->cls != V_ASSIGNED)))
                return perr(p, NS_ERR_INVALID_ARGUMENT, t->line,
                            "TABLE DEPEND %s in %s: not a PARAMETER, an ASSIGNED, celsius or dt", t->depend[k], b->name);
        }
        t->offset = (int)tsize;
        long long cols = b->kind == B_FUNCTION ? 1 : t->n_names;
        tsize += 4 + t->n_depend + cols * (t->with + 1LL);
        if (tsize > MAX_TABLE)
            return perr(p, NS_ERR_SIZE, t->line, "the TABLEs need %lld values, more than %d (lower WITH)", tsize,
                        MAX_TABLE);
        /* usetable_<name> is a GLOBAL, 1 by default, as NEURON has it */
        size_t nl = strlen(b->name) + 10;
        char *name = nm_calloc(AR, nl, 1);
        if (!name) return -1;
        snprintf(name, nl, "usetable_%s", b->name);
        var *u = add_var(p, name, V_GLOBAL, 1, b->line);
        if (!u) return -1;
        if (ng >= MAX_SLOTS) return perr(p, NS_ERR_SIZE, b->line, "more than %d GLOBALs", MAX_SLOTS);
        t->usetable = u->global = (int)ng++;
    }
    m->n_globals = (int)ng;
    m->table_size = (int)tsize;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->kind == B_KINETIC && (p->status = nm_kinetic_lower(m, m->blocks[i]))) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->alg && alg_unknowns(p, m->blocks[i])) return -1;
    /* names and calls */
    char **scope = NULL;
    int n_scope = 0;
    p->in_initial = 1;
    p->ev_ctx = NM_EV_INITIAL;
    p->vbody = m->initial;
    if (m->initial && check_list(p, m->initial, NULL, &scope, &n_scope)) goto fail;
    p->in_initial = 0;
    p->ev_ctx = NM_EV_NONE;
    p->vbody = m->breakpoint;
    if (check_list(p, m->breakpoint, NULL, &scope, &n_scope)) goto fail;
    p->in_hook = 1;
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        p->vbody = m->hooks[h];
        if (m->hooks[h] && check_list(p, m->hooks[h], NULL, &scope, &n_scope)) goto fail;
    }
    p->in_hook = 0;
    if (m->net_receive) {
        if (!m->point) {
            perr(p, NS_ERR_UNSUPPORTED, 1, "NET_RECEIVE in a density mechanism (SUFFIX %s)", m->name);
            goto fail;
        }
        for (int k = 0; k < m->n_net_args; k++)
            if (scope_add(p, &scope, &n_scope, m->net_args[k], 0)) goto fail;
        p->ev_ctx = NM_EV_RECEIVE_INITIAL;
        p->vbody = m->net_initial;
        if (m->net_initial && check_list(p, m->net_initial, NULL, &scope, &n_scope)) goto fail;
        if (m->net_initial) m->events |= NS_MECH_EV_INIT;
        /* flag: the event's (0 for a connection's, net_send's for a self event) */
        if (scope_add(p, &scope, &n_scope, "flag", 0)) goto fail;
        p->ev_ctx = NM_EV_RECEIVE;
        p->vbody = m->net_receive;
        if (check_list(p, m->net_receive, NULL, &scope, &n_scope)) goto fail;
        p->ev_ctx = NM_EV_NONE;
        n_scope = 0;
    }
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        n_scope = 0;
        /* a FUNCTION's name is its value, which its body may read too */
        if (b->kind == B_FUNCTION && scope_add(p, &scope, &n_scope, b->name, 0)) goto fail;
        for (int k = 0; k < b->n_args; k++)
            if (scope_add(p, &scope, &n_scope, b->args[k], 0)) goto fail;
        p->vbody = b->body;
        if (check_list(p, b->body, b, &scope, &n_scope)) goto fail;
    }
    p->vbody = NULL;
    if (no_recursion(p)) goto fail;
    if (m->events && !m->point) { /* net_send in a SUFFIX's INITIAL: no queue to send to (nocmodl: the same) */
        perr(p, NS_ERR_INVALID_ARGUMENT, p->ev_line,
             "net_send in a density mechanism (SUFFIX %s): events need a POINT_PROCESS or ARTIFICIAL_CELL", m->name);
        goto fail;
    }
    return 0; /* scope lives in the arena */
fail:
    return -1;
}

static ns_status parse_text(const char *text, const char *name, const char *dir, ns_nmodl_t **out) {
    *out = NULL;
    parser p = {0};
    p.src = text;
    p.file = name ? name : "<string>";
    p.dir = dir;
    p.files[0] = p.file;
    p.n_files = 1;
    p.m = calloc(1, sizeof *p.m);
    if (!p.m) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    p.m->file = dup(p.file);
    AR = &p.m->arena;
    if (lex(&p, text, 0) == 0 && parse_top(&p) == 0) finish(&p);
    /* the tokens' texts are kept (the AST points at them); the array goes */
    free(p.toks);
    AR = NULL;
    if (p.status) {
        ns_nmodl_destroy(p.m);
        return p.status;
    }
    *out = p.m;
    return NS_OK;
}

ns_status ns_nmodl_parse_string(const char *text, const char *name, ns_nmodl_t **out) {
    if (!text || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_parse_string: NULL argument");
    return parse_text(text, name, NULL, out);
}

/* The text of the file at path (at most 64 MiB, no NUL byte), malloc'd; -1 with *status. */
static int read_text(const char *path, char **out, ns_status *status) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return *status = ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, strerror(errno)), -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) { fclose(f); return *status = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"), -1; }
    for (;;) {
        if (n + 1 >= cap) {
            if (cap > ((size_t)64 << 20)) { free(buf); fclose(f); return *status = ns_fail(NS_ERR_SIZE, "%s: larger than 64 MiB", path), -1; }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) { free(buf); fclose(f); return *status = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"), -1; }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); return *status = ns_fail(NS_ERR_IO, "%s: read error", path), -1; }
    buf[n] = 0;
    if (memchr(buf, 0, n)) { free(buf); return *status = ns_fail(NS_ERR_PARSE, "%s: binary file (NUL byte)", path), -1; }
    *out = buf;
    return 0;
}

ns_status ns_nmodl_parse_file(const char *path, ns_nmodl_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_parse_file: NULL argument");
    *out = NULL;
    char *buf = NULL;
    ns_status s = NS_OK;
    if (read_text(path, &buf, &s)) return s;
    const char *base = strrchr(path, '/');
    char *dir = base ? dupn(path, (size_t)(base - path)) : dup(".");
    if (!dir) { free(buf); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); }
    s = parse_text(buf, base ? base + 1 : path, dir[0] || !base ? dir : "/", out);
    free(dir);
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
