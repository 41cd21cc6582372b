/* The gradient's GPU sweep (docs/gradients.md, "On the GPU"): grad.c's
 * step skeleton with every cell at once on the device. The forward pass
 * runs the mechanisms' CUDA entry points on the GPU loop's device model
 * (sim/cuda/mechanisms.h, all cells' instances in one launch per phase),
 * the clamps, the assembly and the Hines solve per cell (grad/cuda/grad.cu),
 * storing the state every K steps and the last segment's tape in device
 * memory (the CPU sweep's scheme and record: S, the fields after the
 * currents, x, d). The reverse step: the state products (cuda_vjp_state,
 * ABI 10), the transposed solve and the assembly's transpose per cell, the
 * current products (cuda_vjp_current); finitialize's (cuda_vjp_init). The
 * per-node adjoints of a, b and cap are summed over the steps by each
 * cell's thread, and the parameters' derivatives are formed from them on
 * the host by the CPU sweep's own code (grad_param_grad) in its order:
 * the same bits run to run. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grad/cuda/grad_cuda.h"
#include "grad/grad_impl.h"
#include "sim/cuda/mechanisms_impl.h"

typedef struct gdev {
    ns_grad_t *g;
    const ns_sim_t *sim;
    int64_t C, N, F, Sd, R, K, n_ck, FN;
    int32_t M;
    int64_t *base, *cell_id;  /* host: cells + 1, cells */
    int64_t *foff;            /* host: mechanism k's fields at S + foff[k] (from N) */
    int64_t *ib;              /* host: M x cells: the cell's first instance of mechanism k */
    double **pre;             /* host: per mechanism its fields before INITIAL (field-major over all cells) */
    gpu_model *gm;
    grad_dev_cells dc;
    double *v, *rhs, *d, *x, *dw, *ck, *tape, *lS, *lSn, *lFc, *y, *ld, *vn, *la, *lb, *lcap, *lo;
    double *traces, *dldy, *vinit;
    int64_t *fault;
    double **fp;              /* device: 2 K sets of FN field pointers (a record's S, its fields after the currents) */
    int32_t *fpoff;           /* host: mechanism k's first pointer in a set */
    void *allocs[48];
    int n_allocs;
    size_t bytes;
} gdev;

static ns_status dalloc(gdev *d, void *ptr, size_t bytes, const void *src) {
    void **p = (void **)ptr;
    if (cudaMalloc(p, bytes ? bytes : 8) != cudaSuccess)
        return ns_fail(NS_ERR_DEVICE_MEMORY, "gradient on the GPU: %zu bytes of device memory", bytes);
    d->allocs[d->n_allocs++] = *p;
    d->bytes += bytes;
    if (src && bytes && cudaMemcpy(*p, src, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        return ns_fail(NS_ERR_CUDA, "gradient on the GPU: upload");
    return NS_OK;
}

static ns_status cu(cudaError_t e, const char *what) {
    return e == cudaSuccess ? NS_OK : ns_fail(NS_ERR_CUDA, "gradient on the GPU: %s: %s", what, cudaGetErrorString(e));
}

static void gdev_free(gdev *d) {
    if (d->gm) ns_gpu_model_free(d->gm);
    for (int i = 0; i < d->n_allocs; ++i) cudaFree(d->allocs[i]);
    for (int32_t k = 0; d->pre && k < d->M; ++k) free(d->pre[k]);
    free(d->pre);
    free(d->base);
    free(d->cell_id);
    free(d->foff);
    free(d->ib);
    free(d->fpoff);
}

static const ns_mech_desc *desc_of(const gdev *d, int32_t k) { return d->sim->model->mechs[k].desc; }
static int64_t count_of(const gdev *d, int32_t k) { return d->gm->m[k].p.n; }

/* The cells' constants: nodes, parents, a, b, cap with the parameters, clamps, sites */
static ns_status upload_cells(gdev *d) {
    ns_grad_t *g = d->g;
    const ns_sim_t *sim = d->sim;
    const int64_t C = d->C, N = d->N;
    int64_t n_stims = 0;
    for (int64_t c = 0; c < C; ++c) n_stims += g->cells[c].n_stims;
    int32_t *ncell = malloc((size_t)N * sizeof *ncell), *par = malloc((size_t)N * sizeof *par);
    double *abc = malloc(3 * (size_t)N * sizeof *abc), *vi = malloc((size_t)C * sizeof *vi);
    int64_t *sb = malloc((size_t)(C + 1) * sizeof *sb), *rb = calloc((size_t)C + 1, sizeof *rb);
    int32_t *sn = malloc((size_t)(n_stims + 1) * sizeof *sn), *rs = malloc((size_t)(sim->n_recs + 1) * sizeof *rs);
    double *sv = malloc(4 * (size_t)(n_stims + 1) * sizeof *sv);
    int64_t *rn = malloc((size_t)(sim->n_recs + 1) * sizeof *rn);
    ns_status st = ncell && par && abc && vi && sb && rb && sn && rs && sv && rn
                       ? NS_OK
                       : ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: %lld cells", (long long)C);
    for (int64_t c = 0, q = 0; st == NS_OK && c < C; ++c) {
        gcell *gc = &g->cells[c];
        const sim_shape *s = &sim->shapes[gc->shape];
        grad_apply_cable(g, gc);
        vi[c] = gc->v_init;
        for (int32_t i = 0; i < gc->n; ++i) {
            const int64_t o = d->base[c] + i;
            ncell[o] = (int32_t)c;
            par[o] = s->parent[i];
            abc[o] = gc->a[i];
            abc[N + o] = gc->b[i];
            abc[2 * N + o] = gc->cap[i];
        }
        sb[c] = q;
        for (int32_t j = 0; j < gc->n_stims; ++j, ++q) {
            const sim_stim *t = &gc->stims[j];
            sn[q] = t->node;
            sv[q] = t->del;
            sv[n_stims + q] = t->dur;
            sv[2 * n_stims + q] = t->amp;
            sv[3 * n_stims + q] = s->stim_scale[t->node];
        }
        sb[c + 1] = q;
    }
    /* the sites of each cell in site order */
    for (int32_t k = 0; st == NS_OK && k < sim->n_recs; ++k) {
        rb[sim->recs[k].cell + 1]++;
        rn[k] = d->base[sim->recs[k].cell] + sim->recs[k].node;
    }
    for (int64_t c = 0; st == NS_OK && c < C; ++c) rb[c + 1] += rb[c];
    int64_t *cur = st == NS_OK ? malloc((size_t)(C + 1) * sizeof *cur) : NULL;
    if (st == NS_OK && !cur) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: sites");
    if (cur) memcpy(cur, rb, (size_t)(C + 1) * sizeof *cur);
    for (int32_t k = 0; cur && k < sim->n_recs; ++k) rs[cur[sim->recs[k].cell]++] = k;
    free(cur);
    grad_dev_cells *dc = &d->dc;
    dc->cells = C;
    dc->nodes = N;
    dc->n_sites = sim->n_recs;
    if (st == NS_OK) st = dalloc(d, &dc->base, (size_t)(C + 1) * sizeof(int64_t), d->base);
    if (st == NS_OK) st = dalloc(d, &dc->node_cell, (size_t)N * sizeof(int32_t), ncell);
    if (st == NS_OK) st = dalloc(d, &dc->parent, (size_t)N * sizeof(int32_t), par);
    double *abc_d = NULL, *sv_d = NULL;
    if (st == NS_OK) st = dalloc(d, &abc_d, 3 * (size_t)N * sizeof(double), abc);
    if (st == NS_OK) st = dalloc(d, &d->vinit, (size_t)C * sizeof(double), vi);
    if (st == NS_OK) st = dalloc(d, &dc->stim_begin, (size_t)(C + 1) * sizeof(int64_t), sb);
    if (st == NS_OK) st = dalloc(d, &dc->stim_node, (size_t)(n_stims + 1) * sizeof(int32_t), sn);
    if (st == NS_OK) st = dalloc(d, &sv_d, 4 * (size_t)(n_stims + 1) * sizeof(double), sv);
    if (st == NS_OK) st = dalloc(d, &dc->site_begin, (size_t)(C + 1) * sizeof(int64_t), rb);
    if (st == NS_OK) st = dalloc(d, &dc->site, (size_t)(sim->n_recs + 1) * sizeof(int32_t), rs);
    if (st == NS_OK) st = dalloc(d, &dc->site_node, (size_t)(sim->n_recs + 1) * sizeof(int64_t), rn);
    if (st == NS_OK) {
        dc->a = abc_d;
        dc->b = abc_d + N;
        dc->cap = abc_d + 2 * N;
        dc->v_init = d->vinit;
        dc->stim_del = sv_d;
        dc->stim_dur = sv_d + n_stims;
        dc->stim_amp = sv_d + 2 * n_stims;
        dc->stim_scale = sv_d + 3 * n_stims;
    }
    free(ncell);
    free(par);
    free(abc);
    free(vi);
    free(sb);
    free(rb);
    free(sn);
    free(rs);
    free(sv);
    free(rn);
    return st;
}

/* Mechanism k's fields before INITIAL over all cells (grad_pre_init_fields per cell) */
static ns_status pre_fields(gdev *d) {
    d->pre = calloc((size_t)d->M + 1, sizeof *d->pre);
    if (!d->pre) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: fields");
    for (int32_t k = 0; k < d->M; ++k) {
        const int nf = desc_of(d, k)->n_fields;
        const int64_t cnt = count_of(d, k);
        int64_t most = 1;
        for (int64_t c = 0; c < d->C; ++c) {
            const int64_t ni = d->ib[(size_t)k * (size_t)(d->C + 1) + (size_t)c + 1] - d->ib[(size_t)k * (size_t)(d->C + 1) + (size_t)c];
            most = ni > most ? ni : most;
        }
        d->pre[k] = malloc(((size_t)nf * (size_t)cnt + 1) * sizeof(double));
        double *F = malloc((size_t)nf * (size_t)most * sizeof *F + 8);
        if (!d->pre[k] || !F) {
            free(F);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: fields");
        }
        for (int64_t c = 0; c < d->C; ++c) {
            const int64_t i0 = d->ib[(size_t)k * (size_t)(d->C + 1) + (size_t)c];
            const int64_t ni = d->ib[(size_t)k * (size_t)(d->C + 1) + (size_t)c + 1] - i0;
            grad_pre_init_fields(d->g, &d->g->cells[c], k, F);
            for (int f = 0; f < nf; ++f)
                memcpy(d->pre[k] + (size_t)f * (size_t)cnt + (size_t)i0, F + (size_t)f * (size_t)ni,
                       (size_t)ni * sizeof *F);
        }
        free(F);
    }
    return NS_OK;
}

/* The layout: cells, the device model, the state's offsets, the stored states and the work */
static ns_status setup(gdev *d, const run_ctx *r) {
    const ns_sim_t *sim = d->sim;
    const sim_model *model = sim->model;
    d->C = d->g->n_cells;
    d->M = model->n_mechs;
    d->base = malloc((size_t)(d->C + 1) * sizeof *d->base);
    d->cell_id = malloc((size_t)(d->C + 1) * sizeof *d->cell_id);
    d->foff = malloc((size_t)(d->M + 1) * sizeof *d->foff);
    d->fpoff = malloc((size_t)(d->M + 1) * sizeof *d->fpoff);
    d->ib = calloc((size_t)(d->M + 1) * (size_t)(d->C + 1), sizeof *d->ib);
    if (!d->base || !d->cell_id || !d->foff || !d->fpoff || !d->ib)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: %lld cells", (long long)d->C);
    d->base[0] = 0;
    for (int64_t c = 0; c < d->C; ++c) {
        d->cell_id[c] = c;
        d->base[c + 1] = d->base[c] + d->g->cells[c].n;
    }
    d->N = d->base[d->C];
    const size_t N = (size_t)d->N;
    ns_status st = dalloc(d, &d->v, 3 * N * sizeof(double), NULL);
    if (st) return st;
    d->rhs = d->v + N;
    d->d = d->v + 2 * N;
    if ((st = ns_gpu_model_create(sim, d->cell_id, d->base, d->C, NULL, d->v, d->rhs, d->d, &d->gm)) != NS_OK)
        return st;
    int64_t F = 0, most = 1;
    int32_t FN = 0;
    for (int32_t k = 0; k < d->M; ++k) {
        const ns_mech_desc *de = desc_of(d, k);
        d->foff[k] = d->N + F;
        d->fpoff[k] = FN;
        F += (int64_t)de->n_fields * count_of(d, k);
        FN += de->n_fields;
        /* a product's l_out (the fields, rhs, d) and its GLOBALs' and ions' rows (scratch) */
        const int64_t lo = (int64_t)(de->n_fields + 2 + de->n_globals + 4 * de->n_ions) * count_of(d, k);
        most = lo > most ? lo : most;
        int64_t *ib = d->ib + (size_t)k * (size_t)(d->C + 1);
        for (int64_t c = 0; c < d->C; ++c)
            ib[c + 1] = ib[c] + model->per_shape[(size_t)d->g->cells[c].shape * (size_t)d->M + (size_t)k].n;
        if (ib[d->C] != count_of(d, k))
            return ns_fail(NS_ERR_INTERNAL, "gradient on the GPU: %s: %lld instances, the device model's %lld", de->name,
                           (long long)ib[d->C], (long long)count_of(d, k));
    }
    d->foff[d->M] = d->N + F;
    d->F = F;
    d->FN = FN;
    d->Sd = d->N + F;
    d->R = d->Sd + F + 2 * d->N;
    d->K = r->K;
    d->n_ck = (r->steps + r->K - 1) / r->K;
    const size_t Sd = (size_t)d->Sd, n_samp = (size_t)r->samples * (size_t)sim->n_recs;
    if ((st = upload_cells(d)) != NS_OK || (st = pre_fields(d)) != NS_OK) return st;
    /* the checkpoints, the segment's tape, the adjoints (lS, lSn: Sd each; lFc: F) and the work */
    double *w = NULL;
    const size_t work = (size_t)d->n_ck * Sd + (size_t)d->K * (size_t)d->R + 2 * Sd + (size_t)F + 8 * N + (size_t)most +
                        2 * n_samp + 1; /* ..., the traces and the loss's adjoints */
    if ((st = dalloc(d, &w, work * sizeof(double), NULL)) != NS_OK) return st;
    d->ck = w;
    d->tape = d->ck + (size_t)d->n_ck * Sd;
    d->lS = d->tape + (size_t)d->K * (size_t)d->R;
    d->lSn = d->lS + Sd;
    d->lFc = d->lSn + Sd;
    d->x = d->lFc + F;
    d->dw = d->x + N;
    d->y = d->dw + N;
    d->ld = d->y + N;
    d->vn = d->ld + N;
    d->la = d->vn + N;
    d->lb = d->la + N;
    d->lcap = d->lb + N;
    d->lo = d->lcap + N;
    d->traces = d->lo + most;
    d->dldy = d->traces + n_samp;
    if ((st = dalloc(d, &d->fault, (size_t)d->C * sizeof(int64_t), NULL)) != NS_OK) return st;
    /* the field pointers of each record: its S's, its fields after the currents */
    double **fp = malloc((2 * (size_t)d->K * (size_t)FN + 1) * sizeof *fp);
    if (!fp) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: field pointers");
    for (int64_t q = 0; q < d->K; ++q)
        for (int32_t k = 0; k < d->M; ++k)
            for (int f = 0; f < desc_of(d, k)->n_fields; ++f) {
                double *T = d->tape + (size_t)q * (size_t)d->R;
                const size_t o = (size_t)(d->foff[k] + (int64_t)f * count_of(d, k));
                fp[(size_t)(2 * q) * (size_t)FN + (size_t)(d->fpoff[k] + f)] = T + o;
                fp[(size_t)(2 * q + 1) * (size_t)FN + (size_t)(d->fpoff[k] + f)] = T + (size_t)d->F + o; /* after S */
            }
    st = dalloc(d, &d->fp, (2 * (size_t)d->K * (size_t)FN + 1) * sizeof *fp, fp);
    free(fp);
    return st;
}

/* The state S (v, then each mechanism's fields) into or out of the device buffer at S */
static ns_status copy_state(gdev *d, double *S, int save) {
    const enum cudaMemcpyKind kind = cudaMemcpyDeviceToDevice;
    ns_status st = cu(save ? cudaMemcpyAsync(S, d->v, (size_t)d->N * sizeof *S, kind, 0)
                           : cudaMemcpyAsync(d->v, S, (size_t)d->N * sizeof *S, kind, 0),
                      "state");
    for (int32_t k = 0; st == NS_OK && k < d->M; ++k) {
        const size_t bytes = (size_t)desc_of(d, k)->n_fields * (size_t)count_of(d, k) * sizeof *S;
        double *f = d->gm->m[k].fields;
        st = cu(save ? cudaMemcpyAsync(S + d->foff[k], f, bytes, kind, 0)
                     : cudaMemcpyAsync(f, S + d->foff[k], bytes, kind, 0),
                "state");
    }
    return st;
}

/* finitialize with the parameters' values (grad.c's initialize): v = v_init, the device
 * model's ions and TABLEs, then each mechanism's fields before INITIAL and its INITIAL */
static ns_status initialize(gdev *d) {
    const ns_sim_t *sim = d->sim;
    ns_status st = cu(grad_launch_vinit(&d->dc, d->v, 0), "v_init");
    if (st == NS_OK) st = ns_gpu_model_init(sim, d->gm, d->cell_id, d->base, d->C, 0);
    for (int32_t k = 0; st == NS_OK && k < d->M; ++k) {
        gpu_mech *m = &d->gm->m[k];
        if (m->p.n == 0) continue;
        st = cu(cudaMemcpy(m->fields, d->pre[k], (size_t)desc_of(d, k)->n_fields * (size_t)m->p.n * sizeof(double),
                           cudaMemcpyHostToDevice),
                "fields before INITIAL");
        set_time(m, 0.0, sim);
        if (st == NS_OK) st = launched(desc_of(d, k)->cuda_init(&m->p, 0), "INITIAL", desc_of(d, k)->name);
    }
    return st;
}

/* One step from the device state at t (grad.c's step); rec: its record (S, the fields after
 * the currents, x, d), or NULL */
static ns_status dstep(gdev *d, int64_t n, double t, double *rec) {
    const ns_sim_t *sim = d->sim;
    const double dt = sim->params.dt, tm = ns_sim_half_step(t, dt), t1 = ns_sim_half_step(tm, dt);
    const size_t N = (size_t)d->N;
    ns_status st = rec ? copy_state(d, rec, 1) : NS_OK;
    if (st == NS_OK) st = ns_gpu_model_currents(sim, d->gm, d->rhs, d->d, tm, 0);
    if (st == NS_OK && rec) {
        for (int32_t k = 0; st == NS_OK && k < d->M; ++k)
            st = cu(cudaMemcpyAsync(rec + d->F + d->foff[k], d->gm->m[k].fields,
                                    (size_t)desc_of(d, k)->n_fields * (size_t)count_of(d, k) * sizeof *rec,
                                    cudaMemcpyDeviceToDevice, 0),
                    "tape");
    }
    double *x = rec ? rec + d->Sd + d->F : d->x;
    if (st == NS_OK) st = cu(grad_launch_solve(&d->dc, tm, d->v, d->rhs, d->d, x, d->dw, n, d->fault, 0), "solve");
    if (st == NS_OK && rec)
        st = cu(cudaMemcpyAsync(x + N, d->d, N * sizeof *x, cudaMemcpyDeviceToDevice, 0), "tape");
    return st == NS_OK ? ns_gpu_model_states(sim, d->gm, t1, 0) : st;
}

/* A mechanism's ppack for a product: its device storage with v and the fields given */
static ns_mech_ppack bound(const gdev *d, int32_t k, const double *v, int64_t set, double t) {
    ns_mech_ppack p = d->gm->m[k].p;
    p.v = (double *)v;
    if (set >= 0) p.field = d->fp + (size_t)set * (size_t)d->FN + (size_t)d->fpoff[k];
    p.t = t;
    p.dt = d->sim->params.dt;
    p.celsius = d->sim->params.celsius;
    return p;
}

/* From record q of the segment (at time t) and lS, the adjoint of S^{n+1}: lS becomes that of
 * S^n (grad.c's reverse_step without the ions and the synapses) */
static ns_status rstep(gdev *d, int64_t q, double t) {
    const ns_sim_t *sim = d->sim;
    const double dt = sim->params.dt, tm = ns_sim_half_step(t, dt), t1 = ns_sim_half_step(tm, dt);
    const size_t N = (size_t)d->N;
    const double *S = d->tape + (size_t)q * (size_t)d->R, *x = S + d->Sd + d->F, *dd = x + N;
    ns_status st = cu(grad_launch_add(S, x, d->vn, d->N, 0), "vn");
    if (st == NS_OK) st = cu(cudaMemsetAsync(d->lFc, 0, (size_t)d->F * sizeof *d->lFc, 0), "clear");
    for (int32_t k = 0; st == NS_OK && k < d->M; ++k) {
        if (count_of(d, k) == 0) continue;
        const ns_mech_ppack p = bound(d, k, d->vn, 2 * q + 1, t1);
        const int64_t o = d->foff[k];
        st = launched(desc_of(d, k)->cuda_vjp_state(&p, d->lS + o, d->lS, d->lFc + (o - d->N), d->lo, 0),
                      "the state product", desc_of(d, k)->name);
    }
    if (st == NS_OK)
        st = cu(grad_launch_rsolve(&d->dc, S, x, dd, d->lS, d->y, d->ld, d->lSn, d->la, d->lb, d->lcap, 0),
                "transposed solve");
    if (st == NS_OK) st = cu(cudaMemsetAsync(d->lSn + N, 0, (size_t)d->F * sizeof *d->lSn, 0), "clear");
    for (int32_t k = 0; st == NS_OK && k < d->M; ++k) {
        const int64_t n = count_of(d, k), o = d->foff[k];
        if (n == 0) continue;
        const int nf = desc_of(d, k)->n_fields;
        const ns_mech_ppack p = bound(d, k, S, 2 * q, tm);
        st = cu(cudaMemcpyAsync(d->lo, d->lFc + (o - d->N), (size_t)nf * (size_t)n * sizeof *d->lo,
                                cudaMemcpyDeviceToDevice, 0),
                "gather");
        if (st == NS_OK) st = cu(grad_launch_gather(p.node_index, n, nf, d->y, d->ld, d->lo, 0), "gather");
        if (st == NS_OK)
            st = launched(desc_of(d, k)->cuda_vjp_current(&p, d->lo, d->lSn, d->lSn + o,
                                                          d->lo + (size_t)(nf + 2) * (size_t)n, 0),
                          "the current product", desc_of(d, k)->name);
    }
    double *sw = d->lS;
    d->lS = d->lSn;
    d->lSn = sw;
    return st;
}

static ns_status record_row(gdev *d, int64_t step) {
    const int64_t every = d->sim->options.record_every;
    if (step % every || d->sim->n_recs == 0) return NS_OK;
    return cu(grad_launch_record(&d->dc, d->v, d->traces + (size_t)(step / every) * (size_t)d->sim->n_recs, 0),
              "record");
}

static ns_status loss_adjoint(gdev *d, int64_t step) {
    const int64_t every = d->sim->options.record_every;
    if (step % every || d->sim->n_recs == 0) return NS_OK;
    return cu(grad_launch_loss(&d->dc, d->dldy + (size_t)(step / every) * (size_t)d->sim->n_recs, d->lS, 0), "loss");
}

/* The forward pass (grad.c's forward_cell for every cell): checkpoints, the last segment's
 * tape, the traces into r->traces; times: the checkpoints' */
static ns_status forward(gdev *d, const run_ctx *r, double *ck_t) {
    const double dt = d->sim->params.dt;
    ns_status st = cu(cudaMemset(d->fault, 0, (size_t)d->C * sizeof *d->fault), "faults");
    if (st == NS_OK) st = initialize(d);
    if (st == NS_OK) st = record_row(d, 0);
    const int64_t n_last = (d->n_ck - 1) * d->K;
    double t = 0.0;
    for (int64_t n = 0; n < r->steps && st == NS_OK; ++n) {
        if (n % d->K == 0) {
            st = copy_state(d, d->ck + (size_t)(n / d->K) * (size_t)d->Sd, 1);
            ck_t[n / d->K] = t;
        }
        if (st == NS_OK) st = dstep(d, n, t, n >= n_last ? d->tape + (size_t)(n - n_last) * (size_t)d->R : NULL);
        t = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
        if (st == NS_OK) st = record_row(d, n + 1);
    }
    const size_t n_samp = (size_t)r->samples * (size_t)d->sim->n_recs;
    if (st == NS_OK)
        st = cu(cudaMemcpy(r->traces, d->traces, n_samp * sizeof *r->traces, cudaMemcpyDeviceToHost), "traces");
    if (st == NS_OK)
        st = cu(cudaMemcpy(r->fault_step, d->fault, (size_t)d->C * sizeof *d->fault, cudaMemcpyDeviceToHost), "faults");
    if (st != NS_OK) return st;
    for (int64_t c = 0; c < d->C; ++c)
        if (r->fault_step[c]) { /* the first compartment not finite at the end (the CPU sweep: at the step) */
            double *v = malloc((size_t)d->g->cells[c].n * sizeof *v);
            if (v && cudaMemcpy(v, d->v + d->base[c], (size_t)d->g->cells[c].n * sizeof *v, cudaMemcpyDeviceToHost) ==
                         cudaSuccess)
                while (r->fault_node[c] < d->g->cells[c].n - 1 && isfinite(v[r->fault_node[c]])) r->fault_node[c]++;
            free(v);
            return NS_OK;
        }
    /* the loss's adjoint of each sample */
    double *l = malloc((n_samp + 1) * sizeof *l);
    if (!l) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: samples");
    for (int64_t s = 0; s < r->samples; ++s)
        for (int32_t k = 0; k < d->sim->n_recs; ++k)
            l[(size_t)s * (size_t)d->sim->n_recs + (size_t)k] = grad_dl_dy(d->g, r, s, k);
    st = cu(cudaMemcpy(d->dldy, l, n_samp * sizeof *l, cudaMemcpyHostToDevice), "the loss's adjoints");
    free(l);
    return st;
}

/* The reverse sweep (grad.c's reverse_cell for every cell), to lS = l(S^0) */
static ns_status reverse(gdev *d, const run_ctx *r, const double *ck_t) {
    const double dt = d->sim->params.dt;
    const size_t N = (size_t)d->N;
    double *times = malloc((size_t)d->K * sizeof *times);
    if (!times) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: times");
    ns_status st = cu(cudaMemset(d->lS, 0, (size_t)d->Sd * sizeof *d->lS), "clear");
    if (st == NS_OK) st = cu(cudaMemset(d->la, 0, 3 * N * sizeof *d->la), "clear"); /* la, lb, lcap */
    for (int64_t c = d->n_ck - 1; c >= 0 && st == NS_OK; --c) {
        const int64_t n0 = c * d->K, n1 = n0 + d->K < r->steps ? n0 + d->K : r->steps;
        double t = ck_t[c];
        if (c < d->n_ck - 1) st = copy_state(d, d->ck + (size_t)c * (size_t)d->Sd, 0);
        for (int64_t q = n0; q < n1 && st == NS_OK; ++q) {
            times[q - n0] = t;
            if (c < d->n_ck - 1) st = dstep(d, q, t, d->tape + (size_t)(q - n0) * (size_t)d->R);
            t = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
        }
        for (int64_t q = n1 - 1; q >= n0 && st == NS_OK; --q) {
            st = loss_adjoint(d, q + 1);
            if (st == NS_OK) st = rstep(d, q - n0, times[q - n0]);
        }
    }
    free(times);
    return st == NS_OK ? loss_adjoint(d, 0) : st;
}

/* finitialize's transpose into lSn (v's, the fields' before INITIAL), then every cell's
 * adjoints into its host arrays and its parameters' derivatives by grad_param_grad */
static ns_status collect(gdev *d, double *gval) {
    ns_grad_t *g = d->g;
    const ns_sim_t *sim = d->sim;
    ns_status st = cu(grad_launch_vinit(&d->dc, d->v, 0), "v_init");
    if (st == NS_OK) st = cu(cudaMemset(d->lSn, 0, (size_t)d->Sd * sizeof *d->lSn), "clear");
    for (int32_t k = 0; st == NS_OK && k < d->M; ++k) {
        gpu_mech *m = &d->gm->m[k];
        if (m->p.n == 0) continue;
        const int nf = desc_of(d, k)->n_fields;
        st = cu(cudaMemcpy(m->fields, d->pre[k], (size_t)nf * (size_t)m->p.n * sizeof(double), cudaMemcpyHostToDevice),
                "fields before INITIAL");
        const ns_mech_ppack p = bound(d, k, d->v, -1, 0.0);
        if (st == NS_OK)
            st = launched(desc_of(d, k)->cuda_vjp_init(&p, d->lS + d->foff[k], d->lSn, d->lSn + d->foff[k], d->lo, 0),
                          "the INITIAL product", desc_of(d, k)->name);
    }
    const size_t N = (size_t)d->N, Sd = (size_t)d->Sd;
    double *h = st == NS_OK ? malloc((2 * Sd + 3 * N) * sizeof *h) : NULL;
    if (st == NS_OK && !h) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: adjoints");
    if (st == NS_OK) st = cu(cudaMemcpy(h, d->lS, Sd * sizeof *h, cudaMemcpyDeviceToHost), "adjoints");
    if (st == NS_OK) st = cu(cudaMemcpy(h + Sd, d->lSn, Sd * sizeof *h, cudaMemcpyDeviceToHost), "adjoints");
    if (st == NS_OK) st = cu(cudaMemcpy(h + 2 * Sd, d->la, 3 * N * sizeof *h, cudaMemcpyDeviceToHost), "adjoints");
    for (int64_t c = 0; st == NS_OK && c < d->C; ++c) {
        gcell *gc = &g->cells[c];
        const size_t o = (size_t)d->base[c], n = (size_t)gc->n;
        memcpy(gc->la, h + 2 * Sd + o, n * sizeof *h);
        memcpy(gc->lb, h + 2 * Sd + N + o, n * sizeof *h);
        memcpy(gc->lcap, h + 2 * Sd + 2 * N + o, n * sizeof *h);
        double l_vnodes = 0.0;
        for (size_t i = 0; i < n; ++i) l_vnodes += h[o + i] + h[Sd + o + i];
        gc->l_vinit = l_vnodes;
        int64_t co = gc->n; /* the cell's fields in its own S (grad.c's field_off) */
        for (int32_t k = 0; k < d->M; ++k) {
            const int nf = desc_of(d, k)->n_fields;
            const int64_t *ib = d->ib + (size_t)k * (size_t)(d->C + 1), ni = ib[c + 1] - ib[c];
            for (int f = 0; f < nf; ++f)
                memcpy(gc->lSn + co + (int64_t)f * ni, h + Sd + (size_t)(d->foff[k] + (int64_t)f * count_of(d, k) + ib[c]),
                       (size_t)ni * sizeof *h);
            co += (int64_t)nf * ni;
        }
        for (int32_t q = 0; q < g->n_params; ++q)
            if (g->params[q].cell == c)
                gval[(size_t)c * (size_t)(g->n_params + 1) + (size_t)q] = grad_param_grad(g, gc, &g->params[q]);
    }
    free(h);
    (void)sim;
    return st;
}

ns_status grad_cuda_sweep(ns_grad_t *g, const run_ctx *r, double *gval, size_t *bytes) {
    gdev d;
    memset(&d, 0, sizeof d);
    d.g = g;
    d.sim = g->sim;
    if (g->sim->device >= 0 && cudaSetDevice(g->sim->device) != cudaSuccess)
        return ns_fail(NS_ERR_CUDA, "gradient on the GPU: device %d", g->sim->device);
    ns_status st = setup(&d, r);
    double *ck_t = st == NS_OK ? malloc((size_t)d.n_ck * sizeof *ck_t) : NULL;
    if (st == NS_OK && !ck_t) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient on the GPU: times");
    if (st == NS_OK) st = forward(&d, r, ck_t);
    int fault = 0;
    for (int64_t c = 0; st == NS_OK && c < d.C; ++c) fault |= r->fault_step[c] != 0;
    if (st == NS_OK && !fault) st = reverse(&d, r, ck_t);
    if (st == NS_OK && !fault) st = collect(&d, gval);
    if (st == NS_OK) st = cu(cudaDeviceSynchronize(), "the sweep");
    /* the model's device storage: v, rhs, d (counted) and the fields (about F doubles) */
    *bytes = d.bytes + (size_t)d.F * sizeof(double);
    free(ck_t);
    gdev_free(&d);
    return st;
}
