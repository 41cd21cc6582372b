/* The regularisation path (ns_life_path, docs/life.md "Choosing lambda") on a small model whose
 * truth is known: a synthetic model's signal replaced by M w_true + noise, w_true non-zero on 3
 * of 10 fiber groups. Checked: the penalty's maximum gives all-zero weights and 0.98 of it does
 * not (L1 and group); along the path the non-zero weights (L1) and groups (group) never shrink
 * and the fit's RMSE on all the data never grows (every penalty); cross-validation's least
 * held-out RMSE lies inside the path, the one-SE choice is at a value >= the minimum's and within
 * one SE of it, and the chosen weights are closer to w_true than the smallest value's;
 * warm-started and cold paths agree; the CV curve against one recomputed by the test from
 * explicit fold models (the folds' fits by ns_life_fit on models built here); bad options. */
#include "check.h"
#include "test_life_common.h"

#define NG 10

typedef struct problem {
    ns_life_model_t *m;
    int32_t *groups;
    double *w_true;
    int32_t nf;
} problem;

/* Deterministic normal deviates (Box-Muller on a 64-bit LCG), independent of the library. */
static double gauss(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u1 = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    const double u2 = (double)(*s >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int P_T = 12, P_F = 300, P_G = 8;
static problem make_problem(double noise) {
    problem p = {0};
    p.m = tiny_model(P_T, 10, P_F, P_G, 0.0, 11);
    CHECK(p.m != NULL);
    if (!p.m) return p;
    p.nf = ns_life_model_n_fibers(p.m);
    p.groups = malloc((size_t)p.nf * sizeof *p.groups);
    p.w_true = calloc((size_t)p.nf, sizeof *p.w_true);
    uint64_t s = 5;
    for (int32_t f = 0; f < p.nf; ++f) {
        p.groups[f] = f % NG;
        if (p.groups[f] < 3) p.w_true[f] = 0.5 + 0.5 * (gauss(&s) > 0);
    }
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.threads = 1;
    ns_life_engine_t *e = NULL;
    CHECK_OK(ns_life_engine_create(p.m, &o, &e));
    double *Y = ns_life_model_signal(p.m);
    const int64_t ny = (int64_t)ns_life_model_n_theta(p.m) * ns_life_model_n_voxels(p.m);
    CHECK_OK(ns_life_mw(e, p.w_true, Y));
    ns_life_engine_destroy(e);
    double rms = 0.0;
    for (int64_t i = 0; i < ny; ++i) rms += Y[i] * Y[i];
    rms = sqrt(rms / ny);
    for (int64_t i = 0; i < ny; ++i) Y[i] += noise * rms * gauss(&s);
    return p;
}

static void free_problem(problem *p) {
    ns_life_model_destroy(p->m);
    free(p->groups);
    free(p->w_true);
}

static ns_life_engine_t *engine(ns_life_model_t *m) {
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.threads = 1; /* tiny products: OpenMP's start-up would dominate */
    ns_life_engine_t *e = NULL;
    CHECK_OK(ns_life_engine_create(m, &o, &e));
    return e;
}

static void tight(ns_life_fit_options *fo) {
    ns_life_fit_options_init(fo);
    fo->max_iterations = 4000;
    fo->tol_gradient = 0.0, fo->tol_objective = 0.0, fo->rtol_objective = 1e-10, fo->rtol_gradient = 1e-7;
}

static double rel_err(const double *w, const double *t, int32_t n) {
    double a = 0.0, b = 0.0;
    for (int32_t f = 0; f < n; ++f) a += (w[f] - t[f]) * (w[f] - t[f]), b += t[f] * t[f];
    return sqrt(a / b);
}

/* lambda_max: all weights zero there, some below it. */
static void maximum(problem *p, ns_life_penalty pen) {
    ns_life_engine_t *e = engine(p->m);
    ns_life_fit_options fo;
    tight(&fo);
    fo.groups = p->groups;
    double top = 0.0;
    CHECK_OK(ns_life_penalty_max(e, &fo, pen, &top));
    CHECK(top > 0.0);
    double *w = malloc((size_t)p->nf * sizeof *w);
    ns_life_fit_result r;
    for (int k = 0; k < 2; ++k) {
        const double v = k == 0 ? top : 0.98 * top;
        if (pen == NS_LIFE_PENALTY_L1) fo.lambda = v;
        else fo.group = v;
        CHECK_OK(ns_life_fit(e, &fo, w, NULL, &r));
        CHECK_MSG(k == 0 ? r.nonzero == 0 : r.nonzero > 0, "%s at %g x its maximum: %lld non-zero weights",
                  ns_life_penalty_name(pen), k == 0 ? 1.0 : 0.98, (long long)r.nonzero);
    }
    /* the L1 maximum from its definition: max_f (M^T y)_f with M from the tensor (CSR) */
    if (pen == NS_LIFE_PENALTY_L1) {
        csr c;
        CHECK(csr_build(p->m, &c));
        double *g = calloc((size_t)p->nf, sizeof *g), mx = 0.0;
        const double *Y = ns_life_model_signal(p->m);
        for (int64_t r2 = 0; r2 < c.rows; ++r2)
            for (int64_t j = c.ptr[r2]; j < c.ptr[r2 + 1]; ++j) g[c.col[j]] += c.val[j] * Y[r2];
        for (int32_t f = 0; f < p->nf; ++f) mx = fmax(mx, g[f]);
        CHECK_MSG(fabs(mx - top) <= 1e-10 * mx, "lambda_max %.17g, from M^T y %.17g", top, mx);
        free(g);
        csr_free(&c);
    }
    free(w);
    ns_life_engine_destroy(e);
}

/* Leave-one-voxel-out (folds = voxels: no randomness in the deal) recomputed: per voxel the
 * test's own training model (the other voxels), fitted by ns_life_fit from zeros, its prediction
 * of the voxel through the CSR M; the mean of the voxels' RMSEs. */
static double loo_value(problem *p, const ns_life_fit_options *base, ns_life_penalty pen, double value) {
    ns_life_model_t *m = p->m;
    const int32_t T = ns_life_model_n_theta(m), V = ns_life_model_n_voxels(m), A = ns_life_model_n_atoms(m);
    const int64_t K = ns_life_model_n_coeffs(m);
    csr c;
    CHECK(csr_build(m, &c));
    double *w = malloc((size_t)p->nf * sizeof *w), sum = 0.0;
    for (int32_t hold = 0; hold < V; ++hold) {
        int64_t nc = 0;
        for (int64_t k = 0; k < K; ++k) nc += ns_life_model_voxel(m)[k] != hold;
        ns_life_model_t *t = NULL;
        CHECK_OK(ns_life_model_create(T, A, V - 1, p->nf, nc, &t));
        memcpy(ns_life_model_dictionary(t), ns_life_model_dictionary(m), (size_t)T * A * sizeof(double));
        for (int32_t v = 0, j = 0; v < V; ++v)
            if (v != hold)
                memcpy(ns_life_model_signal(t) + (size_t)j++ * T, ns_life_model_signal(m) + (size_t)v * T,
                       (size_t)T * sizeof(double));
        for (int64_t k = 0, j = 0; k < K; ++k) {
            const int32_t v = ns_life_model_voxel(m)[k];
            if (v == hold) continue;
            ns_life_model_atom(t)[j] = ns_life_model_atom(m)[k];
            ns_life_model_voxel(t)[j] = v < hold ? v : v - 1;
            ns_life_model_fiber(t)[j] = ns_life_model_fiber(m)[k];
            ns_life_model_value(t)[j] = ns_life_model_value(m)[k];
            ++j;
        }
        ns_life_engine_t *e = engine(t);
        ns_life_fit_options fo = *base;
        if (pen == NS_LIFE_PENALTY_L1) fo.lambda = value * (double)(V - 1) / V;
        else if (pen == NS_LIFE_PENALTY_RIDGE) fo.ridge = value;
        else fo.group = value;
        CHECK_OK(ns_life_fit(e, &fo, w, NULL, NULL));
        double ss = 0.0;
        for (int64_t r = (int64_t)hold * T; r < (int64_t)(hold + 1) * T; ++r) {
            double y = 0.0;
            for (int64_t j = c.ptr[r]; j < c.ptr[r + 1]; ++j) y += c.val[j] * w[c.col[j]];
            ss += (y - ns_life_model_signal(m)[r]) * (y - ns_life_model_signal(m)[r]);
        }
        sum += sqrt(ss / T);
        ns_life_engine_destroy(e);
        ns_life_model_destroy(t);
    }
    free(w);
    csr_free(&c);
    return sum / V;
}

static void path(problem *p, ns_life_penalty pen) {
    ns_life_engine_t *e = engine(p->m);
    ns_life_fit_options fo;
    tight(&fo);
    fo.groups = p->groups;
    ns_life_path_options po;
    ns_life_path_options_init(&po);
    po.penalty = pen;
    po.n_values = 8;
    const int32_t n = po.n_values;
    ns_life_path_point pt[8], cold_pt[8];
    double *w = malloc((size_t)p->nf * sizeof *w), *all = malloc((size_t)n * p->nf * sizeof *all);
    double *cold_all = malloc((size_t)n * p->nf * sizeof *cold_all);
    ns_life_path_result r, rc;
    CHECK_OK(ns_life_path(e, &fo, &po, pt, w, all, &r));
    const char *name = ns_life_penalty_name(pen);
    CHECK(r.n_values == n && r.folds == 5 && !r.stopped);
    for (int32_t j = 0; j < n; ++j)
        printf("%s %10.4g  cv %.6f +- %.6f  rmse %.6f  nonzero %3lld groups %2d  updates %3d (folds %4d)  err %.3f\n",
               name, pt[j].value, pt[j].cv_rmse, pt[j].cv_se, pt[j].rmse, (long long)pt[j].nonzero,
               (int)pt[j].groups_nonzero, (int)pt[j].updates, (int)pt[j].cv_updates,
               rel_err(all + (size_t)j * p->nf, p->w_true, p->nf));
    printf("%s: chosen %d (%g), minimum %d\n", name, (int)r.chosen, pt[r.chosen].value, (int)r.minimum);
    for (int32_t j = 1; j < n; ++j) {
        CHECK_MSG(pt[j].value < pt[j - 1].value, "%s: values descend", name);
        CHECK_MSG(pt[j].rmse <= pt[j - 1].rmse * (1 + 1e-6), "%s: the fit's RMSE grows at %d (%g > %g)", name, (int)j,
                  pt[j].rmse, pt[j - 1].rmse);
        if (pen == NS_LIFE_PENALTY_L1)
            CHECK_MSG(pt[j].nonzero >= pt[j - 1].nonzero, "%s: non-zero weights shrink at %d", name, (int)j);
        if (pen == NS_LIFE_PENALTY_GROUP)
            CHECK_MSG(pt[j].groups_nonzero >= pt[j - 1].groups_nonzero, "%s: non-zero groups shrink at %d", name,
                      (int)j);
    }
    if (pen != NS_LIFE_PENALTY_RIDGE) CHECK_MSG(pt[0].nonzero == 0, "%s: the path starts at all zeros", name);
    /* CV: an interior minimum; the zero prediction's held-out error is the first value's for the
     * group penalty (its folds' fits are 0 there too: checked independently in the LOO case below); the choice (1se-gain) the largest value within
     * max(SE, 5 % of the gain over the zero prediction) of the minimum, every larger value outside;
     * for L1 no share of the gain (the one-SE rule) */
    CHECK_MSG(r.minimum > 0 && r.minimum < n - 1, "%s: the least CV error at %d of %d", name, (int)r.minimum, (int)n);
    if (pen == NS_LIFE_PENALTY_GROUP)
        CHECK_MSG(fabs(r.cv_zero - pt[0].cv_rmse) <= 1e-12 * r.cv_zero, "%s: zero prediction %.15g, first value %.15g",
                  name, r.cv_zero, pt[0].cv_rmse);
    CHECK(r.cv_zero > pt[r.minimum].cv_rmse);
    const double share = pen == NS_LIFE_PENALTY_L1 ? 0.0 : 0.05;
    CHECK_MSG(ns_life_cv_gain_tolerance(pen) == share, "%s: gain share %g", name, ns_life_cv_gain_tolerance(pen));
    const double tol = fmax(pt[r.minimum].cv_se, share * (r.cv_zero - pt[r.minimum].cv_rmse));
    CHECK(r.chosen <= r.minimum);
    CHECK(pt[r.chosen].cv_rmse <= pt[r.minimum].cv_rmse + tol);
    for (int32_t j = 0; j < r.chosen; ++j) CHECK(pt[j].cv_rmse > pt[r.minimum].cv_rmse + tol);
    {   /* the weights returned: ns_life_fit at the chosen value with the options given, bit for bit */
        ns_life_fit_options o = fo;
        *(pen == NS_LIFE_PENALTY_L1 ? &o.lambda : pen == NS_LIFE_PENALTY_RIDGE ? &o.ridge : &o.group) = pt[r.chosen].value;
        double *wf = malloc((size_t)p->nf * sizeof *wf);
        ns_life_fit_result fr;
        CHECK_OK(ns_life_fit(e, &o, wf, NULL, &fr));
        CHECK_MSG(memcmp(w, wf, (size_t)p->nf * sizeof *w) == 0, "%s: the path's weights are not the fit's at %g", name,
                  pt[r.chosen].value);
        free(wf);
    }
    /* against the truth: the group penalty's choice keeps exactly the true groups (0-2) and the
     * smallest value more; L1's choice keeps a larger share of true fibers than the smallest value */
    const double *wl = all + (size_t)(n - 1) * p->nf;
    if (pen == NS_LIFE_PENALTY_GROUP) {
        int kept[NG] = {0}, kept_last[NG] = {0}, n_last = 0;
        for (int32_t f = 0; f < p->nf; ++f) kept[p->groups[f]] |= w[f] > 0, kept_last[p->groups[f]] |= wl[f] > 0;
        int n_kept = 0;
        for (int g = 0; g < NG; ++g) {
            if (g < 3) CHECK_MSG(kept[g], "group: the chosen value drops the true group %d", g);
            n_kept += kept[g], n_last += kept_last[g];
        }
        CHECK_MSG(n_kept < n_last, "group: the chosen value keeps %d groups, the smallest %d", n_kept, n_last);
    }
    if (pen == NS_LIFE_PENALTY_L1) {
        int64_t a = 0, at = 0, b = 0, bt = 0;
        for (int32_t f = 0; f < p->nf; ++f)
            a += w[f] > 0, at += w[f] > 0 && p->w_true[f] > 0, b += wl[f] > 0, bt += wl[f] > 0 && p->w_true[f] > 0;
        CHECK_MSG((double)at / a > (double)bt / b, "lambda: precision of the kept fibers %.3f (chosen), %.3f (smallest)",
                  (double)at / a, (double)bt / b);
    }
    /* the minimum rule picks the minimum */
    po.rule = NS_LIFE_CV_MIN;
    CHECK_OK(ns_life_path(e, &fo, &po, cold_pt, w, NULL, &rc));
    CHECK(rc.chosen == r.minimum);
    /* warm and cold starts agree; warm needs fewer updates. The cold path with the one-SE rule: the
     * largest value within one SE of the minimum, never larger than 1se-gain's */
    po.rule = NS_LIFE_CV_ONE_SE;
    po.cold = 1;
    CHECK_OK(ns_life_path(e, &fo, &po, cold_pt, w, cold_all, &rc));
    const int32_t one_se = rc.chosen;
    CHECK(rc.minimum == r.minimum && rc.chosen >= r.chosen && rc.chosen <= rc.minimum);
    CHECK(cold_pt[rc.chosen].cv_rmse <= cold_pt[rc.minimum].cv_rmse + cold_pt[rc.minimum].cv_se);
    for (int32_t j = 0; j < rc.chosen; ++j) CHECK(cold_pt[j].cv_rmse > cold_pt[rc.minimum].cv_rmse + cold_pt[rc.minimum].cv_se);
    double worst = 0.0, scale = 0.0, fworst = 0.0;
    for (int32_t j = 0; j < n; ++j) fworst = fmax(fworst, fabs(pt[j].objective - cold_pt[j].objective) / pt[j].objective);
    for (size_t i = 0; i < (size_t)n * p->nf; ++i) worst = fmax(worst, fabs(all[i] - cold_all[i])), scale = fmax(scale, fabs(all[i]));
    for (int32_t j = 0; j < n; ++j)
        CHECK_MSG(fabs(pt[j].cv_rmse - cold_pt[j].cv_rmse) <= 1e-5 * pt[j].cv_rmse, "%s: warm/cold CV at %d: %g %g",
                  name, (int)j, pt[j].cv_rmse, cold_pt[j].cv_rmse);
    printf("%s: warm %lld updates, cold %lld; weights differ by %.2e of max |w|, objectives by %.2e\n", name,
           (long long)r.updates, (long long)rc.updates, worst / scale, fworst);
    CHECK_MSG(fworst <= 1e-7, "%s: warm and cold objectives differ by %g relative", name, fworst);
    CHECK_MSG(worst <= 5e-3 * scale, "%s: warm and cold weights differ by %g (max |w| %g)", name, worst, scale);
    CHECK_MSG(r.updates < rc.updates, "%s: warm starts take %lld updates, cold %lld", name, (long long)r.updates,
              (long long)rc.updates);
    /* the relaxed criterion (refit without the penalty on each fold fit's kept fibers): it does
     * not reward shrinkage, so it picks a value at least as large as the plain one-SE criterion */
    if (pen != NS_LIFE_PENALTY_RIDGE) {
        ns_life_path_options ro = po;
        ro.cold = 0, ro.refit = 1, ro.rule = NS_LIFE_CV_ONE_SE;
        ns_life_path_point rp[8];
        CHECK_OK(ns_life_path(e, &fo, &ro, rp, w, NULL, &rc));
        int kept[NG] = {0}, n_kept = 0;
        for (int32_t f = 0; f < p->nf; ++f) kept[p->groups[f]] |= w[f] > 0;
        for (int g = 0; g < NG; ++g) n_kept += kept[g];
        printf("%s: refit criterion chose %d (%g; %lld non-zero, %d groups), minimum %d\n", name, (int)rc.chosen,
               rp[rc.chosen].value, (long long)rp[rc.chosen].nonzero, n_kept, (int)rc.minimum);
        for (int32_t j = 0; j < n; ++j) printf("   %10.4g  cv %.6f +- %.6f\n", rp[j].value, rp[j].cv_rmse, rp[j].cv_se);
        CHECK(rp[rc.chosen].value >= pt[one_se].value);
        if (pen == NS_LIFE_PENALTY_GROUP)
            for (int g = 0; g < NG; ++g) CHECK_MSG(kept[g] == (g < 3), "group, refit: group %d %s", g, kept[g] ? "kept" : "dropped");
    }
    /* leave-one-voxel-out (K = voxels, no randomness) against the test's own fold models */
    if (pen == NS_LIFE_PENALTY_L1) {
        ns_life_path_options lo = po;
        const double vals[1] = {pt[4].value};
        lo.values = vals, lo.n_values = 1, lo.cold = 1;
        lo.folds = ns_life_model_n_voxels(p->m);
        {
            CHECK_OK(ns_life_path(e, &fo, &lo, cold_pt, w, NULL, &rc));
            /* the zero prediction's held-out error: the mean over voxels of each voxel's signal RMS */
            const double *Y = ns_life_model_signal(p->m);
            const int32_t T = ns_life_model_n_theta(p->m), V = ns_life_model_n_voxels(p->m);
            double zero = 0.0;
            for (int32_t v = 0; v < V; ++v) {
                double ss = 0.0;
                for (int32_t i = 0; i < T; ++i) ss += Y[(size_t)v * T + i] * Y[(size_t)v * T + i];
                zero += sqrt(ss / T) / V;
            }
            CHECK_MSG(fabs(rc.cv_zero - zero) <= 1e-12 * zero, "LOO zero prediction %.15g, recomputed %.15g", rc.cv_zero,
                      zero);
            for (int k = 0; k < 1; ++k) {
                const double ref = loo_value(p, &fo, pen, cold_pt[k].value);
                CHECK_MSG(fabs(cold_pt[k].cv_rmse - ref) <= 1e-6 * ref, "LOO CV at %g: %.12g, recomputed %.12g",
                          cold_pt[k].value, cold_pt[k].cv_rmse, ref);
            }
        }
    }
    free(w), free(all), free(cold_all);
    ns_life_engine_destroy(e);
}

static void bad_options(problem *p) {
    ns_life_engine_t *e = engine(p->m);
    ns_life_fit_options fo;
    tight(&fo);
    ns_life_path_options po;
    ns_life_path_options_init(&po);
    ns_life_path_point pt[8];
    double *w = malloc((size_t)p->nf * sizeof *w);
    ns_life_path_result r;
    CHECK_FAILS(ns_life_path(e, &fo, &po, pt, w, NULL, &r), NS_ERR_INVALID_ARGUMENT, "groups");
    po.penalty = NS_LIFE_PENALTY_RIDGE;
    fo.preconditioner = 1;
    CHECK_FAILS(ns_life_path(e, &fo, &po, pt, w, NULL, &r), NS_ERR_INVALID_ARGUMENT, "preconditioner");
    fo.preconditioner = 0;
    po.folds = ns_life_model_n_voxels(p->m) + 1;
    CHECK_FAILS(ns_life_path(e, &fo, &po, pt, w, NULL, &r), NS_ERR_INVALID_ARGUMENT, "folds");
    po.folds = 5;
    const double bad[2] = {0.1, -1.0};
    po.values = bad, po.n_values = 2;
    CHECK_FAILS(ns_life_path(e, &fo, &po, pt, w, NULL, &r), NS_ERR_INVALID_ARGUMENT, "values[1]");
    po.values = NULL, po.n_values = 1;
    CHECK_FAILS(ns_life_path(e, &fo, &po, pt, w, NULL, &r), NS_ERR_INVALID_ARGUMENT, "n_values");
    ns_life_penalty pen;
    CHECK_FAILS(ns_life_penalty_from_name("l2", &pen), NS_ERR_INVALID_ARGUMENT, "l2");
    CHECK_OK(ns_life_penalty_from_name("group", &pen));
    CHECK(pen == NS_LIFE_PENALTY_GROUP);
    ns_life_cv_rule rule;
    CHECK_FAILS(ns_life_cv_rule_from_name("median", &rule), NS_ERR_INVALID_ARGUMENT, "median");
    for (int k = 0; k < 3; ++k) {
        CHECK_OK(ns_life_cv_rule_from_name(ns_life_cv_rule_name((ns_life_cv_rule)k), &rule));
        CHECK(rule == (ns_life_cv_rule)k);
    }
    CHECK(strcmp(ns_life_cv_rule_name(NS_LIFE_CV_ONE_SE_GAIN), "1se-gain") == 0);
    po.rule = (ns_life_cv_rule)3, po.n_values = 3;
    CHECK_FAILS(ns_life_path(e, &fo, &po, pt, w, NULL, &r), NS_ERR_INVALID_ARGUMENT, "rule");
    po.rule = NS_LIFE_CV_ONE_SE_GAIN;
    /* no cross-validation: the smallest value */
    po.n_values = 3, po.folds = 0;
    CHECK_OK(ns_life_path(e, &fo, &po, pt, w, NULL, &r));
    CHECK(r.chosen == 2 && r.minimum == -1 && isnan(pt[0].cv_rmse));
    free(w);
    ns_life_engine_destroy(e);
}

int main(int argc, char **argv) {
    double nz = 1.0;
    if (argc > 4) P_T = atoi(argv[1]), P_F = atoi(argv[2]), P_G = atoi(argv[3]), nz = atof(argv[4]);
    problem p = make_problem(nz);
    if (!p.m) return check_summary("test_life_path");
    printf("model: %d voxels, %d fibers, %lld coefficients\n", ns_life_model_n_voxels(p.m), (int)p.nf,
           (long long)ns_life_model_n_coeffs(p.m));
    maximum(&p, NS_LIFE_PENALTY_L1);
    maximum(&p, NS_LIFE_PENALTY_GROUP);
    path(&p, NS_LIFE_PENALTY_L1);
    path(&p, NS_LIFE_PENALTY_GROUP);
    path(&p, NS_LIFE_PENALTY_RIDGE);
    bad_options(&p);
    free_problem(&p);
    return check_summary("test_life_path");
}
