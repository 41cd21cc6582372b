#!/usr/bin/env python3
"""life fit interrupted and resumed: SIGINT and SIGTERM mid-fit save a resumable state and no
weights (no temporaries left); --resume continues to the uninterrupted fit's weights and
history bit for bit (CPU, same thread count); a state from other options, a damaged one and
one with a valid checksum but bad values are refused naming the file. No numpy needed: the
NPY files are compared as bytes and the state is built with struct."""
import os
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
# no stopping test but --iters: the fit runs until it is told to stop
FIT = ["--backend", "cpu", "--threads", "2", "--quiet", "--tolg", "0", "--tolo", "0", "--rtolg", "0", "--rtolo", "0",
       "--ridge", "0.05"]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def interrupt(model, out, sig):
    """Start an endless fit, signal it once it runs; returns (exit code, stderr)."""
    for wait in (0.7, 1.5, 3.0):
        p = subprocess.Popen([exe, "life", "fit", model, *FIT, "--iters", "100000000", "--out", out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(wait)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        if p.returncode != -sig:  # not killed before its handlers were installed
            return p.returncode, err
    return p.returncode, err


def fnv(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


with tempfile.TemporaryDirectory() as tmp:
    t = lambda n: os.path.join(tmp, n)
    model = t("model")
    run("life", "synth", model, "--fibers", "400", "--theta", "24", "--L", "8", "--grid", "12,12,12", "--length", "12",
        "--noise", "0.2", "--seed", "3")

    # SIGINT: the state under the default name, no weights, no temporaries
    rc, err = interrupt(model, t("w.npy"), signal.SIGINT)
    check(rc == 1 and "life fit interrupted (SIGINT) after " in err, f"SIGINT: exit {rc}: {err!r}")
    names = sorted(os.listdir(tmp))
    check("w_state.bin" in names and "w.npy" not in names and "w_history.npy" not in names,
          f"SIGINT: files {names}")
    check(not [n for n in names if n.startswith(".")], f"SIGINT: temporaries left: {names}")
    check(f"--resume {t('w_state.bin')}" in err, f"SIGINT: the message does not say how to continue: {err!r}")
    updates = int(err.split("after ")[1].split(" updates")[0]) if "after " in err else 0
    check(updates >= 1, f"SIGINT came before the first update: {err!r}")

    # resumed to N updates against N updates without a stop: the same bytes
    iters = str(updates + 40)
    run("life", "fit", model, *FIT, "--iters", iters, "--out", t("ref.npy"))
    p = run("life", "fit", model, *FIT, "--iters", iters, "--out", t("cont.npy"), "--resume", t("w_state.bin"))
    check(f"resumed from {t('w_state.bin')} after update {updates}" in p.stdout, f"resume: {p.stdout!r}")
    if os.path.exists(t("cont.npy")) and os.path.exists(t("ref.npy")):
        check(read(t("cont.npy")) == read(t("ref.npy")), "resumed weights differ from the uninterrupted fit's")
        check(read(t("cont_history.npy")) == read(t("ref_history.npy")),
              "resumed history differs from the uninterrupted fit's")
        check(len(read(t("ref_history.npy"))) > 128 + 8 * (updates + 1), "the reference fit stopped early")

    # SIGTERM (what schedulers send first) under --state FILE
    rc, err = interrupt(model, t("v.npy"), signal.SIGTERM)
    names = sorted(os.listdir(tmp))
    check(rc == 1 and "life fit interrupted (SIGTERM)" in err, f"SIGTERM: exit {rc}: {err!r}")
    check("v_state.bin" in names and "v.npy" not in names and not [n for n in names if n.startswith(".")],
          f"SIGTERM: files {names}")

    # the state belongs to its model and options
    p = run("life", "fit", model, *FIT, "--lambda", "0.1", "--out", t("x.npy"), "--resume", t("w_state.bin"),
            expect=1)
    check("another model or to other options" in p.stderr, f"other lambda: {p.stderr!r}")
    p = run("life", "fit", model, *FIT, "--iters", str(updates), "--out", t("x.npy"), "--resume", t("w_state.bin"),
            expect=1)
    check("must be above it" in p.stderr, f"--iters at the state's updates: {p.stderr!r}")
    p = run("life", "fit", model, "--group", "1", "--resume", t("w_state.bin"), expect=2)
    check("keeps no resumable state" in p.stderr, f"--group --resume: {p.stderr!r}")

    # hostile states: each refused with exit 1 naming the file, no weights written
    good = read(t("w_state.bin"))
    header, payload = good[:64], good[64:]
    fibers, nup = struct.unpack_from("<ii", header, 48)
    check(len(payload) == 8 * (1 + 2 * fibers + nup), f"state: {len(payload)} bytes of data")

    def with_payload(data):  # a valid checksum over new data
        return header[:24] + struct.pack("<QQ", len(data), fnv(data)) + header[40:] + data

    cases = {
        "flipped.bin": (good[:-3] + bytes([good[-3] ^ 1]) + good[-2:], "checksum mismatch"),
        "short.bin": (good[:-8], "need"),
        "long.bin": (good + b"\0" * 8, "need"),
        "empty.bin": (b"", "no NSLIFEST header"),
        "nan_w.bin": (with_payload(payload[:8] + struct.pack("<d", float("nan")) + payload[16:]), "weight 0 is nan"),
        "neg_w.bin": (with_payload(payload[:8] + struct.pack("<d", -1.0) + payload[16:]), "weight 0 is -1"),
        "inf_hist.bin": (with_payload(payload[:-8] + struct.pack("<d", float("inf"))), f"update {nup} is inf"),
        "fibers.bin": (header[:48] + struct.pack("<i", 2 ** 31 - 1) + good[52:], "need"),
        "updates.bin": (header[:52] + struct.pack("<i", -5) + good[56:], "0 to"),
    }
    for name, (data, says) in cases.items():
        with open(t(name), "wb") as f:
            f.write(data)
        p = run("life", "fit", model, *FIT, "--out", t("bad.npy"), "--resume", t(name), expect=1)
        check(t(name) in p.stderr and says in p.stderr, f"{name}: {p.stderr!r}")
    check(not os.path.exists(t("bad.npy")), "a refused state left weights")

harness.finish("life_resume")
