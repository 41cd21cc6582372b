#!/usr/bin/env bash
# The batched tridiagonal solvers on the GPU machine, in one go:
#   1. build with CUDA (build-gpu, Release),
#   2. run the tridiagonal tests (CPU and GPU),
#   3. the full `bench tridiag` grid (Figs. 9-13, both precisions) into $OUT,
#      then the plot when matplotlib is there,
#   4. compute-sanitizer memcheck on the GPU test and racecheck/memcheck on a
#      small bench case (warp, block, thomas, vbatch, cuSPARSE); SANITIZE=test
#      runs only the first, SANITIZE=none none of them; SAN_TIMEOUT (s, default
#      300) bounds each.
# Usage (from the repository root): OUT=/some/dir bench/device_tridiag.sh
# Expected GPU time on an H100/H200: about 3-4 minutes for step 4 (10 timed
# runs per GPU row and 5 per CPU row everywhere; the largest points hold
# ~15 GB of host memory and up to ~12 GB of device memory at once).
set -u
OUT=${OUT:-./out}
mkdir -p "$OUT"
status=0
step() { echo; echo "=== $*"; }
fail() { echo "!!! $*"; status=1; }

step "configure and build"
cmake -S . -B build-gpu -DNS_CUDA=ON -DCMAKE_BUILD_TYPE=Release > "$OUT/tridiag_cmake.txt" 2>&1 \
  || { cat "$OUT/tridiag_cmake.txt"; fail "cmake"; exit 1; }
cmake --build build-gpu -j"$(nproc)" --target test_tridiag test_tridiag_cuda 2>&1 | tail -3 \
  || fail "build tests"
cmake --build build-gpu -j"$(nproc)" --target neurosolve_cli 2>&1 | tail -3 || fail "build cli"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv | tee "$OUT/tridiag_gpu.txt"

step "tests"
ctest --test-dir build-gpu -R 'test_tridiag' --output-on-failure 2>&1 | tee "$OUT/tridiag_tests.txt"
grep -q "100% tests passed" "$OUT/tridiag_tests.txt" || fail "tridiag tests"

step "bench tridiag (full grid)"
start=$(date +%s)
build-gpu/neurosolve bench tridiag --csv "$OUT/tridiag.csv" 2>&1 | tee "$OUT/tridiag.txt" \
  || fail "bench tridiag"
echo "bench tridiag took $(( $(date +%s) - start )) s"
build-gpu/neurosolve bench tridiag --grid a --n 512 --batch 256000 --precision double --json \
  > "$OUT/tridiag_512x256000.json" 2>&1 || fail "bench tridiag --json"
if python3 -c "import matplotlib" 2>/dev/null; then
  python3 bench/plot_tridiag.py "$OUT/tridiag.csv" "$OUT/tridiag.png" || fail "plot"
else
  echo "matplotlib missing here: plot later with  python3 bench/plot_tridiag.py $OUT/tridiag.csv tridiag.png"
fi
step "compute-sanitizer"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
SANITIZE=${SANITIZE:-all}
SAN_TIMEOUT=${SAN_TIMEOUT:-300}
[ "$SANITIZE" = none ] && SAN=""
if [ -n "$SAN" ]; then
  small=(bench tridiag --grid a --n 1,2,33,100,512 --batch 1,37 --repeats 1 --cpu-repeats 1)
  long=(bench tridiag --grid b --n 1000,4100,8192 --batch 3 --repeats 1 --cpu-repeats 1)
  timeout "$SAN_TIMEOUT" "$SAN" --tool memcheck --error-exitcode 9 build-gpu/tests/test_tridiag_cuda \
    > "$OUT/tridiag_memcheck_test.txt" 2>&1; rc=$?
  tail -3 "$OUT/tridiag_memcheck_test.txt"; [ $rc -eq 0 ] || fail "memcheck test_tridiag_cuda (rc $rc)"
  [ "$SANITIZE" = test ] || for tool in memcheck racecheck; do
    for case in small long; do
      eval "args=(\"\${$case[@]}\")"
      timeout "$SAN_TIMEOUT" "$SAN" --tool $tool --error-exitcode 9 build-gpu/neurosolve "${args[@]}" \
        > "$OUT/tridiag_${tool}_${case}.txt" 2>&1; rc=$?
      tail -2 "$OUT/tridiag_${tool}_${case}.txt"; [ $rc -eq 0 ] || fail "$tool $case (rc $rc)"
    done
  done
else
  echo "compute-sanitizer not found: skipped"
fi

exit $status
