/* A network file's description (io/netfile_impl.h) applied: the one
 * traversal that makes its cells' synapses, sources and connections through
 * a table of calls (ns_network_calls: a simulation's, or a simulation spread
 * over processes), and the simulation made from it (docs/networks.md,
 * "Network files"). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "core/rng.h"
#include "io/netfile_impl.h"
#include "sim/dist_impl.h"
#include "sim/policy.h"
#include "core/device_impl.h"
#include "neurosolve/network.h"
#include "neurosolve/number.h"

/* ------------------------------------------------------------ apply */

/* The compartment of a location in a cell. */
static ns_status locate_at(const ns_network_t *net, const stmt *s, const loc *l, const ns_cell_t *cell, int64_t c,
                           int32_t *node) {
    ns_status st = ns_location_compartment(cell, &l->at, node);
    if (st != NS_OK) {
        char where[400];
        snprintf(where, sizeof where, "%s:%d: cell %lld (%s)", net->name, s->line, (long long)c,
                 net->morph[net->cell_morph[c]]);
        ns_error_prefix(where);
    }
    return st;
}

static ns_status locate(const ns_network_t *net, const stmt *s, const ns_cell_t *cell, int64_t c, int32_t *node) {
    return locate_at(net, s, &s->where, cell, c, node);
}

static ns_status at_line(const ns_network_t *net, const stmt *s, ns_status st) {
    if (st != NS_OK) {
        char where[300];
        if (s->line > 0) snprintf(where, sizeof where, "%s:%d", net->name, s->line);
        else snprintf(where, sizeof where, "%s", net->name);
        ns_error_prefix(where);
    }
    return st;
}

/* The connections of a connect line; *item: the index of the one being made. */
static ns_status apply_connect(const ns_network_t *net, const stmt *s, const ns_network_calls *t, void *target,
                               int64_t syn0, int64_t src0, int64_t *item) {
    ns_status st = NS_OK;
    *item = 0;
    if (!s->pairs) {
        const int64_t n = s->a.n > s->b.n ? s->a.n : s->b.n;
        for (int64_t k = 0; k < n && st == NS_OK; ++k) {
            *item = k;
            st = t->connect(target, src0 + s->a.v[s->a.n == 1 ? 0 : k], syn0 + s->b.v[s->b.n == 1 ? 0 : k],
                            s->weight, s->delay);
        }
        return at_line(net, s, st);
    }
    /* every pair, source-major; with p < 1 each kept after a draw of the line's own stream */
    ns_rng rng;
    ns_rng_seed(&rng, s->seed, NET_CONNECT_STREAM);
    const int64_t pairs = s->a.n * s->b.n;
    /* p < 1: the gaps between kept pairs are geometric (a Bernoulli draw per
     * pair, in a cost proportional to the pairs kept) */
    const double lq = s->p < 1.0 ? log1p(-s->p) : 0.0;
    for (int64_t k = -1; st == NS_OK;) {
        if (s->p >= 1.0) ++k;
        else if (s->p <= 0.0) break;
        else {
            const double u = (double)((ns_rng_next(&rng) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
            const double gap = floor(log(u) / lq);
            if (!(gap < (double)(pairs - k))) break;
            k += 1 + (int64_t)gap;
        }
        if (k >= pairs) break;
        *item = k;
        st = t->connect(target, src0 + s->a.v[k / s->b.n], syn0 + s->b.v[k % s->b.n], s->weight, s->delay);
    }
    return at_line(net, s, st);
}

/* SONATA's section numbering (BMTK's `afferent_section_id`): the index into
 * the `all` SectionList that Import3d's instantiate(cell) fills, which holds
 * the sections grouped by SWC type in increasing type order (one array per
 * type: soma, axon, dend, apic, dend_5, ...), each group in Import3d's
 * section order (import3d_gui.hoc, set_nameindex and instantiate). Our
 * sections are in Import3d's order: a stable sort by type gives BMTK's.
 * order[k] = our section of SONATA section k. */
static ns_status sonata_order(const ns_cell_t *cell, int32_t **out, int32_t *n_out) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    const int32_t n = ci.sections;
    int32_t *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    int32_t *type = malloc((size_t)(n > 0 ? n : 1) * sizeof *type);
    if (!order || !type) {
        free(order);
        free(type);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "section order");
    }
    for (int32_t k = 0; k < n; ++k) {
        ns_section_info si;
        ns_cell_get_section(cell, k, &si);
        type[k] = si.type;
        order[k] = k;
    }
    /* insertion sort by type, stable (sections per cell: thousands at most) */
    for (int32_t k = 1; k < n; ++k) {
        const int32_t v = order[k];
        int32_t q = k;
        while (q > 0 && type[order[q - 1]] > type[v]) {
            order[q] = order[q - 1];
            --q;
        }
        order[q] = v;
    }
    free(type);
    *out = order;
    *n_out = n;
    return NS_OK;
}

ns_status ns_network_sonata_section(const ns_cell_t *cell, int32_t sonata_section, int32_t *section) {
    if (!cell || !section) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_sonata_section: NULL argument");
    int32_t *order = NULL, n = 0;
    ns_status st = sonata_order(cell, &order, &n);
    if (st != NS_OK) return st;
    if (sonata_section < 0 || sonata_section >= n)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "no section %d (%d sections)", (int)sonata_section, (int)n);
    else *section = order[sonata_section];
    free(order);
    return st;
}

/* The edges of an edge block: per edge a synapse (its type's parameters,
 * then the edge's own) and a connection from its source. */
static ns_status apply_edges(const ns_network_t *net, const ns_netbuild_edges *e, const ns_network_calls *t,
                             void *target, const ns_cell_t *const *shapes, int64_t src0, int64_t *item) {
    ns_status st = NS_OK;
    int32_t **order = calloc((size_t)net->n_morph, sizeof *order);
    int32_t *n_order = calloc((size_t)net->n_morph, sizeof *n_order);
    if (!order || !n_order) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", e->label);
    for (int64_t k = 0; k < e->n && st == NS_OK; ++k) {
        *item = k;
        const int64_t c = e->cell[k];
        const int32_t m = net->cell_morph[c];
        if (!order[m] && (st = sonata_order(shapes[m], &order[m], &n_order[m])) != NS_OK) break;
        const int32_t sec = e->section[k];
        if (sec < 0 || sec >= n_order[m]) {
            st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                         "%s: edge %lld: target node %lld (%s) has no section %d (%d sections; SONATA's numbering)",
                         e->label, (long long)k, (long long)e->node[k], net->morph[m], (int)sec, (int)n_order[m]);
            break;
        }
        int32_t node = -1;
        st = ns_cell_locate(shapes[m], order[m][sec], e->x[k], &node);
        int64_t id = -1;
        const ns_netbuild_syntype *ty = &e->types[e->type[k]];
        if (st == NS_OK) st = t->add_synapse(target, c, node, ty->mech, &id);
        for (int32_t p = 0; p < ty->n_params && st == NS_OK; ++p)
            st = t->synapse_set(target, id, ty->name[p], ty->value[p]);
        for (int32_t p = 0; p < e->n_pp && st == NS_OK; ++p)
            if (!isnan(e->pp[k * e->n_pp + p])) st = t->synapse_set(target, id, e->pp_names[p], e->pp[k * e->n_pp + p]);
        if (st == NS_OK) st = t->connect(target, src0 + e->src[k], id, e->weight[k], e->delay[k]);
        if (st != NS_OK) {
            char where[700];
            snprintf(where, sizeof where, "%s: edge %lld (target node %lld, section %d(%g))", e->label, (long long)k,
                     (long long)e->node[k], (int)sec, e->x[k]);
            ns_error_prefix(where);
        }
    }
    for (int32_t m = 0; order && m < net->n_morph; ++m) free(order[m]);
    free(order);
    free(n_order);
    return st;
}

ns_status ns_network_apply_calls(const ns_network_t *net, const ns_network_calls *t, void *target,
                                 const ns_cell_t *const *shapes, ns_network_failure *failed) {
    if (!net || !t || !target || !shapes)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_apply: NULL argument");
    ns_network_failure at = {-1, 0};
    ns_status st = NS_OK;
    if (t->cells(target) != net->n_cells)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %lld cells, the simulation has %lld", net->name,
                     (long long)net->n_cells, (long long)t->cells(target));
    for (int32_t k = 0; k < net->n_morph && st == NS_OK; ++k)
        if (!shapes[k])
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_apply: shape %d (%s) is NULL", (int)k, net->morph[k]);
    /* the simulation's cells have the shapes' sizes (a mismatch would put synapses elsewhere) */
    for (int64_t c = 0; c < net->n_cells && st == NS_OK; ++c) {
        const int64_t size = t->cell_compartments(target, c);
        if (size != ns_tree_size(ns_cell_tree(shapes[net->cell_morph[c]])))
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: cell %lld of the simulation has %lld compartments, %s has %d",
                         net->name, (long long)c, (long long)size, net->morph[net->cell_morph[c]],
                         (int)ns_tree_size(ns_cell_tree(shapes[net->cell_morph[c]])));
    }
    const int64_t syn0 = t->synapses(target), src0 = t->sources(target);
    for (int64_t q = 0; q < net->n_stmts && st == NS_OK; ++q) {
        const stmt *s = &net->stmts[q];
        at.statement = q;
        at.item = 0;
        switch (s->kind) {
        case S_SYN:
        case S_DET:
            for (int64_t k = 0; k < s->a.n && st == NS_OK; ++k) {
                const int64_t c = s->a.v[k];
                int32_t node = -1;
                at.item = k;
                st = locate(net, s, shapes[net->cell_morph[c]], c, &node);
                if (st != NS_OK) break;
                if (s->kind == S_DET) {
                    st = at_line(net, s, t->add_detector(target, c, node, s->threshold, NULL));
                    continue;
                }
                int64_t id = -1;
                st = at_line(net, s, t->add_synapse(target, c, node, s->mech, &id));
                for (int p = 0; p < s->n_params && st == NS_OK; ++p)
                    st = at_line(net, s, t->synapse_set(target, id, s->pname[p], s->pvalue[p]));
            }
            break;
        case S_TRAIN:
            st = at_line(net, s, t->add_spike_source(target, s->times, s->n_times, NULL));
            break;
        case S_POISSON:
            /* source k of the line: seed SEED + k */
            for (int64_t k = 0; k < s->count && st == NS_OK; ++k) {
                at.item = k;
                st = at_line(net, s,
                             t->add_poisson_source(target, s->rate, s->start, s->stop, s->seed + (uint64_t)k, NULL));
            }
            break;
        case S_CONNECT:
            st = apply_connect(net, s, t, target, syn0, src0, &at.item);
            break;
        case S_EDGES:
            st = apply_edges(net, s->edges, t, target, shapes, src0, &at.item);
            break;
        case S_POINT_SOURCE:
            for (int64_t k = 0; k < s->a.n && st == NS_OK; ++k) {
                at.item = k;
                if (!t->add_point_source)
                    st = at_line(net, s, ns_fail(NS_ERR_UNSUPPORTED, "source: point sources are not exchanged "
                                                                     "across processes (MPI) yet"));
                else st = at_line(net, s, t->add_point_source(target, syn0 + s->a.v[k], NULL));
            }
            break;
        case S_POINTER:
            for (int64_t k = 0; k < s->a.n && st == NS_OK; ++k) {
                const int64_t c = s->b.v[s->b.n == 1 ? 0 : k];
                int32_t node = -1;
                at.item = k;
                st = locate(net, s, shapes[net->cell_morph[c]], c, &node);
                if (st == NS_OK && !t->set_pointer)
                    st = at_line(net, s, ns_fail(NS_ERR_UNSUPPORTED, "pointer: POINTERs are not connected across "
                                                                     "processes (MPI) yet"));
                else if (st == NS_OK)
                    st = at_line(net, s, t->set_pointer(target, syn0 + s->a.v[k], s->mech, c, node, s->var));
            }
            break;
        case S_DPOINTER:
            for (int64_t k = 0; k < s->a.n && st == NS_OK; ++k) {
                const int64_t c = s->a.v[k], tc = s->b.v[s->b.n == 1 ? 0 : k];
                int32_t node = -1, tnode = -1;
                at.item = k;
                st = locate(net, s, shapes[net->cell_morph[c]], c, &node);
                if (st == NS_OK) st = locate_at(net, s, &s->to, shapes[net->cell_morph[tc]], tc, &tnode);
                if (st == NS_OK && !t->set_model_pointer)
                    st = at_line(net, s, ns_fail(NS_ERR_UNSUPPORTED, "pointer: POINTERs are not connected across "
                                                                     "processes (MPI) yet"));
                else if (st == NS_OK)
                    st = at_line(net, s, t->set_model_pointer(target, c, node, s->mech, tc, tnode, s->var));
            }
            break;
        }
    }
    if (st != NS_OK && failed) *failed = at;
    return st;
}

/* The single simulation's calls. */
static ns_status sim_add_synapse(void *t, int64_t c, int32_t k, const char *m, int64_t *id) {
    return ns_sim_add_synapse(t, c, k, m, id);
}
static ns_status sim_synapse_set(void *t, int64_t y, const char *n, double v) { return ns_sim_synapse_set(t, y, n, v); }
static ns_status sim_add_detector(void *t, int64_t c, int32_t k, double thr, int64_t *id) {
    return ns_sim_add_detector(t, c, k, thr, id);
}
static ns_status sim_add_spike_source(void *t, const double *x, int64_t n, int64_t *id) {
    return ns_sim_add_spike_source(t, x, n, id);
}
static ns_status sim_add_poisson_source(void *t, double r, double a, double b, uint64_t seed, int64_t *id) {
    return ns_sim_add_poisson_source(t, r, a, b, seed, id);
}
static ns_status sim_connect(void *t, int64_t a, int64_t b, double w, double d) { return ns_sim_connect(t, a, b, w, d); }
static int64_t sim_cells(const void *t) { return ns_sim_cells(t); }
static int64_t sim_cell_compartments(const void *t, int64_t c) {
    return ns_sim_cell_offset(t, c + 1) - ns_sim_cell_offset(t, c);
}
static int64_t sim_synapses(const void *t) { return ns_sim_synapses(t); }
static int64_t sim_sources(const void *t) { return ns_sim_sources(t); }
static ns_status sim_set_pointer(void *t, int64_t y, const char *p, int64_t c, int32_t k, const char *v) {
    return ns_sim_set_pointer(t, y, p, c, k, v);
}

static ns_status sim_set_model_pointer(void *t, int64_t c, int32_t k, const char *p, int64_t tc, int32_t tk,
                                       const char *v) {
    return ns_sim_set_model_pointer(t, c, k, p, tc, tk, v);
}
static ns_status sim_add_point_source(void *t, int64_t y, int64_t *id) { return ns_sim_add_point_source(t, y, id); }

static const ns_network_calls sim_calls = {sim_add_synapse,   sim_synapse_set, sim_add_detector,
                                           sim_add_spike_source, sim_add_poisson_source, sim_connect,
                                           sim_cells,         sim_cell_compartments, sim_synapses,
                                           sim_sources,       sim_set_pointer, sim_add_point_source,
                                           sim_set_model_pointer};

ns_status ns_network_apply(const ns_network_t *net, ns_sim_t *sim, const ns_cell_t *const *shapes) {
    ns_network_failure at = {-2, 0}; /* a NULL argument: before everything */
    const ns_status st = ns_network_apply_calls(net, &sim_calls, sim, shapes, &at);
    /* spread over processes: every process reports the failure that comes first in the file */
    return ns_sim_network_failure(sim, st, at.statement, at.item);
}

ns_status ns_network_sim_create(const ns_network_t *net, const ns_cell_t *const *shapes, const ns_sim_params *params,
                                const ns_sim_options *options, ns_sim_t **out) {
    if (!net || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_sim_create: NULL argument");
    *out = NULL;
    ns_sim_options o;
    if (options) o = *options;
    else ns_sim_options_init(&o);
    /* `auto`: the sim policy's backend for networks */
    if (o.backend == NS_BACKEND_AUTO) o.backend = ns_sim_auto_network_backend(ns_cuda_usable_devices());
    ns_sim_t *sim = NULL;
    ns_status st = ns_sim_create(net->n_morph, shapes, net->n_cells, net->cell_morph, params, &o, &sim);
    if (st == NS_OK) st = ns_network_apply(net, sim, shapes);
    if (st != NS_OK) {
        ns_sim_destroy(sim);
        return st;
    }
    *out = sim;
    return NS_OK;
}

ns_status ns_network_create_sim(const ns_network_t *net, const ns_mech_library_t *library,
                                const ns_discretize_options *disc, const ns_sim_params *params,
                                const ns_sim_options *options, ns_sim_t **out) {
    if (!net || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_network_create_sim: NULL argument");
    *out = NULL;
    ns_sim_params p;
    if (params) p = *params;
    else ns_sim_params_init(&p);
    ns_sim_options o;
    if (options) o = *options;
    else ns_sim_options_init(&o);
    ns_discretize_options d;
    if (disc) d = *disc;
    else {
        ns_discretize_options_init(&d);
        d.Ra = p.Ra;
    }
    ns_sim_model_t *model = NULL;
    ns_status st = ns_network_model(net, library, &model);
    if (st != NS_OK) return st;
    if (model && o.model) {
        ns_sim_model_destroy(model);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s names a model (line %d) and one was given as well: one of them only",
                       net->name, net->model_file ? net->model_line : 0);
    }
    if (!model && !o.model)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "%s: no model (a `model FILE` or `model: STATEMENT` line, or ns_sim_options.model): synapses "
                       "are mechanisms of a model",
                       net->name);
    if (model) o.model = model;
    ns_cell_t **shapes = calloc((size_t)net->n_morph, sizeof *shapes);
    if (!shapes) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s", net->name);
    for (int32_t k = 0; k < net->n_morph && st == NS_OK; ++k) {
        ns_morph_t *m = NULL;
        st = ns_swc_read(net->morph[k], NULL, &m);
        if (st == NS_OK) st = ns_discretize(m, &d, &shapes[k]);
        ns_morph_destroy(m);
        if (st != NS_OK) {
            char where[300];
            snprintf(where, sizeof where, "%s: morphology %s", net->name, net->morph[k]);
            ns_error_prefix(where);
        }
    }
    ns_sim_t *sim = NULL;
    if (o.dist) st = ns_dist_agree(o.dist, st); /* every process read its morphologies */
    if (st == NS_OK) st = ns_network_sim_create(net, (const ns_cell_t *const *)shapes, &p, &o, &sim);
    if (st == NS_OK) st = ns_sim_init(sim);
    for (int32_t k = 0; shapes && k < net->n_morph; ++k) ns_cell_destroy(shapes[k]);
    free(shapes);
    ns_sim_model_destroy(model);
    if (st != NS_OK) {
        ns_sim_destroy(sim);
        return st;
    }
    *out = sim;
    return NS_OK;
}

