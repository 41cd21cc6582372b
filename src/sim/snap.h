/* The GPU loops' LFP sampler (sim_impl.h's snap), what the sampler and src/lfp/cuda agree on. */
#ifndef NS_SIM_SNAP_H
#define NS_SIM_SNAP_H
/* The windows of state positions (aligned to multiples of it) that cut each cell's sums of squares
 * of its currents into parts (sim_impl.h's snap_slot): a warp's lanes */
#define NS_SIM_SNAP_WINDOW 32
#endif
