/* A strict JSON reader (json.h). Recursive descent over the text, with the
 * line and column of every error; depth bounded so that a hostile file
 * cannot exhaust the stack. */
#define _POSIX_C_SOURCE 200809L
#include "core/file.h"
#include "core/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/number.h"

typedef struct jp {
    const char *s, *end, *name;
    const char *p;
    int line;
    const char *line_start;
    char err[512];
} jp;

static int jfail(jp *j, const char *fmt, ...) NS_PRINTF_LIKE(2, 3);
static int jfail(jp *j, const char *fmt, ...) {
    if (j->err[0]) return -1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(j->err, sizeof j->err, "%s:%d:%d: %s", j->name, j->line, (int)(j->p - j->line_start) + 1, msg);
    return -1;
}

static void skip_ws(jp *j) {
    while (j->p < j->end) {
        const char c = *j->p;
        if (c == '\n') {
            ++j->line;
            j->line_start = ++j->p;
        } else if (c == ' ' || c == '\t' || c == '\r') ++j->p;
        else break;
    }
}

static const char *show(char c, char buf[8]) {
    if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f) snprintf(buf, 8, "'%c'", c);
    else snprintf(buf, 8, "0x%02x", (unsigned)(unsigned char)c);
    return buf;
}

static int hex4(jp *j, unsigned *out) {
    if (j->end - j->p < 4) return jfail(j, "\\u needs 4 hex digits");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
        const char c = j->p[k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return jfail(j, "\\u needs 4 hex digits");
    }
    j->p += 4;
    *out = v;
    return 0;
}

/* A string at j->p (the opening quote); *out: a new NUL-terminated copy. */
static int parse_string(jp *j, char **out) {
    ++j->p;
    /* the decoded text is never longer than the source */
    const char *q = j->p;
    while (q < j->end && *q != '"') q += (*q == '\\' && q + 1 < j->end) ? 2 : 1;
    if (q >= j->end) return jfail(j, "unterminated string");
    char *buf = malloc((size_t)(q - j->p) + 1);
    if (!buf) return jfail(j, "out of memory");
    size_t n = 0;
    while (*j->p != '"') {
        const unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) {
            free(buf);
            return jfail(j, "control character 0x%02x in a string (escape it)", c);
        }
        if (c != '\\') {
            buf[n++] = (char)c;
            ++j->p;
            continue;
        }
        ++j->p;
        const char e = *j->p++;
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned u;
            if (hex4(j, &u) != 0) {
                free(buf);
                return -1;
            }
            if (u >= 0xDC00 && u <= 0xDFFF) {
                free(buf);
                return jfail(j, "a lone low surrogate \\u%04X", u);
            }
            if (u >= 0xD800 && u <= 0xDBFF) {
                unsigned lo;
                if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u') {
                    free(buf);
                    return jfail(j, "a high surrogate \\u%04X without its low surrogate", u);
                }
                j->p += 2;
                if (hex4(j, &lo) != 0 || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf);
                    return jfail(j, "a high surrogate \\u%04X without its low surrogate", u);
                }
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (u == 0) {
                free(buf);
                return jfail(j, "\\u0000 in a string");
            }
            /* UTF-8: at most 4 bytes for at most 12 source bytes (6 for one \uXXXX) */
            if (u < 0x80) buf[n++] = (char)u;
            else if (u < 0x800) {
                buf[n++] = (char)(0xC0 | (u >> 6));
                buf[n++] = (char)(0x80 | (u & 0x3F));
            } else if (u < 0x10000) {
                buf[n++] = (char)(0xE0 | (u >> 12));
                buf[n++] = (char)(0x80 | ((u >> 6) & 0x3F));
                buf[n++] = (char)(0x80 | (u & 0x3F));
            } else {
                buf[n++] = (char)(0xF0 | (u >> 18));
                buf[n++] = (char)(0x80 | ((u >> 12) & 0x3F));
                buf[n++] = (char)(0x80 | ((u >> 6) & 0x3F));
                buf[n++] = (char)(0x80 | (u & 0x3F));
            }
            break;
        }
        default: {
            char b[8];
            free(buf);
            --j->p;
            return jfail(j, "unknown escape \\%s", show(e, b));
        }
        }
    }
    ++j->p;
    buf[n] = 0;
    if (memchr(buf, 0, n)) { /* a raw NUL byte */
        free(buf);
        return jfail(j, "NUL byte in a string");
    }
    *out = buf;
    return 0;
}

static int parse_number(jp *j, double *out) {
    const char *a = j->p, *p = j->p;
    if (p < j->end && *p == '-') ++p;
    if (p >= j->end) return jfail(j, "a number ends early");
    if (*p == '0') ++p;
    else if (*p >= '1' && *p <= '9')
        while (p < j->end && *p >= '0' && *p <= '9') ++p;
    else return jfail(j, "not a number");
    if (p < j->end && *p >= '0' && *p <= '9') return jfail(j, "a number with a leading zero");
    if (p < j->end && *p == '.') {
        ++p;
        if (p >= j->end || *p < '0' || *p > '9') return jfail(j, "a digit must follow '.'");
        while (p < j->end && *p >= '0' && *p <= '9') ++p;
    }
    if (p < j->end && (*p == 'e' || *p == 'E')) {
        ++p;
        if (p < j->end && (*p == '+' || *p == '-')) ++p;
        if (p >= j->end || *p < '0' || *p > '9') return jfail(j, "a digit must follow the exponent");
        while (p < j->end && *p >= '0' && *p <= '9') ++p;
    }
    if (p - a > 127) return jfail(j, "a number of more than 127 characters");
    /* JSON's grammar above, the value through the one number reader
     * (neurosolve/number.h): overflow and subnormals refused as everywhere */
    double v;
    if (ns_number_span(a, (size_t)(p - a), -HUGE_VAL, HUGE_VAL, &v) != NS_OK) return jfail(j, "%s", ns_last_error());
    *out = v;
    j->p = p;
    return 0;
}

static int parse_value(jp *j, ns_json *v, int depth);

static int literal(jp *j, const char *word) {
    const size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0) {
        char b[8];
        return jfail(j, "unexpected %s", show(*j->p, b));
    }
    j->p += n;
    return 0;
}

static void free_value(ns_json *v) {
    free(v->string);
    for (size_t k = 0; k < v->n; ++k) {
        free_value(&v->items[k]);
        if (v->keys) free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
}

/* The keys of one object as a hash set of their indices (open addressing,
 * linear probing, at most half full), so that the duplicate check costs
 * O(1) per key instead of a scan of the keys before it (objects of up to 16
 * keys are scanned: no table). */
typedef struct keyset {
    size_t *slot; /* index + 1; 0: empty */
    size_t mask;  /* capacity - 1 (a power of two), 0 before the first key */
} keyset;

static uint64_t key_hash(const char *s) { return ns_fnv1a(NS_FNV_OFFSET, s, strlen(s)); }

static void keyset_put(keyset *ks, char **keys, size_t index) {
    size_t i = (size_t)key_hash(keys[index]) & ks->mask;
    while (ks->slot[i]) i = (i + 1) & ks->mask;
    ks->slot[i] = index + 1;
}

/* Adds keys[n] (keys 0..n-1 are in the set): 1 when it duplicates one of
 * them, -1 when out of memory, else 0. */
static int keyset_add(keyset *ks, char **keys, size_t n) {
    if (n < 16) { /* a small object: a scan, no table */
        for (size_t k = 0; k < n; ++k)
            if (strcmp(keys[k], keys[n]) == 0) return 1;
        return 0;
    }
    if (2 * (n + 1) > ks->mask + 1 || !ks->slot) {
        size_t cap = ks->mask ? 2 * (ks->mask + 1) : 16;
        while (2 * (n + 1) > cap) cap *= 2;
        size_t *slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        free(ks->slot);
        ks->slot = slot;
        ks->mask = cap - 1;
        for (size_t k = 0; k < n; ++k) keyset_put(ks, keys, k);
    }
    size_t i = (size_t)key_hash(keys[n]) & ks->mask;
    for (; ks->slot[i]; i = (i + 1) & ks->mask)
        if (strcmp(keys[ks->slot[i] - 1], keys[n]) == 0) return 1;
    ks->slot[i] = n + 1;
    return 0;
}

static int parse_members_in(jp *j, ns_json *v, int depth, int object, keyset *seen);

/* An array or an object: members until the closing bracket. */
static int parse_members(jp *j, ns_json *v, int depth, int object) {
    keyset ks = {NULL, 0};
    const int r = parse_members_in(j, v, depth, object, &ks);
    free(ks.slot);
    return r;
}

static int parse_members_in(jp *j, ns_json *v, int depth, int object, keyset *seen) {
    const char close = object ? '}' : ']';
    ++j->p;
    size_t cap = 0;
    skip_ws(j);
    if (j->p < j->end && *j->p == close) {
        ++j->p;
        return 0;
    }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? 2 * cap : 4;
            ns_json *it = realloc(v->items, cap * sizeof *it);
            if (!it) return jfail(j, "out of memory");
            v->items = it;
            if (object) {
                char **ks = realloc(v->keys, cap * sizeof *ks);
                if (!ks) return jfail(j, "out of memory");
                v->keys = ks;
            }
        }
        char *key = NULL;
        skip_ws(j);
        if (object) {
            if (j->p >= j->end || *j->p != '"') return jfail(j, "expected a key (a string)");
            if (parse_string(j, &key) != 0) return -1;
            v->keys[v->n] = key;
            const int dup = keyset_add(seen, v->keys, v->n);
            if (dup != 0) {
                if (dup > 0) jfail(j, "duplicate key \"%.100s\"", key);
                else jfail(j, "out of memory");
                free(key);
                return -1;
            }
            skip_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                free(key);
                return jfail(j, "expected ':' after a key");
            }
            ++j->p;
        }
        memset(&v->items[v->n], 0, sizeof v->items[v->n]);
        ++v->n; /* counted now so that a failure frees it */
        if (parse_value(j, &v->items[v->n - 1], depth + 1) != 0) return -1;
        skip_ws(j);
        if (j->p >= j->end) return jfail(j, "expected ',' or '%c' before the end", close);
        if (*j->p == ',') {
            ++j->p;
            continue;
        }
        if (*j->p == close) {
            ++j->p;
            return 0;
        }
        char b[8];
        return jfail(j, "expected ',' or '%c', got %s", close, show(*j->p, b));
    }
}

static int parse_value(jp *j, ns_json *v, int depth) {
    skip_ws(j);
    if (depth > NS_JSON_MAX_DEPTH) return jfail(j, "nested deeper than %d", NS_JSON_MAX_DEPTH);
    if (j->p >= j->end) return jfail(j, "expected a value before the end");
    v->line = j->line;
    switch (*j->p) {
    case '{': v->kind = NS_JSON_OBJECT; return parse_members(j, v, depth, 1);
    case '[': v->kind = NS_JSON_ARRAY; return parse_members(j, v, depth, 0);
    case '"': v->kind = NS_JSON_STRING; return parse_string(j, &v->string);
    case 't': v->kind = NS_JSON_TRUE; return literal(j, "true");
    case 'f': v->kind = NS_JSON_FALSE; return literal(j, "false");
    case 'n': v->kind = NS_JSON_NULL; return literal(j, "null");
    default:
        if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9')) {
            v->kind = NS_JSON_NUMBER;
            return parse_number(j, &v->number);
        }
        {
            char b[8];
            return jfail(j, "unexpected %s (expected a value)", show(*j->p, b));
        }
    }
}

ns_status ns_json_parse(const char *text, size_t length, const char *name, ns_json **out) {
    if (!out || (!text && length)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_json_parse: NULL argument");
    *out = NULL;
    jp j = {text, text + length, name ? name : "(json)", text, 1, text, ""};
    ns_json *root = calloc(1, sizeof *root);
    if (!root) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", j.name);
    int r = parse_value(&j, root, 0);
    if (r == 0) {
        skip_ws(&j);
        if (j.p < j.end) {
            char b[8];
            r = jfail(&j, "%s after the value", show(*j.p, b));
        }
    }
    if (r != 0) {
        ns_json_free(root);
        return ns_fail(NS_ERR_PARSE, "%s", j.err);
    }
    *out = root;
    return NS_OK;
}

ns_status ns_json_read(const char *path, ns_json **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_json_read: NULL argument");
    *out = NULL;
    char *buf = NULL;
    size_t n = 0;
    ns_status st = ns_file_read_all(path, NS_JSON_MAX_FILE, "JSON file", &buf, &n);
    if (st == NS_OK) st = ns_json_parse(buf, n, path, out);
    free(buf);
    return st;
}

void ns_json_free(ns_json *root) {
    if (!root) return;
    free_value(root);
    free(root);
}

const ns_json *ns_json_get(const ns_json *obj, const char *key) {
    if (!obj || obj->kind != NS_JSON_OBJECT || !key) return NULL;
    for (size_t k = 0; k < obj->n; ++k)
        if (strcmp(obj->keys[k], key) == 0) return &obj->items[k];
    return NULL;
}

const char *ns_json_kind_name(ns_json_kind kind) {
    static const char *const names[] = {"null", "false", "true", "a number", "a string", "an array", "an object"};
    return (unsigned)kind <= NS_JSON_OBJECT ? names[kind] : "?";
}
