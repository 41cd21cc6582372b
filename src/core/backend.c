/* The backend layer's public face (neurosolve/backend.h): names, what each
 * backend offers here, and which methods can run, all answered from the
 * registry (core/registry.h). */
#include <stddef.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "core/device_impl.h"
#include "core/error.h"
#include "core/registry.h"

const char *ns_backend_name(ns_backend backend) {
    switch (backend) {
    case NS_BACKEND_AUTO: return "auto";
    case NS_BACKEND_CPU: return "cpu";
    case NS_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

ns_status ns_backend_from_name(const char *name, ns_backend *backend) {
    if (!name || !backend) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_backend_from_name: NULL argument");
    if (strcmp(name, "auto") == 0) *backend = NS_BACKEND_AUTO;
    else if (strcmp(name, "cpu") == 0) *backend = NS_BACKEND_CPU;
    else if (strcmp(name, "cuda") == 0 || strcmp(name, "gpu") == 0) *backend = NS_BACKEND_CUDA;
    else return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown backend '%s' (auto, cpu, cuda)", name);
    return NS_OK;
}

const char *ns_family_name(ns_family family) {
    switch (family) {
    case NS_FAMILY_HINES: return "hines";
    case NS_FAMILY_TRIDIAG: return "tridiag";
    case NS_FAMILY_SIM: return "sim";
    case NS_FAMILY_LIFE: return "life";
    }
    return "unknown";
}

/* Whether any implementation of `backend` is compiled in. */
static int compiled(ns_backend backend) {
    size_t n = 0;
    const ns_impl *t = ns_registry_table(&n);
    for (size_t i = 0; i < n; ++i)
        if (t[i].backend == backend && t[i].ops()) return 1;
    return 0;
}

ns_status ns_backend_query(ns_backend backend, ns_backend_info *info) {
    if (!info) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_backend_query: info is NULL");
    memset(info, 0, sizeof *info);
    info->backend = backend;
    switch (backend) {
    case NS_BACKEND_CPU:
        info->compiled = 1;
        info->devices = 1;
#ifdef NS_HAVE_OPENMP
        info->threads = omp_get_max_threads();
#else
        info->threads = 1;
#endif
        return NS_OK;
    case NS_BACKEND_CUDA:
        info->compiled = compiled(NS_BACKEND_CUDA);
        info->devices = info->compiled ? ns_cuda_usable_devices() : 0;
        return NS_OK;
    case NS_BACKEND_AUTO: break;
    }
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_backend_query: %d is not a backend (cpu or cuda)", (int)backend);
}

int32_t ns_backend_methods(ns_backend backend, ns_family family, int32_t *methods, int32_t capacity) {
    size_t n = 0;
    const ns_impl *t = ns_registry_table(&n);
    uint64_t seen = 0;
    for (size_t i = 0; i < n; ++i)
        if (t[i].family == family && t[i].backend == backend && t[i].ops()) seen |= t[i].methods;
    int32_t count = 0;
    for (int32_t m = 1; m < 64; ++m)
        if (seen & NS_METHOD_BIT(m)) {
            if (methods && count < capacity) methods[count] = m;
            ++count;
        }
    return count;
}

const ns_impl *ns_registry_find(ns_family family, int32_t method, const void *problem) {
    if (method < 0 || method >= 64) return NULL;
    size_t n = 0;
    const ns_impl *t = ns_registry_table(&n);
    for (size_t i = 0; i < n; ++i)
        if (t[i].family == family && (t[i].methods & NS_METHOD_BIT(method)) &&
            (!problem || !t[i].accepts || t[i].accepts(method, problem)))
            return &t[i];
    return NULL;
}

ns_backend ns_registry_backend(ns_family family, int32_t method) {
    const ns_impl *impl = ns_registry_find(family, method, NULL);
    return impl ? impl->backend : NS_BACKEND_AUTO;
}

ns_status ns_registry_ready(const ns_impl *impl, const char *what) {
    if (!impl->ops())
        return ns_fail(NS_ERR_UNSUPPORTED, "%s runs on the %s backend, which this build does not have%s", what,
                       ns_backend_name(impl->backend),
                       impl->backend == NS_BACKEND_CUDA ? " (built without CUDA: NS_CUDA=OFF or no nvcc)" : "");
    if (impl->backend == NS_BACKEND_CUDA && ns_cuda_usable_devices() == 0)
        return ns_fail(NS_ERR_NO_DEVICE, "%s needs a GPU, and none is usable here", what);
    return NS_OK;
}

ns_status ns_method_available(ns_family family, int32_t method) {
    const ns_impl *impl = ns_registry_find(family, method, NULL);
    if (!impl)
        return ns_fail(NS_ERR_UNSUPPORTED, "%d is not a method of the %s family", (int)method, ns_family_name(family));
    /* LiFE variants exist on both backends: available when any implementation can run */
    size_t n = 0;
    const ns_impl *t = ns_registry_table(&n);
    ns_status first = NS_OK;
    for (size_t i = 0; i < n; ++i) {
        if (t[i].family != family || !(t[i].methods & NS_METHOD_BIT(method))) continue;
        ns_status st = ns_registry_ready(&t[i], ns_family_name(family));
        if (st == NS_OK) {
            ns_clear_error();
            return NS_OK;
        }
        if (first == NS_OK) first = st;
    }
    return ns_registry_ready(impl, ns_family_name(family));
}
