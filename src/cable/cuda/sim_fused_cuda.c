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
};

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
    cudaFree(s->inst[0]);
    cudaFree(s->inst[1]);
    free(s);
}

/* Build the maps (fusion allowed by the rule at create). */
static ns_status build(const ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                       int64_t cells, ns_sim_fused_state *s) {
    const sim_model *model = sim->model;
    const int64_t nodes = cell_base[cells];
    int32_t *map = malloc((size_t)(nodes > 0 ? nodes : 1) * sizeof *map);
    if (!map) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms' maps");
    ns_status st = NS_OK;
    s->f.celsius = sim->params.celsius;
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k) {
        const int kind = fused_kind(model, &model->mechs[k]);
        ns_sim_fused_mech *m = kind == 1 ? &s->f.pas : &s->f.hh;
        ns_gpu_mech_arrays arr;
        ns_gpu_model_arrays(g, k, &arr);
        /* instances cell by cell, each cell's in node order (ns_gpu_model_create's numbering) */
        for (int64_t i = 0; i < nodes; ++i) map[i] = -1;
        int64_t q = 0;
        for (int64_t j = 0; j < cells; ++j) {
            const sim_mech_shape *ms = &model->per_shape[(size_t)sim->cell_shape[cell_id[j]] * model->n_mechs + k];
            for (int32_t i = 0; i < ms->n; ++i, ++q) map[cell_base[j] + ms->node[i]] = (int32_t)q;
        }
        if (q != arr.count) {
            st = ns_fail(NS_ERR_INTERNAL, "simulation: %s has %lld instances on the device, %lld in the maps",
                         model->mechs[k].desc->name, (long long)arr.count, (long long)q);
            break;
        }
        int32_t **dst = &s->inst[kind - 1];
        NS_CUDA_GOTO(cudaMalloc((void **)dst, (size_t)(nodes > 0 ? nodes : 1) * sizeof **dst), st, out);
        NS_CUDA_GOTO(cudaMemcpy(*dst, map, (size_t)nodes * sizeof *map, cudaMemcpyHostToDevice), st, out);
        m->inst = *dst;
        m->fields = arr.fields;
        m->count = arr.count;
        m->global = arr.global;
        m->table = arr.table;
        m->e[0] = arr.ion_e[0];
        m->e[1] = arr.ion_e[1];
    }
out:
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
