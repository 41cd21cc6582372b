/* LiFE on GPUs over processes (docs/mpi.md, "LiFE on GPUs"): each process
 * takes one GPU (ns_mpi_bind_device; several processes may share one),
 * holds its voxels' coefficients there, and SBBNNLS sums the device fiber
 * vectors over processes through a pinned host buffer. Checked against:
 *   - the single-process CPU fit of the whole model, run to convergence:
 *     weights within 1e-12 relative (the minimiser is unique: full column
 *     rank, no noise), and loosely the true weights (the independent
 *     reference);
 *   - the single-process CPU fit after a fixed 50 updates, within 1e-9 (the
 *     tolerance of tests/life/test_life_cuda.c: GPU and CPU products round
 *     differently, and the steps of SBBNNLS amplify that over the updates);
 *   - every process holds the same weights, bit for bit;
 *   - a bad start on the last rank ends every process, already inside the
 *     GPU fit, with that rank's message.
 * Without a usable GPU on some process every process skips (exit 77). */
#include <stdlib.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"
#include "test_life_common.h"
#include "test_mpi_common.h"

/* The weights of every process equal rank 0's bit for bit. */
static int same_everywhere(const double *w, int32_t n) {
    double *w0 = malloc((size_t)n * sizeof *w0);
    if (!w0) return 0;
    memcpy(w0, w, (size_t)n * sizeof *w0);
    MPI_Bcast(w0, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int same = memcmp(w0, w, (size_t)n * sizeof *w0) == 0, all = 0;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    free(w0);
    return all;
}

/* This process's GPU (ns_mpi_bind_device), passed down in the options. */
static int bound_device = NS_DEVICE_CURRENT;

/* Fit `g` on one process (CPU) and over the processes (CUDA), compare. */
static void compare(ns_life_model_t *g, const ns_life_fit_options *fo, double tol, const char *what) {
    const int32_t nf = ns_life_model_n_fibers(g);
    ns_life_options lo;
    ns_life_options_init(&lo);
    lo.backend = NS_BACKEND_CPU;
    lo.threads = 1;
    ns_life_engine_t *ge = NULL, *le = NULL;
    ns_life_model_t *l = NULL;
    CHECK_OK(ns_life_engine_create(g, &lo, &ge));
    CHECK_OK(ns_mpi_life_partition(MPI_COMM_WORLD, g, &l, NULL, NULL));
    lo.backend = NS_BACKEND_CUDA;
    lo.device = bound_device;
    ns_status st = l ? ns_life_engine_create(l, &lo, &le) : NS_ERR_INTERNAL;
    CHECK_OK(ns_mpi_agree(MPI_COMM_WORLD, st));
    double *wg = malloc((size_t)nf * sizeof *wg), *wl = malloc((size_t)nf * sizeof *wl);
    if (ge && le && wg && wl) {
        ns_life_fit_result rg, rl;
        CHECK_OK(ns_life_fit(ge, fo, wg, NULL, &rg));
        CHECK_OK(ns_mpi_life_fit(MPI_COMM_WORLD, le, fo, wl, NULL, &rl));
        CHECK(ns_life_engine_backend(le) == NS_BACKEND_CUDA);
        CHECK_MSG(rl.stop == rg.stop, "%s: stops %s (one process, CPU) / %s (processes, CUDA) after %d / %d updates",
                  what, ns_life_stop_name(rg.stop), ns_life_stop_name(rl.stop), (int)rg.updates, (int)rl.updates);
        const double ew = rel_inf(wl, wg, nf);
        CHECK_MSG(ew <= tol, "%s: weights %.3e from the single-process CPU fit (%d / %d updates)", what, ew,
                  (int)rl.updates, (int)rg.updates);
        CHECK_MSG(same_everywhere(wl, nf), "%s: the processes hold different weights", what);
        if (mpi_rank == 0)
            printf("%s, %d processes on GPUs: weights %.2e from one CPU process (%d / %d updates, stop %s)\n", what,
                   mpi_size, ew, (int)rl.updates, (int)rg.updates, ns_life_stop_name(rl.stop));
        const double *wt = ns_life_model_true_weights(g);
        if (fo->tol_gradient > 0 && wt)
            CHECK_MSG(rel_inf(wl, wt, nf) <= 1e-6, "%s: weights %.3e from the true weights", what,
                      rel_inf(wl, wt, nf));
    }
    free(wg);
    free(wl);
    ns_life_engine_destroy(le);
    ns_life_engine_destroy(ge);
    ns_life_model_destroy(l);
}

/* The last rank passes a bad start: it fails before its first sum, while
 * the others are inside the GPU fit; every process returns its message. */
static void bad_start(ns_life_model_t *g) {
    const int last = mpi_size - 1;
    const int32_t nf = ns_life_model_n_fibers(g);
    ns_life_options lo;
    ns_life_options_init(&lo);
    lo.backend = NS_BACKEND_CUDA;
    lo.device = bound_device;
    ns_life_model_t *l = NULL;
    ns_life_engine_t *e = NULL;
    CHECK_OK(ns_mpi_life_partition(MPI_COMM_WORLD, g, &l, NULL, NULL));
    ns_status st = l ? ns_life_engine_create(l, &lo, &e) : NS_ERR_INTERNAL;
    CHECK_OK(ns_mpi_agree(MPI_COMM_WORLD, st));
    double *w = malloc((size_t)nf * sizeof *w), *w0 = calloc((size_t)nf, sizeof *w0);
    if (e && w && w0) {
        w0[2] = -1.0;
        ns_life_fit_options fo;
        ns_life_fit_options_init(&fo);
        fo.max_iterations = 20;
        if (mpi_rank == last) fo.w0 = w0;
        st = ns_mpi_life_fit(MPI_COMM_WORLD, e, &fo, w, NULL, NULL);
        char tag[64];
        snprintf(tag, sizeof tag, "rank %d of %d: ", last, mpi_size);
        CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT, "bad start: status %s", ns_status_string(st));
        CHECK_MSG(strncmp(ns_last_error(), tag, strlen(tag)) == 0 && strstr(ns_last_error(), "w0[2]"),
                  "bad start: message '%s'", ns_last_error());
    }
    free(w);
    free(w0);
    ns_life_engine_destroy(e);
    ns_life_model_destroy(l);
    MPI_Barrier(MPI_COMM_WORLD); /* nobody was left in a collective */
}

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    /* one GPU per process: an ordinal for the options, nothing set in the environment */
    int device = -1, n = 0, local_rank = -1;
    ns_status st = ns_mpi_bind_device(MPI_COMM_WORLD, 1, &device, &local_rank, NULL);
    int usable = st == NS_OK && ns_cuda_device_count(&n) == NS_OK && n > 0, all = 0;
    if (usable) {
        CHECK_MSG(device == local_rank % n, "bound device %d, local rank %d of %d GPUs", device, local_rank, n);
        bound_device = device;
    }
    MPI_Allreduce(&usable, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        /* printed before MPI_Finalize: OpenMPI ends the job as soon as one
         * process exits non-zero, which may cut off a later print */
        if (mpi_rank == 0) printf("SKIPPED: no GPU (on some process)\n");
        fflush(stdout);
        MPI_Finalize();
        return 77;
    }

    /* to convergence (the model of tests/mpi/test_mpi_life.c) */
    ns_life_model_t *g = tiny_model(12, 7, 40, 8, 0.0, 3);
    CHECK(g != NULL);
    if (!g) return mpi_test_finish("test_mpi_life_cuda");
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = 4000;
    fo.tol_gradient = 1e-13;
    fo.tol_objective = 0.0;
    fo.rtol_gradient = 0.0; /* a tight fit: no relative stop */
    fo.rtol_objective = 0.0;
    compare(g, &fo, 1e-12, "converged");
    bad_start(g);
    ns_life_model_destroy(g);

    /* a fixed number of updates on a larger model, 96 directions (padded
     * to 128 rows on the device), with noise */
    g = tiny_model(96, 12, 300, 10, 0.1, 3);
    CHECK(g != NULL);
    if (!g) return mpi_test_finish("test_mpi_life_cuda");
    fo.max_iterations = 51;
    fo.tol_gradient = 0.0;
    compare(g, &fo, 1e-9, "50 updates");
    ns_life_model_destroy(g);
    return mpi_test_finish("test_mpi_life_cuda");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
