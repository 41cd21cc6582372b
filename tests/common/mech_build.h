/* Tests that need a mechanism library built from .mod files: build it with the system C
 * compiler (ns_mechanisms_build, as `neurosolve mechanisms build`) in the test's scratch
 * folder (test_tmpdir.h) and open it. Without a C compiler they skip (exit 77):
 *
 *     int skip = 0;
 *     ns_mech_library_t *lib = test_mech_from_files(MECH_DIR "/test/gap.mod", "libgap.so", &skip);
 *     if (skip) return tmpdir_remove(), 77;
 *
 * Include after check.h, test_tmpdir.h and neurosolve/nmodl.h. */
#ifndef NS_TEST_MECH_BUILD_H
#define NS_TEST_MECH_BUILD_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The library of the .mod files in dir, named name in the scratch folder (options may be
 * NULL). NULL with *skip = 1 when there is no C compiler (printing SKIP and why); NULL after a
 * failed check when the build or the opening fails. */
static inline ns_mech_library_t *test_mech_build(const char *dir, const char *name,
                                                 const ns_mechanisms_build_options *options, int *skip) {
    char *so = tmp(name);
    ns_status s = ns_mechanisms_build(dir, so, options);
    if (s == NS_ERR_UNSUPPORTED && strstr(ns_last_error(), "cannot run the compiler")) {
        printf("SKIP: no C compiler (%s)\n", ns_last_error());
        *skip = 1;
        return NULL;
    }
    CHECK_OK(s);
    ns_mech_library_t *lib = NULL;
    if (s == NS_OK) CHECK_OK(ns_mech_library_open(so, &lib));
    return lib;
}

/* The library of the .mod files in dir that a ctest fixture built once for the tests of a run
 * (its path in the environment variable env, set by tests/CMakeLists.txt), else, when env is
 * unset (the program run by hand) or names no file, built here as test_mech_build does. */
static inline ns_mech_library_t *test_mech_shared(const char *env, const char *dir, const char *name, int *skip) {
    const char *built = getenv(env);
    FILE *f = built && *built ? fopen(built, "rb") : NULL;
    if (!f) return test_mech_build(dir, name, NULL, skip);
    fclose(f);
    ns_mech_library_t *lib = NULL;
    CHECK_OK(ns_mech_library_open(built, &lib));
    return lib;
}

/* The files named in files (space-separated paths, shell globs allowed) copied into the scratch
 * folder's mod/: that folder, or NULL after a failed check. */
static inline char *test_mech_copy(const char *files) {
    char *dir = tmp("mod");
    const size_t n = 2 * strlen(dir) + strlen(files) + 32;
    char *cmd = malloc(n);
    CHECK(cmd != NULL);
    if (!cmd) return NULL;
    snprintf(cmd, n, "mkdir -p %s && cp %s %s/", dir, files, dir);
    const int rc = system(cmd);
    free(cmd);
    CHECK_MSG(rc == 0, "copying %s into %s", files, dir);
    return rc == 0 ? dir : NULL;
}
/* The library of those files (test_mech_build's, without options). */
static inline ns_mech_library_t *test_mech_from_files(const char *files, const char *name, int *skip) {
    char *dir = test_mech_copy(files);
    return dir ? test_mech_build(dir, name, NULL, skip) : NULL;
}

#ifdef NS_NVCC
#include "neurosolve/device.h"

/* The library of the files (as test_mech_copy takes them) built with this build's nvcc for its
 * first architecture, for a GPU test; NULL and *skip set (the test then exits 77) without a GPU. */
static inline ns_mech_library_t *test_mech_from_files_cuda(const char *files, const char *name, int *skip) {
    int devices = 0;
    if (ns_cuda_device_count(&devices) != NS_OK || devices == 0) {
        printf("SKIP: no GPU\n");
        *skip = 1;
        return NULL;
    }
    ns_mechanisms_build_options bo = {0};
    bo.nvcc = NS_NVCC;
    bo.cuda_arch = NS_CUDA_ARCH;
    char *dir = test_mech_copy(files);
    return dir ? test_mech_build(dir, name, &bo, skip) : NULL;
}
#endif

#endif
