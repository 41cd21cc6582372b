"""Extracellular potentials from Python (docs/extracellular.md): LFPy 2.3's potentials for its own
segments and currents (tests/data/lfp/dg_granule_lfpy.txt, validation/lfp_reference.py), a run's
potentials as the coefficients times the membrane currents, current conservation, the CSD."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH, ROOT, TEST_DATA

REF = os.path.join(TEST_DATA, "lfp", "dg_granule_lfpy.txt")


def read_ref():
    lines = [l for l in open(REF) if not l.startswith("#")]
    r, k = {}, 0
    while k < len(lines):
        w = lines[k].split()
        if w[0] == "segments":
            n = int(w[1])
            rows = [l.split() for l in lines[k + 1:k + 1 + n]]
            r["names"] = [x[0] for x in rows]
            g = np.array([[float(v) for v in x[1:]] for x in rows])
            r["start"], r["end"], r["diam"] = g[:, 0:3].copy(), g[:, 3:6].copy(), g[:, 6].copy()
            k += n + 1
        elif w[0] == "steps":
            r["steps"] = np.array([int(v) for v in lines[k + 1].split()])
            k += 2
        elif w[0] == "stimulus":
            r["stim"] = np.array([float(v) for v in lines[k + 1].split()])
            k += 2
        elif w[0] == "imem":
            n = len(r["names"])
            r["imem"] = np.array([[float(v) for v in l.split()] for l in lines[k + 1:k + 1 + n]])
            k += n + 1
        elif w[0] == "electrodes":
            E = int(w[1])
            rows = [[float(v) for v in l.split()] for l in lines[k + 1:k + 1 + E]]
            r["contacts"] = np.array([x + [0, 0, 0, 0, 1] if len(x) == 3 else x for x in rows])
            k += E + 1
        elif w[0] == "foursphere":
            n = int(w[1])
            r["head"] = [float(v) for v in lines[k + 1].split()]
            r["four"] = np.array([[float(v) for v in l.split()] for l in lines[k + 2:k + 2 + n]])
            k += n + 2
        elif w[0] == "potential":
            E = len(r["contacts"])
            r[w[1]] = np.array([[float(v) for v in l.split()] for l in lines[k + 1:k + 1 + E]])
            k += E + 1
        else:
            k += 1
    return r


@pytest.mark.parametrize("method", ["linesource", "root_as_point", "pointsource"])
def test_lfpy_forward(method):
    r = read_ref()
    M = ns.lfp_matrix(r["start"], r["end"], r["diam"], r["contacts"], method=method, sigma=0.3, root=0)
    np.testing.assert_allclose(M @ r["imem"], r[method], rtol=1e-6, atol=0)


def test_four_sphere():
    r = read_ref()
    h = r["head"]
    M = ns.four_sphere(r["four"][:, :3].copy(), h[8:11], radii=h[0:4], sigmas=h[4:8])
    np.testing.assert_allclose(M, r["four"][:, 3:], rtol=1e-6, atol=1e-6 * np.abs(r["four"][:, 3:]).max())


def test_run_and_conservation():
    cell = ns.read_swc(os.path.join(MORPH, "dg_granule_1220882a.swc")).discretize()
    sim = ns.Simulation([cell], 2, backend="cpu")
    soma = cell.locate("soma")
    sim.add_iclamp(0, soma, 1.0, 8.0, 2.838)
    probe = ns.read_probe(os.path.join(ROOT, "data", "probes", "neuropixels_like.txt"))
    assert probe.shape == (384, 8)
    place = np.array([[0, 30, 100, 1.5707963267948966, 0, 0], [20, -30, 300, 1.5707963267948966, 0, 1.0]])
    lfp = ns.Lfp(sim, [cell], probe[:40], every=8, placement=place, per_cell_dipoles=True)
    sim.advance(320)  # to t = 8 ms, the clamp on
    phi = lfp.potentials
    assert phi.shape == (40, 40)
    np.testing.assert_allclose(lfp.times, 0.025 * 8 * np.arange(1, 41), rtol=1e-12)
    i = lfp.membrane_currents
    # the last sample: the coefficients times the currents; the clamp's current leaves through the membrane
    np.testing.assert_allclose(phi[-1], lfp.coefficients @ i, rtol=1e-12, atol=1e-15)
    n = cell.info["compartments"]
    assert abs(i[:n].sum() - 2.838) < 1e-9 and abs(i[n:].sum()) < 1e-9
    # the dipole: the currents times the placed segments' midpoints, per cell and summed
    assert lfp.cell_dipoles.shape == (40, 2, 3)
    np.testing.assert_allclose(lfp.cell_dipoles.sum(axis=1), lfp.dipole, rtol=1e-12, atol=1e-12)
    assert np.abs(phi).max() > 0


def test_csd_and_errors(tmp_path):
    z = 20.0 * np.arange(6)
    phi = np.outer([1.0, 2.0], 1e-4 * z ** 2)
    csd = ns.lfp_csd(phi, [0, 1, 2, 3, 4, 5], 20.0, 0.3)
    np.testing.assert_allclose(csd[:, 1:-1], np.outer([1.0, 2.0], -0.3 * 2e-4 * 1e6 * np.ones(4)), rtol=1e-9)
    bad = tmp_path / "p.txt"
    bad.write_text("0 0 0\n0 0\n")
    with pytest.raises(ns.ParseError, match=r"p\.txt:2:"):
        ns.read_probe(bad)
    with pytest.raises(ns.InvalidArgumentError, match="linesource"):
        ns.lfp_matrix(np.zeros((1, 3)), np.ones((1, 3)), np.ones(1), np.zeros((1, 3)), method="lines")


def test_populations_and_line():
    cell = ns.read_swc(os.path.join(MORPH, "dg_granule_1220882a.swc")).discretize()
    sim = ns.Simulation([cell], 3, backend="cpu")
    soma = cell.locate("soma")
    for c in range(3):
        sim.add_iclamp(c, soma, 0.2 * c, 8.0, 1.0)
    shank = ns.probe_line([0, 0, -200], [0, 0, 400], 7)
    np.testing.assert_allclose(shank[:, 2], -200 + 100 * np.arange(7), rtol=0, atol=1e-12)
    place = np.array([[0, 30, 0, 0, 0, 0], [0, -30, 100, 0, 0, 1.0], [30, 0, 200, 0, 0, 2.0]])
    lfp = ns.Lfp(sim, [cell], shank, every=4, placement=place, population=[1, 0, 1])
    sim.advance(80)
    pp = lfp.population_potentials
    assert pp.shape == (20, 2, 7)
    np.testing.assert_allclose(pp.sum(axis=1), lfp.potentials, rtol=1e-12, atol=1e-15)
    # population 0 is cell 1: its coefficients times its currents at the last sample
    n = cell.info["compartments"]
    M, i = lfp.coefficients, lfp.membrane_currents
    np.testing.assert_allclose(pp[-1, 0], M[:, n:2 * n] @ i[n:2 * n], rtol=1e-12, atol=1e-15)
    assert ns.Lfp(ns.Simulation([cell], 1, backend="cpu"), [cell], shank).population_potentials is None


def test_device_results_need_cuda():
    cell = ns.read_swc(os.path.join(MORPH, "dg_granule_1220882a.swc")).discretize()
    sim = ns.Simulation([cell], 1, backend="cpu")
    with pytest.raises(ns.UnsupportedError, match="device results need a CUDA simulation"):
        ns.Lfp(sim, [cell], ns.probe_line([0, 0, -200], [0, 0, 400], 4), device_results=True)
    lfp = ns.Lfp(sim, [cell], ns.probe_line([0, 0, -200], [0, 0, 400], 4))
    with pytest.raises(ns.UnsupportedError, match="need a CUDA simulation"):
        lfp.device_results()


def three_cells(cell, shank, place, storages, **kw):
    """Three placed cells, a clamp on each soma, sampled every 4 steps with each storage."""
    out = []
    for storage in storages:
        sim = ns.Simulation([cell], 3, backend="cpu", threads=1)
        for c in range(3):
            sim.add_iclamp(c, cell.locate("soma"), 0.2 * c, 8.0, 1.0)
        lfp = ns.Lfp(sim, [cell], shank, every=4, placement=place, storage=storage, **kw)
        sim.advance(200)
        out.append(lfp)
    return out


def test_f32_storage_bound():
    # the coefficients rounded to float: within each sample's bound of the exact potentials
    cell = ns.read_swc(os.path.join(MORPH, "dg_granule_1220882a.swc")).discretize()
    shank = ns.probe_line([0, 0, -200], [0, 0, 400], 7)
    place = np.array([[0, 30, 0, 0, 0, 0], [0, -30, 100, 0, 0, 1.0], [30, 0, 200, 0, 0, 2.0]])
    exact, f32 = three_cells(cell, shank, place, ("dense", "f32"))
    assert f32.storage == "f32" and exact.error_bound == 0.0 and 0.0 < f32.error_bound <= 1e-6
    big = np.abs(exact.potentials).max(axis=1)
    assert (np.abs(f32.potentials - exact.potentials).max(axis=1) <= f32.error_bound * big).all()
    assert np.abs(f32.potentials - exact.potentials).max() > 0


def test_lowrank_storage_against_svd():
    # each cell's block as a truncated pivoted QR: its rank against numpy's SVD of the dense block (no
    # rank meets the Frobenius tolerance below the SVD's), the potentials within each sample's bound
    cell = ns.read_swc(os.path.join(MORPH, "dg_granule_1220882a.swc")).discretize()
    shank = ns.probe_line([0, 0, -200], [0, 0, 800], 80)
    place = np.array([[0, 30, 0, 0, 0, 0], [0, -30, 300, 0, 0, 1.0], [400, 0, 600, 0, 0, 2.0]])
    exact, lr = three_cells(cell, shank, place, ("dense", "lowrank"), rank_tolerance=1e-8)
    assert lr.storage == "lowrank" and lr.coefficients is None and exact.ranks is None
    n = len(cell)
    for c in range(3):
        s = np.linalg.svd(exact.coefficients[:, c * n:(c + 1) * n], compute_uv=False)
        tail = np.sqrt(np.cumsum((s ** 2)[::-1])[::-1])  # tail[r]: the best residual of rank r
        least = int(np.sum(tail > 1e-8 * tail[0]))
        assert least <= lr.ranks[c] <= least + 3, (c, least, lr.ranks)
    assert lr.ranks[2] < lr.ranks[0]  # the cell 400 um from the shank
    big = np.abs(exact.potentials).max(axis=1)
    diff = np.abs(lr.potentials - exact.potentials).max(axis=1)
    assert 0.0 < lr.error_bound <= 1e-6 and (diff <= lr.error_bound * big).all() and diff.max() > 0
    with pytest.raises(ns.Error, match="rank tolerance"):
        ns.Lfp(ns.Simulation([cell], 1, backend="cpu"), [cell], shank, storage="lowrank", rank_tolerance=2.0)
