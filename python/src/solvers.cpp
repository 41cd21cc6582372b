// neurosolve._core: the Hines and tridiagonal solvers (docs/python.md).
#include "bindings.h"

namespace nsb {

namespace {

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

void no_host_stream(const char *fn, bool host, nb::handle stream) {
    if (host && !stream.is_none())
        fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": stream given for host (numpy) arrays");
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
    no_host_stream(fn, v.host, stream);
    return v;
}

// One solve on checked arrays, the GIL released.
void hines_call(HinesSolver &s, const HinesArrays &v, void *stream) {
    check_locked(s.mu, [&] {
        return v.host ? ns_hines_solver_solve(s.s, (const double *)v.a.ptr, (const double *)v.b.ptr,
                                              (double *)v.d.ptr, (double *)v.rhs.ptr)
                      : ns_hines_solver_solve_device(s.s, (const double *)v.a.ptr, (const double *)v.b.ptr,
                                                     (double *)v.d.ptr, (double *)v.rhs.ptr, stream);
    });
}

// HinesSolver.bind and TridiagSolver.bind: the imported arrays (nb::ndarray holds the DLPack
// export, which keeps the memory alive), the stream object (a CuPy Stream destroys its stream
// when collected) and the solver.
template <typename Arrays> struct Bound {
    Arrays v;
    void *stream = nullptr;
    nb::object stream_obj, solver, arrays;
};

template <typename Arrays>
std::unique_ptr<Bound<Arrays>> make_bound(nb::object solver, Arrays v, nb::object stream, nb::tuple arrays) {
    auto bound = std::make_unique<Bound<Arrays>>();
    bound->v = std::move(v);
    bound->stream = stream_of(stream);
    bound->stream_obj = stream;
    bound->solver = solver;
    bound->arrays = arrays;
    return bound;
}

using HinesBound = Bound<HinesArrays>;

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
    no_host_stream(fn, v.host, stream);
    return v;
}

void tridiag_call(TridiagSolver &s, const TridiagArrays &v, void *stream) {
    const bool f32 = s.precision == NS_TRIDIAG_FLOAT32;
    check_locked(s.mu, [&] {
        if (!v.host) return ns_tridiag_solver_solve_device(s.s, v.dl.ptr, v.d.ptr, v.du.ptr, v.x.ptr, stream);
        if (f32)
            return ns_tridiag_solver_solve_f32(s.s, (const float *)v.dl.ptr, (const float *)v.d.ptr,
                                               (const float *)v.du.ptr, (float *)v.x.ptr);
        return ns_tridiag_solver_solve(s.s, (const double *)v.dl.ptr, (const double *)v.d.ptr,
                                       (const double *)v.du.ptr, (double *)v.x.ptr);
    });
}

using TridiagBound = Bound<TridiagArrays>;

} // namespace

// Batch, HinesSolver (and its bound form), the C-loop benchmark helper
void bind_hines(nb::module_ &m) {
    nb::class_<Batch>(m, "Batch", "A batch of cells drawn from shapes (Trees or Cells), Flat layout.")
        .def("__init__", [](Batch *self, nb::handle shapes, int64_t n_cells, nb::handle cell_shape) {
            std::vector<const ns_tree_t *> sh = shapes_of(shapes);
            std::vector<int32_t> cs = cell_shape_of(cell_shape, n_cells, "Batch");
            ns_batch_t *b = nullptr;
            check_released([&] {
                return ns_batch_create((int32_t)sh.size(), sh.data(), n_cells, cs.empty() ? nullptr : cs.data(), &b);
            });
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
            check_released([&] { return ns_batch_random_values(b.b, seed, a.data(), bb.data(), d.data(), rhs.data()); });
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
            check_released([&] { return ns_hines_solver_create(b.b, &o, &s); });
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
            return make_bound(self, hines_arrays(nb::cast<HinesSolver &>(self), "HinesSolver.bind", a, b, d, rhs, stream),
                              stream, nb::make_tuple(a, b, d, rhs));
        }, "a"_a, "b"_a, "d"_a, "rhs"_a, "stream"_a = nb::none(),
           "Check and import the four arrays (and the stream) once; the returned object's solve() then solves "
           "them in place with no per-call array checks or DLPack imports (the hot loop of a simulation).")
        .def("wait", [](HinesSolver &s) { check_locked(s.mu, [&] { return ns_hines_solver_wait(s.s); }); }, "Block until the last device solve finished; raises SingularError for a zero pivot.")
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
            check_locked(s.mu, [&] { return ns_hines_solver_wait(s.s); });
        }, "HinesSolver.wait() of the solver.")
        .def_prop_ro("solver", [](const HinesBound &b) { return b.solver; })
        .def_prop_ro("arrays", [](const HinesBound &b) { return b.arrays; }, "(a, b, d, rhs) as given to bind.")
        .def_prop_ro("stream", [](const HinesBound &b) { return b.stream_obj; })
        .def_prop_ro("device", [](const HinesBound &b) { return b.v.host ? "cpu" : "cuda"; });
}

// TridiagSolver (and its bound form)
void bind_tridiag(nb::module_ &m) {
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
            return make_bound(self, tridiag_arrays(nb::cast<TridiagSolver &>(self), "TridiagSolver.bind", dl, d, du, x,
                                                   stream),
                              stream, nb::make_tuple(dl, d, du, x));
        }, "dl"_a, "d"_a, "du"_a, "x"_a, "stream"_a = nb::none(),
           "Check and import the four arrays (and the stream) once; the returned object's solve() then solves "
           "them in place with no per-call checks or imports.")
        .def("wait", [](TridiagSolver &s) { check_locked(s.mu, [&] { return ns_tridiag_solver_wait(s.s); }); }, "Block until the device solves queued since the last wait finished; raises SingularError for a "
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
            check_locked(s.mu, [&] { return ns_tridiag_solver_wait(s.s); });
        }, "TridiagSolver.wait() of the solver.")
        .def_prop_ro("solver", [](const TridiagBound &b) { return b.solver; })
        .def_prop_ro("arrays", [](const TridiagBound &b) { return b.arrays; }, "(dl, d, du, x) as given to bind.")
        .def_prop_ro("stream", [](const TridiagBound &b) { return b.stream_obj; })
        .def_prop_ro("device", [](const TridiagBound &b) { return b.v.host ? "cpu" : "cuda"; });
}

} // namespace nsb
