/* A minimal test harness: CHECK records a failure and goes on, so one run
 * reports every broken expectation; the program's exit code is the verdict.
 * Each test program ends with `return check_summary("name");`. */
#ifndef NS_TESTS_CHECK_H
#define NS_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        ++check_count;                                                               \
        if (!(cond)) {                                                               \
            ++check_failures;                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        ++check_count;                                                               \
        if (!(cond)) {                                                               \
            ++check_failures;                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

/* Status must be NS_OK; prints the library's detail otherwise. */
#define CHECK_OK(expr)                                                               \
    do {                                                                             \
        ns_status check_s_ = (expr);                                                 \
        ++check_count;                                                               \
        if (check_s_ != NS_OK) {                                                     \
            ++check_failures;                                                        \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
                    ns_status_string(check_s_), ns_last_error());                    \
        }                                                                            \
    } while (0)

/* The call must return `status` and ns_last_error() must hold every needle
 * (strings, one or more): a refusal is checked by what it says, not only its code. */
#define CHECK_FAILS(expr, status, ...)                                                              \
    do {                                                                                            \
        const ns_status check_f_ = (expr);                                                          \
        const char *check_n_[] = {__VA_ARGS__};                                                     \
        CHECK_MSG(check_f_ == (status), "%s gave %s: %s", #expr, ns_status_string(check_f_),        \
                  ns_last_error());                                                                 \
        for (size_t check_q_ = 0; check_q_ < sizeof check_n_ / sizeof *check_n_; ++check_q_)        \
            CHECK_MSG(strstr(ns_last_error(), check_n_[check_q_]) != NULL, "%s: '%s' not in '%s'",   \
                      #expr, check_n_[check_q_], ns_last_error());                                  \
    } while (0)

/* |a - b| <= tol * max(|b|, 1e-300): relative closeness. */
static inline double check_rel(double a, double b) {
    double s = fabs(b) > 1e-300 ? fabs(b) : 1e-300;
    return fabs(a - b) / s;
}

static inline int check_summary(const char *name) {
    if (check_failures)
        printf("%s: %d of %d checks FAILED\n", name, check_failures, check_count);
    else
        printf("%s: all %d checks passed\n", name, check_count);
    return check_failures ? 1 : 0;
}

/* A test that cannot run here (no GPU) says so and exits with ctest's
 * skip code (SKIP_RETURN_CODE 77 is set for every test). */
#define CHECK_SKIP(...)                                                              \
    do {                                                                             \
        printf("SKIPPED: ");                                                         \
        printf(__VA_ARGS__);                                                         \
        printf("\n");                                                                \
        return 77;                                                                   \
    } while (0)

#endif
