/* libFuzzer target: network files (docs/networks.md, "Network files"):
 * ns_network_parse, and when the network is small (at most 8 cells, 4
 * morphologies, 256 synapses and sources, 4096 connections) its model and
 * ns_network_apply on cells of one small shape (soma, dendrites, an axon:
 * every morphology path stands for it), then 40 steps of the CPU loop. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_cell.h"
#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const ns_cell_t *cell = fuzz_cell();
    ns_network_t *net = NULL;
    if (!cell || ns_network_parse((const char *)data, size, "fuzz.net", NULL, &net) != NS_OK) return 0;
    ns_sim_model_t *model = NULL;
    if (ns_network_cells(net) <= 8 && ns_network_morphologies(net) <= 4 && ns_network_synapses(net) <= 256 &&
        ns_network_sources(net) <= 256 && ns_network_fixed_connections(net) <= 4096 &&
        ns_network_model(net, NULL, &model) == NS_OK) {
        if (!model && ns_sim_model_create(NULL, &model) == NS_OK) ns_sim_model_insert(model, "all", "pas");
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CPU;
        o.method = NS_HINES_SEQUENTIAL;
        o.model = model;
        const ns_cell_t *shapes[4] = {cell, cell, cell, cell};
        ns_sim_t *sim = NULL;
        if (model &&
            ns_sim_create(ns_network_morphologies(net), shapes, ns_network_cells(net), ns_network_cell_morphology(net),
                          &p, &o, &sim) == NS_OK &&
            ns_network_apply(net, sim, shapes) == NS_OK && ns_sim_init(sim) == NS_OK)
            ns_sim_advance(sim, 40);
        ns_sim_destroy(sim);
    }
    ns_sim_model_destroy(model);
    ns_network_destroy(net);
    return 0;
}
