/* The CPU loop's mechanisms from a model (model_impl.h): the instances of
 * one lane block (w cells of one shape, state v[pos(node) * w + lane]) and the
 * calls of the generated host entry points over them.
 *
 * Per block and mechanism: the instances in (node, lane) order, each with
 * node_index = pos(node) * w + lane, the fields as n_fields arrays over them, a
 * copy of the globals; per ion used: e, ci, co, i, didv over the block's
 * lane-nodes. The TABLEs are the simulation's (model_tables): one per
 * mechanism for every block, as NEURON keeps one per mechanism and the GPU
 * loop one per simulation. */
#include <stdlib.h>
#include <string.h>

#include "mech/blocks_impl.h"
#include "core/error.h"

/* Runs at least this many lane-nodes long on average (nodes x w) take the
 * contiguous path (shorter ones cost a call each for little vector work);
 * the rest one call over node_index, whose current() loop does not
 * vectorise (it scatters into rhs and d). Counted in lane-nodes, so that a
 * block of 4 or 8 lanes always takes the runs (measured faster for the
 * generated hh than counting nodes, docs/mechanisms.md, "Speed"; the same
 * values either way: every instance's arithmetic is the same on both paths). */
#define MIN_MEAN_RUN 4
/* Storage of `doubles` values from a cache line, zeroed: the instances'
 * fields and the ions' arrays start on one, as the loop's own arrays
 * (sim/cpu/step.c, ALIGN) and the hand-written membrane's gates did, so that
 * a vector of a block of 8 lanes is one line, not two (a block's field f
 * from its own line: line_stride). */
#define LINE_BYTES 64
static double *lines(size_t doubles) {
    const size_t bytes = (doubles * sizeof(double) + LINE_BYTES - 1) / LINE_BYTES * LINE_BYTES;
    double *p = aligned_alloc(LINE_BYTES, bytes ? bytes : LINE_BYTES);
    if (p) memset(p, 0, bytes ? bytes : LINE_BYTES);
    return p;
}
/* cnt values rounded up to whole cache lines */
static size_t line_stride(int64_t cnt) {
    const size_t per = LINE_BYTES / sizeof(double);
    return ((size_t)cnt + per - 1) / per * per;
}

static void call(mech_block *mb, ns_mech_fn fn, double *v, double *rhs, double *d, double t, double dt,
                 double celsius, int whole);

void ns_model_block_free(model_block *b) {
    if (!b) return;
    for (int32_t k = 0; k < b->n_mechs && b->m; ++k) { /* NEURON's DESTRUCTOR: no v, no time */
        mech_block *mb = &b->m[k];
        if (mb->constructed && mb->desc->hooks[NS_MECH_DESTRUCTOR])
            call(mb, mb->desc->hooks[NS_MECH_DESTRUCTOR], NULL, NULL, NULL, 0.0, 0.0, 0.0, 1);
    }
    for (int32_t k = 0; k < b->n_mechs && b->m; ++k) {
        free(b->m[k].store);
        free(b->m[k].table);
        free(b->m[k].field);
        free(b->m[k].node_index);
        free(b->m[k].ord);
        free(b->m[k].rank);
        free(b->m[k].runs);
        free(b->m[k].run_field);
        free(b->m[k].ptr_store);
        free(b->m[k].ptr);
        free(b->m[k].run_ptr);
        ns_ldifus_plan_free(b->m[k].ld);
    }
    free(b->m);
    free(b->segs);
    if (b->tab_own) ns_model_tables_free(b->tab);
    free(b->ion);
    free(b->written);
    free(b->geom);
    free(b->scratch);
    free(b);
}

/* Node i's position in the block's arrays (pos: sim/cpu/step.c's node order, NULL: i). */
static inline int32_t position(const int32_t *pos, int32_t i) { return pos ? pos[i] : i; }

/* The model's ordinal (sim_mech_shape) of the block's k-th instance of mb, and back */
static inline int32_t ordinal(const mech_block *mb, int32_t k) { return mb->ord ? mb->ord[k] : k; }
int32_t ns_model_block_slot(const model_block *b, int32_t k, int32_t inst) {
    return b->m[k].rank ? b->m[k].rank[inst] : inst;
}

/* mb's instances in position order (mb->ord, mb->rank) over a shape of n
 * nodes; 0, or -1 when out of memory */
static int order_instances(mech_block *mb, const sim_mech_shape *ms, int32_t n, const int32_t *pos) {
    if (!pos || ms->n == 0) return 0;
    int32_t *at = malloc((size_t)n * sizeof *at); /* per position: the model's ordinal there, -1 */
    mb->ord = malloc((size_t)ms->n * sizeof *mb->ord);
    mb->rank = malloc((size_t)ms->n * sizeof *mb->rank);
    if (!at || !mb->ord || !mb->rank) {
        free(at);
        return -1;
    }
    for (int32_t i = 0; i < n; ++i) at[i] = -1;
    for (int32_t i = 0; i < ms->n; ++i) at[pos[ms->node[i]]] = i;
    int32_t k = 0;
    for (int32_t i = 0; i < n; ++i)
        if (at[i] >= 0) {
            mb->ord[k] = at[i];
            mb->rank[at[i]] = k++;
        }
    free(at);
    return 0;
}

/* Whether the model can take the fused pass (k_of: its pas and hh, -1
 * where absent): every mechanism the built-in pas or hh with the layouts
 * above, hh's rate table in use (usetable_hh, its one GLOBAL: the loop is
 * written for the table), and no ion whose current a mechanism reads or
 * whose concentration one writes. */
static int fusable(const sim_model *model, int32_t k_of[2]) {
    k_of[0] = k_of[1] = -1;
    for (int32_t j = 0; j < model->n_ions; ++j)
        if (model->ions[j].write_c || model->ions[j].read_i) return 0;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        if (d == &nsm_pas_desc && d->n_fields == NS_FUSED_PAS_FIELDS && d->n_params == NS_FUSED_PAS_PARAMS &&
            k_of[0] < 0)
            k_of[0] = k;
        else if (d == &nsm_hh_desc && d->n_fields == NS_FUSED_HH_FIELDS && d->n_params == NS_FUSED_HH_PARAMS &&
                 d->n_ions == 2 && d->n_globals == 1 && model->mechs[k].globals[0] != 0.0 && k_of[1] < 0)
            k_of[1] = k;
        else return 0;
    }
    return 1;
}

int ns_model_fusable(const sim_model *model) {
    int32_t k_of[2];
    return model && fusable(model, k_of);
}

int ns_model_point_fusable(const ns_mech_desc *d) { return d == &nsm_ExpSyn_desc || d == &nsm_Exp2Syn_desc; }

/* Segments shorter than this many lane-nodes on average (a cell in node
 * order whose membrane runs are cut by zero-area nodes every few nodes: a
 * cell split across threads, sim/cpu/step.c) cost a loop each for little
 * vector work; a mechanism of such a block runs its fused passes over its
 * instances instead (in order: node_index ascends), v gathered and rhs and
 * d scattered, as the hand-written loop's masked passes ran such cells
 * whole. The same arithmetic per instance and the same order of the terms
 * at each node: the same values. */
#define FUSED_GATHER_RUN 32

/* Whether the block's fused mechanisms take the instance passes
 * (b->gather) and whether all their instances share one parameter tuple and
 * one e per ion (b->g_uniform). pos: the block's node order (the
 * instances' lane-nodes ascend only without one). */
static void fused_gather(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                         const int32_t *pos, const sim_mech_shape *ms[2]) {
    for (int f = 0; f < 2; ++f) {
        b->gather[f] = b->g_uniform[f] = 0;
        if (b->fused_k[f] < 0 || pos || ms[f]->n == 0) continue;
        int64_t segs = 0;
        for (int32_t s = 0; s < b->n_segs; ++s) segs += b->segs[s].inst[f] >= 0;
        b->gather[f] = (int64_t)ms[f]->n * w < (int64_t)FUSED_GATHER_RUN * segs;
        const sim_mech *sm = &model->mechs[b->fused_k[f]];
        int same = 1;
        for (int k = 0; k < sm->desc->n_params && same; ++k) {
            const double *x = ms[f]->param + (size_t)k * (size_t)ms[f]->n;
            for (int32_t i = 1; i < ms[f]->n && same; ++i) same = x[i] == x[0];
        }
        for (int j = 0; j < sm->desc->n_ions && same; ++j) {
            const double *e = model->ion_init[shape] + (size_t)3 * (size_t)sm->ion[j] * (size_t)n;
            for (int32_t i = 1; i < ms[f]->n && same; ++i) same = e[ms[f]->node[i]] == e[ms[f]->node[0]];
        }
        b->g_uniform[f] = same;
    }
}

/* The block's segments (fused_seg) over the shape's n nodes. */
static ns_status fused_segments(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                                const int32_t *pos) {
    int32_t *ord = malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *ord); /* per mechanism and position: the ordinal
                                                                         of the instance there, -1 */
    if (!ord) return NS_ERR_OUT_OF_MEMORY;
    const sim_mech_shape *ms[2] = {NULL, NULL};
    for (int f = 0; f < 2; ++f) {
        for (int32_t i = 0; i < n; ++i) ord[(size_t)f * (size_t)n + (size_t)i] = -1;
        if (b->fused_k[f] < 0) continue;
        ms[f] = &model->per_shape[(size_t)shape * model->n_mechs + b->fused_k[f]];
        const mech_block *mb = &b->m[b->fused_k[f]];
        for (int32_t i = 0; i < ms[f]->n; ++i)
            ord[(size_t)f * (size_t)n + (size_t)position(pos, ms[f]->node[ordinal(mb, i)])] = i;
    }
    /* a position continues the segment when each mechanism is absent at both
     * or at the next ordinal */
    for (int pass = 0; pass < 2; ++pass) {
        int32_t count = 0;
        for (int32_t i = 0; i < n; ++i) {
            int cont = i > 0;
            for (int f = 0; f < 2 && cont; ++f) {
                const int32_t *o = ord + (size_t)f * (size_t)n;
                const int32_t a = o[i - 1], c = o[i];
                cont = (a < 0 && c < 0) || (a >= 0 && c == a + 1);
            }
            if (!cont) {
                if (pass == 1) {
                    if (count > 0) b->segs[count - 1].n1 = i;
                    fused_seg *sg = &b->segs[count];
                    sg->n0 = i;
                    for (int f = 0; f < 2; ++f) sg->inst[f] = ord[(size_t)f * (size_t)n + (size_t)i];
                }
                ++count;
            }
        }
        if (pass == 0) {
            b->segs = malloc((size_t)(count > 0 ? count : 1) * sizeof *b->segs);
            if (!b->segs) {
                free(ord);
                return NS_ERR_OUT_OF_MEMORY;
            }
            b->n_segs = count;
        } else if (count > 0) b->segs[count - 1].n1 = n;
    }
    free(ord);
    /* uniform: every instance's parameters those of the segment's first */
    for (int32_t s = 0; s < b->n_segs; ++s) {
        fused_seg *sg = &b->segs[s];
        for (int f = 0; f < 2; ++f) {
            sg->uniform[f] = 0;
            if (sg->inst[f] < 0) continue;
            const sim_mech *sm = &model->mechs[b->fused_k[f]];
            const mech_block *mb = &b->m[b->fused_k[f]];
            const int np = sm->desc->n_params;
            const int32_t o0 = ordinal(mb, sg->inst[f]);
            int same = 1;
            for (int k = 0; k < np && same; ++k) {
                const double *x = ms[f]->param + (size_t)k * (size_t)ms[f]->n;
                for (int32_t i = 1; i < sg->n1 - sg->n0 && same; ++i) same = x[ordinal(mb, sg->inst[f] + i)] == x[o0];
            }
            /* and the e of its ions (fixed: no concentration is written) */
            for (int j = 0; j < sm->desc->n_ions && same; ++j) {
                const double *e = model->ion_init[shape] + (size_t)3 * (size_t)sm->ion[j] * (size_t)n;
                const int32_t *node = ms[f]->node;
                for (int32_t i = 1; i < sg->n1 - sg->n0 && same; ++i)
                    same = e[node[ordinal(mb, sg->inst[f] + i)]] == e[node[o0]];
            }
            sg->uniform[f] = same;
        }
    }
    fused_gather(model, b, shape, n, w, pos, ms);
    return NS_OK;
}

/* Whether the fused state pass transposes 8 rows of hh's rate table at a
 * time (rates_of_rows): where the clone of the fused passes taken is the
 * AVX-512 one, or the build's target has AVX-512; elsewhere it loads each
 * lane-node's values from its row (faster there: an AVX2-only build).
 * NS_CPU_ROWS_GATHER (CI's gcc build without OpenMP) takes the loads
 * always, so that the tests run both forms; their values are the same. */
static int rows_transpose(void) {
#if defined(NS_CPU_ROWS_GATHER) || !(defined(__GNUC__) || defined(__clang__))
    return 0;
#elif defined(__AVX512F__)
    return 1;
#elif defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__INTEL_COMPILER) && !defined(NS_NO_CLONES)
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

ns_status ns_model_tables_create(const sim_model *model, model_tables **out) {
    *out = NULL;
    model_tables *t = calloc(1, sizeof *t);
    if (!t) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: TABLEs");
    const size_t nm = (size_t)(model->n_mechs > 0 ? model->n_mechs : 1);
    t->n_mechs = model->n_mechs;
    t->table = calloc(nm, sizeof *t->table);
    t->own = calloc(nm, 1);
    int ok = t->table && t->own;
    for (int32_t k = 0; ok && k < model->n_mechs; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        if (d->table_update && d->table_size > 0) ok = (t->table[k] = lines((size_t)d->table_size)) != NULL;
    }
    int32_t k_of[2];
    t->hh = ok && fusable(model, k_of) ? k_of[1] : -1;
    if (t->hh >= 0) {
        /* zeros: no header matches, so the first update builds them */
        ok = (t->rows = lines((size_t)NSM_hh_rates_ROWS)) != NULL;
        t->transpose = rows_transpose();
    }
    if (!ok) {
        ns_model_tables_free(t);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: TABLEs");
    }
    *out = t;
    return NS_OK;
}

void ns_model_tables_free(model_tables *t) {
    if (!t) return;
    for (int32_t k = 0; t->table && k < t->n_mechs; ++k) free(t->table[k]);
    free(t->table);
    free(t->own);
    free(t->rows);
    free(t->blocks);
    free(t);
}

/* Mechanism k's TABLE in block b: p.table of its calls and of its runs' */
static void block_table(mech_block *mb, double *table) {
    mb->p.table = table;
    for (int32_t r = 0; r < mb->n_runs; ++r) mb->runs[r].table = table;
}

ns_status ns_model_tables_update(const sim_model *model, model_tables *t, double celsius) {
    for (int32_t k = 0; k < t->n_mechs; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        if (!t->table[k] || t->own[k]) continue;
        /* the first block with instances builds it when celsius or a DEPEND changed; the others,
         * bound as their loops are, find it current, unless their DEPENDs differ */
        int built = 0;
        for (int64_t q = 0; q < t->n_blocks; ++q) {
            mech_block *mb = &t->blocks[q]->m[k];
            if (mb->p.n == 0) continue;
            ns_mech_ppack p = mb->p;
            p.celsius = celsius;
            if (d->table_update(&p) && built) {
                /* its own per block from now on, each built by its block's loops */
                for (int64_t r = 0; r < t->n_blocks; ++r) {
                    mech_block *o = &t->blocks[r]->m[k];
                    if (o->p.n == 0) continue;
                    if (!(o->table = lines((size_t)d->table_size)))
                        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: TABLE of %s per block", d->name);
                    block_table(o, o->table);
                }
                t->own[k] = 1;
                break;
            }
            built = 1;
        }
    }
    /* hh's TABLE has no DEPEND (celsius only): its rows follow the shared one */
    if (t->hh >= 0 && !t->own[t->hh]) {
        ns_mech_ppack p;
        memset(&p, 0, sizeof p);
        p.table = t->table[t->hh];
        nsm_hh_p_rates_rows(&p, t->rows); /* when the TABLE changed (its header) */
    }
    return NS_OK;
}

ns_status ns_model_block_create(const sim_model *model, model_tables *tables, int32_t shape, int32_t n, int32_t w,
                                const int32_t *pos, model_block **out) {
    *out = NULL;
    model_block *b = calloc(1, sizeof *b);
    if (!b) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: model block");
    if (!tables) {
        if (ns_model_tables_create(model, &b->tab) != NS_OK) goto oom;
        b->tab_own = 1;
    } else b->tab = tables;
    if (b->tab->n_blocks == b->tab->cap_blocks) {
        const int64_t cap = b->tab->cap_blocks ? 2 * b->tab->cap_blocks : 16;
        model_block **nb = realloc(b->tab->blocks, (size_t)cap * sizeof *nb);
        if (!nb) goto oom;
        b->tab->blocks = nb;
        b->tab->cap_blocks = cap;
    }
    b->n_mechs = model->n_mechs;
    b->nw = (int64_t)n * w;
    b->m = calloc((size_t)(model->n_mechs > 0 ? model->n_mechs : 1), sizeof *b->m);
    b->ion = lines((size_t)(5 * (model->n_ions > 0 ? model->n_ions : 1)) * (size_t)b->nw);
    b->written = malloc((size_t)(model->n_ions > 0 ? model->n_ions : 1) * (size_t)b->nw);
    b->geom = malloc(2 * (size_t)b->nw * sizeof *b->geom);
    if (!b->m || !b->ion || !b->written || !b->geom) goto oom;
    if (model->n_mechs > 0 && !(b->scratch = malloc(2 * (size_t)b->nw * sizeof *b->scratch))) goto oom;
    for (int32_t i = 0; i < n; ++i)
        for (int32_t j = 0; j < w; ++j) {
            const int64_t q = (int64_t)position(pos, i) * w + j;
            b->geom[q] = model->geom[shape][i];
            b->geom[b->nw + q] = model->geom[shape][n + i];
        }
    for (int32_t j = 0; j < model->n_ions; ++j)
        for (int32_t i = 0; i < n; ++i)
            memset(b->written + (size_t)j * (size_t)b->nw + (size_t)position(pos, i) * (size_t)w,
                   model->written[shape][(size_t)j * (size_t)n + (size_t)i], (size_t)w);
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const sim_mech *sm = &model->mechs[k];
        const ns_mech_desc *d = sm->desc;
        const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + k];
        mech_block *mb = &b->m[k];
        const int64_t cnt = (int64_t)ms->n * w;
        const size_t stride = line_stride(cnt);
        const size_t doubles = (size_t)d->n_fields * stride + (size_t)d->n_globals + 1;
        mb->store = lines(doubles);
        mb->field = malloc((size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *mb->field);
        mb->node_index = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *mb->node_index);
        if (!mb->store || !mb->field || !mb->node_index || order_instances(mb, ms, n, pos) != 0) goto oom;
        for (int f = 0; f < d->n_fields; ++f) mb->field[f] = mb->store + (size_t)f * stride;
        double *globals = mb->store + (size_t)d->n_fields * stride;
        for (int g = 0; g < d->n_globals; ++g) globals[g] = sm->globals[g];
        for (int32_t i = 0; i < ms->n; ++i)
            for (int32_t j = 0; j < w; ++j)
                mb->node_index[(int64_t)i * w + j] = position(pos, ms->node[ordinal(mb, i)]) * w + j;
        for (int j = 0; j < d->n_ions; ++j) {
            double *base = b->ion + (size_t)5 * (size_t)sm->ion[j] * (size_t)b->nw;
            const int keep = model->ions[sm->ion[j]].read_i;
            mb->ions[j] = (ns_mech_ion_view){base, base + b->nw, base + 2 * b->nw, keep ? base + 3 * b->nw : NULL,
                                             keep ? base + 4 * b->nw : NULL, NULL};
        }
        memset(&mb->p, 0, sizeof mb->p);
        mb->desc = d;
        mb->p.ftable = sm->ftable;
        mb->p.n = (int)cnt;
        mb->p.node_index = mb->node_index;
        mb->p.field = mb->field;
        mb->p.global = globals;
        mb->p.table = b->tab->table[k];
        mb->p.ion = mb->ions;
        mb->p.area = b->geom;
        mb->p.diam = b->geom + b->nw;
        mb->p.error = &b->err;
        /* runs of instances at consecutive positions: instances (node, lane)
         * are then consecutive lane-nodes from position * w */
#define NEXT_AT(i) (mb->node_index[(int64_t)(i) * w] == mb->node_index[(int64_t)((i) - 1) * w] + w)
        int32_t runs = 0;
        for (int32_t i = 0; i < ms->n; ++i) runs += i == 0 || !NEXT_AT(i);
        if (runs > 0 && (int64_t)ms->n * w >= (int64_t)MIN_MEAN_RUN * runs) {
            mb->runs = malloc((size_t)runs * sizeof *mb->runs);
            mb->run_field = malloc((size_t)runs * (size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *mb->run_field);
            if (!mb->runs || !mb->run_field) goto oom;
            for (int32_t i = 0; i < ms->n;) {
                int32_t e = i + 1;
                while (e < ms->n && NEXT_AT(e)) ++e;
                ns_mech_ppack *rp = &mb->runs[mb->n_runs];
                double **rf = mb->run_field + (size_t)mb->n_runs * (size_t)d->n_fields;
                for (int f = 0; f < d->n_fields; ++f) rf[f] = mb->field[f] + (int64_t)i * w;
                *rp = mb->p;
                rp->n = (e - i) * w;
                rp->node_begin = mb->node_index[(int64_t)i * w];
                rp->node_index = NULL;
                rp->field = rf;
                mb->n_runs++;
                i = e;
            }
        }
    }
#undef NEXT_AT
    for (int32_t k = 0; k < model->n_mechs; ++k)
        if (model->mechs[k].desc->n_ldifus > 0 && !(b->m[k].ld = ns_ldifus_plan_create(model, b, k, shape, n, w)))
            goto oom;
    if (fusable(model, b->fused_k) && fused_segments(model, b, shape, n, w, pos) != NS_OK) goto oom;
    /* a mechanism whose TABLE is per block already (ns_model_tables_update) gets its own here too */
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        if (!b->tab->own[k] || b->m[k].p.n == 0) continue;
        if (!(b->m[k].table = lines((size_t)model->mechs[k].desc->table_size))) goto oom;
        block_table(&b->m[k], b->m[k].table);
    }
    b->tab->blocks[b->tab->n_blocks++] = b;
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
        if (!model->ions[j].write_c && (only_mech_ions || !model->ions[j].einit)) continue;
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

/* Call fn over the block's instances of one mechanism: run by run, or once
 * over node_index (whole: always for init() and state() of a density
 * mechanism, whose generated node_index loops vectorise with v gathered, so
 * that the block's zero-area nodes, which split the runs, cost no short
 * loops; current() scatters into rhs and d, which AVX2 cannot vectorise,
 * and keeps the runs). */
static void call(mech_block *mb, ns_mech_fn fn, double *v, double *rhs, double *d, double t, double dt,
                 double celsius, int whole) {
    if (mb->n_runs == 0 || whole) {
        ns_mech_ppack_bind(&mb->p, v, rhs, d, t, dt, celsius);
        fn(&mb->p);
        return;
    }
    for (int32_t r = 0; r < mb->n_runs; ++r) {
        ns_mech_ppack_bind(&mb->runs[r], v, rhs, d, t, dt, celsius);
        fn(&mb->runs[r]);
    }
}

void ns_model_block_init_ions(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                              const int32_t *pos, double celsius) {
    /* ions from the model's values (NEURON's defaults where it gives none);
     * i and didv 0, as a new ion's in NEURON (an INITIAL may read i: cabuf's
     * STEADYSTATE reads ica) and as the GPU path uploads them */
    const double *init = model->ion_init[shape];
    for (int32_t j = 0; j < model->n_ions; ++j) {
        for (int q = 0; q < 3; ++q) {
            double *dst = b->ion + (size_t)(5 * j + q) * (size_t)b->nw;
            const double *src = init + (size_t)(3 * j + q) * (size_t)n;
            for (int32_t i = 0; i < n; ++i)
                for (int32_t l = 0; l < w; ++l) dst[(int64_t)position(pos, i) * w + l] = src[i];
        }
        memset(b->ion + (size_t)(5 * j + 3) * (size_t)b->nw, 0, 2 * (size_t)b->nw * sizeof *b->ion);
    }
    /* NEURON's finitialize: e by Nernst where a concentration is written */
    nernst_ions(model, b, celsius, 0, NULL);
}

void ns_model_block_nernst(const sim_model *model, model_block *b, int32_t k, double celsius) {
    if (b->m[k].p.n > 0 && model->mechs[k].writes_c) nernst_ions(model, b, celsius, 1, &model->mechs[k]);
}

int32_t ns_model_block_nodes(const model_block *b) { return (int32_t)b->nw; }
const unsigned char *ns_model_block_ion_written(const model_block *b, int32_t ion) {
    return b->written + (size_t)ion * (size_t)b->nw;
}

void ns_model_block_init(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                         const int32_t *pos, const int64_t *cell, double *v, double dt, double celsius) {
    memset(&b->err, 0, sizeof b->err); /* finitialize starts without an error */
    ns_model_block_init_ions(model, b, shape, n, w, pos, celsius);
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + k];
        mech_block *mb = &b->m[k];
        for (int f = 0; f < d->n_fields; ++f) {
            /* NEURON's finitialize keeps the assigned values; here they restart at 0, except
             * where a CONSTRUCTOR may have set them (it ran at the first) */
            if (f >= d->n_params && mb->constructed && d->hooks[NS_MECH_CONSTRUCTOR]) continue;
            double *x = mb->field[f];
            for (int32_t i = 0; i < ms->n; ++i)
                for (int32_t l = 0; l < w; ++l)
                    x[(int64_t)i * w + l] = f < d->n_params ? ms->param[(int64_t)f * ms->n + ordinal(mb, i)] : 0.0;
        }
        for (int q = 0; q < d->has_random; ++q) /* the streams' ids: the cell and the node, whatever the layout */
            for (int32_t i = 0; i < ms->n; ++i)
                for (int32_t l = 0; l < w; ++l) {
                    double r[4];
                    ns_mech_random_stream(d, q, cell[l], ms->node[ordinal(mb, i)], r);
                    for (int j = 0; j < 4; ++j) mb->field[d->random_field + 4 * q + j][(int64_t)i * w + l] = r[j];
                }
    }
    /* then each mechanism's INITIAL in type order (Nernst again after one
     * that writes a concentration) */
    /* CONSTRUCTOR once per instance, at the first finitialize (the parameters set); then
     * BEFORE INITIAL, the INITIAL blocks, AFTER INITIAL */
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        mech_block *mb = &b->m[k];
        if (mb->constructed || mb->p.n == 0) continue;
        mb->constructed = 1;
        if (mb->desc->hooks[NS_MECH_CONSTRUCTOR])
            call(mb, mb->desc->hooks[NS_MECH_CONSTRUCTOR], NULL, NULL, NULL, 0.0, 0.0, 0.0, 1);
    }
    ns_model_block_hook(model, b, NS_MECH_BEFORE_INITIAL, v, 0.0, dt, celsius);
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        ns_model_block_phase(model, b, k, 1, v, 0.0, dt, celsius);
        ns_model_block_nernst(model, b, k, celsius);
    }
    ns_model_block_hook(model, b, NS_MECH_AFTER_INITIAL, v, 0.0, dt, celsius);
    /* finitialize ends with NEURON's setup_tree_matrix (nrn_rhs): the BEFORE BREAKPOINT blocks,
     * then every mechanism's currents once at t = 0 in type order (nrn_cur: the BREAKPOINT but
     * its SOLVEs, so no state moves; what a step can see of it is what the BREAKPOINT assigns:
     * a reversal potential it writes, capump's `if (t == 0) {parms()}`, the ions' currents, a
     * random draw), into scratch rhs and d; then BEFORE STEP (fixed_record_continuous) */
    ns_model_block_hook(model, b, NS_MECH_BEFORE_BREAKPOINT, v, 0.0, dt, celsius);
    for (int32_t k = 0; k < model->n_mechs; ++k)
        if (b->m[k].p.n > 0)
            call(&b->m[k], model->mechs[k].desc->current, v, b->scratch, b->scratch + b->nw, 0.0, dt, celsius,
                 model->mechs[k].desc->kind == NS_MECH_DENSITY);
    ns_model_block_hook(model, b, NS_MECH_BEFORE_STEP, v, 0.0, dt, celsius);
}

void ns_model_block_hook(const sim_model *model, model_block *b, int h, double *v, double t, double dt,
                         double celsius) {
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        mech_block *mb = &b->m[k];
        if (mb->p.n == 0 || !mb->desc->hooks[h]) continue;
        call(mb, mb->desc->hooks[h], v, NULL, NULL, t, dt, celsius, 1);
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

void ns_model_block_phase(const sim_model *model, model_block *b, int32_t k, int init, double *v, double t, double dt,
                          double celsius) {
    mech_block *mb = &b->m[k];
    if (mb->p.n == 0) return;
    const ns_mech_desc *d = model->mechs[k].desc;
    call(mb, init ? d->init : d->state, v, NULL, NULL, init ? 0.0 : t, dt, celsius, d->kind == NS_MECH_DENSITY);
}

ns_mech_ppack *ns_model_block_bind(model_block *b, int32_t k, int phase, double *v, double t, double dt,
                                   double celsius) {
    mech_block *mb = &b->m[k];
    ns_mech_ppack_bind(&mb->p, v, NULL, NULL, phase == 0 ? 0.0 : t, dt, celsius);
    return &mb->p;
}

void ns_model_block_states(const sim_model *model, model_block *b, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        ns_model_block_phase(model, b, k, 0, v, t, dt, celsius);
        ns_model_block_nernst(model, b, k, celsius);
    }
}

const double *ns_model_block_ion(const model_block *b, int32_t ion, int q) {
    return b->ion + (size_t)(5 * ion + q) * (size_t)b->nw;
}

double *ns_model_block_ion_data(model_block *b, int32_t ion) { return b->ion + (size_t)(5 * ion) * (size_t)b->nw; }
const double *ns_model_block_geom(const model_block *b) { return b->geom; }
ns_mech_error *ns_model_block_error(model_block *b) { return &b->err; }
const double *ns_model_block_field(const model_block *b, int32_t k, int f) { return b->m[k].field[f]; }
ns_status ns_model_block_pointers(model_block *b, int32_t k, double ****out) {
    mech_block *mb = &b->m[k];
    const int np = mb->desc->n_pointers;
    free(mb->ptr_store);
    free(mb->ptr);
    free(mb->run_ptr);
    mb->ptr_store = calloc((size_t)np * (size_t)(mb->p.n > 0 ? mb->p.n : 1), sizeof *mb->ptr_store);
    mb->ptr = malloc((size_t)(np > 0 ? np : 1) * sizeof *mb->ptr);
    mb->run_ptr = malloc((size_t)(np > 0 ? np : 1) * (size_t)(mb->n_runs > 0 ? mb->n_runs : 1) * sizeof *mb->run_ptr);
    if (!mb->ptr_store || !mb->ptr || !mb->run_ptr) {
        free(mb->ptr_store);
        free(mb->ptr);
        free(mb->run_ptr);
        mb->ptr_store = NULL;
        mb->ptr = mb->run_ptr = NULL;
        mb->p.pointer = NULL;
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: the POINTERs of %s", mb->desc->name);
    }
    for (int q = 0; q < np; ++q) mb->ptr[q] = mb->ptr_store + (size_t)q * (size_t)mb->p.n;
    mb->p.pointer = (double *const *const *)mb->ptr;
    /* the runs cover the block's instances in order */
    for (int32_t r = 0, first = 0; r < mb->n_runs; first += mb->runs[r++].n) {
        double ***rp = mb->run_ptr + (size_t)r * (size_t)np;
        for (int q = 0; q < np; ++q) rp[q] = mb->ptr[q] + first;
        mb->runs[r].pointer = (double *const *const *)rp;
    }
    *out = mb->ptr;
    return NS_OK;
}

double ***ns_model_block_pointer_arrays(model_block *b, int32_t k) { return b->m[k].ptr; }
double *ns_model_block_pointer_unset(model_block *b, int32_t k) {
    b->m[k].unset = 0.0;
    return &b->m[k].unset;
}
double *ns_model_block_globals(model_block *b, int32_t k) { return b->m[k].p.global; }
double *ns_model_block_field_data(model_block *b, int32_t k, int f) { return b->m[k].field[f]; }

void ns_model_block_expose(model_block *b) {
    for (int32_t s = 0; s < b->n_segs; ++s) b->segs[s].uniform[0] = b->segs[s].uniform[1] = 0;
    b->g_uniform[0] = b->g_uniform[1] = 0;
}
int64_t ns_model_block_instances(const model_block *b, int32_t k) { return b->m[k].p.n; }
const int *ns_model_block_node_index(const model_block *b, int32_t k) { return b->m[k].node_index; }

