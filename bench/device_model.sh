#!/usr/bin/env bash
# One device call for the models of issue 19 (NMODL mechanisms in the loops):
# build with CUDA, the GPU tests of the model path and of the loops it
# touches, then timings of `simulate` (same run): the generated hh against
# the hand-written hh (GPU tree loop and CPU loop, 16 threads), and the BBP
# layer 5 model on the GPU and the CPU. Logs in $OUT/model_logs.tgz, the
# timing table in $OUT/model_bench.txt.
# Usage: bash bench/device_model.sh [STEP...]  (default: tests bench; also: ctest, the whole GPU build's
# suite but the large tests)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_model_logs
mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
NS=$BUILD/neurosolve
STEPS=${*:-tests bench}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-30s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 12 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/model_logs.tgz" ns_model_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; lscpu | head -20; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_PYTHON=OFF
run build 300 cmake --build "$BUILD" -j 16
P=/tmp/ns_model; mkdir -p $P
printf 'all.insert = hh\n' > $P/hh.model
L5="$ROOT/data/morphologies/l5pc_bbp_axon.swc --params $ROOT/data/models/l5pc_hay.params"
L5M="--model $ROOT/data/models/l5pc_hay.model --mechanisms $P/libbbp.so --iclamp soma:1:1000:1.8"
[ -d "$ROOT/.whl/site" ] && export PYTHONPATH="$ROOT/.whl/site${PYTHONPATH:+:$PYTHONPATH}" \
    && export PATH="$ROOT/.whl/site/bin:$PATH"
# the BBP mechanisms compiled for NEURON beforehand (the carried site has no nocmodl):
#   python3 -c "import sys; sys.path.insert(0, 'validation'); import nmodl_neuron_traces as n; \
#               n.compile_bbp('.whl/nrnmech_bbp')"
# call: run(command="bash bench/device_model.sh", carry=[".whl/site", ".whl/nrnmech_bbp"])
[ -d "$ROOT/.whl/nrnmech_bbp/x86_64" ] && export NRN_MECH_DIR="$ROOT/.whl/nrnmech_bbp"
for step in $STEPS; do
  case $step in
    ctest)
      run ctest-gpu 420 ctest --test-dir "$BUILD" -j 8 --output-on-failure -LE large ;;
    tests)
      for t in test_sim_model_cuda test_sim_model test_cable_cuda test_sim_state test_cable test_nmodl_neuron; do
        [ -x "$BUILD/tests/$t" ] && run "$t" 300 "$BUILD/tests/$t"
      done
      run model_neuron_cuda 300 python3 "$ROOT/tests/test_model_neuron.py" "$NS" "$ROOT" cuda ;;
    bench)
      run build-bbp-cuda 300 "$NS" mechanisms build "$ROOT/data/mechanisms/bbp" -o $P/libbbp.so --cuda
      T="$FINAL/model_bench.txt"
      echo "# simulate timings, $(date -u +%F), $(nvidia-smi --query-gpu=name --format=csv,noheader), $(nproc) cores" > "$T"
      S="simulate --no-progress --json --record soma --radii default:1"
      A="--iclamp soma:1:1000:auto"
      for rep in ${REPS:-1 2}; do
        for cells in ${HH_CELLS:-1000 10000}; do
          run "hh-gpu-hand-$cells-$rep" 200 "$NS" $S $A bundled --cells $((cells / 39)) --tstop 20 --backend cuda --method tree
          run "hh-gpu-gen-$cells-$rep" 200 "$NS" $S $A bundled --cells $((cells / 39)) --tstop 20 --backend cuda --model $P/hh.model
        done
        run "hh-cpu-hand-$rep" 200 "$NS" $S $A bundled --cells 26 --tstop 10 --backend cpu --threads 16
        run "hh-cpu-gen-$rep" 200 "$NS" $S $A bundled --cells 26 --tstop 10 --backend cpu --threads 16 --model $P/hh.model
      done
      for cells in ${L5_GPU_CELLS:-1 100 1000 10000}; do
        run "l5-gpu-$cells" 300 "$NS" $S $L5 $L5M --cells $cells --tstop 20 --backend cuda
      done
      for cells in ${L5_CPU_CELLS:-1 16 160}; do
        run "l5-cpu16-$cells" 300 "$NS" $S $L5 $L5M --cells $cells --tstop 20 --backend cpu --threads 16
        run "l5-neuron16-$cells" 300 python3 "$ROOT/bench/neuron_model_bench.py" "$ROOT/data/morphologies/l5pc_bbp_axon.swc" \
            "$ROOT/data/models/l5pc_hay.params" "$ROOT/data/models/l5pc_hay.model" $cells 800 16 1.8
      done
      for f in "$LOG"/hh-*.log "$LOG"/l5-*.log; do
        printf '%-28s %s\n' "$(basename "$f" .log)" "$(grep -o '"compartments":[0-9]*\|"segments": [0-9]*\|"wall_s": *[0-9.e+-]*\|"compartment_steps_per_s":[0-9.e+-]*\|"segment_steps_per_s": [0-9.e+-]*\|"spikes":[0-9]*\|"spikes_cell0": \[[^]]*\]' "$f" | head -5 | tr '\n' ' ')" >> "$T"
      done
      cat "$T" ;;
  esac
done
cat "$LOG/summary.txt"
