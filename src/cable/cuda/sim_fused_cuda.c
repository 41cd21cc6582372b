/* The fused tree loop, host side (sim_fused.h): the rule's facts about a
 * model, and the per-node instance maps of its built-in mechanisms over the
 * tree group, pointing into the per-step path's storage (sim_model_cuda.c). */
#include <stdlib.h>
#include <string.h>

#include "cable/cuda/sim_fused.h"
#include "cable/sim_policy.h"
#include "core/cuda_check.h"
#include "core/error.h"

/* the generated descriptors (src/cable/builtin/), compiled into the library */
extern const ns_mech_desc nsm_pas_desc, nsm_hh_desc;

struct ns_sim_fused_state {
    ns_sim_fused f;
    int32_t *inst[2]; /* device: the maps of pas and hh (NULL where not inserted) */
    double *sets[2];  /* device: their distinct tuples */
};

/* Distinct tuples of `w` doubles (bytewise), by open addressing. */
typedef struct tuple_set {
    double *v;      /* n * w */
    int64_t n, cap; /* cap: a power of 2 >= 2 n */
    int64_t *slot;  /* cap: tuple index + 1, 0 empty */
    int w;
} tuple_set;

static uint64_t tuple_hash(const double *x, int w) {
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < (size_t)w * sizeof(double); ++i) h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* The index of tuple x (added when new); -1 when out of memory. */
static int64_t tuple_index(tuple_set *t, const double *x) {
    if (2 * (t->n + 1) > t->cap) {
        const int64_t cap = t->cap ? 2 * t->cap : 64;
        int64_t *slot = calloc((size_t)cap, sizeof *slot);
        double *v = realloc(t->v, (size_t)cap * (size_t)t->w * sizeof *v);
        if (!slot || !v) {
            free(slot);
            if (v) t->v = v;
            return -1;
        }
        t->v = v;
        for (int64_t k = 0; k < t->n; ++k) {
            uint64_t h = tuple_hash(t->v + k * t->w, t->w) & (uint64_t)(cap - 1);
            while (slot[h]) h = (h + 1) & (uint64_t)(cap - 1);
            slot[h] = k + 1;
        }
        free(t->slot);
        t->slot = slot;
        t->cap = cap;
    }
    uint64_t h = tuple_hash(x, t->w) & (uint64_t)(t->cap - 1);
    while (t->slot[h]) {
        const int64_t k = t->slot[h] - 1;
        if (memcmp(t->v + k * t->w, x, (size_t)t->w * sizeof *x) == 0) return k;
        h = (h + 1) & (uint64_t)(t->cap - 1);
    }
    memcpy(t->v + t->n * t->w, x, (size_t)t->w * sizeof *x);
    t->slot[h] = t->n + 1;
    return t->n++;
}

/* Mechanism desc as the fused kernel was compiled for it: 0 no, 1 pas, 2 hh. */
static int fused_kind(const sim_model *model, const sim_mech *sm) {
    const ns_mech_desc *d = sm->desc;
    if (d == &nsm_pas_desc && d->n_params == NS_FUSED_PAS_PARAMS && d->n_fields == NS_FUSED_PAS_FIELDS &&
        d->n_states == 0 && d->n_ions == 0)
        return 1;
    if (d == &nsm_hh_desc && d->n_params == NS_FUSED_HH_PARAMS && d->n_fields == NS_FUSED_HH_FIELDS &&
        d->n_states == NS_FUSED_HH_STATES && d->n_ions == 2 && strcmp(d->ions[0].name, "na") == 0 &&
        strcmp(d->ions[1].name, "k") == 0 && !model->ions[sm->ion[0]].read_i && !model->ions[sm->ion[1]].read_i)
        return 2;
    return 0;
}

void ns_sim_fused_facts(const ns_sim_t *sim, ns_sim_mech_facts *f) {
    const sim_model *model = sim->model;
    memset(f, 0, sizeof *f);
    f->requested = (int)sim->options.gpu_mechanisms;
    f->builtin_only = model != NULL;
    for (int32_t k = 0; model && k < model->n_mechs; ++k) {
        f->builtin_only &= fused_kind(model, &model->mechs[k]) != 0;
        f->writes_concentration |= model->mechs[k].writes_c != 0;
    }
    f->network = sim->net != NULL;
}

void ns_sim_fused_free(ns_sim_fused_state *s) {
    if (!s) return;
    for (int k = 0; k < 2; ++k) {
        cudaFree(s->inst[k]);
        cudaFree(s->sets[k]);
    }
    free(s);
}

/* Build the maps and tuples (fusion allowed by the rule at create): per
 * node of the group its instance and the index of its tuple (the
 * parameters ns_gpu_model_init uploads, then e of each ion as the model set
 * it), the tuples made distinct per mechanism over the shapes' instances. */
static ns_status build(const ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                       int64_t cells, ns_sim_fused_state *s) {
    const sim_model *model = sim->model;
    const int64_t nodes = cell_base[cells];
    int32_t *map = malloc((size_t)(nodes > 0 ? 2 * nodes : 2) * sizeof *map);
    int32_t **set_of = calloc((size_t)model->n_shapes, sizeof *set_of);
    tuple_set ts;
    memset(&ts, 0, sizeof ts);
    ns_status st = NS_OK;
    if (!map || !set_of) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms' maps");
    s->f.celsius = sim->params.celsius;
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k) {
        const sim_mech *sm = &model->mechs[k];
        const int kind = fused_kind(model, sm);
        ns_sim_fused_mech *m = kind == 1 ? &s->f.pas : &s->f.hh;
        const int np = sm->desc->n_params, ni = sm->desc->n_ions, w = np + ni;
        ns_gpu_mech_arrays arr;
        ns_gpu_model_arrays(g, k, &arr);
        /* the distinct tuples over the shapes' instances */
        free(ts.v), free(ts.slot);
        memset(&ts, 0, sizeof ts);
        ts.w = w;
        double x[NS_FUSED_HH_PARAMS + 2];
        for (int32_t sh = 0; sh < model->n_shapes && st == NS_OK; ++sh) {
            const sim_mech_shape *ms = &model->per_shape[(size_t)sh * model->n_mechs + k];
            const int32_t n = sim->shapes[sh].n;
            free(set_of[sh]);
            set_of[sh] = malloc((size_t)(ms->n > 0 ? ms->n : 1) * sizeof **set_of);
            if (!set_of[sh]) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms' tuples");
            for (int32_t i = 0; i < ms->n && st == NS_OK; ++i) {
                for (int p = 0; p < np; ++p) x[p] = ms->param[(int64_t)p * ms->n + i];
                for (int j = 0; j < ni; ++j) x[np + j] = model->ion_init[sh][(size_t)(3 * sm->ion[j]) * n + ms->node[i]];
                const int64_t t = tuple_index(&ts, x);
                if (t < 0 || t >= INT32_MAX) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms' tuples");
                else set_of[sh][i] = (int32_t)t;
            }
        }
        if (st != NS_OK) break;
        /* instances cell by cell, each cell's in node order (ns_gpu_model_create's numbering) */
        for (int64_t i = 0; i < nodes; ++i) map[2 * i] = -1, map[2 * i + 1] = 0;
        int64_t q = 0;
        for (int64_t j = 0; j < cells; ++j) {
            const int32_t sh = sim->cell_shape[cell_id[j]];
            const sim_mech_shape *ms = &model->per_shape[(size_t)sh * model->n_mechs + k];
            for (int32_t i = 0; i < ms->n; ++i, ++q) {
                map[2 * (cell_base[j] + ms->node[i])] = (int32_t)q;
                map[2 * (cell_base[j] + ms->node[i]) + 1] = set_of[sh][i];
            }
        }
        if (q != arr.count) {
            st = ns_fail(NS_ERR_INTERNAL, "simulation: %s has %lld instances on the device, %lld in the maps",
                         sm->desc->name, (long long)arr.count, (long long)q);
            break;
        }
        int32_t **dst = &s->inst[kind - 1];
        double **sets = &s->sets[kind - 1];
        NS_CUDA_GOTO(cudaMalloc((void **)dst, (size_t)(nodes > 0 ? 2 * nodes : 2) * sizeof **dst), st, out);
        NS_CUDA_GOTO(cudaMemcpy(*dst, map, (size_t)(2 * nodes) * sizeof *map, cudaMemcpyHostToDevice), st, out);
        NS_CUDA_GOTO(cudaMalloc((void **)sets, (size_t)(ts.n > 0 ? ts.n * w : 1) * sizeof **sets), st, out);
        if (ts.n > 0)
            NS_CUDA_GOTO(cudaMemcpy(*sets, ts.v, (size_t)(ts.n * w) * sizeof **sets, cudaMemcpyHostToDevice), st,
                         out);
        m->inst = *dst;
        m->sets = *sets;
        m->fields = arr.fields;
        m->count = arr.count;
        m->global = arr.global;
        m->table = arr.table;
    }
out:
    for (int32_t sh = 0; set_of && sh < model->n_shapes; ++sh) free(set_of[sh]);
    free(set_of);
    free(ts.v), free(ts.slot);
    free(map);
    return st;
}

ns_status ns_sim_fused_create(ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                              int64_t cells, ns_sim_fused_state **out) {
    *out = NULL;
    ns_sim_mech_facts f;
    ns_sim_fused_facts(sim, &f);
    const int path = ns_sim_gpu_mechanisms_rule(&f);
    if (path < 0)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "simulation: gpu_mechanisms = fused, but the fused loop runs the built-in pas and hh only "
                       "(%s): use auto or per-step",
                       !f.builtin_only ? "the model has other mechanisms"
                       : f.writes_concentration ? "a mechanism writes a concentration"
                                                : "the simulation has a network");
    sim->gpu_mechanisms = (ns_sim_gpu_mechanisms)path;
    if (path != NS_SIM_GPU_MECHANISMS_FUSED) return NS_OK;
    ns_sim_fused_state *s = calloc(1, sizeof *s);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms");
    ns_status st = build(sim, g, cell_id, cell_base, cells, s);
    if (st != NS_OK) {
        ns_sim_fused_free(s);
        return st;
    }
    *out = s;
    return NS_OK;
}

ns_status ns_sim_fused_pick(ns_sim_t *sim, const ns_sim_fused_state *s, const ns_sim_fused **fused) {
    *fused = NULL;
    if (!sim->model) return NS_OK;
    ns_sim_mech_facts f;
    ns_sim_fused_facts(sim, &f);
    const int path = ns_sim_gpu_mechanisms_rule(&f);
    if (path < 0)
        return ns_fail(NS_ERR_UNSUPPORTED, "simulation: gpu_mechanisms = fused, but the simulation has a network "
                                           "(its events run per step): use auto or per-step");
    /* maps built at create when the rule allowed fusion then */
    if (path == NS_SIM_GPU_MECHANISMS_FUSED && s) {
        *fused = &s->f;
        sim->gpu_mechanisms = NS_SIM_GPU_MECHANISMS_FUSED;
    } else {
        sim->gpu_mechanisms = NS_SIM_GPU_MECHANISMS_PER_STEP;
    }
    return NS_OK;
}
