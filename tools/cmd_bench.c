/* neurosolve bench KIND: dispatches to the benchmark of each solver family. */
#include <string.h>

#include "cli.h"

int cmd_bench(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        printf("usage: neurosolve bench hines|tridiag|life|sim [options]   (bench KIND --help for details)\n"
               "  hines    batches of Hines systems (the cuHinesBatch paper's Figs. 3-5)\n"
               "  tridiag  batched tridiagonal solvers against cuSPARSE (the journal's Figs. 9-13)\n"
               "  life     LiFE products and SBBNNLS (the LiFE paper's Tables 2-10)\n"
               "  sim      the Hodgkin-Huxley simulation loop, CPU and GPU, against NEURON\n"
               "  scale    LiFE strong scaling over MPI processes (mpirun -np K; docs/mpi.md)\n");
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "hines") == 0) return bench_hines(argc - 1, argv + 1);
    if (strcmp(argv[1], "tridiag") == 0) return bench_tridiag(argc - 1, argv + 1);
    if (strcmp(argv[1], "life") == 0) return bench_life(argc - 1, argv + 1);
    if (strcmp(argv[1], "sim") == 0) return bench_sim(argc - 1, argv + 1);
    if (strcmp(argv[1], "scale") == 0) return bench_scale(argc - 1, argv + 1);
    return cli_usage_error("bench", "unknown benchmark '%s' (hines, tridiag, life, sim)", argv[1]);
}
