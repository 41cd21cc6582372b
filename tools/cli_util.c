/* Shared helpers of the subcommands: messages, option parsing, data paths. */
#define _DEFAULT_SOURCE /* getloadavg */
#define _POSIX_C_SOURCE 200809L /* fdopen, kill */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

int cli_error(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fputs("neurosolve: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    return 1;
}

int cli_usage_error(const char *command, const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "neurosolve %s: ", command);
    vfprintf(stderr, format, args);
    fprintf(stderr, " (see: neurosolve %s --help)\n", command);
    va_end(args);
    return 2;
}

int cli_status_error(const char *what, ns_status status) {
    const char *detail = ns_last_error();
    if (detail && *detail)
        fprintf(stderr, "neurosolve: %s: %s: %s\n", what, ns_status_string(status), detail);
    else
        fprintf(stderr, "neurosolve: %s: %s\n", what, ns_status_string(status));
    return 1;
}

void cli_note_unusable_gpu(void) {
    ns_build_info b;
    ns_get_build_info(&b);
    int usable = 0;
    if (!b.cuda || ns_cuda_device_count(&usable) != NS_OK) {
        ns_clear_error();
        return;
    }
    ns_device_info di;
    if (ns_cuda_device_info(usable, &di) != NS_OK) { /* no device beyond the usable ones */
        ns_clear_error();
        return;
    }
    fprintf(stderr,
            "neurosolve: note: GPU %d (%s, compute capability %d.%d) cannot run this build's CUDA code "
            "(built for %s)%s; rebuild with -DCMAKE_CUDA_ARCHITECTURES=%d%d (docs/install.md)\n",
            usable, di.name, di.major, di.minor, b.cuda_architectures,
            usable == 0 ? ": the auto backend runs on the CPU" : ": it is not used", di.major, di.minor);
}

void cli_solve_env(ns_solve_options *o) {
    const char *plan = getenv("NEUROSOLVE_MIXED_PLAN");
    if (plan) {
        o->plan_passes = (strstr(plan, "reroot") ? NS_PLAN_REROOT : 0) | (strstr(plan, "split") ? NS_PLAN_SPLIT : 0);
        if (o->plan_passes == 0) o->plan_passes = NS_PLAN_NONE;
    }
    const char *fine = getenv("NEUROSOLVE_FINE_SHARED");
    if (fine) o->fine_shared = strcmp(fine, "0") == 0 ? NS_FINE_SHARED_NEVER
                               : strcmp(fine, "ab") == 0 ? NS_FINE_SHARED_AB
                                                         : NS_FINE_SHARED_AUTO;
}

double cli_machine_loaded(int *cpus) {
    double load[1] = {0.0};
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus) *cpus = n > 0 ? (int)n : 1;
    if (n <= 0 || getloadavg(load, 1) != 1) return 0.0;
    return load[0] > (double)n ? load[0] : 0.0;
}

double cli_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cli_physical_memory(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : -1.0;
}

long long cli_failed_cell(const char *detail) {
    for (const char *p = detail ? strstr(detail, "cell ") : NULL; p; p = strstr(p + 1, "cell ")) {
        long long c;
        if ((p == detail || p[-1] == ' ') && sscanf(p, "cell %lld", &c) == 1 && c >= 0) return c;
    }
    return -1;
}

long long cli_failed_shape(const char *detail) {
    long long k;
    if (detail && strncmp(detail, "shape ", 6) == 0 && sscanf(detail, "shape %lld", &k) == 1 && k >= 0) return k;
    return -1;
}

/* Every number of an option goes through the library's one reader
 * (neurosolve/number.h): the grammar, ranges and messages of the files. */
int cli_parse_long(const char *command, const char *option, const char *text, long long min,
                   long long max, long long *value) {
    if (!text) {
        cli_usage_error(command, "%s needs a value", option);
        return 0;
    }
    int64_t v;
    if (ns_integer_parse(text, min, max, &v) != NS_OK) {
        cli_usage_error(command, "%s: %s", option, ns_last_error());
        return 0;
    }
    *value = v;
    return 1;
}

int cli_parse_double(const char *command, const char *option, const char *text, double min,
                     double max, double *value) {
    if (!text) {
        cli_usage_error(command, "%s needs a value", option);
        return 0;
    }
    if (ns_number_parse(text, min, max, value) != NS_OK) {
        cli_usage_error(command, "%s: %s", option, ns_last_error());
        return 0;
    }
    return 1;
}

int cli_parse_backend(const char *command, const char *option, const char *text, ns_backend *backend) {
    if (!text) return cli_usage_error(command, "%s needs a value: auto, cpu or cuda", option);
    if (ns_backend_from_name(text, backend) != NS_OK) {
        ns_clear_error();
        return cli_usage_error(command, "%s: '%s' is not a backend: auto, cpu or cuda (gpu is cuda)", option, text);
    }
    if (*backend != NS_BACKEND_CUDA) return 0;
    ns_build_info b;
    ns_get_build_info(&b);
    int usable = 0;
    const ns_status st = b.cuda ? ns_cuda_device_count(&usable) : NS_ERR_UNSUPPORTED;
    ns_clear_error();
    if (st == NS_OK && usable > 0) return 0;
    return cli_error("%s %s: no usable GPU: %s; the backends usable here are cpu and auto", option, text,
                     !b.cuda ? "this build has no CUDA backend (docs/install.md)"
                             : "none is visible, or none this build has code for (neurosolve info)");
}

int cli_parse_long_list(const char *command, const char *option, const char *text, long long min,
                        long long max, long long *values, int cap, int *count) {
    *count = 0;
    if (!text || !*text) {
        cli_usage_error(command, "%s needs a comma-separated list", option);
        return 0;
    }
    for (const char *p = text;;) {
        const size_t n = strcspn(p, ",");
        char item[64];
        if (*count >= cap) {
            cli_usage_error(command, "%s: at most %d values", option, cap);
            return 0;
        }
        if (n == 0) {
            cli_usage_error(command, "%s: an empty item in '%s'", option, text);
            return 0;
        }
        snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item ? n : sizeof item - 1), p);
        int64_t v;
        if (n >= sizeof item || ns_integer_parse(item, min, max, &v) != NS_OK) {
            cli_usage_error(command, "%s: %s", option, n >= sizeof item ? "an item of more than 63 characters" : ns_last_error());
            return 0;
        }
        values[(*count)++] = v;
        if (!p[n]) break;
        p += n + 1;
    }
    return 1;
}

int cli_parse_grid(const char *command, const char *option, const char *text, long long min, long long max,
                   int32_t grid[3]) {
    long long g[3];
    int n = 0;
    if (!cli_parse_long_list(command, option, text, min, max, g, 3, &n)) return 0;
    if (n != 3) {
        cli_usage_error(command, "%s takes X,Y,Z", option);
        return 0;
    }
    for (int k = 0; k < 3; ++k) grid[k] = (int32_t)g[k];
    return 1;
}

const char *cli_morphology_dir(void) {
    const char *env = getenv("NEUROSOLVE_DATA");
    if (env && *env) return env;
    return NS_SOURCE_DIR "/data/morphologies";
}

void *cli_append_zeroed(void *items, int *count, int *capacity, size_t size) {
    void *base;
    memcpy(&base, items, sizeof base);
    if (*count >= *capacity) {
        const int cap = *capacity ? 2 * *capacity : 64;
        void *grown = realloc(base, (size_t)cap * size);
        if (!grown) return NULL;
        base = grown;
        memcpy(items, &base, sizeof base);
        *capacity = cap;
    }
    char *item = (char *)base + (size_t)(*count)++ * size;
    memset(item, 0, size);
    return item;
}

double cli_batch_error(const ns_batch_t *batch, const double *x, const double *ref) {
    const int64_t *off = ns_batch_cell_offset(batch);
    double worst = 0.0;
    for (int64_t c = 0; c < ns_batch_cells(batch); ++c) {
        double num = 0.0, den = 0.0;
        for (int64_t i = off[c]; i < off[c + 1]; ++i) {
            const double e = fabs(x[i] - ref[i]);
            if (!(e <= num)) num = e;
            if (fabs(ref[i]) > den) den = fabs(ref[i]);
        }
        const double rel = num / (den > DBL_MIN ? den : DBL_MIN);
        if (!(rel <= worst)) worst = rel;
    }
    return worst;
}

int cli_split_list(char *text, const char **items, int cap) {
    int n = 0;
    for (char *tok = strtok(text, ","); tok && n < cap; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

static int compare_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double cli_median(double *values, int n) {
    if (n <= 0) return 0.0;
    qsort(values, (size_t)n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

int cli_make_dirs(const char *dir) {
    char buf[4096];
    const size_t n = strlen(dir);
    if (n == 0) return 0;
    if (n >= sizeof buf) return cli_error("%s: cannot create the folder: the path is too long", dir);
    memcpy(buf, dir, n + 1);
    /* each prefix ending before a '/', then the whole path, as mkdir -p */
    for (size_t k = 1; k <= n; ++k) {
        if (k < n && buf[k] != '/') continue;
        const char saved = buf[k];
        buf[k] = '\0';
        struct stat st;
        if (stat(buf, &st) != 0) {
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) /* EEXIST: another process made it */
                return cli_error("%s: cannot create the folder %s: %s", dir, buf, strerror(errno));
        } else if (!S_ISDIR(st.st_mode)) {
            return cli_error("%s: cannot create the folder: %s is not a folder", dir, buf);
        }
        buf[k] = saved;
    }
    return 0;
}

int cli_make_parent_dir(const char *path) {
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return cli_error("%s: the path is too long", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0; /* the current folder, or / */
    *slash = '\0';
    return cli_make_dirs(dir);
}

ns_output *cli_output_open(const char *path) {
    if (cli_make_parent_dir(path)) return NULL;
    ns_output *o = NULL;
    ns_status st = ns_output_open(path, &o);
    if (st != NS_OK) {
        cli_error("%s", ns_last_error());
        return NULL;
    }
    return o;
}

int cli_output_commit(ns_output *o) {
    ns_status st = ns_output_commit(o);
    return st == NS_OK ? 0 : cli_error("%s", ns_last_error());
}

/* Run argv[0] (searched in PATH) with argv, no shell in between (paths may
 * hold any character); its exit status as from waitpid, or -1. */
/* Run argv and wait; quiet: its output and errors to /dev/null (a probe). */
static int run_program(const char *const *argv, int quiet) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (quiet) {
            const int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0) dup2(devnull, STDOUT_FILENO), dup2(devnull, STDERR_FILENO);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return status;
}

FILE *cli_program_output(const char *const *argv, pid_t *pid) {
    int fd[2];
    if (pipe(fd) != 0) return NULL;
    fflush(NULL);
    *pid = fork();
    if (*pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return NULL;
    }
    if (*pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        const int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    if (!f) close(fd[0]);
    return f;
}

int cli_program_close(FILE *f, pid_t pid) {
    if (f) fclose(f);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int cli_plot_check(const char *png) {
    if (png && !cli_plot_available()) cli_plot_skipped(png);
    return 0;
}

int cli_plot_available(void) {
    static int known = -1;
    if (known < 0) {
        const char *probe[] = {"python3", "-c", "import matplotlib", NULL};
        const int have = run_program(probe, 1); /* no traceback when matplotlib is missing */
        known = have >= 0 && WIFEXITED(have) && WEXITSTATUS(have) == 0;
    }
    return known;
}

int cli_plot_skipped(const char *png) {
    static int warned = 0; /* once per run: before the work, not again at its end */
    if (warned++) return 0;
    fprintf(stderr, "neurosolve: warning: %s: plot skipped: python3 cannot import matplotlib "
                    "(pip install matplotlib); the other results are written\n", png);
    return 0;
}

int cli_plot(const char *script, const char *csv, const char *png, const char *const *extra) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", NS_SOURCE_DIR, script);
    struct stat st;
    if (stat(path, &st) != 0) return cli_error("plot script %s not found", path);
    if (!cli_plot_available()) return cli_plot_skipped(png);
    ns_output *o = cli_output_open(png); /* the script writes the temporary file */
    if (!o) return 1;
    const char *argv[16] = {"python3", path, csv, ns_output_temp_path(o)};
    int n = 4;
    for (int k = 0; extra && extra[k] && n < 15; ++k) argv[n++] = extra[k];
    argv[n] = NULL;
    int rc = run_program(argv, 0);
    if (rc != 0) {
        ns_output_abort(o);
        return cli_error("%s: not drawn: %s exited with status %d (its message is above)", png, script,
                         rc >= 0 && WIFEXITED(rc) ? WEXITSTATUS(rc) : rc);
    }
    return cli_output_commit(o);
}

/* The handlers stay until the command releases them, so that a signal during
 * the final writes lets them finish (no temporaries left); a second signal
 * ends the process at once (the default action, restored by the handler). */
static volatile sig_atomic_t interrupted = 0;
static void on_signal(int sig) {
    interrupted = sig;
    signal(sig, SIG_DFL); /* signal() is async-signal-safe */
}
static struct sigaction old_int, old_term;
static int catching = 0;

void cli_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    catching = 1;
}

int cli_interrupted(void) { return interrupted; }

void cli_release_signals(void) {
    if (!catching) return;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    catching = 0;
}

void cli_write_npy(FILE *f, const double *data, long long rows, int cols) {
    const long long dims[2] = {rows, cols};
    cli_write_npy_nd(f, data, 2, dims);
}

void cli_write_npy_nd(FILE *f, const double *data, int ndim, const long long *dims) {
    char shape[160] = "";
    long long count = 1;
    for (int k = 0, at = 0; k < ndim && k < 6; ++k) {
        at += snprintf(shape + at, sizeof shape - (size_t)at, "%lld, ", dims[k]);
        count *= dims[k];
    }
    char header[256];
    int n = snprintf(header, sizeof header, "{'descr': '<f8', 'fortran_order': False, 'shape': (%.*s), }",
                     ndim == 1 ? (int)strlen(shape) - 1 : (int)strlen(shape) - 2, shape);
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    unsigned short hlen = (unsigned short)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    unsigned char le[2] = {(unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    fwrite(le, 1, 2, f);
    fwrite(header, 1, (size_t)n, f);
    for (int i = 0; i < pad; ++i) fputc(' ', f);
    fputc('\n', f);
    /* little-endian doubles (the hosts we build for are little-endian) */
    fwrite(data, sizeof(double), (size_t)count, f);
}

int cli_read_text(const char *path, const char *what, const char *kind, char **text, size_t *length) {
    enum { MAX_BYTES = 16 << 20 };
    *text = NULL;
    *length = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return cli_error("%s: %s: %s: cannot open: %s", what, ns_status_string(NS_ERR_IO), path, strerror(errno));
    size_t cap = 1 << 14, len = 0;
    char *buf = malloc(cap + 1);
    for (size_t got = 1; buf && got > 0;) {
        if (len == cap) {
            char *grown = cap < MAX_BYTES ? realloc(buf, cap * 2 + 1) : NULL;
            if (!grown) break;
            buf = grown;
            cap *= 2;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    }
    const int bad = ferror(f);
    fclose(f);
    int rc = 0;
    if (!buf) rc = cli_error("%s: %s: out of memory", what, path);
    else if (len == cap)
        rc = cli_error("%s: %s: %s: %s over %d MiB", what, ns_status_string(NS_ERR_SIZE), path, kind, MAX_BYTES >> 20);
    else if (bad) rc = cli_error("%s: %s: %s: read error", what, ns_status_string(NS_ERR_IO), path);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    *text = buf;
    *length = len;
    return 0;
}
