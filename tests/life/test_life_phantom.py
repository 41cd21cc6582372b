#!/usr/bin/env python3
"""The ground-truth phantom (`life synth --phantom`) and `bench life --quality` checked
independently with numpy (docs/life.md, "Pruning quality"):

- the files: NIfTI-1 header and data read from the bytes, the gradient table, the .tck
  records, labels/kinds/bundles consistent, the counts of each kind;
- the noiseless image recomputed from the true streamlines only (np.gradient tangents,
  np.rint voxels, zeppelin 1.7/0.3 um^2/ms, the 95th percentile of the node counts, ball
  0.9/3.0 inside/outside the brain): equal to float32 rounding; the same recomputation
  with the false streamlines included differs (the labels decide);
- geometry: every node inside the brain ball; each bridge starts near one bundle and ends
  near another; random curves are not bundle members;
- noise: SNR 20 gives b=0 volumes with sd S0 / 20;
- the quality benchmark's AUC equals a rank-based AUC computed here from `life fit`'s
  weights of the same model and setting (with the group penalty too);
- parcels.nii recomputed from its definition (40 directions on a Fibonacci sphere), and the
  connection groups of `life build --parcels` recomputed from the .tck end points; bad
  parcellations and groups files refused.

    python3 tests/life/test_life_phantom.py NEUROSOLVE
Exit 77 (skip) without numpy."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy not installed: skipping")
    sys.exit(77)

EXE = sys.argv[1]
failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)
    else:
        print("ok:", msg)


def run(*args):
    p = subprocess.run([EXE, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p.stdout


def read_nifti(path):
    raw = open(path, "rb").read()
    assert np.frombuffer(raw[0:4], "<i4")[0] == 348
    dim = np.frombuffer(raw[40:56], "<i2")
    datatype, bitpix = np.frombuffer(raw[70:74], "<i2")
    vox_offset = np.frombuffer(raw[108:112], "<f4")[0]
    sform_code = np.frombuffer(raw[254:256], "<i2")[0]
    srow = np.frombuffer(raw[280:328], "<f4").reshape(3, 4)
    assert raw[344:348] == b"n+1\0"
    n = dim[1:1 + dim[0]]
    data = np.frombuffer(raw[int(vox_offset):], {16: "<f4", 4: "<i2"}[int(datatype)])
    assert data.size == np.prod(n), (data.size, n)
    return data.reshape(tuple(n), order="F"), datatype, bitpix, sform_code, srow


def read_tck(path):
    raw = open(path, "rb").read()
    head = raw[:raw.index(b"END\n") + 4].decode()
    assert head.startswith("mrtrix tracks\n") and "datatype: Float32LE" in head
    off = int(head.split("file: . ")[1].split("\n")[0])
    count = int(head.split("count: ")[1].split("\n")[0])
    pts = np.frombuffer(raw[off:], "<f4").reshape(-1, 3).astype(float)
    assert np.isinf(pts[-1]).all()
    out, cur = [], []
    for p in pts[:-1]:
        if np.isnan(p).all():
            out.append(np.array(cur))
            cur = []
        else:
            cur.append(p)
    assert not cur and len(out) == count
    return out


def signal(streamlines, use, N, g, b):
    acc = np.zeros((N ** 3, len(g)))
    dens = np.zeros(N ** 3)
    for s, u in zip(streamlines, use):
        if not u:
            continue
        v = s / 2.0  # world mm -> voxel
        t = np.gradient(v, axis=0)
        t /= np.linalg.norm(t, axis=1)[:, None]
        idx = np.clip(np.rint(v).astype(int), 0, N - 1)
        lin = idx[:, 0] + N * (idx[:, 1] + N * idx[:, 2])
        cc = (t @ g.T) ** 2
        np.add.at(acc, lin, np.exp(-b * 1e-3 * (1.7 * cc + 0.3 * (1 - cc))))
        np.add.at(dens, lin, 1.0)
    dmax = np.percentile(dens[dens > 0], 95)
    f_in = 0.7 * np.minimum(dens / dmax, 1.0)
    shape = np.where(dens[:, None] > 0, acc / np.maximum(dens, 1)[:, None], 0)
    c, R = (N - 1) / 2, (N - 1) / 2 - 1.5
    ijk = np.indices((N, N, N)).reshape(3, -1)[::-1].T  # lin order: i fastest
    brain = np.linalg.norm(ijk - c, axis=1) < R
    iso = np.exp(-b * 1e-3 * np.where(brain, 0.9, 3.0))[:, None]
    return 1000.0 * (f_in[:, None] * shape + (1 - f_in[:, None]) * iso)


def auc(score, label):
    from itertools import groupby
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    i = 0
    for _, grp in groupby(order, key=lambda k: score[k]):
        grp = list(grp)
        ranks[grp] = i + (len(grp) + 1) / 2
        i += len(grp)
    n1 = (label == 1).sum()
    n0 = len(label) - n1
    return (ranks[label == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


with tempfile.TemporaryDirectory() as tmp:
    N, n_sl, nb = 32, 1200, 3
    d = os.path.join(tmp, "clean")
    out = run("life", "synth", d, "--phantom", "--streamlines", str(n_sl), "--snr", "0", "--grid", str(N),
              "--bundles", str(nb), "--seed", "3")
    print(out.strip())
    img, datatype, bitpix, sform_code, srow = read_nifti(os.path.join(d, "dwi.nii"))
    check(datatype == 16 and bitpix == 32 and sform_code > 0, "float32 NIfTI with an sform")
    check(np.allclose(srow, [[2, 0, 0, 0], [0, 2, 0, 0], [0, 0, 2, 0]]), "affine diag(2, 2, 2)")
    check(img.shape == (N, N, N, 32), f"image shape {img.shape}")
    bvals = np.loadtxt(os.path.join(d, "dwi.bval"))
    bvecs = np.loadtxt(os.path.join(d, "dwi.bvec"))
    check(bvals.shape == (32,) and (bvals[:2] == 0).all() and (bvals[2:] == 2000).all(), "b-values")
    g = bvecs[:, 2:].T
    check(np.allclose(np.linalg.norm(g, axis=1), 1) and (g[:, 2] > 0).all(), "unit directions, upper hemisphere")
    sl = read_tck(os.path.join(d, "tracks.tck"))
    lab, kind, bundle = (np.load(os.path.join(d, f)) for f in ("labels.npy", "kinds.npy", "bundles.npy"))
    check(len(sl) == n_sl and lab.shape == kind.shape == bundle.shape == (n_sl,), "one label per streamline")
    check((lab == 1).sum() == 840 and (kind == 1).sum() == 180 and (kind == 2).sum() == 180,
          "70 % true, the false half bridges, half random curves")
    check(((kind == 0) == (lab == 1)).all() and ((bundle >= 0) == (lab == 1)).all() and set(bundle[lab == 1]) ==
          set(range(nb)), "kinds and bundles agree with the labels")
    c, R = (N - 1) / 2, (N - 1) / 2 - 1.5
    allpts = np.vstack(sl) / 2.0
    check((np.linalg.norm(allpts - c, axis=1) < R).all(), "every node inside the brain ball")
    check(min(len(s) for s in sl) >= 8, "streamlines of 8 nodes or more")

    # the noiseless image from the true streamlines, recomputed here
    vol = img.reshape(N ** 3, 32, order="F")
    ref = signal(sl, lab == 1, N, g, 2000.0)
    check(np.all(vol[:, :2] == 1000.0), "b=0 volumes are S0 without noise")
    err = np.abs(vol[:, 2:] - ref).max()
    check(err < 1e-3, f"diffusion volumes equal the independent recomputation (max |diff| {err:.2e})")
    wrong = signal(sl, np.ones(n_sl, bool), N, g, 2000.0)
    check(np.abs(vol[:, 2:] - wrong).max() > 10, "the false streamlines carry no signal (labels decide)")

    # bridges: start near one bundle's true streamlines, end near another's
    members = {b: np.vstack([sl[i] for i in np.flatnonzero(bundle == b)]) / 2.0 for b in range(nb)}

    def near(p):
        return min(range(nb), key=lambda b: np.linalg.norm(members[b] - p, axis=1).min()), \
            min(np.linalg.norm(members[b] - p, axis=1).min() for b in range(nb))

    good = 0
    for i in np.flatnonzero(kind == 1):
        (b0, d0), (b1, d1) = near(sl[i][0] / 2.0), near(sl[i][-1] / 2.0)
        good += b0 != b1 and d0 < 5 and d1 < 5
    check(good >= 0.8 * (kind == 1).sum(), f"{good} of {(kind == 1).sum()} bridges join two different bundles")

    # noise: Rician of sd S0 / snr (b=0 volumes: nearly Gaussian at SNR 20)
    dn = os.path.join(tmp, "noisy")
    run("life", "synth", dn, "--phantom", "--streamlines", str(n_sl), "--snr", "20", "--grid", str(N),
        "--bundles", str(nb), "--seed", "3")
    noisy = read_nifti(os.path.join(dn, "dwi.nii"))[0].reshape(N ** 3, 32, order="F")
    sd = (noisy[:, :2] - 1000.0).std()
    check(45 < sd < 55, f"b=0 noise sd {sd:.2f} (S0 / 20 = 50)")
    check(read_tck(os.path.join(dn, "tracks.tck"))[5].tolist() == sl[5].tolist(), "the noise leaves the tractogram")

    # the quality benchmark's AUC against one computed here from life fit's weights
    csv = os.path.join(tmp, "q.csv")
    run("bench", "life", "--quality", dn, "--settings", "nnls,ridge=0.1", "--csv", csv, "--threads", "1")
    rows = {r.split(",")[0]: r.split(",") for r in open(csv).read().splitlines()[1:]}
    m = os.path.join(tmp, "model")
    run("life", "build", "--dwi", f"{dn}/dwi.nii", "--bvals", f"{dn}/dwi.bval", "--bvecs", f"{dn}/dwi.bvec",
        "--tracks", f"{dn}/tracks.tck", "--out", m, "--quiet")
    fib = np.load(os.path.join(m, "streamlines.npy"))
    y = np.load(os.path.join(dn, "labels.npy"))[fib]
    for name, extra in (("nnls", []), ("ridge=0.1", ["--ridge", "0.1"])):
        w_path = os.path.join(tmp, "w.npy")
        run("life", "fit", m, "--out", w_path, "--backend", "cpu", "--threads", "1", "--mw", "naive",
            "--mty", "naive", "--quiet", *extra)
        w = np.load(w_path)
        a = auc(w, y)
        got = float(rows[name][4])
        check(abs(a - got) < 1e-4, f"{name}: bench AUC {got:.6f} = numpy AUC {a:.6f}")
        kept = w > 0
        check(int(rows[name][7]) == kept.sum(), f"{name}: kept {rows[name][7]} = {kept.sum()}")
        check(abs(float(rows[name][8]) - (y[kept] == 1).mean()) < 1e-5, f"{name}: precision of the kept")
    check(float(rows["ridge=0.1"][4]) > float(rows["nnls"][4]), "the ridge ranks better than plain NNLS here")

    # the endpoint parcellation, recomputed from its definition
    par, pdt, _, _, psrow = read_nifti(os.path.join(dn, "parcels.nii"))
    check(pdt == 4 and par.shape == (N, N, N) and np.allclose(psrow, srow), "parcels.nii: int16, the DWI's grid")
    k = np.arange(40)
    z = 1 - (2 * k + 1) / 40
    u = np.stack([np.sqrt(1 - z * z) * np.cos(k * np.pi * (3 - np.sqrt(5))),
                  np.sqrt(1 - z * z) * np.sin(k * np.pi * (3 - np.sqrt(5))), z], 1)
    ijk = np.indices((N, N, N)).transpose(1, 2, 3, 0).astype(float) - c
    want = np.where(np.linalg.norm(ijk, axis=3) <= R + 1.5, np.argmax(ijk @ u.T, axis=3) + 1, 0)
    check((par == want).all(), f"parcels.nii equals its definition ({len(np.unique(par)) - 1} parcels)")

    # connection groups: the pair of end-point parcels, numbered by sorted (low, high)
    mg = os.path.join(tmp, "model_groups")
    out = run("life", "build", "--dwi", f"{dn}/dwi.nii", "--bvals", f"{dn}/dwi.bval", "--bvecs", f"{dn}/dwi.bvec",
              "--tracks", f"{dn}/tracks.tck", "--out", mg, "--parcels", f"{dn}/parcels.nii", "--quiet")
    slc = read_tck(os.path.join(dn, "tracks.tck"))

    def lab_at(p):
        v = np.rint(p / 2.0).astype(int)
        return par[v[0], v[1], v[2]]
    pairs = [tuple(sorted((lab_at(s[0]), lab_at(s[-1])))) for s in slc]
    uniq = sorted(set(q for q in pairs if q[0] > 0))
    want_g = np.array([uniq.index(q) if q[0] > 0 else -1 for q in pairs])
    got_g = np.load(os.path.join(mg, "groups.npy"))
    fib = np.load(os.path.join(mg, "streamlines.npy"))
    check(got_g.dtype == np.int32 and (got_g == want_g[fib]).all(),
          f"groups.npy = numpy's end-point pairs ({len(uniq)} groups)")
    per_bundle = [np.sort(np.bincount(want_g[bundle == b] + 1))[-4:].sum() / (bundle == b).sum() for b in range(nb)]
    rnd = np.sort(np.bincount(want_g[kind == 2] + 1))[-4:].sum() / (kind == 2).sum()
    check(min(per_bundle) > 0.8 and rnd < 0.5, f"a bundle's streamlines fall in a few connections: the 4 largest "
          f"hold {np.round(per_bundle, 2)} of each, {rnd:.2f} of the random curves")

    # the group fit: bench AUC = numpy AUC of life fit --group with the groups of life build --parcels
    run("bench", "life", "--quality", dn, "--settings", "ridge=0.1+group=1", "--csv", csv, "--threads", "1")
    row = open(csv).read().splitlines()[1].split(",")
    w_path = os.path.join(tmp, "wg.npy")
    out = run("life", "fit", mg, "--out", w_path, "--backend", "cpu", "--threads", "1", "--ridge", "0.1",
              "--group", "1", "--quiet", "--json")
    w = np.load(w_path)
    yg = np.load(os.path.join(dn, "labels.npy"))[fib]
    check(abs(auc(w, yg) - float(row[4])) < 1e-4, f"group: bench AUC {row[4]} = numpy AUC {auc(w, yg):.6f}")
    check('"groups_nonzero"' in out and (w >= 0).all(), "life fit --group reports the groups kept")
    gsum = np.bincount(got_g[got_g >= 0], weights=w[got_g >= 0])
    check(((gsum == 0) & (np.bincount(got_g[got_g >= 0]) > 0)).any() and (gsum > 0).any(),
          "some connections are dropped whole, some kept")
    # the same groups given per streamline through --groups
    gfile = os.path.join(tmp, "g_sl.npy")
    np.save(gfile, want_g.astype(np.int64))
    run("life", "fit", mg, "--out", os.path.join(tmp, "wg2.npy"), "--backend", "cpu", "--threads", "1",
        "--ridge", "0.1", "--group", "1", "--groups", gfile, "--quiet")
    check(np.array_equal(np.load(os.path.join(tmp, "wg2.npy")), w), "--groups FILE per streamline: same weights")

    # label 0 at some end points: those streamlines get -1 (no connection)
    raw = bytearray(open(os.path.join(dn, "parcels.nii"), "rb").read())
    par0 = par.copy()
    par0[par0 <= 8] = 0
    par_path0 = os.path.join(tmp, "parcels0.nii")
    open(par_path0, "wb").write(bytes(raw[:352]) + par0.astype("<i2").tobytes(order="F"))
    mg0 = os.path.join(tmp, "model_groups0")
    run("life", "build", "--dwi", f"{dn}/dwi.nii", "--bvals", f"{dn}/dwi.bval", "--bvecs", f"{dn}/dwi.bvec",
        "--tracks", f"{dn}/tracks.tck", "--out", mg0, "--parcels", par_path0, "--quiet")
    pairs0 = [tuple(sorted((par0[tuple(np.rint(q[0] / 2).astype(int))], par0[tuple(np.rint(q[-1] / 2).astype(int))])))
              for q in slc]
    uniq0 = sorted(set(q for q in pairs0 if q[0] > 0))
    want0 = np.array([uniq0.index(q) if q[0] > 0 else -1 for q in pairs0])
    got0 = np.load(os.path.join(mg0, "groups.npy"))
    check((got0 == want0[fib]).all() and (got0 == -1).sum() > 50,
          f"an end in label 0: no connection (-1) for {(got0 == -1).sum()} fibers, as numpy")
    out = run("life", "fit", mg0, "--out", os.path.join(tmp, "w0.npy"), "--group", "1", "--threads", "1", "--quiet",
              "--backend", "cpu", "--json")
    js = json.loads(out)
    check(js["groups"] == len(uniq0) + (got0 == -1).sum() and 0 < js["groups_nonzero"] < js["groups"],
          f"each unconnected fiber is a group of its own ({js['groups']} groups, {js['groups_nonzero']} kept)")
    # a label image with a non-integer value
    fl = par.astype("<f4")
    fl[3, 4, 5] = 2.5
    hdr = bytearray(raw[:352])
    hdr[70:74] = np.array([16, 32], "<i2").tobytes()
    open(par_path0, "wb").write(bytes(hdr) + fl.tobytes(order="F"))

    def fails(args, text, rc=1):
        p = subprocess.run([EXE, *args], capture_output=True, text=True)
        check(p.returncode == rc and text in p.stderr, f"refused ({text}): {p.stderr.strip()[:160]}")
        return p
    np.save(gfile, want_g[:-1].astype(np.int32))
    fails(["life", "fit", mg, "--group", "1", "--groups", gfile, "--out", os.path.join(tmp, "x.npy")], "groups:")
    check(not os.path.exists(os.path.join(tmp, "x.npy")), "no weights after a refused groups file")
    np.save(gfile, np.full(len(fib), -2, np.int32))
    fails(["life", "fit", mg, "--group", "1", "--groups", gfile], "= -2")
    fails(["life", "fit", mg, "--group", "-1"], "--group", rc=2)
    fails(["life", "fit", m, "--group", "1"], "life build --parcels")
    # a parcellation of the wrong size, and one with non-integer labels: no model written
    small = os.path.join(tmp, "small.nii")
    raw = bytearray(open(os.path.join(dn, "parcels.nii"), "rb").read())
    raw[42:44] = np.array([N - 1], "<i2").tobytes()
    open(small, "wb").write(bytes(raw[:352 + 2 * (N - 1) * N * N]))
    bad_m = os.path.join(tmp, "bad_model")
    fails(["life", "build", "--dwi", f"{dn}/dwi.nii", "--bvals", f"{dn}/dwi.bval", "--bvecs", f"{dn}/dwi.bvec",
           "--tracks", f"{dn}/tracks.tck", "--out", bad_m, "--parcels", small], "DWI's voxel grid")
    check(not os.path.exists(bad_m), "no model after a refused parcellation")
    fails(["life", "build", "--dwi", f"{dn}/dwi.nii", "--bvals", f"{dn}/dwi.bval", "--bvecs", f"{dn}/dwi.bvec",
           "--tracks", f"{dn}/tracks.tck", "--out", bad_m, "--parcels", f"{dn}/dwi.nii"], "3 dimensions")
    fails(["life", "build", "--dwi", f"{dn}/dwi.nii", "--bvals", f"{dn}/dwi.bval", "--bvecs", f"{dn}/dwi.bvec",
           "--tracks", f"{dn}/tracks.tck", "--out", bad_m, "--parcels", par_path0], "holds 2.5")
    os.remove(os.path.join(dn, "parcels.nii"))
    fails(["bench", "life", "--quality", dn, "--settings", "group=1"], "parcels.nii")

    # bad input: a labels file that disagrees with the kinds
    np.save(os.path.join(dn, "labels.npy"), np.zeros(n_sl, np.int32))
    p = subprocess.run([EXE, "bench", "life", "--quality", dn], capture_output=True, text=True)
    check(p.returncode == 1 and "kinds.npy" in p.stderr, f"inconsistent truth refused: {p.stderr.strip()}")
    p = subprocess.run([EXE, "life", "synth", os.path.join(tmp, "bad"), "--phantom", "--false", "2"],
                       capture_output=True, text=True)
    check(p.returncode == 2 and "--false" in p.stderr and not os.path.exists(os.path.join(tmp, "bad")),
          "an out-of-range option is a usage error and writes nothing")

print(f"test_life_phantom: {failures} failures")
sys.exit(1 if failures else 0)
