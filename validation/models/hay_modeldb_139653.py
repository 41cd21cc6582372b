"""Hay et al. 2011's layer 5 pyramidal cell as published: ModelDB 139653 (github.com/
ModelDBRepository/139653), its hoc template L5PCtemplate.hoc (Neurolucida morphology through
Import3d, Hay's nseg rule, the axon replaced by a 60 um stub of two sections) with
L5PCbiophys3.hoc (distribute_channels: Ih rising exponentially, the Ca hot zone), unchanged.
Not bundled (ModelDB gives no licence): NS_MODELDB_139653 names a checkout of the repository
(`git clone https://github.com/ModelDBRepository/139653`). NS_HAY_MORPH picks the morphology
(default cell1.asc), NS_HAY_AMP the step (default 0.793 nA, Hay's step 2). The model's own .mod
files do not pass neurosolve's translator yet (issue 39: `UNITS FARADAY = (faraday)`): run with
--mod data/mechanisms/bbp (the same mechanisms as the BBP/Arbor copies, used by both sides).
A setup file for validation/neuron_import_compare.py (`h` given)."""
import os

folder = os.environ.get("NS_MODELDB_139653")
if not folder:
    raise SystemExit("hay_modeldb_139653.py: set NS_MODELDB_139653 to a checkout of ModelDBRepository/139653")
os.chdir(folder)
h.load_file("stdrun.hoc")  # noqa: F821
h.load_file("import3d.hoc")  # noqa: F821
h.load_file("models/L5PCbiophys3.hoc")  # noqa: F821
h.load_file("models/L5PCtemplate.hoc")  # noqa: F821
cell = h.L5PCtemplate("morphologies/" + os.environ.get("NS_HAY_MORPH", "cell1.asc"))  # noqa: F821
stim = h.IClamp(cell.soma[0](0.5))  # noqa: F821
stim.delay, stim.dur, stim.amp = 100.0, 900.0, float(os.environ.get("NS_HAY_AMP", "0.793"))
h.celsius, h.v_init, h.dt, h.tstop = 34.0, -80.0, 0.025, 1000.0  # noqa: F821
