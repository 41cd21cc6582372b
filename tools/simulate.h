/* neurosolve simulate (cmd_simulate.c, simulate_options.c): the command
 * line of a run and what is read and built for it. */
#ifndef NS_TOOLS_SIMULATE_H
#define NS_TOOLS_SIMULATE_H

#include "shapes.h"

#define MAX_ITEMS 64


typedef struct loc_spec {
    char text[128];
    ns_location loc; /* the one location grammar (include/neurosolve/morph.h) */
} loc_spec;

typedef struct stim_spec {
    loc_spec loc;
    double del, dur, amp;
    int amp_auto;
} stim_spec;

/* The command line of a run (parse_options). */
typedef struct sim_args {
    cli_morph_options mo;
    ns_sim_options so;
    cli_lfp lfp;
    const char *specs[MAX_ITEMS];
    int n_specs;
    /* --set, --tstop, --dt and --spike-times as parameter lines; messages name the option typed */
    const char *sets[MAX_ITEMS], *set_option[MAX_ITEMS], *set_value[MAX_ITEMS];
    char set_text[MAX_ITEMS][160];
    int n_sets;
    const char *param_file, *out, *plot, *checkpoint, *resume, *mech_lib, *model_file, *network_file, *input_spikes;
    int as_json, no_progress, ra_given, cm_given, no_stim, cells_given;
    long long cells_per, record_cells;
    stim_spec stims[MAX_ITEMS];
    loc_spec recs[MAX_ITEMS];
    int n_stims, n_recs;
    double ck_times[MAX_ITEMS];
    int n_ck;
} sim_args;

/* A run: its command line, what is read and built for it and how far it got;
 * run_free releases it whichever way the run ends. */
typedef struct sim_run {
    sim_args a;
    ns_sim_params params;
    int64_t n_steps, ck_steps[MAX_ITEMS];
    char stem[4000];
    /* the network, read before the parameters (a SONATA config's run settings come first) */
    ns_network_t *net;
    /* the --params file's text, read once: the parameters and the discretisation's
     * per-section statements both come from it */
    char *param_text, *disc_text;
    size_t param_len;
    cli_shape_set set;
    const ns_cell_t **cells;
    long long n_cells;
    int32_t *cell_shape; /* the shape of each cell */
    ns_mech_library_t *lib;
    ns_sim_model_t *model;
    ns_sim_t *sim; /* one ns_sim_t, or spread over MPI processes */
    char **site_names;
    int n_sites;
    long long steps, first_step, done_steps;
    ns_status run_st;
    int stopped_by; /* the signal that ended the run early, or 0 */
} sim_run;

/* The command line read and checked, the run's values and texts ready; -1 to
 * go on, else the exit status (printed; 0 after --help). */
int cli_sim_configure(sim_run *r, int argc, char **argv);

#endif
