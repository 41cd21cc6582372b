#!/usr/bin/env python3
"""The statistics that chose the third round of LiFE GPU kernels (bench/README.md, "LiFE GPU
products, third round"), from a model directory (`neurosolve life synth DIR --fibers 50000 --L 360`):

  - coefficients per distinct (tile, fiber) and (tile, atom) pair for tiles of consecutive voxels
    (what a warp could sum before its atomics on w, what a tile could reuse of the dictionary)
  - the singular values of the dictionary and the rank voxel-lr16d keeps (the smallest multiple of
    32 whose first discarded singular value is at most 2^-11 of the largest)
  - max-norm relative errors against the float64 products of the voxel-lr16d factored dictionary
    (U times C rounded to float16 as the engine rounds it) and of voxel-f16d's float16 dictionary,
    on half-zero random weights and a uniform random signal

numpy and scipy only; float64 products through scipy.sparse. Usage:
    python3 bench/life_gpu_design_stats.py MODEL_DIR [--tiles 1,4,16,64,256] [--seed 1]
"""
import argparse
import sys

import numpy as np


def half_round(x, scale_exp):
    """x * 2^(15 - e) rounded to float32 then float16 (nearest even), times 2^(e - 15)."""
    return (x * 2.0 ** (15 - scale_exp)).astype(np.float32).astype(np.float16).astype(np.float64) * 2.0 ** (
        scale_exp - 15)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--tiles", default="1,4,16,64,256")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    try:
        import scipy.sparse as sp
    except ImportError:
        print("needs scipy", file=sys.stderr)
        return 2
    d = a.model.rstrip("/") + "/"
    D = np.load(d + "dictionary.npy")
    atom = np.load(d + "phi_atom.npy").astype(np.int64)
    vox = np.load(d + "phi_voxel.npy").astype(np.int64)
    fib = np.load(d + "phi_fiber.npy").astype(np.int64)
    val = np.load(d + "phi_value.npy")
    nt, na = D.shape
    nv, nf, n = int(vox.max()) + 1, int(fib.max()) + 1, len(vox)
    print(f"{d}: n_theta {nt}, {na} atoms, {nv} voxels, {nf} fibers, {n} coefficients")

    print("tile (consecutive voxels) | coefficients per (tile, fiber) | per (tile, atom)")
    for t in (int(x) for x in a.tiles.split(",")):
        tile = vox // t
        kf = np.unique(tile * nf + fib).size
        ka = np.unique(tile * na + atom).size
        print(f"{t:>5} | {n / kf:.3f} | {n / ka:.4f}")

    lam, V = np.linalg.eigh(D @ D.T)
    order = np.argsort(lam)[::-1]
    lam, V = np.clip(lam[order], 0, None), V[:, order]
    sig = np.sqrt(lam) / np.sqrt(lam[0])
    tp = (nt + 31) // 32 * 32
    r = 32
    while r < tp and r < nt and sig[r] > 2.0 ** -11:
        r += 32
    print("singular values / largest:", ", ".join(f"{k}: {sig[k]:.2e}" for k in range(0, nt, 8)))
    print(f"voxel-lr16d keeps r = {r} of {nt} (first discarded {sig[r] if r < nt else 0:.2e})")

    U = V[:, :r]
    C = U.T @ D
    C16 = half_round(C, np.frexp(np.abs(C).max())[1])
    D16 = half_round(D, np.frexp(np.abs(D).max())[1])
    rng = np.random.default_rng(a.seed)
    w = rng.random(nf)
    w[rng.random(nf) < 0.5] = 0.0
    Y = rng.random((nt, nv)) - 0.5
    Z = sp.csc_matrix((val * w[fib], (atom, vox)), shape=(na, nv))

    def mw(Dx):
        return np.asarray((Z.T @ Dx.T).T)

    def mty(Dx):
        p = np.einsum("ij,ij->j", Dx[:, atom], Y[:, vox]) * val
        return np.bincount(fib, weights=p, minlength=nf)

    def rel(x, y):
        return np.abs(x - y).max() / np.abs(y).max()

    y0, w0 = mw(D), mty(D)
    for name, Dx in (("voxel-lr16d", U @ C16), ("truncation only", U @ C), ("voxel-f16d", D16)):
        print(f"{name:>16}: y = M w {rel(mw(Dx), y0):.2e}, w = M^T y {rel(mty(Dx), w0):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
