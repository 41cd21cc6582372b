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
    /* runs of consecutive nodes: one call each on the contiguous path
     * (node_begin, vectorised loops) with the fields from the run's first
     * instance; n_runs 0: one call over node_index */
    int32_t n_runs;
    ns_mech_ppack *runs;
    double **run_field; /* n_runs * n_fields */
} mech_block;

/* Runs at least this many lane-nodes long on average (nodes x w) take the
 * contiguous path (shorter ones cost a call each for little vector work);
 * the rest one call over node_index, whose current() loop does not
 * vectorise (it scatters into rhs and d). Counted in lane-nodes, so that a
 * block of 4 or 8 lanes always takes the runs (8 lanes: about 4.5 % less CPU
 * time for the generated hh than counting nodes, bench/README.md; the same
 * values either way: every instance's arithmetic is the same on both paths). */
#define MIN_MEAN_RUN 4

struct model_block {
    int32_t n_mechs;
    mech_block *m;
    int64_t nw;
    double *ion;            /* per ion j: e, ci, co, i, didv at [(5 * j + q) * nw] */
    unsigned char *written; /* per ion j at [j * nw]: e by Nernst at that lane-node */
};

void ns_model_block_free(model_block *b) {
    if (!b) return;
    for (int32_t k = 0; k < b->n_mechs && b->m; ++k) {
        free(b->m[k].store);
        free(b->m[k].field);
        free(b->m[k].node_index);
        free(b->m[k].runs);
        free(b->m[k].run_field);
    }
    free(b->m);
    free(b->ion);
    free(b->written);
    free(b);
}

ns_status ns_model_block_create(const sim_model *model, int32_t shape, int32_t n, int32_t w, model_block **out) {
    *out = NULL;
    model_block *b = calloc(1, sizeof *b);
    if (!b) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: model block");
    b->n_mechs = model->n_mechs;
    b->nw = (int64_t)n * w;
    b->m = calloc((size_t)(model->n_mechs > 0 ? model->n_mechs : 1), sizeof *b->m);
    b->ion = malloc((size_t)(5 * (model->n_ions > 0 ? model->n_ions : 1)) * (size_t)b->nw * sizeof *b->ion);
    b->written = malloc((size_t)(model->n_ions > 0 ? model->n_ions : 1) * (size_t)b->nw);
    if (!b->m || !b->ion || !b->written) goto oom;
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
        /* runs of consecutive nodes: instances (node, lane) are then
         * consecutive lane-nodes from node * w */
        int32_t runs = 0;
        for (int32_t i = 0; i < ms->n; ++i) runs += i == 0 || ms->node[i] != ms->node[i - 1] + 1;
        if (runs > 0 && (int64_t)ms->n * w >= (int64_t)MIN_MEAN_RUN * runs) {
            mb->runs = malloc((size_t)runs * sizeof *mb->runs);
            mb->run_field = malloc((size_t)runs * (size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *mb->run_field);
            if (!mb->runs || !mb->run_field) goto oom;
            for (int32_t i = 0; i < ms->n;) {
                int32_t e = i + 1;
                while (e < ms->n && ms->node[e] == ms->node[e - 1] + 1) ++e;
                ns_mech_ppack *rp = &mb->runs[mb->n_runs];
                double **rf = mb->run_field + (size_t)mb->n_runs * (size_t)d->n_fields;
                for (int f = 0; f < d->n_fields; ++f) rf[f] = mb->field[f] + (int64_t)i * w;
                *rp = mb->p;
                rp->n = (e - i) * w;
                rp->node_begin = ms->node[i] * w;
                rp->node_index = NULL;
                rp->field = rf;
                mb->n_runs++;
                i = e;
            }
        }
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

/* Call fn over the block's instances of one mechanism: run by run, or once
 * over node_index (whole: always for init() and state() of a density
 * mechanism, whose generated node_index loops vectorise with v gathered, so
 * that the block's zero-area nodes, which split the runs, cost no short
 * loops; current() scatters into rhs and d, which AVX2 cannot vectorise,
 * and keeps the runs). */
static void call(mech_block *mb, ns_mech_fn fn, double *v, double *rhs, double *d, double t, double dt,
                 double celsius, int whole) {
    if (mb->n_runs == 0 || whole) {
        bind_one(&mb->p, v, rhs, d, t, dt, celsius);
        fn(&mb->p);
        return;
    }
    for (int32_t r = 0; r < mb->n_runs; ++r) {
        bind_one(&mb->runs[r], v, rhs, d, t, dt, celsius);
        fn(&mb->runs[r]);
    }
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
        call(mb, model->mechs[k].desc->init, v, NULL, NULL, 0.0, dt, celsius,
             model->mechs[k].desc->kind == NS_MECH_DENSITY);
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
                            double t, double dt, double celsius) {
    mech_block *mb = &b->m[k];
    if (mb->p.n == 0) return;
    call(mb, model->mechs[k].desc->current, v, rhs, d, t, dt, celsius, 0);
}

void ns_model_block_states(const sim_model *model, model_block *b, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        mech_block *mb = &b->m[k];
        if (mb->p.n == 0) continue;
        call(mb, model->mechs[k].desc->state, v, NULL, NULL, t, dt, celsius,
             model->mechs[k].desc->kind == NS_MECH_DENSITY);
        if (model->mechs[k].writes_c) nernst_ions(model, b, celsius, 1, &model->mechs[k]);
    }
}

const double *ns_model_block_ion(const model_block *b, int32_t ion, int q) {
    return b->ion + (size_t)(5 * ion + q) * (size_t)b->nw;
}

double *ns_model_block_ion_data(model_block *b, int32_t ion) { return b->ion + (size_t)(5 * ion) * (size_t)b->nw; }
const double *ns_model_block_field(const model_block *b, int32_t k, int f) { return b->m[k].field[f]; }
int64_t ns_model_block_instances(const model_block *b, int32_t k) { return b->m[k].p.n; }
const int *ns_model_block_node_index(const model_block *b, int32_t k) { return b->m[k].node_index; }
