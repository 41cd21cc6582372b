/* CUDA backend registration (placeholder until the GPU methods land:
 * reports the devices but offers no method yet). */
#include <stddef.h>

#include "hines/batch_impl.h"
#include "neurosolve/device.h"

const ns_hines_backend_ops *ns_hines_cuda_backend(void) { return NULL; }

int ns_cuda_usable_devices(void) {
    int n = 0;
    if (ns_cuda_device_count(&n) != NS_OK) return 0;
    return n;
}
