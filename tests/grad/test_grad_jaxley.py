#!/usr/bin/env python3
"""neurosolve's gradient against Jaxley's autodiff (jax.grad at x64) on the
same discrete equations: a CA1 cell in Jaxley's form (131 compartments), hh
everywhere, a clamp at the soma (it spikes), 400 steps, three sites, the
gradient of sum (v - target)^2 with respect to gnabar_hh, gkbar_hh, gl_hh, cm
and Ra of the whole cell and el_hh of two sections (Jaxley's branch-level
parameters). Jaxley's loss, gradient and traces are stored in
DIR/reference.json by validation/jaxley_grad.py (its header names Jaxley's
version and the command); CI has no Jaxley. `neurosolve bench grad` runs the
case from the same files (reference.json's bench_args).

Tolerances: the gradient 1e-6 relative per parameter (issue 43's target), the
loss 1e-9 relative, the traces 1e-8 mV (they agree to rounding, 3e-9 mV over
the spikes, docs/gradients.md).

usage: test_grad_jaxley.py PATH/TO/neurosolve DIR
"""
import json
import os
import subprocess
import sys
import tempfile

BIN, DIR = sys.argv[1], sys.argv[2]
fails = 0


def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    fails += not ok


with open(os.path.join(DIR, "reference.json")) as f:
    ref = json.load(f)
with tempfile.TemporaryDirectory() as tmp:
    traces_file = os.path.join(tmp, "traces.txt")
    cmd = [BIN, "bench", "grad", *ref["bench_args"], "--repeat", "1", "--json", "--traces", traces_file]
    p = subprocess.run(cmd, cwd=DIR, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"FAIL {' '.join(cmd)}: exit {p.returncode}: {p.stderr}")
    ours = json.loads(p.stdout)
    with open(traces_file) as f:
        rows = [[float(x) for x in line.split()] for line in f]

jt = ref["traces"]  # sites x samples
check(len(rows) == len(jt[0]) and all(len(r) == len(jt) for r in rows),
      f"traces: {len(rows)} samples of {len(rows[0])} sites (Jaxley: {len(jt[0])} of {len(jt)})")
# the case is the one meant: the soma spikes (the gradient goes through the spikes)
check(max(jt[0]) > 20.0, f"the soma spikes in the reference (max {max(jt[0]):.1f} mV)")
dv = max(abs(rows[q][k] - jt[k][q]) for q in range(len(rows)) for k in range(len(jt)))
check(dv < 1e-8, f"forward: largest difference to Jaxley's traces {dv:.3g} mV (< 1e-8)")
rl = abs(ours["loss"] - ref["loss"]) / abs(ref["loss"])
check(rl < 1e-9, f"loss {ours['loss']!r} vs Jaxley's {ref['loss']!r}: {rl:.3g} relative (< 1e-9)")
check(ours["params"] == ref["params"], f"parameters {ours['params']}")
for name, a, b in zip(ref["params"], ours["gradient"], ref["gradient"]):
    r = abs(a - b) / abs(b)
    check(r < 1e-6, f"dL/d{name}: {a!r} vs Jaxley's {b!r}: {r:.3g} relative (< 1e-6)")
print(f"test_grad_jaxley: {fails} failure(s)")
sys.exit(1 if fails else 0)
