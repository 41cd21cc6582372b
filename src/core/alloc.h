/* Private: the arrays of a structure allocated at once (each freed by the
 * structure's own free function, which frees every pointer, NULL or not). */
#ifndef NS_CORE_ALLOC_H
#define NS_CORE_ALLOC_H

#include <stdlib.h>
#include <string.h>

typedef struct ns_array_spec {
    void *slot;   /* the address of the array's pointer (a T **) */
    size_t bytes; /* the array's size */
} ns_array_spec;

/* The spec of array p (an lvalue of type T *) of n elements of T. */
#define NS_ARRAY(p, n) {(void *)&(p), (size_t)(n) * sizeof *(p)}

/* malloc each array of specs[0 .. count - 1], every one whatever the others
 * gave, so that each pointer is an allocation or NULL; 1 when all were
 * allocated. */
static inline int ns_alloc_arrays(const ns_array_spec *specs, size_t count) {
    int ok = 1;
    for (size_t k = 0; k < count; ++k) {
        void *p = malloc(specs[k].bytes);
        memcpy(specs[k].slot, &p, sizeof p);
        ok &= p != NULL;
    }
    return ok;
}

#endif
