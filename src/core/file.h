/* Private: reading a whole text file (models, parameters, network files,
 * JSON configs) into memory, with a size cap, and the line reader of the
 * "key = value" formats (parameter files, section specs). */
#ifndef NS_CORE_FILE_H
#define NS_CORE_FILE_H

#include <stddef.h>

#include "neurosolve/status.h"

/* The bytes of `path` in *buf (malloc'd, NUL-terminated; *n without the NUL).
 * Errors name the path: "PATH: cannot open: REASON" (NS_ERR_IO), "PATH: a
 * WHAT over N MiB" (NS_ERR_SIZE, above max_bytes), a read error (NS_ERR_IO),
 * out of memory. Nothing is returned in *buf on failure. */
ns_status ns_file_read_all(const char *path, size_t max_bytes, const char *what, char **buf, size_t *n);

/* Lines of a text of `length` bytes named `name` in errors: set text,
 * length and name, the rest zero. */
typedef struct ns_lines {
    const char *text;
    size_t length;
    const char *name;
    size_t at;     /* where the next line starts */
    long lineno;   /* the line last returned, from 1 */
    char line[1024];
} ns_lines;

/* The next line with something on it once its '#' comment is cut: *s points
 * into r->line at its first character that is not a blank (' ', '\t',
 * '\r'). 1: a line; 0: the end; -1: a line longer than the buffer
 * (NS_ERR_PARSE set: "NAME:LINE: line longer than 1023 characters"). */
int ns_lines_next(ns_lines *r, char **s);

#endif
