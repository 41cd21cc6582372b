#!/bin/bash
# The gpumath branch's device check (temporary, removed before the merge): builds with CUDA, runs the
# four GPU tests, then times L5 x 1,000 with main's generated BBP library (main's translator: this
# tree with bench/gpumath/base.patch reversed) and this branch's, in ABBA order on the same binary.
# Run from the repository root; results under $OUT.
set -u
OUT=${OUT:-/tmp/gpumath_out}; mkdir -p "$OUT"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
ROOT=$PWD
rm -rf /tmp/gm_base && mkdir -p /tmp/gm_base
tar --exclude=./build --exclude=./build-cu --exclude=./.git -cf - . | (cd /tmp/gm_base && tar xf -)
(cd /tmp/gm_base && patch -p1 -R -s < bench/gpumath/base.patch && \
 cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_TESTS=OFF -DNS_PYTHON=OFF -DNS_MPI=OFF \
   -DNS_HDF5=OFF > "$OUT/base_cfg.txt" 2>&1 && cmake --build b -j4 --target neurosolve_cli > "$OUT/base_build.txt" 2>&1; \
 echo "base rc $?" >> "$OUT/base_build.txt") &
BASE_PID=$!
cmake -S . -B build-cu -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_WERROR=ON \
  -DNS_TESTS=ON > "$OUT/cfg.txt" 2>&1 || { el "configure failed"; tail -20 "$OUT/cfg.txt"; exit 1; }
cmake --build build-cu -j12 --target neurosolve_cli test_nmodl_cuda test_sim_model_cuda > "$OUT/build.txt" 2>&1 \
  || { el "build failed"; grep -E "error|Error" "$OUT/build.txt" | head -30; exit 1; }
el "built"
ctest --test-dir build-cu -R '^(test_nmodl_cuda|test_sim_model_cuda|neuron_import_cuda|model_neuron_cuda)$' -j4 \
  --output-on-failure > "$OUT/ctest.txt" 2>&1
el "ctest rc $?"; grep -E "Test +#|tests passed|Failed|FAIL|differs" "$OUT/ctest.txt" | head -20
grep -E "^(Hay|L5|fused|max|ChK)|dv|mV" "$OUT/ctest.txt" | head -20
wait $BASE_PID; tail -1 "$OUT/base_build.txt"
/tmp/gm_base/b/neurosolve mechanisms build data/mechanisms/bbp -o /tmp/gm_libs/base/libbbp.so --cuda --arch sm_90 \
  --jobs 8 > "$OUT/lib_base.txt" 2>&1 &
build-cu/neurosolve mechanisms build data/mechanisms/bbp -o /tmp/gm_libs/mine/libbbp.so --cuda --arch sm_90 \
  --jobs 8 > "$OUT/lib_mine.txt" 2>&1
wait; ls -la /tmp/gm_libs/*/libbbp.so || { el "libraries failed"; tail -5 "$OUT"/lib_*.txt; exit 1; }
el "libraries built"
B="build-cu/neurosolve bench sim --backend cuda --morph data/morphologies/l5pc_bbp_axon.swc --model data/models/l5pc_hay.model --params data/models/l5pc_hay.params --cells 1000 --gpu-methods auto --steps 400"
i=0
for w in base mine mine base; do
  i=$((i + 1)); f="$OUT/bench_${i}_$w.txt"
  $B --mechanisms /tmp/gm_libs/$w/libbbp.so > "$f" 2>&1
  ms=$(awk '$1 == "cuda" {print $6}' "$f" | tail -1)
  echo "$w $ms"; echo "$w $ms" >> "$OUT/abba.txt"
done
awk '{s[$1] += $2; n[$1]++} END {b = s["base"] / n["base"]; m = s["mine"] / n["mine"];
  printf "L5 x 1000 auto: main lib %.4f ms/step, gpumath lib %.4f ms/step, ratio main/gpumath %.3f\n", b, m, b / m}' "$OUT/abba.txt"
nvidia-smi --query-gpu=name --format=csv,noheader
el "done"
