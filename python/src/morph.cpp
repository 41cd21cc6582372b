// neurosolve._core: trees, morphologies and cells (docs/python.md).
#include "bindings.h"

namespace nsb {

namespace {

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

} // namespace

// Tree
static void bind_tree(nb::module_ &m) {
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
}

// Morphology
static void bind_morphology(nb::module_ &m) {
    nb::class_<Morphology>(m, "Morphology", "A checked SWC morphology (docs/swc.md).")
        .def_static("read", [](const std::filesystem::path &path, const std::string &roots, const std::string &radii,
                               double default_radius, double scale) {
            ns_swc_options o = swc_options(roots, radii, default_radius, scale);
            ns_morph_t *mo = nullptr;
            check_released([&] { return ns_swc_read(path.c_str(), &o, &mo); });
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
}

// Cell
static void bind_cell(nb::module_ &m) {
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
        .def_prop_ro("segments", [](const Cell &c) { return to_numpy<double>(ns_cell_segments(c.c), {(size_t)c.size(), 6}); },
                     "(compartments, 6): NEURON's segment start and end points x0 y0 z0 x1 y1 z1 [um], where "
                     "define_shape puts them (docs/discretisation.md)")
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
            check(ns_cell_locate(c.c, section, x, &k));
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
}

// Tree, Morphology, Cell
void bind_morph(nb::module_ &m) {
    bind_tree(m);
    bind_morphology(m);
    bind_cell(m);
}

} // namespace nsb
