/* The ions in the gradient's state (grad_ion.h; docs/gradients.md "Ions").
 *
 * The forward step (sim/cpu/step.c's order): the current phase zeroes each
 * read ion current i, and each mechanism's current() adds its ion current
 * (ica) to it, reading e, ci, co; then each state() in type order reads the
 * ions (ica summed, cai), a concentration writer stores its concentration
 * field into the ion (cai), and Nernst sets e at the nodes where the
 * concentration is written. The transposes here: a store moves the ion's
 * adjoint to the field's output and zeroes it; a summand takes the sum's
 * adjoint; an ion value read takes the derivative code's lane (ABI 8); Nernst
 * moves e's adjoint to ci and co, d e / d ci = -k / ci, d e / d co = k / co,
 * k = ktf / charge. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grad/grad_ion.h"

typedef struct gion_mech {
    int32_t live[NS_SIM_MECH_IONS_MAX];   /* per USEION: its live ion, -1 */
    int f_ci[NS_SIM_MECH_IONS_MAX], f_co[NS_SIM_MECH_IONS_MAX], f_i[NS_SIM_MECH_IONS_MAX]; /* fields, -1 */
    int writes; /* stores a live ion's concentration */
} gion_mech;

struct gion {
    int32_t n_live, n_mechs;
    int32_t live[NS_SIM_IONS_MAX];    /* the model's ion of each live one */
    int32_t live_of[NS_SIM_IONS_MAX]; /* per model ion: its live index, -1 */
    gion_mech *mech;
};

static int field_named(const ns_mech_desc *d, const char *a, const char *b) {
    char name[64];
    snprintf(name, sizeof name, "%s%s", a, b);
    for (int f = 0; f < d->n_fields; ++f)
        if (!strcmp(d->field_names[f], name)) return f;
    return -1;
}

ns_status gion_create(const sim_model *model, gion **out) {
    gion *gi = calloc(1, sizeof *gi);
    if (gi) gi->mech = calloc((size_t)model->n_mechs + 1, sizeof *gi->mech);
    if (!gi || !gi->mech) {
        free(gi);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "gradient: ions");
    }
    gi->n_mechs = model->n_mechs;
    for (int32_t j = 0; j < model->n_ions; ++j) {
        gi->live_of[j] = -1;
        if (model->ions[j].write_c || model->ions[j].read_i) gi->live_of[j] = gi->n_live, gi->live[gi->n_live++] = j;
    }
    for (int32_t k = 0; k < model->n_mechs; ++k) {
        const ns_mech_desc *d = model->mechs[k].desc;
        gion_mech *m = &gi->mech[k];
        for (int jj = 0; jj < NS_SIM_MECH_IONS_MAX; ++jj) m->live[jj] = m->f_ci[jj] = m->f_co[jj] = m->f_i[jj] = -1;
        for (int jj = 0; jj < d->n_ions && jj < NS_SIM_MECH_IONS_MAX; ++jj) {
            const unsigned f = d->ions[jj].flags;
            const int32_t L = gi->live_of[model->mechs[k].ion[jj]];
            const int32_t j = model->mechs[k].ion[jj];
            m->live[jj] = L;
            m->f_ci[jj] = L >= 0 && (f & NS_MECH_ION_WRITE_CI) ? field_named(d, d->ions[jj].name, "i") : -1;
            m->f_co[jj] = L >= 0 && (f & NS_MECH_ION_WRITE_CO) ? field_named(d, d->ions[jj].name, "o") : -1;
            m->f_i[jj] = L >= 0 && model->ions[j].read_i && (f & NS_MECH_ION_WRITE_I) ? field_named(d, "i", d->ions[jj].name)
                                                                                     : -1;
            m->writes |= m->f_ci[jj] >= 0 || m->f_co[jj] >= 0;
        }
    }
    *out = gi;
    return NS_OK;
}

void gion_free(gion *gi) {
    if (!gi) return;
    free(gi->mech);
    free(gi);
}

int32_t gion_live(const gion *gi) { return gi->n_live; }

int gion_constant(const sim_model *model, int32_t k) {
    const sim_mech *mk = &model->mechs[k];
    for (int jj = 0; jj < mk->desc->n_ions && jj < NS_SIM_MECH_IONS_MAX; ++jj) {
        const int32_t j = mk->ion[jj];
        for (int32_t q = 0; q < model->n_mechs; ++q) {
            const ns_mech_desc *d = model->mechs[q].desc;
            for (int u = 0; u < d->n_ions && u < NS_SIM_MECH_IONS_MAX; ++u)
                if (model->mechs[q].ion[u] == j &&
                    (d->ions[u].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO | NS_MECH_ION_WRITE_E)))
                    return 0;
        }
    }
    return 1;
}
int gion_writer(const gion *gi, int32_t k) { return gi->mech[k].writes; }
int gion_uses(const gion *gi, int32_t k) {
    for (int jj = 0; jj < NS_SIM_MECH_IONS_MAX; ++jj)
        if (gi->mech[k].live[jj] >= 0) return 1;
    return 0;
}

ns_status gion_refuse(const gion *gi, const sim_model *model, int32_t k) {
    const ns_mech_desc *d = model->mechs[k].desc;
    const gion_mech *m = &gi->mech[k];
    for (int jj = 0; jj < d->n_ions && jj < NS_SIM_MECH_IONS_MAX; ++jj) {
        const unsigned f = d->ions[jj].flags;
        const char *nm = d->ions[jj].name;
        if (f & NS_MECH_ION_WRITE_E)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "gradient: mechanism %s writes the reversal potential e%s: not differentiable yet "
                           "(docs/gradients.md)", d->name, nm);
        if (m->live[jj] < 0) continue;
        if (d->abi_version < 8)
            return ns_fail(NS_ERR_UNSUPPORTED,
                           "gradient: mechanism %s: its library was built for mechanism ABI %d, whose derivative "
                           "code has no lanes for the ion %s, whose values change here (rebuild the library)",
                           d->name, d->abi_version, nm);
        if (d->kind != NS_MECH_DENSITY)
            return ns_fail(NS_ERR_UNSUPPORTED, "gradient: point process %s uses the ion %s: not differentiable yet",
                           d->name, nm);
        if (((f & NS_MECH_ION_WRITE_CI) && m->f_ci[jj] < 0) || ((f & NS_MECH_ION_WRITE_CO) && m->f_co[jj] < 0))
            return ns_fail(NS_ERR_UNSUPPORTED, "gradient: mechanism %s writes a concentration of %s that is no field",
                           d->name, nm);
    }
    return NS_OK;
}

void gion_save(const gion *gi, const model_block *b, int32_t n, double *dst) {
    for (int32_t L = 0; L < gi->n_live; ++L)
        memcpy(dst + (size_t)4 * (size_t)L * (size_t)n, ns_model_block_ion(b, gi->live[L], 0), 4 * (size_t)n * sizeof *dst);
}

void gion_load(const gion *gi, model_block *b, int32_t n, const double *src) {
    for (int32_t L = 0; L < gi->n_live; ++L)
        memcpy(ns_model_block_ion_data(b, gi->live[L]), src + (size_t)4 * (size_t)L * (size_t)n,
               4 * (size_t)n * sizeof *src);
}

static double *at(double *lion, int32_t L, int q, int32_t n) { return lion + ((size_t)4 * (size_t)L + (size_t)q) * (size_t)n; }

void gion_out(const gion *gi, int32_t k, int phase, int64_t ni, const int *node, int32_t n, double *lo,
              double *lion) {
    const gion_mech *m = &gi->mech[k];
    for (int jj = 0; jj < NS_SIM_MECH_IONS_MAX; ++jj) {
        const int32_t L = m->live[jj];
        if (L < 0) continue;
        if (phase == 1 && m->f_i[jj] >= 0) {
            const double *li = at(lion, L, 3, n);
            for (int64_t i = 0; i < ni; ++i) lo[(int64_t)m->f_i[jj] * ni + i] += li[node[i]];
        }
        for (int q = 1; phase != 1 && q <= 2; ++q) {
            const int f = q == 1 ? m->f_ci[jj] : m->f_co[jj];
            if (f < 0) continue;
            double *lc = at(lion, L, q, n);
            for (int64_t i = 0; i < ni; ++i) {
                lo[(int64_t)f * ni + i] += lc[node[i]];
                lc[node[i]] = 0.0;
            }
        }
    }
}

void gion_in(const gion *gi, const sim_model *model, int32_t k, int64_t ni, const int *node, int32_t n, double *lF,
             const double *lgi, double *lion) {
    const gion_mech *m = &gi->mech[k];
    const ns_mech_desc *d = model->mechs[k].desc;
    for (int jj = 0; jj < d->n_ions && jj < NS_SIM_MECH_IONS_MAX; ++jj) {
        const int32_t L = m->live[jj];
        if (L < 0) continue;
        for (int q = 0; q < 4 && lgi; ++q) {
            const double *r = lgi + (size_t)(4 * jj + q) * (size_t)ni;
            double *l = at(lion, L, q, n);
            for (int64_t i = 0; i < ni; ++i) l[node[i]] += r[i];
        }
        for (int q = 1; q <= 2; ++q) {
            const int f = q == 1 ? m->f_ci[jj] : m->f_co[jj];
            if (f < 0) continue;
            double *l = at(lion, L, q, n), *r = lF + (int64_t)f * ni;
            for (int64_t i = 0; i < ni; ++i) {
                l[node[i]] += r[i];
                r[i] = 0.0;
            }
        }
    }
}

void gion_nernst_adj(const gion *gi, const sim_model *model, const model_block *b, int32_t k, double celsius,
                     int32_t n, const double *vals, double *lion) {
    const gion_mech *m = &gi->mech[k];
    if (!m->writes || ns_model_block_instances(b, k) == 0) return;
    const double ktf = ns_mech_ktf(celsius);
    for (int jj = 0; jj < NS_SIM_MECH_IONS_MAX; ++jj) {
        const int32_t L = m->live[jj];
        if (L < 0 || (m->f_ci[jj] < 0 && m->f_co[jj] < 0)) continue;
        const int32_t j = gi->live[L];
        const int z = model->ions[j].charge;
        const unsigned char *w = ns_model_block_ion_written(b, j);
        const double *ci = vals + ((size_t)4 * (size_t)L + 1) * (size_t)n, *co = ci + n;
        double *le = at(lion, L, 0, n), *lci = le + n, *lco = lci + n;
        for (int32_t x = 0; x < n; ++x) {
            if (!w[x]) continue;
            const double l = le[x];
            le[x] = 0.0;
            if (z == 0 || ci[x] <= 0.0 || co[x] <= 0.0) continue; /* e a constant there */
            lci[x] -= l * (ktf / z) / ci[x];
            lco[x] += l * (ktf / z) / co[x];
        }
    }
}

void gion_zero_i(const gion *gi, int32_t n, double *lion) {
    for (int32_t L = 0; L < gi->n_live; ++L) memset(at(lion, L, 3, n), 0, (size_t)n * sizeof *lion);
}
