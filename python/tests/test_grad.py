"""Gradients from Python (docs/gradients.md): neurosolve.Gradient and neurosolve.grad
against central differences of the simulation's own runs (an independent path: the
CPU loop with the parameter changed in the model), the dldy form, bad input, and the
torch and jax wrappers (skipped without them)."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH

STEPS = 120
MODEL = "all.insert = hh pas\nall.g_pas = 1e-4\nall.e_pas = -65\nglobal.usetable_hh = 0\n"
PARAMS = [("soma", "gnabar_hh", 0.12), ("all", "g_pas", 1e-4), ("dend", "gkbar_hh", 0.036)]


def make_sim(extra=""):
    cell = ns.read_swc(os.path.join(MORPH, "ca1_ko20x-07.swc")).discretize()
    model = ns.Model()
    model.parse(MODEL + extra, "grad.model")
    sim = ns.Simulation([cell], 1, backend="cpu", model=model, threads=1, gpu_mechanisms="per-step")
    sim.add_iclamp(0, 0, 0.5, 1e9, 1.0)
    for c in (0, 20, 40):
        sim.add_recording(0, c)
    return sim


def sim_traces(values):
    extra = "".join(f"{w}.{n} = {float(v)!r}\n" for (w, n, _), v in zip(PARAMS, values))
    sim = make_sim(extra)
    sim.init()
    sim.advance(STEPS)
    return np.array(sim.traces)


@pytest.fixture(scope="module")
def problem():
    sim = make_sim()
    g = ns.Gradient(sim, threads=1)
    for w, n, _ in PARAMS:
        g.add_param(0, w, n)
    theta = np.array([v for _, _, v in PARAMS])
    samples, sites = g.shape(STEPS)
    t = np.arange(samples)[:, None] * np.ones((1, sites))
    target = -65.0 + 10.0 * np.sin(0.05 * t)
    return sim, g, theta, target


def test_value_and_grad_against_differences(problem):
    """The adjoint's gradient against central differences of ns.Simulation's loss, to 1e-7."""
    _, g, theta, target = problem
    L, grad, y = ns.grad.value_and_grad(g, STEPS, theta, target=target)
    np.testing.assert_allclose(y, sim_traces(theta), rtol=0, atol=1e-9)  # the forward is the simulation's
    assert L == pytest.approx(np.sum((y - target) ** 2), rel=1e-12)
    for k in range(len(theta)):  # fourth-order central differences, relative step 1e-3
        h = 1e-3 * theta[k]
        loss = [np.sum((sim_traces(theta + s * h * np.eye(len(theta))[k]) - target) ** 2) for s in (1, -1, 2, -2)]
        fd = (8 * (loss[0] - loss[1]) - (loss[2] - loss[3])) / (12 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-7), PARAMS[k]


def test_dldy_is_the_vjp(problem):
    """dldy = 2 (y - target) gives the squared loss's gradient bit for bit; vjp is linear in the cotangent."""
    _, g, theta, target = problem
    _, grad, y = ns.grad.value_and_grad(g, STEPS, theta, target=target)
    _, grad2, _ = ns.grad.value_and_grad(g, STEPS, theta, dldy=2.0 * (y - target))
    np.testing.assert_array_equal(grad, grad2)
    np.testing.assert_array_equal(ns.grad.vjp(g, STEPS, theta, 2.0 * (y - target)), grad)
    np.testing.assert_array_equal(ns.grad.traces(g, STEPS, theta), y)
    np.testing.assert_array_equal(ns.grad.values(g), theta)


def test_bad_input(problem):
    sim, g, theta, target = problem
    with pytest.raises(ns.SizeError, match="target"):
        g.run(STEPS, target=target[:-1])
    with pytest.raises(ns.InvalidArgumentError, match="target"):
        g.run(STEPS)
    with pytest.raises(ns.InvalidArgumentError, match="values for"):
        ns.grad.value_and_grad(g, STEPS, theta[:2], target=target)
    with pytest.raises(ns.InvalidArgumentError, match="no RANGE PARAMETER"):
        g.add_param(0, "all", "gfoo_hh")
    with pytest.raises(ns.InvalidArgumentError, match="Simulation"):
        ns.Gradient(42)


def test_torch_function(problem):
    torch = pytest.importorskip("torch", reason="PyTorch not installed (the numpy path is tested above)")
    _, g, theta, target = problem
    f = ns.grad.torch_function(g, STEPS)
    th = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    loss = ((f(th) - torch.from_numpy(target)) ** 2).sum()
    loss.backward()
    _, grad, _ = ns.grad.value_and_grad(g, STEPS, theta, target=target)
    np.testing.assert_allclose(th.grad.numpy(), grad, rtol=1e-12)


def test_jax_function(problem):
    jax = pytest.importorskip("jax", reason="JAX not installed (the numpy path is tested above)")
    jax.config.update("jax_enable_x64", True)
    _, g, theta, target = problem
    f = ns.grad.jax_function(g, STEPS)
    gj = jax.grad(lambda th: ((f(th) - target) ** 2).sum())(jax.numpy.asarray(theta))
    _, grad, _ = ns.grad.value_and_grad(g, STEPS, theta, target=target)
    np.testing.assert_allclose(np.asarray(gj), grad, rtol=1e-12)
