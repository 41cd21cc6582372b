/* neurosolve: the one reader of the numbers users write.
 *
 * Every number of a user's file or option goes through these two calls:
 * parameter, model and network files, SONATA type tables, checkpoint times,
 * and every numeric option of the `neurosolve` command (docs/cli.md,
 * "Numbers"). One grammar, as NEURON's hoc users write numbers:
 *   decimal:  [+-] digits [. digits] [(e|E) [+-] digits], or [+-] . digits [...]
 *   integer:  [+-] digits
 * no hexadecimal (0x10), no inf or nan, no blanks, no text after the number.
 * A decimal whose magnitude overflows a double (1e999) is refused, and so is
 * a nonzero one below 2.2250738585072014e-308 (DBL_MIN, 1e-320: it would be
 * a subnormal double, whose arithmetic is imprecise and slow, or 0). Then
 * the range [min, max], bounds included (pass -HUGE_VAL / HUGE_VAL or
 * INT64_MIN / INT64_MAX for none); "-0" is below a minimum of 0.
 *
 * On failure nothing is stored and ns_last_error() says why, quoting the
 * text (at most 60 characters) without naming its place (the caller adds
 * the file and line or the option):
 *   NS_ERR_PARSE            'abc' is not a decimal number / not an integer
 *   NS_ERR_INVALID_ARGUMENT '1e999' is beyond the range of a double (1.8e+308)
 *                           '1e-320' is too close to 0 for a double (nonzero below 2.2e-308: write 0)
 *                           '5' is out of range: not in [0, 1]  (or: below 0, above 1) */
#ifndef NEUROSOLVE_NUMBER_H
#define NEUROSOLVE_NUMBER_H

#include <stdint.h>

#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

NS_API ns_status ns_number_parse(const char *text, double min, double max, double *value);
NS_API ns_status ns_integer_parse(const char *text, int64_t min, int64_t max, int64_t *value);

#ifdef __cplusplus
}
#endif
#endif
