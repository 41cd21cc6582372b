#!/usr/bin/env bash
# MPI scaling of neurosolve (docs/mpi.md): simulation weak scaling and LiFE
# strong scaling over 1, 2, 4 processes, one GPU each (ns_mpi_bind_device).
#   bench/mpi_scaling.sh [BUILD_DIR] [OUT_DIR]
# Environment: PROCS ("1 2 4"), CELLS_PER_GPU (100000), SIM_MORPH (the paper's
# six sizes are generated trees; simulate needs an SWC: default ca1_h10),
# TSTOP (ms, 50), LIFE_FIBERS (500000), LIFE_ITERS (50), BACKEND (cuda),
# MPIRUN ("mpirun --allow-run-as-root --oversubscribe" when root).
# Writes OUT_DIR/mpi_sim.csv, OUT_DIR/mpi_life.csv and prints both tables
# with the efficiency / speedup against the 1-process run of the same script.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-bench/results}
NS="$BUILD/neurosolve"
PROCS=${PROCS:-"1 2 4"}
CELLS_PER_GPU=${CELLS_PER_GPU:-100000}
SIM_MORPH=${SIM_MORPH:-data/morphologies/ca1_h10.swc}
TSTOP=${TSTOP:-50}
LIFE_FIBERS=${LIFE_FIBERS:-500000}
LIFE_ITERS=${LIFE_ITERS:-50}
BACKEND=${BACKEND:-cuda}
# LiFE on the GPU under MPI needs SBBNNLS to sum device vectors through the host
# (docs/mpi.md, "LiFE on GPUs"); LIFE_BACKEND=cpu measures the CPU path.
LIFE_BACKEND=${LIFE_BACKEND:-$BACKEND}
if [ -z "${MPIRUN:-}" ]; then
  MPIRUN="mpirun"
  if [ "$(id -u)" = 0 ]; then MPIRUN="mpirun --allow-run-as-root"; fi
  MPIRUN="$MPIRUN --oversubscribe --bind-to none"
fi
mkdir -p "$OUT"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(hostname); $($NS --version)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name --format=csv,noheader || true

field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

echo "== simulation, weak scaling: $CELLS_PER_GPU cells of $(basename "$SIM_MORPH") per process, $TSTOP ms"
echo "processes,cells,compartments,steps,wall_s,compartment_steps_per_s,spikes" > "$OUT/mpi_sim.csv"
for p in $PROCS; do
  json=$($MPIRUN -np "$p" "$NS" simulate "$SIM_MORPH" --cells $((CELLS_PER_GPU * p)) --backend "$BACKEND" \
         --tstop "$TSTOP" --record-cells 0 --iclamp soma:5:1000:auto --no-progress --json)
  echo "$p,$(echo "$json" | field cells),$(echo "$json" | field compartments),$(echo "$json" | field steps),$(echo "$json" | field wall_s),$(echo "$json" | field compartment_steps_per_s),$(echo "$json" | field spikes)" >> "$OUT/mpi_sim.csv"
done

echo "== LiFE, strong scaling: $LIFE_FIBERS fibers, $LIFE_ITERS SBBNNLS updates"
echo "processes,fibers,voxels,coefficients,imbalance,updates,seconds,objective,max_rel_diff_weights" > "$OUT/mpi_life.csv"
for p in $PROCS; do
  json=$($MPIRUN -np "$p" "$NS" bench scale --fibers "$LIFE_FIBERS" --iters "$LIFE_ITERS" --backend "$LIFE_BACKEND" \
         --out "$OUT/mpi_life_w$p.npy" --json)
  diff=$(python3 -c "import numpy as n; a=n.load('$OUT/mpi_life_w$(echo $PROCS | cut -d' ' -f1).npy'); b=n.load('$OUT/mpi_life_w$p.npy'); print('%.3e' % (abs(a-b).max()/abs(a).max()))")
  echo "$p,$(echo "$json" | field fibers),$(echo "$json" | field voxels),$(echo "$json" | field coefficients),$(echo "$json" | field coefficient_imbalance),$(echo "$json" | field updates),$(echo "$json" | field seconds),$(echo "$json" | field objective),$diff" >> "$OUT/mpi_life.csv"
done

python3 - "$OUT/mpi_sim.csv" "$OUT/mpi_life.csv" <<'PY'
import csv, sys
sim = list(csv.DictReader(open(sys.argv[1])))
life = list(csv.DictReader(open(sys.argv[2])))
print("\n| processes (GPUs) | cells | wall s | weak-scaling efficiency |")
print("|---|---|---|---|")
t1 = float(sim[0]["wall_s"])
for r in sim:
    print(f"| {r['processes']} | {int(r['cells']):,} | {float(r['wall_s']):.3f} | {t1 / float(r['wall_s']):.2f} |")
print("\n| processes (GPUs) | s per SBBNNLS run | speedup | weights vs 1 process |")
print("|---|---|---|---|")
t1 = float(life[0]["seconds"])
for r in life:
    print(f"| {r['processes']} | {float(r['seconds']):.3f} | {t1 / float(r['seconds']):.2f}x | {r['max_rel_diff_weights']} |")
PY
