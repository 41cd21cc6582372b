/* neurosolve bench KIND: dispatches to the benchmark of each solver family.
 * One table drives the dispatch and `bench --help` (tests/cli/test_cli.py
 * checks that docs/cli.md has a section for every entry). */
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} kinds[] = {
    {"hines", bench_hines, "batches of Hines systems (the cuHinesBatch paper's Figs. 3-5; --mixed: populations)"},
    {"tridiag", bench_tridiag, "batched tridiagonal solvers against cuSPARSE (the journal's Figs. 9-13)"},
    {"life", bench_life, "LiFE products and SBBNNLS (the LiFE paper's Tables 2-10)"},
    {"sim", bench_sim, "the Hodgkin-Huxley simulation loop, CPU and GPU, against NEURON (--mixed: populations)"},
    {"life-scale", bench_life_scale, "LiFE at whole-brain scale: 1-10 million streamlines, time and memory"},
    {"scale", bench_scale, "LiFE strong scaling over MPI processes (mpirun -np K; docs/mpi.md)"},
    {"grad", bench_grad, "one gradient (ns_grad_run) over the forward run of the same cell (docs/gradients.md)"},
};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

int cmd_bench(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        printf("usage: neurosolve bench KIND [options]   (bench KIND --help for details)\n");
        for (size_t k = 0; k < N_KINDS; ++k) printf("  %-8s %s\n", kinds[k].name, kinds[k].summary);
        return argc < 2 ? 2 : 0;
    }
    for (size_t k = 0; k < N_KINDS; ++k)
        if (strcmp(argv[1], kinds[k].name) == 0) return kinds[k].run(argc - 1, argv + 1);
    return cli_usage_error("bench", "unknown benchmark '%s' (hines, tridiag, life, life-scale, sim, scale, grad)", argv[1]);
}

void bench_json_bandwidth(cli_json *j, double gbs, double copy_gbs, double ratio) {
    json_double(j, "gbs", gbs);
    if (copy_gbs > 0) json_double(j, "copy_gbs", copy_gbs);
    if (ratio >= 0) json_double(j, "bw_ratio", ratio);
}
