/* The one number reader (include/neurosolve/number.h). */
#include "core/number.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static size_t digits(const char *s, size_t n, size_t i) {
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i;
    return i;
}

size_t ns_number_length(const char *s, size_t n) {
    size_t i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    const size_t a = i;
    i = digits(s, n, i);
    size_t whole = i - a, frac = 0;
    if (i < n && s[i] == '.') {
        const size_t b = i + 1;
        const size_t e = digits(s, n, b);
        frac = e - b;
        if (whole || frac) i = e;
    }
    if (!whole && !frac) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-')) ++j;
        const size_t e = digits(s, n, j);
        if (e > j) i = e; /* "1e" is the number 1 followed by 'e' */
    }
    return i;
}

/* The text for messages: at most 60 characters. */
#define SHOW(s, n) (int)((n) > 60 ? 60 : (n)), (s), ((n) > 60 ? "..." : "")

static ns_status range_error(const char *s, size_t n, double min, double max) {
    if (min == -HUGE_VAL) return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: above %g", SHOW(s, n), max);
    if (max == HUGE_VAL) return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: below %g", SHOW(s, n), min);
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: not in [%g, %g]", SHOW(s, n), min, max);
}

/* Whether the mantissa (the digits before any exponent) has a nonzero digit. */
static int mantissa_nonzero(const char *s, size_t n) {
    for (size_t i = 0; i < n && s[i] != 'e' && s[i] != 'E'; ++i)
        if (s[i] >= '1' && s[i] <= '9') return 1;
    return 0;
}

ns_status ns_number_span(const char *s, size_t n, double min, double max, double *value) {
    if (!s || !value) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_number_parse: NULL argument");
    if (n == 0) return ns_fail(NS_ERR_PARSE, "expected a number, found nothing");
    if (ns_number_length(s, n) != n)
        return ns_fail(NS_ERR_PARSE, "'%.*s%s' is not a decimal number (digits, '.', an exponent: no hex, inf or nan)",
                       SHOW(s, n));
    char buf[512];
    char *tmp = n < sizeof buf ? buf : malloc(n + 1);
    if (!tmp) return ns_fail(NS_ERR_OUT_OF_MEMORY, "reading a number");
    memcpy(tmp, s, n);
    tmp[n] = 0;
    const double v = strtod(tmp, NULL); /* the grammar is strtod's decimal subset in the C locale's digits */
    if (tmp != buf) free(tmp);
    if (!isfinite(v))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is beyond the range of a double (%.2g)", SHOW(s, n), DBL_MAX);
    if (v != 0.0 ? fabs(v) < DBL_MIN : mantissa_nonzero(s, n))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is too close to 0 for a double (nonzero below %.2g: write 0)",
                       SHOW(s, n), DBL_MIN);
    if (!(v >= min && v <= max) || (v == 0.0 && signbit(v) && min == 0.0)) return range_error(s, n, min, max);
    *value = v;
    return NS_OK;
}

ns_status ns_number_parse(const char *text, double min, double max, double *value) {
    if (!text) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_number_parse: NULL argument");
    return ns_number_span(text, strlen(text), min, max, value);
}

ns_status ns_integer_parse(const char *text, int64_t min, int64_t max, int64_t *value) {
    if (!text || !value) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_integer_parse: NULL argument");
    const size_t n = strlen(text);
    if (n == 0) return ns_fail(NS_ERR_PARSE, "expected an integer, found nothing");
    size_t i = (text[0] == '+' || text[0] == '-') ? 1 : 0;
    if (digits(text, n, i) != n || n == i) return ns_fail(NS_ERR_PARSE, "'%.*s%s' is not an integer", SHOW(text, n));
    const int neg = text[0] == '-';
    /* the magnitude, saturated past 2^63 (then out of any int64 range) */
    uint64_t mag = 0;
    int over = 0;
    for (; i < n; ++i) {
        const unsigned d = (unsigned)(text[i] - '0');
        if (mag > (UINT64_MAX - d) / 10) over = 1;
        else mag = mag * 10 + d;
    }
    if (over || mag > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: beyond 64 bits", SHOW(text, n));
    const int64_t v = !neg ? (int64_t)mag : mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
    if (v < min || v > max || (neg && mag == 0 && min >= 0)) { /* "-0" is below a minimum of 0 */
        char lo[32], hi[32];
        snprintf(lo, sizeof lo, "%lld", (long long)min);
        snprintf(hi, sizeof hi, "%lld", (long long)max);
        if (max == INT64_MAX)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: below %s", SHOW(text, n), lo);
        if (min == INT64_MIN)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: above %s", SHOW(text, n), hi);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "'%.*s%s' is out of range: not in [%s, %s]", SHOW(text, n), lo, hi);
    }
    *value = v;
    return NS_OK;
}
