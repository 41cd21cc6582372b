/* A build without CUDA has no GPU implementations: the registry lists them
 * with no ops, and says so when one is asked for (src/backends.c). */
#include <stddef.h>

#include "hines/batch_impl.h"

const ns_hines_backend_ops *ns_hines_cuda_backend(void) { return NULL; }
const ns_hines_backend_ops *ns_hines_mixed_cuda_backend(void) { return NULL; }
const ns_hines_backend_ops *ns_hines_tree_cuda_backend(void) { return NULL; }
