/* Version string and build information. */
#include "neurosolve/version.h"
#include "core/cuda_arch.h"

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

const char *ns_version(void) { return NS_VERSION_STRING; }

unsigned ns_version_number(void) { return NS_VERSION_NUMBER; }

void ns_get_build_info(ns_build_info *info) {
    if (!info) return;
#ifdef NS_HAVE_CUDA
    info->cuda = 1;
#else
    info->cuda = 0;
#endif
#ifdef NS_HAVE_OPENMP
    info->openmp = 1;
    info->openmp_threads = omp_get_max_threads();
#else
    info->openmp = 0;
    info->openmp_threads = 1;
#endif
    info->build_type = NS_BUILD_TYPE;
    info->cuda_architectures = ns_cuda_built_archs();
}
