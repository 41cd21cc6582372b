/* Private: the morphology handle shared by the SWC reader and the
 * discretisation. */
#ifndef NS_MORPH_IMPL_H
#define NS_MORPH_IMPL_H

#include "neurosolve/morph.h"

struct ns_morph {
    char *name;             /* file name or caller's name, for messages */
    ns_morph_point *points; /* topological order: parent index < own index */
    int64_t n_points;
    ns_morph_info info;
};

/* Take ownership of `points` (n entries, parents already < own index) and
 * build a morphology; detects the soma style and fills info (the caller sets
 * the read/dropped/repaired counts afterwards). On failure frees points. */
ns_status ns_morph_adopt(const char *name, ns_morph_point *points, int64_t n, ns_morph_t **out);

/* Soma style of a checked point array (see docs/swc.md for the rules). */
ns_soma_style ns_morph_detect_soma(const ns_morph_point *points, int64_t n);

#endif
