#!/usr/bin/env python3
"""The values NEURON's translator gives UNITS-block constants, for the
translator's tests (tests/nmodl/test_nmodl.c, `UNITS_REF`).

Writes one .mod file with a constant per (units) (units) pair below (after the
definitions DEFS), runs
NEURON's nocmodl on it and prints the C table of names, units and the values
nocmodl wrote (C99 hex floats, exact). nocmodl reads its units database
(nrnunits.lib) from the NEURON installation: NEURON 9.0.2 gives the 2019 SI
values of e, k, the mole and h.

Run: python3 validation/nmodl_units_constants.py   (NEURON 9.0.2 installed for python3)
"""
import os
import re
import subprocess
import sys
import tempfile

PAIRS = [
    ("faraday", "coulomb"), ("faraday", "coulombs"), ("faraday", "kilocoulombs"), ("faraday", "coul"),
    ("k-mole", "joule/degC"), ("R", "joule/degC"), ("R", "millivolt-coulomb/degC"), ("R", "joule/kelvin"),
    ("pi", "1"), ("e", "coulombs"), ("e", "coulomb"), ("boltzmann", "joule/kelvin"), ("k", "joule/degC"),
    ("mole", "1"), ("planck", "joule-sec"), ("hbar", "joule-sec"), ("faraday", "millicoulomb"),
    ("e", "millicoulomb"), ("1", "1/mole"),
    ("1", "mM"), ("um", "m"), ("faraday", "joule"), ("1", "liter"),  # the file's definitions; no dimension check
]
# definitions the file's UNITS block makes first (tests/nmodl/test_nmodl.c writes the same)
DEFS = "(mM) = (milli/liter) (um) = (micron)"


def main():
    import neuron
    data = os.path.join(os.path.dirname(neuron.__file__), ".data")
    nocmodl = os.path.join(data, "bin", "nocmodl")
    env = dict(os.environ, NMODLHOME=data)
    work = tempfile.mkdtemp(prefix="nmodl_units_")
    lines = ["NEURON { SUFFIX u }", "UNITS {", "    " + DEFS]
    for i, (a, b) in enumerate(PAIRS):
        lines.append(f"    C{i} = ({a}) ({b})")
    lines.append("}")
    path = os.path.join(work, "u.mod")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run([nocmodl, "u.mod"], cwd=work, env=env, check=True, stdout=subprocess.DEVNULL)
    text = open(os.path.join(work, "u.cpp")).read()
    print(f"/* validation/nmodl_units_constants.py: nocmodl of NEURON {neuron.__version__} */")
    for i, (a, b) in enumerate(PAIRS):
        m = re.search(rf"static double C{i} = ([^;]+);", text)
        print(f'    {{"({a})", "({b})", {m.group(1)}}}, /* {float.fromhex(m.group(1))!r} */')
    sys.stdout.flush()


if __name__ == "__main__":
    main()
