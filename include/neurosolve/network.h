/* neurosolve: network files, the native text format of a network
 * (docs/networks.md, "Network files"): cells of SWC morphologies, a model,
 * synapses, detectors, spike trains, Poisson sources and connections, with
 * ranges so that a ring or a random network of thousands of cells is a few
 * lines. Parsed into a description (no file is read but the network file),
 * then applied to a simulation of its cells: ns_network_create_sim reads the
 * morphologies and the model and does both. Errors name "FILE:LINE: " and the
 * element. */
#ifndef NEUROSOLVE_NETWORK_H
#define NEUROSOLVE_NETWORK_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/morph.h"
#include "neurosolve/cable.h"
#include "neurosolve/mechanism.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_network ns_network_t;

/* Parse a network text; `name` names it in errors ("FILE:LINE: reason"),
 * `base_dir` is the folder that relative morphology and model paths start
 * from (NULL: as given, from the working directory). */
NS_API ns_status ns_network_parse(const char *text, size_t length, const char *name, const char *base_dir,
                                  ns_network_t **out);
/* Read and parse a network file (paths relative to its folder; at most 256 MiB). */
NS_API ns_status ns_network_read(const char *path, ns_network_t **out);
NS_API void ns_network_destroy(ns_network_t *net);

/* Cells (numbered 0 .. n-1 in the order of the `cells` lines), their
 * morphologies (distinct paths, in order of first use) and each cell's
 * morphology index (ns_network_cells entries). */
NS_API int64_t ns_network_cells(const ns_network_t *net);
NS_API int32_t ns_network_morphologies(const ns_network_t *net);
NS_API const char *ns_network_morphology(const ns_network_t *net, int32_t k);
NS_API const int32_t *ns_network_cell_morphology(const ns_network_t *net);
/* What ns_network_apply creates: synapses, sources (detectors, trains and
 * Poisson sources in one numbering, in the file's order), and the
 * connections of the lines without `p=` (those with it are drawn at apply). */
NS_API int64_t ns_network_synapses(const ns_network_t *net);
NS_API int64_t ns_network_sources(const ns_network_t *net);
NS_API int64_t ns_network_fixed_connections(const ns_network_t *net);

/* The network's model (its `model FILE` line, then its `model:` lines),
 * mechanisms from the built-ins and `library` (may be NULL). *out is NULL
 * when the file names no model. */
NS_API ns_status ns_network_model(const ns_network_t *net, const ns_mech_library_t *library, ns_sim_model_t **out);

/* Create the network's synapses, sources and connections in a simulation of
 * its cells (ns_sim_create with ns_network_cells cells, cell c of shape
 * shapes[ns_network_cell_morphology(net)[c]]; a CPU simulation of a model).
 * `shapes` (ns_network_morphologies entries) locate the sections. Synapse
 * and source ids of the file start at the simulation's counts before the
 * call. On error the simulation may hold part of the network: destroy it. */
NS_API ns_status ns_network_apply(const ns_network_t *net, ns_sim_t *sim, const ns_cell_t *const *shapes);

/* The backend a network runs on for `requested`: itself, or for
 * NS_BACKEND_AUTO the sim policy's choice (the CPU, GPU or not:
 * docs/networks.md, "The GPU loop"). ns_network_create_sim and `simulate
 * --network` apply it. */
NS_API ns_backend ns_network_backend(ns_backend requested);

/* The whole path: read each morphology (ns_swc_read with default options,
 * ns_discretize with `disc`, NULL: defaults with params->Ra), the model
 * (options->model when given, else the network's; one of them is needed),
 * ns_sim_create and ns_network_apply. The simulation is initialised. */
NS_API ns_status ns_network_create_sim(const ns_network_t *net, const ns_mech_library_t *library,
                                       const ns_discretize_options *disc, const ns_sim_params *params,
                                       const ns_sim_options *options, ns_sim_t **out);

#ifdef __cplusplus
}
#endif
#endif
