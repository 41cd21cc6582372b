#!/usr/bin/env python3
"""Draw `neurosolve simulate --probe` results: potentials per contact over time and, for the
contacts of the probe's most populated column (equal x and y), the laminar LFP and its CSD
(-sigma times the second difference along z, the end contacts duplicated: docs/extracellular.md).

Usage: python3 bench/plot_lfp.py LFP.csv OUT.png --probe PROBE [--sigma S]
"""
import argparse
import csv
from collections import Counter

import numpy as np


def read_probe(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].replace(",", " ").split()
            if line:
                rows.append([float(v) for v in line[:3]])
    return np.array(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("png")
    ap.add_argument("--probe", required=True)
    ap.add_argument("--sigma", type=float, default=0.3)
    a = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(a.csv) as f:
        data = np.array([[float(v) for v in row] for row in list(csv.reader(f))[1:]])
    t, phi = data[:, 0], data[:, 1:]
    pos = read_probe(a.probe)
    col = Counter((x, y) for x, y, _ in pos).most_common(1)[0][0]
    idx = [i for i in np.argsort(pos[:, 2]) if (pos[i, 0], pos[i, 1]) == col]
    z = pos[idx, 2]
    fig, ax = plt.subplots(1, 3, figsize=(15, 5))
    show = idx[:: max(1, len(idx) // 12)]
    span = np.ptp(phi[:, show]) if phi.size else 1.0
    for k, i in enumerate(show):
        ax[0].plot(t, phi[:, i] * 1e3 + k * span * 1e3 * 0.8, lw=0.8)
        ax[0].text(t[-1], phi[-1, i] * 1e3 + k * span * 1e3 * 0.8, " z=%g" % pos[i, 2], fontsize=7)
    ax[0].set_xlabel("t [ms]")
    ax[0].set_ylabel("potential [uV] (offset per contact)")
    ax[0].set_title("potentials")
    lam = phi[:, idx].T * 1e3
    lim = np.abs(lam).max() or 1.0
    im = ax[1].imshow(lam, aspect="auto", origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim,
                      extent=[t[0], t[-1], z[0], z[-1]])
    fig.colorbar(im, ax=ax[1], label="uV")
    ax[1].set_title("laminar LFP (column x=%g, y=%g)" % col)
    ax[1].set_xlabel("t [ms]")
    ax[1].set_ylabel("z [um]")
    if len(idx) >= 3:
        h = np.median(np.diff(z))
        p = np.concatenate([lam[:1], lam, lam[-1:]]) * 1e-3  # mV, ends duplicated
        csd = -a.sigma * (p[2:] - 2 * p[1:-1] + p[:-2]) / h ** 2 * 1e6  # uA/mm^3
        lim = np.abs(csd).max() or 1.0
        im = ax[2].imshow(csd, aspect="auto", origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim,
                          extent=[t[0], t[-1], z[0], z[-1]])
        fig.colorbar(im, ax=ax[2], label="uA/mm^3 (sink < 0)")
    ax[2].set_title("CSD")
    ax[2].set_xlabel("t [ms]")
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
