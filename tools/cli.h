/* The neurosolve command: shared helpers for the subcommands.
 * Each subcommand lives in its own file and has the signature
 *     int cmd_NAME(int argc, char **argv)   (argv[0] is the subcommand)
 * and returns the process exit code: 0 success, 1 runtime failure,
 * 2 usage error. Errors print one line "neurosolve: ..." on stderr. */
#ifndef NS_TOOLS_CLI_H
#define NS_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h> /* pid_t */

#include "neurosolve/neurosolve.h"

int cmd_info(int argc, char **argv);
int cmd_morph(int argc, char **argv);
int cmd_solve(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_life(int argc, char **argv);
int cmd_mechanisms(int argc, char **argv);

/* bench subcommands (argv[0] is the bench kind, e.g. "hines"). */
int bench_hines(int argc, char **argv);
int bench_hines_mixed(int argc, char **argv); /* bench hines --mixed */
int bench_tridiag(int argc, char **argv);
int bench_life(int argc, char **argv);
int bench_life_quality(int argc, char **argv); /* bench life --quality (tools/life_quality.c) */
int bench_life_scale(int argc, char **argv);
int bench_sim(int argc, char **argv);
int bench_scale(int argc, char **argv); /* MPI scaling (tools/bench_scale.c) */
int bench_grad(int argc, char **argv);  /* gradient over forward (tools/bench_grad.c) */

/* Print "neurosolve: <message>" on stderr; returns 1 (runtime failure). */
int cli_error(const char *format, ...);
/* Print "neurosolve: <message>" plus a hint to run --help; returns 2. */
int cli_usage_error(const char *command, const char *format, ...);
/* Print "neurosolve: <what>: <status string>: <detail>"; returns 1. */
int cli_status_error(const char *what, ns_status status);
/* When the machine has a GPU that this build's CUDA code cannot run on, say
 * so on stderr in one line (the `auto` backend then runs on the CPU). */
void cli_note_unusable_gpu(void);

/* The cell a library error names ("... in cell N, ..." or "cell N, ..."),
 * or -1: the command adds the file that cell came from. */
long long cli_failed_cell(const char *detail);
/* The shape named by "shape N" in an error detail (ns_sim_create), or -1. */
long long cli_failed_shape(const char *detail);

/* The 1-minute load average when it exceeds the CPUs of this machine (other
 * processes then take CPU time from a benchmark), else 0. */
double cli_machine_loaded(int *cpus);

/* Seconds on the monotonic clock (for differences: elapsed times, the time left). */
double cli_now_s(void);

/* Bytes of physical memory of this machine (sysconf), or -1 if unknown. */
double cli_physical_memory(void);

/* The command line's mapping of two environment variables onto solver
 * options (the library reads none): NEUROSOLVE_MIXED_PLAN = "reroot,split"
 * (any subset) or "none" -> plan_passes; NEUROSOLVE_FINE_SHARED = "0" | "ab"
 * -> fine_shared (docs/methods.md, "fine-grained"). */
void cli_solve_env(ns_solve_options *options);

/* Option value parsing with range checks; print a usage error and return 0
 * on failure, 1 on success. */
int cli_parse_long(const char *command, const char *option, const char *text, long long min,
                   long long max, long long *value);
int cli_parse_double(const char *command, const char *option, const char *text, double min,
                     double max, double *value);
/* --backend NAME: auto, cpu, cuda (gpu: the same as cuda). A name that is
 * none of them is a usage error listing them (returns 2); cuda where no GPU
 * is usable is refused before any work, naming the backends that are
 * (returns 1); 0 on success. */
int cli_parse_backend(const char *command, const char *option, const char *text, ns_backend *backend);
/* A comma-separated list of integers ("256,2560,25600"); at most `cap`. */
int cli_parse_long_list(const char *command, const char *option, const char *text,
                        long long min, long long max, long long *values, int cap, int *count);
/* A grid's size "X,Y,Z", each in [min, max], into grid[0..2] (unchanged on
 * failure). */
int cli_parse_grid(const char *command, const char *option, const char *text, long long min, long long max,
                   int32_t grid[3]);

/* The directory of bundled morphologies (NEUROSOLVE_DATA or the source
 * tree's data/morphologies). */
const char *cli_morphology_dir(void);

/* Append one zeroed element of `size` bytes to a growable array of *count
 * of *capacity elements; `items` is the address of the array's pointer
 * (updated when the array moves). Returns the new element, or NULL when
 * memory runs out (the old array is then unchanged and still valid). */
void *cli_append_zeroed(void *items, int *count, int *capacity, size_t size);
/* A growable array of T for cli_append_zeroed: v[0 .. n - 1], cap allocated;
 * CLI_APPEND(a) appends a zeroed element to *a (NULL when memory runs out). */
#define CLI_ARRAY(T) \
    struct {         \
        T *v;        \
        int n, cap;  \
    }
#define CLI_APPEND(a) cli_append_zeroed(&(a)->v, &(a)->n, &(a)->cap, sizeof *(a)->v)

/* Largest relative error of a batch's solution against a reference: the
 * maximum over cells of ||x - ref||_inf / ||ref||_inf (NaN counts as worst). */
double cli_batch_error(const ns_batch_t *batch, const double *x, const double *ref);

/* Split a comma-separated list in place; at most `cap` items; returns the count. */
int cli_split_list(char *text, const char **items, int cap);

/* The text of the file `path` (at most 16 MiB; NUL-terminated, malloc'd) in *text and *length.
 * Prints the error ("WHAT: STATUS: PATH: ...", KIND naming the file in the size error) and
 * returns 1. */
int cli_read_text(const char *path, const char *what, const char *kind, char **text, size_t *length);

/* Median of n values (sorts them in place). */
double cli_median(double *values, int n);

/* Output files through ns_output (include/neurosolve/output.h): they appear
 * only when complete. cli_output_open prints the error (with the OS reason)
 * and returns NULL; cli_output_commit prints it and returns 1 on failure
 * (0 on success); cli_output_abort drops a started output. */
ns_output *cli_output_open(const char *path);
/* Create a folder and its missing parents, as `mkdir -p` (0 on success, 1
 * after printing the error); cli_make_parent_dir: the folder a file goes
 * to. cli_output_open does the latter: every output's folder is created. */
int cli_make_dirs(const char *dir);
int cli_make_parent_dir(const char *path);
int cli_output_commit(ns_output *o);

/* Run a Python plotting script from bench/ or tools/ on a CSV; 0 on success.
 * The PNG is written to a temporary name and renamed when the script
 * succeeded. Plots are optional: without matplotlib it prints a warning
 * (cli_plot_skipped) and returns 0, so that a run that did its work
 * succeeds; commands warn before the work (cli_plot_available) too. extra: more arguments
 * for the script, NULL-terminated (or NULL). The script runs without a
 * shell, so paths may hold any character. */
int cli_plot(const char *script, const char *csv, const char *png, const char *const *extra);
int cli_plot_available(void);         /* python3 imports matplotlib (probed once) */
int cli_plot_skipped(const char *png); /* the warning (once); returns 0 */
/* Before the work: the warning now when png is given and cannot be drawn. */
int cli_plot_check(const char *png);
/* Run argv[0] (searched in PATH) with argv and no shell in between, its
 * stderr discarded: a stream of its stdout (NULL when it cannot start), and
 * cli_program_close for its exit code (-1: killed or not waited for). */
FILE *cli_program_output(const char *const *argv, pid_t *pid);
int cli_program_close(FILE *f, pid_t pid);

/* SIGINT and SIGTERM (what schedulers send first) during long work (simulate, life fit):
 * cli_catch_signals installs handlers that only record the signal; the command polls
 * cli_interrupted (the signal number, or 0) between steps, stops, saves its resumable
 * state and releases the handlers when it returns. A second signal ends the process. */
void cli_catch_signals(void);
int cli_interrupted(void);
void cli_release_signals(void);

/* ------------------------------------------------------------------ MPI */
/* tools/cli_mpi.c, docs/mpi.md: under an MPI launcher (and with MPI built
 * in), solve and simulate spread their cells over the processes and only
 * rank 0 prints. Without MPI these are single-process pass-throughs. */
void cli_mpi_begin(int *argc, char ***argv); /* first thing in main */
int cli_mpi_end(int rc);                     /* last: agrees on the exit code */
int cli_mpi_active(void);
int cli_mpi_rank(void);
int cli_mpi_size(void);
/* Solve the batch over the processes: every process holds the whole batch
 * and its values, solves its own cells and receives every solution in rhs
 * (so the caller's checks run unchanged). timing->total_ms is the wall
 * time of the distributed solve, the rest this process's. */
ns_status cli_mpi_solve(const ns_batch_t *batch, const ns_solve_options *opt, const double *a,
                        const double *b, double *d, double *rhs, ns_solve_timing *timing,
                        ns_hines_method *method, ns_backend *backend);
/* The distribution of a run under mpirun (MPI_COMM_WORLD's) for
 * ns_sim_options.dist; NULL in one process. */
const ns_dist_t *cli_mpi_dist(void);

/* An .npy file of rows x cols little-endian doubles (C order). */
void cli_write_npy(FILE *f, const double *data, long long rows, int cols);
/* The same for ndim (1 to 6) dimensions dims, C order. */
void cli_write_npy_nd(FILE *f, const double *data, int ndim, const long long *dims);

/* ------------------------------------------------------ simulate --probe */
/* tools/cli_lfp.c: the extracellular potentials of `simulate` (docs/extracellular.md). */
typedef struct cli_lfp {
    const char *probe, *placement_file;
    const char *populations; /* --lfp-populations: `morphology` or a file of one population per cell */
    long long every_steps;
    double every_ms;
    ns_lfp_method method;
    double sigma, max_gb, tolerance, rank_tolerance;
    long long batch; /* --lfp-batch: samples per reduction on the GPU (0: ns_lfp_batch_rows's rule) */
    ns_lfp_storage storage;
    ns_lfp_probe contacts;
    ns_lfp_t *lfp;
} cli_lfp;
extern const char *cli_lfp_help;
void cli_lfp_init(cli_lfp *l);
/* 1: a --probe/--lfp-* option taken; 0: not one; -1: a bad value (printed). */
int cli_lfp_option(const char *cmd, const char *a, const char *val, cli_lfp *l);
/* Read the probe and attach (nothing without --probe); 0 or 1 after printing the error. */
/* cell_shape: each cell's morphology (--lfp-populations morphology). */
int cli_lfp_attach(cli_lfp *l, ns_sim_t *sim, int32_t n_shapes, const ns_cell_t *const *shapes,
                   const int32_t *cell_shape, double dt);
/* STEMlfp.csv, STEMlfp.npy, STEMdipole.csv (csv_path: the first), with populations
 * STEMlfp_populations.npy; 0 or 1. */
int cli_lfp_write(cli_lfp *l, const char *stem, char *csv_path, size_t csv_len);
/* P_lfp.png for --plot P.png (bench/plot_lfp.py; without matplotlib a warning); 0 or 1. */
int cli_lfp_plot(cli_lfp *l, const char *csv, const char *plot, int quiet);
void cli_lfp_free(cli_lfp *l);

/* ------------------------------------------------------------- JSON out */
/* A tiny streaming JSON writer for --json: enough for objects, arrays,
 * strings, numbers and booleans, with commas handled by nesting depth. */
typedef struct cli_json {
    FILE *out;
    int depth;
    int need_comma[32];
} cli_json;

void json_begin(cli_json *j, FILE *out);
void json_end(cli_json *j); /* closes the root object and prints a newline */
void json_key(cli_json *j, const char *key);
void json_object_begin(cli_json *j, const char *key);  /* key NULL inside arrays */
void json_object_end(cli_json *j);
void json_array_begin(cli_json *j, const char *key);
void json_array_end(cli_json *j);
void json_string(cli_json *j, const char *key, const char *value);
void json_int(cli_json *j, const char *key, long long value);
void json_double(cli_json *j, const char *key, double value); /* NaN/Inf -> null */
void json_bool(cli_json *j, const char *key, int value);
/* A benchmark row's bandwidth (tools/cmd_bench.c): gbs; copy_gbs, the
 * device's copy bandwidth, where measured (> 0); bw_ratio, gbs over it,
 * where known (>= 0). */
void bench_json_bandwidth(cli_json *j, double gbs, double copy_gbs, double ratio);

#endif
