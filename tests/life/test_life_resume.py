#!/usr/bin/env python3
"""life fit interrupted and resumed: SIGINT and SIGTERM mid-fit save a resumable state and no
weights (no temporaries left); --resume continues to the uninterrupted fit's weights and
history bit for bit (CPU, same thread count), for SBBNNLS and for the group fit (--group); a
state from other options or the other solver, a damaged one and one with a valid checksum but
bad values are refused naming the file. No numpy needed: the NPY files are compared as bytes,
the groups file and the states are built with struct."""
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


def interrupt(model, out, sig, extra=()):
    """Start an endless fit, signal it once it runs; returns (exit code, stderr)."""
    for wait in (0.7, 1.5, 3.0):
        p = subprocess.Popen([exe, "life", "fit", model, *FIT, *extra, "--iters", "100000000", "--out", out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(wait)
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
        if p.returncode != -sig:  # not killed before its handlers were installed
            return p.returncode, err
    return p.returncode, err


def npy_int32(path, values):
    """An NPY v1 file of little-endian int32 (numpy's layout: the header padded to 64 bytes)."""
    head = "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + struct.pack(f"<{len(values)}i", *values))


def resumed_equals_uninterrupted(model, state, updates, stem, extra=()):
    """--resume STATE to updates + 40 updates against the same fit without a stop: the same bytes."""
    iters = str(updates + 40)
    run("life", "fit", model, *FIT, *extra, "--iters", iters, "--out", t(f"{stem}_ref.npy"))
    p = run("life", "fit", model, *FIT, *extra, "--iters", iters, "--out", t(f"{stem}_cont.npy"), "--resume", state)
    check(f"resumed from {state} after update {updates}" in p.stdout, f"{stem} resume: {p.stdout!r}")
    if os.path.exists(t(f"{stem}_cont.npy")) and os.path.exists(t(f"{stem}_ref.npy")):
        check(read(t(f"{stem}_cont.npy")) == read(t(f"{stem}_ref.npy")),
              f"{stem}: resumed weights differ from the uninterrupted fit's")
        check(read(t(f"{stem}_cont_history.npy")) == read(t(f"{stem}_ref_history.npy")),
              f"{stem}: resumed history differs from the uninterrupted fit's")
        check(len(read(t(f"{stem}_ref_history.npy"))) > 128 + 8 * (updates + 1), f"{stem}: the reference fit stopped early")


def fnv(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


with tempfile.TemporaryDirectory() as tmp:
    def t(n):
        return os.path.join(tmp, n)
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
    resumed_equals_uninterrupted(model, t("w_state.bin"), updates, "w")

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

    # the group fit (FISTA) keeps its own state: 20 groups of 20 fibers
    npy_int32(t("groups.npy"), [i % 20 for i in range(400)])
    GROUP = ["--group", "0.5", "--groups", t("groups.npy")]
    rc, err = interrupt(model, t("g.npy"), signal.SIGINT, GROUP)
    check(rc == 1 and "life fit interrupted (SIGINT) after " in err and os.path.exists(t("g_state.bin")),
          f"group SIGINT: exit {rc}: {err!r}")
    gupdates = int(err.split("after ")[1].split(" updates")[0]) if "after " in err else 0
    check(gupdates >= 1, f"group SIGINT came before the first update: {err!r}")
    resumed_equals_uninterrupted(model, t("g_state.bin"), gupdates, "g", GROUP)
    # each solver's state belongs to it, and the group state to its G and groups
    p = run("life", "fit", model, *FIT, *GROUP, "--out", t("x.npy"), "--resume", t("w_state.bin"), expect=1)
    check("kept by SBBNNLS (no group), this fit is the group fit" in p.stderr, f"SBBNNLS state, --group: {p.stderr!r}")
    p = run("life", "fit", model, *FIT, "--out", t("x.npy"), "--resume", t("g_state.bin"), expect=1)
    check("kept by the group fit (group > 0), this fit is SBBNNLS" in p.stderr, f"group state, no group: {p.stderr!r}")
    p = run("life", "fit", model, *FIT, "--group", "1", "--groups", t("groups.npy"), "--out", t("x.npy"),
            "--resume", t("g_state.bin"), expect=1)
    check("another model or to other options" in p.stderr, f"group state, other G: {p.stderr!r}")
    npy_int32(t("groups2.npy"), [i % 21 for i in range(400)])
    p = run("life", "fit", model, *FIT, "--group", "0.5", "--groups", t("groups2.npy"), "--out", t("x.npy"),
            "--resume", t("g_state.bin"), expect=1)
    check("another model or to other options" in p.stderr, f"group state, other groups: {p.stderr!r}")

    # hostile states: each refused with exit 1 naming the file, no weights written
    H = 72  # header bytes

    def with_payload(header, data):  # a valid checksum over new data
        return header[:24] + struct.pack("<QQ", len(data), fnv(data)) + header[40:] + data

    def f64(x):
        return struct.pack("<d", x)

    good = read(t("w_state.bin"))
    header, payload = good[:H], good[H:]
    fibers, nup = struct.unpack_from("<ii", header, 48)
    check(len(payload) == 8 * (1 + 2 * fibers + nup), f"state: {len(payload)} bytes of data")
    cases = {
        "flipped.bin": (good[:-3] + bytes([good[-3] ^ 1]) + good[-2:], "checksum mismatch"),
        "short.bin": (good[:-8], "need"),
        "long.bin": (good + b"\0" * 8, "need"),
        "empty.bin": (b"", "no NSLIFEST header"),
        "v1.bin": (good[:8] + struct.pack("<I", 1) + good[12:], "version 1 (this build reads 2)"),
        "cut_header.bin": (good[:40], "ends inside its header"),
        "nan_w.bin": (with_payload(header, payload[:8] + f64(float("nan")) + payload[16:]), "weight 0 is nan"),
        "neg_w.bin": (with_payload(header, payload[:8] + f64(-1.0) + payload[16:]), "weight 0 is -1"),
        "inf_hist.bin": (with_payload(header, payload[:-8] + f64(float("inf"))), f"update {nup} is inf"),
        "fibers.bin": (header[:48] + struct.pack("<i", 2 ** 31 - 1) + good[52:], "need"),
        "updates.bin": (header[:52] + struct.pack("<i", -5) + good[56:], "0 to"),
        "solver.bin": (header[:56] + struct.pack("<I", 7) + good[60:], "solver 7"),
        "values.bin": (header[:64] + struct.pack("<q", 5) + good[72:], "0 values"),
    }
    # the group state: f64 pg, t, L, F, x[fibers], y[fibers], history[updates], Mx[values], My[values]
    gg = read(t("g_state.bin"))
    gh, gp = gg[:H], gg[H:]
    gf, gu = struct.unpack_from("<ii", gh, 48)
    (nval,) = struct.unpack_from("<q", gh, 64)
    check(struct.unpack_from("<I", gh, 56)[0] == 1 and nval >= 24 and nval % 24 == 0, f"group state header: {gh!r}")
    check(len(gp) == 8 * (4 + 2 * gf + gu + 2 * nval), f"group state: {len(gp)} bytes of data")
    cases.update({
        "g_t.bin": (with_payload(gh, gp[:8] + f64(0.5) + gp[16:]), "momentum t = 0.5"),
        "g_L.bin": (with_payload(gh, gp[:16] + f64(0.0) + gp[24:]), "step bound L = 0"),
        "g_F.bin": (with_payload(gh, gp[:24] + f64(float("nan")) + gp[32:]), "the objective F is nan"),
        "g_y.bin": (with_payload(gh, gp[:32 + 8 * gf] + f64(float("inf")) + gp[40 + 8 * gf:]),
                    "extrapolated weight 0 is inf"),
        "g_My.bin": (with_payload(gh, gp[:-8] + f64(float("-inf"))), f"M y entry {nval - 1} is -inf"),
        "g_values.bin": (gh[:64] + struct.pack("<q", 2 ** 62) + gg[72:], "1 to 2^40"),
        "g_values0.bin": (gh[:64] + struct.pack("<q", 0) + gg[72:], "1 to 2^40"),
        "g_short.bin": (gg[:-8], "need"),
    })
    for name, (data, says) in cases.items():
        with open(t(name), "wb") as f:
            f.write(data)
        extra = GROUP if name.startswith("g_") else []
        p = run("life", "fit", model, *FIT, *extra, "--out", t("bad.npy"), "--resume", t(name), expect=1)
        check(t(name) in p.stderr and says in p.stderr, f"{name}: {p.stderr!r}")
    check(not os.path.exists(t("bad.npy")), "a refused state left weights")

harness.finish("life_resume")
