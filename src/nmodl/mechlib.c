/* The nrnivmodl-like workflow (translate a folder of .mod files and compile
 * them into a shared library with the system compiler) and the loading of
 * such a library's catalogue (dlopen). POSIX only. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <ftw.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
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
    if (na > SIZE_MAX - nb - 2) return NULL;
    char *r = malloc(na + nb + 2);
    if (!r) return NULL;
    memcpy(r, a, na);
    r[na] = '/';
    memcpy(r + na + 1, b, nb + 1);
    return r;
}

/* a + b (either may be "") as a new string; NULL when out of memory */
static char *concat(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > SIZE_MAX - nb - 1) return NULL;
    char *r = malloc(na + nb + 1);
    if (!r) return NULL;
    memcpy(r, a, na);
    memcpy(r + na, b, nb + 1);
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

/* a NULL-terminated list of strings (argv) */
typedef struct strv {
    char **s;
    size_t n, cap;
} strv;
static int sv_add(strv *v, const char *s) {
    if (v->n + 1 >= v->cap) {
        if (v->cap > SIZE_MAX / 2 / sizeof *v->s) return -1;
        size_t cap = v->cap ? 2 * v->cap : 32;
        char **n = realloc(v->s, cap * sizeof *n);
        if (!n) return -1;
        v->s = n;
        v->cap = cap;
    }
    if (!(v->s[v->n] = strdup(s))) return -1;
    v->s[++v->n] = NULL;
    return 0;
}
static void sv_free(strv *v) {
    for (size_t i = 0; i < v->n; i++) free(v->s[i]);
    free(v->s);
}

/* A growing text (the catalogue): sizes in size_t, checked; on failure the
 * text is dropped and every later append is a no-op. */
typedef struct text {
    char *s;
    size_t n, cap;
    int failed;
} text;
static void tx_add(text *t, const char *a) {
    if (t->failed) return;
    const size_t na = strlen(a);
    if (na > SIZE_MAX / 2 - t->n - 1) t->failed = 1;
    else if (t->n + na + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->n + na + 1) cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s) t->failed = 1;
        else {
            t->s = s;
            t->cap = cap;
        }
    }
    if (t->failed) {
        free(t->s);
        t->s = NULL;
        return;
    }
    memcpy(t->s + t->n, a, na + 1);
    t->n += na;
}

/* Removes a folder this build made and everything in it (what the compiler
 * may have left too); not followed through links. */
static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *ftw) {
    (void)info, (void)flag, (void)ftw;
    remove(path);
    return 0;
}
static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Start argv with stdout and stderr into log (appended). */
static ns_status start(char **argv, const char *log, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa)) return ns_fail(NS_ERR_OUT_OF_MEMORY, "posix_spawn_file_actions_init");
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int e = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e) return ns_fail(NS_ERR_UNSUPPORTED, "cannot run the compiler '%s': %s", argv[0], strerror(e));
    return NS_OK;
}

/* Wait for a run that start() began; NS_OK when it exited with 0, else the
 * error with what it wrote to log. */
static ns_status finish(pid_t pid, const char *argv0, const char *log) {
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
    return ns_fail(NS_ERR_IO, "'%s' failed (%s %d):\n%s", argv0, WIFEXITED(wst) ? "exit status" : "signal",
                   WIFEXITED(wst) ? WEXITSTATUS(wst) : (WIFSIGNALED(wst) ? WTERMSIG(wst) : -1), msg);
}

/* The compiler runs a build may have at once: o.jobs, else the cores this
 * process may run on. */
static int build_jobs(int jobs) {
    if (jobs > 0) return jobs;
#ifdef _SC_NPROCESSORS_ONLN
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < 64 ? n : 64) : 1;
#else
    return 1;
#endif
}

/* Compile every srcs[i] into srcs[i].o (args, then -c SRC -o OBJ), up to
 * `jobs` runs at once, each with its own log (SRC.log, removed on success);
 * the objects are appended to objs in the sources' order. The runs are
 * waited for in the order they started; after a failure no new run starts
 * and the error is the first failing source's, so the outcome does not
 * depend on jobs. */
static ns_status compile_all(const strv *args, const strv *srcs, strv *objs, int jobs,
                             const ns_mechanisms_build_options *o) {
    ns_status s = NS_OK;
    const size_t n = srcs->n;
    strv *cmd = calloc(n ? n : 1, sizeof *cmd);
    pid_t *pid = calloc(n ? n : 1, sizeof *pid);
    char **log = calloc(n ? n : 1, sizeof *log);
    if (!cmd || !pid || !log) {
        free(cmd), free(pid), free(log);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t next = 0, waited = 0;
    for (size_t i = 0; i < n && !s; i++) {
        char *obj = concat(srcs->s[i], ".o");
        int bad = !obj || !(log[i] = concat(srcs->s[i], ".log")) || sv_add(objs, obj);
        for (size_t k = 0; !bad && k < args->n; k++) bad = sv_add(&cmd[i], args->s[k]);
        bad = bad || sv_add(&cmd[i], "-c") || sv_add(&cmd[i], srcs->s[i]) || sv_add(&cmd[i], "-o") || sv_add(&cmd[i], obj);
        free(obj);
        if (bad) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    }
    while (!s && waited < n) {
        while (!s && next < n && next - waited < (size_t)jobs) {
            const char *slash = strrchr(srcs->s[next], '/');
            if (o->progress) o->progress(o->progress_user, (int)next, (int)n + 1, slash ? slash + 1 : srcs->s[next]);
            s = start(cmd[next].s, log[next], &pid[next]);
            if (!s) next++;
        }
        if (!s) {
            s = finish(pid[waited], cmd[waited].s[0], log[waited]);
            if (!s) remove(log[waited]);
            waited++;
        }
    }
    for (; waited < next; waited++) { /* after a failure: the runs still going end first */
        int wst;
        while (waitpid(pid[waited], &wst, 0) < 0 && errno == EINTR) {
        }
    }
    for (size_t i = 0; i < n; i++) {
        sv_free(&cmd[i]);
        free(log[i]);
    }
    free(cmd), free(pid), free(log);
    return s;
}

/* Translate each of dir's mods (sorted) into work/: NAME.h, NAME.c (and NAME.cu
 * with cuda); the names into names, the sources to compile into srcs. */
static ns_status translate_all(const char *dir, const strv *mods, const char *work, int cuda, strv *names, strv *srcs,
                               int *member, int *n_ions) {
    ns_status s = NS_OK;
    for (size_t i = 0; i < mods->n; i++) {
        char *path = join(dir, mods->s[i]);
        if (!path) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        ns_nmodl_t *m = NULL;
        s = ns_nmodl_parse_file(path, &m);
        free(path);
        if (s) return s;
        for (size_t k = 0; k < names->n; k++)
            if (!strcmp(names->s[k], m->name)) {
                s = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: mechanism %s is defined twice in %s", mods->s[i], m->name, dir);
                ns_nmodl_destroy(m);
                return s;
            }
        if (sv_add(names, m->name)) {
            ns_nmodl_destroy(m);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        }
        member[i] = nm_fused_member(m);
        n_ions[i] = m->n_ions;
        /* NEURON's headers that VERBATIM C includes: their functions are in the generated
         * header of each mechanism with VERBATIM C (src/nmodl/nmodl_verbatim.h) */
        for (int k = 0; m->verbatim && k < 2; k++) {
            char *h = join(work, k ? "mcran4.h" : "nrnran123.h");
            if (!h) { ns_nmodl_destroy(m); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); }
            s = write_text(h, "/* neurosolve: NEURON's functions of this header are in the header of each mechanism "
                              "with VERBATIM C (src/nmodl/nmodl_verbatim.h) */\n");
            free(h);
            if (s) { ns_nmodl_destroy(m); return s; }
        }
        const ns_nmodl_target targets[] = {NS_NMODL_HEADER, NS_NMODL_C, NS_NMODL_CUDA};
        const char *ext[] = {".h", ".c", ".cu"};
        for (int t = 0; t < (cuda ? 3 : 2); t++) {
            char *code = NULL;
            s = ns_nmodl_emit(m, targets[t], &code);
            if (s) { ns_nmodl_destroy(m); return s; }
            char *fname = concat(m->name, ext[t]);
            char *fp = fname ? join(work, fname) : NULL;
            free(fname);
            if (!fp) { free(code); ns_nmodl_destroy(m); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory"); }
            s = write_text(fp, code);
            free(code);
            if (!s && t > 0 && sv_add(srcs, fp)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
            free(fp);
            if (s) { ns_nmodl_destroy(m); return s; }
        }
        ns_nmodl_destroy(m);
    }
    return NS_OK;
}

/* work/catalogue.c: each name twice, however long; appended to srcs. */
static ns_status write_catalogue(const char *work, const strv *names, strv *srcs) {
    ns_status s = NS_OK;
    text cat = {0};
    tx_add(&cat, "/* Generated by neurosolve mechanisms build: do not edit. */\n#include \"neurosolve/mechanism.h\"\n");
    for (size_t k = 0; k < names->n; k++) {
        tx_add(&cat, "extern const ns_mech_desc nsm_");
        tx_add(&cat, names->s[k]);
        tx_add(&cat, "_desc;\n");
    }
    tx_add(&cat, "static const ns_mech_desc *const mechs[] = {");
    for (size_t k = 0; k < names->n; k++) {
        tx_add(&cat, k ? ", &nsm_" : "&nsm_");
        tx_add(&cat, names->s[k]);
        tx_add(&cat, "_desc");
    }
    {
        char tail[400];
        snprintf(tail, sizeof tail,
                 "};\nstatic const ns_mech_catalogue cat = {NS_MECH_ABI_VERSION, %zu, mechs};\n"
                 "__attribute__((visibility(\"default\"))) const ns_mech_catalogue *ns_mech_catalogue_v1(void);\n"
                 "const ns_mech_catalogue *ns_mech_catalogue_v1(void) { return &cat; }\n",
                 names->n);
        tx_add(&cat, tail);
    }
    if (cat.failed) {
        free(cat.s);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    }
    {
        char *fp = join(work, "catalogue.c");
        if (!fp) {
            free(cat.s);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        }
        s = write_text(fp, cat.s);
        if (!s && sv_add(srcs, fp)) s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
        free(fp);
    }
    free(cat.s);
    return s;
}

#define OOM()                                                   \
    do {                                                        \
        s = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");     \
        goto done;                                              \
    } while (0)

ns_status ns_mechanisms_build(const char *dir, const char *out_lib, const ns_mechanisms_build_options *options) {
    if (!dir || !out_lib) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mechanisms_build: NULL argument");
    ns_mechanisms_build_options o = {0};
    if (options) o = *options;
    const char *cc = o.cc ? o.cc : "cc";
    ns_status s = NS_OK;
    strv mods = {0}, names = {0}, args = {0}, srcs = {0}, objs = {0}, one = {0};
    char *keep = NULL, *work = NULL, *inc = NULL, *abi = NULL, *tmp = NULL, *log = NULL, *arch = NULL;
    int *member = NULL; /* per .mod: nm_fused_member, then its USEIONs */
    int work_made = 0;
    DIR *d = opendir(dir);
    if (!d) return ns_fail(NS_ERR_IO, "%s: cannot open the folder: %s", dir, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > 4 && !strcmp(de->d_name + n - 4, ".mod") && sv_add(&mods, de->d_name)) {
            closedir(d);
            OOM();
        }
    }
    closedir(d);
    if (mods.n == 0) { s = ns_fail(NS_ERR_EMPTY, "%s: no .mod files", dir); goto done; }
    qsort(mods.s, mods.n, sizeof *mods.s, cmp_str);
    /* The sources are generated and compiled in a new private folder
     * (LIB.src.partial-XXXXXX), removed after the build; with keep_sources it
     * becomes LIB.src/ (or o.workdir) when the build succeeds. A folder of
     * that name from an earlier build (whose files may have been edited) is
     * never written into nor removed: without keep_sources it is left as it
     * is, with keep_sources the build is refused before any work. */
    if (!(keep = o.workdir ? strdup(o.workdir) : concat(out_lib, ".src"))) OOM();
    if (o.keep_sources) {
        struct stat info;
        if (lstat(keep, &info) == 0) {
            s = ns_fail(NS_ERR_INVALID_ARGUMENT,
                        "%s already exists (sources kept by an earlier build, perhaps edited): remove or rename "
                        "it to keep the sources of this build",
                        keep);
            goto done;
        }
    }
    if (!(work = concat(keep, ".partial-XXXXXX"))) OOM();
    if (!mkdtemp(work)) { s = ns_fail(NS_ERR_IO, "%s: cannot create: %s", work, strerror(errno)); goto done; }
    work_made = 1;
    if (!(inc = join(work, "neurosolve"))) OOM();
    if (mkdir(inc, 0755)) { s = ns_fail(NS_ERR_IO, "%s: cannot create: %s", inc, strerror(errno)); goto done; }
    if (!(abi = join(inc, "mechanism.h"))) OOM();
    if ((s = write_text(abi, ns_nmodl_abi_header))) goto done;
    /* compiler command line */
    if (o.nvcc) {
        if (!(arch = concat("-arch=", o.cuda_arch ? o.cuda_arch : "sm_90"))) OOM();
        const char *a[] = {o.nvcc, "-O3", arch, "-Xcompiler",
                           "-fPIC,-fvisibility=hidden,-ffp-contract=off,-fno-trapping-math",
                           "-DNS_MECH_WITH_CUDA", "-DNSM_LIBRARY_FUSED", "-Wno-deprecated-gpu-targets", NULL};
        for (int i = 0; a[i]; i++)
            if (sv_add(&args, a[i])) OOM();
    } else {
        const char *a[] = {cc, "-std=c11", "-O3", "-fPIC", "-fvisibility=hidden", "-ffp-contract=off",
                           "-fno-trapping-math", "-fopenmp-simd", "-DNSM_OMP_SIMD",
                           /* VERBATIM C that calls a function nobody declares (a NEURON function
                            * neurosolve does not have): an error naming it, the .mod file and line */
                           "-Werror=implicit-function-declaration", NULL};
        for (int i = 0; a[i]; i++)
            if (sv_add(&args, a[i])) OOM();
    }
    /* the generated sources' folder, then the .mod files' (headers their VERBATIM C includes, as nrnivmodl) */
    for (int k = 0; k < 2; k++) {
        char *iflag = concat("-I", k ? dir : work);
        if (!iflag) OOM();
        int bad = sv_add(&args, iflag);
        free(iflag);
        if (bad) OOM();
    }
    if (!(member = calloc(mods.n, 2 * sizeof *member))) OOM();
    if ((s = translate_all(dir, &mods, work, o.nvcc != NULL, &names, &srcs, member, member + mods.n))) goto done;
    if (o.nvcc) { /* ABI 6: one launch per phase for the library's density mechanisms */
        char *cu = NULL;
        if ((s = nm_write_fused(work, (const char *const *)names.s, member, member + mods.n, names.n, &cu))) goto done;
        const int bad = sv_add(&srcs, cu);
        free(cu);
        if (bad) OOM();
    }
    if ((s = write_catalogue(work, &names, &srcs))) goto done;
    if (!(tmp = concat(out_lib, ".partial")) || !(log = join(work, "build.log"))) OOM();
    /* one compiler run per source (a step of progress each, jobs at once), then the link */
    s = compile_all(&args, &srcs, &objs, build_jobs(o.jobs), &o);
    if (!s) {
        if (o.progress) o.progress(o.progress_user, (int)srcs.n, (int)srcs.n + 1, "linking");
        for (size_t k = 0; k < args.n; k++)
            if (sv_add(&one, args.s[k])) OOM();
        if (sv_add(&one, "-shared")) OOM();
        for (size_t k = 0; k < objs.n; k++)
            if (sv_add(&one, objs.s[k])) OOM();
        if (sv_add(&one, "-o") || sv_add(&one, tmp) || sv_add(&one, "-lm")) OOM();
        pid_t pid;
        s = start(one.s, log, &pid);
        if (!s) s = finish(pid, one.s[0], log);
    }
    if (s) {
        remove(tmp);
        ns_error_prefix("building the mechanism library");
        goto done;
    }
    if (o.progress) o.progress(o.progress_user, (int)srcs.n + 1, (int)srcs.n + 1, "done");
    for (size_t k = 0; k < objs.n; k++) remove(objs.s[k]); /* kept sources are sources */
    if (rename(tmp, out_lib)) {
        s = ns_fail(NS_ERR_IO, "%s: cannot rename to %s: %s", tmp, out_lib, strerror(errno));
        remove(tmp);
        goto done;
    }
    if (o.keep_sources) {
        remove(log);
        if (rename(work, keep) == 0) work_made = 0;
        else s = ns_fail(NS_ERR_IO, "%s (the library was built): cannot keep its sources as %s: %s", out_lib, keep,
                         strerror(errno));
    }
done:
    /* the private folder goes, after a failure too: a failed build leaves
     * nothing (the compiler's output is in the message) */
    if (work_made) remove_tree(work);
    sv_free(&mods);
    sv_free(&names);
    sv_free(&args);
    sv_free(&srcs);
    sv_free(&objs);
    sv_free(&one);
    free(keep);
    free(work);
    free(inc);
    free(abi);
    free(tmp);
    free(log);
    free(arch);
    free(member);
    return s;
}
#undef OOM

struct ns_mech_library {
    void *handle;
    const ns_mech_catalogue *cat;
    /* a library built for an older ABI: its descriptors copied into this
     * version's layout, the newer members zero (NULL) */
    ns_mech_catalogue own;
    ns_mech_desc *copies;
    const ns_mech_desc **ptrs;
};

/* what each older ABI version's ns_mech_desc holds: up to this member */
static size_t desc_size(int version) {
    /* 4: the derivatives were Jacobians (jac_*) where 5 has vector-Jacobian products,
     * and thread_unsafe after them; 5: up to cuda_why_not; 6: up to cuda_fused_state;
     * 7: up to cuda_hooks (the fields after them zero: no LONGITUDINAL_DIFFUSION); 8: up to
     * ldifus_coef (no constant-ion products); 9: up to vjp_state_n_ci (no device products) */
    return version == 3   ? offsetof(ns_mech_desc, hooks)
           : version == 4 ? offsetof(ns_mech_desc, vjp_init)
           : version == 5 ? offsetof(ns_mech_desc, fused_index)
           : version == 6 ? offsetof(ns_mech_desc, vjp_init_n)
           : version == 7 ? offsetof(ns_mech_desc, cuda_errors)
           : version == 8 ? offsetof(ns_mech_desc, vjp_init_n_ci)
           : version == 9 ? offsetof(ns_mech_desc, cuda_vjp_init)
                          : sizeof(ns_mech_desc);
}

/* VERBATIM C's error context of the calling thread (mechanism.h): here, in a
 * library that is never unloaded, not in the mechanism library's own
 * thread-local storage, which outlives the library on the threads that touched
 * it (LeakSanitizer's tracer then crashed at exit) */
static ns_mech_verbatim_ctx *verbatim_ctx(void) {
    static _Thread_local ns_mech_verbatim_ctx ctx;
    return &ctx;
}
/* each mechanism of a library with VERBATIM C (nsm_NAME_verbatim_bind) gets the accessor */
static void bind_verbatim(void *h, const ns_mech_catalogue *cat) {
    for (int i = 0; i < cat->n; i++) {
        char sym[160];
        if (snprintf(sym, sizeof sym, NS_MECH_VERBATIM_BIND, cat->mechs[i]->name) >= (int)sizeof sym) continue;
        union {
            void *obj;
            void (*fn)(ns_mech_verbatim_ctx_fn);
        } u;
        u.obj = dlsym(h, sym);
        if (u.obj) u.fn(verbatim_ctx);
    }
}

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
    const int version = cat ? cat->abi_version : -1; /* read before dlclose unmaps it */
    if (version < NS_MECH_ABI_OLDEST || version > NS_MECH_ABI_VERSION) {
        dlclose(h);
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: mechanism ABI version %d, this neurosolve reads %d to %d", path,
                       version, NS_MECH_ABI_OLDEST, NS_MECH_ABI_VERSION);
    }
    for (int i = 0; i < cat->n; i++)
        if (!cat->mechs[i] || cat->mechs[i]->abi_version != cat->abi_version) {
            dlclose(h);
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: mechanism %d has another ABI version than its catalogue", path, i);
        }
    ns_mech_library_t *lib = calloc(1, sizeof *lib);
    const int old = cat->abi_version != NS_MECH_ABI_VERSION;
    if (lib && old) {
        lib->copies = calloc((size_t)cat->n + 1, sizeof *lib->copies);
        lib->ptrs = calloc((size_t)cat->n + 1, sizeof *lib->ptrs);
    }
    if (!lib || (old && (!lib->copies || !lib->ptrs))) {
        if (lib) free(lib->copies), free(lib->ptrs);
        free(lib);
        dlclose(h);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    }
    lib->handle = h;
    lib->cat = cat;
    bind_verbatim(h, cat);
    if (old) {
        for (int i = 0; i < cat->n; i++) {
            memcpy(&lib->copies[i], cat->mechs[i], desc_size(cat->abi_version));
            if (cat->abi_version < 5) lib->copies[i].vjp_why_not = "built for an older mechanism ABI (rebuild the library)";
            if (cat->abi_version < 6) lib->copies[i].fused_index = -1; /* one launch per mechanism and phase */
            lib->ptrs[i] = &lib->copies[i];
        }
        lib->own.abi_version = NS_MECH_ABI_VERSION;
        lib->own.n = cat->n;
        lib->own.mechs = lib->ptrs;
        lib->cat = &lib->own;
    }
    *out = lib;
    return NS_OK;
}

void ns_mech_library_close(ns_mech_library_t *lib) {
    if (!lib) return;
    dlclose(lib->handle);
    free(lib->copies);
    free(lib->ptrs);
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
    return ns_mech_nernst_ktf(ci, co, charge, ns_mech_ktf(celsius));
}
