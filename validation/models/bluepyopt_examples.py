"""BluePyOpt's example cells (github.com/BlueBrain/BluePyOpt, LGPL-3.0; the thalamocortical
cell's mechanisms and parameters CC-BY-NC-SA 4.0, its morphologies PDDL: see its LICENSE.txt)
built by BluePyOpt itself (`pip install bluepyopt`): `CellModel.instantiate` on NEURON, then
its stimuli's `instantiate`, as an optimisation's evaluation does (with the simulator's
fixed-step option: BluePyOpt's default is CVode, which neurosolve does not run). NS_BLUEPYOPT names a
checkout of the repository; NS_BPO_CELL picks the example:

* simplecell (bluepyopt/ephys/examples/simplecell: a soma from simple.swc, hh, BluePyOpt's
  default gnabar 0.1, gkbar 0.03), its square pulse made 0.05 nA for 1 s so that it fires
  throughout (the example's 0.01 nA gives one spike);
* expsyn (examples/expsyn: a soma with pas and an ExpSyn at its centre, tau 10 ms, driven by the
  example's NrnNetStimStimulus: 5 events every 5 ms from 20 ms, weight 5e-4) over 1 s;
* tc (examples/thalamocortical-cell: Iavarone et al. 2019's cAD_ltb thalamocortical cell,
  jy160728_A_idA.asc with BluePyOpt's axon replacement and nseg per 40 um, eight mechanisms,
  calcium accumulation (TC_cad), T-type calcium by GHK; the first parameter set of
  results/cAD_ltb_params.csv; protocol Step_200: holding and step current, 2.4 s).

Mechanisms (--mod): none for simplecell and expsyn (NEURON's built-ins), the example's
mechanisms folder for tc, unchanged. A setup file for validation/neuron_import_compare.py."""
import os
import sys

import bluepyopt.ephys as ephys

root = os.environ.get("NS_BLUEPYOPT")
if not root:
    raise SystemExit("bluepyopt_examples.py: set NS_BLUEPYOPT to a checkout of BlueBrain/BluePyOpt")
which = os.environ.get("NS_BPO_CELL", "simplecell")
# BluePyOpt's simulator runs CVode by default; neurosolve runs NEURON's fixed step (from_neuron
# reports an active CVode), so the evaluation's fixed-step option is taken
sim = ephys.simulators.NrnSimulator(dt=0.025, cvode_active=False)
stimuli = []
if which == "simplecell":
    sys.path.insert(0, os.path.join(root, "bluepyopt/ephys/examples/simplecell"))
    import simplecell as example

    sc = example.SimpleCell()
    model = sc.cell_model
    model.freeze(sc.default_param_values)
    stimuli = [ephys.stimuli.NrnSquarePulse(step_amplitude=0.05, step_delay=100, step_duration=1000,
                                            location=sc.soma_loc, total_duration=1200)]
    tstop = 1200.0
elif which == "expsyn":
    sys.path.insert(0, os.path.join(root, "examples/expsyn"))
    import expsyn as example

    model, locations = example.create_model(sim="nrn", do_replace_axon=False, return_locations=True)
    model.freeze({"expsyn_tau": 10.0})
    stimuli = [ephys.stimuli.NrnNetStimStimulus(total_duration=1000, number=5, interval=5, start=20,
                                                weight=5e-4, locations=[locations["expsyn_loc"]])]
    tstop = 1000.0
elif which == "tc":
    folder = os.path.join(root, "examples/thalamocortical-cell")
    os.chdir(folder)
    sys.path[:0] = [folder, os.path.join(folder, "CellEvalSetup")]  # its package imports its modules by name
    import json

    from CellEvalSetup import template

    with open("config/recipes.json") as f:
        recipe = json.load(f)
    model = template.create(recipe, "cAD_ltb")
    names = [p.name for p in model.params.values() if not p.frozen]
    with open("results/cAD_ltb_params.csv") as f:
        values = [float(x) for x in f.readline().split(",")]
    model.freeze(dict(zip(names, values)))
    with open(recipe["cAD_ltb"]["protocol"]) as f:
        steps = json.load(f)["Step_200"]["stimuli"]
    soma = ephys.locations.NrnSeclistCompLocation(name="soma", seclist_name="somatic", sec_index=0, comp_x=0.5)
    stimuli = [ephys.stimuli.NrnSquarePulse(step_amplitude=s["amp"], step_delay=s["delay"],
                                            step_duration=s["duration"], location=soma,
                                            total_duration=s["totduration"]) for s in (steps["holding"], steps["step"])]
    tstop = 2400.0
else:
    raise SystemExit(f"bluepyopt_examples.py: NS_BPO_CELL={which}: simplecell, expsyn or tc")
model.instantiate(sim=sim)
for s in stimuli:
    s.instantiate(sim=sim, icell=model.icell)
cell = model.icell
h.CVode().active(0)  # noqa: F821 (the example's own NrnSimulator, made with CVode on, switched it on)
h.dt, h.tstop = 0.025, tstop  # noqa: F821 (BluePyOpt's NrnSimulator runs fixed steps of 0.025 ms)
