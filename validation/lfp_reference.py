#!/usr/bin/env python3
"""Reference extracellular potentials and current dipole moments from LFPy (on NEURON).

The cell: data/morphologies/dg_granule_1220882a.swc (or --morph NAME) through LFPy.Cell (NEURON's Import3d),
nseg by the d_lambda rule (0.1 at 100 Hz, Ra 35.4, cm 1: neurosolve's default
discretisation), NEURON's hh in every section with its defaults, celsius 6.3,
v_init -65 mV, dt 0.025 ms (fixed step), an IClamp at soma(0.5) from 1 ms for 8 ms
of AMP_PER_AREA * membrane area (it fires). The membrane currents are LFPy's imem
(NEURON's i_membrane_ through CVode.use_fast_imem), recorded every step.

Electrodes (sigma 0.3 S/m): a column of points beside the soma, a point on the
soma's midpoint, a point inside a dendritic segment's radius (0.3 of it from the
axis: LFPy's r_limit handling), and disc contacts of radius 8 um averaged over N
points placed by neurosolve's deterministic scheme (a Vogel spiral, docs/extracellular.md;
LFPy draws its points at random, so the points are given to LFPy as point electrodes
and averaged here, which is what RecExtElectrode does with its own points). Potentials by
LFPy's three methods ('linesource', 'root_as_point', 'pointsource'), and the current
dipole moment (lfpykit.CurrentDipoleMoment), at every STORE-th step; and lfpykit's
four-sphere head model (FourSphereVolumeConductor, default radii and conductivities): the
potentials of unit dipoles at one point at electrodes on the scalp and in each shell.

Also written: LFPy's segment geometry (cell.x, cell.y, cell.z start/end points and
cell.d) with NEURON's name of each segment, and the stimulus current per stored step
(sum of i_membrane_ over the cell equals it: i_membrane_ excludes the electrode current).

Usage: python3 validation/lfp_reference.py [--morph NAME] [--store K] [OUT]
  default: dg_granule_1220882a.swc, every 8th step, OUT tests/data/lfp/dg_granule_lfpy.txt
  tests/data/lfp/ca1_h10_lfpy.txt: --morph ca1_h10.swc --store 40 tests/data/lfp/ca1_h10_lfpy.txt
  (ca1_h10: a soma of three points in a chain, dendrites leaving its last point by Import3d's
  connect2prox rule; NEURON's define_shape moves those onto their parent's x = 0)
"""
import argparse
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DT, TSTOP = 0.025, 10.0
DEL, DUR = 1.0, 8.0
AMP_PER_AREA = 1.5e-4  # [nA/um^2], as validation/neuron_sim_compare.py
SIGMA = 0.3
DISC_R, DISC_N = 8.0, 12


def disc_points(c, normal, r, n):
    """neurosolve's disc points (src/lfp/forward.c, disc_points): a Vogel spiral."""
    nv = np.asarray(normal, float)
    nv = nv / np.linalg.norm(nv)
    axis = int(np.argmin(np.abs(nv)))
    e = np.zeros(3)
    e[axis] = 1.0
    u = np.cross(nv, e)
    u /= np.linalg.norm(u)
    w = np.cross(nv, u)
    golden = math.pi * (3.0 - math.sqrt(5.0))
    pts = []
    for k in range(n):
        rho = r * math.sqrt((k + 0.5) / n)
        th = k * golden
        pts.append(np.asarray(c, float) + rho * (math.cos(th) * u + math.sin(th) * w))
    return np.array(pts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--morph", default="dg_granule_1220882a.swc", help="a file of data/morphologies")
    ap.add_argument("--store", type=int, default=8, help="store every K-th step")
    ap.add_argument("out", nargs="?", default=os.path.join(ROOT, "tests", "data", "lfp", "dg_granule_lfpy.txt"))
    args = ap.parse_args()
    out, STORE = args.out, args.store
    MORPH = os.path.join(ROOT, "data", "morphologies", args.morph)
    import LFPy
    import lfpykit
    from lfpykit.eegmegcalc import FourSphereVolumeConductor
    import neuron
    from neuron import h

    cell = LFPy.Cell(morphology=MORPH, nsegs_method="lambda_f", lambda_f=100.0, d_lambda=0.1, Ra=35.4, cm=1.0,
                     passive=False, v_init=-65.0, dt=DT, tstart=0.0, tstop=TSTOP, celsius=6.3,
                     delete_sections=True)
    for sec in cell.allseclist:
        sec.insert("hh")
    area = sum(seg.area() for sec in cell.allseclist for seg in sec)
    amp = round(AMP_PER_AREA * area, 3)
    soma = [s for s in cell.allseclist if s.name().startswith("soma")][0]
    stim = h.IClamp(soma(0.5))
    stim.delay, stim.dur, stim.amp = DEL, DUR, amp
    cell.simulate(rec_imem=True)
    imem = cell.imem  # (nseg, steps + 1), column k after step k
    names = []
    for sec in cell.allseclist:
        for seg in sec:
            names.append("%s(%.17g)" % (sec.name(), seg.x))
    nseg = len(names)
    steps = np.arange(STORE, imem.shape[1], STORE)
    I = imem[:, steps]

    # electrodes: (x, y, z, label)
    mid = np.c_[cell.x.mean(axis=1), cell.y.mean(axis=1), cell.z.mean(axis=1)]
    soma_mid = mid[0]
    pts = [soma_mid + np.array([30.0, 0.0, dz]) for dz in (-100.0, -40.0, 0.0, 40.0, 100.0, 200.0)]
    pts.append(soma_mid.copy())  # on the root's midpoint
    # inside a dendritic segment: the longest non-root segment, 0.3 of its radius from the axis
    seglen = np.sqrt(np.diff(cell.x, axis=1)[:, 0] ** 2 + np.diff(cell.y, axis=1)[:, 0] ** 2 +
                     np.diff(cell.z, axis=1)[:, 0] ** 2)
    k = int(np.argmax(seglen[1:])) + 1
    a = np.array([cell.x[k, 0], cell.y[k, 0], cell.z[k, 0]])
    b = np.array([cell.x[k, 1], cell.y[k, 1], cell.z[k, 1]])
    axis = (b - a) / np.linalg.norm(b - a)
    perp = np.cross(axis, [0.0, 0.0, 1.0])
    if np.linalg.norm(perp) < 1e-6:
        perp = np.cross(axis, [1.0, 0.0, 0.0])
    perp /= np.linalg.norm(perp)
    pts.append(0.5 * (a + b) + 0.3 * (cell.d[k] / 2.0) * perp)
    points = np.array(pts)
    discs = [(soma_mid + np.array([25.0, 5.0, 10.0]), np.array([1.0, 0.0, 0.0])),
             (soma_mid + np.array([-20.0, 15.0, 60.0]), np.array([0.3, -0.5, 1.0]))]

    results = {}
    for method in ("linesource", "root_as_point", "pointsource"):
        el = LFPy.RecExtElectrode(cell, sigma=SIGMA, x=points[:, 0], y=points[:, 1], z=points[:, 2],
                                  method=method)
        M = el.get_transformation_matrix()
        rows = [M @ I]
        for c, nrm in discs:
            dp = disc_points(c, nrm, DISC_R, DISC_N)
            ed = LFPy.RecExtElectrode(cell, sigma=SIGMA, x=dp[:, 0], y=dp[:, 1], z=dp[:, 2], method=method)
            rows.append((ed.get_transformation_matrix() @ I).mean(axis=0, keepdims=True))
        results[method] = np.vstack(rows)
    P = lfpykit.CurrentDipoleMoment(cell).get_transformation_matrix() @ I  # (3, T)
    t = steps * DT
    istim = np.where((t - 0.5 * DT < DEL + DUR) & (t - 0.5 * DT >= DEL), amp, 0.0)

    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write("# LFPy %s (lfpykit %s) on NEURON %s, numpy %s\n" % (LFPy.__version__, lfpykit.__version__,
                                                                     neuron.__version__, np.__version__))
        f.write("# made by: python3 validation/lfp_reference.py%s (the protocol is in its docstring)\n"
                % "".join(" " + a for a in sys.argv[1:]))
        f.write("# morphology %s dt %.17g sigma %.17g iclamp soma(0.5) %g %g %.17g\n"
                % (args.morph, DT, SIGMA, DEL, DUR, amp))
        f.write("# largest |sum of imem - stimulus| over the stored steps: %.3g nA\n"
                % np.max(np.abs(I.sum(axis=0) - istim)))
        f.write("segments %d\n" % nseg)
        for i in range(nseg):
            f.write("%s %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n" % (
                names[i], cell.x[i, 0], cell.y[i, 0], cell.z[i, 0], cell.x[i, 1], cell.y[i, 1], cell.z[i, 1],
                cell.d[i]))
        f.write("steps %d\n" % len(steps))
        f.write(" ".join(str(int(s)) for s in steps) + "\n")
        f.write("stimulus\n" + " ".join("%.17g" % v for v in istim) + "\n")
        f.write("imem\n")
        for i in range(nseg):
            f.write(" ".join("%.17g" % v for v in I[i]) + "\n")
        f.write("electrodes %d\n" % (len(points) + len(discs)))
        for p in points:
            f.write("%.17g %.17g %.17g\n" % tuple(p))
        for c, nrm in discs:
            f.write("%.17g %.17g %.17g %.17g %.17g %.17g %.17g %d\n" % (c[0], c[1], c[2], nrm[0], nrm[1], nrm[2],
                                                                       DISC_R, DISC_N))
        for method, V in results.items():
            f.write("potential %s\n" % method)
            for row in V:
                f.write(" ".join("%.17g" % v for v in row) + "\n")
        f.write("dipole\n")
        for row in P:
            f.write(" ".join("%.17g" % v for v in row) + "\n")
        # EEG: lfpykit's four-sphere head model (default radii and conductivities)
        radii, sigmas = [79000., 80000., 85000., 90000.], [0.3, 1.5, 0.015, 0.3]
        rz = np.array([1200.0, -2500.0, 77000.0])
        ang = [(0.1, 0.3), (0.5, 1.0), (1.2, 2.5), (2.0, -1.0), (2.9, 0.2)]
        el = [89990.0 * np.array([math.sin(a) * math.cos(b), math.sin(a) * math.sin(b), math.cos(a)]) for a, b in ang]
        for rr in (78500.0, 79500.0, 82000.0, 88000.0):  # brain, CSF, skull, scalp
            el.append(rr * np.array([0.05, 0.1, 1.0]) / np.linalg.norm([0.05, 0.1, 1.0]))
        el = np.array(el)
        T4 = FourSphereVolumeConductor(el, radii=radii, sigmas=sigmas).get_transformation_matrix(rz)
        f.write("foursphere %d\n" % len(el))
        f.write(" ".join("%.17g" % v for v in radii + sigmas + list(rz)) + "\n")
        for e, row in zip(el, T4):
            f.write(" ".join("%.17g" % v for v in list(e) + list(row)) + "\n")
    print("wrote %s: %d segments, %d stored steps, %d electrodes" % (out, nseg, len(steps), len(points) + len(discs)))


if __name__ == "__main__":
    main()
