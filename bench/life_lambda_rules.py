#!/usr/bin/env python3
"""`life fit --lambda auto`'s choice per cross-validation rule against every value of its path, on
ground-truth phantoms, for one penalty (docs/life.md, "Choosing lambda"; bench/README.md,
"`--lambda auto`"). For each phantom (`life synth --phantom`, made in --work unless there): `life
build --parcels`; one path, `life fit --lambda auto --penalty P` (5 folds of voxels, the 1se-gain
rule: its weights are the `auto` row); the choice of each rule of --rules read from that path's
curve (1se-gain: the tool's; 1se: the largest value within one SE of the least; min: the least);
then a fit from zeros at every value of the path and at each value of --fixed (`life fit --group G`,
`--ridge R` or `--lambda L`). Per fit: the AUC of its weights against the truth (bench/life_peers.py's
AUC, as ns_life_roc_auc), the connections (parcel pairs) and streamlines it keeps, and its time; per
phantom a summary: each rule's value and AUC against the best fit of the path and of --fixed.

usage: python3 bench/life_lambda_rules.py [--neurosolve build/neurosolve] [--penalty group|ridge|lambda]
           [--phantoms 10000:1,30000:1,30000:2,20000:6:snr=10] [--rules 1se-gain,1se,min] [--fixed 1]
           [--no-every] [--backend cpu|cuda] [--threads T] [--work DIR] [--csv FILE]
A phantom is N:SEED[:false=F][:snr=R] (life synth --phantom's --streamlines, --seed, --false, --snr).
--fixed defaults to the value docs/life.md recommends for the penalty (group 1, ridge 0.2, lambda
3e6: ReAl-LiFE's). --no-every: only the path, the rules' choices and --fixed. Needs numpy."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from life_peers import auc  # noqa: E402

FIXED = {"group": "1", "ridge": "0.2", "lambda": "3e6"}


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr[-2000:]}")
    return p.stdout, time.perf_counter() - t


def rule_choices(path, rules):
    """Each rule's index on the curve (values descending): 1se-gain is the tool's own choice."""
    cv = [p["cv_rmse"] for p in path["path"]]
    se = [p["cv_se"] for p in path["path"]]
    best = int(np.argmin(cv))
    out = {}
    for r in rules:
        if r == "1se-gain":
            out[r] = path["chosen_index"]
        elif r == "min":
            out[r] = best
        elif r == "1se":
            out[r] = next(j for j in range(best + 1) if cv[j] <= cv[best] + se[best])
        else:
            sys.exit(f"--rules: unknown rule '{r}' (1se-gain, 1se or min)")
    return out


def phantom(a, spec):
    n, seed, *extra = spec.split(":")
    opts = []
    for e in extra:
        k, _, v = e.partition("=")
        if k not in ("false", "snr") or not v:
            sys.exit(f"--phantoms: '{e}' in '{spec}' is not false=F or snr=R")
        opts += [f"--{k}", v]
    d = os.path.abspath(os.path.join(a.work, spec.replace(":", "_").replace("=", "")))
    if not os.path.exists(os.path.join(d, "labels.npy")):
        run([a.neurosolve, "life", "synth", d, "--phantom", "--streamlines", n, "--seed", seed, *opts])
    m = os.path.join(d, "model")
    if not os.path.exists(os.path.join(m, "groups.npy")):
        run([a.neurosolve, "life", "build", "--dwi", f"{d}/dwi.nii", "--bvals", f"{d}/dwi.bval", "--bvecs",
             f"{d}/dwi.bvec", "--tracks", f"{d}/tracks.tck", "--parcels", f"{d}/parcels.nii", "--out", m, "--threads",
             str(a.threads), "--quiet"])
    return d, m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--neurosolve", default=os.path.join(os.path.dirname(__file__), "..", "build", "neurosolve"))
    ap.add_argument("--penalty", default="group", choices=["group", "ridge", "lambda"])
    ap.add_argument("--phantoms", default="10000:1,30000:1,30000:2,20000:6:snr=10")
    ap.add_argument("--rules", default="1se-gain,1se,min")
    ap.add_argument("--fixed")
    ap.add_argument("--no-every", action="store_true")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--work", default="life_lambda_work")
    ap.add_argument("--csv")
    a = ap.parse_args()
    P = a.penalty
    rules = [r for r in a.rules.split(",") if r]
    fixed = [float(x) for x in (a.fixed if a.fixed is not None else FIXED[P]).split(",") if x]
    common = ["--threads", str(a.threads), "--backend", a.backend, "--json", "--quiet"]
    cols = ["phantom", "penalty", "fit", "value", "cv_rmse", "cv_se", "auc", "connections", "kept", "seconds", "rules"]
    print(" | ".join(cols), flush=True)
    out = [",".join(cols)]

    def emit(r):
        print(" | ".join(r), flush=True)
        out.append(",".join(r))
        if a.csv:
            with open(a.csv, "w") as f:
                f.write("\n".join(out) + "\n")

    for spec in [x for x in a.phantoms.split(",") if x]:
        d, m = phantom(a, spec)
        labels = np.load(os.path.join(d, "labels.npy"))
        sl = np.load(os.path.join(m, "streamlines.npy"))
        groups = np.load(os.path.join(m, "groups.npy"))

        def score(w_path):
            wm = np.load(w_path)
            w = np.zeros(len(labels))
            w[sl] = wm
            return auc(w, labels), len(np.unique(groups[(wm > 0) & (groups >= 0)])), int((wm > 0).sum())

        w_auto = os.path.join(d, f"w_auto_{P}.npy")
        so, secs = run([a.neurosolve, "life", "fit", m, "--out", w_auto, "--lambda", "auto", "--penalty", P, *common])
        path = json.loads(so)
        pts = path["path"]
        chosen = rule_choices(path, rules)
        au, conn, kept = score(w_auto)
        emit([spec, P, "auto (1se-gain)", f"{path['chosen_value']:.4g}", "", "", f"{au:.4f}", str(conn), str(kept),
              f"{secs:.1f}", f"cv_zero {path['cv_zero']:.6g}"])
        fits = [] if a.no_every else [("path", j, p["value"]) for j, p in enumerate(pts)]
        fits += [("path", j, pts[j]["value"]) for j in sorted(set(chosen.values())) if a.no_every]
        fits += [("fixed", -1, v) for v in fixed]
        results = []
        for kind, j, v in fits:
            w_path = os.path.join(d, f"w_{P}_{v:.6g}.npy")
            so, secs = run([a.neurosolve, "life", "fit", m, "--out", w_path, f"--{P}", f"{v:.17g}", *common])
            au, conn, kept = score(w_path)
            mark = "/".join(r for r in rules if j >= 0 and chosen[r] == j)
            results.append((kind, v, au, mark))
            emit([spec, P, kind, f"{v:.4g}", f"{pts[j]['cv_rmse']:.6g}" if j >= 0 else "",
                  f"{pts[j]['cv_se']:.3g}" if j >= 0 else "", f"{au:.4f}", str(conn), str(kept), f"{secs:.1f}", mark])
        best = max(results, key=lambda r: r[2])
        summary = "; ".join(f"{r} {pts[chosen[r]]['value']:.4g}: " +
                            (f"{next(x[2] for x in results if x[1] == pts[chosen[r]]['value']):.4f}") for r in rules)
        print(f"# {spec} {P}: {summary}; best {best[0]} {best[1]:.4g}: {best[2]:.4f}", flush=True)


if __name__ == "__main__":
    main()
