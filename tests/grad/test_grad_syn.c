/* Gradients with synapses, weights and events (src/grad/grad_events.c,
 * docs/gradients.md "Synapses, weights and events") against the fourth-order
 * central differences of the simulation's own loop (ns_sim with the weight or
 * the synapse's parameter changed: an independent path), with event times
 * that the differences must not move (asserted: every detector's spikes the
 * same). Two cases on the bundled CA1 cell (hh and pas):
 *   one cell: an ExpSyn and an Exp2Syn driven by two spike trains (three
 *   connections), the parameters the weights (one connection; those onto a
 *   type) and tau, tau1, tau2, e;
 *   a chain of three cells: cell 0 spikes from a clamp, its detector drives
 *   an ExpSyn on cell 1, whose spikes drive an Exp2Syn on cell 2, which a
 *   train also reaches through an ExpSyn; the loss over all cells' traces,
 *   the parameters weights and time constants of cells 1 and 2;
 *   a library's point process built here, whose NET_RECEIVE is not linear in
 *   its state, with two events of one step at one instance (the replay of the
 *   fields between them in the reverse step), its gmax a parameter.
 * The forward pass is the simulation's (traces within 1e-9 mV); checkpoints every 7 steps
 * on two threads give the same bits. */
#include "check.h"
#include "load_cell.h"
#include "test_tmpdir.h"
#include "neurosolve/nmodl.h"
#include "mech_build.h"

#define RA0 100.0

/* hh with its TABLE off (the exact rates), weaker in the dendrites */
static const char *BASE_MODEL = "all.insert = hh pas\nglobal.usetable_hh = 0\nall.g_pas = 1e-4\nall.e_pas = -66\n"
                                "dend.gnabar_hh = 0.04\ndend.gkbar_hh = 0.012\n";

#include "grad_check.h"

enum { MAXC = 8, MAXS = 8 };

/* a network: its connections' weights and its synapses' parameters (ExpSyn: tau, -, e; Exp2Syn: tau1,
 * tau2, e; SatSyn: tau, gmax, e) */
typedef struct netv {
    double w[MAXC];
    double sp[MAXS][3];
} netv;

typedef struct netcase {
    const char *name;
    int n_cells;
    int64_t steps;
    int n_syns;
    const char *type[MAXS];
    int syn_cell[MAXS], syn_at[MAXS]; /* at: 0 the soma, 1 a dendrite (setup's some_dend) */
    int n_conns;
    int conn_src[MAXC], conn_syn[MAXC]; /* src: -1, -2 the trains A, B; else a detector at that cell's soma */
    double delay[MAXC];
    int clamp_cell;
    netv base;
} netcase;

static const double TRAIN_A[] = {0.3, 1.1, 2.35}, TRAIN_B[] = {0.8, 1.6};

typedef struct built {
    ns_sim_model_t *m;
    ns_sim_t *sim;
    int64_t det[MAXC]; /* the detectors (sources) */
    int n_det;
} built;

static int build(const setup *su, int32_t dend, const netcase *nc, const netv *nv, built *b) {
    memset(b, 0, sizeof *b);
    const variant base = {NULL, RA0, 1.0, 1.0, -65.0};
    b->sim = make_sim(su, su->cell, nc->n_cells, &base, &b->m);
    if (!b->sim) return -1;
    ns_sim_t *sim = b->sim;
    CHECK_OK(ns_sim_add_iclamp(sim, nc->clamp_cell, 0, 0.5, 3.0, 1.0));
    for (int64_t c = 0; c < nc->n_cells; ++c)
        for (int k = 0; k < 3; ++k) CHECK_OK(ns_sim_add_recording(sim, c, su->rec[k], NULL));
    int64_t syn[MAXS], trains[2];
    for (int s = 0; s < nc->n_syns; ++s) {
        CHECK_OK(ns_sim_add_synapse(sim, nc->syn_cell[s], nc->syn_at[s] ? dend : 0, nc->type[s], &syn[s]));
        const int two = !strcmp(nc->type[s], "Exp2Syn"), sat = !strcmp(nc->type[s], "SatSyn");
        CHECK_OK(ns_sim_synapse_set(sim, syn[s], two ? "tau1" : "tau", nv->sp[s][0]));
        if (two || sat) CHECK_OK(ns_sim_synapse_set(sim, syn[s], two ? "tau2" : "gmax", nv->sp[s][1]));
        CHECK_OK(ns_sim_synapse_set(sim, syn[s], "e", nv->sp[s][2]));
    }
    CHECK_OK(ns_sim_add_spike_source(sim, TRAIN_A, 3, &trains[0]));
    CHECK_OK(ns_sim_add_spike_source(sim, TRAIN_B, 2, &trains[1]));
    int64_t det_of[MAXC];
    for (int c = 0; c < nc->n_cells; ++c) det_of[c] = -1;
    for (int j = 0; j < nc->n_conns; ++j) {
        const int src = nc->conn_src[j];
        if (src >= 0 && det_of[src] < 0) {
            CHECK_OK(ns_sim_add_detector(sim, src, 0, -20.0, &det_of[src]));
            b->det[b->n_det++] = det_of[src];
        }
        CHECK_OK(ns_sim_connect(sim, src >= 0 ? det_of[src] : trains[-src - 1], syn[nc->conn_syn[j]], nv->w[j],
                                nc->delay[j]));
    }
    return 0;
}

static void unbuild(built *b) {
    ns_sim_destroy(b->sim);
    ns_sim_model_destroy(b->m);
}

static double *targets(int64_t n) {
    double *t = malloc((size_t)n * 2 * sizeof *t);
    for (int64_t q = 0; q < n; ++q) {
        t[q] = -60.0 + 8.0 * sin(0.05 * (double)q);
        t[n + q] = 1.0 + (double)(q % 3);
    }
    return t;
}

/* the simulation's loss (and, with spikes, every detector's spikes: counts then times) */
static double sim_loss_net(const setup *su, int32_t dend, const netcase *nc, const netv *nv, double *spikes,
                           int64_t *n_spikes, double **traces_out) {
    built b;
    if (build(su, dend, nc, nv, &b)) return NAN;
    CHECK_OK(ns_sim_init(b.sim));
    CHECK_OK(ns_sim_advance(b.sim, nc->steps));
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(b.sim, &samples, &sites);
    const int64_t n = samples * sites;
    double *tw = targets(n);
    double L = 0.0;
    for (int64_t q = 0; q < n; ++q) L += tw[n + q] * (tr[q] - tw[q]) * (tr[q] - tw[q]);
    if (traces_out) {
        *traces_out = malloc((size_t)n * sizeof **traces_out);
        memcpy(*traces_out, tr, (size_t)n * sizeof *tr);
    }
    int64_t k = 0;
    for (int d = 0; d < b.n_det; ++d) {
        int64_t cnt = 0;
        const double *sp = ns_sim_source_spikes(b.sim, b.det[d], &cnt);
        spikes[k++] = (double)cnt;
        for (int64_t q = 0; q < cnt && k < 64; ++q) spikes[k++] = sp[q];
    }
    *n_spikes = k;
    free(tw);
    unbuild(&b);
    return L;
}

/* a parameter: on cell `cell`, the grad's (where, name); the connections (mask) or synapses
 * (mask, parameter k) it moves in the differences */
typedef struct pcase {
    int64_t cell;
    const char *where, *name;
    unsigned conns, syns;
    int k;
    double rel_h;
} pcase;

static void moved(const netcase *nc, const pcase *pc, double h, netv *nv) {
    *nv = nc->base;
    for (int j = 0; j < nc->n_conns; ++j)
        if (pc->conns >> j & 1u) nv->w[j] += h;
    for (int s = 0; s < nc->n_syns; ++s)
        if (pc->syns >> s & 1u) nv->sp[s][pc->k] += h;
}

static void run_case(const setup *su, int32_t dend, const netcase *nc, const pcase *pcs, int np) {
    printf("%s:\n", nc->name);
    double spikes0[64], spk[64];
    int64_t n0 = 0, n1 = 0;
    double *tr_sim = NULL;
    const double L_sim = sim_loss_net(su, dend, nc, &nc->base, spikes0, &n0, &tr_sim);
    for (int64_t k = 0, d = 0; k < n0; ++d) {
        printf("  detector %lld: %g spikes\n", (long long)d, spikes0[k]);
        k += 1 + (int64_t)spikes0[k];
    }
    built b;
    if (build(su, dend, nc, &nc->base, &b)) return;
    CHECK_OK(ns_sim_init(b.sim));
    ns_grad_t *g = NULL;
    CHECK_OK(ns_grad_create(b.sim, NULL, &g));
    int32_t idx[16];
    for (int p = 0; g && p < np; ++p) CHECK_OK(ns_grad_add_param(g, pcs[p].cell, pcs[p].where, pcs[p].name, &idx[p]));
    const int64_t n = ns_grad_samples(g, nc->steps) * ns_grad_sites(g);
    double *tw = targets(n), *tr = malloc((size_t)n * sizeof *tr), L = 0.0, grad[16] = {0};
    const ns_grad_loss loss = {tw, tw + n, NULL};
    if (g) CHECK_OK(ns_grad_run(g, nc->steps, &loss, &L, grad, tr));
    /* checkpoints every 7 steps (segments recomputed with their events) on two threads: the same bits */
    ns_grad_options o;
    ns_grad_options_init(&o);
    o.checkpoint_every = 7;
    o.threads = 2;
    ns_grad_t *g7 = NULL;
    CHECK_OK(ns_grad_create(b.sim, &o, &g7));
    double L7 = 0.0, grad7[16] = {0};
    for (int p = 0; g7 && p < np; ++p) CHECK_OK(ns_grad_add_param(g7, pcs[p].cell, pcs[p].where, pcs[p].name, NULL));
    if (g7) CHECK_OK(ns_grad_run(g7, nc->steps, &loss, &L7, grad7, NULL));
    CHECK_MSG(L7 == L && !memcmp(grad7, grad, sizeof grad), "%s: checkpoints every 7 steps, 2 threads: the same bits",
              nc->name);
    ns_grad_destroy(g7);
    double worst = 0.0;
    for (int64_t q = 0; q < n && tr_sim; ++q) worst = fmax(worst, fabs(tr[q] - tr_sim[q]));
    printf("  forward: traces within %.2e mV of the simulation's, loss %.15g vs %.15g; peak v per cell:", worst, L,
           L_sim);
    for (int c = 0; c < nc->n_cells && tr_sim; ++c) {
        double peak = -1e9;
        for (int64_t q = 3 * c; q < n; q += 3 * nc->n_cells) peak = fmax(peak, tr_sim[q]);
        printf(" %.1f", peak);
    }
    printf(" mV (at the soma)\n");
    CHECK_MSG(worst <= 1e-9, "%s: the forward pass is the simulation's: %.3g mV", nc->name, worst);
    CHECK_MSG(fabs(L - L_sim) <= 1e-12 * fabs(L_sim), "%s: the loss", nc->name);
    for (int p = 0; g && p < np; ++p) {
        double value = 0.0;
        CHECK_OK(ns_grad_get_param(g, idx[p], &value));
        const double h = pcs[p].rel_h * (value != 0.0 ? fabs(value) : 1.0); /* e = 0: an absolute step */
        double Lpm[4];
        int same = 1;
        for (int sgn = 0; sgn < 4; ++sgn) {
            netv nv;
            moved(nc, &pcs[p], (sgn & 1 ? 1.0 : -1.0) * (sgn & 2 ? 2.0 * h : h), &nv);
            Lpm[sgn] = sim_loss_net(su, dend, nc, &nv, spk, &n1, NULL);
            same &= n1 == n0 && !memcmp(spk, spikes0, (size_t)n0 * sizeof *spk);
        }
        CHECK_MSG(same, "%s: %s at %s: the differences keep every spike time", nc->name, pcs[p].name, pcs[p].where);
        const double fd = (8.0 * (Lpm[1] - Lpm[0]) - (Lpm[3] - Lpm[2])) / (12.0 * h);
        const double rel = fabs(grad[p] - fd) / fmax(fabs(fd), 1e-300);
        printf("  cell %lld %-14s at %-8s adjoint % .12e  differences % .12e  relative error %.2e (step %g)\n",
               (long long)pcs[p].cell, pcs[p].name, pcs[p].where, grad[p], fd, rel, pcs[p].rel_h);
        CHECK_MSG(rel <= 1e-6, "%s: %s at %s: relative error %.3g", nc->name, pcs[p].name, pcs[p].where, rel);
    }
    ns_grad_destroy(g);
    unbuild(&b);
    free(tw);
    free(tr);
    free(tr_sim);
}

static const netcase ONE = {
    "one cell, ExpSyn and Exp2Syn from two trains", 1, 160, 2, {"ExpSyn", "Exp2Syn"}, {0, 0}, {1, 1},
    3, {-1, -2, -1}, {0, 1, 1}, {1.0, 0.5, 0.7}, 0,
    {{0.004, 0.003, 0.002}, {{1.7, 0.0, 0.0}, {0.4, 2.5, -5.0}}}};
static const pcase ONE_P[] = {
    {0, "conn:0", "weight", 1u, 0u, 0, 1e-3},     {0, "Exp2Syn", "weight", 6u, 0u, 0, 1e-3},
    {0, "all", "tau_ExpSyn", 0u, 1u, 0, 1e-3},    {0, "all", "tau1_Exp2Syn", 0u, 2u, 0, 1e-3},
    {0, "syn:1", "tau2_Exp2Syn", 0u, 2u, 1, 1e-3}, {0, "all", "e_Exp2Syn", 0u, 2u, 2, 1e-3},
    {0, "all", "e_ExpSyn", 0u, 1u, 2, 1e-2}};

static const netcase CHAIN = {
    "a chain of three cells (detectors), a train onto the last", 3, 400, 3, {"ExpSyn", "Exp2Syn", "ExpSyn"},
    {1, 2, 2}, {0, 1, 0}, 3, {0, 1, -1}, {0, 1, 2}, {1.0, 1.5, 0.6}, 0,
    {{0.08, 0.01, 0.003}, {{2.0, 0.0, 0.0}, {0.5, 3.0, 0.0}, {1.2, 0.0, -10.0}}}};
static const pcase CHAIN_P[] = {
    {1, "conn:0", "weight", 1u, 0u, 0, 1e-4},    {2, "conn:1", "weight", 2u, 0u, 0, 1e-4},
    {2, "all", "weight", 6u, 0u, 0, 1e-4},       {1, "all", "tau_ExpSyn", 0u, 1u, 0, 1e-4},
    {2, "all", "tau2_Exp2Syn", 0u, 2u, 1, 1e-4}};

/* A library's point process whose NET_RECEIVE is not linear in its state (a saturating
 * conductance), reached by two connections from one train with the same delay: two events of one
 * step at one instance, whose transposes need the fields between them (replayed) */
static const char *SATSYN = "NEURON {\n POINT_PROCESS SatSyn\n RANGE tau, e, gmax, i\n NONSPECIFIC_CURRENT i\n}\n"
                            "PARAMETER {\n tau = 2 (ms)\n e = 0 (mV)\n gmax = 0.01 (uS)\n}\n"
                            "ASSIGNED {\n v (mV)\n i (nA)\n}\nSTATE { g (uS) }\nINITIAL { g = 0 }\n"
                            "BREAKPOINT {\n SOLVE s METHOD cnexp\n i = g * (v - e)\n}\n"
                            "DERIVATIVE s { g' = -g / tau }\n"
                            "NET_RECEIVE (w (uS)) { g = g + w * (1 - g / gmax) }\n";
static const netcase SAT = {
    "one cell, a library's saturating synapse, two events at once", 1, 200, 1, {"SatSyn"}, {0}, {1},
    3, {-1, -1, -2}, {0, 0, 0}, {1.0, 1.0, 0.5}, 0, {{0.004, 0.003, 0.005}, {{1.5, 0.009, 0.0}}}};
static const pcase SAT_P[] = {{0, "conn:1", "weight", 2u, 0u, 0, 1e-3},     {0, "all", "weight", 7u, 0u, 0, 1e-3},
                              {0, "all", "tau_SatSyn", 0u, 1u, 0, 1e-3},  {0, "syn:0", "gmax_SatSyn", 0u, 1u, 1, 1e-3},
                              {0, "all", "e_SatSyn", 0u, 1u, 2, 1e-2}};

int main(void) {
    (void)central_difference; /* grad_check.h's, not used here */
    (void)sim_loss;
    setup su;
    const int32_t dend = setup_init(&su, "ca1_ko20x-07.swc", RA0, 0.0, BASE_MODEL, NULL, 1);
    if (dend < 0) return check_summary("test_grad_syn");
    run_case(&su, dend, &ONE, ONE_P, (int)(sizeof ONE_P / sizeof *ONE_P));
    run_case(&su, dend, &CHAIN, CHAIN_P, (int)(sizeof CHAIN_P / sizeof *CHAIN_P));
    if (tmpdir_make("ns_grad_syn") == 0) {
        FILE *f = fopen(tmp("satsyn.mod"), "w");
        CHECK(f != NULL);
        if (f) fputs(SATSYN, f), fclose(f);
        int skip = 0;
        ns_mech_library_t *lib = f ? test_mech_from_files(tmp("satsyn.mod"), "libsat.so", &skip) : NULL;
        if (lib) {
            su.lib = lib;
            run_case(&su, dend, &SAT, SAT_P, (int)(sizeof SAT_P / sizeof *SAT_P));
            su.lib = NULL;
            ns_mech_library_close(lib);
        }
        tmpdir_remove();
    }
    /* what is refused, by name: a Poisson source */
    {
        built b;
        netcase nc = ONE;
        if (build(&su, dend, &nc, &nc.base, &b) == 0) {
            int64_t pois = -1, syn = -1;
            CHECK_OK(ns_sim_add_poisson_source(b.sim, 20.0, 0.0, 5.0, 3, &pois));
            CHECK_OK(ns_sim_add_synapse(b.sim, 0, 0, "ExpSyn", &syn));
            CHECK_OK(ns_sim_connect(b.sim, pois, syn, 0.001, 1.0));
            ns_grad_t *g = NULL;
            CHECK(ns_grad_create(b.sim, NULL, &g) == NS_ERR_UNSUPPORTED && !g);
            CHECK(strstr(ns_last_error(), "Poisson") != NULL);
            unbuild(&b);
        }
    }
    setup_free(&su);
    return check_summary("test_grad_syn");
}
