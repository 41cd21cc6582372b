/* libFuzzer target: the tractogram readers (.trk, .tck) and the pruned copy
 * they write. The first byte picks the format (even: .trk, odd: .tck). */

#include "fuzz_file.h" /* first: it sets _POSIX_C_SOURCE */
#include <stdlib.h>
#include <string.h>
#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *ext = data[0] & 1 ? ".tck" : ".trk";
    const char *in = fuzz_file("tracts_in", ext, data + 1, size - 1);
    if (!in) return 0;
    ns_tracts_t *t = NULL;
    int64_t n = 0;
    if (ns_tracts_open(in, &t) == NS_OK) {
        for (;;) {
            const double *p = NULL;
            int64_t m = 0;
            int end = 0;
            if (ns_tracts_next(t, &p, &m, &end) != NS_OK || end) break;
            for (int64_t j = 0; j < 3 * m; ++j)
                if (!(p[j] - p[j] == 0.0)) abort(); /* the readers promise finite points */
            ++n;
        }
        ns_tracts_close(t);
    }
    if (n > 0 && n < 100000) { /* every other streamline to a pruned copy */
        uint8_t *keep = malloc((size_t)n);
        for (int64_t i = 0; keep && i < n; ++i) keep[i] = (uint8_t)(i & 1);
        const char *out = fuzz_file("tracts_out", ext, (const uint8_t *)"", 0);
        int64_t written = 0;
        if (keep && out) ns_tracts_write_subset(in, out, keep, n, &written);
        if (out) unlink(out);
        free(keep);
    }
    unlink(in);
    return 0;
}
