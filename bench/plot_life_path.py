#!/usr/bin/env python3
"""Figure of `neurosolve life fit MODEL --lambda auto`: the held-out RMSE of the
cross-validation (mean over folds, one standard error as bars) and the fit's RMSE
on all the data against the penalty's value (log scale), the chosen value and
the least CV error marked, and, from the sidecar OUT.json next to OUT_path.csv,
the 1se-gain rule's bound (the least + max(SE, share x gain over the zero
prediction)); on a second axis the non-zero weights (or groups).
Usage: plot_life_path.py PATH.csv OUT.png"""
import argparse
import csv
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    a = ap.parse_args()
    with open(a.csv) as f:
        reader = csv.DictReader(f)
        name = reader.fieldnames[0]
        rows = list(reader)
    x = [float(r[name]) for r in rows]
    cv = [float(r["cv_rmse"]) for r in rows]
    se = [float(r["cv_se"]) for r in rows]
    fit = [float(r["rmse"]) for r in rows]
    groups = any(int(r["groups_nonzero"]) > 0 for r in rows)
    nz = [int(r["groups_nonzero"] if groups else r["nonzero"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if not all(math.isnan(v) for v in cv):
        ax.errorbar(x, cv, yerr=se, fmt="o-", color="tab:blue", capsize=3, label="held-out RMSE (CV, +-1 SE)")
    ax.plot(x, fit, "s--", color="tab:gray", label="RMSE of the fit on all voxels")
    for r, xv in zip(rows, x):
        if r["chosen"] == "1":
            ax.axvline(xv, color="tab:red", lw=1.5, label=f"chosen: {xv:.4g}")
        if r["minimum"] == "1" and r["chosen"] != "1":
            ax.axvline(xv, color="tab:green", lw=1, ls=":", label=f"least CV error: {xv:.4g}")
    side = a.csv[:-len("_path.csv")] + ".json" if a.csv.endswith("_path.csv") else None
    if side and os.path.exists(side):
        with open(side) as f:
            doc = json.load(f)
        if doc.get("rule") == "1se-gain" and "cv_zero" in doc:
            best = min(range(len(cv)), key=lambda k: cv[k])
            bound = cv[best] + max(se[best], doc["gain_tolerance"] * (doc["cv_zero"] - cv[best]))
            ax.axhline(bound, color="tab:red", lw=0.8, ls="--",
                       label=f"least + max(SE, {doc['gain_tolerance']:g} x gain): {bound:.4g}")
    ax.set_xscale("log")
    ax.set_xlabel({"group": "group penalty G", "ridge": "ridge R", "lambda": "L1 lambda"}.get(name, name))
    ax.set_ylabel("RMSE of the signal")
    ax2 = ax.twinx()
    ax2.plot(x, nz, ".-", color="tab:orange", alpha=0.6)
    ax2.set_ylabel("non-zero groups" if groups else "non-zero weights", color="tab:orange")
    ax.legend(loc="upper center", fontsize=8)
    ax.set_title(f"LiFE regularisation path ({len(rows)} values)")
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
