/* Tree contraction plans (rake and compress) and their CPU executor;
 * contract.h explains the method. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
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

/* The state of one ns_contract_plan_create. cur: current parent; nch, xch:
 * count and xor of the remaining children (the xor is the child when there
 * is one); sel: eliminated this round; blk: adjacent to a node eliminated
 * this round; ecount and efirst: eliminated children per kept node this
 * round (CSR by node). */
typedef struct {
    int32_t *cur, *nch, *xch, *alive, *elim, *ecount, *efirst, *pu_of, *touch_list;
    unsigned char *sel, *blk, *touched;
    vec fwd_begin, fwd, list, bwd_begin;
    int32_t n_alive, n_elim, n_touch, n_bwd;
} planner;

static void planner_free(planner *P) {
    free(P->cur), free(P->nch), free(P->xch), free(P->alive), free(P->elim), free(P->ecount), free(P->efirst),
        free(P->pu_of);
    free(P->sel), free(P->blk), free(P->touched), free(P->touch_list);
    free(P->fwd_begin.data), free(P->fwd.data), free(P->list.data), free(P->bwd_begin.data);
}

/* The scratch and plan->bwd allocated; the tree's parents checked and its
 * children counted. */
static ns_status planner_init(planner *P, int32_t n, const int32_t *parent, ns_contract_plan *plan) {
    const size_t N = (size_t)n;
    P->cur = malloc(N * sizeof *P->cur), P->nch = calloc(N, sizeof *P->nch), P->xch = calloc(N, sizeof *P->xch);
    P->alive = malloc(N * sizeof *P->alive), P->elim = malloc(N * sizeof *P->elim);
    P->ecount = calloc(N, sizeof *P->ecount), P->efirst = malloc(N * sizeof *P->efirst);
    P->pu_of = malloc(N * sizeof *P->pu_of);
    P->sel = calloc(N, 1), P->blk = calloc(N, 1), P->touched = calloc(N, 1);
    P->fwd_begin = (vec){0, 0, 0, sizeof(int32_t)}, P->fwd = (vec){0, 0, 0, sizeof(ns_contract_fwd)};
    P->list = (vec){0, 0, 0, sizeof(int32_t)}, P->bwd_begin = (vec){0, 0, 0, sizeof(int32_t)};
    P->touch_list = malloc(N * sizeof *P->touch_list);
    plan->bwd = malloc(N * sizeof *plan->bwd);
    if (!P->cur || !P->nch || !P->xch || !P->alive || !P->elim || !P->ecount || !P->efirst || !P->pu_of || !P->sel ||
        !P->blk || !P->touched || !P->touch_list || !plan->bwd)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "contraction plan of %d nodes", (int)n);
    for (int32_t i = 0; i < n; ++i) {
        P->cur[i] = parent[i];
        P->pu_of[i] = -1;
        if (i > 0) {
            if (parent[i] < 0 || parent[i] >= i)
                return ns_fail(NS_ERR_TOPOLOGY, "contraction plan: parent[%d] = %d is not in [0, %d)", (int)i,
                               (int)parent[i], (int)i);
            P->nch[parent[i]]++;
            P->xch[parent[i]] ^= i;
        }
        P->alive[i] = i;
    }
    P->n_alive = n;
    return NS_OK;
}

/* choose: every leaf, then chain nodes (one child) not adjacent to a
 * chosen node; ascending order alternates along a chain */
static void choose_round(planner *P) {
    int32_t n_elim = 0;
    for (int32_t q = 1; q < P->n_alive; ++q) { /* alive[0] is the root */
        const int32_t u = P->alive[q];
        if (P->nch[u] == 0) {
            P->sel[u] = 1;
            P->blk[P->cur[u]] = 1;
            P->elim[n_elim++] = u;
        }
    }
    for (int32_t q = 1; q < P->n_alive; ++q) {
        const int32_t u = P->alive[q];
        if (P->nch[u] != 1 || P->blk[u] || P->sel[P->cur[u]]) continue;
        const int32_t c = P->xch[u];
        if (P->sel[c]) continue;
        P->sel[u] = 1;
        P->blk[c] = 1;
        P->blk[P->cur[u]] = 1;
        P->elim[n_elim++] = u;
    }
    P->n_elim = n_elim;
}

/* pull tasks: each kept neighbour of an eliminated node */
static void pull_tasks(planner *P) {
    int32_t n_touch = 0;
    for (int32_t e = 0; e < P->n_elim; ++e) {
        const int32_t u = P->elim[e], p = P->cur[u];
        P->ecount[p]++;
        if (!P->touched[p]) P->touched[p] = 1, P->touch_list[n_touch++] = p;
        if (P->nch[u] == 1) {
            const int32_t c = P->xch[u];
            P->pu_of[c] = u;
            if (!P->touched[c]) P->touched[c] = 1, P->touch_list[n_touch++] = c;
        }
    }
    P->n_touch = n_touch;
}

/* The round's forward tasks and their lists of eliminated children; -1 when
 * out of memory. */
static int round_tasks(planner *P) {
    vec *list = &P->list, *fwd = &P->fwd;
    /* tasks in ascending node order (deterministic, and neighbours of a
     * chain end up next to each other) */
    int32_t first = (int32_t)list->len;
    for (int32_t q = 0; q < P->n_alive; ++q) {
        const int32_t k = P->alive[q];
        if (!P->touched[k] || P->sel[k]) continue;
        P->efirst[k] = first;
        first += P->ecount[k];
    }
    if ((size_t)first > list->cap) {
        size_t cap = list->cap ? list->cap : 256;
        while (cap < (size_t)first) cap *= 2;
        void *d = realloc(list->data, cap * list->elem);
        if (!d) return -1;
        list->data = d;
        list->cap = cap;
    }
    for (int32_t q = 0; q < P->n_alive; ++q) {
        const int32_t k = P->alive[q];
        if (!P->touched[k] || P->sel[k]) continue;
        ns_contract_fwd t = {k, P->efirst[k], P->ecount[k], P->pu_of[k]};
        if (vec_push(fwd, &t)) return -1;
    }
    /* fill the lists in ascending order of the eliminated node */
    for (int32_t q = 0; q < P->n_alive; ++q) {
        const int32_t u = P->alive[q];
        if (!P->sel[u]) continue;
        ((int32_t *)list->data)[P->efirst[P->cur[u]]++] = u;
    }
    list->len = (size_t)first;
    /* encode the round's tasks: up to two children inline */
    for (size_t t = ((int32_t *)P->fwd_begin.data)[P->fwd_begin.len - 1]; t < fwd->len; ++t) {
        ns_contract_fwd *f = (ns_contract_fwd *)fwd->data + t;
        const int32_t *l = (const int32_t *)list->data + f->u1;
        const int32_t count = f->u2;
        if (count <= 2) {
            f->u1 = count > 0 ? l[0] : -1;
            f->u2 = count > 1 ? l[1] : -1;
        } else {
            f->u1 = -2 - f->u1;
        }
    }
    int32_t fb = (int32_t)fwd->len;
    return vec_push(&P->fwd_begin, &fb);
}

/* apply the eliminations; record the backward tasks; -1 when out of memory */
static int apply_round(planner *P, ns_contract_plan *plan) {
    for (int32_t q = 0; q < P->n_alive; ++q) {
        const int32_t u = P->alive[q];
        if (!P->sel[u]) continue;
        const int32_t p = P->cur[u];
        ns_contract_bwd b = {u, p, -1, 0};
        if (P->nch[u] == 0) {
            P->nch[p]--;
            P->xch[p] ^= u;
        } else {
            const int32_t c = P->xch[u];
            b.c = c;
            P->cur[c] = p;
            P->xch[p] ^= u ^ c;
        }
        plan->bwd[P->n_bwd++] = b;
    }
    int32_t bb = P->n_bwd;
    return vec_push(&P->bwd_begin, &bb);
}

/* reset the round's marks, compact the alive list */
static void reset_round(planner *P) {
    for (int32_t q = 0; q < P->n_touch; ++q) {
        const int32_t k = P->touch_list[q];
        P->touched[k] = 0;
        P->ecount[k] = 0;
        P->pu_of[k] = -1;
    }
    int32_t m = 0;
    for (int32_t q = 0; q < P->n_alive; ++q) {
        const int32_t u = P->alive[q];
        P->blk[u] = 0;
        if (P->sel[u]) P->sel[u] = 0;
        else P->alive[m++] = u;
    }
    P->n_alive = m;
}

ns_status ns_contract_plan_create(int32_t n, const int32_t *parent, ns_contract_plan *plan) {
    if (!plan || !parent || n < 1) return ns_fail(NS_ERR_INVALID_ARGUMENT, "contraction plan: bad arguments");
    memset(plan, 0, sizeof *plan);
    plan->n = n;
    planner P;
    memset(&P, 0, sizeof P);
    ns_status st = planner_init(&P, n, parent, plan);
    if (st != NS_OK) goto out;
    int32_t zero = 0;
    if (vec_push(&P.fwd_begin, &zero) || vec_push(&P.bwd_begin, &zero)) goto oom;
    while (P.n_alive > 1) {
        choose_round(&P);
        pull_tasks(&P);
        if (round_tasks(&P) || apply_round(&P, plan)) goto oom;
        reset_round(&P);
        plan->rounds++;
    }
    /* the root alone in the last backward round */
    plan->bwd[P.n_bwd++] = (ns_contract_bwd){0, -1, -1, 0};
    {
        int32_t bb = P.n_bwd;
        if (vec_push(&P.bwd_begin, &bb)) goto oom;
    }
    plan->n_fwd = (int32_t)P.fwd.len;
    plan->n_list = (int32_t)P.list.len;
    plan->fwd_begin = P.fwd_begin.data;
    plan->fwd = P.fwd.data;
    plan->list = P.list.data;
    plan->bwd_begin = P.bwd_begin.data;
    P.fwd_begin.data = P.fwd.data = P.list.data = P.bwd_begin.data = NULL;
    goto out;
oom:
    st = ns_fail(NS_ERR_OUT_OF_MEMORY, "contraction plan of %d nodes", (int)n);
out:
    planner_free(&P);
    if (st != NS_OK) ns_contract_plan_destroy(plan);
    return st;
}

/* The executor, as the kernel runs it: forward rounds [r0, r1) of pull
 * tasks (fwd_begin: boundaries), backward rounds r1 .. r0 (bwd_begin) in
 * reverse. `bad` / `bad_round` keep the earliest round's bad pivot (its own,
 * not one propagated from it), the lowest node within the round; rounds are
 * numbered from round0. */
static void forward(int32_t r0, int32_t r1, const int32_t *fwd_begin, const ns_contract_fwd *fwd, const int32_t *list,
                    double *d, double *rhs, double *up, double *down, double *lo) {
    for (int32_t r = r0; r < r1; ++r)
        for (int32_t t = fwd_begin[r]; t < fwd_begin[r + 1]; ++t) {
            const ns_contract_fwd f = fwd[t];
            double dk = d[f.k], rk = rhs[f.k];
            const int32_t count = ns_contract_fwd_count(f);
            for (int32_t q = 0; q < count; ++q) {
                const int32_t u = ns_contract_fwd_child(f, list, q);
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
}

static void backward(int32_t r1, int32_t r0, int32_t round0, const int32_t *bwd_begin, const ns_contract_bwd *bwd,
                     const double *d, double *rhs, const double *up, const double *lo, int32_t *bad,
                     int32_t *bad_round, const int32_t *node_of) {
    for (int32_t r = r1; r >= r0; --r)
        for (int32_t t = bwd_begin[r]; t < bwd_begin[r + 1]; ++t) {
            const ns_contract_bwd w = bwd[t];
            const double du = d[w.u];
            const int32_t node = node_of ? node_of[w.u] : w.u;
            if ((du == 0.0 || !isfinite(du)) &&
                (round0 + r < *bad_round || (round0 + r == *bad_round && node < *bad)))
                *bad = node, *bad_round = round0 + r;
            double x = rhs[w.u];
            if (w.p >= 0) x -= up[w.u] * rhs[w.p];
            if (w.c >= 0) x -= lo[w.u] * rhs[w.c];
            rhs[w.u] = x / du;
        }
}

int32_t ns_contract_solve_cpu(const ns_contract_plan *p, const double *a, const double *b, double *d,
                              double *rhs, double *up, double *down, double *lo) {
    for (int32_t i = 0; i < p->n; ++i) up[i] = b[i], down[i] = a[i], lo[i] = 0.0;
    int32_t bad = -1, bad_round = INT32_MAX;
    forward(0, p->rounds, p->fwd_begin, p->fwd, p->list, d, rhs, up, down, lo);
    backward(p->rounds, 0, 0, p->bwd_begin, p->bwd, d, rhs, up, lo, &bad, &bad_round, NULL);
    return bad;
}

int32_t ns_contract_group_cpu(const ns_contract_layout *L, int32_t g, const double *a, const double *b,
                              double *d, double *rhs, double *scratch) {
    const int32_t t = L->g_tmpl[g], n = L->t_nodes[t], R = L->t_rounds[t], K = L->t_head[t];
    const int32_t *rt = L->rt + L->t_rt[t];
    const int64_t o = L->g_base[g];
    double *D = d + o, *X = rhs + o, *up = scratch, *down = scratch + n, *lo = scratch + 2 * (size_t)n;
    for (int32_t i = 0; i < n; ++i) up[i] = b[o + i], down[i] = a[o + i], lo[i] = 0.0;
    int32_t bad = -1, bad_round = INT32_MAX;
    const int32_t tt = L->t_tail[t];
    forward(0, K, rt, L->fwd, L->list, D, X, up, down, lo);
    if (tt >= 0) { /* the tail on a renumbered copy, as the kernel's shared memory */
        const int32_t T = L->t_nodes[tt], Rt = L->t_rounds[tt];
        const int32_t *map = L->tmap + L->t_map[tt], *trt = L->rt + L->t_rt[tt];
        double *c = malloc(5 * (size_t)(T ? T : 1) * sizeof *c);
        if (!c) return -2;
        for (int32_t j = 0; j < T; ++j)
            c[j] = D[map[j]], c[T + j] = X[map[j]], c[2 * T + j] = up[map[j]], c[3 * T + j] = down[map[j]];
        forward(0, Rt, trt, L->fwd, L->list, c, c + T, c + 2 * T, c + 3 * T, c + 4 * T);
        backward(Rt, 0, K, trt + Rt + 1, L->bwd, c, c + T, c + 2 * T, c + 4 * T, &bad, &bad_round, map);
        for (int32_t j = 0; j < T; ++j) X[map[j]] = c[T + j], D[map[j]] = c[j];
        free(c);
    }
    backward(tt >= 0 ? K - 1 : R, 0, 0, rt + R + 1, L->bwd, D, X, up, lo, &bad, &bad_round, NULL);
    return bad;
}

void ns_contract_layout_destroy(ns_contract_layout *L) {
    if (!L) return;
    free(L->g_base), free(L->g_tmpl), free(L->g_scratch), free(L->small), free(L->medium), free(L->large), free(L->big);
    free(L->t_nodes), free(L->t_rounds), free(L->t_rt), free(L->rt);
    free(L->t_tail), free(L->t_head), free(L->t_map), free(L->tmap);
    free(L->fwd), free(L->list), free(L->bwd);
    memset(L, 0, sizeof *L);
}

/* Grow *p (of *cap elements of `elem` bytes) to hold `need`. */
static int grow(void **p, int64_t *cap, int64_t need, size_t elem) {
    if (need <= *cap) return 0;
    int64_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static uint64_t seq_hash(const int32_t *shape, int64_t first, int64_t count) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)count;
    for (int64_t c = first; c < first + count; ++c) h = (h ^ (uint64_t)(uint32_t)shape[c]) * 1099511628211ULL;
    return h;
}

/* A new template *out of template t's rounds K .. R on the nodes alive at
 * round K, numbered by elimination round (the order of t's backward tasks:
 * each round's nodes contiguous); tmap[t_map[*out] + j] is t's node of its
 * node j. 0, -1 out of memory, -2 too large. */
static int renumber(ns_contract_layout *L, int32_t t, int32_t K, int64_t *rtcap, int64_t *fcap, int64_t *lcap,
                    int64_t *bcap, int64_t *mcap, int32_t *out) {
    const int32_t n = L->t_nodes[t], R = L->t_rounds[t];
    const int32_t rt_off = L->t_rt[t];
    int32_t alive = n;
    for (int32_t r = 0; r < K; ++r) alive -= L->rt[rt_off + R + 2 + r] - L->rt[rt_off + R + 1 + r];
    int32_t *slot = malloc((size_t)n * sizeof *slot);
    if (!slot) return -1;
    for (int32_t i = 0; i < n; ++i) slot[i] = -1;
    const int32_t tt = L->n_templates++;
    if (grow((void **)&L->tmap, mcap, L->n_tmap + alive, sizeof *L->tmap)) return free(slot), -1;
    L->t_map[tt] = (int32_t)L->n_tmap;
    int32_t T = 0;
    {
        const int32_t *rb = L->rt + rt_off + R + 1;
        for (int32_t r = K; r <= R; ++r)
            for (int32_t q = rb[r]; q < rb[r + 1]; ++q) {
                const int32_t u = L->bwd[q].u;
                slot[u] = T;
                L->tmap[L->n_tmap + T] = u;
                ++T;
            }
    }
    L->n_tmap += T;
    const int32_t Rt = R - K;
    L->t_nodes[tt] = T;
    L->t_rounds[tt] = Rt;
    L->t_tail[tt] = -1;
    L->t_head[tt] = Rt;
    *out = tt;
    if (L->n_rt > INT32_MAX - (2 * Rt + 3)) return free(slot), -2;
    if (grow((void **)&L->rt, rtcap, L->n_rt + 2 * Rt + 3, sizeof *L->rt)) return free(slot), -1;
    L->t_rt[tt] = (int32_t)L->n_rt;
    int32_t *nrt = L->rt + L->n_rt;
    const int32_t *ort = L->rt + rt_off;
    L->n_rt += 2 * Rt + 3;
#define SL(x) ((x) >= 0 ? slot[(x)] : -1)
    for (int32_t r = K; r < R; ++r) {
        nrt[r - K] = (int32_t)L->n_fwd;
        const int32_t t0 = ort[r], t1 = ort[r + 1];
        if (grow((void **)&L->fwd, fcap, L->n_fwd + (t1 - t0), sizeof *L->fwd)) return free(slot), -1;
        for (int32_t q = t0; q < t1; ++q) {
            const ns_contract_fwd f = L->fwd[q];
            ns_contract_fwd e = {slot[f.k], SL(f.u1), SL(f.u2), SL(f.pu)};
            if (f.u1 <= -2) {
                if (grow((void **)&L->list, lcap, L->n_list + f.u2, sizeof *L->list)) return free(slot), -1;
                if (L->n_list > INT32_MAX - 2 - f.u2) return free(slot), -2;
                e.u1 = -2 - (int32_t)L->n_list;
                e.u2 = f.u2;
                for (int32_t k = 0; k < f.u2; ++k) L->list[L->n_list++] = slot[ns_contract_fwd_child(f, L->list, k)];
            }
            L->fwd[L->n_fwd++] = e;
        }
    }
    nrt[Rt] = (int32_t)L->n_fwd;
    for (int32_t r = K; r <= R; ++r) {
        nrt[Rt + 1 + r - K] = (int32_t)L->n_bwd;
        const int32_t t0 = ort[R + 1 + r], t1 = ort[R + 2 + r];
        if (grow((void **)&L->bwd, bcap, L->n_bwd + (t1 - t0), sizeof *L->bwd)) return free(slot), -1;
        for (int32_t q = t0; q < t1; ++q) {
            const ns_contract_bwd w = L->bwd[q];
            L->bwd[L->n_bwd++] = (ns_contract_bwd){slot[w.u], SL(w.p), SL(w.c), 0};
        }
    }
    nrt[2 * Rt + 2] = (int32_t)L->n_bwd;
#undef SL
    free(slot);
    return 0;
}

/* Give big template t a tail (see ns_contract_layout): 0, -1 out of
 * memory, -2 too large. */
static int add_tail(ns_contract_layout *L, int32_t t, int32_t cap, int64_t *rtcap, int64_t *fcap, int64_t *lcap,
                    int64_t *bcap, int64_t *mcap) {
    const int32_t n = L->t_nodes[t], R = L->t_rounds[t];
    const int32_t *rb = L->rt + L->t_rt[t] + R + 1;
    /* K: the first round that starts with at most cap nodes alive */
    int32_t K = 0, alive = n;
    while (K < R && alive > cap) {
        alive -= rb[K + 1] - rb[K];
        ++K;
    }
    if (K == 0 || alive > cap) return 0; /* all fit (not big) or none: no tail */
    int32_t tt = -1;
    const int e = renumber(L, t, K, rtcap, fcap, lcap, bcap, mcap, &tt);
    if (e) return e;
    L->t_map[t] = L->t_map[tt];
    L->t_tail[t] = tt;
    L->t_head[t] = K;
    if (L->t_nodes[tt] > L->max_tail_nodes) L->max_tail_nodes = L->t_nodes[tt];
    return 0;
}

/* The state of one ns_contract_layout_create: its inputs, the groups (first
 * cell and count), the template hash (htab: the template of each slot;
 * tfirst: each template's first group) and the capacities of L's arrays. */
typedef struct {
    const ns_contract_plan *plans;
    const int32_t *cell_shape;
    const int64_t *cell_offset;
    const ns_contract_layout_options *o;
    int64_t *gfirst, *gcount, *htab;
    int64_t hcap;
    int32_t *tfirst;
    int64_t mcap, rtcap, fcap, lcap, bcap;
} layout_build;

/* groups: consecutive cells while the nodes fit the cap; their count */
static int64_t form_groups(layout_build *B, int64_t n_cells) {
    const ns_contract_plan *plans = B->plans;
    const int32_t *cell_shape = B->cell_shape;
    const ns_contract_layout_options *o = B->o;
    int64_t *gfirst = B->gfirst, *gcount = B->gcount;
    int64_t small_total = 0;
    for (int64_t c = 0; c < n_cells; ++c) {
        const int32_t n = plans[cell_shape[c]].n;
        if (n <= o->big_nodes) small_total += n;
    }
    int64_t cap = o->group_nodes;
    if (o->min_groups > 0) {
        const int64_t spread = (small_total + o->min_groups - 1) / o->min_groups;
        if (spread < cap) cap = spread > 0 ? spread : 1;
    }
    int64_t ng = 0, nodes = 0;
    for (int64_t c = 0; c < n_cells; ++c) {
        const int32_t n = plans[cell_shape[c]].n;
        const int big = n > o->big_nodes;
        const int open = ng > 0 && gcount[ng - 1] > 0 && plans[cell_shape[gfirst[ng - 1]]].n <= o->big_nodes;
        if (!big && open && nodes + n <= cap && (o->max_cells <= 0 || gcount[ng - 1] < o->max_cells)) {
            gcount[ng - 1]++;
            nodes += n;
            continue;
        }
        gfirst[ng] = c;
        gcount[ng] = 1;
        ng++;
        nodes = n;
    }
    return ng;
}

/* L's per-group and per-template arrays for ng groups (tcap templates), and
 * the template hash; 1 when all were allocated. */
static int alloc_groups(ns_contract_layout *L, layout_build *B, int64_t ng, size_t tcap) {
    const ns_array_spec arrays[] = {
        NS_ARRAY(L->g_base, ng), NS_ARRAY(L->g_tmpl, ng), NS_ARRAY(L->g_scratch, ng), NS_ARRAY(L->small, ng),
        NS_ARRAY(L->medium, ng), NS_ARRAY(L->large, ng), NS_ARRAY(L->big, ng),
        NS_ARRAY(B->htab, B->hcap), /* group of each template's first use */
        NS_ARRAY(B->tfirst, tcap), NS_ARRAY(L->t_nodes, tcap), NS_ARRAY(L->t_rounds, tcap), NS_ARRAY(L->t_rt, tcap),
        NS_ARRAY(L->t_tail, tcap), NS_ARRAY(L->t_head, tcap), NS_ARRAY(L->t_map, tcap)};
    return ns_alloc_arrays(arrays, sizeof arrays / sizeof *arrays);
}

/* Group g's base, scratch and kind (small, medium, large or big). */
static void classify_group(ns_contract_layout *L, const layout_build *B, int64_t g, int big) {
    const ns_contract_plan *plans = B->plans;
    const int32_t *cell_shape = B->cell_shape;
    const int64_t *gfirst = B->gfirst;
    L->g_base[g] = B->cell_offset[gfirst[g]];
    if (big) {
        L->g_scratch[g] = L->scratch_nodes;
        L->scratch_nodes += plans[cell_shape[gfirst[g]]].n;
        L->big[L->n_big++] = (int32_t)g;
    } else {
        int64_t nodes_g = 0;
        for (int64_t c = gfirst[g]; c < gfirst[g] + B->gcount[g]; ++c) nodes_g += plans[cell_shape[c]].n;
        L->g_scratch[g] = -1;
        if (nodes_g <= B->o->group_nodes) L->small[L->n_small++] = (int32_t)g;
        else if (nodes_g <= B->o->mid_nodes) L->medium[L->n_medium++] = (int32_t)g;
        else L->large[L->n_large++] = (int32_t)g;
    }
}

/* the template: an earlier group with the same shapes (returned), or -1;
 * *slot: the hash slot where the search ended */
static int32_t find_template(const layout_build *B, int64_t g, int64_t *slot) {
    const int32_t *cell_shape = B->cell_shape;
    const int64_t *gfirst = B->gfirst, *gcount = B->gcount;
    int64_t h = (int64_t)(seq_hash(cell_shape, gfirst[g], gcount[g]) % (uint64_t)B->hcap);
    int32_t tmpl = -1;
    for (; B->htab[h] >= 0; h = (h + 1) % B->hcap) {
        const int64_t q = B->tfirst[B->htab[h]];
        if (gcount[q] == gcount[g] &&
            memcmp(cell_shape + gfirst[q], cell_shape + gfirst[g], (size_t)gcount[g] * sizeof *cell_shape) == 0) {
            tmpl = (int32_t)B->htab[h];
            break;
        }
    }
    *slot = h;
    return tmpl;
}

/* The forward rounds 0 .. R - 1 of group g's cells side by side (their
 * nodes offset), boundaries in rt: 0, -1 out of memory, -2 too large. */
static int copy_forward(ns_contract_layout *L, layout_build *B, int64_t g, int32_t R, int32_t *rt) {
    for (int32_t r = 0; r < R; ++r) {
        rt[r] = (int32_t)L->n_fwd;
        int32_t off = 0;
        for (int64_t c = B->gfirst[g]; c < B->gfirst[g] + B->gcount[g]; ++c) {
            const ns_contract_plan *p = &B->plans[B->cell_shape[c]];
            if (r < p->rounds) {
                const int32_t t0 = p->fwd_begin[r], t1 = p->fwd_begin[r + 1];
                if (grow((void **)&L->fwd, &B->fcap, L->n_fwd + (t1 - t0), sizeof *L->fwd)) return -1;
                for (int32_t t = t0; t < t1; ++t) {
                    const ns_contract_fwd f = p->fwd[t];
                    ns_contract_fwd e = {f.k + off, f.u1 >= 0 ? f.u1 + off : -1, f.u2 >= 0 ? f.u2 + off : -1,
                                         f.pu >= 0 ? f.pu + off : -1};
                    if (f.u1 <= -2) { /* a list: copy it */
                        if (grow((void **)&L->list, &B->lcap, L->n_list + f.u2, sizeof *L->list)) return -1;
                        if (L->n_list > INT32_MAX - 2 - f.u2) return -2;
                        e.u1 = -2 - (int32_t)L->n_list;
                        e.u2 = f.u2;
                        for (int32_t q = 0; q < f.u2; ++q) L->list[L->n_list++] = ns_contract_fwd_child(f, p->list, q) + off;
                    }
                    L->fwd[L->n_fwd++] = e;
                }
            }
            off += p->n;
        }
    }
    rt[R] = (int32_t)L->n_fwd;
    return 0;
}

/* The backward rounds 0 .. R of group g's cells side by side, boundaries in
 * rt + R + 1: 0, -1 out of memory. */
static int copy_backward(ns_contract_layout *L, layout_build *B, int64_t g, int32_t R, int32_t *rt) {
    for (int32_t r = 0; r <= R; ++r) {
        rt[R + 1 + r] = (int32_t)L->n_bwd;
        int32_t off = 0;
        for (int64_t c = B->gfirst[g]; c < B->gfirst[g] + B->gcount[g]; ++c) {
            const ns_contract_plan *p = &B->plans[B->cell_shape[c]];
            if (r <= p->rounds) {
                const int32_t t0 = p->bwd_begin[r], t1 = p->bwd_begin[r + 1];
                if (grow((void **)&L->bwd, &B->bcap, L->n_bwd + (t1 - t0), sizeof *L->bwd)) return -1;
                for (int32_t t = t0; t < t1; ++t) {
                    const ns_contract_bwd w = p->bwd[t];
                    L->bwd[L->n_bwd++] = (ns_contract_bwd){w.u + off, w.p >= 0 ? w.p + off : -1,
                                                           w.c >= 0 ? w.c + off : -1, 0};
                }
            }
            off += p->n;
        }
    }
    rt[2 * R + 2] = (int32_t)L->n_bwd;
    return 0;
}

/* A new template for group g (hash slot h): its cells' plans side by side;
 * for a big group its tail as the options ask.
 * 0, -1 out of memory, -2 too large. */
static int add_template(ns_contract_layout *L, layout_build *B, int64_t g, int big, int64_t h) {
    const ns_contract_layout_options *o = B->o;
    const int32_t tmpl = L->n_templates++;
    B->htab[h] = tmpl;
    B->tfirst[tmpl] = (int32_t)g;
    L->g_tmpl[g] = tmpl;
    int32_t R = 0, n_t = 0;
    for (int64_t c = B->gfirst[g]; c < B->gfirst[g] + B->gcount[g]; ++c) {
        const ns_contract_plan *p = &B->plans[B->cell_shape[c]];
        if (p->rounds > R) R = p->rounds;
        n_t += p->n;
    }
    L->t_nodes[tmpl] = n_t;
    L->t_rounds[tmpl] = R;
    L->t_tail[tmpl] = -1;
    L->t_head[tmpl] = R;
    L->t_map[tmpl] = 0;
    if (L->n_rt > INT32_MAX - (2 * R + 3)) return -2;
    L->t_rt[tmpl] = (int32_t)L->n_rt;
    if (R > L->max_rounds) L->max_rounds = R;
    if (!big && n_t <= o->group_nodes && n_t > L->max_small_nodes) L->max_small_nodes = n_t;
    if (!big && n_t > o->group_nodes && n_t <= o->mid_nodes && n_t > L->max_medium_nodes) L->max_medium_nodes = n_t;
    if (!big && n_t > o->mid_nodes && n_t > L->max_large_nodes) L->max_large_nodes = n_t;
    if (grow((void **)&L->rt, &B->rtcap, L->n_rt + 2 * R + 3, sizeof(int32_t))) return -1;
    int32_t *rt = L->rt + L->n_rt;
    L->n_rt += 2 * R + 3;
    int e = copy_forward(L, B, g, R, rt);
    if (e) return e;
    if (copy_backward(L, B, g, R, rt)) return -1;
    if (L->n_fwd > INT32_MAX || L->n_bwd > INT32_MAX) return -2;
    if (big && o->tail_nodes > 0) return add_tail(L, tmpl, o->tail_nodes, &B->rtcap, &B->fcap, &B->lcap, &B->bcap, &B->mcap);
    return 0;
}

ns_status ns_contract_layout_create(int32_t n_shapes, const ns_contract_plan *plans, int64_t n_cells,
                                    const int32_t *cell_shape, const int64_t *cell_offset,
                                    const ns_contract_layout_options *o, ns_contract_layout *L) {
    memset(L, 0, sizeof *L);
    if (n_cells < 1 || n_shapes < 1 || o->group_nodes < 1 || o->big_nodes < 1)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "contraction layout: bad arguments");
    layout_build B;
    memset(&B, 0, sizeof B);
    B.plans = plans;
    B.cell_shape = cell_shape;
    B.cell_offset = cell_offset;
    B.o = o;
    B.gfirst = malloc((size_t)(n_cells + 1) * sizeof *B.gfirst);
    B.gcount = malloc((size_t)(n_cells + 1) * sizeof *B.gcount);
    if (!B.gfirst || !B.gcount) {
        free(B.gfirst), free(B.gcount);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "contraction layout");
    }
    const int64_t ng = form_groups(&B, n_cells);
    if (ng > INT32_MAX) {
        free(B.gfirst), free(B.gcount);
        return ns_fail(NS_ERR_SIZE, "contraction layout: too many groups");
    }
    ns_status st = NS_OK;
    L->n_groups = (int32_t)ng;
    B.hcap = 2 * ng + 1;
    /* at most one template per group, and for a big one one tail */
    int e = alloc_groups(L, &B, ng, 2 * (size_t)ng) ? 0 : -1;
    for (int64_t h = 0; e == 0 && h < B.hcap; ++h) B.htab[h] = -1;
    for (int64_t g = 0; e == 0 && g < ng; ++g) {
        const int big = plans[cell_shape[B.gfirst[g]]].n > o->big_nodes;
        classify_group(L, &B, g, big);
        int64_t h = 0;
        const int32_t tmpl = find_template(&B, g, &h);
        if (tmpl >= 0) L->g_tmpl[g] = tmpl;
        else e = add_template(L, &B, g, big, h);
    }
    if (e == -2) st = ns_fail(NS_ERR_SIZE, "contraction layout: the plans exceed 2^31 tasks");
    else if (e) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "contraction layout of %lld groups", (long long)ng);
    free(B.gfirst), free(B.gcount), free(B.htab), free(B.tfirst);
    if (st != NS_OK) ns_contract_layout_destroy(L);
    return st;
}
