#!/usr/bin/env python3
"""Writes the TRX test data of tests/test_life_trx.c with numpy and zipfile only
(no trx-python): the same 17 streamlines as an MRtrix .tck (the expectation,
read by the project's own .tck reader) and as TRX in every dtype and layout
the reader takes, plus broken variants. Coordinates are multiples of 1/8 in
[-120, 120]: exact in float16, so every dtype holds the same values.

    python3 tests/data/trx/make_trx.py tests/data/trx
"""
import json
import os
import sys
import zipfile

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(21)
lengths = [1, 2, 3, 30, 7, 5, 12, 1, 9, 4, 16, 2, 8, 25, 3, 6, 11]
streamlines = [rng.integers(-960, 961, size=(n, 3)) / 8.0 for n in lengths]
positions = np.concatenate(streamlines)
offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.uint64)
affine = [[2.0, 0, 0, -90.0], [0, 2.0, 0, -126.0], [0, 0, 2.0, -72.0], [0, 0, 0, 1.0]]
header = {"VOXEL_TO_RASMM": affine, "DIMENSIONS": [91, 109, 91],
          "NB_STREAMLINES": len(lengths), "NB_VERTICES": int(positions.shape[0])}
dps = (np.arange(len(lengths)) * 0.5 + 1).astype(np.float32)        # one weight per streamline
dpv = np.arange(positions.shape[0], dtype=np.uint16).reshape(-1, 1)  # vertex number

# the expectation: MRtrix .tck, float32 little-endian, NaN after each streamline, Inf at the end
body = b"".join(s.astype("<f4").tobytes() + np.full(3, np.nan, "<f4").tobytes() for s in streamlines)
body += np.full(3, np.inf, "<f4").tobytes()
head = "mrtrix tracks\ndatatype: Float32LE\ncount: %d\nfile: . %%d\nEND\n" % len(lengths)
off = len(head % 0) + 2
while len(head % off) != off - 2:
    off += 1
with open(os.path.join(out, "streamlines.tck"), "wb") as f:
    f.write((head % off).encode() + b"\0\0" + body)


def arrays(pos_dtype, off_dtype, sentinel=True, hdr=None):
    o = offsets if sentinel else offsets[:-1]
    return {"header.json": json.dumps(hdr or header).encode(),
            "positions.3.%s" % pos_dtype: positions.astype("<" + np.dtype(pos_dtype).str[1:]).tobytes(),
            "offsets.%s" % off_dtype: o.astype("<" + np.dtype(off_dtype).str[1:]).tobytes(),
            "dps/weight.float32": dps.tobytes(), "dpv/index.uint16": dpv.astype("<u2").tobytes()}


def write_zip(name, files, method=zipfile.ZIP_STORED):
    with zipfile.ZipFile(os.path.join(out, name), "w", method) as z:
        for k, v in files.items():
            z.writestr(k, v)


write_zip("f16_u32_stored.trx", arrays("float16", "uint32"))
write_zip("f32_u64_deflate.trx", arrays("float32", "uint64"), zipfile.ZIP_DEFLATED)
write_zip("f64_u64_nosentinel.trx", arrays("float64", "uint64", sentinel=False))  # the spec's NB_STREAMLINES offsets
folder = os.path.join(out, "f32_folder")
for k, v in arrays("float32", "uint32").items():
    os.makedirs(os.path.dirname(os.path.join(folder, k)), exist_ok=True)
    with open(os.path.join(folder, k), "wb") as f:
        f.write(v)
# broken variants
bad = arrays("float32", "uint64")
bad["positions.3.int32"] = bad.pop("positions.3.float32")
write_zip("bad_dtype.trx", bad)
bad = arrays("float32", "uint64")
o = offsets.copy()
o[5] = positions.shape[0] + 3
bad["offsets.uint64"] = o.astype("<u8").tobytes()
write_zip("bad_offsets.trx", bad)
bad = arrays("float32", "uint64", hdr=dict(header, NB_VERTICES=header["NB_VERTICES"] + 1))
write_zip("bad_count.trx", bad)
