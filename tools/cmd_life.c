/* placeholder: owned by the LiFE module */
#include "cli.h"
int cmd_life(int argc, char **argv) { (void)argc; (void)argv; return cli_error("life: not built yet"); }
int bench_life(int argc, char **argv) { (void)argc; (void)argv; return cli_error("bench life: not built yet"); }
