// neurosolve._core: mechanism libraries and models (docs/python.md).
#include "bindings.h"

namespace nsb {

// build_mechanisms, MechanismLibrary, Model
void bind_mechanisms(nb::module_ &m) {
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
        .def("set_function_table", [](Model &mo, const std::string &name, const std::vector<double> &values,
                                      const std::vector<std::vector<double>> &x,
                                      const std::vector<std::tuple<int, double, double>> &ranges) {
            /* as the model text's table.NAME statement (docs/simulation.md), which checks it: one path */
            if (!x.empty() && !ranges.empty())
                fail(NS_ERR_INVALID_ARGUMENT, "set_function_table: give x or ranges, not both");
            std::string text = "table." + name + " =";
            char num[40];
            for (const auto &xs : x) {
                text += " x";
                for (double v : xs) snprintf(num, sizeof num, " %.17g", v), text += num;
                text += " ;";
            }
            for (const auto &r : ranges) {
                snprintf(num, sizeof num, " range %d", std::get<0>(r));
                text += num;
                snprintf(num, sizeof num, " %.17g", std::get<1>(r));
                text += num;
                snprintf(num, sizeof num, " %.17g ;", std::get<2>(r));
                text += num;
            }
            text += " y";
            for (double v : values) snprintf(num, sizeof num, " %.17g", v), text += num;
            check(ns_sim_model_parse(mo.m, text.data(), text.size(), "set_function_table"));
        }, "name"_a, "values"_a, "x"_a = std::vector<std::vector<double>>(),
           "ranges"_a = std::vector<std::tuple<int, double, double>>(),
           "A FUNCTION_TABLE's values (NAME_MECH; NEURON's hoc table_NAME_MECH): values in row order (a NumPy "
           "array's ravel()), per argument its increasing abscissae x or its (points, lo, hi) range; one value "
           "alone: a constant (docs/mechanisms.md, \"FUNCTION_TABLE\").")
        .def("parse", [](Model &mo, const std::string &text, const std::string &name) {
            check(ns_sim_model_parse(mo.m, text.data(), text.size(), name.c_str()));
        }, "text"_a, "name"_a = "model")
        .def("read", [](Model &mo, const std::filesystem::path &path) { check(ns_sim_model_read(mo.m, path.c_str())); },
             "path"_a);
}

} // namespace nsb
