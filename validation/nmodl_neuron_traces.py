#!/usr/bin/env python3
"""NEURON reference traces for the NMODL translator's per-mechanism tests.

One isopotential compartment (L = diam = 20 um, cm = 1 uF/cm^2, nseg = 1) per
case, run by NEURON's fixed-step method (dt = 0.025 ms) with the mechanisms
compiled from the .mod files in data/mechanisms/ (nrnivmodl). Writes
tests/data/nmodl/CASE.csv: '#' header lines (NEURON version, the case), then
t, v [mV] (and cai [mM], eca [mV] where calcium is dynamic, or a probed
variable of a mechanism without a current) every 4th step,
and a '# spikes' line with the upward 0 mV crossings of the full-resolution
trace (linear interpolation). tests/nmodl/test_nmodl_neuron.c reads them.

The BBP files are Arbor's versions, which differ from what NEURON's nocmodl
accepts in two ways, so the copies compiled here get (1) FUNCTION exprelr(x)
{ x / (exp(x) - 1), 1 where 1 + x == 1 } appended (Arbor's extension) and (2) an
ASSIGNED block declaring v and the ion and NONSPECIFIC_CURRENT variables that
Arbor lets a file leave undeclared. Nothing else changes.

Run: python3 -m venv /work/venv-nmodl && /work/venv-nmodl/bin/pip install neuron==9.0.2
     /work/venv-nmodl/bin/python validation/nmodl_neuron_traces.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BBP = os.path.join(ROOT, "data/mechanisms/bbp")
# hhdi.mod: hh.mod by derivimplicit; lang.mod, langcr.mod: NMODL's language (units after numbers,
# UNITS constants, module LOCALs, arrays, loops, v and ena as the mechanism's copies, VERBATIM
# return 0, CR-only line ends); cabuf.mod: calcium with a buffer as a KINETIC scheme
TEST = os.path.join(ROOT, "data/mechanisms/test")
VERBATIM = os.path.join(ROOT, "data/mechanisms/verbatim")  # VERBATIM C (host C: a folder of its own)
KINETIC = os.path.join(ROOT, "data/mechanisms/kinetic")  # NEURON's KINETIC test files
# scalar twins of test files that NEURON 9.0.2 does not translate (arrcn.mod, arrdi.mod: derivatives of an
# array STATE, which nocmodl warns it emits as C that does not compile): the same SUFFIX, run as the reference
TWINS = os.path.join(ROOT, "validation/nmodl_twins")
OUT = os.path.join(ROOT, "tests/data/nmodl")
EXPRELR = """
FUNCTION exprelr(x) {
    if (1.0 + x == 1.0) {
        exprelr = 1.0
    } else {
        exprelr = x / (exp(x) - 1.0)
    }
}
"""

# name -> (celsius, v_init, tstop, mechanisms {name: {param: value}}, clamps [(del, dur, amp)],
#          events [(t, weight)], point process or None, ions {var: value}, record calcium[, probe[,
#          geometry]])
# (a parameter that is no RANGE variable is set as the GLOBAL name_mech; probe: a
# RANGE variable recorded as the third column, for a mechanism without a current)
L5 = {"NaTs2_t": {"gNaTs2_tbar": 0.983955}, "SKv3_1": {"gSKv3_1bar": 0.303472},
      "SK_E2": {"gSK_E2bar": 0.008407}, "K_Tst": {"gK_Tstbar": 0.0812}, "K_Pst": {"gK_Pstbar": 0.00223},
      "Nap_Et2": {"gNap_Et2bar": 0.00172}, "Ih": {"gIhbar": 0.0002}, "Ca_HVA": {"gCa_HVAbar": 0.000994},
      "Ca_LVAst": {"gCa_LVAstbar": 0.000333}, "CaDynamics_E2": {"gamma": 0.000609, "decay": 210.485284},
      "pas": {"g": 3.38e-5, "e": -90}}
STEPS = [(10, 40, 0.15), (60, 40, -0.15)]
CHAN = lambda name, g: (34, -70, 120, {"pas": {"g": 1e-4, "e": -70}, name: g}, STEPS, [], None,
                        {"ena": 50, "ek": -85, "eca": 120}, False)
CASES = {
    "hh": (6.3, -65, 50, {"hh": {}}, [(2, 30, 0.2)], [], None, {}, False),
    "hhdi": (6.3, -65, 50, {"hhdi": {}}, [(2, 30, 0.2)], [], None, {}, False),
    "pas": (6.3, -65, 40, {"pas": {}}, [(5, 20, 0.1)], [], None, {}, False),
    "lang": (20, -65, 60, {"lang": {}}, [(2, 30, 0.2)], [], None, {}, False),
    "langcr": (6.3, -65, 40, {"langcr": {}}, [(5, 20, 0.1)], [], None, {}, False),
    "ExpSyn": (6.3, -70, 40, {"pas": {"g": 1e-4, "e": -70}}, [], [(5, 0.01), (15, 0.02)],
               ("ExpSyn", {"tau": 2, "e": 0}), {}, False),
    "Exp2Syn": (6.3, -70, 40, {"pas": {"g": 1e-4, "e": -70}}, [], [(5, 0.01), (15, 0.02)],
                ("Exp2Syn", {"tau1": 0.5, "tau2": 3, "e": 0}), {}, False),
    "NaTs2_t": CHAN("NaTs2_t", {"gNaTs2_tbar": 0.01}),
    "NaTa_t": CHAN("NaTa_t", {"gNaTa_tbar": 0.01}),
    "Nap_Et2": CHAN("Nap_Et2", {"gNap_Et2bar": 0.001}),
    "K_Pst": CHAN("K_Pst", {"gK_Pstbar": 0.01}),
    "K_Tst": CHAN("K_Tst", {"gK_Tstbar": 0.01}),
    "SKv3_1": CHAN("SKv3_1", {"gSKv3_1bar": 0.01}),
    "Im": CHAN("Im", {"gImbar": 0.001}),
    "Ih": CHAN("Ih", {"gIhbar": 0.001}),
    "Ca_HVA": CHAN("Ca_HVA", {"gCa_HVAbar": 0.001}),
    "Ca_LVAst": CHAN("Ca_LVAst", {"gCa_LVAstbar": 0.001}),
    "calcium": (34, -70, 200, {"pas": {"g": 1e-4, "e": -70}, "Ca_HVA": {"gCa_HVAbar": 0.002},
                               "Ca_LVAst": {"gCa_LVAstbar": 0.005}, "CaDynamics_E2": {"gamma": 0.05, "decay": 80},
                               "SK_E2": {"gSK_E2bar": 0.01}},
                [(20, 100, 0.3)], [], None, {"ek": -85}, True),
    "L5soma": (34, -80, 300, L5, [(20, 200, 0.25)], [], None, {"ena": 50, "ek": -85}, True),
    # KINETIC schemes (METHOD sparse)
    "hhkin": (6.3, -65, 50, {"hhkin": {}}, [(2, 30, 0.2)], [], None, {}, False),
    "X2Y": (6.3, -65, 40, {"pas": {}, "X2Y": {}}, [(5, 20, 0.1)], [], None, {}, False),
    "side_effects": (6.3, -65, 40, {"pas": {}, "side_effects": {}}, [(5, 20, 0.1)], [], None, {}, False),
    "glia": (6.3, -65, 40, {"pas": {}, "glia": {}}, [(5, 20, 0.1)], [], None, {}, False, "C2"),
    "minipump": (6.3, -65, 40, {"pas": {}, "minipump": {}}, [(5, 20, 0.1)], [], None, {}, False, "Z"),
    "minipump_ss": (6.3, -65, 40, {"pas": {}, "minipump": {"run_steady_state": 1}}, [(5, 20, 0.1)], [], None, {},
                    False, "Z"),
    # NEURON runs a mechanism that writes a concentration (cabuf) before the others, whatever its
    # name (memb_order_, nrn_writes_conc): tests/nmodl/test_nmodl_neuron.c lists it second;
    # tests/mech/test_sim_conc_order.c runs it in the simulation, which orders it so itself
    # ELECTRODE_CURRENT: NEURON's own IClamp and SEClamp (stim.mod, svclmp.mod: NEURON's built-ins
    # are these files, data/mechanisms/electrode) on hh, their current i recorded
    "IClamp": (6.3, -65, 50, {"hh": {}}, [], [], ("IClamp", {"del": 2, "dur": 30, "amp": 0.2}), {}, False, "i"),
    "SEClamp": (6.3, -65, 40, {"hh": {}}, [], [],
                ("SEClamp", {"dur1": 3, "amp1": -65, "dur2": 10, "amp2": -30, "dur3": 5, "amp3": -75, "rs": 1}),
                {}, False, "i"),
    # area and diam in a mechanism: data/mechanisms/test/geom.mod (density) and geompp.mod (point)
    "geom": (6.3, -65, 40, {"pas": {}, "geom": {}}, [(5, 20, 0.1)], [], None, {}, False, "s"),
    "geompp": (6.3, -65, 40, {"pas": {}}, [(5, 20, 0.1)], [], ("geompp", {}), {}, False, "i"),
    # WRITE ena (ion style "e written"): test/wena.mod (no current: its BREAKPOINT in nrn_state) and
    # wenai.mod (with its own ina), hh reading ena; the ion's ena recorded
    "wena": (6.3, -65, 40, {"hh": {}, "wena": {}}, [(2, 30, 0.2)], [], None, {}, False, "ena"),
    "wenai": (6.3, -65, 40, {"hh": {}, "wenai": {}}, [(2, 30, 0.2)], [], None, {}, False, "ena"),
    # VERBATIM C (docs/mechanisms.md "VERBATIM"): verbatim/vbchan.mod (C in its rates, outside the blocks,
    # an array, _threadargscomma_ calls), probing ntau, which the C computes; test/vbrand.mod
    # (mcell_ran4 and nrnran123 draws in C), probing its noise current
    "vbchan": CHAN("vbchan", {"gbar": 0.01}) + ("ntau",),
    "vbrand": (6.3, -65, 40, {"pas": {}, "vbrand": {}}, [(5, 20, 0.1)], [], None, {}, False, "inoise"),
    # verbatim/vbstore.mod (a point process: a structure of the C's own kept in a POINTER's slot and a RANGE
    # variable through the file's C macros, hoc_Ecalloc in its CONSTRUCTOR, hoc_lookup), probing its current
    "vbstore": (6.3, -65, 40, {"pas": {}}, [(5, 20, 0.1)], [], ("vbstore", {}), {}, False, "i"),
    # usetable read as a name and a PROCEDURE's value (test/usetab.mod: INITIAL's start of m)
    "usetab": (6.3, -65, 40, {"pas": {}, "usetab": {}}, [(5, 20, 0.1)], [], None, {}, False),
    # a TABLE'd FUNCTION that reads a GLOBAL that INITIAL sets (test/tablazy.mod: built at its first call)
    "tablazy": (6.3, -65, 40, {"pas": {}, "tablazy": {}}, [(5, 20, 0.1)], [], None, {}, False),
    # finitialize's evaluation of the currents at t = 0 (test/brkzero.mod: capump's `if (t == 0) {parms()}`
    # sets the compartment its KINETIC scheme divides by): run by tests/sim/test_sim_nmodl_neuron.c
    "brkzero": (6.3, -65, 40, {"pas": {}, "brkzero": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    # a SOLVE nested in BREAKPOINT's if/else (test/solveif.mod: ModelDB's bg_cvode.inc pattern)
    "solveif": (6.3, -65, 40, {"pas": {}, "solveif": {}}, [(5, 20, 0.1)], [], None, {}, False),
    # a concentration read makes NEURON compute e by Nernst at finitialize (test/einit.mod: READ nai):
    # run by tests/sim/test_sim_nmodl_neuron.c, the ion's ena recorded
    "einit": (6.3, -65, 40, {"pas": {}, "einit": {}}, [(5, 20, 0.1)], [], None, {}, False, "ena"),
    # the same in a tapered section of 3 segments (tests/sim/test_sim_nmodl_neuron.c: the simulation's
    # area and diam per segment): 3D points (x, y, z, diam), nseg, the probe's x (v at 0.5)
    "geomcell": (6.3, -65, 40, {"pas": {}, "geom": {}}, [(5, 20, 0.1)], [], None, {}, False, "s",
                 {"pt3d": [(0, 0, 0, 2), (0, 4, 0, 4), (0, 10, 0, 2)], "nseg": 3, "probe_x": 1 / 6}),
    # forms nocmodl accepts (test/kflow.mod: `~ g -> (rate)`, CHARGE, PROTECT, MUTEXLOCK, an undeclared
    # GLOBAL of a THREADSAFE file; test/nosuffix.mod: no NEURON block), KINETIC by METHOD euler and runge
    # (test/keuler.mod, krunge.mod) and a DERIVATIVE by runge (test/drunge.mod)
    "kflow": (20, -65, 40, {"pas": {}, "kflow": {}}, [(5, 20, 0.1)], [], None, {"ena": 50}, False, "g"),
    "nosuffix": (6.3, -65, 40, {"pas": {}, "nosuffix": {}}, [(5, 20, 0.1)], [], None, {}, False, "x"),
    "keuler": (6.3, -65, 40, {"pas": {}, "keuler": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    "krunge": (6.3, -65, 40, {"pas": {}, "krunge": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    "drunge": (6.3, -65, 40, {"pas": {}, "drunge": {}}, [(5, 20, 0.1)], [], None, {}, False, "m"),
    # LINEAR (test/linspine.mod: NEURON's expsynspine pattern, the current a STATE of the system) and
    # NONLINEAR (test/nonlin.mod), each in INITIAL and in a PROCEDURE that BREAKPOINT calls
    "linspine": (6.3, -65, 40, {"pas": {}, "linspine": {}}, [(5, 20, 0.1)], [], None, {}, False, "vsp"),
    "nonlin": (6.3, -65, 40, {"pas": {}, "nonlin": {}}, [(5, 20, 0.1)], [], None, {}, False, "xs"),
    # arrays in reactions (test/cadifus.mod: NEURON's cadifus pattern, radial shells and buffers)
    "cadifus": (34, -70, 200, {"pas": {"g": 1e-4, "e": -70}, "Ca_HVA": {"gCa_HVAbar": 0.002},
                               "SK_E2": {"gSK_E2bar": 0.01}, "cadifus": {}},
                [(20, 100, 0.3)], [], None, {"ek": -85}, True),
    # BEFORE/AFTER blocks and CONSTRUCTOR (test/bahook.mod: each block's effect reaches the current) with
    # hh; its current u, which BEFORE STEP sets, recorded. The simulation's loops run them:
    # tests/sim/test_sim_nmodl_neuron.c
    "bahook": (6.3, -65, 40, {"hh": {}, "bahook": {}}, [(2, 30, 0.2)], [], None, {}, False, "u"),
    # FUNCTION_TABLE (test/ftab.mod): the tables FTAB below, given by hoc's table_NAME() in both forms
    "ftab": (6.3, -65, 40, {"pas": {}, "ftab": {}}, [(5, 20, 0.3)], [], None, {}, False, "ninf"),
    "cabuf": (34, -70, 200, {"pas": {"g": 1e-4, "e": -70}, "Ca_HVA": {"gCa_HVAbar": 0.002},
                             "SK_E2": {"gSK_E2bar": 0.01}, "cabuf": {}},
              [(20, 100, 0.3)], [], None, {"ek": -85}, True),
    # recursive FUNCTIONs and PROCEDUREs (test/recur.mod: hh's n gate by recursion, a TABLE over it) with
    # hh's sodium and leak (hh with gkbar 0), probing ntau
    "recur": (6.3, -65, 50, {"hh": {"gkbar": 0}, "recur": {}}, [(2, 30, 0.2)], [], None, {}, False, "ntau"),
    # VERBATIM C in a KINETIC block (test/vbkin.mod: its rates computed by the C) with hh's sodium and leak,
    # probing kf, which the C writes
    "vbkin": (20, -65, 50, {"hh": {"gkbar": 0}, "vbkin": {}}, [(2, 30, 0.2)], [], None, {}, False, "kf"),
    # a FROM loop whose bound is a PARAMETER in a KINETIC block (test/kloop.mod: hh's n gate as a
    # five-state chain) with hh's sodium and leak, probing o (the open state)
    "kloop": (6.3, -65, 50, {"hh": {"gkbar": 0}, "kloop": {}}, [(2, 30, 0.2)], [], None, {}, False, "o"),
    # LOCALs declared inside FROM loops with constant bounds in a KINETIC block (test/kfloc.mod: hh's n
    # gate as a five-state chain) with hh's sodium and leak, probing o (the open state)
    "kfloc": (6.3, -65, 50, {"hh": {"gkbar": 0}, "kfloc": {}}, [(2, 30, 0.2)], [], None, {}, False, "o"),
    # solver forms (test/cadn.mod: cnexp on an equation not linear in its state, which nocmodl
    # translates by derivimplicit, and STEADYSTATE derivimplicit in INITIAL; test/dinit.mod: a
    # DERIVATIVE that INITIAL and a PROCEDURE SOLVE by derivimplicit while BREAKPOINT's is cnexp)
    "cadn": (34, -70, 200, {"pas": {"g": 1e-4, "e": -70}, "Ca_HVA": {"gCa_HVAbar": 0.002},
                            "SK_E2": {"gSK_E2bar": 0.01}, "cadn": {}},
             [(20, 100, 0.3)], [], None, {"ek": -85}, True),
    "dinit": (6.3, -65, 40, {"pas": {}, "dinit": {}}, [(5, 20, 0.1)], [], None, {}, False, "m"),
    # SOLVE of a NONLINEAR block directly in BREAKPOINT (test/nonlinbp.mod): nocmodl's nrn_state runs it
    "nonlinbp": (6.3, -65, 40, {"pas": {}, "nonlinbp": {}}, [(5, 20, 0.1)], [], None, {}, False, "xs"),
    # array STATEs in a DERIVATIVE block, x'[j] in FROM loops (test/arrcn.mod by cnexp, arrdi.mod by
    # derivimplicit): NEURON runs their scalar twins (TWINS)
    "arrcn": (6.3, -65, 40, {"pas": {}, "arrcn": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    "arrdi": (6.3, -65, 40, {"pas": {}, "arrdi": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    # '~+' (terms added to the previous equation) in NONLINEAR and LINEAR blocks (test/linadd.mod)
    "linadd": (6.3, -65, 40, {"pas": {}, "linadd": {}}, [(5, 20, 0.1)], [], None, {}, False, "zs"),
    # equations inside an if and in loops in NONLINEAR and LINEAR blocks (test/linif.mod); a KINETIC block
    # SOLVEd by sparse in INITIAL and in a PROCEDURE (test/kinit.mod); a KINETIC scheme of array STATEs by
    # euler and runge (test/karreu.mod, karrrk.mod: their current)
    "linif": (6.3, -65, 40, {"pas": {}, "linif": {}}, [(5, 20, 0.1)], [], None, {}, False, "zs"),
    "kinit": (6.3, -65, 40, {"pas": {}, "kinit": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    # ... in BEFORE STEP and BREAKPOINT (test/kbstep.mod: tests/sim/test_sim_nmodl_neuron.c, the simulation's hooks)
    "kbstep": (6.3, -65, 40, {"pas": {}, "kbstep": {}}, [(5, 20, 0.1)], [], None, {}, False, "o"),
    "karreu": (6.3, -65, 40, {"pas": {}, "karreu": {}}, [(5, 20, 0.1)], [], None, {}, False, "i"),
    "karrrk": (6.3, -65, 40, {"pas": {}, "karrrk": {}}, [(5, 20, 0.1)], [], None, {}, False, "i"),
}


def ftab_tables():
    """test/ftab.mod's tables (tests/nmodl/test_nmodl_neuron.c computes the same): ninf over v at
    uneven abscissae; ntau over v (16 points, -100 to 50 mV) and q (3 points, 1 to 3), row order."""
    import math
    xs = [-100, -85, -70, -62, -50, -35, -20, 0, 30, 60]
    ninf = [1 / (1 + math.exp(-(x + 45) / 9)) for x in xs]
    tau = [1 + 4 * math.exp(-((-100 + 10 * i + 50) / 25) ** 2) * (0.5 + 0.4 * j) for i in range(16) for j in range(3)]
    return xs, ninf, tau


def assigned_block(text):
    """ASSIGNED { v, the ion and nonspecific variables } minus the STATEs."""
    import re
    names = ["v"]
    for m in re.finditer(r"USEION\s+\w+((?:\s+(?:READ|WRITE)\s+[\w\s,]+?)+)(?=\n)", text):
        names += [w for w in re.split(r"[\s,]+", m.group(1)) if w and w not in ("READ", "WRITE")]
    for m in re.finditer(r"NONSPECIFIC_CURRENT\s+([\w\s,]+?)(?=\n)", text):
        names += [w for w in re.split(r"[\s,]+", m.group(1)) if w]
    st = re.search(r"STATE\s*{([^}]*)}", text)
    states = set(re.findall(r"[A-Za-z_]\w*", st.group(1))) if st else set()
    keep = [n for n in dict.fromkeys(names) if n not in states and n not in ("FROM", "TO")]
    return "\nASSIGNED {\n" + "".join(f"    {n}\n" for n in keep) + "}\n"


def compile_bbp(work, extra=()):
    """Copy data/mechanisms/bbp/*.mod (with the two additions above) and the
    files in `extra` (unchanged) into the folder `work` and run nrnivmodl
    there; neuron.load_mechanisms(work) then loads them.
    validation/neuron_model_compare.py uses this too."""
    for f in sorted(os.listdir(BBP)):
        if f.endswith(".mod"):
            text = open(os.path.join(BBP, f)).read()
            if "exprelr" in text:
                text += EXPRELR
            text += assigned_block(text)
            open(os.path.join(work, f), "w").write(text)
    for f in extra:
        shutil.copy(f, work)
    nrnivmodl = os.path.join(os.path.dirname(sys.executable), "nrnivmodl")
    if not os.path.exists(nrnivmodl):  # a wheel installed elsewhere (--target): on PATH
        nrnivmodl = shutil.which("nrnivmodl") or nrnivmodl
    with open(nrnivmodl, "rb") as f:  # the wheel's Python wrapper: run it with this Python
        cmd = [sys.executable, nrnivmodl] if b"python" in f.readline() else [nrnivmodl]
    subprocess.run(cmd, cwd=work, check=True, stdout=subprocess.DEVNULL)


def run_case(name, case):
    from neuron import h
    h.load_file("stdrun.hoc")
    celsius, v_init, tstop, mechs, clamps, events, point, ions, calcium = case[:9]
    probe = case[9] if len(case) > 9 else None
    geo = case[10] if len(case) > 10 else None  # 3D points instead of the cylinder
    soma = h.Section(name="soma")
    if geo:
        h.pt3dclear(sec=soma)
        for p in geo["pt3d"]:
            h.pt3dadd(*p, sec=soma)
        soma.nseg = geo["nseg"]
    else:
        soma.L = soma.diam = 20
        soma.nseg = 1
    soma.cm = 1
    px = geo["probe_x"] if geo else 0.5
    for m, params in mechs.items():
        soma.insert(m)
        for k, val in params.items():
            if hasattr(soma(0.5), f"{k}_{m}"):
                setattr(soma(0.5), f"{k}_{m}", val)
            else:  # a GLOBAL
                setattr(h, f"{k}_{m}", val)
    for k, val in ions.items():  # the ions that the mechanisms use
        if h.ismembrane(k[1:] + "_ion", sec=soma):
            setattr(soma, k, val)
    keep = []
    for (d, dur, amp) in clamps:
        c = h.IClamp(soma(0.5))
        c.delay, c.dur, c.amp = d, dur, amp
        keep.append(c)
    if point:
        syn = getattr(h, point[0])(soma(0.5))
        for k, val in point[1].items():
            setattr(syn, k, val)
        keep.append(syn)
        ncs = []
        for (t, w) in events:  # one NetCon per event: its weight
            nc = h.NetCon(None, syn)
            nc.weight[0] = w
            ncs.append((nc, t))
        keep += ncs
    if "ftab" in mechs:  # FUNCTION_TABLE values: table_NAME(y, x) and table_NAME(&y, n1, lo1, hi1, n2, lo2, hi2)
        xs, ninf, tau = ftab_tables()
        keep += [h.Vector(xs), h.Vector(ninf), h.Vector(tau)]
        h.table_tabninf_ftab(keep[-2], keep[-3])
        h.table_tabntau_ftab(keep[-1]._ref_x[0], 16, -100, 50, 3, 1, 3)
    if "CaDynamics_E2" in mechs:
        # nocmodl writes GLOBAL defaults with 6 digits ("double F = 96485.3;"):
        # give NEURON the file's value, so that both run the file as written
        h.F_CaDynamics_E2 = 96485.3321233100184
    h.celsius = celsius
    h.dt = 0.025
    tv = h.Vector().record(h._ref_t)
    vv = h.Vector().record(soma(0.5)._ref_v)
    cv = ev = None
    if calcium:
        cv = h.Vector().record(soma(0.5)._ref_cai)
        ev = h.Vector().record(soma(0.5)._ref_eca)
    if probe and point:  # a variable of the point process
        cv = h.Vector().record(getattr(syn, f"_ref_{probe}"))
    elif probe:  # a variable of the last mechanism, or of an ion (ena)
        mech = list(mechs)[-1]
        ref = f"_ref_{probe}_{mech}" if hasattr(soma(px), f"_ref_{probe}_{mech}") else f"_ref_{probe}"
        cv = h.Vector().record(getattr(soma(px), ref))
    h.finitialize(v_init)
    if point:
        for (nc, t) in ncs:
            nc.event(t)
    h.continuerun(tstop)
    t, v = list(tv), list(vv)
    spikes = [t[i - 1] + (0 - v[i - 1]) * (t[i] - t[i - 1]) / (v[i] - v[i - 1])
              for i in range(1, len(v)) if v[i - 1] < 0 <= v[i]]
    with open(os.path.join(OUT, f"{name}.csv"), "w") as f:
        f.write(f"# NEURON {h.nrnversion(5)} ({h.nrnversion()}), written by validation/nmodl_neuron_traces.py\n")
        shape = f"3D points {geo}" if geo else "L = diam = 20 um"
        f.write(f"# case {name}: celsius {celsius}, v_init {v_init}, tstop {tstop}, dt 0.025, {shape}, cm 1\n")
        f.write(f"# mechanisms {mechs}; clamps (del, dur, amp) {clamps}; events {events}; point {point}; ions {ions}\n")
        f.write(f"# FARADAY {h.FARADAY!r} R {h.R!r}\n")
        f.write("# spikes " + " ".join(f"{s:.12g}" for s in spikes) + "\n")
        f.write("t,v,cai,eca\n" if calcium else f"t,v,probe {probe}\n" if probe else "t,v\n")
        for i in range(0, len(t), 4):
            row = [t[i], v[i]] + ([cv[i], ev[i]] if calcium else [cv[i]] if probe else [])
            f.write(",".join(f"{x:.12g}" for x in row) + "\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--run":  # child: one case, mechanisms loaded from cwd
        run_case(sys.argv[2], CASES[sys.argv[2]])
        return
    only = sys.argv[1:]  # case names (default: all)
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix="nmodl_neuron_")
    try:
        # hh, pas, ExpSyn and Exp2Syn: NEURON's built-ins are these very files
        compile_bbp(work, extra=[os.path.join(TEST, f) for f in ("hhdi.mod", "lang.mod", "langcr.mod", "cabuf.mod",
                                                                 "geom.mod", "geompp.mod", "wena.mod", "wenai.mod",
                                                                 "kflow.mod", "nosuffix.mod", "keuler.mod",
                                                                 "krunge.mod", "drunge.mod", "linspine.mod",
                                                                 "nonlin.mod", "cadifus.mod", "bahook.mod", "ftab.mod",
                                                                 "usetab.mod", "brkzero.mod", "solveif.mod",
                                                                 "einit.mod", "recur.mod", "vbkin.mod", "kloop.mod",
                                                                 "kfloc.mod", "cadn.mod", "dinit.mod",
                                                                 "nonlinbp.mod", "linadd.mod", "linif.mod",
                                                                 "kinit.mod", "kbstep.mod", "karreu.mod",
                                                                 "karrrk.mod")] +
                    [os.path.join(TWINS, f) for f in ("arrcn.mod", "arrdi.mod")] +
                    [os.path.join(VERBATIM, f) for f in ("vbchan.mod", "vbmacro.h", "vbrand.mod", "vbstore.mod",
                                                                     "tablazy.mod")] +
                    [os.path.join(KINETIC, f) for f in sorted(os.listdir(KINETIC)) if f.endswith(".mod")])
        for name in only or CASES:
            subprocess.run([sys.executable, os.path.abspath(__file__), "--run", name], cwd=work, check=True)
            print("wrote", os.path.join(OUT, name + ".csv"))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
