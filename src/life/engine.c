/* The LiFE engine: backend choice, AUTO's variant of each product (the CPU: a measured rule;
 * CUDA: the paper's hybrid, three timed runs of each candidate, cached in the model), the
 * products on host arrays and benchmark timing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/device_impl.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/timer.h"
#include "life/life_impl.h"

static const ns_life_variant candidates[] = {NS_LIFE_COEFF_ATOM, NS_LIFE_COEFF_VOXEL,
                                             NS_LIFE_ATOM_ATOM, NS_LIFE_VOXEL_VOXEL};
#define N_CANDIDATES 4
#define SELECT_RUNS 3 /* CUDA only: the CPU follows ns_life_cpu_auto_variant */

/* A CUDA engine's calls run on its device and give the caller's current
 * device back (core/device_impl.h). */
static int enter(const ns_life_engine_t *e) { return ns_cuda_enter_device(e->device); }
static void leave(const ns_life_engine_t *e, int caller) { ns_cuda_leave_device(e->device, caller); }

int ns_life_engine_supports(const ns_life_engine_t *e, ns_life_variant v) {
    if (!e || v <= NS_LIFE_AUTO || (int)v >= NS_LIFE_VARIANT_ALL) return 0;
    return e->ops->supports(v); /* the CPU: the exact variants only (cpu_supports) */
}

static ns_status run_product(ns_life_engine_t *e, ns_life_product p, ns_life_variant v,
                             const double *in, double *out) {
    const int caller = enter(e);
    ns_status s = e->ops->product(e, p, v, in, out);
    leave(e, caller);
    return s;
}

ns_status ns_life_time_product(ns_life_engine_t *e, ns_life_product p, ns_life_variant v,
                               const double *in, double *out, int repeats, double *ms) {
    if (!e || !in || !out || !ms || repeats < 1 || (p != NS_LIFE_MW && p != NS_LIFE_MTY))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_time_product: bad argument");
    if (v == NS_LIFE_AUTO) v = e->variant[p];
    if (!ns_life_engine_supports(e, v))
        return ns_fail(NS_ERR_UNSUPPORTED, "LiFE variant '%s' is not available on the %s backend",
                       ns_life_variant_name(v), ns_backend_name(e->backend));
    if (e->ops->time) {
        const int caller = enter(e);
        ns_status s = e->ops->time(e, p, v, in, out, repeats, ms);
        leave(e, caller);
        return s;
    }
    for (int r = 0; r < repeats; ++r) {
        const double t0 = ns_time_ms();
        ns_status s = run_product(e, p, v, in, out);
        ms[r] = ns_time_ms() - t0;
        if (s != NS_OK) return s;
    }
    return NS_OK;
}

/* Random positive inputs: no zero weights, the worst case for y = M w. */
static void random_fill(double *v, int64_t n, uint64_t stream) {
    ns_rng r;
    ns_rng_seed(&r, 12345, stream);
    for (int64_t i = 0; i < n; ++i) v[i] = ns_rng_uniform(&r, 0.1, 1.0);
}

/* NS_LIFE_AUTO on the CPU: a rule from measurements, not a timing at run time (bench/README.md at 01b826c,
 * "CPU variants: the rule of AUTO"; 01b826c:bench/results/life_variants_cpu_2core_2026-11-24{,b}.jsonl:
 * 15-update fits with every optimised layout of each product on small_25, the 10,000 and 30,000
 * phantoms and a synthetic 10,000-fiber model, at 1 and 2 threads; and the 16-thread product
 * table of the 50,000-fiber model, 01b826c:bench/results/life_cpu16_h200_2026-11-22.txt).
 * y = M w: voxel-voxel everywhere. It writes each y column once; the atom-partitioned layouts pay
 *   for atomics on y from 2 threads on; coeff-voxel ties with it on one thread.
 * w = M^T y: the layout that gathers the smaller array. atom-atom holds a dictionary column and
 *   gathers the voxels' signal columns, voxel-voxel the reverse. With about as many voxels as
 *   atoms (phantoms: 0.99 and 1.23 voxels per atom) atom-atom was the faster; with 6.0 voxels per
 *   atom (synthetic, 96 directions) and with 1.8 (50,000 fibers, L = 360) voxel-voxel. The
 *   threshold lies between 1.23 and 1.8.
 * The timing it replaces was a large share of `life build` + `life fit` at 10,000 streamlines and
 *   made AUTO's choice, and so the fit's last digits, vary between runs. */
#define NS_LIFE_MTY_ATOM_MAX_VOXELS_PER_ATOM 1.5
ns_life_variant ns_life_cpu_auto_variant(ns_life_product product, int32_t n_voxels, int32_t n_atoms) {
    if (product == NS_LIFE_MTY && (double)n_voxels <= NS_LIFE_MTY_ATOM_MAX_VOXELS_PER_ATOM * n_atoms)
        return NS_LIFE_ATOM_ATOM;
    return NS_LIFE_VOXEL_VOXEL;
}

ns_life_variant ns_life_cuda_auto_variant(ns_life_variant timed, double sh_bound, double tolerance) {
    return sh_bound >= 0.0 && sh_bound < tolerance ? NS_LIFE_VOXEL_SH : timed;
}

/* voxel-sh's bound on the model (e->sh_bound), or -1 where it cannot serve it (not ENCODE's grid,
 * no degree fits: the reason is dropped, AUTO then keeps the exact variants). */
static void sh_bound(ns_life_engine_t *e) {
    int lmax = 0;
    double *U = NULL, err = 0.0;
    e->sh_bound = -1.0;
    if (ns_life_sh_fit(e->model, NS_LIFE_SH_TOL, &lmax, &U, &err) == NS_OK) e->sh_bound = err + NS_LIFE_SH_F32_ERROR(ns_life_sh_count(lmax));
    else ns_clear_error();
    free(U);
}

double ns_life_engine_error_bound(const ns_life_engine_t *e) {
    if (!e) return -1.0;
    double b = 0.0;
    for (int p = 0; p < 2; ++p)
        if (e->variant[p] == NS_LIFE_VOXEL_SH) b = fmax(b, e->sh_bound);
        else if ((int)e->variant[p] >= NS_LIFE_VARIANT_COUNT) return -1.0;
    return b;
}

/* CUDA: each optimised variant is timed (one untimed run, then three timed runs; the products
 * take milliseconds there) and the fastest wins, as in the paper's hybrid; the choice is cached
 * in the model so that later CUDA engines on it do not time again. */
static ns_status select_variant(ns_life_engine_t *e, ns_life_product p) {
    ns_life_model_t *m = e->model;
    if (e->backend != NS_BACKEND_CUDA) {
        e->variant[p] = ns_life_cpu_auto_variant(p, m->n_voxels, m->n_atoms);
        const ns_life_layout *l;
        return ns_life_layout_get(m, ns_life_variant_order(e->variant[p]), &l);
    }
    if (m->cuda_auto[p] != NS_LIFE_AUTO) {
        e->variant[p] = ns_life_cuda_auto_variant(m->cuda_auto[p], e->sh_bound, e->options.tolerance);
        return NS_OK;
    }
    const double t_start = ns_time_ms();
    const int64_t ny = (int64_t)m->n_theta * m->n_voxels;
    const int64_t n_in = p == NS_LIFE_MW ? m->n_fibers : ny;
    const int64_t n_out = p == NS_LIFE_MW ? ny : m->n_fibers;
    double *in = malloc((size_t)n_in * sizeof *in), *out = malloc((size_t)n_out * sizeof *out);
    ns_status s = in && out ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "variant selection buffers");
    if (s == NS_OK) random_fill(in, n_in, (uint64_t)p);
    double best = INFINITY;
    ns_life_variant chosen = NS_LIFE_AUTO;
    for (int c = 0; c < N_CANDIDATES && s == NS_OK; ++c) {
        const ns_life_variant v = candidates[c];
        if (!ns_life_engine_supports(e, v)) continue;
        s = run_product(e, p, v, in, out); /* untimed */
        double ms[SELECT_RUNS], mean = 0.0;
        if (s == NS_OK) s = ns_life_time_product(e, p, v, in, out, SELECT_RUNS, ms);
        for (int r = 0; r < SELECT_RUNS && s == NS_OK; ++r) mean += ms[r] / SELECT_RUNS;
        if (s == NS_OK && mean < best) best = mean, chosen = v;
    }
    free(in);
    free(out);
    e->selection_seconds += (ns_time_ms() - t_start) * 1e-3;
    if (s != NS_OK) return s;
    if (chosen == NS_LIFE_AUTO) return ns_fail(NS_ERR_INTERNAL, "no LiFE variant could be timed");
    m->cuda_auto[p] = chosen; /* the timed exact choice; the tolerance's rule on top */
    e->variant[p] = ns_life_cuda_auto_variant(chosen, e->sh_bound, e->options.tolerance);
    return NS_OK;
}

ns_status ns_life_engine_create(ns_life_model_t *model, const ns_life_options *options,
                                ns_life_engine_t **out) {
    if (!model || !out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_engine_create: NULL argument");
    *out = NULL;
    ns_life_engine_t *e = calloc(1, sizeof *e);
    if (!e) return ns_fail(NS_ERR_OUT_OF_MEMORY, "LiFE engine");
    e->model = model;
    e->device = -1;
    if (options) e->options = *options;
    else ns_life_options_init(&e->options);
    if (e->options.threads < 0) {
        const int threads = (int)e->options.threads;
        free(e);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "threads = %d must be >= 0", threads);
    }
    if (e->options.device < NS_DEVICE_CURRENT) {
        const int device = (int)e->options.device;
        free(e);
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "LiFE engine: device = %d is neither a device ordinal nor "
                       "NS_DEVICE_CURRENT", device);
    }
    ns_status s = ns_life_choose_backend(e->options.backend, &e->backend, &e->ops);
    if (s == NS_OK && e->backend == NS_BACKEND_CUDA)
        s = ns_cuda_resolve_device(e->options.device, "LiFE engine", &e->device);
    if (s != NS_OK) {
        free(e);
        return s;
    }
    const ns_life_variant want[2] = {e->options.mw_variant, e->options.mty_variant};
    for (int p = 0; p < 2 && s == NS_OK; ++p)
        if ((int)want[p] < 0 || (int)want[p] >= NS_LIFE_VARIANT_ALL)
            s = ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown LiFE variant %d", (int)want[p]);
    e->sh_bound = -1.0;
    if (s == NS_OK && !(e->options.tolerance >= 0.0 && isfinite(e->options.tolerance)))
        s = ns_fail(NS_ERR_INVALID_ARGUMENT, "LiFE engine: tolerance = %g must be finite and >= 0",
                    e->options.tolerance);
    if (s == NS_OK && e->backend == NS_BACKEND_CUDA && e->ops->supports(NS_LIFE_VOXEL_SH) &&
        (e->options.tolerance > 0.0 || want[0] == NS_LIFE_VOXEL_SH || want[1] == NS_LIFE_VOXEL_SH))
        sh_bound(e);
    if (s == NS_OK && e->ops->create) {
        const int caller = enter(e);
        s = e->ops->create(e);
        leave(e, caller);
    }
    for (int p = 0; p < 2 && s == NS_OK; ++p) {
        if (want[p] == NS_LIFE_AUTO) {
            s = select_variant(e, (ns_life_product)p);
        } else if (!ns_life_engine_supports(e, want[p])) {
            s = ns_fail(NS_ERR_UNSUPPORTED, "LiFE variant '%s' is not available on the %s backend",
                        ns_life_variant_name(want[p]), ns_backend_name(e->backend));
        } else {
            e->variant[p] = want[p];
            const ns_life_layout *l;
            s = ns_life_layout_get(model, ns_life_variant_order(want[p]), &l);
        }
    }
    if (s != NS_OK) {
        ns_life_engine_destroy(e);
        return s;
    }
    *out = e;
    return NS_OK;
}

void ns_life_engine_destroy(ns_life_engine_t *e) {
    if (!e) return;
    if (e->ops && e->ops->destroy) {
        const int caller = enter(e);
        e->ops->destroy(e);
        leave(e, caller);
    }
    free(e->work.buf);
    free(e);
}

ns_backend ns_life_engine_backend(const ns_life_engine_t *e) { return e ? e->backend : NS_BACKEND_AUTO; }

double ns_life_engine_selection_seconds(const ns_life_engine_t *e) { return e ? e->selection_seconds : 0.0; }

int32_t ns_life_engine_threads(const ns_life_engine_t *e) {
    if (!e) return 0;
    return e->backend == NS_BACKEND_CPU ? ns_life_cpu_threads(e->options.threads, e->model->n_coeffs) : 0;
}

ns_life_variant ns_life_engine_variant(const ns_life_engine_t *e, ns_life_product p) {
    return e && (p == NS_LIFE_MW || p == NS_LIFE_MTY) ? e->variant[p] : NS_LIFE_AUTO;
}

ns_status ns_life_mw(ns_life_engine_t *e, const double *w, double *y) {
    if (!e || !w || !y) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_mw: NULL argument");
    return run_product(e, NS_LIFE_MW, e->variant[NS_LIFE_MW], w, y);
}

ns_status ns_life_mty(ns_life_engine_t *e, const double *y, double *w) {
    if (!e || !y || !w) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_mty: NULL argument");
    return run_product(e, NS_LIFE_MTY, e->variant[NS_LIFE_MTY], y, w);
}

double ns_life_floor_bytes(const ns_life_model_t *m, ns_life_product p) {
    if (!m) return 0.0;
    unsigned char *seen = calloc((size_t)m->n_atoms, 1);
    int64_t atoms = 0;
    if (seen) {
        for (int64_t k = 0; k < m->n_coeffs; ++k)
            if (!seen[m->atom[k]]) seen[m->atom[k]] = 1, ++atoms;
        free(seen);
    } else {
        atoms = m->n_atoms;
    }
    /* Every voxel of a model has coefficients in practice; counting all of
     * them keeps the floor an upper bound on none of the terms. */
    const double coeff = (double)m->n_coeffs * (3 * sizeof(int32_t) + sizeof(double));
    const double dcols = (double)atoms * m->n_theta * sizeof(double);
    const double ycols = (double)m->n_voxels * m->n_theta * sizeof(double);
    const double wvec = (double)m->n_fibers * sizeof(double);
    return coeff + dcols + ycols + wvec; /* same terms for both products: in/out swap roles */
}

/* What a fit's iterates depend on besides the state: the model's sizes and signal, lambda,
 * the (relative) ridge and the preconditioner; for the group fit also G and the groups. The
 * stopping options may change on resume. */
static uint64_t fit_fingerprint(const ns_life_model_t *m, const ns_life_fit_options *o) {
    const int64_t sizes[5] = {m->n_theta, m->n_atoms, m->n_voxels, m->n_fibers, m->n_coeffs};
    const double opts[3] = {o->lambda, o->ridge, o->preconditioner ? 1.0 : 0.0};
    uint64_t h = ns_fnv1a(NS_FNV_OFFSET, sizes, sizeof sizes);
    h = ns_fnv1a(h, opts, sizeof opts);
    if (o->group > 0) {
        h = ns_fnv1a(h, &o->group, sizeof o->group);
        h = ns_fnv1a(h, o->groups, (size_t)m->n_fibers * sizeof *o->groups);
    }
    return ns_fnv1a(h, m->Y, (size_t)m->n_theta * (size_t)m->n_voxels * sizeof *m->Y);
}

/* A state to resume from must belong to this model, this solver and these options; the fit
 * stamps it. */
static ns_status check_state(const ns_life_model_t *m, const ns_life_fit_options *o) {
    ns_life_fit_state_t *st = o->state;
    const uint64_t fp = fit_fingerprint(m, o);
    if (st->updates >= 0) {
        const uint32_t solver = o->group > 0 ? LIFE_STATE_GROUP : LIFE_STATE_SBBNNLS;
        static const char *const names[] = {"SBBNNLS (no group)", "the group fit (group > 0)"};
        if (st->solver != solver)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: the state to resume was kept by %s, this fit is %s",
                           names[st->solver], names[solver]);
        if (st->n_fibers != m->n_fibers)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: the state to resume has %d fibers, the model %d",
                           (int)st->n_fibers, (int)m->n_fibers);
        if (solver == LIFE_STATE_GROUP && st->n_values != (int64_t)m->n_theta * m->n_voxels)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: the state to resume has %lld signal values, the "
                           "model %lld", (long long)st->n_values, (long long)m->n_theta * m->n_voxels);
        if (st->fingerprint != fp)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: the state to resume belongs to another model or "
                           "to other options (lambda, ridge, preconditioner, group and groups must be the "
                           "interrupted fit's)");
        if (st->updates >= o->max_iterations)
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: the state to resume has %d updates: max_iterations "
                           "(%d) must be above it", (int)st->updates, (int)o->max_iterations);
    }
    st->fingerprint = fp;
    return NS_OK;
}

ns_status ns_life_fit(ns_life_engine_t *e, const ns_life_fit_options *options, double *w,
                      double *history, ns_life_fit_result *result) {
    if (!e || !w) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: NULL argument");
    ns_life_fit_options o;
    if (options) o = *options;
    else ns_life_fit_options_init(&o);
    if (o.max_iterations < 1)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: max_iterations = %d must be >= 1", (int)o.max_iterations);
    const struct {
        const char *name;
        double value;
    } nonneg[] = {{"tol_gradient", o.tol_gradient},     {"tol_objective", o.tol_objective},
                  {"rtol_gradient", o.rtol_gradient},   {"rtol_objective", o.rtol_objective},
                  {"lambda", o.lambda},                 {"ridge", o.ridge}};
    for (size_t k = 0; k < sizeof nonneg / sizeof *nonneg; ++k)
        if (!(nonneg[k].value >= 0) || !isfinite(nonneg[k].value))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: %s = %g must be finite and >= 0", nonneg[k].name,
                           nonneg[k].value);
    if (!(o.group >= 0) || !isfinite(o.group))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: group = %g must be finite and >= 0 (0: off)", o.group);
    if (o.group > 0 && !o.groups)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: group = %g needs options.groups (one group id per "
                       "fiber)", o.group);
    if (o.group > 0 && o.preconditioner)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_life_fit: the group penalty (group = %g) and the "
                       "preconditioner cannot be combined (the group fit needs none)", o.group);
    if (o.group > 0 && !e->ops->group_fit)
        return ns_fail(NS_ERR_UNSUPPORTED, "ns_life_fit: the group penalty (group = %g, life fit --group) does "
                       "not run on the %s backend", o.group, e->ops->name);
    if (o.w0)
        for (int32_t f = 0; f < e->model->n_fibers; ++f)
            if (!(o.w0[f] >= 0) || !isfinite(o.w0[f]))
                return ns_fail(NS_ERR_INVALID_ARGUMENT, "w0[%d] = %g must be finite and >= 0", (int)f,
                               o.w0[f]);
    if (o.state) {
        const ns_status fs = check_state(e->model, &o);
        if (fs != NS_OK) return fs;
    }
    ns_life_fit_result local;
    if (!result) result = &local;
    memset(result, 0, sizeof *result);
    if (o.ridge > 0) {
        /* relative -> absolute: mu = R ||M 1||^2 / n_fibers, the Rayleigh quotient of M^T M
         * at equal weights: about its largest eigenvalue (0.7x on the phantoms), the scale of
         * a bundle of streamlines the data cannot tell apart, so one R suits every density
         * (docs/life.md, "Pruning quality"). ||M 1||^2 is summed over processes for a
         * voxel-partitioned model. From here on o.ridge is mu: the solver (sbbnnls.c) takes
         * the absolute weight. */
        const int32_t nf = e->model->n_fibers;
        const int64_t ny = (int64_t)e->model->n_theta * e->model->n_voxels;
        double *ones = malloc((size_t)nf * sizeof *ones), *y = malloc((size_t)ny * sizeof *y);
        ns_status rs = ones && y ? NS_OK : ns_fail(NS_ERR_OUT_OF_MEMORY, "ridge: ||M 1||^2 (%lld values)",
                                                 (long long)ny);
        for (int32_t f = 0; rs == NS_OK && f < nf; ++f) ones[f] = 1.0;
        if (rs == NS_OK) rs = ns_life_mw(e, ones, y);
        double yy = 0.0;
        for (int64_t i = 0; rs == NS_OK && i < ny; ++i) yy += y[i] * y[i];
        free(ones);
        free(y);
        if (rs == NS_OK && o.reduce) rs = o.reduce(&yy, 1, o.reduce_context);
        if (rs != NS_OK) return rs;
        o.ridge *= yy / nf;
        result->ridge_mu = o.ridge;
    }
    /* CUDA: reduce sums device fiber vectors through a host stage (sbbnnls.c) */
    const int caller = enter(e);
    const double mu = result->ridge_mu;
    ns_status s = o.group > 0 ? e->ops->group_fit(e, &o, w, history, result) : e->ops->fit(e, &o, w, history, result);
    result->ridge_mu = mu;
    leave(e, caller);
    return s;
}

/* ------------------------------------------------------------ backends */

/* LiFE's `auto` policy: CUDA whenever a GPU is usable (every product and
 * the whole fit stay on the device; bench/README.md, LiFE: the GPU products
 * beat 16 CPU threads on every model measured), else the CPU. */
ns_backend ns_life_auto_backend(int usable_gpus) { return usable_gpus > 0 ? NS_BACKEND_CUDA : NS_BACKEND_CPU; }

ns_status ns_life_choose_backend(ns_backend requested, ns_backend *backend, const ns_life_backend_ops **ops) {
    if (requested == NS_BACKEND_AUTO) {
        const ns_impl *cuda = ns_registry_for_backend(ns_life_impls(), NS_BACKEND_CUDA);
        requested = ns_life_auto_backend(cuda && cuda->ops() ? ns_cuda_usable_devices() : 0);
    }
    if (requested != NS_BACKEND_CPU && requested != NS_BACKEND_CUDA)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)requested);
    const ns_impl *impl = ns_registry_for_backend(ns_life_impls(), requested);
    if (!impl)
        return ns_fail(NS_ERR_INTERNAL, "no LiFE implementation registered for the %s backend",
                       ns_backend_name(requested));
    ns_status s = ns_registry_ready(impl, "LiFE");
    if (s != NS_OK) return s;
    *backend = requested;
    *ops = impl->ops();
    return NS_OK;
}

static ns_status cpu_product(ns_life_engine_t *e, ns_life_product p, ns_life_variant v, const double *in,
                             double *out) {
    return ns_life_cpu_product(e->model, p, v, e->options.threads, in, out, &e->work);
}

static int cpu_supports(ns_life_variant v) { return v > NS_LIFE_AUTO && (int)v < NS_LIFE_VARIANT_COUNT; }

const ns_life_backend_ops *ns_life_cpu_backend(void) {
    static const ns_life_backend_ops ops = {"cpu",       NULL,           NULL, cpu_supports, cpu_product, NULL,
                                            ns_life_cpu_fit, ns_life_group_fit};
    return &ops;
}

/* The family's implementations (core/registry.h): every exact variant on
 * both backends (variants 1 .. NS_LIFE_VARIANT_COUNT - 1), the reduced-
 * precision ones (up to NS_LIFE_VARIANT_ALL - 1) on CUDA only. */
static const void *impl_cpu(void) { return ns_life_cpu_backend(); }
static const void *impl_cuda(void) { return ns_life_cuda_backend(); }
#define ALL_VARIANTS (NS_METHOD_BIT(NS_LIFE_VARIANT_COUNT) - 2)
#define CUDA_VARIANTS (NS_METHOD_BIT(NS_LIFE_VARIANT_ALL) - 2)
static const ns_impl impls[] = {
    {NS_FAMILY_LIFE, NS_BACKEND_CPU, "cpu", ALL_VARIANTS, impl_cpu, NULL},
    {NS_FAMILY_LIFE, NS_BACKEND_CUDA, "cuda", CUDA_VARIANTS, impl_cuda, NULL},
};

ns_impl_table ns_life_impls(void) { return NS_IMPL_TABLE(impls); }
