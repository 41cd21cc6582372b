/* neurosolve: morphologies (SWC) and their discretisation into compartments.
 *
 * Reading: ns_swc_read() parses and checks an SWC file and keeps one tree
 * (see docs/swc.md for the policy on several roots and on radii <= 0).
 * Points come out in a topological order (every parent before its child).
 *
 * Discretising: ns_discretize() cuts the tree into NEURON sections (the
 * unbranched runs between branch points), chooses nseg per section (fixed
 * length or the d_lambda rule) and produces a compartment tree in Hines
 * order with areas and axial conductances computed from the frusta, the way
 * NEURON computes them (docs/discretisation.md).
 *
 * Units follow NEURON: um, ms, mV, uF/cm^2, ohm cm, S/cm^2. */
#ifndef NEUROSOLVE_MORPH_H
#define NEUROSOLVE_MORPH_H

#include "neurosolve/export.h"

#include <stddef.h> /* size_t (ns_swc_parse) */
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ SWC */

/* SWC type codes of the standard; other codes are kept as they are. */
enum {
    NS_SWC_UNDEFINED = 0,
    NS_SWC_SOMA = 1,
    NS_SWC_AXON = 2,
    NS_SWC_BASAL = 3,
    NS_SWC_APICAL = 4
};

/* How a file represents its soma (detected after the root policy). */
typedef enum ns_soma_style {
    NS_SOMA_NONE = 0,         /* no type-1 points */
    NS_SOMA_SINGLE_POINT = 1, /* one type-1 point: a sphere of that radius */
    NS_SOMA_THREE_POINT = 2,  /* NeuroMorpho three-point soma */
    NS_SOMA_MULTI_POINT = 3,  /* chain of type-1 points: a stack of frusta */
    NS_SOMA_CONTOUR = 4       /* outline of the cell body */
} ns_soma_style;

NS_API const char *ns_soma_style_name(ns_soma_style style);

/* What to do when a file holds several trees (several parent -1 lines). */
typedef enum ns_root_policy {
    NS_ROOTS_KEEP_MAIN = 0, /* keep the tree holding the soma, else the largest; report what was dropped */
    NS_ROOTS_REJECT = 1     /* several roots is an NS_ERR_TOPOLOGY error */
} ns_root_policy;

/* What to do with radii <= 0. */
typedef enum ns_radius_policy {
    NS_RADIUS_REPAIR = 0, /* take the radius of the nearest point with a positive one (see docs/swc.md);
                             a tree with no positive radius at all is rejected */
    NS_RADIUS_REJECT = 1, /* any radius <= 0 is an NS_ERR_PARSE error */
    NS_RADIUS_DEFAULT = 2 /* replace every radius <= 0 by ns_swc_options.default_radius */
} ns_radius_policy;

typedef struct ns_swc_options {
    ns_root_policy roots;
    ns_radius_policy radii;
    double default_radius;  /* [um] used by NS_RADIUS_DEFAULT */
    double scale;           /* multiply coordinates and radii by this (1 = um; 1e-3 for nm files) */
} ns_swc_options;

NS_API void ns_swc_options_init(ns_swc_options *options);

/* One kept point. parent is an index into the point array (-1 for the root),
 * always smaller than the point's own index. */
typedef struct ns_morph_point {
    double x, y, z;  /* [um] */
    double r;        /* [um] radius after the radius policy */
    int32_t type;    /* SWC type code as in the file */
    int32_t parent;  /* index of the parent point, -1 for the root */
    int64_t id;      /* id in the file */
    int64_t line;    /* 1-based line number in the file */
} ns_morph_point;

typedef struct ns_morph_info {
    int64_t points_read;    /* data lines in the file */
    int64_t points;         /* points kept */
    int64_t roots;          /* trees in the file */
    int64_t roots_kept;     /* 1 */
    int64_t points_dropped; /* points in the trees that were not kept */
    int64_t radii_repaired; /* points whose radius <= 0 was replaced */
    int64_t soma_points;    /* type-1 points kept */
    ns_soma_style soma;
} ns_morph_info;

typedef struct ns_morph ns_morph_t;

/* Read and check an SWC file. On failure *out is NULL and ns_last_error()
 * reads "FILE:LINE: reason" (or "FILE: reason"). options may be NULL. */
NS_API ns_status ns_swc_read(const char *path, const ns_swc_options *options, ns_morph_t **out);

/* The same from a string in memory; name is used in error messages. */
NS_API ns_status ns_swc_parse(const char *text, size_t length, const char *name,
                              const ns_swc_options *options, ns_morph_t **out);

/* Build a morphology from points in memory (copied). Points must be in
 * topological order: points[0] is the root (parent -1) and every other
 * point's parent index is smaller than its own; radii must be > 0. */
NS_API ns_status ns_morph_from_points(const char *name, const ns_morph_point *points, int64_t count,
                                      ns_morph_t **out);

NS_API void ns_morph_destroy(ns_morph_t *morph);
NS_API void ns_morph_get_info(const ns_morph_t *morph, ns_morph_info *info);
NS_API const ns_morph_point *ns_morph_points(const ns_morph_t *morph, int64_t *count);
NS_API const char *ns_morph_name(const ns_morph_t *morph);

/* ------------------------------------------------------- discretisation */

typedef enum ns_nseg_rule {
    NS_NSEG_D_LAMBDA = 0,     /* NEURON's d_lambda rule (lambda at `frequency`) */
    NS_NSEG_FIXED_LENGTH = 1, /* nseg = ceil(L / max_length), made odd */
    NS_NSEG_ONE = 2           /* one compartment per section */
} ns_nseg_rule;

/* Which of NEURON's zero-area nodes to keep (docs/discretisation.md).
 * NEURON gives every section a node at x = 1 and the root section a node
 * at x = 0; they carry no membrane. A zero-area node with at most two
 * neighbours is two resistors in series and can be folded away exactly. */
typedef enum ns_junction_policy {
    NS_JUNCTIONS_MINIMAL = 0, /* keep only zero-area nodes joining 3 or more compartments */
    NS_JUNCTIONS_NEURON = 1   /* keep all of NEURON's nodes (1 + sum of (nseg + 1)) */
} ns_junction_policy;

typedef struct ns_discretize_options {
    ns_nseg_rule rule;
    double d_lambda;    /* fraction of the AC length constant, default 0.1 */
    double frequency;   /* [Hz] default 100 */
    double max_length;  /* [um] for NS_NSEG_FIXED_LENGTH, default 20 */
    double Ra;          /* [ohm cm] axial resistivity, default 35.4 (NEURON's) */
    double cm;          /* [uF/cm^2] specific capacitance, default 1 */
    ns_junction_policy junctions; /* default NS_JUNCTIONS_MINIMAL */
    /* Per-section settings (docs/discretisation.md, "Per-section nseg, Ra and cm"), NULL for
     * none: text in the parameter file's grammar, applied in order to the sections:
     *   LOC.nseg = N   that many segments (1..32767), in place of the rule
     *   LOC.Ra = X     the section's Ra [ohm cm] (its resistances and its d_lambda)
     *   REGION.cm = X  the d_lambda rule's cm for the region's sections
     *   SEC.start_diam = X  (SEC: sec:K or swc:ID) the diameter [um] of the section's first
     *                  3-D point, the copy of its parent's point (Import3d gives it the
     *                  parent's diameter; NEURON sections built otherwise may differ)
     *   Ra = X         every section's Ra
     * LOC: soma, axon, basal, apical, other, dend, all (by SWC type), sec:K (section
     * index, ns_cell_get_section's numbering) or swc:ID (the section whose first point
     * has SWC id ID). Other keys are skipped, so a whole parameter file can be given.
     * Errors read "sections_name:LINE: reason". Read during ns_discretize only. */
    const char *sections;
    size_t sections_length;
    const char *sections_name;
} ns_discretize_options;

NS_API void ns_discretize_options_init(ns_discretize_options *options);

typedef struct ns_cell ns_cell_t;

typedef struct ns_cell_info {
    int32_t compartments;   /* nodes of the Hines system */
    int32_t sections;       /* NEURON sections (the soma counts as one) */
    int32_t branch_depth;   /* most sections on a path from the root to a leaf */
    double total_area;      /* [um^2] */
    double total_length;    /* [um] summed over sections */
} ns_cell_info;

NS_API ns_status ns_discretize(const ns_morph_t *morph, const ns_discretize_options *options,
                               ns_cell_t **out);
NS_API void ns_cell_destroy(ns_cell_t *cell);
NS_API void ns_cell_get_info(const ns_cell_t *cell, ns_cell_info *info);

/* One NEURON section as Import3d builds it (docs/discretisation.md). */
typedef struct ns_section_info {
    int32_t parent;          /* parent section, -1 for the root section */
    double parent_x;         /* NEURON's parentx: where it attaches on the parent (0, 0.5 or 1; any
                                x in [0, 1] given by a SEC.parentx statement) */
    int32_t type;            /* SWC type of its first point */
    int32_t nseg;            /* segments (compartments with membrane) */
    double Ra;               /* [ohm cm] its axial resistivity */
    int32_t first_node;      /* compartment of its first segment in ns_cell_tree() */
    double length;           /* [um] NEURON's L (arc length of its 3D points) */
    double area;             /* [um^2] membrane area summed over its segments */
    double ri_sum;           /* [MOhm] axial resistance from x = 0 to x = 1 (sum of NEURON's
                                seg.ri() over its segments plus ri at x = 1) */
    int32_t n3d;             /* 3D points NEURON gets (after Import3d's soma and wire rules) */
    int64_t first_point_id;  /* SWC id of its first own point (the key NEURON comparisons use) */
    int64_t last_point_id;   /* SWC id of its last own point */
} ns_section_info;

/* Per-section data; section 0 is the root section (the soma where there is
 * one). NS_ERR_INVALID_ARGUMENT for an index out of range. */
NS_API ns_status ns_cell_get_section(const ns_cell_t *cell, int32_t section, ns_section_info *info);

/* Locations on a cell: one grammar for the command line (--iclamp, --record),
 * model files, network files and Python:
 *   soma, soma(X)            the root section (the soma where there is one)
 *   NAME[K], NAME[K](X)      NEURON's names as Import3d gives them: soma, axon,
 *                            dend, apic, and dend_T for SWC type T > 4 (or 0);
 *                            NAME[K] is the K-th section of that type in the
 *                            cell's section order, which is Import3d's
 *   sec:K, sec:K(X)          section K (ns_cell_get_section)
 *   swc:ID, swc:ID(X)        the section whose first own SWC point has id ID
 *   cN                       compartment N (no X)
 * and the command line's older forms K:X (section K) and swc=ID:X.
 * X in [0, 1] (0.5 when not given). */
typedef enum ns_location_kind {
    NS_LOCATION_ROOT = 0,    /* soma, soma(X) */
    NS_LOCATION_NAMED,       /* NAME[K]: type, index */
    NS_LOCATION_SECTION,     /* sec:K, K:X: index */
    NS_LOCATION_SWC_ID,      /* swc:ID, swc=ID:X: index is the SWC id */
    NS_LOCATION_COMPARTMENT  /* cN: index */
} ns_location_kind;

typedef struct ns_location {
    ns_location_kind kind;
    int32_t type;   /* NS_LOCATION_NAMED: 1 soma, 2 axon, 3 dend, 4 apic, other: dend_TYPE */
    int64_t index;
    double x;       /* in [0, 1]; 0.5 unless given */
    int32_t has_x;  /* 1 when the text gave X */
} ns_location;

/* The compartment at NEURON's location sec(x) of a discretised cell: the
 * segment containing x (x in [0, 1]; 0 and 1 give the first and last
 * segment, since the zero-area end nodes carry no membrane). */
NS_API ns_status ns_cell_locate(const ns_cell_t *cell, int32_t section, double x, int32_t *compartment);

/* Parse a location. NS_ERR_PARSE naming the part that is wrong (the name,
 * the index, x) and the forms above. */
NS_API ns_status ns_location_parse(const char *text, ns_location *location);
/* The section a location names in a cell (a compartment: the section that
 * holds it). NS_ERR_INVALID_ARGUMENT when there is none, saying how many
 * sections of that name the cell has. */
NS_API ns_status ns_location_section(const ns_cell_t *cell, const ns_location *location, int32_t *section);
/* The compartment at a location: NEURON's node_index of the segment that
 * holds x (ns_cell_locate), or cN. */
NS_API ns_status ns_location_compartment(const ns_cell_t *cell, const ns_location *location, int32_t *compartment);
/* NEURON's name of a section ("soma[0]", "dend[3]", "dend_16[2]"); the
 * text is cut to fit size (which must be > 0). */
NS_API ns_status ns_section_name(const ns_cell_t *cell, int32_t section, char *name, size_t size);

/* The compartment tree (Hines order). Owned by the cell. */
NS_API const ns_tree_t *ns_cell_tree(const ns_cell_t *cell);
/* Per compartment: membrane area [um^2] (0 for NEURON's zero-area junction
 * nodes), axial conductance to the parent compartment [uS] (0 for the root),
 * SWC type, section index and position x in (0, 1) along the section. */
NS_API const double *ns_cell_area(const ns_cell_t *cell);
/* Per compartment: NEURON's segment diameter [um], the mean over the segment's
 * length of the diameter interpolated linearly between 3D points (a mechanism's
 * `diam`); 0 at the zero-area junction nodes. */
NS_API const double *ns_cell_diam(const ns_cell_t *cell);
NS_API const double *ns_cell_axial_conductance(const ns_cell_t *cell);
NS_API const int32_t *ns_cell_type(const ns_cell_t *cell);
NS_API const int32_t *ns_cell_section(const ns_cell_t *cell);
NS_API const double *ns_cell_position(const ns_cell_t *cell);
/* Per compartment, 6 values: the 3-D start (x0 y0 z0) and end (x1 y1 z1)
 * point [um] of NEURON's segment, the section's 3-D points interpolated
 * linearly in arc length at x = k/nseg and (k+1)/nseg (what LFPy takes as
 * a segment's geometry); a zero-area junction node has both at its point
 * (x = 0 or 1 of its section). In the SWC file's coordinates. */
NS_API const double *ns_cell_segments(const ns_cell_t *cell);

/* Matrix of one backward-Euler step of the passive cable equation with
 * capacitance cm [uF/cm^2] and time step dt [ms]:
 *   NS_FORM_NEURON: NEURON's rows, scaled per unit area [S/cm^2]:
 *       d[i] x[i] + b[i] x[p] = rhs[i], the parent row holds a[i] x[i];
 *       d[i] = 1e-3 cm/dt - b[i] - sum over children c of a[c].
 *       a[i] = -1e2 g[i] / A[p], b[i] = -1e2 g[i] / A[i] (g in uS, A in um^2).
 *   NS_FORM_SYMMETRIC: the same rows multiplied by A[i] * 1e-2, in uS, so
 *       that u = l (the papers' symmetric form): a[i] = b[i] = -g[i],
 *       d[i] = 1e-5 cm/dt area[i] + g[i] + sum over children c of g[c].
 * a, b, d have ns_tree_size() entries; a[0] = b[0] = 0. Zero-area junction
 * nodes are treated as NEURON treats them: nominal A = 100 um^2 (so their
 * row is in uS) and no capacitance, d from their axial terms alone.
 * d - |b[i]| - sum |a[c]| = 1e-3 cm/dt > 0 on every row with membrane and 0
 * on zero-area rows. */
typedef enum ns_matrix_form { NS_FORM_NEURON = 0, NS_FORM_SYMMETRIC = 1 } ns_matrix_form;

NS_API ns_status ns_cell_matrix(const ns_cell_t *cell, double cm, double dt, ns_matrix_form form,
                                double *a, double *b, double *d);

#ifdef __cplusplus
}
#endif
#endif
