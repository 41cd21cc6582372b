/* The partitions behind the MPI layer, on their own (no MPI calls):
 *   - LPT against a naive re-implementation written out here (sort, then a
 *     linear scan for the least loaded part) on random weights, and against
 *     the exhaustive optimum on small cases (Graham's 4/3 - 1/(3m) bound);
 *   - contiguous cuts: cover, order, one item per part when possible, and
 *     every part within one item's weight of the even share;
 *   - the cells of a batch or simulation (ns_partition_cells): LPT of the naive
 *     kind over the cells' compartment counts, offsets as running sums, and each
 *     part's own cells, shapes and compartments, every cell in one part;
 *   - bad arguments return statuses. */
#include <stdlib.h>

#include "check.h"
#ifdef NS_HAVE_MPI
#include "core/rng.h"
#include "neurosolve/mpi.h"

typedef struct witem {
    int64_t w, i;
} witem;

static int cmp_desc(const void *pa, const void *pb) {
    const witem *a = pa, *b = pb;
    if (a->w != b->w) return a->w > b->w ? -1 : 1;
    return a->i < b->i ? -1 : 1;
}

/* LPT the slow, obvious way. */
static void naive_lpt(int64_t n, const int64_t *w, int32_t parts, int32_t *owner) {
    witem *it = malloc((size_t)n * sizeof *it);
    int64_t *load = calloc((size_t)parts, sizeof *load);
    for (int64_t i = 0; i < n; ++i) it[i] = (witem){w[i], i};
    qsort(it, (size_t)n, sizeof *it, cmp_desc);
    for (int64_t k = 0; k < n; ++k) {
        int32_t best = 0;
        for (int32_t p = 1; p < parts; ++p)
            if (load[p] < load[best]) best = p;
        owner[it[k].i] = best;
        load[best] += it[k].w;
    }
    free(it);
    free(load);
}

/* The optimal makespan by trying every assignment (n small). */
static int64_t optimum(int n, const int64_t *w, int parts) {
    int64_t best = INT64_MAX;
    long total = 1;
    for (int i = 0; i < n; ++i) total *= parts;
    for (long code = 0; code < total; ++code) {
        int64_t load[8] = {0};
        long c = code;
        for (int i = 0; i < n; ++i, c /= parts) load[c % parts] += w[i];
        int64_t mx = 0;
        for (int p = 0; p < parts; ++p)
            if (load[p] > mx) mx = load[p];
        if (mx < best) best = mx;
    }
    return best;
}

static void test_lpt_random(void) {
    ns_rng rng;
    ns_rng_seed(&rng, 7, 0);
    for (int trial = 0; trial < 40; ++trial) {
        const int64_t n = 1 + (int64_t)ns_rng_below(&rng, 3000);
        const int32_t parts = 1 + (int32_t)ns_rng_below(&rng, 17);
        int64_t *w = malloc((size_t)n * sizeof *w), load[17], sum = 0;
        int32_t *own = malloc((size_t)n * sizeof *own), *ref = malloc((size_t)n * sizeof *ref);
        /* few distinct weights, so ties are frequent */
        for (int64_t i = 0; i < n; ++i) w[i] = 76 + 100 * (int64_t)ns_rng_below(&rng, trial % 2 ? 7 : 700);
        CHECK_OK(ns_partition_lpt(n, w, parts, own, load));
        naive_lpt(n, w, parts, ref);
        int same = 1;
        for (int64_t i = 0; i < n; ++i) same &= own[i] == ref[i];
        CHECK_MSG(same, "trial %d: LPT differs from the naive LPT (%lld items, %d parts)", trial, (long long)n,
                  (int)parts);
        int64_t check_load[17] = {0}, mx = 0, wmax = 0;
        for (int64_t i = 0; i < n; ++i) {
            CHECK(own[i] >= 0 && own[i] < parts);
            check_load[own[i]] += w[i];
            sum += w[i];
            if (w[i] > wmax) wmax = w[i];
        }
        for (int32_t p = 0; p < parts; ++p) {
            CHECK(check_load[p] == load[p]);
            if (load[p] > mx) mx = load[p];
        }
        /* greedy bound: the largest load exceeds the mean by at most one item */
        CHECK_MSG((double)mx <= (double)sum / parts + (double)wmax, "trial %d: max load %lld, mean %g", trial,
                  (long long)mx, (double)sum / parts);
        free(w);
        free(own);
        free(ref);
    }
}

static void test_lpt_optimum(void) {
    ns_rng rng;
    ns_rng_seed(&rng, 11, 0);
    for (int trial = 0; trial < 60; ++trial) {
        const int n = 1 + (int)ns_rng_below(&rng, 9);
        const int parts = 2 + (int)ns_rng_below(&rng, 2);
        int64_t w[9], load[3];
        int32_t own[9];
        for (int i = 0; i < n; ++i) w[i] = 1 + (int64_t)ns_rng_below(&rng, 50);
        CHECK_OK(ns_partition_lpt(n, w, parts, own, load));
        int64_t mx = 0;
        for (int p = 0; p < parts; ++p)
            if (load[p] > mx) mx = load[p];
        const int64_t opt = optimum(n, w, parts);
        CHECK_MSG((double)mx <= (4.0 / 3.0 - 1.0 / (3.0 * parts)) * (double)opt + 1e-9,
                  "trial %d: LPT %lld, optimum %lld", trial, (long long)mx, (long long)opt);
    }
    /* the classic case where LPT is optimal and round-robin is not */
    const int64_t w[6] = {5, 5, 4, 4, 3, 3};
    int32_t own[6];
    int64_t load[2];
    CHECK_OK(ns_partition_lpt(6, w, 2, own, load));
    CHECK(load[0] == 12 && load[1] == 12);
}

static void test_contiguous(void) {
    ns_rng rng;
    ns_rng_seed(&rng, 13, 0);
    for (int trial = 0; trial < 60; ++trial) {
        const int64_t n = (int64_t)ns_rng_below(&rng, 500);
        const int32_t parts = 1 + (int32_t)ns_rng_below(&rng, 9);
        int64_t *w = malloc((size_t)(n + 1) * sizeof *w), first[10], total = 0, wmax = 0;
        for (int64_t i = 0; i < n; ++i) {
            w[i] = trial % 3 == 0 ? 0 : (int64_t)ns_rng_below(&rng, 40);
            total += w[i];
            if (w[i] > wmax) wmax = w[i];
        }
        CHECK_OK(ns_partition_contiguous(n, w, parts, first));
        CHECK(first[0] == 0 && first[parts] == n);
        for (int32_t p = 0; p < parts; ++p) {
            CHECK(first[p] <= first[p + 1]);
            if (n >= parts) CHECK_MSG(first[p + 1] > first[p], "trial %d: part %d is empty", trial, (int)p);
            int64_t load = 0;
            for (int64_t i = first[p]; i < first[p + 1]; ++i) load += w[i];
            /* within one item of the even share, unless forced to be non-empty */
            if (n >= parts && wmax > 0)
                CHECK_MSG(fabs((double)load - (double)total / parts) <= 2.0 * (double)wmax,
                          "trial %d part %d: load %lld, share %g", trial, (int)p, (long long)load,
                          (double)total / parts);
        }
        free(w);
    }
}

static void test_cells(void) {
    const int64_t shape_size[3] = {7, 30, 12};
    enum { N = 41, PARTS = 4 };
    int32_t shape[N], naive[N], seen[N] = {0};
    int64_t w[N];
    for (int with_map = 0; with_map < 2; ++with_map) {
        for (int c = 0; c < N; ++c) {
            shape[c] = with_map ? (int32_t)((c * 7 + 3) % 3) : c % 3;
            w[c] = shape_size[shape[c]];
            seen[c] = 0;
        }
        naive_lpt(N, w, PARTS, naive);
        for (int32_t p = 0; p < PARTS; ++p) {
            ns_cells_partition q;
            CHECK_OK(ns_partition_cells(3, shape_size, N, with_map ? shape : NULL, PARTS, p, &q));
            if (!q.owner) continue;
            int64_t off = 0, k = 0, comp = 0;
            for (int c = 0; c < N; ++c) {
                CHECK_MSG(q.owner[c] == naive[c], "cell %d: part %d, naive LPT %d", c, (int)q.owner[c], (int)naive[c]);
                CHECK(q.global_offset[c] == off);
                off += w[c];
                if (naive[c] != p) continue;
                CHECK(k < q.n_local && q.local_cells[k] == c && q.local_shape[k] == shape[c]);
                ++k, comp += w[c], ++seen[c];
            }
            CHECK(q.global_offset[N] == off && q.n_comp == off && q.n_cells == N);
            CHECK(q.n_local == k && q.n_local_comp == comp && q.part_comp[p] == comp);
            ns_cells_partition_free(&q);
            CHECK(q.owner == NULL && q.local_cells == NULL);
        }
        for (int c = 0; c < N; ++c) CHECK_MSG(seen[c] == 1, "cell %d in %d parts", c, seen[c]);
    }
    ns_cells_partition q;
    CHECK(ns_partition_cells(3, shape_size, N, NULL, PARTS, PARTS, &q) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_partition_cells(3, NULL, N, NULL, PARTS, 0, &q) == NS_ERR_INVALID_ARGUMENT);
    CHECK(q.owner == NULL);
}

static void test_bad_args(void) {
    int64_t w[3] = {1, -2, 3}, first[3], load[2];
    int32_t own[3];
    CHECK(ns_partition_lpt(3, w, 2, own, load) == NS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(ns_last_error(), "weight[1]") != NULL);
    CHECK(ns_partition_lpt(3, w, 0, own, load) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_partition_lpt(3, NULL, 2, own, load) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_partition_contiguous(3, w, 2, first) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_partition_contiguous(-1, w, 2, first) == NS_ERR_INVALID_ARGUMENT);
    CHECK_OK(ns_partition_lpt(0, NULL, 2, NULL, load));
    CHECK(load[0] == 0 && load[1] == 0);
}

int main(void) {
    test_lpt_random();
    test_lpt_optimum();
    test_contiguous();
    test_cells();
    test_bad_args();
    return check_summary("test_mpi_partition");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
