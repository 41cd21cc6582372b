/* placeholder: being written */
#include "cli.h"
int cmd_solve(int argc, char **argv) { (void)argc; (void)argv; return cli_error("solve: not built yet"); }
