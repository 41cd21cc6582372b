#!/usr/bin/env bash
# One device call for issue 20: a network inside the fused tree kernel (src/cable/cuda/sim_tree.cu, NET:
# NET_RECEIVE of each step's due events, the built-in synapses' currents and states, the detectors;
# docs/networks.md "The GPU loop") and the tree loop's group rule for mixed populations (sim_cuda.c).
#   1. build this tree (CUDA sm_90, MPI and Python off, the targets below) and BASE (default d66f6b7:
#      the per-step network path, tree_group_cap for every group) from `git archive`, in parallel;
#   2. tests of this tree: test_sim_network_cuda (NEURON's three networks fused and per step, against
#      NEURON and the CPU loop; the delivery rule; Poisson vs CPU), then compute-sanitizer memcheck of
#      the CLI's fused GPU run of NEURON's ring and of the short-delay ring, test_policy,
#      test_sim_model_cuda, test_cable_cuda, test_sim_state, test_sim_network, cli_network;
#   3. bench: `bench sim --network --backend cuda --neuron --threads 16` at 10,000 and 4,000 cells
#      (GPU network and bare, the CPU loop and NEURON 9.0.2 with 16 threads, rasters compared);
#      then BASE and this tree alternated twice: busyring 10,000 / 1,000 cells (20 ms) and the
#      bundled mixed population x5 and x20 (bench sim --mixed).
# Each step runs only while the 560 s budget lasts. Files under $OUT: fusednet_tests.txt,
# fusednet_bench.txt, fusednet_ab.txt, fusednet_logs.tgz.
# call: run(command="bash bench/device_fusednet.sh", carry=[".whl", ".fnbase"], timeout_s=600)
#   .whl: neuron-9.0.2 (cp312 manylinux) and find_libpython wheels (pip download, README of the device)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_fusednet_logs
mkdir -p "$LOG"
BASE=${BASE:-d66f6b7} # the commit in .fnbase
NEW=/tmp/fn_new OLD=/tmp/fn_old
START=$(date +%s)
BUDGET=${BUDGET:-560}
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local l=$(left)
    [ "$l" -lt 20 ] && { echo "$name skipped (${l}s left)" | tee -a "$LOG/summary.txt"; return 99; }
    [ "$t" -gt "$l" ] && t=$l
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-26s rc=%-3d %4ds (at %4ds)\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$(( $(date +%s) - START ))" \
        | tee -a "$LOG/summary.txt"
    tail -n 6 "$LOG/$name.log"
    return $rc
}
pack() {
    { cat "$LOG/summary.txt"; for f in "$LOG"/test_*.log "$LOG"/cli_*.log "$LOG"/san-*.log; do
        [ -f "$f" ] && { echo "=== $(basename "$f") (tail)"; tail -n 20 "$f"; }; done; } > "$FINAL/fusednet_tests.txt" 2>&1
    tar -C /tmp -czf "$FINAL/fusednet_logs.tgz" ns_fusednet_logs
}
trap pack EXIT
{ date -u; nproc; nvidia-smi; } > "$LOG/machine.txt" 2>&1
export PATH=/usr/local/cuda/bin:$PATH
if ls "$ROOT"/.whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$ROOT"/.whl/*.whl \
    > "$LOG/pip.log" 2>&1 && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
cfg() { cmake -S "$1" -B "$2" -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_MPI=OFF -DNS_PYTHON=OFF -DNS_HDF5=OFF \
          -DNS_TESTS="$3" -DCMAKE_BUILD_TYPE=Release; }
# BASE's sources travel in .fnbase (git archive BASE CMakeLists.txt cmake include src tools tests fuzz python
# examples bench, tests/data left out): the device's repository need not hold BASE; the data is this tree's
rm -rf /tmp/fn_base && cp -r "$ROOT/.fnbase" /tmp/fn_base && ln -s "$ROOT/data" /tmp/fn_base/data
STEPS=${STEPS:-tests bench ab}
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
cfg "$ROOT" "$NEW" ON > "$LOG/configure.log" 2>&1 || { tail -20 "$LOG/configure.log"; exit 1; }
if has ab; then
  cfg /tmp/fn_base "$OLD" OFF > "$LOG/configure-base.log" 2>&1 || { tail -20 "$LOG/configure-base.log"; exit 1; }
  (cmake --build "$OLD" -j 6 --target neurosolve_cli > "$LOG/build-base.log" 2>&1) &
fi
run build 360 cmake --build "$NEW" -j $(has ab && echo 10 || echo 16) --target neurosolve_cli test_sim_network_cuda test_policy \
    test_sim_model_cuda test_cable_cuda test_sim_state test_sim_network || exit 1
wait
NS=$NEW/neurosolve
if has profile; then
  # the fused kernel with and without the network (busyring 10,000 cells, 20 ms): each launch's time,
  # occupancy and local-memory traffic
  P="$FINAL/fusednet_profile.txt"
  N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  run ncu 200 "$N" --clock-control none --kernel-name regex:sim_tree_steps --csv --metrics \
gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,\
launch__occupancy_limit_shared_mem,launch__registers_per_thread,launch__grid_size,launch__waves_per_multiprocessor,\
smsp__inst_executed.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,dram__bytes.sum \
    "$NS" bench sim --network --backend cuda --cells 10000 --tstop 20 --repeats 1 --threads 16
  cp "$LOG/ncu.log" "$P"
  run busy10k 60 "$NS" bench sim --network --backend cuda --cells 10000 --tstop 20 --repeats 3 --threads 16
  cat "$LOG/busy10k.log" >> "$P"
  run busy10k-w0 60 "$NS" bench sim --network --backend cuda --cells 10000 --tstop 20 --repeats 3 --threads 16 \
      --weight 0
  cat "$LOG/busy10k-w0.log" >> "$P"
fi
has tests && run test_sim_network_cuda 150 "$NEW/tests/test_sim_network_cuda"
if has tests; then
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
run san-ring-memcheck 120 "$S" --tool memcheck --error-exitcode 9 "$NS" simulate --network \
    "$ROOT/tests/data/neuron_network/ring8_ca1_ko20x-07.net" --tstop 20 --backend cuda --no-progress \
    --out /tmp/fn_san_ring
run san-short-memcheck 90 "$S" --tool memcheck --error-exitcode 9 "$NS" simulate --network \
    "$ROOT/tests/data/neuron_network/ring8_short_delays.net" --tstop 5 --backend cuda --no-progress \
    --out /tmp/fn_san_short
run test_policy 30 "$NEW/tests/test_policy"
fi
T="$FINAL/fusednet_bench.txt"
if has bench; then
echo "# bench sim --network --backend cuda --neuron, $(date -u +%FT%TZ), $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" > "$T"
for n in 10000 4000; do
  run "busyring-$n" 150 "$NS" bench sim --network --backend cuda --cells "$n" --threads 16 --neuron --repeats 3
  echo "rc=$?" >> "$T"
  cat "$LOG/busyring-$n.log" >> "$T"
done
fi
if has tests; then
run test_sim_model_cuda 90 "$NEW/tests/test_sim_model_cuda"
run test_cable_cuda 90 "$NEW/tests/test_cable_cuda"
run test_sim_state 60 "$NEW/tests/test_sim_state"
run test_sim_network 90 "$NEW/tests/test_sim_network"
run cli_network 90 python3 "$ROOT/tests/test_cli_network.py" "$NS" "$ROOT"
fi
A="$FINAL/fusednet_ab.txt"
if has ab; then
echo "# old = $BASE, new = $(git -C "$ROOT" rev-parse --short HEAD) + working tree; $(date -u +%FT%TZ)" > "$A"
for round in 1 2; do
  for b in old new; do
    B=/tmp/fn_$b/neurosolve
    [ -x "$B" ] || { echo "$b: no binary" >> "$A"; continue; }
    [ "$(left)" -lt 40 ] && { echo "round $round $b: skipped" >> "$A"; continue; }
    echo "## round $round, $b" >> "$A"
    timeout 60 "$B" bench sim --network --backend cuda --cells 10000,1000 --tstop 20 --threads 16 --repeats 3 \
      2>&1 | grep -E "^ +[0-9]+ " >> "$A"
    timeout 90 "$B" bench sim --mixed --per 5,20 --jitter 0 --gpu-methods auto --cpu-max 1 2>&1 \
      | grep -iE "bundled|ref" | sed "s/^/mixed /" >> "$A"
  done
done
fi
cat "$LOG/summary.txt"
[ -f "$T" ] && tail -n 12 "$T"
[ -f "$A" ] && cat "$A"
[ -f "$FINAL/fusednet_profile.txt" ] && python3 - "$FINAL/fusednet_profile.txt" <<'PY'
import csv, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 14 and 'sim_tree_steps' in r[4]]
by = {}
for r in rows:
    m = re.search(r'sim_tree_stepsI(.*?)EEv', r[4])
    by.setdefault((int(r[0]), m.group(1) if m else '?', r[8]), {})[r[12]] = r[14]
for (i, k, grid), v in sorted(by.items()):
    print(i, k, 'grid', grid, ' '.join('%s=%s' % (n.split('__')[-1], v[n]) for n in sorted(v)))
PY
grep -E "us/cell|^ +[0-9]+ " "$FINAL/fusednet_profile.txt"
