#!/usr/bin/env bash
# Tridiagonal device calls and the device option (issue 15, parts A and B),
# one device run: build with CUDA, the GPU tests the work touches, a
# compute-sanitizer memcheck of the tridiagonal GPU test, and the
# `bench tridiag --calls` rows (kernel / device call / host call, same run).
# Logs and tables under $OUT (at most 6 small files).
# Usage (repository root): OUT=/some/dir bash bench/device_tridev.sh [STEP...]
#   steps: tests sanitize bench (default: all three); about 4 minutes on an H100.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT"
LOG=/tmp/ns_tridev_logs
rm -rf "$LOG"; mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
STEPS=${*:-tests sanitize bench}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-28s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/tridev_summary.txt"
    tail -n 25 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$OUT/tridev_logs.tgz" ns_tridev_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; } > "$LOG/machine.txt" 2>&1
: > "$OUT/tridev_summary.txt"
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90
run build 300 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_tridiag test_tridiag_cuda test_cable_cuda \
    test_life_cuda test_cable test_policy
for step in $STEPS; do
  case $step in
    tests)
      # test_tridiag_cuda: device calls of every GPU method against the sequential solve, two threads,
      # bad input, pivots through wait; test_cable_cuda / test_life_cuda: the device option of the
      # simulation and LiFE handles (default NS_DEVICE_CURRENT)
      for t in test_tridiag test_tridiag_cuda test_cable test_cable_cuda test_life_cuda test_policy; do
        run "$t" 240 "$BUILD/tests/$t"
      done ;;
    sanitize)
      S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      run san-memcheck-bench 150 "$S" --tool memcheck --error-exitcode 9 "$BUILD/neurosolve" bench tridiag \
          --calls --backend cuda --grid a --n 64 --batch 2560 --precision double --repeats 2 ;;
    bench)
      # kernel (ms), device call (dcall_ms: events around the queued call, inputs restored and L2
      # flushed before each, as for the kernel) and host-array call (host_ms, wall), same run
      # (points of at most 16.4 M unknowns: the host-array call moves ~0.5 GB per run)
      run bench-calls-a64 120 "$BUILD/neurosolve" bench tridiag --calls --backend cuda --grid a --n 64 \
          --batch 25600,256000 --precision double --csv "$LOG/calls_a64.csv"
      run bench-calls-a512 120 "$BUILD/neurosolve" bench tridiag --calls --backend cuda --grid a --n 512 \
          --batch 2560,25600 --precision double --csv "$LOG/calls_a512.csv"
      run bench-calls-b 150 "$BUILD/neurosolve" bench tridiag --calls --backend cuda --grid b --n 1024,8192 \
          --batch 200,2000 --precision double --csv "$LOG/calls_b.csv"
      { head -1 "$LOG/calls_a64.csv"; for f in "$LOG"/calls_*.csv; do tail -n +2 "$f"; done; } > "$OUT/tridev_calls.csv"
      cat "$LOG"/bench-calls-*.log > "$OUT/tridev_calls.txt" ;;
  esac
done
