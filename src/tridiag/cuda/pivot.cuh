// Private (CUDA): the pivot test and the error report of the tridiagonal
// kernels (thomas.cu, onchip.cu). *err holds the first bad (system, unknown)
// as system << 32 | unknown: the smallest system wins, then the smallest row.
#ifndef NS_TRIDIAG_CUDA_PIVOT_CUH
#define NS_TRIDIAG_CUDA_PIVOT_CUH

// A pivot that is not larger than tol times the row's scale, or infinite.
template <typename T>
__device__ __forceinline__ bool bad_pivot(T p, T scale, T tol) {
    return !(fabs(p) > tol * scale) || isinf(p);
}

__device__ __forceinline__ void report(unsigned long long *err, long long system, long long unknown) {
    atomicMin(err, (static_cast<unsigned long long>(system) << 32) |
                       static_cast<unsigned long long>(unknown));
}

#endif
