#!/usr/bin/env bash
# The simulation on the GPU machine: build with CUDA, run the cable tests
# (GPU against CPU, NEURON references), then time the GPU loop and the CPU
# loop on one real morphology for growing populations. Results go to $OUT
# (or ./sim-results). Usage: bash bench/device_sim.sh
set -euo pipefail
OUT=${OUT:-sim-results}
mkdir -p "$OUT"
BUILD=build-device-sim
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=ON > "$OUT/cmake.log" 2>&1
cmake --build "$BUILD" -j"$(nproc)" --target neurosolve_cli test_cable test_cable_neuron test_cable_cuda \
  > "$OUT/build.log" 2>&1
for t in test_cable test_cable_neuron test_cable_cuda; do
  "./$BUILD/tests/$t" 2>&1 | tee "$OUT/$t.log"
done
nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/gpu.txt" 2>&1 || true
MORPH=data/morphologies/ca1_h10.swc   # 491 compartments (minimal junction policy)
{
  echo "cells,backend,compartments,steps,wall_s,steps_per_s,compartment_steps_per_s"
  for cells in 1000 10000 100000 1000000; do
    for be in cuda cpu; do
      steps=400                     # 10 ms at dt 0.025
      [ "$be" = cpu ] && [ "$cells" -gt 10000 ] && continue   # the CPU row at 1e5+ takes minutes
      ./"$BUILD"/neurosolve simulate "$MORPH" --cells "$cells" --backend "$be" --tstop 10 \
        --record-cells 1 --no-progress --json > "$OUT/sim_${be}_${cells}.json"
      python3 - "$OUT/sim_${be}_${cells}.json" "$cells" "$be" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]},{sys.argv[3]},{d['compartments']},{d['steps']},{d['wall_s']:.4f},"
      f"{d['steps_per_s']:.1f},{d['compartment_steps_per_s']:.4g}")
PY
    done
  done
} | tee "$OUT/sim_bench.csv"
