/* The on-chip kernel's schedule (src/hines/cuda/onchip_plan.c), checked
 * without a GPU: a host replay of the kernel's two sweeps, run by run in the
 * plan's step and lane order, must reproduce the reference solve
 * (ns_hines_solve_one) and its first bad pivot. Lanes of a step are replayed
 * in both orders, so a step that depended on another lane of the same step
 * would show. Needs a CUDA build (the plan is compiled only there). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/hines.h"
#include "neurosolve/tree.h"

#ifdef NS_HAVE_CUDA
#include "hines/cuda/onchip_plan.h"

enum { L = NS_ONCHIP_LANES };

/* The kernel's arithmetic (kernel_onchip.cu); returns the highest bad pivot or -1. */
static int replay(const ns_onchip_sched *s, const double *a, const double *b, double *d, double *r,
                  int reverse) {
    int worst = -1;
    for (int step = 0; step < s->n_bwd; ++step)
        for (int l0 = 0; l0 < L; ++l0) {
            const int lane = reverse ? L - 1 - l0 : l0;
            for (int q = s->bwd_begin[step * L + lane]; q < s->bwd_begin[step * L + lane + 1]; ++q) {
                const int run = s->bwd_runs[q], beg = s->run_begin[run];
                int k = s->run_begin[run + 1] - 1, node = s->run_nodes[k];
                double dk = d[node], rk = r[node];
                for (int j = s->child_begin[run]; j < s->child_begin[run + 1]; ++j) {
                    const int c0 = s->child_first[j];
                    const double f = a[c0] * d[c0];
                    dk -= f * b[c0];
                    rk -= f * r[c0];
                }
                for (;;) {
                    if ((dk == 0.0 || !isfinite(dk)) && node > worst) worst = node;
                    const double inv = 1.0 / dk;
                    d[node] = inv;
                    r[node] = rk;
                    if (k == beg) break;
                    const int prev = s->run_nodes[--k];
                    const double f = a[node] * inv;
                    dk = d[prev] - f * b[node];
                    rk = r[prev] - f * rk;
                    node = prev;
                }
            }
        }
    for (int step = 0; step < s->n_fwd; ++step)
        for (int l0 = 0; l0 < L; ++l0) {
            const int lane = reverse ? L - 1 - l0 : l0;
            for (int q = s->fwd_begin[step * L + lane]; q < s->fwd_begin[step * L + lane + 1]; ++q) {
                const int run = s->fwd_runs[q], end = s->run_begin[run + 1];
                const int p = s->run_parent[run];
                int k = s->run_begin[run], node = s->run_nodes[k];
                double x = (p < 0 ? r[node] : r[node] - b[node] * r[p]) * d[node];
                r[node] = x;
                for (++k; k < end; ++k) {
                    node = s->run_nodes[k];
                    x = (r[node] - b[node] * x) * d[node];
                    r[node] = x;
                }
            }
        }
    return worst;
}

/* Structural checks, then replay against the reference on random values. */
static void check_tree(const ns_tree_t *t, uint64_t seed) {
    const int32_t n = ns_tree_size(t);
    const int32_t *parent = ns_tree_parent(t);
    ns_onchip_plan plan;
    CHECK_OK(ns_onchip_plan_build(n, parent, &plan));
    if (!plan.data) return;
    ns_onchip_sched s;
    ns_onchip_plan_bind(&plan, plan.data, &s);
    /* Every node in exactly one run; runs are chains; every run scheduled once per sweep. */
    int *seen = calloc((size_t)n, sizeof *seen);
    CHECK(seen != NULL);
    CHECK(s.run_begin[s.n_runs] == n);
    for (int r = 0; seen && r < s.n_runs; ++r)
        for (int k = s.run_begin[r]; k < s.run_begin[r + 1]; ++k) {
            seen[s.run_nodes[k]]++;
            if (k > s.run_begin[r]) CHECK(parent[s.run_nodes[k]] == s.run_nodes[k - 1]);
        }
    for (int i = 0; seen && i < n; ++i) CHECK(seen[i] == 1);
    CHECK(s.bwd_begin[s.n_bwd * L] == s.n_runs && s.fwd_begin[s.n_fwd * L] == s.n_runs);
    CHECK(plan.bwd_cost >= 1 && plan.fwd_cost >= 1);
    free(seen);

    const ns_tree_t *shapes[1] = {t};
    ns_batch_t *batch = NULL;
    CHECK_OK(ns_batch_create(1, shapes, 1, NULL, &batch));
    const size_t bytes = (size_t)n * sizeof(double);
    double *a = malloc(bytes), *b = malloc(bytes), *d = malloc(bytes), *r = malloc(bytes);
    double *d1 = malloc(bytes), *r1 = malloc(bytes), *d2 = malloc(bytes), *r2 = malloc(bytes);
    if (batch && a && b && d && r && d1 && r1 && d2 && r2) {
        for (int bad = 0; bad < 2; ++bad) {
            CHECK_OK(ns_batch_random_values(batch, seed, a, b, d, r));
            if (bad) d[n - 1] = 0.0; /* the last node is a leaf: its pivot is its input */
            memcpy(d1, d, bytes), memcpy(r1, r, bytes), memcpy(d2, d, bytes), memcpy(r2, r, bytes);
            const int ref = ns_hines_solve_one(n, parent, a, b, d, r);
            const int w1 = replay(&s, a, b, d1, r1, 0), w2 = replay(&s, a, b, d2, r2, 1);
            CHECK_MSG(w1 == ref && w2 == ref, "n %d: bad pivot %d / %d, reference %d", (int)n, w1, w2, ref);
            if (bad) continue;
            double diff = 0.0, scale = 1e-300;
            for (int32_t i = 0; i < n; ++i) {
                const double e = fabs(r1[i] - r[i]);
                if (!(e <= diff)) diff = e;
                if (fabs(r[i]) > scale) scale = fabs(r[i]);
                CHECK(r1[i] == r2[i]); /* lane order within a step does not matter */
            }
            CHECK_MSG(diff / scale <= 1e-12, "n %d: error %.3g", (int)n, diff / scale);
        }
    }
    free(a), free(b), free(d), free(r), free(d1), free(r1), free(d2), free(r2);
    ns_batch_destroy(batch);
    ns_onchip_plan_free(&plan);
}

int main(void) {
    static const char *names[] = {"small-low", "small-high", "medium-low",
                                  "medium-high", "big-low", "big-high"};
    for (int k = 0; k < 6; ++k) {
        ns_tree_t *t = NULL;
        CHECK_OK(ns_generate_paper_tree(names[k], 1 + (uint64_t)k, &t));
        if (t) check_tree(t, 10 + (uint64_t)k);
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
        ns_tree_destroy(t);
        free(p);
    }
    return check_summary("test_hines_cuda_plan");
}
#else
int main(void) { CHECK_SKIP("the on-chip plan is built only with CUDA (NS_CUDA=ON)"); }
#endif
