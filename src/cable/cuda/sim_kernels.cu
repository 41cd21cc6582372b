// The GPU simulation loop: one thread per cell, `run.steps` of NEURON's
// fixed step per launch (the same operations in the same order as
// step_cpu.c; docs/simulation.md), state Full-Interleaved per shape group.
#include <math.h>

#include "cable/cuda/sim_cuda.h"
#include "cable/mech.h"

namespace {

__global__ void sim_steps(ns_sim_gpu_group g, ns_sim_gpu_run r) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= g.cells) return;
    const int64_t N = g.cells;
    const int32_t n = g.n;
    double *v = g.v + j, *m = g.m + j, *h = g.h + j, *gn = g.gn + j;
    double *d = g.d + j, *rhs = g.rhs + j;
    const double dt = r.dt;
    const int64_t sb = g.stim_begin[j], se = g.stim_begin[j + 1];
    const int64_t rb = g.rec_begin[j], re = g.rec_begin[j + 1];
    double t = r.t0;
    int32_t spikes = 0;
    for (int64_t k = 0; k < r.steps; ++k) {
        const double tp = t;
        const double tm = t + .5 * dt;
        for (int32_t i = 0; i < n; ++i) {
            double ri = 0.0, di = 0.0;
            const int reg = g.region[i];
            if (reg >= 0 && r.regions[reg].pas) {
                const sim_region *q = &r.regions[reg];
                const double vi = v[i * N];
                const double g1 = ns_pas_current(vi + .001, q->g_pas, q->e_pas);
                const double i0 = ns_pas_current(vi, q->g_pas, q->e_pas);
                ri -= i0;
                di += (g1 - i0) / .001;
            }
            rhs[i * N] = ri;
            d[i * N] = di;
        }
        for (int64_t s = sb; s < se; ++s) {
            const double i = (tm < g.stim_del[s] + g.stim_dur[s] && tm >= g.stim_del[s]) ? g.stim_amp[s] : 0.0;
            const int32_t node = g.stim_node[s];
            rhs[node * N] += i * g.stim_scale[s];
        }
        for (int32_t i = 0; i < n; ++i) {
            const int reg = g.region[i];
            if (reg < 0) continue;
            double di = d[i * N];
            if (r.regions[reg].hh) {
                const sim_region *q = &r.regions[reg];
                const double vi = v[i * N], mi = m[i * N], hi = h[i * N], ni = gn[i * N];
                const double g1 = ns_hh_current(vi + .001, mi, hi, ni, q->gnabar, q->gkbar, q->gl, q->el, q->ena, q->ek);
                const double i0 = ns_hh_current(vi, mi, hi, ni, q->gnabar, q->gkbar, q->gl, q->el, q->ena, q->ek);
                rhs[i * N] -= i0;
                di += (g1 - i0) / .001;
            }
            d[i * N] = di + g.cap[i];
        }
        for (int32_t i = 1; i < n; ++i) {
            const int32_t p = g.parent[i];
            const double dv = v[p * N] - v[i * N];
            rhs[i * N] -= g.b[i] * dv;
            rhs[p * N] += g.a[i] * dv;
            d[i * N] -= g.b[i];
            d[p * N] -= g.a[i];
        }
        // NEURON's triang and bksub (as ns_hines_solve_one)
        int bad = 0;
        for (int32_t i = n - 1; i >= 1; --i) {
            const double di = d[i * N];
            if (di == 0.0 || !isfinite(di)) bad = 1;
            const double f = g.a[i] / di;
            const int32_t p = g.parent[i];
            d[p * N] -= f * g.b[i];
            rhs[p * N] -= f * rhs[i * N];
        }
        rhs[0] /= d[0];
        for (int32_t i = 1; i < n; ++i) rhs[i * N] = (rhs[i * N] - g.b[i] * rhs[g.parent[i] * N]) / d[i * N];
        const double v_old = v[g.spike_node * N];
        for (int32_t i = 0; i < n; ++i) v[i * N] += rhs[i * N];
        t = tm + .5 * dt;
        const int64_t step = r.step0 + k + 1;
        if (bad || (step % r.check) == 0 || k == r.steps - 1) {
            int fault = bad;
            for (int32_t i = 0; i < n && !fault; ++i) fault = !isfinite(v[i * N]);
            if (fault) {
                const unsigned long long key = ((unsigned long long)(k + 1) << 24) | (unsigned long long)j;
                atomicMin(g.fault, key);
                break;
            }
        }
        for (int32_t i = 0; i < n; ++i) {
            const int reg = g.region[i];
            if (reg < 0 || !r.regions[reg].hh) continue;
            ns_hh_rates q;
            ns_hh_rates_of(r.table, r.usetable, r.q10, v[i * N], &q);
            m[i * N] = ns_cnexp(m[i * N], q.minf, q.mtau, dt);
            h[i * N] = ns_cnexp(h[i * N], q.hinf, q.htau, dt);
            gn[i * N] = ns_cnexp(gn[i * N], q.ninf, q.ntau, dt);
        }
        const double v_new = v[g.spike_node * N];
        if (v_old < r.threshold && v_new >= r.threshold) {
            if (spikes < r.spike_cap)
                g.spike_t[j * r.spike_cap + spikes] = tp + (t - tp) * (r.threshold - v_old) / (v_new - v_old);
            ++spikes;
        }
        if (re > rb && step % r.every == 0) {
            double *row = g.traces + (step / r.every - r.first_sample) * r.n_sites;
            for (int64_t q = rb; q < re; ++q) row[g.rec_site[q]] = v[g.rec_node[q] * N];
        }
    }
    g.spike_count[j] = spikes;
}

}  // namespace

extern "C" cudaError_t ns_sim_launch_steps(const ns_sim_gpu_group *group, const ns_sim_gpu_run *run, int threads,
                                           cudaStream_t stream) {
    if (group->cells <= 0) return cudaSuccess;
    const int64_t blocks = (group->cells + threads - 1) / threads;
    sim_steps<<<(unsigned)blocks, threads, 0, stream>>>(*group, *run);
    return cudaGetLastError();
}
