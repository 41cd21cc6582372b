/* Pinned, chunked staging of caller host arrays (staging.h). */
#include <stdlib.h>
#include <string.h>

#ifdef NS_HAVE_OPENMP
#include <omp.h>
#endif

#include "core/cuda/staging.h"
#include "core/cuda_check.h"

/* Slot size and count: 3 slots of 16 MiB keep the copy engine busy while
 * host threads fill the next slot, and pinning 48 MiB costs little at
 * create. Host threads per chunk: memcpy from pageable memory was fastest
 * with 8 threads on the 16-core H100 host and slower with 16 (the two
 * pageable streams of a solve compete for memory bandwidth), still under
 * its PCIe 5 link's rate from pinned memory (bench/README.md, "Host arrays
 * and device arrays"). */
#define NS_STAGE_SLOT_BYTES ((size_t)16 << 20)
#define NS_STAGE_SLOTS 3
#define NS_STAGE_THREADS 8
#define NS_STAGE_PIECE ((size_t)1 << 20) /* bytes one thread copies at a time */

struct ns_stager {
    char *slot[NS_STAGE_SLOTS];
    cudaEvent_t free_ev[NS_STAGE_SLOTS]; /* recorded after the DMA that used the slot */
    int used[NS_STAGE_SLOTS];
    int next;
};

ns_status ns_stager_create(ns_stager **out) {
    *out = calloc(1, sizeof **out);
    return *out ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "staging state");
}

void ns_stager_destroy(ns_stager *s) {
    if (!s) return;
    for (int k = 0; k < NS_STAGE_SLOTS; ++k) {
        if (s->free_ev[k]) {
            cudaEventSynchronize(s->free_ev[k]);
            cudaEventDestroy(s->free_ev[k]);
        }
        cudaFreeHost(s->slot[k]);
    }
    (void)cudaGetLastError();
    free(s);
}

static ns_status ready(ns_stager *s) {
    if (s->slot[0]) return NS_OK;
    for (int k = 0; k < NS_STAGE_SLOTS; ++k) {
        NS_CUDA_TRY(cudaHostAlloc((void **)&s->slot[k], NS_STAGE_SLOT_BYTES, cudaHostAllocPortable));
        NS_CUDA_TRY(cudaEventCreateWithFlags(&s->free_ev[k], cudaEventDisableTiming));
    }
    return NS_OK;
}

static int is_pinned(const void *p) {
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return at.type == cudaMemoryTypeHost;
}

/* memcpy with several threads: pageable reads are the bottleneck. */
static void copy(void *dst, const void *src, size_t bytes) {
    const long pieces = (long)((bytes + NS_STAGE_PIECE - 1) / NS_STAGE_PIECE);
#ifdef NS_HAVE_OPENMP
    int threads = omp_get_max_threads();
    if (threads > NS_STAGE_THREADS) threads = NS_STAGE_THREADS;
    if (threads > pieces) threads = (int)pieces;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
#endif
    for (long i = 0; i < pieces; ++i) {
        const size_t at = (size_t)i * NS_STAGE_PIECE;
        const size_t n = bytes - at < NS_STAGE_PIECE ? bytes - at : NS_STAGE_PIECE;
        memcpy((char *)dst + at, (const char *)src + at, n);
    }
}

/* The next slot, once the DMA that last used it has finished. */
static ns_status take(ns_stager *s, int *k) {
    *k = s->next;
    s->next = (s->next + 1) % NS_STAGE_SLOTS;
    if (s->used[*k]) NS_CUDA_TRY(cudaEventSynchronize(s->free_ev[*k]));
    s->used[*k] = 0;
    return NS_OK;
}

ns_status ns_stage_upload(ns_stager *s, void *dst, const void *src, size_t bytes, cudaStream_t q) {
    if (bytes == 0) return NS_OK;
    if (is_pinned(src)) {
        NS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, q));
        return NS_OK;
    }
    ns_status e = ready(s);
    if (e != NS_OK) return e;
    for (size_t at = 0; at < bytes; at += NS_STAGE_SLOT_BYTES) {
        const size_t n = bytes - at < NS_STAGE_SLOT_BYTES ? bytes - at : NS_STAGE_SLOT_BYTES;
        int k = 0;
        if ((e = take(s, &k)) != NS_OK) return e;
        copy(s->slot[k], (const char *)src + at, n);
        NS_CUDA_TRY(cudaMemcpyAsync((char *)dst + at, s->slot[k], n, cudaMemcpyHostToDevice, q));
        NS_CUDA_TRY(cudaEventRecord(s->free_ev[k], q));
        s->used[k] = 1;
    }
    return NS_OK;
}

ns_status ns_stage_download(ns_stager *s, void *dst, const void *src, size_t bytes, cudaStream_t q) {
    if (bytes == 0) return NS_OK;
    if (is_pinned(dst)) {
        NS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, q));
        NS_CUDA_TRY(cudaStreamSynchronize(q));
        return NS_OK;
    }
    ns_status e = ready(s);
    if (e != NS_OK) return e;
    const size_t chunks = (bytes + NS_STAGE_SLOT_BYTES - 1) / NS_STAGE_SLOT_BYTES;
    int slot_of[NS_STAGE_SLOTS];
    /* keep up to NS_STAGE_SLOTS chunks in flight; copy out each as it lands */
    size_t queued = 0;
    for (size_t c = 0; c < chunks; ++c) {
        while (queued < chunks && queued < c + NS_STAGE_SLOTS) {
            const size_t at = queued * NS_STAGE_SLOT_BYTES;
            const size_t n = bytes - at < NS_STAGE_SLOT_BYTES ? bytes - at : NS_STAGE_SLOT_BYTES;
            int k = 0;
            if ((e = take(s, &k)) != NS_OK) return e;
            NS_CUDA_TRY(cudaMemcpyAsync(s->slot[k], (const char *)src + at, n, cudaMemcpyDeviceToHost, q));
            NS_CUDA_TRY(cudaEventRecord(s->free_ev[k], q));
            s->used[k] = 1;
            slot_of[queued % NS_STAGE_SLOTS] = k;
            ++queued;
        }
        const int k = slot_of[c % NS_STAGE_SLOTS];
        NS_CUDA_TRY(cudaEventSynchronize(s->free_ev[k]));
        s->used[k] = 0;
        const size_t at = c * NS_STAGE_SLOT_BYTES;
        copy((char *)dst + at, s->slot[k], bytes - at < NS_STAGE_SLOT_BYTES ? bytes - at : NS_STAGE_SLOT_BYTES);
    }
    return NS_OK;
}
