#!/usr/bin/env bash
# LiFE on the GPU machine: build with CUDA, run the LiFE tests, then the
# benchmark into $OUT (default ./out). Budget: about 4 minutes of GPU time.
#   bash bench/device_life.sh            (from the repository root)
set -euo pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT"
JOBS=$(nproc)
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  cmake -S . -B build-gpu -DNS_CUDA=ON -DCMAKE_BUILD_TYPE=Release
  cmake --build build-gpu -j"$JOBS" --target neurosolve_cli test_life_products test_life_fit test_life_io test_life_cuda
} > "$OUT/life_build.log" 2>&1 || { tail -50 "$OUT/life_build.log"; exit 1; }

# Tests: the CUDA one must not skip here.
(cd build-gpu && ctest -R life --output-on-failure) 2>&1 | tee "$OUT/life_ctest.log"
./build-gpu/tests/test_life_cuda 2>&1 | tee -a "$OUT/life_ctest.log"

# Benchmark, about 4 minutes in all (each step under `timeout`):
# 1) every product variant on CPU and GPU, checked against the naive CPU
#    product, and the four SBBNNLS codes (20 iterations; CPU-naive runs 1
#    update and is extrapolated) on a 100,000-fiber model;
timeout 90 ./build-gpu/neurosolve bench life --fibers 100000 --iters 20 --naive-iters 2 \
  --csv "$OUT/life_100k.csv" --plot "$OUT/life_100k.png" 2>&1 | tee "$OUT/life_100k.txt" || true
# 2) GPU-reference against GPU-opt on the paper's Table 9 size (500,000
#    fibers), 200 iterations, with the GPU product table at that size;
timeout 150 ./build-gpu/neurosolve bench life --backend cuda --fibers 500000 --iters 200 \
  --csv "$OUT/life_500k.csv" --plot "$OUT/life_500k.png" 2>&1 | tee "$OUT/life_500k.txt" || true
# 3) the fiber sweep on the GPU (Table 9's rows), 100 iterations.
timeout 90 ./build-gpu/neurosolve bench life --backend cuda --fibers 50000,150000,250000 \
  --products-at 50000 --iters 100 --csv "$OUT/life_sweep.csv" --plot "$OUT/life_sweep.png" 2>&1 \
  | tee "$OUT/life_sweep.txt" || true
