/* A build without CUDA has no GPU reduction (a CUDA simulation cannot exist). */
#include <string.h>

#include "core/error.h"
#include "lfp/lfp_impl.h"

ns_status ns_lfp_gpu_create(int device, const lfp_gpu_geometry *geo, lfp_gpu **out) {
    (void)device, (void)geo;
    *out = NULL;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
void ns_lfp_gpu_destroy(lfp_gpu *G) { (void)G; }
ns_status ns_lfp_gpu_positions(ns_sim_t *sim, int64_t *pos, int64_t *stride) {
    (void)sim, (void)pos;
    *stride = 0;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
double *ns_lfp_gpu_snap(lfp_gpu *G, int64_t *rows) {
    (void)G;
    *rows = 0;
    return NULL;
}
void ns_lfp_gpu_sampler(const lfp_gpu *G, const int32_t **col, const double **g, int64_t *ld, const int32_t **slot,
                        int64_t *norm_at, int64_t *norm_ld) {
    (void)G;
    *col = NULL, *g = NULL, *ld = 0, *slot = NULL, *norm_at = 0, *norm_ld = 0;
}
ns_status ns_lfp_gpu_submit(lfp_gpu *G, int64_t k0, int32_t nb, int pop, int pcell, int imem) {
    (void)G, (void)k0, (void)nb, (void)pop, (void)pcell, (void)imem;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
int32_t ns_lfp_gpu_pending(const lfp_gpu *G) {
    (void)G;
    return 0;
}
ns_status ns_lfp_gpu_collect(lfp_gpu *G, double *tot, double *rel, double *pop, double *pcell, double *imem) {
    (void)G, (void)tot, (void)rel, (void)pop, (void)pcell, (void)imem;
    return ns_fail(NS_ERR_UNSUPPORTED, "LFP: this build has no CUDA");
}
const double *ns_lfp_gpu_kept(const lfp_gpu *G) {
    (void)G;
    return NULL;
}
void ns_lfp_gpu_timing_of(const lfp_gpu *G, ns_lfp_timing *out) {
    (void)G;
    memset(out, 0, sizeof *out);
}
int64_t ns_lfp_gpu_free_bytes(int device) {
    (void)device;
    return 0;
}
