#!/usr/bin/env python3
"""NEURON baseline for `neurosolve bench sim`: the same cells and protocol in NEURON.

usage: neuron_sim_bench.py MORPHOLOGY.swc[,MORPHOLOGY.swc...] CELLS TSTOP_MS [DT_MS] [THREADS]

With several morphologies (comma-separated), CELLS copies of each (a mixed population, as
`bench sim --mixed`); morphologies that Import3d cannot read are left out and counted in
"skipped". THREADS > 1 runs NEURON's threads (ParallelContext.nthread, cache_efficient).

Instantiates CELLS copies of the morphology through Import3d, sets nseg by the d_lambda rule
(0.1 at 100 Hz, Ra 35.4, cm 1: the same as neurosolve's default discretisation), inserts hh
everywhere (NEURON's defaults) and an IClamp of 1.5e-4 nA per um^2 of membrane at soma(0.5)
from 5 ms (neurosolve simulate's default stimulus), runs finitialize(-65) and continuerun(TSTOP)
with fixed dt, and prints one line of JSON: cells, segments (summed over cells), steps, wall
seconds of the run (not the set-up), segment-steps per second.
"""
import json
import math
import sys
import time

from neuron import h


class Cell:
    """A holder that Import3d fills with the cell's section lists."""


def build(path):
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.input(path)
    gui = h.Import3d_GUI(reader, False)
    cell = Cell()
    gui.instantiate(cell)
    return cell


def main():
    paths, cells, tstop = sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3])
    dt = float(sys.argv[4]) if len(sys.argv) > 4 else 0.025
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    keep, skipped, stims = [], [], []
    for path in paths:
        for copy in range(cells):
            try:
                cell = build(path)
            except Exception:  # Import3d refuses a few tracings
                skipped.append(path)
                break
            keep.append(cell)
            new = list(cell.all)  # the cell's own sections (no scan of every section: linear set-up)
            if not new:
                break
            for sec in new:
                sec.Ra = 35.4
                sec.cm = 1.0
                # d_lambda rule (NEURON's fixnseg.hoc, lambda_f at 100 Hz)
                n3d = int(h.n3d(sec=sec))
                if n3d < 2:
                    lam = 1e5 * math.sqrt(sec.diam / (4 * math.pi * 100 * sec.Ra * sec.cm))
                else:
                    x1, d1, acc = h.arc3d(0, sec=sec), h.diam3d(0, sec=sec), 0.0
                    for i in range(1, n3d):
                        x2, d2 = h.arc3d(i, sec=sec), h.diam3d(i, sec=sec)
                        if d1 + d2 > 0:  # zero diameters add no length constant
                            acc += (x2 - x1) / math.sqrt(d1 + d2)
                        x1, d1 = x2, d2
                    acc *= math.sqrt(2) * 1e-5 * math.sqrt(4 * math.pi * 100 * sec.Ra * sec.cm)
                    lam = sec.L / acc if acc > 0 else 1e9
                sec.nseg = int((sec.L / (0.1 * lam) + 0.9) / 2) * 2 + 1
                sec.insert("hh")
            # the stimulus: 1.5e-4 nA per um^2 of the soma's tree
            soma = new[0]
            root = h.SectionRef(sec=soma).root
            area = sum(seg.area() for sec in new if h.SectionRef(sec=sec).root == root for seg in sec)
            st = h.IClamp(soma(0.5))
            st.delay, st.dur, st.amp = 5.0, 1e9, 1.5e-4 * area
            stims.append(st)
    segments = sum(sec.nseg for sec in h.allsec())
    h.dt = dt
    h.load_file("stdrun.hoc")
    if threads > 1:
        pc = h.ParallelContext()
        pc.nthread(threads)
        h.cvode.cache_efficient(1)
    h.finitialize(-65)
    t0 = time.perf_counter()
    h.continuerun(tstop)
    wall = time.perf_counter() - t0
    steps = int(round(tstop / dt))
    print(json.dumps({"cells": len(stims), "segments": segments, "steps": steps, "wall_s": wall,
                      "threads": threads, "skipped": len(skipped),
                      "segment_steps_per_s": segments * steps / wall}))


if __name__ == "__main__":
    main()
