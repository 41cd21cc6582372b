/* The GPU simulation loops' decisions (sim/cuda/policy.h): the loop of every
 * shape (its onchip preparation where it may run onchip) and the tree loop's
 * group size. */
#include <stdint.h>
#include <stdlib.h>

#include "sim/cuda/policy.h"
#include "sim/cuda/fused.h"
#include "core/error.h"

ns_status ns_gpu_choose_loops(ns_sim_t *sim, const int64_t *cells, int sms, int tree_only, int *loop,
                              ns_sim_onchip_group *oc) {
    const int model = sim->model != NULL;
    const int model_onchip = model && !tree_only && ns_sim_fused_onchip_ok(sim);
    for (int32_t k = 0; k < sim->n_shapes; ++k) {
        loop[k] = LOOP_TREE;
        if (model && !model_onchip && sim->method == NS_HINES_ONCHIP)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "simulation: the onchip loop runs a model of the built-in pas and hh (fused: "
                           "docs/simulation.md, \"Models: the fused loop\") without a network; this one %s: method "
                           "'tree' or 'auto'",
                           tree_only ? "has a network" : "needs the tree loop (other mechanisms, a concentration "
                                                         "writer or gpu_mechanisms = per-step)");
        if (cells[k] == 0 || sim->method == NS_HINES_TREE || (model && !model_onchip)) continue;
        if (sim->method == NS_HINES_AUTO && !ns_sim_auto_needs_onchip(cells[k], sms)) continue;
        int fits = 0;
        ns_status st = ns_sim_onchip_prepare(&sim->shapes[k], sim->options.gpu_lanes, &oc[k], &fits);
        if (st != NS_OK) return st;
        if (sim->method == NS_HINES_ONCHIP) {
            if (!fits || (model && !oc[k].launch.in_shared))
                return ns_fail(NS_ERR_UNSUPPORTED,
                               "simulation: a cell of %d compartments is beyond the onchip loop's %s (use 'tree')",
                               (int)sim->shapes[k].n, fits ? "shared memory (a model runs there only)" : "schedule");
            loop[k] = LOOP_ONCHIP;
            continue;
        }
        const ns_sim_loop_facts f = {cells[k], sms, fits, fits && oc[k].launch.in_shared,
                                     fits ? oc[k].plan.bwd_cost + oc[k].plan.fwd_cost : INT64_MAX, model,
                                     model_onchip};
        loop[k] = ns_sim_auto_loop(&f);
        if (loop[k] != LOOP_ONCHIP) ns_sim_onchip_release(&oc[k]);
    }
    return NS_OK;
}

/* Small groups of the tree loop that the greedy packing (consecutive cells
 * while their nodes fit `cap` and the group has < NS_SIM_TREE_THREADS
 * cells; ns_contract_layout_create) makes; a cell above cap is a group of its
 * own of another class. */
static int64_t tree_small_groups(const ns_sim_t *sim, const int64_t *cell_id, int64_t cells, int64_t cap) {
    int64_t groups = 0, nodes = 0, in_group = 0;
    int open = 0;
    for (int64_t j = 0; j < cells; ++j) {
        const int32_t n = sim->shapes[sim->cell_shape[cell_id[j]]].n;
        if (n > cap) {
            open = 0;
            continue;
        }
        if (open && nodes + n <= cap && in_group < NS_SIM_TREE_THREADS) {
            nodes += n, ++in_group;
            continue;
        }
        ++groups, nodes = n, in_group = 1, open = 1;
    }
    return groups;
}

/* The most nodes per small group of the tree loop. The rule: the
 * population's nodes spread over the `slots` blocks the GPU runs at once,
 * at most TREE_GROUP_NODES; and where that packing leaves a partial second
 * wave (slots < groups <= 2 slots) of small cells (at most half the cap),
 * the least cap up to group_max that packs them into one wave: a greedy
 * group then holds more than cap - largest nodes, so ceil(total / slots) +
 * largest - 1 makes at most `slots` groups. The few groups of a partial wave
 * run at the latency of a full one. Measured (bench/README.md at 01b826c,
 * "The tree loop's groups"): one wave instead of a partial second one
 * speeds up a busyring population of 10,000 small cells; a rule that
 * filled whole waves everywhere (bigger groups for many waves and for
 * mixed sizes) was slower on ca1_h10 x 10,000 and the bundled mixed
 * population, so it applies only to the partial second wave. */
int32_t ns_gpu_tree_group_cap(const ns_sim_t *sim, const int64_t *cell_id, int64_t cells, int32_t shared_nodes,
                              int32_t group_max, int64_t slots) {
    int64_t total = 0;
    for (int64_t j = 0; j < cells; ++j) {
        const int32_t n = sim->shapes[sim->cell_shape[cell_id[j]]].n;
        if (n <= shared_nodes) total += n;
    }
    int64_t cap = (total + slots - 1) / slots;
    if (cap > TREE_GROUP_NODES) cap = TREE_GROUP_NODES;
    if (cap < 1) cap = 1;
    const int64_t groups = tree_small_groups(sim, cell_id, cells, cap);
    if (groups <= slots || groups > 2 * slots) return (int32_t)cap;
    int64_t small = 0;
    int32_t largest = 1;
    for (int64_t j = 0; j < cells; ++j) {
        const int32_t n = sim->shapes[sim->cell_shape[cell_id[j]]].n;
        if (n > cap) continue;
        small += n;
        if (n > largest) largest = n;
    }
    if (2 * (int64_t)largest > cap) return (int32_t)cap;
    const int64_t one_wave = (small + slots - 1) / slots + largest - 1;
    if (one_wave <= group_max && tree_small_groups(sim, cell_id, cells, one_wave) <= slots) return (int32_t)one_wave;
    return (int32_t)cap;
}
