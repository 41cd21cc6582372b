#!/usr/bin/env python3
"""Draw the cuHinesBatch paper's speedup figures from `neurosolve bench hines --csv`.

usage: plot_hines.py RESULTS.csv OUT.png

Panels (as in the paper, speedup over the sequential CPU solve):
  left   Fig. 3: every method against the cell count for medium-high (or the first shape)
  middle Fig. 4: Block-Interleaved block-size sweep at the largest cell count
  right  Fig. 5: each shape at the largest cell count, the best GPU method and OpenMP
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(row):
    return f"{row['method']}/{row['block_size']}" if int(row["block_size"]) else row["method"]


def main(path, out):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    focus = "medium-high" if "medium-high" in shapes else shapes[0]
    largest = max(int(r["cells"]) for r in rows)

    fig, axes = plt.subplots(1, 3, figsize=(17, 5))
    # Fig. 3: speedup vs cells, one line per method (BS sweep: best BS only).
    series = defaultdict(dict)
    for r in rows:
        if r["shape"] != focus:
            continue
        name = r["method"]
        c = int(r["cells"])
        series[name][c] = max(series[name].get(c, 0.0), float(r["speedup"]))
    ax = axes[0]
    for name, pts in series.items():
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("cells")
    ax.set_ylabel("speedup over sequential CPU")
    ax.set_title(f"{focus}: methods (Fig. 3)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)

    # Fig. 4: block-size sweep at the largest count, with the other methods as bars.
    ax = axes[1]
    sel = [r for r in rows if r["shape"] == focus and int(r["cells"]) == largest]
    names = [label(r) for r in sel]
    ax.bar(range(len(sel)), [float(r["speedup"]) for r in sel], color="tab:blue")
    ax.set_xticks(range(len(sel)))
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("speedup over sequential CPU")
    ax.set_title(f"{focus}, {largest} cells (Fig. 4)")
    ax.grid(True, axis="y", alpha=0.3)

    # Fig. 5: per shape at the largest count: OpenMP and the best GPU method.
    ax = axes[2]
    omp, best, best_name = [], [], []
    for s in shapes:
        sr = [r for r in rows if r["shape"] == s and int(r["cells"]) == largest]
        o = [float(r["speedup"]) for r in sr if r["method"] == "openmp"]
        g = [r for r in sr if r["method"] not in ("sequential", "openmp")]
        omp.append(o[0] if o else 0.0)
        if g:
            top = max(g, key=lambda r: float(r["speedup"]))
            best.append(float(top["speedup"]))
            best_name.append(label(top))
        else:
            best.append(0.0)
            best_name.append("")
    xs = range(len(shapes))
    ax.bar([x - 0.2 for x in xs], omp, width=0.4, label="openmp")
    ax.bar([x + 0.2 for x in xs], best, width=0.4, label="best GPU method")
    for x, v, n in zip(xs, best, best_name):
        if n:
            ax.text(x + 0.2, v, n, rotation=90, fontsize=7, ha="center", va="bottom")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(shapes, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over sequential CPU")
    ax.set_title(f"each shape, {largest} cells (Fig. 5)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)

    device = rows[0].get("device", "")
    fig.suptitle(f"neurosolve bench hines ({device})")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
