#!/usr/bin/env python3
"""ModelDB 113732's dipole.mod (a density mechanism with POINTERs pv and Qsum, AFTER SOLVE and AFTER
INITIAL) in NEURON 9.0.2 and in neurosolve (its Python package), traces compared; the file is read
from the corpus (validation/nmodl_corpus_materialise.py: ModelDB files stay out of the repository,
their licence unstated).

The case: one section L = 60 um, diam = 2 um, nseg = 3, hh and dipole (ri = 0.5 MOhm, ztan = 20,
10, 5 um at x = 1/6, 1/2, 5/6), celsius 6.3, v_init -65, dt 0.025 ms, 40 ms, an IClamp at 0.5
(del 2 ms, dur 30 ms, 0.1 nA). pv_dipole at each node points at v of the node before it along the
section (as dipole.hoc's `setpointer pv_dipole(x), v(xold)`; the first at the last node), Qsum_dipole
at il_hh of its own node (hh rewrites il before it reads it: v is unchanged). Compared every step:
v, ia_dipole and Q_dipole at the three nodes (ia and Q from the first step: ri and ztan, ASSIGNED,
are set here after ns_sim_init, which restarts ASSIGNED variables at 0 where NEURON keeps them).

Run: PYTHONPATH=build/python python3 validation/nmodl_dipole_pointer.py [--corpus DIR]
     (NEURON 9.0.2 importable; DIR default ~/.cache/neurosolve/nmodl_corpus)
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
from nmodl_gap_junction import nrnivmodl

X = (1 / 6, 1 / 2, 5 / 6)
ZTAN = (20.0, 10.0, 5.0)
DT, TSTOP = 0.025, 40.0


def neuron_run(work):
    nrnivmodl(work)
    import neuron
    from neuron import h
    neuron.load_mechanisms(work)
    h.load_file("stdrun.hoc")
    a = h.Section(name="a")
    a.L, a.diam, a.nseg, a.cm, a.Ra = 60, 2, 3, 1, 35.4
    a.insert("hh")
    a.insert("dipole")
    for k, x in enumerate(X):
        a(x).dipole.ri, a(x).dipole.ztan = 0.5, ZTAN[k]
        h.setpointer(a(X[k - 1])._ref_v, "pv", a(x).dipole)
        h.setpointer(a(x)._ref_il_hh, "Qsum", a(x).dipole)
    stim = h.IClamp(a(0.5))
    stim.delay, stim.dur, stim.amp = 2.0, 30.0, 0.1
    h.celsius, h.dt, h.steps_per_ms = 6.3, DT, 1 / DT
    rec = [h.Vector().record(a(x)._ref_v) for x in X]
    rec += [h.Vector().record(a(x).dipole._ref_ia) for x in X] + [h.Vector().record(a(x).dipole._ref_Q) for x in X]
    h.finitialize(-65)
    h.continuerun(TSTOP)
    return np.array([list(r) for r in rec]).T


def ours_run(work):
    import neurosolve as ns
    ns.build_mechanisms(work, os.path.join(work, "libdipole.so"))
    model = ns.Model(ns.MechanismLibrary(os.path.join(work, "libdipole.so")))
    model.insert("all", "hh")
    model.insert("all", "dipole")
    a = ns.Morphology.from_points("a", np.array([[0.0, 0, 0], [0, 60, 0]]), np.array([1.0, 1.0]),
                                  np.array([3, 3], dtype=np.int32), np.array([-1, 0], dtype=np.int32))
    cell = a.discretize(rule="fixed_length", max_length=20.0)
    sim = ns.Simulation([cell], 1, params={"celsius": 6.3, "v_init": -65, "dt": DT}, backend="cpu", model=model)
    n = [0, 1, 2]  # the compartments at x = 1/6, 1/2, 5/6
    for k in range(3):
        sim.set_model_pointer(0, n[k], "pv_dipole", 0, n[k - 1], "v")
        sim.set_model_pointer(0, n[k], "Qsum_dipole", 0, n[k], "il_hh")
        sim.add_recording(0, n[k])
    sim.add_iclamp(0, n[1], 2.0, 30.0, 0.1)
    sim.init()
    z = sim.model_var(0, "ztan_dipole")  # ri and ztan, ASSIGNED, after init (its AFTER INITIAL had them 0)
    z[n] = ZTAN
    sim.set_model_var(0, "ztan_dipole", z)
    sim.set_model_var(0, "ri_dipole", np.full(len(z), 0.5))
    steps = int(round(TSTOP / DT))
    out = np.zeros((steps + 1, 9))
    for j in range(steps + 1):
        if j:
            sim.advance(1)
        out[j, 3:6] = sim.model_var(0, "ia_dipole")[n]
        out[j, 6:9] = sim.model_var(0, "Q_dipole")[n]
    out[:, :3] = sim.traces[: steps + 1, :3]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default=os.path.expanduser("~/.cache/neurosolve/nmodl_corpus"))
    args = p.parse_args()
    src = os.path.join(args.corpus, "113732", "dipole.mod")
    if not os.path.exists(src):
        print(f"no {src}: run validation/nmodl_corpus_materialise.py first")
        return 1
    work = tempfile.mkdtemp(prefix="ns_dipole_")
    shutil.copy(src, work)
    ref = neuron_run(work)
    ours = ours_run(work)
    shutil.rmtree(work)
    names = [f"{q}({x:.3f})" for q in ("v", "ia", "Q") for x in X]
    d = ours[: len(ref)] - ref
    d[0, 3:] = 0.0  # ia, Q at t = 0: ri and ztan were set after finitialize here (an ASSIGNED restarts at 0)
    rms = np.sqrt(np.mean(d ** 2, axis=0))
    for k in range(9):
        print(f"{names[k]:>10}: RMS {rms[k]:.3e}, max {np.max(np.abs(d[:, k])):.3e}")
    print("dipole.mod against NEURON: " + ("within 1e-6" if np.all(rms <= 1e-6) else "DIFFERS"))
    return 0 if np.all(rms <= 1e-6) else 1


if __name__ == "__main__":
    sys.exit(main())
