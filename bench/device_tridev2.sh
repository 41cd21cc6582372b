#!/usr/bin/env bash
# Issue 15, second pass (wave "engine"), one device run of about 5 minutes:
#   1. build (CUDA, sm_90) only what the run needs: the CLI, the tridiagonal
#      and simulation-state tests, the Python extension;
#   2. the GPU tests: test_tridiag_cuda (device calls of every GPU method,
#      pivots through wait, cuSPARSE's non-finite scan), test_tridiag,
#      test_sim_state (ns_sim_state_part on both GPU loops against the same
#      loop and against the CPU loop), and the Python GPU test of
#      Simulation.state_part (DLPack through CuPy);
#   3. `bench tridiag --calls` rows (kernel / device call / host call, same
#      run): the device call's ratio to the kernel time (target <= 1.02),
#      at the points of bench/README.md's device-call table.
# Files in $OUT (4): tridev2_summary.txt (rc and seconds per step, the tests'
# last lines), tridev2_calls.txt (the bench tables), tridev2_calls.csv,
# tridev2_logs.tgz (every log).
# Usage (repository root): OUT=/some/dir bash bench/device_tridev2.sh [STEP...]
#   steps: tests python bench (default: all three)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT"
LOG=/tmp/ns_tridev2_logs
rm -rf "$LOG"; mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
STEPS=${*:-tests python bench}
has() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
SUM=$OUT/tridev2_summary.txt
: > "$SUM"
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-24s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$SUM"
    tail -n 6 "$LOG/$name.log" | sed 's/^/    /' >> "$SUM"
    return $rc
}
pack() { tar -C /tmp -czf "$OUT/tridev2_logs.tgz" ns_tridev2_logs; }
trap pack EXIT
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -1;
  nproc; git -C "$ROOT" log -1 --oneline 2>/dev/null; } >> "$SUM" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90
run build 300 cmake --build "$BUILD" -j "$(nproc)" --target neurosolve_cli test_tridiag test_tridiag_cuda test_sim_state
# the Python extension apart (its target exists only where CMake found nanobind)
has python && run build-python 200 cmake --build "$BUILD" -j "$(nproc)" --target _core
if has tests; then
  for t in test_tridiag test_tridiag_cuda test_sim_state; do
    run "$t" 180 "$BUILD/tests/$t"
  done
fi
if has python; then
  # the extension this build made (build-gpu/python/neurosolve): state_part through CuPy, and the
  # CPU version of the same check
  run pytest-state 180 env PYTHONPATH="$BUILD/python" python3 -m pytest -q -p no:cacheprovider \
      "$ROOT/python/tests/test_gpu.py" "$ROOT/python/tests/test_sim.py" -k "state_part or state_parts or state_vectors or state_on_device"
fi
if has bench; then
  # kernel (ms), device call (dcall_ms: events around the queued call, inputs restored and L2 flushed
  # before each, as for the kernel) and host-array call (host_ms, wall), same run
  run bench-calls-a64 120 "$BUILD/neurosolve" bench tridiag --calls --backend cuda --grid a --n 64 \
      --batch 25600,256000 --precision double --csv "$LOG/calls_a64.csv"
  run bench-calls-a512 120 "$BUILD/neurosolve" bench tridiag --calls --backend cuda --grid a --n 512 \
      --batch 2560,25600 --precision double --csv "$LOG/calls_a512.csv"
  run bench-calls-b 150 "$BUILD/neurosolve" bench tridiag --calls --backend cuda --grid b --n 1024,8192 \
      --batch 200,2000 --precision double --csv "$LOG/calls_b.csv"
  { head -1 "$LOG/calls_a64.csv"; for f in "$LOG"/calls_*.csv; do tail -n +2 "$f"; done; } > "$OUT/tridev2_calls.csv"
  cat "$LOG"/bench-calls-*.log > "$OUT/tridev2_calls.txt"
fi
