#!/usr/bin/env bash
# One device call: build, GPU tests, benchmarks. Logs are packed into
# $OUT/logs.tgz (the device tool returns at most 8 files); the tables are
# copied to $OUT directly. Usage: bench/device_session.sh STEP...
#   steps: hines-tests hines-bench hines-bench-quick tridiag-tests tridiag-bench life sim sanitize
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_logs
mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
NS=$BUILD/neurosolve
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-22s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 40 "$LOG/$name.log"
    return $rc
}
{ date -u; nvidia-smi; nvcc --version; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DCMAKE_BUILD_TYPE=Release
run build 400 cmake --build "$BUILD" -j 16 -- -k  # keep going: other modules may be mid-work
grep -i warning "$LOG/build.log" | head -20
for step in "$@"; do
  case $step in
    hines-tests) run hines-tests 300 ctest --test-dir "$BUILD" -R "hines|cli" --output-on-failure ;;
    hines-bench) run hines-bench 420 "$NS" bench hines --backend cuda --large --csv "$FINAL/hines.csv"
                 cp "$LOG/hines-bench.log" "$FINAL/hines_table.txt" ;;
    hines-bench-quick) run hines-bench 300 "$NS" bench hines --backend cuda --cells 256,25600,256000 --shapes medium-high,big-low,big-high --csv "$FINAL/hines_quick.csv"
                 cp "$LOG/hines-bench.log" "$FINAL/hines_table.txt" ;;
    tridiag-tests) run tridiag-tests 300 ctest --test-dir "$BUILD" -R tridiag --output-on-failure ;;
    tridiag-bench) run tridiag-bench 420 "$NS" bench tridiag --csv "$FINAL/tridiag.csv"
                 cp "$LOG/tridiag-bench.log" "$FINAL/tridiag_table.txt" ;;
    life) run life-tests 300 ctest --test-dir "$BUILD" -R life --output-on-failure ;;
    sim) run sim-tests 300 ctest --test-dir "$BUILD" -R "cable|sim" --output-on-failure ;;
    sanitize) S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
              for tool in memcheck racecheck synccheck; do
                run "san-$tool" 200 env NS_TEST_QUICK=1 "$S" --tool $tool --error-exitcode 99 "$BUILD/tests/test_hines_cuda"
              done ;;
    all-tests) run all-tests 400 ctest --test-dir "$BUILD" --output-on-failure -j 8 ;;
  esac
done
cp "$LOG/summary.txt" "$FINAL/summary.txt"
tar czf "$FINAL/logs.tgz" -C "$LOG" .
