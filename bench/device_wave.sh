#!/usr/bin/env bash
# One device call for the mixed-population work (issues 14, 15): build,
# the GPU tests, compute-sanitizer on the tree kernels, bench hines --mixed,
# bench sim --mixed (with NEURON's threads when its wheel is carried in
# .whl/). Logs packed into $OUT/logs.tgz, tables copied to $OUT.
# Usage: bash bench/device_wave.sh [STEP...]   (default: every step)
#   steps: tests gputests consumer profile ctest sanitize hines sim neuron before
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_logs
mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
NS=$BUILD/neurosolve
STEPS=${*:-tests sanitize hines sim}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-22s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 25 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/logs.tgz" ns_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DCMAKE_BUILD_TYPE=Release
run build 240 cmake --build "$BUILD" -j 16
for step in $STEPS; do
  case $step in
    tests)
      run tree-cuda 90 "$BUILD/tests/test_hines_tree_cuda"
      run cable-cuda 150 "$BUILD/tests/test_cable_cuda" ;;
    gputests)
      for t in test_hines_cuda test_cable_cuda test_hines_tree_cuda test_cuda_unsupported; do
        run "$t" 150 "$BUILD/tests/$t"
      done ;;
    profile)
      # Nsight Compute on the big cell's solve (a cluster) and on one tree-loop part with big cells
      N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
      run ncu-solve 200 "$N" --clock-control none --kernel-name regex:contract_big --launch-count 1 \
          --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
          "$NS" solve data/morphologies/dense_Animal_2_Basal_2.swc --method tree --cells 1
      run ncu-sim 200 "$N" --clock-control none --kernel-name regex:sim_tree_steps --launch-count 3 \
          --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
          "$NS" simulate data/morphologies/dense_Animal_2_Basal_2.swc data/morphologies/ca1_h10.swc --cells 5 \
          --tstop 0.5 --method tree --no-progress
      cat "$LOG/ncu-solve.log" "$LOG/ncu-sim.log" > "$FINAL/ncu_tree.txt" ;;
    consumer)
      run consumer 300 ctest --test-dir "$BUILD" -R consumer -V ;;
    ctest)
      run ctest-gpu 300 ctest --test-dir "$BUILD" -j 8 --output-on-failure ;;
    sanitize)
      S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      for tool in memcheck racecheck; do
        run "san-solve-$tool" 60 "$S" --tool $tool --error-exitcode 9 "$NS" solve bundled --radii default:0.5 \
            --method tree --cells 108 --check
        run "san-sim-$tool" 60 "$S" --tool $tool --error-exitcode 9 "$NS" simulate data/morphologies/ca1_h10.swc \
            data/morphologies/dense_Animal_2_Basal_2.swc --cells 4 --tstop 0.5 --method tree --no-progress
      done ;;
    hines)
      run hines-mixed 200 "$NS" bench hines --mixed --workloads a,d,e,f --methods interleaved,fine-grained,tree \
          --repeats 10 --cpu-repeats 3 --csv "$FINAL/hines_mixed.csv"
      cp "$LOG/hines-mixed.log" "$FINAL/hines_mixed.txt" ;;
    sim)
      for m in dg_granule_1220882a ca1_h10 l5pc_bbp_axon ec3_80604 mouselight_AA0013_cng dense_Animal_2_Basal_2; do
        cells=100,2000; [ $m = dense_Animal_2_Basal_2 ] && cells=5,50
        run "sim-$m" 60 "$NS" bench sim --backend cuda --cells $cells --steps 200 \
            --morph data/morphologies/$m.swc --gpu-methods onchip,tree --csv "$LOG/sim_$m.csv"
        cp "$LOG/sim-$m.log" "$LOG/sim-$m.txt"
      done
      run sim-mixed 240 "$NS" bench sim --mixed --per 5,20,200 --jitter 10000 --gpu-methods auto,tree,onchip \
          --cpu-max 500000 --csv "$FINAL/sim_mixed.csv"
      cp "$LOG/sim-mixed.log" "$FINAL/sim_mixed.txt" ;;
    before)
      # the GPU loop before this wave (main at 0853768) against now, same run
      git -C "$ROOT" worktree add -f /tmp/ns_before 0853768 > "$LOG/before-worktree.log" 2>&1
      run before-build 240 bash -c "cmake -S /tmp/ns_before -B /tmp/ns_before/b -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=OFF \
          -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build /tmp/ns_before/b -j 16 --target neurosolve_cli"
      for bin in /tmp/ns_before/b/neurosolve "$NS"; do
        tag=$([ "$bin" = "$NS" ] && echo after || echo before)
        run "sim-chat-$tag" 120 "$bin" bench sim --backend cuda --cells 1000,10000,100000 --steps 200 \
            --gpu-methods onchip --csv "$LOG/sim_chat_$tag.csv"
        run "sim-chat-auto-$tag" 60 "$bin" bench sim --backend cuda --cells 1000,10000,100000 --steps 200 \
            --morph data/morphologies/l5pc_bbp_axon.swc --gpu-methods $([ $tag = after ] && echo auto || echo onchip,interleaved)
      done
      cat "$LOG"/sim-chat-*.log > "$FINAL/sim_before_after.txt" ;;
    neuron)
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$ROOT"/.whl/*.whl \
          > "$LOG/pip.log" 2>&1 && export PYTHONPATH=/tmp/site
      run sim-neuron 420 "$NS" bench sim --mixed --per 5 --jitter 0 --gpu-methods auto --neuron-threads 16 \
          --csv "$FINAL/sim_neuron.csv"
      cp "$LOG/sim-neuron.log" "$FINAL/sim_neuron.txt" ;;
  esac
done
cat "$LOG/summary.txt"
