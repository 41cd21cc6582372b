/* A build without CUDA has no LiFE GPU backend: the registry lists it
 * with no ops, and ns_method_available says why (src/backends.c). */
#include <stddef.h>

#include "life/life_impl.h"

const ns_life_backend_ops *ns_life_cuda_backend(void) { return NULL; }
