/* libFuzzer target: the small LiFE inputs: a float64 NPY vector (weights)
 * and a b-values/b-vectors pair (the input split at its first NUL byte). */

#include "fuzz_file.h" /* first: it sets _POSIX_C_SOURCE */
#include <stdlib.h>
#include <string.h>
#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *npy = fuzz_file("npy", ".npy", data, size);
    if (npy) {
        double *v = NULL;
        int64_t n = 0;
        if (ns_life_vector_load(npy, &v, &n) == NS_OK) free(v);
        unlink(npy);
    }
    const uint8_t *nul = memchr(data, 0, size);
    if (!nul) return 0;
    const char *bvals = fuzz_file("bval", ".bval", data, (size_t)(nul - data));
    const char *bvecs = fuzz_file("bvec", ".bvec", nul + 1, size - (size_t)(nul - data) - 1);
    if (bvals && bvecs) {
        ns_gradients g;
        memset(&g, 0, sizeof g);
        if (ns_gradients_read(bvals, bvecs, &g) == NS_OK) ns_gradients_free(&g);
    }
    if (bvals) unlink(bvals);
    if (bvecs) unlink(bvecs);
    return 0;
}
