/* cuBLAS loaded at run time (lfp_impl.h's ns_lfp_cublas_load): the library
 * does not link libcublas (as tridiag/cuda/cusparse_load.c for cuSPARSE);
 * only the LFP of a CUDA simulation needs libcublas (CUDA 13's .so.13 or
 * 12's .so.12: the CUDA toolkit's or the nvidia-cublas wheel's, found by the
 * dynamic loader's search, then in the build's toolkit directory). */
#include "core/dl.h"
#include "lfp/cuda/cublas_api.h"

static ns_cublas_api api;
static const char *const names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
                                    NS_CUDA_LIBRARY_DIR "/libcublas.so"};
static const ns_dl_sym syms[] = {
    {"cublasCreate_v2", offsetof(ns_cublas_api, Create)},
    {"cublasDestroy_v2", offsetof(ns_cublas_api, Destroy)},
    {"cublasSetStream_v2", offsetof(ns_cublas_api, SetStream)},
    {"cublasGetStatusString", offsetof(ns_cublas_api, GetStatusString)},
    {"cublasDgemmStridedBatched", offsetof(ns_cublas_api, DgemmStridedBatched)},
    {"cublasDgemmBatched", offsetof(ns_cublas_api, DgemmBatched)},
};
static ns_dl_lib lib = NS_DL_LIB(names, syms, &api);

ns_status ns_cublas_load(const ns_cublas_api **out) {
    if (!ns_dl_ready(&lib))
        return ns_fail(NS_ERR_UNSUPPORTED, "the LFP of a CUDA simulation needs cuBLAS: %s (install the CUDA toolkit's "
                       "libcublas or the nvidia-cublas wheel)", lib.why);
    *out = &api;
    return NS_OK;
}
