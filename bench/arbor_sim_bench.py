#!/usr/bin/env python3
"""Arbor baseline for `neurosolve bench sim`: the same cells and protocol in Arbor.

usage: arbor_sim_bench.py MORPHOLOGY.swc[,MORPHOLOGY.swc...] CELLS TSTOP_MS [DT_MS] [THREADS]
       arbor_sim_bench.py --accepts MORPHOLOGY.swc[,...]   (print the files Arbor loads, one a line)

The twin of bench/neuron_sim_bench.py (same arguments, same JSON line): CELLS copies of each
morphology, read with Arbor's NEURON-flavoured SWC loader (load_swc_neuron; files it refuses are
left out and counted in "skipped"), hh everywhere with its defaults (Arbor's hh.mod is NEURON's:
gnabar 0.12, gkbar 0.036, gl 0.0003, el -54.3, ena 50, ek -77, 6.3 degC), cm 1 uF/cm^2,
Ra 35.4 ohm cm, v_init -65 mV, and an IClamp of 1.5e-4 nA per um^2 of membrane at the middle of
the root branch from 5 ms (neurosolve's default stimulus). Fixed dt (0.025 ms).

Discretisation: neurosolve uses NEURON's d_lambda rule (0.1 at 100 Hz). Arbor has no d_lambda
policy, so each morphology gets cv_policy_max_extent(E) with E found by bisection so that its
CV count is the d_lambda count of its branches (the rule of neuron_sim_bench.py applied to
Arbor's unbranched cables; within 5 % or the closest of 30 bisection steps). The CV count is
reported as "segments".

THREADS: proc_allocation(threads=THREADS), no GPU. The timed part is the run only (after a
warm-up of 40 steps, as `bench sim` times after 40 warm-up steps): the recipe, the cells and
the simulation object are built before. Prints one line of JSON: cells, segments (CVs summed
over cells), steps, wall seconds, cell-steps per second.
"""
import json
import math
import sys
import time

import arbor as A
from arbor import units as U

RA, CM, FREQ, D_LAMBDA = 35.4, 1.0, 100.0, 0.1


def load(path):
    m = A.load_swc_neuron(path)
    return m.morphology if hasattr(m, "morphology") else m


def branch_geometry(morph):
    """Per branch: [(arc length, diameter)] at its sample points [um]."""
    out = []
    for b in range(morph.num_branches):
        pts, arc, last = [], 0.0, None
        for seg in morph.branch_segments(b):
            for p in (seg.prox, seg.dist):
                if last is not None:
                    arc += math.dist((p.x, p.y, p.z), last)
                pts.append((arc, 2.0 * p.radius))
                last = (p.x, p.y, p.z)
        out.append(pts)
    return out


def d_lambda_count(morph):
    """NEURON's fixnseg.hoc on each branch (the formula of neuron_sim_bench.py)."""
    total = 0
    for pts in branch_geometry(morph):
        length = pts[-1][0] if pts else 0.0
        acc = 0.0
        for (x1, d1), (x2, d2) in zip(pts, pts[1:]):
            if d1 + d2 > 0:
                acc += (x2 - x1) / math.sqrt(d1 + d2)
        acc *= math.sqrt(2) * 1e-5 * math.sqrt(4 * math.pi * FREQ * RA * CM)
        lam = length / acc if acc > 0 else 1e9
        total += int((length / (D_LAMBDA * lam) + 0.9) / 2) * 2 + 1
    return total


def area_um2(morph):
    """Lateral area of the frusta of all segments [um^2]."""
    a = 0.0
    for b in range(morph.num_branches):
        for seg in morph.branch_segments(b):
            p, d = seg.prox, seg.dist
            h = math.dist((p.x, p.y, p.z), (d.x, d.y, d.z))
            a += math.pi * (p.radius + d.radius) * math.sqrt(h * h + (p.radius - d.radius) ** 2)
    return a


def decor_for(morph, extent):
    labels = A.label_dict()
    d = A.decor()
    d.set_property(Vm=-65 * U.mV, cm=CM * 0.01 * U.F / U.m2, rL=RA * U.Ohm * U.cm)
    d.paint("(all)", A.density("hh"))
    d.place("(location 0 0.5)", A.i_clamp(5 * U.ms, 1e9 * U.ms, 1.5e-4 * area_um2(morph) * U.nA))
    d.place("(location 0 0.5)", A.threshold_detector(-20 * U.mV), "spike")
    return labels, d, A.cv_policy_max_extent(extent * U.um)


def cv_count(morph, extent):
    labels, d, pol = decor_for(morph, extent)
    cell = A.cable_cell(morph, d, labels, pol)
    return A.cv_data(cell).num_cv


def choose_extent(morph):
    target = d_lambda_count(morph)
    lo, hi = 1e-2, 1e5  # [um]; the CV count falls as the extent grows
    best = (abs(cv_count(morph, hi) - target), hi)
    for _ in range(30):
        mid = math.sqrt(lo * hi)
        n = cv_count(morph, mid)
        best = min(best, (abs(n - target), mid))
        if abs(n - target) <= 0.05 * target:
            return mid
        if n > target:
            lo = mid
        else:
            hi = mid
    return best[1]


class Recipe(A.recipe):
    def __init__(self, cells):
        A.recipe.__init__(self)
        self.cells = cells  # [(morph, labels, decor, policy)]

    def num_cells(self):
        return len(self.cells)

    def cell_kind(self, gid):
        return A.cell_kind.cable

    def cell_description(self, gid):
        morph, labels, d, pol = self.cells[gid]
        return A.cable_cell(morph, d, labels, pol)

    def global_properties(self, kind):
        p = A.neuron_cable_properties()
        p.set_ion("na", int_con=10 * U.mM, ext_con=140 * U.mM, rev_pot=50 * U.mV)
        p.set_ion("k", int_con=54.4 * U.mM, ext_con=2.5 * U.mM, rev_pot=-77 * U.mV)
        return p


def accepts(paths):
    for path in paths:
        try:
            morph = load(path)
            labels, d, pol = decor_for(morph, 10.0)
            A.cable_cell(morph, d, labels, pol)
        except Exception:  # the loader refuses a few tracings
            continue
        print(path)


def main():
    if sys.argv[1] == "--accepts":
        accepts(sys.argv[2].split(","))
        return
    paths, copies, tstop = sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3])
    dt = float(sys.argv[4]) if len(sys.argv) > 4 else 0.025
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    cells, skipped, cvs = [], 0, 0
    for path in paths:
        try:
            morph = load(path)
            extent = choose_extent(morph)
            labels, d, pol = decor_for(morph, extent)
            n = A.cv_data(A.cable_cell(morph, d, labels, pol)).num_cv
        except Exception:
            skipped += 1
            continue
        cells += [(morph, labels, d, pol)] * copies
        cvs += n * copies
    ctx = A.context(A.proc_allocation(threads=threads, gpu_id=None))
    sim = A.simulation(Recipe(cells), ctx)
    warm = 40 * dt
    sim.run(warm * U.ms, dt * U.ms)
    t0 = time.perf_counter()
    sim.run((warm + tstop) * U.ms, dt * U.ms)
    wall = time.perf_counter() - t0
    steps = int(round(tstop / dt))
    print(json.dumps({"cells": len(cells), "segments": cvs, "steps": steps, "wall_s": wall,
                      "threads": threads, "skipped": skipped,
                      "cell_steps_per_s": len(cells) * steps / wall}))


if __name__ == "__main__":
    main()
