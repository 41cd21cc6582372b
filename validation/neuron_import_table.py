#!/usr/bin/env python3
"""The ten-model table of docs/neuron_import.md: real NEURON models built as their authors do,
imported by neurosolve.from_neuron and run by both (validation/neuron_import_compare.py per row).

    python3 validation/neuron_import_table.py --neurosolve build/neurosolve \
        --modeldb DIR --bluepyopt DIR [--only NAME ...] [--refs DIR] [--backend cuda] [-j N]

--modeldb DIR holds ModelDB checkouts named by accession (DIR/2488, DIR/139653: `git clone
https://github.com/ModelDBRepository/2488 DIR/2488`), --bluepyopt a checkout of
BlueBrain/BluePyOpt (and `pip install bluepyopt`). Rows whose sources are missing are listed
as skipped. Each row runs neuron_import_compare.py (NEURON's fixed step against `simulate` on
the files from_neuron wrote, NetCon spike times at the soma) and the table is printed in
Markdown: model, sections / segments, spikes NEURON / neurosolve, largest spike-time
difference, soma RMS, wall times; exit 1 when a row misses the targets (0.05 ms, 0.05 mV) or
fails. --refs DIR writes each row's files and NEURON's reference to DIR/NAME (for the GPU
replay: tests/neuron/test_neuron_import.py BIN ROOT cuda DIR/NAME, docs/neuron_import.md).
--backend cuda runs neurosolve's side on the GPU (the table's GPU column); -j N runs N rows at
once (each row's NEURON and neurosolve runs are one process each); rows print in table order.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "validation", "models")

# name, setup file, environment, mechanism folders ({modeldb}, {bluepyopt} substituted), source kind
ROWS = [
    ("hay2011_cell1", "hay_modeldb_139653.py", {"NS_MODELDB_139653": "{modeldb}/139653"},
     ["{modeldb}/139653/mod"], "modeldb"),
    ("hay2011_cell2", "hay_modeldb_139653.py", {"NS_MODELDB_139653": "{modeldb}/139653", "NS_HAY_MORPH": "cell2.asc"},
     ["{modeldb}/139653/mod"], "modeldb"),
    ("mainen1996_l5", "mainen_modeldb_2488.py", {"NS_MODELDB_2488": "{modeldb}/2488", "NS_MAINEN_FIG": "fig1d"},
     ["{modeldb}/2488"], "modeldb"),
    ("mainen1996_l3", "mainen_modeldb_2488.py", {"NS_MODELDB_2488": "{modeldb}/2488", "NS_MAINEN_FIG": "fig1c"},
     ["{modeldb}/2488"], "modeldb"),
    ("mainen1996_stellate", "mainen_modeldb_2488.py", {"NS_MODELDB_2488": "{modeldb}/2488", "NS_MAINEN_FIG": "fig1b"},
     ["{modeldb}/2488"], "modeldb"),
    ("mainen1996_aspiny", "mainen_modeldb_2488.py", {"NS_MODELDB_2488": "{modeldb}/2488", "NS_MAINEN_FIG": "fig1a"},
     ["{modeldb}/2488"], "modeldb"),
    ("bpo_tc", "bluepyopt_examples.py", {"NS_BLUEPYOPT": "{bluepyopt}", "NS_BPO_CELL": "tc"},
     ["{bluepyopt}/examples/thalamocortical-cell/mechanisms"], "bluepyopt"),
    ("bpo_simplecell", "bluepyopt_examples.py", {"NS_BLUEPYOPT": "{bluepyopt}", "NS_BPO_CELL": "simplecell"}, [],
     "bluepyopt"),
    ("bpo_expsyn", "bluepyopt_examples.py", {"NS_BLUEPYOPT": "{bluepyopt}", "NS_BPO_CELL": "expsyn"}, [], "bluepyopt"),
    ("l5pc_bbp_seg10", "l5pc_hay_neuron.py", {"NS_HAY_SEGLEN": "10"}, ["data/mechanisms/bbp"], None),
    ("stylized", "stylized_neuron.py", {}, [], None),
    ("stylized_clamp", "stylized_clamp_neuron.py", {}, ["data/mechanisms/electrode/svclmp.mod"], None),
    ("stylized_events", "stylized_events_neuron.py", {},
     ["data/mechanisms/events/intfire1.mod", "data/mechanisms/events/intfire2.mod"], None),
    ("stylized_noise", "stylized_noise_neuron.py", {}, ["data/mechanisms/events/netstim.mod"], None),
    ("stylized_vclamp", "stylized_vclamp_neuron.py", {}, ["data/mechanisms/vclamp/vclmp.mod"], None),
]
# rows whose mechanisms the GPU loop refuses (skipped with --backend cuda; --refs marks them): none now
CPU_ONLY = {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--neurosolve", required=True)
    ap.add_argument("--modeldb")
    ap.add_argument("--bluepyopt")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--refs")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--python", default=os.path.join(ROOT, "build", "python"))
    a = ap.parse_args()
    src = {"modeldb": a.modeldb, "bluepyopt": a.bluepyopt}
    print(f"| model | sections / segments | spikes NEURON / neurosolve | max spike-time difference [ms] | "
          f"soma RMS [mV] | events: sources, spikes, max difference [ms] | wall NEURON / simulate ({a.backend}) [s] |")
    print("|---|---|---|---|---|---|---|")
    rows = [r for r in ROWS if not a.only or r[0] in a.only]

    def run(row):
        name, setup, env, mods, kind = row
        if kind and not src[kind]:
            return f"skipped: no --{kind}", None
        if a.backend == "cuda" and name in CPU_ONLY:
            return f"skipped on the GPU: {CPU_ONLY[name]}", None
        sub = {k: v for k, v in src.items() if v}
        e = dict(os.environ, **{k: v.format(**sub) for k, v in env.items()})
        cmd = [sys.executable, os.path.join(ROOT, "validation", "neuron_import_compare.py"), "--neurosolve",
               a.neurosolve, "--python", a.python, "--name", name, "--backend", a.backend,
               os.path.join(MODELS, setup)]
        for m in mods:
            cmd += ["--mod", os.path.join(ROOT, m.format(**sub)) if not m.startswith("{") else m.format(**sub)]
        if a.refs:
            cmd += ["--refs", os.path.join(a.refs, name)] + (["--cpu-only", CPU_ONLY[name]] if name in CPU_ONLY else [])
        return None, subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=ROOT)

    bad = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for (name, *_), (why, r) in zip(rows, pool.map(run, rows)):
            if r is None:
                print(f"| {name} | {why} | | | | | |")
                continue
            out = r.stdout
            m1 = re.search(r"(\d+) sections, (\d+) segments", out)
            m2 = re.search(r"spikes NEURON / neurosolve: (\d+) / (\d+); largest spike-time difference (\S+) ms; "
                           r"soma RMS (\S+) mV", out)
            m3 = re.search(r"wall: NEURON (\S+) s \(fadvance loop\), neurosolve (\S+) s", out)
            if not (m1 and m2 and m3):
                bad += 1
                why = (r.stderr.strip().splitlines() or ["no output"])[-1][:150].replace("|", "/")
                print(f"| {name} | failed: {why} | | | | | |", flush=True)
                continue
            bad += r.returncode != 0
            m4 = re.search(r"events: (\d+) sources, (\d+) spikes of NEURON; largest spike-time difference (\S+) ms", out)
            ev = f"{m4.group(1)}, {m4.group(2)}, {m4.group(3)}" if m4 else "-"
            nc = [ln[len("not captured: "):] for ln in out.splitlines() if ln.startswith("not captured: ")]
            note = f" (not captured: {'; '.join(nc)})" if nc else ""
            print(f"| {name}{note} | {m1.group(1)} / {m1.group(2)} | {m2.group(1)} / {m2.group(2)} | {m2.group(3)} | "
                  f"{m2.group(4)} | {ev} | {m3.group(1)} / {m3.group(2)} |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
