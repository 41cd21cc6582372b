/* The GPU loop's mechanisms from a model (model_impl.h): every instance of
 * the population on the device, the generated CUDA launchers per phase.
 *
 * One gpu_model per group of the GPU loop that holds the model's cells
 * (sim/cuda/layout.c): the tree loop's group, whose state is Flat in the
 * group's cell order, or an onchip group (one shape, each cell's compartments
 * in the schedule's position order: `pos`): instance i of mechanism m sits at
 * node node_index[i] of the group's arrays. The per-step launches below run
 * in the tree group only; an onchip group's kernel runs the built-in pas and
 * hh itself (sim/cuda/fused.h) and uses this storage for init, the states
 * between launches and ns_sim_get_model_var. Per mechanism: the fields (n_fields
 * arrays over its instances), the node indexes, the globals and TABLE
 * storage (built on the host by table_update, copied); per ion used: e, ci,
 * co, i, didv over the group's nodes. One step (gpu_advance):
 *   rhs = d = 0, ions' i = 0 (memsets; didv is not kept on the GPU: nothing reads it)
 *   current() of each mechanism in type order (the launchers, t + dt/2)
 *   the tree loop's step (IClamp, capacitance, axial terms, solve, v)
 *   state() of each mechanism (t + dt), Nernst after a writer.
 * A network's synapses (the point types) are sim/cuda/mechanisms_points.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/mechanisms_impl.h"
#include "sim/cuda/library_fused.h"
#include "sim/policy.h"
#include "mech/builtin/builtin.h"
#include "sim/network.h"
#include "core/cuda_check.h"
#include "core/error.h"

void ns_gpu_model_clock(gpu_model *g, const double *t_current, const double *t_state) {
    g->t_dev[0] = t_current;
    g->t_dev[1] = t_state;
}

/* mechanism k's descriptor (ns_gpu_errors_create, ns_gpu_errors_read) */
static const ns_mech_desc *density_desc(const gpu_model *g, int32_t k) { return g->model->mechs[k].desc; }

int ns_gpu_model_time_free(const gpu_model *g) {
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const ns_mech_desc *d = g->model->mechs[k].desc;
        if (ns_gpu_libfused_slot(g->lf, k) < 0 && d != &nsm_pas_desc && d != &nsm_hh_desc) return 0;
    }
    return g->n_points == 0;
}

/* What a hook on the host reads around its instances, brought back from the device as the CPU loop
 * binds it: their nodes, the nodes' area and diam, the ions d uses (v stays NULL: no v, as there). */
typedef struct host_env {
    int *nodes;
    double *geom, *ion;
    ns_mech_ion_view views[NS_SIM_MECH_IONS_MAX];
} host_env;

static void host_env_free(host_env *e) { free(e->nodes), free(e->geom), free(e->ion); }

static ns_status host_env_make(const gpu_model *g, const ns_mech_desc *d, int64_t cnt, const int32_t *nodes_h,
                               int node_begin, host_env *e) {
    const size_t nn = (size_t)g->nodes;
    memset(e, 0, sizeof *e);
    e->nodes = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *e->nodes);
    e->geom = malloc(2 * (nn > 0 ? nn : 1) * sizeof *e->geom);
    e->ion = malloc(5 * nn * (size_t)(d->n_ions > 0 ? d->n_ions : 1) * sizeof *e->ion + 1);
    if (!e->nodes || !e->geom || !e->ion || d->n_ions > NS_SIM_MECH_IONS_MAX)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: the host's CONSTRUCTOR or DESTRUCTOR of %s", d->name);
    for (int64_t i = 0; i < cnt; ++i) e->nodes[i] = nodes_h ? nodes_h[i] : node_begin + (int)i;
    if (g->geom) NS_CUDA_TRY(cudaMemcpy(e->geom, g->geom, 2 * nn * sizeof *e->geom, cudaMemcpyDeviceToHost));
    for (int j = 0; j < d->n_ions; ++j) {
        int32_t q = -1;
        for (int32_t k = 0; k < g->model->n_ions; ++k)
            if (strcmp(g->model->ions[k].name, d->ions[j].name) == 0) q = k;
        if (q < 0) return ns_fail(NS_ERR_UNSUPPORTED, "simulation: %s uses the ion %s, which the model lacks", d->name,
                                  d->ions[j].name);
        double *b = e->ion + 5 * nn * (size_t)j;
        NS_CUDA_TRY(cudaMemcpy(b, g->ion + 5 * nn * (size_t)q, 5 * nn * sizeof *b, cudaMemcpyDeviceToHost));
        const int keep = g->model->ions[q].read_i;
        e->views[j] = (ns_mech_ion_view){b, b + nn, b + 2 * nn, keep ? b + 3 * nn : NULL, keep ? b + 4 * nn : NULL,
                                         NULL};
    }
    return NS_OK;
}

ns_status ns_gpu_host_hook(const gpu_model *g, const ns_mech_desc *d, int h, const gpu_host_set *s, const char *when) {
    double **fp = malloc((size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *fp);
    double *gl = malloc((size_t)(d->n_globals > 0 ? d->n_globals : 1) * sizeof *gl);
    host_env e;
    ns_status st = fp && gl ? host_env_make(g, d, s->cnt, s->nodes, s->node_begin, &e)
                            : ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: the host's hooks of %s", d->name);
    ns_mech_error err;
    memset(&err, 0, sizeof err);
    if (st == NS_OK) {
        for (int k = 0; k < d->n_fields; ++k) fp[k] = s->f + (size_t)k * (size_t)s->cnt;
        memcpy(gl, s->glob, (size_t)d->n_globals * sizeof *gl);
        ns_mech_ppack p;
        memset(&p, 0, sizeof p);
        p.n = (int)s->cnt;
        p.node_index = e.nodes;
        p.dt = s->dt;
        p.celsius = s->celsius;
        p.field = fp;
        p.global = gl;
        p.ion = e.views;
        p.area = e.geom;
        p.diam = e.geom + g->nodes;
        p.error = &err;
        d->hooks[h](&p);
    }
    if (fp && gl) host_env_free(&e);
    free(fp), free(gl);
    if (st == NS_OK && err.set)
        st = ns_fail(NS_ERR_MECHANISM, "%s:%d: mechanism %s: %s (%s)", err.file, err.line, err.mech, err.msg, when);
    return st;
}

void ns_gpu_destruct(const gpu_model *g, const ns_mech_desc *d, const gpu_mech *gm) {
    if (!d->hooks[NS_MECH_DESTRUCTOR] || gm->p.n <= 0 || !gm->fields) return;
    const size_t nf = (size_t)d->n_fields * (size_t)gm->p.n;
    double *f = malloc((nf > 0 ? nf : 1) * sizeof *f);
    double *gl = malloc((size_t)(d->n_globals > 0 ? d->n_globals : 1) * sizeof *gl);
    int32_t *nodes = gm->p.node_index ? malloc((size_t)gm->p.n * sizeof *nodes) : NULL;
    int ok = f && gl && (!gm->p.node_index || nodes) &&
             cudaMemcpy(f, gm->fields, nf * sizeof *f, cudaMemcpyDeviceToHost) == cudaSuccess &&
             (!nodes || cudaMemcpy(nodes, gm->p.node_index, (size_t)gm->p.n * sizeof *nodes, cudaMemcpyDeviceToHost) ==
                            cudaSuccess);
    if (ok && gm->p.global && d->n_globals > 0)
        ok = cudaMemcpy(gl, gm->p.global, (size_t)d->n_globals * sizeof *gl, cudaMemcpyDeviceToHost) == cudaSuccess;
    else if (ok)
        memcpy(gl, d->global_defaults, (size_t)d->n_globals * sizeof *gl);
    const gpu_host_set hs = {f, gm->p.n, gl, nodes, gm->p.node_begin, gm->p.dt, gm->p.celsius};
    if (ok) (void)ns_gpu_host_hook(g, d, NS_MECH_DESTRUCTOR, &hs, "freeing the instances");
    free(f), free(gl), free(nodes);
}

void ns_gpu_model_free(gpu_model *g) {
    if (!g) return;
    for (int32_t k = 0; g->m && k < g->model->n_mechs; ++k) { /* NEURON's DESTRUCTOR once per instance */
        if (g->constructed && g->constructed[k]) ns_gpu_destruct(g, g->model->mechs[k].desc, &g->m[k]);
        for (int a = 0; a < g->m[k].n_allocs; ++a) cudaFree(g->m[k].allocs[a]);
    }
    free(g->m);
    free(g->constructed);
    ns_gpu_errors_free(&g->m_err);
    ns_gpu_libfused_free(g->lf);
    ns_gpu_points_free(g);
    cudaFree(g->ion);
    cudaFree(g->written);
    cudaFree(g->geom);
    free(g);
}

void ns_gpu_model_arrays(const gpu_model *g, int32_t k, ns_gpu_mech_arrays *out) {
    const gpu_mech *gm = &g->m[k];
    const sim_mech *sm = &g->model->mechs[k];
    memset(out, 0, sizeof *out);
    out->count = gm->p.n;
    out->fields = gm->fields;
    out->global = gm->p.global;
    out->table = gm->p.table;
    for (int j = 0; j < sm->desc->n_ions && j < NS_SIM_MECH_IONS_MAX; ++j)
        out->ion_e[j] = g->ion + (size_t)5 * (size_t)sm->ion[j] * (size_t)g->nodes;
}

/* A mechanism's FUNCTION_TABLEs on the device (ns_mech_ppack.ftable, which the generated lookup
 * reads: nsm_ftable): desc->n_ftables tables t (the model's copies, host) in one allocation, the
 * structures with device addresses first, then each table's abscissae and values. *out NULL:
 * none (a mechanism without FUNCTION_TABLEs; the model refuses one without values). */
ns_status ns_gpu_ftables_up(gpu_mech *gm, const ns_mech_desc *d, const ns_mech_ftable *t, const ns_mech_ftable **out) {
    *out = NULL;
    if (d->n_ftables <= 0 || !t) return NS_OK;
    const size_t n = (size_t)d->n_ftables, head = (n * sizeof *t + 7) / 8 * 8;
    size_t doubles = 0;
    for (size_t k = 0; k < n; ++k) {
        size_t vals = 1;
        for (int a = 0; a < t[k].dims; ++a) {
            vals *= (size_t)t[k].size[a];
            if (t[k].x[a]) doubles += (size_t)t[k].size[a];
        }
        if (t[k].values) doubles += vals;
    }
    unsigned char *img = calloc(head + doubles * sizeof(double) + 8, 1), *dev = NULL;
    if (!img) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: FUNCTION_TABLEs of %s", d->name);
    ns_status st = alloc_up(gm, (void **)&dev, NULL, head + doubles * sizeof(double));
    size_t at = head;
    for (size_t k = 0; st == NS_OK && k < n; ++k) {
        ns_mech_ftable *c = (ns_mech_ftable *)(void *)img + k;
        *c = t[k];
        size_t vals = 1;
        for (int a = 0; a < t[k].dims; ++a) {
            vals *= (size_t)t[k].size[a];
            if (!t[k].x[a]) continue;
            memcpy(img + at, t[k].x[a], (size_t)t[k].size[a] * sizeof(double));
            c->x[a] = (const double *)(void *)(dev + at);
            at += (size_t)t[k].size[a] * sizeof(double);
        }
        if (t[k].values) {
            memcpy(img + at, t[k].values, vals * sizeof(double));
            c->values = (const double *)(void *)(dev + at);
            at += vals * sizeof(double);
        }
    }
    if (st == NS_OK && cudaMemcpy(dev, img, at, cudaMemcpyHostToDevice) != cudaSuccess)
        st = ns_fail(NS_ERR_CUDA, "simulation: FUNCTION_TABLEs of %s", d->name);
    free(img);
    if (st == NS_OK) *out = (const ns_mech_ftable *)(void *)dev;
    return st;
}

/* A density mechanism's POINTER slots on the device (their addresses: density_pointers, at each
 * ns_gpu_model_init) and the placeholder an unconnected one reaches. */
static ns_status pointers_alloc(gpu_mech *gm, const ns_mech_desc *desc, int64_t cnt) {
    const size_t np = (size_t)desc->n_pointers;
    double **rows[64];
    if (np > 64)
        return ns_fail(NS_ERR_UNSUPPORTED, "simulation: %s has %d POINTERs (GPU loop: at most 64)", desc->name,
                       desc->n_pointers);
    ns_status st = alloc_up(gm, (void **)&gm->ptr_addr, NULL, np * (size_t)cnt * sizeof(double *));
    for (size_t r = 0; st == NS_OK && r < np; ++r) rows[r] = gm->ptr_addr + r * (size_t)cnt;
    double ***rows_d = NULL;
    if (st == NS_OK) st = alloc_up(gm, (void **)&rows_d, rows, np * sizeof *rows);
    if (st == NS_OK) st = alloc_up(gm, (void **)&gm->ptr_unset, NULL, sizeof(double));
    if (st == NS_OK && cudaMemset(gm->ptr_unset, 0, sizeof(double)) != cudaSuccess)
        st = ns_fail(NS_ERR_CUDA, "simulation: POINTERs of %s", desc->name);
    if (st == NS_OK) gm->p.pointer = (double *const *const *)rows_d;
    return st;
}

ns_status ns_gpu_model_create(const ns_sim_t *sim, const int64_t *cell_id, const int64_t *cell_base, int64_t cells,
                              const int32_t *pos, double *v, double *rhs, double *d, gpu_model **out) {
    *out = NULL;
    const sim_model *model = sim->model;
    gpu_model *g = calloc(1, sizeof *g);
    if (!g) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU mechanisms");
    g->model = model;
    g->nodes = cell_base[cells];
    g->pos = pos;
    g->v = v;
    g->rhs = rhs;
    g->d = d;
    g->m = calloc((size_t)(model->n_mechs > 0 ? model->n_mechs : 1), sizeof *g->m);
    g->constructed = calloc((size_t)(model->n_mechs > 0 ? model->n_mechs : 1), 1);
    ns_status st = NS_OK;
    if (!g->m || !g->constructed) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU mechanisms");
    if (st == NS_OK) st = ns_gpu_errors_create(&g->m_err, g, model->n_mechs, density_desc);
    if (st == NS_OK && cudaMalloc((void **)&g->ion, (size_t)(5 * (model->n_ions > 0 ? model->n_ions : 1)) *
                                                         (size_t)g->nodes * sizeof(double)) != cudaSuccess)
        st = ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: the ions of %lld compartments", (long long)g->nodes);
    /* where each ion's e follows by Nernst, per node of the group */
    if (st == NS_OK && model->n_ions > 0) {
        unsigned char *w = malloc((size_t)model->n_ions * (size_t)g->nodes);
        if (!w) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU mechanisms");
        for (int32_t j = 0; w && j < model->n_ions; ++j)
            for (int64_t c = 0; c < cells; ++c) {
                const int32_t s = sim->cell_shape[cell_id[c]], n = sim->shapes[s].n;
                for (int32_t i = 0; i < n; ++i)
                    w[(size_t)j * (size_t)g->nodes + (size_t)node_at(g, cell_base, c, i)] =
                        model->written[s][(size_t)j * n + (size_t)i];
            }
        if (w && (cudaMalloc((void **)&g->written, (size_t)model->n_ions * (size_t)g->nodes) != cudaSuccess ||
                  cudaMemcpy(g->written, w, (size_t)model->n_ions * (size_t)g->nodes, cudaMemcpyHostToDevice) !=
                      cudaSuccess))
            st = ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: the ions of %lld compartments", (long long)g->nodes);
        free(w);
    }
    /* area/diam in a mechanism: the model's per shape, cell by cell */
    if (st == NS_OK) {
        const size_t z = (size_t)g->nodes;
        double *geo = malloc(2 * (z > 0 ? z : 1) * sizeof *geo);
        if (!geo) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU mechanisms");
        for (int64_t c = 0; geo && c < cells; ++c) {
            const int32_t s = sim->cell_shape[cell_id[c]], n = sim->shapes[s].n;
            for (int32_t i = 0; i < n; ++i) {
                geo[node_at(g, cell_base, c, i)] = model->geom[s][i];
                geo[z + (size_t)node_at(g, cell_base, c, i)] = model->geom[s][n + i];
            }
        }
        if (geo && (cudaMalloc((void **)&g->geom, 2 * (z > 0 ? z : 1) * sizeof *geo) != cudaSuccess ||
                    cudaMemcpy(g->geom, geo, 2 * z * sizeof *geo, cudaMemcpyHostToDevice) != cudaSuccess))
            st = ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: the geometry of %lld compartments", (long long)z);
        free(geo);
    }
    int32_t *nodes_h = NULL;
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k) {
        const ns_mech_desc *desc = model->mechs[k].desc;
        gpu_mech *gm = &g->m[k];
        int64_t cnt = 0;
        for (int64_t j = 0; j < cells; ++j)
            cnt += model->per_shape[(size_t)sim->cell_shape[cell_id[j]] * model->n_mechs + k].n;
        if (cnt >= INT32_MAX) {
            st = ns_fail(NS_ERR_SIZE, "simulation: %lld instances of %s (the GPU loop takes < 2^31)",
                         (long long)cnt, desc->name);
            break;
        }
        const int nf = desc->n_fields;
        nodes_h = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *nodes_h);
        if (!nodes_h) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU mechanisms");
            break;
        }
        /* instances cell by cell (the group's order; ns_gpu_model_init sets the fields) */
        int64_t q = 0;
        for (int64_t j = 0; j < cells; ++j) {
            const sim_mech_shape *ms = &model->per_shape[(size_t)sim->cell_shape[cell_id[j]] * model->n_mechs + k];
            for (int32_t i = 0; i < ms->n; ++i, ++q) nodes_h[q] = (int32_t)node_at(g, cell_base, j, ms->node[i]);
        }
        double *fields_d = NULL, **fptr_d = NULL, *globals_d = NULL, *table_d = NULL;
        int32_t *nodes_d = NULL;
        ns_mech_ion_view *ions_d = NULL;
        double *fptr_h[256];
        ns_mech_ion_view views[NS_SIM_MECH_IONS_MAX];
        if (nf > 256) st = ns_fail(NS_ERR_UNSUPPORTED, "simulation: %s has %d fields (GPU loop: at most 256)",
                                   desc->name, nf);
        if (st == NS_OK) st = alloc_up(gm, (void **)&fields_d, NULL, (size_t)nf * (size_t)cnt * sizeof(double));
        gm->fields = fields_d;
        if (st == NS_OK) st = alloc_up(gm, (void **)&nodes_d, nodes_h, (size_t)cnt * sizeof(int32_t));
        for (int f = 0; st == NS_OK && f < nf; ++f) fptr_h[f] = fields_d + (size_t)f * (size_t)cnt;
        if (st == NS_OK) st = alloc_up(gm, (void **)&fptr_d, fptr_h, (size_t)nf * sizeof(double *));
        if (st == NS_OK)
            st = alloc_up(gm, (void **)&globals_d, model->mechs[k].globals, (size_t)desc->n_globals * sizeof(double));
        if (st == NS_OK) st = alloc_up(gm, (void **)&table_d, NULL, (size_t)desc->table_size * sizeof(double));
        for (int j = 0; st == NS_OK && j < desc->n_ions; ++j) {
            double *base = g->ion + (size_t)5 * (size_t)model->mechs[k].ion[j] * (size_t)g->nodes;
            const size_t z = (size_t)g->nodes;
            const int keep = model->ions[model->mechs[k].ion[j]].read_i; /* else no one reads i: NULL */
            /* didv NULL: nothing reads it (no mechanism, no model variable), so no launch writes it */
            views[j] = (ns_mech_ion_view){base, base + z, base + 2 * z, keep ? base + 3 * z : NULL, NULL, NULL};
        }
        if (st == NS_OK)
            st = alloc_up(gm, (void **)&ions_d, views, (size_t)desc->n_ions * sizeof(ns_mech_ion_view));
        const ns_mech_ftable *ftab_d = NULL;
        if (st == NS_OK) st = ns_gpu_ftables_up(gm, desc, model->mechs[k].ftable, &ftab_d);
        free(nodes_h);
        nodes_h = NULL;
        if (st != NS_OK) break;
        ppack_bind(gm, g, cnt, nodes_d, fptr_d, globals_d, table_d, ions_d, ftab_d);
        if (desc->n_pointers > 0 && (st = pointers_alloc(gm, desc, cnt)) != NS_OK) break;
        gm->p.error = ns_gpu_errors_record(&g->m_err, k); /* NULL: its device code cannot fail */
        if (!desc->cuda_init || !desc->cuda_current || !desc->cuda_state)
            st = ns_gpu_no_cuda_code("simulation: mechanism", desc);
        else if (host_hooks(desc))
            st = host_hooks_refused(desc);
    }
    free(nodes_h);
    /* the tree group's per-step path: the library's mechanisms in its fused launches where the rule says so */
    if (st == NS_OK && rhs) {
        const ns_mech_ppack **pp = malloc((size_t)(model->n_mechs > 0 ? model->n_mechs : 1) * sizeof *pp);
        if (!pp) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU mechanisms");
        for (int32_t k = 0; pp && k < model->n_mechs; ++k) pp[k] = &g->m[k].p;
        if (pp) st = ns_gpu_libfused_create(sim, pp, g->written, cell_id, cell_base, cells, v, rhs, d, &g->lf);
        free(pp);
    }
    if (st != NS_OK) {
        ns_gpu_model_free(g);
        return st;
    }
    *out = g;
    return NS_OK;
}

static ns_status nernst_of(const ns_sim_t *sim, gpu_model *g, const sim_mech *sm, cudaStream_t stream) {
    const sim_model *model = g->model;
    for (int32_t j = 0; j < model->n_ions; ++j) {
        if (!model->ions[j].write_c && (sm || !model->ions[j].einit)) continue;
        int mine = !sm;
        for (int q = 0; sm && q < sm->desc->n_ions; ++q)
            mine |= sm->ion[q] == j && (sm->desc->ions[q].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO));
        if (!mine) continue;
        double *base = g->ion + (size_t)5 * (size_t)j * (size_t)g->nodes;
        NS_CUDA_TRY(ns_sim_launch_nernst(base, base + g->nodes, base + 2 * g->nodes,
                                         g->written + (size_t)j * (size_t)g->nodes, g->nodes, model->ions[j].charge,
                                         sim->params.celsius, stream));
    }
    return NS_OK;
}

/* A mechanism without CUDA entry points: why (cuda_why_not: its library was built with --cuda, and
 * this mechanism stays on the CPU), else built without --cuda */
ns_status ns_gpu_no_cuda_code(const char *what, const ns_mech_desc *d) {
    if (d->cuda_why_not)
        return ns_fail(NS_ERR_UNSUPPORTED, "%s %s has no CUDA code (%s): run it on the CPU backend", what, d->name,
                       d->cuda_why_not);
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "%s %s has no CUDA code: build its library with `neurosolve mechanisms build --cuda` (or use the "
                   "CPU backend)",
                   what, d->name);
}

ns_status ns_gpu_errors_create(gpu_errors *e, const gpu_model *g, int32_t n,
                               const ns_mech_desc *(*desc)(const gpu_model *, int32_t)) {
    memset(e, 0, sizeof *e);
    e->n_mechs = n;
    int *kind = malloc((size_t)(n > 0 ? n : 1) * sizeof *kind);
    e->slot = malloc((size_t)(n > 0 ? n : 1) * sizeof *e->slot);
    if (!kind || !e->slot) {
        free(kind);
        ns_gpu_errors_free(e);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU errors");
    }
    for (int32_t k = 0; k < n; ++k) kind[k] = desc(g, k)->cuda_errors;
    e->n_records = ns_sim_gpu_error_slots(kind, n, e->slot, &e->n_unflagged);
    free(kind);
    if (e->n_records == 0) return NS_OK; /* no mechanism can fail: nothing to read */
    const size_t bytes = GPU_ERRORS_HEAD + (size_t)e->n_records * sizeof(ns_mech_error);
    e->host = malloc(bytes);
    const ns_status st = !e->host ? ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU errors")
                         : cudaMalloc((void **)&e->dev, bytes) != cudaSuccess
                             ? ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: GPU errors of %d mechanisms", (int)e->n_records)
                             : NS_OK;
    if (st != NS_OK) {
        e->dev = NULL;
        ns_gpu_errors_free(e);
        return st;
    }
    return ns_gpu_errors_reset(e);
}

ns_mech_error *ns_gpu_errors_record(const gpu_errors *e, int32_t k) {
    return e->slot[k] < 0 ? NULL : (ns_mech_error *)(void *)(e->dev + GPU_ERRORS_HEAD) + e->slot[k];
}

ns_status ns_gpu_errors_reset(gpu_errors *e) {
    if (!e->dev) return NS_OK;
    const size_t bytes = GPU_ERRORS_HEAD + (size_t)e->n_records * sizeof(ns_mech_error);
    memset(e->host, 0, bytes);
    ns_mech_error *rec = (ns_mech_error *)(void *)(e->host + GPU_ERRORS_HEAD);
    for (int32_t r = 0; r < e->n_records; ++r) rec[r].flag = (int *)(void *)e->dev;
    const cudaError_t c = cudaMemcpy(e->dev, e->host, bytes, cudaMemcpyHostToDevice);
    return c == cudaSuccess ? NS_OK : ns_cuda_status(c, "simulation: GPU errors", __FILE__, __LINE__);
}

void ns_gpu_errors_free(gpu_errors *e) {
    cudaFree(e->dev);
    free(e->host);
    free(e->slot);
    memset(e, 0, sizeof *e);
}

ns_status ns_gpu_errors_read(gpu_errors *e, const gpu_model *g, const ns_mech_desc *(*desc)(const gpu_model *, int32_t),
                             const char *when) {
    if (!e->dev) return NS_OK;
    const size_t rec = sizeof(ns_mech_error), first = GPU_ERRORS_HEAD + (size_t)e->n_unflagged * rec;
    cudaError_t c = cudaMemcpy(e->host, e->dev, first, cudaMemcpyDeviceToHost);
    int flag = 0;
    if (c == cudaSuccess) memcpy(&flag, e->host, sizeof flag);
    if (c == cudaSuccess && flag && e->n_records > e->n_unflagged) /* the flagged records only now */
        c = cudaMemcpy(e->host + first, e->dev + first, (size_t)(e->n_records - e->n_unflagged) * rec,
                       cudaMemcpyDeviceToHost);
    if (c != cudaSuccess) return ns_cuda_status(c, "simulation: GPU errors", __FILE__, __LINE__);
    ns_mech_error *r = (ns_mech_error *)(void *)(e->host + GPU_ERRORS_HEAD);
    for (int32_t k = 0; k < e->n_mechs; ++k) {
        const int32_t s = e->slot[k];
        if (s < 0 || (s >= e->n_unflagged && !flag) || !r[s].set) continue;
        r[s].file[sizeof r[s].file - 1] = r[s].msg[sizeof r[s].msg - 1] = 0;
        return ns_fail(NS_ERR_MECHANISM, "%s:%d: mechanism %s: %s (%s)", r[s].file, r[s].line, desc(g, k)->name,
                       r[s].msg, when);
    }
    return NS_OK;
}

ns_status ns_gpu_model_errors(gpu_model *g) {
    if (!g) return NS_OK;
    const ns_status st = ns_gpu_errors_read(&g->m_err, g, density_desc,
                                            "on the GPU loop: the run stops at the end of the interval");
    g->m_err_seen |= st == NS_ERR_MECHANISM;
    return st;
}

int ns_gpu_model_error_seen(const gpu_model *g) { return g && g->m_err_seen; }

ns_status ns_gpu_hooks_run(const ns_sim_t *sim, gpu_model *g, int h, double t, int density, int points,
                           cudaStream_t stream) {
    static const char *const what[NS_MECH_N_HOOKS] = {"BEFORE BREAKPOINT", "AFTER SOLVE", "BEFORE INITIAL",
                                                      "AFTER INITIAL", "BEFORE STEP", "CONSTRUCTOR", "DESTRUCTOR"};
    const sim_model *model = g->model;
    ns_status st = NS_OK;
    for (int32_t k = 0; density && k < model->n_mechs && st == NS_OK; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        gpu_mech *gm = &g->m[k];
        if (gm->p.n == 0 || !d->cuda_hooks[h]) continue;
        set_time(gm, t, sim);
        st = launched(d->cuda_hooks[h](&gm->p, stream), what[h], d->name);
        if (st == NS_OK && model->mechs[k].writes_c) st = nernst_of(sim, g, &model->mechs[k], stream);
    }
    for (int32_t k = 0; points && k < g->n_points && st == NS_OK; ++k) {
        const ns_mech_desc *d = g->pt_desc[k];
        if (g->pt[k].p.n == 0 || !d->cuda_hooks[h]) continue;
        set_time(&g->pt[k], t, sim);
        st = launched(d->cuda_hooks[h](&g->pt[k].p, stream), what[h], d->name);
    }
    return st;
}

/* finitialize's INITIAL of the density mechanisms: (CONSTRUCTOR once, at the first), BEFORE
 * INITIAL, INITIAL in type order, Nernst after a writer, AFTER INITIAL: as the CPU loop
 * (ns_model_block_init) */
static ns_status model_initial(const ns_sim_t *sim, gpu_model *g, cudaStream_t stream) {
    const sim_model *model = g->model;
    ns_status st = NS_OK;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        gpu_mech *gm = &g->m[k];
        if (g->constructed[k] || gm->p.n == 0) continue;
        g->constructed[k] = 1;
        const ns_mech_desc *desc = model->mechs[k].desc;
        set_time(gm, 0.0, sim);
        if (desc->cuda_hooks[NS_MECH_CONSTRUCTOR] &&
            (st = launched(desc->cuda_hooks[NS_MECH_CONSTRUCTOR](&gm->p, stream), "CONSTRUCTOR", desc->name)) != NS_OK)
            return st;
    }
    if ((st = ns_gpu_hooks_run(sim, g, NS_MECH_BEFORE_INITIAL, 0.0, 1, 0, stream)) != NS_OK) return st;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        gpu_mech *gm = &g->m[k];
        if (gm->p.n == 0) continue;
        set_time(gm, 0.0, sim);
        if ((st = launched(model->mechs[k].desc->cuda_init(&gm->p, stream), "INITIAL", model->mechs[k].desc->name)) !=
            NS_OK)
            return st;
        if (model->mechs[k].writes_c && (st = nernst_of(sim, g, &model->mechs[k], stream)) != NS_OK) return st;
    }
    return ns_gpu_hooks_run(sim, g, NS_MECH_AFTER_INITIAL, 0.0, 1, 0, stream);
}

/* Mechanism k's POINTERs in the group (its cells cell_id, local: the group's index of a
 * simulation's cell, -1): the device address of each instance's target (ns_sim_set_model_pointer,
 * the last setting wins), read and written in place; an unconnected one (ns_sim_create's
 * initialisation only: ns_net_density_unset refuses it otherwise) the placeholder. */
static ns_status density_pointers(const ns_sim_t *sim, gpu_model *g, int32_t k, const int64_t *cell_id,
                                  const int64_t *cell_base, int64_t cells, const int64_t *local) {
    const sim_model *model = g->model;
    const ns_mech_desc *d = model->mechs[k].desc;
    gpu_mech *gm = &g->m[k];
    const size_t np = (size_t)d->n_pointers, n = (size_t)gm->p.n;
    double **addr = calloc(np * n + 1, sizeof *addr);
    int64_t *first = malloc((size_t)(cells + 1) * sizeof *first); /* each local cell's first instance */
    if (!addr || !first) {
        free(addr), free(first);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: POINTERs of %s", d->name);
    }
    first[0] = 0;
    for (int64_t c = 0; c < cells; ++c)
        first[c + 1] = first[c] + model->per_shape[(size_t)sim->cell_shape[cell_id[c]] * model->n_mechs + k].n;
    ns_status st = NS_OK;
    for (int64_t j = 0; sim->net && j < sim->net->n_dptrs && st == NS_OK; ++j) {
        const net_dptr *p = &sim->net->dptrs[j];
        if (p->mech != k || local[p->cell] < 0) continue;
        const int64_t tl = local[p->to.cell];
        const int64_t inst = ns_net_instance_at(
            &model->per_shape[(size_t)sim->cell_shape[p->cell] * model->n_mechs + k], p->node);
        double *a = tl >= 0 ? ns_gpu_pointer_target(sim, g, cell_id, cell_base, tl, &p->to) : NULL;
        if (tl < 0)
            st = ns_fail(NS_ERR_UNSUPPORTED, "simulation: POINTER %s_%s at compartment %d of cell %lld: cell %lld is "
                         "in another GPU group (a density mechanism's POINTERs reach the cells of its own group)",
                         d->pointer_names[p->k], d->name, (int)p->node, (long long)p->cell, (long long)p->to.cell);
        else if (!a || inst < 0)
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "simulation: POINTER %s_%s at compartment %d of cell %lld reaches "
                         "%s, which is not inserted at compartment %d of cell %lld", d->pointer_names[p->k], d->name,
                         (int)p->node, (long long)p->cell, model->mechs[p->to.mech].desc->name, (int)p->to.node,
                         (long long)p->to.cell);
        else addr[(size_t)p->k * n + (size_t)(first[local[p->cell]] + inst)] = a;
    }
    for (size_t i = 0; i < np * n; ++i)
        if (!addr[i]) addr[i] = gm->ptr_unset;
    if (st == NS_OK && n > 0 &&
        cudaMemcpy(gm->ptr_addr, addr, np * n * sizeof *addr, cudaMemcpyHostToDevice) != cudaSuccess)
        st = ns_fail(NS_ERR_CUDA, "simulation: POINTERs of %s", d->name);
    free(addr);
    free(first);
    return st;
}

ns_status ns_gpu_model_init(const ns_sim_t *sim, gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                            int64_t cells, cudaStream_t stream) {
    const sim_model *model = g->model;
    /* finitialize starts without an error (as the CPU loop's) */
    g->m_err_seen = 0;
    ns_status st = ns_gpu_errors_reset(&g->m_err);
    if (st != NS_OK) return st;
    /* ions from the model's values, per cell */
    const size_t z = (size_t)g->nodes;
    double *h = malloc(5 * z * sizeof *h);
    if (!h) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: ion values");
    for (int32_t j = 0; j < model->n_ions && st == NS_OK; ++j) {
        for (int64_t c = 0; c < cells; ++c) {
            const int32_t s = sim->cell_shape[cell_id[c]];
            const int32_t n = sim->shapes[s].n;
            const double *init = model->ion_init[s];
            for (int q = 0; q < 3; ++q)
                for (int32_t i = 0; i < n; ++i)
                    h[(size_t)q * z + (size_t)node_at(g, cell_base, c, i)] = init[(size_t)(3 * j + q) * (size_t)n + i];
        }
        memset(h + 3 * z, 0, 2 * z * sizeof *h);
        if (cudaMemcpy(g->ion + 5 * (size_t)j * z, h, 5 * z * sizeof *h, cudaMemcpyHostToDevice) != cudaSuccess)
            st = ns_fail(NS_ERR_CUDA, "simulation: ion upload");
    }
    free(h);
    if (st != NS_OK) return st;
    /* tables built on the host (they depend on celsius and the globals only) */
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *desc = model->mechs[k].desc;
        gpu_mech *gm = &g->m[k];
        if (desc->table_update && desc->table_size > 0) {
            double *table = calloc((size_t)desc->table_size, sizeof *table);
            if (!table) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: TABLE of %s", desc->name);
            ns_mech_ppack hp;
            memset(&hp, 0, sizeof hp);
            hp.dt = sim->params.dt;
            hp.celsius = sim->params.celsius;
            hp.global = model->mechs[k].globals;
            hp.table = table;
            if (desc->table_update(&hp) &&
                cudaMemcpy(gm->p.table, table, (size_t)desc->table_size * sizeof *table, cudaMemcpyHostToDevice) !=
                    cudaSuccess)
                st = ns_fail(NS_ERR_CUDA, "simulation: TABLE upload of %s", desc->name);
            free(table);
            if (st != NS_OK) return st;
        }
    }
    /* fields: the parameters' values, the rest 0 (INITIAL sets them) */
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *desc = model->mechs[k].desc;
        gpu_mech *gm = &g->m[k];
        const int64_t cnt = gm->p.n;
        if (cnt == 0) continue;
        double *f = calloc((size_t)desc->n_fields * (size_t)cnt + 1, sizeof *f);
        if (!f) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fields");
        /* as the CPU loop: the assigned values restart at 0, except where a CONSTRUCTOR set them */
        if (g->constructed[k] && desc->cuda_hooks[NS_MECH_CONSTRUCTOR] &&
            cudaMemcpy(f, gm->fields, (size_t)desc->n_fields * (size_t)cnt * sizeof *f, cudaMemcpyDeviceToHost) !=
                cudaSuccess)
            st = ns_fail(NS_ERR_CUDA, "simulation: fields of %s", desc->name);
        int64_t q = 0;
        for (int64_t c = 0; c < cells; ++c) {
            const sim_mech_shape *ms = &model->per_shape[(size_t)sim->cell_shape[cell_id[c]] * model->n_mechs + k];
            for (int32_t i = 0; i < ms->n; ++i, ++q) {
                for (int p = 0; p < desc->n_params; ++p)
                    f[(size_t)p * (size_t)cnt + (size_t)q] = ms->param[(int64_t)p * ms->n + i];
                for (int r = 0; r < desc->has_random; ++r) { /* the streams' ids, as the CPU loop's (cell, node) */
                    double v[4];
                    ns_mech_random_stream(desc, r, cell_id[c], ms->node[i], v);
                    for (int j = 0; j < 4; ++j)
                        f[(size_t)(desc->random_field + 4 * r + j) * (size_t)cnt + (size_t)q] = v[j];
                }
            }
        }
        if (st == NS_OK &&
            cudaMemcpy(gm->fields, f, (size_t)desc->n_fields * (size_t)cnt * sizeof *f, cudaMemcpyHostToDevice) !=
                cudaSuccess)
            st = ns_fail(NS_ERR_CUDA, "simulation: field upload of %s", desc->name);
        free(f);
        if (st != NS_OK) return st;
    }
    /* the density mechanisms' POINTERs, which their INITIAL may read */
    int64_t *local = malloc((size_t)(sim->n_cells + 1) * sizeof *local);
    if (!local) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: POINTERs");
    for (int64_t c = 0; c < sim->n_cells; ++c) local[c] = -1;
    for (int64_t c = 0; c < cells; ++c) local[cell_id[c]] = c;
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k)
        if (model->mechs[k].desc->n_pointers > 0 && g->m[k].p.n > 0)
            st = density_pointers(sim, g, k, cell_id, cell_base, cells, local);
    free(local);
    if (st != NS_OK) return st;
    /* NEURON's finitialize: Nernst, then the mechanisms' INITIAL (model_initial) */
    if ((st = nernst_of(sim, g, NULL, stream)) != NS_OK) return st;
    if ((st = model_initial(sim, g, stream)) != NS_OK) return st;
    /* finitialize's setup_tree_matrix: BEFORE BREAKPOINT, then every mechanism's currents once
     * at t = 0 in type order into scratch rhs and d (the ions' i kept, as NEURON's), then
     * BEFORE STEP: as the CPU loop (ns_model_block_init) */
    double *scratch = NULL;
    if ((st = ns_gpu_hooks_run(sim, g, NS_MECH_BEFORE_BREAKPOINT, 0.0, 1, 0, stream)) != NS_OK) return st;
    if (model->n_mechs > 0 && (cudaMalloc((void **)&scratch, 2 * (size_t)g->nodes * sizeof *scratch) != cudaSuccess ||
                               cudaMemsetAsync(scratch, 0, 2 * (size_t)g->nodes * sizeof *scratch, stream) != cudaSuccess))
        st = ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: %lld compartments", (long long)g->nodes);
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k) {
        const ns_mech_desc *desc = model->mechs[k].desc;
        if (g->m[k].p.n == 0) continue;
        ns_mech_ppack q = g->m[k].p;
        q.rhs = scratch;
        q.d = scratch + g->nodes;
        q.t = 0.0;
        q.dt = sim->params.dt;
        q.celsius = sim->params.celsius;
        st = launched(desc->cuda_current(&q, stream), "BREAKPOINT", desc->name);
    }
    if (st == NS_OK) st = ns_gpu_hooks_run(sim, g, NS_MECH_BEFORE_STEP, 0.0, 1, 0, stream);
    if (st == NS_OK && cudaStreamSynchronize(stream) != cudaSuccess) st = ns_fail(NS_ERR_CUDA, "simulation: INITIAL");
    cudaFree(scratch);
    if (st == NS_OK) st = ns_gpu_errors_read(&g->m_err, g, density_desc, "at finitialize");
    return st;
}

static ns_status point_current(const ns_sim_t *sim, gpu_model *g, int32_t slot, double t, cudaStream_t stream) {
    gpu_mech *gm = &g->pt[slot];
    set_time(gm, t, sim);
    return launched(g->pt_desc[slot]->cuda_current(&gm->p, stream), "BREAKPOINT", g->pt_desc[slot]->name);
}

ns_status ns_gpu_model_currents(const ns_sim_t *sim, gpu_model *g, double *rhs, double *d, double t,
                                cudaStream_t stream) {
    const sim_model *model = g->model;
    ns_status st = ns_gpu_hooks_run(sim, g, NS_MECH_BEFORE_BREAKPOINT, t, 1, 1, stream); /* NEURON's nrn_ba first */
    if (st != NS_OK) return st;
    NS_CUDA_TRY(cudaMemsetAsync(rhs, 0, (size_t)g->nodes * sizeof *rhs, stream));
    NS_CUDA_TRY(cudaMemsetAsync(d, 0, (size_t)g->nodes * sizeof *d, stream));
    for (int32_t j = 0; j < model->n_ions; ++j)
        if (model->ions[j].read_i)
            NS_CUDA_TRY(cudaMemsetAsync(g->ion + (size_t)(5 * j + 3) * (size_t)g->nodes, 0,
                                    (size_t)g->nodes * sizeof(double), stream));
    /* the synapses' types merged in by NEURON's type order, as the CPU loop
     * (sim/cpu/step.c, model_pass): each after the mechanisms before IClamp */
    int32_t slot = 0;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        if (k >= model->n_before_clamp)
            for (; slot < g->n_points && g->pt_key[slot] < model->mechs[k].key; ++slot)
                if ((st = point_current(sim, g, slot, t, stream)) != NS_OK) return st;
        const int32_t s0 = ns_gpu_libfused_slot(g->lf, k);
        if (s0 >= 0) { /* the library's mechanisms from k on in one launch, up to a point type or another mechanism */
            int32_t k2 = k + 1;
            while (k2 < model->n_mechs && ns_gpu_libfused_slot(g->lf, k2) >= 0 &&
                   !(k2 >= model->n_before_clamp && slot < g->n_points && g->pt_key[slot] < model->mechs[k2].key))
                ++k2;
            if ((st = ns_gpu_libfused_run(sim, g->lf, 0, s0, ns_gpu_libfused_slot(g->lf, k2 - 1) + 1, t, g->t_dev[0],
                                          stream)) != NS_OK)
                return st;
            k = k2 - 1;
            continue;
        }
        gpu_mech *gm = &g->m[k];
        if (gm->p.n == 0) continue;
        set_time(gm, t, sim);
        st = launched(model->mechs[k].desc->cuda_current(&gm->p, stream), "BREAKPOINT", model->mechs[k].desc->name);
        if (st != NS_OK) return st;
    }
    for (; slot < g->n_points; ++slot)
        if ((st = point_current(sim, g, slot, t, stream)) != NS_OK) return st;
    return NS_OK;
}

ns_status ns_gpu_model_states(const ns_sim_t *sim, gpu_model *g, double t, cudaStream_t stream) {
    const sim_model *model = g->model;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const int32_t s0 = ns_gpu_libfused_slot(g->lf, k);
        if (s0 >= 0) { /* the library's mechanisms from k on in one launch; a concentration writer in a launch of
                        * its own (Nernst inside, after it at its nodes): a member before it or after it may read
                        * what it writes, and a launch runs its members' instances in any order */
            int32_t k2 = k + 1;
            while (!model->mechs[k2 - 1].writes_c && k2 < model->n_mechs && !model->mechs[k2].writes_c &&
                   ns_gpu_libfused_slot(g->lf, k2) >= 0)
                ++k2;
            const ns_status st = ns_gpu_libfused_run(sim, g->lf, 1, s0, ns_gpu_libfused_slot(g->lf, k2 - 1) + 1, t,
                                                     g->t_dev[1], stream);
            if (st != NS_OK) return st;
            k = k2 - 1;
            continue;
        }
        gpu_mech *gm = &g->m[k];
        if (gm->p.n == 0) continue;
        set_time(gm, t, sim);
        ns_status st = launched(model->mechs[k].desc->cuda_state(&gm->p, stream), "SOLVE", model->mechs[k].desc->name);
        if (st != NS_OK) return st;
        if (model->mechs[k].writes_c && (st = nernst_of(sim, g, &model->mechs[k], stream)) != NS_OK) return st;
    }
    /* the synapses after the density mechanisms, as the CPU loop */
    for (int32_t k = 0; k < g->n_points; ++k) {
        gpu_mech *gm = &g->pt[k];
        set_time(gm, t, sim);
        ns_status st = launched(g->pt_desc[k]->cuda_state(&gm->p, stream), "SOLVE", g->pt_desc[k]->name);
        if (st != NS_OK) return st;
    }
    const ns_status st = ns_gpu_hooks_run(sim, g, NS_MECH_AFTER_SOLVE, t, 1, 1, stream);
    return st != NS_OK ? st : ns_gpu_hooks_run(sim, g, NS_MECH_BEFORE_STEP, t, 1, 1, stream);
}

ns_status ns_gpu_model_var(const ns_sim_t *sim, const gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                           int64_t j, int32_t mech, int32_t field, int32_t ion, int32_t q, double *io, int write) {
    const sim_model *model = g->model;
    const int32_t shape = sim->cell_shape[cell_id[j]];
    const int32_t n = sim->shapes[shape].n;
    if (mech < 0) { /* the cell's nodes are a range of the group's (in position order onchip) */
        double *at = g->ion + (size_t)(5 * ion + q) * (size_t)g->nodes + (size_t)cell_base[j];
        double *buf = g->pos ? malloc((size_t)n * sizeof *buf) : io;
        if (!buf) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_%s_model_var", write ? "set" : "get");
        cudaError_t e;
        if (write) {
            for (int32_t i = 0; g->pos && i < n; ++i) buf[g->pos[i]] = io[i];
            e = cudaMemcpy(at, buf, (size_t)n * sizeof *buf, cudaMemcpyHostToDevice);
        } else {
            e = cudaMemcpy(buf, at, (size_t)n * sizeof *buf, cudaMemcpyDeviceToHost);
            for (int32_t i = 0; g->pos && e == cudaSuccess && i < n; ++i) io[i] = buf[g->pos[i]];
        }
        if (g->pos) free(buf);
        return e == cudaSuccess ? NS_OK
                                : ns_fail(NS_ERR_CUDA, "ns_sim_%s_model_var: %s", write ? "set" : "get",
                                          cudaGetErrorString(e));
    }
    /* the cell's instances follow those of the cells before it in the group */
    int64_t first = 0;
    for (int64_t c = 0; c < j; ++c)
        first += model->per_shape[(size_t)sim->cell_shape[cell_id[c]] * model->n_mechs + mech].n;
    const sim_mech_shape *ms = &model->per_shape[(size_t)shape * model->n_mechs + mech];
    const gpu_mech *gm = &g->m[mech];
    if (!write)
        for (int32_t i = 0; i < n; ++i) io[i] = NAN;
    if (ms->n == 0) return NS_OK;
    double *buf = malloc((size_t)ms->n * sizeof *buf);
    if (!buf) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_sim_%s_model_var", write ? "set" : "get");
    double *at = gm->fields + (size_t)field * (size_t)gm->p.n + (size_t)first;
    cudaError_t e;
    if (write) {
        for (int32_t k = 0; k < ms->n; ++k) buf[k] = io[ms->node[k]];
        e = cudaMemcpy(at, buf, (size_t)ms->n * sizeof *buf, cudaMemcpyHostToDevice);
    } else {
        e = cudaMemcpy(buf, at, (size_t)ms->n * sizeof *buf, cudaMemcpyDeviceToHost);
        if (e == cudaSuccess)
            for (int32_t k = 0; k < ms->n; ++k) io[ms->node[k]] = buf[k];
    }
    free(buf);
    return e == cudaSuccess ? NS_OK
                            : ns_fail(NS_ERR_CUDA, "ns_sim_%s_model_var: %s", write ? "set" : "get", cudaGetErrorString(e));
}

void ns_gpu_model_field(const gpu_model *g, int32_t mech, int32_t field, int32_t ion, int32_t q, double **data,
                        int64_t *size, const int32_t **pos) {
    if (mech < 0) {
        *data = g->ion + (size_t)(5 * ion + q) * (size_t)g->nodes;
        *size = g->nodes;
        *pos = NULL;
        return;
    }
    const gpu_mech *gm = &g->m[mech];
    *data = gm->fields + (size_t)field * (size_t)gm->p.n;
    *size = gm->p.n;
    *pos = (const int32_t *)gm->p.node_index;
}
