/* Probe files: one contact per line (docs/extracellular.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "lfp/lfp_impl.h"

#define PROBE_MAX_BYTES ((size_t)64 << 20)

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
        int nv = 0;
        char *p = s;
        while (*p) {
            while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r' || *p == '\n') ++p;
            if (!*p) break;
            if (nv == 8) {
                st = ns_fail(NS_ERR_PARSE, "%s:%ld: more than 8 values (x y z [nx ny nz r [n]])", name, r.lineno);
                goto fail;
            }
            char *end;
            errno = 0;
            v[nv] = strtod(p, &end);
            if (end == p || !isfinite(v[nv]) || (*end && !strchr(" \t,\r\n", *end))) {
                char tok[32];
                size_t k = 0;
                while (p[k] && !strchr(" \t,\r\n", p[k]) && k < sizeof tok - 1) tok[k] = p[k], ++k;
                tok[k] = 0;
                st = ns_fail(NS_ERR_PARSE, "%s:%ld: '%s' is not a finite number", name, r.lineno, tok);
                goto fail;
            }
            ++nv;
            p = end;
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
        if (out->n == cap) {
            cap = cap ? 2 * cap : 64;
            ns_lfp_contact *g = realloc(out->contacts, (size_t)cap * sizeof *g);
            if (!g) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld contacts", name, (long long)cap);
                goto fail;
            }
            out->contacts = g;
        }
        out->contacts[out->n++] = c;
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
