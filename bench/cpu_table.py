#!/usr/bin/env python3
"""The table of bench/device_cpu.sh: our CPU loop against Arbor and NEURON, per cell-step.

usage: cpu_table.py OUT_DIR FEW_DIR THREADS

Reads OUT_DIR/one_{1,T}.csv (bench sim --arbor --neuron), OUT_DIR/mixed_{1,T}.csv
(bench sim --mixed --arbor --neuron-threads) and FEW_DIR/few_{1,T}.csv, prints a Markdown
table of cell-steps per second and ratios, and the issue 23 targets met or missed.
"""
import csv
import os
import sys


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def one(out, th):
    r = [x for x in rows(f"{out}/one_{th}.csv") if x["backend"] == "cpu"]
    if not r:
        return None
    x = r[0]
    return (float(x["cell_steps_per_s"]), float(x["arbor_cell_steps_per_s"]),
            float(x["neuron_cell_steps_per_s"]), int(x["cells"]), int(x["compartments"]))


def mixed(out, th):
    r = [x for x in rows(f"{out}/mixed_{th}.csv") if x["backend"] == "cpu" and x["population"] == "bundled x5"]
    if not r:
        return None
    x = r[0]
    return (float(x["cell_steps_per_s"]), float(x["arbor_cell_steps_per_s"]),
            float(x["neuron_cell_steps_per_s"]), int(x["cells"]), int(x["compartments"]))


def ratio(a, b):
    return f"{a / b:.2f}x" if a > 0 and b > 0 else "-"


def main():
    out, few, t = sys.argv[1], sys.argv[2], sys.argv[3]
    print("| population | cells | compartments | threads | neurosolve cell-steps/s | Arbor | NEURON "
          "| vs Arbor | vs NEURON |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    res = {}
    for name, get in (("one shape (allen_rbp4)", one), ("mixed (bundled x5)", mixed)):
        for th in ("1", t):
            v = get(out, th)
            res[(name, th)] = v
            if v is None:
                print(f"| {name} | - | - | {th} | (missing) | | | | |")
                continue
            ours, arb, nrn, cells, comps = v
            print(f"| {name} | {cells} | {comps} | {th} | {ours:.4g} | {arb:.4g} | {nrn:.4g} "
                  f"| {ratio(ours, arb)} | {ratio(ours, nrn)} |")
    print()
    print(f"| population | neurosolve {t}/1 threads | Arbor {t}/1 | NEURON {t}/1 |")
    print("|---|---:|---:|---:|")
    for name in ("one shape (allen_rbp4)", "mixed (bundled x5)"):
        a, b = res.get((name, "1")), res.get((name, t))
        if a and b:
            print(f"| {name} | {ratio(b[0], a[0])} | {ratio(b[1], a[1])} | {ratio(b[2], a[2])} |")
    print()
    f1 = {x["cells"]: float(x["ms_per_step"]) for x in rows(f"{few}/few_1.csv") if x["backend"] == "cpu"}
    ft = {x["cells"]: float(x["ms_per_step"]) for x in rows(f"{few}/few_{t}.csv") if x["backend"] == "cpu"}
    print(f"| few cells | ms/step, 1 thread | ms/step, {t} threads | {t} threads vs 1 |")
    print("|---:|---:|---:|---:|")
    for c in sorted(f1, key=int):
        if c in ft:
            print(f"| {c} | {f1[c]:.4f} | {ft[c]:.4f} | {f1[c] / ft[c]:.2f}x |")
    b1 = {x["cells"]: float(x["ms_per_step"]) for x in rows(f"{few}/big_1.csv") if x["backend"] == "cpu"}
    bt = {x["cells"]: float(x["ms_per_step"]) for x in rows(f"{few}/big_{t}.csv") if x["backend"] == "cpu"}
    if b1 and bt:
        print()
        print(f"| split cell (38,580 compartments) | ms/step, 1 thread | ms/step, {t} threads | {t} threads vs 1 |")
        print("|---:|---:|---:|---:|")
        for c in sorted(b1, key=int):
            if c in bt:
                print(f"| {c} cell | {b1[c]:.3f} | {bt[c]:.3f} | {b1[c] / bt[c]:.2f}x |")
                if bt[c] > b1[c] * 1.05:
                    f1["split " + c] = b1[c]
                    ft["split " + c] = bt[c]
    print()
    print("targets (issue 23):")
    for name in ("one shape (allen_rbp4)", "mixed (bundled x5)"):
        a, b = res.get((name, "1")), res.get((name, t))
        if not a or not b:
            continue
        checks = [(f"1 thread >= 1.2x Arbor", a[0] / a[1] >= 1.2 if a[1] > 0 else None),
                  (f"{t} threads >= {0.75 * int(t):g}x our 1 thread (12x at 16; a target at >= 1,000 cells)",
                   b[0] / a[0] >= 0.75 * int(t) if b[3] >= 1000 else "n/a"),
                  (f"{t} threads >= 1.2x Arbor {t} threads", b[0] / b[1] >= 1.2 if b[1] > 0 else None)]
        for what, ok in checks:
            verdict = ("not a target: fewer than 1,000 cells" if ok == "n/a" else
                       "met" if ok else "MISSED" if ok is not None else "no Arbor")
            print(f"  {name}: {what}: {verdict}")
    slower = [c for c in f1 if c in ft and ft[c] > f1[c] * 1.05]
    print(f"  few cells: {t} threads never slower than 1 (5 % noise): "
          f"{'met' if not slower else 'MISSED at ' + ','.join(slower) + ' cells'}")


if __name__ == "__main__":
    main()
