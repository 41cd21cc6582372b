#!/usr/bin/env python3
"""The group table of `neurosolve life cohort` (OUT/life_cohort.tsv) as one figure: per subject
(and session) the fraction of streamlines kept, the median RMSE per voxel before and after the
fit, and the wall time of build, fit and report; failed subjects are marked.

usage: plot_life_cohort.py LIFE_COHORT.tsv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(x):
    try:
        return float(x)
    except ValueError:
        return float("nan")


def main():
    tsv, png = sys.argv[1], sys.argv[2]
    with open(tsv, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    names = [r["participant_id"] + ("" if r["session_id"] == "n/a" else "\n" + r["session_id"]) for r in rows]
    ok = [r["status"] == "done" for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(1, 3, figsize=(max(9, 1.1 * len(rows) + 4), 3.6), constrained_layout=True)
    ax[0].bar(x, [number(r["kept_fraction"]) for r in rows], color="tab:blue")
    ax[0].set_ylabel("fraction of fibers kept")
    ax[1].plot(x, [number(r["median_rmse_before"]) for r in rows], "o", label="signal RMS (before)")
    ax[1].plot(x, [number(r["median_rmse_after"]) for r in rows], "s", label="RMSE after the fit")
    ax[1].set_ylabel("median over voxels")
    ax[1].legend(fontsize=8)
    bottom = [0.0] * len(rows)
    for part, colour in (("build_s", "tab:gray"), ("fit_s", "tab:orange"), ("report_s", "tab:green")):
        v = [number(r[part]) if r["status"] == "done" else 0.0 for r in rows]
        ax[2].bar(x, v, bottom=bottom, color=colour, label=part[:-2])
        bottom = [b + c for b, c in zip(bottom, v)]
    ax[2].set_ylabel("wall time [s]")
    ax[2].legend(fontsize=8)
    for a in ax:
        a.set_xticks(list(x))
        a.set_xticklabels(names, fontsize=7)
        for i, good in enumerate(ok):
            if not good:
                a.axvspan(i - 0.45, i + 0.45, color="tab:red", alpha=0.15)
    fig.suptitle(f"life cohort: {sum(ok)} of {len(rows)} done" + (" (failed: red)" if not all(ok) else ""))
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    main()
