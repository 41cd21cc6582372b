"""Hines batches and solvers on numpy arrays against scipy.sparse, the
sequential C solve, and the bad-input contract (no silent copies)."""
import os
import threading

import numpy as np
import pytest
import scipy.sparse.linalg as spla

import neurosolve as ns
from conftest import MORPH, hines_sparse, has_gpu

CPU_METHODS = ["sequential", "openmp", "auto"]
GPU_METHODS = ["flat", "interleaved", "block-interleaved", "block-shared", "onchip", "branch-level",
               "fine-grained", "tree"]


@pytest.fixture(scope="module")
def mixed_batch():
    cells = [ns.read_swc(os.path.join(MORPH, f)).discretize()
             for f in ("ca1_h10.swc", "purk_dbbs.swc", "str_chin.swc")]
    shapes = cells + [ns.Tree.paper("small-high", seed=2), ns.Tree.random("high", seed=4)]
    return ns.Batch(shapes, 23)


def check_against_scipy(batch, a, b, d, rhs, x, cells=None):
    off = batch.cell_offset
    shape = batch.cell_shape
    for c in cells if cells is not None else range(batch.n_cells):
        s = slice(off[c], off[c + 1])
        par = batch.shape(int(shape[c])).parent
        m = hines_sparse(par, a[s], b[s], d[s])
        ref = spla.spsolve(m.tocsc(), rhs[s])
        np.testing.assert_allclose(x[s], ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("method", CPU_METHODS)
def test_cpu_methods_against_scipy(mixed_batch, method):
    a, b, d, rhs = mixed_batch.random_values(seed=7)
    d0, r0 = d.copy(), rhs.copy()
    x = rhs  # in place
    s = ns.HinesSolver(mixed_batch, method=method, backend="cpu")
    assert s.backend == "cpu" and s.method in ("sequential", "openmp")
    s.solve(a, b, d, x)
    assert x is rhs and not np.array_equal(x, r0)
    check_against_scipy(mixed_batch, a, b, d0, r0, x)


def test_cable_matrices_of_real_cells(mixed_batch):
    """The cell's own matrix (not random values) through a batch."""
    m = ns.read_swc(os.path.join(MORPH, "l5pc_bbp_axon.swc")).discretize()
    a, b, d = m.matrix(cm=1.0, dt=0.025)
    n_cells = 40
    batch = ns.Batch([m], n_cells)
    A, B, D = (np.tile(v, n_cells) for v in (a, b, d))
    rng = np.random.default_rng(1)
    R = rng.uniform(-1, 1, len(A))
    R0, D0 = R.copy(), D.copy()
    ns.HinesSolver(batch, method="openmp").solve(A, B, D, R)
    check_against_scipy(batch, A, B, D0, R0, R, cells=[0, 17, 39])


def test_sequential_and_openmp_agree_bitwise(mixed_batch):
    a, b, d, rhs = mixed_batch.random_values(seed=11)
    x1, x2 = rhs.copy(), rhs.copy()
    ns.HinesSolver(mixed_batch, method="sequential").solve(a, b, d.copy(), x1)
    ns.HinesSolver(mixed_batch, method="openmp", threads=2).solve(a, b, d.copy(), x2)
    np.testing.assert_array_equal(x1, x2)


def test_batch_layout(mixed_batch):
    off = mixed_batch.cell_offset
    shape = mixed_batch.cell_shape
    assert len(off) == mixed_batch.n_cells + 1 and off[0] == 0 and off[-1] == mixed_batch.compartments
    np.testing.assert_array_equal(shape, np.arange(23) % 5)
    sizes = [len(mixed_batch.shape(k)) for k in range(5)]
    np.testing.assert_array_equal(np.diff(off), [sizes[k] for k in shape])
    custom = ns.Batch([ns.Tree.paper("small-low"), ns.Tree.paper("big-low")], 3,
                      cell_shape=np.array([1, 1, 0], dtype=np.int32))
    np.testing.assert_array_equal(np.diff(custom.cell_offset), [695, 695, 76])
    with pytest.raises(ns.SizeError, match="cell_shape has 2 elements, expected 3"):
        ns.Batch([ns.Tree.paper("small-low")], 3, cell_shape=np.array([0, 0], dtype=np.int32))
    with pytest.raises(ns.Error):
        ns.Batch([ns.Tree.paper("small-low")], 2, cell_shape=np.array([0, 1], dtype=np.int32))
    with pytest.raises(ns.InvalidArgumentError, match="Tree or neurosolve.Cell"):
        ns.Batch(["x"], 2)


def test_one_shot(mixed_batch):
    a, b, d, rhs = mixed_batch.random_values(seed=2)
    x = rhs.copy()
    ns.solve_hines(mixed_batch, a, b, d.copy(), x, method="sequential")
    y = rhs.copy()
    ns.HinesSolver(mixed_batch).solve(a, b, d.copy(), y)
    np.testing.assert_array_equal(x, y)


def test_methods_by_backend():
    assert ns.available_methods("cpu", "hines") == ["sequential", "openmp"]
    cuda = ns.available_methods("cuda", "hines")
    assert sorted(cuda) == (sorted(GPU_METHODS) if ns.build_info()["cuda"] else [])
    assert ns.backend_info("cpu")["compiled"] and ns.backend_info("cpu")["devices"] == 1
    assert ns.backend_info("cuda")["devices"] == ns.cuda_device_count()
    assert set(ns.hines_methods()) == {"auto"} | set(CPU_METHODS) | set(GPU_METHODS)
    with pytest.raises(ns.InvalidArgumentError, match="family"):
        ns.available_methods("cpu", "fft")


@pytest.mark.parametrize("method", GPU_METHODS)
def test_gpu_methods_without_gpu(mixed_batch, method):
    if has_gpu():
        pytest.skip("a GPU is present: test_gpu.py covers these methods")
    assert ns.hines_method_backend(method) == "cuda"
    with pytest.raises((ns.UnsupportedError, ns.NoDeviceError)):
        ns.HinesSolver(mixed_batch, method=method)


def test_singular_names_cell():
    batch = ns.Batch([ns.Tree.paper("small-low")], 4)
    a, b, d, rhs = batch.random_values(seed=1)
    d[76 * 2 + 5] = 0.0  # cell 2: a zero pivot is reached at or before compartment 5's row
    a[:] = 0.0
    b[:] = 0.0
    with pytest.raises(ns.SingularError, match="cell 2"):
        ns.HinesSolver(batch, method="sequential").solve(a, b, d, rhs)


def test_not_finite_when_checked():
    batch = ns.Batch([ns.Tree.paper("small-low")], 2)
    a, b, d, rhs = batch.random_values(seed=1)
    rhs[3] = np.nan
    with pytest.raises(ns.NotFiniteError):
        ns.HinesSolver(batch, method="sequential", check_finite=True).solve(a, b, d, rhs)


class TestBadInput:
    @pytest.fixture
    def setup(self):
        batch = ns.Batch([ns.Tree.paper("small-low")], 10)
        return ns.HinesSolver(batch, method="sequential"), batch.random_values(seed=1)

    def test_dtype(self, setup):
        s, (a, b, d, rhs) = setup
        with pytest.raises(ns.InvalidArgumentError, match="rhs has dtype float32, expected float64"):
            s.solve(a, b, d, rhs.astype(np.float32))
        with pytest.raises(ns.InvalidArgumentError, match="a has dtype int64"):
            s.solve(a.astype(np.int64), b, d, rhs)

    def test_length(self, setup):
        s, (a, b, d, rhs) = setup
        with pytest.raises(ns.SizeError, match="d has 759 elements, expected 760"):
            s.solve(a, b, d[:-1], rhs)

    def test_not_contiguous(self, setup):
        s, (a, b, d, rhs) = setup
        big = np.zeros(2 * len(a))
        big[::2] = b
        with pytest.raises(ns.InvalidArgumentError, match="b is not C-contiguous"):
            s.solve(a, big[::2], d, rhs)

    def test_shape(self, setup):
        s, (a, b, d, rhs) = setup
        with pytest.raises(ns.InvalidArgumentError, match="2 dimensions, expected 1"):
            s.solve(a.reshape(10, 76), b, d, rhs)

    def test_read_only(self, setup):
        s, (a, b, d, rhs) = setup
        rhs.flags.writeable = False
        with pytest.raises(ns.InvalidArgumentError, match="rhs is read-only"):
            s.solve(a, b, d, rhs)
        a.flags.writeable = False  # a and b are only read: accepted
        rhs.flags.writeable = True
        s.solve(a, b, d, rhs)

    def test_not_an_array(self, setup):
        s, (a, b, d, rhs) = setup
        with pytest.raises(ns.InvalidArgumentError, match="a is not an array"):
            s.solve(list(a), b, d, rhs)

    def test_stream_with_host_arrays(self, setup):
        s, (a, b, d, rhs) = setup
        with pytest.raises(ns.InvalidArgumentError, match="stream given for host"):
            s.solve(a, b, d, rhs, stream=0)

    def test_nothing_written_on_error(self, setup):
        s, (a, b, d, rhs) = setup
        r0 = rhs.copy()
        with pytest.raises(ns.SizeError):
            s.solve(a, b, d, rhs, ) if False else s.solve(a, b[:5], d, rhs)
        np.testing.assert_array_equal(rhs, r0)


def test_gil_released_during_solve():
    """Another Python thread runs while a long solve is in C."""
    batch = ns.Batch([ns.Tree.paper("big-high")], 6000)
    a, b, d, rhs = batch.random_values(seed=1)
    s = ns.HinesSolver(batch, method="sequential")
    started = threading.Event()
    count = [0]

    def work():
        started.set()
        for _ in range(5):
            s.solve(a, b, d.copy(), rhs.copy())

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    while t.is_alive():
        count[0] += 1
    t.join()
    # with the GIL held by the solves this loop could only run between them
    assert count[0] > 1000, count[0]


def test_one_solver_from_two_threads():
    """Calls on one solver from several threads are serialised (a mutex per
    solver, taken after the GIL is released): every result is right."""
    batch = ns.Batch([ns.Tree.paper("medium-low")], 500)
    a, b, d, rhs = batch.random_values(seed=4)
    ref = rhs.copy()
    ns.HinesSolver(batch, method="sequential").solve(a, b, d.copy(), ref)
    s = ns.HinesSolver(batch, method="openmp")
    results = []

    def work():
        for _ in range(10):
            x = rhs.copy()
            s.solve(a, b, d.copy(), x)
            results.append(np.array_equal(x, ref))

    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 30 and all(results)


def test_views_are_solved_in_place():
    """A contiguous view into a larger buffer is used where it lies: the
    solution lands in the view and nothing around it changes."""
    batch = ns.Batch([ns.Tree.paper("small-high")], 30)
    a, b, d, rhs = batch.random_values(seed=9)
    n = batch.compartments
    ref = rhs.copy()
    ns.HinesSolver(batch, method="sequential").solve(a, b, d.copy(), ref)
    big = np.full(n + 10, 7.0)
    big[5:5 + n] = rhs
    view = big[5:5 + n]
    ns.HinesSolver(batch, method="openmp").solve(a, b, d.copy(), view)
    np.testing.assert_array_equal(big[5:5 + n], ref)
    assert (big[:5] == 7).all() and (big[5 + n:] == 7).all()


def test_bound_solve_repeats_in_place():
    """solver.bind(a, b, d, rhs) checks and imports once; every bound.solve() solves
    the arrays' current contents in place, like solver.solve on the same arrays."""
    batch = ns.Batch([ns.Tree.paper("medium-high", seed=1), ns.Tree.random("high", seed=3)], 40)
    a, b, d0, r0 = batch.random_values(seed=11)
    s = ns.HinesSolver(batch, method="openmp")
    d, rhs = d0.copy(), r0.copy()
    bound = s.bind(a, b, d, rhs)
    assert bound.solver is s and bound.device == "cpu" and bound.arrays[3] is rhs and bound.stream is None
    rng = np.random.default_rng(2)
    for step in range(3):  # new right-hand sides written into the same arrays, as a simulation does
        r_new = r0 * rng.uniform(0.5, 2.0, r0.size)
        np.copyto(d, d0)
        np.copyto(rhs, r_new)
        bound.solve()
        ref = r_new.copy()
        ns.HinesSolver(batch, method="sequential").solve(a, b, d0.copy(), ref)
        np.testing.assert_array_equal(rhs, ref)
        check_against_scipy(batch, a, b, d0, r_new, rhs, cells=[0, 1, 39])
    bound.wait()  # nothing queued on the host: returns at once


def test_bound_keeps_arrays_alive_and_checks_once():
    batch = ns.Batch([ns.Tree.paper("small-high")], 20)
    a, b, d, rhs = batch.random_values(seed=3)
    ref = rhs.copy()
    ns.HinesSolver(batch, method="sequential").solve(a, b, d.copy(), ref)
    s = ns.HinesSolver(batch, method="sequential")
    bound = s.bind(a.copy(), b.copy(), d.copy(), rhs.copy())  # only the bound object refers to them
    del s
    import gc
    gc.collect()
    bound.solve()
    np.testing.assert_array_equal(bound.arrays[3], ref)
    # bind applies the checks of solve, naming the argument and the call
    s = bound.solver
    with pytest.raises(ns.InvalidArgumentError, match=r"HinesSolver.bind: d has dtype float32"):
        s.bind(a, b, d.astype(np.float32), rhs)
    with pytest.raises(ns.SizeError, match=r"HinesSolver.bind: rhs has"):
        s.bind(a, b, d, rhs[:-1])
    with pytest.raises(ns.InvalidArgumentError, match="not C-contiguous"):
        s.bind(a, b, d, np.repeat(rhs, 2)[::2])
    ro = rhs.copy()
    ro.flags.writeable = False
    with pytest.raises(ns.InvalidArgumentError, match="rhs is read-only"):
        s.bind(a, b, d, ro)
    with pytest.raises(ns.InvalidArgumentError, match="stream given for host"):
        s.bind(a, b, d, rhs, stream=0)
    with pytest.raises(ns.InvalidArgumentError, match="is not an array"):
        s.bind(a, b, d, list(rhs))
    with pytest.raises(TypeError):
        bound.solve(rhs)  # bound.solve takes no arrays


def test_bound_and_plain_solve_on_torch_and_jax_cpu_tensors():
    """CPU tensors of other frameworks come in through DLPack, in place."""
    batch = ns.Batch([ns.Tree.paper("small-high")], 50)
    a, b, d, rhs = batch.random_values(seed=6)
    ref = rhs.copy()
    ns.HinesSolver(batch, method="sequential").solve(a, b, d.copy(), ref)
    s = ns.HinesSolver(batch, method="openmp")
    tried = 0
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        T = [torch.from_numpy(v.copy()) for v in (a, b, d, rhs)]
        s.bind(*T).solve()
        np.testing.assert_array_equal(T[3].numpy(), ref)
        T = [torch.from_numpy(v.copy()) for v in (a, b, d, rhs)]
        s.solve(*T)
        np.testing.assert_array_equal(T[3].numpy(), ref)
        with pytest.raises(ns.InvalidArgumentError, match="dtype float32"):
            s.bind(T[0], T[1], T[2], T[3].float())
        tried += 1
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        cpu = jax.devices("cpu")[0]
        J = [jax.device_put(v.copy(), cpu) for v in (a, b, d, rhs)]
        jax.block_until_ready(J)
        s.bind(*J).solve()  # JAX's buffer written in place (docs/python.md)
        np.testing.assert_array_equal(np.asarray(J[3]), ref)
        tried += 1
    if not tried:
        pytest.skip("neither torch nor jax is installed")
