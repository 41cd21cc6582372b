/* Status strings and the thread-local last-error detail. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

#define NS_ERROR_CAPACITY 1024

static _Thread_local char last_error[NS_ERROR_CAPACITY];

const char *ns_status_string(ns_status status) {
    switch (status) {
    case NS_OK: return "success";
    case NS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case NS_ERR_OUT_OF_MEMORY: return "out of host memory";
    case NS_ERR_IO: return "input/output error";
    case NS_ERR_PARSE: return "parse error";
    case NS_ERR_TOPOLOGY: return "invalid tree";
    case NS_ERR_SINGULAR: return "singular system (zero pivot)";
    case NS_ERR_NOT_FINITE: return "NaN or Inf in the data";
    case NS_ERR_UNSUPPORTED: return "not supported";
    case NS_ERR_NO_DEVICE: return "no usable GPU";
    case NS_ERR_CUDA: return "CUDA error";
    case NS_ERR_CUSPARSE: return "cuSPARSE error";
    case NS_ERR_SIZE: return "inconsistent sizes";
    case NS_ERR_EMPTY: return "empty input";
    case NS_ERR_DEVICE_MEMORY: return "out of device memory";
    case NS_ERR_INTERNAL: return "internal error";
    case NS_ERR_MECHANISM: return "mechanism error";
    }
    return "unknown status";
}

const char *ns_last_error(void) { return last_error; }

void ns_clear_error(void) { last_error[0] = '\0'; }

ns_status ns_fail(ns_status status, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

void ns_error_prefix(const char *prefix) {
    char copy[NS_ERROR_CAPACITY];
    memcpy(copy, last_error, sizeof copy);
    size_t n = strlen(prefix);
    if (n > NS_ERROR_CAPACITY / 2) n = NS_ERROR_CAPACITY / 2;
    /* prefix (cut to half the buffer) + ": " + as much of the old detail as fits */
    memcpy(last_error, prefix, n);
    last_error[n] = ':';
    last_error[n + 1] = ' ';
    size_t rest = NS_ERROR_CAPACITY - n - 3;
    size_t old = strlen(copy);
    if (old > rest) old = rest;
    memcpy(last_error + n + 2, copy, old);
    last_error[n + 2 + old] = '\0';
}
