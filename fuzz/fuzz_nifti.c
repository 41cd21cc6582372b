/* libFuzzer target: the NIfTI-1 reader (plain and gzip: zlib reads both).
 * ns_nifti_read takes a path, so each input goes to a file of this process
 * first. Every value of a successful read is touched. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/ns_fuzz_nifti_%ld.nii", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    ns_nifti_t *img = NULL;
    if (ns_nifti_read(path, &img) == NS_OK) {
        const ns_nifti_info *in = ns_nifti_get_info(img);
        double sum = 0.0;
        for (int64_t i = 0; i < in->n_values; ++i) sum += ns_nifti_value(img, i);
        (void)sum;
        ns_nifti_destroy(img);
    }
    unlink(path);
    return 0;
}
