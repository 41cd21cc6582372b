# Per-pass cycles per lane-node-step by block width (bench/probe/prof.py) on the device host.
# Call: run(command="bash bench/probe/prof.sh", timeout_s=300)
set -uo pipefail
python3 bench/probe/prof.py /tmp/prof-src || exit 1
cmake -S /tmp/prof-src -B /tmp/pb -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF > /tmp/pb.log 2>&1 &&
  cmake --build /tmp/pb -j"$(nproc)" --target neurosolve_cli >> /tmp/pb.log 2>&1 || { tail -20 /tmp/pb.log; exit 1; }
N=/tmp/pb/neurosolve D=data/morphologies
r() { echo "== $*"; $N bench sim --backend cpu "$@" 2>&1 | grep -E "^cpu|PROF"; }
for rep in 1 2; do
  r --morph $D/dense_Animal_2_Basal_2.swc --cells 1 --steps 60 --threads 1
  r --morph $D/dense_Animal_2_Basal_2.swc --cells 2 --steps 60 --threads 1
  r --morph $D/dense_Animal_2_Basal_2.swc --cells 4 --steps 40 --threads 1
  r --morph $D/dense_Animal_2_Basal_2.swc --cells 8 --steps 40 --threads 1
  r --morph $D/dense_Animal_2_Basal_2.swc --cells 32 --steps 40 --threads 16
  r --morph $D/dense_Animal_2_Basal_2.swc --cells 16 --steps 40 --threads 16
  r --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 100 --threads 1
  r --morph $D/allen_rbp4_485574832.swc --cells 1000 --steps 100 --threads 16
done
