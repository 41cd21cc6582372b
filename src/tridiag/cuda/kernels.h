/* Private: the launchers of the tridiagonal CUDA kernels (extern "C", so the
 * host code in backend_cuda.c, compiled as C, can call them). Every launcher
 * returns the launch's cudaError_t; the caller turns it into a status.
 *
 * Arrays are device arrays in the kernel's native layout, dense:
 *   Interleaved  unknown k of system s at k * batch + s (rows < n, or the
 *                largest size for variable batches: padded)
 *   Flat         at s * n + k
 * Pivot failures are recorded in *err as (system << 32) | unknown with
 * atomicMin, so the lowest failing system is kept; ~0 means none. */
#ifndef NS_TRIDIAG_CUDA_KERNELS_H
#define NS_TRIDIAG_CUDA_KERNELS_H

#include <stdint.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_td_args {
    int f32;                   /* 1: float arrays, else double */
    int32_t n;                 /* unknowns per system (the largest size when variable) */
    int32_t batch;
    void *dl, *d, *du, *x;     /* x: right-hand side in, solution out */
    const int32_t *sizes;      /* variable batches: batch sizes on the device */
    double tol;                /* relative pivot tolerance */
    unsigned long long *err;   /* device: first failure, ~0 = none */
} ns_td_args;

#define NS_TD_NO_ERROR (~0ull)

/* cuThomasBatch: one thread per system, Interleaved; overwrites du with the
 * eliminated upper diagonal. */
cudaError_t ns_td_launch_thomas(const ns_td_args *a, cudaStream_t stream);
/* cuThomasVBatch on the padded Interleaved layout: computing_padding = 1
 * runs every thread over all n rows (identity rows past its size), 0 stops
 * each thread at its own size. Overwrites du like ns_td_launch_thomas. */
cudaError_t ns_td_launch_vbatch(const ns_td_args *a, int computing_padding, cudaStream_t stream);
/* On-chip PCR-Thomas hybrid, Flat: a warp per system (block = 0, n <= 512)
 * or a block per system (block = 1, n <= 8192). Reads dl, d, du; writes x. */
cudaError_t ns_td_launch_onchip(const ns_td_args *a, int block, cudaStream_t stream);
/* The rows-per-thread and threads-per-system the on-chip launcher picks. */
void ns_td_onchip_shape(int32_t n, int32_t batch, int block, int *rows_per_thread,
                        int *threads_per_system);

/* dst[c * rows + r] = src[r * cols + c] (Flat <-> Interleaved, fixed size). */
cudaError_t ns_td_launch_transpose(int f32, const void *src, void *dst, int64_t rows, int64_t cols,
                                   cudaStream_t stream);
/* Variable sizes: Flat with offsets <-> padded Interleaved (nmax rows). Only
 * entries k < sizes[s] are read or written. */
cudaError_t ns_td_launch_flat_to_padded(int f32, const void *flat, void *padded,
                                        const int64_t *offsets, const int32_t *sizes,
                                        int32_t batch, int32_t nmax, cudaStream_t stream);
cudaError_t ns_td_launch_padded_to_flat(int f32, const void *padded, void *flat,
                                        const int64_t *offsets, const int32_t *sizes,
                                        int32_t batch, int32_t nmax, cudaStream_t stream);
/* Zero dl[0] and du[n-1] of every system (cuSPARSE reads them). */
cudaError_t ns_td_launch_zero_ends(int f32, int interleaved, int32_t n, int32_t batch, void *dl,
                                   void *du, cudaStream_t stream);
/* Record the first non-finite entry of x in *err (for cuSPARSE, which does
 * not report pivots). */
cudaError_t ns_td_launch_find_nonfinite(int f32, int interleaved, int32_t n, int32_t batch,
                                        const void *x, unsigned long long *err, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
