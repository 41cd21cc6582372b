#!/usr/bin/env python3
"""life cohort on a small synthetic derivatives folder (life synth --cohort 3: two phantom subjects,
one with two sessions, and the bundled real case), one session with a broken .bval:
- an uninterrupted run (--jobs 2) finishes the others, reports the broken one naming its file and
  exits 1; its outputs are checked against life build/fit/report run by hand on one subject and
  against the input (one weight per input streamline, the pruned tractogram's count, the RMSE map's
  voxels equal to the report's CSV, read from the NIfTI bytes);
- a run (--jobs 1) stopped by SIGTERM after its first subject leaves that subject complete and no
  temporaries; run again, it does not touch that subject (same inode and mtime) and ends with the
  same bytes as the uninterrupted run (timings aside);
- discovery: two DWIs that both match are refused naming them; --participant-label selects.
No numpy: files are compared as bytes, NIfTI and NPY read with gzip and struct."""
import gzip
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

exe = sys.argv[1]
harness = Harness(exe)
check, run = harness.check, harness.run
tmp = tempfile.mkdtemp(prefix="ns_life_cohort_")


def t(*p):
    return os.path.join(tmp, *p)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def npy_f8(path):
    data = read(path)
    hlen = struct.unpack("<H", data[8:10])[0]
    check(b"'<f8'" in data[10:10 + hlen], f"{path}: not float64")
    body = data[10 + hlen:]
    return list(struct.unpack(f"<{len(body) // 8}d", body))


def nifti_f4(path):
    """(dims, values) of a float32 NIfTI-1 (gzip)."""
    data = gzip.decompress(read(path))
    check(struct.unpack("<i", data[:4])[0] == 348, f"{path}: not NIfTI-1")
    dims = struct.unpack("<8h", data[40:56])
    check(struct.unpack("<h", data[70:72])[0] == 16, f"{path}: not float32")
    off = int(struct.unpack("<f", data[108:112])[0])
    n = dims[1] * dims[2] * dims[3]
    return dims, struct.unpack(f"<{n}f", data[off:off + 4 * n])


def tck_count(path):
    head = read(path)[:4096].decode("latin-1")
    for line in head.splitlines():
        if line.startswith("count:"):
            return int(line.split(":")[1])
    return -1


def outputs(root):
    """Every file under root (relative path -> bytes), without the logs."""
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root)
            if not rel.startswith("logs"):
                files[rel] = read(os.path.join(d, n))
    return files


def untimed(rel, data):
    """The bytes without what depends on the run's time: sidecar timings, the TSVs' *_s columns."""
    if rel.endswith("streamlineweights.json"):
        s = data.decode()
        return s[:s.index('"Timings"')]
    if rel.endswith(".tsv"):
        rows = [r.split("\t") for r in data.decode().splitlines()]
        keep = [i for i, c in enumerate(rows[0]) if not c.endswith("_s")]
        return "\n".join("\t".join(r[i] for i in keep) for r in rows)
    return data


ENV = dict(os.environ, OMP_WAIT_POLICY="passive")
OPTS = ["--threads", "1", "--no-plot", "--backend", "cpu", "--L", "60"]
deriv = t("deriv")
p = run("life", "synth", deriv, "--cohort", "3", "--streamlines", "300", "--grid", "24")
units = ["sub-01", "sub-02_ses-1", "sub-02_ses-2", "sub-03"]
dwi_dir = {"sub-01": "sub-01/dwi", "sub-02_ses-1": "sub-02/ses-1/dwi", "sub-02_ses-2": "sub-02/ses-2/dwi",
           "sub-03": "sub-03/dwi"}
check(all(os.path.isdir(os.path.join(deriv, d)) for d in dwi_dir.values()), f"synth --cohort: {p.stdout}")
check("real case" in p.stdout and os.path.exists(t("deriv", "sub-03", "dwi",
                                                     "sub-03_space-orig_model-eudx_streamlines.trk")),
      "the last subject is the bundled real case")
bad_bval = t("deriv", "sub-02", "ses-2", "dwi", "sub-02_ses-2_space-orig_desc-preproc_dwi.bval")
with open(bad_bval, "w") as f:
    f.write("0 0 2000 20x0\n")

# the uninterrupted run, two subjects at a time
ref = t("ref")
p = subprocess.run([exe, "life", "cohort", deriv, "--out", ref, "--jobs", "2", *OPTS], capture_output=True, text=True,
                   env=ENV)
check(p.returncode == 1, f"a failed subject: exit {p.returncode}: {p.stderr}")
check("sub-02_ses-2: failed" in p.stderr and bad_bval in p.stderr and "20x0" in p.stderr,
      f"the failure names the subject, the file and the value: {p.stderr!r}")
check("3 of 4 subjects done" in p.stdout, p.stdout)
rows = [r.split("\t") for r in read(os.path.join(ref, "life_cohort.tsv")).decode().splitlines()]
col = {c: i for i, c in enumerate(rows[0])}
status = {(r[0] + ("_" + r[1] if r[1] != "n/a" else "")): r[col["status"]] for r in rows[1:]}
check(status == {"sub-01": "done", "sub-02_ses-1": "done", "sub-02_ses-2": "failed", "sub-03": "done"}, str(status))
check(any(bad_bval in r[col["error"]] for r in rows[1:]), "the table has the error")
dd = read(os.path.join(ref, "dataset_description.json")).decode()
check('"DatasetType":"derivative"' in dd and '"GeneratedBy":[{"Name":"neurosolve"' in dd, dd)
check(os.path.exists(os.path.join(ref, "life_cohort.json")), "the table's sidecar")
check(not any(".partial" in n for _, ds, fs in os.walk(ref) for n in ds + fs), "temporaries left")

# sub-01 by hand: the same commands, the same weights; the outputs against the inputs
d = os.path.join(deriv, "sub-01", "dwi")
stem = os.path.join(d, "sub-01_space-orig_desc-preproc_dwi")
tck = os.path.join(d, "sub-01_space-orig_model-phantom_streamlines.tck")
run("life", "build", "--dwi", stem + ".nii", "--bvals", stem + ".bval", "--bvecs", stem + ".bvec", "--tracks", tck,
    "--out", t("m1"), "--threads", "1", "--L", "60", "--quiet")
run("life", "fit", t("m1"), "--out", t("w1.npy"), "--threads", "1", "--backend", "cpu", "--quiet")
run("life", "report", t("m1"), t("w1.npy"), "--csv", t("r1.csv"))
o = os.path.join(ref, "sub-01", "dwi", "sub-01_space-orig_model-life_")
w_cohort = npy_f8(o + "streamlineweights.npy")
w_hand = npy_f8(t("w1.npy"))
n_in = tck_count(tck)
check(len(w_cohort) == n_in == 225, f"one weight per input streamline: {len(w_cohort)}, {n_in}")
check(w_cohort == w_hand, "the weights are life fit's (every phantom streamline is a fiber)")
txt = [float(x) for x in read(o + "streamlineweights.txt").decode().split("\n")[1:] if x]
check(txt == w_cohort, "the text weights equal the NPY's")
kept = sum(w > 0 for w in w_hand)
check(tck_count(o + "desc-pruned_streamlines.tck") == kept, f"pruned count {kept}")
dims, after = nifti_f4(o + "param-rmse_dwimap.nii.gz")
_, before = nifti_f4(o + "param-signalrms_dwimap.nii.gz")
check(dims[0] == 3 and dims[1:4] == (24, 24, 24), f"a 3-D map on the DWI's grid: {dims}")
lines = read(t("r1.csv")).decode().splitlines()[1:]
worst = 0.0
for line in lines:
    v, i, j, k, s0, b, a, _ = line.split(",")
    x = int(i) + 24 * (int(j) + 24 * int(k))
    worst = max(worst, abs(after[x] - float(a)) / float(a), abs(before[x] - float(b)) / float(b))
check(worst < 1e-6, f"RMSE maps equal the report's CSV (float32): {worst}")
check(sum(v != 0 for v in after) == len(lines), "0 outside the model's voxels")
side = read(o + "streamlineweights.json").decode()
check('"LambdaSource":"given"' in side and '"Backend":"cpu"' in side and '"Timings"' in side
      and '"build L":"60"' in side and tck in side, side)

# stopped by SIGTERM after the first subject, one at a time, then run again
out = t("out")
proc = subprocess.Popen([exe, "life", "cohort", deriv, "--out", out, "--jobs", "1", *OPTS],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
first = os.path.join(out, "sub-01", "dwi")
t0 = time.time()
while not os.path.isdir(first) and proc.poll() is None and time.time() - t0 < 60:
    time.sleep(0.005)
proc.send_signal(signal.SIGTERM)
_, err = proc.communicate(timeout=60)
check(proc.returncode == 1 and "interrupted (SIGTERM)" in err, f"exit {proc.returncode}: {err!r}")
done_then = [u for u in units if os.path.isdir(os.path.join(out, dwi_dir[u]))]
check("sub-01" in done_then and len(done_then) < 3, f"stopped mid-run: {done_then}")
check(not os.path.exists(os.path.join(out, "life_cohort.tsv")), "no group table for an interrupted run")
check(not any(".partial" in n for _, ds, fs in os.walk(out) for n in ds + fs), "temporaries left after SIGTERM")
stat_before = {n: os.stat(os.path.join(first, n)) for n in os.listdir(first)}
p = subprocess.run([exe, "life", "cohort", deriv, "--out", out, "--jobs", "1", *OPTS], capture_output=True, text=True,
                   env=ENV)
check(p.returncode == 1 and f"{len(done_then)} complete already" in p.stderr, f"{p.returncode}: {p.stderr!r}")
stat_after = {n: os.stat(os.path.join(first, n)) for n in os.listdir(first)}
check(all((stat_before[n].st_ino, stat_before[n].st_mtime_ns) == (stat_after[n].st_ino, stat_after[n].st_mtime_ns)
          for n in stat_before) and stat_before.keys() == stat_after.keys(), "the finished subject was touched")
a, b = outputs(ref), outputs(out)
check(sorted(a) == sorted(b), f"the same files: {sorted(set(a) ^ set(b))}")
diff = [n for n in a if n in b and untimed(n, a[n]) != untimed(n, b[n])]
check(not diff, f"killed and resumed differs from the uninterrupted run in {diff}")
check(not os.path.exists(os.path.join(out, ".work")), "work folders left")

# discovery: an ambiguous DWI is refused naming both; --participant-label picks subjects
amb = t("amb")
shutil.copytree(os.path.join(deriv, "sub-03"), os.path.join(amb, "sub-03"))
src = os.path.join(amb, "sub-03", "dwi", "sub-03_space-orig_desc-preproc_dwi")
for ext in (".nii.gz", ".bval", ".bvec"):
    shutil.copy(src + ext, src.replace("desc-preproc", "desc-other") + ext)
p = run("life", "cohort", amb, "--out", t("amb_out"), *OPTS, expect=1)
check("2 DWI images match" in p.stderr and "desc-other" in p.stderr and "--dwi-match" in p.stderr, p.stderr)
p = run("life", "cohort", amb, "--out", t("amb_out2"), "--dwi-match", "desc-preproc", *OPTS)
check("1 of 1 subjects done" in p.stdout, p.stdout)
p = run("life", "cohort", deriv, "--out", t("sel"), "--participant-label", "03", *OPTS)
check("1 of 1 subjects done" in p.stdout, p.stdout)
run("life", "cohort", deriv, "--out", t("x"), "--jobs", "0", expect=2)
run("life", "cohort", t("nothing"), "--out", t("x"), expect=1)

shutil.rmtree(tmp, ignore_errors=True)
harness.finish("life_cohort")
