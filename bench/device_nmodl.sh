#!/usr/bin/env bash
# One device call for the NMODL mechanisms (issue 19, translator part): a CUDA
# build, the generated CUDA against the generated C on the GPU
# (tests/test_nmodl_cuda.c, under compute-sanitizer memcheck too), and the CPU
# tests of the translator on that host. Logs packed into $OUT/logs.tgz, the
# summary copied to $OUT/nmodl_summary.txt.
# Usage: bash bench/device_nmodl.sh   (no wheels needed; about 5 minutes)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FINAL=${OUT:-./out}
mkdir -p "$FINAL"
LOG=/tmp/ns_logs_nmodl
mkdir -p "$LOG"
BUILD=$ROOT/build-gpu
run() { # run NAME TIMEOUT CMD...
    local name=$1 t=$2; shift 2
    local t0=$(date +%s)
    timeout "$t" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    printf '%-22s rc=%-3d %4ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$LOG/summary.txt"
    tail -n 30 "$LOG/$name.log"
    return $rc
}
pack() { cp "$LOG/summary.txt" "$FINAL/nmodl_summary.txt" 2>/dev/null; tar -C /tmp -czf "$FINAL/logs.tgz" ns_logs_nmodl; }
trap pack EXIT
{ date -u; nvidia-smi; nvcc --version; nproc; } > "$LOG/machine.txt" 2>&1
run configure 120 cmake -S "$ROOT" -B "$BUILD" -DNS_CUDA=ON -DNS_MPI=OFF -DNS_TESTS=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90
run build 300 cmake --build "$BUILD" -j 16 --target test_nmodl_cuda test_nmodl test_nmodl_neuron neurosolve_cli
run test_nmodl_cuda 240 "$BUILD/tests/test_nmodl_cuda"
run test_nmodl_neuron 120 "$BUILD/tests/test_nmodl_neuron"
run test_nmodl 60 "$BUILD/tests/test_nmodl"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
run memcheck 240 "$CS" --tool memcheck --error-exitcode 1 "$BUILD/tests/test_nmodl_cuda"
grep -h "point\|density\|checks" "$LOG/test_nmodl_cuda.log" >> "$LOG/summary.txt"
