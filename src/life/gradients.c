/* FSL b-values / b-vectors: whitespace-separated numbers, one row of n
 * b-values [s/mm^2]; three rows of n vector components (or n rows of three,
 * which some converters write and DIPY accepts). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/number.h"
#include "neurosolve/life_io.h"

typedef struct table {
    double *v;
    int64_t n, cap;
    int rows;          /* non-empty lines */
    int64_t first_row; /* numbers on the first non-empty line */
    int ragged;        /* lines with differing counts */
} table;

static ns_status read_numbers(const char *path, table *t) {
    memset(t, 0, sizeof *t);
    t->first_row = -1;
    FILE *f = fopen(path, "r");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    ns_status s = NS_OK;
    int lineno = 0;
    while (s == NS_OK && (len = getline(&line, &cap, f)) >= 0) {
        ++lineno;
        int64_t on_line = 0;
        char *p = line;
        for (;;) {
            while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ',') ++p;
            if (!*p || *p == '#') break;
            /* a field up to the next separator, through the one number reader (neurosolve/number.h) */
            char *end = p + strcspn(p, " \t\r\n,#");
            double x;
            if ((s = ns_number_span(p, (size_t)(end - p), -HUGE_VAL, HUGE_VAL, &x)) != NS_OK) {
                char pre[4200];
                snprintf(pre, sizeof pre, "%s:%d", path, lineno);
                ns_error_prefix(pre);
                break;
            }
            if (t->n == t->cap) {
                const int64_t nc = t->cap ? 2 * t->cap : 64;
                double *nv = realloc(t->v, (size_t)nc * sizeof *nv);
                if (!nv) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path); break; }
                t->v = nv, t->cap = nc;
            }
            t->v[t->n++] = x;
            ++on_line;
            p = end;
        }
        if (on_line > 0) {
            if (t->first_row < 0) t->first_row = on_line;
            else if (on_line != t->first_row) t->ragged = 1;
            ++t->rows;
        }
    }
    if (s == NS_OK && ferror(f)) s = ns_fail(NS_ERR_IO, "%s: read error", path);
    free(line);
    fclose(f);
    if (s == NS_OK && t->n == 0) s = ns_fail(NS_ERR_EMPTY, "%s: no numbers", path);
    if (s != NS_OK) free(t->v), t->v = NULL;
    return s;
}

ns_status ns_gradients_read(const char *bvals_path, const char *bvecs_path, ns_gradients *out) {
    if (!bvals_path || !bvecs_path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_gradients_read: NULL argument");
    memset(out, 0, sizeof *out);
    table b, g;
    ns_status s = read_numbers(bvals_path, &b);
    if (s != NS_OK) return s;
    if ((s = read_numbers(bvecs_path, &g)) != NS_OK) {
        free(b.v);
        return s;
    }
    const int64_t n = b.n;
    if (b.rows > 1 && b.first_row > 1)
        s = ns_fail(NS_ERR_PARSE, "%s: %d rows of b-values; expected one row (or one column)", bvals_path, b.rows);
    else if (n > INT32_MAX)
        s = ns_fail(NS_ERR_SIZE, "%s: too many b-values", bvals_path);
    else if (g.n != 3 * n)
        s = ns_fail(NS_ERR_SIZE, "%s has %lld numbers but %s has %lld b-values: expected 3 x %lld", bvecs_path,
                    (long long)g.n, bvals_path, (long long)n, (long long)n);
    else if (g.ragged)
        s = ns_fail(NS_ERR_PARSE, "%s: rows of different lengths", bvecs_path);
    else if (!((g.rows == 3 && g.first_row == n) || (g.rows == n && g.first_row == 3)))
        s = ns_fail(NS_ERR_SIZE, "%s: %d rows of %lld numbers; expected 3 rows of %lld (or %lld rows of 3)",
                    bvecs_path, g.rows, (long long)g.first_row, (long long)n, (long long)n);
    for (int64_t i = 0; s == NS_OK && i < n; ++i)
        if (b.v[i] < 0) s = ns_fail(NS_ERR_PARSE, "%s: b-value %lld = %g is negative", bvals_path, (long long)i, b.v[i]);
    if (s == NS_OK) {
        out->n = (int32_t)n;
        out->bvals = b.v;
        out->bvecs = malloc((size_t)(3 * n) * sizeof *out->bvecs);
        if (!out->bvecs) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", bvecs_path);
        /* n = 3 is ambiguous; FSL's three rows win, as in FSL and DIPY. */
        const int rows_of_n = g.rows == 3 && g.first_row == n;
        for (int64_t i = 0; s == NS_OK && i < n; ++i)
            for (int c = 0; c < 3; ++c) out->bvecs[3 * i + c] = rows_of_n ? g.v[c * n + i] : g.v[3 * i + c];
        b.v = NULL;
    }
    free(b.v);
    free(g.v);
    if (s != NS_OK) ns_gradients_free(out);
    return s;
}

void ns_gradients_free(ns_gradients *g) {
    if (!g) return;
    free(g->bvals);
    free(g->bvecs);
    memset(g, 0, sizeof *g);
}
