/* neurosolve: the command-line tool. Dispatches to one file per subcommand;
 * this table drives the dispatch and `--help` (tests/test_cli.py checks that
 * docs/cli.md has a section for every command). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"info", cmd_info, "version, build options, OpenMP threads, CUDA devices"},
    {"morph", cmd_morph, "read SWC files: points, roots, sections, compartments, depth"},
    {"solve", cmd_solve, "solve a batch of Hines systems and check it"},
    {"simulate", cmd_simulate, "simulate cells (NEURON's hh, pas, IClamp): traces, spikes"},
    {"life", cmd_life, "LiFE connectome pruning: synth, build, fit, report, info"},
    {"mechanisms", cmd_mechanisms, "NMODL mechanisms: build a library from .mod files, list one"},
    {"bench", cmd_bench, "benchmarks: hines, tridiag, life, sim, scale"},
};

static void usage(FILE *out) {
    fprintf(out, "usage: neurosolve COMMAND [OPTIONS]   (neurosolve COMMAND --help for details)\n\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("neurosolve %s\n", ns_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        if (strcmp(argv[1], commands[i].name) == 0) {
            /* commands that may run on a GPU say when one is there but unusable */
            if (strcmp(argv[1], "info") != 0 && strcmp(argv[1], "morph") != 0 &&
                !(argc > 2 && strcmp(argv[2], "--help") == 0))
                cli_note_unusable_gpu();
            return commands[i].run(argc - 1, argv + 1);
        }
    fprintf(stderr, "neurosolve: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

int main(int argc, char **argv) {
    cli_mpi_begin(&argc, &argv); /* under mpirun: MPI, a GPU per process (tools/cli_mpi.c) */
    return cli_mpi_end(run(argc, argv));
}
