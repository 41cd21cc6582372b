/* Private to neurosolve_mpi: the distributed simulation (sim.c) and its
 * network across processes (sim_net.c). */
#ifndef NS_MPI_SIM_IMPL_H
#define NS_MPI_SIM_IMPL_H

#include "net/exchange.h"
#include "mpi/mpi_impl.h"

#define NS_MPI_DETAIL_BYTES 1024

/* The network in global numbers (docs/networks.md, "MPI"): every process
 * makes the same calls and numbers every synapse and source; the owner of a
 * cell holds its synapses and detectors, every process with cells holds
 * every train and, for each remote detector that drives one of its
 * synapses, a proxy (an empty train) whose spikes the exchange gives. */
typedef struct mpi_net {
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
    int dirty;           /* calls since the last ns_mpi_sim_init */
    int on;              /* the network is not empty (set by ns_mpi_sim_init) */
    double agreed_min_delay; /* over all processes [ms] */
    /* the exchange of one ns_mpi_sim_advance call */
    int64_t exchanges;   /* taken part in so far */
    int failed;          /* a failure was announced and agreed */
    int64_t *counts;     /* per rank */
    int *bytes, *displs; /* per rank */
    ns_net_spike *recv;
    int64_t cap_recv;
    /* rasters gathered by ns_mpi_sim_gather */
    int64_t n_raster;       /* sources gathered */
    int64_t *raster_offset; /* n_raster + 1 */
    double *raster_times;
} mpi_net;

struct ns_mpi_sim {
    MPI_Comm comm;
    ns_mpi_cells cells;
    ns_sim_t *local; /* NULL when this process owns no cell */
    ns_sim_params params;
    /* recordings by global site */
    int32_t *site_owner, *site_local;
    int32_t n_sites, cap_sites, n_local_sites;
    /* the first failure of a non-collective call, reported at the next
     * collective one */
    ns_status pending;
    char pending_detail[NS_MPI_DETAIL_BYTES];
    double wall_ms; /* ns_mpi_sim_advance calls, agreement included */
    /* gathered results (receiving processes) */
    int gathered;
    double *traces;
    int64_t samples;
    int64_t *spike_offset; /* n_cells + 1 */
    double *spike_times;
    mpi_net net;
};

/* Keep the first failure of a non-collective call for the next collective
 * one; returns st. */
ns_status ns_mpi_sim_defer(ns_mpi_sim_t *s, ns_status st);

/* sim_net.c */
void ns_mpi_net_free(mpi_net *x);
/* Collective, at ns_mpi_sim_init after the pending failures were agreed
 * (NS_OK on every process): the network's calls compared between the
 * processes, the minimum delay agreed, the exchange given to the local
 * simulation. Ends without an agreement: the caller agrees. */
ns_status ns_mpi_net_init(ns_mpi_sim_t *s);
/* Collective, around ns_sim_advance of the local simulation: before
 * (returns the interval count of the call, 0 without a network), and after
 * with the local status: the exchanges this process has not taken part in
 * (all of them without cells, or one announcing a failure here); returns
 * the status, agreed when an exchange saw a failure. */
int64_t ns_mpi_net_begin(ns_mpi_sim_t *s, int64_t steps);
ns_status ns_mpi_net_end(ns_mpi_sim_t *s, int64_t intervals, ns_status local);
/* Collective: the sources' rasters to root (< 0: every process). */
ns_status ns_mpi_net_gather(ns_mpi_sim_t *s, int root, int receiver, int *counts, int *displs, int64_t *len);

/* sim.c: per-item lists of doubles, each item's held by one process, to
 * root (< 0: every process) as offsets (n_items + 1) and values. */
typedef int32_t (*ns_mpi_holder_fn)(const ns_mpi_sim_t *s, int64_t item);
typedef const double *(*ns_mpi_list_fn)(const ns_mpi_sim_t *s, int64_t item, int64_t *n);
ns_status ns_mpi_gather_lists(ns_mpi_sim_t *s, int root, int receiver, int *counts, int *displs, int64_t *len,
                              int64_t n_items, ns_mpi_holder_fn holder, ns_mpi_list_fn list, int64_t **offset,
                              double **values);

#endif
