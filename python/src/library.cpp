// neurosolve._core: the library: version, build, backends and methods (docs/python.md).
#include "bindings.h"

namespace nsb {

// version, build_info, backends and methods
void bind_library(nb::module_ &m) {
    m.def("version", [] { return std::string(ns_version()); });
    m.def("build_info", [] {
        ns_build_info b;
        ns_get_build_info(&b);
        nb::dict d;
        d["version"] = ns_version();
        d["cuda"] = (bool)b.cuda;
        d["openmp"] = (bool)b.openmp;
        d["openmp_threads"] = b.openmp_threads;
        d["build_type"] = b.build_type;
        d["cuda_architectures"] = b.cuda_architectures;
        return d;
    });
    m.def("cuda_device_count", [] {
        int n = 0;
        ns_status st = ns_cuda_device_count(&n);
        if (st == NS_ERR_UNSUPPORTED) {
            ns_clear_error();
            return 0;
        }
        check(st);
        return n;
    }, "Usable CUDA devices (0 without a GPU or in a build without CUDA).");
    m.def("backend_info", [](const std::string &name) {
        ns_backend_info i;
        check(ns_backend_query(backend_of(name), &i));
        nb::dict d;
        d["backend"] = ns_backend_name(i.backend);
        d["compiled"] = (bool)i.compiled;
        d["devices"] = i.devices;
        d["threads"] = i.threads;
        return d;
    }, "backend"_a, "ns_backend_query: compiled in, usable devices, CPU threads.");
    m.def("available_methods", [](const std::string &backend, const std::string &family) {
        ns_family f = pick<ns_family>("family", family, {{"hines", NS_FAMILY_HINES}, {"tridiag", NS_FAMILY_TRIDIAG},
                                                         {"sim", NS_FAMILY_SIM}, {"life", NS_FAMILY_LIFE}});
        const ns_backend b = backend_of(backend);
        int32_t n = ns_backend_methods(b, f, nullptr, 0);
        std::vector<int32_t> ids((size_t)std::max(n, 0));
        n = ns_backend_methods(b, f, ids.data(), n);
        std::vector<std::string> out;
        for (int32_t k = 0; k < n; ++k) {
            const int32_t id = ids[(size_t)k];
            out.push_back(f == NS_FAMILY_TRIDIAG ? ns_tridiag_method_name((ns_tridiag_method)id)
                          : f == NS_FAMILY_LIFE  ? ns_life_variant_name((ns_life_variant)id)
                                                 : ns_hines_method_name((ns_hines_method)id));
        }
        return out;
    }, "backend"_a, "family"_a, "ns_backend_methods: the methods of a family (hines, tridiag, sim, life) "
                                "compiled into this build for a backend (cpu, cuda).");
    m.def("status_string", [](int s) { return std::string(ns_status_string((ns_status)s)); });
    m.def("hines_method_backend", [](const std::string &method) {
        return std::string(ns_backend_name(ns_hines_method_backend(hines_method_of(method))));
    });
    m.def("hines_methods", [] {
        std::vector<std::string> v;
        for (int i = 0; i <= (int)NS_HINES_TREE; ++i) v.push_back(ns_hines_method_name((ns_hines_method)i));
        return v;
    });
    m.def("tridiag_methods", [] {
        std::vector<std::string> v;
        for (int i = 0; i < NS_TRIDIAG_METHOD_COUNT; ++i) v.push_back(ns_tridiag_method_name((ns_tridiag_method)i));
        return v;
    });
    m.def("_raise", [](int status, const std::string &msg) { fail((ns_status)status, msg); }); // for tests
}

} // namespace nsb
