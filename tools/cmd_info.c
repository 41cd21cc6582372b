/* neurosolve info: version, build options, OpenMP threads, CUDA devices. */
#include <string.h>

#include "cli.h"

int cmd_info(int argc, char **argv) {
    int as_json = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--json") == 0) as_json = 1;
        else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: neurosolve info [--json]\n"
                   "Prints the version, the build options (CUDA, OpenMP), the OpenMP thread count\n"
                   "and each visible CUDA device.\n");
            return 0;
        } else return cli_usage_error("info", "unknown option '%s'", argv[i]);
    }
    ns_build_info b;
    ns_get_build_info(&b);
    int n_dev = 0;
    ns_status ds = b.cuda ? ns_cuda_device_count(&n_dev) : NS_ERR_UNSUPPORTED;
    if (as_json) {
        cli_json j;
        json_begin(&j, stdout);
        json_string(&j, "version", ns_version());
        json_string(&j, "build_type", b.build_type);
        json_bool(&j, "cuda", b.cuda);
        json_bool(&j, "openmp", b.openmp);
        json_int(&j, "openmp_threads", b.openmp_threads);
        json_string(&j, "cuda_architectures", b.cuda_architectures);
        json_array_begin(&j, "devices");
        for (int d = 0; ds == NS_OK; ++d) { /* every visible device, usable or not */
            ns_device_info di;
            if (ns_cuda_device_info(d, &di) != NS_OK) break;
            json_object_begin(&j, NULL);
            json_int(&j, "index", d);
            json_string(&j, "name", di.name);
            json_int(&j, "compute_capability", di.major * 10 + di.minor);
            json_int(&j, "multiprocessors", di.multiprocessors);
            json_double(&j, "memory_gib", di.global_memory_gib);
            json_double(&j, "free_memory_gib", di.free_memory_gib);
            json_bool(&j, "usable", di.usable);
            json_object_end(&j);
        }
        json_array_end(&j);
        json_end(&j);
        return 0;
    }
    printf("neurosolve %s (%s build)\n", ns_version(), b.build_type);
    printf("OpenMP:  %s, %d threads\n", b.openmp ? "yes" : "no", b.openmp_threads);
    if (b.cuda) printf("CUDA:    compiled in for %s\n", b.cuda_architectures);
    else printf("CUDA:    not compiled in (NS_CUDA=OFF or no nvcc)\n");
    if (b.cuda) {
        if (ds != NS_OK) printf("         devices: error: %s\n", ns_last_error());
        else if (n_dev == 0) printf("         no usable GPU on this machine\n");
        for (int d = 0; ds == NS_OK; ++d) { /* every visible device, usable or not */
            ns_device_info di;
            if (ns_cuda_device_info(d, &di) != NS_OK) break;
            printf("  device %d: %s, sm_%d%d, %d SMs, %.1f GiB (%.1f free)%s\n", d, di.name, di.major,
                   di.minor, di.multiprocessors, di.global_memory_gib, di.free_memory_gib,
                   di.usable ? "" : ", not usable: this build has no code for it");
        }
        ns_clear_error();
    }
    return 0;
}
