#!/usr/bin/env python3
"""The neurosolve command: exit codes, one-line errors on stderr, JSON output.

usage: test_cli.py PATH/TO/neurosolve SOURCE_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

BIN, SRC = sys.argv[1], sys.argv[2]
MORPH = os.path.join(SRC, "data", "morphologies")
failures = []
count = 0


def run(*args, code=0, stderr_has=None, one_line_error=True):
    global count
    count += 1
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=600)
    where = "neurosolve " + " ".join(args)
    if p.returncode != code:
        failures.append(f"{where}: exit {p.returncode}, expected {code}\nstderr: {p.stderr}")
    if code != 0 and one_line_error:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if len(lines) < 1 or not lines[0].startswith("neurosolve"):
            failures.append(f"{where}: expected a 'neurosolve...' error line, got {p.stderr!r}")
    if stderr_has and stderr_has not in p.stderr:
        failures.append(f"{where}: stderr lacks {stderr_has!r}: {p.stderr!r}")
    return p


def check(cond, what):
    global count
    count += 1
    if not cond:
        failures.append(what)


def err_ok(value, tol):
    """An error figure must be present (not None) and within tol."""
    return value is not None and value <= tol


def as_json(p, where):
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError as e:
        failures.append(f"{where}: stdout is not one JSON document ({e}): {p.stdout[:300]!r}")
        return {}


# info
run("info")
j = as_json(run("info", "--json"), "info --json")
for key in ("version", "cuda", "openmp", "openmp_threads", "cuda_architectures", "devices"):
    check(key in j, f"info --json lacks {key}")
run("--version")
run("--help")

# one table drives --help and docs/cli.md: every command and every benchmark has its section
with open(os.path.join(SRC, "docs", "cli.md")) as f:
    headings = [l for l in f.read().splitlines() if l.startswith("## ")]
top = run("--help").stdout.splitlines()
commands = [l.split()[0] for l in top[top.index("commands:") + 1:] if l.strip()]
check(len(commands) >= 6, f"--help lists {commands}")
for c in commands:
    check(any(f"neurosolve {c}" in h for h in headings), f"docs/cli.md has no section for '{c}'")
kinds = [l.split()[0] for l in run("bench", "--help").stdout.splitlines()[1:] if l.strip()]
check(len(kinds) >= 5, f"bench --help lists {kinds}")
for k in kinds:
    check(any(f"neurosolve bench {k}" in h for h in headings), f"docs/cli.md has no section for 'bench {k}'")

# usage errors exit 2, runtime errors exit 1
run(code=2, one_line_error=False)
run("frobnicate", code=2)
run("solve", "--cells", "0", code=2, stderr_has="--cells")
run("solve", "--cells", "abc", code=2)
run("solve", "--method", "nonsense", code=2, stderr_has="unknown method")
run("solve", "--no-such-option", code=2)
run("morph", code=2)
run("bench", "nonsense", code=2)

# morph: real files; SOURCES.md says ca1_h10.swc has 204 points, one root, 3 soma points
p = run("morph", os.path.join(MORPH, "ca1_h10.swc"), "--json")
j = as_json(p, "morph --json")
m = (j.get("morphologies") or [{}])[0]
check(m.get("points_read") == 204, f"ca1_h10 points_read {m.get('points_read')} != 204")
check(m.get("roots") == 1, "ca1_h10 roots != 1")
for key in ("sections", "compartments", "branch_depth", "soma", "points_dropped", "area_um2"):
    check(key in m, f"morph --json lacks {key}")
check(j.get("failed") == 0, "morph --json failed != 0")
# 3 roots: two dropped trees (SOURCES.md: celegans_I5_3roots.swc, 109 points)
j = as_json(run("morph", os.path.join(MORPH, "celegans_I5_3roots.swc"), "--json"), "morph 3 roots")
m = (j.get("morphologies") or [{}])[0]
check(m.get("roots") == 3 and m.get("roots_kept") == 1, f"I5 roots {m.get('roots')} kept {m.get('roots_kept')}")
check(m.get("points", 0) + m.get("points_dropped", 0) == 109, "I5 kept + dropped != 109")
run("morph", os.path.join(MORPH, "celegans_I5_3roots.swc"), "--roots", "reject", code=1,
    stderr_has="celegans_I5_3roots.swc")
# `bundled` is the 54 shipped files (SOURCES.md); without a radius policy the
# one tracing without diameters fails with a message that names the option
j = as_json(run("morph", "bundled", "--radii", "default:0.5", "--json"), "morph bundled")
check(len(j.get("morphologies") or []) == 54 and j.get("failed") == 0,
      f"morph bundled: {len(j.get('morphologies') or [])} morphologies, {j.get('failed')} failed")
run("morph", "bundled", code=1, stderr_has="--radii default:R")
# missing, unreadable and malformed files name the file
run("morph", "/nonexistent/cell.swc", code=1, stderr_has="/nonexistent/cell.swc")
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.swc")
    with open(bad, "w") as f:
        f.write("# header\n1 1 0 0 0 5 -1\n2 3 0 abc 0 1 1\n")
    run("morph", bad, code=1, stderr_has="bad.swc:3")
    run("solve", bad, code=1, stderr_has="bad.swc:3")
    empty = os.path.join(tmp, "empty.swc")
    open(empty, "w").close()
    run("morph", empty, code=1, stderr_has="empty.swc")
    run("morph", tmp + "/nothing_here", code=1)

# solve: generated and real shapes, checked
j = as_json(run("solve", "small-low", "big-high", "--cells", "100", "--check", "--json"), "solve --json")
for key in ("cells", "compartments", "method", "backend", "milliseconds", "max_rel_error_sequential",
            "max_rel_error_dense_lu"):
    check(key in j, f"solve --json lacks {key}")
check(j.get("cells") == 100, "solve cells != 100")
check(j.get("compartments") == 50 * 76 + 50 * 691, f"compartments {j.get('compartments')} != 50*76+50*691")
check(err_ok(j.get("max_rel_error_sequential"), 1e-12), "solve error vs sequential > 1e-12")
check(err_ok(j.get("max_rel_error_dense_lu"), 1e-10), "solve error vs dense LU > 1e-10")
j = as_json(run("solve", os.path.join(MORPH, "ca1_h10.swc"), "--values", "cable", "--check", "--json",
                "--method", "openmp", "--cells", "7"), "solve cable")
check(j.get("method") == "openmp" and j.get("values") == "cable", "solve cable: method or values")
check(err_ok(j.get("max_rel_error_dense_lu"), 1e-10), "cable solve error vs dense LU > 1e-10")
run("solve", "tree:50:60", code=1)  # more branches than compartments
# the memory a batch needs is known up front: refused at once, not after
# growing to the machine's limit (issue 18: 11.75 GB before the error)
p = run("solve", "--cells", "1000000000", code=1, stderr_has="memory of this machine")
run("simulate", os.path.join(MORPH, "ca1_h10.swc"), "--tstop", "1e10", "--no-progress", code=1,
    stderr_has="memory of this machine")
check("GB" in p.stderr, f"memory estimate message: {p.stderr!r}")

# a GPU method without a GPU is a clear runtime error, never a crash
info = as_json(run("info", "--json"), "info")
if not info.get("devices"):
    p = run("solve", "--method", "interleaved", "--cells", "10", code=1)
    check("gpu" in p.stderr.lower() or "cuda" in p.stderr.lower(), f"no-GPU message: {p.stderr!r}")

# checks past the parsers (issue 18): geometry that overflows and a zero-length
# neurite are refused with the file and line; a step count out of range is a
# usage error before the run
with tempfile.TemporaryDirectory() as tmp:
    big = os.path.join(tmp, "big.swc")
    with open(big, "w") as f:
        f.write("1 1 0 0 0 1e308 -1\n2 3 10 0 0 1 1\n")
    run("morph", big, code=1, stderr_has="big.swc:1: point id 1: its diameter overflows")
    zl = os.path.join(tmp, "zl.swc")
    with open(zl, "w") as f:
        f.write("1 1 0 0 0 5 -1\n2 3 0 0 0 1 1\n3 3 0 0 0 1 2\n4 3 0 0 0 1 3\n")
    run("simulate", zl, "--tstop", "1", "--no-progress", code=1, stderr_has="zl.swc:2: section 1 (SWC ids 2-4) has zero length")
    run("simulate", os.path.join(MORPH, "ca1_h10.swc"), "--dt", "1e-300", code=2, stderr_has="steps")
    # a run that ends in NaN names the morphology of the failing cell (cell 2: the second file)
    run("simulate", os.path.join(MORPH, "ca1_h10.swc"), os.path.join(MORPH, "hip_K-18.swc"), "--cells", "2",
        "--tstop", "5", "--no-progress", "--set", "soma.ena=1e308", code=1,
        stderr_has="simulation: hip_K-18.swc: NaN or Inf in the data: simulation: NaN/Inf (v = inf) in cell 2")

# --out: a prefix, or an existing directory to write into; missing folders are
# created (mkdir -p), a path that cannot be a folder is refused before the run;
# outputs appear only when complete
with tempfile.TemporaryDirectory() as tmp:
    cell = os.path.join(MORPH, "ca1_h10.swc")
    sim = ["simulate", cell, "--tstop", "2", "--no-progress"]
    run(*sim, "--out", os.path.join(tmp, "run"))
    check(sorted(os.listdir(tmp)) == ["run_spikes.csv", "run_traces.csv", "run_traces.npy"],
          f"--out PREFIX wrote {sorted(os.listdir(tmp))}")
    sub = os.path.join(tmp, "dir")
    os.mkdir(sub)
    run(*sim, "--out", sub)
    check(sorted(os.listdir(sub)) == ["spikes.csv", "traces.csv", "traces.npy"],
          f"--out DIR wrote {sorted(os.listdir(sub))}")
    check(not os.path.exists(sub + "_traces.csv"), "--out DIR wrote DIR_traces.csv next to the directory")
    with open(os.path.join(sub, "traces.csv")) as f:
        check(len(f.read().splitlines()) == 82, "traces.csv: header + 81 samples")
    run(*sim, "--out", os.path.join(tmp, "missing", "deeper", "run"))
    check(sorted(os.listdir(os.path.join(tmp, "missing", "deeper"))) ==
          ["run_spikes.csv", "run_traces.csv", "run_traces.npy"], "--out into missing folders: not created")
    run(*sim, "--out", os.path.join(tmp, "missing", "sub") + "/")
    check(sorted(os.listdir(os.path.join(tmp, "missing", "sub"))) == ["spikes.csv", "traces.csv", "traces.npy"],
          "--out DIR/ for a missing DIR: not created")
    shutil.rmtree(os.path.join(tmp, "missing"))
    open(os.path.join(tmp, "afile"), "w").close()
    run(*sim, "--out", os.path.join(tmp, "afile", "run"), code=1, stderr_has="afile is not a folder")
    os.remove(os.path.join(tmp, "afile"))
    # --plot: drawn through a temporary name; without matplotlib a warning before
    # the run says so (no traceback, no PNG) and the run succeeds; with it the PNG appears
    try:
        import matplotlib  # noqa: F401
        have_mpl = True
    except ImportError:
        have_mpl = False
    # (a name a shell would take apart: the script runs without one)
    pwned = os.path.join(os.getcwd(), "ns_cli_pwned")  # the command runs here
    png = os.path.join(tmp, "plot it's ';touch ns_cli_pwned;' $(touch ns_cli_pwned).png")
    p = run(*sim, "--out", os.path.join(tmp, "plotted"), "--plot", png,
            stderr_has=None if have_mpl else "plot skipped: python3 cannot import matplotlib")
    check(os.path.exists(os.path.join(tmp, "plotted_traces.csv")), "--plot: the traces were not written")
    check(("plot: " in p.stdout) == have_mpl, f"--plot: 'plot:' line with matplotlib {have_mpl}: {p.stdout!r}")
    check(os.path.exists(png) == have_mpl, f"--plot: PNG exists {os.path.exists(png)}, matplotlib {have_mpl}")
    check(not os.path.exists(pwned), "--plot: a shell ran the file name as commands")
    check("Traceback" not in p.stderr, f"--plot printed a traceback: {p.stderr!r}")
    check(not [f for f in os.listdir(tmp) if "partial" in f], f"temporary files left: {os.listdir(tmp)}")
    for f in os.listdir(tmp):
        if f.startswith("plot"):
            os.remove(os.path.join(tmp, f))
    # a python3 that cannot import matplotlib (no site-packages) first on PATH:
    # the warning comes before the run, the run succeeds with its other files
    fake = os.path.join(tmp, "nompl")
    os.mkdir(fake)
    with open(os.path.join(fake, "python3"), "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    os.chmod(os.path.join(fake, "python3"), 0o755)
    env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""))
    q = subprocess.run([BIN, *sim, "--out", os.path.join(tmp, "nompl_run", "r"), "--plot",
                        os.path.join(tmp, "nompl_run", "r.png")], capture_output=True, text=True, env=env)
    check(q.returncode == 0 and "warning: " in q.stderr and "plot skipped" in q.stderr and "plot: " not in q.stdout,
          f"--plot without matplotlib: exit {q.returncode}, {q.stderr!r}")
    check(sorted(os.listdir(os.path.join(tmp, "nompl_run"))) == ["r_spikes.csv", "r_traces.csv", "r_traces.npy"],
          f"--plot without matplotlib wrote {sorted(os.listdir(os.path.join(tmp, 'nompl_run')))}")
    check(q.stderr.count("plot skipped") == 1, f"the warning is given once: {q.stderr!r}")
    shutil.rmtree(fake)
    shutil.rmtree(os.path.join(tmp, "nompl_run"))
    # a full disk while the second of the three files is written: none of
    # them appears (the traces CSV used to be renamed into place before the
    # NPY's failure was seen). Needs a small tmpfs: root and mount rights.
    small = os.path.join(tmp, "small")
    os.mkdir(small)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=56k", "tmpfs", small],
                      capture_output=True).returncode == 0:
        try:
            # 30 kB of CSV (8 pages: fits) and 26 kB of NPY (7 pages: does not fit after it)
            run("simulate", cell, "--tstop", "40", "--no-progress", "--out", os.path.join(small, "run"),
                code=1, stderr_has="run_traces.npy: write failed: No space left on device")
            check(os.listdir(small) == [], f"a full disk left {os.listdir(small)}")
        finally:
            subprocess.run(["umount", small])
    os.rmdir(small)
    # a plot or checkpoint path that cannot be written is refused before the
    # run (it used to fail after it, leaving the plot's traces CSV behind)
    os.mkdir(os.path.join(tmp, "adir"))
    before = sorted(os.listdir(tmp))
    run(*sim, "--plot", os.path.join(tmp, "adir"), code=1, stderr_has="it is a directory")
    run(*sim, "--checkpoint", os.path.join(tmp, "adir"), code=1, stderr_has="it is a directory")
    open(os.path.join(tmp, "afile"), "w").close()
    run(*sim, "--checkpoint", os.path.join(tmp, "afile", "c.ckpt"), code=1, stderr_has="afile is not a folder")
    os.remove(os.path.join(tmp, "afile"))
    check(sorted(os.listdir(tmp)) == before, f"refused plot/checkpoint paths changed {sorted(os.listdir(tmp))}")
    os.rmdir(os.path.join(tmp, "adir"))
    before = sorted(os.listdir(tmp))
    run(*sim, "--out", os.path.join(tmp, "run"), "--record", "c99999", code=1)
    check(sorted(os.listdir(tmp)) == before, f"a failed simulate changed {sorted(os.listdir(tmp))}")

# the same for the GPU: a batch that fits the host but not the GPU is refused
# before the host arrays are filled (only where there is a GPU and the memory)
if info.get("devices"):
    free = sum(d.get("free_memory_gib", 0) for d in info["devices"]) * 2**30
    host = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    cells = int(free * 1.05 / (32 * 319)) + 1  # medium-high: 319 compartments
    if 32 * 319 * cells < 0.8 * host:
        run("solve", "--cells", str(cells), "--backend", "cuda", code=1, stderr_has="of GPU memory")
    else:
        print("note: GPU memory check skipped: the host has too little memory to pass its own check")

# bench hines on the CPU, small
j = as_json(run("bench", "hines", "--shapes", "small-low", "--cells", "64", "--repeats", "5", "--json"),
            "bench hines --json")
rows = j.get("rows", [])
check({r.get("method") for r in rows} >= {"sequential", "openmp"}, f"bench rows: {rows}")
check(all(r.get("max_rel_error", 1) <= 1e-12 for r in rows), "bench rows with error > 1e-12")

print(f"{count - len(failures)} passed, {len(failures)} failed")
for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
