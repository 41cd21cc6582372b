#!/usr/bin/env python3
"""Models imported from NEURON (neurosolve.from_neuron) replayed without NEURON.

tests/data/neuron_import/NAME.{swc,model,params} are what from_neuron wrote for a model built
in NEURON 9.0.2, and NAME_neuron.csv is NEURON's own run of that model (v at the root
section's middle every 0.1 ms, NetCon spike times; validation/neuron_import_compare.py --refs,
the command in the file's header). `simulate` runs the written files with NetCon's spike-time
convention: equal spike counts, every spike within 1e-6 ms (NetCon times are step ends, so a
step's shift would be 0.025 ms), RMS within 1e-4 mV (the reference's 6 decimals). The files
themselves: every section has its nseg and the per-segment values are written as sec(x)
statements (the import's file side). A reference whose header names `mod` files runs with the
library `mechanisms build` makes of them (LIB in its arguments); one whose header has
`cpu_only = REASON` is skipped on the GPU (its mechanisms run on the CPU loop only). Its
`events_NAME` lines are the spike times of NAME.net's source NAME in NEURON (NetStims, noisy ones
drawing NEURON's Random123 streams, IntFires): the raster of `simulate` must give each the same
count, every spike within the spike tolerance.

Usage: test_neuron_import.py NEUROSOLVE ROOT cpu|cuda [DIR ...] (cuda skips, 77, without a GPU).
DIR: folders of references written by validation/neuron_import_table.py --refs (models not
bundled) in place of tests/data/neuron_import, checked against issue 40's targets (every spike
within 0.05 ms, RMS 0.05 mV).
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

BIN, ROOT, BACKEND = sys.argv[1], sys.argv[2], sys.argv[3]
BIN = os.path.abspath(BIN) if os.sep in BIN else BIN
DATA = [os.path.abspath(d) for d in sys.argv[4:]] or [os.path.join(ROOT, "tests", "data", "neuron_import")]
SPIKE_TOL, RMS_TOL = (0.05, 0.05) if sys.argv[4:] else (1e-6, 1e-4)


def header(path):
    h = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            if " = " in line:
                k, v = line[1:].split(" = ", 1)
                h[k.strip()] = v.strip()
    return h


def main():
    if BACKEND == "cuda":
        smi = shutil.which("nvidia-smi")
        if not smi or subprocess.run([smi, "-L"], capture_output=True).returncode != 0:
            print("SKIPPED: no GPU")
            return 77
    failures = []
    refs = sorted((d, f) for d in DATA for f in os.listdir(d) if f.endswith("_neuron.csv"))
    if not refs:
        failures.append(f"no references in {' '.join(DATA)}")
    for data, ref in refs:
        name = ref[:-len("_neuron.csv")]
        path = os.path.join(data, ref)
        h = header(path)
        rows = []
        with open(path) as f:
            for line in f:
                if line[0].isdigit():
                    rows.append([float(x) for x in line.split(",")])
        if BACKEND == "cuda" and "cpu_only" in h:
            print(f"{name} ({BACKEND}): skipped: {h['cpu_only']}")
            continue
        want = [float(x) for x in h["spikes"].split()]
        # the file side: nseg for every section, per-segment values
        swc_sections = {line.split()[0] for line in open(os.path.join(data, name + ".swc")) if line[0].isdigit()}
        params = open(os.path.join(data, name + ".params")).read()
        model = open(os.path.join(data, name + ".model")).read()
        nseg_lines = [ln for ln in params.splitlines() if ln.startswith("swc:") and ".nseg = " in ln]
        if not nseg_lines or not all(ln.split(".")[0][4:] in swc_sections for ln in nseg_lines):
            failures.append(f"{name}: params without per-section nseg ({len(nseg_lines)} lines)")
        if "(" not in model and any(int(ln.split("=")[1]) > 1 for ln in nseg_lines):
            failures.append(f"{name}: the model has no per-segment (sec(x)) statements")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run")
            args = h["args"].split()
            if "mod" in h:  # the library of the named .mod files, unchanged
                mods = os.path.join(tmp, "mod")
                os.makedirs(mods)
                for m in h["mod"].split():
                    shutil.copy(os.path.join(ROOT, m) if not os.path.isabs(m) else m, mods)
                lib = os.path.join(tmp, "lib.so")
                cuda = ["--cuda"] if BACKEND == "cuda" else []  # the GPU loop runs the library's CUDA code
                r = subprocess.run([BIN, "mechanisms", "build", mods, "-o", lib] + cuda, capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append(f"{name}: mechanisms build: {r.stderr.strip()}")
                    continue
                args = [lib if a == "LIB" else a for a in args]
            cmd = [BIN] + args + ["--spike-times", "netcon", "--record", f"swc={h['root']}:0.5",
                                  "--record-every", h["record_every"], "--backend", BACKEND,
                                  "--out", out, "--json", "--no-progress"]
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=data)
            if r.returncode != 0:
                failures.append(f"{name}: simulate failed: {r.stderr.strip()}")
                continue
            got = json.loads(r.stdout)["first_cells"][0]["spikes"]
            with open(out + "_traces.csv") as f:
                f.readline()
                v = [float(line.split(",")[1]) for line in f]
            events = {k[len("events_"):]: [float(x) for x in t.split()] for k, t in h.items() if k.startswith("events_")}
            if events:  # the sources' spikes: simulate's raster numbers them in NAME.net's order
                order = [w[1] for w in (ln.split() for ln in open(os.path.join(data, name + ".net")))
                         if len(w) > 1 and w[0] in ("train", "poisson", "source", "detector")]
                raster = {label: [] for label in order}
                with open(out + "_spikes.csv") as f:
                    f.readline()
                    for line in f:
                        k, _, t = line.split(",")
                        raster[order[int(k)]].append(float(t))
                n_ev, dev = 0, 0.0
                for label, want_ev in events.items():
                    mine = raster.get(label, [])
                    n_ev += len(want_ev)
                    dev = max([dev] + [abs(a - b) for a, b in zip(want_ev, mine)]
                              + ([math.inf] if len(mine) != len(want_ev) else []))
                print(f"{name} ({BACKEND}): events of {len(events)} sources, {n_ev} spikes, largest difference "
                      f"{dev:.2e} ms")
                if dev > SPIKE_TOL:
                    failures.append(f"{name}: the sources' spikes differ from NEURON's by {dev:.2e} ms")
        n = min(len(v), len(rows))
        rms = math.sqrt(sum((v[i] - rows[i][1]) ** 2 for i in range(n)) / n)
        dmax = max((abs(a - b) for a, b in zip(got, want)), default=0.0)
        print(f"{name} ({BACKEND}): {len(want)} / {len(got)} spikes, largest difference {dmax:.2e} ms, "
              f"soma RMS {rms:.2e} mV over {n} samples")
        # a reference must test something: three spikes, or a subthreshold trace that moves (EPSPs)
        span = max(r[1] for r in rows) - min(r[1] for r in rows)
        if len(got) != len(want) or dmax > SPIKE_TOL or rms > RMS_TOL or n != len(rows) or (len(want) < 3 and span < 1.0):
            failures.append(f"{name}: spikes {got} vs NEURON {want}, RMS {rms:.2e} mV, {n}/{len(rows)} samples")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
