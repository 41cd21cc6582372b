"""The library's NIfTI, gradient and tractogram readers from Python
(read_nifti, read_gradients, read_streamlines) against nibabel and numpy on the
bundled files, the models built from what they return, and bad files."""
import gzip
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import LIFE, TEST_DATA

DWI, BVAL, BVEC, TRK = (os.path.join(LIFE, f) for f in
                        ("small_25.nii.gz", "small_25.bval", "small_25.bvec", "EuDX_small_25.trk"))
TRX = os.path.join(TEST_DATA, "trx")


def test_read_nifti_against_nibabel():
    nib = pytest.importorskip("nibabel")
    img = ns.read_nifti(DWI)
    ref = nib.load(DWI)
    assert img.shape == ref.shape == (10, 8, 2, 26) and img.datatype == "uint8"
    assert img.affine_source == "sform" and img.data.flags.f_contiguous and img.data.dtype == np.float64
    np.testing.assert_array_equal(img.data, ref.get_fdata())
    np.testing.assert_array_equal(img.affine, ref.affine)
    np.testing.assert_array_equal(img.pixdim[:4], ref.header["pixdim"][1:5])


def test_read_gradients_against_numpy():
    bvals, bvecs = ns.read_gradients(BVAL, BVEC)
    np.testing.assert_array_equal(bvals, np.loadtxt(BVAL))
    np.testing.assert_array_equal(bvecs, np.loadtxt(BVEC).T)  # FSL's 3 rows -> (n, 3)


def test_read_streamlines_against_nibabel():
    nib = pytest.importorskip("nibabel")
    sl = ns.read_streamlines(TRK)
    ref = nib.streamlines.load(TRK).streamlines
    assert len(sl) == len(ref) == 60 and sl.format == "trk" and sl.declared_count == 60
    assert sl.offsets[0] == 0 and sl.offsets[-1] == len(sl.points)
    for a, b in zip(sl, ref):
        # nibabel applies the .trk affine in float32; the library in float64
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(sl[-1], sl[59])
    with pytest.raises(IndexError):
        sl[60]


def test_read_tck_and_trx_agree():
    tck = ns.read_streamlines(os.path.join(TRX, "streamlines.tck"))
    assert tck.format == "tck" and len(tck) == 17
    for name in ("f32_u64_deflate.trx", "f64_u64_nosentinel.trx", "f16_u32_stored.trx"):
        trx = ns.read_streamlines(os.path.join(TRX, name))
        assert trx.format == "trx" and len(trx) == 17
        np.testing.assert_array_equal(trx.offsets, tck.offsets)
        tol = 0.05 if name.startswith("f16") else 1e-6  # float16 positions
        np.testing.assert_allclose(trx.points, tck.points, rtol=0, atol=tol)


def test_model_from_the_readers_equals_build():
    """read_nifti + read_gradients + read_streamlines into build_arrays: the model of
    LifeModel.build on the same files, array for array."""
    img = ns.read_nifti(DWI)
    bvals, bvecs = ns.read_gradients(BVAL, BVEC)
    model = ns.LifeModel.build_arrays(img, None, bvals, bvecs, ns.read_streamlines(TRK))
    ref = ns.LifeModel.build(DWI, BVAL, BVEC, TRK)
    for k in ("atom", "voxel", "fiber", "value"):
        np.testing.assert_array_equal(model.phi[k], ref.phi[k])
    np.testing.assert_array_equal(model.signal, ref.signal)
    np.testing.assert_array_equal(model.dictionary, ref.dictionary)


def test_bad_files(tmp_path):
    missing = str(tmp_path / "missing.nii.gz")
    with pytest.raises(ns.IOError, match="missing.nii.gz"):
        ns.read_nifti(missing)
    cut = tmp_path / "cut.nii.gz"
    raw = gzip.decompress(open(DWI, "rb").read())
    cut.write_bytes(gzip.compress(raw[:1000]))
    with pytest.raises(ns.Error, match="cut.nii.gz"):
        ns.read_nifti(str(cut))
    text = tmp_path / "text.nii"
    text.write_text("not an image\n" * 40)
    with pytest.raises(ns.Error, match="text.nii"):
        ns.read_nifti(str(text))
    with pytest.raises(ns.Error, match="bad_offsets.trx"):
        ns.read_streamlines(os.path.join(TRX, "bad_offsets.trx"))
    with pytest.raises(ns.IOError, match="nothing.tck"):
        ns.read_streamlines(str(tmp_path / "nothing.tck"))
    bv = tmp_path / "b.bval"
    bv.write_text("0 1000 -5\n")
    bvec = tmp_path / "b.bvec"
    bvec.write_text("0 1 0\n0 0 1\n0 0 0\n")
    with pytest.raises(ns.ParseError, match="b.bval: b-value 2 = -5 is negative"):
        ns.read_gradients(str(bv), str(bvec))
