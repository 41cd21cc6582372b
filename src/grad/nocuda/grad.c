/* The GPU sweep in a build without CUDA: grad_cuda_why_not refuses it first. */
#include "core/error.h"
#include "grad/grad_impl.h"

ns_status grad_cuda_sweep(ns_grad_t *g, const run_ctx *r, double *gval, size_t *bytes) {
    (void)g;
    (void)r;
    (void)gval;
    (void)bytes;
    return ns_fail(NS_ERR_UNSUPPORTED, "gradient on the GPU: this neurosolve was built without CUDA");
}
