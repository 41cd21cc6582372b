#!/usr/bin/env python3
"""NEURON baseline for a neurosolve model: CELLS copies of a morphology with a
model file (data/models/*.model, the format of docs/simulation.md "Models")
applied as validation/neuron_model_compare.py applies it, the BBP mechanisms
compiled by nrnivmodl (validation/nmodl_neuron_traces.py's compile_bbp), the
same discretisation (d_lambda 0.1 at 100 Hz with the parameter file's Ra and
cm 1), an IClamp at every soma(0.5), STEPS fixed steps with THREADS threads
(ParallelContext.nthread, cache_efficient). Prints one line of JSON: cells,
segments, steps, wall seconds of the steps (not the set-up), segment-steps per
second, soma spikes of cell 0 (the correctness check against neurosolve's).
NRN_MECH_DIR: a folder where nrnivmodl already compiled them (x86_64/).

usage: neuron_model_bench.py SWC PARAMS MODEL CELLS STEPS THREADS AMP_NA [DELAY_MS (1)]
"""
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "validation"))
import neuron_model_compare as nmc  # noqa: E402
import nmodl_neuron_traces as nnt  # noqa: E402


class Cell:
    """A holder that Import3d fills with the cell's section lists (no name clashes)."""


def region(sec):
    n = sec.name().split(".")[-1]
    return "soma" if n.startswith("soma") else "axon" if n.startswith("axon") else \
        "apical" if n.startswith("apic") else "basal" if n.startswith("dend") else "other"


def main():
    swc, params_path, model_path = sys.argv[1:4]
    cells, steps, threads, amp = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    delay = float(sys.argv[8]) if len(sys.argv) > 8 else 1.0
    work = os.environ.get("NRN_MECH_DIR")  # the BBP mechanisms compiled before (bench/grid.sh sim)
    if not work:
        work = tempfile.mkdtemp()
        nnt.compile_bbp(work)
    import neuron
    from neuron import h
    neuron.load_mechanisms(work)
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    h.load_file("stdrun.hoc")
    params = nmc.read_params(params_path)
    statements = nmc.read_model(model_path)
    h.F_CaDynamics_E2 = nmc.F_FILE
    keep, stims, segs = [], [], 0
    for _ in range(cells):
        reader = h.Import3d_SWC_read()
        reader.quiet = 1
        reader.input(swc)
        gui = h.Import3d_GUI(reader, 0)
        cell = Cell()
        gui.instantiate(cell)
        secs = [(0, region(sec), sec) for sec in cell.all]
        soma = secs[0][2]
        for _, reg, sec in secs:
            sec.Ra = params["Ra"]
            sec.cm = 1.0
            try:
                sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
            except RuntimeError:
                sec.nseg = 1
            segs += sec.nseg
            sec.cm = params["cm"][reg]
        nmc.apply_model(h, secs, statements, soma)
        st = h.IClamp(soma(0.5))
        st.delay, st.dur, st.amp = delay, 1e9, amp
        stims.append(st)
        keep.append((cell, gui, reader))
    h.celsius = params["celsius"]
    h.dt = params["dt"]
    h.secondorder = 0
    if threads > 1:
        pc = h.ParallelContext()
        pc.nthread(threads)
        h.cvode.cache_efficient(1)
    soma0 = keep[0][0].soma[0]
    tv = h.Vector().record(h._ref_t)
    vv = h.Vector().record(soma0(0.5)._ref_v)
    h.finitialize(params["v_init"])
    t0 = time.perf_counter()
    h.continuerun(steps * params["dt"])
    wall = time.perf_counter() - t0
    spikes = nmc.crossings(list(tv), list(vv), params["spike_threshold"])
    print(json.dumps({"cells": cells, "segments": segs, "steps": steps, "threads": threads, "wall_s": wall,
                      "segment_steps_per_s": segs * steps / wall, "spikes_cell0": spikes}))


if __name__ == "__main__":
    main()
