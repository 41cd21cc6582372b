#!/usr/bin/env python3
"""Networks in NEURON: the reference rasters of tests/data/neuron_network/.

The discretisation is validation/neuron_sim_compare.py's: each morphology
through NEURON's Import3d, nseg per section by the d_lambda rule (0.1 at
100 Hz, Ra 35.4, cm 1), hh in every section with its defaults, celsius 6.3,
v_init -65 mV, dt 0.025 ms, fixed step. Every cell is a copy of an imported
morphology (the same 3-d points, nseg and connections: Import3d cannot
instantiate one file twice in a process); the originals are deleted.

Protocols (docs/networks.md, "Validation against NEURON"):

ring    8 copies of ca1_ko20x-07.swc, 200 ms. Cell i has an Exp2Syn (tau1
        0.5 ms, tau2 3 ms, e 0 mV) in the middle of section n/2 (Import3d's
        order) and an ExpSyn (tau 2 ms, e 0) at soma(0.5); cell i's soma
        drives the Exp2Syn of cell i+1 (0.02 uS, delay 1 + 0.5 i ms) and the
        ExpSyn of cell i+2 (0.002 uS, 2 + 0.25 i ms); a train (5 and 102.3 ms)
        drives cell 0's Exp2Syn (0.02 uS, 1 ms) and cell 3's ExpSyn (0.002 uS,
        0.6 ms).
short   the ring with short delays on both of cell i's
        connections (0.01 + 0.03 i ms for cell i: 0.01 to 0.22 ms, below and
        above dt), 100 ms.
random  16 cells alternating ca1_ko20x-07.swc and ca1_h10.swc, 150 ms, seed
        20: per cell two Exp2Syn (random tau1 0.2-1 ms, tau2 2-6 ms, e 0) in the
        middle of random sections; every cell drives 3 random synapses of
        other cells (weight 0.004-0.012 uS, delay 0.8-4 ms); 4 trains of 6
        random times in [2, 120] ms each drive 3 random synapses (0.01-0.03
        uS, 0.5-2 ms).

Detectors: soma(0.5), threshold -20 mV (NetCon.record); sources are the
cells' detectors (0 .. n_cells - 1), then the trains.

Written: OUT.csv, the network as '# key = value' lines (cell, synapse,
train, connect), then `source,time` rows in time order; and OUT.net, the same
network as a network file (docs/networks.md, "Network files"), which
tests/net/test_sim_network.c reads with ns_network_read. `net OUT.csv` writes
OUT.net from an existing OUT.csv (no NEURON needed).

Usage: python3 validation/neuron_network_compare.py ring|short|random MORPHOLOGY_DIR OUT.csv
       python3 validation/neuron_network_compare.py net OUT.csv
"""
import os
import random
import sys

DT = 0.025
THRESHOLD = -20.0


def import_cell(h, path):
    """Import3d's sections of one file: [(first point id, section)] in its order."""
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(path)
    gui = h.Import3d_GUI(reader, 0)
    gui.instantiate(None)
    byname = {sec.name(): sec for sec in h.allsec()}
    secs = []
    for i in range(int(reader.sections.count())):
        isec = reader.sections.object(i)
        if isec.is_subsidiary:
            continue
        ref = h.ref("")
        gui.name(isec, ref)
        nm = ref[0] if "[" in ref[0] else ref[0] + "[0]"
        if nm not in byname:
            continue
        secs.append((int(reader.id.x[int(isec.id)]), byname[nm]))
    for _, sec in secs:
        sec.Ra = 35.4
        sec.cm = 1.0
        try:
            sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
        except RuntimeError:
            sec.nseg = 1
    return secs


def copy_cell(h, secs, tag):
    index = {s.name(): k for k, (_, s) in enumerate(secs)}
    copy = []
    for k, (_, s) in enumerate(secs):
        n = h.Section(name="%s_%d" % (tag, k))
        for j in range(int(s.n3d())):
            n.pt3dadd(s.x3d(j), s.y3d(j), s.z3d(j), s.diam3d(j))
        n.Ra, n.cm, n.nseg = s.Ra, s.cm, s.nseg
        n.insert("hh")
        copy.append(n)
    for k, (_, s) in enumerate(secs):
        ps = s.parentseg()
        if ps is not None:
            copy[k].connect(copy[index[ps.sec.name()]](ps.x), s.orientation())
    return copy


def ring():
    n = 8
    cells = ["ca1_ko20x-07.swc"] * n
    syns, conns = [], []  # syn: (cell, section index or -1 for the root's middle, mech, params)
    for c in range(n):
        syns.append((c, "half", "Exp2Syn", (("tau1", 0.5), ("tau2", 3.0), ("e", 0.0))))
        syns.append((c, 0, "ExpSyn", (("tau", 2.0), ("e", 0.0))))
    for c in range(n):
        conns.append((c, 2 * ((c + 1) % n), 0.02, 1.0 + 0.5 * c))
        conns.append((c, 2 * ((c + 2) % n) + 1, 0.002, 2.0 + 0.25 * c))
    trains = [(5.0, 102.3)]
    conns.append((n, 0, 0.02, 1.0))
    conns.append((n, 7, 0.002, 0.6))
    return cells, syns, trains, conns, 200.0


def short():
    """The ring with delays below and around dt (0.01 + 0.03 i ms for cell i): one-step intervals."""
    cells, syns, trains, conns, _ = ring()
    conns = [(src, syn, w, round(0.01 + 0.03 * (k // 2), 5) if src < 8 else d)
             for k, (src, syn, w, d) in enumerate(conns)]
    return cells, syns, trains, conns, 100.0


def random_net():
    rng = random.Random(20)
    n = 16
    cells = ["ca1_ko20x-07.swc" if c % 2 == 0 else "ca1_h10.swc" for c in range(n)]
    syns, conns = [], []
    for c in range(n):
        for _ in range(2):
            syns.append((c, ("random", rng.random()), "Exp2Syn",
                         (("tau1", round(rng.uniform(0.2, 1.0), 3)), ("tau2", round(rng.uniform(2.0, 6.0), 3)),
                          ("e", 0.0))))
    for c in range(n):
        others = [k for k in range(len(syns)) if syns[k][0] != c]
        for k in rng.sample(others, 3):
            conns.append((c, k, round(rng.uniform(0.004, 0.012), 5), round(rng.uniform(0.8, 4.0), 3)))
    trains = []
    for q in range(4):
        trains.append(tuple(sorted(round(rng.uniform(2.0, 120.0), 3) for _ in range(6))))
        for k in rng.sample(range(len(syns)), 3):
            conns.append((n + q, k, round(rng.uniform(0.01, 0.03), 5), round(rng.uniform(0.5, 2.0), 3)))
    return cells, syns, trains, conns, 150.0


def write_net(csv_path, morph_dir):
    """OUT.net beside OUT.csv: the network of the CSV's '# key = value' header
    in the native format; morphologies by paths relative to the .net file."""
    head = {}
    cells, syns, trains, conns = [], [], [], []
    with open(csv_path) as f:
        for line in f:
            if not line.startswith("# ") or " = " not in line:
                continue
            key, val = line[2:].strip().split(" = ", 1)
            if key == "cell":
                cells.append(val)
            elif key == "synapse":
                syns.append(val.split())
            elif key == "train":
                trains.append(val)
            elif key == "connect":
                conns.append(val.split())
            else:
                head[key] = val
    n = len(cells)
    base = os.path.dirname(os.path.abspath(csv_path))
    out = [
        "# %s as a network file (validation/neuron_network_compare.py net)" % os.path.basename(csv_path),
        "# sources: the cells' detectors spk[0..%d], then the trains stim[0..%d]" % (n - 1, len(trains) - 1),
        "model: all.insert = hh",
    ]
    for k, f in enumerate(cells):  # consecutive cells of one file in one line
        if k > 0 and cells[k - 1] == f:
            out[-1] = out[-1].replace("cells c %d " % int(out[-1].split()[2]),
                                      "cells c %d " % (int(out[-1].split()[2]) + 1), 1)
            continue
        out.append("cells c 1 %s" % os.path.relpath(os.path.join(morph_dir, f), base))
    for c, sec_id, x, mech, *params in syns:
        out.append("synapse syn cell[%s] swc:%s(%s) %s %s" % (c, sec_id, x, mech, " ".join(params)))
    out.append("detector spk cell soma(0.5) %s" % head["threshold"])
    for t in trains:
        out.append("train stim %s" % t)
    for src, syn, w, d in conns:
        ref = "spk[%d]" % int(src) if int(src) < n else "stim[%d]" % (int(src) - n)
        out.append("connect %s syn[%s] %s %s" % (ref, syn, w, d))
    path = os.path.splitext(csv_path)[0] + ".net"
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "net":
        here = os.path.dirname(os.path.abspath(__file__))
        write_net(sys.argv[2], os.path.join(os.path.dirname(here), "data", "morphologies"))
        return
    if len(sys.argv) != 4 or sys.argv[1] not in ("ring", "short", "random"):
        sys.exit(__doc__)
    protocol, mdir, out = sys.argv[1:]
    cells, syns, trains, conns, tstop = {"ring": ring, "short": short, "random": random_net}[protocol]()
    from neuron import h
    import neuron
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    ids = {}  # per file: the sections' first point ids
    built = [None] * len(cells)
    for f in sorted(set(cells)):
        secs = import_cell(h, os.path.join(mdir, f))
        ids[f] = [i for i, _ in secs]
        for c, g in enumerate(cells):
            if g == f:
                built[c] = copy_cell(h, secs, "cell%d" % c)
        for _, s in secs:  # the originals go before the next import reuses their names
            h.delete_section(sec=s)
    h.celsius = 6.3
    h.dt = DT
    objs, lines = [], []
    for c, f in enumerate(cells):
        lines.append("cell = %s" % f)
    for k, (c, where, mech, params) in enumerate(syns):
        secs = ids[cells[c]]
        if where == "half":
            si = len(secs) // 2
        elif isinstance(where, tuple):
            si = int(where[1] * len(secs))
        else:
            si = where
        s = getattr(h, mech)(built[c][si](0.5))
        for name, value in params:
            setattr(s, name, value)
        objs.append(s)
        lines.append("synapse = %d %d 0.5 %s %s" % (c, secs[si], mech,
                                                  " ".join("%s=%.17g" % (a, b) for a, b in params)))
    recs = []
    sources = []
    for c in range(len(cells)):
        soma = built[c][0]
        recs.append(h.Vector())
        sources.append(("cell", c, soma))
    for q, times in enumerate(trains):
        lines.append("train = %s" % " ".join("%.17g" % t for t in times))
        stims = []  # NetStims without noise, one per time (VecStim is not built into NEURON)
        for t in times:
            ns = h.NetStim()
            ns.start, ns.number, ns.noise = t, 1, 0
            stims.append(ns)
        sources.append(("train", q, stims))
        recs.append(h.Vector())
    ncs = []
    for src, syn, w, d in conns:
        lines.append("connect = %d %d %.17g %.17g" % (src, syn, w, d))
        kind, idx, obj = sources[src]
        targets = [obj] if kind == "cell" else obj
        for o in targets:
            if kind == "cell":
                nc = h.NetCon(o(0.5)._ref_v, objs[syn], sec=o)
                nc.threshold = THRESHOLD
            else:
                nc = h.NetCon(o, objs[syn])
            nc.weight[0], nc.delay = w, d
            ncs.append(nc)
    # recording: one NetCon per source with no target
    for k, (kind, idx, obj) in enumerate(sources):
        for o in ([obj] if kind == "cell" else obj):
            if kind == "cell":
                nc = h.NetCon(o(0.5)._ref_v, None, sec=o)
                nc.threshold = THRESHOLD
            else:
                nc = h.NetCon(o, None)
            nc.record(recs[k])
            ncs.append(nc)
    h.finitialize(-65.0)
    for _ in range(int(round(tstop / DT))):
        h.fadvance()
    rows = sorted((t, k) for k in range(len(sources)) for t in recs[k])
    with open(out + ".tmp", "w") as f:
        f.write("# made by validation/neuron_network_compare.py %s with NEURON %s\n" % (protocol, neuron.__version__))
        f.write("# dt = %.17g\n# tstop = %.17g\n# threshold = %.17g\n" % (DT, tstop, THRESHOLD))
        for line in lines:
            f.write("# %s\n" % line)
        f.write("source,time\n")
        for t, k in rows:
            f.write("%d,%.17g\n" % (k, t))
    os.replace(out + ".tmp", out)
    write_net(out, mdir)
    print(protocol, "spikes per source:", [len(r) for r in recs])


if __name__ == "__main__":
    main()
