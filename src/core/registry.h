/* Private: the backend registry's mechanism (core). Each family lists its
 * implementations in one table of its own (hines/solver.c, tridiag/solver.c,
 * sim/sim.c, life/engine.c): the backend each runs on, the methods it
 * runs, its ops table (the family's own type; NULL when the build lacks the
 * backend) and, where several implementations share a method, which
 * problems it takes. Families never test `if (cuda)`: they find the
 * implementation of a method here and call through its ops. src/backends.c,
 * above the families, gathers the four tables for the capability query
 * (neurosolve/backend.h). docs/architecture.md draws it. */
#ifndef NS_CORE_REGISTRY_H
#define NS_CORE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_METHOD_BIT(m) (UINT64_C(1) << (m))
#define NS_IMPL_TABLE(array) ((ns_impl_table){(array), sizeof(array) / sizeof((array)[0])})

typedef struct ns_impl {
    ns_family family;
    ns_backend backend;
    const char *name;          /* "cuda-tree", ... (messages, docs) */
    uint64_t methods;          /* NS_METHOD_BIT(m) for each method it runs */
    const void *(*ops)(void);  /* the family's ops table; returns NULL when not compiled in */
    /* Whether it takes `problem` (the family's handle under construction,
     * e.g. a Hines batch) for `method`; NULL: every problem. */
    int (*accepts)(int32_t method, const void *problem);
} ns_impl;

/* A family's table, in order of preference. */
typedef struct ns_impl_table {
    const ns_impl *impl;
    size_t count;
} ns_impl_table;

/* The first implementation of the table that lists `method` and accepts
 * `problem` (NULL: ignore accepts); NULL when none does. */
const ns_impl *ns_registry_find(ns_impl_table table, int32_t method, const void *problem);

/* The backend `method` runs on (NS_BACKEND_AUTO: no such method). */
ns_backend ns_registry_backend(ns_impl_table table, int32_t method);

/* The implementation of the table for `backend` (the first; NULL: none). */
const ns_impl *ns_registry_for_backend(ns_impl_table table, ns_backend backend);

/* NS_OK when `impl` can run now (compiled in and, for CUDA, a usable GPU);
 * else NS_ERR_UNSUPPORTED / NS_ERR_NO_DEVICE naming `what` (the method). */
ns_status ns_registry_ready(const ns_impl *impl, const char *what);

#ifdef __cplusplus
}
#endif
#endif
