/* Private: the CUDA backend's per-solver state (backend_cuda.c creates it,
 * solve_cuda.c runs solves with it). */
#ifndef NS_HINES_CUDA_BACKEND_H
#define NS_HINES_CUDA_BACKEND_H

#include <cuda_runtime_api.h>

#include "hines/batch_impl.h"
#include "hines/cuda/device_call.h"
#include "hines/cuda/hines_kernels.h"
#include "hines/cuda/onchip_plan.h"

/* Events of one chunk: upload, layout in, kernel, layout out. */
enum { NS_EV_UP0, NS_EV_UP1, NS_EV_LAY0, NS_EV_LAY1, NS_EV_K0, NS_EV_K1, NS_EV_LAY2, NS_EV_LAY3,
       NS_EV_COUNT };

/* One GPU's share: the contiguous cells [first, first + count), solved in
 * chunks of at most `chunk` cells. */
typedef struct ns_cuda_dev {
    int device;
    int64_t first, count, chunk;
    cudaStream_t stream;
    cudaEvent_t ev[NS_EV_COUNT];
    int32_t *parent;            /* n: shared by every cell */
    int32_t *plan;              /* the on-chip schedule (onchip only) */
    ns_onchip_sched sched;      /* bound to `plan` */
    double *flat[4];            /* a, b, d, rhs of a chunk in the Flat layout */
    double *grouped[4];         /* the same in the method's layout (grouped methods only) */
    unsigned long long *bad;    /* pivot flag (hines_kernels.h) */
} ns_cuda_dev;

typedef struct ns_cuda_state {
    int32_t n;            /* compartments per cell */
    int n_dev;
    ns_cuda_dev *dev;
    int grouped;          /* 1: Full-/Block-Interleaved layouts (conversion kernels run) */
    int32_t block_size;   /* BS of the block methods, 0 otherwise */
    int threads;          /* CUDA block size of the one-thread-per-cell kernels */
    int warps;            /* onchip: cells (warps) per CUDA block */
    ns_onchip_plan plan;  /* onchip only */
    ns_device_call call;  /* device arrays (one GPU): checks and the pivot key */
} ns_cuda_state;

/* The layout group of a chunk of m cells: 1 (Flat), m (Full-Interleaved) or BS. */
static inline int64_t ns_cuda_group(const ns_hines_solver_t *s, const ns_cuda_state *st, int64_t m) {
    if (s->method == NS_HINES_INTERLEAVED) return m;
    return st->block_size > 0 ? st->block_size : 1;
}

/* Queue the method's kernel on chunk [c0, c0 + m) already in d's buffers. */
ns_status ns_cuda_launch_method(const ns_hines_solver_t *s, const ns_cuda_state *st,
                                ns_cuda_dev *d, int64_t c0, int64_t m);
/* Read every GPU's pivot flag: NS_ERR_SINGULAR for the lowest bad cell. */
ns_status ns_cuda_read_pivots(const ns_hines_solver_t *s, const ns_cuda_state *st);

/* Device arrays (Flat) on the caller's stream: solvers of one GPU. */
ns_status ns_cuda_solve_device(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                               double *rhs, void *stream);
ns_status ns_cuda_wait(ns_hines_solver_t *solver);
ns_status ns_cuda_solve_device_interleaved(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                                           double *rhs, void *stream);
ns_status ns_cuda_benchmark(ns_hines_solver_t *solver, const double *a, const double *b,
                            double *d, double *rhs, int repeats, double *kernel_ms);

#endif
