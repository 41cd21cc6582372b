"""Every shell command of README.md and docs/*.md runs as typed (issue 45).

A command is an indented (4-space) line of a Markdown file that starts with
`$ ` (its output follows it), or, in a block without `$ ` lines, a line that
starts with `neurosolve COMMAND`, `build/neurosolve COMMAND`, `make`,
`cmake`, `pip`, `python3`, `bash`, `mpirun` or `mpiexec` (a trailing `\\`
continues it on the next line). Usage synopses (`[--opt]`, `A|B`,
placeholders in capitals such as FILE or DIR) are not commands.

Each command runs verbatim with bash, in order, in a scratch folder that
holds links to the repository's data/, tests/, docs/, bench/, examples/ and
validation/ and build/neurosolve (and `neurosolve` on PATH), so that a
command's outputs (run/, small25, ...) stay out of the repository and a
command can use what an earlier one wrote (life build, then fit, report).
It must exit 0; a command whose documented output is an error line
(`neurosolve...`) must fail with that line on stderr. What the commands write
in that folder (a user's repository root) must be ignored by .gitignore.

Commands that cannot run in CI's time or on its machine are EXCLUDED below,
each with the reason; a command that matches no exclusion runs, so a new
example in the docs is tested unless it is listed here.

Usage: test_doc_commands.py NEUROSOLVE SOURCE_DIR
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

EXE = os.path.abspath(sys.argv[1])
SRC = os.path.abspath(sys.argv[2])

# (regex on the command, reason): the allow-list of commands that do not run here
EXCLUDED = [
    (r"^make (run|test)\b", "builds the whole project (minutes): CI runs `make test` itself, and `make run`'s "
                            "steps are commands of the Makefile"),
    (r"^cmake\b", "configures, builds or installs a copy of the project: CI's build matrix and the consumer "
                  "test (install, find_package, pkg-config) run these"),
    (r"^(python3 -m )?pip (install|download)\b", "a package build or download (network, minutes): CI builds "
                                                 "the wheel and installs it in a fresh venv"),
    (r"^(mpirun|mpiexec)\b", "needs MPI processes: tests/test_mpi_cli*.py run these forms (ctest label mpi_np)"),
    (r"--backend cuda|--cuda\b", "needs a GPU (the GPU tests run on the GPU host)"),
    (r"--neuron\b", "needs NEURON (not installed in CI)"),
    (r"neuron_import_compare\.py|imported/", "needs NEURON (not installed in CI): neuron_import_cpu and "
                                              "python/tests/test_neuron_import.py check the import without it"),
    (r"test_neuron_import\.py \S+ \. cuda", "needs a GPU and the references neuron_import_table.py writes with "
                                             "NEURON"),
    (r"mechanisms build data/mechanisms/bbp\b", "compiles the 13 BBP mechanisms (about a minute on 2 cores): "
                                                "tests/cli/test_cli_model.py builds mechanism libraries"),
    (r"--mechanisms libbbp\.so", "needs libbbp.so from the excluded `mechanisms build data/mechanisms/bbp`"),
    (r"--params l5\.params|--model l5\.model", "names the files the text before it writes (l5.params, l5.model)"),
    (r"nmodl_corpus(_materialise)?\.py", "the corpus of issue 39: ModelDB snapshots fetched beforehand and NEURON "
                                          "(neither in CI)"),
    (r"^bash \.ci/run\b", "CI itself (26 minutes)"),
    (r"examples/python/fit_gbar\.py", "about 80 gradients of 400 steps (5-12 s on 2 cores): python/tests/"
                                       "test_grad.py checks the gradients it uses"),
    (r"examples/python/fit_hay\.py", "builds the BBP library, then about 50 gradients of the L5 cell over 400 steps "
                                      "(2 minutes on 2 cores): tests/grad/test_grad_hay.c checks those gradients"),
    (r"grad_jaxley\.py|jaxley_grad\.py", "needs Jaxley (not installed in CI): tests/grad/test_grad_jaxley.py "
                                          "checks neurosolve against the case's stored Jaxley gradient"),
    (r"build-wheel-cuda/wheelhouse", "the GPU wheel's install on the GPU host, from the wheelhouse that "
                                     "`python/build_wheel.sh OUT --cuda` fills (a CUDA build, minutes)"),
    (r"solve small-low big-high --cells 100000 --check", "38 million unknowns: 1.8 GB and seconds of CPU (more "
                                                          "under the sanitizers); cli_solve_bundled_check runs "
                                                          "solve --check on every bundled morphology"),
]

COMMAND = re.compile(r"^(\$ )?((build/)?neurosolve (info|morph|solve|simulate|life|mechanisms|bench)(\s|$)|"
                     r"make\b|cmake\b|pip\b|python3\b|bash\b|mpirun\b|mpiexec\b)")
PLACEHOLDER = re.compile(r"(^|[\s/=])[A-Z][A-Z0-9_]*([.\s/]|$)")


def is_synopsis(cmd):
    return " [" in cmd or "|" in cmd or "..." in cmd or PLACEHOLDER.search(cmd.split("#")[0]) is not None


def extract(path):
    """(line, command, expected error line or None) of one Markdown file."""
    lines = open(path).read().split("\n")
    out, fence, i = [], False, 0
    while i < len(lines):
        if lines[i].startswith("```"):
            fence = not fence
        if fence or not lines[i].startswith("    "):
            i += 1
            continue
        block = []  # one indented block
        while i < len(lines) and (lines[i].startswith("    ") or (lines[i] == "" and i + 1 < len(lines)
                                                                   and lines[i + 1].startswith("    "))):
            block.append((i + 1, lines[i][4:]))
            i += 1
        dollar = any(text.startswith("$ ") for _, text in block)
        k = 0
        while k < len(block):
            num, text = block[k]
            k += 1
            if (dollar and not text.startswith("$ ")) or not COMMAND.match(text):
                continue
            cmd = text[2:] if text.startswith("$ ") else text
            while cmd.endswith("\\") and k < len(block):
                cmd = cmd[:-1].rstrip() + " " + block[k][1].strip()
                k += 1
            expect = None
            if dollar and k < len(block) and block[k][1].startswith("neurosolve"):
                expect = block[k][1].rstrip(".").strip()
            out.append((num, cmd, expect))
    return out


def main():
    files = [os.path.join(SRC, "README.md")] + sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
    info = json.loads(subprocess.run([EXE, "info", "--json"], capture_output=True, text=True).stdout or "{}")
    has_gpu = any(d.get("usable") for d in info.get("devices", []))
    failures, ran, excluded, skipped = [], 0, {}, []
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("data", "tests", "docs", "bench", "examples", "validation"):
            os.symlink(os.path.join(SRC, d), os.path.join(tmp, d))
        os.mkdir(os.path.join(tmp, "build"))
        os.symlink(EXE, os.path.join(tmp, "build", "neurosolve"))
        bindir = os.path.join(tmp, ".bin")
        os.mkdir(bindir)
        os.symlink(EXE, os.path.join(bindir, "neurosolve"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        for path in files:
            rel = os.path.relpath(path, SRC)
            for num, cmd, expect in extract(path):
                where = f"{rel}:{num}"
                bare = cmd.split(" #")[0]  # the command without its comment
                reason = next((r for rx, r in EXCLUDED if re.search(rx, bare)), None)
                if reason:
                    excluded.setdefault(reason, []).append(f"{where}: {cmd}")
                    continue
                if is_synopsis(bare):
                    continue
                if "# on a machine without a GPU" in cmd and (has_gpu or not info.get("cuda")):
                    skipped.append(f"{where}: {cmd} (the documented message is a CUDA build's on a machine "
                                   f"without a GPU; this {'machine has a GPU' if has_gpu else 'build has no CUDA'})")
                    continue
                t0 = time.time()
                p = subprocess.run(["bash", "-c", cmd], cwd=tmp, env=env, capture_output=True, text=True,
                                   timeout=300)
                ran += 1
                print(f"{time.time() - t0:6.2f} s  exit {p.returncode}  {where}: {cmd}")
                if "built without HDF5" in p.stderr and "sonata" in cmd:
                    skipped.append(f"{where}: {cmd} (this build has no HDF5)")
                    continue
                if expect:
                    if p.returncode == 0 or expect.rstrip(". ") not in p.stderr:
                        failures.append(f"{where}: `{cmd}`: expected to fail with {expect!r}; exit {p.returncode}, "
                                        f"stderr {p.stderr!r}")
                elif p.returncode != 0:
                    failures.append(f"{where}: `{cmd}` exited {p.returncode}: {p.stderr.strip()[-600:]}")
        # what the commands wrote in the folder they ran in would be the repository root's for a
        # user: .gitignore must keep it out of `git status` (issue 45: libbbp.so, small25*, run/)
        made = sorted(n for n in os.listdir(tmp) if n not in ("data", "tests", "docs", "bench", "examples",
                                                               "validation", "build", ".bin"))
        git = shutil.which("git")
        if not git or subprocess.run([git, "-C", SRC, "rev-parse", "--git-dir"], capture_output=True).returncode:
            skipped.append("the outputs' .gitignore check (no git, or not a git checkout)")
        else:
            for n in made:
                name = n + "/" if os.path.isdir(os.path.join(tmp, n)) else n
                if subprocess.run([git, "-C", SRC, "check-ignore", "-q", "--no-index", "--", name]).returncode:
                    failures.append(f"the docs' commands write {name} in the folder they run in, and .gitignore "
                                    "does not ignore it there (the repository root)")
            print(f"{len(made)} outputs in the commands' folder, each ignored by .gitignore: {', '.join(made)}")
    print(f"\n{ran} commands ran in {time.time() - start:.1f} s")
    for reason, cmds in excluded.items():
        print(f"excluded ({reason}):")
        for c in cmds:
            print(f"    {c}")
    for s in skipped:
        print(f"SKIPPED: {s}")
    for f in failures:
        print(f"FAILED: {f}")
    if ran < 8:
        print(f"FAILED: only {ran} commands found: the extraction is broken")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
