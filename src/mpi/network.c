/* Network files over MPI processes (docs/networks.md, "MPI"): the traversal
 * of ns_network_apply (src/io/netfile.c, one implementation for both
 * targets) with the ns_mpi_sim_* calls, so that every process makes the
 * calls of a single simulation, in its order, with its arguments. */
#include <stdint.h>

#include "io/netfile_apply.h"
#include "core/error.h"
#include "mpi/sim_impl.h"

static ns_status mpi_add_synapse(void *t, int64_t c, int32_t k, const char *m, int64_t *id) {
    return ns_mpi_sim_add_synapse(t, c, k, m, id);
}
static ns_status mpi_synapse_set(void *t, int64_t y, const char *n, double v) {
    return ns_mpi_sim_synapse_set(t, y, n, v);
}
static ns_status mpi_add_detector(void *t, int64_t c, int32_t k, double thr, int64_t *id) {
    return ns_mpi_sim_add_detector(t, c, k, thr, id);
}
static ns_status mpi_add_spike_source(void *t, const double *x, int64_t n, int64_t *id) {
    return ns_mpi_sim_add_spike_source(t, x, n, id);
}
static ns_status mpi_add_poisson_source(void *t, double r, double a, double b, uint64_t seed, int64_t *id) {
    return ns_mpi_sim_add_poisson_source(t, r, a, b, seed, id);
}
static ns_status mpi_connect(void *t, int64_t a, int64_t b, double w, double d) {
    return ns_mpi_sim_connect(t, a, b, w, d);
}
static int64_t mpi_cells(const void *t) { return ns_mpi_sim_cells(t); }
static int64_t mpi_cell_compartments(const void *t, int64_t c) {
    const ns_mpi_sim_t *s = t;
    return c >= 0 && c < s->cells.n_cells ? s->cells.global_offset[c + 1] - s->cells.global_offset[c] : -1;
}
static int64_t mpi_synapses(const void *t) { return ns_mpi_sim_synapses(t); }
static int64_t mpi_sources(const void *t) { return ns_mpi_sim_sources(t); }

static const ns_network_calls mpi_calls = {mpi_add_synapse,   mpi_synapse_set, mpi_add_detector,
                                           mpi_add_spike_source, mpi_add_poisson_source, mpi_connect,
                                           mpi_cells,         mpi_cell_compartments, mpi_synapses,
                                           mpi_sources,
                                           NULL /* set_pointer: not under MPI */,
                                           NULL /* add_point_source: not under MPI */};

ns_status ns_network_apply_mpi(const ns_network_t *net, ns_mpi_sim_t *sim, const ns_cell_t *const *shapes) {
    if (!sim) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_apply_mpi: sim is NULL");
    /* A process stops at its first failure; the checks that need no cell
     * fail alike everywhere, those of a cell's owner (a mechanism or a
     * parameter name) there only. Every process then reports the failure
     * that comes first in the file (statement, then item), as one process
     * would: the lowest rank that has it (the same message where several do). */
    ns_network_failure at = {-2, 0}; /* a NULL argument: before everything */
    ns_status st = ns_network_apply_calls(net, &mpi_calls, sim, shapes, &at);
    if (st == NS_OK) at.statement = at.item = INT64_MAX;
    int64_t first = INT64_MAX, item = INT64_MAX;
    if (MPI_Allreduce(&at.statement, &first, 1, MPI_INT64_T, MPI_MIN, sim->comm) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_network_apply_mpi: MPI_Allreduce failed");
    const int64_t mine = at.statement == first ? at.item : INT64_MAX;
    if (MPI_Allreduce(&mine, &item, 1, MPI_INT64_T, MPI_MIN, sim->comm) != MPI_SUCCESS)
        return ns_fail(NS_ERR_IO, "ns_network_apply_mpi: MPI_Allreduce failed");
    return ns_mpi_agree(sim->comm, st != NS_OK && at.statement == first && at.item == item ? st : NS_OK);
}
