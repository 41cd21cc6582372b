#define _POSIX_C_SOURCE 199309L
#include <time.h>

#include "core/timer.h"

double ns_time_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
