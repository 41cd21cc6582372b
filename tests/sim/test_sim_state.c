/* The whole-population state accessors (ns_sim_read_var / ns_sim_write_var)
 * against the per-cell accessors (ns_sim_get_state / ns_sim_set_state), an
 * independent path through the host copy:
 *   - read: every variable, Flat order, equal bit for bit to the cells'
 *     ns_sim_get_state concatenated at ns_sim_cell_offset;
 *   - coupling: advance, read v, change it (a field that depends on the
 *     compartment), write it back, advance again: the traces, spikes and
 *     state equal bit for bit those of a twin simulation changed through
 *     ns_sim_set_state cell by cell;
 *   - bad arguments named.
 * On the CPU loop always; on the GPU (both loops: several shapes onchip and
 * the tree loop) with device arrays on a non-blocking stream of the
 * caller's, when there is a GPU (that part says SKIPPED otherwise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static const char *files[] = {"ca1_h10.swc", "str_lts_noaxon.swc", "dg_granule_1220882a.swc", "purk_dbbs.swc"};
#define N_FILES 4
#define N_CELLS 150

static ns_sim_t *make_sim(ns_backend backend, ns_hines_method method, ns_cell_t **cells) {
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.method = method;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(N_FILES, (const ns_cell_t *const *)cells, N_CELLS, NULL, &p, &o, &sim));
    for (int64_t c = 0; sim && c < N_CELLS; ++c) {
        const int32_t soma = ns_sim_spike_compartment(sim, c);
        ns_cell_info ci;
        ns_cell_get_info(cells[c % N_FILES], &ci);
        CHECK_OK(ns_sim_add_iclamp(sim, c, soma, 1.0 + 0.1 * (c % 7), 20.0, 1e-4 * ci.total_area * (1 + c % 3)));
        if (c % 13 == 0) CHECK_OK(ns_sim_add_recording(sim, c, soma, NULL));
    }
    return sim;
}

/* The cells' ns_sim_get_state, concatenated in the Flat order. */
static void gather_cells(ns_sim_t *sim, double *flat[NS_SIM_VAR_COUNT]) {
    for (int64_t c = 0; c < ns_sim_cells(sim); ++c) {
        const int64_t o = ns_sim_cell_offset(sim, c);
        CHECK_OK(ns_sim_get_state(sim, c, flat[0] + o));
    }
}

/* The change a coupled code makes: v += 0.5 mV * sin(i), i the Flat index. */
static void perturb(double *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] += 0.5 * sin((double)i);
}

static int same(const double *a, const double *b, int64_t n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* Traces, spikes and final state of two simulations bit for bit. */
static void check_twins(ns_sim_t *a, ns_sim_t *b, const char *what) {
    int64_t sa, sb;
    int32_t na, nb;
    const double *ta = ns_sim_traces(a, &sa, &na), *tb = ns_sim_traces(b, &sb, &nb);
    CHECK_MSG(sa == sb && na == nb && same(ta, tb, sa * na), "%s: traces differ", what);
    int64_t spikes = 0;
    for (int64_t c = 0; c < ns_sim_cells(a); ++c) {
        int64_t x, y;
        const double *xa = ns_sim_spikes(a, c, &x), *xb = ns_sim_spikes(b, c, &y);
        CHECK_MSG(x == y && same(xa, xb, x), "%s: spikes of cell %lld differ", what, (long long)c);
        spikes += x;
    }
    CHECK_MSG(spikes > 0, "%s: no spikes (the stimuli should make some)", what);
}

/* Host-memory variant (CPU simulations): read, couple, compare. `sim` and
 * `twin` are fresh, identical simulations. */
static void run_host(ns_sim_t *sim, ns_sim_t *twin) {
    const int64_t n = ns_sim_compartments(sim);
    CHECK(ns_sim_cell_offset(sim, ns_sim_cells(sim)) == n && ns_sim_cell_offset(sim, -1) == -1 &&
          ns_sim_cell_offset(sim, ns_sim_cells(sim) + 1) == -1);
    double *want[NS_SIM_VAR_COUNT], *got = malloc((size_t)n * sizeof *got);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) want[k] = malloc((size_t)n * sizeof **want);
    CHECK_OK(ns_sim_advance(sim, 300));
    CHECK_OK(ns_sim_advance(twin, 300));
    gather_cells(twin, want);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) {
        CHECK_OK(ns_sim_read_var(sim, (ns_sim_var)k, got, NULL));
        CHECK_MSG(same(got, want[k], n), "cpu: read_var(%d) differs from get_state", k);
    }
    /* couple: through the bulk call on sim, cell by cell on twin */
    CHECK_OK(ns_sim_read_var(sim, NS_SIM_VAR_V, got, NULL));
    perturb(got, n);
    CHECK_OK(ns_sim_write_var(sim, NS_SIM_VAR_V, got, NULL));
    perturb(want[0], n);
    for (int64_t c = 0; c < ns_sim_cells(twin); ++c)
        CHECK_OK(ns_sim_set_state(twin, c, want[0] + ns_sim_cell_offset(twin, c)));
    CHECK_OK(ns_sim_advance(sim, 400));
    CHECK_OK(ns_sim_advance(twin, 400));
    check_twins(sim, twin, "cpu");
    /* bad arguments */
    CHECK(ns_sim_read_var(sim, NS_SIM_VAR_COUNT, got, NULL) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "var") != NULL);
    CHECK(ns_sim_read_var(sim, NS_SIM_VAR_V, NULL, NULL) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "flat") != NULL);
    CHECK(ns_sim_write_var(sim, NS_SIM_VAR_V, got, (void *)got) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "stream") != NULL);
    CHECK(ns_sim_read_var(NULL, NS_SIM_VAR_V, got, NULL) == NS_ERR_INVALID_ARGUMENT);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) free(want[k]);
    free(got);
}

/* Between the part's memory (host or device) and a host buffer. */
static void part_copy(void *dst, const void *src, size_t bytes, int to_host, int device, void *stream) {
#ifdef NS_HAVE_CUDA
    if (device >= 0) {
        CHECK(cudaMemcpyAsync(dst, src, bytes, to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                              (cudaStream_t)stream) == cudaSuccess);
        if (to_host) CHECK(cudaStreamSynchronize((cudaStream_t)stream) == cudaSuccess);
        return;
    }
#else
    (void)to_host, (void)device, (void)stream;
#endif
    memcpy(dst, src, bytes);
}

/* The loop's own arrays (ns_sim_state_part): the layout each part
 * describes (first/stride/node_pos) against its flat_of map, every
 * compartment held once, the values against the twin's ns_sim_get_state;
 * then a coupling step through the parts (v += 0.5 sin(Flat index), written
 * in place, on `stream` for a GPU simulation) against the same change made
 * on the twin cell by cell with ns_sim_set_state. exact: the twin runs the
 * same loop (bit for bit); else it is the CPU loop (the GPU loops' agreement
 * with it: traces within 1e-7 mV, spike times within 1e-9 ms). */
static void run_parts(ns_sim_t *sim, ns_sim_t *twin, int exact, void *stream, const char *what) {
    const int64_t n = ns_sim_compartments(sim), parts = ns_sim_state_parts(sim);
    double *want[NS_SIM_VAR_COUNT];
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) want[k] = malloc((size_t)n * sizeof **want);
    int32_t *seen = calloc((size_t)n, sizeof *seen);
    CHECK_OK(ns_sim_advance(sim, 300));
    CHECK_OK(ns_sim_advance(twin, 300));
    gather_cells(twin, want);
    CHECK_MSG(parts >= 1, "%s: %lld parts", what, (long long)parts);
    int64_t positions = 0, wrong_layout = 0, wrong_value = 0;
    double worst = 0.0;
    for (int64_t k = 0; k < parts; ++k) {
        ns_sim_part pt;
        CHECK_OK(ns_sim_state_part(sim, k, &pt));
        CHECK_MSG(pt.v && pt.flat_of && pt.cell && pt.first && pt.stride >= 1,
                  "%s: part %lld incomplete", what, (long long)k);
        CHECK(pt.device == (ns_sim_backend(sim) == NS_BACKEND_CUDA ? 0 : -1));
        const size_t z = (size_t)pt.size;
        int64_t *flat_of = malloc((z ? z : 1) * sizeof *flat_of);
        double *vals[NS_SIM_VAR_COUNT];
        double *const src[NS_SIM_VAR_COUNT] = {pt.v};
        part_copy(flat_of, pt.flat_of, z * sizeof *flat_of, 1, pt.device, stream);
        for (int a = 0; a < NS_SIM_VAR_COUNT; ++a) {
            vals[a] = malloc((z ? z : 1) * sizeof(double));
            part_copy(vals[a], src[a], z * sizeof(double), 1, pt.device, stream);
        }
        /* the described layout, position by position */
        char *hit = calloc(z ? z : 1, 1);
        for (int64_t j = 0; j < pt.cells; ++j) {
            const int64_t c = pt.cell[j], o = ns_sim_cell_offset(sim, c);
            const int64_t cnt = ns_sim_cell_offset(sim, c + 1) - o;
            for (int64_t i = 0; i < cnt; ++i) {
                const int64_t p = pt.first[j] + (int64_t)pt.stride * (pt.node_pos ? pt.node_pos[i] : i);
                if (p < 0 || p >= pt.size || hit[p] || flat_of[p] != o + i) {
                    wrong_layout++;
                    continue;
                }
                hit[p] = 1;
            }
        }
        for (int64_t p = 0; p < pt.size; ++p) {
            if (!hit[p] || flat_of[p] < 0 || flat_of[p] >= n) {
                wrong_layout++;
                continue;
            }
            seen[flat_of[p]]++;
            for (int a = 0; a < NS_SIM_VAR_COUNT; ++a) {
                const double d = fabs(vals[a][p] - want[a][flat_of[p]]);
                if (exact ? memcmp(&vals[a][p], &want[a][flat_of[p]], sizeof(double)) != 0 : !(d <= 1e-7)) wrong_value++;
                if (d > worst) worst = d;
            }
            vals[0][p] += 0.5 * sin((double)flat_of[p]); /* the coupling step */
        }
        part_copy(src[0], vals[0], z * sizeof(double), 0, pt.device, stream);
        positions += pt.size;
        free(hit);
        free(flat_of);
        for (int a = 0; a < NS_SIM_VAR_COUNT; ++a) free(vals[a]);
    }
    CHECK_OK(ns_sim_state_done(sim, stream));
    int64_t not_once = 0;
    for (int64_t i = 0; i < n; ++i) not_once += seen[i] != 1;
    CHECK_MSG(positions == n && wrong_layout == 0 && not_once == 0,
              "%s: parts hold %lld positions for %lld compartments; %lld positions off their layout, %lld "
              "compartments not held exactly once",
              what, (long long)positions, (long long)n, (long long)wrong_layout, (long long)not_once);
    CHECK_MSG(wrong_value == 0, "%s: %lld part values differ from get_state (worst %g)", what, (long long)wrong_value,
              worst);
    perturb(want[0], n);
    for (int64_t c = 0; c < ns_sim_cells(twin); ++c)
        CHECK_OK(ns_sim_set_state(twin, c, want[0] + ns_sim_cell_offset(twin, c)));
    CHECK_OK(ns_sim_advance(sim, 400)); /* must wait for the writes queued on `stream` */
    CHECK_OK(ns_sim_advance(twin, 400));
    if (exact) {
        check_twins(sim, twin, what);
    } else {
        int64_t sa, sb, spikes = 0;
        int32_t na, nb;
        const double *ta = ns_sim_traces(sim, &sa, &na), *tb = ns_sim_traces(twin, &sb, &nb);
        double dv = 0.0, dt = 0.0;
        CHECK(sa == sb && na == nb);
        for (int64_t i = 0; sa == sb && na == nb && i < sa * na; ++i)
            if (!(fabs(ta[i] - tb[i]) <= dv)) dv = fabs(ta[i] - tb[i]);
        int counts = 1;
        for (int64_t c = 0; c < ns_sim_cells(sim); ++c) {
            int64_t x, y;
            const double *xa = ns_sim_spikes(sim, c, &x), *xb = ns_sim_spikes(twin, c, &y);
            counts &= x == y;
            for (int64_t q = 0; x == y && q < x; ++q)
                if (!(fabs(xa[q] - xb[q]) <= dt)) dt = fabs(xa[q] - xb[q]);
            spikes += x;
        }
        CHECK_MSG(counts && spikes > 0 && dv <= 1e-7 && dt <= 1e-9,
                  "%s against the CPU loop: traces within %g mV, spike times within %g ms, %lld spikes, counts %s", what,
                  dv, dt, (long long)spikes, counts ? "equal" : "differ");
        printf("%s: coupled through the parts, against the CPU loop coupled through set_state: traces within %.2g mV, "
               "spike times within %.2g ms (%lld spikes)\n",
               what, dv, dt, (long long)spikes);
    }
    /* the host accessor and the part agree after the steps (cell 0 of part 0, compartment 0) */
    ns_sim_part pt;
    CHECK_OK(ns_sim_state_part(sim, 0, &pt));
    const int64_t p0 = pt.first[0] + (int64_t)pt.stride * (pt.node_pos ? pt.node_pos[0] : 0);
    const int64_t c0 = pt.cell[0];
    double v0 = 0.0, *v = malloc((size_t)(ns_sim_cell_offset(sim, c0 + 1) - ns_sim_cell_offset(sim, c0)) * sizeof *v);
    part_copy(&v0, pt.v + p0, sizeof v0, 1, pt.device, stream);
    CHECK_OK(ns_sim_get_state(sim, c0, v));
    CHECK_MSG(memcmp(&v0, &v[0], sizeof v0) == 0, "%s: get_state (%.17g) and the part (%.17g) disagree", what, v[0],
              v0);
    free(v);
    /* bad arguments named */
    CHECK(ns_sim_state_part(sim, parts, &pt) == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "part") != NULL);
    CHECK(ns_sim_state_part(sim, -1, &pt) == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "part") != NULL);
    CHECK(ns_sim_state_part(sim, 0, NULL) == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "out") != NULL);
    CHECK(ns_sim_state_part(NULL, 0, &pt) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_state_parts(NULL) == -1);
    ns_sim_field fv;
    CHECK(ns_sim_state_field(sim, 0, "m_nope", &fv) == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "m_nope") != NULL);
    if (ns_sim_backend(sim) == NS_BACKEND_CPU)
        CHECK(ns_sim_state_done(sim, (void *)want[0]) == NS_ERR_INVALID_ARGUMENT &&
              strstr(ns_last_error(), "stream") != NULL);
    printf("%s: %lld parts, layout and values as described, coupling through them as set_state\n", what,
           (long long)parts);
    free(seen);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) free(want[k]);
}

/* A simulation of a model (the built-in hh everywhere): its parts give v
 * and no gates (the states are the mechanisms'), the values of v those of
 * ns_sim_get_state; a write through them is seen by ns_sim_get_state. */
static void model_parts(ns_cell_t **cells, ns_backend backend, void *stream) {
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &model));
    CHECK_OK(ns_sim_model_insert(model, "all", "hh"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = backend;
    o.model = model;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(N_FILES, (const ns_cell_t *const *)cells, 12, NULL, &p, &o, &sim));
    ns_sim_model_destroy(model);
    if (!sim) return;
    CHECK_OK(ns_sim_advance(sim, 100));
    const int64_t n = ns_sim_compartments(sim);
    double *want = malloc((size_t)n * sizeof *want);
    for (int64_t c = 0; c < ns_sim_cells(sim); ++c)
        CHECK_OK(ns_sim_get_state(sim, c, want + ns_sim_cell_offset(sim, c)));
    int64_t wrong = 0, positions = 0;
    for (int64_t k = 0; k < ns_sim_state_parts(sim); ++k) {
        ns_sim_part pt;
        CHECK_OK(ns_sim_state_part(sim, k, &pt));
        CHECK_MSG(pt.v != NULL, "model part %lld: v expected", (long long)k);
        const size_t z = (size_t)pt.size;
        int64_t *flat_of = malloc((z ? z : 1) * sizeof *flat_of);
        double *v = malloc((z ? z : 1) * sizeof *v);
        part_copy(flat_of, pt.flat_of, z * sizeof *flat_of, 1, pt.device, stream);
        part_copy(v, pt.v, z * sizeof *v, 1, pt.device, stream);
        for (size_t q = 0; q < z; ++q) {
            wrong += memcmp(&v[q], &want[flat_of[q]], sizeof *v) != 0;
            want[flat_of[q]] = v[q] = -30.0 + 1e-3 * (double)flat_of[q]; /* written through the part */
        }
        part_copy(pt.v, v, z * sizeof *v, 0, pt.device, stream);
        positions += pt.size;
        free(flat_of), free(v);
    }
    CHECK_OK(ns_sim_state_done(sim, stream));
    CHECK_MSG(wrong == 0 && positions == n, "model parts: %lld values differ from get_state, %lld positions of %lld",
              (long long)wrong, (long long)positions, (long long)n);
    /* the mechanisms' and ions' own arrays (ns_sim_state_field): each entry
     * against ns_sim_get_model_var at the compartment its position names,
     * every hh compartment once; then written through the field and seen by
     * ns_sim_get_model_var */
    int64_t *cell_of = malloc((size_t)n * sizeof *cell_of);
    for (int64_t c = 0; c < ns_sim_cells(sim); ++c)
        for (int64_t i = ns_sim_cell_offset(sim, c); i < ns_sim_cell_offset(sim, c + 1); ++i) cell_of[i] = c;
    static const char *const names[2] = {"m_hh", "ek"};
    for (int a = 0; a < 2; ++a) {
        double *ref = malloc((size_t)n * sizeof *ref);
        for (int64_t c = 0; c < ns_sim_cells(sim); ++c)
            CHECK_OK(ns_sim_get_model_var(sim, c, names[a], ref + ns_sim_cell_offset(sim, c)));
        int32_t *held = calloc((size_t)n, sizeof *held);
        int64_t bad = 0, entries = 0;
        for (int64_t k = 0; k < ns_sim_state_parts(sim); ++k) {
            ns_sim_part pt;
            ns_sim_field f;
            CHECK_OK(ns_sim_state_part(sim, k, &pt));
            CHECK_OK(ns_sim_state_field(sim, k, names[a], &f));
            CHECK(f.device == pt.device && (a == 1) == (f.pos == NULL));
            const size_t zp = (size_t)pt.size, zf = (size_t)f.size;
            int64_t *flat_of = malloc((zp ? zp : 1) * sizeof *flat_of);
            int32_t *pos = malloc((zf ? zf : 1) * sizeof *pos);
            double *x = malloc((zf ? zf : 1) * sizeof *x);
            part_copy(flat_of, pt.flat_of, zp * sizeof *flat_of, 1, pt.device, stream);
            if (f.pos) part_copy(pos, f.pos, zf * sizeof *pos, 1, f.device, stream);
            else for (size_t q = 0; q < zf; ++q) pos[q] = (int32_t)q;
            part_copy(x, f.data, zf * sizeof *x, 1, f.device, stream);
            for (size_t q = 0; q < zf; ++q) {
                if (pos[q] < 0 || pos[q] >= pt.size) {
                    bad++;
                    continue;
                }
                const int64_t i = flat_of[pos[q]];
                held[i]++;
                bad += memcmp(&x[q], &ref[i], sizeof x[q]) != 0;
                x[q] = ref[i] = a == 0 ? 0.25 : -80.0 - 1e-3 * (double)i; /* written through the field */
            }
            part_copy(f.data, x, zf * sizeof *x, 0, f.device, stream);
            entries += f.size;
            free(flat_of), free(pos), free(x);
        }
        CHECK_OK(ns_sim_state_done(sim, stream));
        int64_t not_once = 0;
        for (int64_t i = 0; i < n; ++i) not_once += held[i] != (isnan(ref[i]) ? 0 : 1);
        CHECK_MSG(bad == 0 && not_once == 0 && entries > 0,
                  "model field %s: %lld entries differ from get_model_var or lie outside the part, %lld compartments "
                  "not held once (%lld entries)",
                  names[a], (long long)bad, (long long)not_once, (long long)entries);
        double *after = malloc((size_t)n * sizeof *after);
        for (int64_t c = 0; c < ns_sim_cells(sim); ++c)
            CHECK_OK(ns_sim_get_model_var(sim, c, names[a], after + ns_sim_cell_offset(sim, c)));
        int64_t unseen = 0;
        for (int64_t i = 0; i < n; ++i) unseen += !(isnan(ref[i]) && isnan(after[i])) && memcmp(&after[i], &ref[i], 8);
        CHECK_MSG(unseen == 0, "model field %s: %lld writes through the field not seen by get_model_var", names[a],
                  (long long)unseen);
        free(after), free(held), free(ref);
    }
    ns_sim_field f;
    CHECK(ns_sim_state_field(sim, 0, "bogus_hh", &f) != NS_OK && strstr(ns_last_error(), "bogus") != NULL);
    CHECK(ns_sim_state_field(sim, -1, "m_hh", &f) == NS_ERR_INVALID_ARGUMENT && strstr(ns_last_error(), "part") != NULL);
    free(cell_of);
    double *got = malloc((size_t)n * sizeof *got);
    for (int64_t c = 0; c < ns_sim_cells(sim); ++c)
        CHECK_OK(ns_sim_get_state(sim, c, got + ns_sim_cell_offset(sim, c)));
    CHECK_MSG(same(got, want, n), "model parts: get_state does not see the writes through the parts");
    CHECK_OK(ns_sim_advance(sim, 10));
    free(got), free(want);
    ns_sim_destroy(sim);
}

#ifdef NS_HAVE_CUDA
/* A parameter (el_hh) and an ion's e (ek) written through
 * ns_sim_state_field into a GPU simulation of the built-in hh, which `auto`
 * fuses (the fused kernel reads copies of both, made at create), and into a
 * CPU twin (whose fused pass reads the arrays once they are handed out):
 * the GPU takes the per-step path from the next advance, and both use the
 * values written: v within 1e-5 mV after 400 steps, and more than 1 mV away
 * from a CPU twin without the writes. */
static void model_param_write(ns_cell_t **cells, void *stream) {
    ns_sim_model_t *model = NULL;
    CHECK_OK(ns_sim_model_create(NULL, &model));
    CHECK_OK(ns_sim_model_insert(model, "all", "hh"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_t *sims[3] = {NULL, NULL, NULL}; /* GPU, CPU, CPU without the writes */
    const ns_backend backend[3] = {NS_BACKEND_CUDA, NS_BACKEND_CPU, NS_BACKEND_CPU};
    for (int s = 0; s < 3; ++s) {
        ns_sim_options o;
        ns_sim_options_init(&o);
        o.backend = backend[s];
        o.model = model;
        CHECK_OK(ns_sim_create(N_FILES, (const ns_cell_t *const *)cells, 12, NULL, &p, &o, &sims[s]));
    }
    ns_sim_model_destroy(model);
    if (!sims[0] || !sims[1] || !sims[2]) goto out;
    for (int s = 0; s < 3; ++s) CHECK_OK(ns_sim_advance(sims[s], 100));
    CHECK(ns_sim_gpu_mechanisms_of(sims[0]) == NS_SIM_GPU_MECHANISMS_FUSED);
    static const char *const names[2] = {"el_hh", "ek"};
    static const double value[2] = {-40.0, -60.0};
    for (int s = 0; s < 2; ++s) {
        void *q = s == 0 ? stream : NULL;
        for (int64_t k = 0; k < ns_sim_state_parts(sims[s]); ++k)
            for (int a = 0; a < 2; ++a) {
                ns_sim_field f;
                CHECK_OK(ns_sim_state_field(sims[s], k, names[a], &f));
                const size_t z = (size_t)f.size;
                double *x = malloc((z ? z : 1) * sizeof *x);
                for (size_t i = 0; i < z; ++i) x[i] = value[a];
                part_copy(f.data, x, z * sizeof *x, 0, f.device, q);
                free(x);
            }
        CHECK_OK(ns_sim_state_done(sims[s], q));
    }
    for (int s = 0; s < 3; ++s) CHECK_OK(ns_sim_advance(sims[s], 400));
    CHECK_MSG(ns_sim_gpu_mechanisms_of(sims[0]) == NS_SIM_GPU_MECHANISMS_PER_STEP,
              "GPU after a parameter write: %s", ns_sim_gpu_mechanisms_name(ns_sim_gpu_mechanisms_of(sims[0])));
    CHECK(ns_sim_gpu_mechanisms_of(sims[1]) == NS_SIM_GPU_MECHANISMS_FUSED);
    const int64_t n = ns_sim_compartments(sims[0]);
    double *v[3];
    for (int s = 0; s < 3; ++s) {
        v[s] = malloc((size_t)n * sizeof *v[s]);
        for (int64_t c = 0; c < ns_sim_cells(sims[s]); ++c)
            CHECK_OK(ns_sim_get_state(sims[s], c, v[s] + ns_sim_cell_offset(sims[s], c)));
    }
    double gpu_cpu = 0.0, written = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        gpu_cpu = fmax(gpu_cpu, fabs(v[0][i] - v[1][i]));
        written = fmax(written, fabs(v[1][i] - v[2][i]));
    }
    printf("el_hh and ek written through the fields: GPU (per step from then on) vs CPU max |dv| %.2e mV; the "
           "writes moved v by up to %.1f mV\n", gpu_cpu, written);
    CHECK_MSG(gpu_cpu <= 1e-5 && written > 1.0, "parameter writes: GPU vs CPU %g mV, written vs not %g mV", gpu_cpu,
              written);
    for (int s = 0; s < 3; ++s) free(v[s]);
out:
    for (int s = 0; s < 3; ++s) ns_sim_destroy(sims[s]);
}
#endif

#ifdef NS_HAVE_CUDA
/* Device-memory variant: the same on a non-blocking stream of the caller's. */
static void run_device(ns_sim_t *sim, ns_sim_t *twin, const char *what) {
    const int64_t n = ns_sim_compartments(sim);
    const size_t bytes = (size_t)n * sizeof(double);
    double *want[NS_SIM_VAR_COUNT], *got = malloc(bytes), *dev = NULL;
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) want[k] = malloc(bytes);
    cudaStream_t q = NULL;
    CHECK(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess);
    CHECK(cudaMalloc((void **)&dev, bytes) == cudaSuccess);
    CHECK_OK(ns_sim_advance(sim, 300));
    CHECK_OK(ns_sim_advance(twin, 300));
    gather_cells(twin, want);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) {
        CHECK(cudaMemsetAsync(dev, 0xFF, bytes, q) == cudaSuccess);
        CHECK_OK(ns_sim_read_var(sim, (ns_sim_var)k, dev, q));
        CHECK(cudaMemcpyAsync(got, dev, bytes, cudaMemcpyDeviceToHost, q) == cudaSuccess);
        CHECK(cudaStreamSynchronize(q) == cudaSuccess);
        CHECK_MSG(same(got, want[k], n), "%s: read_var(%d) differs from get_state", what, k);
    }
    /* couple on the stream: read v, change it, write it back, advance at
     * once (the advance must wait for the write) */
    CHECK_OK(ns_sim_read_var(sim, NS_SIM_VAR_V, dev, q));
    CHECK(cudaMemcpyAsync(got, dev, bytes, cudaMemcpyDeviceToHost, q) == cudaSuccess);
    CHECK(cudaStreamSynchronize(q) == cudaSuccess);
    perturb(got, n);
    CHECK(cudaMemcpyAsync(dev, got, bytes, cudaMemcpyHostToDevice, q) == cudaSuccess);
    CHECK_OK(ns_sim_write_var(sim, NS_SIM_VAR_V, dev, q));
    CHECK(cudaMemsetAsync(dev, 0, bytes, q) == cudaSuccess); /* the caller reuses its buffer at once */
    perturb(want[0], n);
    for (int64_t c = 0; c < ns_sim_cells(twin); ++c)
        CHECK_OK(ns_sim_set_state(twin, c, want[0] + ns_sim_cell_offset(twin, c)));
    CHECK_OK(ns_sim_advance(sim, 400));
    CHECK_OK(ns_sim_advance(twin, 400));
    check_twins(sim, twin, what);
    /* the host accessor after a device write sees the written state */
    perturb(want[0], n);
    CHECK(cudaMemcpy(dev, want[0], bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK_OK(ns_sim_write_var(sim, NS_SIM_VAR_V, dev, q));
    gather_cells(sim, want);
    CHECK(cudaMemcpy(got, dev, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(same(got, want[0], n), "%s: get_state after write_var", what);
    /* bad arguments: host memory, an array shorter than the population */
    CHECK(ns_sim_read_var(sim, NS_SIM_VAR_V, got, q) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "flat") != NULL);
    double *shorter = NULL;
    CHECK(cudaMalloc((void **)&shorter, bytes / 2) == cudaSuccess);
    CHECK(ns_sim_write_var(sim, NS_SIM_VAR_V, shorter, q) == NS_ERR_INVALID_ARGUMENT &&
          strstr(ns_last_error(), "flat") != NULL);
    printf("%s (%s): read_var equals get_state, write_var equals set_state, %lld compartments\n", what,
           ns_hines_method_name(ns_sim_method(sim)), (long long)n);
    cudaFree(shorter);
    cudaFree(dev);
    cudaStreamDestroy(q);
    for (int k = 0; k < NS_SIM_VAR_COUNT; ++k) free(want[k]);
    free(got);
}
#endif

int main(void) {
    ns_cell_t *cells[N_FILES] = {0};
    for (int k = 0; k < N_FILES; ++k) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, files[k]);
        ns_morph_t *m = NULL;
        CHECK_OK(ns_swc_read(path, NULL, &m));
        CHECK_OK(ns_discretize(m, NULL, &cells[k]));
        ns_morph_destroy(m);
    }
    ns_sim_t *a = make_sim(NS_BACKEND_CPU, NS_HINES_AUTO, cells), *b = make_sim(NS_BACKEND_CPU, NS_HINES_AUTO, cells);
    if (a && b) run_host(a, b);
    ns_sim_destroy(a);
    ns_sim_destroy(b);
    model_parts(cells, NS_BACKEND_CPU, NULL);
    /* the loop's own arrays: sequential (blocks of 8, 4, 2, 1 lanes), and
     * OpenMP with 2 threads (other block widths) */
    for (int k = 0; k < 2; ++k) {
        a = make_sim(NS_BACKEND_CPU, k ? NS_HINES_OPENMP : NS_HINES_SEQUENTIAL, cells);
        b = make_sim(NS_BACKEND_CPU, NS_HINES_SEQUENTIAL, cells);
        if (a && b) run_parts(a, b, 1, NULL, k ? "cpu openmp parts" : "cpu sequential parts");
        ns_sim_destroy(a);
        ns_sim_destroy(b);
    }
    int devices = 0;
#ifdef NS_HAVE_CUDA
    if (ns_cuda_device_count(&devices) == NS_OK && devices > 0) {
        /* onchip: 150 cells of 4 shapes, each shape its own group; tree: one
         * population-wide group in tree order */
        const ns_hines_method methods[2] = {NS_HINES_ONCHIP, NS_HINES_TREE};
        for (int k = 0; k < 2; ++k) {
            a = make_sim(NS_BACKEND_CUDA, methods[k], cells);
            b = make_sim(NS_BACKEND_CUDA, methods[k], cells);
            if (a && b) run_device(a, b, methods[k] == NS_HINES_ONCHIP ? "gpu onchip" : "gpu tree");
            ns_sim_destroy(a);
            ns_sim_destroy(b);
            /* the loop's own arrays on a stream of the caller's: against the
             * same GPU loop (bit for bit) and against the CPU loop */
            cudaStream_t q = NULL;
            CHECK(cudaStreamCreateWithFlags(&q, cudaStreamNonBlocking) == cudaSuccess);
            for (int twin_cpu = 0; twin_cpu < 2; ++twin_cpu) {
                a = make_sim(NS_BACKEND_CUDA, methods[k], cells);
                b = twin_cpu ? make_sim(NS_BACKEND_CPU, NS_HINES_SEQUENTIAL, cells)
                             : make_sim(NS_BACKEND_CUDA, methods[k], cells);
                if (a && b)
                    run_parts(a, b, !twin_cpu, q, methods[k] == NS_HINES_ONCHIP ? "gpu onchip parts" : "gpu tree parts");
                ns_sim_destroy(a);
                ns_sim_destroy(b);
            }
            if (k == 0) { /* a model file's mechanisms */
                model_parts(cells, NS_BACKEND_CUDA, q);
                model_param_write(cells, q);
            }
            cudaStreamDestroy(q);
        }
    }
#endif
    if (devices == 0) printf("GPU part SKIPPED: no GPU\n");
    for (int k = 0; k < N_FILES; ++k) ns_cell_destroy(cells[k]);
    return check_summary("test_sim_state");
}
