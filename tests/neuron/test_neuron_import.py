#!/usr/bin/env python3
"""Models imported from NEURON (neurosolve.from_neuron) replayed without NEURON.

tests/data/neuron_import/NAME.{swc,model,params} are what from_neuron wrote for a model built
in NEURON 9.0.2, and NAME_neuron.csv is NEURON's own run of that model (v at the root
section's middle every 0.1 ms, NetCon spike times; validation/neuron_import_compare.py --refs,
the command in the file's header). `simulate` runs the written files with NetCon's spike-time
convention: equal spike counts, every spike within 1e-6 ms (NetCon times are step ends, so a
step's shift would be 0.025 ms), RMS within 1e-4 mV (the reference's 6 decimals). The files
themselves: every section has its nseg and the per-segment values are written as sec(x)
statements (the import's file side).

Usage: test_neuron_import.py NEUROSOLVE ROOT cpu|cuda (cuda skips, 77, without a GPU).
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

BIN, ROOT, BACKEND = sys.argv[1], sys.argv[2], sys.argv[3]
DATA = os.path.join(ROOT, "tests", "data", "neuron_import")


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
    refs = sorted(f for f in os.listdir(DATA) if f.endswith("_neuron.csv"))
    if not refs:
        failures.append("no references in tests/data/neuron_import")
    for ref in refs:
        name = ref[:-len("_neuron.csv")]
        path = os.path.join(DATA, ref)
        h = header(path)
        rows = []
        with open(path) as f:
            for line in f:
                if line[0].isdigit():
                    rows.append([float(x) for x in line.split(",")])
        want = [float(x) for x in h["spikes"].split()]
        # the file side: nseg for every section, per-segment values
        swc_sections = {line.split()[0] for line in open(os.path.join(DATA, name + ".swc")) if line[0].isdigit()}
        params = open(os.path.join(DATA, name + ".params")).read()
        model = open(os.path.join(DATA, name + ".model")).read()
        nseg_lines = [ln for ln in params.splitlines() if ln.startswith("swc:") and ".nseg = " in ln]
        if not nseg_lines or not all(ln.split(".")[0][4:] in swc_sections for ln in nseg_lines):
            failures.append(f"{name}: params without per-section nseg ({len(nseg_lines)} lines)")
        if "(" not in model:
            failures.append(f"{name}: the model has no per-segment (sec(x)) statements")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "run")
            cmd = [BIN] + h["args"].split() + ["--spike-times", "netcon", "--record", f"swc={h['root']}:0.5",
                                               "--record-every", h["record_every"], "--backend", BACKEND,
                                               "--out", out, "--json", "--no-progress"]
            r = subprocess.run(cmd, capture_output=True, text=True, cwd=DATA)
            if r.returncode != 0:
                failures.append(f"{name}: simulate failed: {r.stderr.strip()}")
                continue
            got = json.loads(r.stdout)["first_cells"][0]["spikes"]
            with open(out + "_traces.csv") as f:
                f.readline()
                v = [float(line.split(",")[1]) for line in f]
        n = min(len(v), len(rows))
        rms = math.sqrt(sum((v[i] - rows[i][1]) ** 2 for i in range(n)) / n)
        dmax = max((abs(a - b) for a, b in zip(got, want)), default=0.0)
        print(f"{name} ({BACKEND}): {len(want)} / {len(got)} spikes, largest difference {dmax:.2e} ms, "
              f"soma RMS {rms:.2e} mV over {n} samples")
        if len(got) != len(want) or dmax > 1e-6 or rms > 1e-4 or n != len(rows) or len(want) < 3:
            failures.append(f"{name}: spikes {got} vs NEURON {want}, RMS {rms:.2e} mV, {n}/{len(rows)} samples")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
