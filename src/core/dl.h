/* Private: a CUDA library loaded at run time into a table of its functions
 * (cuSPARSE: tridiag/cuda/cusparse_load.c; cuBLAS: lfp/cuda/cublas_load.c),
 * so that the library does not link them and a CUDA build runs wherever the
 * CUDA driver is. */
#ifndef NS_CORE_DL_H
#define NS_CORE_DL_H

#include <stddef.h>

typedef struct ns_dl_sym {
    const char *name; /* the library's symbol */
    size_t offset;    /* of its pointer in the table */
} ns_dl_sym;

/* dlopen the first of `names` that loads and fill the table at `api` with
 * the n_syms symbols; the handle stays open for the process. 1 on success,
 * else 0 with the reason in why. */
int ns_dl_table(const char *const *names, size_t n_names, const ns_dl_sym *syms, size_t n_syms, void *api,
                char *why, size_t why_size);

#endif
