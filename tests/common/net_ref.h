/* Shared by test_sim_network.c and test_mpi_network.c: the networks of
 * tests/data/neuron_network/ (validation/neuron_network_compare.py writes
 * them: their description and NEURON 9.0.2's raster, README there), built
 * by the same calls on a simulation of one process or of several, and a
 * run's raster checked against NEURON's. */
#ifndef NS_TEST_NET_REF_H
#define NS_TEST_NET_REF_H

#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cell_cylinder.h"
#include "neurosolve/neurosolve.h"

#define MAX_SPIKES 4096
#define MAX_ITEMS 256
#define MAX_SHAPES 4
#define MAX_SOURCES 64
#define MAX_PER 64
#define TOL 0.05 /* [ms] */

/* A network as validation/neuron_network_compare.py writes it, and NEURON's raster. */
typedef struct syn_spec {
    int cell;
    long long section_id; /* SWC id of the section's first own point */
    double x;
    char mech[32];
    int n_params;
    char name[4][16];
    double value[4];
} syn_spec;

typedef struct ref {
    double dt, tstop, threshold;
    int n_cells, n_syns, n_trains, n_conns, n_shapes;
    char shape_file[MAX_SHAPES][128];
    int cell_shape[MAX_ITEMS];
    syn_spec syn[MAX_ITEMS];
    int n_times[8];
    double times[8][32];
    int conn_src[MAX_ITEMS], conn_syn[MAX_ITEMS];
    double conn_w[MAX_ITEMS], conn_d[MAX_ITEMS];
    int n;
    int source[MAX_SPIKES];
    double t[MAX_SPIKES];
} ref;

static int read_ref(const char *path, ref *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[2048];
    int bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            char key[64];
            int at = 0;
            if (sscanf(line, "# %63s = %n", key, &at) != 1 || at == 0) continue;
            char *val = line + at;
            if (!strcmp(key, "dt")) r->dt = strtod(val, NULL);
            else if (!strcmp(key, "tstop")) r->tstop = strtod(val, NULL);
            else if (!strcmp(key, "threshold")) r->threshold = strtod(val, NULL);
            else if (!strcmp(key, "cell") && r->n_cells < MAX_ITEMS) {
                char file[128];
                if (sscanf(val, "%127s", file) != 1) bad = 1;
                int k = 0;
                while (k < r->n_shapes && strcmp(r->shape_file[k], file) != 0) ++k;
                if (k == r->n_shapes && k < MAX_SHAPES) snprintf(r->shape_file[r->n_shapes++], 128, "%s", file);
                r->cell_shape[r->n_cells++] = k < MAX_SHAPES ? k : 0;
            } else if (!strcmp(key, "synapse") && r->n_syns < MAX_ITEMS) {
                syn_spec *y = &r->syn[r->n_syns++];
                int used = 0;
                if (sscanf(val, "%d %lld %lf %31s %n", &y->cell, &y->section_id, &y->x, y->mech, &used) != 4) bad = 1;
                char *q = val + used, *tok;
                while (y->n_params < 4 && (tok = strtok(q, " \n")) != NULL) {
                    q = NULL;
                    char *eq = strchr(tok, '=');
                    if (!eq) continue;
                    *eq = 0;
                    snprintf(y->name[y->n_params], 16, "%s", tok);
                    y->value[y->n_params++] = strtod(eq + 1, NULL);
                }
            } else if (!strcmp(key, "train") && r->n_trains < 8) {
                const int q = r->n_trains++;
                char *end = val;
                for (;;) {
                    char *next;
                    const double x = strtod(end, &next);
                    if (next == end || r->n_times[q] == 32) break;
                    r->times[q][r->n_times[q]++] = x;
                    end = next;
                }
            } else if (!strcmp(key, "connect") && r->n_conns < MAX_ITEMS) {
                const int k = r->n_conns++;
                if (sscanf(val, "%d %d %lf %lf", &r->conn_src[k], &r->conn_syn[k], &r->conn_w[k], &r->conn_d[k]) != 4)
                    bad = 1;
            }
            continue;
        }
        int s;
        double t;
        if (sscanf(line, "%d,%lf", &s, &t) == 2 && r->n < MAX_SPIKES) {
            r->source[r->n] = s;
            r->t[r->n++] = t;
        }
    }
    fclose(f);
    return !bad && r->n_cells > 0 && r->n > 0 && r->n_conns > 0 && r->dt > 0 ? 0 : -1;
}

static ns_cell_t *load_cell(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, file);
    ns_morph_t *morph = NULL;
    ns_cell_t *cell = NULL;
    CHECK_OK(ns_swc_read(path, NULL, &morph));
    if (morph) CHECK_OK(ns_discretize(morph, NULL, &cell)); /* d_lambda 0.1 at 100 Hz, Ra 35.4 */
    ns_morph_destroy(morph);
    return cell;
}

static ns_sim_model_t *model_of(const char *text) {
    ns_sim_model_t *m = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &m));
    if (m) CHECK_OK(ns_sim_model_parse(m, text, strlen(text), "test.model"));
    return m;
}

/* The compartment at x of the section whose first own point has SWC id `id`. */
static int32_t section_at(const ns_cell_t *cell, long long id, double x) {
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    for (int32_t s = 0; s < ci.sections; ++s) {
        ns_section_info si;
        if (ns_cell_get_section(cell, s, &si) != NS_OK) return -1;
        if (si.first_point_id == id) {
            int32_t c = -1;
            return ns_cell_locate(cell, s, x, &c) == NS_OK ? c : -1;
        }
    }
    return -1;
}

/* The raster of one run: spikes of source s at t[s * MAX_PER + k]. */
typedef struct raster {
    int64_t count[MAX_SOURCES];
    double t[MAX_SOURCES * MAX_PER];
    double trace_sum, trace_end; /* v at the soma of the last cell */
} raster;

/* The network of r: synapses (ids in file order), a detector at each cell's
 * spike compartment (sources 0 .. n_cells-1), then the trains, then the
 * connections. */
static void build_net(const ref *r, ns_cell_t *const *shapes, const int32_t *spike_compartment, ns_sim_t *sim) {
    for (int k = 0; k < r->n_syns; ++k) {
        const syn_spec *y = &r->syn[k];
        const int32_t node = section_at(shapes[r->cell_shape[y->cell]], y->section_id, y->x);
        CHECK_MSG(node >= 0, "synapse %d: section with first point %lld", k, y->section_id);
        int64_t id = -1;
        CHECK_OK(ns_sim_add_synapse(sim, y->cell, node, y->mech, &id));
        CHECK(id == k);
        for (int q = 0; q < y->n_params; ++q) CHECK_OK(ns_sim_synapse_set(sim, id, y->name[q], y->value[q]));
    }
    for (int c = 0; c < r->n_cells; ++c) {
        int64_t det = -1;
        CHECK_OK(ns_sim_add_detector(sim, c, spike_compartment[c], r->threshold, &det));
        CHECK(det == c);
    }
    for (int q = 0; q < r->n_trains; ++q) {
        int64_t src = -1;
        CHECK_OK(ns_sim_add_spike_source(sim, r->times[q], r->n_times[q], &src));
        CHECK(src == r->n_cells + q);
    }
    for (int k = 0; k < r->n_conns; ++k)
        CHECK_OK(ns_sim_connect(sim, r->conn_src[k], r->conn_syn[k], r->conn_w[k], r->conn_d[k]));
}

/* A run's raster against NEURON's: per source the same count and times
 * within TOL; every cell spiked at least twice in NEURON (the network ran).
 * Returns the largest time difference [ms]; *total: NEURON's spikes. */
static double check_against_neuron(const char *file, const ref *r, const raster *run, int64_t *total) {
    const int n_src = r->n_cells + r->n_trains;
    double worst = 0.0;
    *total = 0;
    for (int q = 0; q < n_src; ++q) {
        int64_t n_ref = 0;
        for (int k = 0; k < r->n; ++k) n_ref += r->source[k] == q;
        CHECK_MSG(run->count[q] == n_ref, "%s: source %d: %lld spikes, NEURON %lld", file, q,
                  (long long)run->count[q], (long long)n_ref);
        int64_t k = 0;
        for (int i = 0; i < r->n; ++i) {
            if (r->source[i] != q) continue;
            if (k < run->count[q] && k < MAX_PER) {
                const double d = fabs(run->t[q * MAX_PER + k] - r->t[i]);
                if (d > worst) worst = d;
                CHECK_MSG(d <= TOL, "%s: source %d spike %lld: %.6f ms, NEURON %.6f", file, q, (long long)k,
                          run->t[q * MAX_PER + k], r->t[i]);
            }
            ++k;
        }
        *total += n_ref;
        if (q < r->n_cells) CHECK_MSG(n_ref >= 2, "%s: cell %d: %lld spikes in NEURON", file, q, (long long)n_ref);
    }
    return worst;
}

#endif
