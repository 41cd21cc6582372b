#!/usr/bin/env bash
# One device call for issue 18's GPU parts (checkpoints, GPU memory checks):
# builds with CUDA (only the targets needed), runs the GPU checkpoint test,
# test_cable_cuda, the CPU checkpoint tests, and the command line on the
# GPU: a run saved at 10.3 ms and resumed must write the same files as the
# uninterrupted GPU run; a SIGINT'd GPU run leaves .partial files and a
# checkpoint; simulate and life refuse a GPU run larger than the free GPU
# memory before allocating. Logs in $OUT/logs.tgz, summary in $OUT/summary.txt.
# Usage: OUT=... bash bench/device_harden.sh     (about 3 minutes on an H100)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_harden_logs
rm -rf "$LOG" && mkdir -p "$LOG"
BUILD=$ROOT/build-harden
NS=$BUILD/neurosolve
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-26s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 15 "$LOG/$name.log"
    return $rc
}
pack() { cp "$LOG/summary.txt" "$FINAL/summary.txt" 2>/dev/null; tar -C /tmp -czf "$FINAL/logs.tgz" ns_harden_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_TESTS=ON
run build 240 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_cable_checkpoint_cuda test_cable_cuda \
    test_cable_checkpoint
run checkpoint-cuda 120 "$BUILD/tests/test_cable_checkpoint_cuda"
run cable-cuda 150 "$BUILD/tests/test_cable_cuda"
run checkpoint-cpu 60 "$BUILD/tests/test_cable_checkpoint"
run cli-harden 180 python3 "$ROOT/tests/test_cli_harden.py" "$NS" "$ROOT"
# the command line on the GPU: resume gives the uninterrupted run's files
W=/tmp/ns_harden_work; rm -rf "$W"; mkdir -p "$W"
C="$ROOT/data/morphologies/ca1_h10.swc $ROOT/data/morphologies/purk_dbbs.swc"
for m in tree onchip; do
  run "gpu-full-$m" 60 "$NS" simulate $C --cells 50 --tstop 30 --backend cuda --method $m --record-cells 3 \
      --no-progress --out "$W/full_$m"
  run "gpu-save-$m" 60 "$NS" simulate $C --cells 50 --tstop 30 --backend cuda --method $m --record-cells 3 \
      --no-progress --checkpoint "$W/$m.ckpt" --checkpoint-at 10.3
  run "gpu-resume-$m" 60 "$NS" simulate $C --cells 50 --tstop 30 --backend cuda --method $m --record-cells 3 \
      --no-progress --resume "$W/$m.ckpt" --out "$W/res_$m"
  for f in traces.csv spikes.csv; do
    if cmp -s "$W/full_${m}_$f" "$W/res_${m}_$f"; then echo "gpu-resume-$m $f: identical" ; else echo "gpu-resume-$m $f: DIFFERS"; fi
  done | tee -a "$LOG/summary.txt"
done
# SIGINT on the GPU
( "$NS" simulate $C --cells 2000 --tstop 20000 --backend cuda --no-progress --out "$W/int" \
    --checkpoint "$W/int.ckpt" > "$LOG/gpu-sigint.log" 2>&1 & pid=$!; sleep 8; kill -INT $pid; wait $pid;
  echo "gpu-sigint rc=$? (expected 1)"; ls "$W" | grep -E '^int' ) | tee -a "$LOG/summary.txt"
tail -n 4 "$LOG/gpu-sigint.log" | tee -a "$LOG/summary.txt"
# GPU memory refusals (before allocating): ca1_h10 cells in the tree loop (109 bytes per
# compartment + 1,040 per cell on the GPU, 40 per compartment on the host) for 1.15x the free
# GPU memory; the host check passes, the GPU estimate refuses
FREE_MIB=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)
CELLS=$(python3 -c "print(int($FREE_MIB * 1048576 * 1.15 / (491 * 109 + 1040)))")
run gpu-mem-simulate 120 "$NS" simulate "$ROOT/data/morphologies/ca1_h10.swc" --cells "$CELLS" --tstop 0.1 \
    --backend cuda --method tree --no-progress
grep -h "GPU memory" "$LOG/gpu-mem-simulate.log" | head -2 | tee -a "$LOG/summary.txt"
# the LiFE engine's estimate (already before its first allocation) is tested in test_life_cuda
run build-life 240 cmake --build "$BUILD" -j 16 --target test_life_cuda
run life-cuda 120 "$BUILD/tests/test_life_cuda"
echo done | tee -a "$LOG/summary.txt"
