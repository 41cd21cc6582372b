#!/usr/bin/env python3
"""NEURON reference for a mechanism's errors and thread safety (tests/sim/test_sim_nmodl_neuron.c).

data/mechanisms/hoc/hocerr.mod in one isopotential compartment (L = diam = 20 um,
cm = 1 uF/cm^2, nseg = 1; hocerr's e = -70 mV, v_init -65 mV, dt 0.025 ms, terr = 5 ms):
NEURON 9.0.2 stops fadvance with the message of hoc_execerror once t passes terr; this
records how many steps completed, t and v then, and the message; with g = -1 finitialize
stops. data/mechanisms/hoc/vbstatic.mod (a static variable in VERBATIM C, no
THREADSAFE): whether NEURON's finitialize refuses it on two threads (and hocerr.mod,
VERBATIM without static state). Writes
tests/data/nmodl/hocerr.txt: '#' header lines (NEURON version, the command), then
`key value` lines.

Run: python3 validation/nmodl_hoc_errors.py   (NEURON 9.0.2: pip install neuron==9.0.2)
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/data/nmodl/hocerr.txt")
DT, TERR, E, V_INIT = 0.025, 5.0, -70.0, -65.0


def main():
    work = tempfile.mkdtemp(prefix="ns_hocerr_")
    for f in ("hocerr.mod", "vbstatic.mod"):
        shutil.copy(os.path.join(ROOT, "data/mechanisms/hoc", f), work)
    nrnivmodl = shutil.which("nrnivmodl") or os.path.join(os.path.dirname(sys.executable), "nrnivmodl")
    with open(nrnivmodl, "rb") as f:  # the wheel's Python wrapper: run it with this Python
        cmd = [sys.executable, nrnivmodl] if b"python" in f.readline() else [nrnivmodl]
    subprocess.run(cmd, cwd=work, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import neuron
    from neuron import h
    neuron.load_mechanisms(work)
    s = h.Section(name="soma")
    s.L = s.diam = 20
    s.insert("hocerr")
    seg = s(0.5)
    seg.hocerr.e = E
    seg.hocerr.terr = TERR
    h.dt = DT
    out = {}
    h.finitialize(V_INIT)
    steps = 0
    try:
        while steps < 10000:
            h.fadvance()
            steps += 1
    except RuntimeError:
        pass
    out["steps_completed"] = steps
    out["v_last"] = "%.17g" % seg.v
    # finitialize with g < 0: INITIAL's hoc_execerror
    seg.hocerr.g = -1
    try:
        h.finitialize(V_INIT)
        out["init_stops"] = 0
    except RuntimeError:
        out["init_stops"] = 1
    # VERBATIM C without THREADSAFE on two threads: NEURON's finitialize refuses the mechanism
    # where instances sit on a thread other than the first (four sections, two threads); hocerr
    # too (NEURON calls any VERBATIM without THREADSAFE not thread safe; neurosolve only C with
    # static state, docs/mechanisms.md "VERBATIM")
    h.delete_section(sec=s)
    pc = h.ParallelContext()
    for mech in ("vbstatic", "hocerr"):
        secs = [h.Section(name="%s%d" % (mech, k)) for k in range(4)]
        for sec in secs:
            sec.insert(mech)
        pc.nthread(2)
        try:
            h.finitialize(V_INIT)
            out[mech + "_nthread2_refused"] = 0
        except RuntimeError:
            out[mech + "_nthread2_refused"] = 1
        pc.nthread(1)
        for sec in secs:
            h.delete_section(sec=sec)
    with open(OUT, "w") as f:
        f.write("# NEURON %s, python3 validation/nmodl_hoc_errors.py\n" % neuron.__version__)
        f.write("# hocerr.mod: e %g mV, v_init %g mV, dt %g ms, terr %g ms; vbstatic.mod, hocerr.mod: 4 sections, pc.nthread(2)\n"
                % (E, V_INIT, DT, TERR))
        for k, v in out.items():
            f.write("%s %s\n" % (k, v))
    print(open(OUT).read())


if __name__ == "__main__":
    main()
