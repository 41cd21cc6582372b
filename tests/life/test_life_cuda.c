/* LiFE on the GPU: every CUDA variant of both products against the explicit
 * CSR matrix (relative error <= 1e-12) and the adjoint identity; SBBNNLS with
 * every variant gives the CPU reference's weights within 1e-9 after 50
 * updates (with and without the preconditioner); a model larger than the
 * allowed device memory fails with NS_ERR_DEVICE_MEMORY. Skips without a GPU.
 * Each GPU fit starts while the legacy default stream is busy: an engine that
 * put any of its memsets or copies there (instead of on its own non-blocking
 * stream) would have them land late, e.g. zeroing the signal after it was
 * uploaded; that fault was seen only with several processes on the GPU until
 * this made it deterministic. */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "test_life_common.h"
#include "test_tmpdir.h"

#ifdef NS_HAVE_CUDA
#include <cuda_runtime_api.h>
static void *busy_buf;
static const size_t busy_bytes = (size_t)1 << 30;
/* About 8 x 1 GiB of memset on the legacy default stream: several ms of work
 * queued ahead of anything else issued there. */
static void busy_default_stream(void) {
    if (!busy_buf && cudaMalloc(&busy_buf, busy_bytes) != cudaSuccess) {
        busy_buf = NULL;
        (void)cudaGetLastError();
        return;
    }
    for (int i = 0; i < 8; ++i) (void)cudaMemsetAsync(busy_buf, i, busy_bytes, 0);
}
static void busy_free(void) {
    if (busy_buf) cudaFree(busy_buf);
    busy_buf = NULL;
}
#else
static void busy_default_stream(void) {}
static void busy_free(void) {}
#endif

static ns_status make_engine(ns_life_model_t *m, ns_backend b, ns_life_variant v, size_t limit,
                             ns_life_engine_t **e) {
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = b;
    o.mw_variant = o.mty_variant = v;
    o.device_memory_limit = limit;
    return ns_life_engine_create(m, &o, e);
}

/* float16 round to nearest even of a float (|f| < 65,520), as a double. */
static double half_round(float f) {
    if (f == 0.0f) return 0.0;
    int e = 0;
    (void)frexp(f, &e); /* 2^(e-1) <= |f| < 2^e */
    int qe = e - 1 - 10;
    if (qe < -24) qe = -24; /* subnormals: quantum 2^-24 */
    const double q = ldexp(1.0, qe);
    return nearbyint(f / q) * q;
}

/* The dictionary as voxel-f32d (float32) or voxel-f16d (float16 of the
 * float32 of D x 2^-k, max |D| x 2^-k in [2^14, 2^15), times 2^k) use it. */
static void round_dictionary(double *D, int64_t nd, ns_life_variant v) {
    double mx = 0.0;
    for (int64_t i = 0; i < nd; ++i)
        if (fabs(D[i]) > mx) mx = fabs(D[i]);
    int ex = 0;
    (void)frexp(mx, &ex);
    for (int64_t i = 0; i < nd; ++i)
        D[i] = v == NS_LIFE_VOXEL_F32D ? (double)(float)D[i]
                                       : ldexp(half_round((float)ldexp(D[i], 15 - ex)), ex - 15);
}

static void reduced_products(ns_life_model_t *m, const char *label, ns_life_variant v, const double *w,
                             const double *y, const double *yr, const double *wr, double exact, double tol) {
    const char *name = ns_life_variant_name(v);
    const int64_t F = ns_life_model_n_fibers(m), NY = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
    double *D = ns_life_model_dictionary(m);
    const int64_t nd = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_atoms(m);
    double *keep = malloc((size_t)nd * 8), *yq = malloc((size_t)NY * 8), *wq = malloc((size_t)F * 8);
    double *yo = malloc((size_t)NY * 8), *wo = malloc((size_t)F * 8);
    memcpy(keep, D, (size_t)nd * 8);
    round_dictionary(D, nd, v);
    csr cq;
    CHECK(csr_build(m, &cq));
    memcpy(D, keep, (size_t)nd * 8);
    csr_mw(&cq, w, yq);
    csr_mty(&cq, y, wq);
    csr_free(&cq);
    ns_life_engine_t *e = NULL;
    CHECK_OK(make_engine(m, NS_BACKEND_CUDA, v, 0, &e));
    if (e) {
        for (int64_t i = 0; i < NY; ++i) yo[i] = NAN;
        for (int64_t i = 0; i < F; ++i) wo[i] = NAN;
        CHECK_OK(ns_life_mw(e, w, yo));
        CHECK_OK(ns_life_mty(e, y, wo));
        CHECK_MSG(rel_inf(yo, yq, NY) <= exact, "%s %s Mw vs the rounded dictionary: %.3g", label, name, rel_inf(yo, yq, NY));
        CHECK_MSG(rel_inf(wo, wq, F) <= exact, "%s %s MTy vs the rounded dictionary: %.3g", label, name, rel_inf(wo, wq, F));
        CHECK_MSG(rel_inf(yo, yr, NY) <= tol, "%s %s Mw: %.3g", label, name, rel_inf(yo, yr, NY));
        CHECK_MSG(rel_inf(wo, wr, F) <= tol, "%s %s MTy: %.3g", label, name, rel_inf(wo, wr, F));
        printf("%s %s: products within %.2e / %.2e (Mw / MTy) of the rounded dictionary's, %.2e / %.2e of "
               "the float64 ones\n", label, name, rel_inf(yo, yq, NY), rel_inf(wo, wq, F), rel_inf(yo, yr, NY),
               rel_inf(wo, wr, F));
        double ms[3];
        CHECK_OK(ns_life_time_product(e, NS_LIFE_MTY, v, y, wo, 3, ms));
        CHECK(rel_inf(wo, wq, F) <= exact);
        ns_life_engine_destroy(e);
    }
    /* the CPU does not offer it */
    e = NULL;
    CHECK(make_engine(m, NS_BACKEND_CPU, v, 0, &e) == NS_ERR_UNSUPPORTED);
    CHECK(e == NULL);
    free(keep), free(yq), free(wq), free(yo), free(wo);
}

/* An approximating variant v on the engine e: its products within tol of the float64 ones (yr,
 * wr), the two products the adjoints of one operator (<M~ w, y> = <w, M~^T y> within 1e-5 of the
 * sums of magnitudes, float32 sums), a timed run giving the same product; the CPU does not offer
 * v. Destroys e. */
static void near_products(ns_life_model_t *m, ns_life_engine_t *e, ns_life_variant v, const char *label,
                          const double *w, const double *y, const double *yr, const double *wr, double tol) {
    const char *name = ns_life_variant_name(v);
    const int64_t F = ns_life_model_n_fibers(m), NY = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
    double *yo = malloc((size_t)NY * 8), *wo = malloc((size_t)F * 8);
    for (int64_t i = 0; i < NY; ++i) yo[i] = NAN;
    for (int64_t i = 0; i < F; ++i) wo[i] = NAN;
    CHECK_OK(ns_life_mw(e, w, yo));
    CHECK_OK(ns_life_mty(e, y, wo));
    const double a = rel_inf(yo, yr, NY), b = rel_inf(wo, wr, F);
    CHECK_MSG(a <= tol, "%s %s Mw: %.3g", label, name, a);
    CHECK_MSG(b <= tol, "%s %s MTy: %.3g", label, name, b);
    double l = 0.0, r = 0.0, sl = 0.0, sr = 0.0;
    for (int64_t i = 0; i < NY; ++i) l += yo[i] * y[i], sl += fabs(yo[i] * y[i]);
    for (int64_t i = 0; i < F; ++i) r += w[i] * wo[i], sr += fabs(w[i] * wo[i]);
    CHECK_MSG(fabs(l - r) <= 1e-5 * (sl > sr ? sl : sr), "%s %s adjoint: %.17g vs %.17g", label, name, l, r);
    printf("%s %s: products within %.2e / %.2e (Mw / MTy) of the float64 ones, adjoint %.2e\n", label, name, a, b,
           fabs(l - r) / (sl > sr ? sl : sr));
    double ms[3];
    CHECK_OK(ns_life_time_product(e, NS_LIFE_MW, v, w, yo, 3, ms));
    CHECK(rel_inf(yo, yr, NY) <= tol);
    CHECK_OK(ns_life_time_product(e, NS_LIFE_MTY, v, y, wo, 3, ms));
    CHECK(rel_inf(wo, wr, F) <= tol);
    ns_life_engine_destroy(e);
    e = NULL;
    CHECK(make_engine(m, NS_BACKEND_CPU, v, 0, &e) == NS_ERR_UNSUPPORTED);
    CHECK(e == NULL);
    free(yo), free(wo);
}

/* voxel-lr16d: the products of D ~ U C (C in float16) near the float64 ones
 * (the discarded singular values are below 2^-11 of the largest, C carries
 * float16's 2^-11 rounding) and, for a dictionary of exact rank 20 (n_theta
 * 96), although r = 32 drops two thirds of the rows. */
static void lowrank_products(ns_life_model_t *m, const char *label, const double *w, const double *y,
                             const double *yr, const double *wr) {
    ns_life_engine_t *e = NULL;
    CHECK_OK(make_engine(m, NS_BACKEND_CUDA, NS_LIFE_VOXEL_LR16D, 0, &e));
    if (e) near_products(m, e, NS_LIFE_VOXEL_LR16D, label, w, y, yr, wr, 3e-3);
}

/* voxel-sh: the columns computed from the atoms' orientations (U^T f(u), fitted to D within
 * 2^-16 of max |D| per entry) give products near the float64 ones (float32 arithmetic). A model
 * whose dictionary the basis cannot fit is refused when the engine is made (NS_ERR_UNSUPPORTED,
 * naming voxel-sh); `must` says the model is one the variant serves (ENCODE's grid with enough
 * atoms, a stick dictionary). Returns whether the engine was made. */
static int sh_products(ns_life_model_t *m, const char *label, const double *w, const double *y, const double *yr,
                       const double *wr, int must) {
    ns_life_engine_t *e = NULL;
    const ns_status st = make_engine(m, NS_BACKEND_CUDA, NS_LIFE_VOXEL_SH, 0, &e);
    if (st == NS_ERR_UNSUPPORTED && !must) {
        CHECK(e == NULL && strstr(ns_last_error(), "voxel-sh") != NULL);
        printf("%s voxel-sh: refused (%s)\n", label, ns_last_error());
        return 0;
    }
    CHECK_OK(st);
    if (!e) return 0;
    near_products(m, e, NS_LIFE_VOXEL_SH, label, w, y, yr, wr, 5e-4);
    return 1;
}

/* A model whose dictionary has exact rank 20 (n_theta 96): D = B K with B
 * (96 x 20) and K (20 x n_atoms) random. */
static ns_life_model_t *rank20_model(void) {
    ns_life_model_t *m = tiny_model(96, 12, 300, 10, 0.0, 21);
    if (!m) return NULL;
    const int32_t n = 96, A = ns_life_model_n_atoms(m);
    double *D = ns_life_model_dictionary(m), B[96 * 20];
    srand(21);
    for (int i = 0; i < n * 20; ++i) B[i] = rand() / (double)RAND_MAX - 0.5;
    for (int32_t a = 0; a < A; ++a) {
        double k[20];
        for (int j = 0; j < 20; ++j) k[j] = rand() / (double)RAND_MAX - 0.5;
        for (int i = 0; i < n; ++i) {
            double d = 0.0;
            for (int j = 0; j < 20; ++j) d += B[j * n + i] * k[j];
            D[(int64_t)a * n + i] = d;
        }
    }
    return m;
}

/* Every variant's products on `m`; must_sh: voxel-sh must serve it (sh_products). Returns
 * whether voxel-sh did. */
static int products_sh(ns_life_model_t *m, const char *label, int must_sh) {
    csr c;
    CHECK(csr_build(m, &c));
    const int64_t F = c.cols, NY = c.rows;
    double *w = malloc((size_t)F * 8), *wr = malloc((size_t)F * 8), *wo = malloc((size_t)F * 8);
    double *y = malloc((size_t)NY * 8), *yr = malloc((size_t)NY * 8), *yo = malloc((size_t)NY * 8);
    srand(5);
    for (int64_t i = 0; i < F; ++i) w[i] = rand() % 3 == 0 ? 0.0 : rand() / (double)RAND_MAX;
    for (int64_t i = 0; i < NY; ++i) y[i] = rand() / (double)RAND_MAX - 0.5;
    csr_mw(&c, w, yr);
    csr_mty(&c, y, wr);
    for (int v = NS_LIFE_NAIVE; v < NS_LIFE_VARIANT_COUNT; ++v) {
        ns_life_engine_t *e = NULL;
        CHECK_OK(make_engine(m, NS_BACKEND_CUDA, (ns_life_variant)v, 0, &e));
        if (!e) continue;
        for (int64_t i = 0; i < NY; ++i) yo[i] = NAN;
        for (int64_t i = 0; i < F; ++i) wo[i] = NAN;
        CHECK_OK(ns_life_mw(e, w, yo));
        CHECK_OK(ns_life_mty(e, y, wo));
        const double a = rel_inf(yo, yr, NY), b = rel_inf(wo, wr, F);
        CHECK_MSG(a <= 1e-12, "%s cuda %s Mw: %.3g", label, ns_life_variant_name((ns_life_variant)v), a);
        CHECK_MSG(b <= 1e-12, "%s cuda %s MTy: %.3g", label, ns_life_variant_name((ns_life_variant)v), b);
        double ms[3];
        CHECK_OK(ns_life_time_product(e, NS_LIFE_MW, (ns_life_variant)v, w, yo, 3, ms));
        CHECK(rel_inf(yo, yr, NY) <= 1e-12);
        ns_life_engine_destroy(e);
    }
    /* the reduced-precision dictionaries: the products of the dictionary rounded
       as the variant documents it, computed here on the host (voxel-f32d: float64
       arithmetic, 1e-12; voxel-f16d: float32 products, 1e-5), and near the
       float64 products */
    reduced_products(m, label, NS_LIFE_VOXEL_F32D, w, y, yr, wr, 1e-12, 1e-6);
    reduced_products(m, label, NS_LIFE_VOXEL_F16D, w, y, yr, wr, 1e-5, 2e-3);
    lowrank_products(m, label, w, y, yr, wr);
    const int sh = sh_products(m, label, w, y, yr, wr, must_sh);
    ns_life_engine_t *e = NULL;
    CHECK_OK(make_engine(m, NS_BACKEND_CUDA, NS_LIFE_AUTO, 0, &e));
    if (e) {
        CHECK(ns_life_engine_variant(e, NS_LIFE_MW) >= NS_LIFE_COEFF_ATOM);
        CHECK(ns_life_engine_variant(e, NS_LIFE_MW) < NS_LIFE_VARIANT_COUNT); /* AUTO: exact variants only */
        CHECK_OK(ns_life_mw(e, w, yo));
        CHECK(rel_inf(yo, yr, NY) <= 1e-12);
    }
    ns_life_engine_destroy(e);
    free(w), free(wr), free(wo), free(y), free(yr), free(yo);
    csr_free(&c);
    return sh;
}

static void products(ns_life_model_t *m, const char *label) { (void)products_sh(m, label, 0); }

/* fit_sh: voxel-sh must serve the model (else a refusal skips it). */
static void fits_sh(ns_life_model_t *m, int fit_sh) {
    const int64_t F = ns_life_model_n_fibers(m);
    double *ref = malloc((size_t)F * 8), *w = malloc((size_t)F * 8);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 51;
    fo.tol_gradient = fo.tol_objective = 0.0;
    fo.rtol_gradient = fo.rtol_objective = 0.0; /* 51 updates on both backends */
    for (int pre = 0; pre <= 1; ++pre) {
        fo.preconditioner = pre;
        ns_life_engine_t *e = NULL;
        ns_life_fit_result res;
        CHECK_OK(make_engine(m, NS_BACKEND_CPU, NS_LIFE_NAIVE, 0, &e));
        CHECK_OK(ns_life_fit(e, &fo, ref, NULL, &res));
        ns_life_engine_destroy(e);
        for (int v = NS_LIFE_NAIVE; v < NS_LIFE_VARIANT_COUNT; ++v) {
            e = NULL;
            CHECK_OK(make_engine(m, NS_BACKEND_CUDA, (ns_life_variant)v, 0, &e));
            if (!e) continue;
            busy_default_stream();
            CHECK_OK(ns_life_fit(e, &fo, w, NULL, &res));
            CHECK(res.updates == 50);
            const double err = rel_inf(w, ref, F);
            CHECK_MSG(err <= 1e-9, "precond %d cuda %s: weights differ by %.3g", pre,
                      ns_life_variant_name((ns_life_variant)v), err);
            ns_life_engine_destroy(e);
        }
        /* the reduced-precision dictionaries: the same 50 updates, weights near
           the float64 fit */
        const ns_life_variant red[4] = {NS_LIFE_VOXEL_F32D, NS_LIFE_VOXEL_F16D, NS_LIFE_VOXEL_LR16D,
                                        NS_LIFE_VOXEL_SH};
        const double tol[4] = {1e-3, 2e-3, 5e-3, 5e-3};
        for (int r = 0; r < 4; ++r) {
            e = NULL;
            const ns_status st = make_engine(m, NS_BACKEND_CUDA, red[r], 0, &e);
            if (red[r] == NS_LIFE_VOXEL_SH && st == NS_ERR_UNSUPPORTED && !fit_sh) continue;
            CHECK_OK(st);
            if (!e) continue;
            CHECK_OK(ns_life_fit(e, &fo, w, NULL, &res));
            CHECK(res.updates == 50);
            const double err = rel_inf(w, ref, F);
            CHECK_MSG(err <= tol[r], "precond %d cuda %s: weights differ by %.3g", pre,
                      ns_life_variant_name(red[r]), err);
            printf("precond %d: %s weights within %.2e of the float64 fit\n", pre, ns_life_variant_name(red[r]), err);
            ns_life_engine_destroy(e);
        }
    }
    free(ref), free(w);
}

static void fits(ns_life_model_t *m) { fits_sh(m, 0); }

/* The ridge (life fit --ridge) runs through the same vector operations on the device: 50
 * updates on the GPU give the CPU's weights and the same mu. */
static void ridge_fits(ns_life_model_t *m) {
    const int64_t F = ns_life_model_n_fibers(m);
    double *ref = malloc((size_t)F * 8), *w = malloc((size_t)F * 8);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 51;
    fo.tol_gradient = fo.tol_objective = 0.0;
    fo.rtol_gradient = fo.rtol_objective = 0.0;
    fo.ridge = 0.2;
    for (int pre = 0; pre <= 1; ++pre) {
        fo.preconditioner = pre;
        ns_life_engine_t *e = NULL;
        ns_life_fit_result rc, rg;
        CHECK_OK(make_engine(m, NS_BACKEND_CPU, NS_LIFE_NAIVE, 0, &e));
        CHECK_OK(ns_life_fit(e, &fo, ref, NULL, &rc));
        ns_life_engine_destroy(e);
        const ns_life_variant vs[2] = {NS_LIFE_VOXEL_VOXEL, NS_LIFE_COEFF_ATOM};
        for (int i = 0; i < 2; ++i) {
            e = NULL;
            CHECK_OK(make_engine(m, NS_BACKEND_CUDA, vs[i], 0, &e));
            if (!e) continue;
            busy_default_stream();
            CHECK_OK(ns_life_fit(e, &fo, w, NULL, &rg));
            CHECK(rg.updates == 50);
            CHECK_MSG(rc.ridge_mu > 0 && fabs(rg.ridge_mu - rc.ridge_mu) <= 1e-12 * rc.ridge_mu,
                      "ridge mu %.17g (cuda) vs %.17g (cpu)", rg.ridge_mu, rc.ridge_mu);
            const double err = rel_inf(w, ref, F);
            CHECK_MSG(err <= 1e-9, "ridge, precond %d cuda %s: weights differ by %.3g", pre,
                      ns_life_variant_name(vs[i]), err);
            ns_life_engine_destroy(e);
        }
    }
    free(ref), free(w);
}

/* The group fit with the products on the GPU (host vectors, group.c) against the CPU's,
 * both converged (strongly convex with a ridge): weights within 1e-7, lambda_g 1e-12. */
static void group_fits(ns_life_model_t *m) {
    const int64_t F = ns_life_model_n_fibers(m);
    double *ref = malloc((size_t)F * 8), *w = malloc((size_t)F * 8);
    int32_t *groups = malloc((size_t)F * sizeof *groups);
    for (int64_t f = 0; f < F; ++f) groups[f] = f % 11 == 5 ? -1 : (int32_t)(f % 7);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 5000;
    fo.tol_gradient = fo.tol_objective = fo.rtol_objective = 0.0;
    fo.rtol_gradient = 1e-11;
    fo.ridge = 0.1, fo.group = 1.0, fo.groups = groups;
    ns_life_engine_t *e = NULL;
    ns_life_fit_result rc, rg;
    CHECK_OK(make_engine(m, NS_BACKEND_CPU, NS_LIFE_NAIVE, 0, &e));
    CHECK_OK(ns_life_fit(e, &fo, ref, NULL, &rc));
    ns_life_engine_destroy(e);
    CHECK(rc.groups_nonzero > 0 && rc.groups_nonzero < rc.n_groups);
    const ns_life_variant vs[2] = {NS_LIFE_VOXEL_VOXEL, NS_LIFE_COEFF_ATOM};
    for (int i = 0; i < 2; ++i) {
        e = NULL;
        CHECK_OK(make_engine(m, NS_BACKEND_CUDA, vs[i], 0, &e));
        if (!e) continue;
        busy_default_stream();
        CHECK_OK(ns_life_fit(e, &fo, w, NULL, &rg));
        CHECK_MSG(fabs(rg.group_lambda - rc.group_lambda) <= 1e-12 * rc.group_lambda,
                  "group lambda %.17g (cuda) vs %.17g (cpu)", rg.group_lambda, rc.group_lambda);
        const double err = rel_inf(w, ref, F);
        printf("group fit on cuda %s: %d updates (cpu %d), weights within %.2e of the cpu's\n",
               ns_life_variant_name(vs[i]), (int)rg.updates, (int)rc.updates, err);
        CHECK_MSG(err <= 1e-7, "group fit, cuda %s: weights differ by %.3g", ns_life_variant_name(vs[i]), err);
        CHECK(rg.groups_nonzero == rc.groups_nonzero);
        ns_life_engine_destroy(e);
    }
    free(ref), free(w), free(groups);
}

/* A model written by hand for the summing of equal-fiber runs in w = M^T y
 * (life_products.cu, add_runs): in voxel order, voxel 0 holds runs of one
 * fiber of lengths 1, 2, 3, a run across the boundary of the first two warp
 * batches (lanes 29-31 and 0-4 of the next), a run longer than a batch (40),
 * a fiber that comes back after others (not contiguous); voxel 1 a single
 * coefficient, voxels 2 and 5 none (empty), voxel 3 a run of 33 (one lane
 * past a batch), voxel 4 two fibers alternating (no run). n_fibers = 1 puts
 * every coefficient on one fiber. The atom-sorted copy has runs too (fibers
 * in original order within an atom). */
static ns_life_model_t *runs_model(int32_t n_fibers, uint64_t seed) {
    int32_t vox[256], fib[256];
    int n = 0;
#define PUT(v, f, count)                                          \
    for (int i_ = 0; i_ < (count); ++i_) vox[n] = (v), fib[n] = (f), ++n
    PUT(0, 1, 1); PUT(0, 2, 2); PUT(0, 0, 3); PUT(0, 5, 1); PUT(0, 6, 22); /* 29 so far */
    PUT(0, 3, 8);                                                          /* lanes 29..36 */
    PUT(0, 4, 40); PUT(0, 1, 2); PUT(0, 7, 1);                             /* fiber 1 again */
    PUT(1, 8, 1);
    PUT(3, 0, 33);
    for (int i = 0; i < 9; ++i) { PUT(4, i % 2 ? 5 : 6, 1); }
#undef PUT
    const int32_t n_theta = 96, n_atoms = 50, n_voxels = 6;
    ns_life_model_t *m = NULL;
    if (ns_life_model_create(n_theta, n_atoms, n_voxels, n_fibers, n, &m) != NS_OK) return NULL;
    srand((unsigned)seed);
    int32_t *a = ns_life_model_atom(m), *v = ns_life_model_voxel(m), *f = ns_life_model_fiber(m);
    double *val = ns_life_model_value(m), *D = ns_life_model_dictionary(m), *Y = ns_life_model_signal(m);
    for (int k = 0; k < n; ++k) {
        a[k] = rand() % 8; /* few atoms: an atom repeats inside a run, so atom-sorted runs too */
        v[k] = vox[k];
        f[k] = fib[k] % n_fibers;
        val[k] = 0.5 + rand() / (double)RAND_MAX;
    }
    for (int64_t i = 0; i < (int64_t)n_theta * n_atoms; ++i) D[i] = rand() / (double)RAND_MAX - 0.5;
    for (int64_t i = 0; i < (int64_t)n_theta * n_voxels; ++i) Y[i] = rand() / (double)RAND_MAX - 0.5;
    if (ns_life_model_validate(m) != NS_OK) {
        ns_life_model_destroy(m);
        return NULL;
    }
    return m;
}

/* Fits on the hand-made models: few fibers, so SBBNNLS reaches the optimum
 * (or a zero step) long before 50 updates; every exact CUDA variant's
 * converged weights against the CPU's (the optimum is unique: M has full
 * column rank). */
static void runs_fits(ns_life_model_t *m, const char *label) {
    const int64_t F = ns_life_model_n_fibers(m);
    double *ref = malloc((size_t)F * 8), *w = malloc((size_t)F * 8);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 400;
    fo.tol_gradient = fo.tol_objective = 0.0;
    fo.rtol_objective = 0.0, fo.rtol_gradient = 1e-10;
    ns_life_engine_t *e = NULL;
    ns_life_fit_result res;
    CHECK_OK(make_engine(m, NS_BACKEND_CPU, NS_LIFE_NAIVE, 0, &e));
    CHECK_OK(ns_life_fit(e, &fo, ref, NULL, &res));
    ns_life_engine_destroy(e);
    double big = 0.0;
    for (int64_t i = 0; i < F; ++i) big = ref[i] > big ? ref[i] : big;
    CHECK_MSG(big > 0.0, "%s: the CPU fit kept no fiber", label);
    for (int v = NS_LIFE_NAIVE; v <= NS_LIFE_VOXEL_VOXEL; ++v) {
        e = NULL;
        CHECK_OK(make_engine(m, NS_BACKEND_CUDA, (ns_life_variant)v, 0, &e));
        if (!e) continue;
        CHECK_OK(ns_life_fit(e, &fo, w, NULL, &res));
        const double err = rel_inf(w, ref, F);
        CHECK_MSG(err <= 1e-6, "%s cuda %s fit: weights differ by %.3g", label, ns_life_variant_name((ns_life_variant)v),
                  err);
        ns_life_engine_destroy(e);
    }
    free(ref), free(w);
}

/* Real data: DIPY's small_25 (60 EuDX streamlines, 25 directions, L = 180) as
 * life build makes it, and a ground-truth phantom of 2,000 streamlines (30
 * directions): every CUDA variant's products against CSR, and small_25's
 * converged fits against the CPU's. */
static void real_models(void) {
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    ns_life_built_t *r = NULL;
#ifdef NS_SOURCE_DATA
    CHECK_OK(ns_life_build(NS_SOURCE_DATA "/small_25.nii.gz", NS_SOURCE_DATA "/small_25.bval",
                           NS_SOURCE_DATA "/small_25.bvec", NS_SOURCE_DATA "/EuDX_small_25.trk", &o, &r));
    if (r) {
        products(ns_life_built_model(r), "small_25");
        runs_fits(ns_life_built_model(r), "small_25");
        ns_life_built_destroy(r);
        r = NULL;
    }
#endif
    if (tmpdir_make("test_life_cuda")) {
        CHECK_MSG(0, "cannot make a scratch directory");
        return;
    }
    ns_life_phantom_options po;
    ns_life_phantom_options_init(&po);
    po.n_streamlines = 2000;
    CHECK_OK(ns_life_phantom_write(&po, tmp("ph"), NULL));
    CHECK_OK(ns_life_build(tmp("ph/dwi.nii"), tmp("ph/dwi.bval"), tmp("ph/dwi.bvec"), tmp("ph/tracks.tck"), &o, &r));
    if (r) products(ns_life_built_model(r), "phantom 2000"), ns_life_built_destroy(r);
    tmpdir_remove();
}

/* AUTO with a tolerance (life fit passes its rtolg): voxel-sh for both products when its bound on
 * the model is below the tolerance, the bound reported and the products within it of the CPU's
 * exact ones; no tolerance (the default), one below the bound's float32 term (at least 21 2^-24), or a
 * dictionary voxel-sh cannot serve: the exact variants and a bound of 0. */
static void auto_sh(ns_life_model_t *m, int serves, const char *label) {
    const int64_t F = ns_life_model_n_fibers(m), NY = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
    double *w = malloc((size_t)F * 8), *y = malloc((size_t)NY * 8), *yr = malloc((size_t)NY * 8);
    double *wr = malloc((size_t)F * 8), *yo = malloc((size_t)NY * 8), *wo = malloc((size_t)F * 8);
    for (int64_t i = 0; i < F; ++i) w[i] = 0.5 + 0.5 * sin(0.7 * (double)i);
    for (int64_t i = 0; i < NY; ++i) y[i] = cos(0.3 * (double)i);
    ns_life_engine_t *e = NULL;
    CHECK_OK(make_engine(m, NS_BACKEND_CPU, NS_LIFE_AUTO, 0, &e));
    CHECK_OK(ns_life_mw(e, w, yr));
    CHECK_OK(ns_life_mty(e, y, wr));
    ns_life_engine_destroy(e);
    const double tols[3] = {1e-3, 0.0, 9e-7};
    for (int k = 0; k < 3; ++k) {
        ns_life_options o;
        ns_life_options_init(&o);
        o.backend = NS_BACKEND_CUDA;
        o.tolerance = tols[k];
        e = NULL;
        CHECK_OK(ns_life_engine_create(m, &o, &e));
        if (!e) continue;
        const int sh = k == 0 && serves;
        const double bound = ns_life_engine_error_bound(e);
        for (int p = 0; p < 2; ++p)
            CHECK_MSG((ns_life_engine_variant(e, (ns_life_product)p) == NS_LIFE_VOXEL_SH) == sh,
                      "%s: AUTO at tolerance %g ran %s", label, tols[k],
                      ns_life_variant_name(ns_life_engine_variant(e, (ns_life_product)p)));
        if (sh) {
            CHECK_MSG(bound > 1.0 / 1048576 && bound <= 1.0 / 65536 + 153.0 / 16777216, "%s: bound %g", label, bound);
            CHECK_OK(ns_life_mw(e, w, yo));
            CHECK_OK(ns_life_mty(e, y, wo));
            CHECK_MSG(rel_inf(yo, yr, NY) <= bound && rel_inf(wo, wr, F) <= bound,
                      "%s: voxel-sh by AUTO: products within %.3g / %.3g of the exact ones, bound %.3g", label,
                      rel_inf(yo, yr, NY), rel_inf(wo, wr, F), bound);
            printf("%s: AUTO runs voxel-sh (bound %.3g; products within %.3g / %.3g)\n", label, bound,
                   rel_inf(yo, yr, NY), rel_inf(wo, wr, F));
        } else {
            CHECK_MSG(bound == 0.0, "%s: exact variants, bound %g", label, bound);
        }
        ns_life_engine_destroy(e);
    }
    free(w), free(y), free(yr), free(wr), free(yo), free(wo);
}

int main(void) {
    int n = 0;
    if (ns_cuda_device_count(&n) != NS_OK || n == 0) CHECK_SKIP("no GPU");
    ns_life_model_t *m = tiny_model(96, 12, 300, 10, 0.1, 3);
    CHECK(m != NULL);
    if (!m) return check_summary("test_life_cuda");
    products(m, "n_theta 96");
    fits(m);
    ridge_fits(m);
    group_fits(m);
    /* too little device memory: a clear status, no crash */
    ns_life_engine_t *e = NULL;
    CHECK(make_engine(m, NS_BACKEND_CUDA, NS_LIFE_AUTO, 4096, &e) == NS_ERR_DEVICE_MEMORY);
    CHECK(strstr(ns_last_error(), "GiB") != NULL);
    CHECK(e == NULL);
    ns_life_model_destroy(m);
    /* n_theta = 7 (padded to 32) and 40 (padded to 64) */
    m = tiny_model(7, 5, 40, 4, 0.1, 5);
    if (m) products(m, "n_theta 7"), ns_life_model_destroy(m);
    m = tiny_model(40, 6, 80, 6, 0.1, 6);
    if (m) products(m, "n_theta 40"), fits(m), ns_life_model_destroy(m);
    /* about 160 coefficients per voxel: several batches of 32 per warp (the tiny
       models above have a few per voxel) */
    m = tiny_model(96, 12, 3000, 4, 0.1, 7);
    if (m) products(m, "dense voxels"), ns_life_model_destroy(m);
    real_models();
    /* voxel-sh on ENCODE's L = 30 grid (871 atoms): with 96 directions, padded 7 and 40, and
       about 160 coefficients per voxel (each lane's share longer than one) */
    m = tiny_model(96, 30, 300, 10, 0.1, 23);
    CHECK(m != NULL);
    if (m) {
        CHECK(products_sh(m, "voxel-sh grid, n_theta 96", 1));
        fits_sh(m, 1);
        auto_sh(m, 1, "voxel-sh grid, n_theta 96");
        ns_life_model_destroy(m);
    }
    m = tiny_model(7, 30, 60, 5, 0.1, 24);
    if (m) {
        CHECK(products_sh(m, "voxel-sh grid, n_theta 7", 1));
        ns_life_model_destroy(m);
    }
    m = tiny_model(40, 30, 80, 6, 0.1, 25);
    if (m) {
        CHECK(products_sh(m, "voxel-sh grid, n_theta 40", 1));
        ns_life_model_destroy(m);
    }
    m = tiny_model(96, 30, 3000, 4, 0.1, 26);
    if (m) {
        CHECK(products_sh(m, "voxel-sh grid, dense voxels", 1));
        ns_life_model_destroy(m);
    }
    /* higher b: the stick dictionary needs more harmonics (lmax 14 at b = 3000, 16 at b = 4500 on
       this grid: test_life_products asserts the degrees), the kernels' other instantiations */
    for (int k = 0; k < 2; ++k) {
        m = b_value_model(k ? 4500.0 : 3000.0);
        CHECK(m != NULL);
        if (m) {
            CHECK(products_sh(m, k ? "voxel-sh grid, b 4500 (lmax 16)" : "voxel-sh grid, b 3000 (lmax 14)", 1));
            ns_life_model_destroy(m);
        }
    }
    /* voxel-lr16d on a dictionary of exact rank 20 (r = 32 keeps it whole); voxel-sh refuses
       it (random in the orientation) */
    m = rank20_model();
    CHECK(m != NULL);
    if (m) {
        CHECK(!products_sh(m, "rank-20 dictionary", 0));
        auto_sh(m, 0, "rank-20 dictionary");
        ns_life_model_destroy(m);
    }
    /* runs of equal fibers inside the warps' batches, empty voxels, one fiber */
    m = runs_model(9, 11);
    CHECK(m != NULL);
    if (m) products(m, "fiber runs"), runs_fits(m, "fiber runs"), ns_life_model_destroy(m);
    m = runs_model(1, 12);
    CHECK(m != NULL);
    if (m) products(m, "one fiber"), runs_fits(m, "one fiber"), ns_life_model_destroy(m);
    busy_free();
    return check_summary("test_life_cuda");
}
