set -uo pipefail
gcc -O3 -march=native -fopenmp bench/probe/stream.c -o /tmp/stream
for n in 1000000 33554432; do for th in 1 4 8 16; do OMP_NUM_THREADS=$th OMP_PROC_BIND=close /tmp/stream $n; done; done
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF > /tmp/b.log 2>&1 && cmake --build /tmp/b -j16 --target neurosolve_cli >> /tmp/b.log 2>&1 || { tail /tmp/b.log; exit 1; }
N=/tmp/b/neurosolve D=data/morphologies
r() { echo "$*: $($N bench sim --backend cpu "$@" 2>/dev/null | grep '^cpu')"; }
for rep in 1 2; do
r --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 10 --threads 16
r --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 160 --threads 16
r --morph $D/dense_Animal_2_Basal_2.swc --cells 16 --steps 40 --threads 16
r --morph $D/dense_Animal_2_Basal_2.swc --cells 16 --steps 40 --threads 1
r --morph $D/dense_Animal_2_Basal_2.swc --cells 8 --steps 40 --threads 8
r --morph $D/dense_Animal_2_Basal_2.swc --cells 8 --steps 40 --threads 1
r --morph $D/dense_Animal_2_Basal_2.swc --cells 2 --steps 40 --threads 1
done
