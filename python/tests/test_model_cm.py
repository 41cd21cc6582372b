"""A model's `cm` statements (NEURON's cm per section or segment) and `eX_fixed` (e kept where a
concentration is written), docs/simulation.md "Models"; their agreement with NEURON is
tests/data/neuron_import/stylized_calcium (test neuron_import_cpu)."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH


def run(model_text, params=None):
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    p = ns.SimParams()
    if params:
        p.parse(params, "test.params")
    model = ns.Model()
    model.parse(model_text, "test.model")
    sim = ns.Simulation([cell], 1, params=p, backend="cpu", model=model)
    soma = sim.spike_compartment(0)
    sim.add_iclamp(0, soma, 2.0, 20.0, 1.5)
    sim.add_recording(0, soma)
    sim.init()
    sim.run(25.0)
    return sim.traces


def test_cm_statement_is_the_region_cm():
    base = "all.insert = hh\n"
    by_params = run(base, "dend.cm = 2\n")
    by_model = run(base + "dend.cm = 2\n")
    assert np.array_equal(by_params, by_model)  # the same capacitance, node by node
    assert not np.array_equal(by_model, run(base))
    # a later statement overrides an earlier one where both apply, one section at a time
    assert not np.array_equal(by_model, run(base + "dend.cm = 2\nsec:3.cm = 0.5\n"))
    assert np.array_equal(run(base + "dend.cm = 0.5\nsoma.cm = 1\n"), run(base, "dend.cm = 0.5\n"))


def test_e_fixed_without_a_writer_is_e():
    assert np.array_equal(run("all.insert = hh\nsoma.ena_fixed = 40\n"), run("all.insert = hh\nsoma.ena = 40\n"))


def test_cm_and_e_fixed_errors():
    with pytest.raises(ns.InvalidArgumentError, match=r"test.model:2: soma.cm is 0 uF/cm2 .*must be > 0"):
        run("all.insert = hh\nsoma.cm = 0\n")
    model = ns.Model()
    with pytest.raises(ns.InvalidArgumentError, match="nai_fixed"):
        model.parse("soma.nai_fixed = 10\n", "test.model")  # only e can be fixed
    with pytest.raises(ns.InvalidArgumentError, match="exx_fixed"):
        model.parse("soma.exx_fixed = 10\n", "test.model")
