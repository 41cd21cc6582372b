"""Numeric arguments of every binding checked as the command line checks its options (issue 45).

The command line reads every number through one reader (include/neurosolve/number.h): a value
that is not a number, or NaN, or (for a count) not a whole number is refused naming the option.
The bindings (neurosolve._core, nanobind) would instead take True as 1, raise a TypeError listing
the C signature for "5" or 1.5 given as a count, and pass NaN on. install() wraps each binding
that takes an ``int`` or ``float`` parameter (read from its nanobind signature) so that such a
value raises InvalidArgumentError naming the function, the parameter and the value; ranges
(dt > 0, tstop >= 0, ...) are the library's to check, with the same messages as on the command
line. A count too large for its C type (a nanobind TypeError after these checks) is reported
the same way."""
import functools
import math
import numbers
import re

from ._errors import InvalidArgumentError

_SIG = re.compile(r"^def (\w+)\((.*)\)")


def _params(signature):
    """[(name, 'int' | 'float' | None)] of a nanobind signature string, in order."""
    m = _SIG.match(signature)
    if not m:
        return None
    out, depth, cur = [], 0, ""
    for ch in m.group(2) + ",":
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            p = cur.strip()
            cur = ""
            if not p or p in ("*", "/") or p.startswith("*"):
                continue
            name, _, rest = p.partition(":")
            kind = rest.split("=")[0].strip()
            out.append((name.strip(), kind if kind in ("int", "float") else None))
        else:
            cur += ch
    return out


def _check(where, name, kind, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{where}: {name} = {value!r} is not a number")
    if kind == "int" and not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"{where}: {name} = {value!r} is not a whole number")
    if kind == "float" and math.isnan(value):
        raise InvalidArgumentError(f"{where}: {name} = {value!r} is not a number")


def _wrap(fn, where, params):
    numeric = {n: k for n, k in params if k}
    positions = list(params)

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        for (name, kind), value in zip(positions, args):
            if kind:
                _check(where, name, kind, value)
        for name, value in kwargs.items():
            if name in numeric:
                _check(where, name, numeric[name], value)
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            if "incompatible function arguments" not in str(e):
                raise
            # every number passed the checks above: a count outside its C type's range
            given = list(zip(positions, args)) + [((n, numeric.get(n)), v) for n, v in kwargs.items()]
            for (name, kind), value in given:
                if kind == "int" and not -2 ** 31 <= value < 2 ** 31:
                    raise InvalidArgumentError(f"{where}: {name} = {value!r} is out of range") from None
            for (name, kind), value in given:
                if kind == "int" and value < 0:
                    raise InvalidArgumentError(f"{where}: {name} = {value!r} must be >= 0") from None
            raise

    checked.__ns_checked__ = True
    return checked


def _install_on(owner, attr, fn, where, is_type):
    sigs = getattr(fn, "__nb_signature__", None)
    if not sigs or len(sigs) != 1:  # overloads: nanobind picks by type, leave them
        return 0
    params = _params(sigs[0][0])
    if not params or not any(k for _, k in params):
        return 0
    method = is_type and params[0][0] == "self"
    if not method and is_type:
        setattr(owner, attr, staticmethod(_wrap(fn, where, params)))
    else:
        setattr(owner, attr, _wrap(fn, where, params))
    return 1


def install(core):
    """Wrap the numeric bindings of the extension module `core` in place; returns how many."""
    n = 0
    for attr, obj in list(vars(core).items()):
        if isinstance(obj, type):
            for name, fn in list(vars(obj).items()):
                where = f"{obj.__name__}" if name == "__init__" else f"{obj.__name__}.{name}"
                n += _install_on(obj, name, fn, where, True)
        elif not attr.startswith("__"):
            n += _install_on(core, attr, obj, attr, False)
    return n
