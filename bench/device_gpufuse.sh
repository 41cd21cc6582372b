#!/usr/bin/env bash
# One device call for the fused tree loop (issue 19's target "generated hh
# within 5% of the hand-written hh on the GPU loop"; src/cable/cuda/sim_fused.h):
# build the needed targets with CUDA (sm_90, -j16), the GPU tests of the
# model path, compute-sanitizer memcheck (small groups, a single cell in
# shared memory, a big cell in device memory) and racecheck on small fused
# runs, then the
# bench rows of bench/README.md, "Generated hh against the hand-written hh",
# in one run: the hand-written hh (no model, --method tree), the generated
# hh per step (--gpu-mechanisms per-step: the path before this work) and
# fused (auto), 9,984 cells of the 39 bundled morphologies, 800 steps, two
# rounds; and the layer 5 Hay model row (a library: stays per step).
# Logs in $OUT/gpufuse_logs.tgz, the table in $OUT/gpufuse_bench.txt.
# Call (no wheels needed): run(command="bash bench/device_gpufuse.sh", timeout_s=600); on a
# warm machine (build kept) a second call can take the skipped steps: bash bench/device_gpufuse.sh bench l5
# Usage: bash bench/device_gpufuse.sh [STEP...]   (default: tests sanitize bench l5 ptxas cable;
# steps that would start after BUDGET seconds, 470 by default, are skipped and say so)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_gpufuse_logs
mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
NS=$BUILD/neurosolve
STEPS=${*:-tests sanitize bench l5 ptxas cable}
START=$(date +%s)
BUDGET=${BUDGET:-470} # [s] a step that would start later is skipped (the device call's limit is 600 s)
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-26s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt" \
        "$FINAL/gpufuse_summary.txt"
    tail -n 12 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/gpufuse_logs.tgz" ns_gpufuse_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; git -C "$ROOT" log --oneline -3; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON -DNS_PYTHON=OFF \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
run build 400 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_policy test_sim_model_cuda test_cable_cuda test_sim_state
P=/tmp/ns_gpufuse; mkdir -p $P
printf 'all.insert = hh\n' > $P/hh.model
printf 'all.insert = hh\ndend.insert = pas\ndend.g_pas = 2e-4\n' > $P/hhpas.model
for step in $STEPS; do
  if [ $(( $(date +%s) - START )) -gt "$BUDGET" ]; then
    echo "$step skipped: ${BUDGET} s budget spent" | tee -a "$LOG/summary.txt" "$FINAL/gpufuse_summary.txt"
    continue
  fi
  case $step in
    tests)
      run test_policy 60 "$BUILD/tests/test_policy"
      run test_sim_model_cuda 300 "$BUILD/tests/test_sim_model_cuda"
      run test_sim_state 200 "$BUILD/tests/test_sim_state"
      grep -E "fused|per step|vs CPU|i_pas|written" "$LOG/test_sim_model_cuda.log" "$LOG/test_sim_state.log" \
        > "$FINAL/gpufuse_tests.txt" ;;
    sanitize)
      S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      M=$ROOT/data/morphologies
      run san-fused-memcheck 150 "$S" --tool memcheck --error-exitcode 9 "$NS" simulate "$M/ca1_h10.swc" \
          "$M/dg_granule_1220882a.swc" "$M/dense_Animal_2_Basal_2.swc" --cells 3 --tstop 0.25 --backend cuda \
          --method tree --model $P/hhpas.model --gpu-mechanisms fused --no-progress --json
      run san-fused-racecheck 150 "$S" --tool racecheck --error-exitcode 9 "$NS" simulate "$M/ca1_h10.swc" \
          "$M/dg_granule_1220882a.swc" --cells 3 --tstop 0.1 --backend cuda --method tree --model $P/hhpas.model \
          --gpu-mechanisms fused --no-progress ;;
    bench)
      T="$FINAL/gpufuse_bench.txt"
      echo "# simulate timings, $(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader), $(nproc) cores, $(git -C "$ROOT" rev-parse --short HEAD)" > "$T"
      S="simulate --no-progress --json --record soma --radii default:1 --iclamp soma:1:1000:auto"
      for rep in ${REPS:-1 2}; do
        run "hh-hand-$rep" 200 "$NS" $S bundled --cells 256 --tstop 20 --backend cuda --method tree
        run "hh-perstep-$rep" 200 "$NS" $S bundled --cells 256 --tstop 20 --backend cuda --method tree \
            --model $P/hh.model --gpu-mechanisms per-step
        run "hh-fused-$rep" 200 "$NS" $S bundled --cells 256 --tstop 20 --backend cuda --method tree \
            --model $P/hh.model
      done
      python3 - "$LOG" >> "$T" <<'EOF'
import json, sys, glob, os
log = sys.argv[1]
def load(name):
    try:
        txt = open(os.path.join(log, name + ".log")).read()
        return json.loads(txt[txt.index("{"):txt.rindex("}") + 1])
    except Exception as e:
        return None
print("| round | hand-written [Gcomp-steps/s] | generated per step | generated fused | per step / hand | fused / hand | fused / per step | spikes hand, per step, fused | fused path |")
print("|---|---|---|---|---|---|---|---|---|")
for rep in ("1", "2"):
    h, p, f = load("hh-hand-" + rep), load("hh-perstep-" + rep), load("hh-fused-" + rep)
    if not (h and p and f):
        print("| %s | missing run(s) |" % rep); continue
    g = lambda r: r["compartment_steps_per_s"] / 1e9
    print("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %d, %d, %d | %s |" % (rep, g(h), g(p), g(f), g(p) / g(h),
          g(f) / g(h), g(f) / g(p), h["spikes"], p["spikes"], f["spikes"], f.get("gpu_mechanisms", "?") + "/" + p.get("gpu_mechanisms", "?")))
    print("  cells %d compartments %d steps %d" % (h["cells"], h["compartments"], h["steps"]))
EOF
      cat "$T" ;;
    l5)
      T="$FINAL/gpufuse_bench.txt"
      run build-bbp-cuda 300 "$NS" mechanisms build "$ROOT/data/mechanisms/bbp" -o $P/libbbp.so --cuda
      L5="$ROOT/data/morphologies/l5pc_bbp_axon.swc --params $ROOT/data/models/l5pc_hay.params"
      L5M="--model $ROOT/data/models/l5pc_hay.model --mechanisms $P/libbbp.so --iclamp soma:1:1000:1.8"
      run l5-gpu-10000 300 "$NS" simulate --no-progress --json --record soma --radii default:1 $L5 $L5M --cells 10000 \
          --tstop 20 --backend cuda
      printf 'l5-gpu-10000 %s\n' "$(grep -o '"gpu_mechanisms":"[a-z-]*"\|"compartments":[0-9]*\|"wall_s":[0-9.e+-]*\|"compartment_steps_per_s":[0-9.e+-]*\|"spikes":[0-9]*' "$LOG/l5-gpu-10000.log" | tr '\n' ' ')" >> "$T"
      tail -n 1 "$T" ;;
    ptxas)
      # registers and spills of the tree kernel's instances (docs/mechanisms.md quotes them)
      run ptxas 120 nvcc -arch=sm_90 -O3 -std=c++17 -I"$ROOT/include" -I"$ROOT/src" -I"$BUILD/include" -Xptxas -v \
          -c "$ROOT/src/cable/cuda/sim_tree.cu" -o /tmp/ns_gpufuse_tree.o
      grep -E "Compiling entry|stack frame|registers" "$LOG/ptxas.log" | sed 's/_ZN[0-9]*_GLOBAL__N__[a-z0-9_]*//' \
          > "$FINAL/gpufuse_ptxas.txt" ;;
    cable)
      run test_cable_cuda 120 "$BUILD/tests/test_cable_cuda" ;;
  esac
done
cat "$LOG/summary.txt"
