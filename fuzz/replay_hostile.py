#!/usr/bin/env python3
"""Replay every hostile input the repository keeps through the readers and the command line under
AddressSanitizer + UBSan, and tally what went wrong (issue 47; docs/fuzzing.md, "Replay of the
hostile inputs").

The inputs: fuzz/corpus/TARGET/* and fuzz/regressions/TARGET/* (every fuzz target), the SWC files
of tests/data/swc_bad/ and the bad TRX files of tests/data/trx/. Each input runs
  - through its reader: BUILD/fuzz/fuzz_replay_TARGET FILE (the fuzz target without libFuzzer;
      the test files go through the commands only);
  - through the commands that read such a file (morph, simulate with --params/--model/--network/
    --resume, mechanisms translate and build (the NMODL inputs compiled end to end), life
    build/info/fit/report, life fit --resume), in a scratch folder, writing
    under out/.
A run is
  - a hang when it passes the time limit (killed);
  - a sanitizer finding when its stderr holds an ASan, LeakSanitizer or UBSan report;
  - a crash when it ends on a signal or with an exit code other than 0, 1 and 2;
  - a partial output when it fails (exit 1 or 2) and leaves any file under out/, or succeeds and
    leaves a temporary (.NAME.partial-PID-N) there.
The exit code is 0 when all four counts are 0, 1 otherwise (each finding printed).

usage: fuzz/replay_hostile.py [--build DIR] [--timeout S] [--jobs N] [--verbose] [--targets T,...]
                              [--extra T:DIR:N ...]
  --build DIR   a build with -DNS_SANITIZE=address,undefined (default build-sanitize, the folder
                of `make test-sanitize`; configured as that target does when it has no CMakeCache.txt);
                the CLI and the fuzz_replay_* targets are built first
  --timeout S   per run (default 120: ASan's slow-down on CI's 2 cores)
  --targets     only these fuzz targets' inputs (CI: nmodl, built end to end after the fuzz stage)
  --extra       also N inputs of target T from DIR: CI passes a sample of what the nmodl fuzzer wrote
                in its run (build-fuzz/fuzz/work/nmodl), so that the generated C of new inputs is compiled
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["swc", "nifti", "params", "tracts", "life_files", "life_model", "life_state", "checkpoint", "nmodl", "model",
           "network", "json", "sonata_types"]
CELL = os.path.join(SRC, "data", "morphologies", "ca1_h10.swc")
SANITIZER = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|UndefinedBehaviorSanitizer")
LIFE_NAMES = ["phi_shape.npy", "phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy", "phi_value.npy", "dictionary.npy",
              "signal.npy", "w_true.npy"]


def split_at_nul(data):
    i = data.find(b"\0")
    return (data, b"") if i < 0 else (data[:i], data[i + 1:])


def unpack_life_model(data, folder):
    """fuzz_life_model's records (one byte naming the file, a u32 length, the bytes) as a folder."""
    os.makedirs(folder, exist_ok=True)
    files, at = {}, 0
    while at + 5 <= len(data):
        k = data[at] % 8
        (n,) = struct.unpack_from("<I", data, at + 1)
        at += 5
        files[LIFE_NAMES[k]] = data[at:at + n]
        at += min(n, len(data) - at)
    for name, blob in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(blob)


class Replay:
    def __init__(self, build, timeout, verbose):
        self.build, self.timeout, self.verbose = build, timeout, verbose
        self.exe = os.path.join(build, "neurosolve")
        self.scratch = tempfile.mkdtemp(prefix="ns_replay_")
        self.n = 0

    def fixtures(self):
        """A valid DWI set, tractogram and model that the hostile file replaces one part of."""
        fx = os.path.join(self.scratch, "fixtures")
        os.makedirs(fx)
        bvals, bvecs = split_at_nul(open(os.path.join(SRC, "fuzz/corpus/life_files/small_25_gradients"), "rb").read())
        self.bval, self.bvec = os.path.join(fx, "g.bval"), os.path.join(fx, "g.bvec")
        open(self.bval, "wb").write(bvals)
        open(self.bvec, "wb").write(bvecs)
        self.dwi = os.path.join(SRC, "fuzz/corpus/nifti/small_25.nii.gz")
        self.trk = os.path.join(fx, "small_25.trk")  # the fuzz seed without its format byte
        open(self.trk, "wb").write(open(os.path.join(SRC, "fuzz/corpus/tracts/small_25.trk"), "rb").read()[1:])
        self.model = os.path.join(fx, "model")
        r = subprocess.run([self.exe, "life", "synth", self.model, "--fibers", "3", "--theta", "8", "--L", "4",
                            "--grid", "6,6,6", "--length", "4"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"replay_hostile: life synth failed: {r.stderr}")

    def commands(self, target, path, work):
        """The CLI runs for one input: lists of arguments ({out} is the run's output folder)."""
        data = open(path, "rb").read()
        sim = ["--tstop", "1", "--no-progress", "--out", "{out}/r"]
        life_build = ["life", "build", "--dwi", self.dwi, "--bvals", self.bval, "--bvecs", self.bvec, "--tracks",
                      self.trk, "--out", "{out}/m", "--quiet"]

        def swap(option, value):
            c = list(life_build)
            c[c.index(option) + 1] = value
            return c

        def copy(name, blob):
            p = os.path.join(work, name)
            with open(p, "wb") as f:
                f.write(blob)
            return p

        if target == "swc":  # the fuzz input's first byte picks the policies, as fuzz_swc.c
            roots = "reject" if data[0] & 1 else "keep"
            radii = ["repair", "reject", "default:1"][(data[0] >> 1) % 3]
            f = copy("cell.swc", data[1:])
            return [["morph", f, "--roots", roots, "--radii", radii], ["simulate", f, *sim]]
        if target == "swc_file":  # tests/data/swc_bad: the file as it is
            return [["morph", path], ["simulate", path, *sim]]
        if target == "params":
            return [["simulate", CELL, "--params", path, *sim]]
        if target == "model":
            return [["simulate", CELL, "--model", path, *sim]]
        if target == "network":  # in place: its morphology paths are relative to it
            return [["simulate", "--network", path, "--tstop", "5", "--no-progress", "--out", "{out}/"]]
        if target == "json":
            return [["simulate", "--network", copy("config.json", data), "--tstop", "5", "--no-progress",
                     "--out", "{out}/"]]
        if target == "checkpoint":  # the fuzz input's first byte is its mode
            return [["simulate", CELL, "--resume", copy("state.ckpt", data[1:]), *sim]]
        if target == "nmodl":  # translated, then built end to end (generated C compiled and linked)
            mods = os.path.join(work, "mods")
            os.makedirs(mods, exist_ok=True)
            shutil.copy(path, os.path.join(mods, "x.mod"))
            return [["mechanisms", "translate", path, "-o", "{out}"],
                    ["mechanisms", "build", mods, "-o", "{out}/lib.so"]]
        if target == "nifti":
            return [swap("--dwi", copy("dwi" + (".nii.gz" if data[:2] == b"\x1f\x8b" else ".nii"), data))]
        if target == "tracts":  # the first byte picks the format, as fuzz_tracts.c
            return [swap("--tracks", copy("t.tck" if data[0] & 1 else "t.trk", data[1:]))]
        if target == "trx":
            return [swap("--tracks", path)]
        if target == "life_files":
            bvals, bvecs = split_at_nul(data)
            c = swap("--bvals", copy("x.bval", bvals))
            c[c.index("--bvecs") + 1] = copy("x.bvec", bvecs)
            return [["life", "report", self.model, copy("w.npy", data), "--csv", "{out}/rmse.csv"], c]
        if target == "life_model":
            folder = os.path.join(work, "model")
            unpack_life_model(data, folder)
            return [["life", "info", folder], ["life", "fit", folder, "--iters", "5", "--quiet", "--out", "{out}/w.npy"]]
        if target == "life_state":  # the fuzz input's first byte is its mode; a state of another model's fit
            return [["life", "fit", self.model, "--resume", copy("state.bin", data[1:]), "--iters", "5", "--quiet",
                     "--out", "{out}/w.npy"]]
        return []  # sonata_types: the reader only (a type table needs a whole SONATA circuit)

    def run(self, args, out):
        """One process: (kind of finding or None, detail)."""
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87", OMP_NUM_THREADS="1")
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=os.path.dirname(out),
                             env=env, start_new_session=True)
        try:
            _, err = p.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return "hang", f"over {self.timeout} s"
        err = err.decode(errors="replace")
        rc = p.returncode
        if SANITIZER.search(err):
            lines = [l for l in err.splitlines() if SANITIZER.search(l) or l.lstrip().startswith("#")][:8]
            return "sanitizer", "\n    ".join(lines)
        if rc < 0 or rc not in (0, 1, 2):
            return "crash", f"exit {rc}: {err[-400:]}"
        left = []
        for root, _, files in os.walk(out):
            left += [os.path.relpath(os.path.join(root, f), out) for f in files]
        if rc != 0 and left:
            return "partial", f"exit {rc} left {sorted(left)}"
        if rc == 0 and [f for f in left if os.path.basename(f).startswith(".")]:
            return "partial", f"temporaries left: {sorted(left)}"
        return None, f"exit {rc}"

    def one(self, target, path):
        """Every run of one input: a list of (finding, what, detail)."""
        self.n += 1
        work = os.path.join(self.scratch, f"in{self.n}")
        os.makedirs(work)
        runs = []  # (arguments, the run's output folder)
        if target not in ("trx", "swc_file"):
            runs.append(([os.path.join(self.build, "fuzz", f"fuzz_replay_{target}"), path], os.path.join(work, "reader")))
        for k, args in enumerate(self.commands(target, path, work)):
            out = os.path.join(work, f"out{k}")
            runs.append(([self.exe] + [a.replace("{out}", out) for a in args], out))
        results = []
        for args, out in runs:
            os.makedirs(out, exist_ok=True)
            finding, detail = self.run(args, out)
            what = " ".join(os.path.relpath(a, SRC) if a.startswith(SRC) else a for a in args)
            results.append((finding, what, detail))
        shutil.rmtree(work, ignore_errors=True)
        return results


def inputs(targets, extra):
    for t in targets:
        for kind in ("corpus", "regressions"):
            d = os.path.join(SRC, "fuzz", kind, t)
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                yield t, os.path.join(d, name)
    for t, d, n in extra:  # a sample of what a fuzzing run wrote: every k-th file by name (libFuzzer's hashes)
        names = sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f))) if os.path.isdir(d) else []
        k = max(1, len(names) // n) if n else 1
        for name in names[::k][:n]:
            yield t, os.path.join(d, name)
    if targets != TARGETS:
        return
    for name in sorted(os.listdir(os.path.join(SRC, "tests/data/swc_bad"))):
        yield "swc_file", os.path.join(SRC, "tests/data/swc_bad", name)
    for name in sorted(os.listdir(os.path.join(SRC, "tests/data/trx"))):
        if name.startswith("bad_"):
            yield "trx", os.path.join(SRC, "tests/data/trx", name)


def prepare(build, jobs, targets):
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):  # as `make test-sanitize` configures it
        subprocess.run(["cmake", "-S", SRC, "-B", build, "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_C_FLAGS_DEBUG=-O1 -g",
                        "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g", "-DNS_CUDA=OFF", "-DNS_SANITIZE=address,undefined"],
                       check=True, stdout=subprocess.DEVNULL)
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    if not re.search(r"^NS_SANITIZE:STRING=.*address.*undefined", cache, re.M):
        sys.exit(f"replay_hostile: {build} is not a sanitizer build (-DNS_SANITIZE=address,undefined)")
    # configured again: a fuzz target added since the build was configured has no make rule before
    subprocess.run(["cmake", "-S", SRC, "-B", build], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, f"-j{jobs}", "--target", "neurosolve_cli",
                    *[f"fuzz_replay_{t}" for t in targets]], check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build-sanitize"))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--targets", help="T,T,...: only these fuzz targets' inputs (default: all, and the test files)")
    ap.add_argument("--extra", action="append", default=[], metavar="T:DIR:N",
                    help="also N inputs of target T from DIR (a fuzzing run's work folder), every k-th by name")
    a = ap.parse_args()
    targets = a.targets.split(",") if a.targets else TARGETS
    bad = [t for t in targets if t not in TARGETS]
    extra = []
    for e in a.extra:
        t, d, n = (e.rsplit(":", 2) + ["", ""])[:3] if e.count(":") >= 2 else (e, "", "")
        if t not in TARGETS or not d or not n.isdigit():
            ap.error(f"--extra {e}: expected T:DIR:N with T one of {', '.join(TARGETS)}")
        extra.append((t, d, int(n)))
    if bad:
        ap.error(f"--targets: unknown {', '.join(bad)} (known: {', '.join(TARGETS)})")
    build = os.path.abspath(a.build)
    prepare(build, a.jobs, sorted(set(targets) | {t for t, _, _ in extra}))
    r = Replay(build, a.timeout, a.verbose)
    r.fixtures()
    todo = list(inputs(targets, extra))
    tally = {"crash": 0, "sanitizer": 0, "hang": 0, "partial": 0}
    runs = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for (t, path), results in zip(todo, pool.map(lambda x: r.one(*x), todo)):
            for finding, what, detail in results:
                runs += 1
                if finding:
                    tally[finding] += 1
                    print(f"{finding.upper()}: {os.path.relpath(path, SRC)}: {what}\n    {detail}")
                elif a.verbose:
                    print(f"ok ({detail}): {what}")
    shutil.rmtree(r.scratch, ignore_errors=True)
    print(f"replay_hostile: {len(todo)} inputs, {runs} runs (readers and commands) under ASan+UBSan: "
          f"{tally['crash']} crashes, {tally['sanitizer']} sanitizer findings, {tally['hang']} hangs, "
          f"{tally['partial']} partial outputs")
    return 1 if any(tally.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
