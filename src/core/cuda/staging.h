/* Private (core, CUDA builds): host <-> device copies of caller host arrays
 * through pinned staging buffers, pipelined in chunks. A copy from pageable
 * memory runs at a fraction of the link's speed and cannot overlap anything
 * (docs/api.md, "Host arrays"); the stager copies each chunk into a pinned
 * slot with several host threads while the DMA engine moves the previous
 * slot. Arrays that are already pinned (cudaHostAlloc, cudaHostRegister)
 * are copied directly. One stager serves one solver (not thread-safe). */
#ifndef NS_CORE_CUDA_STAGING_H
#define NS_CORE_CUDA_STAGING_H

#include <stddef.h>
#include <cuda_runtime_api.h>
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_stager ns_stager;

/* Slots are allocated on first use (portable pinned memory). */
ns_status ns_stager_create(ns_stager **out);
void ns_stager_destroy(ns_stager *stager);

/* Queue dst[0..bytes) = src on stream q. On return src may be reused (its
 * bytes are in pinned slots or already copied); the DMA may still run. */
ns_status ns_stage_upload(ns_stager *stager, void *dst, const void *src, size_t bytes, cudaStream_t q);

/* dst = src[0..bytes) after the work queued on q: returns when dst holds it. */
ns_status ns_stage_download(ns_stager *stager, void *dst, const void *src, size_t bytes, cudaStream_t q);

#ifdef __cplusplus
}
#endif
#endif
