#!/usr/bin/env python3
"""Draw the voltage traces that `neurosolve simulate` writes (PREFIX_traces.csv:
a column t [ms] and one column per recorded site [mV]).

usage: plot_traces.py TRACES.csv OUT.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        rows = list(csv.reader(f))
    names = rows[0][1:]
    data = [[float(x) for x in r] for r in rows[1:] if r]
    t = [r[0] for r in data]
    n = len(names)
    # one panel per morphology (site names read MORPHOLOGY#CELL@LOCATION)
    groups = {}
    for k, name in enumerate(names):
        groups.setdefault(name.split("#")[0], []).append(k)
    panels = min(len(groups), 12)
    fig, axes = plt.subplots(panels, 1, figsize=(9, 1.6 + 1.4 * panels), sharex=True, squeeze=False)
    for ax, (morph, cols) in zip(axes[:, 0], list(groups.items())[:panels]):
        for k in cols:
            ax.plot(t, [r[1 + k] for r in data], lw=0.8, label=names[k].split("#", 1)[1])
        ax.set_ylabel("v [mV]")
        ax.set_title(morph, fontsize=9, loc="left")
        if len(cols) > 1:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("t [ms]")
    fig.suptitle(f"neurosolve simulate: {n} recorded sites", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
