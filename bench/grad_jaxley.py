#!/usr/bin/env python3
"""neurosolve's gradient against Jaxley's (jax.grad at x64) on the same discrete
equations, in one run (docs/gradients.md, "Against Jaxley"; issue 43).

The case is validation/jaxley_grad.py's: a bundled morphology in Jaxley's form
(one radius per section, ncomp compartments each), NEURON's hh everywhere
(Jaxley's HH channel), a clamp at the soma for the whole run, the soma and two
dendritic sites recorded, L = sum (v - target)^2, the gradient with respect to
gNa, gK, gLeak, cm and Ra of the whole cell and eLeak of two sections. neurosolve runs through
`neurosolve bench grad` (the CPU, one thread, best of --repeat); Jaxley through
jax.jit of jx.integrate and of jax.value_and_grad of the loss, on JAX's default
device (the GPU where there is one), compile time apart (the first call minus
the best later one), best of --repeat.

Prints one JSON line: the maximum relative difference of the gradients, the
largest difference of the forward traces [mV], both losses, and the timings.

usage: python3 bench/grad_jaxley.py [--morph FILE.swc] [--ncomp N] [--steps N]
           [--repeat R] [--neurosolve PATH] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "validation"))
import jaxley_grad as jg  # noqa: E402


def best_time(f, repeat):
    """(first call's seconds, best of `repeat` later calls' seconds, the result)."""
    t0 = time.perf_counter()
    out = f()
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return first, best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--morph", default=os.path.join(ROOT, "data", "morphologies", "allen_chat_614430666.swc"))
    ap.add_argument("--ncomp", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--neurosolve", default=os.path.join(ROOT, "build", "neurosolve"))
    ap.add_argument("--out", help="where the case's files go (default: a temporary folder)")
    a = ap.parse_args()
    import jax
    import numpy as np
    case = jg.Case(a.morph, a.ncomp, a.steps)
    folder = a.out or tempfile.mkdtemp(prefix="grad_jaxley_")
    case.write(folder)

    traces_file = os.path.join(folder, "traces.txt")
    cmd = [a.neurosolve, "bench", "grad", *case.bench_args(folder), "--repeat", str(a.repeat), "--json",
           "--traces", traces_file]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr}")
    ours = json.loads(p.stdout)

    cell = jg.jaxley_cell(case)
    params = cell.get_parameters()
    simulate, loss = jg.jaxley_functions(case, cell)
    fwd = jax.jit(simulate)
    grad = jax.jit(jax.value_and_grad(loss))
    f_first, f_best, v = best_time(lambda: jax.block_until_ready(fwd(params)), a.repeat)
    g_first, g_best, (L, g) = best_time(lambda: jax.block_until_ready(grad(params)), a.repeat)
    gj = np.array(jg.jaxley_gradient(g))
    gn = np.array(ours["gradient"])
    dv = np.abs(np.loadtxt(traces_file, ndmin=2).T - np.asarray(v))
    import jaxley
    row = {
        "morph": os.path.basename(a.morph), "compartments": ours["compartments"], "ncomp": a.ncomp,
        "steps": a.steps, "dt": case.dt, "params": case.params(),
        "grad_max_rel_diff": float(np.max(np.abs(gn - gj) / np.abs(gj))),
        "forward_max_abs_dv_mV": float(dv.max()),
        "loss_neurosolve": ours["loss"], "loss_jaxley": float(L),
        "neurosolve_device": "CPU, one thread", "neurosolve_forward_ms": ours["forward_ms"],
        "neurosolve_gradient_ms": ours["gradient_ms"],
        "jaxley": jaxley.__version__, "jax": jax.__version__, "jaxley_device": str(jax.devices()[0]),
        "jaxley_forward_ms": 1e3 * f_best, "jaxley_forward_compile_s": f_first - f_best,
        "jaxley_gradient_ms": 1e3 * g_best, "jaxley_gradient_compile_s": g_first - g_best,
        "gradient_speedup": 1e3 * g_best / ours["gradient_ms"],
    }
    print(json.dumps(row))


if __name__ == "__main__":
    sys.exit(main())
