/* libFuzzer target: the simulation's parameter files (`key = value`) and the
 * step count they give. */
#include <stdint.h>

#include "neurosolve/neurosolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    if (ns_sim_params_parse(&p, (const char *)data, size, "fuzz.txt") == NS_OK && ns_sim_params_check(&p) == NS_OK) {
        int64_t steps = 0;
        ns_sim_count_steps(p.tstop, p.dt, &steps);
    }
    return 0;
}
