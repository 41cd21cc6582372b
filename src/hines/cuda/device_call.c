/* The Hines solver's device-call checks (device_call.h). */
#include "hines/cuda/device_call.h"

ns_status ns_device_call_init(ns_device_call *c, int device) {
    c->device = device;
    return ns_device_key_init(&c->key);
}

void ns_device_call_free(ns_device_call *c) { ns_device_key_free(&c->key); }

ns_status ns_device_call_check(const ns_device_call *c, const char *who, const void *const arrays[4], size_t bytes,
                               cudaStream_t q) {
    static const char *names[4] = {"a", "b", "d", "rhs"};
    for (int k = 0; k < 4; ++k) {
        ns_status e = ns_device_args_pointer(c->device, who, arrays[k], bytes, names[k]);
        if (e != NS_OK) return e;
    }
    return ns_device_args_stream(c->device, who, q);
}
