/* Embedding the solver in a simulator's time loop (docs/api.md, "Device
 * arrays and the caller's stream"): a passive cable population of three
 * real morphologies, every step's matrix assembled (here on the host) and
 * copied to the simulator's own device arrays on its own CUDA stream, solved
 * there by ns_hines_solver_solve_device with no synchronisation, the
 * solution brought back on the same stream; the last step is checked
 * against the sequential reference solve of every cell. Without CUDA, or
 * without a usable GPU, the same loop runs on host arrays
 * (ns_hines_solver_solve). Built against the installed package by
 * tests/install/scripts/consumer.cmake and run in CI; on a GPU machine it takes the
 * device path.
 *
 * usage: embed MORPHOLOGY_DIR [cells] [steps]        exit 0: checked */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <neurosolve/neurosolve.h>
#ifdef EMBED_CUDA
#include <cuda_runtime_api.h>
#endif

static const char *files[3] = {"ca1_h10.swc", "purk_dbbs.swc", "dense_Animal_2_Basal_2.swc"};

static int fail(const char *what) {
    fprintf(stderr, "embed: %s: %s\n", what, ns_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: embed MORPHOLOGY_DIR [cells] [steps]\n");
        return 2;
    }
    const int64_t cells = argc > 2 ? atoll(argv[2]) : 300;
    const int steps = argc > 3 ? atoi(argv[3]) : 20;
    ns_cell_t *cell[3] = {0};
    const ns_tree_t *shape[3];
    for (int k = 0; k < 3; ++k) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], files[k]);
        ns_morph_t *m = NULL;
        if (ns_swc_read(path, NULL, &m) != NS_OK || ns_discretize(m, NULL, &cell[k]) != NS_OK) return fail(path);
        ns_morph_destroy(m);
        shape[k] = ns_cell_tree(cell[k]);
    }
    ns_batch_t *batch = NULL;
    if (ns_batch_create(3, shape, cells, NULL, &batch) != NS_OK) return fail("batch");
    const int64_t n = ns_batch_compartments(batch);
    const int64_t *off = ns_batch_cell_offset(batch);
    const int32_t *cs = ns_batch_cell_shape(batch);
    /* the passive cable matrix of each shape (dt 0.025 ms, cm 1), NEURON's form */
    double *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    double *d0 = malloc((size_t)n * sizeof *d0), *d = malloc((size_t)n * sizeof *d);
    double *rhs = malloc((size_t)n * sizeof *rhs), *x = malloc((size_t)n * sizeof *x);
    double *v = calloc((size_t)n, sizeof *v);
    if (!a || !b || !d0 || !d || !rhs || !x || !v) return fail("memory");
    for (int64_t c = 0; c < cells; ++c)
        if (ns_cell_matrix(cell[cs[c]], 1.0, 0.025, NS_FORM_NEURON, a + off[c], b + off[c], d0 + off[c]) != NS_OK)
            return fail("cell matrix");
    ns_solve_options o;
    ns_solve_options_init(&o);
    int device = 0;
#ifdef EMBED_CUDA
    int gpus = 0;
    device = ns_cuda_device_count(&gpus) == NS_OK && gpus > 0;
    double *g[4] = {NULL, NULL, NULL, NULL}; /* the simulator's own device arrays: a, b, d, rhs */
    cudaStream_t stream = NULL;
    if (device) {
        o.method = NS_HINES_TREE;
        for (int k = 0; k < 4; ++k)
            if (cudaMalloc((void **)&g[k], (size_t)n * sizeof(double)) != cudaSuccess) return fail("cudaMalloc");
        if (cudaStreamCreate(&stream) != cudaSuccess) return fail("stream");
        cudaMemcpyAsync(g[0], a, (size_t)n * sizeof(double), cudaMemcpyHostToDevice, stream);
        cudaMemcpyAsync(g[1], b, (size_t)n * sizeof(double), cudaMemcpyHostToDevice, stream);
    }
#endif
    if (!device) ns_clear_error();
    ns_hines_solver_t *solver = NULL;
    if (ns_hines_solver_create(batch, &o, &solver) != NS_OK) return fail("solver");
    for (int s = 0; s < steps; ++s) {
        /* assemble: the passive matrix, a current into each cell's root, v's leak */
        for (int64_t i = 0; i < n; ++i) {
            d[i] = d0[i];
            rhs[i] = -1e-3 * v[i];
        }
        for (int64_t c = 0; c < cells; ++c) rhs[off[c]] += 0.1 * (1 + c % 5);
        memcpy(x, rhs, (size_t)n * sizeof *x);
#ifdef EMBED_CUDA
        if (device) {
            cudaMemcpyAsync(g[2], d, (size_t)n * sizeof(double), cudaMemcpyHostToDevice, stream);
            cudaMemcpyAsync(g[3], rhs, (size_t)n * sizeof(double), cudaMemcpyHostToDevice, stream);
            if (ns_hines_solver_solve_device(solver, g[0], g[1], g[2], g[3], stream) != NS_OK) return fail("device solve");
            cudaMemcpyAsync(x, g[3], (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, stream);
            if (cudaStreamSynchronize(stream) != cudaSuccess) return fail("stream");
        }
#endif
        if (!device && ns_hines_solver_solve(solver, a, b, d, x) != NS_OK) return fail("solve");
        for (int64_t i = 0; i < n; ++i) v[i] += x[i];
    }
    if (ns_hines_solver_wait(solver) != NS_OK) return fail("wait");
    /* the last step's solution against the sequential solve of every cell */
    double worst = 0.0;
    for (int64_t i = 0; i < n; ++i) d[i] = d0[i];
    for (int64_t c = 0; c < cells; ++c) {
        const ns_tree_t *t = shape[cs[c]];
        const int32_t nc = ns_tree_size(t);
        if (ns_hines_solve_one(nc, ns_tree_parent(t), a + off[c], b + off[c], d + off[c], rhs + off[c]) >= 0)
            return fail("reference solve");
        double num = 0.0, den = 0.0;
        for (int32_t i = 0; i < nc; ++i) {
            num = fmax(num, fabs(x[off[c] + i] - rhs[off[c] + i]));
            den = fmax(den, fabs(rhs[off[c] + i]));
        }
        worst = fmax(worst, num / den);
    }
    printf("embed: %lld cells of 3 morphologies, %lld compartments, %d steps on the %s path (%s): "
           "max relative error %.2e\n",
           (long long)cells, (long long)n, steps, device ? "device-array" : "host-array",
           ns_hines_method_name(ns_hines_solver_method(solver)), worst);
    ns_hines_solver_destroy(solver);
#ifdef EMBED_CUDA
    for (int k = 0; k < 4; ++k) cudaFree(g[k]);
    if (stream) cudaStreamDestroy(stream);
#endif
    ns_batch_destroy(batch);
    for (int k = 0; k < 3; ++k) ns_cell_destroy(cell[k]);
    free(a), free(b), free(d0), free(d), free(rhs), free(x), free(v);
    return worst <= 1e-10 ? 0 : 1;
}
