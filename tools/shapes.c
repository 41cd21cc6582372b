/* Shapes for the CLI: morphology files and generators by spec string. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shapes.h"

const char *cli_morph_options_help =
    "morphology options:\n"
    "  --roots keep|reject      several trees in a file: keep the main one (default) or fail\n"
    "  --radii repair|reject|default:R\n"
    "                           radii <= 0: copy the nearest positive radius (default), fail,\n"
    "                           or use R [um]\n"
    "  --scale S                multiply coordinates and radii by S (1e-3 for files in nm)\n"
    "  --nseg d-lambda[:F]|length:L|one\n"
    "                           compartments per section: NEURON's d_lambda rule (default F = 0.1,\n"
    "                           at 100 Hz), at most L um per compartment, or one per section\n"
    "  --ra OHM_CM --cm UF_CM2  axial resistivity and capacitance for d_lambda (35.4, 1)\n";

const char *cli_shape_spec_help =
    "shape specs (repeatable):\n"
    "  FILE.swc | DIRECTORY     morphology files (a directory gives its *.swc files)\n"
    "  bundled                  the 54 bundled real morphologies (data/morphologies)\n"
    "  small-low small-high medium-low medium-high big-low big-high\n"
    "                           the cuHinesBatch paper's six synthetic sizes\n"
    "  tree:SIZE:BRANCHES       a random tree of SIZE compartments and BRANCHES branches\n"
    "  binary:SIZE:LEVELS       the journal paper's binary-tree neuron\n"
    "  random:low|medium|high   an Arbor-style random tree\n";

void cli_morph_options_init(cli_morph_options *o) {
    ns_swc_options_init(&o->swc);
    ns_discretize_options_init(&o->disc);
}

int cli_morph_option(const char *command, int argc, char **argv, int *i, cli_morph_options *o) {
    const char *opt = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (strcmp(opt, "--roots") == 0) {
        if (val && strcmp(val, "keep") == 0) o->swc.roots = NS_ROOTS_KEEP_MAIN;
        else if (val && strcmp(val, "reject") == 0) o->swc.roots = NS_ROOTS_REJECT;
        else return cli_usage_error(command, "--roots takes keep or reject"), -1;
    } else if (strcmp(opt, "--radii") == 0) {
        if (val && strcmp(val, "repair") == 0) o->swc.radii = NS_RADIUS_REPAIR;
        else if (val && strcmp(val, "reject") == 0) o->swc.radii = NS_RADIUS_REJECT;
        else if (val && strncmp(val, "default:", 8) == 0) {
            o->swc.radii = NS_RADIUS_DEFAULT;
            if (!cli_parse_double(command, "--radii default:R", val + 8, 1e-9, 1e9, &o->swc.default_radius))
                return -1;
        } else return cli_usage_error(command, "--radii takes repair, reject or default:R"), -1;
    } else if (strcmp(opt, "--scale") == 0) {
        if (!cli_parse_double(command, opt, val, 1e-12, 1e12, &o->swc.scale)) return -1;
    } else if (strcmp(opt, "--nseg") == 0) {
        if (val && strncmp(val, "d-lambda", 8) == 0) {
            o->disc.rule = NS_NSEG_D_LAMBDA;
            if (val[8] == ':' &&
                !cli_parse_double(command, "--nseg d-lambda:F", val + 9, 1e-6, 10.0, &o->disc.d_lambda))
                return -1;
            if (val[8] != ':' && val[8] != '\0')
                return cli_usage_error(command, "--nseg d-lambda[:F]"), -1;
        } else if (val && strncmp(val, "length:", 7) == 0) {
            o->disc.rule = NS_NSEG_FIXED_LENGTH;
            if (!cli_parse_double(command, "--nseg length:L", val + 7, 1e-6, 1e9, &o->disc.max_length))
                return -1;
        } else if (val && strcmp(val, "one") == 0) {
            o->disc.rule = NS_NSEG_ONE;
        } else return cli_usage_error(command, "--nseg takes d-lambda[:F], length:L or one"), -1;
    } else if (strcmp(opt, "--ra") == 0) {
        if (!cli_parse_double(command, opt, val, 1e-9, 1e12, &o->disc.Ra)) return -1;
    } else if (strcmp(opt, "--cm") == 0) {
        if (!cli_parse_double(command, opt, val, 1e-9, 1e12, &o->disc.cm)) return -1;
    } else {
        return 0;
    }
    *i += 1;
    return 1;
}

static int compare_strings(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int cli_expand_path(const char *path, char ***files, int *count) {
    *files = NULL;
    *count = 0;
    struct stat st;
    if (stat(path, &st) != 0) return cli_error("%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        char **one = malloc(sizeof *one);
        if (!one || !(one[0] = dup_str(path))) {
            free(one);
            return cli_error("out of memory");
        }
        *files = one;
        *count = 1;
        return 0;
    }
    DIR *dir = opendir(path);
    if (!dir) return cli_error("%s: cannot open directory: %s", path, strerror(errno));
    int cap = 64, n = 0;
    char **list = malloc((size_t)cap * sizeof *list);
    struct dirent *e;
    while (list && (e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".swc") != 0) continue;
        if (n == cap) {
            char **grown = realloc(list, (size_t)(cap *= 2) * sizeof *list);
            if (!grown) break;
            list = grown;
        }
        size_t need = strlen(path) + len + 2;
        char *full = malloc(need);
        if (!full) break;
        snprintf(full, need, "%s/%s", path, e->d_name);
        list[n++] = full;
    }
    closedir(dir);
    if (!list) return cli_error("out of memory");
    if (n == 0) {
        free(list);
        return cli_error("%s: directory holds no .swc files", path);
    }
    qsort(list, (size_t)n, sizeof *list, compare_strings);
    *files = list;
    *count = n;
    return 0;
}

static int push(cli_shape_set *set, const char *name, ns_tree_t *tree, ns_cell_t *cell) {
    if (set->count == set->capacity) {
        int cap = set->capacity ? 2 * set->capacity : 16;
        cli_shape *grown = realloc(set->items, (size_t)cap * sizeof *grown);
        if (!grown) {
            ns_tree_destroy(tree);
            ns_cell_destroy(cell);
            return cli_error("out of memory");
        }
        set->items = grown;
        set->capacity = cap;
    }
    cli_shape *s = &set->items[set->count++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->tree = tree;
    s->cell = cell;
    return 0;
}

static int add_file(cli_shape_set *set, const char *path, const cli_morph_options *o) {
    ns_morph_t *m = NULL;
    ns_status st = ns_swc_read(path, &o->swc, &m);
    if (st != NS_OK) return cli_status_error("reading morphology", st);
    ns_cell_t *cell = NULL;
    st = ns_discretize(m, &o->disc, &cell);
    ns_morph_destroy(m);
    if (st != NS_OK) return cli_status_error(path, st);
    /* The cell owns its tree; the shape set keeps an independent copy so that
     * generated and file shapes are handled alike. */
    const ns_tree_t *t = ns_cell_tree(cell);
    ns_tree_t *copy = NULL;
    st = ns_tree_create(ns_tree_size(t), ns_tree_parent(t), &copy);
    if (st != NS_OK) {
        ns_cell_destroy(cell);
        return cli_status_error(path, st);
    }
    const char *base = strrchr(path, '/');
    return push(set, base ? base + 1 : path, copy, cell);
}

/* PREFIX X:Y with both integers read by the one number reader (neurosolve/number.h). */
static int two_integers(const char *spec, const char *prefix, int64_t *x, int64_t *y) {
    const size_t n = strlen(prefix);
    if (strncmp(spec, prefix, n) != 0) return 0;
    const char *colon = strchr(spec + n, ':');
    char a[32];
    if (!colon || (size_t)(colon - spec - n) >= sizeof a) return 0;
    snprintf(a, sizeof a, "%.*s", (int)(colon - spec - n), spec + n);
    return ns_integer_parse(a, INT64_MIN, INT64_MAX, x) == NS_OK && ns_integer_parse(colon + 1, INT64_MIN, INT64_MAX, y) == NS_OK;
}

static int add_generated(cli_shape_set *set, const char *spec, uint64_t seed) {
    ns_tree_t *t = NULL;
    ns_status st;
    int64_t x = 0, y = 0;
    if (two_integers(spec, "tree:", &x, &y)) {
        if (x < 1 || x > 100000000 || y < 1 || y > x)
            return cli_error("%s: needs 1 <= BRANCHES <= SIZE <= 1e8", spec);
        st = ns_generate_tree((int32_t)x, (int32_t)y, seed, &t);
    } else if (two_integers(spec, "binary:", &x, &y)) {
        if (x < 1 || x > 100000000 || y < 1 || y > 30) return cli_error("%s: needs SIZE >= 1 and 1 <= LEVELS <= 30", spec);
        st = ns_generate_binary_tree((int32_t)x, (int32_t)y, &t);
    } else if (strncmp(spec, "random:", 7) == 0) {
        ns_random_tree_params p;
        st = ns_random_tree_preset(spec + 7, &p);
        if (st == NS_OK) st = ns_generate_random_tree(&p, seed, &t);
    } else {
        st = ns_generate_paper_tree(spec, seed, &t);
    }
    if (st != NS_OK) return cli_status_error(spec, st);
    return push(set, spec, t, NULL);
}

int cli_shapes_add(cli_shape_set *set, const char *spec, const cli_morph_options *o, uint64_t seed) {
    const char *path = strcmp(spec, "bundled") == 0 ? cli_morphology_dir() : spec;
    struct stat st;
    int is_generator = strchr(spec, ':') != NULL || stat(path, &st) != 0;
    size_t len = strlen(spec);
    if (len > 4 && strcmp(spec + len - 4, ".swc") == 0) is_generator = 0; /* a missing file is an error */
    if (is_generator) return add_generated(set, spec, seed);
    char **files = NULL;
    int n = 0;
    if (cli_expand_path(path, &files, &n)) return 1;
    int rc = 0;
    for (int k = 0; k < n; ++k) {
        if (!rc) rc = add_file(set, files[k], o);
        free(files[k]);
    }
    free(files);
    return rc;
}

void cli_shapes_free(cli_shape_set *set) {
    for (int k = 0; k < set->count; ++k) {
        ns_tree_destroy(set->items[k].tree);
        ns_cell_destroy(set->items[k].cell);
    }
    free(set->items);
    set->items = NULL;
    set->count = set->capacity = 0;
}
