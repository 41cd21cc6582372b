/* The gradient's parameters (docs/gradients.md, "Use"): ns_grad_add_param's
 * selections (all, a region, a section, a compartment; a mechanism's RANGE
 * PARAMETER or GLOBAL, cm, Ra, v_init, a synapse's weight or parameter), their
 * values set and read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grad/grad_impl.h"
#include "grad/grad_events.h"
#include "mech/blocks.h"
#include "sim/sim_impl.h"
#include "neurosolve/grad.h"

static int region_selects(const char *where, int8_t region) {
    if (!strcmp(where, "all")) return region >= 0;
    if (!strcmp(where, "dend")) return region == NS_REGION_BASAL || region == NS_REGION_APICAL;
    return region >= 0 && !strcmp(where, ns_region_name((ns_region)region));
}
static int is_region(const char *where) {
    if (!strcmp(where, "all") || !strcmp(where, "dend")) return 1;
    for (int r = 0; r < NS_REGION_COUNT; ++r)
        if (!strcmp(where, ns_region_name((ns_region)r))) return 1;
    return 0;
}

static ns_status push_param(ns_grad_t *g, gparam *p, const char *name, int32_t *index) {
    if (g->n_params == g->cap_params) {
        const int32_t cap = g->cap_params ? 2 * g->cap_params : 8;
        gparam *np = realloc(g->params, (size_t)cap * sizeof *np);
        if (!np) {
            free(p->on);
            return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient parameter %s", name);
        }
        g->params = np;
        g->cap_params = cap;
    }
    g->params[g->n_params] = *p;
    if (index) *index = g->n_params;
    g->n_params++;
    return NS_OK;
}

ns_status ns_grad_add_param(ns_grad_t *g, int64_t cell, const char *where, const char *name, int32_t *index) {
    if (!g || !where || !name)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_add_param: grad, where and name must not be NULL");
    if (cell < 0 || cell >= g->n_cells)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "gradient parameter %s: cell %lld of %lld", name, (long long)cell,
                       (long long)g->n_cells);
    const ns_sim_t *sim = g->sim;
    const gcell *gc = &g->cells[cell];
    const sim_shape *s = &sim->shapes[gc->shape];
    gparam p = {cell, P_FIELD, -1, -1, NULL, 0, 0.0};
    ns_status ne = gev_add_param(g->ev, cell, where, name, &p.field); /* weight, a synapse type's parameter */
    if (ne) return ne;
    if (p.field >= 0) {
        p.kind = P_NET;
        return push_param(g, &p, name, index);
    }
    if (!strcmp(name, "cm")) p.kind = P_CM;
    else if (!strcmp(name, "Ra")) p.kind = P_RA;
    else if (!strcmp(name, "v_init")) p.kind = P_VINIT;
    else {
        for (int32_t k = 0; k < g->model->n_mechs && p.mech < 0; ++k) {
            const ns_mech_desc *d = g->model->mechs[k].desc;
            const size_t ln = strlen(name), lm = strlen(d->name);
            if (ln < lm + 2 || name[ln - lm - 1] != '_' || strcmp(name + ln - lm, d->name)) continue;
            for (int f = 0; f < d->n_params; ++f)
                if (strlen(d->field_names[f]) == ln - lm - 1 && !strncmp(name, d->field_names[f], ln - lm - 1)) {
                    p.mech = k;
                    p.field = f;
                }
            if (p.mech < 0) {
                /* usetable_MECH: the TABLE's switch (a GLOBAL named usetable_<block> in the descriptor) */
                if (!strncmp(name, "usetable_", 9))
                    return ns_fail(NS_ERR_UNSUPPORTED,
                                   "gradient parameter %s: the TABLE's switch, not differentiable (docs/gradients.md)",
                                   name);
                for (int q = 0; q < d->n_globals; ++q)
                    if (strlen(d->global_names[q]) == ln - lm - 1 && !strncmp(name, d->global_names[q], ln - lm - 1)) {
                        p.kind = P_GLOBAL;
                        p.mech = k;
                        p.field = q;
                    }
                if (p.kind == P_GLOBAL) break;
                return ns_fail(NS_ERR_INVALID_ARGUMENT,
                               "gradient parameter %s: %s has no RANGE PARAMETER nor GLOBAL of that name", name,
                               d->name);
            }
        }
        if (p.mech < 0)
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "gradient parameter %s: not cm, Ra, v_init nor NAME_MECH of a mechanism the model inserts",
                           name);
    }
    const int per_cell = p.kind == P_RA || p.kind == P_VINIT || p.kind == P_GLOBAL;
    if (per_cell && strcmp(where, "all"))
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient parameter %s at %s: %s is one value per cell (where = all)", name,
                       where, name);
    p.on = calloc((size_t)gc->n, 1);
    if (!p.on) return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient parameter %s", name);
    int any = 0;
    if (is_region(where)) {
        for (int32_t i = 0; i < gc->n; ++i) any |= p.on[i] = (unsigned char)region_selects(where, s->region[i]);
    } else {
        ns_location loc;
        ns_status e = ns_location_parse(where, &loc);
        if (e == NS_OK && loc.kind == NS_LOCATION_SECTION && !loc.has_x) {
            for (int32_t i = 0; i < gc->n; ++i)
                any |= p.on[i] = (unsigned char)(s->section[i] == loc.index && s->region[i] >= 0);
        } else if (e == NS_OK && loc.kind == NS_LOCATION_COMPARTMENT) {
            if (loc.index >= 0 && loc.index < gc->n && s->region[loc.index] >= 0) any = p.on[loc.index] = 1;
        } else {
            free(p.on);
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "gradient parameter %s at %s: where is a region (soma, axon, basal, apical, other, dend, "
                           "all), sec:K or cN",
                           name, where);
        }
    }
    if (p.kind == P_FIELD && any) {
        any = 0;
        const int *node = ns_model_block_node_index(gc->mb, p.mech);
        for (int64_t i = 0; i < ns_model_block_instances(gc->mb, p.mech); ++i) any |= p.on[node[i]];
    }
    if (!any && !per_cell) {
        free(p.on);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "gradient parameter %s at %s: no compartment of cell %lld%s", name,
                       where, (long long)cell, p.kind == P_FIELD ? " where the mechanism is inserted" : " with membrane");
    }
    if (p.kind == P_GLOBAL && g->backend == NS_BACKEND_CUDA) {
        free(p.on);
        return ns_fail(NS_ERR_UNSUPPORTED, "gradient parameter %s on the GPU: a GLOBAL (one copy per mechanism on the "
                       "device; docs/gradients.md, \"On the GPU\")", name);
    }
    if (p.kind == P_GLOBAL) g->gwant[g->goff[p.mech] + p.field] = 1;
    return push_param(g, &p, name, index);
}

ns_status ns_grad_set_param(ns_grad_t *g, int32_t index, double value) {
    if (!g || index < 0 || index >= g->n_params)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_set_param: parameter %d of %d", index, g ? g->n_params : 0);
    if (!isfinite(value)) return ns_fail(NS_ERR_NOT_FINITE, "ns_grad_set_param: parameter %d: value not finite", index);
    const int kind = g->params[index].kind;
    if ((kind == P_CM && value < 0) || (kind == P_RA && value <= 0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_set_param: %s = %g out of range", kind == P_CM ? "cm" : "Ra",
                       value);
    g->params[index].value = value;
    g->params[index].set = 1;
    if (kind == P_NET) gev_set_param(g->ev, g->params[index].field, value);
    return NS_OK;
}

ns_status ns_grad_get_param(const ns_grad_t *g, int32_t index, double *value) {
    if (!g || !value || index < 0 || index >= g->n_params)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_grad_get_param: parameter %d of %d", index, g ? g->n_params : 0);
    const gparam *p = &g->params[index];
    if (p->set) {
        *value = p->value;
        return NS_OK;
    }
    const gcell *gc = &g->cells[p->cell];
    const sim_shape *s = &g->sim->shapes[gc->shape];
    switch (p->kind) {
    case P_RA: *value = g->sim->params.Ra; return NS_OK;
    case P_VINIT: *value = g->sim->params.v_init; return NS_OK;
    case P_GLOBAL: *value = g->model->mechs[p->mech].globals[p->field]; return NS_OK;
    case P_NET: *value = gev_get_param(g->ev, p->field); return NS_OK;
    case P_CM:
        for (int32_t i = 0; i < gc->n; ++i)
            if (p->on[i]) {
                *value = s->cap[i] / ns_sim_cap_factor(g->sim);
                return NS_OK;
            }
        break;
    default: {
        const sim_mech_shape *ms = &g->model->per_shape[(size_t)gc->shape * g->model->n_mechs + p->mech];
        for (int32_t i = 0; i < ms->n; ++i)
            if (p->on[ms->node[i]]) {
                *value = ms->param[(int64_t)p->field * ms->n + i];
                return NS_OK;
            }
    }
    }
    return ns_fail(NS_ERR_INTERNAL, "ns_grad_get_param: parameter %d selects nothing", index);
}
