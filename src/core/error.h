/* Private: setting the thread's last-error detail. */
#ifndef NS_CORE_ERROR_H
#define NS_CORE_ERROR_H

#include "neurosolve/status.h" /* and NS_API */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NS_PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define NS_PRINTF_LIKE(f, a)
#endif

/* Record a printf-style detail for `status` and return `status`, so that
 * error paths read `return ns_fail(NS_ERR_SIZE, "n = %d must be > 0", n);` */
/* NS_API: exported from a shared libneurosolve for libneurosolve_mpi. */
NS_API ns_status ns_fail(ns_status status, const char *format, ...) NS_PRINTF_LIKE(2, 3);

/* Prefix the current detail with "prefix: " (adds context on the way up). */
NS_API void ns_error_prefix(const char *prefix);

#ifdef __cplusplus
}
#endif
#endif
