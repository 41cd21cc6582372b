/* neurosolve simulate: a population of real cells with NEURON's hh and pas,
 * current clamps and recordings (docs/simulation.md). */
#define _POSIX_C_SOURCE 200809L /* sigaction, strtok_r */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "simulate.h"
#include "simulate_out.h"

/* What one input spike of a network costs, for the estimate before a run:
 * memory (its source and time, its raster row) and a row of spikes.csv
 * ("source,cell,t_ms"); above SPIKES_NOTE spikes the estimate is printed. */
#define SPIKE_BYTES 25.0
#define SPIKE_CSV_BYTES 26.0
#define SPIKES_NOTE 1e7
/* Result files above this size [bytes] are announced before the run. */
#define OUTPUT_NOTE_BYTES 1e9

/* The compartment of a location in a cell; prints the error. */
static int resolve_loc(const loc_spec *l, const ns_cell_t *cell, const char *name, int32_t *node) {
    if (ns_location_compartment(cell, &l->loc, node) != NS_OK)
        return cli_error("%s: %s: %s", name, l->text, ns_last_error());
    return 0;
}

/* The progress bar on stderr. */
static void progress(double frac, double elapsed_s) {
    int width = 40, fill = (int)(frac * width + 0.5);
    fprintf(stderr, "\r[");
    for (int i = 0; i < width; ++i) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %5.1f%%  %.1f s", 100.0 * frac, elapsed_s);
    if (frac > 0.0 && frac < 1.0) fprintf(stderr, ", about %.0f s left   ", elapsed_s / frac * (1.0 - frac));
    else fprintf(stderr, "%20s", "");
    fflush(stderr);
}

/* The morphologies: the SHAPE arguments' or the network's (one SWC file each,
 * with the shared morphology options); 0 or 1 (printed). */
static int load_shapes(sim_run *r) {
    const sim_args *a = &r->a;
    cli_shape_set *set = &r->set;
    for (int k = 0; k < a->n_specs; ++k)
        if (cli_shapes_add(set, a->specs[k], &a->mo, 1)) return 1;
    for (int32_t k = 0; r->net && k < ns_network_morphologies(r->net); ++k) {
        if (set->count == MAX_ITEMS)
            return cli_error("network: %s: more than %d morphologies", a->network_file, MAX_ITEMS);
        const int before = set->count;
        if (cli_shapes_add(set, ns_network_morphology(r->net, k), &a->mo, 1)) return 1;
        if (set->count != before + 1)
            return cli_error("network: %s: morphology %s is not one SWC file", a->network_file,
                             ns_network_morphology(r->net, k));
    }
    r->cells = malloc((size_t)set->count * sizeof *r->cells);
    if (!r->cells) return cli_error("out of memory");
    for (int k = 0; k < set->count; ++k) {
        if (!set->items[k].cell)
            return cli_error("%s: simulate needs morphologies (SWC files), not generated trees", set->items[k].name);
        r->cells[k] = set->items[k].cell;
    }
    r->n_cells = r->net ? ns_network_cells(r->net) : a->cells_per * set->count;
    return 0;
}

/* The memory the run needs is known before anything big is allocated: the
 * state (v, m, h, n and a work vector: 40 B per compartment), the cells (24 B
 * each) and the traces (kept by the simulation and copied for the files: 16 B
 * per sample and site). A lower bound, refused when it exceeds the machine's
 * memory instead of failing at the end; large result files and inputs are
 * announced. 0 or 1 (printed). */
static int check_memory(const sim_run *r) {
    const sim_args *a = &r->a;
    const long long n_cells = r->n_cells, cells_per = a->cells_per, record_cells = a->record_cells;
    double comps = 0.0;
    for (int k = 0; k < r->set.count; ++k) {
        double per = (double)cells_per;
        if (r->net) {
            per = 0.0;
            for (long long c = 0; c < n_cells; ++c) per += ns_network_cell_morphology(r->net)[c] == k;
        }
        comps += (double)ns_tree_size(ns_cell_tree(r->cells[k])) * per;
    }
    const double sites_all =
        (double)r->set.count * (double)(record_cells < cells_per ? record_cells : cells_per) * a->n_recs;
    const double samples_all = (double)r->n_steps / a->so.record_every + 1.0;
    /* the network's inputs (trains, Poisson sources: their mean count):
     * each spike is kept (source and time, and its raster row: about
     * SPIKE_BYTES of memory) and written as a row of spikes.csv (about
     * SPIKE_CSV_BYTES) */
    const double in_spikes = r->net ? ns_network_expected_input_spikes(r->net, r->params.tstop) : 0.0;
    /* under MPI each process holds its share of the cells; rank 0 gathers every trace */
    const double need = (40.0 * comps + 24.0 * (double)n_cells) / cli_mpi_size() + 16.0 * samples_all * sites_all +
                        SPIKE_BYTES * in_spikes;
    const double have = cli_physical_memory();
    if (have > 0 && need > have)
        return cli_error("simulate: %lld cells (%.3g compartments), %.3g trace samples of %.0f sites and %.3g input "
                         "spikes need at least %.1f GB, more than the %.1f GB of memory of this machine (fewer "
                         "--cells, a larger --record-every, a shorter --tstop or lower input rates)",
                         n_cells, comps, samples_all, sites_all, in_spikes, need / 1e9, have / 1e9);
    /* the files: a traces.csv row of t ("%.4f") and a value (",%.6f") per site, a traces.npy
     * row of 8 bytes per column, a spikes.csv row per input spike (the cells' own
     * spikes are not known before the run) */
    const double out_bytes =
        samples_all * (10.0 + 11.0 * sites_all + 8.0 * (sites_all + 1.0)) + SPIKE_CSV_BYTES * in_spikes;
    if ((a->out || a->plot) && out_bytes > OUTPUT_NOTE_BYTES && cli_mpi_rank() == 0)
        fprintf(stderr, "neurosolve: note: the result files will take about %.1f GB (%.3g trace samples of %.0f "
                "sites%s)\n", out_bytes / 1e9, samples_all, sites_all, in_spikes > 0 ? " and the inputs' spikes" : "");
    if (in_spikes > SPIKES_NOTE && cli_mpi_rank() == 0)
        fprintf(stderr,
                "neurosolve: note: the network's inputs give about %.3g spikes up to tstop = %g ms: about %.1f GB "
                "of memory and %.1f GB of spikes.csv\n",
                in_spikes, r->params.tstop, SPIKE_BYTES * in_spikes / 1e9, SPIKE_CSV_BYTES * in_spikes / 1e9);
    return 0;
}

/* The model of the run: the network's or --model's (one of them; a network
 * needs one); 0 or 1 (printed). */
static int load_model(sim_run *r) {
    sim_args *a = &r->a;
    if (r->net) {
        if (a->mech_lib && ns_mech_library_open(a->mech_lib, &r->lib) != NS_OK)
            return cli_error("model: %s", ns_last_error());
        if (ns_network_model(r->net, r->lib, &r->model) != NS_OK) return cli_error("network: %s", ns_last_error());
        if (r->model && a->model_file)
            return cli_error("network: %s names a model and --model %s is given: one of them only", a->network_file,
                             a->model_file);
        if (!r->model && !a->model_file)
            return cli_error("network: %s names no model (a `model FILE` or `model: STATEMENT` line, or --model "
                             "FILE): synapses are mechanisms of a model", a->network_file);
        a->so.model = r->model;
    }
    if (a->model_file) {
        if ((a->mech_lib && !r->lib && ns_mech_library_open(a->mech_lib, &r->lib) != NS_OK) ||
            ns_sim_model_create(r->lib, &r->model) != NS_OK || ns_sim_model_read(r->model, a->model_file) != NS_OK)
            return cli_error("model: %s", ns_last_error());
        a->so.model = r->model;
    }
    return 0;
}

/* The simulation of the cells (cells of one morphology contiguous: cell c has
 * shape c / cells_per) or of the network (its synapses, sources and
 * connections too, on the sim policy's backend for networks under `auto`: the
 * CPU, docs/networks.md; under MPI collective, a failure agreed); 0 or 1 (printed). */
static int create_sim(sim_run *r) {
    sim_args *a = &r->a;
    r->cell_shape = malloc((size_t)r->n_cells * sizeof *r->cell_shape);
    if (!r->cell_shape) return cli_error("out of memory for %lld cells", r->n_cells);
    for (long long c = 0; c < r->n_cells; ++c)
        r->cell_shape[c] = r->net ? ns_network_cell_morphology(r->net)[c] : (int32_t)(c / a->cells_per);
    if (load_model(r)) return 1;
    a->so.dist = cli_mpi_dist(); /* under mpirun: the cells spread over the processes */
    const ns_status st = r->net ? ns_network_sim_create(r->net, r->cells, &r->params, &a->so, &r->sim)
                                : ns_sim_create(r->set.count, r->cells, r->n_cells, r->cell_shape, &r->params, &a->so,
                                                &r->sim);
    if (st == NS_OK) return 0;
    const long long bad = cli_failed_shape(ns_last_error());
    if (bad >= 0 && bad < r->set.count) /* name the file the shape was read from */
        return cli_error("simulation: %s: %s: %s", r->set.items[bad].name, ns_status_string(st), ns_last_error());
    if (r->net) return cli_error("network: %s", ns_last_error());
    return cli_status_error("simulation", st);
}

/* The stimuli in every cell; 0 or 1 (printed). */
static int add_stimuli(sim_run *r) {
    const sim_args *a = &r->a;
    for (int k = 0; k < r->set.count; ++k) {
        ns_cell_info ci;
        ns_cell_get_info(r->cells[k], &ci);
        for (int q = 0; q < a->n_stims; ++q) {
            const stim_spec *s = &a->stims[q];
            int32_t node;
            if (resolve_loc(&s->loc, r->cells[k], r->set.items[k].name, &node)) return 1;
            double amp = s->amp_auto ? 1.5e-4 * ci.total_area : s->amp;
            if (s->amp_auto) amp = round(amp * 1000.0) / 1000.0; /* as the validation script */
            for (long long c = 0; c < r->n_cells; ++c) {
                if (r->cell_shape[c] != k) continue;
                const ns_status st = ns_sim_add_iclamp(r->sim, c, node, s->del, s->dur, amp);
                if (st != NS_OK && !a->so.dist) /* spread: the owner's failure comes with the next collective call */
                    return cli_status_error("iclamp", st);
            }
        }
    }
    return 0;
}

/* The recordings in the first cells of each morphology, and their names
 * (FILE#CELL@LOC); 0 or 1 (printed). */
static int add_recordings(sim_run *r) {
    const sim_args *a = &r->a;
    const long long rc_cells = r->net                          ? a->record_cells
                               : a->record_cells < a->cells_per ? a->record_cells
                                                                : a->cells_per;
    r->site_names = calloc((size_t)(r->set.count * rc_cells * a->n_recs + 1), sizeof *r->site_names);
    if (!r->site_names) return cli_error("out of memory");
    for (int k = 0; k < r->set.count; ++k)
        for (long long c = 0, taken = 0; c < r->n_cells && taken < rc_cells; ++c) {
            if (r->cell_shape[c] != k) continue;
            ++taken;
            const char *name = r->set.items[k].name, *base = strrchr(name, '/');
            base = base ? base + 1 : name;
            for (int q = 0; q < a->n_recs; ++q) {
                int32_t node, site;
                if (resolve_loc(&a->recs[q], r->cells[k], name, &node)) return 1;
                const ns_status st = ns_sim_add_recording(r->sim, c, node, &site);
                if (st != NS_OK && !a->so.dist) return cli_status_error("record", st);
                size_t len = strlen(base) + strlen(a->recs[q].text) + 32;
                char *site_name = malloc(len);
                if (!site_name) return cli_error("out of memory");
                snprintf(site_name, len, "%s#%lld@%s", base, c, a->recs[q].text);
                r->site_names[r->n_sites++] = site_name;
            }
        }
    return 0;
}

/* The state at the first step: a network's at ns_sim_init (NEURON's
 * finitialize), a checkpoint's (the state, time, traces and spikes so far);
 * the probe attached. 0 or 1 (printed). */
static int start(sim_run *r) {
    sim_args *a = &r->a;
    ns_status st;
    if (r->net && (st = ns_sim_init(r->sim)) != NS_OK) return cli_status_error("network", st);
    if (a->resume && (st = ns_sim_restore_state(r->sim, a->resume)) != NS_OK)
        return cli_error("--resume: %s: %s", ns_status_string(st), ns_last_error());
    if (a->lfp.probe && (a->so.dist || a->resume))
        return cli_error("--probe: not with mpirun or --resume (docs/extracellular.md)");
    if (cli_lfp_attach(&a->lfp, r->sim, r->set.count, r->cells, r->cell_shape, r->params.dt)) return 1;
    r->steps = ns_sim_steps_for(r->sim, r->params.tstop);
    r->first_step = a->resume ? ns_sim_step_count(r->sim) : 0;
    if (r->first_step > r->steps)
        return cli_error("--resume: %s is at t = %g ms, past tstop = %g ms", a->resume, ns_sim_time(r->sim),
                         r->params.tstop);
    return 0;
}

/* The run to tstop in chunks: a progress bar on a terminal, the checkpoints,
 * and a SIGINT seen between two chunks. Leaves how far it got and why it
 * stopped in r; nonzero: a checkpoint could not be written (printed). */
static int run_steps(sim_run *r) {
    const sim_args *a = &r->a;
    const long long steps = r->steps;
    const int show = !a->no_progress && isatty(2);
    int shown = 0, next_ck = 0, bad = 0;
    r->done_steps = r->first_step;
    while (next_ck < a->n_ck && r->ck_steps[next_ck] <= r->first_step) ++next_ck;
    cli_catch_signals();
    r->run_st = NS_OK;
    /* chunks: after the first (10 steps) each lasts about 0.2 s, so that
     * SIGINT is seen soon on a slow run, and at most 1% of the run where a
     * progress bar is drawn (under MPI every process takes the same chunks:
     * 1%). Without the bar a fast run takes few calls, each of which costs
     * its threads' start and, with fused mechanisms, the assigned variables
     * stored in its last step (docs/simulation.md): a run of 400 steps took
     * 100 calls of 4 steps. */
    const long long max_chunk = show || cli_mpi_active() ? (steps / 100 > 0 ? steps / 100 : 1) : steps;
    long long adapt = cli_mpi_active() ? max_chunk : (max_chunk < 10 ? max_chunk : 10);
    while (r->done_steps < steps && !cli_interrupted()) {
        long long chunk = adapt;
        if (chunk > steps - r->done_steps) chunk = steps - r->done_steps;
        const double before_ms = ns_sim_elapsed_ms(r->sim);
        if (next_ck < a->n_ck && r->done_steps + chunk > r->ck_steps[next_ck])
            chunk = r->ck_steps[next_ck] - r->done_steps;
        r->run_st = ns_sim_advance(r->sim, chunk);
        if (r->run_st != NS_OK) break;
        r->done_steps += chunk;
        if (!cli_mpi_active()) {
            const double per_step_ms = (ns_sim_elapsed_ms(r->sim) - before_ms) / (double)chunk;
            const double want = per_step_ms > 0.0 ? 200.0 / per_step_ms : (double)max_chunk;
            adapt = want >= (double)max_chunk ? max_chunk : want < 1.0 ? 1 : (long long)want;
        }
        if (next_ck < a->n_ck && r->done_steps == r->ck_steps[next_ck]) {
            if ((bad = cli_sim_save_checkpoint(r->sim, a->checkpoint)) != 0) break;
            ++next_ck;
        }
        double el = ns_sim_elapsed_ms(r->sim) / 1000.0;
        if (show && (shown || el > 1.0)) {
            progress((double)r->done_steps / (double)steps, el);
            shown = 1;
        }
    }
    /* a signal after the last step: the results are complete and written in full */
    r->stopped_by = r->done_steps < steps ? cli_interrupted() : 0;
    if (shown && !bad) fputc('\n', stderr);
    return bad;
}

/* A run that failed or was interrupted: the error, a checkpoint when asked
 * for, and what was recorded so far under names that say it is partial. */
static void stop_early(sim_run *r) {
    const sim_args *a = &r->a;
    const double dt = r->params.dt, every_ms = a->so.record_every * dt;
    if (r->run_st != NS_OK) {
        const long long bad = cli_failed_cell(ns_last_error());
        if (bad >= 0 && bad < r->n_cells) /* name the file the cell was built from */
            cli_error("simulation: %s: %s: %s", r->set.items[r->cell_shape[bad]].name, ns_status_string(r->run_st),
                      ns_last_error());
        else
            cli_status_error("simulation", r->run_st);
    } else {
        cli_error("simulation interrupted (%s) at t = %g ms, step %lld of %lld",
                  r->stopped_by == SIGTERM ? "SIGTERM" : "SIGINT", r->done_steps * dt, r->done_steps, r->steps);
        if (a->checkpoint && !cli_sim_save_checkpoint(r->sim, a->checkpoint))
            fprintf(stderr, "neurosolve: checkpoint at t = %g ms written to %s (continue with --resume %s)\n",
                    r->done_steps * dt, a->checkpoint, a->checkpoint);
    }
    if (cli_mpi_active()) { /* even one process under mpirun: its results are gathered at the end only */
        fprintf(stderr, "neurosolve: under MPI the partial traces stay with their processes: nothing written\n");
        return;
    }
    if (!a->out && !a->plot) return;
    int64_t kept;
    ns_sim_traces(r->sim, &kept, NULL);
    char partial[4096];
    const char *stem = r->stem;
    if (cli_sim_write_results(stem, ".partial", a->out != NULL, r->sim, r->site_names, every_ms, r->n_cells, &r->set,
                              r->cell_shape, r->net, partial, sizeof partial))
        return;
    if (a->out)
        fprintf(stderr, "neurosolve: the traces up to t = %g ms (%lld samples) and the spikes until then "
                "are in %straces.partial.csv, %straces.partial.npy and %sspikes.partial.csv (partial: "
                "not results)\n", (double)(kept - 1) * every_ms, (long long)kept, stem, stem, stem);
    else
        fprintf(stderr, "neurosolve: the traces up to t = %g ms (%lld samples) are in "
                "%straces.partial.csv (partial: not results)\n", (double)(kept - 1) * every_ms, (long long)kept,
                stem);
}

/* What a finished run reports. */
typedef struct sim_summary {
    double wall_s, sps; /* the run's time, steps per second */
    long long comps, total_spikes, source_spikes;
    long long *first_cell; /* the first cell of each morphology (-1: none) */
} sim_summary;

/* The summary of a finished run; 0 or 1 (printed). */
static int summarise(const sim_run *r, sim_summary *s) {
    s->wall_s = ns_sim_elapsed_ms(r->sim) / 1000.0;
    s->comps = ns_sim_compartments(r->sim);
    s->sps = s->wall_s > 0 ? (r->steps - r->first_step) / s->wall_s : 0.0;
    s->first_cell = malloc((size_t)r->set.count * sizeof *s->first_cell);
    if (!s->first_cell) return cli_error("out of memory");
    for (int k = 0; k < r->set.count; ++k) s->first_cell[k] = -1;
    for (long long c = r->n_cells - 1; c >= 0; --c) s->first_cell[r->cell_shape[c]] = c;
    s->source_spikes = r->net ? cli_sim_source_spike_count(r->sim) : 0;
    s->total_spikes = 0;
    for (long long c = 0; c < r->n_cells; ++c) {
        int64_t cnt;
        ns_sim_spikes(r->sim, c, &cnt);
        s->total_spikes += cnt;
    }
    return 0;
}

/* Where the probe's time went (ns_lfp_timing) and its storage. */
static void print_lfp_json(cli_json *j, const ns_lfp_t *lfp, int64_t n_cells) {
    json_string(j, "lfp_storage", ns_lfp_storage_name(ns_lfp_storage_used(lfp)));
    const ns_lfp_storage st = ns_lfp_storage_used(lfp);
    if (st == NS_LFP_STORAGE_F32 || st == NS_LFP_STORAGE_LOWRANK)
        json_double(j, "lfp_error_bound", ns_lfp_error_bound(lfp));
    const int32_t *ranks = ns_lfp_ranks(lfp);
    if (ranks) { /* lowrank: the factors' ranks */
        int64_t sum = 0, top = 0;
        for (int64_t c = 0; c < n_cells; ++c) sum += ranks[c], top = ranks[c] > top ? ranks[c] : top;
        json_int(j, "lfp_rank_sum", sum);
        json_int(j, "lfp_rank_max", top);
    }
    ns_lfp_timing lt;
    if (ns_lfp_timing_of(lfp, &lt) != NS_OK) return;
    json_object_begin(j, "lfp_timing");
    json_double(j, "setup_ms", lt.setup_ms);
    json_double(j, "sampling_ms", lt.sampling_ms);
    json_int(j, "reductions", lt.reductions);
    json_double(j, "currents_ms", lt.currents_ms);
    json_double(j, "gemm_ms", lt.gemm_ms);
    json_double(j, "sum_ms", lt.sum_ms);
    json_object_end(j);
}

/* The summary as JSON on stdout (--json). */
static void print_json(const sim_run *r, const sim_summary *s) {
    const ns_sim_t *sim = r->sim;
    cli_json j;
    json_begin(&j, stdout);
    json_string(&j, "backend", ns_backend_name(ns_sim_backend(sim)));
    json_string(&j, "method", ns_hines_method_name(ns_sim_method(sim)));
    if (ns_sim_gpu_mechanisms_of(sim) != NS_SIM_GPU_MECHANISMS_AUTO)
        json_string(&j, "gpu_mechanisms", ns_sim_gpu_mechanisms_name(ns_sim_gpu_mechanisms_of(sim)));
    const char *graph_why = "";
    if (ns_sim_gpu_graph_of(sim, &graph_why)) json_bool(&j, "gpu_graph", 1);
    if (graph_why[0]) json_string(&j, "gpu_graph_refused", graph_why);
    json_int(&j, "morphologies", r->set.count);
    json_int(&j, "cells", r->n_cells);
    if (cli_mpi_size() > 1) json_int(&j, "processes", cli_mpi_size());
    json_int(&j, "compartments", s->comps);
    json_int(&j, "steps", r->steps);
    json_double(&j, "dt_ms", r->params.dt);
    json_double(&j, "tstop_ms", r->params.tstop);
    json_double(&j, "wall_s", s->wall_s);
    json_double(&j, "steps_per_s", s->sps);
    json_double(&j, "compartment_steps_per_s", s->sps * (double)s->comps);
    json_int(&j, "spikes", s->total_spikes);
    if (r->a.lfp.lfp) print_lfp_json(&j, r->a.lfp.lfp, ns_sim_cells(sim));
    if (r->net) {
        json_int(&j, "synapses", ns_sim_synapses(sim));
        json_int(&j, "sources", ns_sim_sources(sim));
        json_int(&j, "connections", ns_sim_connections(sim));
        json_int(&j, "source_spikes", s->source_spikes);
    }
    json_array_begin(&j, "first_cells"); /* the first cell of each morphology */
    for (int k = 0; k < r->set.count; ++k) {
        long long c = s->first_cell[k];
        if (c < 0) continue;
        int64_t cnt;
        const double *sp = ns_sim_spikes(sim, c, &cnt);
        json_object_begin(&j, NULL);
        json_int(&j, "cell", c);
        json_string(&j, "morphology", r->set.items[k].name);
        json_int(&j, "compartments", ns_tree_size(ns_cell_tree(r->cells[k])));
        json_array_begin(&j, "spikes");
        for (int64_t q = 0; q < cnt; ++q) json_double(&j, NULL, sp[q]);
        json_array_end(&j);
        json_object_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
}

/* The summary as text on stdout. */
static void print_text(const sim_run *r, const sim_summary *s) {
    const ns_sim_t *sim = r->sim;
    const char *stem = r->stem;
    printf("simulated %lld cells (%d morphologies, %lld compartments) for %g ms: %lld steps of %g ms\n", r->n_cells,
           r->set.count, s->comps, r->params.tstop, r->steps, r->params.dt);
    printf("backend %s, method %s: %.3f s, %.0f steps/s, %.3g compartment-steps/s\n",
           ns_backend_name(ns_sim_backend(sim)), ns_hines_method_name(ns_sim_method(sim)), s->wall_s, s->sps,
           s->sps * (double)s->comps);
    printf("soma spikes (threshold %g mV): %lld in all cells\n", r->params.spike_threshold, s->total_spikes);
    if (r->net) {
        printf("network %s: %lld synapses, %lld sources, %lld connections; %lld spikes of the sources\n",
               r->a.network_file, (long long)ns_sim_synapses(sim), (long long)ns_sim_sources(sim),
               (long long)ns_sim_connections(sim), s->source_spikes);
    }
    for (int k = 0; k < r->set.count && k < 20; ++k) {
        int64_t cnt;
        if (s->first_cell[k] < 0) continue;
        const double *sp = ns_sim_spikes(sim, s->first_cell[k], &cnt);
        printf("  %-40s cell %lld: %lld spikes", r->set.items[k].name, s->first_cell[k], (long long)cnt);
        for (int64_t q = 0; q < cnt && q < 8; ++q) printf("%s%.3f", q ? " " : " at ", sp[q]);
        printf("%s\n", cnt > 8 ? " ..." : (cnt ? " ms" : ""));
    }
    const int h5 = r->net && ns_network_populations(r->net) > 0;
    if (r->a.out)
        printf("wrote %straces.csv, %straces.npy, %sspikes.csv%s%s%s\n", stem, stem, stem, h5 ? ", " : "",
               h5 ? stem : "", h5 ? "spikes.h5" : "");
}

/* The results of a finished run: the files (each to a temporary name, all
 * renamed into place only when all were written: ns_output), the summary, the
 * plots; 0 or 1 (printed). */
static int finish(sim_run *r) {
    sim_args *a = &r->a;
    if (a->checkpoint && a->n_ck == 0 && r->first_step < r->steps && cli_sim_save_checkpoint(r->sim, a->checkpoint))
        return 1;
    const ns_status st = ns_sim_gather(r->sim, 0); /* under MPI: spikes and traces to rank 0 */
    if (st != NS_OK) return cli_status_error("gathering the results", st);
    if (cli_mpi_rank() != 0) a->out = a->plot = NULL; /* only rank 0 writes files */
    const char *stem = r->stem, *plot = a->plot;
    sim_summary s = {0};
    if (summarise(r, &s)) return 1;
    int bad = 1;
    char csv_path[4096] = "", lfp_csv[4096] = "";
    if ((a->out || plot) &&
        (cli_sim_write_results(stem, "", a->out != NULL, r->sim, r->site_names, a->so.record_every * r->params.dt,
                               r->n_cells, &r->set, r->cell_shape, r->net, csv_path, sizeof csv_path) ||
         cli_lfp_write(&a->lfp, stem, lfp_csv, sizeof lfp_csv)))
        goto done;
    if (a->as_json) print_json(r, &s);
    else print_text(r, &s);
    if (plot && cli_plot("bench/plot_traces.py", csv_path, plot, NULL)) goto done;
    if (plot && !a->as_json && cli_plot_available()) printf("plot: %s\n", plot);
    const ns_lfp_t *lfp = a->lfp.lfp;
    if (lfp && !a->as_json && (a->out || plot))
        printf("wrote %slfp.csv, %slfp.npy, %sdipole.csv%s%s%s\n", stem, stem, stem,
               ns_lfp_population_potentials(lfp) ? ", " : "", ns_lfp_population_potentials(lfp) ? stem : "",
               ns_lfp_population_potentials(lfp) ? "lfp_populations.npy" : "");
    if (plot && lfp && cli_lfp_plot(&a->lfp, lfp_csv, plot, a->as_json)) goto done;
    bad = 0;
done:
    free(s.first_cell);
    return bad;
}

/* The steps of a run, in order; the exit status. */
static int simulate(sim_run *r, int argc, char **argv) {
    const int rc = cli_sim_configure(r, argc, argv);
    if (rc >= 0) return rc;
    if (load_shapes(r) || check_memory(r) || create_sim(r) || add_stimuli(r) || add_recordings(r) || start(r) ||
        run_steps(r))
        return 1;
    if (r->run_st != NS_OK || r->stopped_by) {
        stop_early(r);
        return 1;
    }
    return finish(r);
}

static void run_free(sim_run *r) {
    cli_lfp_free(&r->a.lfp);
    for (int s = 0; s < r->n_sites; ++s) free(r->site_names[s]);
    free(r->site_names);
    ns_sim_destroy(r->sim);
    ns_sim_model_destroy(r->model);
    ns_mech_library_close(r->lib);
    free(r->cell_shape);
    free(r->cells);
    cli_shapes_free(&r->set);
    free(r->disc_text);
    cli_release_signals();
    ns_network_destroy(r->net);
    free(r->param_text);
    free(r);
}

int cmd_simulate(int argc, char **argv) {
    sim_run *r = calloc(1, sizeof *r);
    if (!r) return cli_error("out of memory");
    cli_morph_options_init(&r->a.mo);
    ns_sim_params_init(&r->params);
    ns_sim_options_init(&r->a.so);
    cli_lfp_init(&r->a.lfp);
    r->a.cells_per = 1;
    r->a.record_cells = 1;
    const int rc = simulate(r, argc, argv);
    run_free(r);
    return rc;
}
