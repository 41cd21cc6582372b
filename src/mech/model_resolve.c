/* A model resolved per node of each shape (model_impl.h's tables that the loops instantiate):
 * NEURON's type order, the parameters' values from their expressions, the ions and their initial
 * values, the FUNCTION_TABLEs; and the lookup of a variable by name. docs/simulation.md, "Models". */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mech/builtin/builtin.h"
#include "mech/model_build.h"
#include "core/error.h"

/* ------------------------------------------------------------ resolution */

void ns_sim_model_free(sim_model *m) {
    if (!m) return;
    for (int32_t k = 0; k < m->n_mechs; ++k) free(m->mechs[k].globals);
    if (m->per_shape)
        for (int64_t q = 0; q < (int64_t)m->n_shapes * m->n_mechs; ++q) {
            free(m->per_shape[q].node);
            free(m->per_shape[q].param);
        }
    if (m->ion_init)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->ion_init[s]);
    if (m->written)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->written[s]);
    if (m->geom)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->geom[s]);
    free(m->geom);
    for (int32_t s = 0; s < m->n_shapes && m->ldx && m->lpar; ++s) free(m->ldx[s]), free(m->lpar[s]);
    free(m->ldx);
    free(m->lpar);
    if (m->cm)
        for (int32_t s = 0; s < m->n_shapes; ++s) free(m->cm[s]);
    free(m->cm);
    free(m->ion_init);
    free(m->written);
    free(m->per_shape);
    free(m->mechs);
    for (int k = 0; m->ftables && k < m->n_descs; ++k) {
        for (int j = 0; m->ftables[k] && j < m->descs[k]->n_ftables; ++j) free((void *)m->ftables[k][j].values);
        free(m->ftables[k]);
    }
    free(m->ftables);
    free(m->descs);
    free(m);
}

/* NEURON's type order (memb_order_, NEURON 9.0.2): pas (type 4), then every
 * mechanism that writes an ion's concentration (WRITE xi or xo: nocmodl's
 * nrn_writes_conc), then [IClamp 7], ExpSyn (9), Exp2Syn (10), hh (17)
 * (h.MechanismType's internal_type()), then the library's other mechanisms
 * in catalogue order (file names, nrnivmodl's registration order). NEURON's
 * nrn_writes_conc puts each writer right after the ions (types 6 on, after
 * pas and extracellular) as it registers, so the writers run in reverse
 * registration order. One key per catalogue entry `desc` of `n_lib`; the
 * writers' keys are 1..n_lib, those of the rest above them. */
static int type_rank(const char *name) {
    static const char *const builtin[] = {"pas", "ExpSyn", "Exp2Syn", "hh"};
    for (int k = 0; k < 4; ++k)
        if (strcmp(name, builtin[k]) == 0) return k;
    return 4;
}

static int writes_concentration(const ns_mech_desc *d) {
    for (int j = 0; j < d->n_ions; ++j)
        if (d->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO)) return 1;
    return 0;
}

static int32_t key_of(const ns_mech_desc *d, int32_t desc, int32_t n_lib) {
    const int rank = type_rank(d->name);
    if (rank == 0) return 0;
    if (writes_concentration(d)) return 1 + (n_lib - 1 - desc);
    return n_lib + (rank < 4 ? rank : 4 + desc);
}

int32_t ns_sim_model_key(const sim_model *m, int32_t desc) { return key_of(m->descs[desc], desc, m->n_descs); }

int32_t ns_sim_model_find(const sim_model *m, const char *name) {
    for (int32_t k = 0; k < m->n_descs; ++k)
        if (strcmp(m->descs[k]->name, name) == 0) return k;
    return -1;
}

/* NEURON's ion defaults (na_ion, k_ion, ca_ion at 6.3 degC): e, ci, co; the
 * charge. 0: no defaults. */
static int ion_defaults(const char *name, double v[3], int *charge) {
    if (strcmp(name, "na") == 0) { v[0] = 50.0; v[1] = 10.0; v[2] = 140.0; *charge = 1; return 1; }
    if (strcmp(name, "k") == 0) { v[0] = -77.0; v[1] = 54.4; v[2] = 2.5; *charge = 1; return 1; }
    if (strcmp(name, "ca") == 0) { v[0] = 132.4579341637009; v[1] = 5e-5; v[2] = 2.0; *charge = 2; return 1; }
    return 0;
}

/* Path distance [um] of every node from the root section's middle. */
static ns_status distances(const ns_cell_t *cell, int32_t k, double *dist) {
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    const int32_t ns = info.sections, n = info.compartments;
    double *start = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *start);
    ns_section_info *sec = malloc((size_t)(ns > 0 ? ns : 1) * sizeof *sec);
    if (!start || !sec) {
        free(start);
        free(sec);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "shape %d: distances", (int)k);
    }
    ns_status st = NS_OK;
    for (int32_t s = 0; s < ns && st == NS_OK; ++s) st = ns_cell_get_section(cell, s, &sec[s]);
    /* sections are numbered parents first (Import3d's order): one pass */
    for (int32_t s = 0; s < ns && st == NS_OK; ++s) {
        const int32_t p = sec[s].parent;
        if (p < 0) start[s] = 0.0;
        else if (p >= s) st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: section %d before its parent", (int)k, (int)s);
        else start[s] = sec[p].parent < 0 ? fabs(sec[s].parent_x - 0.5) * sec[p].length
                                            : start[p] + sec[s].parent_x * sec[p].length;
    }
    const int32_t *secn = ns_cell_section(cell);
    const double *x = ns_cell_position(cell);
    for (int32_t i = 0; i < n && st == NS_OK; ++i) {
        const int32_t s = secn[i];
        dist[i] = sec[s].parent < 0 ? fabs(x[i] - 0.5) * sec[s].length : start[s] + x[i] * sec[s].length;
    }
    free(start);
    free(sec);
    return st;
}

static int find_ion(sim_model *r, const char *name) {
    for (int32_t j = 0; j < r->n_ions; ++j)
        if (strcmp(r->ions[j].name, name) == 0) return j;
    return -1;
}

/* The model of shape k: shape_models[k], or `model` where that is NULL. */
static const ns_sim_model_t *model_of_shape(const ns_sim_model_t *model, const ns_sim_model_t *const *shape_models,
                                            int32_t k) {
    return shape_models && shape_models[k] ? shape_models[k] : model;
}

ns_status ns_sim_model_ftables_given(const sim_model *r, int32_t desc) {
    const ns_mech_desc *d = r->descs[desc];
    for (int j = 0; j < d->n_ftables; ++j)
        if (!r->ftables || !r->ftables[desc] || !r->ftables[desc][j].values)
            return ns_fail(NS_ERR_INVALID_ARGUMENT,
                           "model: mechanism %s: FUNCTION_TABLE %s has no values: give them with "
                           "ns_sim_model_set_function_table(model, \"%s_%s\", ...) (NEURON: hoc's table_%s_%s)",
                           d->name, d->ftable_names[j], d->ftable_names[j], d->name, d->ftable_names[j], d->name);
    return NS_OK;
}

/* The mechanisms that any of the models (uniq[0 .. n_uniq), one catalogue) inserts anywhere, in
 * NEURON's type order (r->mechs; lib_to: catalogue entry -> its index, -1 none), with their GLOBALs'
 * defaults (gset[m]: per GLOBAL, the statement that set it: none yet) and the ions they use. */
static ns_status mechanisms_of(sim_model *r, const ns_sim_model_t *const *uniq, int32_t n_uniq, int *lib_to,
                               const stmt ***gset) {
    const ns_sim_model_t *const first = uniq[0];
    const int n_lib = first->n_descs;
    ns_status st = NS_OK;
    /* the mechanisms inserted anywhere by any model, in NEURON's type order */
    for (int k = 0; k < n_lib; ++k) lib_to[k] = -1;
    int n_used = 0;
    for (int32_t u = 0; u < n_uniq; ++u)
        for (int q = 0; q < uniq[u]->n; ++q)
            if (uniq[u]->stmts[q].kind == ST_INSERT && lib_to[uniq[u]->stmts[q].mech] == -1) {
                lib_to[uniq[u]->stmts[q].mech] = 0;
                ++n_used;
            }
    r->mechs = calloc((size_t)(n_used > 0 ? n_used : 1), sizeof *r->mechs);
    if (!r->mechs) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    /* by key (the keys are distinct); IClamp follows pas and the writers */
    for (int32_t last = -1; st == NS_OK;) {
        int next = -1;
        for (int k = 0; k < n_lib; ++k)
            if (lib_to[k] >= 0 && key_of(first->descs[k], k, n_lib) > last &&
                (next < 0 || key_of(first->descs[k], k, n_lib) < key_of(first->descs[next], next, n_lib)))
                next = k;
        if (next < 0) break;
        last = key_of(first->descs[next], next, n_lib);
        lib_to[next] = r->n_mechs;
        r->mechs[r->n_mechs].key = last;
        r->mechs[r->n_mechs].ftable = r->ftables ? r->ftables[next] : NULL;
        if (st == NS_OK) st = ns_sim_model_ftables_given(r, next);
        r->mechs[r->n_mechs++].desc = first->descs[next];
        if (last <= n_lib) r->n_before_clamp = r->n_mechs;
    }
    /* ions and globals */
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        sim_mech *sm = &r->mechs[m];
        const ns_mech_desc *d = sm->desc;
        if (d->n_ions > NS_SIM_MECH_IONS_MAX) {
            st = ns_fail(NS_ERR_UNSUPPORTED, "model: %s uses %d ions (at most %d)", d->name, d->n_ions,
                         NS_SIM_MECH_IONS_MAX);
            break;
        }
        sm->globals = malloc((size_t)(d->n_globals > 0 ? d->n_globals : 1) * sizeof(double));
        gset[m] = calloc((size_t)(d->n_globals > 0 ? d->n_globals : 1), sizeof *gset[m]);
        if (!sm->globals || !gset[m]) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
            break;
        }
        for (int g = 0; g < d->n_globals; ++g) sm->globals[g] = d->global_defaults[g];
        for (int j = 0; j < d->n_ions; ++j) {
            int ion = find_ion(r, d->ions[j].name);
            if (ion < 0) {
                if (r->n_ions == NS_SIM_IONS_MAX) {
                    st = ns_fail(NS_ERR_UNSUPPORTED, "model: more than %d ions", NS_SIM_IONS_MAX);
                    break;
                }
                ion = r->n_ions++;
                snprintf(r->ions[ion].name, sizeof r->ions[ion].name, "%s", d->ions[j].name);
                r->ions[ion].charge = d->ions[j].charge;
            }
            sm->ion[j] = ion;
            if (d->ions[j].flags & NS_MECH_ION_READ_I) r->ions[ion].read_i = 1;
            if (d->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO)) {
                r->ions[ion].write_c = 1;
                sm->writes_c = 1;
            }
        }
    }
    return st;
}

/* The ions of shape k's nodes (n of them; ins[i * nm + m]: mechanism m inserted at node i;
 * ion_set, user_e: what the model gave, by node and ion): e by Nernst (written) where a mechanism
 * inserted there writes the concentration, unless eX_fixed; refused: an eX given there, and an
 * ion without values where a mechanism uses it. */
static ns_status ions_of_shape(sim_model *r, const ns_sim_model_t *mdl, int32_t k, int32_t n, size_t nm,
                               const unsigned char *ins, const unsigned char *ion_set, const int32_t *user_e,
                               unsigned char *written) {
    ns_status st = NS_OK;
    /* where a mechanism inserted at a node writes an ion's concentration,
     * e follows by Nernst there (NEURON's ion style, per section) */
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        const ns_mech_desc *d = r->mechs[m].desc;
        for (int j = 0; j < d->n_ions; ++j)
            if (d->ions[j].flags & (NS_MECH_ION_WRITE_CI | NS_MECH_ION_WRITE_CO))
                for (int32_t i = 0; i < n; ++i)
                    if (ins[(size_t)i * nm + m]) written[(size_t)r->mechs[m].ion[j] * n + i] = 1;
    }
    /* where one reads it (READ nai), at finitialize too (NEURON's nrn_promote: a concentration read
     * makes e computed, einit; eion.cpp), unless a mechanism there writes e */
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        const ns_mech_desc *d = r->mechs[m].desc;
        for (int j = 0; j < d->n_ions; ++j) {
            if (!(d->ions[j].flags & (NS_MECH_ION_READ_CI | NS_MECH_ION_READ_CO))) continue;
            const int ion = r->mechs[m].ion[j];
            for (int32_t i = 0; i < n; ++i) {
                if (!ins[(size_t)i * nm + m]) continue;
                int we = 0;
                for (int32_t q = 0; q < r->n_mechs && !we; ++q)
                    for (int u = 0; ins[(size_t)i * nm + q] && u < r->mechs[q].desc->n_ions; ++u)
                        we |= r->mechs[q].ion[u] == ion && (r->mechs[q].desc->ions[u].flags & NS_MECH_ION_WRITE_E);
                if (!we && !written[(size_t)ion * n + i]) written[(size_t)ion * n + i] = r->ions[ion].einit = 1;
            }
        }
    }
    /* eX_fixed keeps e (and the need for it) where the concentration is written */
    for (int32_t j = 0; j < r->n_ions && st == NS_OK; ++j)
        for (int32_t i = 0; i < n; ++i)
            if (user_e[(size_t)i * r->n_ions + j] < 0) written[(size_t)j * n + i] = 0;
    /* an eX there would be overwritten (NEURON does so silently): refused */
    for (int32_t j = 0; j < r->n_ions && st == NS_OK; ++j)
        for (int32_t i = 0; i < n; ++i)
            if (written[(size_t)j * n + i] && user_e[(size_t)i * r->n_ions + j] > 0) {
                const stmt *s = &mdl->stmts[user_e[(size_t)i * r->n_ions + j] - 1];
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "shape %d: %s: %s: at compartment %d a mechanism writes or reads the concentration of %s, "
                             "so e%s follows from %si and %so by Nernst there (set those)",
                             (int)k, s->where, s->text, (int)i, r->ions[j].name, r->ions[j].name,
                             r->ions[j].name, r->ions[j].name);
                break;
            }
    /* every ion a mechanism uses has values where it is used: a default
     * ion (na, k, ca), or values the model gives (e where no mechanism
     * writes the concentrations; ci and co where one does) */
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        const ns_mech_desc *d = r->mechs[m].desc;
        for (int j = 0; j < d->n_ions && st == NS_OK; ++j) {
            const int ion = r->mechs[m].ion[j];
            for (int32_t i = 0; i < n; ++i) {
                const int w = written[(size_t)ion * n + i];
                const unsigned need = w ? 6u : 1u;
                if (ins[(size_t)i * nm + m] && (ion_set[(size_t)i * r->n_ions + ion] & need) != need) {
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                                 "shape %d: model: %s uses the ion %s, which has no default values and no "
                                 "mechanism provides: set %s in the model (compartment %d)",
                                 (int)k, d->name, r->ions[ion].name,
                                 w ? "its concentrations Xi and Xo" : "its eX", (int)i);
                    break;
                }
            }
        }
    }
    return st;
}

/* Shape k's instances: the nodes where each mechanism is inserted (ins) and their parameters
 * (param[m]: n_params x n, all nodes) into r->per_shape. */
static ns_status instances_of_shape(sim_model *r, int32_t k, int32_t n, size_t nm, const unsigned char *ins,
                                    double *const *param) {
    ns_status st = NS_OK;
    /* instances: the nodes where each mechanism is inserted */
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        sim_mech_shape *ms = &r->per_shape[(size_t)k * r->n_mechs + m];
        const int np = r->mechs[m].desc->n_params;
        int32_t cnt = 0;
        for (int32_t i = 0; i < n; ++i) cnt += ins[(size_t)i * nm + m];
        ms->n = cnt;
        ms->node = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *ms->node);
        ms->param = malloc((size_t)(np > 0 ? np : 1) * (size_t)(cnt > 0 ? cnt : 1) * sizeof *ms->param);
        if (!ms->node || !ms->param) {
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
            break;
        }
        int32_t c = 0;
        for (int32_t i = 0; i < n; ++i)
            if (ins[(size_t)i * nm + m]) {
                ms->node[c] = i;
                for (int p = 0; p < np; ++p) ms->param[(int64_t)p * cnt + c] = param[m][(int64_t)p * n + i];
                ++c;
            }
    }
    return st;
}

/* Shape k (cell) under its model mdl: its model's statements applied node by node (matched_k[q]:
 * statement q applied somewhere), the ions' initial values and where a mechanism writes them, and
 * every mechanism's instances and parameters (r->per_shape[k * n_mechs + m]). */
static ns_status resolve_shape(sim_model *r, const ns_sim_model_t *mdl, const int *lib_to, int32_t k,
                               const ns_cell_t *cell, unsigned char *matched_k) {
    ns_status st = NS_OK;
    ns_cell_info info;
    ns_cell_get_info(cell, &info);
    const int32_t n = info.compartments;
    const double *area = ns_cell_area(cell);
    const int32_t *type = ns_cell_type(cell);
    const int32_t *secn = ns_cell_section(cell);
    int32_t *nseg = malloc((size_t)(info.sections > 0 ? info.sections : 1) * sizeof *nseg);
    const double *pos = ns_cell_position(cell);
    for (int32_t c = 0; nseg && c < info.sections; ++c) {
        ns_section_info si;
        nseg[c] = ns_cell_get_section(cell, c, &si) == NS_OK ? si.nseg : 1;
    }
    const size_t nm = (size_t)(r->n_mechs > 0 ? r->n_mechs : 1);
    double *dist = malloc((size_t)n * sizeof *dist);
    unsigned char *ins = calloc((size_t)n * nm, 1);  /* [i * nm + m] */
    double **param = calloc(nm, sizeof *param);       /* per mech: n_params * n (all nodes) */
    unsigned char *ion_set = calloc((size_t)n * (size_t)(r->n_ions > 0 ? r->n_ions : 1), 1);
    int32_t *user_e = calloc((size_t)n * (size_t)(r->n_ions > 0 ? r->n_ions : 1), sizeof *user_e); /* stmt + 1 */
    unsigned char *written = r->written[k] = calloc((size_t)n * (size_t)(r->n_ions > 0 ? r->n_ions : 1), 1);
    r->ion_init[k] = malloc((size_t)(3 * (r->n_ions > 0 ? r->n_ions : 1)) * (size_t)n * sizeof(double));
    double *geom = r->geom[k] = malloc(2 * (size_t)n * sizeof(double));
    r->cm[k] = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    for (int32_t i = 0; r->cm[k] && i < n; ++i) r->cm[k][i] = NAN; /* the params' cm of the region */
    if (!dist || !ins || !param || !ion_set || !user_e || !written || !r->ion_init[k] || !r->cm[k] || !nseg ||
        !geom)
        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    const double *diam = ns_cell_diam(cell);
    for (int32_t i = 0; geom && i < n; ++i) { /* area/diam in a mechanism */
        geom[i] = area[i] > 0.0 ? area[i] : 100.0;
        geom[n + i] = diam ? diam[i] : 0.0;
    }
    for (int32_t m = 0; m < r->n_mechs && st == NS_OK; ++m) {
        const int np = r->mechs[m].desc->n_params;
        param[m] = malloc((size_t)(np > 0 ? np : 1) * (size_t)n * sizeof(double));
        if (!param[m]) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    if (st == NS_OK) st = distances(cell, k, dist);
    double *ion0 = r->ion_init[k];
    for (int32_t j = 0; j < r->n_ions && st == NS_OK; ++j) {
        double v[3] = {0, 0, 0};
        int charge;
        const int has = ion_defaults(r->ions[j].name, v, &charge);
        for (int q = 0; q < 3; ++q)
            for (int32_t i = 0; i < n; ++i) ion0[(3 * j + q) * (int64_t)n + i] = v[q];
        if (has)
            for (int32_t i = 0; i < n; ++i) ion_set[(size_t)i * r->n_ions + j] = 7;
    }
    for (int q = 0; q < mdl->n && st == NS_OK; ++q) {
        const stmt *s = &mdl->stmts[q];
        if (s->kind == ST_GLOBAL) continue;
        const int m = s->kind == ST_ION || s->kind == ST_CM ? -1 : lib_to[s->mech];
        const int ion = s->kind == ST_ION ? find_ion(r, s->ion) : -1;
        if (s->kind == ST_SET && m < 0) { /* a parameter of a mechanism inserted nowhere */
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: %s: %s: %s is not inserted anywhere", (int)k,
                         s->where, s->text, mdl->descs[s->mech]->name);
            break;
        }
        int32_t only = -1; /* the one section of a section selector; none in this shape: skipped */
        if (s->has_loc && ns_location_section(cell, &s->loc, &only) != NS_OK) {
            ns_clear_error();
            continue;
        }
        for (int32_t i = 0; i < n && st == NS_OK; ++i) {
            if (!(area[i] > 0.0)) continue; /* zero-area nodes carry no membrane */
            if (!(s->regions & (1u << ns_region_of_swc_type(type[i])))) continue;
            if (s->has_loc && secn[i] != only) continue;
            if (s->has_loc && s->loc.has_x && !in_segment(pos[i], nseg[secn[i]], s->loc.x)) continue;
            matched_k[q] = 1;
            if (s->kind == ST_INSERT) {
                if (!ins[(size_t)i * nm + m]) {
                    ins[(size_t)i * nm + m] = 1;
                    const ns_mech_desc *d = r->mechs[m].desc;
                    for (int p = 0; p < d->n_params; ++p) param[m][(int64_t)p * n + i] = d->field_defaults[p];
                }
                continue;
            }
            if (s->kind == ST_SET && !ins[(size_t)i * nm + m]) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "shape %d: %s: %s: %s is not inserted at compartment %d (region %s)", (int)k,
                             s->where, s->text, r->mechs[m].desc->name, (int)i,
                             ns_region_name(ns_region_of_swc_type(type[i])));
                break;
            }
            const double x = ns_model_expr_eval(&s->value, dist[i]);
            if (!isfinite(x)) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: %s: %s is %g at compartment %d (d = %g um)",
                             (int)k, s->where, s->text, x, (int)i, dist[i]);
                break;
            }
            if (s->kind == ST_CM) {
                if (!(x > 0.0)) {
                    st = ns_fail(NS_ERR_INVALID_ARGUMENT, "shape %d: %s: %s is %g uF/cm2 at compartment %d: must "
                                 "be > 0", (int)k, s->where, s->text, x, (int)i);
                    break;
                }
                r->cm[k][i] = x;
                continue;
            }
            if (s->kind == ST_ION && s->which != ION_E && x < 0.0) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "shape %d: %s: %s is %g at compartment %d (d = %g um): a concentration must be >= 0 "
                             "mM", (int)k, s->where, s->text, x, (int)i, dist[i]);
                break;
            }
            if (s->kind == ST_SET) param[m][(int64_t)s->field * n + i] = x;
            else {
                ion0[(3 * ion + s->which) * (int64_t)n + i] = x;
                ion_set[(size_t)i * r->n_ions + ion] |= (unsigned char)(1u << s->which);
                if (s->which == ION_E) user_e[(size_t)i * r->n_ions + ion] = s->e_fixed ? -(q + 1) : q + 1;
            }
        }
    }
    if (st == NS_OK) st = ions_of_shape(r, mdl, k, n, nm, ins, ion_set, user_e, written);
    if (st == NS_OK) st = instances_of_shape(r, k, n, nm, ins, param);
    for (int32_t m = 0; m < r->n_mechs; ++m) free(param ? param[m] : NULL);
    free(param);
    free(dist);
    free(ins);
    free(ion_set);
    free(user_e);
    free(nseg);
    return st;
}

ns_status ns_sim_model_resolve(const ns_sim_model_t *model, const ns_sim_model_t *const *shape_models,
                               int32_t n_shapes, const ns_cell_t *const *cells, const ns_sim_params *params,
                               sim_model **out) {
    (void)params;
    *out = NULL;
    /* the distinct models (usually one), in order of first use */
    const ns_sim_model_t **uniq = malloc((size_t)(n_shapes > 0 ? n_shapes : 1) * sizeof *uniq);
    int32_t *shape_u = malloc((size_t)(n_shapes > 0 ? n_shapes : 1) * sizeof *shape_u);
    int32_t n_uniq = 0;
    if (!uniq || !shape_u) {
        free(uniq);
        free(shape_u);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    ns_status st = NS_OK;
    for (int32_t k = 0; k < n_shapes && st == NS_OK; ++k) {
        const ns_sim_model_t *mk = model_of_shape(model, shape_models, k);
        if (!mk) {
            st = ns_fail(NS_ERR_INVALID_ARGUMENT, "model: shape %d has no model (shape_models[%d] and model are NULL)",
                         (int)k, (int)k);
            break;
        }
        int32_t u = 0;
        while (u < n_uniq && uniq[u] != mk) ++u;
        if (u == n_uniq) {
            /* one catalogue for the simulation: the synapses and the type order */
            int same = n_uniq == 0 || mk->n_descs == uniq[0]->n_descs;
            for (int q = 0; same && n_uniq > 0 && q < mk->n_descs; ++q) same = mk->descs[q] == uniq[0]->descs[q];
            if (!same) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "model: the model of shape %d was made with another mechanism library than shape %d's "
                             "(one library per simulation)", (int)k, 0);
                break;
            }
            uniq[n_uniq++] = mk;
        }
        shape_u[k] = u;
    }
    if (st != NS_OK || n_uniq == 0) {
        free(uniq);
        free(shape_u);
        return st != NS_OK ? st : ns_fail(NS_ERR_INVALID_ARGUMENT, "model: no shapes");
    }
    const ns_sim_model_t *const first = uniq[0];
    const int n_lib = first->n_descs;
    sim_model *r = calloc(1, sizeof *r);
    int *lib_to = malloc((size_t)(n_lib > 0 ? n_lib : 1) * sizeof *lib_to);
    const stmt ***gset = calloc((size_t)(n_lib > 0 ? n_lib : 1), sizeof *gset); /* per mech: who set each global */
    if (!r || !lib_to || !gset) {
        free(r);
        free(lib_to);
        free(gset);
        free(uniq);
        free(shape_u);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    /* the catalogue (library and built-ins), for the synapses (net.c) */
    r->descs = malloc((size_t)(n_lib > 0 ? n_lib : 1) * sizeof *r->descs);
    if (!r->descs) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    for (int k = 0; k < n_lib && st == NS_OK; ++k) r->descs[r->n_descs++] = first->descs[k];
    /* the FUNCTION_TABLEs' values (the first model's; a synapse type's too) */
    r->ftables = calloc((size_t)(n_lib > 0 ? n_lib : 1), sizeof *r->ftables);
    if (!r->ftables) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    for (int k = 0; k < r->n_descs && st == NS_OK; ++k)
        if (r->descs[k]->n_ftables && !(r->ftables[k] = calloc((size_t)r->descs[k]->n_ftables, sizeof **r->ftables)))
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    for (int q = 0; q < first->n_ftabs && st == NS_OK; ++q)
        st = ns_model_ftable_copy(&first->ftabs[q].t, &r->ftables[first->ftabs[q].desc][first->ftabs[q].k]);
    if (st == NS_OK) st = mechanisms_of(r, uniq, n_uniq, lib_to, gset);
    /* a GLOBAL is one value per simulation (as in NEURON): models that set
     * it must agree */
    for (int32_t u = 0; u < n_uniq && st == NS_OK; ++u)
        for (int q = 0; q < uniq[u]->n && st == NS_OK; ++q) {
            const stmt *s = &uniq[u]->stmts[q];
            if (s->kind != ST_GLOBAL) continue;
            const int m = lib_to[s->mech];
            if (m < 0) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: %s is not inserted anywhere", s->where, s->text,
                             first->descs[s->mech]->name);
                break;
            }
            const stmt **who = gset[m];
            const int other = who[s->field] && (who[s->field] < uniq[u]->stmts || who[s->field] >= uniq[u]->stmts + uniq[u]->n);
            if (other && who[s->field]->number != s->number) {
                st = ns_fail(NS_ERR_INVALID_ARGUMENT,
                             "%s: %s = %.17g differs from %s's %.17g: a GLOBAL has one value in a simulation",
                             s->where, s->text, s->number, who[s->field]->where, who[s->field]->number);
                break;
            }
            who[s->field] = s;
            r->mechs[m].globals[s->field] = s->number;
        }
    for (int32_t u = 0; u < n_uniq && st == NS_OK; ++u)
        for (int q = 0; q < uniq[u]->n && st == NS_OK; ++q) {
            const stmt *s = &uniq[u]->stmts[q];
            if (s->kind != ST_ION) continue;
            if (find_ion(r, s->ion) < 0)
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: no inserted mechanism uses the ion %s", s->where,
                             s->text, s->ion);
        }
    r->n_shapes = n_shapes;
    if (st == NS_OK) {
        r->per_shape = calloc((size_t)n_shapes * (size_t)(r->n_mechs > 0 ? r->n_mechs : 1), sizeof *r->per_shape);
        r->ion_init = calloc((size_t)n_shapes, sizeof *r->ion_init);
        r->written = calloc((size_t)n_shapes, sizeof *r->written);
        r->geom = calloc((size_t)n_shapes, sizeof *r->geom);
        r->cm = calloc((size_t)n_shapes, sizeof *r->cm);
        if (!r->per_shape || !r->ion_init || !r->written || !r->geom || !r->cm)
            st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    }
    if (st == NS_OK) st = ns_ldifus_geometry(r, cells);
    /* the statements that applied, per distinct model: at matched + moff[u] */
    int64_t *moff = malloc((size_t)(n_uniq + 1) * sizeof *moff);
    unsigned char *matched = NULL;
    if (moff) {
        moff[0] = 0;
        for (int32_t u = 0; u < n_uniq; ++u) moff[u + 1] = moff[u] + uniq[u]->n;
        matched = calloc((size_t)(moff[n_uniq] > 0 ? moff[n_uniq] : 1), 1);
    }
    if ((!moff || !matched) && st == NS_OK) st = ns_fail(NS_ERR_OUT_OF_MEMORY, "model");
    /* per shape: apply its model's statements node by node */
    for (int32_t k = 0; k < n_shapes && st == NS_OK; ++k)
        st = resolve_shape(r, uniq[shape_u[k]], lib_to, k, cells[k], matched + moff[shape_u[k]]);
    /* a section selector that names no section of any of its model's shapes is a mistake */
    for (int32_t u = 0; u < n_uniq && st == NS_OK; ++u)
        for (int q = 0; q < uniq[u]->n && st == NS_OK; ++q) {
            const stmt *s = &uniq[u]->stmts[q];
            if (s->kind != ST_GLOBAL && s->has_loc && !matched[moff[u] + q])
                st = ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: %s: %s is no section with membrane of any shape%s",
                             s->where, s->text, s->loc_text, n_uniq > 1 ? " of this model" : "");
        }
    free(matched);
    free(moff);
    for (int32_t m = 0; m < r->n_mechs; ++m) free(gset[m]);
    free(gset);
    free(uniq);
    free(shape_u);
    free(lib_to);
    if (st != NS_OK) {
        ns_sim_model_free(r);
        return st;
    }
    *out = r;
    return NS_OK;
}

ns_status ns_sim_model_var_lookup(const sim_model *md, const char *name, int32_t *mech, int *field, int32_t *ion,
                                  int *q) {
    *mech = *ion = -1;
    *field = *q = -1;
    for (int32_t j = 0; j < md->n_ions && *ion < 0; ++j)
        if ((*q = ion_var_of(name, md->ions[j].name)) >= 0) *ion = j;
    if (*ion >= 0) {
        if (*q == 3 && !md->ions[*ion].read_i)
            return ns_fail(NS_ERR_UNSUPPORTED, "ns_sim_get_model_var: %s: no mechanism reads the current of %s, so "
                                               "it is not kept", name, md->ions[*ion].name);
        return NS_OK;
    }
    size_t best = 0; /* FIELD_MECH: the longest mechanism name that ends it */
    for (int32_t k = 0; k < md->n_mechs; ++k) {
        const size_t ml = suffix_match(name, md->mechs[k].desc->name);
        if (ml > best) best = ml, *mech = k;
    }
    if (*mech >= 0) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(name) - best - 1), name);
        ns_status st = ns_mech_field_index(md->mechs[*mech].desc, prefix, field);
        if (st != NS_OK) ns_error_prefix("ns_sim_get_model_var");
        return st;
    }
    char list[512] = "";
    size_t used = 0;
    for (int32_t k = 0; k < md->n_mechs && used + 40 < sizeof list; ++k)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", k ? ", " : "", md->mechs[k].desc->name);
    for (int32_t j = 0; j < md->n_ions && used + 40 < sizeof list; ++j)
        used += (size_t)snprintf(list + used, sizeof list - used, ", ions e%s %si %so", md->ions[j].name,
                                 md->ions[j].name, md->ions[j].name);
    return ns_fail(NS_ERR_INVALID_ARGUMENT,
                   "ns_sim_get_model_var: '%s' is neither FIELD_MECH of an inserted mechanism (%s) nor an ion's "
                   "value", name, list);
}
