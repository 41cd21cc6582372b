#!/usr/bin/env bash
# The CPU loop's instruction sets on the device host (16 cores): what the
# AVX-512 clones give against AVX2 alone, at 1, 8 and 16 threads, for the
# hand-written hh and the generated one (issues 19 and 23), with Arbor at the
# same thread counts in the same call. Two CPU-only builds: the default
# (target_clones avx512f/avx2/default, chosen at load time) and one for AVX2
# only (-DNS_NO_CLONES -DNSM_NO_CLONES -mavx2 -mfma; no FMA contraction in
# either: -ffp-contract=off stays). Correctness: test_sim_model and
# test_cable_neuron on the default build; spikes printed per run.
# In $OUT: host.txt tests.txt runs.txt arbor.txt.
# Call (arbor-0.12.2-cp312 wheel in .whl3/):
#   run(command="bash bench/device_cpu3.sh", carry=[".whl3"], timeout_s=600)
set -uo pipefail
OUT=${OUT:-cpu3-results}
mkdir -p "$OUT"
t0=$(date +%s)
{ date -u; lscpu; nproc; free -g; } > "$OUT/host.txt" 2>&1
if ls .whl3/arbor-*.whl > /dev/null 2>&1; then
  pip install --no-deps --quiet --target /tmp/site .whl3/arbor-*.whl > /tmp/pip.log 2>&1 || tail -5 /tmp/pip.log
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
build() { # dir extra-cflags
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=ON \
    ${2:+-DCMAKE_C_FLAGS="$2"} > "/tmp/$1.log" 2>&1 &&
    cmake --build "$1" -j"$(nproc)" --target neurosolve_cli ${3:-} >> "/tmp/$1.log" 2>&1 ||
    { tail -30 "/tmp/$1.log"; return 1; }
}
build b-clones "" "test_sim_model test_cable_neuron" || exit 1
build b-avx2 "-DNS_NO_CLONES -DNSM_NO_CLONES -mavx2 -mfma" || exit 1
echo "builds: $(( $(date +%s) - t0 )) s" | tee "$OUT/tests.txt"
for t in test_sim_model test_cable_neuron; do
  timeout 200 "./b-clones/tests/$t" > /tmp/t.log 2>&1
  echo "$t: exit $? $(grep -c FAIL /tmp/t.log) FAIL lines; $(tail -1 /tmp/t.log)"
done 2>&1 | tee -a "$OUT/tests.txt"
printf 'all.insert = hh\n' > /tmp/hh.model
M=data/morphologies/allen_rbp4_485574832.swc
val() { grep -o "\"$1\":[0-9.e+-]*" "$2" | head -1 | cut -d: -f2; }
{
  echo "# build path threads round compartment_steps_per_s spikes"
  for r in 1 2; do
    for b in b-clones b-avx2; do
      for th in 1 16; do
        cells=$([ "$th" = 1 ] && echo 8 || echo 26)
        for path in hand gen; do
          extra=$([ $path = gen ] && echo "--model /tmp/hh.model")
          timeout 120 "./$b/neurosolve" simulate bundled --radii default:1 --cells "$cells" --tstop 10 \
            --threads "$th" --json --no-progress $extra > /tmp/o.json 2>/tmp/e.txt
          echo "$b $path $th $r $(val compartment_steps_per_s /tmp/o.json) $(val spikes /tmp/o.json)"
        done
      done
    done
  done
  echo "# bench sim allen_rbp4 x 1000, 400 steps: build threads ms/step cell-steps/s"
  for b in b-clones b-avx2; do
    for th in 1 8 16; do
      for path in hand gen; do
        extra=$([ $path = gen ] && echo "--model /tmp/hh.model")
        timeout 100 "./$b/neurosolve" bench sim --backend cpu --morph "$M" --cells 1000 --steps 400 --threads "$th" \
          $extra > /tmp/b.txt 2>&1
        echo "$b $path $th $(awk '$1=="cpu"{print $6, $7}' /tmp/b.txt)"
      done
    done
  done
} 2>&1 | tee "$OUT/runs.txt"
{
  for th in 1 8 16; do
    echo "arbor $th: $(timeout 150 python3 bench/arbor_sim_bench.py "$M" 1000 10 0.025 "$th" 2>&1 | tail -1)"
  done
} 2>&1 | tee "$OUT/arbor.txt"
echo "total: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/tests.txt"
