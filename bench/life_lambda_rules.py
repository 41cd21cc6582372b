#!/usr/bin/env python3
"""`life fit --lambda auto`'s choice per cross-validation rule on ground-truth phantoms: for each
phantom (`life synth --phantom`, made in --work unless there), `life build --parcels`, then `life
fit --lambda auto --cv-rule R` for each rule of --rules and `life fit --group G` for each fixed G of
--fixed; the AUC of each fit's weights against the truth (bench/life_peers.py's AUC, as
ns_life_roc_auc), the chosen G, the connections kept and the time (docs/life.md, "Choosing lambda";
bench/README.md, "`--lambda auto`").

usage: python3 bench/life_lambda_rules.py [--neurosolve build/neurosolve]
           [--phantoms 10000:1,30000:1,30000:2,20000:6:snr=10] [--rules 1se-gain,1se,min] [--fixed 1]
           [--backend cpu|cuda] [--threads T] [--work DIR] [--csv FILE]
A phantom is N:SEED[:false=F][:snr=R] (life synth --phantom's --streamlines, --seed, --false, --snr).
Needs numpy."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from life_peers import auc  # noqa: E402


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--neurosolve", default=os.path.join(os.path.dirname(__file__), "..", "build", "neurosolve"))
    ap.add_argument("--phantoms", default="10000:1,30000:1,30000:2,20000:6:snr=10")
    ap.add_argument("--rules", default="1se-gain,1se,min")
    ap.add_argument("--fixed", default="1")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--work", default="life_lambda_work")
    ap.add_argument("--csv")
    a = ap.parse_args()
    ns = a.neurosolve
    cols = ["phantom", "fit", "G", "auc", "connections", "seconds"]
    print(" | ".join(cols), flush=True)
    out = [",".join(cols)]
    for spec in [x for x in a.phantoms.split(",") if x]:
        n, seed, *extra = spec.split(":")
        opts = []
        for e in extra:
            k, _, v = e.partition("=")
            if k not in ("false", "snr") or not v:
                sys.exit(f"--phantoms: '{e}' in '{spec}' is not false=F or snr=R")
            opts += [f"--{k}", v]
        d = os.path.abspath(os.path.join(a.work, spec.replace(":", "_").replace("=", "")))
        if not os.path.exists(os.path.join(d, "labels.npy")):
            run([ns, "life", "synth", d, "--phantom", "--streamlines", n, "--seed", seed, *opts])
        m = os.path.join(d, "model")
        if not os.path.exists(os.path.join(m, "groups.npy")):
            run([ns, "life", "build", "--dwi", f"{d}/dwi.nii", "--bvals", f"{d}/dwi.bval", "--bvecs", f"{d}/dwi.bvec",
                 "--tracks", f"{d}/tracks.tck", "--parcels", f"{d}/parcels.nii", "--out", m, "--threads",
                 str(a.threads), "--quiet"])
        labels = np.load(os.path.join(d, "labels.npy"))
        sl = np.load(os.path.join(m, "streamlines.npy"))
        groups = np.load(os.path.join(m, "groups.npy"))
        fits = [(f"auto {r}", ["--lambda", "auto", "--cv-rule", r]) for r in a.rules.split(",") if r]
        fits += [(f"group {g}", ["--group", g]) for g in a.fixed.split(",") if g]
        for name, extra in fits:
            fixed = extra[0] == "--group"
            w_path = os.path.join(d, f"w_{name.replace(' ', '_')}.npy")
            so, secs = run([ns, "life", "fit", m, "--out", w_path, "--threads", str(a.threads), "--backend", a.backend,
                            "--json", "--quiet", *extra])
            j = json.loads(so)
            wm = np.load(w_path)
            w = np.zeros(len(labels))
            w[sl] = wm
            conn = len(np.unique(groups[wm > 0]))
            r = [spec, name, f"{float(extra[1]) if fixed else j['group']:.4g}", f"{auc(w, labels):.4f}", str(conn), f"{secs:.1f}"]
            print(" | ".join(r), flush=True)
            out.append(",".join(r))
            if a.csv:
                with open(a.csv, "w") as f:
                    f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
