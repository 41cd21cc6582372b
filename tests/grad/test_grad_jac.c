/* The translator's derivative code (ns_mech_desc.vjp_*, src/nmodl/nmodl_diff.c)
 * against an independent reference that does not limit the comparison: the
 * built-in hh's, pas's, ExpSyn's and Exp2Syn's (and their NET_RECEIVE's: ABI 8's
 * vjp_net_receive, the weight an input) Jacobians (row r: the vector-Jacobian product of
 * the unit vector e_r; each product also checked to accumulate, l_in +=) of INITIAL, current() and
 * state() at one instance, against Richardson-extrapolated central
 * differences of the forward entry point itself (h, h/2: error O(h^4), steps
 * 1e-3 relative, rounding near 1e-13), to 1e-9 of the row's largest entry;
 * with hh's TABLE off (the exact rates) and on (the interpolation's slope).
 * (derivimplicit: test_grad_bbp.c, through a whole run.) And what cannot be
 * differentiated is refused by FILE:LINE and construct;
 * libraries built for mechanism ABI 3 and 4 (whose derivatives were
 * Jacobians) load, without derivatives, and for 5 and 6 without the block
 * products (vjp_*_n), which give the same bits as the per-instance ones. */
#include "check.h"
#include "load_cell.h"
#include "mech/builtin/builtin.h"
#include "nmodl_driver.h"
#include "test_tmpdir.h"
#include "grad_check.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"

static const ns_mech_desc *builtin(const char *name) {
    const ns_mech_catalogue *cat = ns_mech_builtin();
    for (int k = 0; k < cat->n; ++k)
        if (!strcmp(cat->mechs[k]->name, name)) return cat->mechs[k];
    return NULL;
}

/* the phase's outputs at inputs x = (v, fields, globals; NET_RECEIVE, phase 3: then the weight):
 * fields, then (current) rhs and d */
static void eval(comp *c, inst *m, int phase, const double *x, double *out) {
    const ns_mech_desc *d = m->d;
    c->v = x[0];
    for (int f = 0; f < d->n_fields; ++f) m->fields[f] = x[1 + f];
    for (int q = 0; q < d->n_globals; ++q) m->globals[q] = x[1 + d->n_fields + q];
    c->rhs = c->d = 0.0;
    if (phase == 0) d->init(&m->p);
    else if (phase == 1) d->current(&m->p);
    else if (phase == 2) d->state(&m->p);
    else d->net_receive(&m->p, 0, x[1 + d->n_fields + d->n_globals]);
    for (int f = 0; f < d->n_fields; ++f) out[f] = m->fields[f];
    out[d->n_fields] = c->rhs;
    out[d->n_fields + 1] = c->d;
}

/* the worst column error of mechanism m's phase at x, relative to each row's largest entry */
static double check_phase(comp *c, inst *m, int phase, const double *x0) {
    const ns_mech_desc *d = m->d;
    const int nf = d->n_fields, n_in = 1 + nf + d->n_globals + (phase == 3), n_out = nf + (phase == 1 ? 2 : 0);
    double x[80], op[80], om[80], J[80 * 80], R[80 * 80], D1[80], out0[80];
    void (*vjp)(ns_mech_ppack *, int, const double *, double *) =
        phase == 0 ? d->vjp_init : phase == 1 ? d->vjp_current : phase == 2 ? d->vjp_state : NULL;
    CHECK((phase == 3 ? d->vjp_net_receive != NULL : vjp != NULL) && n_in <= 80);
    if ((phase == 3 ? !d->vjp_net_receive : !vjp) || n_in > 80) return 1.0;
    memcpy(x, x0, (size_t)n_in * sizeof *x);
    eval(c, m, phase, x, out0);
    memcpy(x, x0, (size_t)n_in * sizeof *x); /* the entry point reads the inputs where the phase does */
    c->v = x[0];
    for (int f = 0; f < nf; ++f) m->fields[f] = x[1 + f];
    for (int q = 0; q < d->n_globals; ++q) m->globals[q] = x[1 + nf + q];
    int accumulates = 1;
    for (int o = 0; o < n_out; ++o) { /* row o = e_o^T J; a second product adds the same again */
        double e[82] = {0}, li[80] = {0};
        e[o] = 1.0;
        if (phase == 3) d->vjp_net_receive(&m->p, 0, x0[n_in - 1], e, li);
        else vjp(&m->p, 0, e, li);
        memcpy(J + o * n_in, li, (size_t)n_in * sizeof *li);
        if (phase == 3) d->vjp_net_receive(&m->p, 0, x0[n_in - 1], e, li);
        else vjp(&m->p, 0, e, li);
        for (int j = 0; j < n_in; ++j) accumulates &= li[j] == 2 * J[o * n_in + j];
    }
    CHECK_MSG(accumulates, "%s phase %d: the product adds to l_in", d->name, phase);
    for (int j = 0; j < n_in; ++j) {
        const int is_switch = j > nf && j <= nf + d->n_globals && strncmp(d->global_names[j - 1 - nf], "usetable", 8) == 0;
        const double h0 = 1e-3 * fmax(fabs(x0[j]), 1e-2);
        for (int pass = 0; pass < 2; ++pass) {
            const double h = pass ? h0 / 2 : h0;
            memcpy(x, x0, (size_t)n_in * sizeof *x);
            x[j] = x0[j] + h;
            eval(c, m, phase, x, op);
            x[j] = x0[j] - h;
            eval(c, m, phase, x, om);
            for (int o = 0; o < n_out; ++o) {
                const double dd = (op[o] - om[o]) / (2 * h);
                if (pass) R[o * n_in + j] = (4 * dd - D1[o]) / 3;
                else D1[o] = dd;
            }
        }
        if (is_switch) /* a switch: not differentiable, and its column is 0 */
            for (int o = 0; o < n_out; ++o) R[o * n_in + j] = 0.0;
    }
    double worst = 0.0;
    for (int o = 0; o < n_out; ++o) {
        double big = 0.0;
        for (int j = 0; j < n_in; ++j) big = fmax(big, fabs(R[o * n_in + j]));
        for (int j = 0; j < n_in; ++j) {
            const double e = fabs(J[o * n_in + j] - R[o * n_in + j]) / (big > 0 ? big : 1.0);
            if (!(e <= 1e-9))
                printf("    %s phase %d: d(out %d)/d(in %d) = %.15g, differences %.15g\n", d->name, phase, o, j,
                       J[o * n_in + j], R[o * n_in + j]);
            worst = e <= worst ? worst : isnan(e) ? INFINITY : e; /* NaN counts as worst */
        }
    }
    return worst;
}

/* d's Jacobians (its FUNCTION_TABLEs ft where it has them) */
static void check_desc(const ns_mech_desc *d, double usetable, const ns_mech_ftable *ft) {
    comp c;
    memset(&c, 0, sizeof c);
    c.celsius = 6.3;
    c.e[ION_NA] = 50.0;
    c.e[ION_K] = -77.0;
    CHECK(d != NULL);
    if (!d || add_mech(&c, d)) return;
    const char *name = d->name;
    inst *m = &c.m[0];
    m->p.ftable = ft;
    if (d->n_globals) m->globals[0] = usetable; /* hh: usetable_hh */
    if (d->table_update) d->table_update(&m->p);
    c.v = -52.3; /* away from vtrap's switch at -40 and -55 */
    d->init(&m->p);
    double x[80];
    x[0] = -52.3;
    for (int f = 0; f < d->n_fields; ++f) x[1 + f] = m->fields[f];
    for (int f = d->n_params + d->n_assigned; f < d->n_fields; ++f) /* states off the steady state (a synapse's: on) */
        x[1 + f] = d->kind == NS_MECH_POINT ? 0.013 * (f + 1) : x[1 + f] * 1.07;
    for (int q = 0; q < d->n_globals; ++q) x[1 + d->n_fields + q] = m->globals[q];
    x[1 + d->n_fields + d->n_globals] = 0.0021; /* NET_RECEIVE's weight [uS] */
    m->p.t = 0.0125;
    for (int phase = 0; phase < (d->net_receive ? 4 : 3); ++phase) {
        const double w = check_phase(&c, m, phase, x);
        printf("  %-3s usetable %g phase %d: worst column error %.2e of the row's largest entry\n", name, usetable,
               phase, w);
        /* a point process's conductance (I(v + .001) - I(v)) / .001 * 1e2/area is small beside I, whose
         * rounding the differences of it divide by .001 h: 1e-7 there (the rhs row within 1e-9) */
        const double tol = d->kind == NS_MECH_POINT && phase == 1 ? 1e-7 : 1e-9;
        CHECK_MSG(w <= tol, "%s phase %d: the Jacobian vs Richardson differences: %.3g", name, phase, w);
    }
    free_comp(&c);
}

static void check_mech(const char *name, double usetable) { check_desc(builtin(name), usetable, NULL); }

/* test/ftab.mod's FUNCTION_TABLEs (one argument by abscissae, two by ranges; v = -52.3 and kq = 2.5
 * inside an interval of each): the lookups' slopes in the products */
static void check_ftab(void) {
    static const double X[4] = {-90, -60, -40, 30}, Y1[4] = {0.01, 0.2, 0.6, 0.99};
    static const double Y2[6] = {2.0, 2.5, 3.0, 1.0, 1.5, 4.0};
    const ns_mech_ftable ft[2] = {{1, {4}, {X}, {0}, {0}, Y1}, {2, {2, 3}, {NULL, NULL}, {-100, 1}, {50, 3}, Y2}};
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(MECH_DIR "/test/ftab.mod", "libftab.so", &skip);
    const ns_mech_desc *d = lib ? ns_mech_library_get(lib, 0) : NULL;
    if (d) check_desc(d, 0.0, ft);
    ns_mech_library_close(lib);
}

/* The block products (vjp_*_n, ABI 7) against the per-instance ones: NI
 * instances at distinct v and states, at nodes node_begin + i and through a
 * node_index, adjoints of every output: the same bits, added to l_in. */
enum { NI = 7, NODES = 11 };
static int ci_seen; /* the constant-ion products compared */
static void check_block(const char *name, double usetable) {
    const ns_mech_desc *d = builtin(name);
    CHECK(d && d->vjp_init_n && d->vjp_current_n && d->vjp_state_n);
    if (!d || !d->vjp_init_n || !d->vjp_current_n || !d->vjp_state_n) return;
    /* the GLOBALs' rows, then 4 per USEION (ABI 8's ion lanes: e, ci, co, i) */
    const int nf = d->n_fields, ng = d->n_globals + 4 * d->n_ions, n_in = 1 + nf + ng;
    double v[NODES], rhs[NODES] = {0}, dd[NODES] = {0}, e[2][NODES], z[NODES] = {0}, glob[4] = {usetable};
    double *field[64], store[64 * NI], table[2048] = {0};
    for (int x = 0; x < NODES; ++x) {
        v[x] = -70.0 + 4.1 * x;
        e[0][x] = 50.0;
        e[1][x] = -77.0;
    }
    for (int f = 0; f < nf; ++f) field[f] = store + f * NI;
    ns_mech_ion_view ions[2] = {{e[0], z, z, z, z, NULL}, {e[1], z, z, z, z, NULL}};
    static const int node_index[NI] = {10, 2, 3, 7, 0, 5, 9};
    for (int path = 0; path < 2; ++path) {
        ns_mech_ppack p = {NI, path ? 0 : 3, path ? node_index : NULL, 0.0125, 0.025, 6.3, v, rhs, dd, NULL, field,
                           glob, table, ions, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                           NULL, {0}};
        if (d->table_update) d->table_update(&p);
        for (int i = 0; i < NI * nf; ++i) store[i] = 0.0;
        for (int f = 0; f < d->n_params; ++f)
            for (int i = 0; i < NI; ++i) field[f][i] = d->field_defaults[f] * (1.0 + 0.05 * i);
        d->init(&p);
        for (int f = d->n_params + d->n_assigned; f < nf; ++f)
            for (int i = 0; i < NI; ++i) field[f][i] *= 1.0 + 0.03 * (i + 1);
        for (int phase = 0; phase < 3; ++phase) {
            void (*one)(ns_mech_ppack *, int, const double *, double *) =
                phase == 0 ? d->vjp_init : phase == 1 ? d->vjp_current : d->vjp_state;
            void (*blk)(ns_mech_ppack *, const double *, double *, double *, double *) =
                phase == 0 ? d->vjp_init_n : phase == 1 ? d->vjp_current_n : d->vjp_state_n;
            const int n_out = nf + (phase == 1 ? 2 : 0);
            double lo[66 * NI], li[66], lv[NODES], lf[64 * NI], lg[16 * NI], rv[NODES], rf[64 * NI], rg[16 * NI];
            CHECK(ng <= 16 && n_in <= 66);
            if (ng > 16 || n_in > 66) return;
            for (int q = 0; q < n_out * NI; ++q) lo[q] = (q % 5 == 3) ? 0.0 : sin(0.7 * q + phase);
            for (int x = 0; x < NODES; ++x) lv[x] = rv[x] = 0.25 * x;
            for (int q = 0; q < nf * NI; ++q) lf[q] = rf[q] = cos(0.3 * q);
            for (int q = 0; q < ng * NI; ++q) lg[q] = rg[q] = 0.5;
            blk(&p, lo, lv, lf, lg);
            for (int i = 0; i < NI; ++i) {
                double lo1[66];
                for (int o = 0; o < n_out; ++o) lo1[o] = lo[o * NI + i];
                memset(li, 0, sizeof li);
                one(&p, i, lo1, li);
                rv[path ? node_index[i] : 3 + i] += li[0];
                for (int f = 0; f < nf; ++f) rf[f * NI + i] += li[1 + f];
                for (int q = 0; q < ng; ++q) rg[q * NI + i] += li[1 + nf + q];
            }
            int same = !memcmp(lv, rv, sizeof lv) && !memcmp(lf, rf, (size_t)nf * NI * sizeof *lf) &&
                       !memcmp(lg, rg, (size_t)ng * NI * sizeof *lg);
            CHECK_MSG(same, "%s usetable %g phase %d %s: the block's product is the per-instance one", name, usetable,
                      phase, path ? "node_index" : "node_begin");
            /* the constant-ion product (ABI 9): the same bits on every row but the ion values' (e, ci, co),
             * which it leaves as they were */
            void (*blkc)(ns_mech_ppack *, const double *, double *, double *, double *) =
                phase == 0 ? d->vjp_init_n_ci : phase == 1 ? d->vjp_current_n_ci : d->vjp_state_n_ci;
            if (!blkc) continue;
            for (int x = 0; x < NODES; ++x) rv[x] = 0.25 * x;
            for (int q = 0; q < nf * NI; ++q) rf[q] = cos(0.3 * q);
            for (int q = 0; q < ng * NI; ++q) rg[q] = 0.5;
            blkc(&p, lo, rv, rf, rg);
            int ion_rows = 1, rest = 1;
            for (int q = 0; q < ng; ++q) {
                const int ion_value = q >= d->n_globals && (q - d->n_globals) % 4 != 3;
                for (int i = 0; i < NI; ++i)
                    if (ion_value) ion_rows &= rg[q * NI + i] == 0.5;
                    else rest &= !memcmp(&rg[q * NI + i], &lg[q * NI + i], sizeof *rg);
            }
            rest &= !memcmp(lv, rv, sizeof lv) && !memcmp(lf, rf, (size_t)nf * NI * sizeof *lf);
            CHECK_MSG(ion_rows && rest, "%s usetable %g phase %d %s: the constant-ion product (its ion rows %s, the "
                      "rest %s)", name, usetable, phase, path ? "node_index" : "node_begin", ion_rows ? "kept" : "written",
                      rest ? "the same bits" : "different");
            ci_seen++;
        }
    }
}

/* A leak gated by a state, with a GLOBAL: its C from the translator, built
 * twice at -O0 (fast) into libraries that say ABI 7 and 6; the gradient of
 * a whole run through the block products (7) and the per-instance ones (6,
 * grad.c's fallback) is the same bits. Returns 0, 77 without a compiler. */
static const char *LK = "NEURON {\n SUFFIX lk\n NONSPECIFIC_CURRENT i\n RANGE g\n GLOBAL e\n}\n"
                        "PARAMETER {\n g = 0.002 (S/cm2)\n e = -60 (mV)\n}\nASSIGNED {\n v (mV)\n i (mA/cm2)\n}\n"
                        "STATE { a }\nINITIAL { a = 0.4 }\nBREAKPOINT {\n SOLVE s METHOD cnexp\n i = g * a * (v - e)\n}\n"
                        "DERIVATIVE s { a' = (1 / (1 + exp(-(v + 55) / 4)) - a) / 2 }\n";
static int build_lk(const char *c_text, int abi, const char *so) {
    FILE *f = fopen(tmp("lk.c"), "w");
    if (!f) return -1;
    for (const char *c = c_text; *c;) { /* the version the library says it was built for */
        const char *at = strstr(c, "NS_MECH_ABI_VERSION");
        if (!at) {
            fputs(c, f);
            break;
        }
        fprintf(f, "%.*s%d", (int)(at - c), c, abi);
        c = at + strlen("NS_MECH_ABI_VERSION");
    }
    fprintf(f, "static const ns_mech_desc *const mechs_[] = {&nsm_lk_desc};\n"
               "static const ns_mech_catalogue cat_ = {%d, 1, mechs_};\n"
               "const ns_mech_catalogue *ns_mech_catalogue_v1(void) { return &cat_; }\n", abi);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cc -O0 -DNSM_NO_CLONES -shared -fPIC -I%s/../../include -I%s -o %s %s -lm 2>&1", NS_TEST_DATA,
             tmp(""), so, tmp("lk.c"));
    return system(cmd) != 0 ? 77 : 0;
}
static void check_fallback(void) {
    ns_nmodl_t *mod = NULL;
    char *h = NULL, *c = NULL;
    CHECK_OK(ns_nmodl_parse_string(LK, "lk.mod", &mod));
    if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_HEADER, &h));
    if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_C, &c));
    FILE *f = h ? fopen(tmp("lk.h"), "w") : NULL;
    if (f) fputs(h, f), fclose(f);
    double grad[2][2] = {{0}}, L[2] = {0};
    for (int v = 0; v < 2 && f && c; ++v) {
        const char *so = tmp(v ? "liblk6.so" : "liblk7.so");
        const int r = build_lk(c, v ? 6 : 7, so);
        if (r == 77) {
            printf("SKIP the whole run through ABI 6 and 7: no C compiler\n");
            break;
        }
        ns_mech_library_t *lib = NULL;
        CHECK_OK(ns_mech_library_open(so, &lib));
        const ns_mech_desc *d = lib ? ns_mech_library_get(lib, 0) : NULL;
        CHECK_MSG(d && d->vjp_state && (v ? !d->vjp_state_n : d->vjp_state_n != NULL), "ABI %d: block products %s",
                  v ? 6 : 7, v ? "absent" : "present");
        setup su;
        if (!lib || setup_init(&su, "ca1_ko20x-07.swc", 100.0, 0.0, "all.insert = lk\n", lib, 30) < 0) {
            ns_mech_library_close(lib);
            break;
        }
        const variant base = {NULL, 100.0, 1.0, 1.0, -65.0};
        ns_sim_model_t *m = NULL;
        ns_sim_t *sim = make_sim(&su, su.cell, 1, &base, &m);
        ns_grad_t *g = NULL;
        if (sim) {
            add_io(sim, &su, 1);
            CHECK_OK(ns_grad_create(sim, NULL, &g));
        }
        if (g) {
            int32_t k = -1;
            CHECK_OK(ns_grad_add_param(g, 0, "all", "g_lk", &k));
            CHECK_OK(ns_grad_add_param(g, 0, "all", "e_lk", &k));
            const ns_grad_loss loss = {su.target, su.weight, NULL};
            CHECK_OK(ns_grad_run(g, su.steps, &loss, &L[v], grad[v], NULL));
        }
        ns_grad_destroy(g);
        ns_sim_destroy(sim);
        ns_sim_model_destroy(m);
        setup_free(&su);
        ns_mech_library_close(lib);
        if (v)
            CHECK_MSG(L[0] == L[1] && grad[0][0] == grad[1][0] && grad[0][1] == grad[1][1] && grad[0][0] != 0.0 &&
                          grad[0][1] != 0.0,
                      "the whole run's gradient through ABI 7's block products and ABI 6's per-instance ones: "
                      "%.17g %.17g, %.17g %.17g", grad[0][0], grad[1][0], grad[0][1], grad[1][1]);
    }
    ns_nmodl_free(h);
    ns_nmodl_free(c);
    ns_nmodl_destroy(mod);
}

static const char *NS_MOD = "NEURON { POINT_PROCESS ns NONSPECIFIC_CURRENT i }\nASSIGNED { v i }\nSTATE { g }\n"
                            "BREAKPOINT { i = g * v }\nNET_RECEIVE (w) {\n g = g + w\n net_send(1, 1)\n}\n";
static const char *WATCH_MOD = "NEURON { POINT_PROCESS wt NONSPECIFIC_CURRENT i }\nASSIGNED { v i }\n"
                               "STATE { g }\nBREAKPOINT { i = g * v }\nNET_RECEIVE (w) {\n WATCH (v > -20) 2\n"
                               " g = g + w\n}\n";
/* ABI 10: a density mechanism with derivative code gets its products on the device too (the CUDA
 * file's kernels and launches, the descriptor's cuda_vjp_* where built with CUDA); a point process
 * none (tests/nmodl/test_nmodl_cuda.c runs them against the host's on a GPU) */
static void check_device_products(void) {
    static const char *const src[2] = {
        "NEURON { SUFFIX dx RANGE g }\nPARAMETER { g = 0.5 }\nSTATE { s }\nBREAKPOINT { SOLVE st METHOD cnexp }\n"
        "DERIVATIVE st { s' = -g * s }\n",
        "NEURON { POINT_PROCESS px RANGE tau }\nPARAMETER { tau = 2 }\nSTATE { g }\nBREAKPOINT { SOLVE st METHOD cnexp }\n"
        "DERIVATIVE st { g' = -g / tau }\nNET_RECEIVE(w) { g = g + w }\n"};
    for (int k = 0; k < 2; ++k) {
        ns_nmodl_t *mod = NULL;
        char *c = NULL, *cu = NULL;
        CHECK_OK(ns_nmodl_parse_string(src[k], k ? "px.mod" : "dx.mod", &mod));
        if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_C, &c));
        if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_CUDA, &cu));
        const char *ph[3] = {"init", "current", "state"};
        for (int q = 0; q < 3; ++q) {
            char want[96];
            snprintf(want, sizeof want, "extern \"C\" int nsm_%s_cuda_vjp_%s(", k ? "px" : "dx", ph[q]);
            CHECK_MSG(cu && (strstr(cu, want) != NULL) == !k, "%s: the device's %s product %s", k ? "px" : "dx", ph[q],
                      k ? "written" : "missing");
        }
        CHECK_MSG(c && (strstr(c, "nsm_dx_cuda_vjp_init, nsm_dx_cuda_vjp_current, nsm_dx_cuda_vjp_state") != NULL) == !k,
                  "%s: the descriptor's device products", k ? "px" : "dx");
        ns_nmodl_free(c);
        ns_nmodl_free(cu);
        ns_nmodl_destroy(mod);
    }
}

static const char *EU = "NEURON { SUFFIX eu NONSPECIFIC_CURRENT i }\nPARAMETER { g = 0.001 }\nSTATE { a }\n"
                        "ASSIGNED { v i }\nBREAKPOINT {\n SOLVE s METHOD euler\n i = g * a * v\n}\n"
                        "DERIVATIVE s { a' = -a * a }\n";

int main(void) {
    (void)simulate; /* the driver's and grad_check.h's, not used here */
    (void)find;
    (void)central_difference;
    check_mech("hh", 0.0);
    check_mech("hh", 1.0);
    check_mech("pas", 0.0);
    check_mech("ExpSyn", 0.0); /* point processes: current() in nA scaled by 1e2/area; NET_RECEIVE (phase 3) */
    check_mech("Exp2Syn", 0.0);
    check_block("hh", 0.0);
    check_block("hh", 1.0);
    /* hh's current() reads ena and ek (its other phases no ion value): one for each usetable and path */
    CHECK_MSG(ci_seen == 4 && builtin("hh") && !builtin("hh")->vjp_state_n_ci, "hh: %d constant-ion products", ci_seen);
    check_block("pas", 0.0);
    CHECK_MSG(ci_seen == 4, "pas: no constant-ion product");
    /* what nmodl_diff.c has no code for: NULL entry points and the reason (a NET_RECEIVE with a
     * self event; euler) */
    ns_nmodl_t *mod = NULL;
    char *why = NULL;
    CHECK_OK(ns_nmodl_parse_string(NS_MOD, "ns.mod", &mod));
    if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_C, &why));
    CHECK_MSG(why && strstr(why, "NULL, NULL, NULL, \"ns.mod:7: no derivative code for the call net_send()\""),
              "net_send refused by FILE:LINE (%s)", why ? strstr(why, "NULL, NULL, NULL") : "no text");
    CHECK(why && strstr(why, "    NS_MECH_CUDA_ERRORS_NONE,\n    NULL,\n    0, NULL, NULL,\n    NULL, NULL, NULL,\n    NULL, NULL, "
                             "NULL\n};")); /* no vjp_net_receive, no device products */
    ns_nmodl_free(why);
    ns_nmodl_destroy(mod);
    mod = NULL;
    why = NULL;
    CHECK_OK(ns_nmodl_parse_string(WATCH_MOD, "w.mod", &mod));
    if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_C, &why));
    CHECK_MSG(why && strstr(why, "\"w.mod:6: no derivative code for WATCH\""), "WATCH refused by FILE:LINE (%s)",
              why ? strstr(why, "NULL, NULL, NULL") : "no text");
    ns_nmodl_free(why);
    ns_nmodl_destroy(mod);
    mod = NULL;
    CHECK_OK(ns_nmodl_parse_string(EU, "eu.mod", &mod));
    char *text = NULL;
    if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_C, &text));
    CHECK_MSG(text && strstr(text, "NULL, NULL, NULL, \"eu.mod:6: no derivative code for SOLVE s METHOD euler (cnexp "
                                   "and derivimplicit only)"),
              "euler refused by FILE:LINE (%s)", text ? strstr(text, "NULL, NULL, NULL") : "no text");
    ns_nmodl_free(text);
    text = NULL;
    if (mod) CHECK_OK(ns_nmodl_emit(mod, NS_NMODL_CUDA, &text));
    CHECK_MSG(text && !strstr(text, "cuda_vjp"), "euler: no device products");
    ns_nmodl_free(text);
    ns_nmodl_destroy(mod);
    check_device_products();

    /* libraries of mechanism ABI 3 (its descriptors end before the hooks) and 4 (its
     * derivatives were Jacobians, jac_*, where 5 has vjp_*): loaded, copied into this
     * version's layout without derivatives (the junk in their place not read); 5: with its
     * derivatives, without the fused launches of 6 (-1, NULL: the junk after cuda_why_not not
     * read); 6: with both, without the block products of 7 (NULL: the gradients call the
     * per-instance ones); 7: with them, without NET_RECEIVE's product (ABI 8); every one before 8
     * with cuda_errors UNKNOWN (0: may fail on the device); 8: with all of them, without the
     * constant-ion products of 9 (NULL: the gradients call vjp_*_n); 9: with them, without the
     * device products of 10 (NULL); older than 3 or newer than this version: refused */
    if (tmpdir_make("ns_grad_jac")) return 1;
    check_ftab();
    check_fallback();
    for (int version = NS_MECH_ABI_OLDEST - 1; version <= NS_MECH_ABI_VERSION + 1; ++version) {
        if (version == NS_MECH_ABI_VERSION) continue; /* this version's libraries: every other test */
        FILE *f = fopen(tmp("old.c"), "w");
        CHECK(f != NULL);
        if (!f) break;
        fprintf(f,
                "#include \"neurosolve/mechanism.h\"\n"
                "static const char *const names[] = {\"x\"};\nstatic const double defs[] = {1.0};\n"
                "static void fn(ns_mech_ppack *p) { (void)p; }\n"
                "typedef void (*vjp_fn)(ns_mech_ppack *, int, const double *, double *);\n"
                "typedef void (*vjpn_fn)(ns_mech_ppack *, const double *, double *, double *, double *);\n"
                "typedef void (*vnr_fn)(ns_mech_ppack *, int, double, const double *, double *);\n"
                "static const ns_mech_desc d = {.abi_version = %d, .name = \"old\", .kind = NS_MECH_DENSITY,"
                " .n_fields = 1, .n_params = 1, .field_names = names, .field_defaults = defs, .init = fn,"
                " .current = fn, .state = fn, .vjp_init = (vjp_fn)1, .vjp_current = (vjp_fn)1,"
                " .vjp_state = (vjp_fn)1, .vjp_why_not = \"junk\", .fused_index = 7,"
                " .cuda_fused_current = (ns_mech_cuda_fused_fn)1, .cuda_fused_state = (ns_mech_cuda_fused_fn)1,"
                " .vjp_init_n = (vjpn_fn)1, .vjp_current_n = (vjpn_fn)1, .vjp_state_n = (vjpn_fn)1,"
                " .cuda_errors = NS_MECH_CUDA_ERRORS_NONE, .vjp_net_receive = (vnr_fn)1,"
                " .vjp_init_n_ci = (vjpn_fn)1, .vjp_current_n_ci = (vjpn_fn)1, .vjp_state_n_ci = (vjpn_fn)1,"
                " .cuda_vjp_init = (ns_mech_cuda_vjp_fn)1, .cuda_vjp_current = (ns_mech_cuda_vjp_fn)1,"
                " .cuda_vjp_state = (ns_mech_cuda_vjp_fn)1};\n"
                "static const ns_mech_desc *const mechs[] = {&d};\n"
                "static const ns_mech_catalogue cat = {%d, 1, mechs};\n"
                "const ns_mech_catalogue *ns_mech_catalogue_v1(void) { return &cat; }\n",
                version, version);
        fclose(f);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "cc -shared -fPIC -I%s/../../include -o %s %s 2>&1", NS_TEST_DATA, tmp("libold.so"),
                 tmp("old.c"));
        if (system(cmd) != 0) {
            printf("SKIP the ABI %d library: no C compiler\n", version);
            continue;
        }
        ns_mech_library_t *lib = NULL;
        if (version < NS_MECH_ABI_OLDEST || version > NS_MECH_ABI_VERSION) {
            /* refused, its version named (read before the library is unloaded: a crash once) */
            char want[64];
            snprintf(want, sizeof want, "mechanism ABI version %d", version);
            CHECK_MSG(ns_mech_library_open(tmp("libold.so"), &lib) == NS_ERR_UNSUPPORTED && !lib &&
                          strstr(ns_last_error(), want),
                      "ABI %d refused: %s", version, ns_last_error());
            remove(tmp("libold.so"));
            continue;
        }
        CHECK_OK(ns_mech_library_open(tmp("libold.so"), &lib));
        const ns_mech_desc *od = lib ? ns_mech_library_get(lib, 0) : NULL;
        CHECK_MSG(od && (version >= 8) == (od->vjp_net_receive != NULL), "ABI %d: NET_RECEIVE's product (ABI 8)",
                  version);
        /* the junk NONE not read before 8: its device code may fail (a record read every interval) */
        CHECK_MSG(od && od->cuda_errors == (version >= 8 ? NS_MECH_CUDA_ERRORS_NONE : NS_MECH_CUDA_ERRORS_UNKNOWN),
                  "ABI %d: cuda_errors %d", version, od ? od->cuda_errors : -1);
        CHECK_MSG(od && (version >= 9) == (od->vjp_init_n_ci && od->vjp_current_n_ci && od->vjp_state_n_ci) &&
                      (version >= 9 || (!od->vjp_init_n_ci && !od->vjp_current_n_ci && !od->vjp_state_n_ci)),
                  "ABI %d: the constant-ion products (ABI 9)", version);
        CHECK_MSG(od && !od->cuda_vjp_init && !od->cuda_vjp_current && !od->cuda_vjp_state,
                  "ABI %d: no device products (ABI 10)", version);
        if (version >= 7)
            CHECK_MSG(od && od->vjp_init_n && od->vjp_current_n && od->vjp_state_n, "ABI %d: its block products kept",
                      version);
        else
            CHECK_MSG(od && !od->vjp_init_n && !od->vjp_current_n && !od->vjp_state_n, "ABI %d: no block products",
                      version);
        if (version >= 6)
            CHECK_MSG(od && od->fused_index == 7 && od->vjp_state && od->cuda_fused_state, "ABI %d: its fused launches "
                      "and per-instance products kept", version);
        else
            CHECK_MSG(od && od->fused_index == -1 && !od->cuda_fused_current && !od->cuda_fused_state,
                      "ABI %d: no fused launches", version);
        if (version >= 5)
            CHECK_MSG(od && od->vjp_init && od->vjp_why_not && !strcmp(od->vjp_why_not, "junk"),
                      "ABI %d: its derivatives kept", version);
        else {
            CHECK_MSG(od && !strcmp(od->name, "old") && od->state && !od->vjp_init && !od->vjp_current && !od->vjp_state,
                      "ABI %d: no derivatives", version);
            CHECK(od && od->vjp_why_not && strstr(od->vjp_why_not, "older mechanism ABI"));
        }
        ns_mech_library_close(lib);
        remove(tmp("libold.so"));
    }
    tmpdir_remove();
    return check_summary("test_grad_jac");
}
