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
# Output: $OUT/ROUND-base/ and $OUT/ROUND-new/ (grid.sh's files of each run),
# $OUT/builds.txt (the two sources and their build logs' tails) and $OUT/table.md: each
# row of `bench sim` (one shape, --mixed, --network) and `bench hines --mixed` with
# the mean of the rounds of each build and new / base.
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

# The table: every timed row of the rounds, the two builds side by side
python3 - "$OUT" > "$OUT/table.md" <<'PY'
import collections, glob, os, re, sys
# rows of `bench sim` (one shape, --mixed, --network) and `bench hines --mixed` in grid.sh's step files
# of each round ($OUT/R-base, $OUT/R-new); mean of the rounds per row, new / base
out = sys.argv[1]
rows = collections.OrderedDict()
def add(key, who, x):
    rows.setdefault(key, {'base': [], 'new': []})[who].append(x)
for d in sorted(glob.glob(os.path.join(out, '*-base')) + glob.glob(os.path.join(out, '*-new'))):
    who = d.rsplit('-', 1)[1]
    for f in sorted(glob.glob(os.path.join(d, '*.txt'))):
        step = os.path.basename(f)[:-4]
        if step == 'summary':
            continue
        seen = collections.Counter(); cells = None
        for line in open(f, errors='replace'):
            t = line.split()
            m = re.match(r'^(cpu|cuda)\s+(\S+)\s+\d+\s+(\d+)\s+\d+\s+(\S+)', line)
            if m:
                add((step, m.group(2), m.group(3) + ' cells'), who, float(m.group(4))); continue
            m = re.match(r'^(ref x\d+|bundled x\d+)\s+\d+\s+(\d+)\s+\d+\s+(cpu|cuda)\s+(\S+)\s+\S+\s+(\S+)', line)
            if m:
                k = (step, m.group(3) + ' ' + m.group(4), m.group(1)); seen[k] += 1
                add(k + ('#%d' % seen[k],), who, float(m.group(5))); continue
            m = re.match(r'^\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\S+)\s+\S+\s+(\S+)', line)
            if m:
                cells = m.group(1)
                add((step, 'network (s)', cells + ' cells'), who, float(m.group(2)))
                add((step, 'bare (s)', cells + ' cells'), who, float(m.group(3))); continue
            m = re.search(r'CPU loop \(threads (\d+)\) on the network: (\S+) s', line)
            if m and cells:
                add((step, 'CPU %s threads, network (s)' % m.group(1), cells + ' cells'), who, float(m.group(2))); continue
            m = re.match(r'^\s+([a-z])\s+(.*?)\s+(\d+) cells: best (\S+)\s+(\S+) ms', line)
            if m:
                add((step, 'workload ' + m.group(1) + ' ' + m.group(4), m.group(3) + ' cells'), who, float(m.group(5)))
print('| step | row | size | base (mean) | new (mean) | new / base | min new / min base | rounds |')
print('|---|---|---|---:|---:|---:|---:|---:|')
for k, v in rows.items():
    b, n = v['base'], v['new']
    if not b or not n:
        continue
    mb, mn = sum(b) / len(b), sum(n) / len(n)
    print('| %s | %s | %s | %.4g | %.4g | %.3f | %.3f | %d/%d |' % (k[0], k[1], ' '.join(k[2:]), mb, mn, mn / mb,
                                                          min(n) / min(b), len(b), len(n)))
PY
cat "$OUT/table.md"
