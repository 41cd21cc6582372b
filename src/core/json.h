/* Private: a strict JSON reader (RFC 8259) for the configuration files the
 * library reads (SONATA's circuit and simulation configs, its dynamics
 * parameter files; docs/networks.md, "SONATA"). The whole text becomes a
 * tree; errors read "NAME:LINE:COLUMN: reason". Strict: no comments, no
 * trailing commas, no NaN or Infinity, no leading zeros, no control
 * characters in strings, no duplicate keys, valid UTF-8 escapes (surrogate
 * pairs joined, lone surrogates refused), nothing after the value, nesting at
 * most NS_JSON_MAX_DEPTH, numbers finite doubles. Fuzzed by fuzz/fuzz_json.c. */
#ifndef NS_CORE_JSON_H
#define NS_CORE_JSON_H

#include <stddef.h>

#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NS_JSON_MAX_DEPTH 64
#define NS_JSON_MAX_FILE ((size_t)64 << 20) /* 64 MiB: ns_json_read */

typedef enum { NS_JSON_NULL, NS_JSON_FALSE, NS_JSON_TRUE, NS_JSON_NUMBER, NS_JSON_STRING, NS_JSON_ARRAY,
               NS_JSON_OBJECT } ns_json_kind;

typedef struct ns_json {
    ns_json_kind kind;
    int line;               /* where the value starts (1-based), for messages */
    double number;          /* NS_JSON_NUMBER */
    char *string;           /* NS_JSON_STRING: UTF-8, NUL-terminated (a \u0000 is refused) */
    size_t n;               /* ARRAY, OBJECT: members */
    struct ns_json *items;  /* ARRAY, OBJECT: the values, in order */
    char **keys;            /* OBJECT: the keys, in order */
} ns_json;

/* Parse `length` bytes; `name` names the text in errors. *out: the root
 * (free with ns_json_free). NS_ERR_PARSE on any error (nothing returned). */
NS_API ns_status ns_json_parse(const char *text, size_t length, const char *name, ns_json **out);
/* Read and parse a file (at most NS_JSON_MAX_FILE bytes); NS_ERR_IO naming it when it cannot be read. */
NS_API ns_status ns_json_read(const char *path, ns_json **out);
NS_API void ns_json_free(ns_json *root);

/* The member `key` of an object (NULL when absent or `obj` is not an object). */
NS_API const ns_json *ns_json_get(const ns_json *obj, const char *key);
NS_API const char *ns_json_kind_name(ns_json_kind kind);

#ifdef __cplusplus
}
#endif
#endif
