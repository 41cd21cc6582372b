"""The simulation from Python against NEURON 9's stored traces
(tests/data/neuron_traces, the protocol and tolerances of
tests/sim/test_cable_neuron.c), parameters, state and bad input."""
import glob
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH, TEST_DATA

REFS = sorted(glob.glob(os.path.join(TEST_DATA, "neuron_traces", "*.csv")))


def read_ref(path):
    r = {"usetable": 1, "sites": [], "spikes": []}
    for line in open(path):
        if line.startswith("# file = "):
            r["file"] = line.split("=", 1)[1].strip()
        elif line.startswith("# iclamp = "):
            r["iclamp"] = [float(x) for x in line.split("=", 1)[1].split()]
        elif "usetable_hh 0" in line:
            r["usetable"] = 0
        elif line.startswith("# sites = "):
            r["sites"] = [(int(k), float(x)) for k, x in (s.split(":") for s in line.split("=", 1)[1].split())]
        elif line.startswith("# spikes = "):
            r["spikes"] = [float(x) for x in line.split("=", 1)[1].split()]
    r["data"] = np.array([[float(x) for x in l.split(",")] for l in open(path)
                  if not l.startswith("#") and not l.startswith("t")])
    return r


def section_of_key(cell, key):
    for k in range(cell.info["sections"]):
        if cell.get_section(k)["first_point_id"] == key:
            return k
    raise AssertionError(f"no section starts at SWC id {key}")


@pytest.mark.parametrize("path", REFS, ids=[os.path.basename(p) for p in REFS])
def test_against_neuron(path):
    assert len(REFS) >= 6
    r = read_ref(path)
    cell = ns.read_swc(os.path.join(MORPH, r["file"])).discretize()
    params = ns.make_params({"usetable_hh": r["usetable"]})
    sim = ns.Simulation([cell], 2, params=params, record_every=4,
                        method="openmp" if "h10" in path else "sequential")
    soma = cell.locate(0, 0.5)
    for c in range(2):
        sim.add_iclamp(c, soma, *r["iclamp"])
    for c in range(2):
        for key, x in r["sites"]:
            assert sim.add_recording(c, cell.locate(section_of_key(cell, key), x)) == c * len(r["sites"]) + \
                r["sites"].index((key, x))
    sim.run(100.0)
    assert sim.step_count == 4000 and abs(sim.time - 100.0) < 1e-9
    tr = sim.traces
    ref = r["data"]
    ns_sites = len(r["sites"])
    assert tr.shape == (len(ref), 2 * ns_sites)
    rms = np.sqrt(((tr[:, :ns_sites] - ref[:, 1:]) ** 2).mean(axis=0))
    assert (rms <= 0.01).all(), rms
    np.testing.assert_array_equal(tr[:, :ns_sites], tr[:, ns_sites:])  # two identical cells
    for c in range(2):
        sp = sim.spikes(c)
        assert len(sp) == len(r["spikes"])
        np.testing.assert_allclose(sp, r["spikes"], rtol=0, atol=0.05)


def hh_steady(v):
    """hh.mod's rates (exact, usetable_hh = 0), steady states m, h, n."""
    def vtrap(x, y):
        return y * (1 - x / y / 2) if abs(x / y) < 1e-6 else x / (np.exp(x / y) - 1)
    am = 0.1 * vtrap(-(v + 40), 10)
    bm = 4 * np.exp(-(v + 65) / 18)
    ah = 0.07 * np.exp(-(v + 65) / 20)
    bh = 1 / (np.exp(-(v + 35) / 10) + 1)
    an = 0.01 * vtrap(-(v + 55), 10)
    bn = 0.125 * np.exp(-(v + 65) / 80)
    return am / (am + bm), ah / (ah + bh), an / (an + bn)


def test_params_and_state(ca1):
    cell = ca1.discretize()
    p = ns.SimParams()
    p.set("v_init", -70.0)
    p.set("usetable_hh", 0)
    p.set("dend.gnabar_hh", 0.0)
    p.parse("# comment\ncelsius = 16.3\nsoma.pas = 1\n", "mine.par")
    d = p.to_dict()
    assert d["v_init"] == -70 and d["celsius"] == 16.3 and d["usetable_hh"] == 0
    assert d["basal"]["gnabar_hh"] == d["apical"]["gnabar_hh"] == 0 and d["soma"]["gnabar_hh"] == 0.12
    assert d["soma"]["pas"] == 1 and d["axon"]["pas"] == 0
    sim = ns.Simulation([cell, cell], 3, params=p, cell_shape=np.array([1, 0, 1], dtype=np.int32))
    assert sim.n_cells == 3 and sim.compartments == 3 * cell.size
    st = sim.state(1)
    assert set(st) == {"v"} and len(st["v"]) == cell.size
    np.testing.assert_array_equal(st["v"], -70.0)
    m, h, n = hh_steady(-70.0)
    has = cell.area > 0  # zero-area junctions carry no mechanism: NaN there
    for name, want in (("m_hh", m), ("h_hh", h), ("n_hh", n)):
        x = sim.model_var(1, name)
        np.testing.assert_allclose(x[has], want, rtol=1e-12)
        assert np.isnan(x[~has]).all()
    # a gate written by name is read back, and NaN refused where hh is
    x = np.full(cell.size, 0.25)
    sim.set_model_var(1, "m_hh", x)
    np.testing.assert_array_equal(sim.model_var(1, "m_hh")[has], 0.25)
    x[np.argmax(has)] = np.nan
    with pytest.raises(ns.NotFiniteError):
        sim.set_model_var(1, "m_hh", x)
    with pytest.raises(ns.SizeError):
        sim.set_model_var(1, "m_hh", np.zeros(3))
    sim.init()
    sim.advance(10)
    assert sim.step_count == 10 and sim.time == pytest.approx(0.25)
    assert not np.array_equal(sim.state(0)["v"], st["v"])  # pas in the soma pulls v towards -70 ... and hh moves
    sim.init()
    assert sim.step_count == 0 and sim.time == 0
    np.testing.assert_array_equal(sim.state(2)["v"], -70.0)
    assert sim.spike_compartment(0) == cell.locate(0, 0.5)


def coupled_pair(cell, backend):
    """Two identical simulations, advanced 200 steps."""
    sims = []
    for _ in range(2):
        sim = ns.Simulation([cell], 3, backend=backend)
        for c in range(3):
            sim.add_iclamp(c, cell.locate(0, 0.5), 1, 20, 0.5 + 0.3 * c)
            sim.add_recording(c, cell.locate(0, 0.5))
        sim.advance(200)
        sims.append(sim)
    return sims


def check_coupling(sim, twin, read, write):
    """read_var against the Flat concatenation of state(c) (the per-cell
    accessor, an independent path); write_var seen by state(c) at once; then
    a coupling step (the same change written to both) gives the same traces.
    tests/sim/test_sim_state.c checks write_var against ns_sim_set_state."""
    n = sim.compartments
    want = {"v": np.concatenate([twin.state(c)["v"] for c in range(3)])}
    np.testing.assert_array_equal(read(sim, "v"), want["v"])
    assert [sim.cell_offset(c) for c in range(4)] == [0, n // 3, 2 * n // 3, n]
    v = want["v"] + 0.5 * np.sin(np.arange(n))
    write(sim, "v", v)
    np.testing.assert_array_equal(np.concatenate([sim.state(c)["v"] for c in range(3)]), v)
    write(twin, "v", v)
    for s in (sim, twin):
        s.advance(300)
    np.testing.assert_array_equal(sim.traces, twin.traces)
    np.testing.assert_array_equal(np.concatenate([sim.state(c)["v"] for c in range(3)]), read(twin, "v"))


def test_state_vectors_cpu(ca1):
    cell = ca1.discretize()
    sim, twin = coupled_pair(cell, "cpu")

    def read(s, k):
        out = np.empty(s.compartments)
        s.read_var(k, out)
        return out

    check_coupling(sim, twin, read, lambda s, k, x: s.write_var(k, np.ascontiguousarray(x)))
    out = np.empty(sim.compartments)
    with pytest.raises(ns.InvalidArgumentError, match="expected v"):
        sim.read_var("m", out)
    with pytest.raises(ns.SizeError):
        sim.read_var("v", np.empty(3))
    with pytest.raises(ns.InvalidArgumentError, match="stream"):
        sim.read_var("v", out, stream=1)
    with pytest.raises(ns.InvalidArgumentError, match="out of range"):
        sim.cell_offset(4)


def check_parts(sim, twin, to_host, write, done, twin_write):
    """state_part: each part's layout (cell, first, stride, node_pos) against
    its flat_of, the values against the twin's state(c) (per-cell accessor),
    then v += 0.5 sin(Flat index) written in place through the parts and the
    same change on the twin through write_var: the same traces after 300
    steps. to_host / write move a part's array (numpy or DLPack) to numpy and
    back; done(sim) is state_done with the stream used; twin_write(twin, x)
    the twin's write_var of v."""
    n = sim.compartments
    want = {"v": np.concatenate([twin.state(c)["v"] for c in range(3)])}
    seen = np.zeros(n, dtype=np.int64)
    for k in range(sim.state_parts):
        p = sim.state_part(k)
        flat = to_host(p["flat_of"])
        for j, c in enumerate(p["cell"]):
            o, cnt = sim.cell_offset(int(c)), sim.cell_offset(int(c) + 1) - sim.cell_offset(int(c))
            i = np.arange(cnt) if p["node_pos"] is None else p["node_pos"][:cnt]
            np.testing.assert_array_equal(flat[p["first"][j] + p["stride"] * i], o + np.arange(cnt))
        seen[flat] += 1
        assert set(p) >= {"v", "flat_of"} and "m" not in p
        np.testing.assert_array_equal(to_host(p["v"]), want["v"][flat])
        write(p["v"], to_host(p["v"]) + 0.5 * np.sin(flat))
    assert (seen == 1).all()
    done(sim)
    twin_write(twin, np.ascontiguousarray(want["v"] + 0.5 * np.sin(np.arange(n))))
    for s in (sim, twin):
        s.advance(300)
    np.testing.assert_array_equal(sim.traces, twin.traces)


def test_state_parts_cpu(ca1):
    cell = ca1.discretize()
    sim, twin = coupled_pair(cell, "cpu")

    def write(arr, x):
        arr[:] = x  # the loop's own memory

    check_parts(sim, twin, np.asarray, write, lambda s: s.state_done(), lambda t, x: t.write_var("v", x))
    with pytest.raises(ns.InvalidArgumentError, match="part"):
        sim.state_part(sim.state_parts)
    with pytest.raises(ns.InvalidArgumentError, match="stream"):
        sim.state_done(stream=1)


def test_state_field_cpu(ca1):
    """state_field of a model simulation (built-in hh): m_hh at the part
    positions against model_var of the compartment each names; a write
    through it is seen by model_var."""
    cell = ca1.discretize()
    model = ns.Model()
    model.insert("all", "hh")
    sim = ns.Simulation([cell], 3, backend="cpu", model=model)
    sim.advance(40)
    n = sim.compartments
    ref = np.concatenate([sim.model_var(c, "m_hh") for c in range(3)])
    held = np.zeros(n, dtype=np.int64)
    for k in range(sim.state_parts):
        p, f = sim.state_part(k), sim.state_field(k, "m_hh")
        assert "m" not in p and f["device"] == -1
        flat = p["flat_of"][f["pos"]]
        np.testing.assert_array_equal(f["data"], ref[flat])
        held[flat] += 1
        f["data"][:] = 0.125
    assert ((held == 1) == ~np.isnan(ref)).all()
    got = np.concatenate([sim.model_var(c, "m_hh") for c in range(3)])
    assert (got[~np.isnan(ref)] == 0.125).all()
    with pytest.raises(ns.InvalidArgumentError, match="bogus"):
        sim.state_field(0, "bogus_hh")


def test_param_file(tmp_path):
    f = tmp_path / "p.par"
    f.write_text("dt = 0.01\nall.cm = 2\n")
    p = ns.SimParams()
    p.read(str(f))
    assert p.to_dict()["dt"] == 0.01 and all(p.to_dict()[r]["cm"] == 2 for r in ("soma", "axon", "other"))
    f.write_text("dt = 0.01\nbogus = 1\n")
    with pytest.raises(ns.InvalidArgumentError, match=r"p.par:2:.*bogus"):
        ns.SimParams().read(str(f))


def test_bad_simulation_input(ca1):
    cell = ca1.discretize()
    p = ns.SimParams()
    with pytest.raises(ns.InvalidArgumentError, match="dt"):
        p.set("dt", -1.0)
    with pytest.raises(ns.InvalidArgumentError, match="soma.nope"):
        p.set("soma.nope", 1.0)
    with pytest.raises(ns.InvalidArgumentError):
        ns.make_params({"celsius": float("nan")})
    sim = ns.Simulation([cell], 1)
    with pytest.raises(ns.InvalidArgumentError):
        sim.add_iclamp(0, cell.size, 1, 1, 1)
    with pytest.raises(ns.InvalidArgumentError):
        sim.add_recording(1, 0)
    with pytest.raises(ns.InvalidArgumentError, match="cell 5 out of range"):
        sim.spikes(5)
    with pytest.raises(ns.InvalidArgumentError, match="Cell objects"):
        ns.Simulation([ns.Tree.paper("small-low")], 1)
    with pytest.raises((ns.UnsupportedError, ns.NoDeviceError)):
        if ns.cuda_device_count() > 0:
            raise ns.UnsupportedError("skip")
        ns.Simulation([cell], 1, backend="cuda")


def test_not_finite_stops_the_run(ca1):
    cell = ca1.discretize()
    sim = ns.Simulation([cell], 1)
    for _ in range(2):  # two clamps of 1e308 nA: their sum overflows to inf
        sim.add_iclamp(0, 0, 0, 1, 1e308)
    with pytest.raises(ns.NotFiniteError, match=r"cell 0, compartment 0 .* at t = 0.025 ms"):
        sim.run(5.0)


def test_run_with_progress(ca1):
    cell = ca1.discretize()
    a = ns.Simulation([cell], 1)
    b = ns.Simulation([cell], 1)
    for s in (a, b):
        s.add_iclamp(0, cell.locate(0, 0.5), 1, 20, 3.0)
        s.add_recording(0, cell.locate(0, 0.5))
    times = []
    a.run(25.0, progress=lambda t, k: times.append((t, k)), every_ms=10)
    b.run(25.0)
    assert [k for _, k in times] == [400, 800, 1000]
    np.testing.assert_array_equal(a.traces, b.traces)  # chunks change nothing
    c = ns.Simulation([cell], 1)
    c.run(25.0, progress=lambda t, k: k >= 400, every_ms=10)
    assert c.step_count == 400
