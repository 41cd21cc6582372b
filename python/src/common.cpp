// neurosolve._core: the helpers that every family shares (bindings.h).
#include "bindings.h"

namespace nsb {

void check(ns_status st) {
    if (st != NS_OK) {
        const char *m = ns_last_error();
        throw ns_error{st, (m && *m) ? std::string(m) : std::string(ns_status_string(st))};
    }
}

void translate(const std::exception_ptr &p, void *) {
    try {
        std::rethrow_exception(p);
    } catch (const ns_error &e) {
        nb::object mod = nb::module_::import_("neurosolve._errors");
        nb::object exc = mod.attr("_make")(e.status, e.message);
        PyErr_SetObject((PyObject *)Py_TYPE(exc.ptr()), exc.ptr());
    }
}

const char *device_name(int dt) {
    switch (dt) {
    case nb::device::cpu::value: return "cpu";
    case nb::device::cuda::value: return "cuda";
    case nb::device::cuda_host::value: return "cuda_host";
    case nb::device::cuda_managed::value: return "cuda_managed";
    default: return "another device";
    }
}

std::string dtype_name(nb::dlpack::dtype t) {
    const char *k = t.code == (uint8_t)nb::dlpack::dtype_code::Float  ? "float"
                    : t.code == (uint8_t)nb::dlpack::dtype_code::Int  ? "int"
                    : t.code == (uint8_t)nb::dlpack::dtype_code::UInt ? "uint"
                    : t.code == (uint8_t)nb::dlpack::dtype_code::Bool ? "bool"
                    : t.code == (uint8_t)nb::dlpack::dtype_code::Complex ? "complex"
                    : t.code == (uint8_t)nb::dlpack::dtype_code::Bfloat  ? "bfloat"
                                                                         : "other";
    return std::string(k) + std::to_string(t.bits) + (t.lanes != 1 ? "x" + std::to_string(t.lanes) : "");
}

void *stream_of(nb::handle s) {
    if (s.is_none()) return nullptr;
    nb::object v;
    if (nb::hasattr(s, "cuda_stream"))
        v = s.attr("cuda_stream");
    else if (nb::hasattr(s, "ptr"))
        v = s.attr("ptr");
    else
        v = nb::borrow(s);
    uintptr_t h;
    if (!nb::try_cast<uintptr_t>(v, h, false))
        fail(NS_ERR_INVALID_ARGUMENT, "stream must be None, an int handle (cudaStream_t) or an object with "
                                      ".cuda_stream (PyTorch) or .ptr (CuPy); got " +
                                          std::string(nb::inst_name(s).c_str()));
    return (void *)h;
}

ns_backend backend_of(const std::string &name) {
    ns_backend b;
    check(ns_backend_from_name(name.c_str(), &b));
    return b;
}

ns_hines_method hines_method_of(const std::string &name) {
    ns_hines_method m;
    check(ns_hines_method_from_name(name.c_str(), &m));
    return m;
}

std::unique_ptr<Tree> tree_copy(const ns_tree_t *src) {
    ns_tree_t *t = nullptr;
    check(ns_tree_create(ns_tree_size(src), ns_tree_parent(src), &t));
    return std::make_unique<Tree>(t);
}

nb::dict timing_dict(const ns_solve_timing &t) {
    nb::dict d;
    d["upload_ms"] = t.upload_ms;
    d["layout_ms"] = t.layout_ms;
    d["kernel_ms"] = t.kernel_ms;
    d["download_ms"] = t.download_ms;
    d["total_ms"] = t.total_ms;
    return d;
}

std::vector<int32_t> cell_shape_of(nb::handle cell_shape, int64_t n_cells, const char *fn) {
    std::vector<int32_t> cs;
    if (cell_shape.is_none()) return cs;
    view v = take<int32_t>(cell_shape, fn, "cell_shape", n_cells, place::host, false);
    const int32_t *p = (const int32_t *)v.ptr;
    cs.assign(p, p + n_cells);
    return cs;
}

} // namespace nsb
