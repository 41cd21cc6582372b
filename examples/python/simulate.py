"""Simulate bundled real neurons from Python and plot their soma voltage.

    python examples/python/simulate.py [--out sim.png] [--tstop 100] [--backend auto]

Each cell gets NEURON's hh everywhere and a current clamp at the soma; the
traces and spike times come back as numpy arrays (docs/python.md)."""
import argparse
import os

import numpy as np

import neurosolve as ns

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CELLS = ["ca1_h10", "purk_dbbs", "dg_granule_1220882a", "str_chin"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="sim.png")
    ap.add_argument("--tstop", type=float, default=100.0)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--amplitude", type=float, default=3.0, help="IClamp amplitude [nA]")
    args = ap.parse_args()

    cells = [ns.read_swc(os.path.join(ROOT, "data", "morphologies", c + ".swc")).discretize() for c in CELLS]
    sim = ns.Simulation(cells, params={"celsius": 6.3}, backend=args.backend, record_every=4)
    for k, cell in enumerate(cells):
        soma = cell.locate(0, 0.5)
        sim.add_iclamp(k, soma, delay=5.0, duration=args.tstop - 10.0, amplitude=args.amplitude)
        sim.add_recording(k, soma)
    sim.run(args.tstop)
    v = sim.traces
    t = np.arange(len(v)) * 4 * sim.params.to_dict()["dt"]
    print(f"{len(cells)} cells, {sim.compartments} compartments, {sim.step_count} steps on {sim.backend} "
          f"in {sim.elapsed_ms:.1f} ms")
    for k, name in enumerate(CELLS):
        sp = sim.spikes(k)
        print(f"  {name:22s} {len(sp):3d} spikes" + (f", first at {sp[0]:.3f} ms" if len(sp) else ""))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(cells), 1, sharex=True, figsize=(8, 1.8 * len(cells)))
    for k, ax in enumerate(axes):
        ax.plot(t, v[:, k], lw=0.8)
        ax.set_ylabel("mV")
        ax.set_title(CELLS[k], fontsize=9, loc="left")
    axes[-1].set_xlabel("t [ms]")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
