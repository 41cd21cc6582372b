/* The LFP's reduction on the simulation's GPU (lfp_impl.h): voltages
 * gathered from the loop's own arrays, membrane currents by Kirchhoff per
 * node, the clamps' currents, per-cell dipoles, and the blocked product of
 * the coefficients with the buffered currents. docs/extracellular.md. */
#include <cuda_runtime.h>
#include <stdlib.h>

extern "C" {
#include "core/cuda_check.h"
#include "core/device_impl.h"
#include "lfp/lfp_impl.h"
}

#define THREADS 256

struct lfp_gpu {
    int device;
    cudaStream_t stream;
    int64_t n_el, n_comp, n_cells;
    double *M, *g, *mid, *v, *imem, *ibuf, *phi, *pcell, *stim_amp;
    int64_t *parent, *child_begin, *child, *cell_offset, *stim_node;
    unsigned char *membrane;
    int64_t stim_cap;
};

__global__ void lfp_scatter(const double *__restrict__ v, const int64_t *__restrict__ flat_of, int64_t size,
                            double *__restrict__ out) {
    const int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (p < size) out[flat_of[p]] = v[p];
}

/* i_m[j] = inflow from the parent - outflow to the children (0 without membrane) */
__global__ void lfp_currents(const double *__restrict__ v, const double *__restrict__ g,
                             const int64_t *__restrict__ parent, const int64_t *__restrict__ child_begin,
                             const int64_t *__restrict__ child, const unsigned char *__restrict__ membrane, int64_t n,
                             double *__restrict__ imem) {
    const int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (j >= n) return;
    double im = 0.0;
    if (membrane[j]) {
        const int64_t p = parent[j];
        if (p >= 0) im = g[j] * (v[p] - v[j]);
        for (int64_t q = child_begin[j]; q < child_begin[j + 1]; ++q) {
            const int64_t c = child[q];
            im -= g[c] * (v[j] - v[c]);
        }
    }
    imem[j] = im;
}

/* the clamps, in the order given (one thread: a node may hold several) */
__global__ void lfp_stims(const int64_t *__restrict__ node, const double *__restrict__ amp, int64_t n,
                          const unsigned char *__restrict__ membrane, double *__restrict__ imem) {
    for (int64_t q = 0; q < n; ++q)
        if (membrane[node[q]]) imem[node[q]] += amp[q];
}

/* per cell: the currents into buffer column b and the dipole moment */
__global__ void lfp_cells(const double *__restrict__ imem, const double *__restrict__ mid,
                          const int64_t *__restrict__ off, int64_t n_cells, int32_t b, double *__restrict__ ibuf,
                          double *__restrict__ pcell) {
    const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    double P0 = 0.0, P1 = 0.0, P2 = 0.0;
    for (int64_t j = off[c]; j < off[c + 1]; ++j) {
        const double im = imem[j];
        ibuf[j * NS_LFP_BLOCK + b] = im;
        P0 += im * mid[3 * j], P1 += im * mid[3 * j + 1], P2 += im * mid[3 * j + 2];
    }
    pcell[3 * c] = P0, pcell[3 * c + 1] = P1, pcell[3 * c + 2] = P2;
}

/* phi[b][e] = sum_j M[e][j] I[j][b]: one block per electrode, one pass over its row */
__global__ void lfp_reduce(const double *__restrict__ M, const double *__restrict__ I, int64_t n, int64_t n_el,
                           int32_t nb, double *__restrict__ phi) {
    __shared__ double red[THREADS];
    const int64_t e = blockIdx.x;
    double acc[NS_LFP_BLOCK];
#pragma unroll
    for (int b = 0; b < NS_LFP_BLOCK; ++b) acc[b] = 0.0;
    const double *m = M + e * n;
    for (int64_t j = threadIdx.x; j < n; j += THREADS) {
        const double mj = m[j];
        const double *ij = I + j * NS_LFP_BLOCK;
#pragma unroll
        for (int b = 0; b < NS_LFP_BLOCK; ++b)
            if (b < nb) acc[b] += mj * ij[b];
    }
#pragma unroll
    for (int b = 0; b < NS_LFP_BLOCK; ++b) {
        if (b >= nb) break;
        red[threadIdx.x] = acc[b];
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
            if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) phi[(int64_t)b * n_el + e] = red[0];
        __syncthreads();
    }
}

static unsigned grid(int64_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

extern "C" void ns_lfp_gpu_destroy(lfp_gpu *G) {
    if (!G) return;
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(G->device);
    void *p[] = {G->M, G->g, G->mid, G->v, G->imem, G->ibuf, G->phi, G->pcell, G->stim_amp, G->parent,
                 G->child_begin, G->child, G->cell_offset, G->stim_node, G->membrane};
    for (size_t k = 0; k < sizeof p / sizeof *p; ++k) cudaFree(p[k]);
    if (G->stream) cudaStreamDestroy(G->stream);
    ns_cuda_restore_device(caller);
    free(G);
}

template <typename T> static ns_status upload(T **dst, const T *src, int64_t n) {
    NS_CUDA_TRY(cudaMalloc((void **)dst, (size_t)(n > 0 ? n : 1) * sizeof(T)));
    if (src && n > 0) NS_CUDA_TRY(cudaMemcpy(*dst, src, (size_t)n * sizeof(T), cudaMemcpyHostToDevice));
    return NS_OK;
}

extern "C" ns_status ns_lfp_gpu_create(int device, const lfp_gpu_geometry *geo, lfp_gpu **out) {
    *out = NULL;
    lfp_gpu *G = (lfp_gpu *)calloc(1, sizeof *G);
    if (!G) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LFP: GPU state");
    G->device = device;
    G->n_el = geo->n_el, G->n_comp = geo->n_comp, G->n_cells = geo->n_cells;
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(device);
    const int64_t n = geo->n_comp;
    ns_status st = ns_cuda_status(cudaStreamCreateWithFlags(&G->stream, cudaStreamNonBlocking), "cudaStreamCreate",
                                  __FILE__, __LINE__);
    if (st == NS_OK) st = upload(&G->M, geo->M, geo->n_el * n);
    if (st == NS_OK) st = upload(&G->g, geo->g, n);
    if (st == NS_OK) st = upload(&G->mid, geo->mid, 3 * n);
    if (st == NS_OK) st = upload(&G->parent, geo->parent, n);
    if (st == NS_OK) st = upload(&G->child_begin, geo->child_begin, n + 1);
    if (st == NS_OK) st = upload(&G->child, geo->child, geo->child_begin[n]);
    if (st == NS_OK) st = upload(&G->membrane, geo->membrane, n);
    if (st == NS_OK) st = upload(&G->cell_offset, geo->cell_offset, geo->n_cells + 1);
    if (st == NS_OK) st = upload<double>(&G->v, NULL, n);
    if (st == NS_OK) st = upload<double>(&G->imem, NULL, n);
    if (st == NS_OK) st = upload<double>(&G->ibuf, NULL, n * NS_LFP_BLOCK);
    if (st == NS_OK) st = upload<double>(&G->phi, NULL, geo->n_el * NS_LFP_BLOCK);
    if (st == NS_OK) st = upload<double>(&G->pcell, NULL, 3 * geo->n_cells);
    ns_cuda_restore_device(caller);
    if (st != NS_OK) {
        ns_error_prefix("LFP: coefficients on the GPU");
        ns_lfp_gpu_destroy(G);
        return st;
    }
    *out = G;
    return NS_OK;
}

static ns_status sample(lfp_gpu *G, ns_sim_t *sim, const int64_t *stim_node, const double *stim_amp, int64_t n_stims,
                        int32_t b, double *pcell, double *imem) {
    const int64_t parts = ns_sim_state_parts(sim);
    for (int64_t k = 0; k < parts; ++k) {
        ns_sim_part p;
        ns_status st = ns_sim_state_part(sim, k, &p);
        if (st != NS_OK) return st;
        if (p.device != G->device)
            return ns_fail(NS_ERR_INTERNAL, "LFP: state part %lld on device %d, the probe's on %d", (long long)k,
                           (int)p.device, G->device);
        if (p.size > 0) lfp_scatter<<<grid(p.size), THREADS, 0, G->stream>>>(p.v, p.flat_of, p.size, G->v);
    }
    const int64_t n = G->n_comp;
    lfp_currents<<<grid(n), THREADS, 0, G->stream>>>(G->v, G->g, G->parent, G->child_begin, G->child, G->membrane, n,
                                                      G->imem);
    if (n_stims > 0) {
        if (n_stims > G->stim_cap) {
            cudaFree(G->stim_node);
            cudaFree(G->stim_amp);
            G->stim_node = NULL, G->stim_amp = NULL, G->stim_cap = 0;
            NS_CUDA_TRY(cudaMalloc((void **)&G->stim_node, (size_t)n_stims * sizeof(int64_t)));
            NS_CUDA_TRY(cudaMalloc((void **)&G->stim_amp, (size_t)n_stims * sizeof(double)));
            G->stim_cap = n_stims;
        }
        NS_CUDA_TRY(cudaMemcpyAsync(G->stim_node, stim_node, (size_t)n_stims * sizeof(int64_t), cudaMemcpyHostToDevice,
                                    G->stream));
        NS_CUDA_TRY(cudaMemcpyAsync(G->stim_amp, stim_amp, (size_t)n_stims * sizeof(double), cudaMemcpyHostToDevice,
                                    G->stream));
        lfp_stims<<<1, 1, 0, G->stream>>>(G->stim_node, G->stim_amp, n_stims, G->membrane, G->imem);
    }
    if (G->n_cells > 0)
        lfp_cells<<<grid(G->n_cells), THREADS, 0, G->stream>>>(G->imem, G->mid, G->cell_offset, G->n_cells, b, G->ibuf,
                                                               G->pcell);
    NS_CUDA_TRY(cudaGetLastError());
    NS_CUDA_TRY(cudaMemcpyAsync(pcell, G->pcell, (size_t)G->n_cells * 3 * sizeof(double), cudaMemcpyDeviceToHost,
                                G->stream));
    if (imem)
        NS_CUDA_TRY(cudaMemcpyAsync(imem, G->imem, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost, G->stream));
    ns_status st = ns_sim_state_done(sim, G->stream); /* the next step waits for the reads */
    if (st != NS_OK) return st;
    NS_CUDA_TRY(cudaStreamSynchronize(G->stream));
    return NS_OK;
}

extern "C" ns_status ns_lfp_gpu_sample(lfp_gpu *G, ns_sim_t *sim, const int64_t *stim_node, const double *stim_amp,
                                       int64_t n_stims, int32_t b, double *pcell, double *imem) {
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(G->device);
    const ns_status st = sample(G, sim, stim_node, stim_amp, n_stims, b, pcell, imem);
    ns_cuda_restore_device(caller);
    return st;
}

static ns_status flush(lfp_gpu *G, int32_t nb, double *phi) {
    lfp_reduce<<<(unsigned)G->n_el, THREADS, 0, G->stream>>>(G->M, G->ibuf, G->n_comp, G->n_el, nb, G->phi);
    NS_CUDA_TRY(cudaGetLastError());
    NS_CUDA_TRY(cudaMemcpyAsync(phi, G->phi, (size_t)nb * (size_t)G->n_el * sizeof(double), cudaMemcpyDeviceToHost,
                                G->stream));
    NS_CUDA_TRY(cudaStreamSynchronize(G->stream));
    return NS_OK;
}

extern "C" ns_status ns_lfp_gpu_flush(lfp_gpu *G, int32_t nb, double *phi) {
    if (nb <= 0) return NS_OK;
    const int caller = ns_cuda_save_device();
    ns_cuda_restore_device(G->device);
    const ns_status st = flush(G, nb, phi);
    ns_cuda_restore_device(caller);
    return st;
}
