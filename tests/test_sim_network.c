/* Networks (docs/networks.md): synapses, spike sources, connections.
 *   1. the networks of tests/data/neuron_network/ (NEURON 9.0.2's rasters,
 *      validation/neuron_network_compare.py): a ring of 8 copies of a CA1
 *      morphology with hh everywhere, Exp2Syn and ExpSyn, 18 connections with
 *      delays 1 to 4.5 ms and a train; the same ring with delays of 0.01 to
 *      0.22 ms (below and above dt: intervals of one step); a random network of 16 cells of two
 *      CA1 morphologies, 32 Exp2Syn, 48 connections and 4 trains of 6 spikes
 *      driving 12 more; the same spikes per source and times
 *      within 0.05 ms (issue 20's target; they are NEURON's to 1e-12 ms:
 *      step times plus NEURON's 1e-10), on the CPU with 1, 2 and 4 threads and
 *      sequentially, the four runs identical to the bit (rasters and a trace);
 *   2. the delivery rule on a single compartment at rest: the first step that
 *      moves v is the one from t with ts + delay <= t + dt/2 (and NEURON's
 *      step for the same delays), a detector above threshold at v_init fires
 *      at t = 1e-10 as NEURON's does, and an event's
 *      effect is that of NET_RECEIVE's weight (two events of weight w equal
 *      one of 2w to rounding);
 *   3. bad input: each error's status and the element it names.
 * In 1., the first run builds the network call by call from the reference's
 * description (net_ref.h), the other three from the network file beside it
 * (tests/data/neuron_network/ *.net, ns_network_read and
 * ns_network_create_sim): identical to the bit, the parser is checked by the
 * same rasters. */
#include "net_ref.h"

static void run_net(const ref *r, ns_cell_t *const *shapes, const ns_network_t *net, ns_hines_method method,
                    int threads, raster *out) {
    memset(out, 0, sizeof *out);
    ns_sim_model_t *model = model_of("all.insert = hh\n");
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = r->dt;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.method = method;
    o.threads = threads;
    o.model = model;
    ns_sim_t *sim = NULL;
    if (net) { /* from the network file (its model: hh everywhere) */
        o.model = NULL;
        CHECK_OK(ns_network_create_sim(net, NULL, NULL, &p, &o, &sim));
        ns_sim_model_destroy(model);
        if (!sim) return;
        CHECK(ns_sim_cells(sim) == r->n_cells);
        /* a change since the file's ns_sim_init (e = 0 as the file says) */
        CHECK_OK(ns_sim_synapse_set(sim, 0, "e", 0.0));
    } else {
        CHECK_OK(ns_sim_create(r->n_shapes, (const ns_cell_t *const *)shapes, r->n_cells, r->cell_shape, &p, &o, &sim));
        ns_sim_model_destroy(model);
        if (!sim) return;
        int32_t spike_compartment[MAX_ITEMS];
        for (int c = 0; c < r->n_cells; ++c) spike_compartment[c] = ns_sim_spike_compartment(sim, c);
        build_net(r, shapes, spike_compartment, sim, &net_calls_sim);
    }
    CHECK(ns_sim_synapses(sim) == r->n_syns && ns_sim_sources(sim) == r->n_cells + r->n_trains &&
          ns_sim_connections(sim) == r->n_conns);
    int32_t site = -1;
    CHECK_OK(ns_sim_add_recording(sim, r->n_cells - 1, ns_sim_spike_compartment(sim, r->n_cells - 1), &site));
    /* not yet initialised with the network */
    ns_status s = ns_sim_advance(sim, 1);
    CHECK(s == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "ns_sim_init"));
    CHECK_OK(ns_sim_init(sim));
    const int64_t steps = ns_sim_steps_for(sim, r->tstop);
    /* in two calls: the interval loop continues across calls */
    CHECK_OK(ns_sim_advance(sim, steps / 3));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 3));
    for (int q = 0; q < r->n_cells + r->n_trains && q < MAX_SOURCES; ++q) {
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, q, &n);
        out->count[q] = n;
        for (int64_t k = 0; k < n && k < MAX_PER; ++k) out->t[q * MAX_PER + k] = x[k];
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    CHECK(sites == 1 && samples == steps + 1);
    for (int64_t k = 0; tr && k < samples; ++k) out->trace_sum += tr[k];
    out->trace_end = tr ? tr[samples - 1] : NAN;
    ns_sim_destroy(sim);
}

static void test_reference(const char *file) {
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
    /* the network file beside the CSV (validation/neuron_network_compare.py net) */
    char net_path[1024];
    snprintf(net_path, sizeof net_path, "%.*s.net", (int)(strlen(path) - 4), path);
    ns_network_t *net = NULL;
    CHECK_OK(ns_network_read(net_path, &net));
    ok &= net != NULL;
    static raster runs[4];
    if (ok) {
        CHECK(ns_network_cells(net) == r->n_cells && ns_network_morphologies(net) == r->n_shapes &&
              ns_network_synapses(net) == r->n_syns && ns_network_sources(net) == r->n_cells + r->n_trains &&
              ns_network_fixed_connections(net) == r->n_conns);
        run_net(r, shapes, NULL, NS_HINES_OPENMP, 1, &runs[0]);
        run_net(r, shapes, net, NS_HINES_OPENMP, 2, &runs[1]);
        run_net(r, shapes, net, NS_HINES_SEQUENTIAL, 0, &runs[2]);
        run_net(r, shapes, net, NS_HINES_OPENMP, 4, &runs[3]); /* narrower lane blocks, more of them */
    }
    ns_network_destroy(net);
    /* against NEURON: per source, the same count and times within TOL */
    int64_t total = 0;
    const double worst = ok ? check_against_neuron(file, r, &runs[0], &total) : INFINITY;
    printf("%s: %d cells, %d synapses, %d connections: %lld spikes as NEURON's, largest time difference %.3g ms\n",
           file, r->n_cells, r->n_syns, r->n_conns, (long long)total, worst);
    /* the times are step times plus NEURON's 1e-10 ms: NEURON's own, not only within TOL */
    CHECK_MSG(worst <= 1e-12, "%s: largest difference %g ms", file, worst);
    /* any thread count, and the sequential loop: identical to the bit */
    for (int k = 1; ok && k < 4; ++k) {
        CHECK(memcmp(runs[k].count, runs[0].count, sizeof runs[0].count) == 0);
        CHECK(memcmp(runs[k].t, runs[0].t, sizeof runs[0].t) == 0);
        CHECK(runs[k].trace_sum == runs[0].trace_sum && runs[k].trace_end == runs[0].trace_end);
    }
    for (int k = 0; k < r->n_shapes; ++k) ns_cell_destroy(shapes[k]);
    free(r);
}

/* The one-compartment cell (cell_cylinder.h) as compartment 0, pas at rest (e_pas =
 * v_init) with an ExpSyn: v stays at v_init exactly until the event. */
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
    /* a spike at ts = 1.0 ms, delays 0.5 and 0.5125 (ts + delay exactly on
     * and a quarter step past a half step): the first moving step starts at
     * the first t with ts + delay <= t + dt/2 */
    const double dt = 0.025, ts = 1.0;
    const double delays[4] = {0.5, 0.5125, 0.52, 0.5124999};
    /* NEURON 9.0.2's first moving step for these (a NetStim at 1 ms, a
     * NetCon with the delay, an ExpSyn on a 20x20 um pas section at rest) */
    const int64_t neuron_first[4] = {60, 61, 61, 60};
    for (int k = 0; k < 4; ++k) {
        ns_sim_t *sim = passive_sim(cell, 1, NS_BACKEND_CPU);
        if (!sim) return;
        int64_t syn = -1, src = -1;
        int32_t site = -1;
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(sim, &ts, 1, &src));
        CHECK_OK(ns_sim_connect(sim, src, syn, 0.01, delays[k]));
        CHECK_OK(ns_sim_add_recording(sim, 0, 0, &site));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 100));
        int64_t samples = 0;
        const double *tr = ns_sim_traces(sim, &samples, NULL);
        /* the expected first step: smallest j with ts + delay <= t_j + dt/2,
         * t_j by NEURON's half steps */
        int64_t expect = -1;
        double t = 0.0;
        for (int64_t j = 0; j < 100 && expect < 0; ++j) {
            if (ts + delays[k] <= t + .5 * dt) expect = j;
            t = (t + .5 * dt) + .5 * dt;
        }
        int64_t first = -1;
        for (int64_t j = 1; tr && j < samples && first < 0; ++j)
            if (tr[j] != -65.0) first = j - 1; /* sample j is after step j - 1 */
        CHECK_MSG(first == expect && expect == neuron_first[k], "delay %g: v first moves in step %lld, expected %lld",
                  delays[k], (long long)first, (long long)expect);
        CHECK(tr && tr[samples - 1] > -65.0); /* an excitatory ExpSyn (e = 0) depolarises */
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, src, &n);
        CHECK(n == 1 && x && x[0] == ts);
        ns_sim_destroy(sim);
    }
    /* two events of weight w at one time act as one of 2w (NET_RECEIVE adds) */
    double end[2];
    for (int k = 0; k < 2; ++k) {
        ns_sim_t *sim = passive_sim(cell, 1, NS_BACKEND_CPU);
        if (!sim) return;
        int64_t syn = -1, src = -1;
        int32_t site = -1;
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(sim, &ts, 1, &src));
        CHECK_OK(ns_sim_connect(sim, src, syn, k ? 0.02 : 0.01, 1.0));
        if (!k) CHECK_OK(ns_sim_connect(sim, src, syn, 0.01, 1.0));
        CHECK_OK(ns_sim_add_recording(sim, 0, 0, &site));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 200));
        int64_t samples = 0;
        const double *tr = ns_sim_traces(sim, &samples, NULL);
        end[k] = tr ? tr[samples - 1] : NAN;
        ns_sim_destroy(sim);
    }
    CHECK_MSG(fabs(end[0] - end[1]) <= 1e-12 * fabs(end[1]) && end[0] > -65.0, "%.17g %.17g", end[0], end[1]);
    /* a detector whose threshold is below v_init fires at t = 0 (NEURON's
     * flag starts false; its time is t + 1e-10, as NEURON records it), and
     * not again while v stays above */
    {
        ns_sim_t *sim = passive_sim(cell, 1, NS_BACKEND_CPU);
        if (!sim) return;
        int64_t det = -1, syn = -1;
        CHECK_OK(ns_sim_add_detector(sim, 0, 0, -70.0, &det));
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &syn));
        CHECK_OK(ns_sim_connect(sim, det, syn, 0.0, 0.1));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 50));
        int64_t n = 0;
        const double *x = ns_sim_source_spikes(sim, det, &n);
        CHECK_MSG(n == 1 && x && x[0] == 1e-10, "%lld spikes, first %g", (long long)n, x ? x[0] : NAN);
        ns_sim_destroy(sim);
    }
}

static void test_errors(const ns_cell_t *cell) {
    int64_t id = -1;
    /* without a model file: the params' shorthand is a model of the built-ins, whose catalogue
     * names ExpSyn (issue 41) */
    {
        ns_sim_params p;
        ns_sim_params_init(&p);
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = NS_BACKEND_CPU;
        ns_sim_t *sim = NULL;
        const ns_cell_t *shapes[1] = {cell};
        CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim));
        CHECK_OK(ns_sim_add_synapse(sim, 0, 0, "ExpSyn", &id));
        CHECK(id == 0);
        CHECK_OK(ns_sim_add_detector(sim, 0, 0, -20.0, &id));
        CHECK(id == 0 && ns_sim_synapses(sim) == 1 && ns_sim_sources(sim) == 1);
        CHECK_FAILS(ns_sim_add_synapse(sim, 0, 0, "hh", &id), NS_ERR_INVALID_ARGUMENT, "hh");
        ns_sim_destroy(sim);
    }
    ns_sim_t *sim = passive_sim(cell, 2, NS_BACKEND_CPU);
    if (!sim) return;
    CHECK_FAILS(ns_sim_add_synapse(NULL, 0, 0, "ExpSyn", &id), NS_ERR_INVALID_ARGUMENT, "sim is NULL");
    CHECK_FAILS(ns_sim_add_synapse(sim, 0, 0, "AMPA", &id), NS_ERR_INVALID_ARGUMENT, "no mechanism 'AMPA'", "ExpSyn",
           "Exp2Syn");
    CHECK_FAILS(ns_sim_add_synapse(sim, 0, 0, "hh", &id), NS_ERR_INVALID_ARGUMENT, "not a POINT_PROCESS", "'hh'");
    CHECK_FAILS(ns_sim_add_synapse(sim, 2, 0, "ExpSyn", &id), NS_ERR_INVALID_ARGUMENT, "cell 2");
    CHECK_FAILS(ns_sim_add_synapse(sim, 1, 7, "ExpSyn", &id), NS_ERR_INVALID_ARGUMENT, "compartment 7", "cell 1");
    int64_t syn = -1, src = -1, det = -1;
    CHECK_OK(ns_sim_add_synapse(sim, 1, 0, "Exp2Syn", &syn));
    CHECK(syn == 0);
    CHECK_FAILS(ns_sim_synapse_set(sim, syn, "tau", 1.0), NS_ERR_INVALID_ARGUMENT, "no parameter 'tau'", "tau1, tau2, e");
    CHECK_FAILS(ns_sim_synapse_set(sim, syn, "tau2", NAN), NS_ERR_INVALID_ARGUMENT, "tau2");
    CHECK_FAILS(ns_sim_synapse_set(sim, 5, "tau2", 1.0), NS_ERR_INVALID_ARGUMENT, "synapse 5");
    CHECK_FAILS(ns_sim_add_detector(sim, 0, 9, -20.0, &det), NS_ERR_INVALID_ARGUMENT, "compartment 9");
    CHECK_FAILS(ns_sim_add_detector(sim, 0, 0, NAN, &det), NS_ERR_INVALID_ARGUMENT, "threshold");
    CHECK_OK(ns_sim_add_detector(sim, 0, 0, -20.0, &det));
    const double bad[2] = {1.0, -2.0};
    CHECK_FAILS(ns_sim_add_spike_source(sim, bad, 2, &src), NS_ERR_INVALID_ARGUMENT, "time 1", "-2");
    CHECK_FAILS(ns_sim_add_spike_source(sim, NULL, 2, &src), NS_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_OK(ns_sim_add_spike_source(sim, bad, 1, &src));
    CHECK(det == 0 && src == 1);
    CHECK_FAILS(ns_sim_connect(sim, src, syn, 0.01, 0.0), NS_ERR_INVALID_ARGUMENT, "delay 0", "source 1", "synapse 0");
    CHECK_FAILS(ns_sim_connect(sim, src, syn, 0.01, -1.0), NS_ERR_INVALID_ARGUMENT, "delay -1");
    CHECK_FAILS(ns_sim_connect(sim, 4, syn, 0.01, 1.0), NS_ERR_INVALID_ARGUMENT, "source 4");
    CHECK_FAILS(ns_sim_connect(sim, src, 3, 0.01, 1.0), NS_ERR_INVALID_ARGUMENT, "synapse 3");
    CHECK_FAILS(ns_sim_connect(sim, src, syn, INFINITY, 1.0), NS_ERR_INVALID_ARGUMENT, "weight");
    CHECK_OK(ns_sim_connect(sim, det, syn, 0.01, 1.0));
    CHECK_FAILS(ns_sim_advance(sim, 1), NS_ERR_INVALID_ARGUMENT, "ns_sim_init");
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, 10));
    CHECK(ns_sim_source_spikes(sim, 7, NULL) == NULL);
    ns_sim_destroy(sim);
}

int main(void) {
    test_reference("ring8_ca1_ko20x-07.csv");
    test_reference("ring8_short_delays.csv");
    test_reference("random16_ca1.csv");
    ns_cell_t *cell = test_cylinder();
    if (cell) {
        test_delivery(cell);
        test_errors(cell);
    }
    ns_cell_destroy(cell);
    return check_summary("test_sim_network");
}
