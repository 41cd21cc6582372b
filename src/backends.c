/* The registry's table: every implementation of every family, in one place
 * (core/registry.h; docs/architecture.md). This file sits above the
 * families: it names their ops tables, nothing below it names this file's
 * entries. An implementation whose backend the build lacks is still listed
 * (its ops getter returns NULL), so that `ns_method_available` can say why
 * a method cannot run rather than that it does not exist.
 *
 * Order matters where two implementations list one method: the first that
 * accepts the problem takes it (one-shape batches go to the same-shape CUDA
 * kernels, batches of several shapes to the mixed-shape ones). */
#include "core/registry.h"
#include "cable/sim_impl.h"
#include "hines/batch_impl.h"
#include "life/life_impl.h"
#include "tridiag/tridiag_impl.h"

#define B NS_METHOD_BIT

static const void *hines_cpu(void) { return ns_hines_cpu_backend(); }
static const void *hines_cuda(void) { return ns_hines_cuda_backend(); }
static const void *hines_cuda_mixed(void) { return ns_hines_mixed_cuda_backend(); }
static const void *hines_cuda_tree(void) { return ns_hines_tree_cuda_backend(); }
static const void *tridiag_cpu(void) { return ns_tridiag_cpu_backend(); }
static const void *tridiag_cuda(void) { return ns_tridiag_cuda_backend(); }
static const void *sim_cpu(void) { return ns_sim_cpu_ops(); }
static const void *sim_cuda(void) { return ns_sim_cuda_ops(); }
static const void *life_cpu(void) { return ns_life_cpu_backend(); }
static const void *life_cuda(void) { return ns_life_cuda_backend(); }

/* The one-thread-per-cell and onchip kernels take batches of one shape. */
static int one_shape(int32_t method, const void *batch) {
    (void)method;
    return ns_batch_shapes((const ns_batch_t *)batch) == 1;
}

#define ALL_LIFE_VARIANTS (NS_METHOD_BIT(NS_LIFE_VARIANT_COUNT) - 2) /* variants 1 .. COUNT-1 */

static const ns_impl table[] = {
    {NS_FAMILY_HINES, NS_BACKEND_CPU, "cpu", B(NS_HINES_SEQUENTIAL) | B(NS_HINES_OPENMP), hines_cpu, NULL},
    {NS_FAMILY_HINES, NS_BACKEND_CUDA, "cuda-tree", B(NS_HINES_TREE), hines_cuda_tree, NULL},
    {NS_FAMILY_HINES, NS_BACKEND_CUDA, "cuda",
     B(NS_HINES_FLAT) | B(NS_HINES_INTERLEAVED) | B(NS_HINES_BLOCK_INTERLEAVED) | B(NS_HINES_BLOCK_SHARED) |
         B(NS_HINES_ONCHIP),
     hines_cuda, one_shape},
    {NS_FAMILY_HINES, NS_BACKEND_CUDA, "cuda-mixed",
     B(NS_HINES_FLAT) | B(NS_HINES_INTERLEAVED) | B(NS_HINES_FINE_GRAINED) | B(NS_HINES_BRANCH_LEVEL),
     hines_cuda_mixed, NULL},
    {NS_FAMILY_TRIDIAG, NS_BACKEND_CPU, "cpu", B(NS_TRIDIAG_SEQUENTIAL) | B(NS_TRIDIAG_OPENMP), tridiag_cpu, NULL},
    {NS_FAMILY_TRIDIAG, NS_BACKEND_CUDA, "cuda",
     B(NS_TRIDIAG_THOMAS_BATCH) | B(NS_TRIDIAG_VBATCH_CP) | B(NS_TRIDIAG_VBATCH_NCP) | B(NS_TRIDIAG_WARP) |
         B(NS_TRIDIAG_BLOCK) | B(NS_TRIDIAG_CUSPARSE_STRIDED) | B(NS_TRIDIAG_CUSPARSE_INTERLEAVED),
     tridiag_cuda, NULL},
    {NS_FAMILY_SIM, NS_BACKEND_CPU, "cpu", B(NS_HINES_SEQUENTIAL) | B(NS_HINES_OPENMP), sim_cpu, NULL},
    {NS_FAMILY_SIM, NS_BACKEND_CUDA, "cuda", B(NS_HINES_ONCHIP) | B(NS_HINES_TREE), sim_cuda, NULL},
    {NS_FAMILY_LIFE, NS_BACKEND_CPU, "cpu", ALL_LIFE_VARIANTS, life_cpu, NULL},
    {NS_FAMILY_LIFE, NS_BACKEND_CUDA, "cuda", ALL_LIFE_VARIANTS, life_cuda, NULL},
};

const ns_impl *ns_registry_table(size_t *count) {
    *count = sizeof table / sizeof table[0];
    return table;
}
