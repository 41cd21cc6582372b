/* Private: reading a whole text file (models, parameters, network files,
 * JSON configs) into memory, with a size cap. */
#ifndef NS_CORE_FILE_H
#define NS_CORE_FILE_H

#include <stddef.h>

#include "neurosolve/status.h"

/* The bytes of `path` in *buf (malloc'd, NUL-terminated; *n without the NUL).
 * Errors name the path: "PATH: cannot open: REASON" (NS_ERR_IO), "PATH: a
 * WHAT over N MiB" (NS_ERR_SIZE, above max_bytes), a read error (NS_ERR_IO),
 * out of memory. Nothing is returned in *buf on failure. */
ns_status ns_file_read_all(const char *path, size_t max_bytes, const char *what, char **buf, size_t *n);

#endif
