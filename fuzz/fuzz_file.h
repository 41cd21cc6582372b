/* Fuzz targets whose reader takes a path: the input goes to a file of this
 * process first (the name keeps the extension the reader dispatches on). */
#ifndef NS_FUZZ_FILE_H
#define NS_FUZZ_FILE_H
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static inline const char *fuzz_file(const char *tag, const char *ext, const uint8_t *data, size_t size) {
    static char path[4][128];
    static int next = 0;
    char *p = path[next++ & 3];
    snprintf(p, sizeof path[0], "/tmp/ns_fuzz_%s_%ld%s", tag, (long)getpid(), ext);
    FILE *f = fopen(p, "wb");
    if (!f) return NULL;
    fwrite(data, 1, size, f);
    fclose(f);
    return p;
}
#endif
