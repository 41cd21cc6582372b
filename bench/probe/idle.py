"""Copy the source tree to $1 with timers (rdtsc) around each thread's share
of a call of the CPU loop (the free-running path: every block through all the
steps, then blocks taken from other threads), printed at exit: the calls'
wall cycles, and each thread's busy cycles as a fraction of them (mean and
lowest thread). Shows whether a 16-thread run waits for its last blocks or
runs each block slower. A probe for bench/README.md; never built into the
library."""
import shutil, sys
dst = sys.argv[1]
def skip(folder, names):
    return [x for x in names if x == '.git' or (folder == '.' and x.startswith(('build', '.whl')))]
shutil.copytree('.', dst, ignore=skip, dirs_exist_ok=True)
p = dst + '/src/sim/cpu/step.c'
s = open(p).read()
s = s.replace('#include "core/error.h"\n', '''#include "core/error.h"
#include <stdio.h>
#include <x86intrin.h>
static unsigned long long idle_b[256][2], idle_wall, idle_busy, idle_low, idle_calls, idle_thr;
__attribute__((destructor)) static void idle_print(void) {
    if (!idle_calls) return;
    fprintf(stderr, "IDLE calls %llu threads %llu wall %.4g cycles/call busy mean %.3f lowest thread %.3f of the wall\\n",
            idle_calls, idle_thr, (double)idle_wall / idle_calls, (double)idle_busy / idle_thr / idle_wall,
            (double)idle_low / idle_wall);
}
''', 1)
old = '''                for (int32_t k = 0; k < threads && !oom; ++k) {'''
new = '''                idle_b[t][0] = __rdtsc();
                for (int32_t k = 0; k < threads && !oom; ++k) {'''
assert old in s; s = s.replace(old, new)
old = '''                        oom |= run_call(sim, st, st->order[q], step0, n_steps, t0, d, rhs, &mine);
                }
            } else if (st->n_split == 0) {'''
new = '''                        oom |= run_call(sim, st, st->order[q], step0, n_steps, t0, d, rhs, &mine);
                }
                idle_b[t][1] = __rdtsc();
#pragma omp barrier
                if (t == 0 && n_steps >= 10) {
                    unsigned long long lo = ~0ull, hi = 0, busy = 0, low = ~0ull;
                    for (int32_t u = 0; u < threads; ++u) {
                        if (idle_b[u][0] < lo) lo = idle_b[u][0];
                        if (idle_b[u][1] > hi) hi = idle_b[u][1];
                        busy += idle_b[u][1] - idle_b[u][0];
                        if (idle_b[u][1] - idle_b[u][0] < low) low = idle_b[u][1] - idle_b[u][0];
                    }
                    idle_wall += hi - lo; idle_busy += busy; idle_low += low; idle_calls++; idle_thr = threads;
                }
            } else if (st->n_split == 0) {'''
assert old in s; s = s.replace(old, new)
open(p, 'w').write(s)
