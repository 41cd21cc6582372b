/* Private: building a network description (ns_network_t, netfile.c) from
 * another format than the text of a network file: the SONATA reader
 * (sonata.c) fills one through these calls, and ns_network_apply,
 * ns_network_sim_create and ns_network_create_sim then serve both formats
 * (docs/networks.md, "SONATA"). Calls append statements in order; the ids
 * they give are the description's (synapses and sources from 0). */
#ifndef NS_CABLE_NETFILE_BUILD_H
#define NS_CABLE_NETFILE_BUILD_H

#include <stdint.h>

#include "neurosolve/network.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_NETBUILD_NAME 64

/* An empty description named `name` (messages start with it). */
ns_status ns_netbuild_create(const char *name, ns_network_t **out);
/* `count` more cells of the morphology at `path` (as a `cells` line). */
ns_status ns_netbuild_cells(ns_network_t *net, int64_t count, const char *path);
/* The model file (one per network). */
ns_status ns_netbuild_model(ns_network_t *net, const char *path);
/* One detector at soma(0.5) of every cell, in cell order (sources 0 .. cells - 1
 * when called first). */
ns_status ns_netbuild_detectors(ns_network_t *net, double threshold);
/* One train of given times (copied). */
ns_status ns_netbuild_train(ns_network_t *net, const double *times, int64_t count);

/* A synapse type of an edge block: a mechanism and PARAMETER values. */
typedef struct ns_netbuild_syntype {
    char mech[NS_NETBUILD_NAME];
    int32_t n_params;
    char (*name)[NS_NETBUILD_NAME];
    double *value;
} ns_netbuild_syntype;

/* A block of edges, each a synapse of its own (type[k] of `types`, then the
 * per-edge values of `pp_names`, pp[k * n_pp + j], NaN: not set) at section
 * section[k] of cell cell[k] in SONATA's section numbering (BMTK's: the
 * sections sorted by SWC type, Import3d's order within a type) at x[k], and a
 * connection to it from source src[k] with weight[k] and delay[k]. The
 * arrays are taken over (freed by the description, also on error); `label`
 * names the block in errors and `node[k]` the edge's target node there.
 * Sources must exist before the block (detectors and trains first). */
typedef struct ns_netbuild_edges {
    char label[512];
    int64_t n;
    int64_t *src, *cell, *node;
    int32_t *section, *type;
    double *x, *weight, *delay;
    int32_t n_types;
    ns_netbuild_syntype *types;
    int32_t n_pp;
    char (*pp_names)[NS_NETBUILD_NAME];
    double *pp;
} ns_netbuild_edges;
ns_status ns_netbuild_edges_add(ns_network_t *net, ns_netbuild_edges *block);
void ns_netbuild_edges_free(ns_netbuild_edges *block);

/* SONATA's identity of the sources (for the spikes output): the
 * populations (copied), and each source's population and node id. */
ns_status ns_netbuild_populations(ns_network_t *net, int32_t n, const char *const *names);
ns_status ns_netbuild_source_nodes(ns_network_t *net, const int32_t *population, const int64_t *node, int64_t n);
/* The run settings of the config (NaN: not given). */
void ns_netbuild_run(ns_network_t *net, double tstop, double dt, double celsius, double v_init,
                     double spike_threshold);
/* Done: the checks ns_network_parse makes at the end (cells exist). */
ns_status ns_netbuild_finish(ns_network_t *net);

#ifdef __cplusplus
}
#endif
#endif
