/* SBBNNLS exactly as ENCODE's bbnnls runs it (papers/README.md):
 *
 *   x = w0; (f, g) = grad(x); oldg = g; it = 0
 *   loop: it += 1
 *     pg = max |g_i| over {x_i > 0 or g_i < 0};  stop if pg < tolg
 *     stop if it > 2 and |f(it-1) - f(it-2)| < tolo;  stop if it >= maxit
 *     (and, ours: stop if pg < rtolg pg(start) or |f(it-1) - f(it-2)| < rtolo f(it-1))
 *     gp = {x_i == 0 and g_i > 0};  oldg[gp] = 0
 *     Ag = M oldg
 *     it even: alpha = <oldg, oldg> / <Ag, Ag>
 *     it odd:  q = M^T Ag; q[gp] = 0; alpha = <Ag, Ag> / <q, q>
 *     x = max(x - alpha g, 0); oldg = g; (f, g) = grad(x)
 *
 * with f = 0.5 ||M x - y||^2 and g = M^T (M x - y) + lambda (ReAl-LiFE).
 * A ridge (Tikhonov) weight mu (opt->ridge: absolute here, ns_life_fit turns
 * the relative option into mu) runs the same iteration on the augmented
 * matrix [M; sqrt(mu) I]: f += 0.5 mu ||w||^2, g += mu w, and in the step
 * ||Ag||^2 += mu ||oldg||^2, q += mu oldg. Under the preconditioner
 * (w = x / h) the identity is diag(1 / h).
 * ENCODE's preconditioner solves for x = h w with M' = M diag(1 / h),
 * h_f = sum over f's coefficients of value^2 ||D(:, atom)||^2, and returns
 * w = x / h. Written once over ns_life_vec_ops (host or device vectors).
 *
 * A resumable state (opt->state, fit_state.c) is the loop's top after `updates` updates: x,
 * oldg, the history and pg(start); g = grad(x) is recomputed from x with the same products,
 * so the resumed iterations repeat the uninterrupted fit's arithmetic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "life/life_impl.h"

typedef struct solver {
    const ns_life_vec_ops *o;
    const ns_life_fit_options *opt;
    double *x, *g, *oldg, *q, *t, *hinv; /* fiber vectors */
    double *nridge;                      /* -mu hinv^2 (or -mu): the ridge's diagonal, negated
                                            (the vector operations have a -= but no +=) */
    double *b, *r, *Ag;                  /* voxel vectors */
    double *stage;                       /* host copy of a fiber vector for the reduce hook
                                            (device vectors only; NULL otherwise) */
    ns_life_fit_result *res;
} solver;

#define TRY(call)                              \
    do {                                       \
        ns_status try_s_ = (call);             \
        if (try_s_ != NS_OK) return try_s_;    \
    } while (0)

/* Sum host scalars over processes (voxel-partitioned models); a no-op for
 * one process. */
static ns_status reduce(const solver *s, double *v, int64_t n) {
    return s->opt->reduce ? s->opt->reduce(v, n, s->opt->reduce_context) : NS_OK;
}

/* Sum a fiber vector over processes. The hook takes host arrays: device
 * vectors go through the host stage (download, sum, upload). The download
 * comes before the hook, so a failing copy is local work that the hook's
 * agreement (docs/mpi.md) has not started yet; an upload failure surfaces
 * at the next sum's agreement or the caller's. */
static ns_status reduce_fiber(const solver *s, double *v) {
    const ns_life_vec_ops *o = s->o;
    if (!s->opt->reduce) return NS_OK;
    if (!s->stage) return reduce(s, v, o->n_fib);
    TRY(o->download(o->ctx, s->stage, v, o->n_fib));
    TRY(reduce(s, s->stage, o->n_fib));
    return o->upload(o->ctx, v, s->stage, o->n_fib);
}

/* y = M' v, with M' = M diag(hinv) under the preconditioner. */
static ns_status apply_m(solver *s, const double *v, double *y) {
    const ns_life_vec_ops *o = s->o;
    ++s->res->mw_calls;
    if (!s->hinv) return o->mw(o->ctx, v, y);
    TRY(o->copy(o->ctx, s->t, v, o->n_fib));
    TRY(o->mul(o->ctx, s->t, s->hinv, o->n_fib));
    return o->mw(o->ctx, s->t, y);
}

/* v = M'^T y (summed over processes). */
static ns_status apply_mt(solver *s, const double *y, double *v) {
    const ns_life_vec_ops *o = s->o;
    ++s->res->mty_calls;
    TRY(o->mty(o->ctx, y, v));
    TRY(reduce_fiber(s, v));
    if (s->hinv) TRY(o->mul(o->ctx, v, s->hinv, o->n_fib));
    return NS_OK;
}

static ns_status grad(solver *s, double *f) {
    const ns_life_vec_ops *o = s->o;
    TRY(apply_m(s, s->x, s->r));
    TRY(o->sub(o->ctx, s->r, s->b, o->n_vox));
    double rr = 0.0;
    TRY(o->dot(o->ctx, s->r, s->r, o->n_vox, &rr));
    TRY(reduce(s, &rr, 1));
    *f = 0.5 * rr;
    TRY(apply_mt(s, s->r, s->g));
    if (s->opt->lambda != 0.0) TRY(o->add_scalar(o->ctx, s->g, s->opt->lambda, o->n_fib));
    if (s->nridge) { /* g += mu w (w-space diagonal), f += 0.5 mu ||w||^2 */
        double tx = 0.0;
        TRY(o->copy(o->ctx, s->t, s->x, o->n_fib));
        TRY(o->mul(o->ctx, s->t, s->nridge, o->n_fib));
        TRY(o->sub(o->ctx, s->g, s->t, o->n_fib));
        TRY(o->dot(o->ctx, s->t, s->x, o->n_fib, &tx));
        *f -= 0.5 * tx;
    }
    return NS_OK;
}

/* -<v, nridge v> = mu ||v||^2 in w space (0 without a ridge); uses s->t. */
static ns_status ridge_norm(solver *s, const double *v, double *r) {
    const ns_life_vec_ops *o = s->o;
    *r = 0.0;
    if (!s->nridge) return NS_OK;
    TRY(o->copy(o->ctx, s->t, v, o->n_fib));
    TRY(o->mul(o->ctx, s->t, s->nridge, o->n_fib));
    TRY(o->dot(o->ctx, s->t, v, o->n_fib, r));
    *r = -*r;
    return NS_OK;
}

/* The step length from the lagged gradient; *ok = 0 if undefined. */
static ns_status bb_step(solver *s, int32_t it, double *alpha, int *ok) {
    const ns_life_vec_ops *o = s->o;
    TRY(o->mask(o->ctx, s->oldg, s->x, s->g, o->n_fib));
    TRY(apply_m(s, s->oldg, s->Ag));
    double num = 0.0, den = 0.0, rn = 0.0;
    TRY(ridge_norm(s, s->oldg, &rn)); /* the ridge rows of [M; sqrt(mu) I] oldg */
    if (it % 2 == 0) {
        TRY(o->dot(o->ctx, s->oldg, s->oldg, o->n_fib, &num));
        TRY(o->dot(o->ctx, s->Ag, s->Ag, o->n_vox, &den));
        TRY(reduce(s, &den, 1));
        den += rn;
    } else {
        TRY(o->dot(o->ctx, s->Ag, s->Ag, o->n_vox, &num));
        TRY(reduce(s, &num, 1));
        num += rn;
        TRY(apply_mt(s, s->Ag, s->q));
        if (s->nridge) { /* q += mu oldg */
            TRY(o->copy(o->ctx, s->t, s->oldg, o->n_fib));
            TRY(o->mul(o->ctx, s->t, s->nridge, o->n_fib));
            TRY(o->sub(o->ctx, s->q, s->t, o->n_fib));
        }
        TRY(o->mask(o->ctx, s->q, s->x, s->g, o->n_fib));
        TRY(o->dot(o->ctx, s->q, s->q, o->n_fib, &den));
    }
    *alpha = num / den;
    *ok = den > 0.0 && isfinite(*alpha);
    return NS_OK;
}

/* The state at the loop's top (before bb_step masks oldg): what the next iteration needs.
 * The fingerprint was set by ns_life_fit. */
static ns_status keep_state(solver *s, const double *history) {
    const ns_life_vec_ops *o = s->o;
    ns_life_fit_state_t *st = s->opt->state;
    const int32_t u = s->res->updates;
    TRY(life_fit_state_reserve(st, (int32_t)o->n_fib, u, 0));
    st->solver = LIFE_STATE_SBBNNLS;
    TRY(o->download(o->ctx, st->x, s->x, o->n_fib));
    TRY(o->download(o->ctx, st->oldg, s->oldg, o->n_fib));
    if (u > 0) memcpy(st->history, history, (size_t)u * sizeof *history);
    st->pg_start = s->res->projected_gradient_start;
    st->updates = u;
    return NS_OK;
}

static ns_status run(solver *s, double *w, double *history) {
    const ns_life_vec_ops *o = s->o;
    const ns_life_fit_options *opt = s->opt;
    ns_life_fit_result *res = s->res;
    const int64_t nf = o->n_fib;
    TRY(o->upload_signal(o->ctx, s->b));
    double *h_host = NULL;
    if (opt->preconditioner) {
        TRY(o->precond(o->ctx, s->hinv));
    }
    if (s->nridge) { /* -mu (x hinv^2 under the preconditioner: 0.5 mu ||x / h||^2) */
        TRY(o->fill(o->ctx, s->nridge, -opt->ridge, nf));
        if (s->hinv) {
            TRY(o->mul(o->ctx, s->nridge, s->hinv, nf));
            TRY(o->mul(o->ctx, s->nridge, s->hinv, nf));
        }
    }
    const ns_life_fit_state_t *from = opt->state && opt->state->updates >= 0 ? opt->state : NULL;
    if (from) {
        TRY(o->upload(o->ctx, s->x, from->x, nf));
        TRY(o->upload(o->ctx, s->oldg, from->oldg, nf));
    } else if (opt->w0) {
        /* x = h w0 under the preconditioner */
        h_host = malloc((size_t)nf * sizeof *h_host);
        if (!h_host) return ns_fail(NS_ERR_OUT_OF_MEMORY, "w0");
        ns_status st = NS_OK;
        if (s->hinv) st = o->download(o->ctx, h_host, s->hinv, nf);
        for (int64_t i = 0; st == NS_OK && i < nf; ++i)
            h_host[i] = s->hinv ? opt->w0[i] / h_host[i] : opt->w0[i];
        if (st == NS_OK) st = o->upload(o->ctx, s->x, h_host, nf);
        free(h_host);
        if (st != NS_OK) return st;
    } else {
        TRY(o->fill(o->ctx, s->x, 0.0, nf));
    }
    const double t0 = ns_time_ms();
    double f = 0.0;
    TRY(grad(s, &f));
    /* Finite model values can still overflow in the products (entries near
     * 1e154 and above): refuse instead of stopping with an objective of inf. */
    if (!isfinite(f))
        return ns_fail(NS_ERR_NOT_FINITE,
                       "SBBNNLS: the starting objective 0.5||y - Mw||^2 is %g: the model's signal or "
                       "dictionary values are too large for double precision", f);
    if (from) {
        /* the history so far; the objective is the last entry's (the same grad(x) gave it) */
        if (from->updates > 0) memcpy(history, from->history, (size_t)from->updates * sizeof *history);
        res->updates = from->updates;
        res->projected_gradient_start = from->pg_start;
    } else {
        TRY(o->copy(o->ctx, s->oldg, s->g, nf));
    }
    res->objective = f;
    const int32_t first = res->updates + 1; /* the loop's top after `updates` updates */
    int32_t it = first - 1;
    for (;;) {
        ++it;
        double pg = 0.0;
        TRY(o->pgnorm(o->ctx, s->x, s->g, nf, &pg));
        if (!isfinite(pg))
            return ns_fail(NS_ERR_NOT_FINITE, "SBBNNLS: the projected gradient is %g after %d updates: the "
                           "model's values are too large for double precision", pg, (int)res->updates);
        res->projected_gradient = pg;
        /* pgnorm returns a scalar, so device work has finished here */
        if (it == first) {
            res->setup_seconds = (ns_time_ms() - t0) * 1e-3;
            if (!from) res->projected_gradient_start = pg;
        }
        /* the objective's change over the last two updates, where recorded */
        const int compare = it > 2 && history;
        const int stop = ns_life_stop_rule(opt, res->projected_gradient_start, pg, it > 1, compare,
                                           compare ? fabs(history[it - 2] - history[it - 3]) : 0.0,
                                           compare ? history[it - 2] : 0.0);
        if (stop >= 0) {
            res->stop = (ns_life_stop)stop;
            break;
        }
        if (it >= opt->max_iterations) {
            res->stop = NS_LIFE_STOP_MAX_ITERATIONS;
            break;
        }
        double alpha = 0.0;
        int ok = 0;
        TRY(bb_step(s, it, &alpha, &ok));
        if (!ok) {
            res->stop = NS_LIFE_STOP_ZERO_STEP;
            break;
        }
        TRY(o->update(o->ctx, s->x, s->g, alpha, nf));
        TRY(o->copy(o->ctx, s->oldg, s->g, nf));
        TRY(grad(s, &f));
        if (!isfinite(f)) return ns_fail(NS_ERR_NOT_FINITE, "SBBNNLS: objective is %g after update %d", f, (int)it);
        if (history) history[res->updates] = f;
        ++res->updates;
        res->objective = f;
        if (opt->progress) {
            int64_t nnz = 0;
            TRY(o->nnz(o->ctx, s->x, nf, &nnz));
            if (opt->progress(res->updates, f, nnz, opt->progress_context)) {
                res->stop = NS_LIFE_STOP_USER;
                break;
            }
        }
    }
    res->seconds = (ns_time_ms() - t0) * 1e-3;
    if (opt->state) TRY(keep_state(s, history));
    TRY(o->nnz(o->ctx, s->x, nf, &res->nonzero));
    if (s->hinv) TRY(o->mul(o->ctx, s->x, s->hinv, nf)); /* w = x / h */
    return o->download(o->ctx, w, s->x, nf);
}

ns_status ns_life_sbbnnls(const ns_life_vec_ops *o, const ns_life_fit_options *opt, double *w,
                          double *history, ns_life_fit_result *res) {
    solver s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.opt = opt;
    s.res = res;
    /* The objective test and a resumable state read the history: keep one when the caller has none. */
    double *own_history = NULL;
    if (!history && (opt->tol_objective > 0 || opt->rtol_objective > 0 || opt->state)) {
        own_history = malloc((size_t)opt->max_iterations * sizeof *own_history);
        if (!own_history) return ns_fail(NS_ERR_OUT_OF_MEMORY, "objective history");
        history = own_history;
    }
    double **fib[] = {&s.x, &s.g, &s.oldg, &s.q, &s.t, &s.hinv, &s.nridge};
    double **vox[] = {&s.b, &s.r, &s.Ag};
    ns_status st = NS_OK;
    for (int i = 0; i < 7 && st == NS_OK; ++i) {
        if ((i == 5 && !opt->preconditioner) || (i == 6 && !(opt->ridge > 0))) continue;
        st = o->alloc(o->ctx, o->n_fib, fib[i]);
    }
    for (int i = 0; i < 3 && st == NS_OK; ++i) st = o->alloc(o->ctx, o->n_vox, vox[i]);
    if (st == NS_OK && opt->reduce && o->host_alloc) st = o->host_alloc(o->ctx, o->n_fib, &s.stage);
    if (st == NS_OK) st = run(&s, w, history);
    /* device vectors first: their release waits for queued copies from the stage */
    for (int i = 0; i < 7; ++i)
        if (*fib[i]) o->release(o->ctx, *fib[i]);
    for (int i = 0; i < 3; ++i)
        if (*vox[i]) o->release(o->ctx, *vox[i]);
    if (s.stage) o->host_release(o->ctx, s.stage);
    free(own_history);
    return st;
}
