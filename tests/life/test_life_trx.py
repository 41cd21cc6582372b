#!/usr/bin/env python3
"""The TRX subsets written by test_life_trx (src/life/trx.c's writer): a valid
ZIP per Python's zipfile (CRCs checked), the arrays trx-python expects
(header.json counts, positions.3.<dtype> of the input's dtype, offsets.uint64
with NB_STREAMLINES + 1 entries, dps/dpv rows of the kept streamlines), equal
to the kept streamlines of the data make_trx.py wrote; and, when trx-python is
installed, loaded by trx-python itself.

usage: test_life_trx.py TEST_LIFE_TRX_BINARY DATA_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import zipfile

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed")
    sys.exit(77)

binary, data = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("CHECK failed:", what)


def folder_arrays(folder):
    """The input streamlines, from the folder form (numpy only)."""
    with open(os.path.join(folder, "header.json")) as f:
        h = json.load(f)
    pos = np.fromfile(os.path.join(folder, "positions.3.float32"), "<f4").reshape(-1, 3)
    off = np.fromfile(os.path.join(folder, "offsets.uint32"), "<u4").astype(np.int64)
    dps = np.fromfile(os.path.join(folder, "dps", "weight.float32"), "<f4")
    dpv = np.fromfile(os.path.join(folder, "dpv", "index.uint16"), "<u2")
    return h, pos, off, dps, dpv


try:
    from trx.trx_file_memmap import load, save
except ImportError:
    load = save = None
    print("trx-python is not installed: files it writes and its load of the subsets are not checked")

with tempfile.TemporaryDirectory() as tmp:
    extra = []
    if save is not None:  # trx-python's own output, read by test_life_trx against the .tck
        for src, dst, comp in (("f16_u32_stored.trx", "py_f16.trx", None),
                               ("f32_u64_deflate.trx", "py_f32_deflate.trx", zipfile.ZIP_DEFLATED)):
            t = load(os.path.join(data, src))
            save(t, os.path.join(tmp, dst), compression_standard=comp) if comp else save(t, os.path.join(tmp, dst))
            t.close()
            extra.append(os.path.join(tmp, dst))
    r = subprocess.run([binary, tmp] + extra, capture_output=True, text=True)
    print(r.stdout[-2000:], r.stderr[-2000:])
    check(r.returncode == 0, "test_life_trx with a keep folder passed")
    h, pos, off, dps, dpv = folder_arrays(os.path.join(data, "f32_folder"))
    n = h["NB_STREAMLINES"]
    keep = np.array([i % 3 != 1 for i in range(n)])  # as test_life_trx.c
    for name, dtype in (("sub_f16.trx", "float16"), ("sub_f32.trx", "float32")):
        path = os.path.join(tmp, name)
        with zipfile.ZipFile(path) as z:
            check(z.testzip() is None, f"{name}: CRCs")
            names = set(z.namelist())
            hh = json.loads(z.read("header.json"))
            p = np.frombuffer(z.read(f"positions.3.{dtype}"), "<" + np.dtype(dtype).str[1:]).reshape(-1, 3)
            o = np.frombuffer(z.read("offsets.uint64"), "<u8").astype(np.int64)
        check(hh["NB_STREAMLINES"] == keep.sum(), f"{name}: NB_STREAMLINES {hh['NB_STREAMLINES']}")
        check(hh["NB_VERTICES"] == p.shape[0], f"{name}: NB_VERTICES {hh['NB_VERTICES']} vs {p.shape[0]}")
        check(len(o) == keep.sum() + 1 and o[0] == 0 and o[-1] == p.shape[0], f"{name}: offsets {o}")
        check(hh["VOXEL_TO_RASMM"] == h["VOXEL_TO_RASMM"] and hh["DIMENSIONS"] == h["DIMENSIONS"], f"{name}: header")
        want = [pos[off[i]:off[i + 1]] for i in range(n) if keep[i]]
        got = [p[o[j]:o[j + 1]].astype(np.float64) for j in range(len(o) - 1)]
        check(len(want) == len(got) and all(np.array_equal(a, b) for a, b in zip(want, got)),
              f"{name}: positions equal the kept input streamlines")
        if True:  # both inputs carry dps/weight and dpv/index (make_trx.py)
            with zipfile.ZipFile(path) as z:
                d = np.frombuffer(z.read("dps/weight.float32"), "<f4")
                v = np.frombuffer(z.read("dpv/index.uint16"), "<u2")
            check(np.array_equal(d, dps[keep]), f"{name}: dps rows of the kept streamlines")
            wantv = np.concatenate([dpv[off[i]:off[i + 1]] for i in range(n) if keep[i]])
            check(np.array_equal(v, wantv), f"{name}: dpv rows of the kept vertices")
        check(not any(x.startswith(("groups/", "dpg/")) for x in names), f"{name}: no groups/dpg")
    if load is not None:
        for name in ("sub_f16.trx", "sub_f32.trx"):
            t = load(os.path.join(tmp, name))
            want = [pos[off[i]:off[i + 1]] for i in range(n) if keep[i]]
            got = [np.asarray(s, dtype=np.float64) for s in t.streamlines]
            check(len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(want, got)),
                  f"{name}: trx-python reads the kept streamlines")
            check(np.array_equal(np.asarray(t.data_per_streamline["weight"]).ravel(), dps[keep]),
                  f"{name}: trx-python dps")
            t.close()
        print("trx-python loaded both subsets")

print("test_life_trx.py:", "FAILED" if failures else "all checks passed")
sys.exit(1 if failures else 0)
