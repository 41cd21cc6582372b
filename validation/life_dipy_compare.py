#!/usr/bin/env python3
"""neurosolve's LiFE (ENCODE's model) against DIPY's LiFE on the same data.

    python3 validation/life_dipy_compare.py NEUROSOLVE [--data data/life] [--out validation/results/life_dipy.txt]

Fits DIPY's FiberModel (dipy.tracking.life, pip install dipy) on small_25 with
the 60 EuDX streamlines, and neurosolve's `life build` + `life fit` on the same
files; compares per-voxel RMSE of the fitted signal (both in scanner units) and
the fiber weights, and prints where the two models differ (docs/life_data.md).

    python3 validation/life_dipy_compare.py --generate N OUT_DIR [--seed 1]

writes a synthetic diffusion image (int16, 96 x 96 x 60, 1 b0 + 30 directions)
with its bval/bvec and N synthetic streamlines as OUT_DIR/synth.tck, streaming
them in chunks (bounded memory), for the 1-million-streamline build run."""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np


def rmse_table(csv_path):
    rows = np.loadtxt(csv_path, delimiter=",", skiprows=1)
    return {tuple(int(x) for x in r[1:4]): (r[5], r[6]) for r in rows}


def compare(exe, data, out_path):
    import nibabel as nib
    from dipy.core.gradients import gradient_table
    from dipy.io.gradients import read_bvals_bvecs
    from dipy.io.stateful_tractogram import Space, StatefulTractogram
    import dipy.tracking.life as life

    dwi = os.path.join(data, "small_25.nii.gz")
    bval = os.path.join(data, "small_25.bval")
    bvec = os.path.join(data, "small_25.bvec")
    trk = os.path.join(data, "EuDX_small_25.trk")
    lines = []

    def say(s=""):
        print(s)
        lines.append(s)

    # ---- DIPY, as its test_life.py fits this case
    img = nib.load(dwi)
    data_arr = np.asarray(img.dataobj, dtype=float)
    bvals, bvecs = read_bvals_bvecs(bval, bvec)
    gtab = gradient_table(bvals, bvecs=bvecs)
    sl = nib.streamlines.load(trk).streamlines
    sft = StatefulTractogram(sl, img, Space.RASMM)
    sft.to_vox()
    streamlines = list(sft.streamlines)
    model = life.FiberModel(gtab)
    fit = model.fit(data_arr, streamlines, affine=np.eye(4))
    beta = np.asarray(fit.beta)
    vox = fit.vox_coords
    # residual in scanner units: DIPY fits the demeaned relative signal
    pred_rel = (fit.life_matrix @ beta).reshape(len(vox), -1)
    res = (fit.fit_data.reshape(len(vox), -1) - pred_rel) * fit.b0_signal[:, None]
    dipy_before = np.sqrt(((fit.fit_data.reshape(len(vox), -1) * fit.b0_signal[:, None]) ** 2).mean(axis=1))
    dipy_after = np.sqrt((res ** 2).mean(axis=1))

    # ---- neurosolve
    with tempfile.TemporaryDirectory() as tmp:
        m = os.path.join(tmp, "model")
        w = os.path.join(tmp, "w.npy")
        csv = os.path.join(tmp, "rmse.csv")
        subprocess.run([exe, "life", "build", "--dwi", dwi, "--bvals", bval, "--bvecs", bvec, "--tracks", trk,
                        "--out", m, "--quiet", "--nodes", "mean"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([exe, "life", "fit", m, "--out", w, "--backend", "cpu", "--quiet", "--iters", "500"],
                       check=True, stdout=subprocess.DEVNULL)
        rep = json.loads(subprocess.run([exe, "life", "report", m, w, "--csv", csv, "--json"], check=True,
                                        capture_output=True, text=True).stdout)
        ours = rmse_table(csv)
        wn = np.load(w)
        ours_fiber = np.load(os.path.join(m, "streamlines.npy"))
        # a tighter solve of the same model, for the solver's share of the difference
        w2 = os.path.join(tmp, "w2.npy")
        subprocess.run([exe, "life", "fit", m, "--out", w2, "--backend", "cpu", "--quiet", "--iters", "20000",
                        "--tolo", "0", "--tolg", "1e-9"], check=True, stdout=subprocess.DEVNULL)
        rep2 = json.loads(subprocess.run([exe, "life", "report", m, w2, "--json"], check=True, capture_output=True,
                                         text=True).stdout)

    say("# neurosolve LiFE (ENCODE's model) vs DIPY LiFE on small_25 + EuDX_small_25.trk (60 streamlines)")
    say(f"dipy {__import__('dipy').__version__}, nibabel {nib.__version__}, numpy {np.__version__}")
    dv = {tuple(int(x) for x in v): i for i, v in enumerate(vox)}
    common = sorted(set(dv) & set(ours))
    say(f"voxels: DIPY {len(dv)}, neurosolve {len(ours)}, common {len(common)}")
    b_d = np.array([dipy_before[dv[v]] for v in common])
    b_n = np.array([ours[v][0] for v in common])
    a_d = np.array([dipy_after[dv[v]] for v in common])
    a_n = np.array([ours[v][1] for v in common])
    say(f"RMSE before (demeaned signal, scanner units): max |DIPY - neurosolve| = {np.abs(b_d - b_n).max():.3g} "
        f"(the same data term; DIPY's is S0 x demeaned relative signal)")
    say(f"RMSE after, median: DIPY {np.median(a_d):.4g}, neurosolve {np.median(a_n):.4g} "
        f"(before: {np.median(b_n):.4g})")
    say(f"RMSE after, mean:   DIPY {a_d.mean():.4g}, neurosolve {a_n.mean():.4g}")
    say(f"per-voxel RMSE after: correlation {np.corrcoef(a_d, a_n)[0, 1]:.3f}, "
        f"median |difference| {np.median(np.abs(a_d - a_n)):.3g}, "
        f"neurosolve lower in {int((a_n < a_d).sum())} of {len(common)} voxels")
    say(f"neurosolve relative residual {rep['relative_residual']:.4f} after {500} iterations max "
        f"(tight solve: {rep2['relative_residual']:.4f})")
    bd = np.zeros(len(wn))
    bd[:] = beta[ours_fiber]
    nz_d, nz_n = bd > 0, wn > 0
    say(f"fibers kept: DIPY {int(nz_d.sum())} of {len(bd)}, neurosolve {int(nz_n.sum())} of {len(wn)}, "
        f"both {int((nz_d & nz_n).sum())}")
    rank = lambda x: np.argsort(np.argsort(x))
    say(f"fiber weights: Pearson {np.corrcoef(bd, wn)[0, 1]:.3f}, Spearman {np.corrcoef(rank(bd), rank(wn))[0, 1]:.3f} "
        f"(the weights are on different scales: DIPY's columns sum nodes, ENCODE's average them and carry S0)")
    if out_path:
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        with open(out_path, "w") as f:
            f.write("\n".join(lines) + "\n")


# --------------------------------------------------------------- generator
def write_nifti_int16(path, vol, affine):
    h = bytearray(352)
    struct.pack_into("<i", h, 0, 348)
    struct.pack_into("<8h", h, 40, 4, *vol.shape, 1, 1, 1)
    struct.pack_into("<hh", h, 70, 4, 16)
    struct.pack_into("<8f", h, 76, 1, affine[0, 0], affine[1, 1], affine[2, 2], 1, 0, 0, 0)
    struct.pack_into("<f", h, 108, 352)
    struct.pack_into("<f", h, 112, 1.0)
    struct.pack_into("<h", h, 254, 1)
    struct.pack_into("<12f", h, 280, *affine[:3].ravel())
    h[344:348] = b"n+1\0"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(bytes(h))
        f.write(np.asarray(vol, "<i2").tobytes(order="F"))


def generate(n, out, seed):
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    shape = (96, 96, 60)
    nd = 30
    g = rng.normal(size=(nd, 3))
    g /= np.linalg.norm(g, axis=1)[:, None]
    bvals = np.r_[0, np.full(nd, 1000.0)]
    bvecs = np.vstack([[0, 0, 0], g])
    np.savetxt(os.path.join(out, "synth.bval"), bvals[None], fmt="%g")
    np.savetxt(os.path.join(out, "synth.bvec"), bvecs.T, fmt="%.6f")
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    affine[:3, 3] = [-96, -120, -60]
    vol = np.empty(shape + (nd + 1,), np.int16)
    base = rng.uniform(800, 1200, size=shape)
    vol[..., 0] = base
    for t in range(nd):
        vol[..., t + 1] = base * rng.uniform(0.2, 0.6, size=shape)
    write_nifti_int16(os.path.join(out, "synth.nii.gz"), vol, affine)
    del vol
    # streamlines: 40 nodes, 0.5-voxel steps, smooth random turns, inside the grid
    npts, chunk = 40, 50000
    path = os.path.join(out, "synth.tck")
    head = f"mrtrix tracks\ndatatype: Float32LE\ncount: {n}\nfile: . 128\nEND\n".encode()
    lo, hi = np.array([3, 3, 3]), np.array(shape) - 4
    with open(path, "wb") as f:
        f.write(head.ljust(128, b"\0"))
        done = 0
        while done < n:
            k = min(chunk, n - done)
            p = rng.uniform(lo + 10, hi - 10, size=(k, 3))
            d = rng.normal(size=(k, 3))
            d /= np.linalg.norm(d, axis=1)[:, None]
            pts = np.empty((k, npts, 3))
            for i in range(npts):
                pts[:, i] = p
                d += rng.normal(scale=0.1, size=(k, 3))
                d /= np.linalg.norm(d, axis=1)[:, None]
                p = np.clip(p + 0.5 * d, lo, hi)
            world = pts * 2.0 + affine[:3, 3]
            rec = np.concatenate([world, np.full((k, 1, 3), np.nan)], axis=1).astype("<f4")
            f.write(rec.tobytes())
            done += k
        f.write(np.full(3, np.inf, "<f4").tobytes())
    print(f"{out}: synth.nii.gz {shape + (nd + 1,)}, synth.bval/.bvec, synth.tck with {n} streamlines of {npts} "
          f"points ({os.path.getsize(path) / 1e6:.0f} MB)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("exe", nargs="?")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "data", "life"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "life_dipy.txt"))
    ap.add_argument("--generate", nargs=2, metavar=("N", "OUT_DIR"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.generate:
        generate(int(a.generate[0]), a.generate[1], a.seed)
    elif a.exe:
        compare(a.exe, a.data, a.out)
    else:
        ap.print_help()
        sys.exit(2)
