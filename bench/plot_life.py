#!/usr/bin/env python3
"""Figures of `neurosolve bench life --csv FILE --plot FILE.png`:
left, the per-call time of each product variant (the paper's Tables 3-4 and
7-8 as bars); right, the SBBNNLS time over the fiber counts for CPU-naive,
CPU-opt, GPU-reference and GPU-opt (the paper's Table 9)."""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    prod = [r for r in rows if r["table"] == "products"]
    fit = [r for r in rows if r["table"] == "sbbnnls"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))

    ax = axes[0]
    labels, values, colors = [], [], []
    palette = {"cpu": "tab:blue", "cuda": "tab:green"}
    for r in prod:
        labels.append(f'{r["backend"]} {r["product"]} {r["variant"]} ({r["input"]})')
        values.append(float(r["ms"]))
        colors.append(palette.get(r["backend"], "gray"))
    ax.barh(range(len(values)), values, color=colors)
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("ms per product (median)")
    if prod:
        ax.set_title(f'products, {int(prod[0]["fibers"]):,} fibers, {int(prod[0]["coeffs"]):,} coefficients')

    ax = axes[1]
    series = defaultdict(list)
    for r in fit:
        series[r["variant"]].append((int(r["fibers"]), float(r["seconds"]), r["extrapolated"] == "1"))
    styles = {"cpu-naive": "o--", "cpu-opt": "o-", "gpu-reference": "s--", "gpu-opt": "s-"}
    for name, pts in series.items():
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(name, "x-"),
                label=name + (" (extrapolated)" if any(p[2] for p in pts) else ""))
    ax.set_xlabel("fibers")
    ax.set_ylabel("SBBNNLS seconds")
    ax.set_yscale("log")
    if fit:
        ax.set_title(f'SBBNNLS, maxit {fit[0]["iters"]}')
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: plot_life.py FILE.csv FILE.png")
    main(sys.argv[1], sys.argv[2])
