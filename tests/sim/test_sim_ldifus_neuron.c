/* LONGITUDINAL_DIFFUSION against NEURON 9.0.2 (tests/data/nmodl/ldifus_ca1.csv,
 * validation/nmodl_ldifus_neuron.py): NEURON's cadif.mod (data/mechanisms/ldifus: calcium in 4
 * radial shells with a buffer, diffusing between segments) with Ca_HVA and pas in every section
 * of a real morphology (data/morphologies/ca1_h10.swc, d_lambda nseg), hh and a 10x higher
 * initial calcium in the soma, an IClamp at soma(0.5): v, cai, ca[0] and ca[3] at soma(0.5) and
 * at the middle of three dendrites every 0.1 ms, in two cells of one lane block, on 1 and 2
 * threads (bit for bit the same). The dendrites' calcium rises only by diffusion from the soma
 * (their own influx is orders of magnitude smaller), so these values test the diffusion
 * itself. Also: the descriptor (ABI 8) and why it has no CUDA code. Without a C compiler the
 * test skips (77). */
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
#define COLS (1 + 4 * N_SITES)

static const char *MODEL = "all.insert = pas cadif Ca_HVA\nall.g_pas = 1e-4\nall.e_pas = -65\n"
                           "all.gCa_HVAbar_Ca_HVA = 0.0005\nsoma.insert = hh\nsoma.cai0_cadif = 5e-4\n";

typedef struct table {
    int n;
    long key[N_SITES];
    double *row; /* n * COLS */
} table;

static int read_table(table *t) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(NS_TEST_DATA "/nmodl/ldifus_ca1.csv", "r");
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
            double *r = realloc(t->row, (size_t)cap * COLS * sizeof *r);
            if (!r) break;
            t->row = r;
        }
        char *p = line;
        for (int c = 0; c < COLS; ++c) {
            t->row[(size_t)t->n * COLS + c] = strtod(p, &p);
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
static double *run(ns_mech_library_t *lib, const ns_cell_t *cell, const table *rf, int threads, double worst[4]) {
    ns_sim_model_t *model = NULL;
    ns_sim_t *sim = NULL;
    const int32_t n = ns_tree_size(ns_cell_tree(cell));
    double *x = malloc((size_t)n * sizeof *x), *out = NULL;
    int32_t at[N_SITES];
    for (int k = 0; k < N_SITES; ++k) CHECK((at[k] = site(cell, rf->key[k])) >= 0);
    CHECK_OK(ns_sim_model_create(lib, &model));
    if (model) CHECK_OK(ns_sim_model_parse(model, MODEL, strlen(MODEL), "ldifus.model"));
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
    static const char *const var[3] = {"cai", "ca[0]_cadif", "ca[3]_cadif"};
    for (int j = 0; j < rf->n; ++j) {
        const double *r = rf->row + (size_t)j * COLS;
        if (j) CHECK_OK(ns_sim_advance(sim, lround(r[0] / DT) - lround(ns_sim_time(sim) / DT)));
        for (int64_t c = 0; c < N_CELLS; ++c)
            for (int q = 0; q < 3; ++q) {
                CHECK_OK(ns_sim_get_model_var(sim, c, var[q], x));
                for (int k = 0; k < N_SITES; ++k) {
                    const double want = r[1 + 4 * k + 1 + q], e = fabs(x[at[k]] - want) / want;
                    if (!(e <= worst[1 + q])) worst[1 + q] = e;
                }
            }
    }
    int64_t samples = 0;
    int32_t sites = 0;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    const long steps = lround(rf->row[(size_t)(rf->n - 1) * COLS] / DT);
    CHECK(tr && samples == steps + 1 && sites == N_CELLS * N_SITES);
    if (!tr || samples != steps + 1 || sites != N_CELLS * N_SITES) goto done;
    for (int j = 0; j < rf->n; ++j)
        for (int s = 0; s < sites; ++s) {
            const double dv = fabs(tr[lround(rf->row[(size_t)j * COLS] / DT) * sites + s] -
                                   rf->row[(size_t)j * COLS + 1 + 4 * (s % N_SITES)]);
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

int main(void) {
    int skip = 0;
    ns_mech_library_t *lib =
        test_mech_from_files(MECH_DIR "/ldifus/cadif.mod " MECH_DIR "/bbp/Ca_HVA.mod", "libldifus.so", &skip);
    if (skip) return tmpdir_remove(), 77;
    table rf;
    CHECK_MSG(read_table(&rf) == 0 && rf.n > 400, "cannot read NEURON's ldifus_ca1.csv");
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/ca1_h10.swc", NULL, &morph));
    if (morph) CHECK_OK(ns_discretize(morph, NULL, &cell)); /* d_lambda 0.1 at 100 Hz, as the reference */
    if (lib && cell && rf.n > 400) {
        descriptor(lib);
        double w1[4] = {0, 0, 0, 0}, w2[4] = {0, 0, 0, 0};
        double *t1 = run(lib, cell, &rf, 1, w1), *t2 = run(lib, cell, &rf, 2, w2);
        printf("ldifus (cadif.mod on ca1_h10.swc): max |v - NEURON| %.3e mV; cai, ca[0], ca[3] within %.3e, "
               "%.3e, %.3e of NEURON's (relative)\n", w1[0], w1[1], w1[2], w1[3]);
        CHECK_MSG(w1[0] <= 1e-5, "v differs from NEURON's by %g mV", w1[0]);
        CHECK_MSG(w1[1] <= 1e-8 && w1[2] <= 1e-8 && w1[3] <= 1e-8, "calcium differs from NEURON's: %g %g %g",
                  w1[1], w1[2], w1[3]);
        const long steps = lround(rf.row[(size_t)(rf.n - 1) * COLS] / DT);
        CHECK_MSG(t1 && t2 && !memcmp(t1, t2, (size_t)(steps + 1) * N_CELLS * N_SITES * sizeof *t1),
                  "1 and 2 threads differ");
        CHECK(w1[1] == w2[1] && w1[2] == w2[2] && w1[3] == w2[3]);
        free(t1);
        free(t2);
    }
    ns_cell_destroy(cell);
    ns_morph_destroy(morph);
    ns_mech_library_close(lib);
    free(rf.row);
    tmpdir_remove();
    return check_summary("test_sim_ldifus_neuron");
}
