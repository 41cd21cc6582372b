"""Copy the source tree to $1 with timers (rdtsc) around the passes of the CPU
loop's run_block (built-in hh, or a model: the fused pass or the generated loops), summed per block width over all threads
and printed at exit: cycles per lane-node-step of the membrane pass, the solve
(axial terms, elimination, substitution, v += rhs), the fault check and the
gates. A probe for bench/README.md ("Narrow blocks of large cells"); never
built into the library."""
import shutil, sys
dst = sys.argv[1]
def skip(folder, names):  # the repository's .git and build folders, not src/life/build*.c
    return [x for x in names if x == '.git' or (folder == '.' and x.startswith(('build', '.whl')))]
shutil.copytree('.', dst, ignore=skip, dirs_exist_ok=True)
p = dst + '/src/sim/cpu/step.c'
s = open(p).read()
s = s.replace('#include "core/error.h"\n', '''#include "core/error.h"
#include <stdio.h>
#include <x86intrin.h>
static _Atomic unsigned long long prof_c[4][4], prof_ln[4];
__attribute__((destructor)) static void prof_print(void) {
    static const char *name[4] = {"membrane", "solve", "faults", "gates/states"};
    for (int l = 0; l < 4; ++l) {
        if (!prof_ln[l]) continue;
        fprintf(stderr, "PROF w=%d lane-node-steps %.3g:", 1 << l, (double)prof_ln[l]);
        for (int k = 0; k < 4; ++k) fprintf(stderr, " %s %.1f", name[k], (double)prof_c[l][k] / (double)prof_ln[l]);
        fprintf(stderr, " cycles/lane-node\\n");
    }
}
''', 1)
old = '''        if (fused) fused_pass(sim, &bv, W, tm, d, rhs, k == steps - 1);
        else if (sim->model) model_pass(sim, &bv, W, tm, d, rhs);
        else membrane_pass(sim, &bv, W, 0, n, tm, d, rhs);
        double v_old[NS_CPU_LANES_MAX];
        const int bad = solve_lanes(&bv, W, d, rhs, v_old);
        t = ns_sim_half_step(tm, dt);
        const int64_t step = step0 + k + 1;
        if (faults(sim, &bv, W, bad, step, k, steps, d, fault)) return 1;'''
new = '''        unsigned long long c0 = __rdtsc();
        if (fused) fused_pass(sim, &bv, W, tm, d, rhs, k == steps - 1);
        else if (sim->model) model_pass(sim, &bv, W, tm, d, rhs);
        else membrane_pass(sim, &bv, W, 0, n, tm, d, rhs);
        unsigned long long c1 = __rdtsc();
        double v_old[NS_CPU_LANES_MAX];
        const int bad = solve_lanes(&bv, W, d, rhs, v_old);
        unsigned long long c2 = __rdtsc();
        t = ns_sim_half_step(tm, dt);
        const int64_t step = step0 + k + 1;
        if (faults(sim, &bv, W, bad, step, k, steps, d, fault)) return 1;
        unsigned long long c3 = __rdtsc();'''
assert old in s; s = s.replace(old, new)
old = '''        } else gates_range(sim, &bv, W, 0, n);
        if (spikes(sim, &bv, W, v_old, tp, t) != 0) return -1;'''
new = '''        } else gates_range(sim, &bv, W, 0, n);
        unsigned long long c4 = __rdtsc();
        const int lw = W == 8 ? 3 : W == 4 ? 2 : W == 2 ? 1 : 0;
        prof_c[lw][0] += c1 - c0; prof_c[lw][1] += c2 - c1; prof_c[lw][2] += c3 - c2; prof_c[lw][3] += c4 - c3;
        prof_ln[lw] += (unsigned long long)n * W;
        if (spikes(sim, &bv, W, v_old, tp, t) != 0) return -1;'''
assert old in s; s = s.replace(old, new)
open(p, 'w').write(s)
