/* Private: the extern "C" launchers of the LiFE CUDA kernels. Plain C so
 * that the host logic (engine_cuda.c) can call them. On the device the
 * dictionary and every voxel-space vector are padded to Tp = n_theta rounded
 * up to a multiple of 32 rows (the padding rows are zero), so that a warp's
 * lane i handles rows i, i + 32, ... of a column (the paper's 4.2.2.3).
 * Every launcher returns the launch status and never waits. */
#ifndef NS_LIFE_CUDA_KERNELS_H
#define NS_LIFE_CUDA_KERNELS_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Phi on the device in one ordering. start: sub-vector offsets of the
 * sorted key (NULL for the original order); n_keys entries + 1. */
typedef struct ns_life_dev_phi {
    const int32_t *atom, *voxel, *fiber;
    const double *value;
    const int64_t *start;
    int32_t n_keys;
    int64_t n_coeffs;
} ns_life_dev_phi;

typedef enum ns_life_kernel {
    NS_LIFE_K_REFERENCE = 0, /* the paper's Fig. 6: thread per coefficient, grid-stride, atomics */
    NS_LIFE_K_COEFF = 1,     /* warp per 32 coefficients; y = M w flushes a voxel's sum at
                                voxel changes only (few atomics on the voxel-sorted copy) */
    NS_LIFE_K_KEY = 2,        /* warp per sub-vector (atom or voxel) of a sorted copy; on the
                                 voxel-sorted copy the dictionary columns are gathered with
                                 16-byte loads, V = 2 columns per warp step */
    NS_LIFE_K_VOXEL_F32D = 3, /* the voxel kernel on a float32 copy of the dictionary (384-byte
                                 columns, 4 per step), float64 arithmetic */
    NS_LIFE_K_VOXEL_F16D = 4  /* the voxel kernel on a scaled float16 copy (192-byte columns,
                                 8 per step), float64 arithmetic */
} ns_life_kernel;

/* Largest n_theta the warp kernels take (8 chunks of 32 rows in registers). */
#define NS_LIFE_MAX_THETA 256

/* y = M w: y (Tp x n_voxels) is fully written (zeroed first unless the
 * kernel writes every column). by_voxel: the key of `phi` is the voxel.
 * Dr: the padded dictionary in reduced precision (float for
 * NS_LIFE_K_VOXEL_F32D, __half for NS_LIFE_K_VOXEL_F16D; NULL otherwise);
 * scale: Dr's entries times scale are the dictionary's (1 for float32, a
 * power of two for float16). */
cudaError_t ns_life_launch_mw(ns_life_kernel kernel, const ns_life_dev_phi *phi, int by_voxel,
                              int32_t n_theta, int32_t tp, int32_t n_voxels, const double *D,
                              const void *Dr, double scale, const double *w, double *y, int blocks_hint,
                              cudaStream_t stream);
/* w = M^T y: w (n_fibers) is zeroed first. */
cudaError_t ns_life_launch_mty(ns_life_kernel kernel, const ns_life_dev_phi *phi, int by_voxel,
                               int32_t n_theta, int32_t tp, int32_t n_fibers, const double *D,
                               const void *Dr, double scale, const double *y, double *w, int blocks_hint,
                               cudaStream_t stream);
/* voxel-lr16d (docs/life.md): D ~ U C with C = U^T D (r x n_atoms, r a
 * multiple of 32 <= tp <= NS_LIFE_MAX_THETA) in float16 times `scale`
 * (C16's entries times scale are C's). y = M w: P = C Z (r x n_voxels,
 * the float16 voxel kernel), then y(:, v) = U P(:, v) with Ut = U^T (r x tp,
 * zero beyond n_theta), writing every row of y. w = M^T y: Q(:, v) =
 * U^T y(:, v) with Un = U (tp x r, row-major), then the float16 voxel kernel
 * on C and Q; w is zeroed first. P and Q: r x n_voxels scratch. `phi` is the
 * voxel-sorted copy with one sub-vector per voxel. */
cudaError_t ns_life_launch_lr_mw(const ns_life_dev_phi *phi, int32_t r, int32_t tp, int32_t n_voxels,
                                 const void *C16, double scale, const double *Ut, double *P, const double *w,
                                 double *y, cudaStream_t stream);
cudaError_t ns_life_launch_lr_mty(const ns_life_dev_phi *phi, int32_t r, int32_t tp, int32_t n_theta,
                                  int32_t n_voxels, int32_t n_fibers, const void *C16, double scale,
                                  const double *Un, double *Q, const double *y, double *w, cudaStream_t stream);
/* voxel-sh (life_sh.cu, docs/life.md): the columns computed from the atoms'
 * orientations on ENCODE's grid of L steps as U^T f(u) (sh_basis.c), lmax in
 * 10, 12, 14, 16. ns_life_sh_prepare sets the kernels' shared memory and gives
 * their persistent grids (grid[0]: y = M w, grid[1]: w = M^T y) for `sms`
 * multiprocessors; call it once before the launches. Um: U^T, R rows of tp
 * floats (R = (lmax + 1)(lmax + 2) / 2; rows n_theta.. of U zero); Uq: U as
 * tp rows of ns_life_sh_padded(lmax) floats (features R.. zero). ang: 2 L - 1
 * float pairs, (cos, sin) of i pi / L for i < L, then (sin, cos) of
 * (j + 1) pi / L for j < L - 1 (the grid's angles). order: the
 * voxels by decreasing coefficient count, those with none last; n_busy of
 * them have coefficients. y = M w writes every row of y; w = M^T y zeroes w
 * first. `phi` is the voxel-sorted copy with one sub-vector per voxel. */
int ns_life_sh_padded(int lmax);
cudaError_t ns_life_sh_prepare(int lmax, int32_t tp, int32_t n_theta, int32_t L, int sms, int grid[2]);
cudaError_t ns_life_launch_sh_mw(const ns_life_dev_phi *phi, int lmax, int32_t tp, int32_t n_voxels, int32_t L,
                                 const float *Um, const float *ang, const int32_t *order, const double *w, double *y,
                                 int grid, cudaStream_t stream);
cudaError_t ns_life_launch_sh_mty(const ns_life_dev_phi *phi, int lmax, int32_t tp, int32_t n_theta,
                                  int32_t n_busy, int32_t n_fibers, int32_t L, const float *Uq, const float *ang,
                                  const int32_t *order, const double *y, double *w, int grid, cudaStream_t stream);
/* D32[i] = (float)D[i], n entries. */
cudaError_t ns_life_to_float(const double *D, float *D32, int64_t n, cudaStream_t stream);
/* D16[i] = float16((float)(D[i] * down)), round to nearest even (down: a
 * power of two that brings max |D| below 2^15), n entries; D16 holds n
 * 16-bit values. */
cudaError_t ns_life_to_half(const double *D, void *D16, double down, int64_t n, cudaStream_t stream);

/* ------------------------------------------------- SBBNNLS vector operations */
/* Reductions: partial results per block into `partial` (NS_LIFE_RED_BLOCKS
 * doubles), then one block sums them in a fixed order into *result
 * (device): deterministic. */
#define NS_LIFE_RED_BLOCKS 256
cudaError_t ns_life_vec_fill(double *v, double value, int64_t n, cudaStream_t s);
cudaError_t ns_life_vec_sub(double *a, const double *b, int64_t n, cudaStream_t s);
cudaError_t ns_life_vec_mul(double *a, const double *b, int64_t n, cudaStream_t s);
cudaError_t ns_life_vec_add_scalar(double *a, double value, int64_t n, cudaStream_t s);
cudaError_t ns_life_vec_mask(double *v, const double *x, const double *g, int64_t n, cudaStream_t s);
cudaError_t ns_life_vec_update(double *x, const double *g, double alpha, int64_t n, cudaStream_t s);
cudaError_t ns_life_vec_dot(const double *a, const double *b, int64_t n, double *partial,
                            double *result, cudaStream_t s);
cudaError_t ns_life_vec_pgnorm(const double *x, const double *g, int64_t n, double *partial,
                               double *result, cudaStream_t s);
cudaError_t ns_life_vec_nnz(const double *x, int64_t n, double *partial, double *result,
                            cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
