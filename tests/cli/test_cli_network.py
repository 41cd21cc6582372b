#!/usr/bin/env python3
"""simulate --network FILE (docs/networks.md): the ring of
tests/data/neuron_network/ through the CLI gives NEURON 9.0.2's raster in
spikes.csv (source, cell, time; in time order; the same spikes, times within
1e-9 ms); a network of Poisson sources; usage errors (exit 2) and bad network
files (exit 1, the file:line and the element named, no result files).

usage: test_cli_network.py PATH/TO/neurosolve SOURCE_DIR
"""
import csv
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

BIN, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data", "neuron_network")
MORPH = os.path.join(SRC, "data", "morphologies")
h = Harness(BIN)


def has(p, text, what):
    h.check(text in p.stderr, f"{what}: stderr lacks {text!r}: {p.stderr!r}")


def neuron_raster(path):
    """NEURON's (source, time) rows of a reference CSV, and the cell count."""
    rows, cells = [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("# cell = "):
                cells += 1
            elif line and line[0].isdigit():
                s, t = line.split(",")
                rows.append((int(s), float(t)))
    return rows, cells


def raster(path):
    with open(path) as f:
        r = list(csv.reader(f))
    h.check(r[0] == ["source", "cell", "t_ms"], f"{path}: header {r[0]}")
    return [(int(a), int(b), float(c)) for a, b, c in r[1:]]


with tempfile.TemporaryDirectory() as tmp:
    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # the NEURON ring: the raster through the CLI
    out = os.path.join(tmp, "ring")
    p = h.run("simulate", "--network", os.path.join(DATA, "ring8_ca1_ko20x-07.net"), "--tstop", "200",
              "--out", out, "--json", "--no-progress")
    ref, n_cells = neuron_raster(os.path.join(DATA, "ring8_ca1_ko20x-07.csv"))
    try:
        j = json.loads(p.stdout)
        h.check(j["cells"] == 8 and j["synapses"] == 16 and j["sources"] == 9 and j["connections"] == 18
                and j["backend"] == "cpu", f"summary {j}")
        got = raster(out + "_spikes.csv")
        h.check(j["source_spikes"] == len(got) == len(ref), f"{len(got)} spikes, NEURON {len(ref)}")
        h.check([t for _, _, t in got] == sorted(t for _, _, t in got), "spikes.csv is not in time order")
        # per source, NEURON's times
        for s in range(n_cells + 1):
            a = [t for q, _, t in got if q == s]
            b = [t for q, t in ref if q == s]
            h.check(len(a) == len(b) and all(abs(x - y) <= 1e-9 for x, y in zip(a, b)),
                    f"source {s}: {a} vs NEURON {b}")
        h.check(all(c == (q if q < n_cells else -1) for q, c, _ in got), "the cell column")
        print(f"cli ring: {len(got)} spikes as NEURON's")
    except (ValueError, KeyError, IndexError, OSError) as e:
        h.check(False, f"ring run: {e}")

    # the same ring on the GPU loop (--backend cuda): NEURON's raster within 0.05 ms and the CPU
    # run's within 1e-6 ms; `auto` kept the CPU above (the sim policy for networks)
    info = json.loads(h.run("info", "--json").stdout or "{}")
    if any(d.get("usable") for d in info.get("devices") or []):
        try:
            cpu = got
            p = h.run("simulate", "--network", os.path.join(DATA, "ring8_ca1_ko20x-07.net"), "--tstop", "200",
                      "--out", out + "_gpu", "--json", "--no-progress", "--backend", "cuda")
            j = json.loads(p.stdout)
            h.check(j["backend"] == "cuda", f"summary {j}")
            g = raster(out + "_gpu_spikes.csv")
            h.check(len(g) == len(cpu) and all(a[:2] == b[:2] and abs(a[2] - b[2]) <= 1e-6 for a, b in zip(g, cpu)),
                    f"GPU raster {g[:5]}... vs CPU {cpu[:5]}...")
            for s in range(n_cells + 1):
                a = [t for q, _, t in g if q == s]
                b = [t for q, t in ref if q == s]
                h.check(len(a) == len(b) and all(abs(x - y) <= 0.05 for x, y in zip(a, b)),
                        f"GPU source {s}: {a} vs NEURON {b}")
            print(f"cli ring on the GPU: {len(g)} spikes as NEURON's")
        except (ValueError, KeyError, IndexError, OSError, NameError) as e:
            h.check(False, f"GPU ring run: {e}")
    else:
        print("SKIPPED part: no usable GPU (the ring on the GPU loop)")

    # Poisson sources driving a cell; the morphology relative to the file
    cell = os.path.relpath(os.path.join(MORPH, "ca1_h10.swc"), tmp)
    poisson = write("poisson.net", f"cells c 2 {cell}\nmodel: all.insert = hh\n"
                                   "synapse s c soma ExpSyn\n"
                                   "poisson bg 20 50 0 inf 1\n"
                                   "detector d c soma -20\n"
                                   "connect bg s[0] 0.01 1\n")
    out = os.path.join(tmp, "pois")
    p = h.run("simulate", "--network", poisson, "--tstop", "100", "--out", out, "--json", "--no-progress")
    try:
        got = raster(out + "_spikes.csv")
        bg = [r for r in got if r[0] < 20]
        h.check(all(c == -1 for _, c, _ in bg) and 20 <= len(bg) <= 200, f"{len(bg)} Poisson spikes")
        j = json.loads(p.stdout)
        h.check(j["connections"] == 20 and j["sources"] == 22, f"summary {j}")
        # the same file, the same raster (the seed decides)
        p = h.run("simulate", "--network", poisson, "--tstop", "100", "--out", out + "2", "--no-progress",
                  "--threads", "1")
        h.check(raster(out + "2_spikes.csv") == got, "a second run gave another raster")
    except (ValueError, KeyError, IndexError, OSError) as e:
        h.check(False, f"poisson run: {e}")

    # Poisson sources in the estimate before the run (issue 47: 1e8 spikes,
    # 2.5 GB of memory and a 2.6 GB spikes.csv came without a word): about
    # 1e13 spikes are refused at once (exit 1) with the estimate
    flood = write("flood.net", f"cells c 1 {cell}\nmodel: all.insert = hh\npoisson bg 10000 1e6 0 inf 1\n")
    p = h.run("simulate", "--network", flood, "--tstop", "1e6", "--out", os.path.join(tmp, "flood"), "--no-progress",
              expect=1)
    has(p, "1e+13 input spikes need at least", "Poisson sources beyond the machine's memory")
    h.check(not [n for n in os.listdir(tmp) if n.startswith("flood_")], "a refused run wrote files")

    # usage errors: exit 2 before any work
    ring = os.path.join(DATA, "ring8_ca1_ko20x-07.net")
    p = h.run("simulate", "--network", ring, os.path.join(MORPH, "ca1_h10.swc"), expect=2)
    has(p, "no SHAPE arguments", "--network with a shape")
    p = h.run("simulate", "--network", ring, "--cells", "3", expect=2)
    has(p, "no --cells", "--network with --cells")
    p = h.run("simulate", "--network", ring, "--checkpoint", os.path.join(tmp, "ck"), expect=2)
    has(p, "--checkpoint and --resume", "--network with --checkpoint")

    # bad networks: exit 1, the file:line and the element, no result files
    def bad(text, *want, expect=1, extra=()):
        path = write("bad.net", text)
        out = os.path.join(tmp, "bad")
        p = h.run("simulate", "--network", path, "--tstop", "5", "--out", out, "--no-progress", *extra, expect=expect)
        for w in want:
            has(p, w.replace("FILE", path), text.splitlines()[-1])
        left = [f for f in os.listdir(tmp) if f.startswith("bad_")]
        h.check(not left, f"a failed run left {left}")

    head = f"cells c 2 {cell}\nmodel: all.insert = hh\n"
    bad(head + "synapse s c soma AMPA\n", "FILE:3", "no mechanism 'AMPA'", "ExpSyn")
    bad(head + "synapse s c sec:999(0.5) ExpSyn\n", "FILE:3", "cell 0", "no section 999")
    bad(head + "synapse s c soma ExpSyn taux=1\n", "FILE:3", "no parameter 'taux'")
    bad(head + "synapse s c soma ExpSyn\ndetector d c soma -20\nconnect d s 0.01 0\n", "FILE:5", "delay '0'")
    bad(head + "synapse s c soma ExpSyn\nconnect x s 0.01 1\n", "FILE:4", "no sources named 'x'")
    bad(head + "synapse s c[5] soma ExpSyn\n", "FILE:3", "index 5 is outside c (2 cells)")
    bad(head + "cells d 1 nonexistent.swc\n", "nonexistent.swc")
    bad(f"cells c 2 {cell}\nsynapse s c soma ExpSyn\n", "names no model")
    bad(head, "names a model", extra=("--model", write("m.model", "all.insert = hh\n")))
    p = h.run("simulate", "--network", os.path.join(tmp, "missing.net"), "--out", os.path.join(tmp, "bad"),
              expect=1)
    has(p, "missing.net: cannot open: No such file or directory", "a missing network file")

h.finish("cli_network")
