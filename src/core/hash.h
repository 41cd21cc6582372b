/* Private: FNV-1a over bytes, 64 bits (file checksums and fingerprints). */
#ifndef NS_CORE_HASH_H
#define NS_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define NS_FNV_OFFSET 0xcbf29ce484222325ULL

static inline uint64_t ns_fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#endif
