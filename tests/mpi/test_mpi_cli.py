"""The neurosolve command under mpirun (docs/mpi.md): the files and the
JSON of `simulate` and the check of `solve` are the same with 1, 2 and 4
processes as without mpirun; a failure on one rank (an unreadable file given
to rank 1 only, through mpirun's MPMD syntax) ends every rank with rank 1's
message; only rank 0 prints.
usage: test_mpi_cli.py NEUROSOLVE SOURCE_DIR MPIEXEC [MPIEXEC_FLAGS...]"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile

ns, src, mpiexec, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
env = dict(os.environ, OMP_NUM_THREADS="1")
failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)


def run(cmd, expect_rc=0):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    if expect_rc is not None and p.returncode != expect_rc:
        fail(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


morph = os.path.join(src, "data", "morphologies")
cells = [os.path.join(morph, m) for m in ("ca1_h10.swc", "dg_granule_1220882a.swc", "str_chin.swc")]
tmp = tempfile.mkdtemp()
sim = ["simulate", *cells, "--cells", "3", "--record-cells", "2", "--record", "soma", "--record", "c5",
       "--tstop", "15", "--no-progress", "--json"]
single = run([ns, *sim, "--out", os.path.join(tmp, "p1")])
ref = json.loads(single.stdout)
for np_ in (1, 2, 4):
    prefix = os.path.join(tmp, f"mpi{np_}")
    p = run([mpiexec, "-np", str(np_), *flags, ns, *sim, "--out", prefix])
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        fail(f"-np {np_}: expected one JSON line (rank 0 only), got {len(lines)}")
        continue
    got = json.loads(lines[0])
    for key in ("cells", "compartments", "steps", "spikes", "first_cells"):
        if got.get(key) != ref.get(key):
            fail(f"-np {np_}: {key} differs: {got.get(key)} vs {ref.get(key)}")
    for suffix in ("_traces.csv", "_traces.npy", "_spikes.csv"):
        if not filecmp.cmp(os.path.join(tmp, "p1" + suffix), prefix + suffix, shallow=False):
            fail(f"-np {np_}: {suffix} differs from the single-process file")
    if ref["spikes"] < 9:
        fail(f"too few spikes ({ref['spikes']}) for the comparison to mean much")

# a model (NMODL mechanisms: the built-in hh and pas with a distance gradient): the
# same files for 1 and 2 processes
model = os.path.join(tmp, "m.model")
with open(model, "w") as f:
    f.write("all.insert = hh\ndend.insert = pas\ndend.g_pas = 1e-4*(1 + d/300)\n")
msim = ["simulate", *cells[:2], "--cells", "3", "--record-cells", "3", "--model", model, "--tstop", "15",
        "--no-progress", "--json"]
run([ns, *msim, "--out", os.path.join(tmp, "m1")])
run([mpiexec, "-np", "2", *flags, ns, *msim, "--out", os.path.join(tmp, "m2")])
for suffix in ("_traces.csv", "_spikes.csv"):
    if not filecmp.cmp(os.path.join(tmp, "m1" + suffix), os.path.join(tmp, "m2" + suffix), shallow=False):
        fail(f"model -np 2: {suffix} differs from the single-process file")

solve = ["solve", "bundled", "--cells", "60", "--check", "--radii", "default:0.5", "--values", "cable", "--json"]
ref = json.loads(run([ns, *solve]).stdout)
for np_ in (2, 4):
    p = run([mpiexec, "-np", str(np_), *flags, ns, *solve])
    got = json.loads(p.stdout)
    if got.get("processes") != np_ or got["max_rel_error_sequential"] != ref["max_rel_error_sequential"] \
            or got["max_rel_error_dense_lu"] != ref["max_rel_error_dense_lu"]:
        fail(f"solve -np {np_}: {got} vs {ref}")

# rank 1 cannot read its file: both ranks end, rank 1's message on stderr
p = run([mpiexec, "-np", "1", *flags, ns, "simulate", cells[0], "--tstop", "2", ":",
         "-np", "1", *flags, ns, "simulate", "/nonexistent/cell.swc", "--tstop", "2"], expect_rc=None)
if p.returncode == 0 or "rank 1 of 2" not in p.stderr or "/nonexistent/cell.swc" not in p.stderr:
    fail(f"one failing rank: exit {p.returncode}, stderr:\n{p.stderr}")

# checkpoints cover one process's simulation: refused under mpirun (exit 2)
p = run([mpiexec, "-np", "2", *flags, ns, "simulate", cells[0], "--tstop", "2", "--checkpoint",
         os.path.join(tempfile.gettempdir(), "ns_mpi_never.ckpt")], expect_rc=None)
if p.returncode == 0 or "run in one process (not under MPI)" not in p.stderr:
    fail(f"--checkpoint under mpirun: exit {p.returncode}, stderr:\n{p.stderr}")

print("test_mpi_cli:", "FAILED" if failures else "all checks passed")
sys.exit(1 if failures else 0)
