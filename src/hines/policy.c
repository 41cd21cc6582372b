/* The Hines family's one `auto` rule (policy.h). The backend: CUDA when a
 * GPU is usable and the batch has at least NS_AUTO_GPU_MIN_COMPARTMENTS
 * compartments, else the CPU. The CPU: openmp when there are at least two
 * threads, four cells per thread and 16,384 compartments (below, the
 * threads cost more than they save), else sequential.
 * The CUDA methods, from measurements on an H100
 * and an H200 (bench/README.md, "Hines, same-shape batches" and "Mixed
 * populations, the solver"; docs/methods.md):
 *   - several shapes: `tree` (tree contraction; faster than the earlier
 *     mixed methods on the bundled mix, and the only method whose large
 *     cells do not walk a serial chain);
 *   - one shape whose cell does not fit the onchip kernel (its shared-memory
 *     image or its schedule's 16-bit fields): `tree`;
 *   - one shape: `onchip` for cells of up to 128 compartments (faster than
 *     Full-Interleaved at 256,000 cells) and for batches of up to 25,600
 *     cells; `interleaved` for larger cells in larger batches. */
#include "hines/policy.h"

/* Doubles of one cell's onchip image (hines_kernels.h: a, b, d, rhs and one
 * of padding) and the schedule's size limit (onchip_plan.h). */
#define ONCHIP_CELL_DOUBLES(n) (4 * (size_t)(n) + 1)
#define ONCHIP_MAX_N 65535

ns_hines_method ns_hines_cuda_auto(int32_t n_shapes, int64_t n_cells, int32_t max_size, size_t optin_shared) {
    if (n_shapes != 1) return NS_HINES_TREE;
    if (ONCHIP_CELL_DOUBLES(max_size) * sizeof(double) > optin_shared || max_size > ONCHIP_MAX_N)
        return NS_HINES_TREE;
    if (max_size <= NS_AUTO_ONCHIP_MAX_N || n_cells <= NS_AUTO_ONCHIP_MAX_CELLS) return NS_HINES_ONCHIP;
    return NS_HINES_INTERLEAVED;
}

ns_hines_method ns_hines_auto(const ns_hines_auto_facts *f) {
    ns_backend b = f->backend;
    if (b == NS_BACKEND_AUTO)
        b = f->gpus > 0 && f->compartments >= NS_AUTO_GPU_MIN_COMPARTMENTS ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
    if (b == NS_BACKEND_CUDA) return ns_hines_cuda_auto(f->n_shapes, f->n_cells, f->max_size, f->optin_shared);
    if (f->cpu_threads > 1 && f->n_cells >= 4 * (int64_t)f->cpu_threads && f->compartments >= 16384)
        return NS_HINES_OPENMP;
    return NS_HINES_SEQUENTIAL;
}
