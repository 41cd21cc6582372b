#!/usr/bin/env bash
# Branch wave-cpu on the device host (16 cores): the generated hh against the
# hand-written hh on the CPU loop (issue 19's "within 5%", docs/mechanisms.md
# "Speed"), and our CPU loop against Arbor (issue 23), in one call of about 6
# minutes. CPU-only build; correctness first (test_nmodl, test_sim_model,
# test_cable_neuron), then, same run:
#   hh: `simulate bundled --radii default:1 --tstop 10` with and without
#       `--model hh.model` (all.insert = hh), alternated, 3 rounds, at 16
#       threads (26 cells per morphology, 8-lane blocks) and at 1 thread (8
#       cells per morphology, 8-lane blocks); compartment-steps/s and spikes;
#   Arbor: `bench sim` of 1,000 allen_rbp4 cells (400 steps) with --arbor at 1
#       and 16 threads, the parameters' hh and the model's hh; the mixed set
#       (bundled x5) with --arbor at 16 threads (400 steps) and 1 thread (20).
# In $OUT: host.txt tests.txt hh.txt arbor.txt summary.txt.
# Call (from the repository root; .whl/site: Arbor 0.12.2 and NEURON 9.0.2, as
# for bench/device_cpu.sh):
#   run(command="bash bench/device_cpu2.sh", carry=[".whl/site"], timeout_s=600)
set -uo pipefail
OUT=${OUT:-cpu2-results}
mkdir -p "$OUT"
T=${THREADS:-16}
[ -d .whl/site ] && export PYTHONPATH="$PWD/.whl/site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
BUILD=build-device-cpu2
t0=$(date +%s)
{
  date -u; uname -a; lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|Flags" | cut -c1-200
  python3 -c "import arbor; print('arbor', arbor.__version__)" 2>&1 | tail -1
} > "$OUT/host.txt"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=ON > /tmp/cpu2-build.log 2>&1
cmake --build "$BUILD" -j"$(nproc)" --target neurosolve_cli test_nmodl test_sim_model test_cable_neuron \
  >> /tmp/cpu2-build.log 2>&1 || { tail -40 /tmp/cpu2-build.log | tee "$OUT/tests.txt"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s" | tee "$OUT/tests.txt"
for t in test_nmodl test_sim_model test_cable_neuron; do
  timeout 200 "./$BUILD/tests/$t" > /tmp/cpu2-t.log 2>&1
  echo "$t: exit $? $(grep -c FAIL /tmp/cpu2-t.log) FAIL lines; $(tail -1 /tmp/cpu2-t.log)"
done 2>&1 | tee -a "$OUT/tests.txt"
NS=./$BUILD/neurosolve
printf 'all.insert = hh\n' > /tmp/cpu2-hh.model
rate() { grep -o '"compartment_steps_per_s":[0-9.e+-]*' "$1" | head -1 | cut -d: -f2; }
spikes() { grep -o '"spikes":[0-9]*' "$1" | head -1 | cut -d: -f2; }
{
  echo "# label threads round compartment_steps_per_s spikes"
  for r in 1 2 3; do
    for th in "$T" 1; do
      cells=$([ "$th" = 1 ] && echo 8 || echo 26)
      for path in hand gen; do
        extra=$([ $path = gen ] && echo "--model /tmp/cpu2-hh.model")
        timeout 120 "$NS" simulate bundled --radii default:1 --cells "$cells" --tstop 10 --threads "$th" --json \
          --no-progress $extra > /tmp/cpu2-o.json 2>/tmp/cpu2-e.txt
        echo "$path $th $r $(rate /tmp/cpu2-o.json) $(spikes /tmp/cpu2-o.json)"
      done
    done
  done
} 2>&1 | tee "$OUT/hh.txt"
M=data/morphologies/allen_rbp4_485574832.swc
{
  for th in 1 "$T"; do
    echo "== allen_rbp4 x 1000, $th thread(s), parameters' hh"
    timeout 150 "$NS" bench sim --backend cpu --morph "$M" --cells 1000 --steps 400 --threads "$th" --arbor 1000
    echo "== allen_rbp4 x 1000, $th thread(s), the model's hh"
    timeout 150 "$NS" bench sim --backend cpu --morph "$M" --cells 1000 --steps 400 --threads "$th" --arbor 1000 \
      --model /tmp/cpu2-hh.model
  done
  echo "== mixed (bundled x5), $T threads"
  timeout 150 "$NS" bench sim --mixed --per 5 --jitter 0 --steps 400 --threads "$T" --arbor
  echo "== mixed (bundled x5), 1 thread"
  timeout 150 "$NS" bench sim --mixed --per 5 --jitter 0 --steps 20 --threads 1 --arbor
} 2>&1 | tee "$OUT/arbor.txt"
# generated/hand-written per round and threads, and the medians
python3 - "$OUT/hh.txt" <<'EOF' | tee "$OUT/summary.txt"
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l[0] != '#' and len(l.split()) >= 4]
by = {}
for lab, th, r, rate, *sp in rows:
    by.setdefault((th, r), {})[lab] = (float(rate), sp[0] if sp else '?')
for th in sorted({k[0] for k in by}, key=int):
    ratios = []
    for (t, r), v in sorted(by.items()):
        if t == th and 'hand' in v and 'gen' in v:
            ratios.append(v['gen'][0] / v['hand'][0])
            print(f"threads {th} round {r}: hand {v['hand'][0]:.4g} gen {v['gen'][0]:.4g} ratio {ratios[-1]:.3f} "
                  f"spikes {v['hand'][1]}/{v['gen'][1]}")
    if ratios:
        print(f"threads {th}: generated/hand-written median {statistics.median(ratios):.3f}")
EOF
echo "total: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
