#!/usr/bin/env python3
"""Issue 18's command-line checks: simulate --checkpoint / --checkpoint-at /
--resume; what an interrupted run leaves (SIGINT, NaN): partial files under
.partial names, never results; runtime errors that name their input.

usage: test_cli_harden.py PATH/TO/neurosolve SOURCE_DIR
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

BIN, SRC = sys.argv[1], sys.argv[2]
CELL = os.path.join(SRC, "data", "morphologies", "ca1_h10.swc")
CELL2 = os.path.join(SRC, "data", "morphologies", "str_lts_noaxon.swc")
failures = []
count = 0


def run(*args, code=0, stderr_has=None):
    global count
    count += 1
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=600)
    where = "neurosolve " + " ".join(args)
    if p.returncode != code:
        failures.append(f"{where}: exit {p.returncode}, expected {code}\nstderr: {p.stderr}")
    if stderr_has and stderr_has not in p.stderr:
        failures.append(f"{where}: stderr lacks {stderr_has!r}: {p.stderr!r}")
    return p


def check(cond, what):
    global count
    count += 1
    if not cond:
        failures.append(what)


def read(path):
    with open(path, "rb") as f:
        return f.read()


with tempfile.TemporaryDirectory() as tmp:
    def t(name):
        return os.path.join(tmp, name)

    # a mixed population (two morphologies), several sites, record_every 3, on
    # the CPU (bit for bit; on a GPU host, bench/grid.sh check runs the GPU loops' tests)
    base = ["simulate", CELL, CELL2, "--cells", "3", "--record-cells", "2", "--record", "soma",
            "--record", "c7", "--record-every", "3", "--no-progress", "--backend", "cpu"]
    run(*base, "--tstop", "30", "--out", t("full"))
    # saved at 10.3 ms (between two samples) in a run to 30 ms, resumed
    run(*base, "--tstop", "30", "--checkpoint", t("a.ckpt"), "--checkpoint-at", "4,10.3", "--out", t("saver"))
    check(read(t("saver_traces.csv")) == read(t("full_traces.csv")), "saving checkpoints changed the run")
    run(*base, "--tstop", "30", "--resume", t("a.ckpt"), "--out", t("resumed"))
    for f in ("traces.csv", "traces.npy", "spikes.csv"):
        check(read(t("resumed_" + f)) == read(t("full_" + f)), f"resumed at 10.3 ms: {f} differs from the full run")
    # a run to 12 ms saves at its end; resumed to 30 ms on the sequential method
    run(*base, "--tstop", "12", "--checkpoint", t("b.ckpt"))
    run(*base, "--tstop", "30", "--resume", t("b.ckpt"), "--method", "sequential", "--out", t("extended"))
    for f in ("traces.csv", "traces.npy", "spikes.csv"):
        check(read(t("extended_" + f)) == read(t("full_" + f)), f"extended from 12 ms: {f} differs from the full run")
    # refusals
    run(*base, "--checkpoint-at", "5", code=2, stderr_has="--checkpoint-at needs --checkpoint FILE")
    run(*base, "--tstop", "10", "--checkpoint", t("c.ckpt"), "--checkpoint-at", "11", code=2,
        stderr_has="11 ms is not in (0, tstop = 10 ms]")
    run(*base, "--tstop", "10", "--checkpoint", t("c.ckpt"), "--checkpoint-at", "5,4", code=2,
        stderr_has="times must increase")
    run(*base, "--tstop", "10", "--checkpoint", t("c.ckpt"), "--checkpoint-at", "5,x", code=2)
    run(*base, "--tstop", "30", "--cells", "4", "--resume", t("a.ckpt"), code=1,
        stderr_has="a.ckpt: made for 6 cells")
    run(*base, "--tstop", "30", "--set", "celsius=10", "--resume", t("a.ckpt"), code=1,
        stderr_has="a.ckpt: made for another simulation of the same size")
    run(*base, "--tstop", "5", "--resume", t("b.ckpt"), code=1, stderr_has="past tstop")
    run(*base, "--resume", t("missing.ckpt"), code=1, stderr_has="missing.ckpt: No such file")
    with open(t("junk.ckpt"), "wb") as f:
        f.write(b"not a checkpoint" * 10)
    run(*base, "--resume", t("junk.ckpt"), code=1, stderr_has="not a neurosolve simulation checkpoint")
    check(not os.path.exists(t("c.ckpt")), "a refused run wrote its checkpoint")

    # SIGINT: a long run stops between two chunks, keeps its traces as
    # .partial files, saves its checkpoint and exits 1; resumed (to a nearer
    # tstop) it continues as an uninterrupted run would
    long = ["simulate", CELL, "--cells", "200", "--tstop", "4000", "--no-progress", "--backend", "cpu"]
    p = subprocess.Popen([BIN, *long, "--out", t("int"), "--checkpoint", t("int.ckpt")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    check(p.poll() is None, "the long run ended before the signal: make it longer")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    count += 1
    if p.returncode != 1:
        failures.append(f"SIGINT: exit {p.returncode}, expected 1; stderr {err!r}")
    check("interrupted (SIGINT) at t = " in err, f"SIGINT: stderr {err!r}")
    check("int_traces.partial.csv" in err and "partial: not results" in err, f"SIGINT: no partial file named: {err!r}")
    names = sorted(os.listdir(tmp))
    check("int_traces.csv" not in names and "int_spikes.csv" not in names and "int_traces.npy" not in names,
          f"SIGINT left result files: {names}")
    check({"int_traces.partial.csv", "int_traces.partial.npy", "int_spikes.partial.csv", "int.ckpt"} <= set(names),
          f"SIGINT: partial files and checkpoint missing: {names}")
    check(not [n for n in names if n.startswith(".")], f"temporary files left: {names}")
    if os.path.exists(t("int_traces.partial.csv")):
        rows = read(t("int_traces.partial.csv")).decode().splitlines()
        t_last = float(rows[-1].split(",")[0])
        check(len(rows) > 2, f"SIGINT: {len(rows)} rows kept")
        check(f"up to t = {t_last:g} ms" in err, f"SIGINT: the message does not say t = {t_last:g}: {err!r}")
        # the partial traces are the start of the uninterrupted run's, and the
        # checkpoint resumes into it
        stop = f"{t_last + 2.0:g}"
        run("simulate", CELL, "--cells", "200", "--tstop", stop, "--no-progress", "--backend", "cpu", "--out", t("ref"))
        run("simulate", CELL, "--cells", "200", "--tstop", stop, "--no-progress", "--backend", "cpu", "--out", t("cont"),
            "--resume", t("int.ckpt"))
        ref = read(t("ref_traces.csv")).decode().splitlines()
        check(ref[:len(rows)] == rows, "SIGINT: the partial traces are not the start of the run's")
        check(read(t("cont_traces.csv")) == read(t("ref_traces.csv")) and
              read(t("cont_spikes.csv")) == read(t("ref_spikes.csv")),
              "resumed after SIGINT: differs from the uninterrupted run")

    # SIGTERM (what schedulers send first) saves the checkpoint as SIGINT does
    p = subprocess.Popen([BIN, *long, "--out", t("term"), "--checkpoint", t("term.ckpt")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    check(p.poll() is None, "the long run ended before SIGTERM: make it longer")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    count += 1
    if p.returncode != 1 or "interrupted (SIGTERM) at t = " not in err or "written to " + t("term.ckpt") not in err:
        failures.append(f"SIGTERM: exit {p.returncode}, stderr {err!r}")
    names = sorted(os.listdir(tmp))
    check("term.ckpt" in names and "term_traces.partial.csv" in names and "term_traces.csv" not in names,
          f"SIGTERM: {names}")
    check(not [n for n in names if n.startswith(".")], f"SIGTERM: temporary files left: {names}")

    # the result files' size is announced before the run (4e7 samples of one
    # site: about 1.5 GB); stopped at once by SIGTERM
    p = subprocess.Popen([BIN, "simulate", CELL, "--tstop", "1e6", "--no-progress", "--out", t("huge")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    note = p.stderr.readline()
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=120)
    check("note: the result files will take about 1.5 GB (4e+07 trace samples of 1 sites)" in note, f"no note: {note!r}")
    for n in os.listdir(tmp):
        if n.startswith("huge"):
            os.remove(t(n))

    # a temporary that a killed run left (SIGKILL during the final write: no
    # code runs) is recognised by its dead PID and removed by the next write of
    # that file; one of a live process (this one) is left alone
    dead = 4194304
    while True:
        try:
            os.kill(dead, 0)
            dead -= 1
        except ProcessLookupError:
            break
        except PermissionError:
            dead -= 1
    stale = [f".stale_traces.csv.partial-{dead}-0.csv", f".stale_spikes.csv.partial-{dead}-3.csv"]
    live = f".stale_traces.csv.partial-{os.getpid()}-0.csv"
    for n in stale + [live]:
        with open(t(n), "w") as f:
            f.write("time,v\n0,")
    run("simulate", CELL, "--tstop", "1", "--no-progress", "--out", t("stale"))
    names = sorted(os.listdir(tmp))
    check(not set(stale) & set(names) and live in names and "stale_traces.csv" in names,
          f"stale temporaries: {[n for n in names if n.startswith('.')]}")
    os.remove(t(live))

    # NaN (in cell 2, the second morphology): the samples before it are kept
    # as partial files, no result
    run("simulate", CELL, os.path.join(SRC, "data", "morphologies", "hip_K-18.swc"), "--cells", "2", "--tstop", "5",
        "--no-progress", "--set", "soma.ena=1e308", "--out", t("nan"), code=1, stderr_has="nan_traces.partial.csv")
    check(not os.path.exists(t("nan_traces.csv")) and os.path.exists(t("nan_traces.partial.csv")),
          f"NaN: {sorted(os.listdir(tmp))}")

# mechanisms build (issue 47): a catalogue of long mechanism names (each
# written twice into a buffer of 200 bytes per name: the heap was corrupted);
# the build folders: a failed build leaves nothing, a build without
# --keep-sources leaves an earlier build's kept (and edited) LIB.src/ as it is,
# a build with --keep-sources refuses to replace it
with tempfile.TemporaryDirectory() as tmp:
    mods = os.path.join(tmp, "mods")
    os.mkdir(mods)
    names = [f"m{k:02d}" + "a" * 237 for k in range(12)]
    for k, n in enumerate(names):
        with open(os.path.join(mods, f"m{k:02d}.mod"), "w") as f:
            f.write(f"NEURON {{ SUFFIX {n}\n RANGE g }}\nPARAMETER {{ g = 0.001 }}\nBREAKPOINT {{ }}\n")
    lib = os.path.join(tmp, "lib.so")
    p = subprocess.run([BIN, "mechanisms", "build", mods, "-o", lib, "--keep-sources"], capture_output=True, text=True)
    if "cannot run the compiler" in p.stderr:
        print("note: no C compiler: mechanisms build not checked")
    else:
        count += 1
        if p.returncode != 0:
            failures.append(f"mechanisms build of 12 long names: exit {p.returncode}: {p.stderr[-2000:]}")
        listed = run("mechanisms", "list", lib, "--json")
        got = [m["name"] for m in json.loads(listed.stdout or '{"mechanisms": []}')["mechanisms"]]
        check(got == names, f"mechanisms list: {got}")
        kept = lib + ".src"
        catalogue = os.path.join(kept, "catalogue.c")
        check(os.path.isfile(catalogue), f"--keep-sources: {sorted(os.listdir(tmp))}")
        with open(catalogue, "a") as f:
            f.write("/* the user's edit */\n")
        edited = read(catalogue)
        first = read(lib)
        # without --keep-sources: the kept folder is not touched; one compiler run at a time
        # (--jobs 1) gives the library the default's runs at once gave, byte for byte
        run("mechanisms", "build", mods, "-o", lib, "--jobs", "1")
        check(read(catalogue) == edited and len(os.listdir(kept)) == 2 * len(names) + 2,
              f"a build without --keep-sources changed {kept}: {sorted(os.listdir(kept))}")
        check(read(lib) == first, "mechanisms build --jobs 1: another library than the default --jobs")
        # with --keep-sources: refused before any work, the folder kept
        before = read(lib)
        run("mechanisms", "build", mods, "-o", lib, "--keep-sources", code=1,
            stderr_has=kept + " already exists (sources kept by an earlier build")
        check(read(catalogue) == edited and read(lib) == before, "a refused --keep-sources build changed its files")
        # a failed build (a file that does not translate, then a compiler
        # that fails) leaves no library and no folder
        with open(os.path.join(mods, "zz.mod"), "w") as f:
            f.write("NEURON { SUFFIX zz }\nBREAKPOINT { x = }\n")
        lib2 = os.path.join(tmp, "lib2.so")
        run("mechanisms", "build", mods, "-o", lib2, "--keep-sources", code=1, stderr_has="zz.mod:2:")
        os.remove(os.path.join(mods, "zz.mod"))
        env = dict(os.environ, CC="false")
        p = subprocess.run([BIN, "mechanisms", "build", mods, "-o", lib2, "--keep-sources", "--jobs", "3"],
                           capture_output=True, text=True, env=env)
        check(p.returncode == 1 and "'false' failed" in p.stderr, f"CC=false: exit {p.returncode}: {p.stderr!r}")
        left = sorted(n for n in os.listdir(tmp) if n.startswith("lib2"))
        check(left == [], f"failed builds left {left}")

# --backend cuda where no GPU is usable is refused before any work, naming
# the option and the backends usable here, in fit and in report
info = json.loads(run("info", "--json").stdout or "{}")
if not info.get("devices"):
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny_model")
        run("life", "synth", model, "--fibers", "6", "--theta", "8", "--L", "4", "--grid", "4,4,4", "--length", "3")
        w = os.path.join(tmp, "w.npy")
        run("life", "fit", model, "--out", w, "--quiet")
        run("life", "fit", model, "--backend", "cuda", "--out", os.path.join(tmp, "w2.npy"), code=1,
            stderr_has="--backend cuda: no usable GPU: ")
        run("life", "report", model, w, "--backend=gpu", code=1,
            stderr_has="the backends usable here are cpu and auto")
        check(not os.path.exists(os.path.join(tmp, "w2.npy")), "a failed life fit wrote its weights")
else:
    print("note: the refusal of --backend cuda is checked where no GPU is usable")

print(f"{count - len(failures)} passed, {len(failures)} failed")
for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
