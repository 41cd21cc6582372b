/* Private: the stages of ns_discretize().
 *   1. discretize_sections.c: points -> NEURON sections with their 3D
 *      points, following Import3d's SWC rules (sections, soma styles,
 *      parentx, "wire" connections, removed zero-length sections);
 *   2. discretize_geom.c: nseg per section and NEURON's per-segment area
 *      and half-segment resistances from the 3D points;
 *   3. discretize.c: NEURON's node set in Hines order, the junction
 *      policy, the public accessors and the matrix. */
#ifndef NS_MORPH_DISCRETIZE_IMPL_H
#define NS_MORPH_DISCRETIZE_IMPL_H

#include "neurosolve/morph.h"

typedef struct disc_pt3d {
    double x, y, z; /* [um] */
    double d;       /* [um] diameter */
    double arc;     /* [um] arc length from the section's first 3D point */
} disc_pt3d;

typedef struct disc_section {
    int32_t parent;       /* section index, -1 for the root */
    double parent_x;      /* NEURON's parentx */
    int32_t type;
    int64_t first, last;  /* own points (indices into the morphology) */
    int64_t pt_begin;     /* first 3D point in disc_sections.pts */
    int32_t n3d;
    int32_t nseg;         /* 0 until set by a statement or the rule */
    double length;        /* [um] */
    double Ra;            /* [ohm cm] the section's axial resistivity */
    double cm;            /* [uF/cm^2] the d_lambda rule's capacitance */
    int wire;             /* no copy of the parent's point: Import3d's pt3dstyle(1, anchor) */
    double anchor[3];     /* a wire's logical connection point (the parent's SWC point); a root
                           * chain of zero length read as a sphere: its place [um] */
    int point_root;       /* that root: in NEURON every connection point on it is anchor */
} disc_section;

typedef struct disc_sections {
    disc_section *sec;
    int32_t n;
    disc_pt3d *pts;
    int64_t n_pts;
} disc_sections;

/* Stage 1. On success the caller frees with disc_sections_free(). */
ns_status disc_build_sections(const ns_morph_point *points, int64_t n, const char *name,
                              disc_sections *out);
void disc_sections_free(disc_sections *s);
/* NEURON's define_shape: every non-root section, parents first, moved so that its first 3-D
 * point (a wire: its logical connection point) lies at its parent's connection point, taken on
 * the straight line from the parent's first to its last 3-D point at parentx. Positions only:
 * lengths, areas and resistances do not change. */
void disc_define_shape(disc_sections *S);
/* The arc lengths of a section's 3D points and its length (NEURON's nrn_pt3dmodified). */
void disc_arcs(disc_section *s, disc_pt3d *pts);

#define NSEG_MAX 32767 /* NEURON's limit on nseg */

/* Stage 2: the per-section statements of ns_discretize_options.sections
 * (discretize_spec.c): nseg, Ra and the d_lambda cm of the sections they
 * name. Errors read "NAME:LINE: reason". */
ns_status disc_apply_spec(disc_sections *S, const ns_morph_point *pts, const char *text, size_t length,
                          const char *name);
/* Is `key` (with its value) a per-section discretisation statement:
 * LOC.nseg or LOC.Ra for a region, sec:K or swc:ID, start_diam or parentx
 * of sec:K or swc:ID, or a bare Ra? 1 yes,
 * 0 no (REGION.cm, any other key), -1 a malformed one (why is filled). The
 * parameter file's reader accepts what this accepts. */
int disc_spec_key(const char *key, double value, char *why, size_t why_size);

/* Stage 2: nseg of one section under the options (NEURON's rules), with
 * the section's own Ra and cm. */
int32_t disc_nseg(const disc_section *sec, const disc_pt3d *pts, const ns_discretize_options *o);

/* Stage 2: NEURON's diam_from_list over the section's 3D points. Fills
 * area[k] [um^2] for k < nseg and rhalf[h] [MOhm] for the 2*nseg half
 * segments (left half of segment k is 2k, right half 2k+1), with the
 * section's Ra. */
void disc_segments(const disc_section *sec, const disc_pt3d *pts, double *area, double *diam, double *rhalf);

#endif
