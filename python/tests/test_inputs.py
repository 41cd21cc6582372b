"""Inputs people type (issue 45): numeric arguments checked as the command
line checks its options, os.PathLike wherever a path is taken, NEURON's
section names (Cell.sections, Cell.locate, Cell.find_section) against NEURON
9's Import3d names (tests/data/neuron_section_names.csv)."""
import csv
import math
import os
import pathlib

import numpy as np
import pytest

import neurosolve as ns
from conftest import LIFE, MORPH, TEST_DATA


def clamped(cell):
    sim = ns.Simulation([cell], 1)
    sim.add_iclamp(0, cell.locate("soma"), 1, 3, 1.0)
    sim.add_recording(0, cell.locate("soma"))
    return sim


@pytest.mark.parametrize("tstop", [-10, float("nan"), float("inf"), "5", None, True])
def test_run_refuses_bad_tstop(ca1, tstop):
    sim = clamped(ca1.discretize())
    with pytest.raises(ns.InvalidArgumentError, match=r"Simulation.run: tstop = "):
        sim.run(tstop)
    assert sim.step_count == 0


@pytest.mark.parametrize("tstop", [-1.0, float("nan"), float("inf")])
def test_steps_for_refuses_bad_tstop(ca1, tstop):
    with pytest.raises(ns.InvalidArgumentError, match="Simulation.steps_for: tstop = "):
        ns.Simulation([ca1.discretize()], 1).steps_for(tstop)


def test_run_refuses_a_time_already_passed(ca1):
    sim = clamped(ca1.discretize())
    sim.run(2.0)
    with pytest.raises(ns.InvalidArgumentError, match=r"tstop = 1.0 ms is before the simulation's time t = 2 ms"):
        sim.run(1.0)
    sim.run(2.0)  # the time it is at: nothing to do, not an error
    assert sim.step_count == 80
    with pytest.raises(ns.InvalidArgumentError, match="every_ms = 0"):
        sim.run(3.0, progress=lambda t, k: None, every_ms=0)
    with pytest.raises(ns.InvalidArgumentError, match="progress = 3 is not callable"):
        sim.run(3.0, progress=3)
    assert sim.step_count == 80


def test_paths_take_pathlike(tmp_path):
    swc = pathlib.Path(MORPH) / "ca1_h10.swc"
    a, b = ns.read_swc(swc), ns.read_swc(str(swc))
    assert a.info == b.info
    p = tmp_path / "p.params"
    p.write_text("tstop = 7\n")
    params = ns.SimParams()
    params.read(p)
    assert params.to_dict()["tstop"] == 7
    m = tmp_path / "m.model"
    m.write_text("all.insert = pas\n")
    ns.Model().read(m)
    img = ns.read_nifti(pathlib.Path(LIFE) / "small_25.nii.gz")
    assert img.shape[:3] == ns.read_nifti(os.path.join(LIFE, "small_25.nii.gz")).shape[:3]
    g = ns.read_gradients(pathlib.Path(LIFE) / "small_25.bval", pathlib.Path(LIFE) / "small_25.bvec")
    assert g is not None
    assert len(ns.read_streamlines(pathlib.Path(LIFE) / "EuDX_small_25.trk")) == 60


def test_sections_have_neuron_names():
    ref = {}
    with open(os.path.join(TEST_DATA, "neuron_section_names.csv")) as f:
        for row in csv.DictReader(line for line in f if not line.startswith("#")):
            ref.setdefault(row["file"], {})[row["name"]] = int(row["first_point_id"])
    for name, names in ref.items():
        cell = ns.read_swc(pathlib.Path(MORPH) / name).discretize()
        secs = cell.sections()
        assert len(secs) == len(names) == cell.info["sections"]
        assert {s["name"]: s["first_point_id"] for s in secs} == names
        for k in (0, len(secs) // 2, len(secs) - 1):
            nm = secs[k]["name"]
            assert cell.find_section(nm) == k
            assert cell.find_section(f"swc:{secs[k]['first_point_id']}") == k
            assert cell.locate(nm + "(0.3)") == cell.locate(k, 0.3) == cell.locate(f"sec:{k}(0.3)")
            assert cell.get_section(k)["name"] == nm


def test_location_errors(ca1):
    cell = ca1.discretize()
    with pytest.raises(ns.ParseError, match="dend is an array of sections: give dend"):
        cell.locate("dend")
    with pytest.raises(ns.ParseError, match=r"x '2' is not a number in \[0, 1\]"):
        cell.locate("dend[1](2)")
    with pytest.raises(ns.InvalidArgumentError, match=r"no section axon\[0\]: the cell has no axon sections"):
        cell.locate("axon[0]")
    with pytest.raises(ns.InvalidArgumentError, match="no section starts at SWC id 99999 .*--sections"):
        cell.find_section("swc:99999")
    n = sum(1 for s in cell.sections() if s["name"].startswith("dend["))
    with pytest.raises(ns.InvalidArgumentError, match=rf"the cell has dend\[0\] to dend\[{n - 1}\]"):
        cell.locate(f"dend[{n}]")
    assert not math.isnan(cell.locate("c3"))
    assert cell.locate("c3") == 3
