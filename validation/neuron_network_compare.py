#!/usr/bin/env python3
"""A ring network in NEURON: the reference raster of tests/data/neuron_network/.

The protocol (docs/networks.md, "Validation"), the same discretisation as
validation/neuron_sim_compare.py: the morphology through NEURON's Import3d,
nseg per section by the d_lambda rule (0.1 at 100 Hz, Ra 35.4, cm 1), hh in
every section with its defaults, celsius 6.3, v_init -65 mV, dt 0.025 ms,
fixed step, TSTOP ms. The first cell is built by Import3d; the others are
copies (the same 3-d points, nseg and connections: Import3d cannot
instantiate one file twice in a process).

N_CELLS cells in a ring. Cell i has
  - an Exp2Syn (tau1 0.5 ms, tau2 3 ms, e 0 mV) in the middle of section
    SYN_SECTION (Import3d's order, subsidiary sections left out), and
  - an ExpSyn (tau 2 ms, e 0 mV) at the root section's middle (soma(0.5));
  - a NetCon from v at its soma(0.5), threshold THRESHOLD, to the Exp2Syn of
    cell (i + 1) % N with weight W_RING and delay 1 + 0.5 i ms, and to the
    ExpSyn of cell (i + 2) % N with weight W_SIDE and delay 2 + 0.25 i ms.
A NetStim without noise (spikes at TRAIN) drives the Exp2Syn of cell 0 with
weight W_RING and delay 1 ms, and the ExpSyn of cell 3 with weight W_SIDE and
delay 0.6 ms.

Written: OUT.csv with the protocol as '# key = value' lines, then
`source,time` rows: every spike of the cells' detectors (NetCon.record:
source = cell) and of the train (source = N_CELLS), in time order.

Usage: python3 validation/neuron_network_compare.py MORPHOLOGY.swc OUT.csv
"""
import os
import sys

N_CELLS = 8
DT = 0.025
TSTOP = 200.0
THRESHOLD = -20.0
W_RING = 0.02   # [uS]
W_SIDE = 0.002  # [uS]
TRAIN = (5.0, 102.3)


def build(path):
    from neuron import h
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(path)
    gui = h.Import3d_GUI(reader, 0)
    gui.instantiate(None)
    byname = {sec.name(): sec for sec in h.allsec()}
    secs = []  # Import3d order, as neurosolve numbers sections
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
    for sec in h.allsec():
        sec.Ra = 35.4
        sec.cm = 1.0
        try:
            sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
        except RuntimeError:
            sec.nseg = 1
        sec.insert("hh")
    cells = [[s for _, s in secs]]
    index = {s.name(): k for k, (_, s) in enumerate(secs)}
    for c in range(1, N_CELLS):
        copy = []
        for k, (_, s) in enumerate(secs):
            n = h.Section(name="cell%d_%d" % (c, k))
            for j in range(int(s.n3d())):
                n.pt3dadd(s.x3d(j), s.y3d(j), s.z3d(j), s.diam3d(j))
            n.Ra, n.cm, n.nseg = s.Ra, s.cm, s.nseg
            n.insert("hh")
            copy.append(n)
        for k, (_, s) in enumerate(secs):
            ps = s.parentseg()
            if ps is not None:
                copy[k].connect(copy[index[ps.sec.name()]](ps.x), s.orientation())
        cells.append(copy)
    return h, secs, cells


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, out = sys.argv[1], sys.argv[2]
    h, secs, cells = build(path)
    syn_section = len(secs) // 2
    h.celsius = 6.3
    h.dt = DT
    exp2, exps = [], []
    for c in range(N_CELLS):
        s = h.Exp2Syn(cells[c][syn_section](0.5))
        s.tau1, s.tau2, s.e = 0.5, 3.0, 0.0
        exp2.append(s)
        e = h.ExpSyn(cells[c][0](0.5))
        e.tau, e.e = 2.0, 0.0
        exps.append(e)
    ncs, recs = [], []
    for c in range(N_CELLS):
        soma = cells[c][0]
        nc = h.NetCon(soma(0.5)._ref_v, exp2[(c + 1) % N_CELLS], sec=soma)
        nc.threshold, nc.weight[0], nc.delay = THRESHOLD, W_RING, 1.0 + 0.5 * c
        nc2 = h.NetCon(soma(0.5)._ref_v, exps[(c + 2) % N_CELLS], sec=soma)
        nc2.threshold, nc2.weight[0], nc2.delay = THRESHOLD, W_SIDE, 2.0 + 0.25 * c
        tv = h.Vector()
        nc.record(tv)
        ncs += [nc, nc2]
        recs.append(tv)
    stim = h.NetStim()
    stim.start, stim.number, stim.interval, stim.noise = TRAIN[0], len(TRAIN), TRAIN[1] - TRAIN[0], 0
    n1 = h.NetCon(stim, exp2[0])
    n1.weight[0], n1.delay = W_RING, 1.0
    n2 = h.NetCon(stim, exps[3])
    n2.weight[0], n2.delay = W_SIDE, 0.6
    tstim = h.Vector()
    n1.record(tstim)
    h.finitialize(-65.0)
    for _ in range(int(round(TSTOP / DT))):
        h.fadvance()
    rows = [(t, c) for c in range(N_CELLS) for t in recs[c]] + [(t, N_CELLS) for t in tstim]
    rows.sort()
    import neuron
    with open(out + ".tmp", "w") as f:
        f.write("# made by validation/neuron_network_compare.py with NEURON %s\n" % neuron.__version__)
        f.write("# morphology = %s\n" % os.path.basename(path))
        f.write("# n_cells = %d\n" % N_CELLS)
        f.write("# syn_section = %d\n" % syn_section)
        f.write("# syn_section_first_point_id = %d\n" % secs[syn_section][0])
        f.write("# w_ring = %.17g\n# w_side = %.17g\n" % (W_RING, W_SIDE))
        f.write("# train = %s\n" % " ".join("%.17g" % t for t in TRAIN))
        f.write("# threshold = %.17g\n# dt = %.17g\n# tstop = %.17g\n" % (THRESHOLD, DT, TSTOP))
        f.write("# train_recorded = %s\n" % " ".join("%.17g" % t for t in tstim))
        f.write("source,time\n")
        for t, c in rows:
            f.write("%d,%.17g\n" % (c, t))
    os.replace(out + ".tmp", out)
    counts = [len(r) for r in recs]
    print("spikes per cell:", counts, "train:", list(tstim))


if __name__ == "__main__":
    main()
