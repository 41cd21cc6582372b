/* The per-step path's fused launches of a library (sim/cuda/library_fused.h):
 * the rule's facts, the maps over the tree group and the launches. */
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/library_fused.h"
#include "sim/policy.h"
#include "core/cuda_check.h"
#include "core/error.h"

struct gpu_libfused {
    ns_mech_fused f;        /* device maps and slots; slot range, t set per launch */
    ns_mech_cuda_fused_fn current, state;
    int32_t n_mechs;
    int32_t *slot_of;       /* host: per model mechanism, its slot or -1 */
    void *allocs[8];
    int n_allocs;
};

void ns_gpu_libfused_free(gpu_libfused *lf) {
    if (!lf) return;
    for (int a = 0; a < lf->n_allocs; ++a) cudaFree(lf->allocs[a]);
    free(lf->slot_of);
    free(lf);
}

static ns_status up(gpu_libfused *lf, const void **dst, const void *src, size_t bytes) {
    void *p = NULL;
    NS_CUDA_TRY(cudaMalloc(&p, bytes ? bytes : 8));
    lf->allocs[lf->n_allocs++] = p;
    *dst = p;
    if (bytes) NS_CUDA_TRY(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice));
    return NS_OK;
}

int32_t ns_gpu_libfused_slot(const gpu_libfused *lf, int32_t k) {
    return lf && k >= 0 && k < lf->n_mechs ? lf->slot_of[k] : -1;
}

/* The maps of ns_mech_fused over the group: per node its cell; per distinct
 * shape a row per compartment with its members (slot << 24 | rank: the
 * instance's index within the cell, ms->node being ascending); per cell and
 * slot the first instance (instances cell by cell, ns_gpu_model_create's
 * numbering). */
static ns_status build_maps(const ns_sim_t *sim, gpu_libfused *lf, const int32_t *mech_of, int32_t n_slots,
                            const int64_t *cell_id, const int64_t *cell_base, int64_t cells) {
    const sim_model *model = sim->model;
    const int64_t nodes = cell_base[cells];
    int32_t *node_cell = malloc((size_t)(nodes > 0 ? nodes : 1) * sizeof *node_cell);
    int32_t *cell_row = malloc((size_t)(cells > 0 ? cells : 1) * sizeof *cell_row);
    int32_t *cell_inst = malloc((size_t)(cells > 0 ? cells : 1) * (size_t)n_slots * sizeof *cell_inst);
    int32_t *row0 = malloc((size_t)model->n_shapes * sizeof *row0);
    int64_t *at = calloc((size_t)n_slots, sizeof *at);
    int32_t *row_begin = NULL, *entries = NULL;
    ns_status st = NS_OK;
    if (!node_cell || !cell_row || !cell_inst || !row0 || !at) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused maps");
    /* the distinct shapes' rows, in the order the cells first name them */
    int64_t rows = 0, n_entries = 0;
    for (int32_t s = 0; st == NS_OK && s < model->n_shapes; ++s) row0[s] = -1;
    for (int64_t j = 0; st == NS_OK && j < cells; ++j) {
        const int32_t sh = sim->cell_shape[cell_id[j]];
        if (row0[sh] >= 0) continue;
        row0[sh] = (int32_t)rows;
        rows += sim->shapes[sh].n;
        for (int32_t s = 0; s < n_slots; ++s) n_entries += model->per_shape[(size_t)sh * model->n_mechs + mech_of[s]].n;
    }
    if (st == NS_OK && (rows >= INT32_MAX || n_entries >= INT32_MAX))
        st = ns_fail(NS_ERR_SIZE, "simulation: the fused maps of %lld rows (the GPU loop takes < 2^31)", (long long)rows);
    if (st == NS_OK) {
        row_begin = calloc((size_t)rows + 1, sizeof *row_begin);
        entries = malloc((size_t)(n_entries > 0 ? n_entries : 1) * sizeof *entries);
        if (!row_begin || !entries) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused maps");
    }
    /* per row its entries in slot order: count, then place */
    for (int32_t sh = 0; st == NS_OK && sh < model->n_shapes; ++sh) {
        if (row0[sh] < 0) continue;
        for (int32_t s = 0; s < n_slots; ++s) {
            const sim_mech_shape *ms = &model->per_shape[(size_t)sh * model->n_mechs + mech_of[s]];
            for (int32_t i = 0; i < ms->n; ++i) row_begin[row0[sh] + ms->node[i] + 1]++;
        }
    }
    for (int64_t r = 0; st == NS_OK && r < rows; ++r) row_begin[r + 1] += row_begin[r];
    if (st == NS_OK) {
        int32_t *fill = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *fill);
        if (!fill) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused maps");
        for (int64_t r = 0; fill && r < rows; ++r) fill[r] = row_begin[r];
        for (int32_t sh = 0; fill && sh < model->n_shapes; ++sh) {
            if (row0[sh] < 0) continue;
            for (int32_t s = 0; s < n_slots && st == NS_OK; ++s) {
                const sim_mech_shape *ms = &model->per_shape[(size_t)sh * model->n_mechs + mech_of[s]];
                if (ms->n >= (1 << 24)) {
                    st = ns_fail(NS_ERR_SIZE, "simulation: %d instances of a mechanism in one cell (the fused launches "
                                              "take < 2^24)", (int)ms->n);
                    break;
                }
                for (int32_t i = 0; i < ms->n; ++i) entries[fill[row0[sh] + ms->node[i]]++] = (s << 24) | i;
            }
        }
        free(fill);
    }
    /* per node its cell; per cell its row and its first instance of each slot */
    for (int64_t j = 0; st == NS_OK && j < cells; ++j) {
        const int32_t sh = sim->cell_shape[cell_id[j]];
        for (int64_t x = cell_base[j]; x < cell_base[j + 1]; ++x) node_cell[x] = (int32_t)j;
        cell_row[j] = row0[sh];
        for (int32_t s = 0; s < n_slots; ++s) {
            if (at[s] >= INT32_MAX) {
                st = ns_fail(NS_ERR_SIZE, "simulation: instances of a mechanism beyond 2^31");
                break;
            }
            cell_inst[j * n_slots + s] = (int32_t)at[s];
            at[s] += model->per_shape[(size_t)sh * model->n_mechs + mech_of[s]].n;
        }
    }
    const void *p;
    if (st == NS_OK && (st = up(lf, &p, node_cell, (size_t)nodes * sizeof *node_cell)) == NS_OK) lf->f.node_cell = p;
    if (st == NS_OK && (st = up(lf, &p, cell_row, (size_t)cells * sizeof *cell_row)) == NS_OK) lf->f.cell_row = p;
    if (st == NS_OK && (st = up(lf, &p, cell_inst, (size_t)cells * (size_t)n_slots * sizeof *cell_inst)) == NS_OK)
        lf->f.cell_inst = p;
    if (st == NS_OK && (st = up(lf, &p, row_begin, (size_t)(rows + 1) * sizeof *row_begin)) == NS_OK)
        lf->f.row_begin = p;
    if (st == NS_OK && (st = up(lf, &p, entries, (size_t)n_entries * sizeof *entries)) == NS_OK) lf->f.entries = p;
    if (st == NS_OK && (st = up(lf, &p, cell_base, (size_t)(cells + 1) * sizeof *cell_base)) == NS_OK)
        lf->f.cell_base = p;
    free(node_cell), free(cell_row), free(cell_inst), free(row0), free(at), free(row_begin), free(entries);
    return st;
}

ns_status ns_gpu_libfused_create(const ns_sim_t *sim, const ns_mech_ppack *const *pp, const unsigned char *written,
                                 const int64_t *cell_id, const int64_t *cell_base, int64_t cells, double *v,
                                 double *rhs, double *d, gpu_libfused **out) {
    *out = NULL;
    const sim_model *model = sim->model;
    if (!model || model->n_mechs <= 0) return NS_OK;
    /* the rule's facts: the members and whether they share one library's launches */
    int32_t members = 0;
    int one = 1;
    ns_mech_cuda_fused_fn cur = NULL, sta = NULL;
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *dk = model->mechs[k].desc;
        if (dk->kind != NS_MECH_DENSITY || dk->fused_index < 0 || !dk->cuda_fused_current || !dk->cuda_fused_state)
            continue;
        if (members++ == 0) cur = dk->cuda_fused_current, sta = dk->cuda_fused_state;
        one &= dk->cuda_fused_current == cur && dk->cuda_fused_state == sta;
    }
    if (!ns_sim_library_fused_rule((int)sim->options.gpu_mechanisms, members, one)) return NS_OK;
    if (members >= 128) return NS_OK; /* slot << 24 in an int32: the per-mechanism launches */
    gpu_libfused *lf = calloc(1, sizeof *lf);
    int32_t *mech_of = malloc((size_t)members * sizeof *mech_of);
    ns_mech_fused_slot *slots = calloc((size_t)members, sizeof *slots);
    ns_status st = NS_OK;
    if (!lf || !mech_of || !slots || !(lf->slot_of = malloc((size_t)model->n_mechs * sizeof *lf->slot_of)))
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: fused launches");
    int32_t n_slots = 0;
    for (int32_t k = 0; st == NS_OK && k < model->n_mechs; ++k) {
        const sim_mech *sm = &model->mechs[k];
        const ns_mech_desc *dk = sm->desc;
        lf->slot_of[k] = -1;
        if (dk->kind != NS_MECH_DENSITY || dk->fused_index < 0 || !dk->cuda_fused_current || !dk->cuda_fused_state)
            continue;
        if (dk->n_ions > NS_MECH_FUSED_IONS) { /* mechlib_fused.c refuses such a member */
            st = ns_fail(NS_ERR_INTERNAL, "simulation: %s uses %d ions in the fused launches", dk->name, dk->n_ions);
            break;
        }
        if (pp[k]->n > cell_base[cells]) { /* the state launch's thread x runs instance x of each slot */
            st = ns_fail(NS_ERR_INTERNAL, "simulation: %d instances of %s on %lld nodes", pp[k]->n, dk->name,
                         (long long)cell_base[cells]);
            break;
        }
        ns_mech_fused_slot *sl = &slots[n_slots];
        sl->index = dk->fused_index;
        sl->n_ions = dk->n_ions;
        sl->p = *pp[k];
        for (int j = 0; j < dk->n_ions; ++j) { /* Nernst after a writer, as nernst_of (sim/cuda/mechanisms.c) */
            const sim_ion *ion = &model->ions[sm->ion[j]];
            sl->charge[j] = ion->charge;
            if (ion->write_c && (dk->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO)))
                sl->nernst[j] = written + (size_t)sm->ion[j] * (size_t)cell_base[cells];
        }
        mech_of[n_slots] = k;
        lf->slot_of[k] = n_slots++;
    }
    if (st == NS_OK) {
        lf->n_mechs = model->n_mechs;
        lf->current = cur;
        lf->state = sta;
        lf->f.nodes = cell_base[cells];
        lf->f.n_slots = n_slots;
        lf->f.v = v;
        lf->f.rhs = rhs;
        lf->f.d = d;
        const void *p;
        if ((st = up(lf, &p, slots, (size_t)n_slots * sizeof *slots)) == NS_OK) lf->f.slots = p;
    }
    if (st == NS_OK) st = build_maps(sim, lf, mech_of, n_slots, cell_id, cell_base, cells);
    free(mech_of);
    free(slots);
    if (st != NS_OK) {
        ns_gpu_libfused_free(lf);
        return st;
    }
    *out = lf;
    return NS_OK;
}

ns_status ns_gpu_libfused_run(const ns_sim_t *sim, const gpu_libfused *lf, int state, int32_t lo, int32_t hi, double t,
                              const double *t_dev, cudaStream_t stream) {
    ns_mech_fused f = lf->f;
    f.slot_lo = lo;
    f.slot_hi = hi;
    f.t = t;
    f.t_dev = t_dev;
    f.dt = sim->params.dt;
    f.celsius = sim->params.celsius;
    f.ktf = ns_mech_ktf(sim->params.celsius);
    if ((state ? lf->state : lf->current)(&f, stream) == 0) return NS_OK;
    const cudaError_t e = cudaGetLastError();
    return ns_fail(NS_ERR_CUDA, "simulation: the library's fused %s launch: %s", state ? "SOLVE" : "BREAKPOINT",
                   cudaGetErrorString(e));
}
