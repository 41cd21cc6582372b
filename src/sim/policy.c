/* The GPU simulation's `auto` rule (sim/policy.h). Measured on an H100
 * (bench/README.md, "The GPU loops", per morphology): the tree loop
 * matched or beat the onchip loop on every real morphology from 300
 * compartments up and at 100 cells of every shape; onchip kept a small
 * lead only for small cells (short critical paths) in large counts. */
#include "sim/policy.h"
#include "neurosolve/mechanism.h"
#include "core/error.h"

int ns_sim_auto_needs_onchip(int64_t cells, int32_t sms) {
    return cells >= (int64_t)sms * NS_SIM_AUTO_ONCHIP_MIN_CELLS_PER_SM;
}

int ns_sim_auto_loop(const ns_sim_loop_facts *f) {
    if (f->model && !f->model_onchip) return NS_SIM_LOOP_TREE;
    if (ns_sim_auto_needs_onchip(f->cells, f->sms) && f->onchip_fits && f->onchip_shared &&
        f->onchip_path <= NS_SIM_AUTO_ONCHIP_MAX_PATH)
        return NS_SIM_LOOP_ONCHIP;
    return NS_SIM_LOOP_TREE;
}

ns_backend ns_sim_auto_backend(int usable_gpus, int mechanisms_have_cuda) {
    return usable_gpus > 0 && mechanisms_have_cuda ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
}

ns_backend ns_sim_auto_network_backend(int usable_gpus) {
    (void)usable_gpus;
    return NS_BACKEND_CPU;
}

/* The fused tree loop runs the generated code of the built-in pas and hh
 * inside the tree kernel, and a network's built-in synapses (ExpSyn,
 * Exp2Syn), events and detectors with them; anything else (a library's
 * mechanisms or synapses, Nernst after a concentration writer, parameters
 * or ions' e that the caller may write through ns_sim_state_field, where
 * the fused kernel reads the copies it made at create) runs per step, in
 * the launches that the generated CUDA of any library provides. */
int ns_sim_gpu_mechanisms_rule(const ns_sim_mech_facts *f) {
    const int fusable = f->builtin_only && !f->writes_concentration && (!f->network || f->network_fused) &&
                        !f->parameters_exposed;
    if (f->requested == NS_SIM_GPU_MECHANISMS_PER_STEP || f->requested == NS_SIM_GPU_MECHANISMS_PER_MECHANISM)
        return f->requested;
    if (fusable) return NS_SIM_GPU_MECHANISMS_FUSED;
    return f->requested == NS_SIM_GPU_MECHANISMS_FUSED ? -1 : NS_SIM_GPU_MECHANISMS_PER_STEP;
}

/* Two passes: the records of the mechanisms that may fail without setting the flag, then of those
 * that set it, each in the mechanisms' order. */
int32_t ns_sim_gpu_error_slots(const int *cuda_errors, int32_t n, int32_t *slot, int32_t *unflagged) {
    int32_t records = 0;
    for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) *unflagged = records;
        for (int32_t k = 0; k < n; ++k) {
            const int c = cuda_errors[k];
            if (pass == 0) slot[k] = -1;
            if (c == NS_MECH_CUDA_ERRORS_NONE || (c == NS_MECH_CUDA_ERRORS_FLAGGED) != (pass == 1)) continue;
            slot[k] = records++;
        }
    }
    return records;
}

/* The per-step path (sim/cuda/library_fused.h): a library's density
 * mechanisms in its fused launches (mechanism ABI 6, one launch per phase
 * for all of them) where per step or auto is asked for (per mechanism keeps
 * one launch per mechanism: bench/README.md, "GPU mechanisms: per step
 * against per mechanism"); members: the model's mechanisms that have them,
 * one_library: all of them the same library's (one pair of launches). */
int ns_sim_library_fused_rule(int requested, int32_t members, int one_library) {
    return (requested == NS_SIM_GPU_MECHANISMS_PER_STEP || requested == NS_SIM_GPU_MECHANISMS_AUTO) && members > 0 &&
           one_library;
}

/* The per-step path captures one step as a CUDA graph and replays it
 * (sim/cuda/step_graph.h) where every launch of the step finds what changes
 * from step to step in device memory: the tree step and the library's fused
 * launches read the clock; a mechanism in a launch of its own has its t in
 * the ppack (by value, fixed at the capture), so each must read no t
 * (time_free: the built-in pas and hh); a network's delivery and detectors
 * take per-step arguments (no graph). A part of few steps is not worth the
 * capture. */
int ns_sim_step_graph_rule(int requested, int network, int time_free, int64_t steps) {
    return (requested == NS_SIM_GPU_MECHANISMS_PER_STEP || requested == NS_SIM_GPU_MECHANISMS_AUTO) && !network &&
           time_free &&
           steps >= NS_SIM_STEP_GRAPH_MIN_STEPS;
}

/* The onchip kernel has the fused tree kernel's built-in pas and hh, not its
 * synapses: a model that fuses goes onchip where its shape does, unless it
 * has a network. */
int ns_sim_onchip_model_rule(const ns_sim_mech_facts *f) {
    return !f->network && ns_sim_gpu_mechanisms_rule(f) == NS_SIM_GPU_MECHANISMS_FUSED;
}

double ns_sim_min_bytes(int64_t compartments, int32_t n_mechs, const ns_sim_bytes_mech *mechs, int32_t n_ions,
                        const ns_sim_bytes_ion *ions) {
    if (compartments < 1) return 0.0;
    const double w = (double)sizeof(double);
    double values = 5.0 * (double)compartments; /* v read + written, a, b, the diagonal's constant part */
    for (int32_t m = 0; m < n_mechs; ++m)
        values += (double)mechs[m].instances * (2.0 * mechs[m].n_states + mechs[m].n_params);
    for (int32_t j = 0; j < n_ions; ++j) {
        const unsigned f = ions[j].flags;
        int per = (f & NS_MECH_ION_READ_E) != 0;
        const int wc = (f & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO)) != 0;
        per += (f & (NS_MECH_ION_READ_CI | NS_MECH_ION_WRITE_CI)) != 0;
        per += (f & NS_MECH_ION_WRITE_CI) != 0;
        per += (f & (NS_MECH_ION_READ_CO | NS_MECH_ION_WRITE_CO)) != 0;
        per += (f & NS_MECH_ION_WRITE_CO) != 0;
        per += wc || (f & NS_MECH_ION_WRITE_E) != 0; /* e written: by Nernst or by a mechanism */
        values += (double)ions[j].slots * per;
    }
    return values * w / (double)compartments;
}

ns_status ns_sim_mechanisms_choose(const ns_sim_mech_facts *f, const char *loop, ns_sim_gpu_mechanisms *path) {
    const int rule = ns_sim_gpu_mechanisms_rule(f);
    if (rule < 0)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "simulation: gpu_mechanisms = fused, but %s runs the built-in pas and hh (with hh's rate "
                       "table) and a network of the built-in ExpSyn and Exp2Syn only (%s): use auto or per-step",
                       loop,
                       !f->builtin_only           ? "the model has other mechanisms, or hh without its table"
                       : f->writes_concentration  ? "a mechanism writes a concentration"
                       : f->parameters_exposed    ? "ns_sim_state_field handed out a parameter's or an ion's array, and "
                                                    "the fused loop reads the copies it made at create"
                                                  : "the network has synapse types it does not run");
    *path = (ns_sim_gpu_mechanisms)rule;
    return NS_OK;
}
