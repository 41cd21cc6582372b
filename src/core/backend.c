/* The backend layer in core: names of backends and families, and the
 * registry's mechanism (core/registry.h): lookups in a family's table. */
#include <stddef.h>
#include <string.h>

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

const ns_impl *ns_registry_find(ns_impl_table t, int32_t method, const void *problem) {
    if (method < 0 || method >= 64) return NULL;
    for (size_t i = 0; i < t.count; ++i)
        if ((t.impl[i].methods & NS_METHOD_BIT(method)) &&
            (!problem || !t.impl[i].accepts || t.impl[i].accepts(method, problem)))
            return &t.impl[i];
    return NULL;
}

ns_backend ns_registry_backend(ns_impl_table t, int32_t method) {
    const ns_impl *impl = ns_registry_find(t, method, NULL);
    return impl ? impl->backend : NS_BACKEND_AUTO;
}

const ns_impl *ns_registry_for_backend(ns_impl_table t, ns_backend backend) {
    for (size_t i = 0; i < t.count; ++i)
        if (t.impl[i].backend == backend) return &t.impl[i];
    return NULL;
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
