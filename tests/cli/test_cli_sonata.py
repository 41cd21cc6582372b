#!/usr/bin/env python3
"""simulate --network CONFIG.json (docs/networks.md, "SONATA"): the random16
network of tests/data/sonata/ through the CLI: the config's run settings
(150 ms), spikes.csv and spikes.h5 (SONATA spikes, read with h5py) give
NEURON 9.0.2's raster built from the same SONATA files (same spikes per node,
within 0.05 ms); --input-spikes replaces the config's inputs; bad input
(exit 1 naming the file and element, exit 2 for usage) leaves no result file.
Without HDF5 in the build the refusal is checked and the test skips (77).

usage: test_cli_sonata.py PATH/TO/neurosolve SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

BIN, SRC = sys.argv[1], os.path.abspath(sys.argv[2])
DATA = os.path.join(SRC, "tests", "data", "sonata", "random16")
CONFIG = os.path.join(DATA, "config.json")
h = Harness(BIN)


def has(p, text, what):
    h.check(text in p.stderr, f"{what}: stderr lacks {text!r}: {p.stderr!r}")


def neuron():
    rows = []
    with open(os.path.join(DATA, "neuron_raster.csv")) as f:
        for line in f:
            if line[0] in "#p":
                continue
            pop, node, t = line.strip().split(",")
            rows.append((pop, int(node), float(t)))
    return rows


def same(got, ref, what):
    """Per (population, node): the same count, times within 0.05 ms; returns the largest difference."""
    worst = 0.0
    for key in sorted({(p, n) for p, n, _ in ref} | {(p, n) for p, n, _ in got}):
        a = [t for p, n, t in got if (p, n) == key]
        b = [t for p, n, t in ref if (p, n) == key]
        h.check(len(a) == len(b), f"{what}: {key}: {len(a)} spikes, NEURON {len(b)}")
        worst = max([worst] + [abs(x - y) for x, y in zip(a, b)])
    h.check(worst <= 0.05, f"{what}: largest difference {worst} ms")
    return worst


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "run") + "/"
    os.mkdir(out)
    p = subprocess.run([BIN, "simulate", "--network", CONFIG, "--out", out, "--json", "--no-progress"],
                       capture_output=True, text=True)
    if p.returncode == 1 and "built without HDF5" in p.stderr:
        h.check(not os.listdir(out), "a refused run left files")
        print("SKIPPED: cli_sonata: neurosolve was built without HDF5: SONATA is refused (checked)")
        sys.exit(77 if h.failures == 0 else 1)
    h.check(p.returncode == 0, f"the SONATA run: exit {p.returncode}: {p.stderr}")
    ref = neuron()
    try:
        j = json.loads(p.stdout)
        # the config's run settings: 150 ms of 0.025 ms steps
        h.check(j["cells"] == 16 and j["synapses"] == 60 and j["sources"] == 20 and j["connections"] == 60 and
                j["steps"] == 6000 and j["source_spikes"] == len(ref) == 113, f"summary {j}")
        rows = []
        with open(out + "spikes.csv") as f:
            head = f.readline().strip()
            h.check(head == "source,cell,t_ms", f"header {head}")
            for line in f:
                s, c, t = line.split(",")
                s = int(s)
                rows.append(("cells", s, float(t)) if s < 16 else ("input", s - 16, float(t)))
                h.check(int(c) == (s if s < 16 else -1), f"cell column of source {s}")
        w = same(rows, ref, "spikes.csv")
        print(f"cli sonata: spikes.csv: {len(rows)} spikes as NEURON's (largest difference {w:.3g} ms)")
    except (ValueError, KeyError, OSError) as e:
        h.check(False, f"the SONATA run: {e}")
    try:
        import h5py
    except ImportError:
        h5py = None
        print("cli sonata: h5py is not installed: spikes.h5 is not read back (CI installs it)")
    if h5py is not None:
        with h5py.File(out + "spikes.h5", "r") as f:
            h.check(list(f["spikes"]) == ["cells"], f"populations {list(f['spikes'])}")
            g = f["spikes/cells"]
            sorting = g.attrs["sorting"]
            sorting = sorting.decode() if isinstance(sorting, bytes) else sorting
            h.check(sorting == "by_time", f"sorting {sorting!r}")
            ts, ids = list(g["timestamps"][()]), list(g["node_ids"][()])
            h.check(ts == sorted(ts), "timestamps not in time order")
            w = same([("cells", int(n), float(t)) for n, t in zip(ids, ts)], [r for r in ref if r[0] == "cells"],
                     "spikes.h5")
            print(f"cli sonata: spikes.h5: {len(ts)} spikes of population cells as NEURON's ({w:.3g} ms)")

    # --input-spikes: the same file given on the command line, then a later copy of it with no spikes
    out2 = os.path.join(tmp, "run2") + "/"
    os.mkdir(out2)
    h.run("simulate", "--network", CONFIG, "--input-spikes", os.path.join(DATA, "input_spikes.h5"), "--out", out2,
          "--no-progress")
    with open(out + "spikes.csv") as a, open(out2 + "spikes.csv") as b:
        h.check(a.read() == b.read(), "--input-spikes with the config's file changed the raster")
    # --tstop overrides the config's
    p = h.run("simulate", "--network", CONFIG, "--tstop", "20", "--json", "--no-progress")
    h.check('"steps":800' in p.stdout, f"--tstop 20: {p.stdout[:200]}")

    # usage and bad input: no result files
    p = h.run("simulate", "--input-spikes", os.path.join(DATA, "input_spikes.h5"), os.path.join(SRC, "data",
              "morphologies", "ca1_h10.swc"), expect=2)
    has(p, "--input-spikes needs --network", "--input-spikes alone")
    # the GPU loop (--backend cuda) where a GPU is usable: NEURON's raster within 0.05 ms
    info = json.loads(h.run("info", "--json").stdout or "{}")
    if any(d.get("usable") for d in info.get("devices") or []):
        gpu = os.path.join(tmp, "gpu") + "/"
        os.mkdir(gpu)
        h.run("simulate", "--network", CONFIG, "--backend", "cuda", "--out", gpu, "--no-progress")
        try:
            rows = []
            with open(gpu + "spikes.csv") as f:
                f.readline()
                for line in f:
                    s_, _, t = line.split(",")
                    s_ = int(s_)
                    rows.append(("cells", s_, float(t)) if s_ < 16 else ("input", s_ - 16, float(t)))
            w = same(rows, ref, "GPU spikes.csv")
            print(f"cli sonata on the GPU: {len(rows)} spikes as NEURON's ({w:.3g} ms)")
        except (ValueError, OSError) as e:
            h.check(False, f"GPU run: {e}")
    else:
        print("cli sonata: no usable GPU: the GPU loop is not run here")

    def bad(edit, *want, extra=()):
        d = os.path.join(tmp, "net")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(DATA, d)
        cfg = os.path.join(d, "config.json")
        with open(cfg) as f:
            text = f.read().replace("$BASE_DIR/../../../../data/morphologies", os.path.join(SRC, "data", "morphologies"))
        with open(cfg, "w") as f:
            f.write(text)
        edit(d)
        res = os.path.join(tmp, "bad") + "/"
        shutil.rmtree(res, ignore_errors=True)
        os.mkdir(res)
        p = h.run("simulate", "--network", cfg, "--out", res, "--no-progress", *extra, expect=1)
        for w in want:
            has(p, w, f"bad input {want[0]}")
        h.check(not os.listdir(res), f"a failed run left {os.listdir(res)}")

    def rm(name):
        return lambda d: os.remove(os.path.join(d, name))

    def sub(name, a, b):
        def f(d):
            path = os.path.join(d, name)
            with open(path) as fh:
                text = fh.read()
            h.check(a in text, f"{name} lacks {a!r}")
            with open(path, "w") as fh:
                fh.write(text.replace(a, b))
        return f

    # node types without a model_template take the model of the run (--model); without one: refused
    d = os.path.join(tmp, "nomodel")
    shutil.copytree(DATA, d)
    with open(os.path.join(d, "config.json")) as f:
        text = f.read().replace("$BASE_DIR/../../../../data/morphologies", os.path.join(SRC, "data", "morphologies"))
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(text)
    sub("network/cells_node_types.csv", "neurosolve:hh.model", "NULL")(d)
    out3 = os.path.join(tmp, "run3") + "/"
    os.mkdir(out3)
    h.run("simulate", "--network", os.path.join(d, "config.json"), "--model", os.path.join(d, "components", "hh.model"),
          "--out", out3, "--no-progress")
    with open(out + "spikes.csv") as a, open(out3 + "spikes.csv") as b:
        h.check(a.read() == b.read(), "the model given by --model changed the raster")
    p = h.run("simulate", "--network", os.path.join(d, "config.json"), "--no-progress", expect=1)
    has(p, "names no model", "no model anywhere")

    bad(rm("network/cells_cells_edges.h5"), "cells_cells_edges.h5: cannot open as HDF5")
    bad(rm("input_spikes.h5"), "input_spikes.h5: cannot open")
    bad(sub("network/cells_node_types.csv", "101 biophysical", "102 biophysical"), "node_type_id 101 is not in",
        "cells_node_types.csv", "/nodes/cells")
    bad(sub("network/input_cells_edge_types.csv", "400 exp2syn", "400 NoSuchSyn"), "/edges/input_to_cells: edge 0",
        "NoSuchSyn")
    bad(sub("config.json", '"node_set": "input"', '"node_set": "lgn"'), "node_set 'lgn' is not a node population")
    # a spikes file that names a population the network does not have
    bad(lambda d: None, "cells_nodes.h5: no group /spikes",
        extra=("--input-spikes", os.path.join(DATA, "network", "cells_nodes.h5")))

h.finish("cli_sonata")
