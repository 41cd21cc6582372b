/* SONATA's type tables (sonata_table.h). */
#define _POSIX_C_SOURCE 200809L
#include "io/sonata_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "neurosolve/number.h"

void ns_son_table_free(ns_son_table *t) {
    if (!t) return;
    for (int k = 0; k < t->ncol; ++k) free(t->col[k]);
    free(t->col);
    for (int64_t k = 0; t->cell && k < t->nrow * t->ncol; ++k) free(t->cell[k]);
    free(t->cell);
    free(t->id);
    free(t->line);
    free(t->sorted);
    memset(t, 0, sizeof *t);
}

static void free_fields(char **f, int n) {
    for (int q = 0; q < n; ++q) free(f[q]);
    free(f);
}

/* Split one line [p, end) (no NUL, no line end) into fields (malloc'd strings;
 * NULL for NULL/empty). 0, or -1 out of memory, -2 a quote error, -3 more
 * than NS_SON_TABLE_MAX_COLUMNS fields, -4 a field longer than
 * NS_SON_TABLE_MAX_FIELD. */
static int split_fields(const char *p, const char *end, char ***out, int *n_out) {
    int cap = 8, n = 0;
    char **f = malloc((size_t)cap * sizeof *f);
    if (!f) return -1;
    for (;;) {
        const char *a, *b;
        if (p < end && *p == '"') {
            a = ++p;
            while (p < end && *p != '"') ++p;
            if (p == end) {
                free_fields(f, n);
                return -2;
            }
            b = p++;
        } else {
            a = p;
            while (p < end && *p != ' ') ++p;
            b = p;
        }
        if (b - a > NS_SON_TABLE_MAX_FIELD) {
            free_fields(f, n);
            return -4;
        }
        if (n == NS_SON_TABLE_MAX_COLUMNS) {
            free_fields(f, n);
            return -3;
        }
        if (n == cap) {
            cap *= 2;
            char **g = realloc(f, (size_t)cap * sizeof *g);
            if (!g) {
                free_fields(f, n);
                return -1;
            }
            f = g;
        }
        const size_t k = (size_t)(b - a);
        if (k == 0 || (k == 4 && memcmp(a, "NULL", 4) == 0)) f[n++] = NULL;
        else {
            char *s = malloc(k + 1);
            if (!s) {
                free_fields(f, n);
                return -1;
            }
            memcpy(s, a, k);
            s[k] = 0;
            f[n++] = s;
        }
        if (p < end && *p == ' ') {
            ++p;
            continue;
        }
        if (p < end) { /* text right after a closing quote */
            free_fields(f, n);
            return -2;
        }
        break;
    }
    *out = f;
    *n_out = n;
    return 0;
}

typedef struct idrow {
    int64_t id, row;
} idrow;
static int cmp_idrow(const void *a, const void *b) {
    const idrow *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->row > y->row) - (x->row < y->row);
}

static ns_status add_row(ns_son_table *t, int64_t *rcap, char **fields, int nf, const char *path, int lineno,
                         const char *id_col) {
    if (t->nrow >= NS_SON_TABLE_MAX_TYPES)
        return ns_fail(NS_ERR_SIZE, "%s:%d: more than %d types", path, lineno, NS_SON_TABLE_MAX_TYPES);
    if (t->nrow == *rcap) {
        /* at most 10^6 rows of 256 columns: the products fit easily in 64 bits */
        const int64_t cap = *rcap ? 2 * *rcap : 16;
        char **c = realloc(t->cell, (size_t)(cap * t->ncol) * sizeof *c);
        if (c) t->cell = c;
        int64_t *i = realloc(t->id, (size_t)cap * sizeof *i);
        if (i) t->id = i;
        int *l = realloc(t->line, (size_t)cap * sizeof *l);
        if (l) t->line = l;
        if (!c || !i || !l) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s:%d", path, lineno);
        *rcap = cap;
    }
    int64_t id = 0;
    if (!fields[0]) return ns_fail(NS_ERR_PARSE, "%s:%d: %s: no value", path, lineno, id_col);
    const ns_status st = ns_integer_parse(fields[0], INT64_MIN, INT64_MAX, &id); /* neurosolve/number.h */
    if (st != NS_OK) {
        char pre[4200];
        snprintf(pre, sizeof pre, "%s:%d: %s", path, lineno, id_col);
        ns_error_prefix(pre);
        return st;
    }
    memcpy(&t->cell[t->nrow * t->ncol], fields, (size_t)nf * sizeof *fields);
    t->id[t->nrow] = id;
    t->line[t->nrow] = lineno;
    t->nrow++;
    return NS_OK;
}

static ns_status sort_ids(ns_son_table *t, const char *path, const char *id_col) {
    ns_status st = NS_OK;
    t->sorted = malloc((size_t)(t->nrow > 0 ? t->nrow : 1) * sizeof *t->sorted);
    idrow *pairs = malloc((size_t)(t->nrow > 0 ? t->nrow : 1) * sizeof *pairs);
    if (!t->sorted || !pairs) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    for (int64_t k = 0; st == NS_OK && k < t->nrow; ++k) pairs[k] = (idrow){t->id[k], k};
    if (st == NS_OK) {
        /* rows by id (no global state: readers may run in several threads) */
        qsort(pairs, (size_t)t->nrow, sizeof *pairs, cmp_idrow);
        for (int64_t k = 0; k < t->nrow; ++k) t->sorted[k] = pairs[k].row;
        for (int64_t k = 1; k < t->nrow && st == NS_OK; ++k) {
            const int64_t a = t->sorted[k - 1], b = t->sorted[k];
            if (t->id[a] == t->id[b]) /* the same id: a before b (rows of one id in row order) */
                st = ns_fail(NS_ERR_PARSE, "%s:%d: %s %lld again (line %d)", path, t->line[b], id_col,
                             (long long)t->id[b], t->line[a]);
        }
    }
    free(pairs);
    return st;
}

ns_status ns_son_table_parse(const char *text, size_t length, const char *path, const char *id_col, ns_son_table *t) {
    if (!t || !id_col || (!text && length)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_son_table_parse: NULL argument");
    memset(t, 0, sizeof *t);
    if (!path) path = "(type table)";
    if (length > NS_SON_TABLE_MAX_FILE)
        return ns_fail(NS_ERR_SIZE, "%s: a type table over %zu MiB", path, NS_SON_TABLE_MAX_FILE >> 20);
    const char *p = text, *end = text + length;
    int lineno = 0; /* at most 16 Mi lines */
    int64_t rcap = 0;
    ns_status st = NS_OK;
    while (st == NS_OK && p < end) {
        ++lineno;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (memchr(p, 0, (size_t)(le - p))) {
            st = ns_fail(NS_ERR_PARSE, "%s:%d: a NUL byte (not a text table)", path, lineno);
            break;
        }
        while (le > p && le[-1] == '\r') --le;
        if (le - p > NS_SON_TABLE_MAX_LINE) {
            st = ns_fail(NS_ERR_SIZE, "%s:%d: a line of more than %d bytes", path, lineno, NS_SON_TABLE_MAX_LINE);
            break;
        }
        if (le == p) {
            p = next;
            continue;
        }
        char **fields = NULL;
        int nf = 0;
        const int r = split_fields(p, le, &fields, &nf);
        p = next;
        if (r == -1) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s:%d", path, lineno);
        else if (r == -2)
            st = ns_fail(NS_ERR_PARSE, "%s:%d: an unterminated quote or text after a closing quote", path, lineno);
        else if (r == -3)
            st = ns_fail(NS_ERR_SIZE, "%s:%d: more than %d columns", path, lineno, NS_SON_TABLE_MAX_COLUMNS);
        else if (r == -4)
            st = ns_fail(NS_ERR_SIZE, "%s:%d: a field of more than %d bytes", path, lineno, NS_SON_TABLE_MAX_FIELD);
        if (r != 0) break;
        if (!t->col) {
            t->col = fields;
            t->ncol = nf;
            for (int k = 0; k < nf && st == NS_OK; ++k)
                if (!fields[k]) st = ns_fail(NS_ERR_PARSE, "%s:%d: column %d of the header has no name", path, lineno, k + 1);
            if (st == NS_OK && strcmp(fields[0], id_col) != 0)
                st = ns_fail(NS_ERR_PARSE, "%s:%d: the first column is '%s', not %s (space-separated columns)", path,
                             lineno, fields[0], id_col);
            continue;
        }
        if (nf != t->ncol)
            st = ns_fail(NS_ERR_PARSE, "%s:%d: %d fields, the header has %d (space-separated)", path, lineno, nf,
                         t->ncol);
        else if ((st = add_row(t, &rcap, fields, nf, path, lineno, id_col)) == NS_OK) {
            free(fields);
            continue;
        }
        free_fields(fields, nf);
    }
    if (st == NS_OK && !t->col) st = ns_fail(NS_ERR_PARSE, "%s: empty (a header with %s first is needed)", path, id_col);
    if (st == NS_OK) st = sort_ids(t, path, id_col);
    if (st != NS_OK) ns_son_table_free(t);
    return st;
}

ns_status ns_son_table_read(const char *path, const char *id_col, ns_son_table *t) {
    if (!path || !t) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_son_table_read: NULL argument");
    memset(t, 0, sizeof *t);
    char *buf = NULL;
    size_t n = 0;
    ns_status st = ns_file_read_all(path, NS_SON_TABLE_MAX_FILE, "type table", &buf, &n);
    if (st == NS_OK) st = ns_son_table_parse(buf, n, path, id_col, t);
    free(buf);
    return st;
}

int64_t ns_son_table_row(const ns_son_table *t, int64_t id) {
    int64_t lo = 0, hi = t->nrow - 1;
    while (lo <= hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        const int64_t v = t->id[t->sorted[mid]];
        if (v == id) return t->sorted[mid];
        if (v < id) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

int ns_son_table_col(const ns_son_table *t, const char *name) {
    for (int k = 0; k < t->ncol; ++k)
        if (strcmp(t->col[k], name) == 0) return k;
    return -1;
}

const char *ns_son_table_get(const ns_son_table *t, int64_t row, int col) {
    return col < 0 ? NULL : t->cell[row * t->ncol + col];
}
