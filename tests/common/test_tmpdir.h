/* A scratch directory for tests that write files: /tmp/PREFIX_PID, made by
 * tmpdir_make and removed with its contents by tmpdir_remove; tmp(NAME)
 * gives a path inside it (eight rotating buffers, so that a call may take a
 * few paths at once). Needs _POSIX_C_SOURCE for getpid. */
#ifndef NS_TEST_TMPDIR_H
#define NS_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char tmpdir_path[256];

static inline char *tmp(const char *name) {
    static char buf[8][512];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir_path, name);
    return buf[k];
}

/* 0 on success. */
static inline int tmpdir_make(const char *prefix) {
    snprintf(tmpdir_path, sizeof tmpdir_path, "/tmp/%s_%ld", prefix, (long)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir_path);
    return system(cmd) != 0;
}

static inline int tmpdir_remove(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir_path);
    return system(cmd) != 0;
}

#endif
