// The LFP's sums of squares of a sample's currents by parts (sim_impl.h's snap_slot), shared by
// the tree and onchip loops' samplers.
#pragma once
#include <stdint.h>

// One window of a warp: lane `lane` holds x (its square) and the key of its run (< 0: none; the
// lanes of one part share a key, and a part's lanes are contiguous); the squares of each run are
// summed (an inclusive scan over the lanes in a fixed tree of shuffles, the same bits at every
// run) and each run's last lane stores its sum at norm[*slot] (slot: its position's part). Every
// lane of the warp calls it.
__device__ __forceinline__ void lfp_norm_window(double x, int32_t key, int lane, const int32_t *slot, double *norm) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const double y = __shfl_up_sync(0xFFFFFFFFu, x, o);
        const int32_t ky = __shfl_up_sync(0xFFFFFFFFu, key, o);
        if (lane >= o && ky == key) x += y;  // the runs are contiguous: lane - o is in this one
    }
    const int32_t next = __shfl_down_sync(0xFFFFFFFFu, key, 1);
    if (key >= 0 && (lane == 31 || next != key)) {
        const int32_t s = *slot;
        if (s >= 0) norm[s] = x;
    }
}
