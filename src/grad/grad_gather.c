/* A node_index block's values gathered for its derivative code's contiguous
 * loop (grad_gather.h, docs/gradients.md "Cost"). */
#include <string.h>

#include "grad/grad_gather.h"

enum { G_LV, G_V, G_AREA, G_DIAM, G_ION };

size_t ggather_doubles(int64_t max_ni, int max_ions) { return (size_t)max_ni * (size_t)(G_ION + 4 * max_ions); }

double *ggather(double *gat, ns_mech_ion_view *gview, ns_mech_ppack *pk, const ns_mech_desc *d, int keep) {
    const int64_t ni = pk->n;
    const int *node = pk->node_index;
    double *lv = gat + G_LV * ni, *v = gat + G_V * ni;
    memset(lv, 0, (size_t)ni * sizeof *lv);
    for (int64_t i = 0; i < ni; ++i) v[i] = pk->v[node[i]];
    double *area = pk->area ? gat + G_AREA * ni : NULL, *diam = pk->diam ? gat + G_DIAM * ni : NULL;
    for (int64_t i = 0; area && !keep && i < ni; ++i) area[i] = pk->area[node[i]];
    for (int64_t i = 0; diam && !keep && i < ni; ++i) diam[i] = pk->diam[node[i]];
    /* the ion values the derivative code reads (nmodl_diff.c's copies: those the mechanism reads or
     * whose concentration it writes; never didv) */
    enum { RD_E = NS_MECH_ION_READ_E | NS_MECH_ION_WRITE_E, RD_CI = NS_MECH_ION_READ_CI | NS_MECH_ION_WRITE_CI,
           RD_CO = NS_MECH_ION_READ_CO | NS_MECH_ION_WRITE_CO };
    for (int u = 0; u < d->n_ions; ++u) {
        const ns_mech_ion_view *iv = &pk->ion[u];
        const unsigned fl = d->ions[u].flags;
        const int *ix = iv->index ? iv->index : node;
        double *const src[4] = {fl & RD_E ? iv->e : NULL, fl & RD_CI ? iv->ci : NULL, fl & RD_CO ? iv->co : NULL,
                                fl & NS_MECH_ION_READ_I ? iv->i : NULL};
        ns_mech_ion_view *gv = &gview[u];
        double **dst[4] = {&gv->e, &gv->ci, &gv->co, &gv->i};
        for (int w = 0; w < 4; ++w) {
            double *to = *dst[w] = src[w] ? gat + (G_ION + 4 * u + w) * ni : NULL;
            for (int64_t i = 0; to && !(keep > 1 && w < 3) && i < ni; ++i) to[i] = src[w][ix[i]];
        }
        gv->didv = NULL;
        gv->index = NULL;
    }
    pk->v = v;
    pk->area = area;
    pk->diam = diam;
    pk->ion = d->n_ions ? gview : pk->ion;
    pk->node_index = NULL;
    pk->node_begin = 0;
    return lv;
}

