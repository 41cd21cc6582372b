#!/usr/bin/env bash
# One device call for issue 20, item 6 (busyring, `bench sim --network`) on the 16-core host: a CPU
# build (the GPU loops have no networks yet), the network tests (test_sim_network: NEURON's rasters,
# 1/2/4 threads bit for bit; test_sim_netfile), then the CPU loop with 16 threads against NEURON with
# 16 threads on the same busyring network at 1,000, 4,000 and 10,000 cells (rasters compared in the
# same run: the bench exits 1 when they differ), and the interval loop's overhead: the same network
# with a minimum delay of 0.025 ms (one step per interval) against 5 ms, weight 0 (no wave), 16 threads.
# Output: $OUT/network_bench.txt (the tables), $OUT/network_bench.csv, $OUT/network_logs.tgz.
# call: run(command="bash bench/device_network.sh", carry=[".whl/site"])   (NEURON 9.0.2, cp312)
# Usage: bash bench/device_network.sh [STEP...]  (default: tests bench delay)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_network_logs
mkdir -p "$LOG"
BUILD=${BUILD:-$ROOT/build-net}
NS=$BUILD/neurosolve
STEPS=${*:-tests bench delay}
THREADS=${THREADS:-16}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-30s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 12 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/network_logs.tgz" ns_network_logs; }
trap pack EXIT
{ date -u; nproc; lscpu | head -20; uptime; } > "$LOG/machine.txt" 2>&1
[ -d "$ROOT/.whl/site" ] && export PYTHONPATH="$ROOT/.whl/site${PYTHONPATH:+:$PYTHONPATH}" \
    && export PATH="$ROOT/.whl/site/bin:$PATH"
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=ON -DNS_PYTHON=OFF \
    -DCMAKE_BUILD_TYPE=Release
run build 240 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_sim_network test_sim_netfile
T="$FINAL/network_bench.txt"
for step in $STEPS; do
  case $step in
    tests)
      for t in test_sim_network test_sim_netfile; do
        [ -x "$BUILD/tests/$t" ] && run "$t" 200 "$BUILD/tests/$t"
      done ;;
    bench)
      echo "# bench sim --network, $(date -u +%F), $(nproc) cores, $THREADS threads (ours and NEURON)" >> "$T"
      run "busyring-$THREADS" 420 "$NS" bench sim --network --cells ${CELLS:-1000,4000,10000} --threads "$THREADS" \
          --neuron --repeats 3 --csv "$FINAL/network_bench.csv"
      cat "$LOG/busyring-$THREADS.log" >> "$T" ;;
    delay)
      echo "# interval loop: minimum delay 5 ms against 0.025 ms, weight 0, ${DELAY_CELLS:-4000} cells, 20 ms" >> "$T"
      k=0
      for d in 5 0.025 5 0.025; do
        k=$((k + 1))
        run "delay-$k-$d" 120 "$NS" bench sim --network --cells ${DELAY_CELLS:-4000} --tstop 20 --threads "$THREADS" --delay $d \
            --weight 0 --repeats 3
        echo "delay $d: $(tail -n 1 "$LOG/delay-$k-$d.log")" >> "$T"
      done ;;
  esac
done
cat "$T"
cat "$LOG/summary.txt"
