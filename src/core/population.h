/* Private: the population arguments shared by the calls that build many
 * cells from a few shapes (ns_sim_create, ns_mpi_batch_create and the
 * distributed ns_sim_create); header-only, so that libneurosolve_mpi uses it
 * without an exported symbol. */
#ifndef NS_CORE_POPULATION_H
#define NS_CORE_POPULATION_H

#include <stdint.h>

#include "core/error.h"

/* n_shapes >= 1 with a shape array, n_cells >= 1, and every cell_shape
 * (when given) in [0, n_shapes); `what` names the call in the message. The
 * shapes themselves the caller checks (their type is its own). */
static inline ns_status ns_population_check(const char *what, int32_t n_shapes, int has_shapes, int64_t n_cells,
                                            const int32_t *cell_shape) {
    if (n_shapes < 1 || !has_shapes) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %d shapes", what, (int)n_shapes);
    if (n_cells < 1) return ns_fail(NS_ERR_EMPTY, "%s: %lld cells", what, (long long)n_cells);
    for (int64_t c = 0; cell_shape && c < n_cells; ++c)
        if (cell_shape[c] < 0 || cell_shape[c] >= n_shapes)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell_shape[%lld] = %d is outside [0, %d)", what,
                           (long long)c, (int)cell_shape[c], (int)n_shapes);
    return NS_OK;
}

#endif
