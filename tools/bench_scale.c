/* neurosolve bench scale: LiFE strong scaling over MPI processes
 * (docs/mpi.md, bench/mpi_scaling.sh). Every process builds the same model
 * (synthetic, or loaded from a model directory), keeps its voxels
 * (ns_mpi_life_partition) and runs a fixed number of SBBNNLS updates
 * through ns_mpi_life_fit; the time is the slowest process's, between two
 * barriers. Run it under `mpirun -np K` for K = 1, 2, 4 and compare: the
 * weights (--out) must agree across K, the time should fall as 1/K.
 * The simulation's weak scaling needs no command of its own: it is
 * `mpirun -np K neurosolve simulate ... --cells K*N --json` (wall_s). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(void) {
    printf("usage: mpirun -np K neurosolve bench scale [options]\n"
           "  --fibers N        synthetic model with N fibers (default 50000)\n"
           "  --grid X,Y,Z --L N --theta N --seed S   the synthetic model (see life synth; L 360 here)\n"
           "  --model DIR       load a model directory instead (life synth --out DIR)\n"
           "  --iters N         SBBNNLS updates, fixed: tolerances off (default 50)\n"
           "  --backend cpu|cuda  (default auto: cuda when a GPU is usable)\n"
           "  --threads T       CPU threads per process (default: OpenMP's)\n"
           "  --out FILE.npy    the weights (rank 0), to compare runs of different K\n"
           "  --json            one JSON document on stdout\n");
}

#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"


int bench_scale(int argc, char **argv) {
    ns_life_synth_options so;
    ns_life_synth_options_init(&so);
    so.dictionary_l = 360; /* the paper's models (ENCODE's L): the benchmark tables are on them */
    ns_life_options lo;
    ns_life_options_init(&lo);
    const char *model_dir = NULL, *out = NULL;
    long long iters = 50, x = 0;
    int as_json = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--help") == 0) { help(); return 0; }
        else if (strcmp(a, "--fibers") == 0) ok = cli_parse_long("bench scale", a, v, 1, INT32_MAX, &x), so.n_fibers = (int32_t)x, ++i;
        else if (strcmp(a, "--L") == 0) ok = cli_parse_long("bench scale", a, v, 2, 4096, &x), so.dictionary_l = (int32_t)x, ++i;
        else if (strcmp(a, "--theta") == 0) ok = cli_parse_long("bench scale", a, v, 1, 4096, &x), so.n_theta = (int32_t)x, ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long("bench scale", a, v, 0, 1LL << 62, &x), so.seed = (uint64_t)x, ++i;
        else if (strcmp(a, "--grid") == 0) ok = cli_parse_grid("bench scale", a, v, 1, 4096, so.grid), ++i;
        else if (strcmp(a, "--model") == 0 && v) model_dir = v, ++i;
        else if (strcmp(a, "--iters") == 0) ok = cli_parse_long("bench scale", a, v, 2, 1000000, &iters), ++i;
        else if (strcmp(a, "--threads") == 0) ok = cli_parse_long("bench scale", a, v, 1, 4096, &x), lo.threads = (int32_t)x, ++i;
        else if (strcmp(a, "--backend") == 0 && v) {
            if (ns_backend_from_name(v, &lo.backend) != NS_OK) return cli_usage_error("bench scale", "unknown backend '%s'", v);
            ++i;
        } else if (strcmp(a, "--out") == 0 && v) out = v, ++i;
        else if (strcmp(a, "--json") == 0) as_json = 1;
        else return cli_usage_error("bench scale", "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    if (!model_dir && ns_life_synth_options_check(&so) != NS_OK)
        return cli_usage_error("bench scale", "%s", ns_last_error());
    if (!cli_mpi_active())
        fprintf(stderr, "neurosolve bench scale: not launched by mpirun: one process\n");
    MPI_Comm comm = MPI_COMM_WORLD;
    const int mpi = cli_mpi_active();
    ns_life_model_t *g = NULL, *l = NULL;
    ns_life_engine_t *e = NULL;
    double *w = NULL;
    int rc = 1;
    const double t_build = mpi ? MPI_Wtime() : 0.0;
    ns_status st = model_dir ? ns_life_model_load(model_dir, &g) : ns_life_synth(&so, &g);
    if (mpi) st = ns_mpi_agree(comm, st);
    if (st != NS_OK) { cli_status_error(model_dir ? model_dir : "synthetic model", st); goto done; }
    int32_t v0 = 0, nv = ns_life_model_n_voxels(g);
    if (mpi) {
        st = ns_mpi_life_partition(comm, g, &l, &v0, &nv);
        if (st != NS_OK) { cli_status_error("partition", st); goto done; }
    }
    const long long fibers = ns_life_model_n_fibers(g), voxels = ns_life_model_n_voxels(g),
                    coeffs = ns_life_model_n_coeffs(g);
    long long local_coeffs = ns_life_model_n_coeffs(l ? l : g), max_coeffs = local_coeffs;
    st = ns_life_engine_create(l ? l : g, &lo, &e);
    if (mpi) st = ns_mpi_agree(comm, st);
    if (st != NS_OK) { cli_status_error("LiFE engine", st); goto done; }
    if (mpi) {
        /* each process needs its part only: the global model can go */
        ns_life_model_destroy(g);
        g = NULL;
        MPI_Allreduce(&local_coeffs, &max_coeffs, 1, MPI_LONG_LONG, MPI_MAX, comm);
    }
    const double build_s = mpi ? MPI_Wtime() - t_build : 0.0;
    w = malloc((size_t)fibers * sizeof *w);
    if (!w) { cli_error("out of memory"); goto done; }
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    fo.max_iterations = (int32_t)iters + 1; /* maxit - 1 updates */
    fo.tol_gradient = 0.0;
    fo.tol_objective = 0.0;
    fo.rtol_gradient = fo.rtol_objective = 0.0; /* a fixed number of updates */
    ns_life_fit_result res;
    if (mpi) MPI_Barrier(comm);
    const double t0 = mpi ? MPI_Wtime() : 0.0;
    st = mpi ? ns_mpi_life_fit(comm, e, &fo, w, NULL, &res) : ns_life_fit(e, &fo, w, NULL, &res);
    if (mpi) MPI_Barrier(comm);
    const double seconds = mpi ? MPI_Wtime() - t0 : res.seconds;
    if (st != NS_OK) { cli_status_error("SBBNNLS", st); goto done; }
    if (out && cli_mpi_rank() == 0) {
        st = ns_life_vector_save(out, w, fibers);
        if (st != NS_OK) { cli_status_error(out, st); goto done; }
    }
    const double balance = (double)max_coeffs / ((double)coeffs / cli_mpi_size());
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_int(&j, "processes", cli_mpi_size());
        json_string(&j, "backend", ns_backend_name(ns_life_engine_backend(e)));
        json_int(&j, "fibers", fibers);
        json_int(&j, "voxels", voxels);
        json_int(&j, "coefficients", coeffs);
        json_double(&j, "coefficient_imbalance", balance);
        json_int(&j, "updates", res.updates);
        json_double(&j, "seconds", seconds);
        json_double(&j, "seconds_per_update", seconds / (res.updates > 0 ? res.updates : 1));
        json_double(&j, "setup_seconds", build_s);
        json_double(&j, "objective", res.objective);
        json_int(&j, "nonzero", res.nonzero);
        json_end(&j);
    } else {
        printf("LiFE strong scaling: %d process%s, backend %s; %lld fibers, %lld voxels, %lld coefficients "
               "(largest part %.3f of an even share)\n",
               cli_mpi_size(), cli_mpi_size() == 1 ? "" : "es", ns_backend_name(ns_life_engine_backend(e)), fibers,
               voxels, coeffs, balance);
        printf("SBBNNLS: %d updates in %.3f s (%.3f ms per update); objective %.6e, %lld non-zero weights\n",
               (int)res.updates, seconds, 1e3 * seconds / (res.updates > 0 ? res.updates : 1), res.objective,
               (long long)res.nonzero);
    }
    rc = 0;
done:
    free(w);
    ns_life_engine_destroy(e);
    ns_life_model_destroy(l);
    ns_life_model_destroy(g);
    return rc;
}
#else
int bench_scale(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            help();
            printf("(this build has no MPI: cmake -DNS_MPI=ON; docs/mpi.md)\n");
            return 0;
        }
    return cli_error("bench scale needs a build with MPI (cmake -DNS_MPI=ON; docs/mpi.md)");
}
#endif
