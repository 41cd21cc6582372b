/* Private: a simulation's network (net.c, docs/networks.md; what needs the
 * simulation's handle is in sim/network.h): synapses
 * (point processes with NET_RECEIVE), spike sources, connections, and the
 * per-lane-block part that the CPU loop (sim/cpu/step.c) runs: the synapses'
 * instances, the block's event queue and the spikes its detectors found. */
#ifndef NS_CABLE_NET_IMPL_H
#define NS_CABLE_NET_IMPL_H

#include <stdint.h>

#include "mech/blocks.h"
#include "mech/model_impl.h"
#include "neurosolve/cable.h"
#include "core/rng.h"
#include "net/exchange.h"

typedef struct net_syn {
    int64_t cell;
    int32_t node;
    int32_t desc;     /* index in the model's catalogue */
    int64_t param_at; /* desc's n_params values in sim_net.params, then 4 per RANDOM variable (its ids
                         and position as ns_sim_synapse_set gave them, NaN: the default; ns_net_syn_random) */
    int64_t ptr_at;   /* -1, or desc's n_pointers targets in sim_net.ptrs (ns_sim_set_pointer) */
} net_syn;

/* Where a synapse's POINTER points (pointer.c): variable (mech, field) or
 * (ion, q) of ns_sim_model_var_lookup, or v (both -1), at a compartment. */
typedef struct net_ptr {
    int64_t cell; /* -1: not connected */
    int32_t node, mech, ion;
    int field, q;
} net_ptr;

/* A density mechanism's POINTER k at compartment `node` of `cell` (model
 * mechanism `mech`): its target (ns_sim_set_model_pointer; the last setting
 * of an instance wins). */
typedef struct net_dptr {
    int64_t cell;
    int32_t node, mech;
    int k;
    net_ptr to;
} net_dptr;

typedef struct net_source {
    int64_t cell;      /* a detector's cell; -1: a train of given times or a Poisson source */
    int32_t node;
    double threshold;  /* [mV] */
    double *times;     /* a train: ascending */
    int64_t n_times, cursor; /* cursor: times already emitted */
    /* a Poisson source (net/poisson.c): rate [Hz], spikes in (start, stop) [ms],
     * drawn from its own stream of `seed`; next: the next spike not yet emitted */
    int poisson;
    double rate, start, stop, next;
    uint64_t seed;
    ns_rng rng;
    int64_t point;     /* synapse + 1 of a point process whose net_event is this source (events.c); 0: none */
    double *spikes;    /* the source's spikes so far [ms] */
    int64_t n_spikes, cap_spikes;
} net_source;

typedef struct net_conn {
    int64_t source, synapse;
    double weight, delay;
    int64_t w_at; /* its weight vector (NET_RECEIVE's arguments, weight first) in sim_net.wvec */
} net_conn;

/* An event for a synapse of one block: NET_RECEIVE of instance `inst` of the
 * block's point type `slot` at time t with the weight vector w (a connection's
 * in sim_net.wvec; NULL: none, a self event sent from INITIAL) and flag (0 from
 * a connection, net_send's for a self event); seq orders equal times
 * (connections' events from 0, self events from NS_NET_SELF_SEQ: after them). */
typedef struct net_event {
    double t;
    int64_t seq;
    int32_t slot, inst;
    double *w;
    double flag;
} net_event;
#define NS_NET_SELF_SEQ ((int64_t)1 << 62)

typedef ns_net_spike net_spike;

/* A spike to fan out on a device (sim_net.device_fan): its events take the
 * sequence numbers seq, seq + 1, ... in the order of its source's
 * connections (net.c's numbering, the CPU queues'). */
typedef struct net_fan {
    double t;
    int64_t source, seq;
} net_fan;

/* The instances of one point type on one block. */
typedef struct net_point {
    const ns_mech_desc *desc;
    int32_t key; /* NEURON's type order (ns_sim_model_key) */
    ns_mech_ppack p;
    double *store; /* fields, then globals, then the table */
    double **field;
    int *node_index; /* node * w + lane */
    double *weight;  /* 1e2 / area per instance */
    ns_mech_ion_view ions[NS_SIM_MECH_IONS_MAX];
    double **ptr_store; /* POINTERs: desc->n_pointers x n addresses (pointer.c) */
    double ***ptr;      /* desc->n_pointers arrays into ptr_store: ppack.pointer */
    /* events (events.c): the block, this type's slot in it, per instance the
     * seq of its pending flag-1 self event (net_move's; -1 none) and its
     * net_event's source (-1 none); zeros: the weight vector of a self event
     * sent from INITIAL */
    struct net_block *nb;
    int32_t slot;
    int64_t *tq, *src;
    double *zeros;
    /* WATCH (n_watch per instance): active, its condition held at the last check, its flag */
    unsigned char *w_on, *w_above;
    double *w_flag;
    /* FOR_NETCONS: the network and each instance's synapse id */
    struct sim_net *net;
    int64_t *syn_id;
    int constructed; /* its CONSTRUCTOR ran (finitialize): the DESTRUCTOR runs at free */
} net_point;

typedef struct net_block {
    int32_t n_points; /* point types present, ascending key */
    net_point *points;
    net_event *heap;  /* binary min-heap on (t, seq) */
    int64_t n_heap, cap_heap;
    int32_t n_det;    /* detectors of the block's cells */
    int64_t *det_source;
    int64_t *det_at;  /* node * w + lane */
    double *det_thr;
    unsigned char *det_above;
    net_spike *out;   /* spikes found since the last exchange */
    int64_t n_out, cap_out;
    int64_t self_seq; /* self events sent (events.c) */
    char ev_error[256]; /* the first event error of the interval (events.c), "" none */
} net_block;

typedef struct sim_net {
    net_syn *syns;
    int64_t n_syns, cap_syns;
    double *params;
    int64_t n_params, cap_params;
    net_source *sources;
    int64_t n_sources, cap_sources;
    net_conn *conns;
    int64_t n_conns, cap_conns;
    net_ptr *ptrs;   /* the synapses' POINTER targets (net_syn.ptr_at) */
    int64_t n_ptrs, cap_ptrs;
    net_dptr *dptrs; /* the density mechanisms' POINTER targets, in order of setting */
    int64_t n_dptrs, cap_dptrs;
    int64_t n_dsnap; /* snap_val's first n_dsnap: the density mechanisms' (ns_net_density_pointers) */
    /* POINTERs into another lane block (pointer.c): they read snap_val[j], a
     * copy of *snap_src[j] made at the start of each step (the intervals are
     * then one step); build_in: every block's inputs during ns_net_build */
    double **snap_src;
    double *snap_val;
    int64_t n_snap;
    const struct net_block_in *build_in;
    int64_t build_n;
    int dirty; /* changed since the last ns_net_build (ns_sim_init) */
    /* built by ns_net_build */
    int64_t n_blocks;
    net_block **blocks;
    int64_t *out_begin, *out_order; /* connections by source (CSR, in order of creation) */
    int64_t *emit, n_emit;          /* the trains and Poisson sources, ascending (emit_trains) */
    double *wvec;                   /* the connections' weight vectors (net_conn.w_at) */
    int64_t n_wvec, cap_wvec;
    int64_t *syn_src;               /* synapse -> its net_event's source, -1 (events.c) */
    int64_t *sc_begin, *sc_order;   /* synapse -> its connections (CSR, creation order; events.c) */
    int has_points;                 /* a source is a point process's net_event */
    int64_t *syn_block;             /* synapse -> block, point slot, instance */
    int32_t *syn_slot, *syn_inst;
    double min_delay;               /* [ms] */
    int64_t seq;
    net_spike *gather;
    int64_t cap_gather;
    /* a distributed simulation's exchange (net/exchange.h); NULL: none */
    ns_net_exchange_fn exchange_fn;
    void *exchange_context;
    double exchange_min_delay; /* [ms] over all processes */
    /* a device loop (the CUDA backend, sim/cuda/network.c): its detectors' spikes
     * of the interval, added before the exchange (ns_net_add_spikes), and the
     * spikes to fan out there (fan_out appends here instead of queueing) */
    int device_fan;
    net_spike *ext;
    int64_t n_ext, cap_ext;
    net_fan *fan;
    int64_t n_fan, cap_fan;
} sim_net;

/* What ns_net_build needs of one CPU lane block. */
typedef struct net_block_in {
    int32_t shape, w;
    const int64_t *cell; /* w cells */
    model_block *mech;   /* the block's density mechanisms (for the ions) */
    double *v;           /* v[pos[node] * w + lane], at v_init */
    const int32_t *pos;  /* the block's node order (sim/cpu/step.c's cpu_shape.pos), NULL: node */
} net_block_in;

void ns_net_free(sim_net *net);
/* What ns_net_build made (the blocks, the connections by source, ...), before it builds again. */
void ns_net_free_built(sim_net *net);
/* The four values of random stream q of synapse syn (type d) before INITIAL: those
 * ns_sim_synapse_set gave a RANDOM variable's ids and position ("R.id1", ...), the rest
 * ns_mech_random_stream's defaults for (the cell, the synapse's index). */
void ns_net_syn_random(const sim_net *net, const ns_mech_desc *d, int64_t syn, int q, double out[4]);
/* pointer.c: POINTER k of synapse syn: its target, or the error naming it
 * when unconnected (the CPU and GPU loops) */
ns_status ns_net_pointer_of(const sim_net *net, const ns_mech_desc *d, int64_t syn, int k, const net_ptr **to);
/* instance index of node `node` among a mechanism's nodes on a shape (ascending), -1 where absent */
int64_t ns_net_instance_at(const sim_mech_shape *ms, int32_t node);
/* the copies of the targets in other blocks, at a step's start */
void ns_net_pointer_snapshot(sim_net *net);
/* A device loop's detector spikes of the interval that ran, before
 * ns_net_loop_next exchanges them (any order). */
ns_status ns_net_add_spikes(sim_net *net, const net_spike *spikes, int64_t n);


/* The CPU loop's calls for one block, at the start of a step from t: the
 * events due by t + dt/2; a point type's current (slot); every point's
 * state; the detectors at the step end t (-1: out of memory). */
void ns_net_deliver(net_block *nb, double *v, double t, double dt, double celsius);
void ns_net_current(net_block *nb, int32_t slot, double *v, double *rhs, double *d, double t, double dt,
                    double celsius);
void ns_net_states(net_block *nb, double *v, double t, double dt, double celsius);
/* BEFORE/AFTER block h (NS_MECH_BEFORE_BREAKPOINT ...) of the block's point processes */
void ns_net_hook(net_block *nb, int h, double *v, double t, double dt, double celsius);
int ns_net_detect(net_block *nb, const double *v, double t);

/* Poisson sources (net/poisson.c): back to the first spike (ns_sim_init),
 * and the next spike after the current one (INFINITY past stop). */
void ns_net_poisson_reset(net_source *s);
void ns_net_poisson_draw(net_source *s);

/* Room for one more of n items of `size` bytes in *p (capacity *cap): 0, or -1 when out of memory. */
int ns_net_grow(void **p, int64_t n, int64_t *cap, size_t size);
/* Between two intervals (sim/network.c's loop): the detectors' spikes of the interval that ran
 * into the rasters and the queues, sorted by (time, source), or in the order a distributed
 * simulation's exchange gives (net/exchange.h); then the trains' and Poisson sources' spikes at
 * or before `upto` (the next interval's end). */
ns_status ns_net_exchange(sim_net *net);
ns_status ns_net_emit_trains(sim_net *net, double upto);

/* The block queue (net.c): push (-1: out of memory) and remove the entry at index i. */
int ns_net_queue_push(net_block *nb, const net_event *e);
void ns_net_queue_remove(net_block *nb, int64_t i);

/* Events of NMODL (net/events.c, docs/networks.md "Events"): synapse ->
 * source of its net_event (net->syn_src, before the blocks; connections
 * from one need delay >= dt), a point type's
 * event hooks (ppack.ev), the connections' NET_RECEIVE INITIAL at
 * finitialize (sim/network_build.c, ns_net_events_init), and the first event error of any block after
 * an interval. */
ns_status ns_net_events_index(sim_net *net, double dt);
ns_status ns_net_events_attach(sim_net *net, net_point *pt, const int64_t *syns, int32_t cnt);
ns_status ns_net_events_check(const sim_net *net);
/* The active WATCH conditions of a block at the start of a step from t
 * (NEURON's check_thresh): each that turned true sends its flag at t. */
void ns_net_watch(net_block *nb, double *v, double t, double dt, double celsius);
void ns_net_point_free(net_point *pt);

#endif
