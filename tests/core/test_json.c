/* The strict JSON reader of SONATA configs (src/core/json.h): values of every
 * kind with their lines, escapes decoded to UTF-8 (surrogate pairs joined),
 * numbers to the nearest double, and every refusal with its line and column:
 * trailing commas, comments, leading zeros, NaN, control characters, lone
 * surrogates, duplicate keys, nesting past the limit, text after the value, a
 * missing file. Independent of HDF5 (the fuzz target fuzz_json runs it too). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "core/json.h"

static ns_json *parse(const char *text) {
    ns_json *j = NULL;
    CHECK_OK(ns_json_parse(text, strlen(text), "t.json", &j));
    return j;
}

#define REFUSED(text, ...)                                                                        \
    do {                                                                                          \
        ns_json *r_ = (ns_json *)1;                                                               \
        CHECK_FAILS(ns_json_parse(text, strlen(text), "t.json", &r_), NS_ERR_PARSE, __VA_ARGS__); \
        CHECK(r_ == NULL);                                                                        \
    } while (0)

int main(void) {
    ns_json *j = parse(" {\n \"a\": [1, -0.5e-3, 2E+10, 0, -0],\n \"s\": \"x\\u00e9\\ud83d\\ude00\\n\\\"\\/\",\n"
                       " \"t\": true, \"f\": false, \"n\": null, \"o\": {}, \"e\": []\n} \n");
    if (j) {
        CHECK(j->kind == NS_JSON_OBJECT && j->n == 7 && j->line == 1);
        const ns_json *a = ns_json_get(j, "a");
        CHECK(a && a->kind == NS_JSON_ARRAY && a->n == 5 && a->line == 2);
        CHECK(a && a->items[0].number == 1.0 && a->items[1].number == -0.5e-3 && a->items[2].number == 2e10);
        const ns_json *s = ns_json_get(j, "s");
        /* e-acute (C3 A9), U+1F600 (F0 9F 98 80), newline, quote, slash */
        CHECK(s && s->kind == NS_JSON_STRING && strcmp(s->string, "x\xc3\xa9\xf0\x9f\x98\x80\n\"/") == 0 && s->line == 3);
        CHECK(ns_json_get(j, "t")->kind == NS_JSON_TRUE && ns_json_get(j, "f")->kind == NS_JSON_FALSE &&
              ns_json_get(j, "n")->kind == NS_JSON_NULL && ns_json_get(j, "o")->n == 0 &&
              ns_json_get(j, "e")->kind == NS_JSON_ARRAY && ns_json_get(j, "x") == NULL);
        CHECK(ns_json_get(a, "a") == NULL); /* not an object */
    }
    ns_json_free(j);
    j = parse("0.1");
    CHECK(j && j->kind == NS_JSON_NUMBER && j->number == 0.1);
    ns_json_free(j);
    /* nesting up to the limit */
    char deep[2 * NS_JSON_MAX_DEPTH + 8];
    memset(deep, '[', NS_JSON_MAX_DEPTH + 1);
    memset(deep + NS_JSON_MAX_DEPTH + 1, ']', NS_JSON_MAX_DEPTH + 1);
    deep[2 * NS_JSON_MAX_DEPTH + 2] = 0;
    ns_json_free(parse(deep));
    REFUSED("", "t.json:1:1: expected a value before the end");
    REFUSED("[1, 2,]", "t.json:1:7: unexpected ']'");
    REFUSED("{\"a\": 1,}", "t.json:1:9: expected a key");
    REFUSED("{\n  \"a\": 01}", "t.json:2:8: a number with a leading zero");
    REFUSED("[NaN]", "unexpected 'N'");
    REFUSED("[1e999]", "t.json:1:2: '1e999' is beyond the range of a double");
    REFUSED("[1e-320]", "t.json:1:2: '1e-320' is too close to 0 for a double");
    REFUSED("[.5]", "unexpected '.'");
    REFUSED("[1.]", "a digit must follow '.'");
    REFUSED("[1e]", "a digit must follow the exponent");
    REFUSED("// c\n{}", "t.json:1:1: unexpected '/'");
    REFUSED("{\"a\" 1}", "expected ':' after a key");
    REFUSED("{\"a\": 1, \"a\": 2}", "duplicate key \"a\"");
    /* past 16 keys the check goes through a hash of the keys: a repeat of an early key and of a late one */
    REFUSED("{\"0\":0,\"1\":0,\"2\":0,\"3\":0,\"4\":0,\"5\":0,\"6\":0,\"7\":0,\"8\":0,\"9\":0,\"a\":0,\"b\":0,"
            "\"c\":0,\"d\":0,\"e\":0,\"f\":0,\"g\":0,\"3\":1}", "t.json:1:", "duplicate key \"3\"");
    REFUSED("{\"0\":0,\"1\":0,\"2\":0,\"3\":0,\"4\":0,\"5\":0,\"6\":0,\"7\":0,\"8\":0,\"9\":0,\"a\":0,\"b\":0,"
            "\"c\":0,\"d\":0,\"e\":0,\"f\":0,\"g\":0,\"h\":0,\"g\":1}", "duplicate key \"g\"");
    REFUSED("\"a\tb\"", "control character 0x09");
    REFUSED("\"\\x\"", "unknown escape \\'x'");
    REFUSED("\"\\u12g4\"", "\\u needs 4 hex digits");
    REFUSED("\"\\udc00\"", "a lone low surrogate");
    REFUSED("\"\\ud800x\"", "without its low surrogate");
    REFUSED("\"\\u0000\"", "\\u0000 in a string");
    REFUSED("\"abc", "unterminated string");
    REFUSED("{} {}", "t.json:1:4: '{' after the value");
    REFUSED("tru", "unexpected 't'");
    REFUSED("[1 2]", "expected ',' or ']', got '2'");
    deep[0] = '[';
    char deeper[2 * NS_JSON_MAX_DEPTH + 16];
    snprintf(deeper, sizeof deeper, "[%s]", deep);
    REFUSED(deeper, "nested deeper than 64");
    {
        const char text[] = "\"a\0b\"";
        ns_json *r = NULL;
        CHECK_FAILS(ns_json_parse(text, sizeof text - 1, "t.json", &r), NS_ERR_PARSE, "control character 0x00");
    }
    {
        /* 300,000 keys (issue 47: the duplicate check compared every key with
         * every earlier one): all distinct, then the same object with
         * its first key repeated last */
        const size_t nk = 300000;
        char *big = malloc(nk * 24 + 64);
        size_t len = 0;
        big[len++] = '{';
        for (size_t k = 0; k < nk; ++k) len += (size_t)sprintf(big + len, "%s\"k%zu\": %zu", k ? "," : "", k, k);
        const size_t body = len;
        len += (size_t)sprintf(big + len, "}");
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ns_json *o = NULL;
        CHECK_OK(ns_json_parse(big, len, "big.json", &o));
        CHECK(o && o->n == nk && ns_json_get(o, "k299999") && ns_json_get(o, "k299999")->number == 299999.0);
        ns_json_free(o);
        len = body + (size_t)sprintf(big + body, ", \"k0\": 1}");
        o = (ns_json *)1;
        CHECK_FAILS(ns_json_parse(big, len, "big.json", &o), NS_ERR_PARSE, "duplicate key \"k0\"");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        const double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        /* a bound far above the linear check's time in any build (the sanitizers' included)
         * and far below the quadratic check's */
        CHECK_MSG(s < 30.0, "300,000 keys took %.2f s", s);
        free(big);
    }
    ns_json *r = (ns_json *)1;
    CHECK_FAILS(ns_json_read("/nonexistent/c.json", &r), NS_ERR_IO, "/nonexistent/c.json");
    CHECK(r == NULL);
    r = NULL;
    CHECK_OK(ns_json_read(NS_TEST_DATA "/sonata/random16/config.json", &r));
    CHECK(r && ns_json_get(ns_json_get(r, "run"), "tstop") && ns_json_get(ns_json_get(r, "run"), "tstop")->number == 150.0);
    ns_json_free(r);
    return check_summary("test_json");
}
