/* placeholder: owned by the tridiagonal module */
#include "cli.h"
int bench_tridiag(int argc, char **argv) { (void)argc; (void)argv; return cli_error("bench tridiag: not built yet"); }
