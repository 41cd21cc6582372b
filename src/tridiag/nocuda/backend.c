/* A build without CUDA has no GPU tridiagonal backend. */
#include <stddef.h>

#include "tridiag/tridiag_impl.h"

const ns_tridiag_backend_ops *ns_tridiag_cuda_backend(void) { return NULL; }
