/* SONATA's node and edge type tables (src/io/sonata_table.h, BMTK's
 * node_types.csv / edge_types.csv): fields, quotes, NULL, rows found by id,
 * and every refusal with its file and line, including the caps of issue 47
 * (a type file of /dev/zero grew to 8.4 GB and was then called "empty").
 * Independent of HDF5. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/sonata_table.h"
#include "check.h"

#define REFUSED(text, len, status, ...)                                                             \
    do {                                                                                            \
        ns_son_table t_;                                                                            \
        CHECK_FAILS(ns_son_table_parse(text, len, "t.csv", "node_type_id", &t_), status, __VA_ARGS__); \
        CHECK(t_.nrow == 0 && t_.col == NULL);                                                      \
    } while (0)
#define REFUSED_S(text, status, ...) REFUSED(text, strlen(text), status, __VA_ARGS__)

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
    const char *text = "node_type_id model_type morphology \"model template\"\r\n"
                       "\n"
                       "101 biophysical \"a b.swc\" NULL\n"
                       "7 virtual  neurosolve:x.model\n";
    ns_son_table t;
    CHECK_OK(ns_son_table_parse(text, strlen(text), "t.csv", "node_type_id", &t));
    CHECK(t.ncol == 4 && t.nrow == 2 && strcmp(t.col[3], "model template") == 0);
    const int64_t r101 = ns_son_table_row(&t, 101), r7 = ns_son_table_row(&t, 7);
    CHECK(r101 == 0 && r7 == 1 && ns_son_table_row(&t, 8) == -1);
    CHECK(t.line[0] == 3 && t.line[1] == 4);
    CHECK(strcmp(ns_son_table_get(&t, r101, ns_son_table_col(&t, "morphology")), "a b.swc") == 0);
    CHECK(ns_son_table_get(&t, r101, 3) == NULL); /* NULL: no value */
    CHECK(ns_son_table_get(&t, r7, 2) == NULL);   /* empty: no value */
    CHECK(strcmp(ns_son_table_get(&t, r7, 3), "neurosolve:x.model") == 0);
    CHECK(ns_son_table_col(&t, "nosuch") == -1 && ns_son_table_get(&t, r7, -1) == NULL);
    ns_son_table_free(&t);

    REFUSED_S("", NS_ERR_PARSE, "t.csv: empty");
    REFUSED_S("edge_type_id a\n", NS_ERR_PARSE, "t.csv:1: the first column is 'edge_type_id', not node_type_id");
    REFUSED_S("node_type_id a\n1 x\n1 y\n", NS_ERR_PARSE, "t.csv:3: node_type_id 1 again (line 2)");
    REFUSED_S("node_type_id a\n1\n", NS_ERR_PARSE, "t.csv:2: 1 fields, the header has 2");
    REFUSED_S("node_type_id a\nx1 y\n", NS_ERR_PARSE, "t.csv:2: node_type_id: 'x1' is not an integer");
    REFUSED_S("node_type_id a\n0x1 y\n", NS_ERR_PARSE, "t.csv:2: node_type_id: '0x1' is not an integer");
    REFUSED_S("node_type_id a\nNULL y\n", NS_ERR_PARSE, "t.csv:2: node_type_id: no value");
    REFUSED_S("node_type_id a\n99999999999999999999 y\n", NS_ERR_INVALID_ARGUMENT, "t.csv:2: node_type_id: '99999999999999999999' is out of range");
    REFUSED_S("node_type_id a\n1 \"y\n", NS_ERR_PARSE, "t.csv:2: an unterminated quote");
    REFUSED_S("node_type_id a\n1 \"y\"z\n", NS_ERR_PARSE, "t.csv:2: an unterminated quote or text after");
    REFUSED("node_type_id a\n1 \0\n", sizeof "node_type_id a\n1 \0\n" - 1, NS_ERR_PARSE, "t.csv:2: a NUL byte");

    /* the caps: a line, a field, the columns, the rows, the file */
    const size_t big = (size_t)NS_SON_TABLE_MAX_LINE + 64;
    char *b = malloc(big + 64);
    memset(b, 'a', big);
    b[big] = 0;
    REFUSED(b, big, NS_ERR_SIZE, "t.csv:1: a line of more than 65536 bytes");
    snprintf(b, 64, "node_type_id a\n1 ");
    memset(b + strlen(b), 'p', NS_SON_TABLE_MAX_FIELD + 1);
    b[17 + NS_SON_TABLE_MAX_FIELD + 1] = 0;
    REFUSED(b, strlen(b), NS_ERR_SIZE, "t.csv:2: a field of more than 4095 bytes");
    b[0] = 0;
    strcat(b, "node_type_id");
    for (int k = 0; k < NS_SON_TABLE_MAX_COLUMNS; ++k) strcat(b, " c");
    REFUSED_S(b, NS_ERR_SIZE, "t.csv:1: more than 256 columns");
    free(b);
    {
        const size_t rows = NS_SON_TABLE_MAX_TYPES + 1;
        char *r = malloc(rows * 9 + 32), *q = r;
        q += sprintf(q, "node_type_id\n");
        for (size_t k = 0; k < rows; ++k) q += sprintf(q, "%zu\n", k);
        REFUSED(r, (size_t)(q - r), NS_ERR_SIZE, "t.csv:1000002: more than 1000000 types");
        free(r);
    }
    {
        /* /dev/zero: refused at the file cap, quickly */
        const double t0 = seconds();
        ns_son_table z;
        CHECK_FAILS(ns_son_table_read("/dev/zero", "node_type_id", &z), NS_ERR_SIZE, "/dev/zero: a type table over 16 MiB");
        CHECK_MSG(seconds() - t0 < 20.0, "/dev/zero took %.1f s", seconds() - t0);
        CHECK_FAILS(ns_son_table_read("/nonexistent/t.csv", "node_type_id", &z), NS_ERR_IO, "/nonexistent/t.csv");
    }
    return check_summary("test_sonata_table");
}
