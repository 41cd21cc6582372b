/* The LiFE CUDA backend in a build without CUDA: every entry says so. */
#include "core/error.h"
#include "life/life_impl.h"

#define NO_CUDA "neurosolve was built without CUDA (NS_CUDA=OFF or no nvcc)"

int ns_life_cuda_available(void) { return 0; }
ns_status ns_life_cuda_create(ns_life_engine_t *e) {
    (void)e;
    return ns_fail(NS_ERR_UNSUPPORTED, "LiFE cuda backend: " NO_CUDA);
}
void ns_life_cuda_destroy(ns_life_engine_t *e) { (void)e; }
int ns_life_cuda_supports(ns_life_variant v) {
    (void)v;
    return 0;
}
ns_status ns_life_cuda_product(ns_life_engine_t *e, ns_life_product p, ns_life_variant v,
                               const double *in, double *out) {
    (void)e, (void)p, (void)v, (void)in, (void)out;
    return ns_fail(NS_ERR_UNSUPPORTED, "LiFE cuda backend: " NO_CUDA);
}
ns_status ns_life_cuda_time(ns_life_engine_t *e, ns_life_product p, ns_life_variant v,
                            const double *in, double *out, int repeats, double *ms) {
    (void)e, (void)p, (void)v, (void)in, (void)out, (void)repeats, (void)ms;
    return ns_fail(NS_ERR_UNSUPPORTED, "LiFE cuda backend: " NO_CUDA);
}
ns_status ns_life_cuda_fit(ns_life_engine_t *e, const ns_life_fit_options *o, double *w,
                           double *history, ns_life_fit_result *r) {
    (void)e, (void)o, (void)w, (void)history, (void)r;
    return ns_fail(NS_ERR_UNSUPPORTED, "LiFE cuda backend: " NO_CUDA);
}
