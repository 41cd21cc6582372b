/* The fused tree loop, host side (sim/cuda/fused.h): the rule's facts about a
 * model, and the per-node instance maps of its built-in mechanisms over the
 * tree group, pointing into the per-step path's storage (sim/cuda/mechanisms.c). */
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/fused.h"
#include "sim/policy.h"
#include "core/cuda_check.h"
#include "core/error.h"


struct ns_sim_fused_state {
    ns_sim_fused f;
    int32_t *inst[2]; /* device: the maps of pas and hh (NULL where not inserted) */
    double *sets[2];  /* device: their distinct tuples */
    int exposed; /* ns_sim_fused_expose: the parameters' arrays handed out (the tuples may be stale) */
    /* a network's maps (ns_sim_fused_net_build; device) */
    int net_ready;
    int32_t *inst0[NS_FUSED_POINT_SLOTS], *snode_of[NS_FUSED_POINT_SLOTS];
    int32_t *snode_node, *snode_begin, *syn, *det_node, *det_index;
    unsigned char *syn_flag;
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

/* A network's synapse type as the fused kernel was compiled for it: 0 no,
 * else NS_FUSED_EXPSYN or NS_FUSED_EXP2SYN. */
static int fused_point_kind(const ns_mech_desc *d) {
    if (d == &nsm_ExpSyn_desc && d->n_params == NS_FUSED_EXPSYN_PARAMS && d->n_fields == NS_FUSED_EXPSYN_FIELDS &&
        d->n_states == NS_FUSED_EXPSYN_STATES && d->n_ions == 0 && d->n_globals == 0 && d->table_size == 0)
        return NS_FUSED_EXPSYN;
    if (d == &nsm_Exp2Syn_desc && d->n_params == NS_FUSED_EXP2SYN_PARAMS && d->n_fields == NS_FUSED_EXP2SYN_FIELDS &&
        d->n_states == NS_FUSED_EXP2SYN_STATES && d->n_ions == 0 && d->n_globals == 0 && d->table_size == 0)
        return NS_FUSED_EXP2SYN;
    return 0;
}

/* The facts of ns_sim_gpu_mechanisms_rule: the model's, and the network's
 * maps when built (ns_sim_fused_net_build). */
static void facts_of(const ns_sim_t *sim, const ns_sim_fused_state *s, ns_sim_mech_facts *f) {
    const sim_model *model = sim->model;
    memset(f, 0, sizeof *f);
    f->requested = (int)sim->options.gpu_mechanisms;
    f->builtin_only = model != NULL;
    for (int32_t k = 0; model && k < model->n_mechs; ++k) {
        f->builtin_only &= fused_kind(model, &model->mechs[k]) != 0;
        f->writes_concentration |= model->mechs[k].writes_c != 0;
    }
    f->network = sim->net != NULL;
    f->network_fused = s && s->net_ready;
    f->parameters_exposed = s && s->exposed;
}

void ns_sim_fused_expose(ns_sim_fused_state *s) {
    if (s) s->exposed = 1;
}

static void net_maps_free(ns_sim_fused_state *s) {
    for (int k = 0; k < NS_FUSED_POINT_SLOTS; ++k) {
        cudaFree(s->inst0[k]), cudaFree(s->snode_of[k]);
        s->inst0[k] = s->snode_of[k] = NULL;
    }
    cudaFree(s->snode_node), cudaFree(s->snode_begin), cudaFree(s->syn), cudaFree(s->det_node);
    cudaFree(s->det_index), cudaFree(s->syn_flag);
    s->snode_node = s->snode_begin = s->syn = s->det_node = s->det_index = NULL;
    s->syn_flag = NULL;
    memset(&s->f.net, 0, sizeof s->f.net);
    s->net_ready = 0;
}

void ns_sim_fused_free(ns_sim_fused_state *s) {
    if (!s) return;
    for (int k = 0; k < 2; ++k) {
        cudaFree(s->inst[k]);
        cudaFree(s->sets[k]);
    }
    net_maps_free(s);
    free(s);
}

/* The tuples of mechanism k's instances in shape sh (NP parameters, then e
 * of each ion as the model set it) into ts (distinct), the index of each
 * instance's in set_of (ms->n). */
static ns_status shape_tuples(const ns_sim_t *sim, int32_t k, int32_t sh, tuple_set *ts, int32_t *set_of) {
    const sim_model *model = sim->model;
    const sim_mech *sm = &model->mechs[k];
    const sim_mech_shape *ms = &model->per_shape[(size_t)sh * model->n_mechs + k];
    const int np = sm->desc->n_params, ni = sm->desc->n_ions;
    const int32_t n = sim->shapes[sh].n;
    double x[NS_FUSED_HH_PARAMS + 2];
    if (np + ni > NS_FUSED_HH_PARAMS + 2) return ns_fail(NS_ERR_INTERNAL, "simulation: %s's tuples", sm->desc->name);
    for (int32_t i = 0; i < ms->n; ++i) {
        for (int p = 0; p < np; ++p) x[p] = ms->param[(int64_t)p * ms->n + i];
        for (int j = 0; j < ni; ++j) x[np + j] = model->ion_init[sh][(size_t)(3 * sm->ion[j]) * n + ms->node[i]];
        const int64_t t = tuple_index(ts, x);
        if (t < 0 || t >= INT32_MAX) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms' tuples");
        set_of[i] = (int32_t)t;
    }
    return NS_OK;
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
        const int w = sm->desc->n_params + sm->desc->n_ions;
        ns_gpu_mech_arrays arr;
        ns_gpu_model_arrays(g, k, &arr);
        /* the distinct tuples over the shapes' instances */
        free(ts.v), free(ts.slot);
        memset(&ts, 0, sizeof ts);
        ts.w = w;
        for (int32_t sh = 0; sh < model->n_shapes && st == NS_OK; ++sh) {
            const sim_mech_shape *ms = &model->per_shape[(size_t)sh * model->n_mechs + k];
            free(set_of[sh]);
            set_of[sh] = malloc((size_t)(ms->n > 0 ? ms->n : 1) * sizeof **set_of);
            st = set_of[sh] ? shape_tuples(sim, k, sh, &ts, set_of[sh])
                            : ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms' tuples");
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
    facts_of(sim, NULL, &f);
    f.network = 0; /* a network is added after create: its maps come at init, the rule again at each advance */
    ns_status st = ns_sim_mechanisms_choose(&f, "the GPU's fused loop", &sim->gpu_mechanisms);
    if (st != NS_OK) return st;
    if (sim->gpu_mechanisms != NS_SIM_GPU_MECHANISMS_FUSED) return NS_OK;
    ns_sim_fused_state *s = calloc(1, sizeof *s);
    if (!s) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused mechanisms");
    st = build(sim, g, cell_id, cell_base, cells, s);
    if (st != NS_OK) {
        ns_sim_fused_free(s);
        return st;
    }
    *out = s;
    return NS_OK;
}

static int cmp_pair64(const void *a, const void *b) {
    const int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
    return (x > y) - (x < y);
}

static ns_status upload32(int32_t **dst, const int32_t *src, int64_t n) {
    NS_CUDA_TRY(cudaMalloc((void **)dst, (size_t)(n > 0 ? n : 1) * sizeof **dst));
    if (n > 0) NS_CUDA_TRY(cudaMemcpy(*dst, src, (size_t)n * sizeof **dst, cudaMemcpyHostToDevice));
    return NS_OK;
}

ns_status ns_sim_fused_net_build(ns_sim_t *sim, ns_sim_fused_state *s, const gpu_model *g, const gpu_net *gn,
                                 const int64_t *cell_base, int64_t cells) {
    if (!s) return NS_OK;
    net_maps_free(s);
    const int32_t slots = g ? ns_gpu_model_points(g) : 0;
    if (!gn || slots <= 0 || slots > NS_FUSED_POINT_SLOTS) return NS_OK; /* per step */
    const sim_model *model = sim->model;
    int32_t hh_key = INT32_MAX;
    for (int32_t k = 0; k < model->n_mechs; ++k)
        if (fused_kind(model, &model->mechs[k]) == 2) hh_key = model->mechs[k].key;
    ns_sim_fused_net *net = &s->f.net;
    int64_t n_syn = 0;
    for (int32_t k = 0; k < slots; ++k) {
        const ns_mech_desc *d = NULL;
        int32_t key = 0;
        ns_gpu_model_point(g, k, &d, &key, &net->pp[k], &net->fields[k]);
        net->kind[k] = fused_point_kind(d);
        /* the kernel adds the synapses' currents before hh's (NEURON's type order of the built-ins) */
        if (!net->kind[k] || net->pp[k].n >= (1 << 28) || key > hh_key) {
            memset(net, 0, sizeof *net);
            return NS_OK; /* per step */
        }
        n_syn += net->pp[k].n;
    }
    const int64_t nodes = cell_base[cells];
    ns_gpu_net_view view;
    ns_gpu_net_view_of(gn, &view);
    int32_t *node_of = malloc((size_t)(n_syn > 0 ? n_syn : 1) * sizeof *node_of);
    int32_t *inst0 = malloc((size_t)(cells + 1) * sizeof *inst0);
    int32_t *begin = calloc((size_t)nodes + 2, sizeof *begin);
    int32_t *syn = malloc((size_t)(n_syn > 0 ? n_syn : 1) * sizeof *syn);
    int64_t *det = malloc((size_t)(view.n_det > 0 ? view.n_det : 1) * 2 * sizeof *det);
    int32_t *det32 = malloc((size_t)(view.n_det > 0 ? view.n_det : 1) * 2 * sizeof *det32);
    ns_status st = node_of && inst0 && begin && syn && det && det32
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: the fused network's maps");
    /* per type: its instances' nodes (device, in the group's cell order), the first of each cell */
    int64_t at = 0;
    for (int32_t k = 0; k < slots && st == NS_OK; ++k) {
        const int32_t n = net->pp[k].n;
        int32_t *nk = node_of + at;
        if (n > 0) NS_CUDA_GOTO(cudaMemcpy(nk, net->pp[k].node_index, (size_t)n * sizeof *nk, cudaMemcpyDeviceToHost),
                                st, out);
        /* inst0[c]: the instances of cells before c (their cells never decrease) */
        for (int64_t c = 0; c <= cells; ++c) inst0[c] = 0;
        int64_t prev = 0;
        for (int32_t q = 0; q < n; ++q) {
            int64_t lo = 0, hi = cells; /* the cell of node nk[q]: the last c with cell_base[c] <= nk[q] */
            while (hi - lo > 1) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (cell_base[mid] <= nk[q]) lo = mid;
                else hi = mid;
            }
            if (nk[q] < 0 || nk[q] >= nodes || lo < prev) {
                st = ns_fail(NS_ERR_INTERNAL, "simulation: synapse instances out of the group's cell order");
                break;
            }
            prev = lo;
            inst0[lo + 1]++;
        }
        if (st != NS_OK) break;
        for (int64_t c = 0; c < cells; ++c) inst0[c + 1] += inst0[c];
        if ((st = upload32(&s->inst0[k], inst0, cells + 1)) != NS_OK) break;
        net->inst0[k] = s->inst0[k];
        for (int32_t q = 0; q < n; ++q) begin[nk[q] + 1]++;
        at += n;
    }
    /* the synapses by node, then type, then instance (a stable counting sort); the synapse nodes */
    int32_t n_snodes = 0;
    if (st == NS_OK) {
        unsigned char *flag = calloc((size_t)nodes + 1, 1);
        int32_t *snode = malloc((size_t)(n_syn > 0 ? 2 * n_syn + 1 : 1) * sizeof *snode);
        int32_t *of = malloc((size_t)(n_syn > 0 ? n_syn : 1) * sizeof *of);
        if (!flag || !snode || !of) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: the fused network's maps");
        for (int64_t i = 0; st == NS_OK && i < nodes; ++i) {
            if (begin[i + 1] > 0) { /* begin[i + 1]: the count at node i, so far */
                flag[i] = 1;
                snode[n_snodes++] = (int32_t)i;
            }
            begin[i + 1] += begin[i];
        }
        /* snode_begin after the nodes: the first synapse of each synapse node */
        int32_t *sbegin = snode ? snode + n_snodes : NULL;
        for (int32_t k = 0; st == NS_OK && k < n_snodes; ++k) sbegin[k] = begin[snode[k]];
        if (st == NS_OK) sbegin[n_snodes] = (int32_t)n_syn;
        at = 0;
        for (int32_t k = 0; st == NS_OK && k < slots; ++k) {
            for (int32_t q = 0; q < net->pp[k].n; ++q) syn[begin[node_of[at + q]]++] = (k << 28) | q;
            at += net->pp[k].n;
        }
        /* each instance's synapse node (by binary search over the sorted nodes) */
        at = 0;
        for (int32_t k = 0; st == NS_OK && k < slots; ++k) {
            for (int32_t q = 0; q < net->pp[k].n; ++q) {
                int32_t lo = 0, hi = n_snodes;
                while (lo < hi) {
                    const int32_t mid = lo + (hi - lo) / 2;
                    if (snode[mid] < node_of[at + q]) lo = mid + 1;
                    else hi = mid;
                }
                of[at + q] = lo;
            }
            if ((st = upload32(&s->snode_of[k], of + at, net->pp[k].n)) != NS_OK) break;
            net->snode_of[k] = s->snode_of[k];
            at += net->pp[k].n;
        }
        if (st == NS_OK) st = upload32(&s->snode_node, snode, n_snodes);
        if (st == NS_OK) st = upload32(&s->snode_begin, sbegin, n_snodes + 1);
        if (st == NS_OK) st = upload32(&s->syn, syn, n_syn);
        if (st == NS_OK) {
            const cudaError_t e1 = cudaMalloc((void **)&s->syn_flag, (size_t)nodes + 1);
            const cudaError_t e2 =
                e1 == cudaSuccess ? cudaMemcpy(s->syn_flag, flag, (size_t)nodes + 1, cudaMemcpyHostToDevice) : e1;
            if (e2 != cudaSuccess) st = ns_cuda_status(e2, "the fused network's maps", __FILE__, __LINE__);
        }
        free(flag), free(snode), free(of);
    }
    /* the detectors by node */
    if (st == NS_OK && view.n_det > 0) {
        NS_CUDA_GOTO(cudaMemcpy(det32, view.det_node, (size_t)view.n_det * sizeof *det32, cudaMemcpyDeviceToHost), st,
                     out);
        for (int32_t q = 0; q < view.n_det; ++q) det[2 * q] = det32[q], det[2 * q + 1] = q;
        qsort(det, (size_t)view.n_det, 2 * sizeof *det, cmp_pair64);
        for (int32_t q = 0; q < view.n_det; ++q) det32[q] = (int32_t)det[2 * q], det32[view.n_det + q] = (int32_t)det[2 * q + 1];
        st = upload32(&s->det_node, det32, view.n_det);
        if (st == NS_OK) st = upload32(&s->det_index, det32 + view.n_det, view.n_det);
    }
out:
    free(node_of), free(inst0), free(begin), free(syn), free(det), free(det32);
    if (st != NS_OK) {
        net_maps_free(s);
        return st;
    }
    net->slots = slots;
    net->n_snodes = n_snodes;
    net->snode_node = s->snode_node;
    net->snode_begin = s->snode_begin;
    net->syn_flag = s->syn_flag;
    net->syn = s->syn;
    net->n_det = view.n_det;
    net->det_node = s->det_node;
    net->det_index = s->det_index;
    s->net_ready = 1;
    return NS_OK;
}

void ns_sim_fused_net_bind(ns_sim_fused *f, const gpu_net *gn, int64_t j0) {
    ns_gpu_net_view view;
    ns_gpu_net_view_of(gn, &view);
    ns_sim_fused_net *net = &f->net;
    net->events = view.events;
    net->offsets = view.offsets;
    net->j0 = j0;
    net->len = view.len;
    net->out = view.out;
}

ns_status ns_sim_fused_pick(ns_sim_t *sim, const ns_sim_fused_state *s, const ns_sim_fused **fused) {
    *fused = NULL;
    if (!sim->model) return NS_OK;
    ns_sim_mech_facts f;
    facts_of(sim, s, &f);
    const ns_status st = ns_sim_mechanisms_choose(&f, "the GPU's fused loop", &sim->gpu_mechanisms);
    if (st != NS_OK) return st;
    /* maps built at create when the rule allowed fusion then */
    if (sim->gpu_mechanisms == NS_SIM_GPU_MECHANISMS_FUSED && s)
        *fused = &s->f;
    else if (sim->gpu_mechanisms != NS_SIM_GPU_MECHANISMS_PER_MECHANISM)
        sim->gpu_mechanisms = NS_SIM_GPU_MECHANISMS_PER_STEP;
    return NS_OK;
}

int ns_sim_fused_onchip_ok(const ns_sim_t *sim) {
    if (!sim->model) return 0;
    ns_sim_mech_facts f;
    facts_of(sim, NULL, &f);
    f.network = 0; /* a network comes after create: ns_sim_init moves the cells to the tree loop (step.c) */
    return ns_sim_onchip_model_rule(&f) && nsm_hh_desc.table_size == NS_FUSED_HH_TABLE &&
           nsm_hh_desc.n_globals <= NS_FUSED_HH_GLOBALS;
}

ns_status ns_sim_fused_onchip(const ns_sim_t *sim, const gpu_model *g, int32_t shape, ns_sim_onchip_group *oc) {
    const sim_model *model = sim->model;
    const int32_t n = sim->shapes[shape].n;
    const int32_t *pos = oc->plan.data + oc->plan.pos_of_node;
    ns_sim_onchip_model *om = &oc->launch.mech;
    memset(om, 0, sizeof *om);
    om->celsius = sim->params.celsius;
    uint16_t *map = malloc(4 * (size_t)n * sizeof *map); /* the tuples (2 n), then the instances (2 n) */
    int32_t *set_of = malloc((size_t)n * sizeof *set_of);
    tuple_set ts;
    memset(&ts, 0, sizeof ts);
    ns_status st = map && set_of ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: onchip mechanisms' map");
    if (st == NS_OK) memset(map, 0xFF, 4 * (size_t)n * sizeof *map); /* NS_SIM_ONCHIP_NONE */
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k) {
        const sim_mech *sm = &model->mechs[k];
        const int kind = fused_kind(model, sm); /* 1 pas, 2 hh (ns_sim_fused_onchip_ok: no other) */
        const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + k];
        ns_sim_onchip_mech *m = kind == 1 ? &om->pas : &om->hh;
        if (kind == 0) {
            st = ns_fail(NS_ERR_INTERNAL, "simulation: %s in the onchip loop", sm->desc->name);
            break;
        }
        free(ts.v), free(ts.slot);
        memset(&ts, 0, sizeof ts);
        ts.w = sm->desc->n_params + sm->desc->n_ions;
        if ((st = shape_tuples(sim, k, shape, &ts, set_of)) != NS_OK) break;
        for (int32_t i = 0; i < ms->n; ++i) { /* instance i of each cell (node order) and its tuple, by position */
            map[2 * (size_t)pos[ms->node[i]] + (size_t)(kind - 1)] = (uint16_t)set_of[i];
            map[2 * (size_t)n + 2 * (size_t)pos[ms->node[i]] + (size_t)(kind - 1)] = (uint16_t)i;
        }
        ns_gpu_mech_arrays arr;
        ns_gpu_model_arrays(g, k, &arr);
        double **sets = &oc->sets_dev[kind - 1];
        NS_CUDA_GOTO(cudaMalloc((void **)sets, (size_t)(ts.n > 0 ? ts.n * ts.w : 1) * sizeof **sets), st, out);
        if (ts.n > 0)
            NS_CUDA_GOTO(cudaMemcpy(*sets, ts.v, (size_t)(ts.n * ts.w) * sizeof **sets, cudaMemcpyHostToDevice), st,
                         out);
        m->sets = *sets;
        m->fields = arr.fields;
        m->count = arr.count;
        m->per_cell = ms->n;
        if (kind == 2) {
            om->hh_global = arr.global;
            om->hh_table = arr.table;
            om->hh_globals = sm->desc->n_globals;
        }
    }
    if (st == NS_OK) st = ns_sim_onchip_set_map(oc, map);
    if (st == NS_OK) {
        NS_CUDA_GOTO(cudaMalloc((void **)&oc->local_dev, 2 * (size_t)n * sizeof *map), st, out);
        NS_CUDA_GOTO(cudaMemcpy(oc->local_dev, map + 2 * (size_t)n, 2 * (size_t)n * sizeof *map, cudaMemcpyHostToDevice),
                     st, out);
        om->local = oc->local_dev;
    }
out:
    free(ts.v), free(ts.slot);
    free(map), free(set_of);
    return st;
}
