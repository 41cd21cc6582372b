#!/usr/bin/env bash
# Where the mix's 16 / 1 goes (issue 23), on the device host: the cores'
# clock with 1 and with every thread running (freq.c), each thread's busy
# share of a call (idle.py) and the per-pass cycles by block width (prof.py)
# for the bundled mix x 25, dense_Animal_2_Basal_2 and allen_rbp4 x 1,000 at
# 1 and 16 threads, ROUNDS rounds. Call: run(command="bash bench/probe/diag_scaling.sh", timeout_s=600)
set -uo pipefail
OUT=${OUT:-diag-results}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; gcc --version | head -1; lscpu | grep -E "Model name|^CPU\(s\)|L2|L3|MHz"; git log -1 --oneline; } 2>&1 | tee "$OUT/host.txt"
gcc -O2 -march=native -fopenmp bench/probe/freq.c -o /tmp/freq || exit 1
for th in 1 8 16; do OMP_NUM_THREADS=$th /tmp/freq; done 2>&1 | tee "$OUT/freq.txt"
mk() { # probe.py name
  python3 "$1" "/tmp/$2-src" && cmake -S "/tmp/$2-src" -B "/tmp/$2" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF \
    -DNS_TESTS=OFF > "/tmp/$2.log" 2>&1 && cmake --build "/tmp/$2" -j8 --target neurosolve_cli >> "/tmp/$2.log" 2>&1 ||
    { tail -20 "/tmp/$2.log"; return 1; }
}
mk bench/probe/idle.py idle & mk bench/probe/prof.py prof & wait
[ -x /tmp/idle/neurosolve ] && [ -x /tmp/prof/neurosolve ] || exit 1
echo "builds $(( $(date +%s) - t0 )) s"
D=data/morphologies
run() { # build label threads args...
  local b=$1 label=$2 th=$3; shift 3
  echo "== $b $label th$th"; /tmp/$b/neurosolve bench sim "$@" --threads "$th" 2>&1 | grep -E '^cpu|bundled x|IDLE|PROF'
}
mix() { run "$1" mix25 "$2" --mixed --per 25 --jitter 0 --gpu-methods auto --cpu-max 4000000 --steps 40; }
/tmp/idle/neurosolve bench sim --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 50 --threads 16 > /dev/null 2>&1
for r in $(seq 1 "$ROUNDS"); do
  echo "# round $r"
  for b in idle prof; do
    mix $b 1; mix $b 16
    run $b dense1 1 --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 1 --steps 60
    run $b dense16 16 --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 16 --steps 40
    run $b dense32 16 --backend cpu --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 40
    run $b allen1000 1 --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 100
    run $b allen1000 16 --backend cpu --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 100
  done
done 2>&1 | tee "$OUT/diag.txt"
echo "total $(( $(date +%s) - t0 )) s"
