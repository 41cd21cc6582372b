/* A failure on one process ends the collective call on every process with
 * that process's message, and mismatched inputs are detected:
 *   - an unreadable file on the last rank (ns_swc_read + ns_mpi_agree);
 *   - a bad parameter on the last rank (ns_sim_create with ns_sim_options.dist);
 *   - a different cell count on the last rank (ns_mpi_batch_create);
 *   - a stimulus outside its cell, reported at the next collective call;
 *   - a bad argument to SBBNNLS on the last rank only, while the others are
 *     already inside the fit waiting in its first sum;
 * and afterwards every process still meets the others (a barrier), so none
 * was left behind in a collective. A hang fails by ctest's timeout. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"
#include "test_life_common.h"
#include "test_mpi_common.h"

/* The status and message every process must see for a failure on `rank`. */
static void expect(ns_status got, ns_status want, int rank, const char *fragment, const char *what) {
    char tag[64];
    snprintf(tag, sizeof tag, "rank %d of %d: ", rank, mpi_size);
    CHECK_MSG(got == want, "%s: status %s, expected %s", what, ns_status_string(got), ns_status_string(want));
    CHECK_MSG(strncmp(ns_last_error(), tag, strlen(tag)) == 0, "%s: message '%s' does not start with '%s'", what,
              ns_last_error(), tag);
    CHECK_MSG(strstr(ns_last_error(), fragment) != NULL, "%s: message '%s' lacks '%s'", what, ns_last_error(),
              fragment);
}

static ns_cell_t *read_cell(const char *path) {
    ns_morph_t *m = NULL;
    ns_cell_t *c = NULL;
    ns_status st = ns_swc_read(path, NULL, &m);
    if (st == NS_OK) {
        ns_discretize_options o;
        ns_discretize_options_init(&o);
        st = ns_discretize(m, &o, &c);
    }
    ns_morph_destroy(m);
    (void)st;
    return c;
}

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    const int last = mpi_size - 1;
    char good[1024];
    snprintf(good, sizeof good, "%s/dg_granule_1220882a.swc", NS_MORPHOLOGIES);

    /* 1. an unreadable file on the last rank */
    {
        ns_morph_t *m = NULL;
        ns_status st = ns_swc_read(mpi_rank == last ? "/nonexistent/cell.swc" : good, NULL, &m);
        st = ns_mpi_agree(MPI_COMM_WORLD, st);
        expect(st, NS_ERR_IO, last, "/nonexistent/cell.swc", "unreadable file");
        ns_morph_destroy(m);
        /* and agreement on success */
        CHECK_OK(ns_mpi_agree(MPI_COMM_WORLD, NS_OK));
    }
    ns_cell_t *cell = read_cell(good);
    CHECK(cell != NULL);
    if (!cell) return mpi_test_finish("test_mpi_fail");
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_params p;
    ns_sim_params_init(&p);

    /* 2. a bad parameter on the last rank */
    {
        ns_sim_params q = p;
        if (mpi_rank == last) q.dt = -0.025;
        ns_sim_t *s = NULL;
        ns_status st = dist_sim_create(1, shapes, 4, NULL, &q, NULL, &s);
        expect(st, NS_ERR_INVALID_ARGUMENT, last, "dt", "bad parameter");
        CHECK(s == NULL);
    }
    /* 3. mismatched inputs (only with two processes or more) */
    if (mpi_size > 1) {
        const ns_tree_t *trees[1] = {ns_cell_tree(cell)};
        ns_mpi_batch_t *b = NULL;
        ns_status st = ns_mpi_batch_create(MPI_COMM_WORLD, 1, trees, mpi_rank == last ? 9 : 8, NULL, &b);
        CHECK(st == NS_ERR_INVALID_ARGUMENT && b == NULL);
        CHECK_MSG(strstr(ns_last_error(), "differs between ranks") != NULL, "'%s'", ns_last_error());
        char tag[32];
        snprintf(tag, sizeof tag, "rank %d has", last);
        CHECK_MSG(strstr(ns_last_error(), tag) != NULL, "'%s' lacks '%s'", ns_last_error(), tag);
        ns_sim_params q = p;
        if (mpi_rank == last) q.celsius = 6.4;
        ns_sim_t *s = NULL;
        st = dist_sim_create(1, shapes, 4, NULL, &q, NULL, &s);
        CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "differs between ranks"), "'%s'",
                  ns_last_error());
    }
    /* 4. a stimulus outside its cell: the owner fails at once, everyone at
     * the next collective call */
    {
        ns_sim_t *s = NULL;
        CHECK_OK(dist_sim_create(1, shapes, 5, NULL, &p, NULL, &s));
        const int64_t cell_no = 4;
        const int owner = ns_sim_cell_owner(s, cell_no);
        ns_status st = ns_sim_add_iclamp(s, cell_no, 1000000, 1.0, 1.0, 0.1);
        CHECK(mpi_rank == owner ? st == NS_ERR_INVALID_ARGUMENT : st == NS_OK);
        st = ns_sim_advance(s, 10);
        expect(st, NS_ERR_INVALID_ARGUMENT, owner, "1000000", "stimulus outside the cell");
        /* reported once: the run goes on afterwards */
        CHECK_OK(ns_sim_advance(s, 10));
        CHECK(ns_sim_add_iclamp(s, 99, 0, 1.0, 1.0, 0.1) == NS_ERR_INVALID_ARGUMENT);
        expect(ns_sim_gather(s, 0), NS_ERR_INVALID_ARGUMENT, 0, "cell 99", "stimulus outside the population");
        ns_sim_destroy(s);
    }
    /* 5. SBBNNLS: the last rank fails before its first sum */
    {
        ns_life_model_t *g = tiny_model(8, 5, 20, 6, 0.0, 9), *l = NULL;
        CHECK_OK(ns_mpi_life_partition(MPI_COMM_WORLD, g, &l, NULL, NULL));
        ns_life_options lo;
        ns_life_options_init(&lo);
        lo.backend = NS_BACKEND_CPU;
        lo.threads = 1;
        ns_life_engine_t *e = NULL;
        CHECK_OK(ns_life_engine_create(l, &lo, &e));
        const int32_t nf = ns_life_model_n_fibers(g);
        double *w = malloc((size_t)nf * sizeof *w), *w0 = calloc((size_t)nf, sizeof *w0);
        w0[3] = -1.0;
        ns_life_fit_options fo;
        ns_life_fit_options_init(&fo);
        fo.max_iterations = 20;
        if (mpi_rank == last) fo.w0 = w0;
        expect(ns_mpi_life_fit(MPI_COMM_WORLD, e, &fo, w, NULL, NULL), NS_ERR_INVALID_ARGUMENT, last, "w0[3]",
               "bad start on one rank");
        /* a different model on one rank */
        if (mpi_size > 1) {
            if (mpi_rank == last) ns_life_model_signal(g)[5] += 1e-9;
            ns_life_model_t *l2 = NULL;
            ns_status st = ns_mpi_life_partition(MPI_COMM_WORLD, g, &l2, NULL, NULL);
            CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "LiFE model differs"), "'%s'",
                      ns_last_error());
            CHECK(l2 == NULL);
        }
        free(w);
        free(w0);
        ns_life_engine_destroy(e);
        ns_life_model_destroy(l);
        ns_life_model_destroy(g);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ns_cell_destroy(cell);
    return mpi_test_finish("test_mpi_fail");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
