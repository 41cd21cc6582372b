// Vector operations of SBBNNLS on the device (life_kernels.h). Reductions
// are two-pass with a fixed grid, so results do not depend on timing.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "life/cuda/life_kernels.h"

#define THREADS 256

static int blocks_for(int64_t n) {
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b > 4096) b = 4096;
    return b < 1 ? 1 : (int)b;
}

#define GRID_STRIDE(i, n) \
    for (int64_t i = threadIdx.x + (int64_t)blockIdx.x * blockDim.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

__global__ void k_fill(double *v, double x, int64_t n) { GRID_STRIDE(i, n) v[i] = x; }
__global__ void k_to_float(const double *a, float *b, int64_t n) { GRID_STRIDE(i, n) b[i] = (float)a[i]; }
__global__ void k_to_half(const double *a, __half *b, double down, int64_t n) {
    GRID_STRIDE(i, n) b[i] = __float2half_rn((float)(a[i] * down));
}
__global__ void k_sub(double *a, const double *b, int64_t n) { GRID_STRIDE(i, n) a[i] -= b[i]; }
__global__ void k_mul(double *a, const double *b, int64_t n) { GRID_STRIDE(i, n) a[i] *= b[i]; }
__global__ void k_add(double *a, double x, int64_t n) { GRID_STRIDE(i, n) a[i] += x; }
__global__ void k_mask(double *v, const double *x, const double *g, int64_t n) {
    GRID_STRIDE(i, n) if (x[i] == 0.0 && g[i] > 0.0) v[i] = 0.0;
}
__global__ void k_update(double *x, const double *g, double alpha, int64_t n) {
    GRID_STRIDE(i, n) {
        const double v = x[i] - alpha * g[i];
        x[i] = v > 0.0 ? v : 0.0;
    }
}

enum { OP_DOT = 0, OP_PG = 1, OP_NNZ = 2 };

template <int OP>
__device__ __forceinline__ double combine(double a, double b) {
    return OP == OP_PG ? fmax(a, b) : a + b;
}

// A block's THREADS values into one (shared memory tree, fixed order).
template <int OP>
__device__ double block_reduce(double v) {
    __shared__ double sh[THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] = combine<OP>(sh[threadIdx.x], sh[threadIdx.x + s]);
        __syncthreads();
    }
    return sh[0];
}

template <int OP>
__global__ void k_reduce(const double *a, const double *b, int64_t n, double *partial) {
    double v = 0.0;
    GRID_STRIDE(i, n) {
        if (OP == OP_DOT) v += a[i] * b[i];
        else if (OP == OP_PG) {
            if (a[i] != 0.0 || b[i] < 0.0) v = fmax(v, fabs(b[i]));
        } else v += a[i] != 0.0 ? 1.0 : 0.0;
    }
    v = block_reduce<OP>(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
}

template <int OP>
__global__ void k_finish(const double *partial, double *result) {
    double v = 0.0;
    for (int i = threadIdx.x; i < NS_LIFE_RED_BLOCKS; i += THREADS) v = combine<OP>(v, partial[i]);
    v = block_reduce<OP>(v);
    if (threadIdx.x == 0) *result = v;
}

template <int OP>
static cudaError_t reduce(const double *a, const double *b, int64_t n, double *partial,
                          double *result, cudaStream_t s) {
    k_reduce<OP><<<NS_LIFE_RED_BLOCKS, THREADS, 0, s>>>(a, b, n, partial);
    k_finish<OP><<<1, THREADS, 0, s>>>(partial, result);
    return cudaGetLastError();
}

extern "C" {
cudaError_t ns_life_vec_fill(double *v, double x, int64_t n, cudaStream_t s) {
    k_fill<<<blocks_for(n), THREADS, 0, s>>>(v, x, n);
    return cudaGetLastError();
}
cudaError_t ns_life_to_float(const double *a, float *b, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    k_to_float<<<blocks_for(n), THREADS, 0, s>>>(a, b, n);
    return cudaGetLastError();
}
cudaError_t ns_life_to_half(const double *a, void *b, double down, int64_t n, cudaStream_t s) {
    if (n <= 0) return cudaSuccess;
    k_to_half<<<blocks_for(n), THREADS, 0, s>>>(a, (__half *)b, down, n);
    return cudaGetLastError();
}
cudaError_t ns_life_vec_sub(double *a, const double *b, int64_t n, cudaStream_t s) {
    k_sub<<<blocks_for(n), THREADS, 0, s>>>(a, b, n);
    return cudaGetLastError();
}
cudaError_t ns_life_vec_mul(double *a, const double *b, int64_t n, cudaStream_t s) {
    k_mul<<<blocks_for(n), THREADS, 0, s>>>(a, b, n);
    return cudaGetLastError();
}
cudaError_t ns_life_vec_add_scalar(double *a, double x, int64_t n, cudaStream_t s) {
    k_add<<<blocks_for(n), THREADS, 0, s>>>(a, x, n);
    return cudaGetLastError();
}
cudaError_t ns_life_vec_mask(double *v, const double *x, const double *g, int64_t n, cudaStream_t s) {
    k_mask<<<blocks_for(n), THREADS, 0, s>>>(v, x, g, n);
    return cudaGetLastError();
}
cudaError_t ns_life_vec_update(double *x, const double *g, double alpha, int64_t n, cudaStream_t s) {
    k_update<<<blocks_for(n), THREADS, 0, s>>>(x, g, alpha, n);
    return cudaGetLastError();
}
cudaError_t ns_life_vec_dot(const double *a, const double *b, int64_t n, double *partial,
                            double *result, cudaStream_t s) {
    return reduce<OP_DOT>(a, b, n, partial, result, s);
}
cudaError_t ns_life_vec_pgnorm(const double *x, const double *g, int64_t n, double *partial,
                               double *result, cudaStream_t s) {
    return reduce<OP_PG>(x, g, n, partial, result, s);
}
cudaError_t ns_life_vec_nnz(const double *x, int64_t n, double *partial, double *result,
                            cudaStream_t s) {
    return reduce<OP_NNZ>(x, x, n, partial, result, s);
}
}
