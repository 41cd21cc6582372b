#!/usr/bin/env python3
"""simulate --probe --lfp-populations (issue 44): the potentials of each population's cells in
PREFIX_lfp_populations.npy (samples x populations x contacts), checked against runs of each
population's cells alone (cells do not interact: the same potentials to rounding) and against
the total in PREFIX_lfp.npy; a population file equal to `morphology` gives the same file; a bad
population file is refused naming its line; simulate --json accounts for the probe's time;
--lfp-storage lowrank gives the dense potentials within its bound (--json: the bound and ranks).

usage: test_cli_lfp.py NEUROSOLVE SOURCE_DIR"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

exe, src = sys.argv[1], sys.argv[2]
harness = Harness(exe)
check, run = harness.check, harness.run
MORPH = os.path.join(src, "data", "morphologies")
A, B = os.path.join(MORPH, "celegans_M5.swc"), os.path.join(MORPH, "dg_granule_1220882a.swc")
tmp = tempfile.mkdtemp()
probe = os.path.join(tmp, "probe.txt")
with open(probe, "w") as f:  # points and a disc near the cells
    f.write("0 0 50\n30 -20 0\n-40 60 120\n10 25 -30 0 1 0 5 9\n")
base = ["simulate", "--cells", "2", "--tstop", "8", "--backend", "cpu", "--threads", "1", "--no-progress", "--probe", probe,
        "--lfp-every", "2"]


def lfp(out, *morphs, extra=()):
    run(*base[:1], *morphs, *base[1:], *extra, "--out", out + "/")
    pop = os.path.join(out, "lfp_populations.npy")
    return np.load(os.path.join(out, "lfp.npy")), np.load(pop) if os.path.exists(pop) else None


both, pops = lfp(os.path.join(tmp, "both"), A, B, extra=["--lfp-populations", "morphology"])
alone = [lfp(os.path.join(tmp, "a"), A)[0], lfp(os.path.join(tmp, "b"), B)[0]]
check(pops is not None and pops.shape == (both.shape[0], 2, both.shape[1] - 1),
      f"lfp_populations.npy: shape {None if pops is None else pops.shape}, lfp.npy {both.shape}")
if pops is not None and pops.shape[1] == 2:
    scale = np.abs(both[:, 1:]).max()
    check(scale > 0, "the probe sees no potential")
    for p in range(2):
        err = np.abs(pops[:, p, :] - alone[p][:, 1:]).max() / scale
        check(err <= 1e-12, f"population {p} against its cells alone: {err:.3g} of the largest")
    err = np.abs(pops.sum(axis=1) - both[:, 1:]).max() / scale
    check(err <= 1e-13, f"the populations' sum against lfp.npy: {err:.3g}")
    # the same populations from a file; then cells 0 and 3 against 1 and 2
    pf = os.path.join(tmp, "pop.txt")
    with open(pf, "w") as f:
        f.write("# one population per cell\n0\n0\n1\n1\n")
    _, same = lfp(os.path.join(tmp, "file"), A, B, extra=["--lfp-populations", pf])
    check(same is not None and np.array_equal(same, pops), "a file equal to `morphology`: another result")
    with open(pf, "w") as f:
        f.write("0\n1\n1\n0\n")
    total, mixed = lfp(os.path.join(tmp, "mixed"), A, B, extra=["--lfp-populations", pf])
    check(mixed is not None and np.abs(mixed.sum(axis=1) - total[:, 1:]).max() <= 1e-13 * scale,
          "mixed populations: their sum is not the total")
    check(mixed is not None and not np.allclose(mixed[:, 0, :], pops[:, 0, :]), "mixed populations: the same as by morphology")
# refused: a bad line (FILE:LINE), too few cells, no probe
bad = os.path.join(tmp, "bad.txt")
with open(bad, "w") as f:
    f.write("0\nx\n1\n1\n")
p = run(*base[:1], A, B, *base[1:], "--lfp-populations", bad, expect=1)
check(f"{bad}:2: 'x' is not a decimal number" in p.stderr, f"bad line: {p.stderr!r}")
with open(bad, "w") as f:
    f.write("0\n1\n")
p = run(*base[:1], A, B, *base[1:], "--lfp-populations", bad, expect=1)
check(f"{bad}: 2 lines for 4 cells" in p.stderr, f"too few: {p.stderr!r}")
p = run("simulate", A, "--tstop", "1", "--threads", "1", "--no-progress", "--lfp-populations", "morphology", expect=1)
check("--lfp-populations needs --probe" in p.stderr, f"no probe: {p.stderr!r}")
# the probe's account in --json
p = run(*base[:1], A, *base[1:], "--json")
t = json.loads(p.stdout).get("lfp_timing", {}) if p.returncode == 0 else {}
check(t.get("setup_ms", 0) > 0 and t.get("sampling_ms", 0) > 0 and t.get("reductions") == 0,
      f"lfp_timing on the CPU: {t}")
# lowrank: within its bound of the dense run; --json gives the bound and the ranks
dense = lfp(os.path.join(tmp, "dense"), B)[0]
low = lfp(os.path.join(tmp, "low"), B, extra=["--lfp-storage", "lowrank", "--lfp-rank-tolerance", "1e-6"])[0]
p = run(*base[:1], B, *base[1:], "--lfp-storage", "lowrank", "--lfp-rank-tolerance", "1e-6", "--json")
j = json.loads(p.stdout) if p.returncode == 0 else {}
bound = j.get("lfp_error_bound", 0.0)
check(j.get("lfp_storage") == "lowrank" and 0 < j.get("lfp_rank_max", 0) <= 4 and 0 < bound <= 1e-6,
      f"lowrank --json: {dict((k, v) for k, v in j.items() if k.startswith('lfp_') and k != 'lfp_timing')}")
big = np.abs(dense[:, 1:]).max(axis=1)
err = (np.abs(low[:, 1:] - dense[:, 1:]).max(axis=1) / np.where(big > 0, big, np.inf)).max()
check(err <= bound, f"lowrank against dense: {err:.3g} of each sample's largest, bound {bound:.3g}")
p = run(*base[:1], B, *base[1:], "--lfp-storage", "lowrank", "--lfp-rank-tolerance", "2", expect=2)
check("--lfp-rank-tolerance 2" in p.stderr, f"a rank tolerance of 2: {p.stderr!r}")
harness.finish("cli_lfp")
