/* Private: the NMODL translator's front end, shared by its files (nmodl_parse.c: the
 * parser's state, errors and the public calls; nmodl_lex.c: the lexer and the token
 * helpers; nmodl_parse_st.c: expressions and statements; nmodl_parse_decl.c: the
 * NEURON block, declarations and the top level; nmodl_check.c: the checks after the
 * parse that give every variable its class, field and global). */
#ifndef NS_NMODL_PARSE_H
#define NS_NMODL_PARSE_H

#include <stddef.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

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
    int any_verbatim; /* a VERBATIM block, empty ones too (nocmodl: "not thread safe" without THREADSAFE) */
    int in_hook;    /* check_list is in a BEFORE/AFTER block (1), CONSTRUCTOR or DESTRUCTOR (2) */
    const stlist *vbody; /* check_list's block: names its VERBATIM C declares are C's (nm_verbatim_declares) */
} parser;

#define MAX_DEPTH 600 /* three per parenthesis: parse_expr, parse_unary, parse_power */
#define MAX_SLOTS 1000000 /* fields, and GLOBALs, of a mechanism */
#define MAX_TABLE 100000000 /* values of a mechanism's TABLEs (800 MB) */
#define MAX_TREE 500 /* operations deep: real files stay under 50, and every pass over a tree recurses (a 1,800-deep chain overflowed the fuzzer's stack) */

/* The AST, token texts and name lists of the module being parsed live in its
 * arena (freed by ns_nmodl_destroy): the parser's error paths leak nothing. */
extern _Thread_local nm_arena *nm_parse_arena;

/* The current token; past the end it stays on the final T_EOF, so that a step over a token
 * that was not checked can never read beyond the array (the fuzzer found `FROM` at EOF). */
static inline tok *nm_cur(parser *p) { return &p->toks[p->pos < p->n ? p->pos : p->n - 1]; }
static inline int nm_is_punct(parser *p, int c) { return nm_cur(p)->kind == T_PUNCT && nm_cur(p)->punct == c; }
static inline int nm_is_name(parser *p, const char *s) {
    return nm_cur(p)->kind == T_NAME && !strcmp(nm_cur(p)->text, s);
}

/* nmodl_parse.c */
char *nm_dupn(const char *s, size_t n); /* malloc'd */
char *nm_dup(const char *s);
char *nm_ar_dupn(const char *s, size_t n); /* in the module's arena */
int nm_perr(parser *p, ns_status status, int line, const char *fmt, ...) NS_PRINTF_LIKE(4, 5); /* FILE:LINE; -1 */
void nm_cpu_only(parser *p, int line, const char *what);
int nm_read_text(const char *path, char **out, ns_status *status);

/* nmodl_lex.c */
int nm_lex(parser *p, const char *s, int file);
const char *nm_describe(tok *t);
int nm_expect(parser *p, int c);
char *nm_expect_name(parser *p);
int nm_unsupported_name(const char *s);
int nm_skip_units(parser *p);
int nm_skip_limits(parser *p);

/* nmodl_parse_st.c */
int nm_add_st(parser *p, stlist *l, st *s);
int nm_add_name(char ***list, int *n, char *name);
int nm_parse_dim(parser *p, int *size);
st *nm_parse_statement(parser *p, stlist *l, block *owner);
stlist *nm_parse_block(parser *p, block *owner);

/* nmodl_parse_decl.c */
var *nm_var(struct ns_nmodl *m, const char *name);
int nm_is_special(const char *n);
var *nm_add_var(parser *p, const char *name, int cls, double value, int line);
int nm_parse_top(parser *p);

/* nmodl_check.c */
int nm_in_list(char **l, int n, const char *s);
int nm_finish(parser *p);
#endif
