// neurosolve._core: network files (docs/python.md).
#include "bindings.h"

namespace nsb {

// Network
void bind_network(nb::module_ &m) {
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
}

} // namespace nsb
