/* LONGITUDINAL_DIFFUSION against NEURON 9.0.2 (tests/data/nmodl/ldifus_*.csv,
 * validation/nmodl_ldifus_neuron.py), NEURON's own files (data/mechanisms/ldifus) on a real
 * morphology (data/morphologies/ca1_h10.swc, d_lambda nseg), an IClamp at soma(0.5), v and the
 * concentrations at soma(0.5) and at the middle of three dendrites every 0.1 ms, in two cells of
 * one lane block (cadif.mod also on 2 threads: bit for bit the same):
 *   cadif.mod (calcium in 4 radial shells with a buffer) with Ca_HVA and pas in every section,
 *     hh and a 10x higher initial calcium in the soma: v, cai, ca[0], ca[3];
 *   nadifl.mod (sodium, no buffer) with pas everywhere, hh in the soma: v, nai (the STATE nai is
 *     the ion's: the diffusion must reach the ion's nai, which its next state() reads);
 *   cadifusl.mod (SUFFIX cadifus: 4 shells, ica = icabar) with pas everywhere, hh and an influx
 *     (icabar < 0) in the soma: v, cai, ca[0], ca[3].
 * The dendrites' concentrations change only (or, with Ca_HVA, almost only) by diffusion from the
 * soma, so these values test the diffusion itself. Also: the descriptor (ABI 8) and why it has no
 * CUDA code. Without a C compiler the test skips (77). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"
#include "mech_build.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"
#define DT 0.025
#define N_CELLS 2
#define N_SITES 4

/* a case: its reference, model and recorded concentrations; conc_abs: the concentrations are
 * compared absolutely [mM] (nadifl's nai changes by 4e-4 of its 10 mM), else relatively */
typedef struct ldcase {
    const char *csv, *model;
    int nv;
    const char *var[3];
    double tol_v, tol_c;
    int conc_abs;
} ldcase;
static const ldcase CASES[] = {
    {"ldifus_ca1.csv",
     "all.insert = pas cadif Ca_HVA\nall.g_pas = 1e-4\nall.e_pas = -65\nall.gCa_HVAbar_Ca_HVA = 0.0005\n"
     "soma.insert = hh\nsoma.cai0_cadif = 5e-4\n",
     3, {"cai", "ca[0]_cadif", "ca[3]_cadif"}, 1e-5, 1e-8, 0},
    {"ldifus_nadifl.csv", "all.insert = pas nadifl\nall.g_pas = 1e-4\nall.e_pas = -65\nsoma.insert = hh\n", 1,
     {"nai"}, 1e-5, 1e-8, 1},
    {"ldifus_cadifus.csv",
     "all.insert = pas cadifus\nall.g_pas = 1e-4\nall.e_pas = -65\nsoma.insert = hh\nsoma.icabar_cadifus = -2e-4\n",
     3, {"cai", "ca[0]_cadifus", "ca[3]_cadifus"}, 1e-5, 3e-8, 0},
};

typedef struct table {
    int n, cols;
    long key[N_SITES];
    double *row; /* n * cols */
} table;

static int read_table(table *t, const ldcase *lc) {
    memset(t, 0, sizeof *t);
    t->cols = 1 + (1 + lc->nv) * N_SITES;
    char path[512];
    snprintf(path, sizeof path, "%s/nmodl/%s", NS_TEST_DATA, lc->csv);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[8192];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        const char *s = strstr(line, "x 0.5): ");
        if (line[0] == '#' && s) {
            char *p = (char *)s + 8;
            for (int k = 0; k < N_SITES; ++k) t->key[k] = strtol(p, &p, 10);
        }
        if (line[0] == '#') continue;
        if (t->n == cap) {
            cap = cap ? 2 * cap : 1024;
            double *r = realloc(t->row, (size_t)cap * (size_t)t->cols * sizeof *r);
            if (!r) break;
            t->row = r;
        }
        char *p = line;
        for (int c = 0; c < t->cols; ++c) {
            t->row[(size_t)t->n * t->cols + c] = strtod(p, &p);
            if (*p == ',') ++p;
        }
        t->n++;
    }
    fclose(f);
    return t->n > 0 ? 0 : -1;
}

static int32_t site(const ns_cell_t *cell, long key) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    for (int32_t k = 0; k < ci.sections; ++k) {
        ns_section_info si;
        int32_t c = -1;
        if (ns_cell_get_section(cell, k, &si) == NS_OK && si.first_point_id == key &&
            ns_cell_locate(cell, k, 0.5, &c) == NS_OK)
            return c;
    }
    return -1;
}

/* one run on `threads` threads: the worst differences from NEURON's (v in mV, the concentrations
 * relative) and the traces (for the comparison between thread counts; the caller frees them) */
static double *run(ns_mech_library_t *lib, const ns_cell_t *cell, const ldcase *lc, const table *rf, int threads,
                   double worst[4]) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    const int32_t n = ns_tree_size(ns_cell_tree(cell));
    double *x = malloc((size_t)n * sizeof *x), *out = NULL;
    int32_t at[N_SITES];
    for (int k = 0; k < N_SITES; ++k) CHECK((at[k] = site(cell, rf->key[k])) >= 0);
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (model) CHECK_OK(ns_sim_model_parse(model, lc->model, strlen(lc->model), "ldifus.model"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.celsius = 6.3;
    p.v_init = -65;
    p.dt = DT;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.threads = threads;
    o.model = model;
    const ns_cell_t *shapes[1] = {cell};
    if (model) CHECK_OK(ns_sim_create(1, shapes, N_CELLS, NULL, &p, &o, &sim));
    if (!sim || !x) goto done;
    for (int64_t c = 0; c < N_CELLS; ++c) {
        CHECK_OK(ns_sim_add_iclamp(sim, c, at[0], 5.0, 40.0, 0.3));
        for (int k = 0; k < N_SITES; ++k) CHECK_OK(ns_sim_add_recording(sim, c, at[k], NULL));
    }
    const int cols = rf->cols, per = 1 + lc->nv;
    for (int j = 0; j < rf->n; ++j) {
        const double *r = rf->row + (size_t)j * cols;
        if (j) CHECK_OK(ns_sim_advance(sim, lround(r[0] / DT) - lround(ns_sim_time(sim) / DT)));
        for (int64_t c = 0; c < N_CELLS; ++c)
            for (int q = 0; q < lc->nv; ++q) {
                CHECK_OK(ns_sim_get_model_var(sim, c, lc->var[q], x));
                for (int k = 0; k < N_SITES; ++k) {
                    const double want = r[1 + per * k + 1 + q];
                    const double e = fabs(x[at[k]] - want) / (lc->conc_abs ? 1.0 : want);
                    if (!(e <= worst[1 + q])) worst[1 + q] = e;
                }
            }
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    const long steps = lround(rf->row[(size_t)(rf->n - 1) * cols] / DT);
    CHECK(tr && samples == steps + 1 && sites == N_CELLS * N_SITES);
    if (!tr || samples != steps + 1 || sites != N_CELLS * N_SITES) goto done;
    for (int j = 0; j < rf->n; ++j)
        for (int s = 0; s < sites; ++s) {
            const double dv = fabs(tr[lround(rf->row[(size_t)j * cols] / DT) * sites + s] -
                                   rf->row[(size_t)j * cols + 1 + per * (s % N_SITES)]);
            if (!(dv <= worst[0])) worst[0] = dv;
        }
    out = malloc((size_t)samples * (size_t)sites * sizeof *out);
    if (out) memcpy(out, tr, (size_t)samples * (size_t)sites * sizeof *out);
done:
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    free(x);
    return out;
}

static void descriptor(ns_mech_library_t *lib) {
    const ns_mech_desc *d = NULL;
    CHECK_OK(ns_mech_library_find(lib, "cadif", &d));
    if (!d) return;
    /* ca[0..3] diffuse: their fields in order; no CUDA entry points, and why (FILE:LINE) */
    int ca0 = -1;
    CHECK_OK(ns_mech_field_index(d, "ca[0]", &ca0));
    CHECK(d->abi_version == NS_MECH_ABI_VERSION && d->n_ldifus == 4 && d->ldifus_coef != NULL);
    for (int j = 0; j < 4 && d->n_ldifus == 4; ++j) CHECK(d->ldifus_field[j] == ca0 + j);
    CHECK(d->cuda_state == NULL);
    CHECK_MSG(d->cuda_why_not && strstr(d->cuda_why_not, "cadif.mod:125: LONGITUDINAL_DIFFUSION"), "%s",
              d->cuda_why_not ? d->cuda_why_not : "(null)");
}

/* case lc against NEURON's reference */
static void one_case(ns_mech_library_t *lib, const ns_cell_t *cell, const ldcase *lc) {
    table rf;
    CHECK_MSG(read_table(&rf, lc) == 0 && rf.n > 400, "cannot read NEURON's %s", lc->csv);
    if (rf.n > 400) {
        double w1[4] = {0, 0, 0, 0}, w2[4] = {0, 0, 0, 0};
        /* 1 and 2 threads for the first case (the same bits); the others on one (the suite's time) */
        double *t1 = run(lib, cell, lc, &rf, 1, w1), *t2 = lc == CASES ? run(lib, cell, lc, &rf, 2, w2) : NULL;
        printf("ldifus (%s on ca1_h10.swc): max |v - NEURON| %.3e mV; %s within", lc->csv, w1[0], lc->var[0]);
        for (int q = 0; q < lc->nv; ++q) printf(" %.3e", w1[1 + q]);
        printf(" of NEURON's (%s)\n", lc->conc_abs ? "mM" : "relative");
        CHECK_MSG(w1[0] <= lc->tol_v, "%s: v differs from NEURON's by %g mV", lc->csv, w1[0]);
        for (int q = 0; q < lc->nv; ++q)
            CHECK_MSG(w1[1 + q] <= lc->tol_c, "%s: %s differs from NEURON's by %g", lc->csv, lc->var[q], w1[1 + q]);
        const long steps = lround(rf.row[(size_t)(rf.n - 1) * rf.cols] / DT);
        CHECK_MSG(t1 && (lc != CASES || (t2 && !memcmp(t1, t2, (size_t)(steps + 1) * N_CELLS * N_SITES * sizeof *t1))),
                  "%s: 1 and 2 threads differ", lc->csv);
        for (int q = 0; q < lc->nv && t2; ++q) CHECK(w1[1 + q] == w2[1 + q]);
        free(t1);
        free(t2);
    }
    free(rf.row);
}

int main(void) {
    int skip = 0;
    ns_mech_library_t *lib = test_mech_from_files(MECH_DIR "/ldifus/cadif.mod " MECH_DIR "/ldifus/nadifl.mod " MECH_DIR
                                                  "/ldifus/cadifusl.mod " MECH_DIR "/bbp/Ca_HVA.mod",
                                                  "libldifus.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/ca1_h10.swc", NULL, &morph));
    if (morph) CHECK_OK(ns_discretize(morph, NULL, &cell)); /* d_lambda 0.1 at 100 Hz, as the reference */
    if (lib && cell) {
        descriptor(lib);
        for (size_t k = 0; k < sizeof CASES / sizeof *CASES; ++k) one_case(lib, cell, &CASES[k]);
    }
    ns_cell_destroy(cell);
    ns_morph_destroy(morph);
    ns_mech_library_close(lib);
    tmpdir_remove();
    return check_summary("test_sim_ldifus_neuron");
}
