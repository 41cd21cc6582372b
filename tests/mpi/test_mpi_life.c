/* LiFE over processes against the single-process engine on the same model:
 *   - the voxel ranges cover every voxel once, in order;
 *   - y = M w: each process's rows equal the matching rows of the global
 *     product (no communication);
 *   - w = M^T y: the local products summed by ns_mpi_life_reduce equal the
 *     global product within 1e-12 relative;
 *   - SBBNNLS (ns_mpi_life_fit) run to convergence gives the single-process
 *     weights within 1e-12 relative (the minimiser is unique: the synthetic
 *     model has full column rank and no noise, so both runs also land on the
 *     true weights, checked loosely as the independent reference). */
#include <stdlib.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"
#include "test_life_common.h"
#include "test_mpi_common.h"

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    ns_life_model_t *g = tiny_model(12, 7, 40, 8, 0.0, 3);
    CHECK(g != NULL);
    if (!g) return mpi_test_finish("test_mpi_life");
    CHECK_OK(ns_life_model_validate(g));
    const int32_t nt = ns_life_model_n_theta(g), nv = ns_life_model_n_voxels(g), nf = ns_life_model_n_fibers(g);
    ns_life_options lo;
    ns_life_options_init(&lo);
    lo.backend = NS_BACKEND_CPU;
    lo.threads = 1;
    ns_life_engine_t *ge = NULL;
    CHECK_OK(ns_life_engine_create(g, &lo, &ge));

    ns_life_model_t *l = NULL;
    int32_t v0 = -1, nloc = -1;
    CHECK_OK(ns_mpi_life_partition(MPI_COMM_WORLD, g, &l, &v0, &nloc));
    if (!l) return mpi_test_finish("test_mpi_life");
    /* ranges: rank r's range starts where rank r-1's ends */
    int32_t ends[2] = {v0, v0 + nloc}, *all = malloc((size_t)mpi_size * 2 * sizeof *all);
    MPI_Allgather(ends, 2, MPI_INT32_T, all, 2, MPI_INT32_T, MPI_COMM_WORLD);
    CHECK(all[0] == 0 && all[2 * mpi_size - 1] == nv);
    for (int r = 1; r < mpi_size; ++r) CHECK(all[2 * r] == all[2 * r - 1]);
    free(all);
    ns_life_engine_t *le = NULL;
    CHECK_OK(ns_life_engine_create(l, &lo, &le));

    /* products on fresh inputs */
    double *w = malloc((size_t)nf * sizeof *w), *wg = malloc((size_t)nf * sizeof *wg),
           *wl = malloc((size_t)nf * sizeof *wl);
    double *y = malloc((size_t)nt * nv * sizeof *y), *yg = malloc((size_t)nt * nv * sizeof *yg),
           *yl = malloc((size_t)nt * (nloc > 0 ? nloc : 1) * sizeof *yl);
    for (int32_t f = 0; f < nf; ++f) w[f] = 0.1 + (double)((f * 37) % 11) / 7.0;
    for (int64_t i = 0; i < (int64_t)nt * nv; ++i) y[i] = sin(0.37 * (double)i) + 0.2;
    CHECK_OK(ns_life_mw(ge, w, yg));
    CHECK_OK(ns_life_mw(le, w, yl));
    if (nloc > 0) {
        const double e = rel_inf(yl, yg + (int64_t)v0 * nt, (int64_t)nloc * nt);
        CHECK_MSG(e <= 1e-12, "rank %d: local rows of M w differ by %.3e", mpi_rank, e);
    }
    CHECK_OK(ns_life_mty(ge, y, wg));
    CHECK_OK(ns_life_mty(le, nloc > 0 ? y + (int64_t)v0 * nt : yl, wl));
    if (nloc == 0) CHECK(rel_inf(wl, wl, nf) == 0.0); /* placeholder voxel: zero signal in, nothing out */
    MPI_Comm comm = MPI_COMM_WORLD;
    CHECK_OK(ns_mpi_life_reduce(wl, nf, &comm));
    const double emt = rel_inf(wl, wg, nf);
    CHECK_MSG(emt <= 1e-12, "M^T y summed over %d processes differs by %.3e", mpi_size, emt);

    /* SBBNNLS to convergence */
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 4000;
    fo.tol_gradient = 1e-13;
    fo.tol_objective = 0.0;
    fo.rtol_gradient = 0.0; /* a tight fit: no relative stop */
    fo.rtol_objective = 0.0;
    ns_life_fit_result rg, rl;
    double *hist = malloc((size_t)fo.max_iterations * sizeof *hist);
    CHECK_OK(ns_life_fit(ge, &fo, wg, NULL, &rg));
    CHECK_OK(ns_mpi_life_fit(MPI_COMM_WORLD, le, &fo, wl, hist, &rl));
    CHECK_MSG(rg.stop == NS_LIFE_STOP_GRADIENT && rl.stop == NS_LIFE_STOP_GRADIENT,
              "stops: %s (single) / %s (distributed) after %d / %d updates", ns_life_stop_name(rg.stop),
              ns_life_stop_name(rl.stop), (int)rg.updates, (int)rl.updates);
    const double ew = rel_inf(wl, wg, nf);
    CHECK_MSG(ew <= 1e-12, "weights: %.3e from the single-process fit (%d / %d updates)", ew, (int)rl.updates,
              (int)rg.updates);
    if (mpi_rank == 0)
        printf("%d processes: M^T y %.2e, weights %.2e from one process (%d / %d updates, %d voxels here)\n",
               mpi_size, emt, ew, (int)rl.updates, (int)rg.updates, (int)nloc);
    const double *wt = ns_life_model_true_weights(g);
    CHECK(wt != NULL);
    if (wt) CHECK_MSG(rel_inf(wl, wt, nf) <= 1e-6, "weights: %.3e from the true weights", rel_inf(wl, wt, nf));
    /* every process holds the same weights, bit for bit */
    double *w0 = malloc((size_t)nf * sizeof *w0);
    memcpy(w0, wl, (size_t)nf * sizeof *w0);
    MPI_Bcast(w0, nf, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(w0, wl, (size_t)nf * sizeof *w0) == 0);
    /* the ridge: mu from ||M 1||^2 summed over processes, the same weights as one process */
    fo.ridge = 0.1;
    CHECK_OK(ns_life_fit(ge, &fo, wg, NULL, &rg));
    CHECK_OK(ns_mpi_life_fit(MPI_COMM_WORLD, le, &fo, wl, NULL, &rl));
    CHECK_MSG(rg.ridge_mu > 0 && fabs(rl.ridge_mu - rg.ridge_mu) <= 1e-12 * rg.ridge_mu,
              "ridge mu %.17g (distributed) vs %.17g", rl.ridge_mu, rg.ridge_mu);
    const double er = rel_inf(wl, wg, nf);
    CHECK_MSG(er <= 1e-10, "ridge weights: %.3e from the single-process fit", er);
    /* the group penalty (FISTA): lambda_g from M^T y summed over processes, the same weights as
     * one process, bit for bit on every process */
    int32_t *groups = malloc((size_t)nf * sizeof *groups);
    for (int32_t f = 0; f < nf; ++f) groups[f] = f % 5 == 4 ? -1 : f % 3;
    fo.group = 1.0;
    fo.groups = groups;
    fo.rtol_gradient = 1e-10;
    CHECK_OK(ns_life_fit(ge, &fo, wg, NULL, &rg));
    CHECK_OK(ns_mpi_life_fit(MPI_COMM_WORLD, le, &fo, wl, NULL, &rl));
    CHECK_MSG(rg.group_lambda > 0 && fabs(rl.group_lambda - rg.group_lambda) <= 1e-12 * rg.group_lambda,
              "group lambda %.17g (distributed) vs %.17g", rl.group_lambda, rg.group_lambda);
    const double eg = rel_inf(wl, wg, nf);
    CHECK_MSG(eg <= 1e-9, "group weights: %.3e from the single-process fit (%d / %d updates)", eg, (int)rl.updates,
              (int)rg.updates);
    CHECK(rl.groups_nonzero == rg.groups_nonzero && rl.n_groups == rg.n_groups);
    memcpy(w0, wl, (size_t)nf * sizeof *w0);
    MPI_Bcast(w0, nf, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(w0, wl, (size_t)nf * sizeof *w0) == 0);
    if (mpi_rank == 0)
        printf("group fit: weights %.2e from one process, %d of %d groups non-zero\n", eg, (int)rl.groups_nonzero,
               (int)rl.n_groups);
    fo.group = 0.0;
    fo.groups = NULL;
    free(groups);
    fo.ridge = 0.0;
    /* the preconditioner needs a sum SBBNNLS does not do: refused everywhere */
    fo.preconditioner = 1;
    CHECK(ns_mpi_life_fit(MPI_COMM_WORLD, le, &fo, wl, NULL, NULL) == NS_ERR_UNSUPPORTED);

    free(w0);
    free(hist);
    free(w);
    free(wg);
    free(wl);
    free(y);
    free(yg);
    free(yl);
    ns_life_engine_destroy(le);
    ns_life_engine_destroy(ge);
    ns_life_model_destroy(l);
    ns_life_model_destroy(g);
    return mpi_test_finish("test_mpi_life");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
