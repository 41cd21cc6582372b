"""neurosolve's exceptions: one class per ns_status (include/neurosolve/status.h).

Every failing call raises a subclass of :class:`Error` whose message is the
library's ns_last_error() detail (file, line, argument and reason) or, for a
check made by the bindings (dtype, shape, contiguity, device), a message
naming the function and the argument.
"""


class Error(Exception):
    """A neurosolve call failed. ``status`` is the ns_status code (negative int),
    ``status_name`` its short description, ``message`` the detail."""

    __module__ = "neurosolve"
    status = None
    status_name = "error"

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


def _cls(name, status, desc, *bases):
    return type(name, (Error,) + bases, {"status": status, "status_name": desc,
                                         "__doc__": f"ns_status {status}: {desc}.",
                                         "__module__": "neurosolve"})


InvalidArgumentError = _cls("InvalidArgumentError", -1, "invalid argument", ValueError)
OutOfMemoryError = _cls("OutOfMemoryError", -2, "out of memory", MemoryError)
IOError = _cls("IOError", -3, "input/output error", OSError)  # noqa: A001 (neurosolve.IOError)
ParseError = _cls("ParseError", -4, "parse error", ValueError)
TopologyError = _cls("TopologyError", -5, "not a tree", ValueError)
SingularError = _cls("SingularError", -6, "singular system", ArithmeticError)
NotFiniteError = _cls("NotFiniteError", -7, "not finite", ArithmeticError)
UnsupportedError = _cls("UnsupportedError", -8, "unsupported", NotImplementedError)
NoDeviceError = _cls("NoDeviceError", -9, "no usable GPU", RuntimeError)
CudaError = _cls("CudaError", -10, "CUDA error", RuntimeError)
CusparseError = _cls("CusparseError", -11, "cuSPARSE error", RuntimeError)
SizeError = _cls("SizeError", -12, "inconsistent sizes", ValueError)
EmptyError = _cls("EmptyError", -13, "empty input", ValueError)
DeviceMemoryError = _cls("DeviceMemoryError", -14, "device out of memory", MemoryError)
InternalError = _cls("InternalError", -15, "internal error", RuntimeError)
MechanismError = _cls("MechanismError", -16, "mechanism error", RuntimeError)

BY_STATUS = {c.status: c for c in (
    InvalidArgumentError, OutOfMemoryError, IOError, ParseError, TopologyError, SingularError,
    NotFiniteError, UnsupportedError, NoDeviceError, CudaError, CusparseError, SizeError,
    EmptyError, DeviceMemoryError, InternalError, MechanismError)}


def _make(status, message):
    """Called by the extension: the exception object for an ns_status."""
    cls = BY_STATUS.get(status)
    if cls is None:
        return Error(message, status)
    return cls(message)
