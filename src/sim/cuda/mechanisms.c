/* The GPU loop's mechanisms from a model (model_impl.h): every instance of
 * the population on the device, the generated CUDA launchers per phase.
 *
 * One gpu_model per group of the GPU loop that holds the model's cells
 * (sim/cuda/step.c): the tree loop's group, whose state is Flat in the
 * group's cell order, or an onchip group (one shape, each cell's compartments
 * in the schedule's position order: `pos`): instance i of mechanism m sits at
 * node node_index[i] of the group's arrays. The per-step launches below run
 * in the tree group only; an onchip group's kernel runs the built-in pas and
 * hh itself (sim/cuda/fused.h) and uses this storage for init, the states
 * between launches and ns_sim_get_model_var. Per mechanism: the fields (n_fields
 * arrays over its instances), the node indexes, the globals and TABLE
 * storage (built on the host by table_update, copied); per ion used: e, ci,
 * co, i, didv over the group's nodes. One step (gpu_advance):
 *   rhs = d = 0, ions' i = didv = 0 (memsets)
 *   current() of each mechanism in type order (the launchers, t + dt/2)
 *   the tree loop's step (IClamp, capacitance, axial terms, solve, v)
 *   state() of each mechanism (t + dt), Nernst after a writer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/mechanisms.h"
#include "sim/cuda/library_fused.h"
#include "mech/builtin/builtin.h"
#include "sim/network.h"
#include "core/cuda_check.h"
#include "core/error.h"

/* BEFORE/AFTER blocks and CONSTRUCTOR without device code (ns_mech_desc.cuda_hooks, ABI 7: a
 * library built for an older ABI); a DESTRUCTOR and a point process's CONSTRUCTOR keep the
 * mechanism without CUDA entry points (cuda_why_not) */
static int host_hooks(const ns_mech_desc *d) {
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (d->hooks[h] && !d->cuda_hooks[h]) return 1;
    return 0;
}
static ns_status host_hooks_refused(const ns_mech_desc *d) {
    return ns_fail(NS_ERR_UNSUPPORTED,
                   "simulation: mechanism %s has BEFORE/AFTER, CONSTRUCTOR or DESTRUCTOR blocks without device code "
                   "(its library was built for mechanism ABI %d: build it again with `neurosolve mechanisms build "
                   "--cuda`, or use the CPU backend; docs/mechanisms.md, \"BEFORE, AFTER, CONSTRUCTOR\")",
                   d->name, d->abi_version);
}

typedef struct gpu_mech {
    ns_mech_ppack p;       /* device pointers; t, dt, celsius set per call */
    double *fields;        /* device: n_fields arrays of p.n */
    void *allocs[16];
    int n_allocs;
} gpu_mech;

struct gpu_model {
    const sim_model *model;
    int64_t nodes;
    const int32_t *pos;  /* host: the group's position of each compartment (onchip: one shape); NULL: itself */
    double *v, *rhs, *d; /* the group's (device) */
    gpu_mech *m;
    unsigned char *constructed; /* per mechanism: its CONSTRUCTOR ran (the first finitialize) */
    ns_mech_error *m_err;       /* device: per mechanism, its C's error (ns_mech_ppack.error: nsv_dev_error) */
    int m_err_seen;             /* an error was read from m_err since finitialize */
    double *ion;            /* device: per ion j, e, ci, co, i, didv at [(5 * j + q) * nodes] */
    unsigned char *written; /* device: per ion j at [j * nodes]: e by Nernst there */
    double *geom;           /* device: area per node, then diam per node (ns_mech_ppack.area, .diam) */
    /* a network's synapses (ns_gpu_model_points): the point types present, in
     * NEURON's type order, their instances in the group's cell order */
    int32_t n_points;
    gpu_mech *pt;
    const ns_mech_desc **pt_desc;
    int32_t *pt_key;
    gpu_libfused *lf; /* the tree group's: the library's fused launches (sim/cuda/library_fused.h), or NULL */
    const double *t_dev[2]; /* not NULL: where the fused launches read t (current, state; ns_gpu_model_clock) */
    ns_mech_error *pt_err; /* device: per point type, its C's error (ns_mech_ppack.error: nsv_dev_error) */
};

void ns_gpu_model_clock(gpu_model *g, const double *t_current, const double *t_state) {
    g->t_dev[0] = t_current;
    g->t_dev[1] = t_state;
}

int ns_gpu_model_time_free(const gpu_model *g) {
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const ns_mech_desc *d = g->model->mechs[k].desc;
        if (ns_gpu_libfused_slot(g->lf, k) < 0 && d != &nsm_pas_desc && d != &nsm_hh_desc) return 0;
    }
    return g->n_points == 0;
}

static void points_free(gpu_model *g) {
    for (int32_t k = 0; g->pt && k < g->n_points; ++k)
        for (int a = 0; a < g->pt[k].n_allocs; ++a) cudaFree(g->pt[k].allocs[a]);
    free(g->pt);
    free(g->pt_desc);
    free(g->pt_key);
    cudaFree(g->pt_err);
    g->pt_err = NULL;
    g->pt = NULL;
    g->pt_desc = NULL;
    g->pt_key = NULL;
    g->n_points = 0;
}

void ns_gpu_model_free(gpu_model *g) {
    if (!g) return;
    for (int32_t k = 0; g->m && k < g->model->n_mechs; ++k)
        for (int a = 0; a < g->m[k].n_allocs; ++a) cudaFree(g->m[k].allocs[a]);
    free(g->m);
    free(g->constructed);
    cudaFree(g->m_err);
    ns_gpu_libfused_free(g->lf);
    points_free(g);
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

static ns_status alloc_up(gpu_mech *gm, void **dst, const void *src, size_t bytes) {
    NS_CUDA_TRY(cudaMalloc(dst, bytes ? bytes : 8));
    gm->allocs[gm->n_allocs++] = *dst;
    if (src && bytes) NS_CUDA_TRY(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return NS_OK;
}

/* A mechanism's FUNCTION_TABLEs on the device (ns_mech_ppack.ftable, which the generated lookup
 * reads: nsm_ftable): desc->n_ftables tables t (the model's copies, host) in one allocation, the
 * structures with device addresses first, then each table's abscissae and values. *out NULL:
 * none (a mechanism without FUNCTION_TABLEs; the model refuses one without values). */
static ns_status ftables_up(gpu_mech *gm, const ns_mech_desc *d, const ns_mech_ftable *t, const ns_mech_ftable **out) {
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

/* Node of compartment i of local cell j. */
static int64_t node_at(const gpu_model *g, const int64_t *cell_base, int64_t j, int32_t i) {
    return cell_base[j] + (g->pos ? g->pos[i] : i);
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
    if (st == NS_OK && cudaMalloc((void **)&g->m_err, (size_t)(model->n_mechs > 0 ? model->n_mechs : 1) *
                                                          sizeof *g->m_err) != cudaSuccess)
        st = ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: GPU mechanisms' errors");
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
            views[j] = (ns_mech_ion_view){base, base + z, base + 2 * z, keep ? base + 3 * z : NULL,
                                          keep ? base + 4 * z : NULL, NULL};
        }
        if (st == NS_OK)
            st = alloc_up(gm, (void **)&ions_d, views, (size_t)desc->n_ions * sizeof(ns_mech_ion_view));
        const ns_mech_ftable *ftab_d = NULL;
        if (st == NS_OK) st = ftables_up(gm, desc, model->mechs[k].ftable, &ftab_d);
        free(nodes_h);
        nodes_h = NULL;
        if (st != NS_OK) break;
        memset(&gm->p, 0, sizeof gm->p);
        gm->p.ftable = ftab_d;
        gm->p.n = (int)cnt;
        gm->p.node_index = nodes_d;
        gm->p.v = v;
        gm->p.rhs = rhs;
        gm->p.d = d;
        gm->p.field = fptr_d;
        gm->p.global = globals_d;
        gm->p.table = table_d;
        gm->p.ion = ions_d;
        gm->p.area = g->geom;
        gm->p.diam = g->geom + g->nodes;
        gm->p.error = g->m_err + k;
        if (!desc->cuda_init || !desc->cuda_current || !desc->cuda_state)
            st = ns_fail(NS_ERR_UNSUPPORTED,
                         "simulation: mechanism %s has no CUDA code%s%s%s: build its library with `neurosolve "
                         "mechanisms build --cuda` (or use the CPU backend)",
                         desc->name, desc->cuda_why_not ? " (" : "", desc->cuda_why_not ? desc->cuda_why_not : "",
                         desc->cuda_why_not ? ")" : "");
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

static void set_time(gpu_mech *gm, double t, const ns_sim_t *sim) {
    gm->p.t = t;
    gm->p.dt = sim->params.dt;
    gm->p.celsius = sim->params.celsius;
}

static ns_status launched(int rc, const char *what, const char *name) {
    if (rc == 0) return NS_OK;
    cudaError_t e = cudaGetLastError();
    return ns_fail(NS_ERR_CUDA, "simulation: %s of %s: %s", what, name, cudaGetErrorString(e));
}

static ns_status nernst_of(const ns_sim_t *sim, gpu_model *g, const sim_mech *sm, cudaStream_t stream) {
    const sim_model *model = g->model;
    for (int32_t j = 0; j < model->n_ions; ++j) {
        if (!model->ions[j].write_c) continue;
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

/* The first error that the VERBATIM C of n mechanisms recorded on the device (dev: one per
 * mechanism; hoc_execerror, exit, abort: nmodl_verbatim.h's nsv_dev_error), in type order, as the
 * CPU loop words it (desc(g, k): mechanism k's descriptor); when: where */
static ns_status device_errors(const gpu_model *g, const ns_mech_error *dev, int32_t n,
                               const ns_mech_desc *(*desc)(const gpu_model *, int32_t), const char *when) {
    if (!dev || n <= 0) return NS_OK;
    ns_mech_error *e = malloc((size_t)n * sizeof *e);
    if (!e) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: GPU errors");
    const cudaError_t c = cudaMemcpy(e, dev, (size_t)n * sizeof *e, cudaMemcpyDeviceToHost);
    ns_status st = c == cudaSuccess ? NS_OK : ns_cuda_status(c, "simulation: GPU errors", __FILE__, __LINE__);
    for (int32_t k = 0; st == NS_OK && k < n; ++k)
        if (e[k].set) {
            e[k].file[sizeof e[k].file - 1] = e[k].msg[sizeof e[k].msg - 1] = 0;
            st = ns_fail(NS_ERR_MECHANISM, "%s:%d: mechanism %s: %s (%s)", e[k].file, e[k].line, desc(g, k)->name,
                         e[k].msg, when);
        }
    free(e);
    return st;
}
static const ns_mech_desc *point_desc(const gpu_model *g, int32_t k) { return g->pt_desc[k]; }
static const ns_mech_desc *density_desc(const gpu_model *g, int32_t k) { return g->model->mechs[k].desc; }

/* a point type's errors (device_errors) */
static ns_status points_errors(const gpu_model *g, const char *when) {
    return g ? device_errors(g, g->pt_err, g->n_points, point_desc, when) : NS_OK;
}

ns_status ns_gpu_model_errors(gpu_model *g) {
    if (!g) return NS_OK;
    const ns_status st = device_errors(g, g->m_err, g->model->n_mechs, density_desc,
                                       "on the GPU loop: the run stops at the end of the interval");
    g->m_err_seen |= st == NS_ERR_MECHANISM;
    return st;
}

int ns_gpu_model_error_seen(const gpu_model *g) { return g && g->m_err_seen; }

/* The BEFORE/AFTER blocks or CONSTRUCTOR h (ns_mech_desc.cuda_hooks) at time t: of the density
 * mechanisms in type order (Nernst after one that writes a concentration), as the CPU loop's
 * ns_model_block_hook, where `density`; then of the point types, as its ns_net_hook, where `points` */
static ns_status hooks_run(const ns_sim_t *sim, gpu_model *g, int h, double t, int density, int points,
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

ns_status ns_gpu_model_init(const ns_sim_t *sim, gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                            int64_t cells, cudaStream_t stream) {
    const sim_model *model = g->model;
    /* finitialize starts without an error (as the CPU loop's) */
    g->m_err_seen = 0;
    NS_CUDA_TRY(cudaMemset(g->m_err, 0, (size_t)(model->n_mechs > 0 ? model->n_mechs : 1) * sizeof *g->m_err));
    /* ions from the model's values, per cell */
    const size_t z = (size_t)g->nodes;
    double *h = malloc(5 * z * sizeof *h);
    if (!h) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: ion values");
    ns_status st = NS_OK;
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
    /* NEURON's finitialize: Nernst, (CONSTRUCTOR once, at the first), BEFORE INITIAL, INITIAL in
     * type order, Nernst after a writer, AFTER INITIAL: as the CPU loop (ns_model_block_init) */
    if ((st = nernst_of(sim, g, NULL, stream)) != NS_OK) return st;
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
    if ((st = hooks_run(sim, g, NS_MECH_BEFORE_INITIAL, 0.0, 1, 0, stream)) != NS_OK) return st;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        gpu_mech *gm = &g->m[k];
        if (gm->p.n == 0) continue;
        set_time(gm, 0.0, sim);
        if ((st = launched(model->mechs[k].desc->cuda_init(&gm->p, stream), "INITIAL", model->mechs[k].desc->name)) !=
            NS_OK)
            return st;
        if (model->mechs[k].writes_c && (st = nernst_of(sim, g, &model->mechs[k], stream)) != NS_OK) return st;
    }
    if ((st = hooks_run(sim, g, NS_MECH_AFTER_INITIAL, 0.0, 1, 0, stream)) != NS_OK) return st;
    /* finitialize's currents where a mechanism writes a reversal potential
     * (WRITE ena), into scratch rhs and d, then the ions' i and didv zeroed
     * again: as the CPU loop (ns_model_block_init) */
    double *scratch = NULL;
    for (int32_t k = 0; k < model->n_mechs && st == NS_OK; ++k) {
        const ns_mech_desc *desc = model->mechs[k].desc;
        unsigned we = 0;
        for (int j = 0; j < desc->n_ions; ++j) we |= desc->ions[j].flags & NS_MECH_ION_WRITE_E;
        if (!we || g->m[k].p.n == 0) continue;
        if (!scratch && (cudaMalloc((void **)&scratch, 2 * (size_t)g->nodes * sizeof *scratch) != cudaSuccess ||
                         cudaMemsetAsync(scratch, 0, 2 * (size_t)g->nodes * sizeof *scratch, stream) != cudaSuccess)) {
            st = ns_fail(NS_ERR_DEVICE_MEMORY, "simulation: %lld compartments", (long long)g->nodes);
            break;
        }
        ns_mech_ppack q = g->m[k].p;
        q.rhs = scratch;
        q.d = scratch + g->nodes;
        q.t = 0.0;
        q.dt = sim->params.dt;
        q.celsius = sim->params.celsius;
        st = launched(desc->cuda_current(&q, stream), "BREAKPOINT", desc->name);
    }
    for (int32_t j = 0; scratch && st == NS_OK && j < model->n_ions; ++j)
        if (cudaMemsetAsync(g->ion + (size_t)(5 * j + 3) * (size_t)g->nodes, 0, 2 * (size_t)g->nodes * sizeof(double),
                            stream) != cudaSuccess)
            st = ns_fail(NS_ERR_CUDA, "simulation: ion currents");
    /* finitialize's setup_tree_matrix runs BEFORE BREAKPOINT; BEFORE STEP is its last */
    if (st == NS_OK) st = hooks_run(sim, g, NS_MECH_BEFORE_BREAKPOINT, 0.0, 1, 0, stream);
    if (st == NS_OK) st = hooks_run(sim, g, NS_MECH_BEFORE_STEP, 0.0, 1, 0, stream);
    if (st == NS_OK && cudaStreamSynchronize(stream) != cudaSuccess) st = ns_fail(NS_ERR_CUDA, "simulation: INITIAL");
    cudaFree(scratch);
    if (st == NS_OK) st = device_errors(g, g->m_err, model->n_mechs, density_desc, "at finitialize");
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
    ns_status st = hooks_run(sim, g, NS_MECH_BEFORE_BREAKPOINT, t, 1, 1, stream); /* NEURON's nrn_ba first */
    if (st != NS_OK) return st;
    NS_CUDA_TRY(cudaMemsetAsync(rhs, 0, (size_t)g->nodes * sizeof *rhs, stream));
    NS_CUDA_TRY(cudaMemsetAsync(d, 0, (size_t)g->nodes * sizeof *d, stream));
    for (int32_t j = 0; j < model->n_ions; ++j)
        if (model->ions[j].read_i)
            NS_CUDA_TRY(cudaMemsetAsync(g->ion + (size_t)(5 * j + 3) * (size_t)g->nodes, 0,
                                    2 * (size_t)g->nodes * sizeof(double), stream));
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
        if (s0 >= 0) { /* the library's mechanisms from k on in one launch (Nernst inside, per node) */
            int32_t k2 = k + 1;
            while (k2 < model->n_mechs && ns_gpu_libfused_slot(g->lf, k2) >= 0) ++k2;
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
    const ns_status st = hooks_run(sim, g, NS_MECH_AFTER_SOLVE, t, 1, 1, stream);
    return st != NS_OK ? st : hooks_run(sim, g, NS_MECH_BEFORE_STEP, t, 1, 1, stream);
}

int32_t ns_gpu_model_points(const gpu_model *g) { return g->n_points; }

void ns_gpu_model_point(const gpu_model *g, int32_t slot, const ns_mech_desc **desc, int32_t *key,
                        ns_mech_ppack *pp, double **fields) {
    *desc = g->pt_desc[slot];
    *key = g->pt_key[slot];
    *pp = g->pt[slot].p;
    *fields = g->pt[slot].fields;
}

ns_status ns_gpu_model_deliver(const ns_sim_t *sim, gpu_model *g, int32_t slot, const ns_mech_event *events,
                               const int64_t *range, int64_t max, const double *until, const double *t_step,
                               ns_mech_spike *spikes, unsigned long long *spikes_n, int64_t spikes_cap,
                               cudaStream_t stream) {
    if (max <= 0 && !ns_gpu_model_point_self(g, slot)) return NS_OK;
    if (!g->pt_desc[slot]->cuda_net_receive) /* ns_sim_connect never makes it a target */
        return ns_fail(NS_ERR_INTERNAL, "network: events for %s, which has no NET_RECEIVE", g->pt_desc[slot]->name);
    gpu_mech *gm = &g->pt[slot];
    set_time(gm, 0.0, sim); /* each event sets t */
    gm->p.dev.until = until;
    gm->p.dev.t_step = t_step;
    gm->p.dev.spikes = spikes;
    gm->p.dev.spikes_n = spikes_n;
    gm->p.dev.spikes_cap = spikes_cap;
    return launched(g->pt_desc[slot]->cuda_net_receive(&gm->p, events, range, max, stream), "NET_RECEIVE",
                    g->pt_desc[slot]->name);
}

static int cmp_pair(const void *a, const void *b) {
    const int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return (x > y) - (x < y);
}

/* what the device versions of net_send, net_event and net_move need (mechanism.h) */
#define DEV_EVENTS (NS_MECH_EV_SEND | NS_MECH_EV_EVENT | NS_MECH_EV_MOVE | NS_MECH_EV_WATCH)
#define DEV_SLOTS 4 /* self events an instance may have pending on the GPU loop */

typedef struct dev_error {
    int code, inst;
    double t;
} dev_error;

/* A point type's self-event slots (free), numbers, flag-1 numbers (none),
 * sources and error, in one device allocation (ns_mech_dev_events); the
 * spike buffer and the step's bound are set per delivery. */
static ns_status dev_events(gpu_mech *gm, const ns_mech_desc *d, int64_t cnt, const int64_t *src_h) {
    const size_t n = (size_t)(cnt > 0 ? cnt : 1), q = n * DEV_SLOTS;
    const size_t nw = n * (size_t)d->n_watch;
    const size_t bytes = sizeof(dev_error) + q * (2 * sizeof(double) + sizeof(int64_t) + sizeof(int32_t)) +
                         n * 3 * sizeof(int64_t) + nw * (sizeof(double) + 2) + 64;
    unsigned char *blk = NULL;
    ns_status st = alloc_up(gm, (void **)&blk, NULL, bytes);
    if (st != NS_OK) return st;
    ns_mech_dev_events *e = &gm->p.dev;
    dev_error *err = (dev_error *)blk;
    size_t at = sizeof *err;
    e->q_t = (double *)(blk + at), at += q * sizeof(double);
    e->q_flag = (double *)(blk + at), at += q * sizeof(double);
    e->q_seq = (int64_t *)(blk + at), at += q * sizeof(int64_t);
    e->next_seq = (int64_t *)(blk + at), at += n * sizeof(int64_t);
    e->tq = (int64_t *)(blk + at), at += n * sizeof(int64_t);
    int64_t *src = (int64_t *)(blk + at);
    e->source = src, at += n * sizeof(int64_t);
    if (nw > 0) e->w_flag = (double *)(blk + at), at += nw * sizeof(double);
    e->q_conn = (int32_t *)(blk + at), at += q * sizeof(int32_t);
    if (nw > 0) {
        e->n_watch = d->n_watch;
        e->w_on = blk + at, at += nw;
        e->w_above = blk + at;
    }
    e->slots = DEV_SLOTS;
    e->n_weights = d->n_weights > 0 ? d->n_weights : 1;
    e->error = &err->code;
    e->error_inst = &err->inst;
    e->error_t = &err->t;
    cudaError_t c = cudaMemset(blk, 0, bytes);
    if (c == cudaSuccess) c = cudaMemset(e->q_seq, 0xFF, q * sizeof(int64_t)); /* -1: free */
    if (c == cudaSuccess) c = cudaMemset(e->tq, 0xFF, n * sizeof(int64_t));
    if (c == cudaSuccess && cnt > 0) c = cudaMemcpy(src, src_h, (size_t)cnt * sizeof *src, cudaMemcpyHostToDevice);
    return c == cudaSuccess ? NS_OK : ns_cuda_status(c, "network: GPU events", __FILE__, __LINE__);
}

int ns_gpu_model_point_self(const gpu_model *g, int32_t slot) {
    return (g->pt_desc[slot]->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH)) != 0;
}


ns_status ns_gpu_model_events_check(const gpu_model *g) {
    const ns_status est = points_errors(g, "on the GPU loop: the run stops at the end of the interval");
    if (est != NS_OK) return est;
    for (int32_t k = 0; g && k < g->n_points; ++k) {
        if (!g->pt[k].p.dev.error) continue;
        dev_error e;
        NS_CUDA_TRY(cudaMemcpy(&e, g->pt[k].p.dev.error, sizeof e, cudaMemcpyDeviceToHost));
        static const char *const what[] = {"", "a self event with its instance's slots all taken (the GPU loop keeps "
                                               "4 pending per instance; use the CPU backend)",
                                           "net_send with a negative delay",
                                           "net_move with no self event of flag 1 pending, or to a time before t",
                                           "net_event at a time before t",
                                           "more net_event spikes in one interval than the GPU loop's buffer holds "
                                           "(use the CPU backend)"};
        if (e.code != 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "network: %s instance %d at t = %.17g ms: %s", g->pt_desc[k]->name,
                           e.inst, e.t, e.code > 0 && e.code <= 5 ? what[e.code] : "an unknown error");
    }
    return NS_OK;
}

/* The POINTERs of a point type's cnt instances (synapses ids[i]; local: the
 * group's cell of each cell) as device addresses: a cell's v, an ion's
 * variable or another mechanism's field at a compartment of a cell in the
 * group, read and written in place (as the CPU loop's in-block POINTERs: in
 * the current phase every v is the step's start). *out: n_pointers device
 * arrays of cnt addresses (ns_mech_ppack.pointer). */
static ns_status points_pointers(const ns_sim_t *sim, const gpu_model *g, gpu_mech *gm, const ns_mech_desc *d,
                                 const int64_t *ids, int64_t cnt, const int64_t *local, const int64_t *cell_id,
                                 const int64_t *cell_base, double ****out) {
    const sim_net *net = sim->net;
    const sim_model *model = g->model;
    const size_t np = (size_t)d->n_pointers, n = (size_t)(cnt > 0 ? cnt : 1);
    double **addr = malloc(np * n * sizeof *addr);
    double ***rows = malloc(np * sizeof *rows);
    if (!addr || !rows) {
        free(addr), free(rows);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: POINTERs of %s", d->name);
    }
    ns_status st = NS_OK;
    for (int64_t i = 0; st == NS_OK && i < cnt; ++i)
        for (int k = 0; st == NS_OK && k < d->n_pointers; ++k) {
            const net_ptr *to = NULL;
            if ((st = ns_net_pointer_of(net, d, ids[i], k, &to)) != NS_OK) break;
            const int64_t j = local[to->cell];
            if (j < 0) {
                st = ns_fail(NS_ERR_INTERNAL, "network: synapse %lld (%s): POINTER %s: cell %lld is not in the GPU "
                             "tree group", (long long)ids[i], d->name, d->pointer_names[k], (long long)to->cell);
                break;
            }
            const int64_t node = node_at(g, cell_base, j, to->node);
            double *a;
            if (to->ion >= 0) a = g->ion + (size_t)(5 * to->ion + to->q) * (size_t)g->nodes + (size_t)node;
            else if (to->mech < 0) a = g->v + node;
            else {
                const int32_t shape = sim->cell_shape[to->cell];
                const int64_t inst = ns_net_instance_at(&model->per_shape[(size_t)shape * model->n_mechs + to->mech],
                                                        to->node);
                if (inst < 0) {
                    st = ns_net_pointer_absent(sim, ids[i], d, k, to);
                    break;
                }
                int64_t first = 0; /* the cell's instances follow those of the group's cells before it */
                for (int64_t c = 0; c < j; ++c)
                    first += model->per_shape[(size_t)sim->cell_shape[cell_id[c]] * model->n_mechs + to->mech].n;
                const gpu_mech *tm = &g->m[to->mech];
                a = tm->fields + (size_t)to->field * (size_t)tm->p.n + (size_t)(first + inst);
            }
            addr[(size_t)k * n + (size_t)i] = a;
        }
    double **addr_d = NULL;
    if (st == NS_OK) st = alloc_up(gm, (void **)&addr_d, addr, np * n * sizeof *addr);
    for (size_t k = 0; st == NS_OK && k < np; ++k) rows[k] = addr_d + k * n;
    double ***rows_d = NULL;
    if (st == NS_OK) st = alloc_up(gm, (void **)&rows_d, rows, np * sizeof *rows);
    free(addr);
    free(rows);
    *out = st == NS_OK ? rows_d : NULL;
    return st;
}

/* The connections' weight vectors of each point type (NET_RECEIVE's arguments:
 * the weight, then per-connection state), conn_w[k] connection k's within
 * its type's in creation order, from net.c's (the CPU loop's sim_net.wvec);
 * then NET_RECEIVE's INITIAL of each connection (events.c's
 * ns_net_events_init): per instance in creation order, after every INITIAL. */
static ns_status points_wvec(const ns_sim_t *sim, gpu_model *g, const int32_t *syn_slot, const int32_t *syn_inst,
                             int32_t *conn_w, cudaStream_t stream) {
    const sim_net *net = sim->net;
    int64_t *count = calloc((size_t)g->n_points + 1, sizeof *count);
    if (!count) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU weight vectors");
    ns_status st = NS_OK;
    for (int64_t k = 0; k < net->n_conns; ++k) {
        const int32_t t = syn_slot[net->conns[k].synapse];
        if (count[t] >= INT32_MAX) {
            st = ns_fail(NS_ERR_SIZE, "network: %lld connections to %s (the GPU loop takes < 2^31 per type)",
                         (long long)count[t], g->pt_desc[t]->name);
            break;
        }
        conn_w[k] = (int32_t)count[t]++;
    }
    for (int32_t t = 0; st == NS_OK && t < g->n_points; ++t) {
        const ns_mech_desc *d = g->pt_desc[t];
        gpu_mech *gm = &g->pt[t];
        const int nw = d->n_weights > 0 ? d->n_weights : 1;
        const int64_t n = count[t];
        double *w_h = malloc((size_t)(n > 0 ? n : 1) * (size_t)nw * sizeof *w_h);
        ns_mech_event *ev_h = d->cuda_net_init ? malloc((size_t)(n > 0 ? n : 1) * sizeof *ev_h) : NULL;
        int64_t *begin = d->cuda_net_init ? calloc((size_t)gm->p.n + 1, sizeof *begin) : NULL;
        if (!w_h || (d->cuda_net_init && (!ev_h || !begin))) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU weight vectors");
        for (int64_t k = 0; st == NS_OK && k < net->n_conns; ++k) {
            const net_conn *c = &net->conns[k];
            if (syn_slot[c->synapse] != t) continue;
            for (int a = 0; a < nw; ++a)
                w_h[(size_t)conn_w[k] * (size_t)nw + (size_t)a] = d->n_weights > 0 ? net->wvec[c->w_at + a] : c->weight;
            if (begin) begin[syn_inst[c->synapse] + 1]++;
        }
        double *w_d = NULL;
        if (st == NS_OK) st = alloc_up(gm, (void **)&w_d, w_h, (size_t)n * (size_t)nw * sizeof *w_h);
        gm->p.wvec = w_d;
        gm->p.dev.wvec_len = n * nw;
        if (st == NS_OK && begin && n > 0) { /* by instance, stable in creation order */
            for (int32_t i = 0; i < gm->p.n; ++i) begin[i + 1] += begin[i];
            for (int64_t k = 0; k < net->n_conns; ++k) {
                const net_conn *c = &net->conns[k];
                if (syn_slot[c->synapse] == t)
                    ev_h[begin[syn_inst[c->synapse]]++] = (ns_mech_event){0.0, c->weight, syn_inst[c->synapse], conn_w[k]};
            }
            const int64_t range[2] = {0, n};
            ns_mech_event *ev_d = NULL;
            int64_t *range_d = NULL;
            cudaError_t e = cudaMalloc((void **)&ev_d, (size_t)n * sizeof *ev_d);
            if (e == cudaSuccess) e = cudaMalloc((void **)&range_d, sizeof range);
            if (e == cudaSuccess) e = cudaMemcpy(ev_d, ev_h, (size_t)n * sizeof *ev_d, cudaMemcpyHostToDevice);
            if (e == cudaSuccess) e = cudaMemcpy(range_d, range, sizeof range, cudaMemcpyHostToDevice);
            if (e != cudaSuccess) st = ns_cuda_status(e, "network: NET_RECEIVE's INITIAL", __FILE__, __LINE__);
            set_time(gm, 0.0, sim);
            if (st == NS_OK) st = launched(d->cuda_net_init(&gm->p, ev_d, range_d, n, stream), "NET_RECEIVE's INITIAL", d->name);
            if (st == NS_OK) {
                e = cudaStreamSynchronize(stream); /* before the event list goes */
                if (e != cudaSuccess) st = ns_cuda_status(e, "cudaStreamSynchronize", __FILE__, __LINE__);
            }
            cudaFree(ev_d);
            cudaFree(range_d);
        }
        free(w_h);
        free(ev_h);
        free(begin);
    }
    free(count);
    return st;
}

ns_status ns_gpu_model_points_build(const ns_sim_t *sim, gpu_model *g, const int64_t *cell_id, const int64_t *cell_base,
                                    int64_t cells, int32_t *syn_slot, int32_t *syn_inst, int32_t *conn_w,
                                    cudaStream_t stream) {
    points_free(g);
    const sim_net *net = sim->net;
    const sim_model *model = g->model;
    if (!net || net->n_syns == 0) return NS_OK;
    /* the local cell of each global cell (-1: not in the group) */
    int64_t *local = malloc((size_t)sim->n_cells * sizeof *local);
    int32_t *pairs = malloc((size_t)(2 * (net->n_syns + 1)) * sizeof *pairs); /* (key, desc) of the types */
    ns_status st = local && pairs ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU synapses");
    int32_t n_types = 0;
    for (int64_t c = 0; st == NS_OK && c < sim->n_cells; ++c) local[c] = -1;
    for (int64_t j = 0; st == NS_OK && j < cells; ++j) local[cell_id[j]] = j;
    for (int64_t q = 0; st == NS_OK && q < net->n_syns; ++q) {
        if (local[net->syns[q].cell] < 0) {
            st = ns_fail(NS_ERR_INTERNAL, "network: the cell %lld of synapse %lld is not in the GPU tree group",
                         (long long)net->syns[q].cell, (long long)q);
            break;
        }
        int seen = 0;
        for (int32_t t = 0; t < n_types; ++t) seen |= pairs[2 * t + 1] == net->syns[q].desc;
        if (!seen) {
            pairs[2 * n_types] = ns_sim_model_key(model, net->syns[q].desc);
            pairs[2 * n_types + 1] = net->syns[q].desc;
            n_types++;
        }
    }
    if (st == NS_OK) qsort(pairs, (size_t)n_types, 2 * sizeof *pairs, cmp_pair);
    if (st == NS_OK) {
        g->pt = calloc((size_t)(n_types > 0 ? n_types : 1), sizeof *g->pt);
        g->pt_desc = calloc((size_t)(n_types > 0 ? n_types : 1), sizeof *g->pt_desc);
        g->pt_key = calloc((size_t)(n_types > 0 ? n_types : 1), sizeof *g->pt_key);
        if (!g->pt || !g->pt_desc || !g->pt_key) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU synapses");
    }
    if (st == NS_OK && n_types > 0) { /* the types' errors, none yet */
        cudaError_t c = cudaMalloc((void **)&g->pt_err, (size_t)n_types * sizeof *g->pt_err);
        if (c == cudaSuccess) c = cudaMemset(g->pt_err, 0, (size_t)n_types * sizeof *g->pt_err);
        if (c != cudaSuccess) st = ns_cuda_status(c, "network: GPU errors", __FILE__, __LINE__);
    }
    /* instances of a type: by local cell, then synapse id (a counting pass per type) */
    int64_t *ids = NULL;
    int32_t *nodes_h = NULL;
    double *w_h = NULL, *f_h = NULL;
    for (int32_t t = 0; t < n_types && st == NS_OK; ++t) {
        const int32_t di = pairs[2 * t + 1];
        const ns_mech_desc *d = model->descs[di];
        g->pt_desc[t] = d;
        g->pt_key[t] = pairs[2 * t];
        g->n_points = t + 1;
        gpu_mech *gm = &g->pt[t];
        if (d->events & NS_MECH_EV_NETCONS) { /* host-only: src/net/events.c */
            st = ns_fail(NS_ERR_UNSUPPORTED,
                         "network: synapse type %s: %s (FOR_NETCONS runs on the CPU loop): use the CPU backend "
                         "(docs/networks.md, \"Events\")",
                         d->name, d->cuda_why_not ? d->cuda_why_not : "uses FOR_NETCONS");
            break;
        }
        if (host_hooks(d)) {
            st = host_hooks_refused(d);
            break;
        }
        if (!d->cuda_init || !d->cuda_current || !d->cuda_state || (d->has_net_receive && !d->cuda_net_receive) ||
            (d->net_init && !d->cuda_net_init)) {
            /* an electrode (no NET_RECEIVE: SEClamp) is placed but never a target (ns_sim_connect) */
            st = ns_fail(NS_ERR_UNSUPPORTED,
                         "network: synapse type %s has no CUDA code%s%s%s: build its library with `neurosolve "
                         "mechanisms build --cuda` (or use the CPU backend)",
                         d->name, d->cuda_why_not ? " (" : "", d->cuda_why_not ? d->cuda_why_not : "",
                         d->cuda_why_not ? ")" : "");
            break;
        }
        int64_t cnt = 0;
        for (int64_t q = 0; q < net->n_syns; ++q) cnt += net->syns[q].desc == di;
        if (cnt >= INT32_MAX) {
            st = ns_fail(NS_ERR_SIZE, "network: %lld synapses of %s (the GPU loop takes < 2^31)", (long long)cnt,
                         d->name);
            break;
        }
        /* by local cell, stable in synapse id */
        int64_t *begin = calloc((size_t)cells + 1, sizeof *begin);
        ids = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *ids);
        nodes_h = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *nodes_h);
        w_h = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *w_h);
        f_h = calloc((size_t)d->n_fields * (size_t)cnt + 1, sizeof *f_h);
        if (!begin || !ids || !nodes_h || !w_h || !f_h) {
            free(begin);
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: GPU synapses");
            break;
        }
        for (int64_t q = 0; q < net->n_syns; ++q)
            if (net->syns[q].desc == di) begin[local[net->syns[q].cell] + 1]++;
        for (int64_t j = 0; j < cells; ++j) begin[j + 1] += begin[j];
        for (int64_t q = 0; q < net->n_syns; ++q)
            if (net->syns[q].desc == di) ids[begin[local[net->syns[q].cell]]++] = q;
        free(begin);
        for (int64_t i = 0; i < cnt; ++i) {
            const net_syn *sy = &net->syns[ids[i]];
            const int64_t j = local[sy->cell];
            nodes_h[i] = (int32_t)node_at(g, cell_base, j, sy->node);
            w_h[i] = sim->shapes[sim->cell_shape[sy->cell]].stim_scale[sy->node]; /* 1e2 / area, as the CPU */
            for (int p = 0; p < d->n_params; ++p) f_h[(size_t)p * (size_t)cnt + (size_t)i] = net->params[sy->param_at + p];
            for (int r = 0; r < d->has_random; ++r) { /* the streams, as the CPU loop's (ns_net_syn_random) */
                double v[4];
                ns_net_syn_random(net, d, ids[i], r, v);
                for (int u = 0; u < 4; ++u) f_h[(size_t)(d->random_field + 4 * r + u) * (size_t)cnt + (size_t)i] = v[u];
            }
            syn_slot[ids[i]] = t;
            syn_inst[ids[i]] = (int32_t)i;
        }
        const int nf = d->n_fields;
        double *fields_d = NULL, **fptr_d = NULL, *globals_d = NULL, *table_d = NULL, *w_d = NULL;
        int32_t *nodes_d = NULL;
        ns_mech_ion_view *ions_d = NULL;
        double *fptr_h[256];
        ns_mech_ion_view views[NS_SIM_MECH_IONS_MAX];
        if (nf > 256) st = ns_fail(NS_ERR_UNSUPPORTED, "network: %s has %d fields (GPU loop: at most 256)", d->name, nf);
        if (d->n_ions > NS_SIM_MECH_IONS_MAX)
            st = ns_fail(NS_ERR_UNSUPPORTED, "network: %s uses %d ions (at most %d)", d->name, d->n_ions,
                         NS_SIM_MECH_IONS_MAX);
        if (st == NS_OK) st = alloc_up(gm, (void **)&fields_d, f_h, (size_t)nf * (size_t)cnt * sizeof(double));
        gm->fields = fields_d;
        if (st == NS_OK) st = alloc_up(gm, (void **)&nodes_d, nodes_h, (size_t)cnt * sizeof(int32_t));
        if (st == NS_OK) st = alloc_up(gm, (void **)&w_d, w_h, (size_t)cnt * sizeof(double));
        for (int f = 0; st == NS_OK && f < nf; ++f) fptr_h[f] = fields_d + (size_t)f * (size_t)cnt;
        if (st == NS_OK) st = alloc_up(gm, (void **)&fptr_d, fptr_h, (size_t)nf * sizeof(double *));
        /* the mod file's GLOBALs, as the CPU loop's synapses */
        if (st == NS_OK)
            st = alloc_up(gm, (void **)&globals_d, d->global_defaults, (size_t)d->n_globals * sizeof(double));
        if (st == NS_OK) st = alloc_up(gm, (void **)&table_d, NULL, (size_t)d->table_size * sizeof(double));
        if (st == NS_OK && d->table_update && d->table_size > 0) {
            double *table = calloc((size_t)d->table_size, sizeof *table);
            double *glob = malloc((size_t)(d->n_globals > 0 ? d->n_globals : 1) * sizeof *glob);
            if (!table || !glob) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: TABLE of %s", d->name);
            if (st == NS_OK) {
                memcpy(glob, d->global_defaults, (size_t)d->n_globals * sizeof *glob);
                ns_mech_ppack hp;
                memset(&hp, 0, sizeof hp);
                hp.dt = sim->params.dt;
                hp.celsius = sim->params.celsius;
                hp.global = glob;
                hp.table = table;
                if (d->table_update(&hp)) {
                    if (cudaMemcpy(table_d, table, (size_t)d->table_size * sizeof *table, cudaMemcpyHostToDevice) !=
                        cudaSuccess)
                        st = ns_fail(NS_ERR_CUDA, "network: TABLE upload of %s", d->name);
                    if (st == NS_OK && d->n_globals > 0 &&
                        cudaMemcpy(globals_d, glob, (size_t)d->n_globals * sizeof *glob, cudaMemcpyHostToDevice) !=
                            cudaSuccess)
                        st = ns_fail(NS_ERR_CUDA, "network: globals of %s", d->name);
                }
            }
            free(table);
            free(glob);
        }
        for (int j = 0; st == NS_OK && j < d->n_ions; ++j) {
            int32_t ion = -1;
            for (int32_t q = 0; q < model->n_ions; ++q)
                if (strcmp(model->ions[q].name, d->ions[j].name) == 0) ion = q;
            if (ion < 0) {
                st = ns_fail(NS_ERR_UNSUPPORTED,
                             "network: synapse type %s uses the ion %s, which no mechanism of the model uses", d->name,
                             d->ions[j].name);
                break;
            }
            double *base = g->ion + (size_t)5 * (size_t)ion * (size_t)g->nodes;
            const size_t z = (size_t)g->nodes;
            const int keep = model->ions[ion].read_i;
            views[j] = (ns_mech_ion_view){base, base + z, base + 2 * z, keep ? base + 3 * z : NULL,
                                          keep ? base + 4 * z : NULL, NULL};
        }
        if (st == NS_OK)
            st = alloc_up(gm, (void **)&ions_d, views, (size_t)d->n_ions * sizeof(ns_mech_ion_view));
        double ***ptr_d = NULL;
        if (st == NS_OK && d->n_pointers > 0) st = points_pointers(sim, g, gm, d, ids, cnt, local, cell_id, cell_base, &ptr_d);
        const ns_mech_ftable *ftab_d = NULL;
        if (st == NS_OK) st = ftables_up(gm, d, model->ftables ? model->ftables[di] : NULL, &ftab_d);
        /* net_event's spike source of each instance (-1: none) */
        int64_t *src_h = d->events & DEV_EVENTS ? malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *src_h) : NULL;
        if (st == NS_OK && (d->events & DEV_EVENTS) && !src_h) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: events");
        for (int64_t i = 0; src_h && i < cnt; ++i) src_h[i] = net->syn_src[ids[i]];
        free(ids), free(nodes_h), free(w_h), free(f_h);
        ids = NULL, nodes_h = NULL, w_h = NULL, f_h = NULL;
        if (st != NS_OK) {
            free(src_h);
            break;
        }
        memset(&gm->p, 0, sizeof gm->p);
        gm->p.n = (int)cnt;
        gm->p.node_index = nodes_d;
        gm->p.v = g->v;
        gm->p.rhs = g->rhs;
        gm->p.d = g->d;
        gm->p.weight = w_d;
        gm->p.field = fptr_d;
        gm->p.global = globals_d;
        gm->p.table = table_d;
        gm->p.ion = ions_d;
        gm->p.area = g->geom;
        gm->p.diam = g->geom + g->nodes;
        gm->p.pointer = (double *const *const *)ptr_d;
        gm->p.error = g->pt_err + t;
        gm->p.ftable = ftab_d;
        if (src_h) st = dev_events(gm, d, cnt, src_h);
        free(src_h);
    }
    /* finitialize: BEFORE INITIAL, INITIAL in type order, after the density mechanisms' (its net_send
     * into the slots), AFTER INITIAL, BEFORE BREAKPOINT, BEFORE STEP, as the CPU loop (network_build.c) */
    if (st == NS_OK) st = hooks_run(sim, g, NS_MECH_BEFORE_INITIAL, 0.0, 0, 1, stream);
    for (int32_t t = 0; t < g->n_points && st == NS_OK; ++t) {
        set_time(&g->pt[t], 0.0, sim);
        st = launched(g->pt_desc[t]->cuda_init(&g->pt[t].p, stream), "INITIAL", g->pt_desc[t]->name);
    }
    static const int after[] = {NS_MECH_AFTER_INITIAL, NS_MECH_BEFORE_BREAKPOINT, NS_MECH_BEFORE_STEP};
    for (int q = 0; q < 3 && st == NS_OK; ++q) st = hooks_run(sim, g, after[q], 0.0, 0, 1, stream);
    free(ids), free(nodes_h), free(w_h), free(f_h);
    free(local);
    free(pairs);
    if (st == NS_OK) st = points_wvec(sim, g, syn_slot, syn_inst, conn_w, stream);
    if (st == NS_OK) NS_CUDA_TRY(cudaStreamSynchronize(stream));
    if (st == NS_OK) st = points_errors(g, "at finitialize");
    if (st != NS_OK) points_free(g);
    return st;
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
