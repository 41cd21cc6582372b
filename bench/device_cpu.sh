#!/usr/bin/env bash
# The CPU simulation loop against Arbor and NEURON on the device host (issue 23;
# docs/simulation.md "Population loop (CPU)", bench/README.md): build with CUDA,
# check correctness (test_policy, test_cable, test_cable_neuron, and
# test_cable_cuda: the GPU loops against this CPU loop, same run), then time in
# one run, per cell-step:
#   one shape: 1,000 copies of allen_rbp4 for 10 ms (400 steps after 40 warm-up),
#              our loop, Arbor and NEURON, each with 1 and 16 threads;
#   mixed:     the bundled morphologies Arbor's SWC loader accepts x 5 cells,
#              the same three with 1 and 16 threads;
#   few cells: 1, 4 and 16 cells with 1 and 16 threads (never slower with 16);
#   split cell: the 38,580-compartment dense_Animal_2_Basal_2 alone with 1 and
#              16 threads (at 16 it runs split across the threads, ns_cpu_split);
#   mixed at 1 thread: ours and Arbor (no NEURON: its one-thread run of the mix
#              takes minutes), 200 steps, for the 16/1 scaling of the mix;
# (in that order, the mixed runs last: NEURON's Import3d set-up of the mix is the
# slowest part; bench.txt keeps what ran if the call's limit cuts it short)
# and print the table of ratios (bench/cpu_table.py). In $OUT (8 files at most):
# host.txt tests.txt bench.txt table.md one_1.csv one_T.csv mixed_1.csv mixed_T.csv.
#
# Arbor 0.12.2 and NEURON 9.0.2 come as an unpacked, trimmed site folder
# (.whl/site: the two cp312 manylinux wheels installed with --target, static
# libraries, NMODL and GUI binaries removed) because the wheels and the tree
# exceed the 64 MiB a call carries. Call (from the repository root):
#   run(command="bash bench/device_cpu.sh", carry=[".whl/site"], timeout_s=600)
# Usage elsewhere: bash bench/device_cpu.sh   (THREADS=16 CELLS=1000 STEPS=400; SKIP_CUDA=1: CPU-only
# build; SKIP_MIXED=1: no mixed runs; SKIP_TUNE=1: no gather experiment at the end; MIX25=1: the
# mix x 25, 1,000 cells, at 1 and 16 threads, ours only)
set -uo pipefail
OUT=${OUT:-cpu-results}
mkdir -p "$OUT"
T=${THREADS:-16}
CELLS=${CELLS:-1000}
STEPS=${STEPS:-400}
[ -d .whl/site ] && export PYTHONPATH="$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
BUILD=build-device-cpu
CUDA=ON
[ -n "${SKIP_CUDA:-}" ] && CUDA=OFF
{
  date -u; uname -a; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)|Flags" | cut -c1-200
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null
  python3 -c "import arbor, neuron; print('arbor', arbor.__version__, 'neuron', neuron.__version__)" 2>&1 | tail -1
} > "$OUT/host.txt"
cat "$OUT/host.txt"
t0=$(date +%s)
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=$CUDA -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_MPI=OFF \
  > /tmp/cpu-build.log 2>&1
cmake --build "$BUILD" -j"$(nproc)" --target neurosolve_cli test_policy test_exp_lanes test_cable test_cable_neuron \
  $([ $CUDA = ON ] && echo test_cable_cuda) >> /tmp/cpu-build.log 2>&1 || { tail -40 /tmp/cpu-build.log; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
NS=./$BUILD/neurosolve
{
  for t in test_policy test_exp_lanes test_cable test_cable_neuron test_cable_cuda; do
    [ -x "./$BUILD/tests/$t" ] || continue
    "./$BUILD/tests/$t" > /tmp/cpu-t.log 2>&1; echo "$t: exit $? $(tail -1 /tmp/cpu-t.log)"
    grep -E "FAIL" /tmp/cpu-t.log | head -10
  done
} 2>&1 | tee "$OUT/tests.txt"
M=data/morphologies/allen_rbp4_485574832.swc
FEW=/tmp/cpu-few
mkdir -p "$FEW"
{
  # untimed: the first run on a fresh machine was up to 40 % slower (2026-11-28)
  "$NS" bench sim --backend cpu --morph "$M" --cells "$CELLS" --steps 100 --threads "$T" > /dev/null 2>&1
  for th in 1 "$T"; do
    echo "== one shape, $th thread(s)"
    "$NS" bench sim --backend cpu --morph "$M" --cells "$CELLS" --steps "$STEPS" --threads "$th" --arbor "$CELLS" --neuron "$CELLS" \
      --csv "$OUT/one_$th.csv"
  done
  for th in 1 "$T"; do
    echo "== few cells, $th thread(s)"
    "$NS" bench sim --backend cpu --morph "$M" --cells 1,4,16 --steps "$STEPS" --threads "$th" --csv "$FEW/few_$th.csv"
  done
  for th in 1 "$T"; do
    echo "== split cell (dense_Animal_2_Basal_2 alone), $th thread(s)"
    "$NS" bench sim --backend cpu --morph data/morphologies/dense_Animal_2_Basal_2.swc --cells 1 --steps 100 \
      --threads "$th" --csv "$FEW/big_$th.csv"
  done
  # the mixed set at T threads (the target) unless MIXED_THREADS says more (e.g. "16 1"):
  # NEURON's Import3d set-up of the mix is the slowest part of the script
  for th in $([ -z "${SKIP_MIXED:-}" ] && echo "${MIXED_THREADS:-$T}"); do
    echo "== mixed, $th thread(s)"
    "$NS" bench sim --mixed --per 5 --jitter 0 --gpu-methods auto --steps "$STEPS" --threads "$th" --arbor \
      --neuron-threads "$th" --csv "$OUT/mixed_$th.csv"
  done
  if [ -z "${SKIP_MIXED:-}" ] && [ "$T" != 1 ]; then
    echo "== mixed, 1 thread (ours and Arbor)"
    "$NS" bench sim --mixed --per 5 --jitter 0 --gpu-methods auto --steps 200 --threads 1 --arbor \
      --csv "$OUT/mixed_1.csv"
  fi
  # MIX25=1: the mix x 25 (1,000 cells) at 1 and T threads, ours only (bench sim
  # --mixed runs Arbor on x 5 only), for the 16 / 1 scaling at >= 1,000 cells
  for th in $([ "${MIX25:-0}" = 1 ] && echo 1 "$T"); do
    echo "== mixed x 25 (1,000 cells), $th thread(s)"
    "$NS" bench sim --mixed --per 25 --jitter 0 --gpu-methods auto --cpu-max 4000000 --steps 100 --threads "$th"
  done
} 2>&1 | tee "$OUT/bench.txt"
python3 bench/cpu_table.py "$OUT" "$FEW" "$T" | tee "$OUT/table.md"
echo "total: $(( $(date +%s) - t0 )) s"
# An experiment for the next pass, last so that it cannot cost the table: the rate table's
# lookups as hardware gathers (gcc 12 emulates them with scalar loads under its generic tuning;
# -mtune=icelake-server makes it emit vgatherdpd: 0.86x on the AMD dev box). A second CPU-only
# build with that tuning, ours only, alternated with the main build, 3 rounds, 1 and T threads.
if [ -z "${SKIP_TUNE:-}" ] && [ $(( $(date +%s) - t0 )) -lt 420 ]; then
  {
    echo "== gather experiment: -mtune=icelake-server against the main build (ms/step, allen_rbp4 x $CELLS)"
    cmake -S . -B build-device-cpu-tune -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF \
      -DCMAKE_C_FLAGS=-mtune=icelake-server > /tmp/cpu-tune.log 2>&1 &&
      cmake --build build-device-cpu-tune -j"$(nproc)" --target neurosolve_cli >> /tmp/cpu-tune.log 2>&1 ||
      { tail -5 /tmp/cpu-tune.log; exit 0; }
    for r in 1 2 3; do
      for th in 1 "$T"; do
        for b in "$BUILD" build-device-cpu-tune; do
          ms=$(./$b/neurosolve bench sim --backend cpu --morph "$M" --cells "$CELLS" --steps 200 --threads "$th" 2>&1 |
            awk '$1 == "cpu" {print $6}')
          echo "round $r threads $th $b: $ms"
        done
      done
    done
    echo "total: $(( $(date +%s) - t0 )) s"
  } 2>&1 | tee -a "$OUT/bench.txt"
fi
