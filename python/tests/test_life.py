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


def test_fit_group(model):
    """The group penalty (docs/life.md, "Group sparsity"): lambda_g = G x the median over groups of
    ||[M^T y]_+ restricted to g|| / sqrt|g|; at the result the KKT conditions of
    0.5 ||Mw - y||^2 + 0.5 mu ||w||^2 + lambda_g sum_g sqrt|g| ||w_g||, w >= 0, hold."""
    e = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive", threads=1)
    nf = model.n_fibers
    groups = (np.arange(nf) % 4).astype(np.int32)
    groups[::9] = -1  # alone
    w, r = e.fit(max_iterations=5000, tol_gradient=0, tol_objective=0, rtol_gradient=1e-12, rtol_objective=0,
                 ridge=0.1, group=1.0, groups=groups)
    y = model.signal.ravel()
    gid = groups.copy()
    gid[groups < 0] = 4 + np.arange((groups < 0).sum())
    size = np.bincount(gid)
    c = np.sqrt(size)
    b = e.mty(y)
    crit = np.sqrt(np.bincount(gid, weights=np.maximum(b, 0) ** 2)) / c
    lam = np.median(crit)
    assert abs(r["group_lambda"] - lam) <= 1e-10 * lam and r["n_groups"] == len(size)
    mu = r["ridge_mu"]
    norms = np.sqrt(np.bincount(gid, weights=w ** 2))
    f = 0.5 * ((e.mw(w) - y) ** 2).sum() + 0.5 * mu * (w ** 2).sum() + lam * (c * norms).sum()
    assert abs(r["objective"] - f) <= 1e-9 * f
    g = e.mty(e.mw(w) - y) + mu * w
    scale = np.abs(b).max()
    zero = norms[gid] == 0
    assert zero.any() and (~zero).any() and r["groups_nonzero"] == (norms > 0).sum()
    neg = np.sqrt(np.bincount(gid, weights=np.minimum(g, 0) ** 2))
    assert (neg[norms == 0] <= lam * c[norms == 0] + 1e-6 * scale).all()
    pos = (~zero) & (w > 0)
    assert np.abs(g[pos] + lam * c[gid[pos]] * w[pos] / norms[gid[pos]]).max() <= 1e-6 * scale
    assert g[(~zero) & (w == 0)].min(initial=0) >= -1e-6 * scale
    with pytest.raises(ns.InvalidArgumentError, match="groups"):
        e.fit(group=1.0)
    with pytest.raises(ns.Error):
        e.fit(group=1.0, groups=groups[:-1])


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


def same_model(a, b):
    for k in ("atom", "voxel", "fiber", "value"):
        np.testing.assert_array_equal(a.phi[k], b.phi[k])
    for name in ("signal", "dictionary", "voxel_ijk", "streamline"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_build_arrays_from_nibabel_equals_the_command(cli_run):
    """What a DIPY/nibabel user holds in memory (the image object, the gradient
    arrays, the tractogram's streamlines in RASMM) gives the model of `neurosolve
    life build` on the files, array for array, and the same weights as `life fit`."""
    nib = pytest.importorskip("nibabel")
    m_dir, w_path, _ = cli_run
    img = nib.load(DWI)
    trk = nib.streamlines.load(TRK)
    model = ns.LifeModel.build_arrays(img, None, np.loadtxt(BVAL), np.loadtxt(BVEC), trk.streamlines)
    same_model(model, ns.LifeModel.load(m_dir))
    w, _ = ns.LifeEngine(model, backend="cpu", mw="naive", mty="naive", threads=1).fit()
    np.testing.assert_array_equal(w, np.load(w_path))
    assert model.n_fibers == 60
    # the pruned streamlines, in memory: the input streamlines of the fibers kept
    kept = [trk.streamlines[int(i)] for i in model.streamline[w > 0]]
    assert len(kept) == int((w > 0).sum()) and all(len(s) >= 2 for s in kept)
    with pytest.raises(ns.InvalidArgumentError, match="no source tractogram"):
        model.write_pruned("never.trk", w)
    assert not os.path.exists("never.trk")


def test_build_arrays_layouts_and_spaces(model):
    """C-order float64 data, Fortran-order uint8 data (nibabel's), a list of arrays,
    and voxel-space streamlines with streamlines_affine: one model."""
    nib = pytest.importorskip("nibabel")
    img = nib.load(DWI)
    data = np.asanyarray(img.dataobj)
    assert data.dtype == np.uint8 and data.flags.f_contiguous
    streams = list(nib.streamlines.load(TRK).streamlines)
    bvals, bvecs = np.loadtxt(BVAL), np.loadtxt(BVEC)
    same_model(ns.LifeModel.build_arrays(np.ascontiguousarray(data, dtype=np.float64), img.affine, bvals, bvecs.T,
                                         streams), model)
    inv = np.linalg.inv(img.affine)
    vox = [s @ inv[:3, :3].T + inv[:3, 3] for s in streams]  # DIPY's voxel space
    m2 = ns.LifeModel.build_arrays(data, img.affine, bvals, bvecs, vox, streamlines_affine=img.affine)
    # the round trip through the inverse affine moves points by ~1e-15 mm: the same model unless a
    # node sits exactly on a voxel boundary, which none of the 60 streamlines do
    same_model(m2, model)


def test_build_arrays_bad_input(model):
    nib = pytest.importorskip("nibabel")
    img = nib.load(DWI)
    data = np.asanyarray(img.dataobj)
    bvals, bvecs = np.loadtxt(BVAL), np.loadtxt(BVEC)
    streams = list(nib.streamlines.load(TRK).streamlines)
    build = ns.LifeModel.build_arrays
    with pytest.raises(ns.InvalidArgumentError, match="dwi has dtype complex64"):
        build(data.astype(np.complex64), img.affine, bvals, bvecs, streams)
    with pytest.raises(ns.SizeError, match="dwi has 3 dimensions, expected 4"):
        build(data[..., 0], img.affine, bvals, bvecs, streams)
    with pytest.raises(ns.SizeError, match="bvals has 25 entries but dwi has 26 volumes"):
        build(data, img.affine, bvals[:-1], bvecs[:, :-1], streams)
    with pytest.raises(ns.SizeError, match="affine"):
        build(data, img.affine[:3], bvals, bvecs, streams)
    with pytest.raises(ns.InvalidArgumentError, match="affine is required"):
        build(data, None, bvals, bvecs, streams)
    with pytest.raises(ns.InvalidArgumentError, match="streamline 2 has shape"):
        build(img, None, bvals, bvecs, streams[:2] + [np.zeros((4, 2))])
    bad = [s.copy() for s in streams]
    bad[7][3, 1] = np.nan
    with pytest.raises(ns.NotFiniteError, match="tracks: streamline 7, point 3 is not finite"):
        build(img, None, bvals, bvecs, bad)
    bad = [s.copy() for s in streams]
    bad[5] = bad[5] + 500.0
    with pytest.raises(ns.ParseError, match=r"tracks: streamline 5, node 0 .* outside the 10 x 8 x 2 image of dwi"):
        build(img, None, bvals, bvecs, bad)
    skipped = build(img, None, bvals, bvecs, bad, bad="skip")
    assert skipped.n_fibers == 59 and 5 not in skipped.streamline
    with pytest.raises(ns.EmptyError, match="no streamline"):
        build(img, None, bvals, bvecs, [])
    with pytest.raises(ns.InvalidArgumentError, match="bvals: entry 0 is -1"):
        build(img, None, np.r_[-1.0, bvals[1:]], bvecs, streams)
    with pytest.raises(ns.InvalidArgumentError, match="dwi is not an array"):
        build(data.tolist(), img.affine, bvals, bvecs, streams)


def test_build_arrays_from_a_gradient_table(model):
    """A DIPY GradientTable (anything with .bvals and .bvecs (n, 3)) as bvals."""
    nib = pytest.importorskip("nibabel")

    class GradientTable:  # the two attributes LifeModel.build_arrays reads from dipy.core.gradients
        bvals = np.loadtxt(BVAL)
        bvecs = np.loadtxt(BVEC).T

    m = ns.LifeModel.build_arrays(nib.load(DWI), None, GradientTable(), None,
                                  nib.streamlines.load(TRK).streamlines)
    same_model(m, model)


def test_fit_path_equals_the_command(cli_run, cli, tmp_path):
    """LifeEngine.fit_path is `life fit --lambda auto`: the same chosen weights, value and curve."""
    m, _, _ = cli_run
    model = ns.LifeModel.load(m)
    out = str(tmp_path / "p.npy")
    subprocess.run([cli, "life", "fit", m, "--lambda", "auto", "--penalty", "ridge", "--threads", "1",
                    "--out", out, "--quiet"], check=True, capture_output=True, text=True)
    e = ns.LifeEngine(model, backend="cpu", threads=1)
    w, d = e.fit_path(penalty="ridge")
    np.testing.assert_array_equal(w, np.load(out))
    import json
    side = json.load(open(str(tmp_path / "p.json")))
    assert side["penalty"] == "ridge" and side["chosen_value"] == d["chosen_value"] and side["folds"] == 5
    assert side["rule"] == d["rule"] == "1se-gain" and side["cv_zero"] == d["cv_zero"]
    np.testing.assert_array_equal([p["cv_rmse"] for p in side["path"]], d["cv_rmse"])
    assert d["values"][0] == 10.0 and (np.diff(d["values"]) < 0).all()
    with pytest.raises(ns.InvalidArgumentError):
        e.fit_path(penalty="group")  # no groups
