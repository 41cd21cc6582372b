/* neurosolve: the command-line tool. Dispatches to one file per subcommand;
 * this table drives the dispatch and `--help` (tests/cli/test_cli.py checks that
 * docs/cli.md has a section for every command). */
#include <stdio.h>
#include <stdlib.h>
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
    fprintf(out, "usage: neurosolve COMMAND [OPTIONS]   (neurosolve COMMAND --help for details;\n"
                 "       every option takes its value as --opt VALUE or --opt=VALUE)\n\n"
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

/* `--opt=value` is `--opt value` for every command and option: each such
 * argument is split at its first '=' before any command sees it (a value
 * that itself starts with `--` and holds a '=' is split too: write it as
 * `--opt=--x=y`, whose value is taken whole). NULL when memory runs out. */
static char **split_long_options(int *argc, char **argv) {
    char **out = malloc((size_t)(2 * *argc + 1) * sizeof *out);
    if (!out) return NULL;
    int n = 0;
    for (int i = 0; i < *argc; ++i) {
        char *a = argv[i], *eq = a ? strchr(a, '=') : NULL;
        if (i > 0 && a[0] == '-' && a[1] == '-' && a[2] != '\0' && a[2] != '=' && eq) {
            *eq = '\0'; /* argv's strings are ours to change (C11 5.1.2.2.1) */
            out[n++] = a;
            out[n++] = eq + 1;
        } else {
            out[n++] = a;
        }
    }
    out[n] = NULL;
    *argc = n;
    return out;
}

int main(int argc, char **argv) {
    cli_mpi_begin(&argc, &argv); /* under mpirun: MPI, a GPU per process (tools/cli_mpi.c) */
    char **args = split_long_options(&argc, argv);
    if (!args) return cli_mpi_end(cli_error("out of memory"));
    const int rc = run(argc, args);
    free(args);
    return cli_mpi_end(rc);
}
