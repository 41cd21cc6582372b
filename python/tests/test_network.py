"""Networks from Python (docs/networks.md): Simulation.from_network on the
NEURON ring of tests/data/neuron_network (NEURON 9.0.2's raster), the network
calls one by one, Poisson sources against scipy's exponential distribution
(Kolmogorov-Smirnov), determinism, Network.parse, and bad input."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH, TEST_DATA

NETS = os.path.join(TEST_DATA, "neuron_network")


def neuron_raster(path):
    rows = [l.split(",") for l in open(path) if l[:1].isdigit()]
    return [(int(s), float(t)) for s, t in rows]


def cylinder():
    """One compartment: a 20 um by 20 um cylinder."""
    m = ns.Morphology.from_points("cyl", np.array([[0.0, 0, 0], [20, 0, 0]]), np.array([10.0, 10.0]),
                                  np.array([1, 1], dtype=np.int32), np.array([-1, 0], dtype=np.int32))
    return m.discretize(rule="one")


def model(text):
    m = ns.Model()
    m.parse(text)
    return m


def test_from_network_ring_matches_neuron():
    sim = ns.Simulation.from_network(os.path.join(NETS, "ring8_ca1_ko20x-07.net"), threads=2)
    assert (sim.n_cells, sim.n_synapses, sim.n_sources, sim.n_connections) == (8, 16, 9, 18)
    assert sim.backend == "cpu"
    sim.run(200.0)
    ref = neuron_raster(os.path.join(NETS, "ring8_ca1_ko20x-07.csv"))
    for s in range(sim.n_sources):
        got = sim.source_spikes(s)
        want = [t for q, t in ref if q == s]
        assert len(got) == len(want) and np.allclose(got, want, rtol=0, atol=1e-9), s
        assert sim.source_cell(s) == (s if s < 8 else -1)


def test_from_network_ring_on_the_gpu():
    """backend="cuda": the GPU loop's raster, NEURON's within 0.05 ms (docs/networks.md, "The GPU loop")."""
    from conftest import has_gpu
    if not has_gpu():
        pytest.skip("no usable GPU")
    sim = ns.Simulation.from_network(os.path.join(NETS, "ring8_ca1_ko20x-07.net"), backend="cuda")
    assert sim.backend == "cuda"
    sim.run(200.0)
    ref = neuron_raster(os.path.join(NETS, "ring8_ca1_ko20x-07.csv"))
    for s in range(sim.n_sources):
        got = sim.source_spikes(s)
        want = [t for q, t in ref if q == s]
        assert len(got) == len(want) and np.allclose(got, want, rtol=0, atol=0.05), s


def test_calls_one_by_one():
    cell = cylinder()
    sim = ns.Simulation([cell], 3, model=model("all.insert = hh\n"), backend="cpu")
    syn = [sim.add_synapse(c, 0, "ExpSyn") for c in range(3)]
    sim.synapse_set(syn[1], "tau", 3.0)
    det = [sim.add_detector(c, 0, -20.0) for c in range(3)]
    kick = sim.add_spike_source([2.0])
    assert syn == [0, 1, 2] and det == [0, 1, 2] and kick == 3
    sim.connect(kick, syn[0], 0.05, 1.0)
    sim.connect(det[0], syn[1], 0.05, 2.0)
    sim.connect(det[1], syn[2], 0.05, 2.0)
    sim.init()
    sim.run(40.0)
    t = [sim.source_spikes(d) for d in det]
    # the kick reaches cell 0 after 1 ms; each cell fires once, in order, delays apart
    assert all(len(x) == 1 for x in t)
    assert 3.0 < t[0][0] < t[1][0] - 2.0 < t[2][0] - 4.0
    np.testing.assert_array_equal(sim.source_spikes(kick), [2.0])


def isis(sim, sources, start):
    out = []
    for s in sources:
        x = sim.source_spikes(s)
        out.append(np.diff(np.concatenate([[start], x])))
    return np.concatenate(out)


def poisson_sim(seed, threads=1, rate=150.0, start=20.0, stop=3020.0, n=6):
    sim = ns.Simulation([cylinder()], 2, model=model("all.insert = pas\n"), backend="cpu", threads=threads)
    ids = [sim.add_poisson_source(rate, start, stop, seed + k) for k in range(n)]
    syn = sim.add_synapse(1, 0, "ExpSyn")
    sim.connect(ids[0], syn, 1e-4, 0.4)
    sim.init()
    return sim, ids


def test_poisson_exponential_intervals():
    stats = pytest.importorskip("scipy.stats")
    rate, start, stop = 150.0, 20.0, 3020.0
    sim, ids = poisson_sim(7)
    sim.run(3100.0)
    x = isis(sim, ids, start)
    spikes = np.concatenate([sim.source_spikes(s) for s in ids])
    assert spikes.min() > start and spikes.max() < stop
    mean = 1000.0 / rate
    n_exp = len(ids) * rate * (stop - start) / 1000.0
    assert abs(len(x) - n_exp) <= 5 * np.sqrt(n_exp)
    p = stats.kstest(x, "expon", args=(0, mean)).pvalue
    assert p > 1e-3, p
    # the test can tell: a rate 10 % off is rejected
    assert stats.kstest(x, "expon", args=(0, 1.1 * mean)).pvalue < 1e-3
    # counts in 100 ms windows: Poisson (index of dispersion ~ 1, chi-square bounds at 0.1 %)
    counts = np.histogram(sim.source_spikes(ids[0]), bins=np.arange(start, stop + 1e-9, 100.0))[0]
    disp = counts.var(ddof=1) * (len(counts) - 1) / counts.mean()
    lo, hi = stats.chi2.ppf([5e-4, 1 - 5e-4], len(counts) - 1)
    assert lo < disp < hi


def test_poisson_deterministic():
    a, ids = poisson_sim(3, threads=1)
    a.run(1000.0)
    b, _ = poisson_sim(3, threads=2)
    for _ in range(4):
        b.advance(b.steps_for(250.0))
    c, _ = poisson_sim(4)
    c.run(1000.0)
    for s in ids:
        np.testing.assert_array_equal(a.source_spikes(s), b.source_spikes(s))
    assert not np.array_equal(a.source_spikes(0), c.source_spikes(0))
    np.testing.assert_array_equal(a.source_spikes(1), c.source_spikes(0))  # seed 3 + 1 == seed 4 + 0
    a.init()
    a.run(1000.0)
    np.testing.assert_array_equal(a.source_spikes(0), b.source_spikes(0))


def test_network_parse_and_apply():
    cell = cylinder()
    text = ("cells exc 4 a.swc\ncells inh 2 b.swc\nmodel: all.insert = pas\n"
            "synapse s exc+inh[1] soma ExpSyn tau=3\n"
            "poisson bg 3 20 0 inf 1\ndetector d exc c0 -30\n"
            "connect bg s[0-2] 0.01 1\nconnect d s 0.01 2 all\n")
    net = ns.Network.parse(text, "t.net", "/data")
    assert net.n_cells == 6 and net.n_synapses == 5 and net.n_sources == 7
    assert net.morphologies == ["/data/a.swc", "/data/b.swc"]
    np.testing.assert_array_equal(net.cell_morphology, [0, 0, 0, 0, 1, 1])
    m = net.model()
    sim = ns.Simulation([cell, cell], 6, net.cell_morphology, model=m, backend="cpu")
    sim.apply_network(net, [cell, cell])
    assert (sim.n_synapses, sim.n_sources, sim.n_connections) == (5, 7, 3 + 20)
    assert [sim.source_cell(s) for s in range(7)] == [-1, -1, -1, 0, 1, 2, 3]
    sim.init()
    sim.run(50.0)
    assert len(sim.source_spikes(0)) > 0


def test_bad_input():
    text = "cells c 1 a.swc\ndetector d c soma 0\nsynapse s c soma ExpSyn\nconnect d s 0.1 0\n"
    with pytest.raises(ns.ParseError, match=r"t.net:4: connect d s: delay '0' must be a number > 0"):
        ns.Network.parse(text, "t.net")
    with pytest.raises(ns.ParseError, match=r"t.net:2: synapse s: no cells named 'x'"):
        ns.Network.parse("cells c 1 a.swc\nsynapse s x soma ExpSyn\n", "t.net")
    with pytest.raises(ns.IOError, match="nonexistent.net"):
        ns.Network.read("/nonexistent/nonexistent.net")
    cell = cylinder()
    sim = ns.Simulation([cell], 1, model=model("all.insert = pas\n"), backend="cpu")
    with pytest.raises(ns.InvalidArgumentError, match="no mechanism 'AMPA'"):
        sim.add_synapse(0, 0, "AMPA")
    syn = sim.add_synapse(0, 0, "Exp2Syn")
    with pytest.raises(ns.InvalidArgumentError, match="no parameter 'tau'"):
        sim.synapse_set(syn, "tau", 1.0)
    src = sim.add_spike_source([1.0])
    with pytest.raises(ns.InvalidArgumentError, match="delay 0"):
        sim.connect(src, syn, 0.01, 0.0)
    with pytest.raises(ns.InvalidArgumentError, match="rate -1"):
        sim.add_poisson_source(-1.0)
    with pytest.raises(ns.InvalidArgumentError, match="source 9 out of range"):
        sim.source_spikes(9)
    net = ns.Network.parse("cells c 1 a.swc\nsynapse s c sec:4 ExpSyn\n", "u.net")
    with pytest.raises(ns.InvalidArgumentError, match=r"u.net:2: cell 0 \(a.swc\): no section 4"):
        sim.apply_network(net, [cell])
    with pytest.raises(ns.InvalidArgumentError, match="1 morphologies"):
        sim.apply_network(net, [cell, cell])
    with pytest.raises(ns.InvalidArgumentError, match="names no model"):
        ns.Simulation.from_network(ns.Network.parse("cells c 1 a.swc\n"))


def test_docs_example_network():
    """data/networks/ring1000_poisson.net, docs/networks.md's example: the ids and counts it states."""
    net = ns.Network.read(os.path.join(os.path.dirname(MORPH), "networks", "ring1000_poisson.net"))
    assert net.n_cells == 1000 and net.n_synapses == 2000 and net.n_sources == 1021
    assert net.morphologies == [os.path.join(os.path.dirname(MORPH), "networks", "../morphologies/ca1_h10.swc")]
    sim = ns.Simulation.from_network(net, threads=2)
    assert [sim.source_cell(s) for s in (0, 999, 1000, 1019, 1020)] == [0, 999, -1, -1, -1]
    fixed = 999 + 1 + 1 + 100 * 100
    p_conns = sim.n_connections - fixed  # bg x inh = 20 x 1000 pairs at p = 0.1
    assert abs(p_conns - 2000) <= 5 * np.sqrt(2000 * 0.9), p_conns
    sim.run(6.0)
    np.testing.assert_array_equal(sim.source_spikes(1020), [5.0])  # the train's first spike
    assert all(0 < t < 6.0 for s in range(1000, 1020) for t in sim.source_spikes(s))


SMALL_SWC = """1 1 0 0 0 5 -1
2 1 0 10 0 5 1
3 3 0 20 0 1 2
4 3 0 120 0 1 3
5 3 10 0 0 1 1
6 3 110 0 0 1 5
"""


def make_network(tmp_path, *args):
    import subprocess
    import sys
    swc = tmp_path / "small.swc"
    swc.write_text(SMALL_SWC)
    out = tmp_path / "net.net"
    script = os.path.join(os.path.dirname(MORPH), "..", "examples", "python", "make_network.py")
    p = subprocess.run([sys.executable, script, args[0], str(swc), args[1], str(out), *args[2:]],
                       capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def test_generated_ring(tmp_path):
    """examples/python/make_network.py ring: 1,200 cells, the wave goes round in order."""
    net = ns.Network.read(str(make_network(tmp_path, "ring", "1200", "--synapses", "3", "--seed", "5")))
    assert net.n_cells == 1200 and net.n_synapses == 3600 and net.n_sources == 1201
    sim = ns.Simulation.from_network(net, threads=2)
    assert sim.n_connections == 1201
    sim.run(100.0)
    first = [sim.source_spikes(c)[0] if len(sim.source_spikes(c)) else np.inf for c in range(1200)]
    reached = int(np.sum(np.isfinite(first)))
    assert 10 < reached < 1200
    assert np.all(np.diff(first[:reached]) > 1.5)  # cell after cell, a delay apart


def test_generated_random(tmp_path):
    """make_network.py random: 1,000 cells, 10 targets each, Poisson background; counts and a run."""
    path = make_network(tmp_path, "random", "1000", "--fan-out", "10", "--poisson", "50", "--rate", "40")
    net = ns.Network.read(str(path))
    assert net.n_cells == 1000 and net.n_synapses == 2000 and net.n_sources == 1050
    sim = ns.Simulation.from_network(net, threads=2)
    assert sim.n_connections == 1000 * 10 + 50 * 40
    sim.run(30.0)
    bg = sum(len(sim.source_spikes(s)) for s in range(1000, 1050))
    assert abs(bg - 50 * 40 * 0.03) <= 5 * np.sqrt(50 * 40 * 0.03)
    # the same file, the same raster
    again = ns.Simulation.from_network(net, threads=1)
    again.run(30.0)
    for s in range(0, 1050, 7):
        np.testing.assert_array_equal(sim.source_spikes(s), again.source_spikes(s))
