/* The one-compartment cell of the simulation tests: a cylinder L = diam = 20 um
 * (area 400 pi um^2), NS_NSEG_ONE, the soma of NEURON's single-compartment driver.
 * Include after the CHECK_OK of the test's harness (check.h or test_mpi_common.h). */
#ifndef NS_TESTS_CELL_CYLINDER_H
#define NS_TESTS_CELL_CYLINDER_H

#include "neurosolve/neurosolve.h"

static inline ns_cell_t *test_cylinder(void) {
    const ns_morph_point pts[2] = {{0, 0, 0, 10, 1, -1, 1, 1}, {20, 0, 0, 10, 1, 0, 2, 2}};
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_morph_from_points("cylinder", pts, 2, &morph));
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.rule = NS_NSEG_ONE;
    if (morph) CHECK_OK(ns_discretize(morph, &o, &cell));
    ns_morph_destroy(morph);
    return cell;
}

#endif
