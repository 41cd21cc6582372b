/* libFuzzer target: NMODL files (ns_nmodl_parse_string) and, for those that
 * parse, the three generated sources (ns_nmodl_emit). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0; /* the parser reads up to the first NUL, as the file reader refuses NULs */
    ns_nmodl_t *m = NULL;
    if (ns_nmodl_parse_string(text, "fuzz.mod", &m) == NS_OK) {
        for (int t = 0; t < 3; ++t) {
            char *out = NULL;
            if (ns_nmodl_emit(m, (ns_nmodl_target)t, &out) == NS_OK) ns_nmodl_free(out);
        }
        ns_nmodl_destroy(m);
    }
    free(text);
    return 0;
}
