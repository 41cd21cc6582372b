"""The GPU backend is used wherever a GPU is usable, and the CPU where none is (the GPU wheel,
docs/python.md "The GPU wheel"): with a GPU, the `auto` backend of the Hines solver, the
tridiagonal solver, the simulation and the LiFE engine is CUDA and gives the CPU's results;
without one, each falls back to the CPU and an explicit `cuda` is refused with a message.
NS_EXPECT_CUDA=1 (the GPU wheel's test on the GPU host) makes a package without the CUDA
backend, or a host whose GPU it cannot use, a failure instead of a skip."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH

EXPECT = os.environ.get("NS_EXPECT_CUDA") == "1"


def gpu_usable():
    info = ns.build_info()
    if EXPECT:
        assert info["cuda"], f"NS_EXPECT_CUDA=1 but this package has no CUDA backend: {info}"
        assert ns.cuda_device_count() > 0, f"NS_EXPECT_CUDA=1 but no usable GPU: {ns.backend_info('cuda')}"
    return info["cuda"] and ns.cuda_device_count() > 0


def problem():
    """A batch the `auto` policy sends to a GPU: 2,200 cells of 491 compartments, above its
    threshold of 2^20 compartments (src/hines/policy.h)."""
    batch = ns.Batch([ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()], 2200)
    assert len(batch) >= 1 << 20
    a, b, d, rhs = batch.random_values(seed=7)
    ref = rhs.copy()
    ns.HinesSolver(batch, method="sequential", backend="cpu").solve(a, b, d.copy(), ref)
    return batch, (a, b, d, rhs), ref


def test_auto_is_cuda_where_a_gpu_is_usable():
    if not gpu_usable():
        pytest.skip("no usable GPU, or a package without the CUDA backend")
    assert ns.build_info()["cuda_architectures"], "the CUDA build names its architectures"
    batch, (a, b, d, rhs), ref = problem()
    s = ns.HinesSolver(batch)
    assert s.backend == "cuda", (s.backend, s.method)
    x = rhs.copy()
    s.solve(a, b, d.copy(), x)
    np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())
    assert ns.TridiagSolver(64, 1000).backend == "cuda"  # 64,000 unknowns: above auto's 16,384
    model = ns.LifeModel.synth(n_theta=16, dictionary_l=6, n_fibers=40, grid=[8, 8, 8], mean_length=6)
    gpu, cpu = ns.LifeEngine(model), ns.LifeEngine(model, backend="cpu")
    assert gpu.backend == "cuda" and cpu.backend == "cpu"
    w = np.random.default_rng(1).random(40)
    np.testing.assert_allclose(gpu.mw(w), cpu.mw(w), rtol=1e-10, atol=1e-9)  # as test_gpu.py's LiFE products
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    runs = {}
    for backend in ("auto", "cpu"):
        sim = ns.Simulation([cell], 4, backend=backend)
        assert sim.backend == ("cpu" if backend == "cpu" else "cuda")
        sim.add_iclamp(0, cell.locate("soma"), 1.0, 2.0, 1.0)
        sim.add_recording(0, cell.locate("soma"))
        sim.run(5.0)
        runs[backend] = sim.traces
    np.testing.assert_allclose(runs["auto"], runs["cpu"], rtol=0, atol=1e-7)  # docs/simulation.md: <= 1.1e-8 mV


def test_cpu_fallback_where_no_gpu_is_usable():
    if gpu_usable():
        pytest.skip("a GPU is usable here: the fallback is the other test's case")
    batch, (a, b, d, rhs), ref = problem()
    s = ns.HinesSolver(batch)
    assert s.backend == "cpu"
    x = rhs.copy()
    s.solve(a, b, d.copy(), x)
    np.testing.assert_allclose(x, ref, rtol=1e-12)
    model = ns.LifeModel.synth(n_theta=8, dictionary_l=4, n_fibers=8, grid=[5, 5, 5], mean_length=4)
    assert ns.LifeEngine(model).backend == "cpu"
    with pytest.raises((ns.UnsupportedError, ns.NoDeviceError), match="cuda|GPU"):
        ns.HinesSolver(batch, backend="cuda")
