#!/usr/bin/env python3
"""Pruning quality on the ground-truth phantom (bench/life_phantom.py): AUC and precision/recall of
true vs false streamlines for the plain NNLS fit and L1-regularised fits (ReAl-LiFE's lambda).

    python3 bench/life_quality.py NEUROSOLVE PHANTOM_DIR [--lambdas 0,1e3,1e4,1e5] [--nodes sum]

Score = fitted weight; AUC = probability that a random true streamline outweighs a random false
one (ties count half: all zero weights tie). Precision/recall of "kept" = weight > 0."""
import argparse
import json
import os
import subprocess

import numpy as np


def auc(score, label):
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[i:j + 1] = 0.5 * (i + j) + 1
        i = j + 1
    r = np.empty(len(s))
    r[order] = ranks
    pos = label == 1
    n1, n0 = pos.sum(), (~pos).sum()
    return (r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("phantom")
    ap.add_argument("--lambdas", default="0")
    ap.add_argument("--nodes", default="sum")
    ap.add_argument("--fit-args", default="")
    a = ap.parse_args()
    d = a.phantom
    lab = np.load(os.path.join(d, "labels.npy"))
    model = os.path.join(d, "model_" + a.nodes)
    if not os.path.exists(os.path.join(model, "phi_value.npy")):
        subprocess.run([a.exe, "life", "build", "--dwi", f"{d}/dwi.nii", "--bvals", f"{d}/dwi.bval", "--bvecs",
                        f"{d}/dwi.bvec", "--tracks", f"{d}/tracks.tck", "--out", model, "--nodes", a.nodes,
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
    fib = np.load(os.path.join(model, "streamlines.npy"))
    y = lab[fib]
    kp = os.path.join(d, "kinds.npy")
    kind = np.load(kp)[fib] if os.path.exists(kp) else None
    print(f"{'lambda':>10} {'AUC':>6} {'kept':>6} {'precision':>9} {'recall':>6} {'updates':>7} {'seconds':>7}"
          + ("  AUC vs bridges  AUC vs random curves" if kind is not None else ""))
    for lam in [float(x) for x in a.lambdas.split(",")]:
        w = os.path.join(model, f"w_l{lam:g}.npy")
        r = json.loads(subprocess.run([a.exe, "life", "fit", model, "--out", w, "--backend", "cpu", "--json",
                                       "--lambda", f"{lam:g}"] + a.fit_args.split(), check=True,
                                      capture_output=True, text=True).stdout)
        x = np.load(w)
        kept = x > 0
        prec = (y[kept] == 1).mean() if kept.any() else float("nan")
        rec = kept[y == 1].mean()
        print(f"{lam:10g} {auc(x, y):6.3f} {kept.sum():6d} {prec:9.3f} {rec:6.3f} {r['updates']:7d} "
              f"{r['seconds']:7.2f}" + (f"  {auc(x[kind != 2], y[kind != 2]):14.3f}  {auc(x[kind != 1], y[kind != 1]):19.3f}"
                                          if kind is not None else ""))
    print(f"baseline precision (all kept): {(y == 1).mean():.3f}")


if __name__ == "__main__":
    main()
