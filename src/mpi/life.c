/* LiFE over processes: voxels split into contiguous ranges balanced by
 * coefficient count, each process holding its voxels' coefficients and
 * signal columns and every fiber. Then y = M w is local (each process
 * computes its own rows) and w = M^T y is a sum over processes of the local
 * products, as are the voxel-space dot products: SBBNNLS's reduce hook. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "mpi/mpi_impl.h"

static uint64_t hash_model(const ns_life_model_t *g) {
    /* the accessors hand out writable arrays; nothing is written here */
    ns_life_model_t *m = (ns_life_model_t *)(uintptr_t)g;
    const int32_t dims[4] = {ns_life_model_n_theta(m), ns_life_model_n_atoms(m), ns_life_model_n_voxels(m),
                             ns_life_model_n_fibers(m)};
    const int64_t nc = ns_life_model_n_coeffs(m);
    uint64_t h = ns_mpi_hash(NS_MPI_HASH_INIT, dims, sizeof dims);
    h = ns_mpi_hash(h, &nc, sizeof nc);
    h = ns_mpi_hash(h, ns_life_model_atom(m), (size_t)nc * sizeof(int32_t));
    h = ns_mpi_hash(h, ns_life_model_voxel(m), (size_t)nc * sizeof(int32_t));
    h = ns_mpi_hash(h, ns_life_model_fiber(m), (size_t)nc * sizeof(int32_t));
    h = ns_mpi_hash(h, ns_life_model_value(m), (size_t)nc * sizeof(double));
    h = ns_mpi_hash(h, ns_life_model_dictionary(m), (size_t)dims[0] * (size_t)dims[1] * sizeof(double));
    return ns_mpi_hash(h, ns_life_model_signal(m), (size_t)dims[0] * (size_t)dims[2] * sizeof(double));
}

ns_status ns_mpi_life_partition(MPI_Comm comm, const ns_life_model_t *global, ns_life_model_t **local,
                                int32_t *first_voxel, int32_t *n_voxels) {
    if (local) *local = NULL;
    ns_status st = global && local ? NS_OK : ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_life_partition: NULL argument");
    st = ns_mpi_agree_same(comm, st, hash_model(global), "the LiFE model");
    if (st != NS_OK) return st;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    ns_life_model_t *g = (ns_life_model_t *)(uintptr_t)global; /* read only */
    const int32_t nt = ns_life_model_n_theta(g), na = ns_life_model_n_atoms(g), nv = ns_life_model_n_voxels(g),
                  nf = ns_life_model_n_fibers(g);
    const int64_t nc = ns_life_model_n_coeffs(g);
    const int32_t *atom = ns_life_model_atom(g), *voxel = ns_life_model_voxel(g), *fiber = ns_life_model_fiber(g);
    const double *value = ns_life_model_value(g);
    int64_t *weight = calloc((size_t)nv, sizeof *weight), *first = malloc((size_t)(size + 1) * sizeof *first);
    ns_life_model_t *m = NULL;
    if (!weight || !first) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "voxel partition of %d voxels", (int)nv);
    for (int64_t k = 0; st == NS_OK && k < nc; ++k) {
        if (voxel[k] < 0 || voxel[k] >= nv)
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "phi_voxel[%lld] = %d is out of range [0, %d)", (long long)k,
                         (int)voxel[k], (int)nv);
        else
            weight[voxel[k]]++;
    }
    if (st == NS_OK) st = ns_partition_contiguous(nv, weight, size, first);
    int32_t v0 = 0, v1 = 0;
    int64_t lc = 0;
    if (st == NS_OK) {
        v0 = (int32_t)first[rank];
        v1 = (int32_t)first[rank + 1];
        for (int64_t k = 0; k < nc; ++k) lc += voxel[k] >= v0 && voxel[k] < v1;
        /* A process without voxels or coefficients keeps one zero
         * coefficient and one zero voxel: it adds nothing to any sum. */
        st = ns_life_model_create(nt, na, v1 > v0 ? v1 - v0 : 1, nf, lc > 0 ? lc : 1, &m);
    }
    if (st == NS_OK) {
        int32_t *la = ns_life_model_atom(m), *lv = ns_life_model_voxel(m), *lf = ns_life_model_fiber(m);
        double *lval = ns_life_model_value(m);
        int64_t o = 0;
        for (int64_t k = 0; k < nc; ++k)
            if (voxel[k] >= v0 && voxel[k] < v1) {
                la[o] = atom[k];
                lv[o] = voxel[k] - v0;
                lf[o] = fiber[k];
                lval[o++] = value[k];
            }
        /* (created zeroed: the placeholder coefficient is atom 0, voxel 0,
         * fiber 0, value 0) */
        memcpy(ns_life_model_dictionary(m), ns_life_model_dictionary(g), (size_t)nt * (size_t)na * sizeof(double));
        if (v1 > v0)
            memcpy(ns_life_model_signal(m), ns_life_model_signal(g) + (size_t)v0 * (size_t)nt,
                   (size_t)(v1 - v0) * (size_t)nt * sizeof(double));
        if (ns_life_model_true_weights(g)) st = ns_life_model_set_true_weights(m, ns_life_model_true_weights(g));
    }
    free(weight);
    free(first);
    st = ns_mpi_agree(comm, st);
    if (st != NS_OK) {
        ns_life_model_destroy(m);
        return st;
    }
    if (first_voxel) *first_voxel = v0;
    if (n_voxels) *n_voxels = v1 - v0;
    *local = m;
    return NS_OK;
}

/* The reduce hook's context: the communicator, the slice buffer of the
 * sums, and whether an agreement inside the fit already ended it on a
 * failure (then the wrapper must not agree once more: the other processes
 * have left). */
typedef struct reduce_ctx {
    MPI_Comm comm;
    double *slice;       /* ceil(n / processes) doubles */
    int64_t slice_cap;
    int failed_together;
} reduce_ctx;

/* Sum n values over the processes so that every process receives the same
 * bits (SBBNNLS's stopping tests must take the same branch everywhere, and
 * MPI_Allreduce does not promise that). With a slice buffer: each process
 * sums one slice (MPI_Reduce_scatter: a slice is summed on its owner only),
 * then every slice is copied to everyone (MPI_Allgatherv): about
 * 2 (p - 1) / p n values move per process. Without one: MPI_Reduce to rank 0
 * and MPI_Bcast of its bits (n values per tree level). */
static ns_status sum_over_ranks(MPI_Comm comm, double *values, int64_t n, double *slice) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (size == 1) return NS_OK;
    enum { MAX_RANKS_SLICED = 1024 };
    int counts[MAX_RANKS_SLICED], displs[MAX_RANKS_SLICED];
    const int sliced = slice != NULL && size <= MAX_RANKS_SLICED;
    for (int64_t o = 0; o < n; o += INT_MAX / 2) {
        const int c = (int)(n - o < INT_MAX / 2 ? n - o : INT_MAX / 2);
        int rc;
        if (sliced) {
            for (int r = 0, at = 0; r < size; ++r) {
                counts[r] = c / size + (r < c % size);
                displs[r] = at;
                at += counts[r];
            }
            rc = MPI_Reduce_scatter(values + o, slice, counts, MPI_DOUBLE, MPI_SUM, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Allgatherv(slice, counts[rank], MPI_DOUBLE, values + o, counts, displs, MPI_DOUBLE, comm);
        } else {
            rc = rank == 0 ? MPI_Reduce(MPI_IN_PLACE, values + o, c, MPI_DOUBLE, MPI_SUM, 0, comm)
                           : MPI_Reduce(values + o, NULL, c, MPI_DOUBLE, MPI_SUM, 0, comm);
            if (rc == MPI_SUCCESS) rc = MPI_Bcast(values + o, c, MPI_DOUBLE, 0, comm);
        }
        if (rc != MPI_SUCCESS) return ns_fail(NS_ERR_IO, "MPI sum of %lld values failed", (long long)n);
    }
    return NS_OK;
}

static ns_status reduce_hook(double *values, int64_t n, void *context) {
    reduce_ctx *ctx = context;
    /* The slice buffer is local work: before the agreement. */
    int size = 1;
    MPI_Comm_size(ctx->comm, &size);
    const int64_t want = (n < INT_MAX / 2 ? n : INT_MAX / 2) / size + 1;
    ns_status local = NS_OK;
    if (want > ctx->slice_cap) {
        double *grown = realloc(ctx->slice, (size_t)want * sizeof *grown);
        if (grown) {
            ctx->slice = grown;
            ctx->slice_cap = want;
        } else {
            local = ns_fail(NS_ERR_OUT_OF_MEMORY, "MPI sum: a slice of %lld doubles", (long long)want);
        }
    }
    /* Each sum is a communication phase: agree first, so that a process
     * that failed inside the fit ends the others here (docs/mpi.md). */
    ns_status st = ns_mpi_agree(ctx->comm, local);
    if (st != NS_OK) {
        ctx->failed_together = 1;
        return st;
    }
    return sum_over_ranks(ctx->comm, values, n, ctx->slice);
}

ns_status ns_mpi_life_reduce(double *values, int64_t n, void *context) {
    if (!context || (n > 0 && !values)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_mpi_life_reduce: NULL argument");
    return sum_over_ranks(*(MPI_Comm *)context, values, n, NULL);
}

ns_status ns_mpi_life_fit(MPI_Comm comm, ns_life_engine_t *engine, const ns_life_fit_options *options, double *w,
                          double *history, ns_life_fit_result *result) {
    ns_life_fit_options o;
    if (options) o = *options;
    else ns_life_fit_options_init(&o);
    reduce_ctx ctx = {comm, NULL, 0, 0};
    ns_status st = NS_OK;
    if (o.preconditioner)
        st = ns_fail(NS_ERR_UNSUPPORTED,
                     "ns_mpi_life_fit: the preconditioner needs a sum over processes that SBBNNLS does not do");
    if (st == NS_OK) {
        o.reduce = reduce_hook;
        o.reduce_context = &ctx;
        st = ns_life_fit(engine, &o, w, history, result);
    }
    free(ctx.slice);
    if (ctx.failed_together) return st;
    return ns_mpi_agree(comm, st);
}
