/* The command under mpirun (docs/mpi.md). Built with MPI, `neurosolve`
 * notices a launcher (mpirun, mpiexec, srun with PMI/PMIx) and then:
 *   - initialises MPI and gives each process one GPU of its node;
 *   - lets only rank 0 print: the other ranks' stdout goes to /dev/null and
 *     their stderr to a temporary file, whose last line becomes the message
 *     rank 0 prints if that rank fails on its own;
 *   - spreads `solve` and `simulate` over the processes (cells by LPT over
 *     compartment counts), with results gathered so that output is the
 *     same as a single process's;
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

struct cli_sim {
    ns_sim_t *local;
    ns_mpi_sim_t *dist;
};

ns_status cli_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                         const int32_t *cell_shape, const ns_sim_params *params, const ns_sim_options *options,
                         cli_sim **out) {
    cli_sim *s = calloc(1, sizeof *s);
    *out = NULL;
    ns_status st = mpi_on ? ns_mpi_agree_message(MPI_COMM_WORLD, s ? NS_OK : NS_ERR_OUT_OF_MEMORY, "out of memory")
                          : (s ? NS_OK : NS_ERR_OUT_OF_MEMORY);
    ns_sim_options o;
    if (options) o = *options;
    else ns_sim_options_init(&o);
    if (mpi_on && o.device == NS_DEVICE_CURRENT) o.device = mpi_device;
    if (st == NS_OK)
        st = mpi_on ? ns_mpi_sim_create(MPI_COMM_WORLD, n_shapes, shapes, n_cells, cell_shape, params, &o, &s->dist)
                    : ns_sim_create(n_shapes, shapes, n_cells, cell_shape, params, options, &s->local);
    if (st != NS_OK) {
        free(s);
        return st;
    }
    *out = s;
    return NS_OK;
}

void cli_sim_destroy(cli_sim *s) {
    if (!s) return;
    ns_sim_destroy(s->local);
    ns_mpi_sim_destroy(s->dist);
    free(s);
}

ns_status cli_sim_add_iclamp(cli_sim *s, int64_t cell, int32_t compartment, double delay, double duration,
                             double amplitude) {
    if (s->dist) {
        /* an owner's failure is reported to all at the next collective */
        ns_status st = ns_mpi_sim_add_iclamp(s->dist, cell, compartment, delay, duration, amplitude);
        (void)st;
        return NS_OK;
    }
    return ns_sim_add_iclamp(s->local, cell, compartment, delay, duration, amplitude);
}

ns_status cli_sim_add_recording(cli_sim *s, int64_t cell, int32_t compartment, int32_t *site) {
    if (s->dist) {
        ns_status st = ns_mpi_sim_add_recording(s->dist, cell, compartment, site);
        (void)st;
        return NS_OK;
    }
    return ns_sim_add_recording(s->local, cell, compartment, site);
}

ns_status cli_sim_advance(cli_sim *s, int64_t steps) {
    return s->dist ? ns_mpi_sim_advance(s->dist, steps) : ns_sim_advance(s->local, steps);
}
ns_status cli_sim_finish(cli_sim *s) { return s->dist ? ns_mpi_sim_gather(s->dist, 0) : NS_OK; }
int64_t cli_sim_steps_for(const cli_sim *s, double tstop) {
    return s->dist ? ns_mpi_sim_steps_for(s->dist, tstop) : ns_sim_steps_for(s->local, tstop);
}
double cli_sim_elapsed_ms(const cli_sim *s) {
    return s->dist ? ns_mpi_sim_elapsed_ms(s->dist) : ns_sim_elapsed_ms(s->local);
}
int64_t cli_sim_compartments(const cli_sim *s) {
    return s->dist ? ns_mpi_sim_compartments(s->dist) : ns_sim_compartments(s->local);
}
const double *cli_sim_spikes(const cli_sim *s, int64_t cell, int64_t *count) {
    return s->dist ? ns_mpi_sim_spikes(s->dist, cell, count) : ns_sim_spikes(s->local, cell, count);
}
const double *cli_sim_traces(const cli_sim *s, int64_t *samples, int32_t *sites) {
    return s->dist ? ns_mpi_sim_traces(s->dist, samples, sites) : ns_sim_traces(s->local, samples, sites);
}
ns_backend cli_sim_backend(const cli_sim *s) {
    return s->dist ? ns_mpi_sim_backend(s->dist) : ns_sim_backend(s->local);
}
ns_sim_t *cli_sim_local(cli_sim *s) { return s->dist ? NULL : s->local; }
ns_hines_method cli_sim_method(const cli_sim *s) {
    return s->dist ? ns_mpi_sim_method(s->dist) : ns_sim_method(s->local);
}
ns_status cli_sim_apply_network(cli_sim *s, const ns_network_t *net, const ns_cell_t *const *shapes) {
    return s->dist ? ns_network_apply_mpi(net, s->dist, shapes) : ns_network_apply(net, s->local, shapes);
}
ns_status cli_sim_init(cli_sim *s) { return s->dist ? ns_mpi_sim_init(s->dist) : ns_sim_init(s->local); }
int64_t cli_sim_synapses(const cli_sim *s) { return s->dist ? ns_mpi_sim_synapses(s->dist) : ns_sim_synapses(s->local); }
int64_t cli_sim_sources(const cli_sim *s) { return s->dist ? ns_mpi_sim_sources(s->dist) : ns_sim_sources(s->local); }
int64_t cli_sim_connections(const cli_sim *s) {
    return s->dist ? ns_mpi_sim_connections(s->dist) : ns_sim_connections(s->local);
}
int64_t cli_sim_source_cell(const cli_sim *s, int64_t source) {
    return s->dist ? ns_mpi_sim_source_cell(s->dist, source) : ns_sim_source_cell(s->local, source);
}
const double *cli_sim_source_spikes(const cli_sim *s, int64_t source, int64_t *count) {
    return s->dist ? ns_mpi_sim_source_spikes(s->dist, source, count) : ns_sim_source_spikes(s->local, source, count);
}

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

struct cli_sim {
    ns_sim_t *local;
};

ns_status cli_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                         const int32_t *cell_shape, const ns_sim_params *params, const ns_sim_options *options,
                         cli_sim **out) {
    cli_sim *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) return NS_ERR_OUT_OF_MEMORY;
    ns_status st = ns_sim_create(n_shapes, shapes, n_cells, cell_shape, params, options, &s->local);
    if (st != NS_OK) {
        free(s);
        return st;
    }
    *out = s;
    return NS_OK;
}
void cli_sim_destroy(cli_sim *s) {
    if (!s) return;
    ns_sim_destroy(s->local);
    free(s);
}
ns_status cli_sim_add_iclamp(cli_sim *s, int64_t cell, int32_t compartment, double delay, double duration,
                             double amplitude) {
    return ns_sim_add_iclamp(s->local, cell, compartment, delay, duration, amplitude);
}
ns_status cli_sim_add_recording(cli_sim *s, int64_t cell, int32_t compartment, int32_t *site) {
    return ns_sim_add_recording(s->local, cell, compartment, site);
}
ns_status cli_sim_advance(cli_sim *s, int64_t steps) { return ns_sim_advance(s->local, steps); }
ns_status cli_sim_finish(cli_sim *s) {
    (void)s;
    return NS_OK;
}
int64_t cli_sim_steps_for(const cli_sim *s, double tstop) { return ns_sim_steps_for(s->local, tstop); }
double cli_sim_elapsed_ms(const cli_sim *s) { return ns_sim_elapsed_ms(s->local); }
int64_t cli_sim_compartments(const cli_sim *s) { return ns_sim_compartments(s->local); }
const double *cli_sim_spikes(const cli_sim *s, int64_t cell, int64_t *count) {
    return ns_sim_spikes(s->local, cell, count);
}
const double *cli_sim_traces(const cli_sim *s, int64_t *samples, int32_t *sites) {
    return ns_sim_traces(s->local, samples, sites);
}
ns_backend cli_sim_backend(const cli_sim *s) { return ns_sim_backend(s->local); }
ns_hines_method cli_sim_method(const cli_sim *s) { return ns_sim_method(s->local); }
ns_sim_t *cli_sim_local(cli_sim *s) { return s->local; }
ns_status cli_sim_apply_network(cli_sim *s, const ns_network_t *net, const ns_cell_t *const *shapes) {
    return ns_network_apply(net, s->local, shapes);
}
ns_status cli_sim_init(cli_sim *s) { return ns_sim_init(s->local); }
int64_t cli_sim_synapses(const cli_sim *s) { return ns_sim_synapses(s->local); }
int64_t cli_sim_sources(const cli_sim *s) { return ns_sim_sources(s->local); }
int64_t cli_sim_connections(const cli_sim *s) { return ns_sim_connections(s->local); }
int64_t cli_sim_source_cell(const cli_sim *s, int64_t source) { return ns_sim_source_cell(s->local, source); }
const double *cli_sim_source_spikes(const cli_sim *s, int64_t source, int64_t *count) {
    return ns_sim_source_spikes(s->local, source, count);
}
#endif
