// neurosolve._core: extracellular potentials (docs/extracellular.md).
#include "bindings.h"

namespace nsb {

namespace {

using mat = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using vec = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

ns_lfp_method method_of(const std::string &name) {
    ns_lfp_method m;
    check(ns_lfp_method_from_name(name.c_str(), &m));
    return m;
}

// Contacts from an (E, 3), (E, 7) or (E, 8) array: x y z [nx ny nz r [n]].
std::vector<ns_lfp_contact> contacts_of(const mat &a, int32_t default_points, const char *fn) {
    const size_t E = a.shape(0), w = a.shape(1);
    if (w != 3 && w != 7 && w != 8)
        fail(NS_ERR_SIZE, std::string(fn) + ": contacts have " + std::to_string(w) +
                              " columns; expected 3 (x y z), 7 (+ nx ny nz r) or 8 (+ n)");
    std::vector<ns_lfp_contact> c(E);
    for (size_t e = 0; e < E; ++e) {
        const double *r = a.data() + e * w;
        c[e] = ns_lfp_contact{r[0], r[1], r[2], 0.0, 0.0, 0.0, 0.0, 1};
        if (w >= 7) {
            c[e].nx = r[3], c[e].ny = r[4], c[e].nz = r[5], c[e].r = r[6];
            c[e].n = w == 8 ? (int32_t)r[7] : default_points;
            if (w == 8 && (double)c[e].n != r[7])
                fail(NS_ERR_INVALID_ARGUMENT, std::string(fn) + ": contact " + std::to_string(e) +
                                                  ": points per disc must be a whole number");
        }
    }
    return c;
}

struct Lfp {
    ns_lfp_t *l = nullptr;
    nb::object sim; // the Simulation stays alive (the probe is attached to it)
    Lfp() = default;
    Lfp(const Lfp &) = delete;
    ~Lfp() { ns_lfp_destroy(l); }
};

} // namespace

// read_probe, probe_line, lfp_matrix, lfp_csd, four_sphere
static void bind_lfp_functions(nb::module_ &m) {
    m.def("read_probe", [](const std::filesystem::path &path, int32_t default_points) {
        ns_lfp_probe p;
        check(ns_lfp_probe_read(path.c_str(), default_points, &p));
        std::vector<double> out((size_t)p.n * 8);
        for (int64_t e = 0; e < p.n; ++e) {
            const ns_lfp_contact &c = p.contacts[e];
            const double row[8] = {c.x, c.y, c.z, c.nx, c.ny, c.nz, c.r, (double)c.n};
            std::memcpy(&out[(size_t)e * 8], row, sizeof row);
        }
        ns_lfp_probe_free(&p);
        return to_numpy(out.data(), {out.size() / 8, 8});
    }, "path"_a, "default_points"_a = 9,
       "A probe file (docs/extracellular.md) as an (E, 8) array: x y z nx ny nz r n (r = 0: a point).");
    m.def("probe_line", [](std::vector<double> start, std::vector<double> end, int64_t count) {
        if (start.size() != 3 || end.size() != 3) fail(NS_ERR_SIZE, "probe_line: start and end are 3 values each");
        ns_lfp_probe p;
        check(ns_lfp_probe_line(start.data(), end.data(), count, &p));
        std::vector<double> out((size_t)p.n * 3);
        for (int64_t k = 0; k < p.n; ++k)
            out[3 * k] = p.contacts[k].x, out[3 * k + 1] = p.contacts[k].y, out[3 * k + 2] = p.contacts[k].z;
        ns_lfp_probe_free(&p);
        return to_numpy(out.data(), {out.size() / 3, 3});
    }, "start"_a, "end"_a, "count"_a,
       "A line (shank) electrode: count point contacts (count, 3) evenly from start to end (um), both included.");
    m.def("lfp_matrix", [](const mat &start, const mat &end, const vec &diam, const mat &contacts,
                           const std::string &method, double sigma, int64_t root) {
        const size_t n = start.shape(0);
        if (start.shape(1) != 3 || end.shape(0) != n || end.shape(1) != 3 || diam.shape(0) != n)
            fail(NS_ERR_SIZE, "lfp_matrix: start and end must be (n, 3) and diam (n,)");
        std::vector<ns_lfp_contact> c = contacts_of(contacts, 9, "lfp_matrix");
        const ns_lfp_segments seg = {(int64_t)n, start.data(), end.data(), diam.data(), root};
        std::vector<double> out(c.size() * n);
        check(ns_lfp_matrix(&seg, c.data(), (int64_t)c.size(), method_of(method), sigma, out.data()));
        return to_numpy(out.data(), {c.size(), n});
    }, "start"_a, "end"_a, "diam"_a, "contacts"_a, "method"_a = "linesource", "sigma"_a = 0.3, "root"_a = 0,
       "LFPy's coefficients (E, n) [mV/nA] of segments start -> end (um) with diameters diam at the contacts.");
    m.def("lfp_csd", [](const mat &phi, std::vector<int64_t> index, double spacing, double sigma) {
        std::vector<double> out(phi.shape(0) * index.size());
        check(ns_lfp_csd(phi.data(), (int64_t)phi.shape(0), (int64_t)phi.shape(1), index.data(), (int64_t)index.size(),
                         spacing, sigma, out.data()));
        return to_numpy(out.data(), {(size_t)phi.shape(0), index.size()});
    }, "phi"_a, "index"_a, "spacing"_a, "sigma"_a = 0.3,
       "CSD [uA/mm^3] at the contacts `index` (in order, spacing um apart) of potentials phi (samples, E) [mV].");

    m.def("four_sphere", [](const mat &electrodes, std::vector<double> dipole, std::vector<double> radii,
                            std::vector<double> sigmas, double iter_factor) {
        if (electrodes.shape(1) != 3 || dipole.size() != 3 || radii.size() != 4 || sigmas.size() != 4)
            fail(NS_ERR_SIZE, "four_sphere: electrodes (n, 3), dipole 3 values, radii and sigmas 4 each");
        std::vector<double> out(electrodes.shape(0) * 3);
        check(ns_lfp_four_sphere(radii.data(), sigmas.data(), dipole.data(), electrodes.data(),
                                 (int64_t)electrodes.shape(0), iter_factor, out.data()));
        return to_numpy(out.data(), {(size_t)electrodes.shape(0), 3});
    }, "electrodes"_a, "dipole"_a, "radii"_a = std::vector<double>{79000., 80000., 85000., 90000.},
       "sigmas"_a = std::vector<double>{0.3, 1.5, 0.015, 0.3}, "iter_factor"_a = 0.0,
       "lfpykit's four-sphere head model: the potentials (n, 3) [mV] at the electrodes of unit dipoles [nA um] "
       "along x, y, z at `dipole` (um, the head's centre at the origin).");
}

// Lfp
static void bind_lfp_class(nb::module_ &m) {
    nb::class_<Lfp>(m, "Lfp", "Extracellular potentials and dipole moments sampled during a Simulation's runs.")
        .def("__init__", [](Lfp *self, nb::handle simulation, nb::handle cells, nb::handle contacts,
                            const std::string &method, double sigma, int64_t every, nb::handle placement,
                            bool per_cell_dipoles, int32_t threads, nb::handle population, int64_t batch,
                            const std::string &storage, bool device_results, double tolerance,
                            double rank_tolerance) {
            Simulation &s = nb::cast<Simulation &>(simulation);
            std::vector<const ns_cell_t *> sh;
            for (nb::handle h : cells) {
                if (!nb::isinstance<Cell>(h)) fail(NS_ERR_INVALID_ARGUMENT, "Lfp: cells must be neurosolve.Cell objects");
                sh.push_back(nb::cast<Cell &>(h).c);
            }
            std::vector<ns_lfp_contact> c;
            ns_lfp_probe file_probe = {0, nullptr};
            if (nb::isinstance<nb::str>(contacts) || nb::hasattr(contacts, "__fspath__")) {
                std::string path = nb::cast<std::string>(nb::str(contacts));
                check(ns_lfp_probe_read(path.c_str(), 9, &file_probe));
                c.assign(file_probe.contacts, file_probe.contacts + file_probe.n);
                ns_lfp_probe_free(&file_probe);
            } else {
                c = contacts_of(nb::cast<mat>(contacts), 9, "Lfp");
            }
            ns_lfp_options o;
            ns_lfp_options_init(&o);
            o.method = method_of(method);
            o.sigma = sigma;
            o.every = every;
            o.per_cell_dipoles = per_cell_dipoles;
            o.threads = threads;
            o.batch = batch;
            o.device_results = device_results;
            o.tolerance = tolerance;
            o.rank_tolerance = rank_tolerance;
            if (storage == "auto") o.storage = NS_LFP_STORAGE_AUTO;
            else if (storage == "dense") o.storage = NS_LFP_STORAGE_DENSE;
            else if (storage == "tiles") o.storage = NS_LFP_STORAGE_TILES;
            else if (storage == "f32") o.storage = NS_LFP_STORAGE_F32;
            else if (storage == "lowrank") o.storage = NS_LFP_STORAGE_LOWRANK;
            else fail(NS_ERR_INVALID_ARGUMENT,
                      "Lfp: storage '" + storage + "': expected auto, dense, tiles, f32 or lowrank");
            std::vector<int32_t> pop;
            if (!population.is_none()) {
                for (nb::handle h : population) pop.push_back(nb::cast<int32_t>(h));
                if ((int64_t)pop.size() != ns_sim_cells(s.s))
                    fail(NS_ERR_SIZE, "Lfp: population must give one population per cell");
                o.population = pop.data();
            }
            mat pl;
            if (!placement.is_none()) {
                pl = nb::cast<mat>(placement);
                if (pl.shape(1) != 6 || (int64_t)pl.shape(0) != ns_sim_cells(s.s))
                    fail(NS_ERR_SIZE, "Lfp: placement must be (cells, 6): x y z rx ry rz");
                o.placement = pl.data();
            }
            const ns_lfp_probe probe = {(int64_t)c.size(), c.data()};
            new (self) Lfp();
            std::lock_guard<std::mutex> lock(s.mu);
            check(ns_lfp_create(s.s, (int32_t)sh.size(), sh.data(), &probe, &o, &self->l));
            self->sim = nb::borrow(simulation);
        }, "simulation"_a, "cells"_a, "contacts"_a, "method"_a = "linesource", "sigma"_a = 0.3, "every"_a = 1,
           "placement"_a = nb::none(), "per_cell_dipoles"_a = false, "threads"_a = 0, "population"_a = nb::none(),
           "batch"_a = 0, "storage"_a = "auto", "device_results"_a = false, "tolerance"_a = 0.0,
           "rank_tolerance"_a = 0.0)
        .def_prop_ro("error_bound", [](const Lfp &l) { return ns_lfp_error_bound(l.l); },
                     "storages 'f32' and 'lowrank': the largest error bound of the samples so far, relative to "
                     "each sample's largest potential (0 for the exact storages)")
        .def_prop_ro("ranks", [](const Lfp &l) -> nb::object {
            const int32_t *r = ns_lfp_ranks(l.l);
            if (!r) return nb::none();
            return to_numpy<int32_t>(r, {(size_t)ns_sim_cells(nb::cast<Simulation &>(l.sim).s)});
        }, "storage 'lowrank': each cell's rank (None for the other storages)")
        .def("device_results", [](nb::handle self) {
            const Lfp &l = nb::cast<const Lfp &>(self);
            const double *p = nullptr;
            int64_t stride = 0;
            int32_t device = -1;
            check(ns_lfp_device_results(l.l, &p, &stride, &device));
            const size_t S = (size_t)ns_lfp_samples(l.l), E = (size_t)ns_lfp_electrodes(l.l);
            const int64_t strides[2] = {stride, 1};
            auto wrap = [&](const double *ptr, size_t cols) -> nb::object {
                const size_t shape[2] = {S, cols};
                return nb::cast(nb::ndarray<nb::array_api>((void *)ptr, 2, shape, self, strides, nb::dtype<double>(),
                                                           nb::device::cuda::value, device),
                                nb::rv_policy::reference);
            };
            nb::dict d;
            d["potentials"] = wrap(p, E);
            d["dipole"] = wrap(p ? p + E : p, 3);
            d["device"] = device;
            return d;
        }, "A CUDA simulation's samples on its GPU, no copy (device_results=True): dict of potentials "
           "(samples, electrodes) [mV] and dipole (samples, 3) [nA um] as DLPack arrays (cupy.from_dlpack, "
           "torch.from_dlpack), strided views of one buffer, valid until the next advance or init; and device")
        .def_prop_ro("population_potentials", [](const Lfp &l) -> nb::object {
            const double *p = ns_lfp_population_potentials(l.l);
            if (!p) return nb::none();
            return to_numpy(p, {(size_t)ns_lfp_samples(l.l), (size_t)ns_lfp_populations(l.l),
                                (size_t)ns_lfp_electrodes(l.l)});
        }, "(samples, populations, electrodes) [mV]: each population's cells' potentials, or None without population")
        .def_prop_ro("potentials", [](const Lfp &l) {
            return to_numpy(ns_lfp_potentials(l.l), {(size_t)ns_lfp_samples(l.l), (size_t)ns_lfp_electrodes(l.l)});
        }, "(samples, electrodes) [mV], a copy")
        .def_prop_ro("times", [](const Lfp &l) { return to_numpy(ns_lfp_times(l.l), {(size_t)ns_lfp_samples(l.l)}); },
                     "the samples' times [ms]")
        .def_prop_ro("dipole", [](const Lfp &l) {
            return to_numpy(ns_lfp_dipole(l.l), {(size_t)ns_lfp_samples(l.l), 3});
        }, "(samples, 3): the summed current dipole moment [nA um]")
        .def_prop_ro("cell_dipoles", [](const Lfp &l) -> nb::object {
            const double *p = ns_lfp_cell_dipoles(l.l);
            if (!p) return nb::none();
            Simulation &s = nb::cast<Simulation &>(l.sim);
            return to_numpy(p, {(size_t)ns_lfp_samples(l.l), (size_t)ns_sim_cells(s.s), 3});
        }, "(samples, cells, 3) [nA um], or None unless per_cell_dipoles")
        .def_prop_ro("coefficients", [](const Lfp &l) -> nb::object {
            Simulation &s = nb::cast<Simulation &>(l.sim);
            const double *M = ns_lfp_coefficients(l.l);
            if (!M) return nb::none();
            return to_numpy(M, {(size_t)ns_lfp_electrodes(l.l), (size_t)ns_sim_compartments(s.s)});
        }, "(electrodes, compartments) [mV/nA], or None where none are kept dense (tiles, lowrank)")
        .def_prop_ro("storage", [](const Lfp &l) { return std::string(ns_lfp_storage_name(ns_lfp_storage_used(l.l))); },
                     "where the coefficients live: 'dense', 'tiles' (a CUDA simulation's, computed per reduction), "
                     "'f32' or 'lowrank'")
        .def_prop_ro("membrane_currents", [](const Lfp &l) {
            Simulation &s = nb::cast<Simulation &>(l.sim);
            return to_numpy(ns_lfp_membrane_currents(l.l), {(size_t)ns_sim_compartments(s.s)});
        }, "the last sample's transmembrane currents [nA], Flat order");
}

void bind_lfp(nb::module_ &m) {
    bind_lfp_functions(m);
    bind_lfp_class(m);
}

} // namespace nsb
