/* libFuzzer target: model files (docs/simulation.md, "Models": statements,
 * expressions in d) with the built-in mechanisms, resolved on a small cell
 * (soma, an apical and a basal dendrite, an axon) by ns_sim_create, and two
 * steps of the CPU loop when it is accepted. */
#include <stdint.h>
#include <stdlib.h>

#include "neurosolve/neurosolve.h"

static ns_cell_t *cell_once(void) {
    static ns_cell_t *cell = NULL;
    if (cell) return cell;
    const ns_morph_point pts[] = {
        {0, 0, 0, 8, 1, -1, 1, 1},      {0, 10, 0, 8, 1, 0, 2, 2},     {0, 60, 0, 1.5, 4, 1, 3, 3},
        {0, 400, 0, 1, 4, 2, 4, 4},     {30, -20, 0, 1, 3, 0, 5, 5},   {90, -80, 0, 0.8, 3, 4, 6, 6},
        {-5, -30, 0, 0.7, 2, 0, 7, 7},  {-5, -300, 0, 0.5, 2, 6, 8, 8}};
    ns_morph_t *m = NULL;
    if (ns_morph_from_points("fuzz", pts, 8, &m) != NS_OK) return NULL;
    ns_discretize(m, NULL, &cell);
    ns_morph_destroy(m);
    return cell;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const ns_cell_t *cell = cell_once();
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
