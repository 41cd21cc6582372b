/* neurosolve: the command-line tool. Dispatches to one file per subcommand;
 * this table drives the dispatch and `--help` (tests/cli/test_cli.py checks that
 * docs/cli.md has a section for every command). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h> /* strcasecmp */

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
    {"bench", cmd_bench, "benchmarks: hines, tridiag, life, sim, scale, grad"},
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

/* The flags (options without a value) of each command: `--flag=1`, `=true`, `=yes` is `--flag`,
 * `--flag=0`, `=false`, `=no` leaves it out (a flag is off unless given), any other value is a
 * usage error naming the flag and the choices (tests/test_cli_flags.py checks every flag the
 * commands' --help lists). */
static const struct {
    const char *command, *flags; /* each flag between spaces */
} command_flags[] = {
    {"info", " --json "},
    {"morph", " --json --sections "},
    {"solve", " --json --check "},
    {"simulate", " --json --no-progress "},
    {"life", " --json --quiet --phantom --preconditioner --skip-bad --no-plot --cv-refit "},
    {"mechanisms", " --json --cuda --keep-sources "},
    {"bench", " --json --large --mixed --network --quick --no-products --calls "},
};

static int is_flag(const char *command, const char *option, size_t len) {
    for (size_t i = 0; command && i < sizeof command_flags / sizeof *command_flags; ++i) {
        if (strcmp(command, command_flags[i].command) != 0) continue;
        for (const char *f = strstr(command_flags[i].flags, option); f; f = strstr(f + 1, option))
            if (f[-1] == ' ' && f[len] == ' ') return 1;
    }
    return 0;
}

/* 1 for 1/true/yes, 0 for 0/false/no (any case), -1 otherwise. */
static int flag_value(const char *v) {
    static const char *const on[] = {"1", "true", "yes"}, *const off[] = {"0", "false", "no"};
    for (int k = 0; k < 3; ++k) {
        if (strcasecmp(v, on[k]) == 0) return 1;
        if (strcasecmp(v, off[k]) == 0) return 0;
    }
    return -1;
}

/* `--opt=value` is `--opt value` for every command and option: each such
 * argument is split at its first '=' before any command sees it (a value
 * that itself starts with `--` and holds a '=' is split too: write it as
 * `--opt=--x=y`, whose value is taken whole); a flag's value is read as
 * above. Returns 0, 1 when memory runs out, 2 after a usage error. */
static int split_long_options(int *argc, char **argv, char ***args) {
    char **out = malloc((size_t)(2 * *argc + 1) * sizeof *out);
    if (!out) return 1;
    const char *command = *argc > 1 ? argv[1] : NULL;
    int n = 0;
    for (int i = 0; i < *argc; ++i) {
        char *a = argv[i], *eq = a ? strchr(a, '=') : NULL;
        if (i > 0 && a[0] == '-' && a[1] == '-' && a[2] != '\0' && a[2] != '=' && eq) {
            *eq = '\0'; /* argv's strings are ours to change (C11 5.1.2.2.1) */
            if (is_flag(command, a, (size_t)(eq - a))) {
                const int on = flag_value(eq + 1);
                if (on < 0) {
                    free(out);
                    return cli_usage_error(command, "%s=%s: %s is a flag: give it alone or as %s=1|0, true|false, "
                                           "yes|no", a, eq + 1, a, a);
                }
                if (on) out[n++] = a;
                continue;
            }
            out[n++] = a;
            out[n++] = eq + 1;
        } else {
            out[n++] = a;
        }
    }
    out[n] = NULL;
    *argc = n;
    *args = out;
    return 0;
}

int main(int argc, char **argv) {
    cli_mpi_begin(&argc, &argv); /* under mpirun: MPI, a GPU per process (tools/cli_mpi.c) */
    char **args = NULL;
    const int bad = split_long_options(&argc, argv, &args);
    if (bad) return cli_mpi_end(bad == 1 ? cli_error("out of memory") : bad);
    const int rc = run(argc, args);
    free(args);
    return cli_mpi_end(rc);
}
