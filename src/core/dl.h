/* Private: a CUDA library loaded at run time into a table of its functions
 * (cuSPARSE: tridiag/cuda/cusparse_load.c; cuBLAS: lfp/cuda/cublas_load.c),
 * so that the library does not link them and a CUDA build runs wherever the
 * CUDA driver is. */
#ifndef NS_CORE_DL_H
#define NS_CORE_DL_H

#include <stddef.h>

/* Where a loader looks last, after the dynamic loader's search: the build's
 * CUDA toolkit (src/CMakeLists.txt defines it for the loaders). */
#ifndef NS_CUDA_LIBRARY_DIR
#define NS_CUDA_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

typedef struct ns_dl_sym {
    const char *name; /* the library's symbol */
    size_t offset;    /* of its pointer in the table */
} ns_dl_sym;

/* One library: the file names to try in order, its symbols, the table they
 * fill; tried, loaded (1 once the table is filled) and why (the reason it is
 * not) are ns_dl_ready's. */
typedef struct ns_dl_lib {
    const char *const *names;
    size_t n_names;
    const ns_dl_sym *syms;
    size_t n_syms;
    void *api;
    int tried;
    int loaded;
    char why[512];
} ns_dl_lib;

/* An ns_dl_lib of the arrays `names` and `syms` filling *api. */
#define NS_DL_LIB(names, syms, api) \
    {(names), sizeof(names) / sizeof *(names), (syms), sizeof(syms) / sizeof *(syms), (api), 0, 0, ""}

/* On the first call for lib (thread-safe): dlopen the first of lib's names
 * that loads and fill its table with its symbols; the handle stays open for
 * the process. Returns lib->loaded: 1 when the table is filled, else 0 with
 * the reason in lib->why. */
int ns_dl_ready(ns_dl_lib *lib);

#endif
