/* A build without CUDA has no GPU backend. */
#include <stddef.h>

#include "hines/batch_impl.h"

const ns_hines_backend_ops *ns_hines_cuda_backend(void) { return NULL; }
int ns_cuda_usable_devices(void) { return 0; }
