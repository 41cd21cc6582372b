/* Networks under MPI need MPI_THREAD_FUNNELED (the spike exchange runs on
 * the master thread inside the CPU loop's OpenMP region): under plain
 * MPI_Init, ns_sim_init refuses a network on every process with a
 * message naming MPI_Init_thread, and still runs a simulation without one.
 * An MPI whose MPI_Init already provides FUNNELED skips (nothing to refuse). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"

static ns_dist_t *dist = NULL; /* MPI_COMM_WORLD's */

static ns_sim_t *passive(const ns_cell_t *cell) {
    const char *text = "all.insert = pas\n";
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &model));
    if (model) CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "test.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = model;
    o.dist = dist;
    ns_sim_t *ms = NULL;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, 2, NULL, &p, &o, &ms));
    ns_sim_model_destroy(model);
    return ms;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv); /* deliberately without thread support */
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level >= MPI_THREAD_FUNNELED) {
        MPI_Finalize();
        CHECK_SKIP("this MPI's MPI_Init provides MPI_THREAD_FUNNELED: nothing to refuse");
    }
    CHECK_OK(ns_dist_from_comm(MPI_COMM_WORLD, &dist));
    ns_cell_t *cell = test_cylinder();
    ns_sim_t *ms = cell && dist ? passive(cell) : NULL;
    if (ms) {
        CHECK_OK(ns_sim_init(ms)); /* no network: MPI_Init is enough */
        CHECK_OK(ns_sim_advance(ms, 10));
        int64_t syn = -1, train = -1;
        const double t[1] = {0.1};
        CHECK_OK(ns_sim_add_synapse(ms, 1, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(ms, t, 1, &train));
        CHECK_OK(ns_sim_connect(ms, train, syn, 0.01, 1.0));
        CHECK_FAILS(ns_sim_init(ms), NS_ERR_UNSUPPORTED, "MPI_Init_thread", "MPI_THREAD_FUNNELED");
        CHECK(ns_sim_advance(ms, 10) != NS_OK); /* refused: not initialised after the change */
        ns_sim_destroy(ms);
    }
    ns_cell_destroy(cell);
    ns_dist_destroy(dist);
    MPI_Barrier(MPI_COMM_WORLD);
    int failures = check_failures, all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    check_failures = all;
    return check_summary("test_mpi_funneled");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
