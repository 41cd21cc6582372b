#!/usr/bin/env python3
"""NEURON baseline of `neurosolve bench sim --network` (busyring): the network
file the bench wrote, built in NEURON and timed with NEURON's threads.

usage: neuron_network_bench.py NETWORK.net TSTOP_MS THREADS RASTER.csv

Reads the subset of the network format (docs/networks.md, "Network files")
that the bench writes: one `cells` line (one SWC file), `model: all.insert =
hh`, `synapse NAME CELLS LOC MECH [P=V ...]` (LOC soma, swc:ID, with (X)),
`detector NAME CELLS LOC THRESHOLD`, `train NAME T ...` and `connect SOURCES
SYNAPSES WEIGHT DELAY` (pairs in order, or one side of 1 to all of the other);
references NAME or NAME[LIST] with I, A-B and A-B:S items. Anything else is
refused. The random choices are the file's: nothing is drawn here.

The cells as validation/neuron_network_compare.py builds them: the morphology
through Import3d once, nseg by the d_lambda rule (0.1 at 100 Hz, Ra 35.4, cm
1), every cell a copy of its sections (the same 3-d points), hh everywhere,
celsius 6.3, v_init -65 mV, dt 0.025 ms. Detectors are NetCons from v at the
location with the threshold (NetCon.record for the raster); a train is one
NetStim (noise 0, number 1) per time. ParallelContext.nthread(THREADS),
cache_efficient, finitialize, then pc.psolve(TSTOP) timed. Writes RASTER.csv
(`source,time` rows sorted by time then source, %.17g) and prints one line of
JSON: cells, segments, steps, threads, wall_s, spikes.
"""
import json
import os
import re
import sys
import time

DT = 0.025


def fail(path, line, why):
    sys.exit("%s:%d: %s" % (path, line, why))


def indices(path, ln, text, size):
    """The members of a reference's LIST (or all of a group of `size`)."""
    if text is None:
        return list(range(size))
    out = []
    for item in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", item)
        if not m:
            fail(path, ln, "list item '%s' is not I, A-B or A-B:S" % item)
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else a
        s = int(m.group(3)) if m.group(3) else 1
        out.extend(range(a, b + 1, s))
    for i in out:
        if i >= size:
            fail(path, ln, "index %d is outside its group (%d members)" % (i, size))
    return out


def ref(path, ln, text, groups):
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]*)\])?", text)
    if not m or m.group(1) not in groups:
        fail(path, ln, "unknown reference '%s' (this script reads names and NAME[LIST] only)" % text)
    members = groups[m.group(1)]
    return [members[i] for i in indices(path, ln, m.group(2), len(members))]


def parse(path):
    base = os.path.dirname(os.path.abspath(path))
    net = {"cells": 0, "morph": None, "syns": [], "sources": [], "conns": []}
    cells, syn_groups, src_groups = {}, {}, {}
    with open(path) as f:
        for ln, raw in enumerate(f, 1):
            w = raw.split("#", 1)[0].split()
            if not w:
                continue
            if w[0] == "cells" and len(w) == 4:
                if net["morph"] is not None:
                    fail(path, ln, "one `cells` line only")
                n = int(w[2])
                cells[w[1]] = list(range(n))
                cells["cell"] = list(range(n))
                net["cells"] = n
                net["morph"] = os.path.join(base, w[3])
            elif w[0] == "model:" and " ".join(w[1:]) == "all.insert = hh":
                pass
            elif w[0] == "synapse" and len(w) >= 5:
                loc = w[3]
                params = []
                for pv in w[5:]:
                    p, v = pv.split("=", 1)
                    params.append((p, float(v)))
                ids = syn_groups.setdefault(w[1], [])
                for c in ref(path, ln, w[2], cells):
                    ids.append(len(net["syns"]))
                    net["syns"].append((c, loc, w[4], params))
            elif w[0] == "detector" and len(w) == 5:
                ids = src_groups.setdefault(w[1], [])
                for c in ref(path, ln, w[2], cells):
                    ids.append(len(net["sources"]))
                    net["sources"].append(("cell", c, w[3], float(w[4])))
            elif w[0] == "train" and len(w) >= 3:
                src_groups.setdefault(w[1], []).append(len(net["sources"]))
                net["sources"].append(("train", sorted(float(t) for t in w[2:])))
            elif w[0] == "connect" and len(w) == 5:
                srcs = ref(path, ln, w[1], src_groups)
                syns = ref(path, ln, w[2], syn_groups)
                if len(srcs) == 1:
                    srcs = srcs * len(syns)
                elif len(syns) == 1:
                    syns = syns * len(srcs)
                if len(srcs) != len(syns):
                    fail(path, ln, "%d sources and %d synapses" % (len(srcs), len(syns)))
                wt, d = float(w[3]), float(w[4])
                net["conns"].extend((s, y, wt, d) for s, y in zip(srcs, syns))
            else:
                fail(path, ln, "not read by this script: %s" % raw.strip())
    return net


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, tstop, threads, raster = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    net = parse(path)
    from neuron import h
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    h.load_file("stdrun.hoc")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "validation"))
    import neuron_network_compare as nnc  # the import and d_lambda of the validation

    secs = nnc.import_cell(h, net["morph"])
    ids = [i for i, _ in secs]
    index = {s.name(): k for k, (_, s) in enumerate(secs)}
    shape = []  # per section: 3-d points as Vectors, Ra, cm, nseg, parent (index, x), orientation
    for k, (_, s) in enumerate(secs):
        pts = [h.Vector([getattr(s, a)(j) for j in range(int(s.n3d()))]) for a in ("x3d", "y3d", "z3d", "diam3d")]
        ps = s.parentseg()
        shape.append((pts, s.Ra, s.cm, s.nseg, (index[ps.sec.name()], ps.x) if ps is not None else None,
                      s.orientation()))
    for _, s in secs:
        h.delete_section(sec=s)
    built, segments = [], 0
    for c in range(net["cells"]):
        copy = []
        for k, (pts, ra, cm, nseg, _, _) in enumerate(shape):
            n = h.Section(name="c%d_%d" % (c, k))
            h.pt3dadd(*pts, sec=n)
            n.Ra, n.cm, n.nseg = ra, cm, nseg
            n.insert("hh")
            segments += nseg
            copy.append(n)
        for k, (_, _, _, _, parent, orient) in enumerate(shape):
            if parent is not None:
                copy[k].connect(copy[parent[0]](parent[1]), orient)
        built.append(copy)

    def site(c, loc):
        m = re.fullmatch(r"(soma|swc:(\d+))(?:\(([-+.eE0-9]+)\))?", loc)
        if not m:
            sys.exit("%s: location '%s' not read by this script" % (path, loc))
        x = float(m.group(3)) if m.group(3) else 0.5
        return (built[c][0] if m.group(1) == "soma" else built[c][ids.index(int(m.group(2)))]), x

    h.celsius = 6.3
    h.dt = DT
    syns = []
    for c, loc, mech, params in net["syns"]:
        sec, x = site(c, loc)
        s = getattr(h, mech)(sec(x))
        for p, v in params:
            setattr(s, p, v)
        syns.append(s)
    keep, recs = [], []
    for src in net["sources"]:
        vec = h.Vector()
        if src[0] == "cell":
            sec, x = site(src[1], src[2])
            nc = h.NetCon(sec(x)._ref_v, None, sec=sec)
            nc.threshold = src[3]
            nc.record(vec)
            keep.append(([nc], sec, x, src[3]))
        else:
            stims = []
            for t in src[1]:
                ns = h.NetStim()
                ns.start, ns.number, ns.noise = t, 1, 0
                nc = h.NetCon(ns, None)
                nc.record(vec)
                stims.append((ns, nc))
            keep.append((stims, None, None, None))
        recs.append(vec)
    ncs = []
    for s, y, wt, d in net["conns"]:
        src = net["sources"][s]
        if src[0] == "cell":
            _, sec, x, thr = keep[s]
            nc = h.NetCon(sec(x)._ref_v, syns[y], sec=sec)
            nc.threshold = thr
            nc.weight[0], nc.delay = wt, d
            ncs.append(nc)
        else:
            for ns, _ in keep[s][0]:
                nc = h.NetCon(ns, syns[y])
                nc.weight[0], nc.delay = wt, d
                ncs.append(nc)
    pc = h.ParallelContext()
    pc.nthread(threads)
    h.cvode.cache_efficient(1)
    pc.set_maxstep(10)
    h.finitialize(-65.0)
    t0 = time.perf_counter()
    pc.psolve(tstop)
    wall = time.perf_counter() - t0
    rows = sorted((t, k) for k in range(len(recs)) for t in recs[k])
    with open(raster + ".tmp", "w") as f:
        f.write("source,time\n")
        for t, k in rows:
            f.write("%d,%.17g\n" % (k, t))
    os.replace(raster + ".tmp", raster)
    print(json.dumps({"cells": net["cells"], "segments": segments, "steps": int(round(tstop / DT)),
                      "threads": threads, "synapses": len(syns), "connections": len(ncs), "wall_s": wall,
                      "spikes": len(rows)}))


if __name__ == "__main__":
    main()
