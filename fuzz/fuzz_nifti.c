/* libFuzzer target: the NIfTI-1 reader (plain and gzip: zlib reads both).
 * ns_nifti_read takes a path, so each input goes to a file of this process
 * first. Every value of a successful read is touched. */
#include "fuzz_file.h"
#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("nifti", ".nii", data, size);
    if (!path) return 0;
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
