// Private: one generated per-instance function of a built-in density
// mechanism inside a GPU loop's kernel (the fused tree loop, sim/cuda/tree.cu,
// and the onchip loop's model path, sim/cuda/onchip.cu; sim/cuda/fused.h).
#ifndef NS_SIM_CUDA_FUSED_ONE_CUH
#define NS_SIM_CUDA_FUSED_ONE_CUH

#include <stdint.h>
#include "neurosolve/mechanism.h"

// An assigned variable not yet written: a NaN that no arithmetic makes (one
// read before it is written would poison v, and the fault check stops the run).
constexpr long long NS_FUSED_UNSET = 0x7ff4dead5eed0001LL;

// The ppack of one instance that the fused loops hand a generated function
// (i_ = 0; the node_ they pass indexes v, rhs, d).
__device__ __forceinline__ ns_mech_ppack ns_fused_ppack(double *v, double *rhs, double *d, const double *weight,
                                                        double *const *field, double *global, double *table,
                                                        const ns_mech_ion_view *ion, double t, double dt,
                                                        double celsius) {
    ns_mech_ppack p;
    p.n = 1;
    p.node_begin = 0;
    p.node_index = nullptr;
    p.t = t;
    p.dt = dt;
    p.celsius = celsius;
    p.v = v;
    p.rhs = rhs;
    p.d = d;
    p.weight = weight;
    p.field = field;
    p.global = global;
    p.table = table;
    p.ion = ion;
    return p;
}

// current_one or state_one (FN) of one instance at one node, on a ppack of one
// instance whose every pointer is a local: the node's v, rhs and d (vl, rl,
// dl), the ions' e, the fields F[k] (i_ = node_ = 0). Inlined, the locals are
// registers. NF fields: NP parameters (and then the NIONS e) from `tuple`,
// then assigned, then NS states at state[s * stride] (the instance's fields in
// device memory, or the onchip loop's per-node arrays in shared memory). The
// assigned variables start as NS_FUSED_UNSET; after the call the states are
// stored back when `states`, and in the last step of a launch (LAST, a
// separate instance so that the other steps keep no assigned variable live
// to the end) the assigned variables that it set go to fields[k * count + q]
// (the test folds at compile time where the function always or never sets one).
template <int NF, int NP, int NS, int NIONS, void (*FN)(ns_mech_ppack *, int, int), bool LAST>
__device__ __forceinline__ void ns_fused_call(const double *tuple, double *state, int64_t stride, double *fields,
                                              int64_t count, int32_t q, double *global, double *table, double *vl,
                                              double *rl, double *dl, bool states, double t, double dt,
                                              double celsius) {
    double F[NF];
    double *fp[NF];
#pragma unroll
    for (int k = 0; k < NF; ++k) {
        const bool assigned = k >= NP && k < NF - NS;
        F[k] = assigned ? __longlong_as_double(NS_FUSED_UNSET)
               : k < NP ? __ldg(tuple + k)
                        : state[(int64_t)(k - (NF - NS)) * stride];
        fp[k] = &F[k];
    }
    double e[NIONS > 0 ? NIONS : 1];
    ns_mech_ion_view ion[NIONS > 0 ? NIONS : 1];
#pragma unroll
    for (int j = 0; j < NIONS; ++j) {
        e[j] = __ldg(tuple + NP + j);
        ion[j] = ns_mech_ion_view{&e[j], nullptr, nullptr, nullptr, nullptr, nullptr};
    }
    ns_mech_ppack p = ns_fused_ppack(vl, rl, dl, nullptr, fp, global, table, ion, t, dt, celsius);
    FN(&p, 0, 0);
#pragma unroll
    for (int k = NP; k < NF; ++k) {
        const bool assigned = k < NF - NS;
        if (assigned) {
            if (LAST && __double_as_longlong(F[k]) != NS_FUSED_UNSET) fields[(int64_t)k * count + q] = F[k];
        } else if (states) {
            state[(int64_t)(k - (NF - NS)) * stride] = F[k];
        }
    }
}

#endif
