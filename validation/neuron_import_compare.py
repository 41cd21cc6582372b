#!/usr/bin/env python3
"""A NEURON model against its import into neurosolve (docs/neuron_import.md).

    python3 validation/neuron_import_compare.py --neurosolve build/neurosolve \
        --mod data/mechanisms/bbp validation/models/l5pc_hay_neuron.py

SETUP is a Python file that builds a model in NEURON: it runs with `h` (neuron.h) and ROOT
(the repository) given, after the .mod files of every --mod folder are compiled by nrnivmodl
and loaded (NEURON 9 needs two additions to the BBP files: validation/nmodl_neuron_traces.py's
compile_bbp; neurosolve builds the unchanged files with `mechanisms build`). NEURON's own
mechanisms (pas, hh, ExpSyn, Exp2Syn) are built into both: give no folder holding them; the
copies of NEURON's files in data/mechanisms/electrode (SEClamp), data/mechanisms/vclamp (VClamp)
and data/mechanisms/events (IntFire1/2/4, NetStim) are built by neurosolve only (NEURON has them
built in). It may set
`sections` (a list) or `cell` (an object with an `all` SectionList); otherwise every section
is taken. Then, in one NEURON process: neurosolve.from_neuron writes the model's files (with
the library, so that every mechanism is checked), and NEURON runs to h.tstop with its fixed
step, recording v at the root section's middle and its NetCon spike times (threshold -20 mV).
neurosolve runs the written files with `simulate --spike-times netcon`. Printed: sections,
segments, the geometry check, spikes of both, the largest spike-time difference, the RMS of
the soma traces, the events (every captured spike source's spikes, NetStims and IntFires: NEURON's
by a NetCon each, neurosolve's from simulate's raster, source by source), the wall times. Exit 1
when the spike counts differ, a spike (the soma's or a source's) is more than 0.05 ms off or the
RMS exceeds 0.05 mV (the issue's targets).

--backend cuda runs `simulate` on the GPU (the library built with `mechanisms build --cuda`).
--keep DIR keeps the written files (NAME.swc, .model, .params, .command) and the library.
--cpu-only REASON (with --refs) marks the reference as one the GPU replay skips, giving REASON.
--refs DIR writes the files there with NAME_neuron.csv (NEURON's soma trace every 0.1 ms, its
spike times, the simulate arguments with LIB for the library, the --mod files that build it):
tests/data/neuron_import/ is made this way. --mod takes folders (their .mod files) or files.
The neurosolve package is imported from --python (default build/python).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "validation"))
THRESHOLD = -20.0


def mod_files(mods):
    """The .mod files of --mod arguments: folders (their .mod files) and single files."""
    out = []
    for d in mods:
        out += [d] if os.path.isfile(d) else [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".mod")]
    return out


def build_library(neurosolve, mods, lib, cuda=False):
    """`neurosolve mechanisms build` of the .mod files of mods (unchanged, copied to LIB.src/)
    into lib (with the CUDA code for the GPU loop where cuda); returns lib's absolute path."""
    lib = os.path.abspath(lib)
    src = lib + ".src"
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    for f in mod_files(mods):
        shutil.copy(f, src)
    r = subprocess.run([neurosolve, "mechanisms", "build", src, "-o", lib] + (["--cuda"] if cuda else []),
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"neurosolve mechanisms build: {r.stderr.strip()}")
    return lib


def neuron_own(path):
    """NEURON's own mechanisms, built into NEURON: data/mechanisms/electrode (stim.mod, svclmp.mod),
    data/mechanisms/vclamp (vclmp.mod) and the IntFires and netstim.mod of data/mechanisms/events,
    copies of NEURON's files that neurosolve builds."""
    d, f = os.path.split(os.path.realpath(path))
    return d in (os.path.realpath(os.path.join(ROOT, "data/mechanisms/electrode")),
                 os.path.realpath(os.path.join(ROOT, "data/mechanisms/vclamp"))) or \
        (d == os.path.realpath(os.path.join(ROOT, "data/mechanisms/events")) and
         (f.startswith("intfire") or f == "netstim.mod"))


def compile_neuron(mods, work):
    """nrnivmodl in `work` on the files of mods (but NEURON's own); data/mechanisms/bbp's with
    compile_bbp's additions."""
    from nmodl_neuron_traces import compile_bbp
    bbp = os.path.realpath(os.path.join(ROOT, "data/mechanisms/bbp"))
    files = [f for f in mod_files(mods) if not neuron_own(f)]
    if not files:
        return
    extra = [f for f in files if os.path.realpath(os.path.dirname(f)) != bbp]
    if len(extra) < len(files):
        compile_bbp(work, extra)
        return
    for f in extra:
        shutil.copy(f, work)
    subprocess.run(["nrnivmodl"], cwd=work, check=True, stdout=subprocess.DEVNULL)


def child(a):
    import neuron
    from neuron import h
    import neurosolve as ns
    neuron.load_mechanisms(a.child)
    space = {"h": h, "ROOT": ROOT, "__name__": "setup"}
    with open(a.setup) as f:
        exec(compile(f.read(), a.setup, "exec"), space)
    sections = space.get("sections", space.get("cell"))
    t0 = time.perf_counter()
    r = ns.from_neuron(sections, out=a.files, name=a.name, library=a.lib, strict=False)
    t_import = time.perf_counter() - t0
    secs = list(h.allsec()) if sections is None else (list(sections.all) if hasattr(sections, "all")
                                                       else list(sections))
    root = [s for s in secs if s.parentseg() is None][0]
    tv = h.Vector().record(h._ref_t)
    vv = h.Vector().record(root(0.5)._ref_v)
    nc = h.NetCon(root(0.5)._ref_v, None, sec=root)
    nc.threshold = THRESHOLD
    sp = h.Vector()
    nc.record(sp)
    # the events: every captured spike source's spikes (NetStims, IntFires: `simulate`'s raster)
    pre = {nc.pre().hname(): nc.pre() for nc in h.List("NetCon") if nc.pre() is not None}
    events = {}
    for name, label in r.sources.items():
        if name in pre:
            events[label] = (h.NetCon(pre[name], None), h.Vector())
            events[label][0].record(events[label][1])
    h.finitialize(h.v_init)
    steps = int(round(h.tstop / h.dt))
    t0 = time.perf_counter()
    for _ in range(steps):
        h.fadvance()
    wall = time.perf_counter() - t0
    return {"command": r.command(a.neurosolve, a.lib), "root": r.sections[root.name()], "sections": len(secs),
            "nseg": r.nseg, "geometry": r.geometry, "not_captured": r.not_captured, "t": list(tv),
            "v": list(vv), "spikes": list(sp), "events": {k: list(v[1]) for k, v in events.items()},
            "source_order": source_order(r.texts.get("network", "")), "wall": wall, "import_s": t_import, "neuron": h.nrnversion(5)}


def source_order(net):
    """A network file's source names in the order `simulate`'s raster numbers them."""
    return [w[1] for w in (ln.split() for ln in net.splitlines())
            if len(w) > 1 and w[0] in ("train", "poisson", "source", "detector")]


def raster(path, order):
    """`simulate`'s spikes.csv (source, cell, time) as source name -> times."""
    out = {name: [] for name in order}
    with open(path) as f:
        f.readline()
        for line in f:
            k, _, t = line.split(",")
            if int(k) < len(order):  # without a network file, the cells' own detectors only
                out[order[int(k)]].append(float(t))
    return out


def compare_events(want, got):
    """NEURON's spike times per source against neurosolve's: (spikes, largest difference or inf)."""
    n, worst = 0, 0.0
    for label, times in want.items():
        mine = got.get(label, [])
        n += len(times)
        if len(mine) != len(times):
            return n, float("inf")
        worst = max([worst] + [abs(x - y) for x, y in zip(times, mine)])
    return n, worst


def write_refs(a, d, cmd):
    """DIR/NAME_neuron.csv: NEURON's soma trace every 0.1 ms and its NetCon spike times, next to
    the written files (tests/neuron/test_neuron_import.py replays them without NEURON)."""
    every = max(1, int(round(0.1 / (d["t"][1] - d["t"][0]))))
    rel = ["LIB" if x.endswith("_mechanisms.so") else
           os.path.relpath(x, a.refs) if os.path.isabs(x) and x.startswith(os.path.abspath(a.refs)) else x
           for x in d["command"][1:]]
    with open(os.path.join(a.refs, a.name + "_neuron.csv"), "w") as f:
        f.write(f"# NEURON {d['neuron']} reference: v at the root section's middle and NetCon spike times\n")
        env = "".join(f"{k}={'CHECKOUT' if os.path.exists(v) else v} " for k, v in sorted(os.environ.items())
                      if k.startswith("NS_"))  # the setup's choices (a source checkout's path left out)
        f.write(f"# made by: {env}python3 validation/neuron_import_compare.py --refs DIR {os.path.relpath(a.setup, ROOT)}"
                + "".join(f" --mod {m}" for m in a.mod) + f" --name {a.name} --neurosolve BIN"
                + (f" --cpu-only '{a.cpu_only}'" if a.cpu_only else "") + "\n")
        f.write(f"# args = {' '.join(rel)}\n")
        if a.mod:  # LIB in args: `neurosolve mechanisms build` of these files (paths from the repository)
            f.write("# mod = " + " ".join(os.path.relpath(os.path.abspath(m), ROOT) for m in mod_files(a.mod)) + "\n")
        if a.cpu_only:
            f.write(f"# cpu_only = {a.cpu_only}\n")
        f.write(f"# root = {d['root']}\n")
        f.write(f"# record_every = {every}\n")
        f.write("# spikes = " + " ".join(repr(x) for x in d["spikes"]) + "\n")
        for label, times in d["events"].items():  # each source's spikes (events_NAME: NAME.net's source)
            f.write(f"# events_{label} = " + " ".join(repr(x) for x in times) + "\n")
        f.write("t,v\n")
        for i in range(0, len(d["t"]), every):
            f.write(f"{d['t'][i]:.4f},{d['v'][i]:.6f}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setup")
    ap.add_argument("--neurosolve", required=True)
    ap.add_argument("--mod", action="append", default=[])
    ap.add_argument("--name", default="cell")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--keep")
    ap.add_argument("--refs")
    ap.add_argument("--cpu-only", metavar="REASON", help="references: the GPU replay skips this model (REASON)")
    ap.add_argument("--python", default=os.path.join(ROOT, "build", "python"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--files", help=argparse.SUPPRESS)
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a)))
        return 0
    tmp = tempfile.mkdtemp(prefix="ns_import_")
    try:
        work = a.refs or a.keep or tmp
        os.makedirs(work, exist_ok=True)
        nrn = os.path.join(tmp, "nrn")
        os.makedirs(nrn)
        lib = None
        if a.mod:  # neurosolve builds the unchanged files; NEURON compiles its copy
            lib = build_library(a.neurosolve, a.mod, os.path.join(tmp if a.refs else work, a.name + "_mechanisms.so"),
                                a.backend == "cuda")
            compile_neuron(a.mod, nrn)
        env = dict(os.environ, PYTHONPATH=a.python + os.pathsep + os.environ.get("PYTHONPATH", ""))
        files = os.path.abspath(work)
        cmd = [sys.executable, os.path.abspath(__file__), a.setup, "--neurosolve", a.neurosolve, "--child", nrn,
               "--files", files, "--name", a.name] + (["--lib", lib] if lib else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            print(f"NEURON side failed:\n{r.stderr[-3000:]}", file=sys.stderr)
            return 1
        d = json.loads(r.stdout.strip().splitlines()[-1])
        prefix = os.path.join(tmp, "run")
        cmd = d["command"] + ["--spike-times", "netcon", "--record", f"swc={d['root']}:0.5", "--out", prefix,
                              "--backend", a.backend, "--json", "--no-progress"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"neurosolve failed ({' '.join(cmd)}):\n{r.stderr.strip()}", file=sys.stderr)
            return 1
        spikes = json.loads(r.stdout)["first_cells"][0]["spikes"]
        with open(prefix + "_traces.csv") as f:
            f.readline()
            v = [float(line.split(",")[1]) for line in f]
        n = min(len(v), len(d["v"]))
        rms = math.sqrt(sum((v[i] - d["v"][i]) ** 2 for i in range(n)) / n)
        same = len(spikes) == len(d["spikes"])
        dspike = max((abs(x - y) for x, y in zip(spikes, d["spikes"])), default=0.0) if same else float("inf")
        n_ev, dev = compare_events(d["events"], raster(prefix + "_spikes.csv", d["source_order"]))
        ok = same and dspike <= 0.05 and rms <= 0.05 and dev <= 0.05 and not d["not_captured"]
        print(f"NEURON {d['neuron']}: {os.path.basename(a.setup)}: {d['sections']} sections, {d['nseg']} segments; "
              f"written files against NEURON's sections: largest relative difference {d['geometry']:.1e}")
        for m in d["not_captured"][:10]:
            print(f"not captured: {m}")
        if len(d["not_captured"]) > 10:
            print(f"not captured: ... {len(d['not_captured']) - 10} more")
        print(f"spikes NEURON / neurosolve: {len(d['spikes'])} / {len(spikes)}; largest spike-time difference "
              f"{dspike:.2e} ms; soma RMS {rms:.2e} mV over {d['t'][n - 1]:.0f} ms")
        if d["events"]:
            print(f"events: {len(d['events'])} sources, {n_ev} spikes of NEURON; largest spike-time difference "
                  f"{dev:.2e} ms")
        print(f"wall: NEURON {d['wall']:.1f} s (fadvance loop), neurosolve {wall:.1f} s (simulate, {a.backend}), "
              f"from_neuron {d['import_s']:.1f} s")
        print("command: " + " ".join(d["command"]))
        if a.refs:
            write_refs(a, d, cmd)
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
