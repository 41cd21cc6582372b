#!/usr/bin/env python3
"""The layer 5 pyramidal cell model (data/models/l5pc_hay.model: 11 BBP
mechanisms with calcium dynamics, distance-dependent Ih, a Ca hot zone,
pas) in neurosolve against NEURON 9.0.2's traces (tests/data/neuron_l5/,
validation/neuron_model_compare.py), without NEURON: issue 19's validation.

`neurosolve mechanisms build data/mechanisms/bbp` (the system C compiler),
then `neurosolve simulate` with the reference's inputs: the morphology, the
parameter and model files, the clamps and sites of the file's header, 1 s
(40,000 steps; the second file to 500 ms, past its dendritic calcium spike),
recorded every 4th step (the reference's 0.1 ms). Per file:
equal soma spike counts, spike times within 0.05 ms, RMS of v per site within
0.1 mV (the issue's targets), and the largest differences are printed.
Backend: cpu (argument 3: cuda runs the GPU loop, with a --cuda library).
Skips (77) without a C compiler (or nvcc for cuda).

Usage: test_model_neuron.py NEUROSOLVE PROJECT_ROOT [cpu|cuda]
"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

BIN, ROOT = sys.argv[1], sys.argv[2]
BACKEND = sys.argv[3] if len(sys.argv) > 3 else "cpu"
REFS = os.path.join(ROOT, "tests", "data", "neuron_l5")
TOL_SPIKE, TOL_RMS = 0.05, 0.1  # [ms], [mV]


def header(path):
    h = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("#"):
                break
            if "=" in line:
                k, v = line[1:].split("=", 1)
                h[k.strip()] = v.strip()
    return h


def read_csv(path):
    rows = []
    with open(path) as f:
        names = None
        for line in f:
            if line.startswith("#"):
                continue
            if names is None:
                names = line.strip().split(",")
                continue
            rows.append([float(x) for x in line.split(",")])
    return names, rows


def crossings(t, v, thr=-20.0):
    return [t[k - 1] + (t[k] - t[k - 1]) * (thr - v[k - 1]) / (v[k] - v[k - 1])
            for k in range(1, len(v)) if v[k - 1] < thr <= v[k]]


def main():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("SKIPPED: no C compiler to build the BBP mechanisms")
        return 77
    if BACKEND == "cuda":
        if not shutil.which("nvcc"):
            print("SKIPPED: no nvcc")
            return 77
        smi = shutil.which("nvidia-smi")
        if not smi or subprocess.run([smi, "-L"], capture_output=True).returncode != 0:
            print("SKIPPED: no GPU")
            return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        # the CPU's: ctest's fixture (NS_TEST_LIBBBP, tests/CMakeLists.txt) where it ran
        lib = os.environ.get("NS_TEST_LIBBBP", "") if BACKEND == "cpu" else ""
        if not os.path.isfile(lib):
            lib = os.path.join(tmp, "libbbp.so")
            cmd = [BIN, "mechanisms", "build", os.path.join(ROOT, "data", "mechanisms", "bbp"), "-o", lib]
            if BACKEND == "cuda":
                cmd.append("--cuda")
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stdout, r.stderr)
                return 1
        # the second file up to 500 ms: its dendritic calcium spike is at 400 ms (CI time)
        for name, tstop in (("l5pc_hay", 1000.0), ("l5pc_hay_dend", 500.0)):
            ref = os.path.join(REFS, name + ".csv")
            h = header(ref)
            names, rows = read_csv(ref)
            rows = [r for r in rows if r[0] <= tstop + 1e-9]
            sites = h["sites"].split()
            out = os.path.join(tmp, name)
            cmd = [BIN, "simulate", os.path.join(ROOT, "data", "morphologies", h["swc"]),
                   "--params", os.path.join(ROOT, "data", "models", h["params"]),
                   "--model", os.path.join(ROOT, "data", "models", h["model"]), "--mechanisms", lib,
                   "--cm", "1",  # the reference's grid: d_lambda with cm 1, not the regions' cm
                   "--record-every", "4", "--out", out, "--no-progress", "--backend", BACKEND, "--tstop", str(tstop)]
            for c in h["iclamp"].split():
                cmd += ["--iclamp", c]
            for s in sites:
                cmd += ["--record", "swc=" + s]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                failures.append(f"{name}: simulate failed: {r.stderr.strip()}")
                continue
            ours_names, ours = read_csv(out + "_traces.csv")
            if len(ours) != len(rows) or len(ours_names) != len(sites) + 1:
                failures.append(f"{name}: {len(ours)} rows x {len(ours_names)} columns, NEURON {len(rows)} x "
                                f"{len(sites) + 1}")
                continue
            ref_spikes = [float(x) for x in h["spikes"].split() if float(x) <= tstop]
            with open(out + "_spikes.csv") as f:
                our_spikes = [float(line.split(",")[2]) for line in f.readlines()[1:]]
            dt_max = max((abs(a - b) for a, b in zip(ref_spikes, our_spikes)), default=0.0)
            rms = []
            for k in range(len(sites)):
                d = [ours[i][k + 1] - rows[i][k + 1] for i in range(len(rows))]
                rms.append(math.sqrt(sum(x * x for x in d) / len(d)))
            print(f"{name} ({BACKEND}): spikes NEURON {len(ref_spikes)} / neurosolve {len(our_spikes)}, max spike-time "
                  f"difference {dt_max:.2e} ms, RMS per site [mV] " + " ".join(f"{x:.2e}" for x in rms))
            if len(ref_spikes) != len(our_spikes):
                failures.append(f"{name}: {len(our_spikes)} spikes, NEURON {len(ref_spikes)}")
            if dt_max > TOL_SPIKE:
                failures.append(f"{name}: spike times differ by {dt_max} ms")
            if max(rms) > TOL_RMS:
                failures.append(f"{name}: RMS {max(rms)} mV")
    for f in failures:
        print("FAILED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
