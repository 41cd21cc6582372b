/* libFuzzer target: a LiFE model folder (ns_life_model_load, then
 * ns_life_model_validate). The input is a list of records, each one file of
 * the folder: one byte naming the file (its value modulo 8 indexes the
 * names below), a 32-bit little-endian length, then the file's bytes (cut
 * at the end of the input). A name given twice keeps its last record; a
 * name never given is a missing file. The seeds are real synthetic models
 * packed this way (fuzz/corpus/life_model/, docs/fuzzing.md). */

#include "fuzz_file.h" /* first: it sets _POSIX_C_SOURCE */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "neurosolve/neurosolve.h"

static const char *names[8] = {"phi_shape.npy", "phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy",
                               "phi_value.npy", "dictionary.npy", "signal.npy",  "w_true.npy"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/ns_fuzz_model_%ld", (long)getpid());
    mkdir(dir, 0700);
    for (int k = 0; k < 8; ++k) {
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        unlink(path);
    }
    size_t at = 0;
    while (at + 5 <= size) {
        const int k = data[at] % 8;
        const uint32_t len = (uint32_t)data[at + 1] | (uint32_t)data[at + 2] << 8 | (uint32_t)data[at + 3] << 16 |
                             (uint32_t)data[at + 4] << 24;
        at += 5;
        const size_t n = len < size - at ? len : size - at;
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(data + at, 1, n, f);
            fclose(f);
        }
        at += n;
    }
    ns_life_model_t *m = NULL;
    if (ns_life_model_load(dir, &m) == NS_OK) {
        (void)ns_life_model_validate(m);
        ns_life_model_destroy(m);
    }
    return 0;
}
