/* Which GPUs a build runs on (src/core/cuda_arch.c): CMAKE_CUDA_ARCHITECTURES
 * entries against compute capabilities, without a GPU. */
#include "check.h"
#include "core/cuda_arch.h"

int main(void) {
    const char *def = "75-real;80-real;86-real;89-real;90";
    CHECK(ns_cuda_archs_run_on(def, 7, 5) == 1);
    CHECK(ns_cuda_archs_run_on(def, 8, 0) == 1);
    CHECK(ns_cuda_archs_run_on(def, 8, 6) == 1);
    CHECK(ns_cuda_archs_run_on(def, 8, 7) == 1); /* Orin: sm_86 machine code */
    CHECK(ns_cuda_archs_run_on(def, 8, 9) == 1);
    CHECK(ns_cuda_archs_run_on(def, 9, 0) == 1);
    CHECK(ns_cuda_archs_run_on(def, 10, 0) == 1); /* Blackwell: compute_90 PTX */
    CHECK(ns_cuda_archs_run_on(def, 12, 0) == 1);
    CHECK(ns_cuda_archs_run_on(def, 7, 0) == 0);  /* Volta: not built */
    CHECK(ns_cuda_archs_run_on(def, 6, 1) == 0);  /* Pascal */
    CHECK(ns_cuda_archs_min(def) == 75);

    CHECK(ns_cuda_archs_run_on("90", 9, 0) == 1);
    CHECK(ns_cuda_archs_run_on("90", 8, 0) == 0); /* the old default: A100 could not run it */
    CHECK(ns_cuda_archs_run_on("90-real", 10, 0) == 0); /* no PTX */
    CHECK(ns_cuda_archs_run_on("80-real", 8, 6) == 1);
    CHECK(ns_cuda_archs_run_on("86-real", 8, 0) == 0);
    CHECK(ns_cuda_archs_run_on("80-virtual", 8, 0) == 1);
    CHECK(ns_cuda_archs_run_on("80-virtual", 9, 0) == 1);
    CHECK(ns_cuda_archs_run_on("80-virtual", 7, 5) == 0);
    CHECK(ns_cuda_archs_run_on("90a-real", 9, 0) == 1);
    CHECK(ns_cuda_archs_run_on("90a", 10, 0) == 0);
    CHECK(ns_cuda_archs_run_on("70-real;75-real;80-real;86-real;89-real;90", 7, 0) == 1);
    CHECK(ns_cuda_archs_run_on("100-real;120", 12, 1) == 1);
    CHECK(ns_cuda_archs_run_on("100-real;120", 10, 3) == 1);
    CHECK(ns_cuda_archs_run_on("100-real;120", 11, 0) == 0);
    CHECK(ns_cuda_archs_min("100-real;120") == 100);
    CHECK(ns_cuda_archs_run_on("100f-real", 10, 3) == 1);
    CHECK(ns_cuda_archs_run_on("100f-real", 12, 0) == 0);
    CHECK(ns_cuda_archs_run_on("75-real,80-real,90", 8, 6) == 1); /* NS_CUDA_ARCHS's separator */
    CHECK(ns_cuda_archs_run_on("75-real,80-real,90", 7, 0) == 0);

    CHECK(ns_cuda_archs_run_on("native", 9, 0) == -1);
    CHECK(ns_cuda_archs_run_on("all-major", 9, 0) == -1);
    CHECK(ns_cuda_archs_run_on("", 9, 0) == -1);
    CHECK(ns_cuda_archs_run_on(NULL, 9, 0) == -1);
    CHECK(ns_cuda_archs_min("native") == 0);

    /* This build: the list CMake compiled for (empty without CUDA). */
    const char *built = ns_cuda_built_archs();
    CHECK(built != NULL);
    printf("built for: '%s' (oldest %d)\n", built, ns_cuda_archs_min(built));
    return check_summary("test_cuda_arch");
}
