#!/usr/bin/env python3
"""The measurements behind the CPU rule of NS_LIFE_AUTO (src/life/engine.c, ns_life_cpu_rule;
bench/README.md "CPU variants: the rule of AUTO").

    python3 bench/life_variant_grid.py NEUROSOLVE MODEL... [--threads 1,2] [--iters 15] [--rounds 2]

For every model folder and thread count, `life fit` runs a fixed number of updates (all tolerances 0)
with each CPU layout of one product while the other product keeps a fixed variant: y = M w over the
four optimised variants with w = M^T y on atom-atom, then w = M^T y over the four with y = M w on
voxel-voxel. The fits are the real workload (dense weights at the start, sparse later). Rounds
alternate the order (forward, then backward) so that a change of load on a shared machine falls on
every variant alike. One JSON line per fit: model sizes, threads, variants, fit seconds (the
updates alone, `seconds` of life fit --json) and the child's CPU seconds; then per (model, threads,
product) the median per variant and the winner."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

VARIANTS = ["coeff-atom", "coeff-voxel", "atom-atom", "voxel-voxel"]
MTY_WHILE_MW_VARIES, MW_WHILE_MTY_VARIES = "atom-atom", "voxel-voxel"  # the other product's fixed variant


def fit(exe, model, threads, mw, mty, iters, tmp):
    cmd = [exe, "life", "fit", model, "--backend", "cpu", "--threads", str(threads), "--mw", mw, "--mty", mty,
           "--iters", str(iters), "--tolo", "0", "--tolg", "0", "--rtolo", "0", "--rtolg", "0", "--json",
           "--out", os.path.join(tmp, "w.npy")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err.decode()[-2000:]}")
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    print(json.dumps({"load_average": os.getloadavg()}), flush=True)
    info = {}
    for m in a.models:
        # "MODEL: 30 directions, 32221 atoms, 31912 voxels, 10000 fibers, 872995 coefficients, ..."
        txt = subprocess.run([a.exe, "life", "info", m], capture_output=True, text=True, check=True).stdout
        words = txt.split(":", 1)[1].replace(",", " ").split()
        info[m] = {"n_" + k: int(n) for n, k in zip(words, words[1:]) if n.isdigit()}
    runs = []
    for m in a.models:
        for t in [int(x) for x in a.threads.split(",")]:
            plan = [("mw", v) for v in VARIANTS] + [("mty", v) for v in VARIANTS]
            with tempfile.TemporaryDirectory() as tmp:
                for r in range(a.rounds):
                    for prod, v in (plan if r % 2 == 0 else plan[::-1]):
                        mw, mty = (v, MTY_WHILE_MW_VARIES) if prod == "mw" else (MW_WHILE_MTY_VARIES, v)
                        t0 = os.times()
                        j = fit(a.exe, m, t, mw, mty, a.iters, tmp)
                        t1 = os.times()
                        cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
                        row = {"model": m, **info[m], "threads": t, "product": prod, "variant": v, "mw": mw,
                               "mty": mty, "round": r, "updates": j["updates"], "fit_s": j["seconds"], "cpu_s": cpu,
                               "load_average": os.getloadavg()[0]}
                        runs.append(row)
                        print(json.dumps(row), flush=True)
            for prod in ("mw", "mty"):
                med = {v: statistics.median(x["fit_s"] for x in runs if x["model"] == m and x["threads"] == t and
                                            x["product"] == prod and x["variant"] == v) for v in VARIANTS}
                best = min(med, key=med.get)
                print(json.dumps({"summary": m, **info[m], "threads": t, "product": prod,
                                  "median_fit_s": {v: round(s, 4) for v, s in med.items()}, "best": best,
                                  "best_over_second": round(med[best] / sorted(med.values())[1], 3)}), flush=True)


if __name__ == "__main__":
    main()
