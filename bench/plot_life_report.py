#!/usr/bin/env python3
"""Figure of `neurosolve life report MODEL WEIGHTS --plot FILE.png`: the
SBBNNLS objective per update (log scale), the histogram of the fiber weights
(zeros counted apart) and the per-voxel RMSE before against after the fit.
Usage: plot_life_report.py RMSE.csv OUT.png --weights W.npy [--history H.npy]"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--weights", required=True)
    ap.add_argument("--history")
    a = ap.parse_args()
    w = np.load(a.weights)
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    before = np.array([float(r["rmse_before"]) for r in rows])
    after = np.array([float(r["rmse_after"]) for r in rows])
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))

    ax = axes[0]
    if a.history:
        h = np.load(a.history)
        ax.semilogy(np.arange(1, len(h) + 1), h, "-", color="tab:blue")
        ax.set_title(f"SBBNNLS objective ({len(h)} updates)")
    else:
        ax.set_title("no objective history")
    ax.set_xlabel("update")
    ax.set_ylabel("0.5 ||y - M w||^2")

    ax = axes[1]
    nz = w[w > 0]
    if len(nz):
        ax.hist(nz, bins=40, color="tab:green")
    ax.set_title(f"weights: {len(nz)} of {len(w)} fibers non-zero")
    ax.set_xlabel("fiber weight")
    ax.set_ylabel("fibers")

    ax = axes[2]
    ax.scatter(before, after, s=8, color="tab:red")
    m = max(before.max(), after.max()) if len(before) else 1
    ax.plot([0, m], [0, m], "k--", lw=0.8)
    ax.set_xlabel("RMSE before (demeaned signal)")
    ax.set_ylabel("RMSE after (residual)")
    ax.set_title(f"{len(before)} voxels: median {np.median(before):.3g} -> {np.median(after):.3g}")
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)


if __name__ == "__main__":
    main()
