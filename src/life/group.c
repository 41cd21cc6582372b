/* COMMIT2-style group sparsity for LiFE (docs/life.md, "Group sparsity"):
 *
 *   min F(w) = 0.5 ||M w - y||^2 + 0.5 mu ||w||^2 + lambda sum w
 *              + lambda_g sum_g sqrt(|g|) ||w_g||_2,   w >= 0
 *
 * The first three terms are smooth (f); the last with the constraint w >= 0 is
 * h, whose proximal map is exact and separable over groups: project on w >= 0,
 * then shrink the group's norm, u_g = [v_g]_+ max(0, 1 - t lambda_g sqrt|g| /
 * ||[v_g]_+||) (the non-negative projection and the group norm commute this
 * way because the norm of a group only decreases under the projection and the
 * shrinkage keeps signs). SBBNNLS's Barzilai-Borwein steps are not monotone and
 * its projection is not this proximal map, so the solver is FISTA (Beck and
 * Teboulle 2009) with backtracking on the Lipschitz constant L of grad f:
 *
 *   L0: 8 power iterations on M^T M (from the ones vector) + mu
 *   y = x = w0 (0);  t = 1
 *   loop: g = grad f(y) = M^T (M y - b) + mu y + lambda       (1 product M^T)
 *         x+ = prox_{h/L}(y - g / L); f(x+) from M x+          (1 product M)
 *         while f(x+) > f(y) + <g, x+ - y> + L/2 ||x+ - y||^2: L *= 1.5, again
 *         restart (t = 1) when <y - x+, x+ - x> > 0 (O'Donoghue and Candes 2015)
 *         t+ = (1 + sqrt(1 + 4 t^2)) / 2;  y = x+ + (t - 1) / t+ (x+ - x)
 *         M y = M x+ + (t - 1) / t+ (M x+ - M x)                (no product)
 *
 * so an update costs one product each way when L holds. The products go
 * through the engine (ns_life_mw / ns_life_mty: the CPU variants and threads
 * it chose, or the CUDA kernels with the vectors copied through the engine's
 * staging buffers); a voxel-partitioned model sums M^T results and voxel dot products
 * over processes through options.reduce, everything in fiber space being
 * replicated. Stops as SBBNNLS (docs/life.md), with the gradient mapping
 * L (y - x+) in place of the projected gradient and F (with the penalties) as
 * the objective. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "life/life_impl.h"

#define TRY(call)                           \
    do {                                    \
        ns_status try_s_ = (call);          \
        if (try_s_ != NS_OK) return try_s_; \
    } while (0)

typedef struct gsolver {
    ns_life_engine_t *e;
    const ns_life_fit_options *opt; /* ridge = mu (absolute) */
    ns_life_fit_result *res;
    int64_t nf, nv;
    int32_t ng;
    int32_t *gid;    /* compact group of each fiber */
    double *gscale;  /* sqrt(|g|) */
    double *gnorm;   /* per group scratch */
    double lam;      /* lambda_g (absolute) */
    const double *b; /* the signal */
    double ratio_max; /* the largest group's ||[-grad_g(0)]_+|| / sqrt|g| over the median (group_scale) */
} gsolver;

static ns_status reduce(const gsolver *s, double *v, int64_t n) {
    return s->opt->reduce ? s->opt->reduce(v, n, s->opt->reduce_context) : NS_OK;
}

static ns_status mw(gsolver *s, const double *w, double *y) {
    ++s->res->mw_calls;
    return ns_life_mw(s->e, w, y);
}

static ns_status mty(gsolver *s, const double *y, double *w) {
    ++s->res->mty_calls;
    TRY(ns_life_mty(s->e, y, w));
    return reduce(s, w, s->nf);
}

/* 0.5 ||Mx - b||^2 (summed over processes) + 0.5 mu ||x||^2 + lambda sum x. */
static ns_status smooth_value(gsolver *s, const double *x, const double *Mx, double *f) {
    double rr = 0.0;
    for (int64_t i = 0; i < s->nv; ++i) {
        const double d = Mx[i] - s->b[i];
        rr += d * d;
    }
    TRY(reduce(s, &rr, 1));
    double xx = 0.0, sx = 0.0;
    for (int64_t i = 0; i < s->nf; ++i) xx += x[i] * x[i], sx += x[i];
    *f = 0.5 * rr + 0.5 * s->opt->ridge * xx + s->opt->lambda * sx;
    return NS_OK;
}

/* lambda_g sum_g sqrt(|g|) ||x_g||; also counts the non-zero groups. */
static double group_penalty(gsolver *s, const double *x, int32_t *nonzero) {
    memset(s->gnorm, 0, (size_t)s->ng * sizeof *s->gnorm);
    for (int64_t i = 0; i < s->nf; ++i) s->gnorm[s->gid[i]] += x[i] * x[i];
    double p = 0.0;
    int32_t nz = 0;
    for (int32_t g = 0; g < s->ng; ++g) {
        p += s->gscale[g] * sqrt(s->gnorm[g]);
        nz += s->gnorm[g] > 0.0;
    }
    if (nonzero) *nonzero = nz;
    return s->lam * p;
}

/* x = prox_{t h}(v): the non-negative projection, then each group's norm
 * shrunk by t lambda_g sqrt(|g|) (to 0 when it is smaller). */
static void prox(gsolver *s, const double *v, double t, double *x) {
    memset(s->gnorm, 0, (size_t)s->ng * sizeof *s->gnorm);
    for (int64_t i = 0; i < s->nf; ++i) {
        x[i] = v[i] > 0.0 ? v[i] : 0.0;
        s->gnorm[s->gid[i]] += x[i] * x[i];
    }
    for (int32_t g = 0; g < s->ng; ++g) {
        const double n = sqrt(s->gnorm[g]), k = t * s->lam * s->gscale[g];
        s->gnorm[g] = n > k ? 1.0 - k / n : 0.0; /* now the factor */
    }
    for (int64_t i = 0; i < s->nf; ++i) x[i] *= s->gnorm[s->gid[i]];
}

static int cmp_pair(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Compact group numbers (negative ids: a group of their own each) and sqrt(|g|). */
static ns_status make_groups(gsolver *s, const int32_t *groups) {
    const int64_t nf = s->nf;
    int64_t *pair = malloc((size_t)nf * 2 * sizeof *pair);
    if (!pair) return ns_fail(NS_ERR_OUT_OF_MEMORY, "groups (%lld fibers)", (long long)nf);
    int64_t m = 0;
    int32_t ng = 0;
    for (int64_t i = 0; i < nf; ++i) {
        if (groups[i] < 0) s->gid[i] = -1;
        else pair[2 * m] = groups[i], pair[2 * m + 1] = i, ++m;
    }
    qsort(pair, (size_t)m, 2 * sizeof *pair, cmp_pair);
    for (int64_t k = 0; k < m; ++k) {
        if (k > 0 && pair[2 * k] != pair[2 * k - 2]) ++ng;
        s->gid[pair[2 * k + 1]] = ng;
    }
    if (m > 0) ++ng;
    for (int64_t i = 0; i < nf; ++i)
        if (s->gid[i] < 0) s->gid[i] = ng++;
    free(pair);
    s->ng = ng;
    s->gscale = calloc((size_t)ng, sizeof *s->gscale);
    s->gnorm = calloc((size_t)ng, sizeof *s->gnorm);
    if (!s->gscale || !s->gnorm) return ns_fail(NS_ERR_OUT_OF_MEMORY, "groups (%d)", (int)ng);
    for (int64_t i = 0; i < nf; ++i) s->gscale[s->gid[i]] += 1.0;
    for (int32_t g = 0; g < ng; ++g) s->gscale[g] = sqrt(s->gscale[g]);
    return NS_OK;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* lambda_g = group x median_g ||[-grad_g f(0)]_+|| / sqrt(|g|), grad f(0) = lambda - M^T b. */
static ns_status group_scale(gsolver *s, double *tmp) {
    TRY(mty(s, s->b, tmp));
    memset(s->gnorm, 0, (size_t)s->ng * sizeof *s->gnorm);
    for (int64_t i = 0; i < s->nf; ++i) {
        const double d = tmp[i] - s->opt->lambda; /* -grad_i f(0) */
        if (d > 0.0) s->gnorm[s->gid[i]] += d * d;
    }
    for (int32_t g = 0; g < s->ng; ++g) s->gnorm[g] = sqrt(s->gnorm[g]) / s->gscale[g];
    qsort(s->gnorm, (size_t)s->ng, sizeof *s->gnorm, cmp_double);
    const int32_t h = s->ng / 2;
    const double med = s->ng % 2 ? s->gnorm[h] : 0.5 * (s->gnorm[h - 1] + s->gnorm[h]);
    s->lam = s->opt->group * med;
    s->ratio_max = med > 0.0 ? s->gnorm[s->ng - 1] / med : 0.0;
    return NS_OK;
}

/* The largest eigenvalue of M^T M (from below): power iteration from ones. */
static ns_status lipschitz(gsolver *s, double *v, double *u, double *Mv, double *L) {
    for (int64_t i = 0; i < s->nf; ++i) v[i] = 1.0;
    double est = 0.0;
    for (int k = 0; k < 8; ++k) {
        double vv = 0.0, mm = 0.0;
        for (int64_t i = 0; i < s->nf; ++i) vv += v[i] * v[i];
        TRY(mw(s, v, Mv));
        for (int64_t i = 0; i < s->nv; ++i) mm += Mv[i] * Mv[i];
        TRY(reduce(s, &mm, 1));
        if (!(vv > 0.0) || !(mm > 0.0)) break;
        est = mm / vv;
        TRY(mty(s, Mv, u));
        double un = 0.0;
        for (int64_t i = 0; i < s->nf; ++i) un += u[i] * u[i];
        un = sqrt(un);
        if (!(un > 0.0) || !isfinite(un)) break;
        for (int64_t i = 0; i < s->nf; ++i) v[i] = u[i] / un;
    }
    *L = est + s->opt->ridge;
    if (!(*L > 0.0) || !isfinite(*L))
        return ns_fail(NS_ERR_NOT_FINITE, "group fit: the step bound ||M||^2 + mu = %g is not positive and finite",
                       *L);
    return NS_OK;
}

/* The loop's top after res->updates updates, for a resumed fit (fit_state.c); the fingerprint
 * was set by ns_life_fit. */
static ns_status keep_state(gsolver *s, ns_life_fit_state_t *st, const double *x, const double *y, const double *Mx,
                            const double *My, double t, double L, double F, const double *history) {
    const int32_t u = s->res->updates;
    TRY(life_fit_state_reserve(st, (int32_t)s->nf, u, s->nv));
    memcpy(st->x, x, (size_t)s->nf * sizeof *x);
    memcpy(st->oldg, y, (size_t)s->nf * sizeof *y);
    memcpy(st->Mx, Mx, (size_t)s->nv * sizeof *Mx);
    memcpy(st->My, My, (size_t)s->nv * sizeof *My);
    if (u > 0) memcpy(st->history, history, (size_t)u * sizeof *history);
    st->solver = LIFE_STATE_GROUP;
    st->pg_start = s->res->projected_gradient_start;
    st->t = t, st->L = L, st->F = F;
    st->updates = u;
    return NS_OK;
}

static ns_status run(gsolver *s, double *w, double *history) {
    const ns_life_fit_options *opt = s->opt;
    ns_life_fit_result *res = s->res;
    const int64_t nf = s->nf, nv = s->nv;
    double *x = NULL, *xn = NULL, *y = NULL, *g = NULL, *Mx = NULL, *Mxn = NULL, *My = NULL;
    double **fib[] = {&x, &xn, &y, &g}, **vox[] = {&Mx, &Mxn, &My};
    ns_status st = NS_OK;
    for (int i = 0; i < 4 && st == NS_OK; ++i)
        if (!(*fib[i] = malloc((size_t)(nf > 0 ? nf : 1) * sizeof(double))))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "group fit: fiber vectors (%lld)", (long long)nf);
    for (int i = 0; i < 3 && st == NS_OK; ++i)
        if (!(*vox[i] = malloc((size_t)(nv > 0 ? nv : 1) * sizeof(double))))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "group fit: voxel vectors (%lld)", (long long)nv);
    const double t0 = ns_time_ms();
    /* a state to continue from (engine.c checked that it is this fit's): the loop's top after
     * `updates` updates; lambda_g is recomputed by the same product */
    const ns_life_fit_state_t *from = opt->state && opt->state->updates >= 0 ? opt->state : NULL;
    double L = 0.0, F = 0.0, fx = 0.0, t = 1.0;
    int32_t it = 0;
    if (st == NS_OK) st = group_scale(s, g);
    if (st == NS_OK && from) {
        memcpy(x, from->x, (size_t)nf * sizeof *x);
        memcpy(y, from->oldg, (size_t)nf * sizeof *y);
        memcpy(Mx, from->Mx, (size_t)nv * sizeof *Mx);
        memcpy(My, from->My, (size_t)nv * sizeof *My);
        if (history && from->updates > 0) memcpy(history, from->history, (size_t)from->updates * sizeof *history);
        L = from->L, F = from->F, t = from->t, it = from->updates;
        res->updates = from->updates;
        res->projected_gradient_start = from->pg_start;
        res->objective = F;
        res->setup_seconds = (ns_time_ms() - t0) * 1e-3;
    } else {
        if (st == NS_OK) st = lipschitz(s, x, g, Mx, &L);
        if (st == NS_OK) {
            if (opt->w0) memcpy(x, opt->w0, (size_t)nf * sizeof *x);
            else memset(x, 0, (size_t)nf * sizeof *x);
            st = mw(s, x, Mx);
        }
        if (st == NS_OK) st = smooth_value(s, x, Mx, &fx);
        if (st == NS_OK) {
            F = fx + group_penalty(s, x, NULL);
            if (!isfinite(F))
                st = ns_fail(NS_ERR_NOT_FINITE, "group fit: the starting objective is %g: the model's signal or "
                             "dictionary values are too large for double precision", F);
            memcpy(y, x, (size_t)nf * sizeof *y);
            memcpy(My, Mx, (size_t)nv * sizeof *My);
            res->objective = F;
            res->setup_seconds = (ns_time_ms() - t0) * 1e-3;
        }
    }
    while (st == NS_OK) {
        ++it;
        if (it >= opt->max_iterations) {
            res->stop = NS_LIFE_STOP_MAX_ITERATIONS;
            break;
        }
        /* gradient at y: M^T (M y - b) + mu y + lambda; f(y) on the way */
        double fy = 0.0;
        for (int64_t i = 0; i < nv; ++i) Mxn[i] = My[i] - s->b[i]; /* Mxn as scratch: the residual */
        if ((st = mty(s, Mxn, g)) != NS_OK) break;
        for (int64_t i = 0; i < nf; ++i) g[i] += opt->ridge * y[i] + opt->lambda;
        if ((st = smooth_value(s, y, My, &fy)) != NS_OK) break;
        double fn = 0.0, dd = 0.0, gd = 0.0;
        for (int tries = 0;; ++tries) { /* backtracking on L */
            if (tries == 200) {
                st = ns_fail(NS_ERR_NOT_FINITE, "group fit: no step length satisfies the descent test at update "
                             "%d (L = %g)", (int)it, L);
                break;
            }
            for (int64_t i = 0; i < nf; ++i) xn[i] = y[i] - g[i] / L;
            prox(s, xn, 1.0 / L, xn);
            if ((st = mw(s, xn, Mxn)) != NS_OK) break;
            if ((st = smooth_value(s, xn, Mxn, &fn)) != NS_OK) break;
            dd = 0.0, gd = 0.0;
            for (int64_t i = 0; i < nf; ++i) {
                const double d = xn[i] - y[i];
                dd += d * d, gd += g[i] * d;
            }
            const double q = fy + gd + 0.5 * L * dd;
            if (!isfinite(fn)) {
                st = ns_fail(NS_ERR_NOT_FINITE, "group fit: objective is %g after update %d", fn, (int)it);
                break;
            }
            if (fn <= q + 1e-12 * (fabs(fn) + fabs(q))) break;
            L *= 1.5;
        }
        if (st != NS_OK) break;
        /* the gradient mapping L (y - x+): its max norm is this solver's projected gradient */
        double gm = 0.0, turn = 0.0;
        for (int64_t i = 0; i < nf; ++i) {
            const double d = fabs(y[i] - xn[i]) * L;
            if (d > gm) gm = d;
            turn += (y[i] - xn[i]) * (xn[i] - x[i]);
        }
        if (it == 1) res->projected_gradient_start = gm;
        res->projected_gradient = gm;
        if (turn > 0.0) t = 1.0; /* adaptive restart: momentum points uphill */
        const double tn = 0.5 * (1.0 + sqrt(1.0 + 4.0 * t * t)), beta = (t - 1.0) / tn;
        t = tn;
        for (int64_t i = 0; i < nf; ++i) {
            y[i] = xn[i] + beta * (xn[i] - x[i]);
            x[i] = xn[i];
        }
        for (int64_t i = 0; i < nv; ++i) {
            My[i] = Mxn[i] + beta * (Mxn[i] - Mx[i]);
            Mx[i] = Mxn[i];
        }
        const double Fprev = F;
        F = fn + group_penalty(s, x, NULL);
        if (history) history[res->updates] = F;
        ++res->updates;
        res->objective = F;
        if (opt->progress) {
            int64_t nnz = 0;
            for (int64_t i = 0; i < nf; ++i) nnz += x[i] != 0.0;
            if (opt->progress(res->updates, F, nnz, opt->progress_context)) {
                res->stop = NS_LIFE_STOP_USER;
                break;
            }
        }
        const int stop =
            ns_life_stop_rule(opt, res->projected_gradient_start, gm, it > 1, it > 1, fabs(F - Fprev), fabs(F));
        if (stop >= 0) {
            res->stop = (ns_life_stop)stop;
            break;
        }
    }
    if (st == NS_OK) {
        res->seconds = (ns_time_ms() - t0) * 1e-3;
        res->nonzero = 0;
        for (int64_t i = 0; i < nf; ++i) res->nonzero += x[i] != 0.0;
        group_penalty(s, x, &res->groups_nonzero);
        memcpy(w, x, (size_t)nf * sizeof *w);
    }
    if (st == NS_OK && opt->state) st = keep_state(s, opt->state, x, y, Mx, My, t, L, F, history);
    for (int i = 0; i < 4; ++i) free(*fib[i]);
    for (int i = 0; i < 3; ++i) free(*vox[i]);
    return st;
}

/* G above which every group is zero at w = 0 (and stays there): the largest group's norm over the
 * median, in G's units (ns_life_penalty_max). */
ns_status ns_life_group_max(ns_life_engine_t *e, const ns_life_fit_options *opt, double *g_max) {
    gsolver s;
    memset(&s, 0, sizeof s);
    ns_life_fit_result res;
    memset(&res, 0, sizeof res);
    s.e = e, s.opt = opt, s.res = &res;
    s.nf = e->model->n_fibers;
    s.nv = (int64_t)e->model->n_theta * e->model->n_voxels;
    s.b = e->model->Y;
    s.gid = malloc((size_t)s.nf * sizeof *s.gid);
    double *tmp = malloc((size_t)s.nf * sizeof *tmp);
    ns_status st = s.gid && tmp ? make_groups(&s, opt->groups) : ns_fail(NS_ERR_OUT_OF_MEMORY, "groups");
    if (st == NS_OK) st = group_scale(&s, tmp);
    if (st == NS_OK) *g_max = s.ratio_max;
    free(tmp);
    free(s.gid);
    free(s.gscale);
    free(s.gnorm);
    return st;
}

ns_status ns_life_group_fit(ns_life_engine_t *e, const ns_life_fit_options *opt, double *w, double *history,
                            ns_life_fit_result *res) {
    gsolver s;
    memset(&s, 0, sizeof s);
    s.e = e;
    s.opt = opt;
    s.res = res;
    s.nf = e->model->n_fibers;
    s.nv = (int64_t)e->model->n_theta * e->model->n_voxels;
    s.b = e->model->Y;
    /* a resumable state reads the history: keep one when the caller has none */
    double *own_history = NULL;
    if (!history && opt->state) {
        own_history = malloc((size_t)opt->max_iterations * sizeof *own_history);
        if (!own_history) return ns_fail(NS_ERR_OUT_OF_MEMORY, "objective history");
        history = own_history;
    }
    s.gid = malloc((size_t)s.nf * sizeof *s.gid);
    ns_status st = s.gid ? make_groups(&s, opt->groups) : ns_fail(NS_ERR_OUT_OF_MEMORY, "groups");
    if (st == NS_OK) st = run(&s, w, history);
    free(own_history);
    if (st == NS_OK) res->group_lambda = s.lam, res->n_groups = s.ng;
    free(s.gid);
    free(s.gscale);
    free(s.gnorm);
    return st;
}
