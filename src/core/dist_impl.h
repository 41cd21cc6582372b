/* Private: the distribution handle (neurosolve/dist.h) and the calls of the
 * library through its table. */
#ifndef NS_CORE_DIST_IMPL_H
#define NS_CORE_DIST_IMPL_H

#include "neurosolve/dist.h"

struct ns_dist {
    ns_dist_ops ops;
    void *context;
    int32_t rank, size;
};

static inline ns_status ns_dist_agree(const ns_dist_t *d, ns_status local) { return d->ops.agree(d->context, local); }
static inline ns_status ns_dist_check_same(const ns_dist_t *d, uint64_t hash, const char *what) {
    return d->ops.check_same(d->context, hash, what);
}
/* ns_mpi_agree_same's twin through the handle: agree on `local`, then check
 * that `hash` (of `what`) is the same on every process. */
static inline ns_status ns_dist_agree_same(const ns_dist_t *d, ns_status local, uint64_t hash, const char *what) {
    const ns_status st = ns_dist_agree(d, local);
    return st != NS_OK ? st : ns_dist_check_same(d, hash, what);
}
static inline ns_status ns_dist_allreduce(const ns_dist_t *d, void *values, int64_t count, ns_dist_type type,
                                          ns_dist_reduce op) {
    return d->ops.allreduce(d->context, values, count, type, op);
}
static inline ns_status ns_dist_gather(const ns_dist_t *d, int32_t root, const void *send, int64_t bytes, void *recv,
                                       const int64_t *bytes_of, const int64_t *displs) {
    return d->ops.gather(d->context, root, send, bytes, recv, bytes_of, displs);
}

#endif
