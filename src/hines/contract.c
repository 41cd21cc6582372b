/* Tree contraction plans (rake and compress) and their CPU executor;
 * contract.h explains the method. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hines/contract.h"

void ns_contract_plan_destroy(ns_contract_plan *p) {
    if (!p) return;
    free(p->fwd_begin);
    free(p->fwd);
    free(p->list);
    free(p->bwd_begin);
    free(p->bwd);
    memset(p, 0, sizeof *p);
}

/* Growable arrays of the plan under construction. */
typedef struct {
    void *data;
    size_t len, cap, elem;
} vec;

static int vec_push(vec *v, const void *x) {
    if (v->len == v->cap) {
        const size_t cap = v->cap ? 2 * v->cap : 256;
        void *d = realloc(v->data, cap * v->elem);
        if (!d) return -1;
        v->data = d;
        v->cap = cap;
    }
    memcpy((char *)v->data + v->len * v->elem, x, v->elem);
    v->len++;
    return 0;
}

ns_status ns_contract_plan_create(int32_t n, const int32_t *parent, ns_contract_plan *plan) {
    if (!plan || !parent || n < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "contraction plan: bad arguments");
    memset(plan, 0, sizeof *plan);
    plan->n = n;
    const size_t N = (size_t)n;
    /* cur: current parent; nch, xch: count and xor of the remaining
     * children (the xor is the child when there is one); sel: eliminated
     * this round; blk: adjacent to a node eliminated this round; ecount and
     * efirst: eliminated children per kept node this round (CSR by node). */
    int32_t *cur = malloc(N * sizeof *cur), *nch = calloc(N, sizeof *nch), *xch = calloc(N, sizeof *xch);
    int32_t *alive = malloc(N * sizeof *alive), *elim = malloc(N * sizeof *elim);
    int32_t *ecount = calloc(N, sizeof *ecount), *efirst = malloc(N * sizeof *efirst);
    int32_t *pu_of = malloc(N * sizeof *pu_of);
    unsigned char *sel = calloc(N, 1), *blk = calloc(N, 1), *touched = calloc(N, 1);
    vec fwd_begin = {0, 0, 0, sizeof(int32_t)}, fwd = {0, 0, 0, sizeof(ns_contract_fwd)};
    vec list = {0, 0, 0, sizeof(int32_t)}, bwd_begin = {0, 0, 0, sizeof(int32_t)};
    int32_t *touch_list = malloc(N * sizeof *touch_list);
    plan->bwd = malloc(N * sizeof *plan->bwd);
    ns_status st = NS_OK;
    if (!cur || !nch || !xch || !alive || !elim || !ecount || !efirst || !pu_of || !sel || !blk || !touched ||
        !touch_list || !plan->bwd) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "contraction plan of %d nodes", (int)n);
        goto out;
    }
    for (int32_t i = 0; i < n; ++i) {
        cur[i] = parent[i];
        pu_of[i] = -1;
        if (i > 0) {
            if (parent[i] < 0 || parent[i] >= i) {
                st = ns_fail(NS_ERR_TOPOLOGY, "contraction plan: parent[%d] = %d is not in [0, %d)", (int)i,
                             (int)parent[i], (int)i);
                goto out;
            }
            nch[parent[i]]++;
            xch[parent[i]] ^= i;
        }
        alive[i] = i;
    }
    int32_t n_alive = n, n_bwd = 0;
    int32_t zero = 0;
    if (vec_push(&fwd_begin, &zero) || vec_push(&bwd_begin, &zero)) goto oom;
    while (n_alive > 1) {
        /* choose: every leaf, then chain nodes (one child) not adjacent to a
         * chosen node; ascending order alternates along a chain */
        int32_t n_elim = 0;
        for (int32_t q = 1; q < n_alive; ++q) { /* alive[0] is the root */
            const int32_t u = alive[q];
            if (nch[u] == 0) {
                sel[u] = 1;
                blk[cur[u]] = 1;
                elim[n_elim++] = u;
            }
        }
        for (int32_t q = 1; q < n_alive; ++q) {
            const int32_t u = alive[q];
            if (nch[u] != 1 || blk[u] || sel[cur[u]]) continue;
            const int32_t c = xch[u];
            if (sel[c]) continue;
            sel[u] = 1;
            blk[c] = 1;
            blk[cur[u]] = 1;
            elim[n_elim++] = u;
        }
        /* pull tasks: each kept neighbour of an eliminated node */
        int32_t n_touch = 0;
        for (int32_t e = 0; e < n_elim; ++e) {
            const int32_t u = elim[e], P = cur[u];
            ecount[P]++;
            if (!touched[P]) touched[P] = 1, touch_list[n_touch++] = P;
            if (nch[u] == 1) {
                const int32_t c = xch[u];
                pu_of[c] = u;
                if (!touched[c]) touched[c] = 1, touch_list[n_touch++] = c;
            }
        }
        /* tasks in ascending node order (deterministic, and neighbours of a
         * chain end up next to each other) */
        int32_t first = (int32_t)list.len;
        for (int32_t q = 0; q < n_alive; ++q) {
            const int32_t k = alive[q];
            if (!touched[k] || sel[k]) continue;
            efirst[k] = first;
            first += ecount[k];
        }
        if ((size_t)first > list.cap) {
            size_t cap = list.cap ? list.cap : 256;
            while (cap < (size_t)first) cap *= 2;
            void *d = realloc(list.data, cap * list.elem);
            if (!d) goto oom;
            list.data = d;
            list.cap = cap;
        }
        for (int32_t q = 0; q < n_alive; ++q) {
            const int32_t k = alive[q];
            if (!touched[k] || sel[k]) continue;
            ns_contract_fwd t = {k, efirst[k], ecount[k], pu_of[k]};
            if (vec_push(&fwd, &t)) goto oom;
        }
        /* fill the lists in ascending order of the eliminated node */
        for (int32_t q = 0; q < n_alive; ++q) {
            const int32_t u = alive[q];
            if (!sel[u]) continue;
            ((int32_t *)list.data)[efirst[cur[u]]++] = u;
        }
        list.len = (size_t)first;
        int32_t fb = (int32_t)fwd.len;
        if (vec_push(&fwd_begin, &fb)) goto oom;
        /* apply the eliminations; record the backward tasks */
        for (int32_t q = 0; q < n_alive; ++q) {
            const int32_t u = alive[q];
            if (!sel[u]) continue;
            const int32_t P = cur[u];
            ns_contract_bwd b = {u, P, -1, 0};
            if (nch[u] == 0) {
                nch[P]--;
                xch[P] ^= u;
            } else {
                const int32_t c = xch[u];
                b.c = c;
                cur[c] = P;
                xch[P] ^= u ^ c;
            }
            plan->bwd[n_bwd++] = b;
        }
        int32_t bb = n_bwd;
        if (vec_push(&bwd_begin, &bb)) goto oom;
        /* reset the round's marks, compact the alive list */
        for (int32_t q = 0; q < n_touch; ++q) {
            const int32_t k = touch_list[q];
            touched[k] = 0;
            ecount[k] = 0;
            pu_of[k] = -1;
        }
        int32_t m = 0;
        for (int32_t q = 0; q < n_alive; ++q) {
            const int32_t u = alive[q];
            blk[u] = 0;
            if (sel[u]) sel[u] = 0;
            else alive[m++] = u;
        }
        n_alive = m;
        plan->rounds++;
    }
    /* the root alone in the last backward round */
    plan->bwd[n_bwd++] = (ns_contract_bwd){0, -1, -1, 0};
    {
        int32_t bb = n_bwd;
        if (vec_push(&bwd_begin, &bb)) goto oom;
    }
    plan->n_fwd = (int32_t)fwd.len;
    plan->n_list = (int32_t)list.len;
    plan->fwd_begin = fwd_begin.data;
    plan->fwd = fwd.data;
    plan->list = list.data;
    plan->bwd_begin = bwd_begin.data;
    fwd_begin.data = fwd.data = list.data = bwd_begin.data = NULL;
    goto out;
oom:
    st = ns_fail(NS_ERR_OUT_OF_MEMORY, "contraction plan of %d nodes", (int)n);
out:
    free(cur), free(nch), free(xch), free(alive), free(elim), free(ecount), free(efirst), free(pu_of);
    free(sel), free(blk), free(touched), free(touch_list);
    free(fwd_begin.data), free(fwd.data), free(list.data), free(bwd_begin.data);
    if (st != NS_OK) ns_contract_plan_destroy(plan);
    return st;
}

int32_t ns_contract_solve_cpu(const ns_contract_plan *p, const double *a, const double *b, double *d,
                              double *rhs, double *up, double *down, double *lo) {
    const int32_t n = p->n;
    for (int32_t i = 0; i < n; ++i) up[i] = b[i], down[i] = a[i], lo[i] = 0.0;
    int32_t bad = -1, bad_round = p->rounds + 1;
    for (int32_t r = 0; r < p->rounds; ++r)
        for (int32_t t = p->fwd_begin[r]; t < p->fwd_begin[r + 1]; ++t) {
            const ns_contract_fwd f = p->fwd[t];
            double dk = d[f.k], rk = rhs[f.k];
            for (int32_t q = f.first; q < f.first + f.count; ++q) {
                const int32_t u = p->list[q];
                const double g = down[u] / d[u];
                dk -= g * up[u];
                rk -= g * rhs[u];
            }
            if (f.pu >= 0) {
                const int32_t u = f.pu;
                const double inv = 1.0 / d[u];
                const double g = up[f.k] * inv;
                dk -= g * down[f.k];
                rk -= g * rhs[u];
                lo[u] = down[f.k];
                down[f.k] = -down[u] * down[f.k] * inv;
                up[f.k] = -g * up[u];
            }
            d[f.k] = dk;
            rhs[f.k] = rk;
        }
    for (int32_t r = p->rounds; r >= 0; --r)
        for (int32_t t = p->bwd_begin[r]; t < p->bwd_begin[r + 1]; ++t) {
            const ns_contract_bwd w = p->bwd[t];
            const double du = d[w.u];
            /* the earliest round's bad pivot (its own, not one propagated
             * from it), the lowest node within the round */
            if ((du == 0.0 || !isfinite(du)) && (r < bad_round || (r == bad_round && w.u < bad)))
                bad = w.u, bad_round = r;
            double x = rhs[w.u];
            if (w.p >= 0) x -= up[w.u] * rhs[w.p];
            if (w.c >= 0) x -= lo[w.u] * rhs[w.c];
            rhs[w.u] = x / du;
        }
    return bad;
}
