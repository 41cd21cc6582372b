/* Private: the number grammar of include/neurosolve/number.h on spans of a
 * larger text (expressions of model files). */
#ifndef NS_CORE_NUMBER_H
#define NS_CORE_NUMBER_H

#include <stddef.h>

#include "neurosolve/number.h"

/* The length of the decimal number at the start of s[0, n) (0: none). */
size_t ns_number_length(const char *s, size_t n);
/* ns_number_parse of the n bytes at s. */
ns_status ns_number_span(const char *s, size_t n, double min, double max, double *value);

#endif
