#!/usr/bin/env python3
"""Write a network file (docs/networks.md, "Network files") of a large network.

ring     N cells in a ring: cell i's soma drives an Exp2Syn of cell i+1 (every cell
         `--synapses` of them at random sections, the ring through the first), a train
         starts the wave. The ranges of the format make it a few lines.
random   N cells, `--synapses` Exp2Syn per cell at random sections with random time
         constants, each cell driving `--fan-out` random synapses of other cells with a
         random weight and delay (one connect line each: the format has no random weights),
         and `--poisson` background sources of `--rate` Hz driving random synapses.

The sections are drawn among those of the morphology (read and discretised with
neurosolve's defaults); the same --seed writes the same file.

usage: make_network.py ring|random MORPHOLOGY.swc N OUT.net [--synapses K] [--fan-out F]
                       [--poisson P] [--rate HZ] [--seed S]
"""
import argparse
import os
import random

import neurosolve as ns


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=("ring", "random"))
    ap.add_argument("morphology")
    ap.add_argument("cells", type=int)
    ap.add_argument("out")
    ap.add_argument("--synapses", type=int, default=2, help="synapses per cell (default 2)")
    ap.add_argument("--fan-out", type=int, default=10, help="random: targets per cell (default 10)")
    ap.add_argument("--poisson", type=int, default=0, help="random: background Poisson sources (default 0)")
    ap.add_argument("--rate", type=float, default=10.0, help="their rate [Hz] (default 10)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.cells < 2 or a.synapses < 1:
        ap.error("at least 2 cells and 1 synapse per cell")
    rng = random.Random(a.seed)
    sections = ns.read_swc(a.morphology).discretize().info["sections"]
    n, k = a.cells, a.synapses
    rel = os.path.relpath(os.path.abspath(a.morphology), os.path.dirname(os.path.abspath(a.out)))
    lines = [f"# {a.kind} network of {n} cells (examples/python/make_network.py, seed {a.seed})",
             f"cells c {n} {rel}", "model: all.insert = hh",
             "detector spk c soma(0.5) -20"]
    # synapse j of cell i is syn[i * k + j]: one line per (cell, synapse) for random places
    for i in range(n):
        for j in range(k):
            sec = rng.randrange(sections)
            tau1 = round(rng.uniform(0.2, 1.0), 3)
            tau2 = round(rng.uniform(2.0, 6.0), 3)
            lines.append(f"synapse syn c[{i}] sec:{sec}(0.5) Exp2Syn tau1={tau1} tau2={tau2} e=0")
    if a.kind == "ring":
        # the first synapse of cells 1 .. n-1: every k-th from k
        lines += [f"connect spk[0-{n - 2}] syn[{k}-{(n - 1) * k}:{k}] 0.02 1.5",
                  f"connect spk[{n - 1}] syn[0] 0.02 1.5",
                  "train kick 2", "connect kick syn[0] 0.05 1"]
    else:
        for i in range(n):
            for _ in range(a.fan_out):
                t = rng.randrange(n - 1)
                t += t >= i  # another cell
                s = t * k + rng.randrange(k)
                lines.append(f"connect spk[{i}] syn[{s}] {rng.uniform(0.002, 0.01):.5f} {rng.uniform(0.8, 4.0):.4f}")
        if a.poisson > 0:
            lines.append(f"poisson bg {a.poisson} {a.rate:g} 0 inf {a.seed}")
            for q in range(a.poisson):
                targets = ",".join(str(rng.randrange(n * k)) for _ in range(max(1, n * k // a.poisson)))
                lines.append(f"connect bg[{q}] syn[{targets}] 0.005 1")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.out)
    print(f"{a.out}: {n} cells, {n * k} synapses, {len(lines)} lines")


if __name__ == "__main__":
    main()
