/* Private: turning cuSPARSE statuses into neurosolve statuses at the call
 * site (the cuSPARSE counterpart of core/cuda_check.h). */
#ifndef NS_TRIDIAG_CUSPARSE_CHECK_H
#define NS_TRIDIAG_CUSPARSE_CHECK_H

#define DISABLE_CUSPARSE_DEPRECATED /* we use no deprecated API; keep its warnings out of C builds */
#include <cusparse.h>

#include <stddef.h>

#include "core/error.h"

/* The cuSPARSE functions the backend calls, loaded from libcusparse.so.12 at the first solver
 * of a cusparse-* method (cusparse_load.c): the library does not link libcusparse. */
typedef struct ns_cusparse_api {
    cusparseStatus_t (*Create)(cusparseHandle_t *);
    cusparseStatus_t (*Destroy)(cusparseHandle_t);
    cusparseStatus_t (*SetStream)(cusparseHandle_t, cudaStream_t);
    const char *(*GetErrorName)(cusparseStatus_t);
    const char *(*GetErrorString)(cusparseStatus_t);
    cusparseStatus_t (*Sgtsv2StridedBatch_bufferSizeExt)(cusparseHandle_t, int, const float *, const float *,
                                                         const float *, const float *, int, int, size_t *);
    cusparseStatus_t (*Dgtsv2StridedBatch_bufferSizeExt)(cusparseHandle_t, int, const double *, const double *,
                                                         const double *, const double *, int, int, size_t *);
    cusparseStatus_t (*SgtsvInterleavedBatch_bufferSizeExt)(cusparseHandle_t, int, int, const float *,
                                                            const float *, const float *, const float *, int,
                                                            size_t *);
    cusparseStatus_t (*DgtsvInterleavedBatch_bufferSizeExt)(cusparseHandle_t, int, int, const double *,
                                                            const double *, const double *, const double *, int,
                                                            size_t *);
    cusparseStatus_t (*Sgtsv2StridedBatch)(cusparseHandle_t, int, const float *, const float *, const float *,
                                           float *, int, int, void *);
    cusparseStatus_t (*Dgtsv2StridedBatch)(cusparseHandle_t, int, const double *, const double *,
                                           const double *, double *, int, int, void *);
    cusparseStatus_t (*SgtsvInterleavedBatch)(cusparseHandle_t, int, int, float *, float *, float *, float *,
                                              int, void *);
    cusparseStatus_t (*DgtsvInterleavedBatch)(cusparseHandle_t, int, int, double *, double *, double *,
                                              double *, int, void *);
} ns_cusparse_api;

/* The table, loading libcusparse on the first call; NS_ERR_UNSUPPORTED naming the loader's
 * reason when it cannot be loaded. */
ns_status ns_cusparse_load(const ns_cusparse_api **api);
/* The table once loaded, else NULL (every call below comes after a successful load). */
const ns_cusparse_api *ns_cusparse_api_loaded(void);

/* The backend's calls keep cuSPARSE's names and go through the table. */
#define cusparseCreate (ns_cusparse_api_loaded()->Create)
#define cusparseDestroy (ns_cusparse_api_loaded()->Destroy)
#define cusparseSetStream (ns_cusparse_api_loaded()->SetStream)
#define cusparseGetErrorName (ns_cusparse_api_loaded()->GetErrorName)
#define cusparseGetErrorString (ns_cusparse_api_loaded()->GetErrorString)
#define cusparseSgtsv2StridedBatch_bufferSizeExt (ns_cusparse_api_loaded()->Sgtsv2StridedBatch_bufferSizeExt)
#define cusparseDgtsv2StridedBatch_bufferSizeExt (ns_cusparse_api_loaded()->Dgtsv2StridedBatch_bufferSizeExt)
#define cusparseSgtsvInterleavedBatch_bufferSizeExt (ns_cusparse_api_loaded()->SgtsvInterleavedBatch_bufferSizeExt)
#define cusparseDgtsvInterleavedBatch_bufferSizeExt (ns_cusparse_api_loaded()->DgtsvInterleavedBatch_bufferSizeExt)
#define cusparseSgtsv2StridedBatch (ns_cusparse_api_loaded()->Sgtsv2StridedBatch)
#define cusparseDgtsv2StridedBatch (ns_cusparse_api_loaded()->Dgtsv2StridedBatch)
#define cusparseSgtsvInterleavedBatch (ns_cusparse_api_loaded()->SgtsvInterleavedBatch)
#define cusparseDgtsvInterleavedBatch (ns_cusparse_api_loaded()->DgtsvInterleavedBatch)

static inline ns_status ns_cusparse_status(cusparseStatus_t err, const char *what, const char *file,
                                           int line) {
    if (err == CUSPARSE_STATUS_SUCCESS) return NS_OK;
    const ns_status s = err == CUSPARSE_STATUS_ALLOC_FAILED ? NS_ERR_DEVICE_MEMORY : NS_ERR_CUSPARSE;
    return ns_fail(s, "%s:%d: %s: %s (%s)", file, line, what, cusparseGetErrorString(err),
                   cusparseGetErrorName(err));
}

/* Same shape as NS_CUDA_GOTO: set `status` and jump to `label` on failure. */
#define NS_CUSPARSE_GOTO(call, status, label)                                    \
    do {                                                                         \
        (status) = ns_cusparse_status((call), #call, __FILE__, __LINE__);        \
        if ((status) != NS_OK) goto label;                                       \
    } while (0)

#define NS_CUSPARSE_TRY(call)                                                    \
    do {                                                                         \
        ns_status ns_cusparse_try_s_ = ns_cusparse_status((call), #call, __FILE__, __LINE__); \
        if (ns_cusparse_try_s_ != NS_OK) return ns_cusparse_try_s_;              \
    } while (0)

#endif
