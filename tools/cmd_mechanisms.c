/* neurosolve mechanisms: build a mechanism library from a folder of NMODL
 * files (like NEURON's nrnivmodl), list a library's mechanisms, or write the
 * generated sources of one file (docs/mechanisms.md). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* isatty */

#include "cli.h"

/* `mechanisms --help` (action NULL): every action; `mechanisms ACTION --help`: that one's. */
static int usage_text(const char *action) {
    static const char *const text[][2] = {
        {"build", "neurosolve mechanisms build DIR [-o LIB] [--cuda] [--nvcc NVCC] [--arch sm_XX] [--keep-sources]\n"
                  "                          [--jobs N]\n"
                  "build: translate every DIR/*.mod and compile them with the C compiler ($CC, else cc;\n"
                  "       nvcc too with --cuda) into LIB (default libmechanisms.so; its folder is created),\n"
                  "       one compiler run per file, N at once (default: the cores this process may use;\n"
                  "       the library does not depend on N; on a terminal: the file, the time and the time left).\n"},
        {"list", "neurosolve mechanisms list LIB [--json]\n"
                 "list: the mechanisms of LIB with their parameters, assigned and state variables,\n"
                 "      GLOBALs and ions.\n"},
        {"translate", "neurosolve mechanisms translate FILE.mod [-o DIR] [--cuda]\n"
                      "translate: write NAME.h, NAME.c (and NAME.cu with --cuda) into DIR (default .).\n"},
    };
    int shown = 0;
    for (int k = 0; k < 3; ++k)
        if (!action || !strcmp(action, text[k][0])) printf("%s%s", shown++ ? "" : "usage: ", text[k][1]);
    if (!shown) return usage_text(NULL);
    return 0;
}

/* Progress of a build on a terminal: the file being compiled, the elapsed
 * time and, from the second file on, an estimate of the time left. */
typedef struct build_progress {
    double start;
} build_progress;

static void on_progress(void *user, int step, int steps, const char *what) {
    build_progress *p = user;
    const double el = cli_now_s() - p->start;
    if (step >= steps) {
        fprintf(stderr, "\r%-78s\r", "");
        fflush(stderr);
        return;
    }
    char left[48] = "";
    if (step > 0) snprintf(left, sizeof left, ", about %.0f s left", el / step * (steps - step));
    fprintf(stderr, "\rmechanisms build: [%d/%d] %-28.28s %.0f s%s   ", step + 1, steps, what, el, left);
    fflush(stderr);
}

/* DIR/NAME.EXT through ns_output: it appears only when complete. */
static int write_file(const char *dir, const char *name, const char *ext, const char *text) {
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s%s", dir, name, ext) >= sizeof path)
        return cli_error("%s/%s%s: the path is longer than %zu bytes", dir, name, ext, sizeof path - 1);
    ns_output *o = cli_output_open(path);
    if (!o) return 1;
    fputs(text, ns_output_stream(o));
    return cli_output_commit(o);
}

static void print_names(const char *label, const char *const *names, int from, int to) {
    printf("  %-9s", label);
    if (from == to) printf(" -");
    for (int i = from; i < to; ++i) printf(" %s", names[i]);
    printf("\n");
}

static int list(int argc, char **argv) {
    const char *lib_path = NULL;
    int as_json = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--json")) as_json = 1;
        else if (argv[i][0] == '-') return cli_usage_error("mechanisms", "unknown option '%s'", argv[i]);
        else if (!lib_path) lib_path = argv[i];
        else return cli_usage_error("mechanisms", "list takes one library");
    }
    if (!lib_path) return cli_usage_error("mechanisms", "list needs a library");
    ns_mech_library_t *lib = NULL;
    ns_status s = ns_mech_library_open(lib_path, &lib);
    if (s) return cli_status_error("mechanisms list", s);
    int n = ns_mech_library_count(lib);
    cli_json j;
    if (as_json) {
        json_begin(&j, stdout);
        json_string(&j, "library", lib_path);
        json_array_begin(&j, "mechanisms");
    }
    for (int k = 0; k < n; ++k) {
        const ns_mech_desc *d = ns_mech_library_get(lib, k);
        if (as_json) {
            json_object_begin(&j, NULL);
            json_string(&j, "name", d->name);
            json_string(&j, "kind", d->kind == NS_MECH_POINT ? "point" : "density");
            const char *labels[] = {"parameters", "assigned", "states"};
            int bounds[] = {0, d->n_params, d->n_params + d->n_assigned, d->n_fields};
            for (int g = 0; g < 3; ++g) {
                json_array_begin(&j, labels[g]);
                for (int i = bounds[g]; i < bounds[g + 1]; ++i) json_string(&j, NULL, d->field_names[i]);
                json_array_end(&j);
            }
            json_array_begin(&j, "globals");
            for (int i = 0; i < d->n_globals; ++i) json_string(&j, NULL, d->global_names[i]);
            json_array_end(&j);
            json_array_begin(&j, "ions");
            for (int i = 0; i < d->n_ions; ++i) json_string(&j, NULL, d->ions[i].name);
            json_array_end(&j);
            json_bool(&j, "net_receive", d->has_net_receive);
            json_bool(&j, "artificial", d->artificial);
            json_bool(&j, "cuda", d->cuda_state != NULL);
            if (d->cuda_why_not) json_string(&j, "cuda_why_not", d->cuda_why_not);
            json_object_end(&j);
            continue;
        }
        printf("%s (%s%s%s)\n", d->name,
               d->artificial ? "artificial cell" : d->kind == NS_MECH_POINT ? "point process" : "density",
               d->has_net_receive ? ", NET_RECEIVE" : "", d->cuda_state ? ", CUDA" : "");
        print_names("parameter", d->field_names, 0, d->n_params);
        print_names("assigned", d->field_names, d->n_params, d->n_params + d->n_assigned);
        print_names("state", d->field_names, d->n_params + d->n_assigned, d->n_fields);
        print_names("global", d->global_names, 0, d->n_globals);
        printf("  %-9s", "ions");
        if (!d->n_ions) printf(" -");
        for (int i = 0; i < d->n_ions; ++i) printf(" %s", d->ions[i].name);
        printf("\n");
    }
    if (as_json) {
        json_array_end(&j);
        json_end(&j);
    }
    ns_mech_library_close(lib);
    return 0;
}

int cmd_mechanisms(int argc, char **argv) {
    if (argc < 2) return cli_usage_error("mechanisms", "needs an action (build, list, translate)");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return usage_text(NULL);
    for (int i = 2; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage_text(argv[1]);
    if (!strcmp(argv[1], "list")) return list(argc - 1, argv + 1);
    int build = !strcmp(argv[1], "build");
    if (!build && strcmp(argv[1], "translate"))
        return cli_usage_error("mechanisms", "unknown action '%s' (build, list, translate)", argv[1]);
    const char *in = NULL, *out = NULL, *nvcc = NULL, *arch = NULL;
    int cuda = 0, keep = 0;
    long long jobs = 0;
    for (int i = 2; i < argc; ++i) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--nvcc") || !strcmp(argv[i], "--arch")) {
            if (i + 1 >= argc) return cli_usage_error("mechanisms", "%s needs a value", argv[i]);
            const char **dst = !strcmp(argv[i], "-o") ? &out : !strcmp(argv[i], "--nvcc") ? &nvcc : &arch;
            *dst = argv[++i];
        } else if (!strcmp(argv[i], "--jobs") && build) {
            if (i + 1 >= argc) return cli_usage_error("mechanisms", "%s needs a value", argv[i]);
            if (!cli_parse_long("mechanisms", "--jobs", argv[++i], 1, 1024, &jobs)) return 2;
        } else if (!strcmp(argv[i], "--cuda")) cuda = 1;
        else if (!strcmp(argv[i], "--keep-sources") && build) keep = 1;
        else if (argv[i][0] == '-') return cli_usage_error("mechanisms", "unknown option '%s'", argv[i]);
        else if (!in) in = argv[i];
        else return cli_usage_error("mechanisms", "unexpected argument '%s'", argv[i]);
    }
    if (!in) return cli_usage_error("mechanisms", "%s needs %s", argv[1], build ? "a folder" : "a .mod file");
    if (!build) {
        ns_nmodl_t *m = NULL;
        ns_status s = ns_nmodl_parse_file(in, &m);
        if (s) return cli_status_error("mechanisms translate", s);
        const ns_nmodl_target targets[] = {NS_NMODL_HEADER, NS_NMODL_C, NS_NMODL_CUDA};
        const char *ext[] = {".h", ".c", ".cu"};
        int rc = out ? cli_make_dirs(out) : 0;
        for (int t = 0; t < (cuda ? 3 : 2) && !rc; ++t) {
            char *text = NULL;
            s = ns_nmodl_emit(m, targets[t], &text);
            if (s) rc = cli_status_error("mechanisms translate", s);
            else rc = write_file(out ? out : ".", ns_nmodl_name(m), ext[t], text);
            ns_nmodl_free(text);
        }
        ns_nmodl_destroy(m);
        return rc;
    }
    ns_mechanisms_build_options o = {0};
    o.cc = getenv("CC"); /* the command line maps $CC; the library reads no environment */
    if (o.cc && !*o.cc) o.cc = NULL;
    if (cuda) o.nvcc = nvcc ? nvcc : "nvcc";
    o.cuda_arch = arch;
    o.keep_sources = keep;
    o.jobs = (int)jobs;
    build_progress bp = {cli_now_s()};
    if (isatty(2)) { /* on a terminal: the file being compiled and the time left */
        o.progress = on_progress;
        o.progress_user = &bp;
    }
    const char *lib = out ? out : "libmechanisms.so";
    if (cli_make_parent_dir(lib)) return 1;
    ns_status s = ns_mechanisms_build(in, lib, &o);
    if (s && o.progress) on_progress(&bp, 1, 1, ""); /* clear the line before the error */
    if (s) return cli_status_error("mechanisms build", s);
    ns_mech_library_t *l = NULL;
    s = ns_mech_library_open(lib, &l);
    if (s) return cli_status_error("mechanisms build", s);
    printf("%s: %d mechanisms:", lib, ns_mech_library_count(l));
    for (int k = 0; k < ns_mech_library_count(l); ++k) printf(" %s", ns_mech_library_get(l, k)->name);
    printf("\n");
    ns_mech_library_close(l);
    return 0;
}
