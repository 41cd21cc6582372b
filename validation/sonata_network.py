#!/usr/bin/env python3
"""A SONATA network, and its raster in NEURON built from the SONATA files.

Writes tests/data/sonata/random16/ (docs/networks.md, "SONATA"): the random
network of tests/data/neuron_network/random16_ca1.csv (16 cells of two CA1
morphologies, hh everywhere, Exp2Syn, 48 connections between the cells and 4
trains of 6 spikes driving 12 more) as SONATA files, the way BMTK writes them:

  config.json              manifest, components, networks, run, conditions, inputs
  network/cells_nodes.h5   population `cells`: 16 biophysical nodes of 2 node types
  network/input_nodes.h5   population `input`: 4 virtual nodes
  network/cells_cells_edges.h5   48 edges, group 0 with syn_weight, delay,
                           afferent_section_id, afferent_section_pos and a
                           dynamics_params subgroup (tau1, tau2 per edge)
  network/input_cells_edges.h5   12 edges, group 0 with sec_id and sec_x; weight
                           and delay from edge_types.csv (one type per edge)
  network/*_types.csv      space-separated type tables
  components/              hh.model (neurosolve model), exp2syn.json (BMTK's dynamics file)
  input_spikes.h5          /spikes/input/{timestamps,node_ids}
  neuron_raster.csv        NEURON's raster: population,node_id,t_ms by time
  random16_sonata.net      the same network as a network file (one synapse per edge,
                           sections by SWC id: independent of the section numbering)

Every SONATA edge is a synapse of its own (BMTK's rule), so the network has
60 synapses where random16_ca1.net shares 32 between its 60 connections.

Section numbers: BMTK's `afferent_section_id` is the index into the `all`
SectionList of the cell after Import3d's `instantiate(cell)` (BMTK's
Biophys1 template). The script builds the cells that way (template NsCell
below), writes the index of each synapse's section, and builds the NEURON
network from those indices, so NEURON's raster checks the numbering. It
also writes section_order.csv: for several morphologies with axons and
apical dendrites, every `all` index with the SWC id of the section's first
point (tests/io/test_sonata.c checks neurosolve's mapping against it).

Needs NEURON 9.0.2 and h5py:
  PYTHONPATH=.whl/site VENV/bin/python validation/sonata_network.py data/morphologies tests/data/sonata
"""
import csv
import json
import os
import sys

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DT = 0.025
ORDER_MORPHS = ["allen_scnn1a_473845048.swc", "allen_rorb_325404214.swc", "allen_pvalb_469628681.swc",
                "allen_human_579351144.swc", "allen_chat_614430666.swc", "ca1_h10.swc"]

TEMPLATE = """
begintemplate NsCell
public soma, dend, apic, axon, all, somatic, basal, apical, axonal
create soma[1], dend[1], apic[1], axon[1]
objref this, all, somatic, basal, apical, axonal
proc init() {
  all = new SectionList()
  somatic = new SectionList()
  basal = new SectionList()
  apical = new SectionList()
  axonal = new SectionList()
  forall delete_section()
}
endtemplate NsCell
"""


def read_random16():
    cells, syns, trains, conns, head = [], [], [], [], {}
    with open(os.path.join(REPO, "tests/data/neuron_network/random16_ca1.csv")) as f:
        for line in f:
            if not line.startswith("# ") or " = " not in line:
                continue
            key, val = line[2:].strip().split(" = ", 1)
            if key == "cell":
                cells.append(val)
            elif key == "synapse":
                c, fid, x, mech, *params = val.split()
                syns.append((int(c), int(fid), float(x), mech, dict((p.split("=")[0], float(p.split("=")[1]))
                                                                   for p in params)))
            elif key == "train":
                trains.append([float(t) for t in val.split()])
            elif key == "connect":
                s, y, w, d = val.split()
                conns.append((int(s), int(y), float(w), float(d)))
            else:
                head[key] = float(val)
    return cells, syns, trains, conns, head


def import_cell(h, path):
    """A cell as BMTK builds it (Import3d into a template); returns (cell, {first point id: all index})."""
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(path)
    gui = h.Import3d_GUI(reader, 0)
    cell = h.NsCell()
    gui.instantiate(cell)
    secs = list(cell.all)
    index = {s.name().split(".")[-1]: k for k, s in enumerate(secs)}
    fid = {}
    for i in range(int(reader.sections.count())):
        isec = reader.sections.object(i)
        if isec.is_subsidiary:
            continue
        ref = h.ref("")
        gui.name(isec, ref)
        nm = ref[0] if "[" in ref[0] else ref[0] + "[0]"
        fid[int(reader.id.x[int(isec.id)])] = index[nm]
    for s in secs:
        s.Ra, s.cm = 35.4, 1.0
        s.nseg = int((s.L / (0.1 * h.lambda_f(100, sec=s)) + 0.9) / 2) * 2 + 1
    return cell, fid, secs


def write_sonata(h, mdir, out):
    cells, syns, trains, conns, head = read_random16()
    n = len(cells)
    os.makedirs(os.path.join(out, "network"), exist_ok=True)
    os.makedirs(os.path.join(out, "components"), exist_ok=True)
    fid_to_sec = {}
    for f in sorted(set(cells)):
        _, fid, _ = import_cell(h, os.path.join(mdir, f))
        fid_to_sec[f] = fid
    morph_rel = os.path.relpath(mdir, out)
    config = {
        "manifest": {"$BASE_DIR": "${configdir}", "$NETWORK_DIR": "$BASE_DIR/network",
                     "$COMPONENTS_DIR": "$BASE_DIR/components"},
        "components": {"morphologies_dir": "$BASE_DIR/" + morph_rel,
                       "synaptic_models_dir": "$COMPONENTS_DIR",
                       "biophysical_neuron_models_dir": "$COMPONENTS_DIR"},
        "networks": {
            "nodes": [{"nodes_file": "$NETWORK_DIR/cells_nodes.h5", "node_types_file": "$NETWORK_DIR/cells_node_types.csv"},
                      {"nodes_file": "$NETWORK_DIR/input_nodes.h5", "node_types_file": "$NETWORK_DIR/input_node_types.csv"}],
            "edges": [{"edges_file": "$NETWORK_DIR/cells_cells_edges.h5",
                       "edge_types_file": "$NETWORK_DIR/cells_cells_edge_types.csv"},
                      {"edges_file": "$NETWORK_DIR/input_cells_edges.h5",
                       "edge_types_file": "$NETWORK_DIR/input_cells_edge_types.csv"}]},
        "run": {"tstop": head["tstop"], "dt": DT, "spike_threshold": head["threshold"]},
        "conditions": {"celsius": 6.3, "v_init": -65.0},
        "inputs": {"stim": {"input_type": "spikes", "module": "sonata", "input_file": "$BASE_DIR/input_spikes.h5",
                            "node_set": "input"}},
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "components", "hh.model"), "w") as f:
        f.write("# the model of every biophysical node type (docs/simulation.md, \"Models\")\nall.insert = hh\n")
    with open(os.path.join(out, "components", "exp2syn.json"), "w") as f:
        json.dump({"level_of_detail": "exp2syn", "tau1": 1.0, "tau2": 3.0, "erev": 0.0}, f, indent=2)
        f.write("\n")
    types = {"ca1_ko20x-07.swc": 100, "ca1_h10.swc": 101}
    with open(os.path.join(out, "network", "cells_node_types.csv"), "w") as f:
        f.write("node_type_id model_type model_template morphology pop_name\n")
        for m, t in sorted(types.items(), key=lambda kv: kv[1]):
            f.write("%d biophysical neurosolve:hh.model %s %s\n" % (t, m, m.split("_")[1].split(".")[0]))
    with open(os.path.join(out, "network", "input_node_types.csv"), "w") as f:
        f.write("node_type_id model_type pop_name\n200 virtual input\n")
    with h5py.File(os.path.join(out, "network", "cells_nodes.h5"), "w") as f:
        g = f.create_group("nodes/cells")
        g["node_type_id"] = np.array([types[c] for c in cells], dtype=np.int64)
        g["node_group_id"] = np.zeros(n, dtype=np.int32)
        g["node_group_index"] = np.arange(n, dtype=np.int32)
        g["node_id"] = np.arange(n, dtype=np.int64)
        g.create_group("0")["x"] = np.arange(n, dtype=np.float64) * 10.0  # positions: read by nobody here
    with h5py.File(os.path.join(out, "network", "input_nodes.h5"), "w") as f:
        g = f.create_group("nodes/input")
        g["node_type_id"] = np.full(len(trains), 200, dtype=np.int64)
        g["node_group_id"] = np.zeros(len(trains), dtype=np.int32)
        g["node_group_index"] = np.arange(len(trains), dtype=np.int32)
        g.create_group("0")
    ts, ids = [], []
    for q, times in enumerate(trains):
        for t in times:
            ts.append(t)
            ids.append(q)
    order = np.argsort(np.array(ts), kind="stable")
    with h5py.File(os.path.join(out, "input_spikes.h5"), "w") as f:
        g = f.create_group("spikes/input")
        g.attrs["sorting"] = "by_time"
        g["timestamps"] = np.array(ts)[order]
        g["node_ids"] = np.array(ids, dtype=np.uint64)[order]
    internal = [c for c in conns if c[0] < n]
    external = [c for c in conns if c[0] >= n]

    def edges(path, src_pop, rows, per_edge):
        with h5py.File(path, "w") as f:
            g = f.create_group("edges/%s_to_cells" % src_pop)
            g["source_node_id"] = np.array([s if s < n else s - n for s, _, _, _ in rows], dtype=np.uint64)
            g["source_node_id"].attrs["node_population"] = src_pop
            g["target_node_id"] = np.array([syns[y][0] for _, y, _, _ in rows], dtype=np.uint64)
            g["target_node_id"].attrs["node_population"] = "cells"
            g["edge_group_id"] = np.zeros(len(rows), dtype=np.int32)
            g["edge_group_index"] = np.arange(len(rows), dtype=np.int32)
            grp = g.create_group("0")
            secs = np.array([fid_to_sec[cells[syns[y][0]]][syns[y][1]] for _, y, _, _ in rows], dtype=np.int32)
            xs = np.array([syns[y][2] for _, y, _, _ in rows])
            if per_edge:
                g["edge_type_id"] = np.full(len(rows), 300, dtype=np.int64)
                grp["syn_weight"] = np.array([w for _, _, w, _ in rows])
                grp["delay"] = np.array([d for _, _, _, d in rows])
                grp["afferent_section_id"] = secs
                grp["afferent_section_pos"] = xs
                dp = grp.create_group("dynamics_params")
                dp["tau1"] = np.array([syns[y][4]["tau1"] for _, y, _, _ in rows])
                dp["tau2"] = np.array([syns[y][4]["tau2"] for _, y, _, _ in rows])
            else:
                g["edge_type_id"] = np.arange(400, 400 + len(rows), dtype=np.int64)
                grp["sec_id"] = secs
                grp["sec_x"] = xs
                dp = grp.create_group("dynamics_params")
                dp["tau1"] = np.array([syns[y][4]["tau1"] for _, y, _, _ in rows])
                dp["tau2"] = np.array([syns[y][4]["tau2"] for _, y, _, _ in rows])

    edges(os.path.join(out, "network", "cells_cells_edges.h5"), "cells", internal, True)
    edges(os.path.join(out, "network", "input_cells_edges.h5"), "input", external, False)
    with open(os.path.join(out, "network", "cells_cells_edge_types.csv"), "w") as f:
        f.write("edge_type_id model_template dynamics_params\n300 exp2syn exp2syn.json\n")
    with open(os.path.join(out, "network", "input_cells_edge_types.csv"), "w") as f:
        f.write("edge_type_id model_template dynamics_params syn_weight delay\n")
        for k, (_, _, w, d) in enumerate(external):
            f.write("%d exp2syn exp2syn.json %.17g %.17g\n" % (400 + k, w, d))
    # the same network as a network file: synapses by SWC id, in edge order
    base = out
    lines = ["# random16 as SONATA (validation/sonata_network.py): the same network as a network file",
             "model: all.insert = hh"]
    for c, f in enumerate(cells):
        lines.append("cells c 1 %s" % os.path.relpath(os.path.join(mdir, f), base))
    for _, y, _, _ in internal + external:
        c, fid, x, mech, params = syns[y]
        lines.append("synapse syn cell[%d] swc:%d(%.17g) %s tau1=%.17g tau2=%.17g e=0" %
                     (c, fid, x, mech, params["tau1"], params["tau2"]))
    lines.append("detector spk cell soma(0.5) %.17g" % head["threshold"])
    for times in trains:
        lines.append("train stim %s" % " ".join("%.17g" % t for t in times))
    for k, (s, _, w, d) in enumerate(internal + external):
        ref = "spk[%d]" % s if s < n else "stim[%d]" % (s - n)
        lines.append("connect %s syn[%d] %.17g %.17g" % (ref, k, w, d))
    with open(os.path.join(out, "random16_sonata.net"), "w") as f:
        f.write("\n".join(lines) + "\n")


def subst(value, manifest):
    for _ in range(16):
        new = value
        for k, v in manifest.items():
            new = new.replace(k, v)
        if new == value:
            break
        value = new
    return value


def run_from_sonata(h, out):
    """NEURON's network read back from the SONATA files (as BMTK's bionet builds it)."""
    cfgdir = os.path.abspath(out)
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    man = {k: v.replace("${configdir}", cfgdir) for k, v in cfg["manifest"].items()}
    comp = {k: subst(v, man) for k, v in cfg["components"].items()}

    def types_of(path):
        with open(subst(path, man)) as f:
            rows = list(csv.reader(f, delimiter=" "))
        return {int(r[0]): dict(zip(rows[0], r)) for r in rows[1:]}

    pops, order = {}, []
    for nd in cfg["networks"]["nodes"]:
        nt = types_of(nd["node_types_file"])
        with h5py.File(subst(nd["nodes_file"], man)) as f:
            for pop, g in f["nodes"].items():
                pops[pop] = [nt[int(t)] for t in g["node_type_id"][()]]
                order.append(pop)
    h.celsius = cfg["conditions"]["celsius"]
    h.dt = cfg["run"]["dt"]
    thr = cfg["run"]["spike_threshold"]
    built, recs, objs = {}, {}, []
    for pop in order:
        for nid, t in enumerate(pops[pop]):
            recs[(pop, nid)] = h.Vector()
            if t["model_type"] == "biophysical":
                cell, _, secs = import_cell(h, os.path.join(comp["morphologies_dir"], t["morphology"]))
                for s in secs:
                    s.insert("hh")
                built[(pop, nid)] = (cell, secs)
                nc = h.NetCon(cell.soma[0](0.5)._ref_v, None, sec=cell.soma[0])
                nc.threshold = thr
                nc.record(recs[(pop, nid)])
                objs.append(nc)
    inp = cfg["inputs"]["stim"]
    stims = {}
    with h5py.File(subst(inp["input_file"], man)) as f:
        g = f["spikes"][inp["node_set"]]
        for t, i in zip(g["timestamps"][()], g["node_ids"][()]):
            ns = h.NetStim()
            ns.start, ns.number, ns.noise = float(t), 1, 0
            stims.setdefault((inp["node_set"], int(i)), []).append(ns)
            nc = h.NetCon(ns, None)
            nc.record(recs[(inp["node_set"], int(i))])
            objs += [ns, nc]
    for ed in cfg["networks"]["edges"]:
        et = types_of(ed["edge_types_file"])
        with h5py.File(subst(ed["edges_file"], man)) as f:
            for pop, g in f["edges"].items():
                spop = g["source_node_id"].attrs["node_population"]
                tpop = g["target_node_id"].attrs["node_population"]
                grp = g["0"]
                sec_key = "afferent_section_id" if "afferent_section_id" in grp else "sec_id"
                x_key = "afferent_section_pos" if "afferent_section_pos" in grp else "sec_x"
                for e in range(len(g["source_node_id"])):
                    t = et[int(g["edge_type_id"][e])]
                    gi = int(g["edge_group_index"][e])
                    with open(os.path.join(comp["synaptic_models_dir"], t["dynamics_params"])) as df:
                        dyn = json.load(df)
                    for k in grp["dynamics_params"]:
                        dyn[k] = float(grp["dynamics_params"][k][gi])
                    cell, secs = built[(tpop, int(g["target_node_id"][e]))]
                    syn = h.Exp2Syn(secs[int(grp[sec_key][gi])](float(grp[x_key][gi])))
                    syn.tau1, syn.tau2, syn.e = dyn["tau1"], dyn["tau2"], dyn["erev"]
                    w = float(grp["syn_weight"][gi]) if "syn_weight" in grp else float(t["syn_weight"])
                    d = float(grp["delay"][gi]) if "delay" in grp else float(t["delay"])
                    src = (spop, int(g["source_node_id"][e]))
                    if src in built:
                        s = built[src][0].soma[0]
                        ncs = [h.NetCon(s(0.5)._ref_v, syn, sec=s)]
                        ncs[0].threshold = thr
                    else:
                        ncs = [h.NetCon(ns, syn) for ns in stims.get(src, [])]
                    for nc in ncs:
                        nc.weight[0], nc.delay = w, d
                    objs += [syn] + ncs
    h.finitialize(cfg["conditions"]["v_init"])
    for _ in range(int(round(cfg["run"]["tstop"] / h.dt))):
        h.fadvance()
    rows = sorted((t, pop, nid) for (pop, nid), v in recs.items() for t in v)
    import neuron
    with open(os.path.join(out, "neuron_raster.csv"), "w") as f:
        f.write("# NEURON %s from the SONATA files (validation/sonata_network.py)\n" % neuron.__version__)
        f.write("population,node_id,t_ms\n")
        for t, pop, nid in rows:
            f.write("%s,%d,%.17g\n" % (pop, nid, t))
    print("NEURON:", len(rows), "spikes")


def section_order(h, mdir, out):
    with open(os.path.join(out, "section_order.csv"), "w") as f:
        f.write("# BMTK's section ids (the `all` SectionList after Import3d's instantiate(cell)) and the SWC id\n"
                "# of each section's first point, NEURON 9.0.2 (validation/sonata_network.py)\n")
        f.write("morphology,sec_id,first_point_id\n")
        for m in ORDER_MORPHS:
            _, fid, _ = import_cell(h, os.path.join(mdir, m))
            for point, k in sorted(fid.items(), key=lambda kv: kv[1]):
                f.write("%s,%d,%d\n" % (m, k, point))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    mdir, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    from neuron import h
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    h(TEMPLATE)
    os.makedirs(out, exist_ok=True)
    section_order(h, mdir, out)
    net = os.path.join(out, "random16")
    write_sonata(h, mdir, net)
    run_from_sonata(h, net)


if __name__ == "__main__":
    main()
