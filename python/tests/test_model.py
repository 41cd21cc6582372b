"""Models from Python (docs/simulation.md, "Models"): NMODL mechanisms from the
built-in set and from a library built here, against the params' shorthand for hh and
against NEURON's stored traces of the layer 5 model (tests/data/neuron_l5),
and bad input."""
import os
import shutil

import numpy as np
import pytest

import neurosolve as ns
from conftest import MORPH, ROOT, TEST_DATA


def soma_run(cell, params, model=None, tstop=30.0, cells=3):
    sim = ns.Simulation([cell], cells, params=params, backend="cpu", model=model)
    soma = sim.spike_compartment(0)
    for c in range(cells):
        sim.add_iclamp(c, soma, 2.0 + c, 20.0, 1.0 + 0.5 * c)
        sim.add_recording(c, soma)
    sim.init()
    sim.run(tstop)
    return sim.traces, [sim.spikes(c) for c in range(cells)]


def test_model_hh_equals_params_shorthand():
    """The params' membrane keys are shorthand for the built-in hh: the same model, the same bits."""
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    model = ns.Model()
    model.insert("all", "hh")
    model.set("dend", "gnabar_hh", 0.06)
    hand_t, hand_s = soma_run(cell, {"dend.gnabar_hh": 0.06})
    gen_t, gen_s = soma_run(cell, ns.SimParams(), model)
    assert sum(len(s) for s in hand_s) > 0
    assert [len(s) for s in hand_s] == [len(s) for s in gen_s]
    np.testing.assert_array_equal(hand_t, gen_t)
    for a, b in zip(hand_s, gen_s):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_model_per_shape():
    """One model per shape: each cell as its shape alone under its model, to the bit."""
    a = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    b = ns.read_swc(os.path.join(MORPH, "purk_dbbs.swc")).discretize()
    hh, mixed = ns.Model(), ns.Model()
    hh.insert("all", "hh")
    mixed.parse("all.insert = pas\nall.e_pas = -70\nsoma.insert = hh\n", "mixed.model")

    def run(shapes, n, model):
        sim = ns.Simulation(shapes, n, backend="cpu", model=model, threads=1)
        for c in range(n):
            soma = sim.spike_compartment(c)
            sim.add_iclamp(c, soma, 2.0, 20.0, 1.0 + 0.5 * (c // len(shapes)))
            sim.add_recording(c, soma)
        sim.init()
        sim.run(15.0)
        return sim.traces

    both = run([a, b], 4, [hh, mixed])
    alone_a, alone_b = run([a], 2, hh), run([b], 2, mixed)
    # one column per site: cell c's soma
    assert np.array_equal(both[:, [0, 2]], alone_a)
    assert np.array_equal(both[:, [1, 3]], alone_b)
    swapped = run([a, b], 4, [mixed, hh])
    assert not np.array_equal(both, swapped)
    with pytest.raises(ns.InvalidArgumentError, match="1 models for 2 shapes"):
        ns.Simulation([a, b], 2, backend="cpu", model=[hh])


def test_model_gpu_mechanisms_option():
    # the fused/per-step choice, one rule for the GPU and the CPU loop: the built-in hh fuses under auto
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    model = ns.Model()
    model.insert("all", "hh")
    sim = ns.Simulation([cell], 1, backend="cpu", model=model, gpu_mechanisms="per-step")
    assert sim.gpu_mechanisms == "per-step"
    assert ns.Simulation([cell], 1, backend="cpu", model=model).gpu_mechanisms == "fused"
    with pytest.raises(ns.InvalidArgumentError, match="auto, fused, per-step"):
        ns.Simulation([cell], 1, backend="cpu", model=model, gpu_mechanisms="fast")


def test_model_errors():
    model = ns.Model()
    with pytest.raises(ns.InvalidArgumentError, match="no mechanism 'NaTs2_t'"):
        model.insert("soma", "NaTs2_t")
    with pytest.raises(ns.InvalidArgumentError, match="region 'trunk'"):
        model.insert("trunk", "hh")
    model.insert("soma", "hh")
    with pytest.raises(ns.InvalidArgumentError, match="gnabar"):
        model.set("soma", "gxbar_hh", 1.0)
    with pytest.raises(ns.ParseError, match="model.txt:2:"):
        model.parse("soma.insert = pas\nsoma.g_pas = 1 +\n", "model.txt")
    with pytest.raises(ns.UnsupportedError, match="POINT_PROCESS"):
        model.insert("soma", "ExpSyn")
    with pytest.raises(ns.InvalidArgumentError, match="MechanismLibrary"):
        ns.Model("not a library")
    cell = ns.read_swc(os.path.join(MORPH, "ca1_h10.swc")).discretize()
    model.set("all", "gnabar_hh", 0.1)  # hh is not inserted in the dendrites
    with pytest.raises(ns.InvalidArgumentError, match="not inserted at compartment"):
        ns.Simulation([cell], 1, backend="cpu", model=model)


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_l5_model_against_neuron(tmp_path):
    # the binding builds a library (one file: pas); BBP's channels come from ctest's fixture
    # (NS_TEST_LIBBBP, tests/CMakeLists.txt) where it ran, else are built here as well
    mods = tmp_path / "mods"
    mods.mkdir()
    shutil.copy(os.path.join(ROOT, "data", "mechanisms", "neuron", "passive.mod"), mods)
    ns.build_mechanisms(str(mods), str(tmp_path / "libpas.so"))
    assert ns.MechanismLibrary(str(tmp_path / "libpas.so")).names == ["pas"]
    lib_path = os.environ.get("NS_TEST_LIBBBP", "")
    if not os.path.isfile(lib_path):
        lib_path = str(tmp_path / "libbbp.so")
        ns.build_mechanisms(os.path.join(ROOT, "data", "mechanisms", "bbp"), lib_path)
    lib = ns.MechanismLibrary(lib_path)
    assert "CaDynamics_E2" in lib.names
    assert lib.describe("CaDynamics_E2")["ions"] == ["ca"]
    model = ns.Model(lib)
    model.read(os.path.join(ROOT, "data", "models", "l5pc_hay.model"))
    del lib  # the model keeps the library open
    params = ns.SimParams()
    params.read(os.path.join(ROOT, "data", "models", "l5pc_hay.params"))
    cell = ns.read_swc(os.path.join(MORPH, "l5pc_bbp_axon.swc")).discretize(Ra=params.to_dict()["Ra"])
    ref = os.path.join(TEST_DATA, "neuron_l5", "l5pc_hay.csv")
    spikes = [float(x) for x in next(l for l in open(ref) if l.startswith("# spikes")).split("=")[1].split()]
    sim = ns.Simulation([cell], 1, params=params, backend="cpu", model=model)
    del model  # the simulation keeps the library open
    soma = sim.spike_compartment(0)
    sim.add_iclamp(0, soma, 100.0, 700.0, 1.8)
    sim.init()
    sim.run(300.0)  # the first 6 of NEURON's 12 spikes
    ours = sim.spikes(0)
    expect = [t for t in spikes if t < 300.0]
    assert len(ours) == len(expect) == 6
    assert np.max(np.abs(np.asarray(ours) - np.asarray(expect))) < 0.05
    # the soma's calcium at 300 ms against NEURON's cai column (its 7 significant digits)
    rows = [l for l in open(ref) if not l.startswith("#")]
    col = rows[0].strip().split(",").index("cai_1_0.5")
    neuron_cai = next(float(r.split(",")[col]) for r in rows[1:] if abs(float(r.split(",")[0]) - 300.0) < 1e-9)
    cai = sim.model_var(0, "cai")[soma]
    assert abs(cai - neuron_cai) <= 1e-6 * neuron_cai
    assert np.isnan(sim.model_var(0, "gIhbar_Ih")).any()  # Ih is not in the axon
    with pytest.raises(ns.InvalidArgumentError, match="m_nope"):
        sim.model_var(0, "m_nope")


@pytest.fixture(scope="module")
def ftab_hoc_lib(tmp_path_factory):
    """test/ftab.mod (FUNCTION_TABLEs) and hoc/hocerr.mod (hoc_execerror): one build."""
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("ftab_hoc")
    for f in ("test/ftab.mod", "hoc/hocerr.mod"):
        shutil.copy(os.path.join(ROOT, "data", "mechanisms", f), d)
    ns.build_mechanisms(str(d), str(d / "libftab_hoc.so"))
    return ns.MechanismLibrary(str(d / "libftab_hoc.so"))


def ftab_run(model, tstop):
    cell = ns.Morphology.from_points("cyl", np.array([[0.0, 0, 0], [20, 0, 0]]), np.array([10.0, 10.0]),
                                     np.array([1, 1], dtype=np.int32), np.array([-1, 0], dtype=np.int32))
    sim = ns.Simulation([cell.discretize(rule="one")], 1, params={"celsius": 6.3, "v_init": -65, "dt": 0.025},
                        backend="cpu", model=model)
    sim.add_recording(0, 0)
    sim.init()
    return sim


def test_function_table_from_python_against_neuron(ftab_hoc_lib):
    # the tables of validation/nmodl_neuron_traces.py's ftab_tables(): ninf over abscissae, tau over two ranges
    x = np.array([-100, -85, -70, -62, -50, -35, -20, 0, 30, 60.0])
    ninf = 1 / (1 + np.exp(-(x + 45) / 9))
    i, j = np.meshgrid(np.arange(16), np.arange(3), indexing="ij")
    a = (-100 + 10 * i + 50) / 25.0
    tau = 1 + 4 * np.exp(-(a * a)) * (0.5 + 0.4 * j)
    model = ns.Model(ftab_hoc_lib)
    model.insert("all", "pas")
    model.insert("all", "ftab")
    with pytest.raises(ns.InvalidArgumentError, match="10 values for 2 arguments"):
        model.set_function_table("tabntau_ftab", ninf, ranges=[(16, -100, 50), (3, 1, 3)])
    model.set_function_table("tabninf_ftab", ninf, x=[x])
    model.set_function_table("tabntau_ftab", tau.ravel(), ranges=[(16, -100, 50), (3, 1, 3)])
    sim = ftab_run(model, 40.0)
    sim.add_iclamp(0, 0, 5.0, 20.0, 0.3)
    sim.run(40.0)
    rows = np.array([[float(v) for v in l.split(",")] for l in open(os.path.join(TEST_DATA, "nmodl", "ftab.csv"))
                     if l[:1].isdigit() or l[:1] == "-"])
    steps = np.rint(rows[:, 0] / 0.025).astype(int)
    rms = np.sqrt(np.mean((sim.traces[steps, 0] - rows[:, 1]) ** 2))
    assert rms <= 1e-6, rms


def test_mechanism_error_from_python(ftab_hoc_lib):
    # hocerr.mod's hoc_execerror once t passes terr: NEURON's fadvance stops after the same steps
    ref = dict(l.split() for l in open(os.path.join(TEST_DATA, "nmodl", "hocerr.txt")) if not l.startswith("#"))
    model = ns.Model(ftab_hoc_lib)
    model.parse("all.insert = hocerr\nall.e_hocerr = -70\n")
    sim = ftab_run(model, 10.0)
    with pytest.raises(ns.MechanismError, match=r"hocerr\.mod:30: mechanism hocerr: hocerr: t passed terr") as e:
        sim.advance(1000)
    assert e.value.status == -16
    assert sim.traces.shape[0] == int(ref["steps_completed"]) + 1
    assert abs(sim.traces[-1, 0] - float(ref["v_last"])) <= 1e-9


def test_density_pointer_from_python_against_neuron(tmp_path):
    # validation/nmodl_density_pointer.py's case (tests/nmodl/test_nmodl_dpointer.c): the POINTERs of
    # dgap and ptrtest set with Simulation.set_model_pointer, v against NEURON 9.0.2's trace
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    for f in ("dgap.mod", "ptrtest.mod"):
        shutil.copy(os.path.join(ROOT, "data", "mechanisms", "pointer", f), tmp_path)
    ns.build_mechanisms(str(tmp_path), str(tmp_path / "libdpointer.so"))
    model = ns.Model(ns.MechanismLibrary(str(tmp_path / "libdpointer.so")))
    model.insert("all", "hh")
    model.insert("all", "dgap")
    model.insert("basal", "ptrtest")
    model.set("basal", "g_dgap", "2e-3")
    model.set("soma", "g_dgap", "5e-4")
    a = ns.Morphology.from_points("a", np.array([[0.0, 0, 0], [0, 60, 0]]), np.array([1.0, 1.0]),
                                  np.array([3, 3], dtype=np.int32), np.array([-1, 0], dtype=np.int32))
    b = ns.Morphology.from_points("b", np.array([[0.0, 0, 0], [20, 0, 0]]), np.array([10.0, 10.0]),
                                  np.array([1, 1], dtype=np.int32), np.array([-1, 0], dtype=np.int32))
    sim = ns.Simulation([a.discretize(rule="fixed_length", max_length=20.0), b.discretize(rule="one")], 2, np.array([0, 1], dtype=np.int32),
                        params={"celsius": 6.3, "v_init": -65, "dt": 0.025}, backend="cpu", model=model)
    n = [0, 1, 2]  # A's compartments at x = 1/6, 1/2, 5/6
    with pytest.raises(ns.InvalidArgumentError, match="no density mechanism's POINTER 'vgp_dgap'"):
        sim.set_model_pointer(0, 0, "vgp_dgap", 1, 0, "v")
    with pytest.raises(ns.InvalidArgumentError, match="POINTER vgap_dgap at compartment 0 of cell 0 is not connected"):
        sim.init()
    sim.set_model_pointer(0, n[0], "vgap_dgap", 1, 0, "v")
    sim.set_model_pointer(0, n[1], "vgap_dgap", 0, n[0], "v")
    sim.set_model_pointer(0, n[2], "vgap_dgap", 0, n[1], "ena")
    sim.set_model_pointer(1, 0, "vgap_dgap", 0, n[0], "v")
    sim.set_model_pointer(0, n[0], "src_ptrtest", 1, 0, "m_hh")
    sim.set_model_pointer(0, n[1], "src_ptrtest", 0, n[2], "h_hh")
    sim.set_model_pointer(0, n[2], "src_ptrtest", 1, 0, "v")
    sim.add_iclamp(1, 0, 2.0, 30.0, 0.2)
    for k in n:
        sim.add_recording(0, k)
    sim.add_recording(1, 0)
    sim.init()
    sim.run(40.0)
    rows = np.array([[float(v) for v in l.split(",")] for l in open(os.path.join(TEST_DATA, "nmodl", "dpointer.csv"))
                     if l[:1].isdigit() or l[:1] == "-"])
    rms = np.sqrt(np.mean((sim.traces[: len(rows), :4] - rows[:, 1:5]) ** 2, axis=0))
    assert rows.shape[0] == 1601 and np.all(rms <= 1e-6), rms
