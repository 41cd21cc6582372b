/* A build without CUDA has no GPU reduction (a CUDA simulation cannot exist). */
#include "core/error.h"
#include "lfp/lfp_impl.h"

ns_status ns_lfp_gpu_create(int device, const lfp_gpu_geometry *geo, lfp_gpu **out) {
    (void)device, (void)geo;
    *out = NULL;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
void ns_lfp_gpu_destroy(lfp_gpu *G) { (void)G; }
ns_status ns_lfp_gpu_sample(lfp_gpu *G, ns_sim_t *sim, const int64_t *stim_node, const double *stim_amp,
                            int64_t n_stims, int32_t b, double *pcell, double *imem) {
    (void)G, (void)sim, (void)stim_node, (void)stim_amp, (void)n_stims, (void)b, (void)pcell, (void)imem;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
ns_status ns_lfp_gpu_flush(lfp_gpu *G, int32_t nb, double *phi) {
    (void)G, (void)nb, (void)phi;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
