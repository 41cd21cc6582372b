#!/usr/bin/env python3
"""LiFE (neurosolve) against COMMIT/COMMIT2 (PyPI dmri-commit) and SIFT2 (MRtrix3 tcksift2) in the
same run, on the same inputs: the ground-truth phantom of `neurosolve bench life --quality`
(`life synth --phantom`, AUC against the truth) and a real case (DIPY's small_25 bundled in
data/life by default: time and memory only, there is no truth).

Each method runs in a process of its own; its wall time and peak resident memory (wait4's
ru_maxrss) are measured from here. One AUC for all (Mann-Whitney, ties one half, as
ns_life_roc_auc): the probability that a true streamline outweighs a false one, the weights mapped
to the input tractogram's streamlines (0 for a streamline a method dropped).

  neurosolve   life build (--parcels) once, then life fit per setting of --settings (nnls, ridge=0.2,
               group=1 by default; auto: --lambda auto, the group penalty chosen by cross-validation)
  COMMIT       trk2dictionary (fiber_shift 0.5, COMMIT's convention for .tck), StickZeppelinBall (stick
               1.7e-3 mm^2/s, balls 0.9e-3 and 3.0e-3 on a phantom: its own; on the real case
               COMMIT's tutorial's 1.7e-3 and 3.0e-3; --commit-isos), fit (NNLS); kernels and
               dictionary timed apart from the fit
  COMMIT2      the same operator, group lasso over the same connection groups as ours (end-point
               parcel pairs of parcels.nii, from life build --parcels; a streamline without a
               connection is a group of its own), cardinality and adaptive group weights (COMMIT2's
               paper; --commit-nnls 0: no NNLS fit first, the cardinality weights alone), lambda as a
               fraction of lambda_max (COMMIT's COMMIT2 tutorial: 2.5e-4, "change to suit your
               needs"), from zeros, tol_fun 1e-3 and max_iter 1000 as there
  SIFT2        mrconvert (-grad: the bvecs in the scanner frame, as LiFE reads them), dwi2response
               tournier, dwi2fod csd (preparation), tcksift2 (the fit)

usage: python3 bench/life_peers.py [--neurosolve build/neurosolve] [--streamlines 3000,10000]
           [--real data/life] [--threads T] [--backend cpu|cuda] [--peers commit,sift2]
           [--commit2-lambdas 2.5e-4] [--commit-isos 0.9e-3,3.0e-3] [--fiber-shift 0.5]
           [--response tournier] [--mrtrix DIR] [--work DIR] [--csv FILE] [--iters N]
           [--settings nnls,ridge=0.2,group=1] [--commit-nnls 1] [--timeout S | ns=S,commit=S,sift2=S]
           [--budget S]
       python3 bench/life_peers.py --make-wheelhouse OUT   (the peers for a host without network)
Needs numpy; COMMIT rows need `import commit` (pip install dmri-commit), SIFT2 rows MRtrix3's
tcksift2 on PATH (apt-get install mrtrix3) or in --mrtrix DIR; a missing peer is skipped with a
note. The peers run in the order of --peers, after ours."""
import os
import sys

if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "--measure":
    # a small launcher (no numpy loaded): the command's peak RSS counts the image it was forked
    # from (Linux keeps the pre-exec high-water mark), so it is forked from this, not from the bench
    child = os.fork()
    if child == 0:
        os.execvp(sys.argv[2], sys.argv[2:])
    _, wstatus, usage = os.wait4(child, 0)
    sys.stderr.write(f"\nMAXRSS_KB {usage.ru_maxrss}\n")
    sys.exit(os.waitstatus_to_exitcode(wstatus))

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


TIMEOUT = {}  # --timeout: seconds a process of each method (ns, commit, sift2) may run; absent: no limit
DEADLINE = None  # --budget: time.time() by which every process has ended (None: no limit)


def limit(method):
    """Seconds a process of `method` may run now: its --timeout, cut to what is left of --budget."""
    t = TIMEOUT.get(method)
    if DEADLINE is not None:
        left = max(1.0, DEADLINE - time.time())
        t = left if t is None else min(t, left)
    return t


def parse_timeouts(spec):
    """--timeout S (every method) or ns=S,commit=S,sift2=S."""
    out = {}
    for item in (x for x in (spec or "").split(",") if x):
        key, eq, val = item.rpartition("=")
        for k in ([key] if eq else ["ns", "commit", "sift2"]):
            if k not in ("ns", "commit", "sift2"):
                sys.exit(f"--timeout: '{item}' is not S or ns=S, commit=S, sift2=S")
            out[k] = float(val)
    return out


def run_rss(cmd, method, env=None, cwd=None, until=None):
    """Run cmd through the --measure launcher: (wall seconds, its peak RSS [MB], stdout, stderr, exit
    code). The RSS includes the launcher's forked image, about 10 MB. Past limit(method) (and past
    `until`, a time.time()) the process group is killed and the exit code is 124 (as timeout(1))."""
    t0 = time.perf_counter()
    t = limit(method)
    if until is not None:
        t = max(1.0, until - time.time()) if t is None else max(1.0, min(t, until - time.time()))
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--measure", *cmd], stdout=so, stderr=se,
                             text=True, env=env, cwd=cwd, start_new_session=True)
        try:
            p.wait(timeout=t)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            wall = time.perf_counter() - t0
            so.seek(0)
            return wall, float("nan"), so.read(), f"killed after {wall:.0f} s (its limit {t:.0f} s)", 124
        wall = time.perf_counter() - t0
        so.seek(0)
        se.seek(0)
        out, err = so.read(), se.read()
    rss = float("nan")
    head, _, last = err.rstrip("\n").rpartition("\n")
    if last.startswith("MAXRSS_KB "):
        rss, err = int(last.split()[1]) / 1024.0, head
    return wall, rss, out, err, p.returncode


def as_tck(case, work):
    """The case's tractogram as .tck (COMMIT's trk2dictionary with TCK_ref_image, tcksift2):
    a .trk is converted through nibabel (RAS mm points unchanged)."""
    tracks = case["tracks"]
    if tracks.endswith(".trk"):
        import nibabel as nib
        os.makedirs(work, exist_ok=True)
        out = os.path.join(work, "tracks.tck")
        nib.streamlines.save(nib.streamlines.load(tracks).tractogram, out)
        return out
    return tracks


def auc(score, label):
    """P(score of a true > score of a false), ties one half (ns_life_roc_auc's definition)."""
    score = np.asarray(score, float)
    label = np.asarray(label)
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):  # average ranks of ties
        j = i
        while j + 1 < len(s) and s[j + 1] == s[i]:
            j += 1
        ranks[i:j + 1] = 0.5 * (i + j) + 1
        i = j + 1
    r = np.empty(len(s))
    r[order] = ranks
    n1 = int((label == 1).sum())
    n0 = len(label) - n1
    return (r[label == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)


# ------------------------------------------------------------------ workers (own processes)

def partial(res):
    """What the worker has measured so far (a run killed by --timeout reports it)."""
    print("PARTIAL " + json.dumps(res), flush=True)


def running(res, stage):
    """A stage starts: its name and start (time.time()) go to the parent, which reports a stage
    still running when killed as "> (kill - start) s", a lower bound of its time."""
    res["running"] = {"stage": stage, "since": time.time()}
    partial(res)


def commit_worker(a):
    """COMMIT then COMMIT2 on one case; prints one JSON document."""
    import amico.lut
    import amico.util
    import commit
    from commit import trk2dictionary
    res = {"versions": {"dmri-commit": _version("dmri-commit"), "dmri-amico": _version("dmri-amico"),
                        "dmri-dicelib": _version("dmri-dicelib")}}
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    t = time.perf_counter()
    # what commit.setup() makes for every AMICO direction count, once per machine, for the one
    # generate_kernels uses (500, its default); setup's 22 tables took 10 minutes on 2 cores
    amico.lut.precompute_rotation_matrices(12, 500)
    res["setup_s"] = time.perf_counter() - t
    scheme = os.path.join(work, "dwi.scheme")
    amico.util.fsl2scheme(a.bval, a.bvec, scheme)
    running(res, "trk2dictionary")
    t = time.perf_counter()
    trk2dictionary.run(filename_tractogram=a.tracks, TCK_ref_image=a.dwi, path_out=os.path.join(work, "COMMIT"),
                       fiber_shift=a.fiber_shift, n_threads=a.threads, verbose=1)
    res["dictionary_s"] = time.perf_counter() - t
    partial(res)
    mit = commit.Evaluation(work, ".")
    mit.set_verbose(1) if hasattr(mit, "set_verbose") else None
    running(res, "the kernels and operator")
    t = time.perf_counter()
    mit.load_data(a.dwi, scheme, b0_thr=50)
    mit.set_model("StickZeppelinBall")
    mit.model.set(d_par=1.7e-3, d_perps_zep=[], d_isos=a.isos)
    mit.generate_kernels(regenerate=True)
    mit.load_kernels()
    mit.load_dictionary(os.path.join(work, "COMMIT"))
    mit.set_threads(a.threads)
    mit.build_operator()
    res["operator_s"] = time.perf_counter() - t
    partial(res)
    n = len(mit.DICTIONARY["TRK"]["kept"])
    res["kept_by_dictionary"] = int(np.count_nonzero(mit.DICTIONARY["TRK"]["kept"]))
    if a.commit_nnls:
        running(res, "COMMIT's NNLS fit")
        t = time.perf_counter()
        mit.fit(tol_fun=1e-3, max_iter=a.iters)
        res["nnls_fit_s"] = time.perf_counter() - t
        res["nnls_iterations"] = mit.CONFIG["optimization"]["fit_details"]["iterations"]
        # get_coeffs: one weight per input streamline, 0 for one the dictionary dropped
        np.save(os.path.join(work, "w_commit.npy"), commit_weights(mit, n))
        res["weights"] = os.path.join(work, "w_commit.npy")
        partial(res)
    if a.groups:
        # COMMIT2's groups index the input tractogram (set_regularisation drops what the dictionary did)
        g = np.load(a.groups).astype(np.int64)
        idx = np.arange(n)
        groups = [idx[g == gid].astype(np.int32) for gid in np.unique(g[g >= 0])]
        groups += [np.array([i], dtype=np.int32) for i in idx[g < 0]]
        group_idx = np.array(groups, dtype=np.object_)
        res["groups"] = len(groups)
        res["commit2"] = []
        for lam in a.lambdas:
            # the adaptive group weights are made from COMMIT's NNLS weights: without that fit
            # (--commit-nnls 0) the cardinality weights alone
            mit.set_regularisation(regularisers=("group_lasso", None, None), lambdas=(lam, None, None),
                                   params=({"group_idx": group_idx, "group_weights_cardinality": True,
                                            "group_weights_adaptive": bool(a.commit_nnls)}, None, None))
            running(res, f"COMMIT2's group fit at {lam:g}")
            t = time.perf_counter()
            mit.fit(tol_fun=1e-3, max_iter=a.iters)  # from zeros, as COMMIT's COMMIT2 tutorial
            s = time.perf_counter() - t
            path = os.path.join(work, f"w_commit2_{lam:g}.npy")
            np.save(path, commit_weights(mit, n))
            res["commit2"].append({"lambda": lam, "fit_s": s, "weights": path,
                                   "iterations": mit.CONFIG["optimization"]["fit_details"]["iterations"]})
            partial(res)
    res.pop("running", None)
    print("RESULT " + json.dumps(res))


def commit_weights(mit, n):
    """COMMIT's streamline weights (its intra-axonal coefficients, one per input streamline)."""
    w = np.asarray(mit.get_coeffs()[0], float)
    if w.size != n:
        sys.exit(f"COMMIT returned {w.size} weights for {n} streamlines")
    return w


def _version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return "?"


# ------------------------------------------------------------------------ the cases

def neurosolve_rows(a, case, rows):
    ns = a.neurosolve
    model = os.path.join(case["work"], "ns_model")
    cmd = [ns, "life", "build", "--dwi", case["dwi"], "--bvals", case["bval"], "--bvecs", case["bvec"], "--tracks",
           case["tracks"], "--out", model, "--threads", str(a.threads), "--json", "--quiet"]
    if case.get("parcels"):
        cmd += ["--parcels", case["parcels"]]
    wall, rss, out, err, rc = run_rss(cmd, "ns")
    if rc:
        sys.exit(f"life build failed: {err}")
    sl = np.load(os.path.join(model, "streamlines.npy"))
    build = {"wall_s": wall, "rss_mb": rss}
    settings = []
    for name in a.settings:
        if name == "nnls":
            settings.append((name, []))
        elif name == "auto":  # the group penalty chosen by cross-validation (docs/life.md, "Choosing lambda")
            settings.append((name, ["--lambda", "auto"] if case.get("parcels") else
                             ["--lambda", "auto", "--penalty", "ridge"]))
        else:
            key, _, val = name.partition("=")
            if key not in ("ridge", "group", "lambda") or not val:
                sys.exit(f"--settings: '{name}' is not nnls, auto, ridge=R, group=G or lambda=L")
            if key != "group" or case.get("parcels"):
                settings.append((name, [f"--{key}", val]))
    for name, extra in settings:
        w_path = os.path.join(case["work"], f"w_ns_{name.replace('=', '')}.npy")
        wall, rss, out, err, rc = run_rss([ns, "life", "fit", model, "--out", w_path, "--threads", str(a.threads),
                                           "--backend", a.backend, "--json", "--quiet", *extra], "ns")
        if rc == 124:
            rows.append(row(case, "neurosolve LiFE", name, None, wall_s=wall, fit_more_than_s=wall, note=err))
            continue
        if rc:
            sys.exit(f"life fit {name} failed: {err}")
        j = json.loads(out)
        if name == "auto":
            name = f"auto: {j['penalty']} {j['chosen_value']:.4g} ({j['rule']}, {j['folds']} folds)"
        w = np.zeros(case["n"])
        w[sl] = np.load(w_path)
        rows.append(row(case, "neurosolve LiFE", name, w, fit_s=j["seconds"], wall_s=wall, rss_mb=rss,
                        prep_s=build["wall_s"], prep_rss_mb=build["rss_mb"],
                        note=f"{j['backend']} {j['mw_variant']}/{j['mty_variant']}, {j['updates']} updates"))


def commit_note(r):
    return (f"{r['nnls_iterations']} iterations; {r['kept_by_dictionary']} streamlines in the dictionary; setup "
            f"{r['setup_s']:.1f} s once; dmri-commit {r['versions']['dmri-commit']}")


def commit_rows(a, case, rows):
    try:
        import commit  # noqa: F401
    except ImportError:
        print("note: COMMIT skipped: `import commit` fails (pip install dmri-commit)")
        return
    work = os.path.join(case["work"], "commit")
    isos = a.commit_isos or ("0.9e-3,3.0e-3" if case.get("labels") is not None else "1.7e-3,3.0e-3")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "commit", "--dwi", case["dwi"], "--bval",
           case["bval"], "--bvec", case["bvec"], "--tracks", as_tck(case, work), "--work", work, "--threads",
           str(a.threads), "--iters", str(a.iters), "--commit2-lambdas", ",".join(map(str, a.lambdas)),
           "--fiber-shift", str(a.fiber_shift), "--commit-isos", isos, "--commit-nnls", str(a.commit_nnls)]
    if case.get("parcels"):
        cmd += ["--groups", os.path.join(case["work"], "ns_model", "groups.npy")]
    wall, rss, out, err, rc = run_rss(cmd, "commit")
    killed_at = time.time()
    res = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if rc == 124:  # the rows it finished, then the stage it was in when killed: a lower bound of its time
        part = [line for line in out.splitlines() if line.startswith("PARTIAL ")]
        r = json.loads(part[-1][8:]) if part else {}
        commit_result_rows(a, case, r, isos, rows, wall=wall)
        done = ", ".join(f"{k} {v:.1f}" for k, v in r.items() if k.endswith("_s"))
        run = r.get("running", {"stage": "starting", "since": killed_at})
        lower = killed_at - run["since"]
        method = "COMMIT2" if "COMMIT2" in run["stage"] else "COMMIT" if "NNLS" in run["stage"] else "COMMIT + COMMIT2"
        rows.append(row(case, method, f"not finished: {run['stage']}", None, wall_s=wall,
                        fit_more_than_s=lower if "fit" in run["stage"] else None,
                        note=f"{err}; {run['stage']} ran > {lower:.1f} s when killed; finished: {done or 'nothing'}"))
        return
    if rc or not res:
        print(f"note: COMMIT failed (exit {rc}): {err[-2000:]}")
        return
    commit_result_rows(a, case, json.loads(res[0][7:]), isos, rows, wall=wall, rss=rss)


def commit_result_rows(a, case, r, isos, rows, wall=None, rss=float("nan")):
    """The COMMIT and COMMIT2 rows of the worker's (whole or partial) result."""
    prep = r.get("dictionary_s", 0.0) + r.get("operator_s", 0.0)
    if "weights" in r:
        rows.append(row(case, "COMMIT", f"nnls (stick 1.7e-3, balls {isos})", np.load(r["weights"]),
                        fit_s=r["nnls_fit_s"], wall_s=wall, rss_mb=rss, prep_s=prep, note=commit_note(r)))
    for c in r.get("commit2", []):
        weights = "adaptive and cardinality" if a.commit_nnls else "cardinality (no NNLS fit first)"
        rows.append(row(case, "COMMIT2", f"group lasso {c['lambda']:g}", np.load(c["weights"]), fit_s=c["fit_s"],
                        wall_s=wall, rss_mb=rss, prep_s=prep,
                        note=f"{r['groups']} groups, {weights} group weights, {c['iterations']} iterations from "
                             f"zeros; {r['kept_by_dictionary']} streamlines in the dictionary"))


def mrtrix_grad(case, path):
    """The gradient table as MRtrix's -grad file (scanner frame, one "x y z b" row per volume). LiFE, DIPY
    and COMMIT read the bvecs along the image's voxel axes; MRtrix's -fslgrad applies FSL's convention
    instead (x negated where the affine's determinant is positive, as the phantom's is), which would mirror
    every direction in x against the streamlines. Here: the voxel axes' directions (the affine's normalised
    columns) times the bvecs, as LiFE uses them."""
    import nibabel as nib
    A = nib.load(case["dwi"]).affine[:3, :3]
    bvals = np.loadtxt(case["bval"], ndmin=1).ravel()
    bvecs = np.loadtxt(case["bvec"], ndmin=2)
    if bvecs.shape[0] != 3:  # n rows of three
        bvecs = bvecs.T
    g = (A / np.linalg.norm(A, axis=0)) @ bvecs
    np.savetxt(path, np.column_stack([g.T, bvals]), fmt="%.10g")
    return path


MRTRIX_SHIM = {  # what MRtrix 3.0.3's Python scripts import and Python 3.12 removed
    "imp.py": """import importlib.machinery, importlib.util, sys
def find_module(name, path=None):
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None:
        raise ImportError(name)
    return None, spec.origin, spec
def load_module(name, fp, pathname, spec):
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
""",
    "distutils/__init__.py": "",
    "distutils/spawn.py": "from shutil import which as find_executable\n"}


def mrtrix_env(a, work):
    """The environment MRtrix's commands run in: with --mrtrix DIR (Debian's packages unpacked there
    by dpkg -x) its commands first on PATH and its libraries on LD_LIBRARY_PATH, for these processes
    only (the libraries are Debian's, not the host's); on Python >= 3.12 a folder first on
    PYTHONPATH with the two modules MRtrix 3.0.3's Python scripts (dwi2response) import that 3.12
    removed (imp's find_module and load_module on importlib, distutils.spawn's find_executable as
    shutil.which)."""
    env = dict(os.environ)
    if a.mrtrix:
        root = os.path.abspath(a.mrtrix)
        env["PATH"] = os.pathsep.join([os.path.join(root, "usr/lib/mrtrix3/bin"), env.get("PATH", "")])
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            [os.path.join(root, "usr/lib/x86_64-linux-gnu")] + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    if sys.version_info >= (3, 12):
        shim = os.path.join(work, "py312shim")
        for name, text in MRTRIX_SHIM.items():
            os.makedirs(os.path.dirname(os.path.join(shim, name)), exist_ok=True)
            with open(os.path.join(shim, name), "w") as f:
                f.write(text)
        env["PYTHONPATH"] = os.pathsep.join([shim] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def sift2_rows(a, case, rows):
    work = os.path.join(case["work"], "sift2")
    os.makedirs(work, exist_ok=True)
    env = mrtrix_env(a, work)
    t = limit("sift2")  # for SIFT2's commands together
    until = None if t is None else time.time() + t
    if not shutil.which("tcksift2", path=env["PATH"]):
        print("note: SIFT2 skipped: tcksift2 is not on PATH (apt-get install mrtrix3, or --mrtrix DIR)")
        return
    tracks = as_tck(case, work)
    nt = ["-nthreads", str(a.threads), "-quiet", "-force"]
    mif, resp, fod = (os.path.join(work, n) for n in ("dwi.mif", "response.txt", "fod.mif"))
    prep_s, prep_rss = 0.0, 0.0
    grad = mrtrix_grad(case, os.path.join(work, "grad.b"))
    for cmd in ([["mrconvert", case["dwi"], mif, "-grad", grad, *nt],
                 [sys.executable, shutil.which("dwi2response", path=env["PATH"]), a.response, mif, resp, *nt],
                 ["dwi2fod", "csd", mif, resp, fod, *nt]]):
        wall, rss, out, err, rc = run_rss(cmd, "sift2", cwd=work, env=env, until=until)  # dwi2response's scratch folder goes there
        if rc:
            tool = os.path.basename(cmd[1]) if cmd[0] == sys.executable else cmd[0]
            print(f"note: SIFT2 skipped: {tool} failed: {err[-1500:]}")
            if rc == 124:
                rows.append(row(case, "SIFT2", f"{tool} (preparation)", None, wall_s=prep_s + wall, note=err))
            return
        prep_s += wall
        prep_rss = max(prep_rss, rss)
    wpath = os.path.join(work, "weights.txt")
    wall, rss, out, err, rc = run_rss(["tcksift2", tracks, fod, wpath, *nt], "sift2", cwd=work, env=env,
                                      until=until)
    if rc == 124:
        rows.append(row(case, "SIFT2", f"tcksift2 ({a.response} response, csd)", None, wall_s=wall, prep_s=prep_s,
                        fit_more_than_s=wall, note=err))
        return
    if rc:
        print(f"note: SIFT2 failed: {err[-1500:]}")
        return
    w = np.loadtxt(wpath, comments="#").ravel()
    ver = subprocess.run(["tcksift2", "-version"], capture_output=True, text=True, env=env).stdout.splitlines()[0]
    rows.append(row(case, "SIFT2", f"tcksift2 ({a.response} response, csd)", w, fit_s=wall, wall_s=wall + prep_s,
                    rss_mb=rss, prep_s=prep_s, prep_rss_mb=prep_rss, note=ver.strip()))


# What the peers need on a host without network that has numpy, scipy and the GPU image's packages
# (h5py, Cython, psutil, tqdm, threadpoolctl, packaging): the seven cp312 wheels a COMMIT + COMMIT2 run
# imports, and MRtrix3 with the libraries of Debian bookworm that an Ubuntu image lacks
PEER_WHEELS = ["dmri-commit==2.4.2", "dmri-amico==2.1.1", "dmri-dicelib==1.3.0", "dipy==1.12.1", "nibabel==5.4.2",
               "trx-python==0.6", "numpydoc==1.11.0"]
MRTRIX_DEBS = ["mrtrix3", "libtiff6", "libpng16-16", "libwebp7", "liblerc4", "libjbig0", "libjpeg62-turbo",
               "libdeflate0"]


def slim_wheel(src, dst):
    """src's wheel without its tests folders and with its Python extension modules stripped of their
    symbol tables (strip --strip-unneeded; the libraries auditwheel grafted into *.libs are kept as
    they are), stored uncompressed (the tarball compresses them), RECORD written anew."""
    import base64
    import hashlib
    import zipfile
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zo, \
            tempfile.TemporaryDirectory() as tmp:
        record_name = next(n for n in zi.namelist() if n.endswith(".dist-info/RECORD"))
        record = []
        for info in zi.infolist():
            name = info.filename
            if name == record_name or "/tests/" in name or name.endswith("/tests"):
                continue
            data = zi.read(info)
            top = name.split("/")[0]
            if name.endswith(".so") and not top.endswith(".libs") and not info.is_dir():
                so = os.path.join(tmp, "x.so")
                with open(so, "wb") as f:
                    f.write(data)
                subprocess.run(["strip", "--strip-unneeded", so], check=True)
                with open(so, "rb") as f:
                    data = f.read()
            out = zipfile.ZipInfo(name, info.date_time)
            out.external_attr = info.external_attr
            zo.writestr(out, data)
            if not info.is_dir():
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                record.append(f"{name},sha256={digest},{len(data)}")
        record.append(f"{record_name},,")
        zo.writestr(zipfile.ZipInfo(record_name, (2026, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")


def make_wheelhouse(out):
    """--make-wheelhouse OUT: OUT/peers-cp312.tar.xz (PEER_WHEELS from PyPI through pip download,
    slimmed by slim_wheel) and OUT/debs/ (MRTRIX_DEBS through apt-get download): what bench/grid.sh's
    life-1m installs on the GPU host (bench/README.md)."""
    import tarfile
    os.makedirs(os.path.join(out, "debs"), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        got, slim = os.path.join(tmp, "got"), os.path.join(tmp, "wheels")
        os.makedirs(slim)
        plat = [x for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
                for x in ("--platform", p)]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
                        "3.12", "--implementation", "cp", *plat, "-d", got, *PEER_WHEELS], check=True)
        for whl in sorted(os.listdir(got)):
            slim_wheel(os.path.join(got, whl), os.path.join(slim, whl))
        with tarfile.open(os.path.join(out, "peers-cp312.tar.xz"), "w:xz") as tar:
            for whl in sorted(os.listdir(slim)):
                tar.add(os.path.join(slim, whl), arcname=whl)
    subprocess.run(["apt-get", "download", *MRTRIX_DEBS], cwd=os.path.join(out, "debs"), check=True)


def row(case, method, setting, w, **kw):
    """One table row; w None: the method did not finish (the note says why)."""
    r = {"case": case["name"], "streamlines": case["n"], "method": method, "setting": setting}
    if w is not None:
        r["kept"] = int((np.asarray(w) > 0).sum())
    if w is not None and case.get("labels") is not None:
        lab = case["labels"]
        kinds = case["kinds"]
        r["auc"] = auc(w, lab)
        r["auc_bridges"] = auc(w[(kinds == 0) | (kinds == 1)], lab[(kinds == 0) | (kinds == 1)])
        r["auc_random"] = auc(w[(kinds == 0) | (kinds == 2)], lab[(kinds == 0) | (kinds == 2)])
    r.update({k: v for k, v in kw.items() if v is not None})
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker")
    ap.add_argument("--make-wheelhouse", metavar="OUT")
    ap.add_argument("--neurosolve", default=os.path.join(HERE, "..", "build", "neurosolve"))
    ap.add_argument("--streamlines", default="3000")
    ap.add_argument("--real", default=os.path.join(HERE, "..", "data", "life"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--peers", default="commit,sift2")
    ap.add_argument("--commit2-lambdas", default="2.5e-4")  # the tutorial's
    ap.add_argument("--response", default="tournier")
    ap.add_argument("--mrtrix")  # a folder where MRtrix3's Debian packages were unpacked (dpkg -x)
    # COMMIT puts voxel corners at integer voxel coordinates; NIfTI (and so .tck/.trk in world mm
    # through the image's affine) puts voxel centres there: COMMIT's documented shift for that
    ap.add_argument("--fiber-shift", type=float, default=0.5)
    # COMMIT's ball diffusivities [mm^2/s]: by default on a phantom its own (0.9e-3 in the brain,
    # 3.0e-3 outside, src/life/phantom.c), COMMIT at its best (its tutorial's 1.7e-3,3.0e-3 cannot
    # explain the brain's ball, which then goes to the streamlines crossing it: the random curves);
    # on the real case the tutorial's
    ap.add_argument("--commit-isos")
    ap.add_argument("--iters", type=int, default=1000)  # COMMIT's max_iter (its tutorial's)
    # 0: no COMMIT NNLS fit; COMMIT2 then has the cardinality group weights only (the adaptive ones
    # are made from the NNLS weights), so that its fit starts after the operator (the 1 M row)
    ap.add_argument("--commit-nnls", type=int, default=1)
    # our fits per case: nnls, auto (--lambda auto), ridge=R, group=G, lambda=L
    ap.add_argument("--settings", default="nnls,ridge=0.2,group=1")
    # seconds each process (a fit, a peer's worker, a preparation step) may run: killed past it and
    # reported as not finished, so that a run under a time limit still writes its rows
    # S or ns=S,commit=S,sift2=S: per method (ns: each life build and life fit; commit: the whole
    # COMMIT worker; sift2: SIFT2's MRtrix commands together)
    ap.add_argument("--timeout")
    # seconds for the whole run: each process's limit is also cut to what is left of it, so that
    # a run under a time limit ends with every row written (a peer killed by it: a lower bound)
    ap.add_argument("--budget", type=float)
    ap.add_argument("--work", default="life_peers_work")
    ap.add_argument("--csv")
    ap.add_argument("--dwi")
    ap.add_argument("--bval")
    ap.add_argument("--bvec")
    ap.add_argument("--tracks")
    ap.add_argument("--groups")
    a = ap.parse_args()
    a.lambdas = [float(x) for x in a.commit2_lambdas.split(",") if x]
    a.settings = [x for x in a.settings.split(",") if x]
    global TIMEOUT, DEADLINE
    TIMEOUT = parse_timeouts(a.timeout)
    DEADLINE = time.time() + a.budget if a.budget else None
    a.isos = [float(x) for x in (a.commit_isos or "").split(",") if x]
    if a.worker == "commit":
        return commit_worker(a)
    if a.make_wheelhouse:
        return make_wheelhouse(a.make_wheelhouse)
    peers = [p for p in a.peers.split(",") if p]  # run in this order, after ours
    if set(peers) - {"commit", "sift2"}:
        sys.exit(f"--peers: {a.peers} is not a list of commit, sift2")
    os.makedirs(a.work, exist_ok=True)
    cases = []
    for n in [int(x) for x in a.streamlines.split(",") if x]:
        d = os.path.abspath(os.path.join(a.work, f"phantom_{n}"))
        if not os.path.exists(os.path.join(d, "dwi.nii")):
            subprocess.run([a.neurosolve, "life", "synth", d, "--phantom", "--streamlines", str(n)], check=True,
                           stdout=subprocess.DEVNULL)
        cases.append({"name": f"phantom {n}", "work": d, "dwi": f"{d}/dwi.nii", "bval": f"{d}/dwi.bval",
                      "bvec": f"{d}/dwi.bvec", "tracks": f"{d}/tracks.tck", "parcels": f"{d}/parcels.nii",
                      "labels": np.load(f"{d}/labels.npy"), "kinds": np.load(f"{d}/kinds.npy"), "n": n})
    if a.real:
        r = os.path.abspath(a.real)
        d = os.path.abspath(os.path.join(a.work, "real"))
        os.makedirs(d, exist_ok=True)
        cases.append({"name": "real small_25", "work": d, "dwi": f"{r}/small_25.nii.gz", "bval": f"{r}/small_25.bval",
                      "bvec": f"{r}/small_25.bvec", "tracks": f"{r}/EuDX_small_25.trk", "labels": None, "n": 60})
    cols = ["case", "method", "setting", "auc", "auc_bridges", "auc_random", "kept", "fit_s", "fit_more_than_s",
            "prep_s", "wall_s", "rss_mb", "note"]
    print(f"threads {a.threads}, backend {a.backend}; fit_s: the fit alone; prep_s: what it needs first (our build; "
          "COMMIT's dictionary, kernels and operator; SIFT2's response and FODs); fit_more_than_s: a fit killed at "
          "its time limit ran that long (a lower bound); wall_s: the process; "
          "rss_mb: its peak", flush=True)
    print(" | ".join(cols), flush=True)
    if a.csv:
        with open(a.csv, "w") as f:
            f.write(",".join(cols) + "\n")
    rows = []
    for case in cases:
        steps = {"commit": commit_rows, "sift2": sift2_rows}
        for step in [neurosolve_rows] + [steps[p] for p in peers]:
            done = len(rows)
            step(a, case, rows)
            for r in rows[done:]:  # each row as soon as it is measured (a run cut short keeps them)
                print(" | ".join(f"{r[c]:.3f}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols),
                      flush=True)
                if a.csv:
                    with open(a.csv, "a") as f:
                        f.write(",".join(f"{r[c]:.6g}" if isinstance(r.get(c), float) else
                                         str(r.get(c, "")).replace(",", ";") for c in cols) + "\n")


if __name__ == "__main__":
    main()
