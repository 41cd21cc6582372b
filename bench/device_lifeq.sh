#!/usr/bin/env bash
# One device call for issue 21 (wave lifeq): LiFE end to end against DIPY on two pinned cores of
# a quiet host, pruning quality on the ground-truth phantoms, and the ridge on the GPU.
#   1. build (CUDA, Release, sm_90) the command and test_life_cuda; run test_life_cuda;
#   2. phantoms (life synth --phantom): 10,000 (seed 1) and 30,000 (seed 2) streamlines;
#   3. bench/life_dipy_bench.py under `taskset -c 0,1` with 2 threads everywhere: neurosolve
#      life build + life fit (defaults, fresh model folder) vs DIPY's FiberModel.fit, same run;
#   4. bench life --quality on both phantoms (all cores);
#   5. life fit --ridge 0.2 on the GPU against the CPU (fixed 30 updates: weights must agree);
#   6. variants: bench/life_variant_grid.py on the two phantoms' models at 2 and 16 threads (the
#      measurements behind AUTO's CPU rule, ns_life_cpu_auto_variant), pinned like step 3 for 2.
# DIPY travels unpacked in .whl/site-dipy (dipy 1.12.1 cp312, nibabel 5.4.2, trx-python 0.6; numpy,
# scipy, h5py, packaging and tqdm come from the image): carry ".whl/site-dipy" (39 MB). Without it
# step 3 runs neurosolve alone.
# Usage: bash bench/device_lifeq.sh [STEP...]   (default, in this order: build phantoms dipy quality gputest
# gpuridge variants; the most important first, so that a run cut short still returns the DIPY table)
# The end-to-end rerun for issue 21 after the CPU rule and the threaded build (wave lifespeed):
#   bash bench/device_lifeq.sh build phantoms dipy variants      (about 5 minutes; no GPU needed)
# Files under $OUT (<= 8): summary.txt, dipy_bench.jsonl, quality.txt, quality_10k.csv,
# quality_30k.csv, gpu_ridge.txt, machine.txt, logs.tgz (holds variants.jsonl). About 6-8 minutes
# (all steps; the variants step about 2 more).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_lifeq_logs
mkdir -p "$LOG"
BUILD=${BUILD:-$ROOT/build-lifeq}
NS=$BUILD/neurosolve
P=/tmp/ns_lifeq_phantoms
STEPS=${*:-build phantoms dipy quality gputest gpuridge variants}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-22s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$FINAL/summary.txt"
    tail -n 15 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/logs.tgz" ns_lifeq_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nproc; uptime; python3 --version; } > "$FINAL/machine.txt" 2>&1
if [ -d "$ROOT/.whl/site-dipy/dipy" ]; then export PYTHONPATH=$ROOT/.whl/site-dipy${PYTHONPATH:+:$PYTHONPATH}; DIPY=--dipy
else DIPY=; echo "no .whl/site-dipy: DIPY not run" | tee -a "$FINAL/summary.txt"; fi
for step in $STEPS; do
  case $step in
    build)
      run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON \
          -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
      run build 300 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_life_cuda ;;
    gputest)
      run test_life_cuda 120 "$BUILD/tests/test_life_cuda" ;;
    phantoms)
      mkdir -p "$P"
      run phantom10k 60 "$NS" life synth "$P/P10K" --phantom --streamlines 10000 --seed 1
      run phantom30k 60 "$NS" life synth "$P/P30K" --phantom --streamlines 30000 --seed 2 ;;
    dipy)
      # two cores, two threads for every library (OpenMP, BLAS), nothing else running
      export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 OMP_WAIT_POLICY=passive
      for c in P10K P30K; do
        reps=2; [ "$c" = P30K ] && reps=1
        echo "== $c" >> "$FINAL/dipy_bench.jsonl"
        run "dipy-$c" 240 taskset -c 0,1 python3 "$ROOT/bench/life_dipy_bench.py" "$NS" "$P/$c" --repeats $reps $DIPY
        cat "$LOG/dipy-$c.log" >> "$FINAL/dipy_bench.jsonl"
      done
      unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS ;;
    quality)
      for c in 10k 30k; do
        d=$P/P${c^^}
        run "quality-$c" 150 "$NS" bench life --quality "$d" --settings nnls,lambda=3e6,ridge=0.1,ridge=0.2,ridge=0.3 \
            --csv "$FINAL/quality_$c.csv"
        cat "$LOG/quality-$c.log" >> "$FINAL/quality.txt"
      done ;;
    gpuridge)
      M=/tmp/ns_lifeq_m10k
      run build-model 60 "$NS" life build --dwi "$P/P10K/dwi.nii" --bvals "$P/P10K/dwi.bval" --bvecs "$P/P10K/dwi.bvec" \
          --tracks "$P/P10K/tracks.tck" --out "$M" --quiet
      FIX="--iters 31 --rtolo 0 --rtolg 0 --tolo 0 --tolg 0 --ridge 0.2 --quiet --json"
      run fit-cpu 120 "$NS" life fit "$M" --backend cpu --out /tmp/ns_lifeq_wc.npy $FIX
      run fit-gpu 120 "$NS" life fit "$M" --backend cuda --out /tmp/ns_lifeq_wg.npy $FIX
      python3 - > "$FINAL/gpu_ridge.txt" 2>&1 <<'EOF'
import json, numpy as np
c, g = np.load("/tmp/ns_lifeq_wc.npy"), np.load("/tmp/ns_lifeq_wg.npy")
d = np.abs(c - g).max() / np.abs(c).max()
jc = json.loads(open("/tmp/ns_lifeq_logs/fit-cpu.log").read())
jg = json.loads(open("/tmp/ns_lifeq_logs/fit-gpu.log").read())
print(f"ridge 0.2, 30 updates: CPU objective {jc['objective']:.12e} mu {jc['ridge_mu']:.6e} ({jc['seconds']:.2f} s), "
      f"GPU objective {jg['objective']:.12e} mu {jg['ridge_mu']:.6e} ({jg['seconds']:.2f} s)")
print(f"max |w_gpu - w_cpu| / max |w_cpu| = {d:.3e}: {'PASS' if d < 1e-8 else 'FAIL'}")
EOF
      cat "$FINAL/gpu_ridge.txt" | tee -a "$FINAL/summary.txt" ;;
    variants)
      for c in P10K P30K; do
        run "model-$c" 60 "$NS" life build --dwi "$P/$c/dwi.nii" --bvals "$P/$c/dwi.bval" --bvecs "$P/$c/dwi.bvec" \
            --tracks "$P/$c/tracks.tck" --out "/tmp/ns_lifeq_vm$c" --quiet
      done
      run variants-2 200 env OMP_WAIT_POLICY=passive taskset -c 0,1 python3 "$ROOT/bench/life_variant_grid.py" "$NS" \
          /tmp/ns_lifeq_vmP10K /tmp/ns_lifeq_vmP30K --threads 2 --rounds 2 --iters 10
      run variants-16 120 env OMP_WAIT_POLICY=passive python3 "$ROOT/bench/life_variant_grid.py" "$NS" \
          /tmp/ns_lifeq_vmP10K /tmp/ns_lifeq_vmP30K --threads 16 --rounds 2 --iters 10
      cat "$LOG/variants-2.log" "$LOG/variants-16.log" > "$LOG/variants.jsonl"
      grep summary "$LOG/variants.jsonl" | python3 -c "import sys, json
for l in sys.stdin:
    j = json.loads(l); print(j['summary'], j['threads'], j['product'], j['median_fit_s'], 'best', j['best'])" \
          | tee -a "$FINAL/summary.txt" ;;
  esac
done
