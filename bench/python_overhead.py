#!/usr/bin/env python3
"""Per-call overhead of the Python bindings against the C call (issue 17).

The same HinesSolver and the same arrays are solved three ways, interleaved
call by call (C, solve, bound; the order rotates every iteration so that
drift of the machine falls on all three alike):

  C      ns_hines_solver_solve (or _solve_device + ns_hines_solver_wait)
         timed inside the extension (neurosolve._core._bench_c_solve, one
         call per iteration);
  solve  solver.solve(a, b, d, rhs) from Python: four array checks and
         imports (buffer protocol or DLPack) per call;
  bound  bound.solve() of bound = solver.bind(a, b, d, rhs): the arrays
         checked and imported once, before the loop.

Device arrays: the Python time includes solver.wait() (or bound.wait()), as
the C time includes ns_hines_solver_wait. d and rhs are restored before every
call, outside the timed region. overhead = median over iterations of
(t_python - t_C) / median(t_C); the 1-cell case shows the fixed cost of a
call. The result of every variant is checked against the CPU sequential
solve in the same run (the script fails on a relative difference above 1e-9).

Frameworks: numpy (host arrays: the CPU method and, with a GPU, `tree` on
host arrays), torch-cpu and jax-cpu (CPU tensors through DLPack, CPU method),
cupy, torch, jax (CUDA arrays, `tree`, legacy default stream).

Usage: python bench/python_overhead.py [--cells 1,10000,100000] [--iters 60]
       [--frameworks numpy,torch-cpu,jax-cpu,cupy,torch,jax] [--out FILE.md] [--csv FILE.csv]
"""
import argparse
import ctypes
import datetime
import os
import platform
import statistics
import sys
import time

import numpy as np

import neurosolve as ns

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def writable_host_view(ptr, n):
    """A writable numpy view of n float64 at a host address (to restore JAX's immutable buffers)."""
    return np.ctypeslib.as_array((ctypes.c_double * n).from_address(ptr))


def make_arrays(framework, a, b, d0, r0):
    """(arrays, restore, result, device) for one framework: arrays hold a, b, d0, r0;
    restore() puts d0, r0 back (and synchronises a device); result() is rhs as numpy."""
    n = a.size
    if framework == "numpy":
        arrs = [a, b, d0.copy(), r0.copy()]

        def restore():
            np.copyto(arrs[2], d0)
            np.copyto(arrs[3], r0)

        return arrs, restore, lambda: arrs[3].copy(), False
    if framework == "torch-cpu":
        import torch
        host = [a, b, d0.copy(), r0.copy()]
        arrs = [torch.from_numpy(v) for v in host]  # shares host's memory

        def restore():
            np.copyto(host[2], d0)
            np.copyto(host[3], r0)

        return arrs, restore, lambda: host[3].copy(), False
    if framework == "jax-cpu":
        import jax
        jax.config.update("jax_enable_x64", True)
        cpu = jax.devices("cpu")[0]
        # (copies: on the CPU, device_put may alias the numpy array, and d0, r0 must stay intact)
        arrs = [jax.device_put(v.copy(), cpu) for v in (a, b, d0, r0)]
        jax.block_until_ready(arrs)
        # JAX arrays are immutable: restore their buffers through numpy views of the same memory
        views = [writable_host_view(x.unsafe_buffer_pointer(), n) for x in arrs[2:]]

        def restore():
            np.copyto(views[0], d0)
            np.copyto(views[1], r0)

        return arrs, restore, lambda: views[1].copy(), False
    if framework == "cupy":
        import cupy as cp
        arrs = [cp.asarray(v) for v in (a, b, d0, r0)]
        D0, R0 = cp.asarray(d0), cp.asarray(r0)

        def restore():
            cp.copyto(arrs[2], D0)
            cp.copyto(arrs[3], R0)
            cp.cuda.Device().synchronize()

        return arrs, restore, lambda: cp.asnumpy(arrs[3]), True
    if framework == "torch":
        import torch
        arrs = [torch.from_numpy(v).cuda() for v in (a, b, d0, r0)]
        D0, R0 = torch.from_numpy(d0).cuda(), torch.from_numpy(r0).cuda()

        def restore():
            arrs[2].copy_(D0)
            arrs[3].copy_(R0)
            torch.cuda.synchronize()

        return arrs, restore, lambda: arrs[3].cpu().numpy(), True
    if framework == "jax":
        import jax
        import jax.numpy as jnp
        import cupy as cp
        jax.config.update("jax_enable_x64", True)
        arrs = [jax.device_put(jnp.asarray(v), jax.devices("gpu")[0]) for v in (a, b, d0, r0)]
        jax.block_until_ready(arrs)
        # JAX arrays are immutable: restore their buffers through CuPy views (DLPack, no copy)
        views = [cp.from_dlpack(x) for x in arrs[2:]]
        D0, R0 = cp.asarray(d0), cp.asarray(r0)

        def restore():
            cp.copyto(views[0], D0)
            cp.copyto(views[1], R0)
            cp.cuda.Device().synchronize()

        return arrs, restore, lambda: cp.asnumpy(views[1]), True
    raise SystemExit(f"unknown framework {framework}")


def run_case(batch, method, framework, iters, ref):
    a, b, d0, r0 = batch.random_values(seed=1)
    solver = ns.HinesSolver(batch, method=method)
    arrs, restore, result, device = make_arrays(framework, a, b, d0, r0)
    bound = solver.bind(*arrs)

    def call_c():
        return ns._core._bench_c_solve(solver, *arrs, restore, 1, None)[0]

    def call_solve():
        restore()
        t0 = time.perf_counter()
        solver.solve(*arrs)
        if device:
            solver.wait()
        return time.perf_counter() - t0

    def call_bound():
        restore()
        t0 = time.perf_counter()
        bound.solve()
        if device:
            bound.wait()
        return time.perf_counter() - t0

    variants = [("C", call_c), ("solve", call_solve), ("bound", call_bound)]
    times = {k: [] for k, _ in variants}
    errs = {}
    for k, f in variants:  # warm-up (first launches, imports), and the correctness check
        f()
        x = result()
        errs[k] = float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))
    for i in range(iters):
        for j in range(3):
            k, f = variants[(i + j) % 3]
            times[k].append(f())
    for k, f in variants:  # the results after the timed calls, checked again
        f()
        x = result()
        errs[k] = max(errs[k], float(np.max(np.abs(x - ref)) / np.max(np.abs(ref))))
    c_med = statistics.median(times["C"])
    rows = []
    for k in ("solve", "bound"):
        diff = statistics.median(p - c for p, c in zip(times[k], times["C"]))
        rows.append({"framework": framework, "call": k, "method": solver.method, "backend": solver.backend,
                     "cells": batch.n_cells, "compartments": batch.compartments, "c_ms": c_med * 1e3,
                     "py_ms": statistics.median(times[k]) * 1e3, "overhead_us": diff * 1e6,
                     "overhead_pct": 100 * diff / c_med, "max_rel_err": max(errs["C"], errs[k]),
                     "calls": len(times[k])})
    return rows


def protocol_costs(frameworks, iters=2000):
    """Per-array cost [us] of the two export protocols a binding can import
    through (__dlpack__, __cuda_array_interface__ / __array_interface__), on a
    small array of each framework: what an unbound solve(a, b, d, rhs) pays
    four times per call."""
    out = []
    for fw in frameworks:
        try:
            arrs, _, _, _ = make_arrays(fw, *(np.ones(8) for _ in range(4)))
        except Exception as e:  # noqa: BLE001 (ImportError, no GPU for the framework, ...)
            print(f"protocols {fw}: skipped ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        x = arrs[0]
        row = {"framework": fw}
        for name in ("__dlpack__", "__cuda_array_interface__", "__array_interface__"):
            try:
                f = (lambda: x.__dlpack__()) if name == "__dlpack__" else (lambda n=name: getattr(x, n))
                f()
            except Exception:  # noqa: BLE001 (the framework does not offer it for this array)
                row[name] = None
                continue
            t0 = time.perf_counter()
            for _ in range(iters):
                f()
            row[name] = (time.perf_counter() - t0) / iters * 1e6
        out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", default="1,10000,100000")
    ap.add_argument("--shape", default="medium-high")
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--frameworks", default="numpy,torch-cpu,jax-cpu,cupy,torch,jax")
    ap.add_argument("--cpu-method", default="openmp")
    ap.add_argument("--out", default=None)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    gpu = ns.build_info()["cuda"] and ns.cuda_device_count() > 0
    rows = []
    failures = []
    skipped = set()
    for cells in (int(c) for c in args.cells.split(",")):
        batch = ns.Batch([ns.Tree.paper(args.shape, seed=1)], cells)
        a, b, d, r = batch.random_values(seed=1)
        ref = r.copy()
        ns.HinesSolver(batch, method="sequential").solve(a, b, d, ref)
        for fw in args.frameworks.split(","):
            if fw in skipped:
                continue
            on_gpu = fw in ("cupy", "torch", "jax")
            if on_gpu and not gpu:
                print(f"{fw}: skipped (no GPU)", file=sys.stderr)
                skipped.add(fw)
                continue
            methods = ["tree"] if on_gpu else [args.cpu_method] + (["tree"] if gpu and fw == "numpy" else [])
            for m in methods:
                try:
                    case = run_case(batch, m, fw, args.iters, ref)
                except ImportError as e:
                    print(f"{fw}: skipped ({e})", file=sys.stderr)
                    skipped.add(fw)
                    break
                except Exception as e:  # noqa: BLE001 (report and go on with the other cases)
                    print(f"{fw} {m} {cells} cells: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
                    failures.append(f"{fw} {m} {cells}")
                    continue
                rows += case
                for row in case:
                    print(f"{fw:9s} {row['call']:5s} {row['method']:8s} {cells:7d} cells: C {row['c_ms']:.4f} ms, "
                          f"Python {row['py_ms']:.4f} ms, overhead {row['overhead_us']:.1f} us "
                          f"({row['overhead_pct']:+.2f} %), max rel err {row['max_rel_err']:.1e}", flush=True)
    protos = protocol_costs([fw for fw in args.frameworks.split(",")
                             if fw not in skipped and (gpu or fw not in ("cupy", "torch", "jax"))])
    head = ["framework", "call", "method", "backend", "cells", "compartments", "c_ms", "py_ms", "overhead_us",
            "overhead_pct", "max_rel_err", "calls"]
    dev = "CPU only"
    if gpu:
        try:
            import cupy as cp
            dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception:  # noqa: BLE001
            dev = "GPU"
    lines = [f"Python binding overhead, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
             f"{platform.node()}, {dev}, {os.cpu_count()} CPUs, neurosolve {ns.version()}, Python "
             f"{platform.python_version()}, shape {args.shape}, {args.iters} interleaved iterations "
             f"(C, solve, bound); overhead = median(t_py - t_C) / median(t_C)",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[h]:.4g}" if isinstance(r[h], float) else str(r[h]) for h in head) + " |")
    lines += ["", "Export cost per array [us] (a small array; what solve() pays four times per call, bind() once):",
              "", "| framework | __dlpack__() | __cuda_array_interface__ | __array_interface__ |", "|---|---|---|---|"]
    for r in protos:
        lines.append(f"| {r['framework']} | " + " | ".join("-" if r[k] is None else f"{r[k]:.2f}" for k in
                     ("__dlpack__", "__cuda_array_interface__", "__array_interface__")) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        open(args.out, "w").write(text)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(",".join(head) + "\n")
            for r in rows:
                f.write(",".join(str(r[h]) for h in head) + "\n")
    bad = [r for r in rows if not r["max_rel_err"] <= 1e-9]
    if failures:
        print(f"FAILED cases: {', '.join(failures)}", file=sys.stderr)
        return 1
    if bad:
        print(f"WRONG RESULTS in {len(bad)} cases", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
