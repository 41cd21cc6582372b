"""Per-call overhead of the Python bindings (docs/python.md, bench/README.md).

For each case the same solver and the same arrays are solved R times from
Python (solver.solve, plus solver.wait() for device arrays) and R times by a
C loop inside the extension (neurosolve._core._bench_c_solve: the C call
ns_hines_solver_solve, or ns_hines_solver_solve_device + ns_hines_solver_wait,
with no binding in between). Before every call, outside the timed region, d
and rhs are restored from copies (and the device synchronised). The two loops
alternate in rounds (C, Python, C, Python, ...) and the medians of all calls
are compared: overhead = median(Python) / median(C) - 1. The result of the
last Python solve is checked against the CPU sequential solve in the same run.

The 1-cell case shows the fixed cost of a call (checks, DLPack import, GIL).

Usage: python bench/python_overhead.py [--cells 1,10000,100000] [--repeats 30]
       [--frameworks numpy,cupy,torch,jax] [--out FILE.md] [--csv FILE.csv]
"""
import argparse
import datetime
import os
import platform
import statistics
import sys
import time

import numpy as np

import neurosolve as ns

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def timed_python(solver, arrs, restore, repeats, stream, device):
    out = []
    for _ in range(repeats):
        restore()
        t0 = time.perf_counter()
        solver.solve(*arrs, stream=stream)
        if device:
            solver.wait()
        out.append(time.perf_counter() - t0)
    return out


def run_case(batch, method, framework, repeats, rounds, ref):
    a, b, d0, r0 = batch.random_values(seed=1)
    solver = ns.HinesSolver(batch, method=method)
    device = framework != "numpy"
    if framework == "numpy":
        arrs = [a, b, d0.copy(), r0.copy()]

        def restore():
            np.copyto(arrs[2], d0)
            np.copyto(arrs[3], r0)

        result = lambda: arrs[3]
    elif framework == "cupy":
        import cupy as cp
        arrs = [cp.asarray(v) for v in (a, b, d0, r0)]
        D0, R0 = cp.asarray(d0), cp.asarray(r0)

        def restore():
            cp.copyto(arrs[2], D0)
            cp.copyto(arrs[3], R0)
            cp.cuda.Device().synchronize()

        result = lambda: cp.asnumpy(arrs[3])
    elif framework == "torch":
        import torch
        arrs = [torch.from_numpy(v).cuda() for v in (a, b, d0, r0)]
        D0, R0 = torch.from_numpy(d0).cuda(), torch.from_numpy(r0).cuda()

        def restore():
            arrs[2].copy_(D0)
            arrs[3].copy_(R0)
            torch.cuda.synchronize()

        result = lambda: arrs[3].cpu().numpy()
    elif framework == "jax":
        import jax
        import jax.numpy as jnp
        import cupy as cp
        jax.config.update("jax_enable_x64", True)
        arrs = [jax.device_put(jnp.asarray(v)) for v in (a, b, d0, r0)]
        jax.block_until_ready(arrs)
        # JAX arrays are immutable: restore their buffers through CuPy views (DLPack, no copy)
        views = [cp.from_dlpack(x) for x in arrs[2:]]
        D0, R0 = cp.asarray(d0), cp.asarray(r0)

        def restore():
            cp.copyto(views[0], D0)
            cp.copyto(views[1], R0)
            cp.cuda.Device().synchronize()

        result = lambda: np.asarray(arrs[3])
    else:
        raise SystemExit(f"unknown framework {framework}")
    # warm-up (first launches, DLPack imports)
    restore()
    solver.solve(*arrs)
    if device:
        solver.wait()
    c_times, py_times = [], []
    for _ in range(rounds):
        c_times += ns._core._bench_c_solve(solver, *arrs, restore, repeats, None)
        py_times += timed_python(solver, arrs, restore, repeats, None, device)
    x = result()
    err = float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))
    c_med, py_med = statistics.median(c_times), statistics.median(py_times)
    return {"framework": framework, "method": solver.method, "backend": solver.backend,
            "cells": batch.n_cells, "compartments": batch.compartments, "c_ms": c_med * 1e3,
            "py_ms": py_med * 1e3, "overhead_us": (py_med - c_med) * 1e6,
            "overhead_pct": 100 * (py_med / c_med - 1), "max_rel_err": err, "calls": len(py_times)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="1,10000,100000")
    ap.add_argument("--shape", default="medium-high")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--frameworks", default="numpy,cupy,torch,jax")
    ap.add_argument("--cpu-method", default="openmp")
    ap.add_argument("--out", default=None)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    gpu = ns.build_info()["cuda"] and ns.cuda_device_count() > 0
    rows = []
    failures = []
    for cells in (int(c) for c in args.cells.split(",")):
        batch = ns.Batch([ns.Tree.paper(args.shape, seed=1)], cells)
        a, b, d, r = batch.random_values(seed=1)
        ref = r.copy()
        ns.HinesSolver(batch, method="sequential").solve(a, b, d, ref)
        for fw in args.frameworks.split(","):
            if fw != "numpy" and not gpu:
                print(f"{fw}: skipped (no GPU)", file=sys.stderr)
                continue
            methods = [args.cpu_method] + (["tree"] if gpu else []) if fw == "numpy" else ["tree"]
            for m in methods:
                try:
                    row = run_case(batch, m, fw, args.repeats, args.rounds, ref)
                except ImportError as e:
                    print(f"{fw}: skipped ({e})", file=sys.stderr)
                    break
                except Exception as e:  # noqa: BLE001 (report and go on with the other cases)
                    print(f"{fw} {m} {cells} cells: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
                    failures.append(f"{fw} {m} {cells}")
                    continue
                rows.append(row)
                print(f"{fw:6s} {row['method']:8s} {cells:7d} cells: C {row['c_ms']:.4f} ms, Python "
                      f"{row['py_ms']:.4f} ms, overhead {row['overhead_us']:.1f} us ({row['overhead_pct']:+.2f} %), "
                      f"max rel err {row['max_rel_err']:.1e}", flush=True)
    head = ["framework", "method", "backend", "cells", "compartments", "c_ms", "py_ms", "overhead_us",
            "overhead_pct", "max_rel_err", "calls"]
    dev = "CPU only"
    if gpu:
        try:
            import cupy as cp
            dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception:  # noqa: BLE001
            dev = "GPU"
    lines = [f"Python binding overhead, {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, {platform.node()}, "
             f"{dev}, neurosolve {ns.version()}, Python {platform.python_version()}, shape {args.shape}, "
             f"median of {args.rounds} x {args.repeats} calls each",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[h]:.4g}" if isinstance(r[h], float) else str(r[h]) for h in head) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(",".join(head) + "\n")
            for r in rows:
                f.write(",".join(str(r[h]) for h in head) + "\n")
    bad = [r for r in rows if r["max_rel_err"] > 1e-9]
    if failures:
        print(f"FAILED cases: {', '.join(failures)}", file=sys.stderr)
        return 1
    if bad:
        print(f"WRONG RESULTS in {len(bad)} cases", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
