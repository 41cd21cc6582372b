#!/usr/bin/env python3
"""One exit-code rule for the neurosolve command (docs/cli.md): 0 success,
1 runtime failure, 2 a usage error or an option value out of range.

Every command and subcommand answers --help with exit 0 (and touches no
file); every option is given out-of-range values, each of which must exit 2
with one 'neurosolve ...' line on stderr naming the option, before any work.

usage: test_cli_exit_codes.py PATH/TO/neurosolve SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

BIN, SRC = sys.argv[1], sys.argv[2]
CELL = os.path.join(SRC, "data", "morphologies", "ca1_h10.swc")
failures = []
count = 0


def run(args, cwd=None, timeout=120):
    try:
        return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None


def expect(args, code, cwd=None):
    global count
    count += 1
    p = run(args, cwd)
    where = "neurosolve " + " ".join(args)
    if p is None:
        failures.append(f"{where}: timed out (the value was not refused up front)")
        return None
    if p.returncode != code:
        failures.append(f"{where}: exit {p.returncode}, expected {code}; stderr: {p.stderr.strip()!r}")
    elif code == 2:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if len(lines) != 1 or not lines[0].startswith("neurosolve"):
            failures.append(f"{where}: expected one 'neurosolve...' line on stderr, got {p.stderr!r}")
    return p


with tempfile.TemporaryDirectory() as tmp:
    # --help everywhere: exit 0, text on stdout, nothing written, no file opened
    helps = [
        ["--help"], ["info", "--help"], ["morph", "--help"], ["solve", "--help"], ["simulate", "--help"],
        ["bench", "--help"], ["bench", "hines", "--help"], ["bench", "hines", "--mixed", "--help"],
        ["bench", "tridiag", "--help"], ["bench", "life", "--help"], ["bench", "sim", "--help"],
        ["bench", "sim", "--network", "--help"],
        ["bench", "scale", "--help"], ["life", "--help"], ["life", "synth", "--help"],
        ["life", "fit", "--help"], ["life", "build", "--help"], ["life", "report", "--help"],
        ["life", "info", "--help"], ["life", "synth", "model", "--help"], ["life", "fit", "model", "--help"],
        ["life", "report", "model", "w.npy", "--help"], ["simulate", CELL, "--help"],
        ["mechanisms", "--help"], ["mechanisms", "build", "--help"], ["mechanisms", "list", "--help"],
        ["mechanisms", "translate", "x.mod", "--help"],
    ]
    for args in helps:
        p = expect(args, 0, cwd=tmp)
        if p is not None:
            count += 1
            if "usage" not in p.stdout:
                failures.append(f"neurosolve {' '.join(args)}: no usage text on stdout: {p.stdout[:200]!r}")
            if p.stderr.strip():
                failures.append(f"neurosolve {' '.join(args)}: stderr not empty: {p.stderr!r}")
    count += 1
    if os.listdir(tmp):
        failures.append(f"--help runs wrote files: {os.listdir(tmp)}")

    # out-of-range option values: exit 2 (refused before any work)
    sim = ["simulate", CELL, "--no-progress", "--tstop", "1"]
    sim_file = ["simulate", CELL, "--no-progress"]
    bad = {
        tuple(sim): [
            ["--dt", "0"], ["--dt", "-1"], ["--dt", "nan"], ["--dt", "inf"], ["--dt", "1e-300"],
            ["--dt", "abc"], ["--tstop", "nan"], ["--tstop", "-1"], ["--tstop", "inf"], ["--tstop", "1e300"],
            ["--tstop", "0.001"], ["--set", "Ra=0"], ["--set", "dt=0"], ["--set", "soma.gnabar_hh=-1"],
            ["--set", "nosuch=1"], ["--set", "Ra=abc"], ["--set", "Ra"], ["--set", "all.hh=2"],
            ["--set", "celsius=nan"], ["--set", "Ra=0x10"], ["--dt", "0x1p-5"], ["--gpu-lanes", "3"], ["--gpu-lanes", "64"], ["--gpu-lanes", "-1"], ["--gpu-mechanisms", "fast"],
            ["--cells", "0"], ["--cells", "-5"], ["--record-every", "0"], ["--record-cells", "-1"],
            ["--threads", "-1"], ["--iclamp", "soma:1:-1:0.1"], ["--iclamp", "soma:1:2"],
            ["--iclamp", "soma:nan:1:0.1"], ["--record", "c-1"], ["--record", "0:2"], ["--backend", "gpu9"],
            # out of range: refused as usage errors (were clamped to INT32/INT64_MAX before the lookup)
            ["--record", "99999999999:0.5"], ["--record", "c99999999999999999999999"],
            ["--record", "swc=99999999999999999999999:0.5"],
            ["--method", "nope"], ["--scale", "0"], ["--scale", "nan"], ["--radii", "default:0"],
            ["--radii", "sometimes"], ["--roots", "maybe"], ["--nseg", "length:0"], ["--nseg", "d-lambda:0"],
            ["--nseg", "many"], ["--ra", "0"], ["--cm", "-1"], ["--no-such-option"],
            # issue 47: accepted before (c-0 as compartment 0, an empty time, a
            # v of 1e299, hex after a ':'); 1e-320 refused for what it is
            ["--record", "c-0"], ["--record", "5:0x1"], ["--record", "swc=-0:0.5"],
            ["--checkpoint", "c.ckpt", "--checkpoint-at", "5,,6"], ["--checkpoint", "c.ckpt", "--checkpoint-at", "5,"],
            ["--set", "v_init=1e300"], ["--set", "spike_threshold=-2e4"], ["--iclamp", "soma:1e-320:1:1"],
            ["--iclamp", "soma:1:1:0x1"], ["--tstop", "1e999"],
            # a prefix longer than the command keeps: it used to be cut, and
            # the results written as ./traces.csv, ... (exit 0)
            ["--out", "./" * 2000 + "run"],
        ],
        ("solve", "small-low"): [
            ["--cells", "0"], ["--cells", "1e3"], ["--tolerance", "-1"], ["--tolerance", "nan"],
            ["--dense-max", "-1"], ["--block-size", "0"], ["--threads", "0"], ["--devices", "0"],
            ["--values", "x"], ["--seed", "-1"], ["--method", "x"], ["--backend", "x"], ["--ra", "-1"],
        ],
        ("morph", CELL): [["--scale", "-1"], ["--scale", "0x2"], ["--nseg", "d-lambda:nan"], ["--cm", "nan"], ["--bogus"]],
        ("life", "synth", os.path.join(tmp, "synth")): [
            ["--fibers", "0"], ["--theta", "0"], ["--L", "1"], ["--b", "-1"], ["--grid", "1,2,3"],
            ["--grid", "4,4"], ["--grid", "2048,2048,2048"], ["--length", "0"], ["--curvature", "-1"], ["--active", "2"], ["--noise", "-1"],
            ["--seed", "-1"],
        ],
        ("life", "fit", os.path.join(tmp, "no_model")): [
            ["--iters", "0"], ["--lambda", "-1"], ["--lambda", "nan"], ["--tolg", "-1"], ["--tolo", "nan"],
            ["--threads", "0"], ["--backend", "x"], ["--mw", "x"], ["--mty", "x"],
        ],
        ("life", "build", "--dwi", "x.nii", "--bvals", "x.bval", "--bvecs", "x.bvec", "--tracks", "x.trk",
         "--out", os.path.join(tmp, "built")): [
            ["--L", "1"], ["--axial", "-1"], ["--radial", "nan"], ["--b0-threshold", "-1"],
        ],
        ("life", "report", os.path.join(tmp, "no_model"), "w.npy"): [
            ["--threshold", "-1"], ["--threshold", "nan"], ["--backend", "x"],
        ],
        ("bench", "hines"): [
            ["--cells", "0"], ["--repeats", "1"], ["--threads", "0"], ["--block-sizes", "0"],
            ["--backend", "x"], ["--devices", "0"], ["--seed", "-1"], ["--methods", "x"],
            ["--backend", "cuda", "--methods", "flat,x"],
        ],
        ("bench", "hines", "--mixed"): [["--repeats", "0"], ["--fine-threads", "0"], ["--ca1-length", "0"]],
        ("bench", "tridiag"): [
            ["--n", "0"], ["--batch", "0"], ["--repeats", "0"], ["--precision", "x"], ["--grid", "x"],
            ["--methods", "x"], ["--backend", "x"],
        ],
        ("bench", "life"): [
            ["--fibers", "0"], ["--iters", "1"], ["--repeats", "0"], ["--L", "1"], ["--theta", "0"],
            ["--grid", "1,1,1"], ["--grid", "2048,2048,2048"], ["--threads", "0"], ["--length", "0"],
        ],
        ("mechanisms",): [["nosuch"]],
        ("mechanisms", "build"): [[], ["--frob"], ["a", "b"], ["-o"]],
        ("mechanisms", "list"): [[], ["--frob"]],
        ("mechanisms", "translate"): [[], ["x.mod", "--keep-sources"]],
        ("bench", "sim"): [
            ["--cells", "0"], ["--steps", "0"], ["--cpu-max", "-1"], ["--neuron", "0"], ["--backend", "x"],
            ["--gpu-methods", "x"],
        ],
        ("bench", "sim", "--network"): [
            ["--cells", "0"], ["--cells", "2000000"], ["--cells", "x"], ["--ring", "0"], ["--synapses", "0"],
            ["--synapses", "10001"], ["--tstop", "0"], ["--tstop", "nan"], ["--tstop", "-5"], ["--delay", "0"],
            ["--delay", "-1"], ["--delay", "inf"], ["--weight", "-0.1"], ["--weight", "nan"], ["--threads", "0"],
            ["--seed", "-1"], ["--repeats", "0"], ["--repeats", "26"], ["--backend", "gpu"], ["--cells", "5", "--ring", "10"],
            ["--neuron", "--threads", "2", "--delay", "0.025"],
            ["--frob"], ["--csv"],
        ],
    }
    for base, cases in bad.items():
        for extra in cases:
            expect([*base, *extra], 2, cwd=tmp)
    count += 1
    left = [f for f in os.listdir(tmp)]
    if left:
        failures.append(f"refused runs wrote files: {left}")

    # the same values inside files: exit 1 naming the file (docs/cli.md), with
    # the one number reader's messages (issue 47: dt=1e-300 or tstop < dt/2 in
    # a parameter file exited 2, hex was read in model and network files)
    def file_case(name, text, args, needle):
        global count
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        p = expect([*sim_file, *[a.replace("FILE", path) for a in args]], 1, cwd=tmp)
        count += 1
        if p is not None and needle not in p.stderr:
            failures.append(f"{name}: {needle!r} not in {p.stderr!r}")
        os.remove(path)

    file_case("p1.params", "dt = 1e-300\n", ["--params", "FILE"], "p1.params: tstop = 100 ms with dt = 1e-300 ms")
    file_case("p2.params", "dt = 2\ntstop = 0.5\n", ["--params", "FILE"], "p2.params: tstop = 0.5 ms is less than half a step")
    file_case("p3.params", "dt = 0\n", ["--params", "FILE"], "p3.params:1: dt = 0 ms: must be > 0")
    file_case("p4.params", "v_init = 1e300\n", ["--params", "FILE"], "p4.params:1: v_init = 1e+300 mV: must be in")
    file_case("p5.params", "celsius = 1e-320\n", ["--params", "FILE"],
              "p5.params:1: celsius: '1e-320' is too close to 0 for a double")
    file_case("p6.params", "celsius = 0x10\n", ["--params", "FILE"], "p6.params:1: celsius: '0x10' is not a decimal number")
    file_case("m1.model", "all.insert = hh\nall.gnabar_hh = 0x10\n", ["--model", "FILE"],
              "m1.model:2: gnabar_hh = 0x10: '0x10' is not a decimal number")
    file_case("m2.model", "all.insert = hh\nall.nai = -1\n", ["--model", "FILE"],
              "m2.model:2: all.nai is -1 at compartment 1 (d = 0 um): a concentration must be >= 0 mM")
    cells = os.path.join(SRC, "data", "morphologies", "ca1_h10.swc")
    net = ["--network", "FILE"]
    sim_net = ["simulate", "--no-progress", "--tstop", "1"]
    for name, text, needle in [
        ("n1.net", f"cells c 1 {cells}\ntrain t 0x10\n", "n1.net:2: train t: time 1 [ms]: '0x10' is not a decimal number"),
        ("n2.net", f"cells c 1 {cells}\ntrain t 1e-320\n", "n2.net:2: train t: time 1 [ms]: '1e-320' is too close to 0"),
        ("n3.net", f"cells c 1 {cells}\nsynapse s c c-0 ExpSyn\n", "n3.net:2: location 'c-0'"),
    ]:
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        count += 1
        p = run([*sim_net, "--network", path], cwd=tmp)
        if p is None or p.returncode != 1 or needle not in p.stderr:
            failures.append(f"{name}: exit {p and p.returncode}, {needle!r} not in {p and p.stderr!r}")
        os.remove(path)
    # a file's value fine, the option's not: the option's fault (exit 2)
    path = os.path.join(tmp, "ok.params")
    with open(path, "w") as f:
        f.write("dt = 0.5\n")
    expect([*sim, "--params", path, "--tstop", "0.2"], 2, cwd=tmp)
    # a file's bad value overridden by an option: fine
    with open(path, "w") as f:
        f.write("dt = 1e-300\n")
    expect([*sim, "--params", path, "--dt", "0.025", "--out", os.path.join(tmp, "o")], 0, cwd=tmp)
    for n in os.listdir(tmp):
        os.remove(os.path.join(tmp, n))

    # mechanisms: runtime failures name the file (and line), nothing written
    with open(os.path.join(tmp, "bad.mod"), "w") as f:
        f.write("NEURON { SUFFIX bad }\nSTATE { a b }\nPARTIAL k {\n  a' = 1\n}\n")
    p = expect(["mechanisms", "translate", "bad.mod", "-o", "."], 1, cwd=tmp)
    if p is not None and "bad.mod:3:" not in p.stderr:
        failures.append(f"mechanisms translate bad.mod: no file:line in {p.stderr!r}")
    p = expect(["mechanisms", "build", ".", "-o", "lib.so"], 1, cwd=tmp)
    if p is not None and ("PARTIAL" not in p.stderr or os.path.exists(os.path.join(tmp, "lib.so"))):
        failures.append(f"mechanisms build with bad.mod: {p.stderr!r}, files {os.listdir(tmp)}")
    expect(["mechanisms", "list", "bad.mod"], 1, cwd=tmp)
    count += 3

print(f"{count - len(failures)} passed, {len(failures)} failed")
for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
