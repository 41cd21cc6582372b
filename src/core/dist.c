/* The distribution handle (neurosolve/dist.h): a transport's table of
 * collective operations, which the distributed simulation (sim/dist.c,
 * net/dist_net.c) calls; libneurosolve itself has no transport. */
#include <stdlib.h>

#include "core/dist_impl.h"
#include "core/error.h"

ns_status ns_dist_create(const ns_dist_ops *ops, void *context, int32_t rank, int32_t size, ns_dist_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_dist_create: out is NULL");
    *out = NULL;
    if (!ops || !ops->agree || !ops->check_same || !ops->allreduce || !ops->gather || !ops->funneled)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_dist_create: the table needs agree, check_same, allreduce, "
                                                "gather and funneled");
    if (size < 1 || rank < 0 || rank >= size)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_dist_create: rank %d of %d", (int)rank, (int)size);
    ns_dist_t *d = calloc(1, sizeof *d);
    if (!d) return ns_fail(NS_ERR_OUT_OF_MEMORY, "ns_dist_create");
    d->ops = *ops;
    d->context = context;
    d->rank = rank;
    d->size = size;
    *out = d;
    return NS_OK;
}

void ns_dist_destroy(ns_dist_t *d) {
    if (!d) return;
    if (d->ops.release) d->ops.release(d->context);
    free(d);
}

int32_t ns_dist_rank(const ns_dist_t *d) { return d ? d->rank : 0; }
int32_t ns_dist_size(const ns_dist_t *d) { return d ? d->size : 1; }
