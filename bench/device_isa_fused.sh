#!/usr/bin/env bash
# Issue 19: the generated hh (the CPU loop's fused pass) against the hand-written hh in two builds of
# the working tree on the device host: the default (target clones: AVX-512 chosen there) and AVX2
# only (-mavx2, NS_NO_CLONES, NSM_NO_CLONES), 1 and 16 threads, 3 alternated rounds.
# Call: run(command="OUT=$OUT bash bench/device_isa_fused.sh", timeout_s=420). In $OUT: isa.txt.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
b() { cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DNS_CUDA=OFF -DNS_MPI=OFF -DNS_TESTS=OFF "-DCMAKE_C_FLAGS=$2" > "/tmp/$1.log" 2>&1 &&
  cmake --build "$1" -j16 --target neurosolve_cli >> "/tmp/$1.log" 2>&1 || tail -20 "/tmp/$1.log"; }
t0=$(date +%s)
b b-clones "" 
b b-avx2 "-mavx2 -DNS_NO_CLONES -DNSM_NO_CLONES"
echo "builds $(( $(date +%s) - t0 )) s"
printf 'all.insert = hh\n' > /tmp/hh.model
val() { grep -o "\"$1\":[0-9.e+-]*" "$2" | head -1 | cut -d: -f2; }
for r in 1 2 3; do for th in 1 16; do cells=$([ $th = 1 ] && echo 8 || echo 26)
  for bb in b-clones b-avx2; do for p in hand gen; do extra=""; [ $p = gen ] && extra="--model /tmp/hh.model"
    timeout 100 ./$bb/neurosolve simulate bundled --radii default:1 --cells $cells --tstop 10 --threads $th --json --no-progress $extra > /tmp/o.json 2>&1
    echo "$bb $p $th $r $(val compartment_steps_per_s /tmp/o.json)"
  done; done; done; done | tee $OUT/isa.txt
python3 - $OUT/isa.txt <<'PY'
import sys, statistics as st
d={}
for l in open(sys.argv[1]):
    if len(l.split()) != 5: continue
    b,p,th,r,x=l.split(); d.setdefault((b,th,r),{})[p]=float(x)
for b in ('b-clones','b-avx2'):
  for th in ('1','16'):
    rs=[v['gen']/v['hand'] for (bb,t,r),v in d.items() if bb==b and t==th]
    h=[v['hand'] for (bb,t,r),v in d.items() if bb==b and t==th]
    g=[v['gen'] for (bb,t,r),v in d.items() if bb==b and t==th]
    print(b, th, 'gen/hand per round', ['%.2f'%x for x in rs], 'median %.3f'%st.median(rs), 'hand %.3g gen %.3g'%(st.median(h), st.median(g)))
PY
