/* neurosolve: LiFE from real data (docs/life_data.md).
 *
 * Readers for the inputs LiFE users have: a diffusion-weighted NIfTI-1 image
 * (.nii or .nii.gz), FSL b-values and b-vectors, and a tractogram (TrackVis
 * .trk or MRtrix .tck); the model builder that turns them into the LiFE
 * model of life.h the way ENCODE's feConnectomeInit does; and a writer for
 * the pruned tractogram.
 *
 * Coordinates: "voxel" coordinates are 0-based NIfTI indices (i, j, k) with
 * integer values at voxel centres; "world" coordinates are RAS+ millimetres
 * (NIfTI's scanner/aligned space, MRtrix's real space, nibabel's "rasmm").
 * Every failure names the file and the problem (ns_last_error()). */
#ifndef NEUROSOLVE_LIFE_IO_H
#define NEUROSOLVE_LIFE_IO_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/life.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- NIfTI-1 */

typedef enum ns_nifti_affine_source {
    NS_NIFTI_AFFINE_PIXDIM = 0, /* neither form set: diag(pixdim) (NIfTI "method 1") */
    NS_NIFTI_AFFINE_QFORM = 1,  /* quaternion (qform_code > 0, sform_code == 0) */
    NS_NIFTI_AFFINE_SFORM = 2   /* srow_x/y/z (sform_code > 0: preferred, as nibabel) */
} ns_nifti_affine_source;

typedef struct ns_nifti_info {
    int32_t ndim;           /* dim[0], 1..7 */
    int64_t dim[7];         /* sizes of axes 1..7 (unused axes: 1) */
    double pixdim[7];       /* voxel sizes [mm] (axes 1-3), TR (axis 4) as stored */
    int32_t datatype;       /* NIfTI code: 2 uint8, 4 int16, 8 int32, 16 float32,
                               64 float64, 256 int8, 512 uint16, 768 uint32,
                               1024 int64, 1280 uint64 */
    double slope, intercept; /* applied by ns_nifti_value (1, 0 when the file has none) */
    double affine[4][4];    /* voxel (i, j, k, 1) -> world [mm] */
    ns_nifti_affine_source affine_source;
    int big_endian;         /* the file was big-endian (converted on read) */
    int64_t n_values;       /* product of the sizes */
} ns_nifti_info;

typedef struct ns_nifti ns_nifti_t;

/* Reads a single-file NIfTI-1 image, gzip-compressed or not (zlib). The data
 * are kept in the file's datatype (native byte order) to bound memory.
 * Rejects NIfTI-2, .hdr/.img pairs, complex/RGB data, truncated or
 * inconsistent files, with the file name and the reason. */
NS_API ns_status ns_nifti_read(const char *path, ns_nifti_t **out);
NS_API void ns_nifti_destroy(ns_nifti_t *image);
NS_API const ns_nifti_info *ns_nifti_get_info(const ns_nifti_t *image);
/* Value at a linear index (axis 1 fastest), slope and intercept applied. */
NS_API double ns_nifti_value(const ns_nifti_t *image, int64_t index);
/* "uint8", "int16", ...; NULL for a code neurosolve does not read. */
NS_API const char *ns_nifti_datatype_name(int32_t datatype);
/* Writes a single-file NIfTI-1 image, gzip-compressed when the path ends in .gz: dim = the
 * sizes of axes 1-3 and the volumes (1: a 3-D image), datatype 16 (float32) or 4 (int16),
 * `data` axis 1 fastest in that type; `affine` (voxel -> world [mm]) is stored as the sform
 * (code 2, aligned) and its column norms as the voxel sizes. Not atomic: write to an
 * ns_output temporary (output.h) for that. */
NS_API ns_status ns_nifti_write(const char *path, const int64_t dim[4], int32_t datatype, const double affine[4][4],
                                const void *data);

/* ------------------------------------------------------------- gradients */

typedef struct ns_gradients {
    int32_t n;      /* volumes */
    double *bvals;  /* [s/mm^2], n entries */
    double *bvecs;  /* n x 3, row-major, as stored (not normalised) */
} ns_gradients;

/* Reads FSL-style files: bvals is one row of n numbers, bvecs three rows of
 * n numbers (n rows of three are accepted too). Checks that both have the
 * same n, that every value is a finite number and every b-value >= 0. */
NS_API ns_status ns_gradients_read(const char *bvals_path, const char *bvecs_path, ns_gradients *out);
NS_API void ns_gradients_free(ns_gradients *gradients);

/* ----------------------------------------------------------- tractograms */

typedef enum ns_tracts_format {
    NS_TRACTS_TRK = 1, /* TrackVis: voxmm coordinates, header vox_to_ras / voxel_order */
    NS_TRACTS_TCK = 2, /* MRtrix: world coordinates */
    NS_TRACTS_TRX = 3  /* TRX (trx-python, pyAFQ): a ZIP or folder, world (RASMM) coordinates */
} ns_tracts_format;

typedef struct ns_tracts ns_tracts_t;

/* Opens a tractogram for streaming (one streamline in memory at a time).
 * The format comes from the extension (.trk / .tck / .trx), a folder (TRX's
 * folder form) or, failing that, from the first bytes. */
NS_API ns_status ns_tracts_open(const char *path, ns_tracts_t **out);
NS_API void ns_tracts_close(ns_tracts_t *tracts);
NS_API ns_tracts_format ns_tracts_get_format(const ns_tracts_t *tracts);
/* The count the header declares, or -1 when it declares none. */
NS_API int64_t ns_tracts_declared_count(const ns_tracts_t *tracts);
/* The affine from the file's stored coordinates to world [mm] (row-major
 * 4 x 4): identity for .tck and .trx; for .trk the composition docs/life_data.md
 * describes (voxmm / voxel size - 0.5, voxel order, vox_to_ras). */
NS_API void ns_tracts_to_world(const ns_tracts_t *tracts, double affine[16]);
/* The next streamline in world coordinates: *points holds 3 * *n_points
 * doubles, valid until the next call. At the end, *end = 1 and *n_points = 0.
 * Errors name the file, the streamline index and the byte offset. */
NS_API ns_status ns_tracts_next(ns_tracts_t *tracts, const double **points, int64_t *n_points, int *end);
/* Back to the first streamline. */
NS_API ns_status ns_tracts_rewind(ns_tracts_t *tracts);
/* Streamlines returned so far; bytes of the file consumed and in all. */
NS_API int64_t ns_tracts_index(const ns_tracts_t *tracts);
NS_API void ns_tracts_progress(const ns_tracts_t *tracts, uint64_t *bytes_done, uint64_t *bytes_total);

/* Writes the streamlines i with keep[i] != 0 (n entries, one per streamline
 * of `in_path`) to `out_path` in the input's format: the header is copied
 * with its count updated and each kept record is copied byte for byte
 * (scalars and properties included; for TRX the positions in their dtype
 * and the dps/dpv rows, not groups/dpg; the output is a stored ZIP). An
 * `out_path` ending in another format's extension (.trk/.tck/.trx) is
 * refused (NS_ERR_INVALID_ARGUMENT). Returns the number written. */
NS_API ns_status ns_tracts_write_subset(const char *in_path, const char *out_path, const uint8_t *keep,
                                        int64_t n, int64_t *written);

/* --------------------------------------------------- orientation grid */

/* ENCODE's orientation grid for L steps: atom 0 is the zenith (0, 0, 1);
 * atom 1 + i (L - 1) + (j - 1) is (cos p sin t, sin p sin t, cos t) with
 * p = i pi / L (i = 0..L-1) and t = j pi / L (j = 1..L-1). */
NS_API void ns_life_atom_orientation(int32_t L, int32_t atom, double u[3]);
/* The atom ENCODE's get_atom assigns to the axis of a unit vector: the
 * sign is chosen so that y >= 0 and the two angles are rounded to the
 * grid (half away from zero). */
NS_API int32_t ns_life_orientation_atom(int32_t L, const double u[3]);

/* --------------------------------------------------------- model build */

/* What to do with streamline nodes outside the image and streamlines with
 * fewer than two nodes. */
typedef enum ns_life_bad_policy {
    NS_LIFE_BAD_ERROR = 0, /* fail naming the file, streamline and node */
    NS_LIFE_BAD_SKIP = 1   /* drop the node (and a streamline left without nodes) */
} ns_life_bad_policy;

/* Called about every 1 % of the tractogram's bytes and at the end of each
 * pass (pass 1: counting, pass 2: filling); return non-zero to cancel. */
typedef int (*ns_life_build_progress_fn)(int pass, int64_t streamlines, uint64_t bytes_done,
                                         uint64_t bytes_total, void *context);

/* How the nodes of one fiber in one voxel combine into its column of M
 * (docs/life_data.md, "Which reference each default reproduces"). */
typedef enum ns_life_node_combination {
    NS_LIFE_NODES_SUM = 0, /* Phi = S0 x nodes with that orientation: each node adds its
                              stick response, as the original MATLAB LiFE and DIPY (default) */
    NS_LIFE_NODES_MEAN = 1 /* Phi = S0 x nodes with that orientation / nodes of the fiber in the
                              voxel: ENCODE's feConnectomeEncoding.m */
} ns_life_node_combination;

typedef struct ns_life_build_options {
    int32_t dictionary_l;      /* ENCODE's L (180; ENCODE's default 360): (L - 1) L + 1 atoms */
    double axial_diffusivity;  /* [um^2/ms] of the kernel (1, ENCODE's stick) */
    double radial_diffusivity; /* [um^2/ms] (0) */
    double b0_threshold;       /* [s/mm^2]: volumes with b <= this are b = 0 (50) */
    ns_life_bad_policy bad;    /* NS_LIFE_BAD_ERROR */
    ns_life_node_combination nodes; /* NS_LIFE_NODES_SUM (original LiFE, DIPY) */
    int32_t threads;           /* for the streamlines' keys (0: OpenMP's default capped by the
                                  processors); the model is the same for every count */
    ns_life_build_progress_fn progress;
    void *progress_context;
} ns_life_build_options;

NS_API void ns_life_build_options_init(ns_life_build_options *options);

typedef struct ns_life_build_stats {
    int64_t streamlines;        /* read from the tractogram */
    int64_t fibers;             /* kept in the model */
    int64_t nodes;              /* nodes in the model */
    int64_t nodes_outside;      /* dropped: outside the image (policy skip) */
    int64_t nodes_zero_gradient; /* dropped: coincident neighbours, no orientation */
    int64_t streamlines_dropped; /* no node left, or fewer than 2 nodes (policy skip) */
    int32_t n_b0, n_dwi;        /* volumes */
    int64_t grid[3];            /* image size */
    double seconds;             /* wall time of the build */
    double peak_model_bytes;    /* the model's arrays (Phi, D, Y) */
} ns_life_build_stats;

typedef struct ns_life_built ns_life_built_t;

/* Builds the model (docs/life_data.md): two streaming passes over the
 * tractogram; peak memory is the image, 4 bytes per image voxel, 8 bytes per
 * streamline, the model and one streamline. */
NS_API ns_status ns_life_build(const char *dwi_path, const char *bvals_path, const char *bvecs_path,
                               const char *tracks_path, const ns_life_build_options *options,
                               ns_life_built_t **out);
NS_API void ns_life_built_destroy(ns_life_built_t *built);
NS_API ns_life_model_t *ns_life_built_model(ns_life_built_t *built);
NS_API const ns_life_build_stats *ns_life_built_stats(const ns_life_built_t *built);
/* Per model voxel: its (i, j, k) (3 entries each), S0 and mean DW signal. */
NS_API const int32_t *ns_life_built_voxel_ijk(const ns_life_built_t *built);
NS_API const double *ns_life_built_s0(const ns_life_built_t *built);
/* Per model fiber: the index of its streamline in the input tractogram. */
NS_API const int64_t *ns_life_built_streamline(const ns_life_built_t *built);
/* Number of streamlines in the input tractogram. */
NS_API int64_t ns_life_built_n_streamlines(const ns_life_built_t *built);
/* The source tractogram's path as given to ns_life_build ("" if unknown). */
NS_API const char *ns_life_built_tracks_path(const ns_life_built_t *built);

/* ---------------------------------------------- model build from arrays */

/* A diffusion image in memory (what nibabel's img.dataobj / get_fdata() and
 * DIPY hold): the value of voxel (i, j, k) in volume t is the element at
 * data + i stride[0] + j stride[1] + k stride[2] + t stride[3] (strides in
 * elements, any sign: C order, Fortran order or a view), of type `datatype`
 * (a NIfTI code of ns_nifti_info: 2 uint8, 4 int16, 8 int32, 16 float32,
 * 64 float64, 256 int8, 512 uint16, 768 uint32, 1024 int64, 1280 uint64). */
typedef struct ns_life_image {
    const void *data;
    int32_t datatype;
    int64_t dim[4];      /* nx, ny, nz, volumes */
    int64_t stride[4];   /* [elements] */
    double affine[4][4]; /* voxel (i, j, k, 1) -> world (RAS+ mm); last row 0 0 0 1 */
} ns_life_image;

/* Streamlines in memory, packed: streamline s is points offset[s] ..
 * offset[s + 1] - 1 of `points` (x, y, z each). The points are world (RAS+ mm)
 * coordinates, as nibabel's and DIPY's rasmm streamlines, unless `to_world`
 * (row-major 4 x 4, or NULL for the identity) maps them there (DIPY's voxel
 * space: the image's affine). */
typedef struct ns_life_streamlines {
    int64_t n;             /* streamlines */
    const int64_t *offset; /* n + 1 entries, offset[0] = 0, non-decreasing */
    const double *points;  /* 3 * offset[n] values */
    const double *to_world;
} ns_life_streamlines;

/* ns_life_build on arrays in memory: the same model, voxel for voxel and
 * coefficient for coefficient, as ns_life_build on files holding the same
 * values. bvals has n_volumes entries [s/mm^2], bvecs n_volumes x 3 (row-major);
 * n_volumes must be dwi->dim[3]. Nothing is copied but the gradient table;
 * the arrays are only read during the call. Errors name the argument
 * ("dwi", "bvals", "bvecs", "tracks") and the element. The built model has
 * no source paths (ns_life_built_tracks_path gives ""); the progress
 * callback gets streamlines (not bytes) done and in all. */
NS_API ns_status ns_life_build_arrays(const ns_life_image *dwi, const double *bvals, const double *bvecs,
                                      int32_t n_volumes, const ns_life_streamlines *tracks,
                                      const ns_life_build_options *options, ns_life_built_t **out);

/* Saves the model (ns_life_model_save) plus voxel_ijk.npy (int32 n x 3),
 * s0.npy (float64), streamlines.npy (int64) and build.txt (sources, options,
 * counts); load reads them back (the extras are optional: a model directory
 * without them loads with NULL arrays). */
NS_API ns_status ns_life_built_save(const ns_life_built_t *built, const char *directory);
NS_API ns_status ns_life_built_load(const char *directory, ns_life_built_t **out);

/* ------------------------------------------------- connection groups */
/* Groups for the group-sparse fit (ns_life_fit_options.group, docs/life.md, "Group
 * sparsity"): streamline s's group is the unordered pair of labels of a parcellation
 * under its two end points (nearest voxel centre, the parcellation's own affine), numbered
 * 0 .. *n_groups - 1 in the order of (low, high) label; -1 when an end lies in label 0 or
 * outside the image (no connection: the fit gives each such streamline a group of its
 * own). The parcellation is a 3-D NIfTI of integer labels >= 0 (any datatype); with
 * `grid` (the DWI's size, e.g. ns_life_built_stats' grid; NULL: no check) it must have
 * that size (NS_ERR_SIZE). *groups has *n_streamlines entries in the tractogram's order,
 * malloc'ed (free() it). Errors name the file (a non-integer label: the voxel). */
NS_API ns_status ns_life_connection_groups(const char *parcels_path, const char *tracks_path, const int64_t grid[3],
                                           int32_t **groups, int64_t *n_streamlines, int32_t *n_groups);
/* A groups file: int32 NPY vector (save); int32 or int64 (load), every entry >= -1 (-1:
 * no group), else NS_ERR_PARSE naming the entry. *groups is malloc'ed. */
NS_API ns_status ns_life_groups_save(const char *path, const int32_t *groups, int64_t n);
NS_API ns_status ns_life_groups_load(const char *path, int32_t **groups, int64_t *n);

/* ------------------------------------------- ground-truth phantom, ROC AUC */
/* A phantom with known true and false streamlines for measuring pruning
 * quality (docs/life.md, "Pruning quality"; src/life/phantom.c has the exact
 * geometry and signal): bundles of true streamlines, false "bridges" (one
 * bundle, then a jump to another) and random smooth curves, a zeppelin +
 * ball signal from the true streamlines only, Rician noise. */
typedef struct ns_life_phantom_options {
    int32_t n_streamlines;  /* (10,000) */
    double false_fraction;  /* (0.3): half bridges, half random curves */
    double snr;             /* S0 / noise sd (20); 0: no noise */
    int32_t n_bundles;      /* (12) */
    int32_t grid;           /* image side [voxels of 2 mm] (48) */
    int32_t n_directions;   /* diffusion directions after 2 b=0 volumes (30) */
    double b_value;         /* [s/mm^2] (2000) */
    uint64_t seed;          /* (1) */
} ns_life_phantom_options;

typedef struct ns_life_phantom_stats {
    int64_t n_streamlines, n_true, n_bridges, n_random, n_nodes;
    int32_t n_bundles;
} ns_life_phantom_stats;

NS_API void ns_life_phantom_options_init(ns_life_phantom_options *options);
/* Writes DIRECTORY/dwi.nii (float32, 2 mm voxels, sform diag(2, 2, 2)), dwi.bval, dwi.bvec
 * (2 b=0 then the directions), tracks.tck (world mm), and int32 NPY vectors in the
 * tractogram's order: labels.npy (1 true, 0 false), kinds.npy (0 true, 1 bridge,
 * 2 random curve), bundles.npy (a true streamline's bundle, -1 for false ones), and
 * parcels.nii (int16, the image's grid: 40 parcels by direction from the centre, 1-40 on
 * a Fibonacci sphere, for every voxel within R + 1.5 of the centre, 0 outside: the
 * endpoint parcellation for ns_life_connection_groups). The
 * folder appears only when every file was written. Deterministic for a seed. */
NS_API ns_status ns_life_phantom_write(const ns_life_phantom_options *options, const char *directory,
                                       ns_life_phantom_stats *stats);
/* Reads DIRECTORY/labels.npy and kinds.npy (int32; malloc'ed, free() them):
 * NS_ERR_IO/PARSE/SIZE naming the file for missing, malformed or inconsistent
 * files (a label other than 0/1, a kind that disagrees with its label). */
NS_API ns_status ns_life_phantom_read_truth(const char *directory, int32_t **labels, int32_t **kinds,
                                            int64_t *n);

/* Area under the ROC curve of `score` for telling label 1 from label 0: the
 * probability that a random positive scores above a random negative, ties
 * counting one half (Mann-Whitney U / (n1 n0)). Scores must be finite, labels
 * 0 or 1, both classes present (else NS_ERR_INVALID_ARGUMENT naming the entry). */
NS_API ns_status ns_life_roc_auc(const double *score, const int32_t *label, int64_t n, double *auc);

#ifdef __cplusplus
}
#endif
#endif
