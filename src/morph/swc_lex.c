/* SWC lines -> records: splitting fields, checking numbers and the column
 * count. One call per line; nothing here knows about the tree. */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "morph/swc_impl.h"

#define SWC_COLUMNS 7
/* Longest field we convert; no real number needs more characters. */
#define SWC_FIELD_MAX 96

static const char *const field_names[SWC_COLUMNS] = {"id", "type", "x", "y", "z", "radius",
                                                       "parent"};

void swc_records_init(swc_records *rec, const char *name, double scale) {
    memset(rec, 0, sizeof *rec);
    rec->name = name;
    rec->scale = scale;
    const struct lconv *lc = localeconv();
    rec->decimal_point = (lc && lc->decimal_point && lc->decimal_point[0]) ? lc->decimal_point[0] : '.';
}

void swc_records_free(swc_records *rec) {
    free(rec->pts);
    free(rec->pid);
    rec->pts = NULL;
    rec->pid = NULL;
    rec->n = rec->cap = 0;
}

/* Blanks separate fields; '\r' counts as one so that CRLF and stray CRs
 * (several CRs before the LF) are harmless. */
static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

typedef struct field {
    const char *s;
    size_t n;
} field;

/* A printable, shortened copy of a field for messages. */
static void show(const field *f, char *out, size_t cap) {
    size_t n = f->n, k = 0, limit = cap - 4;
    for (size_t i = 0; i < n && k < limit; ++i) {
        unsigned char c = (unsigned char)f->s[i];
        out[k++] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    if (n > limit) {
        out[k++] = '.';
        out[k++] = '.';
        out[k++] = '.';
    }
    out[k] = '\0';
}

/* Decimal syntax only: [+-] digits [. digits] [e [+-] digits]. strtod alone
 * would also take hex, "nan", "inf" and "infinity". */
static int decimal_syntax(const char *s, size_t n) {
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
    if (i < n && s[i] == '.') {
        ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
    }
    if (digits == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
        size_t e = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++e;
        if (e == 0) return 0;
    }
    return i == n;
}

static int names_non_finite(const char *s, size_t n) {
    size_t i = (n > 0 && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (n - i < 3) return 0;
    char a = (char)(s[i] | 0x20), b = (char)(s[i + 1] | 0x20), c = (char)(s[i + 2] | 0x20);
    return (a == 'n' && b == 'a' && c == 'n') || (a == 'i' && b == 'n' && c == 'f');
}

static ns_status bad_field(const swc_records *rec, int column, const field *f, const char *why) {
    char text[48];
    show(f, text, sizeof text);
    return ns_fail(NS_ERR_PARSE, "%s:%lld: field %d (%s) '%s' %s", rec->name, (long long)rec->line,
                   column + 1, field_names[column], text, why);
}

/* Exact powers of ten: every 10^k with k <= 22 is a double. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Fast path for the usual SWC numbers (syntax already checked): with at
 * most 15 significant digits m and |exponent| <= 22, m and 10^k are exact
 * doubles and one multiplication or division rounds correctly, so the
 * result equals strtod's. Returns 0 when the number needs strtod. */
static int fast_decimal(const char *s, size_t n, double *out) {
    size_t i = 0;
    int negative = 0;
    if (s[0] == '+' || s[0] == '-') negative = s[i++] == '-';
    uint64_t m = 0;
    int digits = 0, exp10 = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; ++i) {
        if (m == 0 && s[i] == '0') continue; /* leading zeros */
        if (++digits > 15) return 0;
        m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (++i; i < n && s[i] >= '0' && s[i] <= '9'; ++i) {
            if (m == 0 && s[i] == '0') {
                --exp10;
                continue;
            }
            if (++digits > 15) return 0;
            m = m * 10 + (uint64_t)(s[i] - '0');
            --exp10;
        }
    }
    if (i < n) { /* exponent */
        ++i;
        int eneg = 0, e = 0;
        if (s[i] == '+' || s[i] == '-') eneg = s[i++] == '-';
        for (; i < n; ++i) {
            if (e > 1000) return 0;
            e = e * 10 + (s[i] - '0');
        }
        exp10 += eneg ? -e : e;
    }
    double v = (double)m;
    if (m != 0) {
        if (exp10 < -22 || exp10 > 22) return 0;
        v = exp10 < 0 ? v / pow10_exact[-exp10] : v * pow10_exact[exp10];
    }
    *out = negative ? -v : v;
    return 1;
}

/* A finite decimal number. */
static ns_status parse_real(const swc_records *rec, int column, const field *f, double *out) {
    if (!decimal_syntax(f->s, f->n))
        return bad_field(rec, column, f,
                         names_non_finite(f->s, f->n) ? "is not a finite number" : "is not a number");
    if (fast_decimal(f->s, f->n, out)) return NS_OK;
    if (f->n >= SWC_FIELD_MAX) return bad_field(rec, column, f, "is too long for a number");
    char buf[SWC_FIELD_MAX];
    memcpy(buf, f->s, f->n);
    buf[f->n] = '\0';
    if (rec->decimal_point != '.') {
        /* strtod follows the locale; the file always uses '.' */
        char *dot = strchr(buf, '.');
        if (dot) *dot = rec->decimal_point;
    }
    double v = strtod(buf, NULL);
    if (!isfinite(v)) return bad_field(rec, column, f, "is out of range");
    *out = v;
    return NS_OK;
}

/* An integer; "3", "-1" and integral decimals such as "3.0" or "1e3" are
 * accepted (some writers print every column as a float), "1.5" is not. */
static ns_status parse_integer(const swc_records *rec, int column, const field *f, int64_t *out) {
    size_t i = (f->n > 0 && (f->s[0] == '+' || f->s[0] == '-')) ? 1 : 0;
    int plain = i < f->n;
    for (size_t k = i; k < f->n; ++k)
        if (f->s[k] < '0' || f->s[k] > '9') plain = 0;
    if (plain && f->n - i <= 19) { /* up to 19 digits fit a uint64: any int64 is accepted */
        uint64_t v = 0;
        for (size_t k = i; k < f->n; ++k) v = v * 10 + (uint64_t)(f->s[k] - '0');
        const int negative = f->s[0] == '-';
        if (v > (uint64_t)INT64_MAX + (negative ? 1u : 0u))
            return bad_field(rec, column, f, "is out of range (integers must fit in int64)");
        *out = negative ? (v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v) : (int64_t)v;
        return NS_OK;
    }
    double v;
    ns_status s = parse_real(rec, column, f, &v);
    if (s != NS_OK) return s;
    if (v != floor(v)) return bad_field(rec, column, f, "is not an integer");
    if (fabs(v) > 9007199254740992.0) /* 2^53: beyond it doubles skip integers */
        return bad_field(rec, column, f, "is out of range");
    *out = (int64_t)v;
    return NS_OK;
}

static ns_status grow(swc_records *rec) {
    int64_t cap = rec->cap ? rec->cap * 2 : 1024;
    if (cap > INT32_MAX) cap = INT32_MAX; /* parent indices are int32 */
    if (rec->n >= cap)
        return ns_fail(NS_ERR_SIZE, "%s:%lld: more than %d points", rec->name, (long long)rec->line,
                       INT32_MAX - 1);
    ns_morph_point *p = realloc(rec->pts, (size_t)cap * sizeof *p);
    if (!p) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld points", rec->name, (long long)cap);
    rec->pts = p;
    int64_t *q = realloc(rec->pid, (size_t)cap * sizeof *q);
    if (!q) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld points", rec->name, (long long)cap);
    rec->pid = q;
    rec->cap = cap;
    return NS_OK;
}

ns_status swc_lex_line(swc_records *rec, const char *line, size_t length) {
    rec->line++;
    const char *s = line, *end = line + length;
    /* A UTF-8 byte-order mark before the first line is not content. */
    if (rec->line == 1 && length >= 3 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
        (unsigned char)s[2] == 0xBF)
        s += 3;

    field f[SWC_COLUMNS];
    int count = 0;
    while (s < end) {
        while (s < end && is_blank(*s)) ++s;
        if (s == end || *s == '#') break; /* '#' at a field start comments out the rest */
        const char *start = s;
        while (s < end && !is_blank(*s)) ++s;
        if (count < SWC_COLUMNS) {
            f[count].s = start;
            f[count].n = (size_t)(s - start);
        }
        ++count;
    }
    if (count == 0) return NS_OK; /* blank or comment */
    if (count != SWC_COLUMNS)
        return ns_fail(NS_ERR_PARSE,
                       "%s:%lld: %d field%s, expected 7 (id type x y z radius parent)%s", rec->name,
                       (long long)rec->line, count, count == 1 ? "" : "s",
                       count > SWC_COLUMNS ? "; extra columns are not supported" : "");

    int64_t id, type, parent;
    double v[4];
    ns_status st;
    if ((st = parse_integer(rec, 0, &f[0], &id)) != NS_OK) return st;
    if ((st = parse_integer(rec, 1, &f[1], &type)) != NS_OK) return st;
    for (int c = 0; c < 4; ++c)
        if ((st = parse_real(rec, 2 + c, &f[2 + c], &v[c])) != NS_OK) return st;
    if ((st = parse_integer(rec, 6, &f[6], &parent)) != NS_OK) return st;
    if (id < 0) return bad_field(rec, 0, &f[0], "must be >= 0");
    if (type < INT32_MIN || type > INT32_MAX) return bad_field(rec, 1, &f[1], "is out of range");
    if (parent < 0) parent = -1; /* any negative parent marks a root */
    for (int c = 0; c < 4; ++c)
        if (!isfinite(v[c] * rec->scale)) return bad_field(rec, 2 + c, &f[2 + c], "overflows when scaled");

    if (rec->n == rec->cap && (st = grow(rec)) != NS_OK) return st;
    ns_morph_point *p = &rec->pts[rec->n];
    p->id = id;
    p->type = (int32_t)type;
    p->x = v[0] * rec->scale;
    p->y = v[1] * rec->scale;
    p->z = v[2] * rec->scale;
    p->r = v[3] * rec->scale;
    p->parent = -1;
    p->line = rec->line;
    rec->pid[rec->n] = parent;
    rec->n++;
    return NS_OK;
}
