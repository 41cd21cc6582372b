/* Reading a whole text file with a size cap, and reading a text line by
 * line (core/file.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"

ns_status ns_file_read_all(const char *path, size_t max_bytes, const char *what, char **out, size_t *out_n) {
    *out = NULL;
    *out_n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 14, n = 0;
    char *buf = malloc(cap + 1);
    ns_status st = NS_OK;
    while (buf) {
        if (n == cap) {
            if (cap >= max_bytes) {
                st = ns_fail(NS_ERR_SIZE, "%s: a %s over %zu MiB", path, what, max_bytes >> 20);
                break;
            }
            char *b = realloc(buf, cap * 2 + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        const size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!buf) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: reading the %s", path, what);
    else if (st == NS_OK && ferror(f)) st = ns_fail(NS_ERR_IO, "%s: read error", path);
    fclose(f);
    if (st != NS_OK) {
        free(buf);
        return st;
    }
    buf[n] = 0;
    *out = buf;
    *out_n = n;
    return NS_OK;
}

int ns_lines_next(ns_lines *r, char **s) {
    while (r->at < r->length) {
        size_t j = r->at;
        while (j < r->length && r->text[j] != '\n') ++j;
        ++r->lineno;
        if (j - r->at >= sizeof r->line) {
            ns_fail(NS_ERR_PARSE, "%s:%ld: line longer than %zu characters", r->name, r->lineno,
                    sizeof r->line - 1);
            return -1;
        }
        memcpy(r->line, r->text + r->at, j - r->at);
        r->line[j - r->at] = '\0';
        r->at = j + 1;
        char *hash = strchr(r->line, '#');
        if (hash) *hash = '\0';
        char *p = r->line;
        while (*p == ' ' || *p == '\t' || *p == '\r') ++p;
        if (*p == '\0') continue;
        *s = p;
        return 1;
    }
    return 0;
}
