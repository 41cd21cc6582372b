/* Private: a simulation spread over processes (ns_sim_options.dist,
 * docs/mpi.md). The handle the caller gets is an ns_sim_t whose `dist` is
 * set: the public ns_sim_* calls hand it to the functions below, which keep
 * global cell, site, synapse and source numbers, drive this process's own
 * simulation of the cells it owns (`local`, NULL when it owns none) and
 * communicate through the distribution's table (core/dist_impl.h). sim.c
 * has the facade, net/dist_net.c the network across processes. */
#ifndef NS_SIM_DIST_IMPL_H
#define NS_SIM_DIST_IMPL_H

#include "core/dist_impl.h"
#include "net/exchange.h"
#include "neurosolve/cable.h"

#define NS_DIST_DETAIL_BYTES 1024

/* The network in global numbers (docs/networks.md, "MPI"): every process
 * makes the same calls and numbers every synapse and source; the owner of a
 * cell holds its synapses and detectors, every process with cells holds
 * every train and, for each remote detector that drives one of its
 * synapses, a proxy (an empty train) whose spikes the exchange gives. */
typedef struct dist_net {
    int64_t n_syns, cap_syns;
    int64_t *syn_cell;   /* global cell */
    int64_t *syn_local;  /* the owner's synapse number; -1 elsewhere */
    int64_t n_srcs, cap_srcs;
    int64_t *src_cell;   /* a detector's global cell; -1: a train */
    int64_t *src_local;  /* the local source (detector, train, proxy); -1: none here */
    int64_t n_local, cap_local;
    int64_t *src_global; /* local source -> global */
    int64_t n_conns;     /* all of them */
    int64_t n_kept;      /* those whose synapse is here */
    double min_delay;    /* of those [ms] */
    uint64_t hash;       /* of every network call's arguments, compared at init */
    int dirty;           /* calls since the last ns_sim_init */
    int on;              /* the network is not empty (set by ns_sim_init) */
    double agreed_min_delay; /* over all processes [ms] */
    /* the exchange of one ns_sim_advance call */
    int64_t exchanges;   /* taken part in so far */
    int failed;          /* a failure was announced and agreed */
    int64_t *counts;     /* per rank */
    ns_net_spike *recv;
    int64_t cap_recv;
    /* rasters gathered by ns_sim_gather */
    int64_t n_raster;       /* sources gathered */
    int64_t *raster_offset; /* n_raster + 1 */
    double *raster_times;
} dist_net;

typedef struct sim_dist {
    ns_sim_t *sim; /* the handle the caller holds (its `dist` is this) */
    const ns_dist_t *dist;
    int32_t rank, size;
    /* the cells, given to the ranks by LPT over compartment counts */
    int64_t n_cells, n_comp;
    int32_t *owner;         /* n_cells */
    int32_t *cell_shape;    /* n_cells */
    int64_t *global_offset; /* n_cells + 1: compartments in the global Flat layout */
    int64_t *local_cells;   /* n_local global numbers, increasing */
    int64_t n_local;
    ns_sim_t *local;        /* NULL when this process owns no cell */
    ns_sim_params params;
    /* recordings by global site */
    int32_t *site_owner, *site_local;
    int32_t n_sites, cap_sites;
    /* the first failure of a non-collective call, reported at the next
     * collective one */
    ns_status pending;
    char pending_detail[NS_DIST_DETAIL_BYTES];
    double wall_ms; /* ns_sim_advance calls, agreement included */
    /* per rank: byte counts and displacements of a gather, and those of
     * one int64 from every rank */
    int64_t *bytes, *displs, *one_bytes, *one_displs;
    /* gathered results (receiving processes) */
    int gathered;
    double *traces;
    int64_t samples;
    int64_t *spike_offset; /* n_cells + 1 */
    double *spike_times;
    dist_net net;
} sim_dist;

/* sim/dist.c: the facade's distributed branch (the ns_sim_* call of the
 * same name, global numbers). ns_sim_create: `options->dist` set. */
ns_status ns_dist_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                             const int32_t *cell_shape, const ns_sim_params *params, const ns_sim_options *options,
                             ns_sim_t **out);
/* Frees the handle too. */
void ns_dist_sim_destroy(sim_dist *s);
ns_status ns_dist_sim_add_iclamp(sim_dist *s, int64_t cell, int32_t compartment, double delay, double duration,
                                 double amplitude);
ns_status ns_dist_sim_add_recording(sim_dist *s, int64_t cell, int32_t compartment, int32_t *site);
ns_status ns_dist_sim_init(sim_dist *s);
ns_status ns_dist_sim_advance(sim_dist *s, int64_t steps);
ns_status ns_dist_sim_gather(sim_dist *s, int32_t root);
const double *ns_dist_sim_traces(const sim_dist *s, int64_t *samples, int32_t *sites);
const double *ns_dist_sim_spikes(const sim_dist *s, int64_t cell, int64_t *count);
int64_t ns_dist_sim_local_cell(const sim_dist *s, int64_t cell);
int32_t ns_dist_sim_spike_compartment(const sim_dist *s, int64_t cell);
/* NS_ERR_UNSUPPORTED naming `what` (per process: ns_sim_local). */
ns_status ns_dist_sim_refuse(const char *what);
/* Keep the first failure of a non-collective call for the next collective
 * one; returns st. */
ns_status ns_dist_sim_defer(sim_dist *s, ns_status st);
/* ns_network_apply on a distributed simulation: every process reports the
 * failure that comes first in the file (statement, item), whichever process
 * found it. `st`, `statement` and `item`: this process's traversal
 * (io/netfile_apply.h's ns_network_failure). */
ns_status ns_dist_sim_first_failure(sim_dist *s, ns_status st, int64_t statement, int64_t item);
/* The same for any simulation (on one process: st). */
ns_status ns_sim_network_failure(ns_sim_t *sim, ns_status st, int64_t statement, int64_t item);

/* Per-item lists of doubles, each item's held by one process, to root (< 0:
 * every process) as offsets (n_items + 1) and values. */
typedef int32_t (*ns_dist_holder_fn)(const sim_dist *s, int64_t item);
typedef const double *(*ns_dist_list_fn)(const sim_dist *s, int64_t item, int64_t *n);
ns_status ns_dist_gather_lists(sim_dist *s, int32_t root, int receiver, int64_t n_items, ns_dist_holder_fn holder,
                               ns_dist_list_fn list, int64_t **offset, double **values);

/* net/dist_net.c */
void ns_dist_net_free(dist_net *x);
ns_status ns_dist_sim_add_synapse(sim_dist *s, int64_t cell, int32_t compartment, const char *mechanism,
                                  int64_t *synapse);
ns_status ns_dist_sim_synapse_set(sim_dist *s, int64_t synapse, const char *name, double value);
ns_status ns_dist_sim_add_detector(sim_dist *s, int64_t cell, int32_t compartment, double threshold, int64_t *source);
ns_status ns_dist_sim_add_spike_source(sim_dist *s, const double *times, int64_t count, int64_t *source);
ns_status ns_dist_sim_add_poisson_source(sim_dist *s, double rate_hz, double start, double stop, uint64_t seed,
                                         int64_t *source);
ns_status ns_dist_sim_connect(sim_dist *s, int64_t source, int64_t synapse, double weight, double delay);
const double *ns_dist_sim_source_spikes(const sim_dist *s, int64_t source, int64_t *count);
/* Collective, at ns_sim_init after the pending failures were agreed (NS_OK
 * on every process): the network's calls compared between the processes,
 * the minimum delay agreed, the exchange given to the local simulation.
 * Ends without an agreement: the caller agrees. */
ns_status ns_dist_net_init(sim_dist *s);
/* Collective, around ns_sim_advance of the local simulation: before
 * (returns the interval count of the call, 0 without a network), and after
 * with the local status: the exchanges this process has not taken part in
 * (all of them without cells, or one announcing a failure here); returns
 * the status, agreed when an exchange saw a failure. */
int64_t ns_dist_net_begin(sim_dist *s, int64_t steps);
ns_status ns_dist_net_end(sim_dist *s, int64_t intervals, ns_status local);
/* Collective: the sources' rasters to root (< 0: every process). */
ns_status ns_dist_net_gather(sim_dist *s, int32_t root, int receiver);

#endif
