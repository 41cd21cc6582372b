#!/usr/bin/env python3
"""How many .mod files of a corpus neurosolve builds unchanged, next to NEURON's translator.

For each folder given (a model's mechanisms; nothing is downloaded), each .mod file is
  * given to NEURON's nocmodl (when NEURON is installed for this Python): accepted or not;
  * built alone by `neurosolve mechanisms build` (translated and compiled by the C compiler)
    in a temporary folder with the file and the files it could INCLUDE beside it.
Prints a Markdown table per folder (file, NEURON, neurosolve, neurosolve's message) and the
totals: files, accepted by NEURON, built by neurosolve among those, models with every file built.

Run: python3 validation/nmodl_corpus.py --neurosolve build/neurosolve DIR [DIR ...]
e.g. BluePyOpt's L5PC originals (BlueBrain/BluePyOpt, examples/l5pc/mechanisms): the target
of issue 39 is that all 12 build.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def nocmodl_path():
    try:
        import neuron
    except ImportError:
        return None, None
    data = os.path.join(os.path.dirname(neuron.__file__), ".data")
    exe = os.path.join(data, "bin", "nocmodl")
    return (exe, dict(os.environ, NMODLHOME=data)) if os.path.exists(exe) else (None, None)


def neuron_accepts(path, nocmodl, env):
    if not nocmodl:
        return None
    with tempfile.TemporaryDirectory() as work:
        shutil.copy(path, work)
        r = subprocess.run([nocmodl, os.path.basename(path)], cwd=work, env=env, capture_output=True, text=True)
        return r.returncode == 0


def neurosolve_builds(path, exe):
    folder = os.path.dirname(path)
    with tempfile.TemporaryDirectory() as work:
        shutil.copy(path, work)
        for f in os.listdir(folder):  # files an INCLUDE may name
            if not f.endswith(".mod") and os.path.isfile(os.path.join(folder, f)):
                shutil.copy(os.path.join(folder, f), work)
        r = subprocess.run([exe, "mechanisms", "build", work, "-o", os.path.join(work, "lib.so")],
                           capture_output=True, text=True)
        msg = (r.stderr.strip().splitlines() or [""])[-1]
        return r.returncode == 0, msg.replace("neurosolve: mechanisms build: ", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--neurosolve", default="build/neurosolve")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    nocmodl, env = nocmodl_path()
    n = n_neuron = n_ours = n_models = n_models_ok = 0
    for d in a.dirs:
        files = sorted(glob.glob(os.path.join(d, "*.mod")))
        if not files:
            continue
        n_models += 1
        all_ok = True
        print(f"\n### {d}\n\n| file | NEURON | neurosolve | message |\n|---|---|---|---|")
        for f in files:
            nrn = neuron_accepts(f, nocmodl, env)
            ok, msg = neurosolve_builds(f, a.neurosolve)
            n += 1
            n_neuron += nrn is not False
            n_ours += ok and nrn is not False
            all_ok &= ok or nrn is False
            print(f"| {os.path.basename(f)} | {'-' if nrn is None else 'yes' if nrn else 'no'} | "
                  f"{'yes' if ok else 'no'} | {'' if ok else msg.replace('|', '/')} |")
        n_models_ok += all_ok
    print(f"\n{n} files; NEURON accepts {n_neuron}; neurosolve builds {n_ours} of those "
          f"({100.0 * n_ours / max(n_neuron, 1):.1f}%); models with every file built: {n_models_ok} of {n_models}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
