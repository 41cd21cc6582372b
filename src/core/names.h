/* Private: an enumeration's names in an array, names[k] the name of value k. */
#ifndef NS_CORE_NAMES_H
#define NS_CORE_NAMES_H

#include <string.h>

/* names[value] for 0 <= value < n, else `other`. */
static inline const char *ns_name_of(const char *const *names, int n, int value, const char *other) {
    return value >= 0 && value < n ? names[value] : other;
}

/* The k < n with names[k] equal to name (not NULL), or -1. */
static inline int ns_name_index(const char *const *names, int n, const char *name) {
    for (int k = 0; k < n; ++k)
        if (strcmp(name, names[k]) == 0) return k;
    return -1;
}

#endif
