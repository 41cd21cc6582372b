/* neurosolve: output files that appear only when complete.
 *
 * Every file the library and the command write goes through this helper:
 * the data go to a temporary file in the destination's folder
 * (".NAME.partial-PID-N", NAME cut where that would pass the file system's
 * 255-byte name limit; removed on failure), which is renamed over NAME
 * only when everything was written and closed without error. A failed or
 * interrupted write therefore leaves no file that looks like a result, and
 * an existing NAME survives a failed overwrite unchanged. A process killed
 * before it could remove its temporary (SIGKILL, a crash) leaves it behind:
 * the next open of NAME (or of the folder NAME) removes every temporary of
 * NAME whose PID no longer runs on this machine (kill(PID, 0) answers
 * ESRCH); those of live processes stay. */
#ifndef NEUROSOLVE_OUTPUT_H
#define NEUROSOLVE_OUTPUT_H

#include <stdio.h>

#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_output ns_output;

/* Start writing `path`. NS_ERR_IO naming the path and the OS reason when
 * its folder does not exist or is not writable, or when `path` names a
 * directory. On success *out holds the handle. */
NS_API ns_status ns_output_open(const char *path, ns_output **out);

/* The stream to write to (binary mode), and the temporary file's name (for
 * writers that need a path, e.g. a plotting script; keep the extension). */
NS_API FILE *ns_output_stream(ns_output *o);
NS_API const char *ns_output_temp_path(const ns_output *o);

/* Close the stream and rename the temporary file over the destination.
 * Always frees the handle; on any error (a failed write, close or rename)
 * the temporary file is removed, the destination is left as it was, and the
 * status is NS_ERR_IO naming the destination and the OS reason. */
NS_API ns_status ns_output_commit(ns_output *o);

/* Drop the output: close and remove the temporary file, free the handle.
 * The destination is untouched. NULL is accepted. */
NS_API void ns_output_abort(ns_output *o);

/* A folder of outputs (a LiFE model): the files are written into a
 * temporary folder next to it (".NAME.partial-PID-N") and moved into NAME,
 * which is created if needed, only when every file was written. A failure
 * before the commit leaves NAME as it was. Moving into an existing NAME is
 * one rename per file (each file complete; a crash during the moves can
 * leave old and new files side by side). */
typedef struct ns_output_dir ns_output_dir;
NS_API ns_status ns_output_dir_open(const char *directory, ns_output_dir **out);
NS_API const char *ns_output_dir_path(const ns_output_dir *d); /* the folder to write into */
NS_API ns_status ns_output_dir_commit(ns_output_dir *d);      /* frees the handle */
NS_API void ns_output_dir_abort(ns_output_dir *d);            /* removes what was written; NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
