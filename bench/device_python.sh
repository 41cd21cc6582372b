#!/usr/bin/env bash
# The Python package on the device machine (issue 17, docs/python.md): pip
# install from the checkout (no network there: --no-build-isolation, the
# image has nanobind and scikit-build-core; CUDA for sm_90 only), the whole
# pytest suite with the GPU tests (CuPy, PyTorch, JAX), then the binding
# overhead against the C call in the same run (bench/python_overhead.py:
# numpy, PyTorch and JAX CPU tensors, CuPy, PyTorch and JAX CUDA arrays; each
# through solve(a, b, d, rhs) and through bind(...).solve()).
# Files in $OUT: summary.txt, pytest.txt, python_overhead.md/.csv, pip_tail.txt.
# Usage: OUT=out bash bench/device_python.sh [STEP...]
#   steps: install test bench (default: all three; a warm machine keeps the
#   install between calls, so `install test` then `bench` also works)
set -u
STEPS=${*:-install test bench}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_py_logs
mkdir -p "$LOG"
PY=${PYTHON:-python3}
export XLA_PYTHON_CLIENT_PREALLOCATE=false
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
SUM=$FINAL/summary.txt
: > "$SUM"
step() { # step NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-16s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$SUM"
    return $rc
}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nvcc --version | tail -1; nproc;
  $PY --version; $PY -m pip show nanobind scikit-build-core cupy-cuda13x torch jax numpy scipy pytest 2>/dev/null |
  grep -E '^(Name|Version)'; } >> "$SUM" 2>&1
cd "$ROOT"
if has install; then
  step pip-install 360 $PY -m pip install --no-build-isolation --no-deps -v \
      -C cmake.define.CMAKE_CUDA_ARCHITECTURES=90 -C build-dir=/tmp/ns_py_build .
  tail -n 40 "$LOG/pip-install.log" > "$FINAL/pip_tail.txt"
fi
cd /tmp  # import the installed package, not python/neurosolve
step import 60 $PY -c 'import neurosolve as ns; print(ns.__file__, ns.build_info(), "GPUs:", ns.cuda_device_count())'
cat "$LOG/import.log" >> "$SUM"
if has test; then
  step pytest 300 $PY -m pytest -v -rs -p no:cacheprovider "$ROOT/python/tests"
  cp "$LOG/pytest.log" "$FINAL/pytest.txt"
  grep -E "^=+ .*(passed|failed|error)" "$LOG/pytest.log" | tail -1 >> "$SUM"
  grep -c "test_gpu.py.*PASSED" "$LOG/pytest.log" | sed 's/^/GPU tests passed: /' >> "$SUM"
fi
if has bench; then
  step overhead 300 $PY "$ROOT/bench/python_overhead.py" --cells 1,10000,100000 --iters 60 \
      --frameworks numpy,torch-cpu,jax-cpu,cupy,torch,jax \
      --out "$FINAL/python_overhead.md" --csv "$FINAL/python_overhead.csv"
  tail -n 80 "$LOG/overhead.log" >> "$SUM"
fi
