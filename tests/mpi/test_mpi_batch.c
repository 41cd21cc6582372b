/* Distributed batches against the single-process batch:
 *   - every cell has one owner, the local counts add up, LPT's balance;
 *   - ns_mpi_batch_random_values gives exactly the values that
 *     ns_batch_random_values gives the whole batch (ns_mpi_batch_extract);
 *   - ns_mpi_hines_solve + gather (to rank 0 and to all) against the
 *     sequential solve of the whole batch in one process: 1e-12 relative
 *     (the solves are the same arithmetic, so equal in practice), and
 *     against the dense system of the first cell (the independent method). */
#include <stdlib.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "lapack.h"
#include "neurosolve/mpi.h"
#include "test_mpi_common.h"

/* max over cells of ||x - ref||_inf / ||ref||_inf */
static double batch_rel(const ns_batch_t *b, const double *x, const double *ref) {
    const int64_t *off = ns_batch_cell_offset(b);
    double worst = 0.0;
    for (int64_t c = 0; c < ns_batch_cells(b); ++c) {
        double num = 0.0, den = 0.0;
        for (int64_t i = off[c]; i < off[c + 1]; ++i) {
            if (!(fabs(x[i] - ref[i]) <= num)) num = fabs(x[i] - ref[i]);
            if (fabs(ref[i]) > den) den = fabs(ref[i]);
        }
        if (!(num / den <= worst)) worst = num / den;
    }
    return worst;
}

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    const char *names[3] = {"small-low", "medium-high", "big-low"};
    ns_tree_t *trees[3] = {0};
    for (int s = 0; s < 3; ++s) CHECK_OK(ns_generate_paper_tree(names[s], 1, &trees[s]));
    /* an uneven mix: LPT has something to balance */
    enum { N = 41 };
    int32_t cell_shape[N];
    for (int c = 0; c < N; ++c) cell_shape[c] = (c * 7) % 5 == 0 ? 2 : (c % 3 == 0 ? 1 : 0);
    ns_batch_t *global = NULL;
    CHECK_OK(ns_batch_create(3, (const ns_tree_t *const *)trees, N, cell_shape, &global));
    const int64_t total = ns_batch_compartments(global);
    double *ga = malloc((size_t)total * 6 * sizeof(double));
    double *gb = ga + total, *gd = gb + total, *gx = gd + total, *gd0 = gx + total, *gx0 = gd0 + total;
    CHECK_OK(ns_batch_random_values(global, 5, ga, gb, gd, gx));
    memcpy(gd0, gd, (size_t)total * sizeof(double));
    memcpy(gx0, gx, (size_t)total * sizeof(double));
    ns_solve_options opt;
    ns_solve_options_init(&opt);
    opt.method = NS_HINES_SEQUENTIAL;
    CHECK_OK(ns_hines_solve(global, &opt, ga, gb, gd, gx)); /* gx: the single-process solution */

    ns_mpi_batch_t *mb = NULL;
    /* a cell count whose arrays would wrap size_t: a status on every rank
     * (2^62 cells: the partition's 8 * 2^62-byte arrays wrapped to 0 bytes
     * and were written past) */
    ns_status huge = ns_mpi_batch_create(MPI_COMM_WORLD, 1, (const ns_tree_t *const *)trees, (int64_t)1 << 62,
                                         NULL, &mb);
    CHECK_MSG(huge == NS_ERR_SIZE && mb == NULL, "2^62 cells: %s: %s", ns_status_string(huge), ns_last_error());
    CHECK_OK(ns_mpi_batch_create(MPI_COMM_WORLD, 3, (const ns_tree_t *const *)trees, N, cell_shape, &mb));
    if (!mb) return mpi_test_finish("test_mpi_batch");
    CHECK(ns_mpi_batch_global_cells(mb) == N);
    CHECK(ns_mpi_batch_global_compartments(mb) == total);
    /* ownership */
    int64_t mine = ns_mpi_batch_local_count(mb), all = 0, comp = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(all == N);
    const int64_t *cells = ns_mpi_batch_local_cells(mb);
    for (int64_t k = 0; k < mine; ++k) {
        CHECK(ns_mpi_batch_owner(mb, cells[k]) == mpi_rank);
        if (k) CHECK(cells[k] > cells[k - 1]);
        comp += ns_tree_size(trees[cell_shape[cells[k]]]);
    }
    CHECK(comp == ns_mpi_batch_local_compartments(mb));
    int64_t max_comp = 0, biggest = ns_tree_size(trees[2]);
    MPI_Allreduce(&comp, &max_comp, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    CHECK_MSG((double)max_comp <= (double)total / mpi_size + (double)biggest, "max load %lld of %lld",
              (long long)max_comp, (long long)total);
    CHECK(ns_mpi_batch_owner(mb, N) == -1 && ns_mpi_batch_owner(mb, -1) == -1);

    /* local values = the global batch's values of the same cells */
    const int64_t lt = ns_mpi_batch_local_compartments(mb);
    double *la = malloc((size_t)(lt + 1) * 8 * sizeof(double));
    double *lb = la + lt + 1, *ld = lb + lt + 1, *lx = ld + lt + 1, *ea = lx + lt + 1, *eb = ea + lt + 1,
           *ed = eb + lt + 1, *ex = ed + lt + 1;
    CHECK_OK(ns_mpi_batch_random_values(mb, 5, la, lb, ld, lx));
    CHECK_OK(ns_mpi_batch_extract(mb, ga, ea));
    CHECK_OK(ns_mpi_batch_extract(mb, gb, eb));
    CHECK_OK(ns_mpi_batch_extract(mb, gd0, ed));
    CHECK_OK(ns_mpi_batch_extract(mb, gx0, ex));
    CHECK(memcmp(la, ea, (size_t)lt * sizeof(double)) == 0);
    CHECK(memcmp(lb, eb, (size_t)lt * sizeof(double)) == 0);
    CHECK(memcmp(ld, ed, (size_t)lt * sizeof(double)) == 0);
    CHECK(memcmp(lx, ex, (size_t)lt * sizeof(double)) == 0);

    /* distributed solve, gathered to rank 0 and to everyone */
    ns_solve_timing tm;
    ns_hines_method used;
    ns_backend be;
    CHECK_OK(ns_mpi_hines_solve(mb, &opt, la, lb, ld, lx, &tm, &used, &be));
    if (mine > 0) CHECK(used == NS_HINES_SEQUENTIAL && be == NS_BACKEND_CPU);
    double *x0 = malloc((size_t)total * sizeof(double)), *xall = malloc((size_t)total * sizeof(double));
    for (int64_t i = 0; i < total; ++i) x0[i] = xall[i] = NAN; /* poison */
    CHECK_OK(ns_mpi_batch_gather(mb, 0, lx, mpi_rank == 0 ? x0 : NULL));
    CHECK_OK(ns_mpi_batch_gather(mb, -1, lx, xall));
    if (mpi_rank == 0) {
        const double e = batch_rel(global, x0, gx);
        CHECK_MSG(e <= 1e-12, "gathered to rank 0: %.3e from the single-process solve", e);
    }
    const double e = batch_rel(global, xall, gx);
    CHECK_MSG(e <= 1e-12, "gathered to all: %.3e from the single-process solve", e);

    /* independent: the first cell's dense matrix through LAPACK */
    {
        const int32_t n = ns_tree_size(trees[cell_shape[0]]);
        double *r = malloc((size_t)n * sizeof *r);
        CHECK(lapack_hines_solve(n, ns_tree_parent(trees[cell_shape[0]]), ga, gb, gd0, gx0, r) == 0);
        double num = 0.0, den = 0.0;
        for (int32_t i = 0; i < n; ++i) {
            if (fabs(xall[i] - r[i]) > num) num = fabs(xall[i] - r[i]);
            if (fabs(r[i]) > den) den = fabs(r[i]);
        }
        CHECK_MSG(num / den <= 1e-10, "cell 0 against dense LU: %.3e", num / den);
        free(r);
    }
    free(x0);
    free(xall);
    free(la);
    ns_mpi_batch_destroy(mb);
    free(ga);
    ns_batch_destroy(global);
    for (int s = 0; s < 3; ++s) ns_tree_destroy(trees[s]);
    return mpi_test_finish("test_mpi_batch");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
