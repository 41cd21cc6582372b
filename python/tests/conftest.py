"""Shared paths and fixtures of the Python tests (python/tests/).

The tests import the neurosolve package found first on sys.path: the in-tree
build (make test: tests/python/python.cmake sets PYTHONPATH to build/python) or an
installed one (pip install .). NS_CLI names the neurosolve command for the
comparisons with its results (set by ctest); without it those tests skip.
"""
import os
import shutil

# JAX would otherwise take 75 % of the GPU's memory at its first use, leaving
# little to CuPy, PyTorch and the library in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# Idle OpenMP threads sleep instead of spinning (CI machines are small and shared).
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MORPH = os.path.join(ROOT, "data", "morphologies")
LIFE = os.path.join(ROOT, "data", "life")
TEST_DATA = os.path.join(ROOT, "tests", "data")


def cli_path():
    p = os.environ.get("NS_CLI")
    if p and os.path.exists(p):
        return p
    p = os.path.join(ROOT, "build", "neurosolve")
    return p if os.path.exists(p) else shutil.which("neurosolve")


@pytest.fixture(scope="session")
def cli():
    p = cli_path()
    if not p:
        pytest.skip("the neurosolve command was not found (set NS_CLI)")
    return p


@pytest.fixture(scope="session")
def ca1():
    import neurosolve as ns
    return ns.read_swc(os.path.join(MORPH, "ca1_h10.swc"))


def hines_dense(parent, a, b, d):
    """The dense matrix of one Hines system (NEURON's convention, hines.h):
    row i holds d[i] on the diagonal and b[i] at column parent[i]; row parent[i]
    holds a[i] at column i."""
    n = len(parent)
    m = np.zeros((n, n))
    m[np.arange(n), np.arange(n)] = d
    for i in range(1, n):
        m[i, parent[i]] = b[i]
        m[parent[i], i] = a[i]
    return m


def hines_sparse(parent, a, b, d):
    import scipy.sparse as sp
    n = len(parent)
    i = np.arange(1, n)
    rows = np.concatenate([np.arange(n), i, parent[1:]])
    cols = np.concatenate([np.arange(n), parent[1:], i])
    vals = np.concatenate([d, b[1:], a[1:]])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def has_gpu():
    import neurosolve as ns
    return ns.build_info()["cuda"] and ns.cuda_device_count() > 0
