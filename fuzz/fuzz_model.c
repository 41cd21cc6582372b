/* libFuzzer target: model files (docs/simulation.md, "Models": statements,
 * expressions in d) with the built-in mechanisms, resolved on a small cell
 * (soma, an apical and a basal dendrite, an axon) by ns_sim_create, and two
 * steps of the CPU loop when it is accepted. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_cell.h"
#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const ns_cell_t *cell = fuzz_cell();
    ns_sim_model_t *model = NULL;
    if (!cell || ns_sim_model_create(NULL, &model) != NS_OK) return 0;
    if (ns_sim_model_parse(model, (const char *)data, size, "fuzz.model") == NS_OK) {
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CPU;
        o.method = NS_HINES_SEQUENTIAL;
        o.model = model;
        ns_sim_t *sim = NULL;
        if (ns_sim_create(1, &cell, 2, NULL, &p, &o, &sim) == NS_OK) ns_sim_advance(sim, 2);
        ns_sim_destroy(sim);
    }
    ns_sim_model_destroy(model);
    return 0;
}
