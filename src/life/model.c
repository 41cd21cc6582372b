/* The LiFE model: creation, accessors, validation, names and defaults. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "life/life_impl.h"

ns_status ns_life_model_create(int32_t n_theta, int32_t n_atoms, int32_t n_voxels,
                               int32_t n_fibers, int64_t n_coeffs, ns_life_model_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_model_create: out is NULL");
    *out = NULL;
    if (n_theta < 1 || n_atoms < 1 || n_voxels < 1 || n_fibers < 1 || n_coeffs < 1)
        return ns_fail(NS_ERR_EMPTY,
                       "empty LiFE model: n_theta = %d, n_atoms = %d, n_voxels = %d, "
                       "n_fibers = %d, n_coeffs = %lld (all must be >= 1)",
                       (int)n_theta, (int)n_atoms, (int)n_voxels, (int)n_fibers,
                       (long long)n_coeffs);
    /* Column offsets a * n_theta are formed in 64 bits, but the sizes of the
     * dense arrays must fit size_t comfortably. */
    if ((double)n_theta * (double)n_atoms > 4e12 || (double)n_theta * (double)n_voxels > 4e12)
        return ns_fail(NS_ERR_SIZE, "LiFE model too large: n_theta x n_atoms or x n_voxels > 4e12");
    ns_life_model_t *m = calloc(1, sizeof *m);
    if (!m) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE model");
    m->n_theta = n_theta;
    m->n_atoms = n_atoms;
    m->n_voxels = n_voxels;
    m->n_fibers = n_fibers;
    m->n_coeffs = n_coeffs;
    const size_t nc = (size_t)n_coeffs;
    m->atom = calloc(nc, sizeof *m->atom);
    m->voxel = calloc(nc, sizeof *m->voxel);
    m->fiber = calloc(nc, sizeof *m->fiber);
    m->value = calloc(nc, sizeof *m->value);
    m->D = calloc((size_t)n_theta * (size_t)n_atoms, sizeof *m->D);
    m->Y = calloc((size_t)n_theta * (size_t)n_voxels, sizeof *m->Y);
    if (!m->atom || !m->voxel || !m->fiber || !m->value || !m->D || !m->Y) {
        ns_life_model_destroy(m);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE model of %lld coefficients", (long long)n_coeffs);
    }
    *out = m;
    return NS_OK;
}

void ns_life_layout_free(ns_life_layout *l) {
    free(l->atom);
    free(l->voxel);
    free(l->fiber);
    free(l->value);
    free(l->start);
    memset(l, 0, sizeof *l);
}

void ns_life_model_destroy(ns_life_model_t *m) {
    if (!m) return;
    free(m->atom);
    free(m->voxel);
    free(m->fiber);
    free(m->value);
    free(m->D);
    free(m->Y);
    free(m->w_true);
    ns_life_layout_free(&m->by_atom);
    ns_life_layout_free(&m->by_voxel);
    free(m);
}

int32_t ns_life_model_n_theta(const ns_life_model_t *m) { return m ? m->n_theta : 0; }
int32_t ns_life_model_n_atoms(const ns_life_model_t *m) { return m ? m->n_atoms : 0; }
int32_t ns_life_model_n_voxels(const ns_life_model_t *m) { return m ? m->n_voxels : 0; }
int32_t ns_life_model_n_fibers(const ns_life_model_t *m) { return m ? m->n_fibers : 0; }
int64_t ns_life_model_n_coeffs(const ns_life_model_t *m) { return m ? m->n_coeffs : 0; }
int32_t *ns_life_model_atom(ns_life_model_t *m) { return m ? m->atom : NULL; }
int32_t *ns_life_model_voxel(ns_life_model_t *m) { return m ? m->voxel : NULL; }
int32_t *ns_life_model_fiber(ns_life_model_t *m) { return m ? m->fiber : NULL; }
double *ns_life_model_value(ns_life_model_t *m) { return m ? m->value : NULL; }
double *ns_life_model_dictionary(ns_life_model_t *m) { return m ? m->D : NULL; }
double *ns_life_model_signal(ns_life_model_t *m) { return m ? m->Y : NULL; }
const double *ns_life_model_true_weights(const ns_life_model_t *m) { return m ? m->w_true : NULL; }

ns_status ns_life_model_set_true_weights(ns_life_model_t *m, const double *w) {
    if (!m || !w) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_model_set_true_weights: NULL argument");
    if (!m->w_true) {
        m->w_true = malloc((size_t)m->n_fibers * sizeof *m->w_true);
        if (!m->w_true) return ns_fail(NS_ERR_OUT_OF_MEMORY, "true weights");
    }
    memcpy(m->w_true, w, (size_t)m->n_fibers * sizeof *w);
    return NS_OK;
}

static ns_status check_index(const char *name, const int32_t *v, int64_t n, int32_t limit) {
    for (int64_t k = 0; k < n; ++k)
        if (v[k] < 0 || v[k] >= limit)
            return ns_fail(NS_ERR_PARSE, "%s[%lld] = %d is out of range [0, %d)", name,
                           (long long)k, (int)v[k], (int)limit);
    return NS_OK;
}

static ns_status check_finite(const char *name, const double *v, int64_t n, int32_t rows) {
    for (int64_t k = 0; k < n; ++k)
        if (!isfinite(v[k])) {
            if (rows > 0)
                return ns_fail(NS_ERR_NOT_FINITE, "%s[%lld, %lld] = %g is not finite", name,
                               (long long)(k % rows), (long long)(k / rows), v[k]);
            return ns_fail(NS_ERR_NOT_FINITE, "%s[%lld] = %g is not finite", name, (long long)k, v[k]);
        }
    return NS_OK;
}

ns_status ns_life_model_validate(const ns_life_model_t *m) {
    if (!m) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_model_validate: model is NULL");
    ns_status s;
    if ((s = check_index("phi_atom", m->atom, m->n_coeffs, m->n_atoms)) != NS_OK) return s;
    if ((s = check_index("phi_voxel", m->voxel, m->n_coeffs, m->n_voxels)) != NS_OK) return s;
    if ((s = check_index("phi_fiber", m->fiber, m->n_coeffs, m->n_fibers)) != NS_OK) return s;
    if ((s = check_finite("phi_value", m->value, m->n_coeffs, 0)) != NS_OK) return s;
    if ((s = check_finite("dictionary", m->D, (int64_t)m->n_theta * m->n_atoms, m->n_theta)) != NS_OK)
        return s;
    if ((s = check_finite("signal", m->Y, (int64_t)m->n_theta * m->n_voxels, m->n_theta)) != NS_OK)
        return s;
    if (m->w_true) {
        if ((s = check_finite("w_true", m->w_true, m->n_fibers, 0)) != NS_OK) return s;
        for (int32_t f = 0; f < m->n_fibers; ++f)
            if (m->w_true[f] < 0)
                return ns_fail(NS_ERR_PARSE, "w_true[%d] = %g is negative", (int)f, m->w_true[f]);
    }
    /* A fiber without coefficients is a zero column of M: its weight is
     * undetermined and ENCODE's preconditioner divides by zero for it. */
    unsigned char *seen = calloc((size_t)m->n_fibers, 1);
    if (!seen) return ns_fail(NS_ERR_OUT_OF_MEMORY, "fiber check");
    for (int64_t k = 0; k < m->n_coeffs; ++k) seen[m->fiber[k]] = 1;
    for (int32_t f = 0; f < m->n_fibers; ++f)
        if (!seen[f]) {
            free(seen);
            return ns_fail(NS_ERR_EMPTY, "fiber %d has no coefficients in phi_fiber (a zero column of M)",
                           (int)f);
        }
    free(seen);
    return NS_OK;
}

/* ------------------------------------------------------------- names */

static const char *variant_names[NS_LIFE_VARIANT_ALL] = {
    "auto", "naive", "naive-atom", "naive-voxel", "coeff-atom", "coeff-voxel", "atom-atom",
    "voxel-voxel", "voxel-f32d", "voxel-f16d", "voxel-lr16d", "voxel-sh"};

const char *ns_life_variant_name(ns_life_variant v) {
    return ns_name_of(variant_names, NS_LIFE_VARIANT_ALL, (int)v, "unknown");
}

ns_status ns_life_variant_from_name(const char *name, ns_life_variant *v) {
    if (!name || !v) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_variant_from_name: NULL argument");
    const int k = ns_name_index(variant_names, NS_LIFE_VARIANT_ALL, name);
    if (k >= 0) *v = (ns_life_variant)k;
    return k >= 0 ? NS_OK : ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "unknown LiFE variant '%s' (auto, naive, naive-atom, naive-voxel, coeff-atom, "
                   "coeff-voxel, atom-atom, voxel-voxel; CUDA: voxel-f32d, voxel-f16d, voxel-lr16d, voxel-sh)", name);
}

const char *ns_life_product_name(ns_life_product p) {
    return p == NS_LIFE_MW ? "Mw" : p == NS_LIFE_MTY ? "MTy" : "unknown";
}

const char *ns_life_stop_name(ns_life_stop s) {
    switch (s) {
    case NS_LIFE_STOP_MAX_ITERATIONS: return "maximum number of iterations";
    case NS_LIFE_STOP_GRADIENT: return "projected gradient below tolg";
    case NS_LIFE_STOP_OBJECTIVE: return "objective change below tolo";
    case NS_LIFE_STOP_ZERO_STEP: return "lagged gradient vanished";
    case NS_LIFE_STOP_USER: return "stopped by the caller";
    case NS_LIFE_STOP_GRADIENT_RELATIVE: return "projected gradient below rtolg x its start";
    case NS_LIFE_STOP_OBJECTIVE_RELATIVE: return "objective change below rtolo x objective";
    }
    return "unknown";
}

int ns_life_variant_order(ns_life_variant v) {
    switch (v) {
    case NS_LIFE_NAIVE_ATOM:
    case NS_LIFE_COEFF_ATOM:
    case NS_LIFE_ATOM_ATOM: return NS_LIFE_ORDER_ATOM;
    case NS_LIFE_NAIVE_VOXEL:
    case NS_LIFE_COEFF_VOXEL:
    case NS_LIFE_VOXEL_VOXEL:
    case NS_LIFE_VOXEL_F32D:
    case NS_LIFE_VOXEL_F16D:
    case NS_LIFE_VOXEL_LR16D:
    case NS_LIFE_VOXEL_SH: return NS_LIFE_ORDER_VOXEL;
    default: return NS_LIFE_ORDER_ORIGINAL;
    }
}

void ns_life_options_init(ns_life_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->backend = NS_BACKEND_AUTO;
    o->mw_variant = NS_LIFE_AUTO;
    o->mty_variant = NS_LIFE_AUTO;
    o->device = NS_DEVICE_CURRENT;
}

void ns_life_fit_options_init(ns_life_fit_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->max_iterations = 500;
    o->tol_gradient = 1e-5;
    o->tol_objective = 1e-5;
    o->rtol_objective = 1e-5;
    o->rtol_gradient = 1e-3;
}

void ns_life_synth_options_init(ns_life_synth_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->n_theta = 96;
    o->dictionary_l = 180; /* as life build (docs/life_data.md: accuracy per time) */
    o->b_value = 2000.0;
    o->axial_diffusivity = 1.0;
    o->n_fibers = 50000;
    o->grid[0] = 72;
    o->grid[1] = 88;
    o->grid[2] = 72;
    o->mean_length = 90.0; /* about 107 coefficients per fiber: 500,000 fibers give ~53 M (the paper's DET: ~62 M, Table 9) */
    o->step = 0.5;
    o->curvature = 0.05;
    o->active_fraction = 0.5;
    o->noise = 0.0;
    o->seed = 1;
}
