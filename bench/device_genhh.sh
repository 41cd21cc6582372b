#!/usr/bin/env bash
# The generated hh against the hand-written hh on the device host's CPU loop
# (issue 19's "within 5 %"), before and after a change: BASE (a commit the
# device's clone has; default HEAD, the session's starting ref) against the
# working tree, in one call. Also the compiler's vectorisation report of the
# built-in hh (gcc -fopt-info-vec); 1 and 16 threads, alternated rounds.
# With ARBOR=1 (and arbor-0.12.2-cp312 in .whl3/), then our CPU loop against
# Arbor 0.12.2 (issue 23): `bench sim` of 1,000 allen_rbp4 cells at 1 and 16
# threads and the bundled mix x 5 at 16 threads, base and new, with --arbor.
# ARBOR_ROUNDS (default 1) rounds of those, alternated, after an untimed run;
# MIX=0 leaves out the mix; BENCHSIM=1 adds `bench sim` rows (1,000 allen_rbp4
# cells, one call of 400 steps) to the generated-hh rounds; BUSY=1 adds allen_rbp4 rows at 16 threads with core
# 0 kept busy by another process; ROUNDS=0 skips the generated-hh rounds.
# In $OUT: host.txt vec.txt runs.txt [arbor.txt].
# Call: run(command="ARBOR=1 bash bench/device_genhh.sh", carry=[".whl3"], timeout_s=600)
set -uo pipefail
OUT=${OUT:-genhh-results}
BASE=${BASE:-HEAD}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; gcc --version | head -1; cc --version | head -1; lscpu | grep -E "Model name|^CPU\(s\)"; } > "$OUT/host.txt" 2>&1
cat "$OUT/host.txt"
rm -rf /tmp/base && git worktree add -f /tmp/base "$BASE" > /dev/null 2>&1 || { echo "no $BASE"; exit 1; }
build() { # source-dir build-dir
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=ON > "/tmp/$(basename "$2").log" 2>&1 &&
    cmake --build "$2" -j"$(nproc)" --target neurosolve_cli ${3:-} >> "/tmp/$(basename "$2").log" 2>&1 ||
    { tail -30 "/tmp/$(basename "$2").log"; return 1; }
}
build /tmp/base /tmp/b-base || exit 1
build . b-new "test_sim_model test_nmodl test_cable_neuron test_cable test_policy" || exit 1
echo "builds: $(( $(date +%s) - t0 )) s"
for t in test_sim_model test_nmodl test_cable_neuron test_cable test_policy; do
  timeout 200 "./b-new/tests/$t" > /tmp/t.log 2>&1
  echo "$t: exit $? $(grep -c FAIL /tmp/t.log) FAIL lines; $(tail -1 /tmp/t.log)"
done 2>&1 | tee "$OUT/tests.txt"
for src in /tmp/base .; do
  echo "== $src: gcc -O3 -fopt-info-vec src/cable/builtin/hh.c (the library's flags)"
  gcc -std=c11 -O3 -ffp-contract=off -fno-trapping-math -fopenmp-simd -DNSM_OMP_SIMD -Iinclude -I"$src/include" \
    -I"$src/src" -c "$src/src/cable/builtin/hh.c" -o /tmp/hh.o -fopt-info-vec-optimized 2>&1 | grep -E "loop vectorized" | sort | uniq -c
done > "$OUT/vec.txt" 2>&1
cat "$OUT/vec.txt"
printf 'all.insert = hh\n' > /tmp/hh.model
val() { grep -o "\"$1\":[0-9.e+-]*" "$2" | head -1 | cut -d: -f2; }
{
  echo "# build path threads round compartment_steps_per_s spikes"
  for r in $(seq "$ROUNDS"); do
    for th in 1 16; do
      cells=$([ "$th" = 1 ] && echo 8 || echo 26)
      for run in "base hand" "base gen" "new hand" "new gen"; do
        set -- $run
        ns=$([ "$1" = base ] && echo /tmp/b-base/neurosolve || echo ./b-new/neurosolve)
        extra=""
        [ "$2" = gen ] && extra="--model /tmp/hh.model"
        timeout 120 $ns simulate bundled --radii default:1 --cells "$cells" --tstop 10 --threads "$th" --json \
          --no-progress $extra > /tmp/o.json 2>/tmp/e.txt || tail -2 /tmp/e.txt
        echo "$1 $2 $th $r $(val compartment_steps_per_s /tmp/o.json) $(val spikes /tmp/o.json)"
      done
      # BENCHSIM=1: also `bench sim` (one call of 400 steps) of 1,000 allen_rbp4 cells
      [ "${BENCHSIM:-0}" = 1 ] && for run in "base hand" "base gen" "new hand" "new gen"; do
        set -- $run
        ns=$([ "$1" = base ] && echo /tmp/b-base/neurosolve || echo ./b-new/neurosolve)
        extra=""
        [ "$2" = gen ] && extra="--model /tmp/hh.model"
        timeout 120 $ns bench sim --backend cpu --morph data/morphologies/allen_rbp4_485574832.swc --cells 1000 \
          --threads "$th" $extra --json > /tmp/b.json 2>/tmp/e.txt || tail -2 /tmp/e.txt
        echo "$1 $2-benchsim $th $r $(val compartment_steps_per_s /tmp/b.json)"
      done
    done
  done
} 2>&1 | tee "$OUT/runs.txt"
[ "$ROUNDS" -gt 0 ] && python3 - "$OUT/runs.txt" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l[0] != '#' and len(l.split()) >= 5]
by = {}
for b, p, th, r, rate, *sp in rows:
    by.setdefault((b, p, th), []).append(float(rate))
for th in ('1', '16'):
    for tool in ('', '-benchsim'):
        if ('new', 'hand' + tool, th) not in by:
            continue
        ref = st.median(by[('new', 'hand' + tool, th)])
        for k in sorted(by):
            if k[2] == th and k[1].endswith(tool) and (tool or '-' not in k[1]):
                print(f"threads {th:>2} {k[0]:4} {k[1]:14}: median {st.median(by[k]):.4g} comp-steps/s, {st.median(by[k]) / ref:.3f} of new hand{tool}")
PY
if [ "${ARBOR:-0}" = 1 ] && ls .whl3/arbor-*.whl > /dev/null 2>&1; then
  pip install --no-deps --quiet --target /tmp/site .whl3/arbor-*.whl > /tmp/pip.log 2>&1 || tail -5 /tmp/pip.log
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  M=data/morphologies/allen_rbp4_485574832.swc
  {
    # an untimed run first (the first run on a fresh machine was up to 40 %
    # slower, 2026-11-28); then ARBOR_ROUNDS rounds, base and new in
    # alternating order; with BUSY=1 also 16-thread rows while another process
    # keeps core 0 busy (a loaded machine)
    ./b-new/neurosolve bench sim --backend cpu --morph "$M" --cells 1000 --steps 100 --threads 16 > /dev/null 2>&1
    for r in $(seq "${ARBOR_ROUNDS:-1}"); do
      order="base new"; [ $((r % 2)) = 0 ] && order="new base"
      for th in 1 16; do
        for b in $order; do
          ns=$([ "$b" = base ] && echo /tmp/b-base/neurosolve || echo ./b-new/neurosolve)
          echo "== $b (round $r): allen_rbp4 x 1000, $th thread(s)"
          timeout 150 $ns bench sim --backend cpu --morph "$M" --cells 1000 --steps 400 --threads "$th" --arbor 1000 \
            2>&1 | grep -E "^Arbor|^cpu"
        done
      done
      for b in $([ "${MIX:-1}" = 1 ] && echo $order); do
        ns=$([ "$b" = base ] && echo /tmp/b-base/neurosolve || echo ./b-new/neurosolve)
        echo "== $b (round $r): bundled x 5, 16 threads"
        timeout 150 $ns bench sim --mixed --per 5 --jitter 0 --steps 400 --threads 16 --arbor 2>&1 | grep -E "^Arbor|^bundled"
      done
      if [ "${BUSY:-0}" = 1 ]; then
        taskset -c 0 sh -c 'while :; do :; done' & spin=$!
        for b in $order; do
          ns=$([ "$b" = base ] && echo /tmp/b-base/neurosolve || echo ./b-new/neurosolve)
          echo "== $b (round $r): allen_rbp4 x 1000, 16 threads, core 0 busy"
          timeout 150 $ns bench sim --backend cpu --morph "$M" --cells 1000 --steps 400 --threads 16 --arbor 1000 \
            2>&1 | grep -E "^Arbor|^cpu"
        done
        kill $spin
      fi
    done
  } 2>&1 | tee "$OUT/arbor.txt"
fi
echo "total: $(( $(date +%s) - t0 )) s"
