/* Private: which GPUs the CUDA code of this build runs on. */
#ifndef NS_CORE_CUDA_ARCH_H
#define NS_CORE_CUDA_ARCH_H

#ifdef __cplusplus
extern "C" {
#endif

/* Whether code compiled for `archs` (CMAKE_CUDA_ARCHITECTURES syntax, e.g.
 * "75-real;80-real;90": NN = machine code and PTX, NN-real = machine code,
 * NN-virtual = PTX, NNa/NNf = arch-specific machine code) can run on a
 * device of compute capability major.minor: machine code for X.Y runs on
 * X.Z with Z >= Y (same X; an arch-specific one only on X.Y), PTX for X.Y on
 * every device of capability >= X.Y. Returns 1 (runs), 0 (does not), or -1
 * when `archs` cannot be judged (empty, "all", "all-major", "native"). */
int ns_cuda_archs_run_on(const char *archs, int major, int minor);

/* The architectures this build's CUDA code was compiled for ("" without CUDA). */
const char *ns_cuda_built_archs(void);

/* The oldest compute capability (major * 10 + minor) this build runs on, or
 * 0 when unknown. */
int ns_cuda_archs_min(const char *archs);

/* For tests only (private, not exported): make every device look like
 * compute capability major.minor to the usability check (0.0: the real
 * one), so that the "unsupported device" path runs on any GPU. The library
 * reads no environment variable for this. Not thread-safe. */
void ns_cuda_fake_capability(int major, int minor);

#ifdef __cplusplus
}
#endif
#endif
