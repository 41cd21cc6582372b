#!/usr/bin/env python3
"""NEURON reference for a gap junction through POINTER (tests/nmodl/test_nmodl_pointer.c).

Two isopotential compartments (L = diam = 20 um, cm = 1 uF/cm^2, nseg = 1) with
NEURON's hh, celsius 6.3, v_init -65, dt 0.025 ms, tstop 40 ms; an IClamp on
cell 0 (del 2 ms, dur 30 ms, 0.2 nA); one data/mechanisms/test/gap.mod on each
cell at 0.5 (r = 100 MOhm), its POINTER vgap set with setpointer to the other
cell's v. Writes tests/data/nmodl/gap.csv: '#' header lines (NEURON version,
the case), then t, v of cell 0, v of cell 1 [mV] every step.

Run: python3 validation/nmodl_gap_junction.py   (NEURON 9.0.2: pip install neuron==9.0.2)
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/data/nmodl/gap.csv")
R, DEL, DUR, AMP, TSTOP, DT = 100.0, 2.0, 30.0, 0.2, 40.0, 0.025


def nrnivmodl(work):
    """NEURON's nrnivmodl on the .mod files in work (also validation/nmodl_density_pointer.py's)."""
    tool = os.path.join(os.path.dirname(sys.executable), "nrnivmodl")
    if not os.path.exists(tool):  # a wheel installed elsewhere: on PATH
        tool = shutil.which("nrnivmodl") or tool
    with open(tool, "rb") as f:  # the wheel's Python wrapper: run it with this Python
        cmd = [sys.executable, tool] if b"python" in f.readline() else [tool]
    subprocess.run(cmd, cwd=work, check=True, stdout=subprocess.DEVNULL)


def main():
    work = tempfile.mkdtemp(prefix="ns_gap_")
    shutil.copy(os.path.join(ROOT, "data/mechanisms/test/gap.mod"), work)
    nrnivmodl(work)
    import neuron
    from neuron import h
    neuron.load_mechanisms(work)
    h.load_file("stdrun.hoc")
    cells = []
    for k in range(2):
        s = h.Section(name=f"cell{k}")
        s.L = s.diam = 20
        s.cm = 1
        s.nseg = 1
        s.insert("hh")
        cells.append(s)
    gaps = [h.gap(cells[k](0.5)) for k in range(2)]
    for k in range(2):
        gaps[k].r = R
        h.setpointer(cells[1 - k](0.5)._ref_v, "vgap", gaps[k])
    stim = h.IClamp(cells[0](0.5))
    stim.delay, stim.dur, stim.amp = DEL, DUR, AMP
    h.celsius = 6.3
    h.dt = DT
    h.steps_per_ms = 1 / DT
    v = [h.Vector().record(cells[k](0.5)._ref_v) for k in range(2)]
    t = h.Vector().record(h._ref_t)
    h.finitialize(-65)
    h.continuerun(TSTOP)
    with open(OUT, "w") as f:
        f.write(f"# {h.nrnversion()}, written by validation/nmodl_gap_junction.py\n")
        f.write(f"# two cells L = diam = 20 um, cm 1, hh, celsius 6.3, v_init -65, dt {DT}, tstop {TSTOP}; "
                f"IClamp on cell 0 ({DEL}, {DUR}, {AMP}); gap.mod r = {R} MOhm on each, vgap -> the other's v\n")
        f.write("t,v0,v1\n")
        for j in range(len(t)):
            f.write(f"{t[j]:.17g},{v[0][j]:.17g},{v[1][j]:.17g}\n")
    shutil.rmtree(work)
    print(f"wrote {OUT}: {len(t)} rows, v1 max {max(v[1]):.3f} mV")


if __name__ == "__main__":
    sys.exit(main())
