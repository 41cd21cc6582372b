// neurosolve._core: LiFE and its readers (docs/python.md).
#include "bindings.h"

namespace nsb {

// the readers of LiFE's inputs (NIfTI, gradients, tractograms)
void bind_readers(nb::module_ &m) {
    m.def("_read_nifti", [](const std::filesystem::path &path) {
        ns_nifti_t *img = nullptr;
        check_released([&] { return ns_nifti_read(path.c_str(), &img); });
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
}

// LifeModel.build's and _build_arrays' options.
static ns_life_build_options build_options(int32_t dictionary_l, double axial_diffusivity, double radial_diffusivity,
                                           double b0_threshold, const std::string &bad, const std::string &nodes) {
    ns_life_build_options o;
    ns_life_build_options_init(&o);
    if (dictionary_l > 0) o.dictionary_l = dictionary_l; /* 0: the library's default (180) */
    o.nodes = pick<ns_life_node_combination>("nodes", nodes, {{"sum", NS_LIFE_NODES_SUM}, {"mean", NS_LIFE_NODES_MEAN}});
    o.axial_diffusivity = axial_diffusivity;
    o.radial_diffusivity = radial_diffusivity;
    o.b0_threshold = b0_threshold;
    o.bad = pick<ns_life_bad_policy>("bad", bad, {{"error", NS_LIFE_BAD_ERROR}, {"skip", NS_LIFE_BAD_SKIP}});
    return o;
}

static std::unique_ptr<LifeModel> life_model_build_arrays(nb::handle dwi, nb::handle affine, nb::handle bvals,
                                                          nb::handle bvecs, nb::handle points, nb::handle offsets,
                                                          nb::handle to_world, int32_t dictionary_l,
                                                          double axial_diffusivity, double radial_diffusivity,
                                                          double b0_threshold, const std::string &bad,
                                                          const std::string &nodes) {
    const char *fn = "LifeModel.build_arrays";
    ns_life_build_options o =
        build_options(dictionary_l, axial_diffusivity, radial_diffusivity, b0_threshold, bad, nodes);
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
}

static std::unique_ptr<LifeModel> life_model_synth(int32_t n_theta, int32_t dictionary_l, int32_t n_fibers,
                                                   std::vector<int32_t> grid, double mean_length,
                                                   double active_fraction, double noise, uint64_t seed) {
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
    check_released([&] {
        ns_status st = ns_life_synth_options_check(&o);
        return st == NS_OK ? ns_life_synth(&o, &lm->m) : st;
    });
    return lm;
}

static std::unique_ptr<LifeModel> life_model_from_arrays(nb::handle atom, nb::handle voxel, nb::handle fiber,
                                                         nb::handle value, nb::handle dictionary, nb::handle signal,
                                                         int32_t n_fibers) {
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
}

static int64_t life_model_write_pruned(const LifeModel &lm, const std::filesystem::path &out, nb::handle w,
                                       double threshold, const std::filesystem::path &tracks) {
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
}

static nb::tuple life_engine_fit(LifeEngine &e, int32_t max_iterations, double tol_gradient, double tol_objective,
                                 double lambda_, bool preconditioner, nb::handle w0, nb::handle progress,
                                 double rtol_gradient, double rtol_objective, double ridge, double group,
                                 nb::handle groups) {
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
}

static nb::tuple life_engine_fit_path(LifeEngine &e, const std::string &penalty, int32_t n_values, nb::handle values,
                                      int32_t folds, const std::string &rule, uint64_t seed, bool cold,
                                      double lambda_, double ridge, nb::handle groups, int32_t max_iterations,
                                      double rtol_gradient, double rtol_objective) {
    ns_life_model_t *mm = nb::cast<LifeModel &>(e.model).m;
    const size_t nf = (size_t)ns_life_model_n_fibers(mm);
    ns_life_fit_options o;
    ns_life_fit_options_init(&o);
    o.max_iterations = max_iterations;
    o.lambda = lambda_;
    o.ridge = ridge;
    if (rtol_gradient >= 0) o.rtol_gradient = rtol_gradient; /* < 0: the library's default */
    if (rtol_objective >= 0) o.rtol_objective = rtol_objective;
    view vg;
    if (!groups.is_none()) {
        vg = take<int32_t>(groups, "LifeEngine.fit_path", "groups", (int64_t)nf, place::host, false);
        o.groups = (const int32_t *)vg.ptr;
    }
    ns_life_path_options po;
    ns_life_path_options_init(&po);
    check(ns_life_penalty_from_name(penalty.c_str(), &po.penalty));
    if (ns_life_cv_rule_from_name(rule.c_str(), &po.rule) != NS_OK)
        fail(NS_ERR_INVALID_ARGUMENT, "LifeEngine.fit_path: rule '" + rule + "' is not 1se-gain, 1se or min");
    po.n_values = n_values;
    po.folds = folds;
    po.seed = seed;
    po.cold = cold ? 1 : 0;
    view vv;
    if (!values.is_none()) {
        vv = take<double>(values, "LifeEngine.fit_path", "values", -1, place::host, false);
        po.values = (const double *)vv.ptr;
        po.n_values = (int32_t)vv.arr.size();
    }
    if (po.n_values < 1) fail(NS_ERR_INVALID_ARGUMENT, "LifeEngine.fit_path: n_values must be >= 1");
    std::vector<ns_life_path_point> pt((size_t)po.n_values);
    auto w = empty_numpy<double>(nf);
    ns_life_path_result r;
    check_locked(e.mu, [&] { return ns_life_path(e.e, &o, &po, pt.data(), w.data(), nullptr, &r); });
    const size_t n = (size_t)r.n_values;
    std::vector<double> val(n), cv(n), se(n), rm(n);
    std::vector<int64_t> nz(n), gz(n);
    for (size_t k = 0; k < n; ++k)
        val[k] = pt[k].value, cv[k] = pt[k].cv_rmse, se[k] = pt[k].cv_se, rm[k] = pt[k].rmse,
        nz[k] = pt[k].nonzero, gz[k] = pt[k].groups_nonzero;
    nb::dict d;
    d["penalty"] = ns_life_penalty_name(po.penalty);
    d["values"] = to_numpy<double>(val.data(), {n});
    d["cv_rmse"] = to_numpy<double>(cv.data(), {n});
    d["cv_se"] = to_numpy<double>(se.data(), {n});
    d["rmse"] = to_numpy<double>(rm.data(), {n});
    d["nonzero"] = to_numpy<int64_t>(nz.data(), {n});
    d["groups_nonzero"] = to_numpy<int64_t>(gz.data(), {n});
    d["chosen"] = r.chosen;
    d["minimum"] = r.minimum;
    d["rule"] = ns_life_cv_rule_name(po.rule);
    d["cv_zero"] = r.cv_zero;
    d["chosen_value"] = pt[(size_t)r.chosen].value;
    d["folds"] = r.folds;
    d["updates"] = r.updates;
    d["seconds"] = r.seconds;
    d["error_bound"] = ns_life_engine_error_bound(e.e);
    return nb::make_tuple(w, d);
}

static void bind_life_model(nb::module_ &m) {
    nb::class_<LifeModel>(m, "LifeModel", "A LiFE model (docs/life.md, docs/life_data.md).")
        .def_static("load", [](const std::filesystem::path &dir) {
            auto lm = std::make_unique<LifeModel>();
            check_released([&] { return ns_life_built_load(dir.c_str(), &lm->built); });
            lm->m = ns_life_built_model(lm->built);
            return lm;
        }, "directory"_a)
        .def_static("build", [](const std::filesystem::path &dwi, const std::filesystem::path &bvals,
                                const std::filesystem::path &bvecs, const std::filesystem::path &tracks, int32_t dictionary_l, double axial_diffusivity,
                                double radial_diffusivity, double b0_threshold, const std::string &bad,
                                const std::string &nodes) {
            ns_life_build_options o =
                build_options(dictionary_l, axial_diffusivity, radial_diffusivity, b0_threshold, bad, nodes);
            auto lm = std::make_unique<LifeModel>();
            check_released([&] {
                return ns_life_build(dwi.c_str(), bvals.c_str(), bvecs.c_str(), tracks.c_str(), &o, &lm->built);
            });
            lm->m = ns_life_built_model(lm->built);
            return lm;
        }, "dwi"_a, "bvals"_a, "bvecs"_a, "tracks"_a, "dictionary_l"_a = 0, "axial_diffusivity"_a = 1.0,
           "radial_diffusivity"_a = 0.0, "b0_threshold"_a = 50.0, "bad"_a = "error", "nodes"_a = "sum")
        .def_static("_build_arrays", &life_model_build_arrays,
           "dwi"_a, "affine"_a, "bvals"_a, "bvecs"_a, "points"_a, "offsets"_a, "to_world"_a = nb::none(),
           "dictionary_l"_a = 0, "axial_diffusivity"_a = 1.0, "radial_diffusivity"_a = 0.0, "b0_threshold"_a = 50.0,
           "bad"_a = "error", "nodes"_a = "sum",
           "ns_life_build_arrays on packed arrays; use LifeModel.build_arrays (python/neurosolve/__init__.py).")
        .def_static("synth", &life_model_synth,
           "n_theta"_a = 96, "dictionary_l"_a = 180, "n_fibers"_a = 50000, "grid"_a = std::vector<int32_t>{72, 88, 72},
           "mean_length"_a = 90.0, "active_fraction"_a = 0.5, "noise"_a = 0.0, "seed"_a = 1,
           "A synthetic model with known true weights (ns_life_synth, docs/life.md).")
        .def_prop_ro("true_weights", [](const LifeModel &lm) {
            const double *p = ns_life_model_true_weights(lm.m);
            if (!p) return nb::object(nb::none());
            return to_numpy<double>(p, {(size_t)ns_life_model_n_fibers(lm.m)});
        }, "The weights that generated a synthetic signal (None for a real model).")
        .def_static("from_arrays", &life_model_from_arrays,
           "atom"_a, "voxel"_a, "fiber"_a, "value"_a, "dictionary"_a, "signal"_a, "n_fibers"_a = 0,
           "A model from arrays in memory (copied into the model; ns_life_model_create, then validated): "
           "Phi's atom, voxel, fiber (int32), value (float64); dictionary (n_atoms, n_theta) and signal "
           "(n_voxels, n_theta), float64 C order. n_fibers 0: the largest fiber index + 1.")
        .def_prop_ro("n_streamlines", [](const LifeModel &lm) {
            return lm.built ? ns_life_built_n_streamlines(lm.built) : (int64_t)-1;
        }, "Streamlines in the source tractogram (-1 when unknown).")
        .def_prop_ro("tracks_path", [](const LifeModel &lm) {
            return std::string(lm.built ? ns_life_built_tracks_path(lm.built) : "");
        })
        .def("write_pruned", &life_model_write_pruned,
           "out"_a, "w"_a, "threshold"_a = 0.0, "tracks"_a = "",
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
}

static void bind_life_engine(nb::module_ &m) {
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
            check_released([&] {
                ns_status st = ns_life_model_validate(lm.m);
                return st == NS_OK ? ns_life_engine_create(lm.m, &o, &e) : st;
            });
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
            check_locked(e.mu, [&] { return ns_life_mw(e.e, (const double *)vw.ptr, y.data()); });
            return y;
        }, "w"_a, "y = M w (n_theta * n_voxels entries, voxel after voxel).")
        .def("mty", [](LifeEngine &e, nb::handle y) {
            ns_life_model_t *mm = nb::cast<LifeModel &>(e.model).m;
            const int64_t ny = (int64_t)ns_life_model_n_theta(mm) * ns_life_model_n_voxels(mm);
            view vy = take<double>(y, "LifeEngine.mty", "y", ny, place::host, false, true);
            auto w = empty_numpy<double>((size_t)ns_life_model_n_fibers(mm));
            check_locked(e.mu, [&] { return ns_life_mty(e.e, (const double *)vy.ptr, w.data()); });
            return w;
        }, "y"_a, "w = M^T y (n_fibers entries).")
        .def("fit", &life_engine_fit,
           "max_iterations"_a = 500, "tol_gradient"_a = 1e-5, "tol_objective"_a = 1e-5, "lambda_"_a = 0.0,
           "preconditioner"_a = false, "w0"_a = nb::none(), "progress"_a = nb::none(), "rtol_gradient"_a = -1.0,
           "rtol_objective"_a = -1.0, "ridge"_a = 0.0, "group"_a = 0.0, "groups"_a = nb::none(),
           "SBBNNLS (ENCODE's bbnnls); rtol_* < 0 take the library's defaults; ridge: life fit --ridge (docs/life.md); "
           "group > 0 with groups (int32, one per fiber, -1: alone): life fit --group, the group-sparse fit (FISTA); "
           "returns (w, result dict with the objective history). "
           "progress(iteration, objective, nonzero) is called after every update; a true return stops.")
        .def("fit_path", &life_engine_fit_path,
           "penalty"_a = "group", "n_values"_a = 8, "values"_a = nb::none(), "folds"_a = 5, "rule"_a = "1se-gain", "seed"_a = 1,
           "cold"_a = false, "lambda_"_a = 0.0, "ridge"_a = 0.0, "groups"_a = nb::none(), "max_iterations"_a = 500,
           "rtol_gradient"_a = -1.0, "rtol_objective"_a = -1.0,
           "The regularisation path with cross-validation over voxels (ns_life_path; life fit --lambda auto; "
           "docs/life.md, \"Choosing lambda\"): penalty group (needs groups), ridge or lambda; values (any order) or "
           "n_values from the penalty's maximum; the other weights fixed (lambda_, ridge). Returns (w at the chosen "
           "value, dict with the curve: values, cv_rmse, cv_se, rmse, nonzero, groups_nonzero, chosen, minimum, rule, "
           "cv_zero: the zero prediction's held-out RMSE).");
}

// LifeModel, LifeEngine
void bind_life(nb::module_ &m) {
    bind_life_model(m);
    bind_life_engine(m);
}

} // namespace nsb
