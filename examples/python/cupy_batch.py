"""A batch of Hines systems solved on CuPy arrays, on a CuPy stream, checked
against the CPU solve of the same values.

    python examples/python/cupy_batch.py [--cells 100000] [--shape medium-high]

Needs a GPU, CuPy and a neurosolve built with CUDA (docs/python.md)."""
import argparse
import time

import numpy as np

import neurosolve as ns


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=100_000)
    ap.add_argument("--shape", default="medium-high")
    args = ap.parse_args()
    if ns.cuda_device_count() == 0:
        raise SystemExit("no usable GPU (or neurosolve was built without CUDA)")
    import cupy as cp

    batch = ns.Batch([ns.Tree.paper(args.shape, seed=1)], args.cells)
    a, b, d, rhs = batch.random_values(seed=1)
    ref = rhs.copy()
    ns.HinesSolver(batch, method="openmp").solve(a, b, d.copy(), ref)

    solver = ns.HinesSolver(batch, method="tree")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        A, B, D, X = (cp.asarray(v) for v in (a, b, d, rhs))
        stream.synchronize()
        t0 = time.perf_counter()
        solver.solve(A, B, D, X, stream=stream)  # queued on the stream, returns at once
        solver.wait()                            # raises SingularError on a zero pivot
        dt = time.perf_counter() - t0
    err = float(cp.max(cp.abs(X - cp.asarray(ref))) / np.max(np.abs(ref)))
    print(f"{batch.n_cells} cells, {batch.compartments} compartments: {dt * 1e3:.3f} ms on the GPU; "
          f"max relative difference from the CPU solve {err:.1e}")
    if err > 1e-9:
        raise SystemExit("results differ")


if __name__ == "__main__":
    main()
