#!/usr/bin/env bash
# Issue 23 on the device host (16 cores): the CPU loop of the working tree
# against BASE (default HEAD, the session's starting ref) and Arbor 0.12.2,
# same call: the bundled mix x 5 (five copies of the 38,580-compartment
# cell, split across the threads: cpu_policy.h ns_cpu_split) at 16 threads,
# the mix at 1 thread, and 1,000 allen_rbp4 cells at 1 and 16 threads.
# PIECES="2 32" also builds the working tree with NS_CPU_SPLIT_PIECES = 2
# and 32 (cpu_policy.h) and times the mix and the large cell alone (one and
# five copies at 16 threads) with each, alternated with BASE and the tree.
# Correctness first: test_cable (the split blocks against one thread, bit
# for bit), test_policy, test_cable_neuron. CPU-only builds.
# In $OUT: tests.txt rows.txt.
# Call (arbor-0.12.2-cp312 wheel in .whl3/):
#   run(command="bash bench/device_split.sh", carry=[".whl3"], timeout_s=400)
set -uo pipefail
OUT=${OUT:-split-results}
BASE=${BASE:-HEAD}
mkdir -p "$OUT"
t0=$(date +%s)
pip install --no-deps --quiet --target /tmp/site .whl3/arbor-*.whl > /tmp/pip.log 2>&1 || tail -3 /tmp/pip.log
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
rm -rf /tmp/base && git worktree add -f /tmp/base "$BASE" > /dev/null 2>&1 || { echo "no $BASE"; exit 1; }
build() { # source build targets... (CFLAGS from the environment)
  local src=$1 b=$2; shift 2
  cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=ON \
    -DCMAKE_C_FLAGS="${CFLAGS:-}" > "$b.log" 2>&1 &&
    cmake --build "$b" -j16 --target "$@" >> "$b.log" 2>&1 || { tail -20 "$b.log"; return 1; }
}
build /tmp/base /tmp/b-base neurosolve_cli || exit 1
build . /tmp/b-new neurosolve_cli test_cable test_policy test_cable_neuron || exit 1
VARIANTS="new base"
for g in ${PIECES:-}; do
  CFLAGS="-DNS_CPU_SPLIT_PIECES=$g" build . "/tmp/b-p$g" neurosolve_cli || exit 1
  VARIANTS="$VARIANTS p$g"
done
echo "builds: $(( $(date +%s) - t0 )) s"
for t in test_cable test_policy test_cable_neuron; do
  timeout 200 "/tmp/b-new/tests/$t" > /tmp/t.log 2>&1
  echo "$t: exit $? $(grep -c FAIL /tmp/t.log) FAIL lines; $(tail -1 /tmp/t.log)"
done 2>&1 | tee "$OUT/tests.txt"
M=data/morphologies/allen_rbp4_485574832.swc
D=data/morphologies/dense_Animal_2_Basal_2.swc
{
  for round in 1 2; do
    for b in $VARIANTS; do
      echo "== $b (round $round): bundled x 5, 16 threads"
      arb=; [ "$b" = new ] && [ "$round" = 1 ] && arb=--arbor
      timeout 100 "/tmp/b-$b/neurosolve" bench sim --mixed --per 5 --jitter 0 --steps 400 --threads 16 $arb 2>&1 |
        grep -E "^Arbor|^bundled"
      echo "== $b (round $round): dense_Animal_2_Basal_2 x 1 and x 5, 16 threads"
      timeout 100 "/tmp/b-$b/neurosolve" bench sim --backend cpu --morph "$D" --cells 1,5 --steps 200 --threads 16 \
        2>&1 | grep -E "^cpu"
    done
  done
  [ "${ONE:-1}" = 1 ] && echo "== new: bundled x 5, 1 thread" &&
  timeout 100 /tmp/b-new/neurosolve bench sim --mixed --per 5 --jitter 0 --steps 20 --threads 1 --arbor 2>&1 |
    grep -E "^Arbor|^bundled"
  for th in 16 1; do
    echo "== new: allen_rbp4 x 1000, $th thread(s)"
    timeout 100 /tmp/b-new/neurosolve bench sim --backend cpu --morph "$M" --cells 1000 --steps 400 --threads "$th" \
      --arbor 1000 2>&1 | grep -E "^Arbor|^cpu"
  done
} 2>&1 | tee "$OUT/rows.txt"
echo "total: $(( $(date +%s) - t0 )) s"
