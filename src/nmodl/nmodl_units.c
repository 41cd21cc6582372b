/* The units of a UNITS block's named constants, as NEURON's translator
 * evaluates them against its units database (nrnunits.lib, NEURON 9: the
 * 2019 SI values of e, k, the mole, h) and the file's own `(a) = (b)`
 * definitions. A unit expression is a product of terms, numbers or names
 * with an optional power (cm2), separated by spaces or '-'; everything after
 * a '/' divides. A name is looked up among the file's definitions, then in
 * the table as written, then without a plural 's', then as a prefix (milli,
 * m, kilo, k, ...) alone or followed by a name. The value of `NAME = (u1) (u2)` is
 * the factor of u1 over that of u2; like nocmodl, no check that the two
 * have the same dimensions. The table holds the names that .mod files use
 * for constants; a name outside it is an error naming it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

typedef struct uctx {
    const char *const *alias; /* the file's (a) = (b): alias[2k] a, alias[2k + 1] b */
    int n_alias;
    char bad[64];             /* the first name not found */
    long steps;               /* lookups so far: bounded, for files that define units by each other */
} uctx;

enum { MAX_STEPS = 100000, MAX_PREFIXES = 2 };

/* name, definition (in the syntax above; "!" is a base unit: m, kg, sec, coul, K) */
static const struct {
    const char *name, *def;
} UNITS[] = {
    {"m", "!"}, {"kg", "!"}, {"sec", "!"}, {"coul", "!"}, {"K", "!"},
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

static int eval(const char *s, size_t n, double *out, int depth, uctx *c);

static int lookup_exact(const char *name, size_t n, double *out, int depth, uctx *c) {
    for (int i = 0; i < c->n_alias; i++) {
        const char *a = c->alias[2 * i], *d = c->alias[2 * i + 1];
        if (strlen(a) == n && !strncmp(a, name, n)) return eval(d, strlen(d), out, depth + 1, c);
    }
    for (size_t i = 0; i < sizeof UNITS / sizeof *UNITS; i++) {
        if (strlen(UNITS[i].name) != n || strncmp(UNITS[i].name, name, n)) continue;
        const char *d = UNITS[i].def;
        if (d[0] == '!') {
            *out = 1.0;
            return 0;
        }
        return eval(d, strlen(d), out, depth + 1, c);
    }
    return -1;
}

/* npre: the prefixes already taken off the name */
static int lookup(const char *name, size_t n, double *out, int depth, uctx *c, int npre) {
    if (++c->steps > MAX_STEPS) return -1;
    if (lookup_exact(name, n, out, depth, c) == 0) return 0;
    if (n > 1 && name[n - 1] == 's' && lookup_exact(name, n - 1, out, depth, c) == 0) return 0;
    for (size_t i = 0; i < sizeof PREFIXES / sizeof *PREFIXES; i++) {
        size_t k = strlen(PREFIXES[i].name);
        if (k == n && !strncmp(PREFIXES[i].name, name, k)) { /* a prefix alone: (milli/liter) */
            *out = PREFIXES[i].f;
            return 0;
        }
        if (k >= n || npre >= MAX_PREFIXES || strncmp(PREFIXES[i].name, name, k)) continue;
        if (lookup(name + k, n - k, out, depth + 1, c, npre + 1) == 0) {
            *out *= PREFIXES[i].f;
            return 0;
        }
    }
    return -1;
}

/* s[0..n): the product of its terms; after '/' they divide */
static int eval(const char *s, size_t n, double *out, int depth, uctx *c) {
    *out = 1.0;
    if (depth > 16) return -1;
    int divide = 0;
    size_t i = 0;
    while (i < n) {
        char ch = s[i];
        if (isspace((unsigned char)ch) || ch == '-' || ch == '*') { i++; continue; }
        if (ch == '/') { divide = 1; i++; continue; }
        double t;
        if (isdigit((unsigned char)ch) || ch == '.') {
            char num[64];
            size_t b = i;
            while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '.' ||
                             ((s[i] == 'e' || s[i] == 'E') && i + 1 < n &&
                              (isdigit((unsigned char)s[i + 1]) || s[i + 1] == '-' || s[i + 1] == '+')) ||
                             ((s[i] == '-' || s[i] == '+') && i > b && (s[i - 1] == 'e' || s[i - 1] == 'E'))))
                i++;
            if (i - b >= sizeof num) return -1;
            memcpy(num, s + b, i - b);
            num[i - b] = 0;
            t = strtod(num, NULL);
        } else if (isalpha((unsigned char)ch) || ch == '_') {
            size_t b = i;
            while (i < n && (isalpha((unsigned char)s[i]) || s[i] == '_')) i++;
            if (lookup(s + b, i - b, &t, depth, c, 0)) {
                if (!c->bad[0]) snprintf(c->bad, sizeof c->bad, "%.*s", (int)(i - b > 60 ? 60 : i - b), s + b);
                return -1;
            }
            int pw = 0;
            while (i < n && isdigit((unsigned char)s[i]) && pw < 10) pw = 10 * pw + (s[i++] - '0');
            for (double u = t; pw > 1; pw--) t *= u;
        } else {
            if (!c->bad[0]) snprintf(c->bad, sizeof c->bad, "%c", ch);
            return -1;
        }
        if (divide) *out /= t;
        else *out *= t;
    }
    return 0;
}

int nm_units_convert(const char *from, const char *to, const char *const *alias, int n_alias, double *value, char *msg,
                     size_t nmsg) {
    uctx c = {alias, n_alias, {0}, 0};
    double a, b;
    if (eval(from, strlen(from), &a, 0, &c) || eval(to, strlen(to), &b, 0, &c)) {
        if (c.steps > MAX_STEPS) snprintf(msg, nmsg, "the units' definitions take more than %d steps", MAX_STEPS);
        else snprintf(msg, nmsg, "unknown unit '%s'", c.bad[0] ? c.bad : "?");
        return -1;
    }
    *value = a / b;
    return 0;
}
