// neurosolve._core: gradients (include/neurosolve/grad.h, docs/gradients.md).
// The pure-Python layer over it (values in, numpy gradients out, the torch and
// jax wrappers) is python/neurosolve/grad.py.
#include "bindings.h"

namespace nsb {

struct Gradient {
    std::mutex mu; // one call at a time (the GIL is released during runs)
    ns_grad_t *g = nullptr;
    nb::object sim; // the simulation whose configuration the handle reads: alive while it is
    Gradient() = default;
    Gradient(const Gradient &) = delete;
    ~Gradient() { ns_grad_destroy(g); }
};

void bind_grad(nb::module_ &m) {
    nb::class_<Gradient>(m, "Gradient",
                         "Gradients of a loss on a simulation's recorded voltages with respect to its parameters, "
                         "by the discrete adjoint (docs/gradients.md).")
        .def("__init__", [](Gradient *self, nb::handle sim, int64_t checkpoint_every, int32_t threads, size_t tape_bytes) {
            if (!nb::isinstance<Simulation>(sim))
                fail(NS_ERR_INVALID_ARGUMENT, "Gradient: sim must be a neurosolve.Simulation, got " +
                                                  std::string(nb::inst_name(sim).c_str()));
            ns_grad_options o;
            ns_grad_options_init(&o);
            o.checkpoint_every = checkpoint_every;
            o.threads = threads;
            o.tape_bytes = tape_bytes;
            ns_grad_t *g = nullptr;
            check(ns_grad_create(nb::cast<Simulation &>(sim).s, &o, &g));
            new (self) Gradient();
            self->g = g;
            self->sim = nb::borrow(sim);
        }, "sim"_a, "checkpoint_every"_a = 0, "threads"_a = 0, "tape_bytes"_a = 0,
           "A gradient handle over sim's configuration (a model simulation on any backend; the gradient runs on "
           "the CPU). checkpoint_every: steps between stored states (0: the whole run's tape where it fits "
           "tape_bytes per thread (0: 256 MiB), else about sqrt(steps)); threads: cells at "
           "once (0: OpenMP's default); the results are the same bits for any value of either.")
        .def("add_param", [](Gradient &g, int64_t cell, const std::string &where, const std::string &name) {
            int32_t k = -1;
            std::lock_guard<std::mutex> lock(g.mu);
            check(ns_grad_add_param(g.g, cell, where.c_str(), name.c_str(), &k));
            return k;
        }, "cell"_a, "where"_a, "name"_a,
           "Add a parameter of cell `cell` (cm, Ra, v_init or NAME_MECH) at `where` (a region, sec:K or cN); "
           "returns its index in the gradient.")
        .def("set_param", [](Gradient &g, int32_t k, double value) {
            std::lock_guard<std::mutex> lock(g.mu);
            check(ns_grad_set_param(g.g, k, value));
        }, "index"_a, "value"_a)
        .def("get_param", [](Gradient &g, int32_t k) {
            double v = 0.0;
            std::lock_guard<std::mutex> lock(g.mu);
            check(ns_grad_get_param(g.g, k, &v));
            return v;
        }, "index"_a)
        .def_prop_ro("n_params", [](Gradient &g) { return ns_grad_params(g.g); })
        .def_prop_ro("bytes", [](Gradient &g) { return (int64_t)ns_grad_bytes(g.g); },
                     "bytes of the last run's stored states and of the handle's work arrays")
        .def("shape", [](Gradient &g, int64_t steps) {
            if (steps < 1) fail(NS_ERR_INVALID_ARGUMENT, "Gradient.shape: steps = " + std::to_string(steps) + " must be >= 1");
            return nb::make_tuple(ns_grad_samples(g.g, steps), ns_grad_sites(g.g));
        }, "steps"_a, "(samples, sites) of a run of `steps` steps: the traces' and the loss arrays' shape")
        .def("run", [](Gradient &g, int64_t steps, nb::handle target, nb::handle weight, nb::handle dldy) {
            if (steps < 1) fail(NS_ERR_INVALID_ARGUMENT, "Gradient.run: steps = " + std::to_string(steps) + " must be >= 1");
            const int64_t samples = ns_grad_samples(g.g, steps);
            const int32_t sites = ns_grad_sites(g.g);
            const int64_t n = samples * sites;
            ns_grad_loss loss = {nullptr, nullptr, nullptr};
            view tv, wv, dv; // hold the arrays during the call
            if (!dldy.is_none()) {
                dv = take<double>(dldy, "Gradient.run", "dldy", n, place::host, false, true);
                loss.dldy = (const double *)dv.ptr;
            } else {
                if (target.is_none())
                    fail(NS_ERR_INVALID_ARGUMENT, "Gradient.run: give target (and weight) or dldy");
                tv = take<double>(target, "Gradient.run", "target", n, place::host, false, true);
                loss.target = (const double *)tv.ptr;
            }
            if (!weight.is_none()) {
                wv = take<double>(weight, "Gradient.run", "weight", n, place::host, false, true);
                loss.weight = (const double *)wv.ptr;
            }
            std::vector<double> grad((size_t)ns_grad_params(g.g) + 1), traces((size_t)(n ? n : 1));
            double value = 0.0;
            check_locked(g.mu, [&] { return ns_grad_run(g.g, steps, &loss, &value, grad.data(), traces.data()); });
            return nb::make_tuple(value, to_numpy(grad.data(), {(size_t)ns_grad_params(g.g)}),
                                  to_numpy(traces.data(), {(size_t)samples, (size_t)sites}));
        }, "steps"_a, "target"_a = nb::none(), "weight"_a = nb::none(), "dldy"_a = nb::none(),
           "Run `steps` steps from finitialize and the reverse sweep: (loss, gradient, traces). The loss is "
           "sum weight * (y - target)^2 over the recorded samples y (samples x sites, weight None: 1), or with "
           "dldy sum dldy * y (the vector-Jacobian product of any loss: its gradient is dldy^T dy/dtheta).");
}

} // namespace nsb
