#!/usr/bin/env python3
"""The L5PC model file, its parser in validation/neuron_model_compare.py and
the stored NEURON reference (tests/data/neuron_l5/), without NEURON.

1. The expression grammar of the model format (data/models/README.md):
   precedence, comparisons as 1/0, && || !, functions, and errors that name
   the file and line, against hand-computed values.
2. data/models/l5pc_hay.model parses; every expression equals its Python
   reading (^ -> **) at distances 0..1400 um (the two evaluators are
   independent: a recursive-descent parser and Python's eval); the Ca hot zone
   and the Ih gradient have the values README.md states.
3. tests/data/neuron_l5/l5pc_hay.csv and l5pc_hay_dend.csv belong to the
   model and parameter files as they are (sha256 in their headers), are
   complete (1 s every 0.1 ms, under 1 MB), their headers' spike times agree
   with the soma column (crossings of -20 mV recomputed from the 0.1 ms
   samples, within 0.1 ms) and number 5-15; the hot-zone pulse of the second
   evokes a dendritic calcium spike that the first lacks.
4. tests/data/neuron_l5/l5pc_hay_segments.csv (NEURON's cm, g_pas and the
   distance-dependent conductances of every segment after the model file)
   agrees with the statements in force for each segment's region evaluated
   here in Python at the segment's d; areas sum to the traces' header area;
   a conductance is absent exactly where its mechanism is not inserted.

Usage: test_neuron_l5_reference.py PROJECT_ROOT
"""
import hashlib
import math
import os
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "validation"))
import neuron_model_compare as nmc  # noqa: E402

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def value(text, d=0.0):
    return nmc.eval_expr(nmc.parse_expr(text), d)


def error_of(fn, *args):
    try:
        fn(*args)
    except nmc.ModelError as e:
        return str(e)
    return None


# 1. grammar
CASES = [("1 + 2 * 3", 0, 7.0), ("(1 + 2) * 3", 0, 9.0), ("2 ^ 3 ^ 2", 0, 512.0), ("-2 ^ 2", 0, -4.0),
         ("2 ^ -1", 0, 0.5), ("10 - 4 - 3", 0, 3.0), ("8 / 4 / 2", 0, 1.0), ("d * 2", 21.5, 43.0),
         ("d > 685", 700, 1.0), ("d > 685", 685, 0.0), ("d >= 685", 685, 1.0), ("d < 1 == 1", 0.5, 1.0),
         ("d != 3", 3, 0.0), ("d > 1 && d < 2", 1.5, 1.0), ("d > 1 && d < 2", 2.5, 0.0),
         ("d < 1 || d > 2", 1.5, 0.0), ("d < 1 || d > 2 && d < 3", 0.5, 1.0), ("!(d > 1)", 0, 1.0),
         ("!d", 0, 1.0), ("1 + 2 > 2", 0, 1.0), ("exp(0) + log(1) + sqrt(16) + fabs(-2)", 0, 7.0),
         ("pow(2, 10) - max(3, 4) + min(3, 4)", 0, 1023.0), ("1e-3 * 2.5E2", 0, 0.25), (".5 + 1.", 0, 1.5),
         ("0.0002 * (-0.8696 + 2.087 * exp(3.6161 * d / 1258.158))", 0.0, 0.0002 * (2.087 - 0.8696))]
for text, d, want in CASES:
    got = value(text, d)
    check(got == want, f"{text} at d = {d}: {got}, want {want}")
for bad in ("1 +", "(1", "1 2", "foo(1)", "x + 1", "exp(1, 2)", "1 $ 2", "pow(1)", ""):
    check(error_of(nmc.parse_expr, bad) is not None, f"'{bad}' must be refused")

with tempfile.TemporaryDirectory() as tmp:
    def model_error(text):
        path = os.path.join(tmp, "m.model")
        with open(path, "w") as f:
            f.write(text)
        return error_of(nmc.read_model, path)
    e = model_error("# comment\n\nsoma.insert = pas\nsoma.g_pas = 1 +\n")
    check(e is not None and "m.model:4" in e, f"the error names the line: {e}")
    e = model_error("soma.insert = pas\ntrunk.g_pas = 1\n")
    check(e is not None and "m.model:2" in e and "trunk" in e, f"unknown region: {e}")
    e = model_error("global.usetable_hh = d\n")
    check(e is not None and "global.usetable_hh" in e, f"global needs a number: {e}")
    check(model_error("soma g_pas 1\n") is not None, "a line without = is refused")
    check(model_error("dend.insert = pas Ih  # two\nall.e_pas = -90\nglobal.x_y = 1\n") is None,
          "a valid file reads")
    st = nmc.read_model(os.path.join(tmp, "m.model"))
    check([s["kind"] for s in st] == ["insert", "param", "global"], "statement kinds in order")
    check(st[0]["regions"] == ("basal", "apical") and st[0]["mechs"] == ["pas", "Ih"], "dend = basal + apical")
    check(st[1]["regions"] == nmc.REGIONS, "all = every region")
    path = os.path.join(tmp, "p.params")
    with open(path, "w") as f:
        f.write("all.hh = 0\ndend.cm = 2\nRa = 100\n")
    p = nmc.read_params(path)
    check(p["cm"] == {"soma": 1, "axon": 1, "basal": 2, "apical": 2, "other": 1} and p["Ra"] == 100
          and not any(p["hh"].values()), f"parameter file: {p}")
    with open(path, "w") as f:
        f.write("celsius = 34\nsoma.g_pas = 1\n")
    e = error_of(nmc.read_params, path)
    check(e is not None and "p.params:2" in e, f"membrane keys belong in the model file: {e}")

# 2. the model file
MODEL = os.path.join(ROOT, "data/models/l5pc_hay.model")
PARAMS = os.path.join(ROOT, "data/models/l5pc_hay.params")
statements = nmc.read_model(MODEL)
params = nmc.read_params(PARAMS)
check(params["celsius"] == 34 and params["v_init"] == -80 and params["dt"] == 0.025 and params["Ra"] == 100
      and params["tstop"] == 1000 and params["cm"]["apical"] == 2 and params["cm"]["basal"] == 2
      and params["cm"]["soma"] == 1 and not any(params["hh"].values()), f"l5pc_hay.params: {params}")
leak = nmc.passive_statements(statements)
check([(s["kind"], s.get("region"), s.get("name")) for s in leak] ==
      [("insert", "all", None), ("param", "all", "e_pas"), ("param", "soma", "g_pas"), ("param", "apical", "g_pas"),
       ("param", "basal", "g_pas"), ("param", "axon", "g_pas")], f"the model's leak statements: {leak}")
check(nmc.uses_d(ih_tree := nmc.parse_expr("1 + max(2, exp(d))")) and not nmc.uses_d(nmc.parse_expr("exp(2) * -3")),
      f"uses_d {ih_tree}")
mechs = set()
for s in statements:
    if s["kind"] == "insert":
        mechs.update(s["mechs"])
    if s["kind"] == "param":
        for d in [0.0, 0.5, 13.0, 100.0, 684.9, 685.0, 685.1, 800.0, 884.9, 885.0, 885.1, 1258.158, 1400.0]:
            a, b = nmc.eval_expr(s["tree"], d), nmc.eval_python(s["text"], d)
            check(a == b or abs(a - b) <= 1e-15 * abs(b), f"{s['line']}: {a} != {b} at d = {d}")
BBP = {f[:-4] for f in os.listdir(os.path.join(ROOT, "data/mechanisms/bbp")) if f.endswith(".mod")}
check(mechs <= BBP | {"pas"}, f"mechanisms outside the BBP set and pas: {mechs - BBP - {'pas'}}")
check(len(mechs) == 12, f"11 BBP mechanisms and pas are inserted, got {sorted(mechs)}")


def apical(name):
    return [s for s in statements if s["kind"] == "param" and s["name"] == name and "apical" in s["regions"]][-1]


lva, hva, ih = apical("gCa_LVAstbar_Ca_LVAst"), apical("gCa_HVAbar_Ca_HVA"), apical("gIhbar_Ih")
for d, want_lva, want_hva in ((600, 0.000187, 0.0000555), (685, 0.000187, 0.0000555), (700, 0.0187, 0.000555),
                              (884, 0.0187, 0.000555), (885, 0.000187, 0.0000555)):
    check(math.isclose(nmc.eval_expr(lva["tree"], d), want_lva, rel_tol=1e-12), f"LVA at {d}")
    check(math.isclose(nmc.eval_expr(hva["tree"], d), want_hva, rel_tol=1e-12), f"HVA at {d}")
check(math.isclose(nmc.eval_expr(ih["tree"], 1258.158), 0.0002 * (-0.8696 + 2.087 * math.exp(3.6161)),
                   rel_tol=1e-12), "Ih at the longest apical path: Hay's value at normalised distance 1")

# 3. the references: the step protocol and the step plus a hot-zone pulse
def read_reference(path):
    head, rows, columns = {}, [], None
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                if " = " in line:
                    k, v = line[1:].split(" = ", 1)
                    head[k.strip()] = v.strip()
            elif line.startswith("t,"):
                columns = line.strip().split(",")
            else:
                rows.append([float(x) for x in line.split(",")])
    return head, rows, columns


def check_reference(name, iclamp):
    path = os.path.join(ROOT, "tests/data/neuron_l5", name + ".csv")
    check(os.path.getsize(path) < 1 << 20, f"{path} is under 1 MB")
    head, rows, columns = read_reference(path)
    for key, src in (("model_sha256", MODEL), ("params_sha256", PARAMS)):
        with open(src, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        check(head.get(key) == digest, f"{path} was written for another {os.path.basename(src)} "
              "(re-run the commands in tests/data/neuron_l5/README.md)")
    check(head.get("iclamp") == iclamp, f"{name}: clamps {head.get('iclamp')}, want {iclamp}")
    sites = head["sites"].split()
    check(columns == ["t"] + [f"v_{s.replace(':', '_')}" for s in sites] + [f"cai_{sites[0].split(':')[0]}_0.5"],
          f"columns {columns} follow the sites {sites}")
    labels = [x.split(":")[0] for x in head["site_names"].split()]
    check(labels == ["soma", "apical", "hotzone", "basal", "axon"] and sites[0] == "1:0.5",
          f"sites {labels} {sites}")
    dists = [float(x.split("d=")[1]) for x in head["site_names"].split()]
    check(400 <= dists[1] <= 600 and 685 < dists[2] < 885, f"apical and hot-zone sites at {dists[1:3]} um")
    check(len(rows) == 10001 and all(len(r) == len(columns) for r in rows), f"{len(rows)} rows")
    check(all(abs(r[0] - 0.1 * i) < 1e-9 for i, r in enumerate(rows)), "t every 0.1 ms from 0 to 1000")
    spikes = [float(x) for x in head["spikes"].split()]
    check(5 <= len(spikes) <= 15, f"{len(spikes)} spikes")
    t = [r[0] for r in rows]
    coarse = nmc.crossings(t, [r[1] for r in rows], -20.0)
    check(len(coarse) == len(spikes) and all(abs(a - b) < 0.1 for a, b in zip(coarse, spikes)),
          f"header spikes {spikes} against the soma column's crossings {coarse}")
    check(all(100.0 < s < 800.0 for s in spikes), "every spike while the clamp is on")
    check(all(r[-1] > 0 for r in rows) and max(r[-1] for r in rows) > 2 * rows[0][-1], "cai rises")
    return head, rows, spikes


head, rows, spikes = check_reference("l5pc_hay", "soma:100:700:1.8")
hot_site = head["sites"].split()[2]
dhead, drows, dspikes = check_reference("l5pc_hay_dend", f"soma:100:700:1.8 swc={hot_site}:400:10:0.8")
# the pulse's calcium spike: the hot zone stays above -20 mV for over 5 ms after the pulse ends,
# and the soma's firing differs from the step protocol's only from the pulse on
after = [r[3] for r in drows if 410.0 <= r[0] <= 430.0]
check(sum(v > -20.0 for v in after) * 0.1 > 5.0, "a regenerative hot-zone depolarisation after the pulse")
check(max(r[3] for r in rows if 400.0 <= r[0] <= 430.0) < -40.0, "no such depolarisation without the pulse")
check([x for x in dspikes if x < 400.0] == [x for x in spikes if x < 400.0] and dspikes != spikes,
      f"spikes {dspikes} against {spikes}")

# 4. the per-segment values: NEURON's, after the model file, against the file's
# statements read here (the last one in force per region and name) through Python
SEG = os.path.join(ROOT, "tests/data/neuron_l5/l5pc_hay_segments.csv")
seg_head, seg_rows = {}, []
with open(SEG) as f:
    for line in f:
        if line.startswith("#"):
            if " = " in line:
                k, v = line[1:].split(" = ", 1)
                seg_head[k.strip()] = v.strip()
        elif line.startswith("first_point_id,"):
            seg_cols = line.strip().split(",")
        else:
            seg_rows.append(line.rstrip("\n").split(","))
check(seg_head.get("model_sha256") == head.get("model_sha256"), "segments and traces from the same model file")
check(len(seg_rows) == int(head["nseg"]), f"{len(seg_rows)} segment rows, nseg {head['nseg']}")
area = sum(float(r[5]) for r in seg_rows)
check(math.isclose(area, float(head["area"]), rel_tol=1e-9), f"segment areas sum to {area}, header {head['area']}")


def in_force(region, name):
    text = None
    for s in statements:
        if s["kind"] == "param" and s["name"] == name and region in s["regions"]:
            text = s["text"]
    return text


def inserted(region, mech):
    return any(s["kind"] == "insert" and region in s["regions"] and mech in s["mechs"] for s in statements)


checked = 0
for r in seg_rows:
    region, d = r[1], float(r[4])
    check(float(r[6]) == params["cm"][region], f"cm {r[6]} in {region}")
    for name, cell in zip(seg_cols[7:], r[7:]):
        mech = name.split("_", 1)[1]
        if cell == "":
            check(not inserted(region, mech), f"{name} missing in a {region} segment where {mech} is inserted")
            continue
        text = in_force(region, name)
        check(text is not None, f"{name} in {region} is set by no statement")
        if text is not None:
            want = nmc.eval_python(text, d)
            check(float(cell) == want or abs(float(cell) - want) <= 1e-15 * abs(want),
                  f"{name} = {cell} at d = {d} in {region}, the file says {want}")
            checked += 1
soma_rows = [r for r in seg_rows if r[1] == "soma"]
check(len(soma_rows) == 1 and float(soma_rows[0][4]) == 0.0, "one soma segment at d = 0")
hot = [r for r in seg_rows if r[1] == "apical" and 685 < float(r[4]) < 885]
check(len(hot) > 10 and all(float(r[9]) == 0.0187 for r in hot), f"{len(hot)} hot-zone segments at 0.0187")

print("neuron_l5 reference:", "FAIL" if failures else "ok",
      f"({len(CASES)} expressions, {len(statements)} statements, {len(spikes)} spikes, "
      f"{checked} per-segment values)")
sys.exit(1 if failures else 0)
