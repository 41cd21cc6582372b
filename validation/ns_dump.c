/* Dump neurosolve's discretisation of SWC files as CSV, for comparison with
 * NEURON (validation/neuron_discretization.py builds and runs this).
 *
 *   ns_dump [--fixed L | --one] [--Ra R] [--float] [--segments] FILE.swc
 *
 * Sections are keyed by the SWC id of their first own point, the key NEURON's
 * Import3d also gives each section (Import3d_Section.id). Uses NEURON's
 * junction policy so that every node has NEURON's meaning.
 *   section rows:  S,key,parent_key,parent_x,type,nseg,L,area,ri_sum,n3d
 *   segment rows:  G,key,x,area,ri      (--segments; x = 1 is the end node) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "neurosolve/morph.h"
#include "neurosolve/status.h"

/* NEURON stores 3D points as float (Import3d passes them through "%.8g"):
 * --float rounds ours the same way, to compare like with like. */
static double f8(double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.8g", v);
    return (double)(float)atof(buf);
}

static ns_status round_to_float(ns_morph_t **m) {
    int64_t n;
    const ns_morph_point *p = ns_morph_points(*m, &n);
    ns_morph_point *q = malloc((size_t)n * sizeof *q);
    if (!q) return NS_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < n; ++i) {
        q[i] = p[i];
        q[i].x = f8(p[i].x);
        q[i].y = f8(p[i].y);
        q[i].z = f8(p[i].z);
        q[i].r = f8(2.0 * p[i].r) / 2.0;
    }
    ns_morph_t *r = NULL;
    ns_status st = ns_morph_from_points(ns_morph_name(*m), q, n, &r);
    free(q);
    ns_morph_destroy(*m);
    *m = r;
    return st;
}

int main(int argc, char **argv) {
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.junctions = NS_JUNCTIONS_NEURON;
    int segments = 0, as_float = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--fixed") == 0 && i + 1 < argc) {
            o.rule = NS_NSEG_FIXED_LENGTH;
            o.max_length = atof(argv[++i]);
        } else if (strcmp(argv[i], "--one") == 0) {
            o.rule = NS_NSEG_ONE;
        } else if (strcmp(argv[i], "--Ra") == 0 && i + 1 < argc) {
            o.Ra = atof(argv[++i]);
        } else if (strcmp(argv[i], "--float") == 0) {
            as_float = 1;
        } else if (strcmp(argv[i], "--segments") == 0) {
            segments = 1;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "usage: ns_dump [--fixed L | --one] [--Ra R] [--segments] FILE.swc\n");
        return 2;
    }
    ns_morph_t *m = NULL;
    ns_cell_t *c = NULL;
    ns_status st = ns_swc_read(path, NULL, &m);
    if (st == NS_OK && as_float) st = round_to_float(&m);
    if (st == NS_OK) st = ns_discretize(m, &o, &c);
    if (st != NS_OK) {
        fprintf(stderr, "ns_dump: %s: %s\n", ns_status_string(st), ns_last_error());
        ns_morph_destroy(m);
        return 1;
    }
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    const double *area = ns_cell_area(c), *g = ns_cell_axial_conductance(c), *x = ns_cell_position(c);
    const int32_t *sec = ns_cell_section(c);
    for (int32_t k = 0; k < info.sections; ++k) {
        ns_section_info s, ps;
        ns_cell_get_section(c, k, &s);
        long long pkey = -1;
        if (s.parent >= 0 && ns_cell_get_section(c, s.parent, &ps) == NS_OK) pkey = (long long)ps.first_point_id;
        printf("S,%lld,%lld,%.17g,%d,%d,%.17g,%.17g,%.17g,%d\n", (long long)s.first_point_id, pkey,
               s.parent_x, (int)s.type, (int)s.nseg, s.length, s.area, s.ri_sum, (int)s.n3d);
    }
    if (segments) {
        for (int32_t i = 1; i < info.compartments; ++i) {
            ns_section_info s;
            ns_cell_get_section(c, sec[i], &s);
            printf("G,%lld,%.17g,%.17g,%.17g\n", (long long)s.first_point_id, x[i], area[i], 1.0 / g[i]);
        }
    }
    ns_cell_destroy(c);
    ns_morph_destroy(m);
    return 0;
}
