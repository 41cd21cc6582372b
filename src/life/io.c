/* Model directories and vectors as NPY files (include/neurosolve/life.h lists
 * the files; docs/life.md explains them). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "neurosolve/output.h"
#include "life/life_impl.h"
#include "life/npy.h"

static void join(char *out, size_t cap, const char *dir, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

/* Open `name` in dir and check dtype and number of dimensions. */
static ns_status open_array(const char *dir, const char *name, ns_npy_dtype dtype, int ndim,
                            char *path, size_t cap, ns_npy_header *h, FILE **f) {
    join(path, cap, dir, name);
    ns_status s = ns_npy_open(path, h, f);
    if (s != NS_OK) return s;
    if (h->dtype != dtype || h->ndim != ndim) {
        fclose(*f);
        *f = NULL;
        return ns_fail(NS_ERR_PARSE, "%s: expected a %d-dimensional %s array, found %d-dimensional %s",
                       path, ndim, ns_npy_dtype_name(dtype), h->ndim, ns_npy_dtype_name(h->dtype));
    }
    return NS_OK;
}

/* A (rows, cols) float64 matrix into column-major dst; C order is transposed. */
static ns_status read_matrix(const char *path, FILE *f, const ns_npy_header *h, double *dst) {
    if (h->fortran_order) return ns_npy_read_data(path, f, h, dst);
    const int64_t rows = h->shape[0], cols = h->shape[1];
    double *tmp = malloc((size_t)(rows * cols) * sizeof *tmp);
    if (!tmp) {
        fclose(f);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: transposing %lld x %lld", path, (long long)rows,
                       (long long)cols);
    }
    ns_status s = ns_npy_read_data(path, f, h, tmp);
    if (s == NS_OK)
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = tmp[r * cols + c];
    free(tmp);
    return s;
}

ns_status ns_life_model_load(const char *dir, ns_life_model_t **out) {
    if (!dir || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_model_load: NULL argument");
    *out = NULL;
    char path[4096];
    ns_npy_header h;
    FILE *f = NULL;
    ns_status s = open_array(dir, "phi_shape.npy", NS_NPY_I8, 1, path, sizeof path, &h, &f);
    if (s != NS_OK) return s;
    if (h.shape[0] != 3) {
        fclose(f);
        return ns_fail(NS_ERR_SIZE, "%s: expected 3 entries (n_atoms, n_voxels, n_fibers), found %lld",
                       path, (long long)h.shape[0]);
    }
    int64_t dims[3];
    if ((s = ns_npy_read_data(path, f, &h, dims)) != NS_OK) return s;
    static const char *dim_names[3] = {"n_atoms", "n_voxels", "n_fibers"};
    for (int d = 0; d < 3; ++d)
        if (dims[d] < 1 || dims[d] > INT32_MAX)
            return ns_fail(dims[d] < 1 ? NS_ERR_EMPTY : NS_ERR_SIZE,
                           "%s: %s = %lld must be in [1, 2^31 - 1]", path, dim_names[d],
                           (long long)dims[d]);

    /* Phi: four vectors of one length. */
    static const char *phi_files[4] = {"phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy", "phi_value.npy"};
    static const ns_npy_dtype phi_types[4] = {NS_NPY_I4, NS_NPY_I4, NS_NPY_I4, NS_NPY_F8};
    ns_npy_header ph[4];
    FILE *pf[4] = {NULL, NULL, NULL, NULL};
    char ppath[4][4096];
    for (int i = 0; i < 4 && s == NS_OK; ++i) {
        s = open_array(dir, phi_files[i], phi_types[i], 1, ppath[i], sizeof ppath[i], &ph[i], &pf[i]);
        if (s == NS_OK && ph[i].shape[0] != ph[0].shape[0])
            s = ns_fail(NS_ERR_SIZE, "%s: %lld entries, but %s has %lld", ppath[i],
                        (long long)ph[i].shape[0], phi_files[0], (long long)ph[0].shape[0]);
    }
    if (s == NS_OK && ph[0].shape[0] == 0) s = ns_fail(NS_ERR_EMPTY, "%s: no coefficients", ppath[0]);

    ns_npy_header dh, yh;
    FILE *df = NULL, *yf = NULL;
    char dpath[4096], ypath[4096];
    if (s == NS_OK) s = open_array(dir, "dictionary.npy", NS_NPY_F8, 2, dpath, sizeof dpath, &dh, &df);
    if (s == NS_OK && (dh.shape[0] < 1 || dh.shape[1] != dims[0]))
        s = ns_fail(dh.shape[0] < 1 ? NS_ERR_EMPTY : NS_ERR_SIZE,
                    "%s: shape (%lld, %lld), expected (n_theta >= 1, n_atoms = %lld from phi_shape.npy)",
                    dpath, (long long)dh.shape[0], (long long)dh.shape[1], (long long)dims[0]);
    if (s == NS_OK) s = open_array(dir, "signal.npy", NS_NPY_F8, 2, ypath, sizeof ypath, &yh, &yf);
    if (s == NS_OK && (yh.shape[0] != dh.shape[0] || yh.shape[1] != dims[1]))
        s = ns_fail(NS_ERR_SIZE,
                    "%s: shape (%lld, %lld), expected (n_theta = %lld from dictionary.npy, n_voxels = %lld "
                    "from phi_shape.npy)", ypath, (long long)yh.shape[0], (long long)yh.shape[1],
                    (long long)dh.shape[0], (long long)dims[1]);
    if (s == NS_OK && dh.shape[0] > INT32_MAX) s = ns_fail(NS_ERR_SIZE, "%s: n_theta too large", dpath);

    ns_life_model_t *m = NULL;
    if (s == NS_OK)
        s = ns_life_model_create((int32_t)dh.shape[0], (int32_t)dims[0], (int32_t)dims[1],
                                 (int32_t)dims[2], ph[0].shape[0], &m);
    void *dst[4] = {m ? (void *)m->atom : NULL, m ? (void *)m->voxel : NULL,
                    m ? (void *)m->fiber : NULL, m ? (void *)m->value : NULL};
    for (int i = 0; i < 4; ++i) {
        if (!pf[i]) continue;
        if (s == NS_OK) s = ns_npy_read_data(ppath[i], pf[i], &ph[i], dst[i]);
        else fclose(pf[i]);
        pf[i] = NULL;
    }
    if (df) {
        if (s == NS_OK) s = read_matrix(dpath, df, &dh, m->D);
        else fclose(df);
    }
    if (yf) {
        if (s == NS_OK) s = read_matrix(ypath, yf, &yh, m->Y);
        else fclose(yf);
    }
    /* Optional true weights. */
    if (s == NS_OK) {
        char wpath[4096];
        join(wpath, sizeof wpath, dir, "w_true.npy");
        struct stat st;
        if (stat(wpath, &st) == 0) {
            ns_npy_header wh;
            FILE *wf = NULL;
            s = open_array(dir, "w_true.npy", NS_NPY_F8, 1, wpath, sizeof wpath, &wh, &wf);
            if (s == NS_OK && wh.shape[0] != dims[2]) {
                fclose(wf);
                s = ns_fail(NS_ERR_SIZE, "%s: %lld entries, expected n_fibers = %lld", wpath,
                            (long long)wh.shape[0], (long long)dims[2]);
            } else if (s == NS_OK) {
                m->w_true = malloc((size_t)dims[2] * sizeof *m->w_true);
                if (!m->w_true) {
                    fclose(wf);
                    s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", wpath);
                } else {
                    s = ns_npy_read_data(wpath, wf, &wh, m->w_true);
                }
            }
        }
    }
    if (s == NS_OK) {
        s = ns_life_model_validate(m);
        if (s != NS_OK) ns_error_prefix(dir);
    }
    if (s != NS_OK) {
        ns_life_model_destroy(m);
        return s;
    }
    *out = m;
    return NS_OK;
}

ns_status life_model_write_files(const ns_life_model_t *m, const char *dir) {
    char path[4096];
    ns_status s;
    const int64_t dims[3] = {m->n_atoms, m->n_voxels, m->n_fibers};
    const int64_t three = 3, nc = m->n_coeffs;
    join(path, sizeof path, dir, "phi_shape.npy");
    if ((s = ns_npy_write(path, NS_NPY_I8, 0, 1, &three, dims)) != NS_OK) return s;
    join(path, sizeof path, dir, "phi_atom.npy");
    if ((s = ns_npy_write(path, NS_NPY_I4, 0, 1, &nc, m->atom)) != NS_OK) return s;
    join(path, sizeof path, dir, "phi_voxel.npy");
    if ((s = ns_npy_write(path, NS_NPY_I4, 0, 1, &nc, m->voxel)) != NS_OK) return s;
    join(path, sizeof path, dir, "phi_fiber.npy");
    if ((s = ns_npy_write(path, NS_NPY_I4, 0, 1, &nc, m->fiber)) != NS_OK) return s;
    join(path, sizeof path, dir, "phi_value.npy");
    if ((s = ns_npy_write(path, NS_NPY_F8, 0, 1, &nc, m->value)) != NS_OK) return s;
    const int64_t dshape[2] = {m->n_theta, m->n_atoms}, yshape[2] = {m->n_theta, m->n_voxels};
    join(path, sizeof path, dir, "dictionary.npy");
    if ((s = ns_npy_write(path, NS_NPY_F8, 1, 2, dshape, m->D)) != NS_OK) return s;
    join(path, sizeof path, dir, "signal.npy");
    if ((s = ns_npy_write(path, NS_NPY_F8, 1, 2, yshape, m->Y)) != NS_OK) return s;
    if (m->w_true) {
        const int64_t nf = m->n_fibers;
        join(path, sizeof path, dir, "w_true.npy");
        if ((s = ns_npy_write(path, NS_NPY_F8, 0, 1, &nf, m->w_true)) != NS_OK) return s;
    }
    return NS_OK;
}

void life_model_drop_stale(const ns_life_model_t *m, const char *dir) {
    char path[4096];
    join(path, sizeof path, dir, "w_true.npy");
    if (!m->w_true) remove(path); /* a stale file from an earlier model would not match */
}

ns_status ns_life_model_save(const ns_life_model_t *m, const char *dir) {
    if (!m || !dir) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_model_save: NULL argument");
    ns_output_dir *out = NULL;
    ns_status s = ns_output_dir_open(dir, &out);
    if (s != NS_OK) return s;
    if ((s = life_model_write_files(m, ns_output_dir_path(out))) != NS_OK) {
        ns_output_dir_abort(out);
        return s;
    }
    if ((s = ns_output_dir_commit(out)) == NS_OK) life_model_drop_stale(m, dir);
    return s;
}

ns_status ns_life_vector_save(const char *path, const double *v, int64_t n) {
    if (!path || (!v && n > 0) || n < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_vector_save: bad argument");
    return ns_npy_write(path, NS_NPY_F8, 0, 1, &n, v);
}

ns_status ns_life_vector_load(const char *path, double **values, int64_t *n) {
    if (!path || !values || !n) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_vector_load: NULL argument");
    *values = NULL;
    *n = 0;
    ns_npy_header h;
    FILE *f = NULL;
    ns_status s = ns_npy_open(path, &h, &f);
    if (s != NS_OK) return s;
    if (h.dtype != NS_NPY_F8 || h.ndim != 1) {
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: expected a 1-dimensional float64 array", path);
    }
    double *v = malloc((size_t)(h.count > 0 ? h.count : 1) * sizeof *v);
    if (!v) {
        fclose(f);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    }
    if ((s = ns_npy_read_data(path, f, &h, v)) != NS_OK) {
        free(v);
        return s;
    }
    for (int64_t i = 0; i < h.count; ++i)
        if (!isfinite(v[i])) {
            free(v);
            return ns_fail(NS_ERR_NOT_FINITE, "%s: entry %lld is not finite", path, (long long)i);
        }
    *values = v;
    *n = h.count;
    return NS_OK;
}
