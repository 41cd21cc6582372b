#!/usr/bin/env bash
# One device call: the tree loop's small groups in whole waves (src/cable/cuda/sim_cuda.c,
# tree_group_cap; bench/README.md, "The tree loop's groups"), before and after in the same call.
#   1. build this tree (CUDA, sm_90, MPI off) and BASE (default HEAD~1, from `git archive`) the same way;
#   2. tests of this tree: test_cable_cuda, test_sim_model_cuda, test_sim_network_cuda, test_sim_state;
#   3. alternated, both binaries: the busyring population (bench sim --network, bare = fused hh,
#      network = per-step path) at 10,000 / 4,000 / 1,000 cells; one shape with the hand-written hh
#      (bench sim --gpu-methods tree) and with the generated hh (--model: fused); the bundled mixed
#      population x5 and x20 (bench sim --mixed).
# Usage: BASE=<commit> OUT=... bash bench/device_treewaves.sh  (about 5 minutes). Files: treewaves.txt,
# tests.txt.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
BASE=${BASE:-HEAD~1}
T=$FINAL/treewaves.txt
export PATH=/usr/local/cuda/bin:$PATH
cfg() { cmake -S "$1" -B "$2" -DNS_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DNS_MPI=OFF -DNS_PYTHON=OFF \
          -DNS_TESTS="$3" -DCMAKE_BUILD_TYPE=Release > "$2.cfg.log" 2>&1; }
rm -rf /tmp/tw_base && mkdir -p /tmp/tw_base && git -C "$ROOT" archive "$BASE" | tar -x -C /tmp/tw_base
{ echo "# device_treewaves.sh $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)";
  echo "# new: $(git -C "$ROOT" rev-parse --short HEAD) + working tree; base: $(git -C "$ROOT" rev-parse --short "$BASE")"; } > "$T"
cfg "$ROOT" /tmp/tw_new ON && cfg /tmp/tw_base /tmp/tw_old OFF || { echo "configure failed" >> "$T"; exit 1; }
(cmake --build /tmp/tw_old -j 8 --target neurosolve_cli > /tmp/tw_old.log 2>&1) &
cmake --build /tmp/tw_new -j 8 --target neurosolve_cli test_cable_cuda test_sim_model_cuda test_sim_network_cuda \
    test_sim_state > /tmp/tw_new.log 2>&1 || { tail -20 /tmp/tw_new.log >> "$T"; exit 1; }
wait || true
[ -x /tmp/tw_old/neurosolve ] || { tail -20 /tmp/tw_old.log >> "$T"; exit 1; }
for t in test_cable_cuda test_sim_model_cuda test_sim_network_cuda test_sim_state; do
  timeout 240 /tmp/tw_new/tests/$t > /tmp/tw_$t.log 2>&1; echo "$t rc=$?" >> "$FINAL/tests.txt"
  tail -n 4 /tmp/tw_$t.log >> "$FINAL/tests.txt"
done
printf 'all.insert = hh\n' > /tmp/tw_hh.model
M=$ROOT/data/morphologies
for round in 1 2; do
  for b in old new; do
    NS=/tmp/tw_$b/neurosolve
    echo "## round $round, $b" >> "$T"
    for n in 10000 4000 1000; do
      timeout 60 $NS bench sim --network --backend cuda --cells $n --tstop 20 --threads 16 --repeats 3 2>&1 \
        | grep -E "^ +$n " >> "$T"
    done
    for m in dg_granule_1220882a ca1_h10; do
      timeout 90 $NS bench sim --backend cuda --gpu-methods tree --cells 100,2000,10000 --steps 200 --morph $M/$m.swc 2>&1 \
        | grep -E "tree" | sed "s/^/$m hand /" >> "$T"
      timeout 90 $NS bench sim --backend cuda --gpu-methods tree --cells 2000,10000 --steps 200 --morph $M/$m.swc \
        --model /tmp/tw_hh.model 2>&1 | grep -E "tree" | sed "s/^/$m gen /" >> "$T"
    done
    timeout 120 $NS bench sim --mixed --per 5,20 --jitter 0 --gpu-methods auto --cpu-max 1 2>&1 \
      | grep -iE "bundled|ref" | sed "s/^/mixed /" >> "$T"
  done
done
cat "$FINAL/tests.txt" "$T"
