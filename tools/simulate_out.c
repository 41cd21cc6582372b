/* neurosolve simulate's outputs (simulate_out.h; docs/cli.md): the traces,
 * spikes and raster files of a run, written atomically, and its checkpoints. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shapes.h"
#include "simulate_out.h"

/* --out PREFIX writes PREFIX_traces.csv, ...; an existing directory (or a
 * PREFIX ending in '/') gets DIR/traces.csv, ... (docs/cli.md). Without
 * --out, --plot P.png puts the traces next to the plot: P_traces.csv. */
int cli_sim_output_stem(const char *out, const char *plot, char *stem, size_t n) {
    struct stat st;
    const size_t len = out ? strlen(out) : 0;
    int w;
    if (out && len > 0 && (out[len - 1] == '/' || (stat(out, &st) == 0 && S_ISDIR(st.st_mode))))
        w = snprintf(stem, n, "%s%s", out, out[len - 1] == '/' ? "" : "/");
    else if (out)
        w = snprintf(stem, n, "%s_", out);
    else {
        const size_t p = strlen(plot);
        w = snprintf(stem, n, "%.*s_", (int)(p > 4 && strcmp(plot + p - 4, ".png") == 0 ? p - 4 : p), plot);
    }
    /* a cut prefix would write the results under other names */
    return w >= 0 && (size_t)w < n;
}

static const char *csv_path_of(const char *stem, const char *name) {
    static char path[4096];
    snprintf(path, sizeof path, "%s%s", stem, name);
    return path;
}

/* The folder the outputs go to is created (as mkdir -p) and must be
 * writable: before the run, so that a long simulation does not fail at its end. */
int cli_sim_check_output_folder(const char *stem) {
    if (cli_make_parent_dir(stem)) return 1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", stem);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    struct stat st;
    if (stat(dir, &st) != 0) return cli_error("cannot write %s...: folder %s: %s", stem, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return cli_error("cannot write %s...: %s is not a folder", stem, dir);
    if (access(dir, W_OK) != 0) return cli_error("cannot write %s...: folder %s: %s", stem, dir, strerror(errno));
    return 0;
}


/* Write the traces (CSV, and with --out NPY) and spikes under stem with
 * `tag` before the extensions ("" for results, ".partial" for the record of
 * an interrupted run); all files appear only when all were written. */
typedef struct raster_spike {
    double t;
    int64_t source;
} raster_spike;

static int cmp_raster(const void *a, const void *b) {
    const raster_spike *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->source > y->source) - (x->source < y->source);
}

int64_t cli_sim_source_spike_count(const ns_sim_t *sim) {
    int64_t total = 0;
    for (int64_t s = 0; s < ns_sim_sources(sim); ++s) {
        int64_t cnt = 0;
        ns_sim_source_spikes(sim, s, &cnt);
        total += cnt;
    }
    return total;
}

/* Every source's spikes in source order (*n of them); NULL after printing the error. */
static raster_spike *source_spikes(const ns_sim_t *sim, int64_t *n) {
    const int64_t n_src = ns_sim_sources(sim), total = cli_sim_source_spike_count(sim);
    raster_spike *all = malloc((size_t)(total > 0 ? total : 1) * sizeof *all);
    if (!all) {
        cli_error("out of memory for %lld spikes", (long long)total);
        return NULL;
    }
    *n = 0;
    for (int64_t s = 0; s < n_src; ++s) {
        int64_t cnt = 0;
        const double *x = ns_sim_source_spikes(sim, s, &cnt);
        for (int64_t q = 0; q < cnt; ++q) all[(*n)++] = (raster_spike){x[q], s};
    }
    return all;
}

/* The network's raster: every source's spikes, by (time, source); 0 or 1 after printing the error. */
static int write_raster(FILE *g, const ns_sim_t *sim) {
    int64_t n = 0;
    raster_spike *all = source_spikes(sim, &n);
    if (!all) return 1;
    qsort(all, (size_t)n, sizeof *all, cmp_raster);
    fprintf(g, "source,cell,t_ms\n");
    for (int64_t k = 0; k < n; ++k)
        fprintf(g, "%lld,%lld,%.17g\n", (long long)all[k].source, (long long)ns_sim_source_cell(sim, all[k].source),
                all[k].t);
    free(all);
    return 0;
}

/* The raster as a SONATA spikes file (HDF5, written by the library at the
 * temporary path of its ns_output), in source order; 0 or 1 after printing the error. */
static int write_sonata_spikes(const char *temp_path, const char *path, const ns_network_t *net, const ns_sim_t *sim) {
    int64_t n = 0;
    raster_spike *all = source_spikes(sim, &n);
    if (!all) return 1;
    int64_t *src = malloc((size_t)(n > 0 ? n : 1) * sizeof *src);
    double *t = malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    int bad = 0;
    if (!src || !t) bad = cli_error("out of memory for %lld spikes", (long long)n);
    for (int64_t k = 0; k < n && !bad; ++k) {
        src[k] = all[k].source;
        t[k] = all[k].t;
    }
    if (!bad && ns_network_write_spikes(net, temp_path, n, src, t) != NS_OK)
        bad = cli_error("%s: %s", path, ns_last_error());
    free(all);
    free(src);
    free(t);
    return bad;
}

int cli_sim_write_results(const char *stem, const char *tag, int all, ns_sim_t *sim, char **site_names,
                          double every_ms, long long n_cells, const cli_shape_set *set, const int32_t *cell_shape,
                          const ns_network_t *network, char *csv_path, size_t csv_len) {
    int64_t samples;
    int32_t sites;
    const double *tr = ns_sim_traces(sim, &samples, &sites);
    ns_output *o[4] = {NULL, NULL, NULL, NULL}; /* traces csv, traces npy, spikes csv, spikes h5 (SONATA) */
    char path[4][4096];
    char name[4][64];
    snprintf(name[0], sizeof name[0], "traces%s.csv", tag);
    snprintf(name[1], sizeof name[1], "traces%s.npy", tag);
    snprintf(name[2], sizeof name[2], "spikes%s.csv", tag);
    snprintf(name[3], sizeof name[3], "spikes%s.h5", tag);
    for (int k = 0; k < 4; ++k) snprintf(path[k], sizeof path[k], "%s", csv_path_of(stem, name[k]));
    snprintf(csv_path, csv_len, "%s", path[0]);
    /* a SONATA network's raster also as a SONATA spikes file */
    const int n_out = all ? (network && ns_network_populations(network) > 0 ? 4 : 3) : 1;
    int bad = 0;
    for (int k = 0; k < n_out && !bad; ++k) bad = !(o[k] = cli_output_open(path[k]));
    double *table = bad ? NULL : malloc((size_t)samples * (size_t)(sites + 1) * sizeof *table);
    if (!bad && !table) bad = cli_error("out of memory for %lld samples of %d sites", (long long)samples, (int)sites);
    if (!bad) {
        FILE *f = ns_output_stream(o[0]);
        fprintf(f, "t");
        for (int s = 0; s < sites; ++s) fprintf(f, ",%s", site_names[s]);
        fputc('\n', f);
        for (int64_t r = 0; r < samples; ++r) {
            const double t = (double)r * every_ms;
            table[r * (sites + 1)] = t;
            fprintf(f, "%.4f", t);
            for (int s = 0; s < sites; ++s) {
                table[r * (sites + 1) + 1 + s] = tr[r * sites + s];
                fprintf(f, ",%.6f", tr[r * sites + s]);
            }
            fputc('\n', f);
        }
    }
    if (!bad && all) {
        cli_write_npy(ns_output_stream(o[1]), table, samples, sites + 1);
        FILE *g = ns_output_stream(o[2]);
        if (network) bad = write_raster(g, sim);
        else fprintf(g, "cell,morphology,t_ms\n");
        if (!bad && n_out == 4) bad = write_sonata_spikes(ns_output_temp_path(o[3]), path[3], network, sim);
        for (long long c = 0; c < n_cells && !network; ++c) {
            int64_t cnt;
            const double *sp = ns_sim_spikes(sim, c, &cnt);
            const char *base = strrchr(set->items[cell_shape[c]].name, '/');
            base = base ? base + 1 : set->items[cell_shape[c]].name;
            for (int64_t q = 0; q < cnt; ++q) fprintf(g, "%lld,%s,%.6f\n", c, base, sp[q]);
        }
    }
    /* A write error (a full disk) shows at the flush: look at every file
     * before renaming any, so that one failing never leaves the others
     * behind under result names. */
    for (int k = 0; k < 4 && !bad; ++k) {
        FILE *f = o[k] ? ns_output_stream(o[k]) : NULL;
        errno = 0;
        if (f && (fflush(f) != 0 || ferror(f)))
            bad = cli_error("%s: write failed: %s", path[k], errno ? strerror(errno) : "write error");
    }
    for (int k = 0; k < 4; ++k) {
        if (bad) ns_output_abort(o[k]);
        else if (o[k]) bad = cli_output_commit(o[k]);
        o[k] = NULL;
    }
    free(table);
    return bad;
}

/* Save a checkpoint; prints the error. */
int cli_sim_save_checkpoint(ns_sim_t *sim, const char *file) {
    ns_status st = ns_sim_save_state(sim, file);
    if (st != NS_OK) return cli_error("checkpoint: %s: %s", ns_status_string(st), ns_last_error());
    return 0;
}
