#!/usr/bin/env bash
# Issue 5's fine-grained variants and the profiler runs for issues 4, 5 and 6,
# on the GPU machine (bench/README.md has the results and the commands).
#   bash bench/device_mixed_fine.sh bench     build; mixed CUDA tests (3 variants); workload d
#                                             and a for each variant of the fine-grained kernel
#   (VARIANTS="1 ab 0" and THREADS="128 64" pick the workload-d runs)
#   bash bench/device_mixed_fine.sh profile   Nsight Compute on: fine-grained (both kernels) and
#                                             onchip at ca1 x 3,000; the simulation's onchip loop;
#                                             tridiag warp and gtsvInterleavedBatch; sanitizers
# Results: $OUT/*.txt and $OUT/logs.tgz (default ./out).
set -uo pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
L=/tmp/ns_mixed_fine
mkdir -p "$L"
B=build-gpu-fine
NS=./$B/neurosolve
M=data/morphologies
CA1="$M/ca1_c91662.swc --nseg length:13"
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=ON -DNS_MPI=OFF > "$L/cmake.log" 2>&1
cmake --build $B -j"$(nproc)" --target neurosolve_cli test_hines_mixed_cuda test_cable_cuda \
  > "$L/build.log" 2>&1 || { tail -40 "$L/build.log"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$L/gpu.txt" 2>&1 || true

case ${1:-bench} in
bench)
  cuobjdump --dump-resource-usage $B/src/libneurosolve.a 2>/dev/null | grep -A1 -E "fine_(shared_)?kernel" > "$L/resources.txt"
  for v in 1 ab 0; do
    mode=$([ $v = 0 ] && echo never || ([ $v = ab ] && echo ab || echo auto))
    ./$B/tests/test_hines_mixed_cuda $mode > "$L/test_$v.log" 2>&1
    echo "test_hines_mixed_cuda $mode: exit $?"; grep -E "FAIL" "$L/test_$v.log" | head
  done
  for v in ${VARIANTS:-1 ab 0}; do
    for t in ${THREADS:-128 64}; do
      NEUROSOLVE_FINE_SHARED=$v timeout 200 $NS bench hines --mixed --workloads d --methods fine-grained,interleaved \
        --fine-threads $t --cpu-repeats 1 --csv "$L/d_${v}_$t.csv" > "$L/d_${v}_$t.txt" 2>&1
      echo "== d variant $v threads $t"; grep -E "ca1" "$L/d_${v}_$t.txt"
    done
  done
  for v in 1 ab; do
    m=fine-grained; [ $v = 1 ] && m=fine-grained,branch-level,interleaved
    NEUROSOLVE_FINE_SHARED=$v timeout 240 $NS bench hines --mixed --workloads a --methods $m --cpu-repeats 1 \
      --csv "$L/a_$v.csv" > "$L/a_$v.txt" 2>&1
    echo "== a variant $v"; grep -E "bundled|ref" "$L/a_$v.txt"
  done
  cp "$L"/d_1_128.txt "$L"/a_1.txt "$OUT"/ 2>/dev/null
  ;;
profile)
  S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    timeout 150 $S --tool $tool --error-exitcode 9 $NS solve $M/ca1_h10.swc $M/dg_granule_1220882a.swc random:high \
      --cells 60 --method fine-grained --backend cuda --check > "$L/san_$tool.log" 2>&1
    echo "compute-sanitizer $tool fine-grained (shared): exit $?"; tail -3 "$L/san_$tool.log"
  done
  N=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  prof() { # prof NAME KERNEL_REGEX CMD...
    local name=$1 k=$2; shift 2
    timeout 150 $N --set full --import-source no -k "regex:$k" --launch-count 1 -o "$L/$name" -f "$@" > "$L/$name.ncu.log" 2>&1
    echo "ncu $name: exit $?"
    $N --import "$L/$name.ncu-rep" --page details --csv > "$L/$name.details.csv" 2>/dev/null
    $N --import "$L/$name.ncu-rep" --page raw --csv > "$L/$name.raw.csv" 2>/dev/null
  }
  prof fine_shared fine_shared $NS solve $CA1 --cells 3000 --backend cuda --method fine-grained
  NEUROSOLVE_FINE_SHARED=ab prof fine_shared_ab500 fine_shared $NS solve $CA1 --cells 500 --backend cuda --method fine-grained
  $N --import "$L/fine_shared_ab500.ncu-rep" --page source --csv --print-source sass > "$L/fine_shared_ab500.sass.csv" 2>/dev/null
  NEUROSOLVE_FINE_SHARED=0 prof fine_device fine_kernel $NS solve $CA1 --cells 3000 --backend cuda --method fine-grained
  prof hines_onchip onchip_kernel $NS solve $CA1 --cells 3000 --backend cuda --method onchip
  $N --import "$L/hines_onchip.ncu-rep" --page source --csv --print-source sass > "$L/hines_onchip.sass.csv" 2>/dev/null
  prof sim_onchip sim_onchip $NS simulate $M/allen_chat_614430666.swc --cells 20000 --tstop 0.25 --backend cuda \
    --method onchip --record-cells 0 --no-progress
  $N --import "$L/sim_onchip.ncu-rep" --page source --csv --print-source sass > "$L/sim_onchip.sass.csv" 2>/dev/null
  prof tridiag_warp warp_kernel $NS bench tridiag --grid a --precision double --backend cuda --methods warp \
    --n 256 --batch 256000 --repeats 1
  prof tridiag_cusparse cuThomasBatch $NS bench tridiag --grid a --precision double --backend cuda \
    --methods cusparse-interleaved --n 256 --batch 256000 --repeats 1
  ;;
esac
rm -f "$L"/*.ncu-rep
tar -C "$L" -czf "$OUT/logs.tgz" . && ls -la "$OUT"
