#!/usr/bin/env python3
"""A user's first hour (issue 45): what the README promises about set-up holds.

1. Every third-party Python package that a test imports unconditionally is named in the README's
   set-up paragraph (the `pip install ...` line), so a user who follows it runs every test.
2. `pip install .` uses what the machine has, as the CMake build does: pyproject.toml's defaults
   do not switch HDF5, CUDA or MPI off (only the manylinux wheel's settings may), and the README
   or docs/python.md says how to see the build's progress (`pip install -v .`).
3. `bench hines` notes noisy timings when the load average is above the CPU count, and only then
   (getloadavg is replaced by a preloaded shim, so the test does not depend on this machine's load).

usage: test_first_hour.py NEUROSOLVE REPO_ROOT
"""
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN, ROOT = sys.argv[1], os.path.abspath(sys.argv[2])
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


# ---------------------------------------------------------------- 1. prerequisites
readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
m = re.search(r"`pip install ([a-z0-9_ .-]+)`", readme)
check(m is not None, "README's set-up names a `pip install ...` line")
named = set(m.group(1).split()) if m else set()
# import name -> the name pip installs it by
PIP_NAME = {"nanobind": "nanobind", "numpy": "numpy", "scipy": "scipy", "h5py": "h5py",
            "nibabel": "nibabel", "pytest": "pytest"}
# packages the tests use only where present (skipped with a reason otherwise, see
# tests/scripts/skipped.py): optional by design and listed as optional in the README
OPTIONAL = {"neuron", "matplotlib", "torch", "cupy", "jax", "jaxlib", "LFPy", "arbor", "mpi4py",
            "dipy", "bluepyopt"}
stdlib = set(sys.stdlib_module_names)


def top_level_imports(path):
    """Modules imported at a file's top level or in a function outside try blocks."""
    try:
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
    except SyntaxError:
        return set()
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for sub in node.body:
                for n in ast.walk(sub):
                    guarded.add(id(n))
    mods = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods.add(node.module.split(".")[0])
    return mods


test_files = []
for base in ("tests", os.path.join("python", "tests")):
    for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
        test_files += [os.path.join(dirpath, f) for f in files if f.endswith(".py")]
# the repository's own modules (tests put validation/ or bench/ on sys.path)
local = set()
for base in ("tests", "validation", "bench", "python", "fuzz"):
    for dirpath, _, files in os.walk(os.path.join(ROOT, base)):
        local.update(os.path.splitext(f)[0] for f in files if f.endswith(".py"))
needed = {}
for f in test_files:
    for mod in top_level_imports(f):
        if mod in stdlib or mod in local or mod in OPTIONAL or mod in ("neurosolve", "_core", "conftest"):
            continue
        needed.setdefault(mod, []).append(os.path.relpath(f, ROOT))
check(len(test_files) > 20, f"found the test scripts ({len(test_files)})")
for mod, files in sorted(needed.items()):
    pip = PIP_NAME.get(mod, mod)
    check(pip in named, f"{mod} (imported by {files[0]}{' and others' if len(files) > 1 else ''}) "
                        f"is in the README's `pip install` line")
for opt in ("matplotlib",):
    check(opt in readme, f"the README names the optional {opt}")

# ---------------------------------------------------------------- 2. pip install .
pyproject = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
sect = re.search(r"^\[tool\.scikit-build\.cmake\.define\]\n(.*?)(?=^\[)", pyproject, re.M | re.S)
check(sect is not None, "pyproject.toml has [tool.scikit-build.cmake.define]")
defines = dict(re.findall(r'^(\w+)\s*=\s*"([^"]*)"', sect.group(1), re.M)) if sect else {}
for opt in ("NS_HDF5", "NS_CUDA", "NS_MPI"):
    check(defines.get(opt, "AUTO").upper() != "OFF",
          f"`pip install .` does not force {opt} off (found: {defines.get(opt, 'unset')})")
docs_python = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
check("pip install -v ." in readme or "pip install -v ." in docs_python,
      "README or docs/python.md says `pip install -v .` shows the build's progress")

# ---------------------------------------------------------------- 3. the noisy-timings note
cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
if cc is None:
    print("skip the noisy-timings note: no C compiler to build the getloadavg shim")
else:
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = os.path.join(tmp, "load.c"), os.path.join(tmp, "libload.so")
        with open(src, "w") as f:
            f.write("#include <stdlib.h>\n"
                    "int getloadavg(double *l, int n) {\n"
                    "  const char *s = getenv(\"NS_TEST_LOAD\");\n"
                    "  for (int i = 0; i < n; i++) l[i] = s ? atof(s) : 0.0;\n"
                    "  return n;\n}\n")
        subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src], check=True)
        cpus = os.cpu_count() or 1
        outs = {}
        for label, load in (("loaded", cpus * 4.0 + 1.0), ("idle", 0.0)):
            env = dict(os.environ, LD_PRELOAD=lib, NS_TEST_LOAD=str(load), OMP_NUM_THREADS="1")
            r = subprocess.run([BIN, "bench", "hines", "--shapes", "tree:64:4", "--cells", "16",
                                "--repeats", "5", "--threads", "1"],
                               capture_output=True, text=True, env=env, timeout=120)
            outs[label] = r
        if any("does not come first" in r.stderr for r in outs.values()):
            print("skip the noisy-timings note: a sanitizer runtime must be preloaded first")
        else:
            for label, r in outs.items():
                check(r.returncode == 0, f"bench hines ({label}) exits 0: {r.stderr.strip()[-200:]}")
            check("timings and speed-ups are noisy" in outs["loaded"].stderr,
                  "bench hines notes noisy timings when the load average is above the CPU count")
            check("noisy" not in outs["idle"].stderr, "and says nothing of it on an idle machine")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
