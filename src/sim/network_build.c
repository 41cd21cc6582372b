/* NEURON's finitialize for a simulation's network (ns_net_build, at
 * ns_sim_init): the synapses' instances per CPU lane block with their
 * POINTERs (net/pointer.c: a target in another block through a copy made at
 * each step's start), the detectors' state from v, the connections'
 * NET_RECEIVE INITIAL (net/events.c), the queues empty; the same for a
 * device loop (ns_net_build_device). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/network.h"
#include "core/error.h"

static int cmp_key(const void *a, const void *b) {
    const int32_t x = ((const int32_t *)a)[0], y = ((const int32_t *)b)[0];
    return (x > y) - (x < y);
}

ns_status ns_net_pointer_absent(const ns_sim_t *sim, int64_t syn, const ns_mech_desc *d, int k, const net_ptr *to) {
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "network: synapse %lld (%s): POINTER %s reaches %s, which is not inserted at compartment %d of cell "
                   "%lld",
                   (long long)syn, d->name, d->pointer_names[k], sim->model->mechs[to->mech].desc->name, (int)to->node,
                   (long long)to->cell);
}

/* the address of `to` in block `tb` at lane l; NULL where its mechanism is not inserted at that compartment */
static double *target(const ns_sim_t *sim, const net_block_in *tb, int32_t l, const net_ptr *to) {
    const sim_model *m = sim->model;
    const int64_t nw = (int64_t)sim->shapes[tb->shape].n * tb->w;
    const int64_t at = (int64_t)(tb->pos ? tb->pos[to->node] : to->node) * tb->w + l;
    if (to->ion >= 0) return ns_model_block_ion_data(tb->mech, to->ion) + (int64_t)to->q * nw + at;
    if (to->mech < 0) return tb->v + at;
    const int64_t inst = ns_net_instance_at(&m->per_shape[(size_t)tb->shape * m->n_mechs + to->mech], to->node);
    if (inst < 0) return NULL;
    return ns_model_block_field_data(tb->mech, to->mech, to->field) +
           (int64_t)ns_model_block_slot(tb->mech, to->mech, (int32_t)inst) * tb->w + l;
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
            double *addr = target(sim, tb, l, to);
            if (!addr) return ns_net_pointer_absent(sim, syns[i], d, k, to);
            if (tb != in) { /* another block: through the copy of each step's start */
                net->snap_src[net->n_snap] = addr;
                addr = &net->snap_val[net->n_snap++];
            }
            pt->ptr[k][i] = addr;
        }
    }
    return NS_OK;
}

/* A density mechanism's unconnected POINTERs reach the block's placeholder (ns_sim_create's
 * initialisation: ns_net_density_unset found them, the simulation refuses to advance). */
static void density_unset(ns_sim_t *sim, int64_t n_blocks, const net_block_in *in) {
    const sim_model *m = sim->model;
    for (int64_t b = 0; m && b < n_blocks; ++b)
        for (int32_t k = 0; in[b].mech && k < m->n_mechs; ++k) {
            const ns_mech_desc *d = m->mechs[k].desc;
            const int64_t n = ns_model_block_instances(in[b].mech, k);
            if (d->n_pointers == 0 || n == 0) continue;
            double ***ptr = ns_model_block_pointer_arrays(in[b].mech, k);
            for (int q = 0; q < d->n_pointers; ++q)
                for (int64_t i = 0; i < n; ++i)
                    if (!ptr[q][i]) ptr[q][i] = ns_model_block_pointer_unset(in[b].mech, k);
        }
}

ns_status ns_net_density_unset(ns_sim_t *sim) {
    const sim_model *m = sim->model;
    const sim_net *net = sim->net;
    sim->ptr_unset = 0;
    for (int32_t k = 0; m && k < m->n_mechs; ++k) {
        const ns_mech_desc *d = m->mechs[k].desc;
        if (d->n_pointers == 0) continue;
        int64_t *first = malloc((size_t)(sim->n_cells + 1) * sizeof *first); /* each cell's first instance */
        if (!first) return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: POINTERs of %s", d->name);
        first[0] = 0;
        for (int64_t c = 0; c < sim->n_cells; ++c)
            first[c + 1] = first[c] + m->per_shape[(size_t)sim->cell_shape[c] * m->n_mechs + k].n;
        unsigned char *set = calloc((size_t)(first[sim->n_cells] * d->n_pointers + 1), 1);
        if (!set) {
            free(first);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: POINTERs of %s", d->name);
        }
        for (int64_t j = 0; net && j < net->n_dptrs; ++j) {
            const net_dptr *p = &net->dptrs[j];
            if (p->mech != k) continue;
            const int64_t i = ns_net_instance_at(&m->per_shape[(size_t)sim->cell_shape[p->cell] * m->n_mechs + k],
                                                 p->node);
            if (i >= 0) set[(first[p->cell] + i) * d->n_pointers + p->k] = 1;
        }
        ns_status st = NS_OK;
        for (int64_t c = 0; c < sim->n_cells && st == NS_OK; ++c)
            for (int64_t i = first[c]; i < first[c + 1] && st == NS_OK; ++i)
                for (int q = 0; q < d->n_pointers && st == NS_OK; ++q) {
                    if (set[i * d->n_pointers + q]) continue;
                    sim->ptr_unset = 1; /* ns_sim_advance refuses until an ns_sim_init finds it connected */
                    if (sim->creating) continue;
                    const sim_mech_shape *ms = &m->per_shape[(size_t)sim->cell_shape[c] * m->n_mechs + k];
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                                 "simulation: POINTER %s_%s at compartment %d of cell %lld is not connected "
                                 "(ns_sim_set_model_pointer; NEURON's setpointer: it \"wasn't made to point to "
                                 "anything\")", d->pointer_names[q], d->name, (int)ms->node[i - first[c]],
                                 (long long)c);
                }
        free(first);
        free(set);
        if (st != NS_OK) return st;
    }
    return NS_OK;
}

/* Every block's density-mechanism POINTERs (the model's mechanisms that have
 * them): each instance's address from the settings (sim_net.dptrs, NULL
 * net: none), a target on another cell through the copy of each step's
 * start (snap_val, before the synapses' ones), then an error naming the
 * first instance left unconnected. Before the INITIALs (ns_cpu_init): the
 * copies hold the values they start from. */
ns_status ns_net_density_pointers(ns_sim_t *sim, int64_t n_blocks, const net_block_in *in) {
    const sim_model *m = sim->model;
    sim_net *net = sim->net;
    int64_t *blk = NULL;
    int32_t *lane = NULL;
    if (net) {
        free(net->snap_src);
        free(net->snap_val);
        net->snap_src = malloc((size_t)(net->n_ptrs + net->n_dptrs + 1) * sizeof *net->snap_src);
        net->snap_val = malloc((size_t)(net->n_ptrs + net->n_dptrs + 1) * sizeof *net->snap_val);
        net->n_snap = net->n_dsnap = 0;
        blk = malloc((size_t)(sim->n_cells + 1) * sizeof *blk);
        lane = malloc((size_t)(sim->n_cells + 1) * sizeof *lane);
        if (!net->snap_src || !net->snap_val || !blk || !lane) {
            free(blk);
            free(lane);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: POINTERs of %lld cells", (long long)sim->n_cells);
        }
        for (int64_t c = 0; c < sim->n_cells; ++c) blk[c] = -1;
        for (int64_t b = 0; b < n_blocks; ++b)
            for (int32_t q = 0; q < in[b].w; ++q)
                if (in[b].cell[q] >= 0 && in[b].cell[q] < sim->n_cells) {
                    blk[in[b].cell[q]] = b;
                    lane[in[b].cell[q]] = q;
                }
    }
    ns_status st = NS_OK;
    for (int64_t b = 0; m && b < n_blocks && st == NS_OK; ++b) /* every address NULL */
        for (int32_t k = 0; in[b].mech && k < m->n_mechs && st == NS_OK; ++k) {
            double ***ptr = NULL;
            if (m->mechs[k].desc->n_pointers > 0 && ns_model_block_instances(in[b].mech, k) > 0)
                st = ns_model_block_pointers(in[b].mech, k, &ptr);
        }
    for (int64_t j = 0; net && j < net->n_dptrs && st == NS_OK; ++j) {
        const net_dptr *p = &net->dptrs[j];
        if (blk[p->cell] < 0 || blk[p->to.cell] < 0) continue; /* another process's cell */
        const net_block_in *ib = &in[blk[p->cell]], *tb = &in[blk[p->to.cell]];
        const sim_mech_shape *ms = &m->per_shape[(size_t)ib->shape * m->n_mechs + p->mech];
        const int64_t inst = ns_net_instance_at(ms, p->node);
        double *addr = target(sim, tb, lane[p->to.cell], &p->to);
        if (!addr || inst < 0) {
            const ns_mech_desc *d = m->mechs[p->mech].desc;
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "simulation: POINTER %s_%s at compartment %d of cell %lld reaches "
                         "%s, which is not inserted at compartment %d of cell %lld",
                         d->pointer_names[p->k], d->name, (int)p->node, (long long)p->cell,
                         m->mechs[p->to.mech].desc->name, (int)p->to.node, (long long)p->to.cell);
            break;
        }
        if (p->to.cell != p->cell) { /* another cell: through the copy of each step's start */
            net->snap_src[net->n_snap] = addr;
            addr = &net->snap_val[net->n_snap++];
        }
        double ***ptr = ns_model_block_pointer_arrays(ib->mech, p->mech);
        ptr[p->k][(int64_t)ns_model_block_slot(ib->mech, p->mech, (int32_t)inst) * ib->w + lane[p->cell]] = addr;
    }
    free(blk);
    free(lane);
    if (st == NS_OK && sim->ptr_unset) density_unset(sim, n_blocks, in);
    if (st == NS_OK && net) {
        net->n_dsnap = net->n_snap;
        ns_net_pointer_snapshot(net);
    }
    return st;
}

/* The instances of the block's synapses of catalogue entry `desc`. */
static ns_status point_create(ns_sim_t *sim, const net_block_in *in, int32_t desc, const int64_t *syns, int32_t cnt,
                              const int32_t *lane, net_point *pt) {
    const sim_model *m = sim->model;
    const ns_mech_desc *d = m->descs[desc];
    sim_net *net = sim->net;
    pt->desc = d;
    pt->key = ns_sim_model_key(m, desc);
    ns_status fst = ns_sim_model_ftables_given(m, desc);
    if (fst != NS_OK) return fst;
    const size_t doubles = (size_t)d->n_fields * (size_t)cnt + (size_t)d->n_globals + (size_t)d->table_size + 1;
    pt->store = calloc(doubles, sizeof(double));
    pt->field = malloc((size_t)(d->n_fields > 0 ? d->n_fields : 1) * sizeof *pt->field);
    pt->node_index = malloc((size_t)cnt * sizeof *pt->node_index);
    pt->weight = malloc((size_t)cnt * sizeof *pt->weight);
    if (!pt->store || !pt->field || !pt->node_index || !pt->weight)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %d synapses of a block", (int)cnt);
    for (int f = 0; f < d->n_fields; ++f) pt->field[f] = pt->store + (size_t)f * (size_t)cnt;
    double *globals = pt->store + (size_t)d->n_fields * (size_t)cnt;
    /* the mod file's GLOBALs (a model's global statements name inserted density mechanisms) */
    for (int g = 0; g < d->n_globals; ++g) globals[g] = d->global_defaults[g];
    const sim_shape *s = &sim->shapes[in->shape];
    for (int32_t i = 0; i < cnt; ++i) {
        const net_syn *sy = &net->syns[syns[i]];
        pt->node_index[i] = (in->pos ? in->pos[sy->node] : sy->node) * in->w + lane[i];
        pt->weight[i] = s->stim_scale[sy->node]; /* 1e2 / area, area 100 at zero-area nodes */
        for (int p = 0; p < d->n_params; ++p) pt->field[p][i] = net->params[sy->param_at + p];
        for (int q = 0; q < d->has_random; ++q) {
            double r[4];
            ns_net_syn_random(net, d, syns[i], q, r);
            for (int k = 0; k < 4; ++k) pt->field[d->random_field + 4 * q + k][i] = r[k];
        }
    }
    for (int j = 0; j < d->n_ions; ++j) {
        int32_t ion = -1;
        for (int32_t q = 0; q < m->n_ions; ++q)
            if (strcmp(m->ions[q].name, d->ions[j].name) == 0) ion = q;
        if (ion < 0)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "network: synapse type %s uses the ion %s, which no mechanism of the model uses", d->name,
                           d->ions[j].name);
        double *base = ns_model_block_ion_data(in->mech, ion);
        const int64_t nw = (int64_t)s->n * in->w;
        const int keep = m->ions[ion].read_i;
        pt->ions[j] = (ns_mech_ion_view){base, base + nw, base + 2 * nw, keep ? base + 3 * nw : NULL,
                                         keep ? base + 4 * nw : NULL, NULL};
    }
    ns_status pst = ns_net_point_pointers(sim, in, syns, cnt, pt);
    if (pst != NS_OK) return pst;
    memset(&pt->p, 0, sizeof pt->p);
    pt->p.pointer = (double *const *const *)pt->ptr;
    pt->p.n = cnt;
    pt->p.node_index = pt->node_index;
    pt->p.field = pt->field;
    pt->p.ftable = m->ftables ? m->ftables[desc] : NULL;
    pt->p.global = globals;
    pt->p.table = globals + d->n_globals;
    pt->p.weight = pt->weight;
    pt->p.ion = pt->ions;
    if (in->mech) { /* area/diam in a mechanism: the block's, as its density mechanisms' */
        pt->p.area = ns_model_block_geom(in->mech);
        pt->p.diam = pt->p.area + (int64_t)s->n * in->w;
        pt->p.error = ns_model_block_error(in->mech);
    }
    return NS_OK;
}

static ns_status block_build(ns_sim_t *sim, const net_block_in *in, const int64_t *syn_begin,
                             const int64_t *syn_order, const int64_t *det_begin, const int64_t *det_order, int64_t b,
                             net_block **out) {
    sim_net *net = sim->net;
    const sim_model *m = sim->model;
    net_block *nb = calloc(1, sizeof *nb);
    if (!nb) return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    *out = nb;
    /* synapses of the block's cells, by type (key order), then lane, then id */
    int64_t cnt = 0, dets = 0;
    for (int32_t j = 0; j < in->w; ++j) {
        cnt += syn_begin[in->cell[j] + 1] - syn_begin[in->cell[j]];
        dets += det_begin[in->cell[j] + 1] - det_begin[in->cell[j]];
    }
    int32_t *keys = malloc((size_t)(2 * (cnt > 0 ? cnt : 1)) * sizeof *keys); /* (key, desc) pairs */
    int64_t *ids = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *ids);
    int32_t *lane = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *lane);
    ns_status st = keys && ids && lane ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    int32_t n_types = 0;
    /* the distinct types, sorted by key */
    for (int32_t j = 0; j < in->w && st == NS_OK; ++j)
        for (int64_t q = syn_begin[in->cell[j]]; q < syn_begin[in->cell[j] + 1]; ++q) {
            const int32_t desc = net->syns[syn_order[q]].desc;
            int seen = 0;
            for (int32_t t = 0; t < n_types; ++t) seen |= keys[2 * t + 1] == desc;
            if (!seen) {
                keys[2 * n_types] = ns_sim_model_key(m, desc);
                keys[2 * n_types + 1] = desc;
                n_types++;
            }
        }
    if (st == NS_OK) qsort(keys, (size_t)n_types, 2 * sizeof *keys, cmp_key);
    if (st == NS_OK && n_types > 0) {
        nb->points = calloc((size_t)n_types, sizeof *nb->points);
        if (!nb->points) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    }
    for (int32_t t = 0; t < n_types && st == NS_OK; ++t) {
        const int32_t desc = keys[2 * t + 1];
        int32_t c = 0;
        for (int32_t j = 0; j < in->w; ++j)
            for (int64_t q = syn_begin[in->cell[j]]; q < syn_begin[in->cell[j] + 1]; ++q) {
                const int64_t id = syn_order[q];
                if (net->syns[id].desc != desc) continue;
                ids[c] = id;
                lane[c] = j;
                net->syn_block[id] = b;
                net->syn_slot[id] = t;
                net->syn_inst[id] = c;
                ++c;
            }
        st = point_create(sim, in, desc, ids, c, lane, &nb->points[t]);
        nb->n_points = t + 1;
        nb->points[t].nb = nb;
        nb->points[t].slot = t;
        if (st == NS_OK) st = ns_net_events_attach(net, &nb->points[t], ids, c);
    }
    free(keys);
    free(ids);
    free(lane);
    if (st != NS_OK) return st;
    /* detectors */
    nb->n_det = (int32_t)dets;
    nb->det_source = malloc((size_t)(dets > 0 ? dets : 1) * sizeof *nb->det_source);
    nb->det_at = malloc((size_t)(dets > 0 ? dets : 1) * sizeof *nb->det_at);
    nb->det_thr = malloc((size_t)(dets > 0 ? dets : 1) * sizeof *nb->det_thr);
    nb->det_above = malloc((size_t)(dets > 0 ? dets : 1));
    if (!nb->det_source || !nb->det_at || !nb->det_thr || !nb->det_above)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: block");
    int32_t k = 0;
    for (int32_t j = 0; j < in->w; ++j)
        for (int64_t q = det_begin[in->cell[j]]; q < det_begin[in->cell[j] + 1]; ++q, ++k) {
            const net_source *s = &net->sources[det_order[q]];
            nb->det_source[k] = det_order[q];
            nb->det_at[k] = (int64_t)(in->pos ? in->pos[s->node] : s->node) * in->w + j;
            nb->det_thr[k] = s->threshold;
            nb->det_above[k] = 0; /* NEURON's flag starts false: v_init above the threshold is a spike at 0 */
        }
    return NS_OK;
}

/* Counting sort of items by cell: begin[n_cells + 1], order (ascending ids within a cell). */
static ns_status by_cell(int64_t n_cells, int64_t n, const int64_t *cell, int64_t **begin, int64_t **order) {
    *begin = calloc((size_t)n_cells + 1, sizeof **begin);
    *order = malloc((size_t)(n > 0 ? n : 1) * sizeof **order);
    int64_t *fill = malloc((size_t)n_cells * sizeof *fill);
    if (!*begin || !*order || !fill) {
        free(fill);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: index of %lld items", (long long)n);
    }
    for (int64_t k = 0; k < n; ++k)
        if (cell[k] >= 0) (*begin)[cell[k] + 1]++;
    for (int64_t c = 0; c < n_cells; ++c) (*begin)[c + 1] += (*begin)[c];
    memcpy(fill, *begin, (size_t)n_cells * sizeof *fill);
    for (int64_t k = 0; k < n; ++k)
        if (cell[k] >= 0) (*order)[fill[cell[k]]++] = k;
    free(fill);
    return NS_OK;
}

ns_status ns_net_build(ns_sim_t *sim, int64_t n_blocks, const net_block_in *in) {
    sim_net *net = sim->net;
    ns_net_free_built(net);
    const int64_t nc = sim->n_cells;
    ns_status st = NS_OK;
    int64_t *cells = malloc((size_t)((net->n_syns > net->n_sources ? net->n_syns : net->n_sources) + 1) *
                            sizeof *cells);
    int64_t *syn_begin = NULL, *syn_order = NULL, *det_begin = NULL, *det_order = NULL;
    net->blocks = calloc((size_t)(n_blocks > 0 ? n_blocks : 1), sizeof *net->blocks);
    net->syn_block = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_block);
    net->syn_slot = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_slot);
    net->syn_inst = malloc((size_t)(net->n_syns + 1) * sizeof *net->syn_inst);
    net->out_begin = calloc((size_t)net->n_sources + 1, sizeof *net->out_begin);
    net->out_order = malloc((size_t)(net->n_conns + 1) * sizeof *net->out_order);
    net->emit = malloc((size_t)(net->n_sources + 1) * sizeof *net->emit);
    net->build_in = in;
    net->build_n = n_blocks;
    if (!cells || !net->blocks || !net->syn_block || !net->syn_slot || !net->syn_inst || !net->out_begin ||
        !net->out_order || !net->emit)
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "network: %lld synapses", (long long)net->n_syns);
    if (st == NS_OK) {
        net->n_emit = 0; /* a loop interval visits these, not every detector */
        for (int64_t k = 0; k < net->n_sources; ++k)
            if (net->sources[k].cell < 0 && !net->sources[k].point) net->emit[net->n_emit++] = k;
        net->n_blocks = n_blocks;
        for (int64_t k = 0; k < net->n_syns; ++k) cells[k] = net->syns[k].cell;
        st = by_cell(nc, net->n_syns, cells, &syn_begin, &syn_order);
    }
    if (st == NS_OK) st = ns_net_events_index(net, sim->params.dt);
    if (st == NS_OK) {
        for (int64_t k = 0; k < net->n_sources; ++k) cells[k] = net->sources[k].cell;
        st = by_cell(nc, net->n_sources, cells, &det_begin, &det_order);
    }
    for (int64_t b = 0; b < n_blocks && st == NS_OK; ++b)
        st = block_build(sim, &in[b], syn_begin, syn_order, det_begin, det_order, b, &net->blocks[b]);
    net->build_in = NULL;
    if (st == NS_OK) ns_net_pointer_snapshot(net);
    /* connections by source, in order of creation; the minimum delay */
    if (st == NS_OK) {
        net->min_delay = INFINITY;
        for (int64_t k = 0; k < net->n_conns; ++k) {
            net->out_begin[net->conns[k].source + 1]++;
            if (net->conns[k].delay < net->min_delay) net->min_delay = net->conns[k].delay;
        }
        for (int64_t s = 0; s < net->n_sources; ++s) net->out_begin[s + 1] += net->out_begin[s];
        int64_t *fill = cells; /* reused: n_sources + 1 entries at least */
        memcpy(fill, net->out_begin, (size_t)net->n_sources * sizeof *fill);
        for (int64_t k = 0; k < net->n_conns; ++k) net->out_order[fill[net->conns[k].source]++] = k;
    }
    free(cells);
    free(syn_begin);
    free(syn_order);
    free(det_begin);
    free(det_order);
    if (st != NS_OK) {
        ns_net_free_built(net);
        return st;
    }
    /* finitialize: the synapses' INITIAL in type order, no spikes, no events */
    for (int64_t b = 0; b < n_blocks; ++b) {
        net_block *nb = net->blocks[b];
        for (int32_t t = 0; t < nb->n_points; ++t) {
            net_point *pt = &nb->points[t];
            pt->p.v = in[b].v;
            pt->p.rhs = pt->p.d = NULL;
            pt->p.t = 0.0;
            pt->p.dt = sim->params.dt;
            pt->p.celsius = sim->params.celsius;
            if (pt->p.n > 0 && pt->desc->hooks[NS_MECH_CONSTRUCTOR]) { /* once per instance: made here */
                pt->p.v = NULL;
                pt->desc->hooks[NS_MECH_CONSTRUCTOR](&pt->p);
                pt->p.v = in[b].v;
            }
            pt->constructed = 1;
        }
        ns_net_hook(nb, NS_MECH_BEFORE_INITIAL, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
        for (int32_t t = 0; t < nb->n_points; ++t)
            if (nb->points[t].p.n > 0) nb->points[t].desc->init(&nb->points[t].p);
        ns_net_hook(nb, NS_MECH_AFTER_INITIAL, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
        ns_net_hook(nb, NS_MECH_BEFORE_BREAKPOINT, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
        ns_net_hook(nb, NS_MECH_BEFORE_STEP, in[b].v, 0.0, sim->params.dt, sim->params.celsius);
    }
    ns_net_events_init(sim); /* the connections' NET_RECEIVE INITIAL */
    for (int64_t s = 0; s < net->n_sources; ++s) {
        net->sources[s].n_spikes = 0;
        net->sources[s].cursor = 0;
        if (net->sources[s].poisson) ns_net_poisson_reset(&net->sources[s]);
    }
    /* NEURON's first check_thresh, at t = 0 (v = v_init) */
    for (int64_t b = 0; b < n_blocks; ++b)
        if (ns_net_detect(net->blocks[b], in[b].v, 0.0) != 0) {
            ns_net_free_built(net);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "network: spikes at t = 0");
        }
    net->seq = 0;
    net->dirty = 0;
    net->device_fan = 0;
    net->n_ext = net->n_fan = 0;
    return NS_OK;
}

ns_status ns_net_build_device(ns_sim_t *sim) {
    const ns_status st = ns_net_build(sim, 0, NULL);
    if (st == NS_OK) sim->net->device_fan = 1;
    return st;
}

void ns_net_events_init(ns_sim_t *sim) {
    sim_net *net = sim->net;
    for (int64_t k = 0; k < net->n_conns; ++k) {
        const net_conn *c = &net->conns[k];
        const ns_mech_desc *d = sim->model->descs[net->syns[c->synapse].desc];
        if (!d->net_init || net->n_blocks == 0) continue;
        net_point *pt = &net->blocks[net->syn_block[c->synapse]]->points[net->syn_slot[c->synapse]];
        pt->p.t = 0.0;
        d->net_init(&pt->p, net->syn_inst[c->synapse], net->wvec + c->w_at);
    }
}
