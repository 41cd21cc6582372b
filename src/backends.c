/* The backend registry's public face (neurosolve/backend.h): what each
 * backend offers here and which methods can run, answered from the four
 * families' tables (core/registry.h; docs/architecture.md). This file sits
 * above the families and is the one place that gathers them; nothing below
 * it calls into it. An implementation whose backend the build lacks is
 * still listed (its ops getter returns NULL), so that ns_method_available
 * can say why a method cannot run rather than that it does not exist. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "sim/sim_impl.h"
#include "core/device_impl.h"
#include "core/error.h"
#include "core/registry.h"
#include "hines/batch_impl.h"
#include "life/life_impl.h"
#include "tridiag/tridiag_impl.h"

static ns_impl_table family_table(ns_family family) {
    switch (family) {
    case NS_FAMILY_HINES: return ns_hines_impls();
    case NS_FAMILY_TRIDIAG: return ns_tridiag_impls();
    case NS_FAMILY_SIM: return ns_sim_impls();
    case NS_FAMILY_LIFE: return ns_life_impls();
    }
    return (ns_impl_table){NULL, 0};
}

/* Whether any implementation of `backend` is compiled in. */
static int compiled(ns_backend backend) {
    for (int f = 0; f < NS_FAMILY_COUNT; ++f) {
        const ns_impl_table t = family_table((ns_family)f);
        for (size_t i = 0; i < t.count; ++i)
            if (t.impl[i].backend == backend && t.impl[i].ops()) return 1;
    }
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
    const ns_impl_table t = family_table(family);
    uint64_t seen = 0;
    for (size_t i = 0; i < t.count; ++i)
        if (t.impl[i].backend == backend && t.impl[i].ops()) seen |= t.impl[i].methods;
    int32_t count = 0;
    for (int32_t m = 1; m < 64; ++m)
        if (seen & NS_METHOD_BIT(m)) {
            if (methods && count < capacity) methods[count] = m;
            ++count;
        }
    return count;
}

ns_status ns_method_available(ns_family family, int32_t method) {
    const ns_impl_table t = family_table(family);
    const ns_impl *impl = ns_registry_find(t, method, NULL);
    if (!impl)
        return ns_fail(NS_ERR_UNSUPPORTED, "%d is not a method of the %s family", (int)method, ns_family_name(family));
    char what[64];
    snprintf(what, sizeof what, "%s method %d", ns_family_name(family), (int)method);
    /* LiFE's variants exist on both backends: available when any implementation can run */
    for (size_t i = 0; i < t.count; ++i)
        if ((t.impl[i].methods & NS_METHOD_BIT(method)) && ns_registry_ready(&t.impl[i], what) == NS_OK) {
            ns_clear_error();
            return NS_OK;
        }
    return ns_registry_ready(impl, what);
}
