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

Run: PYTHONPATH=<NEURON 9.0.2> python3 validation/nmodl_ldifus_neuron.py
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "validation"))
from nmodl_neuron_traces import compile_bbp  # noqa: E402

SWC = os.path.join(ROOT, "data/morphologies/ca1_h10.swc")
CADIF = os.path.join(ROOT, "data/mechanisms/ldifus/cadif.mod")
OUT = os.path.join(ROOT, "tests/data/nmodl/ldifus_ca1.csv")
DT, TSTOP, DECIMATE = 0.025, 50.0, 4


def main():
    work = tempfile.mkdtemp(prefix="ldifus_")
    compile_bbp(work, [CADIF])
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
        sec.insert("pas")
        sec.insert("cadif")
        sec.insert("Ca_HVA")
        for seg in sec:
            seg.g_pas = 1e-4
            seg.e_pas = -65
            seg.gCa_HVAbar_Ca_HVA = 0.0005
    root = secs[0][1]
    root.insert("hh")
    for seg in root:
        seg.cai0_cadif = 5e-4
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
        vecs += [h.Vector().record(seg._ref_v), h.Vector().record(seg._ref_cai),
                 h.Vector().record(seg.cadif._ref_ca[0]), h.Vector().record(seg.cadif._ref_ca[3])]
    h.finitialize(-65.0)
    for _ in range(int(round(TSTOP / DT))):
        h.fadvance()
    with open(OUT, "w") as f:
        f.write(f"# NEURON {h.nrnversion(5)}, validation/nmodl_ldifus_neuron.py: cadif.mod + Ca_HVA.mod on "
                f"ca1_h10.swc, dt {DT} ms\n")
        f.write("# sites (SWC id of the section's first point, x 0.5): " +
                " ".join(str(k) for k, _ in sites) + "\n")
        f.write("# t, then per site: v, cai, ca[0]_cadif, ca[3]_cadif\n")
        for j in range(0, len(tv), DECIMATE):
            f.write(",".join(repr(x) for x in [tv[j]] + [v[j] for v in vecs]) + "\n")
    print(f"wrote {OUT}: {len(range(0, len(tv), DECIMATE))} rows, sites {[k for k, _ in sites]}")


if __name__ == "__main__":
    main()
