#!/usr/bin/env bash
# MPI scaling of neurosolve (docs/mpi.md): simulation weak scaling and LiFE
# strong scaling over 1, 2, 4 processes, one GPU each (ns_mpi_bind_device).
#   bench/mpi_scaling.sh [BUILD_DIR] [OUT_DIR]
# Environment: PROCS ("1 2 4"), CELLS_PER_GPU (100000), SIM_MORPH (the paper's
# six sizes are generated trees; simulate needs an SWC: default ca1_h10),
# TSTOP (ms, 50), LIFE_FIBERS (500000), LIFE_ITERS (50), BACKEND (cuda),
# LIFE_BACKEND ($BACKEND), MPIRUN ("mpirun --oversubscribe --bind-to none", with
# --allow-run-as-root when root; e.g. the wheel's /tmp/ompi/bin/mpirun ...).
# The weights of every K are written to OUT_DIR/mpi_life_wK.npy.
# Writes OUT_DIR/mpi_sim.csv, OUT_DIR/mpi_life.csv and prints both tables
# with the efficiency / speedup against the 1-process run of the same script.
set -euo pipefail
BUILD=${1:-build}
OUT=${2:-bench-out/mpi}
NS="$BUILD/neurosolve"
PROCS=${PROCS:-"1 2 4"}
CELLS_PER_GPU=${CELLS_PER_GPU:-100000}
SIM_MORPH=${SIM_MORPH:-data/morphologies/ca1_h10.swc}
TSTOP=${TSTOP:-50}
LIFE_FIBERS=${LIFE_FIBERS:-500000}
LIFE_ITERS=${LIFE_ITERS:-50}
BACKEND=${BACKEND:-cuda}
# LiFE on GPUs sums the device fiber vectors through the host (docs/mpi.md,
# "LiFE on GPUs"); LIFE_BACKEND=cpu measures the CPU path instead.
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
# max |a - b| / max |a| of two float64 NPY vectors (no numpy needed)
npy_rel_diff() {
  python3 - "$1" "$2" <<'PY'
import array, ast, sys
def load(path):
    raw = open(path, 'rb').read()
    assert raw[:6] == b'\x93NUMPY', path
    hlen = int.from_bytes(raw[8:10], 'little') if raw[6] == 1 else int.from_bytes(raw[8:12], 'little')
    start = (10 if raw[6] == 1 else 12) + hlen
    head = ast.literal_eval(raw[start - hlen:start].decode('latin1'))
    assert head['descr'] == '<f8' and not head['fortran_order'], path
    v = array.array('d')
    v.frombytes(raw[start:])
    return v
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b)
scale = max(abs(x) for x in a) or 1.0
print('%.3e' % (max(abs(x - y) for x, y in zip(a, b)) / scale))
PY
}

failed=0
echo "== simulation, weak scaling: $CELLS_PER_GPU cells of $(basename "$SIM_MORPH") per process, $TSTOP ms"
echo "processes,cells,compartments,steps,wall_s,compartment_steps_per_s,spikes" > "$OUT/mpi_sim.csv"
for p in $PROCS; do
  # a failing run is reported and skipped: the other runs and the LiFE part still go
  if ! json=$($MPIRUN -np "$p" "$NS" simulate "$SIM_MORPH" --cells $((CELLS_PER_GPU * p)) --backend "$BACKEND" \
              --tstop "$TSTOP" --record-cells 0 --iclamp soma:5:1000:auto --no-progress --json); then
    echo "simulate with $p processes FAILED"; failed=1; continue
  fi
  echo "$json"
  echo "$p,$(echo "$json" | field cells),$(echo "$json" | field compartments),$(echo "$json" | field steps),$(echo "$json" | field wall_s),$(echo "$json" | field compartment_steps_per_s),$(echo "$json" | field spikes)" >> "$OUT/mpi_sim.csv"
done

echo "== LiFE, strong scaling: $LIFE_FIBERS fibers, $LIFE_ITERS SBBNNLS updates, backend $LIFE_BACKEND"
echo "processes,fibers,voxels,coefficients,imbalance,updates,seconds,objective,max_rel_diff_weights" > "$OUT/mpi_life.csv"
first=""
for p in $PROCS; do
  if ! json=$($MPIRUN -np "$p" "$NS" bench scale --fibers "$LIFE_FIBERS" --iters "$LIFE_ITERS" --backend "$LIFE_BACKEND" \
              --out "$OUT/mpi_life_w$p.npy" --json); then
    echo "bench scale with $p processes FAILED"; failed=1; continue
  fi
  echo "$json"
  [ -n "$first" ] || first=$p
  diff=$(npy_rel_diff "$OUT/mpi_life_w$first.npy" "$OUT/mpi_life_w$p.npy")
  echo "$p,$(echo "$json" | field fibers),$(echo "$json" | field voxels),$(echo "$json" | field coefficients),$(echo "$json" | field coefficient_imbalance),$(echo "$json" | field updates),$(echo "$json" | field seconds),$(echo "$json" | field objective),$diff" >> "$OUT/mpi_life.csv"
done

# Efficiency and speedup against the first row (the smallest process count run).
python3 - "$OUT/mpi_sim.csv" "$OUT/mpi_life.csv" <<'PY'
import csv, sys
sim = list(csv.DictReader(open(sys.argv[1])))
life = list(csv.DictReader(open(sys.argv[2])))
print("\n| processes (GPUs) | cells | wall s | weak-scaling efficiency |")
print("|---|---|---|---|")
for r in sim:
    t1 = float(sim[0]["wall_s"])
    print(f"| {r['processes']} | {int(r['cells']):,} | {float(r['wall_s']):.3f} | {t1 / float(r['wall_s']):.2f} |")
print("\n| processes (GPUs) | s per SBBNNLS run | speedup | weights vs first row |")
print("|---|---|---|---|")
for r in life:
    t1 = float(life[0]["seconds"])
    print(f"| {r['processes']} | {float(r['seconds']):.3f} | {t1 / float(r['seconds']):.2f}x | {r['max_rel_diff_weights']} |")
PY
exit $failed
