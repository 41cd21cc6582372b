/* test_nmodl_cuda_emu's CUDA runtime (tests/nmodl/nmodl.cmake): the calls test_nmodl_cuda and the
 * generated mechanism code make, on the host. Device memory is host memory (cudaMalloc is malloc,
 * a copy is memcpy), a launch is a loop over its blocks and threads (NSEMU_LAUNCH, which this
 * folder's nvcc writes in place of <<<...>>>; a mechanism's kernels are a thread per instance, no
 * thread waits for another), the atomics are plain operations, and there is one "device"
 * (ns_cuda_device_count). What it cannot show: the device's libm and contracted multiply-adds, its
 * stack (a recursion's depth), races. */
#ifndef NS_CUDA_EMU_RUNTIME_H
#define NS_CUDA_EMU_RUNTIME_H
#include <stdlib.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))

typedef int cudaError_t;
typedef void *cudaStream_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
enum { cudaLimitStackSize = 0 };
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }
static inline const char *cudaGetErrorString(cudaError_t e) { return e ? "emulated error" : "no error"; }
static inline cudaError_t cudaMalloc(void **p, size_t n) {
    *p = malloc(n ? n : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p) { return free(p), cudaSuccess; }
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int kind) {
    return (void)kind, memcpy(d, s, n), cudaSuccess;
}
static inline cudaError_t cudaMemset(void *d, int v, size_t n) { return memset(d, v, n), cudaSuccess; }
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
static inline cudaError_t cudaDeviceGetLimit(size_t *s, int limit) { return (void)limit, *s = 1 << 20, cudaSuccess; }
static inline cudaError_t cudaDeviceSetLimit(int limit, size_t s) { return (void)limit, (void)s, cudaSuccess; }

typedef struct { double x, y; } double2;
static inline double2 make_double2(double x, double y) {
    double2 r = {x, y};
    return r;
}
struct ns_emu_dim3 { unsigned x, y, z; };
static __attribute__((unused)) struct ns_emu_dim3 blockIdx, blockDim, threadIdx, gridDim;
#define NSEMU_LAUNCH(g, t, call)                                                   \
    do {                                                                           \
        gridDim.x = (unsigned)(g);                                                 \
        blockDim.x = (unsigned)(t);                                                \
        for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)                 \
            for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x) call;   \
    } while (0)

#ifdef __cplusplus
template <class T> static inline T atomicCAS(T *a, T c, T v) {
    const T o = *a;
    if (o == c) *a = v;
    return o;
}
template <class T, class U> static inline T atomicAdd(T *a, U v) {
    const T o = *a;
    *a += (T)v;
    return o;
}
template <class T, class U> static inline T atomicExch(T *a, U v) {
    const T o = *a;
    *a = (T)v;
    return o;
}
static inline void __threadfence(void) {}
#endif

/* the test's own question: one device */
#define ns_cuda_device_count(p) (*(p) = 1, NS_OK)
#endif
