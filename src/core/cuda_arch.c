/* Which GPUs the CUDA code of this build runs on (core/cuda_arch.h). Plain
 * C, compiled in every build, so that tests/core/test_cuda_arch.c runs without a
 * GPU. */
#include "core/cuda_arch.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#ifndef NS_CUDA_ARCHS
#define NS_CUDA_ARCHS ""
#endif

const char *ns_cuda_built_archs(void) { return NS_CUDA_ARCHS; }

/* One entry: "86", "86-real", "90-virtual", "90a", "100f-real". Returns 0
 * on a malformed entry. Entries are separated by ';' or ',' (CMake's list,
 * or the compile definition NS_CUDA_ARCHS, where ';' cannot stand). */
static int parse_entry(const char *s, size_t len, int *cc, int *real, int *ptx, int *exact) {
    size_t i = 0;
    int v = 0;
    while (i < len && isdigit((unsigned char)s[i])) v = v * 10 + (s[i++] - '0');
    if (i == 0 || v < 10) return 0;
    *cc = v;
    *exact = 0;
    int specific = 0; /* 90a: this chip only; 100f: this family (major) */
    if (i < len && (s[i] == 'a' || s[i] == 'f')) {
        *exact = s[i] == 'a';
        specific = 1;
        ++i;
    }
    *real = 1;
    *ptx = !specific; /* arch- and family-specific targets have no portable PTX */
    if (i == len) return 1;
    if (len - i == 5 && strncmp(s + i, "-real", 5) == 0) {
        *ptx = 0;
        return 1;
    }
    if (len - i == 8 && strncmp(s + i, "-virtual", 8) == 0) {
        *real = 0;
        return 1;
    }
    return 0;
}

int ns_cuda_archs_run_on(const char *archs, int major, int minor) {
    if (!archs || !*archs) return -1;
    const int dev = major * 10 + minor;
    int judged = 0;
    const char *p = archs;
    while (*p) {
        const char *end = strpbrk(p, ";,");
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        int cc, real, ptx, exact;
        if (len > 0) {
            if (!parse_entry(p, len, &cc, &real, &ptx, &exact)) return -1; /* all, native, ... */
            judged = 1;
            if (real && cc / 10 == major && (exact ? cc % 10 == minor : cc % 10 <= minor)) return 1;
            if (ptx && cc <= dev) return 1;
        }
        if (!end) break;
        p = end + 1;
    }
    return judged ? 0 : -1;
}

int ns_cuda_archs_min(const char *archs) {
    if (!archs || ns_cuda_archs_run_on(archs, 1, 0) < 0) return 0;
    int best = 0;
    const char *p = archs;
    while (*p) {
        const char *end = strpbrk(p, ";,");
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        int cc, real, ptx, exact;
        if (len > 0 && parse_entry(p, len, &cc, &real, &ptx, &exact) && (best == 0 || cc < best)) best = cc;
        if (!end) break;
        p = end + 1;
    }
    return best;
}
