/* SWC reader on small hand-made files: every malformed file in
 * tests/data/swc_bad gets its own status and a message naming the file, the
 * line and the reason; the odd but well-formed files in tests/data/swc_ok
 * parse into the structure written out by hand below (point order, parent
 * ids, lines, coordinates, radii, soma style). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/morph.h"

#define BAD NS_TEST_DATA "/swc_bad/"
#define OK NS_TEST_DATA "/swc_ok/"

/* ------------------------------------------------------------ bad files */

typedef struct bad_case {
    const char *file;
    ns_status status;
    const char *message; /* must occur in ns_last_error() */
} bad_case;

static const bad_case bad_cases[] = {
    {"nonnumeric_x.swc", NS_ERR_PARSE, "nonnumeric_x.swc:3: field 3 (x) 'abc' is not a number"},
    {"columns_six.swc", NS_ERR_PARSE, "columns_six.swc:4: 6 fields, expected 7 (id type x y z radius parent)"},
    {"columns_eight.swc", NS_ERR_PARSE, "columns_eight.swc:2: 8 fields, expected 7 (id type x y z radius parent); extra columns are not supported"},
    {"columns_one.swc", NS_ERR_PARSE, "columns_one.swc:2: 1 field, expected 7"},
    {"comment_inside.swc", NS_ERR_PARSE, "comment_inside.swc:3: 4 fields, expected 7"},
    {"duplicate_id.swc", NS_ERR_TOPOLOGY, "duplicate_id.swc:5: duplicate id 2 (also on line 3)"},
    {"missing_parent.swc", NS_ERR_TOPOLOGY, "missing_parent.swc:4: parent 17 of point 4 does not exist"},
    {"cycle.swc", NS_ERR_TOPOLOGY, "cycle.swc:4: cycle of 3 points: id 3 -> 5 -> 4 -> 3"},
    {"cycle_no_root.swc", NS_ERR_TOPOLOGY, "cycle_no_root.swc:2: cycle of 2 points: id 1 -> 2 -> 1"},
    {"cycle_tail.swc", NS_ERR_TOPOLOGY, "cycle_tail.swc:4: cycle of 2 points: id 5 -> 4 -> 5"},
    {"self_parent.swc", NS_ERR_TOPOLOGY, "self_parent.swc:3: point 3 is its own parent"},
    {"empty_comments.swc", NS_ERR_EMPTY, "empty_comments.swc: no data lines (4 lines"},
    {"empty_zero_bytes.swc", NS_ERR_EMPTY, "empty_zero_bytes.swc: no data lines (0 lines"},
    {"nan_coordinate.swc", NS_ERR_PARSE, "nan_coordinate.swc:2: field 4 (y) 'nan' is not a finite number"},
    {"inf_radius.swc", NS_ERR_PARSE, "inf_radius.swc:3: field 6 (radius) 'inf' is not a finite number"},
    {"overflow_radius.swc", NS_ERR_PARSE, "overflow_radius.swc:3: field 6 (radius) '1e999' is out of range"},
    {"float_id.swc", NS_ERR_PARSE, "float_id.swc:2: field 1 (id) '1.5' is not an integer"},
    {"float_type.swc", NS_ERR_PARSE, "float_type.swc:2: field 2 (type) '3.7' is not an integer"},
    {"float_parent.swc", NS_ERR_PARSE, "float_parent.swc:3: field 7 (parent) '2.5' is not an integer"},
    {"negative_id.swc", NS_ERR_PARSE, "negative_id.swc:2: field 1 (id) '-4' must be >= 0"},
    {"decimal_comma.swc", NS_ERR_PARSE, "decimal_comma.swc:2: field 3 (x) '1,5' is not a number"},
    {"hex_number.swc", NS_ERR_PARSE, "hex_number.swc:2: field 3 (x) '0x10' is not a number"},
    {"all_radii_zero.swc", NS_ERR_PARSE, "all_radii_zero.swc: no positive radius: a tracing without diameters; give a default radius"},
};

static void check_bad(const char *path, const ns_swc_options *o, ns_status status, const char *message) {
    ns_morph_t *m = (ns_morph_t *)&m; /* must be reset to NULL */
    ns_status s = ns_swc_read(path, o, &m);
    CHECK_MSG(s == status, "%s: got %s, want %s (%s)", path, ns_status_string(s), ns_status_string(status),
              ns_last_error());
    CHECK_MSG(m == NULL, "%s: out not NULL on failure", path);
    CHECK_MSG(strstr(ns_last_error(), message) != NULL, "%s: message '%s' lacks '%s'", path, ns_last_error(),
              message);
    ns_morph_destroy(s == NS_OK ? m : NULL);
}

static void test_bad_files(void) {
    char path[512];
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; ++i) {
        snprintf(path, sizeof path, BAD "%s", bad_cases[i].file);
        check_bad(path, NULL, bad_cases[i].status, bad_cases[i].message);
    }
    /* all_radii_zero loads once a default radius is asked for */
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.radii = NS_RADIUS_DEFAULT;
    o.default_radius = 0.25;
    ns_morph_t *m = NULL;
    CHECK_OK(ns_swc_read(BAD "all_radii_zero.swc", &o, &m));
    int64_t n = 0;
    const ns_morph_point *p = ns_morph_points(m, &n);
    CHECK(n == 3);
    for (int64_t i = 0; i < n; ++i) CHECK(p[i].r == 0.25);
    ns_morph_info info;
    ns_morph_get_info(m, &info);
    CHECK(info.radii_repaired == 3);
    ns_morph_destroy(m);
}

static void test_io_errors(void) {
    check_bad(OK "no_such_file.swc", NULL, NS_ERR_IO, "no_such_file.swc: cannot open: No such file or directory");
    check_bad(OK, NULL, NS_ERR_IO, "swc_ok/: cannot read: Is a directory");
    ns_morph_t *m = NULL;
    CHECK(ns_swc_read(NULL, NULL, &m) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_swc_read(OK "crlf.swc", NULL, NULL) == NS_ERR_INVALID_ARGUMENT);
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.scale = 0.0;
    check_bad(OK "crlf.swc", &o, NS_ERR_INVALID_ARGUMENT, "scale 0 must be finite and > 0");
    ns_swc_options_init(&o);
    o.radii = NS_RADIUS_DEFAULT;
    o.default_radius = -1.0;
    check_bad(OK "crlf.swc", &o, NS_ERR_INVALID_ARGUMENT, "default radius -1 must be finite and > 0");
    ns_swc_options_init(&o);
    o.roots = (ns_root_policy)7;
    check_bad(OK "crlf.swc", &o, NS_ERR_INVALID_ARGUMENT, "unknown root policy 7");
}

/* ----------------------------------------------------------- good files */

static ns_morph_t *load(const char *file, const ns_swc_options *o) {
    char path[512];
    snprintf(path, sizeof path, OK "%s", file);
    ns_morph_t *m = NULL;
    ns_status s = ns_swc_read(path, o, &m);
    CHECK_MSG(s == NS_OK && m != NULL, "%s: %s: %s", file, ns_status_string(s), ns_last_error());
    return m;
}

/* Points in this order with these ids, parent ids (-1 root) and lines;
 * parent indices must point backwards. */
static void check_shape(const char *what, const ns_morph_t *m, int64_t n, const int64_t *ids,
                        const int64_t *parent_ids, const int64_t *lines) {
    int64_t count = -1;
    const ns_morph_point *p = ns_morph_points(m, &count);
    CHECK_MSG(count == n, "%s: %lld points, want %lld", what, (long long)count, (long long)n);
    if (!p || count != n) return;
    for (int64_t i = 0; i < n; ++i) {
        CHECK_MSG(p[i].id == ids[i], "%s: point %lld has id %lld, want %lld", what, (long long)i,
                  (long long)p[i].id, (long long)ids[i]);
        CHECK_MSG(p[i].parent < i, "%s: point %lld parent index %d", what, (long long)i, (int)p[i].parent);
        int64_t pid = p[i].parent < 0 ? -1 : p[p[i].parent].id;
        CHECK_MSG(pid == parent_ids[i], "%s: point %lld (id %lld) has parent id %lld, want %lld", what,
                  (long long)i, (long long)p[i].id, (long long)pid, (long long)parent_ids[i]);
        if (lines)
            CHECK_MSG(p[i].line == lines[i], "%s: point %lld line %lld, want %lld", what, (long long)i,
                      (long long)p[i].line, (long long)lines[i]);
    }
    CHECK(p[0].parent == -1);
}

static ns_morph_info info_of(const ns_morph_t *m) {
    ns_morph_info info;
    ns_morph_get_info(m, &info);
    return info;
}

static void test_line_formats(void) {
    ns_morph_t *m = load("crlf.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2, 3}, pids[] = {-1, 1, 2}, lines[] = {3, 4, 5};
        check_shape("crlf", m, 3, ids, pids, lines);
        const ns_morph_point *p = ns_morph_points(m, NULL);
        CHECK(p[0].r == 3.0 && p[1].r == 1.0 && p[2].r == 0.5);
        CHECK(p[1].y == 5.0 && p[2].y == 10.0);
        CHECK(info_of(m).soma == NS_SOMA_SINGLE_POINT);
        ns_morph_destroy(m);
    }
    m = load("tabs_spaces.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2, 3}, pids[] = {-1, 1, 1}, lines[] = {2, 4, 5};
        check_shape("tabs", m, 3, ids, pids, lines);
        const ns_morph_point *p = ns_morph_points(m, NULL);
        CHECK(p[0].r == 4.0);
        CHECK(p[1].x == -15.0 && p[1].type == 2 && p[1].r == 0.5);
        CHECK(p[2].y == 25.0 && p[2].type == 4 && p[2].r == 0.5);
        ns_morph_destroy(m);
    }
    /* the same file in nm, read with scale 1e-3 */
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.scale = 1e-3;
    m = load("tabs_spaces.swc", &o);
    if (m) {
        const ns_morph_point *p = ns_morph_points(m, NULL);
        CHECK(check_rel(p[1].x, -0.015) < 1e-15 && check_rel(p[2].y, 0.025) < 1e-15);
        CHECK(check_rel(p[0].r, 0.004) < 1e-15 && check_rel(p[2].r, 0.0005) < 1e-15);
        ns_morph_destroy(m);
    }
    m = load("no_newline.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2, 3}, pids[] = {-1, 1, 2}, lines[] = {1, 2, 3};
        check_shape("no newline", m, 3, ids, pids, lines);
        CHECK(ns_morph_points(m, NULL)[2].y == 2.0);
        ns_morph_destroy(m);
    }
    m = load("float_integers.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2}, pids[] = {-1, 1};
        check_shape("float integers", m, 2, ids, pids, NULL);
        CHECK(ns_morph_points(m, NULL)[1].type == 3);
        ns_morph_destroy(m);
    }
}

static void test_ids_and_order(void) {
    ns_morph_t *m = load("id0_gaps.swc", NULL);
    if (m) {
        static const int64_t ids[] = {0, 10, 11, 500}, pids[] = {-1, 0, 10, 0}, lines[] = {2, 3, 4, 5};
        check_shape("id0 gaps", m, 4, ids, pids, lines);
        ns_morph_destroy(m);
    }
    /* Root 2 is on line 4; its children in file order are 4 (line 3), 7
     * (line 5) and 8 (line 7): depth-first gives 2 4 5 7 9 8. */
    m = load("parent_after_child.swc", NULL);
    if (m) {
        static const int64_t ids[] = {2, 4, 5, 7, 9, 8}, pids[] = {-1, 2, 4, 2, 7, 2},
                             lines[] = {4, 3, 2, 5, 6, 7};
        check_shape("parent after child", m, 6, ids, pids, lines);
        const ns_morph_point *p = ns_morph_points(m, NULL);
        CHECK(p[2].y == 3.0 && p[4].x == 2.0 && p[5].x == -1.0);
        ns_morph_destroy(m);
    }
    m = load("odd_types.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2, 3, 4, 5, 6}, pids[] = {-1, 1, 2, 3, 1, 5};
        check_shape("odd types", m, 6, ids, pids, NULL);
        static const int32_t types[] = {1, 0, 5, 7, 16, 1000};
        const ns_morph_point *p = ns_morph_points(m, NULL);
        for (int i = 0; i < 6; ++i) CHECK_MSG(p[i].type == types[i], "type %d", (int)p[i].type);
        ns_morph_destroy(m);
    }
}

static void test_soma_styles(void) {
    static const struct {
        const char *file;
        ns_soma_style style;
        int64_t soma_points;
    } cases[] = {
        {"soma_none.swc", NS_SOMA_NONE, 0},
        {"soma_single.swc", NS_SOMA_SINGLE_POINT, 1},
        {"soma_three.swc", NS_SOMA_THREE_POINT, 3},
        {"soma_three_tilted.swc", NS_SOMA_THREE_POINT, 3},
        {"soma_three_chain.swc", NS_SOMA_MULTI_POINT, 3},
        {"soma_multi.swc", NS_SOMA_MULTI_POINT, 5},
        {"soma_contour.swc", NS_SOMA_CONTOUR, 8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        ns_morph_t *m = load(cases[i].file, NULL);
        if (!m) continue;
        ns_morph_info info = info_of(m);
        CHECK_MSG(info.soma == cases[i].style, "%s: soma %s, want %s", cases[i].file,
                  ns_soma_style_name(info.soma), ns_soma_style_name(cases[i].style));
        CHECK_MSG(info.soma_points == cases[i].soma_points, "%s: %lld soma points", cases[i].file,
                  (long long)info.soma_points);
        ns_morph_destroy(m);
    }
    /* The contour's order: 1..8 round the outline, 11 hangs from 3 (line
     * 12), 9 and 10 from 1 after the outline. */
    ns_morph_t *m = load("soma_contour.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2, 3, 4, 5, 6, 7, 8, 11, 9, 10},
                             pids[] = {-1, 1, 2, 3, 4, 5, 6, 7, 3, 1, 9};
        check_shape("contour", m, 11, ids, pids, NULL);
        ns_morph_destroy(m);
    }
    CHECK(strcmp(ns_soma_style_name(NS_SOMA_CONTOUR), "contour") == 0);
}

static void test_roots(void) {
    /* Trees: A (lines 2-6, no soma, 5 points), B (lines 7-8, 1 soma point),
     * C (lines 9-12, 1 soma point, 4 points). B and C tie on soma points,
     * C is larger: C is kept. */
    ns_morph_t *m = load("three_trees.swc", NULL);
    if (m) {
        static const int64_t ids[] = {20, 21, 22, 23}, pids[] = {-1, 20, 21, 20}, lines[] = {9, 10, 11, 12};
        check_shape("three trees", m, 4, ids, pids, lines);
        ns_morph_info info = info_of(m);
        CHECK(info.points_read == 11 && info.points == 4 && info.points_dropped == 7);
        CHECK(info.roots == 3 && info.roots_kept == 1);
        ns_morph_destroy(m);
    }
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.roots = NS_ROOTS_REJECT;
    check_bad(OK "three_trees.swc", &o, NS_ERR_TOPOLOGY, "three_trees.swc: 3 roots (parent -1 on lines 2, 7, ...)");
    m = load("soma_single.swc", &o); /* one tree: fine under reject */
    ns_morph_destroy(m);
}

static void test_radii(void) {
    /* zero_radius.swc (line: id r parent): 2: 1 0 -1, 3: 2 0 1, 4: 3 0.7 2,
     * 5: 4 0 3, 6: 5 0 1, 7: 6 1.5 1. Repair: 4 takes 0.7 from ancestor 3;
     * 1 has no positive ancestor, nearest descendant is 6 (one edge) -> 1.5;
     * 2 -> 0.7 (descendant 3); 5 has neither -> its repaired parent's 1.5. */
    ns_morph_t *m = load("zero_radius.swc", NULL);
    if (m) {
        static const int64_t ids[] = {1, 2, 3, 4, 5, 6}, pids[] = {-1, 1, 2, 3, 1, 1};
        check_shape("zero radius", m, 6, ids, pids, NULL);
        const ns_morph_point *p = ns_morph_points(m, NULL);
        static const double r[] = {1.5, 0.7, 0.7, 0.7, 1.5, 1.5};
        for (int i = 0; i < 6; ++i) CHECK_MSG(p[i].r == r[i], "id %lld r %g want %g", (long long)p[i].id, p[i].r, r[i]);
        CHECK(info_of(m).radii_repaired == 4);
        ns_morph_destroy(m);
    }
    m = load("zero_radius_tie.swc", NULL);
    if (m) {
        CHECK(ns_morph_points(m, NULL)[0].r == 0.8);
        CHECK(info_of(m).radii_repaired == 1);
        ns_morph_destroy(m);
    }
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.radii = NS_RADIUS_REJECT;
    check_bad(OK "zero_radius.swc", &o, NS_ERR_PARSE,
              "zero_radius.swc:2: radius 0 of point 1 is not positive (4 such points; radius policy: reject)");
    o.radii = NS_RADIUS_DEFAULT;
    o.default_radius = 0.3;
    m = load("zero_radius.swc", &o);
    if (m) {
        const ns_morph_point *p = ns_morph_points(m, NULL);
        static const double r[] = {0.3, 0.3, 0.7, 0.3, 0.3, 1.5};
        for (int i = 0; i < 6; ++i) CHECK(p[i].r == r[i]);
        CHECK(info_of(m).radii_repaired == 4);
        ns_morph_destroy(m);
    }
}

static void test_memory(void) {
    /* No trailing newline, CRs, a byte-order mark, a name for messages. */
    static const char text[] = "\xEF\xBB\xBF# bom\r\n1 1 0 0 0 2 -1\r\n2 3 1 0 0 1 1";
    ns_morph_t *m = NULL;
    CHECK_OK(ns_swc_parse(text, sizeof text - 1, "mem.swc", NULL, &m));
    int64_t n = 0;
    const ns_morph_point *p = ns_morph_points(m, &n);
    CHECK(n == 2 && p && p[1].line == 3 && p[1].x == 1.0);
    CHECK(m && strcmp(ns_morph_name(m), "mem.swc") == 0);
    ns_morph_destroy(m);

    static const char bad[] = "1 1 0 0 0 2 -1\n2 3 1 0 0 1 1\n3 3 2 0 zz 1 2\n";
    m = NULL;
    CHECK(ns_swc_parse(bad, sizeof bad - 1, NULL, NULL, &m) == NS_ERR_PARSE);
    CHECK(m == NULL);
    CHECK(strstr(ns_last_error(), "(memory):3: field 5 (z) 'zz' is not a number") != NULL);
    CHECK(ns_swc_parse("", 0, "e", NULL, &m) == NS_ERR_EMPTY);
    CHECK(ns_swc_parse(NULL, 5, "e", NULL, &m) == NS_ERR_INVALID_ARGUMENT);

    /* A very long line is refused, not buffered without end. */
    size_t big = (size_t)3 << 20;
    char *huge = malloc(big);
    if (huge) {
        memset(huge, '1', big);
        CHECK(ns_swc_parse(huge, big, "huge", NULL, &m) == NS_ERR_PARSE);
        CHECK(strstr(ns_last_error(), "huge:1: line longer than") != NULL);
        free(huge);
    }
}

/* Numbers: the reader's value must equal the C library's strtod on many
 * shapes of decimal (digits before and after the point, exponents, signs,
 * leading zeros, long mantissas). */
/* docs/swc.md: ids must fit in int64; 19-digit ids load (issue 18: they were
 * refused above 2^53), one more is out of range */
static void test_int64_ids(void) {
    const char text[] = "9223372036854775807 1 0 0 0 5 -1\n1000000000000000000 3 10 0 0 1 9223372036854775807\n"
                        "3 3 20 0 0 1 1000000000000000000\n";
    ns_morph_t *m = NULL;
    CHECK_OK(ns_swc_parse(text, sizeof text - 1, "big_ids.swc", NULL, &m));
    ns_morph_info info;
    ns_morph_get_info(m, &info);
    int64_t n = 0;
    const ns_morph_point *p = ns_morph_points(m, &n);
    CHECK(info.points == 3 && n == 3 && p[0].id == INT64_MAX && p[1].id == 1000000000000000000);
    ns_morph_destroy(m);
    const char over[] = "9223372036854775808 1 0 0 0 5 -1\n";
    CHECK(ns_swc_parse(over, sizeof over - 1, "over.swc", NULL, &m) == NS_ERR_PARSE);
    CHECK_MSG(strstr(ns_last_error(), "over.swc:1: field 1 (id) '9223372036854775808' is out of range"), "%s",
              ns_last_error());
    const char neg[] = "1 1 0 0 0 5 -9223372036854775808\n";
    CHECK_OK(ns_swc_parse(neg, sizeof neg - 1, "neg.swc", NULL, &m));
    ns_morph_destroy(m);
}

static void test_numbers(void) {
    static const char *fixed[] = {"0", "-0", "0.5", ".5", "5.", "+2.5E+1", "1e-7", "123456789012345",
                                  "1234567890123456789", "0.000000000000000000000000123", "9.999999999999999e22",
                                  "1e23", "4.9e-324", "2.2250738585072014e-308", "-17.000", "00012.50"};
    char line[256], value[64];
    uint64_t state = 12345;
    int mismatches = 0;
    for (int k = 0; k < 2000 + (int)(sizeof fixed / sizeof fixed[0]); ++k) {
        if (k < (int)(sizeof fixed / sizeof fixed[0])) {
            snprintf(value, sizeof value, "%s", fixed[k]);
        } else {
            /* xorshift: digits before/after the point and an exponent */
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            int before = (int)(state % 12), after = (int)((state >> 8) % 12), e = (int)((state >> 16) % 61) - 30;
            uint64_t digits = state >> 20;
            size_t n = 0;
            if (state & 1u << 5) value[n++] = '-';
            for (int i = 0; i < before; ++i, digits /= 7) value[n++] = (char)('0' + digits % 10);
            if (after || !before) {
                value[n++] = '.';
                for (int i = 0; i < (after ? after : 1); ++i, digits /= 7) value[n++] = (char)('0' + digits % 10);
            }
            if (state & 1u << 6) n += (size_t)snprintf(value + n, sizeof value - n, "e%d", e);
            value[n] = '\0';
        }
        snprintf(line, sizeof line, "1 1 %s 0 0 1 -1\n", value);
        ns_morph_t *m = NULL;
        ns_status s = ns_swc_parse(line, strlen(line), "num", NULL, &m);
        double want = strtod(value, NULL);
        if (s != NS_OK || ns_morph_points(m, NULL)[0].x != want) {
            if (mismatches++ < 5)
                fprintf(stderr, "'%s': %s, got %.17g want %.17g\n", value, ns_status_string(s),
                        s == NS_OK ? ns_morph_points(m, NULL)[0].x : 0.0, want);
        }
        ns_morph_destroy(m);
    }
    CHECK(mismatches == 0);
}

int main(void) {
    test_int64_ids();
    test_numbers();
    test_bad_files();
    test_io_errors();
    test_line_formats();
    test_ids_and_order();
    test_soma_styles();
    test_roots();
    test_radii();
    test_memory();
    return check_summary("test_swc");
}
