/* neurosolve simulate's command line (simulate.h): the options, the checks
 * that go before any work, the run's values and the discretisation's text. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "simulate.h"
#include "simulate_out.h"


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

/* 0, or 1 with ns_last_error() naming the part of the text that is wrong. */
static int parse_loc(const char *text, loc_spec *l) {
    memset(l, 0, sizeof *l);
    snprintf(l->text, sizeof l->text, "%.*s", (int)sizeof l->text - 1, text);
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


/* --iclamp LOC:DEL:DUR:AMP; 0 or the exit status (printed). */
static int option_iclamp(sim_args *a, const char *cmd, const char *val) {
    if (strcmp(val, "none") == 0) {
        a->no_stim = 1;
        return 0;
    }
    if (a->n_stims == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --iclamp", MAX_ITEMS);
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
    stim_spec *s = &a->stims[a->n_stims];
    if (!ok) return cli_usage_error(cmd, "--iclamp %s: expected LOC:DEL:DUR:AMP (four fields)", val);
    if (parse_loc(tmp, &s->loc)) return cli_usage_error(cmd, "--iclamp %s: %s", val, ns_last_error());
    if (!cli_parse_double(cmd, "--iclamp DEL", f[0], -1e9, 1e9, &s->del) ||
        !cli_parse_double(cmd, "--iclamp DUR", f[1], 0.0, 1e9, &s->dur))
        return 2;
    s->amp_auto = strcmp(f[2], "auto") == 0;
    if (!s->amp_auto && !cli_parse_double(cmd, "--iclamp AMP", f[2], -1e6, 1e6, &s->amp)) return 2;
    a->n_stims++;
    return 0;
}

/* --checkpoint-at T1,T2,...: every item a time ("5,,6" and a trailing comma are refused);
 * 0 or the exit status (printed). */
static int option_checkpoint_at(sim_args *a, const char *cmd, const char *val) {
    for (const char *p = val;;) {
        const size_t n = strcspn(p, ",");
        char tok[64];
        if (a->n_ck == MAX_ITEMS) return cli_usage_error(cmd, "--checkpoint-at: at most %d times", MAX_ITEMS);
        if (n == 0 || n >= sizeof tok)
            return cli_usage_error(cmd, "--checkpoint-at T1,T2,...: %s item in '%s'", n ? "a too long" : "an empty",
                                   val);
        snprintf(tok, sizeof tok, "%.*s", (int)n, p);
        if (!cli_parse_double(cmd, "--checkpoint-at", tok, 0.0, 1e15, &a->ck_times[a->n_ck])) return 2;
        a->n_ck++;
        if (!p[n]) return 0;
        p += n + 1;
    }
}

/* One parameter line of an option (--set, --tstop, --dt, --spike-times); 0 or 2 (printed). */
static int option_set(sim_args *a, const char *cmd, const char *opt, const char *val) {
    if (a->n_sets == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --set", MAX_ITEMS);
    char *line = a->set_text[a->n_sets];
    const size_t size = sizeof a->set_text[0];
    if (strcmp(opt, "--set") == 0) snprintf(line, size, "%s", val);
    else if (strcmp(opt, "--spike-times") != 0) snprintf(line, size, "%s=%s", opt + 2, val);
    else if (strcmp(val, "netcon") == 0) snprintf(line, size, "netcon_spikes=1");
    else if (strcmp(val, "interpolated") == 0) snprintf(line, size, "netcon_spikes=0");
    else return cli_usage_error(cmd, "--spike-times takes interpolated or netcon");
    a->sets[a->n_sets] = line;
    a->set_option[a->n_sets] = opt;
    a->set_value[a->n_sets] = val;
    a->n_sets++;
    return 0;
}

/* An option of the simulation's options (ns_sim_options); 0, 2 (printed), or -1: not one of them. */
static int option_sim(ns_sim_options *so, const char *cmd, const char *a, const char *val) {
    long long v;
    if (strcmp(a, "--record-every") == 0) {
        if (!cli_parse_long(cmd, a, val, 1, 1000000000LL, &v)) return 2;
        so->record_every = (int32_t)v;
    } else if (strcmp(a, "--backend") == 0) {
        return cli_parse_backend(cmd, a, val, &so->backend);
    } else if (strcmp(a, "--method") == 0) {
        if (ns_hines_method_from_name(val, &so->method) != NS_OK)
            return cli_usage_error(cmd, "unknown method '%s'", val);
    } else if (strcmp(a, "--threads") == 0) {
        if (!cli_parse_long(cmd, a, val, 0, 4096, &v)) return 2;
        so->threads = (int32_t)v;
    } else if (strcmp(a, "--gpu-lanes") == 0) {
        if (!cli_parse_long(cmd, a, val, 0, 32, &v)) return 2;
        if (v & (v - 1)) return cli_usage_error(cmd, "--gpu-lanes: '%s' is not 0, 1, 2, 4, 8, 16 or 32", val);
        so->gpu_lanes = (int32_t)v;
    } else if (strcmp(a, "--gpu-mechanisms") == 0) {
        if (ns_sim_gpu_mechanisms_from_name(val, &so->gpu_mechanisms) != NS_OK)
            return cli_usage_error(cmd, "--gpu-mechanisms: '%s' is not auto, fused, per-step or per-mechanism", val);
    } else {
        return -1;
    }
    return 0;
}

/* An option with a value; 0, or the exit status (printed). */
static int option_value(sim_args *a, const char *cmd, const char *opt, const char *val) {
    const char **path = NULL; /* the options that name a file */
    int r;
    if (strcmp(opt, "--cells") == 0) {
        if (!cli_parse_long(cmd, opt, val, 1, 100000000LL, &a->cells_per)) return 2;
        a->cells_given = 1;
    } else if (strcmp(opt, "--record-cells") == 0) {
        if (!cli_parse_long(cmd, opt, val, 0, 1000000LL, &a->record_cells)) return 2;
    } else if (strcmp(opt, "--set") == 0 || strcmp(opt, "--tstop") == 0 || strcmp(opt, "--dt") == 0 ||
               strcmp(opt, "--spike-times") == 0) {
        return option_set(a, cmd, opt, val);
    } else if (strcmp(opt, "--iclamp") == 0) {
        return option_iclamp(a, cmd, val);
    } else if (strcmp(opt, "--record") == 0) {
        if (a->n_recs == MAX_ITEMS) return cli_usage_error(cmd, "at most %d --record", MAX_ITEMS);
        if (parse_loc(val, &a->recs[a->n_recs])) return cli_usage_error(cmd, "--record %s: %s", val, ns_last_error());
        a->n_recs++;
    } else if (strcmp(opt, "--checkpoint-at") == 0) {
        return option_checkpoint_at(a, cmd, val);
    } else if ((r = option_sim(&a->so, cmd, opt, val)) >= 0) {
        return r;
    } else if (strcmp(opt, "--network") == 0) path = &a->network_file;
    else if (strcmp(opt, "--input-spikes") == 0) path = &a->input_spikes;
    else if (strcmp(opt, "--params") == 0) path = &a->param_file;
    else if (strcmp(opt, "--out") == 0) path = &a->out;
    else if (strcmp(opt, "--plot") == 0) path = &a->plot;
    else if (strcmp(opt, "--checkpoint") == 0) path = &a->checkpoint;
    else if (strcmp(opt, "--mechanisms") == 0) path = &a->mech_lib;
    else if (strcmp(opt, "--model") == 0) path = &a->model_file;
    else if (strcmp(opt, "--resume") == 0) path = &a->resume;
    else if ((r = cli_lfp_option(cmd, opt, val, &a->lfp)) != 0) return r < 0 ? 2 : 0;
    else return cli_usage_error(cmd, "unknown option '%s'", opt);
    if (path) *path = val;
    return 0;
}

/* The command line into a; -1 to go on, else the exit status (0 after --help). */
static int parse_options(sim_args *a, int argc, char **argv) {
    const char *cmd = "simulate";
    for (int i = 1; i < argc; ++i) {
        const char *opt = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
            printf("%s%s%s%s\n%s", help_text, help_text2, cli_lfp_help, help_text_tail, cli_morph_options_help);
            return 0;
        }
        if (strcmp(opt, "--ra") == 0) a->ra_given = 1;
        if (strcmp(opt, "--cm") == 0) a->cm_given = 1;
        const int r = cli_morph_option(cmd, argc, argv, &i, &a->mo);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (opt[0] != '-') {
            if (a->n_specs == MAX_ITEMS) return cli_usage_error(cmd, "at most %d shapes", MAX_ITEMS);
            a->specs[a->n_specs++] = opt;
        } else if (strcmp(opt, "--json") == 0) {
            a->as_json = 1;
        } else if (strcmp(opt, "--no-progress") == 0) {
            a->no_progress = 1;
        } else if (!val) {
            return cli_usage_error(cmd, "%s needs a value", opt);
        } else {
            ++i;
            const int bad = option_value(a, cmd, opt, val);
            if (bad) return bad;
        }
    }
    return -1;
}

/* The options that go together (or not); 0 or 2 (printed). */
static int check_inputs(const sim_args *a) {
    const char *cmd = "simulate";
    if (a->network_file) {
        if (a->n_specs > 0)
            return cli_usage_error(cmd, "--network takes the cells from its file: no SHAPE arguments ('%s')",
                                   a->specs[0]);
        if (a->cells_given) return cli_usage_error(cmd, "--network takes the cells from its file: no --cells");
        if (a->checkpoint || a->resume)
            return cli_usage_error(cmd, "--checkpoint and --resume: a network's state is not saved yet");
    } else if (a->n_specs == 0)
        return cli_usage_error(cmd, "no morphology given (a file, a directory or `bundled`)");
    if (a->input_spikes && !a->network_file)
        return cli_usage_error(cmd, "--input-spikes needs --network CONFIG.json");
    return 0;
}

/* The run's values: the network's (a SONATA config's run settings), then the
 * --params file's, then the options'; every value in range and a step count
 * that fits, before any work. 0, or the exit status (printed). */
static int read_params(sim_run *r) {
    const char *cmd = "simulate";
    sim_args *a = &r->a;
    if (a->network_file) {
        /* a SONATA config's run settings (tstop, dt, celsius, v_init, spike_threshold) come
         * first; --params, --set, --tstop and --dt override them */
        ns_status nst = a->input_spikes ? ns_network_read_sonata(a->network_file, a->input_spikes, &r->net)
                                        : ns_network_read(a->network_file, &r->net);
        if (nst == NS_OK) nst = ns_network_run_params(r->net, &r->params);
        if (nst != NS_OK) return cli_error("network: %s", ns_last_error());
    }
    const ns_sim_params net_params = r->params;
    if (a->param_file) {
        if (cli_read_text(a->param_file, "parameters", "a parameter file", &r->param_text, &r->param_len)) return 1;
        ns_status st = ns_sim_params_parse(&r->params, r->param_text, r->param_len, a->param_file);
        if (st != NS_OK) return cli_status_error("parameters", st);
    }
    /* the values of the files (network or SONATA config, then --params) before
     * the options: when the run's values fail the check below and these do
     * too, the fault is in a file (exit 1, docs/cli.md), else in an option */
    const ns_sim_params file_params = r->params;
    for (int k = 0; k < a->n_sets; ++k) {
        /* one line of a parameter file: the same parser and the same rules */
        if (!strchr(a->sets[k], '=') || strpbrk(a->sets[k], "\n#"))
            return cli_usage_error(cmd, "%s: '%s' is not KEY=VALUE", a->set_option[k], a->set_value[k]);
        if (ns_sim_params_parse(&r->params, a->sets[k], strlen(a->sets[k]), a->set_option[k]) != NS_OK) {
            /* "OPTION:1: detail" -> "OPTION VALUE: detail" */
            const char *msg = ns_last_error();
            const size_t n = strlen(a->set_option[k]);
            if (strncmp(msg, a->set_option[k], n) == 0 && strncmp(msg + n, ":1: ", 4) == 0) msg += n + 4;
            return cli_usage_error(cmd, "%s %s: %s", a->set_option[k], a->set_value[k], msg);
        }
    }
    if (a->mech_lib && !a->model_file) return cli_usage_error(cmd, "--mechanisms LIB needs --model FILE");
    if ((a->checkpoint || a->resume) && a->model_file)
        return cli_usage_error(cmd, "--checkpoint and --resume: a model's mechanism states are not saved yet");
    char why[600];
    if (!params_usable(&r->params, &r->n_steps, why, sizeof why)) {
        int64_t ignored;
        char file_why[600];
        if ((a->param_file || a->network_file) && !params_usable(&file_params, &ignored, file_why, sizeof file_why)) {
            const int net_fault = a->network_file && !params_usable(&net_params, &ignored, file_why, sizeof file_why);
            return cli_error("parameters: %s: %s", net_fault || !a->param_file ? a->network_file : a->param_file,
                             file_why);
        }
        return cli_usage_error(cmd, "%s", why);
    }
    return 0;
}

/* The checkpoint times as step counts, in order, within the run; 0 or 2 (printed). */
static int checkpoint_steps(sim_run *r) {
    const char *cmd = "simulate";
    const sim_args *a = &r->a;
    if (a->n_ck > 0 && !a->checkpoint) return cli_usage_error(cmd, "--checkpoint-at needs --checkpoint FILE");
    for (int k = 0; k < a->n_ck; ++k) {
        int64_t *s = r->ck_steps;
        if (ns_sim_count_steps(a->ck_times[k], r->params.dt, &s[k]) != NS_OK)
            return cli_usage_error(cmd, "--checkpoint-at: %s", ns_last_error());
        if (s[k] < 1 || s[k] > r->n_steps)
            return cli_usage_error(cmd, "--checkpoint-at: %g ms is not in (0, tstop = %g ms] (steps of %g ms)",
                                   a->ck_times[k], r->params.tstop, r->params.dt);
        if (k > 0 && s[k] <= s[k - 1])
            return cli_usage_error(cmd, "--checkpoint-at: times must increase by at least a step (%g ms after %g ms)",
                                   a->ck_times[k], a->ck_times[k - 1]);
    }
    if ((a->checkpoint || a->resume) && cli_mpi_active())
        return cli_usage_error(cmd, "--checkpoint and --resume run in one process (not under MPI)");
    return 0;
}

/* The paths written during and after the run, refused before it when they
 * cannot be taken; 0, or the exit status (printed). */
static int check_outputs(sim_run *r) {
    const sim_args *a = &r->a;
    if (a->out || a->plot) {
        if (!cli_sim_output_stem(a->out, a->plot, r->stem, sizeof r->stem))
            return cli_usage_error("simulate", "%s: the path is longer than the %d bytes an output prefix may have",
                                   a->out ? "--out" : "--plot", (int)sizeof r->stem - 2);
        if (cli_sim_check_output_folder(r->stem)) return 1; /* every rank: the same answer on a shared file system */
    }
    /* the plot and the checkpoint are written after (or during) the run:
     * a path they cannot take is refused before it, as for --out */
    const char *later[2] = {a->plot, a->checkpoint};
    for (int k = 0; k < 2; ++k) {
        struct stat ls;
        if (!later[k]) continue;
        if (stat(later[k], &ls) == 0 && S_ISDIR(ls.st_mode))
            return cli_error("%s: cannot write: it is a directory", later[k]);
        if (cli_sim_check_output_folder(later[k])) return 1;
    }
    cli_plot_check(a->plot); /* without matplotlib: the warning now, the results still written */
    return 0;
}

/* The discretisation's per-section statements (nseg, Ra, the regions' cm for d_lambda) come
 * from the same parameter text; --cm and --ra given on the command line override them.
 * 0, or 1 (printed). */
static int discretisation_text(sim_run *r) {
    sim_args *a = &r->a;
    if (!a->ra_given) a->mo.disc.Ra = r->params.Ra;
    if (!(a->param_file || a->n_sets > 0 || a->cm_given || a->ra_given)) return 0;
    size_t len = a->param_file ? r->param_len : 0, cap = len + 1024;
    char *text = malloc(cap);
    if (text && len) memcpy(text, r->param_text, len);
    for (int k = 0; text && k < a->n_sets + 2; ++k) {
        char one[200] = "";
        if (k < a->n_sets) snprintf(one, sizeof one, "\n%s", a->sets[k]);
        else if (k == a->n_sets && a->cm_given) snprintf(one, sizeof one, "\nall.cm = %.17g", a->mo.disc.cm);
        else if (k == a->n_sets + 1 && a->ra_given) snprintf(one, sizeof one, "\nRa = %.17g", a->mo.disc.Ra);
        const size_t n1 = strlen(one);
        if (len + n1 + 1 >= cap) {
            char *grown = realloc(text, cap = len + n1 + 1024);
            if (!grown) break;
            text = grown;
        }
        memcpy(text + len, one, n1 + 1);
        len += n1;
    }
    r->disc_text = text;
    if (!text) return cli_error("out of memory");
    a->mo.disc.sections = text;
    a->mo.disc.sections_length = len;
    a->mo.disc.sections_name = a->param_file ? a->param_file : "--set";
    return 0;
}

/* The default stimulus (soma:5:90:auto; none in a network, which is driven by
 * its sources) and recording (soma). */
static void default_sites(sim_args *a) {
    if (a->network_file && a->n_stims == 0) a->no_stim = 1;
    if (a->n_stims == 0 && !a->no_stim) {
        parse_loc("soma", &a->stims[0].loc);
        a->stims[0].del = 5.0;
        a->stims[0].dur = 90.0;
        a->stims[0].amp_auto = 1;
        a->n_stims = 1;
    }
    if (a->no_stim) a->n_stims = 0;
    if (a->n_recs == 0) {
        parse_loc("soma", &a->recs[0]);
        a->n_recs = 1;
    }
}

/* The command line read and checked, the run's values and texts ready; -1 to
 * go on, else the exit status (printed; 0 after --help). */
int cli_sim_configure(sim_run *r, int argc, char **argv) {
    sim_args *a = &r->a;
    int rc = parse_options(a, argc, argv);
    if (rc >= 0) return rc;
    if ((rc = check_inputs(a)) != 0 || (rc = read_params(r)) != 0 || (rc = checkpoint_steps(r)) != 0 ||
        (rc = check_outputs(r)) != 0 || (rc = discretisation_text(r)) != 0)
        return rc;
    default_sites(a);
    return -1;
}
