/* The CPU loop's mechanisms from a model (model_impl.h): the instances of
 * one lane block (w cells of one shape, state v[node * w + lane]) and the
 * calls of the generated host entry points over them.
 *
 * Per block and mechanism: the instances in (node, lane) order, each with
 * node_index = node * w + lane, the fields as n_fields arrays over them, a
 * copy of the globals and the TABLE storage (table_update runs inside the
 * generated init and state, so each block keeps its own: no two threads
 * write one table); per ion used: e, ci, co, i, didv over the block's
 * lane-nodes. */
#include <stdlib.h>
#include <string.h>

#include "cable/model_cpu.h"
#include "core/error.h"

typedef struct mech_block {
    ns_mech_ppack p;
    double *store;    /* n_fields * cnt fields, then globals, then the table */
    double **field;   /* n_fields pointers into store */
    int *node_index;  /* cnt */
    ns_mech_ion_view ions[NS_SIM_MECH_IONS_MAX];
    /* current() and state() go segment by segment (density mechanisms):
     * a run of at least RUN_MIN consecutive nodes is one call on the
     * contiguous path in place; the shorter runs between them are packed
     * into segments of at most SEG lane-nodes, each copied (whole nodes of
     * w lanes) into the block's scratch, run on the contiguous path there
     * and copied back (the values are moved, never combined: the results
     * are the in-place call's bit for bit) */
    int32_t n_segs;
    ns_mech_ppack *seg;     /* n_segs */
    double **seg_field;     /* n_segs * n_fields: the fields of the segment's instances */
    double **seg_local;     /* the same with desc->field_local fields in the block's scratch */
    int32_t *seg_node0;     /* per segment: its first node in seg_nodes */
    int32_t *seg_nodes;     /* the nodes of the gathered segments */
} mech_block;

/* A run of at least this many nodes is called in place (w lanes each), in
 * pieces of at most SEG lane-nodes; shorter runs are gathered into segments
 * of at most SEG lane-nodes. */
#define RUN_MIN 4
#define SEG 128

struct model_block {
    int32_t n_mechs;
    mech_block *m;
    int64_t nw;
    int32_t w;
    double *ion;            /* per ion j: e, ci, co, i, didv at [(5 * j + q) * nw] */
    unsigned char *written; /* per ion j at [j * nw]: e by Nernst at that lane-node */
    double *scratch;        /* v, rhs, d, then e, ci, co, i, didv per USEION: SEG each */
    double *local;          /* SEG per field of the mechanism with the most fields: field_local's */
};

void ns_model_block_free(model_block *b) {
    if (!b) return;
    for (int32_t k = 0; k < b->n_mechs && b->m; ++k) {
        free(b->m[k].store);
        free(b->m[k].field);
        free(b->m[k].node_index);
        free(b->m[k].seg);
        free(b->m[k].seg_field);
        free(b->m[k].seg_local);
        free(b->m[k].seg_node0);
        free(b->m[k].seg_nodes);
    }
    free(b->m);
    free(b->ion);
    free(b->written);
    free(b->scratch);
    free(b->local);
    free(b);
}

ns_status ns_model_block_create(const sim_model *model, int32_t shape, int32_t n, int32_t w, model_block **out) {
    *out = NULL;
    model_block *b = calloc(1, sizeof *b);
    if (!b) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: model block");
    b->n_mechs = model->n_mechs;
    b->nw = (int64_t)n * w;
    b->w = w;
    b->scratch = aligned_alloc(64, (size_t)(3 + 5 * NS_SIM_MECH_IONS_MAX) * SEG * sizeof(double));
    int max_fields = 1;
    for (int32_t k = 0; k < model->n_mechs; ++k)
        if (model->mechs[k].desc->n_fields > max_fields) max_fields = model->mechs[k].desc->n_fields;
    b->local = aligned_alloc(64, (size_t)max_fields * SEG * sizeof(double));
    b->m = calloc((size_t)(model->n_mechs > 0 ? model->n_mechs : 1), sizeof *b->m);
    b->ion = malloc((size_t)(5 * (model->n_ions > 0 ? model->n_ions : 1)) * (size_t)b->nw * sizeof *b->ion);
    b->written = malloc((size_t)(model->n_ions > 0 ? model->n_ions : 1) * (size_t)b->nw);
    if (!b->m || !b->ion || !b->written || !b->scratch || !b->local) goto oom;
    for (int32_t j = 0; j < model->n_ions; ++j)
        for (int32_t i = 0; i < n; ++i)
            memset(b->written + (size_t)j * (size_t)b->nw + (size_t)i * (size_t)w,
                   model->written[shape][(size_t)j * (size_t)n + (size_t)i], (size_t)w);
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const sim_mech *sm = &model->mechs[k];
        const ns_mech_desc *d = sm->desc;
        const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + k];
        mech_block *mb = &b->m[k];
        const int64_t cnt = (int64_t)ms->n * w;
        const size_t doubles = (size_t)d->n_fields * (size_t)cnt + (size_t)d->n_globals + (size_t)d->table_size + 1;
        mb->store = calloc(doubles, sizeof(double));
        mb->field = malloc((size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *mb->field);
        mb->node_index = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *mb->node_index);
        if (!mb->store || !mb->field || !mb->node_index) goto oom;
        for (int f = 0; f < d->n_fields; ++f) mb->field[f] = mb->store + (size_t)f * (size_t)cnt;
        double *globals = mb->store + (size_t)d->n_fields * (size_t)cnt;
        double *table = globals + d->n_globals;
        for (int g = 0; g < d->n_globals; ++g) globals[g] = sm->globals[g];
        for (int32_t i = 0; i < ms->n; ++i)
            for (int32_t j = 0; j < w; ++j) mb->node_index[(int64_t)i * w + j] = ms->node[i] * w + j;
        for (int j = 0; j < d->n_ions; ++j) {
            double *base = b->ion + (size_t)5 * (size_t)sm->ion[j] * (size_t)b->nw;
            const int keep = model->ions[sm->ion[j]].read_i;
            mb->ions[j] = (ns_mech_ion_view){base, base + b->nw, base + 2 * b->nw, keep ? base + 3 * b->nw : NULL,
                                             keep ? base + 4 * b->nw : NULL, NULL};
        }
        memset(&mb->p, 0, sizeof mb->p);
        mb->p.n = (int)cnt;
        mb->p.node_index = mb->node_index;
        mb->p.field = mb->field;
        mb->p.global = globals;
        mb->p.table = table;
        mb->p.ion = mb->ions;
        if (d->kind != NS_MECH_DENSITY || ms->n == 0) continue;
        /* segments: runs of >= RUN_MIN nodes in place, the rest gathered */
        const int nf = d->n_fields > 0 ? d->n_fields : 1;
        const int32_t per = SEG / w; /* nodes per gathered segment */
        int32_t segs = ms->n / per + 1; /* at most one per run and one per `per` nodes */
        for (int32_t i = 0; i < ms->n; ++i) segs += i == 0 || ms->node[i] != ms->node[i - 1] + 1;
        mb->seg = malloc((size_t)segs * sizeof *mb->seg);
        mb->seg_field = malloc((size_t)segs * (size_t)nf * sizeof *mb->seg_field);
        mb->seg_local = malloc((size_t)segs * (size_t)nf * sizeof *mb->seg_local);
        mb->seg_node0 = malloc((size_t)(segs + 1) * sizeof *mb->seg_node0);
        mb->seg_nodes = malloc((size_t)ms->n * sizeof *mb->seg_nodes);
        if (!mb->seg || !mb->seg_field || !mb->seg_local || !mb->seg_node0 || !mb->seg_nodes) goto oom;
        int32_t n_nodes = 0;
        for (int32_t i = 0; i < ms->n;) {
            int32_t e = i + 1;
            while (e < ms->n && ms->node[e] == ms->node[e - 1] + 1) ++e;
            int32_t g0 = i, g1 = i; /* a gathered segment: instances' nodes [g0, g1) */
            if (e - i >= RUN_MIN) {
                g1 = g0;
                if (e - i > per) e = i + per; /* the rest of the run: the next segment */
            } else {
                /* extend over the following short runs while they fit */
                g1 = e;
                while (g1 < ms->n && g1 - g0 < per) {
                    int32_t f = g1 + 1;
                    while (f < ms->n && ms->node[f] == ms->node[f - 1] + 1) ++f;
                    if (f - g1 >= RUN_MIN || f - g0 > per) break;
                    g1 = f;
                }
            }
            ns_mech_ppack *sp = &mb->seg[mb->n_segs];
            double **sf = mb->seg_field + (size_t)mb->n_segs * (size_t)nf;
            double **sl = mb->seg_local + (size_t)mb->n_segs * (size_t)nf;
            const int32_t i1 = g1 > g0 ? g1 : e;
            for (int f = 0; f < d->n_fields; ++f) {
                sf[f] = mb->field[f] + (int64_t)i * w;
                sl[f] = d->field_local && d->field_local[f] ? b->local + (size_t)f * SEG : sf[f];
            }
            *sp = mb->p;
            sp->n = (i1 - i) * w;
            sp->node_index = NULL;
            sp->field = sf;
            mb->seg_node0[mb->n_segs] = n_nodes;
            if (g1 > g0) {
                sp->node_begin = 0; /* in the scratch */
                for (int32_t q = g0; q < g1; ++q) mb->seg_nodes[n_nodes++] = ms->node[q];
            } else {
                sp->node_begin = ms->node[i] * w;
            }
            mb->n_segs++;
            i = i1;
        }
        mb->seg_node0[mb->n_segs] = n_nodes;
    }
    *out = b;
    return NS_OK;
oom:
    ns_model_block_free(b);
    return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: mechanisms of a block of %d cells of %d compartments", (int)w,
                   (int)n);
}

/* e by Nernst over the block for the ions whose concentration is written. */
static void nernst_ions(const sim_model *model, model_block *b, double celsius, unsigned only_mech_ions,
                        const sim_mech *sm) {
    for (int32_t j = 0; j < model->n_ions; ++j) {
        if (!model->ions[j].write_c) continue;
        if (only_mech_ions) {
            int mine = 0;
            for (int q = 0; q < sm->desc->n_ions; ++q)
                mine |= sm->ion[q] == j && (sm->desc->ions[q].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO));
            if (!mine) continue;
        }
        double *base = b->ion + (size_t)5 * (size_t)j * (size_t)b->nw;
        ns_sim_model_nernst(&model->ions[j], celsius, base + b->nw, base + 2 * b->nw,
                            b->written + (size_t)j * (size_t)b->nw, base, b->nw);
    }
}

static void bind_one(ns_mech_ppack *p, double *v, double *rhs, double *d, double t, double dt, double celsius) {
    p->v = v;
    p->rhs = rhs;
    p->d = d;
    p->t = t;
    p->dt = dt;
    p->celsius = celsius;
}

/* Call fn over the block's instances of one mechanism at once, over
 * node_index (init()). */
static void call_all(mech_block *mb, ns_mech_fn fn, double *v, double *rhs, double *d, double t, double dt,
                     double celsius) {
    bind_one(&mb->p, v, rhs, d, t, dt, celsius);
    fn(&mb->p);
}

/* Copy w lanes of each of the segment's nodes between a block array and
 * the scratch (in: block to scratch); W a constant per width, so that each
 * node's lanes are one or two vector moves. */
#define MOVE_W(W)                                                                                        \
    static void move_##W(double *restrict blk, double *restrict scr, const int32_t *nodes, int32_t n_nodes, \
                         int in) {                                                                      \
        if (in)                                                                                         \
            for (int32_t k = 0; k < n_nodes; ++k)                                                       \
                for (int l = 0; l < W; ++l) scr[k * W + l] = blk[(int64_t)nodes[k] * W + l];           \
        else                                                                                            \
            for (int32_t k = 0; k < n_nodes; ++k)                                                       \
                for (int l = 0; l < W; ++l) blk[(int64_t)nodes[k] * W + l] = scr[k * W + l];           \
    }
MOVE_W(1)
MOVE_W(2)
MOVE_W(4)
MOVE_W(8)
#undef MOVE_W
static inline void move_lanes(double *blk, double *scr, const int32_t *nodes, int32_t n_nodes, int32_t w, int in) {
    switch (w) {
    case 8: move_8(blk, scr, nodes, n_nodes, in); break;
    case 4: move_4(blk, scr, nodes, n_nodes, in); break;
    case 2: move_2(blk, scr, nodes, n_nodes, in); break;
    default: move_1(blk, scr, nodes, n_nodes, in); break;
    }
}

/* current() (rhs, d non-NULL) or state() of a density mechanism, segment
 * by segment (mech_block). A gathered segment copies in what the entry
 * point reads or adds to (v, rhs, d; per USEION what its flags say it
 * reads or writes: e, ci, co; the current and its slope where the loop keeps
 * them) and copies back what it may write (rhs, d and the currents; the
 * concentrations it writes). */
static void call_segs(const model_block *b, mech_block *mb, const ns_mech_desc *dsc, ns_mech_fn fn, double *v,
                      double *rhs, double *d, double t, double dt, double celsius, int keep) {
    const int nf = dsc->n_fields > 0 ? dsc->n_fields : 1;
    const int32_t w = b->w;
    const int cur = rhs != NULL;
    double *sv = b->scratch, *sr = sv + SEG, *sd = sr + SEG;
    ns_mech_ion_view gv[NS_SIM_MECH_IONS_MAX];
    for (int j = 0; j < dsc->n_ions; ++j) {
        double *base = sd + SEG + (size_t)5 * SEG * (size_t)j;
        gv[j] = (ns_mech_ion_view){base, base + SEG, base + 2 * SEG, mb->ions[j].i ? base + 3 * SEG : NULL,
                                   mb->ions[j].didv ? base + 4 * SEG : NULL, NULL};
    }
    for (int32_t s = 0; s < mb->n_segs; ++s) {
        ns_mech_ppack *sp = &mb->seg[s];
        const int32_t *nodes = mb->seg_nodes + mb->seg_node0[s];
        const int32_t nn = mb->seg_node0[s + 1] - mb->seg_node0[s];
        sp->field = (keep ? mb->seg_field : mb->seg_local) + (size_t)s * (size_t)nf;
        if (nn == 0) {
            bind_one(sp, v, rhs, d, t, dt, celsius);
            fn(sp);
            continue;
        }
        move_lanes(v, sv, nodes, nn, w, 1);
        if (cur) {
            move_lanes(rhs, sr, nodes, nn, w, 1);
            move_lanes(d, sd, nodes, nn, w, 1);
        }
        for (int j = 0; j < dsc->n_ions; ++j) {
            const ns_mech_ion_view *bv = &mb->ions[j];
            const unsigned fl = dsc->ions[j].flags;
            if (fl & NS_MECH_ION_READ_E) move_lanes(bv->e, gv[j].e, nodes, nn, w, 1);
            if (fl & (NS_MECH_ION_READ_CI | NS_MECH_ION_WRITE_CI)) move_lanes(bv->ci, gv[j].ci, nodes, nn, w, 1);
            if (fl & (NS_MECH_ION_READ_CO | NS_MECH_ION_WRITE_CO)) move_lanes(bv->co, gv[j].co, nodes, nn, w, 1);
            if (bv->i && (cur || (fl & NS_MECH_ION_READ_I))) move_lanes(bv->i, gv[j].i, nodes, nn, w, 1);
            if (bv->didv && cur) move_lanes(bv->didv, gv[j].didv, nodes, nn, w, 1);
        }
        bind_one(sp, sv, cur ? sr : NULL, cur ? sd : NULL, t, dt, celsius);
        sp->ion = gv;
        fn(sp);
        sp->ion = mb->ions;
        if (cur) {
            move_lanes(rhs, sr, nodes, nn, w, 0);
            move_lanes(d, sd, nodes, nn, w, 0);
        }
        for (int j = 0; j < dsc->n_ions; ++j) {
            const ns_mech_ion_view *bv = &mb->ions[j];
            const unsigned fl = dsc->ions[j].flags;
            if (cur && bv->i) move_lanes(bv->i, gv[j].i, nodes, nn, w, 0);
            if (cur && bv->didv) move_lanes(bv->didv, gv[j].didv, nodes, nn, w, 0);
            if (fl & NS_MECH_ION_WRITE_CI) move_lanes(bv->ci, gv[j].ci, nodes, nn, w, 0);
            if (fl & NS_MECH_ION_WRITE_CO) move_lanes(bv->co, gv[j].co, nodes, nn, w, 0);
        }
    }
}

/* current() or state() over the block's instances: by segments for a
 * density mechanism, else (a point process) at once over node_index. keep
 * 0: the field_local fields in scratch (their stored values are then stale
 * until a call with keep 1). */
static void call(const model_block *b, mech_block *mb, const ns_mech_desc *dsc, ns_mech_fn fn, double *v,
                 double *rhs, double *d, double t, double dt, double celsius, int keep) {
    if (dsc->kind == NS_MECH_DENSITY) call_segs(b, mb, dsc, fn, v, rhs, d, t, dt, celsius, keep);
    else call_all(mb, fn, v, rhs, d, t, dt, celsius);
}

void ns_model_block_init(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w, double *v,
                         double dt, double celsius) {
    /* ions from the model's values (NEURON's defaults where it gives none) */
    const double *init = model->ion_init[shape];
    for (int32_t j = 0; j < model->n_ions; ++j)
        for (int q = 0; q < 3; ++q) {
            double *dst = b->ion + (size_t)(5 * j + q) * (size_t)b->nw;
            const double *src = init + (size_t)(3 * j + q) * (size_t)n;
            for (int32_t i = 0; i < n; ++i)
                for (int32_t l = 0; l < w; ++l) dst[(int64_t)i * w + l] = src[i];
        }
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + k];
        mech_block *mb = &b->m[k];
        for (int f = 0; f < d->n_fields; ++f) {
            double *x = mb->field[f];
            for (int32_t i = 0; i < ms->n; ++i)
                for (int32_t l = 0; l < w; ++l)
                    x[(int64_t)i * w + l] = f < d->n_params ? ms->param[(int64_t)f * ms->n + i] : 0.0;
        }
    }
    /* NEURON's finitialize: e by Nernst where a concentration is written,
     * then each mechanism's INITIAL in type order (Nernst again after one
     * that writes a concentration) */
    nernst_ions(model, b, celsius, 0, NULL);
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        mech_block *mb = &b->m[k];
        if (mb->p.n == 0) continue;
        call_all(mb, model->mechs[k].desc->init, v, NULL, NULL, 0.0, dt, celsius);
        if (model->mechs[k].writes_c) nernst_ions(model, b, celsius, 1, &model->mechs[k]);
    }
}

void ns_model_block_zero_ions(const sim_model *model, model_block *b) {
    for (int32_t j = 0; j < model->n_ions; ++j) {
        if (!model->ions[j].read_i) continue;
        double *base = b->ion + (size_t)(5 * j + 3) * (size_t)b->nw;
        memset(base, 0, 2 * (size_t)b->nw * sizeof *base);
    }
}

void ns_model_block_current(const sim_model *model, model_block *b, int32_t k, double *v, double *rhs, double *d,
                            double t, double dt, double celsius, int keep) {
    mech_block *mb = &b->m[k];
    if (mb->p.n == 0) return;
    call(b, mb, model->mechs[k].desc, model->mechs[k].desc->current, v, rhs, d, t, dt, celsius, keep);
}

void ns_model_block_states(const sim_model *model, model_block *b, double *v, double t, double dt, double celsius,
                           int keep) {
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        mech_block *mb = &b->m[k];
        if (mb->p.n == 0) continue;
        call(b, mb, model->mechs[k].desc, model->mechs[k].desc->state, v, NULL, NULL, t, dt, celsius, keep);
        if (model->mechs[k].writes_c) nernst_ions(model, b, celsius, 1, &model->mechs[k]);
    }
}

const double *ns_model_block_ion(const model_block *b, int32_t ion, int q) {
    return b->ion + (size_t)(5 * ion + q) * (size_t)b->nw;
}

double *ns_model_block_ion_data(model_block *b, int32_t ion) { return b->ion + (size_t)(5 * ion) * (size_t)b->nw; }
const double *ns_model_block_field(const model_block *b, int32_t k, int f) { return b->m[k].field[f]; }
