/* cuSPARSE loaded at run time (tridiag/cuda/cusparse_check.h): the library does not link
 * libcusparse, so that a CUDA build (the GPU wheel, docs/python.md) runs wherever the CUDA
 * driver is, and only the cusparse-* methods need libcusparse.so.12 (the CUDA toolkit's, or the
 * nvidia-cusparse wheel's, found by the dynamic loader's search: its own cache and paths, an
 * already loaded copy; then the build's toolkit directory). */
#include "core/dl.h"
#include "tridiag/cuda/cusparse_check.h"

static ns_cusparse_api api;
/* the loader's search, then the toolkit this library was built with */
static const char *const names[] = {"libcusparse.so.12", "libcusparse.so", NS_CUDA_LIBRARY_DIR "/libcusparse.so.12"};
static const ns_dl_sym syms[] = {
#define NS_SYM(f) {"cusparse" #f, offsetof(ns_cusparse_api, f)}
    NS_SYM(Create), NS_SYM(Destroy), NS_SYM(SetStream), NS_SYM(GetErrorName), NS_SYM(GetErrorString),
    NS_SYM(Sgtsv2StridedBatch_bufferSizeExt), NS_SYM(Dgtsv2StridedBatch_bufferSizeExt),
    NS_SYM(SgtsvInterleavedBatch_bufferSizeExt), NS_SYM(DgtsvInterleavedBatch_bufferSizeExt),
    NS_SYM(Sgtsv2StridedBatch), NS_SYM(Dgtsv2StridedBatch), NS_SYM(SgtsvInterleavedBatch),
    NS_SYM(DgtsvInterleavedBatch),
#undef NS_SYM
};
static ns_dl_lib lib = NS_DL_LIB(names, syms, &api);

ns_status ns_cusparse_load(const ns_cusparse_api **out) {
    if (!ns_dl_ready(&lib))
        return ns_fail(NS_ERR_UNSUPPORTED, "the cusparse-* methods need cuSPARSE: %s (install the CUDA toolkit's "
                       "libcusparse or the nvidia-cusparse wheel; the other methods do not need it)", lib.why);
    *out = &api;
    return NS_OK;
}

const ns_cusparse_api *ns_cusparse_api_loaded(void) { return lib.loaded ? &api : NULL; }
