// A network on the GPU loop: detection, fan-out, bucketing and sorting of
// the pending events (sim/cuda/network.c drives them; docs/networks.md).
#include <cub/device/device_merge_sort.cuh>

#include "sim/cuda/network.h"

namespace {

__global__ void detect_kernel(const double *v, const int32_t *node, const double *thr, unsigned char *above,
                              const int64_t *source, int32_t n, double t_spike, ns_net_spike *out,
                              unsigned long long *count, int64_t cap) {
    const int32_t k = (int32_t)(blockIdx.x * blockDim.x + threadIdx.x);
    if (k >= n) return;
    const int a = v[node[k]] > thr[k];
    if (a && !above[k]) {
        const unsigned long long at = atomicAdd(count, 1ULL);
        if (at < (unsigned long long)cap) out[at] = ns_net_spike{t_spike, source[k]};
    }
    above[k] = (unsigned char)a;
}

__global__ void fanout_kernel(const ns_gpu_fan *fan, int64_t n_fan, const int64_t *out_begin,
                              const ns_gpu_conn *conn, ns_gpu_event_key *keys, ns_mech_event *events) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_fan) return;
    const ns_gpu_fan f = fan[k];
    const int64_t b = out_begin[f.source], e = out_begin[f.source + 1];
    for (int64_t q = b; q < e; ++q) {
        const ns_gpu_conn c = conn[q];
        const double te = f.t + c.delay; /* net.c's fan_out: t + delay */
        const int64_t at = f.at + (q - b);
        keys[at] = ns_gpu_event_key{0, te, f.seq + (q - b), c.inst, c.slot};
        events[at] = ns_mech_event{te, c.weight, c.inst, c.conn};
    }
}

__global__ void bucket_kernel(ns_gpu_event_key *keys, int64_t n, const double *until, int64_t len, int32_t slots) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const double te = keys[k].t;
    /* until is ascending: the first j with te <= until[j] (the CPU queue's
     * test at the start of step j), len when none */
    int64_t lo = 0, hi = len;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (te <= until[mid]) hi = mid;
        else lo = mid + 1;
    }
    keys[k].bucket = lo < len ? lo * slots + keys[k].slot : len * slots;
}

struct key_less {
    __host__ __device__ bool operator()(const ns_gpu_event_key &a, const ns_gpu_event_key &b) const {
        if (a.bucket != b.bucket) return a.bucket < b.bucket;
        if (a.inst != b.inst) return a.inst < b.inst;
        if (a.t != b.t) return a.t < b.t;
        return a.seq < b.seq;
    }
};

__global__ void offsets_kernel(const ns_gpu_event_key *keys, int64_t n, int64_t buckets, int64_t *offsets,
                               int64_t *consumed) {
    const int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b > buckets) return;
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid].bucket < b) lo = mid + 1;
        else hi = mid;
    }
    offsets[b] = lo;
    if (b == buckets) *consumed = lo;
}

unsigned grid(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

}  // namespace

extern "C" cudaError_t ns_gpu_launch_detect(const double *v, const int32_t *node, const double *thr,
                                            unsigned char *above, const int64_t *source, int32_t n, double t_spike,
                                            ns_net_spike *out, unsigned long long *count, int64_t cap,
                                            cudaStream_t stream) {
    if (n <= 0) return cudaSuccess;
    detect_kernel<<<grid(n, 256), 256, 0, stream>>>(v, node, thr, above, source, n, t_spike, out, count, cap);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_gpu_launch_fanout(const ns_gpu_fan *fan, int64_t n_fan, const int64_t *out_begin,
                                            const ns_gpu_conn *conn, ns_gpu_event_key *keys, ns_mech_event *events,
                                            cudaStream_t stream) {
    if (n_fan <= 0) return cudaSuccess;
    fanout_kernel<<<grid(n_fan, 128), 128, 0, stream>>>(fan, n_fan, out_begin, conn, keys, events);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_gpu_launch_bucket(ns_gpu_event_key *keys, int64_t n, const double *until, int64_t len,
                                            int32_t slots, cudaStream_t stream) {
    if (n <= 0) return cudaSuccess;
    bucket_kernel<<<grid(n, 256), 256, 0, stream>>>(keys, n, until, len, slots);
    return cudaGetLastError();
}

extern "C" cudaError_t ns_gpu_sort_events(void *temp, size_t *bytes, ns_gpu_event_key *keys, ns_mech_event *events,
                                          int64_t n, cudaStream_t stream) {
    return cub::DeviceMergeSort::SortPairs(temp, *bytes, keys, events, n, key_less(), stream);
}

extern "C" cudaError_t ns_gpu_launch_offsets(const ns_gpu_event_key *keys, int64_t n, int64_t buckets,
                                             int64_t *offsets, int64_t *consumed, cudaStream_t stream) {
    offsets_kernel<<<grid(buckets + 1, 256), 256, 0, stream>>>(keys, n, buckets, offsets, consumed);
    return cudaGetLastError();
}
