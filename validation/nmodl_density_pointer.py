#!/usr/bin/env python3
"""NEURON reference for a density mechanism's POINTER (tests/nmodl/test_nmodl_dpointer.c).

Two cells, hh everywhere, celsius 6.3, v_init -65, dt 0.025 ms, tstop 40 ms, cm 1, Ra 35.4:
  A: one section L = 60 um, diam = 2 um, nseg = 3, with dgap and ptrtest
     (data/mechanisms/pointer/) in every segment, dgap's g = 2e-3 S/cm^2;
  B: one section L = diam = 20 um, nseg = 1, with dgap (g = 5e-4 S/cm^2), an IClamp
     at 0.5 (del 2 ms, dur 30 ms, 0.2 nA).
The POINTERs, set with h.setpointer (NEURON's setpointer):
  vgap_dgap:  A(1/6) -> B(0.5).v (a gap junction to another cell), A(1/2) -> A(1/6).v
              (another node of its own cell, as dipole.mod's pv), A(5/6) -> A(1/2).ena
              (an ion's variable at another node), B(0.5) -> A(1/6).v;
  src_ptrtest: A(1/6) -> B(0.5).m_hh (another mechanism's RANGE variable on another
              cell), A(1/2) -> A(5/6).h_hh (hh's h at another node of its cell), A(5/6) -> B(0.5).v.
Writes tests/data/nmodl/dpointer.csv: '#' header lines, then t, v of A(1/6), A(1/2),
A(5/6), B(0.5), out_ptrtest of A(1/6), A(1/2), A(5/6) every step.

Run: python3 validation/nmodl_density_pointer.py   (NEURON 9.0.2: pip install neuron==9.0.2)
"""
import os
import shutil
import sys
import tempfile

from nmodl_gap_junction import nrnivmodl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/data/nmodl/dpointer.csv")
DEL, DUR, AMP, TSTOP, DT = 2.0, 30.0, 0.2, 40.0, 0.025
X = (1 / 6, 1 / 2, 5 / 6)


def build(work):
    for f in ("dgap.mod", "ptrtest.mod"):
        shutil.copy(os.path.join(ROOT, "data/mechanisms/pointer", f), work)
    nrnivmodl(work)


def main():
    work = tempfile.mkdtemp(prefix="ns_dpointer_")
    build(work)
    import neuron
    from neuron import h
    neuron.load_mechanisms(work)
    h.load_file("stdrun.hoc")
    a = h.Section(name="a")
    a.L, a.diam, a.nseg = 60, 2, 3
    b = h.Section(name="b")
    b.L = b.diam = 20
    b.nseg = 1
    for s in (a, b):
        s.cm, s.Ra = 1, 35.4
        s.insert("hh")
        s.insert("dgap")
    a.insert("ptrtest")
    for x in X:
        a(x).dgap.g = 2e-3
    b(0.5).dgap.g = 5e-4
    h.setpointer(b(0.5)._ref_v, "vgap", a(X[0]).dgap)
    h.setpointer(a(X[0])._ref_v, "vgap", a(X[1]).dgap)
    h.setpointer(a(X[1])._ref_ena, "vgap", a(X[2]).dgap)
    h.setpointer(a(X[0])._ref_v, "vgap", b(0.5).dgap)
    h.setpointer(b(0.5)._ref_m_hh, "src", a(X[0]).ptrtest)
    h.setpointer(a(X[2])._ref_h_hh, "src", a(X[1]).ptrtest)
    h.setpointer(b(0.5)._ref_v, "src", a(X[2]).ptrtest)
    stim = h.IClamp(b(0.5))
    stim.delay, stim.dur, stim.amp = DEL, DUR, AMP
    h.celsius = 6.3
    h.dt = DT
    h.steps_per_ms = 1 / DT
    rec = [h.Vector().record(a(x)._ref_v) for x in X] + [h.Vector().record(b(0.5)._ref_v)]
    rec += [h.Vector().record(a(x).ptrtest._ref_out) for x in X]
    t = h.Vector().record(h._ref_t)
    h.finitialize(-65)
    h.continuerun(TSTOP)
    with open(OUT, "w") as f:
        f.write(f"# {h.nrnversion()}, written by validation/nmodl_density_pointer.py (the case: its docstring)\n")
        f.write("t,vA0,vA1,vA2,vB,outA0,outA1,outA2\n")
        for j in range(len(t)):
            f.write(",".join(f"{x:.17g}" for x in [t[j]] + [r[j] for r in rec]) + "\n")
    shutil.rmtree(work)
    print(f"wrote {OUT}: {len(t)} rows, vB max {max(rec[3]):.3f} mV, vA2 max {max(rec[2]):.3f} mV")


if __name__ == "__main__":
    sys.exit(main())
