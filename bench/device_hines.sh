#!/usr/bin/env bash
# The CUDA Hines backend on a GPU machine, in one go: configure and build
# (Release, NS_CUDA=ON), run the CUDA tests, run compute-sanitizer (memcheck,
# racecheck, synccheck, initcheck) on a small subset of the CUDA test, and
# dump the kernels' resource usage. Every log goes under $OUT (default ./out);
# $OUT/summary.txt lists each step's exit status.
#
#   OUT=/some/dir bench/device_hines.sh          # from the repository root
#   BUILD=build-gpu JOBS=16 bench/device_hines.sh
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./out}
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"

step() { # step NAME LOGFILE COMMAND...: run, log, record the exit status
    local name=$1 logf=$2
    shift 2
    local t0=$(date +%s)
    "$@" > "$OUT/$logf" 2>&1
    local rc=$?
    printf '%-28s rc=%-3d %4ds  %s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$logf" | tee -a "$SUMMARY"
    return $rc
}

{ date -u; uname -a; nvidia-smi; nvcc --version; cmake --version; } > "$OUT/machine.txt" 2>&1

step configure configure.log cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
    || { echo "configure failed: see $OUT/configure.log"; exit 1; }
step build build.log cmake --build "$BUILD" -j "$JOBS" || { echo "build failed: see $OUT/build.log"; exit 1; }
grep -iE 'warning' "$OUT/build.log" > "$OUT/build_warnings.txt" || true
echo "build warnings: $(wc -l < "$OUT/build_warnings.txt")" | tee -a "$SUMMARY"

step ctest-cuda ctest_cuda.log ctest --test-dir "$BUILD" -R cuda --output-on-failure
# The CUDA Hines test alone, with its own output (device, copy bandwidth).
step test_hines_cuda test_hines_cuda.log "$BUILD/tests/test_hines_cuda"

SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$SAN" ]; then
    for tool in memcheck racecheck synccheck initcheck; do
        step "sanitizer-$tool" "sanitizer_$tool.log" env NS_TEST_QUICK=1 \
            "$SAN" --tool "$tool" --error-exitcode 99 "$BUILD/tests/test_hines_cuda"
    done
else
    echo "compute-sanitizer: not found, skipped" | tee -a "$SUMMARY"
fi

OBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || true)
if [ -n "$OBJ" ]; then
    step resource-usage resource_usage.txt "$OBJ" --dump-resource-usage "$BUILD/src/libneurosolve.a"
else
    echo "cuobjdump: not found, skipped" | tee -a "$SUMMARY"
fi
echo "logs in $OUT"
