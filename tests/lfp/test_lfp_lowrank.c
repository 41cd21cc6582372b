/* LOWRANK coefficients (docs/extracellular.md, "Memory"): the truncated
 * pivoted QR against LAPACK (dgeqp3's pivots and R, dgesvd's singular values)
 * on a real block of coefficients, and runs against the dense storage: every
 * sample within its bound, the bound below the tolerance, the populations,
 * thread counts bit for bit, a bound above the tolerance (test_lfp checks
 * the refusals of bad options); with the argument cuda (ctest
 * test_lfp_lowrank_cuda) the GPU's products against the CPU's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lfp/lfp_impl.h"
#include "neurosolve/neurosolve.h"

extern void dgeqp3_(const int *m, const int *n, double *a, const int *lda, int *jpvt, double *tau, double *work,
                    const int *lwork, int *info);
extern void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a, const int *lda,
                    double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
                    int *info);

#define MORPH NS_MORPHOLOGIES "/dg_granule_1220882a.swc"
#define MORPH2 NS_MORPHOLOGIES "/celegans_M5.swc"
#define PROBE NS_TEST_DATA "/../../data/probes/neuropixels_like.txt"
enum { CELLS = 9, STEPS = 60, EVERY = 2 };

typedef struct run {
    double *phi, *pop, *M, bound;
    int32_t ranks[CELLS];
    int64_t samples, n_comp, off[CELLS + 1];
    ns_status advance;
} run;

static double *copy_of(const double *src, int64_t n) {
    double *d = src ? malloc((size_t)n * sizeof *d) : NULL;
    if (d) memcpy(d, src, (size_t)n * sizeof *d);
    return d;
}

/* CELLS granule cells placed along the shank (the last one 600 um away from it), in two
 * populations, a clamp on each soma, sampled every EVERY steps over two advances; with
 * other, every third cell (k % 3 == 2) is that cell instead; with twins, cells 3 .. 5 are
 * placed as cells 0 .. 2 (the same shapes: the same coefficients, computed once). */
static void run_cells(const ns_cell_t *cell, const ns_cell_t *other, const ns_lfp_probe *probe, ns_backend backend,
                      ns_lfp_storage storage, int32_t threads, double rank_tolerance, double tolerance, int twins,
                      run *o) {
    memset(o, 0, sizeof *o);
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options so;
    ns_sim_options_init(&so);
    so.backend = backend;
    so.threads = threads;
    int32_t shapes[CELLS] = {0}, pop[CELLS];
    const ns_cell_t *both[2] = {cell, other};
    const int32_t n_shapes = other ? 2 : 1;
    double place[6 * CELLS];
    for (int k = 0; k < CELLS; ++k) {
        shapes[k] = other && k % 3 == 2;
        const double far = k == CELLS - 1 ? 600.0 : 0.0;
        const double row[6] = {30.0 * (k % 3) - 30.0 + far, 25.0 * (k % 2), 150.0 * k, 1.5707963267948966, 0.3 * k, 0.4 * k};
        memcpy(place + 6 * k, twins && k >= 3 && k < 6 ? place + 6 * (k - 3) : row, sizeof row);
        pop[k] = k % 2;
    }
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(n_shapes, both, CELLS, shapes, &p, &so, &sim));
    if (!sim) return;
    for (int q = 0; q < CELLS; ++q) {
        int32_t soma;
        CHECK_OK(ns_cell_locate(both[shapes[q]], 0, 0.5, &soma));
        CHECK_OK(ns_sim_add_iclamp(sim, q, soma, 0.2 + 0.05 * q, 5.0, 0.5));
    }
    CHECK_OK(ns_sim_init(sim));
    ns_lfp_options lo;
    ns_lfp_options_init(&lo);
    lo.placement = place;
    lo.population = pop;
    lo.every = EVERY;
    lo.storage = storage;
    lo.threads = threads;
    lo.rank_tolerance = rank_tolerance;
    lo.tolerance = tolerance;
    ns_lfp_t *lfp = NULL;
    CHECK_OK(ns_lfp_create(sim, n_shapes, both, probe, &lo, &lfp));
    if (lfp) {
        CHECK(ns_lfp_storage_used(lfp) == storage);
        o->advance = ns_sim_advance(sim, STEPS / 2);
        if (o->advance == NS_OK) o->advance = ns_sim_advance(sim, STEPS - STEPS / 2);
        const int64_t S = ns_lfp_samples(lfp), E = probe->n;
        o->samples = S;
        o->n_comp = ns_sim_compartments(sim);
        for (int c = 0; c <= CELLS; ++c) o->off[c] = c < CELLS ? ns_sim_cell_offset(sim, c) : o->n_comp;
        o->phi = copy_of(ns_lfp_potentials(lfp), S * E);
        o->pop = copy_of(ns_lfp_population_potentials(lfp), S * 2 * E);
        o->M = copy_of(ns_lfp_coefficients(lfp), E * o->n_comp);
        o->bound = ns_lfp_error_bound(lfp);
        const int32_t *r = ns_lfp_ranks(lfp);
        CHECK((r != NULL) == (storage == NS_LFP_STORAGE_LOWRANK));
        CHECK((o->M != NULL) == (storage == NS_LFP_STORAGE_DENSE));
        if (r) memcpy(o->ranks, r, sizeof o->ranks);
    }
    ns_lfp_destroy(lfp);
    ns_sim_destroy(sim);
}

static void run_free(run *o) { free(o->phi), free(o->pop), free(o->M); }

/* The pivoted QR of cell 0's block (48 contacts x its compartments, column-major) against
 * LAPACK: the same pivots and |R| as dgeqp3 up to the rank, Q orthonormal, the residual
 * within the tolerance, the rank at least the SVD's least rank of that residual and close to it. */
static void test_pqr(const double *M, int64_t E, int64_t n_comp, int64_t n) {
    const int m = (int)E, nn = (int)n, k = m < nn ? m : nn;
    double *A = malloc((size_t)(m * nn) * sizeof *A), *B = malloc((size_t)(m * nn) * sizeof *B);
    double *tau = malloc((size_t)k * sizeof *tau), *tau2 = malloc((size_t)k * sizeof *tau2);
    double *cn = malloc(2 * (size_t)nn * sizeof *cn), *s = malloc((size_t)k * sizeof *s);
    int64_t *perm = malloc((size_t)nn * sizeof *perm);
    int *jpvt = calloc((size_t)nn, sizeof *jpvt);
    if (!A || !B || !tau || !tau2 || !cn || !s || !perm || !jpvt) goto out;
    double fro = 0.0;
    for (int e = 0; e < m; ++e)
        for (int j = 0; j < nn; ++j) A[j * m + e] = B[j * m + e] = M[e * n_comp + j], fro += M[e * n_comp + j] * M[e * n_comp + j];
    fro = sqrt(fro);
    int info = 0, lwork = -1;
    double q;
    dgesvd_("N", "N", &m, &nn, B, &m, s, NULL, &m, NULL, &nn, &q, &lwork, &info);
    lwork = (int)q;
    double *work = malloc((size_t)lwork * sizeof *work);
    if (work) dgesvd_("N", "N", &m, &nn, B, &m, s, NULL, &m, NULL, &nn, work, &lwork, &info);
    free(work);
    CHECK(info == 0);
    for (int e = 0; e < m; ++e)
        for (int j = 0; j < nn; ++j) B[j * m + e] = A[j * m + e];
    lwork = -1;
    dgeqp3_(&m, &nn, B, &m, jpvt, tau2, &q, &lwork, &info);
    lwork = (int)q;
    work = malloc((size_t)lwork * sizeof *work);
    if (work) dgeqp3_(&m, &nn, B, &m, jpvt, tau2, work, &lwork, &info);
    free(work);
    CHECK(info == 0);
    const double tols[3] = {1e-6, 1e-8, 1e-10};
    for (int t = 0; t < 3; ++t) {
        double *C = malloc((size_t)(m * nn) * sizeof *C);
        if (!C) break;
        memcpy(C, A, (size_t)(m * nn) * sizeof *C);
        const int64_t r = ns_lfp_pqr(C, m, nn, tols[t], tau, perm, cn);
        /* the SVD's least rank with a residual within the tolerance: no rank does better */
        int64_t rs = k;
        double tail = 0.0;
        while (rs > 0 && sqrt(tail + s[rs - 1] * s[rs - 1]) <= tols[t] * fro) tail += s[rs - 1] * s[rs - 1], --rs;
        /* the residual (the trailing block) as stored */
        double res = 0.0, diag = 0.0;
        for (int64_t j = r; j < nn; ++j)
            for (int64_t i = r; i < m; ++i) res += C[j * m + i] * C[j * m + i];
        int same = 1;
        for (int64_t i = 0; i < r; ++i) {
            same &= perm[i] == jpvt[i] - 1;
            diag = fmax(diag, fabs(fabs(C[i * m + i]) - fabs(B[i * m + i])) / fabs(B[0]));
        }
        CHECK_MSG(sqrt(res) <= tols[t] * fro * (1 + 1e-12), "pqr %g: residual %.3g of the block", tols[t],
                  sqrt(res) / fro);
        CHECK_MSG(r >= rs && r <= rs + rs / 4 + 2, "pqr %g: rank %lld, the SVD's %lld", tols[t], (long long)r,
                  (long long)rs);
        CHECK_MSG(same && diag <= 1e-12, "pqr %g: dgeqp3's pivots %s, |R_ii| within %.3g", tols[t],
                  same ? "alike" : "differ", diag);
        printf("pqr, %d x %d block at %g: rank %lld (SVD %lld), |R_ii| vs dgeqp3 %.3g\n", m, nn, tols[t], (long long)r,
               (long long)rs, diag);
        free(C);
    }
out:
    free(A), free(B), free(tau), free(tau2), free(cn), free(s), free(perm), free(jpvt);
}

static void test_runs(const ns_cell_t *cell, const ns_lfp_probe *probe) {
    run d, l, l2, loose;
    run_cells(cell, NULL, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_DENSE, 1, 0.0, 0.0, 0, &d);
    run_cells(cell, NULL, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 1, 0.0, 0.0, 0, &l);
    run_cells(cell, NULL, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 2, 0.0, 0.0, 0, &l2);
    run_cells(cell, NULL, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 1, 1e-7, 0.0, 0, &loose);
    const int64_t E = probe->n, S = d.samples;
    if (d.phi && d.pop && d.M && l.phi && l.pop && l2.phi && l2.pop && loose.phi && l.samples == S &&
        loose.samples == S) {
        CHECK_OK(l.advance);
        CHECK_OK(loose.advance);
        test_pqr(d.M, E, d.n_comp, d.n_comp / CELLS);
        double worst = 0.0, over = 0.0, lworst = 0.0, lover = 0.0;
        for (int64_t k = 0; k < S; ++k) {
            double big = 0.0, dd = 0.0, dl = 0.0, dp = 0.0;
            for (int64_t e = 0; e < E; ++e) {
                big = fmax(big, fabs(d.phi[k * E + e]));
                dd = fmax(dd, fabs(l.phi[k * E + e] - d.phi[k * E + e]));
                dl = fmax(dl, fabs(loose.phi[k * E + e] - d.phi[k * E + e]));
                for (int p = 0; p < 2; ++p) /* a population's error: its cells' terms of the same bound */
                    dp = fmax(dp, fabs(l.pop[(k * 2 + p) * E + e] - d.pop[(k * 2 + p) * E + e]));
            }
            worst = fmax(worst, dd / big), lworst = fmax(lworst, dl / big);
            over = fmax(over, fmax(dd, dp) / big / l.bound), lover = fmax(lover, dl / big / loose.bound);
        }
        CHECK_MSG(worst > 0.0 && over <= 1.0 && l.bound <= 1e-6,
                  "lowrank: %.3g of each sample's largest from the dense run, bound %.3g", worst, l.bound);
        CHECK_MSG(lworst > worst && lover <= 1.0 && loose.bound > l.bound,
                  "lowrank at 1e-7: %.3g from the dense run, bound %.3g", lworst, loose.bound);
        CHECK(memcmp(l.phi, l2.phi, (size_t)(S * E) * sizeof *l.phi) == 0);
        CHECK(memcmp(l.pop, l2.pop, (size_t)(S * 2 * E) * sizeof *l.pop) == 0 && l.bound == l2.bound);
        int64_t sum = 0, lsum = 0;
        for (int c = 0; c < CELLS; ++c) {
            sum += l.ranks[c], lsum += loose.ranks[c];
            CHECK(l.ranks[c] > 0 && l.ranks[c] <= E && loose.ranks[c] <= l.ranks[c]);
        }
        CHECK(lsum < sum);
        CHECK(l.ranks[CELLS - 1] < l.ranks[0]); /* the cell away from the shank: a smoother block */
        printf("lowrank (CPU), %d cells x %lld contacts: ranks %lld in all (1e-7: %lld), %.3g of each sample's largest "
               "from dense, bound %.3g (1e-7: %.3g, bound %.3g)\n", CELLS, (long long)E, (long long)sum,
               (long long)lsum, worst, l.bound, lworst, loose.bound);
    }
    run_free(&d), run_free(&l), run_free(&l2), run_free(&loose);
    /* a tolerance below the bound fails the advance, naming both */
    run tight;
    run_cells(cell, NULL, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 1, 1e-4, 1e-9, 0, &tight);
    CHECK_MSG(tight.advance == NS_ERR_UNSUPPORTED && strstr(ns_last_error(), "lowrank coefficients") &&
                  strstr(ns_last_error(), "above the tolerance 1e-09") && tight.bound > 1e-9,
              "a bound above the tolerance: %s", ns_last_error());
    run_free(&tight);
}

/* The GPU's lowrank products (the factors uploaded once; per reduction V_k I_k per group of
 * cells of one size and padded rank, then U_p W_p per population) against the CPU's, and
 * within its bound of dense; two morphologies and ranks that vary, so that groups hold one
 * and several cells. */
static void test_backend(const ns_cell_t *cell, const ns_cell_t *other, const ns_lfp_probe *probe, ns_backend backend) {
    run c, g, d;
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 1, 0.0, 0.0, 0, &c);
    run_cells(cell, other, probe, backend, NS_LFP_STORAGE_LOWRANK, 0, 0.0, 0.0, 0, &g);
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_DENSE, 1, 0.0, 0.0, 0, &d);
    const int64_t E = probe->n, S = c.samples;
    if (c.phi && c.pop && g.phi && g.pop && d.phi && g.samples == S && d.samples == S) {
        CHECK_OK(g.advance);
        double pw = 0.0, dw = 0.0;
        for (int64_t k = 0; k < S; ++k) {
            double big = 0.0, dp = 0.0, dd = 0.0;
            for (int64_t e = 0; e < E; ++e) {
                big = fmax(big, fabs(c.phi[k * E + e]));
                dp = fmax(dp, fabs(g.phi[k * E + e] - c.phi[k * E + e]));
                dd = fmax(dd, fabs(g.phi[k * E + e] - d.phi[k * E + e]));
                for (int p = 0; p < 2; ++p)
                    dp = fmax(dp, fabs(g.pop[(k * 2 + p) * E + e] - c.pop[(k * 2 + p) * E + e]));
            }
            pw = fmax(pw, dp / big), dw = fmax(dw, dd / big);
        }
        CHECK(memcmp(c.ranks, g.ranks, sizeof c.ranks) == 0);
        CHECK_MSG(pw <= 1e-9 && fabs(g.bound - c.bound) <= 1e-6 * c.bound && dw <= g.bound,
                  "lowrank %s vs CPU: potentials %.3g, bounds %.6g and %.6g; vs dense %.3g", ns_backend_name(backend), pw,
                  g.bound, c.bound, dw);
        printf("lowrank %s vs CPU (two morphologies): potentials %.3g of the largest, bounds %.6g / %.6g, vs dense "
               "%.3g\n", ns_backend_name(backend), pw, g.bound, c.bound, dw);
    }
    run_free(&c), run_free(&g), run_free(&d);
}

/* The largest over the S samples of max_e |a - b| / max_e |b| (E per sample). */
static double sample_diff(const double *a, const double *b, int64_t S, int64_t E) {
    double worst = 0.0;
    for (int64_t k = 0; k < S; ++k) {
        double big = 0.0, d = 0.0;
        for (int64_t e = 0; e < E; ++e) big = fmax(big, fabs(b[k * E + e])), d = fmax(d, fabs(a[k * E + e] - b[k * E + e]));
        worst = fmax(worst, d / big);
    }
    return worst;
}

/* Twins (cells of one shape placed alike, ns_lfp_create computing their coefficients once): the
 * dense columns of cells 3 .. 5 equal, bit for bit, those that a run without twins computed for
 * cells 0 .. 2 at the same places, the others those of that run's same cells; lowrank shares
 * the factors (the same ranks as the run without twins, cells 3 .. 5 those of 0 .. 2), stays
 * within its bound of the dense twins' potentials, the same for 1 and 2 threads; with cuda the
 * GPU's (the shared factors uploaded per cell) against the CPU's. */
static void test_twins(const ns_cell_t *cell, const ns_cell_t *other, const ns_lfp_probe *probe, int cuda) {
    run d, dt, l, lt, lt2, gt;
    const ns_backend gpu = cuda ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_DENSE, 1, 0.0, 0.0, 0, &d);
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_DENSE, 2, 0.0, 0.0, 1, &dt);
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 1, 0.0, 0.0, 0, &l);
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 1, 0.0, 0.0, 1, &lt);
    run_cells(cell, other, probe, NS_BACKEND_CPU, NS_LFP_STORAGE_LOWRANK, 2, 0.0, 0.0, 1, &lt2);
    run_cells(cell, other, probe, gpu, NS_LFP_STORAGE_LOWRANK, cuda ? 0 : 1, 0.0, 0.0, 1, &gt);
    const int64_t E = probe->n, S = dt.samples;
    if (d.M && dt.M && dt.phi && l.phi && lt.phi && lt2.phi && gt.phi && lt.samples == S && lt2.samples == S &&
        gt.samples == S) {
        CHECK_OK(lt.advance);
        CHECK_OK(gt.advance);
        int same = 1;
        for (int c = 0; c < CELLS; ++c) {
            const int src = c >= 3 && c < 6 ? c - 3 : c;
            const int64_t n = dt.off[c + 1] - dt.off[c];
            CHECK(n == d.off[src + 1] - d.off[src]);
            for (int64_t e = 0; e < E && n == d.off[src + 1] - d.off[src]; ++e)
                same &= memcmp(dt.M + e * dt.n_comp + dt.off[c], d.M + e * d.n_comp + d.off[src],
                               (size_t)n * sizeof *d.M) == 0;
            CHECK(lt.ranks[c] == l.ranks[src] && gt.ranks[c] == lt.ranks[c]);
        }
        CHECK_MSG(same, "twins: the copied dense columns differ from those computed");
        const double over = sample_diff(lt.phi, dt.phi, S, E) / lt.bound, pw = sample_diff(gt.phi, lt.phi, S, E);
        CHECK_MSG(over <= 1.0 && lt.bound <= 1e-6, "lowrank twins: %.3g of the bound from the dense twins", over);
        CHECK(memcmp(lt.phi, lt2.phi, (size_t)(S * E) * sizeof *lt.phi) == 0 && lt.bound == lt2.bound);
        CHECK_MSG(pw <= 1e-9, "lowrank twins, %s vs CPU: %.3g of the largest", ns_backend_name(gpu), pw);
        printf("twins: dense columns copied %s; lowrank %.3g of its bound from dense, %s vs CPU %.3g\n",
               same ? "bit for bit" : "WRONG", over, ns_backend_name(gpu), pw);
    }
    run_free(&d), run_free(&dt), run_free(&l), run_free(&lt), run_free(&lt2), run_free(&gt);
}

int main(int argc, char **argv) {
    const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (cuda) {
        int gpus = 0;
        if (ns_cuda_device_count(&gpus) != NS_OK || gpus == 0) CHECK_SKIP("no usable GPU (the lowrank LFP on the GPU)");
    }
    ns_morph_t *mo = NULL, *mo2 = NULL;
    ns_cell_t *cell = NULL, *other = NULL;
    CHECK_OK(ns_swc_read(MORPH, NULL, &mo));
    if (mo) CHECK_OK(ns_discretize(mo, NULL, &cell));
    CHECK_OK(ns_swc_read(MORPH2, NULL, &mo2));
    if (mo2) CHECK_OK(ns_discretize(mo2, NULL, &other));
    ns_lfp_probe probe;
    CHECK_OK(ns_lfp_probe_read(PROBE, 9, &probe));
    if (cell && probe.n >= 96) {
        probe.n = 96; /* the lowest 96 contacts (0 .. 940 um): the cells' column */
        if (!cuda) test_runs(cell, &probe);
        if (other) test_backend(cell, other, &probe, cuda ? NS_BACKEND_CUDA : NS_BACKEND_CPU);
        if (other) test_twins(cell, other, &probe, cuda);
    }
    ns_lfp_probe_free(&probe);
    ns_cell_destroy(cell), ns_cell_destroy(other);
    ns_morph_destroy(mo), ns_morph_destroy(mo2);
    return check_summary(cuda ? "test_lfp_lowrank cuda" : "test_lfp_lowrank");
}
