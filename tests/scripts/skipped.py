"""List the tests of the last ctest run that skipped, in whole or in part,
with their reasons: `make test` prints this after ctest's summary (which
names skipped tests but not why). Reads BUILD/Testing/Temporary/LastTest.log,
where ctest keeps every test's output; a reason is an output line that says
SKIP/SKIPPED/skipped (the tests' convention, and pytest's -rs summary).

Usage: python3 tests/scripts/skipped.py BUILD_DIR
"""
import os
import re
import sys

SKIP = re.compile(r"\bSKIP(PED)?\b|\bskipped\b")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    log = os.path.join(sys.argv[1], "Testing", "Temporary", "LastTest.log")
    if not os.path.exists(log):
        print(f"skipped.py: no {log} (run ctest first)")
        return 0
    reasons = {}
    name, in_output = None, False
    with open(log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"\d+/\d+ Test: (.+)$", line)
            if m:
                name, in_output = m.group(1), False
            elif line == "Output:":
                in_output = True
            elif line == "<end of output>":
                in_output = False
            elif in_output and name and SKIP.search(line):
                got = reasons.setdefault(name, [])
                if line.strip() not in got:
                    got.append(line.strip())
    if not reasons:
        print("No test skipped anything.")
        return 0
    print(f"Tests that skipped all or part of their checks ({len(reasons)}), with the reasons:")
    for name in sorted(reasons):
        for k, r in enumerate(reasons[name][:6]):
            print(f"  {name if k == 0 else '':<28} {r}")
        if len(reasons[name]) > 6:
            print(f"  {'':<28} ... {len(reasons[name]) - 6} more (ctest -V -R '^{name}$')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
