/* The command under mpirun (docs/mpi.md). Built with MPI, `neurosolve`
 * notices a launcher (mpirun, mpiexec, srun with PMI/PMIx) and then:
 *   - initialises MPI and gives each process one GPU of its node;
 *   - lets only rank 0 print: the other ranks' stdout goes to /dev/null and
 *     their stderr to a temporary file, whose last line becomes the message
 *     rank 0 prints if that rank fails on its own;
 *   - spreads `solve` and `simulate` over the processes (cells by LPT over
 *     compartment counts; simulate through ns_sim_options.dist =
 *     cli_mpi_dist()), with results gathered so that output is the same as
 *     a single process's;
 *   - ends every process with the same exit code.
 * Without MPI, or when not launched by an MPI launcher, everything here is
 * a pass-through to the single-process calls. */
#define _POSIX_C_SOURCE 200809L /* dup2, fileno */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"
#ifdef NS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static int mpi_on = 0, mpi_rank = 0, mpi_size = 1;
static int mpi_device = NS_DEVICE_CURRENT; /* this process's GPU (ns_mpi_bind_device) */
static FILE *captured = NULL; /* non-root stderr */
static ns_dist_t *mpi_dist = NULL; /* MPI_COMM_WORLD's, for simulate (ns_sim_options.dist) */
static long long failures_at_start = 0;

static int launched_by_mpi(void) {
    const char *force = getenv("NEUROSOLVE_MPI");
    if (force) return strcmp(force, "0") != 0;
    /* OpenMPI, MPICH/Intel MPI (PMI), PMIx launchers (srun --mpi=pmix) */
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

void cli_mpi_begin(int *argc, char ***argv) {
    if (!launched_by_mpi()) return;
    /* FUNNELED: a network's spike exchange runs on the master thread inside the OpenMP loop */
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return;
    mpi_on = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    const char *all = getenv("NEUROSOLVE_MPI_OUTPUT");
    if (mpi_rank != 0 && !(all && strcmp(all, "all") == 0)) {
        if (!freopen("/dev/null", "w", stdout)) { /* keep printing rather than fail */
        }
        captured = tmpfile();
        if (captured) {
            fflush(stderr);
            dup2(fileno(captured), fileno(stderr));
        }
    }
    /* one GPU per process, passed down in the options of solve and
     * simulate; NEUROSOLVE_MPI_BIND=0 leaves it to the launcher */
    const char *bind = getenv("NEUROSOLVE_MPI_BIND");
    ns_status st = ns_mpi_bind_device(MPI_COMM_WORLD, !(bind && strcmp(bind, "0") == 0), &mpi_device, NULL, NULL);
    if (st != NS_OK) cli_status_error("binding a GPU to each MPI process", st);
#ifdef NS_HAVE_CUDA
    /* the command's own choice: the bound GPU is also this process's current
     * device, so that the benchmarks (handles with NS_DEVICE_CURRENT) run on it */
    if (st == NS_OK && mpi_device >= 0 && cudaSetDevice(mpi_device) != cudaSuccess)
        fprintf(stderr, "neurosolve: warning: cannot make GPU %d current\n", mpi_device);
#endif
    if (st == NS_OK) {
        st = ns_dist_from_comm(MPI_COMM_WORLD, &mpi_dist);
        if (st != NS_OK) cli_status_error("MPI", st);
    }
    failures_at_start = ns_mpi_failed_agreements();
}

/* The last non-empty line this process wrote to its captured stderr. */
static void last_line(char *out, size_t cap) {
    out[0] = '\0';
    if (!captured) return;
    fflush(stderr);
    long size = ftell(captured);
    if (size <= 0) return;
    long from = size > (long)cap - 1 ? size - ((long)cap - 1) : 0;
    fseek(captured, from, SEEK_SET);
    size_t n = fread(out, 1, cap - 1, captured);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r')) out[--n] = '\0';
    char *nl = strrchr(out, '\n');
    if (nl) memmove(out, nl + 1, strlen(nl + 1) + 1);
}

int cli_mpi_end(int rc) {
    if (!mpi_on) return rc;
    /* Every process meets once more to agree on the outcome, unless this
     * one failed in an agreement the others took part in (they know). */
    if (!(rc != 0 && ns_mpi_failed_agreements() > failures_at_start)) {
        char msg[1024];
        last_line(msg, sizeof msg);
        if (rc != 0 && !msg[0]) snprintf(msg, sizeof msg, "exit code %d", rc);
        ns_status st = ns_mpi_agree_message(MPI_COMM_WORLD, rc != 0 ? NS_ERR_IO : NS_OK, msg);
        /* rank 0 reports another rank's failure (its own is printed) */
        if (st != NS_OK && rc == 0) {
            if (mpi_rank == 0) fprintf(stderr, "neurosolve: %s\n", ns_last_error());
            rc = 1;
        }
    }
    ns_dist_destroy(mpi_dist);
    mpi_dist = NULL;
    MPI_Finalize();
    return rc;
}

int cli_mpi_active(void) { return mpi_on && mpi_size > 0; }
int cli_mpi_rank(void) { return mpi_rank; }
int cli_mpi_size(void) { return mpi_size; }

ns_status cli_mpi_solve(const ns_batch_t *batch, const ns_solve_options *opt, const double *a, const double *b,
                        double *d, double *rhs, ns_solve_timing *tm, ns_hines_method *method,
                        ns_backend *backend) {
    const int32_t n_shapes = ns_batch_shapes(batch);
    const ns_tree_t **shapes = malloc((size_t)n_shapes * sizeof *shapes);
    ns_mpi_batch_t *mb = NULL;
    double *loc = NULL;
    ns_status st = ns_mpi_agree_message(MPI_COMM_WORLD, shapes ? NS_OK : NS_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t s = 0; st == NS_OK && s < n_shapes; ++s) shapes[s] = ns_batch_shape(batch, s);
    const double t0 = MPI_Wtime();
    if (st == NS_OK)
        st = ns_mpi_batch_create(MPI_COMM_WORLD, n_shapes, shapes, ns_batch_cells(batch), ns_batch_cell_shape(batch),
                                 &mb);
    const int64_t n = ns_mpi_batch_local_compartments(mb);
    if (st == NS_OK) st = (loc = malloc((size_t)(4 * n + 1) * sizeof *loc)) ? NS_OK : NS_ERR_OUT_OF_MEMORY;
    if (st == NS_OK) {
        /* every process holds the whole batch's values; each solves its cells */
        ns_mpi_batch_extract(mb, a, loc);
        ns_mpi_batch_extract(mb, b, loc + n);
        ns_mpi_batch_extract(mb, d, loc + 2 * n);
        ns_mpi_batch_extract(mb, rhs, loc + 3 * n);
    }
    if (mb) st = ns_mpi_agree_message(MPI_COMM_WORLD, st, "out of memory for this process's cells");
    ns_solve_options o = *opt;
    if (o.device == NS_DEVICE_CURRENT) o.device = mpi_device;
    if (st == NS_OK) st = ns_mpi_hines_solve(mb, &o, loc, loc + n, loc + 2 * n, loc + 3 * n, tm, method, backend);
    /* every process receives every solution, so the checks run anywhere */
    if (st == NS_OK) st = ns_mpi_batch_gather(mb, -1, loc + 3 * n, rhs);
    if (st == NS_OK && tm) tm->total_ms = (MPI_Wtime() - t0) * 1e3;
    /* rank 0 may own no cells only when cells < processes; report its
     * neighbours' method then */
    if (st == NS_OK && method && backend) {
        int m = (int)*method, bk = (int)*backend, mm = 0, bb = 0;
        MPI_Allreduce(&m, &mm, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Allreduce(&bk, &bb, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        *method = (ns_hines_method)mm;
        *backend = (ns_backend)bb;
    }
    free(loc);
    free(shapes);
    ns_mpi_batch_destroy(mb);
    return st;
}

const ns_dist_t *cli_mpi_dist(void) { return mpi_dist; }

#else /* no MPI: single-process pass-throughs */

void cli_mpi_begin(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
}
int cli_mpi_end(int rc) { return rc; }
int cli_mpi_active(void) { return 0; }
int cli_mpi_rank(void) { return 0; }
int cli_mpi_size(void) { return 1; }
ns_status cli_mpi_solve(const ns_batch_t *batch, const ns_solve_options *opt, const double *a, const double *b,
                        double *d, double *rhs, ns_solve_timing *tm, ns_hines_method *method,
                        ns_backend *backend) {
    (void)batch, (void)opt, (void)a, (void)b, (void)d, (void)rhs, (void)tm, (void)method, (void)backend;
    return NS_ERR_UNSUPPORTED;
}

const ns_dist_t *cli_mpi_dist(void) { return NULL; }
#endif
