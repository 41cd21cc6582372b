/* LiFE products: every CPU variant of y = M w and w = M^T y against an
 * explicit CSR matrix built from the tensor by the test (relative error
 * <= 1e-12), the adjoint identity <M w, y> = <w, M^T y>, zero-weight
 * skipping, thread counts 1..3, and the AUTO selection. */
#include "check.h"
#include "test_life_common.h"
#include "life/life_impl.h"

static void fill(double *v, int64_t n, unsigned seed, double zero_fraction) {
    srand(seed);
    for (int64_t i = 0; i < n; ++i) {
        const double u = rand() / (double)RAND_MAX;
        v[i] = u < zero_fraction ? 0.0 : 2.0 * rand() / (double)RAND_MAX - 0.5;
    }
}

static void check_model(ns_life_model_t *m, const char *label) {
    csr c;
    CHECK(csr_build(m, &c));
    const int64_t F = ns_life_model_n_fibers(m);
    const int64_t NY = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
    double *w = malloc((size_t)F * sizeof *w), *w_ref = malloc((size_t)F * sizeof *w);
    double *y = malloc((size_t)NY * sizeof *y), *y_ref = malloc((size_t)NY * sizeof *y);
    double *w_out = malloc((size_t)F * sizeof *w), *y_out = malloc((size_t)NY * sizeof *y);
    /* 30 % zero weights: exercises the skipping of zero weights */
    fill(w, F, 7, 0.3);
    fill(y, NY, 11, 0.0);
    csr_mw(&c, w, y_ref);
    csr_mty(&c, y, w_ref);
    for (int v = NS_LIFE_NAIVE; v < NS_LIFE_VARIANT_COUNT; ++v) {
        for (int threads = 1; threads <= 3; ++threads) {
            ns_life_options o;
            ns_life_options_init(&o);
            o.backend = NS_BACKEND_CPU;
            o.mw_variant = o.mty_variant = (ns_life_variant)v;
            o.threads = threads;
            ns_life_engine_t *e = NULL;
            CHECK_OK(ns_life_engine_create(m, &o, &e));
            if (!e) continue;
            for (int64_t i = 0; i < NY; ++i) y_out[i] = NAN; /* poison */
            for (int64_t i = 0; i < F; ++i) w_out[i] = NAN;
            CHECK_OK(ns_life_mw(e, w, y_out));
            CHECK_OK(ns_life_mty(e, y, w_out));
            const double emw = rel_inf(y_out, y_ref, NY), emty = rel_inf(w_out, w_ref, F);
            CHECK_MSG(emw <= 1e-12, "%s: %s Mw threads %d: rel err %.3g", label,
                      ns_life_variant_name((ns_life_variant)v), threads, emw);
            CHECK_MSG(emty <= 1e-12, "%s: %s MTy threads %d: rel err %.3g", label,
                      ns_life_variant_name((ns_life_variant)v), threads, emty);
            /* adjoint: <M w, y> = <w, M^T y> */
            double a = 0.0, b = 0.0, s = 0.0;
            for (int64_t i = 0; i < NY; ++i) a += y_out[i] * y[i], s += fabs(y_out[i] * y[i]);
            for (int64_t i = 0; i < F; ++i) b += w[i] * w_out[i];
            CHECK_MSG(fabs(a - b) <= 1e-12 * s, "%s: %s adjoint %.17g vs %.17g", label,
                      ns_life_variant_name((ns_life_variant)v), a, b);
            ns_life_engine_destroy(e);
        }
    }
    /* AUTO on the CPU follows the measured rule (docs/life.md, Runtime selection): y = M w on
     * voxel-voxel; w = M^T y on atom-atom with at most 1.5 voxels per atom, else voxel-voxel;
     * whatever the thread count. The expectations are the documented rule on the measured model
     * sizes (the phantoms and the synthetic models), not read back from the engine. */
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MW, 31912, 32221) == NS_LIFE_VOXEL_VOXEL);   /* phantom 10,000 */
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MTY, 31912, 32221) == NS_LIFE_ATOM_ATOM);
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MTY, 39731, 32221) == NS_LIFE_ATOM_ATOM);    /* phantom 30,000 */
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MTY, 48331, 32221) == NS_LIFE_ATOM_ATOM);    /* 1.5 per atom */
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MTY, 48333, 32221) == NS_LIFE_VOXEL_VOXEL);
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MW, 192534, 32221) == NS_LIFE_VOXEL_VOXEL);  /* synthetic 10,000 */
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MTY, 192534, 32221) == NS_LIFE_VOXEL_VOXEL);
    CHECK(ns_life_cpu_auto_variant(NS_LIFE_MTY, 234919, 129241) == NS_LIFE_VOXEL_VOXEL); /* 50,000, L 360 */
    /* AUTO on CUDA after its timing (docs/life.md, "voxel-sh"): voxel-sh when its bound on the model
     * is below the accepted tolerance, never without one (0, the library's default) or when it
     * cannot serve the model (bound -1); the bounds are those of the documented models (2^-16 + 153
     * 2^-24 at most; 9.2e-6 + 91 2^-24 at lmax 12 on the 500,000-fiber benchmark model) against life fit's rtolg 1e-3. */
    CHECK(ns_life_cuda_auto_variant(NS_LIFE_VOXEL_VOXEL, 9.2e-6 + 91.0 / 16777216, 1e-3) == NS_LIFE_VOXEL_SH);
    CHECK(ns_life_cuda_auto_variant(NS_LIFE_ATOM_ATOM, 1.0 / 65536 + 153.0 / 16777216, 1e-3) == NS_LIFE_VOXEL_SH);
    CHECK(ns_life_cuda_auto_variant(NS_LIFE_VOXEL_VOXEL, 9.2e-6, 0.0) == NS_LIFE_VOXEL_VOXEL);   /* exact only */
    CHECK(ns_life_cuda_auto_variant(NS_LIFE_VOXEL_VOXEL, 9.2e-6, 9.2e-6) == NS_LIFE_VOXEL_VOXEL); /* not below */
    CHECK(ns_life_cuda_auto_variant(NS_LIFE_ATOM_ATOM, 9.2e-6, 1e-6) == NS_LIFE_ATOM_ATOM);      /* tight fit */
    CHECK(ns_life_cuda_auto_variant(NS_LIFE_COEFF_VOXEL, -1.0, 1e-3) == NS_LIFE_COEFF_VOXEL);    /* no grid */
    /* the CPU engine never computes a bound: its products are exact (0), tolerance or not */
    {
        ns_life_options o;
        ns_life_options_init(&o);
        o.backend = NS_BACKEND_CPU, o.tolerance = 1e-3;
        ns_life_engine_t *e = NULL;
        CHECK_OK(ns_life_engine_create(m, &o, &e));
        CHECK(ns_life_engine_error_bound(e) == 0.0 && ns_life_engine_variant(e, NS_LIFE_MW) != NS_LIFE_VOXEL_SH);
        ns_life_engine_destroy(e);
        o.tolerance = -1.0;
        CHECK_FAILS(ns_life_engine_create(m, &o, &e), NS_ERR_INVALID_ARGUMENT, "tolerance");
    }
    const int atom_mty = ns_life_model_n_voxels(m) <= 1.5 * ns_life_model_n_atoms(m);
    for (int threads = 0; threads <= 3; ++threads) {
        ns_life_options o;
        ns_life_options_init(&o);
        o.backend = NS_BACKEND_CPU;
        o.threads = threads; /* 0: the default, one thread for this small model (< 16,384 coefficients) */
        ns_life_engine_t *e = NULL;
        CHECK_OK(ns_life_engine_create(m, &o, &e));
        if (!e) continue;
#ifdef _OPENMP
        const int used = threads ? threads : 1;
#else
        const int used = 1; /* a build without OpenMP runs one thread whatever is asked */
#endif
        CHECK_MSG(ns_life_engine_threads(e) == used, "threads %d: the engine uses %d, expected %d", threads,
                  (int)ns_life_engine_threads(e), used);
        CHECK_MSG(ns_life_engine_variant(e, NS_LIFE_MW) == NS_LIFE_VOXEL_VOXEL, "%s: AUTO Mw threads %d: %s", label,
                  threads, ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MW)));
        CHECK_MSG(ns_life_engine_variant(e, NS_LIFE_MTY) == (atom_mty ? NS_LIFE_ATOM_ATOM : NS_LIFE_VOXEL_VOXEL),
                  "%s: AUTO MTy threads %d: %s", label, threads,
                  ns_life_variant_name(ns_life_engine_variant(e, NS_LIFE_MTY)));
        CHECK(ns_life_engine_selection_seconds(e) == 0.0); /* no timing runs on the CPU */
        /* AUTO's products are deterministic for a thread count (static chunks): bit for bit again */
        double *w_again = malloc((size_t)F * sizeof *w_again);
        if (w_again) {
            CHECK_OK(ns_life_mty(e, y, w_out));
            for (int rep = 0; rep < 3; ++rep) {
                CHECK_OK(ns_life_mty(e, y, w_again));
                CHECK_MSG(memcmp(w_again, w_out, (size_t)F * sizeof *w_out) == 0, "%s: AUTO MTy threads %d differs "
                          "between calls", label, threads);
            }
            free(w_again);
        }
        CHECK_OK(ns_life_mw(e, w, y_out));
        CHECK(rel_inf(y_out, y_ref, NY) <= 1e-12);
        CHECK_OK(ns_life_mty(e, y, w_out));
        CHECK(rel_inf(w_out, w_ref, F) <= 1e-12);
        ns_life_engine_destroy(e);
    }
    ns_life_options o;
    ns_life_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    ns_life_engine_t *e = NULL;
    CHECK_OK(ns_life_engine_create(m, &o, &e));
    if (e) {
        /* the timing entry returns the same product */
        double ms[3];
        CHECK_OK(ns_life_time_product(e, NS_LIFE_MTY, NS_LIFE_COEFF_VOXEL, y, w_out, 3, ms));
        CHECK(rel_inf(w_out, w_ref, F) <= 1e-12);
        CHECK(ms[0] >= 0 && ms[2] >= 0);
        CHECK(ns_life_floor_bytes(m, NS_LIFE_MW) > 20.0 * (double)ns_life_model_n_coeffs(m));
    }
    ns_life_engine_destroy(e);
    free(w), free(w_ref), free(y), free(y_ref), free(w_out), free(y_out);
    csr_free(&c);
}

/* voxel-sh's fit (sh_basis.c). The basis spans the even polynomials of degree <= lmax on the
 * sphere: a dictionary whose columns are (g_t . u)^n for n = 10 or 12 (random g_t) is fitted
 * exactly at lmax = n and not below. The synthetic stick dictionary (exp, computed without the
 * basis) is fitted within NS_LIFE_SH_TOL, at lmax 12 on ENCODE's L = 180 grid with b = 2000 (the
 * degree docs/life.md names). A dictionary of random numbers, and atoms that are not ENCODE's
 * grid, are refused with NS_ERR_UNSUPPORTED. */
static void sh_fit(void) {
    CHECK(ns_life_sh_count(10) == 66 && ns_life_sh_count(12) == 91 && ns_life_sh_count(16) == 153);
    CHECK(ns_life_grid_l(32221) == 180 && ns_life_grid_l(129241) == 360 && ns_life_grid_l(32222) == 0);
    ns_life_model_t *m = tiny_model(24, 30, 40, 6, 0.0, 17); /* 871 atoms */
    CHECK(m != NULL);
    if (!m) return;
    const int32_t T = ns_life_model_n_theta(m), A = ns_life_model_n_atoms(m);
    double *D = ns_life_model_dictionary(m), *U = NULL, err = 0.0;
    int lmax = 0;
    CHECK_OK(ns_life_sh_fit(m, NS_LIFE_SH_TOL, &lmax, &U, &err));
    CHECK(lmax >= NS_LIFE_SH_LMIN && lmax <= NS_LIFE_SH_LMAX && err <= NS_LIFE_SH_TOL);
    /* the fit reproduces D through the basis */
    double worst = 0.0, big = 0.0, f[NS_LIFE_SH_MAX_COUNT], u[3];
    for (int64_t i = 0; i < (int64_t)T * A; ++i) big = fmax(big, fabs(D[i]));
    for (int32_t a = 0; a < A; ++a) {
        ns_life_atom_orientation(30, a, u);
        ns_life_sh_basis(lmax, u, f);
        for (int32_t t = 0; t < T; ++t) {
            double v = 0.0;
            for (int j = 0; j < ns_life_sh_count(lmax); ++j) v += U[(size_t)j * T + t] * f[j];
            worst = fmax(worst, fabs(v - D[(int64_t)a * T + t]));
        }
    }
    CHECK_MSG(worst <= (1 + 1e-9) * err * big, "voxel-sh fit: %.3g against the reported %.3g", worst / big, err);
    free(U);
    /* polynomials of degree n in u */
    double g[24 * 3];
    srand(17);
    for (int i = 0; i < 3 * T; ++i) g[i] = rand() / (double)RAND_MAX - 0.5;
    for (int n = 10; n <= 12; n += 2) {
        for (int32_t a = 0; a < A; ++a) {
            ns_life_atom_orientation(30, a, u);
            for (int32_t t = 0; t < T; ++t)
                D[(int64_t)a * T + t] = pow(g[3 * t] * u[0] + g[3 * t + 1] * u[1] + g[3 * t + 2] * u[2], n);
        }
        U = NULL;
        CHECK_OK(ns_life_sh_fit(m, 1e-10, &lmax, &U, &err));
        CHECK_MSG(lmax == n && err <= 1e-10, "degree %d: fitted at lmax %d, error %.3g", n, lmax, err);
        free(U);
    }
    /* random numbers: no smooth function of the orientation */
    for (int64_t i = 0; i < (int64_t)T * A; ++i) D[i] = rand() / (double)RAND_MAX - 0.5;
    U = NULL;
    CHECK(ns_life_sh_fit(m, NS_LIFE_SH_TOL, &lmax, &U, &err) == NS_ERR_UNSUPPORTED && U == NULL);
    ns_life_model_destroy(m);
    /* the synthetic stick dictionary on ENCODE's L = 180 grid (32,221 atoms), b = 2000: lmax 12 */
    m = tiny_model(96, 180, 20, 6, 0.0, 19);
    CHECK(m != NULL);
    if (m) {
        U = NULL;
        CHECK_OK(ns_life_sh_fit(m, NS_LIFE_SH_TOL, &lmax, &U, &err));
        CHECK_MSG(lmax == 12 && err <= NS_LIFE_SH_TOL, "L = 180: lmax %d, error %.3g", lmax, err);
        printf("voxel-sh on L = 180, 96 directions, b = 2000: lmax %d, largest entry error %.3g of max |D|\n", lmax,
               err);
        free(U);
        ns_life_model_destroy(m);
    }
    /* higher b needs more harmonics: lmax 14 at b = 3000, 16 at b = 4500 (64 directions, L = 40;
       test_life_cuda runs the kernels of these degrees on the same models) */
    for (int k = 0; k < 2; ++k) {
        m = b_value_model(k ? 4500.0 : 3000.0);
        CHECK(m != NULL);
        if (!m) continue;
        U = NULL;
        CHECK_OK(ns_life_sh_fit(m, NS_LIFE_SH_TOL, &lmax, &U, &err));
        CHECK_MSG(lmax == (k ? 16 : 14) && err <= NS_LIFE_SH_TOL, "b %d: lmax %d, error %.3g", k ? 4500 : 3000, lmax,
                  err);
        free(U);
        ns_life_model_destroy(m);
    }
    /* 10 atoms: not ENCODE's grid */
    m = NULL;
    CHECK_OK(ns_life_model_create(8, 10, 4, 3, 5, &m));
    if (m) {
        U = NULL;
        CHECK(ns_life_sh_fit(m, NS_LIFE_SH_TOL, &lmax, &U, &err) == NS_ERR_UNSUPPORTED && U == NULL);
        ns_life_model_destroy(m);
    }
}

int main(void) {
    /* the paper's 96 directions with a small dictionary and volume */
    ns_life_model_t *m = tiny_model(96, 12, 300, 10, 0.0, 3);
    CHECK(m != NULL);
    if (m) {
        CHECK_OK(ns_life_model_validate(m));
        printf("model: %d theta, %d atoms, %d voxels, %d fibers, %lld coefficients\n",
               ns_life_model_n_theta(m), ns_life_model_n_atoms(m), ns_life_model_n_voxels(m),
               ns_life_model_n_fibers(m), (long long)ns_life_model_n_coeffs(m));
        CHECK(ns_life_model_n_atoms(m) == 11 * 12 + 1);
        CHECK(ns_life_model_n_voxels(m) > 1.5 * ns_life_model_n_atoms(m)); /* AUTO's w = M^T y: voxel-voxel */
        check_model(m, "n_theta 96");
        ns_life_model_destroy(m);
    }
    /* n_theta not a multiple of anything convenient; a single voxel column */
    m = tiny_model(7, 5, 40, 4, 0.1, 5);
    CHECK(m != NULL);
    if (m) {
        check_model(m, "n_theta 7");
        ns_life_model_destroy(m);
    }
    /* more atoms than voxels (as the phantoms): AUTO's w = M^T y on atom-atom */
    m = tiny_model(32, 30, 50, 6, 0.0, 11);
    CHECK(m != NULL);
    if (m) {
        CHECK(ns_life_model_n_voxels(m) <= 1.5 * ns_life_model_n_atoms(m));
        check_model(m, "871 atoms");
        ns_life_model_destroy(m);
    }
    /* The synthetic signal is M w_true: check it through the CSR matrix. */
    m = tiny_model(32, 8, 50, 6, 0.0, 9);
    if (m) {
        csr c;
        CHECK(csr_build(m, &c));
        const int64_t NY = (int64_t)ns_life_model_n_theta(m) * ns_life_model_n_voxels(m);
        double *y = malloc((size_t)NY * sizeof *y);
        CHECK(ns_life_model_true_weights(m) != NULL);
        csr_mw(&c, ns_life_model_true_weights(m), y);
        CHECK(rel_inf(ns_life_model_signal(m), y, NY) <= 1e-12);
        /* the dictionary is demeaned per atom */
        const double *D = ns_life_model_dictionary(m);
        double worst = 0.0;
        for (int32_t a = 0; a < ns_life_model_n_atoms(m); ++a) {
            double s = 0.0;
            for (int32_t t = 0; t < 32; ++t) s += D[(int64_t)a * 32 + t];
            if (fabs(s) > worst) worst = fabs(s);
        }
        CHECK(worst < 1e-12);
        free(y);
        csr_free(&c);
        ns_life_model_destroy(m);
    }
    sh_fit();
    return check_summary("test_life_products");
}
