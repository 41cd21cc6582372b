/* The translator's arena: a list of blocks, freed together. */
#include <stdlib.h>

#include "nmodl/nmodl_impl.h"

static int track(nm_arena *a, void *p) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        void **n = realloc(a->p, cap * sizeof *n);
        if (!n) return -1;
        a->p = n;
        a->cap = cap;
    }
    a->p[a->n++] = p;
    return 0;
}

void *nm_calloc(nm_arena *a, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p && track(a, p)) {
        free(p);
        return NULL;
    }
    return p;
}

void *nm_realloc(nm_arena *a, void *old, size_t size) {
    if (!old) {
        void *p = malloc(size ? size : 1);
        if (p && track(a, p)) {
            free(p);
            return NULL;
        }
        return p;
    }
    for (size_t i = a->n; i-- > 0;) /* recent blocks first: lists grow where they were made */
        if (a->p[i] == old) {
            void *p = realloc(old, size ? size : 1);
            if (p) a->p[i] = p;
            return p;
        }
    return NULL; /* not from this arena: a bug */
}

void nm_arena_free(nm_arena *a) {
    for (size_t i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
    a->p = NULL;
    a->n = a->cap = 0;
}
