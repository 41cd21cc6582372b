#!/usr/bin/env python3
"""neurosolve life end to end: synth writes NPY files numpy reads with the
documented names, dtypes and shapes; the signal is M w_true for M built here
from Phi with numpy; fit's weights reach scipy's nnls objective (when scipy is
installed); C-order matrices load too; bad input gives one error line."""
import csv
import json
import os
import shutil
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


harness = Harness(exe)
check, run = harness.check, harness.run


def dense_m(d):
    D = np.load(os.path.join(d, "dictionary.npy"))
    atom = np.load(os.path.join(d, "phi_atom.npy"))
    voxel = np.load(os.path.join(d, "phi_voxel.npy"))
    fiber = np.load(os.path.join(d, "phi_fiber.npy"))
    value = np.load(os.path.join(d, "phi_value.npy"))
    shape = np.load(os.path.join(d, "phi_shape.npy"))
    T = D.shape[0]
    M = np.zeros((T * shape[1], shape[2]))
    for a, v, f, x in zip(atom, voxel, fiber, value):
        M[v * T:(v + 1) * T, f] += D[:, a] * x
    return M


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "model")
    run("life", "synth", d, "--fibers", "30", "--theta", "16", "--L", "6", "--grid", "6,8,6",
        "--length", "5", "--seed", "4")
    arrays = {
        "phi_shape.npy": (np.int64, 1), "phi_atom.npy": (np.int32, 1), "phi_voxel.npy": (np.int32, 1),
        "phi_fiber.npy": (np.int32, 1), "phi_value.npy": (np.float64, 1),
        "dictionary.npy": (np.float64, 2), "signal.npy": (np.float64, 2), "w_true.npy": (np.float64, 1),
    }
    loaded = {}
    for name, (dtype, ndim) in arrays.items():
        a = np.load(os.path.join(d, name))
        loaded[name] = a
        check(a.dtype == dtype and a.ndim == ndim, f"{name}: {a.dtype} {a.shape}")
    n_atoms, n_voxels, n_fibers = loaded["phi_shape.npy"]
    check(n_atoms == 5 * 6 + 1, "atoms (L - 1) L + 1")
    check(loaded["dictionary.npy"].shape == (16, n_atoms), "dictionary shape")
    check(loaded["dictionary.npy"].flags.f_contiguous, "dictionary in Fortran order")
    check(loaded["signal.npy"].shape == (16, n_voxels), "signal shape")
    check(loaded["w_true.npy"].shape == (n_fibers,), "w_true shape")
    M = dense_m(d)
    y = loaded["signal.npy"].reshape(-1, order="F")
    err = np.abs(M @ loaded["w_true.npy"] - y).max() / np.abs(y).max()
    check(err <= 1e-12, f"signal = M w_true: {err}")

    # a noisy model: fit against scipy's nnls
    d2 = os.path.join(tmp, "noisy")
    run("life", "synth", d2, "--fibers", "25", "--theta", "16", "--L", "6", "--grid", "6,8,6",
        "--length", "5", "--seed", "5", "--noise", "0.3")
    wfile = os.path.join(tmp, "w.npy")
    run("life", "fit", d2, "--iters", "20000", "--tolg", "1e-13", "--tolo", "0", "--out", wfile,
        "--backend", "cpu", "--quiet", "--mw", "coeff-voxel", "--mty", "coeff-voxel", "--threads", "2")
    w = np.load(wfile)
    hist = np.load(os.path.join(tmp, "w_history.npy"))
    M = dense_m(d2)
    b = np.load(os.path.join(d2, "signal.npy")).reshape(-1, order="F")
    f = 0.5 * np.sum((M @ w - b) ** 2)
    check(w.min() >= 0, "weights non-negative")
    check(len(hist) > 0 and abs(hist[-1] - f) <= 1e-9 * f, f"history ends at the objective {hist[-1]} {f}")
    try:
        from scipy.optimize import nnls
        x, rnorm = nnls(M, b, maxiter=100 * M.shape[1])
        f_ref = 0.5 * rnorm ** 2
        check(abs(f - f_ref) <= 1e-6 * f_ref, f"objective {f} vs scipy nnls {f_ref}")
        print(f"objective {f:.12g}, scipy nnls {f_ref:.12g}")
    except ImportError:
        print("scipy not installed: nnls comparison skipped")

    # C-order dictionary and signal load and give the same fit
    for name in ("dictionary.npy", "signal.npy"):
        a = np.load(os.path.join(d2, name))
        np.save(os.path.join(d2, name), np.ascontiguousarray(a))
    w2file = os.path.join(tmp, "w2.npy")
    run("life", "fit", d2, "--iters", "20000", "--tolg", "1e-13", "--tolo", "0", "--out", w2file,
        "--backend", "cpu", "--quiet", "--mw", "coeff-voxel", "--mty", "coeff-voxel", "--threads", "2")
    check(np.array_equal(np.load(w2file), w), "C-order model gives the same weights")
    p = run("life", "fit", d2, "--iters", "5", "--json", "--out", w2file, "--backend", "cpu")
    import json
    check(json.loads(p.stdout)["updates"] == 4, p.stdout)

    # bad input: one line on stderr, exit 1 (runtime) or 2 (usage)
    p = run("life", "fit", os.path.join(tmp, "nothing"), expect=1)
    check(p.stderr.count("\n") == 1 and "phi_shape.npy" in p.stderr, p.stderr)
    np.save(os.path.join(d2, "phi_voxel.npy"), np.load(os.path.join(d2, "phi_voxel.npy")).astype(np.int64))
    p = run("life", "info", d2, expect=1)
    check("phi_voxel.npy" in p.stderr and "int32" in p.stderr, p.stderr)
    run("life", "fit", d2, "--iters", "0", expect=2)
    run("life", "fit", d2, "--mw", "fastest", expect=2)
    run("life", "synth", expect=2)

    # finite model values whose products overflow: the fit refuses (issue 18:
    # it used to stop with exit 0 and objective inf), naming the model
    d3 = os.path.join(tmp, "overflow")
    run("life", "synth", d3, "--fibers", "10", "--theta", "16", "--L", "6", "--grid", "6,8,6", "--length", "5")
    sig = np.load(os.path.join(d3, "signal.npy"))
    np.save(os.path.join(d3, "signal.npy"), np.asfortranarray(sig * 1e200))
    w3 = os.path.join(tmp, "w3.npy")
    p = run("life", "fit", d3, "--quiet", "--backend", "cpu", "--out", w3, expect=1)
    check("overflow" in p.stderr and "objective" in p.stderr and p.stderr.count("\n") == 1, p.stderr)
    check(not os.path.exists(w3), "a failed fit writes no weights")

    # the weights and their history appear together: a history that cannot be
    # written leaves no weights either (and an existing weights file as it was)
    w4 = os.path.join(tmp, "w4.npy")
    open(w4, "wb").write(b"old weights")
    p = run("life", "fit", d, "--iters", "5", "--quiet", "--backend", "cpu", "--out", w4,
            "--history", os.path.join(w4, "h.npy"), expect=1)
    check("w4.npy is not a folder" in p.stderr, p.stderr)
    check(open(w4, "rb").read() == b"old weights", "a failed fit changed the existing weights file")
    run("life", "fit", d, "--iters", "5", "--quiet", "--backend", "cpu", "--out", w4)
    check(np.load(w4).shape == (30,) and np.load(os.path.join(tmp, "w4_history.npy")).shape == (4,), "fit outputs")

    # a model folder appears only when complete; missing parent folders are
    # created (mkdir -p); a parent that is a file is named
    synth_small = ["--fibers", "5", "--theta", "8", "--L", "4", "--grid", "4,4,4", "--length", "3"]
    run("life", "synth", os.path.join(tmp, "no_parent", "deeper", "m"), *synth_small)
    check(os.listdir(os.path.join(tmp, "no_parent", "deeper", "m")) != [], "synth into missing folders")
    shutil.rmtree(os.path.join(tmp, "no_parent"))
    p = run("life", "synth", os.path.join(w4, "m"), *synth_small, expect=1)
    check("w4.npy is not a folder" in p.stderr, p.stderr)
    check(not [f for f in os.listdir(tmp) if "partial" in f], f"temporary folders left: {os.listdir(tmp)}")

    # --lambda auto: the weights, the curve (CSV) and the sidecar agree; the chosen row is the
    # largest value within max(one SE, share x the gain over the zero prediction) of the least CV
    # error (1se-gain; the share is 0 for L1, 5 % otherwise); the weights are life fit's at the chosen value; options only a path takes are refused
    # without one, and so are a fixed value of the penalty the path varies and --resume
    wp = os.path.join(tmp, "wp.npy")
    p = run("life", "fit", d, "--lambda-path", "4", "--penalty", "lambda", "--folds", "3", "--threads", "1",
            "--backend", "cpu", "--out", wp, "--plot", os.path.join(tmp, "wp.png"))
    side = json.load(open(os.path.join(tmp, "wp.json")))
    rows = list(csv.DictReader(open(os.path.join(tmp, "wp_path.csv"))))
    check(len(rows) == 4 and len(side["path"]) == 4 and side["penalty"] == "lambda" and side["folds"] == 3, side)
    cv = [float(r["cv_rmse"]) for r in rows]
    se = [float(r["cv_se"]) for r in rows]
    best = min(range(4), key=lambda k: cv[k])
    check(side["rule"] == "1se-gain" and side["gain_tolerance"] == 0 and side["cv_zero"] > cv[best], side)
    pick = next(k for k in range(4) if cv[k] <= cv[best] + se[best])
    check(side["chosen_index"] == pick and rows[pick]["chosen"] == "1" and rows[best]["minimum"] == "1", rows)
    check(float(rows[0]["lambda"]) == side["max_value"] and int(rows[0]["nonzero"]) == 0, rows[0])
    check(np.load(wp).shape == (30,) and side["mw_variant"] and side["product_error_bound"] == 0, side)
    check(f"chosen: lambda {float(rows[pick]['lambda']):.6g}" in p.stdout, p.stdout)
    wf = os.path.join(tmp, "wf.npy")
    run("life", "fit", d, "--lambda", repr(float(rows[pick]["lambda"])), "--threads", "1", "--backend", "cpu", "--out", wf,
        "--quiet")
    check(open(wf, "rb").read() == open(wp, "rb").read(), "the path's weights are not life fit's at the chosen value")
    for bad in (["--penalty", "ridge"], ["--folds", "3"], ["--lambda", "auto", "--penalty", "ridge", "--ridge", "0.1"],
                ["--lambda", "auto", "--resume", wp], ["--lambda", "auto", "--cv-rule", "median"],
                ["--lambda", "auto", "--penalty", "l2"]):
        p = run("life", "fit", d, "--quiet", "--out", os.path.join(tmp, "bad.npy"), *bad, expect=2)
        check(not os.path.exists(os.path.join(tmp, "bad.npy")), bad)

harness.finish("test_life_cli")
