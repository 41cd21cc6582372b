/* The one number reader (include/neurosolve/number.h, docs/cli.md "Numbers"):
 * the grammar, overflow and subnormals, ranges and "-0", the messages; the
 * values against strtod's (the C library's correctly rounded conversion) on
 * every accepted text. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "core/number.h"

static void ok(const char *text, double want) {
    double v = -12345.0;
    CHECK_OK(ns_number_parse(text, -HUGE_VAL, HUGE_VAL, &v));
    CHECK_MSG(v == want && signbit(v) == signbit(want), "%s gave %.17g, expected %.17g", text, v, want);
    CHECK_MSG(v == strtod(text, NULL), "%s: %.17g is not strtod's", text, v);
}

static void bad(const char *text, double min, double max, ns_status status, const char *needle) {
    double v = -12345.0;
    CHECK_FAILS(ns_number_parse(text, min, max, &v), status, needle);
    CHECK(v == -12345.0); /* nothing stored */
}

static void ok_int(const char *text, int64_t min, int64_t max, int64_t want) {
    int64_t v = -1;
    CHECK_OK(ns_integer_parse(text, min, max, &v));
    CHECK_MSG(v == want, "%s gave %lld", text, (long long)v);
}

static void bad_int(const char *text, int64_t min, int64_t max, ns_status status, const char *needle) {
    int64_t v = -12345;
    CHECK_FAILS(ns_integer_parse(text, min, max, &v), status, needle);
    CHECK(v == -12345);
}

int main(void) {
    ok("0", 0.0);
    ok("-0", -0.0);
    ok("+1", 1.0);
    ok("1.", 1.0);
    ok(".5", 0.5);
    ok("-.5e-3", -0.5e-3);
    ok("2E+10", 2e10);
    ok("0.1", 0.1);
    ok("1.7976931348623157e308", DBL_MAX);
    ok("2.2250738585072014e-308", DBL_MIN);
    ok("0e999", 0.0);
    ok("0.000e-400", 0.0);
    ok("123456789012345678901234567890", 123456789012345678901234567890.0);
    const char *syntax[] = {"", " 1", "1 ", "0x10", "0x1p-5", "inf", "-inf", "nan", "NaN", "infinity", "1e", "1e+",
                            ".", "-", "+-1", "1.5.2", "1,5", "e5", "1d3", "--1", "1e5.5", "\t2"};
    for (size_t k = 0; k < sizeof syntax / sizeof *syntax; ++k)
        bad(syntax[k], -HUGE_VAL, HUGE_VAL, NS_ERR_PARSE, syntax[k][0] ? "is not a decimal number" : "found nothing");
    bad("0x10", -HUGE_VAL, HUGE_VAL, NS_ERR_PARSE, "'0x10' is not a decimal number (digits, '.', an exponent: no hex, inf or nan)");
    /* beyond a double, and too close to 0 (issue 47: 1e-320 was "not a number in [-1e+09, 1e+09]") */
    bad("1e999", -HUGE_VAL, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "'1e999' is beyond the range of a double (1.8e+308)");
    bad("-1.8e308", -HUGE_VAL, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "is beyond the range of a double");
    bad("1e-320", -HUGE_VAL, HUGE_VAL, NS_ERR_INVALID_ARGUMENT,
        "'1e-320' is too close to 0 for a double (nonzero below 2.2e-308: write 0)");
    bad("-4e-324", -HUGE_VAL, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "too close to 0");
    bad("1e-400", -HUGE_VAL, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "too close to 0"); /* rounds to 0 */
    bad("2.2e-308", -HUGE_VAL, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "too close to 0"); /* just below DBL_MIN */
    /* ranges, bounds included */
    double v = 0.0;
    CHECK_OK(ns_number_parse("1", 0.0, 1.0, &v));
    CHECK_OK(ns_number_parse("0", 0.0, 1.0, &v));
    bad("1.0000000001", 0.0, 1.0, NS_ERR_INVALID_ARGUMENT, "'1.0000000001' is out of range: not in [0, 1]");
    bad("-1", 0.0, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "'-1' is out of range: below 0");
    bad("-0", 0.0, HUGE_VAL, NS_ERR_INVALID_ARGUMENT, "'-0' is out of range: below 0");
    bad("5", -HUGE_VAL, 2.0, NS_ERR_INVALID_ARGUMENT, "'5' is out of range: above 2");
    /* a long text is quoted up to 60 characters */
    char longer[200];
    memset(longer, '1', 150);
    longer[150] = 'x';
    longer[151] = 0;
    bad(longer, -HUGE_VAL, HUGE_VAL, NS_ERR_PARSE, "'111111111111111111111111111111111111111111111111111111111111...'");
    /* spans: the length of the number at the start of a text (model expressions) */
    CHECK(ns_number_length("1.5e3*d", 7) == 5 && ns_number_length("2e", 2) == 1 && ns_number_length("x", 1) == 0 &&
          ns_number_length(".e1", 3) == 0 && ns_number_length("0x10", 4) == 1);
    CHECK_OK(ns_number_span("25)", 2, -HUGE_VAL, HUGE_VAL, &v));
    CHECK(v == 25.0);

    /* integers */
    ok_int("0", 0, 10, 0);
    ok_int("+7", 0, 10, 7);
    ok_int("-9223372036854775808", INT64_MIN, INT64_MAX, INT64_MIN);
    ok_int("9223372036854775807", INT64_MIN, INT64_MAX, INT64_MAX);
    ok_int("-0", -1, 1, 0);
    bad_int("-0", 0, 10, NS_ERR_INVALID_ARGUMENT, "'-0' is out of range: not in [0, 10]"); /* --record c-0 */
    bad_int("9223372036854775808", INT64_MIN, INT64_MAX, NS_ERR_INVALID_ARGUMENT, "beyond 64 bits");
    bad_int("99999999999999999999999", 0, INT64_MAX, NS_ERR_INVALID_ARGUMENT, "beyond 64 bits");
    bad_int("-9223372036854775809", INT64_MIN, INT64_MAX, NS_ERR_INVALID_ARGUMENT, "beyond 64 bits");
    bad_int("11", 0, 10, NS_ERR_INVALID_ARGUMENT, "'11' is out of range: not in [0, 10]");
    const char *isyntax[] = {"", "1e3", "1.0", "0x10", " 1", "1 ", "+", "-", "1-2", "inf"};
    for (size_t k = 0; k < sizeof isyntax / sizeof *isyntax; ++k)
        bad_int(isyntax[k], INT64_MIN, INT64_MAX, NS_ERR_PARSE, isyntax[k][0] ? "is not an integer" : "found nothing");
    return check_summary("test_number");
}
