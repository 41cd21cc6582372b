#!/usr/bin/env bash
# Per-pass cycles by block width (bench/probe/prof.py) of BASE (a commit the
# device's clone has; default HEAD, the session's starting ref) against the
# working tree, and the working tree built with the C flags of EXTRA
# ("name:flags ...", commas for spaces), alternated in ROUNDS rounds (default
# 3): the bundled mix x 25 at 1 and 16 threads, dense_Animal_2_Basal_2 x 32 at
# 16 (2-lane blocks) and x 8 at 1 (one 8-lane block), allen_rbp4 x 1,000 at
# 1 and 16. Call: run(command="bash bench/probe/prof_ab.sh", timeout_s=600)
set -uo pipefail
OUT=${OUT:-prof-ab-results}
BASE=${BASE:-HEAD}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; gcc --version | head -1; lscpu | grep -E "Model name|^CPU\(s\)|L2|L3"; git log -1 --oneline; } > "$OUT/host.txt" 2>&1
rm -rf /tmp/base && git worktree add -f /tmp/base "$BASE" > /dev/null 2>&1 || { echo "no $BASE"; exit 1; }
mk() { # source-dir name [C flags]
  (cd "$1" && python3 bench/probe/prof.py "/tmp/$2-src") && cmake -S "/tmp/$2-src" -B "/tmp/$2" -DCMAKE_BUILD_TYPE=Release \
    -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF -DCMAKE_C_FLAGS="${3:-}" > "/tmp/$2.log" 2>&1 &&
    cmake --build "/tmp/$2" -j8 --target neurosolve_cli >> "/tmp/$2.log" 2>&1 || { tail -20 "/tmp/$2.log"; return 1; }
}
VARIANTS="base new"
mk /tmp/base base & mk . new &
for x in ${EXTRA:-}; do mk . "${x%%:*}" "$(echo "${x#*:}" | tr , ' ')" & VARIANTS="$VARIANTS ${x%%:*}"; done
wait
for v in $VARIANTS; do [ -x "/tmp/$v/neurosolve" ] || { echo "no build $v"; exit 1; }; done
echo "builds $(( $(date +%s) - t0 )) s"
D=data/morphologies
run() { # variant label threads args...
  local v=$1 label=$2 th=$3; shift 3
  echo "== r$r $v $label th$th"; /tmp/$v/neurosolve bench sim "$@" --threads "$th" 2>&1 | grep -E '^cpu|bundled x|PROF'
}
for r in $(seq 1 "$ROUNDS"); do
  for v in $VARIANTS; do
    run $v mix25 1 --mixed --per 25 --jitter 0 --gpu-methods auto --cpu-max 4000000 --steps 30
    run $v mix25 16 --mixed --per 25 --jitter 0 --gpu-methods auto --cpu-max 4000000 --steps 40
    run $v dense32 16 --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 40
    run $v dense8 1 --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 8 --steps 20
    run $v allen1000 1 --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 100
    run $v allen1000 16 --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 100
  done
done 2>&1 | tee "$OUT/prof.txt"
echo "total $(( $(date +%s) - t0 )) s"
