/* Distributed simulations against the single-process simulation of the same
 * population (Hodgkin-Huxley cells of three sizes, a different current per
 * cell so that spike trains differ): recorded traces, spike times of every
 * cell and the final voltage of every compartment within 1e-12 relative;
 * gathers to rank 0 and to every process. */
#include <stdlib.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"
#include "test_mpi_common.h"

/* A soma and a dendrite of `seg` points, forking into two branches. */
static ns_cell_t *make_cell(int seg) {
    ns_morph_point pts[64];
    int n = 0, prev = 0;
    pts[n++] = (ns_morph_point){0, 0, 0, 10.0, NS_SWC_SOMA, -1, 1, 1};
    for (int k = 0; k < seg; ++k, ++n) {
        pts[n] = (ns_morph_point){10.0 + 20.0 * (k + 1), 0, 0, 1.0, NS_SWC_BASAL, prev, n + 1, n + 1};
        prev = n;
    }
    const int fork = prev;
    for (int br = 0; br < 2; ++br)
        for (int k = 0; k < 3; ++k, ++n)
            pts[n] = (ns_morph_point){pts[fork].x + 15.0 * (k + 1), (br ? 1 : -1) * 15.0 * (k + 1), 0, 0.6,
                                      NS_SWC_BASAL, k == 0 ? fork : n - 1, n + 1, n + 1};
    ns_morph_t *m = NULL;
    ns_cell_t *c = NULL;
    if (ns_morph_from_points("mpi-test", pts, n, &m) != NS_OK) return NULL;
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.rule = NS_NSEG_FIXED_LENGTH;
    o.max_length = 10.0;
    ns_discretize(m, &o, &c);
    ns_morph_destroy(m);
    return c;
}

enum { N_CELLS = 13, N_SHAPES = 3 };

/* The same stimuli and recordings on either simulation (the same calls). */
static void setup(ns_sim_t *sim, const ns_cell_t *const *cells) {
    for (int64_t c = 0; c < N_CELLS; ++c) {
        const ns_cell_t *cell = cells[c % N_SHAPES];
        ns_cell_info ci;
        ns_cell_get_info(cell, &ci);
        /* 0.08 .. 0.2 nA per 1000 um^2: from a few spikes to many */
        CHECK_OK(ns_sim_add_iclamp(sim, c, 0, 2.0, 40.0, (0.8 + 0.1 * (double)c) * 1e-4 * ci.total_area));
        int32_t site;
        CHECK_OK(ns_sim_add_recording(sim, c, 0, &site));
        if (c % 4 == 1) CHECK_OK(ns_sim_add_recording(sim, c, ns_tree_size(ns_cell_tree(cell)) - 1, &site));
    }
}

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    const int seg[N_SHAPES] = {2, 9, 17};
    ns_cell_t *cells[N_SHAPES];
    for (int s = 0; s < N_SHAPES; ++s) {
        cells[s] = make_cell(seg[s]);
        CHECK(cells[s] != NULL);
    }
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = NS_BACKEND_CPU;
    so.method = NS_HINES_SEQUENTIAL;
    so.record_every = 4;
    const double tstop = 30.0;

    /* the single-process reference, on every process */
    ns_sim_t *ref = NULL;
    CHECK_OK(ns_sim_create(N_SHAPES, (const ns_cell_t *const *)cells, N_CELLS, NULL, &p, &so, &ref));
    if (!ref) return mpi_test_finish("test_mpi_sim");
    setup(ref, (const ns_cell_t *const *)cells);
    const int64_t steps = ns_sim_steps_for(ref, tstop);
    CHECK_OK(ns_sim_advance(ref, steps));

    ns_sim_t *ms = NULL;
    CHECK_OK(dist_sim_create(N_SHAPES, (const ns_cell_t *const *)cells, N_CELLS, NULL, &p, &so, &ms));
    if (!ms) return mpi_test_finish("test_mpi_sim");
    CHECK(ns_sim_cells(ms) == N_CELLS);
    CHECK(ns_sim_compartments(ms) == ns_sim_compartments(ref));
    CHECK(ns_sim_steps_for(ms, tstop) == steps);
    setup(ms, (const ns_cell_t *const *)cells);
    /* in uneven chunks: the chunking must not matter */
    CHECK_OK(ns_sim_advance(ms, 7));
    CHECK_OK(ns_sim_advance(ms, steps / 2));
    CHECK_OK(ns_sim_advance(ms, steps - 7 - steps / 2));

    /* every compartment's voltage of every local cell */
    int64_t total_spikes = 0;
    for (int64_t c = 0; c < N_CELLS; ++c) {
        const int64_t lc = ns_sim_local_cell(ms, c);
        if (ns_sim_cell_owner(ms, c) != mpi_rank) {
            CHECK(lc == -1);
            continue;
        }
        CHECK(lc >= 0);
        const int32_t n = ns_tree_size(ns_cell_tree(cells[c % N_SHAPES]));
        double v[256], vr[256], worst = 0.0;
        CHECK_OK(ns_sim_get_state(ns_sim_local(ms), lc, v));
        CHECK_OK(ns_sim_get_state(ref, c, vr));
        for (int32_t i = 0; i < n; ++i)
            if (!(check_rel(v[i], vr[i]) <= worst)) worst = check_rel(v[i], vr[i]);
        CHECK_MSG(worst <= 1e-12, "cell %lld: voltages differ by %.3e", (long long)c, worst);
    }

    for (int root = -1; root <= (mpi_size > 1 ? 1 : 0); ++root) {
        CHECK_OK(ns_sim_gather(ms, root));
        const int receiver = root < 0 || root == mpi_rank;
        int64_t samples = 0, rs = 0;
        int32_t sites = 0, rsites = 0;
        const double *tr = ns_sim_traces(ms, &samples, &sites);
        const double *rt = ns_sim_traces(ref, &rs, &rsites);
        if (!receiver) {
            CHECK(tr == NULL && samples == 0);
            int64_t cnt = 1;
            CHECK(ns_sim_spikes(ms, 0, &cnt) == NULL && cnt == 0);
            continue;
        }
        CHECK(samples == rs && sites == rsites && samples == steps / 4 + 1);
        double worst = 0.0;
        for (int64_t i = 0; tr && samples == rs && sites == rsites && i < samples * sites; ++i)
            if (!(check_rel(tr[i], rt[i]) <= worst)) worst = check_rel(tr[i], rt[i]);
        CHECK_MSG(worst <= 1e-12, "root %d: traces differ by %.3e", root, worst);
        total_spikes = 0;
        for (int64_t c = 0; c < N_CELLS; ++c) {
            int64_t n = -1, nr = -2;
            const double *sp = ns_sim_spikes(ms, c, &n), *spr = ns_sim_spikes(ref, c, &nr);
            CHECK_MSG(n == nr, "root %d cell %lld: %lld spikes, single process %lld", root, (long long)c,
                      (long long)n, (long long)nr);
            for (int64_t k = 0; n == nr && k < n; ++k)
                CHECK_MSG(check_rel(sp[k], spr[k]) <= 1e-12, "cell %lld spike %lld: %.17g vs %.17g", (long long)c,
                          (long long)k, sp[k], spr[k]);
            total_spikes += nr;
        }
        /* the comparison means something only if there are spikes */
        CHECK_MSG(total_spikes >= N_CELLS, "only %lld spikes in %d cells", (long long)total_spikes, N_CELLS);
    }
    ns_sim_destroy(ms);
    ns_sim_destroy(ref);
    for (int s = 0; s < N_SHAPES; ++s) ns_cell_destroy(cells[s]);
    return mpi_test_finish("test_mpi_sim");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
