/* Locations on a cell: the one grammar of the command line, model files,
 * network files and Python (include/neurosolve/morph.h), NEURON's section
 * names, and the search of a section by name or by SWC id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "morph/cell_impl.h"
#include "neurosolve/number.h"

static const char FORMS[] =
    "soma, NAME[K] or NAME[K](X) with NEURON's names (soma, axon, dend, apic, dend_T), sec:K(X), "
    "swc:ID(X), K:X, swc=ID:X or cN";

/* The first n characters of s through the one number reader
 * (neurosolve/number.h): an integer >= 0, or x in [0, 1]. The caller's
 * message replaces the reader's. */
static int read_index(const char *s, size_t n, int64_t *out) {
    char buf[32];
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return ns_integer_parse(buf, 0, INT64_MAX, out) == NS_OK;
}

static int read_x(const char *s, size_t n, double *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return ns_number_parse(buf, 0.0, 1.0, out) == NS_OK;
}

/* NEURON's type class of a name: soma 1, axon 2, dend 3, apic 4, dend_T T;
 * 0 when it is none of them. */
static int32_t type_of_name(const char *s, size_t n) {
    static const char *const names[] = {"soma", "axon", "dend", "apic"};
    for (int k = 0; k < 4; ++k)
        if (strlen(names[k]) == n && strncmp(s, names[k], n) == 0) return k + 1;
    int64_t t;
    if (n > 5 && strncmp(s, "dend_", 5) == 0 && read_index(s + 5, n - 5, &t) && (t == 0 || t > 4) && t < INT32_MAX)
        return t == 0 ? -1 : (int32_t)t; /* dend_0: type 0, kept apart from "none" */
    return 0;
}

static int32_t class_of_type(int32_t swc_type) {
    return swc_type >= 1 && swc_type <= 4 ? swc_type : swc_type == 0 ? -1 : swc_type;
}

static void class_name(int32_t cls, char *buf, size_t n) {
    static const char *const names[] = {"soma", "axon", "dend", "apic"};
    if (cls >= 1 && cls <= 4) snprintf(buf, n, "%s", names[cls - 1]);
    else snprintf(buf, n, "dend_%d", cls < 0 ? 0 : (int)cls);
}

ns_status ns_cell_locate(const ns_cell_t *cell, int32_t section, double x, int32_t *compartment) {
    if (!cell || !compartment) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_cell_locate: NULL argument");
    ns_section_info si;
    ns_cell_info ci;
    ns_cell_get_info(cell, &ci);
    if (section < 0 || section >= ci.sections)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "location: section %d is not in the cell (%d sections)",
                       (int)section, (int)ci.sections);
    if (!(x >= 0.0 && x <= 1.0))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "location: x = %g must be in [0, 1]", x);
    ns_status st = ns_cell_get_section(cell, section, &si);
    if (st != NS_OK) return st;
    /* NEURON's node_index: the segment containing x */
    int32_t j = (int32_t)(x * (double)si.nseg);
    if (j > si.nseg - 1) j = si.nseg - 1;
    if (j < 0) j = 0;
    *compartment = si.first_node + j;
    return NS_OK;
}

ns_status ns_location_parse(const char *text, ns_location *l) {
    if (!text || !l) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_location_parse: NULL argument");
    memset(l, 0, sizeof *l);
    l->x = 0.5;
    const size_t len = strlen(text);
    if (len == 0) return ns_fail(NS_ERR_PARSE, "location '': empty; expected %s", FORMS);
    /* cN */
    if (text[0] == 'c' && len > 1 && text[1] >= '0' && text[1] <= '9') {
        l->kind = NS_LOCATION_COMPARTMENT;
        if (!read_index(text + 1, len - 1, &l->index) || l->index > INT32_MAX)
            return ns_fail(NS_ERR_PARSE, "location '%s': compartment '%s' is not an integer in [0, %d]", text, text + 1,
                           INT32_MAX);
        return NS_OK;
    }
    /* the command line's older forms: K:X and swc=ID:X */
    const char *colon = strchr(text, ':');
    const int swc_eq = strncmp(text, "swc=", 4) == 0;
    if (colon && (swc_eq || (text[0] >= '0' && text[0] <= '9'))) {
        const char *s = swc_eq ? text + 4 : text;
        l->kind = swc_eq ? NS_LOCATION_SWC_ID : NS_LOCATION_SECTION;
        if (!read_index(s, (size_t)(colon - s), &l->index) || (!swc_eq && l->index > INT32_MAX))
            return ns_fail(NS_ERR_PARSE, "location '%s': %s '%.*s' is not an integer >= 0", text,
                           swc_eq ? "the SWC id" : "the section index", (int)(colon - s), s);
        if (!read_x(colon + 1, strlen(colon + 1), &l->x))
            return ns_fail(NS_ERR_PARSE, "location '%s': x '%s' is not a number in [0, 1]", text, colon + 1);
        l->has_x = 1;
        return NS_OK;
    }
    /* WHERE[(X)] */
    size_t head = len;
    const char *par = strchr(text, '(');
    if (par) {
        head = (size_t)(par - text);
        if (text[len - 1] != ')')
            return ns_fail(NS_ERR_PARSE, "location '%s': '(' without a closing ')' at the end; expected WHERE(X)", text);
        if (!read_x(par + 1, len - head - 2, &l->x))
            return ns_fail(NS_ERR_PARSE, "location '%s': x '%.*s' is not a number in [0, 1]", text,
                           (int)(len - head - 2), par + 1);
        l->has_x = 1;
    }
    if (head >= 4 && (strncmp(text, "sec:", 4) == 0 || strncmp(text, "swc:", 4) == 0)) {
        l->kind = text[1] == 'e' ? NS_LOCATION_SECTION : NS_LOCATION_SWC_ID;
        if (!read_index(text + 4, head - 4, &l->index) || (l->kind == NS_LOCATION_SECTION && l->index > INT32_MAX))
            return ns_fail(NS_ERR_PARSE, "location '%s': %s '%.*s' is not an integer >= 0", text,
                           l->kind == NS_LOCATION_SECTION ? "the section index" : "the SWC id", (int)(head - 4),
                           text + 4);
        return NS_OK;
    }
    const char *br = memchr(text, '[', head);
    const size_t name_len = br ? (size_t)(br - text) : head;
    const int32_t cls = type_of_name(text, name_len);
    if (cls == 0)
        return ns_fail(NS_ERR_PARSE, "location '%s': '%.*s' is not a section name; expected %s", text, (int)name_len,
                       text, FORMS);
    if (!br) {
        if (cls != 1)
            return ns_fail(NS_ERR_PARSE, "location '%s': %.*s is an array of sections: give %.*s[K]", text,
                           (int)name_len, text, (int)name_len, text);
        l->kind = NS_LOCATION_ROOT;
        return NS_OK;
    }
    if (text[head - 1] != ']')
        return ns_fail(NS_ERR_PARSE, "location '%s': '[' without a closing ']'; expected NAME[K](X)", text);
    l->kind = NS_LOCATION_NAMED;
    l->type = cls;
    if (!read_index(br + 1, head - name_len - 2, &l->index) || l->index > INT32_MAX)
        return ns_fail(NS_ERR_PARSE, "location '%s': the index '%.*s' in [] is not an integer >= 0", text,
                       (int)(head - name_len - 2), br + 1);
    return NS_OK;
}

ns_status ns_location_section(const ns_cell_t *cell, const ns_location *l, int32_t *section) {
    if (!cell || !l || !section) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_location_section: NULL argument");
    const int32_t ns = cell->n_sections;
    switch (l->kind) {
    case NS_LOCATION_ROOT: *section = 0; return NS_OK;
    case NS_LOCATION_SECTION:
        if (l->index < 0 || l->index >= ns)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "no section %lld: the cell has %d sections (0 to %d)",
                           (long long)l->index, (int)ns, (int)ns - 1);
        *section = (int32_t)l->index;
        return NS_OK;
    case NS_LOCATION_SWC_ID:
        for (int32_t k = 0; k < ns; ++k)
            if (cell->sections[k].first_point_id == l->index) {
                *section = k;
                return NS_OK;
            }
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "no section starts at SWC id %lld (a section's first own point; "
                       "`neurosolve morph FILE --sections` lists them)", (long long)l->index);
    case NS_LOCATION_NAMED: {
        int64_t seen = 0;
        for (int32_t k = 0; k < ns; ++k)
            if (class_of_type(cell->sections[k].type) == l->type && seen++ == l->index) {
                *section = k;
                return NS_OK;
            }
        char name[32];
        class_name(l->type, name, sizeof name);
        if (seen == 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "no section %s[%lld]: the cell has no %s sections",
                                      name, (long long)l->index, name);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "no section %s[%lld]: the cell has %s[0] to %s[%lld]", name,
                       (long long)l->index, name, name, (long long)seen - 1);
    }
    case NS_LOCATION_COMPARTMENT: {
        const int32_t n = ns_tree_size(cell->tree);
        if (l->index < 0 || l->index >= n)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "compartment %lld is outside the cell (%d compartments)",
                           (long long)l->index, (int)n);
        *section = cell->section[l->index];
        return NS_OK;
    }
    }
    return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_location_section: unknown location kind %d", (int)l->kind);
}

ns_status ns_location_compartment(const ns_cell_t *cell, const ns_location *l, int32_t *compartment) {
    if (!cell || !l || !compartment) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_location_compartment: NULL argument");
    int32_t section;
    ns_status st = ns_location_section(cell, l, &section);
    if (st != NS_OK) return st;
    if (l->kind == NS_LOCATION_COMPARTMENT) {
        *compartment = (int32_t)l->index;
        return NS_OK;
    }
    return ns_cell_locate(cell, section, l->x, compartment);
}

ns_status ns_section_name(const ns_cell_t *cell, int32_t section, char *name, size_t size) {
    if (!cell || !name || size == 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_section_name: NULL argument");
    if (section < 0 || section >= cell->n_sections)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_section_name: no section %d (%d sections)", (int)section,
                       (int)cell->n_sections);
    const int32_t cls = class_of_type(cell->sections[section].type);
    int64_t k = 0;
    for (int32_t q = 0; q < section; ++q) k += class_of_type(cell->sections[q].type) == cls;
    char base[32];
    class_name(cls, base, sizeof base);
    snprintf(name, size, "%s[%lld]", base, (long long)k);
    return NS_OK;
}
