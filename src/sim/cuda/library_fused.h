/* Private: the per-step path's fused launches of a library (mechanism ABI 6,
 * include/neurosolve/mechanism.h's ns_mech_fused): the model's mechanisms
 * that are members of their library's launches run in one launch per phase
 * (current: a thread per node of the tree group, each inserted member's
 * per-instance function in the model's order, rhs and d in registers;
 * state: a thread per instance of each member in turn, a concentration
 * writer in a launch of its own), the others one
 * launch per mechanism (sim/cuda/mechanisms.c). The maps (a node's members
 * and their instances) are built here at create, over the storage of
 * sim/cuda/mechanisms.c. The rule: sim/policy.h, ns_sim_library_fused_rule;
 * docs/simulation.md, "Models: the fused loop". */
#ifndef NS_SIM_CUDA_LIBRARY_FUSED_H
#define NS_SIM_CUDA_LIBRARY_FUSED_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "sim/sim_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_libfused gpu_libfused;
struct gpu_model;

/* The fused launches of the model's library over the tree group's cells
 * (local cell j is global cell cell_id[j], its compartment i at node
 * cell_base[j] + i), *out NULL where the rule says per mechanism; pp[k] is
 * model mechanism k's storage (its ppack, device pointers) and written the
 * group's Nernst flags (ion j's at [j * nodes]). */
ns_status ns_gpu_libfused_create(const ns_sim_t *sim, const ns_mech_ppack *const *pp, const unsigned char *written,
                                 const int64_t *cell_id, const int64_t *cell_base, int64_t cells, double *v,
                                 double *rhs, double *d, gpu_libfused **out);
void ns_gpu_libfused_free(gpu_libfused *lf);
/* Model mechanism k's slot in the launches (slots in the model's order), -1: its own launches. */
int32_t ns_gpu_libfused_slot(const gpu_libfused *lf, int32_t k);
/* One launch of slots [lo, hi): current() at t into rhs and d (state 0) or
 * state() at t with Nernst after a concentration writer (state 1); t_dev not
 * NULL: t read there (a replayed CUDA graph). */
ns_status ns_gpu_libfused_run(const ns_sim_t *sim, const gpu_libfused *lf, int state, int32_t lo, int32_t hi, double t,
                              const double *t_dev, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
