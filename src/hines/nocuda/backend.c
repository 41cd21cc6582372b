/* A build without CUDA has no GPU implementations: the registry lists them
 * with no ops, and says so when one is asked for (src/backends.c). */
#include <stddef.h>

#include "core/error.h"
#include "hines/batch_impl.h"

const ns_hines_backend_ops *ns_hines_cuda_backend(void) { return NULL; }
const ns_hines_backend_ops *ns_hines_mixed_cuda_backend(void) { return NULL; }
const ns_hines_backend_ops *ns_hines_tree_cuda_backend(void) { return NULL; }

ns_status ns_host_pipeline_solve(ns_hines_solver_t *solver, const double *a, const double *b, double *d,
                                 double *rhs) {
    (void)solver, (void)a, (void)b, (void)d, (void)rhs;
    return NS_ERR_UNSUPPORTED; /* no CUDA implementation exists to get here */
}
void ns_host_pipeline_destroy(ns_host_pipeline *pipeline) { (void)pipeline; }

ns_status ns_hines_convert_launch(const ns_batch_t *batch, int to_flat, const double *src, double *dst, void *stream) {
    (void)batch, (void)to_flat, (void)src, (void)dst, (void)stream;
    return ns_fail(NS_ERR_UNSUPPORTED, "device layouts: neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)");
}
