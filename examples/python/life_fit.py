"""LiFE on the bundled DIPY case (data/life): build the model from the diffusion
image, gradients and tractogram, fit the fiber weights, report the RMSE.

    python examples/python/life_fit.py [--backend auto] [--pruned pruned.trk]

With nibabel installed, the image and the tractograms are also read with
nibabel and compared with the model (the C library reads the files itself)."""
import argparse
import os

import numpy as np

import neurosolve as ns

LIFE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "life")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--pruned", default=None, help="write the kept streamlines here (.trk)")
    args = ap.parse_args()
    p = lambda f: os.path.join(LIFE, f)
    model = ns.LifeModel.build(p("small_25.nii.gz"), p("small_25.bval"), p("small_25.bvec"), p("EuDX_small_25.trk"))
    print(f"model: {model.n_voxels} voxels, {model.n_fibers} fibers, {model.n_coeffs} coefficients, "
          f"{model.n_theta} directions")
    engine = ns.LifeEngine(model, backend=args.backend)
    w, res = engine.fit()
    before, after = ns.life_rmse(model, w, engine)
    print(f"SBBNNLS on {engine.backend}: {res['updates']} updates ({res['stop']}), objective "
          f"{res['history'][0]:.6g} -> {res['objective']:.6g}")
    print(f"fibers kept: {int((w > 0).sum())} of {model.n_fibers}")
    print(f"RMSE per voxel: median {np.median(before):.2f} -> {np.median(after):.2f}, "
          f"mean {before.mean():.2f} -> {after.mean():.2f}")
    if args.pruned:
        n = model.write_pruned(args.pruned, w)
        print(f"pruned tractogram: {args.pruned} ({n} streamlines)")
    try:
        import nibabel as nib
    except ImportError:
        return
    # The same files through nibabel: the image grid and the tractograms agree with the model.
    img = nib.load(p("small_25.nii.gz"))
    trk = nib.streamlines.load(p("EuDX_small_25.trk"))
    ijk = model.voxel_ijk
    assert (ijk >= 0).all() and (ijk < np.array(img.shape[:3])).all()
    print(f"nibabel: image {img.shape}, {len(trk.streamlines)} streamlines (model: {model.n_streamlines})")
    if args.pruned:
        kept = nib.streamlines.load(args.pruned)
        print(f"nibabel reads the pruned tractogram: {len(kept.streamlines)} streamlines")


if __name__ == "__main__":
    main()
