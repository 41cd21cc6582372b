/* Simulation parameters: NEURON's defaults, setting by name, the parameter
 * file (`key = value` lines, docs/simulation.md) and the range checks. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "morph/discretize_impl.h"
#include "neurosolve/cable.h"
#include "neurosolve/number.h"

void ns_sim_params_init(ns_sim_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    for (int r = 0; r < NS_REGION_COUNT; ++r) {
        ns_membrane *m = &p->region[r];
        m->cm = 1.0;
        m->hh = 1;
        m->gnabar = 0.12;
        m->gkbar = 0.036;
        m->gl = 0.0003;
        m->el = -54.3;
        m->ena = 50.0;
        m->ek = -77.0;
        m->pas = 0;
        m->g_pas = 0.001;
        m->e_pas = -70.0;
    }
    p->celsius = 6.3;
    p->v_init = -65.0;
    p->dt = 0.025;
    p->usetable = 1;
    p->spike_threshold = -20.0;
    p->Ra = 35.4;
    p->tstop = 100.0;
}

/* Where a key of a membrane points and how its value is checked. */
typedef enum { V_ANY, V_NONNEG, V_FLAG } value_kind;

static double *membrane_field(ns_membrane *m, const char *name, value_kind *kind, int **flag) {
    *flag = NULL;
    *kind = V_NONNEG;
    if (strcmp(name, "cm") == 0) return &m->cm;
    if (strcmp(name, "gnabar_hh") == 0) return &m->gnabar;
    if (strcmp(name, "gkbar_hh") == 0) return &m->gkbar;
    if (strcmp(name, "gl_hh") == 0) return &m->gl;
    if (strcmp(name, "g_pas") == 0) return &m->g_pas;
    *kind = V_ANY;
    if (strcmp(name, "el_hh") == 0) return &m->el;
    if (strcmp(name, "ena") == 0) return &m->ena;
    if (strcmp(name, "ek") == 0) return &m->ek;
    if (strcmp(name, "e_pas") == 0) return &m->e_pas;
    *kind = V_FLAG;
    if (strcmp(name, "hh") == 0) { *flag = &m->hh; return NULL; }
    if (strcmp(name, "pas") == 0) { *flag = &m->pas; return NULL; }
    return NULL;
}

static ns_status check_value(const char *key, value_kind kind, double value) {
    if (!isfinite(value)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s = %g: must be finite", key, value);
    if (kind == V_NONNEG && value < 0.0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s = %g: must be >= 0", key, value);
    if (kind == V_FLAG && value != 0.0 && value != 1.0)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s = %g: must be 0 or 1", key, value);
    return NS_OK;
}

static ns_status set_global(ns_sim_params *p, const char *key, double value) {
    ns_status st = check_value(key, V_ANY, value);
    if (st != NS_OK) return st;
    if (strcmp(key, "celsius") == 0) p->celsius = value;
    else if (strcmp(key, "v_init") == 0 || strcmp(key, "spike_threshold") == 0) {
        if (!(fabs(value) <= NS_SIM_MAX_POTENTIAL))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s = %g mV: must be in [-%g, %g] mV", key, value,
                           NS_SIM_MAX_POTENTIAL, NS_SIM_MAX_POTENTIAL);
        *(key[0] == 'v' ? &p->v_init : &p->spike_threshold) = value;
    }
    else if (strcmp(key, "dt") == 0) {
        if (!(value > 0.0)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "dt = %g ms: must be > 0", value);
        p->dt = value;
    } else if (strcmp(key, "tstop") == 0) {
        if (!(value >= 0.0)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "tstop = %g ms: must be >= 0", value);
        p->tstop = value;
    } else if (strcmp(key, "Ra") == 0) {
        if (!(value > 0.0)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "Ra = %g ohm cm: must be > 0", value);
        p->Ra = value;
    } else if (strcmp(key, "usetable_hh") == 0) {
        st = check_value(key, V_FLAG, value);
        if (st != NS_OK) return st;
        p->usetable = (int)value;
    } else if (strcmp(key, "netcon_spikes") == 0) {
        st = check_value(key, V_FLAG, value);
        if (st != NS_OK) return st;
        p->netcon_spikes = (int)value;
    } else {
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "unknown parameter '%s' (globals: celsius, v_init, dt, usetable_hh, "
                       "spike_threshold, netcon_spikes, Ra, tstop; per region: REGION.NAME)", key);
    }
    return NS_OK;
}

ns_status ns_sim_params_set(ns_sim_params *p, const char *key, double value) {
    if (!p || !key) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_params_set: NULL argument");
    const char *dot = strchr(key, '.');
    if (!dot) return set_global(p, key, value);
    /* LOC.nseg, LOC.Ra, SEC.start_diam: the discretisation's (ns_discretize_options.sections) */
    char why[400];
    const int disc = disc_spec_key(key, value, why, sizeof why);
    if (disc < 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s", why);
    if (disc > 0) return NS_OK;
    /* REGION.NAME: the regions it covers as a bit set */
    size_t len = (size_t)(dot - key);
    unsigned mask = 0;
    static const struct { const char *name; unsigned mask; } regions[] = {
        {"soma", 1u << NS_REGION_SOMA},     {"axon", 1u << NS_REGION_AXON},
        {"basal", 1u << NS_REGION_BASAL},   {"apical", 1u << NS_REGION_APICAL},
        {"other", 1u << NS_REGION_OTHER},
        {"dend", (1u << NS_REGION_BASAL) | (1u << NS_REGION_APICAL)},
        {"all", (1u << NS_REGION_COUNT) - 1u},
    };
    for (size_t r = 0; r < sizeof regions / sizeof regions[0]; ++r)
        if (strlen(regions[r].name) == len && strncmp(key, regions[r].name, len) == 0)
            mask = regions[r].mask;
    if (!mask)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "unknown region in '%s' (soma, axon, basal, apical, other, dend, all)", key);
    const char *name = dot + 1;
    value_kind kind;
    int *flag;
    if (!membrane_field(&p->region[0], name, &kind, &flag) && !flag)
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "unknown parameter '%s' (cm, hh, gnabar_hh, gkbar_hh, gl_hh, el_hh, ena, ek, "
                       "pas, g_pas, e_pas; the discretisation's nseg, Ra, start_diam)", key);
    ns_status st = check_value(key, kind, value);
    if (st != NS_OK) return st;
    for (int r = 0; r < NS_REGION_COUNT; ++r) {
        if (!(mask & (1u << r))) continue;
        double *field = membrane_field(&p->region[r], name, &kind, &flag);
        if (flag) *flag = (int)value;
        else *field = value;
    }
    return NS_OK;
}

ns_status ns_sim_count_steps(double tstop, double dt, int64_t *steps) {
    if (!steps) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_count_steps: steps is NULL");
    *steps = 0;
    if (!(dt > 0.0) || !isfinite(dt)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "dt = %g ms: must be > 0", dt);
    if (!(tstop >= 0.0) || !isfinite(tstop))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "tstop = %g ms: must be finite and >= 0", tstop);
    const double n = tstop / dt;
    if (!(n <= (double)NS_SIM_MAX_STEPS))
        return ns_fail(NS_ERR_INVALID_ARGUMENT,
                       "tstop = %g ms with dt = %g ms is %g steps: more than the %lld a run may take", tstop, dt,
                       n, (long long)NS_SIM_MAX_STEPS);
    *steps = (int64_t)llround(n);
    return NS_OK;
}

ns_status ns_sim_params_check(const ns_sim_params *p) {
    if (!p) return ns_fail(NS_ERR_INVALID_ARGUMENT, "simulation parameters are NULL");
    if (!(p->dt > 0.0) || !isfinite(p->dt))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "dt = %g ms: must be > 0", p->dt);
    int64_t steps;
    ns_status st = ns_sim_count_steps(p->tstop, p->dt, &steps);
    if (st != NS_OK) return st;
    if (!isfinite(p->celsius) || !isfinite(p->v_init) || !isfinite(p->spike_threshold))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "celsius, v_init and spike_threshold must be finite");
    if (!(fabs(p->v_init) <= NS_SIM_MAX_POTENTIAL) || !(fabs(p->spike_threshold) <= NS_SIM_MAX_POTENTIAL))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "v_init = %g mV, spike_threshold = %g mV: must be in [-%g, %g] mV",
                       p->v_init, p->spike_threshold, NS_SIM_MAX_POTENTIAL, NS_SIM_MAX_POTENTIAL);
    if (!(p->Ra > 0.0) || !isfinite(p->Ra))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "Ra = %g ohm cm: must be > 0", p->Ra);
    if (p->usetable != 0 && p->usetable != 1)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "usetable_hh = %d: must be 0 or 1", p->usetable);
    if (p->netcon_spikes != 0 && p->netcon_spikes != 1)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "netcon_spikes = %d: must be 0 or 1", p->netcon_spikes);
    for (int r = 0; r < NS_REGION_COUNT; ++r) {
        const ns_membrane *m = &p->region[r];
        const char *rn = ns_region_name((ns_region)r);
        const double nonneg[] = {m->cm, m->gnabar, m->gkbar, m->gl, m->g_pas};
        const char *names[] = {"cm", "gnabar_hh", "gkbar_hh", "gl_hh", "g_pas"};
        for (int k = 0; k < 5; ++k)
            if (!(nonneg[k] >= 0.0) || !isfinite(nonneg[k]))
                return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s.%s = %g: must be finite and >= 0", rn,
                               names[k], nonneg[k]);
        if (!isfinite(m->el) || !isfinite(m->ena) || !isfinite(m->ek) || !isfinite(m->e_pas))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: reversal potentials must be finite", rn);
        if ((m->hh != 0 && m->hh != 1) || (m->pas != 0 && m->pas != 1))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: hh and pas must be 0 or 1", rn);
    }
    return NS_OK;
}

/* One line without its comment, from its first character that is not blank
 * (ns_lines_next). */
static ns_status parse_line(ns_sim_params *p, char *s, const char *name, long lineno) {
    char *eq = strchr(s, '=');
    if (!eq) return ns_fail(NS_ERR_PARSE, "%s:%ld: expected 'key = value'", name, lineno);
    char *kend = eq;
    while (kend > s && (kend[-1] == ' ' || kend[-1] == '\t')) --kend;
    *kend = '\0';
    if (*s == '\0') return ns_fail(NS_ERR_PARSE, "%s:%ld: missing key before '='", name, lineno);
    char *v = eq + 1;
    while (*v == ' ' || *v == '\t') ++v;
    /* the one number reader (neurosolve/number.h): decimal only, no hex, nan or inf */
    size_t len = strcspn(v, " \t\r");
    char *end = v + len;
    while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
    if (*end != '\0')
        return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: trailing text '%s' after the number", name, lineno, s, end);
    v[len] = '\0';
    double value = 0.0;
    const ns_status nst = ns_number_parse(v, -HUGE_VAL, HUGE_VAL, &value);
    if (nst != NS_OK) {
        char prefix[600];
        snprintf(prefix, sizeof prefix, "%.400s:%ld: %.100s", name, lineno, s);
        ns_error_prefix(prefix);
        return nst;
    }
    ns_status st = ns_sim_params_set(p, s, value);
    if (st != NS_OK) {
        char prefix[600];
        snprintf(prefix, sizeof prefix, "%s:%ld", name, lineno);
        ns_error_prefix(prefix);
    }
    return st;
}

ns_status ns_sim_params_parse(ns_sim_params *p, const char *text, size_t length, const char *name) {
    if (!p || (!text && length)) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_params_parse: NULL argument");
    if (!name) name = "<parameters>";
    ns_lines r = {text, length, name, 0, 0, {0}};
    char *s;
    int got;
    while ((got = ns_lines_next(&r, &s)) > 0) {
        ns_status st = parse_line(p, s, name, r.lineno);
        if (st != NS_OK) return st;
    }
    return got < 0 ? NS_ERR_PARSE : NS_OK;
}

ns_status ns_sim_params_read(ns_sim_params *p, const char *path) {
    if (!p || !path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_sim_params_read: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    const ns_status rs = ns_file_read_all(path, (size_t)16 << 20, "parameter file", &buf, &len);
    if (rs != NS_OK) return rs;
    ns_status st = ns_sim_params_parse(p, buf, len, path);
    free(buf);
    return st;
}

/* The model that the membrane keys describe (sim_impl.h): per region, the
 * built-in hh and pas where inserted, with the region's values; every value
 * written with 17 significant digits, which the model's number reader reads
 * back exactly. */
static ns_status shorthand_set(ns_sim_model_t *m, const char *where, const char *name, double value) {
    char text[40];
    snprintf(text, sizeof text, "%.17g", value);
    return ns_sim_model_set(m, where, name, text);
}

ns_status ns_sim_params_model(const ns_sim_params *p, ns_sim_model_t **out) {
    *out = NULL;
    ns_sim_model_t *m = NULL;
    ns_status st = ns_sim_model_create(NULL, &m);
    int any_hh = 0;
    for (int r = 0; st == NS_OK && r < NS_REGION_COUNT; ++r) {
        const ns_membrane *mb = &p->region[r];
        const char *where = ns_region_name((ns_region)r);
        if (mb->hh) {
            any_hh = 1;
            const char *names[6] = {"gnabar_hh", "gkbar_hh", "gl_hh", "el_hh", "ena", "ek"};
            const double values[6] = {mb->gnabar, mb->gkbar, mb->gl, mb->el, mb->ena, mb->ek};
            st = ns_sim_model_insert(m, where, "hh");
            for (int k = 0; k < 6 && st == NS_OK; ++k) st = shorthand_set(m, where, names[k], values[k]);
        }
        if (st == NS_OK && mb->pas) {
            st = ns_sim_model_insert(m, where, "pas");
            if (st == NS_OK) st = shorthand_set(m, where, "g_pas", mb->g_pas);
            if (st == NS_OK) st = shorthand_set(m, where, "e_pas", mb->e_pas);
        }
    }
    if (st == NS_OK && any_hh) st = ns_sim_model_set_global(m, "usetable_hh", (double)p->usetable);
    if (st != NS_OK) {
        ns_sim_model_destroy(m);
        return st;
    }
    ns_clear_error(); /* usetable_hh is found as the mechanism's usetable_rates, after a first miss */
    *out = m;
    return NS_OK;
}
