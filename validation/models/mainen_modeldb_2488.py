"""Mainen and Sejnowski 1996's neocortical cells as published: ModelDB 2488 (github.com/
ModelDBRepository/2488), demofig1.hoc unchanged: a reconstructed morphology (cells/*.hoc, 3-D
points), nseg from L (1 + L/50), the myelinated axon with hillock, initial segment and nodes,
spines folded into the dendrites (L and diam scaled), na, kv, km, kca, ca and calcium
accumulation (cad) with eca fixed at 140 mV (`ion_style("ca_ion", 0, 1, 0, 0, 0)`), cm 0.04 in
the myelin, an IClamp at the soma from 5 ms for 900 ms; 1 s at dt 0.025 ms, 37 degC. The figure's
procedure picks the cell: NS_MAINEN_FIG = fig1a (L3 aspiny, 0.05 nA), fig1b (L4 stellate,
0.07 nA), fig1c (L3 pyramid, 0.1 nA), fig1d (L5 pyramid, 0.2 nA; default).
Not bundled (ModelDB gives no licence): NS_MODELDB_2488 names a checkout of the repository.
Mechanisms: the model's six .mod files, unchanged (--mod CHECKOUT).
A setup file for validation/neuron_import_compare.py (`h` given)."""
import os

folder = os.environ.get("NS_MODELDB_2488")
if not folder:
    raise SystemExit("mainen_modeldb_2488.py: set NS_MODELDB_2488 to a checkout of ModelDBRepository/2488")
os.chdir(folder)
h.load_file("demofig1.hoc")  # noqa: F821 (its panels and graphs do nothing without a display)
getattr(h, os.environ.get("NS_MAINEN_FIG", "fig1d"))()  # noqa: F821
