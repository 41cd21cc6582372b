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
/* Read and parse a network file (paths relative to its folder; at most 256
 * MiB). A file whose first character (after blanks) is '{' is a SONATA
 * config: ns_network_read_sonata(path, NULL, out). */
NS_API ns_status ns_network_read(const char *path, ns_network_t **out);

/* SONATA (docs/networks.md, "SONATA"): a circuit or simulation config (JSON:
 * manifest, components, networks.nodes/edges, run, conditions, inputs) and
 * the nodes and edges files it names (HDF5) with their type tables (CSV)
 * become the same description as a network file's: the biophysical nodes
 * are the cells (populations in the config's order, nodes by id), each with
 * a detector at soma(0.5) (run.spike_threshold, -15 mV by default as BMTK's)
 * as sources 0 .. cells - 1, then one train per virtual node (its spikes
 * from the config's spikes inputs, or from `input_spikes`, a SONATA spikes
 * file, when not NULL); every edge a synapse of its own at its section and
 * position plus a connection from its source. Errors name the file and the
 * element (population, dataset, node, edge, type). NS_ERR_UNSUPPORTED
 * ("built without HDF5") in a build without libhdf5. */
NS_API ns_status ns_network_read_sonata(const char *config, const char *input_spikes, ns_network_t **out);
/* A SONATA network's node populations (0 for a network file), and a
 * source's population index and node id (NS_ERR_INVALID_ARGUMENT for a
 * network file's description). */
NS_API int32_t ns_network_populations(const ns_network_t *net);
NS_API const char *ns_network_population(const ns_network_t *net, int32_t k);
NS_API ns_status ns_network_source_node(const ns_network_t *net, int64_t source, int32_t *population,
                                        int64_t *node_id);
/* The config's run settings (run.tstop, run.dt, run.spike_threshold,
 * conditions.celsius, conditions.v_init) set in `params` (those given
 * only; nothing for a network file). */
NS_API ns_status ns_network_run_params(const ns_network_t *net, ns_sim_params *params);
/* SONATA's section `sonata_section` of a cell (BMTK's afferent_section_id:
 * the index into NEURON's `all` after Import3d's instantiate, i.e. the
 * sections sorted by SWC type, Import3d's order within a type) as the
 * cell's section index (ns_cell_get_section). */
NS_API ns_status ns_network_sonata_section(const ns_cell_t *cell, int32_t sonata_section, int32_t *section);
/* Write spikes as a SONATA spikes file at `path` (HDF5; the caller makes it
 * atomic, e.g. through ns_output_temp_path): /spikes/POP/timestamps [ms]
 * and /spikes/POP/node_ids for each population with spikes, attribute
 * sorting = "by_time"; spike k is source[k] at t[k] (sorted here by time,
 * then node id). Only the detectors' sources (the biophysical nodes) are
 * written: the trains of virtual nodes are the input. NS_ERR_UNSUPPORTED
 * in a build without HDF5. */
NS_API ns_status ns_network_write_spikes(const ns_network_t *net, const char *path, int64_t n, const int64_t *source,
                                         const double *t);
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
/* The spikes the network's inputs give up to tstop [ms]: every train time
 * <= tstop, and for Poisson sources their mean count (count x rate x the
 * time they fire within [0, tstop]); for the cost estimate before a run. */
NS_API double ns_network_expected_input_spikes(const ns_network_t *net, double tstop);

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

/* The simulation of the network's cells (ns_network_cells cells, cell c
 * of shape shapes[ns_network_cell_morphology(net)[c]]; options->model
 * needed: ns_network_model gives the file's) with ns_network_apply done:
 * ns_sim_create, on the backend the sim policy chooses for a network when
 * options->backend is NS_BACKEND_AUTO (the CPU, GPU or not:
 * docs/networks.md, "The GPU loop"), then ns_network_apply. Add stimuli
 * and recordings, then ns_sim_init (the network takes effect there).
 * Spread over processes with options->dist, collective. */
NS_API ns_status ns_network_sim_create(const ns_network_t *net, const ns_cell_t *const *shapes,
                                       const ns_sim_params *params, const ns_sim_options *options, ns_sim_t **out);

/* The whole path: read each morphology (ns_swc_read with default options,
 * ns_discretize with `disc`, NULL: defaults with params->Ra), the model
 * (options->model when given, else the network's; one of them is needed),
 * ns_network_sim_create. The simulation is initialised. */
NS_API ns_status ns_network_create_sim(const ns_network_t *net, const ns_mech_library_t *library,
                                       const ns_discretize_options *disc, const ns_sim_params *params,
                                       const ns_sim_options *options, ns_sim_t **out);

#ifdef __cplusplus
}
#endif
#endif
