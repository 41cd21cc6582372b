/* The POINTERs of a block's point processes (ns_sim_set_pointer, net.c):
 * each instance's address of each POINTER, resolved when the network's
 * instances are built (ns_net_build, at ns_sim_init).
 *
 * A target in the synapse's own lane block is read and written in place:
 * in the current phase the block's v is still the step's start, as NEURON
 * reads it (a gap junction's vgap: the other cell's v before the solve).
 * The CPU loop runs other blocks on their own (a whole minimum-delay
 * interval without waiting), so a target in another block is read through
 * a copy made at the start of each step, between the intervals, which are
 * then one step long (the same values as in place: every cell's v at the
 * step's start; writes through such a POINTER do not reach the target). */
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "net/net_impl.h"
#include "sim/sim_impl.h"

int64_t ns_net_instance_at(const sim_mech_shape *ms, int32_t node) {
    int32_t lo = 0, hi = ms->n;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (ms->node[mid] < node) lo = mid + 1;
        else hi = mid;
    }
    return lo < ms->n && ms->node[lo] == node ? lo : -1;
}

ns_status ns_net_pointer_absent(const ns_sim_t *sim, int64_t syn, const ns_mech_desc *d, int k, const net_ptr *to) {
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "network: synapse %lld (%s): POINTER %s reaches %s, which is not inserted at compartment %d of cell "
                   "%lld",
                   (long long)syn, d->name, d->pointer_names[k], sim->model->mechs[to->mech].desc->name, (int)to->node,
                   (long long)to->cell);
}

/* the address of `to` in block `tb` at lane l; NULL with the error set */
static double *target(const ns_sim_t *sim, const net_block_in *tb, int32_t l, const net_ptr *to, int64_t syn,
                      const ns_mech_desc *d, int k) {
    const sim_model *m = sim->model;
    const int64_t nw = (int64_t)sim->shapes[tb->shape].n * tb->w;
    const int64_t at = (int64_t)(tb->pos ? tb->pos[to->node] : to->node) * tb->w + l;
    if (to->ion >= 0) return ns_model_block_ion_data(tb->mech, to->ion) + (int64_t)to->q * nw + at;
    if (to->mech < 0) return tb->v + at;
    const int64_t inst = ns_net_instance_at(&m->per_shape[(size_t)tb->shape * m->n_mechs + to->mech], to->node);
    if (inst < 0) {
        ns_net_pointer_absent(sim, syn, d, k, to);
        return NULL;
    }
    return ns_model_block_field_data(tb->mech, to->mech, to->field) +
           (int64_t)ns_model_block_slot(tb->mech, to->mech, (int32_t)inst) * tb->w + l;
}

ns_status ns_net_pointer_of(const sim_net *net, const ns_mech_desc *d, int64_t syn, int k, const net_ptr **to) {
    const net_syn *sy = &net->syns[syn];
    *to = sy->ptr_at >= 0 ? &net->ptrs[sy->ptr_at + k] : NULL;
    if (!*to || (*to)->cell < 0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "network: synapse %lld (%s, cell %lld): POINTER %s is not connected "
                       "(ns_sim_set_pointer; NEURON's setpointer)",
                       (long long)syn, d->name, (long long)sy->cell, d->pointer_names[k]);
    return NS_OK;
}

ns_status ns_net_point_pointers(const ns_sim_t *sim, const net_block_in *in, const int64_t *syns, int32_t cnt,
                                net_point *pt) {
    const ns_mech_desc *d = pt->desc;
    pt->ptr_store = NULL;
    pt->ptr = NULL;
    if (d->n_pointers == 0) return NS_OK;
    sim_net *net = sim->net;
    pt->ptr_store = calloc((size_t)d->n_pointers * (size_t)(cnt > 0 ? cnt : 1), sizeof *pt->ptr_store);
    pt->ptr = malloc((size_t)d->n_pointers * sizeof *pt->ptr);
    if (!pt->ptr_store || !pt->ptr) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: POINTERs of %s", d->name);
    for (int k = 0; k < d->n_pointers; ++k) pt->ptr[k] = pt->ptr_store + (size_t)k * (size_t)cnt;
    for (int32_t i = 0; i < cnt; ++i) {
        for (int k = 0; k < d->n_pointers; ++k) {
            const net_ptr *to = NULL;
            const ns_status st = ns_net_pointer_of(net, d, syns[i], k, &to);
            if (st != NS_OK) return st;
            /* the target's block and lane: this block first */
            const net_block_in *tb = NULL;
            int32_t l = -1;
            for (int64_t b = -1; b < net->build_n && l < 0; ++b) {
                tb = b < 0 ? in : &net->build_in[b];
                for (int32_t q = 0; q < tb->w; ++q)
                    if (tb->cell[q] == to->cell) l = q;
            }
            if (l < 0)
                return ns_fail(NS_ERR_INVALID_ARGUMENT, "network: synapse %lld (%s): POINTER %s: cell %lld is in no "
                               "block", (long long)syns[i], d->name, d->pointer_names[k], (long long)to->cell);
            double *addr = target(sim, tb, l, to, syns[i], d, k);
            if (!addr) return NS_ERR_INVALID_ARGUMENT;
            if (tb != in) { /* another block: through the copy of each step's start */
                net->snap_src[net->n_snap] = addr;
                addr = &net->snap_val[net->n_snap++];
            }
            pt->ptr[k][i] = addr;
        }
    }
    return NS_OK;
}

void ns_net_pointer_snapshot(sim_net *net) {
    for (int64_t j = 0; j < net->n_snap; ++j) net->snap_val[j] = *net->snap_src[j];
}
