"""neurosolve: Hines and batched tridiagonal solvers, LiFE and a NEURON-compatible
cable simulation, on CPUs and NVIDIA GPUs (docs/python.md).

The classes are thin wrappers over the C library (libneurosolve, linked into
neurosolve._core). Arrays are numpy arrays on the host and any DLPack array
(CuPy, PyTorch, JAX) on the GPU; they are used in place, never converted:
a wrong dtype, length, layout or device raises InvalidArgumentError / SizeError.
"""
import math as _math
import numbers as _numbers

import numpy as _np

def _preload_cuda_libraries():
    """The cusparse-* tridiagonal methods load libcusparse.so.12 when a solver of theirs is made, and
    the LFP of a CUDA simulation libcublas (the library links neither). Where the nvidia-cusparse or
    nvidia-cublas wheel is installed (as CuPy and PyTorch use them), its copy is loaded first so that
    the library's dlopen finds it."""
    import ctypes
    import glob
    import importlib.util
    import os
    if not importlib.util.find_spec("nvidia"):
        return
    for name in ("cusparse", "cublas"):
        spec = importlib.util.find_spec("nvidia." + name)
        for d in (spec.submodule_search_locations or []) if spec else []:
            for lib in sorted(glob.glob(os.path.join(d, "lib", "lib%s.so.*" % name))):
                try:
                    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                    break
                except OSError:
                    pass


_preload_cuda_libraries()
from . import _core, _checks  # noqa: E402
_checks.install(_core)  # before the names are taken from it: numbers checked as the CLI checks them
from ._errors import (Error, InvalidArgumentError, OutOfMemoryError, IOError, ParseError,  # noqa: F401,A004
                      TopologyError, SingularError, NotFiniteError, UnsupportedError, NoDeviceError,
                      CudaError, CusparseError, SizeError, EmptyError, DeviceMemoryError, InternalError,
                      MechanismError)
from ._core import (Tree, Morphology, Cell, Batch, HinesSolver, TridiagSolver, SimParams,  # noqa: F401
                    MechanismLibrary, Model, Network, build_mechanisms,
                    BoundHinesSolve, BoundTridiagSolve,
                    LifeModel, LifeEngine, Lfp, Gradient, read_probe, probe_line, lfp_matrix, lfp_csd, four_sphere,
                    version, build_info, cuda_device_count, status_string,
                    hines_methods, hines_method_backend, tridiag_methods, backend_info, available_methods)
from . import _errors
from .neuron_import import from_neuron, NeuronImport  # noqa: F401
from . import grad  # noqa: F401,E402

# The short descriptions come from the library (ns_status_string).
for _s, _c in _errors.BY_STATUS.items():
    _c.status_name = status_string(_s)
    _c.__doc__ = f"ns_status {_s}: {_c.status_name}."

__version__ = version()

read_swc = Morphology.read


class Simulation(_core.Simulation):
    """A population of cells (docs/simulation.md). ``params`` is a SimParams or a
    dict of ns_sim_params_set keys (``{"all.gnabar_hh": 0.1, "celsius": 6.3}``).
    ``model=`` a Model: the membrane from NMODL mechanisms (docs/simulation.md, "Models")."""

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

    @classmethod
    def from_network(cls, network, params=None, library=None, cells=None, backend="cpu", **options):
        """A simulation of a network file or a SONATA config (docs/networks.md, "Network files",
        "SONATA"): a path or a Network. Without ``params``, a SONATA config's run settings
        (tstop, dt, celsius, v_init, spike_threshold) start from the defaults. Its morphologies are read and discretised (d_lambda 0.1 at 100 Hz with the
        params' Ra) unless ``cells`` gives one Cell per morphology; the model is the file's
        (mechanisms of ``library`` too) or ``model=``, not both. Initialised, ready to run."""
        if not isinstance(network, Network):
            network = Network.read(str(network))
        if params is None:
            params = SimParams()
            network.apply_run_settings(params)  # a SONATA config's run and conditions
        elif isinstance(params, dict):
            params = make_params(params)
        own = network.model(library)
        if own is not None and options.get("model") is not None:
            raise InvalidArgumentError("Simulation.from_network: the network names a model and model= is given: "
                                       "one of them only")
        if own is None and options.get("model") is None:
            raise InvalidArgumentError("Simulation.from_network: the network names no model (a `model` line) "
                                       "and no model= is given")
        if own is not None:
            options["model"] = own
        if cells is None:
            ra = params.to_dict()["Ra"]
            cells = [read_swc(p).discretize(Ra=ra) for p in network.morphologies]
        cells = list(cells)
        sim = cls(cells, network.n_cells, network.cell_morphology, params, backend=backend, **options)
        sim.apply_network(network, cells)
        sim.init()
        return sim

    def run(self, tstop, progress=None, every_ms=10.0):
        """Advance to ``tstop`` ms from t = 0 (NEURON's run: round(tstop / dt) steps in all).

        ``progress(t, step_count)`` (optional) is called after every ``every_ms`` of simulated
        time and at the end; a true return stops the run there. The steps are the same as in
        one advance() (the C loop has no callback: the run is advanced in chunks)."""
        _check_number("Simulation.run", "tstop", tstop, 0.0)
        _check_number("Simulation.run", "every_ms", every_ms, 0.0, low_open=True)
        if progress is not None and not callable(progress):
            raise InvalidArgumentError(f"Simulation.run: progress = {progress!r} is not callable")
        total = self.steps_for(tstop)
        if total < self.step_count:
            raise InvalidArgumentError(f"Simulation.run: tstop = {tstop!r} ms is before the simulation's time "
                                       f"t = {self.time:g} ms (step {self.step_count}): it runs forward only")
        if progress is None:
            if total > self.step_count:
                self.advance(total - self.step_count)
            return
        chunk = max(1, self.steps_for(every_ms))
        while self.step_count < total:
            self.advance(min(chunk, total - self.step_count))
            if progress(self.time, self.step_count):
                return


def _check_number(fn, name, value, low, low_open=False):
    """A numeric argument as the command line checks its options: a real number
    (not a bool), finite, >= low (> low with low_open); else InvalidArgumentError
    naming the function, the argument and the value."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise InvalidArgumentError(f"{fn}: {name} = {value!r} is not a number")
    v = float(value)
    if not _math.isfinite(v) or (v <= low if low_open else v < low):
        raise InvalidArgumentError(f"{fn}: {name} = {value!r} must be a finite number "
                                   f"{'>' if low_open else '>='} {low:g}")


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


class NiftiImage:
    """A NIfTI-1 image read by the library (ns_nifti_read, docs/life_data.md): ``data`` holds every
    value as float64 with the file's slope and intercept applied, in numpy's Fortran order (axis 1
    fastest, as nibabel's arrays); ``affine`` maps voxel (i, j, k) to RAS+ mm (sform, else qform, else
    pixdim: ``affine_source``); ``datatype`` is the file's (``int16``, ``float32``, ...)."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"NiftiImage(shape={self.shape}, datatype={self.datatype!r}, affine_source={self.affine_source!r})"


def read_nifti(path):
    """Read a NIfTI-1 image (.nii or .nii.gz) with the library's reader: a NiftiImage."""
    return NiftiImage(_core._read_nifti(str(path)))


def read_gradients(bvals, bvecs):
    """Read FSL b-values and b-vectors (ns_gradients_read): (bvals (n,), bvecs (n, 3)), as stored."""
    return _core._read_gradients(str(bvals), str(bvecs))


class Streamlines:
    """Streamlines read by the library (ns_tracts_open: .trk, .tck, .trx), in RAS+ mm, packed:
    streamline s is ``points[offsets[s]:offsets[s + 1]]``; ``len``, indexing (a view) and iteration
    work as for nibabel's ArraySequence. ``format`` is trk/tck/trx, ``declared_count`` the header's
    count (-1 when it declares none), ``file_to_world`` the affine from the file's stored
    coordinates to RAS+ mm."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def __len__(self):
        return len(self.offsets) - 1

    def __getitem__(self, s):
        n = len(self)
        if not -n <= s < n:
            raise IndexError(f"streamline {s} out of range ({n} streamlines)")
        s %= n
        return self.points[self.offsets[s]:self.offsets[s + 1]]

    def __iter__(self):
        return (self[s] for s in range(len(self)))

    def __repr__(self):
        return f"Streamlines({len(self)} streamlines, {len(self.points)} points, format={self.format!r})"


def read_streamlines(path):
    """Read a whole tractogram (.trk, .tck, .trx) with the library's readers: Streamlines in RAS+ mm."""
    return Streamlines(_core._read_tracts(str(path)))


def _pack_streamlines(streamlines):
    """(points (m, 3) float64, offsets (n + 1,) int64) of streamlines given as a nibabel/DIPY
    ArraySequence (Streamlines), a nibabel Tractogram or TractogramFile, or a sequence of (k, 3) arrays."""
    if isinstance(streamlines, Streamlines):  # read_streamlines: packed already
        return _np.ascontiguousarray(streamlines.points), _np.ascontiguousarray(streamlines.offsets)
    if hasattr(streamlines, "streamlines") and not hasattr(streamlines, "get_data"):
        streamlines = streamlines.streamlines  # nibabel Tractogram / TrkFile / TckFile, DIPY StatefulTractogram
    if hasattr(streamlines, "get_data") and hasattr(streamlines, "_lengths"):  # nibabel ArraySequence
        lengths = _np.asarray(streamlines._lengths, dtype=_np.int64)
        points = _np.asarray(streamlines.get_data(), dtype=_np.float64).reshape(-1, 3)
    else:
        arrays = []
        for k, s in enumerate(streamlines):
            a = _np.asarray(s, dtype=_np.float64)
            if a.ndim != 2 or a.shape[1] != 3:
                raise InvalidArgumentError(f"LifeModel.build_arrays: streamline {k} has shape {a.shape}, "
                                           "expected (points, 3)")
            arrays.append(a)
        lengths = _np.array([len(a) for a in arrays], dtype=_np.int64)
        points = _np.concatenate(arrays) if arrays else _np.zeros((0, 3))
    offsets = _np.zeros(len(lengths) + 1, dtype=_np.int64)
    _np.cumsum(lengths, out=offsets[1:])
    return _np.ascontiguousarray(points), offsets


def _build_arrays(dwi, affine=None, bvals=None, bvecs=None, streamlines=None, streamlines_affine=None,
                  dictionary_l=0, axial_diffusivity=1.0, radial_diffusivity=0.0, b0_threshold=50.0,
                  bad="error", nodes="sum"):
    """A LiFE model from arrays in memory (ns_life_build_arrays; docs/python.md).

    dwi: a 4-D array (x, y, z, volume) of a real dtype, any memory order (not copied), a
    nibabel image (its ``dataobj``, scaled as nibabel scales it, and its ``affine``) or a NiftiImage;
    affine: voxel -> RAS+ mm (4 x 4; taken from a nibabel image when None);
    bvals, bvecs: b-values [s/mm^2] and directions ((n, 3) or (3, n)), or a DIPY GradientTable as
    ``bvals`` with ``bvecs=None``;
    streamlines: nibabel/DIPY Streamlines, a nibabel Tractogram, neurosolve Streamlines
    (read_streamlines) or a list of (k, 3) arrays, in RAS+ mm
    (nibabel's and DIPY's rasmm), or in any space that ``streamlines_affine`` maps to RAS+ mm (DIPY's
    voxel space: the image's affine). They are packed into one float64 array (a copy).
    The other options are LifeModel.build's."""
    if hasattr(dwi, "dataobj") and hasattr(dwi, "affine"):  # a nibabel image
        if affine is None:
            affine = dwi.affine
        dwi = _np.asanyarray(dwi.dataobj)
    elif isinstance(dwi, NiftiImage):  # read_nifti
        if affine is None:
            affine = dwi.affine
        dwi = dwi.data
    if affine is None:
        raise InvalidArgumentError("LifeModel.build_arrays: affine is required with an array dwi")
    if bvecs is None and hasattr(bvals, "bvals") and hasattr(bvals, "bvecs"):  # DIPY GradientTable
        bvals, bvecs = bvals.bvals, bvals.bvecs
    if bvals is None or bvecs is None or streamlines is None:
        raise InvalidArgumentError("LifeModel.build_arrays: bvals, bvecs and streamlines are required")
    bvals = _np.ascontiguousarray(bvals, dtype=_np.float64).ravel()
    bvecs = _np.asarray(bvecs, dtype=_np.float64)
    if bvecs.ndim == 2 and bvecs.shape[0] == 3 and bvecs.shape[1] == bvals.size and bvals.size != 3:
        bvecs = bvecs.T  # FSL's three rows
    points, offsets = _pack_streamlines(streamlines)
    to_world = None if streamlines_affine is None else _np.ascontiguousarray(streamlines_affine, dtype=_np.float64)
    return LifeModel._build_arrays(dwi, _np.ascontiguousarray(affine, dtype=_np.float64), bvals,
                                   _np.ascontiguousarray(bvecs), points, offsets, to_world, dictionary_l,
                                   axial_diffusivity, radial_diffusivity, b0_threshold, bad, nodes)


LifeModel.build_arrays = staticmethod(_build_arrays)


def life_rmse(model, w, engine=None):
    """Per-voxel RMSE of the signal before (Y) and after (Y - M w) the fit, as
    ``neurosolve life report`` computes it: two arrays of n_voxels entries."""
    if engine is None:
        engine = LifeEngine(model)
    y = model.signal  # (n_voxels, n_theta)
    mw = engine.mw(_np.ascontiguousarray(w, dtype=_np.float64)).reshape(y.shape)
    return _np.sqrt((y ** 2).mean(axis=1)), _np.sqrt(((y - mw) ** 2).mean(axis=1))


__all__ = [n for n in dir() if not n.startswith("_")]
