#!/usr/bin/env bash
# Issue 23, one thread on the device host: where the bundled mix's time goes
# by block width and instruction set. Builds of the working tree with the
# clones (AVX-512 chosen on the host) and for AVX2 alone (-DNS_NO_CLONES
# -DNSM_NO_CLONES -mavx2 -mfma; AVX2=0: not), and of BASE (default: none)
# when set; at
# one thread, alternated in two rounds: the bundled mix x 5 (the 40 shapes
# Arbor reads; Arbor beside each of our runs), dense_Animal_2_Basal_2 x 1, 4 and
# 8 (blocks of 1, 4 and 8 lanes) and allen_rbp4 x 1, 4, 8 and 1,000.
# Correctness first: test_cable and test_cable_neuron of the clone build.
# ROUNDS (default 2); WIDTHS=0 leaves out the dense and allen rows.
# In $OUT: tests.txt rows.txt.
# Call (arbor-0.12.2-cp312 wheel in .whl3/):
#   run(command="OUT=\$OUT bash bench/device_mix1.sh", carry=[".whl3"], timeout_s=500)
set -uo pipefail
OUT=${OUT:-mix1-results}
mkdir -p "$OUT"
t0=$(date +%s)
pip install --no-deps --quiet --target /tmp/site .whl3/arbor-*.whl > /tmp/pip.log 2>&1 || tail -3 /tmp/pip.log
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
build() { # source dir cflags targets...
  local src=$1 b=$2 fl=$3; shift 3
  cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=ON \
    -DCMAKE_C_FLAGS="$fl" > "$b.log" 2>&1 && cmake --build "$b" -j16 --target "$@" >> "$b.log" 2>&1 ||
    { tail -20 "$b.log"; return 1; }
}
VARIANTS="clones"
build . /tmp/b-clones "" neurosolve_cli test_cable test_cable_neuron || exit 1
if [ "${AVX2:-1}" = 1 ]; then
  build . /tmp/b-avx2 "-DNS_NO_CLONES -DNSM_NO_CLONES -mavx2 -mfma" neurosolve_cli || exit 1
  VARIANTS="$VARIANTS avx2"
fi
if [ -n "${BASE:-}" ]; then
  rm -rf /tmp/base && git worktree prune && git worktree add -f /tmp/base "$BASE" > /dev/null 2>&1 || { echo "no $BASE"; exit 1; }
  build /tmp/base /tmp/b-base "" neurosolve_cli || exit 1
  VARIANTS="$VARIANTS base"
fi
echo "builds: $(( $(date +%s) - t0 )) s"
for t in test_cable test_cable_neuron; do
  timeout 200 "/tmp/b-clones/tests/$t" > /tmp/t.log 2>&1
  echo "$t: exit $? $(grep -c FAIL /tmp/t.log) FAIL lines; $(tail -1 /tmp/t.log)"
done 2>&1 | tee "$OUT/tests.txt"
D=data/morphologies/dense_Animal_2_Basal_2.swc
A=data/morphologies/allen_rbp4_485574832.swc
{
  # one untimed run first: the first run on a fresh machine was up to 40 %
  # slower than the next ones (2026-11-28)
  /tmp/b-clones/neurosolve bench sim --mixed --per 5 --jitter 0 --steps 20 --threads 1 > /dev/null 2>&1
  for round in $(seq "${ROUNDS:-2}"); do
    order=$VARIANTS; [ $((round % 2)) = 0 ] && order=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
    for b in $order; do
      echo "== $b (round $round): bundled x 5, 1 thread"
      timeout 100 "/tmp/b-$b/neurosolve" bench sim --mixed --per 5 --jitter 0 --steps 20 --threads 1 --arbor 2>&1 |
        grep -E "^Arbor|^bundled"
      [ "${WIDTHS:-1}" = 1 ] || continue
      echo "== $b (round $round): dense x 1,4,8 (20 steps), allen_rbp4 x 1,4,8,1000 (200 steps), 1 thread"
      timeout 100 "/tmp/b-$b/neurosolve" bench sim --backend cpu --morph "$D" --cells 1,4,8 --steps 20 --threads 1 \
        2>&1 | grep -E "^cpu"
      timeout 100 "/tmp/b-$b/neurosolve" bench sim --backend cpu --morph "$A" --cells 1,4,8,1000 --steps 200 \
        --threads 1 2>&1 | grep -E "^cpu"
    done
  done
} 2>&1 | tee "$OUT/rows.txt"
echo "total: $(( $(date +%s) - t0 )) s"
