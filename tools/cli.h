/* The neurosolve command: shared helpers for the subcommands.
 * Each subcommand lives in its own file and has the signature
 *     int cmd_NAME(int argc, char **argv)   (argv[0] is the subcommand)
 * and returns the process exit code: 0 success, 1 runtime failure,
 * 2 usage error. Errors print one line "neurosolve: ..." on stderr. */
#ifndef NS_TOOLS_CLI_H
#define NS_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "neurosolve/neurosolve.h"

int cmd_info(int argc, char **argv);
int cmd_morph(int argc, char **argv);
int cmd_solve(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_life(int argc, char **argv);

/* bench subcommands (argv[0] is the bench kind, e.g. "hines"). */
int bench_hines(int argc, char **argv);
int bench_hines_mixed(int argc, char **argv); /* bench hines --mixed */
int bench_tridiag(int argc, char **argv);
int bench_life(int argc, char **argv);
int bench_sim(int argc, char **argv);

/* Print "neurosolve: <message>" on stderr; returns 1 (runtime failure). */
int cli_error(const char *format, ...);
/* Print "neurosolve: <message>" plus a hint to run --help; returns 2. */
int cli_usage_error(const char *command, const char *format, ...);
/* Print "neurosolve: <what>: <status string>: <detail>"; returns 1. */
int cli_status_error(const char *what, ns_status status);

/* Option value parsing with range checks; print a usage error and return 0
 * on failure, 1 on success. */
int cli_parse_long(const char *command, const char *option, const char *text, long long min,
                   long long max, long long *value);
int cli_parse_double(const char *command, const char *option, const char *text, double min,
                     double max, double *value);
/* A comma-separated list of integers ("256,2560,25600"); at most `cap`. */
int cli_parse_long_list(const char *command, const char *option, const char *text,
                        long long min, long long max, long long *values, int cap, int *count);

/* The directory of bundled morphologies (NEUROSOLVE_DATA or the source
 * tree's data/morphologies). */
const char *cli_morphology_dir(void);

/* Median of n values (sorts them in place). */
double cli_median(double *values, int n);

/* Run a Python plotting script from bench/ or tools/ on a CSV; 0 on success. */
int cli_plot(const char *script, const char *csv, const char *png, const char *extra);

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

#endif
