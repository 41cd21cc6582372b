# Per-pass cycles per lane-node-step (bench/probe/prof.py's timers) of the
# hand-written hh loop and the generated hh's fused pass (issue 19's CPU
# target), on the genhh workload of bench/device_genhh.sh, for the working
# tree and for variants of the fused pass (VARIANTS: names of the patches
# below, each a copy of the probe tree), rounds alternated.
# Call: run(command="bash bench/probe/prof_genhh.sh", timeout_s=600)
set -uo pipefail
OUT=${OUT:-prof-genhh}
ROUNDS=${ROUNDS:-3}
VARIANTS=${VARIANTS:-base nosimd exp1}
mkdir -p "$OUT"
python3 bench/probe/prof.py /tmp/prof-base || exit 1
variant() { # name dir: the patch of variant `name` applied to dir's model_cpu.c
  python3 - "$1" "$2/src/cable/model_cpu.c" "$2/src/cable/step_cpu.c" <<'PY'
import sys
name, p, p2 = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(p).read()
def sub(old, new):
    global s
    assert old in s, (name, old)
    s = s.replace(old, new)
if name == 'nosimd':   # the fused loops left to the auto-vectoriser, as the hand-written ones
    sub('#define FUSED_SIMD _Pragma("omp simd")', '#define FUSED_SIMD')
elif name == 'exp1':   # the exponentials in one loop of 3 len, as the hand-written gates
    sub('A[FUSED_CHUNK + l] = a1;', 'A[len + l] = a1;')
    sub('A[2 * FUSED_CHUNK + l] = a2;', 'A[2 * len + l] = a2;')
    sub('''        for (int k = 0; k < 3; ++k) {
            double *restrict x = A + k * FUSED_CHUNK;
            FUSED_SIMD
            for (int l = 0; l < len; ++l) x[l] = nsm_exp(x[l]);
        }''', '''        FUSED_SIMD
        for (int l = 0; l < 3 * len; ++l) A[l] = nsm_exp(A[l]);''')
    sub('nsm_hh_d_states_post((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, A[l], T[l], A[FUSED_CHUNK + l],',
        'nsm_hh_d_states_post((ns_mech_ppack *)pp, FUSED_HH_ARGS, i, A[l], T[l], A[len + l],')
    sub('T[FUSED_CHUNK + l], A[2 * FUSED_CHUNK + l], T[2 * FUSED_CHUNK + l]);',
        'T[FUSED_CHUNK + l], A[2 * len + l], T[2 * FUSED_CHUNK + l]);')
elif name == 'avx2':   # the fused pass without its AVX-512 clone
    sub('target_clones("avx512f", "avx2", "default"), flatten', 'target_clones("avx2", "default"), flatten')
elif name == 'nolast':  # no assigned variable stored (for attribution only: wrong values)
    open(p, 'w').write(s)
    p = p2
    s = open(p).read()
    sub('fused_pass(sim, &bv, W, tm, d, rhs, k == steps - 1)', 'fused_pass(sim, &bv, W, tm, d, rhs, 0)')
    sub('sim->params.celsius, k == steps - 1);', 'sim->params.celsius, 0);')
elif name != 'base':
    sys.exit('no variant ' + name)
open(p, 'w').write(s)
PY
}
t0=$(date +%s)
for v in $VARIANTS; do
  if [ "$v" != base ]; then rm -rf "/tmp/prof-$v"; cp -r /tmp/prof-base "/tmp/prof-$v"; variant "$v" "/tmp/prof-$v" || exit 1; fi
  ( cmake -S "/tmp/prof-$v" -B "/tmp/pb-$v" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF > "/tmp/pb-$v.log" 2>&1 &&
    cmake --build "/tmp/pb-$v" -j"$(nproc)" --target neurosolve_cli >> "/tmp/pb-$v.log" 2>&1 ) || { tail -20 "/tmp/pb-$v.log"; exit 1; }
done
echo "builds: $(( $(date +%s) - t0 )) s"
printf 'all.insert = hh\n' > /tmp/hh.model
val() { grep -o "\"$1\":[0-9.e+-]*" "$2" | head -1 | cut -d: -f2; }
{
  for r in $(seq "$ROUNDS"); do
    for th in 1 16; do
      cells=$([ "$th" = 1 ] && echo 8 || echo 26)
      for v in $VARIANTS; do
        for path in hand gen; do
          [ "$path" = hand ] && [ "$v" != base ] && continue
          extra=""; [ "$path" = gen ] && extra="--model /tmp/hh.model"
          timeout 120 "/tmp/pb-$v/neurosolve" simulate bundled --radii default:1 --cells "$cells" --tstop 10 \
            --threads "$th" --json --no-progress $extra > /tmp/o.json 2>/tmp/e.txt
          echo "$v $path $th $r $(val compartment_steps_per_s /tmp/o.json) $(val spikes /tmp/o.json) | $(grep PROF /tmp/e.txt | tr '\n' ' ')"
        done
      done
    done
  done
  # bench sim: one call of 400 steps (the assigned variables stored once)
  M=data/morphologies/allen_rbp4_485574832.swc
  for r in $(seq "$ROUNDS"); do
    for th in 1 16; do
      for v in $VARIANTS; do
        for path in hand gen; do
          [ "$path" = hand ] && [ "$v" != base ] && continue
          extra=""; [ "$path" = gen ] && extra="--model /tmp/hh.model"
          timeout 120 "/tmp/pb-$v/neurosolve" bench sim --backend cpu --morph $M --cells 1000 --threads "$th" \
            $extra > /tmp/o.txt 2>/tmp/e.txt
          echo "benchsim $v $path $th $r | $(grep -E '^cpu' /tmp/o.txt | tr -s ' ' | tr '\n' ' ') | $(grep PROF /tmp/e.txt | tr '\n' ' ')"
        done
      done
    done
  done
} 2>&1 | tee "$OUT/prof.txt"
