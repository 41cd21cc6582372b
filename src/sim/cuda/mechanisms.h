/* Private: the GPU loop's mechanisms from a model (sim/cuda/mechanisms.c; a network's point types:
 * sim/cuda/mechanisms_points.c) and the Nernst kernel (sim/cuda/mechanisms.cu). */
#ifndef NS_CABLE_CUDA_SIM_MODEL_CUDA_H
#define NS_CABLE_CUDA_SIM_MODEL_CUDA_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "sim/sim_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_model gpu_model;

/* The instances of the model's mechanisms in a group's cells (local cell j
 * is global cell cell_id[j], its compartment i at node cell_base[j] + i, or
 * cell_base[j] + pos[i] where pos is given: an onchip group's position
 * order, one shape); v, rhs and d are the group's device arrays (rhs and d
 * NULL for an onchip group: its kernel assembles in shared memory, and the
 * per-step launches never run there). */
ns_status ns_gpu_model_create(const ns_sim_t *sim, const int64_t *cell_id, const int64_t *cell_base, int64_t cells,
                              const int32_t *pos, double *v, double *rhs, double *d, gpu_model **out);
void ns_gpu_model_free(gpu_model *g);
/* Mechanism k's device storage, for the fused tree loop (sim/cuda/fused.c):
 * its instances (count; in the group's cell order, each cell's in node
 * order), fields (n_fields arrays of count), globals, table, and the e
 * array of each of its ions (desc->ions order) over the group's nodes. */
typedef struct ns_gpu_mech_arrays {
    int64_t count;
    double *fields, *global, *table;
    double *ion_e[NS_SIM_MECH_IONS_MAX];
} ns_gpu_mech_arrays;
void ns_gpu_model_arrays(const gpu_model *g, int32_t k, ns_gpu_mech_arrays *out);
/* NEURON's finitialize of the mechanisms (v already v_init on the device). */
ns_status ns_gpu_model_init(const ns_sim_t *sim, gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                            int64_t cells, cudaStream_t stream);
/* rhs = d = 0, ions' i = 0 (didv is not kept), then every mechanism's current at t. */
ns_status ns_gpu_model_currents(const ns_sim_t *sim, gpu_model *g, double *rhs, double *d, double t,
                                cudaStream_t stream);
/* Every mechanism's state at t (Nernst after a concentration writer). */
ns_status ns_gpu_model_states(const ns_sim_t *sim, gpu_model *g, double t, cudaStream_t stream);
/* The device addresses where the library's fused launches read t in the two phases (NULL, NULL:
 * the t given to ns_gpu_model_currents and ns_gpu_model_states; sim/cuda/library_fused.h). */
void ns_gpu_model_clock(gpu_model *g, const double *t_current, const double *t_state);
/* Whether no launch of the step passes t by value to code that reads it: every mechanism of the
 * model runs in its library's fused launches (t from ns_gpu_model_clock) or is the built-in pas
 * or hh (whose generated code reads no t: tests/mech/test_sim_model.c), and no synapse runs. */
int ns_gpu_model_time_free(const gpu_model *g);

/* A network's synapses (sim->net's, ns_net_build_device done) on the device:
 * the point types in NEURON's type order, each instance's slot (type) and
 * index within it into syn_slot / syn_inst (host, one per synapse); their
 * INITIAL (after ns_gpu_model_init); the connections' weight vectors (their
 * per-connection state; conn_w, host, one per connection: its vector within
 * its type's, ns_mech_event.conn) and NET_RECEIVE's INITIAL. Replaces the
 * previous ones. */
ns_status ns_gpu_model_points_build(const ns_sim_t *sim, gpu_model *g, const int64_t *cell_id,
                                    const int64_t *cell_base, int64_t cells, int32_t *syn_slot, int32_t *syn_inst,
                                    int32_t *conn_w, cudaStream_t stream);
int32_t ns_gpu_model_points(const gpu_model *g);
/* Point type `slot`: its descriptor, NEURON type key and device storage
 * (pp: instances in the group's cell order, node_index into the group's
 * nodes; fields: n_fields arrays of pp->n). */
void ns_gpu_model_point(const gpu_model *g, int32_t slot, const ns_mech_desc **desc, int32_t *key,
                        ns_mech_ppack *pp, double **fields);
/* NET_RECEIVE of point type `slot` over the due events events[range[0] ..
 * range[1]) (device; max bounds their count); a type with self events
 * (ns_gpu_model_point_self) also at max 0 (range NULL: no connection's
 * event), its WATCH conditions at *t_step, its self events due at *until; net_event's spikes appended to
 * spikes (spikes_n of them, device, at most spikes_cap). */
ns_status ns_gpu_model_deliver(const ns_sim_t *sim, gpu_model *g, int32_t slot, const ns_mech_event *events,
                               const int64_t *range, int64_t max, const double *until, const double *t_step,
                               ns_mech_spike *spikes, unsigned long long *spikes_n, int64_t spikes_cap,
                               cudaStream_t stream);
/* Whether point type `slot` sends self events or has WATCH (its NET_RECEIVE runs every step, its
 * WATCH conditions checked at *t_step first). */
int ns_gpu_model_point_self(const gpu_model *g, int32_t slot);
/* The first error of the point types' device events (net_send, net_move,
 * net_event as NEURON refuses them, a full slot or spike buffer), naming the
 * mechanism, instance and time. */
ns_status ns_gpu_model_events_check(gpu_model *g);
/* The first error that a density mechanism's VERBATIM C recorded on the device since finitialize
 * (hoc_execerror, exit, abort), in type order, as the CPU loop words it (NS_ERR_MECHANISM): no copy
 * where none of them can fail, else one of the flag (ns_gpu_errors_read); and whether one was read
 * (the run then stops until ns_sim_init). */
ns_status ns_gpu_model_errors(gpu_model *g);
int ns_gpu_model_error_seen(const gpu_model *g);

/* ns_sim_get_model_var (write 0) / ns_sim_set_model_var (write 1) for local
 * cell j of the group (host `io`, the cell's compartment count; read: NaN
 * where the mechanism is not inserted, write: those entries ignored). */
ns_status ns_gpu_model_var(const ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                           int64_t j, int32_t mech, int32_t field, int32_t ion, int32_t q, double *io, int write);

/* ns_sim_state_field: field `field` of mechanism `mech` (its p.n instances at
 * the group's nodes node_index), or (mech < 0) array q of ion `ion` over the
 * group's nodes (pos NULL). */
void ns_gpu_model_field(const gpu_model *g, int32_t mech, int32_t field, int32_t ion, int32_t q, double **data,
                        int64_t *size, const int32_t **pos);

/* e = NEURON's Nernst potential of (ci, co) over the n nodes where written[i]. */
cudaError_t ns_sim_launch_nernst(double *e, const double *ci, const double *co, const unsigned char *written, int64_t n,
                                 int charge, double celsius, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
