#!/usr/bin/env python3
"""Ground-truth phantom for LiFE pruning quality and the DIPY comparison (issue 21).

    python3 bench/life_phantom.py OUT_DIR [--streamlines 10000] [--false 0.3] [--snr 20] [--seed 1]

Writes OUT_DIR/dwi.nii (float32, 48^3 voxels of 2 mm), dwi.bval/dwi.bvec (2 b=0 + 30 directions at
b = 2000 s/mm^2), tracks.tck (world mm), labels.npy (1 = true, 0 = false, per streamline) and kinds.npy (0 true,
1 bridge, 2 random curve).

- True streamlines: 12 bundles, each a smooth cubic Bezier core through the brain sphere (radius 22
  voxels) with streamlines at fixed offsets inside a 2.5-voxel radius (plus 0.15-voxel jitter per node);
  each true streamline carries one unit of fiber cross-section.
- Signal: per voxel the sum over true nodes of a zeppelin (axial 1.7, radial 0.3 um^2/ms: *not* the
  LiFE stick kernel, as in tissue) along the node's tangent, scaled to an intra-axonal fraction of
  at most 0.7 of S0 = 1000, the rest a ball of 0.9 um^2/ms (tissue) inside the sphere and CSF
  (3.0 um^2/ms) outside; Rician noise with sd S0 / snr on each volume.
- False streamlines (the errors tractography makes), half of each kind: (a) "bridges" that follow
  one bundle's core for a stretch and jump to another bundle's (wrong connection), (b) smooth random
  curves through the brain that cross bundles at arbitrary angles.
"""
import argparse
import os
import struct

import numpy as np

N = 48
VOX = 2.0
B = 2000.0


def directions(n):
    i = np.arange(n) + 0.5
    z = 1 - i / n
    r = np.sqrt(1 - z * z)
    t = np.pi * (3 - np.sqrt(5)) * np.arange(n)
    return np.stack([r * np.cos(t), r * np.sin(t), z], 1)


def bezier(P, t):
    t = t[:, None]
    return ((1 - t) ** 3) * P[0] + 3 * ((1 - t) ** 2) * t * P[1] + 3 * (1 - t) * t * t * P[2] + t ** 3 * P[3]


def resample(c, step=1.0):
    d = np.r_[0, np.cumsum(np.linalg.norm(np.diff(c, axis=0), axis=1))]
    s = np.arange(0, d[-1], step)
    return np.stack([np.interp(s, d, c[:, k]) for k in range(3)], 1)


def inside(p, c, R):
    return np.linalg.norm(p - c, axis=-1) < R


def clip_inside(p, c, R):
    ok = inside(p, c, R)
    if not ok.any():
        return p[:0]
    i = np.argmax(ok)
    j = i
    while j < len(p) and ok[j]:
        j += 1
    return p[i:j]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--streamlines", type=int, default=10000)
    ap.add_argument("--false", type=float, default=0.3)
    ap.add_argument("--snr", type=float, default=20.0)
    ap.add_argument("--bundles", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    os.makedirs(a.out, exist_ok=True)
    c = np.full(3, (N - 1) / 2)
    R = 22.0
    # bundle cores: endpoints on the sphere, control points inside
    cores = []
    while len(cores) < a.bundles:
        u = rng.normal(size=(2, 3))
        u /= np.linalg.norm(u, axis=1)[:, None]
        if u[0] @ u[1] > -0.2:  # long bundles
            continue
        P = np.stack([c + 0.95 * R * u[0], c + rng.uniform(-0.5, 0.5, 3) * R, c + rng.uniform(-0.5, 0.5, 3) * R,
                      c + 0.95 * R * u[1]])
        core = clip_inside(resample(bezier(P, np.linspace(0, 1, 400)), 0.5), c, R)
        if len(core) > 40:
            cores.append(core)
    n_true = int(round(a.streamlines * (1 - a.false)))
    n_false = a.streamlines - n_true
    streamlines, labels, kinds = [], [], []
    for s in range(n_true):
        core = cores[s % len(cores)]
        t = np.gradient(core, axis=0)
        t /= np.linalg.norm(t, axis=1)[:, None]
        ref = np.cross(t, [0.3, 0.5, 0.8])
        ref /= np.linalg.norm(ref, axis=1)[:, None]
        ref2 = np.cross(t, ref)
        rr, ang = 2.5 * np.sqrt(rng.uniform()), rng.uniform(0, 2 * np.pi)
        p = core + rr * (np.cos(ang) * ref + np.sin(ang) * ref2) + 0.15 * rng.normal(size=core.shape)
        p = clip_inside(p, c, R - 0.5)
        streamlines.append(p if len(p) >= 8 else clip_inside(core, c, R - 0.5))
        labels.append(1)
        kinds.append(0)
    for s in range(n_false):
        if s % 2 == 0:  # bridge: part of one core, then another core from its nearest point
            A, Bc = rng.choice(len(cores), 2, replace=False)
            ca, cb = cores[A], cores[Bc]
            i = rng.integers(len(ca) // 4, 3 * len(ca) // 4)
            j = np.argmin(np.linalg.norm(cb - ca[i], axis=1))
            dirb = rng.integers(2)
            part_b = cb[j:] if dirb else cb[:j + 1][::-1]
            p = np.vstack([ca[:i + 1], resample(np.stack([ca[i], part_b[0]]), 0.5), part_b])
            p = resample(p, 0.5) + rng.normal(scale=1.0, size=3) + 0.15 * rng.normal(size=(len(resample(p, 0.5)), 3))
        else:  # smooth random curve across the brain
            u = rng.normal(size=(2, 3))
            u /= np.linalg.norm(u, axis=1)[:, None]
            P = np.stack([c + 0.95 * R * u[0], c + rng.uniform(-0.6, 0.6, 3) * R, c + rng.uniform(-0.6, 0.6, 3) * R,
                          c + 0.95 * R * u[1]])
            p = resample(bezier(P, np.linspace(0, 1, 400)), 0.5) + 0.15 * rng.normal(size=(1, 3))
        p = clip_inside(p, c, R - 0.5)
        if len(p) < 8:
            p = clip_inside(resample(bezier(np.stack([c - 10, c - 3, c + 3, c + 10]), np.linspace(0, 1, 50)), 0.5), c, R)
        streamlines.append(p)
        labels.append(0)
        kinds.append(1 if s % 2 == 0 else 2)
    order = rng.permutation(len(streamlines))
    streamlines = [streamlines[i] for i in order]
    labels = np.array(labels, np.int8)[order]
    kinds = np.array(kinds, np.int8)[order]

    g = directions(30)
    bvals = np.r_[0, 0, np.full(30, B)]
    bvecs = np.vstack([[0, 0, 0], [0, 0, 0], g])
    # fiber signal from the true streamlines' nodes
    S0 = 1000.0
    acc = np.zeros((N ** 3, 30))
    dens = np.zeros(N ** 3)
    for s, lab in zip(streamlines, labels):
        if not lab:
            continue
        t = np.gradient(s, axis=0)
        t /= np.linalg.norm(t, axis=1)[:, None]
        idx = np.clip(np.rint(s).astype(int), 0, N - 1)
        lin = idx[:, 0] + N * (idx[:, 1] + N * idx[:, 2])
        cc = (t @ g.T) ** 2
        sig = np.exp(-B * 1e-3 * (1.7 * cc + 0.3 * (1 - cc)))
        np.add.at(acc, lin, sig)
        np.add.at(dens, lin, 1.0)
    dmax = np.percentile(dens[dens > 0], 95) if (dens > 0).any() else 1.0
    f_in = 0.7 * np.minimum(dens / dmax, 1.0)
    shape_fib = np.where(dens[:, None] > 0, acc / np.maximum(dens, 1)[:, None], 0)
    ii = np.indices((N, N, N)).reshape(3, -1)[::-1].T  # lin order: i fastest
    brain = inside(ii.astype(float), c, R)
    d_iso = np.where(brain, 0.9, 3.0)
    iso = np.exp(-B * 1e-3 * d_iso)[:, None]
    dw = S0 * (f_in[:, None] * shape_fib + (1 - f_in[:, None]) * iso)
    sig = np.hstack([np.full((N ** 3, 2), S0), dw])
    sd = S0 / a.snr
    sig = np.sqrt((sig + sd * rng.normal(size=sig.shape)) ** 2 + (sd * rng.normal(size=sig.shape)) ** 2)
    # NIfTI-1, float32, affine diag(2, 2, 2)
    hdr = bytearray(348)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, 4, N, N, N, 32, 1, 1, 1)
    struct.pack_into("<hh", hdr, 70, 16, 32)
    struct.pack_into("<8f", hdr, 76, 1, VOX, VOX, VOX, 1, 1, 1, 1)
    struct.pack_into("<f", hdr, 108, 352.0)
    struct.pack_into("<f", hdr, 112, 1.0)
    struct.pack_into("<h", hdr, 254, 2)  # sform_code
    struct.pack_into("<12f", hdr, 280, VOX, 0, 0, 0, 0, VOX, 0, 0, 0, 0, VOX, 0)
    hdr[344:348] = b"n+1\0"
    vol = sig.reshape(N, N, N, 32)  # lin = i + N (j + N k): C order (k, j, i)
    data = np.ascontiguousarray(vol.transpose(2, 1, 0, 3)).astype("<f4")  # -> (i, j, k, t) F order
    with open(os.path.join(a.out, "dwi.nii"), "wb") as f:
        f.write(bytes(hdr) + b"\0" * 4 + np.asfortranarray(data).tobytes(order="F"))
    np.savetxt(os.path.join(a.out, "dwi.bval"), bvals[None], fmt="%g")
    np.savetxt(os.path.join(a.out, "dwi.bvec"), bvecs.T, fmt="%.8f")
    with open(os.path.join(a.out, "tracks.tck"), "wb") as f:
        head = f"mrtrix tracks\ndatatype: Float32LE\ncount: {len(streamlines)}\nfile: . 128\nEND\n".encode()
        f.write(head.ljust(128, b"\0"))
        for s in streamlines:
            f.write(np.asarray(s * VOX, "<f4").tobytes() + np.full(3, np.nan, "<f4").tobytes())
        f.write(np.full(3, np.inf, "<f4").tobytes())
    np.save(os.path.join(a.out, "labels.npy"), labels)
    np.save(os.path.join(a.out, "kinds.npy"), kinds)  # 0 true, 1 bridge, 2 random curve
    print(f"{a.out}: {n_true} true + {n_false} false streamlines, {len(cores)} bundles, "
          f"{sum(len(s) for s in streamlines)} nodes, SNR {a.snr}")


if __name__ == "__main__":
    main()
