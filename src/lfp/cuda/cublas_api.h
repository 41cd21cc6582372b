/* Private: the cuBLAS functions the LFP's GPU reduction calls, loaded at
 * run time (cublas_load.c). */
#ifndef NS_LFP_CUBLAS_API_H
#define NS_LFP_CUBLAS_API_H

#include <cublas_v2.h>
#include <stddef.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_cublas_api {
    cublasStatus_t (*Create)(cublasHandle_t *);
    cublasStatus_t (*Destroy)(cublasHandle_t);
    cublasStatus_t (*SetStream)(cublasHandle_t, cudaStream_t);
    const char *(*GetStatusString)(cublasStatus_t);
    cublasStatus_t (*DgemmStridedBatched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const double *, const double *, int, long long, const double *, int,
                                          long long, const double *, double *, int, long long, int);
    cublasStatus_t (*DgemmBatched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                   const double *, const double *const[], int, const double *const[], int,
                                   const double *, double *const[], int, int);
} ns_cublas_api;

/* The table, loading libcublas on the first call; NS_ERR_UNSUPPORTED naming the loader's reason. */
ns_status ns_cublas_load(const ns_cublas_api **api);

#ifdef __cplusplus
}
#endif
#endif
