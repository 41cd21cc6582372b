/* The nrnivmodl-like workflow (translate a folder of .mod files and compile
 * them into a shared library with the system compiler) and the loading of
 * such a library's catalogue (dlopen). POSIX only. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "neurosolve/nmodl.h"
#include "nmodl/nmodl_impl.h"

extern char **environ;

/* include/neurosolve/mechanism.h as text (CMake writes it, abi_text.c) */
extern const char ns_nmodl_abi_header[];

static char *join(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *r = malloc(na + nb + 2);
    if (!r) return NULL;
    memcpy(r, a, na);
    r[na] = '/';
    memcpy(r + na + 1, b, nb + 1);
    return r;
}

static ns_status write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad) return ns_fail(NS_ERR_IO, "%s: write error", path);
    return NS_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct strv {
    char **s;
    int n, cap;
} strv;
static int sv_add(strv *v, const char *s) {
    if (v->n + 1 >= v->cap) {
        int cap = v->cap ? 2 * v->cap : 32;
        char **n = realloc(v->s, (size_t)cap * sizeof *n);
        if (!n) return -1;
        v->s = n;
        v->cap = cap;
    }
    if (!(v->s[v->n] = strdup(s))) return -1;
    v->s[++v->n] = NULL;
    return 0;
}
static void sv_free(strv *v) {
    for (int i = 0; i < v->n; i++) free(v->s[i]);
    free(v->s);
}

/* Run argv with stdout and stderr into log; 0 when it exited with 0. */
static ns_status run(char **argv, const char *log) {
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa)) return ns_fail(NS_ERR_OUT_OF_MEMORY, "posix_spawn_file_actions_init");
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e) return ns_fail(NS_ERR_UNSUPPORTED, "cannot run the compiler '%s': %s", argv[0], strerror(e));
    int wst;
    while (waitpid(pid, &wst, 0) < 0)
        if (errno != EINTR) return ns_fail(NS_ERR_IO, "waitpid: %s", strerror(errno));
    if (WIFEXITED(wst) && WEXITSTATUS(wst) == 0) return NS_OK;
    char msg[1600] = {0};
    FILE *f = fopen(log, "rb");
    if (f) {
        size_t n = fread(msg, 1, sizeof msg - 1, f);
        msg[n] = 0;
        fclose(f);
    }
    return ns_fail(NS_ERR_IO, "'%s' failed (%s %d):\n%s", argv[0], WIFEXITED(wst) ? "exit status" : "signal",
                   WIFEXITED(wst) ? WEXITSTATUS(wst) : (WIFSIGNALED(wst) ? WTERMSIG(wst) : -1), msg);
}

ns_status ns_mechanisms_build(const char *dir, const char *out_lib, const ns_mechanisms_build_options *options) {
    if (!dir || !out_lib) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mechanisms_build: NULL argument");
    ns_mechanisms_build_options o = {0};
    if (options) o = *options;
    const char *cc = o.cc ? o.cc : "cc";
    ns_status s = NS_OK;
    strv mods = {0}, names = {0}, args = {0}, written = {0}, srcs = {0}, objs = {0}, one = {0};
    char *work = NULL, *inc = NULL, *abi = NULL, *tmp = NULL, *log = NULL;
    DIR *d = opendir(dir);
    if (!d) return ns_fail(NS_ERR_IO, "%s: cannot open the folder: %s", dir, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > 4 && !strcmp(de->d_name + n - 4, ".mod") && sv_add(&mods, de->d_name)) {
            closedir(d);
            s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
    }
    closedir(d);
    if (mods.n == 0) { s = ns_fail(NS_ERR_EMPTY, "%s: no .mod files", dir); goto done; }
    qsort(mods.s, (size_t)mods.n, sizeof *mods.s, cmp_str);
    if (o.workdir) work = strdup(o.workdir);
    else if ((work = malloc(strlen(out_lib) + 5))) sprintf(work, "%s.src", out_lib);
    if (!work) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    if (mkdir(work, 0755) && errno != EEXIST) { s = ns_fail(NS_ERR_IO, "%s: cannot create: %s", work, strerror(errno)); goto done; }
    if (!(inc = join(work, "neurosolve"))) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    if (mkdir(inc, 0755) && errno != EEXIST) { s = ns_fail(NS_ERR_IO, "%s: cannot create: %s", inc, strerror(errno)); goto done; }
    if (!(abi = join(inc, "mechanism.h"))) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    if ((s = write_text(abi, ns_nmodl_abi_header))) goto done;
    if (sv_add(&written, abi)) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    /* compiler command line */
    if (o.nvcc) {
        char arch[64];
        snprintf(arch, sizeof arch, "-arch=%s", o.cuda_arch ? o.cuda_arch : "sm_90");
        const char *a[] = {o.nvcc, "-O3", arch, "-Xcompiler",
                           "-fPIC,-fvisibility=hidden,-ffp-contract=off,-fno-trapping-math",
                           "-DNS_MECH_WITH_CUDA", "-Wno-deprecated-gpu-targets", NULL};
        for (int i = 0; a[i]; i++)
            if (sv_add(&args, a[i])) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    } else {
        const char *a[] = {cc, "-std=c11", "-O3", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off",
                           "-fno-trapping-math", "-fopenmp-simd", "-DNSM_OMP_SIMD", NULL};
        for (int i = 0; a[i]; i++)
            if (sv_add(&args, a[i])) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    }
    {
        char *iflag = malloc(strlen(work) + 3);
        if (!iflag) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        sprintf(iflag, "-I%s", work);
        int bad = sv_add(&args, iflag);
        free(iflag);
        if (bad) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
    }
    /* translate */
    for (int i = 0; i < mods.n; i++) {
        char *path = join(dir, mods.s[i]);
        if (!path) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        ns_nmodl_t *m = NULL;
        s = ns_nmodl_parse_file(path, &m);
        free(path);
        if (s) goto done;
        for (int k = 0; k < names.n; k++)
            if (!strcmp(names.s[k], m->name)) {
                s = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: mechanism %s is defined twice in %s", mods.s[i], m->name, dir);
                ns_nmodl_destroy(m);
                goto done;
            }
        if (sv_add(&names, m->name)) { ns_nmodl_destroy(m); s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        const ns_nmodl_target targets[] = {NS_NMODL_HEADER, NS_NMODL_C, NS_NMODL_CUDA};
        const char *ext[] = {".h", ".c", ".cu"};
        for (int t = 0; t < (o.nvcc ? 3 : 2); t++) {
            char *text = NULL;
            s = ns_nmodl_emit(m, targets[t], &text);
            if (s) { ns_nmodl_destroy(m); goto done; }
            char fname[300];
            snprintf(fname, sizeof fname, "%s%s", m->name, ext[t]);
            char *fp = join(work, fname);
            if (!fp) { free(text); ns_nmodl_destroy(m); s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
            s = write_text(fp, text);
            free(text);
            if (!s && sv_add(&written, fp)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
            if (!s && t > 0 && sv_add(&srcs, fp)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
            free(fp);
            if (s) { ns_nmodl_destroy(m); goto done; }
        }
        ns_nmodl_destroy(m);
    }
    /* the catalogue */
    {
        size_t cap = 1024 + (size_t)names.n * 200;
        char *cat = malloc(cap), *c = cat;
        if (!cat) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        c += sprintf(c, "/* Generated by neurosolve mechanisms build: do not edit. */\n#include \"neurosolve/mechanism.h\"\n");
        for (int k = 0; k < names.n; k++) c += sprintf(c, "extern const ns_mech_desc nsm_%s_desc;\n", names.s[k]);
        c += sprintf(c, "static const ns_mech_desc *const mechs[] = {");
        for (int k = 0; k < names.n; k++) c += sprintf(c, "%s&nsm_%s_desc", k ? ", " : "", names.s[k]);
        sprintf(c, "};\nstatic const ns_mech_catalogue cat = {NS_MECH_ABI_VERSION, %d, mechs};\n"
                   "__attribute__((visibility(\"default\"))) const ns_mech_catalogue *ns_mech_catalogue_v1(void);\n"
                   "const ns_mech_catalogue *ns_mech_catalogue_v1(void) { return &cat; }\n",
                names.n);
        char *fp = join(work, "catalogue.c");
        if (!fp) { free(cat); s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        s = write_text(fp, cat);
        free(cat);
        if (!s && sv_add(&written, fp)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        if (!s && sv_add(&srcs, fp)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        free(fp);
        if (s) goto done;
    }
    if (!(tmp = malloc(strlen(out_lib) + 16)) || !(log = join(work, "build.log"))) {
        s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    sprintf(tmp, "%s.partial", out_lib);
    remove(log);
    /* one compiler run per source (a step of progress each), then the link */
    for (int i = 0; i <= srcs.n; i++) {
        const char *slash = i < srcs.n ? strrchr(srcs.s[i], '/') : NULL;
        if (o.progress) o.progress(o.progress_user, i, srcs.n + 1, i < srcs.n ? (slash ? slash + 1 : srcs.s[i]) : "linking");
        sv_free(&one);
        memset(&one, 0, sizeof one);
        for (int k = 0; k < args.n; k++)
            if (sv_add(&one, args.s[k])) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        if (i < srcs.n) {
            char *obj = malloc(strlen(srcs.s[i]) + 3);
            if (!obj) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
            sprintf(obj, "%s.o", srcs.s[i]);
            int bad = sv_add(&one, "-c") || sv_add(&one, srcs.s[i]) || sv_add(&one, "-o") || sv_add(&one, obj) ||
                      sv_add(&objs, obj) || sv_add(&written, obj);
            free(obj);
            if (bad) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        } else {
            if (sv_add(&one, "-shared")) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
            for (int k = 0; k < objs.n; k++)
                if (sv_add(&one, objs.s[k])) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
            if (sv_add(&one, "-o") || sv_add(&one, tmp) || sv_add(&one, "-lm")) { s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); goto done; }
        }
        s = run(one.s, log);
        if (s) {
            remove(tmp);
            ns_error_prefix("building the mechanism library");
            goto done;
        }
    }
    if (o.progress) o.progress(o.progress_user, srcs.n + 1, srcs.n + 1, "done");
    if (rename(tmp, out_lib)) {
        s = ns_fail(NS_ERR_IO, "%s: cannot rename to %s: %s", tmp, out_lib, strerror(errno));
        remove(tmp);
        goto done;
    }
done:
    /* the generated sources go unless asked for (also after a failure: a
     * failed build leaves nothing; the compiler's log is in the message) */
    if (!o.keep_sources && work) {
        for (int i = 0; i < written.n; i++) remove(written.s[i]);
        if (log) remove(log);
        if (inc) rmdir(inc);
        rmdir(work);
    }
    sv_free(&written);
    sv_free(&mods);
    sv_free(&names);
    sv_free(&args);
    sv_free(&srcs);
    sv_free(&objs);
    sv_free(&one);
    free(work);
    free(inc);
    free(abi);
    free(tmp);
    free(log);
    return s;
}

struct ns_mech_library {
    void *handle;
    const ns_mech_catalogue *cat;
};

ns_status ns_mech_library_open(const char *path, ns_mech_library_t **out) {
    if (!path || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mech_library_open: NULL argument");
    *out = NULL;
    char *p = NULL;
    if (!strchr(path, '/')) { /* dlopen searches the library path otherwise */
        if (!(p = malloc(strlen(path) + 3))) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        sprintf(p, "./%s", path);
    }
    void *h = dlopen(p ? p : path, RTLD_NOW | RTLD_LOCAL);
    free(p);
    if (!h) {
        const char *e = dlerror();
        return ns_fail(NS_ERR_IO, "%s: cannot load: %s", path, e ? e : "dlopen failed");
    }
    union {
        void *obj;
        ns_mech_catalogue_fn fn;
    } u;
    u.obj = dlsym(h, NS_MECH_CATALOGUE_SYMBOL);
    if (!u.obj) {
        dlclose(h);
        return ns_fail(NS_ERR_PARSE, "%s: not a mechanism library (no %s)", path, NS_MECH_CATALOGUE_SYMBOL);
    }
    const ns_mech_catalogue *cat = u.fn();
    if (!cat || cat->abi_version != NS_MECH_ABI_VERSION) {
        dlclose(h);
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: mechanism ABI version %d, this neurosolve reads %d", path,
                       cat ? cat->abi_version : -1, NS_MECH_ABI_VERSION);
    }
    for (int i = 0; i < cat->n; i++)
        if (!cat->mechs[i] || cat->mechs[i]->abi_version != NS_MECH_ABI_VERSION) {
            dlclose(h);
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: mechanism %d has another ABI version", path, i);
        }
    ns_mech_library_t *lib = malloc(sizeof *lib);
    if (!lib) {
        dlclose(h);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    }
    lib->handle = h;
    lib->cat = cat;
    *out = lib;
    return NS_OK;
}

void ns_mech_library_close(ns_mech_library_t *lib) {
    if (!lib) return;
    dlclose(lib->handle);
    free(lib);
}

int ns_mech_library_count(const ns_mech_library_t *lib) { return lib ? lib->cat->n : 0; }

const ns_mech_desc *ns_mech_library_get(const ns_mech_library_t *lib, int index) {
    if (!lib || index < 0 || index >= lib->cat->n) return NULL;
    return lib->cat->mechs[index];
}

static ns_status unknown(const char *what, const char *name, const char *owner, const char *const *names, int n) {
    char list[1024];
    size_t k = 0;
    list[0] = 0;
    for (int i = 0; i < n && k < sizeof list - 64; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names[i]);
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s has no %s '%s' (it has: %s)", owner, what, name, n ? list : "none");
}

ns_status ns_mech_library_find(const ns_mech_library_t *lib, const char *name, const ns_mech_desc **out) {
    if (!lib || !name || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mech_library_find: NULL argument");
    *out = NULL;
    for (int i = 0; i < lib->cat->n; i++)
        if (!strcmp(lib->cat->mechs[i]->name, name)) {
            *out = lib->cat->mechs[i];
            return NS_OK;
        }
    const char *names[256];
    int n = lib->cat->n < 256 ? lib->cat->n : 256;
    for (int i = 0; i < n; i++) names[i] = lib->cat->mechs[i]->name;
    return unknown("mechanism", name, "the library", names, n);
}

ns_status ns_mech_field_index(const ns_mech_desc *desc, const char *name, int *index) {
    if (!desc || !name || !index) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mech_field_index: NULL argument");
    for (int i = 0; i < desc->n_fields; i++)
        if (!strcmp(desc->field_names[i], name)) {
            *index = i;
            return NS_OK;
        }
    *index = -1;
    char owner[160];
    snprintf(owner, sizeof owner, "mechanism %s", desc->name);
    return unknown("parameter, assigned or state variable", name, owner, desc->field_names, desc->n_fields);
}

ns_status ns_mech_global_index(const ns_mech_desc *desc, const char *name, int *index) {
    if (!desc || !name || !index) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mech_global_index: NULL argument");
    for (int i = 0; i < desc->n_globals; i++)
        if (!strcmp(desc->global_names[i], name)) {
            *index = i;
            return NS_OK;
        }
    *index = -1;
    char owner[160];
    snprintf(owner, sizeof owner, "mechanism %s", desc->name);
    return unknown("GLOBAL", name, owner, desc->global_names, desc->n_globals);
}

double ns_mech_nernst(double ci, double co, int charge, double celsius) {
    /* NEURON 9's nrn_nernst (src/nrnoc/eion.cpp) with its gas constant and
     * Faraday constant (2019 SI, as NEURON 9.0.2 reports h.R, h.FARADAY) */
    if (charge == 0) return 0.0;
    if (ci <= 0.0) return 1e6;
    if (co <= 0.0) return -1e6;
    const double ktf = 1000. * 8.31446261815324 * (celsius + 273.15) / 96485.33212331001;
    return ktf / charge * log(co / ci);
}
