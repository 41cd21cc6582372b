/* The small cell of the simulation fuzz targets (model, network files): a
 * soma, an apical and a basal dendrite and an axon, discretised once. */
#ifndef NS_FUZZ_CELL_H
#define NS_FUZZ_CELL_H
#include "neurosolve/neurosolve.h"

static inline const ns_cell_t *fuzz_cell(void) {
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

#endif
