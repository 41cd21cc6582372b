/* neurosolve bench tridiag: the journal paper's tridiagonal experiments
 * (Figs. 9-13) against cuSPARSE, in one run.
 *   grid a   n in {64,128,256,512} x batch {256, 2560, 25600, 256000}
 *   grid b   n in {1024,2048,4096,8192} x batch {20, 200, 2000, 20000}
 *   vbatch   sizes drawn from [256, 512]: VBatch CP against NCP, and the
 *            fixed-size thomas-batch at 256 and 512 (Fig. 13)
 * For each point and precision: every method's median kernel time, speedup
 * over the faster cuSPARSE routine and over the sequential CPU solve,
 * effective bandwidth at the byte floor (40 bytes per unknown in double, 20
 * in single) and its ratio to the device-to-device copy bandwidth measured
 * at the start of the run, max relative error against a long double CPU
 * solve (normwise per system), device memory incl. workspace.
 * With --calls, GPU rows also time the host-array call and the device call
 * (ns_tridiag_solver_solve_device on arrays and a stream of this program)
 * against the kernel, same run. Built on the public API (and, for --calls,
 * the CUDA runtime for the program's own device arrays and stream). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#ifdef NS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define MAX_LIST 16

static void help(void) {
    printf("usage: neurosolve bench tridiag [options]\n"
           "  --grid a|b|vbatch|all    experiments (default all)\n"
           "  --precision double|single|both   (default both)\n"
           "  --backend all|cpu|cuda   rows to run (default all: CPU and, with a GPU, CUDA)\n"
           "  --methods M,...          methods (default: every one of the backend; see docs/tridiag.md)\n"
           "  --n N,... --batch B,...  replace the grid's sizes (with one --grid a or b)\n"
           "  --quick                  a small grid: n {64,512} x {256,25600}, {1024,8192} x {20,2000}\n"
           "  --repeats N              timed GPU runs per row after a warm-up, median (default 10)\n"
           "  --cpu-repeats N          timed CPU runs per row (default 5)\n"
           "  --seed S                 random seed (default 1)\n"
           "  --csv FILE               write every row\n"
           "  --plot FILE.png          draw Figs. 9-13 from the CSV (needs --csv and matplotlib)\n"
           "  --calls                  GPU rows also time the host-array call and the device call\n"
           "                           (caller's arrays and stream) against the kernel, same run\n"
           "  --json                   one JSON document on stdout instead of the table\n");
}

/* ----------------------------------------------------------------- rows */

typedef struct row {
    const char *precision, *grid;
    int32_t n;          /* largest size */
    char sizes[24];     /* "512" or "256-512" */
    long long batch;
    long long unknowns;
    const char *method;
    int repeats;
    double ms, min_ms, speedup_cusparse, speedup_seq, gbs, ratio, error;
    double device_bytes, workspace_bytes;
    /* --calls: median host-array call [ms, wall], device call [ms, CUDA
     * events around the queued call: the GPU time it adds], device call
     * plus wait [ms, wall], and the device call's max relative error */
    double host_ms, dcall_ms, dcall_wall_ms, dcall_error;
    char status[96];
} row;

typedef CLI_ARRAY(row) rows;

static row *add_row(rows *r) {
    row *x = CLI_APPEND(r);
    if (!x) return NULL;
    x->ms = x->min_ms = x->speedup_cusparse = x->speedup_seq = x->gbs = x->ratio = x->error = NAN;
    x->host_ms = x->dcall_ms = x->dcall_wall_ms = x->dcall_error = NAN;
    return x;
}

/* ----------------------------------------------------------- the inputs */

/* One grid point's systems, packed Flat (system s at start[s]) in the
 * point's precision, and the long double reference solution. */
typedef struct point {
    int f32;
    int64_t batch;
    int variable;
    int32_t *size;
    int64_t *start;
    int32_t nmax;
    int64_t total;
    void *flat[4];       /* dl, d, du, rhs */
    void *inter[4];      /* padded Interleaved (nmax x batch), built on demand */
    long double *ref;
} point;

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi) from a counter: the values do not depend on threads. */
static double uniform(uint64_t seed, uint64_t counter, double lo, double hi) {
    return lo + (hi - lo) * (double)(mix64(seed ^ mix64(counter)) >> 11) * (1.0 / 9007199254740992.0);
}

static void point_free(point *p) {
    for (int a = 0; a < 4; ++a) {
        free(p->flat[a]);
        free(p->inter[a]);
    }
    free(p->size);
    free(p->start);
    free(p->ref);
    memset(p, 0, sizeof *p);
}

static double value_at(const point *p, const void *arr, int64_t i) {
    return p->f32 ? (double)((const float *)arr)[i] : ((const double *)arr)[i];
}

/* Random strictly diagonally dominant systems (|d| >= |dl| + |du| + 0.5)
 * and their solution by Thomas in long double. Returns 0 when out of memory. */
static int point_make(point *p, int f32, int64_t batch, int32_t n_fixed, int32_t lo, int32_t hi,
                      uint64_t seed) {
    memset(p, 0, sizeof *p);
    p->f32 = f32;
    p->batch = batch;
    p->variable = n_fixed <= 0;
    p->size = malloc((size_t)batch * sizeof *p->size);
    p->start = malloc((size_t)(batch + 1) * sizeof *p->start);
    if (!p->size || !p->start) return 0;
    p->start[0] = 0;
    for (int64_t s = 0; s < batch; ++s) {
        int32_t n = n_fixed > 0 ? n_fixed
                                : lo + (int32_t)(mix64(seed * 31 + (uint64_t)s) % (uint64_t)(hi - lo + 1));
        p->size[s] = n;
        if (n > p->nmax) p->nmax = n;
        p->start[s + 1] = p->start[s] + n;
    }
    p->total = p->start[batch];
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    for (int a = 0; a < 4; ++a)
        if (!(p->flat[a] = malloc((size_t)p->total * es))) return 0;
    if (!(p->ref = malloc((size_t)p->total * sizeof *p->ref))) return 0;
    long long failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : failed)
#endif
    for (int64_t s = 0; s < batch; ++s) {
        const int32_t n = p->size[s];
        const int64_t o = p->start[s];
        for (int32_t k = 0; k < n; ++k) {
            const uint64_t c = 4 * (uint64_t)(o + k);
            double a = k > 0 ? uniform(seed, c, -1.0, 1.0) : 0.0;
            double u = k + 1 < n ? uniform(seed, c + 1, -1.0, 1.0) : 0.0;
            double b = fabs(a) + fabs(u) + uniform(seed, c + 2, 0.5, 1.5);
            if (uniform(seed, c + 3, 0.0, 1.0) < 0.5) b = -b;
            double r = uniform(seed ^ 0x5bd1e995u, c, -1.0, 1.0);
            const double v[4] = {a, b, u, r};
            for (int j = 0; j < 4; ++j) {
                if (f32) ((float *)p->flat[j])[o + k] = (float)v[j];
                else ((double *)p->flat[j])[o + k] = v[j];
            }
        }
        /* Reference: Thomas in long double on the values as stored. */
        long double *cps = malloc((size_t)n * sizeof *cps);
        if (!cps) {
            ++failed;
            continue;
        }
        long double *x = p->ref + o;
        long double cp = 0.0L, xp = 0.0L;
        for (int32_t k = 0; k < n; ++k) {
            const long double a = k > 0 ? (long double)value_at(p, p->flat[0], o + k) : 0.0L;
            const long double b = (long double)value_at(p, p->flat[1], o + k);
            const long double u = k + 1 < n ? (long double)value_at(p, p->flat[2], o + k) : 0.0L;
            const long double piv = b - a * cp;
            if (piv == 0.0L) ++failed;
            cp = u / piv;
            xp = ((long double)value_at(p, p->flat[3], o + k) - a * xp) / piv;
            cps[k] = cp;
            x[k] = xp;
        }
        for (int32_t k = n - 2; k >= 0; --k) x[k] -= cps[k] * x[k + 1];
        free(cps);
    }
    return failed == 0;
}

/* Padded Interleaved copies (k * batch + s, k < nmax; padding zero). */
static int point_interleave(point *p) {
    if (p->inter[0]) return 1;
    const size_t es = p->f32 ? sizeof(float) : sizeof(double);
    const size_t len = (size_t)p->nmax * (size_t)p->batch;
    for (int a = 0; a < 4; ++a)
        if (!(p->inter[a] = calloc(len, es))) return 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < p->batch; ++s)
        for (int32_t k = 0; k < p->size[s]; ++k) {
            const size_t dst = (size_t)k * (size_t)p->batch + (size_t)s;
            const size_t src = (size_t)(p->start[s] + k);
            for (int a = 0; a < 4; ++a)
                memcpy((char *)p->inter[a] + dst * es, (const char *)p->flat[a] + src * es, es);
        }
    return 1;
}

/* max over systems of |x - ref|_inf / |ref|_inf. */
static double point_error(const point *p, int interleaved, const void *x) {
    double worst = 0.0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(max : worst)
#endif
    for (int64_t s = 0; s < p->batch; ++s) {
        long double diff = 0.0L, norm = 0.0L;
        for (int32_t k = 0; k < p->size[s]; ++k) {
            const int64_t i = interleaved ? (int64_t)k * p->batch + s : p->start[s] + k;
            const long double r = p->ref[p->start[s] + k];
            const long double e = fabsl((long double)value_at(p, x, i) - r);
            if (!(e <= diff)) diff = e;
            if (fabsl(r) > norm) norm = fabsl(r);
        }
        double rel = (double)(diff / (norm > 0.0L ? norm : 1.0L));
        if (isnan(rel)) rel = INFINITY;
        if (rel > worst) worst = rel;
    }
    return worst;
}

/* -------------------------------------------------------------- options */

typedef struct opts {
    int grid_a, grid_b, grid_v;
    int prec_double, prec_single;
    int cpu, cuda;
    int repeats, cpu_repeats;
    uint64_t seed;
    int n_methods;
    ns_tridiag_method methods[NS_TRIDIAG_METHOD_COUNT];
    long long ns[MAX_LIST], batches[MAX_LIST];
    int n_ns, n_batches;
    int quick;
    int json;            /* 1: no table on stdout (the JSON document goes there) */
    int calls;           /* --calls */
    double copy_gbs;
} opts;

static int method_wanted(const opts *o, ns_tridiag_method m) {
    const ns_backend b = ns_tridiag_method_backend(m);
    if ((b == NS_BACKEND_CPU && !o->cpu) || (b == NS_BACKEND_CUDA && !o->cuda)) return 0;
    if (!o->n_methods) return 1;
    for (int i = 0; i < o->n_methods; ++i)
        if (o->methods[i] == m) return 1;
    return 0;
}

/* ------------------------------------------------------------- measuring */

static int is_cusparse(ns_tridiag_method m) {
    return m == NS_TRIDIAG_CUSPARSE_STRIDED || m == NS_TRIDIAG_CUSPARSE_INTERLEAVED;
}

/* --calls: the host-array call and the device call of the same solver, `reps`
 * times each after a warm-up. The device call runs on arrays and a stream
 * of this program; before each run the inputs are restored and L2 is
 * flushed (as the kernel timing does), and events bracket the queued call,
 * so its time is what the call adds to the stream. A second loop times the
 * call plus ns_tridiag_solver_wait on an idle stream (wall clock). Returns 0
 * on success; r->status names a failure. */
static int measure_calls(const point *p, ns_tridiag_solver_t *solver, void *const *in, size_t len, size_t es,
                         int interleaved, int reps, row *r) {
#ifdef NS_HAVE_CUDA
    const size_t bytes = len * es;
    double *t = malloc(3 * (size_t)reps * sizeof *t);
    void *x = malloc(bytes);
    void *dv[4] = {NULL, NULL, NULL, NULL}, *pv[4] = {NULL, NULL, NULL, NULL}, *flush = NULL;
    cudaStream_t q = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    int ok = t && x, dev = 0, l2 = 0;
    ns_status st = NS_OK;
    /* host-array call */
    for (int k = -1; k < reps && ok; ++k) {
        memcpy(x, in[3], bytes);
        const double t0 = 1e3 * cli_now_s();
        st = p->f32 ? ns_tridiag_solver_solve_f32(solver, in[0], in[1], in[2], x)
                    : ns_tridiag_solver_solve(solver, in[0], in[1], in[2], x);
        if (k >= 0) t[k] = 1e3 * cli_now_s() - t0;
        ok = st == NS_OK;
    }
    ok = ok && cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) == cudaSuccess;
    ok = ok && cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess &&
         cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess &&
         cudaMalloc(&flush, 2 * (size_t)l2 + 1) == cudaSuccess;
    for (int a = 0; a < 4 && ok; ++a)
        ok = cudaMalloc(&dv[a], bytes) == cudaSuccess && cudaMalloc(&pv[a], bytes) == cudaSuccess &&
             cudaMemcpy(pv[a], in[a], bytes, cudaMemcpyHostToDevice) == cudaSuccess;
    /* device call: GPU time it adds (events), then call + wait (wall) */
    for (int pass = 0; pass < 2 && ok; ++pass)
        for (int k = -1; k < reps && ok; ++k) {
            for (int a = 0; a < 4 && ok; ++a)
                ok = cudaMemcpyAsync(dv[a], pv[a], bytes, cudaMemcpyDeviceToDevice, q) == cudaSuccess;
            ok = ok && cudaMemsetAsync(flush, k & 0xff, 2 * (size_t)l2, q) == cudaSuccess;
            if (!ok) break;
            if (pass == 0) {
                ok = cudaEventRecord(e0, q) == cudaSuccess;
                st = ok ? ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], q) : NS_OK;
                ok = ok && st == NS_OK && cudaEventRecord(e1, q) == cudaSuccess;
                st = ok ? ns_tridiag_solver_wait(solver) : st;
                float ms = 0.0f;
                ok = ok && st == NS_OK && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
                if (k >= 0) t[reps + k] = (double)ms;
            } else {
                ok = cudaStreamSynchronize(q) == cudaSuccess;
                const double t0 = 1e3 * cli_now_s();
                st = ok ? ns_tridiag_solver_solve_device(solver, dv[0], dv[1], dv[2], dv[3], q) : NS_OK;
                if (ok && st == NS_OK) st = ns_tridiag_solver_wait(solver);
                if (k >= 0) t[2 * reps + k] = 1e3 * cli_now_s() - t0;
                ok = ok && st == NS_OK;
            }
        }
    ok = ok && cudaMemcpy(x, dv[3], bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
    if (ok) {
        r->host_ms = cli_median(t, reps);
        r->dcall_ms = cli_median(t + reps, reps);
        r->dcall_wall_ms = cli_median(t + 2 * reps, reps);
        r->dcall_error = point_error(p, interleaved, x);
    } else {
        snprintf(r->status, sizeof r->status, "calls: %s", st != NS_OK ? ns_status_string(st) : "CUDA runtime error");
        if (st != NS_OK) cli_status_error(r->method, st);
    }
    for (int a = 0; a < 4; ++a) cudaFree(dv[a]), cudaFree(pv[a]);
    cudaFree(flush);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (q) cudaStreamDestroy(q);
    free(t), free(x);
    return ok ? 0 : 1;
#else
    (void)p, (void)solver, (void)in, (void)len, (void)es, (void)interleaved, (void)reps;
    snprintf(r->status, sizeof r->status, "calls: built without CUDA");
    return 1;
#endif
}

static void run_method(const opts *o, point *p, ns_tridiag_method m, row *r) {
    r->method = ns_tridiag_method_name(m);
    const int interleaved = ns_tridiag_method_layout(m) == NS_TRIDIAG_INTERLEAVED;
    ns_tridiag_options so;
    ns_tridiag_options_init(&so);
    so.method = m;
    so.layout = interleaved ? NS_TRIDIAG_INTERLEAVED : NS_TRIDIAG_FLAT;
    so.precision = p->f32 ? NS_TRIDIAG_FLOAT32 : NS_TRIDIAG_FLOAT64;
    ns_tridiag_solver_t *solver = NULL;
    ns_status st = p->variable ? ns_tridiag_solver_create_variable(p->batch, p->size, NULL, &so, &solver)
                               : ns_tridiag_solver_create(p->nmax, p->batch, &so, &solver);
    if (st != NS_OK) {
        snprintf(r->status, sizeof r->status, "%s", st == NS_ERR_UNSUPPORTED ? "n/a" : ns_status_string(st));
        if (st != NS_ERR_UNSUPPORTED) cli_status_error(r->method, st);
        return;
    }
    if (interleaved && !point_interleave(p)) {
        snprintf(r->status, sizeof r->status, "host out of memory");
        ns_tridiag_solver_destroy(solver);
        return;
    }
    void *const *in = interleaved ? p->inter : p->flat;
    const size_t es = p->f32 ? sizeof(float) : sizeof(double);
    const size_t len = (size_t)ns_tridiag_solver_length(solver);
    void *x = malloc(len * es);
    const int reps = ns_tridiag_method_backend(m) == NS_BACKEND_CPU ? o->cpu_repeats : o->repeats;
    double *ms = malloc((size_t)reps * sizeof *ms);
    if (!x || !ms) {
        snprintf(r->status, sizeof r->status, "host out of memory");
    } else {
        memcpy(x, in[3], len * es);
        st = ns_tridiag_solver_benchmark(solver, in[0], in[1], in[2], x, reps, ms);
        if (st == NS_OK) {
            r->repeats = reps;
            r->min_ms = ms[0];
            for (int i = 1; i < reps; ++i)
                if (ms[i] < r->min_ms) r->min_ms = ms[i];
            r->ms = cli_median(ms, reps);
            r->error = point_error(p, interleaved, x);
            r->device_bytes = (double)ns_tridiag_solver_device_bytes(solver);
            r->workspace_bytes = (double)ns_tridiag_solver_workspace_bytes(solver);
            snprintf(r->status, sizeof r->status, "ok");
            if (o->calls && ns_tridiag_method_backend(m) == NS_BACKEND_CUDA)
                (void)measure_calls(p, solver, in, len, es, interleaved, reps, r);
        } else {
            snprintf(r->status, sizeof r->status, "%s", ns_status_string(st));
            cli_status_error(r->method, st);
        }
    }
    free(x);
    free(ms);
    ns_tridiag_solver_destroy(solver);
}

static void print_header(const opts *o) {
    printf("%-6s %-6s %10s %8s %-20s %10s %8s %8s %9s %7s %10s %9s %9s", "prec", "grid", "sizes", "batch",
           "method", "ms", "x_cusp", "x_seq", "GB/s", "eff/cp", "max_rel_err", "dev_MB", "work_MB");
    if (o->calls) printf(" %10s %10s %8s %10s %10s", "host_ms", "dcall_ms", "dc/kern", "dcall+wait", "dcall_err");
    printf("\n");
}

static void print_row(const opts *o, const row *r) {
    if (strcmp(r->status, "ok") != 0) {
        printf("%-6s %-6s %10s %8lld %-20s %s\n", r->precision, r->grid, r->sizes, r->batch, r->method, r->status);
        return;
    }
    printf("%-6s %-6s %10s %8lld %-20s %10.4f %8.2f %8.1f %9.1f %7.3f %10.2e %9.1f %9.1f", r->precision, r->grid,
           r->sizes, r->batch, r->method, r->ms, r->speedup_cusparse, r->speedup_seq, r->gbs, r->ratio, r->error,
           r->device_bytes / 1e6, r->workspace_bytes / 1e6);
    if (o->calls && !isnan(r->dcall_ms))
        printf(" %10.4f %10.4f %8.4f %10.4f %10.2e", r->host_ms, r->dcall_ms, r->dcall_ms / r->ms, r->dcall_wall_ms,
               r->dcall_error);
    printf("\n");
    fflush(stdout);
}

/* Fill the ratio columns of rows [first, r->n) of one point. */
static void finish_point(const opts *o, rows *r, int first, int f32) {
    double best_cusparse = INFINITY, seq = NAN;
    for (int i = first; i < r->n; ++i) {
        const row *x = &r->v[i];
        if (strcmp(x->status, "ok") != 0) continue;
        ns_tridiag_method m;
        if (ns_tridiag_method_from_name(x->method, &m) != NS_OK) continue;
        if (is_cusparse(m) && x->ms < best_cusparse) best_cusparse = x->ms;
        if (m == NS_TRIDIAG_SEQUENTIAL) seq = x->ms;
    }
    const double floor_bytes = f32 ? 20.0 : 40.0; /* read dl, d, du, rhs; write x [bytes/unknown] */
    for (int i = first; i < r->n; ++i) {
        row *x = &r->v[i];
        if (strcmp(x->status, "ok") != 0) continue;
        x->speedup_cusparse = isfinite(best_cusparse) ? best_cusparse / x->ms : NAN;
        x->speedup_seq = seq / x->ms;
        x->gbs = floor_bytes * (double)x->unknowns / (x->ms * 1e-3) / 1e9;
        ns_tridiag_method m;
        const int gpu = ns_tridiag_method_from_name(x->method, &m) == NS_OK &&
                        ns_tridiag_method_backend(m) == NS_BACKEND_CUDA;
        x->ratio = gpu && o->copy_gbs > 0.0 ? x->gbs / o->copy_gbs : NAN;
    }
}

/* One grid point: generate, run every wanted method, print. */
static int run_point(const opts *o, rows *r, int f32, const char *grid, int64_t batch, int32_t n, int32_t lo,
                     int32_t hi, const ns_tridiag_method *only, int n_only) {
    point p;
    const uint64_t seed = o->seed * 1000003ULL + (uint64_t)batch * 7919ULL + (uint64_t)(n > 0 ? n : lo * 131 + hi);
    if (!point_make(&p, f32, batch, n, lo, hi, seed)) {
        point_free(&p);
        return cli_error("bench tridiag: no host memory (or a singular reference) for n = %d, batch = %lld",
                         n > 0 ? n : hi, (long long)batch);
    }
    const int first = r->n;
    for (int mi = 0; mi < NS_TRIDIAG_METHOD_COUNT; ++mi) {
        const ns_tridiag_method m = (ns_tridiag_method)mi;
        if (m == NS_TRIDIAG_AUTO || !method_wanted(o, m)) continue;
        if (p.variable && !ns_tridiag_method_variable(m)) continue;
        /* VBatch on fixed sizes is thomas-batch with a size array: only on request. */
        if (!p.variable && !o->n_methods && (m == NS_TRIDIAG_VBATCH_CP || m == NS_TRIDIAG_VBATCH_NCP)) continue;
        if (only) {
            int found = 0;
            for (int k = 0; k < n_only; ++k) found |= only[k] == m;
            if (!found) continue;
        }
        row *x = add_row(r);
        if (!x) {
            point_free(&p);
            return cli_error("bench tridiag: out of memory for rows");
        }
        x->precision = f32 ? "single" : "double";
        x->grid = grid;
        x->n = p.nmax;
        x->batch = (long long)batch;
        x->unknowns = (long long)p.total;
        if (n > 0) snprintf(x->sizes, sizeof x->sizes, "%d", n);
        else snprintf(x->sizes, sizeof x->sizes, "%d-%d", lo, hi);
        run_method(o, &p, m, x);
    }
    finish_point(o, r, first, f32);
    if (!o->json)
        for (int i = first; i < r->n; ++i) print_row(o, &r->v[i]);
    point_free(&p);
    return 0;
}

/* ----------------------------------------------------------------- output */

static int write_csv(const char *path, const rows *r) {
    ns_output *o = cli_output_open(path);
    FILE *f = ns_output_stream(o);
    if (!f) return 1;
    fprintf(f, "precision,grid,n,sizes,batch,unknowns,method,repeats,median_ms,min_ms,speedup_vs_cusparse,"
               "speedup_vs_sequential,eff_gbs,eff_over_copy,max_rel_err,device_bytes,workspace_bytes,host_call_ms,"
               "device_call_ms,device_call_wait_ms,device_call_err,status\n");
    for (int i = 0; i < r->n; ++i) {
        const row *x = &r->v[i];
        fprintf(f, "%s,%s,%d,%s,%lld,%lld,%s,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.0f,%.0f,%.6g,%.6g,%.6g,%.6g,%s\n",
                x->precision,
                x->grid, x->n, x->sizes, x->batch, x->unknowns, x->method, x->repeats, x->ms, x->min_ms,
                x->speedup_cusparse, x->speedup_seq, x->gbs, x->ratio, x->error, x->device_bytes,
                x->workspace_bytes, x->host_ms, x->dcall_ms, x->dcall_wall_ms, x->dcall_error, x->status);
    }
    return cli_output_commit(o);
}

static void write_json(const opts *o, const rows *r, const char *device) {
    cli_json j;
    json_begin(&j, stdout);
    json_string(&j, "benchmark", "tridiag");
    json_string(&j, "device", device);
    json_double(&j, "copy_bandwidth_gbs", o->copy_gbs);
    json_int(&j, "repeats", o->repeats);
    json_int(&j, "cpu_repeats", o->cpu_repeats);
    json_array_begin(&j, "rows");
    for (int i = 0; i < r->n; ++i) {
        const row *x = &r->v[i];
        json_object_begin(&j, NULL);
        json_string(&j, "precision", x->precision);
        json_string(&j, "grid", x->grid);
        json_int(&j, "n", x->n);
        json_string(&j, "sizes", x->sizes);
        json_int(&j, "batch", x->batch);
        json_string(&j, "method", x->method);
        json_string(&j, "status", x->status);
        json_double(&j, "median_ms", x->ms);
        json_double(&j, "min_ms", x->min_ms);
        json_double(&j, "speedup_vs_cusparse", x->speedup_cusparse);
        json_double(&j, "speedup_vs_sequential", x->speedup_seq);
        json_double(&j, "eff_gbs", x->gbs);
        json_double(&j, "eff_over_copy", x->ratio);
        json_double(&j, "max_rel_err", x->error);
        json_double(&j, "device_bytes", x->device_bytes);
        json_double(&j, "workspace_bytes", x->workspace_bytes);
        json_double(&j, "host_call_ms", x->host_ms);
        json_double(&j, "device_call_ms", x->dcall_ms);
        json_double(&j, "device_call_wait_ms", x->dcall_wall_ms);
        json_double(&j, "device_call_err", x->dcall_error);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

/* ------------------------------------------------------------------- main */

/* The command line into o, csv and plot; -1 to go on, else the exit status (printed; 0 after --help). */
static int parse_options(int argc, char **argv, opts *o, const char **csv, const char **plot) {
    const char *cmd = "bench tridiag";
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long num = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help();
            return 0;
        } else if (strcmp(a, "--grid") == 0 && v) {
            ++i;
            o->grid_a = strcmp(v, "a") == 0 || strcmp(v, "all") == 0;
            o->grid_b = strcmp(v, "b") == 0 || strcmp(v, "all") == 0;
            o->grid_v = strcmp(v, "vbatch") == 0 || strcmp(v, "all") == 0;
            if (!o->grid_a && !o->grid_b && !o->grid_v) return cli_usage_error(cmd, "--grid: a, b, vbatch or all");
        } else if (strcmp(a, "--precision") == 0 && v) {
            ++i;
            o->prec_double = strcmp(v, "double") == 0 || strcmp(v, "both") == 0;
            o->prec_single = strcmp(v, "single") == 0 || strcmp(v, "both") == 0;
            if (!o->prec_double && !o->prec_single) return cli_usage_error(cmd, "--precision: double, single or both");
        } else if (strcmp(a, "--backend") == 0 && v) {
            ++i;
            o->cpu = strcmp(v, "cpu") == 0 || strcmp(v, "all") == 0;
            o->cuda = strcmp(v, "cuda") == 0 || strcmp(v, "all") == 0;
            if (!o->cpu && !o->cuda) return cli_usage_error(cmd, "--backend: all, cpu or cuda");
        } else if (strcmp(a, "--methods") == 0 && v) {
            ++i;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                ns_tridiag_method m;
                if (ns_tridiag_method_from_name(tok, &m) != NS_OK || m == NS_TRIDIAG_AUTO)
                    return cli_usage_error(cmd, "--methods: unknown method '%s'", tok);
                if (o->n_methods < NS_TRIDIAG_METHOD_COUNT) o->methods[o->n_methods++] = m;
            }
        } else if (strcmp(a, "--n") == 0 && v) {
            ++i;
            if (!cli_parse_long_list(cmd, a, v, 1, 1 << 20, o->ns, MAX_LIST, &o->n_ns)) return 2;
        } else if (strcmp(a, "--batch") == 0 && v) {
            ++i;
            if (!cli_parse_long_list(cmd, a, v, 1, 1LL << 30, o->batches, MAX_LIST, &o->n_batches)) return 2;
        } else if (strcmp(a, "--quick") == 0) {
            o->quick = 1;
        } else if (strcmp(a, "--repeats") == 0 && v) {
            ++i;
            if (!cli_parse_long(cmd, a, v, 1, 1000, &num)) return 2;
            o->repeats = (int)num;
        } else if (strcmp(a, "--cpu-repeats") == 0 && v) {
            ++i;
            if (!cli_parse_long(cmd, a, v, 1, 1000, &num)) return 2;
            o->cpu_repeats = (int)num;
        } else if (strcmp(a, "--seed") == 0 && v) {
            ++i;
            if (!cli_parse_long(cmd, a, v, 0, (1LL << 62), &num)) return 2;
            o->seed = (uint64_t)num;
        } else if (strcmp(a, "--csv") == 0 && v) {
            *csv = v, ++i;
        } else if (strcmp(a, "--plot") == 0 && v) {
            *plot = v, ++i;
        } else if (strcmp(a, "--calls") == 0) {
            o->calls = 1;
        } else if (strcmp(a, "--json") == 0) {
            o->json = 1;
        } else {
            return cli_usage_error(cmd, "unknown option or missing value: %s", a);
        }
    }
    return -1;
}

/* The device and the ceiling, measured first (BENCHMARKING.md rule 3), into
 * o and device (size bytes); the table's header. */
static void measure_device(opts *o, char *device, size_t size) {
    int gpus = 0;
    ns_status dc = ns_cuda_device_count(&gpus);
    if (o->cuda && (dc != NS_OK || gpus <= 0)) {
        fprintf(o->json ? stderr : stdout, "# note: %s: GPU rows skipped, CPU rows only\n",
                dc == NS_ERR_UNSUPPORTED ? "neurosolve was built without CUDA" : "no usable GPU");
        o->cuda = 0;
    }
    o->copy_gbs = NAN;
    if (o->cuda) {
        ns_device_info info;
        if (ns_cuda_device_info(0, &info) == NS_OK)
            snprintf(device, size, "%s (sm_%d%d, %.0f GiB)", info.name, info.major, info.minor,
                     info.global_memory_gib);
        double gbs = 0.0;
        ns_status bs = ns_cuda_copy_bandwidth(0, (size_t)1 << 30, 10, &gbs);
        if (bs == NS_OK) o->copy_gbs = gbs;
        else cli_status_error("copy bandwidth (eff/cp left blank)", bs);
    }
    if (!o->json) {
        time_t now = time(NULL);
        char date[64];
        strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
        printf("# neurosolve bench tridiag, %s, device: %s, copy bandwidth %.0f GB/s\n", date, device, o->copy_gbs);
        printf("# median of %d GPU runs (CUDA events, kernel only, inputs restored and L2 flushed before each) "
               "and %d CPU runs after a warm-up; error: max over systems of |x - x_ld|/|x_ld| (inf norms)\n",
               o->repeats, o->cpu_repeats);
        printf("# x_cusp: speedup over the faster cuSPARSE routine; x_seq: over the sequential CPU solve; "
               "GB/s at %s bytes per unknown\n",
               o->prec_double && o->prec_single ? "40 (double) / 20 (single)" : o->prec_double ? "40" : "20");
        print_header(o);
    }
}

/* The rows of the grids asked for (Fig. 13's variable batch too); 0 or the exit status (printed). */
static int run_grids(opts *o, rows *r) {
    static const long long a_n[] = {64, 128, 256, 512}, a_b[] = {256, 2560, 25600, 256000};
    static const long long b_n[] = {1024, 2048, 4096, 8192}, b_b[] = {20, 200, 2000, 20000};
    static const long long qa_n[] = {64, 512}, qa_b[] = {256, 25600};
    static const long long qb_n[] = {1024, 8192}, qb_b[] = {20, 2000};
    static const long long v_b[] = {256, 2560, 25600, 256000}, qv_b[] = {256, 25600};
    int rc = 0;
    for (int f32 = 0; f32 < 2 && !rc; ++f32) {
        if ((f32 && !o->prec_single) || (!f32 && !o->prec_double)) continue;
        for (int g = 0; g < 2 && !rc; ++g) {
            if ((g == 0 && !o->grid_a) || (g == 1 && !o->grid_b)) continue;
            const long long *ns = g ? (o->quick ? qb_n : b_n) : (o->quick ? qa_n : a_n);
            const long long *bs = g ? (o->quick ? qb_b : b_b) : (o->quick ? qa_b : a_b);
            int nn = o->quick ? 2 : 4, nb = o->quick ? 2 : 4;
            if (o->n_ns) ns = o->ns, nn = o->n_ns;
            if (o->n_batches) bs = o->batches, nb = o->n_batches;
            for (int i = 0; i < nn && !rc; ++i)
                for (int j = 0; j < nb && !rc; ++j)
                    rc = run_point(o, r, f32, g ? "b" : "a", bs[j], (int32_t)ns[i], 0, 0, NULL, 0);
        }
        /* Fig. 13 is in double; the single-precision run repeats it for completeness. */
        if (o->grid_v) {
            const long long *vb = o->quick ? qv_b : v_b;
            const int nv = o->quick ? 2 : 4;
            static const ns_tridiag_method fixed[] = {NS_TRIDIAG_THOMAS_BATCH};
            for (int j = 0; j < nv && !rc; ++j) {
                rc = run_point(o, r, f32, "vbatch", vb[j], 0, 256, 512, NULL, 0);
                if (!rc) rc = run_point(o, r, f32, "vbatch", vb[j], 256, 0, 0, fixed, 1);
                if (!rc) rc = run_point(o, r, f32, "vbatch", vb[j], 512, 0, 0, fixed, 1);
            }
        }
    }
    return rc;
}

int bench_tridiag(int argc, char **argv) {
    const char *cmd = "bench tridiag";
    opts o;
    memset(&o, 0, sizeof o);
    o.grid_a = o.grid_b = o.grid_v = 1;
    o.prec_double = o.prec_single = 1;
    o.cpu = o.cuda = 1;
    o.repeats = 10;
    o.cpu_repeats = 5;
    o.seed = 1;
    const char *csv = NULL, *plot = NULL;
    int rc = parse_options(argc, argv, &o, &csv, &plot);
    if (rc >= 0) return rc;
    if (plot && !csv) return cli_usage_error(cmd, "--plot needs --csv FILE");
    cli_plot_check(plot);
    if ((o.n_ns || o.n_batches) && o.grid_a + o.grid_b != 1)
        return cli_usage_error(cmd, "--n/--batch replace the sizes of one grid: add --grid a or --grid b");
    char device[300] = "cpu only";
    measure_device(&o, device, sizeof device);
    rows r = {NULL, 0, 0};
    rc = run_grids(&o, &r);
    if (!rc && csv) rc = write_csv(csv, &r);
    if (!rc && o.json) write_json(&o, &r, device);
    if (!rc && plot) rc = cli_plot("bench/plot_tridiag.py", csv, plot, NULL);
    free(r.v);
    return rc;
}
