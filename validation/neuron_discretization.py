#!/usr/bin/env python3
"""Compare neurosolve's discretisation with NEURON's, section by section.

NEURON is the independent reference: each SWC file is loaded through
Import3d (Import3d_SWC_read + Import3d_GUI(...).instantiate(None)), nseg is
set by the same rule (d_lambda = 0.1 at 100 Hz as in NEURON's fixnseg, or a
fixed length), and every section's nseg, L, parent, parentx, segment areas
(seg.area()) and axial resistances (seg.ri(), plus ri at x = 1) are dumped.
neurosolve's numbers come from validation/ns_dump.c (built here against the
static library of a build directory) with NEURON's junction policy, so the
node sets correspond one to one.

Sections are matched by the SWC id of their first own point (Import3d's
Import3d_Section.id). Usage:

    pip install neuron
    python3 validation/neuron_discretization.py --build build-dir \
        [--write-ref tests/data/neuron_ref] FILE.swc...

Prints one line per file with the largest relative differences; with
--write-ref it stores NEURON's per-section numbers as <name>.csv for the C
test (tests/morph/test_discretize.c), which then runs without NEURON.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def neuron_dump(path, rule, max_length, Ra):
    """Runs in a child process (NEURON keeps sections globally): returns a
    dict key -> section record."""
    from neuron import h
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(path)
    gui = h.Import3d_GUI(reader, False)
    gui.instantiate(None)
    by_name = {}
    for sec in h.allsec():
        name = sec.name()
        if "[" not in name:
            name += "[0]"
        by_name[name] = sec
    key_of = {}
    for isec in gui.swc.sections:
        s = h.ref("")
        gui.name(isec, s)
        name = s[0] if "[" in s[0] else s[0] + "[0]"
        key_of[by_name[name].name()] = int(reader.id.x[int(isec.id)])
    out = {}
    for sec in h.allsec():
        sec.Ra = Ra
        sec.cm = 1.0
        if rule == "dlambda":
            try:
                sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
            except RuntimeError:  # L = 0: lambda_f divides by zero; neurosolve uses nseg = 1
                sec.nseg = 1
        elif rule == "fixed":
            n = int(-(-sec.L // max_length)) or 1
            sec.nseg = n + 1 if n % 2 == 0 else n
        else:
            sec.nseg = 1
    for sec in h.allsec():
        key = key_of[sec.name()]
        ps = sec.parentseg()
        segs = [(seg.x, seg.area(), seg.ri()) for seg in sec]
        segs.append((1.0, 0.0, sec(1).ri()))
        out[key] = {
            "parent": key_of[ps.sec.name()] if ps is not None else -1,
            "parent_x": ps.x if ps is not None else 0.0,
            "nseg": sec.nseg,
            "L": sec.L,
            "area": sum(a for _, a, _ in segs),
            "ri_sum": sum(r for _, _, r in segs),
            "n3d": int(h.n3d(sec=sec)),
            "segs": segs,
        }
    return out


def ns_dump(exe, path, rule, max_length, Ra, as_float):
    args = [exe, "--segments", "--Ra", repr(Ra)] + (["--float"] if as_float else [])
    if rule == "fixed":
        args += ["--fixed", repr(max_length)]
    elif rule == "one":
        args += ["--one"]
    res = subprocess.run(args + [path], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip())
    out = {}
    for line in res.stdout.splitlines():
        f = line.split(",")
        if f[0] == "S":
            out[int(f[1])] = {"parent": int(f[2]), "parent_x": float(f[3]), "nseg": int(f[5]),
                              "L": float(f[6]), "area": float(f[7]), "ri_sum": float(f[8]),
                              "n3d": int(f[9]), "segs": []}
        elif f[0] == "G":
            out[int(f[1])]["segs"].append((float(f[2]), float(f[3]), float(f[4])))
    return out


def rel(a, b):
    if abs(a - b) <= 1e-8:  # NEURON reports L = 1e-9 for a section of zero length
        return 0.0
    return abs(a - b) / max(abs(b), 1e-300)


def compare(ours, ref):
    """Largest relative differences and the structural mismatches."""
    r = {"sections": len(ref), "ours": len(ours), "missing": 0, "topology": 0, "nseg": 0,
         "L": 0.0, "area": 0.0, "ri_sum": 0.0, "seg_area": 0.0, "seg_ri": 0.0,
         "total_area_ours": sum(s["area"] for s in ours.values()),
         "total_area_neuron": sum(s["area"] for s in ref.values())}
    for key, n in ref.items():
        o = ours.get(key)
        if o is None:
            r["missing"] += 1
            continue
        if o["parent"] != n["parent"] or abs(o["parent_x"] - n["parent_x"]) > 1e-12:
            r["topology"] += 1
        if o["nseg"] != n["nseg"]:
            r["nseg"] += 1
            continue
        for f in ("L", "area", "ri_sum"):
            r[f] = max(r[f], rel(o[f], n[f]))
        for (xo, ao, ro), (xn, an, rn) in zip(o["segs"], n["segs"]):
            if an > 0:
                r["seg_area"] = max(r["seg_area"], rel(ao, an))
            r["seg_ri"] = max(r["seg_ri"], rel(ro, rn))
    r["total_area"] = rel(r["total_area_ours"], r["total_area_neuron"])
    return r


def write_ref(ref, path):
    with open(path, "w") as f:
        f.write("# NEURON %s reference (validation/neuron_discretization.py): d_lambda 0.1 at 100 Hz, "
                "Ra 35.4, cm 1\n" % ref.get("_version", "?"))
        f.write("key,parent_key,parent_x,nseg,L,area,ri_sum\n")
        for key in sorted(k for k in ref if k != "_version"):
            s = ref[key]
            f.write("%d,%d,%.17g,%d,%.17g,%.17g,%.17g\n" % (key, s["parent"], s["parent_x"], s["nseg"],
                                                           s["L"], s["area"], s["ri_sum"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rule", choices=["dlambda", "fixed", "one"], default="dlambda")
    ap.add_argument("--max-length", type=float, default=20.0)
    ap.add_argument("--Ra", type=float, default=35.4)
    ap.add_argument("--write-ref", default=None)
    ap.add_argument("--float", action="store_true",
                    help="round neurosolve's points as NEURON stores them (%%.8g, then float)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    if a.child:  # child process: NEURON side only, JSON on stdout
        res = neuron_dump(a.child, a.rule, a.max_length, a.Ra)
        from neuron import __version__
        print(json.dumps({"version": __version__, "sections": {str(k): v for k, v in res.items()}}))
        return 0
    lib = os.path.join(a.build, "src", "libneurosolve.a")
    exe = os.path.join(tempfile.mkdtemp(), "ns_dump")
    subprocess.run(["cc", "-std=c11", "-O2", "-I" + os.path.join(ROOT, "include"),
                    os.path.join(HERE, "ns_dump.c"), lib, "-lm", "-fopenmp", "-o", exe], check=True)
    print("%-36s %6s %5s %4s %4s %9s %9s %9s %9s %9s %9s" % (
        "file", "secs", "miss", "topo", "nseg", "L", "area", "ri_sum", "seg_area", "seg_ri", "tot_area"))
    worst = 0.0
    for path in a.files:
        child = subprocess.run([sys.executable, __file__, "--rule", a.rule, "--max-length", str(a.max_length),
                                "--Ra", str(a.Ra), "--child", path], capture_output=True, text=True)
        if child.returncode != 0:
            print("%s: NEURON failed: %s" % (path, child.stderr.strip()[-300:]))
            continue
        doc = json.loads(child.stdout.strip().splitlines()[-1])
        ref = {int(k): v for k, v in doc["sections"].items()}
        try:
            ours = ns_dump(exe, path, a.rule, a.max_length, a.Ra, a.float)
        except RuntimeError as e:
            print("%s: neurosolve failed: %s" % (path, e))
            continue
        r = compare(ours, ref)
        worst = max(worst, r["total_area"])
        print("%-36s %6d %5d %4d %4d %9.1e %9.1e %9.1e %9.1e %9.1e %9.1e" % (
            os.path.basename(path)[:36], r["sections"], r["missing"], r["topology"], r["nseg"], r["L"],
            r["area"], r["ri_sum"], r["seg_area"], r["seg_ri"], r["total_area"]))
        if a.write_ref:
            ref["_version"] = doc["version"]
            name = os.path.splitext(os.path.basename(path))[0]
            write_ref(ref, os.path.join(a.write_ref, name + ".csv"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
