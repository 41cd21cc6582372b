#!/usr/bin/env python3
"""Flags (options without a value) take `--flag=VALUE` as every option takes `--opt=VALUE`
(issue 45): 1/true/yes is the flag given, 0/false/no the flag left out (any case), anything
else a usage error (exit 2) naming the flag and the choices. Every flag each command's --help
lists is checked, so a new flag missing from tools/main.c's table fails here.

usage: test_cli_flags.py NEUROSOLVE SOURCE_DIR"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

exe, src = sys.argv[1], sys.argv[2]
harness = Harness(exe)
check, run = harness.check, harness.run
CELL = os.path.join(src, "data", "morphologies", "ca1_h10.swc")
COMMANDS = [["info"], ["morph"], ["solve"], ["simulate"], ["life", "synth"], ["life", "fit"], ["life", "build"],
            ["life", "report"], ["life", "info"], ["life", "cohort"], ["mechanisms"], ["bench", "hines"], ["bench", "life"],
            ["bench", "sim"], ["bench", "tridiag"], ["bench", "scale"]]
# a help line's option with no value after it: "  --json   one JSON ..." or "[--json]"
FLAG = re.compile(r"(?:^ +|\[)(--[a-z][a-z0-9-]*)(?=\]| {2,}|$)", re.M)

# every listed flag refuses a value that is not a truth value, before any work
flags = 0
for c in COMMANDS:
    h = run(*c, "--help").stdout
    for f in sorted(set(FLAG.findall(h)) - {"--help"}):
        flags += 1
        p = run(*c, f"{f}=maybe", expect=2)
        check(f"{f}=maybe: {f} is a flag: give it alone or as {f}=1|0, true|false, yes|no" in p.stderr,
              f"{' '.join(c)} {f}=maybe: {p.stderr!r}")
check(flags >= 25, f"only {flags} flags found in the help texts")
p = run("info", "--json=", expect=2)
check("--json=: --json is a flag" in p.stderr, f"--json=: {p.stderr!r}")

# the values: on is the flag, off is no flag
on = run("info", "--json").stdout
check(json.loads(on)["version"], "info --json is JSON")
# (info's values may change between runs: a GPU's free memory; its fields and lines do not)
for v in ("1", "true", "YES", "True"):
    check(json.loads(run("info", f"--json={v}").stdout).keys() == json.loads(on).keys(),
          f"info --json={v} differs from --json")
off = run("info").stdout
for v in ("0", "false", "no", "FALSE"):
    o = run("info", f"--json={v}").stdout
    check(not o.startswith("{") and [ln.split(":")[0] for ln in o.splitlines()] ==
          [ln.split(":")[0] for ln in off.splitlines()], f"info --json={v} differs from no --json")
sections = run("morph", CELL, "--sections").stdout
check(run("morph", CELL, "--sections=yes").stdout == sections, "morph --sections=yes")
check(run("morph", CELL, "--sections=0").stdout == run("morph", CELL).stdout != sections, "morph --sections=0")

# flags of subcommands and valued options beside them
with tempfile.TemporaryDirectory() as tmp:
    m = os.path.join(tmp, "m")
    run("life", "synth", m, "--fibers", "8", "--theta", "8", "--L", "4", "--grid", "5,5,5", "--length", "4")
    p = run("life", "fit", m, "--iters=3", "--quiet=1", "--json=true", f"--out={tmp}/w.npy")
    check(json.loads(p.stdout)["updates"] >= 1, f"life fit --json=true: {p.stdout!r}")
    p = run("life", "fit", m, "--iters", "3", "--quiet", "--json=no", "--out", f"{tmp}/w.npy")
    check(p.stdout.startswith(m + ": ") and re.search(r" updates on (cpu|cuda) ", p.stdout),
          f"life fit --json=no: {p.stdout!r}")
    p = run("simulate", CELL, "--tstop=0.5", "--no-progress=true", f"--out={tmp}/r")
    check(os.path.exists(f"{tmp}/r_traces.csv"), "simulate --no-progress=true wrote no traces")

harness.finish("cli_flags")
