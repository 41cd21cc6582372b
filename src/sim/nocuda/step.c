/* A build without CUDA has no GPU simulation loop. */
#include "sim/sim_impl.h"

const sim_ops *ns_sim_cuda_ops(void) { return NULL; }
