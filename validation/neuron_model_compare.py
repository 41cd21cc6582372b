#!/usr/bin/env python3
"""A multi-mechanism cell model in NEURON (and in neurosolve) and the comparison.

Reads a neurosolve parameter file (docs/simulation.md) and a model file
(data/models/README.md: `REGION.insert = MECH...`, `REGION.NAME = EXPR`,
`global.NAME = NUMBER`), builds the cell in NEURON 9 and runs the protocol:

* the SWC file through Import3d; regions by the SWC type of each section
  (1 soma, 2 axon, 3 basal, 4 apical, other types `other`);
* nseg per section by NEURON's d_lambda rule (0.1 at 100 Hz) with the
  parameter file's Ra and cm = 1, NEURON's lambda_f taken before the
  regions' cm are set (neurosolve: `simulate --cm 1`, which overrides the
  regions' cm in its d_lambda rule);
* the parameter file's per-region cm and hh switches (hh on everywhere
  unless switched off, as in neurosolve), celsius, v_init, dt, tstop;
* the model file's statements in file order, per section (insert) and per
  segment (parameters: EXPR evaluated with d = h.distance(soma(0.5), seg));
  the BBP mechanisms (data/mechanisms/bbp) compiled by nrnivmodl as
  validation/nmodl_neuron_traces.py compiles them; pas is NEURON's own;
  F_CaDynamics_E2 set to the .mod file's value (nocmodl writes 6 digits);
* IClamps (`--iclamp LOC:DEL:DUR:AMP`, repeatable, `simulate --iclamp`
  syntax with LOC soma or swc=ID:X; default soma:100:700:1.8), fixed step,
  secondorder 0, h.finitialize(v_init) and fadvance to tstop.

Recorded: v at soma(0.5), at the middle of an apical section 400-600 um from
the soma (the thickest there: the trunk), of an apical section in the Ca hot
zone 685-885 um (the thickest), of the basal section nearest to 150 um and of
the axon section nearest to 300 um, and cai at soma(0.5). Sites
are named by the SWC id of the section's first own point and x (neurosolve's
ns_section_info.first_point_id and ns_cell_locate). Spikes: upward crossings
of -20 mV at soma(0.5), linearly interpolated (neurosolve's rule).

  --refs DIR         write DIR/NAME.csv, the traces, and DIR/MODEL_segments.csv,
                     every segment's d, area, cm and distance-dependent parameters
                     (layout: tests/data/neuron_l5/README.md)
  --neurosolve BIN   run `BIN simulate SWC --params P --mechanisms LIB --model M
                     --iclamp LOC:DEL:DUR:AMP ... --record swc=ID:X ...` and compare
                     (spike count, largest spike-time difference, RMS per site)
  --mechanisms LIB   the library for --neurosolve (default: `BIN mechanisms build` on a
                     folder of data/mechanisms/bbp/*.mod and data/mechanisms/neuron/passive.mod)
  --check            print the sanity checks (rest, BAP, calcium, per-segment
                     parameters against an independent evaluation of the file)
  --passive          with --neurosolve: the model's leak alone (pas, constant g_pas and
                     e_pas per region) in NEURON and in today's `simulate` with its
                     built-in pas (--set REGION.pas=1 ...): checks the discretisation,
                     per-region cm, Ra, sites and this comparison without mechanisms

Usage: python3 validation/neuron_model_compare.py [--swc F] [--params P]
       [--model M] [--iclamp LOC:DEL:DUR:AMP ...] [--name NAME] [--refs DIR]
       [--neurosolve BIN [--passive]] [--check]
  --name NAME        the reference's file name (default: the model file's stem)
NEURON runs in a child process (Import3d's section names are global).
"""
import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SWC = os.path.join(ROOT, "data/morphologies/l5pc_bbp_axon.swc")
PARAMS = os.path.join(ROOT, "data/models/l5pc_hay.params")
MODEL = os.path.join(ROOT, "data/models/l5pc_hay.model")
ICLAMP = "soma:100:700:1.8"
# 1.8 nA: 12 soma spikes in 700 ms, regular (81-94 ms apart) after an onset
# burst; 0.9 nA gave 5 irregular ones, 1.3 nA 8.


def MOD_FILES():
    """The mechanism library of the model: data/mechanisms/bbp and NEURON's pas."""
    bbp = os.path.join(ROOT, "data/mechanisms/bbp")
    return sorted(os.path.join(bbp, f) for f in os.listdir(bbp) if f.endswith(".mod")) + \
        [os.path.join(ROOT, "data/mechanisms/neuron/passive.mod")]


THRESHOLD = -20.0
REF_DT = 0.1  # [ms] sample interval of the reference file
F_FILE = 96485.3321233100184  # CaDynamics_E2.mod's F (nocmodl's default keeps 6 digits)

REGIONS = ("soma", "axon", "basal", "apical", "other")
GROUPS = {"soma": ("soma",), "axon": ("axon",), "basal": ("basal",), "apical": ("apical",),
          "other": ("other",), "dend": ("basal", "apical"), "all": REGIONS}
IONS = {"ena": "na", "nai": "na", "nao": "na", "ek": "k", "ki": "k", "ko": "k",
        "eca": "ca", "cai": "ca", "cao": "ca"}


class ModelError(Exception):
    pass


# ---------------------------------------------------------------- expressions

_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_]\w*)"
                    r"|(?P<op>&&|\|\||<=|>=|==|!=|[-+*/^()<>!,]))")
FUNCS = {"exp": (1, math.exp), "log": (1, math.log), "sqrt": (1, math.sqrt), "fabs": (1, math.fabs),
         "pow": (2, math.pow), "min": (2, min), "max": (2, max)}


def parse_expr(text):
    """Parse EXPR into a tree: numbers, d, + - * / ^, unary - and !, comparisons
    (1 or 0), && ||, parentheses, exp log sqrt fabs pow min max. Raises ModelError."""
    toks, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ModelError(f"unexpected character '{text[pos:].strip()[:1]}' at column {pos + 1}")
        pos = m.end()
        kind = m.lastgroup
        toks.append((kind, m.group(kind)))
    toks.append(("end", ""))
    k = [0]

    def peek():
        return toks[k[0]]

    def take(op=None):
        t = toks[k[0]]
        if op is not None and t[1] != op:
            raise ModelError(f"expected '{op}', found '{t[1] or 'end of expression'}'")
        k[0] += 1
        return t

    def binary(sub, ops):
        def f():
            node = sub()
            while peek()[0] == "op" and peek()[1] in ops:
                op = take()[1]
                node = (op, node, sub())
            return node
        return f

    def unary():
        if peek() == ("op", "-"):
            take()
            return ("neg", unary())
        if peek() == ("op", "!"):
            take()
            return ("not", unary())
        if peek() == ("op", "+"):
            take()
            return unary()
        return power()

    def power():  # right associative, binds tighter than unary minus: -2^2 = -4
        base = primary()
        if peek() == ("op", "^"):
            take()
            return ("^", base, unary())
        return base

    def primary():
        kind, val = take()
        if kind == "num":
            return ("num", float(val))
        if kind == "name":
            if val == "d":
                return ("d",)
            if val not in FUNCS:
                raise ModelError(f"unknown name '{val}' (only d and {', '.join(FUNCS)})")
            take("(")
            args = [orx()]
            while peek() == ("op", ","):
                take()
                args.append(orx())
            take(")")
            if len(args) != FUNCS[val][0]:
                raise ModelError(f"{val} takes {FUNCS[val][0]} argument(s), got {len(args)}")
            return ("call", val, args)
        if (kind, val) == ("op", "("):
            node = orx()
            take(")")
            return node
        raise ModelError(f"unexpected '{val or 'end of expression'}'")

    mul = binary(unary, ("*", "/"))
    add = binary(mul, ("+", "-"))
    rel = binary(add, ("<", "<=", ">", ">="))
    eq = binary(rel, ("==", "!="))
    andx = binary(eq, ("&&",))
    orx = binary(andx, ("||",))
    tree = orx()
    if peek()[0] != "end":
        raise ModelError(f"unexpected '{peek()[1]}' after the expression")
    return tree


def eval_expr(node, d):
    t = node[0]
    if t == "num":
        return node[1]
    if t == "d":
        return d
    if t == "neg":
        return -eval_expr(node[1], d)
    if t == "not":
        return 0.0 if eval_expr(node[1], d) != 0.0 else 1.0
    if t == "call":
        return float(FUNCS[node[1]][1](*[eval_expr(a, d) for a in node[2]]))
    a, b = eval_expr(node[1], d), eval_expr(node[2], d)
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
            "^": lambda: math.pow(a, b), "<": lambda: float(a < b), "<=": lambda: float(a <= b),
            ">": lambda: float(a > b), ">=": lambda: float(a >= b), "==": lambda: float(a == b),
            "!=": lambda: float(a != b), "&&": lambda: float(a != 0.0 and b != 0.0),
            "||": lambda: float(a != 0.0 or b != 0.0)}[t]()


def eval_python(text, d):
    """The independent evaluation: the expression as Python with ^ -> ** (the
    model file is written so that this is valid)."""
    return float(eval(text.replace("^", "**"), {"__builtins__": {}, "exp": math.exp, "log": math.log,
                                                 "sqrt": math.sqrt, "fabs": math.fabs, "pow": math.pow,
                                                 "min": min, "max": max}, {"d": d}))


# ---------------------------------------------------------------- files

def _lines(path):
    with open(path) as f:
        for no, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if line:
                yield no, line


def read_model(path):
    """Statements in file order: dicts with line, kind (insert | param | global),
    regions, name, mechs / expr text / tree / value. Raises ModelError naming
    file and line."""
    out = []
    for no, line in _lines(path):
        where = f"{path}:{no}"
        if "=" not in line:
            raise ModelError(f"{where}: expected `REGION.NAME = VALUE`, got '{line}'")
        key, val = (s.strip() for s in line.split("=", 1))
        if "." not in key:
            raise ModelError(f"{where}: '{key}' is not REGION.NAME")
        region, name = key.split(".", 1)
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ModelError(f"{where}: '{name}' is not a name")
        if not val:
            raise ModelError(f"{where}: no value for {key}")
        if region == "global":
            try:
                value = float(val)
            except ValueError:
                raise ModelError(f"{where}: global.{name} needs a number, got '{val}'")
            out.append({"line": where, "kind": "global", "name": name, "value": value})
            continue
        if region not in GROUPS:
            raise ModelError(f"{where}: unknown region '{region}' (soma, axon, basal, apical, other, dend, all, global)")
        if name == "insert":
            mechs = val.split()
            bad = [m for m in mechs if not re.fullmatch(r"[A-Za-z_]\w*", m)]
            if bad:
                raise ModelError(f"{where}: '{bad[0]}' is not a mechanism name")
            out.append({"line": where, "kind": "insert", "region": region, "regions": GROUPS[region],
                        "mechs": mechs})
            continue
        try:
            tree = parse_expr(val)
        except ModelError as e:
            raise ModelError(f"{where}: {key} = {val}: {e}")
        out.append({"line": where, "kind": "param", "region": region, "regions": GROUPS[region], "name": name,
                    "text": val, "tree": tree})
    return out


def read_params(path):
    """The parameter-file keys this comparison needs (neurosolve's defaults
    otherwise). Keys of the built-in membrane other than REGION.cm and
    REGION.hh are refused: the model file carries the membrane."""
    p = {"celsius": 6.3, "v_init": -65.0, "dt": 0.025, "tstop": 100.0, "Ra": 35.4,
         "spike_threshold": THRESHOLD, "usetable_hh": 1.0,
         "cm": {r: 1.0 for r in REGIONS}, "hh": {r: 1.0 for r in REGIONS}}
    for no, line in _lines(path):
        where = f"{path}:{no}"
        if "=" not in line:
            raise ModelError(f"{where}: expected `key = value`, got '{line}'")
        key, val = (s.strip() for s in line.split("=", 1))
        try:
            value = float(val)
        except ValueError:
            raise ModelError(f"{where}: {key} needs a number, got '{val}'")
        if "." in key:
            region, name = key.split(".", 1)
            if region not in GROUPS or name not in ("cm", "hh"):
                raise ModelError(f"{where}: '{key}': this comparison takes REGION.cm and REGION.hh only "
                                 "(membrane parameters belong in the model file)")
            for r in GROUPS[region]:
                p[name][r] = value
        elif key in ("celsius", "v_init", "dt", "tstop", "Ra", "spike_threshold", "usetable_hh"):
            p[key] = value
        else:
            raise ModelError(f"{where}: unknown key '{key}'")
    return p


def uses_d(tree):
    return tree[0] == "d" or any(isinstance(c, tuple) and uses_d(c) for c in tree[1:]) or \
        (tree[0] == "call" and any(uses_d(c) for c in tree[2]))


def passive_statements(statements):
    """The model's leak alone: `pas` inserts and constant g_pas / e_pas, in
    order (what neurosolve's built-in pas can run today: --passive)."""
    out = []
    for st in statements:
        if st["kind"] == "insert" and "pas" in st["mechs"]:
            out.append(dict(st, mechs=["pas"]))
        elif st["kind"] == "param" and st["name"] in ("g_pas", "e_pas"):
            if uses_d(st["tree"]):
                raise ModelError(f"{st['line']}: --passive needs constant {st['name']} (neurosolve's "
                                 "built-in pas is per region)")
            out.append(st)
    return out


def parse_iclamp(spec):
    """`LOC:DEL:DUR:AMP` as `simulate --iclamp` takes it, LOC = soma or
    swc=ID:X. Returns (first_point_id or None for soma, x, del, dur, amp)."""
    parts = spec.rsplit(":", 3)
    try:
        if len(parts) != 4:
            raise ValueError
        dl, du, am = (float(v) for v in parts[1:])
        if parts[0] == "soma":
            return None, 0.5, dl, du, am
        m = re.fullmatch(r"swc=(\d+):([0-9.]+)", parts[0])
        if not m or not 0.0 <= float(m.group(2)) <= 1.0:
            raise ValueError
        return int(m.group(1)), float(m.group(2)), dl, du, am
    except ValueError:
        raise ModelError(f"--iclamp LOC:DEL:DUR:AMP (LOC soma or swc=ID:X), got '{spec}'")


def crossings(t, v, thr):
    out = []
    for k in range(1, len(v)):
        if v[k - 1] < thr <= v[k]:
            out.append(t[k - 1] + (t[k] - t[k - 1]) * (thr - v[k - 1]) / (v[k] - v[k - 1]))
    return out


# ---------------------------------------------------------------- NEURON

def region_of(swc_type):
    return {1: "soma", 2: "axon", 3: "basal", 4: "apical"}.get(swc_type, "other")


def build_cell(h, swc):
    """Import3d; returns [(first_point_id, region, section)] in Import3d's order."""
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(swc)
    gui = h.Import3d_GUI(reader, 0)
    gui.instantiate(None)
    byname = {sec.name(): sec for sec in h.allsec()}
    secs = []
    for i in range(int(reader.sections.count())):
        isec = reader.sections.object(i)
        if isec.is_subsidiary:
            continue
        ref = h.ref("")
        gui.name(isec, ref)
        nm = ref[0] if "[" in ref[0] else ref[0] + "[0]"
        if nm not in byname:
            continue  # removed by chk_valid
        secs.append((int(reader.id.x[int(isec.id)]), region_of(int(isec.type)), byname[nm]))
    return secs, (gui, reader)


def apply_model(h, secs, statements, soma):
    """The statements in file order. Returns {(section name, x): {name: value}}
    of the parameter values set (for the cross-check)."""
    for st in statements:
        if st["kind"] == "global":
            try:
                setattr(h, st["name"], st["value"])
            except (LookupError, AttributeError, RuntimeError):
                raise ModelError(f"{st['line']}: NEURON has no global '{st['name']}'")
            continue
        for _, region, sec in secs:
            if region not in st["regions"]:
                continue
            if st["kind"] == "insert":
                for m in st["mechs"]:
                    try:
                        sec.insert(m)
                    except ValueError:
                        raise ModelError(f"{st['line']}: NEURON has no mechanism '{m}'")
                continue
            name = st["name"]
            if name in IONS and not h.ismembrane(IONS[name] + "_ion", sec=sec):
                raise ModelError(f"{st['line']}: {name} in region {region}, where no inserted mechanism "
                                 f"uses {IONS[name]} (section {sec.name()})")
            for seg in sec:
                val = eval_expr(st["tree"], h.distance(soma(0.5), seg))
                try:
                    setattr(seg, name, val)
                except (AttributeError, NameError, LookupError):
                    raise ModelError(f"{st['line']}: '{name}' is not a parameter of a mechanism inserted "
                                     f"in region {region} (section {sec.name()})")


def pick_sites(h, secs, soma):
    """(label, first_point_id, x, section) for soma, apical, hotzone, basal and axon."""
    def dist(sec):
        return h.distance(soma(0.5), sec(0.5))
    sites = [("soma", secs[0][0], 0.5, secs[0][2])]
    apical = [s for s in secs if s[1] == "apical" and 400.0 <= dist(s[2]) <= 600.0]
    if apical:  # the trunk: the thickest; ties by distance to 500 um
        s = max(apical, key=lambda s: (round(s[2](0.5).diam, 6), -abs(dist(s[2]) - 500.0)))
        sites.append(("apical", s[0], 0.5, s[2]))
    hot = [s for s in secs if s[1] == "apical" and 685.0 < dist(s[2]) < 885.0]
    if hot:  # the Ca hot zone of the model file: the thickest; ties by distance to 785 um
        s = max(hot, key=lambda s: (round(s[2](0.5).diam, 6), -abs(dist(s[2]) - 785.0)))
        sites.append(("hotzone", s[0], 0.5, s[2]))
    for label, region, target in (("basal", "basal", 150.0), ("axon", "axon", 300.0)):
        cand = [s for s in secs if s[1] == region]
        if cand:
            s = min(cand, key=lambda s: abs(dist(s[2]) - target))
            sites.append((label, s[0], 0.5, s[2]))
    return sites


def run_neuron(a, mechdir):
    """The whole NEURON side (in the child process). Returns a dict."""
    import neuron
    from neuron import h
    neuron.load_mechanisms(mechdir)
    params = read_params(a.params)
    statements = read_model(a.model)
    if a.passive:
        statements = passive_statements(statements)
    secs, keep = build_cell(h, a.swc)
    soma = secs[0][2]
    nseg = 0
    for _, region, sec in secs:
        sec.Ra = params["Ra"]
        sec.cm = 1.0  # neurosolve's discretisation cm (--cm, default 1)
        try:  # NEURON's d_lambda rule; lambda_f divides by zero on zero-length sections
            sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
        except RuntimeError:
            sec.nseg = 1
        nseg += sec.nseg
        sec.cm = params["cm"][region]
        if params["hh"][region]:
            sec.insert("hh")
    if any(params["hh"].values()):
        h.usetable_hh = int(params["usetable_hh"])
    h.F_CaDynamics_E2 = F_FILE
    apply_model(h, secs, statements, soma)
    h.celsius = params["celsius"]
    h.dt = params["dt"]
    h.secondorder = 0
    stims = []
    for spec in a.iclamp:
        k, x, dl, du, am = parse_iclamp(spec)
        hit = [sec for key, _, sec in secs if key == k] if k is not None else [soma]
        if not hit:
            raise ModelError(f"--iclamp {spec}: no section starts at SWC id {k}")
        stim = h.IClamp(hit[0](x))
        stim.delay, stim.dur, stim.amp = dl, du, am
        stims.append(stim)
    sites = pick_sites(h, secs, soma)
    tv = h.Vector().record(h._ref_t)
    vecs = [h.Vector().record(s(x)._ref_v) for _, _, x, s in sites]
    has_ca = h.ismembrane("ca_ion", sec=soma)
    cav = h.Vector().record(soma(0.5)._ref_cai) if has_ca else None
    h.finitialize(params["v_init"])
    steps = int(round(params["tstop"] / params["dt"]))
    t0 = time.perf_counter()
    for _ in range(steps):
        h.fadvance()
    wall = time.perf_counter() - t0
    t = list(tv)
    traces = [list(v) for v in vecs]
    cai = list(cav) if has_ca else None
    area = sum(seg.area() for _, _, sec in secs for seg in sec)
    out = {"swc": os.path.basename(a.swc), "model": os.path.basename(a.model),
           "params_file": os.path.basename(a.params), "params": params, "iclamp": a.iclamp,
           "nseg": nseg, "sections": len(secs), "area": area, "wall_s": wall, "steps": steps,
           "sites": [[lab, k, x, h.distance(soma(0.5), s(x)), s.name()] for lab, k, x, s in sites],
           "t": t, "traces": traces, "cai": cai, "spikes": crossings(t, traces[0], params["spike_threshold"]),
           "neuron": h.nrnversion(5)}
    out["segments"] = segment_table(h, secs, soma)
    if a.check:
        out["check"] = sanity(h, secs, statements, soma, sites, t, traces, cai)
    return out


SEGMENT_PARAMS = ("g_pas", "gIhbar_Ih", "gCa_LVAstbar_Ca_LVAst", "gCa_HVAbar_Ca_HVA")


def segment_table(h, secs, soma):
    """Per segment, in Import3d's section order: the section's first SWC id,
    region, nseg, x, d, area, cm and the values of SEGMENT_PARAMS (None where
    the mechanism is absent) as NEURON holds them after the model file."""
    rows = []
    for k, region, sec in secs:
        for seg in sec:
            vals = []
            for nm in SEGMENT_PARAMS:
                try:
                    vals.append(getattr(seg, nm))
                except (AttributeError, NameError):
                    vals.append(None)
            rows.append([k, region, sec.nseg, seg.x, h.distance(soma(0.5), seg), seg.area(), seg.cm] + vals)
    return rows


def sanity(h, secs, statements, soma, sites, t, traces, cai):
    """Numbers for --check (model sane; parameters independently evaluated)."""
    lines = []
    dt = t[1] - t[0]
    before = int(round(99.0 / dt))
    for (lab, k, x, s), tr in zip(sites, traces):
        lines.append(f"{lab:7s} swc={k}:{x} ({s.name()}, d = {h.distance(soma(0.5), s(x)):.1f} um): "
                     f"v(99 ms) = {tr[before]:.3f} mV, max v = {max(tr):.2f} mV, min v = {min(tr):.2f} mV")
    if cai is None:
        lines.append("no calcium at the soma")
    else:
        lines.append(f"cai at soma: {cai[0]:.3e} mM at t = 0, {cai[before]:.3e} at 99 ms, max {max(cai):.3e} "
                     f"(t = {t[cai.index(max(cai))]:.2f} ms), {cai[-1]:.3e} at the end")
    # backpropagation: peak time at each site after the first somatic spike
    sp = crossings(t, traces[0], THRESHOLD)
    if sp:
        i0 = int(sp[0] / dt)
        w = int(10.0 / dt)
        for (lab, k, x, s), tr in zip(sites, traces):
            seg = tr[i0 - int(2.0 / dt): i0 + w]
            j = max(range(len(seg)), key=seg.__getitem__)
            lines.append(f"first spike ({sp[0]:.3f} ms) seen at {lab}: peak {seg[j]:.2f} mV at "
                         f"{t[i0 - int(2.0 / dt) + j]:.3f} ms (rise {seg[j] - tr[before]:.1f} mV over rest)")
    if h.ismembrane("ca_ion", sec=soma):  # NEURON's value after finitialize: the run's last
        lines.append(f"ions at soma(0.5) at the end: eca {soma(0.5).eca:.6f} mV (Nernst from cai "
                     f"{soma(0.5).cai:.6e}, cao {soma(0.5).cao:g} mM), ek {soma(0.5).ek:g}, ena {soma(0.5).ena:g}")
    lmax = max(h.distance(soma(0.5), sec(1)) for _, r, sec in secs if r == "apical")
    lines.append(f"longest apical path from soma(0.5): {lmax:.3f} um")
    # per-segment parameters: NEURON's value against the file's expression in Python
    names = {"gIhbar_Ih", "gCa_LVAstbar_Ca_LVAst", "gCa_HVAbar_Ca_HVA"}
    last = {}
    for st in statements:  # the last statement setting each name in apical (the one in force)
        if st["kind"] == "param" and st["name"] in names and "apical" in st["regions"]:
            last[st["name"]] = st["text"]
    worst = 0.0
    apical = [sec for _, r, sec in secs if r == "apical"]
    picks = sorted({int(q * (len(apical) - 1)) for q in (0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0)})
    lines.append("per-segment check (NEURON value | Python eval of the model file's expression):")
    for i in picks:
        sec = apical[i]
        for seg in sec:
            d = h.distance(soma(0.5), seg)
            row = [f"  {sec.name()}({seg.x:.4f}) d = {d:8.2f}"]
            for nm in sorted(last):
                nv = getattr(seg, nm)
                pv = eval_python(last[nm], d)
                worst = max(worst, abs(nv - pv) / max(abs(pv), 1e-300))
                row.append(f"{nm} {nv:.6e} | {pv:.6e}")
            lines.append("  ".join(row))
    # every segment of the cell, all three names, silently
    for _, r, sec in secs:
        if r != "apical":
            continue
        for seg in sec:
            d = h.distance(soma(0.5), seg)
            for nm in last:
                pv = eval_python(last[nm], d)
                worst = max(worst, abs(getattr(seg, nm) - pv) / max(abs(pv), 1e-300))
    nseg_apical = sum(sec.nseg for sec in apical)
    hot = sum(1 for sec in apical for seg in sec if 685 < h.distance(soma(0.5), seg) < 885)
    lines.append(f"largest relative difference over all {nseg_apical} apical segments: {worst:.1e} "
                 f"({hot} segments in the hot zone)")
    return {"lines": lines, "worst": worst}


def neuron_in_child(a):
    from nmodl_neuron_traces import compile_bbp
    with tempfile.TemporaryDirectory(prefix="l5_mech_") as work:
        compile_bbp(work)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", work, "--swc", a.swc, "--params", a.params,
               "--model", a.model] + [f"--iclamp={c}" for c in a.iclamp]
        if a.check:
            cmd.append("--check")
        if a.passive:
            cmd.append("--passive")
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 2:  # a ModelError: its one line
        raise RuntimeError(r.stderr.strip().splitlines()[-1])
    if r.returncode != 0:
        raise RuntimeError(f"NEURON failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the reference file

def write_ref(d, out_dir):
    name = d["name"]
    path = os.path.join(out_dir, name + ".csv")
    p = d["params"]
    every = int(round(REF_DT / p["dt"]))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"# NEURON {d['neuron']} reference traces (validation/neuron_model_compare.py)\n")
        f.write(f"# swc = {d['swc']}\n")
        f.write(f"# model = {d['model']}\n")
        f.write(f"# params = {d['params_file']}\n")
        f.write(f"# model_sha256 = {d['model_sha256']}\n")
        f.write(f"# params_sha256 = {d['params_sha256']}\n")
        f.write(f"# protocol: Import3d, d_lambda 0.1 at 100 Hz with Ra {p['Ra']:g} and cm 1, celsius "
                f"{p['celsius']:g}, v_init {p['v_init']:g}, dt {p['dt']:g}, tstop {p['tstop']:g}, secondorder 0, "
                f"F_CaDynamics_E2 {F_FILE!r}\n")
        f.write(f"# iclamp = {' '.join(d['iclamp'])}\n")
        f.write(f"# nseg = {d['nseg']}\n")
        f.write(f"# area = {d['area']:.6f}\n")
        f.write("# sites = " + " ".join(f"{k}:{x}" for _, k, x, _, _ in d["sites"]) + "\n")
        f.write("# site_names = " + " ".join(f"{lab}:{nm}:d={dist:.3f}" for lab, _, _, dist, nm in d["sites"])
                + "\n")
        f.write(f"# sample_every = {REF_DT:g} ms\n")
        f.write("# spikes = " + " ".join(f"{s:.6f}" for s in d["spikes"]) + "\n")
        k0 = d["sites"][0][1]
        f.write("t," + ",".join(f"v_{k}_{x}" for _, k, x, _, _ in d["sites"]) + f",cai_{k0}_0.5\n")
        tr = d["traces"]
        for i in range(0, len(d["t"]), every):
            f.write(f"{d['t'][i]:.4f}," + ",".join(f"{v[i]:.5f}" for v in tr) + f",{d['cai'][i]:.6e}\n")
    os.replace(tmp, path)
    # the cell alone (model, parameters, morphology; not the protocol): one file per model
    seg_path = os.path.join(out_dir, os.path.splitext(d["model"])[0] + "_segments.csv")
    with open(seg_path + ".tmp", "w") as f:
        f.write(f"# NEURON {d['neuron']} per-segment values (validation/neuron_model_compare.py)\n")
        f.write(f"# swc = {d['swc']}\n# model = {d['model']}\n# params = {d['params_file']}\n")
        f.write(f"# model_sha256 = {d['model_sha256']}\n# params_sha256 = {d['params_sha256']}\n")
        f.write("# one row per segment in Import3d's section order; d = h.distance(soma(0.5), seg) [um], "
                "area [um^2], cm [uF/cm^2], conductances [S/cm^2], empty where the mechanism is absent\n")
        f.write("first_point_id,region,nseg,x,d,area,cm," + ",".join(SEGMENT_PARAMS) + "\n")
        for r in d["segments"]:
            f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.17g},{r[4]:.17g},{r[5]:.17g},{r[6]:.17g},"
                    + ",".join("" if v is None else f"{v:.17g}" for v in r[7:]) + "\n")
    os.replace(seg_path + ".tmp", seg_path)
    return path, seg_path


# ---------------------------------------------------------------- neurosolve

def neurosolve_command(binary, a, d, lib, prefix):
    cmd = [binary, "simulate", a.swc, "--params", a.params, "--mechanisms", lib, "--model", a.model,
           "--cm", "1", "--out", prefix, "--json", "--no-progress"]
    for c in d["iclamp"]:
        cmd += ["--iclamp", c]
    for _, k, x, _, _ in d["sites"]:
        cmd += ["--record", f"swc={k}:{x}"]
    return cmd


def passive_command(binary, a, d, prefix):
    """Today's CLI with its built-in pas: the parameter file, then the model's
    leak statements as --set in file order."""
    cmd = [binary, "simulate", a.swc, "--params", a.params, "--cm", "1"]
    for st in passive_statements(read_model(a.model)):
        if st["kind"] == "insert":
            cmd += ["--set", f"{st['region']}.pas=1"]
        else:
            cmd += ["--set", f"{st['region']}.{st['name']}={eval_expr(st['tree'], 0.0)!r}"]
    for c in d["iclamp"]:
        cmd += ["--iclamp", c]
    cmd += ["--out", prefix, "--json", "--no-progress"]
    for _, k, x, _, _ in d["sites"]:
        cmd += ["--record", f"swc={k}:{x}"]
    return cmd


def run_neurosolve(binary, a, d):
    with tempfile.TemporaryDirectory() as tmp:
        if a.passive:
            return run_cli(passive_command(binary, a, d, os.path.join(tmp, "run")), tmp)
        lib = a.mechanisms
        if not lib:  # `mechanisms build` takes one folder: the BBP files and passive.mod side by side
            mods = os.path.join(tmp, "mod")
            os.mkdir(mods)
            for f in MOD_FILES():
                shutil.copy(f, mods)
            lib = os.path.join(tmp, "libl5.so")
            r = subprocess.run([binary, "mechanisms", "build", mods, "-o", lib], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"neurosolve mechanisms build failed: {r.stderr.strip()}")
        return run_cli(neurosolve_command(binary, a, d, lib, os.path.join(tmp, "run")), tmp)


def run_cli(cmd, tmp):
    """Run `simulate` (writing tmp/run_*); returns (trace rows, soma spikes, summary)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"neurosolve failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
    summary = json.loads(r.stdout)
    rows = []
    with open(os.path.join(tmp, "run_traces.csv")) as f:
        f.readline()
        for line in f:
            rows.append([float(x) for x in line.split(",")])
    return rows, summary["first_cells"][0]["spikes"], summary


def compare(d, rows, spikes):
    rms = []
    n = min(len(rows), len(d["t"]))
    for k in range(len(d["sites"])):
        s = sum((rows[i][1 + k] - d["traces"][k][i]) ** 2 for i in range(n))
        rms.append(math.sqrt(s / n))
    if len(spikes) != len(d["spikes"]):
        dspike = float("inf")
    else:
        dspike = max((abs(x - y) for x, y in zip(spikes, d["spikes"])), default=0.0)
    return rms, dspike


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--swc", default=SWC)
    ap.add_argument("--params", default=PARAMS)
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--iclamp", action="append")
    ap.add_argument("--name")
    ap.add_argument("--refs")
    ap.add_argument("--neurosolve")
    ap.add_argument("--mechanisms")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--passive", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        try:
            print(json.dumps(run_neuron(a, a.child)))
        except ModelError as e:  # found while building the cell: the message alone
            print(e, file=sys.stderr)
            return 2
        return 0
    a.iclamp = a.iclamp or [ICLAMP]
    if a.passive and a.refs:
        print("neuron_model_compare: --passive is a check of today's CLI, not a reference: no --refs", file=sys.stderr)
        return 2
    try:  # the files' and clamps' errors before NEURON starts
        read_params(a.params)
        read_model(a.model)
        for c in a.iclamp:
            parse_iclamp(c)
    except (ModelError, OSError) as e:
        print(f"neuron_model_compare: {e}", file=sys.stderr)
        return 2
    try:
        d = neuron_in_child(a)
    except RuntimeError as e:
        print(f"neuron_model_compare: {e}", file=sys.stderr)
        return 1
    d["name"] = a.name or os.path.splitext(os.path.basename(a.model))[0]
    for key, path in (("model_sha256", a.model), ("params_sha256", a.params)):
        with open(path, "rb") as f:
            d[key] = hashlib.sha256(f.read()).hexdigest()
    print(f"NEURON {d['neuron']}: {d['swc']} + {d['model']}: {d['sections']} sections, {d['nseg']} segments, "
          f"area {d['area']:.0f} um^2, IClamp {' '.join(d['iclamp'])}: "
          f"{len(d['spikes'])} spikes; {d['steps']} steps in {d['wall_s']:.2f} s (fadvance loop, one thread)")
    print("spikes: " + " ".join(f"{s:.3f}" for s in d["spikes"]))
    for lab, k, x, dist, nm in d["sites"]:
        print(f"site {lab}: swc={k}:{x} ({nm}, d = {dist:.1f} um)")
    if a.check:
        print("\n".join(d["check"]["lines"]))
    if a.refs:
        os.makedirs(a.refs, exist_ok=True)
        print("wrote " + " and ".join(write_ref(d, a.refs)))
    if a.neurosolve:
        try:
            rows, spikes, summary = run_neurosolve(a.neurosolve, a, d)
        except (RuntimeError, OSError, ValueError, KeyError) as e:
            print(f"neuron_model_compare: {e}", file=sys.stderr)
            return 1
        rms, dspike = compare(d, rows, spikes)
        ok = dspike <= 0.05 and max(rms) <= 0.1
        print("| model | nseg | clamps | spikes NEURON / neurosolve | max spike-time difference [ms] | "
              "RMS difference per site [mV] |")
        print("|---|---|---|---|---|---|")
        print(f"| {d['model']}{' (leak only)' if a.passive else ''} | {d['nseg']} | {' '.join(d['iclamp'])} | {len(d['spikes'])} / {len(spikes)} | {dspike:.2e} | "
              + " ".join(f"{r:.2e}" for r in rms) + f" |{'' if ok else ' FAIL'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
