#!/usr/bin/env bash
# What slows blocks larger than a core's L2 when every core runs (issue 23):
# dense_Animal_2_Basal_2 x 32 (16 blocks of 2 x 38,580 compartments) and the
# mix x 25 at 1 and 16 threads under: the defaults; threads bound to cores
# (OMP_PROC_BIND=close, OMP_PLACES=cores); transparent huge pages "always"
# (the host's setting restored after). The working tree's build only.
# Call: run(command="bash bench/device_contention.sh", timeout_s=600)
set -uo pipefail
OUT=${OUT:-contention-results}
mkdir -p "$OUT"
t0=$(date +%s)
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF > /tmp/b.log 2>&1 &&
  cmake --build /tmp/b -j"$(nproc)" --target neurosolve_cli >> /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
N=/tmp/b/neurosolve D=data/morphologies
THP=/sys/kernel/mm/transparent_hugepage/enabled
thp0=$(sed -n 's/.*\[\(.*\)\].*/\1/p' $THP 2>/dev/null)
{ echo "thp: $(cat $THP 2>/dev/null) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null)"
  grep -E "MHz" /proc/cpuinfo | sort | uniq -c | head -3; } | tee "$OUT/host.txt"
row() { # label threads args...
  local label=$1 th=$2; shift 2
  echo "$label th$th: $("$N" bench sim "$@" --threads "$th" 2>/dev/null | grep -E '^cpu|bundled x' | tail -1)"
}
dense() { row "$1 dense32" "$2" --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 40; }
mix() { row "$1 mix25" "$2" --mixed --per 25 --jitter 0 --gpu-methods auto --cpu-max 4000000 --steps 40; }
$N bench sim --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 50 --threads 16 > /dev/null
for r in 1 2 3; do
  echo "$thp0" > $THP 2>/dev/null
  dense "r$r default" 16; dense "r$r default" 1; mix "r$r default" 16
  OMP_PROC_BIND=close OMP_PLACES=cores dense "r$r bound" 16
  OMP_PROC_BIND=close OMP_PLACES=cores mix "r$r bound" 16
  echo always > $THP 2>/dev/null && {
    dense "r$r thp" 16; dense "r$r thp" 1; mix "r$r thp" 16; mix "r$r thp" 1
    echo "$thp0" > $THP; }
  grep -E "AnonHugePages" /proc/meminfo
done 2>&1 | tee "$OUT/runs.txt"
echo "total $(( $(date +%s) - t0 )) s"
