/* libFuzzer target: the strict JSON reader of SONATA configs (src/core/json.h,
 * docs/networks.md, "SONATA"): ns_json_parse, then a walk of the tree
 * (every member looked up by its key, every string's length). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

static size_t walk(const ns_json *v, int depth) {
    size_t n = 1;
    if (v->kind == NS_JSON_STRING) n += strlen(v->string);
    for (size_t k = 0; k < v->n; ++k) {
        /* keys are unique (ns_json_get scans: checked on objects of up to 256 keys, so that a
         * large object does not make the walk quadratic) */
        if (v->kind == NS_JSON_OBJECT && v->n <= 256 && ns_json_get(v, v->keys[k]) != &v->items[k]) abort();
        n += walk(&v->items[k], depth + 1);
    }
    if (depth > NS_JSON_MAX_DEPTH) abort();
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ns_json *root = NULL;
    if (ns_json_parse((const char *)data, size, "fuzz.json", &root) == NS_OK) {
        volatile size_t n = walk(root, 0);
        (void)n;
    }
    ns_json_free(root);
    return 0;
}
