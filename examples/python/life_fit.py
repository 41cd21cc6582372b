"""LiFE on the bundled DIPY case (data/life): build the model from the diffusion
image, gradients and tractogram, fit the fiber weights, report the RMSE.

    python examples/python/life_fit.py [--backend auto] [--pruned pruned.trk] [--nibabel]

By default the C library reads the files itself (LifeModel.build). With
--nibabel the model is built from what a nibabel/DIPY user holds in memory
(the image object, the gradient arrays, the tractogram's streamlines:
LifeModel.build_arrays), checked equal to the model from the files, and the
pruned tractogram is written with nibabel from the streamlines kept."""
import argparse
import os

import numpy as np

import neurosolve as ns

LIFE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "life")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--pruned", default=None, help="write the kept streamlines here (.trk)")
    ap.add_argument("--nibabel", action="store_true", help="build from nibabel objects in memory")
    args = ap.parse_args()
    p = lambda f: os.path.join(LIFE, f)
    model = ns.LifeModel.build(p("small_25.nii.gz"), p("small_25.bval"), p("small_25.bvec"), p("EuDX_small_25.trk"))
    if args.nibabel:
        import nibabel as nib
        img = nib.load(p("small_25.nii.gz"))
        trk = nib.streamlines.load(p("EuDX_small_25.trk"))
        from_files = model
        model = ns.LifeModel.build_arrays(img, None, np.loadtxt(p("small_25.bval")), np.loadtxt(p("small_25.bvec")),
                                          trk.streamlines)
        same = all(np.array_equal(model.phi[k], from_files.phi[k]) for k in model.phi)
        print(f"built from nibabel objects: {'the same model as from the files' if same else 'A DIFFERENT MODEL'}")
        if not same:
            raise SystemExit(1)
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
    if args.pruned and args.nibabel:  # the streamlines kept, from memory, written by nibabel
        kept = trk.streamlines[model.streamline[w > 0]]
        nib.streamlines.save(nib.streamlines.Tractogram(kept, affine_to_rasmm=np.eye(4)), args.pruned,
                             header=trk.header)
        print(f"pruned tractogram: {args.pruned} ({len(kept)} streamlines)")
    elif args.pruned:
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
