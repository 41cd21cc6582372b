/* Probe files: one contact per line, or a line electrode's contacts; and the
 * placement and population files beside them: one reader of lines of numbers
 * (docs/extracellular.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "core/number.h"
#include "lfp/lfp_impl.h"

#define PROBE_MAX_BYTES ((size_t)64 << 20)
#define LINE_MAX_CONTACTS 1000000
#define MAX_POPULATION 1000000
#define SEPARATORS " \t,\r\n"

/* The numbers of one line (s from ns_lines_next) separated by blanks or commas, each by the one
 * number reader (ns_number_span): at most `max` into v. Their count, or -1 with the error set as
 * "NAME:LINE: why" (`form` says what a line holds). */
static int line_numbers(const char *s, const char *name, long lineno, double *v, int max, const char *form) {
    char where[1100];
    snprintf(where, sizeof where, "%s:%ld", name, lineno);
    int nv = 0;
    for (const char *p = s + strspn(s, SEPARATORS); *p; p += strspn(p, SEPARATORS)) {
        const size_t len = strcspn(p, SEPARATORS);
        if (nv == max) {
            ns_fail(NS_ERR_PARSE, "%s: more than %d values (%s)", where, max, form);
            return -1;
        }
        if (ns_number_span(p, len, -HUGE_VAL, HUGE_VAL, &v[nv]) != NS_OK) {
            ns_error_prefix(where);
            return -1;
        }
        ++nv;
        p += len;
    }
    return nv;
}

static ns_status push(ns_lfp_probe *out, int64_t *cap, const ns_lfp_contact *c, const char *name) {
    if (out->n == *cap) {
        const int64_t n = *cap ? 2 * *cap : 64;
        ns_lfp_contact *g = realloc(out->contacts, (size_t)n * sizeof *g);
        if (!g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld contacts", name, (long long)n);
        out->contacts = g;
        *cap = n;
    }
    out->contacts[out->n++] = *c;
    return NS_OK;
}

/* count point contacts evenly from a to b (both ends included) */
static ns_status push_line(ns_lfp_probe *out, int64_t *cap, const double *a, const double *b, int64_t count,
                           const char *name) {
    for (int64_t k = 0; k < count; ++k) {
        const double f = (double)k / (double)(count - 1);
        const ns_lfp_contact c = {a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2]),
                                  0.0, 0.0, 0.0, 0.0, 1};
        ns_status st = push(out, cap, &c, name);
        if (st != NS_OK) return st;
    }
    return NS_OK;
}

ns_status ns_lfp_probe_line(const double start[3], const double end[3], int64_t count, ns_lfp_probe *out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_probe_line: out is NULL");
    out->n = 0;
    out->contacts = NULL;
    if (!start || !end) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_probe_line: NULL argument");
    for (int k = 0; k < 3; ++k)
        if (!isfinite(start[k]) || !isfinite(end[k]))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "line electrode: an end is not finite");
    if (count < 2 || count > LINE_MAX_CONTACTS)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "line electrode: %lld contacts (2 to %d)", (long long)count,
                       LINE_MAX_CONTACTS);
    int64_t cap = 0;
    ns_status st = push_line(out, &cap, start, end, count, "line electrode");
    if (st != NS_OK) ns_lfp_probe_free(out);
    return st;
}

void ns_lfp_probe_free(ns_lfp_probe *p) {
    if (!p) return;
    free(p->contacts);
    p->contacts = NULL;
    p->n = 0;
}

ns_status ns_lfp_probe_parse(const char *text, size_t length, const char *name, int32_t default_points,
                             ns_lfp_probe *out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_probe_parse: out is NULL");
    out->n = 0;
    out->contacts = NULL;
    if (!text) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_probe_parse: text is NULL");
    if (!name) name = "probe";
    if (default_points < 1 || default_points > NS_LFP_MAX_POINTS)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %d points per disc (1 to %d)", name, (int)default_points,
                       NS_LFP_MAX_POINTS);
    ns_lines r;
    memset(&r, 0, sizeof r);
    r.text = text, r.length = length, r.name = name;
    int64_t cap = 0;
    char *s;
    int got;
    ns_status st = NS_OK;
    while ((got = ns_lines_next(&r, &s)) > 0) {
        double v[8];
        const char *p = s;
        const int line = strncmp(p, "line", 4) == 0 && (p[4] == ' ' || p[4] == '\t');
        if (line) p += 4;
        const int nv = line_numbers(p, name, r.lineno, v, 8, line ? "line x0 y0 z0 x1 y1 z1 count" : "x y z [nx ny nz r [n]]");
        if (nv < 0) {
            st = NS_ERR_PARSE;
            goto fail;
        }
        if (line) {
            if (nv != 7 || v[6] != floor(v[6]) || v[6] < 2 || v[6] > LINE_MAX_CONTACTS) {
                st = ns_fail(NS_ERR_PARSE, "%s:%ld: a line electrode is `line x0 y0 z0 x1 y1 z1 count` (count a whole "
                             "number from 2 to %d)", name, r.lineno, LINE_MAX_CONTACTS);
                goto fail;
            }
            if ((st = push_line(out, &cap, v, v + 3, (int64_t)v[6], name)) != NS_OK) goto fail;
            continue;
        }
        if (nv != 3 && nv != 7 && nv != 8) {
            st = ns_fail(NS_ERR_PARSE, "%s:%ld: %d values; a contact is `x y z` or `x y z nx ny nz r [n]`", name,
                         r.lineno, nv);
            goto fail;
        }
        ns_lfp_contact c = {v[0], v[1], v[2], 0.0, 0.0, 0.0, 0.0, 1};
        if (nv >= 7) {
            c.nx = v[3], c.ny = v[4], c.nz = v[5], c.r = v[6];
            c.n = default_points;
            if (nv == 8) {
                if (v[7] != floor(v[7]) || v[7] < 1 || v[7] > NS_LFP_MAX_POINTS) {
                    st = ns_fail(NS_ERR_PARSE, "%s:%ld: %g points on a disc: a whole number from 1 to %d", name,
                                 r.lineno, v[7], NS_LFP_MAX_POINTS);
                    goto fail;
                }
                c.n = (int32_t)v[7];
            }
            if (c.r < 0.0) {
                st = ns_fail(NS_ERR_PARSE, "%s:%ld: disc radius %g < 0", name, r.lineno, c.r);
                goto fail;
            }
            if (c.r > 0.0 && c.nx == 0.0 && c.ny == 0.0 && c.nz == 0.0) {
                st = ns_fail(NS_ERR_PARSE, "%s:%ld: a disc's normal (0, 0, 0)", name, r.lineno);
                goto fail;
            }
        }
        if ((st = push(out, &cap, &c, name)) != NS_OK) goto fail;
    }
    if (got < 0) {
        st = NS_ERR_PARSE;
        goto fail;
    }
    if (out->n == 0) {
        st = ns_fail(NS_ERR_EMPTY, "%s: no contacts", name);
        goto fail;
    }
    return NS_OK;
fail:
    ns_lfp_probe_free(out);
    return st;
}

ns_status ns_lfp_probe_read(const char *path, int32_t default_points, ns_lfp_probe *out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_probe_read: NULL argument");
    out->n = 0;
    out->contacts = NULL;
    char *buf;
    size_t n;
    ns_status st = ns_file_read_all(path, PROBE_MAX_BYTES, "probe file", &buf, &n);
    if (st != NS_OK) return st;
    st = ns_lfp_probe_parse(buf, n, path, default_points, out);
    free(buf);
    return st;
}

ns_status ns_lfp_cell_table_parse(const char *text, size_t length, const char *name, ns_lfp_cell_table kind,
                                  int64_t n_cells, double *out) {
    if (!text || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_cell_table_parse: NULL argument");
    if (!name) name = kind == NS_LFP_PLACEMENTS ? "placements" : "populations";
    if (kind != NS_LFP_PLACEMENTS && kind != NS_LFP_POPULATIONS)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: table kind %d (placements or populations)", name, (int)kind);
    if (n_cells < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %lld cells", name, (long long)n_cells);
    const int width = kind == NS_LFP_PLACEMENTS ? 6 : 1;
    const char *form = kind == NS_LFP_PLACEMENTS ? "a placement is x y z rx ry rz"
                                                 : "a population is one whole number from 0 to 1000000";
    double *rows = malloc((size_t)(n_cells > 0 ? n_cells : 1) * (size_t)width * sizeof *rows);
    if (!rows) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld cells", name, (long long)n_cells);
    ns_lines r;
    memset(&r, 0, sizeof r);
    r.text = text, r.length = length, r.name = name;
    char *s;
    int got = 0;
    int64_t c = 0;
    ns_status st = NS_OK;
    while (st == NS_OK && (got = ns_lines_next(&r, &s)) > 0) {
        double v[6];
        const int nv = line_numbers(s, name, r.lineno, v, width, form);
        if (nv < 0) st = NS_ERR_PARSE;
        else if (nv != width)
            st = ns_fail(NS_ERR_PARSE, "%s:%ld: %d values; %s", name, r.lineno, nv, form);
        else if (kind == NS_LFP_POPULATIONS && !(v[0] == floor(v[0]) && v[0] >= 0.0 && v[0] <= MAX_POPULATION))
            st = ns_fail(NS_ERR_PARSE, "%s:%ld: %.17g: %s", name, r.lineno, v[0], form);
        else if (c == n_cells)
            st = ns_fail(NS_ERR_PARSE, "%s:%ld: more lines than the %lld cells", name, r.lineno, (long long)n_cells);
        else
            memcpy(rows + width * c++, v, (size_t)width * sizeof *v);
    }
    if (st == NS_OK && got < 0) st = NS_ERR_PARSE;
    if (st == NS_OK && c != n_cells)
        st = ns_fail(NS_ERR_PARSE, "%s: %lld lines for %lld cells (%s, one per cell)", name, (long long)c,
                     (long long)n_cells, form);
    if (st == NS_OK) memcpy(out, rows, (size_t)n_cells * (size_t)width * sizeof *rows);
    free(rows);
    return st;
}

ns_status ns_lfp_cell_table_read(const char *path, ns_lfp_cell_table kind, int64_t n_cells, double *out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_lfp_cell_table_read: NULL argument");
    char *buf;
    size_t n;
    ns_status st = ns_file_read_all(path, PROBE_MAX_BYTES, kind == NS_LFP_PLACEMENTS ? "placement file" : "population file",
                                    &buf, &n);
    if (st != NS_OK) return st;
    st = ns_lfp_cell_table_parse(buf, n, path, kind, n_cells, out);
    free(buf);
    return st;
}
