#!/usr/bin/env bash
# The simulation on the GPU machine (docs/simulation.md, bench/README.md):
# build with CUDA, run the cable tests (GPU loops against the CPU loop,
# NEURON references), compute-sanitizer on the onchip loop, then
# `neurosolve bench sim` for the GPU loops (onchip with each lane count,
# tree) on a small, a medium (the issue's ~300 compartments) and a
# large real morphology, with NEURON's single-thread rate when NEURON is
# importable. Results in $OUT (or ./sim-results).
# Usage: bash bench/device_sim.sh   (SKIP_SANITIZE=1, SKIP_NEURON=1 to shorten)
set -uo pipefail
OUT=${OUT:-sim-results}
mkdir -p "$OUT"
BUILD=build-device-sim
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=ON -DNS_MPI=OFF > "$OUT/cmake.log" 2>&1
cmake --build "$BUILD" -j"$(nproc)" --target neurosolve_cli test_cable test_cable_neuron test_cable_cuda \
  > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
NS=./$BUILD/neurosolve
for t in test_cable test_cable_neuron test_cable_cuda; do
  "./$BUILD/tests/$t" > "$OUT/$t.log" 2>&1; echo "$t: exit $?"; grep -E "FAIL|lanes" "$OUT/$t.log" | head -20
done
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1 || true

if [ -z "${SKIP_SANITIZE:-}" ]; then
  M=data/morphologies
  for tool in memcheck racecheck; do
    for lanes in 1 4 32; do
      compute-sanitizer --tool $tool --error-exitcode 9 "$NS" simulate $M/ca1_h10.swc $M/dg_granule_1220882a.swc \
        --cells 70 --tstop 1 --method onchip --gpu-lanes $lanes --record-cells 3 --no-progress \
        > "$OUT/sanitize_${tool}_$lanes.log" 2>&1
      echo "compute-sanitizer $tool lanes $lanes: exit $? ($(grep -c -i 'error' "$OUT/sanitize_${tool}_$lanes.log") lines with 'error')"
    done
  done
fi

NEURON_ARG=""
[ -z "${SKIP_NEURON:-}" ] && python3 -c "import neuron" 2>/dev/null && NEURON_ARG="--neuron 100"
V="onchip,onchip:4,onchip:8,onchip:16,onchip:32,tree"
"$NS" bench sim --backend all --cpu-max 10000 --cells 1000,10000,100000,1000000 --gpu-methods "$V" $NEURON_ARG \
  --csv "$OUT/sim_chat.csv" 2>&1 | tee "$OUT/bench_chat.txt"
for m in dg_granule_1220882a l5pc_bbp_axon; do
  "$NS" bench sim --backend cuda --cells 100000 --morph data/morphologies/$m.swc --gpu-methods "$V" \
    --csv "$OUT/sim_$m.csv" 2>&1 | tee "$OUT/bench_$m.txt"
done
