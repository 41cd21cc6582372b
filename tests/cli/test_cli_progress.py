#!/usr/bin/env python3
"""Progress on a terminal (issue 45, item 6): `simulate`, `mechanisms build` and `life fit` draw
a one-line bar on stderr with the elapsed time and an estimate of the time left when stderr is a
terminal (run here under a pseudo-terminal), and nothing of it when --no-progress or --quiet is
given or (mechanisms build) stderr is a pipe. Without a C compiler the mechanisms build part skips.

usage: test_cli_progress.py PATH/TO/neurosolve SOURCE_DIR
"""
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

h = Harness(sys.argv[1])
BIN, SRC = sys.argv[1], os.path.abspath(sys.argv[2])
CELL = os.path.join(SRC, "data", "morphologies", "ca1_h10.swc")


def on_tty(*args, cwd=None):
    """(exit code, everything written) of the command with a pseudo-terminal as stdin, stdout
    and stderr."""
    master, slave = pty.openpty()
    p = subprocess.Popen([BIN, *args], stdin=slave, stdout=slave, stderr=slave, cwd=cwd, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        if not ready:
            p.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=60), out.decode(errors="replace")


def piped(*args, cwd=None):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


with tempfile.TemporaryDirectory() as tmp:
    # simulate: [####....]  xx.x%  t s, about N s left. The bar needs a run of more than a second:
    # tstop is sized from a 20 ms run's wall_s for about 3 s (at most 400 ms: about 2.5 s in a
    # release build; a sanitizer build, some 30x slower, gets a shorter run of the same length)
    sim = ["simulate", CELL, "--cells", "30", "--threads", "1", "--backend", "cpu", "--out", os.path.join(tmp, "r")]
    p = piped(*sim, "--tstop", "20", "--json")
    h.check(p.returncode == 0, f"simulate --tstop 20: exit {p.returncode}: {p.stderr[-400:]!r}")
    wall = json.loads(p.stdout or "{}").get("wall_s", 0.0)
    sim += ["--tstop", f"{min(400.0, max(20.0, 20.0 * 3.0 / wall)) if wall > 0 else 400.0:.1f}"]
    rc, out = on_tty(*sim)
    h.check(rc == 0, f"simulate on a terminal: exit {rc}: {out[-400:]!r}")
    h.check(re.search(r"\r\[[#.]{40}\] +\d+\.\d%  \d+\.\d s, about \d+ s left", out) is not None,
            f"simulate on a terminal: no bar with the time left: {out[-400:]!r}")
    rc, out = on_tty(*sim, "--no-progress")
    h.check(rc == 0 and "\r[" not in out, f"simulate --no-progress on a terminal drew a bar: {out[-400:]!r}")

    # mechanisms build: the file being compiled, [k/n], and from the second file on the time left
    mods = os.path.join(tmp, "mods")
    os.makedirs(mods)
    for name in ("passive.mod", "expsyn.mod"):
        shutil.copy(os.path.join(SRC, "data", "mechanisms", "neuron", name), mods)
    rc, out = on_tty("mechanisms", "build", mods, "-o", os.path.join(tmp, "lib.so"))
    if rc == 1 and "cannot run the compiler" in out:
        print("SKIP: mechanisms build: no C compiler")
    else:
        h.check(rc == 0, f"mechanisms build on a terminal: exit {rc}: {out[-400:]!r}")
        h.check("\rmechanisms build: [1/" in out, f"mechanisms build: no [1/n] line: {out[-600:]!r}")
        h.check(re.search(r"\rmechanisms build: \[\d+/\d+\] .*\d+ s, about \d+ s left", out) is not None,
                f"mechanisms build: no time left from the second step on: {out[-600:]!r}")
        p = piped("mechanisms", "build", mods, "-o", os.path.join(tmp, "lib2.so"))
        h.check(p.returncode == 0 and "mechanisms build: [" not in p.stderr,
                f"mechanisms build to a pipe drew progress: {p.stderr[-400:]!r}")

    # life fit: [###...] iteration k/n ... at most N s left
    model = os.path.join(tmp, "model")
    h.run("life", "synth", model, "--fibers", "200", "--theta", "16", "--L", "6", "--grid", "10,10,10", "--length",
          "12", "--seed", "2")
    fit = ["life", "fit", model, "--iters", "100", "--tolg", "0", "--tolo", "0", "--rtolg", "0", "--rtolo", "0",
           "--backend", "cpu", "--out", os.path.join(tmp, "w.npy")]
    rc, out = on_tty(*fit)
    h.check(rc == 0, f"life fit on a terminal: exit {rc}: {out[-400:]!r}")
    h.check(re.search(r"\r\[[#.]{30}\] iteration \d+/99 .* at most \d+ s left", out) is not None,
            f"life fit on a terminal: no bar with the time left: {out[-400:]!r}")
    rc, out = on_tty(*fit, "--quiet")
    h.check(rc == 0 and "\r[" not in out, f"life fit --quiet on a terminal drew a bar: {out[-400:]!r}")

h.finish("cli_progress")
