#!/usr/bin/env bash
# Issue 21, target "GPU products >= 0.3 of the copy bandwidth on the 500,000-fiber model": voxel-sh
# (the dictionary columns computed in registers from the atoms' orientations, docs/life.md), on the
# GPU machine (one H100/H200, 16-core host), about 5-8 minutes:
#   1. build this tree (CUDA sm_90, Release)
#   2. test_life_cuda (every variant against CSR products; voxel-sh near the float64 products, adjoint,
#      refused on a dictionary it cannot fit, GPU fits against the CPU's), test_life_products (the fit
#      of the basis), test_life_fit, test_policy
#   3. compute-sanitizer memcheck of voxel-sh (and voxel-voxel) through `life fit` on two small models
#   4. bench life on the 500,000-fiber model (96 directions, L = 360): every variant, the copy
#      bandwidth measured at the start of the run, every row checked against the CPU voxel-voxel
#      product of the same input (max rel err column)
#   5. fits on the GPU against the CPU on a 500,000-streamline model (bench life-scale, 5 updates on
#      both; GPU voxel-voxel and voxel-sh against the CPU's voxel-voxel): max relative weight difference
#   6. Nsight Compute of the voxel-sh kernels on a 100,000-fiber model (time, issue slots, registers,
#      achieved occupancy, L2 and DRAM bytes)
#   tune (not in the default steps): TUNE="name:nvcc flags;name:flags;..." builds the CLI once per entry
#      (CMAKE_CUDA_FLAGS, in parallel; e.g. "b8:-DSH_BATCH=8;mw3:-DSH_MINB_MW=3", life_sh.cu's knobs) and runs the voxel-sh and
#      voxel-f16d product rows of each on the 500,000-fiber model, in turn, ROUNDS (2) times
# Usage (from the repository root): OUT=out bash bench/device_lifesh.sh [STEP...]
#   steps: build tests memcheck products fit ncu tune (default: all but tune). Files in $OUT: lifesh_summary.txt (read
#   this first), _build.log, _tests.log, _memcheck.log, _products.csv, _products.txt, _fit.txt, _ncu.txt.
# Device call: command "OUT=$OUT bash bench/device_lifesh.sh". Steps that would start after 480 s are
# skipped.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
STEPS=${*:-build tests memcheck products fit ncu}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
B=$ROOT/build-lifesh
NS=$B/neurosolve
JOBS=$(nproc)
SUM=$OUT/lifesh_summary.txt
export OMP_WAIT_POLICY=passive
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
stamp() { echo "[$(elapsed) s] $*" | tee -a "$SUM"; }
late() { [ "$(elapsed)" -gt 480 ] && { stamp "skipped $1: past 480 s"; return 0; }; return 1; }
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; nproc
  git -C "$ROOT" log -1 --format='tree %h %s' 2>/dev/null || echo "tree: no git"; } > "$SUM" 2>&1
BENCH_ARGS="--backend cuda --fibers 500000 --iters 2 --gpu-ref-iters 2 --repeats 7 --ref-variant voxel-voxel --threads $JOBS"

if has build; then
  { cmake -S "$ROOT" -B $B -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release -DNS_TESTS=ON -DNS_MPI=OFF
    timeout 360 cmake --build $B -j"$JOBS" --target neurosolve_cli test_life_cuda test_life_products test_life_fit test_policy -- -k
  } > /tmp/lifesh_build.log 2>&1
  rc=$?
  grep -E "error|warning" /tmp/lifesh_build.log | head -20 > "$OUT/lifesh_build.log"
  tail -15 /tmp/lifesh_build.log >> "$OUT/lifesh_build.log"
  stamp "build rc $rc"
  [ $rc -eq 0 ] || exit 1
fi

if has tests; then
  { for t in test_life_cuda test_life_products test_life_fit test_policy; do
      timeout 180 $B/tests/$t; echo "$t rc $?"
    done
  } > "$OUT/lifesh_tests.log" 2>&1
  grep -E "rc [0-9]|checks|voxel-sh|FAIL|CHECK|failed" "$OUT/lifesh_tests.log" | head -40 | tee -a "$SUM"
  stamp "tests"
fi

if has memcheck && ! late memcheck; then
  if command -v compute-sanitizer > /dev/null; then
    $NS life synth /tmp/lifesh_dense --fibers 3000 --grid 4,6,4 --L 30 --length 3.2 --theta 96 > /dev/null 2>&1
    $NS life synth /tmp/lifesh_t40 --fibers 2000 --grid 8,10,8 --L 30 --theta 40 > /dev/null 2>&1
    : > /tmp/lifesh_memcheck.log
    for M in /tmp/lifesh_dense /tmp/lifesh_t40; do
      for v in voxel-sh voxel-voxel; do
        echo "=== $M $v" >> /tmp/lifesh_memcheck.log
        timeout 90 compute-sanitizer --tool memcheck --leak-check no $NS life fit $M --backend cuda --mw $v --mty $v \
          --iters 6 --tolg 0 --tolo 0 --rtolg 0 --rtolo 0 --quiet --out /tmp/lifesh_w.npy >> /tmp/lifesh_memcheck.log 2>&1
        echo "memcheck $(basename $M) $v rc $?" >> /tmp/lifesh_memcheck.log
      done
    done
    grep -E "ERROR SUMMARY|memcheck .* rc|Invalid|out of bounds|rror" /tmp/lifesh_memcheck.log | head -40 > "$OUT/lifesh_memcheck.log"
    grep -E "memcheck .* rc" "$OUT/lifesh_memcheck.log" | tr '\n' ';' >> "$SUM"; echo >> "$SUM"
    grep -c "ERROR SUMMARY: 0 errors" "$OUT/lifesh_memcheck.log" | sed 's/^/memcheck runs with 0 errors: /' | tee -a "$SUM"
    rm -rf /tmp/lifesh_dense /tmp/lifesh_t40
  else
    echo "compute-sanitizer not found" | tee -a "$SUM"
  fi
  stamp "memcheck"
fi

if has products && ! late products; then
  timeout 300 $NS bench life $BENCH_ARGS --csv "$OUT/lifesh_products.csv" > "$OUT/lifesh_products.txt" 2>&1
  echo "bench life rc $?" | tee -a "$SUM"
  grep -E "copy bandwidth" "$OUT/lifesh_products.txt" | tee -a "$SUM"
  # fraction of the copy bandwidth per GPU row (csv: table,...,variant,input,ms,gbs,copy_fraction,max_rel_err)
  awk -F, 'NR > 1 && $1 == "products" && $5 == "cuda" {
      printf "%-4s %-12s %-7s %8.3f ms  %.3f of copy  err %s\n", $6, $7, $8, $9, $11, $12 }' \
    "$OUT/lifesh_products.csv" | tee -a "$SUM"
  stamp "products"
fi

if has fit && ! late fit; then
  : > "$OUT/lifesh_fit.txt"
  for v in voxel-sh voxel-voxel; do
    echo "=== variant $v" >> "$OUT/lifesh_fit.txt"
    timeout 100 $NS bench life-scale --fibers 500000 --iters 6 --cpu-iters 6 --variant $v --threads "$JOBS" \
      >> "$OUT/lifesh_fit.txt" 2>&1
    echo "life-scale 500k $v rc $?" | tee -a "$SUM"
  done
  grep -iE "===|agree|differ|weights|ms per update|updates" "$OUT/lifesh_fit.txt" | head -20 | tee -a "$SUM"
  stamp "fit"
fi

if has ncu && ! late ncu && command -v ncu > /dev/null; then
  M=/tmp/lifesh_m100k
  $NS life synth $M --fibers 100000 --L 360 > /dev/null 2>&1
  # after the first M w and M^T y of a fit (the first M w runs at w = 0)
  timeout 90 ncu --clock-control none -k 'regex:sh_m' --launch-skip 2 --launch-count 2 \
    --metrics gpu__time_duration.sum,sm__inst_executed.avg.per_cycle_elapsed,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_xu_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,lts__t_bytes.sum,dram__bytes_read.sum,smsp__inst_executed_op_global_red.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
    $NS life fit $M --backend cuda --mw voxel-sh --mty voxel-sh --iters 4 --tolg 0 --tolo 0 --rtolg 0 --rtolo 0 --quiet --out /tmp/lifesh_w.npy \
    > "$OUT/lifesh_ncu.txt" 2>&1
  echo "ncu rc $?" | tee -a "$SUM"
  grep -E "sh_m|gpu__time|inst_executed|pipe_|warps_active|registers|lts__t_bytes|dram__bytes|global_red|shared" "$OUT/lifesh_ncu.txt" | head -30 | tee -a "$SUM"
  rm -rf $M
  stamp "ncu"
fi
if has tune && [ -n "${TUNE:-}" ]; then
  IFS=';' read -ra CFGS <<< "$TUNE"
  for c in "${CFGS[@]}"; do
    name=${c%%:*}; flags=${c#*:}
    ( cmake -S "$ROOT" -B /tmp/lifesh_t_$name -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_BUILD_TYPE=Release \
        -DNS_TESTS=OFF -DNS_MPI=OFF "-DCMAKE_CUDA_FLAGS=$flags" && \
      timeout 300 cmake --build /tmp/lifesh_t_$name -j"$JOBS" --target neurosolve_cli ) > /tmp/lifesh_t_$name.log 2>&1 &
  done
  wait
  stamp "tune builds"
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for c in "${CFGS[@]}"; do
      name=${c%%:*}
      [ -x /tmp/lifesh_t_$name/neurosolve ] || { echo "tune $name: no build" | tee -a "$SUM"; tail -5 /tmp/lifesh_t_$name.log >> "$SUM"; continue; }
      timeout 120 /tmp/lifesh_t_$name/neurosolve bench life $BENCH_ARGS --variants voxel-sh,voxel-f16d \
        --csv /tmp/lifesh_t.csv > /tmp/lifesh_t.txt 2>&1
      awk -F, -v n="$name" -v r="$round" 'NR > 1 && $1 == "products" && $5 == "cuda" {
          printf "tune %-8s round %s %-4s %-11s %-7s %8.3f ms  %.3f of copy  err %s\n", n, r, $6, $7, $8, $9, $11, $12 }' \
        /tmp/lifesh_t.csv | tee -a "$SUM"
    done
  done
  stamp "tune"
fi
stamp "done"
