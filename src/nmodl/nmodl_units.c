/* The units of a UNITS block's named constants, as NEURON's translator
 * evaluates them against its units database (nrnunits.lib, NEURON 9: the
 * 2019 SI values of e, k, the mole, h). A unit expression is a product of
 * terms, numbers or names with an optional power (cm2), separated by spaces
 * or '-'; everything after a '/' divides. A name is looked up as written,
 * then without a plural 's', then as a prefix (milli, m, kilo, k, ...)
 * followed by a name. Each value is a factor and the powers of five base
 * dimensions (m, kg, sec, coul, K); the mole is a number (6.02214076e23), as
 * in nrnunits.lib. The table holds the names that .mod files use for
 * constants; a name outside it is an error naming it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

enum { N_DIM = 5 };

typedef struct uval {
    double f;
    int dim[N_DIM];
} uval;

/* name, definition (in the syntax above; "!k" is base dimension k) */
static const struct {
    const char *name, *def;
} UNITS[] = {
    {"m", "!0"}, {"kg", "!1"}, {"sec", "!2"}, {"coul", "!3"}, {"K", "!4"},
    {"pi", "3.14159265358979323846"}, {"two", "2"}, {"mole", "6.02214076e23"},
    {"e", "1.602176634e-19 coul"},
    {"second", "sec"}, {"s", "sec"}, {"minute", "60 sec"}, {"min", "minute"}, {"hour", "60 min"}, {"hr", "hour"},
    {"ms", "millisec"}, {"us", "microsec"},
    {"gram", "millikg"}, {"gm", "gram"}, {"mg", "milligram"},
    {"meter", "m"}, {"metre", "meter"}, {"cm", "centimeter"}, {"mm", "millimeter"}, {"micron", "micrometer"},
    {"cc", "cm3"}, {"liter", "kilocc"}, {"litre", "liter"}, {"ml", "milliliter"},
    {"newton", "kg m/sec2"}, {"nt", "newton"}, {"N", "newton"}, {"joule", "nt m"},
    {"cal", "4.1868 joule"}, {"calorie", "cal"}, {"dyne", "cm gm/sec2"}, {"erg", "cm2 gm/sec2"},
    {"coulomb", "coul"}, {"C", "coul"}, {"ampere", "coul/sec"}, {"amp", "ampere"}, {"watt", "joule/sec"},
    {"volt", "watt/amp"}, {"V", "volt"}, {"ohm", "volt/amp"}, {"mho", "/ohm"}, {"siemens", "/ohm"},
    {"farad", "coul/volt"},
    {"faraday", "e mole"}, {"boltzmann", "1.380649e-23 joule/K"}, {"k", "boltzmann"},
    {"gasconstant", "k mole"}, {"R", "gasconstant"},
    {"planck", "6.62607015e-34 joule sec"}, {"hbar", "planck/two pi"},
    {"degC", "K"}, {"kelvin", "K"}, {"hertz", "/sec"}, {"Hz", "hertz"}, {"hz", "hertz"},
    {"atmosphere", "1.01325e5 nt/m2"}, {"atm", "atmosphere"},
};

static const struct {
    const char *name;
    double f;
} PREFIXES[] = {
    {"yotta", 1e24}, {"zetta", 1e21}, {"exa", 1e18}, {"peta", 1e15}, {"tera", 1e12}, {"giga", 1e9},
    {"mega", 1e6}, {"myria", 1e4}, {"kilo", 1e3}, {"hecto", 1e2}, {"deka", 1e1}, {"deci", 1e-1},
    {"centi", 1e-2}, {"milli", 1e-3}, {"micro", 1e-6}, {"nano", 1e-9}, {"pico", 1e-12}, {"femto", 1e-15},
    {"atto", 1e-18}, {"zopto", 1e-21}, {"yocto", 1e-24},
    {"da", 1e1}, {"Y", 1e24}, {"Z", 1e21}, {"E", 1e18}, {"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6},
    {"k", 1e3}, {"h", 1e2}, {"d", 1e-1}, {"c", 1e-2}, {"m", 1e-3}, {"u", 1e-6}, {"n", 1e-9}, {"p", 1e-12},
    {"f", 1e-15}, {"a", 1e-18}, {"z", 1e-21}, {"y", 1e-24},
};

static int eval(const char *s, size_t n, uval *out, int depth, char *bad, size_t nbad);

static int lookup_exact(const char *name, size_t n, uval *out, int depth, char *bad, size_t nbad) {
    for (size_t i = 0; i < sizeof UNITS / sizeof *UNITS; i++) {
        if (strlen(UNITS[i].name) != n || strncmp(UNITS[i].name, name, n)) continue;
        const char *d = UNITS[i].def;
        if (d[0] == '!') {
            memset(out, 0, sizeof *out);
            out->f = 1.0;
            out->dim[d[1] - '0'] = 1;
            return 0;
        }
        return eval(d, strlen(d), out, depth + 1, bad, nbad);
    }
    return -1;
}

static int lookup(const char *name, size_t n, uval *out, int depth, char *bad, size_t nbad) {
    if (lookup_exact(name, n, out, depth, bad, nbad) == 0) return 0;
    if (n > 1 && name[n - 1] == 's' && lookup_exact(name, n - 1, out, depth, bad, nbad) == 0) return 0;
    for (size_t i = 0; i < sizeof PREFIXES / sizeof *PREFIXES; i++) {
        size_t k = strlen(PREFIXES[i].name);
        if (k >= n || strncmp(PREFIXES[i].name, name, k)) continue;
        if (lookup(name + k, n - k, out, depth + 1, bad, nbad) == 0) {
            out->f *= PREFIXES[i].f;
            return 0;
        }
    }
    return -1;
}

/* s[0..n): the product of its terms; after '/' they divide */
static int eval(const char *s, size_t n, uval *out, int depth, char *bad, size_t nbad) {
    memset(out, 0, sizeof *out);
    out->f = 1.0;
    if (depth > 16) return -1;
    int divide = 0;
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (isspace((unsigned char)c) || c == '-' || c == '*') { i++; continue; }
        if (c == '/') { divide = 1; i++; continue; }
        uval t;
        if (isdigit((unsigned char)c) || c == '.') {
            char num[64];
            size_t b = i;
            while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.' ||
                             ((s[i] == 'e' || s[i] == 'E') && i + 1 < n && (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '-' || s[i + 1] == '+')) ||
                             ((s[i] == '-' || s[i] == '+') && i > b && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
                i++;
            if (i - b >= sizeof num) return -1;
            memcpy(num, s + b, i - b);
            num[i - b] = 0;
            memset(&t, 0, sizeof t);
            t.f = strtod(num, NULL);
        } else if (isalpha((unsigned char)c) || c == '_') {
            size_t b = i;
            while (i < n && (isalpha((unsigned char)s[i]) || s[i] == '_')) i++;
            if (lookup(s + b, i - b, &t, depth, bad, nbad)) {
                if (!bad[0]) snprintf(bad, nbad, "%.*s", (int)(i - b > 60 ? 60 : i - b), s + b);
                return -1;
            }
            int pw = 0;
            while (i < n && isdigit((unsigned char)s[i]) && pw < 10) pw = 10 * pw + (s[i++] - '0');
            if (pw > 1) {
                uval u = t;
                for (int k = 1; k < pw; k++) {
                    t.f *= u.f;
                    for (int d = 0; d < N_DIM; d++) t.dim[d] += u.dim[d];
                }
            }
        } else {
            if (!bad[0]) snprintf(bad, nbad, "%c", c);
            return -1;
        }
        if (divide) out->f /= t.f;
        else out->f *= t.f;
        for (int d = 0; d < N_DIM; d++) out->dim[d] += divide ? -t.dim[d] : t.dim[d];
    }
    return 0;
}

int nm_units_convert(const char *from, const char *to, double *value, char *msg, size_t nmsg) {
    uval a, b;
    char bad[64] = {0};
    if (eval(from, strlen(from), &a, 0, bad, sizeof bad) || eval(to, strlen(to), &b, 0, bad, sizeof bad)) {
        snprintf(msg, nmsg, "unknown unit '%s'", bad[0] ? bad : "?");
        return -1;
    }
    for (int d = 0; d < N_DIM; d++)
        if (a.dim[d] != b.dim[d]) {
            snprintf(msg, nmsg, "the units (%.60s) and (%.60s) are not conformable", from, to);
            return -1;
        }
    *value = a.f / b.f;
    return 0;
}
