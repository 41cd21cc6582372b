/* Which sweep a gradient runs (docs/gradients.md, "On the GPU"): the CPU's
 * (grad.c) or the GPU's (cuda/grad.c), and what the GPU's does not cover. */
#include <stdio.h>

#include "grad/grad_impl.h"

ns_backend grad_backend_choose(ns_backend requested, ns_backend sim_backend, const char *why_not) {
    if (requested == NS_BACKEND_CPU) return NS_BACKEND_CPU;
    if (requested == NS_BACKEND_CUDA) return NS_BACKEND_CUDA; /* refused by the caller where why_not */
    return sim_backend == NS_BACKEND_CUDA && !why_not ? NS_BACKEND_CUDA : NS_BACKEND_CPU;
}

int grad_cuda_why_not(const ns_grad_t *g, char *why, size_t n) {
#ifndef NS_HAVE_CUDA
    return snprintf(why, n, "this neurosolve was built without CUDA") > 0 || g;
#endif
    if (g->ev) return snprintf(why, n, "synapses and events (the simulation has a network)") > 0;
    if (gion_live(g->ion)) return snprintf(why, n, "live ions (a mechanism writes a concentration or reads an ion current)") > 0;
    for (int32_t k = 0; k < g->model->n_mechs; ++k) {
        const ns_mech_desc *d = g->model->mechs[k].desc;
        if (d->kind != NS_MECH_DENSITY)
            return snprintf(why, n, "point process %s", d->name) > 0;
        if (!d->cuda_vjp_init || !d->cuda_vjp_current || !d->cuda_vjp_state || !d->cuda_init)
            return snprintf(why, n, "mechanism %s has no device products (mechanism ABI 10: build its library with "
                            "`neurosolve mechanisms build --cuda`)", d->name) > 0;
        if (d->hooks[NS_MECH_BEFORE_BREAKPOINT] || d->hooks[NS_MECH_AFTER_SOLVE] || d->hooks[NS_MECH_BEFORE_STEP] ||
            d->hooks[NS_MECH_BEFORE_INITIAL] || d->hooks[NS_MECH_AFTER_INITIAL])
            return snprintf(why, n, "mechanism %s has BEFORE/AFTER blocks", d->name) > 0;
    }
    for (int32_t q = 0; q < g->n_params; ++q)
        if (g->params[q].kind == P_GLOBAL)
            return snprintf(why, n, "a GLOBAL parameter (%s's: one copy per cell on the CPU, one per mechanism on "
                            "the device)", g->model->mechs[g->params[q].mech].desc->name) > 0;
    return 0;
}
