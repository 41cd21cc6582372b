/* Private: SONATA's node and edge type tables (BMTK's node_types.csv and
 * edge_types.csv, docs/networks.md "SONATA"): a space-separated table with a
 * header whose first column is the type id; fields split at single spaces,
 * "double quotes" around a field with spaces, NULL or an empty field: no
 * value. Every size is capped (a file of /dev/zero is refused after
 * NS_SON_TABLE_MAX_FILE bytes): NS_ERR_SIZE naming the file and line.
 * Independent of HDF5; fuzzed by fuzz/fuzz_sonata_types.c. */
#ifndef NS_CABLE_SONATA_TABLE_H
#define NS_CABLE_SONATA_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_SON_TABLE_MAX_FILE ((size_t)16 << 20) /* 16 MiB */
#define NS_SON_TABLE_MAX_LINE 65536              /* bytes per line, the line end excluded */
#define NS_SON_TABLE_MAX_COLUMNS 256
#define NS_SON_TABLE_MAX_FIELD 4095              /* bytes per field (a path) */
#define NS_SON_TABLE_MAX_TYPES 1000000           /* rows */

typedef struct ns_son_table {
    int ncol;
    char **col;       /* the header's names */
    int64_t nrow;
    char **cell;      /* nrow * ncol, NULL: no value */
    int64_t *id;      /* column 0 (the type id) per row */
    int *line;        /* per row, for messages */
    int64_t *sorted;  /* rows by id */
} ns_son_table;

/* Parse `length` bytes named `path` in messages; the first column must be
 * `id_col` and hold distinct integers. On failure *t is empty. */
NS_API ns_status ns_son_table_parse(const char *text, size_t length, const char *path, const char *id_col,
                                    ns_son_table *t);
/* Read (at most NS_SON_TABLE_MAX_FILE bytes) and parse a file. */
NS_API ns_status ns_son_table_read(const char *path, const char *id_col, ns_son_table *t);
NS_API void ns_son_table_free(ns_son_table *t);
/* The row of a type id, -1 when absent. */
NS_API int64_t ns_son_table_row(const ns_son_table *t, int64_t id);
/* The column named `name`, -1 when absent. */
NS_API int ns_son_table_col(const ns_son_table *t, const char *name);
/* The value at (row, col); NULL for no value or col < 0. */
NS_API const char *ns_son_table_get(const ns_son_table *t, int64_t row, int col);

#ifdef __cplusplus
}
#endif
#endif
