"""Morphologies, discretisation, cell matrices and trees against independent
references: the SWC text parsed with numpy, the matrix formulas of morph.h
rebuilt from the cell's areas and conductances, and the command's output."""
import os
import subprocess

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH, TEST_DATA


def load_swc(path):
    rows = [l.split() for l in open(path) if l.strip() and not l.lstrip().startswith("#")]
    return np.array([[float(x) for x in r] for r in rows])


def test_points_match_the_file(ca1):
    raw = load_swc(os.path.join(MORPH, "ca1_h10.swc"))
    p = ca1.points
    assert ca1.info["points"] == ca1.info["points_read"] == len(raw) == len(p["id"])
    by_id = {int(r[0]): r for r in raw}
    for k, i in enumerate(p["id"]):
        r = by_id[int(i)]
        assert p["type"][k] == int(r[1])
        np.testing.assert_array_equal(p["xyz"][k], r[2:5])
        assert p["r"][k] == r[5]
        par = p["parent"][k]
        assert (par == -1) == (r[6] == -1)
        if par >= 0:
            assert par < k and p["id"][par] == int(r[6])
        assert raw[p["line"][k] - 1 - _comment_lines_before(p["line"][k]), 0] == i


def _comment_lines_before(line, path=os.path.join(MORPH, "ca1_h10.swc")):
    lines = open(path).read().splitlines()[:line - 1]
    return sum(1 for l in lines if not l.strip() or l.lstrip().startswith("#"))


def test_root_policy():
    path = os.path.join(TEST_DATA, "swc_ok", "three_trees.swc")
    m = ns.read_swc(path)
    i = m.info
    raw = load_swc(path)
    assert i["roots"] == (raw[:, 6] == -1).sum() == 3 and i["roots_kept"] == 1
    assert i["points"] + i["points_dropped"] == len(raw)
    # the kept tree holds the soma and is the largest of those with one (C: 4 points)
    assert i["points"] == 4 and set(m.points["id"]) == {20, 21, 22, 23}
    with pytest.raises(ns.TopologyError, match="three_trees.swc"):
        ns.read_swc(path, roots="reject")


def test_radius_policy():
    path = os.path.join(TEST_DATA, "swc_ok", "zero_radius.swc")
    raw = load_swc(path)
    zero = int((raw[:, 5] <= 0).sum())
    m = ns.read_swc(path)
    assert m.info["radii_repaired"] == zero > 0 and (m.points["r"] > 0).all()
    with pytest.raises(ns.ParseError, match="zero_radius.swc:"):
        ns.read_swc(path, radii="reject")
    m = ns.read_swc(path, radii="default", default_radius=0.25)
    by_id = dict(zip(m.points["id"], m.points["r"]))
    for r in raw:
        assert by_id[int(r[0])] == (0.25 if r[5] <= 0 else r[5])


def test_scale(ca1):
    m = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc"), scale=1e-3)
    np.testing.assert_allclose(m.points["xyz"], ca1.points["xyz"] * 1e-3, rtol=1e-15)
    np.testing.assert_allclose(m.points["r"], ca1.points["r"] * 1e-3, rtol=1e-15)


def test_parse_from_string():
    text = open(os.path.join(TEST_DATA, "swc_ok", "soma_three.swc")).read()
    m = ns.Morphology.parse(text, name="mine.swc")
    assert m.name == "mine.swc" and m.info["soma"] == "three-point"
    with pytest.raises(ns.ParseError, match="^mine.swc:2:"):
        ns.Morphology.parse("1 1 0 0 0 1 -1\n2 3 x 0 0 1 1\n", name="mine.swc")


def test_discretisation_against_the_command(cli):
    for f in ("ca1_h10.swc", "purk_dbbs.swc", "l5pc_bbp_axon.swc"):
        path = os.path.join(MORPH, f)
        out = subprocess.run([cli, "morph", path], capture_output=True, text=True, check=True).stdout.splitlines()
        head = out[0].split()
        row = dict(zip(head, next(l for l in out if l.startswith(f)).split()))
        m = ns.read_swc(path)
        c = m.discretize()
        assert int(row["points"]) == m.info["points"] and int(row["roots"]) == m.info["roots"]
        assert int(row["sections"]) == c.info["sections"]
        assert int(row["compartments"]) == c.info["compartments"] == len(c.parent)
        assert int(row["depth"]) == c.info["branch_depth"]
        assert abs(float(row["area_um2"]) - c.info["total_area"]) <= 0.05
        assert abs(float(row["length_um"]) - c.info["total_length"]) <= 0.05


def test_discretisation_options(ca1):
    c = ca1.discretize()
    secs = [c.get_section(k) for k in range(c.info["sections"])]
    assert sum(s["nseg"] for s in secs) == int((c.area > 0).sum())
    # every section's nseg is odd under d_lambda; a fixed length of 1e6 um gives nseg = 1
    assert all(s["nseg"] % 2 == 1 for s in secs)
    one = ca1.discretize(rule="fixed_length", max_length=1e6)
    assert all(one.get_section(k)["nseg"] == 1 for k in range(one.info["sections"]))
    # NEURON's nodes: 1 + sum(nseg + 1)
    full = ca1.discretize(junctions="neuron")
    assert full.info["compartments"] == 1 + sum(s["nseg"] + 1 for s in secs)
    # a larger Ra scales every axial conductance down by the same factor
    hi = ca1.discretize(Ra=2 * 35.4, rule="fixed_length", max_length=20)
    lo = ca1.discretize(rule="fixed_length", max_length=20)
    np.testing.assert_allclose(hi.axial_conductance, lo.axial_conductance / 2, rtol=1e-12)
    with pytest.raises(ns.Error):
        c.get_section(c.info["sections"])
    assert c.locate(0, 0.5) == c.get_section(0)["first_node"] + c.get_section(0)["nseg"] // 2


def test_cell_matrix_formulas(ca1):
    c = ca1.discretize()
    par, g, A = c.parent, c.axial_conductance, c.area
    An = np.where(A > 0, A, 100.0)  # NEURON's nominal area of zero-area nodes
    cm, dt = 1.5, 0.01
    a, b, d = c.matrix(cm=cm, dt=dt)
    n = len(par)
    assert a[0] == b[0] == 0
    np.testing.assert_allclose(a[1:], -1e2 * g[1:] / An[par[1:]], rtol=1e-13)
    np.testing.assert_allclose(b[1:], -1e2 * g[1:] / An[1:], rtol=1e-13)
    child_a = np.zeros(n)
    np.add.at(child_a, par[1:], a[1:])
    expect = np.where(A > 0, 1e-3 * cm / dt, 0.0) - b - child_a
    np.testing.assert_allclose(d, expect, rtol=1e-12)
    a, b, d = c.matrix(cm=cm, dt=dt, form="symmetric")
    np.testing.assert_allclose(a[1:], -g[1:], rtol=1e-13)
    np.testing.assert_array_equal(a, b)
    child_g = np.zeros(n)
    np.add.at(child_g, par[1:], g[1:])
    np.testing.assert_allclose(d, 1e-5 * cm / dt * A + g + child_g, rtol=1e-12)


def test_tree_roundtrip_and_generators():
    t = ns.Tree.paper("medium-high", seed=3)
    s = t.stats
    assert s["size"] == len(t) == 319 and s["branches"] == 157
    par = t.parent
    assert par[0] == -1 and (par[1:] < np.arange(1, len(par))).all()
    t2 = ns.Tree(par)
    np.testing.assert_array_equal(t2.parent, par)
    children = np.bincount(par[1:], minlength=len(par))
    assert s["leaves"] == int((children == 0).sum()) and s["branch_points"] == int((children >= 2).sum())
    assert ns.Tree.generate(76, 29, seed=5).stats["branches"] == 29
    b = ns.Tree.binary(512, 3)
    assert len(b) == 512 and b.stats["branch_depth"] == 3
    assert len(ns.Tree.random("medium", seed=2)) > 1
    with pytest.raises(ns.SizeError, match="2 branches is impossible"):
        ns.Tree.generate(10, 2)


def test_from_points(ca1):
    p = ca1.points
    m = ns.Morphology.from_points("copy", p["xyz"], p["r"], p["type"], p["parent"])
    assert m.name == "copy" and m.info["points"] == len(p["r"])
    np.testing.assert_array_equal(m.points["id"], np.arange(1, len(p["r"]) + 1))
    a, b = m.discretize(), ca1.discretize()
    assert a.info == b.info
    np.testing.assert_array_equal(a.area, b.area)
    bad = p["parent"].copy()
    bad[5] = 7  # parent after child
    with pytest.raises(ns.Error):
        ns.Morphology.from_points("bad", p["xyz"], p["r"], p["type"], bad)
    with pytest.raises(ns.SizeError):
        ns.Morphology.from_points("bad", p["xyz"][:-1], p["r"], p["type"], p["parent"])
