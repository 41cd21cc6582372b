/* Connection groups for the group-sparse fit (docs/life.md, "Group sparsity"):
 * a streamline's group is the unordered pair of parcels its two end points lie
 * in, read from a label image in the DWI's voxel grid (an atlas, a FreeSurfer
 * aparc, the phantom's parcels.nii); and the groups.npy files that carry them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "life/build_impl.h"
#include "life/npy.h"
#include "neurosolve/life_io.h"

static int cmp_i64(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The label under a world point (nearest voxel centre, numpy's half-to-even
 * rounding as the model build); 0 outside the image. */
static int64_t label_at(const ns_nifti_t *img, const ns_nifti_info *info, double inv[3][4], const double *p) {
    double v[3];
    for (int r = 0; r < 3; ++r) v[r] = nearbyint(inv[r][0] * p[0] + inv[r][1] * p[1] + inv[r][2] * p[2] + inv[r][3]);
    if (!(v[0] >= 0 && v[1] >= 0 && v[2] >= 0 && v[0] < info->dim[0] && v[1] < info->dim[1] && v[2] < info->dim[2]))
        return 0;
    const int64_t idx = (int64_t)v[0] + info->dim[0] * ((int64_t)v[1] + info->dim[1] * (int64_t)v[2]);
    return (int64_t)ns_nifti_value(img, idx);
}

ns_status ns_life_connection_groups(const char *parcels_path, const char *tracks_path, const int64_t grid[3],
                                    int32_t **groups, int64_t *n_streamlines, int32_t *n_groups) {
    if (!parcels_path || !tracks_path || !groups || !n_streamlines)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_connection_groups: NULL argument");
    *groups = NULL, *n_streamlines = 0;
    if (n_groups) *n_groups = 0;
    ns_nifti_t *img = NULL;
    ns_status st = ns_nifti_read(parcels_path, &img);
    if (st != NS_OK) return st;
    const ns_nifti_info *info = ns_nifti_get_info(img);
    for (int a = 3; st == NS_OK && a < 7; ++a)
        if (info->dim[a] != 1)
            st = ns_fail(NS_ERR_SIZE, "%s: a parcellation has 3 dimensions, this image has size %lld along axis %d",
                         parcels_path, (long long)info->dim[a], a + 1);
    if (st == NS_OK && grid && (info->dim[0] != grid[0] || info->dim[1] != grid[1] || info->dim[2] != grid[2]))
        st = ns_fail(NS_ERR_SIZE, "%s: the parcellation is %lld x %lld x %lld voxels, the DWI %lld x %lld x %lld: "
                     "it must be in the DWI's voxel grid (resample it first, nearest neighbour)", parcels_path,
                     (long long)info->dim[0], (long long)info->dim[1], (long long)info->dim[2], (long long)grid[0],
                     (long long)grid[1], (long long)grid[2]);
    int64_t max_label = 0;
    for (int64_t i = 0; st == NS_OK && i < info->n_values; ++i) {
        const double v = ns_nifti_value(img, i);
        if (!(v >= 0) || v != floor(v) || v > 2147483647.0)
            st = ns_fail(NS_ERR_PARSE, "%s: voxel %lld holds %g: labels must be integers in [0, 2^31) (0: no "
                         "parcel)", parcels_path, (long long)i, v);
        else if ((int64_t)v > max_label) max_label = (int64_t)v;
    }
    double inv[3][4];
    if (st == NS_OK) st = ns_life_invert_affine(parcels_path, info->affine, inv);
    ns_tracts_t *tr = NULL;
    if (st == NS_OK) st = ns_tracts_open(tracks_path, &tr);
    int64_t *key = NULL, n = 0, cap = 0;
    while (st == NS_OK) {
        const double *pts = NULL;
        int64_t np = 0;
        int end = 0;
        if ((st = ns_tracts_next(tr, &pts, &np, &end)) != NS_OK || end) break;
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            int64_t *k2 = realloc(key, (size_t)cap * sizeof *key);
            if (!k2) {
                st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: groups of %lld streamlines", tracks_path, (long long)n);
                break;
            }
            key = k2;
        }
        int64_t a = np > 0 ? label_at(img, info, inv, pts) : 0, b = np > 0 ? label_at(img, info, inv, pts + 3 * (np - 1)) : 0;
        if (a > b) {
            const int64_t t = a;
            a = b, b = t;
        }
        key[n++] = a == 0 ? -1 : a * (max_label + 1) + b; /* an end in label 0: no connection */
    }
    ns_tracts_close(tr);
    ns_nifti_destroy(img);
    int32_t *g = NULL;
    int64_t *sorted = NULL;
    if (st == NS_OK) {
        g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
        sorted = malloc((size_t)(n > 0 ? n : 1) * sizeof *sorted);
        if (!g || !sorted) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: groups of %lld streamlines", tracks_path, (long long)n);
    }
    int64_t u = 0;
    if (st == NS_OK) {
        /* group ids: the rank of the pair among the distinct pairs (sorted by (low, high) label) */
        int64_t m = 0;
        for (int64_t i = 0; i < n; ++i)
            if (key[i] >= 0) sorted[m++] = key[i];
        qsort(sorted, (size_t)m, sizeof *sorted, cmp_i64);
        for (int64_t i = 0; i < m; ++i)
            if (i == 0 || sorted[i] != sorted[i - 1]) sorted[u++] = sorted[i];
        for (int64_t i = 0; i < n; ++i) {
            if (key[i] < 0) {
                g[i] = -1;
                continue;
            }
            const int64_t *hit = bsearch(&key[i], sorted, (size_t)u, sizeof *sorted, cmp_i64);
            g[i] = (int32_t)(hit - sorted);
        }
    }
    free(key);
    free(sorted);
    if (st != NS_OK) {
        free(g);
        return st;
    }
    *groups = g, *n_streamlines = n;
    if (n_groups) *n_groups = (int32_t)u;
    return NS_OK;
}

ns_status ns_life_groups_save(const char *path, const int32_t *groups, int64_t n) {
    if (!path || (!groups && n > 0) || n < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_groups_save: bad argument");
    const int64_t shape[1] = {n};
    return ns_npy_write(path, NS_NPY_I4, 0, 1, shape, groups);
}

ns_status ns_life_groups_load(const char *path, int32_t **groups, int64_t *n) {
    if (!path || !groups || !n) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_groups_load: NULL argument");
    *groups = NULL, *n = 0;
    ns_npy_header h;
    FILE *f = NULL;
    ns_status st = ns_npy_open(path, &h, &f);
    if (st != NS_OK) return st;
    if ((h.dtype != NS_NPY_I4 && h.dtype != NS_NPY_I8) || h.ndim != 1) {
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: groups must be a one-dimensional int32 or int64 array, found %s with %d "
                       "dimensions", path, ns_npy_dtype_name(h.dtype), h.ndim);
    }
    void *raw = malloc((size_t)(h.count > 0 ? h.count : 1) * ns_npy_dtype_size(h.dtype));
    int32_t *g = malloc((size_t)(h.count > 0 ? h.count : 1) * sizeof *g);
    if (!raw || !g) {
        fclose(f);
        free(raw), free(g);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: %lld groups", path, (long long)h.count);
    }
    st = ns_npy_read_data(path, f, &h, raw);
    for (int64_t i = 0; st == NS_OK && i < h.count; ++i) {
        const int64_t v = h.dtype == NS_NPY_I4 ? ((const int32_t *)raw)[i] : ((const int64_t *)raw)[i];
        if (v < -1 || v > 2147483647)
            st = ns_fail(NS_ERR_PARSE, "%s[%lld] = %lld: a group is an id >= 0, or -1 for none (a group of its "
                         "own)", path, (long long)i, (long long)v);
        else g[i] = (int32_t)v;
    }
    free(raw);
    if (st != NS_OK) {
        free(g);
        return st;
    }
    *groups = g, *n = h.count;
    return NS_OK;
}
