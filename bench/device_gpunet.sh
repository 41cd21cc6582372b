#!/usr/bin/env bash
# One device call for issue 20, item 2 (networks on the GPU loop, docs/networks.md "The GPU loop"):
# a CUDA build (arch 90, MPI off, only the targets needed), then
#   tests: test_sim_network_cuda (NEURON's three networks on the GPU, the delivery rule, Poisson vs
#          CPU, two GPU runs bit for bit), test_sim_model_cuda (the model loop unchanged), test_policy,
#          test_sim_network (the CPU loop unchanged), test_cli_network.py (--backend cuda on NEURON's ring)
#   sanitize: compute-sanitizer memcheck on the CLI's GPU run of NEURON's ring (20 ms) and of the
#          short-delay ring (one step per interval, 10 ms)
#   bench: bench sim --network --backend cuda: the GPU loop with and without the network, the CPU loop
#          with 16 threads and NEURON with 16 threads (--neuron) at 10,000, 1,000 and 4,000 cells (one
#          call per size, each within the time left of a 540 s budget: BUDGET=...), rasters compared in
#          the same run (the bench exits 1 when they differ)
# Output under $OUT: gpunet_tests.txt (summary + test tails), gpunet_bench.txt (the table),
# gpunet_bench.csv, gpunet_logs.tgz (every log).
# call: run(command="bash bench/device_gpunet.sh", carry=[".whl/site"], timeout_s=600)  (NEURON 9.0.2, cp312)
# Usage: bash bench/device_gpunet.sh [STEP...]  (default: tests sanitize bench)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_gpunet_logs
mkdir -p "$LOG"
BUILD=${BUILD:-$ROOT/build-gpunet}
NS=$BUILD/neurosolve
STEPS=${*:-tests sanitize bench}
THREADS=${THREADS:-16}
START=$(date +%s)
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-34s rc=%-3d %4ds (at %4ds)\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$(( $(date +%s) - START ))" \
        | tee -a "$LOG/summary.txt"
    tail -n 15 "$LOG/$name.log"
    return $rc
}
pack() {
    { cat "$LOG/summary.txt"; for f in "$LOG"/test_*.log "$LOG"/cli_network.log "$LOG"/san-*.log; do
        [ -f "$f" ] && { echo "=== $(basename "$f") (tail)"; tail -n 25 "$f"; }; done; } > "$FINAL/gpunet_tests.txt" 2>&1
    tar -C /tmp -czf "$FINAL/gpunet_logs.tgz" ns_gpunet_logs
}
trap pack EXIT
{ date -u; nproc; nvidia-smi; uptime; } > "$LOG/machine.txt" 2>&1
[ -d "$ROOT/.whl/site" ] && export PYTHONPATH="$ROOT/.whl/site${PYTHONPATH:+:$PYTHONPATH}" \
    && export PATH="$ROOT/.whl/site/bin:$PATH"
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_MPI=OFF \
    -DNS_TESTS=ON -DNS_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release || exit 1
run build 330 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_sim_network_cuda test_sim_model_cuda \
    test_policy test_sim_network || exit 1
for step in $STEPS; do
  case $step in
    tests)
      run test_sim_network_cuda 180 "$BUILD/tests/test_sim_network_cuda"
      run test_sim_model_cuda 90 "$BUILD/tests/test_sim_model_cuda"
      run test_policy 30 "$BUILD/tests/test_policy"
      run test_sim_network 120 "$BUILD/tests/test_sim_network"
      run cli_network 120 python3 "$ROOT/tests/test_cli_network.py" "$NS" "$ROOT" ;;
    sanitize)
      S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
      run san-ring-memcheck 150 "$S" --tool memcheck --error-exitcode 9 "$NS" simulate --network \
          "$ROOT/tests/data/neuron_network/ring8_ca1_ko20x-07.net" --tstop 20 --backend cuda --no-progress \
          --out /tmp/ns_gpunet_san_ring
      run san-short-memcheck 120 "$S" --tool memcheck --error-exitcode 9 "$NS" simulate --network \
          "$ROOT/tests/data/neuron_network/ring8_short_delays.net" --tstop 10 --backend cuda --no-progress \
          --out /tmp/ns_gpunet_san_short ;;
    bench)
      # one size per call, 10,000 cells first (the issue's target), each within the time left
      T="$FINAL/gpunet_bench.txt"
      echo "# bench sim --network --backend cuda, $(date -u +%F), $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), CPU loop and NEURON $THREADS threads" >> "$T"
      for n in ${CELLS:-10000 1000 4000}; do
        left=$(( ${BUDGET:-540} - ($(date +%s) - START) ))
        [ "$left" -lt 45 ] && { echo "$n cells: skipped, ${left}s left" >> "$T"; continue; }
        run "busyring-cuda-$n" "$left" "$NS" bench sim --network --backend cuda --cells "$n" \
            --threads "$THREADS" --neuron --repeats 3 --csv "$LOG/bench_$n.csv"
        echo "rc=$? $(date -u +%T)" >> "$T"
        cat "$LOG/busyring-cuda-$n.log" >> "$T"
        if [ -f "$LOG/bench_$n.csv" ]; then
          [ -f "$FINAL/gpunet_bench.csv" ] || head -n 1 "$LOG/bench_$n.csv" > "$FINAL/gpunet_bench.csv"
          tail -n +2 "$LOG/bench_$n.csv" >> "$FINAL/gpunet_bench.csv"
        fi
      done ;;
  esac
done
cat "$LOG/summary.txt"
