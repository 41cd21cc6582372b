#!/usr/bin/env bash
# Issue 21 part 4 on the GPU machine (one H100/H200, 16-core host), about 6-7 minutes:
#   1. build (CUDA, Release); test_life_cuda (every variant vs the CSR products, voxel-f32d vs the
#      float32-rounded dictionary), test_life_trx, ctest -R life
#   2. the 500,000-fiber product table: every GPU variant, the old float64 kernels and the new
#      voxel-f32d in the same run, each row's fraction of the copy bandwidth and its error
#   3. (LIFE_STEPS=ncu, not in the default) Nsight Compute: L2 / DRAM bytes of voxel-voxel vs voxel-f32d
#   4. whole-brain scale (bench life-scale): 1 M streamlines over a 2 mm 91 x 109 x 91 grid, CPU and
#      GPU with the same 5 updates (weights compared); then 1 M and 10 M on the GPU with LIFE_ITERS
#      (default 200) updates, generated in memory; peak host RSS (time -v) and device memory
#      (nvidia-smi, sampled every 0.5 s)
# Results (at most 8 files) go to $OUT (default ./out). LIFE_STEPS picks a subset of
# "test products ncu scale" (default: "test products scale"); e.g. LIFE_STEPS=scale LIFE_ITERS=500
# for the 10 M fit to ENCODE's maxit alone.
set -uo pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT"
B=build-lifegpu
JOBS=$(nproc)
STEPS=${LIFE_STEPS:-test products scale}
ITERS=${LIFE_ITERS:-200}
export OMP_WAIT_POLICY=passive
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
  cmake -S . -B $B -DNS_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DNS_TESTS=ON
  cmake --build $B -j"$JOBS" --target neurosolve_cli test_life_cuda test_life_products test_life_fit test_life_trx -- -k
} > "$OUT/lifegpu_build.log" 2>&1 || { tail -40 "$OUT/lifegpu_build.log"; exit 1; }
stamp "built"
NS=$B/neurosolve

if has test; then
  { timeout 120 $B/tests/test_life_cuda; echo "test_life_cuda rc $?"
    timeout 60 $B/tests/test_life_trx; echo "test_life_trx rc $?"
    (cd $B && timeout 120 ctest -R "test_life_(products|fit|cuda|trx)" -j 4 --output-on-failure); echo "ctest rc $?"
  } > "$OUT/lifegpu_tests.log" 2>&1
  grep -E "rc [0-9]|checks|voxel-f32d weights|tests passed|Failed|CHECK failed" "$OUT/lifegpu_tests.log" | head -20
  stamp "tests"
fi

if has products; then
  # The product table (all variants, old and new, same run, copy bandwidth measured first) and
  # a short SBBNNLS row; GPU-reference runs 2 iterations (extrapolated, its cost per update is fixed).
  timeout 240 $NS bench life --backend cuda --fibers 500000 --iters 20 --gpu-ref-iters 2 --repeats 10 \
    --ref-variant voxel-voxel --threads "$JOBS" --csv "$OUT/lifegpu_products.csv" > "$OUT/lifegpu_products.txt" 2>&1
  echo "bench life rc $?"
  grep -E "copy bandwidth|^500000 .*cuda" "$OUT/lifegpu_products.txt" | head -40
  # old vs new, fraction of the copy bandwidth (csv: table,...,variant,input,ms,gbs,copy_fraction,max_rel_err)
  awk -F, 'NR > 1 && $1 == "products" && $5 == "cuda" && ($7 == "voxel-voxel" || $7 == "voxel-f32d") {
      printf "%-12s %-4s %-7s %8.3f ms  %.3f of copy  err %s\n", $7, $6, $8, $9, $11, $12 }' \
    "$OUT/lifegpu_products.csv"
  stamp "products"
fi

if has ncu && command -v ncu > /dev/null; then
  $NS life synth /tmp/lifegpu_m500k --fibers 500000 --L 360 > /dev/null 2>&1
  for v in voxel-voxel voxel-f32d; do
    timeout 60 ncu --clock-control none -k 'regex:voxel_mw|key_mty|voxel_mty_f32' --launch-skip 2 --launch-count 2 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes.sum \
      $NS life fit /tmp/lifegpu_m500k --backend cuda --mw $v --mty $v --iters 3 --tolg 0 --tolo 0 --quiet --out /tmp/lifegpu_w.npy \
      >> "$OUT/lifegpu_ncu.txt" 2>&1
    echo "ncu $v rc $?"
  done
  grep -E "voxel_mw|key_mty|voxel_mty_f32|gpu__time|lts__t_bytes|dram__bytes_read" "$OUT/lifegpu_ncu.txt" | head -30
  rm -rf /tmp/lifegpu_m500k
  stamp "ncu"
fi

if has scale; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > /tmp/lifegpu_mem.txt 2>/dev/null &
  smi=$!
  # CPU and GPU from the same model and the same 5 updates: the weights must agree
  /usr/bin/time -v timeout 150 $NS bench life-scale --fibers 1000000 --iters 5 --cpu-iters 5 --threads "$JOBS" \
    --csv "$OUT/lifegpu_scale_check.csv" > "$OUT/lifegpu_scale.txt" 2>&1
  echo "life-scale 1M CPU+GPU rc $?"
  # 1 M and 10 M on the GPU
  /usr/bin/time -v timeout 330 $NS bench life-scale --fibers 1000000,10000000 --iters "$ITERS" --cpu-iters 0 \
    --threads "$JOBS" --csv "$OUT/lifegpu_scale.csv" >> "$OUT/lifegpu_scale.txt" 2>&1
  echo "life-scale 1M,10M GPU rc $?"
  kill $smi 2>/dev/null
  echo "peak device memory used (nvidia-smi, MiB): $(sort -n /tmp/lifegpu_mem.txt | tail -1)" | tee -a "$OUT/lifegpu_scale.txt"
  grep -vE "^\s+(Average|Exit|File|Swaps|Socket|Signals|Page size|Minor|Major|Voluntary|Involuntary|Percent|System time|User time)" \
    "$OUT/lifegpu_scale.txt" | head -60
  stamp "scale"
fi
stamp "done"
