// neurosolve._core: the nanobind bindings of libneurosolve (docs/python.md).
//
// Only the public headers (include/neurosolve/) are used. Every failing C
// call raises neurosolve.Error (a subclass per ns_status, python/neurosolve/
// _errors.py) carrying ns_last_error()'s message. Arrays come in through
// nb::ndarray<> (numpy's buffer protocol or DLPack: CuPy, PyTorch, JAX, ...)
// and are checked here for dtype, shape, contiguity and device: nothing is
// ever converted or copied behind the caller's back; a mismatch raises
// InvalidArgumentError (or SizeError) naming the argument. The GIL is
// released around every call that can take time.
//
// The module is written in one file per family (library.cpp, morph.cpp,
// solvers.cpp, sim.cpp, mech.cpp, network.cpp, life.cpp, lfp.cpp, grad.cpp), each with bind_*
// functions that module.cpp calls in order; this header holds what they
// share: the error and array checks, the name lookups and the wrapper types.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h> /* paths: str or os.PathLike */
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/unique_ptr.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "neurosolve/neurosolve.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace nsb {

// ------------------------------------------------------------------ errors

struct ns_error {
    int status;
    std::string message;
};

[[noreturn]] inline void fail(ns_status status, const std::string &message) { throw ns_error{status, message}; }

// Raise the error of a failed C call (ns_last_error()'s message).
void check(ns_status st);

// f() -> ns_status run with the GIL released (other Python threads go on meanwhile); a failure
// raises as check() does (the message is read before the GIL is taken back).
template <typename F> void check_released(F &&f) {
    ns_status st;
    std::string msg;
    {
        nb::gil_scoped_release r;
        st = f();
        if (st != NS_OK) msg = ns_last_error();
    }
    if (st != NS_OK) fail(st, msg);
}

// The same holding mu, an object's one-call-at-a-time lock, while f runs.
template <typename F> void check_locked(std::mutex &mu, F &&f) {
    check_released([&] {
        std::lock_guard<std::mutex> lock(mu);
        return f();
    });
}

// neurosolve.Error (python/neurosolve/_errors.py) from an ns_error.
void translate(const std::exception_ptr &p, void *);

// ----------------------------------------------------------------- arrays

using any_array = nb::ndarray<nb::ro>;

const char *device_name(int dt);
std::string dtype_name(nb::dlpack::dtype t);

// One array argument after its checks.
struct view {
    any_array arr;
    void *ptr = nullptr;
    int device = nb::device::cpu::value;
    int device_id = 0;
};

// Where the arrays of a call must live.
enum class place { host, cuda, any };

// Check an array argument: 1-D (or any shape with `flat`), dtype T, C-contiguous,
// `length` elements (-1: any), on the expected device. `writable` arrays must
// not be read-only (numpy's flag; DLPack exports carry none).
template <typename T>
view take(nb::handle obj, const char *fn, const char *name, int64_t length, place where, bool writable,
          bool flat = false) {
    view v;
    if (!nb::try_cast<any_array>(obj, v.arr, false))
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name +
                                          " is not an array (numpy, or an object with __dlpack__: CuPy, "
                                          "PyTorch, JAX); got " +
                                          nb::inst_name(obj).c_str());
    if (v.arr.dtype() != nb::dtype<T>())
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " has dtype " + dtype_name(v.arr.dtype()) +
                                          ", expected " + dtype_name(nb::dtype<T>()) +
                                          " (no conversion is made: convert it yourself, e.g. "
                                          "numpy.ascontiguousarray(x, dtype=...))");
    if (!flat && v.arr.ndim() != 1)
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " has " + std::to_string(v.arr.ndim()) +
                                          " dimensions, expected 1");
    // C-contiguous: strides (in elements) of a dense row-major array.
    int64_t expect = 1;
    for (size_t i = v.arr.size() ? v.arr.ndim() : 0; i-- > 0;) { // (an empty array has no layout to check)
        if (v.arr.shape(i) > 1 && v.arr.stride(i) != expect)
            fail(NS_ERR_INVALID_ARGUMENT,
                 std::string(fn) + ": " + name + " is not C-contiguous (stride " + std::to_string(v.arr.stride(i)) +
                     " elements in dimension " + std::to_string(i) +
                     "); no copy is made: pass numpy.ascontiguousarray(x) or x.copy()");
        expect *= (int64_t)v.arr.shape(i);
    }
    if (length >= 0 && (int64_t)v.arr.size() != length)
        fail(NS_ERR_SIZE, std::string(fn) + ": " + name + " has " + std::to_string(v.arr.size()) +
                              " elements, expected " + std::to_string(length));
    v.device = v.arr.device_type();
    v.device_id = v.arr.device_id();
    const bool host = v.device == nb::device::cpu::value;
    const bool cuda = v.device == nb::device::cuda::value || v.device == nb::device::cuda_managed::value;
    if (where == place::host && !host)
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " is " + device_name(v.device) +
                                          " memory, expected host (cpu) memory");
    if (where == place::cuda && !cuda)
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " is " + device_name(v.device) +
                                          " memory, expected CUDA device memory");
    if (where == place::any && !host && !cuda)
        fail(NS_ERR_INVALID_ARGUMENT,
             std::string(fn) + ": " + name + " is " + device_name(v.device) + " memory, expected cpu or cuda");
    if (writable && host) {
        // numpy's read-only arrays: nb::ro accepted them, the solve would write.
        // (Device arrays carry no such flag; the check costs nothing for them.)
        nb::object flags = nb::getattr(obj, "flags", nb::none());
        if (!flags.is_none() && nb::hasattr(flags, "writeable") && !nb::cast<bool>(flags.attr("writeable")))
            fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " is read-only, and the call writes it");
    }
    v.ptr = const_cast<void *>(v.arr.data());
    return v;
}

// A new numpy array owning a copy of n values (shape given).
template <typename T>
nb::object to_numpy(const T *src, std::vector<size_t> shape) {
    size_t n = 1;
    for (size_t s : shape) n *= s;
    T *buf = new T[n ? n : 1];
    if (n && src) std::memcpy(buf, src, n * sizeof(T));
    nb::capsule owner(buf, [](void *p) noexcept { delete[] (T *)p; });
    return nb::cast(nb::ndarray<nb::numpy, T>(buf, shape.size(), shape.data(), owner), nb::rv_policy::automatic);
}

template <typename T> nb::ndarray<nb::numpy, T> empty_numpy(size_t n) {
    T *buf = new T[n ? n : 1]();
    nb::capsule owner(buf, [](void *p) noexcept { delete[] (T *)p; });
    size_t shape[1] = {n};
    return nb::ndarray<nb::numpy, T>(buf, 1, shape, owner);
}

// A CUDA stream from None (the legacy default stream), an int handle, or an
// object with .cuda_stream (PyTorch) or .ptr (CuPy).
void *stream_of(nb::handle s);

// --------------------------------------------------------------- names

ns_backend backend_of(const std::string &name);
ns_hines_method hines_method_of(const std::string &name);

template <typename E> E pick(const char *what, const std::string &name, std::initializer_list<std::pair<const char *, E>> table) {
    std::string known;
    for (auto &kv : table) {
        if (name == kv.first) return kv.second;
        known += known.empty() ? "" : ", ";
        known += kv.first;
    }
    fail(NS_ERR_INVALID_ARGUMENT, std::string(what) + ": unknown value '" + name + "' (one of " + known + ")");
}

// ------------------------------------------------------------- wrappers

struct Tree {
    ns_tree_t *t = nullptr;
    explicit Tree(ns_tree_t *p) : t(p) {}
    Tree(const Tree &) = delete;
    ~Tree() { ns_tree_destroy(t); }
};

std::unique_ptr<Tree> tree_copy(const ns_tree_t *src);

struct Morphology {
    ns_morph_t *m = nullptr;
    explicit Morphology(ns_morph_t *p) : m(p) {}
    Morphology(const Morphology &) = delete;
    ~Morphology() { ns_morph_destroy(m); }
};

struct Cell {
    ns_cell_t *c = nullptr;
    explicit Cell(ns_cell_t *p) : c(p) {}
    Cell(const Cell &) = delete;
    ~Cell() { ns_cell_destroy(c); }
    int32_t size() const { return ns_tree_size(ns_cell_tree(c)); }
};

struct Batch {
    ns_batch_t *b = nullptr;
    explicit Batch(ns_batch_t *p) : b(p) {}
    Batch(const Batch &) = delete;
    ~Batch() { ns_batch_destroy(b); }
};

struct HinesSolver {
    std::mutex mu; // one call at a time (the GIL is released during calls)
    ns_hines_solver_t *s = nullptr;
    nb::object batch; // the batch must outlive the solver
    int64_t n = 0;
    HinesSolver() = default;
    HinesSolver(const HinesSolver &) = delete;
    ~HinesSolver() { ns_hines_solver_destroy(s); }
};

struct TridiagSolver {
    std::mutex mu; // one call at a time (the GIL is released during calls)
    ns_tridiag_solver_t *s = nullptr;
    ns_tridiag_precision precision = NS_TRIDIAG_FLOAT64;
    int64_t length = 0;
    TridiagSolver() = default;
    TridiagSolver(const TridiagSolver &) = delete;
    ~TridiagSolver() { ns_tridiag_solver_destroy(s); }
};

struct SimParams {
    ns_sim_params p;
    SimParams() { ns_sim_params_init(&p); }
};

// A mechanism library (ns_mech_library_open) and a model over it: the model
// and every simulation made with it hold a reference to the library's
// Python object, so that it stays open while they exist.
struct MechLibrary {
    ns_mech_library_t *lib = nullptr;
    MechLibrary() = default;
    MechLibrary(const MechLibrary &) = delete;
    ~MechLibrary() { ns_mech_library_close(lib); }
};

struct Model {
    ns_sim_model_t *m = nullptr;
    nb::object library; // None: the built-in mechanisms only
    Model() = default;
    Model(const Model &) = delete;
    ~Model() { ns_sim_model_destroy(m); }
};

struct Network {
    ns_network_t *n = nullptr;
    Network() = default;
    Network(const Network &) = delete;
    ~Network() { ns_network_destroy(n); }
};

struct Simulation {
    std::mutex mu; // one call at a time (the GIL is released during calls)
    ns_sim_t *s = nullptr;
    nb::object library; // a model's mechanism library: open while the simulation exists
    std::vector<int32_t> shape_size; // compartments per shape
    std::vector<int32_t> cell_shape; // empty: c % n_shapes
    int32_t cell_size(int64_t c) const {
        return shape_size[cell_shape.empty() ? (size_t)(c % (int64_t)shape_size.size()) : (size_t)cell_shape[c]];
    }
    Simulation() = default;
    Simulation(const Simulation &) = delete;
    ~Simulation() { ns_sim_destroy(s); }
};

struct LifeModel {
    ns_life_model_t *m = nullptr;
    ns_life_built_t *built = nullptr; // when the model came from ns_life_build / ns_life_built_load
    LifeModel() = default;
    LifeModel(const LifeModel &) = delete;
    ~LifeModel() {
        if (built)
            ns_life_built_destroy(built);
        else
            ns_life_model_destroy(m);
    }
};

struct LifeEngine {
    std::mutex mu; // one call at a time (the GIL is released during calls)
    ns_life_engine_t *e = nullptr;
    nb::object model; // the model must outlive the engine
    LifeEngine() = default;
    LifeEngine(const LifeEngine &) = delete;
    ~LifeEngine() { ns_life_engine_destroy(e); }
};

// ------------------------------------------------------------- helpers

nb::dict timing_dict(const ns_solve_timing &t);
std::vector<int32_t> cell_shape_of(nb::handle cell_shape, int64_t n_cells, const char *fn);

// ------------------------------------------------------------- families

void bind_library(nb::module_ &m);
void bind_readers(nb::module_ &m);
void bind_morph(nb::module_ &m);
void bind_hines(nb::module_ &m);
void bind_tridiag(nb::module_ &m);
void bind_params(nb::module_ &m);
void bind_mechanisms(nb::module_ &m);
void bind_network(nb::module_ &m);
void bind_simulation(nb::module_ &m);
void bind_life(nb::module_ &m);
void bind_lfp(nb::module_ &m);
void bind_grad(nb::module_ &m);

} // namespace nsb
