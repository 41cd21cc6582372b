"""Gradients with synapses and events from Python (docs/gradients.md, "Synapses, weights
and events"): a connection's weight and a synapse type's time constant of a two-cell
network (cell 0 spikes from a clamp; its detector drives an ExpSyn on cell 1, a train an
Exp2Syn) against central differences of ns.Simulation's loss, with the spike times the
differences must not move."""
import os

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH

STEPS = 240
MODEL = "all.insert = hh pas\nall.g_pas = 1e-4\nall.e_pas = -65\nglobal.usetable_hh = 0\n"
THETA = np.array([0.05, 2.5])  # the weight of connection 0 (cell 1), tau2 of cell 1's Exp2Syn


def make_sim(theta):
    cell = ns.read_swc(os.path.join(MORPH, "ca1_ko20x-07.swc")).discretize()
    model = ns.Model()
    model.parse(MODEL, "grad.model")
    sim = ns.Simulation([cell], 2, backend="cpu", model=model, threads=1, gpu_mechanisms="per-step")
    sim.add_iclamp(0, 0, 0.5, 1e9, 1.0)
    for c in range(2):
        for k in (0, 20, 40):
            sim.add_recording(c, k)
    exp = sim.add_synapse(1, 0, "ExpSyn")
    exp2 = sim.add_synapse(1, 20, "Exp2Syn")
    sim.synapse_set(exp2, "tau1", 0.4)
    sim.synapse_set(exp2, "tau2", float(theta[1]))
    det = sim.add_detector(0, 0, -20.0)
    train = sim.add_spike_source([0.4, 1.3, 3.1])
    sim.connect(det, exp, float(theta[0]), 1.0)
    sim.connect(train, exp2, 0.004, 0.5)
    return sim, det


def sim_run(theta):
    sim, det = make_sim(theta)
    sim.init()
    sim.advance(STEPS)
    return np.array(sim.traces), list(sim.source_spikes(det))


def test_weight_and_tau_against_differences():
    sim, _ = make_sim(THETA)
    sim.init()
    g = ns.Gradient(sim, threads=1)
    g.add_param(1, "conn:0", "weight")
    g.add_param(1, "all", "tau2_Exp2Syn")
    samples, sites = g.shape(STEPS)
    t = np.arange(samples)[:, None] * np.ones((1, sites))
    target = -65.0 + 10.0 * np.sin(0.05 * t)
    L, grad, y = ns.grad.value_and_grad(g, STEPS, THETA, target=target)
    y_sim, spikes = sim_run(THETA)
    assert len(spikes) >= 1  # cell 0 spikes: its events reach cell 1
    np.testing.assert_allclose(y, y_sim, rtol=0, atol=1e-9)  # the forward is the simulation's
    for k in range(len(THETA)):  # fourth-order central differences, relative step 1e-4
        h = 1e-4 * THETA[k]
        loss = []
        for s in (1, -1, 2, -2):
            y_k, spikes_k = sim_run(THETA + s * h * np.eye(len(THETA))[k])
            assert spikes_k == spikes  # the differences keep the spike times
            loss.append(np.sum((y_k - target) ** 2))
        fd = (8 * (loss[0] - loss[1]) - (loss[2] - loss[3])) / (12 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-6), k


def test_refused_by_name():
    sim, _ = make_sim(THETA)
    with pytest.raises(ns.InvalidArgumentError, match="no connection onto cell 0"):
        ns.Gradient(sim, threads=1).add_param(0, "all", "weight")
    with pytest.raises(ns.InvalidArgumentError, match="Exp2Syn has no RANGE PARAMETER"):
        ns.Gradient(sim, threads=1).add_param(1, "all", "tauX_Exp2Syn")
