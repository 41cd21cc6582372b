"""neurosolve.from_neuron (docs/neuron_import.md). The file side runs everywhere: the files
from_neuron wrote for a NEURON model (tests/data/neuron_import/) give NEURON's stored run. The
import itself needs NEURON in this Python: those tests skip, saying so, without it."""
import os

import numpy as np
import pytest

import neurosolve as ns

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "neuron_import")


def stored_reference(name):
    head, rows = {}, []
    with open(os.path.join(DATA, name + "_neuron.csv")) as f:
        for line in f:
            if line.startswith("#") and " = " in line:
                k, v = line[1:].split(" = ", 1)
                head[k.strip()] = v.strip()
            elif line[0].isdigit():
                rows.append([float(x) for x in line.split(",")])
    return head, np.array(rows)


def test_written_files_give_neurons_run():
    head, ref = stored_reference("stylized")
    imp = ns.NeuronImport.read(os.path.join(DATA, "stylized"))
    assert imp.iclamps and all(m in ("pas", "hh") for m in imp.mechanisms)
    sim = imp.simulation(record_every=int(head["record_every"]))
    cell = ns.read_swc(imp.swc).discretize(sections=imp.texts["params"])
    root = ns.neuron_import.section_index(cell)[int(head["root"])]
    sim.add_recording(0, cell.locate(root, 0.5))
    sim.init()
    sim.run(sim.params.to_dict()["tstop"])
    v = sim.traces[:, 0]
    assert len(v) == len(ref)
    assert np.sqrt(np.mean((v - ref[:, 1]) ** 2)) < 1e-4
    want = [float(x) for x in head["spikes"].split()]
    assert len(want) >= 3 and np.allclose(sim.spikes(0), want, rtol=0, atol=1e-6)


def _neuron():
    try:
        from neuron import h
    except ImportError:
        pytest.skip("NEURON is not installed for this Python (pip install neuron): from_neuron is not tested")
    return h


def test_from_neuron_against_neuron(tmp_path):
    h = _neuron()
    h.load_file("stdrun.hoc")
    soma = h.Section(name="soma")
    soma.L = soma.diam = 16.0
    dend = h.Section(name="dend")
    dend.L, dend.diam, dend.nseg = 300.0, 1.5, 13
    dend.connect(soma(1))
    tuft = [h.Section(name=f"apic[{k}]") for k in range(2)]
    for k, s in enumerate(tuft):
        s.L, s.diam, s.nseg = 150.0 + 30 * k, 1.0 + 0.5 * k, 5 + 2 * k  # apic[0] thinner: start_diam
        s.connect(dend(1))
    for s in (soma, dend, *tuft):
        s.insert("pas")
        s.insert("hh")
        s.Ra = 90.0
    for seg in dend:
        seg.gnabar_hh = 0.12 * (1.0 - 0.8 * seg.x)  # a value per segment
        seg.g_pas = 1e-4 * (1 + seg.x)
    tuft[1].Ra = 140.0
    stim = h.IClamp(soma(0.5))
    stim.delay, stim.dur, stim.amp = 2.0, 40.0, 1.0
    h.celsius, h.v_init, h.dt, h.tstop = 6.3, -65.0, 0.025, 50.0
    imp = ns.from_neuron([soma, dend, *tuft], out=tmp_path, name="toy")
    assert imp.nseg == 1 + 13 + 5 + 7 and imp.geometry < 1e-6 and not imp.not_captured
    assert f"swc:{imp.sections['apic[0]']}.start_diam = 1.0" in imp.texts["params"]
    assert "(" in imp.texts["model"] and f"swc:{imp.sections['apic[1]']}.Ra = 140.0" in imp.texts["params"]
    sim = imp.simulation()
    cell = ns.read_swc(imp.swc).discretize(sections=imp.texts["params"])
    idx = ns.neuron_import.section_index(cell)
    sim.add_recording(0, cell.locate(idx[imp.sections["dend"]], 0.7))
    sim.init()
    sim.run(h.tstop)
    vec = h.Vector().record(dend(0.7)._ref_v)
    nc = h.NetCon(soma(0.5)._ref_v, None, sec=soma)
    nc.threshold = -20.0
    spikes = h.Vector()
    nc.record(spikes)
    h.finitialize(h.v_init)
    h.continuerun(h.tstop)
    v = sim.traces[:, 0]
    assert len(v) == len(vec) and np.max(np.abs(v - np.array(vec))) < 1e-5
    assert len(spikes) >= 2 and np.allclose(sim.spikes(0), list(spikes), rtol=0, atol=1e-9)
    # a child inside its parent (dend(0.3): swc:ID.parentx), its own geometry, NEURON's voltages
    mid = h.Section(name="mid")
    mid.L, mid.diam, mid.nseg = 60.0, 0.8, 3
    mid.connect(dend(0.3))
    mid.insert("pas")
    imp = ns.from_neuron([soma, dend, *tuft, mid], out=tmp_path, name="mid")
    assert f"swc:{imp.sections['mid']}.parentx = 0.3" in imp.texts["params"] and imp.geometry < 1e-6
    sim = imp.simulation()
    cell = ns.read_swc(imp.swc).discretize(sections=imp.texts["params"])
    sim.add_recording(0, cell.locate(ns.neuron_import.section_index(cell)[imp.sections["mid"]], 0.9))
    sim.init()
    sim.run(h.tstop)
    vec = h.Vector().record(mid(0.9)._ref_v)
    h.finitialize(h.v_init)
    h.continuerun(h.tstop)
    assert np.max(np.abs(sim.traces[:, 0] - np.array(vec))) < 1e-5
    h.delete_section(sec=mid)
    # what the files cannot say is raised, or listed with strict=False
    odd = h.Section(name="odd")
    odd.L, odd.diam = 50.0, 1.0
    odd.connect(dend(0.3), 1)
    with pytest.raises(ns.UnsupportedError, match=r"odd: connected by its x = 1 end"):
        ns.from_neuron([soma, dend, *tuft, odd])
    part = ns.from_neuron([soma, dend, *tuft, odd], strict=False)
    assert any("odd" in m for m in part.not_captured)
    noisy = h.NetStim()
    noisy.noise = 0.5
    syn = h.ExpSyn(dend(0.5))
    link = h.NetCon(noisy, syn)
    part = ns.from_neuron([soma, dend, *tuft, odd], strict=False)
    assert any("noise = 0.5" in m for m in part.not_captured)
    assert any(m.startswith("NetCon") and "not captured" in m for m in part.not_captured)
    assert "synapse syn0 imported" in part.texts["network"] and "connect" not in part.texts["network"]
    del link, noisy, syn
    with pytest.raises(ns.InvalidArgumentError, match="not among the sections"):
        ns.from_neuron([dend, *tuft])
