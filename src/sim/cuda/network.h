/* Private: a network on the GPU loop (sim/cuda/network.c, kernels in sim/cuda/network.cu;
 * docs/networks.md, "The GPU loop"): the detectors, the spike buffer, the
 * connections by source (CSR) and the pending events, all in device memory. */
#ifndef NS_CABLE_CUDA_SIM_NET_CUDA_H
#define NS_CABLE_CUDA_SIM_NET_CUDA_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "net/exchange.h"
#include "neurosolve/mechanism.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_net gpu_net;
typedef struct gpu_model gpu_model;

/* The host side (sim/cuda/network.c), on the tree group's stream. */
#ifndef __CUDACC__
#include "sim/sim_impl.h"
/* After ns_net_build_device and ns_gpu_model_points_build (syn_slot,
 * syn_inst: each synapse's point type and instance; conn_w: each
 * connection's weight vector within its type's): the detectors of the
 * tree group's cells (local j is global cell_id[j], its nodes from
 * cell_base[j]), the connections by source, and NEURON's first check at t = 0. */
ns_status ns_gpu_net_create(ns_sim_t *sim, const int64_t *cell_id, const int64_t *cell_base, int64_t cells,
                            const int32_t *syn_slot, const int32_t *syn_inst, const int32_t *conn_w, int32_t slots,
                            const double *v, cudaStream_t stream, gpu_net **out);
void ns_gpu_net_free(gpu_net *gn);
/* Before an interval of len steps from sim->t: the spikes that net.c queued
 * for fanning out (net->fan) into events, every pending event bucketed by
 * the step that delivers it, sorted, the buckets' offsets. */
ns_status ns_gpu_net_interval(ns_sim_t *sim, gpu_net *gn, int64_t len, cudaStream_t stream);
/* Step j of the interval: NET_RECEIVE of its due events, point type by type. */
ns_status ns_gpu_net_deliver(const ns_sim_t *sim, gpu_net *gn, gpu_model *model, int64_t j, cudaStream_t stream);
/* The detectors at the end of a step at t (spikes at t + 1e-10 ms). */
ns_status ns_gpu_net_detect(gpu_net *gn, const double *v, double t, cudaStream_t stream);
/* After the interval (streams synchronised): its spikes to net.c
 * (ns_net_add_spikes), the count of delivered events. */
ns_status ns_gpu_net_collect(ns_sim_t *sim, gpu_net *gn);
#endif

/* What a detector that fires writes (ns_gpu_net_detect, or the fused kernel in its place): the
 * detectors' thresholds, states and sources (gpu_net's order), the interval's spike buffer, its
 * count and capacity, and the spikes' offset (at t + teps: NEURON's check). */
typedef struct ns_gpu_net_out {
    const double *det_thr;
    unsigned char *det_above;
    const int64_t *det_source;
    ns_net_spike *spikes;
    unsigned long long *count;
    int64_t cap;
    double teps;
} ns_gpu_net_out;

/* The device arrays that the fused kernel reads and writes in place of
 * ns_gpu_net_deliver and ns_gpu_net_detect (sim/cuda/fused.h): the detectors
 * (gpu_net's order) and what they write, and the interval's sorted events and
 * bucket offsets (offsets NULL when no step delivers). */
typedef struct ns_gpu_net_view {
    int32_t n_det;
    const int32_t *det_node;
    ns_gpu_net_out out;
    const ns_mech_event *events;
    const int64_t *offsets;
    int64_t len;
} ns_gpu_net_view;
void ns_gpu_net_view_of(const gpu_net *gn, ns_gpu_net_view *view);

/* A pending event's sort key: bucket = j * slots + slot for the step j of the
 * interval that delivers it, slots * len when no step of it does; then the
 * instance, the time and the sequence number (unique: a total order). */
typedef struct ns_gpu_event_key {
    int64_t bucket;
    double t;
    int64_t seq;
    int32_t inst, slot;
} ns_gpu_event_key;

/* A spike to fan out (net_fan of net_impl.h) and where its events go. */
typedef struct ns_gpu_fan {
    double t;
    int64_t source, seq, at;
} ns_gpu_fan;

/* A connection as the fan-out reads it (in the order of its source's CSR). */
typedef struct ns_gpu_conn {
    double weight, delay;
    int32_t slot, inst, conn, pad_; /* conn: its weight vector within the type's (ns_mech_event.conn) */
} ns_gpu_conn;

/* The detectors: v[node] > thr and not above at the previous check: a spike
 * (t_spike, source) appended at atomicAdd(count) when below cap. */
cudaError_t ns_gpu_launch_detect(const double *v, const int32_t *node, const double *thr, unsigned char *above,
                                 const int64_t *source, int32_t n, double t_spike, ns_net_spike *out,
                                 unsigned long long *count, int64_t cap, cudaStream_t stream);
/* Each fan entry's events: for its source's connections q (CSR), key and
 * event at fan.at + (q - begin), time fan.t + delay, sequence fan.seq + (q - begin). */
cudaError_t ns_gpu_launch_fanout(const ns_gpu_fan *fan, int64_t n_fan, const int64_t *out_begin,
                                 const ns_gpu_conn *conn, ns_gpu_event_key *keys, ns_mech_event *events,
                                 cudaStream_t stream);
/* The bucket of each of n events: the first step j < len with t <= until[j]. */
cudaError_t ns_gpu_launch_bucket(ns_gpu_event_key *keys, int64_t n, const double *until, int64_t len, int32_t slots,
                                 cudaStream_t stream);
/* Sort (keys, events) by (bucket, inst, t, seq); temp storage as CUB asks
 * (temp NULL: *bytes set only). */
cudaError_t ns_gpu_sort_events(void *temp, size_t *bytes, ns_gpu_event_key *keys, ns_mech_event *events, int64_t n,
                               cudaStream_t stream);
/* offsets[b] = the first sorted event of bucket >= b, b = 0 .. buckets;
 * *consumed = offsets[buckets] (the events the interval delivers). */
cudaError_t ns_gpu_launch_offsets(const ns_gpu_event_key *keys, int64_t n, int64_t buckets, int64_t *offsets,
                                  int64_t *consumed, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
