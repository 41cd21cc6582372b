/* A bundled morphology (data/morphologies/NAME) read and discretised with the
 * default options and axial resistance Ra, for the tests that build cells
 * from bundled SWC files (needs NS_MORPHOLOGIES and check.h). */
#ifndef NS_TEST_LOAD_CELL_H
#define NS_TEST_LOAD_CELL_H

#include <stdio.h>

#include "check.h"
#include "neurosolve/neurosolve.h"

static ns_cell_t *test_load_cell(const char *name, double Ra) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, name);
    ns_morph_t *m = NULL;
    CHECK_OK(ns_swc_read(path, NULL, &m));
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.Ra = Ra;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_discretize(m, &o, &cell));
    ns_morph_destroy(m);
    return cell;
}

#endif
