#!/usr/bin/env python3
"""The LFP's cost and LFPy 2.3 in the same run (issue 44; bench/README.md, "Extracellular potentials").

usage: lfp_lfpy_bench.py [--cli build/neurosolve] [--morph data/morphologies/l5pc_bbp_axon.swc]
                         [--cells 1000] [--tstop 10] [--probe data/probes/neuropixels_like.txt]
                         [--every 1,10] [--backend cuda] [--lfpy-cells 4] [--storage auto,...] [--rank-tolerance R]
                         [--max-gb G] [--batch K,...] [--split] [--column R [--seed S]]
                         [--ranks TOL,... [--ranks-cells K]] [--out FILE]

1. neurosolve: `simulate MORPH --cells N --tstop T --no-progress --json --backend B` without a
   probe and with `--probe PROBE --lfp-every K --lfp-storage S` for each S of --storage and K of
   --every (K: steps, or Xms; the rows are named K, or S:K when --storage names several); the
   run's wall_s (the loop, sampling included), the command's whole time (set-up and
   the coefficients included), the added run time with the probe, and the probe's own account
   (simulate's lfp_timing: set-up, host time in the reductions, GPU time of the cells' dipoles, the
   DGEMM and the sums). With --batch each K of --every is also run with `--lfp-batch` at each
   value given (the samples per reduction on the GPU; rows "K@B"). With --split each run is repeated at twice the tstop: the added time
   of the second half is the per-sample cost, the rest of the first run's the fixed cost.
   MORPH may be `bundled` (the 54 bundled morphologies x --cells each, with `--radii default:0.5` for
   the one traced without radii: `--morph bundled --radii default:0.5 --cells 200 --every 0.1ms
   --lfpy-cells 0 --storage lowrank` is issue 44's second row, 10,800 cells, 17 M compartments).
2. LFPy (on NEURON): the same cell (Import3d, nseg by the d_lambda rule 0.1 at 100 Hz, Ra 35.4,
   cm 1, hh everywhere with NEURON's defaults, celsius 6.3, v_init -65, dt 0.025, the IClamp of
   1.5e-4 nA per um^2 of membrane at soma(0.5) from 5 ms: `simulate`'s defaults) with a
   RecExtElectrode of the probe's contacts (discs of LFPy's own points) sampled every step:
   `Cell.simulate(probes=[electrode], rec_imem=True)` timed for --lfpy-cells cells one after the
   other (LFPy simulates cells one at a time: its time is linear in the cells), scaled to N cells.
3. Agreement: one cell through `simulate --cells 1 --backend cpu --probe PROBE --lfp-every 8`
   (its soma moved to the origin, as LFPy.Cell moves it) against LFPy's potentials of the same
   cell at neurosolve's disc points (its Vogel spiral,
   validation/lfp_reference.py's disc_points), relative to the largest potential.

With --column R the cells are placed (simulate's --placement) in a column of radius R um around the
shank: somata uniform in the cylinder from z = 500 to 3,300 um, each turned by pi/2 about x (an SWC's
+y, the apical dendrite, along the shank) and at random about z (numpy's generator, --seed).

With --ranks (and nothing run): the numerical ranks of the coefficients' per-cell blocks (contacts x
that cell's compartments, from the Python binding's `Lfp.coefficients` of each morphology on the CPU;
the cells of `simulate` without --placement all sit at their SWC coordinates, so the cells of one
morphology share one block; with --column each cell has its own: the first --ranks-cells of each
morphology are studied and stand for all), by numpy's SVD: r_k = the singular values above TOL times the block's
largest ("ranks"), and the least rank whose residual's Frobenius norm is at most TOL times the block's
("ranks_frobenius": `--lfp-rank-tolerance`'s criterion, which the pivoted QR meets at a rank at least
this), for each TOL; the flops of a sample 2 sum_k r_k (E + n_k) and the floats kept sum_k r_k (E + n_k)
against dense's 2 E N and E N (`--lfp-storage lowrank`, docs/extracellular.md, "Memory").

Prints one JSON object: the versions, each run's times, the ratios and the agreement; and on
stderr a table of the rows (added run time, the sampler's host time and the GPU phases of lfp_timing).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "validation"))
from lfp_reference import disc_points  # noqa: E402

DT = 0.025
AMP_PER_AREA = 1.5e-4  # [nA/um^2]: simulate's `auto` clamp
DEL = 5.0


def simulate(cli, args, extra, tstop=None):
    cmd = [cli, "simulate", args.morph, "--tstop", str(tstop or args.tstop), "--no-progress", "--json"] + extra
    t0 = time.perf_counter()
    r = subprocess.run(cmd, check=True, capture_output=True, text=True)
    total = time.perf_counter() - t0
    out = json.loads(r.stdout)
    r = {"command": " ".join(cmd), "wall_s": out["wall_s"], "total_s": total,
         "compartments": out["compartments"], "steps": out["steps"]}
    for key in ("lfp_storage", "lfp_timing", "lfp_error_bound", "lfp_rank_sum", "lfp_rank_max"):
        if key in out:
            r[key] = out[key]
    return r


def read_probe(path):
    """(E, 8): x y z nx ny nz r n, as the probe file's format (docs/extracellular.md)."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].replace(",", " ").split()
            if not line:
                continue
            if line[0] == "line":
                a, b, n = np.array(line[1:4], float), np.array(line[4:7], float), int(float(line[7]))
                rows += [list(a + (b - a) * k / (n - 1)) + [0, 0, 0, 0, 1] for k in range(n)]
                continue
            v = [float(x) for x in line]
            rows.append(v + [0, 0, 0, 0, 1] if len(v) == 3 else v + ([9] if len(v) == 7 else []))
    return np.array(rows)


def lfpy_cell(morph, tstop):
    import LFPy
    from neuron import h
    cell = LFPy.Cell(morphology=morph, nsegs_method="lambda_f", lambda_f=100.0, d_lambda=0.1, Ra=35.4, cm=1.0,
                     passive=False, v_init=-65.0, dt=DT, tstart=0.0, tstop=tstop, celsius=6.3,
                     delete_sections=True)
    for sec in cell.allseclist:
        sec.insert("hh")
    area = sum(seg.area() for sec in cell.allseclist for seg in sec)
    soma = [s for s in cell.allseclist if s.name().startswith("soma")][0]
    stim = h.IClamp(soma(0.5))
    stim.delay, stim.dur, stim.amp = DEL, 90.0, round(AMP_PER_AREA * area, 3)
    return cell, stim


def lfpy_timing(args, probe):
    import LFPy
    per = []
    disc = probe[:, 6] > 0
    for _ in range(args.lfpy_cells):
        cell, stim = lfpy_cell(args.morph, args.tstop)
        kw = {}
        if disc.all():
            kw = dict(N=probe[:, 3:6], r=float(probe[0, 6]), n=int(probe[0, 7]), contact_shape="circle")
        el = LFPy.RecExtElectrode(cell, sigma=0.3, x=probe[:, 0], y=probe[:, 1], z=probe[:, 2],
                                  method="linesource", **kw)
        t0 = time.perf_counter()
        cell.simulate(probes=[el], rec_imem=True)
        per.append(time.perf_counter() - t0)
        del stim, el, cell
    return per


def agreement(args, probe, tmp):
    """neurosolve's potentials of one cell (CPU) against LFPy's at the same points."""
    import LFPy
    out = os.path.join(tmp, "one")
    # LFPy.Cell moves the cell so that its soma is at the origin (Cell.somapos); the same placement here
    # (soma(0.5) to (0, 0, 0), no rotation: docs/extracellular.md, "The run")
    placement = os.path.join(tmp, "origin.placement")
    with open(placement, "w") as f:
        f.write("0 0 0 0 0 0\n")
    subprocess.run([args.cli, "simulate", args.morph, "--cells", "1", "--tstop", str(args.tstop), "--backend", "cpu",
                    "--no-progress", "--probe", args.probe, "--lfp-every", "8", "--placement", placement,
                    "--out", out + "/"], check=True, capture_output=True, text=True)
    ns = np.load(os.path.join(out, "lfp.npy"))  # t, then one column per contact
    cell, stim = lfpy_cell(args.morph, args.tstop)
    cell.simulate(rec_imem=True)
    steps = np.arange(8, cell.imem.shape[1], 8)
    pts, owner = [], []
    for k, c in enumerate(probe):
        p = disc_points(c[:3], c[3:6], c[6], int(c[7])) if c[6] > 0 else c[None, :3]
        pts.append(p)
        owner += [k] * len(p)
    pts, owner = np.vstack(pts), np.array(owner)
    el = LFPy.RecExtElectrode(cell, sigma=0.3, x=pts[:, 0], y=pts[:, 1], z=pts[:, 2], method="linesource")
    phi_pts = el.get_transformation_matrix() @ cell.imem[:, steps]
    phi = np.zeros((len(probe), len(steps)))
    np.add.at(phi, owner, phi_pts)
    phi /= np.bincount(owner)[:, None]
    m = min(len(steps), ns.shape[0])
    err = np.abs(ns[:m, 1:].T - phi[:, :m]).max() / np.abs(phi[:, :m]).max()
    del stim
    return {"samples": int(m), "largest_mV": float(np.abs(phi).max()), "relative_difference": float(err)}


def column_placement(cells, radius, seed):
    """(cells, 6): somata uniform in a cylinder of `radius` um around the shank's axis (z) from 500 to
    3,300 um, each cell turned by pi/2 about x (an SWC's +y, the apical dendrite, along +z: parallel
    to the shank) and by a random angle about z."""
    rng = np.random.default_rng(seed)
    r, a = radius * np.sqrt(rng.random(cells)), 2 * np.pi * rng.random(cells)
    return np.column_stack([r * np.cos(a), r * np.sin(a), rng.uniform(500.0, 3300.0, cells),
                            np.full(cells, np.pi / 2), np.zeros(cells), 2 * np.pi * rng.random(cells)])


def block_ranks(args, probe, tols, placement):
    """The per-cell blocks' numerical ranks at each relative tolerance, and lowrank's ratios to dense.
    Without a placement the cells of one morphology share one block; with one, the first
    --ranks-cells cells of each morphology are studied, each standing for cells / studied."""
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import neurosolve as ns
    if os.path.basename(args.morph) == "bundled":
        d = os.path.join(ROOT, "data", "morphologies")
        files = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".swc"))
    else:
        files = [args.morph]
    radii = {"radii": "default", "default_radius": float(args.radii.split(":")[1])} \
        if args.radii and args.radii.startswith("default:") else {}
    E = len(probe)
    rows, N = [], 0
    for fi, f in enumerate(files):
        cell = ns.read_swc(f, **radii).discretize()
        n = len(cell)
        N += n * args.cells
        studied = 1 if placement is None else min(args.cells, args.ranks_cells or args.cells)
        for c0 in range(0, studied, 25):  # 25 cells' coefficients at a time
            k = min(25, studied - c0)
            pl = None if placement is None else placement[fi * args.cells + c0:fi * args.cells + c0 + k]
            M = np.asarray(ns.Lfp(ns.Simulation([cell], k, backend="cpu"), [cell], probe, placement=pl).coefficients)
            for c in range(k):
                sv = np.linalg.svd(M[:, c * n:(c + 1) * n], compute_uv=False)
                tail = np.sqrt(np.cumsum((sv ** 2)[::-1])[::-1])  # tail[r]: the residual's Frobenius norm at rank r
                rows.append({"morphology": os.path.basename(f), "compartments": n, "weight": args.cells / studied,
                             "ranks": {t: int(np.sum(sv > float(t) * sv[0])) for t in tols},
                             "ranks_frobenius": {t: int(np.sum(tail > float(t) * tail[0])) for t in tols}})
    out = {"contacts": E, "cells": args.cells * len(files), "compartments": N, "blocks_studied": len(rows),
           "tolerances": {}}
    w = np.array([r["weight"] for r in rows])
    for t in tols:
        for key in ("ranks", "ranks_frobenius"):
            rk = np.array([r[key][t] for r in rows])
            kept = sum(r["weight"] * r[key][t] * (E + r["compartments"]) for r in rows)
            out["tolerances"]["%s %s" % (key, t)] = {
                "largest_rank": int(rk.max()), "median_rank": float(np.median(rk)),
                "mean_rank": float((w * rk).sum() / w.sum()), "dense_to_lowrank": E * N / kept}  # flops and floats
    out["blocks"] = rows if placement is None else "%d blocks (not listed)" % len(rows)
    return out


def print_row(name, r):
    """One row of the table on stderr: the added run time and lfp_timing's account."""
    t = r.get("lfp_timing", {})
    print("| %s | %s | %.4f s | %+.0f%% | %.1f | %.1f / %.1f / %.1f | %d | %.1f s |"
          % (name, r.get("lfp_storage", "?"), r["wall_s"], 100 * r["added_run_time"], t.get("sampling_ms", 0),
             t.get("currents_ms", 0), t.get("gemm_ms", 0), t.get("sum_ms", 0), t.get("reductions", 0),
             t.get("setup_ms", 0) / 1000.0), file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "neurosolve"))
    ap.add_argument("--morph", default=os.path.join(ROOT, "data", "morphologies", "l5pc_bbp_axon.swc"))
    ap.add_argument("--cells", type=int, default=1000)
    ap.add_argument("--tstop", type=float, default=10.0)
    ap.add_argument("--probe", default=os.path.join(ROOT, "data", "probes", "neuropixels_like.txt"))
    ap.add_argument("--every", default="1,10")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--lfpy-cells", type=int, default=4)
    ap.add_argument("--storage", default="auto", help="simulate's --lfp-storage (auto, dense, tiles, f32, lowrank); "
                    "several, comma-separated: each --every with each")
    ap.add_argument("--rank-tolerance", default=None, help="simulate's --lfp-rank-tolerance (lowrank)")
    ap.add_argument("--max-gb", default=None, help="simulate's --lfp-max-gb")
    ap.add_argument("--radii", default=None, help="simulate's --radii (default:R for `bundled`)")
    ap.add_argument("--batch", default=None, help="also each --every with simulate's --lfp-batch at these values")
    ap.add_argument("--split", action="store_true", help="also at twice the tstop: fixed and per-sample costs")
    ap.add_argument("--ranks", default=None, help="only the per-cell blocks' ranks at these relative tolerances")
    ap.add_argument("--ranks-cells", type=int, default=0, help="--ranks with --column: the cells studied per "
                    "morphology (0: all)")
    ap.add_argument("--column", type=float, default=None, help="place the cells in a column of this radius "
                    "[um] around the shank (simulate's --placement; seeded by --seed)")
    ap.add_argument("--seed", type=int, default=1, help="--column's seed")
    ap.add_argument("--out", default=None, help="write the JSON here as well")
    args = ap.parse_args()
    probe = read_probe(args.probe)
    bundled = os.path.basename(args.morph) == "bundled"
    n_morph = len([f for f in os.listdir(os.path.join(ROOT, "data", "morphologies")) if f.endswith(".swc")]) \
        if bundled else 1
    placement = column_placement(args.cells * n_morph, args.column, args.seed) if args.column else None
    if args.ranks:
        text = json.dumps(block_ranks(args, probe, args.ranks.split(","), placement), indent=1)
        print(text)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text + "\n")
        return
    base = ["--cells", str(args.cells), "--backend", args.backend] + (["--radii", args.radii] if args.radii else [])
    res = {"morphology": os.path.basename(args.morph), "cells": args.cells, "contacts": len(probe),
           "tstop_ms": args.tstop, "backend": args.backend}
    res["without_probe"] = simulate(args.cli, args, base)
    print("| %s x %d: every | storage | wall_s | added | host ms | dipoles / gemm / sum GPU ms | reductions | "
          "set-up |\n|---|---|---:|---:|---:|---|---:|---:|\n| none | - | %.4f s | - | - | - | - | - |"
          % (res["morphology"], args.cells, res["without_probe"]["wall_s"]), file=sys.stderr, flush=True)
    if args.split:
        res["without_probe_2x"] = simulate(args.cli, args, base, 2 * args.tstop)
    res["with_probe"] = {}
    lfp = ["--probe", args.probe] + (["--lfp-max-gb", args.max_gb] if args.max_gb else [])
    lfp += ["--lfp-rank-tolerance", args.rank_tolerance] if args.rank_tolerance else []
    if placement is not None:  # simulate's --placement file (one line per cell)
        place_file = os.path.join(tempfile.mkdtemp(), "column.placement")
        np.savetxt(place_file, placement, fmt="%.6f")
        lfp += ["--placement", place_file]
        res["column_um"], res["seed"] = args.column, args.seed
    storages = args.storage.split(",")
    runs = []
    for s in storages:
        tag = s + ":" if len(storages) > 1 else ""
        runs += [(tag + k, k, ["--lfp-storage", s]) for k in args.every.split(",")]
        runs += [("%s%s@%s" % (tag, k, b), k, ["--lfp-storage", s, "--lfp-batch", b]) for k in args.every.split(",")
                 for b in (args.batch.split(",") if args.batch else [])]
    for name, k, extra in runs:
        r = simulate(args.cli, args, base + lfp + ["--lfp-every", k] + extra)
        added = r["wall_s"] - res["without_probe"]["wall_s"]
        r["added_run_time"] = added / res["without_probe"]["wall_s"]
        if "lfp_timing" in r:  # the sampler's own time, and the rest: the loop's writes of v, its cut launches
            r["added_in_sampler_s"] = r["lfp_timing"]["sampling_ms"] / 1000.0
            r["added_in_loop_s"] = added - r["added_in_sampler_s"]
        if args.split:
            r2 = simulate(args.cli, args, base + lfp + ["--lfp-every", k] + extra, 2 * args.tstop)
            added2 = r2["wall_s"] - res["without_probe_2x"]["wall_s"]
            r["twice_tstop"] = r2
            r["added_per_tstop_s"] = added2 - added  # the samples' cost over one tstop
            r["added_fixed_s"] = 2 * added - added2  # the rest: first calls, launch splits
        res["with_probe"][name] = r
        print_row(name, r)
    if args.lfpy_cells <= 0:
        res["lfpy"] = {"skipped": "--lfpy-cells 0"}
        print(json.dumps(res, indent=1))
        if args.out:
            with open(args.out, "w") as f:
                f.write(json.dumps(res, indent=1) + "\n")
        return
    try:
        import LFPy
        import neuron
        res["lfpy"] = {"version": LFPy.__version__, "neuron": neuron.__version__}
    except ImportError as e:
        res["lfpy"] = {"skipped": "LFPy is not installed (%s): pip install LFPy==2.3.7" % e}
        print(json.dumps(res, indent=1))
        return
    per = lfpy_timing(args, probe)
    one = float(np.median(per))
    res["lfpy"].update({"cells_timed": len(per), "s_per_cell": per, "scaled_s": one * args.cells})
    every1 = next((r for name, r in res["with_probe"].items() if name.split(":")[-1] == "1"), None)
    if every1:
        res["lfpy"]["x_slower_than_neurosolve_run"] = one * args.cells / every1["wall_s"]
        res["lfpy"]["x_slower_than_neurosolve_total"] = one * args.cells / every1["total_s"]
    tmp = tempfile.mkdtemp()
    try:
        res["agreement"] = agreement(args, probe, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
