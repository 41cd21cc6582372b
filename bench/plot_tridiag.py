#!/usr/bin/env python3
"""Draw the journal paper's tridiagonal figures (Figs. 9-13) from the CSV of
`neurosolve bench tridiag --csv FILE`.

usage: plot_tridiag.py RESULTS.csv OUT.png

Panels (one PNG):
  row 1 (double) / row 2 (single), columns 1-2: speedup over the faster
    cuSPARSE routine for grid a (n 64-512) and grid b (n 1024-8192) against
    the batch size, one colour per n: solid = the fastest of our GPU methods,
    dashed = thomas-batch over gtsv2StridedBatch (the paper's Fig. 9 ratio).
  column 3: speedup over the sequential CPU solve at the largest batch of
    each n (Figs. 10-11): openmp, thomas-batch, best of ours, cuSPARSE.
  column 4, row 1: max relative error against the long double solve at the
    largest batch (Fig. 12a); row 2: device memory at the largest batch of
    grid b, workspace included (Fig. 12b); a last panel: VBatch CP vs NCP
    and the fixed sizes 256 / 512 (Fig. 13).
Rows that did not run (status other than ok) are left out; panels with no
data say so.
"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

OURS = ["thomas-batch", "warp", "block", "vbatch-cp", "vbatch-ncp"]
CUSPARSE = ["cusparse-strided", "cusparse-interleaved"]


def load(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok":
                continue
            for k in ("n", "batch", "unknowns", "repeats"):
                r[k] = int(r[k])
            for k in ("median_ms", "min_ms", "speedup_vs_cusparse", "speedup_vs_sequential", "eff_gbs",
                      "eff_over_copy", "max_rel_err", "device_bytes", "workspace_bytes"):
                try:
                    r[k] = float(r[k])
                except ValueError:
                    r[k] = math.nan
            rows.append(r)
    return rows


def pick(rows, **kw):
    return [r for r in rows if all(r[k] == v for k, v in kw.items())]


def empty(ax, text="no data in this run"):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="grey")


def ms_of(rows, prec, grid, n, batch, method):
    m = pick(rows, precision=prec, grid=grid, n=n, batch=batch, method=method)
    return m[0]["median_ms"] if m else math.nan


def speedup_panel(ax, rows, prec, grid):
    sub = pick(rows, precision=prec, grid=grid)
    ns = sorted({r["n"] for r in sub})
    drawn = False
    for i, n in enumerate(ns):
        colour = "C%d" % i
        batches = sorted({r["batch"] for r in sub if r["n"] == n})
        best, paper = [], []
        for b in batches:
            ours = [ms_of(rows, prec, grid, n, b, m) for m in OURS]
            ours = [x for x in ours if not math.isnan(x)]
            cus = [ms_of(rows, prec, grid, n, b, m) for m in CUSPARSE]
            cus = [x for x in cus if not math.isnan(x)]
            best.append(min(cus) / min(ours) if ours and cus else math.nan)
            strided = ms_of(rows, prec, grid, n, b, "cusparse-strided")
            thomas = ms_of(rows, prec, grid, n, b, "thomas-batch")
            paper.append(strided / thomas)
        if any(not math.isnan(v) for v in best):
            ax.plot(batches, best, "-o", color=colour, ms=3, label="n=%d best ours" % n)
            drawn = True
        if any(not math.isnan(v) for v in paper):
            ax.plot(batches, paper, "--", color=colour, lw=1, label="n=%d thomas/strided" % n)
            drawn = True
    ax.set_xscale("log")
    ax.axhline(1.0, color="k", lw=0.6)
    ax.set_xlabel("systems (batch)")
    ax.set_ylabel("speedup over cuSPARSE")
    ax.set_title("%s, grid %s (Fig. 9)" % (prec, grid), fontsize=9)
    if drawn:
        ax.legend(fontsize=6, ncol=2)
    else:
        empty(ax, "no GPU rows")


def sequential_panel(ax, rows, prec):
    sub = [r for r in pick(rows, precision=prec) if r["grid"] in ("a", "b")]
    ns = sorted({r["n"] for r in sub})
    series = {"openmp": [], "thomas-batch": [], "best ours": [], "best cuSPARSE": []}
    for n in ns:
        b = max(r["batch"] for r in sub if r["n"] == n)
        here = {r["method"]: r for r in sub if r["n"] == n and r["batch"] == b}

        def sp(methods):
            v = [here[m]["speedup_vs_sequential"] for m in methods if m in here]
            v = [x for x in v if not math.isnan(x)]
            return max(v) if v else math.nan

        series["openmp"].append(sp(["openmp"]))
        series["thomas-batch"].append(sp(["thomas-batch"]))
        series["best ours"].append(sp(OURS))
        series["best cuSPARSE"].append(sp(CUSPARSE))
    drawn = False
    for name, v in series.items():
        if any(not math.isnan(x) for x in v):
            ax.plot(ns, v, "-o", ms=3, label=name)
            drawn = True
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (largest batch of each n)")
    ax.set_ylabel("speedup over sequential")
    ax.set_title("%s: over the CPU (Figs. 10-11)" % prec, fontsize=9)
    if drawn:
        ax.legend(fontsize=6)
    else:
        empty(ax)


def error_panel(ax, rows, prec):
    sub = [r for r in pick(rows, precision=prec) if r["grid"] in ("a", "b")]
    methods = [m for m in ["sequential"] + OURS + CUSPARSE if any(r["method"] == m for r in sub)]
    for m in methods:
        pts = {}
        for r in sub:
            if r["method"] == m and r["max_rel_err"] > 0:
                pts[r["n"]] = max(pts.get(r["n"], 0.0), r["max_rel_err"])
        if pts:
            ns = sorted(pts)
            ax.plot(ns, [pts[n] for n in ns], "-o", ms=3, label=m)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("max relative error vs long double")
    ax.set_title("%s: accuracy (Fig. 12a), worst over batches" % prec, fontsize=9)
    if methods:
        ax.legend(fontsize=6)
    else:
        empty(ax)


def memory_panel(ax, rows):
    sub = pick(rows, precision="double", grid="b")
    if not sub:
        empty(ax)
        return
    b = max(r["batch"] for r in sub)
    sub = [r for r in sub if r["batch"] == b and r["device_bytes"] > 0]
    methods = sorted({r["method"] for r in sub})
    for m in methods:
        pts = sorted((r["n"], r["device_bytes"] / 2**30) for r in sub if r["method"] == m)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=3, label=m)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n")
    ax.set_ylabel("device memory [GiB]")
    ax.set_title("double, %d systems: memory incl. workspace (Fig. 12b)" % b, fontsize=9)
    if methods:
        ax.legend(fontsize=6)
    else:
        empty(ax, "no GPU rows")


def vbatch_panel(ax, rows):
    sub = pick(rows, precision="double", grid="vbatch")
    series = [("vbatch-ncp", "256-512", "NCP 256-512"), ("vbatch-cp", "256-512", "CP 256-512"),
              ("thomas-batch", "256", "fixed 256"), ("thomas-batch", "512", "fixed 512"),
              ("openmp", "256-512", "openmp 256-512")]
    drawn = False
    for method, sizes, label in series:
        pts = sorted((r["batch"], r["median_ms"]) for r in sub if r["method"] == method and r["sizes"] == sizes)
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", ms=3, label=label)
            drawn = True
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("systems (batch)")
    ax.set_ylabel("ms")
    ax.set_title("double: VBatch CP vs NCP (Fig. 13)", fontsize=9)
    if drawn:
        ax.legend(fontsize=6)
    else:
        empty(ax)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: plot_tridiag.py RESULTS.csv OUT.png")
    rows = load(sys.argv[1])
    fig, axes = plt.subplots(2, 5, figsize=(26, 9.5))
    for i, prec in enumerate(("double", "single")):
        speedup_panel(axes[i][0], rows, prec, "a")
        speedup_panel(axes[i][1], rows, prec, "b")
        sequential_panel(axes[i][2], rows, prec)
        error_panel(axes[i][3], rows, prec)
    memory_panel(axes[0][4], rows)
    vbatch_panel(axes[1][4], rows)
    fig.suptitle("neurosolve bench tridiag: %s" % sys.argv[1], fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
