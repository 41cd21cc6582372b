"""Every numeric argument of the bindings checked as the command line checks its options
(issue 45; neurosolve/_checks.py): a bool, a string or NaN is not a number, a count must be a
whole number within its C type, and each refusal is an InvalidArgumentError naming the function,
the parameter and the value; ranges are the library's, with the command line's messages."""
import math

import numpy as np
import pytest

import neurosolve as ns
import neurosolve._core as core


def sim(ca1):
    return ns.Simulation([ca1.discretize()], 1)


@pytest.mark.parametrize("value, says", [(True, "steps = True is not a number"), ("3", "steps = '3' is not a number"),
                                         (1.5, "steps = 1.5 is not a whole number"),
                                         (2 ** 70, "steps = 1180591620717411303424 is out of range"),
                                         (-5, "ns_sim_advance: -5 steps")])
def test_counts(ca1, value, says):
    s = sim(ca1)
    with pytest.raises(ns.InvalidArgumentError, match="^" + (("Simulation.advance: " + says) if "ns_sim" not in says
                                                              else says)):
        s.advance(value)
    assert s.step_count == 0


@pytest.mark.parametrize("value", [True, "6.3", float("nan"), None])
def test_reals(value):
    p = ns.SimParams()
    with pytest.raises(ns.InvalidArgumentError, match=r"^SimParams.set: value = .* is not a number"):
        p.set("celsius", value)
    assert p.to_dict()["celsius"] == ns.SimParams().to_dict()["celsius"]


def test_keywords_and_ranges(ca1):
    with pytest.raises(ns.InvalidArgumentError, match=r"^LifeModel.synth: noise = nan is not a number"):
        core.LifeModel.synth(n_theta=8, dictionary_l=4, n_fibers=8, grid=[5, 5, 5], mean_length=4, noise=math.nan)
    m = core.LifeModel.synth(n_theta=8, dictionary_l=4, n_fibers=8, grid=[5, 5, 5], mean_length=4)
    e = ns.LifeEngine(m)
    # the library's ranges, one message per option (as life fit --rtolo inf is refused)
    for name, value in [("rtol_objective", math.inf), ("tol_gradient", -1.0), ("ridge", math.inf)]:
        with pytest.raises(ns.InvalidArgumentError, match=f"ns_life_fit: {name} = -?inf must be finite and >= 0|"
                                                          f"ns_life_fit: {name} = -1 must be finite and >= 0"):
            e.fit(**{name: value})
    with pytest.raises(ns.InvalidArgumentError, match=r"^Batch.random_values: seed = -1 must be >= 0"):
        ns.Batch([ca1.discretize()], 2).random_values(-1)
    with pytest.raises(ns.InvalidArgumentError, match=r"^Simulation.add_iclamp: amplitude = True is not a number"):
        sim(ca1).add_iclamp(0, 0, 1.0, 1.0, True)


def test_numbers_that_are_numbers(ca1):
    """numpy scalars and ints where a float is taken pass, and give what Python numbers give."""
    s = sim(ca1)
    soma = ca1.discretize().locate("soma")
    s.add_iclamp(np.int64(0), np.int32(soma), 1, np.float32(3.0), np.float64(1.0))
    s.add_recording(0, soma)
    s.advance(np.int64(40))
    t = ns.Simulation([ca1.discretize()], 1)
    t.add_iclamp(0, soma, 1.0, 3.0, 1.0)
    t.add_recording(0, soma)
    t.advance(40)
    assert np.array_equal(s.traces, t.traces)


def test_every_numeric_binding_is_checked():
    """Each method whose one nanobind signature takes an int or a float goes through the checks."""
    unchecked = []
    for cls in (c for c in vars(core).values() if isinstance(c, type)):
        for name, fn in vars(cls).items():
            if isinstance(fn, staticmethod):
                fn = fn.__func__
            sigs = getattr(fn, "__nb_signature__", None) or getattr(getattr(fn, "__wrapped__", None),
                                                                     "__nb_signature__", None)
            if not sigs or len(sigs) != 1:
                continue
            if (": int" in sigs[0][0] or ": float" in sigs[0][0]) and not getattr(fn, "__ns_checked__", False):
                unchecked.append(f"{cls.__name__}.{name}")
    assert not unchecked, unchecked
