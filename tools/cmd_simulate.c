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

#include "shapes.h"
#include "simulate_out.h"

#define MAX_ITEMS 64

/* What one input spike of a network costs, for the estimate before a run:
 * memory (its source and time, its raster row) and a row of spikes.csv
 * ("source,cell,t_ms"); above SPIKES_NOTE spikes the estimate is printed. */
#define SPIKE_BYTES 25.0
#define SPIKE_CSV_BYTES 26.0
#define SPIKES_NOTE 1e7
/* Result files above this size [bytes] are announced before the run. */
#define OUTPUT_NOTE_BYTES 1e9

static const char *help_text =
    "usage: neurosolve simulate SHAPE... [options]\n"
    "       neurosolve simulate --network FILE [options]\n"
    "\n"
    "Simulate cells with NEURON's fixed-step method (hh, pas, IClamp), record voltages and\n"
    "soma spikes. SHAPE is an SWC file, a directory of them or `bundled`.\n"
    "\n"
    "options:\n"
    "  --cells N              cells per morphology (default 1)\n"
    "  --params FILE          parameters, `key = value` lines (docs/simulation.md); defaults:\n"
    "                         NEURON's hh in every region, cm 1, Ra 35.4, celsius 6.3, v_init -65,\n"
    "                         dt 0.025, tstop 100\n"
    "  --set KEY=VALUE        one parameter (after --params), e.g. --set dend.hh=0 --set dend.pas=1\n"
    "  --tstop MS --dt MS     shortcuts for --set tstop=MS / dt=MS\n"
    "  --spike-times interpolated|netcon\n"
    "                         spike times: the interpolated crossing (default) or NEURON's NetCon\n"
    "                         convention (--set netcon_spikes=1; docs/simulation.md, Spike times)\n"
    "  --model FILE [--mechanisms LIB]\n"
    "                         the membrane from NMODL mechanisms: the built-in pas, hh, ExpSyn,\n"
    "                         Exp2Syn and LIB's (from `neurosolve mechanisms build`); FILE says\n"
    "                         what is inserted where (docs/simulation.md, \"Models\"); the\n"
    "                         params' hh and pas are then not used\n"
    ;
/* the options from --network on (C99 compilers need not take literals over 4095 characters) */
static const char *help_text2 =
    "  --network FILE         a network file (docs/networks.md, \"Network files\") or a SONATA\n"
    "                         config (.json; docs/networks.md, \"SONATA\"): its cells,\n"
    "                         model, synapses, detectors, spike trains, Poisson sources and\n"
    "                         connections; no SHAPE or --cells then. CPU backend unless\n"
    "                         --backend cuda (auto: the CPU); no current clamp unless --iclamp is given;\n"
    "                         spikes.csv is the raster of the sources (source, cell, time);\n"
    "                         under mpirun the cells are spread over the processes, with\n"
    "                         the same files. A SONATA config's run and conditions set tstop,\n"
    "                         dt, celsius, v_init and spike_threshold (--params, --set, --tstop\n"
    "                         and --dt override them) and the raster is also written as\n"
    "                         spikes.h5 (SONATA spikes: /spikes/POPULATION/timestamps,node_ids)\n"
    "  --input-spikes FILE    with a SONATA --network: the virtual nodes' spikes from FILE (a\n"
    "                         SONATA spikes file) instead of the config's inputs\n"
    "  --iclamp LOC:DEL:DUR:AMP\n"
    "                         a current clamp in every cell [ms, ms, nA]; AMP `auto` = 1.5e-4 nA\n"
    "                         per um^2 of the cell's membrane (repetitive firing with hh\n"
    "                         everywhere). Default soma:5:90:auto. Repeatable; `--iclamp none`\n"
    "  --record LOC           record v at LOC in the first cell of each morphology (default soma;\n"
    "                         repeatable); --record-cells K records the first K cells\n"
    "  --record-every N       record every N steps (default 1)\n"
    "  --backend cpu|cuda|auto  --method sequential|openmp|onchip|tree  --threads N\n"
    "  --gpu-lanes L          onchip: lanes per cell (1, 2, 4, ..., 32; default automatic)\n"
    "  --gpu-mechanisms auto|fused|per-step|per-mechanism  CUDA, --model: the built-in pas and hh\n"
    "                         fused into the tree kernel, or launches per step (a library's\n"
    "                         mechanisms in one launch per phase), or one launch per mechanism\n"
    "                         and step (default auto: fused where possible; docs/simulation.md)\n"
    "  --out PREFIX           write PREFIX_traces.csv, PREFIX_traces.npy (t and one column per\n"
    "                         site) and PREFIX_spikes.csv (cell, morphology, time; with --network\n"
    "                         the sources' raster: source, cell (-1: a train or Poisson source),\n"
    "                         time, in time order); an existing\n"
    "                         directory DIR (or DIR/) gets DIR/traces.csv, DIR/traces.npy,\n"
    "                         DIR/spikes.csv. Files appear only when complete\n"
    "  --plot FILE.png        draw the traces (bench/plot_traces.py, matplotlib)\n"
    "  --checkpoint FILE      save the whole state (v, mechanisms, t, traces and spikes so far) to FILE\n"
    "                         at the --checkpoint-at times (without them: at tstop) and when\n"
    "                         interrupted by SIGINT or SIGTERM\n"
    "  --checkpoint-at T1,T2  times [ms] (rounded to steps, 0 < T <= tstop) to save at; each save\n"
    "                         replaces FILE (atomically)\n"
    "  --resume FILE          continue from a checkpoint to tstop (same shapes, options, stimuli\n"
    "                         and recordings; docs/simulation.md, \"Checkpoints\")\n"
    "  --json                 summary as JSON on stdout\n"
    "  --no-progress          no progress bar (it is shown on a terminal for runs over ~1 s)\n"
    "\n";
/* the notes at the end */
static const char *help_text_tail =
    "LOC: soma (the root section at x = 0.5) | NEURON's names dend[3](0.5), apic[12](0.3), axon[0],\n"
    "soma[0] (Import3d's numbering; `neurosolve morph FILE --sections` lists them) | sec:K(X) or\n"
    "K:X (section index K) | swc:ID(X) or swc=ID:X (the section whose first point has SWC id ID) |\n"
    "cN (compartment N); X defaults to 0.5 (docs/simulation.md, \"Locations\").\n"
    "Spikes: upward crossings of spike_threshold (-20 mV) at soma(0.5), interpolated in time.\n"
    "Interrupted (Ctrl-C / SIGINT, SIGTERM, NaN, a GPU failure): what was recorded so far goes to\n"
    "PREFIX_traces.partial.csv, .partial.npy and PREFIX_spikes.partial.csv (never to the result names),\n"
    "the exit status is 1.\n";

typedef struct loc_spec {
    char text[128];
    ns_location loc; /* the one location grammar (include/neurosolve/morph.h) */
} loc_spec;

typedef struct stim_spec {
    loc_spec loc;
    double del, dur, amp;
    int amp_auto;
} stim_spec;

/* 0, or 1 with ns_last_error() naming the part of the text that is wrong. */
static int parse_loc(const char *text, loc_spec *l) {
    memset(l, 0, sizeof *l);
    snprintf(l->text, sizeof l->text, "%s", text);
    return ns_location_parse(text, &l->loc) != NS_OK;
}

/* The checks of a run's values (ns_sim_params_check) and at least one step;
 * 0 with the reason in why. */
static int params_usable(const ns_sim_params *p, int64_t *n_steps, char *why, size_t size) {
    *n_steps = 0;
    if (ns_sim_params_check(p) != NS_OK || ns_sim_count_steps(p->tstop, p->dt, n_steps) != NS_OK) {
        snprintf(why, size, "%s", ns_last_error());
        return 0;
    }
    if (*n_steps < 1) {
        snprintf(why, size, "tstop = %g ms is less than half a step of dt = %g ms: nothing to simulate", p->tstop,
                 p->dt);
        return 0;
    }
    return 1;
}

/* The compartment of a location in a cell; prints the error. */
static int resolve_loc(const loc_spec *l, const ns_cell_t *cell, const char *name, int32_t *node) {
    if (ns_location_compartment(cell, &l->loc, node) != NS_OK)
        return cli_error("%s: %s: %s", name, l->text, ns_last_error());
    return 0;
}

/* An NPY float64 matrix on a stream; errors surface at ns_output_commit. */
static void progress(double frac, double elapsed_s) {
    int width = 40, fill = (int)(frac * width + 0.5);
    fprintf(stderr, "\r[");
    for (int i = 0; i < width; ++i) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %5.1f%%  %.1f s", 100.0 * frac, elapsed_s);
    if (frac > 0.0 && frac < 1.0) fprintf(stderr, ", about %.0f s left   ", elapsed_s / frac * (1.0 - frac));
    else fprintf(stderr, "%20s", "");
    fflush(stderr);
}

/* The network of the run: read before the parameters (a SONATA config's run
 * settings come first) and freed by cmd_simulate whichever way the run
 * ends (usage errors return early). */
static ns_network_t *run_net;
/* The --params file's text, read once: the parameters and the discretisation's per-section
 * statements both come from it (freed by cmd_simulate, as run_net). */
static char *param_text;
static size_t param_len;

static int simulate(int argc, char **argv) {
    const char *cmd = "simulate";
    cli_morph_options mo;
    cli_morph_options_init(&mo);
    ns_sim_params params;
    ns_sim_params_init(&params);
    ns_sim_options so;
    ns_sim_options_init(&so);
    const char *specs[MAX_ITEMS], *sets[MAX_ITEMS], *set_option[MAX_ITEMS], *set_value[MAX_ITEMS], *param_file = NULL,
               *out = NULL, *plot = NULL;
    int n_specs = 0, n_sets = 0, as_json = 0, no_progress = 0, ra_given = 0, cm_given = 0, no_stim = 0;
    long long cells_per = 1, record_cells = 1;
    stim_spec stims[MAX_ITEMS];
    loc_spec recs[MAX_ITEMS];
    int n_stims = 0, n_recs = 0;
    const char *checkpoint = NULL, *resume = NULL, *mech_lib = NULL, *model_file = NULL, *network_file = NULL;
    const char *input_spikes = NULL;
    int cells_given = 0;
    ns_network_t *net = NULL;
    long long *first_cell = NULL;
    ns_mech_library_t *lib = NULL;
    ns_sim_model_t *model = NULL;
    double ck_times[MAX_ITEMS];
    int n_ck = 0;
    cli_lfp lfp;
    cli_lfp_init(&lfp);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            printf("%s%s%s%s\n%s", help_text, help_text2, cli_lfp_help, help_text_tail, cli_morph_options_help);
            return 0;
        }
        if (strcmp(a, "--ra") == 0) ra_given = 1;
        if (strcmp(a, "--cm") == 0) cm_given = 1;
        int r = cli_morph_option(cmd, argc, argv, &i, &mo);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (a[0] != '-') {
            if (n_specs == MAX_ITEMS) return cli_usage_error(cmd, "at most %d shapes", MAX_ITEMS);
            specs[n_specs++] = a;
            continue;
        }
        if (!val && strcmp(a, "--json") != 0 && strcmp(a, "--no-progress") != 0)
            return cli_usage_error(cmd, "%s needs a value", a);
        if (strcmp(a, "--json") == 0) {
            as_json = 1;
            continue;
        }
        if (strcmp(a, "--no-progress") == 0) {
            no_progress = 1;
            continue;
        }
        ++i;
        if (strcmp(a, "--cells") == 0) {
            if (!cli_parse_long(cmd, a, val, 1, 100000000LL, &cells_per)) return 2;
            cells_given = 1;
        } else if (strcmp(a, "--network") == 0) {
            network_file = val;
        } else if (strcmp(a, "--input-spikes") == 0) {
            input_spikes = val;
        } else if (strcmp(a, "--record-cells") == 0) {
            if (!cli_parse_long(cmd, a, val, 0, 1000000LL, &record_cells)) return 2;
        } else if (strcmp(a, "--params") == 0) {
            param_file = val;
        } else if (strcmp(a, "--set") == 0 || strcmp(a, "--tstop") == 0 || strcmp(a, "--dt") == 0) {
            if (n_sets == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --set", MAX_ITEMS);
            static char buf[MAX_ITEMS][160];
            if (strcmp(a, "--set") == 0) snprintf(buf[n_sets], sizeof buf[0], "%s", val);
            else snprintf(buf[n_sets], sizeof buf[0], "%s=%s", a + 2, val);
            sets[n_sets] = buf[n_sets];
            set_option[n_sets] = a; /* messages name the option the user typed */
            set_value[n_sets] = val;
            n_sets++;
        } else if (strcmp(a, "--spike-times") == 0) {
            if (n_sets == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --set", MAX_ITEMS);
            if (val && strcmp(val, "netcon") == 0) sets[n_sets++] = "netcon_spikes=1";
            else if (val && strcmp(val, "interpolated") == 0) sets[n_sets++] = "netcon_spikes=0";
            else return cli_usage_error(cmd, "--spike-times takes interpolated or netcon");
        } else if (strcmp(a, "--iclamp") == 0) {
            if (strcmp(val, "none") == 0) {
                no_stim = 1;
                continue;
            }
            if (n_stims == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --iclamp", MAX_ITEMS);
            /* LOC may hold one ':' itself: split the last three fields off */
            char tmp[256];
            snprintf(tmp, sizeof tmp, "%s", val);
            char *f[3];
            int ok = 1;
            for (int k = 2; k >= 0 && ok; --k) {
                char *c = strrchr(tmp, ':');
                if (!c) ok = 0;
                else {
                    f[k] = c + 1;
                    *c = '\0';
                }
            }
            stim_spec *s = &stims[n_stims];
            if (!ok) return cli_usage_error(cmd, "--iclamp %s: expected LOC:DEL:DUR:AMP (four fields)", val);
            if (parse_loc(tmp, &s->loc)) return cli_usage_error(cmd, "--iclamp %s: %s", val, ns_last_error());
            if (!cli_parse_double(cmd, "--iclamp DEL", f[0], -1e9, 1e9, &s->del) ||
                !cli_parse_double(cmd, "--iclamp DUR", f[1], 0.0, 1e9, &s->dur))
                return 2;
            s->amp_auto = strcmp(f[2], "auto") == 0;
            if (!s->amp_auto && !cli_parse_double(cmd, "--iclamp AMP", f[2], -1e6, 1e6, &s->amp)) return 2;
            n_stims++;
        } else if (strcmp(a, "--record") == 0) {
            if (n_recs == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --record", MAX_ITEMS);
            if (parse_loc(val, &recs[n_recs])) return cli_usage_error(cmd, "--record %s: %s", val, ns_last_error());
            n_recs++;
        } else if (strcmp(a, "--record-every") == 0) {
            long long v;
            if (!cli_parse_long(cmd, a, val, 1, 1000000000LL, &v)) return 2;
            so.record_every = (int32_t)v;
        } else if (strcmp(a, "--backend") == 0) {
            const int bad = cli_parse_backend(cmd, a, val, &so.backend);
            if (bad) return bad;
        } else if (strcmp(a, "--method") == 0) {
            if (ns_hines_method_from_name(val, &so.method) != NS_OK)
                return cli_usage_error(cmd, "unknown method '%s'", val);
        } else if (strcmp(a, "--threads") == 0) {
            long long v;
            if (!cli_parse_long(cmd, a, val, 0, 4096, &v)) return 2;
            so.threads = (int32_t)v;
        } else if (strcmp(a, "--gpu-lanes") == 0) {
            long long v;
            if (!cli_parse_long(cmd, a, val, 0, 32, &v)) return 2;
            if (v & (v - 1)) return cli_usage_error(cmd, "--gpu-lanes: '%s' is not 0, 1, 2, 4, 8, 16 or 32", val);
            so.gpu_lanes = (int32_t)v;
        } else if (strcmp(a, "--gpu-mechanisms") == 0) {
            if (ns_sim_gpu_mechanisms_from_name(val, &so.gpu_mechanisms) != NS_OK)
                return cli_usage_error(cmd, "--gpu-mechanisms: '%s' is not auto, fused, per-step or per-mechanism", val);
        } else if (strcmp(a, "--out") == 0) {
            out = val;
        } else if (strcmp(a, "--plot") == 0) {
            plot = val;
        } else if (strcmp(a, "--checkpoint") == 0) {
            checkpoint = val;
        } else if (strcmp(a, "--mechanisms") == 0) {
            mech_lib = val;
        } else if (strcmp(a, "--model") == 0) {
            model_file = val;
        } else if (strcmp(a, "--resume") == 0) {
            resume = val;
        } else if (strcmp(a, "--checkpoint-at") == 0) {
            /* every item a time: "5,,6" and a trailing comma are refused */
            for (const char *p = val;;) {
                const size_t n = strcspn(p, ",");
                char tok[64];
                if (n_ck == MAX_ITEMS) return cli_usage_error(cmd, "--checkpoint-at: at most %d times", MAX_ITEMS);
                if (n == 0 || n >= sizeof tok)
                    return cli_usage_error(cmd, "--checkpoint-at T1,T2,...: %s item in '%s'",
                                           n ? "a too long" : "an empty", val);
                snprintf(tok, sizeof tok, "%.*s", (int)n, p);
                if (!cli_parse_double(cmd, "--checkpoint-at", tok, 0.0, 1e15, &ck_times[n_ck])) return 2;
                n_ck++;
                if (!p[n]) break;
                p += n + 1;
            }
        } else if ((r = cli_lfp_option(cmd, a, val, &lfp)) != 0) {
            if (r < 0) return 2;
        } else {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        }
    }
    if (network_file) {
        if (n_specs > 0)
            return cli_usage_error(cmd, "--network takes the cells from its file: no SHAPE arguments ('%s')", specs[0]);
        if (cells_given) return cli_usage_error(cmd, "--network takes the cells from its file: no --cells");
        if (checkpoint || resume)
            return cli_usage_error(cmd, "--checkpoint and --resume: a network's state is not saved yet");
    } else if (n_specs == 0)
        return cli_usage_error(cmd, "no morphology given (a file, a directory or `bundled`)");
    if (input_spikes && !network_file) return cli_usage_error(cmd, "--input-spikes needs --network CONFIG.json");
    if (network_file) {
        /* a SONATA config's run settings (tstop, dt, celsius, v_init, spike_threshold) come
         * first; --params, --set, --tstop and --dt override them */
        ns_status nst = input_spikes ? ns_network_read_sonata(network_file, input_spikes, &net)
                                     : ns_network_read(network_file, &net);
        run_net = net;
        if (nst == NS_OK) nst = ns_network_run_params(net, &params);
        if (nst != NS_OK) {
            cli_error("network: %s", ns_last_error());
            return 1;
        }
    }
    const ns_sim_params net_params = params;
    if (param_file) {
        if (cli_read_text(param_file, "parameters", "a parameter file", &param_text, &param_len)) return 1;
        ns_status st = ns_sim_params_parse(&params, param_text, param_len, param_file);
        if (st != NS_OK) return cli_status_error("parameters", st);
    }
    /* the values of the files (network or SONATA config, then --params) before
     * the options: when the run's values fail the check below and these do
     * too, the fault is in a file (exit 1, docs/cli.md), else in an option */
    const ns_sim_params file_params = params;
    for (int k = 0; k < n_sets; ++k) {
        /* one line of a parameter file: the same parser and the same rules */
        if (!strchr(sets[k], '=') || strpbrk(sets[k], "\n#"))
            return cli_usage_error(cmd, "%s: '%s' is not KEY=VALUE", set_option[k], set_value[k]);
        if (ns_sim_params_parse(&params, sets[k], strlen(sets[k]), set_option[k]) != NS_OK) {
            /* "OPTION:1: detail" -> "OPTION VALUE: detail" */
            const char *msg = ns_last_error();
            const size_t n = strlen(set_option[k]);
            if (strncmp(msg, set_option[k], n) == 0 && strncmp(msg + n, ":1: ", 4) == 0) msg += n + 4;
            return cli_usage_error(cmd, "%s %s: %s", set_option[k], set_value[k], msg);
        }
    }
    if (mech_lib && !model_file) return cli_usage_error(cmd, "--mechanisms LIB needs --model FILE");
    if ((checkpoint || resume) && model_file)
        return cli_usage_error(cmd, "--checkpoint and --resume: a model's mechanism states are not saved yet");
    /* every value in range, and a step count that fits, before any work */
    int64_t n_steps = 0;
    char why[600];
    if (!params_usable(&params, &n_steps, why, sizeof why)) {
        int64_t ignored;
        char file_why[600];
        if ((param_file || network_file) && !params_usable(&file_params, &ignored, file_why, sizeof file_why)) {
            const int net_fault = network_file && !params_usable(&net_params, &ignored, file_why, sizeof file_why);
            cli_error("parameters: %s: %s", net_fault || !param_file ? network_file : param_file, file_why);
            return 1;
        }
        return cli_usage_error(cmd, "%s", why);
    }
    /* checkpoint times as step counts, in order, within the run */
    int64_t ck_steps[MAX_ITEMS];
    if (n_ck > 0 && !checkpoint) return cli_usage_error(cmd, "--checkpoint-at needs --checkpoint FILE");
    for (int k = 0; k < n_ck; ++k) {
        if (ns_sim_count_steps(ck_times[k], params.dt, &ck_steps[k]) != NS_OK)
            return cli_usage_error(cmd, "--checkpoint-at: %s", ns_last_error());
        if (ck_steps[k] < 1 || ck_steps[k] > n_steps)
            return cli_usage_error(cmd, "--checkpoint-at: %g ms is not in (0, tstop = %g ms] (steps of %g ms)",
                                   ck_times[k], params.tstop, params.dt);
        if (k > 0 && ck_steps[k] <= ck_steps[k - 1])
            return cli_usage_error(cmd, "--checkpoint-at: times must increase by at least a step (%g ms after %g ms)",
                                   ck_times[k], ck_times[k - 1]);
    }
    if ((checkpoint || resume) && cli_mpi_active())
        return cli_usage_error(cmd, "--checkpoint and --resume run in one process (not under MPI)");
    char stem[4000] = "";
    if (out || plot) {
        if (!cli_sim_output_stem(out, plot, stem, sizeof stem))
            return cli_usage_error(cmd, "%s: the path is longer than the %d bytes an output prefix may have",
                                   out ? "--out" : "--plot", (int)sizeof stem - 2);
        if (cli_sim_check_output_folder(stem)) return 1; /* every rank: the same answer on a shared file system */
    }
    /* the plot and the checkpoint are written after (or during) the run:
     * a path they cannot take is refused before it, as for --out */
    const char *later[2] = {plot, checkpoint};
    for (int k = 0; k < 2; ++k) {
        struct stat ls;
        if (!later[k]) continue;
        if (stat(later[k], &ls) == 0 && S_ISDIR(ls.st_mode))
            return cli_error("%s: cannot write: it is a directory", later[k]);
        if (cli_sim_check_output_folder(later[k])) return 1;
    }
    cli_plot_check(plot); /* without matplotlib: the warning now, the results still written */
    if (!ra_given) mo.disc.Ra = params.Ra;
    /* the discretisation's per-section statements (nseg, Ra, the regions' cm for d_lambda) come
     * from the same parameter text; --cm and --ra given on the command line override them */
    char *disc_text = NULL;
    if (param_file || n_sets > 0 || cm_given || ra_given) {
        size_t len = param_file ? param_len : 0, cap = len + 1024;
        disc_text = malloc(cap);
        if (disc_text && len) memcpy(disc_text, param_text, len);
        for (int k = 0; disc_text && k < n_sets + 2; ++k) {
            char one[200] = "";
            if (k < n_sets) snprintf(one, sizeof one, "\n%s", sets[k]);
            else if (k == n_sets && cm_given) snprintf(one, sizeof one, "\nall.cm = %.17g", mo.disc.cm);
            else if (k == n_sets + 1 && ra_given) snprintf(one, sizeof one, "\nRa = %.17g", mo.disc.Ra);
            const size_t n1 = strlen(one);
            if (len + n1 + 1 >= cap) {
                char *grown = realloc(disc_text, cap = len + n1 + 1024);
                if (!grown) break;
                disc_text = grown;
            }
            memcpy(disc_text + len, one, n1 + 1);
            len += n1;
        }
        if (!disc_text) return cli_error("out of memory");
        mo.disc.sections = disc_text;
        mo.disc.sections_length = len;
        mo.disc.sections_name = param_file ? param_file : "--set";
    }
    if (network_file && n_stims == 0) no_stim = 1; /* a network is driven by its sources */
    if (n_stims == 0 && !no_stim) {
        parse_loc("soma", &stims[0].loc);
        stims[0].del = 5.0;
        stims[0].dur = 90.0;
        stims[0].amp_auto = 1;
        n_stims = 1;
    }
    if (no_stim) n_stims = 0;
    if (n_recs == 0) {
        parse_loc("soma", &recs[0]);
        n_recs = 1;
    }

    cli_shape_set set = {0};
    int rc = 1;
    ns_sim_t *sim = NULL; /* one ns_sim_t, or spread over MPI processes */
    const ns_cell_t **cells = NULL;
    int32_t *cell_shape = NULL;
    char **site_names = NULL;
    for (int k = 0; k < n_specs; ++k)
        if (cli_shapes_add(&set, specs[k], &mo, 1)) goto done;
    if (network_file) {
        /* the morphologies, one shape each, with the shared morphology options */
        for (int32_t k = 0; k < ns_network_morphologies(net); ++k) {
            if (set.count == MAX_ITEMS) {
                cli_error("network: %s: more than %d morphologies", network_file, MAX_ITEMS);
                goto done;
            }
            const int before = set.count;
            if (cli_shapes_add(&set, ns_network_morphology(net, k), &mo, 1)) goto done;
            if (set.count != before + 1) {
                cli_error("network: %s: morphology %s is not one SWC file", network_file, ns_network_morphology(net, k));
                goto done;
            }
        }
    }
    cells = malloc((size_t)set.count * sizeof *cells);
    if (!cells) {
        cli_error("out of memory");
        goto done;
    }
    for (int k = 0; k < set.count; ++k) {
        if (!set.items[k].cell) {
            cli_error("%s: simulate needs morphologies (SWC files), not generated trees", set.items[k].name);
            goto done;
        }
        cells[k] = set.items[k].cell;
    }
    const long long n_cells = net ? ns_network_cells(net) : cells_per * set.count;
    /* The memory the run needs is known before anything big is allocated:
     * the state (v, m, h, n and a work vector: 40 B per compartment), the
     * cells (24 B each) and the traces (kept by the simulation and copied
     * for the files: 16 B per sample and site). A lower bound, refused when
     * it exceeds the machine's memory instead of failing at the end. */
    {
        double comps = 0.0;
        for (int k = 0; k < set.count; ++k) {
            double per = (double)cells_per;
            if (net) {
                per = 0.0;
                for (long long c = 0; c < n_cells; ++c) per += ns_network_cell_morphology(net)[c] == k;
            }
            comps += (double)ns_tree_size(ns_cell_tree(cells[k])) * per;
        }
        const double sites_all = (double)set.count * (double)(record_cells < cells_per ? record_cells : cells_per) * n_recs;
        const double samples_all = (double)n_steps / so.record_every + 1.0;
        /* the network's inputs (trains, Poisson sources: their mean count):
         * each spike is kept (source and time, and its raster row: about
         * SPIKE_BYTES of memory) and written as a row of spikes.csv (about
         * SPIKE_CSV_BYTES) */
        const double in_spikes = net ? ns_network_expected_input_spikes(net, params.tstop) : 0.0;
        /* under MPI each process holds its share of the cells; rank 0 gathers every trace */
        const double need = (40.0 * comps + 24.0 * (double)n_cells) / cli_mpi_size() + 16.0 * samples_all * sites_all +
                            SPIKE_BYTES * in_spikes;
        const double have = cli_physical_memory();
        if (have > 0 && need > have) {
            cli_error("simulate: %lld cells (%.3g compartments), %.3g trace samples of %.0f sites and %.3g input "
                      "spikes need at least %.1f GB, more than the %.1f GB of memory of this machine (fewer --cells, "
                      "a larger --record-every, a shorter --tstop or lower input rates)",
                      n_cells, comps, samples_all, sites_all, in_spikes, need / 1e9, have / 1e9);
            goto done;
        }
        /* the files: a traces.csv row of t ("%.4f") and a value (",%.6f") per site, a traces.npy
         * row of 8 bytes per column, a spikes.csv row per input spike (the cells' own
         * spikes are not known before the run) */
        const double out_bytes = samples_all * (10.0 + 11.0 * sites_all + 8.0 * (sites_all + 1.0)) +
                                 SPIKE_CSV_BYTES * in_spikes;
        if ((out || plot) && out_bytes > OUTPUT_NOTE_BYTES && cli_mpi_rank() == 0)
            fprintf(stderr, "neurosolve: note: the result files will take about %.1f GB (%.3g trace samples of %.0f "
                    "sites%s)\n", out_bytes / 1e9, samples_all, sites_all, in_spikes > 0 ? " and the inputs' spikes" : "");
        if (in_spikes > SPIKES_NOTE && cli_mpi_rank() == 0)
            fprintf(stderr,
                    "neurosolve: note: the network's inputs give about %.3g spikes up to tstop = %g ms: about %.1f GB "
                    "of memory and %.1f GB of spikes.csv\n",
                    in_spikes, params.tstop, SPIKE_BYTES * in_spikes / 1e9, SPIKE_CSV_BYTES * in_spikes / 1e9);
    }
    /* cells of one morphology are contiguous: cell c has shape c / cells_per */
    cell_shape = malloc((size_t)n_cells * sizeof *cell_shape);
    if (!cell_shape) {
        cli_error("out of memory for %lld cells", n_cells);
        goto done;
    }
    for (long long c = 0; c < n_cells; ++c)
        cell_shape[c] = net ? ns_network_cell_morphology(net)[c] : (int32_t)(c / cells_per);
    if (net) {
        /* the network's model, or --model: one of them */
        if (mech_lib && ns_mech_library_open(mech_lib, &lib) != NS_OK) {
            cli_error("model: %s", ns_last_error());
            goto done;
        }
        if (ns_network_model(net, lib, &model) != NS_OK) {
            cli_error("network: %s", ns_last_error());
            goto done;
        }
        if (model && model_file) {
            cli_error("network: %s names a model and --model %s is given: one of them only", network_file, model_file);
            goto done;
        }
        if (!model && !model_file) {
            cli_error("network: %s names no model (a `model FILE` or `model: STATEMENT` line, or --model FILE): "
                      "synapses are mechanisms of a model", network_file);
            goto done;
        }
        so.model = model;
    }
    if (model_file) {
        if ((mech_lib && !lib && ns_mech_library_open(mech_lib, &lib) != NS_OK) || ns_sim_model_create(lib, &model) != NS_OK ||
            ns_sim_model_read(model, model_file) != NS_OK) {
            cli_error("model: %s", ns_last_error());
            goto done;
        }
        so.model = model;
    }
    so.dist = cli_mpi_dist(); /* under mpirun: the cells spread over the processes */
    /* a network: its synapses, sources and connections too, on the sim policy's backend for
     * networks under `auto` (the CPU, docs/networks.md); under MPI collective, a failure agreed */
    ns_status st = net ? ns_network_sim_create(net, cells, &params, &so, &sim)
                       : ns_sim_create(set.count, cells, n_cells, cell_shape, &params, &so, &sim);
    if (st != NS_OK) {
        const long long bad = cli_failed_shape(ns_last_error());
        if (bad >= 0 && bad < set.count) /* name the file the shape was read from */
            cli_error("simulation: %s: %s: %s", set.items[bad].name, ns_status_string(st), ns_last_error());
        else if (net)
            cli_error("network: %s", ns_last_error());
        else
            cli_status_error("simulation", st);
        goto done;
    }
    /* stimuli in every cell; recordings in the first cells of each morphology */
    for (int k = 0; k < set.count; ++k) {
        ns_cell_info ci;
        ns_cell_get_info(cells[k], &ci);
        for (int q = 0; q < n_stims; ++q) {
            int32_t node;
            if (resolve_loc(&stims[q].loc, cells[k], set.items[k].name, &node)) goto done;
            double amp = stims[q].amp_auto ? 1.5e-4 * ci.total_area : stims[q].amp;
            if (stims[q].amp_auto) amp = round(amp * 1000.0) / 1000.0; /* as the validation script */
            for (long long c = 0; c < n_cells; ++c) {
                if (cell_shape[c] != k) continue;
                st = ns_sim_add_iclamp(sim, c, node, stims[q].del, stims[q].dur, amp);
                if (st != NS_OK && !so.dist) { /* spread: the owner's failure comes with the next collective call */
                    cli_status_error("iclamp", st);
                    goto done;
                }
            }
        }
    }
    int n_sites = 0;
    const long long rc_cells = net ? record_cells : record_cells < cells_per ? record_cells : cells_per;
    site_names = calloc((size_t)(set.count * rc_cells * n_recs + 1), sizeof *site_names);
    if (!site_names) {
        cli_error("out of memory");
        goto done;
    }
    for (int k = 0; k < set.count; ++k)
        for (long long c = 0, taken = 0; c < n_cells && taken < rc_cells; ++c) {
            if (cell_shape[c] != k) continue;
            ++taken;
            for (int q = 0; q < n_recs; ++q) {
                int32_t node, site;
                if (resolve_loc(&recs[q], cells[k], set.items[k].name, &node)) goto done;
                st = ns_sim_add_recording(sim, c, node, &site);
                if (st != NS_OK && !so.dist) {
                    cli_status_error("record", st);
                    goto done;
                }
                const char *base = strrchr(set.items[k].name, '/');
                base = base ? base + 1 : set.items[k].name;
                size_t len = strlen(base) + strlen(recs[q].text) + 32;
                site_names[n_sites] = malloc(len);
                if (!site_names[n_sites]) {
                    cli_error("out of memory");
                    goto done;
                }
                snprintf(site_names[n_sites], len, "%s#%lld@%s", base, c, recs[q].text);
                n_sites++;
            }
        }
    /* a network takes effect at ns_sim_init (NEURON's finitialize) */
    if (net && (st = ns_sim_init(sim)) != NS_OK) {
        cli_status_error("network", st);
        goto done;
    }
    /* from a checkpoint: the state, time, traces and spikes so far */
    if (resume) {
        st = ns_sim_restore_state(sim, resume);
        if (st != NS_OK) {
            cli_error("--resume: %s: %s", ns_status_string(st), ns_last_error());
            goto done;
        }
    }
    /* run in chunks: a progress bar on a terminal, the checkpoints, and a
     * SIGINT seen between two chunks */
    if (lfp.probe && (so.dist || resume)) {
        cli_error("--probe: not with mpirun or --resume (docs/extracellular.md)");
        goto done;
    }
    if (cli_lfp_attach(&lfp, sim, set.count, cells, cell_shape, params.dt)) goto done;
    const long long steps = ns_sim_steps_for(sim, params.tstop);
    const long long first_step = resume ? ns_sim_step_count(sim) : 0;
    if (first_step > steps) {
        cli_error("--resume: %s is at t = %g ms, past tstop = %g ms", resume, ns_sim_time(sim),
                  params.tstop);
        goto done;
    }
    const int show = !no_progress && isatty(2);
    long long done_steps = first_step;
    int shown = 0, next_ck = 0;
    while (next_ck < n_ck && ck_steps[next_ck] <= first_step) ++next_ck;
    cli_catch_signals();
    ns_status run_st = NS_OK;
    /* chunks: after the first (10 steps) each lasts about 0.2 s, so that
     * SIGINT is seen soon on a slow run, and at most 1% of the run where a
     * progress bar is drawn (under MPI every process takes the same chunks:
     * 1%). Without the bar a fast run takes few calls, each of which costs
     * its threads' start and, with fused mechanisms, the assigned variables
     * stored in its last step (docs/simulation.md): a run of 400 steps took
     * 100 calls of 4 steps. */
    const long long max_chunk = show || cli_mpi_active() ? (steps / 100 > 0 ? steps / 100 : 1) : steps;
    long long adapt = cli_mpi_active() ? max_chunk : (max_chunk < 10 ? max_chunk : 10);
    while (done_steps < steps && !cli_interrupted()) {
        long long chunk = adapt;
        if (chunk > steps - done_steps) chunk = steps - done_steps;
        const double before_ms = ns_sim_elapsed_ms(sim);
        if (next_ck < n_ck && done_steps + chunk > ck_steps[next_ck]) chunk = ck_steps[next_ck] - done_steps;
        run_st = ns_sim_advance(sim, chunk);
        if (run_st != NS_OK) break;
        done_steps += chunk;
        if (!cli_mpi_active()) {
            const double per_step_ms = (ns_sim_elapsed_ms(sim) - before_ms) / (double)chunk;
            const double want = per_step_ms > 0.0 ? 200.0 / per_step_ms : (double)max_chunk;
            adapt = want >= (double)max_chunk ? max_chunk : want < 1.0 ? 1 : (long long)want;
        }
        if (next_ck < n_ck && done_steps == ck_steps[next_ck]) {
            if (cli_sim_save_checkpoint(sim, checkpoint)) goto done;
            ++next_ck;
        }
        double el = ns_sim_elapsed_ms(sim) / 1000.0;
        if (show && (shown || el > 1.0)) {
            progress((double)done_steps / (double)steps, el);
            shown = 1;
        }
    }
    /* a signal after the last step: the results are complete and written in full */
    const int stopped_by = done_steps < steps ? cli_interrupted() : 0;
    if (shown) fputc('\n', stderr);
    const double every_ms = so.record_every * params.dt;
    if (run_st != NS_OK || stopped_by) {
        /* what was recorded so far, under names that say it is partial */
        if (run_st != NS_OK) {
            const long long bad = cli_failed_cell(ns_last_error());
            if (bad >= 0 && bad < n_cells) /* name the file the cell was built from */
                cli_error("simulation: %s: %s: %s", set.items[cell_shape[bad]].name, ns_status_string(run_st),
                          ns_last_error());
            else
                cli_status_error("simulation", run_st);
        } else {
            cli_error("simulation interrupted (%s) at t = %g ms, step %lld of %lld",
                      stopped_by == SIGTERM ? "SIGTERM" : "SIGINT", done_steps * params.dt, done_steps, steps);
            if (checkpoint && !cli_sim_save_checkpoint(sim, checkpoint))
                fprintf(stderr, "neurosolve: checkpoint at t = %g ms written to %s (continue with --resume %s)\n",
                        done_steps * params.dt, checkpoint, checkpoint);
        }
        if (cli_mpi_active()) { /* even one process under mpirun: its results are gathered at the end only */
            fprintf(stderr, "neurosolve: under MPI the partial traces stay with their processes: nothing written\n");
        } else if (out || plot) {
            int64_t kept;
            ns_sim_traces(sim, &kept, NULL);
            char partial[4096];
            if (!cli_sim_write_results(stem, ".partial", out != NULL, sim, site_names, every_ms, n_cells, &set,
                                       cell_shape, net, partial, sizeof partial))
            {
                if (out)
                    fprintf(stderr, "neurosolve: the traces up to t = %g ms (%lld samples) and the spikes until then "
                            "are in %straces.partial.csv, %straces.partial.npy and %sspikes.partial.csv (partial: "
                            "not results)\n", (double)(kept - 1) * every_ms, (long long)kept, stem, stem, stem);
                else
                    fprintf(stderr, "neurosolve: the traces up to t = %g ms (%lld samples) are in "
                            "%straces.partial.csv (partial: not results)\n", (double)(kept - 1) * every_ms,
                            (long long)kept, stem);
            }
        }
        goto done;
    }
    if (checkpoint && n_ck == 0 && first_step < steps && cli_sim_save_checkpoint(sim, checkpoint))
        goto done;
    st = ns_sim_gather(sim, 0); /* under MPI: spikes and traces to rank 0 */
    if (st != NS_OK) {
        cli_status_error("gathering the results", st);
        goto done;
    }
    if (cli_mpi_rank() != 0) out = plot = NULL; /* only rank 0 writes files */
    const double wall_s = ns_sim_elapsed_ms(sim) / 1000.0;
    const long long comps = ns_sim_compartments(sim);
    const double sps = wall_s > 0 ? (steps - first_step) / wall_s : 0.0;
    /* the first cell of each morphology */
    first_cell = malloc((size_t)set.count * sizeof *first_cell);
    if (!first_cell) {
        cli_error("out of memory");
        goto done;
    }
    for (int k = 0; k < set.count; ++k) first_cell[k] = -1;
    for (long long c = n_cells - 1; c >= 0; --c) first_cell[cell_shape[c]] = c;
    long long source_spikes = 0;
    for (int64_t q = 0; net && q < ns_sim_sources(sim); ++q) {
        int64_t cnt;
        ns_sim_source_spikes(sim, q, &cnt);
        source_spikes += cnt;
    }
    long long total_spikes = 0;
    for (long long c = 0; c < n_cells; ++c) {
        int64_t cnt;
        ns_sim_spikes(sim, c, &cnt);
        total_spikes += cnt;
    }
    /* outputs: every file goes to a temporary name; all are renamed into
     * place only when all were written (ns_output) */
    char csv_path[4096] = "";
    if ((out || plot) && cli_sim_write_results(stem, "", out != NULL, sim, site_names, every_ms, n_cells, &set,
                                               cell_shape, net, csv_path, sizeof csv_path))
        goto done;
    char lfp_csv[4096] = "";
    if ((out || plot) && cli_lfp_write(&lfp, stem, lfp_csv, sizeof lfp_csv)) goto done;
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "backend", ns_backend_name(ns_sim_backend(sim)));
        json_string(&j, "method", ns_hines_method_name(ns_sim_method(sim)));
        if (ns_sim_gpu_mechanisms_of(sim) != NS_SIM_GPU_MECHANISMS_AUTO)
            json_string(&j, "gpu_mechanisms", ns_sim_gpu_mechanisms_name(ns_sim_gpu_mechanisms_of(sim)));
        const char *graph_why = "";
        if (ns_sim_gpu_graph_of(sim, &graph_why)) json_bool(&j, "gpu_graph", 1);
        if (graph_why[0]) json_string(&j, "gpu_graph_refused", graph_why);
        json_int(&j, "morphologies", set.count);
        json_int(&j, "cells", n_cells);
        if (cli_mpi_size() > 1) json_int(&j, "processes", cli_mpi_size());
        json_int(&j, "compartments", comps);
        json_int(&j, "steps", steps);
        json_double(&j, "dt_ms", params.dt);
        json_double(&j, "tstop_ms", params.tstop);
        json_double(&j, "wall_s", wall_s);
        json_double(&j, "steps_per_s", sps);
        json_double(&j, "compartment_steps_per_s", sps * (double)comps);
        json_int(&j, "spikes", total_spikes);
        if (lfp.lfp) {
            json_string(&j, "lfp_storage", ns_lfp_storage_name(ns_lfp_storage_used(lfp.lfp)));
            if (ns_lfp_storage_used(lfp.lfp) == NS_LFP_STORAGE_F32)
                json_double(&j, "lfp_error_bound", ns_lfp_error_bound(lfp.lfp));
            ns_lfp_timing lt;
            if (ns_lfp_timing_of(lfp.lfp, &lt) == NS_OK) { /* where the probe's time went (ns_lfp_timing) */
                json_object_begin(&j, "lfp_timing");
                json_double(&j, "setup_ms", lt.setup_ms);
                json_double(&j, "sampling_ms", lt.sampling_ms);
                json_int(&j, "reductions", lt.reductions);
                json_double(&j, "currents_ms", lt.currents_ms);
                json_double(&j, "gemm_ms", lt.gemm_ms);
                json_double(&j, "sum_ms", lt.sum_ms);
                json_object_end(&j);
            }
        }
        if (net) {
            json_int(&j, "synapses", ns_sim_synapses(sim));
            json_int(&j, "sources", ns_sim_sources(sim));
            json_int(&j, "connections", ns_sim_connections(sim));
            json_int(&j, "source_spikes", source_spikes);
        }
        json_array_begin(&j, "first_cells"); /* the first cell of each morphology */
        for (int k = 0; k < set.count; ++k) {
            long long c = first_cell[k];
            if (c < 0) continue;
            int64_t cnt;
            const double *sp = ns_sim_spikes(sim, c, &cnt);
            json_object_begin(&j, NULL);
            json_int(&j, "cell", c);
            json_string(&j, "morphology", set.items[k].name);
            json_int(&j, "compartments", ns_tree_size(ns_cell_tree(cells[k])));
            json_array_begin(&j, "spikes");
            for (int64_t q = 0; q < cnt; ++q) json_double(&j, NULL, sp[q]);
            json_array_end(&j);
            json_object_end(&j);
        }
        json_array_end(&j);
        json_end(&j);
    } else {
        printf("simulated %lld cells (%d morphologies, %lld compartments) for %g ms: %lld steps of %g ms\n",
               n_cells, set.count, comps, params.tstop, steps, params.dt);
        printf("backend %s, method %s: %.3f s, %.0f steps/s, %.3g compartment-steps/s\n",
               ns_backend_name(ns_sim_backend(sim)), ns_hines_method_name(ns_sim_method(sim)), wall_s, sps,
               sps * (double)comps);
        printf("soma spikes (threshold %g mV): %lld in all cells\n", params.spike_threshold, total_spikes);
        if (net) {
            printf("network %s: %lld synapses, %lld sources, %lld connections; %lld spikes of the sources\n",
                   network_file, (long long)ns_sim_synapses(sim), (long long)ns_sim_sources(sim),
                   (long long)ns_sim_connections(sim), source_spikes);
        }
        for (int k = 0; k < set.count && k < 20; ++k) {
            int64_t cnt;
            if (first_cell[k] < 0) continue;
            const double *sp = ns_sim_spikes(sim, first_cell[k], &cnt);
            printf("  %-40s cell %lld: %lld spikes", set.items[k].name, first_cell[k], (long long)cnt);
            for (int64_t q = 0; q < cnt && q < 8; ++q) printf("%s%.3f", q ? " " : " at ", sp[q]);
            printf("%s\n", cnt > 8 ? " ..." : (cnt ? " ms" : ""));
        }
        if (out) printf("wrote %straces.csv, %straces.npy, %sspikes.csv%s%s%s\n", stem, stem, stem,
                        net && ns_network_populations(net) > 0 ? ", " : "",
                        net && ns_network_populations(net) > 0 ? stem : "",
                        net && ns_network_populations(net) > 0 ? "spikes.h5" : "");
    }
    if (plot && cli_plot("bench/plot_traces.py", csv_path, plot, NULL)) goto done;
    if (plot && !as_json && cli_plot_available()) printf("plot: %s\n", plot);
    if (lfp.lfp && !as_json && (out || plot))
        printf("wrote %slfp.csv, %slfp.npy, %sdipole.csv%s%s%s\n", stem, stem, stem,
               ns_lfp_population_potentials(lfp.lfp) ? ", " : "", ns_lfp_population_potentials(lfp.lfp) ? stem : "",
               ns_lfp_population_potentials(lfp.lfp) ? "lfp_populations.npy" : "");
    if (plot && lfp.lfp && cli_lfp_plot(&lfp, lfp_csv, plot, as_json)) goto done;
    rc = 0;
done:
    cli_lfp_free(&lfp);
    if (site_names)
        for (int s = 0; site_names[s]; ++s) free(site_names[s]);
    free(site_names);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(model);
    ns_mech_library_close(lib);
    free(first_cell);
    free(cell_shape);
    free(cells);
    cli_shapes_free(&set);
    free(disc_text);
    return rc;
}

int cmd_simulate(int argc, char **argv) {
    const int rc = simulate(argc, argv);
    cli_release_signals();
    ns_network_destroy(run_net);
    run_net = NULL;
    free(param_text);
    param_text = NULL;
    return rc;
}
