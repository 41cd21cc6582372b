/* neurosolve morph FILE...: what each morphology holds and what its
 * discretisation gives (points, roots kept and dropped, soma, sections,
 * compartments, depth in branches). */
#include <stdlib.h>
#include <string.h>

#include "shapes.h"

static void help(void) {
    printf("usage: neurosolve morph FILE|DIRECTORY|bundled... [--sections] [--json] [options]\n"
           "Reads each SWC file, applies the root and radius policies (docs/swc.md), discretises it\n"
           "(docs/discretisation.md) and prints one row per file. Files that fail are reported on\n"
           "stderr and the exit code is 1; the others are still printed.\n"
           "  --sections   also list each file's sections: index, NEURON's name (what --iclamp,\n"
           "               --record, model and network files take: dend[3](0.5)), region, parent,\n"
           "               length, nseg and the SWC ids of its first and last own points\n\n%s",
           cli_morph_options_help);
}

typedef struct morph_row {
    const char *file;
    ns_morph_info m;
    ns_cell_info c;
    ns_tree_stats t;
    ns_cell_t *cell; /* kept for --sections */
} morph_row;

/* The sections of a cell: a table, or the JSON array "section_table". */
static void list_sections(const ns_cell_t *cell, cli_json *j) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    if (j) json_array_begin(j, "section_table");
    else
        printf("  %7s %-14s %-7s %-14s %8s %10s %5s %12s %12s\n", "section", "name", "region", "parent",
               "parent_x", "length_um", "nseg", "first_swc_id", "last_swc_id");
    for (int32_t k = 0; k < ci.sections; ++k) {
        ns_section_info si;
        char name[48], parent[48] = "-";
        if (ns_cell_get_section(cell, k, &si) != NS_OK || ns_section_name(cell, k, name, sizeof name) != NS_OK) continue;
        if (si.parent >= 0) ns_section_name(cell, si.parent, parent, sizeof parent);
        const char *region = ns_region_name(ns_region_of_swc_type(si.type));
        if (j) {
            json_object_begin(j, NULL);
            json_int(j, "section", k);
            json_string(j, "name", name);
            json_string(j, "region", region);
            json_int(j, "parent", si.parent);
            json_double(j, "parent_x", si.parent_x);
            json_double(j, "length_um", si.length);
            json_int(j, "nseg", si.nseg);
            json_int(j, "first_point_id", si.first_point_id);
            json_int(j, "last_point_id", si.last_point_id);
            json_object_end(j);
        } else {
            printf("  %7d %-14s %-7s %-14s %8g %10.2f %5d %12lld %12lld\n", (int)k, name, region, parent,
                   si.parent >= 0 ? si.parent_x : 0.0, si.length, (int)si.nseg, (long long)si.first_point_id,
                   (long long)si.last_point_id);
        }
    }
    if (j) json_array_end(j);
}

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
    row->cell = cell;
    return 0;
}

int cmd_morph(int argc, char **argv) {
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    int as_json = 0, n_paths = 0, sections = 0;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths) return cli_error("out of memory");
    for (int i = 1; i < argc; ++i) {
        int m = cli_morph_option("morph", argc, argv, &i, &mo);
        if (m < 0) { free(paths); return 2; }
        if (m > 0) continue;
        if (strcmp(argv[i], "--help") == 0) { help(); free(paths); return 0; }
        if (strcmp(argv[i], "--json") == 0) as_json = 1;
        else if (strcmp(argv[i], "--sections") == 0) sections = 1;
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
            morph_row r = {files[f], {0}, {0}, {0}, NULL};
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
                if (sections) list_sections(r.cell, &j);
                json_object_end(&j);
            } else {
                const char *base = strrchr(r.file, '/');
                printf("%-40s %7lld %5lld %7lld %-12s %6lld %8d %12d %6d %10.1f %11.1f\n",
                       base ? base + 1 : r.file, (long long)r.m.points_read, (long long)r.m.roots,
                       (long long)r.m.points_dropped, ns_soma_style_name(r.m.soma),
                       (long long)r.m.radii_repaired, r.c.sections, r.c.compartments,
                       r.c.branch_depth, r.c.total_length, r.c.total_area);
                if (sections) list_sections(r.cell, NULL);
            }
            ns_cell_destroy(r.cell);
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
