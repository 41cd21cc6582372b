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
#include "check.h"
#include "test_life_common.h"

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

static void products(ns_life_model_t *m, const char *label) {
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
    {   /* voxel-f32d: exactly (1e-12) the products of the dictionary rounded to float32,
           computed here on the host; within 1e-6 of the float64 products */
        double *D = ns_life_model_dictionary(m);
        const int64_t nd = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_atoms(m);
        double *keep = malloc((size_t)nd * 8), *y32 = malloc((size_t)NY * 8), *w32 = malloc((size_t)F * 8);
        memcpy(keep, D, (size_t)nd * 8);
        for (int64_t i = 0; i < nd; ++i) D[i] = (float)D[i];
        csr c32;
        CHECK(csr_build(m, &c32));
        memcpy(D, keep, (size_t)nd * 8);
        csr_mw(&c32, w, y32);
        csr_mty(&c32, y, w32);
        csr_free(&c32);
        ns_life_engine_t *e = NULL;
        CHECK_OK(make_engine(m, NS_BACKEND_CUDA, NS_LIFE_VOXEL_F32D, 0, &e));
        if (e) {
            for (int64_t i = 0; i < NY; ++i) yo[i] = NAN;
            for (int64_t i = 0; i < F; ++i) wo[i] = NAN;
            CHECK_OK(ns_life_mw(e, w, yo));
            CHECK_OK(ns_life_mty(e, y, wo));
            CHECK_MSG(rel_inf(yo, y32, NY) <= 1e-12, "%s voxel-f32d Mw vs float32 dictionary: %.3g", label, rel_inf(yo, y32, NY));
            CHECK_MSG(rel_inf(wo, w32, F) <= 1e-12, "%s voxel-f32d MTy vs float32 dictionary: %.3g", label, rel_inf(wo, w32, F));
            CHECK_MSG(rel_inf(yo, yr, NY) <= 1e-6, "%s voxel-f32d Mw: %.3g", label, rel_inf(yo, yr, NY));
            CHECK_MSG(rel_inf(wo, wr, F) <= 1e-6, "%s voxel-f32d MTy: %.3g", label, rel_inf(wo, wr, F));
            double ms[3];
            CHECK_OK(ns_life_time_product(e, NS_LIFE_MTY, NS_LIFE_VOXEL_F32D, y, wo, 3, ms));
            CHECK(rel_inf(wo, w32, F) <= 1e-12);
            ns_life_engine_destroy(e);
        }
        /* the CPU does not offer it */
        e = NULL;
        CHECK(make_engine(m, NS_BACKEND_CPU, NS_LIFE_VOXEL_F32D, 0, &e) == NS_ERR_UNSUPPORTED);
        CHECK(e == NULL);
        free(keep), free(y32), free(w32);
    }
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
}

static void fits(ns_life_model_t *m) {
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
        /* voxel-f32d: the same 50 updates; weights near the float64 fit (float32 dictionary) */
        e = NULL;
        CHECK_OK(make_engine(m, NS_BACKEND_CUDA, NS_LIFE_VOXEL_F32D, 0, &e));
        if (e) {
            CHECK_OK(ns_life_fit(e, &fo, w, NULL, &res));
            CHECK(res.updates == 50);
            const double err = rel_inf(w, ref, F);
            CHECK_MSG(err <= 1e-3, "precond %d cuda voxel-f32d: weights differ by %.3g", pre, err);
            printf("precond %d: voxel-f32d weights within %.2e of the float64 fit\n", pre, err);
            ns_life_engine_destroy(e);
        }
    }
    free(ref), free(w);
}

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

int main(void) {
    int n = 0;
    if (ns_cuda_device_count(&n) != NS_OK || n == 0) CHECK_SKIP("no GPU");
    ns_life_model_t *m = tiny_model(96, 12, 300, 10, 0.1, 3);
    CHECK(m != NULL);
    if (!m) return check_summary("test_life_cuda");
    products(m, "n_theta 96");
    fits(m);
    ridge_fits(m);
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
    busy_free();
    return check_summary("test_life_cuda");
}
