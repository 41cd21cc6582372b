/* LiFE model building (ns_life_build, and ns_life_build_arrays on the same
 * values in memory, which must give the same model): a hand-made case whose tensor Phi,
 * signal Y and dictionary D are worked out here node by node; the bad-input
 * policies; save/load of a built model; and the bundled real case (DIPY's
 * small_25 with 60 EuDX streamlines) built and fitted, the products checked
 * against an explicit dense M assembled from the saved tensor. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#include "test_tmpdir.h"


enum { NX = 3, NY = 3, NZ = 3, NT = 7 };
/* world = (2 i - 2, j + 3, k): anisotropic voxels 2 x 1 x 1 mm */
static const float SROW[12] = {2, 0, 0, -2, 0, 1, 0, 3, 0, 0, 1, 0};
static double value_at(int i, int j, int k, int t) {
    return t == 0 ? 100.0 + i + 10 * k : 50.0 + 3 * t + i * j + 0.5 * k * t;
}

static void put32(unsigned char *p, uint32_t u) {
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(u >> (8 * i));
}
static void putf(unsigned char *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put32(p, u);
}

/* float32 NIfTI-1 of dims (NX, NY, NZ, nt), sform SROW */
static void write_image(const char *path, int nt) {
    unsigned char h[352];
    memset(h, 0, sizeof h);
    put32(h, 348);
    const int16_t dim[8] = {(int16_t)(nt > 1 ? 4 : 3), NX, NY, NZ, (int16_t)nt, 1, 1, 1};
    memcpy(h + 40, dim, sizeof dim);
    const int16_t dt = 16, bp = 32, sform = 1;
    memcpy(h + 70, &dt, 2), memcpy(h + 72, &bp, 2), memcpy(h + 254, &sform, 2);
    putf(h + 80, 2), putf(h + 84, 1), putf(h + 88, 1), putf(h + 108, 352);
    for (int i = 0; i < 12; ++i) putf(h + 280 + 4 * i, SROW[i]);
    memcpy(h + 344, "n+1\0", 4);
    FILE *f = fopen(path, "wb");
    fwrite(h, 1, sizeof h, f);
    for (int t = 0; t < nt; ++t)
        for (int k = 0; k < NZ; ++k)
            for (int j = 0; j < NY; ++j)
                for (int i = 0; i < NX; ++i) {
                    const float v = (float)value_at(i, j, k, t);
                    fwrite(&v, 4, 1, f);
                }
    fclose(f);
}

static const double BVAL[NT] = {0, 1000, 1000, 2000, 2000, 3000, 3000};
static const double BVEC[NT][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.6, 0.8, 0}, {0, 0.6, 0.8}, {0.8, 0, -0.6}};

static void write_gradients(const char *bval, const char *bvec, int n, int zero_vec) {
    FILE *f = fopen(bval, "w");
    for (int i = 0; i < n; ++i) fprintf(f, "%g ", i < NT ? BVAL[i] : 1000.0);
    fprintf(f, "\n");
    fclose(f);
    f = fopen(bvec, "w");
    for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < n; ++i) fprintf(f, "%g ", i < NT && !(zero_vec && i == 2) ? BVEC[i][c] : 0.0);
        fprintf(f, "\n");
    }
    fclose(f);
}

/* streamlines in VOXEL coordinates, written to .tck in world coordinates */
static void write_tck(const char *path, const double (*pts)[3], const int *lens, int ns) {
    FILE *f = fopen(path, "wb");
    char head[64];
    memset(head, 0, sizeof head);
    snprintf(head, sizeof head, "mrtrix tracks\ndatatype: Float32LE\nfile: . 64\nEND\n");
    fwrite(head, 1, 64, f);
    for (int s = 0, k = 0; s < ns; ++s) {
        for (int p = 0; p < lens[s]; ++p, ++k) {
            const float w[3] = {(float)(2 * pts[k][0] - 2), (float)(pts[k][1] + 3), (float)pts[k][2]};
            fwrite(w, 4, 3, f);
        }
        const float nan3[3] = {NAN, NAN, NAN};
        fwrite(nan3, 4, 3, f);
    }
    const float inf3[3] = {INFINITY, INFINITY, INFINITY};
    fwrite(inf3, 4, 3, f);
    fclose(f);
}

typedef struct entry {
    int32_t atom, i, j, k, fiber;
    double value;
} entry;

static int find(const entry *e, int n, int32_t atom, int i, int j, int k, int f) {
    for (int q = 0; q < n; ++q)
        if (e[q].atom == atom && e[q].i == i && e[q].j == j && e[q].k == k && e[q].fiber == f) return q;
    return -1;
}

static void test_hand_made(void) {
    const int L = 12;
    write_image(tmp("dwi.nii"), NT);
    write_gradients(tmp("g.bval"), tmp("g.bvec"), NT, 0);
    /* A: along i through the middle row, nodes at i = 0, 0.5, 1, 1.5, 2
     *    -> rounding (half to even) puts 2, 1, 2 nodes in i = 0, 1, 2;
     * B: three nodes in voxel (1, 1, 1) with three orientations. */
    const double pts[][3] = {{0, 1, 1}, {0.5, 1, 1}, {1, 1, 1}, {1.5, 1, 1}, {2, 1, 1},
                             {1, 0.8, 1}, {1, 1.2, 1}, {1.4, 1.2, 1}};
    const int lens[2] = {5, 3};
    write_tck(tmp("t.tck"), pts, lens, 2);
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    CHECK(o.nodes == NS_LIFE_NODES_SUM); /* the original LiFE and DIPY by default */
    o.dictionary_l = L;
    o.nodes = NS_LIFE_NODES_MEAN; /* ENCODE's values first */
    ns_life_built_t *r = NULL;
    CHECK_OK(ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("t.tck"), &o, &r));
    if (!r) return;
    ns_life_model_t *m = ns_life_built_model(r);
    const ns_life_build_stats *st = ns_life_built_stats(r);
    CHECK(st->n_b0 == 1 && st->n_dwi == 6 && st->fibers == 2 && st->nodes == 8 && st->streamlines == 2);
    CHECK(ns_life_model_n_theta(m) == 6 && ns_life_model_n_atoms(m) == (L - 1) * L + 1);
    CHECK(ns_life_model_n_voxels(m) == 3 && ns_life_model_n_fibers(m) == 2);
    /* expected tensor, worked out by hand (gradients in mm: x scaled by 2) */
    const double ux[3] = {1, 0, 0}, uy[3] = {0, 1, 0}, uxy[3] = {0.4, 0.2, 0};
    const int32_t ax = ns_life_orientation_atom(L, ux), ay = ns_life_orientation_atom(L, uy),
                  axy = ns_life_orientation_atom(L, uxy);
    CHECK(ax != ay && ax != axy && ay != axy);
    const double s0[3] = {100, 101, 102}; /* (i, 1, 1): 100 + i + 10 */
    entry want[] = {{ax, 0, 1, 1, 0, 110}, {ax, 1, 1, 1, 0, 111}, {ax, 2, 1, 1, 0, 112},
                    {ay, 1, 1, 1, 1, 111 / 3.0}, {axy, 1, 1, 1, 1, 111 / 3.0}, {ax, 1, 1, 1, 1, 111 / 3.0}};
    (void)s0;
    const int nw = (int)(sizeof want / sizeof *want);
    /* ax appears twice in voxel (1,1,1) for different fibers: fine (fiber differs) */
    CHECK_MSG(ns_life_model_n_coeffs(m) == nw, "%lld coefficients, expected %d", (long long)ns_life_model_n_coeffs(m), nw);
    const int32_t *ijk = ns_life_built_voxel_ijk(r);
    const int32_t *A = ns_life_model_atom(m), *V = ns_life_model_voxel(m), *F = ns_life_model_fiber(m);
    const double *X = ns_life_model_value(m);
    int seen[8] = {0};
    for (int64_t c = 0; c < ns_life_model_n_coeffs(m); ++c) {
        const int32_t *q = ijk + 3 * V[c];
        const int at = find(want, nw, A[c], q[0], q[1], q[2], F[c]);
        CHECK_MSG(at >= 0, "unexpected coefficient atom %d voxel (%d %d %d) fiber %d", A[c], q[0], q[1], q[2], F[c]);
        if (at >= 0) {
            ++seen[at];
            CHECK_MSG(fabs(X[c] - want[at].value) < 1e-12, "value %g, expected %g", X[c], want[at].value);
        }
    }
    for (int q = 0; q < nw; ++q) CHECK(seen[q] == 1);
    {   /* the node sum: S0 x nodes of that orientation (fiber 0: 2, 1, 2 nodes; fiber 1: 1 each) */
        ns_life_build_options os = o;
        os.nodes = NS_LIFE_NODES_SUM;
        ns_life_built_t *rs = NULL;
        CHECK_OK(ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("t.tck"), &os, &rs));
        const double sum_value[] = {220, 111, 224, 111, 111, 111};
        ns_life_model_t *ms = rs ? ns_life_built_model(rs) : NULL;
        for (int64_t c = 0; ms && c < ns_life_model_n_coeffs(ms); ++c) {
            const int32_t *q = ns_life_built_voxel_ijk(rs) + 3 * ns_life_model_voxel(ms)[c];
            const int at = find(want, nw, ns_life_model_atom(ms)[c], q[0], q[1], q[2], ns_life_model_fiber(ms)[c]);
            CHECK(at >= 0 && fabs(ns_life_model_value(ms)[c] - sum_value[at]) < 1e-12);
        }
        ns_life_built_destroy(rs);
        os.nodes = (ns_life_node_combination)7;
        CHECK(ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("t.tck"), &os, &rs) ==
              NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "node combination"));
    }
    /* voxels in raster order, S0, Y */
    CHECK(ijk[0] == 0 && ijk[3] == 1 && ijk[6] == 2 && ijk[1] == 1 && ijk[5] == 1);
    const double *Y = ns_life_model_signal(m), *S0 = ns_life_built_s0(r);
    for (int v = 0; v < 3; ++v) {
        double mean = 0;
        for (int t = 1; t < NT; ++t) mean += value_at(v, 1, 1, t);
        mean /= 6;
        for (int t = 1; t < NT; ++t)
            CHECK_MSG(fabs(Y[v * 6 + t - 1] - (value_at(v, 1, 1, t) - mean)) < 1e-9, "Y[%d, %d]", t, v);
        CHECK(S0[v] == value_at(v, 1, 1, 0));
    }
    /* D columns: exp(-b/1000 (g.u)^2) minus the mean */
    const double *D = ns_life_model_dictionary(m);
    const int32_t cols[3] = {ax, ay, axy};
    for (int q = 0; q < 3; ++q) {
        double u[3], col[6], mean = 0;
        ns_life_atom_orientation(L, cols[q], u);
        for (int t = 1; t < NT; ++t) {
            const double c = (BVEC[t][0] * u[0] + BVEC[t][1] * u[1] + BVEC[t][2] * u[2]) /
                             sqrt(BVEC[t][0] * BVEC[t][0] + BVEC[t][1] * BVEC[t][1] + BVEC[t][2] * BVEC[t][2]);
            mean += col[t - 1] = exp(-BVAL[t] / 1000 * c * c);
        }
        for (int t = 0; t < 6; ++t) CHECK(fabs(D[(int64_t)cols[q] * 6 + t] - (col[t] - mean / 6)) < 1e-12);
    }
    /* save / load round trip */
    CHECK_OK(ns_life_built_save(r, tmp("model")));
    ns_life_built_t *r2 = NULL;
    CHECK_OK(ns_life_built_load(tmp("model"), &r2));
    if (r2) {
        ns_life_model_t *m2 = ns_life_built_model(r2);
        CHECK(ns_life_model_n_coeffs(m2) == nw && memcmp(ns_life_model_value(m2), X, nw * sizeof *X) == 0);
        CHECK(memcmp(ns_life_built_voxel_ijk(r2), ijk, 9 * sizeof *ijk) == 0);
        CHECK(ns_life_built_streamline(r2)[1] == 1 && ns_life_built_n_streamlines(r2) == 2);
        CHECK(strstr(ns_life_built_tracks_path(r2), "t.tck") != NULL);
        ns_life_built_destroy(r2);
    }
    /* build.txt's counts through the one number reader (issue 47: strtol read
     * hex and cut 2^40 to 32 bits without a word) */
    {
        char path[1024];
        snprintf(path, sizeof path, "%s/build.txt", tmp("model"));
        FILE *b = fopen(path, "a");
        if (b) {
            fputs("n_b0 0x10\n", b);
            fclose(b);
        }
        r2 = (ns_life_built_t *)1;
        CHECK_FAILS(ns_life_built_load(tmp("model"), &r2), NS_ERR_PARSE, "build.txt: n_b0: '0x10' is not an integer");
        CHECK(r2 == NULL);
    }
    ns_life_built_destroy(r);

    /* policies: a one-point streamline and one outside the image */
    const double bad[][3] = {{1, 1, 1}, {0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3.6, 0, 0}, {0, 2, 2}, {1, 2, 2}};
    const int blens[3] = {1, 4, 2};
    write_tck(tmp("bad.tck"), bad, blens, 3);
    ns_status s = ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("bad.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_PARSE && strstr(ns_last_error(), "bad.tck: streamline 0 has 1 point"), "%s", ns_last_error());
    o.bad = NS_LIFE_BAD_SKIP;
    CHECK_OK(ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("bad.tck"), &o, &r));
    if (r) {
        st = ns_life_built_stats(r);
        CHECK(st->streamlines == 3 && st->fibers == 2 && st->streamlines_dropped == 1 && st->nodes_outside == 1);
        CHECK(ns_life_built_streamline(r)[0] == 1 && ns_life_built_streamline(r)[1] == 2);
        ns_life_built_destroy(r);
    }
    o.bad = NS_LIFE_BAD_ERROR;
    const int blens2[2] = {4, 2};
    write_tck(tmp("out.tck"), bad + 1, blens2, 2);
    s = ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("out.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_PARSE && strstr(ns_last_error(), "out.tck: streamline 0, node 3") &&
                  strstr(ns_last_error(), "outside the 3 x 3 x 3 image of"),
              "%s", ns_last_error());
    write_tck(tmp("empty.tck"), bad, blens, 0);
    s = ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("empty.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_EMPTY && strstr(ns_last_error(), "empty.tck: the tractogram holds no streamline"), "%s",
              ns_last_error());
    /* gradient tables */
    write_gradients(tmp("8.bval"), tmp("8.bvec"), 8, 0);
    s = ns_life_build(tmp("dwi.nii"), tmp("8.bval"), tmp("8.bvec"), tmp("t.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_SIZE && strstr(ns_last_error(), "8.bval has 8 gradient entries but") &&
                  strstr(ns_last_error(), "dwi.nii has 7 volumes"),
              "%s", ns_last_error());
    write_gradients(tmp("z.bval"), tmp("z.bvec"), NT, 1);
    s = ns_life_build(tmp("dwi.nii"), tmp("z.bval"), tmp("z.bvec"), tmp("t.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_PARSE && strstr(ns_last_error(), "z.bvec: volume 2 has b = 1000"), "%s", ns_last_error());
    o.b0_threshold = -1;
    s = ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("t.tck"), &o, &r);
    CHECK(s == NS_ERR_INVALID_ARGUMENT);
    o.b0_threshold = 0;
    FILE *f = fopen(tmp("nob0.bval"), "w");
    fprintf(f, "5 1000 1000 2000 2000 3000 3000\n");
    fclose(f);
    f = fopen(tmp("nob0.bvec"), "w");
    fprintf(f, "1 1 0 0 0.6 0 0.8\n0 0 1 0 0.8 0.6 0\n0 0 0 1 0 0.8 -0.6\n");
    fclose(f);
    s = ns_life_build(tmp("dwi.nii"), tmp("nob0.bval"), tmp("nob0.bvec"), tmp("t.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_SIZE && strstr(ns_last_error(), "no b = 0 volume"), "%s", ns_last_error());
    o.b0_threshold = 50;
    write_image(tmp("3d.nii"), 1);
    s = ns_life_build(tmp("3d.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("t.tck"), &o, &r);
    CHECK_MSG(s == NS_ERR_SIZE && strstr(ns_last_error(), "3d.nii: a diffusion image needs 4 dimensions"), "%s",
              ns_last_error());
}

static int progress_calls = 0;
static int count_progress(int pass, int64_t n, uint64_t done, uint64_t total, void *ctx) {
    (void)pass, (void)n, (void)ctx;
    progress_calls += done <= total;
    return 0;
}

static void test_real_case(void) {
    const char *d = NS_SOURCE_DATA;
    char dwi[512], bval[512], bvec[512], trk[512];
    snprintf(dwi, sizeof dwi, "%s/small_25.nii.gz", d);
    snprintf(bval, sizeof bval, "%s/small_25.bval", d);
    snprintf(bvec, sizeof bvec, "%s/small_25.bvec", d);
    snprintf(trk, sizeof trk, "%s/EuDX_small_25.trk", d);
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    o.progress = count_progress;
    o.nodes = NS_LIFE_NODES_MEAN; /* ENCODE's fractions: a fiber's values in a voxel sum to S0 */
    ns_life_built_t *r = NULL;
    CHECK_OK(ns_life_build(dwi, bval, bvec, trk, &o, &r));
    if (!r) return;
    CHECK(progress_calls >= 2);
    ns_life_model_t *m = ns_life_built_model(r);
    const ns_life_build_stats *st = ns_life_built_stats(r);
    CHECK(st->streamlines == 60 && st->fibers == 60 && st->n_b0 == 1 && st->n_dwi == 25);
    CHECK(st->grid[0] == 10 && st->grid[1] == 8 && st->grid[2] == 2);
    CHECK(ns_life_model_n_atoms(m) == 32221 && ns_life_model_n_theta(m) == 25); /* L = 180 */
    /* each fiber's values in a voxel sum to that voxel's S0 (the node fractions sum to 1) */
    const int32_t V = ns_life_model_n_voxels(m), Fn = ns_life_model_n_fibers(m), T = ns_life_model_n_theta(m);
    double *sum = calloc((size_t)V * Fn, sizeof *sum);
    const int64_t nc = ns_life_model_n_coeffs(m);
    for (int64_t c = 0; c < nc; ++c)
        sum[(int64_t)ns_life_model_voxel(m)[c] * Fn + ns_life_model_fiber(m)[c]] += ns_life_model_value(m)[c];
    int bad = 0;
    for (int32_t v = 0; v < V; ++v)
        for (int32_t f = 0; f < Fn; ++f)
            bad += sum[(int64_t)v * Fn + f] != 0 && fabs(sum[(int64_t)v * Fn + f] - ns_life_built_s0(r)[v]) > 1e-9;
    CHECK_MSG(bad == 0, "%d (voxel, fiber) pairs whose values do not sum to S0", bad);
    free(sum);
    /* y = M w against the explicit dense M, then a fit */
    ns_life_options eo;
    ns_life_options_init(&eo);
    eo.backend = NS_BACKEND_CPU, eo.mw_variant = eo.mty_variant = NS_LIFE_NAIVE, eo.threads = 1;
    ns_life_engine_t *e = NULL;
    CHECK_OK(ns_life_engine_create(m, &eo, &e));
    double *M = calloc((size_t)T * V * Fn, sizeof *M), *w = malloc((size_t)Fn * sizeof *w),
           *y = malloc((size_t)T * V * sizeof *y), *hist = malloc(500 * sizeof *hist);
    const double *Dm = ns_life_model_dictionary(m);
    for (int64_t c = 0; c < nc; ++c)
        for (int32_t t = 0; t < T; ++t)
            M[((int64_t)ns_life_model_voxel(m)[c] * T + t) * Fn + ns_life_model_fiber(m)[c]] +=
                Dm[(int64_t)ns_life_model_atom(m)[c] * T + t] * ns_life_model_value(m)[c];
    for (int32_t f = 0; f < Fn; ++f) w[f] = 0.5 + 0.01 * f;
    if (e) CHECK_OK(ns_life_mw(e, w, y));
    double err = 0, scale = 0;
    for (int64_t row = 0; row < (int64_t)T * V; ++row) {
        double s = 0;
        for (int32_t f = 0; f < Fn; ++f) s += M[row * Fn + f] * w[f];
        err = fmax(err, fabs(s - y[row])), scale = fmax(scale, fabs(s));
    }
    CHECK_MSG(err <= 1e-12 * scale, "M w against the dense M: %g", err);
    ns_life_fit_options fo;
    ns_life_fit_options_init(&fo);
    ns_life_fit_result res;
    if (e) CHECK_OK(ns_life_fit(e, &fo, w, hist, &res));
    CHECK(res.updates > 1 && hist[res.updates - 1] < hist[0]);
    /* the objective the solver reports equals 0.5 ||Y - M w||^2 through the dense M */
    const double *Y = ns_life_model_signal(m);
    double obj = 0, sig = 0;
    for (int64_t row = 0; row < (int64_t)T * V; ++row) {
        double s = 0;
        for (int32_t f = 0; f < Fn; ++f) s += M[row * Fn + f] * w[f];
        obj += 0.5 * (Y[row] - s) * (Y[row] - s), sig += 0.5 * Y[row] * Y[row];
    }
    CHECK_MSG(fabs(obj - res.objective) <= 1e-9 * obj, "objective %g vs dense %g", res.objective, obj);
    CHECK_MSG(obj < 0.5 * sig, "the fit explains less than half of the signal energy: %g of %g", obj, sig);
    int neg = 0;
    for (int32_t f = 0; f < Fn; ++f) neg += w[f] < 0;
    CHECK(neg == 0);
    free(M), free(w), free(y), free(hist);
    ns_life_engine_destroy(e);
    ns_life_built_destroy(r);
}


/* Two built models are the same, array for array (bit for bit). */
static int same_built(ns_life_built_t *x, ns_life_built_t *y) {
    if (!x || !y) return 0;
    ns_life_model_t *a = ns_life_built_model(x), *b = ns_life_built_model(y);
    const int64_t nc = ns_life_model_n_coeffs(a);
    const int32_t T = ns_life_model_n_theta(a), V = ns_life_model_n_voxels(a), F = ns_life_model_n_fibers(a);
    if (nc != ns_life_model_n_coeffs(b) || T != ns_life_model_n_theta(b) || V != ns_life_model_n_voxels(b) ||
        F != ns_life_model_n_fibers(b) || ns_life_model_n_atoms(a) != ns_life_model_n_atoms(b))
        return 0;
    return memcmp(ns_life_model_atom(a), ns_life_model_atom(b), (size_t)nc * 4) == 0 &&
           memcmp(ns_life_model_voxel(a), ns_life_model_voxel(b), (size_t)nc * 4) == 0 &&
           memcmp(ns_life_model_fiber(a), ns_life_model_fiber(b), (size_t)nc * 4) == 0 &&
           memcmp(ns_life_model_value(a), ns_life_model_value(b), (size_t)nc * 8) == 0 &&
           memcmp(ns_life_model_signal(a), ns_life_model_signal(b), (size_t)T * V * 8) == 0 &&
           memcmp(ns_life_model_dictionary(a), ns_life_model_dictionary(b),
                  (size_t)T * ns_life_model_n_atoms(a) * 8) == 0 &&
           memcmp(ns_life_built_voxel_ijk(x), ns_life_built_voxel_ijk(y), (size_t)V * 12) == 0 &&
           memcmp(ns_life_built_s0(x), ns_life_built_s0(y), (size_t)V * 8) == 0 &&
           memcmp(ns_life_built_streamline(x), ns_life_built_streamline(y), (size_t)F * 8) == 0 &&
           ns_life_built_stats(x)->nodes == ns_life_built_stats(y)->nodes &&
           ns_life_built_stats(x)->streamlines == ns_life_built_stats(y)->streamlines;
}

/* The build computes the streamlines' keys in batches on several threads and consumes them in
 * order: the model must be bit for bit the one of one thread. A phantom of 9,000 streamlines
 * (three batches of 4,096 or fewer) with its false random curves, on 1, 2 and 3 threads; a thread
 * count of -1 is refused. */
static void test_threads(void) {
    ns_life_phantom_options po;
    ns_life_phantom_options_init(&po);
    po.n_streamlines = 9000;
    po.grid = 32;
    po.seed = 7;
    char dir[512], dwi[600], bval[600], bvec[600], tck[600];
    snprintf(dir, sizeof dir, "%s", tmp("phantom_threads"));
    CHECK_OK(ns_life_phantom_write(&po, dir, NULL));
    snprintf(dwi, sizeof dwi, "%s/dwi.nii", dir), snprintf(bval, sizeof bval, "%s/dwi.bval", dir);
    snprintf(bvec, sizeof bvec, "%s/dwi.bvec", dir), snprintf(tck, sizeof tck, "%s/tracks.tck", dir);
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    o.bad = NS_LIFE_BAD_SKIP;
    o.threads = 1;
    ns_life_built_t *r1 = NULL;
    CHECK_OK(ns_life_build(dwi, bval, bvec, tck, &o, &r1));
    if (r1) CHECK(ns_life_built_stats(r1)->streamlines == 9000 && ns_life_built_stats(r1)->fibers > 8000);
    for (int32_t t = 2; t <= 3 && r1; ++t) {
        o.threads = t;
        ns_life_built_t *rt = NULL;
        CHECK_OK(ns_life_build(dwi, bval, bvec, tck, &o, &rt));
        const ns_life_build_stats *a = ns_life_built_stats(r1), *b = rt ? ns_life_built_stats(rt) : NULL;
        CHECK_MSG(same_built(r1, rt) && b && a->nodes_outside == b->nodes_outside &&
                      a->nodes_zero_gradient == b->nodes_zero_gradient && a->streamlines_dropped == b->streamlines_dropped,
                  "build on %d threads differs from one thread", (int)t);
        ns_life_built_destroy(rt);
    }
    ns_life_built_destroy(r1);
    o.threads = -1;
    ns_life_built_t *rb = NULL;
    ns_status s = ns_life_build(dwi, bval, bvec, tck, &o, &rb);
    CHECK_MSG(s == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "threads = -1") && !rb, "%s", ns_last_error());
}

/* The hand-made case from arrays: the image in Fortran order (float32, as
 * nibabel holds a NIfTI image) and in C order (float64), the streamlines in
 * world coordinates and in voxel coordinates with to_world; each gives the
 * model that ns_life_build gives from the files. Then every bad input. */
static void test_arrays(void) {
    const int L = 12;
    write_image(tmp("dwi.nii"), NT);
    write_gradients(tmp("g.bval"), tmp("g.bvec"), NT, 0);
    const double pts[][3] = {{0, 1, 1}, {0.5, 1, 1}, {1, 1, 1}, {1.5, 1, 1}, {2, 1, 1},
                             {1, 0.8, 1}, {1, 1.2, 1}, {1.4, 1.2, 1}};
    const int lens[2] = {5, 3};
    write_tck(tmp("t.tck"), pts, lens, 2);
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    o.dictionary_l = L;
    ns_life_built_t *ref = NULL, *r = NULL;
    CHECK_OK(ns_life_build(tmp("dwi.nii"), tmp("g.bval"), tmp("g.bvec"), tmp("t.tck"), &o, &ref));
    float f32[NT][NZ][NY][NX]; /* Fortran order of (i, j, k, t): i fastest */
    double f64[NX][NY][NZ][NT]; /* C order: t fastest */
    for (int t = 0; t < NT; ++t)
        for (int k = 0; k < NZ; ++k)
            for (int j = 0; j < NY; ++j)
                for (int i = 0; i < NX; ++i) f64[i][j][k][t] = f32[t][k][j][i] = (float)value_at(i, j, k, t);
    ns_life_image img = {f32, 16, {NX, NY, NZ, NT}, {1, NX, NX * NY, NX * NY * NZ}, {{0}}};
    for (int rr = 0; rr < 3; ++rr)
        for (int c = 0; c < 4; ++c) img.affine[rr][c] = SROW[4 * rr + c];
    img.affine[3][3] = 1;
    double bvecs[NT * 3], world[8 * 3];
    for (int t = 0; t < NT; ++t)
        for (int c = 0; c < 3; ++c) bvecs[3 * t + c] = BVEC[t][c];
    for (int p = 0; p < 8; ++p)
        world[3 * p] = 2 * pts[p][0] - 2, world[3 * p + 1] = pts[p][1] + 3, world[3 * p + 2] = pts[p][2];
    const int64_t offset[3] = {0, 5, 8};
    ns_life_streamlines tr = {2, offset, world, NULL};
    CHECK_OK(ns_life_build_arrays(&img, BVAL, bvecs, NT, &tr, &o, &r));
    CHECK_MSG(same_built(ref, r), "%s", "arrays (float32, Fortran order) differ from the files' model");
    CHECK(r && strcmp(ns_life_built_tracks_path(r), "") == 0);
    ns_life_built_destroy(r), r = NULL;
    ns_life_image img64 = img;
    img64.data = f64, img64.datatype = 64;
    img64.stride[0] = NY * NZ * NT, img64.stride[1] = NZ * NT, img64.stride[2] = NT, img64.stride[3] = 1;
    const double to_world[16] = {2, 0, 0, -2, 0, 1, 0, 3, 0, 0, 1, 0, 0, 0, 0, 1};
    ns_life_streamlines trv = {2, offset, &pts[0][0], to_world}; /* voxel coordinates (DIPY's vox space) */
    CHECK_OK(ns_life_build_arrays(&img64, BVAL, bvecs, NT, &trv, &o, &r));
    CHECK_MSG(same_built(ref, r), "%s", "arrays (float64, C order, voxel streamlines) differ from the files' model");
    ns_life_built_destroy(r), r = NULL;
    /* bad input: each names the argument */
    struct {
        ns_status want;
        const char *msg;
    } cases[] = {{NS_ERR_INVALID_ARGUMENT, "dwi: datatype 32 is not"},
                 {NS_ERR_SIZE, "bvals has 6 entries but dwi has 7 volumes"},
                 {NS_ERR_INVALID_ARGUMENT, "bvals: entry 3 is -1"},
                 {NS_ERR_NOT_FINITE, "tracks: streamline 1, point 2 is not finite"},
                 {NS_ERR_INVALID_ARGUMENT, "tracks: offset[2] = 4 is below offset[1] = 5"},
                 {NS_ERR_PARSE, "tracks: streamline 0, node 4"},
                 {NS_ERR_PARSE, "tracks: streamline 1 has 1 point"},
                 {NS_ERR_INVALID_ARGUMENT, "dwi: the affine must be finite"},
                 {NS_ERR_EMPTY, "tracks: the tractogram holds no streamline"},
                 {NS_ERR_SIZE, "dwi: a diffusion image needs 4 dimensions with >= 2 volumes"}};
    for (int q = 0; q < (int)(sizeof cases / sizeof *cases); ++q) {
        ns_life_image im = img;
        double bv[NT], w[8 * 3];
        memcpy(bv, BVAL, sizeof bv), memcpy(w, world, sizeof w);
        int64_t off[3] = {0, 5, 8};
        ns_life_streamlines t = {2, off, w, NULL};
        int32_t nv = NT;
        switch (q) {
        case 0: im.datatype = 32; break; /* complex64 */
        case 1: nv = NT - 1; break;
        case 2: bv[3] = -1; break;
        case 3: w[3 * 7 + 1] = NAN; break;
        case 4: off[2] = 4; break;
        case 5: w[3 * 4] = 2 * 3.6 - 2; break; /* node 4 of streamline 0 at i = 3.6 */
        case 6: off[1] = 7; break;
        case 7: im.affine[3][0] = 1; break;
        case 8: t.n = 0; break;
        case 9: im.dim[3] = 1, nv = 1; break;
        }
        ns_life_built_t *x = NULL;
        const ns_status s = ns_life_build_arrays(&im, bv, bvecs, nv, &t, &o, &x);
        CHECK_MSG(s == cases[q].want && strstr(ns_last_error(), cases[q].msg) && !x, "case %d: %d %s", q, (int)s,
                  ns_last_error());
    }
    CHECK(ns_life_build_arrays(NULL, BVAL, bvecs, NT, &tr, &o, &r) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "dwi"));
    CHECK(ns_life_build_arrays(&img, BVAL, bvecs, NT, NULL, &o, &r) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "tracks"));
    ns_life_built_destroy(ref);
}

/* The bundled real case from arrays read with the library's own readers
 * (the image as float64 values, the tractogram in world coordinates, packed):
 * the same model as ns_life_build on the files, bit for bit. */
static void test_real_case_arrays(void) {
    const char *d = NS_SOURCE_DATA;
    char dwi[512], bval[512], bvec[512], trk[512];
    snprintf(dwi, sizeof dwi, "%s/small_25.nii.gz", d);
    snprintf(bval, sizeof bval, "%s/small_25.bval", d);
    snprintf(bvec, sizeof bvec, "%s/small_25.bvec", d);
    snprintf(trk, sizeof trk, "%s/EuDX_small_25.trk", d);
    ns_life_built_t *ref = NULL, *r = NULL;
    CHECK_OK(ns_life_build(dwi, bval, bvec, trk, NULL, &ref));
    ns_nifti_t *img = NULL;
    ns_gradients gr;
    ns_tracts_t *t = NULL;
    CHECK_OK(ns_nifti_read(dwi, &img));
    CHECK_OK(ns_gradients_read(bval, bvec, &gr));
    CHECK_OK(ns_tracts_open(trk, &t));
    if (!img || !t || !ref) return;
    const ns_nifti_info *in = ns_nifti_get_info(img);
    double *vals = malloc((size_t)in->n_values * sizeof *vals);
    for (int64_t q = 0; q < in->n_values; ++q) vals[q] = ns_nifti_value(img, q);
    ns_life_image im = {vals, 64, {in->dim[0], in->dim[1], in->dim[2], in->dim[3]},
                        {1, in->dim[0], in->dim[0] * in->dim[1], in->dim[0] * in->dim[1] * in->dim[2]}, {{0}}};
    memcpy(im.affine, in->affine, sizeof im.affine);
    int64_t cap = 1 << 16, np = 0, ns_ = 0, *off = malloc(1001 * sizeof *off);
    double *pts = malloc((size_t)cap * 3 * sizeof *pts);
    off[0] = 0;
    for (;;) {
        const double *p;
        int64_t n;
        int end;
        if (ns_tracts_next(t, &p, &n, &end) != NS_OK || end || ns_ >= 1000) break;
        while (np + n > cap) cap *= 2, pts = realloc(pts, (size_t)cap * 3 * sizeof *pts);
        memcpy(pts + 3 * np, p, (size_t)n * 3 * sizeof *pts);
        np += n, off[++ns_] = np;
    }
    CHECK(ns_ == 60);
    ns_life_streamlines tr = {ns_, off, pts, NULL};
    CHECK_OK(ns_life_build_arrays(&im, gr.bvals, gr.bvecs, gr.n, &tr, NULL, &r));
    CHECK_MSG(same_built(ref, r), "%s", "the bundled case from arrays differs from ns_life_build on its files");
    ns_life_built_destroy(r);
    ns_life_built_destroy(ref);
    ns_tracts_close(t);
    ns_nifti_destroy(img);
    ns_gradients_free(&gr);
    free(vals), free(off), free(pts);
}

int main(void) {
    if (tmpdir_make("ns_life_build")) return 1;
    test_hand_made();
    test_real_case();
    test_arrays();
    test_threads();
    test_real_case_arrays();
    if (tmpdir_remove()) return 1;
    return check_summary("test_life_build");
}
