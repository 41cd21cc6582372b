/* libFuzzer target: the SWC reader and, past it, the discretisation and the
 * passive cable matrix (issue 18: geometry that overflows although every
 * number is finite). The first byte picks the root and radius policies so
 * that every path of the reader is reached; the rest is the file. */
#include <stdint.h>
#include <stdlib.h>

#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.roots = data[0] & 1 ? NS_ROOTS_REJECT : NS_ROOTS_KEEP_MAIN;
    o.radii = (data[0] >> 1) % 3 == 0 ? NS_RADIUS_REPAIR : (data[0] >> 1) % 3 == 1 ? NS_RADIUS_REJECT : NS_RADIUS_DEFAULT;
    ns_morph_t *m = NULL;
    if (ns_swc_parse((const char *)data + 1, size - 1, "fuzz.swc", &o, &m) != NS_OK) return 0;
    ns_cell_t *cell = NULL;
    if (ns_discretize(m, NULL, &cell) == NS_OK) {
        const int32_t n = ns_tree_size(ns_cell_tree(cell));
        double *v = malloc(3 * (size_t)n * sizeof *v);
        if (v && ns_cell_matrix(cell, 1.0, 0.025, NS_FORM_NEURON, v, v + n, v + 2 * n) == NS_OK) {
            for (int32_t i = 0; i < 3 * n; ++i)
                if (!(v[i] - v[i] == 0.0)) abort(); /* a non-finite matrix entry got through */
        }
        free(v);
        ns_cell_destroy(cell);
    }
    ns_morph_destroy(m);
    return 0;
}
