/* Private: the backend registry (core). One table lists every
 * implementation of every family (src/backends.c): the backend it runs on,
 * the methods it runs, its ops table (the family's own type; NULL when the
 * build lacks the backend) and, where several implementations share a
 * method, which problems it takes. Families never test `if (cuda)`: they ask
 * the registry for the implementation of a method and call through its ops.
 * docs/architecture.md draws it. */
#ifndef NS_CORE_REGISTRY_H
#define NS_CORE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_METHOD_BIT(m) (UINT64_C(1) << (m))

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

/* The table (src/backends.c), in order of preference. */
const ns_impl *ns_registry_table(size_t *count);

/* The first implementation of `family` that lists `method` and accepts
 * `problem` (NULL: ignore accepts); NULL when none does. */
const ns_impl *ns_registry_find(ns_family family, int32_t method, const void *problem);

/* The backend `method` of `family` runs on (NS_BACKEND_AUTO: no such method). */
ns_backend ns_registry_backend(ns_family family, int32_t method);

/* NS_OK when `impl` can run now (compiled in and, for CUDA, a usable GPU);
 * else NS_ERR_UNSUPPORTED / NS_ERR_NO_DEVICE naming `what` (the method). */
ns_status ns_registry_ready(const ns_impl *impl, const char *what);

#ifdef __cplusplus
}
#endif
#endif
