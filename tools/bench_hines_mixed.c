/* placeholder: the mixed-shape benchmark (issue 5) */
#include "cli.h"
int bench_hines_mixed(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return cli_error("bench hines --mixed: not built yet");
}
