#!/usr/bin/env python3
"""End-to-end LiFE against DIPY on the same phantom in the same run (issue 21, part 5).

    neurosolve life synth P10K --phantom --streamlines 10000          (the phantom, docs/life.md)
    taskset -c 0,1 env OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive python3 bench/life_dipy_bench.py NEUROSOLVE P10K [--repeats 2] [--dipy]
    (python3 with dipy 1.12.1 and nibabel importable: PYTHONPATH=.whl/site-dipy on python 3.12, or a venv)

neurosolve: `life build` + `life fit` with default settings (a fresh model folder each repeat; the CPU
variants are chosen by a rule, ns_life_cpu_auto_variant, so selection_s is 0); DIPY: dipy.tracking.life.FiberModel(gtab).fit(data, streamlines)
(nibabel loads; model setup + its solver, default settings), run in a child process. Each side: wall
seconds, CPU seconds and peak resident memory of the child (os.wait4's rusage), and the relative residual
||y - Mw|| / ||y|| of the demeaned signal in scanner units over the model's voxels (DIPY's is
computed on its own model; both models hold the same voxels)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

DIPY_CHILD = r'''
import sys, json, time, numpy as np, nibabel as nib
from dipy.core.gradients import gradient_table
from dipy.io.gradients import read_bvals_bvecs
import dipy.tracking.life as life
d = sys.argv[1]
t0 = time.perf_counter()
img = nib.load(d + "/dwi.nii")
data = np.asarray(img.dataobj, dtype=float)
bvals, bvecs = read_bvals_bvecs(d + "/dwi.bval", d + "/dwi.bvec")
gtab = gradient_table(bvals, bvecs=bvecs)
sl = nib.streamlines.load(d + "/tracks.tck").streamlines
inv = np.linalg.inv(img.affine)
streamlines = [s @ inv[:3, :3].T + inv[:3, 3] for s in sl]
fit = life.FiberModel(gtab).fit(data, streamlines, affine=np.eye(4))
t1 = time.perf_counter()
beta = np.asarray(fit.beta)
y = fit.fit_data.reshape(len(fit.vox_coords), -1) * fit.b0_signal[:, None]
res = (fit.fit_data.reshape(len(fit.vox_coords), -1) - (fit.life_matrix @ beta).reshape(len(fit.vox_coords), -1)) * fit.b0_signal[:, None]
print(json.dumps({"seconds": t1 - t0, "voxels": len(fit.vox_coords), "kept": int((beta > 0).sum()),
                  "relative_residual": float(np.sqrt((res ** 2).sum() / (y ** 2).sum()))}))
np.save(sys.argv[2], beta)
'''


def timed(cmd, env=None):
    """Run cmd; wall seconds, peak RSS [MB] and (timed.cpu) user + system CPU seconds of the child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        sec = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {stderr[-2000:]}")
    timed.cpu = ru.ru_utime + ru.ru_stime  # CPU seconds: the fairer measure on a loaded machine
    return stdout, sec, ru.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("phantom")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--dipy", action="store_true", help="also run DIPY (slow)")
    a = ap.parse_args()
    d = a.phantom
    rows = []
    print(json.dumps({"load_average": os.getloadavg()}), flush=True)
    for rep in range(a.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            m = os.path.join(tmp, "model")
            _, tb, mb = timed([a.exe, "life", "build", "--dwi", f"{d}/dwi.nii", "--bvals", f"{d}/dwi.bval",
                               "--bvecs", f"{d}/dwi.bvec", "--tracks", f"{d}/tracks.tck", "--out", m, "--quiet"])
            cb = timed.cpu
            out, tf, mf = timed([a.exe, "life", "fit", m, "--out", os.path.join(tmp, "w.npy"), "--backend", "cpu",
                                 "--json"])
            cf = timed.cpu
            fit = json.loads(out)
            rep_ = json.loads(subprocess.run([a.exe, "life", "report", m, os.path.join(tmp, "w.npy"), "--json"],
                                             capture_output=True, text=True, check=True).stdout)
            row = {"tool": "neurosolve", "build_s": tb, "fit_s": tf, "total_s": tb + tf, "cpu_s": cb + cf, "peak_mb": max(mb, mf),
                   "updates": fit["updates"], "selection_s": fit["variant_selection_seconds"],
                   "relative_residual": rep_["relative_residual"], "kept": rep_["fibers_kept"]}
            rows.append(row)
            print(json.dumps(row), flush=True)
            if a.dipy:
                code = os.path.join(tmp, "dipy_child.py")
                open(code, "w").write(DIPY_CHILD)
                out, t, mem = timed([sys.executable, code, d, os.path.join(tmp, "beta.npy")])
                r = json.loads(out.strip().splitlines()[-1])
                row = {"tool": "dipy", "total_s": t, "cpu_s": timed.cpu, "inner_s": r["seconds"], "peak_mb": mem,
                       "relative_residual": r["relative_residual"], "kept": r["kept"]}
                rows.append(row)
                print(json.dumps(row), flush=True)
                ns = rows[-2]
                print(json.dumps({"repeat": rep, "wall_ratio": t / ns["total_s"], "cpu_ratio": timed.cpu / ns["cpu_s"],
                                  "memory_ratio": mem / ns["peak_mb"],
                                  "neurosolve_residual_at_or_below_dipy": ns["relative_residual"] <=
                                  r["relative_residual"] + 1e-4}), flush=True)


if __name__ == "__main__":
    main()
