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
#include "nmodl/nmodl_parse.h"

char *nm_dupn(const char *s, size_t n) {
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}
char *nm_dup(const char *s) { return nm_dupn(s, strlen(s)); }

_Thread_local nm_arena *nm_parse_arena;
char *nm_ar_dupn(const char *s, size_t n) {
    char *r = nm_calloc(nm_parse_arena, n + 1, 1);
    if (r) memcpy(r, s, n);
    return r;
}

int nm_vfail(ns_status *status, ns_status code, const char *file, int line, const char *fmt, va_list ap) {
    if (*status) return -1;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    *status = ns_fail(code, "%s:%d: %s", file, line, msg);
    return -1;
}

int nm_perr(parser *p, ns_status status, int line, const char *fmt, ...) {
    const int f = line >> LINE_BITS;
    va_list ap;
    va_start(ap, fmt);
    nm_vfail(&p->status, status, f < p->n_files ? p->files[f] : p->file, line & ((1 << LINE_BITS) - 1), fmt, ap);
    va_end(ap);
    return -1;
}

/* The first construct that keeps the mechanism on the CPU loop (ns_mech_desc.cuda_why_not) */
void nm_cpu_only(parser *p, int line, const char *what) {
    if (p->m->gpu_why[0]) return;
    const int f = line >> LINE_BITS;
    snprintf(p->m->gpu_why, sizeof p->m->gpu_why, "%s:%d: %s", f < p->n_files ? p->files[f] : p->file,
             line & ((1 << LINE_BITS) - 1), what);
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
    p.m->file = nm_dup(p.file);
    nm_parse_arena = &p.m->arena;
    if (nm_lex(&p, text, 0) == 0 && nm_parse_top(&p) == 0) nm_finish(&p);
    /* the tokens' texts are kept (the AST points at them); the array goes */
    free(p.toks);
    nm_parse_arena = NULL;
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
int nm_read_text(const char *path, char **out, ns_status *status) {
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
    if (nm_read_text(path, &buf, &s)) return s;
    const char *base = strrchr(path, '/');
    char *dir = base ? nm_dupn(path, (size_t)(base - path)) : nm_dup(".");
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
