/* The on-chip kernel's schedule (src/hines/cuda/onchip_plan.c), checked
 * without a GPU, for every lane count: runs are chains of consecutive
 * positions, children are reduced before their parents (backward) and
 * parents solved before their children (forward); a host replay of the
 * kernel's two sweeps, run by run in the plan's step and lane order, must
 * reproduce the reference solve (ns_hines_solve_one) and its first bad
 * pivot. Lanes of a step are replayed in both orders, so a step that
 * depended on another lane of the same step would show. Needs a CUDA build
 * (the plan is compiled only there). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/hines.h"
#include "neurosolve/tree.h"

#ifdef NS_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "hines/cuda/onchip_plan.h"

/* The kernel's arithmetic (kernel_onchip.cu) on one cell's image in position
 * order (d, r and the outputs G in b, F then x in r); returns the highest
 * bad-pivot compartment or -1. */
static int replay(const ns_onchip_sched *s, double *a, double *b, double *d, double *r,
                  int reverse) {
    const int L = s->lanes;
    int worst = -1;
    for (int step = 0; step < s->n_bwd; ++step)
        for (int l0 = 0; l0 < L; ++l0) {
            const int lane = reverse ? L - 1 - l0 : l0;
            for (int q = s->bwd_begin[step * L + lane]; q < s->bwd_begin[step * L + lane + 1]; ++q) {
                const int32_t *x = s->bwd_desc + 4 * q;
                const int first = x[0], cb = (int)((uint32_t)x[3] >> 16), ce = cb + (x[3] & 0xFFFF);
                int node = x[1];
                double dk = d[node], rk = r[node];
                for (int j = cb; j < ce; ++j) {
                    const int c = s->child_pos[j];
                    dk -= a[c] * b[c];
                    rk -= a[c] * r[c];
                }
                for (;;) {
                    if (dk == 0.0 || !isfinite(dk)) {
                        const int orig = s->identity ? node : s->node_of_pos[node];
                        if (orig > worst) worst = orig;
                    }
                    const double inv = 1.0 / dk, an = a[node], bn = b[node];
                    b[node] = bn * inv;
                    r[node] = rk * inv;
                    if (node == first) break;
                    dk = d[node - 1] - an * bn * inv;
                    rk = r[node - 1] - an * r[node];
                    --node;
                }
            }
        }
    for (int step = 0; step < s->n_fwd; ++step)
        for (int l0 = 0; l0 < L; ++l0) {
            const int lane = reverse ? L - 1 - l0 : l0;
            for (int q = s->fwd_begin[step * L + lane]; q < s->fwd_begin[step * L + lane + 1]; ++q) {
                const int32_t *x = s->fwd_desc + 4 * q;
                double xp = x[2] >= 0 ? r[x[2]] : 0.0;
                for (int node = x[0]; node <= x[1]; ++node) {
                    const double g = (node == x[0] && x[2] < 0) ? 0.0 : b[node];
                    xp = r[node] - g * xp;
                    r[node] = xp;
                }
            }
        }
    return worst;
}

/* Structural checks, then replay against the reference on random values. */
static void check_plan(const ns_tree_t *t, int32_t lanes, uint64_t seed) {
    const int32_t n = ns_tree_size(t);
    const int32_t *parent = ns_tree_parent(t);
    ns_onchip_plan plan;
    CHECK_OK(ns_onchip_plan_build(n, parent, lanes, &plan));
    if (!plan.data) return;
    ns_onchip_sched s;
    ns_onchip_plan_bind(&plan, plan.data, &s);
    CHECK(s.lanes == lanes && s.n == n);
    /* Positions are a permutation; every run is a chain of consecutive
     * positions; every run scheduled once per sweep, after its children
     * (backward) and after its parent (forward). */
    int *seen = calloc((size_t)n, sizeof *seen), *bstep = calloc((size_t)n, sizeof *bstep);
    int *fstep = calloc((size_t)n, sizeof *fstep);
    CHECK(seen && bstep && fstep);
    int identity = 1;
    for (int i = 0; seen && i < n; ++i) {
        const int p = s.pos_of_node[i];
        CHECK(p >= 0 && p < n && s.node_of_pos[p] == i);
        if (p >= 0 && p < n) seen[p]++;
        if (p != i) identity = 0;
    }
    CHECK(identity == s.identity);
    for (int i = 0; seen && i < n; ++i) CHECK(seen[i] == 1);
    int runs = 0, nodes = 0;
    for (int step = 0; bstep && step < s.n_bwd; ++step)
        for (int q = s.bwd_begin[step * lanes]; q < s.bwd_begin[(step + 1) * lanes]; ++q) {
            const int32_t *x = s.bwd_desc + 4 * q;
            runs++;
            nodes += x[1] - x[0] + 1;
            for (int p = x[0] + 1; p <= x[1]; ++p)
                CHECK(parent[s.node_of_pos[p]] == s.node_of_pos[p - 1]);
            CHECK(x[2] == (x[0] == 0 ? -1 : s.pos_of_node[parent[s.node_of_pos[x[0]]]]));
            for (int p = x[0]; p <= x[1]; ++p) bstep[p] = step + 1;
        }
    CHECK(nodes == n && runs == plan.n_runs);
    for (int step = 0; bstep && step < s.n_bwd; ++step)
        for (int q = s.bwd_begin[step * lanes]; q < s.bwd_begin[(step + 1) * lanes]; ++q) {
            const int32_t *x = s.bwd_desc + 4 * q;
            const int cb = (int)((uint32_t)x[3] >> 16), ce = cb + (x[3] & 0xFFFF);
            for (int j = cb; j < ce; ++j) {
                const int c = s.child_pos[j];
                CHECK(bstep[c] >= 1 && bstep[c] <= step); /* child done in an earlier step */
                CHECK(parent[s.node_of_pos[c]] == s.node_of_pos[x[1]]);
            }
        }
    for (int step = 0; fstep && step < s.n_fwd; ++step)
        for (int q = s.fwd_begin[step * lanes]; q < s.fwd_begin[(step + 1) * lanes]; ++q) {
            const int32_t *x = s.fwd_desc + 4 * q;
            if (x[2] >= 0) CHECK(fstep[x[2]] >= 1 && fstep[x[2]] <= step);
            for (int p = x[0]; p <= x[1]; ++p) fstep[p] = step + 1;
        }
    for (int p = 0; fstep && p < n; ++p) CHECK(fstep[p] >= 1);
    CHECK(s.bwd_begin[s.n_bwd * lanes] == plan.n_runs && s.fwd_begin[s.n_fwd * lanes] == plan.n_runs);
    CHECK(plan.bwd_cost >= 1 && plan.fwd_cost >= 1);
    free(seen);
    free(bstep);
    free(fstep);

    const ns_tree_t *shapes[1] = {t};
    ns_batch_t *batch = NULL;
    CHECK_OK(ns_batch_create(1, shapes, 1, NULL, &batch));
    const size_t bytes = (size_t)n * sizeof(double);
    double *a = malloc(bytes), *b = malloc(bytes), *d = malloc(bytes), *r = malloc(bytes);
    double *img = malloc(8 * bytes);
    if (batch && a && b && d && r && img) {
        for (int bad = 0; bad < 2; ++bad) {
            CHECK_OK(ns_batch_random_values(batch, seed, a, b, d, r));
            if (bad) d[n - 1] = 0.0; /* the last node is a leaf: its pivot is its input */
            double *x[2];
            int w[2];
            for (int rev = 0; rev < 2; ++rev) { /* the cell's image in position order */
                double *ia = img + 4 * (size_t)rev * n, *ib = ia + n, *id = ib + n, *ir = id + n;
                for (int i = 0; i < n; ++i) {
                    const int p = s.pos_of_node[i];
                    ia[p] = a[i], ib[p] = b[i], id[p] = d[i], ir[p] = r[i];
                }
                w[rev] = replay(&s, ia, ib, id, ir, rev);
                x[rev] = ir;
            }
            const int ref = ns_hines_solve_one(n, parent, a, b, d, r);
            CHECK_MSG(w[0] == ref && w[1] == ref, "n %d, %d lanes: bad pivot %d / %d, reference %d",
                      (int)n, (int)lanes, w[0], w[1], ref);
            if (bad) continue;
            double diff = 0.0, scale = 1e-300;
            for (int32_t i = 0; i < n; ++i) {
                const int p = s.pos_of_node[i];
                const double e = fabs(x[0][p] - r[i]);
                if (!(e <= diff)) diff = e;
                if (fabs(r[i]) > scale) scale = fabs(r[i]);
                CHECK(x[0][p] == x[1][p]); /* lane order within a step does not matter */
            }
            CHECK_MSG(diff / scale <= 1e-12, "n %d, %d lanes: error %.3g", (int)n, (int)lanes,
                      diff / scale);
        }
    }
    free(a), free(b), free(d), free(r), free(img);
    ns_batch_destroy(batch);
    ns_onchip_plan_free(&plan);
}

static void check_tree(const ns_tree_t *t, uint64_t seed) {
    for (int32_t lanes = 1; lanes <= NS_ONCHIP_LANES; lanes *= 2) check_plan(t, lanes, seed);
}

/* On a GPU (skipped without one): the kernel itself with every lane count
 * and 1 or 2 warps per block, on `cells` cells (not a multiple of the cells
 * per warp), against the reference solve cell by cell. */
static void check_gpu(const ns_tree_t *t, int64_t cells, uint64_t seed) {
    const int32_t n = ns_tree_size(t);
    const int32_t *parent = ns_tree_parent(t);
    const ns_tree_t *shapes[1] = {t};
    ns_batch_t *batch = NULL;
    CHECK_OK(ns_batch_create(1, shapes, cells, NULL, &batch));
    const size_t total = (size_t)cells * (size_t)n, bytes = total * sizeof(double);
    double *h = malloc(6 * bytes);
    double *g[4] = {NULL, NULL, NULL, NULL};
    int32_t *gplan = NULL;
    unsigned long long *gbad = NULL;
    int ok = batch && h;
    for (int k = 0; ok && k < 4; ++k) ok = cudaMalloc((void **)&g[k], bytes) == cudaSuccess;
    ok = ok && cudaMalloc((void **)&gbad, sizeof *gbad) == cudaSuccess;
    CHECK(ok);
    if (ok) {
        double *ha = h, *hb = ha + total, *hd = hb + total, *hr = hd + total, *ref = hr + total;
        double *x = ref + total;
        CHECK_OK(ns_batch_random_values(batch, seed, ha, hb, hd, hr));
        memcpy(ref, hr, bytes);
        double *dtmp = x; /* scratch for the reference's d */
        memcpy(dtmp, hd, bytes);
        for (int64_t c = 0; c < cells; ++c)
            CHECK(ns_hines_solve_one(n, parent, ha + c * n, hb + c * n, dtmp + c * n, ref + c * n) < 0);
        const double *src[4] = {ha, hb, hd, hr};
        int optin_i = 0;
        if (cudaDeviceGetAttribute(&optin_i, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) != cudaSuccess)
            optin_i = 48 * 1024;
        const size_t optin = (size_t)optin_i;
        for (int32_t lanes = 1; lanes <= NS_ONCHIP_LANES; lanes *= 2)
            for (int warps = 1; warps <= 2; ++warps) {
                ns_onchip_plan plan;
                CHECK_OK(ns_onchip_plan_build(n, parent, lanes, &plan));
                if (!plan.data) continue;
                const size_t smem =
                    ns_onchip_block_bytes(n, lanes, (int32_t)plan.pos_of_node, warps);
                if (smem > optin) { /* does not fit one block: never launched so */
                    ns_onchip_plan_free(&plan);
                    continue;
                }
                ns_onchip_sched s;
                const unsigned long long none = NS_PIVOT_NONE;
                int run = cudaMalloc((void **)&gplan, plan.count * sizeof(int32_t)) == cudaSuccess &&
                          cudaMemcpy(gplan, plan.data, plan.count * sizeof(int32_t),
                                     cudaMemcpyHostToDevice) == cudaSuccess &&
                          cudaMemcpy(gbad, &none, sizeof none, cudaMemcpyHostToDevice) == cudaSuccess;
                for (int k = 0; run && k < 4; ++k)
                    run = cudaMemcpy(g[k], src[k], bytes, cudaMemcpyHostToDevice) == cudaSuccess;
                if (run && smem > 48 * 1024) run = ns_hines_onchip_setup(lanes, smem) == cudaSuccess;
                if (run) {
                    ns_onchip_plan_bind(&plan, gplan, &s);
                    run = ns_hines_launch_onchip(&s, g[0], g[1], g[2], g[3], cells, 0, warps, gbad,
                                                 0) == cudaSuccess &&
                          cudaMemcpy(x, g[3], bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
                }
                unsigned long long flag = 0;
                run = run && cudaMemcpy(&flag, gbad, sizeof flag, cudaMemcpyDeviceToHost) == cudaSuccess;
                CHECK_MSG(run, "n %d, %d lanes, %d warps: %s", (int)n, (int)lanes, warps,
                          cudaGetErrorString(cudaGetLastError()));
                if (run) {
                    double worst = 0.0;
                    for (int64_t c = 0; c < cells; ++c) {
                        double diff = 0.0, scale = 1e-300;
                        for (int32_t i = 0; i < n; ++i) {
                            const double e = fabs(x[c * n + i] - ref[c * n + i]);
                            if (!(e <= diff)) diff = e;
                            if (fabs(ref[c * n + i]) > scale) scale = fabs(ref[c * n + i]);
                        }
                        if (!(diff / scale <= worst)) worst = diff / scale;
                    }
                    CHECK_MSG(worst <= 1e-12, "GPU, n %d, %d lanes, %d warps, %lld cells: error %.3g",
                              (int)n, (int)lanes, warps, (long long)cells, worst);
                    CHECK(flag == NS_PIVOT_NONE);
                }
                cudaFree(gplan);
                gplan = NULL;
                ns_onchip_plan_free(&plan);
            }
    }
    for (int k = 0; k < 4; ++k) cudaFree(g[k]);
    cudaFree(gbad);
    free(h);
    ns_batch_destroy(batch);
}

static int have_gpu(void) {
    int count = 0;
    const int ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    (void)cudaGetLastError();
    return ok;
}

int main(void) {
    const int gpu = have_gpu();
    if (!gpu) printf("no GPU: the plan is checked on the host only\n");
    static const char *names[] = {"small-low", "small-high", "medium-low",
                                  "medium-high", "big-low", "big-high"};
    for (int k = 0; k < 6; ++k) {
        ns_tree_t *t = NULL;
        CHECK_OK(ns_generate_paper_tree(names[k], 1 + (uint64_t)k, &t));
        if (t) check_tree(t, 10 + (uint64_t)k);
        if (t && gpu) check_gpu(t, 37 + 64 * k, 20 + (uint64_t)k);
        ns_tree_destroy(t);
    }
    /* Random trees, many with runs that are not consecutive indices. */
    for (uint32_t seed = 1; seed < 150; ++seed) {
        const int32_t n = 1 + (int32_t)(seed * 7 % 300);
        int32_t *p = malloc((size_t)n * sizeof *p);
        if (!p) break;
        uint32_t x = seed * 2654435761u;
        p[0] = -1;
        for (int32_t i = 1; i < n; ++i) {
            x = x * 1103515245u + 12345u;
            p[i] = ((x >> 8) % 100 < 60) ? i - 1 : (int32_t)((x >> 8) % (uint32_t)i);
        }
        ns_tree_t *t = NULL;
        CHECK_OK(ns_tree_create(n, p, &t));
        if (t) check_tree(t, seed);
        if (t && gpu && seed % 16 == 1) check_gpu(t, 33, seed); /* incl. n = 1, non-identity */
        ns_tree_destroy(t);
        free(p);
    }
    return check_summary("test_hines_cuda_plan");
}
#else
int main(void) { CHECK_SKIP("the on-chip plan is built only with CUDA (NS_CUDA=ON)"); }
#endif
