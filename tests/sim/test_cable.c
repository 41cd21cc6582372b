/* The simulation loop against independent references:
 *   1. a passive single compartment under a current step against the
 *      backward-Euler recursion written out by hand;
 *   2. the steady state of a passive soma + branching dendrite against the
 *      dense conductance system solved by LAPACK (units of areas, axial
 *      conductances and the IClamp's 1e2/area);
 *   3. a Hodgkin-Huxley single compartment at a small step against a
 *      classical RK4 integration of the HH equations (spike times);
 *   4. NEURON's full node set against the minimal one (same voltages),
 *      OpenMP against sequential (bitwise), cells independent of neighbours;
 *   5. bad input: parameters, stimuli outside a cell, NaN in the state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cpu/policy.h"
#include "check.h"
#include "hh_state.h"
#include "lapack.h"
#include "neurosolve/neurosolve.h"

/* A soma (one point, radius 10 um) and a dendrite of `seg` points that forks
 * into two branches; pass seg = 0 for the soma alone. */
static ns_cell_t *make_cell(int seg, ns_junction_policy junctions, double Ra) {
    ns_morph_point pts[64];
    int n = 0;
    pts[n++] = (ns_morph_point){0, 0, 0, 10.0, NS_SWC_SOMA, -1, 1, 1};
    if (seg > 0) {
        int prev = 0;
        for (int k = 0; k < seg; ++k, ++n) {
            pts[n] = (ns_morph_point){10.0 + 20.0 * (k + 1), 0, 0, 1.0 - 0.05 * k, NS_SWC_BASAL, prev, n + 1, n + 1};
            prev = n;
        }
        const int fork = prev;
        for (int br = 0; br < 2; ++br)
            for (int k = 0; k < 3; ++k, ++n) {
                double y = (br ? 1 : -1) * 15.0 * (k + 1);
                pts[n] = (ns_morph_point){pts[fork].x + 15.0 * (k + 1), y, 0, 0.6, NS_SWC_BASAL,
                                          k == 0 ? fork : n - 1, n + 1, n + 1};
            }
    }
    ns_morph_t *m = NULL;
    ns_cell_t *c = NULL;
    if (ns_morph_from_points("test", pts, n, &m) != NS_OK) return NULL;
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.rule = seg > 0 ? NS_NSEG_FIXED_LENGTH : NS_NSEG_ONE; /* the soma alone: one compartment */
    o.max_length = 10.0;
    o.junctions = junctions;
    o.Ra = Ra;
    ns_discretize(m, &o, &c);
    ns_morph_destroy(m);
    return c;
}

static void passive_params(ns_sim_params *p, double g, double e) {
    ns_sim_params_init(p);
    CHECK_OK(ns_sim_params_set(p, "all.hh", 0));
    CHECK_OK(ns_sim_params_set(p, "all.pas", 1));
    CHECK_OK(ns_sim_params_set(p, "all.g_pas", g));
    CHECK_OK(ns_sim_params_set(p, "all.e_pas", e));
}

static void test_passive_single(void) {
    ns_cell_t *cell = make_cell(0, NS_JUNCTIONS_MINIMAL, 35.4);
    CHECK(cell != NULL);
    if (!cell) return;
    CHECK(ns_tree_size(ns_cell_tree(cell)) == 1);
    const double A = ns_cell_area(cell)[0];
    CHECK(check_rel(A, 400.0 * 3.14159265358979323846) < 1e-12); /* sphere_rep: cylinder L = diam = 20 um */
    ns_sim_params p;
    passive_params(&p, 2e-4, -70.0);
    p.v_init = -60.0;
    p.dt = 0.1;
    CHECK_OK(ns_sim_params_set(&p, "soma.cm", 1.5));
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, NULL, &sim));
    if (!sim) goto out;
    const double I = 0.05, del = 1.0, dur = 3.0; /* nA, ms */
    CHECK_OK(ns_sim_add_iclamp(sim, 0, 0, del, dur, I));
    int32_t site;
    CHECK_OK(ns_sim_add_recording(sim, 0, 0, &site));
    CHECK_OK(ns_sim_advance(sim, 100));
    const double *tr = ns_sim_traces(sim, NULL, NULL);
    /* backward Euler: (1e-3 cm/dt + g) dv = -g (v - e) + i 1e2/A, i on while
     * del <= t_mid < del + dur with t_mid = (k + 1/2) dt */
    double v = -60.0, worst = 0.0;
    for (int k = 0; k < 100; ++k) {
        const double tm = (k + 0.5) * 0.1;
        const double i = (tm >= del && tm < del + dur) ? I : 0.0;
        v += (-2e-4 * (v + 70.0) + i * 1e2 / A) / (1e-3 * 1.5 / 0.1 + 2e-4);
        worst = fmax(worst, fabs(tr[k + 1] - v));
    }
    CHECK_MSG(worst < 1e-10, "passive single compartment differs by %g mV", worst);
    CHECK(fabs(ns_sim_time(sim) - 10.0) < 1e-9);
out:
    ns_sim_destroy(sim);
    ns_cell_destroy(cell);
}

static void test_passive_steady(void) {
    ns_cell_t *cell = make_cell(6, NS_JUNCTIONS_MINIMAL, 150.0);
    CHECK(cell != NULL);
    if (!cell) return;
    const int n = ns_tree_size(ns_cell_tree(cell));
    const int32_t *parent = ns_tree_parent(ns_cell_tree(cell));
    const double *area = ns_cell_area(cell), *g = ns_cell_axial_conductance(cell);
    ns_sim_params p;
    const double gp = 5e-4, ep = -70.0, I = 0.2;
    passive_params(&p, gp, ep);
    p.v_init = ep;
    p.dt = 0.1;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, NULL, &sim));
    if (!sim) goto out;
    int32_t soma;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
    CHECK_OK(ns_sim_add_iclamp(sim, 0, soma, 0.0, 1e9, I));
    CHECK_OK(ns_sim_advance(sim, 20000)); /* 2 s: tau = 2 ms */
    double *v = malloc((size_t)n * sizeof *v);
    double *M = calloc((size_t)n * n, sizeof *M), *rhs = calloc((size_t)n, sizeof *rhs);
    int *ipiv = malloc((size_t)n * sizeof *ipiv);
    CHECK_OK(ns_sim_get_state(sim, 0, v));
    /* Kirchhoff at every node [uS, mV, nA]: membrane g_pas A 1e-2 (S/cm^2 x um^2
     * -> uS), axial 1/ri between each node and its parent, I at the soma */
    for (int i = 0; i < n; ++i) {
        const double gm = gp * area[i] * 1e-2;
        M[(size_t)i * n + i] += gm;
        rhs[i] += gm * ep + (i == soma ? I : 0.0);
        if (parent[i] >= 0) {
            const int q = parent[i];
            M[(size_t)i * n + i] += g[i];
            M[(size_t)q * n + q] += g[i];
            M[(size_t)q * n + i] -= g[i];
            M[(size_t)i * n + q] -= g[i];
        }
    }
    int one = 1, info = 0;
    dgesv_(&n, &one, M, &n, ipiv, rhs, &n, &info);
    CHECK(info == 0);
    double worst = 0.0;
    for (int i = 0; i < n; ++i) worst = fmax(worst, fabs(v[i] - rhs[i]));
    CHECK_MSG(worst < 1e-8, "steady state differs from the dense solve by %g mV (n = %d)", worst, n);
    CHECK(rhs[soma] - ep > 1.0); /* the test means something: the current depolarises */
    free(v);
    free(M);
    free(rhs);
    free(ipiv);
out:
    ns_sim_destroy(sim);
    ns_cell_destroy(cell);
}

/* hh.mod's rates (its PROCEDURE rates, without the TABLE): inf and tau of
 * m, h, n at v; q10 = 3^((celsius - 6.3)/10). */
typedef struct hh_rates {
    double minf, mtau, hinf, htau, ninf, ntau;
} hh_rates;
static double vtrap(double x, double y) { return fabs(x / y) < 1e-6 ? y * (1.0 - x / y / 2.0) : x / (exp(x / y) - 1.0); }
static void hh_rates_of(double v, double q10, hh_rates *r) {
    double a = .1 * vtrap(-(v + 40.0), 10.0), b = 4.0 * exp(-(v + 65.0) / 18.0);
    r->mtau = 1.0 / (q10 * (a + b)), r->minf = a / (a + b);
    a = .07 * exp(-(v + 65.0) / 20.0), b = 1.0 / (exp(-(v + 35.0) / 10.0) + 1.0);
    r->htau = 1.0 / (q10 * (a + b)), r->hinf = a / (a + b);
    a = .01 * vtrap(-(v + 55.0), 10.0), b = .125 * exp(-(v + 65.0) / 80.0);
    r->ntau = 1.0 / (q10 * (a + b)), r->ninf = a / (a + b);
}

/* Classical HH (squid, NEURON's hh.mod rates) with RK4: dv/dt in mV/ms for
 * currents in uA/cm^2 and cm in uF/cm^2. */
static void hh_deriv(const double *y, double istim, double q10, double *dy) {
    hh_rates r;
    hh_rates_of(y[0], q10, &r);
    const double ina = 120.0 * y[1] * y[1] * y[1] * y[2] * (y[0] - 50.0);
    const double ik = 36.0 * pow(y[3], 4) * (y[0] + 77.0);
    const double il = 0.3 * (y[0] + 54.3);
    dy[0] = (istim - ina - ik - il) / 1.0;
    dy[1] = (r.minf - y[1]) / r.mtau;
    dy[2] = (r.hinf - y[2]) / r.htau;
    dy[3] = (r.ninf - y[3]) / r.ntau;
}

static void test_hh_rk4(void) {
    ns_cell_t *cell = make_cell(0, NS_JUNCTIONS_MINIMAL, 35.4);
    if (!cell) return;
    const double A = ns_cell_area(cell)[0];
    const double dens = 15.0;               /* uA/cm^2 */
    const double amp = dens * A * 1e-5;     /* nA: uA/cm^2 x um^2 x 1e-8 cm^2/um^2 x 1e3 nA/uA */
    const double celsius = 16.3, q10 = 3.0; /* 3^((16.3 - 6.3)/10) */
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = celsius;
    p.usetable = 0;
    p.dt = 0.001;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, NULL, &sim));
    if (!sim) goto out;
    CHECK_OK(ns_sim_add_iclamp(sim, 0, 0, 1.0, 100.0, amp));
    CHECK_OK(ns_sim_advance(sim, ns_sim_steps_for(sim, 30.0)));
    int64_t ns;
    const double *sp = ns_sim_spikes(sim, 0, &ns);
    /* RK4, h = 0.0005 ms, the same -20 mV crossing rule */
    double y[4], k1[4], k2[4], k3[4], k4[4], tmp[4], ref[16];
    int nref = 0;
    hh_rates r0;
    hh_rates_of(-65.0, q10, &r0);
    y[0] = -65.0, y[1] = r0.minf, y[2] = r0.hinf, y[3] = r0.ninf;
    const double h = 0.0005;
    for (int k = 0; k < 60000 && nref < 16; ++k) {
        const double t = k * h;
        const double i1 = (t >= 1.0) ? dens : 0.0, i2 = (t + h / 2 >= 1.0) ? dens : 0.0,
                     i3 = (t + h >= 1.0) ? dens : 0.0;
        hh_deriv(y, i1, q10, k1);
        for (int j = 0; j < 4; ++j) tmp[j] = y[j] + h / 2 * k1[j];
        hh_deriv(tmp, i2, q10, k2);
        for (int j = 0; j < 4; ++j) tmp[j] = y[j] + h / 2 * k2[j];
        hh_deriv(tmp, i2, q10, k3);
        for (int j = 0; j < 4; ++j) tmp[j] = y[j] + h * k3[j];
        hh_deriv(tmp, i3, q10, k4);
        const double vold = y[0];
        for (int j = 0; j < 4; ++j) y[j] += h / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
        if (vold < -20.0 && y[0] >= -20.0) ref[nref++] = t + h * (-20.0 - vold) / (y[0] - vold);
    }
    CHECK_MSG(ns == nref && ns >= 3, "HH: %lld spikes, RK4 %d", (long long)ns, nref);
    for (int q = 0; q < ns && q < nref; ++q)
        CHECK_MSG(fabs(sp[q] - ref[q]) < 0.02, "HH spike %d: %.5f ms, RK4 %.5f ms", q, sp[q], ref[q]);
out:
    ns_sim_destroy(sim);
    ns_cell_destroy(cell);
}

static void run_population(ns_hines_method method, ns_junction_policy junctions, int n_cells, int threads,
                           double **v_out, int64_t *n_out, int64_t *spikes_out) {
    ns_cell_t *c1 = make_cell(6, junctions, 35.4), *c2 = make_cell(3, junctions, 100.0),
              *c3 = make_cell(0, junctions, 35.4);
    const ns_cell_t *shapes[3] = {c1, c2, c3};
    ns_sim_params p;
    ns_sim_params_init(&p);
    CHECK_OK(ns_sim_params_set(&p, "dend.hh", 0));
    CHECK_OK(ns_sim_params_set(&p, "dend.pas", 1));
    CHECK_OK(ns_sim_params_set(&p, "dend.g_pas", 1e-4));
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.method = method;
    o.threads = threads;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(3, shapes, n_cells, NULL, &p, &o, &sim));
    *v_out = NULL;
    if (sim) {
        for (int64_t c = 0; c < n_cells; ++c) {
            int32_t soma;
            CHECK_OK(ns_cell_locate(shapes[c % 3], 0, 0.5, &soma));
            CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 1.0 + 0.1 * (c % 7), 20.0, 0.2 + 0.05 * (c % 5)));
        }
        CHECK_OK(ns_sim_advance(sim, 400));
        CHECK_OK(ns_sim_advance(sim, 400));
        *n_out = ns_sim_compartments(sim);
        *v_out = malloc((size_t)*n_out * sizeof **v_out);
        /* soma voltages only (the node sets differ between the policies) */
        int64_t k = 0, spikes = 0;
        for (int64_t c = 0; c < n_cells; ++c) {
            double v[256];
            CHECK_OK(ns_sim_get_state(sim, c, v));
            (*v_out)[k++] = v[ns_sim_spike_compartment(sim, c)];
            int64_t cnt;
            ns_sim_spikes(sim, c, &cnt);
            spikes += cnt;
        }
        *n_out = k;
        *spikes_out = spikes;
    }
    ns_sim_destroy(sim);
    ns_cell_destroy(c1);
    ns_cell_destroy(c2);
    ns_cell_destroy(c3);
}

static void test_population(void) {
    double *a = NULL, *b = NULL, *c = NULL;
    int64_t na = 0, nb = 0, nc = 0, sa = 0, sb = 0, sc = 0;
    run_population(NS_HINES_SEQUENTIAL, NS_JUNCTIONS_MINIMAL, 61, 2, &a, &na, &sa);
    run_population(NS_HINES_OPENMP, NS_JUNCTIONS_MINIMAL, 61, 2, &b, &nb, &sb);
    run_population(NS_HINES_OPENMP, NS_JUNCTIONS_NEURON, 61, 2, &c, &nc, &sc);
    CHECK(a && b && c && na == 61 && nb == 61 && nc == 61);
    CHECK(sa > 61 && sa == sb && sa == sc); /* every cell spikes at least once */
    double same = 0.0, policy = 0.0;
    for (int64_t i = 0; a && b && c && i < na; ++i) {
        same = fmax(same, fabs(a[i] - b[i]));
        policy = fmax(policy, fabs(a[i] - c[i]));
    }
    CHECK_MSG(same == 0.0, "OpenMP differs from sequential by %g mV", same);
    CHECK_MSG(policy < 1e-8, "NEURON's node set differs from the minimal one by %g mV", policy);
    /* other thread counts give other lane blocks (sim/cpu/policy.c: widths
     * 8 to 1, 1 to 61 threads): every cell's result is the same bit for bit */
    const int counts[4] = {1, 3, 7, 61};
    for (int q = 0; q < 4; ++q) {
        double *d = NULL;
        int64_t nd = 0, sd = 0;
        run_population(NS_HINES_OPENMP, NS_JUNCTIONS_MINIMAL, 61, counts[q], &d, &nd, &sd);
        double diff = 0.0;
        for (int64_t i = 0; a && d && i < nd && i < na; ++i) diff = fmax(diff, fabs(a[i] - d[i]));
        CHECK_MSG(d && nd == na && sd == sa && diff == 0.0, "%d threads differ from sequential by %g mV",
                  counts[q], diff);
        free(d);
    }
    free(a);
    free(b);
    free(c);
}

static void test_bad_input(void) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    CHECK(ns_sim_params_set(&p, "soma.gnabar", 0.1) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "soma.gnabar") != NULL);
    CHECK(ns_sim_params_set(&p, "dendrite.cm", 1) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_params_set(&p, "all.cm", -1) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_params_set(&p, "dt", 0) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_params_set(&p, "Ra", -3) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_params_set(&p, "soma.hh", 2) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_params_set(&p, "celsius", NAN) == NS_ERR_INVALID_ARGUMENT);
    const char *text = "# comment\n\ncelsius = 20\ndend.g_pas = 2e-4  # trailing\napical.cm=2\n";
    CHECK_OK(ns_sim_params_parse(&p, text, strlen(text), "p.txt"));
    CHECK(p.celsius == 20 && p.region[NS_REGION_BASAL].g_pas == 2e-4 && p.region[NS_REGION_APICAL].g_pas == 2e-4 &&
          p.region[NS_REGION_SOMA].g_pas == 0.001 && p.region[NS_REGION_APICAL].cm == 2);
    const char *bad = "dt = 0.025\nsoma.gnabar_hh = abc\n";
    CHECK(ns_sim_params_parse(&p, bad, strlen(bad), "p.txt") == NS_ERR_PARSE);
    CHECK(strstr(ns_last_error(), "p.txt:2") != NULL);
    const char *bad2 = "dt = 0.025\nfoo = 1\n";
    CHECK(ns_sim_params_parse(&p, bad2, strlen(bad2), "q.txt") == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "q.txt:2") != NULL && strstr(ns_last_error(), "foo") != NULL);
    CHECK(ns_sim_params_read(&p, "/nonexistent/params.txt") == NS_ERR_IO);
    /* decimal only, as SWC files (issue 18: hex was read here, refused there) */
    const char *hex = "dt = 0.025\nRa = 0x10\n";
    CHECK(ns_sim_params_parse(&p, hex, strlen(hex), "h.txt") == NS_ERR_PARSE);
    CHECK(strstr(ns_last_error(), "h.txt:2: Ra: '0x10' is not a decimal number") != NULL);
    /* a step count that does not fit is refused before any run */
    int64_t steps = -1;
    CHECK(ns_sim_count_steps(100.0, 1e-300, &steps) == NS_ERR_INVALID_ARGUMENT && steps == 0);
    CHECK(strstr(ns_last_error(), "dt = 1e-300 ms") != NULL);
    CHECK(ns_sim_count_steps(NAN, 0.025, &steps) == NS_ERR_INVALID_ARGUMENT);
    CHECK_OK(ns_sim_count_steps(100.0, 0.025, &steps));
    CHECK(steps == 4000);
    ns_sim_params q;
    ns_sim_params_init(&q);
    q.dt = 1e-300;
    CHECK(ns_sim_params_check(&q) == NS_ERR_INVALID_ARGUMENT);

    ns_cell_t *cell = make_cell(2, NS_JUNCTIONS_MINIMAL, 35.4);
    if (!cell) return;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_t *sim = NULL;
    ns_sim_params_init(&p);
    p.region[NS_REGION_BASAL].cm = -1.0;
    CHECK(ns_sim_create(1, shapes, 2, NULL, &p, NULL, &sim) == NS_ERR_INVALID_ARGUMENT && !sim);
    ns_sim_params_init(&p);
    p.dt = -0.1;
    CHECK(ns_sim_create(1, shapes, 2, NULL, &p, NULL, &sim) == NS_ERR_INVALID_ARGUMENT && !sim);
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.method = NS_HINES_BRANCH_LEVEL;
    CHECK(ns_sim_create(1, shapes, 2, NULL, &p, &o, &sim) != NS_OK && !sim);
    ns_sim_options_init(&o);
    o.gpu_lanes = 3; /* not a power of two */
    CHECK(ns_sim_create(1, shapes, 2, NULL, &p, &o, &sim) == NS_ERR_INVALID_ARGUMENT && !sim);
    CHECK(strstr(ns_last_error(), "gpu_lanes = 3") != NULL);
    /* the device option: NS_DEVICE_CURRENT by default, below it refused, ignored on the CPU */
    ns_sim_options_init(&o);
    CHECK(o.device == NS_DEVICE_CURRENT);
    o.device = -2;
    CHECK(ns_sim_create(1, shapes, 2, NULL, &p, &o, &sim) == NS_ERR_INVALID_ARGUMENT && !sim);
    CHECK(strstr(ns_last_error(), "device = -2") != NULL);
    o.device = 7;
    o.backend = NS_BACKEND_CPU;
    CHECK_OK(ns_sim_create(1, shapes, 2, NULL, &p, &o, &sim));
    ns_sim_destroy(sim);
    sim = NULL;
    o.gpu_lanes = 64;
    CHECK(ns_sim_create(1, shapes, 2, NULL, &p, &o, &sim) == NS_ERR_INVALID_ARGUMENT && !sim);
    CHECK_OK(ns_sim_create(1, shapes, 2, NULL, &p, NULL, &sim));
    if (!sim) goto out;
    const int32_t n = ns_tree_size(ns_cell_tree(cell));
    CHECK(ns_sim_add_iclamp(sim, 0, n, 1, 1, 1) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "outside cell 0") != NULL);
    CHECK(ns_sim_add_iclamp(sim, 2, 0, 1, 1, 1) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_add_recording(sim, 0, -1, NULL) == NS_ERR_INVALID_ARGUMENT);
    int32_t node;
    CHECK(ns_cell_locate(cell, 99, 0.5, &node) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_cell_locate(cell, 0, 1.5, &node) == NS_ERR_INVALID_ARGUMENT);
    /* a current that overflows v (1e308 nA x 1e2/area is Inf): the run stops
     * and names cell 1 */
    CHECK_OK(ns_sim_add_iclamp(sim, 1, n - 1, 0.5, 10, 1e308));
    ns_status st = ns_sim_advance(sim, 100);
    CHECK(st == NS_ERR_NOT_FINITE);
    CHECK_MSG(strstr(ns_last_error(), "cell 1,") != NULL && strstr(ns_last_error(), "t = 0.5") != NULL, "%s",
              ns_last_error());
    CHECK(ns_sim_advance(sim, 1) == NS_ERR_NOT_FINITE); /* until ns_sim_init */
out:
    ns_sim_destroy(sim);
    ns_cell_destroy(cell);
}

/* Cell c's final state (n compartments: v, m, h, n) into x, and its spike
 * count added to *spikes. */
/* What a cell's result holds per compartment: v, m, h, n, and two of hh's
 * assigned variables (ina, from its current; minf, from its state: the fused
 * pass stores them in a call's last step, the split passes too) */
#define RESULT_VARS 6
static void cell_result(ns_sim_t *sim, int64_t c, int64_t n, double *x, int64_t *spikes) {
    CHECK_OK(hh_state(sim, c, (int32_t)n, x));
    CHECK_OK(ns_sim_get_model_var(sim, c, "ina_hh", x + 4 * n));
    CHECK_OK(ns_sim_get_model_var(sim, c, "minf_hh", x + 5 * n));
    int64_t cnt;
    ns_sim_spikes(sim, c, &cnt);
    *spikes += cnt;
}

/* A large cell split across threads (sim/cpu/policy.h, ns_cpu_split: its
 * membrane and gate passes over node ranges of every thread, its solve on
 * one): mouselight_AA0059 (5,500 compartments) with three allen_rbp4 cells,
 * at 2, 3 and 5 threads, against one thread, bit for bit (traces at 24 sites
 * of the large cell, every cell's final state, spikes); and a fault in the
 * split cell or in a small one beside it (an IClamp of 1e308 nA) reported as
 * with one thread. */
/* the runs' length: 10 ms (the clamps start at 1-3.5 ms: four spikes or more) */
#define SPLIT_STEPS 400

typedef struct split_run {
    double *traces, *state;
    int64_t samples, n_state, spikes;
    char error[512];
} split_run;

/* n_big copies of the large cell (1: cells {small, big, small, small}; 3:
 * {small, big, small, big, big, small}, split into a block of 2 lanes and
 * one of 1 at 4 and 5 threads) */
/* `first`: steps of a first ns_sim_advance call before the rest of the
 * SPLIT_STEPS (0: one call); check_every: the option (steps between the NaN/Inf
 * checks of v) */
static void run_split_case(int threads, int n_big, int64_t fault_cell, double amp, int64_t first, int32_t check_every,
                           split_run *out) {
    memset(out, 0, sizeof *out);
    ns_morph_t *m1 = NULL, *m2 = NULL;
    ns_cell_t *big = NULL, *small = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/mouselight_AA0059_rootlast.swc", NULL, &m1));
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/allen_rbp4_485574832.swc", NULL, &m2));
    if (m1) CHECK_OK(ns_discretize(m1, NULL, &big));
    if (m2) CHECK_OK(ns_discretize(m2, NULL, &small));
    if (!big || !small) goto out;
    const ns_cell_t *shapes[2] = {big, small};
    const int32_t shape_of[2][6] = {{1, 0, 1, 1}, {1, 0, 1, 0, 0, 1}};
    const int32_t *cell_shape = shape_of[n_big > 1];
    const int64_t cells = 3 + n_big;
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.method = NS_HINES_OPENMP;
    o.threads = threads;
    o.record_every = 2;
    o.check_every = check_every;
    CHECK_OK(ns_sim_create(2, shapes, cells, cell_shape, &p, &o, &sim));
    if (!sim) goto out;
    const int64_t big_comps = ns_sim_compartments(sim) - 3 * 259;
    CHECK_MSG(big_comps == 5500 * n_big, "mouselight_AA0059: %lld compartments, expected 5,500 x %d",
              (long long)big_comps, n_big);
    /* the decision under test: one copy split at 2, 3, 5 threads, not at
     * 1; three copies (17,277 compartments) at 4 and 5 threads, in blocks
     * of 2 and 1 lanes (the widest the count allows, sim/cpu/step.c) */
    const int split = n_big == 1 ? threads > 1 : threads == 4 || threads == 5;
    CHECK(ns_cpu_split(5500, ns_sim_compartments(sim), threads) == split);
    int lanes[NS_CPU_LANES_MAX + 1] = {0};
    for (int64_t q = 0; q < ns_sim_state_parts(sim); ++q) {
        ns_sim_part part;
        CHECK_OK(ns_sim_state_part(sim, q, &part));
        if (part.cells > 0 && cell_shape[part.cell[0]] == 0 && part.stride <= NS_CPU_LANES_MAX) lanes[part.stride]++;
    }
    CHECK_MSG(n_big == 1 ? lanes[1] == 1 : !split || (lanes[2] == 1 && lanes[1] == 1 && lanes[4] == 0),
              "large cells in blocks of 1/2/4 lanes: %d %d %d", lanes[1], lanes[2], lanes[4]);
    for (int64_t c = 0; c < cells; ++c) {
        int32_t soma;
        CHECK_OK(ns_cell_locate(shapes[cell_shape[c]], 0, 0.5, &soma));
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 1.0 + 0.5 * (double)c, 30.0, c == fault_cell ? amp : 0.3));
    }
    for (int32_t node = 0; node < 5500; node += 239) CHECK_OK(ns_sim_add_recording(sim, 1, node, NULL));
    ns_status st = first > 0 ? ns_sim_advance(sim, first) : NS_OK;
    if (st == NS_OK) st = ns_sim_advance(sim, SPLIT_STEPS - first);
    if (st != NS_OK) {
        snprintf(out->error, sizeof out->error, "%s", ns_last_error());
        goto out;
    }
    int32_t sites;
    const double *tr = ns_sim_traces(sim, &out->samples, &sites);
    CHECK(sites == 24);
    out->traces = malloc((size_t)(out->samples * sites) * sizeof *out->traces);
    out->n_state = RESULT_VARS * (5500 * n_big + 3 * 259);
    out->state = malloc((size_t)out->n_state * sizeof *out->state);
    if (!out->traces || !out->state) goto out;
    memcpy(out->traces, tr, (size_t)(out->samples * sites) * sizeof *tr);
    double *x = out->state;
    for (int64_t c = 0; c < cells; ++c) {
        const int64_t n = cell_shape[c] == 0 ? 5500 : 259;
        cell_result(sim, c, n, x, &out->spikes);
        x += RESULT_VARS * n;
    }
out:
    ns_sim_destroy(sim);
    ns_cell_destroy(big);
    ns_cell_destroy(small);
    ns_morph_destroy(m1);
    ns_morph_destroy(m2);
}

static void split_cases(int n_big) {
    split_run one, many;
    run_split_case(1, n_big, 1, 1.0, 0, 1, &one);
    CHECK(one.traces && one.spikes >= 4);
    /* 5 threads: more threads than blocks (3), which the thread partition
     * must size its scratch for (an overflow the sanitizer build catches) */
    /* three copies: 3 threads (not split: 1-lane blocks against one
     * thread's 2 + 1) and 4 (split blocks of 2 and 1) */
    static const int thread_counts[2][3] = {{2, 3, 5}, {3, 4, 0}};
    for (int q = 0; q < 3 && thread_counts[n_big > 1][q] && one.traces; ++q) {
        const int threads = thread_counts[n_big > 1][q];
        run_split_case(threads, n_big, 1, 1.0, 0, 1, &many);
        CHECK_MSG(many.traces && many.samples == one.samples && many.spikes == one.spikes,
                  "split cell, %d threads: %lld spikes, %lld with one thread", threads, (long long)many.spikes,
                  (long long)one.spikes);
        int same = many.traces && many.state && many.samples == one.samples;
        for (int64_t i = 0; same && i < one.samples * 24; ++i) same = many.traces[i] == one.traces[i];
        for (int64_t i = 0; same && i < one.n_state; ++i)
            same = memcmp(&many.state[i], &one.state[i], sizeof(double)) == 0;
        CHECK_MSG(same, "split cell, %d threads: traces or state differ from one thread", threads);
        free(many.traces);
        free(many.state);
    }
    free(one.traces);
    free(one.state);
    /* a fault in the split cell, then in a small cell while the large one
     * runs split: the same step, cell and node as one thread's */
    const int fault_threads = n_big > 1 ? 4 : 3;
    for (int64_t cell = n_big > 1 ? 3 : 1; cell >= 0; cell -= n_big > 1 ? 3 : 1) {
        run_split_case(1, n_big, cell, 1e308, 0, 1, &one);
        run_split_case(fault_threads, n_big, cell, 1e308, 0, 1, &many);
        char want[32];
        snprintf(want, sizeof want, "cell %lld,", (long long)cell);
        CHECK_MSG(one.error[0] && strstr(one.error, want) != NULL, "fault with one thread: '%s'", one.error);
        CHECK_MSG(strcmp(one.error, many.error) == 0, "fault: '%s' with one thread, '%s' with %d", one.error,
                  many.error, fault_threads);
        /* the faulty step the last of a call: a split block finds a NaN
         * of its node ranges after the step's last barrier (sim/cpu/step.c) */
        const char *at = strstr(one.error, "(step ");
        const long long fault_step = at ? atoll(at + 6) : 0;
        CHECK_MSG(fault_step > 1 && fault_step < SPLIT_STEPS, "fault step %lld ('%s')", fault_step, one.error);
        if (fault_step > 1 && fault_step < SPLIT_STEPS) {
            free(many.traces);
            free(many.state);
            run_split_case(fault_threads, n_big, cell, 1e308, fault_step, 1, &many);
            CHECK_MSG(strcmp(one.error, many.error) == 0, "fault at a call's end: '%s' with one thread, '%s' with %d",
                      one.error, many.error, fault_threads);
            /* v checked every 1,000 steps only: the bad pivots find the
             * fault in the whole-block solve (blocks of 1 and 2 lanes) and
             * in the split one alike, the same step and node. hh's slope is
             * its conductance (docs/mechanisms.md, "The conductance"): finite
             * at the step after v's Inf (the gates' TABLE clamps v), whose
             * solve makes v NaN; that reaches d through the gates a step later */
            char first[sizeof many.error] = "";
            for (int q = 0; q < 2; ++q) {
                free(many.traces);
                free(many.state);
                run_split_case(q ? fault_threads : 1, n_big, cell, 1e308, 0, 1000, &many);
                const char *at2 = strstr(many.error, "(step ");
                CHECK_MSG(at2 && atoll(at2 + 6) == fault_step + 2 && strstr(many.error, "v = nan"),
                          "fault by the pivots, %d threads: '%s' (v checked at every step: '%s')",
                          q ? fault_threads : 1, many.error, one.error);
                if (q) CHECK_MSG(strcmp(first, many.error) == 0, "fault by the pivots: '%s' with one thread, '%s' "
                                 "with %d", first, many.error, fault_threads);
                else snprintf(first, sizeof first, "%s", many.error);
            }
        }
        free(one.traces);
        free(one.state);
        free(many.traces);
        free(many.state);
    }
}

/* one large cell (a block of 1 lane), and three (blocks of 2 and 1: the
 * fault in cell 3 is in the 2-lane block) */
static void test_split_cell(void) {
    split_cases(1);
    split_cases(3);
}

/* The node order (sim/cpu/policy.h, ns_cpu_reorder) and the masked passes
 * (ns_cpu_masked): a short-run cell in blocks of every width, and as a split
 * cell, against one thread's 8-lane blocks bit for bit (traces at every node
 * of one cell, every cell's final state, spikes). */
typedef struct order_run {
    int width; /* the blocks' width (-1: several) */
    double *traces, *state;
    int64_t samples, spikes;
} order_run;

static void order_case(const char *file, int32_t n_expected, int64_t cells, int threads, int64_t steps,
                       order_run *out) {
    ns_morph_t *m = NULL;
    ns_cell_t *cell = NULL;
    ns_sim_t *sim = NULL;
    memset(out, 0, sizeof *out);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, file);
    CHECK_OK(ns_swc_read(path, NULL, &m));
    if (m) CHECK_OK(ns_discretize(m, NULL, &cell));
    if (!cell) goto out;
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.method = NS_HINES_OPENMP;
    o.threads = threads;
    CHECK_OK(ns_sim_create(1, shapes, cells, NULL, &p, &o, &sim));
    if (!sim) goto out;
    const int64_t n = ns_sim_compartments(sim) / cells;
    CHECK_MSG(n == n_expected, "%s: %lld compartments, expected %d", file, (long long)n, (int)n_expected);
    if (n != n_expected) goto out;
    for (int64_t q = 0; q < ns_sim_state_parts(sim); ++q) {
        ns_sim_part part;
        CHECK_OK(ns_sim_state_part(sim, q, &part));
        if (out->width == 0) out->width = (int)part.stride;
        if (out->width != (int)part.stride) out->width = -1;
    }
    int32_t soma;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
    for (int64_t c = 0; c < cells; ++c)
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 1.0 + 0.3 * (double)c, 40.0, 0.2 + 0.02 * (double)c));
    const int32_t every = n > 200 ? n / 97 : 1; /* the recorded nodes of the last cell */
    int32_t sites = 0;
    for (int32_t node = 0; node < n; node += every, ++sites) CHECK_OK(ns_sim_add_recording(sim, cells - 1, node, NULL));
    CHECK_OK(ns_sim_advance(sim, steps / 2));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 2));
    int32_t got;
    const double *tr = ns_sim_traces(sim, &out->samples, &got);
    CHECK(got == sites);
    out->traces = malloc((size_t)(out->samples * sites) * sizeof *out->traces);
    out->state = malloc((size_t)(cells * RESULT_VARS * n) * sizeof *out->state);
    if (!out->traces || !out->state || !tr) goto out;
    memcpy(out->traces, tr, (size_t)(out->samples * sites) * sizeof *tr);
    for (int64_t c = 0; c < cells; ++c) cell_result(sim, c, n, out->state + RESULT_VARS * n * c, &out->spikes);
out:
    ns_sim_destroy(sim);
    ns_cell_destroy(cell);
    ns_morph_destroy(m);
}

/* whether b equals a bit for bit (traces of `sites` sites, state of cells x n) */
static int order_same(const order_run *a, const order_run *b, int64_t sites, int64_t state) {
    int same = a->traces && b->traces && a->state && b->state && a->samples == b->samples && a->spikes == b->spikes;
    for (int64_t i = 0; same && i < a->samples * sites; ++i) same = memcmp(&a->traces[i], &b->traces[i], 8) == 0;
    for (int64_t i = 0; same && i < state; ++i) same = memcmp(&a->state[i], &b->state[i], 8) == 0;
    return same;
}

static void test_node_order(void) {
    /* fly_OP1_diadem_axon (147 compartments, 99 with hh in 49 runs) is
     * reordered (test_policy asserts the decisions) */
    CHECK(ns_cpu_reorder(99, 49));
    /* fly x 16 at 1, 4, 8 and 16 threads: blocks of 8, 4, 2 and 1 lanes */
    order_run one, many;
    order_case("fly_OP1_diadem_axon.swc", 147, 16, 1, 1200, &one);
    CHECK_MSG(one.width == 8 && one.spikes >= 16, "one thread: width %d, %lld spikes", one.width,
              (long long)one.spikes);
    /* a build without OpenMP runs one thread whatever the request (8-lane
     * blocks: the widths are then not checked, the values still are) */
    static const int threads[3] = {16, 8, 4}, widths[3] = {1, 2, 4};
    int openmp = 1;
    for (int q = 0; q < 3 && one.traces; ++q) {
        order_case("fly_OP1_diadem_axon.swc", 147, 16, threads[q], 1200, &many);
        if (q == 0 && many.width == 8) {
            openmp = 0;
            printf("test_cable: no OpenMP in this build: the blocks' widths at 4-16 threads not checked\n");
        }
        CHECK_MSG(!openmp || many.width == widths[q], "%d threads: blocks of width %d, expected %d", threads[q],
                  many.width, widths[q]);
        CHECK_MSG(order_same(&one, &many, 147, 16 * RESULT_VARS * 147), "%d threads (width %d): traces, state or spikes differ "
                  "from one thread", threads[q], many.width);
        free(many.traces);
        free(many.state);
    }
    free(one.traces);
    free(one.state);
    /* dense_Animal_2_Basal_2 alone: reordered on one thread (long fused
     * segments), split (its node ranges in place, the fused passes over the
     * instances, mech/blocks.c) on two */
    CHECK(ns_cpu_split(38580, 38580, 2) && !ns_cpu_split(38580, 38580, 1));
    order_case("dense_Animal_2_Basal_2.swc", 38580, 1, 1, 240, &one);
    order_case("dense_Animal_2_Basal_2.swc", 38580, 1, 2, 240, &many);
    CHECK_MSG(one.width == 1 && many.width == 1 && one.spikes >= 1, "dense: widths %d %d, %lld spikes", one.width,
              many.width, (long long)one.spikes);
    CHECK_MSG(order_same(&one, &many, (38580 + 396) / 397, RESULT_VARS * 38580),
              "dense_Animal_2_Basal_2: reordered (1 thread) and split (2 threads) differ");
    free(one.traces);
    free(one.state);
    free(many.traces);
    free(many.state);
}

/* Spike times by either convention (spike_rule.h) against the recorded soma
 * trace: NetCon's time is the end of the first step with v > threshold plus
 * 1e-10 ms (NEURON 9.0.2's NetCon.record, validation/neuron_sim_compare.py
 * --spike-times netcon), the interpolated one lies inside that step. */
static void test_spike_conventions(void) {
    ns_cell_t *cell = make_cell(4, NS_JUNCTIONS_MINIMAL, 35.4);
    if (!cell) return;
    const double dt = 0.025, thr = -20.0;
    const int64_t steps = 1200;
    double *tr[2] = {NULL, NULL}, *sp[2] = {NULL, NULL};
    int64_t nsp[2] = {0, 0};
    for (int netcon = 0; netcon < 2; ++netcon) {
        ns_sim_params p;
        ns_sim_params_init(&p);
        CHECK_OK(ns_sim_params_set(&p, "netcon_spikes", netcon));
        const ns_cell_t *shapes[1] = {cell};
        ns_sim_t *sim = NULL;
        CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, NULL, &sim));
        if (!sim) continue;
        CHECK_OK(ns_sim_add_iclamp(sim, 0, 0, 1.0, 100.0, 0.5));
        CHECK_OK(ns_sim_add_recording(sim, 0, ns_sim_spike_compartment(sim, 0), NULL));
        CHECK_OK(ns_sim_advance(sim, steps));
        int64_t samples = 0;
        int32_t sites = 0;
        const double *t = ns_sim_traces(sim, &samples, &sites);
        const double *s = ns_sim_spikes(sim, 0, &nsp[netcon]);
        tr[netcon] = malloc((size_t)samples * sizeof(double));
        sp[netcon] = malloc((size_t)(nsp[netcon] + 1) * sizeof(double));
        for (int64_t k = 0; k < samples && tr[netcon]; ++k) tr[netcon][k] = t[k * sites];
        for (int64_t k = 0; k < nsp[netcon] && sp[netcon]; ++k) sp[netcon][k] = s[k];
        CHECK(samples == steps + 1);
        ns_sim_destroy(sim);
    }
    if (tr[0] && tr[1] && sp[0] && sp[1]) {
        int64_t n = 0;
        for (int64_t k = 1; k <= steps; ++k) {
            CHECK(tr[0][k] == tr[1][k]); /* the rule changes the reported times only */
            if (!(tr[1][k - 1] > thr) && tr[1][k] > thr) {
                const double tk = k * dt;
                if (n < nsp[1])
                    CHECK_MSG(fabs(sp[1][n] - (tk + 1e-10)) < 1e-9, "NetCon spike %lld: %.12f, step end %.12f + 1e-10",
                              (long long)n, sp[1][n], tk);
                if (n < nsp[0])
                    CHECK_MSG(sp[0][n] > tk - dt && sp[0][n] <= tk && sp[0][n] < sp[1][n],
                              "interpolated spike %lld at %.9f outside its step (%.3f, %.3f]", (long long)n, sp[0][n],
                              tk - dt, tk);
                ++n;
            }
        }
        CHECK_MSG(n >= 3 && nsp[0] == n && nsp[1] == n, "%lld crossings, %lld interpolated, %lld NetCon spikes",
                  (long long)n, (long long)nsp[0], (long long)nsp[1]);
    }
    ns_sim_params p;
    ns_sim_params_init(&p);
    CHECK(ns_sim_params_set(&p, "netcon_spikes", 2) == NS_ERR_INVALID_ARGUMENT);
    /* v_init above the threshold: NetCon reports 1e-10 ms (NEURON 9.0.2: a soma with hh,
     * finitialize(0), threshold -20: NetCon.record gives [1e-10]); the interpolated rule nothing */
    for (int netcon = 0; netcon < 2; ++netcon) {
        ns_sim_params_init(&p);
        p.v_init = 0.0;
        p.netcon_spikes = netcon;
        const ns_cell_t *shapes[1] = {cell};
        ns_sim_t *sim = NULL;
        CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, NULL, &sim));
        if (!sim) continue;
        CHECK_OK(ns_sim_advance(sim, 40));
        int64_t n = 0;
        const double *s = ns_sim_spikes(sim, 0, &n);
        if (netcon) CHECK_MSG(n >= 1 && s[0] == 1e-10, "v_init 0: %lld NetCon spikes, first %g", (long long)n, n ? s[0] : -1.0);
        else CHECK_MSG(n == 0 || s[0] > 0.0, "v_init 0: interpolated spike at %g", n ? s[0] : -1.0);
        ns_sim_destroy(sim);
    }
    for (int k = 0; k < 2; ++k) {
        free(tr[k]);
        free(sp[k]);
    }
    ns_cell_destroy(cell);
}

/* A network on a cell split across threads: its block runs whole, by one
 * thread, at each step beside the others (sim/cpu/step.c, cpu_steps), and
 * gives one thread's results bit for bit: mouselight_AA0059 (5,500
 * compartments, split at 2 threads) with an ExpSyn driven by a spike train,
 * and a detector. */
static void split_network_run(int threads, double *trace, int64_t *spikes) {
    ns_morph_t *m = NULL;
    ns_cell_t *big = NULL;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/mouselight_AA0059_rootlast.swc", NULL, &m));
    if (m) CHECK_OK(ns_discretize(m, NULL, &big));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.method = NS_HINES_OPENMP;
    o.threads = threads;
    const ns_cell_t *shapes[1] = {big};
    if (big) CHECK_OK(ns_sim_create(1, shapes, 1, NULL, &p, &o, &sim));
    if (sim) {
        const int32_t soma = ns_sim_spike_compartment(sim, 0);
        const double times[3] = {1.0, 4.0, 7.0};
        int64_t syn = -1, src = -1, det = -1;
        CHECK_OK(ns_sim_add_synapse(sim, 0, soma, "ExpSyn", &syn));
        CHECK_OK(ns_sim_add_spike_source(sim, times, 3, &src));
        CHECK_OK(ns_sim_connect(sim, src, syn, 0.5, 1.0));
        CHECK_OK(ns_sim_add_detector(sim, 0, soma, -20.0, &det));
        CHECK_OK(ns_sim_add_recording(sim, 0, soma, NULL));
        CHECK_OK(ns_sim_add_recording(sim, 0, 5499, NULL));
        CHECK_OK(ns_sim_init(sim));
        CHECK_OK(ns_sim_advance(sim, 400));
        int64_t samples = 0;
        const double *tr = ns_sim_traces(sim, &samples, NULL);
        CHECK(samples == 401);
        if (tr && samples == 401) memcpy(trace, tr, 401 * 2 * sizeof *trace);
        ns_sim_source_spikes(sim, det, spikes);
    }
    ns_sim_destroy(sim);
    ns_cell_destroy(big);
    ns_morph_destroy(m);
}

static void test_split_network(void) {
    static double one[802], two[802];
    int64_t s1 = -1, s2 = -2;
    CHECK(ns_cpu_split(5500, 5500, 2) == 1); /* the cell is split at 2 threads */
    split_network_run(1, one, &s1);
    split_network_run(2, two, &s2);
    CHECK_MSG(s1 == s2 && s1 > 0, "split cell with a network: %lld spikes with one thread, %lld with two",
              (long long)s1, (long long)s2);
    CHECK_MSG(memcmp(one, two, sizeof one) == 0, "split cell with a network: traces differ from one thread's");
}

static void check_bytes(double got, double want, int line) {
    CHECK_MSG(got == want, "line %d: %.17g bytes per compartment-step, want %g", line, got, want);
}

/* ns_sim_step_min_bytes over a real simulation, counted by hand (the model:
 * sim/policy.h): hh and pas in a one-compartment soma, 152 bytes (v 16, the
 * matrix 24, pas 16, hh 80, ena and ek 16); pas alone, 56. */
static void test_step_bytes(void) {
    ns_cell_t *cell = make_cell(0, NS_JUNCTIONS_MINIMAL, 35.4);
    const ns_cell_t *shapes[1] = {cell};
    ns_sim_params p;
    ns_sim_params_init(&p);
    CHECK_OK(ns_sim_params_set(&p, "all.hh", 1));
    CHECK_OK(ns_sim_params_set(&p, "all.pas", 1));
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, shapes, 3, NULL, &p, NULL, &sim));
    check_bytes(ns_sim_step_min_bytes(sim), 152.0, __LINE__);
    ns_sim_destroy(sim);
    passive_params(&p, 1e-4, -65.0);
    CHECK_OK(ns_sim_create(1, shapes, 3, NULL, &p, NULL, &sim));
    check_bytes(ns_sim_step_min_bytes(sim), 56.0, __LINE__);
    ns_sim_destroy(sim);
    CHECK(ns_sim_step_min_bytes(NULL) == 0.0);
    ns_cell_destroy(cell);
}

int main(void) {
    test_passive_single();
    test_passive_steady();
    test_hh_rk4();
    test_spike_conventions();
    test_population();
    test_split_cell();
    test_split_network();
    test_node_order();
    test_bad_input();
    test_step_bytes();
    return check_summary("test_cable");
}
