"""Fit channel densities of a real neuron to a voltage trace with the adjoint's gradients.

    python3 examples/python/fit_gbar.py [--steps 400] [--morph data/morphologies/ca1_ko20x-07.swc]

A bundled CA1 morphology with NEURON's hh and pas everywhere and a current clamp at
the soma; the target is the simulation's own soma and dendrite voltages with known
densities (somatic gnabar_hh, gkbar_hh, g_pas everywhere). From a start 20-40 % off,
scipy's L-BFGS-B with neurosolve's exact gradients (neurosolve.grad, docs/gradients.md)
recovers them; the script prints the relative errors and exits 1 above 1e-3."""
import argparse
import os
import sys
import time

import numpy as np
from scipy.optimize import minimize

import neurosolve as ns

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PARAMS = [("soma", "gnabar_hh"), ("all", "gkbar_hh"), ("all", "g_pas")]
TRUE = np.array([0.12, 0.036, 3e-4])
START = TRUE * np.array([1.3, 0.7, 1.4])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=400, help="steps of 0.025 ms")
    ap.add_argument("--morph", default=os.path.join(ROOT, "data", "morphologies", "ca1_ko20x-07.swc"))
    args = ap.parse_args()
    t0 = time.perf_counter()

    cell = ns.read_swc(args.morph).discretize()
    model = ns.Model()
    model.parse("all.insert = hh pas\nall.e_pas = -65\nglobal.usetable_hh = 0\n", "fit.model")
    sim = ns.Simulation([cell], 1, backend="cpu", model=model, threads=1, gpu_mechanisms="per-step")
    sim.add_iclamp(0, 0, 1.0, 1e9, 0.5)
    for c in (0, cell.size // 2, cell.size - 1):
        sim.add_recording(0, c)
    g = ns.Gradient(sim, threads=1)
    for where, name in PARAMS:
        g.add_param(0, where, name)

    target = ns.grad.traces(g, args.steps, TRUE)  # the synthetic target: a run with the true values
    calls = 0

    def f(x):  # x: the values over the start (scaled to order 1)
        nonlocal calls
        calls += 1
        L, grad, _ = ns.grad.value_and_grad(g, args.steps, x * START, target=target)
        return L, grad * START

    res = minimize(f, np.ones(len(START)), jac=True, method="L-BFGS-B", bounds=[(0.05, 20.0)] * len(START),
                   options={"ftol": 1e-14, "gtol": 1e-10, "maxiter": 200})
    fit = res.x * START
    err = np.abs(fit - TRUE) / TRUE
    for (where, name), t, s, v, e in zip(PARAMS, TRUE, START, fit, err):
        print(f"{where:>5}.{name:<10} true {t:.6g}  start {s:.6g}  fit {v:.9g}  relative error {e:.1e}")
    print(f"{cell.size} compartments, {args.steps} steps, {calls} gradients, "
          f"final loss {res.fun:.3e}, {time.perf_counter() - t0:.2f} s")
    return 0 if err.max() <= 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
