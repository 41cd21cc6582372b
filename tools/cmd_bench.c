/* placeholder: being written */
#include "cli.h"
int cmd_bench(int argc, char **argv) { (void)argc; (void)argv; return cli_error("bench: not built yet"); }
int bench_hines(int argc, char **argv) { (void)argc; (void)argv; return 1; }
