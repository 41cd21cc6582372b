#!/usr/bin/env bash
# One device call for the engine (issue 15): build with CUDA, the GPU tests
# that cover the backend layer and the device/host entry points,
# compute-sanitizer on the device entry point, the engine benchmark
# (kernel / device call / host call, bench/engine/engine_bench.c), and the
# GPU simulation loop before (main at $BEFORE) and after, same run.
# Logs packed into $OUT/engine_logs.tgz, tables copied to $OUT.
# Usage: bash bench/device_engine.sh [STEP...]  (default: tests bench before)
#   steps: tests ctest sanitize bench before
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_engine_logs
mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
NS=$BUILD/neurosolve
BEFORE=${BEFORE:-a056621}
STEPS=${*:-tests bench before}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-26s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 30 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/engine_logs.tgz" ns_engine_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90
run build 300 cmake --build "$BUILD" -j 16
for step in $STEPS; do
  case $step in
    tests)
      for t in test_policy test_hines_device_cuda test_hines_tree_cuda test_hines_cuda test_hines_mixed_cuda \
               test_cable_cuda test_tridiag_cuda test_life_cuda test_cuda_unsupported; do
        run "$t" 200 "$BUILD/tests/$t"
      done ;;
    ctest)
      run ctest-gpu 400 ctest --test-dir "$BUILD" -j 8 --output-on-failure ;;
    sanitize)
      S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      run san-device-memcheck 150 "$S" --tool memcheck --error-exitcode 9 "$BUILD/engine_bench" \
          "$ROOT/data/morphologies" 200 ;;
    bench)
      run engine-bench 300 "$BUILD/engine_bench" "$ROOT/data/morphologies" 100000
      cp "$LOG/engine-bench.log" "$FINAL/engine_bench.txt" ;;
    before)
      git -C "$ROOT" worktree add -f /tmp/ns_before "$BEFORE" > "$LOG/before-worktree.log" 2>&1
      run before-build 240 bash -c "cmake -S /tmp/ns_before -B /tmp/ns_before/b -DNS_CUDA=ON -DNS_MPI=OFF \
          -DNS_TESTS=OFF -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 > /dev/null && \
          cmake --build /tmp/ns_before/b -j 16 --target neurosolve_cli"
      for rep in 1 2; do
        for bin in /tmp/ns_before/b/neurosolve "$NS"; do
          tag=$([ "$bin" = "$NS" ] && echo after || echo before)
          run "sim-chat-$tag-$rep" 120 "$bin" bench sim --backend cuda --cells 1000,10000,100000 --steps 200 \
              --gpu-methods onchip,tree
          run "sim-mixed-$tag-$rep" 150 "$bin" bench sim --mixed --per 5,20 --jitter 0 --gpu-methods tree \
              --cpu-max 0
        done
      done
      cat "$LOG"/sim-*.log > "$FINAL/sim_before_after.txt"
      git -C "$ROOT" worktree remove --force /tmp/ns_before > /dev/null 2>&1 ;;
  esac
done
cat "$LOG/summary.txt"
