"""LiFE from Python on the bundled DIPY case (data/life) against the command:
the same model (every array), the same SBBNNLS weights and the same per-voxel
RMSE as `neurosolve life build / fit / report`, and M w / M^T y against a
dense matrix assembled in numpy from the model's own arrays."""
import os
import subprocess

import numpy as np
import pytest

import neurosolve as ns
from conftest import LIFE

DWI, BVAL, BVEC, TRK = (os.path.join(LIFE, f) for f in
                        ("small_25.nii.gz", "small_25.bval", "small_25.bvec", "EuDX_small_25.trk"))


@pytest.fixture(scope="module")
def model():
    return ns.LifeModel.build(DWI, BVAL, BVEC, TRK)


@pytest.fixture(scope="module")
def cli_run(cli, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("life")
    m = str(tmp / "model")
    w = str(tmp / "w.npy")
    csv = str(tmp / "rmse.csv")
    run = lambda *a: subprocess.run([cli, *a], check=True, capture_output=True, text=True)
    run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", TRK, "--out", m, "--quiet")
    run("life", "fit", m, "--out", w, "--backend", "cpu", "--mw", "naive", "--mty", "naive", "--threads", "1",
        "--quiet")
    run("life", "report", m, w, "--csv", csv)
    return m, w, csv


def test_build_equals_the_command(model, cli_run):
    m_dir, _, _ = cli_run
    ld = lambda name: np.load(os.path.join(m_dir, name))
    assert model.n_fibers == 60 and model.n_theta == len(ld("signal.npy"))
    phi = model.phi
    for k in ("atom", "voxel", "fiber", "value"):
        np.testing.assert_array_equal(phi[k], ld(f"phi_{k}.npy"))
    np.testing.assert_array_equal(model.signal, ld("signal.npy").T)        # (n_voxels, n_theta)
    np.testing.assert_array_equal(model.dictionary, ld("dictionary.npy").T)
    np.testing.assert_array_equal(model.voxel_ijk, ld("voxel_ijk.npy"))
    np.testing.assert_array_equal(model.streamline, ld("streamlines.npy"))
    loaded = ns.LifeModel.load(m_dir)
    np.testing.assert_array_equal(loaded.phi["value"], phi["value"])


def test_products_against_dense(model):
    phi, D, Y = model.phi, model.dictionary, model.signal
    nt, nv, nf = model.n_theta, model.n_voxels, model.n_fibers
    M = np.zeros((nv * nt, nf))
    for a, v, f, x in zip(phi["atom"], phi["voxel"], phi["fiber"], phi["value"]):
        M[v * nt:(v + 1) * nt, f] += D[a] * x
    rng = np.random.default_rng(1)
    w = rng.uniform(0, 1, nf)
    y = rng.uniform(-1, 1, nv * nt)
    for variant in ("naive", "naive-atom", "coeff-voxel", "voxel-voxel", "auto"):
        e = ns.LifeEngine(model, backend="cpu", mw=variant, mty=variant)
        np.testing.assert_allclose(e.mw(w), M @ w, rtol=1e-11, atol=1e-9)
        np.testing.assert_allclose(e.mty(y), M.T @ y, rtol=1e-11, atol=1e-9)
    e = ns.LifeEngine(model, backend="cpu")
    with pytest.raises(ns.SizeError, match="w has 59 elements, expected 60"):
        e.mw(w[:-1])
    with pytest.raises(ns.InvalidArgumentError):
        ns.LifeEngine(model, mw="bogus")


def test_fit_and_rmse_equal_the_command(model, cli_run):
    _, w_path, csv = cli_run
    e = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive", threads=1)
    w, res = e.fit()
    w_cli = np.load(w_path)
    np.testing.assert_array_equal(w, w_cli)
    hist = np.load(w_path.replace(".npy", "_history.npy"))
    np.testing.assert_array_equal(res["history"], hist)
    assert res["updates"] == len(hist) and (w >= 0).all() and res["nonzero"] == int((w > 0).sum())
    before, after = ns.life_rmse(model, w, e)
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    np.testing.assert_allclose(before, rows[:, 5], rtol=1e-7)
    np.testing.assert_allclose(after, rows[:, 6], rtol=1e-7)
    # the objective is 0.5 ||M w - Y||^2
    r = model.signal.ravel() - e.mw(w)
    assert res["objective"] == pytest.approx(0.5 * r @ r, rel=1e-9)


def test_fit_options(model):
    e = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive")
    w3, r3 = e.fit(max_iterations=4, tol_gradient=0, tol_objective=0)
    assert r3["updates"] == 3 and r3["stop"] == "maximum number of iterations"
    assert (np.diff(r3["history"]) < 0).all()
    w, r = e.fit(max_iterations=20, w0=w3, tol_gradient=0, tol_objective=0)
    assert r["history"][0] <= r3["history"][-1] * (1 + 1e-12)
    with pytest.raises(ns.InvalidArgumentError):
        e.fit(max_iterations=0)


def test_fit_ridge(model):
    """The ridge (docs/life.md): mu = R ||M 1||^2 / n_fibers, objective 0.5 ||Mw - y||^2 + 0.5 mu ||w||^2."""
    e = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive", threads=1)
    w0, r0 = e.fit(max_iterations=2000, tol_gradient=0, tol_objective=0, rtol_gradient=0, rtol_objective=0)
    w, r = e.fit(max_iterations=2000, tol_gradient=0, tol_objective=0, rtol_gradient=0, rtol_objective=0, ridge=0.1)
    y = model.signal.ravel()
    mu = 0.1 * (e.mw(np.ones(model.n_fibers)) ** 2).sum() / model.n_fibers
    assert r0["ridge_mu"] == 0 and abs(r["ridge_mu"] - mu) <= 1e-12 * mu
    f = 0.5 * ((e.mw(w) - y) ** 2).sum() + 0.5 * mu * (w ** 2).sum()
    assert abs(r["objective"] - f) <= 1e-9 * f
    # stationarity of the ridge objective (KKT): g = M^T (Mw - y) + mu w, 0 where w > 0, >= 0 at 0
    g = e.mty(e.mw(w) - y) + mu * w
    scale = np.abs(e.mty(y)).max()
    assert np.abs(g[w > 0]).max() <= 1e-6 * scale and g[w == 0].min(initial=0) >= -1e-6 * scale
    assert np.abs(w - w0).max() > 1e-3 * np.abs(w0).max()  # it changes the weights
    with pytest.raises(ns.InvalidArgumentError, match="ridge"):
        e.fit(ridge=-1.0)


def test_bad_life_input(tmp_path):
    with pytest.raises(ns.IOError, match="nope.nii"):
        ns.LifeModel.build(str(tmp_path / "nope.nii"), BVAL, BVEC, TRK)
    with pytest.raises(ns.Error, match=str(tmp_path)):
        ns.LifeModel.load(str(tmp_path))


def test_synthetic_model_recovers_its_weights():
    m = ns.LifeModel.synth(n_theta=32, dictionary_l=20, n_fibers=300, grid=[16, 16, 16], mean_length=10, seed=3)
    wt = m.true_weights
    assert wt.shape == (300,) and (wt >= 0).all() and 0 < (wt > 0).sum() < 300
    e = ns.LifeEngine(m, backend="cpu", mw="coeff-voxel", mty="coeff-atom")
    np.testing.assert_allclose(e.mw(wt), m.signal.ravel(), rtol=1e-10, atol=1e-12)  # Y = M w_true
    w, r = e.fit(max_iterations=300, tol_gradient=0, tol_objective=0, rtol_gradient=0, rtol_objective=0)
    assert r["objective"] <= 1e-12 * 0.5 * (m.signal ** 2).sum()
    with pytest.raises(ns.Error):
        ns.LifeModel.synth(n_fibers=0)
    assert ns.LifeModel.build(DWI, BVAL, BVEC, TRK).true_weights is None


def test_pruned_tractogram_equals_the_command(model, cli_run, cli, tmp_path):
    m_dir, w_path, _ = cli_run
    w = np.load(w_path)
    ours = tmp_path / "ours.trk"
    n = model.write_pruned(str(ours), w)
    assert n == int((w > 0).sum()) and model.n_streamlines == 60 and model.tracks_path == TRK
    theirs = tmp_path / "cli.trk"
    subprocess.run([cli, "life", "report", m_dir, w_path, "--pruned", str(theirs)], check=True, capture_output=True)
    assert ours.read_bytes() == theirs.read_bytes()
    with pytest.raises(ns.InvalidArgumentError, match="no source tractogram"):
        ns.LifeModel.synth(n_theta=8, dictionary_l=5, n_fibers=10, grid=[8, 8, 8], mean_length=4).write_pruned(
            str(tmp_path / "x.trk"), np.ones(10))


def test_model_from_arrays(model):
    phi = model.phi
    m2 = ns.LifeModel.from_arrays(phi["atom"], phi["voxel"], phi["fiber"], phi["value"], model.dictionary,
                                  model.signal)
    assert (m2.n_theta, m2.n_voxels, m2.n_fibers, m2.n_atoms) == (model.n_theta, model.n_voxels, model.n_fibers,
                                                                  model.n_atoms)
    e1 = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive", threads=1)
    e2 = ns.LifeEngine(m2, backend="cpu", mw="naive", mty="naive", threads=1)
    np.testing.assert_array_equal(e1.fit()[0], e2.fit()[0])
    bad = phi["voxel"].copy()
    bad[3] = model.n_voxels + 5
    with pytest.raises(ns.Error, match=r"voxel\[3\]"):
        ns.LifeModel.from_arrays(phi["atom"], bad, phi["fiber"], phi["value"], model.dictionary, model.signal)
    with pytest.raises(ns.SizeError):
        ns.LifeModel.from_arrays(phi["atom"], phi["voxel"][:-1], phi["fiber"], phi["value"], model.dictionary,
                                 model.signal)


def test_fit_progress(model):
    e = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive")
    seen = []
    w, r = e.fit(progress=lambda it, obj, nz: seen.append((it, obj, nz)) or it >= 5)
    assert r["stop"] == "stopped by the caller" and r["updates"] == len(seen) == 5
    assert [s[0] for s in seen] == [1, 2, 3, 4, 5]
    np.testing.assert_array_equal([s[1] for s in seen], r["history"][:len(seen)])

    def boom(*_):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        e.fit(progress=boom)
