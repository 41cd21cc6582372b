/* The onchip simulation loop's per-shape preparation (host): the on-chip
 * schedule, the shape's constants packed in position order, and the lanes
 * per cell and warps per block (docs/simulation.md, "GPU loops"). */
#include <stdlib.h>
#include <string.h>

#include "sim/cuda/step.h"
#include "core/cuda_check.h"
#include "core/error.h"

void ns_sim_onchip_release(ns_sim_onchip_group *o) {
    if (!o) return;
    ns_onchip_plan_free(&o->plan);
    cudaFree(o->plan_dev);
    cudaFree(o->consts_dev);
    cudaFree(o->sets_dev[0]);
    cudaFree(o->sets_dev[1]);
    cudaFree(o->local_dev);
    memset(o, 0, sizeof *o);
}

/* Bytes before the parents in the constants: a, b, cap and the mechanisms' map. */
static size_t map_end(int32_t n) { return 3 * (size_t)n * sizeof(double) + 2 * (size_t)n * sizeof(uint16_t); }

/* Pack the constants of ns_sim_onchip_const_bytes into buf (zeroed, that
 * size); the map stays NS_SIM_ONCHIP_NONE until ns_sim_onchip_set_map. */
static void pack_constants(const sim_shape *sh, const int32_t *pos, const int32_t *node_of_pos, char *buf) {
    const int32_t n = sh->n;
    double *a = (double *)buf, *b = a + n, *cap = b + n;
    memset(cap + n, 0xFF, 2 * (size_t)n * sizeof(uint16_t));
    int32_t *par = (int32_t *)(buf + map_end(n)), *child_begin = par + n, *child = child_begin + n + 1;
    int8_t *region = (int8_t *)(child + (n > 1 ? n - 1 : 1));
    for (int32_t p = 0; p < n; ++p) {
        const int32_t i = node_of_pos[p];
        a[p] = sh->a[i];
        b[p] = sh->b[i];
        cap[p] = sh->cap[i];
        region[p] = sh->region[i];
        par[p] = i == 0 ? -1 : pos[sh->parent[i]];
        child_begin[p + 1] = 0;
    }
    /* children of each position, counted, then placed in increasing
     * compartment order (the order of the CPU loop's scatter): child_begin[q]
     * serves as the cursor of position q - 1 while placing, then shifts back */
    child_begin[0] = 0;
    for (int32_t i = 1; i < n; ++i) child_begin[pos[sh->parent[i]] + 1]++;
    for (int32_t p = 0; p < n; ++p) child_begin[p + 1] += child_begin[p];
    for (int32_t i = 1; i < n; ++i) child[child_begin[pos[sh->parent[i]]]++] = pos[i];
    for (int32_t p = n; p > 0; --p) child_begin[p] = child_begin[p - 1];
    child_begin[0] = 0;
}

/* Warps per block for `lanes`: the most resident cells per SM, the fewer
 * warps per block on a tie. *resident receives resident warps per SM. */
static ns_status choose_warps(const ns_onchip_plan *p, int32_t const_words, size_t optin, int *warps,
                              int *resident) {
    const int32_t core = (int32_t)p->pos_of_node;
    *warps = 1;
    *resident = 0;
    for (int w = 1; w <= 16; ++w) {
        const size_t bytes = ns_sim_onchip_block_bytes(p->n, p->lanes, core, const_words, w);
        if (bytes + NS_SIM_ONCHIP_STATIC_BYTES > optin) break;
        int blocks = 0;
        NS_CUDA_TRY(ns_sim_onchip_occupancy(p->lanes, w, bytes, &blocks));
        if (blocks * w > *resident) {
            *resident = blocks * w;
            *warps = w;
        }
    }
    return NS_OK;
}

/* Lanes per cell when the caller leaves it open: measured on an H200
 * (docs/simulation.md, "GPU loops"). */
static int32_t default_lanes(int32_t n) { return n <= 128 ? 8 : 32; }

ns_status ns_sim_onchip_set_map(ns_sim_onchip_group *o, const uint16_t *map) {
    const int32_t n = (int32_t)o->plan.n;
    NS_CUDA_TRY(cudaMemcpy((char *)o->consts_dev + 3 * (size_t)n * sizeof(double), map,
                           2 * (size_t)n * sizeof *map, cudaMemcpyHostToDevice));
    return NS_OK;
}

ns_status ns_sim_onchip_prepare(const sim_shape *sh, int32_t lanes, ns_sim_onchip_group *o, int *fits) {
    memset(o, 0, sizeof *o);
    *fits = 0;
    const int32_t n = sh->n;
    if (n > NS_ONCHIP_MAX_N) return NS_OK; /* the schedule's 16-bit fields */
    int dev = 0, optin_i = 0;
    NS_CUDA_TRY(cudaGetDevice(&dev));
    NS_CUDA_TRY(cudaDeviceGetAttribute(&optin_i, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    const size_t optin = (size_t)optin_i;
    /* The kernels' allowance is the device's whole opt-in (it bounds, and
     * does not set, a launch's shared memory): groups of any size can then
     * launch concurrently without changing it in between. */
    for (int32_t L = 1; L <= NS_ONCHIP_LANES; L *= 2)
        NS_CUDA_TRY(ns_sim_onchip_setup(L, optin));
    const size_t const_bytes = ns_sim_onchip_const_bytes(n);
    const int32_t const_words = (int32_t)(const_bytes / 16);
    ns_status st = NS_OK;
    char *buf = NULL;
    /* the wanted lane count first, then more lanes (fewer cells per warp) */
    for (int32_t L = lanes > 0 ? lanes : default_lanes(n); L <= NS_ONCHIP_LANES; L *= 2) {
        ns_onchip_plan plan;
        if ((st = ns_onchip_plan_build(n, sh->parent, L, &plan)) != NS_OK) return st;
        int warps = 0, resident = 0;
        st = choose_warps(&plan, const_words, optin, &warps, &resident);
        if (st != NS_OK || resident == 0) {
            ns_onchip_plan_free(&plan);
            if (st != NS_OK) return st;
            continue;
        }
        o->plan = plan;
        o->launch.warps = warps;
        o->launch.const_words = const_words;
        o->launch.in_shared = 1;
        break;
    }
    if (!o->plan.data) { /* no image fits a block: the tree loop runs the shape */
        *fits = 1;
        return NS_OK;
    }
    const ns_onchip_plan *p = &o->plan;
    NS_CUDA_GOTO(cudaMalloc((void **)&o->plan_dev, p->count * sizeof(int32_t)), st, fail);
    NS_CUDA_GOTO(cudaMemcpy(o->plan_dev, p->data, p->count * sizeof(int32_t), cudaMemcpyHostToDevice), st, fail);
    ns_onchip_plan_bind(p, o->plan_dev, &o->sched);
    buf = calloc(const_bytes, 1);
    if (!buf) {
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "simulation: onchip constants");
        goto fail;
    }
    pack_constants(sh, p->data + p->pos_of_node, p->data + p->node_of_pos, buf);
    NS_CUDA_GOTO(cudaMalloc(&o->consts_dev, const_bytes), st, fail);
    NS_CUDA_GOTO(cudaMemcpy(o->consts_dev, buf, const_bytes, cudaMemcpyHostToDevice), st, fail);
    o->launch.consts = o->consts_dev;
    free(buf);
    *fits = 1;
    return NS_OK;
fail:
    free(buf);
    ns_sim_onchip_release(o);
    return st;
}
