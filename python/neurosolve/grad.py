"""Gradients of a simulation with respect to its parameters (docs/gradients.md).

``neurosolve.Gradient`` is the C handle (include/neurosolve/grad.h); this module
gives it numpy values in and out, and makes a simulation a differentiable layer
of PyTorch (``torch_function``) and JAX (``jax_function``): parameter values in,
the recorded traces (samples x sites) out, their vector-Jacobian product by
the adjoint (the loss's form ``dldy``). torch and jax are imported only when
their wrapper is asked for.
"""
import numpy as _np

from ._core import Gradient  # noqa: F401
from ._errors import InvalidArgumentError, UnsupportedError


def _set(gradient, values):
    values = _np.asarray(values, dtype=_np.float64).reshape(-1)
    if values.size != gradient.n_params:
        raise InvalidArgumentError(f"neurosolve.grad: {values.size} values for {gradient.n_params} parameters")
    for k, x in enumerate(values):
        gradient.set_param(k, float(x))


def values(gradient):
    """The parameters' current values (numpy, in the order added)."""
    return _np.array([gradient.get_param(k) for k in range(gradient.n_params)])


def value_and_grad(gradient, steps, params=None, target=None, weight=None, dldy=None):
    """(loss, gradient, traces) of a run of ``steps`` steps with the parameters at
    ``params`` (None: as they are): the loss sum weight * (y - target)^2 over
    the recorded samples y, or sum dldy * y; the gradient a numpy array (one
    entry per parameter), the traces samples x sites."""
    if params is not None:
        _set(gradient, params)
    return gradient.run(steps, target=target, weight=weight, dldy=dldy)


def traces(gradient, steps, params=None):
    """The recorded samples (samples x sites) of a run with the parameters at ``params``."""
    samples, sites = gradient.shape(steps)
    return value_and_grad(gradient, steps, params, dldy=_np.zeros((samples, sites)))[2]


def vjp(gradient, steps, params, cotangent):
    """cotangent^T d(traces)/d(params): the gradient of sum(cotangent * traces)."""
    cot = _np.ascontiguousarray(cotangent, dtype=_np.float64)
    return value_and_grad(gradient, steps, params, dldy=cot)[1]


def torch_function(gradient, steps):
    """A function of a float64 torch tensor of the parameters' values that returns
    the traces (samples x sites, float64) and has their exact backward (a
    ``torch.autograd.Function`` over the adjoint; host tensors)."""
    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UnsupportedError("neurosolve.grad.torch_function needs PyTorch (pip install torch)") from e

    class _Traces(torch.autograd.Function):
        @staticmethod
        def forward(ctx, theta):
            ctx.save_for_backward(theta)
            return torch.from_numpy(traces(gradient, steps, theta.detach().cpu().numpy()))

        @staticmethod
        def backward(ctx, gy):
            (theta,) = ctx.saved_tensors
            g = vjp(gradient, steps, theta.detach().cpu().numpy(), gy.detach().cpu().numpy())
            return torch.from_numpy(g).to(dtype=theta.dtype, device=theta.device)

    return _Traces.apply


def jax_function(gradient, steps):
    """A JAX function of the parameters' values (float64: jax_enable_x64) that
    returns the traces (samples x sites) with a ``jax.custom_vjp`` over the
    adjoint (host callbacks: jit and grad work, vmap does not batch)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UnsupportedError("neurosolve.grad.jax_function needs JAX (pip install jax)") from e
    if not jax.config.jax_enable_x64:
        raise UnsupportedError("neurosolve.grad.jax_function: the gradients are float64; enable "
                               "jax.config.update('jax_enable_x64', True) first")
    samples, sites = gradient.shape(steps)
    out = jax.ShapeDtypeStruct((samples, sites), jnp.float64)

    @jax.custom_vjp
    def f(theta):
        return jax.pure_callback(lambda t: traces(gradient, steps, _np.asarray(t)), out, theta)

    def fwd(theta):
        return f(theta), theta

    def bwd(theta, gy):
        shape = jax.ShapeDtypeStruct(theta.shape, jnp.float64)
        return (jax.pure_callback(lambda t, c: vjp(gradient, steps, _np.asarray(t), _np.asarray(c)),
                                  shape, theta, gy),)

    f.defvjp(fwd, bwd)
    return f
