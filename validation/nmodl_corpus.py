#!/usr/bin/env python3
"""How many .mod files of a corpus neurosolve builds unchanged, next to NEURON's translator (issue 39).

For each model (a folder of .mod files, searched recursively; nothing is downloaded) and each
distinct .mod file in it (by content, with the files its INCLUDE statements name):
  * NEURON's nocmodl (when NEURON is installed for this Python): accepted or not;
  * ours for the CPU: `neurosolve mechanisms build` of the file alone (translated, compiled by the
    C compiler), in a temporary folder with the files it INCLUDEs;
  * ours for the GPU (--gpu): the same with `--cuda --arch sm_90` (nvcc, compile and link only; no
    GPU needed), tried where the CPU build succeeded (a file the translator refuses is refused for
    both); a mechanism built without CUDA entry points (its descriptor's cuda_why_not: it runs on the
    CPU loop only) counts as not built for the GPU, blocked by what cuda_why_not names;
  * the first blocking construct, classified from our message (CLASSES below), and the constructs
    the file uses (a scan of its text without comments: SCAN below);
  * with --traces, every density mechanism of a file both accept, inserted alone with pas
    (g 1e-4 S/cm2, e -70 mV) into one compartment (L = diam = 20 um, cm 1, celsius 34, v_init -70,
    dt 0.025, tstop 120, IClamp 10-50 ms 0.15 nA and 60-100 ms -0.15 nA), parameters at the file's
    defaults, ions at NEURON's defaults (NEURON's values after insertion are given to ours for ions
    other than na, k, ca), run by NEURON (nrnivmodl of the model's accepted files) and by
    `neurosolve simulate --model --mechanisms` (a one-point soma of diameter 20 um: NEURON's Import3d
    cylinder); RMS and max of v over every step (target 1e-6 mV). Point processes are reported as
    not run (they need a synapse and an event source in both).
Then totals over the distinct files (a file shared by several models counts once), models with
every file accepted, a construct table (files using it, files it blocks first, and "alone": files
it blocks where the scan finds no other construct that blocks some file of the corpus), a table
per model and, with --details, a table per file.

Results are cached (--cache, default ~/.cache/neurosolve/nmodl_corpus_results.json) by the file's
content for NEURON, by the translator's output (the generated .h, .c, .cu and the mechanism ABI
header include/neurosolve/mechanism.h) for our builds, and by both for the traces, so a re-run
after a translator change rebuilds only the files whose generated code changed. -j runs that many
files at a time.

Run (the corpus: validation/nmodl_corpus_models.txt, materialised outside the repository by
validation/nmodl_corpus_materialise.py):
  python3 validation/nmodl_corpus.py --neurosolve build/neurosolve --corpus ~/.cache/neurosolve/nmodl_corpus \\
      -j 2 --gpu --traces --markdown corpus.md --details corpus_files.md
or, with folders of one's own (each one model):
  python3 validation/nmodl_corpus.py --neurosolve build/neurosolve DIR [DIR ...]
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ABI = os.path.join(ROOT, "include", "neurosolve", "mechanism.h")
TRACE_PROTOCOL = "pas 1e-4/-70; L=diam=20; celsius 34; v_init -70; dt 0.025; tstop 120; steps 10+40 0.15, 60+40 -0.15"
DT, TSTOP, CELSIUS, VINIT = 0.025, 120.0, 34.0, -70.0
STEPS = [(10, 40, 0.15), (60, 40, -0.15)]

# our message -> the construct that blocks (first match wins)
CLASSES = [
    ("VERBATIM", r"\bVERBATIM\b"),
    ("POINTER / BBCOREPOINTER", r"\b(BBCORE)?POINTER\b"),
    ("NET_RECEIVE arguments / INITIAL in it", r"NET_RECEIVE"),
    ("net_send / net_event / net_move", r"\bnet_(send|event|move)\b"),
    ("at_time / state_discontinuity", r"'(at_time|state_discontinuity)'"),
    ("random-number builtins", r"'(normrand|exprand|scop_random|set_seed|unirand|poisrand|nrnran123_\w+)'"),
    ("area / diam", r"'(area|diam)' in a mechanism"),
    ("writing a reversal potential", r"writing a reversal potential"),
    ("ELECTRODE_CURRENT", r"\bELECTRODE_CURRENT\b"),
    ("ARTIFICIAL_CELL", r"\bARTIFICIAL_CELL\b"),
    ("FUNCTION_TABLE", r"\bFUNCTION_TABLE\b"),
    ("LINEAR / NONLINEAR", r"\b(NON)?LINEAR\b"),
    ("KINETIC / METHOD sparse / CONSERVE / COMPARTMENT", r"\b(KINETIC|sparse|CONSERVE|COMPARTMENT|LONGITUDINAL_DIFFUSION)\b"),
    ("WATCH / FOR_NETCONS", r"\b(WATCH|FOR_NETCONS)\b"),
    ("BEFORE / AFTER / CONSTRUCTOR / DESTRUCTOR", r"\b(BEFORE|AFTER|CONSTRUCTOR|DESTRUCTOR)\b"),
    ("EXTERNAL", r"\bEXTERNAL\b"),
    ("REPRESENTS", r"\bREPRESENTS\b"),
    ("PROTECT / MUTEXLOCK", r"\b(PROTECT|MUTEXLOCK|MUTEXUNLOCK)\b"),
    ("INCLUDE (file missing)", r"\bINCLUDE\b"),
    ("TABLE", r"\bTABLE\b"),
    ("USEION details (CHARGE, VALENCE, ...)", r"USEION"),
    ("a file without a NEURON block", r"no NEURON block"),
    ("unknown function", r"unknown function"),
    ("C compiler error", r"^C compiler:"),
    ("CUDA compiler error", r"^CUDA compiler:"),
    ("grammar (parse error)", r"parse error"),
]

# constructs a file uses (a scan of the text without comments)
SCAN = [
    ("VERBATIM", r"\bVERBATIM\b"),
    ("POINTER / BBCOREPOINTER", r"^\s*(BBCORE)?POINTER\b"),
    ("NET_RECEIVE arguments / INITIAL in it", r"NET_RECEIVE\s*\(\s*\w+\s*(\([^)]*\)\s*)?,"),
    ("net_send / net_event / net_move", r"\bnet_(send|event|move)\s*\("),
    ("at_time / state_discontinuity", r"\b(at_time|state_discontinuity)\s*\("),
    ("random-number builtins", r"\b(normrand|exprand|scop_random|set_seed|unirand|poisrand|nrnran123_\w+)\s*\("),
    ("area / diam", r"\b(area|diam)\b"),
    ("writing a reversal potential", r"USEION\s+\w+[^\n]*WRITE[^\n]*\be\w+"),
    ("ELECTRODE_CURRENT", r"\bELECTRODE_CURRENT\b"),
    ("ARTIFICIAL_CELL", r"\bARTIFICIAL_CELL\b"),
    ("FUNCTION_TABLE", r"\bFUNCTION_TABLE\b"),
    ("LINEAR / NONLINEAR", r"^\s*(NON)?LINEAR\s+\w+"),
    ("KINETIC / METHOD sparse / CONSERVE / COMPARTMENT", r"\bKINETIC\b"),
    ("WATCH / FOR_NETCONS", r"\b(WATCH|FOR_NETCONS)\b"),
    ("BEFORE / AFTER / CONSTRUCTOR / DESTRUCTOR", r"^\s*(BEFORE|AFTER)\s+(BREAKPOINT|SOLVE|INITIAL|STEP)|\b(CONSTRUCTOR|DESTRUCTOR)\b"),
    ("EXTERNAL", r"^\s*EXTERNAL\b"),
    ("REPRESENTS", r"\bREPRESENTS\b"),
    ("PROTECT / MUTEXLOCK", r"\b(PROTECT|MUTEXLOCK)\b"),
    ("INCLUDE (file missing)", r"^\s*INCLUDE\b"),
    ("STEADYSTATE", r"\bSTEADYSTATE\b"),
    ("TABLE", r"^\s*TABLE\b"),
    ("printf", r"\bprintf\s*\("),
]


def strip_comments(text):
    text = re.sub(r"(?ms)^\s*COMMENT\b.*?^\s*ENDCOMMENT\b", "", text)
    return re.sub(r"[:?][^\n]*", "", text)


def scan(text):
    raw = text
    text = strip_comments(text.replace("\r\n", "\n").replace("\r", "\n"))
    found = {name for name, rx in SCAN if re.search(rx, text, re.M)}
    if "\r" in raw and "\n" not in raw:
        found.add("CR-only line ends")
    return found


def classify(msg):
    for name, rx in CLASSES:
        if re.search(rx, msg, re.M):
            return name
    return "other"


def includes(path, headers=False):
    """The files (folder-relative names) that the INCLUDE statements of `path` name, recursively;
    with headers, also what its VERBATIM C's #include "x.h" names (nrnivmodl compiles in the
    model's folder, where such headers sit: ModelDB's misc.h)."""
    folder, todo, seen = os.path.dirname(path), [path], []
    pattern = r'^\s*(?:INCLUDE|#\s*include)\s+"([^"]+)"' if headers else r'^\s*INCLUDE\s+"([^"]+)"'
    while todo:
        try:
            text = open(todo.pop(), "rb").read().decode("latin-1")
        except OSError:
            continue
        for name in re.findall(pattern, text, re.M):
            if name not in seen:
                seen.append(name)
                todo.append(os.path.join(folder, name))
    return seen


def sha(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def file_id(path):
    parts = [open(path, "rb").read()]
    for name in includes(path, headers=True):
        f = os.path.join(os.path.dirname(path), name)
        parts += [name, open(f, "rb").read() if os.path.exists(f) else b"(missing)"]
    return sha(*parts)


def nocmodl_path():
    try:
        import neuron
    except ImportError:
        return None, None, None
    data = os.path.join(os.path.dirname(neuron.__file__), ".data")
    exe = os.path.join(data, "bin", "nocmodl")
    if not os.path.exists(exe):
        return None, None, None
    return exe, dict(os.environ, NMODLHOME=data), neuron.__version__


def stage(path, work):
    """The file and the files it INCLUDEs (and the headers its C includes) into the folder `work`."""
    shutil.copy(path, work)
    for name in includes(path, headers=True):
        f = os.path.join(os.path.dirname(path), name)
        if os.path.exists(f):
            os.makedirs(os.path.dirname(os.path.join(work, name)) or work, exist_ok=True)
            shutil.copy(f, os.path.join(work, name))


def neuron_accepts(path, nocmodl, env):
    with tempfile.TemporaryDirectory() as work:
        stage(path, work)
        try:
            r = subprocess.run([nocmodl, os.path.basename(path)], cwd=work, env=env, capture_output=True, text=True,
                               timeout=120, errors="replace")
        except subprocess.TimeoutExpired:
            return False, "nocmodl: timed out"
        return r.returncode == 0, ((r.stderr or r.stdout).strip().splitlines() or [""])[-1]


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def translate(exe, path, cuda):
    """(generated code key or None, message)."""
    with tempfile.TemporaryDirectory() as work:
        r = subprocess.run([exe, "mechanisms", "translate", path, "-o", work] + (["--cuda"] if cuda else []),
                           capture_output=True, text=True, errors="replace")
        if r.returncode:
            return None, last_line(r.stderr).replace("neurosolve: mechanisms translate: ", "")
        parts = [open(ABI, "rb").read() if os.path.exists(ABI) else b""]
        for f in sorted(os.listdir(work)):
            parts += [f, open(os.path.join(work, f), "rb").read()]
        for name in includes(path, headers=True):  # the headers the C includes are compiled too
            f = os.path.join(os.path.dirname(path), name)
            parts += [name, open(f, "rb").read() if os.path.exists(f) else b"(missing)"]
        return sha("cuda" if cuda else "cpu", *parts), ""


def quick_compilers(folder):
    """Wrappers of cc and nvcc that compile at -O0 where `mechanisms build` asks -O3 (--quick-cc)."""
    os.makedirs(folder, exist_ok=True)
    paths = []
    for name, real in (("cc", os.environ.get("CC") or "cc"), ("nvcc", "nvcc")):
        p = os.path.join(folder, "quick-" + name)
        with open(p, "w") as f:
            f.write('#!/bin/sh\n# written by validation/nmodl_corpus.py --quick-cc: -O0 for -O3\n'
                    'for a; do shift; [ "$a" = -O3 ] && a=-O0; set -- "$@" "$a"; done\n'
                    f'exec {shutil.which(real) or real} "$@"\n')
        os.chmod(p, 0o755)
        paths.append(p)
    return paths


def build(exe, path, cuda, lib_out=None, compilers=None):
    """(built, message): `mechanisms build` of the file alone (with its INCLUDEs)."""
    with tempfile.TemporaryDirectory() as work:
        src = os.path.join(work, "src")
        os.makedirs(src)
        stage(path, src)
        return build_dir(exe, src, cuda, lib_out, compilers)


def build_dir(exe, src, cuda, lib_out=None, compilers=None):
    """(built, message): `mechanisms build` of a folder."""
    with tempfile.TemporaryDirectory() as work:
        lib = os.path.join(work, "lib.so")
        cmd = [exe, "mechanisms", "build", src, "-o", lib] + (["--cuda", "--arch", "sm_90"] if cuda else [])
        env = None
        if compilers:
            env = dict(os.environ, CC=compilers[0])
            if cuda:
                cmd += ["--nvcc", compilers[1]]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=900, env=env)
        except subprocess.TimeoutExpired:
            return False, "build timed out"
        if r.returncode:
            msg = r.stderr.strip()
            line = last_line(msg).replace("neurosolve: mechanisms build: ", "")
            if re.search(r"compil|build\.log|exit status|nvcc|cc ", line, re.I) and "not supported" not in line:
                line = ("CUDA compiler: " if cuda else "C compiler: ") + line
            return False, line
        if lib_out:
            shutil.copy(lib, lib_out)
        return True, ""


class Cache:
    def __init__(self, path):
        self.path = path
        self.data = json.load(open(path)) if os.path.exists(path) else {}
        self.lock = threading.Lock()

    def get(self, key):
        return self.data.get(key)

    def put(self, key, value):
        self.data[key] = value

    def save(self):
        with self.lock:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            tmp = self.path + ".partial"
            json.dump(dict(self.data), open(tmp, "w"), indent=0, sort_keys=True)
            os.replace(tmp, self.path)


def examine(path, a, cache, nrn):
    """One file's results (a dict); reads the cache, returns new entries to store."""
    fid = file_id(path)
    found = scan(open(path, "rb").read().decode("latin-1"))
    for name in includes(path):  # the scan reads the INCLUDEd text too
        f = os.path.join(os.path.dirname(path), name)
        if os.path.exists(f):
            found |= scan(open(f, "rb").read().decode("latin-1"))
    res = {"path": path, "fid": fid, "scan": sorted(found)}
    new = {}
    nocmodl, env, nver = nrn
    if not nocmodl and fid in a.nrn_known:  # --gpu-only on a machine without NEURON: the cache's answer
        res["neuron"], res["neuron_msg"] = a.nrn_known[fid]
    elif nocmodl:
        k = f"nrn:{nver}:{fid}"
        got = cache.get(k) or neuron_accepts(path, nocmodl, env)
        new[k] = got
        res["neuron"], res["neuron_msg"] = got
    else:
        res["neuron"], res["neuron_msg"] = None, ""
    key, msg = translate(a.neurosolve, path, False)
    res["cpu_key"] = key
    if key:
        # --gpu-only: the CPU build of any compiler mode the cache holds (whether it builds does not depend
        # on it), with its mechanisms' list; the CPU library is needed for that list only
        known = [key + m for m in (a.mode, "-O0", "") if a.gpu_only and cache.get(f"cpu:{key}{m}") and (
                 not cache.get(f"cpu:{key}{m}")[0] or cache.get(f"list:{key}{m}") is not None)]
        key = known[0] if known else key + a.mode
        res["cpu_key"] = key
        got = cache.get(f"cpu:{key}")
        lib = os.path.join(a.libs, key + ".so")
        if not got or (got[0] and not os.path.exists(lib) and not known):
            got = build(a.neurosolve, path, False, lib, a.compilers)
        new[f"cpu:{key}"] = got
        res["cpu"], res["cpu_msg"] = got
    else:
        res["cpu"], res["cpu_msg"] = False, msg
    res["gpu"], res["gpu_msg"] = None, ""  # gpu_pass
    set_class(res)
    return res, new


def set_class(res):
    blocker = res["cpu_msg"] if not res["cpu"] else res["gpu_msg"] if res["gpu"] is False else ""
    res["class"] = classify(blocker) if blocker else ""


def gpu_pass(models, results, a, cache):
    """The CUDA build of every file the CPU build took: the files of a model in batches of distinct
    mechanism names, one `mechanisms build --cuda` each (nvcc runs once per file and once for the
    catalogue either way); a batch that fails is built file by file, to tell which file fails.
    With --gpu-only, the models with the most files that no compiler mode has a GPU result for go
    first (a run cut short measures what is not known at all)."""
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        if a.gpu_only:
            keys = dict(zip([f for _, fs in models for f in fs], ex.map(
                lambda f: translate(a.neurosolve, f, True)[0], [f for _, fs in models for f in fs])))
            unknown = {f: bool(results[f]["cpu"] and k and not any(cache.get(f"gpu:{k}{m}") for m in ("", "-O0")))
                       for f, k in keys.items()}
            models = sorted(models, key=lambda mf: -sum(unknown[f] for f in mf[1]))
        for fut in [ex.submit(gpu_model, model, files, results, a, cache) for model, files in models]:
            fut.result()
    for r in results.values():
        set_class(r)


def gpu_model(model, files, results, a, cache):
    if True:
        batch, names = [], set()
        for f in files:
            r = results[f]
            if not r["cpu"]:
                r["gpu"], r["gpu_msg"] = False, r["cpu_msg"]
                continue
            gkey, gmsg = translate(a.neurosolve, f, True)
            if not gkey:
                r["gpu"], r["gpu_msg"] = False, gmsg
                continue
            listed = mechs_of(a, cache, r["cpu_key"])
            why = [m["cuda_why_not"] for m in listed if m.get("cuda_why_not")]
            if why:  # it would build with --cuda, without CUDA entry points: it runs on the CPU loop only
                r["gpu"], r["gpu_msg"] = False, "no CUDA entry points: " + why[0]
                continue
            r["gpu_key"] = gkey + a.mode
            got = cache.get("gpu:" + r["gpu_key"])
            if got or a.cached_only:
                r["gpu"], r["gpu_msg"] = got or (None, "")
                continue
            mechs = {m["name"] for m in listed}
            if names & mechs or len({os.path.basename(x) for x in batch} | {os.path.basename(f)}) <= len(batch):
                gpu_batch(batch, results, a, cache)
                batch, names = [], set()
            batch.append(f)
            names |= mechs
        gpu_batch(batch, results, a, cache)
        print(f"gpu: {model} done", file=sys.stderr)


def gpu_batch(batch, results, a, cache):
    if not batch:
        return
    ok = False
    if len(batch) > 1:
        with tempfile.TemporaryDirectory() as work:
            for f in batch:
                stage(f, work)
            ok, _ = build_dir(a.neurosolve, work, True, None, a.compilers)
    for f in batch:
        r = results[f]
        got = [True, ""] if ok else build(a.neurosolve, f, True, None, a.compilers)
        r["gpu"], r["gpu_msg"] = got
        cache.put("gpu:" + r["gpu_key"], got)
    cache.save()


# ---------------------------------------------------------------------------------------------------
# traces

NEURON_RUN = r"""
import json, sys
import numpy as np
from neuron import h
h.nrn_load_dll(sys.argv[1])
mech, out = sys.argv[2], sys.argv[3]
P = json.loads(sys.argv[4])
h.load_file("stdrun.hoc")
soma = h.Section(name="soma")
soma.L = soma.diam = 20
soma.nseg = 1
soma.cm = 1
soma.insert("pas")
soma.g_pas, soma.e_pas = 1e-4, -70
soma.insert(mech)
keep = []
for (d, dur, amp) in P["steps"]:
    c = h.IClamp(soma(0.5))
    c.delay, c.dur, c.amp = d, dur, amp
    keep.append(c)
h.celsius = P["celsius"]
h.dt = P["dt"]
ions = {}
for ion in P["ions"]:
    if h.ismembrane(ion + "_ion", sec=soma):
        for var in ("e" + ion, ion + "i", ion + "o"):
            try:
                ions[var] = getattr(soma(0.5), var)
            except Exception:
                pass
vv = h.Vector().record(soma(0.5)._ref_v)
h.finitialize(P["v_init"])
h.continuerun(P["tstop"])
np.save(out, np.array(vv))
json.dump(ions, open(out + ".ions.json", "w"))
"""


def neuron_libs(model_files, a, workroot):
    """nrnivmodl of a model's files both accept (one folder; where file or mechanism names clash, as
    few folders as keep them apart; a folder nrnivmodl refuses: each of its files alone).
    Returns {path: libnrnmech.so or (None, message)}."""
    nrnivmodl = shutil.which("nrnivmodl")
    out = {}

    def compile_folder(paths, tag):
        work = os.path.join(workroot, tag)
        os.makedirs(work, exist_ok=True)
        for p in paths:
            stage(p, work)
        r = subprocess.run([nrnivmodl], cwd=work, capture_output=True, text=True, errors="replace")
        lib = os.path.join(work, "x86_64", "libnrnmech.so")
        return (lib if r.returncode == 0 and os.path.exists(lib) else None), last_line(r.stdout + r.stderr)

    groups = []  # as few folders as names allow: no file name and no mechanism name twice in one
    for p in model_files:
        text = open(p, "rb").read().decode("latin-1").replace("\r\n", "\n").replace("\r", "\n")
        # `SUFFIX nothing` names no mechanism: such files (a library of functions for hoc and for the
        # other files' C: ModelDB 151282's misc.mod and vecst.mod) go together, as nrnivmodl takes them
        keys = {os.path.basename(p)} | set(re.findall(r"\b(?:SUFFIX|POINT_PROCESS|ARTIFICIAL_CELL)\s+(\w+)",
                                                      strip_comments(text))) - {"nothing"}
        g = next((g for g in groups if not keys & g[1]), None)
        if g is None:
            groups.append(([], set()))
            g = groups[-1]
        g[0].append(p)
        g[1].update(keys)
    for i, (paths, _) in enumerate(groups):
        lib, msg = compile_folder(paths, f"g{i}")
        if lib:
            out.update({p: lib for p in paths})
            continue
        for j, p in enumerate(paths):  # one that nrnivmodl refuses: the others alone
            lib, msg = compile_folder([p], f"g{i}f{j}")
            out[p] = lib or (None, "nrnivmodl: " + msg)
    return out


NEURON_TIMEOUT = 180


def neuron_ref(mech, nrn_lib, ions_known, ref):
    """NEURON's trace of v into ref (.npy; ref.ions.json: its ion values); '' or the reason it failed."""
    params = {"steps": STEPS, "celsius": CELSIUS, "dt": DT, "tstop": TSTOP, "v_init": VINIT, "ions": ions_known}
    try:
        r = subprocess.run([sys.executable, "-c", NEURON_RUN, nrn_lib, mech, ref, json.dumps(params)],
                           capture_output=True, text=True, errors="replace", timeout=NEURON_TIMEOUT)
    except subprocess.TimeoutExpired:  # BluePyOpt's StochKv3: a binomial draw per channel and step in hoc's C
        return f"NEURON: not done in {NEURON_TIMEOUT} s (120 ms of one compartment)"
    # its message: the last line of its output that is not the notice of a missing display
    said = "\n".join(l for l in (r.stdout + "\n" + r.stderr).splitlines() if "DISPLAY" not in l and "graphics" not in l)
    return "NEURON: " + (last_line(said) or f"exit status {r.returncode}")[:120] if r.returncode else ""


def ours(a, mech, our_lib, ref, work):
    """(rms, max, reason) of neurosolve's v against NEURON's (ref)."""
    import numpy as np
    v_ref = np.load(ref)
    if not np.all(np.isfinite(v_ref)):  # parameters without values (0: the model's hoc sets them), 0 / 0 ...
        return None, None, "NEURON's v is not finite from t = %g ms (ours not compared)" % (
            DT * int(np.argmax(~np.isfinite(v_ref))))
    ions = json.load(open(ref + ".ions.json"))
    lines = ["all.insert = pas " + mech, "all.g_pas = 1e-4", "all.e_pas = -70"]
    for var, val in ions.items():  # ions other than na, k, ca: NEURON's values
        ion = var[1:] if var.startswith("e") and not var.endswith(("i", "o")) else var[:-1]
        if ion not in ("na", "k", "ca"):
            lines.append(f"all.{var} = {val!r}")
    model = os.path.join(work, mech + ".model")
    open(model, "w").write("\n".join(lines) + "\n")
    swc = os.path.join(work, "soma.swc")
    open(swc, "w").write("1 1 0 0 0 10 -1\n")
    outdir = os.path.join(work, mech + "_ns")
    os.makedirs(outdir, exist_ok=True)
    cmd = [a.neurosolve, "simulate", swc, "--model", model, "--mechanisms", our_lib, "--tstop", str(TSTOP),
           "--dt", str(DT), "--set", f"celsius={CELSIUS}", "--set", f"v_init={VINIT}",
           "--out", outdir + "/"] + sum((["--iclamp", f"soma:{d}:{dur}:{amp}"] for d, dur, amp in STEPS), [])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600)
        set_e = [l for l in lines[3:] if re.match(r"all\.e\w+ =", l)]
        if r.returncode and any(l.split()[0][4:] in r.stderr for l in set_e):
            # an eX where the mechanism writes the concentration (Nernst there, as in NEURON): without it
            open(model, "w").write("\n".join(l for l in lines if l not in set_e) + "\n")
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=600)
    except subprocess.TimeoutExpired:
        return None, None, "neurosolve: timed out"
    if r.returncode:
        return None, None, "neurosolve: " + last_line(r.stderr).replace("neurosolve: simulate: ", "")[:160]
    v = np.load(os.path.join(outdir, "traces.npy"))[:, 1]
    n = min(len(v), len(v_ref))
    if n < 2 or not np.all(np.isfinite(v[:n])) or not np.all(np.isfinite(v_ref[:n])):
        return None, None, "non-finite v (NEURON finite: %s, neurosolve finite: %s)" % (
            bool(np.all(np.isfinite(v_ref))), bool(np.all(np.isfinite(v))))
    d = v[:n] - v_ref[:n]
    return float(np.sqrt(np.mean(d * d))), float(np.max(np.abs(d))), ""


def mech_list(exe, lib):
    r = subprocess.run([exe, "mechanisms", "list", lib, "--json"], capture_output=True, text=True)
    return json.loads(r.stdout)["mechanisms"] if r.returncode == 0 else []


PP = "point process: not run by the harness"
NOTHING = "SUFFIX nothing: functions for hoc, no mechanism to insert"


def mechs_of(a, cache, cpu_key):
    """`mechanisms list --json`'s mechanisms of a CPU-built file, kept in the cache ("list:" and the
    CPU build's key), so that --gpu-only needs no CPU library of a file the cache lists."""
    got = cache.get("list:" + cpu_key)
    if got is None:
        got = mech_list(a.neurosolve, os.path.join(a.libs, cpu_key + ".so"))
        if got:
            cache.put("list:" + cpu_key, got)
    return got


def traces(models, results, a, cache):
    """{(model, path, mech): {"rms", "max", "reason"}}. NEURON's traces are kept in the cache's
    folder (by file content, mechanism and protocol); ours are rerun when neurosolve changes."""
    out = {}
    refs = os.path.join(os.path.dirname(a.cache), "nmodl_corpus_refs")
    os.makedirs(refs, exist_ok=True)
    binary = sha(open(a.neurosolve, "rb").read())
    proto = sha(TRACE_PROTOCOL)[:8]
    workroot = tempfile.mkdtemp(prefix="nmodl_corpus_traces_")
    try:
        for model, files in models:
            ok = [f for f in files if results[f]["cpu"] and results[f]["neuron"] is not False]
            need_nrn, cases = [], []
            for f in ok:
                lib = os.path.join(a.libs, results[f]["cpu_key"] + ".so")
                nothing = re.search(r"\bSUFFIX\s+nothing\b", strip_comments(
                    open(f, "rb").read().decode("latin-1").replace("\r\n", "\n").replace("\r", "\n")))
                for m in mechs_of(a, cache, results[f]["cpu_key"]):
                    if m["kind"] != "density" or nothing:
                        out[(model, f, m["name"])] = {"rms": None, "max": None, "reason": NOTHING if nothing else PP}
                        continue
                    key = f"trace:{proto}:{results[f]['cpu_key']}:{binary}:{m['name']}"
                    if cache.get(key) or a.cached_only:
                        if cache.get(key):
                            out[(model, f, m["name"])] = cache.get(key)
                        continue
                    ref = os.path.join(refs, f"{results[f]['fid']}_{proto}_{m['name']}.npy")
                    cases.append((f, m, lib, key, ref))
                    if not os.path.exists(ref) and not os.path.exists(ref + ".fail") and f not in need_nrn:
                        need_nrn.append(f)
            if not cases:
                continue
            mw = os.path.join(workroot, re.sub(r"\W", "_", model))
            # nrnivmodl of every file NEURON accepts, as the model's users build it: a file's C may need
            # another's (ModelDB 151282's stats.mod calls vecst.mod's cmpdfn: without it nothing loads)
            nlibs = neuron_libs([f for f in files if results[f]["neuron"] is not False], a, mw) if need_nrn else {}
            with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
                def one(case):
                    f, m, lib, key, ref = case
                    if not os.path.exists(ref) and not os.path.exists(ref + ".fail"):
                        nl = nlibs.get(f)
                        why = nl[1] if isinstance(nl, tuple) else neuron_ref(m["name"], nl, m["ions"] or [], ref)
                        if why:
                            open(ref + ".fail", "w").write(why)
                    if os.path.exists(ref + ".fail"):
                        return None, None, open(ref + ".fail").read()
                    w = os.path.join(mw, "run_" + m["name"])
                    os.makedirs(w, exist_ok=True)
                    return ours(a, m["name"], lib, ref, w)
                jobs = {ex.submit(one, c): c for c in cases}
                for fut in concurrent.futures.as_completed(jobs):
                    f, m, _, key, _ = jobs[fut]
                    try:
                        rms, mx, reason = fut.result()
                    except Exception as e:  # reported, not fatal
                        rms, mx, reason = None, None, f"harness: {type(e).__name__}: {e}"[:160]
                    v = {"rms": rms, "max": mx, "reason": reason}
                    out[(model, f, m["name"])] = v
                    cache.put(key, v)
            cache.save()
            print(f"traces: {model} done", file=sys.stderr)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    return out


# ---------------------------------------------------------------------------------------------------
# tables

def pct(n, d):
    return f"{100.0 * n / d:.1f}%" if d else "-"


def report(models, results, tr, a, names):
    out = []
    p = out.append
    distinct = {}
    for _, files in models:
        for f in files:
            distinct.setdefault(results[f]["fid"], results[f])
    D = list(distinct.values())
    acc = [r for r in D if r["neuron"] is not False]
    cpu = [r for r in acc if r["cpu"]]
    gpu = [r for r in acc if r["gpu"]]
    m_cpu = sum(all(results[f]["cpu"] or results[f]["neuron"] is False for f in fs) for _, fs in models)
    m_gpu = sum(all(results[f]["gpu"] or results[f]["neuron"] is False for f in fs) for _, fs in models)
    nfiles = sum(len(fs) for _, fs in models)
    p("| corpus | count |\n|---|---:|")
    p(f"| models | {len(models)} |")
    p(f"| .mod files (in all models / distinct by content) | {nfiles} / {len(D)} |")
    p(f"| accepted by NEURON's nocmodl | {len(acc)} ({pct(len(acc), len(D))}) |")
    p(f"| of those, built by `mechanisms build` for the CPU | **{len(cpu)} ({pct(len(cpu), len(acc))})** |")
    gmeas = [r for r in acc if r["gpu"] is not None]
    if a.gpu and len(gmeas) == len(acc):
        p(f"| of those, built by `mechanisms build --cuda --arch sm_90` | **{len(gpu)} ({pct(len(gpu), len(acc))})** |")
    elif a.gpu:
        cm = [r for r in cpu if r["gpu"] is not None]
        p(f"| of those, built by `mechanisms build --cuda --arch sm_90` | not all measured: **{len(gpu)} of the "
          f"{len(cm)} CPU-built files tried ({pct(len(gpu), len(cm))})**, {len(cpu) - len(cm)} CPU-built not yet tried |")
    p(f"| models with every accepted file built, CPU | **{m_cpu} of {len(models)} ({pct(m_cpu, len(models))})** |")
    if a.gpu:
        g_models = [fs for _, fs in models if all(results[f]["gpu"] is not None for f in fs)]
        p(f"| models with every accepted file built, GPU{'' if len(g_models) == len(models) else f' (of the {len(g_models)} measured)'} "
          f"| {m_gpu} of {len(g_models)} ({pct(m_gpu, len(g_models))}) |")
    if tr is not None:  # distinct (file content, mechanism)
        uniq = {}
        for (model, f, mech), v in tr.items():
            uniq.setdefault((results[f]["fid"], mech), ((model, f, mech), v))
        tr_u = dict(uniq.values())
        dens = [v for v in tr_u.values() if v["reason"] not in (PP, NOTHING)]
        good = [v for v in dens if v["rms"] is not None and v["rms"] <= 1e-6]
        ran = [v for v in dens if v["rms"] is not None]
        npp = sum(v["reason"] == PP for v in tr_u.values())
        traced = len({m for (m, _, _), v in tr.items() if v["reason"] not in (PP, NOTHING)})
        covered = len({m for (m, _, _) in tr})  # models whose every mechanism the harness reached
        rest = "" if traced == len(models) else " (the rest: point processes only)" if covered == len(models) else " (so far)"
        p(f"| models with traces{rest} | {traced} of {len(models)} |")
        p(f"| density mechanisms traced against NEURON (alone with pas) | {len(dens)}: {len(ran)} ran, "
          f"**{len(good)} within 1e-6 mV RMS** |")
        p(f"| point processes (not run by the harness) | {npp} |")
        p(f"| `SUFFIX nothing` files (functions for hoc: nothing to insert) | {len(tr_u) - len(dens) - npp} |")
    # constructs
    failing = [r for r in acc if r["class"]]
    blocking = {r["class"] for r in failing}
    rows = {}
    for r in acc:
        for c in r["scan"]:
            rows.setdefault(c, [0, 0, 0])[0] += 1
    for r in failing:
        row = rows.setdefault(r["class"], [0, 0, 0])
        row[1] += 1
        others = (set(r["scan"]) & blocking) - {r["class"]}
        row[2] += not others
    p("\nConstructs, over the files NEURON accepts: *uses* = files whose text (comments removed) has it; "
      "*blocks* = files our build refuses first at it (our message, classified); *alone* = of those, the "
      "files that use no other construct that blocks some file.\n")
    p("| construct | uses | blocks | alone |\n|---|---:|---:|---:|")
    for c, (u, b, al) in sorted(rows.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0])):
        p(f"| {c} | {u} | {b} | {al} |")
    # per model
    p("\n| model | files | NEURON | CPU | GPU | traces within 1e-6 mV / run | what blocks the rest |")
    p("|---|---:|---:|---:|---:|---:|---|")
    for model, files in models:
        rs = [results[f] for f in files]
        ac = [r for r in rs if r["neuron"] is not False]
        cls = {}
        for r in ac:
            if r["class"]:
                cls[r["class"]] = cls.get(r["class"], 0) + 1
        t = [v for (m, _, _), v in (tr or {}).items() if m == model and v["rms"] is not None]
        tgood = sum(v["rms"] <= 1e-6 for v in t)
        blockers = ", ".join(f"{c} ({n})" for c, n in sorted(cls.items(), key=lambda kv: -kv[1]))
        gcol = sum(bool(r["gpu"]) for r in ac) if a.gpu and all(r["gpu"] is not None for r in ac) else "-"
        tcol = f"{tgood} / {len(t)}" if tr is not None and any(
            m == model and v["reason"] not in (PP, NOTHING) for (m, _, _), v in tr.items()) else "-"
        p(f"| {names.get(model, model)} | {len(rs)} | {len(ac)} | {sum(bool(r['cpu']) for r in ac)} | "
          f"{gcol} | {tcol} | "
          f"{blockers} |")
    if tr is not None:
        misses = [(k, v) for k, v in tr_u.items() if v["rms"] is None or v["rms"] > 1e-6]
        reasons = {}
        for (model, f, mech), v in misses:
            why = v["reason"][:90] if v["reason"] else "ran, differs from NEURON (RMS > 1e-6 mV)"
            reasons.setdefault(why, []).append(f"{os.path.basename(f)}:{mech}")
        p("\nTrace misses (mechanism inserted alone with pas; RMS of v over every step against NEURON):\n")
        p("| reason | count | mechanisms (file:mechanism) |\n|---|---:|---|")
        for why, ms in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            p(f"| {why.replace('|', '/')} | {len(ms)} | {', '.join(ms[:12])}{' ...' if len(ms) > 12 else ''} |")
        over = sorted(((v["rms"], f"{os.path.basename(f)}:{m}") for (mo, f, m), v in tr_u.items()
                       if v["rms"] is not None and v["rms"] > 1e-6), reverse=True)
        if over:
            p("\nRan but differ (RMS > 1e-6 mV): " + ", ".join(f"{n} {r:.2e}" for r, n in over[:40]))
    return "\n".join(out) + "\n"


def details(models, results, tr, names):
    out = []
    for model, files in models:
        out.append(f"\n### {names.get(model, model)}\n\n| file | NEURON | CPU | GPU | blocked at | message |\n|---|---|---|---|---|---|")
        for f in files:
            r = results[f]
            yn = lambda x: "-" if x is None else "yes" if x else "no"
            msg = r["cpu_msg"] if not r["cpu"] else r["gpu_msg"] if r["gpu"] is False else ""
            tmsg = "; ".join(f"{m}: " + (f"RMS {v['rms']:.1e} mV" if v["rms"] is not None else v["reason"])
                             for (mo, ff, m), v in (tr or {}).items() if ff == f and mo == model)
            out.append(f"| {os.path.relpath(f, os.path.dirname(files[0]) if len(files) == 1 else os.path.commonpath(files))} | "
                       f"{yn(r['neuron'])} | {yn(r['cpu'])} | {yn(r['gpu'])} | {r['class']} | "
                       f"{(msg + ('; ' if msg and tmsg else '') + tmsg).replace('|', '/')[:300]} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--neurosolve", default="build/neurosolve")
    ap.add_argument("--corpus", help="a folder of model folders (validation/nmodl_corpus_materialise.py)")
    ap.add_argument("--list", default=os.path.join(ROOT, "validation", "nmodl_corpus_models.txt"),
                    help="the model list, for the models' names and order with --corpus")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--gpu", action="store_true", help="also build for the GPU (nvcc, sm_90)")
    ap.add_argument("--gpu-only", action="store_true",
                    help="the GPU builds alone, for a machine with nvcc and without NEURON: NEURON's acceptance, the "
                         "CPU builds and the mechanisms' lists from the cache (what it lacks is built), no traces")
    ap.add_argument("--traces", action="store_true", help="compare the density mechanisms' traces with NEURON")
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/neurosolve/nmodl_corpus_results.json"))
    ap.add_argument("--cached-only", action="store_true",
                    help="GPU builds and traces: report only what the cache holds (builds and runs nothing new)")
    ap.add_argument("--merge-cache", action="append", help="take the results of another cache file too")
    ap.add_argument("--markdown", help="write the tables to this file (default: standard output)")
    ap.add_argument("--details", help="write a table per file to this file")
    ap.add_argument("--quick-cc", action="store_true",
                    help="compile at -O0 where `mechanisms build` asks -O3 (cc and nvcc wrappers): whether the "
                         "compilers accept the generated code does not depend on it, and the C is IEEE-strict "
                         "(-ffp-contract=off, no fast-math) either way; for a machine without time to spare")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    a.neurosolve = os.path.abspath(a.neurosolve)
    a.libs = os.path.join(os.path.dirname(a.cache), "nmodl_corpus_libs")
    os.makedirs(a.libs, exist_ok=True)
    a.compilers = quick_compilers(os.path.join(os.path.dirname(a.cache), "nmodl_corpus_bin")) if a.quick_cc else None
    a.mode = "-O0" if a.quick_cc else ""
    names, dirs = {}, list(a.dirs)
    if a.corpus:
        order = []
        if os.path.exists(a.list):
            for line in open(a.list):
                if line.strip() and not line.startswith("#"):
                    cols = [c.strip() for c in line.split("|", 5)]
                    order.append(cols[0])
                    names[os.path.join(a.corpus, cols[0])] = f"{cols[5]} ({cols[1]})" if "/" in cols[1] else cols[5]
        present = sorted(os.listdir(a.corpus))
        dirs += [os.path.join(a.corpus, m) for m in order if m in present]
        dirs += [os.path.join(a.corpus, m) for m in present if m not in order and os.path.isdir(os.path.join(a.corpus, m))]
    models = []
    for d in dirs:
        files = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.lower().endswith(".mod"))
        if files:
            models.append((d, files))
    cache = Cache(a.cache)
    for other in a.merge_cache or []:  # results of another run (e.g. a --gpu pass run beside a --traces pass)
        for k, v in Cache(other).data.items():
            cache.data.setdefault(k, v)
    nrn = nocmodl_path()
    if a.gpu_only:
        a.gpu, a.traces = True, False
    a.nrn_known = {k.split(":", 2)[2]: v for k, v in sorted(cache.data.items()) if k.startswith("nrn:")}
    results = {}
    todo = [f for _, fs in models for f in fs]
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = {ex.submit(examine, f, a, cache, nrn): f for f in todo}
        for i, fut in enumerate(concurrent.futures.as_completed(futs)):
            res, new = fut.result()
            results[futs[fut]] = res
            for k, v in new.items():
                cache.put(k, v)
            if new:
                cache.save()
            if i % 20 == 19:
                print(f"{i + 1} of {len(todo)} files", file=sys.stderr)
    cache.save()
    if a.gpu:
        gpu_pass(models, results, a, cache)
    tr = traces(models, results, a, cache) if a.traces else None
    cache.save()  # the mechanisms' lists too
    text = report(models, results, tr, a, names)
    if a.details:
        open(a.details, "w").write(details(models, results, tr, names))
    if a.markdown:
        open(a.markdown, "w").write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
