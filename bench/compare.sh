#!/usr/bin/env bash
# Compare two commits on benchmark grids in one run: both built side by side
# with the same flags, then every grid of bench/grid.sh run with each binary,
# alternating which goes first, ROUNDS times. Only ratios inside one run count
# (bench/README.md, ../shared/BENCHMARKING.md), so this is how a change is measured.
#
# usage: bash bench/compare.sh BASE [NEW] -- GRID...
#   BASE, NEW   commits (anything `git rev-parse` takes) or folders holding a source tree
#               (`git archive C | tar -x -C DIR`: for a host without the repository's history);
#               NEW defaults to the working tree as it is (uncommitted changes included; the
#               checkout itself where it is not a git work tree)
#   GRID...     grids of bench/grid.sh (e.g. sim, hines, tridiag, life)
# Environment: OUT (default ./bench-compare), ROUNDS (default 3), ARCH, THREADS,
#   PEERS (default 0 here: NEURON and Arbor are not what is compared; PEERS=1 runs
#   them beside each binary, as grid.sh does).
# Output: $OUT/ROUND-base/ and $OUT/ROUND-new/ (grid.sh's files of each run) and
# $OUT/builds.txt (the two commits and their build logs' tails).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 2 ] || usage
BASE=$1; shift
NEW=""
if [ "$1" != "--" ]; then NEW=$1; shift; fi
[ "${1:-}" = "--" ] || usage
shift
[ $# -gt 0 ] || usage
OUT=${OUT:-./bench-compare}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROUNDS=${ROUNDS:-3}
export PEERS=${PEERS:-0}
if [ -z "${ARCH:-}" ]; then
  ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
  ARCH=${ARCH:-90}
fi
export ARCH
WORK=${WORK:-$ROOT/build-compare}
mkdir -p "$WORK"

build() { # build NAME COMMIT|DIR|"" : sources in $WORK/NAME/src (git archive; "" = the working tree), or DIR
  local name=$1 commit=$2 src=$WORK/$1/src what
  rm -rf "$src"; mkdir -p "$src"
  if [ -n "$commit" ] && [ -d "$commit" ]; then
    src=$(cd "$commit" && pwd); what="the tree in $src"
  elif [ -z "$commit" ] && ! git -C "$ROOT" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    src=$ROOT; what="the checkout $ROOT (no git history)"
  elif [ -n "$commit" ]; then
    what="$commit at $(git -C "$ROOT" rev-parse "$commit")"
    git -C "$ROOT" archive "$commit" | tar -x -C "$src" || return 1
  else
    what="the working tree at $(git -C "$ROOT" rev-parse HEAD)"
    # the working tree: tracked files as they are now, plus untracked files git does not ignore
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
       while IFS= read -r -d '' f; do [ ! -e "$f" ] || cp --parents -P "$f" "$src" || exit 1; done) || return 1
  fi
  local cuda=ON; command -v nvcc > /dev/null || cuda=OFF
  cmake -S "$src" -B "$WORK/$name/build" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=$cuda -DNS_TESTS=OFF -DNS_MPI=OFF \
    -DNS_PYTHON=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCH" > "$WORK/$name/build.log" 2>&1 &&
    cmake --build "$WORK/$name/build" -j"$(nproc)" >> "$WORK/$name/build.log" 2>&1
  local rc=$?
  { echo "== $name: $what rc=$rc"
    tail -n 5 "$WORK/$name/build.log"; } >> "$OUT/builds.txt"
  return $rc
}
: > "$OUT/builds.txt"
build base "$BASE" & pb=$!
build new "$NEW" & pn=$!
wait $pb || { echo "base build failed: $OUT/builds.txt"; exit 1; }
wait $pn || { echo "new build failed: $OUT/builds.txt"; exit 1; }

for r in $(seq 1 "$ROUNDS"); do
  order="base new"; [ $((r % 2)) = 0 ] && order="new base"
  for who in $order; do
    echo "== round $r: $who"
    OUT="$OUT/$r-$who" NS="$WORK/$who/build/neurosolve" bash "$ROOT/bench/grid.sh" "$@" > /dev/null
    cat "$OUT/$r-$who/summary.txt"
  done
done
