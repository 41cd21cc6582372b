// neurosolve._core: simulation parameters and simulations (docs/python.md).
#include "bindings.h"

namespace nsb {

namespace {

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

} // namespace

// SimParams
void bind_params(nb::module_ &m) {
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
}

static void sim_init(Simulation *self, nb::handle shapes, int64_t n_cells, nb::handle cell_shape,
                     const SimParams &params, const std::string &backend, const std::string &method, int32_t threads,
                     int32_t gpu_lanes, int32_t record_every, int32_t check_every, nb::handle model,
                     const std::string &gpu_mechanisms) {
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
}

// Simulation: stimuli, synapses, sources, connections and recordings
static void bind_simulation_network(nb::class_<Simulation> &c) {
    c.def("add_iclamp", [](Simulation &s, int64_t cell, int32_t compartment, double delay, double duration, double amplitude) {
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
        .def("set_pointer", [](Simulation &s, int64_t synapse, const std::string &pointer, int64_t cell,
                               int32_t compartment, const std::string &var) {
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_set_pointer(s.s, synapse, pointer.c_str(), cell, compartment, var.c_str()));
        }, "synapse"_a, "pointer"_a, "cell"_a, "compartment"_a, "var"_a,
           "NEURON's setpointer for a synapse's POINTER: var ('v', 'ena', 'm_hh') at (cell, compartment).")
        .def("set_model_pointer", [](Simulation &s, int64_t cell, int32_t compartment, const std::string &pointer,
                                     int64_t target_cell, int32_t target_compartment, const std::string &var) {
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_sim_set_model_pointer(s.s, cell, compartment, pointer.c_str(), target_cell, target_compartment,
                                           var.c_str()));
        }, "cell"_a, "compartment"_a, "pointer"_a, "target_cell"_a, "target_compartment"_a, "var"_a,
           "NEURON's setpointer for a density mechanism's POINTER ('vgap_dgap') at (cell, compartment): var at "
           "(target_cell, target_compartment).")
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
        }, "cell"_a, "compartment"_a, "Record v there; returns the site (column of traces).");
}

// Simulation: running it, its clock and outputs
static void bind_simulation_run(nb::class_<Simulation> &c) {
    c.def("init", [](Simulation &s) {
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
        }, "cell"_a);
}

// Simulation: the state and its variables
static void bind_simulation_state(nb::class_<Simulation> &c) {
    c.def("state", [](Simulation &s, int64_t cell) {
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
}

// Simulation
void bind_simulation(nb::module_ &m) {
    nb::class_<Simulation> c(m, "Simulation", "A population of cells simulated with NEURON's hh/pas and fixed step.");
    c.def("__init__", &sim_init,
           "cells"_a, "n_cells"_a, "cell_shape"_a = nb::none(), "params"_a = SimParams(), "backend"_a = "auto",
           "method"_a = "auto", "threads"_a = 0, "gpu_lanes"_a = 0, "record_every"_a = 1, "check_every"_a = 1,
           "model"_a = nb::none(), "gpu_mechanisms"_a = "auto");
    bind_simulation_network(c);
    bind_simulation_run(c);
    bind_simulation_state(c);
}

} // namespace nsb
