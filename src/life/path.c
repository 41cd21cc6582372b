/* The regularisation path and its cross-validation (docs/life.md, "Choosing lambda").
 *
 * A path is a descending list of values of one penalty (L1's lambda, the ridge's R or the group
 * penalty's G). The fits run from the largest value down, each starting from the previous one's
 * weights (warm starts: along a geometric path consecutive solutions are close, so each fit needs
 * few updates). Cross-validation holds out voxels: the voxels are dealt at random into K folds of
 * equal size; for each fold a training model keeps the other voxels (their coefficients and
 * signal, every fiber), the path is fitted on it with warm starts, and each solution predicts the
 * held-out voxels through the full model's product M w (the held-out RMSE). The fold models run
 * on engines of the full engine's backend and variants, one at a time, so the GPU path is the
 * same code on device products.
 *
 * Units on a fold: R and G are relative to the model they are fitted on (ns_life_fit_options),
 * so they mean the same on a fold; L1's lambda is absolute and multiplies a sum over the fitted
 * signal values, so on a fold it is scaled by the fold's share of the signal values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "core/rng.h"
#include "core/timer.h"
#include "life/life_impl.h"

#define TRY(call)                           \
    do {                                    \
        ns_status try_s_ = (call);          \
        if (try_s_ != NS_OK) return try_s_; \
    } while (0)

#define RIDGE_MAX 10.0

static const char *const penalty_names[] = {"lambda", "ridge", "group"};

const char *ns_life_penalty_name(ns_life_penalty p) { return ns_name_of(penalty_names, 3, (int)p, "unknown"); }

ns_status ns_life_penalty_from_name(const char *name, ns_life_penalty *p) {
    if (!name || !p) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_penalty_from_name: NULL argument");
    const int k = ns_name_index(penalty_names, 3, name);
    if (k >= 0) *p = (ns_life_penalty)k;
    return k >= 0 ? NS_OK : ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown LiFE penalty '%s' (lambda, ridge or group)", name);
}

/* The 1se-gain rule's floor: 5 % of the gain for the group penalty and the ridge (the phantoms'
 * AUC at the value it picks matches the best fixed value's); none for L1, whose choice within 5 %
 * of the gain ranked worse than the one-SE rule's on every phantom measured (bench/README.md,
 * "`--lambda auto`"). */
double ns_life_cv_gain_tolerance(ns_life_penalty penalty) { return penalty == NS_LIFE_PENALTY_L1 ? 0.0 : 0.05; }

static const char *const rule_names[] = {"1se", "min", "1se-gain"};

const char *ns_life_cv_rule_name(ns_life_cv_rule r) { return ns_name_of(rule_names, 3, (int)r, "unknown"); }

ns_status ns_life_cv_rule_from_name(const char *name, ns_life_cv_rule *r) {
    if (!name || !r) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_cv_rule_from_name: NULL argument");
    const int k = ns_name_index(rule_names, 3, name);
    if (k >= 0) *r = (ns_life_cv_rule)k;
    return k >= 0 ? NS_OK : ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown cross-validation rule '%s' (1se-gain, 1se or min)", name);
}

void ns_life_path_options_init(ns_life_path_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->penalty = NS_LIFE_PENALTY_GROUP;
    o->n_values = 8;
    o->folds = 5;
    o->seed = 1;
    o->rule = NS_LIFE_CV_ONE_SE_GAIN;
}

static double *penalty_field(ns_life_fit_options *o, ns_life_penalty p) {
    return p == NS_LIFE_PENALTY_L1 ? &o->lambda : p == NS_LIFE_PENALTY_RIDGE ? &o->ridge : &o->group;
}

ns_status ns_life_penalty_max(ns_life_engine_t *e, const ns_life_fit_options *fit, ns_life_penalty p, double *value) {
    if (!e || !value || (int)p < 0 || (int)p > 2)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_penalty_max: bad argument");
    ns_life_fit_options o;
    if (fit) o = *fit;
    else ns_life_fit_options_init(&o);
    if (p == NS_LIFE_PENALTY_RIDGE) {
        *value = RIDGE_MAX;
        return NS_OK;
    }
    if (p == NS_LIFE_PENALTY_GROUP) {
        if (!o.groups)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "the group penalty's path needs the fit options' groups (one "
                           "group id per fiber)");
        double g = 0.0;
        TRY(ns_life_group_max(e, &o, &g));
        if (!(g > 0.0) || !isfinite(g))
            return ns_fail(NS_ERR_EMPTY, "the group penalty's path: no group has a positive gradient at w = 0 "
                           "(largest / median = %g): the signal is not fitted by any fiber", g);
        *value = g * (1.0 + 1e-9);
        return NS_OK;
    }
    const ns_life_model_t *m = e->model;
    double *g = malloc((size_t)m->n_fibers * sizeof *g);
    if (!g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "lambda_max (%d fibers)", (int)m->n_fibers);
    ns_status s = ns_life_mty(e, m->Y, g);
    double mx = 0.0;
    for (int32_t f = 0; s == NS_OK && f < m->n_fibers; ++f)
        if (g[f] > mx) mx = g[f];
    free(g);
    if (s != NS_OK) return s;
    if (!(mx > 0.0) || !isfinite(mx))
        return ns_fail(NS_ERR_EMPTY, "the L1 path: max (M^T y) = %g: no fiber correlates positively with the signal",
                       mx);
    *value = mx;
    return NS_OK;
}

static int cmp_desc(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The training model of a fold: the voxels whose fold is not `k`, renumbered in order, with their
 * coefficients (in the model's order) and signal columns; every fiber and the dictionary. */
static ns_status fold_model(const ns_life_model_t *m, const int32_t *fold, int32_t k, ns_life_model_t **out) {
    int32_t *map = malloc((size_t)m->n_voxels * sizeof *map);
    if (!map) return ns_fail(NS_ERR_OUT_OF_MEMORY, "cross-validation fold (%d voxels)", (int)m->n_voxels);
    int32_t nv = 0;
    for (int32_t v = 0; v < m->n_voxels; ++v) map[v] = fold[v] == k ? -1 : nv++;
    int64_t nc = 0;
    for (int64_t c = 0; c < m->n_coeffs; ++c) nc += map[m->voxel[c]] >= 0;
    ns_life_model_t *t = NULL;
    ns_status s = ns_life_model_create(m->n_theta, m->n_atoms, nv, m->n_fibers, nc, &t);
    if (s != NS_OK) {
        free(map);
        return s;
    }
    const size_t T = (size_t)m->n_theta;
    memcpy(t->D, m->D, T * (size_t)m->n_atoms * sizeof *t->D);
    for (int32_t v = 0; v < m->n_voxels; ++v)
        if (map[v] >= 0) memcpy(t->Y + (size_t)map[v] * T, m->Y + (size_t)v * T, T * sizeof *t->Y);
    int64_t j = 0;
    for (int64_t c = 0; c < m->n_coeffs; ++c) {
        const int32_t v = map[m->voxel[c]];
        if (v < 0) continue;
        t->atom[j] = m->atom[c], t->voxel[j] = v, t->fiber[j] = m->fiber[c], t->value[j] = m->value[c];
        ++j;
    }
    free(map);
    *out = t;
    return NS_OK;
}

/* The voxels dealt into K folds of equal size (+-1): a seeded shuffle of 0 .. n-1, position mod K. */
static ns_status deal_folds(int32_t n, int32_t K, uint64_t seed, int32_t *fold) {
    int32_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) return ns_fail(NS_ERR_OUT_OF_MEMORY, "cross-validation folds (%d voxels)", (int)n);
    for (int32_t i = 0; i < n; ++i) perm[i] = i;
    ns_rng rng;
    ns_rng_seed(&rng, seed, 0x6c696665u);
    for (int32_t i = n - 1; i > 0; --i) {
        const int32_t j = (int32_t)ns_rng_below(&rng, (uint64_t)i + 1);
        const int32_t x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    for (int32_t i = 0; i < n; ++i) fold[perm[i]] = i % K;
    free(perm);
    return NS_OK;
}

typedef struct path_run {
    ns_life_engine_t *full; /* predictions for the held-out voxels */
    const ns_life_fit_options *fit;
    const ns_life_path_options *po;
    const double *values;
    int32_t n;
    double *pred; /* n_theta x n_voxels */
    int32_t done, total;
    ns_life_path_result *res;
} path_run;

static int tick(path_run *r) {
    ++r->done;
    return r->po->progress && r->po->progress(r->done, r->total, r->po->progress_context);
}

/* RMSE of M w against the signal over the voxels of fold k (k < 0: all). */
static ns_status rmse(path_run *r, const double *w, const int32_t *fold, int32_t k, double *out) {
    const ns_life_model_t *m = r->full->model;
    TRY(ns_life_mw(r->full, w, r->pred));
    const int64_t T = m->n_theta;
    double ss = 0.0;
    int64_t cnt = 0;
    for (int32_t v = 0; v < m->n_voxels; ++v) {
        if (k >= 0 && fold[v] != k) continue;
        for (int64_t i = v * T; i < (v + 1) * T; ++i) {
            const double d = r->pred[i] - m->Y[i];
            ss += d * d;
        }
        cnt += T;
    }
    *out = cnt > 0 ? sqrt(ss / (double)cnt) : NAN;
    return NS_OK;
}

/* The path on one engine, from the largest value down. scale: multiplies an L1 lambda (a fold's
 * share of the signal). Per value: after(j, w, result) records what the caller needs; a stop
 * request ends the path with *stopped set. */
typedef ns_status (*after_fn)(path_run *r, int32_t j, const double *w, const ns_life_fit_result *fr, void *ctx);

static ns_status run_path(path_run *r, ns_life_engine_t *e, double scale, after_fn after, void *ctx) {
    const int32_t nf = e->model->n_fibers;
    double *w = malloc((size_t)nf * sizeof *w), *prev = malloc((size_t)nf * sizeof *prev);
    ns_status s = w && prev ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "path weights (%d fibers)", (int)nf);
    /* The relative gradient test refers to the projected gradient at the start, which a warm start
     * makes small: the fit would run far longer than from zeros. Every fit of the path (warm or
     * cold) therefore stops at the same absolute test instead: rtol_gradient x max_f (M^T y)_f,
     * the projected gradient at w = 0 without a penalty. */
    double ref = 0.0;
    if (s == NS_OK && r->fit->rtol_gradient > 0.0) {
        s = ns_life_mty(e, e->model->Y, w);
        for (int32_t f = 0; s == NS_OK && f < nf; ++f) ref = fmax(ref, fabs(w[f]));
    }
    for (int32_t j = 0; s == NS_OK && j < r->n; ++j) {
        ns_life_fit_options o = *r->fit;
        o.tol_gradient = fmax(o.tol_gradient, o.rtol_gradient * ref);
        o.rtol_gradient = 0.0;
        double *field = penalty_field(&o, r->po->penalty);
        *field = r->values[j] * (r->po->penalty == NS_LIFE_PENALTY_L1 ? scale : 1.0);
        if (j > 0 && !r->po->cold) o.w0 = prev;
        ns_life_fit_result fr;
        s = ns_life_fit(e, &o, w, NULL, &fr);
        if (s != NS_OK) break;
        r->res->updates += fr.updates;
        s = after(r, j, w, &fr, ctx);
        memcpy(prev, w, (size_t)nf * sizeof *w);
        if (s == NS_OK && tick(r)) r->res->stopped = 1;
        if (r->res->stopped) break;
    }
    free(w);
    free(prev);
    return s;
}

typedef struct fold_ctx {
    const int32_t *fold;
    int32_t k;
    double *err; /* K x n */
    ns_life_path_point *points;
    ns_life_model_t *train;    /* the fold's training model (refit) */
    const ns_life_options *eo; /* its engines' options (refit) */
    double *wr;                /* n_fibers scratch (refit) */
} fold_ctx;

/* The relaxed refit (path option refit): the training model restricted to the fibers w keeps,
 * fitted without the path's penalty (the other fit options as given) from w, mapped back into
 * wr (0 elsewhere). */
static ns_status refit(path_run *r, fold_ctx *c, const double *w, int32_t *updates) {
    const ns_life_model_t *t = c->train;
    const int32_t nf = t->n_fibers;
    int32_t *map = malloc((size_t)nf * sizeof *map), nk = 0;
    if (!map) return ns_fail(NS_ERR_OUT_OF_MEMORY, "refit (%d fibers)", (int)nf);
    for (int32_t f = 0; f < nf; ++f) map[f] = w[f] > 0.0 ? nk++ : -1;
    int64_t nc = 0;
    for (int64_t q = 0; q < t->n_coeffs; ++q) nc += map[t->fiber[q]] >= 0;
    memset(c->wr, 0, (size_t)nf * sizeof *c->wr);
    ns_status s = NS_OK;
    if (nk > 0 && nc > 0) {
        ns_life_model_t *sub = NULL;
        ns_life_engine_t *se = NULL;
        double *x0 = NULL, *x = NULL;
        int32_t *groups = NULL;
        s = ns_life_model_create(t->n_theta, t->n_atoms, t->n_voxels, nk, nc, &sub);
        if (s == NS_OK) {
            memcpy(sub->D, t->D, (size_t)t->n_theta * t->n_atoms * sizeof *sub->D);
            memcpy(sub->Y, t->Y, (size_t)t->n_theta * t->n_voxels * sizeof *sub->Y);
            for (int64_t q = 0, i = 0; q < t->n_coeffs; ++q) {
                const int32_t f = map[t->fiber[q]];
                if (f < 0) continue;
                sub->atom[i] = t->atom[q], sub->voxel[i] = t->voxel[q], sub->fiber[i] = f, sub->value[i] = t->value[q];
                ++i;
            }
            s = ns_life_engine_create(sub, c->eo, &se);
        }
        x0 = malloc((size_t)nk * sizeof *x0), x = malloc((size_t)nk * sizeof *x);
        if (s == NS_OK && (!x0 || !x)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "refit (%d fibers)", (int)nk);
        if (s == NS_OK) {
            ns_life_fit_options o = *r->fit;
            *penalty_field(&o, r->po->penalty) = 0.0;
            if (o.group > 0.0) { /* a fixed group penalty stays, on the kept fibers' groups */
                groups = malloc((size_t)nk * sizeof *groups);
                if (!groups) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "refit groups");
                for (int32_t f = 0; s == NS_OK && f < nf; ++f)
                    if (map[f] >= 0) groups[map[f]] = o.groups[f];
                o.groups = groups;
            }
            for (int32_t f = 0; f < nf; ++f)
                if (map[f] >= 0) x0[map[f]] = w[f];
            o.w0 = x0;
            ns_life_fit_result fr;
            if (s == NS_OK) s = ns_life_fit(se, &o, x, NULL, &fr);
            if (s == NS_OK) {
                *updates += fr.updates;
                for (int32_t f = 0; f < nf; ++f)
                    if (map[f] >= 0) c->wr[f] = x[map[f]];
            }
        }
        free(groups), free(x0), free(x);
        ns_life_engine_destroy(se);
        ns_life_model_destroy(sub);
    }
    free(map);
    return s;
}

static ns_status after_fold(path_run *r, int32_t j, const double *w, const ns_life_fit_result *fr, void *ctx) {
    fold_ctx *c = ctx;
    c->points[j].cv_updates += fr->updates;
    if (r->po->refit) {
        TRY(refit(r, c, w, &c->points[j].cv_updates));
        w = c->wr;
    }
    return rmse(r, w, c->fold, c->k, &c->err[(int64_t)c->k * r->n + j]);
}

typedef struct full_ctx {
    ns_life_path_point *points;
    double *path_weights; /* NULL or n x n_fibers */
} full_ctx;

static ns_status after_full(path_run *r, int32_t j, const double *w, const ns_life_fit_result *fr, void *ctx) {
    full_ctx *c = ctx;
    ns_life_path_point *p = &c->points[j];
    p->objective = fr->objective;
    p->nonzero = fr->nonzero;
    p->groups_nonzero = fr->groups_nonzero;
    p->updates = fr->updates;
    p->stop = fr->stop;
    const size_t nf = (size_t)r->full->model->n_fibers;
    if (c->path_weights) memcpy(c->path_weights + (size_t)j * nf, w, nf * sizeof *w);
    return rmse(r, w, NULL, -1, &p->rmse);
}

/* The chosen index from the CV curve: the minimum, or the largest value (the first on the
 * descending path) whose error is within a tolerance of the minimum's: one standard error (1se) or
 * the larger of that and `share` x the minimum's gain over the zero prediction, zero - cv
 * (1se-gain). */
static void choose(const ns_life_path_point *pt, int32_t n, ns_life_cv_rule rule, double zero, double share,
                   int32_t *chosen, int32_t *minimum) {
    int32_t best = 0;
    for (int32_t j = 1; j < n; ++j)
        if (pt[j].cv_rmse < pt[best].cv_rmse) best = j;
    *minimum = best;
    *chosen = best;
    if (rule == NS_LIFE_CV_MIN) return;
    double tol = pt[best].cv_se;
    if (rule == NS_LIFE_CV_ONE_SE_GAIN) tol = fmax(tol, share * (zero - pt[best].cv_rmse));
    for (int32_t j = 0; j < best; ++j)
        if (pt[j].cv_rmse <= pt[best].cv_rmse + tol) {
            *chosen = j;
            break;
        }
}

static ns_status check(ns_life_engine_t *e, const ns_life_fit_options *fit, const ns_life_path_options *po) {
    if ((int)po->penalty < 0 || (int)po->penalty > 2)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: unknown penalty %d", (int)po->penalty);
    if (po->n_values < 1 || po->n_values > 1000)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: n_values = %d must be in [1, 1000]", (int)po->n_values);
    if (!po->values && po->n_values < 2)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: a geometric path needs n_values >= 2 (%d)",
                       (int)po->n_values);
    if (po->folds < 0 || po->folds > e->model->n_voxels)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: folds = %d must be in [0, voxels = %d]",
                       (int)po->folds, (int)e->model->n_voxels);
    if (!(po->min_fraction >= 0.0 && po->min_fraction < 1.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: min_fraction = %g must be in [0, 1) (0: the default)",
                       po->min_fraction);
    if (!(po->max_value >= 0.0) || !isfinite(po->max_value))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: max_value = %g must be finite and >= 0 (0: the "
                       "penalty's maximum)", po->max_value);
    for (int32_t j = 0; po->values && j < po->n_values; ++j)
        if (!(po->values[j] > 0.0) || !isfinite(po->values[j]))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: values[%d] = %g must be finite and > 0", (int)j,
                           po->values[j]);
    if ((int)po->rule < 0 || (int)po->rule > 2)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: unknown rule %d", (int)po->rule);
    if (fit && fit->state)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: a path is not resumable (fit options' state must be NULL)");
    if (fit && fit->reduce)
        return ns_fail(NS_ERR_UNSUPPORTED, "ns_life_path: not on a voxel-partitioned model (reduce): the folds hold "
                       "out voxels of one model");
    if (fit && fit->preconditioner)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: the preconditioner is not offered (a fold's fibers "
                       "may have no coefficients left)");
    if (po->penalty == NS_LIFE_PENALTY_GROUP && !(fit && fit->groups))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: the group penalty needs the fit options' groups");
    return NS_OK;
}

ns_status ns_life_path(ns_life_engine_t *e, const ns_life_fit_options *fit, const ns_life_path_options *po,
                       ns_life_path_point *points, double *w, double *path_weights, ns_life_path_result *res) {
    if (!e || !po || !points || !w || !res) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_path: NULL argument");
    TRY(check(e, fit, po));
    ns_life_fit_options fo;
    if (fit) fo = *fit;
    else ns_life_fit_options_init(&fo);
    const double t0 = ns_time_ms();
    memset(res, 0, sizeof *res);
    res->chosen = res->minimum = -1;
    const int32_t n = po->n_values, K = po->folds >= 2 ? po->folds : 0;
    res->folds = K;
    double *values = malloc((size_t)n * sizeof *values);
    if (!values) return ns_fail(NS_ERR_OUT_OF_MEMORY, "path values");
    ns_status s = NS_OK;
    if (po->values) {
        memcpy(values, po->values, (size_t)n * sizeof *values);
        qsort(values, (size_t)n, sizeof *values, cmp_desc);
    } else {
        double top = po->max_value;
        if (!(top > 0.0)) s = ns_life_penalty_max(e, &fo, po->penalty, &top);
        const double frac = po->min_fraction > 0.0 ? po->min_fraction
                          : po->penalty == NS_LIFE_PENALTY_RIDGE ? 1e-3 : 1e-2;
        for (int32_t j = 0; s == NS_OK && j < n; ++j) values[j] = top * pow(frac, (double)j / (n - 1));
    }
    res->max_value = values[0];
    memset(points, 0, (size_t)n * sizeof *points);
    for (int32_t j = 0; j < n; ++j) points[j].value = values[j], points[j].cv_rmse = points[j].cv_se = NAN;
    const ns_life_model_t *m = e->model;
    path_run r = {e, &fo, po, values, n, NULL, 0, n * (1 + K) + 1, res};
    int32_t *fold = K ? malloc((size_t)m->n_voxels * sizeof *fold) : NULL;
    double *err = K ? malloc((size_t)K * (n + 1) * sizeof *err) : NULL; /* + the zero prediction's */
    r.pred = malloc((size_t)m->n_theta * m->n_voxels * sizeof *r.pred);
    double *wr = K && po->refit ? malloc((size_t)m->n_fibers * sizeof *wr) : NULL;
    if (s == NS_OK && (!r.pred || (K && (!fold || !err)) || (K && po->refit && !wr)))
        s = ns_fail(NS_ERR_OUT_OF_MEMORY, "path: %d voxels", (int)m->n_voxels);
    if (s == NS_OK && K) s = deal_folds(m->n_voxels, K, po->seed, fold);
    /* the folds: one training model and engine at a time, the full engine's backend and variants */
    ns_life_options eo = e->options;
    eo.mw_variant = e->variant[NS_LIFE_MW];
    eo.mty_variant = e->variant[NS_LIFE_MTY];
    const double tcv = ns_time_ms();
    for (int32_t k = 0; s == NS_OK && k < K && !res->stopped; ++k) {
        ns_life_model_t *tm = NULL;
        ns_life_engine_t *te = NULL;
        s = fold_model(m, fold, k, &tm);
        if (s == NS_OK) s = ns_life_engine_create(tm, &eo, &te);
        fold_ctx c = {fold, k, err, points, tm, &eo, wr};
        const double share = tm ? (double)tm->n_voxels / m->n_voxels : 1.0;
        if (s == NS_OK) s = run_path(&r, te, share, after_fold, &c);
        ns_life_engine_destroy(te);
        ns_life_model_destroy(tm);
    }
    res->cv_seconds = (ns_time_ms() - tcv) * 1e-3;
    res->cv_zero = NAN;
    if (s == NS_OK && K && !res->stopped) { /* the zero prediction's held-out RMSE: the signal's */
        double *ss = err + (size_t)K * n;
        int64_t *cnt = calloc((size_t)K, sizeof *cnt);
        if (!cnt) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "path: %d folds", (int)K);
        for (int32_t k = 0; s == NS_OK && k < K; ++k) ss[k] = 0.0;
        for (int32_t v = 0; s == NS_OK && v < m->n_voxels; ++v) {
            const double *y = m->Y + (size_t)v * m->n_theta;
            for (int32_t i = 0; i < m->n_theta; ++i) ss[fold[v]] += y[i] * y[i];
            cnt[fold[v]] += m->n_theta;
        }
        double mean = 0.0;
        for (int32_t k = 0; s == NS_OK && k < K; ++k) mean += sqrt(ss[k] / (double)cnt[k]) / K;
        if (s == NS_OK) res->cv_zero = mean;
        free(cnt);
    }
    for (int32_t j = 0; s == NS_OK && K && !res->stopped && j < n; ++j) {
        double mean = 0.0, ss = 0.0;
        for (int32_t k = 0; k < K; ++k) mean += err[(int64_t)k * n + j] / K;
        for (int32_t k = 0; k < K; ++k) ss += (err[(int64_t)k * n + j] - mean) * (err[(int64_t)k * n + j] - mean);
        points[j].cv_rmse = mean;
        points[j].cv_se = sqrt(ss / (K - 1)) / sqrt((double)K);
    }
    if (s == NS_OK && !res->stopped) {
        if (K)
            choose(points, n, po->rule, res->cv_zero, ns_life_cv_gain_tolerance(po->penalty), &res->chosen,
                   &res->minimum);
        else res->chosen = n - 1;
        /* the full path */
        full_ctx c = {points, path_weights};
        s = run_path(&r, e, 1.0, after_full, &c);
    }
    if (s == NS_OK && !res->stopped) {
        /* the weights returned: a fit at the chosen value with the fit options as given (their start
         * and stopping tests), the weights `life fit` gives for that value; the path's own fit there
         * is warm-started and stops at the path's absolute test */
        ns_life_fit_options o = fo;
        *penalty_field(&o, po->penalty) = values[res->chosen];
        ns_life_fit_result fr;
        s = ns_life_fit(e, &o, w, NULL, &fr);
        if (s == NS_OK) {
            res->updates += fr.updates;
            if (tick(&r)) res->stopped = 1;
        }
    }
    if (res->stopped) res->chosen = -1;
    res->n_values = n;
    res->seconds = (ns_time_ms() - t0) * 1e-3;
    free(values);
    free(fold);
    free(err);
    free(wr);
    free(r.pred);
    return s;
}
