/* A built model on disk: the model directory of life.h plus
 *   voxel_ijk.npy    int32 (n_voxels, 3)  image voxel of each model voxel
 *   s0.npy           float64 (n_voxels,)  mean b = 0 signal
 *   streamlines.npy  int64 (n_fibers,)    input streamline of each fiber
 *   build.txt        "key value" lines: sources, options, counts
 * and the accessors of ns_life_built_t. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "neurosolve/number.h"
#include "neurosolve/output.h"
#include "life/build_impl.h"
#include "life/life_impl.h"
#include "life/npy.h"

static char *dup_abs(const char *p) {
    char buf[PATH_MAX];
    const char *src = realpath(p, buf) ? buf : p;
    char *d = malloc(strlen(src) + 1);
    if (d) strcpy(d, src);
    return d;
}

ns_status ns_life_built_set_sources(ns_life_built_t *r, const char *dwi, const char *bvals, const char *bvecs,
                                    const char *tracks) {
    free(r->dwi), free(r->bvals), free(r->bvecs), free(r->tracks);
    r->dwi = dup_abs(dwi), r->bvals = dup_abs(bvals), r->bvecs = dup_abs(bvecs), r->tracks = dup_abs(tracks);
    if (!r->dwi || !r->bvals || !r->bvecs || !r->tracks) return ns_fail(NS_ERR_OUT_OF_MEMORY, "source paths");
    return NS_OK;
}

void ns_life_built_destroy(ns_life_built_t *r) {
    if (!r) return;
    ns_life_model_destroy(r->model);
    free(r->ijk), free(r->s0), free(r->streamline);
    free(r->dwi), free(r->bvals), free(r->bvecs), free(r->tracks);
    free(r);
}

ns_life_model_t *ns_life_built_model(ns_life_built_t *r) { return r ? r->model : NULL; }
const ns_life_build_stats *ns_life_built_stats(const ns_life_built_t *r) { return r ? &r->stats : NULL; }
const int32_t *ns_life_built_voxel_ijk(const ns_life_built_t *r) { return r ? r->ijk : NULL; }
const double *ns_life_built_s0(const ns_life_built_t *r) { return r ? r->s0 : NULL; }
const int64_t *ns_life_built_streamline(const ns_life_built_t *r) { return r ? r->streamline : NULL; }
int64_t ns_life_built_n_streamlines(const ns_life_built_t *r) { return r ? r->n_streamlines : -1; }
const char *ns_life_built_tracks_path(const ns_life_built_t *r) { return r && r->tracks ? r->tracks : ""; }

static void join(char *out, size_t n, const char *dir, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

/* The model's files and the build's own into `dir`, which exists. */
static ns_status built_write_files(const ns_life_built_t *r, const char *dir) {
    ns_status s = life_model_write_files(r->model, dir);
    if (s != NS_OK) return s;
    char path[4096];
    const int64_t nv = r->model->n_voxels, nf = r->model->n_fibers;
    if (r->ijk) {
        const int64_t shape[2] = {nv, 3};
        join(path, sizeof path, dir, "voxel_ijk.npy");
        if ((s = ns_npy_write(path, NS_NPY_I4, 0, 2, shape, r->ijk)) != NS_OK) return s;
    }
    if (r->s0) {
        join(path, sizeof path, dir, "s0.npy");
        if ((s = ns_npy_write(path, NS_NPY_F8, 0, 1, &nv, r->s0)) != NS_OK) return s;
    }
    if (r->streamline) {
        join(path, sizeof path, dir, "streamlines.npy");
        if ((s = ns_npy_write(path, NS_NPY_I8, 0, 1, &nf, r->streamline)) != NS_OK) return s;
    }
    join(path, sizeof path, dir, "build.txt");
    ns_output *out = NULL;
    if ((s = ns_output_open(path, &out)) != NS_OK) return s;
    FILE *f = ns_output_stream(out);
    const ns_life_build_stats *st = &r->stats;
    const ns_life_build_options *o = &r->options;
    fprintf(f, "# neurosolve life build (docs/life_data.md)\n");
    fprintf(f, "dwi %s\nbvals %s\nbvecs %s\ntracks %s\n", r->dwi ? r->dwi : "", r->bvals ? r->bvals : "",
            r->bvecs ? r->bvecs : "", r->tracks ? r->tracks : "");
    fprintf(f, "dictionary_l %d\naxial_diffusivity %.17g\nradial_diffusivity %.17g\nb0_threshold %.17g\nbad %s\nnode_combination %s\n",
            (int)o->dictionary_l, o->axial_diffusivity, o->radial_diffusivity, o->b0_threshold,
            o->bad == NS_LIFE_BAD_SKIP ? "skip" : "error", o->nodes == NS_LIFE_NODES_MEAN ? "mean" : "sum");
    fprintf(f, "streamlines %lld\nfibers %lld\nnodes %lld\nnodes_outside %lld\nnodes_zero_gradient %lld\n"
               "streamlines_dropped %lld\nn_b0 %d\nn_dwi %d\ngrid %lld %lld %lld\nseconds %.6f\n",
            (long long)r->n_streamlines, (long long)st->fibers, (long long)st->nodes, (long long)st->nodes_outside,
            (long long)st->nodes_zero_gradient, (long long)st->streamlines_dropped, (int)st->n_b0, (int)st->n_dwi,
            (long long)st->grid[0], (long long)st->grid[1], (long long)st->grid[2], st->seconds);
    return ns_output_commit(out);
}

ns_status ns_life_built_save(const ns_life_built_t *r, const char *dir) {
    if (!r || !dir || !r->model) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_built_save: NULL argument");
    ns_output_dir *out = NULL;
    ns_status s = ns_output_dir_open(dir, &out);
    if (s != NS_OK) return s;
    if ((s = built_write_files(r, ns_output_dir_path(out))) != NS_OK) {
        ns_output_dir_abort(out);
        return s;
    }
    if ((s = ns_output_dir_commit(out)) == NS_OK) life_model_drop_stale(r->model, dir);
    return s;
}

/* Loads an optional array: absent -> NULL and NS_OK; present -> checked. */
static ns_status load_opt(const char *dir, const char *name, ns_npy_dtype dtype, int ndim, int64_t n0, int64_t n1,
                          void **out) {
    char path[4096];
    join(path, sizeof path, dir, name);
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) return NS_OK;
    ns_npy_header h;
    FILE *f = NULL;
    ns_status s = ns_npy_open(path, &h, &f);
    if (s != NS_OK) return s;
    if (h.dtype != dtype || h.ndim != ndim || h.shape[0] != n0 || (ndim == 2 && (h.shape[1] != n1 || h.fortran_order))) {
        fclose(f);
        return ns_fail(NS_ERR_SIZE, "%s: expected %s %s(%lld%s) for this model", path, ns_npy_dtype_name(dtype),
                       ndim == 2 ? "C-order " : "", (long long)n0, ndim == 2 ? ", 3" : ",");
    }
    void *p = malloc((size_t)(h.count ? h.count : 1) * ns_npy_dtype_size(dtype));
    if (!p) {
        fclose(f);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
    }
    if ((s = ns_npy_read_data(path, f, &h, p)) != NS_OK) {
        free(p);
        return s;
    }
    *out = p;
    return NS_OK;
}

static char *dup_str(const char *p) {
    char *d = malloc(strlen(p) + 1);
    if (d) strcpy(d, p);
    return d;
}

ns_status ns_life_built_load(const char *dir, ns_life_built_t **out) {
    if (!dir || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_built_load: NULL argument");
    *out = NULL;
    ns_life_built_t *r = calloc(1, sizeof *r);
    if (!r) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", dir);
    r->n_streamlines = -1;
    ns_life_build_options_init(&r->options);
    ns_status s = ns_life_model_load(dir, &r->model);
    void *p = NULL;
    if (s == NS_OK && (s = load_opt(dir, "voxel_ijk.npy", NS_NPY_I4, 2, r->model->n_voxels, 3, &p)) == NS_OK) r->ijk = p;
    if (s == NS_OK && (s = load_opt(dir, "s0.npy", NS_NPY_F8, 1, r->model->n_voxels, 0, &p)) == NS_OK) r->s0 = p;
    if (s == NS_OK && (s = load_opt(dir, "streamlines.npy", NS_NPY_I8, 1, r->model->n_fibers, 0, &p)) == NS_OK)
        r->streamline = p;
    char path[4096];
    join(path, sizeof path, dir, "build.txt");
    FILE *f = s == NS_OK ? fopen(path, "r") : NULL;
    if (f) {
        char line[8192];
        while (s == NS_OK && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = '\0';
            char *v = strchr(line, ' ');
            if (line[0] == '#' || !v) continue;
            *v++ = '\0';
            char **slot = strcmp(line, "dwi") == 0 ? &r->dwi : strcmp(line, "bvals") == 0 ? &r->bvals
                        : strcmp(line, "bvecs") == 0 ? &r->bvecs : strcmp(line, "tracks") == 0 ? &r->tracks : NULL;
            if (slot) {
                free(*slot);
                if (!(*slot = dup_str(v))) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", path);
            } else if (strcmp(line, "node_combination") == 0 && (strcmp(v, "mean") == 0 || strcmp(v, "sum") == 0))
                r->options.nodes = strcmp(v, "mean") == 0 ? NS_LIFE_NODES_MEAN : NS_LIFE_NODES_SUM;
            else {
                /* the counts, through the one number reader (neurosolve/number.h), in range */
                static const char *const key[] = {"streamlines", "dictionary_l", "fibers", "nodes", "n_b0", "n_dwi",
                                                  "streamlines_dropped"};
                int64_t *const dst64[] = {&r->n_streamlines, NULL, &r->stats.fibers, &r->stats.nodes, NULL, NULL,
                                          &r->stats.streamlines_dropped};
                int32_t *const dst32[] = {NULL, &r->options.dictionary_l, NULL, NULL, &r->stats.n_b0,
                                          &r->stats.n_dwi, NULL};
                for (int k = 0; k < 7; ++k) {
                    if (strcmp(line, key[k]) != 0) continue;
                    int64_t x = 0;
                    if ((s = ns_integer_parse(v, 0, dst64[k] ? INT64_MAX : INT32_MAX, &x)) != NS_OK) {
                        char pre[4200];
                        snprintf(pre, sizeof pre, "%.4096s: %.64s", path, line);
                        ns_error_prefix(pre);
                    } else if (dst64[k]) *dst64[k] = x;
                    else *dst32[k] = (int32_t)x;
                }
            }
        }
        fclose(f);
        r->stats.streamlines = r->n_streamlines;
    }
    if (s == NS_OK && r->streamline) {
        for (int32_t i = 0; i < r->model->n_fibers; ++i)
            if (r->streamline[i] < 0 || (r->n_streamlines >= 0 && r->streamline[i] >= r->n_streamlines)) {
                s = ns_fail(NS_ERR_PARSE, "%s/streamlines.npy[%d] = %lld is out of range [0, %lld)", dir, (int)i,
                            (long long)r->streamline[i], (long long)r->n_streamlines);
                break;
            }
    }
    if (s != NS_OK) {
        ns_life_built_destroy(r);
        return s;
    }
    *out = r;
    return NS_OK;
}
