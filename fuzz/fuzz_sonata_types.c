/* libFuzzer target: SONATA's node and edge type tables (src/io/sonata_table.h,
 * docs/networks.md, "SONATA"): ns_son_table_parse with its caps; the first
 * byte picks the id column (node_type_id when even, edge_type_id when odd);
 * then every row is found again by its id and every value's length read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/sonata_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const char *id_col = (data[0] & 1) ? "edge_type_id" : "node_type_id";
    ns_son_table t;
    if (ns_son_table_parse((const char *)data + 1, size - 1, "fuzz.csv", id_col, &t) != NS_OK) {
        if (t.nrow != 0 || t.col != NULL) abort(); /* nothing returned on failure */
        return 0;
    }
    if (t.ncol < 1 || t.ncol > NS_SON_TABLE_MAX_COLUMNS || t.nrow > NS_SON_TABLE_MAX_TYPES) abort();
    if (ns_son_table_col(&t, id_col) != 0) abort();
    for (int64_t r = 0; r < t.nrow; ++r) {
        if (ns_son_table_row(&t, t.id[r]) != r) abort(); /* ids are unique */
        for (int c = 0; c < t.ncol; ++c) {
            const char *v = ns_son_table_get(&t, r, c);
            if (v) {
                const size_t k = strlen(v);
                if (k == 0 || k > NS_SON_TABLE_MAX_FIELD) abort();
            }
        }
    }
    ns_son_table_free(&t);
    return 0;
}
