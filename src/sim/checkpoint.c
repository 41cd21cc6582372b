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

static void encode_header(unsigned char *b, const ck_header *h) {
    memset(b, 0, CK_HEADER);
    memcpy(b, CK_MAGIC, 8);
    memcpy(b + 8, &h->version, 4);
    memcpy(b + 12, &h->order, 4);
    memcpy(b + 16, &h->header_bytes, 8);
    memcpy(b + 24, &h->payload_bytes, 8);
    memcpy(b + 32, &h->checksum, 8);
    memcpy(b + 40, &h->fingerprint, 8);
    memcpy(b + 48, &h->cells, 8);
    memcpy(b + 56, &h->comps, 8);
    memcpy(b + 64, &h->stims, 8);
    memcpy(b + 72, &h->sites, 4);
    memcpy(b + 76, &h->every, 4);
    memcpy(b + 80, &h->dt, 8);
}

static void decode_header(const unsigned char *b, ck_header *h) {
    memcpy(&h->version, b + 8, 4);
    memcpy(&h->order, b + 12, 4);
    memcpy(&h->header_bytes, b + 16, 8);
    memcpy(&h->payload_bytes, b + 24, 8);
    memcpy(&h->checksum, b + 32, 8);
    memcpy(&h->fingerprint, b + 40, 8);
    memcpy(&h->cells, b + 48, 8);
    memcpy(&h->comps, b + 56, 8);
    memcpy(&h->stims, b + 64, 8);
    memcpy(&h->sites, b + 72, 4);
    memcpy(&h->every, b + 76, 4);
    memcpy(&h->dt, b + 80, 8);
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

ns_status ns_sim_save_state(ns_sim_t *sim, const char *path) {
    if (!sim || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_save_state: NULL argument");
    if (sim->dist) return ns_dist_sim_refuse("ns_sim_save_state");
    if (ns_sim_synapses(sim) > 0 || ns_sim_sources(sim) > 0)
        return ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: a simulation with a network cannot be checkpointed yet: its "
                                           "synapses' states and queued events are not saved", path);
    if (sim->failed)
        return ns_fail(NS_ERR_NOT_FINITE, "checkpoint %s: the simulation stopped on NaN/Inf; its state is not saved",
                       path);
    ns_status st = ns_sim_index(sim);
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

static ns_status check_contents(ns_sim_t *sim, const char *path, double t, int64_t steps, const double *state,
                                const ck_names *nm, double *scratch, const double *traces, size_t ntr,
                                double *const *spikes, const int64_t *n_spikes) {
    /* t as the loop accumulates it (two half steps a step, ns_sim_advance):
     * within the rounding bound of 2 steps additions of the exact steps * dt */
    const double exact = (double)steps * sim->params.dt;
    if (!(fabs(t - exact) <= 2.0 * (double)steps * DBL_EPSILON * exact + 1e-12 * sim->params.dt))
        return ns_fail(NS_ERR_PARSE, "checkpoint %s: t = %.17g ms is not %lld steps of dt = %g ms", path, t,
                       (long long)steps, sim->params.dt);
    /* every value finite where the variable exists (its mechanism inserted), NaN elsewhere, as the
     * simulation's own values are */
    for (int64_t c = 0, off = 0; c < sim->n_cells; ++c) {
        const int64_t n = sim->cell_offset[c + 1] - sim->cell_offset[c];
        for (int64_t k = 0; k < nm->n; ++k) {
            ns_status st = get_var(sim, nm, k, c, scratch);
            if (st != NS_OK) return st;
            for (int64_t i = 0; i < n; ++i) {
                const double x = state[off + k * n + i];
                const int present = !isnan(scratch[i]);
                if (present ? !isfinite(x) : !isnan(x))
                    return ns_fail(NS_ERR_PARSE, "checkpoint %s: cell %lld, compartment %lld: %s = %g (%s)", path,
                                   (long long)c, (long long)i, nm->name[k], x,
                                   present ? "not finite" : "the mechanism is not inserted there: NaN expected");
            }
        }
        off += nm->n * n;
    }
    for (size_t i = 0; i < ntr; ++i)
        if (!isfinite(traces[i]))
            return ns_fail(NS_ERR_PARSE, "checkpoint %s: trace sample %zu of site %zu is %g", path,
                           i / (size_t)sim->n_recs, i % (size_t)sim->n_recs, traces[i]);
    for (int64_t c = 0; c < sim->n_cells; ++c)
        for (int64_t k = 0; k < n_spikes[c]; ++k) {
            const double s = spikes[c][k];
            if (!(s >= 0.0 && s <= t) || (k > 0 && !(s >= spikes[c][k - 1])))
                return ns_fail(NS_ERR_PARSE, "checkpoint %s: cell %lld: spike %lld at %g ms (spike times are in "
                               "order in [0, t = %g ms])", path, (long long)c, (long long)k, s, t);
        }
    return NS_OK;
}

ns_status ns_sim_restore_state(ns_sim_t *sim, const char *path) {
    if (!sim || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_restore_state: NULL argument");
    if (sim->dist) return ns_dist_sim_refuse("ns_sim_restore_state");
    if (ns_sim_synapses(sim) > 0 || ns_sim_sources(sim) > 0)
        return ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: a simulation with a network cannot be restored yet: its "
                                           "synapses' states and queued events are not saved", path);
    ns_status st = ns_sim_index(sim);
    if (st != NS_OK) return st;
    ck_names nm = {0, NULL};
    char name[64];
    double *scratch = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "checkpoint %s: %s", path, strerror(errno));
    unsigned char hb[CK_HEADER];
    ck_header h;
    double *buf = NULL, *traces = NULL, **spikes = NULL;
    int64_t *n_spikes = NULL;
    if (fread(hb, 1, CK_HEADER, f) != CK_HEADER) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: shorter than its %d-byte header", path, CK_HEADER);
        goto out;
    }
    if (memcmp(hb, CK_MAGIC, 8) != 0) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: not a neurosolve simulation checkpoint (magic bytes)", path);
        goto out;
    }
    decode_header(hb, &h);
    if (h.order != CK_ORDER) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: written on a machine of another byte order", path);
        goto out;
    }
    if (h.version == 1u) {
        st = ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: version 1 (v and hh's gates without names, written before "
                     "every simulation ran a model of mechanisms); this build reads version %u: run again from the "
                     "start", path, CK_VERSION);
        goto out;
    }
    if (h.version != CK_VERSION) {
        st = ns_fail(NS_ERR_UNSUPPORTED, "checkpoint %s: version %u, this build reads version %u", path,
                     (unsigned)h.version, CK_VERSION);
        goto out;
    }
    if (h.header_bytes != CK_HEADER) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: header size %llu, expected %d", path,
                     (unsigned long long)h.header_bytes, CK_HEADER);
        goto out;
    }
    /* the file's size against the header's */
    if (fseek(f, 0, SEEK_END) != 0) {
        st = ns_fail(NS_ERR_IO, "checkpoint %s: %s", path, strerror(errno));
        goto out;
    }
    const long size = ftell(f);
    if (size < 0 || (uint64_t)size != CK_HEADER + h.payload_bytes) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: %ld bytes, the header says %llu (truncated or extended)", path,
                     size, (unsigned long long)(CK_HEADER + h.payload_bytes));
        goto out;
    }
    /* which simulation it belongs to, most telling difference first */
    if (h.cells != sim->n_cells || h.comps != sim->n_comp)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                     "checkpoint %s: made for %lld cells of %lld compartments in all, this simulation has %lld "
                     "cells of %lld",
                     path, (long long)h.cells, (long long)h.comps, (long long)sim->n_cells, (long long)sim->n_comp);
    else if (h.dt != sim->params.dt)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "checkpoint %s: made with dt = %.17g ms, this simulation has %.17g",
                     path, h.dt, sim->params.dt);
    else if (h.sites != sim->n_recs || h.every != sim->options.record_every)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                     "checkpoint %s: made with %d recording sites every %d steps, this simulation has %d every %d",
                     path, (int)h.sites, (int)h.every, (int)sim->n_recs, (int)sim->options.record_every);
    else if (h.stims != sim->n_stims)
        st = ns_fail(NS_ERR_INVALID_ARGUMENT, "checkpoint %s: made with %lld stimuli, this simulation has %lld",
                     path, (long long)h.stims, (long long)sim->n_stims);
    else if (h.fingerprint != fingerprint(sim))
        st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                     "checkpoint %s: made for another simulation of the same size (the shapes, parameters, "
                     "stimuli or recording sites differ)",
                     path);
    if (st != NS_OK) goto out;
    /* the checksum, before anything is changed */
    {
        unsigned char chunk[1 << 16];
        uint64_t hash = NS_FNV_OFFSET, left = h.payload_bytes;
        fseek(f, CK_HEADER, SEEK_SET);
        while (left > 0) {
            const size_t n = left < sizeof chunk ? (size_t)left : sizeof chunk;
            if (fread(chunk, 1, n, f) != n) {
                st = ns_fail(NS_ERR_IO, "checkpoint %s: read failed", path);
                goto out;
            }
            hash = ns_fnv1a(hash, chunk, n);
            left -= n;
        }
        if (hash != h.checksum) {
            st = ns_fail(NS_ERR_PARSE, "checkpoint %s: checksum mismatch (the file is damaged)", path);
            goto out;
        }
    }
    fseek(f, CK_HEADER, SEEK_SET);
    ck_reader r = {f, path, h.payload_bytes};
    double t;
    int64_t steps, samples;
    if ((st = get(&r, &t, sizeof t)) != NS_OK || (st = get(&r, &steps, sizeof steps)) != NS_OK ||
        (st = get(&r, &samples, sizeof samples)) != NS_OK)
        goto out;
    if (!isfinite(t) || t < 0.0 || steps < 0 || steps > NS_SIM_MAX_STEPS ||
        samples != steps / sim->options.record_every + 1) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: t = %g ms, %lld steps and %lld samples do not agree", path, t,
                     (long long)steps, (long long)samples);
        goto out;
    }
    /* the variables by name: the simulation's, in its order (the fingerprint
     * says the model is the same, so a difference is damage) */
    if ((st = names_of(sim, &nm)) != NS_OK) goto out;
    int64_t n_vars;
    if ((st = get(&r, &n_vars, sizeof n_vars)) != NS_OK) goto out;
    if (n_vars != nm.n) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: %lld state variables, this simulation has %lld", path,
                     (long long)n_vars, (long long)nm.n);
        goto out;
    }
    for (int64_t k = 0; k < nm.n; ++k) {
        int64_t len;
        if ((st = get(&r, &len, sizeof len)) != NS_OK) goto out;
        if (len < 1 || len >= (int64_t)sizeof name) {
            st = ns_fail(NS_ERR_PARSE, "checkpoint %s: state variable %lld: a name of %lld bytes", path, (long long)k,
                         (long long)len);
            goto out;
        }
        if ((st = get(&r, name, (size_t)len)) != NS_OK) goto out;
        name[len] = 0;
        if (strcmp(name, nm.name[k]) != 0) {
            st = ns_fail(NS_ERR_PARSE, "checkpoint %s: state variable %lld is '%s', this simulation's is '%s'", path,
                         (long long)k, name, nm.name[k]);
            goto out;
        }
    }
    /* the sizes the counts imply must fit in the file before anything is
     * allocated for them */
    const uint64_t per_comp = 8u * (uint64_t)nm.n;
    if ((uint64_t)sim->n_comp > r.left / per_comp ||
        (sim->n_recs > 0 &&
         (uint64_t)samples > (r.left - (uint64_t)sim->n_comp * per_comp) / 8 / (uint64_t)sim->n_recs)) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: %lld samples of %d sites and %lld compartments do not fit in its %llu "
                     "bytes", path, (long long)samples, (int)sim->n_recs, (long long)sim->n_comp,
                     (unsigned long long)h.payload_bytes);
        goto out;
    }
    /* read everything into new buffers first: a damaged file changes nothing */
    const size_t nstate = (size_t)sim->n_comp * (size_t)nm.n;
    buf = malloc((nstate ? nstate : 1) * sizeof *buf);
    scratch = malloc((size_t)(sim->max_n > 0 ? sim->max_n : 1) * sizeof *scratch);
    const size_t ntr = (size_t)samples * (size_t)sim->n_recs;
    traces = malloc((ntr ? ntr : 1) * sizeof *traces);
    spikes = calloc((size_t)sim->n_cells, sizeof *spikes);
    n_spikes = calloc((size_t)sim->n_cells, sizeof *n_spikes);
    if (!buf || !scratch || !traces || !spikes || !n_spikes) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "checkpoint %s: %lld compartments, %lld samples", path,
                     (long long)sim->n_comp, (long long)samples);
        goto out;
    }
    if ((st = get(&r, buf, nstate * sizeof *buf)) != NS_OK) goto out;
    if ((st = get(&r, traces, ntr * sizeof *traces)) != NS_OK) goto out;
    for (int64_t c = 0; c < sim->n_cells; ++c) {
        if ((st = get(&r, &n_spikes[c], sizeof n_spikes[c])) != NS_OK) goto out;
        if (n_spikes[c] < 0 || (uint64_t)n_spikes[c] > r.left / sizeof(double)) {
            st = ns_fail(NS_ERR_PARSE, "checkpoint %s: cell %lld: %lld spikes do not fit in the file", path,
                         (long long)c, (long long)n_spikes[c]);
            goto out;
        }
        spikes[c] = malloc((size_t)(n_spikes[c] ? n_spikes[c] : 1) * sizeof(double));
        if (!spikes[c]) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "checkpoint %s: spikes of cell %lld", path, (long long)c);
            goto out;
        }
        if ((st = get(&r, spikes[c], (size_t)n_spikes[c] * sizeof(double))) != NS_OK) goto out;
    }
    if (r.left != 0) {
        st = ns_fail(NS_ERR_PARSE, "checkpoint %s: %llu bytes after the data", path, (unsigned long long)r.left);
        goto out;
    }
    /* the contents checked like any input, even under a valid checksum:
     * finite values where the variables exist, t where the steps put it,
     * spike times in order within [0, t] */
    if ((st = check_contents(sim, path, t, steps, buf, &nm, scratch, traces, ntr, spikes, n_spikes)) != NS_OK)
        goto out;
    /* apply: state through the accessor, then time and results */
    if ((st = ns_sim_grow_traces(sim, samples)) != NS_OK) goto out;
    for (int64_t c = 0, off = 0; c < sim->n_cells; ++c) {
        const int64_t n = sim->cell_offset[c + 1] - sim->cell_offset[c];
        if ((st = ns_sim_set_state(sim, c, buf + off)) != NS_OK) goto out;
        for (int64_t k = 1; k < nm.n; ++k) {
            const double *x = buf + off + k * n;
            /* an ion's value the same as now is not written: a written one makes the fused
             * paths read it per compartment (ns_sim_set_model_var) */
            if (is_ion_var(sim, &nm, k)) {
                if ((st = ns_sim_get_model_var(sim, c, nm.name[k], scratch)) != NS_OK) goto out;
                if (memcmp(scratch, x, (size_t)n * sizeof *x) == 0) continue;
            }
            if ((st = ns_sim_set_model_var(sim, c, nm.name[k], x)) != NS_OK) goto out;
        }
        off += nm.n * n;
    }
    if (ntr) memcpy(sim->traces, traces, ntr * sizeof *traces);
    for (int64_t c = 0; c < sim->n_cells; ++c) {
        free(sim->spikes.t[c]);
        sim->spikes.t[c] = spikes[c];
        sim->spikes.n[c] = sim->spikes.cap[c] = n_spikes[c] ? n_spikes[c] : 1;
        sim->spikes.n[c] = n_spikes[c];
        spikes[c] = NULL;
    }
    sim->t = t;
    sim->steps = steps;
    sim->samples = samples;
    sim->failed = 0;
out:
    fclose(f);
    free(nm.name);
    free(scratch);
    free(buf);
    free(traces);
    if (spikes)
        for (int64_t c = 0; c < sim->n_cells; ++c) free(spikes[c]);
    free(spikes);
    free(n_spikes);
    return st;
}
