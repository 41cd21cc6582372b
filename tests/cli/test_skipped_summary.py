#!/usr/bin/env python3
"""tests/scripts/skipped.py (issue 45, item 5: `make test` lists the tests that skipped, with
their reasons, after ctest's summary): on a LastTest.log in ctest's layout it names each test
whose output says SKIP/SKIPPED/skipped with those lines (six at most, then a count and the
ctest command that shows the rest), and nothing for a test whose output does not, or for such
a word outside a test's output; without a log it says to run ctest first.

usage: test_skipped_summary.py SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.abspath(sys.argv[1]), "tests", "scripts", "skipped.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def entry(k, name, output):
    return (f"{k}/3 Testing: {name}\n{k}/3 Test: {name}\nCommand: \"/bin/{name}\" \"--skipped-flag\"\n"
            f"Directory: /b\n\"{name}\" start time: Dec 06 12:00 UTC\nOutput:\n"
            "----------------------------------------------------------\n"
            f"{output}<end of output>\nTest time = 0.1 sec\n"
            "----------------------------------------------------------\nTest Passed.\n")


with tempfile.TemporaryDirectory() as build:
    p = subprocess.run([sys.executable, SCRIPT, build], capture_output=True, text=True)
    check(p.returncode == 0 and "run ctest first" in p.stdout, f"no log: {p.returncode} {p.stdout!r}")
    os.makedirs(os.path.join(build, "Testing", "Temporary"))
    pytest = "".join(f"SKIPPED [1] t.py:{n}: no usable GPU\n" for n in range(8))
    log = ("Start testing: Dec 06 12:00 UTC\n----------------------------------------------------------\n" +
           entry(1, "test_nmodl_pointer", "SKIP: no C compiler (cannot run the compiler 'cc')\n") +
           entry(2, "quiet_test", "all 12 checks passed\n") +
           entry(3, "python_pytest", "....ss\n" + pytest + pytest) + "End testing: Dec 06 12:01 UTC\n")
    with open(os.path.join(build, "Testing", "Temporary", "LastTest.log"), "w") as f:
        f.write(log)
    p = subprocess.run([sys.executable, SCRIPT, build], capture_output=True, text=True)
    out = p.stdout
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr!r}")
    check("skipped all or part of their checks (2)" in out, f"count: {out!r}")
    check("test_nmodl_pointer" in out and "SKIP: no C compiler (cannot run the compiler 'cc')" in out,
          f"the C test's reason: {out!r}")
    check("quiet_test" not in out and "--skipped-flag" not in out, f"a test without skips listed: {out!r}")
    check(out.count("SKIPPED [1] t.py:") == 6 and "... 2 more (ctest -V -R '^python_pytest$')" in out,
          f"pytest's reasons (8 distinct, each twice): {out!r}")
    os.remove(os.path.join(build, "Testing", "Temporary", "LastTest.log"))
    with open(os.path.join(build, "Testing", "Temporary", "LastTest.log"), "w") as f:
        f.write(entry(1, "quiet_test", "fine\n"))
    p = subprocess.run([sys.executable, SCRIPT, build], capture_output=True, text=True)
    check("No test skipped anything." in p.stdout, f"nothing skipped: {p.stdout!r}")

for f in failures:
    print("FAILED:", f)
print(f"skipped_summary: {'all checks passed' if not failures else f'{len(failures)} checks FAILED'}")
sys.exit(1 if failures else 0)
