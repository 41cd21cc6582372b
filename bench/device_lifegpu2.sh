#!/usr/bin/env bash
# Issue 21, target "GPU products >= 0.3 of the copy bandwidth on the 500,000-fiber model", on the
# GPU machine (one H100/H200, 16-core host), about 6-8 minutes:
#   1. build this tree (CUDA sm_90, Release); then, in the background during steps 2-3, the baseline
#      tree (the kernels before this branch, main at e5aafbd) from build-lifegpu2-base/base.tar.gz
#      when it is carried (or from git when .git is there; skipped otherwise)
#   2. test_life_cuda (every variant vs the CSR products; voxel-f32d / voxel-f16d exactly the
#      products of the rounded dictionary and near the float64 ones; fits), test_life_products,
#      test_life_fit, test_policy
#   3. compute-sanitizer memcheck of the voxel kernels (life fit with voxel-voxel, voxel-f32d,
#      voxel-f16d on two small models; test_life_cuda itself runs every variant's fits: too slow)
#   4. bench life on the 500,000-fiber model with this tree, then with the baseline: every variant,
#      the copy bandwidth measured at the start of each run, every row checked against the CPU
#      voxel-voxel product of the same input (max rel err column)
#   5. Nsight Compute (if ncu is there): time, DRAM and L2 bytes of voxel_mw / voxel_mty for
#      voxel-voxel and voxel-f16d on a 100,000-fiber model (same dictionary, L = 360)
# Usage (from the repository root): OUT=out bash bench/device_lifegpu2.sh [STEP...]
#   steps: build tests memcheck products base ncu (default: all). At most 8 files go to $OUT.
# On the device machine: command "bash bench/device_lifegpu2.sh", carry ["build-lifegpu2-base"]
# (an ignored folder holding base.tar.gz, `git archive --prefix=base/ e5aafbd` of the sources; without
# it the baseline rows are skipped unless .git is there).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STEPS=${*:-build tests memcheck products base ncu}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
B=$ROOT/build-lifegpu2
BB=/tmp/lifegpu2_base
NS=$B/neurosolve
JOBS=$(nproc)
SUM=$OUT/lifegpu2_summary.txt
export OMP_WAIT_POLICY=passive
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$SUM"; }
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; nproc; } > "$SUM" 2>&1
BENCH_ARGS="--backend cuda --fibers 500000 --iters 2 --gpu-ref-iters 2 --repeats 7 --ref-variant voxel-voxel --threads $JOBS"

if has build; then
  { cmake -S "$ROOT" -B $B -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release -DNS_TESTS=ON -DNS_MPI=OFF
    cmake --build $B -j"$JOBS" --target neurosolve_cli test_life_cuda test_life_products test_life_fit test_policy -- -k
  } > /tmp/lifegpu2_build.log 2>&1
  rc=$?
  tail -30 /tmp/lifegpu2_build.log > "$OUT/lifegpu2_build.log"
  stamp "build rc $rc"
  [ $rc -eq 0 ] || exit 1
fi

# The baseline (the kernels before this branch: main at e5aafbd) builds in the background while the
# tests run on the GPU; step "products" waits for it, so nothing compiles during a timed run.
if has base; then
  rm -rf $BB && mkdir -p $BB
  if [ -f "$ROOT/build-lifegpu2-base/base.tar.gz" ]; then
    tar -xzf "$ROOT/build-lifegpu2-base/base.tar.gz" -C $BB
  elif git -C "$ROOT" rev-parse --verify -q e5aafbd > /dev/null 2>&1; then
    mkdir -p $BB/base && git -C "$ROOT" archive e5aafbd | tar -x -C $BB/base
  fi
  if [ -f $BB/base/CMakeLists.txt ]; then
    ( cmake -S $BB/base -B $BB/b -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
        -DNS_TESTS=OFF -DNS_MPI=OFF && nice cmake --build $BB/b -j"$JOBS" --target neurosolve_cli
    ) > /tmp/lifegpu2_base_build.log 2>&1 &
    base_pid=$!
  else
    echo "baseline: no build-lifegpu2-base/base.tar.gz and no git history: the old kernels are not run" | tee -a "$SUM"
  fi
fi

if has tests; then
  { for t in test_life_cuda test_life_products test_life_fit test_policy; do
      timeout 180 $B/tests/$t; echo "$t rc $?"
    done
  } > "$OUT/lifegpu2_tests.log" 2>&1
  grep -E "rc [0-9]|checks|within|FAIL|CHECK" "$OUT/lifegpu2_tests.log" | head -30 | tee -a "$SUM"
  stamp "tests"
fi

if has memcheck; then
  # the voxel kernels (every dictionary precision) under memcheck: life fit on two small models,
  # one with about 160 coefficients per voxel (several warp batches), one with n_theta 40 (padded)
  if command -v compute-sanitizer > /dev/null; then
    $NS life synth /tmp/lifegpu2_dense --fibers 3000 --grid 4,6,4 --L 12 --length 3.2 --theta 96 > /dev/null 2>&1
    $NS life synth /tmp/lifegpu2_t40 --fibers 2000 --grid 8,10,8 --L 30 --theta 40 > /dev/null 2>&1
    for M in /tmp/lifegpu2_dense /tmp/lifegpu2_t40; do
      for v in voxel-voxel voxel-f32d voxel-f16d; do
        echo "=== $M $v" >> /tmp/lifegpu2_memcheck.log
        timeout 60 compute-sanitizer --tool memcheck --leak-check no $NS life fit $M --backend cuda --mw $v --mty $v \
          --iters 6 --tolg 0 --tolo 0 --rtolg 0 --rtolo 0 --quiet --out /tmp/lifegpu2_w.npy >> /tmp/lifegpu2_memcheck.log 2>&1
        echo "memcheck $(basename $M) $v rc $?" >> /tmp/lifegpu2_memcheck.log
      done
    done
    grep -E "ERROR SUMMARY|memcheck .* rc|Invalid|out of bounds" /tmp/lifegpu2_memcheck.log | head -30 > "$OUT/lifegpu2_memcheck.log"
    cat "$OUT/lifegpu2_memcheck.log" >> "$SUM"
    rm -rf /tmp/lifegpu2_dense /tmp/lifegpu2_t40
  else
    echo "compute-sanitizer not found" | tee -a "$SUM"
  fi
  stamp "memcheck"
fi

# fraction of the copy bandwidth per voxel row (csv: table,...,variant,input,ms,gbs,copy_fraction,max_rel_err)
table() {
  awk -F, -v tag="$2" 'NR > 1 && $1 == "products" && $5 == "cuda" && $7 ~ /^(voxel|coeff-voxel)/ {
      printf "%-5s %-4s %-12s %-7s %8.3f ms  %.3f of copy  err %s\n", tag, $6, $7, $8, $9, $11, $12 }' "$1"
}

if [ -n "${base_pid:-}" ]; then
  wait $base_pid
  echo "baseline build rc $?" | tee -a "$SUM"
  base_pid=
fi

if has products; then
  timeout 300 $NS bench life $BENCH_ARGS --csv "$OUT/lifegpu2_products.csv" > "$OUT/lifegpu2_products.txt" 2>&1
  echo "bench life (this tree) rc $?" | tee -a "$SUM"
  grep -E "copy bandwidth" "$OUT/lifegpu2_products.txt" | tee -a "$SUM"
  table "$OUT/lifegpu2_products.csv" new | tee -a "$SUM"
  stamp "products"
fi

if has base; then
  if [ -x $BB/b/neurosolve ]; then
    timeout 300 $BB/b/neurosolve bench life $BENCH_ARGS --csv /tmp/lifegpu2_base.csv > "$OUT/lifegpu2_base_products.txt" 2>&1
    echo "bench life (baseline e5aafbd) rc $?" | tee -a "$SUM"
    grep -E "copy bandwidth" "$OUT/lifegpu2_base_products.txt" | tee -a "$SUM"
    table /tmp/lifegpu2_base.csv old | tee -a "$SUM"
  else
    tail -20 /tmp/lifegpu2_base_build.log >> "$SUM" 2>/dev/null
  fi
  stamp "baseline"
fi

if has ncu && command -v ncu > /dev/null; then
  M=/tmp/lifegpu2_m100k
  $NS life synth $M --fibers 100000 > /dev/null 2>&1
  for v in voxel-voxel voxel-f16d; do
    echo "=== $v" >> "$OUT/lifegpu2_ncu.txt"
    # skip the first M w (at w = 0 every coefficient is skipped) and the first M^T y
    timeout 90 ncu --clock-control none -k 'regex:voxel_m' --launch-skip 2 --launch-count 2 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
      $NS life fit $M --backend cuda --mw $v --mty $v --iters 4 --tolg 0 --tolo 0 --rtolg 0 --rtolo 0 --quiet --out /tmp/lifegpu2_w.npy \
      >> "$OUT/lifegpu2_ncu.txt" 2>&1
    echo "ncu $v rc $?" | tee -a "$SUM"
  done
  grep -E "===|voxel_m|gpu__time|lts__t_bytes|dram__bytes_read|hit_rate|lts__throughput|warps_active" "$OUT/lifegpu2_ncu.txt" | head -40 | tee -a "$SUM"
  rm -rf $M
  stamp "ncu"
fi
stamp "done"
