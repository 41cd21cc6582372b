/* neurosolve morph FILE...: what each morphology holds and what its
 * discretisation gives (points, roots kept and dropped, soma, sections,
 * compartments, depth in branches). */
#include <stdlib.h>
#include <string.h>

#include "shapes.h"

static void help(void) {
    printf("usage: neurosolve morph FILE|DIRECTORY|bundled... [--json] [options]\n"
           "Reads each SWC file, applies the root and radius policies (docs/swc.md), discretises it\n"
           "(docs/discretisation.md) and prints one row per file. Files that fail are reported on\n"
           "stderr and the exit code is 1; the others are still printed.\n\n%s",
           cli_morph_options_help);
}

typedef struct morph_row {
    const char *file;
    ns_morph_info m;
    ns_cell_info c;
    ns_tree_stats t;
} morph_row;

static int describe(const char *path, const cli_morph_options *o, morph_row *row) {
    ns_morph_t *m = NULL;
    ns_status st = ns_swc_read(path, &o->swc, &m);
    if (st != NS_OK) return cli_status_error("morph", st), 1;
    ns_morph_get_info(m, &row->m);
    ns_cell_t *cell = NULL;
    st = ns_discretize(m, &o->disc, &cell);
    ns_morph_destroy(m);
    if (st != NS_OK) return cli_status_error(path, st), 1;
    ns_cell_get_info(cell, &row->c);
    ns_tree_get_stats(ns_cell_tree(cell), &row->t);
    ns_cell_destroy(cell);
    return 0;
}

int cmd_morph(int argc, char **argv) {
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    int as_json = 0, n_paths = 0;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths) return cli_error("out of memory");
    for (int i = 1; i < argc; ++i) {
        int m = cli_morph_option("morph", argc, argv, &i, &mo);
        if (m < 0) { free(paths); return 2; }
        if (m > 0) continue;
        if (strcmp(argv[i], "--help") == 0) { help(); free(paths); return 0; }
        if (strcmp(argv[i], "--json") == 0) as_json = 1;
        else if (argv[i][0] == '-' && argv[i][1] == '-') {
            free(paths);
            return cli_usage_error("morph", "unknown option '%s'", argv[i]);
        } else paths[n_paths++] = argv[i];
    }
    if (n_paths == 0) {
        free(paths);
        return cli_usage_error("morph", "give at least one SWC file or directory");
    }
    cli_json j;
    if (as_json) {
        json_begin(&j, stdout);
        json_array_begin(&j, "morphologies");
    } else {
        printf("%-40s %7s %5s %7s %-12s %6s %8s %12s %6s %10s %11s\n", "file", "points", "roots",
               "dropped", "soma", "radii*", "sections", "compartments", "depth", "length_um",
               "area_um2");
    }
    int failed = 0;
    for (int k = 0; k < n_paths; ++k) {
        char **files = NULL;
        int n = 0;
        const char *path = strcmp(paths[k], "bundled") == 0 ? cli_morphology_dir() : paths[k];
        if (cli_expand_path(path, &files, &n)) { failed++; continue; }
        for (int f = 0; f < n; ++f) {
            morph_row r = {files[f], {0}, {0}, {0}};
            if (describe(files[f], &mo, &r)) {
                failed++;
            } else if (as_json) {
                json_object_begin(&j, NULL);
                json_string(&j, "file", r.file);
                json_int(&j, "points_read", r.m.points_read);
                json_int(&j, "points", r.m.points);
                json_int(&j, "roots", r.m.roots);
                json_int(&j, "roots_kept", r.m.roots_kept);
                json_int(&j, "points_dropped", r.m.points_dropped);
                json_int(&j, "radii_repaired", r.m.radii_repaired);
                json_string(&j, "soma", ns_soma_style_name(r.m.soma));
                json_int(&j, "soma_points", r.m.soma_points);
                json_int(&j, "sections", r.c.sections);
                json_int(&j, "compartments", r.c.compartments);
                json_int(&j, "branch_depth", r.c.branch_depth);
                json_int(&j, "tree_depth", r.t.depth);
                json_int(&j, "tree_branches", r.t.branches);
                json_double(&j, "length_um", r.c.total_length);
                json_double(&j, "area_um2", r.c.total_area);
                json_object_end(&j);
            } else {
                const char *base = strrchr(r.file, '/');
                printf("%-40s %7lld %5lld %7lld %-12s %6lld %8d %12d %6d %10.1f %11.1f\n",
                       base ? base + 1 : r.file, (long long)r.m.points_read, (long long)r.m.roots,
                       (long long)r.m.points_dropped, ns_soma_style_name(r.m.soma),
                       (long long)r.m.radii_repaired, r.c.sections, r.c.compartments,
                       r.c.branch_depth, r.c.total_length, r.c.total_area);
            }
            free(files[f]);
        }
        free(files);
    }
    if (as_json) {
        json_array_end(&j);
        json_int(&j, "failed", failed);
        json_end(&j);
    } else {
        printf("(radii* = radii <= 0 repaired; depth = sections on the longest root-to-leaf path)\n");
    }
    free(paths);
    return failed ? 1 : 0;
}
