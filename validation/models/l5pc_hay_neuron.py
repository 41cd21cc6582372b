"""Hay et al. 2011's layer 5 pyramidal cell built in NEURON the way a NEURON user has it: the
bundled morphology through Import3d, nseg by Hay's template rule (L5PCtemplate.hoc's
geom_nseg: nseg = 1 + 2 int(L / 40), set before the biophysics; NS_HAY_SEGLEN replaces the 40
for a finer grid), then the biophysics of
data/models/l5pc_hay.model and l5pc_hay.params applied section by section (NEURON computes the
distance-dependent values), an IClamp at the soma. A setup file for
validation/neuron_import_compare.py: it runs with `h` (NEURON) and ROOT (the repository) given
and leaves the cell instantiated; neurosolve.from_neuron then takes it over.
Sources and licences of the values: data/models/README.md."""
import os
import sys

sys.path.insert(0, os.path.join(ROOT, "validation"))  # noqa: F821 (given by the runner)
import neuron_model_compare as nmc  # noqa: E402

h.load_file("stdrun.hoc")  # noqa: F821
params = nmc.read_params(os.path.join(ROOT, "data/models/l5pc_hay.params"))  # noqa: F821
statements = nmc.read_model(os.path.join(ROOT, "data/models/l5pc_hay.model"))  # noqa: F821
secs, keep = nmc.build_cell(h, os.path.join(ROOT, "data/morphologies/l5pc_bbp_axon.swc"))  # noqa: F821
soma = secs[0][2]
for _, region, sec in secs:
    sec.nseg = 1 + 2 * int(sec.L / float(os.environ.get("NS_HAY_SEGLEN", "40")))  # Hay's geom_nseg
    sec.Ra = params["Ra"]
    sec.cm = params["cm"][region]
h.F_CaDynamics_E2 = nmc.F_FILE  # noqa: F821
nmc.apply_model(h, secs, statements, soma)  # noqa: F821
h.celsius, h.v_init, h.dt, h.tstop = params["celsius"], params["v_init"], params["dt"], params["tstop"]  # noqa: F821
stim = h.IClamp(soma(0.5))  # noqa: F821
stim.delay, stim.dur, stim.amp = 100.0, 700.0, float(os.environ.get("NS_HAY_AMP", "1.8"))
