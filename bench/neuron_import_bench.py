#!/usr/bin/env python3
"""The 1,000-cell row of issue 40: CELLS copies of a model imported from NEURON, run by NEURON
with THREADS threads and by neurosolve (`simulate --cells CELLS`, the written files) in the same
run, per cell-step, with the correctness check in the same run.

    python3 bench/neuron_import_bench.py --neurosolve build-cuda/neurosolve --backend cuda \
        --mod DIR SETUP [--cells 1000] [--threads 16] [--tstop MS] [--out DIR]

SETUP is a setup file of validation/neuron_import_compare.py that builds one cell and leaves
it in `cell` (a template instance: validation/models/hay_modeldb_139653.py); it is run CELLS
times in one NEURON process, each run's cell and stimuli kept, so NEURON simulates CELLS
independent copies as the model's authors build them. Cell 0 is imported by
neurosolve.from_neuron (with the library that `mechanisms build` makes of the --mod folders, the
same unchanged .mod files nrnivmodl compiles for NEURON). NEURON runs THREADS threads
(ParallelContext.nthread, cache_efficient) to TSTOP; its wall time counts fadvance's loop only.
neurosolve's is `simulate --json`'s wall_s (the steps, not the set-up). The check: every cell's
NetCon spike times at the soma's middle in NEURON (cells 0 and CELLS-1) and neurosolve's cell 0
with `--spike-times netcon`: equal counts, every spike within 0.05 ms; all of neurosolve's cells
have the same spike count (identical copies). Prints one JSON line: cells, segments, steps,
NEURON and neurosolve wall seconds, ns per cell-step of each, the speed-up, the spike check.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "validation"))
THRESHOLD = -20.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setup")
    ap.add_argument("--neurosolve", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--mod", action="append", default=[])
    ap.add_argument("--cells", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--tstop", type=float)
    ap.add_argument("--out")
    a = ap.parse_args()
    # the setup may change directory (a ModelDB folder's own relative paths)
    a.neurosolve = os.path.abspath(a.neurosolve) if os.sep in a.neurosolve else a.neurosolve
    a.mod = [os.path.abspath(m) for m in a.mod]
    a.setup = os.path.abspath(a.setup)
    a.out = os.path.abspath(a.out) if a.out else None
    from neuron_import_compare import compile_neuron, mod_files
    work = a.out or tempfile.mkdtemp(prefix="ns_import_bench_")
    os.makedirs(work, exist_ok=True)
    mods, nrn = os.path.join(work, "mod"), os.path.join(work, "nrn")
    for d in (mods, nrn):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for f in mod_files(a.mod):
        shutil.copy(f, mods)
    lib = os.path.join(work, "mechanisms.so")
    subprocess.run([a.neurosolve, "mechanisms", "build", mods, "-o", lib], check=True, capture_output=True)
    compile_neuron(a.mod, nrn)
    import neuron
    from neuron import h
    import neurosolve as ns
    neuron.load_mechanisms(nrn)
    setup = open(a.setup).read()
    keep, cells = [], []
    for _ in range(a.cells):
        space = {"h": h, "ROOT": ROOT, "__name__": "setup"}
        exec(compile(setup, a.setup, "exec"), space)
        keep.append(space)
        cells.append(space["cell"])
    if a.tstop:
        h.tstop = a.tstop
    imp = ns.from_neuron(cells[0], out=os.path.join(work, "imported"), name="cell", library=lib)
    soma = [list(c.all)[0] for c in (cells[0], cells[-1])]
    recs = []
    for s in soma:
        nc = h.NetCon(s(0.5)._ref_v, None, sec=s)
        nc.threshold = THRESHOLD
        vec = h.Vector()
        nc.record(vec)
        recs.append((nc, vec))
    segs = sum(int(s.nseg) for c in cells for s in c.all)
    pc = h.ParallelContext()
    pc.nthread(a.threads)
    h.cvode.cache_efficient(1)
    steps = int(round(h.tstop / h.dt))
    h.finitialize(h.v_init)
    t0 = time.perf_counter()
    pc.psolve(h.tstop)
    nrn_wall = time.perf_counter() - t0
    nrn_spikes = [list(v) for _, v in recs]
    pc.nthread(1)
    cmd = imp.command(a.neurosolve, lib, extra=["--cells", str(a.cells), "--backend", a.backend, "--spike-times",
                                                "netcon", "--json", "--no-progress", "--out",
                                                os.path.join(work, "run")])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"neurosolve failed ({' '.join(cmd)}):\n{r.stderr.strip()}", file=sys.stderr)
        return 1
    j = json.loads(r.stdout)
    ours = j["first_cells"][0]["spikes"]
    ok = all(len(ours) == len(s) and all(abs(x - y) <= 0.05 for x, y in zip(ours, s)) for s in nrn_spikes)
    ok = ok and j["spikes"] == len(ours) * a.cells and j["cells"] == a.cells
    cell_steps = a.cells * (j["steps"] if j["steps"] else steps)
    res = {"cells": a.cells, "segments": segs, "steps": steps, "threads": a.threads, "backend": j["backend"],
           "neuron_wall_s": nrn_wall, "neurosolve_wall_s": j["wall_s"],
           "neuron_ns_per_cell_step": 1e9 * nrn_wall / (a.cells * steps),
           "neurosolve_ns_per_cell_step": 1e9 * j["wall_s"] / cell_steps,
           "speedup": nrn_wall / j["wall_s"] * (cell_steps / (a.cells * steps)),
           "spikes_neuron": nrn_spikes, "spikes_neurosolve_cell0": ours, "spikes_neurosolve_total": j["spikes"],
           "check": "ok" if ok else "FAILED", "neuron": h.nrnversion(5), "command": " ".join(cmd)}
    print(json.dumps(res))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
