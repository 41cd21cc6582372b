/* SBBNNLS: against an independent active-set NNLS (Lawson-Hanson with
 * LAPACK's dgels on the dense M) on small problems, objective within 1e-6
 * relative, with and without ENCODE's preconditioner; the KKT conditions
 * with an L1 weight; every CPU variant and thread count gives the same
 * weights within 1e-9 after 50 iterations; w0, history and callbacks. */
#include "check.h"
#include "test_life_common.h"

extern void dgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a,
                   const int *lda, double *b, const int *ldb, double *work, const int *lwork,
                   int *info);

/* Least squares on the columns in `passive` of the dense column-major A. */
static int ls_passive(const double *A, int rows, const double *b, const int *passive, int np,
                      double *z) {
    double *sub = malloc((size_t)rows * np * sizeof *sub), *rhs = malloc((size_t)rows * sizeof *rhs);
    for (int j = 0; j < np; ++j) memcpy(sub + (size_t)j * rows, A + (size_t)passive[j] * rows, (size_t)rows * sizeof *sub);
    memcpy(rhs, b, (size_t)rows * sizeof *rhs);
    int one = 1, info = 0, lwork = -1;
    double q;
    dgels_("N", &rows, &np, &one, sub, &rows, rhs, &rows, &q, &lwork, &info);
    lwork = (int)q;
    double *work = malloc((size_t)lwork * sizeof *work);
    dgels_("N", &rows, &np, &one, sub, &rows, rhs, &rows, work, &lwork, &info);
    for (int j = 0; j < np; ++j) z[j] = rhs[j];
    free(sub), free(rhs), free(work);
    return info;
}

/* Lawson & Hanson (1974), Algorithm NNLS. */
static void lawson_hanson(const double *A, int rows, int cols, const double *b, double *x) {
    int *inP = calloc((size_t)cols, sizeof *inP), *P = malloc((size_t)cols * sizeof *P);
    double *w = malloc((size_t)cols * sizeof *w), *r = malloc((size_t)rows * sizeof *r);
    double *z = malloc((size_t)cols * sizeof *z), *zz = malloc((size_t)cols * sizeof *zz);
    memset(x, 0, (size_t)cols * sizeof *x);
    const double tol = 1e-13;
    for (int outer = 0; outer < 10 * cols; ++outer) {
        for (int i = 0; i < rows; ++i) {
            double s = b[i];
            for (int j = 0; j < cols; ++j) s -= A[(size_t)j * rows + i] * x[j];
            r[i] = s;
        }
        int t = -1;
        double best = tol;
        for (int j = 0; j < cols; ++j) {
            double s = 0.0;
            for (int i = 0; i < rows; ++i) s += A[(size_t)j * rows + i] * r[i];
            w[j] = s;
            if (!inP[j] && s > best) best = s, t = j;
        }
        if (t < 0) break;
        inP[t] = 1;
        for (int inner = 0; inner < 10 * cols; ++inner) {
            int np = 0;
            for (int j = 0; j < cols; ++j)
                if (inP[j]) P[np++] = j;
            ls_passive(A, rows, b, P, np, zz);
            for (int j = 0; j < cols; ++j) z[j] = 0.0;
            int all_pos = 1;
            for (int j = 0; j < np; ++j) {
                z[P[j]] = zz[j];
                if (zz[j] <= 0) all_pos = 0;
            }
            if (all_pos) {
                memcpy(x, z, (size_t)cols * sizeof *x);
                break;
            }
            double alpha = INFINITY;
            for (int j = 0; j < np; ++j) {
                const int k = P[j];
                if (z[k] <= 0) {
                    const double a = x[k] / (x[k] - z[k]);
                    if (a < alpha) alpha = a;
                }
            }
            for (int j = 0; j < cols; ++j) x[j] += alpha * (z[j] - x[j]);
            for (int j = 0; j < cols; ++j)
                if (inP[j] && x[j] <= tol) inP[j] = 0, x[j] = 0.0;
        }
    }
    free(inP), free(P), free(w), free(r), free(z), free(zz);
}

static double objective(const csr *c, const double *w, const double *b) {
    double *y = malloc((size_t)c->rows * sizeof *y);
    csr_mw(c, w, y);
    double s = 0.0;
    for (int64_t i = 0; i < c->rows; ++i) s += (y[i] - b[i]) * (y[i] - b[i]);
    free(y);
    return 0.5 * s;
}

static ns_status fit(ns_life_model_t *m, ns_life_variant v, int threads, const ns_life_fit_options *fo,
                     double *w, double *hist, ns_life_fit_result *res) {
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.mw_variant = o.mty_variant = v;
    o.threads = threads;
    ns_life_engine_t *e = NULL;
    ns_status s = ns_life_engine_create(m, &o, &e);
    if (s == NS_OK) s = ns_life_fit(e, fo, w, hist, res);
    ns_life_engine_destroy(e);
    return s;
}

static int stop_after(int32_t it, double f, int64_t nnz, void *ctx) {
    (void)f, (void)nnz;
    return it >= *(int *)ctx;
}

static void against_nnls(uint64_t seed, double noise, int precond) {
    ns_life_model_t *m = tiny_model(16, 6, 25, 6, noise, seed);
    CHECK(m != NULL);
    if (!m) return;
    csr c;
    CHECK(csr_build(m, &c));
    const int rows = (int)c.rows, cols = (int)c.cols;
    double *A = calloc((size_t)rows * cols, sizeof *A);
    for (int r = 0; r < rows; ++r)
        for (int64_t j = c.ptr[r]; j < c.ptr[r + 1]; ++j) A[(size_t)c.col[j] * rows + r] += c.val[j];
    const double *b = ns_life_model_signal(m);
    double *x_lh = malloc((size_t)cols * sizeof *x_lh), *w = malloc((size_t)cols * sizeof *w);
    lawson_hanson(A, rows, cols, b, x_lh);
    const double f_lh = objective(&c, x_lh, b);

    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 20000;
    fo.tol_gradient = 1e-13;
    fo.tol_objective = 0.0;
    fo.rtol_objective = fo.rtol_gradient = 0.0; /* ENCODE's absolute stops only */
    fo.preconditioner = precond;
    ns_life_fit_result res;
    double *hist = malloc((size_t)fo.max_iterations * sizeof *hist);
    CHECK_OK(fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fo, w, hist, &res));
    const double f_sbb = objective(&c, w, b);
    int active = 0;
    for (int j = 0; j < cols; ++j) active += x_lh[j] == 0.0;
    printf("seed %llu noise %.2f precond %d: %d x %d, %d at the bound; LH %.12g, SBBNNLS %.12g "
           "(%d updates, %s)\n", (unsigned long long)seed, noise, precond, rows, cols, active, f_lh,
           f_sbb, (int)res.updates, ns_life_stop_name(res.stop));
    CHECK_MSG(fabs(f_sbb - f_lh) <= 1e-6 * f_lh + 1e-14, "objective %.15g vs NNLS %.15g", f_sbb, f_lh);
    /* the defaults stop on a relative tolerance, close to the optimum */
    ns_life_fit_options fd;
    ns_life_fit_options_init(&fd);
    fd.preconditioner = precond;
    ns_life_fit_result rd;
    CHECK_OK(fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fd, w, NULL, &rd));
    const double f_def = objective(&c, w, b);
    printf("  defaults: %d updates, %s, objective %.12g (%.2e above NNLS)\n", (int)rd.updates, ns_life_stop_name(rd.stop),
           f_def, (f_def - f_lh) / (f_lh > 0 ? f_lh : 1));
    CHECK_MSG(rd.stop != NS_LIFE_STOP_MAX_ITERATIONS && rd.projected_gradient_start > 0 &&
              (rd.stop != NS_LIFE_STOP_GRADIENT_RELATIVE || rd.projected_gradient < 1e-3 * rd.projected_gradient_start),
              "default stop: %s", ns_life_stop_name(rd.stop));
    CHECK_MSG(f_def - f_lh <= 1e-2 * f_lh + 1e-6 * rd.projected_gradient_start, "default fit %.15g vs NNLS %.15g", f_def, f_lh);
    fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fo, w, hist, &res); /* back to the tight weights for the checks below */
    CHECK(fabs(res.objective - f_sbb) <= 1e-9 * f_sbb + 1e-14);
    if (res.updates > 0) CHECK(hist[res.updates - 1] == res.objective);
    for (int j = 0; j < cols; ++j) CHECK(w[j] >= 0.0);
    free(A), free(x_lh), free(w), free(hist);
    csr_free(&c);
    ns_life_model_destroy(m);
}

/* KKT of min 0.5 ||M w - b||^2 + lambda sum w, w >= 0: g = M^T (M w - b) + lambda,
 * g_i = 0 where w_i > 0 and g_i >= 0 where w_i = 0. */
static void kkt_lambda(double lambda) {
    ns_life_model_t *m = tiny_model(16, 6, 25, 6, 0.2, 21);
    if (!m) return;
    csr c;
    CHECK(csr_build(m, &c));
    const int64_t F = c.cols;
    double *w = malloc((size_t)F * sizeof *w), *g = malloc((size_t)F * sizeof *g);
    double *r = malloc((size_t)c.rows * sizeof *r);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 20000;
    fo.tol_gradient = 1e-12;
    fo.tol_objective = 0.0;
    fo.rtol_objective = fo.rtol_gradient = 0.0; /* ENCODE's absolute stops only */
    fo.lambda = lambda;
    ns_life_fit_result res;
    CHECK_OK(fit(m, NS_LIFE_COEFF_ATOM, 1, &fo, w, NULL, &res));
    csr_mw(&c, w, r);
    const double *b = ns_life_model_signal(m);
    for (int64_t i = 0; i < c.rows; ++i) r[i] -= b[i];
    csr_mty(&c, r, g);
    double worst = 0.0, scale = 0.0;
    int64_t nnz = 0;
    for (int64_t i = 0; i < F; ++i) {
        g[i] += lambda;
        scale = fmax(scale, fabs(g[i] - lambda) + lambda);
        if (w[i] > 0) worst = fmax(worst, fabs(g[i])), ++nnz;
        else worst = fmax(worst, fmax(0.0, -g[i]));
    }
    printf("lambda %g: %lld of %lld weights non-zero, KKT violation %.3g (scale %.3g)\n", lambda,
           (long long)nnz, (long long)F, worst, scale);
    CHECK_MSG(worst <= 1e-9 * scale, "KKT violation %.3g", worst);
    free(w), free(g), free(r);
    csr_free(&c);
    ns_life_model_destroy(m);
}


/* The ridge (Tikhonov) option against Lawson-Hanson on the augmented problem
 * [M; sqrt(mu) I] w ~ [b; 0], mu = R ||M 1||^2 / cols computed here from the
 * dense M: min 0.5 ||M w - b||^2 + 0.5 mu ||w||^2 over w >= 0. */
static void against_ridge(uint64_t seed, double noise, int precond, double R) {
    ns_life_model_t *m = tiny_model(16, 6, 25, 6, noise, seed);
    CHECK(m != NULL);
    if (!m) return;
    csr c;
    CHECK(csr_build(m, &c));
    const int rows = (int)c.rows, cols = (int)c.cols, ra = rows + cols;
    double *A = calloc((size_t)ra * cols, sizeof *A);
    for (int r = 0; r < rows; ++r)
        for (int64_t j = c.ptr[r]; j < c.ptr[r + 1]; ++j) A[(size_t)c.col[j] * ra + r] += c.val[j];
    double m1 = 0.0; /* ||M 1||^2 */
    for (int r = 0; r < rows; ++r) {
        double s = 0.0;
        for (int j = 0; j < cols; ++j) s += A[(size_t)j * ra + r];
        m1 += s * s;
    }
    const double mu = R * m1 / cols;
    for (int j = 0; j < cols; ++j) A[(size_t)j * ra + rows + j] = sqrt(mu);
    const double *b0 = ns_life_model_signal(m);
    double *b = calloc((size_t)ra, sizeof *b);
    memcpy(b, b0, (size_t)rows * sizeof *b);
    double *x_lh = malloc((size_t)cols * sizeof *x_lh), *w = malloc((size_t)cols * sizeof *w),
           *w_nnls = malloc((size_t)cols * sizeof *w_nnls);
    lawson_hanson(A, ra, cols, b, x_lh);
    double ww = 0.0;
    for (int j = 0; j < cols; ++j) ww += x_lh[j] * x_lh[j];
    const double f_lh = objective(&c, x_lh, b0) + 0.5 * mu * ww;

    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 20000;
    fo.tol_gradient = 1e-13;
    fo.tol_objective = 0.0;
    fo.rtol_objective = fo.rtol_gradient = 0.0;
    fo.preconditioner = precond;
    ns_life_fit_result res;
    CHECK_OK(fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fo, w_nnls, NULL, &res)); /* no ridge */
    CHECK(res.ridge_mu == 0.0);
    fo.ridge = R;
    CHECK_OK(fit(m, NS_LIFE_COEFF_ATOM, 2, &fo, w, NULL, &res));
    ww = 0.0;
    double diff = 0.0, scale = 0.0, moved = 0.0;
    for (int j = 0; j < cols; ++j) {
        ww += w[j] * w[j];
        diff = fmax(diff, fabs(w[j] - x_lh[j]));
        scale = fmax(scale, fabs(x_lh[j]));
        moved = fmax(moved, fabs(w[j] - w_nnls[j]));
    }
    const double f_sbb = objective(&c, w, b0) + 0.5 * mu * ww;
    printf("ridge R %g (mu %.6g, engine %.6g) seed %llu precond %d: LH %.12g, SBBNNLS %.12g (%d updates), "
           "max |w - w_LH| %.2e of %.2e, moved %.2e from NNLS\n", R, mu, res.ridge_mu, (unsigned long long)seed,
           precond, f_lh, f_sbb, (int)res.updates, diff, scale, moved);
    CHECK_MSG(fabs(res.ridge_mu - mu) <= 1e-12 * mu, "mu %.17g vs %.17g", res.ridge_mu, mu);
    CHECK_MSG(fabs(f_sbb - f_lh) <= 1e-9 * f_lh, "ridge objective %.15g vs LH %.15g", f_sbb, f_lh);
    CHECK_MSG(fabs(res.objective - f_sbb) <= 1e-9 * f_sbb, "reported objective %.15g vs %.15g", res.objective, f_sbb);
    CHECK_MSG(diff <= 1e-6 * scale, "weights differ from LH by %.3g", diff);
    CHECK_MSG(moved > 1e-3 * scale, "the ridge did not change the weights (%.3g)", moved);
    for (int j = 0; j < cols; ++j) CHECK(w[j] >= 0.0);
    /* bad values */
    fo.ridge = -1.0;
    CHECK(fit(m, NS_LIFE_COEFF_ATOM, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "ridge") != NULL);
    fo.ridge = NAN;
    CHECK(fit(m, NS_LIFE_COEFF_ATOM, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    free(A), free(b), free(x_lh), free(w), free(w_nnls);
    csr_free(&c);
    ns_life_model_destroy(m);
}

/* ns_life_roc_auc on ROCs small enough to check by hand. */
static void roc_auc_hand(void) {
    /* positives 0.9, 0.8, 0.3; negatives 0.8, 0, 0: pairs won 3 + (0.5 + 2) + 2 = 7.5 of 9 */
    const double s1[] = {0.9, 0.8, 0.8, 0.3, 0.0, 0.0};
    const int32_t l1[] = {1, 0, 1, 1, 0, 0};
    double a = -1;
    CHECK_OK(ns_life_roc_auc(s1, l1, 6, &a));
    CHECK_MSG(fabs(a - 7.5 / 9.0) < 1e-15, "AUC %.17g, expected 7.5/9", a);
    const double s2[] = {1, 2, 3, 4};
    const int32_t up[] = {0, 0, 1, 1}, down[] = {1, 1, 0, 0};
    CHECK_OK(ns_life_roc_auc(s2, up, 4, &a));
    CHECK(a == 1.0);
    CHECK_OK(ns_life_roc_auc(s2, down, 4, &a));
    CHECK(a == 0.0);
    const double tied[] = {0, 0, 0, 0, 0}; /* all weights pruned: no information */
    const int32_t l3[] = {1, 0, 1, 1, 0};
    CHECK_OK(ns_life_roc_auc(tied, l3, 5, &a));
    CHECK(a == 0.5);
    /* 1 positive above 2 of 3 negatives, tied with the third: (2 + 0.5) / 3 */
    const double s4[] = {5, 5, 1, 2};
    const int32_t l4[] = {1, 0, 0, 0};
    CHECK_OK(ns_life_roc_auc(s4, l4, 4, &a));
    CHECK(fabs(a - 2.5 / 3.0) < 1e-15);
    const int32_t one_class[] = {1, 1, 1, 1}, bad_label[] = {1, 0, 2, 0};
    CHECK(ns_life_roc_auc(s2, one_class, 4, &a) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "both classes") != NULL);
    CHECK(ns_life_roc_auc(s2, bad_label, 4, &a) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "entry 2") != NULL);
    const double nan_score[] = {1, NAN, 3, 4};
    CHECK(ns_life_roc_auc(nan_score, up, 4, &a) == NS_ERR_INVALID_ARGUMENT);
}

static void variants_agree(void) {
    ns_life_model_t *m = tiny_model(96, 10, 200, 8, 0.1, 33);
    CHECK(m != NULL);
    if (!m) return;
    const int64_t F = ns_life_model_n_fibers(m);
    double *ref = malloc((size_t)F * sizeof *ref), *w = malloc((size_t)F * sizeof *w);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 51; /* 50 updates */
    fo.tol_gradient = 0.0;
    fo.tol_objective = 0.0;
    fo.rtol_objective = fo.rtol_gradient = 0.0; /* ENCODE's absolute stops only */
    ns_life_fit_result res;
    CHECK_OK(fit(m, NS_LIFE_NAIVE, 1, &fo, ref, NULL, &res));
    CHECK(res.updates == 50);
    CHECK(res.mw_calls == 2 * 50 + 1 && res.mty_calls == 50 + 25 + 1);
    CHECK(res.setup_seconds >= 0.0 && res.setup_seconds <= res.seconds);
    for (int pre = 0; pre <= 1; ++pre) {
        fo.preconditioner = pre;
        if (pre) CHECK_OK(fit(m, NS_LIFE_NAIVE, 1, &fo, ref, NULL, &res));
        for (int v = NS_LIFE_NAIVE; v < NS_LIFE_VARIANT_COUNT; ++v)
            for (int threads = 1; threads <= 2; ++threads) {
                CHECK_OK(fit(m, (ns_life_variant)v, threads, &fo, w, NULL, &res));
                const double e = rel_inf(w, ref, F);
                CHECK_MSG(e <= 1e-9, "precond %d %s threads %d: weights differ by %.3g", pre,
                          ns_life_variant_name((ns_life_variant)v), threads, e);
            }
    }
    /* w0 = the result of 50 updates, then 10 more == 60 updates from zero */
    fo.preconditioner = 0;
    CHECK_OK(fit(m, NS_LIFE_NAIVE, 1, &fo, ref, NULL, &res));
    double *w60 = malloc((size_t)F * sizeof *w60);
    fo.max_iterations = 61;
    CHECK_OK(fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fo, w60, NULL, &res));
    fo.w0 = ref;
    fo.max_iterations = 11;
    CHECK_OK(fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fo, w, NULL, &res));
    CHECK(res.updates == 10);
    /* a restart loses the lagged gradient, so only the objective is comparable */
    fo.w0 = NULL;
    /* the progress callback stops the solver */
    int stop = 7;
    fo.max_iterations = 500;
    fo.progress = stop_after;
    fo.progress_context = &stop;
    CHECK_OK(fit(m, NS_LIFE_COEFF_VOXEL, 2, &fo, w, NULL, &res));
    CHECK(res.updates == 7 && res.stop == NS_LIFE_STOP_USER);
    /* bad options */
    fo.progress = NULL;
    fo.max_iterations = 0;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    fo.max_iterations = 10;
    fo.lambda = -1.0;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    fo.lambda = 0.0;
    ref[3] = -1.0;
    fo.w0 = ref;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "w0[3]") != NULL);
    free(ref), free(w), free(w60);
    ns_life_model_destroy(m);
}

/* The device option: NS_DEVICE_CURRENT by default, below it refused,
 * ignored by the CPU backend. */
static void device_option(void) {
    ns_life_options o;
    ns_life_options_init(&o);
    CHECK(o.device == NS_DEVICE_CURRENT);
    ns_life_model_t *m = tiny_model(16, 6, 25, 6, 0.0, 5);
    CHECK(m != NULL);
    if (!m) return;
    ns_life_engine_t *e = NULL;
    o.device = -2;
    CHECK(ns_life_engine_create(m, &o, &e) == NS_ERR_INVALID_ARGUMENT && e == NULL);
    CHECK(strstr(ns_last_error(), "device = -2") != NULL);
    o.device = 7;
    o.backend = NS_BACKEND_CPU;
    CHECK_OK(ns_life_engine_create(m, &o, &e));
    ns_life_engine_destroy(e);
    ns_life_model_destroy(m);
}


/* ---------------------------------------------------------- group sparsity */
/* The group-sparse objective (COMMIT2-style, ns_life_fit_options.group) against
 * a reference written here: dense M from the CSR, the step 1 / L with L the
 * largest eigenvalue of M^T M + mu from 2,000 power iterations on the dense
 * matrix (x 1.01), and 4,000 plain proximal gradient steps (ISTA: no
 * momentum, no backtracking); lambda_g recomputed from its definition. */
typedef struct gref {
    int rows, cols;
    double *A; /* column-major rows x cols */
    const double *b;
    double mu, l1, lam;
    int ng;
    const int *gid; /* compact group per column */
    double *gs;     /* sqrt |g| */
} gref;

static void dense_grad(const gref *p, const double *w, double *g, double *f) {
    double *r = malloc((size_t)p->rows * sizeof *r);
    for (int i = 0; i < p->rows; ++i) r[i] = -p->b[i];
    for (int j = 0; j < p->cols; ++j)
        for (int i = 0; i < p->rows; ++i) r[i] += p->A[(size_t)j * p->rows + i] * w[j];
    double rr = 0.0, ww = 0.0, sw = 0.0;
    for (int i = 0; i < p->rows; ++i) rr += r[i] * r[i];
    for (int j = 0; j < p->cols; ++j) {
        double s = 0.0;
        for (int i = 0; i < p->rows; ++i) s += p->A[(size_t)j * p->rows + i] * r[i];
        g[j] = s + p->mu * w[j] + p->l1;
        ww += w[j] * w[j], sw += w[j];
    }
    if (f) {
        double *n2 = calloc((size_t)p->ng, sizeof *n2), pen = 0.0;
        for (int j = 0; j < p->cols; ++j) n2[p->gid[j]] += w[j] * w[j];
        for (int k = 0; k < p->ng; ++k) pen += p->gs[k] * sqrt(n2[k]);
        *f = 0.5 * rr + 0.5 * p->mu * ww + p->l1 * sw + p->lam * pen;
        free(n2);
    }
    free(r);
}

static void ista(const gref *p, double *w, int steps) {
    /* L by power iteration on the dense M^T M */
    double *v = malloc((size_t)p->cols * sizeof *v), *u = malloc((size_t)p->cols * sizeof *u);
    double *mv = malloc((size_t)p->rows * sizeof *mv), L = 0.0;
    for (int j = 0; j < p->cols; ++j) v[j] = 1.0 + 0.01 * j;
    for (int it = 0; it < 2000; ++it) {
        for (int i = 0; i < p->rows; ++i) mv[i] = 0.0;
        for (int j = 0; j < p->cols; ++j)
            for (int i = 0; i < p->rows; ++i) mv[i] += p->A[(size_t)j * p->rows + i] * v[j];
        double n = 0.0;
        for (int j = 0; j < p->cols; ++j) {
            double s = 0.0;
            for (int i = 0; i < p->rows; ++i) s += p->A[(size_t)j * p->rows + i] * mv[i];
            u[j] = s, n += s * s;
        }
        n = sqrt(n);
        L = n; /* ||M^T M v|| with ||v|| = 1 after the first step */
        for (int j = 0; j < p->cols; ++j) v[j] = u[j] / n;
    }
    L = 1.01 * (L + p->mu);
    double *g = malloc((size_t)p->cols * sizeof *g), *n2 = malloc((size_t)p->ng * sizeof *n2);
    for (int j = 0; j < p->cols; ++j) w[j] = 0.0;
    for (int it = 0; it < steps; ++it) {
        dense_grad(p, w, g, NULL);
        for (int k = 0; k < p->ng; ++k) n2[k] = 0.0;
        for (int j = 0; j < p->cols; ++j) {
            w[j] = fmax(0.0, w[j] - g[j] / L);
            n2[p->gid[j]] += w[j] * w[j];
        }
        for (int j = 0; j < p->cols; ++j) {
            const double n = sqrt(n2[p->gid[j]]), k = p->lam * p->gs[p->gid[j]] / L;
            w[j] = n > k ? w[j] * (1.0 - k / n) : 0.0;
        }
    }
    free(v), free(u), free(mv), free(g), free(n2);
}

static int cmp_d(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* KKT of the group problem at w: a zero group has ||[-grad_g]_+|| <= lam sqrt|g|; in a
 * non-zero group grad_i + lam sqrt|g| w_i / ||w_g|| = 0 where w_i > 0 and grad_i >= 0
 * where w_i = 0. Returns the worst violation relative to `scale`; counts the groups. */
static double group_kkt(const gref *p, const double *w, double scale, int *zero_groups, int *nonzero_groups) {
    double *g = malloc((size_t)p->cols * sizeof *g), *n2 = calloc((size_t)p->ng, sizeof *n2),
           *neg = calloc((size_t)p->ng, sizeof *neg);
    dense_grad(p, w, g, NULL);
    for (int j = 0; j < p->cols; ++j) {
        n2[p->gid[j]] += w[j] * w[j];
        if (g[j] < 0) neg[p->gid[j]] += g[j] * g[j];
    }
    double worst = 0.0;
    int z = 0, nz = 0;
    for (int k = 0; k < p->ng; ++k) {
        if (n2[k] == 0.0) ++z, worst = fmax(worst, sqrt(neg[k]) - p->lam * p->gs[k]);
        else ++nz;
    }
    for (int j = 0; j < p->cols; ++j) {
        const int k = p->gid[j];
        if (n2[k] == 0.0) continue;
        if (w[j] > 0) worst = fmax(worst, fabs(g[j] + p->lam * p->gs[k] * w[j] / sqrt(n2[k])));
        else worst = fmax(worst, -g[j]);
    }
    *zero_groups = z, *nonzero_groups = nz;
    free(g), free(n2), free(neg);
    return worst / scale;
}

static void against_group(uint64_t seed, double R, double G, double l1, int singletons) {
    ns_life_model_t *m = tiny_model(16, 6, 30, 6, 0.3, seed);
    CHECK(m != NULL);
    if (!m) return;
    csr c;
    CHECK(csr_build(m, &c));
    gref p = {0};
    p.rows = (int)c.rows, p.cols = (int)c.cols, p.b = ns_life_model_signal(m), p.l1 = l1;
    p.A = calloc((size_t)p.rows * p.cols, sizeof *p.A);
    for (int r = 0; r < p.rows; ++r)
        for (int64_t j = c.ptr[r]; j < c.ptr[r + 1]; ++j) p.A[(size_t)c.col[j] * p.rows + r] += c.val[j];
    double m1 = 0.0;
    for (int r = 0; r < p.rows; ++r) {
        double s = 0.0;
        for (int j = 0; j < p.cols; ++j) s += p.A[(size_t)j * p.rows + r];
        m1 += s * s;
    }
    p.mu = R * m1 / p.cols;
    /* groups: fiber j in group (7 j) mod 5 (ids 10, 20, ...: not compact), every 7th fiber none (-1);
     * with `singletons` every fiber alone */
    int32_t *groups = malloc((size_t)p.cols * sizeof *groups);
    int *gid = malloc((size_t)p.cols * sizeof *gid);
    for (int j = 0; j < p.cols; ++j) groups[j] = singletons || j % 7 == 3 ? -1 : 10 * ((7 * j) % 5 + 1);
    p.ng = singletons ? 0 : 5;
    for (int j = 0; j < p.cols; ++j) gid[j] = groups[j] < 0 ? p.ng++ : groups[j] / 10 - 1;
    p.gid = gid;
    p.gs = calloc((size_t)p.ng, sizeof *p.gs);
    for (int j = 0; j < p.cols; ++j) p.gs[gid[j]] += 1.0;
    for (int k = 0; k < p.ng; ++k) p.gs[k] = sqrt(p.gs[k]);
    /* lambda_g = G x median over groups of ||[-grad_g(0)]_+|| / sqrt |g| */
    double *g0 = malloc((size_t)p.cols * sizeof *g0), *crit = calloc((size_t)p.ng, sizeof *crit);
    double *zero = calloc((size_t)p.cols, sizeof *zero);
    dense_grad(&p, zero, g0, NULL);
    for (int j = 0; j < p.cols; ++j)
        if (g0[j] < 0) crit[gid[j]] += g0[j] * g0[j];
    for (int k = 0; k < p.ng; ++k) crit[k] = sqrt(crit[k]) / p.gs[k];
    qsort(crit, (size_t)p.ng, sizeof *crit, cmp_d);
    p.lam = G * (p.ng % 2 ? crit[p.ng / 2] : 0.5 * (crit[p.ng / 2 - 1] + crit[p.ng / 2]));

    double *w_ref = malloc((size_t)p.cols * sizeof *w_ref), *w = malloc((size_t)p.cols * sizeof *w);
    ista(&p, w_ref, 4000);
    double f_ref = 0.0;
    dense_grad(&p, w_ref, g0, &f_ref);

    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 20000;
    fo.tol_gradient = 0.0, fo.tol_objective = 0.0, fo.rtol_objective = 0.0;
    fo.rtol_gradient = 1e-12;
    fo.ridge = R, fo.group = G, fo.groups = groups, fo.lambda = l1;
    ns_life_fit_result res;
    double *hist = malloc((size_t)fo.max_iterations * sizeof *hist);
    CHECK_OK(fit(m, NS_LIFE_VOXEL_VOXEL, 2, &fo, w, hist, &res));
    double f_eng = 0.0, scale = 0.0, diff = 0.0, wmax = 0.0;
    dense_grad(&p, w, g0, &f_eng);
    for (int j = 0; j < p.cols; ++j) {
        scale = fmax(scale, fabs(g0[j] - p.mu * w[j] - l1) + p.lam);
        diff = fmax(diff, fabs(w[j] - w_ref[j]));
        wmax = fmax(wmax, fabs(w_ref[j]));
    }
    int z = 0, nz = 0, zr = 0, nzr = 0;
    const double kkt = group_kkt(&p, w, scale, &z, &nz), kkt_ref = group_kkt(&p, w_ref, scale, &zr, &nzr);
    printf("group G %g (lambda_g %.6g, engine %.6g) R %g l1 %g seed %llu%s: %d groups, %d zero (reference %d); "
           "objective %.12g vs ISTA %.12g; max |w - w_ISTA| %.2e of %.2e; KKT %.2e (ISTA %.2e); %d updates, %s\n",
           G, p.lam, res.group_lambda, R, l1, (unsigned long long)seed, singletons ? " singletons" : "", p.ng, z, zr,
           f_eng, f_ref, diff, wmax, kkt, kkt_ref, (int)res.updates, ns_life_stop_name(res.stop));
    CHECK_MSG(fabs(res.group_lambda - p.lam) <= 1e-10 * p.lam, "lambda_g %.17g vs %.17g", res.group_lambda, p.lam);
    CHECK(res.n_groups == p.ng && res.groups_nonzero == nz);
    CHECK_MSG(fabs(f_eng - f_ref) <= 1e-9 * f_ref, "objective %.15g vs ISTA %.15g", f_eng, f_ref);
    CHECK_MSG(fabs(res.objective - f_eng) <= 1e-9 * f_eng, "reported objective %.15g vs %.15g", res.objective, f_eng);
    CHECK(res.updates > 0 && hist[res.updates - 1] == res.objective);
    CHECK_MSG(kkt <= 1e-7, "KKT violation %.3g", kkt);
    CHECK_MSG(kkt_ref <= 1e-6, "the reference is not converged: KKT %.3g", kkt_ref);
    if (R > 0) CHECK_MSG(diff <= 1e-6 * wmax, "weights differ from ISTA by %.3g", diff); /* strongly convex */
    /* both branches of the KKT conditions are exercised */
    CHECK_MSG(z >= 1 && nz >= 1, "%d zero and %d non-zero groups", z, nz);
    for (int j = 0; j < p.cols; ++j) CHECK(w[j] >= 0.0);
    if (singletons && R > 0) {
        /* every fiber alone: the group penalty is lambda_g sum w, i.e. SBBNNLS's L1 */
        ns_life_fit_options fs = fo;
        fs.group = 0.0, fs.groups = NULL, fs.lambda = l1 + p.lam;
        fs.rtol_gradient = 0.0, fs.tol_gradient = 1e-13;
        double *w_sbb = malloc((size_t)p.cols * sizeof *w_sbb);
        ns_life_fit_result rs;
        CHECK_OK(fit(m, NS_LIFE_NAIVE, 1, &fs, w_sbb, NULL, &rs));
        const double e = rel_inf(w, w_sbb, p.cols);
        printf("  singletons vs SBBNNLS with lambda = lambda_g: weights within %.2e\n", e);
        CHECK_MSG(e <= 1e-6, "singleton groups vs SBBNNLS L1: %.3g", e);
        free(w_sbb);
    }
    /* the same with every variant and thread count, and from a start w0 */
    for (int v = NS_LIFE_NAIVE; v < NS_LIFE_VARIANT_COUNT; v += 3) {
        double *w2 = malloc((size_t)p.cols * sizeof *w2);
        CHECK_OK(fit(m, (ns_life_variant)v, v == NS_LIFE_NAIVE ? 1 : 2, &fo, w2, NULL, &res));
        CHECK_MSG(rel_inf(w2, w, p.cols) <= 1e-6, "%s: %.3g", ns_life_variant_name((ns_life_variant)v),
                  rel_inf(w2, w, p.cols));
        free(w2);
    }
    fo.w0 = w_ref;
    CHECK_OK(fit(m, NS_LIFE_COEFF_ATOM, 2, &fo, w, NULL, &res));
    CHECK(fabs(res.objective - f_ref) <= 1e-9 * f_ref);
    free(p.A), free(p.gs), free(groups), free(gid), free(g0), free(crit), free(zero), free(w_ref), free(w), free(hist);
    csr_free(&c);
    ns_life_model_destroy(m);
}

/* Bad group options, each with its message. */
static void group_bad_input(void) {
    ns_life_model_t *m = tiny_model(16, 6, 30, 6, 0.3, 41);
    CHECK(m != NULL);
    if (!m) return;
    const int32_t F = ns_life_model_n_fibers(m);
    int32_t *groups = calloc((size_t)F, sizeof *groups);
    double *w = malloc((size_t)F * sizeof *w);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.groups = groups;
    ns_life_fit_result res;
    fo.group = -1.0;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "group = -1") != NULL);
    fo.group = NAN;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    fo.group = 1.0;
    fo.groups = NULL;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "options.groups") != NULL);
    fo.groups = groups;
    fo.preconditioner = 1;
    CHECK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "preconditioner") != NULL);
    fo.preconditioner = 0;
    /* one group for all (at G = 0.5 not zero): runs; the progress callback stops it */
    fo.group = 0.5;
    int stop = 3;
    fo.progress = stop_after;
    fo.progress_context = &stop;
    CHECK_OK(fit(m, NS_LIFE_NAIVE, 1, &fo, w, NULL, &res));
    CHECK(res.updates == 3 && res.stop == NS_LIFE_STOP_USER && res.n_groups == 1);
    CHECK(res.mty_calls == 1 + 8 + 3 && res.mw_calls >= 8 + 1 + 3);
    free(groups), free(w);
    ns_life_model_destroy(m);
}

int main(void) {
    device_option();
    against_nnls(1, 0.0, 0);
    against_nnls(2, 0.3, 0);
    against_nnls(3, 0.3, 1);
    against_nnls(4, 1.0, 0);
    kkt_lambda(0.05);
    roc_auc_hand();
    against_ridge(5, 0.3, 0, 0.1);
    against_ridge(6, 1.0, 0, 1.0);
    against_ridge(7, 0.3, 1, 0.1);
    variants_agree();
    against_group(51, 0.1, 1.0, 0.0, 0);
    against_group(52, 0.2, 0.5, 0.0, 0);
    against_group(53, 0.0, 1.0, 0.0, 0);
    against_group(54, 0.1, 1.0, 0.01, 0);
    against_group(55, 0.1, 0.7, 0.0, 1);
    group_bad_input();
    return check_summary("test_life_fit");
}
