#!/usr/bin/env bash
# LiFE on the GPU machine (bench/life.md has the results and the calls that made them).
#   bash bench/device_life.sh check    build; test_life_cuda alone, 8 at once, beside a GPU
#                                      benchmark; ctest -R life -j 8; compute-sanitizer memcheck,
#                                      racecheck, synccheck, initcheck; a 500,000-fiber calibration
#   bash bench/device_life.sh regress  build; test_life_cuda alone (3 runs)
#   bash bench/device_life.sh bench    the measurements; LIFE_STEPS picks a subset of
#                                      "race cpu cpufit gpu sweep ncu" (default: all but cpufit)
# LIFE_OLD_ENGINE=path/to/engine_cuda.c (check, regress) also links test_life_cuda with that
# engine, e.g. the version before the stream fix (git show 70b6ec9:src/life/cuda/engine_cuda.c),
# to show its failure. Run from the repository root; results go to $OUT (default ./out).
set -uo pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT"
MODE=${1:-check}
JOBS=$(nproc)
B=build-life-gpu
export OMP_WAIT_POLICY=passive

build() {
  { nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv || true
    cmake -S . -B $B -DNS_CUDA=ON -DCMAKE_BUILD_TYPE=Release
    cmake --build $B -j"$JOBS" --target neurosolve_cli test_life_products test_life_fit test_life_io test_life_cuda -- -k
  } > "$OUT/life_build.log" 2>&1 || { tail -40 "$OUT/life_build.log"; exit 1; }
}

# Runs N copies of a test at once; prints how many failed and their CHECK lines.
concurrent() {
  local bin=$1 n=$2 tag=$3 fails=0 pids=()
  for i in $(seq 1 "$n"); do "$bin" > "$OUT/tmp_${tag}_$i.log" 2>&1 & pids+=($!); done
  for i in $(seq 1 "$n"); do wait "${pids[$((i - 1))]}" || fails=$((fails + 1)); done
  echo "$tag: $fails of $n concurrent runs failed"
  cat "$OUT"/tmp_"${tag}"_*.log | grep -h "CHECK failed" | sort | uniq -c | head -8
  cat "$OUT"/tmp_"${tag}"_*.log >> "$OUT/life_check.log"; rm -f "$OUT"/tmp_"${tag}"_*.log
}

# Links test_life_cuda against the engine in $LIFE_OLD_ENGINE (as test_life_cuda_old).
link_old() {
  ( cd $B/tests && gcc -O3 -DNDEBUG -std=c11 -fopenmp -DNS_HAVE_CUDA=1 -I"$OLDPWD/include" -I"$OLDPWD/src" \
      -isystem /usr/local/cuda/include -c "$OLDPWD/$LIFE_OLD_ENGINE" -o old_engine.o &&
    g++ CMakeFiles/test_life_cuda.dir/test_life_cuda.c.o old_engine.o -o test_life_cuda_old \
      @CMakeFiles/test_life_cuda.dir/linkLibs.rsp -L/usr/local/cuda/targets/x86_64-linux/lib/stubs \
      -L/usr/local/cuda/targets/x86_64-linux/lib ) >> "$OUT/life_build.log" 2>&1
}

# regress: the test alone (no other GPU process), with the old engine and the current one.
if [ "$MODE" = regress ]; then
  build
  if [ -n "${LIFE_OLD_ENGINE:-}" ] && [ -f "$LIFE_OLD_ENGINE" ]; then
    link_old
    for r in 1 2; do $B/tests/test_life_cuda_old > "$OUT/life_regress_old_$r.log" 2>&1
      echo "old engine alone, run $r: rc $?, $(grep -c 'CHECK failed' "$OUT/life_regress_old_$r.log") failed checks"
      grep -h "CHECK failed" "$OUT/life_regress_old_$r.log" | sort | uniq -c | sort -rn | head -3; done
  fi
  for r in 1 2 3; do /usr/bin/time -f "%e s" $B/tests/test_life_cuda > "$OUT/life_regress_new_$r.log" 2>&1
    echo "current engine alone, run $r: rc $?, $(tail -n 2 "$OUT/life_regress_new_$r.log" | tr '\n' ' ')"; done
  exit 0
fi

if [ "$MODE" = check ]; then
  t0=$(date +%s)
  build
  T=$B/tests/test_life_cuda
  echo "build: $(( $(date +%s) - t0 )) s"
  if [ -n "${LIFE_OLD_ENGINE:-}" ] && [ -f "$LIFE_OLD_ENGINE" ]; then
    link_old
    for r in 1 2; do concurrent $B/tests/test_life_cuda_old 8 "old_engine_round$r"; done
  fi
  echo "== new engine: alone, 3 runs"
  for r in 1 2 3; do /usr/bin/time -f "alone run $r: %e s" $T >> "$OUT/life_check.log" 2>&1 && echo "alone run $r: ok" || echo "alone run $r: FAILED"; done
  echo "== new engine: 8 at once, 3 rounds"
  for r in 1 2 3; do concurrent $T 8 "new_engine_round$r"; done
  echo "== new engine while a GPU benchmark runs"
  $B/neurosolve bench life --backend cuda --quick --no-products --iters 200 > /dev/null 2>&1 & bg=$!
  sleep 1
  for r in 1 2; do $T >> "$OUT/life_check.log" 2>&1 && echo "beside bench $r: ok" || echo "beside bench $r: FAILED"; done
  wait $bg
  echo "== ctest -R life -j 8"
  (cd $B && ctest -R life -j 8 --output-on-failure) > "$OUT/life_ctest.log" 2>&1; echo "ctest rc $?"
  grep -E "tests passed|Failed|Skipped|\*\*\*" "$OUT/life_ctest.log" | head
  echo "== compute-sanitizer"
  for tool in memcheck racecheck synccheck initcheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $T > "$OUT/life_sanitizer_$tool.log" 2>&1
    echo "$tool rc $? ($(grep -c "CHECK failed" "$OUT/life_sanitizer_$tool.log") check failures): $(tail -n 2 "$OUT/life_sanitizer_$tool.log" | tr '\n' ' ')"
  done
  echo "== calibration: GPU-reference and GPU-opt, 3 updates at 500,000 fibers"
  timeout 80 $B/neurosolve bench life --backend cuda --fibers 500000 --no-products --iters 4 > "$OUT/life_calib.txt" 2>&1
  echo "calibration rc $?"; grep -E "model|gpu-" "$OUT/life_calib.txt"
  echo "check total: $(( $(date +%s) - t0 )) s"
  exit 0
fi

# ---------------------------------------------------------------- bench
t0=$(date +%s)
build
NS=$B/neurosolve
echo "build: $(( $(date +%s) - t0 )) s"
NT=$(nproc)
STEPS=${LIFE_STEPS:-race cpu gpu sweep ncu}   # a subset fits a shorter call; also: cpufit
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
# step NAME LOG SECONDS CMD...: run CMD under a time limit, output into LOG, report rc and time.
step() {
  local name=$1 log=$2 limit=$3; shift 3
  timeout "$limit" "$@" > "$log" 2>&1
  echo "$name rc $? at $(( $(date +%s) - t0 )) s"
}
# 0) racecheck. Only the reductions (life_vec.cu) use shared memory; racecheck over the whole
#    test_life_cuda ran past 90 s (the Fig. 6 kernels' 4,224-block grids, hundreds of launches),
#    so it checks `life fit` on a tiny model: every reduction kernel, the warp kernels and (3
#    iterations) the reference kernels.
if has race; then
  $NS life synth /tmp/tiny --fibers 300 --grid 10,12,10 --L 12 --length 8 > /dev/null 2>&1
  for v in voxel-voxel coeff-atom naive-atom; do
    it=20; [ $v = naive-atom ] && it=3
    step "racecheck life fit $v" "$OUT/life_racecheck_$v.txt" 60 compute-sanitizer --tool racecheck \
      --error-exitcode 9 $NS life fit /tmp/tiny --backend cuda --mw $v --mty $v --iters $it --quiet --out /tmp/w.npy
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" "$OUT/life_racecheck_$v.txt" | head -3
  done
fi
# 1) CPU: every product variant and CPU-opt vs CPU-naive at 50,000 fibers on all cores,
#    then the SBBNNLS rows on 2 threads.
if has cpu; then
  step "cpu $NT threads" "$OUT/life_cpu16.txt" 100 $NS bench life --backend cpu --fibers 50000 \
    --iters "${LIFE_CPU_ITERS:-20}" --naive-iters 2 --repeats 3 --threads "$NT" --csv "$OUT/life_cpu16.csv"
  OMP_NUM_THREADS=2 step "cpu 2 threads" "$OUT/life_cpu2.txt" 45 $NS bench life --backend cpu --fibers 50000 \
    --iters 5 --naive-iters 2 --no-products --threads 2 --csv "$OUT/life_cpu2.csv"
fi
# 1b) only the CPU SBBNNLS rows on all cores (no product table): a shorter step 1.
if has cpufit; then
  step "cpu $NT threads, SBBNNLS only" "$OUT/life_cpufit.txt" 60 $NS bench life --backend cpu --fibers 50000 \
    --iters "${LIFE_CPU_ITERS:-20}" --naive-iters 2 --no-products --threads "$NT" --csv "$OUT/life_cpufit.csv"
fi
# 2) GPU at the paper's Table 9 size: every product variant; GPU-opt 500 iterations,
#    GPU-reference LIFE_REF_ITERS (its kernels skip nothing: each update costs the same)
#    extrapolated to 500.
if has gpu; then
  step "gpu 500k" "$OUT/life_gpu500k.txt" 120 $NS bench life --backend cuda --fibers 500000 --iters 500 \
    --gpu-ref-iters "${LIFE_REF_ITERS:-60}" --repeats 5 --ref-variant voxel-voxel --threads "$NT" \
    --csv "$OUT/life_gpu500k.csv"
fi
# 3) the fiber sweep on the GPU (50,000-250,000; 500,000 is step 2), 50 iterations.
if has sweep; then
  step sweep "$OUT/life_sweep.txt" 70 $NS bench life --backend cuda --fibers 50000,100000,150000,200000,250000 \
    --no-products --iters "${LIFE_SWEEP_ITERS:-50}" --gpu-ref-iters 10 --csv "$OUT/life_sweep.csv"
fi
# 4) Nsight Compute: the first two product launches (M w, then M^T y) of GPU-reference and of
#    the AUTO choice at 500,000 fibers.
if has ncu && command -v ncu > /dev/null; then
  $NS life synth /tmp/m500k --fibers 500000 --L 360 > /dev/null 2>&1
  for v in naive-atom voxel-voxel; do
    timeout 50 ncu --clock-control none -k 'regex:ref_m|voxel_mw|key_mty' --launch-count 2 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_global_red.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
      $NS life fit /tmp/m500k --backend cuda --mw $v --mty $v --iters 2 --tolg 0 --tolo 0 --quiet --out /tmp/w.npy \
      > "$OUT/life_ncu_$v.txt" 2>&1
    echo "ncu $v rc $? at $(( $(date +%s) - t0 )) s"
  done
fi
for f in "$OUT"/life_cpu16.txt "$OUT"/life_cpu2.txt "$OUT"/life_cpufit.txt "$OUT"/life_gpu500k.txt "$OUT"/life_sweep.txt; do
  [ -f "$f" ] && echo "== $f" && grep -E "^neurosolve|^model|cpu-|gpu-" "$f"
done
