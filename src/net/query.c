/* Questions about a simulation's network that its outputs need (the CLI's
 * raster names each detector's cell). */
#include "net/net_impl.h"
#include "sim/dist_impl.h"
#include "sim/sim_impl.h"

int64_t ns_sim_source_cell(const ns_sim_t *sim, int64_t source) {
    if (sim && sim->dist) /* a detector's global cell, -1 for a train */
        return source >= 0 && source < sim->dist->net.n_srcs ? sim->dist->net.src_cell[source] : -2;
    if (!sim || !sim->net || source < 0 || source >= sim->net->n_sources) return -2;
    return sim->net->sources[source].cell;
}
