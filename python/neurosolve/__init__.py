"""neurosolve: Hines and batched tridiagonal solvers, LiFE and a NEURON-compatible
cable simulation, on CPUs and NVIDIA GPUs (docs/python.md).

The classes are thin wrappers over the C library (libneurosolve, linked into
neurosolve._core). Arrays are numpy arrays on the host and any DLPack array
(CuPy, PyTorch, JAX) on the GPU; they are used in place, never converted:
a wrong dtype, length, layout or device raises InvalidArgumentError / SizeError.
"""
import numpy as _np

from ._errors import (Error, InvalidArgumentError, OutOfMemoryError, IOError, ParseError,  # noqa: F401,A004
                      TopologyError, SingularError, NotFiniteError, UnsupportedError, NoDeviceError,
                      CudaError, CusparseError, SizeError, EmptyError, DeviceMemoryError, InternalError)
from ._core import (Tree, Morphology, Cell, Batch, HinesSolver, TridiagSolver, SimParams,  # noqa: F401
                    BoundHinesSolve, BoundTridiagSolve,
                    LifeModel, LifeEngine, version, build_info, cuda_device_count, status_string,
                    hines_methods, hines_method_backend, tridiag_methods, backend_info, available_methods)
from . import _core
from . import _errors

# The short descriptions come from the library (ns_status_string).
for _s, _c in _errors.BY_STATUS.items():
    _c.status_name = status_string(_s)
    _c.__doc__ = f"ns_status {_s}: {_c.status_name}."

__version__ = version()

read_swc = Morphology.read


class Simulation(_core.Simulation):
    """A population of cells (docs/simulation.md). ``params`` is a SimParams or a
    dict of ns_sim_params_set keys (``{"all.gnabar_hh": 0.1, "celsius": 6.3}``)."""

    def __init__(self, cells, n_cells=None, cell_shape=None, params=None, **options):
        cells = list(cells)
        if n_cells is None:
            n_cells = len(cells)
        if params is None:
            params = SimParams()
        elif isinstance(params, dict):
            params = make_params(params)
        super().__init__(cells, n_cells, cell_shape, params, **options)
        self.params = params

    def run(self, tstop, progress=None, every_ms=10.0):
        """Advance to ``tstop`` ms from t = 0 (NEURON's run: round(tstop / dt) steps in all).

        ``progress(t, step_count)`` (optional) is called after every ``every_ms`` of simulated
        time and at the end; a true return stops the run there. The steps are the same as in
        one advance() (the C loop has no callback: the run is advanced in chunks)."""
        total = self.steps_for(tstop)
        if progress is None:
            if total > self.step_count:
                self.advance(total - self.step_count)
            return
        chunk = max(1, self.steps_for(every_ms))
        while self.step_count < total:
            self.advance(min(chunk, total - self.step_count))
            if progress(self.time, self.step_count):
                return


def make_params(values=None, **kw):
    """A SimParams with ``values`` (dict) and keyword arguments applied in order.
    Keys with a dot (``soma.gnabar_hh``) go in the dict; plain keys may be keywords."""
    p = SimParams()
    for k, v in list((values or {}).items()) + list(kw.items()):
        p.set(k, float(v))
    return p


def solve_hines(batch, a, b, d, rhs, method="auto", backend="auto", **options):
    """One-shot Hines solve (create a solver, solve in place)."""
    HinesSolver(batch, method=method, backend=backend, **options).solve(a, b, d, rhs)


def life_rmse(model, w, engine=None):
    """Per-voxel RMSE of the signal before (Y) and after (Y - M w) the fit, as
    ``neurosolve life report`` computes it: two arrays of n_voxels entries."""
    if engine is None:
        engine = LifeEngine(model)
    y = model.signal  # (n_voxels, n_theta)
    mw = engine.mw(_np.ascontiguousarray(w, dtype=_np.float64)).reshape(y.shape)
    return _np.sqrt((y ** 2).mean(axis=1)), _np.sqrt(((y - mw) ** 2).mean(axis=1))


__all__ = [n for n in dir() if not n.startswith("_")]
