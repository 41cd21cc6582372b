/* neurosolve: cable simulation of populations of cells (docs/simulation.md).
 *
 * Model: every simulation runs a model of NMODL mechanisms (ns_sim_model
 * below); without one, the parameters' membrane keys stand for a model of
 * the built-in hh and pas (NEURON's hh.mod and passive.mod, translated),
 * with a specific capacitance and parameters per region (SWC type);
 * current clamps with IClamp's semantics.
 *
 * Time stepping: NEURON's default fixed step (secondorder = 0), in NEURON's
 * order of operations: t += dt/2; currents and their slopes (from v and
 * v + 0.001 mV) assembled with the axial terms and cm * 1e-3/dt; the Hines
 * solve; v += the solution; t += dt/2; then the gates from the new v.
 * With the same discretisation the voltages agree with NEURON to rounding.
 *
 * Cells are numbered 0 .. n_cells-1 in the order given to ns_sim_create;
 * every per-cell result (spikes, recordings, errors) names that global index,
 * so that a distributed run can later keep the same numbering (issue 9).
 *
 * Units follow NEURON: ms, mV, um, uF/cm^2, S/cm^2, nA, degC. */
#ifndef NEUROSOLVE_CABLE_H
#define NEUROSOLVE_CABLE_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/dist.h"
#include "neurosolve/morph.h"
#include "neurosolve/hines.h"
#include "neurosolve/nmodl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Regions: where a compartment takes its membrane parameters from, by the
 * SWC type of its section (1 soma, 2 axon, 3 basal, 4 apical, others). */
typedef enum ns_region {
    NS_REGION_SOMA = 0,
    NS_REGION_AXON = 1,
    NS_REGION_BASAL = 2,
    NS_REGION_APICAL = 3,
    NS_REGION_OTHER = 4,
    NS_REGION_COUNT = 5
} ns_region;

NS_API ns_region ns_region_of_swc_type(int32_t swc_type);
NS_API const char *ns_region_name(ns_region region);

/* Membrane of one region: shorthand for a model of the built-in hh and pas
 * (ns_sim_options.model NULL: `hh` inserts hh with gnabar_hh = gnabar, ...,
 * ena and ek; `pas` inserts pas). Defaults are NEURON's (hh.mod,
 * passive.mod, the na and k ions): hh inserted, pas not. */
typedef struct ns_membrane {
    double cm;      /* [uF/cm^2] specific capacitance, 1 */
    int hh;         /* 1: NEURON's hh mechanism is inserted */
    double gnabar;  /* [S/cm^2] gnabar_hh, 0.12 */
    double gkbar;   /* [S/cm^2] gkbar_hh, 0.036 */
    double gl;      /* [S/cm^2] gl_hh, 0.0003 */
    double el;      /* [mV] el_hh, -54.3 */
    double ena;     /* [mV] 50 */
    double ek;      /* [mV] -77 */
    int pas;        /* 1: NEURON's pas mechanism is inserted */
    double g_pas;   /* [S/cm^2] 0.001 */
    double e_pas;   /* [mV] -70 */
} ns_membrane;

typedef struct ns_sim_params {
    ns_membrane region[NS_REGION_COUNT];
    double celsius;         /* [degC] 6.3 (NEURON's default) */
    double v_init;          /* [mV] -65 */
    double dt;              /* [ms] 0.025 */
    int usetable;           /* usetable_hh: 1 (rates from the 1-mV table), 0 (exact) */
    double spike_threshold; /* [mV] -20: soma spikes are upward crossings of it */
    int netcon_spikes;      /* soma spike times: 0 (default) the crossing interpolated between the
                               steps; 1 NEURON's NetCon convention, the end of the first step with
                               v > spike_threshold plus 1e-10 ms (docs/simulation.md, "Spike times") */
    /* Read by callers, not by ns_sim_create (kept here so that one parameter
     * file describes a run): */
    double Ra;              /* [ohm cm] 35.4: pass to ns_discretize_options.Ra */
    double tstop;           /* [ms] 100 */
} ns_sim_params;

NS_API void ns_sim_params_init(ns_sim_params *params);

/* v_init and spike_threshold are membrane potentials: |value| at most this
 * [mV] (v_init = 1e300 ran to the end with v near 1e299). */
#define NS_SIM_MAX_POTENTIAL 1e4

/* Set one parameter by name (the parameter file's keys, docs/simulation.md):
 *   REGION.NAME with REGION one of soma, axon, basal, apical, other, dend
 *   (basal and apical) or all, and NAME one of cm, hh, gnabar_hh, gkbar_hh,
 *   gl_hh, el_hh, ena, ek, pas, g_pas, e_pas (hh and pas take 0 or 1);
 *   celsius, v_init, dt, usetable_hh, spike_threshold, netcon_spikes (0 or 1),
 *   Ra, tstop. The discretisation's per-section keys LOC.nseg, LOC.Ra (LOC a
 *   region, sec:K or swc:ID) and SEC.start_diam are checked and otherwise ignored: give
 *   the same text to ns_discretize_options.sections.
 * Unknown names and out-of-range values (negative cm or conductance, dt <= 0,
 * Ra <= 0, |v_init| or |spike_threshold| above NS_SIM_MAX_POTENTIAL,
 * non-finite values) give NS_ERR_INVALID_ARGUMENT naming the key. The
 * parameter file's numbers are read by ns_number_parse (neurosolve/number.h). */
NS_API ns_status ns_sim_params_set(ns_sim_params *params, const char *key, double value);

/* Parse `key = value` lines ('#' starts a comment; blank lines are skipped)
 * and apply them in order. Errors read "NAME:LINE: reason". */
NS_API ns_status ns_sim_params_parse(ns_sim_params *params, const char *text, size_t length,
                                     const char *name);
NS_API ns_status ns_sim_params_read(ns_sim_params *params, const char *path);

/* Check a whole parameter set (ns_sim_create does it too). */
NS_API ns_status ns_sim_params_check(const ns_sim_params *params);

/* ------------------------------------------------------------ models
 * A model says which mechanisms of an NMODL library (ns_mech_library_open,
 * docs/mechanisms.md) are inserted where, with which parameters and ion
 * values (docs/simulation.md, "Models: mechanisms from NMODL"). Given to
 * ns_sim_create through ns_sim_options.model, it replaces the model that the
 * membrane keys of ns_sim_params stand for (hh, pas and their keys are then
 * ignored; cm, celsius, v_init, dt, spike_threshold, Ra and tstop still
 * apply).
 *
 * `where` is a region selector: soma, axon, basal, apical, other, dend
 * (basal and apical) or all; or one section: sec:K (section index K of
 * ns_cell_get_section) or swc:ID (the section whose first SWC point has id
 * ID; one that no shape has is refused), or one segment of it: sec:K(X),
 * swc:ID(X) (NEURON's sec(x), the segment containing x). Statements apply in the order given, node by
 * node (a later one overrides an earlier one where both apply). An `expr` is
 * a number or an expression in d, the path distance [um] from the root
 * section's middle (NEURON's distance(soma(0.5), seg)) to the compartment's
 * centre: + - * / ^, parentheses, comparisons (1 or 0), && || !, exp log
 * sqrt fabs pow min max. The library must stay open while a model or a
 * simulation made with it exists; the model may be destroyed after
 * ns_sim_create. */
typedef struct ns_sim_model ns_sim_model_t;

/* library may be NULL: the built-in mechanisms only (pas, hh, ExpSyn, Exp2Syn, generated
 * from NEURON's files; a library's mechanism of the same name takes precedence). */
NS_API ns_status ns_sim_model_create(const ns_mech_library_t *library, ns_sim_model_t **out);
NS_API void ns_sim_model_destroy(ns_sim_model_t *model);
/* Insert a density mechanism of the library (NS_ERR_INVALID_ARGUMENT naming
 * the library's mechanisms when it has no such one). */
NS_API ns_status ns_sim_model_insert(ns_sim_model_t *model, const char *where, const char *mechanism);
/* Set a RANGE parameter in NEURON's naming, NAME_MECH (gNaTs2_tbar_NaTs2_t,
 * g_pas), or an ion's value: eX (reversal potential [mV]), Xi, Xo (initial
 * concentrations [mM]) for an ion X (na, k, ca, cl or one a mechanism of the
 * library declares). The mechanism must be inserted wherever the statement
 * applies (checked at ns_sim_create, as NEURON checks a section). */
NS_API ns_status ns_sim_model_set(ns_sim_model_t *model, const char *where, const char *name, const char *expr);
/* A GLOBAL of a mechanism, NAME_MECH (usetable_hh). */
NS_API ns_status ns_sim_model_set_global(ns_sim_model_t *model, const char *name, double value);
/* A FUNCTION_TABLE's values (NEURON's hoc table_NAME()), by NAME_MECH (tabninf_kfasttab):
 * a copy of `table` (ns_mech_ftable in neurosolve/mechanism.h: the values over the table's
 * 1 to 4 arguments, each by its increasing abscissae or an even range). A simulation refuses
 * a model whose mechanism (or synapse type) has a FUNCTION_TABLE without values. */
NS_API ns_status ns_sim_model_set_function_table(ns_sim_model_t *model, const char *name,
                                                 const ns_mech_ftable *table);
/* Model text: one statement per line, '#' comments:
 *   REGION.insert = MECH [MECH ...]
 *   REGION.NAME = EXPR
 *   global.NAME = NUMBER
 * Errors read "NAME:LINE: reason". */
NS_API ns_status ns_sim_model_parse(ns_sim_model_t *model, const char *text, size_t length, const char *name);
NS_API ns_status ns_sim_model_read(ns_sim_model_t *model, const char *path);

/* ------------------------------------------------------------ simulation */

/* How the GPU loops and the CPU loop run a model's mechanisms
 * (docs/simulation.md, "Models: the fused loop"; the name is the GPU's,
 * where it came first). */
typedef enum ns_sim_gpu_mechanisms {
    NS_SIM_GPU_MECHANISMS_AUTO = 0,     /* fused where the rule allows (built-in density mechanisms
                                           only; a network of built-in synapses only), else per
                                           step (as PER_STEP) */
    NS_SIM_GPU_MECHANISMS_FUSED = 1,    /* GPU: inside the onchip or tree kernel, many steps per launch; CPU:
                                           inside the loop's own passes (the CPU rule also needs hh's
                                           rate table); a model the rule does not allow is refused
                                           (NS_ERR_UNSUPPORTED) */
    NS_SIM_GPU_MECHANISMS_PER_STEP = 2, /* GPU: launches per phase around one-step tree launches:
                                           a library's density mechanisms in one launch per phase
                                           where it has them (mechanism ABI 6), the others one per
                                           mechanism; CPU: the generated loops, a call per mechanism
                                           and phase (any mechanism library, any synapse type) */
    NS_SIM_GPU_MECHANISMS_PER_MECHANISM = 3 /* GPU: per step, one launch per mechanism and phase
                                           (what per-step did before ABI 6); CPU: as per-step */
} ns_sim_gpu_mechanisms;

typedef struct ns_sim_options {
    ns_backend backend;      /* NS_BACKEND_AUTO: CUDA when usable, else CPU */
    ns_hines_method method;  /* CPU: sequential or openmp; CUDA: onchip (a model of the built-in
                                pas and hh only) or tree; docs/simulation.md, "GPU loops" */
    int32_t threads;         /* CPU threads; 0 = OpenMP's default */
    int32_t gpu_lanes;       /* onchip: lanes per cell, 1, 2, 4, ..., 32 (more where a shape
                                does not fit that count); 0 = automatic */
    int32_t record_every;    /* steps between recorded samples (>= 1), 1 */
    int32_t check_every;     /* steps between NaN/Inf checks of v (>= 1), 1 */
    int32_t device;          /* CUDA backend: device ordinal, or NS_DEVICE_CURRENT (the default):
                                the device current on the calling thread at create; every call
                                of the simulation runs on it and restores the caller's device */
    const ns_sim_model_t *model; /* NULL: the built-in hh and pas as ns_sim_params' membrane keys
                                    say (its shorthand); else the model's mechanisms (read during
                                    ns_sim_create only) */
    const ns_sim_model_t *const *shape_models; /* NULL, or one model per shape (n_shapes
                                    entries): shape k's mechanisms come from shape_models[k],
                                    from `model` where an entry is NULL (every shape then needs
                                    one). All of one mechanism library; a GLOBAL set by two of
                                    them must agree. Read during ns_sim_create only. */
    ns_sim_gpu_mechanisms gpu_mechanisms; /* a model: how the GPU loops or the CPU loop
                                    runs its mechanisms (docs/simulation.md, "Models"); AUTO by
                                    default */
    const ns_dist_t *dist;       /* NULL: one process. Else the processes of a distribution
                                    (neurosolve/dist.h; MPI: ns_dist_from_comm in neurosolve/mpi.h):
                                    "Distributed simulations" below */
} ns_sim_options;

NS_API void ns_sim_options_init(ns_sim_options *options);

typedef struct ns_sim ns_sim_t;

/* A population of n_cells cells drawn from n_shapes discretised cells
 * (cell c has shape cell_shape[c], or c % n_shapes when cell_shape is NULL),
 * all with the same parameters. The shapes are read during the call only.
 * The simulation starts initialised (as after ns_sim_init). */
NS_API ns_status ns_sim_create(int32_t n_shapes, const ns_cell_t *const *shapes, int64_t n_cells,
                               const int32_t *cell_shape, const ns_sim_params *params,
                               const ns_sim_options *options, ns_sim_t **out);
NS_API void ns_sim_destroy(ns_sim_t *sim);

/* NEURON's IClamp at a compartment of a cell: i = amplitude [nA] while
 * delay <= t < delay + duration [ms], evaluated at the middle of each step.
 * A compartment outside the cell gives NS_ERR_INVALID_ARGUMENT. Stimuli,
 * recordings and ns_sim_init may be added at any time between runs. */
NS_API ns_status ns_sim_add_iclamp(ns_sim_t *sim, int64_t cell, int32_t compartment, double delay,
                                   double duration, double amplitude);

/* ------------------------------------------------------------ networks
 * Synapses, spike sources and connections with NEURON's NetCon semantics
 * (docs/networks.md), on the CPU loop and on the GPU's tree loop (cells that
 * run onchip move there at the ns_sim_init that builds the network:
 * docs/networks.md, "The GPU loop").
 *
 * Synapses, sources and connections take effect at the next ns_sim_init:
 * ns_sim_advance refuses to run (NS_ERR_INVALID_ARGUMENT) while any was
 * added or changed since. Identifiers count from 0 in the order of
 * creation, synapses and sources each in their own numbering. */

/* A point process with NET_RECEIVE (ExpSyn, Exp2Syn or a library's
 * POINT_PROCESS), or one without NET_RECEIVE that has POINTERs (a gap
 * junction: ns_sim_set_pointer), at a compartment of a cell, with the mechanism's default
 * parameters; its currents [nA] scale by 1e2/area of the compartment (area
 * 100 um^2 at a zero-area node, as NEURON). The model's catalogue
 * (ns_sim_model_create's: the built-ins without ns_sim_options.model) names the
 * mechanisms (NS_ERR_INVALID_ARGUMENT listing them when there is none of
 * that name, or when it is a density mechanism or has no NET_RECEIVE). */
NS_API ns_status ns_sim_add_synapse(ns_sim_t *sim, int64_t cell, int32_t compartment, const char *mechanism,
                                    int64_t *synapse);
/* Set a PARAMETER of a synapse by its NMODL name (tau2, e; an array's
 * element dur[0]): finite values only; an unknown name is refused naming the
 * mechanism's parameters. "R.id1", "R.id2", "R.id3", "R.seq" set RANDOM
 * variable R's nrnran123 stream (NEURON 9's NMODLRandom get_ids and get_seq:
 * integers, the ids below 2^32, seq = 4 seq + which below 2^34) before its
 * INITIAL; unset ones keep the defaults (docs/mechanisms.md, "Random
 * numbers"). */
NS_API ns_status ns_sim_synapse_set(ns_sim_t *sim, int64_t synapse, const char *name, double value);
/* NEURON's setpointer: the POINTER `pointer` of a synapse (its NMODL name,
 * vgap) reads and writes variable `var` of compartment `compartment` of
 * `cell`: "v" (the membrane potential: a gap junction), an ion's "eX", "Xi",
 * "Xo" or "iX", or FIELD_MECH of a density mechanism inserted there
 * ("m_hh"), the names of ns_sim_get_model_var. Every POINTER of a placed
 * synapse must be connected before ns_sim_init. On the CPU loop a target in
 * another lane block is read through a copy made at each step's start; on
 * the GPU loop in place (docs/mechanisms.md, "POINTER"). */
NS_API ns_status ns_sim_set_pointer(ns_sim_t *sim, int64_t synapse, const char *pointer, int64_t cell,
                                    int32_t compartment, const char *var);

/* NEURON's setpointer for a density mechanism: POINTER `pointer`, named
 * POINTER_MECH as NEURON's hoc names it ("pv_dipole": POINTER pv of SUFFIX
 * dipole), of the instance at compartment `compartment` of `cell` reads and
 * writes `var` at `target_compartment` of `target_cell` (the names of
 * ns_sim_set_pointer: "v", an ion's "eX", "Xi", "Xo", "iX", a density
 * mechanism's FIELD_MECH inserted there). Every instance of a mechanism with
 * POINTERs must have each connected before ns_sim_init (the error names the
 * first that is not); setting one again replaces it. A target on another
 * cell is read through a copy made at each step's start (writes do not reach
 * it): docs/mechanisms.md, "POINTER". */
NS_API ns_status ns_sim_set_model_pointer(ns_sim_t *sim, int64_t cell, int32_t compartment, const char *pointer,
                                          int64_t target_cell, int32_t target_compartment, const char *var);

/* A spike detector (NEURON's NetCon source v(x) with a threshold): checked
 * at t = 0 and at every step end, a spike is a check at which v of the
 * compartment is above threshold [mV] and was not at the previous one (none
 * before t = 0: v_init above it fires at once). Its time is the check's time
 * plus 1e-10 ms, not interpolated, as NEURON's fixed step records it. */
NS_API ns_status ns_sim_add_detector(ns_sim_t *sim, int64_t cell, int32_t compartment, double threshold,
                                     int64_t *source);
/* A synapse's net_event as a spike source (NEURON's NetCon from a point
 * process: an ARTIFICIAL_CELL such as IntFire1, or any point process whose
 * NET_RECEIVE calls net_event): each net_event(t) a spike at exactly t, its
 * connections' events at t + delay (delay >= dt). One source per synapse;
 * docs/networks.md, "Events". */
NS_API ns_status ns_sim_add_point_source(ns_sim_t *sim, int64_t synapse, int64_t *source);
/* A train of given spike times [ms] (finite, >= 0; copied and sorted), as
 * NEURON's VecStim or a NetStim without noise: each a spike at exactly
 * that time. */
NS_API ns_status ns_sim_add_spike_source(ns_sim_t *sim, const double *times, int64_t count, int64_t *source);
/* A Poisson source: a homogeneous Poisson process of rate_hz [Hz] (0 to
 * 1e6) on (start, stop) [ms] (0 <= start <= stop; stop may be INFINITY),
 * its times drawn from its own random stream of `seed`: the same spikes for
 * a seed whatever the thread count or the ns_sim_advance calls; drawn again
 * from the start at each ns_sim_init (docs/networks.md). */
NS_API ns_status ns_sim_add_poisson_source(ns_sim_t *sim, double rate_hz, double start, double stop, uint64_t seed,
                                           int64_t *source);
/* NEURON's NetCon from a source to a synapse: each spike of the source at
 * time ts gives an event at ts + delay [ms] (delay > 0) that calls the
 * synapse's NET_RECEIVE with `weight` (its units: uS for ExpSyn and
 * Exp2Syn) at the start of the first step from t with ts + delay <= t + dt/2. */
NS_API ns_status ns_sim_connect(ns_sim_t *sim, int64_t source, int64_t synapse, double weight, double delay);
/* The spikes of a source so far [ms], ascending (a train: its times up to
 * the simulation's time). NULL and 0 for an unknown source. */
NS_API const double *ns_sim_source_spikes(const ns_sim_t *sim, int64_t source, int64_t *count);
/* The cell of a detector; -1 for a train, a Poisson source or a point
 * source, -2 for an unknown source. */
NS_API int64_t ns_sim_source_cell(const ns_sim_t *sim, int64_t source);
/* Counts: synapses, sources, connections. */
NS_API int64_t ns_sim_synapses(const ns_sim_t *sim);
NS_API int64_t ns_sim_sources(const ns_sim_t *sim);
NS_API int64_t ns_sim_connections(const ns_sim_t *sim);

/* Record v of a compartment every record_every steps (and at t = 0); *site
 * receives the recording's index (column of ns_sim_traces). */
NS_API ns_status ns_sim_add_recording(ns_sim_t *sim, int64_t cell, int32_t compartment, int32_t *site);

/* NEURON's finitialize(v_init): t = 0, v = v_init everywhere, gates at their
 * steady state, recordings and spikes cleared, sample 0 recorded. */
NS_API ns_status ns_sim_init(ns_sim_t *sim);

/* Advance every cell by `steps` fixed steps. NaN or Inf in v stops the run
 * with NS_ERR_NOT_FINITE naming the cell, compartment, section and time
 * (the state is then undefined until ns_sim_init); the traces and spikes
 * then hold what every cell reached before the faulty step (ns_sim_traces'
 * sample count says how far). Any other failure keeps the results of the
 * calls before the failed one. */
NS_API ns_status ns_sim_advance(ns_sim_t *sim, int64_t steps);

/* The most steps one run may take: step counts are exact in a double. */
#define NS_SIM_MAX_STEPS (INT64_C(1) << 53)

/* Steps of dt to reach tstop from t = 0 (NEURON's run: round(tstop / dt)).
 * NS_ERR_INVALID_ARGUMENT, naming both values, unless dt > 0, tstop >= 0,
 * both finite and the count at most NS_SIM_MAX_STEPS (dt = 1e-300 is refused
 * here instead of overflowing llround). ns_sim_params_check applies it to
 * params.tstop and params.dt. */
NS_API ns_status ns_sim_count_steps(double tstop, double dt, int64_t *steps);

/* ns_sim_count_steps for the simulation's dt: 0 for tstop <= 0, -1 when the
 * count is out of range (ns_last_error() says why). */
NS_API int64_t ns_sim_steps_for(const ns_sim_t *sim, double tstop);

NS_API double ns_sim_time(const ns_sim_t *sim);    /* [ms] NEURON's t after the steps so far */
NS_API int64_t ns_sim_step_count(const ns_sim_t *sim);
NS_API int64_t ns_sim_cells(const ns_sim_t *sim);
NS_API int64_t ns_sim_compartments(const ns_sim_t *sim); /* summed over the cells */
/* The minimum bytes one step must move per compartment, averaged over the
 * compartments: v, the matrix's constant coefficients, each mechanism
 * instance's states (read and written) and RANGE parameters (read), the ions'
 * values (docs/simulation.md, "Bytes per compartment-step"); 0 for NULL. */
NS_API double ns_sim_step_min_bytes(const ns_sim_t *sim);
NS_API ns_backend ns_sim_backend(const ns_sim_t *sim);
/* The resolved method; a CUDA simulation whose shapes use both GPU loops
 * (onchip and tree: docs/simulation.md) reports NS_HINES_AUTO. */
NS_API ns_hines_method ns_sim_method(const ns_sim_t *sim);
/* Lanes per cell of the onchip loop: the common count of its shape groups,
 * 0 when no shape runs onchip, -1 when the groups differ. */
NS_API int32_t ns_sim_gpu_lanes(const ns_sim_t *sim);
/* How a simulation of a model runs its mechanisms: FUSED, PER_STEP or (where
 * asked for) PER_MECHANISM (the resolved ns_sim_options.gpu_mechanisms, one
 * rule for the GPU loops and the CPU loop); AUTO without a model. */
NS_API ns_sim_gpu_mechanisms ns_sim_gpu_mechanisms_of(const ns_sim_t *sim);
/* 1 where the GPU's per-step path ran the last advance's last part as one captured step replayed
 * (a CUDA graph, docs/simulation.md "Models: the fused loop"), else 0; *why (when not NULL) says
 * why CUDA refused the capture, "" where it did not or none was tried. */
NS_API int ns_sim_gpu_graph_of(const ns_sim_t *sim, const char **why);
/* "auto", "fused", "per-step", "per-mechanism"; NULL for other values. */
NS_API const char *ns_sim_gpu_mechanisms_name(ns_sim_gpu_mechanisms m);
NS_API ns_status ns_sim_gpu_mechanisms_from_name(const char *name, ns_sim_gpu_mechanisms *out);

/* The spike-detection compartment of a cell: the root section at x = 0.5. */
NS_API int32_t ns_sim_spike_compartment(const ns_sim_t *sim, int64_t cell);

/* Recorded voltages [mV], row-major: sample s, site k at
 * traces[s * sites + k], at t = s * record_every * dt. Owned by the sim;
 * valid until the next call that changes the sim. */
NS_API const double *ns_sim_traces(const ns_sim_t *sim, int64_t *samples, int32_t *sites);

/* Soma spike times of a cell [ms]: upward crossings of spike_threshold at the
 * spike compartment, linearly interpolated between the two steps, or with
 * ns_sim_params.netcon_spikes NEURON's NetCon times (the end of the first
 * step above the threshold plus 1e-10 ms). */
NS_API const double *ns_sim_spikes(const ns_sim_t *sim, int64_t cell, int64_t *count);

/* v of one cell (an array of the cell's compartment count; NULL: nothing).
 * The mechanisms' variables (hh's gates m_hh, h_hh, n_hh like any other):
 * ns_sim_get_model_var. Not const: a GPU simulation first brings its host
 * copy of the state up to date. */
NS_API ns_status ns_sim_get_state(ns_sim_t *sim, int64_t cell, double *v);

/* Set v of one cell (an array of the cell's compartment count; NULL leaves
 * it as it is). Values must be finite. A GPU simulation copies it to the
 * device before its next step. Time, step count and results are not
 * changed (checkpoints use it and ns_sim_set_model_var). */
NS_API ns_status ns_sim_set_state(ns_sim_t *sim, int64_t cell, const double *v);

/* A variable of the model's mechanisms or ions in one cell (host array of the
 * cell's compartment count), by NEURON's name: FIELD_MECH for any field of an
 * inserted mechanism (parameter, assigned or state: m_hh, m_NaTs2_t,
 * gIhbar_Ih, ica_Ca_HVA), NaN at compartments without the mechanism; or an
 * ion's eX, Xi, Xo (every compartment) and iX (its total current, kept only
 * where some mechanism reads it: else NS_ERR_UNSUPPORTED). An unknown name is
 * refused naming the names there are. A GPU simulation copies the cell's
 * values from the device. */
NS_API ns_status ns_sim_get_model_var(ns_sim_t *sim, int64_t cell, const char *name, double *values);

/* Write a variable of ns_sim_get_model_var's names in one cell (host array of
 * the cell's compartment count; the entries at compartments without the
 * mechanism are ignored, the others must be finite). Takes effect at the next
 * step; time, step count and results are not changed. A state (m_hh) may be
 * set freely; a new value of a parameter or an ion's array makes the loops
 * read it per compartment from then on (the fused paths load uniform values
 * once), and is refused (NS_ERR_UNSUPPORTED) for a cell in the GPU's onchip
 * loop, whose kernel has no per-step path; the values they already hold are
 * taken everywhere (a checkpoint restored). An assigned variable the
 * mechanism computes before it reads it is overwritten at the next step. */
NS_API ns_status ns_sim_set_model_var(ns_sim_t *sim, int64_t cell, const char *name, const double *values);

/* ------------------------------------------- the whole state, in place
 * For coupling a simulation to other code (extracellular fields, gap
 * junctions, another simulator) between ns_sim_advance calls without a
 * host round trip (docs/api.md, "Simulation state on the device").
 *
 * The variable is v (a mechanism's: ns_sim_state_field); `flat` holds one value per
 * compartment of the population in the Flat order: cell c's compartment i
 * at ns_sim_cell_offset(sim, c) + i, ns_sim_compartments(sim) in all.
 * `flat` lives where the simulation's state lives:
 *   - CUDA simulation: device memory of the simulation's GPU; the copy is
 *     queued on `stream` (a cudaStream_t of that GPU, NULL: the legacy
 *     default stream) and the call returns without waiting. The next
 *     ns_sim_advance (and any host accessor) waits for it, so a caller may
 *     read, change on its stream and write back between advances.
 *   - CPU simulation: host memory; `stream` must be NULL.
 * Written values take effect at the next step; a non-finite value makes that
 * step fail as a NaN of the simulation itself does (the CUDA call cannot
 * check device values without waiting). A wrong pointer, a stream of another
 * GPU or an unknown variable is refused naming the argument. */
typedef enum ns_sim_var {
    NS_SIM_VAR_V = 0, /* membrane potential [mV] */
    NS_SIM_VAR_COUNT
} ns_sim_var;

/* First compartment of `cell` in the Flat order (cell == ns_sim_cells(sim)
 * gives the total); -1 when out of range. */
NS_API int64_t ns_sim_cell_offset(const ns_sim_t *sim, int64_t cell);
NS_API ns_status ns_sim_read_var(ns_sim_t *sim, ns_sim_var var, double *flat, void *stream);
NS_API ns_status ns_sim_write_var(ns_sim_t *sim, ns_sim_var var, const double *flat, void *stream);

/* ------------------------------------------- the loop's own arrays
 * Zero-copy access to the state where the loop keeps it (docs/simulation.md,
 * "The loop's own state arrays"): no gather into a Flat array, no copy. The
 * state is held in parts, each in the layout of its kernel: a CUDA
 * simulation has one part per group of its loops (each shape of the onchip
 * loop, and all the cells of the tree loop; device memory of its GPU), a CPU
 * simulation one per lane block (host memory). Part k holds `size` positions
 * of each variable; compartment i of its local cell j (global cell
 * cell[j]) is at position
 *     first[j] + stride * (node_pos ? node_pos[i] : i)
 * and flat_of[p] is the Flat index (ns_sim_cell_offset(sim, cell) + i) of
 * position p: a coupling kernel that works per position needs no other map.
 * Every position belongs to one compartment; the parts together hold each
 * compartment once. */
typedef struct ns_sim_part {
    double *v;              /* [mV] (a mechanism's variables: ns_sim_state_field) */
    int64_t size;           /* positions in each array */
    const int64_t *flat_of; /* size entries, in the memory of v (device or host) */
    int64_t cells;
    const int64_t *cell;    /* host, cells entries: global cell indexes */
    const int64_t *first;   /* host, cells entries */
    int32_t stride;         /* positions between consecutive nodes of one cell (CPU lane block: its width) */
    const int32_t *node_pos;/* host, the shape's compartment count entries (one-shape parts), or NULL */
    int32_t device;         /* the GPU whose memory holds the arrays, -1: host memory */
} ns_sim_part;

/* Parts of the state (fixed at ns_sim_create, except that a CUDA simulation
 * of a model whose cells run onchip is regrouped into the tree loop at the
 * ns_sim_init that builds a network); -1 for NULL. */
NS_API int64_t ns_sim_state_parts(const ns_sim_t *sim);

/* Describe part `part` (0 .. ns_sim_state_parts - 1). The arrays hold the
 * current state when the call returns: a pending ns_sim_set_state /
 * restore is applied first, and a CUDA simulation's own streams have
 * finished (any stream of its GPU may then read and write them). The
 * pointers stay valid until ns_sim_destroy; their values are the state
 * between ns_sim_advance calls only (an advance changes them; after a
 * NaN/Inf stop they are undefined until ns_sim_init). Written values take
 * effect at the next step (non-finite ones make it fail as a NaN of the
 * simulation does). An ns_sim_set_state, ns_sim_write_var of a CPU
 * simulation or ns_sim_restore_state made after this call puts the host copy
 * in charge until the next advance: writes through the part made after it
 * are lost (call ns_sim_state_part again first). */
NS_API ns_status ns_sim_state_part(ns_sim_t *sim, int64_t part, ns_sim_part *out);

/* The caller's reads and writes of the parts are queued on `stream` (a
 * cudaStream_t of the simulation's GPU, NULL: the legacy default stream):
 * the next ns_sim_advance and every host accessor wait for that work, and
 * the simulation's host copy is refreshed from the device when next read.
 * Call it after the work is queued, before the next advance or accessor.
 * A CPU simulation takes NULL (host writes are done when they return; the
 * call is then optional). */
NS_API ns_status ns_sim_state_done(ns_sim_t *sim, void *stream);

/* A variable of the model's mechanisms or ions in part `part`, in place: the
 * mechanism's own array (names as ns_sim_get_model_var: FIELD_MECH, or an
 * ion's eX, Xi, Xo, iX). Entry q sits at position pos[q] of the part (the
 * index into its v and flat_of); pos NULL: entry q is position q (ions).
 * The same rules as ns_sim_state_part (ready when the call returns,
 * ns_sim_state_done after changing it on a stream, valid until destroy).
 * An unknown name is refused naming it. */
typedef struct ns_sim_field {
    double *data;       /* size entries, in the part's memory */
    int64_t size;
    const int32_t *pos; /* size entries, same memory; or NULL */
    int32_t device;     /* the GPU whose memory holds them, -1: host memory */
} ns_sim_field;

NS_API ns_status ns_sim_state_field(ns_sim_t *sim, int64_t part, const char *name, ns_sim_field *out);

/* ---------------------------------------------------------- checkpoints
 * A checkpoint (docs/simulation.md, "Checkpoints") holds the whole dynamic
 * state of a simulation: v of every compartment, every mechanism's variables
 * but its parameters and every ion's arrays by name (m_hh, cai, ...), t,
 * the step count, the traces recorded so far and every cell's spikes. The file
 * is versioned binary: a checked header (magic, version, byte order, sizes),
 * a fingerprint of what the run depends on (the cells' shapes and their
 * matrix coefficients, the parameters except tstop, record_every, the
 * stimuli and the recording sites, all in order) and a checksum of the
 * data. It is written through ns_output (it appears only when complete).
 *
 * To resume, build the same simulation (same cells, parameters, stimuli and
 * recordings added in the same order; backend, method and threads may
 * differ) and call ns_sim_restore_state before advancing: on the CPU the
 * continued run then gives bit for bit the results of an uninterrupted one.
 * A checkpoint of another simulation is refused with NS_ERR_INVALID_ARGUMENT
 * naming what differs; a damaged file with NS_ERR_PARSE (or NS_ERR_IO),
 * naming the file; the simulation is unchanged by a refused restore. */
NS_API ns_status ns_sim_save_state(ns_sim_t *sim, const char *path);
NS_API ns_status ns_sim_restore_state(ns_sim_t *sim, const char *path);

/* Wall time of the steps so far [ms] (ns_sim_advance calls only; spread
 * over processes: this process's, agreements included, so the slowest
 * process sets the pace). */
NS_API double ns_sim_elapsed_ms(const ns_sim_t *sim);

/* ------------------------------------------ distributed simulations */
/* With ns_sim_options.dist set (docs/mpi.md), ns_sim_create is collective:
 * every process passes the same shapes, cells, cell_shape and params
 * (hashed and compared), cells are given out by ns_partition_lpt over
 * compartment counts and each process simulates its own (the other options
 * apply per process). The same calls then take global numbers:
 * - collective (every process, same order): ns_sim_create, ns_sim_init,
 *   ns_sim_advance, ns_sim_gather, ns_network_apply. They agree on success:
 *   when a process fails, every process returns that process's status with
 *   the detail "rank R of N: <its message>".
 * - not collective, but every process makes the same calls in the same order
 *   with the same arguments (each numbers every site, synapse and source):
 *   ns_sim_add_iclamp, _add_recording, _add_synapse, _synapse_set,
 *   _add_detector, _add_spike_source, _add_poisson_source, _connect. The
 *   owner of the cell applies them (a connection: the owner of its
 *   synapse; a train or Poisson source: every process with cells); a
 *   failure on the owner is returned there and reported to every process
 *   by the next collective call. ns_sim_init compares the network calls of
 *   all processes (a hash of their arguments). A network needs a model and
 *   the CPU backend, as on one process, and a transport callable from the
 *   OpenMP loop's master thread (MPI_THREAD_FUNNELED).
 * - ns_sim_traces, ns_sim_spikes and ns_sim_source_spikes answer after
 *   ns_sim_gather, on the receiving processes; ns_sim_cells,
 *   _compartments, _cell_offset, _synapses, _sources, _connections,
 *   _source_cell, _steps_for, _time and _step_count are global (the same
 *   everywhere); ns_sim_backend, _method, _gpu_lanes and
 *   _gpu_mechanisms_of this process's (AUTO without cells).
 * - the state, model-variable and checkpoint calls, ns_sim_set_pointer and
 *   ns_sim_add_point_source answer NS_ERR_UNSUPPORTED: use them on
 *   ns_sim_local. */

/* Collective. Gather every recorded trace, every cell's spike times and
 * every source's raster to process `root` (root < 0: to every process),
 * where ns_sim_traces, ns_sim_spikes and ns_sim_source_spikes then answer
 * with global results. Results are gathered, not written per process, so
 * that a run's output does not depend on the process count. On a
 * simulation of one process: nothing to do (root must be 0 or < 0). */
NS_API ns_status ns_sim_gather(ns_sim_t *sim, int32_t root);
/* This process's own simulation of the cells it owns (local numbers; NULL
 * when it owns none); the simulation itself on one process. */
NS_API ns_sim_t *ns_sim_local(ns_sim_t *sim);
/* The local number of a global cell on its owner, -1 elsewhere (the cell
 * itself on one process); the rank owning a cell (-1: no such cell). */
NS_API int64_t ns_sim_local_cell(const ns_sim_t *sim, int64_t cell);
NS_API int32_t ns_sim_cell_owner(const ns_sim_t *sim, int64_t cell);

#ifdef __cplusplus
}
#endif
#endif
