#!/usr/bin/env python3
"""The 1,000-cell row of issue 40: a population of a model imported from NEURON, run by
neurosolve (`simulate --cells CELLS`, the written files) and by NEURON with THREADS threads in
the same run, compared per cell-step, with the correctness check in the same run.

    python3 bench/neuron_import_bench.py --neurosolve build-cuda/neurosolve --backend cuda \
        --mod DIR SETUP [--cells 1000] [--neuron-cells 64] [--threads 16] [--tstop MS] [--out DIR]

SETUP is a setup file of validation/neuron_import_compare.py that builds one cell and leaves
it in `cell` (a template instance: validation/models/hay_modeldb_139653.py). NEURON: the setup
is run NEURON_CELLS times in one NEURON process, each run's cell and stimuli kept, so NEURON
simulates NEURON_CELLS independent copies as the model's authors build them, with THREADS
threads (ParallelContext.nthread, cache_efficient). Building a Hay cell takes NEURON about half a
second, so 1,000 of them do not fit a 10-minute call: the comparison is per cell-step, and
NEURON runs fewer copies (default min(CELLS, 64): 4 a thread at 16 threads) while neurosolve
runs CELLS. Cell 0 is imported by neurosolve.from_neuron (with the library that `mechanisms
build` makes of the --mod folders, the same unchanged .mod files nrnivmodl compiles for NEURON;
`--cuda` for the GPU backend). Set-up and run are timed apart on both sides: NEURON's set-up is
the building of the copies and finitialize, its run psolve to TSTOP; neurosolve's run is
`simulate --json`'s wall_s (the steps), its set-up the rest of the process's wall time
(reading the files, the library, the device). The speed-up is NEURON's run time per cell-step
over neurosolve's. The check: NetCon spike times at the soma's middle in NEURON's cells 0 and
NEURON_CELLS-1 and neurosolve's cell 0 (`--spike-times netcon`): equal counts, every spike within
0.05 ms; all of neurosolve's CELLS cells have the same spike count (identical copies).
Progress goes to stderr; one JSON line to stdout: the cells each side ran, segments a cell,
steps, set-up and run seconds of each side, ns per cell-step of each, the speed-up, the check.
Exit 1 when the check fails.
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
T0 = time.perf_counter()


def progress(msg):
    print(f"[{time.perf_counter() - T0:7.1f} s] {msg}", file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setup")
    ap.add_argument("--neurosolve", required=True)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--mod", action="append", default=[])
    ap.add_argument("--cells", type=int, default=1000, help="cells neurosolve runs")
    ap.add_argument("--neuron-cells", type=int, help="cells NEURON runs (default min(CELLS, 64))")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--tstop", type=float)
    ap.add_argument("--out")
    ap.add_argument("--also-gpu-mechanisms", metavar="PATH",
                    help="run neurosolve a second time with simulate --gpu-mechanisms PATH (e.g. per-mechanism: "
                         "one launch per mechanism and phase) and report its time beside")
    a = ap.parse_args()
    n_nrn = a.neuron_cells or min(a.cells, 64)
    if a.cells < 1 or n_nrn < 1 or a.threads < 1:
        ap.error("--cells, --neuron-cells and --threads must be at least 1")
    # the setup may change directory (a ModelDB folder's own relative paths)
    a.neurosolve = os.path.abspath(a.neurosolve) if os.sep in a.neurosolve else a.neurosolve
    a.mod = [os.path.abspath(m) for m in a.mod]
    a.setup = os.path.abspath(a.setup)
    a.out = os.path.abspath(a.out) if a.out else None
    for k in [k for k in os.environ if k.startswith("NS_MODELDB_") or k == "NS_BLUEPYOPT"]:
        os.environ[k] = os.path.abspath(os.environ[k])  # read again by each copy's setup
    from neuron_import_compare import build_library, compile_neuron
    work = a.out or tempfile.mkdtemp(prefix="ns_import_bench_")
    os.makedirs(work, exist_ok=True)
    nrn = os.path.join(work, "nrn")
    shutil.rmtree(nrn, ignore_errors=True)
    os.makedirs(nrn)
    progress(f"mechanisms build ({a.backend}) of {', '.join(a.mod)}")
    lib = build_library(a.neurosolve, a.mod, os.path.join(work, "mechanisms.so"), a.backend == "cuda")
    progress("nrnivmodl")
    compile_neuron(a.mod, nrn)
    import neuron
    from neuron import h
    import neurosolve as ns
    neuron.load_mechanisms(nrn)
    setup = compile(open(a.setup).read(), a.setup, "exec")
    keep, cells = [], []
    t0 = time.perf_counter()
    for k in range(n_nrn):
        space = {"h": h, "ROOT": ROOT, "__name__": "setup"}
        exec(setup, space)
        keep.append(space)
        cells.append(space["cell"])
        if k == 0 or (k + 1) % 8 == 0 or k + 1 == n_nrn:
            progress(f"NEURON: {k + 1} of {n_nrn} cells built")
    if a.tstop:
        h.tstop = a.tstop
    nrn_build = time.perf_counter() - t0
    progress("from_neuron (cell 0)")
    imp = ns.from_neuron(cells[0], out=os.path.join(work, "imported"), name="cell", library=lib)
    soma = [list(c.all)[0] for c in (cells[0], cells[-1])]
    recs = []
    for s in soma:
        nc = h.NetCon(s(0.5)._ref_v, None, sec=s)
        nc.threshold = THRESHOLD
        vec = h.Vector()
        nc.record(vec)
        recs.append((nc, vec))
    segs = [sum(int(s.nseg) for s in c.all) for c in cells]
    pc = h.ParallelContext()
    pc.nthread(a.threads)
    h.cvode.cache_efficient(1)
    steps = int(round(h.tstop / h.dt))
    t0 = time.perf_counter()
    h.finitialize(h.v_init)
    nrn_setup = nrn_build + time.perf_counter() - t0
    progress(f"NEURON: {n_nrn} cells x {segs[0]} segments, {steps} steps, {a.threads} threads")
    t0 = time.perf_counter()
    chunks = 10  # psolve continues from h.t: progress every tenth of the run
    for q in range(1, chunks + 1):
        pc.psolve(h.tstop * q / chunks)
        progress(f"NEURON: t = {h.t:.1f} of {h.tstop:g} ms")
    nrn_run = time.perf_counter() - t0
    nrn_spikes = [list(v) for _, v in recs]
    pc.nthread(1)
    cmd = imp.command(a.neurosolve, lib, extra=["--cells", str(a.cells), "--backend", a.backend, "--spike-times",
                                                "netcon", "--json", "--no-progress", "--out",
                                                os.path.join(work, "run")])
    progress(f"neurosolve: {a.cells} cells, {a.backend}")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    ns_total = time.perf_counter() - t0
    if r.returncode != 0:
        print(f"neurosolve failed ({' '.join(cmd)}):\n{r.stderr.strip()}", file=sys.stderr)
        return 1
    j = json.loads(r.stdout)
    ours = j["first_cells"][0]["spikes"]
    ok = all(len(ours) == len(s) and all(abs(x - y) <= 0.05 for x, y in zip(ours, s)) for s in nrn_spikes)
    ok = ok and j["spikes"] == len(ours) * a.cells and j["cells"] == a.cells and len(ours) > 0
    ok = ok and all(s == segs[0] for s in segs)
    ns_steps = j["steps"] if j["steps"] else steps
    nrn_cs = 1e9 * nrn_run / (n_nrn * steps)
    ns_cs = 1e9 * j["wall_s"] / (a.cells * ns_steps)
    res = {"neuron_cells": n_nrn, "neurosolve_cells": a.cells, "segments_per_cell": segs[0], "steps": steps,
           "threads": a.threads, "backend": j["backend"],
           "neuron_setup_s": nrn_setup, "neuron_run_s": nrn_run,
           "neurosolve_setup_s": ns_total - j["wall_s"], "neurosolve_run_s": j["wall_s"],
           "neuron_ns_per_cell_step": nrn_cs, "neurosolve_ns_per_cell_step": ns_cs, "speedup": nrn_cs / ns_cs,
           "spikes_neuron_first_last": nrn_spikes, "spikes_neurosolve_cell0": ours,
           "spikes_neurosolve_total": j["spikes"], "check": "ok" if ok else "FAILED", "neuron": h.nrnversion(5),
           "gpu_mechanisms": j.get("gpu_mechanisms"), "gpu_graph": j.get("gpu_graph", False),
           "command": " ".join(cmd)}
    if a.also_gpu_mechanisms:  # the same command on another path, for the same-run comparison
        cmd2 = cmd + ["--gpu-mechanisms", a.also_gpu_mechanisms]
        progress(f"neurosolve: {a.cells} cells, {a.backend}, --gpu-mechanisms {a.also_gpu_mechanisms}")
        r2 = subprocess.run(cmd2, capture_output=True, text=True)
        if r2.returncode != 0:
            print(f"neurosolve failed ({' '.join(cmd2)}):\n{r2.stderr.strip()}", file=sys.stderr)
            return 1
        j2 = json.loads(r2.stdout)
        ns2 = 1e9 * j2["wall_s"] / (a.cells * ns_steps)
        theirs = j2["first_cells"][0]["spikes"]
        diff = max((abs(x - y) for x, y in zip(ours, theirs)), default=0.0) if len(theirs) == len(ours) else None
        res["also"] = {"gpu_mechanisms": j2.get("gpu_mechanisms"), "gpu_graph": j2.get("gpu_graph", False),
                       "neurosolve_run_s": j2["wall_s"], "neurosolve_ns_per_cell_step": ns2,
                       "speedup": nrn_cs / ns2, "spikes_total": j2["spikes"], "cell0_spike_max_diff_ms": diff}
        progress(f"--gpu-mechanisms {a.also_gpu_mechanisms}: {ns2:.1f} ns per cell-step: {nrn_cs / ns2:.1f}x; "
                 f"cell 0's spikes within {diff} ms")
    progress(f"NEURON {nrn_cs:.0f} ns, neurosolve {ns_cs:.1f} ns per cell-step: {nrn_cs / ns_cs:.1f}x; "
             f"check {res['check']}")
    print(json.dumps(res))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
