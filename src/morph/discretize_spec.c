/* Per-section nseg, Ra and cm of ns_discretize_options.sections
 * (docs/discretisation.md, "Per-section nseg, Ra and cm"): statements in the
 * parameter file's grammar, `LOC.NAME = VALUE` with LOC a region (soma, axon,
 * basal, apical, other, dend, all: the section's SWC type), sec:K (section
 * index, Import3d's order) or swc:ID (the section whose first point has SWC
 * id ID), applied in order to the sections: nseg, Ra, REGION.cm (the d_lambda
 * rule's), start_diam (a section's first 3-D point's diameter) and parentx
 * (where a section attaches to its parent, its geometry its own points). A bare
 * `Ra = X` sets every section's Ra; other keys of a parameter file are skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"
#include "neurosolve/number.h"
#include "morph/discretize_impl.h"

#define NSEG_MAX 32767

/* Region bits of an SWC type: soma 1, axon 2, basal 4, apical 8, other 16. */
static unsigned type_bit(int32_t type) {
    switch (type) {
    case NS_SWC_SOMA: return 1u;
    case NS_SWC_AXON: return 2u;
    case NS_SWC_BASAL: return 4u;
    case NS_SWC_APICAL: return 8u;
    default: return 16u;
    }
}

static unsigned region_mask(const char *loc, size_t len) {
    static const struct { const char *name; unsigned mask; } regions[] = {
        {"soma", 1u}, {"axon", 2u}, {"basal", 4u}, {"apical", 8u}, {"other", 16u}, {"dend", 12u}, {"all", 31u},
    };
    for (size_t r = 0; r < sizeof regions / sizeof regions[0]; ++r)
        if (strlen(regions[r].name) == len && strncmp(loc, regions[r].name, len) == 0) return regions[r].mask;
    return 0;
}

/* A section's LOC, sec:K or swc:ID, through the one location grammar
 * (ns_location_parse, morph/location.c): 1 with *l set, 0 when LOC is not
 * one of them (a region), -1 when it is but does not parse or gives an x
 * (nseg, Ra and start_diam are a whole section's). */
static int section_loc(const char *key, size_t len, ns_location *l) {
    if (len <= 4 || (strncmp(key, "sec:", 4) != 0 && strncmp(key, "swc:", 4) != 0)) return 0;
    char buf[64];
    if (len >= sizeof buf) return -1;
    memcpy(buf, key, len);
    buf[len] = '\0';
    if (ns_location_parse(buf, l) != NS_OK) {
        ns_clear_error();
        return -1;
    }
    return l->has_x || (l->kind != NS_LOCATION_SECTION && l->kind != NS_LOCATION_SWC_ID) ? -1 : 1;
}

int disc_spec_key(const char *key, double value, char *why, size_t why_size) {
    const char *dot = strchr(key, '.');
    if (!dot) {
        if (strcmp(key, "Ra") != 0) return 0;
        if (!(value > 0.0) || !isfinite(value)) {
            snprintf(why, why_size, "Ra = %g ohm cm: must be > 0", value);
            return -1;
        }
        return 1;
    }
    const char *name = dot + 1;
    const size_t len = (size_t)(dot - key);
    ns_location l;
    const int loc = section_loc(key, len, &l), section = loc != 0;
    const int per_section = strcmp(name, "start_diam") == 0 || strcmp(name, "parentx") == 0;
    if (per_section && !section) {
        snprintf(why, why_size, "%s: %s is set per section (sec:K, swc:ID)", key, name);
        return -1;
    }
    if (strcmp(name, "nseg") != 0 && strcmp(name, "Ra") != 0 && !per_section) {
        if (section) {
            snprintf(why, why_size,
                     "%s: a section (sec:K, swc:ID) takes nseg, Ra, start_diam and parentx only (cm is set per "
                     "region, REGION.cm)", key);
            return -1;
        }
        return 0;
    }
    if (section) {
        if (loc < 0) {
            snprintf(why, why_size, "%s: '%.*s' is not a section index or SWC id (sec:K, swc:ID: a whole section, no x)",
                     key, (int)(len - 4), key + 4);
            return -1;
        }
    } else if (!region_mask(key, len)) {
        snprintf(why, why_size, "%s: unknown location '%.*s' (soma, axon, basal, apical, other, dend, all, sec:K, swc:ID)",
                 key, (int)len, key);
        return -1;
    }
    if (strcmp(name, "nseg") == 0) {
        if (!(value >= 1.0 && value <= NSEG_MAX) || value != floor(value)) {
            snprintf(why, why_size, "%s = %g: nseg must be a whole number in [1, %d]", key, value, NSEG_MAX);
            return -1;
        }
    } else if (strcmp(name, "parentx") == 0) {
        if (!(value >= 0.0 && value <= 1.0)) {
            snprintf(why, why_size, "%s = %g: parentx must be in [0, 1]", key, value);
            return -1;
        }
    } else if (!(value > 0.0) || !isfinite(value)) {
        snprintf(why, why_size, "%s = %g %s: must be > 0", key, value, strcmp(name, "Ra") == 0 ? "ohm cm" : "um");
        return -1;
    }
    return 1;
}

/* Apply one statement. */
/* SEC.parentx = X: the section attaches at X of its parent section, and its geometry is its own
 * 3-D points: the copy of the parent's point that Import3d puts first is dropped (a section
 * without one, a "wire", keeps its points). */
static ns_status set_parentx(disc_sections *S, int32_t k, double x, const char *key, const char *name,
                             long lineno) {
    disc_section *s = &S->sec[k];
    if (s->parent < 0)
        return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: section %d is the root: it has no parent", name, lineno, key, (int)k);
    if (s->n3d == s->last - s->first + 2) { /* starts with the copy of the parent's point */
        if (s->n3d < 3)
            return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: section %d has one 3-D point of its own (2 needed)", name,
                           lineno, key, (int)k);
        ++s->pt_begin;
        --s->n3d;
        disc_arcs(s, S->pts);
        if (!(s->length > 0.0))
            return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: section %d's own 3-D points lie at one place", name, lineno,
                           key, (int)k);
    }
    s->parent_x = x;
    return NS_OK;
}

static ns_status apply(disc_sections *S, const ns_morph_point *pts, const char *key, double value,
                       const char *name, long lineno) {
    char why[400];
    const int r = disc_spec_key(key, value, why, sizeof why);
    if (r < 0) return ns_fail(NS_ERR_PARSE, "%s:%ld: %s", name, lineno, why);
    if (r == 0) {
        const char *dot = strchr(key, '.');
        /* REGION.cm: the d_lambda rule's cm of those sections */
        if (!dot || strcmp(dot + 1, "cm") != 0) return NS_OK;
        const unsigned mask = region_mask(key, (size_t)(dot - key));
        if (!mask) return NS_OK; /* the parameters refuse it */
        if (!(value >= 0.0) || !isfinite(value))
            return ns_fail(NS_ERR_PARSE, "%s:%ld: %s = %g uF/cm^2: must be >= 0", name, lineno, key, value);
        for (int32_t k = 0; k < S->n; ++k)
            if (mask & type_bit(S->sec[k].type)) S->sec[k].cm = value;
        return NS_OK;
    }
    const char *dot = strchr(key, '.');
    const int is_nseg = dot && strcmp(dot + 1, "nseg") == 0;
    const int is_diam = dot && strcmp(dot + 1, "start_diam") == 0;
    const int is_parentx = dot && strcmp(dot + 1, "parentx") == 0;
    ns_location loc;
    const int section = dot && section_loc(key, (size_t)(dot - key), &loc) > 0; /* disc_spec_key checked it */
    int matched = 0;
    for (int32_t k = 0; k < S->n; ++k) {
        disc_section *s = &S->sec[k];
        int hit;
        if (!dot) hit = 1;
        else if (section) hit = loc.kind == NS_LOCATION_SECTION ? loc.index == k : loc.index == pts[s->first].id;
        else hit = (region_mask(key, (size_t)(dot - key)) & type_bit(s->type)) != 0;
        if (!hit) continue;
        matched = 1;
        if (is_diam) {
            /* the diameter of the copied parent point, its first 3-D point (Import3d takes the
             * parent point's; NEURON sections built otherwise may start with their own) */
            if (s->parent < 0 || s->n3d != s->last - s->first + 2)
                return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: section %d does not start with a copy of its parent's "
                               "point (the root, a child joined at the soma's middle or given a parentx)", name, lineno, key, (int)k);
            S->pts[s->pt_begin].d = value;
        } else if (is_parentx) {
            ns_status st = set_parentx(S, k, value, key, name, lineno);
            if (st != NS_OK) return st;
        } else if (is_nseg) s->nseg = (int32_t)value;
        else s->Ra = value;
    }
    if (!matched && section)
        return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: the morphology has no such section (%d sections, Import3d's order)",
                       name, lineno, key, (int)S->n);
    return NS_OK;
}

ns_status disc_apply_spec(disc_sections *S, const ns_morph_point *pts, const char *text, size_t length,
                          const char *name) {
    if (!name) name = "<sections>";
    ns_lines r = {text, length, name, 0, 0, {0}};
    char *s;
    int got;
    while ((got = ns_lines_next(&r, &s)) > 0) {
        const long lineno = r.lineno;
        char *eq = strchr(s, '=');
        if (!eq) return ns_fail(NS_ERR_PARSE, "%s:%ld: expected 'key = value'", name, lineno);
        char *kend = eq;
        while (kend > s && (kend[-1] == ' ' || kend[-1] == '\t')) --kend;
        *kend = '\0';
        char *v = eq + 1;
        while (*v == ' ' || *v == '\t') ++v;
        size_t len = strcspn(v, " \t\r");
        char num[64];
        double value = NAN;
        int is_num = len > 0 && len < sizeof num;
        if (is_num) {
            memcpy(num, v, len);
            num[len] = '\0';
            is_num = ns_number_parse(num, -HUGE_VAL, HUGE_VAL, &value) == NS_OK; /* the one reader */
            if (!is_num) ns_clear_error();
        }
        char *end = v + len;
        if (!is_num) {
            /* not a number: a key of ours is an error, any other is the parameters' business */
            char why[400];
            if (disc_spec_key(s, 1.0, why, sizeof why) != 0 ||
                ((kend = strchr(s, '.')) && strcmp(kend + 1, "cm") == 0))
                return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: '%.*s' is not a decimal number", name, lineno, s,
                               (int)len, v);
            continue;
        }
        while (*end == ' ' || *end == '\t' || *end == '\r') ++end;
        if (*end != '\0')
            return ns_fail(NS_ERR_PARSE, "%s:%ld: %s: trailing text '%s' after the number", name, lineno, s, end);
        ns_status st = apply(S, pts, s, value, name, lineno);
        if (st != NS_OK) return st;
    }
    return got < 0 ? NS_ERR_PARSE : NS_OK;
}
