#!/usr/bin/env python3
"""NEURON reference traces for LONGITUDINAL_DIFFUSION (tests/sim/test_sim_ldifus_neuron.c).

NEURON's own cadif.mod (data/mechanisms/ldifus/: calcium in 4 radial shells with a buffer,
diffusing between segments through LONGITUDINAL_DIFFUSION) with data/mechanisms/bbp/Ca_HVA.mod
(compiled as validation/nmodl_neuron_traces.py compiles the BBP files) on a real morphology,
data/morphologies/ca1_h10.swc, loaded through Import3d with nseg by the d_lambda rule (0.1 at
100 Hz, Ra 35.4, cm 1: neurosolve's default discretisation). Every section: pas (g 1e-4 S/cm2,
e -65 mV), cadif, Ca_HVA (gCa_HVAbar 0.0005 S/cm2); the soma also hh and cai0_cadif = 5e-4 mM
(the dendrites keep 5e-5 mM, so calcium diffuses out of the soma from the start). celsius 6.3,
v_init -65 mV, dt 0.025 ms, fixed step (secondorder 0), 50 ms, an IClamp at soma(0.5) from 5 ms
for 40 ms of 0.3 nA.

Recorded every 4th step at soma(0.5) and at the middle of three dendritic sections (Import3d's
section list at n/3, 2n/3 and n - 1, named by the SWC id of the section's first own point): v
[mV], cai [mM] and ca[0]_cadif, ca[3]_cadif [mM]. Writes tests/data/nmodl/ldifus_ca1.csv:
'#' header lines (NEURON version, sites), then t and per site v, cai, ca[0], ca[3].

Two more cases, the same cell, sites, stimulus and step (argument `nadifl` or `cadifus`):
  nadifl: NEURON's nadifl.mod (sodium diffusing between segments, no buffer) and pas in every
    section, hh in the soma only, so the dendrites' nai changes only by diffusion from the soma's
    sodium influx; per site v and nai -> tests/data/nmodl/ldifus_nadifl.csv.
  cadifus: NEURON's cadifusl.mod (SUFFIX cadifus: calcium in 4 radial shells, diffusing between
    segments, its current ica = icabar) and pas everywhere, hh and icabar -2e-4 mA/cm2 (an influx)
    in the soma only; per site v, cai, ca[0]_cadifus, ca[3]_cadifus ->
    tests/data/nmodl/ldifus_cadifus.csv.
Each file's third header line names the columns after v.

Run: PYTHONPATH=<NEURON 9.0.2> python3 validation/nmodl_ldifus_neuron.py [cadif|nadifl|cadifus]
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "validation"))
from nmodl_neuron_traces import compile_bbp  # noqa: E402

SWC = os.path.join(ROOT, "data/morphologies/ca1_h10.swc")
LD = os.path.join(ROOT, "data/mechanisms/ldifus")
# case: (mod file, output, mechanisms in every section, recorded concentrations (NEURON's names))
CASES = {
    "cadif": ("cadif.mod", "ldifus_ca1.csv", ("pas", "cadif", "Ca_HVA"), ("cai", "ca[0]_cadif", "ca[3]_cadif")),
    "nadifl": ("nadifl.mod", "ldifus_nadifl.csv", ("pas", "nadifl"), ("nai",)),
    "cadifus": ("cadifusl.mod", "ldifus_cadifus.csv", ("pas", "cadifus"), ("cai", "ca[0]_cadifus", "ca[3]_cadifus")),
}
DT, TSTOP, DECIMATE = 0.025, 50.0, 4


def conc_ref(seg, name):
    """NEURON's pointer to the recorded concentration `name` of seg"""
    if name in ("cai", "nai"):
        return getattr(seg, "_ref_" + name)
    var, mech = name.split("_", 1)
    return getattr(getattr(seg, mech), "_ref_" + var.split("[")[0])[int(var.split("[")[1][:-1])]


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else "cadif"
    mod, out, mechs, conc = CASES[case]
    work = tempfile.mkdtemp(prefix="ldifus_")
    compile_bbp(work, [os.path.join(LD, mod)])
    import neuron
    neuron.load_mechanisms(work)
    from neuron import h
    h.load_file("stdrun.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(SWC)
    gui = h.Import3d_GUI(reader, 0)
    gui.instantiate(None)
    byname = {sec.name(): sec for sec in h.allsec()}
    secs = []
    for i in range(int(reader.sections.count())):
        isec = reader.sections.object(i)
        if isec.is_subsidiary:
            continue
        ref = h.ref("")
        gui.name(isec, ref)
        nm = ref[0] if "[" in ref[0] else ref[0] + "[0]"
        if nm in byname:
            secs.append((int(reader.id.x[int(isec.id)]), byname[nm]))
    for sec in h.allsec():
        sec.Ra = 35.4
        sec.cm = 1.0
        try:
            sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
        except RuntimeError:
            sec.nseg = 1
        for m in mechs:
            sec.insert(m)
        for seg in sec:
            seg.g_pas = 1e-4
            seg.e_pas = -65
            if case == "cadif":
                seg.gCa_HVAbar_Ca_HVA = 0.0005
    root = secs[0][1]
    root.insert("hh")
    for seg in root:
        if case == "cadif":
            seg.cai0_cadif = 5e-4
        if case == "cadifus":
            seg.icabar_cadifus = -2e-4
    h.celsius = 6.3
    h.dt = DT
    stim = h.IClamp(root(0.5))
    stim.delay, stim.dur, stim.amp = 5.0, 40.0, 0.3
    n = len(secs)
    sites = [(secs[k][0], secs[k][1]) for k in (0, n // 3, (2 * n) // 3, n - 1)]
    tv = h.Vector().record(h._ref_t)
    vecs = []
    for _, sec in sites:
        seg = sec(0.5)
        vecs += [h.Vector().record(seg._ref_v)] + [h.Vector().record(conc_ref(seg, c)) for c in conc]
    h.finitialize(-65.0)
    for _ in range(int(round(TSTOP / DT))):
        h.fadvance()
    path = os.path.join(ROOT, "tests/data/nmodl", out)
    with open(path, "w") as f:
        what = "cadif.mod + Ca_HVA.mod" if case == "cadif" else mod + " + hh in the soma"
        f.write(f"# NEURON {h.nrnversion(5)}, validation/nmodl_ldifus_neuron.py: {what} on "
                f"ca1_h10.swc, dt {DT} ms\n")
        f.write("# sites (SWC id of the section's first point, x 0.5): " +
                " ".join(str(k) for k, _ in sites) + "\n")
        f.write("# t, then per site: v, " + ", ".join(conc) + "\n")
        for j in range(0, len(tv), DECIMATE):
            f.write(",".join(repr(x) for x in [tv[j]] + [v[j] for v in vecs]) + "\n")
    print(f"wrote {path}: {len(range(0, len(tv), DECIMATE))} rows, sites {[k for k, _ in sites]}")


if __name__ == "__main__":
    main()
