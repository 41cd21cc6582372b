"""Inputs people type (issue 45): `--opt=value`, errors that name the part of
the argument that is wrong and the valid choices, NEURON's section names
wherever a location is taken (checked against NEURON 9's Import3d names,
tests/data/neuron_section_names.csv from validation/neuron_section_names.py),
`morph --sections`, and the hint of a failed SWC-id lookup.

Usage: test_cli_inputs.py NEUROSOLVE SOURCE_DIR
"""
import csv
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from cli_harness import Harness  # noqa: E402

h = Harness(sys.argv[1])
SRC = os.path.abspath(sys.argv[2])
MORPH = os.path.join(SRC, "data", "morphologies")
CELL = os.path.join(MORPH, "ca1_h10.swc")
SIM = ["simulate", CELL, "--no-progress", "--tstop", "5"]


def has(p, text, what):
    h.check(text in p.stderr, f"{what}: stderr lacks {text!r}: {p.stderr!r}")


# --opt=value is --opt value, for every command (split before dispatch)
a = json.loads(h.run("simulate", CELL, "--no-progress", "--tstop=20", "--json", "--iclamp=soma:1:15:auto").stdout)
b = json.loads(h.run("simulate", CELL, "--no-progress", "--tstop", "20", "--json", "--iclamp", "soma:1:15:auto").stdout)
h.check(a["steps"] == 800 and a["first_cells"] == b["first_cells"] and a["spikes"] > 0,
        f"--tstop=20 differs from --tstop 20: {a['steps']} steps, {a['first_cells']} vs {b['first_cells']}")
p = h.run("solve", "small-low", "--cells=3", "--json")
h.check(json.loads(p.stdout or "{}").get("cells") == 3, f"solve --cells=3: {p.stdout!r}")
h.check("--tstop=" not in h.run(*SIM, "--tstop=", expect=2).stderr, "--tstop= (empty) was not split")

# each error names the option as typed and the part that is wrong
has(h.run(*SIM, "--tstop", "-10", expect=2), "--tstop -10: tstop = -10 ms", "--tstop -10")
has(h.run(*SIM, "--dt=-1", expect=2), "--dt -1: dt = -1 ms", "--dt=-1")
has(h.run(*SIM, "--set", "dend.gnabar_hh=-1", expect=2), "--set dend.gnabar_hh=-1: ", "--set")
has(h.run(*SIM, "--set", "tstop", expect=2), "--set: 'tstop' is not KEY=VALUE", "--set without =")
p = h.run(*SIM, "--iclamp", "dend:5:10:1", expect=2)
has(p, "--iclamp dend:5:10:1: location 'dend': dend is an array of sections: give dend[K]", "a bare section array")
p = h.run(*SIM, "--iclamp", "dendrite[2]:5:10:1", expect=2)
has(p, "'dendrite' is not a section name", "an unknown name")
has(p, "NEURON's names (soma, axon, dend, apic, dend_T)", "the valid forms")
has(h.run(*SIM, "--iclamp", "dend[3](1.5):5:10:1", expect=2), "x '1.5' is not a number in [0, 1]", "x out of range")
has(h.run(*SIM, "--iclamp", "dend[a]:5:10:1", expect=2), "the index 'a' in [] is not an integer", "a bad index")
has(h.run(*SIM, "--iclamp", "soma:5:10", expect=2), "--iclamp soma:5:10: expected LOC:DEL:DUR:AMP", "three fields")
has(h.run(*SIM, "--record", "swc=x:0.5", expect=2), "the SWC id 'x' is not an integer", "a bad SWC id")
has(h.run(*SIM, "--record", "sec:3(0.5", expect=2), "'(' without a closing ')'", "no closing parenthesis")
# --backend: a name that is none lists them; cuda where no GPU is usable names the usable ones
has(h.run(*SIM, "--backend", "gpx", expect=2), "--backend: 'gpx' is not a backend: auto, cpu or cuda", "--backend gpx")
if not json.loads(h.run("info", "--json").stdout or "{}").get("devices"):
    for cmd in (SIM, ["solve", "small-low"]):
        p = h.run(*cmd, "--backend=gpu", expect=1)
        has(p, "--backend gpu: no usable GPU", cmd[0])
        has(p, "the backends usable here are cpu and auto", cmd[0])

# morph --sections: NEURON's names and the SWC ids where the sections start,
# against NEURON 9's Import3d (every section of four files: soma, axon, dend,
# apic, dend_16..18, a file without a soma, a soma contour)
ref = {}
with open(os.path.join(SRC, "tests", "data", "neuron_section_names.csv")) as f:
    for row in csv.DictReader(line for line in f if not line.startswith("#")):
        ref.setdefault(row["file"], {})[row["name"]] = int(row["first_point_id"])
h.check(len(ref) == 4 and sum(len(v) for v in ref.values()) > 1000, f"reference: {len(ref)} files")
for name, names in ref.items():
    out = json.loads(h.run("morph", os.path.join(MORPH, name), "--sections", "--json").stdout or "{}")
    table = out["morphologies"][0]["section_table"]
    ours = {s["name"]: s["first_point_id"] for s in table}
    h.check(len(table) == len(names) == out["morphologies"][0]["sections"],
            f"{name}: {len(table)} sections listed, NEURON has {len(names)}")
    wrong = [(k, v, ours.get(k)) for k, v in names.items() if ours.get(k) != v]
    h.check(not wrong, f"{name}: names that start at other SWC ids than NEURON's: {wrong[:5]}")
    h.check([s["section"] for s in table] == list(range(len(table))), f"{name}: section indices")
    h.check(all(s["nseg"] >= 1 and s["length_um"] > 0 and s["region"] in
                ("soma", "axon", "basal", "apical", "other") for s in table), f"{name}: nseg, length, region")
p = h.run("morph", CELL, "--sections")
h.check(" dend[3] " in p.stdout and "first_swc_id" in p.stdout, f"morph --sections (text): {p.stdout[:400]!r}")

# one grammar: the same compartment by every form of a location
table = json.loads(h.run("morph", CELL, "--sections", "--json").stdout)["morphologies"][0]["section_table"]
k = next(s for s in table if s["name"] == "dend[3]")
sid, fid = k["section"], k["first_point_id"]
forms = ["dend[3](0.25)", f"sec:{sid}(0.25)", f"{sid}:0.25", f"swc:{fid}(0.25)", f"swc={fid}:0.25"]
with tempfile.TemporaryDirectory() as tmp:
    args = [*SIM, "--out", os.path.join(tmp, "r")]
    for loc in forms:
        args += ["--record", loc]
    h.run(*args, "--iclamp", f"dend[3]:1:3:0.3")
    with open(os.path.join(tmp, "r_traces.csv")) as f:
        rows = [line.rstrip("\n").split(",") for line in f]
    cols = list(zip(*rows[1:]))[1:]
    h.check(len(cols) == len(forms) and all(c == cols[0] for c in cols),
            f"the forms {forms} recorded different compartments")
    p = h.run(*SIM, "--iclamp", f"soma:1:3:0.3", "--out", os.path.join(tmp, "s"), "--record", "dend[3](0.25)")
    with open(os.path.join(tmp, "s_traces.csv")) as f:
        other = [line.rstrip("\n").split(",")[1] for line in f][1:]
    h.check(list(cols[0]) != other, "--iclamp dend[3] and --iclamp soma gave the same trace")
    # a network file and a model file take the same names
    net = os.path.join(tmp, "n.net")
    with open(net, "w") as f:
        f.write(f"cells c 1 {CELL}\nmodel: all.insert = hh\nmodel: dend[3].insert = pas\n"
                "synapse s c dend[3](0.25) ExpSyn\ntrain t 1 2\nconnect t s 0.05 1\n")
    p = h.run("simulate", "--network", net, "--no-progress", "--tstop", "5", "--json", "--record", "dend[3](0.25)")
    h.check(json.loads(p.stdout or "{}").get("synapses") == 1, f"network with dend[3](0.25): {p.stdout!r}")
    with open(net, "w") as f:
        f.write(f"cells c 1 {CELL}\nmodel: all.insert = hh\nsynapse s c dend[9999](0.5) ExpSyn\n")
    p = h.run("simulate", "--network", net, "--no-progress", "--tstop", "5", expect=1)
    has(p, "no section dend[9999]: the cell has dend[0] to dend[", "a network's missing NEURON name")
    mdl = os.path.join(tmp, "m.model")
    with open(mdl, "w") as f:
        f.write("all.insert = hh\napic[99999].insert = pas\n")
    p = h.run(*SIM, "--model", mdl, expect=1)
    has(p, "apic[99999] is no section with membrane of any shape", "a model's missing NEURON name")
    with open(mdl, "w") as f:
        f.write("all.insert = hh\nsec:3(1.5).insert = pas\n")
    has(h.run(*SIM, "--model", mdl, expect=1), "is not one of", "a model selector with x outside [0, 1]")

# per-subcommand --help: that subcommand's usage and options only
fit = h.run("life", "fit", "--help").stdout
h.check(fit.startswith("usage: neurosolve life fit") and "--iters N" in fit and "synth options" not in fit
        and "life report" not in fit, f"life fit --help: {fit[:300]!r}")
rep = h.run("life", "report", "x", "--help").stdout
h.check(rep.startswith("usage: neurosolve life report") and "fit options" not in rep, f"life report --help: {rep!r}")
lst = h.run("mechanisms", "list", "--help").stdout
h.check(lst.startswith("usage: neurosolve mechanisms list") and "mechanisms build" not in lst,
        f"mechanisms list --help: {lst!r}")
everything = h.run("life", "--help").stdout
h.check(all(f"neurosolve life {s}" in everything for s in ("synth", "fit", "info", "build", "report")),
        "life --help lists every subcommand")

# a failed SWC-id lookup says where to find the ids
p = h.run(*SIM, "--record", "swc:99999", expect=1)
has(p, "no section starts at SWC id 99999", "swc:99999")
has(p, "`neurosolve morph FILE --sections` lists them", "swc:99999's hint")

h.finish("cli_inputs")
