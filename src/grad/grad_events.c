/* The gradient's synapses and events (grad_events.h, docs/gradients.md
 * "Synapses, weights and events"). Per cell, the network's point processes
 * by type in NEURON's type order (as net/net.c's blocks: the same phases, the
 * same sums), their fields a part of the state S. Events have fixed times: a
 * run first finds them (the trains' at once; a detector's spikes by running
 * every cell in lockstep, grad.c's raster pass), then each cell goes forward
 * and back with its own list: delivery at the step whose start t has
 * t_event <= t + dt/2 (NEURON's deliver_net_events), NET_RECEIVE with the
 * connection's weight at the event's time. The transposes are the
 * translator's products (ns_mech_desc.vjp_*_n, vjp_net_receive). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grad/grad_events.h"
#include "net/net_impl.h"

typedef struct gev_type {
    const ns_mech_desc *d;
    int32_t desc, key, n;
    int64_t off;    /* its fields in the cell's synapse fields (field-major, n per field) */
    int64_t *syn;   /* per instance: the synapse */
    int *node;      /* per instance: its compartment */
    double *scale;  /* per instance: 1e2 / area */
    double *store;  /* fields (n_fields x n), GLOBALs, table */
    double **field;
    ns_mech_ppack p;
} gev_type;

typedef struct gev_event {
    double t;
    int64_t seq, step;
    int32_t type, inst;
    int64_t conn; /* its connection: local index in the cell's incoming ones */
} gev_event;

struct gev_cell {
    int32_t n_types;
    gev_type *types;
    int64_t n_sf;          /* synapse field doubles */
    int64_t *cin, n_cin;   /* the incoming connections (ids) */
    double *lw;            /* their weights' adjoints */
    double *lpre;          /* adjoints of the fields before INITIAL (n_sf) */
    gev_event *ev;
    int64_t n_ev, cap_ev, cursor;
    double *scratch;       /* the transposed delivery's fields before each event; lo, lg of the products */
    size_t n_scratch;
};

typedef struct gev_param {
    int64_t cell;
    int weight;           /* 1: connections' weights; 0: a synapse type's field */
    int32_t type, field;  /* the type in the cell's list, the field */
    unsigned char *on;    /* per incoming connection, or per instance of the type */
    int set;
    double value;
} gev_param;

struct gev {
    const ns_sim_t *sim;
    const sim_net *net;
    int64_t n_cells;
    gev_cell *cells;
    int64_t *syn_type, *syn_inst; /* synapse -> its type in its cell's list, instance */
    int64_t *conn_local;          /* connection -> index among its target cell's incoming */
    int64_t *out_begin, *out_conn; /* connections by source */
    int64_t *det_begin, *det_src;  /* detectors by cell */
    double *wcur;                 /* the run's weights */
    unsigned char *above;         /* per source: a detector's flag */
    int64_t seq;
    int raster;                   /* delivering by time (the raster pass) */
    gev_param *params;
    int32_t n_params;
    size_t bytes;
};

static ns_status refuse_type(const ns_mech_desc *d) {
    const char *why = NULL;
    if (!d->vjp_init_n || !d->vjp_current_n || !d->vjp_state_n || (d->net_receive && !d->vjp_net_receive))
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient: synapse type %s has no derivative code: %s", d->name,
                       d->vjp_why_not ? d->vjp_why_not : "(built for mechanism ABI 7 or older: rebuild its library)");
    if (d->n_ions) why = "uses an ion";
    else if (d->n_pointers) why = "has a POINTER";
    else if (d->has_random) why = "draws random numbers";
    else if (d->n_weights > 1) why = "has per-connection state";
    for (int h = 0; !why && h < NS_MECH_N_HOOKS; ++h)
        if (d->hooks[h]) why = "has BEFORE/AFTER blocks, a CONSTRUCTOR or a DESTRUCTOR";
    if (why) return ns_fail(NS_ERR_UNSUPPORTED, "gradient: synapse type %s %s: not differentiable yet", d->name, why);
    return NS_OK;
}

static ns_status refuse_net(const sim_net *net) {
    for (int64_t s = 0; s < net->n_sources; ++s) {
        const net_source *so = &net->sources[s];
        if (so->poisson)
            return ns_fail(NS_ERR_UNSUPPORTED, "gradient: source %lld is a Poisson source: not differentiable yet "
                           "(give its times as a train)", (long long)s);
        if (so->point)
            return ns_fail(NS_ERR_UNSUPPORTED, "gradient: source %lld is a point process's net_event: not "
                           "differentiable yet", (long long)s);
    }
    return NS_OK;
}

void gev_destroy(gev *e) {
    if (!e) return;
    for (int64_t c = 0; e->cells && c < e->n_cells; ++c) {
        gev_cell *ce = &e->cells[c];
        for (int32_t k = 0; k < ce->n_types; ++k) {
            free(ce->types[k].syn);
            free(ce->types[k].store);
        }
        free(ce->types);
        free(ce->cin);
        free(ce->lw);
        free(ce->lpre);
        free(ce->ev);
        free(ce->scratch);
    }
    for (int32_t q = 0; q < e->n_params; ++q) free(e->params[q].on);
    free(e->params);
    free(e->cells);
    free(e->syn_type);
    free(e->syn_inst);
    free(e->conn_local);
    free(e->out_begin);
    free(e->out_conn);
    free(e->det_begin);
    free(e->det_src);
    free(e->wcur);
    free(e->above);
    free(e);
}

/* cell c's types (sorted by key) and instances (synapse id order) */
static ns_status cell_types(gev *e, int64_t c) {
    const sim_net *net = e->net;
    const sim_model *m = e->sim->model;
    gev_cell *ce = &e->cells[c];
    for (int64_t s = 0; s < net->n_syns; ++s) {
        if (net->syns[s].cell != c) continue;
        int32_t k = 0;
        while (k < ce->n_types && ce->types[k].desc != net->syns[s].desc) ++k;
        if (k == ce->n_types) {
            gev_type *nt = realloc(ce->types, (size_t)(k + 1) * sizeof *nt);
            if (!nt) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: synapses of cell %lld", (long long)c);
            ce->types = nt;
            memset(&nt[k], 0, sizeof nt[k]);
            nt[k].desc = net->syns[s].desc;
            nt[k].d = m->descs[nt[k].desc];
            nt[k].key = ns_sim_model_key(m, nt[k].desc);
            ce->n_types++;
            ns_status st = refuse_type(nt[k].d);
            if (st) return st;
        }
        ce->types[k].n++;
    }
    for (int32_t a = 1; a < ce->n_types; ++a) /* by key: NEURON's type order */
        for (int32_t b = a; b > 0 && ce->types[b].key < ce->types[b - 1].key; --b) {
            const gev_type t = ce->types[b];
            ce->types[b] = ce->types[b - 1];
            ce->types[b - 1] = t;
        }
    size_t most = 0;
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        const ns_mech_desc *d = ty->d;
        const size_t n = (size_t)ty->n, nf = (size_t)d->n_fields;
        ty->syn = malloc(n * (sizeof *ty->syn + sizeof *ty->node + sizeof *ty->scale));
        ty->store = calloc(nf * n + (size_t)d->n_globals + (size_t)d->table_size + nf + 1, sizeof(double));
        if (!ty->syn || !ty->store) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: synapses of cell %lld", (long long)c);
        ty->scale = (double *)(ty->syn + n);
        ty->node = (int *)(ty->scale + n);
        ty->field = (double **)(ty->store + nf * n + (size_t)d->n_globals + (size_t)d->table_size);
        for (size_t f = 0; f < nf; ++f) ty->field[f] = ty->store + f * n;
        ty->off = ce->n_sf;
        ce->n_sf += (int64_t)(nf * n);
        ty->n = 0;
        const size_t want = (nf + 2) * n + (size_t)d->n_globals * n + nf + (size_t)d->n_globals + 2;
        most = want > most ? want : most;
    }
    const sim_shape *sh = &e->sim->shapes[e->sim->cell_shape[c]];
    for (int64_t s = 0; s < net->n_syns; ++s) {
        if (net->syns[s].cell != c) continue;
        int32_t k = 0;
        while (ce->types[k].desc != net->syns[s].desc) ++k;
        gev_type *ty = &ce->types[k];
        e->syn_type[s] = k;
        e->syn_inst[s] = ty->n;
        ty->syn[ty->n] = s;
        ty->node[ty->n] = net->syns[s].node;
        ty->scale[ty->n] = sh->stim_scale[net->syns[s].node];
        ty->n++;
    }
    ce->n_scratch = most;
    ce->scratch = malloc((most ? most : 1) * sizeof(double));
    ce->lpre = calloc((size_t)ce->n_sf + 1, sizeof *ce->lpre);
    if (!ce->scratch || !ce->lpre) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: synapses of cell %lld", (long long)c);
    e->bytes += (most + (size_t)ce->n_sf) * sizeof(double);
    return NS_OK;
}

ns_status gev_create(const ns_sim_t *sim, gev **out) {
    *out = NULL;
    if (!sim->net) return NS_OK;
    const sim_net *net = sim->net;
    ns_status st = refuse_net(net);
    if (st) return st;
    gev *e = calloc(1, sizeof *e);
    if (!e) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: network");
    e->sim = sim;
    e->net = net;
    e->n_cells = sim->n_cells;
    e->cells = calloc((size_t)sim->n_cells, sizeof *e->cells);
    e->syn_type = malloc((size_t)(net->n_syns + 1) * sizeof *e->syn_type);
    e->syn_inst = malloc((size_t)(net->n_syns + 1) * sizeof *e->syn_inst);
    e->conn_local = malloc((size_t)(net->n_conns + 1) * sizeof *e->conn_local);
    e->out_begin = calloc((size_t)net->n_sources + 1, sizeof *e->out_begin);
    e->out_conn = malloc((size_t)(net->n_conns + 1) * sizeof *e->out_conn);
    e->wcur = malloc((size_t)(net->n_conns + 1) * sizeof *e->wcur);
    e->det_begin = calloc((size_t)sim->n_cells + 1, sizeof *e->det_begin);
    e->det_src = malloc((size_t)(net->n_sources + 1) * sizeof *e->det_src);
    e->above = calloc((size_t)net->n_sources + 1, 1);
    if (!e->cells || !e->syn_type || !e->syn_inst || !e->conn_local || !e->out_begin || !e->out_conn || !e->wcur ||
        !e->above || !e->det_begin || !e->det_src) {
        gev_destroy(e);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: network");
    }
    for (int64_t c = 0; c < sim->n_cells && st == NS_OK; ++c) st = cell_types(e, c);
    for (int64_t s = 0; s < net->n_sources; ++s) /* detectors by cell, in source order */
        if (net->sources[s].cell >= 0) e->det_begin[net->sources[s].cell + 1]++;
    for (int64_t c = 0; c < sim->n_cells; ++c) e->det_begin[c + 1] += e->det_begin[c];
    int64_t *fill = malloc((size_t)(sim->n_cells + 1) * sizeof *fill);
    if (!fill && st == NS_OK) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: detectors");
    if (fill) {
        memcpy(fill, e->det_begin, (size_t)sim->n_cells * sizeof *fill);
        for (int64_t s = 0; s < net->n_sources; ++s)
            if (net->sources[s].cell >= 0) e->det_src[fill[net->sources[s].cell]++] = s;
    }
    /* connections by source (creation order) and by target cell */
    for (int64_t j = 0; j < net->n_conns && st == NS_OK; ++j) {
        e->out_begin[net->conns[j].source + 1]++;
        gev_cell *ce = &e->cells[net->syns[net->conns[j].synapse].cell];
        int64_t *nc = realloc(ce->cin, (size_t)(ce->n_cin + 1) * sizeof *nc);
        if (!nc) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: connections");
        else {
            ce->cin = nc;
            e->conn_local[j] = ce->n_cin;
            nc[ce->n_cin++] = j;
        }
    }
    for (int64_t s = 0; s < net->n_sources; ++s) e->out_begin[s + 1] += e->out_begin[s];
    int64_t *ofill = st ? NULL : realloc(fill, (size_t)(net->n_sources + 1) * sizeof *ofill);
    if (!st && !ofill) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: connections");
    if (ofill) {
        fill = ofill;
        memcpy(fill, e->out_begin, (size_t)net->n_sources * sizeof *fill);
        for (int64_t j = 0; j < net->n_conns; ++j) e->out_conn[fill[net->conns[j].source]++] = j;
    }
    free(fill);
    for (int64_t c = 0; c < sim->n_cells && st == NS_OK; ++c) {
        gev_cell *ce = &e->cells[c];
        ce->lw = calloc((size_t)ce->n_cin + 1, sizeof *ce->lw);
        if (!ce->lw) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: connections");
    }
    if (st) {
        gev_destroy(e);
        return st;
    }
    *out = e;
    return NS_OK;
}

size_t gev_bytes(const gev *e) { return e ? e->bytes : 0; }
gev_cell *gev_cell_of(gev *e, int64_t c) { return e ? &e->cells[c] : NULL; }
int64_t gev_fields(const gev_cell *ce) { return ce ? ce->n_sf : 0; }

ns_status gev_cell_bind(gev *e, int64_t c, double *v, double *rhs, double *d, model_block *mb) {
    gev_cell *ce = &e->cells[c];
    const sim_model *m = e->sim->model;
    const sim_shape *sh = &e->sim->shapes[e->sim->cell_shape[c]];
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        const ns_mech_desc *dd = ty->d;
        ns_status fst = ns_sim_model_ftables_given(m, ty->desc);
        if (fst) return fst;
        double *glob = ty->store + (size_t)dd->n_fields * (size_t)ty->n;
        for (int q = 0; q < dd->n_globals; ++q) glob[q] = dd->global_defaults[q];
        memset(&ty->p, 0, sizeof ty->p);
        ty->p.n = ty->n;
        ty->p.node_index = ty->node;
        ty->p.v = v;
        ty->p.rhs = rhs;
        ty->p.d = d;
        ty->p.weight = ty->scale;
        ty->p.field = ty->field;
        ty->p.global = glob;
        ty->p.table = glob + dd->n_globals;
        ty->p.dt = e->sim->params.dt;
        ty->p.celsius = e->sim->params.celsius;
        ty->p.ftable = m->ftables ? m->ftables[ty->desc] : NULL;
        ty->p.area = ns_model_block_geom(mb);
        ty->p.diam = ty->p.area + sh->n;
        ty->p.error = ns_model_block_error(mb);
        if (dd->table_update) dd->table_update(&ty->p);
    }
    return NS_OK;
}

void gev_save(const gev_cell *ce, double *F) {
    for (int32_t k = 0; k < ce->n_types; ++k) {
        const gev_type *ty = &ce->types[k];
        memcpy(F + ty->off, ty->store, (size_t)ty->d->n_fields * (size_t)ty->n * sizeof *F);
    }
}
void gev_load(gev_cell *ce, const double *F) {
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        memcpy(ty->store, F + ty->off, (size_t)ty->d->n_fields * (size_t)ty->n * sizeof *F);
    }
}

static void bind(gev_type *ty, double *v, double t, double dt, double celsius) {
    if (v) ty->p.v = v;
    ty->p.t = t;
    ty->p.dt = dt;
    ty->p.celsius = celsius;
}

/* ---- events ---- */

static ns_status add_event(gev *e, int64_t conn, double t) {
    const net_conn *cn = &e->net->conns[conn];
    gev_cell *ce = &e->cells[e->net->syns[cn->synapse].cell];
    if (ce->n_ev == ce->cap_ev) {
        const int64_t cap = ce->cap_ev ? 2 * ce->cap_ev : 64;
        gev_event *ne = realloc(ce->ev, (size_t)cap * sizeof *ne);
        if (!ne) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: %lld events", (long long)cap);
        ce->ev = ne;
        ce->cap_ev = cap;
    }
    const gev_event ev = {t, e->seq++, -1, (int32_t)e->syn_type[cn->synapse], (int32_t)e->syn_inst[cn->synapse],
                          e->conn_local[conn]};
    int64_t q = ce->n_ev++;
    for (; q > ce->cursor && ce->ev[q - 1].t > t; --q) ce->ev[q] = ce->ev[q - 1]; /* (t, seq) order */
    ce->ev[q] = ev;
    return NS_OK;
}

static ns_status spike(gev *e, int64_t src, double t) {
    ns_status st = NS_OK;
    for (int64_t q = e->out_begin[src]; q < e->out_begin[src + 1] && st == NS_OK; ++q)
        st = add_event(e, e->out_conn[q], t + e->net->conns[e->out_conn[q]].delay);
    return st;
}

ns_status gev_run_begin(gev *e) {
    const sim_net *net = e->net;
    e->seq = 0;
    e->raster = 1;
    for (int64_t c = 0; c < e->n_cells; ++c) e->cells[c].n_ev = e->cells[c].cursor = 0;
    memset(e->above, 0, (size_t)net->n_sources); /* NEURON's flag starts false */
    for (int64_t j = 0; j < net->n_conns; ++j) e->wcur[j] = net->conns[j].weight;
    for (int32_t q = 0; q < e->n_params; ++q) {
        const gev_param *p = &e->params[q];
        const gev_cell *ce = &e->cells[p->cell];
        for (int64_t j = 0; p->weight && p->set && j < ce->n_cin; ++j)
            if (p->on[j]) e->wcur[ce->cin[j]] = p->value;
    }
    ns_status st = NS_OK;
    for (int64_t s = 0; s < net->n_sources && st == NS_OK; ++s)
        for (int64_t k = 0; net->sources[s].cell < 0 && k < net->sources[s].n_times && st == NS_OK; ++k)
            st = spike(e, s, net->sources[s].times[k]);
    return st;
}

int gev_needs_raster(const gev *e) {
    for (int64_t s = 0; s < e->net->n_sources; ++s)
        if (e->net->sources[s].cell >= 0 && e->out_begin[s + 1] > e->out_begin[s]) return 1;
    return 0;
}

/* NEURON's PreSyn check at a step's end (net/net.c's ns_net_detect): a spike at t + 1e-10 */
ns_status gev_detect(gev *e, int64_t c, const double *v, double t) {
    const sim_net *net = e->net;
    ns_status st = NS_OK;
    for (int64_t q = e->det_begin[c]; q < e->det_begin[c + 1] && st == NS_OK; ++q) {
        const int64_t s = e->det_src[q];
        const net_source *so = &net->sources[s];
        const int above = v[so->node] > so->threshold;
        if (above && !e->above[s]) st = spike(e, s, t + 1e-10);
        e->above[s] = (unsigned char)above;
    }
    return st;
}

void gev_run_ready(gev *e, int64_t steps, double dt) {
    e->raster = 0;
    for (int64_t c = 0; c < e->n_cells; ++c) {
        gev_cell *ce = &e->cells[c];
        double t = 0.0;
        int64_t n = 0;
        for (int64_t q = 0; q < ce->n_ev; ++q) {
            while (n < steps && ce->ev[q].t > t + .5 * dt) {
                t = ns_sim_half_step(ns_sim_half_step(t, dt), dt);
                ++n;
            }
            ce->ev[q].step = n; /* steps: after the run */
        }
        ce->cursor = 0;
    }
}

/* the events of step n: [*a, *b) */
static void events_of(const gev_cell *ce, int64_t n, int64_t *a, int64_t *b) {
    int64_t lo = 0, hi = ce->n_ev;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (ce->ev[mid].step < n) lo = mid + 1;
        else hi = mid;
    }
    *a = lo;
    while (hi < ce->n_ev && ce->ev[hi].step == n) ++hi;
    *b = hi > lo ? hi : lo;
}

static void receive(const gev *e, gev_cell *ce, const gev_event *ev, double dt, double celsius) {
    gev_type *ty = &ce->types[ev->type];
    bind(ty, NULL, ev->t, dt, celsius);
    ty->d->net_receive(&ty->p, ev->inst, e->wcur[ce->cin[ev->conn]]);
}

void gev_deliver(const gev *e, gev_cell *ce, int64_t n, double t, double dt, double celsius) {
    if (e->raster) { /* by time: the raster pass, whose spikes add events as it goes */
        for (; ce->cursor < ce->n_ev && ce->ev[ce->cursor].t <= t + .5 * dt; ++ce->cursor)
            receive(e, ce, &ce->ev[ce->cursor], dt, celsius);
        return;
    }
    int64_t a, b;
    events_of(ce, n, &a, &b);
    for (int64_t q = a; q < b; ++q) receive(e, ce, &ce->ev[q], dt, celsius);
}

/* ---- the phases ---- */

static void pre_init(const gev *e, const gev_cell *ce, int64_t c, const gev_type *ty, int32_t k, double *F) {
    const ns_mech_desc *d = ty->d;
    const int64_t n = ty->n;
    for (int64_t j = 0; j < (int64_t)d->n_fields * n; ++j) F[j] = 0.0;
    for (int64_t i = 0; i < n; ++i)
        for (int f = 0; f < d->n_params; ++f) F[f * n + i] = e->net->params[e->net->syns[ty->syn[i]].param_at + f];
    for (int32_t q = 0; q < e->n_params; ++q) {
        const gev_param *p = &e->params[q];
        if (p->weight || p->cell != c || p->type != k || !p->set) continue;
        for (int64_t i = 0; i < n; ++i)
            if (p->on[i]) F[(int64_t)p->field * n + i] = p->value;
    }
}

static int64_t cell_index(const gev *e, const gev_cell *ce) { return ce - e->cells; }

void gev_init(const gev *e, gev_cell *ce, double dt, double celsius) {
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        pre_init(e, ce, cell_index(e, ce), ty, k, ty->store);
        bind(ty, NULL, 0.0, dt, celsius);
        ty->d->init(&ty->p);
    }
    ce->cursor = 0;
}

void gev_current(gev_cell *ce, int32_t *slot, int32_t below, double tm, double dt, double celsius) {
    for (; *slot < ce->n_types && ce->types[*slot].key < below; ++*slot) {
        gev_type *ty = &ce->types[*slot];
        bind(ty, NULL, tm, dt, celsius);
        ty->d->current(&ty->p);
    }
}

void gev_state(gev_cell *ce, double t, double dt, double celsius) {
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        bind(ty, NULL, t, dt, celsius);
        ty->d->state(&ty->p);
    }
}

/* ---- the transposes ---- */

void gev_reverse_begin(gev_cell *ce) { memset(ce->lw, 0, (size_t)ce->n_cin * sizeof *ce->lw); }

/* the type's product over its instances at v (its fields loaded): lo rows of l_out */
static void type_vjp(gev_cell *ce, gev_type *ty, int phase, const double *lo, double *lv, double *lF) {
    const ns_mech_desc *d = ty->d;
    double *lg = ce->scratch + (size_t)(d->n_fields + 2) * (size_t)ty->n; /* the GLOBALs' shares: not parameters */
    memset(lg, 0, (size_t)d->n_globals * (size_t)ty->n * sizeof *lg);
    void (*fn)(ns_mech_ppack *, const double *, double *, double *, double *) =
        phase == 0 ? d->vjp_init_n : phase == 1 ? d->vjp_current_n : d->vjp_state_n;
    fn(&ty->p, lo, lv, lF + ty->off, lg);
}

void gev_vjp_state(gev_cell *ce, double t, const double *vn, const double *F, const double *lF1, double *lv,
                   double *lF, double dt, double celsius) {
    gev_load(ce, F);
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        double *v0 = ty->p.v;
        bind(ty, (double *)vn, t, dt, celsius);
        type_vjp(ce, ty, 2, lF1 + ty->off, lv, lF);
        ty->p.v = v0;
    }
}

void gev_vjp_current(gev_cell *ce, double tm, const double *v, const double *F, const double *lFc, const double *y,
                     const double *ld, double *lv, double *lF, double dt, double celsius) {
    gev_load(ce, F);
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        const int64_t n = ty->n, m = (int64_t)ty->d->n_fields * n;
        double *lo = ce->scratch;
        memcpy(lo, lFc + ty->off, (size_t)m * sizeof *lo);
        for (int64_t i = 0; i < n; ++i) {
            lo[m + i] = y[ty->node[i]];
            lo[m + n + i] = ld[ty->node[i]];
        }
        double *v0 = ty->p.v;
        bind(ty, (double *)v, tm, dt, celsius);
        type_vjp(ce, ty, 1, lo, lv, lF);
        ty->p.v = v0;
    }
}

void gev_vjp_deliver(const gev *e, gev_cell *ce, int64_t n, const double *v, const double *F0, double *lF, double *lv,
                     double dt, double celsius) {
    int64_t a, b;
    events_of(ce, n, &a, &b);
    if (a == b) return;
    double *v0 = ce->types[0].p.v; /* the replays read v^n */
    for (int32_t k = 0; k < ce->n_types; ++k) ce->types[k].p.v = (double *)v;
    for (int64_t q = b - 1; q >= a; --q) {
        /* the fields before event q: replay the step's events before it from F0 */
        gev_load(ce, F0);
        for (int64_t r = a; r < q; ++r) receive(e, ce, &ce->ev[r], dt, celsius);
        const gev_event *ev = &ce->ev[q];
        gev_type *ty = &ce->types[ev->type];
        const ns_mech_desc *d = ty->d;
        const int nf = d->n_fields, n_in = 2 + nf + d->n_globals;
        double *lo = ce->scratch, *li = lo + nf;
        for (int f = 0; f < nf; ++f) lo[f] = lF[ty->off + (int64_t)f * ty->n + ev->inst];
        memset(li, 0, (size_t)n_in * sizeof *li);
        bind(ty, NULL, ev->t, dt, celsius);
        d->vjp_net_receive(&ty->p, ev->inst, e->wcur[ce->cin[ev->conn]], lo, li);
        lv[ty->node[ev->inst]] += li[0];
        for (int f = 0; f < nf; ++f) lF[ty->off + (int64_t)f * ty->n + ev->inst] = li[1 + f];
        ce->lw[ev->conn] += li[n_in - 1];
    }
    for (int32_t k = 0; k < ce->n_types; ++k) ce->types[k].p.v = v0;
}

void gev_vjp_init(const gev *e, gev_cell *ce, const double *lF, double *lv, double dt, double celsius) {
    memset(ce->lpre, 0, (size_t)ce->n_sf * sizeof *ce->lpre);
    for (int32_t k = 0; k < ce->n_types; ++k) {
        gev_type *ty = &ce->types[k];
        pre_init(e, ce, cell_index(e, ce), ty, k, ty->store);
        bind(ty, NULL, 0.0, dt, celsius);
        type_vjp(ce, ty, 0, lF + ty->off, lv, ce->lpre);
    }
}

/* ---- parameters ---- */

static int parse_id(const char *where, const char *pre, int64_t *id) {
    const size_t l = strlen(pre);
    char *end = NULL;
    if (strncmp(where, pre, l) || !where[l]) return 0;
    const long long v = strtoll(where + l, &end, 10);
    if (*end || v < 0) return 0;
    *id = v;
    return 1;
}

static ns_status weight_param(gev *e, int64_t cell, const char *where, gev_param *p) {
    const gev_cell *ce = &e->cells[cell];
    const sim_net *net = e->net;
    int64_t id = -1;
    const int conn = parse_id(where, "conn:", &id), syn = !conn && parse_id(where, "syn:", &id);
    int any = 0;
    for (int64_t j = 0; j < ce->n_cin; ++j) {
        const net_conn *cn = &net->conns[ce->cin[j]];
        const int on = !strcmp(where, "all") || (conn && ce->cin[j] == id) || (syn && cn->synapse == id) ||
                       !strcmp(where, e->sim->model->descs[net->syns[cn->synapse].desc]->name);
        any |= p->on[j] = (unsigned char)on;
    }
    if (!any)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "gradient parameter weight at %s: no connection onto cell %lld there "
                       "(where: all, conn:K, syn:K or a synapse type)", where, (long long)cell);
    return NS_OK;
}

static ns_status field_param(gev *e, int64_t cell, const char *where, const char *name, gev_param *p) {
    const gev_cell *ce = &e->cells[cell];
    const size_t ln = strlen(name);
    p->type = -1;
    for (int32_t k = 0; k < ce->n_types && p->type < 0; ++k) {
        const ns_mech_desc *d = ce->types[k].d;
        const size_t lm = strlen(d->name);
        if (ln < lm + 2 || name[ln - lm - 1] != '_' || strcmp(name + ln - lm, d->name)) continue;
        for (int f = 0; f < d->n_params; ++f)
            if (strlen(d->field_names[f]) == ln - lm - 1 && !strncmp(name, d->field_names[f], ln - lm - 1)) {
                p->type = k;
                p->field = f;
            }
        if (p->type < 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "gradient parameter %s: synapse type %s has no RANGE PARAMETER "
                           "of that name", name, d->name);
    }
    if (p->type < 0) return NS_OK; /* not a synapse type's */
    const gev_type *ty = &ce->types[p->type];
    p->on = calloc((size_t)ty->n + 1, 1);
    if (!p->on) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient parameter %s", name);
    int64_t id = -1;
    const int syn = parse_id(where, "syn:", &id);
    if (!syn && strcmp(where, "all"))
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient parameter %s at %s: a synapse type's parameter is at all or "
                       "syn:K", name, where);
    int any = 0;
    for (int32_t i = 0; i < ty->n; ++i) any |= p->on[i] = (unsigned char)(!syn || ty->syn[i] == id);
    if (!any)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "gradient parameter %s at %s: no such synapse of type %s on cell %lld",
                       name, where, ty->d->name, (long long)cell);
    return NS_OK;
}

ns_status gev_add_param(gev *e, int64_t cell, const char *where, const char *name, int32_t *local) {
    *local = -1;
    if (!e) return NS_OK;
    gev_param p = {cell, !strcmp(name, "weight"), -1, -1, NULL, 0, 0.0};
    ns_status st = NS_OK;
    if (p.weight) {
        p.on = calloc((size_t)e->cells[cell].n_cin + 1, 1);
        st = p.on ? weight_param(e, cell, where, &p) : ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient parameter weight");
    } else {
        st = field_param(e, cell, where, name, &p);
        if (st == NS_OK && p.type < 0) return NS_OK;
    }
    gev_param *np = st ? NULL : realloc(e->params, (size_t)(e->n_params + 1) * sizeof *np);
    if (!np) {
        free(p.on);
        return st ? st : ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient parameter %s", name);
    }
    e->params = np;
    np[e->n_params] = p;
    *local = e->n_params++;
    return NS_OK;
}

void gev_set_param(gev *e, int32_t local, double value) {
    e->params[local].set = 1;
    e->params[local].value = value;
}

double gev_get_param(const gev *e, int32_t local) {
    const gev_param *p = &e->params[local];
    if (p->set) return p->value;
    const gev_cell *ce = &e->cells[p->cell];
    if (p->weight) {
        for (int64_t j = 0; j < ce->n_cin; ++j)
            if (p->on[j]) return e->net->conns[ce->cin[j]].weight;
        return 0.0;
    }
    const gev_type *ty = &ce->types[p->type];
    for (int32_t i = 0; i < ty->n; ++i)
        if (p->on[i]) return e->net->params[e->net->syns[ty->syn[i]].param_at + p->field];
    return 0.0;
}

double gev_param_grad(const gev *e, const gev_cell *ce, int32_t local) {
    const gev_param *p = &e->params[local];
    double acc = 0.0;
    if (p->weight) {
        for (int64_t j = 0; j < ce->n_cin; ++j)
            if (p->on[j]) acc += ce->lw[j];
        return acc;
    }
    const gev_type *ty = &ce->types[p->type];
    for (int32_t i = 0; i < ty->n; ++i)
        if (p->on[i]) acc += ce->lpre[ty->off + (int64_t)p->field * ty->n + i];
    return acc;
}
