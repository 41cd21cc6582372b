"""Batched tridiagonal solves against scipy.linalg.solve_banded."""
import numpy as np
import pytest
import scipy.linalg as sla

import neurosolve as ns
from conftest import has_gpu


def systems(sizes, rng, dtype=np.float64):
    n = int(sum(sizes))
    dl = rng.uniform(-1, 1, n)
    du = rng.uniform(-1, 1, n)
    d = np.abs(dl) + np.abs(du) + rng.uniform(0.5, 1.5, n)
    x = rng.uniform(-1, 1, n)
    return [v.astype(dtype) for v in (dl, d, du, x)]


def reference(dl, d, du, rhs):
    n = len(d)
    ab = np.zeros((3, n))
    ab[0, 1:] = du[:-1]
    ab[1] = d
    ab[2, :-1] = dl[1:]
    return sla.solve_banded((1, 1), ab.astype(np.float64), rhs.astype(np.float64))


@pytest.mark.parametrize("method", ["sequential", "openmp", "auto"])
def test_fixed_flat(method):
    rng = np.random.default_rng(1)
    n, batch = 37, 50
    dl, d, du, x = systems([n] * batch, rng)
    ref = [reference(dl[s * n:(s + 1) * n], d[s * n:(s + 1) * n], du[s * n:(s + 1) * n], x[s * n:(s + 1) * n])
           for s in range(batch)]
    s = ns.TridiagSolver(n, batch, method=method)
    assert s.backend == "cpu" and s.length == n * batch
    s.solve(dl, d, du, x)
    np.testing.assert_allclose(x, np.concatenate(ref), rtol=1e-12, atol=1e-14)


def test_fixed_interleaved_with_stride():
    rng = np.random.default_rng(2)
    n, batch, stride = 20, 7, 9
    dl, d, du, x = (np.zeros(n * stride) for _ in range(4))
    ref = []
    for s in range(batch):
        a, b, c, r = systems([n], rng)
        idx = np.arange(n) * stride + s
        dl[idx], d[idx], du[idx], x[idx] = a, b, c, r
        ref.append((idx, reference(a, b, c, r)))
    solver = ns.TridiagSolver(n, batch, layout="interleaved", stride=stride, method="sequential")
    assert solver.length == (n - 1) * stride + batch  # the layout's extent; n * stride entries are accepted
    solver.solve(dl, d, du, x)
    for idx, r in ref:
        np.testing.assert_allclose(x[idx], r, rtol=1e-12, atol=1e-14)


def test_variable_sizes_with_offsets():
    rng = np.random.default_rng(3)
    sizes = np.array([1, 5, 64, 3, 200, 17], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum(sizes + 2)]).astype(np.int64)  # gaps of 2
    total = int(offsets[-1])
    dl, d, du, x = systems([total], rng)
    gap_x = x.copy()
    solver = ns.TridiagSolver.variable(sizes, offsets, method="openmp")
    refs = [reference(dl[o:o + m], d[o:o + m], du[o:o + m], x[o:o + m]) for o, m in zip(offsets, sizes)]
    solver.solve(dl, d, du, x)
    for o, m, r in zip(offsets, sizes, refs):
        np.testing.assert_allclose(x[o:o + m], r, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(x[o + m:o + m + 2], gap_x[o + m:o + m + 2])  # gaps untouched
    packed = ns.TridiagSolver.variable(sizes)
    assert packed.length == int(sizes.sum())


def test_float32():
    rng = np.random.default_rng(4)
    n, batch = 50, 10
    dl, d, du, x = systems([n] * batch, rng, np.float32)
    ref = np.concatenate([reference(dl[s * n:(s + 1) * n], d[s * n:(s + 1) * n], du[s * n:(s + 1) * n],
                                    x[s * n:(s + 1) * n]) for s in range(batch)])
    s = ns.TridiagSolver(n, batch, precision="float32", method="sequential")
    with pytest.raises(ns.InvalidArgumentError, match="dtype float64, expected float32"):
        s.solve(dl.astype(np.float64), d, du, x)
    s.solve(dl, d, du, x)
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, ref, rtol=1e-4, atol=1e-5)


def test_singular_and_bad_input():
    n = 4
    dl, d, du, x = (np.zeros(2 * n) for _ in range(4))
    d[:] = 1.0
    d[n + 2] = 0.0
    with pytest.raises(ns.SingularError, match="system 1"):
        ns.TridiagSolver(n, 2, method="sequential").solve(dl, d, du, x)
    s = ns.TridiagSolver(n, 2)
    with pytest.raises(ns.SizeError, match="x has 7 elements, expected at least 8"):
        s.solve(dl, d, du, x[:7])
    with pytest.raises(ns.InvalidArgumentError, match="not C-contiguous"):
        s.solve(dl, d, np.zeros(16)[::2], x)
    with pytest.raises(ns.InvalidArgumentError):
        ns.TridiagSolver(n, 2, layout="diagonal")
    with pytest.raises(ns.SizeError):
        ns.TridiagSolver.variable(np.array([3, 0], dtype=np.int32))


def test_gpu_methods_without_gpu():
    if has_gpu():
        pytest.skip("a GPU is present: test_gpu.py covers these methods")
    for m in ("thomas-batch", "warp", "cusparse-strided"):
        with pytest.raises((ns.UnsupportedError, ns.NoDeviceError)):
            ns.TridiagSolver(16, 4, method=m)


def test_bound_solve():
    n, batch = 33, 200
    rng = np.random.default_rng(4)
    dl, du = rng.uniform(-1, 1, (2, n * batch))
    d = np.abs(dl) + np.abs(du) + 1.0
    s = ns.TridiagSolver(n, batch, method="openmp")
    arrays = [dl.copy(), d.copy(), du.copy(), np.empty(n * batch)]
    bound = s.bind(*arrays)
    assert bound.solver is s and bound.device == "cpu"
    for _ in range(2):
        x = rng.uniform(-1, 1, n * batch)
        np.copyto(arrays[3], x)
        bound.solve()
        ref = x.copy()
        ns.TridiagSolver(n, batch, method="sequential").solve(dl.copy(), d.copy(), du.copy(), ref)
        np.testing.assert_allclose(arrays[3], ref, rtol=1e-12)
        # independent check of the first system
        m = np.diag(d[:n]) + np.diag(dl[1:n], -1) + np.diag(du[:n - 1], 1)
        np.testing.assert_allclose(m @ arrays[3][:n], x[:n], rtol=1e-10, atol=1e-12)
    with pytest.raises(ns.SizeError, match="TridiagSolver.bind: x has"):
        s.bind(dl, d, du, x[:-1])
    with pytest.raises(ns.InvalidArgumentError, match="dtype float32"):
        s.bind(dl, d, du, x.astype(np.float32))
