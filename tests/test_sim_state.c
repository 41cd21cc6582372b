/* The whole-population state accessors (ns_sim_read_var / ns_sim_write_var)
 * against the per-cell accessors (ns_sim_get_state / ns_sim_set_state), an
 * independent path through the host copy:
 *   - read: every variable, Flat order, equal bit for bit to the cells'
 *     ns_sim_get_state concatenated at ns_sim_cell_offset;
 *   - coupling: advance, read v, change it (a field that depends on the
 *     compartment), write it back, advance again: the traces, spikes and
 *     state equal bit for bit those of a twin simulation changed through
 *     ns_sim_set_state cell by cell;
 *   - bad arguments named.
 * On the CPU loop always; on the GPU (both loops: several shapes onchip and
 * the tree loop) with device arrays on a non-blocking stream of the
 * caller's, when there is a GPU (that part says SKIPPED otherwise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static const char *files[] = {"ca1_h10.swc", "str_lts_noaxon.swc", "dg_granule_1220882a.swc", "purk_dbbs.swc"};
#define N_FILES 4
#define N_CELLS 150

static ns_sim_t *make_sim(ns_backend backend, ns_hines_method method, ns_cell_t **cells) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.method = method;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(N_FILES, (const ns_cell_t *const *)cells, N_CELLS, NULL, &p, &o, &sim));
    for (int64_t c = 0; sim && c < N_CELLS; ++c) {
        const int32_t soma = ns_sim_spike_compartment(sim, c);
        ns_cell_info ci;
        ns_cell_get_info(cells[c % N_FILES], &ci);
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 1.0 + 0.1 * (c % 7), 20.0, 1e-4 * ci.total_area * (1 + c % 3)));
        if (c % 13 == 0) CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
    }
    return sim;
}

/* The cells' ns_sim_get_state, concatenated in the Flat order. */
static void gather_cells(ns_sim_t *sim, double *flat[NS_SIM_VAR_COUNT]) {
    for (int64_t c = 0; c < ns_sim_cells(sim); ++c) {
        const int64_t o = ns_sim_cell_offset(sim, c);
        CHECK_OK(ns_sim_get_state(sim, c, flat[0] + o, flat[1] + o, flat[2] + o, flat[3] + o));
    }
}

/* The change a coupled code makes: v += 0.5 mV * sin(i), i the Flat index. */
static void perturb(double *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] += 0.5 * sin((double)i);
}

static int same(const double *a, const double *b, int64_t n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* Traces, spikes and final state of two simulations bit for bit. */
static void check_twins(ns_sim_t *a, ns_sim_t *b, const char *what) {
    int64_t sa, sb;
    int32_t na, nb;
    const double *ta = ns_sim_traces(a, &sa, &na), *tb = ns_sim_traces(b, &sb, &nb);
    CHECK_MSG(sa == sb && na == nb && same(ta, tb, sa * na), "%s: traces differ", what);
    int64_t spikes = 0;
    for (int64_t c = 0; c < ns_sim_cells(a); ++c) {
        int64_t x, y;
        const double *xa = ns_sim_spikes(a, c, &x), *xb = ns_sim_spikes(b, c, &y);
        CHECK_MSG(x == y && same(xa, xb, x), "%s: spikes of cell %lld differ", what, (long long)c);
        spikes += x;
    }
    CHECK_MSG(spikes > 0, "%s: no spikes (the stimuli should make some)", what);
}

/* Host-memory variant (CPU simulations): read, couple, compare. `sim` and
 * `twin` are fresh, identical simulations. */
static void run_host(ns_sim_t *sim, ns_sim_t *twin) {
    const int64_t n = ns_sim_compartments(sim);
    CHECK(ns_sim_cell_offset(sim, ns_sim_cells(sim)) == n && ns_sim_cell_offset(sim, -1) == -1 &&
          ns_sim_cell_offset(sim, ns_sim_cells(sim) + 1) == -1);
    double *want[NS_SIM_VAR_COUNT], *got = malloc((size_t)n * sizeof *got);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) want[k] = malloc((size_t)n * sizeof **want);
    CHECK_OK(ns_sim_advance(sim, 300));
    CHECK_OK(ns_sim_advance(twin, 300));
    gather_cells(twin, want);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) {
        CHECK_OK(ns_sim_read_var(sim, (ns_sim_var)k, got, NULL));
        CHECK_MSG(same(got, want[k], n), "cpu: read_var(%d) differs from get_state", k);
    }
    /* couple: through the bulk call on sim, cell by cell on twin */
    CHECK_OK(ns_sim_read_var(sim, NS_SIM_VAR_V, got, NULL));
    perturb(got, n);
    CHECK_OK(ns_sim_write_var(sim, NS_SIM_VAR_V, got, NULL));
    perturb(want[0], n);
    for (int64_t c = 0; c < ns_sim_cells(twin); ++c)
        CHECK_OK(ns_sim_set_state(twin, c, want[0] + ns_sim_cell_offset(twin, c), NULL, NULL, NULL));
    CHECK_OK(ns_sim_advance(sim, 400));
    CHECK_OK(ns_sim_advance(twin, 400));
    check_twins(sim, twin, "cpu");
    /* bad arguments */
    CHECK(ns_sim_read_var(sim, NS_SIM_VAR_COUNT, got, NULL) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "var") != NULL);
    CHECK(ns_sim_read_var(sim, NS_SIM_VAR_V, NULL, NULL) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "flat") != NULL);
    CHECK(ns_sim_write_var(sim, NS_SIM_VAR_V, got, (void *)got) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "stream") != NULL);
    CHECK(ns_sim_read_var(NULL, NS_SIM_VAR_V, got, NULL) == NS_ERR_INVALID_ARGUMENT);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) free(want[k]);
    free(got);
}

#ifdef NS_HAVE_CUDA
/* Device-memory variant: the same on a non-blocking stream of the caller's. */
static void run_device(ns_sim_t *sim, ns_sim_t *twin, const char *what) {
    const int64_t n = ns_sim_compartments(sim);
    const size_t bytes = (size_t)n * sizeof(double);
    double *want[NS_SIM_VAR_COUNT], *got = malloc(bytes), *dev = NULL;
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) want[k] = malloc(bytes);
    cudaStream_t q = NULL;
    CHECK(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaMalloc((void **)&dev, bytes) == cudaSuccess);
    CHECK_OK(ns_sim_advance(sim, 300));
    CHECK_OK(ns_sim_advance(twin, 300));
    gather_cells(twin, want);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) {
        CHECK(cudaMemsetAsync(dev, 0xFF, bytes, q) == cudaSuccess);
        CHECK_OK(ns_sim_read_var(sim, (ns_sim_var)k, dev, q));
        CHECK(cudaMemcpyAsync(got, dev, bytes, cudaMemcpyDeviceToHost, q) == cudaSuccess);
        CHECK(cudaStreamSynchronize(q) == cudaSuccess);
        CHECK_MSG(same(got, want[k], n), "%s: read_var(%d) differs from get_state", what, k);
    }
    /* couple on the stream: read v, change it, write it back, advance at
     * once (the advance must wait for the write) */
    CHECK_OK(ns_sim_read_var(sim, NS_SIM_VAR_V, dev, q));
    CHECK(cudaMemcpyAsync(got, dev, bytes, cudaMemcpyDeviceToHost, q) == cudaSuccess);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess);
    perturb(got, n);
    CHECK(cudaMemcpyAsync(dev, got, bytes, cudaMemcpyHostToDevice, q) == cudaSuccess);
    CHECK_OK(ns_sim_write_var(sim, NS_SIM_VAR_V, dev, q));
    CHECK(cudaMemsetAsync(dev, 0, bytes, q) == cudaSuccess); /* the caller reuses its buffer at once */
    perturb(want[0], n);
    for (int64_t c = 0; c < ns_sim_cells(twin); ++c)
        CHECK_OK(ns_sim_set_state(twin, c, want[0] + ns_sim_cell_offset(twin, c), NULL, NULL, NULL));
    CHECK_OK(ns_sim_advance(sim, 400));
    CHECK_OK(ns_sim_advance(twin, 400));
    check_twins(sim, twin, what);
    /* the host accessor after a device write sees the written state */
    CHECK(cudaMemcpy(dev, want[1], bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK_OK(ns_sim_write_var(sim, NS_SIM_VAR_HH_M, dev, q));
    gather_cells(sim, want);
    CHECK(cudaMemcpy(got, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(same(got, want[1], n), "%s: get_state after write_var", what);
    /* bad arguments: host memory, an array shorter than the population */
    CHECK(ns_sim_read_var(sim, NS_SIM_VAR_V, got, q) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "flat") != NULL);
    double *shorter = NULL;
    CHECK(cudaMalloc((void **)&shorter, bytes / 2) == cudaSuccess);
    CHECK(ns_sim_write_var(sim, NS_SIM_VAR_V, shorter, q) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "flat") != NULL);
    printf("%s (%s): read_var equals get_state, write_var equals set_state, %lld compartments\n", what,
           ns_hines_method_name(ns_sim_method(sim)), (long long)n);
    cudaFree(shorter);
    cudaFree(dev);
    cudaStreamDestroy(q);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) free(want[k]);
    free(got);
}
#endif

int main(void) {
    ns_cell_t *cells[N_FILES] = {0};
    for (int k = 0; k < N_FILES; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, files[k]);
        ns_morph_t *m = NULL;
        CHECK_OK(ns_swc_read(path, NULL, &m));
        CHECK_OK(ns_discretize(m, NULL, &cells[k]));
        ns_morph_destroy(m);
    }
    ns_sim_t *a = make_sim(NS_BACKEND_CPU, NS_HINES_AUTO, cells), *b = make_sim(NS_BACKEND_CPU, NS_HINES_AUTO, cells);
    if (a && b) run_host(a, b);
    ns_sim_destroy(a);
    ns_sim_destroy(b);
    int devices = 0;
#ifdef NS_HAVE_CUDA
    if (ns_cuda_device_count(&devices) == NS_OK && devices > 0) {
        /* onchip: 150 cells of 4 shapes, each shape its own group; tree: one
         * population-wide group in tree order */
        const ns_hines_method methods[2] = {NS_HINES_ONCHIP, NS_HINES_TREE};
        for (int k = 0; k < 2; ++k) {
            a = make_sim(NS_BACKEND_CUDA, methods[k], cells);
            b = make_sim(NS_BACKEND_CUDA, methods[k], cells);
            if (a && b) run_device(a, b, methods[k] == NS_HINES_ONCHIP ? "gpu onchip" : "gpu tree");
            ns_sim_destroy(a);
            ns_sim_destroy(b);
        }
    }
#endif
    if (devices == 0) printf("GPU part SKIPPED: no GPU\n");
    for (int k = 0; k < N_FILES; ++k) ns_cell_destroy(cells[k]);
    return check_summary("test_sim_state");
}
