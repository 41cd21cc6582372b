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

namespace {

// ------------------------------------------------------------------ errors

struct ns_error {
    int status;
    std::string message;
};

[[noreturn]] void fail(ns_status status, const std::string &message) { throw ns_error{status, message}; }

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

// ----------------------------------------------------------------- arrays

using any_array = nb::ndarray<nb::ro>;

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

// --------------------------------------------------------------- names

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

std::unique_ptr<Tree> tree_copy(const ns_tree_t *src) {
    ns_tree_t *t = nullptr;
    check(ns_tree_create(ns_tree_size(src), ns_tree_parent(src), &t));
    return std::make_unique<Tree>(t);
}

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

// Simulation.read_var / write_var: the array where the simulation keeps its
// state (device for CUDA, host for CPU), ns_sim_compartments values.
ns_sim_var sim_var_of(const std::string &name) {
    if (name == "v") return NS_SIM_VAR_V;
    fail(NS_ERR_INVALID_ARGUMENT, "Simulation state variable '" + name + "': expected v (a mechanism's variable, "
                                  "m_hh, ...: state_field)");
    return NS_SIM_VAR_V;
}

void sim_var_call(Simulation &s, const std::string &name, nb::handle arr, nb::handle stream, bool read) {
    const char *fn = read ? "Simulation.read_var" : "Simulation.write_var";
    const ns_sim_var var = sim_var_of(name);
    const bool cuda = ns_sim_backend(s.s) == NS_BACKEND_CUDA;
    view v = take<double>(arr, fn, read ? "out" : "src", ns_sim_compartments(s.s), cuda ? place::cuda : place::host,
                          read);
    void *q = cuda ? stream_of(stream) : nullptr;
    if (!cuda && !stream.is_none())
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": stream given for a CPU simulation (host arrays, no stream)");
    std::lock_guard<std::mutex> lock(s.mu);
    ns_status st;
    {
        nb::gil_scoped_release r;
        st = read ? ns_sim_read_var(s.s, var, (double *)v.ptr, q) : ns_sim_write_var(s.s, var, (const double *)v.ptr, q);
    }
    check(st);
}

// Simulation.state_part: the loop's own arrays of one part, as arrays that
// keep the Simulation alive (numpy views for a CPU simulation; for a CUDA
// one, array-API objects with __dlpack__ that can be imported any number of
// times: cupy.from_dlpack, torch.from_dlpack, ...).
nb::dict sim_state_part(nb::handle self, int64_t part) {
    Simulation &s = nb::cast<Simulation &>(self);
    std::lock_guard<std::mutex> lock(s.mu);
    ns_sim_part p;
    ns_status st;
    {
        nb::gil_scoped_release r;
        st = ns_sim_state_part(s.s, part, &p);
    }
    check(st);
    const size_t shape[1] = {(size_t)p.size};
    auto wrap = [&](const void *ptr, nb::dlpack::dtype dt) -> nb::object {
        if (!ptr) return nb::none();
        if (p.device >= 0)
            return nb::cast(nb::ndarray<nb::array_api>((void *)ptr, 1, shape, self, nullptr, dt, nb::device::cuda::value,
                                                       p.device),
                            nb::rv_policy::reference);
        return nb::cast(nb::ndarray<nb::numpy>((void *)ptr, 1, shape, self, nullptr, dt), nb::rv_policy::reference);
    };
    nb::dict d;
    d["v"] = wrap(p.v, nb::dtype<double>());
    d["flat_of"] = wrap(p.flat_of, nb::dtype<int64_t>());
    d["cell"] = to_numpy<int64_t>(p.cell, {(size_t)p.cells});
    d["first"] = to_numpy<int64_t>(p.first, {(size_t)p.cells});
    d["stride"] = p.stride;
    d["node_pos"] = p.node_pos && p.cells > 0 ? to_numpy<int32_t>(p.node_pos, {(size_t)s.cell_size(p.cell[0])})
                                              : nb::none();
    d["device"] = p.device;
    return d;
}

// Simulation.state_field: a model's variable in one part, in place (as
// state_part: numpy views or DLPack arrays that keep the Simulation alive).
nb::dict sim_state_field(nb::handle self, int64_t part, const std::string &name) {
    Simulation &s = nb::cast<Simulation &>(self);
    std::lock_guard<std::mutex> lock(s.mu);
    ns_sim_field f;
    ns_status st;
    {
        nb::gil_scoped_release r;
        st = ns_sim_state_field(s.s, part, name.c_str(), &f);
    }
    check(st);
    const size_t shape[1] = {(size_t)f.size};
    auto wrap = [&](const void *ptr, nb::dlpack::dtype dt) -> nb::object {
        if (!ptr) return nb::none();
        if (f.device >= 0)
            return nb::cast(nb::ndarray<nb::array_api>((void *)ptr, 1, shape, self, nullptr, dt, nb::device::cuda::value,
                                                       f.device),
                            nb::rv_policy::reference);
        return nb::cast(nb::ndarray<nb::numpy>((void *)ptr, 1, shape, self, nullptr, dt), nb::rv_policy::reference);
    };
    nb::dict d;
    d["data"] = wrap(f.data, nb::dtype<double>());
    d["pos"] = wrap(f.pos, nb::dtype<int32_t>());
    d["device"] = f.device;
    return d;
}

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

nb::dict tree_stats(const ns_tree_t *t) {
    ns_tree_stats s;
    ns_tree_get_stats(t, &s);
    nb::dict d;
    d["size"] = s.size;
    d["branches"] = s.branches;
    d["branch_points"] = s.branch_points;
    d["leaves"] = s.leaves;
    d["depth"] = s.depth;
    d["branch_depth"] = s.branch_depth;
    return d;
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

/* One section's fields (Cell.get_section, Cell.sections). */
nb::dict section_dict(const ns_cell_t *cell, int32_t k) {
    ns_section_info s;
    check(ns_cell_get_section(cell, k, &s));
    char name[48];
    check(ns_section_name(cell, k, name, sizeof name));
    nb::dict d;
    d["name"] = std::string(name);
    d["region"] = std::string(ns_region_name(ns_region_of_swc_type(s.type)));
    d["parent"] = s.parent;
    d["parent_x"] = s.parent_x;
    d["type"] = s.type;
    d["nseg"] = s.nseg;
    d["Ra"] = s.Ra;
    d["first_node"] = s.first_node;
    d["length"] = s.length;
    d["area"] = s.area;
    d["ri_sum"] = s.ri_sum;
    d["n3d"] = s.n3d;
    d["first_point_id"] = s.first_point_id;
    d["last_point_id"] = s.last_point_id;
    return d;
}

ns_swc_options swc_options(const std::string &roots, const std::string &radii, double default_radius, double scale) {
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.roots = pick<ns_root_policy>("roots", roots, {{"keep-main", NS_ROOTS_KEEP_MAIN}, {"reject", NS_ROOTS_REJECT}});
    o.radii = pick<ns_radius_policy>("radii", radii,
                                     {{"repair", NS_RADIUS_REPAIR}, {"reject", NS_RADIUS_REJECT}, {"default", NS_RADIUS_DEFAULT}});
    o.default_radius = default_radius;
    o.scale = scale;
    return o;
}

// The trees of Tree or Cell objects (borrowed: ns_batch_create copies them).
std::vector<const ns_tree_t *> shapes_of(nb::handle shapes) {
    std::vector<const ns_tree_t *> out;
    for (nb::handle h : shapes) {
        if (nb::isinstance<Tree>(h))
            out.push_back(nb::cast<Tree &>(h).t);
        else if (nb::isinstance<Cell>(h))
            out.push_back(ns_cell_tree(nb::cast<Cell &>(h).c));
        else
            fail(NS_ERR_INVALID_ARGUMENT, "Batch: shapes must be neurosolve.Tree or neurosolve.Cell objects, got " +
                                              std::string(nb::inst_name(h).c_str()));
    }
    return out;
}

std::vector<int32_t> cell_shape_of(nb::handle cell_shape, int64_t n_cells, const char *fn) {
    std::vector<int32_t> cs;
    if (cell_shape.is_none()) return cs;
    view v = take<int32_t>(cell_shape, fn, "cell_shape", n_cells, place::host, false);
    const int32_t *p = (const int32_t *)v.ptr;
    cs.assign(p, p + n_cells);
    return cs;
}

// The four arrays of a Hines solve after their checks: all host (numpy) or
// all CUDA memory (a mix is an error).
struct HinesArrays {
    view a, b, d, rhs;
    bool host = true;
};

HinesArrays hines_arrays(const HinesSolver &s, const char *fn, nb::handle a, nb::handle b, nb::handle d,
                         nb::handle rhs, nb::handle stream) {
    HinesArrays v;
    v.a = take<double>(a, fn, "a", s.n, place::any, false);
    v.host = v.a.device == nb::device::cpu::value;
    const place where = v.host ? place::host : place::cuda;
    v.b = take<double>(b, fn, "b", s.n, where, false);
    v.d = take<double>(d, fn, "d", s.n, where, true);
    v.rhs = take<double>(rhs, fn, "rhs", s.n, where, true);
    if (v.host && !stream.is_none())
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": stream given for host (numpy) arrays");
    return v;
}

// One solve on checked arrays, the GIL released.
void hines_call(HinesSolver &s, const HinesArrays &v, void *stream) {
    ns_status st;
    {
        nb::gil_scoped_release r;
        std::lock_guard<std::mutex> lock(s.mu);
        if (v.host)
            st = ns_hines_solver_solve(s.s, (const double *)v.a.ptr, (const double *)v.b.ptr, (double *)v.d.ptr,
                                       (double *)v.rhs.ptr);
        else
            st = ns_hines_solver_solve_device(s.s, (const double *)v.a.ptr, (const double *)v.b.ptr,
                                              (double *)v.d.ptr, (double *)v.rhs.ptr, stream);
    }
    check(st);
}

// HinesSolver.bind: the imported arrays (nb::ndarray holds the DLPack export,
// which keeps the memory alive), the stream object (a CuPy Stream destroys
// its stream when collected) and the solver.
struct HinesBound {
    HinesArrays v;
    void *stream = nullptr;
    nb::object stream_obj, solver, arrays;
};

struct TridiagArrays {
    view dl, d, du, x;
    bool host = true;
};

TridiagArrays tridiag_arrays(const TridiagSolver &s, const char *fn, nb::handle dl, nb::handle d, nb::handle du,
                             nb::handle x, nb::handle stream) {
    const bool f32 = s.precision == NS_TRIDIAG_FLOAT32;
    // at least `length` entries: a strided layout's natural allocation
    // (n * stride) may be longer than its extent.
    auto get = [&](nb::handle h, const char *name, place where) {
        view v = f32 ? take<float>(h, fn, name, -1, where, true) : take<double>(h, fn, name, -1, where, true);
        if ((int64_t)v.arr.size() < s.length)
            fail(NS_ERR_SIZE, std::string(fn) + ": " + name + " has " + std::to_string(v.arr.size()) +
                                  " elements, expected at least " + std::to_string(s.length));
        return v;
    };
    TridiagArrays v;
    v.dl = get(dl, "dl", place::any);
    v.host = v.dl.device == nb::device::cpu::value;
    const place where = v.host ? place::host : place::cuda;
    v.d = get(d, "d", where);
    v.du = get(du, "du", where);
    v.x = get(x, "x", where);
    if (v.host && !stream.is_none())
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": stream given for host (numpy) arrays");
    return v;
}

void tridiag_call(TridiagSolver &s, const TridiagArrays &v, void *stream) {
    const bool f32 = s.precision == NS_TRIDIAG_FLOAT32;
    ns_status st;
    {
        nb::gil_scoped_release r;
        std::lock_guard<std::mutex> lock(s.mu);
        if (!v.host)
            st = ns_tridiag_solver_solve_device(s.s, v.dl.ptr, v.d.ptr, v.du.ptr, v.x.ptr, stream);
        else if (f32)
            st = ns_tridiag_solver_solve_f32(s.s, (const float *)v.dl.ptr, (const float *)v.d.ptr,
                                             (const float *)v.du.ptr, (float *)v.x.ptr);
        else
            st = ns_tridiag_solver_solve(s.s, (const double *)v.dl.ptr, (const double *)v.d.ptr,
                                         (const double *)v.du.ptr, (double *)v.x.ptr);
    }
    check(st);
}

struct TridiagBound {
    TridiagArrays v;
    void *stream = nullptr;
    nb::object stream_obj, solver, arrays;
};

} // namespace

NB_MODULE(_core, m) {
    m.doc() = "neurosolve's C library, bound with nanobind (docs/python.md)";
    nb::register_exception_translator(translate);

    // ------------------------------------------------------------ library
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

    // ------------------------------------------------------------ readers
    m.def("_read_nifti", [](const std::filesystem::path &path) {
        ns_nifti_t *img = nullptr;
        {
            nb::gil_scoped_release r;
            ns_status st = ns_nifti_read(path.c_str(), &img);
            if (st != NS_OK) {
                std::string msg = ns_last_error();
                nb::gil_scoped_acquire g;
                fail(st, msg);
            }
        }
        std::unique_ptr<ns_nifti_t, void (*)(ns_nifti_t *)> hold(img, ns_nifti_destroy);
        const ns_nifti_info *in = ns_nifti_get_info(img);
        // float64 values (slope and intercept applied), in the file's order: axis 1 fastest
        // (numpy's Fortran order, as nibabel gives it)
        std::vector<size_t> shape((size_t)in->ndim);
        for (int k = 0; k < in->ndim; ++k) shape[(size_t)k] = (size_t)in->dim[k];
        const size_t n = (size_t)in->n_values;
        double *buf = new double[n ? n : 1];
        {
            nb::gil_scoped_release r;
            for (size_t q = 0; q < n; ++q) buf[q] = ns_nifti_value(img, (int64_t)q);
        }
        nb::capsule owner(buf, [](void *p) noexcept { delete[] (double *)p; });
        std::vector<int64_t> strides((size_t)in->ndim);
        int64_t st = 1;
        for (int k = 0; k < in->ndim; ++k) {
            strides[(size_t)k] = st;
            st *= in->dim[k];
        }
        nb::dict d;
        d["data"] = nb::cast(nb::ndarray<nb::numpy, double>(buf, shape.size(), shape.data(), owner, strides.data()),
                             nb::rv_policy::automatic);
        d["affine"] = to_numpy<double>(&in->affine[0][0], {4, 4});
        d["pixdim"] = to_numpy<double>(in->pixdim, {7});
        const char *dn = ns_nifti_datatype_name(in->datatype);
        d["datatype"] = std::string(dn ? dn : "unknown");
        d["slope"] = in->slope;
        d["intercept"] = in->intercept;
        d["affine_source"] = in->affine_source == NS_NIFTI_AFFINE_SFORM   ? "sform"
                             : in->affine_source == NS_NIFTI_AFFINE_QFORM ? "qform"
                                                                          : "pixdim";
        d["big_endian"] = (bool)in->big_endian;
        return d;
    }, "path"_a, "ns_nifti_read: every value as float64 (Fortran order), the affine and the header fields.");
    m.def("_read_gradients", [](const std::filesystem::path &bvals, const std::filesystem::path &bvecs) {
        ns_gradients g;
        check(ns_gradients_read(bvals.c_str(), bvecs.c_str(), &g));
        nb::object b = to_numpy<double>(g.bvals, {(size_t)g.n}), v = to_numpy<double>(g.bvecs, {(size_t)g.n, 3});
        ns_gradients_free(&g);
        return nb::make_tuple(b, v);
    }, "bvals"_a, "bvecs"_a);
    m.def("_read_tracts", [](const std::filesystem::path &path) {
        ns_tracts_t *t = nullptr;
        std::vector<double> pts;
        std::vector<int64_t> off(1, 0);
        double to_world[16];
        int fmt = 0;
        int64_t declared = -1;
        {
            nb::gil_scoped_release r;
            ns_status st = ns_tracts_open(path.c_str(), &t);
            while (st == NS_OK) {
                const double *p;
                int64_t k;
                int end;
                st = ns_tracts_next(t, &p, &k, &end);
                if (st != NS_OK || end) break;
                pts.insert(pts.end(), p, p + 3 * k);
                off.push_back(off.back() + k);
            }
            if (st == NS_OK) {
                fmt = (int)ns_tracts_get_format(t);
                declared = ns_tracts_declared_count(t);
                ns_tracts_to_world(t, to_world);
            }
            std::string msg = st != NS_OK ? ns_last_error() : "";
            ns_tracts_close(t);
            if (st != NS_OK) {
                nb::gil_scoped_acquire g;
                fail(st, msg);
            }
        }
        nb::dict d;
        d["points"] = to_numpy<double>(pts.data(), {pts.size() / 3, 3});
        d["offsets"] = to_numpy<int64_t>(off.data(), {off.size()});
        d["format"] = fmt == NS_TRACTS_TRK ? "trk" : fmt == NS_TRACTS_TCK ? "tck" : "trx";
        d["declared_count"] = declared;
        d["file_to_world"] = to_numpy<double>(to_world, {4, 4});
        return d;
    }, "path"_a, "ns_tracts_open / next: every streamline in world (RAS+ mm) coordinates, packed.");

    // --------------------------------------------------------------- Tree
    nb::class_<Tree>(m, "Tree", "A compartment tree: its parent array (parent[0] = -1, parent[i] < i).")
        .def("__init__", [](Tree *self, nb::handle parent) {
            view v = take<int32_t>(parent, "Tree", "parent", -1, place::host, false);
            ns_tree_t *t = nullptr;
            if (v.arr.size() > INT32_MAX) fail(NS_ERR_SIZE, "Tree: parent has more than 2^31-1 entries");
            check(ns_tree_create((int32_t)v.arr.size(), (const int32_t *)v.ptr, &t));
            new (self) Tree(t);
        }, "parent"_a, "Copy and check a parent array (numpy int32).")
        .def_static("generate", [](int32_t size, int32_t branches, uint64_t seed) {
            ns_tree_t *t = nullptr;
            check(ns_generate_tree(size, branches, seed, &t));
            return std::make_unique<Tree>(t);
        }, "size"_a, "branches"_a, "seed"_a = 1)
        .def_static("paper", [](const std::string &name, uint64_t seed) {
            ns_tree_t *t = nullptr;
            check(ns_generate_paper_tree(name.c_str(), seed, &t));
            return std::make_unique<Tree>(t);
        }, "name"_a, "seed"_a = 1)
        .def_static("binary", [](int32_t size, int32_t levels) {
            ns_tree_t *t = nullptr;
            check(ns_generate_binary_tree(size, levels, &t));
            return std::make_unique<Tree>(t);
        }, "size"_a, "levels"_a)
        .def_static("random", [](const std::string &preset, uint64_t seed) {
            ns_random_tree_params p;
            check(ns_random_tree_preset(preset.c_str(), &p));
            ns_tree_t *t = nullptr;
            check(ns_generate_random_tree(&p, seed, &t));
            return std::make_unique<Tree>(t);
        }, "preset"_a, "seed"_a = 1)
        .def_prop_ro("size", [](const Tree &t) { return ns_tree_size(t.t); })
        .def("__len__", [](const Tree &t) { return (size_t)ns_tree_size(t.t); })
        .def_prop_ro("parent", [](const Tree &t) {
            return to_numpy<int32_t>(ns_tree_parent(t.t), {(size_t)ns_tree_size(t.t)});
        }, "A copy of the parent array (int32).")
        .def_prop_ro("stats", [](const Tree &t) { return tree_stats(t.t); });

    // ---------------------------------------------------------- Morphology
    nb::class_<Morphology>(m, "Morphology", "A checked SWC morphology (docs/swc.md).")
        .def_static("read", [](const std::filesystem::path &path, const std::string &roots, const std::string &radii,
                               double default_radius, double scale) {
            ns_swc_options o = swc_options(roots, radii, default_radius, scale);
            ns_morph_t *mo = nullptr;
            {
                nb::gil_scoped_release r;
                ns_status st = ns_swc_read(path.c_str(), &o, &mo);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire a;
                    fail(st, msg);
                }
            }
            return std::make_unique<Morphology>(mo);
        }, "path"_a, "roots"_a = "keep-main", "radii"_a = "repair", "default_radius"_a = 1.0, "scale"_a = 1.0)
        .def_static("parse", [](const std::string &text, const std::string &name, const std::string &roots,
                                const std::string &radii, double default_radius, double scale) {
            ns_swc_options o = swc_options(roots, radii, default_radius, scale);
            ns_morph_t *mo = nullptr;
            check(ns_swc_parse(text.data(), text.size(), name.c_str(), &o, &mo));
            return std::make_unique<Morphology>(mo);
        }, "text"_a, "name"_a = "<string>", "roots"_a = "keep-main", "radii"_a = "repair", "default_radius"_a = 1.0,
           "scale"_a = 1.0)
        .def_static("from_points", [](const std::string &name, nb::handle xyz, nb::handle r, nb::handle type,
                                      nb::handle parent) {
            const char *fn = "Morphology.from_points";
            view vr = take<double>(r, fn, "r", -1, place::host, false);
            const int64_t n = (int64_t)vr.arr.size();
            view vx = take<double>(xyz, fn, "xyz", 3 * n, place::host, false, true);
            if (vx.arr.ndim() != 2 || vx.arr.shape(1) != 3)
                fail(NS_ERR_SIZE, std::string(fn) + ": xyz must have shape (n, 3)");
            view vt = take<int32_t>(type, fn, "type", n, place::host, false);
            view vp = take<int32_t>(parent, fn, "parent", n, place::host, false);
            std::vector<ns_morph_point> pts((size_t)n);
            const double *x = (const double *)vx.ptr, *rr = (const double *)vr.ptr;
            const int32_t *t = (const int32_t *)vt.ptr, *pp = (const int32_t *)vp.ptr;
            for (int64_t i = 0; i < n; ++i) {
                pts[i].x = x[3 * i];
                pts[i].y = x[3 * i + 1];
                pts[i].z = x[3 * i + 2];
                pts[i].r = rr[i];
                pts[i].type = t[i];
                pts[i].parent = pp[i];
                pts[i].id = i + 1;
                pts[i].line = 0;
            }
            ns_morph_t *mo = nullptr;
            check(ns_morph_from_points(name.c_str(), pts.data(), n, &mo));
            return std::make_unique<Morphology>(mo);
        }, "name"_a, "xyz"_a, "r"_a, "type"_a, "parent"_a,
           "A morphology from points in topological order (parent indices, -1 for the root; ids 1..n).")
        .def_prop_ro("name", [](const Morphology &mo) { return std::string(ns_morph_name(mo.m)); })
        .def_prop_ro("info", [](const Morphology &mo) {
            ns_morph_info i;
            ns_morph_get_info(mo.m, &i);
            nb::dict d;
            d["points_read"] = i.points_read;
            d["points"] = i.points;
            d["roots"] = i.roots;
            d["roots_kept"] = i.roots_kept;
            d["points_dropped"] = i.points_dropped;
            d["radii_repaired"] = i.radii_repaired;
            d["soma_points"] = i.soma_points;
            d["soma"] = ns_soma_style_name(i.soma);
            return d;
        })
        .def_prop_ro("points", [](const Morphology &mo) {
            int64_t n = 0;
            const ns_morph_point *p = ns_morph_points(mo.m, &n);
            std::vector<double> xyz(3 * n), r(n);
            std::vector<int32_t> type(n), parent(n);
            std::vector<int64_t> id(n), line(n);
            for (int64_t i = 0; i < n; ++i) {
                xyz[3 * i] = p[i].x;
                xyz[3 * i + 1] = p[i].y;
                xyz[3 * i + 2] = p[i].z;
                r[i] = p[i].r;
                type[i] = p[i].type;
                parent[i] = p[i].parent;
                id[i] = p[i].id;
                line[i] = p[i].line;
            }
            nb::dict d;
            d["xyz"] = to_numpy<double>(xyz.data(), {(size_t)n, 3});
            d["r"] = to_numpy<double>(r.data(), {(size_t)n});
            d["type"] = to_numpy<int32_t>(type.data(), {(size_t)n});
            d["parent"] = to_numpy<int32_t>(parent.data(), {(size_t)n});
            d["id"] = to_numpy<int64_t>(id.data(), {(size_t)n});
            d["line"] = to_numpy<int64_t>(line.data(), {(size_t)n});
            return d;
        }, "The kept points as numpy arrays (copies): xyz (n, 3), r, type, parent, id, line.")
        .def("discretize", [](const Morphology &mo, const std::string &rule, double d_lambda, double frequency,
                              double max_length, double Ra, double cm, const std::string &junctions,
                              nb::handle sections, const std::string &sections_name) {
            ns_discretize_options o;
            ns_discretize_options_init(&o);
            o.rule = pick<ns_nseg_rule>("rule", rule,
                                        {{"d_lambda", NS_NSEG_D_LAMBDA}, {"fixed_length", NS_NSEG_FIXED_LENGTH}, {"one", NS_NSEG_ONE}});
            o.d_lambda = d_lambda;
            o.frequency = frequency;
            o.max_length = max_length;
            o.Ra = Ra;
            o.cm = cm;
            o.junctions = pick<ns_junction_policy>("junctions", junctions,
                                                   {{"minimal", NS_JUNCTIONS_MINIMAL}, {"neuron", NS_JUNCTIONS_NEURON}});
            std::string text;
            if (!sections.is_none()) {
                text = nb::cast<std::string>(sections);
                o.sections = text.c_str();
                o.sections_length = text.size();
                o.sections_name = sections_name.c_str();
            }
            ns_cell_t *c = nullptr;
            check(ns_discretize(mo.m, &o, &c));
            return std::make_unique<Cell>(c);
        }, "rule"_a = "d_lambda", "d_lambda"_a = 0.1, "frequency"_a = 100.0, "max_length"_a = 20.0, "Ra"_a = 35.4,
           "cm"_a = 1.0, "junctions"_a = "minimal", "sections"_a = nb::none(), "sections_name"_a = "<sections>",
           "Discretise (docs/discretisation.md). sections: per-section statements in the parameter file's "
           "grammar (LOC.nseg, LOC.Ra, REGION.cm, Ra; a whole parameter file's text may be given).");

    // ---------------------------------------------------------------- Cell
    nb::class_<Cell>(m, "Cell", "A discretised cell: compartments in Hines order (docs/discretisation.md).")
        .def_prop_ro("info", [](const Cell &c) {
            ns_cell_info i;
            ns_cell_get_info(c.c, &i);
            nb::dict d;
            d["compartments"] = i.compartments;
            d["sections"] = i.sections;
            d["branch_depth"] = i.branch_depth;
            d["total_area"] = i.total_area;
            d["total_length"] = i.total_length;
            return d;
        })
        .def_prop_ro("size", &Cell::size)
        .def("__len__", [](const Cell &c) { return (size_t)c.size(); })
        .def_prop_ro("tree", [](const Cell &c) { return tree_copy(ns_cell_tree(c.c)); }, "A copy of the compartment tree.")
        .def_prop_ro("parent", [](const Cell &c) {
            return to_numpy<int32_t>(ns_tree_parent(ns_cell_tree(c.c)), {(size_t)c.size()});
        })
        .def_prop_ro("area", [](const Cell &c) { return to_numpy<double>(ns_cell_area(c.c), {(size_t)c.size()}); })
        .def_prop_ro("axial_conductance",
                     [](const Cell &c) { return to_numpy<double>(ns_cell_axial_conductance(c.c), {(size_t)c.size()}); })
        .def_prop_ro("type", [](const Cell &c) { return to_numpy<int32_t>(ns_cell_type(c.c), {(size_t)c.size()}); })
        .def_prop_ro("section", [](const Cell &c) { return to_numpy<int32_t>(ns_cell_section(c.c), {(size_t)c.size()}); })
        .def_prop_ro("position", [](const Cell &c) { return to_numpy<double>(ns_cell_position(c.c), {(size_t)c.size()}); })
        .def("get_section", [](const Cell &c, int32_t k) { return section_dict(c.c, k); }, "section"_a,
             "One section as a dict: NEURON's name, region, parent, parent_x, type, nseg, Ra, first_node, length, "
             "area, ri_sum, n3d, first_point_id, last_point_id.")
        .def("sections", [](const Cell &c) {
            nb::list out;
            ns_cell_info ci;
            ns_cell_get_info(c.c, &ci);
            for (int32_t k = 0; k < ci.sections; ++k) out.append(section_dict(c.c, k));
            return out;
        }, "Every section as get_section's dict, in order (`neurosolve morph FILE --sections`).")
        .def("find_section", [](const Cell &c, const std::string &where) {
            ns_location l;
            int32_t k = -1;
            check(ns_location_parse(where.c_str(), &l));
            check(ns_location_section(c.c, &l, &k));
            return k;
        }, "location"_a, "The section index of a location: dend[3], sec:4, swc:8, soma (docs/simulation.md, "
                         "\"Locations\").")
        .def("locate", [](const Cell &c, const std::string &where) {
            ns_location l;
            int32_t k = -1;
            check(ns_location_parse(where.c_str(), &l));
            check(ns_location_compartment(c.c, &l, &k));
            return k;
        }, "location"_a, "The compartment at a location: dend[3](0.5), apic[12](0.3), sec:4(0.5), swc:8(0.5), "
                         "soma, c12 (the command line's grammar).")
        .def("locate", [](const Cell &c, int32_t section, double x) {
            int32_t k = -1;
            check(ns_sim_locate(c.c, section, x, &k));
            return k;
        }, "section"_a, "x"_a = 0.5, "The compartment at NEURON's sec(x).")
        .def("matrix", [](const Cell &c, double cm, double dt, const std::string &form) {
            ns_matrix_form f = pick<ns_matrix_form>("form", form, {{"neuron", NS_FORM_NEURON}, {"symmetric", NS_FORM_SYMMETRIC}});
            size_t n = (size_t)c.size();
            auto a = empty_numpy<double>(n), b = empty_numpy<double>(n), d = empty_numpy<double>(n);
            check(ns_cell_matrix(c.c, cm, dt, f, a.data(), b.data(), d.data()));
            return nb::make_tuple(a, b, d);
        }, "cm"_a = 1.0, "dt"_a = 0.025, "form"_a = "neuron",
           "(a, b, d) of one backward-Euler step of the passive cable equation.");

    // --------------------------------------------------------------- Batch
    nb::class_<Batch>(m, "Batch", "A batch of cells drawn from shapes (Trees or Cells), Flat layout.")
        .def("__init__", [](Batch *self, nb::handle shapes, int64_t n_cells, nb::handle cell_shape) {
            std::vector<const ns_tree_t *> sh = shapes_of(shapes);
            std::vector<int32_t> cs = cell_shape_of(cell_shape, n_cells, "Batch");
            ns_batch_t *b = nullptr;
            {
                nb::gil_scoped_release r;
                ns_status st = ns_batch_create((int32_t)sh.size(), sh.data(), n_cells, cs.empty() ? nullptr : cs.data(), &b);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire a;
                    fail(st, msg);
                }
            }
            new (self) Batch(b);
        }, "shapes"_a, "n_cells"_a, "cell_shape"_a = nb::none())
        .def_prop_ro("n_cells", [](const Batch &b) { return ns_batch_cells(b.b); })
        .def_prop_ro("n_shapes", [](const Batch &b) { return ns_batch_shapes(b.b); })
        .def_prop_ro("compartments", [](const Batch &b) { return ns_batch_compartments(b.b); })
        .def("__len__", [](const Batch &b) { return (size_t)ns_batch_compartments(b.b); })
        .def("shape", [](const Batch &b, int32_t k) {
            if (k < 0 || k >= ns_batch_shapes(b.b))
                fail(NS_ERR_INVALID_ARGUMENT, "Batch.shape: index " + std::to_string(k) + " out of range");
            return tree_copy(ns_batch_shape(b.b, k));
        }, "index"_a)
        .def_prop_ro("cell_shape", [](const Batch &b) {
            return to_numpy<int32_t>(ns_batch_cell_shape(b.b), {(size_t)ns_batch_cells(b.b)});
        })
        .def_prop_ro("cell_offset", [](const Batch &b) {
            return to_numpy<int64_t>(ns_batch_cell_offset(b.b), {(size_t)ns_batch_cells(b.b) + 1});
        })
        .def("random_values", [](const Batch &b, uint64_t seed) {
            size_t n = (size_t)ns_batch_compartments(b.b);
            auto a = empty_numpy<double>(n), bb = empty_numpy<double>(n), d = empty_numpy<double>(n),
                 rhs = empty_numpy<double>(n);
            {
                nb::gil_scoped_release r;
                ns_status st = ns_batch_random_values(b.b, seed, a.data(), bb.data(), d.data(), rhs.data());
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            return nb::make_tuple(a, bb, d, rhs);
        }, "seed"_a = 1, "Random strictly diagonally dominant (a, b, d, rhs), new numpy arrays.");

    // --------------------------------------------------------- HinesSolver
    nb::class_<HinesSolver>(m, "HinesSolver", "A Hines solver planned for one batch and method (docs/methods.md).")
        .def("__init__", [](HinesSolver *self, nb::object batch, const std::string &method, const std::string &backend,
                            int32_t block_size, int32_t threads, nb::handle device, nb::handle devices,
                            size_t device_memory_limit, bool check_finite) {
            Batch &b = nb::cast<Batch &>(batch);
            ns_solve_options o;
            ns_solve_options_init(&o); // device NS_DEVICE_CURRENT, devices 1: what device arrays need
            o.method = hines_method_of(method);
            o.backend = backend_of(backend);
            o.block_size = block_size;
            o.threads = threads;
            if (!device.is_none()) o.device = nb::cast<int32_t>(device);
            if (!devices.is_none()) o.devices = nb::cast<int32_t>(devices);
            o.device_memory_limit = device_memory_limit;
            o.check_finite = check_finite ? 1 : 0;
            ns_hines_solver_t *s = nullptr;
            {
                nb::gil_scoped_release r;
                ns_status st = ns_hines_solver_create(b.b, &o, &s);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            new (self) HinesSolver();
            self->s = s;
            self->batch = batch;
            self->n = ns_batch_compartments(b.b);
        }, "batch"_a, "method"_a = "auto", "backend"_a = "auto", "block_size"_a = 0, "threads"_a = 0,
           "device"_a = nb::none(), "devices"_a = nb::none(), "device_memory_limit"_a = 0, "check_finite"_a = false,
           "device: a CUDA ordinal (None: the device current on this thread); devices: GPUs from `device` on "
           "for host-array batches (None: 1, the library's default and what device arrays need; 0: all).")
        .def_prop_ro("method", [](const HinesSolver &s) { return std::string(ns_hines_method_name(ns_hines_solver_method(s.s))); })
        .def_prop_ro("backend", [](const HinesSolver &s) { return std::string(ns_backend_name(ns_hines_solver_backend(s.s))); })
        .def_prop_ro("batch", [](const HinesSolver &s) { return s.batch; })
        .def("solve", [](HinesSolver &s, nb::handle a, nb::handle b, nb::handle d, nb::handle rhs, nb::handle stream) {
            HinesArrays v = hines_arrays(s, "HinesSolver.solve", a, b, d, rhs, stream);
            hines_call(s, v, stream_of(stream));
        }, "a"_a, "b"_a, "d"_a, "rhs"_a, "stream"_a = nb::none(),
           "Solve in place: rhs becomes x, d is overwritten. Host arrays (numpy): synchronous. CUDA arrays "
           "(CuPy, PyTorch, JAX; any CUDA method): queued on `stream`, returns at once; call wait().")
        .def("bind", [](nb::object self, nb::handle a, nb::handle b, nb::handle d, nb::handle rhs, nb::object stream) {
            HinesSolver &s = nb::cast<HinesSolver &>(self);
            auto bound = std::make_unique<HinesBound>();
            bound->v = hines_arrays(s, "HinesSolver.bind", a, b, d, rhs, stream);
            bound->stream = stream_of(stream);
            bound->stream_obj = stream;
            bound->solver = self;
            bound->arrays = nb::make_tuple(a, b, d, rhs);
            return bound;
        }, "a"_a, "b"_a, "d"_a, "rhs"_a, "stream"_a = nb::none(),
           "Check and import the four arrays (and the stream) once; the returned object's solve() then solves "
           "them in place with no per-call array checks or DLPack imports (the hot loop of a simulation).")
        .def("wait", [](HinesSolver &s) {
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(s.mu);
                st = ns_hines_solver_wait(s.s);
            }
            check(st);
        }, "Block until the last device solve finished; raises SingularError for a zero pivot.")
        .def_prop_ro("timing", [](HinesSolver &s) {
            std::lock_guard<std::mutex> lock(s.mu);
            ns_solve_timing t;
            ns_hines_solver_timing(s.s, &t);
            return timing_dict(t);
        });

    // Benchmark helper (bench/python_overhead.py): the same solve called from C
    // in a loop, restoring the inputs before each call outside the timed
    // region; returns the per-call wall times [s]. Device arrays: each call is
    // followed by ns_hines_solver_wait (a stream sync), as the Python loop does.
    m.def("_bench_c_solve", [](HinesSolver &s, nb::handle a, nb::handle b, nb::handle d, nb::handle rhs,
                               nb::callable restore, int repeats, nb::handle stream) {
        HinesArrays v = hines_arrays(s, "_bench_c_solve", a, b, d, rhs, stream);
        void *str = stream_of(stream);
        std::vector<double> out;
        for (int k = 0; k < repeats; ++k) {
            restore(); // outside the timed region (it synchronises the device)
            ns_status st;
            double dt;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(s.mu);
                auto t0 = std::chrono::steady_clock::now();
                if (v.host)
                    st = ns_hines_solver_solve(s.s, (const double *)v.a.ptr, (const double *)v.b.ptr,
                                               (double *)v.d.ptr, (double *)v.rhs.ptr);
                else {
                    st = ns_hines_solver_solve_device(s.s, (const double *)v.a.ptr, (const double *)v.b.ptr,
                                                      (double *)v.d.ptr, (double *)v.rhs.ptr, str);
                    if (st == NS_OK) st = ns_hines_solver_wait(s.s);
                }
                dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            }
            check(st);
            out.push_back(dt);
        }
        return out;
    }, "solver"_a, "a"_a, "b"_a, "d"_a, "rhs"_a, "restore"_a, "repeats"_a, "stream"_a = nb::none());

    nb::class_<HinesBound>(m, "BoundHinesSolve",
                           "HinesSolver.bind(a, b, d, rhs, stream): four arrays checked and imported once.")
        .def("solve", [](HinesBound &b) { hines_call(nb::cast<HinesSolver &>(b.solver), b.v, b.stream); },
             "Solve the bound arrays in place (rhs becomes x); device arrays: queued on the bound stream.")
        .def("wait", [](HinesBound &b) {
            HinesSolver &s = nb::cast<HinesSolver &>(b.solver);
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(s.mu);
                st = ns_hines_solver_wait(s.s);
            }
            check(st);
        }, "HinesSolver.wait() of the solver.")
        .def_prop_ro("solver", [](const HinesBound &b) { return b.solver; })
        .def_prop_ro("arrays", [](const HinesBound &b) { return b.arrays; }, "(a, b, d, rhs) as given to bind.")
        .def_prop_ro("stream", [](const HinesBound &b) { return b.stream_obj; })
        .def_prop_ro("device", [](const HinesBound &b) { return b.v.host ? "cpu" : "cuda"; });

    // ------------------------------------------------------- TridiagSolver
    auto tridiag_options = [](const std::string &method, const std::string &layout, const std::string &precision,
                              int64_t stride, int32_t threads, double pivot_tolerance, bool check_finite) {
        ns_tridiag_options o;
        ns_tridiag_options_init(&o);
        check(ns_tridiag_method_from_name(method.c_str(), &o.method));
        o.layout = pick<ns_tridiag_layout>("layout", layout, {{"flat", NS_TRIDIAG_FLAT}, {"interleaved", NS_TRIDIAG_INTERLEAVED}});
        o.precision = pick<ns_tridiag_precision>("precision", precision,
                                                 {{"float64", NS_TRIDIAG_FLOAT64}, {"float32", NS_TRIDIAG_FLOAT32}});
        o.stride = stride;
        o.threads = threads;
        o.pivot_tolerance = pivot_tolerance;
        o.check_finite = check_finite ? 1 : 0;
        return o;
    };
    nb::class_<TridiagSolver>(m, "TridiagSolver", "Batched tridiagonal systems, fixed or variable size (docs/tridiag.md).")
        .def("__init__", [tridiag_options](TridiagSolver *self, int32_t n, int64_t batch, const std::string &method,
                                           const std::string &layout, const std::string &precision, int64_t stride,
                                           int32_t threads, double pivot_tolerance, bool check_finite) {
            ns_tridiag_options o = tridiag_options(method, layout, precision, stride, threads, pivot_tolerance, check_finite);
            ns_tridiag_solver_t *s = nullptr;
            check(ns_tridiag_solver_create(n, batch, &o, &s));
            new (self) TridiagSolver();
            self->s = s;
            self->precision = o.precision;
            self->length = ns_tridiag_solver_length(s);
        }, "n"_a, "batch"_a, "method"_a = "auto", "layout"_a = "flat", "precision"_a = "float64", "stride"_a = 0,
           "threads"_a = 0, "pivot_tolerance"_a = 0.0, "check_finite"_a = false)
        .def_static("variable", [tridiag_options](nb::handle sizes, nb::handle offsets, const std::string &method,
                                                  const std::string &layout, const std::string &precision,
                                                  int64_t stride, int32_t threads, double pivot_tolerance,
                                                  bool check_finite) {
            ns_tridiag_options o = tridiag_options(method, layout, precision, stride, threads, pivot_tolerance, check_finite);
            view vs = take<int32_t>(sizes, "TridiagSolver.variable", "sizes", -1, place::host, false);
            const int64_t batch = (int64_t)vs.arr.size();
            const int64_t *off = nullptr;
            view vo;
            if (!offsets.is_none()) {
                vo = take<int64_t>(offsets, "TridiagSolver.variable", "offsets", batch + 1, place::host, false);
                off = (const int64_t *)vo.ptr;
            }
            ns_tridiag_solver_t *s = nullptr;
            check(ns_tridiag_solver_create_variable(batch, (const int32_t *)vs.ptr, off, &o, &s));
            auto t = std::make_unique<TridiagSolver>();
            t->s = s;
            t->precision = o.precision;
            t->length = ns_tridiag_solver_length(s);
            return t;
        }, "sizes"_a, "offsets"_a = nb::none(), "method"_a = "auto", "layout"_a = "flat", "precision"_a = "float64",
           "stride"_a = 0, "threads"_a = 0, "pivot_tolerance"_a = 0.0, "check_finite"_a = false)
        .def_prop_ro("method", [](const TridiagSolver &s) { return std::string(ns_tridiag_method_name(ns_tridiag_solver_method(s.s))); })
        .def_prop_ro("backend", [](const TridiagSolver &s) { return std::string(ns_backend_name(ns_tridiag_solver_backend(s.s))); })
        .def_prop_ro("length", [](const TridiagSolver &s) { return s.length; }, "Entries each array must hold.")
        .def("solve", [](TridiagSolver &s, nb::handle dl, nb::handle d, nb::handle du, nb::handle x,
                         nb::handle stream) {
            TridiagArrays v = tridiag_arrays(s, "TridiagSolver.solve", dl, d, du, x, stream);
            tridiag_call(s, v, stream_of(stream));
        }, "dl"_a, "d"_a, "du"_a, "x"_a, "stream"_a = nb::none(),
           "Solve in place: x holds the right-hand side and becomes the solution. Host arrays: dl, d, du are "
           "read, synchronous. CUDA arrays (GPU methods): queued on `stream`, returns at once; call wait(). "
           "The kernel may overwrite du (or dl, d, du for cusparse-*) when the layout is the method's native one.")
        .def("bind", [](nb::object self, nb::handle dl, nb::handle d, nb::handle du, nb::handle x, nb::object stream) {
            TridiagSolver &s = nb::cast<TridiagSolver &>(self);
            auto bound = std::make_unique<TridiagBound>();
            bound->v = tridiag_arrays(s, "TridiagSolver.bind", dl, d, du, x, stream);
            bound->stream = stream_of(stream);
            bound->stream_obj = stream;
            bound->solver = self;
            bound->arrays = nb::make_tuple(dl, d, du, x);
            return bound;
        }, "dl"_a, "d"_a, "du"_a, "x"_a, "stream"_a = nb::none(),
           "Check and import the four arrays (and the stream) once; the returned object's solve() then solves "
           "them in place with no per-call checks or imports.")
        .def("wait", [](TridiagSolver &s) {
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(s.mu);
                st = ns_tridiag_solver_wait(s.s);
            }
            check(st);
        }, "Block until the device solves queued since the last wait finished; raises SingularError for a "
           "zero pivot among them.")
        .def_prop_ro("timing", [](TridiagSolver &s) {
            std::lock_guard<std::mutex> lock(s.mu);
            ns_solve_timing t;
            ns_tridiag_solver_timing(s.s, &t);
            return timing_dict(t);
        });

    nb::class_<TridiagBound>(m, "BoundTridiagSolve",
                             "TridiagSolver.bind(dl, d, du, x, stream): four arrays checked and imported once.")
        .def("solve", [](TridiagBound &b) { tridiag_call(nb::cast<TridiagSolver &>(b.solver), b.v, b.stream); },
             "Solve the bound arrays in place (x becomes the solution); device arrays: queued on the bound stream.")
        .def("wait", [](TridiagBound &b) {
            TridiagSolver &s = nb::cast<TridiagSolver &>(b.solver);
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(s.mu);
                st = ns_tridiag_solver_wait(s.s);
            }
            check(st);
        }, "TridiagSolver.wait() of the solver.")
        .def_prop_ro("solver", [](const TridiagBound &b) { return b.solver; })
        .def_prop_ro("arrays", [](const TridiagBound &b) { return b.arrays; }, "(dl, d, du, x) as given to bind.")
        .def_prop_ro("stream", [](const TridiagBound &b) { return b.stream_obj; })
        .def_prop_ro("device", [](const TridiagBound &b) { return b.v.host ? "cpu" : "cuda"; });

    // ----------------------------------------------------------- SimParams
    nb::class_<SimParams>(m, "SimParams", "Simulation parameters (docs/simulation.md): set by key, read from a file.")
        .def(nb::init<>())
        .def("set", [](SimParams &p, const std::string &key, double value) { check(ns_sim_params_set(&p.p, key.c_str(), value)); },
             "key"_a, "value"_a)
        .def("parse", [](SimParams &p, const std::string &text, const std::string &name) {
            check(ns_sim_params_parse(&p.p, text.data(), text.size(), name.c_str()));
        }, "text"_a, "name"_a = "<string>")
        .def("read", [](SimParams &p, const std::filesystem::path &path) { check(ns_sim_params_read(&p.p, path.c_str())); }, "path"_a)
        .def("check", [](const SimParams &p) { check(ns_sim_params_check(&p.p)); })
        .def("to_dict", [](const SimParams &p) {
            nb::dict d;
            for (int r = 0; r < NS_REGION_COUNT; ++r) {
                const ns_membrane &mb = p.p.region[r];
                nb::dict x;
                x["cm"] = mb.cm;
                x["hh"] = mb.hh;
                x["gnabar_hh"] = mb.gnabar;
                x["gkbar_hh"] = mb.gkbar;
                x["gl_hh"] = mb.gl;
                x["el_hh"] = mb.el;
                x["ena"] = mb.ena;
                x["ek"] = mb.ek;
                x["pas"] = mb.pas;
                x["g_pas"] = mb.g_pas;
                x["e_pas"] = mb.e_pas;
                d[ns_region_name((ns_region)r)] = x;
            }
            d["celsius"] = p.p.celsius;
            d["v_init"] = p.p.v_init;
            d["dt"] = p.p.dt;
            d["usetable_hh"] = p.p.usetable;
            d["spike_threshold"] = p.p.spike_threshold;
            d["netcon_spikes"] = p.p.netcon_spikes;
            d["Ra"] = p.p.Ra;
            d["tstop"] = p.p.tstop;
            return d;
        }, "Every parameter; regions as nested dicts keyed by NEURON's names.");

    // ----------------------------------------------------------- mechanisms and models
    m.def("build_mechanisms", [](const std::filesystem::path &dir, const std::filesystem::path &out, nb::handle cc, nb::handle nvcc,
                                 nb::handle cuda_arch, bool keep_sources) {
        std::string ccs = cc.is_none() ? "" : nb::cast<std::string>(cc);
        std::string nvccs = nvcc.is_none() ? "" : nb::cast<std::string>(nvcc);
        std::string archs = cuda_arch.is_none() ? "" : nb::cast<std::string>(cuda_arch);
        ns_mechanisms_build_options o{};
        o.cc = ccs.empty() ? nullptr : ccs.c_str();
        o.nvcc = nvccs.empty() ? nullptr : nvccs.c_str();
        o.cuda_arch = archs.empty() ? nullptr : archs.c_str();
        o.keep_sources = keep_sources ? 1 : 0;
        ns_status st;
        std::string msg;
        {
            nb::gil_scoped_release r;
            st = ns_mechanisms_build(dir.c_str(), out.c_str(), &o);
            if (st != NS_OK) msg = ns_last_error();
        }
        if (st != NS_OK) fail(st, msg);
    }, "dir"_a, "out"_a, "cc"_a = nb::none(), "nvcc"_a = nb::none(), "cuda_arch"_a = nb::none(),
       "keep_sources"_a = false,
       "Translate every DIR/*.mod and compile them into the mechanism library OUT (docs/mechanisms.md); "
       "nvcc: also the CUDA kernels.");
    nb::class_<MechLibrary>(m, "MechanismLibrary", "A mechanism library built by build_mechanisms (docs/mechanisms.md).")
        .def("__init__", [](MechLibrary *self, const std::filesystem::path &path) {
            ns_mech_library_t *lib = nullptr;
            check(ns_mech_library_open(path.c_str(), &lib));
            new (self) MechLibrary();
            self->lib = lib;
        }, "path"_a)
        .def_prop_ro("names", [](const MechLibrary &l) {
            std::vector<std::string> out;
            for (int k = 0; k < ns_mech_library_count(l.lib); ++k) out.push_back(ns_mech_library_get(l.lib, k)->name);
            return out;
        }, "The mechanisms' names (SUFFIX or POINT_PROCESS), in the library's order.")
        .def("describe", [](const MechLibrary &l, const std::string &name) {
            const ns_mech_desc *d = nullptr;
            check(ns_mech_library_find(l.lib, name.c_str(), &d));
            nb::dict r;
            r["kind"] = d->kind == NS_MECH_POINT ? "point" : "density";
            std::vector<std::string> params, assigned, states, globals, ions;
            for (int f = 0; f < d->n_fields; ++f)
                (f < d->n_params ? params : f < d->n_params + d->n_assigned ? assigned : states).push_back(d->field_names[f]);
            for (int g = 0; g < d->n_globals; ++g) globals.push_back(d->global_names[g]);
            for (int j = 0; j < d->n_ions; ++j) ions.push_back(d->ions[j].name);
            r["parameters"] = params;
            r["assigned"] = assigned;
            r["states"] = states;
            r["globals"] = globals;
            r["ions"] = ions;
            return r;
        }, "name"_a, "A mechanism's kind, parameters, assigned and state variables, GLOBALs and ions.");

    nb::class_<Model>(m, "Model",
                      "Which mechanisms are inserted where, with which parameters (docs/simulation.md, \"Models\").")
        .def("__init__", [](Model *self, nb::handle library) {
            const ns_mech_library_t *lib = nullptr;
            if (!library.is_none()) {
                if (!nb::isinstance<MechLibrary>(library))
                    fail(NS_ERR_INVALID_ARGUMENT, "Model: library must be a MechanismLibrary or None, got " +
                                                      std::string(nb::inst_name(library).c_str()));
                lib = nb::cast<MechLibrary &>(library).lib;
            }
            ns_sim_model_t *mo = nullptr;
            check(ns_sim_model_create(lib, &mo));
            new (self) Model();
            self->m = mo;
            self->library = nb::borrow(library);
        }, "library"_a = nb::none())
        .def("insert", [](Model &mo, const std::string &where, const std::string &mech) {
            check(ns_sim_model_insert(mo.m, where.c_str(), mech.c_str()));
        }, "where"_a, "mechanism"_a)
        .def("set", [](Model &mo, const std::string &where, const std::string &name, nb::handle value) {
            std::string text;
            if (nb::isinstance<nb::str>(value)) text = nb::cast<std::string>(value);
            else {
                const double x = nb::cast<double>(value);
                char buf[64];
                snprintf(buf, sizeof buf, "%.17g", x);
                text = buf;
            }
            check(ns_sim_model_set(mo.m, where.c_str(), name.c_str(), text.c_str()));
        }, "where"_a, "name"_a, "value"_a, "A RANGE parameter (NAME_MECH) or an ion value (eX, Xi, Xo): a number or "
                                           "an expression in d, the distance from the soma [um].")
        .def("set_global", [](Model &mo, const std::string &name, double value) {
            check(ns_sim_model_set_global(mo.m, name.c_str(), value));
        }, "name"_a, "value"_a)
        .def("parse", [](Model &mo, const std::string &text, const std::string &name) {
            check(ns_sim_model_parse(mo.m, text.data(), text.size(), name.c_str()));
        }, "text"_a, "name"_a = "model")
        .def("read", [](Model &mo, const std::filesystem::path &path) { check(ns_sim_model_read(mo.m, path.c_str())); },
             "path"_a);

    // ------------------------------------------------------------- Network
    nb::class_<Network>(m, "Network", "A network file (docs/networks.md, \"Network files\"): cells, model, synapses, "
                                      "sources, connections; applied with Simulation.apply_network or "
                                      "Simulation.from_network.")
        .def_static("read", [](const std::filesystem::path &path) {
            auto n = std::make_unique<Network>();
            check(ns_network_read(path.c_str(), &n->n));
            return n;
        }, "path"_a, "Read a network file (morphology and model paths relative to its folder).")
        .def_static("parse", [](const std::string &text, const std::string &name, nb::handle base_dir) {
            auto n = std::make_unique<Network>();
            std::string dir = base_dir.is_none() ? std::string() : nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(base_dir));
            check(ns_network_parse(text.data(), text.size(), name.c_str(), base_dir.is_none() ? nullptr : dir.c_str(), &n->n));
            return n;
        }, "text"_a, "name"_a = "network", "base_dir"_a = nb::none())
        .def_static("read_sonata", [](const std::filesystem::path &config, nb::handle input_spikes) {
            auto n = std::make_unique<Network>();
            std::string sp = input_spikes.is_none() ? std::string() : nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(input_spikes));
            check(ns_network_read_sonata(config.c_str(), input_spikes.is_none() ? nullptr : sp.c_str(), &n->n));
            return n;
        }, "config"_a, "input_spikes"_a = nb::none(),
           "Read a SONATA network (docs/networks.md, \"SONATA\"): its config (JSON), nodes and edges (HDF5); "
           "input_spikes: a SONATA spikes file for the virtual nodes instead of the config's inputs. "
           "Network.read detects a config too. NotSupportedError in a build without HDF5 (the PyPI wheel).")
        .def_prop_ro("populations", [](const Network &n) {
            nb::list l;
            for (int32_t k = 0; k < ns_network_populations(n.n); ++k) l.append(nb::str(ns_network_population(n.n, k)));
            return l;
        }, "SONATA's node populations (empty for a network file).")
        .def("source_node", [](const Network &n, int64_t source) {
            int32_t pop = -1;
            int64_t node = -1;
            check(ns_network_source_node(n.n, source, &pop, &node));
            return nb::make_tuple(nb::str(ns_network_population(n.n, pop)), node);
        }, "source"_a, "A SONATA source's (population, node id).")
        .def("apply_run_settings", [](const Network &n, SimParams &p) { check(ns_network_run_params(n.n, &p.p)); },
             "params"_a, "Set the SONATA config's tstop, dt, celsius, v_init and spike_threshold in params.")
        .def("write_spikes", [](const Network &n, const std::filesystem::path &path, nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig> sources,
                                nb::ndarray<const double, nb::ndim<1>, nb::c_contig> times) {
            if (sources.shape(0) != times.shape(0))
                fail(NS_ERR_INVALID_ARGUMENT, "Network.write_spikes: " + std::to_string(sources.shape(0)) + " sources and " +
                                                  std::to_string(times.shape(0)) + " times");
            check(ns_network_write_spikes(n.n, path.c_str(), (int64_t)sources.shape(0), sources.data(), times.data()));
        }, "path"_a, "sources"_a, "times"_a,
           "Write the detectors' spikes (source ids and times) as a SONATA spikes file (HDF5) at path.")
        .def_prop_ro("n_cells", [](const Network &n) { return ns_network_cells(n.n); })
        .def_prop_ro("morphologies", [](const Network &n) {
            nb::list l;
            for (int32_t k = 0; k < ns_network_morphologies(n.n); ++k) l.append(nb::str(ns_network_morphology(n.n, k)));
            return l;
        }, "The morphology paths, in order of first use.")
        .def_prop_ro("cell_morphology", [](const Network &n) {
            return to_numpy<int32_t>(ns_network_cell_morphology(n.n), {(size_t)ns_network_cells(n.n)});
        }, "Each cell's index in morphologies.")
        .def_prop_ro("n_synapses", [](const Network &n) { return ns_network_synapses(n.n); })
        .def_prop_ro("n_sources", [](const Network &n) { return ns_network_sources(n.n); })
        .def("model", [](const Network &n, nb::handle library) -> nb::object {
            const ns_mech_library_t *lib = nullptr;
            if (!library.is_none()) {
                if (!nb::isinstance<MechLibrary>(library))
                    fail(NS_ERR_INVALID_ARGUMENT, "Network.model: library must be a MechanismLibrary or None, got " +
                                                      std::string(nb::inst_name(library).c_str()));
                lib = nb::cast<MechLibrary &>(library).lib;
            }
            ns_sim_model_t *mo = nullptr;
            check(ns_network_model(n.n, lib, &mo));
            if (!mo) return nb::none();
            auto m = std::make_unique<Model>();
            m->m = mo;
            m->library = nb::borrow(library);
            return nb::cast(m.release(), nb::rv_policy::take_ownership);
        }, "library"_a = nb::none(), "The network's model (None when the file names none).");

    // ----------------------------------------------------------- Simulation
    nb::class_<Simulation>(m, "Simulation", "A population of cells simulated with NEURON's hh/pas and fixed step.")
        .def("__init__", [](Simulation *self, nb::handle shapes, int64_t n_cells, nb::handle cell_shape,
                            const SimParams &params, const std::string &backend, const std::string &method,
                            int32_t threads, int32_t gpu_lanes, int32_t record_every, int32_t check_every,
                            nb::handle model, const std::string &gpu_mechanisms) {
            std::vector<const ns_cell_t *> sh;
            for (nb::handle h : shapes) {
                if (!nb::isinstance<Cell>(h))
                    fail(NS_ERR_INVALID_ARGUMENT, "Simulation: cells must be neurosolve.Cell objects, got " +
                                                      std::string(nb::inst_name(h).c_str()));
                sh.push_back(nb::cast<Cell &>(h).c);
            }
            std::vector<int32_t> cs = cell_shape_of(cell_shape, n_cells, "Simulation");
            ns_sim_options o;
            ns_sim_options_init(&o);
            o.backend = backend_of(backend);
            o.method = hines_method_of(method);
            o.threads = threads;
            o.gpu_lanes = gpu_lanes;
            o.record_every = record_every;
            o.check_every = check_every;
            check(ns_sim_gpu_mechanisms_from_name(gpu_mechanisms.c_str(), &o.gpu_mechanisms));
            nb::object library = nb::none();
            std::vector<const ns_sim_model_t *> per_shape;
            if (!model.is_none() && (nb::isinstance<nb::list>(model) || nb::isinstance<nb::tuple>(model))) {
                // one model per shape (ns_sim_options.shape_models)
                for (nb::handle h : model) {
                    if (!nb::isinstance<Model>(h))
                        fail(NS_ERR_INVALID_ARGUMENT, "Simulation: model must be a neurosolve.Model or one per "
                                                      "shape, got " + std::string(nb::inst_name(h).c_str()));
                    per_shape.push_back(nb::cast<Model &>(h).m);
                    if (library.is_none()) library = nb::cast<Model &>(h).library;
                }
                if (per_shape.size() != sh.size())
                    fail(NS_ERR_INVALID_ARGUMENT, "Simulation: " + std::to_string(per_shape.size()) +
                                                      " models for " + std::to_string(sh.size()) + " shapes");
                o.shape_models = per_shape.data();
            } else if (!model.is_none()) {
                if (!nb::isinstance<Model>(model))
                    fail(NS_ERR_INVALID_ARGUMENT, "Simulation: model must be a neurosolve.Model, got " +
                                                      std::string(nb::inst_name(model).c_str()));
                o.model = nb::cast<Model &>(model).m;
                library = nb::cast<Model &>(model).library;
            }
            ns_sim_t *s = nullptr;
            {
                nb::gil_scoped_release r;
                ns_status st = ns_sim_create((int32_t)sh.size(), sh.data(), n_cells, cs.empty() ? nullptr : cs.data(),
                                             &params.p, &o, &s);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            new (self) Simulation();
            self->s = s;
            self->library = library;
            for (const ns_cell_t *c : sh) self->shape_size.push_back(ns_tree_size(ns_cell_tree(c)));
            self->cell_shape = cs;
        }, "cells"_a, "n_cells"_a, "cell_shape"_a = nb::none(), "params"_a = SimParams(), "backend"_a = "auto",
           "method"_a = "auto", "threads"_a = 0, "gpu_lanes"_a = 0, "record_every"_a = 1, "check_every"_a = 1,
           "model"_a = nb::none(), "gpu_mechanisms"_a = "auto")
        .def("add_iclamp", [](Simulation &s, int64_t cell, int32_t compartment, double delay, double duration, double amplitude) {
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_add_iclamp(s.s, cell, compartment, delay, duration, amplitude));
        }, "cell"_a, "compartment"_a, "delay"_a, "duration"_a, "amplitude"_a)
        .def("add_synapse", [](Simulation &s, int64_t cell, int32_t compartment, const std::string &mech) {
            std::lock_guard<std::mutex> lock(s.mu);
            int64_t id = -1;
            check(ns_sim_add_synapse(s.s, cell, compartment, mech.c_str(), &id));
            return id;
        }, "cell"_a, "compartment"_a, "mechanism"_a, "A synapse (ExpSyn, Exp2Syn, a library's point process); its id.")
        .def("synapse_set", [](Simulation &s, int64_t synapse, const std::string &name, double value) {
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_synapse_set(s.s, synapse, name.c_str(), value));
        }, "synapse"_a, "name"_a, "value"_a)
        .def("add_detector", [](Simulation &s, int64_t cell, int32_t compartment, double threshold) {
            std::lock_guard<std::mutex> lock(s.mu);
            int64_t id = -1;
            check(ns_sim_add_detector(s.s, cell, compartment, threshold, &id));
            return id;
        }, "cell"_a, "compartment"_a, "threshold"_a = -20.0, "A spike detector (a source); its id.")
        .def("add_spike_source", [](Simulation &s, std::vector<double> times) {
            std::lock_guard<std::mutex> lock(s.mu);
            int64_t id = -1;
            check(ns_sim_add_spike_source(s.s, times.data(), (int64_t)times.size(), &id));
            return id;
        }, "times"_a, "A train of given times [ms] (a source); its id.")
        .def("add_poisson_source", [](Simulation &s, double rate_hz, double start, double stop, uint64_t seed) {
            std::lock_guard<std::mutex> lock(s.mu);
            int64_t id = -1;
            check(ns_sim_add_poisson_source(s.s, rate_hz, start, stop, seed, &id));
            return id;
        }, "rate_hz"_a, "start"_a = 0.0, "stop"_a = INFINITY, "seed"_a = 0,
           "A Poisson source of rate_hz on (start, stop) ms, its own stream of seed; its id.")
        .def("connect", [](Simulation &s, int64_t source, int64_t synapse, double weight, double delay) {
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_connect(s.s, source, synapse, weight, delay));
        }, "source"_a, "synapse"_a, "weight"_a, "delay"_a)
        .def("source_spikes", [](Simulation &s, int64_t source) {
            std::lock_guard<std::mutex> lock(s.mu);
            if (source < 0 || source >= ns_sim_sources(s.s))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.source_spikes: source " + std::to_string(source) +
                                                  " out of range [0, " + std::to_string(ns_sim_sources(s.s)) + ")");
            int64_t n = 0;
            const double *p = ns_sim_source_spikes(s.s, source, &n);
            return to_numpy<double>(p, {(size_t)n});
        }, "source"_a, "The source's spikes so far [ms], ascending.")
        .def("source_cell", [](const Simulation &s, int64_t source) {
            const int64_t c = ns_sim_source_cell(s.s, source);
            if (c < -1)
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.source_cell: source " + std::to_string(source) + " out of range");
            return c;
        }, "source"_a, "A detector's cell; -1 for a train or a Poisson source.")
        .def_prop_ro("n_synapses", [](const Simulation &s) { return ns_sim_synapses(s.s); })
        .def_prop_ro("n_sources", [](const Simulation &s) { return ns_sim_sources(s.s); })
        .def_prop_ro("n_connections", [](const Simulation &s) { return ns_sim_connections(s.s); })
        .def("apply_network", [](Simulation &s, const Network &n, nb::handle cells) {
            std::vector<const ns_cell_t *> sh;
            for (nb::handle h : cells) {
                if (!nb::isinstance<Cell>(h))
                    fail(NS_ERR_INVALID_ARGUMENT, "Simulation.apply_network: cells must be neurosolve.Cell objects, got " +
                                                      std::string(nb::inst_name(h).c_str()));
                sh.push_back(nb::cast<Cell &>(h).c);
            }
            if ((int64_t)sh.size() != ns_network_morphologies(n.n))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.apply_network: " + std::to_string(sh.size()) +
                                                  " cells for the network's " +
                                                  std::to_string(ns_network_morphologies(n.n)) + " morphologies");
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_network_apply(n.n, s.s, sh.data()));
        }, "network"_a, "cells"_a,
           "Create the network's synapses, sources and connections (cells: one discretised Cell per morphology).")
        .def("add_recording", [](Simulation &s, int64_t cell, int32_t compartment) {
            std::lock_guard<std::mutex> lock(s.mu);
            int32_t site = -1;
            check(ns_sim_add_recording(s.s, cell, compartment, &site));
            return site;
        }, "cell"_a, "compartment"_a, "Record v there; returns the site (column of traces).")
        .def("init", [](Simulation &s) {
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_init(s.s));
        })
        .def("advance", [](Simulation &s, int64_t steps) {
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(s.mu);
                st = ns_sim_advance(s.s, steps);
            }
            check(st);
        }, "steps"_a)
        .def("steps_for", [](const Simulation &s, double tstop) {
            if (!(tstop >= 0.0) || !std::isfinite(tstop)) /* as the command line's --tstop */
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.steps_for: tstop = " + std::to_string(tstop) +
                                                  " ms must be a finite number >= 0");
            int64_t n = ns_sim_steps_for(s.s, tstop);
            if (n < 0) check(NS_ERR_INVALID_ARGUMENT);
            return n;
        }, "tstop"_a)
        .def_prop_ro("time", [](const Simulation &s) { return ns_sim_time(s.s); })
        .def_prop_ro("step_count", [](const Simulation &s) { return ns_sim_step_count(s.s); })
        .def_prop_ro("n_cells", [](const Simulation &s) { return ns_sim_cells(s.s); })
        .def_prop_ro("compartments", [](const Simulation &s) { return ns_sim_compartments(s.s); })
        .def_prop_ro("backend", [](const Simulation &s) { return std::string(ns_backend_name(ns_sim_backend(s.s))); })
        .def_prop_ro("method", [](const Simulation &s) { return std::string(ns_hines_method_name(ns_sim_method(s.s))); })
        .def_prop_ro("elapsed_ms", [](const Simulation &s) { return ns_sim_elapsed_ms(s.s); })
        .def_prop_ro("gpu_lanes", [](const Simulation &s) { return ns_sim_gpu_lanes(s.s); })
        .def_prop_ro("gpu_mechanisms", [](const Simulation &s) {
            return std::string(ns_sim_gpu_mechanisms_name(ns_sim_gpu_mechanisms_of(s.s)));
        })
        .def("spike_compartment", [](const Simulation &s, int64_t cell) {
            if (cell < 0 || cell >= ns_sim_cells(s.s))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.spike_compartment: cell " + std::to_string(cell) + " out of range");
            return ns_sim_spike_compartment(s.s, cell);
        }, "cell"_a)
        .def_prop_ro("traces", [](Simulation &s) {
            std::lock_guard<std::mutex> lock(s.mu);
            int64_t samples = 0;
            int32_t sites = 0;
            const double *t = ns_sim_traces(s.s, &samples, &sites);
            return to_numpy<double>(t, {(size_t)samples, (size_t)sites});
        }, "A copy of the recorded voltages [mV], shape (samples, sites).")
        .def("spikes", [](Simulation &s, int64_t cell) {
            std::lock_guard<std::mutex> lock(s.mu);
            if (cell < 0 || cell >= ns_sim_cells(s.s))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.spikes: cell " + std::to_string(cell) + " out of range [0, " +
                                                  std::to_string(ns_sim_cells(s.s)) + ")");
            int64_t n = 0;
            const double *p = ns_sim_spikes(s.s, cell, &n);
            return to_numpy<double>(p, {(size_t)n});
        }, "cell"_a)
        .def("state", [](Simulation &s, int64_t cell) {
            std::lock_guard<std::mutex> lock(s.mu);
            if (cell < 0 || cell >= ns_sim_cells(s.s))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.state: cell " + std::to_string(cell) + " out of range");
            auto v = empty_numpy<double>((size_t)s.cell_size(cell));
            check(ns_sim_get_state(s.s, cell, v.data()));
            nb::dict d;
            d["v"] = v;
            return d;
        }, "cell"_a, "The state of one cell: dict of v (numpy copy, the cell's compartments); the mechanisms' "
                     "variables (m_hh, ...): model_var.")
        .def("model_var", [](Simulation &s, int64_t cell, const std::string &name) {
            std::lock_guard<std::mutex> lock(s.mu);
            if (cell < 0 || cell >= ns_sim_cells(s.s))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.model_var: cell " + std::to_string(cell) + " out of range");
            auto x = empty_numpy<double>((size_t)s.cell_size(cell));
            check(ns_sim_get_model_var(s.s, cell, name.c_str(), x.data()));
            return x;
        }, "cell"_a, "name"_a, "A mechanism's or ion's variable in one cell by NEURON's name (m_hh, m_NaTs2_t, "
                               "gIhbar_Ih, cai, eca): numpy copy over the cell's compartments, NaN where the "
                               "mechanism is absent.")
        .def("set_model_var", [](Simulation &s, int64_t cell, const std::string &name, nb::handle values) {
            std::lock_guard<std::mutex> lock(s.mu);
            if (cell < 0 || cell >= ns_sim_cells(s.s))
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.set_model_var: cell " + std::to_string(cell) + " out of range");
            view x = take<double>(values, "Simulation.set_model_var", "values", s.cell_size(cell), place::host, false);
            check(ns_sim_set_model_var(s.s, cell, name.c_str(), (const double *)x.ptr));
        }, "cell"_a, "name"_a, "values"_a, "Write a variable of model_var's names in one cell (the cell's "
                                           "compartments; entries where the mechanism is absent are ignored).")
        .def("cell_offset", [](const Simulation &s, int64_t cell) {
            const int64_t o = ns_sim_cell_offset(s.s, cell);
            if (o < 0)
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.cell_offset: cell " + std::to_string(cell) + " out of range [0, " +
                                                  std::to_string(ns_sim_cells(s.s)) + "]");
            return o;
        }, "cell"_a, "First compartment of `cell` in the Flat order of read_var / write_var (cells: the total).")
        .def_prop_ro("state_parts", [](const Simulation &s) { return ns_sim_state_parts(s.s); },
                     "Parts in which the loop keeps its state (state_part).")
        .def("state_part", &sim_state_part, "part"_a,
             "The loop's own state arrays of one part, no copy (docs/python.md, 'Coupling'): dict of v, m, h, n "
             "(None for a model) and flat_of (the Flat index of each position), numpy views of a CPU simulation or "
             "DLPack arrays of a CUDA one (cupy.from_dlpack, torch.from_dlpack), valid while the Simulation "
             "exists; and the layout: cell, first (numpy), stride, node_pos (numpy or None), device. Call "
             "state_done(stream) after changing them on a stream.")
        .def("state_field", &sim_state_field, "part"_a, "name"_a,
             "A model's variable (FIELD_MECH, or an ion's eX, Xi, Xo, iX) in one part, no copy: dict of data (the "
             "mechanism's own array), pos (the part position of each entry, or None: entry q is position q) and "
             "device; numpy views or DLPack arrays as state_part.")
        .def("state_done", [](Simulation &s, nb::handle stream) {
            const bool cuda = ns_sim_backend(s.s) == NS_BACKEND_CUDA;
            if (!cuda && !stream.is_none())
                fail(NS_ERR_INVALID_ARGUMENT, "Simulation.state_done: stream given for a CPU simulation (host arrays, no stream)");
            void *q = cuda ? stream_of(stream) : nullptr;
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_state_done(s.s, q));
        }, "stream"_a = nb::none(),
           "The caller's reads and writes of state_part arrays are queued on `stream`: the next advance and "
           "accessor wait for them (ns_sim_state_done).")
        .def("read_var", [](Simulation &s, const std::string &var, nb::handle out, nb::handle stream) {
            sim_var_call(s, var, out, stream, true);
        }, "var"_a, "out"_a, "stream"_a = nb::none(),
           "Copy one state variable ('v', 'm', 'h', 'n') of every compartment, Flat order, into `out` (float64, "
           "ns_sim_compartments values): a CuPy/PyTorch/JAX device array queued on `stream` for a CUDA simulation, "
           "a numpy array for a CPU one (docs/python.md, 'Coupling').")
        .def("write_var", [](Simulation &s, const std::string &var, nb::handle src, nb::handle stream) {
            sim_var_call(s, var, src, stream, false);
        }, "var"_a, "src"_a, "stream"_a = nb::none(),
           "Set one state variable of every compartment from `src` (as read_var); takes effect at the next step.");

    // ----------------------------------------------------------------- LiFE
    nb::class_<LifeModel>(m, "LifeModel", "A LiFE model (docs/life.md, docs/life_data.md).")
        .def_static("load", [](const std::filesystem::path &dir) {
            auto lm = std::make_unique<LifeModel>();
            {
                nb::gil_scoped_release r;
                ns_status st = ns_life_built_load(dir.c_str(), &lm->built);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            lm->m = ns_life_built_model(lm->built);
            return lm;
        }, "directory"_a)
        .def_static("build", [](const std::filesystem::path &dwi, const std::filesystem::path &bvals,
                                const std::filesystem::path &bvecs, const std::filesystem::path &tracks, int32_t dictionary_l, double axial_diffusivity,
                                double radial_diffusivity, double b0_threshold, const std::string &bad,
                                const std::string &nodes) {
            ns_life_build_options o;
            ns_life_build_options_init(&o);
            if (dictionary_l > 0) o.dictionary_l = dictionary_l; /* 0: the library's default (180) */
            o.nodes = pick<ns_life_node_combination>("nodes", nodes, {{"sum", NS_LIFE_NODES_SUM}, {"mean", NS_LIFE_NODES_MEAN}});
            o.axial_diffusivity = axial_diffusivity;
            o.radial_diffusivity = radial_diffusivity;
            o.b0_threshold = b0_threshold;
            o.bad = pick<ns_life_bad_policy>("bad", bad, {{"error", NS_LIFE_BAD_ERROR}, {"skip", NS_LIFE_BAD_SKIP}});
            auto lm = std::make_unique<LifeModel>();
            {
                nb::gil_scoped_release r;
                ns_status st = ns_life_build(dwi.c_str(), bvals.c_str(), bvecs.c_str(), tracks.c_str(), &o, &lm->built);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            lm->m = ns_life_built_model(lm->built);
            return lm;
        }, "dwi"_a, "bvals"_a, "bvecs"_a, "tracks"_a, "dictionary_l"_a = 0, "axial_diffusivity"_a = 1.0,
           "radial_diffusivity"_a = 0.0, "b0_threshold"_a = 50.0, "bad"_a = "error", "nodes"_a = "sum")
        .def_static("_build_arrays", [](nb::handle dwi, nb::handle affine, nb::handle bvals, nb::handle bvecs,
                                        nb::handle points, nb::handle offsets, nb::handle to_world, int32_t dictionary_l,
                                        double axial_diffusivity, double radial_diffusivity, double b0_threshold,
                                        const std::string &bad, const std::string &nodes) {
            const char *fn = "LifeModel.build_arrays";
            ns_life_build_options o;
            ns_life_build_options_init(&o);
            if (dictionary_l > 0) o.dictionary_l = dictionary_l; /* 0: the library's default (180) */
            o.nodes = pick<ns_life_node_combination>("nodes", nodes, {{"sum", NS_LIFE_NODES_SUM}, {"mean", NS_LIFE_NODES_MEAN}});
            o.axial_diffusivity = axial_diffusivity;
            o.radial_diffusivity = radial_diffusivity;
            o.b0_threshold = b0_threshold;
            o.bad = pick<ns_life_bad_policy>("bad", bad, {{"error", NS_LIFE_BAD_ERROR}, {"skip", NS_LIFE_BAD_SKIP}});
            // the image: 4-D, host memory, any strides, a real dtype of NIfTI's (no conversion)
            any_array img;
            if (!nb::try_cast<any_array>(dwi, img, false))
                fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": dwi is not an array (numpy, or a nibabel image); got " +
                                                  nb::inst_name(dwi).c_str());
            if (img.device_type() != nb::device::cpu::value)
                fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": dwi is " + device_name(img.device_type()) +
                                                  " memory, expected host (cpu) memory");
            if (img.ndim() != 4)
                fail(NS_ERR_SIZE, std::string(fn) + ": dwi has " + std::to_string(img.ndim()) +
                                      " dimensions, expected 4 (x, y, z, volume)");
            const nb::dlpack::dtype dt = img.dtype();
            const struct { nb::dlpack::dtype t; int32_t code; } codes[] = {
                {nb::dtype<uint8_t>(), 2},   {nb::dtype<int16_t>(), 4},   {nb::dtype<int32_t>(), 8},
                {nb::dtype<float>(), 16},    {nb::dtype<double>(), 64},   {nb::dtype<int8_t>(), 256},
                {nb::dtype<uint16_t>(), 512}, {nb::dtype<uint32_t>(), 768}, {nb::dtype<int64_t>(), 1024},
                {nb::dtype<uint64_t>(), 1280}};
            ns_life_image im;
            std::memset(&im, 0, sizeof im);
            for (auto &c : codes)
                if (dt == c.t) im.datatype = c.code;
            if (!im.datatype)
                fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": dwi has dtype " + dtype_name(dt) +
                                                  ", expected a real dtype (u)int8/16/32/64, float32 or float64 "
                                                  "(no conversion is made)");
            im.data = img.data();
            for (int k = 0; k < 4; ++k) {
                im.dim[k] = (int64_t)img.shape(k);
                im.stride[k] = img.stride(k);
            }
            view va = take<double>(affine, fn, "affine", 16, place::host, false, true);
            if (va.arr.ndim() != 2 || va.arr.shape(0) != 4)
                fail(NS_ERR_SIZE, std::string(fn) + ": affine must have shape (4, 4)");
            std::memcpy(im.affine, va.ptr, sizeof im.affine);
            view vb = take<double>(bvals, fn, "bvals", -1, place::host, false);
            const int64_t n = (int64_t)vb.arr.size();
            view vg = take<double>(bvecs, fn, "bvecs", 3 * n, place::host, false, true);
            if (vg.arr.ndim() != 2 || vg.arr.shape(1) != 3)
                fail(NS_ERR_SIZE, std::string(fn) + ": bvecs must have shape (n, 3)");
            view vo = take<int64_t>(offsets, fn, "offsets", -1, place::host, false);
            if (vo.arr.size() < 1) fail(NS_ERR_SIZE, std::string(fn) + ": offsets must have n + 1 >= 1 entries");
            view vp = take<double>(points, fn, "points", -1, place::host, false, true);
            if (vp.arr.ndim() != 2 || vp.arr.shape(1) != 3)
                fail(NS_ERR_SIZE, std::string(fn) + ": points must have shape (m, 3)");
            ns_life_streamlines tr;
            tr.n = (int64_t)vo.arr.size() - 1;
            tr.offset = (const int64_t *)vo.ptr;
            tr.points = (const double *)vp.ptr;
            tr.to_world = nullptr;
            if (tr.n > 0 && tr.offset[tr.n] != (int64_t)vp.arr.shape(0))
                fail(NS_ERR_SIZE, std::string(fn) + ": offsets[-1] = " + std::to_string(tr.offset[tr.n]) +
                                      " but points has " + std::to_string(vp.arr.shape(0)) + " rows");
            view vt;
            if (!to_world.is_none()) {
                vt = take<double>(to_world, fn, "streamlines_affine", 16, place::host, false, true);
                if (vt.arr.ndim() != 2 || vt.arr.shape(0) != 4)
                    fail(NS_ERR_SIZE, std::string(fn) + ": streamlines_affine must have shape (4, 4)");
                tr.to_world = (const double *)vt.ptr;
            }
            if (n > INT32_MAX) fail(NS_ERR_SIZE, std::string(fn) + ": too many volumes");
            auto lm = std::make_unique<LifeModel>();
            {
                nb::gil_scoped_release r;
                ns_status st = ns_life_build_arrays(&im, (const double *)vb.ptr, (const double *)vg.ptr, (int32_t)n, &tr,
                                                    &o, &lm->built);
                if (st != NS_OK) {
                    std::string msg = std::string(fn) + ": " + ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            lm->m = ns_life_built_model(lm->built);
            return lm;
        }, "dwi"_a, "affine"_a, "bvals"_a, "bvecs"_a, "points"_a, "offsets"_a, "to_world"_a = nb::none(),
           "dictionary_l"_a = 0, "axial_diffusivity"_a = 1.0, "radial_diffusivity"_a = 0.0, "b0_threshold"_a = 50.0,
           "bad"_a = "error", "nodes"_a = "sum",
           "ns_life_build_arrays on packed arrays; use LifeModel.build_arrays (python/neurosolve/__init__.py).")
        .def_static("synth", [](int32_t n_theta, int32_t dictionary_l, int32_t n_fibers, std::vector<int32_t> grid,
                                double mean_length, double active_fraction, double noise, uint64_t seed) {
            ns_life_synth_options o;
            ns_life_synth_options_init(&o);
            o.n_theta = n_theta;
            o.dictionary_l = dictionary_l;
            o.n_fibers = n_fibers;
            if (grid.size() != 3) fail(NS_ERR_INVALID_ARGUMENT, "LifeModel.synth: grid must have 3 entries");
            for (int k = 0; k < 3; ++k) o.grid[k] = grid[k];
            o.mean_length = mean_length;
            o.active_fraction = active_fraction;
            o.noise = noise;
            o.seed = seed;
            auto lm = std::make_unique<LifeModel>();
            {
                nb::gil_scoped_release r;
                ns_status st = ns_life_synth_options_check(&o);
                if (st == NS_OK) st = ns_life_synth(&o, &lm->m);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            return lm;
        }, "n_theta"_a = 96, "dictionary_l"_a = 180, "n_fibers"_a = 50000, "grid"_a = std::vector<int32_t>{72, 88, 72},
           "mean_length"_a = 90.0, "active_fraction"_a = 0.5, "noise"_a = 0.0, "seed"_a = 1,
           "A synthetic model with known true weights (ns_life_synth, docs/life.md).")
        .def_prop_ro("true_weights", [](const LifeModel &lm) {
            const double *p = ns_life_model_true_weights(lm.m);
            if (!p) return nb::object(nb::none());
            return to_numpy<double>(p, {(size_t)ns_life_model_n_fibers(lm.m)});
        }, "The weights that generated a synthetic signal (None for a real model).")
        .def_static("from_arrays", [](nb::handle atom, nb::handle voxel, nb::handle fiber, nb::handle value,
                                      nb::handle dictionary, nb::handle signal, int32_t n_fibers) {
            const char *fn = "LifeModel.from_arrays";
            view va = take<int32_t>(atom, fn, "atom", -1, place::host, false);
            const int64_t nc = (int64_t)va.arr.size();
            view vv = take<int32_t>(voxel, fn, "voxel", nc, place::host, false);
            view vf = take<int32_t>(fiber, fn, "fiber", nc, place::host, false);
            view vx = take<double>(value, fn, "value", nc, place::host, false);
            view vd = take<double>(dictionary, fn, "dictionary", -1, place::host, false, true);
            view vs = take<double>(signal, fn, "signal", -1, place::host, false, true);
            if (vd.arr.ndim() != 2 || vs.arr.ndim() != 2 || vd.arr.shape(1) != vs.arr.shape(1))
                fail(NS_ERR_SIZE, std::string(fn) + ": dictionary must be (n_atoms, n_theta) and signal "
                                                    "(n_voxels, n_theta), C order, with the same n_theta");
            const int32_t n_theta = (int32_t)vd.arr.shape(1), n_atoms = (int32_t)vd.arr.shape(0),
                          n_voxels = (int32_t)vs.arr.shape(0);
            if (n_fibers <= 0) {
                const int32_t *f = (const int32_t *)vf.ptr;
                for (int64_t k = 0; k < nc; ++k) n_fibers = std::max(n_fibers, f[k] + 1);
            }
            auto lm = std::make_unique<LifeModel>();
            check(ns_life_model_create(n_theta, n_atoms, n_voxels, n_fibers, nc, &lm->m));
            std::memcpy(ns_life_model_atom(lm->m), va.ptr, (size_t)nc * 4);
            std::memcpy(ns_life_model_voxel(lm->m), vv.ptr, (size_t)nc * 4);
            std::memcpy(ns_life_model_fiber(lm->m), vf.ptr, (size_t)nc * 4);
            std::memcpy(ns_life_model_value(lm->m), vx.ptr, (size_t)nc * 8);
            std::memcpy(ns_life_model_dictionary(lm->m), vd.ptr, (size_t)n_theta * n_atoms * 8);
            std::memcpy(ns_life_model_signal(lm->m), vs.ptr, (size_t)n_theta * n_voxels * 8);
            check(ns_life_model_validate(lm->m));
            return lm;
        }, "atom"_a, "voxel"_a, "fiber"_a, "value"_a, "dictionary"_a, "signal"_a, "n_fibers"_a = 0,
           "A model from arrays in memory (copied into the model; ns_life_model_create, then validated): "
           "Phi's atom, voxel, fiber (int32), value (float64); dictionary (n_atoms, n_theta) and signal "
           "(n_voxels, n_theta), float64 C order. n_fibers 0: the largest fiber index + 1.")
        .def_prop_ro("n_streamlines", [](const LifeModel &lm) {
            return lm.built ? ns_life_built_n_streamlines(lm.built) : (int64_t)-1;
        }, "Streamlines in the source tractogram (-1 when unknown).")
        .def_prop_ro("tracks_path", [](const LifeModel &lm) {
            return std::string(lm.built ? ns_life_built_tracks_path(lm.built) : "");
        })
        .def("write_pruned", [](const LifeModel &lm, const std::filesystem::path &out, nb::handle w, double threshold,
                                const std::filesystem::path &tracks) {
            const char *fn = "LifeModel.write_pruned";
            const int32_t F = ns_life_model_n_fibers(lm.m);
            view vw = take<double>(w, fn, "w", F, place::host, false);
            const std::string src = !tracks.empty() ? tracks.string() : std::string(lm.built ? ns_life_built_tracks_path(lm.built) : "");
            if (src.empty())
                fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": the model records no source tractogram: give tracks=");
            const int64_t n = lm.built && ns_life_built_n_streamlines(lm.built) > 0 ? ns_life_built_n_streamlines(lm.built) : F;
            const int64_t *map = lm.built ? ns_life_built_streamline(lm.built) : nullptr;
            std::vector<uint8_t> keep((size_t)std::max<int64_t>(n, 1), 0);
            const double *ww = (const double *)vw.ptr;
            for (int32_t f = 0; f < F; ++f)
                if (ww[f] > threshold) {
                    const int64_t idx = map ? map[f] : f;
                    if (idx >= 0 && idx < n) keep[(size_t)idx] = 1;
                }
            int64_t written = 0;
            ns_status st;
            {
                nb::gil_scoped_release r;
                st = ns_tracts_write_subset(src.c_str(), out.c_str(), keep.data(), n, &written);
            }
            check(st);
            return written;
        }, "out"_a, "w"_a, "threshold"_a = 0.0, "tracks"_a = "",
           "Write the streamlines of the fibers with w > threshold to `out` in the source's format "
           "(ns_tracts_write_subset, as `neurosolve life report --pruned`); returns the count written.")
        .def("save", [](const LifeModel &lm, const std::filesystem::path &dir) {
            if (lm.built)
                check(ns_life_built_save(lm.built, dir.c_str()));
            else
                check(ns_life_model_save(lm.m, dir.c_str()));
        }, "directory"_a)
        .def("validate", [](const LifeModel &lm) { check(ns_life_model_validate(lm.m)); })
        .def_prop_ro("n_theta", [](const LifeModel &lm) { return ns_life_model_n_theta(lm.m); })
        .def_prop_ro("n_atoms", [](const LifeModel &lm) { return ns_life_model_n_atoms(lm.m); })
        .def_prop_ro("n_voxels", [](const LifeModel &lm) { return ns_life_model_n_voxels(lm.m); })
        .def_prop_ro("n_fibers", [](const LifeModel &lm) { return ns_life_model_n_fibers(lm.m); })
        .def_prop_ro("n_coeffs", [](const LifeModel &lm) { return ns_life_model_n_coeffs(lm.m); })
        .def_prop_ro("signal", [](const LifeModel &lm) {
            // column-major n_theta x n_voxels in the C model: returned as a
            // (n_voxels, n_theta) C-order copy's transpose would be confusing;
            // give (n_theta, n_voxels) in Fortran order via the transpose.
            const size_t t = (size_t)ns_life_model_n_theta(lm.m), v = (size_t)ns_life_model_n_voxels(lm.m);
            return to_numpy<double>(ns_life_model_signal(lm.m), {v, t});
        }, "A copy of the demeaned signal Y, shape (n_voxels, n_theta): row v is voxel v's column of Y.")
        .def_prop_ro("phi", [](const LifeModel &lm) {
            const size_t n = (size_t)ns_life_model_n_coeffs(lm.m);
            nb::dict d;
            d["atom"] = to_numpy<int32_t>(ns_life_model_atom(lm.m), {n});
            d["voxel"] = to_numpy<int32_t>(ns_life_model_voxel(lm.m), {n});
            d["fiber"] = to_numpy<int32_t>(ns_life_model_fiber(lm.m), {n});
            d["value"] = to_numpy<double>(ns_life_model_value(lm.m), {n});
            return d;
        })
        .def_prop_ro("dictionary", [](const LifeModel &lm) {
            const size_t t = (size_t)ns_life_model_n_theta(lm.m), a = (size_t)ns_life_model_n_atoms(lm.m);
            return to_numpy<double>(ns_life_model_dictionary(lm.m), {a, t});
        }, "A copy of D, shape (n_atoms, n_theta): row a is atom a's column of D.")
        .def_prop_ro("streamline", [](const LifeModel &lm) {
            const int64_t *p = lm.built ? ns_life_built_streamline(lm.built) : nullptr;
            if (!p) return nb::object(nb::none());
            return to_numpy<int64_t>(p, {(size_t)ns_life_model_n_fibers(lm.m)});
        }, "Per fiber: its streamline in the source tractogram (None when unknown).")
        .def_prop_ro("voxel_ijk", [](const LifeModel &lm) {
            const int32_t *p = lm.built ? ns_life_built_voxel_ijk(lm.built) : nullptr;
            if (!p) return nb::object(nb::none());
            return to_numpy<int32_t>(p, {(size_t)ns_life_model_n_voxels(lm.m), 3});
        });

    nb::class_<LifeEngine>(m, "LifeEngine", "The LiFE products and SBBNNLS on a model (docs/life.md).")
        .def("__init__", [](LifeEngine *self, nb::object model, const std::string &backend, const std::string &mw,
                            const std::string &mty, int32_t threads, int32_t device) {
            LifeModel &lm = nb::cast<LifeModel &>(model);
            ns_life_options o;
            ns_life_options_init(&o);
            o.backend = backend_of(backend);
            check(ns_life_variant_from_name(mw.c_str(), &o.mw_variant));
            check(ns_life_variant_from_name(mty.c_str(), &o.mty_variant));
            o.threads = threads;
            o.device = device;
            ns_life_engine_t *e = nullptr;
            {
                nb::gil_scoped_release r;
                ns_status st = ns_life_model_validate(lm.m);
                if (st == NS_OK) st = ns_life_engine_create(lm.m, &o, &e);
                if (st != NS_OK) {
                    std::string msg = ns_last_error();
                    nb::gil_scoped_acquire g;
                    fail(st, msg);
                }
            }
            new (self) LifeEngine();
            self->e = e;
            self->model = model;
        }, "model"_a, "backend"_a = "auto", "mw"_a = "auto", "mty"_a = "auto", "threads"_a = 0, "device"_a = 0)
        .def_prop_ro("backend", [](const LifeEngine &e) { return std::string(ns_backend_name(ns_life_engine_backend(e.e))); })
        .def_prop_ro("mw_variant", [](const LifeEngine &e) { return std::string(ns_life_variant_name(ns_life_engine_variant(e.e, NS_LIFE_MW))); })
        .def_prop_ro("mty_variant", [](const LifeEngine &e) { return std::string(ns_life_variant_name(ns_life_engine_variant(e.e, NS_LIFE_MTY))); })
        .def("mw", [](LifeEngine &e, nb::handle w) {
            ns_life_model_t *mm = nb::cast<LifeModel &>(e.model).m;
            view vw = take<double>(w, "LifeEngine.mw", "w", ns_life_model_n_fibers(mm), place::host, false);
            const size_t t = (size_t)ns_life_model_n_theta(mm), v = (size_t)ns_life_model_n_voxels(mm);
            auto y = empty_numpy<double>(t * v);
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(e.mu);
                st = ns_life_mw(e.e, (const double *)vw.ptr, y.data());
            }
            check(st);
            return y;
        }, "w"_a, "y = M w (n_theta * n_voxels entries, voxel after voxel).")
        .def("mty", [](LifeEngine &e, nb::handle y) {
            ns_life_model_t *mm = nb::cast<LifeModel &>(e.model).m;
            const int64_t ny = (int64_t)ns_life_model_n_theta(mm) * ns_life_model_n_voxels(mm);
            view vy = take<double>(y, "LifeEngine.mty", "y", ny, place::host, false, true);
            auto w = empty_numpy<double>((size_t)ns_life_model_n_fibers(mm));
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(e.mu);
                st = ns_life_mty(e.e, (const double *)vy.ptr, w.data());
            }
            check(st);
            return w;
        }, "y"_a, "w = M^T y (n_fibers entries).")
        .def("fit", [](LifeEngine &e, int32_t max_iterations, double tol_gradient, double tol_objective, double lambda_,
                       bool preconditioner, nb::handle w0, nb::handle progress, double rtol_gradient,
                       double rtol_objective, double ridge, double group, nb::handle groups) {
            ns_life_model_t *mm = nb::cast<LifeModel &>(e.model).m;
            const size_t nf = (size_t)ns_life_model_n_fibers(mm);
            ns_life_fit_options o;
            ns_life_fit_options_init(&o);
            o.max_iterations = max_iterations;
            o.tol_gradient = tol_gradient;
            o.tol_objective = tol_objective;
            o.lambda = lambda_;
            o.ridge = ridge;
            o.group = group;
            o.preconditioner = preconditioner ? 1 : 0;
            view vg;
            if (!groups.is_none()) {
                vg = take<int32_t>(groups, "LifeEngine.fit", "groups", (int64_t)nf, place::host, false);
                o.groups = (const int32_t *)vg.ptr;
            }
            if (rtol_gradient >= 0) o.rtol_gradient = rtol_gradient;   /* < 0: the library's default */
            if (rtol_objective >= 0) o.rtol_objective = rtol_objective;
            view v0;
            if (!w0.is_none()) {
                v0 = take<double>(w0, "LifeEngine.fit", "w0", (int64_t)nf, place::host, false);
                o.w0 = (const double *)v0.ptr;
            }
            if (max_iterations < 1)
                fail(NS_ERR_INVALID_ARGUMENT, "LifeEngine.fit: max_iterations = " + std::to_string(max_iterations) + " < 1");
            // progress(iteration, objective, nonzero) -> true stops; called with the GIL
            // held; an exception in it stops the fit and is raised afterwards.
            struct prog_ctx {
                PyObject *fn;
                bool failed = false;
                nb::object error;
            } pc{progress.ptr()};
            if (!progress.is_none()) {
                if (!PyCallable_Check(progress.ptr()))
                    fail(NS_ERR_INVALID_ARGUMENT, "LifeEngine.fit: progress must be callable");
                o.progress = [](int32_t it, double obj, int64_t nz, void *ctx) -> int {
                    auto *p = (prog_ctx *)ctx;
                    nb::gil_scoped_acquire g;
                    try {
                        nb::object r = nb::borrow(p->fn)(it, obj, nz);
                        return (!r.is_none() && nb::cast<bool>(r)) ? 1 : 0;
                    } catch (nb::python_error &err) {
                        p->failed = true;
                        p->error = nb::borrow(err.value());
                        return 1;
                    }
                };
                o.progress_context = &pc;
            }
            auto w = empty_numpy<double>(nf);
            std::vector<double> hist((size_t)max_iterations);
            ns_life_fit_result res;
            ns_status st;
            {
                nb::gil_scoped_release r;
                std::lock_guard<std::mutex> lock(e.mu);
                st = ns_life_fit(e.e, &o, w.data(), hist.data(), &res);
            }
            if (pc.failed) {
                PyErr_SetObject((PyObject *)Py_TYPE(pc.error.ptr()), pc.error.ptr());
                throw nb::python_error();
            }
            check(st);
            nb::dict d;
            d["updates"] = res.updates;
            d["stop"] = ns_life_stop_name(res.stop);
            d["objective"] = res.objective;
            d["projected_gradient"] = res.projected_gradient;
            d["nonzero"] = res.nonzero;
            d["seconds"] = res.seconds;
            d["setup_seconds"] = res.setup_seconds;
            d["mw_calls"] = res.mw_calls;
            d["mty_calls"] = res.mty_calls;
            d["ridge_mu"] = res.ridge_mu;
            d["group_lambda"] = res.group_lambda;
            d["n_groups"] = res.n_groups;
            d["groups_nonzero"] = res.groups_nonzero;
            d["history"] = to_numpy<double>(hist.data(), {(size_t)std::max(res.updates, 0)});
            return nb::make_tuple(w, d);
        }, "max_iterations"_a = 500, "tol_gradient"_a = 1e-5, "tol_objective"_a = 1e-5, "lambda_"_a = 0.0,
           "preconditioner"_a = false, "w0"_a = nb::none(), "progress"_a = nb::none(), "rtol_gradient"_a = -1.0,
           "rtol_objective"_a = -1.0, "ridge"_a = 0.0, "group"_a = 0.0, "groups"_a = nb::none(),
           "SBBNNLS (ENCODE's bbnnls); rtol_* < 0 take the library's defaults; ridge: life fit --ridge (docs/life.md); "
           "group > 0 with groups (int32, one per fiber, -1: alone): life fit --group, the group-sparse fit (FISTA); "
           "returns (w, result dict with the objective history). "
           "progress(iteration, objective, nonzero) is called after every update; a true return stops.");
}
