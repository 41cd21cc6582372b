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

#include "mech/builtin/builtin.h"
#include "mech/builtin/hh.h"
#include "mech/builtin/pas.h"
#include "sim/cpu/mechanisms.h"
#include "core/error.h"

extern const ns_mech_desc nsm_pas_desc, nsm_hh_desc, nsm_ExpSyn_desc, nsm_Exp2Syn_desc;

typedef struct mech_block {
    ns_mech_ppack p;
    double *store;    /* n_fields fields of cnt values, each from a cache line (lines), then globals */
    double *table;    /* the block's own TABLE (model_tables.own), else NULL: p.table is the shared one */
    double **field;   /* n_fields pointers into store */
    int *node_index;  /* cnt */
    int32_t *ord;     /* the block's instances in position order (so that a reordered shape's region
                         runs are runs of consecutive instances too): ord[k] the model's ordinal
                         (sim_mech_shape) of the block's k-th; rank its inverse; both NULL: the same
                         order (no node order) */
    int32_t *rank;
    ns_mech_ion_view ions[NS_SIM_MECH_IONS_MAX];
    /* runs of consecutive nodes: one call each on the contiguous path
     * (node_begin, vectorised loops) with the fields from the run's first
     * instance; n_runs 0: one call over node_index */
    int32_t n_runs;
    ns_mech_ppack *runs;
    double **run_field; /* n_runs * n_fields */
    const ns_mech_desc *desc;
    int constructed;    /* its CONSTRUCTOR ran (at the first init): the DESTRUCTOR runs at free */
} mech_block;

/* Runs at least this many lane-nodes long on average (nodes x w) take the
 * contiguous path (shorter ones cost a call each for little vector work);
 * the rest one call over node_index, whose current() loop does not
 * vectorise (it scatters into rhs and d). Counted in lane-nodes, so that a
 * block of 4 or 8 lanes always takes the runs (measured faster for the
 * generated hh than counting nodes, docs/mechanisms.md, "Speed"; the same
 * values either way: every instance's arithmetic is the same on both paths). */
#define MIN_MEAN_RUN 4

/* The fused pass (ns_model_block_fused_*): a model whose mechanisms are the
 * built-in pas and hh runs their generated per-instance functions
 * (nsm_pas_current_F, nsm_hh_current_F, and nsm_hh_state_F's stages)
 * inside the loop's own passes over a block's lane-nodes, as the GPU's
 * fused loop does (src/sim/cuda/fused.h): an instance's fields in
 * locals, which the compiler keeps in vector registers; the parameters and
 * ions' e of a segment whose instances share them loaded once; the
 * assigned variables stored in the call's last step only
 * (ns_sim_get_model_var then reads what the per-step path leaves: no
 * assigned variable of pas or hh is read before it is written in a phase;
 * hh's current() sets fields 4 .. 8, its state() 9 .. 14). The field
 * layouts: builtin.h, NS_FUSED_*. */

/* Nodes [n0, n1) of a block where each fused mechanism (0 pas, 1 hh) is
 * inserted at every node or at none: its instance ordinal at n0 (-1: none)
 * and whether the instances' parameters are all those of the first
 * (uniform: loaded once). The segments cover the shape's nodes in order. */
typedef struct fused_seg {
    int32_t n0, n1;
    int32_t inst[2];
    int32_t uniform[2];
} fused_seg;

struct model_block {
    int32_t n_mechs;
    mech_block *m;
    int32_t fused_k[2]; /* a model that can take the fused pass (fusable): the mechanism index of its
                           pas and hh, -1 when absent */
    int32_t n_segs;
    fused_seg *segs;
    int32_t gather[2];    /* per fused mechanism: its passes run over the instances, v gathered and rhs,
                             d scattered (short segments: fused_gather) */
    int32_t g_uniform[2]; /* with gather: every instance's parameters and e those of the first */
    int64_t nw;
    double *ion;            /* per ion j: e, ci, co, i, didv at [(5 * j + q) * nw] */
    unsigned char *written; /* per ion j at [j * nw]: e by Nernst at that lane-node */
    double *geom;           /* area at [lane-node], diam at [nw + lane-node] (ns_mech_ppack.area, .diam) */
    double *scratch;        /* rhs and d (2 nw) of finitialize's currents; NULL unless a mechanism writes e */
    model_tables *tab;      /* the TABLEs it reads (the simulation's; its own when tab_own) */
    int tab_own;
    ns_mech_error err;      /* the mechanisms' errors (ns_mech_ppack.error): every ppack of the block's */
};

/* A model's TABLEs, shared by the blocks of one simulation. A TABLE depends on
 * celsius and on the GLOBALs it DEPENDs on, the same in every block, so one
 * copy serves them all (ns_model_tables_update builds it on one thread before
 * the blocks run; the generated loops' table_update then finds it current and
 * only reads it), where a copy per block cost each block its own 10 KB (hh)
 * and the fused hh's 26 KB of rows in the caches. A mechanism whose TABLE
 * two blocks would build differently (a DEPEND on a RANGE variable, which the
 * translator reads from the block's first instance) gets one per block. */
struct model_tables {
    int32_t n_mechs;
    double **table;      /* per mechanism: the shared TABLE (table_size doubles), NULL without one */
    unsigned char *own;  /* per mechanism: a TABLE per block instead (mech_block.table) */
    int32_t hh;          /* the fused hh's mechanism (fusable), else -1 */
    double *rows;        /* with it: its TABLE as rows (nsm_hh_p_rates_rows), 64-byte aligned */
    int transpose;       /* the state pass transposes 8 rows at a time (rows_transpose) */
    int64_t n_blocks, cap_blocks;
    model_block **blocks; /* the blocks that read them (ns_model_block_create) */
};

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

static int writes_e(const ns_mech_desc *d) {
    for (int j = 0; j < d->n_ions; ++j)
        if (d->ions[j].flags & NS_MECH_ION_WRITE_E) return 1;
    return 0;
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
    for (int32_t k = 0; k < model->n_mechs && !b->scratch; ++k)
        if (writes_e(model->mechs[k].desc) && !(b->scratch = malloc(2 * (size_t)b->nw * sizeof *b->scratch))) goto oom;
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

void ns_model_block_init(const sim_model *model, model_block *b, int32_t shape, int32_t n, int32_t w,
                         const int32_t *pos, const int64_t *cell, double *v, double dt, double celsius) {
    /* ions from the model's values (NEURON's defaults where it gives none);
     * i and didv 0, as a new ion's in NEURON (an INITIAL may read i: cabuf's
     * STEADYSTATE reads ica) and as the GPU path uploads them */
    const double *init = model->ion_init[shape];
    memset(&b->err, 0, sizeof b->err); /* finitialize starts without an error */
    for (int32_t j = 0; j < model->n_ions; ++j) {
        for (int q = 0; q < 3; ++q) {
            double *dst = b->ion + (size_t)(5 * j + q) * (size_t)b->nw;
            const double *src = init + (size_t)(3 * j + q) * (size_t)n;
            for (int32_t i = 0; i < n; ++i)
                for (int32_t l = 0; l < w; ++l) dst[(int64_t)position(pos, i) * w + l] = src[i];
        }
        memset(b->ion + (size_t)(5 * j + 3) * (size_t)b->nw, 0, 2 * (size_t)b->nw * sizeof *b->ion);
    }
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
    /* NEURON's finitialize: e by Nernst where a concentration is written,
     * then each mechanism's INITIAL in type order (Nernst again after one
     * that writes a concentration) */
    nernst_ions(model, b, celsius, 0, NULL);
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
        if (b->m[k].p.n > 0 && model->mechs[k].writes_c) nernst_ions(model, b, celsius, 1, &model->mechs[k]);
    }
    ns_model_block_hook(model, b, NS_MECH_AFTER_INITIAL, v, 0.0, dt, celsius);
    /* finitialize ends with one evaluation of the currents (NEURON's
     * setup_tree_matrix): what a step can see of it is a reversal potential
     * that a BREAKPOINT with currents writes (WRITE ena), stored to the ion
     * there. The mechanisms that write one run current() once, into scratch
     * rhs and d; the ions' i and didv are zeroed again. */
    if (b->scratch) {
        for (int32_t k = 0; k < model->n_mechs; ++k)
            if (writes_e(model->mechs[k].desc) && b->m[k].p.n > 0)
                call(&b->m[k], model->mechs[k].desc->current, v, b->scratch, b->scratch + b->nw, 0.0, dt, celsius,
                     model->mechs[k].desc->kind == NS_MECH_DENSITY);
        for (int32_t j = 0; j < model->n_ions; ++j)
            memset(b->ion + (size_t)(5 * j + 3) * (size_t)b->nw, 0, 2 * (size_t)b->nw * sizeof *b->ion);
    }
    /* finitialize's setup_tree_matrix runs BEFORE BREAKPOINT; BEFORE STEP is its last */
    ns_model_block_hook(model, b, NS_MECH_BEFORE_BREAKPOINT, v, 0.0, dt, celsius);
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
    bind_one(&mb->p, v, NULL, NULL, phase == 0 ? 0.0 : t, dt, celsius);
    return &mb->p;
}

void ns_model_block_states(const sim_model *model, model_block *b, double *v, double t, double dt, double celsius) {
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        ns_model_block_phase(model, b, k, 0, v, t, dt, celsius);
        if (b->m[k].p.n > 0 && model->mechs[k].writes_c) nernst_ions(model, b, celsius, 1, &model->mechs[k]);
    }
}

const double *ns_model_block_ion(const model_block *b, int32_t ion, int q) {
    return b->ion + (size_t)(5 * ion + q) * (size_t)b->nw;
}

double *ns_model_block_ion_data(model_block *b, int32_t ion) { return b->ion + (size_t)(5 * ion) * (size_t)b->nw; }
const double *ns_model_block_geom(const model_block *b) { return b->geom; }
ns_mech_error *ns_model_block_error(model_block *b) { return &b->err; }
const double *ns_model_block_field(const model_block *b, int32_t k, int f) { return b->m[k].field[f]; }
double *ns_model_block_globals(model_block *b, int32_t k) { return b->m[k].p.global; }
double *ns_model_block_field_data(model_block *b, int32_t k, int f) { return b->m[k].field[f]; }

void ns_model_block_expose(model_block *b) {
    for (int32_t s = 0; s < b->n_segs; ++s) b->segs[s].uniform[0] = b->segs[s].uniform[1] = 0;
    b->g_uniform[0] = b->g_uniform[1] = 0;
}
int64_t ns_model_block_instances(const model_block *b, int32_t k) { return b->m[k].p.n; }
const int *ns_model_block_node_index(const model_block *b, int32_t k) { return b->m[k].node_index; }

/* ---- the fused pass ---- */

/* As the generated loops (nmodl_gen.c): every call inlined into one
 * function per instruction set, chosen at load time, so that the
 * per-instance functions' fields stay in vector registers. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__INTEL_COMPILER) && !defined(NS_NO_CLONES)
#define FUSED_FN static __attribute__((target_clones("avx512f", "avx2", "default"), flatten))
#elif defined(__GNUC__) || defined(__clang__)
#define FUSED_FN static __attribute__((flatten))
#else
#define FUSED_FN static
#endif
/* a loop clang does not vectorise despite the pragma is no error (-Werror
 * builds), as in the generated loops */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#if defined(_OPENMP) || defined(NS_HAVE_OPENMP_SIMD)
#define FUSED_SIMD _Pragma("omp simd")
#else
#define FUSED_SIMD
#endif
#if defined(__GNUC__) || defined(__clang__)
#define FUSED_INLINE static inline __attribute__((always_inline))
#else
#define FUSED_INLINE static inline
#endif

/* Mechanism mb's ppack over the block's lane-nodes (instance i at
 * lane-node q: the loops pass both), its globals `global`. */
FUSED_INLINE ns_mech_ppack fused_pack(const mech_block *mb, double *v, double *rhs, double *d, double t, double dt,
                                      double celsius, double *global) {
    ns_mech_ppack p = mb->p;
    p.node_index = NULL;
    p.node_begin = 0;
    p.v = v;
    p.rhs = rhs;
    p.d = d;
    p.t = t;
    p.dt = dt;
    p.celsius = celsius;
    p.global = global;
    return p;
}

/* The lane-node of the l-th of a pass's instances i0 + l: consecutive from
 * q0 over a segment, the instance's own (node_index) in an instance pass
 * (gather) */
#define FUSED_Q(l) (gather ? ni[(int)i0 + (l)] : (int)q0 + (l))

/* pas's current over the len instances from i0 (at lane-nodes from q0: rhs
 * and d from zero there first; gather: at their own, zeroed by the caller) */
FUSED_INLINE void pas_current(const mech_block *mb, const ns_mech_ppack *pp, double *restrict rhs, double *restrict d,
                              int64_t q0, int64_t len, int64_t i0, const int uniform, const int last,
                              const int gather) {
    double *restrict P0 = mb->field[0], *restrict P1 = mb->field[1], *restrict P2 = mb->field[2];
    const int *restrict ni = mb->node_index;
    const double u0 = P0[i0], u1 = P1[i0];
    FUSED_SIMD
    for (int l = 0; l < (int)len; ++l) {
        const int i = (int)i0 + l, q = FUSED_Q(l);
        double F0 = uniform ? u0 : P0[i], F1 = uniform ? u1 : P1[i], F2 = 0.0;
        if (!gather) {
            rhs[q] = 0.0;
            d[q] = 0.0;
        }
        nsm_pas_current_F((ns_mech_ppack *)pp, &F0, &F1, &F2, i, q);
        if (last) P2[i] = F2;
    }
}

/* hh's fields as locals: the parameters (once for a uniform segment), the
 * assigned variables 0 (set before read), the states; the e of its ions
 * (ena, ek: once for a uniform segment) */
#define FUSED_HH_LOCALS                                                                                    \
    double F0 = uniform ? u0 : P0[i], F1 = uniform ? u1 : P1[i], F2 = uniform ? u2 : P2[i];               \
    double F3 = uniform ? u3 : P3[i];                                                                      \
    double F4 = 0.0, F5 = 0.0, F6 = 0.0, F7 = 0.0, F8 = 0.0, F9 = 0.0, F10 = 0.0, F11 = 0.0, F12 = 0.0;  \
    double F13 = 0.0, F14 = 0.0, F15 = P15[i], F16 = P16[i], F17 = P17[i];                              \
    double I0 = uniform ? ue0 : E0[q], I1 = uniform ? ue1 : E1[q]
/* the fields' arrays as restrict pointers of their own, the parameters of
 * instance i0 */
#define FUSED_HH_FIELD_PTRS                                                                                \
    double *restrict P0 = mb->field[0], *restrict P1 = mb->field[1], *restrict P2 = mb->field[2];          \
    double *restrict P3 = mb->field[3], *restrict P4 = mb->field[4], *restrict P5 = mb->field[5];          \
    double *restrict P6 = mb->field[6], *restrict P7 = mb->field[7], *restrict P8 = mb->field[8];          \
    double *restrict P9 = mb->field[9], *restrict P10 = mb->field[10], *restrict P11 = mb->field[11];      \
    double *restrict P12 = mb->field[12], *restrict P13 = mb->field[13], *restrict P14 = mb->field[14];    \
    double *restrict P15 = mb->field[15], *restrict P16 = mb->field[16], *restrict P17 = mb->field[17];    \
    const double u0 = P0[i0], u1 = P1[i0], u2 = P2[i0], u3 = P3[i0];                                      \
    const double *restrict E0 = pp->ion[0].e, *restrict E1 = pp->ion[1].e; /* ena, ek */                  \
    const double ue0 = E0[q0], ue1 = E1[q0];                                                                \
    (void)P4, (void)P5, (void)P6, (void)P7, (void)P8, (void)P9, (void)P10, (void)P11, (void)P12, (void)P13,     \
        (void)P14
#define FUSED_HH_ARGS \
    &F0, &F1, &F2, &F3, &F4, &F5, &F6, &F7, &F8, &F9, &F10, &F11, &F12, &F13, &F14, &F15, &F16, &F17, &I0, &I1

/* hh's current over the len instances from i0, then the capacitance (at
 * lane-nodes from q0; gather: at their own, the capacitance added by the
 * caller after) */
FUSED_INLINE void hh_current(const mech_block *mb, const ns_mech_ppack *pp, double *restrict d,
                             const double *restrict cap, int64_t q0, int64_t len, int64_t i0, const int uniform,
                             const int last, const int gather) {
    FUSED_HH_FIELD_PTRS;
    const int *restrict ni = mb->node_index;
    FUSED_SIMD
    for (int l = 0; l < (int)len; ++l) {
        const int i = (int)i0 + l, q = FUSED_Q(l);
        FUSED_HH_LOCALS;
        nsm_hh_current_F((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, q);
        if (last) {
            P4[i] = F4;
            P5[i] = F5;
            P6[i] = F6;
            P7[i] = F7;
            P8[i] = F8;
        }
        if (!gather) d[q] += cap[q];
    }
}

/* hh's rates at lane-nodes l < len from its table's rows R (the rows from
 * NSM_hh_rates_LEAD, nsm_hh_p_rates_rows) at entries ix with weights th:
 * c + th d, the columns' a + th (b - a) (nsm_hh_p_rates), into y[c *
 * FUSED_CHUNK + l] for the TABLE's variable c. With gcc or clang and
 * `transpose`, 8 lane-nodes at a time as vectors of 8 doubles: each row's
 * interpolation in one multiply-add of whole rows, then the 8 x 8
 * transpose, where the loads of the values one by one took 12 loads per
 * lane-node (gcc assembles them from scalar loads); else those loads. */
#define FUSED_CHUNK 64
#if NSM_hh_rates_ROW != 16 || NSM_hh_rates_COLS > 8
#error "the fused state pass transposes rows of 8 values and 8 differences (NSM_hh_rates_ROW)"
#endif
#if defined(__GNUC__) || defined(__clang__)
typedef double ns_v8d __attribute__((vector_size(64)));
#if defined(__clang__)
#define NS_SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
typedef long long ns_v8l __attribute__((vector_size(64)));
#define NS_SHUF(a, b, ...) __builtin_shuffle(a, b, (ns_v8l){__VA_ARGS__})
#endif
FUSED_INLINE void row_values(const double *restrict rows, int k, double th, ns_v8d *out) {
    ns_v8d c, d;
    memcpy(&c, rows + (size_t)k * NSM_hh_rates_ROW, sizeof c);
    memcpy(&d, rows + (size_t)k * NSM_hh_rates_ROW + NSM_hh_rates_ROW / 2, sizeof d);
    const ns_v8d t = {th, th, th, th, th, th, th, th};
    *out = c + t * d;
}
#endif

FUSED_INLINE void rates_of_rows(const double *restrict rows, const int transpose, const int *restrict ix,
                                const double *restrict th, int len, double *restrict y) {
    int l0 = 0;
#if defined(__GNUC__) || defined(__clang__)
    for (int l = 0; transpose && l + 8 <= len; l += 8, l0 = l) {
        ns_v8d r[8], e[4], o[4], q[8], c[8];
        for (int k = 0; k < 8; ++k) row_values(rows, ix[l + k], th[l + k], &r[k]);
        /* pairs of rows: their even columns, their odd columns */
        for (int k = 0; k < 4; ++k) {
            e[k] = NS_SHUF(r[2 * k], r[2 * k + 1], 0, 8, 2, 10, 4, 12, 6, 14);
            o[k] = NS_SHUF(r[2 * k], r[2 * k + 1], 1, 9, 3, 11, 5, 13, 7, 15);
        }
        /* rows 4 h to 4 h + 3: q[4 h + k] holds their columns k and k + 4 */
        for (int h = 0; h < 2; ++h) {
            q[4 * h] = NS_SHUF(e[2 * h], e[2 * h + 1], 0, 1, 8, 9, 4, 5, 12, 13);
            q[4 * h + 1] = NS_SHUF(o[2 * h], o[2 * h + 1], 0, 1, 8, 9, 4, 5, 12, 13);
            q[4 * h + 2] = NS_SHUF(e[2 * h], e[2 * h + 1], 2, 3, 10, 11, 6, 7, 14, 15);
            q[4 * h + 3] = NS_SHUF(o[2 * h], o[2 * h + 1], 2, 3, 10, 11, 6, 7, 14, 15);
        }
        /* the eight rows' column k */
        for (int k = 0; k < 4; ++k) {
            c[k] = NS_SHUF(q[k], q[4 + k], 0, 1, 2, 3, 8, 9, 10, 11);
            c[k + 4] = NS_SHUF(q[k], q[4 + k], 4, 5, 6, 7, 12, 13, 14, 15);
        }
        for (int k = 0; k < NSM_hh_rates_COLS; ++k) memcpy(y + k * FUSED_CHUNK + l, &c[k], sizeof c[k]);
    }
#else
    (void)transpose;
#endif
    FUSED_SIMD
    for (int l = l0; l < len; ++l) {
        const double *restrict c = rows + (size_t)ix[l] * NSM_hh_rates_ROW, *restrict d = c + NSM_hh_rates_ROW / 2;
        for (int k = 0; k < NSM_hh_rates_COLS; ++k) y[k * FUSED_CHUNK + l] = c[k] + th[l] * d[k];
    }
}

/* hh's state over lane-nodes [q0, q1) from instance i0, in chunks of
 * FUSED_CHUNK lane-nodes, each in the stages of the generated cnexp
 * (nmodl_gen.c, cnexp_staged): the table's entries and weights
 * (nsm_hh_p_rates_at), the rates from its rows (rates_of_rows), the
 * exponents and targets from them (nsm_hh_d_states_pre_set: the
 * arithmetic of nsm_hh_d_states_pre after its lookup, where the taus are
 * in one division's range; elsewhere that lane-node's _pre, outside the
 * vector loop), the exponentials, the updates (_post). One loop per stage keeps few values
 * live, where one loop over the whole function kept the AVX-512 clone
 * spilling (473 stack operands, gcc 13). */
/* Where the cnexp targets minf, hinf, ninf (_pre_set's t0, t1, t2: fields
 * 9, 10, 11) lie in rates_of_rows's y: the TABLE's columns 0, 2, 4 (TABLE
 * minf, mtau, hinf, htau, ninf, ntau; tests/mech/test_table_rows.c checks
 * that _pre_set returns them), read there by the update instead of a copy
 * stored per lane-node */
#define FUSED_HH_TARGET(g) ((2 * (g)) * FUSED_CHUNK)
FUSED_INLINE void hh_state(const mech_block *mb, const ns_mech_ppack *pp, const double *restrict rows,
                           const int transpose, int64_t q0, int64_t n_inst, int64_t i0, const int uniform,
                           const int last, const int gather) {
    FUSED_HH_FIELD_PTRS;
    const int *restrict ni = mb->node_index;
    const double *restrict v = pp->v;
    for (int c0 = 0; c0 < (int)n_inst; c0 += FUSED_CHUNK) {
        const int len = (int)n_inst - c0 < FUSED_CHUNK ? (int)n_inst - c0 : FUSED_CHUNK;
        double A[3 * FUSED_CHUNK], y[NSM_hh_rates_COLS * FUSED_CHUNK], th[FUSED_CHUNK];
        int ix[FUSED_CHUNK], in[FUSED_CHUNK];
        FUSED_SIMD
        for (int l = 0; l < len; ++l) nsm_hh_p_rates_at(pp, v[FUSED_Q(c0 + l)], &ix[l], &th[l]);
        rates_of_rows(rows, transpose, ix, th, len, y);
        FUSED_SIMD
        for (int l = 0; l < len; ++l) {
            const int i = (int)i0 + c0 + l, q = FUSED_Q(c0 + l);
            FUSED_HH_LOCALS;
            double t0, t1, t2; /* the targets: the rows' values (FUSED_HH_TARGET), not stored again */
            in[l] = nsm_hh_d_states_pre_set((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, q, v[q], y + l, FUSED_CHUNK, &A[l],
                                            &t0, &A[len + l], &t1, &A[2 * len + l], &t2);
            if (last) {
                P9[i] = F9;
                P10[i] = F10;
                P11[i] = F11;
                P12[i] = F12;
                P13[i] = F13;
                P14[i] = F14;
            }
        }
        /* lane-nodes whose exponents are out of one division's range: their
         * first stage again, as the per-step path's (nsm_hh_d_states_pre,
         * its lookup the columns': the same values) */
        int all = 1;
        for (int l = 0; l < len; ++l) all &= in[l];
        for (int l = 0; !all && l < len; ++l) {
            if (in[l]) continue;
            const int i = (int)i0 + c0 + l, q = FUSED_Q(c0 + l);
            FUSED_HH_LOCALS;
            double t0, t1, t2; /* the columns' values: the rows' (test_table_rows) */
            nsm_hh_d_states_pre((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, q, v[q], &A[l], &t0, &A[len + l], &t1,
                                &A[2 * len + l], &t2);
        }
        FUSED_SIMD
        for (int l = 0; l < 3 * len; ++l) A[l] = nsm_exp(A[l]);
        FUSED_SIMD
        for (int l = 0; l < len; ++l) {
            const int i = (int)i0 + c0 + l, q = FUSED_Q(c0 + l);
            FUSED_HH_LOCALS;
            nsm_hh_d_states_post((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, A[l], y[FUSED_HH_TARGET(0) + l], A[len + l],
                                 y[FUSED_HH_TARGET(1) + l], A[2 * len + l], y[FUSED_HH_TARGET(2) + l]);
            P15[i] = F15;
            P16[i] = F16;
            P17[i] = F17;
        }
    }
}

/* fn(args..., uniform, last, gather) with the flags as constants, so that
 * each combination is compiled on its own */
#define FUSED_CALL(fn, uniform, last, gather, ...)                                                        \
    do {                                                                                                 \
        if (gather) {                                                                                    \
            if (uniform) {                                                                               \
                if (last) fn(__VA_ARGS__, 1, 1, 1);                                                      \
                else fn(__VA_ARGS__, 1, 0, 1);                                                           \
            } else {                                                                                     \
                if (last) fn(__VA_ARGS__, 0, 1, 1);                                                      \
                else fn(__VA_ARGS__, 0, 0, 1);                                                           \
            }                                                                                            \
        } else if (uniform) {                                                                            \
            if (last) fn(__VA_ARGS__, 1, 1, 0);                                                          \
            else fn(__VA_ARGS__, 1, 0, 0);                                                               \
        } else {                                                                                         \
            if (last) fn(__VA_ARGS__, 0, 1, 0);                                                          \
            else fn(__VA_ARGS__, 0, 0, 0);                                                               \
        }                                                                                                \
    } while (0)

/* The instances [*ia, *ib) of mechanism block mb whose lane-nodes lie in
 * [q0, q1) (node_index ascending: an instance pass, b->gather) */
static void instance_range(const mech_block *mb, int64_t q0, int64_t q1, int64_t *ia, int64_t *ib) {
    int64_t bound[2];
    const int64_t at[2] = {q0, q1};
    for (int e = 0; e < 2; ++e) {
        int64_t lo = 0, hi = mb->p.n;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (mb->node_index[mid] < at[e]) lo = mid + 1;
            else hi = mid;
        }
        bound[e] = lo;
    }
    *ia = bound[0];
    *ib = bound[1];
}

/* The lane-nodes of the block's nodes [r0, r1) */
static inline void lane_range(const model_block *b, int32_t w, int32_t r0, int32_t r1, int64_t *q0, int64_t *q1) {
    *q0 = (int64_t)r0 * w;
    *q1 = (int64_t)r1 * w < b->nw ? (int64_t)r1 * w : b->nw;
}

/* Segment sg clipped to the nodes [r0, r1) (a cell split across threads runs
 * its node range; the whole block: [0, INT32_MAX)): false when they do not
 * meet; else its lane-nodes [*q0, *q1) and, for mechanism f, the lane-node
 * of its instance at *q0 (the instances of a segment are consecutive). */
static inline int clip(const fused_seg *sg, int32_t w, int32_t r0, int32_t r1, int f, int64_t *q0, int64_t *q1,
                       int64_t *i0) {
    const int32_t n0 = sg->n0 > r0 ? sg->n0 : r0, n1 = sg->n1 < r1 ? sg->n1 : r1;
    *q0 = (int64_t)n0 * w;
    *q1 = (int64_t)n1 * w;
    *i0 = sg->inst[f] < 0 ? -1 : (int64_t)(sg->inst[f] + (n0 - sg->n0)) * w;
    return n0 < n1;
}

FUSED_FN void fused_first(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                          double t, double dt, double celsius, int last, int32_t r0, int32_t r1) {
    const int32_t k = b->fused_k[0];
    mech_block *mb = k >= 0 ? &b->m[k] : NULL;
    ns_mech_ppack pp;
    if (mb) pp = fused_pack(mb, v, rhs, d, t, dt, celsius, mb->p.global);
    if (mb && b->gather[0]) {
        int64_t q0, q1, ia, ib;
        lane_range(b, w, r0, r1, &q0, &q1);
        for (int64_t q = q0; q < q1; ++q) {
            rhs[q] = 0.0;
            d[q] = 0.0;
        }
        instance_range(mb, q0, q1, &ia, &ib);
        if (ia < ib) FUSED_CALL(pas_current, b->g_uniform[0], last, 1, mb, &pp, rhs, d, mb->node_index[ia], ib - ia, ia);
        return;
    }
    for (int32_t s = 0; s < b->n_segs; ++s) {
        const fused_seg *sg = &b->segs[s];
        int64_t q0, q1, i0;
        if (!clip(sg, w, r0, r1, 0, &q0, &q1, &i0)) continue;
        if (sg->inst[0] < 0) {
            for (int64_t q = q0; q < q1; ++q) {
                rhs[q] = 0.0;
                d[q] = 0.0;
            }
            continue;
        }
        FUSED_CALL(pas_current, sg->uniform[0], last, 0, mb, &pp, rhs, d, q0, q1 - q0, i0);
    }
    (void)model;
}

FUSED_FN void fused_second(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                           const double *cap, double t, double dt, double celsius, int last, int32_t r0, int32_t r1) {
    const int32_t k = b->fused_k[1];
    mech_block *mb = k >= 0 ? &b->m[k] : NULL;
    double g1[1] = {1.0}; /* usetable_hh: on (ns_model_block_fused) */
    ns_mech_ppack pp;
    ns_mech_ion_view ions[2] = {{0}}; /* e only: no ion current is kept (fusable), so no branch on it in the loop */
    (void)model;
    if (mb) {
        pp = fused_pack(mb, v, rhs, d, t, dt, celsius, g1);
        for (int j = 0; j < 2; ++j) ions[j] = (ns_mech_ion_view){mb->ions[j].e, NULL, NULL, NULL, NULL, NULL};
        pp.ion = ions;
    }
    if (mb && b->gather[1]) {
        int64_t q0, q1, ia, ib;
        lane_range(b, w, r0, r1, &q0, &q1);
        instance_range(mb, q0, q1, &ia, &ib);
        if (ia < ib) FUSED_CALL(hh_current, b->g_uniform[1], last, 1, mb, &pp, d, cap, mb->node_index[ia], ib - ia, ia);
        for (int64_t q = q0; q < q1; ++q) d[q] += cap[q];
        return;
    }
    for (int32_t s = 0; s < b->n_segs; ++s) {
        const fused_seg *sg = &b->segs[s];
        int64_t q0, q1, i0;
        if (!clip(sg, w, r0, r1, 1, &q0, &q1, &i0)) continue;
        if (sg->inst[1] < 0) {
            for (int64_t q = q0; q < q1; ++q) d[q] += cap[q];
            continue;
        }
        FUSED_CALL(hh_current, sg->uniform[1], last, 0, mb, &pp, d, cap, q0, q1 - q0, i0);
    }
}

FUSED_FN void fused_states(const sim_model *model, model_block *b, int32_t w, double *v, double t, double dt,
                           double celsius, int last, int32_t r0, int32_t r1) {
    const int32_t k = b->fused_k[1];
    (void)model;
    if (k < 0) return; /* pas has no state */
    mech_block *mb = &b->m[k];
    double g1[1] = {1.0};
    const ns_mech_ppack pp = fused_pack(mb, v, NULL, NULL, t, dt, celsius, g1);
    if (b->gather[1]) {
        int64_t q0, q1, ia, ib;
        lane_range(b, w, r0, r1, &q0, &q1);
        instance_range(mb, q0, q1, &ia, &ib);
        if (ia < ib)
            FUSED_CALL(hh_state, b->g_uniform[1], last, 1, mb, &pp, b->tab->rows + NSM_hh_rates_LEAD, b->tab->transpose,
                       mb->node_index[ia], ib - ia, ia);
        return;
    }
    for (int32_t s = 0; s < b->n_segs; ++s) {
        const fused_seg *sg = &b->segs[s];
        int64_t q0, q1, i0;
        if (sg->inst[1] < 0 || !clip(sg, w, r0, r1, 1, &q0, &q1, &i0)) continue;
        FUSED_CALL(hh_state, sg->uniform[1], last, 0, mb, &pp, b->tab->rows + NSM_hh_rates_LEAD, b->tab->transpose, q0,
                   q1 - q0, i0);
    }
}

void ns_model_block_fused_first(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                                double t, double dt, double celsius, int last) {
    fused_first(model, b, w, v, rhs, d, t, dt, celsius, last, 0, INT32_MAX);
}
void ns_model_block_fused_second(const sim_model *model, model_block *b, int32_t w, double *v, double *rhs, double *d,
                                 const double *cap, double t, double dt, double celsius, int last) {
    fused_second(model, b, w, v, rhs, d, cap, t, dt, celsius, last, 0, INT32_MAX);
}
void ns_model_block_fused_states(const sim_model *model, model_block *b, int32_t w, double *v, double t, double dt,
                                 double celsius, int last) {
    fused_states(model, b, w, v, t, dt, celsius, last, 0, INT32_MAX);
}
void ns_model_block_fused_range(const sim_model *model, model_block *b, int32_t w, int phase, int32_t r0, int32_t r1,
                                double *v, double *rhs, double *d, const double *cap, double t, double dt,
                                double celsius, int last) {
    if (phase == 0) fused_first(model, b, w, v, rhs, d, t, dt, celsius, last, r0, r1);
    else if (phase == 1) fused_second(model, b, w, v, rhs, d, cap, t, dt, celsius, last, r0, r1);
    else fused_states(model, b, w, v, t, dt, celsius, last, r0, r1);
}
