#!/usr/bin/env python3
"""Simulate real morphologies in NEURON and in neurosolve and compare.

The protocol (docs/simulation.md): each SWC file loaded through NEURON's
Import3d, nseg per section by the d_lambda rule (0.1 at 100 Hz, Ra 35.4,
cm 1: the same rule and numbers as neurosolve's default discretisation),
NEURON's hh in every section with its default parameters, celsius 6.3,
v_init -65 mV, dt 0.025 ms, fixed step (secondorder 0), 100 ms, an IClamp
at the root section's middle (soma(0.5)) from 5 ms for 90 ms with an
amplitude proportional to the cell's membrane area (AMP_PER_AREA), so that
every cell spikes repeatedly.

Recorded: v at the root section's middle and at the middle of three other
sections (index n/3, 2n/3 and n-1 of Import3d's section list), each named by
the SWC id of the section's first own point (the key neurosolve's
ns_section_info.first_point_id carries). Soma spike times are upward
crossings of -20 mV at soma(0.5), linearly interpolated between the two
steps (the same rule as neurosolve's).

  --refs DIR           write DIR/<name>.csv: the traces every 0.1 ms, the
                       protocol and NEURON's spike times (tests/sim/test_cable_neuron.c
                       reads them; tests/data/neuron_traces/ is made this way)
  --neurosolve BIN     also run `BIN simulate` with the same protocol and
                       print per morphology: spikes, the largest spike-time
                       difference and the RMS voltage difference per site
  --usetable 0|1       hh's rate table (default 1, NEURON's default)
  --spike-times netcon compare NEURON's NetCon.record times at soma(0.5)
                       (threshold -20 mV) with `simulate --spike-times netcon`
                       instead of the interpolated crossings of both

Usage: python3 validation/neuron_sim_compare.py [--refs DIR] [--neurosolve BIN] FILE.swc...
Each file runs in its own NEURON process (Import3d section names collide).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

DT = 0.025
TSTOP = 100.0
DEL, DUR = 5.0, 90.0
AMP_PER_AREA = 1.5e-4  # [nA/um^2]: 3 nA for a cell of 20,000 um^2 (repetitive firing)
THRESHOLD = -20.0
DECIMATE = 4  # keep every 4th step: 0.1 ms


def crossings(t, v, thr=THRESHOLD):
    out = []
    for k in range(1, len(v)):
        if v[k - 1] < thr <= v[k]:
            out.append(t[k - 1] + (t[k] - t[k - 1]) * (thr - v[k - 1]) / (v[k] - v[k - 1]))
    return out


def run_neuron(path, usetable):
    """One morphology in NEURON (called in a child process). Returns a dict."""
    from neuron import h
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(path)
    gui = h.Import3d_GUI(reader, 0)
    gui.instantiate(None)
    byname = {}
    for sec in h.allsec():
        byname[sec.name()] = sec
    secs = []  # (key, section) in Import3d order
    for i in range(int(reader.sections.count())):
        isec = reader.sections.object(i)
        if isec.is_subsidiary:
            continue
        ref = h.ref("")
        gui.name(isec, ref)
        nm = ref[0] if "[" in ref[0] else ref[0] + "[0]"
        if nm not in byname:
            continue  # removed by chk_valid
        secs.append((int(reader.id.x[int(isec.id)]), byname[nm]))
    area = 0.0
    nseg = 0
    for sec in h.allsec():
        sec.Ra = 35.4
        sec.cm = 1.0
        try:  # NEURON's d_lambda rule; lambda_f divides by zero on zero-length sections
            sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
        except RuntimeError:
            sec.nseg = 1
        sec.insert("hh")
        nseg += sec.nseg
    for sec in h.allsec():
        for seg in sec:
            area += seg.area()
    h.celsius = 6.3
    h.usetable_hh = usetable
    h.dt = DT
    root = secs[0][1]
    amp = round(AMP_PER_AREA * area, 3)
    stim = h.IClamp(root(0.5))
    stim.delay, stim.dur, stim.amp = DEL, DUR, amp
    n = len(secs)
    picks = [0] + [k for k in (n // 3, (2 * n) // 3, n - 1) if k > 0]
    seen, sites = set(), []
    for k in picks:
        if k not in seen:
            seen.add(k)
            sites.append((secs[k][0], 0.5, secs[k][1]))
    tv = h.Vector().record(h._ref_t)
    vecs = [h.Vector().record(s(x)._ref_v) for _, x, s in sites]
    netcon = h.NetCon(root(0.5)._ref_v, None, sec=root)  # NEURON's own spike times (--spike-times netcon)
    netcon.threshold = -20.0
    nc_times = h.Vector()
    netcon.record(nc_times)
    h.finitialize(-65.0)
    steps = int(round(TSTOP / DT))
    for _ in range(steps):
        h.fadvance()
    t = list(tv)
    traces = [list(v) for v in vecs]
    return {"file": os.path.basename(path), "amp": amp, "area": area, "nseg": nseg,
            "sections": len(secs), "sites": [[k, x] for k, x, _ in sites], "t": t,
            "traces": traces, "spikes": crossings(t, traces[0]), "netcon_spikes": list(nc_times),
            "usetable": usetable,
            "neuron": h.nrnversion(5) if hasattr(h, "nrnversion") else "?"}


def neuron_in_child(path, usetable):
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path, "--usetable",
                        str(usetable)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"NEURON failed on {path}:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def write_ref(d, out_dir):
    name = os.path.splitext(d["file"])[0] + ("" if d["usetable"] else "_usetable0")
    path = os.path.join(out_dir, name + ".csv")
    with open(path, "w") as f:
        f.write(f"# NEURON {d['neuron']} reference traces (validation/neuron_sim_compare.py)\n")
        f.write(f"# file = {d['file']}\n")
        f.write(f"# protocol: hh everywhere (NEURON defaults), Ra 35.4, cm 1, d_lambda 0.1 at 100 Hz, "
                f"celsius 6.3, v_init -65, dt {DT}, tstop {TSTOP}, usetable_hh {d['usetable']}\n")
        f.write(f"# iclamp = {DEL} {DUR} {d['amp']}\n")
        f.write(f"# nseg = {d['nseg']}\n")
        f.write(f"# area = {d['area']:.6f}\n")
        f.write("# sites = " + " ".join(f"{k}:{x}" for k, x in d["sites"]) + "\n")
        f.write("# spikes = " + " ".join(f"{s:.6f}" for s in d["spikes"]) + "\n")
        f.write("t," + ",".join(f"v_{k}_{x}" for k, x in d["sites"]) + "\n")
        for i in range(0, len(d["t"]), DECIMATE):
            f.write(f"{d['t'][i]:.4f}," + ",".join(f"{tr[i]:.5f}" for tr in d["traces"]) + "\n")
    return path


def run_neurosolve(binary, path, d, usetable, spike_times="interpolated"):
    with tempfile.TemporaryDirectory() as tmp:
        par = os.path.join(tmp, "params.txt")
        with open(par, "w") as f:
            f.write(f"usetable_hh = {usetable}\ndt = {DT}\ntstop = {TSTOP}\ncelsius = 6.3\n")
        cmd = [binary, "simulate", path, "--params", par, "--iclamp", f"soma:{DEL}:{DUR}:{d['amp']}",
               "--out", os.path.join(tmp, "run"), "--json", "--spike-times", spike_times]
        for k, x in d["sites"]:
            cmd += ["--record", f"swc={k}:{x}"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"neurosolve failed on {path}: {r.stderr.strip()}")
        summary = json.loads(r.stdout)
        rows = []
        with open(os.path.join(tmp, "run_traces.csv")) as f:
            f.readline()
            for line in f:
                rows.append([float(x) for x in line.split(",")])
        spikes = summary["first_cells"][0]["spikes"]
        return rows, spikes


def compare(d, rows, spikes):
    nsites = len(d["sites"])
    rms = []
    for k in range(nsites):
        s = 0.0
        n = min(len(rows), len(d["t"]))
        for i in range(n):
            s += (rows[i][1 + k] - d["traces"][k][i]) ** 2
        rms.append(math.sqrt(s / n))
    if len(spikes) != len(d["spikes"]):
        dspike = float("inf")
    else:
        dspike = max((abs(a - b) for a, b in zip(spikes, d["spikes"])), default=0.0)
    return rms, dspike


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--refs")
    ap.add_argument("--neurosolve")
    ap.add_argument("--usetable", type=int, default=1)
    ap.add_argument("--spike-times", choices=("interpolated", "netcon"), default="interpolated")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(run_neuron(a.files[0], a.usetable)))
        return 0
    bad = 0
    if a.neurosolve:
        print("| morphology | compartments (nseg) | amp [nA] | spikes NEURON / neurosolve | max spike-time "
              "difference [ms] | RMS difference per site [mV] |")
        print("|---|---|---|---|---|---|")
    for path in a.files:
        d = neuron_in_child(path, a.usetable)
        if a.refs:
            os.makedirs(a.refs, exist_ok=True)
            print(f"wrote {write_ref(d, a.refs)} ({len(d['spikes'])} spikes)", file=sys.stderr)
        if a.neurosolve:
            rows, spikes = run_neurosolve(a.neurosolve, path, d, a.usetable, a.spike_times)
            if a.spike_times == "netcon":
                d["spikes"] = d["netcon_spikes"]
            rms, dspike = compare(d, rows, spikes)
            ok = dspike <= 0.05 and max(rms) <= 0.1
            bad += not ok
            print(f"| {d['file']} | {d['nseg']} | {d['amp']} | {len(d['spikes'])} / {len(spikes)} | "
                  f"{dspike:.2e} | " + " ".join(f"{r:.2e}" for r in rms) + f" |{'' if ok else ' FAIL'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
