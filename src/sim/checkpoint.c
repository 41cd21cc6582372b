/* Checkpoints of a simulation (include/neurosolve/cable.h, docs/simulation.md).
 *
 * The state of the cells goes through the accessors by name only
 * (ns_sim_get_state / ns_sim_set_state for v, ns_sim_get_model_var /
 * ns_sim_set_model_var for the mechanisms and ions; per cell, compartments in
 * the cell's order), never through a backend's arrays, so the file does not
 * depend on how a loop lays out its state (CPU, GPU groups) and a checkpoint
 * of one backend resumes on another. Every simulation is a model, so every
 * one is checkpointed the same way: v, then every mechanism's fields but its
 * parameters (which the fingerprint covers), then every ion's arrays.
 *
 * File layout (native little-endian; the byte-order word refuses others):
 *
 *   header, 96 bytes
 *     char[8] magic "NSSIMCKP"     u32 version (2)     u32 byte order 0x01020304
 *     u64 header bytes (96)        u64 payload bytes   u64 checksum (FNV-1a 64 of the payload)
 *     u64 fingerprint              i64 cells           i64 compartments
 *     i64 stimuli                  i32 sites           i32 record_every
 *     f64 dt [ms]                  u64 reserved (0)
 *   payload
 *     f64 t [ms]   i64 steps   i64 samples
 *     i64 variables V, then V names (i64 length, the bytes: "v", "m_hh", "ena", ...)
 *     per cell, per variable in that order: the cell's compartment count of f64
 *       (NaN where the variable's mechanism is not inserted)
 *     traces: samples x sites f64 (row-major, as ns_sim_traces)
 *     per cell: i64 spike count, then the spike times (f64)
 *
 * Version 1 (v and hh's gates m, h, n without names, from before every
 * simulation was a model) is refused naming the version.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/dist_impl.h"
#include "sim/sim_impl.h"
#include "core/error.h"
#include "core/hash.h"
#include "neurosolve/output.h"

#define CK_MAGIC "NSSIMCKP"
#define CK_VERSION 2u
#define CK_ORDER 0x01020304u
#define CK_HEADER 96

typedef struct ck_header {
    uint32_t version, order;
    uint64_t header_bytes, payload_bytes, checksum, fingerprint;
    int64_t cells, comps, stims;
    int32_t sites, every;
    double dt;
} ck_header;

/* FNV-1a, 64 bits (core/hash.h), of one integer or double. */
static uint64_t fnv_i64(uint64_t h, int64_t x) { return ns_fnv1a(h, &x, sizeof x); }
static uint64_t fnv_f64(uint64_t h, double x) { return ns_fnv1a(h, &x, sizeof x); }

/* What a run's results depend on, apart from its dynamic state: the
 * resolved model (mechanisms, where they are inserted, their parameters and
 * globals, the ions' initial values), the parameters the loops read, the
 * shapes, stimuli and recording sites. */
static uint64_t fingerprint(const ns_sim_t *sim) {
    uint64_t h = NS_FNV_OFFSET;
    const ns_sim_params *p = &sim->params;
    const sim_model *md = sim->model;
    h = fnv_i64(h, md->n_mechs);
    for (int32_t k = 0; k < md->n_mechs; ++k) {
        const ns_mech_desc *d = md->mechs[k].desc;
        h = ns_fnv1a(h, d->name, strlen(d->name) + 1);
        h = ns_fnv1a(h, md->mechs[k].globals, (size_t)d->n_globals * sizeof(double));
        for (int32_t q = 0; q < md->n_shapes; ++q) {
            const sim_mech_shape *ms = &md->per_shape[(size_t)q * md->n_mechs + k];
            h = fnv_i64(h, ms->n);
            h = ns_fnv1a(h, ms->node, (size_t)ms->n * sizeof *ms->node);
            h = ns_fnv1a(h, ms->param, (size_t)ms->n * (size_t)d->n_params * sizeof *ms->param);
        }
    }
    h = fnv_i64(h, md->n_ions);
    for (int32_t j = 0; j < md->n_ions; ++j) h = ns_fnv1a(h, md->ions[j].name, strlen(md->ions[j].name) + 1);
    for (int32_t q = 0; q < md->n_shapes; ++q)
        h = ns_fnv1a(h, md->ion_init[q], (size_t)md->n_ions * 3 * (size_t)sim->shapes[q].n * sizeof(double));
    h = fnv_f64(h, p->celsius);
    h = fnv_f64(h, p->v_init);
    h = fnv_f64(h, p->dt);
    h = fnv_f64(h, p->spike_threshold);
    if (p->netcon_spikes) h = fnv_i64(h, p->netcon_spikes); /* (older checkpoints keep their key) */
    h = fnv_f64(h, p->Ra); /* also in a and b; tstop is not: a resumed run may go further */
    h = fnv_i64(h, sim->options.record_every);
    h = fnv_i64(h, sim->n_shapes);
    for (int32_t k = 0; k < sim->n_shapes; ++k) {
        const sim_shape *s = &sim->shapes[k];
        const size_t z = (size_t)s->n;
        h = fnv_i64(h, s->n);
        h = ns_fnv1a(h, s->parent, z * sizeof *s->parent);
        h = ns_fnv1a(h, s->a, z * sizeof *s->a);
        h = ns_fnv1a(h, s->b, z * sizeof *s->b);
        h = ns_fnv1a(h, s->cap, z * sizeof *s->cap);
        h = ns_fnv1a(h, s->stim_scale, z * sizeof *s->stim_scale);
        h = ns_fnv1a(h, s->region, z * sizeof *s->region);
    }
    h = fnv_i64(h, sim->n_cells);
    h = ns_fnv1a(h, sim->cell_shape, (size_t)sim->n_cells * sizeof *sim->cell_shape);
    h = fnv_i64(h, sim->n_stims);
    for (int64_t k = 0; k < sim->n_stims; ++k) {
        const sim_stim *s = &sim->stims[k];
        h = fnv_i64(h, s->cell);
        h = fnv_i64(h, s->node);
        h = fnv_f64(h, s->del);
        h = fnv_f64(h, s->dur);
        h = fnv_f64(h, s->amp);
    }
    h = fnv_i64(h, sim->n_recs);
    for (int32_t k = 0; k < sim->n_recs; ++k) {
        h = fnv_i64(h, sim->recs[k].cell);
        h = fnv_i64(h, sim->recs[k].node);
    }
    return h;
}

/* ------------------------------------------------------ the variables */

/* The names of the state, in the file's order: v, every mechanism's fields
 * but its parameters (FIELD_MECH), every ion's e, i, o (and its current
 * where it is kept). */
typedef struct ck_names {
    int64_t n;
    char (*name)[64];
} ck_names;

static ns_status names_of(const ns_sim_t *sim, ck_names *out) {
    const sim_model *md = sim->model;
    int64_t n = 1 + 4 * (int64_t)md->n_ions;
    for (int32_t k = 0; k < md->n_mechs; ++k) n += md->mechs[k].desc->n_fields - md->mechs[k].desc->n_params;
    out->name = malloc((size_t)n * sizeof *out->name);
    if (!out->name) return ns_fail(NS_ERR_OUT_OF_MEMORY, "checkpoint: %lld variable names", (long long)n);
    int64_t q = 0;
    snprintf(out->name[q++], sizeof *out->name, "v");
    for (int32_t k = 0; k < md->n_mechs; ++k) {
        const ns_mech_desc *d = md->mechs[k].desc;
        for (int f = d->n_params; f < d->n_fields; ++f)
            snprintf(out->name[q++], sizeof *out->name, "%s_%s", d->field_names[f], d->name);
    }
    for (int32_t j = 0; j < md->n_ions; ++j) {
        const char *ion = md->ions[j].name;
        snprintf(out->name[q++], sizeof *out->name, "e%s", ion);
        snprintf(out->name[q++], sizeof *out->name, "%si", ion);
        snprintf(out->name[q++], sizeof *out->name, "%so", ion);
        if (md->ions[j].read_i) snprintf(out->name[q++], sizeof *out->name, "i%s", ion);
    }
    out->n = q;
    return NS_OK;
}

/* Variable k of cell c into out (k 0: v). */
static ns_status get_var(ns_sim_t *sim, const ck_names *nm, int64_t k, int64_t c, double *out) {
    return k == 0 ? ns_sim_get_state(sim, c, out) : ns_sim_get_model_var(sim, c, nm->name[k], out);
}

/* ------------------------------------------------------------- writing */

typedef struct ck_writer {
    FILE *f;
    uint64_t hash, bytes;
} ck_writer;

static void put(ck_writer *w, const void *data, size_t n) {
    if (!n) return;
    fwrite(data, 1, n, w->f);
    w->hash = ns_fnv1a(w->hash, data, n);
    w->bytes += n;
}
static void put_i64(ck_writer *w, int64_t x) { put(w, &x, sizeof x); }

/* Where each field of the header lies in the file (after the magic bytes; the layout above). */
#define CK_FIELD(f, at) {offsetof(ck_header, f), sizeof(((ck_header *)0)->f), at}
static const struct {
    size_t field, size, at;
} CK_LAYOUT[] = {CK_FIELD(version, 8),  CK_FIELD(order, 12),       CK_FIELD(header_bytes, 16),
                 CK_FIELD(payload_bytes, 24), CK_FIELD(checksum, 32), CK_FIELD(fingerprint, 40),
                 CK_FIELD(cells, 48),   CK_FIELD(comps, 56),       CK_FIELD(stims, 64),
                 CK_FIELD(sites, 72),   CK_FIELD(every, 76),       CK_FIELD(dt, 80)};
#define CK_FIELDS (sizeof CK_LAYOUT / sizeof *CK_LAYOUT)

static void encode_header(unsigned char *b, const ck_header *h) {
    memset(b, 0, CK_HEADER);
    memcpy(b, CK_MAGIC, 8);
    for (size_t k = 0; k < CK_FIELDS; ++k)
        memcpy(b + CK_LAYOUT[k].at, (const unsigned char *)h + CK_LAYOUT[k].field, CK_LAYOUT[k].size);
}

static void decode_header(const unsigned char *b, ck_header *h) {
    for (size_t k = 0; k < CK_FIELDS; ++k)
        memcpy((unsigned char *)h + CK_LAYOUT[k].field, b + CK_LAYOUT[k].at, CK_LAYOUT[k].size);
}

static void header_of(const ns_sim_t *sim, ck_header *h) {
    memset(h, 0, sizeof *h);
    h->version = CK_VERSION;
    h->order = CK_ORDER;
    h->header_bytes = CK_HEADER;
    h->fingerprint = fingerprint(sim);
    h->cells = sim->n_cells;
    h->comps = sim->n_comp;
    h->stims = sim->n_stims;
    h->sites = sim->n_recs;
    h->every = sim->options.record_every;
    h->dt = sim->params.dt;
}

/* What ns_sim_save_state and ns_sim_restore_state (fn) check first: a
 * simulation of this process without a network; `done` says what is refused
 * ("checkpointed", "restored"). */
static ns_status check_checkpoint(const ns_sim_t *sim, const char *path, const char *fn, const char *done) {
    if (!sim || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (sim->dist) return ns_dist_sim_refuse(fn);
    if (ns_sim_synapses(sim) > 0 || ns_sim_sources(sim) > 0)
        return ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: a simulation with a network cannot be %s yet: its "
                                           "synapses' states and queued events are not saved", path, done);
    return NS_OK;
}

ns_status ns_sim_save_state(ns_sim_t *sim, const char *path) {
    ns_status st = check_checkpoint(sim, path, "ns_sim_save_state", "checkpointed");
    if (st != NS_OK) return st;
    if (sim->failed != NS_OK)
        return ns_fail(sim->failed, "checkpoint %s: the simulation stopped %s; its state is not saved", path,
                       ns_sim_failed_what(sim));
    st = ns_sim_index(sim);
    if (st != NS_OK) return st;
    ck_names nm;
    if ((st = names_of(sim, &nm)) != NS_OK) return st;
    double *buf = malloc((size_t)(sim->max_n > 0 ? sim->max_n : 1) * sizeof *buf);
    if (!buf) {
        free(nm.name);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "checkpoint %s: %d compartments", path, (int)sim->max_n);
    }
    ns_output *o = NULL;
    st = ns_output_open(path, &o);
    if (st != NS_OK) {
        free(buf);
        free(nm.name);
        return st;
    }
    ck_header h;
    header_of(sim, &h);
    unsigned char hb[CK_HEADER];
    encode_header(hb, &h);
    ck_writer w = {ns_output_stream(o), NS_FNV_OFFSET, 0};
    fwrite(hb, 1, CK_HEADER, w.f); /* rewritten with the sizes and checksum below */
    put(&w, &sim->t, sizeof sim->t);
    put_i64(&w, sim->steps);
    put_i64(&w, sim->samples);
    put_i64(&w, nm.n);
    for (int64_t k = 0; k < nm.n; ++k) {
        put_i64(&w, (int64_t)strlen(nm.name[k]));
        put(&w, nm.name[k], strlen(nm.name[k]));
    }
    for (int64_t c = 0; c < sim->n_cells && st == NS_OK; ++c) {
        const size_t n = (size_t)(sim->cell_offset[c + 1] - sim->cell_offset[c]);
        for (int64_t k = 0; k < nm.n && st == NS_OK; ++k)
            if ((st = get_var(sim, &nm, k, c, buf)) == NS_OK) put(&w, buf, n * sizeof *buf);
    }
    if (st == NS_OK) {
        put(&w, sim->traces, (size_t)sim->samples * (size_t)sim->n_recs * sizeof(double));
        for (int64_t c = 0; c < sim->n_cells; ++c) {
            put_i64(&w, sim->spikes.n[c]);
            put(&w, sim->spikes.t[c], (size_t)sim->spikes.n[c] * sizeof(double));
        }
        h.payload_bytes = w.bytes;
        h.checksum = w.hash;
        encode_header(hb, &h);
        if (fseek(w.f, 0, SEEK_SET) != 0) {
            st = ns_fail(NS_ERR_IO, "checkpoint %s: %s", path, strerror(errno));
        } else {
            fwrite(hb, 1, CK_HEADER, w.f);
        }
    }
    free(buf);
    free(nm.name);
    if (st != NS_OK) {
        ns_output_abort(o);
        return st;
    }
    return ns_output_commit(o);
}

/* ------------------------------------------------------------- reading */

typedef struct ck_reader {
    FILE *f;
    const char *path;
    uint64_t left; /* payload bytes not read yet */
} ck_reader;

static ns_status get(ck_reader *r, void *data, size_t n) {
    if (n > r->left)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: the data end before the %s they announce", r->path,
                       "sizes");
    if (n && fread(data, 1, n, r->f) != n)
        return ns_fail(NS_ERR_IO, "checkpoint %s: read failed: %s", r->path,
                       ferror(r->f) ? strerror(errno) : "unexpected end of file");
    r->left -= n;
    return NS_OK;
}

/* Whether variable k of the state is an ion's (names_of's order: they come last). */
static int is_ion_var(const ns_sim_t *sim, const ck_names *nm, int64_t k) {
    int64_t ions = 0;
    for (int32_t j = 0; j < sim->model->n_ions; ++j) ions += 3 + (sim->model->ions[j].read_i != 0);
    return k >= nm->n - ions;
}

/* What a checkpoint holds after its names, read into new buffers (a damaged file changes nothing). */
typedef struct ck_contents {
    double t;
    int64_t steps, samples;
    double *state;    /* per cell: every variable's values over its compartments, in nm's order */
    double *traces;   /* samples x sites */
    size_t ntr;
    double **spikes;  /* per cell */
    int64_t *n_spikes;
    double *scratch;  /* max_n doubles: one variable of a cell (check_contents, apply_contents) */
} ck_contents;

static void contents_free(const ns_sim_t *sim, ck_contents *c) {
    free(c->state);
    free(c->traces);
    if (c->spikes)
        for (int64_t k = 0; k < sim->n_cells; ++k) free(c->spikes[k]);
    free(c->spikes);
    free(c->n_spikes);
    free(c->scratch);
}

/* The contents checked like any input, even under a valid checksum: finite values where the
 * variables exist, t where the steps put it, spike times in order within [0, t]. */
static ns_status check_contents(ns_sim_t *sim, const char *path, const ck_names *nm, const ck_contents *c) {
    const double t = c->t, *state = c->state, *traces = c->traces;
    const size_t ntr = c->ntr;
    double *const *spikes = c->spikes;
    const int64_t *n_spikes = c->n_spikes;
    /* t as the loop accumulates it (two half steps a step, ns_sim_advance):
     * within the rounding bound of 2 steps additions of the exact steps * dt */
    const double exact = (double)c->steps * sim->params.dt;
    if (!(fabs(t - exact) <= 2.0 * (double)c->steps * DBL_EPSILON * exact + 1e-12 * sim->params.dt))
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: t = %.17g ms is not %lld steps of dt = %g ms", path, t,
                       (long long)c->steps, sim->params.dt);
    /* every value finite where the variable exists (its mechanism inserted), NaN elsewhere, as the
     * simulation's own values are */
    for (int64_t cell = 0, off = 0; cell < sim->n_cells; ++cell) {
        const int64_t n = sim->cell_offset[cell + 1] - sim->cell_offset[cell];
        for (int64_t k = 0; k < nm->n; ++k) {
            ns_status st = get_var(sim, nm, k, cell, c->scratch);
            if (st != NS_OK) return st;
            for (int64_t i = 0; i < n; ++i) {
                const double x = state[off + k * n + i];
                const int present = !isnan(c->scratch[i]);
                if (present ? !isfinite(x) : !isnan(x))
                    return ns_fail(NS_ERR_PARSE, "checkpoint %s: cell %lld, compartment %lld: %s = %g (%s)", path,
                                   (long long)cell, (long long)i, nm->name[k], x,
                                   present ? "not finite" : "the mechanism is not inserted there: NaN expected");
            }
        }
        off += nm->n * n;
    }
    for (size_t i = 0; i < ntr; ++i)
        if (!isfinite(traces[i]))
            return ns_fail(NS_ERR_PARSE, "checkpoint %s: trace sample %zu of site %zu is %g", path,
                           i / (size_t)sim->n_recs, i % (size_t)sim->n_recs, traces[i]);
    for (int64_t cell = 0; cell < sim->n_cells; ++cell)
        for (int64_t k = 0; k < n_spikes[cell]; ++k) {
            const double s = spikes[cell][k];
            if (!(s >= 0.0 && s <= t) || (k > 0 && !(s >= spikes[cell][k - 1])))
                return ns_fail(NS_ERR_PARSE, "checkpoint %s: cell %lld: spike %lld at %g ms (spike times are in "
                               "order in [0, t = %g ms])", path, (long long)cell, (long long)k, s, t);
        }
    return NS_OK;
}

/* The header of checkpoint `path` into *h: its magic bytes, byte order, version and sizes, the
 * file's size against them. */
static ns_status read_header(FILE *f, const char *path, ck_header *h) {
    unsigned char hb[CK_HEADER];
    if (fread(hb, 1, CK_HEADER, f) != CK_HEADER)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: shorter than its %d-byte header", path, CK_HEADER);
    if (memcmp(hb, CK_MAGIC, 8) != 0)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: not a neurosolve simulation checkpoint (magic bytes)", path);
    decode_header(hb, h);
    if (h->order != CK_ORDER)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: written on a machine of another byte order", path);
    if (h->version == 1u)
        return ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: version 1 (v and hh's gates without names, written before "
                       "every simulation ran a model of mechanisms); this build reads version %u: run again from the "
                       "start", path, CK_VERSION);
    if (h->version != CK_VERSION)
        return ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: version %u, this build reads version %u", path,
                       (unsigned)h->version, CK_VERSION);
    if (h->header_bytes != CK_HEADER)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: header size %llu, expected %d", path,
                       (unsigned long long)h->header_bytes, CK_HEADER);
    /* the file's size against the header's */
    if (fseek(f, 0, SEEK_END) != 0) return ns_fail(NS_ERR_IO, "checkpoint %s: %s", path, strerror(errno));
    const long size = ftell(f);
    if (size < 0 || (uint64_t)size != CK_HEADER + h->payload_bytes)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: %ld bytes, the header says %llu (truncated or extended)", path,
                       size, (unsigned long long)(CK_HEADER + h->payload_bytes));
    return NS_OK;
}

/* Which simulation the header belongs to, most telling difference first. */
static ns_status check_owner(const ns_sim_t *sim, const char *path, const ck_header *h) {
    if (h->cells != sim->n_cells || h->comps != sim->n_comp)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "checkpoint %s: made for %lld cells of %lld compartments in all, this simulation has %lld "
                       "cells of %lld",
                       path, (long long)h->cells, (long long)h->comps, (long long)sim->n_cells,
                       (long long)sim->n_comp);
    if (h->dt != sim->params.dt)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "checkpoint %s: made with dt = %.17g ms, this simulation has %.17g",
                       path, h->dt, sim->params.dt);
    if (h->sites != sim->n_recs || h->every != sim->options.record_every)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "checkpoint %s: made with %d recording sites every %d steps, this simulation has %d every %d",
                       path, (int)h->sites, (int)h->every, (int)sim->n_recs, (int)sim->options.record_every);
    if (h->stims != sim->n_stims)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "checkpoint %s: made with %lld stimuli, this simulation has %lld",
                       path, (long long)h->stims, (long long)sim->n_stims);
    if (h->fingerprint != fingerprint(sim))
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "checkpoint %s: made for another simulation of the same size (the shapes, parameters, "
                       "stimuli or recording sites differ)",
                       path);
    return NS_OK;
}

/* The payload's checksum against the header's, before anything is changed. */
static ns_status check_checksum(FILE *f, const char *path, const ck_header *h) {
    unsigned char chunk[1 << 16];
    uint64_t hash = NS_FNV_OFFSET, left = h->payload_bytes;
    fseek(f, CK_HEADER, SEEK_SET);
    while (left > 0) {
        const size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
        if (fread(chunk, 1, n, f) != n) return ns_fail(NS_ERR_IO, "checkpoint %s: read failed", path);
        hash = ns_fnv1a(hash, chunk, n);
        left -= n;
    }
    if (hash != h->checksum)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: checksum mismatch (the file is damaged)", path);
    return NS_OK;
}

/* The variables by name: the simulation's (nm), in its order (the fingerprint says the model is
 * the same, so a difference is damage). */
static ns_status read_names(ck_reader *r, const ck_names *nm) {
    char name[64];
    int64_t n_vars;
    ns_status st = get(r, &n_vars, sizeof n_vars);
    if (st != NS_OK) return st;
    if (n_vars != nm->n)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: %lld state variables, this simulation has %lld", r->path,
                       (long long)n_vars, (long long)nm->n);
    for (int64_t k = 0; k < nm->n; ++k) {
        int64_t len;
        if ((st = get(r, &len, sizeof len)) != NS_OK) return st;
        if (len < 1 || len >= (int64_t)sizeof name)
            return ns_fail(NS_ERR_PARSE, "checkpoint %s: state variable %lld: a name of %lld bytes", r->path,
                           (long long)k, (long long)len);
        if ((st = get(r, name, (size_t)len)) != NS_OK) return st;
        name[len] = 0;
        if (strcmp(name, nm->name[k]) != 0)
            return ns_fail(NS_ERR_PARSE, "checkpoint %s: state variable %lld is '%s', this simulation's is '%s'",
                           r->path, (long long)k, name, nm->name[k]);
    }
    return NS_OK;
}

/* The state, traces and spikes of `samples` samples; the sizes the counts imply must fit in the file
 * before anything is allocated for them. */
static ns_status read_contents(ck_reader *r, const ns_sim_t *sim, const ck_names *nm, uint64_t payload,
                               ck_contents *c) {
    const char *path = r->path;
    const uint64_t per_comp = 8u * (uint64_t)nm->n;
    if ((uint64_t)sim->n_comp > r->left / per_comp ||
        (sim->n_recs > 0 &&
         (uint64_t)c->samples > (r->left - (uint64_t)sim->n_comp * per_comp) / 8 / (uint64_t)sim->n_recs))
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: %lld samples of %d sites and %lld compartments do not fit in its "
                       "%llu bytes", path, (long long)c->samples, (int)sim->n_recs, (long long)sim->n_comp,
                       (unsigned long long)payload);
    const size_t nstate = (size_t)sim->n_comp * (size_t)nm->n;
    c->state = malloc((nstate ? nstate : 1) * sizeof *c->state);
    c->scratch = malloc((size_t)(sim->max_n > 0 ? sim->max_n : 1) * sizeof *c->scratch);
    c->ntr = (size_t)c->samples * (size_t)sim->n_recs;
    c->traces = malloc((c->ntr ? c->ntr : 1) * sizeof *c->traces);
    c->spikes = calloc((size_t)sim->n_cells, sizeof *c->spikes);
    c->n_spikes = calloc((size_t)sim->n_cells, sizeof *c->n_spikes);
    if (!c->state || !c->scratch || !c->traces || !c->spikes || !c->n_spikes)
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "checkpoint %s: %lld compartments, %lld samples", path,
                       (long long)sim->n_comp, (long long)c->samples);
    ns_status st;
    if ((st = get(r, c->state, nstate * sizeof *c->state)) != NS_OK) return st;
    if ((st = get(r, c->traces, c->ntr * sizeof *c->traces)) != NS_OK) return st;
    for (int64_t k = 0; k < sim->n_cells; ++k) {
        if ((st = get(r, &c->n_spikes[k], sizeof c->n_spikes[k])) != NS_OK) return st;
        if (c->n_spikes[k] < 0 || (uint64_t)c->n_spikes[k] > r->left / sizeof(double))
            return ns_fail(NS_ERR_PARSE, "checkpoint %s: cell %lld: %lld spikes do not fit in the file", path,
                           (long long)k, (long long)c->n_spikes[k]);
        c->spikes[k] = malloc((size_t)(c->n_spikes[k] ? c->n_spikes[k] : 1) * sizeof(double));
        if (!c->spikes[k])
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "checkpoint %s: spikes of cell %lld", path, (long long)k);
        if ((st = get(r, c->spikes[k], (size_t)c->n_spikes[k] * sizeof(double))) != NS_OK) return st;
    }
    if (r->left != 0)
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: %llu bytes after the data", path, (unsigned long long)r->left);
    return NS_OK;
}

/* Apply checked contents: the state through the accessors, then time and results (the spike
 * arrays taken over). */
static ns_status apply_contents(ns_sim_t *sim, const ck_names *nm, ck_contents *c) {
    double *scratch = c->scratch;
    ns_status st = ns_sim_grow_traces(sim, c->samples);
    if (st != NS_OK) return st;
    for (int64_t k = 0, off = 0; k < sim->n_cells; ++k) {
        const int64_t n = sim->cell_offset[k + 1] - sim->cell_offset[k];
        if ((st = ns_sim_set_state(sim, k, c->state + off)) != NS_OK) return st;
        for (int64_t v = 1; v < nm->n; ++v) {
            const double *x = c->state + off + v * n;
            /* an ion's value the same as now is not written: a written one makes the fused
             * paths read it per compartment (ns_sim_set_model_var) */
            if (is_ion_var(sim, nm, v)) {
                if ((st = ns_sim_get_model_var(sim, k, nm->name[v], scratch)) != NS_OK) return st;
                if (memcmp(scratch, x, (size_t)n * sizeof *x) == 0) continue;
            }
            if ((st = ns_sim_set_model_var(sim, k, nm->name[v], x)) != NS_OK) return st;
        }
        off += nm->n * n;
    }
    if (c->ntr) memcpy(sim->traces, c->traces, c->ntr * sizeof *c->traces);
    for (int64_t k = 0; k < sim->n_cells; ++k) {
        free(sim->spikes.t[k]);
        sim->spikes.t[k] = c->spikes[k];
        sim->spikes.n[k] = sim->spikes.cap[k] = c->n_spikes[k] ? c->n_spikes[k] : 1;
        sim->spikes.n[k] = c->n_spikes[k];
        c->spikes[k] = NULL;
    }
    sim->t = c->t;
    sim->steps = c->steps;
    sim->samples = c->samples;
    sim->failed = NS_OK;
    return NS_OK;
}

ns_status ns_sim_restore_state(ns_sim_t *sim, const char *path) {
    ns_status st = check_checkpoint(sim, path, "ns_sim_restore_state", "restored");
    if (st != NS_OK) return st;
    st = ns_sim_index(sim);
    if (st != NS_OK) return st;
    ck_names nm = {0, NULL};
    ck_contents c;
    memset(&c, 0, sizeof c);
    FILE *f = fopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "checkpoint %s: %s", path, strerror(errno));
    ck_header h;
    if ((st = read_header(f, path, &h)) != NS_OK || (st = check_owner(sim, path, &h)) != NS_OK ||
        (st = check_checksum(f, path, &h)) != NS_OK)
        goto out;
    fseek(f, CK_HEADER, SEEK_SET);
    ck_reader r = {f, path, h.payload_bytes};
    if ((st = get(&r, &c.t, sizeof c.t)) != NS_OK || (st = get(&r, &c.steps, sizeof c.steps)) != NS_OK ||
        (st = get(&r, &c.samples, sizeof c.samples)) != NS_OK)
        goto out;
    if (!isfinite(c.t) || c.t < 0.0 || c.steps < 0 || c.steps > NS_SIM_MAX_STEPS ||
        c.samples != c.steps / sim->options.record_every + 1) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: t = %g ms, %lld steps and %lld samples do not agree", path, c.t,
                     (long long)c.steps, (long long)c.samples);
        goto out;
    }
    if ((st = names_of(sim, &nm)) != NS_OK || (st = read_names(&r, &nm)) != NS_OK ||
        (st = read_contents(&r, sim, &nm, h.payload_bytes, &c)) != NS_OK)
        goto out;
    if ((st = check_contents(sim, path, &nm, &c)) != NS_OK) goto out;
    st = apply_contents(sim, &nm, &c);
out:
    fclose(f);
    free(nm.name);
    contents_free(sim, &c);
    return st;
}
