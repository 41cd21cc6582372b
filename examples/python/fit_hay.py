"""Fit conductances of Hay et al. 2011's L5 pyramidal cell to a voltage trace with the adjoint.

    python3 examples/python/fit_hay.py [--steps 400] [--library PATH]

data/models/l5pc_hay.model and .params on its real morphology
(data/morphologies/l5pc_bbp_axon.swc: ten BBP channels, calcium dynamics with eca by Nernst,
SK_E2 reading cai), a 2 nA clamp at the soma; the target is the simulation's own soma, apical
and axon voltages with the model's somatic densities of NaTa_t, SKv3_1, Ca_HVA and SK_E2
(known: the model file's). From a start 20-30 % off, scipy's L-BFGS-B with neurosolve's exact
gradients (docs/gradients.md, "Ions") recovers them; the script prints the relative errors and
exits 1 above 1e-3. It builds the BBP library first (or takes --library)."""
import argparse
import os
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import minimize

import neurosolve as ns

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PARAMS = [("soma", "gNaTa_tbar_NaTa_t"), ("soma", "gSKv3_1bar_SKv3_1"), ("soma", "gCa_HVAbar_Ca_HVA"),
          ("soma", "gSK_E2bar_SK_E2")]
SCALE = np.array([1.25, 0.75, 1.3, 0.8])  # the start over the true values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400, help="steps of 0.025 ms")
    ap.add_argument("--library", help="the BBP channels' library (default: built into a temporary folder)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    lib_path = args.library
    if not lib_path:
        lib_path = os.path.join(tempfile.mkdtemp(), "libbbp.so")
        ns.build_mechanisms(os.path.join(ROOT, "data", "mechanisms", "bbp"), lib_path)
    t_build = time.perf_counter() - t0

    model = ns.Model(ns.MechanismLibrary(lib_path))
    model.read(os.path.join(ROOT, "data", "models", "l5pc_hay.model"))
    params = ns.SimParams()
    params.read(os.path.join(ROOT, "data", "models", "l5pc_hay.params"))
    cell = ns.read_swc(os.path.join(ROOT, "data", "morphologies", "l5pc_bbp_axon.swc")).discretize(Ra=100)
    sim = ns.Simulation([cell], 1, params=params, backend="cpu", model=model, threads=1, gpu_mechanisms="per-step")
    sim.add_iclamp(0, 0, 1.0, 1e9, 2.0)
    for c in (0, cell.size // 2, cell.size - 1):
        sim.add_recording(0, c)
    g = ns.Gradient(sim, threads=1)
    for where, name in PARAMS:
        g.add_param(0, where, name)
    true = np.array([g.get_param(k) for k in range(len(PARAMS))])  # the model file's values
    start = true * SCALE

    target = ns.grad.traces(g, args.steps, true)  # the synthetic target: a run with the true values
    calls = 0

    def f(x):  # x: the values over the start (scaled to order 1)
        nonlocal calls
        calls += 1
        L, grad, _ = ns.grad.value_and_grad(g, args.steps, x * start, target=target)
        return L, grad * start

    res = minimize(f, np.ones(len(start)), jac=True, method="L-BFGS-B", bounds=[(0.05, 20.0)] * len(start),
                   options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 300})
    fit = res.x * start
    err = np.abs(fit - true) / true
    for (where, name), t, s, v, e in zip(PARAMS, true, start, fit, err):
        print(f"{where:>5}.{name:<20} true {t:.6g}  start {s:.6g}  fit {v:.9g}  relative error {e:.1e}")
    print(f"{cell.size} compartments, {args.steps} steps, {calls} gradients, final loss {res.fun:.3e}, "
          f"{time.perf_counter() - t0 - t_build:.2f} s (the library's build apart: {t_build:.1f} s)")
    return 0 if err.max() <= 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
