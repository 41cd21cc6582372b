"""SONATA networks from Python (docs/networks.md, "SONATA"): Network.read_sonata
(and Network.read detecting the config) on tests/data/sonata/random16, the
description's populations and source nodes, Simulation.from_network with the
config's run settings against NEURON 9.0.2's raster built from the same SONATA
files, the spikes file, bad input. A build without HDF5 (the PyPI wheel)
refuses SONATA: that refusal is checked and the rest skipped."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import TEST_DATA

DIR = os.path.join(TEST_DATA, "sonata", "random16")
CONFIG = os.path.join(DIR, "config.json")


def read_or_skip():
    try:
        return ns.Network.read_sonata(CONFIG)
    except ns.UnsupportedError as e:
        assert "built without HDF5" in str(e)
        pytest.skip("neurosolve was built without HDF5: SONATA is refused (checked)")


def neuron_raster():
    rows = [l.strip().split(",") for l in open(os.path.join(DIR, "neuron_raster.csv")) if l[0] not in "#p"]
    return [(p, int(n), float(t)) for p, n, t in rows]


def test_read_sonata_description():
    net = read_or_skip()
    assert (net.n_cells, net.n_synapses, net.n_sources) == (16, 60, 20)
    assert net.populations == ["cells", "input"]
    assert [os.path.basename(m) for m in net.morphologies] == ["ca1_ko20x-07.swc", "ca1_h10.swc"]
    assert list(net.cell_morphology) == [c % 2 for c in range(16)]
    assert net.source_node(3) == ("cells", 3) and net.source_node(17) == ("input", 1)
    with pytest.raises(ns.InvalidArgumentError, match="no source 20"):
        net.source_node(20)
    p = ns.SimParams()
    net.apply_run_settings(p)
    d = p.to_dict()
    assert (d["tstop"], d["dt"], d["celsius"], d["v_init"], d["spike_threshold"]) == (150.0, 0.025, 6.3, -65.0, -20.0)
    # Network.read detects the config: the same description
    again = ns.Network.read(CONFIG)
    assert (again.n_synapses, again.populations) == (60, ["cells", "input"])


def test_from_network_matches_neuron(tmp_path):
    net = read_or_skip()
    sim = ns.Simulation.from_network(net, threads=2)
    sim.run(sim.params.to_dict()["tstop"])
    got = []
    for s in range(sim.n_sources):
        pop, node = net.source_node(s)
        got += [(pop, node, float(t)) for t in sim.source_spikes(s)]
    ref = neuron_raster()
    assert len(got) == len(ref) == 113
    for key in {(p, n) for p, n, _ in ref}:
        a = sorted(t for p, n, t in got if (p, n) == key)
        b = sorted(t for p, n, t in ref if (p, n) == key)
        assert len(a) == len(b), key
        assert np.max(np.abs(np.array(a) - np.array(b)), initial=0.0) <= 0.05, key


def test_write_spikes(tmp_path):
    net = read_or_skip()
    h5py = pytest.importorskip("h5py")
    sim = ns.Simulation.from_network(net)
    sim.run(sim.params.to_dict()["tstop"])
    ref = neuron_raster()
    # the spikes file: the cells' spikes, by time
    src = np.array([s for s in range(sim.n_sources) for _ in sim.source_spikes(s)], dtype=np.int64)
    t = np.concatenate([np.asarray(sim.source_spikes(s)) for s in range(sim.n_sources)])
    path = str(tmp_path / "spikes.h5")
    net.write_spikes(path, src, t)
    with h5py.File(path, "r") as f:
        ts = f["spikes/cells/timestamps"][()]
        assert len(ts) == sum(1 for p, _, _ in ref if p == "cells") and np.all(np.diff(ts) >= 0)
        assert "input" not in f["spikes"]


def test_bad_input(tmp_path):
    read_or_skip()
    with pytest.raises(ns.IOError, match="nothere.json"):
        ns.Network.read_sonata(str(tmp_path / "nothere.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"networks": {"nodes": [{"nodes_file": "x.h5"}]}}')
    with pytest.raises(ns.ParseError, match=r"networks.nodes\[0\]: no \"node_types_file\""):
        ns.Network.read_sonata(str(bad))
    bad.write_text('{"networks": [1,]}')
    with pytest.raises(ns.ParseError, match=r"bad.json:1:17"):
        ns.Network.read(str(bad))
