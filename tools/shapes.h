/* Shapes for the CLI: morphology files (discretised) and generators, named
 * by a spec string, plus the morphology options that several subcommands
 * share. */
#ifndef NS_TOOLS_SHAPES_H
#define NS_TOOLS_SHAPES_H

#include "cli.h"

typedef struct cli_shape {
    char name[512];
    ns_tree_t *tree;  /* owned: the compartment tree */
    ns_cell_t *cell;  /* owned: NULL for generated shapes */
} cli_shape;

typedef struct cli_shape_set {
    cli_shape *items;
    int count;
    int capacity;
} cli_shape_set;

typedef struct cli_morph_options {
    ns_swc_options swc;
    ns_discretize_options disc;
} cli_morph_options;

void cli_morph_options_init(cli_morph_options *o);

/* If argv[*i] is one of the shared morphology options (--roots, --radii,
 * --scale, --nseg, --ra, --cm), consume it (and its value) and return 1;
 * return 0 if it is not one; return -1 after printing a usage error. */
int cli_morph_option(const char *command, int argc, char **argv, int *i, cli_morph_options *o);

/* Usage text of the shared morphology options and of shape specs. */
extern const char *cli_morph_options_help;
extern const char *cli_shape_spec_help;

/* Add the shapes named by `spec`: a file, a directory (its *.swc files, in
 * name order), "bundled" (the bundled morphologies), or a generator
 * (small-low ... big-high, tree:SIZE:BRANCHES, binary:SIZE:LEVELS,
 * random:low|medium|high). Returns 0, or 1 after printing the error. */
int cli_shapes_add(cli_shape_set *set, const char *spec, const cli_morph_options *o, uint64_t seed);
void cli_shapes_free(cli_shape_set *set);

/* Expand a path to the list of files it names (a directory gives its *.swc
 * files sorted by name). The caller frees each string and the array.
 * Returns 0, or 1 after printing the error. */
int cli_expand_path(const char *path, char ***files, int *count);

#endif
