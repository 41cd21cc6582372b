/* Networks on the GPU loop (docs/networks.md, "The GPU loop"):
 *   1. the three networks of tests/data/neuron_network/ (NEURON 9.0.2's
 *      rasters: the ring, the ring with delays of 0.01 to 0.22 ms, one step
 *      per interval, and the random network of 16 cells) on the CUDA backend,
 *      built call by call: NEURON's spike count per source, every spike within
 *      0.05 ms of NEURON's and within 1e-6 ms of the CPU loop's run made here,
 *      under auto (the synapses, events and detectors inside the fused
 *      kernel: the choice asserted) and on the per-step path alike;
 *      two GPU runs identical to the bit (rasters; the soma trace too for the
 *      rings, whose synapses of one type never share a node: docs say why);
 *      the interval loop continued across two ns_sim_advance calls;
 *   2. the delivery rule on one compartment at rest: v first moves in the
 *      steps 60, 61, 61, 60 (NEURON's) for delays 0.5, 0.5125, 0.52,
 *      0.5124999 ms after a spike at 1 ms; with weight 0 it never moves (so
 *      a skipped delivery fails the first check); the detector below v_init
 *      fires at 1e-10 ms;
 *   3. a Poisson network (8 sources of 200 Hz into ExpSyn of 4 hh cells in a
 *      chain): the GPU raster equals the CPU's (Poisson times to the bit,
 *      detector spikes within 1e-6 ms, the same counts), and the cells fired.
 * Without a GPU (or without CUDA) the test skips. */
#include "net_ref.h"

static int gpu_ok(void) {
    int gpus = 0;
    return ns_cuda_device_count(&gpus) == NS_OK && gpus > 0;
}

static void run_ref(const ref *r, ns_cell_t *const *shapes, ns_backend backend, ns_sim_gpu_mechanisms mechanisms,
                    raster *out) {
    memset(out, 0, sizeof *out);
    ns_sim_model_t *model = model_of("all.insert = hh\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = r->dt;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.threads = 1;
    o.model = model;
    o.gpu_mechanisms = mechanisms;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(r->n_shapes, (const ns_cell_t *const *)shapes, r->n_cells, r->cell_shape, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    int32_t spike_compartment[MAX_ITEMS];
    for (int c = 0; c < r->n_cells; ++c) spike_compartment[c] = ns_sim_spike_compartment(sim, c);
    build_net(r, shapes, spike_compartment, sim, &net_calls_sim);
    int32_t site = -1;
    CHECK_OK(ns_sim_add_recording(sim, r->n_cells - 1, ns_sim_spike_compartment(sim, r->n_cells - 1), &site));
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, r->tstop);
    CHECK_OK(ns_sim_advance(sim, steps / 3));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 3));
    /* the GPU loop's choice: the network's built-in synapses inside the fused kernel under auto */
    if (backend == NS_BACKEND_CUDA)
        CHECK(ns_sim_gpu_mechanisms_of(sim) ==
              (mechanisms == NS_SIM_GPU_MECHANISMS_PER_STEP ? NS_SIM_GPU_MECHANISMS_PER_STEP
                                                            : NS_SIM_GPU_MECHANISMS_FUSED));
    for (int q = 0; q < r->n_cells + r->n_trains && q < MAX_SOURCES; ++q) {
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, q, &n);
        out->count[q] = n;
        for (int64_t k = 0; k < n && k < MAX_PER; ++k) out->t[q * MAX_PER + k] = x[k];
    }
    int64_t samples = 0;
    const double *tr = ns_sim_traces(sim, &samples, NULL);
    CHECK(samples == steps + 1);
    for (int64_t k = 0; tr && k < samples; ++k) out->trace_sum += tr[k];
    out->trace_end = tr ? tr[samples - 1] : NAN;
    ns_sim_destroy(sim);
}

static void test_reference(const char *file, int bitwise_trace) {
    char path[1024];
    snprintf(path, sizeof path, "%s/neuron_network/%s", NS_TEST_DATA, file);
    ref *r = malloc(sizeof *r);
    if (!r || read_ref(path, r) != 0) {
        CHECK_MSG(0, "cannot read %s", path);
        free(r);
        return;
    }
    ns_cell_t *shapes[MAX_SHAPES] = {NULL};
    int ok = 1;
    for (int k = 0; k < r->n_shapes; ++k) ok &= (shapes[k] = load_cell(r->shape_file[k])) != NULL;
    static raster cpu, gpu[2], step;
    const ns_sim_gpu_mechanisms AUTO = NS_SIM_GPU_MECHANISMS_AUTO;
    if (ok) {
        run_ref(r, shapes, NS_BACKEND_CPU, AUTO, &cpu);
        run_ref(r, shapes, NS_BACKEND_CUDA, AUTO, &gpu[0]);
        run_ref(r, shapes, NS_BACKEND_CUDA, AUTO, &gpu[1]);
        run_ref(r, shapes, NS_BACKEND_CUDA, NS_SIM_GPU_MECHANISMS_PER_STEP, &step);
    }
    int64_t total = 0;
    const double worst = ok ? check_against_neuron(file, r, &gpu[0], &total) : INFINITY;
    /* the fused kernel (auto) and the per-step path against the CPU loop */
    double worst_cpu = 0.0, worst_step = 0.0;
    for (int q = 0; ok && q < r->n_cells + r->n_trains && q < MAX_SOURCES; ++q) {
        CHECK_MSG(gpu[0].count[q] == cpu.count[q], "%s: source %d: GPU %lld spikes, CPU %lld", file, q,
                  (long long)gpu[0].count[q], (long long)cpu.count[q]);
        CHECK_MSG(step.count[q] == cpu.count[q], "%s: source %d: GPU per step %lld spikes, CPU %lld", file, q,
                  (long long)step.count[q], (long long)cpu.count[q]);
        for (int64_t k = 0; k < cpu.count[q] && k < gpu[0].count[q] && k < step.count[q] && k < MAX_PER; ++k) {
            const double d = fabs(gpu[0].t[q * MAX_PER + k] - cpu.t[q * MAX_PER + k]);
            const double e = fabs(step.t[q * MAX_PER + k] - cpu.t[q * MAX_PER + k]);
            if (d > worst_cpu) worst_cpu = d;
            if (e > worst_step) worst_step = e;
        }
    }
    printf("%s on the GPU: %lld spikes as NEURON's (largest difference %.3g ms), CPU loop's within %.3g ms (per "
           "step: %.3g ms); soma trace end GPU %.17g, per step %.17g, CPU %.17g\n",
           file, (long long)total, worst, worst_cpu, worst_step, gpu[0].trace_end, step.trace_end, cpu.trace_end);
    CHECK_MSG(worst <= TOL, "%s: %g ms from NEURON", file, worst);
    CHECK_MSG(worst_cpu <= 1e-6, "%s: %g ms from the CPU loop", file, worst_cpu);
    CHECK_MSG(worst_step <= 1e-6, "%s: per step, %g ms from the CPU loop", file, worst_step);

    /* two GPU runs: identical rasters (and traces where no atomics reorder sums) */
    CHECK(memcmp(gpu[1].count, gpu[0].count, sizeof gpu[0].count) == 0);
    CHECK(memcmp(gpu[1].t, gpu[0].t, sizeof gpu[0].t) == 0);
    if (bitwise_trace)
        CHECK_MSG(gpu[1].trace_sum == gpu[0].trace_sum && gpu[1].trace_end == gpu[0].trace_end, "%s: %.17g %.17g",
                  file, gpu[1].trace_end, gpu[0].trace_end);
    else
        CHECK_MSG(fabs(gpu[1].trace_end - gpu[0].trace_end) <= 1e-9 * fabs(gpu[0].trace_end), "%s: %.17g %.17g", file,
                  gpu[1].trace_end, gpu[0].trace_end);
    for (int k = 0; k < r->n_shapes; ++k) ns_cell_destroy(shapes[k]);
    free(r);
}

static ns_sim_t *passive_sim(const ns_cell_t *cell, int64_t n_cells, ns_backend backend) {
    ns_sim_model_t *model = model_of("all.insert = pas\nall.e_pas = -65\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.model = model;
    ns_sim_t *sim = NULL;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, n_cells, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    return sim;
}

static void test_delivery(const ns_cell_t *cell) {
    const double ts = 1.0;
    const double delays[4] = {0.5, 0.5125, 0.52, 0.5124999};
    const int64_t neuron_first[4] = {60, 61, 61, 60}; /* NEURON 9.0.2 (test_sim_network) */
    for (int k = 0; k < 5; ++k) {
        const int zero = k == 4; /* weight 0: v never moves */
        ns_sim_t *sim = passive_sim(cell, 1, NS_BACKEND_CUDA);
        if (!sim) return;
        int64_t syn = -1, src = -1;
        int32_t site = -1;
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(sim, &ts, 1, &src));
        CHECK_OK(ns_sim_connect(sim, src, syn, zero ? 0.0 : 0.01, delays[zero ? 0 : k]));
        CHECK_OK(ns_sim_add_recording(sim, 0, 0, &site));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 100));
        int64_t samples = 0;
        const double *tr = ns_sim_traces(sim, &samples, NULL);
        int64_t first = -1;
        for (int64_t j = 1; tr && j < samples && first < 0; ++j)
            if (tr[j] != -65.0) first = j - 1;
        if (zero)
            CHECK_MSG(first == -1, "weight 0: v moved in step %lld", (long long)first);
        else {
            CHECK_MSG(first == neuron_first[k], "GPU, delay %g: v first moves in step %lld, NEURON's %lld", delays[k],
                      (long long)first, (long long)neuron_first[k]);
            CHECK(tr && tr[samples - 1] > -65.0);
        }
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, src, &n);
        CHECK(n == 1 && x && x[0] == ts);
        ns_sim_destroy(sim);
    }
    {
        ns_sim_t *sim = passive_sim(cell, 1, NS_BACKEND_CUDA);
        if (!sim) return;
        int64_t det = -1, syn = -1;
        CHECK_OK(ns_sim_add_detector(sim, 0, 0, -70.0, &det));
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_connect(sim, det, syn, 0.0, 0.1));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 50));
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, det, &n);
        CHECK_MSG(n == 1 && x && x[0] == 1e-10, "GPU: %lld spikes, first %g", (long long)n, x ? x[0] : NAN);
        ns_sim_destroy(sim);
    }
}

/* 4 hh cylinders in a chain, 8 Poisson sources of 200 Hz into each cell's ExpSyn. */
static void poisson_run(const ns_cell_t *cell, ns_backend backend, raster *out) {
    memset(out, 0, sizeof *out);
    ns_sim_model_t *model = model_of("all.insert = hh\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.threads = 1;
    o.model = model;
    ns_sim_t *sim = NULL;
    const ns_cell_t *shapes[1] = {cell};
    CHECK_OK(ns_sim_create(1, shapes, 4, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    int64_t syn[4], det[4], bg[8];
    for (int c = 0; c < 4; ++c) {
        CHECK_OK(ns_sim_add_synapse(sim, c, 0, "ExpSyn", &syn[c]));
        CHECK_OK(ns_sim_add_detector(sim, c, 0, -20.0, &det[c]));
    }
    for (int k = 0; k < 8; ++k) CHECK_OK(ns_sim_add_poisson_source(sim, 200.0, 0.0, INFINITY, 11 + k, &bg[k]));
    for (int c = 0; c < 4; ++c) {
        for (int k = 0; k < 8; ++k) CHECK_OK(ns_sim_connect(sim, bg[k], syn[c], 0.02, 1.0 + 0.1 * k));
        if (c > 0) CHECK_OK(ns_sim_connect(sim, det[c - 1], syn[c], 0.05, 0.7));
    }
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, 200.0)));
    for (int q = 0; q < 12; ++q) {
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, q, &n);
        out->count[q] = n;
        for (int64_t k = 0; k < n && k < MAX_PER; ++k) out->t[q * MAX_PER + k] = x[k];
    }
    ns_sim_destroy(sim);
}

static void test_poisson(const ns_cell_t *cell) {
    static raster cpu, gpu;
    poisson_run(cell, NS_BACKEND_CPU, &cpu);
    poisson_run(cell, NS_BACKEND_CUDA, &gpu);
    int64_t fired = 0;
    double worst = 0.0;
    for (int q = 0; q < 12; ++q) {
        CHECK_MSG(gpu.count[q] == cpu.count[q], "Poisson network: source %d: GPU %lld spikes, CPU %lld", q,
                  (long long)gpu.count[q], (long long)cpu.count[q]);
        for (int64_t k = 0; k < cpu.count[q] && k < gpu.count[q] && k < MAX_PER; ++k) {
            const double d = fabs(gpu.t[q * MAX_PER + k] - cpu.t[q * MAX_PER + k]);
            if (d > worst) worst = d;
            if (q >= 4) CHECK(d == 0.0); /* the Poisson times themselves */
        }
        if (q < 4) fired += cpu.count[q];
    }
    printf("Poisson network: %lld detector spikes on the CPU, GPU within %.3g ms\n", (long long)fired, worst);
    CHECK_MSG(fired >= 4, "the cells fired %lld times", (long long)fired);
    CHECK(worst <= 1e-6);
}

int main(void) {
    if (!gpu_ok()) CHECK_SKIP("no usable GPU (networks on the GPU loop)");
    test_reference("ring8_ca1_ko20x-07.csv", 1);
    test_reference("ring8_short_delays.csv", 1);
    test_reference("random16_ca1.csv", 0);
    ns_cell_t *cell = test_cylinder();
    if (cell) {
        test_delivery(cell);
        test_poisson(cell);
    }
    ns_cell_destroy(cell);
    return check_summary("test_sim_network_cuda");
}
