/* The NMODL lexer (nmodl_parse.h): tokens with their file and line (INCLUDE'd files,
 * CR-only line ends, VERBATIM text), and the token helpers of the parser. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_parse.h"


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
        if (!n) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, t.line, "out of memory");
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


/* INCLUDE "file" at s (after the keyword): the file, relative to the .mod
 * file's folder, lexed in place (nocmodl also searches the working folder
 * and $MODL_INCLUDE, which a library does not read). */
static int lex_include(parser *p, const char *s, size_t *i, int line) {
    while (s[*i] == ' ' || s[*i] == '\t') (*i)++;
    if (s[*i] != '"') return nm_perr(p, NS_ERR_PARSE, line, "INCLUDE needs a file name in quotes");
    size_t b = ++*i;
    while (s[*i] && s[*i] != '"' && !is_eol(s[*i])) (*i)++;
    if (s[*i] != '"') return nm_perr(p, NS_ERR_PARSE, line, "INCLUDE: a file name without its closing '\"'");
    char *name = nm_ar_dupn(s + b, *i - b);
    (*i)++;
    if (!name) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    if (!p->dir) return nm_perr(p, NS_ERR_UNSUPPORTED, line, "INCLUDE \"%s\" in text without a file (parse the file)", name);
    if (p->n_files == NM_MAX_FILES)
        return nm_perr(p, NS_ERR_UNSUPPORTED, line, "INCLUDE \"%s\": more than %d files", name, NM_MAX_FILES - 1);
    size_t n = strlen(p->dir) + strlen(name) + 2;
    char *path = nm_calloc(nm_parse_arena, n, 1);
    if (!path) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    snprintf(path, n, "%s%s%s", name[0] == '/' ? "" : p->dir, name[0] == '/' || !p->dir[0] ? "" : "/", name);
    char *text = NULL;
    ns_status rs = NS_OK;
    if (nm_read_text(path, &text, &rs)) return nm_perr(p, rs, line, "INCLUDE \"%s\": %s", name, ns_last_error());
    char *kept = nm_ar_dupn(text, strlen(text)); /* the tokens point into it */
    free(text);
    if (!kept) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    const char *slash = strrchr(name, '/');
    p->files[p->n_files] = slash ? slash + 1 : name;
    return nm_lex(p, kept, p->n_files++);
}

int nm_lex(parser *p, const char *s, int file) {
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
            if (s[i] != '"') return nm_perr(p, NS_ERR_PARSE, line, "a string without its closing '\"'");
            i++;
            tok t = {T_STR, 0, line, b, i, s, nm_ar_dupn(s + b, i - b), 0};
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
                if (!e) return nm_perr(p, NS_ERR_PARSE, line, "COMMENT without ENDCOMMENT");
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
                p->any_verbatim = 1;
                /* empty: nothing; only `return 0;` (ST_RETURN), what most real files' blocks
                 * hold; other C: T_VERBATIM, compiled as written (nmodl_verbatim.c) */
                const char *e = strstr(s + i, "ENDVERBATIM");
                if (!e) return nm_perr(p, NS_ERR_PARSE, line, "VERBATIM without ENDVERBATIM");
                const size_t n = (size_t)(e - (s + i));
                const int kind = verbatim_kind(s + i, n);
                if (kind) {
                    tok t = {kind == 1 ? T_RETURN : T_VERBATIM, 0, line, b, i, s, kind == 1 ? NULL : nm_ar_dupn(s + i, n), 0};
                    if ((kind < 0 && !t.text) || push(p, t)) return -1;
                }
                line += count_lines(s + i, n);
                i = (size_t)(e - s) + 11;
                continue;
            }
            tok t = {T_NAME, 0, line, b, i, s, nm_ar_dupn(s + b, len), 0};
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
            tok t = {T_NUM, 0, line, b, i, s, nm_ar_dupn(s + b, i - b), 0};
            if (!t.text) return -1;
            t.num = strtod(t.text, NULL);
            if (!isfinite(t.num))
                return nm_perr(p, NS_ERR_PARSE, line, "the number %.40s is out of the range of a double", t.text);
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
            return nm_perr(p, NS_ERR_PARSE, line, "unexpected character '%c'", c);
        }
        if (push(p, (tok){T_PUNCT, punct, line, b, i, s, NULL, 0})) return -1;
    }
    return file ? 0 : push(p, (tok){T_EOF, 0, line, i, i, s, NULL, 0});
}

/* ---- token helpers ---- */

/* The current token; past the end it stays on the final T_EOF, so that a step over a token
 * that was not checked can never read beyond the array (the fuzzer found `FROM` at EOF). */
const char *nm_describe(tok *t) {
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
int nm_expect(parser *p, int c) {
    if (!nm_is_punct(p, c)) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected '%c', found %s", c, nm_describe(nm_cur(p)));
    p->pos++;
    return 0;
}
char *nm_expect_name(parser *p) {
    if (nm_cur(p)->kind != T_NAME) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected a name, found %s", nm_describe(nm_cur(p)));
        return NULL;
    }
    return p->toks[p->pos++].text;
}
int nm_unsupported_name(const char *s) {
    for (int i = 0; UNSUPPORTED[i]; i++)
        if (!strcmp(UNSUPPORTED[i], s)) return 1;
    return 0;
}
/* Skip a units annotation "(...)" if there is one. */
int nm_skip_units(parser *p) {
    if (!nm_is_punct(p, '(')) return 0;
    int depth = 0;
    do {
        if (nm_cur(p)->kind == T_EOF) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "unterminated units");
        if (nm_is_punct(p, '(')) depth++;
        if (nm_is_punct(p, ')')) depth--;
        p->pos++;
    } while (depth > 0);
    return 0;
}
/* Skip a limits annotation "<lo, hi>". */
int nm_skip_limits(parser *p) {
    if (!nm_is_punct(p, '<')) return 0;
    while (!nm_is_punct(p, '>')) {
        if (nm_cur(p)->kind == T_EOF) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "unterminated limits");
        p->pos++;
    }
    p->pos++;
    return 0;
}
