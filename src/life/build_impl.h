/* Private: a model built from real data, with its provenance. */
#ifndef NS_LIFE_BUILD_IMPL_H
#define NS_LIFE_BUILD_IMPL_H

#include "neurosolve/life_io.h"

struct ns_life_built {
    ns_life_model_t *model;
    ns_life_build_stats stats;
    ns_life_build_options options; /* callbacks cleared */
    int32_t *ijk;        /* 3 per model voxel, or NULL */
    double *s0;          /* per model voxel, or NULL */
    int64_t *streamline; /* per model fiber, or NULL */
    int64_t n_streamlines; /* in the source tractogram (-1 unknown) */
    char *dwi, *bvals, *bvecs, *tracks; /* absolute paths where they resolve */
};

/* Records the four source paths (made absolute when they exist). */
/* World [mm] -> voxel: the inverse of a voxel-to-world affine (rows 0-2 of inv
 * = [R^-1 | -R^-1 t]); NS_ERR_PARSE naming `path` when it is singular. */
ns_status ns_life_invert_affine(const char *path, const double A[4][4], double inv[3][4]);
ns_status ns_life_built_set_sources(ns_life_built_t *built, const char *dwi, const char *bvals,
                                    const char *bvecs, const char *tracks);

#endif
