#!/usr/bin/env bash
# Issue 21, target "GPU products >= 0.3 of the copy bandwidth on the 500,000-fiber model", wave
# lifegpu (third round), on the GPU machine (one H100/H200, 16-core host), about 3-6 minutes:
#   1. build this tree (CUDA sm_90, Release); in the background during steps 2-3 the baseline (main
#      at a788805, the kernels before this branch: one atomic per coefficient in w = M^T y) from
#      build-lifegpu3-base/base.tar.gz when it is carried (skipped otherwise)
#   2. test_life_cuda (every variant against CSR products, the hand-made models with runs of equal
#      fibers across warp batches, empty voxels and one fiber, voxel-lr16d near the float64 products and
#      adjoint, on a rank-20 dictionary too; GPU fits against the CPU's),
#      test_life_products, test_life_fit, test_policy
#   3. compute-sanitizer memcheck of every kernel that sums fiber runs and of voxel-lr16d's (voxel-voxel,
#      voxel-f32d, voxel-f16d, voxel-lr16d, coeff-voxel, atom-atom) through `life fit` on two small models
#   4. bench life on the 500,000-fiber model (generated in memory as in device_lifegpu2.sh: 96
#      directions, L = 360) with this tree (and, after step 5, with the baseline): every variant, the
#      copy bandwidth measured at the start of each run, every row checked against the CPU
#      voxel-voxel product of the same input (max rel err column)
#   5. fits on the GPU against the CPU on a 500,000-streamline model (bench life-scale, 5 updates on
#      both; GPU voxel-voxel, voxel-f16d and voxel-lr16d against the CPU's voxel-voxel): max relative
#      weight difference
#   6. Nsight Compute (if ncu is there and time is left): the product kernels of voxel-voxel,
#      voxel-f16d and voxel-lr16d (time, L2 bytes and hit rate, atomics) on a 100,000-fiber model
# Usage (from the repository root): OUT=out bash bench/device_lifegpu3.sh [STEP...]
#   steps: build tests memcheck products base fit ncu (default: all). At most 8 files go to $OUT:
#   lifegpu3_summary.txt (read this first), _build.log, _tests.log, _memcheck.log, _products.csv,
#   _products.txt, _base_products.txt, _fit.txt.
# Device call: command "OUT=$OUT bash bench/device_lifegpu3.sh", carry ["build-lifegpu3-base"] (an
# ignored folder holding base.tar.gz = `git archive --prefix=base/ a788805 | gzip`; without it the
# baseline rows are skipped; make it in the checkout with
#   mkdir -p build-lifegpu3-base && git archive --prefix=base/ a788805 | gzip -1 > build-lifegpu3-base/base.tar.gz
# ). Every step has its own timeout; steps that would start after 420 s are skipped. Order of
# importance: build, tests, memcheck, products (this tree), fit, baseline products, ncu.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STEPS=${*:-build tests memcheck products base fit ncu}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
B=$ROOT/build-lifegpu3
BB=/tmp/lifegpu3_base
NS=$B/neurosolve
JOBS=$(nproc)
SUM=$OUT/lifegpu3_summary.txt
export OMP_WAIT_POLICY=passive
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
stamp() { echo "[$(elapsed) s] $*" | tee -a "$SUM"; }
late() { [ "$(elapsed)" -gt 420 ] && { stamp "skipped $1: past 420 s"; return 0; }; return 1; }
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; nproc
  git -C "$ROOT" log -1 --format='tree %h %s' 2>/dev/null || echo "tree: no git"; } > "$SUM" 2>&1
BENCH_ARGS="--backend cuda --fibers 500000 --iters 2 --gpu-ref-iters 2 --repeats 7 --ref-variant voxel-voxel --threads $JOBS"

if has build; then
  { cmake -S "$ROOT" -B $B -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release -DNS_TESTS=ON -DNS_MPI=OFF
    timeout 300 cmake --build $B -j"$JOBS" --target neurosolve_cli test_life_cuda test_life_products test_life_fit test_policy -- -k
  } > /tmp/lifegpu3_build.log 2>&1
  rc=$?
  grep -E "error|warning" /tmp/lifegpu3_build.log | head -20 > "$OUT/lifegpu3_build.log"
  tail -15 /tmp/lifegpu3_build.log >> "$OUT/lifegpu3_build.log"
  stamp "build rc $rc"
  [ $rc -eq 0 ] || exit 1
fi

# The baseline builds in the background while the tests run; "products" waits for it first, so
# nothing compiles during a timed run.
if has base; then
  rm -rf $BB && mkdir -p $BB
  if [ -f "$ROOT/build-lifegpu3-base/base.tar.gz" ]; then
    tar -xzf "$ROOT/build-lifegpu3-base/base.tar.gz" -C $BB
    ( cmake -S $BB/base -B $BB/b -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
        -DNS_TESTS=OFF -DNS_MPI=OFF && timeout 300 nice cmake --build $BB/b -j"$JOBS" --target neurosolve_cli
    ) > /tmp/lifegpu3_base_build.log 2>&1 &
    base_pid=$!
  else
    echo "baseline: no build-lifegpu3-base/base.tar.gz: the old kernels are not run" | tee -a "$SUM"
  fi
fi

if has tests; then
  { for t in test_life_cuda test_life_products test_life_fit test_policy; do
      timeout 180 $B/tests/$t; echo "$t rc $?"
    done
  } > "$OUT/lifegpu3_tests.log" 2>&1
  grep -E "rc [0-9]|checks|lr16d|FAIL|CHECK|failed" "$OUT/lifegpu3_tests.log" | head -30 | tee -a "$SUM"
  stamp "tests"
fi

if has memcheck && ! late memcheck; then
  # every kernel with the fiber-run sums under memcheck: life fit on two small models, one with about
  # 160 coefficients per voxel (several warp batches, long fiber runs), one with n_theta 40 (padded)
  if command -v compute-sanitizer > /dev/null; then
    $NS life synth /tmp/lifegpu3_dense --fibers 3000 --grid 4,6,4 --L 12 --length 3.2 --theta 96 > /dev/null 2>&1
    $NS life synth /tmp/lifegpu3_t40 --fibers 2000 --grid 8,10,8 --L 30 --theta 40 > /dev/null 2>&1
    : > /tmp/lifegpu3_memcheck.log
    for M in /tmp/lifegpu3_dense /tmp/lifegpu3_t40; do
      for v in voxel-voxel voxel-f32d voxel-f16d voxel-lr16d coeff-voxel atom-atom; do
        echo "=== $M $v" >> /tmp/lifegpu3_memcheck.log
        timeout 60 compute-sanitizer --tool memcheck --leak-check no $NS life fit $M --backend cuda --mw $v --mty $v \
          --iters 6 --tolg 0 --tolo 0 --rtolg 0 --rtolo 0 --quiet --out /tmp/lifegpu3_w.npy >> /tmp/lifegpu3_memcheck.log 2>&1
        echo "memcheck $(basename $M) $v rc $?" >> /tmp/lifegpu3_memcheck.log
      done
    done
    grep -E "ERROR SUMMARY|memcheck .* rc|Invalid|out of bounds" /tmp/lifegpu3_memcheck.log | head -40 > "$OUT/lifegpu3_memcheck.log"
    grep -E "memcheck .* rc" "$OUT/lifegpu3_memcheck.log" | tr '\n' ';' >> "$SUM"; echo >> "$SUM"
    grep -c "ERROR SUMMARY: 0 errors" "$OUT/lifegpu3_memcheck.log" | sed 's/^/memcheck runs with 0 errors: /' | tee -a "$SUM"
    rm -rf /tmp/lifegpu3_dense /tmp/lifegpu3_t40
  else
    echo "compute-sanitizer not found" | tee -a "$SUM"
  fi
  stamp "memcheck"
fi

# fraction of the copy bandwidth per GPU row (csv: table,...,variant,input,ms,gbs,copy_fraction,max_rel_err)
table() {
  awk -F, -v tag="$2" 'NR > 1 && $1 == "products" && $5 == "cuda" {
      printf "%-5s %-4s %-12s %-7s %8.3f ms  %.3f of copy  err %s\n", tag, $6, $7, $8, $9, $11, $12 }' "$1"
}

if [ -n "${base_pid:-}" ]; then
  wait $base_pid
  echo "baseline build rc $?" | tee -a "$SUM"
  base_pid=
fi

if has products && ! late products; then
  timeout 240 $NS bench life $BENCH_ARGS --csv "$OUT/lifegpu3_products.csv" > "$OUT/lifegpu3_products.txt" 2>&1
  echo "bench life (this tree) rc $?" | tee -a "$SUM"
  grep -E "copy bandwidth" "$OUT/lifegpu3_products.txt" | tee -a "$SUM"
  table "$OUT/lifegpu3_products.csv" new | tee -a "$SUM"
  stamp "products"
fi

if has fit && ! late fit; then
  # the same model and the same 5 updates on the CPU (all cores) and the GPU: weights must agree
  : > "$OUT/lifegpu3_fit.txt"
  for v in voxel-voxel voxel-f16d voxel-lr16d; do
    echo "=== variant $v" >> "$OUT/lifegpu3_fit.txt"
    timeout 100 $NS bench life-scale --fibers 500000 --iters 6 --cpu-iters 6 --variant $v --threads "$JOBS" \
      >> "$OUT/lifegpu3_fit.txt" 2>&1
    echo "life-scale 500k $v rc $?" | tee -a "$SUM"
  done
  grep -iE "===|agree|differ|weights|ms per update|updates" "$OUT/lifegpu3_fit.txt" | head -20 | tee -a "$SUM"
  stamp "fit"
fi

if has base && ! late base; then
  if [ -x $BB/b/neurosolve ]; then
    timeout 240 $BB/b/neurosolve bench life $BENCH_ARGS --csv /tmp/lifegpu3_base.csv > "$OUT/lifegpu3_base_products.txt" 2>&1
    echo "bench life (baseline a788805) rc $?" | tee -a "$SUM"
    grep -E "copy bandwidth" "$OUT/lifegpu3_base_products.txt" | tee -a "$SUM"
    table /tmp/lifegpu3_base.csv old | tee -a "$SUM"
  else
    tail -20 /tmp/lifegpu3_base_build.log >> "$SUM" 2>/dev/null
  fi
  stamp "baseline"
fi

if has ncu && ! late ncu && command -v ncu > /dev/null; then
  M=/tmp/lifegpu3_m100k
  $NS life synth $M --fibers 100000 > /dev/null 2>&1
  for v in voxel-voxel voxel-f16d voxel-lr16d; do
    # after the first M w and M^T y of a fit (the first M w runs at w = 0): the next products' kernels
    # (voxel-lr16d: lr_project + voxel_mty on the factor, voxel_mw on the factor + lr_expand)
    timeout 60 ncu --clock-control none -k 'regex:voxel_m|lr_' --launch-skip 4 --launch-count 4 \
      --metrics gpu__time_duration.sum,lts__t_bytes.sum,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_op_global_red.sum,dram__bytes_read.sum \
      $NS life fit $M --backend cuda --mw $v --mty $v --iters 5 --tolg 0 --tolo 0 --rtolg 0 --rtolo 0 --quiet --out /tmp/lifegpu3_w.npy \
      > /tmp/lifegpu3_ncu_$v.txt 2>&1
    echo "ncu $v rc $?" | tee -a "$SUM"
    grep -E "voxel_m|lr_|gpu__time|lts__t_bytes|hit_rate|lts__throughput|global_red|dram__bytes" /tmp/lifegpu3_ncu_$v.txt | head -30 | tee -a "$SUM"
  done
  rm -rf $M
  stamp "ncu"
fi
stamp "done"
