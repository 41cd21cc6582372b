#!/usr/bin/env python3
"""simulate --model / --mechanisms on the command line: exit codes and
messages of bad input (a missing model file or library, --mechanisms without
--model, --model with --checkpoint or --resume, a model that fails at
creation or does not parse), no result files after a failed run, and a model
run that reproduces the hand-written hh (traces within rounding, the same
spikes).

usage: test_cli_model.py PATH/TO/neurosolve SOURCE_DIR
"""
import csv
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

BIN, SRC = sys.argv[1], sys.argv[2]
CELL = os.path.join(SRC, "data", "morphologies", "ca1_h10.swc")
h = Harness(BIN)


def has(p, text, what):
    h.check(text in p.stderr, f"{what}: stderr lacks {text!r}: {p.stderr!r}")


def results(prefix):
    """Files that a run with --out PREFIX left (results or partial)."""
    d, stem = os.path.split(prefix)
    return sorted(f for f in os.listdir(d) if f.startswith(stem))


def traces(path):
    with open(path) as f:
        rows = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    return [[float(x) for x in r] for r in rows[1:]]


with tempfile.TemporaryDirectory() as tmp:
    def write(name, text):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    good = write("hh.model", "# hh everywhere\nall.insert = hh\n")
    base = [CELL, "--tstop", "20", "--no-progress"]

    # usage errors: exit 2 before any work
    p = h.run("simulate", *base, "--mechanisms", os.path.join(tmp, "lib.so"), expect=2)
    has(p, "--mechanisms LIB needs --model FILE", "--mechanisms without --model")
    ck = os.path.join(tmp, "state.ckpt")
    p = h.run("simulate", *base, "--model", good, "--checkpoint", ck, expect=2)
    has(p, "--checkpoint and --resume", "--model with --checkpoint")
    h.check(not os.path.exists(ck), "a refused --checkpoint left a file")
    p = h.run("simulate", *base, "--model", good, "--resume", ck, expect=2)
    has(p, "--checkpoint and --resume", "--model with --resume")

    # runtime errors: exit 1, one line naming the input, no result files
    out = os.path.join(tmp, "run")
    missing = os.path.join(tmp, "nonexistent.model")
    p = h.run("simulate", *base, "--model", missing, "--out", out, expect=1)
    has(p, f"model: {missing}: cannot open: No such file or directory", "a missing model file")
    p = h.run("simulate", *base, "--model", good, "--mechanisms", os.path.join(tmp, "no.so"), "--out", out, expect=1)
    has(p, "no.so", "a missing mechanism library")
    bad_parse = write("parse.model", "all.insert = hh\nsoma.gnabar_hh = 0.1 *\n")
    p = h.run("simulate", *base, "--model", bad_parse, "--out", out, expect=1)
    has(p, f"{bad_parse}:2:", "a model that does not parse")
    unknown = write("unknown.model", "all.insert = hh kdr\n")
    p = h.run("simulate", *base, "--model", unknown, "--out", out, expect=1)
    has(p, f"{unknown}:1: no mechanism 'kdr'", "an unknown mechanism")
    has(p, "pas, hh", "an unknown mechanism: the names it could be")
    nan = write("nan.model", "all.insert = pas\ndend.g_pas = 1e-4*log(d - 1000)\n")
    p = h.run("simulate", *base, "--model", nan, "--out", out, expect=1)
    has(p, "ca1_h10.swc", "a value that is not finite: the morphology")
    has(p, f"{nan}:2: dend.g_pas is", "a value that is not finite: the statement")
    has(p, "at compartment", "a value that is not finite: the compartment")
    not_ins = write("notins.model", "soma.insert = hh\ndend.gnabar_hh = 0.2\n")
    p = h.run("simulate", *base, "--model", not_ins, "--out", out, expect=1)
    has(p, "hh is not inserted at compartment", "a set where the mechanism is not inserted")
    h.check(results(out) == [], f"failed model runs left files: {results(out)}")
    h.check(len(p.stderr.strip().splitlines()) == 1, f"more than one line of error: {p.stderr!r}")

    # a model run: hh from the model against the hand-written hh
    ref, mod = os.path.join(tmp, "ref"), os.path.join(tmp, "mod")
    pr = h.run("simulate", *base, "--record", "c10", "--out", ref, "--json")
    pm = h.run("simulate", *base, "--record", "c10", "--model", good, "--out", mod, "--json")
    try:
        jr, jm = json.loads(pr.stdout), json.loads(pm.stdout)
        sr, sm = jr["first_cells"][0]["spikes"], jm["first_cells"][0]["spikes"]
        h.check(len(sr) >= 2 and len(sr) == len(sm), f"spikes: {len(sr)} hand-written, {len(sm)} model")
        h.check(all(abs(a - b) < 1e-9 for a, b in zip(sr, sm)), f"spike times differ: {sr} {sm}")
        tr, tm = traces(ref + "_traces.csv"), traces(mod + "_traces.csv")
        h.check(len(tr) == len(tm) == 801, f"trace rows {len(tr)} and {len(tm)}")
        worst = max(abs(a - b) for ra, rb in zip(tr, tm) for a, b in zip(ra, rb))
        print(f"model hh vs hand-written hh through the CLI: {len(sr)} spikes, max |dv| {worst:.3g} mV")
        h.check(worst < 1e-6, f"traces differ by {worst} mV")
    except (ValueError, KeyError, IndexError, OSError) as e:
        h.check(False, f"model run: {e}")

h.finish("cli_model")
