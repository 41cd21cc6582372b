/* `simulate --probe FILE`: extracellular potentials and current dipoles
 * (docs/extracellular.md), written as PREFIX_lfp.csv, PREFIX_lfp.npy and
 * PREFIX_dipole.csv, drawn with --plot (bench/plot_lfp.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_lfp_help =
    "  --probe FILE           extracellular potentials at the contacts of FILE (x y z [nx ny nz r\n"
    "                         [n]] per line; docs/extracellular.md, data/probes/), the cells in\n"
    "                         their SWC coordinates; writes PREFIX_lfp.csv, PREFIX_lfp.npy (t and\n"
    "                         one column per contact [mV]) and PREFIX_dipole.csv (the summed\n"
    "                         current dipole moment [nA um]); with --plot P.png also P_lfp.png\n"
    "  --lfp-every K|Xms      sample every K steps or X ms (default 1 step)\n"
    "  --lfp-method linesource|root_as_point|pointsource   LFPy's forward model (default linesource)\n"
    "  --sigma S              extracellular conductivity [S/m] (default 0.3)\n"
    "  --lfp-max-gb G         refuse dense coefficients above G GB (default 4; 8 bytes per contact\n"
    "                         and compartment, docs/extracellular.md)\n"
    "  --lfp-storage auto|dense|tiles|f32|lowrank\n"
    "                         --backend cuda: the coefficients kept dense or computed again in\n"
    "                         tiles on the GPU at each reduction (default auto: dense while they\n"
    "                         fit --lfp-max-gb and half the GPU's free memory); f32: rounded to\n"
    "                         float (half the memory of dense), each sample's error bound checked\n"
    "                         against --lfp-tolerance; lowrank (CPU or GPU): each cell's\n"
    "                         coefficients as a product of rank r (pivoted QR stopped at\n"
    "                         --lfp-rank-tolerance), each sample's error bound checked likewise\n"
    "  --lfp-tolerance R      f32, lowrank: the error bound allowed, relative to each sample's\n"
    "                         largest potential (default 1e-6)\n"
    "  --lfp-rank-tolerance R lowrank: each cell's residual relative to its coefficients\n"
    "                         (Frobenius norms; default 1e-10)\n"
    "  --lfp-batch K          --backend cuda: samples buffered per reduction (default: the least of\n"
    "                         256, one launch's samples and a quarter of the free GPU memory)\n"
    "  --placement FILE       one line per cell: x y z [um] rx ry rz [rad]: the cell rotated about\n"
    "                         its soma(0.5) by rx, then ry, then rz and its soma put at (x, y, z)\n"
    "  --lfp-populations morphology|FILE\n"
    "                         the potentials of each population's cells apart as well, in\n"
    "                         PREFIX_lfp_populations.npy (samples x populations x contacts [mV]):\n"
    "                         one population per morphology (in the order given), or FILE: one\n"
    "                         population number (0, 1, ...) per cell and line\n";

void cli_lfp_init(cli_lfp *l) {
    memset(l, 0, sizeof *l);
    l->sigma = 0.3;
    l->method = NS_LFP_LINESOURCE;
}

/* val, the whole of it, a number in (lo, hi) into *x: 1, else 0. */
static int in_open_range(const char *val, double lo, double hi, double *x) {
    char *end;
    *x = strtod(val, &end);
    return end != val && !*end && *x > lo && *x < hi;
}

int cli_lfp_option(const char *cmd, const char *a, const char *val, cli_lfp *l) {
    if (strcmp(a, "--probe") == 0) {
        l->probe = val;
    } else if (strcmp(a, "--lfp-every") == 0) {
        char *end;
        const double x = strtod(val, &end);
        const int ms = strcmp(end, "ms") == 0;
        if (end == val || (*end && !ms) || !(x > 0.0) || !isfinite(x) || (!ms && x != floor(x)))
            return cli_usage_error(cmd, "--lfp-every %s: a whole number of steps (>= 1) or a time in ms (0.5ms)",
                                   val), -1;
        l->every_steps = ms ? 0 : (long long)x;
        l->every_ms = ms ? x : 0.0;
    } else if (strcmp(a, "--lfp-method") == 0) {
        if (ns_lfp_method_from_name(val, &l->method) != NS_OK) return cli_usage_error(cmd, "%s", ns_last_error()), -1;
    } else if (strcmp(a, "--lfp-max-gb") == 0) {
        if (!in_open_range(val, 0.0, 1e9, &l->max_gb))
            return cli_usage_error(cmd, "--lfp-max-gb %s: a size > 0 [GB]", val), -1;
    } else if (strcmp(a, "--lfp-storage") == 0) {
        if (strcmp(val, "auto") == 0) l->storage = NS_LFP_STORAGE_AUTO;
        else if (strcmp(val, "dense") == 0) l->storage = NS_LFP_STORAGE_DENSE;
        else if (strcmp(val, "tiles") == 0) l->storage = NS_LFP_STORAGE_TILES;
        else if (strcmp(val, "f32") == 0) l->storage = NS_LFP_STORAGE_F32;
        else if (strcmp(val, "lowrank") == 0) l->storage = NS_LFP_STORAGE_LOWRANK;
        else return cli_usage_error(cmd, "--lfp-storage %s: expected auto, dense, tiles, f32 or lowrank", val), -1;
    } else if (strcmp(a, "--lfp-tolerance") == 0) {
        if (!in_open_range(val, 0.0, 1.0, &l->tolerance))
            return cli_usage_error(cmd, "--lfp-tolerance %s: a relative bound in (0, 1)", val), -1;
    } else if (strcmp(a, "--lfp-rank-tolerance") == 0) {
        if (!in_open_range(val, 0.0, 1.0, &l->rank_tolerance))
            return cli_usage_error(cmd, "--lfp-rank-tolerance %s: a relative residual in (0, 1)", val), -1;
    } else if (strcmp(a, "--lfp-batch") == 0) {
        int64_t k = 0;
        if (ns_integer_parse(val, 1, 1000000, &k) != NS_OK)
            return cli_usage_error(cmd, "--lfp-batch %s: %s", val, ns_last_error()), -1;
        l->batch = (long long)k;
    } else if (strcmp(a, "--lfp-populations") == 0) {
        l->populations = val;
    } else if (strcmp(a, "--placement") == 0) {
        l->placement_file = val;
    } else if (strcmp(a, "--sigma") == 0) {
        if (!in_open_range(val, 0.0, HUGE_VAL, &l->sigma))
            return cli_usage_error(cmd, "--sigma %s: a conductivity > 0 [S/m]", val), -1;
    } else {
        return 0;
    }
    return 1;
}

int cli_lfp_attach(cli_lfp *l, ns_sim_t *sim, int32_t n_shapes, const ns_cell_t *const *shapes,
                   const int32_t *cell_shape, double dt) {
    if (!l->probe)
        return l->placement_file ? cli_error("--placement needs --probe")
             : l->populations    ? cli_error("--lfp-populations needs --probe")
                                 : 0;
    const int64_t n_cells = ns_sim_cells(sim);
    const size_t nc = (size_t)(n_cells > 0 ? n_cells : 1);
    double *placement = l->placement_file ? malloc(nc * 6 * sizeof *placement) : NULL;
    int32_t *pop = l->populations ? malloc(nc * sizeof *pop) : NULL;
    double *table = l->populations ? malloc(nc * sizeof *table) : NULL;
    int bad = 0;
    if ((l->placement_file && !placement) || (l->populations && (!pop || !table)))
        bad = cli_error("out of memory for %lld cells' placements or populations", (long long)n_cells);
    if (!bad && l->placement_file &&
        ns_lfp_cell_table_read(l->placement_file, NS_LFP_PLACEMENTS, n_cells, placement) != NS_OK)
        bad = cli_error("--placement: %s", ns_last_error());
    if (!bad && l->populations && strcmp(l->populations, "morphology") == 0) {
        for (int64_t c = 0; c < n_cells; ++c) pop[c] = cell_shape[c];
    } else if (!bad && l->populations) {
        if (ns_lfp_cell_table_read(l->populations, NS_LFP_POPULATIONS, n_cells, table) != NS_OK)
            bad = cli_error("--lfp-populations %s (`morphology` or a file): %s", l->populations, ns_last_error());
        for (int64_t c = 0; !bad && c < n_cells; ++c) pop[c] = (int32_t)table[c];
    }
    free(table);
    if (bad) {
        free(pop);
        free(placement);
        return 1;
    }
    if (ns_lfp_probe_read(l->probe, 9, &l->contacts) != NS_OK) {
        free(placement);
        free(pop);
        return cli_error("%s", ns_last_error());
    }
    ns_lfp_options o;
    ns_lfp_options_init(&o);
    o.method = l->method;
    o.sigma = l->sigma;
    o.every = l->every_steps > 0 ? l->every_steps : 1;
    o.placement = placement;
    o.population = pop;
    o.storage = l->storage;
    o.tolerance = l->tolerance;
    o.rank_tolerance = l->rank_tolerance;
    o.batch = l->batch;
    if (l->max_gb > 0.0) o.max_bytes = (int64_t)(l->max_gb * 1e9);
    if (l->every_ms > 0.0) {
        o.every = llround(l->every_ms / dt);
        if (o.every < 1 || fabs(o.every * dt - l->every_ms) > 1e-9 * l->every_ms)
            bad = cli_error("--lfp-every %gms is not a whole number of steps of dt = %g ms", l->every_ms, dt);
    }
    if (!bad && ns_lfp_create(sim, n_shapes, shapes, &l->contacts, &o, &l->lfp) != NS_OK)
        bad = cli_error("--probe %s: %s", l->probe, ns_last_error());
    free(placement);
    free(pop);
    return bad;
}

int cli_lfp_write(cli_lfp *l, const char *stem, char *csv_path, size_t csv_len) {
    if (!l->lfp) return 0;
    const int64_t T = ns_lfp_samples(l->lfp), E = ns_lfp_electrodes(l->lfp);
    const double *phi = ns_lfp_potentials(l->lfp), *t = ns_lfp_times(l->lfp), *P = ns_lfp_dipole(l->lfp);
    char path[3][4096];
    snprintf(path[0], sizeof path[0], "%slfp.csv", stem);
    snprintf(path[1], sizeof path[1], "%slfp.npy", stem);
    snprintf(path[2], sizeof path[2], "%sdipole.csv", stem);
    snprintf(csv_path, csv_len, "%s", path[0]);
    ns_output *o[3] = {NULL, NULL, NULL};
    int bad = 0;
    for (int k = 0; k < 3 && !bad; ++k) bad = !(o[k] = cli_output_open(path[k]));
    double *table = bad ? NULL : malloc((size_t)T * (size_t)(E + 1) * sizeof *table);
    if (!bad && !table) bad = cli_error("out of memory for %lld samples of %lld contacts", (long long)T, (long long)E);
    if (!bad) {
        FILE *f = ns_output_stream(o[0]), *g = ns_output_stream(o[2]);
        fprintf(f, "t");
        for (int64_t e = 0; e < E; ++e) fprintf(f, ",e%lld", (long long)e);
        fputc('\n', f);
        fprintf(g, "t,px,py,pz\n");
        for (int64_t r = 0; r < T; ++r) {
            table[r * (E + 1)] = t[r];
            fprintf(f, "%.6f", t[r]);
            for (int64_t e = 0; e < E; ++e) {
                table[r * (E + 1) + 1 + e] = phi[r * E + e];
                fprintf(f, ",%.9g", phi[r * E + e]);
            }
            fputc('\n', f);
            fprintf(g, "%.6f,%.9g,%.9g,%.9g\n", t[r], P[3 * r], P[3 * r + 1], P[3 * r + 2]);
        }
        cli_write_npy(ns_output_stream(o[1]), table, T, (int)(E + 1));
    }
    const double *pp = ns_lfp_population_potentials(l->lfp);
    if (!bad && pp) { /* samples x populations x contacts */
        char ppath[4096];
        snprintf(ppath, sizeof ppath, "%slfp_populations.npy", stem);
        ns_output *po = cli_output_open(ppath);
        if (!po) {
            bad = 1;
        } else {
            const long long dims[3] = {(long long)T, (long long)ns_lfp_populations(l->lfp), (long long)E};
            cli_write_npy_nd(ns_output_stream(po), pp, 3, dims);
            bad = cli_output_commit(po);
        }
    }
    free(table);
    for (int k = 0; k < 3; ++k) {
        if (!o[k]) continue;
        if (bad) ns_output_abort(o[k]);
        else bad = cli_output_commit(o[k]);
    }
    return bad;
}

int cli_lfp_plot(cli_lfp *l, const char *csv, const char *plot, int quiet) {
    char png[4096];
    const size_t p = strlen(plot);
    snprintf(png, sizeof png, "%.*s_lfp.png", (int)(p > 4 && strcmp(plot + p - 4, ".png") == 0 ? p - 4 : p), plot);
    const char *extra[] = {"--probe", l->probe, NULL};
    if (cli_plot("bench/plot_lfp.py", csv, png, extra)) return 1;
    if (!quiet && cli_plot_available()) printf("plot: %s\n", png);
    return 0;
}

void cli_lfp_free(cli_lfp *l) {
    ns_lfp_destroy(l->lfp);
    ns_lfp_probe_free(&l->contacts);
    l->lfp = NULL;
}
