#!/usr/bin/env python3
"""neurosolve life build / fit / report on the bundled real case (DIPY's
small_25 image with 60 EuDX streamlines), checked against a model built here
independently with numpy from the raw file bytes: the NIfTI header and data
(gzip + struct), the .trk records, the image affine, numpy's gradient and
rounding, ENCODE's angle grid. Also: the pruned tractogram holds exactly the
streamlines with non-zero weight, byte for byte; a .tck copy of the same
streamlines builds the same model; nibabel (when installed) reads the same
points and writes .tck files we read; bad inputs give one error line naming
the file."""
import gzip
import json
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed")
    sys.exit(77)

exe = sys.argv[1]
data = sys.argv[2]


harness = Harness(exe)
check, run = harness.check, harness.run


DWI = os.path.join(data, "small_25.nii.gz")
BVAL = os.path.join(data, "small_25.bval")
BVEC = os.path.join(data, "small_25.bvec")
TRK = os.path.join(data, "EuDX_small_25.trk")


def read_nifti(path):
    raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    h = raw[:348]
    dim = struct.unpack("<8h", h[40:56])
    dtype = {2: "u1", 4: "<i2", 16: "<f4", 64: "<f8"}[struct.unpack("<h", h[70:72])[0]]
    off = int(struct.unpack("<f", h[108:112])[0])
    srow = np.array(struct.unpack("<12f", h[280:328]), dtype=float).reshape(3, 4)
    A = np.vstack([srow, [0, 0, 0, 1]])
    shape = dim[1:dim[0] + 1]
    n = int(np.prod(shape))
    img = np.frombuffer(raw, dtype=dtype, count=n, offset=off).reshape(shape, order="F").astype(float)
    return img, A


def read_trk(path):
    raw = open(path, "rb").read()
    vs = np.array(struct.unpack("<3f", raw[12:24]))
    V = np.array(struct.unpack("<16f", raw[440:504]), dtype=float).reshape(4, 4)
    order = raw[948:951].decode()
    ns = struct.unpack("<h", raw[36:38])[0]
    npr = struct.unpack("<h", raw[238:240])[0]
    assert order == "RAS" and ns == 0 and npr == 0, "the bundled file is RAS without scalars"
    pos, out, records = 1000, [], []
    while pos < len(raw):
        m = struct.unpack("<i", raw[pos:pos + 4])[0]
        end = pos + 4 + 12 * m
        p = np.frombuffer(raw[pos + 4:end], "<f4").reshape(m, 3).astype(float)
        vox = p / vs - 0.5
        out.append(vox @ V[:3, :3].T + V[:3, 3])
        records.append(raw[pos:end])
        pos = end
    return out, records


def atom_of(L, g):
    g = g / np.linalg.norm(g)
    if g[1] < 0:
        g = -g
    step = np.pi / L
    phi = np.arctan2(abs(g[1]), g[0])
    theta = np.arccos(np.clip(g[2], -1, 1))
    i = int(np.floor(phi / step + 0.5))
    if i == L:
        i, theta = 0, np.pi - theta
    j = int(np.floor(theta / step + 0.5))
    return 0 if j in (0, L) else 1 + i * (L - 1) + (j - 1)


def expected_model(img, A, bvals, bvecs, streamlines, L=180, nodes="sum"):
    """nodes: "sum" (original LiFE, DIPY: S0 x node count) or "mean" (ENCODE: / nodes in the voxel)."""
    Ainv = np.linalg.inv(A)
    vsize = np.linalg.norm(A[:3, :3], axis=0)
    b0 = bvals <= 50
    coeffs = {}
    voxels = set()
    for f, s in enumerate(streamlines):
        vox = s @ Ainv[:3, :3].T + Ainv[:3, 3]
        grad = np.gradient(vox, axis=0) * vsize
        idx = np.round(vox).astype(int)
        count = {}
        for n in range(len(s)):
            v = tuple(idx[n])
            a = atom_of(L, grad[n])
            count[(v, a)] = count.get((v, a), 0) + 1
            voxels.add(v)
        per_vox = {}
        for (v, a), c in count.items():
            per_vox[v] = per_vox.get(v, 0) + c
        for (v, a), c in count.items():
            coeffs[(a, v, f)] = c / per_vox[v] if nodes == "mean" else float(c)
    order = sorted(voxels, key=lambda v: (v[2], v[1], v[0]))  # raster order, i fastest
    S0 = {v: img[v][b0].mean() for v in order}
    Y = np.array([img[v][~b0] - img[v][~b0].mean() for v in order]).T
    return order, S0, Y, {k: val * S0[k[1]] for k, val in coeffs.items()}


with tempfile.TemporaryDirectory() as tmp:
    img, A = read_nifti(DWI)
    bvals = np.loadtxt(BVAL)
    bvecs = np.loadtxt(BVEC)
    streamlines, records = read_trk(TRK)
    order, S0, Y, coeffs = expected_model(img, A, bvals, bvecs, streamlines)

    model = os.path.join(tmp, "model")
    run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", TRK, "--out", model, "--quiet")
    ld = lambda name: np.load(os.path.join(model, name))
    ijk = ld("voxel_ijk.npy")
    check([tuple(x) for x in ijk] == order, "voxels and their raster order")
    check(np.allclose(ld("s0.npy"), [S0[v] for v in order], rtol=0, atol=1e-12), "S0 per voxel")
    check(np.allclose(ld("signal.npy"), Y, rtol=0, atol=1e-9), "demeaned signal Y")
    got = {}
    for a, v, f, x in zip(ld("phi_atom.npy"), ld("phi_voxel.npy"), ld("phi_fiber.npy"), ld("phi_value.npy")):
        got[(int(a), tuple(ijk[v]), int(f))] = x
    check(set(got) == set(coeffs), f"Phi entries: {len(got)} built, {len(coeffs)} expected")
    check(all(abs(got[k] - coeffs[k]) <= 1e-9 * abs(coeffs[k]) for k in coeffs if k in got), "Phi values")
    check(list(ld("streamlines.npy")) == list(range(60)), "fiber -> streamline map")
    D = ld("dictionary.npy")
    dw = bvals > 50
    g = bvecs[:, dw] / np.linalg.norm(bvecs[:, dw], axis=0)
    for a in (0, 1, 1000, 32220):
        L = 180  # the default (docs/life_data.md)
        if a == 0:
            u = np.array([0, 0, 1.0])
        else:
            i, j = (a - 1) // (L - 1), (a - 1) % (L - 1) + 1
            p, t = i * np.pi / L, j * np.pi / L
            u = np.array([np.cos(p) * np.sin(t), np.sin(p) * np.sin(t), np.cos(t)])
        col = np.exp(-bvals[dw] / 1000 * (u @ g) ** 2)
        check(np.allclose(D[:, a], col - col.mean(), atol=1e-12), f"dictionary column {a}")

    # fit, then the report and the pruned tractogram
    w = os.path.join(tmp, "w.npy")
    run("life", "fit", model, "--out", w, "--backend", "cpu", "--mw", "naive", "--mty", "naive", "--threads", "1",
        "--quiet")
    weights = np.load(w)
    hist = np.load(os.path.join(tmp, "w_history.npy"))
    check(weights.shape == (60,) and (weights >= 0).all(), "weights")
    check(len(hist) > 1 and hist[-1] < hist[0], "objective decreases")
    pruned = os.path.join(tmp, "pruned.trk")
    csv = os.path.join(tmp, "rmse.csv")
    p = run("life", "report", model, w, "--pruned", pruned, "--csv", csv, "--json")
    rep = json.loads(p.stdout) if p.returncode == 0 else {}
    kept = int((weights > 0).sum())
    check(rep.get("fibers_kept") == kept and rep.get("pruned_streamlines") == kept, f"report: {rep}")
    # residual per voxel from numpy
    Mw = np.zeros_like(Y)
    for (a, v, f), x in coeffs.items():
        Mw[:, order.index(v)] += D[:, a] * x * weights[f]
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    check(np.allclose(rows[:, 5], np.sqrt((Y ** 2).mean(axis=0)), rtol=1e-7), "RMSE before")
    check(np.allclose(rows[:, 6], np.sqrt(((Y - Mw) ** 2).mean(axis=0)), rtol=1e-7), "RMSE after")
    check(abs(rep.get("objective", 0) - 0.5 * ((Y - Mw) ** 2).sum()) <= 1e-9 * rep.get("objective", 1), "objective")
    raw = open(pruned, "rb").read()
    src = open(TRK, "rb").read()
    expect = b"".join(r for r, x in zip(records, weights) if x > 0)
    check(raw[1000:] == expect, "pruned records byte for byte")
    check(raw[:988] == src[:988] and struct.unpack("<i", raw[988:992])[0] == kept, "pruned header and count")

    # DIPY's own criteria against the original MATLAB LiFE (dipy/tracking/tests/test_life.py,
    # reference files from the DIPY 1.12.1 wheel, data/life/SOURCES.md), with default settings:
    # median per-voxel RMSE over all volumes (b=0 predicted as S0) below MATLAB's, and weights
    # correlating > 0.6 with MATLAB's. The RMSE is computed here from the numpy model.
    mat_w = np.load(os.path.join(data, "life_matlab_weights.npy"))
    mat_rmse = np.load(os.path.join(data, "life_matlab_rmse.npy"))
    n_vol = len(bvals)
    wd = os.path.join(tmp, "wd.npy")
    run("life", "fit", model, "--out", wd, "--backend", "cpu", "--quiet")  # every default
    wdef = np.load(wd)
    Mwd = np.zeros_like(Y)
    for (a, v, f), x in coeffs.items():
        Mwd[:, order.index(v)] += D[:, a] * x * wdef[f]
    rmse_all = np.sqrt(((Y - Mwd) ** 2).sum(axis=0) / n_vol)
    corr_sum = np.corrcoef(mat_w, wdef)[0, 1]
    print(f"reference (nodes sum, defaults): weights correlation with MATLAB {corr_sum:.3f} (> 0.6), "
          f"median RMSE over {n_vol} volumes {np.median(rmse_all):.3f} (MATLAB {np.median(mat_rmse):.3f})")
    check(corr_sum > 0.6, f"DIPY criterion: weights correlate {corr_sum:.3f} with MATLAB LiFE's, need > 0.6")
    check(np.median(rmse_all) < np.median(mat_rmse),
          f"DIPY criterion: median RMSE {np.median(rmse_all):.3f} >= MATLAB's {np.median(mat_rmse):.3f}")
    # AUTO on the CPU is a rule (no timing runs, nothing cached beside the model): one thread for
    # 222 coefficients; 111 voxels for 32,221 atoms, so y = M w on voxel-voxel and w = M^T y on
    # atom-atom; two fits agree exactly
    j1 = json.loads(run("life", "fit", model, "--out", wd, "--backend", "cpu", "--json").stdout)
    check(j1["variant_selection_seconds"] == 0 and j1["threads"] == 1 and j1["mw_variant"] == "voxel-voxel"
          and j1["mty_variant"] == "atom-atom" and "variants_cached" not in j1
          and not os.path.exists(os.path.join(model, "variants.txt")), f"AUTO's CPU rule, 1 thread for 222 coefficients: {j1}")
    check(np.array_equal(np.load(wd), wdef), "two default fits of the same model give identical weights")
    check(j1["stop"].startswith("objective change below rtolo") or "rtolg" in j1["stop"], f"default stop: {j1['stop']}")
    rep = json.loads(run("life", "report", model, wd, "--json").stdout)
    check(abs(rep["median_rmse_after_all_volumes"] - np.median(rmse_all)) < 1e-9 * np.median(rmse_all)
          and rep["rmse_volumes"] == n_vol, f"report's RMSE over all volumes: {rep}")

    # the exact NNLS optimum of the numpy matrices (Lawson-Hanson here; scipy's nnls too when
    # installed): sum reproduces MATLAB LiFE, mean (ENCODE's choice) does not
    def dense(cf):
        M = np.zeros((Y.size, 60))
        for (a, v, f), x in cf.items():
            M[order.index(v) * Y.shape[0]:(order.index(v) + 1) * Y.shape[0], f] += D[:, a] * x
        return M

    def nnls(M, y, tol=1e-10):  # Lawson & Hanson (1974), Solving Least Squares Problems, ch. 23
        n = M.shape[1]
        P = np.zeros(n, bool)
        x = np.zeros(n)
        for _ in range(3 * n):
            g = M.T @ (y - M @ x)
            if P.all() or (g[~P] <= tol * np.abs(g).max()).all():
                break
            P[np.argmax(np.where(P, -np.inf, g))] = True
            while True:
                z = np.zeros(n)
                z[P] = np.linalg.lstsq(M[:, P], y, rcond=None)[0]
                if (z[P] > 0).all():
                    x = z
                    break
                neg = P & (z <= 0)
                alpha = np.min(x[neg] / (x[neg] - z[neg]))
                x = x + alpha * (z - x)
                P &= x > 1e-14 * np.abs(x).max()
        return x

    yv = Y.T.reshape(-1)
    exact = {}
    for nodes in ("sum", "mean"):
        cf = coeffs if nodes == "sum" else expected_model(img, A, bvals, bvecs, streamlines, nodes="mean")[3]
        M = dense(cf)
        x = nnls(M, yv)
        try:
            from scipy.optimize import nnls as scipy_nnls
            xs = scipy_nnls(M, yv)[0]
            check(np.allclose(x, xs, rtol=1e-6, atol=1e-9 * np.abs(xs).max()), f"{nodes}: Lawson-Hanson = scipy nnls")
        except ImportError:
            pass
        mdir = os.path.join(tmp, "model_" + nodes)
        run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", TRK, "--out", mdir,
            "--nodes", nodes, "--quiet")
        mijk = np.load(os.path.join(mdir, "voxel_ijk.npy"))
        got = {(int(a), tuple(mijk[v]), int(f)): val for a, v, f, val in
               zip(*(np.load(os.path.join(mdir, n)) for n in ("phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy",
                                                             "phi_value.npy")))}
        check(set(got) == set(cf) and all(abs(got[k] - cf[k]) <= 1e-9 * abs(cf[k]) for k in cf),
              f"--nodes {nodes}: Phi equals numpy's")
        wt = os.path.join(tmp, "w_" + nodes + ".npy")
        run("life", "fit", mdir, "--out", wt, "--backend", "cpu", "--quiet", "--iters", "20000", "--tolo", "0",
            "--rtolo", "0", "--rtolg", "0", "--tolg", "1e-8")
        wtight = np.load(wt)
        f_ns, f_ex = 0.5 * ((M @ wtight - yv) ** 2).sum(), 0.5 * ((M @ x - yv) ** 2).sum()
        check(f_ns <= f_ex * (1 + 1e-9), f"--nodes {nodes}: tight SBBNNLS objective {f_ns} vs NNLS {f_ex}")
        exact[nodes] = np.corrcoef(mat_w, x)[0, 1]
        print(f"exact NNLS, nodes {nodes}: weights correlation with MATLAB {exact[nodes]:.3f}")
    check(exact["sum"] > 0.6 > exact["mean"],
          f"the node sum reproduces MATLAB LiFE (corr {exact['sum']:.3f}), ENCODE's mean does not ({exact['mean']:.3f})")

    # the same streamlines as .tck (world coordinates) build the same model
    tck = os.path.join(tmp, "same.tck")
    body = b"".join(np.asarray(s, "<f4").tobytes() + np.full(3, np.nan, "<f4").tobytes() for s in streamlines)
    head = "mrtrix tracks\ndatatype: Float32LE\ncount: 60\nfile: . 64\nEND\n".encode()
    open(tck, "wb").write(head.ljust(64, b"\0") + body + np.full(3, np.inf, "<f4").tobytes())
    model2 = os.path.join(tmp, "model2")
    run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", tck, "--out", model2, "--quiet")
    for name in ("phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy", "phi_value.npy", "signal.npy"):
        check(np.array_equal(np.load(os.path.join(model2, name)), ld(name)), f".tck model equals .trk model: {name}")
    pruned_tck = os.path.join(tmp, "pruned.tck")
    run("life", "report", model2, w, "--pruned", pruned_tck, "--json")

    # and as TRX (zipfile + numpy: float32 positions, uint32 offsets with the count last)
    import json as _json
    import zipfile
    trx = os.path.join(tmp, "same.trx")
    lens = [len(s) for s in streamlines]
    with zipfile.ZipFile(trx, "w") as z:
        z.writestr("header.json", _json.dumps({"VOXEL_TO_RASMM": np.eye(4).tolist(), "DIMENSIONS": [1, 1, 1],
                                               "NB_STREAMLINES": len(lens), "NB_VERTICES": int(sum(lens))}))
        z.writestr("positions.3.float32", np.concatenate([np.asarray(s, "<f4") for s in streamlines]).tobytes())
        z.writestr("offsets.uint32", np.concatenate([[0], np.cumsum(lens)]).astype("<u4").tobytes())
    model3 = os.path.join(tmp, "model3")
    run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", trx, "--out", model3, "--quiet")
    for name in ("phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy", "phi_value.npy", "signal.npy"):
        check(np.array_equal(np.load(os.path.join(model3, name)), ld(name)), f".trx model equals .trk model: {name}")
    pruned_trx = os.path.join(tmp, "pruned.trx")
    run("life", "report", model3, w, "--pruned", pruned_trx, "--json")
    with zipfile.ZipFile(pruned_trx) as z:
        pp = np.frombuffer(z.read("positions.3.float32"), "<f4").reshape(-1, 3)
        po = np.frombuffer(z.read("offsets.uint64"), "<u8").astype(np.int64)
    keep_trx = [np.asarray(s, "<f4") for s, x in zip(streamlines, weights) if x > 0]
    check(len(po) == kept + 1 and all(np.array_equal(pp[po[i]:po[i + 1]], s) for i, s in enumerate(keep_trx)),
          "pruned .trx holds the kept streamlines")

    try:
        import nibabel as nib
    except ImportError:
        nib = None
    if nib is not None:
        t = nib.streamlines.load(TRK)
        check(all(np.allclose(a, b, atol=1e-5) for a, b in zip(t.streamlines, streamlines)), "nibabel reads the same points")
        t2 = nib.streamlines.load(pruned_tck)
        keep = [s for s, x in zip(streamlines, weights) if x > 0]
        check(len(t2.streamlines) == kept and all(np.allclose(a, b, atol=1e-5) for a, b in zip(t2.streamlines, keep)),
              "nibabel reads our pruned .tck")
        t3 = nib.streamlines.load(pruned)
        check(len(t3.streamlines) == kept, "nibabel reads our pruned .trk")
        ni = nib.load(DWI)
        check(np.allclose(ni.affine, A) and np.array_equal(np.asarray(ni.dataobj, float), img), "nibabel reads the same image")
    else:
        print("note: nibabel is not installed; the nibabel cross-checks were skipped")

    # negative weights are refused by the report (issue 18), naming the file
    negw = os.path.join(tmp, "neg_w.npy")
    np.save(negw, np.where(np.arange(60) == 7, -1.0, weights))
    p = run("life", "report", model, negw, "--json", expect=1)
    check("neg_w.npy: weight 7 = -1 is negative" in p.stderr and p.stderr.count("\n") == 1, p.stderr)

    # atomic outputs (issue 18): a report whose pruning fails on a truncated
    # tractogram leaves no .trk/.tck and no RMSE CSV, and an existing output
    # survives the failed overwrite unchanged; nothing temporary is left
    trunc_src = os.path.join(tmp, "trunc_src.trk")
    open(trunc_src, "wb").write(src[:-7])
    outdir = os.path.join(tmp, "atomic")
    os.mkdir(outdir)
    p = run("life", "report", model, w, "--tracks", trunc_src, "--pruned", os.path.join(outdir, "p.trk"),
            "--csv", os.path.join(outdir, "rmse.csv"), expect=1)
    check("trunc_src.trk" in p.stderr and "truncated" in p.stderr, f"truncated source: {p.stderr}")
    check(os.listdir(outdir) == [], f"a failed report left {os.listdir(outdir)}")
    keep_old = os.path.join(outdir, "old.trk")
    open(keep_old, "wb").write(b"previous result")
    run("life", "report", model, w, "--tracks", trunc_src, "--pruned", keep_old, expect=1)
    check(open(keep_old, "rb").read() == b"previous result" and os.listdir(outdir) == ["old.trk"],
          f"existing output after a failed overwrite: {os.listdir(outdir)}")
    os.remove(keep_old)
    trunc_tck = os.path.join(tmp, "trunc_src.tck")
    open(trunc_tck, "wb").write(open(tck, "rb").read()[:-30])  # no end marker, last point cut
    run("life", "report", model2, w, "--tracks", trunc_tck, "--pruned", os.path.join(outdir, "p.tck"), expect=1)
    check(os.listdir(outdir) == [], f"a failed .tck pruning left {os.listdir(outdir)}")
    run("life", "report", model, w, "--csv", os.path.join(tmp, "no_such_dir", "sub", "r.csv"))
    check(os.path.isfile(os.path.join(tmp, "no_such_dir", "sub", "r.csv")), "--csv into missing folders")
    p = run("life", "report", model, w, "--csv", os.path.join(w, "r.csv"), expect=1)
    check("is not a folder" in p.stderr, f"a file as the folder without its reason: {p.stderr}")
    # a full disk under the RMSE CSV: no pruned tractogram either (it used to
    # be written before the CSV's failure was seen). Needs a one-page tmpfs:
    # root and mount rights.
    small = os.path.join(tmp, "small")
    os.mkdir(small)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", small], capture_output=True).returncode == 0:
        try:
            p = run("life", "report", model, w, "--pruned", os.path.join(outdir, "p.trk"),
                    "--csv", os.path.join(small, "rmse.csv"), expect=1)
            check("No space left on device" in p.stderr, f"full disk: {p.stderr}")
            check(os.listdir(outdir) == [] and os.listdir(small) == [],
                  f"a report whose CSV did not fit left {os.listdir(outdir)} {os.listdir(small)}")
        finally:
            subprocess.run(["umount", small])
    os.rmdir(small)

    # bad inputs: one line naming the file
    bad_bval = os.path.join(tmp, "bad.bval")
    open(bad_bval, "w").write(" ".join(["0"] + ["2000"] * 24) + "\n")
    p = run("life", "build", "--dwi", DWI, "--bvals", bad_bval, "--bvecs", BVEC, "--tracks", TRK, "--out", model,
            expect=1)
    check("bad.bval" in p.stderr and p.stderr.count("\n") == 1, f"gradient mismatch message: {p.stderr}")
    trunc = os.path.join(tmp, "trunc.trk")
    open(trunc, "wb").write(src[:-7])
    p = run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", trunc, "--out", model, expect=1)
    check("trunc.trk" in p.stderr and "truncated" in p.stderr, f"truncated .trk: {p.stderr}")
    empty = os.path.join(tmp, "empty.tck")
    open(empty, "wb").write(head.replace(b"count: 60", b"count: 0 ").ljust(64, b"\0") + np.full(3, np.inf, "<f4").tobytes())
    p = run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", empty, "--out", model, expect=1)
    check("empty.tck" in p.stderr and "no streamline" in p.stderr, f"empty tractogram: {p.stderr}")
    far = os.path.join(tmp, "far.tck")
    shifted = [s + 100.0 for s in streamlines[:2]]
    body = b"".join(np.asarray(s, "<f4").tobytes() + np.full(3, np.nan, "<f4").tobytes() for s in shifted)
    open(far, "wb").write(head.replace(b"count: 60", b"count: 2 ").ljust(64, b"\0") + body + np.full(3, np.inf, "<f4").tobytes())
    p = run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", far, "--out", model, expect=1)
    check("far.tck" in p.stderr and "outside" in p.stderr, f"streamline outside: {p.stderr}")
    p = run("life", "build", "--dwi", DWI, "--bvals", BVAL, "--bvecs", BVEC, "--tracks", far, "--out", model,
            "--skip-bad", expect=1)
    check("none of the 2 streamlines" in p.stderr, f"all outside with --skip-bad: {p.stderr}")

harness.finish("life_data_cli")
