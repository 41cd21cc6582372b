# The hh gate update of one block: the hand-written loop against the
# generated hh's fused states pass and variants (bench/probe/gates_micro.c),
# with the library's compiler flags, on the device host.
# Call: run(command="bash bench/probe/gates_micro.sh", timeout_s=200)
set -uo pipefail
OUT=${OUT:-gates-micro}
mkdir -p "$OUT"
cmake -S . -B /tmp/gm-cfg -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF > /tmp/gm.log 2>&1 || { tail /tmp/gm.log; exit 1; }
gcc -O3 -ffp-contract=off -fno-trapping-math -fopenmp-simd -std=c11 -Iinclude -I/tmp/gm-cfg/include -Isrc \
  bench/probe/gates_micro.c -o /tmp/gm -lm 2>&1 | grep -E "error" && exit 1
{ gcc --version | head -1; lscpu | grep -E "Model name|Flags" | cut -c1-200; for r in 1 2 3; do /tmp/gm 30 300; done; } 2>&1 | tee "$OUT/micro.txt"
