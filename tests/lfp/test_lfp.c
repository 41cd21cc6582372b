/* Extracellular potentials against LFPy 2.3 (tests/data/lfp/dg_granule_lfpy.txt and
 * ca1_h10_lfpy.txt, made by validation/lfp_reference.py): the forward models on LFPy's own segments and
 * currents, neurosolve's segment geometry against LFPy's, the currents and potentials of
 * a run of the same cell against NEURON's i_membrane_ through LFPy, current conservation,
 * placement, thread counts, probe files and the CSD. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"

/* dg_granule: every check; ca1_h10 (a three-point soma chain, dendrites joined at x = 0 of
 * their parent that NEURON's define_shape moves there): the forward models, the geometry and
 * the run */
#define REF NS_TEST_DATA "/lfp/dg_granule_lfpy.txt"
#define REF_CA1 NS_TEST_DATA "/lfp/ca1_h10_lfpy.txt"

typedef struct ref {
    int64_t n, T, E;
    char (*name)[64];
    double *start, *end, *diam; /* 3n, 3n, n */
    int64_t *steps;
    double *stim, *I;           /* T; n x T */
    ns_lfp_contact *el;
    double *phi[3];             /* E x T per method */
    double *P;                  /* 3 x T */
    int64_t n4;                 /* four-sphere electrodes */
    double head[11];            /* radii, sigmas, the dipole's position */
    double *el4, *M4;           /* n4 x 3 each */
    double dt, sigma, del, dur, amp;
    char morph[256]; /* the file of data/morphologies */
} ref;

static int read_ref(const char *path, ref *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[8192];
    int ok = 1;
    while (ok && fgets(line, sizeof line, f)) {
        if (strncmp(line, "# morphology", 12) == 0) {
            ok = sscanf(line, "# morphology %255s dt %lf sigma %lf iclamp soma(0.5) %lf %lf %lf", r->morph, &r->dt,
                        &r->sigma, &r->del, &r->dur, &r->amp) == 6;
        } else if (line[0] == '#') {
            continue;
        } else if (sscanf(line, "segments %lld", (long long *)&r->n) == 1) {
            r->name = calloc((size_t)r->n, sizeof *r->name);
            r->start = malloc((size_t)r->n * 3 * sizeof(double));
            r->end = malloc((size_t)r->n * 3 * sizeof(double));
            r->diam = malloc((size_t)r->n * sizeof(double));
            for (int64_t i = 0; ok && i < r->n; ++i)
                ok = fscanf(f, "%63s %lf %lf %lf %lf %lf %lf %lf", r->name[i], &r->start[3 * i], &r->start[3 * i + 1],
                            &r->start[3 * i + 2], &r->end[3 * i], &r->end[3 * i + 1], &r->end[3 * i + 2],
                            &r->diam[i]) == 8;
        } else if (sscanf(line, "steps %lld", (long long *)&r->T) == 1) {
            r->steps = malloc((size_t)r->T * sizeof *r->steps);
            r->stim = malloc((size_t)r->T * sizeof(double));
            for (int64_t k = 0; ok && k < r->T; ++k) ok = fscanf(f, "%lld", (long long *)&r->steps[k]) == 1;
        } else if (strncmp(line, "stimulus", 8) == 0) {
            for (int64_t k = 0; ok && k < r->T; ++k) ok = fscanf(f, "%lf", &r->stim[k]) == 1;
        } else if (strncmp(line, "imem", 4) == 0) {
            r->I = malloc((size_t)(r->n * r->T) * sizeof(double));
            for (int64_t k = 0; ok && k < r->n * r->T; ++k) ok = fscanf(f, "%lf", &r->I[k]) == 1;
        } else if (sscanf(line, "electrodes %lld", (long long *)&r->E) == 1) {
            r->el = calloc((size_t)r->E, sizeof *r->el);
            for (int64_t e = 0; ok && e < r->E; ++e) {
                if (!fgets(line, sizeof line, f)) ok = 0;
                ns_lfp_contact *c = &r->el[e];
                c->n = 1;
                const int got = sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %d", &c->x, &c->y, &c->z, &c->nx, &c->ny,
                                       &c->nz, &c->r, &c->n);
                ok = got == 3 || got == 8;
            }
        } else if (strncmp(line, "potential ", 10) == 0) {
            line[strcspn(line, "\n")] = 0;
            ns_lfp_method m;
            ok = ns_lfp_method_from_name(line + 10, &m) == NS_OK;
            if (!ok) break;
            r->phi[m] = malloc((size_t)(r->E * r->T) * sizeof(double));
            for (int64_t k = 0; ok && k < r->E * r->T; ++k) ok = fscanf(f, "%lf", &r->phi[m][k]) == 1;
        } else if (sscanf(line, "foursphere %lld", (long long *)&r->n4) == 1) {
            r->el4 = malloc((size_t)(3 * r->n4) * sizeof(double));
            r->M4 = malloc((size_t)(3 * r->n4) * sizeof(double));
            for (int k = 0; ok && k < 11; ++k) ok = fscanf(f, "%lf", &r->head[k]) == 1;
            for (int64_t e = 0; ok && e < r->n4; ++e)
                ok = fscanf(f, "%lf %lf %lf %lf %lf %lf", &r->el4[3 * e], &r->el4[3 * e + 1], &r->el4[3 * e + 2],
                            &r->M4[3 * e], &r->M4[3 * e + 1], &r->M4[3 * e + 2]) == 6;
        } else if (strncmp(line, "dipole", 6) == 0) {
            r->P = malloc((size_t)(3 * r->T) * sizeof(double));
            for (int64_t k = 0; ok && k < 3 * r->T; ++k) ok = fscanf(f, "%lf", &r->P[k]) == 1;
        }
    }
    fclose(f);
    return ok && r->n > 0 && r->T > 0 && r->E > 0 && r->I && r->P && r->phi[0] && r->phi[1] && r->phi[2] &&
           r->n4 > 0;
}

static void free_ref(ref *r) {
    free(r->name); free(r->start); free(r->end); free(r->diam); free(r->steps); free(r->stim); free(r->I);
    free(r->el); free(r->P); free(r->el4); free(r->M4);
    for (int m = 0; m < 3; ++m) free(r->phi[m]);
}

/* The largest |a - b| over a row, relative to the row's largest |b|. */
static double row_err(const double *a, const double *b, int64_t n, int64_t sa, int64_t sb) {
    double err = 0.0, big = 0.0;
    for (int64_t k = 0; k < n; ++k) {
        const double d = fabs(a[k * sa] - b[k * sb]);
        if (d > err) err = d;
        if (fabs(b[k * sb]) > big) big = fabs(b[k * sb]);
    }
    return big > 0.0 ? err / big : err;
}

/* 1. LFPy's geometry and currents through ns_lfp_matrix: the forward models alone. */
static double forward_worst = 0.0;
static void test_forward(const ref *r) {
    const ns_lfp_segments sg = {r->n, r->start, r->end, r->diam, 0};
    double *M = malloc((size_t)(r->E * r->n) * sizeof *M);
    for (int m = 0; m < 3; ++m) {
        CHECK_OK(ns_lfp_matrix(&sg, r->el, r->E, (ns_lfp_method)m, r->sigma, M));
        for (int64_t e = 0; e < r->E; ++e) {
            double worst = 0.0;
            for (int64_t k = 0; k < r->T; ++k) {
                double phi = 0.0;
                for (int64_t j = 0; j < r->n; ++j) phi += M[e * r->n + j] * r->I[j * r->T + k];
                const double want = r->phi[m][e * r->T + k];
                const double d = fabs(phi - want) / fmax(fabs(want), 1e-30);
                if (d > worst) worst = d;
            }
            CHECK_MSG(worst <= 1e-6, "%s electrode %lld: relative difference %.3g from LFPy",
                      ns_lfp_method_name((ns_lfp_method)m), (long long)e, worst);
            forward_worst = fmax(forward_worst, worst);
        }
    }
    /* the dipole moment: sum of imem times the segment midpoints (lfpykit.CurrentDipoleMoment) */
    for (int d = 0; d < 3; ++d)
        for (int64_t k = 0; k < r->T; ++k) {
            double p = 0.0;
            for (int64_t j = 0; j < r->n; ++j) p += r->I[j * r->T + k] * .5 * (r->start[3 * j + d] + r->end[3 * j + d]);
            CHECK_MSG(fabs(p - r->P[d * r->T + k]) <= 1e-9 * fmax(fabs(r->P[d * r->T + k]), 1.0), "dipole %d %lld", d,
                      (long long)k);
        }
    /* a zero-length segment is a point source, not LFPy's division by zero */
    const double a[3] = {0, 0, 0}, pos[3] = {0, 0, 10}, diam = 1.0;
    const ns_lfp_segments z = {1, a, a, &diam, -1};
    const ns_lfp_contact c = {0, 0, 10, 0, 0, 0, 0, 1};
    double m1 = 0.0;
    CHECK_OK(ns_lfp_matrix(&z, &c, 1, NS_LFP_LINESOURCE, 0.3, &m1));
    CHECK(fabs(m1 - 1.0 / (4 * 3.14159265358979323846 * 0.3 * 10.0)) < 1e-15);
    (void)pos;
    free(M);
}

/* EEG: lfpykit's four-sphere model's potentials of unit dipoles, on the scalp and in each shell. */
static void test_four_sphere(const ref *r) {
    double *M = malloc((size_t)(3 * r->n4) * sizeof *M);
    CHECK_OK(ns_lfp_four_sphere(r->head, r->head + 4, r->head + 8, r->el4, r->n4, 0.0, M));
    double worst = 0.0;
    for (int64_t e = 0; e < r->n4; ++e) {
        const double big = fmax(fabs(r->M4[3 * e]), fmax(fabs(r->M4[3 * e + 1]), fabs(r->M4[3 * e + 2])));
        for (int k = 0; k < 3; ++k) worst = fmax(worst, fabs(M[3 * e + k] - r->M4[3 * e + k]) / big);
    }
    CHECK_MSG(worst <= 1e-6, "four-sphere: %.3g (relative to each electrode's largest) from lfpykit", worst);
    printf("four-sphere vs lfpykit: %.3g\n", worst);
    const double outside[3] = {0.0, 0.0, 95000.0};
    CHECK_FAILS(ns_lfp_four_sphere(r->head, r->head + 4, r->head + 8, outside, 1, 0.0, M), NS_ERR_INVALID_ARGUMENT,
                "electrode 0", "inside the scalp");
    const double bad_radii[4] = {80000.0, 79000.0, 85000.0, 90000.0};
    CHECK_FAILS(ns_lfp_four_sphere(bad_radii, r->head + 4, r->head + 8, r->el4, 1, 0.0, M), NS_ERR_INVALID_ARGUMENT,
                "radii");
    free(M);
}

/* neurosolve's compartment of each LFPy segment (by NEURON's name sec[k](x)). */
static int map_segments(const ns_cell_t *cell, const ref *r, int32_t *comp) {
    for (int64_t i = 0; i < r->n; ++i) {
        ns_location loc;
        if (ns_location_parse(r->name[i], &loc) != NS_OK || ns_location_compartment(cell, &loc, &comp[i]) != NS_OK)
            return 0;
    }
    return 1;
}

/* 2. The segments of neurosolve's discretisation against LFPy's (NEURON's 3-D points are
 * floats, moved by define_shape in float, and LFPy rounds the segment ends' x to 6 decimals:
 * 2e-4 um for points up to 1,000 um from the origin). */
static void test_geometry(const ns_cell_t *cell, const ref *r, const int32_t *comp) {
    const double *seg = ns_cell_segments(cell), *d = ns_cell_diam(cell);
    CHECK(seg != NULL);
    double shift[3];
    for (int k = 0; k < 3; ++k)
        shift[k] = .5 * (r->start[k] + r->end[k]) - .5 * (seg[6 * comp[0] + k] + seg[6 * comp[0] + 3 + k]);
    double worst = 0.0, dworst = 0.0;
    for (int64_t i = 0; i < r->n; ++i) {
        for (int k = 0; k < 3; ++k) {
            worst = fmax(worst, fabs(seg[6 * comp[i] + k] + shift[k] - r->start[3 * i + k]));
            worst = fmax(worst, fabs(seg[6 * comp[i] + 3 + k] + shift[k] - r->end[3 * i + k]));
        }
        dworst = fmax(dworst, fabs(d[comp[i]] - r->diam[i]) / r->diam[i]);
    }
    CHECK_MSG(worst < 2e-4, "%s: segment ends differ from LFPy's by %.3g um", r->morph, worst);
    CHECK_MSG(dworst < 1e-6, "diameters differ from LFPy's by %.3g (relative)", dworst);
}

typedef struct run_out {
    double *phi, *P, *imem; /* T x E; T x 3; T x n_ref */
    double conservation;    /* largest |sum imem - stimulus| [nA] */
} run_out;

/* 3. The cell run in neurosolve with the protocol of the reference, sampled every
 * `steps[0]` steps. */
static void run_cell(const ns_cell_t *cell, const ref *r, const int32_t *comp, ns_backend backend, int32_t threads,
                     run_out *out) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    p.dt = r->dt;
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = backend;
    so.threads = threads;
    ns_sim_t *sim = NULL;
    const int32_t shape = 0;
    CHECK_OK(ns_sim_create(1, &cell, 1, &shape, &p, &so, &sim));
    if (!sim) return;
    int32_t soma;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
    CHECK_OK(ns_sim_add_iclamp(sim, 0, soma, r->del, r->dur, r->amp));
    CHECK_OK(ns_sim_init(sim));
    ns_lfp_options lo;
    ns_lfp_options_init(&lo);
    lo.every = r->steps[0];
    lo.sigma = r->sigma;
    lo.threads = threads;
    /* LFPy.Cell puts the soma's midpoint (its first segment's) at the origin */
    const double place[6] = {.5 * (r->start[0] + r->end[0]), .5 * (r->start[1] + r->end[1]),
                             .5 * (r->start[2] + r->end[2]), 0, 0, 0};
    lo.placement = place;
    const ns_lfp_probe probe = {r->E, r->el};
    ns_lfp_t *lfp = NULL;
    CHECK_OK(ns_lfp_create(sim, 1, &cell, &probe, &lo, &lfp));
    ns_lfp_t *second = NULL;
    CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &probe, &lo, &second), NS_ERR_INVALID_ARGUMENT, "already attached");
    out->imem = malloc((size_t)(r->T * r->n) * sizeof(double));
    out->conservation = 0.0;
    int64_t done = 0;
    for (int64_t k = 0; k < r->T && lfp; ++k) { /* advance to each stored step, read its currents */
        CHECK_OK(ns_sim_advance(sim, r->steps[k] - done));
        done = r->steps[k];
        const double *im = ns_lfp_membrane_currents(lfp);
        double sum = 0.0;
        for (int64_t j = 0; j < ns_sim_compartments(sim); ++j) sum += im[j];
        out->conservation = fmax(out->conservation, fabs(sum - r->stim[k]));
        for (int64_t i = 0; i < r->n; ++i) out->imem[k * r->n + i] = im[comp[i]];
    }
    CHECK(ns_lfp_samples(lfp) == r->T);
    const double *t = ns_lfp_times(lfp);
    for (int64_t k = 0; k < r->T && t; ++k) CHECK(fabs(t[k] - r->steps[k] * r->dt) < 1e-9);
    out->phi = malloc((size_t)(r->T * r->E) * sizeof(double));
    out->P = malloc((size_t)(r->T * 3) * sizeof(double));
    if (ns_lfp_potentials(lfp)) memcpy(out->phi, ns_lfp_potentials(lfp), (size_t)(r->T * r->E) * sizeof(double));
    if (ns_lfp_dipole(lfp)) memcpy(out->P, ns_lfp_dipole(lfp), (size_t)(r->T * 3) * sizeof(double));
    /* ns_sim_init starts the samples again */
    CHECK_OK(ns_sim_init(sim));
    CHECK_OK(ns_sim_advance(sim, 2 * r->steps[0] + 1));
    CHECK(ns_lfp_samples(lfp) == 2);
    ns_lfp_destroy(lfp);
    ns_sim_destroy(sim);
}

static void test_run(const ns_cell_t *cell, const ref *r, const int32_t *comp) {
    run_out a = {0}, b = {0};
    run_cell(cell, r, comp, NS_BACKEND_CPU, 1, &a);
    run_cell(cell, r, comp, NS_BACKEND_CPU, 2, &b);
    if (!a.phi || !b.phi) return;
    /* current conservation: i_membrane_ summed over the cell is the clamp's current */
    CHECK_MSG(a.conservation < 1e-9 * r->amp, "sum of imem - stimulus up to %.3g nA", a.conservation);
    /* bit-identical over thread counts */
    CHECK(memcmp(a.phi, b.phi, (size_t)(r->T * r->E) * sizeof(double)) == 0);
    CHECK(memcmp(a.P, b.P, (size_t)(r->T * 3) * sizeof(double)) == 0);
    /* against NEURON's i_membrane_ (LFPy's imem): the run's voltages agree with NEURON's to
     * about 1e-6 mV (docs/simulation.md), so the currents to that, relative to the largest */
    double big = 0.0, err = 0.0;
    for (int64_t k = 0; k < r->T; ++k)
        for (int64_t i = 0; i < r->n; ++i) {
            big = fmax(big, fabs(r->I[i * r->T + k]));
            err = fmax(err, fabs(a.imem[k * r->n + i] - r->I[i * r->T + k]));
        }
    CHECK_MSG(err <= 1e-6 * big, "imem differs from NEURON's i_membrane_ by %.3g nA (largest %.3g nA)", err, big);
    /* the potentials of the run against LFPy's (linesource) */
    double pw = 0.0, dw = 0.0;
    for (int64_t e = 0; e < r->E; ++e) {
        const double d = row_err(a.phi + e, r->phi[0] + e * r->T, r->T, r->E, 1);
        CHECK_MSG(d <= 1e-6, "electrode %lld: the run's potentials differ from LFPy's by %.3g (of the largest)",
                  (long long)e, d);
        pw = fmax(pw, d);
    }
    for (int c = 0; c < 3; ++c) {
        const double d = row_err(a.P + c, r->P + c * r->T, r->T, 3, 1);
        CHECK_MSG(d <= 1e-6, "dipole %d differs from LFPy's by %.3g (of the largest)", c, d);
        dw = fmax(dw, d);
    }
    printf("%s: forward models on LFPy's currents: %.3g (relative, worst sample); the run: imem %.3g, potentials "
           "%.3g, dipole %.3g (of each row's largest); conservation %.3g nA\n",
           r->morph, forward_worst, err / big, pw, dw, a.conservation);
    free(a.phi); free(a.P); free(a.imem); free(b.phi); free(b.P); free(b.imem);
}

/* v rotated about x, then y, then z (applied one after the other). */
static void rotate(double *v, double rx, double ry, double rz) {
    double a[3] = {v[0], v[1] * cos(rx) - v[2] * sin(rx), v[1] * sin(rx) + v[2] * cos(rx)};
    double b[3] = {a[0] * cos(ry) + a[2] * sin(ry), a[1], -a[0] * sin(ry) + a[2] * cos(ry)};
    v[0] = b[0] * cos(rz) - b[1] * sin(rz), v[1] = b[0] * sin(rz) + b[1] * cos(rz), v[2] = b[2];
}

/* 4. Placement: a cell moved and rotated sees, at the moved and rotated electrode, what the
 * cell in place sees at the electrode. */
static void test_placement(const ns_cell_t *cell) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = NS_BACKEND_CPU;
    ns_sim_t *sim = NULL;
    const int32_t shapes[2] = {0, 0};
    CHECK_OK(ns_sim_create(1, &cell, 2, shapes, &p, &so, &sim));
    if (!sim) return;
    int32_t soma;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
    const double *seg = ns_cell_segments(cell);
    const double o[3] = {.5 * (seg[6 * soma] + seg[6 * soma + 3]), .5 * (seg[6 * soma + 1] + seg[6 * soma + 4]),
                         .5 * (seg[6 * soma + 2] + seg[6 * soma + 5])};
    const double place[12] = {o[0], o[1], o[2], 0, 0, 0, 100.0, -50.0, 30.0, 0.3, -1.1, 2.0};
    const double e0[3] = {20.0, 35.0, -10.0};
    double e1[3] = {e0[0] - o[0], e0[1] - o[1], e0[2] - o[2]};
    rotate(e1, place[9], place[10], place[11]);
    for (int k = 0; k < 3; ++k) e1[k] += place[6 + k];
    ns_lfp_contact c[2] = {{e0[0], e0[1], e0[2], 0, 0, 0, 0, 1}, {e1[0], e1[1], e1[2], 0, 0, 0, 0, 1}};
    const ns_lfp_probe probe = {2, c};
    ns_lfp_options lo;
    ns_lfp_options_init(&lo);
    lo.placement = place;
    ns_lfp_t *lfp = NULL;
    CHECK_OK(ns_lfp_create(sim, 1, &cell, &probe, &lo, &lfp));
    const double *M = ns_lfp_coefficients(lfp);
    const int64_t n = ns_sim_compartments(sim) / 2;
    double worst = 0.0;
    for (int64_t j = 0; M && j < n; ++j)
        worst = fmax(worst, fabs(M[2 * n + n + j] - M[j]) / fmax(fabs(M[j]), 1e-30));
    CHECK_MSG(worst < 1e-9, "rotated placement: %.3g", worst);
    ns_lfp_destroy(lfp);
    /* coefficients above the limit are refused, naming the size */
    lo.max_bytes = 1000;
    CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &probe, &lo, &lfp), NS_ERR_SIZE, "2 electrodes", "max_bytes");
    ns_sim_destroy(sim);
}

/* A placed population of `cells` cells in a column in three interleaved populations (cell k
 * in population k % 3), a clamp on each soma, sampled every `every` steps over two advances. */
typedef struct pop_out {
    double *phi, *P, *pc, *pop, *t, *imem, *M;
    double bound; /* F32, LOWRANK: ns_lfp_error_bound */
    int64_t samples, n_comp;
    int32_t *cell_pop;
    int64_t *off;
} pop_out;

static void pop_out_free(pop_out *o) {
    free(o->phi), free(o->P), free(o->pc), free(o->pop), free(o->t), free(o->imem), free(o->M), free(o->cell_pop),
        free(o->off);
}

static double *copy_of(const double *src, int64_t n) {
    double *d = src ? malloc((size_t)n * sizeof *d) : NULL;
    if (d) memcpy(d, src, (size_t)n * sizeof *d);
    return d;
}

static void population_run(const ns_cell_t *cell, const ns_lfp_probe *probe, ns_backend backend,
                           ns_hines_method method, int64_t every, int64_t batch, ns_lfp_storage storage,
                           int cells, int64_t steps, const ns_sim_model_t *model, ns_sim_gpu_mechanisms mechs,
                           pop_out *o) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = backend;
    so.method = method;
    so.threads = cells < 32 ? 1 : 0; /* a small run: no parallel regions (they cost more on a loaded machine) */
    so.model = model;
    so.gpu_mechanisms = mechs;
    int32_t *shapes = calloc((size_t)cells, sizeof *shapes), *pop = malloc((size_t)cells * sizeof *pop);
    double *place = malloc((size_t)cells * 6 * sizeof *place);
    ns_sim_t *sim = NULL;
    if (!shapes || !pop || !place) goto out;
    for (int k = 0; k < cells; ++k) {
        const double row[6] = {30.0 * (k % 4) - 45.0, 25.0 * ((k / 4) % 2), 60.0 * k, 1.5707963267948966, 0.0, 0.4 * k};
        memcpy(place + 6 * k, row, sizeof row);
        pop[k] = k % 3;
    }
    CHECK_OK(ns_sim_create(1, &cell, cells, shapes, &p, &so, &sim));
    if (!sim) goto out;
    int32_t soma;
    CHECK_OK(ns_cell_locate(cell, 0, 0.5, &soma));
    for (int q = 0; q < cells; ++q) CHECK_OK(ns_sim_add_iclamp(sim, q, soma, 0.5 + 0.05 * q, 5.0, 0.5));
    CHECK_OK(ns_sim_init(sim));
    ns_lfp_options lo;
    ns_lfp_options_init(&lo);
    lo.placement = place;
    lo.per_cell_dipoles = 1;
    lo.population = pop;
    lo.every = every;
    lo.batch = batch;
    lo.storage = storage;
    lo.tile_bytes = 100000; /* TILES: a few tiles of slices (at least one slice each) */
    lo.tolerance = 1e-3;    /* F32: the callers check the bound themselves */
    ns_lfp_t *lfp = NULL;
    CHECK_OK(ns_lfp_create(sim, 1, &cell, probe, &lo, &lfp));
    if (!lfp) goto out;
    CHECK(ns_lfp_storage_used(lfp) == (storage == NS_LFP_STORAGE_AUTO ? NS_LFP_STORAGE_DENSE : storage));
    CHECK_OK(ns_sim_advance(sim, steps / 2));
    CHECK_OK(ns_sim_advance(sim, steps - steps / 2));
    const int64_t S = ns_lfp_samples(lfp), E = probe->n;
    CHECK(S == steps / every);
    CHECK(ns_lfp_populations(lfp) == 3);
    /* the probe's account: a reduction per launch with samples on the GPU (at least one per
     * `batch` samples), none on the CPU; set-up and sampling took time (on the GPU the
     * reductions run on the probe's stream beside the next launch: their GPU time is not
     * inside the sampler's host time, so the two are not compared) */
    ns_lfp_timing tm;
    CHECK_OK(ns_lfp_timing_of(lfp, &tm));
    CHECK_FAILS(ns_lfp_timing_of(lfp, NULL), NS_ERR_INVALID_ARGUMENT, "NULL");
    const double *kept;
    int64_t kept_stride;
    int32_t kept_device;
    CHECK_FAILS(ns_lfp_device_results(lfp, &kept, &kept_stride, &kept_device), NS_ERR_UNSUPPORTED,
                backend == NS_BACKEND_CUDA ? "not asked for" : "need a CUDA simulation");
    CHECK(tm.setup_ms > 0.0 && tm.sampling_ms > 0.0);
    if (backend == NS_BACKEND_CUDA)
        CHECK_MSG(tm.reductions >= (batch > 0 ? S / batch : 2) && tm.currents_ms > 0.0 && tm.gemm_ms > 0.0 &&
                      tm.sum_ms > 0.0,
                  "GPU account: %lld reductions, currents %.3g ms, DGEMM %.3g ms, sums %.3g ms, host %.3g ms",
                  (long long)tm.reductions, tm.currents_ms, tm.gemm_ms, tm.sum_ms, tm.sampling_ms);
    else
        CHECK(tm.reductions == 0 && tm.currents_ms == 0.0 && tm.gemm_ms == 0.0 && tm.sum_ms == 0.0);
    o->samples = S;
    o->n_comp = ns_sim_compartments(sim);
    o->phi = copy_of(ns_lfp_potentials(lfp), S * E);
    o->P = copy_of(ns_lfp_dipole(lfp), S * 3);
    o->pc = copy_of(ns_lfp_cell_dipoles(lfp), S * cells * 3);
    o->pop = copy_of(ns_lfp_population_potentials(lfp), S * 3 * E);
    o->t = copy_of(ns_lfp_times(lfp), S);
    o->imem = copy_of(ns_lfp_membrane_currents(lfp), o->n_comp);
    o->M = copy_of(ns_lfp_coefficients(lfp), E * o->n_comp);
    CHECK((o->M != NULL) ==
          (storage != NS_LFP_STORAGE_TILES && storage != NS_LFP_STORAGE_LOWRANK &&
           !(storage == NS_LFP_STORAGE_F32 && backend == NS_BACKEND_CUDA)));
    o->bound = ns_lfp_error_bound(lfp);
    CHECK((o->bound > 0.0) == (storage == NS_LFP_STORAGE_F32 || storage == NS_LFP_STORAGE_LOWRANK));
    o->cell_pop = pop, pop = NULL;
    o->off = malloc(((size_t)cells + 1) * sizeof *o->off);
    for (int c = 0; o->off && c <= cells; ++c) o->off[c] = ns_sim_cell_offset(sim, c);
    ns_lfp_destroy(lfp);
out:
    ns_sim_destroy(sim);
    free(shapes), free(pop), free(place);
}

/* 5. Populations on the CPU: each population's potentials are its cells' currents through their
 * coefficients (a dot product here, at the last sample), and they add up to the potentials. */
static void test_populations(const ns_cell_t *cell) {
    ns_lfp_probe probe;
    CHECK_OK(ns_lfp_probe_read(NS_TEST_DATA "/../../data/probes/neuropixels_like.txt", 9, &probe));
    if (probe.n < 48) return;
    probe.n = 48;
    enum { CELLS = 12, STEPS = 60 };
    pop_out a = {0};
    population_run(cell, &probe, NS_BACKEND_CPU, NS_HINES_AUTO, 2, 0, NS_LFP_STORAGE_AUTO, CELLS, STEPS, NULL,
                   NS_SIM_GPU_MECHANISMS_AUTO, &a);
    if (a.phi && a.pop && a.imem && a.M && a.off) {
        const int64_t E = probe.n, S = a.samples, n = a.n_comp;
        double sum_err = 0.0, dot_err = 0.0, big = 0.0;
        for (int64_t k = 0; k < S; ++k)
            for (int64_t e = 0; e < E; ++e) {
                const double *pp = a.pop + (k * 3) * E + e;
                sum_err = fmax(sum_err, fabs(pp[0] + pp[E] + pp[2 * E] - a.phi[k * E + e]));
                big = fmax(big, fabs(a.phi[k * E + e]));
            }
        for (int32_t p = 0; p < 3; ++p)
            for (int64_t e = 0; e < E; ++e) {
                double want = 0.0, scale = 0.0;
                for (int c = 0; c < CELLS; ++c)
                    for (int64_t j = a.off[c]; j < a.off[c + 1] && a.cell_pop[c] == p; ++j) {
                        want += a.M[e * n + j] * a.imem[j];
                        scale += fabs(a.M[e * n + j] * a.imem[j]);
                    }
                const double got = a.pop[((S - 1) * 3 + p) * E + e];
                dot_err = fmax(dot_err, fabs(got - want) / fmax(scale, 1e-300));
            }
        CHECK_MSG(sum_err <= 1e-12 * big, "the populations' potentials add up to the potentials within %.3g mV",
                  sum_err);
        CHECK_MSG(dot_err <= 1e-12, "a population's potentials vs its cells' currents x coefficients: %.3g", dot_err);
        printf("populations: sum %.3g mV of %.3g, per population vs dot products %.3g\n", sum_err, big, dot_err);
    }
    /* F32: the coefficients rounded to float; the difference from the exact run within each sample's
     * bound, the bound below the default tolerance here; a tolerance below the bound fails the run */
    pop_out f = {0};
    population_run(cell, &probe, NS_BACKEND_CPU, NS_HINES_AUTO, 2, 0, NS_LFP_STORAGE_F32, CELLS, STEPS, NULL,
                   NS_SIM_GPU_MECHANISMS_AUTO, &f);
    if (a.phi && f.phi && f.M && a.M && f.samples == a.samples) {
        const int64_t E = probe.n, S = a.samples, n = a.n_comp;
        double worst = 0.0, over = 0.0, mrel = 0.0;
        for (int64_t k = 0; k < S; ++k) {
            double big = 0.0, d = 0.0;
            for (int64_t e = 0; e < E; ++e)
                big = fmax(big, fabs(a.phi[k * E + e])), d = fmax(d, fabs(f.phi[k * E + e] - a.phi[k * E + e]));
            worst = fmax(worst, d / big);
            over = fmax(over, d / big / f.bound);
        }
        for (int64_t q = 0; q < E * n; ++q)
            if (a.M[q] != 0.0) mrel = fmax(mrel, fabs(f.M[q] - a.M[q]) / fabs(a.M[q]));
        CHECK_MSG(mrel <= 5.9604644775390625e-8, "f32 coefficients: %.3g relative from the exact ones", mrel);
        CHECK_MSG(worst > 0.0 && over <= 1.0 && f.bound <= 1e-6,
                  "f32: %.3g of each sample's largest from the exact run, bound %.3g", worst, f.bound);
        printf("f32 (CPU): %.3g of each sample's largest from the exact run, bound %.3g\n", worst, f.bound);
    }
    pop_out_free(&f);
    pop_out_free(&a);
    ns_lfp_probe_free(&probe);
    /* the storage rule: dense while the matrix fits the limit and half the free memory */
    const int64_t b = ns_lfp_coefficient_bytes(384, 1000000); /* 3.1 GB */
    CHECK(ns_lfp_choose_storage(384, 1000000, 2 * b, 0) == NS_LFP_STORAGE_DENSE);
    CHECK(ns_lfp_choose_storage(384, 1000000, 2 * b - 1, 0) == NS_LFP_STORAGE_TILES);
    CHECK(ns_lfp_choose_storage(384, 1000000, (int64_t)80 << 30, b - 1) == NS_LFP_STORAGE_TILES);
    CHECK(ns_lfp_choose_storage(384, 17000000, (int64_t)80 << 30, 0) == NS_LFP_STORAGE_TILES); /* 53 GB > 4 GiB */
    CHECK(ns_lfp_choose_storage(384, 17000000, (int64_t)140 << 30, (int64_t)60 << 30) == NS_LFP_STORAGE_DENSE);
    CHECK(strcmp(ns_lfp_storage_name(NS_LFP_STORAGE_TILES), "tiles") == 0);
    /* the GPU's samples per reduction: as asked, else the least of 256, one launch's samples at
     * the cadence (2000 steps), and a quarter of the free memory */
    const int64_t sb = (int64_t)30 << 20; /* 30 MiB a sample (1.2 M compartments) */
    CHECK(ns_lfp_batch_rows(7, 1, 0, sb) == 7);
    CHECK(ns_lfp_batch_rows(0, 1, (int64_t)80 << 30, sb) == NS_LFP_BATCH_MAX);
    CHECK(ns_lfp_batch_rows(0, 10, (int64_t)80 << 30, sb) == 200);
    CHECK(ns_lfp_batch_rows(0, 3, (int64_t)80 << 30, sb) == 256 && ns_lfp_batch_rows(0, 9, (int64_t)80 << 30, sb) == 223);
    CHECK(ns_lfp_batch_rows(0, 4000, (int64_t)80 << 30, sb) == 1);
    CHECK(ns_lfp_batch_rows(0, 1, 4 * 100 * sb + 3, sb) == 100);
    CHECK(ns_lfp_batch_rows(0, 1, 4 * sb - 1, sb) == 0); /* not one sample: the caller refuses */
    /* tiles need a CUDA simulation */
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = NS_BACKEND_CPU;
    ns_sim_t *sim = NULL;
    const int32_t shape0 = 0;
    CHECK_OK(ns_sim_create(1, &cell, 1, &shape0, &p, &so, &sim));
    ns_lfp_contact c0 = {0, 0, 0, 0, 0, 0, 0, 1};
    const ns_lfp_probe one = {1, &c0};
    ns_lfp_options lo;
    ns_lfp_options_init(&lo);
    lo.storage = NS_LFP_STORAGE_TILES;
    ns_lfp_t *lfp = NULL;
    if (sim) CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &one, &lo, &lfp), NS_ERR_UNSUPPORTED, "CUDA simulation");
    /* lowrank (test_lfp_lowrank): a rank tolerance outside [0, 1), factors above max_bytes */
    lo.storage = NS_LFP_STORAGE_LOWRANK;
    lo.rank_tolerance = 1.0;
    if (sim) CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &one, &lo, &lfp), NS_ERR_INVALID_ARGUMENT, "rank tolerance 1");
    lo.rank_tolerance = NAN;
    if (sim) CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &one, &lo, &lfp), NS_ERR_INVALID_ARGUMENT, "rank tolerance nan");
    lo.rank_tolerance = 0.0;
    lo.max_bytes = 1000;
    if (sim) CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &one, &lo, &lfp), NS_ERR_SIZE, "lowrank coefficients", "max_bytes");
    lo.max_bytes = 0;
    CHECK(strcmp(ns_lfp_storage_name(NS_LFP_STORAGE_LOWRANK), "lowrank") == 0);
    /* f32 with a tolerance below its bound: the advance fails, naming the bound and the tolerance */
    int32_t soma;
    if (sim && ns_cell_locate(cell, 0, 0.5, &soma) == NS_OK) {
        CHECK_OK(ns_sim_add_iclamp(sim, 0, soma, 0.0, 5.0, 0.5));
        CHECK_OK(ns_sim_init(sim));
        lo.storage = NS_LFP_STORAGE_F32;
        lo.tolerance = -1.0;
        CHECK_FAILS(ns_lfp_create(sim, 1, &cell, &one, &lo, &lfp), NS_ERR_INVALID_ARGUMENT, "tolerance -1");
        lo.tolerance = 1e-15;
        CHECK_OK(ns_lfp_create(sim, 1, &cell, &one, &lo, &lfp));
        if (lfp) CHECK_FAILS(ns_sim_advance(sim, 40), NS_ERR_UNSUPPORTED, "error bound", "above the tolerance 1e-15");
        CHECK(ns_lfp_error_bound(lfp) > 1e-15);
        ns_lfp_destroy(lfp);
    }
    ns_sim_destroy(sim);
}

/* The currents of a model's run on the GPU (written by the tree kernel with hh fused into it, and
 * by the per-step path's one-step launches with hh in launches of its own) against the CPU loop
 * with the same model, every step through a buffer of 7 samples. The two loops' v agree to
 * rounding, not bit for bit (tests/mech/test_sim_model_cuda.c), hence 1e-6 of the largest. */
static void test_cuda_model(const ns_cell_t *cell, const ns_lfp_probe *probe) {
    ns_sim_model_t *model = NULL;
    const char *text = "all.insert = hh\n";
    CHECK_OK(ns_sim_model_create(NULL, &model));
    CHECK_OK(ns_sim_model_parse(model, text, strlen(text), "hh.model"));
    pop_out cpu = {0};
    population_run(cell, probe, NS_BACKEND_CPU, NS_HINES_AUTO, 1, 7, NS_LFP_STORAGE_DENSE, 64, 400, model,
                   NS_SIM_GPU_MECHANISMS_AUTO, &cpu);
    const ns_sim_gpu_mechanisms paths[2] = {NS_SIM_GPU_MECHANISMS_FUSED, NS_SIM_GPU_MECHANISMS_PER_STEP};
    for (int k = 0; k < 2 && cpu.phi; ++k) {
        pop_out gpu = {0};
        population_run(cell, probe, NS_BACKEND_CUDA, NS_HINES_TREE, 1, 7, NS_LFP_STORAGE_DENSE, 64, 400, model,
                       paths[k], &gpu);
        if (gpu.phi && gpu.samples == cpu.samples) {
            const int64_t S = cpu.samples, E = probe->n;
            double pw = 0.0, sw = 0.0;
            for (int64_t e = 0; e < E; ++e) pw = fmax(pw, row_err(gpu.phi + e, cpu.phi + e, S, E, E));
            for (int d = 0; d < 3; ++d) sw = fmax(sw, row_err(gpu.P + d, cpu.P + d, S, 3, 3));
            const double iw = row_err(gpu.imem, cpu.imem, gpu.n_comp, 1, 1);
            CHECK_MSG(pw <= 1e-6 && sw <= 1e-6 && iw <= 1e-6,
                      "model on the GPU (%s) vs CPU: potentials %.3g, dipole %.3g, last currents %.3g",
                      k ? "per step" : "fused", pw, sw, iw);
            printf("model on the GPU (%s) vs CPU, 64 cells every step: potentials %.3g, dipole %.3g, currents %.3g\n",
                   k ? "per step" : "fused", pw, sw, iw);
        } else {
            CHECK_MSG(0, "model on the GPU (%s): no samples", k ? "per step" : "fused");
        }
        pop_out_free(&gpu);
    }
    pop_out_free(&cpu);
    ns_sim_model_destroy(model);
}

/* Big cells (38,580 compartments each: the tree kernel's cluster of blocks with the state in
 * device memory, the currents' neighbours and the clamps read across the cluster) against the
 * CPU, every 2 steps through a buffer of 7 samples, on 48 contacts. */
static void test_cuda_big(const ns_lfp_probe *probe) {
    ns_morph_t *morph = NULL;
    ns_cell_t *big = NULL;
    CHECK_OK(ns_swc_read(NS_MORPHOLOGIES "/dense_Animal_2_Basal_2.swc", NULL, &morph));
    if (morph) CHECK_OK(ns_discretize(morph, NULL, &big));
    const ns_lfp_probe few = {probe->n < 48 ? probe->n : 48, probe->contacts};
    pop_out cpu = {0}, gpu = {0};
    if (big) {
        population_run(big, &few, NS_BACKEND_CPU, NS_HINES_AUTO, 2, 7, NS_LFP_STORAGE_DENSE, 3, 100, NULL,
                       NS_SIM_GPU_MECHANISMS_AUTO, &cpu);
        population_run(big, &few, NS_BACKEND_CUDA, NS_HINES_TREE, 2, 7, NS_LFP_STORAGE_DENSE, 3, 100, NULL,
                       NS_SIM_GPU_MECHANISMS_AUTO, &gpu);
    }
    if (cpu.phi && gpu.phi && cpu.samples == gpu.samples) {
        const int64_t S = cpu.samples, E = few.n;
        double pw = 0.0;
        for (int64_t e = 0; e < E; ++e) pw = fmax(pw, row_err(gpu.phi + e, cpu.phi + e, S, E, E));
        const double iw = row_err(gpu.imem, cpu.imem, gpu.n_comp, 1, 1);
        CHECK_MSG(pw <= 1e-9 && iw <= 1e-9, "big cells on the GPU vs CPU: potentials %.3g, last currents %.3g", pw, iw);
        printf("big cells (%lld compartments) on the GPU vs CPU, every 2 steps: potentials %.3g, currents %.3g\n",
               (long long)gpu.n_comp, pw, iw);
    } else {
        CHECK_MSG(0, "big cells: no run to compare");
    }
    pop_out_free(&cpu);
    pop_out_free(&gpu);
    ns_cell_destroy(big);
    ns_morph_destroy(morph);
}

/* The GPU reduction: the cell of the reference on the GPU loop against LFPy and the CPU run,
 * and a placed population sampled every step on both backends. */
static void test_cuda(const ns_cell_t *cell, const ref *r, const int32_t *comp) {
    run_out c = {0}, g = {0};
    run_cell(cell, r, comp, NS_BACKEND_CPU, 0, &c);
    run_cell(cell, r, comp, NS_BACKEND_CUDA, 0, &g);
    if (!c.phi || !g.phi) return;
    CHECK_MSG(g.conservation < 1e-9 * r->amp, "GPU: sum of imem - stimulus up to %.3g nA", g.conservation);
    double worst = 0.0;
    for (int64_t e = 0; e < r->E; ++e) {
        worst = fmax(worst, row_err(g.phi + e, c.phi + e, r->T, r->E, r->E));
        CHECK_MSG(row_err(g.phi + e, r->phi[0] + e * r->T, r->T, r->E, 1) <= 1e-6, "GPU electrode %lld vs LFPy",
                  (long long)e);
    }
    CHECK_MSG(worst <= 1e-9, "GPU vs CPU potentials: %.3g of the largest", worst);
    for (int d = 0; d < 3; ++d) CHECK(row_err(g.P + d, c.P + d, r->T, 3, 3) <= 1e-9);
    printf("GPU vs CPU, one cell: potentials %.3g of the largest\n", worst);
    free(c.phi); free(c.P); free(c.imem); free(g.phi); free(g.P); free(g.imem);
    /* a placed population of three interleaved populations on each GPU loop, sampled every step
     * through a buffer of 7 samples (a reduction every 7 steps and at each advance's end) and
     * every 3 steps through the automatic buffer, against the CPU */
    ns_lfp_probe probe;
    CHECK_OK(ns_lfp_probe_read(NS_TEST_DATA "/../../data/probes/neuropixels_like.txt", 9, &probe));
    if (probe.n < 192) return;
    probe.n = 192;
    const ns_hines_method methods[2] = {NS_HINES_ONCHIP, NS_HINES_TREE};
    const int64_t every[2] = {1, 3}, batch[2] = {7, 0};
    for (int q = 0; q < 2; ++q) {
        pop_out cpu = {0};
        population_run(cell, &probe, NS_BACKEND_CPU, NS_HINES_AUTO, every[q], 0, NS_LFP_STORAGE_AUTO, 64, 400, NULL,
                       NS_SIM_GPU_MECHANISMS_AUTO, &cpu);
        for (int m = 0; m < 3; ++m) { /* onchip, tree, tree with the coefficients in tiles */
            pop_out gpu = {0};
            const ns_lfp_storage storage = m == 2 ? NS_LFP_STORAGE_TILES : NS_LFP_STORAGE_DENSE;
            population_run(cell, &probe, NS_BACKEND_CUDA, methods[m > 0], every[q], batch[q], storage, 64, 400,
                           NULL, NS_SIM_GPU_MECHANISMS_AUTO, &gpu);
            if (cpu.phi && gpu.phi) {
                CHECK(gpu.samples == cpu.samples);
                const int64_t S = cpu.samples, E = probe.n, C = 64 * 3, PE = 3 * E;
                double pw = 0.0, dw = 0.0, qw = 0.0, sw = 0.0, iw = 0.0;
                for (int64_t e = 0; e < E; ++e) pw = fmax(pw, row_err(gpu.phi + e, cpu.phi + e, S, E, E));
                for (int64_t x = 0; x < C; ++x) dw = fmax(dw, row_err(gpu.pc + x, cpu.pc + x, S, C, C));
                for (int64_t e = 0; e < PE; ++e) qw = fmax(qw, row_err(gpu.pop + e, cpu.pop + e, S, PE, PE));
                for (int d = 0; d < 3; ++d) sw = fmax(sw, row_err(gpu.P + d, cpu.P + d, S, 3, 3));
                iw = row_err(gpu.imem, cpu.imem, gpu.n_comp, 1, 1);
                CHECK_MSG(pw <= 1e-9 && dw <= 1e-9 && qw <= 1e-9 && sw <= 1e-9 && iw <= 1e-9,
                          "GPU (%s, %s) vs CPU, every %lld: potentials %.3g, cell dipoles %.3g, populations %.3g, "
                          "dipole %.3g, last currents %.3g",
                          ns_hines_method_name(methods[m > 0]), ns_lfp_storage_name(storage), (long long)every[q], pw,
                          dw, qw, sw, iw);
                CHECK(memcmp(gpu.t, cpu.t, (size_t)S * sizeof(double)) == 0);
                printf("GPU (%s, %s) vs CPU, 64 cells (%lld compartments), every %lld step(s), batch %lld: potentials "
                       "%.3g, populations %.3g, dipoles %.3g / %.3g\n",
                       ns_hines_method_name(methods[m > 0]), ns_lfp_storage_name(storage), (long long)gpu.n_comp,
                       (long long)every[q],
                       (long long)batch[q], pw, qw, dw, sw);
            }
            pop_out_free(&gpu);
        }
        pop_out_free(&cpu);
    }
    /* f32 on the GPU (float coefficients made in tiles, widened per reduction) against f32 on the CPU */
    pop_out cf = {0}, gf = {0};
    population_run(cell, &probe, NS_BACKEND_CPU, NS_HINES_AUTO, 1, 7, NS_LFP_STORAGE_F32, 64, 400, NULL,
                   NS_SIM_GPU_MECHANISMS_AUTO, &cf);
    population_run(cell, &probe, NS_BACKEND_CUDA, NS_HINES_TREE, 1, 7, NS_LFP_STORAGE_F32, 64, 400, NULL,
                   NS_SIM_GPU_MECHANISMS_AUTO, &gf);
    if (cf.phi && gf.phi && cf.samples == gf.samples) {
        double pw = 0.0;
        for (int64_t e = 0; e < probe.n; ++e) pw = fmax(pw, row_err(gf.phi + e, cf.phi + e, cf.samples, probe.n, probe.n));
        CHECK_MSG(pw <= 1e-9 && fabs(gf.bound - cf.bound) <= 1e-6 * cf.bound,
                  "f32 GPU vs CPU: potentials %.3g, bounds %.6g and %.6g", pw, gf.bound, cf.bound);
        printf("f32 GPU vs CPU, 64 cells every step: potentials %.3g, bounds %.6g / %.6g\n", pw, gf.bound, cf.bound);
    }
    pop_out_free(&cf);
    pop_out_free(&gf);
    /* lowrank on both GPU loops (each cell's current norm from the step kernels' sums of squares by
     * parts: several cells per warp onchip, per group on the tree loop) against lowrank on the CPU */
    pop_out cl = {0};
    population_run(cell, &probe, NS_BACKEND_CPU, NS_HINES_AUTO, 1, 7, NS_LFP_STORAGE_LOWRANK, 64, 400, NULL,
                   NS_SIM_GPU_MECHANISMS_AUTO, &cl);
    for (int m = 0; m < 2 && cl.phi; ++m) {
        pop_out gl = {0};
        population_run(cell, &probe, NS_BACKEND_CUDA, methods[m], 1, 7, NS_LFP_STORAGE_LOWRANK, 64, 400, NULL,
                       NS_SIM_GPU_MECHANISMS_AUTO, &gl);
        if (gl.phi && gl.samples == cl.samples) {
            double pw = 0.0;
            for (int64_t e = 0; e < probe.n; ++e)
                pw = fmax(pw, row_err(gl.phi + e, cl.phi + e, cl.samples, probe.n, probe.n));
            CHECK_MSG(pw <= 1e-9 && cl.bound > 0.0 && fabs(gl.bound - cl.bound) <= 1e-6 * cl.bound,
                      "lowrank GPU (%s) vs CPU: potentials %.3g, bounds %.6g and %.6g", ns_hines_method_name(methods[m]),
                      pw, gl.bound, cl.bound);
            printf("lowrank GPU (%s) vs CPU, 64 cells every step: potentials %.3g, bounds %.6g / %.6g\n",
                   ns_hines_method_name(methods[m]), pw, gl.bound, cl.bound);
        }
        pop_out_free(&gl);
    }
    pop_out_free(&cl);
    test_cuda_model(cell, &probe);
    test_cuda_big(&probe);
    ns_lfp_probe_free(&probe);
}

static void test_probe_file(void) {
    ns_lfp_probe p;
    const char *good = "# x y z [nx ny nz r [n]]\n0 0 0\n10, 0, 20, 0, 1, 0, 6\n0 0 40 0 0 1 5 7\n";
    CHECK_OK(ns_lfp_probe_parse(good, strlen(good), "p.txt", 9, &p));
    CHECK(p.n == 3);
    if (p.n == 3) {
        CHECK(p.contacts[0].r == 0.0 && p.contacts[1].r == 6.0 && p.contacts[1].n == 9 && p.contacts[2].n == 7);
        double pts[3 * 9];
        CHECK_OK(ns_lfp_contact_points(&p.contacts[1], pts));
        for (int k = 0; k < 9; ++k) { /* in the disc's plane y = 0, within its radius */
            CHECK(fabs(pts[3 * k + 1]) < 1e-12);
            CHECK(hypot(pts[3 * k] - 10.0, pts[3 * k + 2] - 20.0) <= 6.0);
        }
    }
    ns_lfp_probe_free(&p);
    const char *bad1 = "0 0 0\n1 2 x3\n";
    CHECK_FAILS(ns_lfp_probe_parse(bad1, strlen(bad1), "p.txt", 9, &p), NS_ERR_PARSE, "p.txt:2:", "x3");
    const char *bad2 = "0 0 0 1\n";
    CHECK_FAILS(ns_lfp_probe_parse(bad2, strlen(bad2), "p.txt", 9, &p), NS_ERR_PARSE, "p.txt:1:", "4 values");
    const char *bad3 = "\n0 0 0 0 0 0 5\n";
    CHECK_FAILS(ns_lfp_probe_parse(bad3, strlen(bad3), "p.txt", 9, &p), NS_ERR_PARSE, "p.txt:2:", "normal");
    const char *bad4 = "# nothing\n";
    CHECK_FAILS(ns_lfp_probe_parse(bad4, strlen(bad4), "p.txt", 9, &p), NS_ERR_EMPTY, "no contacts");
    CHECK_FAILS(ns_lfp_probe_read(NS_TEST_DATA "/lfp/missing.txt", 9, &p), NS_ERR_IO, "missing.txt");
    CHECK_OK(ns_lfp_probe_read(NS_TEST_DATA "/../../data/probes/neuropixels_like.txt", 9, &p));
    CHECK(p.n == 384);
    ns_lfp_probe_free(&p);
    /* a line electrode: 5 contacts from (0, 0, -100) to (0, 40, 100), after a point */
    const char *line = "1 2 3\n  line 0 0 -100, 0 40 100 5 # a shank\n";
    CHECK_OK(ns_lfp_probe_parse(line, strlen(line), "p.txt", 9, &p));
    CHECK(p.n == 6);
    for (int k = 0; p.n == 6 && k < 5; ++k)
        CHECK(p.contacts[1 + k].r == 0.0 && p.contacts[1 + k].x == 0.0 &&
              fabs(p.contacts[1 + k].y - 10.0 * k) < 1e-12 && fabs(p.contacts[1 + k].z - (-100.0 + 50.0 * k)) < 1e-12);
    ns_lfp_probe_free(&p);
    const double a[3] = {0, 0, -100}, b[3] = {0, 40, 100};
    CHECK_OK(ns_lfp_probe_line(a, b, 5, &p));
    CHECK(p.n == 5 && p.contacts[4].y == 40.0 && p.contacts[4].z == 100.0);
    ns_lfp_probe_free(&p);
    CHECK_FAILS(ns_lfp_probe_line(a, b, 1, &p), NS_ERR_INVALID_ARGUMENT, "1 contacts");
    const char *bad5 = "0 0 0\nline 0 0 0 0 0 1 2.5\n";
    CHECK_FAILS(ns_lfp_probe_parse(bad5, strlen(bad5), "p.txt", 9, &p), NS_ERR_PARSE, "p.txt:2:", "line x0 y0 z0");
    const char *bad6 = "line 0 0 0 0 0 1\n";
    CHECK_FAILS(ns_lfp_probe_parse(bad6, strlen(bad6), "p.txt", 9, &p), NS_ERR_PARSE, "p.txt:1:", "count");
}

/* The placement and population files (ns_lfp_cell_table_*; the probe files' reader): good
 * files, each way a line can be wrong (FILE:LINE), and a deterministic fuzz: every mutation of a
 * good file (bytes replaced, inserted, deleted; truncations) either reads n_cells rows or fails with
 * an error naming the file, never anything else. */
static void test_cell_tables(void) {
    double pl[18], pop[3]; /* up to 3 placements (granule_column.placement) */
    const char *place = "# x y z rx ry rz\n0 30 100, 1.5707963267948966 0 0\n\n20 -30 300 1.57 0 1e0 # two\n";
    CHECK_OK(ns_lfp_cell_table_parse(place, strlen(place), "c.placement", NS_LFP_PLACEMENTS, 2, pl));
    CHECK(pl[0] == 0.0 && pl[2] == 100.0 && pl[3] == 1.5707963267948966 && pl[6] == 20.0 && pl[11] == 1.0);
    const char *pops = "0\n 2 # a comment\n1,\n";
    CHECK_OK(ns_lfp_cell_table_parse(pops, strlen(pops), "c.pop", NS_LFP_POPULATIONS, 3, pop));
    CHECK(pop[0] == 0.0 && pop[1] == 2.0 && pop[2] == 1.0);
    const struct { const char *text; ns_lfp_cell_table kind; int64_t n; const char *a, *b; } bad[] = {
        {"0 0 0 0 0 0\n0 0 0 0 0\n", NS_LFP_PLACEMENTS, 2, "t:2:", "5 values"},
        {"0 0 0 0 0 0 0\n", NS_LFP_PLACEMENTS, 1, "t:1:", "more than 6 values"},
        {"0 0 0 nan 0 0\n", NS_LFP_PLACEMENTS, 1, "t:1:", "'nan' is not a decimal number"},
        {"0 0 1e999 0 0 0\n", NS_LFP_PLACEMENTS, 1, "t:1:", "beyond the range"},
        {"0 0 0 0 0 0\n1 1 1 1 1 1\n", NS_LFP_PLACEMENTS, 1, "t:2:", "more lines than the 1 cells"},
        {"0 0 0 0 0 0\n", NS_LFP_PLACEMENTS, 2, "t: 1 lines for 2 cells", "x y z rx ry rz"},
        {"1\n-1\n", NS_LFP_POPULATIONS, 2, "t:2:", "whole number from 0"},
        {"1\n2.5\n", NS_LFP_POPULATIONS, 2, "t:2:", "2.5"},
        {"1 2\n", NS_LFP_POPULATIONS, 1, "t:1:", "more than 1 values"},
        {"0x10\n", NS_LFP_POPULATIONS, 1, "t:1:", "'0x10' is not a decimal number"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        CHECK_FAILS(ns_lfp_cell_table_parse(bad[k].text, strlen(bad[k].text), "t", bad[k].kind, bad[k].n, pl),
                    NS_ERR_PARSE, bad[k].a, bad[k].b);
    }
    CHECK_FAILS(ns_lfp_cell_table_read(NS_TEST_DATA "/lfp/missing.placement", NS_LFP_PLACEMENTS, 1, pl), NS_ERR_IO,
                "missing.placement");
    CHECK_OK(ns_lfp_cell_table_read(NS_TEST_DATA "/../../data/probes/granule_column.placement", NS_LFP_PLACEMENTS, 3,
                                    pl));
    /* the fuzz: the three readers on mutations of good files */
    const char *seeds[3] = {place, pops, "# probe\n0 0 0\n10, 0, 20, 0, 1, 0, 6 9\nline 0 0 -100 0 40 100 5\n"};
    const char alphabet[] = "0123456789 .,-+eE#\n\txline";
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    int64_t parsed = 0, refused = 0, named = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        const char *seed = seeds[iter % 3];
        char text[256];
        size_t n = strlen(seed);
        memcpy(text, seed, n + 1);
        for (int m = 0; m < 1 + iter % 4; ++m) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            const size_t at = n ? (size_t)(rng >> 8) % n : 0;
            const char ch = alphabet[(rng >> 40) % (sizeof alphabet - 1)];
            switch ((rng >> 56) % 4) {
            case 0: if (n) text[at] = ch; break;                                          /* replace */
            case 1: if (n + 1 < sizeof text) memmove(text + at + 1, text + at, n - at + 1), text[at] = ch, ++n; break;
            case 2: if (n) memmove(text + at, text + at + 1, n - at), --n; break;        /* delete */
            default: n = at, text[n] = 0;                                                 /* truncate */
            }
        }
        ns_status st;
        if (iter % 3 == 2) {
            ns_lfp_probe p;
            st = ns_lfp_probe_parse(text, n, "fz", 9, &p);
            CHECK(st != NS_OK || p.n > 0);
            ns_lfp_probe_free(&p);
        } else {
            const ns_lfp_cell_table kind = iter % 3 == 0 ? NS_LFP_PLACEMENTS : NS_LFP_POPULATIONS;
            st = ns_lfp_cell_table_parse(text, n, "fz", kind, kind == NS_LFP_PLACEMENTS ? 2 : 3, pl);
            if (st == NS_OK && kind == NS_LFP_POPULATIONS)
                for (int c = 0; c < 3; ++c) CHECK(pl[c] >= 0 && pl[c] == floor(pl[c]));
        }
        if (st == NS_OK) {
            ++parsed;
        } else {
            ++refused;
            named += strncmp(ns_last_error(), "fz", 2) == 0;
            CHECK_MSG(st == NS_ERR_PARSE || st == NS_ERR_EMPTY, "fuzz %d: status %d: %s", iter, (int)st, ns_last_error());
        }
    }
    CHECK_MSG(named == refused, "fuzz: %lld of %lld refusals name the file", (long long)named, (long long)refused);
    CHECK(parsed > 0 && refused > 0);
    printf("cell tables and probes fuzz: %lld read, %lld refused with FILE:LINE or FILE\n", (long long)parsed,
           (long long)refused);
}

/* 5. CSD of phi = a z^2 + b z: -sigma 2a inside; the duplicated ends give -sigma (phi1 - phi0) / h^2. */
static void test_csd(void) {
    const double a = 1e-4, b = 3e-3, h = 20.0, sigma = 0.3;
    double phi[2 * 5], out[2 * 4];
    for (int s = 0; s < 2; ++s)
        for (int j = 0; j < 5; ++j) phi[s * 5 + j] = (s + 1) * (a * (j * h) * (j * h) + b * j * h);
    const int64_t idx[4] = {0, 1, 2, 3};
    CHECK_OK(ns_lfp_csd(phi, 2, 5, idx, 4, h, sigma, out));
    for (int s = 0; s < 2; ++s) {
        for (int j = 1; j < 3; ++j) CHECK(fabs(out[s * 4 + j] - (-(s + 1) * sigma * 2 * a * 1e6)) < 1e-6);
        CHECK(fabs(out[s * 4] - (-sigma * 1e6 * (phi[s * 5 + 1] - phi[s * 5]) / (h * h))) < 1e-6);
        CHECK(fabs(out[s * 4 + 3] - (-sigma * 1e6 * (phi[s * 5 + 2] - phi[s * 5 + 3]) / (h * h))) < 1e-6);
    }
    CHECK_FAILS(ns_lfp_csd(phi, 2, 5, idx, 4, 0.0, sigma, out), NS_ERR_INVALID_ARGUMENT, "spacing");
}

/* One reference: its cell discretised by neurosolve, mapped onto LFPy's segments; `all`: the
 * checks beyond the forward models, the geometry and the run (or, with cuda, the GPU's). */
static void check_reference(const char *path, int cuda, int all) {
    ref r;
    if (!read_ref(path, &r)) {
        CHECK_MSG(0, "cannot read %s", path);
        free_ref(&r);
        return;
    }
    test_forward(&r);
    if (!cuda && all) test_four_sphere(&r);
    char morph_path[1024];
    snprintf(morph_path, sizeof morph_path, "%s/%s", NS_MORPHOLOGIES, r.morph);
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_swc_read(morph_path, NULL, &morph));
    CHECK_OK(ns_discretize(morph, NULL, &cell));
    int32_t *comp = malloc((size_t)r.n * sizeof *comp);
    if (cell && map_segments(cell, &r, comp)) {
        ns_cell_info in;
        ns_cell_get_info(cell, &in);
        int64_t membrane = 0;
        for (int32_t i = 0; i < in.compartments; ++i) membrane += ns_cell_area(cell)[i] > 0.0;
        CHECK_MSG(membrane == r.n, "%s: %lld compartments with membrane, LFPy %lld segments", r.morph,
                  (long long)membrane, (long long)r.n);
        if (cuda) {
            test_cuda(cell, &r, comp);
        } else {
            test_geometry(cell, &r, comp);
            test_run(cell, &r, comp);
            if (all) {
                test_placement(cell);
                test_populations(cell);
            }
        }
    } else {
        CHECK_MSG(0, "%s: the reference's segments do not map onto the discretised cell", r.morph);
    }
    free(comp);
    ns_cell_destroy(cell);
    ns_morph_destroy(morph);
    free_ref(&r);
}

int main(int argc, char **argv) {
    const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (cuda) {
        int gpus = 0;
        if (ns_cuda_device_count(&gpus) != NS_OK || gpus == 0) CHECK_SKIP("no usable GPU (the LFP on the GPU)");
    }
    check_reference(REF, cuda, 1);
    if (!cuda) {
        check_reference(REF_CA1, 0, 0);
        test_probe_file();
        test_cell_tables();
        test_csd();
    }
    return check_summary(cuda ? "test_lfp cuda" : "test_lfp");
}
