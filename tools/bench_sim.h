/* Shared by bench sim (one shape) and bench sim --mixed (populations):
 * timing one population and NEURON's rate on the same cells. */
#ifndef NS_TOOLS_BENCH_SIM_H
#define NS_TOOLS_BENCH_SIM_H

#include "shapes.h"

typedef struct sim_timing {
    char backend[8], method[24]; /* method: the loop, "+graph" where the per-step path was a replayed
                                    CUDA graph, "+per-mech" where one launch per mechanism was asked for */
    int lanes;               /* onchip: lanes per cell (0: not onchip) */
    long long compartments;
    double setup_s;          /* create, stimuli, init */
    double ms_per_step;      /* `steps` timed after 40 warm-up steps */
    double min_bytes;        /* the step's minimum bytes per compartment-step (ns_sim_step_min_bytes) */
} sim_timing;

/* Fill a GPU row's bandwidth figures: the step's minimum bytes over its time
 * [GB/s] (*gbs), and the copy bandwidth of a device-to-device copy of the
 * same bytes measured now (*copy_gbs, GB/s read + write; -1 when it fails). */
void bench_sim_bandwidth(const sim_timing *t, int gpu, double *gbs, double *copy_gbs);

/* Build, run and time a population (cell c of shape cell_shape[c], or c mod
 * n_shapes); an IClamp of 1.5e-4 nA per um^2 of membrane at every cell's
 * spike compartment from 5 ms; recording off the hot path. 0, or 1 after
 * printing the error. threads: CPU threads (0: OpenMP's default). params
 * NULL: the defaults; model NULL: the built-in hh and pas of the parameters; gpu_mechanisms: how
 * the model's mechanisms run (ns_sim_options.gpu_mechanisms). */
int bench_sim_time(int n_shapes, const ns_cell_t *const *shapes, long long cells, const int32_t *cell_shape,
                   ns_backend be, ns_hines_method method, int lanes, int threads, int steps,
                   const ns_sim_params *params, const ns_sim_model_t *model, ns_sim_gpu_mechanisms gpu_mechanisms,
                   sim_timing *t);

/* A baseline simulator's cell-steps per second on `per` copies of each
 * morphology of `files` (comma-separated) with `threads` threads, or -1;
 * *cells and *segments receive what it built. `script`: "neuron"
 * (bench/neuron_sim_bench.py) or "arbor" (bench/arbor_sim_bench.py). */
double bench_sim_baseline(const char *script, const char *files, long long per, int steps, int threads,
                          long long *cells, long long *segments);
/* NEURON's cell-steps per second with a model (bench/neuron_model_bench.py:
 * the model and parameter files, `per` copies of `swc`, an IClamp of `amp` nA
 * from 5 ms), or -1. */
double bench_sim_baseline_model(const char *swc, const char *params_file, const char *model_file, long long per,
                                int steps, int threads, double amp, long long *cells, long long *segments);

/* The files of `files` that Arbor's SWC loader accepts
 * (bench/arbor_sim_bench.py --accepts), comma-separated, or NULL. */
char *bench_sim_arbor_accepts(char **files, int n_files);
/* Whether `file` is an item of the comma-separated `list`. */
int bench_sim_listed(const char *list, const char *file);

int bench_sim_mixed(int argc, char **argv);
/* bench sim --network: the busyring benchmark (tools/bench_sim_network.c) */
int bench_sim_network(int argc, char **argv);

#endif
