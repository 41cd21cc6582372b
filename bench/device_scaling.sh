#!/usr/bin/env bash
# Thread scaling of the CPU loop on the device host (issue 23's 16 / 1 target),
# BASE (a commit the device's clone has; default HEAD, the session's starting
# ref) against the working tree in one call, alternated rounds: one-shape
# populations whose blocks fit a core's L2 (allen_rbp4 x 1,000) or not
# (dense_Animal_2_Basal_2 x 32: 16 blocks of 2 x 38,580 compartments, 4.3 MB
# each) and the bundled mix x 25 (1,325 cells, 53 shapes), at THREADS_LIST
# (default "1 16") threads, ROUNDS (default 3) rounds, the populations of ROWS
# (default "dense32 allen1000 mix25"). EXTRA="name:flags ...": also the working
# tree built with those C flags (commas for spaces), as variant name. TESTS=1:
# first the CPU loop's tests (test_cable, test_cable_neuron,
# test_cable_checkpoint, test_policy, test_sim_model, test_sim_network) of the
# working tree, built with the host's compiler (its
# AVX-512 clones).
# Call: run(command="bash bench/device_scaling.sh", timeout_s=600); results in $OUT/scal.txt
set -uo pipefail
OUT=${OUT:-scaling-results}
BASE=${BASE:-HEAD}
ROUNDS=${ROUNDS:-3}
THREADS_LIST=${THREADS_LIST:-1 16}
ROWS=${ROWS:-dense32 allen1000 mix25}
mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; gcc --version | head -1; lscpu | grep -E "Model name|^CPU\(s\)|L2|L3|NUMA"; git log -1 --oneline; } > "$OUT/host.txt" 2>&1
rm -rf /tmp/base && git worktree add -f /tmp/base "$BASE" > /dev/null 2>&1 || { echo "no $BASE"; exit 1; }
build() { # source-dir build-dir [C flags]
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF \
    -DCMAKE_C_FLAGS="${3:-}" > "$2.log" 2>&1 &&
    cmake --build "$2" -j"$(nproc)" --target neurosolve_cli >> "$2.log" 2>&1 || { tail -20 "$2.log"; return 1; }
}
VARIANTS="base new"
build /tmp/base /tmp/b-base & build . /tmp/b-new &
for x in ${EXTRA:-}; do build . "/tmp/b-${x%%:*}" "$(echo "${x#*:}" | tr , ' ')" & VARIANTS="$VARIANTS ${x%%:*}"; done
wait
for v in $VARIANTS; do [ -x "/tmp/b-$v/neurosolve" ] || { echo "no build $v"; exit 1; }; done
echo "builds $(( $(date +%s) - t0 )) s"
if [ "${TESTS:-0}" = 1 ]; then
  cmake -S . -B /tmp/b-tests -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF > /tmp/b-tests.log 2>&1 &&
    cmake --build /tmp/b-tests -j"$(nproc)" >> /tmp/b-tests.log 2>&1 || { tail -20 /tmp/b-tests.log; exit 1; }
  ctest --test-dir /tmp/b-tests --output-on-failure -j8 -R '^(test_cable|test_cable_neuron|test_cable_checkpoint|test_policy|test_sim_model|test_sim_network)$' 2>&1 |
    tail -8 | tee "$OUT/tests.txt"
  echo "tests $(( $(date +%s) - t0 )) s"
fi
D=data/morphologies
row() { # binary threads label args...
  local N=$1 th=$2 label=$3; shift 3
  echo "$label th$th: $("$N" bench sim "$@" --threads "$th" 2>/dev/null | grep -E '^cpu|bundled x' | tail -1)"
}
/tmp/b-new/neurosolve bench sim --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 50 --threads 16 > /dev/null
for r in $(seq 1 "$ROUNDS"); do
  for th in $THREADS_LIST; do
    for v in $VARIANTS; do
      N=/tmp/b-$v/neurosolve
      for w in $ROWS; do case $w in
        dense32) row $N "$th" "r$r $v dense32" --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 40 ;;
        allen1000) row $N "$th" "r$r $v allen1000" --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 150 ;;
        mix25) row $N "$th" "r$r $v mix25" --mixed --per 25 --jitter 0 --gpu-methods auto --cpu-max 4000000 --steps 40 ;;
      esac; done
    done
  done
done 2>&1 | tee "$OUT/scal.txt"
echo "total $(( $(date +%s) - t0 )) s"
