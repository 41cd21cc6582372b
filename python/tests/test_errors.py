"""Every failure is a neurosolve.Error carrying the library's detail."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import TEST_DATA, MORPH


def test_every_status_has_a_class():
    from neurosolve import _errors
    for status in range(-1, -17, -1):
        cls = _errors.BY_STATUS[status]
        assert issubclass(cls, ns.Error) and cls.status == status
        # the extension raises them (through the same translator as every call)
        with pytest.raises(cls) as e:
            ns._core._raise(status, f"detail {status}")
        assert e.value.status == status and str(e.value) == f"detail {status}"
        assert ns.status_string(status) != ns.status_string(0)


def test_status_names_come_from_the_library():
    from neurosolve import _errors
    names = set()
    for status, cls in _errors.BY_STATUS.items():
        assert cls.status_name == ns.status_string(status) and cls.status_name not in names
        names.add(cls.status_name)


def test_parse_error_names_file_and_line():
    path = os.path.join(TEST_DATA, "swc_bad", "nonnumeric_x.swc")
    with pytest.raises(ns.ParseError) as e:
        ns.read_swc(path)
    msg = str(e.value)
    assert msg.startswith(path + ":"), msg
    line = int(msg[len(path) + 1:].split(":")[0])
    bad = [i + 1 for i, l in enumerate(open(path)) if l.strip() and not l.startswith("#")
           and not all(_isnum(x) for x in l.split())]
    assert line == bad[0]
    assert isinstance(e.value, ValueError)


def _isnum(x):
    try:
        float(x)
        return True
    except ValueError:
        return False


def test_topology_and_io_errors():
    with pytest.raises(ns.TopologyError) as e:
        ns.read_swc(os.path.join(TEST_DATA, "swc_bad", "missing_parent.swc"))
    assert "missing_parent.swc" in str(e.value)
    with pytest.raises(ns.IOError) as e:
        ns.read_swc("/no/such/file.swc")
    assert "/no/such/file.swc" in str(e.value) and isinstance(e.value, OSError)


def test_every_bad_swc_raises():
    d = os.path.join(TEST_DATA, "swc_bad")
    for f in sorted(os.listdir(d)):
        with pytest.raises(ns.Error) as e:
            ns.read_swc(os.path.join(d, f), radii="reject")
        assert f in str(e.value), (f, str(e.value))


def test_bad_enum_names():
    m = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc"))
    with pytest.raises(ns.InvalidArgumentError, match="rule.*'bogus'.*d_lambda"):
        m.discretize(rule="bogus")
    with pytest.raises(ns.InvalidArgumentError, match="roots"):
        ns.read_swc(os.path.join(MORPH, "ca1_h10.swc"), roots="some")
    with pytest.raises(ns.InvalidArgumentError, match="unknown method 'nope'"):
        ns.HinesSolver(ns.Batch([ns.Tree.paper("small-low")], 4), method="nope")


def test_invalid_tree():
    with pytest.raises(ns.TopologyError):
        ns.Tree(np.array([-1, 0, 5], dtype=np.int32))
    with pytest.raises(ns.InvalidArgumentError, match="dtype int64, expected int32"):
        ns.Tree(np.array([-1, 0, 1]))
