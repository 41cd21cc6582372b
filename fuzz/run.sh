#!/usr/bin/env bash
# Coverage-guided fuzzing of the readers for a bounded time (docs/fuzzing.md).
#   fuzz/run.sh [SECONDS_PER_TARGET (20)] [TARGET...]   (targets: swc nifti params tracts life_files life_model life_state checkpoint nmodl model network json sonata_types)
#   NS_FUZZ_JOBS=N (default: the number of cores): targets run at once
#   NS_FUZZ_SEED=N (default 1): libFuzzer's seed, fixed so that CI explores the same inputs on every
#   run (a finding is reproducible, not a lottery); set another seed, or 0 for a random one, to explore
# Builds build-fuzz/ with clang, libFuzzer, ASan and UBSan (NS_FUZZ=ON), then runs
# each target on a scratch copy of fuzz/corpus/TARGET (the repository's corpus is
# not modified). A crash, leak, UB report or timeout fails the script and leaves
# the input in build-fuzz/fuzz/findings/TARGET/: add it to fuzz/regressions/TARGET/
# (the normal tests replay it) together with the fix.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(dirname "$here")"
secs="${1:-20}"
shift || true
targets=("${@:-swc nifti params tracts life_files life_model life_state checkpoint nmodl model network json sonata_types}")
read -r -a targets <<< "${targets[*]}"
build="${NS_FUZZ_BUILD:-$src/build-fuzz}"
cc="${CC:-clang}"
command -v "$cc" >/dev/null || { echo "fuzz/run.sh: $cc not found (apt-get install clang)" >&2; exit 2; }
cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Debug -DNS_FUZZ=ON -DNS_CUDA=OFF \
  -DNS_MPI=OFF -DNS_OPENMP=OFF -DNS_TESTS=OFF -DNS_SANITIZE=address,undefined >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null
# One target per core at a time: each libFuzzer process is single-threaded, so
# on CI's 2 cores the 11 targets take half the wall time for the same
# per-target time (the seed and the inputs explored do not change).
run_one() {
  local t=$1 work="$build/fuzz/work/$1" findings="$build/fuzz/findings/$1"
  rm -rf "$work" && mkdir -p "$work" "$findings"
  cp -r "$here/corpus/$t/." "$work/"
  [ -d "$here/regressions/$t" ] && cp -r "$here/regressions/$t/." "$work/"
  "$build/fuzz/fuzz_$t" "$work" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -seed="${NS_FUZZ_SEED:-1}" -max_len=65536 \
    -artifact_prefix="$findings/" -print_final_stats=1 > "$build/fuzz/$t.log" 2>&1
}
report() {
  local t=$1 rc=$2 findings="$build/fuzz/findings/$1"
  if [ "$rc" != 0 ]; then
    echo "fuzz $t: FAILED, input in $findings/ (log: $build/fuzz/$t.log)" >&2
    tail -40 "$build/fuzz/$t.log" >&2
    # the input itself, for a CI whose workspace is gone after the job
    for f in "$findings"/*; do
      [ -f "$f" ] || continue
      echo "fuzz $t: $(basename "$f") ($(stat -c %s "$f") bytes), base64:" >&2
      head -c 65536 "$f" | base64 >&2
    done
    return 1
  fi
  echo "fuzz $t: ${secs}s $(grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz/$t.log" | tr '\n' ' ')"
}
jobs_max="${NS_FUZZ_JOBS:-$(nproc)}"
status=0
pids=() names=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!) names+=("$t")
  if [ "${#pids[@]}" -ge "$jobs_max" ]; then
    rc=0; wait "${pids[0]}" || rc=$?
    report "${names[0]}" "$rc" || status=1
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  rc=0; wait "${pids[$i]}" || rc=$?
  report "${names[$i]}" "$rc" || status=1
done
exit $status
