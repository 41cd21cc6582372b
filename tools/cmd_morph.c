/* placeholder: being written */
#include "cli.h"
int cmd_morph(int argc, char **argv) { (void)argc; (void)argv; return cli_error("morph: not built yet"); }
