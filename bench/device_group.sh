#!/usr/bin/env bash
# One device call for issue 21 (wave group): the group-sparse fit (life fit --group, docs/life.md,
# "Group sparsity") with the products on the GPU.
#   1. build (CUDA, Release, sm_90) the command, test_life_cuda and test_mpi_life_cuda; run them
#      (test_life_cuda's group_fits: the GPU group fit against the CPU's, converged, 1e-7);
#   2. the 30,000-streamline phantom (life synth --phantom, seed 2), life build --parcels;
#   3. life fit --group 1 on the CPU (all cores) and on the GPU, default stops, same run: time,
#      updates, weights against each other and the AUC of both against labels.npy.
# No wheels needed (numpy from the image). Usage: bash bench/device_group.sh [STEP...]
# (default: build gputest phantom fits). Files under $OUT (<= 8): summary.txt, group_gpu.txt,
# machine.txt, logs.tgz. About 4-6 minutes.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_group_logs
mkdir -p "$LOG"
BUILD=${BUILD:-$ROOT/build-group}
NS=$BUILD/neurosolve
P=/tmp/ns_group_phantom
M=/tmp/ns_group_model
STEPS=${*:-build gputest phantom fits}
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-22s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$FINAL/summary.txt"
    tail -n 15 "$LOG/$name.log"
    return $rc
}
pack() { tar -C /tmp -czf "$FINAL/logs.tgz" ns_group_logs; }
trap pack EXIT
{ date -u; nvidia-smi; nproc; uptime; } > "$FINAL/machine.txt" 2>&1
for step in $STEPS; do
  case $step in
    build)
      run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_TESTS=ON -DNS_PYTHON=OFF \
          -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
      run build 300 cmake --build "$BUILD" -j 16 --target neurosolve_cli test_life_cuda test_mpi_life_cuda ;;
    gputest)
      run test_life_cuda 180 "$BUILD/tests/test_life_cuda"
      grep "group fit" "$LOG/test_life_cuda.log" >> "$FINAL/summary.txt"
      [ -x "$BUILD/tests/test_mpi_life_cuda" ] && run test_mpi_life_cuda 120 "$BUILD/tests/test_mpi_life_cuda" ;;
    phantom)
      rm -rf "$P" "$M"
      run phantom30k 120 "$NS" life synth "$P" --phantom --streamlines 30000 --seed 2
      run build-model 120 "$NS" life build --dwi "$P/dwi.nii" --bvals "$P/dwi.bval" --bvecs "$P/dwi.bvec" \
          --tracks "$P/tracks.tck" --out "$M" --parcels "$P/parcels.nii" --quiet ;;
    fits)
      # the first fit of each backend times the product variants; the second (timed here) reuses them
      for b in cpu cuda; do
        run "fit-$b-warm" 180 "$NS" life fit "$M" --backend $b --group 1 --out /tmp/ns_group_w$b.npy --quiet
        run "fit-$b" 180 "$NS" life fit "$M" --backend $b --group 1 --out /tmp/ns_group_w$b.npy --quiet --json
      done
      python3 - > "$FINAL/group_gpu.txt" 2>&1 <<'EOF'
import json, numpy as np
def auc(s, y):
    o = np.argsort(s, kind="mergesort"); r = np.empty(len(s)); ss = s[o]
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and ss[j + 1] == ss[i]: j += 1
        r[o[i:j + 1]] = (i + j) / 2 + 1; i = j + 1
    n1 = (y == 1).sum(); n0 = len(y) - n1
    return (r[y == 1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)
sl = np.load("/tmp/ns_group_model/streamlines.npy")
y = np.load("/tmp/ns_group_phantom/labels.npy")[sl]
c, g = np.load("/tmp/ns_group_wcpu.npy"), np.load("/tmp/ns_group_wcuda.npy")
for b in ("cpu", "cuda"):
    j = json.loads(open(f"/tmp/ns_group_logs/fit-{b}.log").read())
    print(f"{b}: {j['seconds']:.3f} s, {j['updates']} updates, setup {j['setup_seconds']:.3f} s, "
          f"{j['groups_nonzero']} of {j['groups']} groups, threads {j['threads']}")
print(f"max |w_gpu - w_cpu| / max w: {np.abs(c - g).max() / np.abs(c).max():.3e}")
print(f"AUC cpu {auc(c, y):.4f}, gpu {auc(g, y):.4f}")
EOF
      cat "$FINAL/group_gpu.txt" | tee -a "$FINAL/summary.txt" ;;
  esac
done
