"""GPU paths: device arrays from CuPy, PyTorch and JAX (DLPack) on the
caller's stream, GPU methods on host arrays, the CUDA simulation and LiFE
engine. Every result is compared with the CPU solve of the same inputs (itself
checked against scipy in test_hines.py / test_tridiag.py). Skips cleanly
without a GPU or in a build without CUDA; `bash bench/grid.sh python` runs it
on a GPU host."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH, has_gpu

pytestmark = pytest.mark.skipif(not has_gpu(), reason="no usable GPU (or a build without CUDA)")

GPU_METHODS = ["flat", "interleaved", "block-interleaved", "block-shared", "onchip", "branch-level",
               "fine-grained", "tree"]


@pytest.fixture(scope="module")
def problem():
    cells = [ns.read_swc(os.path.join(MORPH, f)).discretize()
             for f in ("ca1_h10.swc", "purk_dbbs.swc", "str_chin.swc")]
    batch = ns.Batch(cells + [ns.Tree.paper("small-high", seed=2)], 1000)
    a, b, d, rhs = batch.random_values(seed=5)
    x = rhs.copy()
    ns.HinesSolver(batch, method="sequential").solve(a, b, d.copy(), x)
    return batch, (a, b, d, rhs), x


def close(x, ref):
    np.testing.assert_allclose(x, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("method", GPU_METHODS)
def test_gpu_methods_on_host_arrays(problem, method):
    # one shape: every GPU method
    one = ns.Batch([ns.Tree.paper("medium-high", seed=1)], 2000)
    a, b, d, rhs = one.random_values(seed=3)
    ref = rhs.copy()
    ns.HinesSolver(one, method="sequential").solve(a, b, d.copy(), ref)
    s = ns.HinesSolver(one, method=method)
    assert s.backend == "cuda" and s.method == method
    x = rhs.copy()
    s.solve(a, b, d.copy(), x)
    close(x, ref)
    # several shapes (real cells): the mixed-shape path, which three methods refuse (docs/methods.md)
    batch, (a, b, d, rhs), ref = problem
    if method in ("block-interleaved", "block-shared", "onchip"):
        with pytest.raises(ns.UnsupportedError):
            ns.HinesSolver(batch, method=method).solve(a, b, d.copy(), rhs.copy())
        return
    x = rhs.copy()
    ns.HinesSolver(batch, method=method).solve(a, b, d.copy(), x)
    close(x, ref)


def test_cupy_on_a_stream(problem):
    cp = pytest.importorskip("cupy")
    batch, (a, b, d, rhs), ref = problem
    s = ns.HinesSolver(batch, method="tree")
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        A, B, D, X = (cp.asarray(v) for v in (a, b, d, rhs))
        s.solve(A, B, D, X, stream=stream)  # an object with .ptr
        X2 = X * 1.0  # queued after the solve on the same stream
    s.wait()
    stream.synchronize()
    close(cp.asnumpy(X), ref)
    close(cp.asnumpy(X2), ref)
    # an int handle works too
    with stream:
        D[...] = cp.asarray(d)
        X[...] = cp.asarray(rhs)
        s.solve(A, B, D, X, stream=stream.ptr)
    s.wait()
    close(cp.asnumpy(X), ref)


def test_torch_on_a_stream(problem):
    torch = pytest.importorskip("torch")
    batch, (a, b, d, rhs), ref = problem
    s = ns.HinesSolver(batch, method="tree")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        A, B, D, X = (torch.from_numpy(v).cuda() for v in (a, b, d, rhs))
        s.solve(A, B, D, X, stream=stream)  # .cuda_stream
    s.wait()
    torch.cuda.synchronize()
    close(X.cpu().numpy(), ref)
    with pytest.raises(ns.InvalidArgumentError, match="dtype float32"):
        s.solve(A.float(), B, D, X)
    with pytest.raises(ns.InvalidArgumentError, match="not C-contiguous"):
        s.solve(A, B, D, torch.zeros(2 * len(rhs), dtype=torch.float64, device="cuda")[::2])


def test_jax(problem):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    batch, (a, b, d, rhs), ref = problem
    if not any(dev.platform == "gpu" for dev in jax.devices()):
        pytest.skip("JAX sees no GPU")
    jax.config.update("jax_enable_x64", True)
    s = ns.HinesSolver(batch, method="tree")
    A, B, D, X = (jax.device_put(jnp.asarray(v)) for v in (a, b, d, rhs))
    jax.block_until_ready((A, B, D, X))
    s.solve(A, B, D, X)  # legacy default stream; JAX's buffers are written in place (docs/python.md)
    s.wait()
    close(np.asarray(X), ref)


def test_device_bad_input(problem):
    cp = pytest.importorskip("cupy")
    batch, (a, b, d, rhs), ref = problem
    A, B, D, X = (cp.asarray(v) for v in (a, b, d, rhs))
    s = ns.HinesSolver(batch, method="tree")
    with pytest.raises(ns.InvalidArgumentError, match="b is cpu memory, expected CUDA device memory"):
        s.solve(A, b, D, X)
    with pytest.raises(ns.InvalidArgumentError, match="d is cuda memory, expected host"):
        s.solve(a, b, D, rhs)
    with pytest.raises(ns.SizeError):
        s.solve(A, B, D, X[:-1])
    with pytest.raises(ns.InvalidArgumentError, match="stream must be"):
        s.solve(A, B, D, X, stream="fast")
    with pytest.raises(ns.UnsupportedError):  # a CPU method cannot take device arrays
        ns.HinesSolver(batch, method="sequential").solve(A, B, D, X)


@pytest.mark.parametrize("method", GPU_METHODS)
def test_every_cuda_method_on_device_arrays(method):
    cp = pytest.importorskip("cupy")
    batch = ns.Batch([ns.Tree.paper("medium-high", seed=1)], 3000)
    a, b, d, rhs = batch.random_values(seed=8)
    ref = rhs.copy()
    ns.HinesSolver(batch, method="sequential").solve(a, b, d.copy(), ref)
    s = ns.HinesSolver(batch, method=method)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        A, B, D, X = (cp.asarray(v) for v in (a, b, d, rhs))
        s.solve(A, B, D, X, stream=stream)
    s.wait()
    close(cp.asnumpy(X), ref)


def test_singular_on_device():
    cp = pytest.importorskip("cupy")
    batch = ns.Batch([ns.Tree.paper("small-low")], 64)
    a, b, d, rhs = batch.random_values(seed=1)
    a[:] = 0
    b[:] = 0
    d[76 * 9 + 3] = 0.0
    A, B, D, X = (cp.asarray(v) for v in (a, b, d, rhs))
    s = ns.HinesSolver(batch, method="tree")
    s.solve(A, B, D, X)
    with pytest.raises(ns.SingularError, match="cell 9"):
        s.wait()


@pytest.mark.parametrize("method", ["thomas-batch", "vbatch-cp", "warp", "block", "cusparse-strided"])
def test_tridiag_gpu(method):
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(3)
    n, batch = 64, 300
    dl, du = rng.uniform(-1, 1, (2, n * batch))
    d = np.abs(dl) + np.abs(du) + 1
    x = rng.uniform(-1, 1, n * batch)
    ref = x.copy()
    ns.TridiagSolver(n, batch, method="sequential").solve(dl, d, du, ref)
    s = ns.TridiagSolver(n, batch, method=method)
    h = x.copy()
    s.solve(dl.copy(), d.copy(), du.copy(), h)  # host arrays
    np.testing.assert_allclose(h, ref, rtol=1e-10, atol=1e-13)
    DL, D, DU, X = (cp.asarray(v) for v in (dl, d, du, x))
    s.solve(DL, D, DU, X)  # device arrays, queued on the legacy default stream (CuPy's default)
    s.wait()
    np.testing.assert_allclose(cp.asnumpy(X), ref, rtol=1e-10, atol=1e-13)
    q = cp.cuda.Stream(non_blocking=True)  # the caller's stream
    DL, D, DU, X = (cp.asarray(v) for v in (dl, d, du, x))
    cp.cuda.runtime.deviceSynchronize()
    s.solve(DL, D, DU, X, stream=q)
    s.wait()
    np.testing.assert_allclose(cp.asnumpy(X), ref, rtol=1e-10, atol=1e-13)


def test_simulation_on_gpu():
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    runs = []
    for backend in ("cpu", "cuda"):
        sim = ns.Simulation([cell], 4, backend=backend)
        assert sim.backend == backend
        for c in range(4):
            sim.add_iclamp(c, cell.locate(0, 0.5), 5, 50, 2.0 + 0.1 * c)  # 0.5 nA stays below threshold in ca1_h10
            sim.add_recording(c, cell.locate(0, 0.5))
        sim.run(60)
        runs.append((sim.traces, [sim.spikes(c) for c in range(4)], sim.state(3)["v"]))
    np.testing.assert_allclose(runs[1][0], runs[0][0], rtol=0, atol=1e-7)  # docs/simulation.md: <= 1.1e-8 mV measured
    for s1, s0 in zip(runs[1][1], runs[0][1]):
        assert len(s1) == len(s0) > 0
        np.testing.assert_allclose(s1, s0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=0, atol=1e-7)


def test_simulation_state_on_device():
    """read_var/write_var on CuPy arrays on a stream of the caller's against
    the CPU-side state() of a twin, with a coupling step (test_sim.py has the
    CPU version and the checks)."""
    cp = pytest.importorskip("cupy")
    from test_sim import check_coupling, coupled_pair
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    sim, twin = coupled_pair(cell, "cuda")
    stream = cp.cuda.Stream(non_blocking=True)

    def read(s, k):
        out = cp.full(s.compartments, cp.nan)
        s.read_var(k, out, stream=stream)
        stream.synchronize()
        return cp.asnumpy(out)

    def write(s, k, x):
        with stream:
            dev = cp.asarray(x)
        s.write_var(k, dev, stream=stream)

    check_coupling(sim, twin, read, write)
    with pytest.raises(ns.InvalidArgumentError, match="expected CUDA device memory"):
        sim.read_var("v", np.empty(sim.compartments))


def test_simulation_state_parts_on_device():
    """state_part's DLPack arrays through CuPy on a stream of the caller's,
    changed in place (test_sim.py's check_parts), against a twin changed
    through write_var (bit for bit: the twin runs the same GPU loop)."""
    cp = pytest.importorskip("cupy")
    from test_sim import check_parts, coupled_pair
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    sim, twin = coupled_pair(cell, "cuda")
    stream = cp.cuda.Stream(non_blocking=True)

    def to_host(arr):
        return cp.asnumpy(cp.from_dlpack(arr))

    def write(arr, x):
        with stream:
            cp.from_dlpack(arr)[:] = cp.asarray(x)

    check_parts(sim, twin, to_host, write, lambda s: s.state_done(stream=stream),
                lambda t, x: t.write_var("v", cp.asarray(x)))


def test_life_cuda_engine():
    from test_life import DWI, BVAL, BVEC, TRK
    m = ns.LifeModel.build(DWI, BVAL, BVEC, TRK)
    cpu, gpu = ns.LifeEngine(m, backend="cpu"), ns.LifeEngine(m, backend="cuda")
    assert gpu.backend == "cuda"
    w = np.random.default_rng(1).uniform(0, 1, m.n_fibers)
    np.testing.assert_allclose(gpu.mw(w), cpu.mw(w), rtol=1e-10, atol=1e-9)
    y = m.signal.ravel()
    np.testing.assert_allclose(gpu.mty(y), cpu.mty(y), rtol=1e-10, atol=1e-8)
    wg, rg = gpu.fit(max_iterations=50)
    wc, rc = cpu.fit(max_iterations=50)
    assert rg["objective"] == pytest.approx(rc["objective"], rel=1e-4)  # summation order differs


def test_bound_device_solves(problem):
    """bind() on CuPy (a stream object, kept alive by the bound object), PyTorch
    and JAX arrays: repeated bound.solve() calls equal the CPU solve."""
    batch, (a, b, d, rhs), ref = problem
    s = ns.HinesSolver(batch, method="tree")
    cp = pytest.importorskip("cupy")
    bound = s.bind(*(cp.asarray(v) for v in (a, b, d, rhs)), stream=cp.cuda.Stream(non_blocking=True))
    assert bound.device == "cuda" and bound.stream is not None
    A, B, D, X = bound.arrays
    for _ in range(3):
        with bound.stream:
            D[...] = cp.asarray(d)
            X[...] = cp.asarray(rhs)
        bound.solve()  # on bound.stream: after the copies above
        bound.wait()
        close(cp.asnumpy(X), ref)
    with pytest.raises(ns.InvalidArgumentError, match="HinesSolver.bind: b is cpu memory"):
        s.bind(A, b, D, X)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        T = [torch.from_numpy(v).cuda() for v in (a, b, d, rhs)]
        tb = s.bind(*T)
        tb.solve()
        tb.wait()
        close(T[3].cpu().numpy(), ref)
        with pytest.raises(ns.InvalidArgumentError, match="not C-contiguous"):
            s.bind(T[0], T[1], T[2], torch.zeros(2 * len(rhs), dtype=torch.float64, device="cuda")[::2])
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None and any(dev.platform == "gpu" for dev in jax.devices()):
        jax.config.update("jax_enable_x64", True)
        J = [jax.device_put(v, jax.devices("gpu")[0]) for v in (a, b, d, rhs)]
        jax.block_until_ready(J)
        jb = s.bind(*J)
        jb.solve()
        jb.wait()
        close(np.asarray(J[3]), ref)


def test_bound_tridiag_on_device():
    cp = pytest.importorskip("cupy")
    n, batch = 64, 500
    rng = np.random.default_rng(3)
    dl, du = rng.uniform(-1, 1, (2, n * batch))
    d = np.abs(dl) + np.abs(du) + 1.0
    x = rng.uniform(-1, 1, n * batch)
    ref = x.copy()
    ns.TridiagSolver(n, batch, method="sequential").solve(dl.copy(), d.copy(), du.copy(), ref)
    s = ns.TridiagSolver(n, batch, method="warp")
    arrs = [cp.asarray(v) for v in (dl, d, du, x)]
    bound = s.bind(*arrs)
    for _ in range(2):
        arrs[3][...] = cp.asarray(x)
        bound.solve()
        bound.wait()
        np.testing.assert_allclose(cp.asnumpy(arrs[3]), ref, rtol=1e-10, atol=1e-12)


def test_lfp_device_results_cupy():
    # the potentials and dipole kept on the GPU (no copy) are the host's, sample for sample
    cp = pytest.importorskip("cupy")
    cell = ns.read_swc(os.path.join(MORPH, "dg_granule_1220882a.swc")).discretize()
    sim = ns.Simulation([cell], 8, backend="cuda")
    soma = cell.locate("soma")
    for c in range(8):
        sim.add_iclamp(c, soma, 0.2 * c, 8.0, 1.0)
    shank = ns.probe_line([0, 0, -200], [0, 0, 400], 16)
    place = np.array([[20.0 * c, 30.0, 50.0 * c, 0, 0, 0.3 * c] for c in range(8)])
    lfp = ns.Lfp(sim, [cell], shank, every=3, placement=place, batch=5, device_results=True)
    sim.advance(90)
    sim.advance(30)
    d = lfp.device_results()
    phi, P = cp.from_dlpack(d["potentials"]), cp.from_dlpack(d["dipole"])
    assert phi.shape == (40, 16) and P.shape == (40, 3) and d["device"] >= 0
    assert np.array_equal(cp.asnumpy(phi), lfp.potentials) and np.array_equal(cp.asnumpy(P), lfp.dipole)
    assert float(cp.abs(phi).max()) > 0
