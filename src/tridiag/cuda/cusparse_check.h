/* Private: turning cuSPARSE statuses into neurosolve statuses at the call
 * site (the cuSPARSE counterpart of core/cuda_check.h). */
#ifndef NS_TRIDIAG_CUSPARSE_CHECK_H
#define NS_TRIDIAG_CUSPARSE_CHECK_H

#define DISABLE_CUSPARSE_DEPRECATED /* we use no deprecated API; keep its warnings out of C builds */
#include <cusparse.h>

#include "core/error.h"

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
