/* Checkpoints of a simulation on the CPU (docs/simulation.md, "Checkpoints"):
 *   1. a run saved at two times, then resumed from each in a new simulation,
 *      ends bit for bit where the uninterrupted run ends (traces, spikes,
 *      v and gates, t), sequential and OpenMP, a mixed population with
 *      record_every 3 and a save between two recorded samples;
 *   2. refusals: another parameter set, another population, other recording
 *      sites, other stimuli, a truncated file, a flipped byte, a file that
 *      is no checkpoint, a missing file, and under a valid checksum a t that
 *      is not the steps', a gate outside [0, 1], NaN in v or a trace, spike
 *      times negative, NaN or past t; the simulation is unchanged after
 *      each;
 *   3. ns_sim_set_state refuses non-finite values; a failed run is not saved;
 *   4. a NaN stop keeps the samples and spikes every cell reached before it
 *      (they equal those of a run without the faulty cell). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

#include "checkpoint_common.h"
#include "test_tmpdir.h"

enum { STEPS = 1600, SAVE1 = 517, SAVE2 = 1100, EVERY = 3, CELLS = 9, SHAPES = 2 };

static ns_cell_t *cells[SHAPES];

static ns_sim_t *make(ns_hines_method method, double celsius) {
    return ck_make_sim(NS_BACKEND_CPU, method, SHAPES, cells, CELLS, EVERY, celsius);
}

static void test_resume(ns_hines_method method) {
    ns_sim_t *ref = make(method, 6.3), *run = make(method, 6.3);
    if (!ref || !run) goto out;
    CHECK_OK(ns_sim_advance(ref, STEPS));
    /* the interrupted run: saves at SAVE1 and SAVE2, goes on */
    CHECK_OK(ns_sim_advance(run, SAVE1));
    CHECK_OK(ns_sim_save_state(run, tmp("a.ckpt"))); /* names copied into files[] below */
    CHECK_OK(ns_sim_advance(run, SAVE2 - SAVE1));
    CHECK_OK(ns_sim_save_state(run, tmp("b.ckpt")));
    char files[2][512];
    snprintf(files[0], sizeof files[0], "%s", tmp("a.ckpt"));
    snprintf(files[1], sizeof files[1], "%s", tmp("b.ckpt"));
    const int64_t at[2] = {SAVE1, SAVE2};
    int64_t spikes = 0;
    for (int64_t c = 0; c < CELLS; ++c) {
        int64_t cnt;
        ns_sim_spikes(ref, c, &cnt);
        spikes += cnt;
    }
    CHECK_MSG(spikes > CELLS, "%lld spikes: the test needs spiking cells", (long long)spikes);
    for (int k = 0; k < 2; ++k) {
        ns_sim_t *res = make(method, 6.3);
        if (!res) continue;
        CHECK_OK(ns_sim_restore_state(res, files[k]));
        CHECK(ns_sim_step_count(res) == at[k]);
        int64_t samples;
        ns_sim_traces(res, &samples, NULL);
        CHECK(samples == at[k] / EVERY + 1);
        /* in two calls, so that the resumed run also crosses a call boundary */
        CHECK_OK(ns_sim_advance(res, 100));
        CHECK_OK(ns_sim_advance(res, STEPS - at[k] - 100));
        int bitwise = 0;
        const double worst = ck_compare(ref, res, SHAPES, cells, &bitwise);
        CHECK_MSG(worst == 0.0 && bitwise, "%s, resumed at step %lld: differs from the uninterrupted run by %g",
                  ns_hines_method_name(method), (long long)at[k], worst);
        ns_sim_destroy(res);
    }
    /* a checkpoint of a sequential run resumes under OpenMP and vice versa */
    ns_sim_t *other = make(method == NS_HINES_SEQUENTIAL ? NS_HINES_OPENMP : NS_HINES_SEQUENTIAL, 6.3);
    if (other) {
        CHECK_OK(ns_sim_restore_state(other, files[0]));
        CHECK_OK(ns_sim_advance(other, STEPS - SAVE1));
        int bitwise = 0;
        CHECK(ck_compare(ref, other, SHAPES, cells, &bitwise) == 0.0 && bitwise);
        ns_sim_destroy(other);
    }
out:
    ns_sim_destroy(ref);
    ns_sim_destroy(run);
}

static int copy_file(const char *from, const char *to, long keep, long flip) {
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    if (!f || !g) {
        if (f) fclose(f);
        if (g) fclose(g);
        return -1;
    }
    long i = 0;
    for (int ch; (ch = fgetc(f)) != EOF && (keep < 0 || i < keep); ++i) fputc(i == flip ? ch ^ 0x10 : ch, g);
    fclose(f);
    fclose(g);
    return 0;
}

/* A copy of `from` with the f64 at payload offset `at` replaced by `value`
 * and the checksum rewritten: damaged contents under a valid checksum. */
static int patch_f64(const char *from, const char *to, long at, double value) {
    FILE *f = fopen(from, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)size);
    const int ok = b && fread(b, 1, (size_t)size, f) == (size_t)size && 96 + at + 8 <= size;
    fclose(f);
    if (!ok) {
        free(b);
        return -1;
    }
    memcpy(b + 96 + at, &value, 8);
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 of the payload (src/sim/checkpoint.c) */
    for (long i = 96; i < size; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
    memcpy(b + 32, &h, 8);
    FILE *g = fopen(to, "wb");
    const int w = g && fwrite(b, 1, (size_t)size, g) == (size_t)size;
    if (g) fclose(g);
    free(b);
    return w ? 0 : -1;
}

/* Version 2's payload: t, steps, samples, the count of state variables and
 * their names (i64 length, bytes), then per cell the values of each. The
 * offset of the first value, the count, and the index of `name` (-1). */
static long values_at(const char *file, long *vars, const char *name, long *index) {
    FILE *f = fopen(file, "rb");
    long at = -1;
    *index = -1;
    int64_t n = 0;
    if (f && fseek(f, 96 + 24, SEEK_SET) == 0 && fread(&n, 8, 1, f) == 1 && n > 0 && n < 1000) {
        at = 96 + 32;
        for (int64_t k = 0; k < n && at >= 0; ++k) {
            int64_t len = 0;
            char buf[64] = {0};
            if (fread(&len, 8, 1, f) != 1 || len < 1 || len > 63 || fread(buf, 1, (size_t)len, f) != (size_t)len) at = -1;
            else if (strcmp(buf, name) == 0) *index = (long)k;
            if (at >= 0) at += 8 + (long)len;
        }
    }
    if (f) fclose(f);
    *vars = (long)n;
    return at < 0 ? -1 : at - 96;
}

/* The restore fails with `status` and a message holding `what`, and leaves
 * the simulation where it was (step 0, one sample). */
static void refused(ns_sim_t *sim, const char *file, ns_status status, const char *what) {
    if (!sim) return;
    const ns_status st = ns_sim_restore_state(sim, file);
    CHECK_MSG(st == status && strstr(ns_last_error(), what) && strstr(ns_last_error(), file),
              "restore of %s: status %d (expected %d), message '%s' (expected '%s')", file, (int)st, (int)status,
              ns_last_error(), what);
    int64_t samples;
    ns_sim_traces(sim, &samples, NULL);
    CHECK(ns_sim_step_count(sim) == 0 && ns_sim_time(sim) == 0.0 && samples == 1);
}

static void test_refusals(void) {
    ns_sim_t *run = make(NS_HINES_SEQUENTIAL, 6.3);
    if (!run) return;
    CHECK_OK(ns_sim_advance(run, 200));
    char good[512];
    snprintf(good, sizeof good, "%s", tmp("good.ckpt"));
    CHECK_OK(ns_sim_save_state(run, good));
    ns_sim_destroy(run);

    ns_sim_t *warm = make(NS_HINES_SEQUENTIAL, 20.0); /* another parameter set */
    refused(warm, good, NS_ERR_INVALID_ARGUMENT, "parameters");
    ns_sim_destroy(warm);
    ns_sim_t *more = ck_make_sim(NS_BACKEND_CPU, NS_HINES_SEQUENTIAL, SHAPES, cells, CELLS + 1, EVERY, 6.3);
    refused(more, good, NS_ERR_INVALID_ARGUMENT, "made for 9 cells");
    ns_sim_destroy(more);
    ns_sim_t *every = ck_make_sim(NS_BACKEND_CPU, NS_HINES_SEQUENTIAL, SHAPES, cells, CELLS, EVERY + 1, 6.3);
    refused(every, good, NS_ERR_INVALID_ARGUMENT, "recording sites");
    ns_sim_destroy(every);
    ns_sim_t *stim = make(NS_HINES_SEQUENTIAL, 6.3);
    if (stim) CHECK_OK(ns_sim_add_iclamp(stim, 0, 0, 1.0, 1.0, 0.1));
    refused(stim, good, NS_ERR_INVALID_ARGUMENT, "stimuli");
    ns_sim_destroy(stim);

    ns_sim_t *sim = make(NS_HINES_SEQUENTIAL, 6.3);
    FILE *f = fopen(good, "rb");
    long size = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fclose(f);
    }
    CHECK(size > 96);
    CHECK(copy_file(good, tmp("short.ckpt"), size - 8, -1) == 0);
    refused(sim, tmp("short.ckpt"), NS_ERR_PARSE, "truncated");
    CHECK(copy_file(good, tmp("head.ckpt"), 50, -1) == 0);
    refused(sim, tmp("head.ckpt"), NS_ERR_PARSE, "header");
    CHECK(copy_file(good, tmp("flip.ckpt"), -1, size / 2) == 0);
    refused(sim, tmp("flip.ckpt"), NS_ERR_PARSE, "checksum");
    CHECK(copy_file(good, tmp("magic.ckpt"), -1, 2) == 0);
    refused(sim, tmp("magic.ckpt"), NS_ERR_PARSE, "not a neurosolve simulation checkpoint");
    CHECK(copy_file(good, tmp("version.ckpt"), -1, 8) == 0);
    refused(sim, tmp("version.ckpt"), NS_ERR_UNSUPPORTED, "version");
    refused(sim, tmp("missing.ckpt"), NS_ERR_IO, "No such file");
    /* issue 47: values that passed a valid checksum into spikes.csv and
     * traces.csv (payload: t, steps, samples, the state variables' names,
     * their values per cell, the traces, per cell the spike count and times) */
    long vars = 0, m_index = -1;
    const long values = values_at(good, &vars, "m_hh", &m_index);
    CHECK_MSG(values > 24 && vars >= 4 && m_index > 0, "the state's names: %ld variables, m_hh at %ld", vars, m_index);
    if (sim && values > 24) {
        const long comps = (long)ns_sim_compartments(sim), n0 = (long)ns_tree_size(ns_cell_tree(cells[0]));
        int64_t samples = 0;
        int32_t sites = 0;
        ns_sim_traces(sim, &samples, &sites);
        const long traces = values + 8 * vars * comps, spikes0 = traces + 8 * (200 / EVERY + 1) * (long)sites;
        CHECK(patch_f64(good, tmp("t.ckpt"), 0, 1.0) == 0);
        refused(sim, tmp("t.ckpt"), NS_ERR_PARSE, "t = 1 ms is not 200 steps of dt = 0.025 ms");
        CHECK(patch_f64(good, tmp("t2.ckpt"), 0, 5.0 * (1 + 1e-9)) == 0);
        refused(sim, tmp("t2.ckpt"), NS_ERR_PARSE, "is not 200 steps");
        /* m_hh of cell 0 at compartment 0 (a zero-area node: no hh, NaN) and at its soma */
        CHECK(patch_f64(good, tmp("nogate.ckpt"), values + 8 * n0 * m_index, 0.5) == 0);
        refused(sim, tmp("nogate.ckpt"), NS_ERR_PARSE, "cell 0, compartment 0: m_hh = 0.5 (the mechanism is not inserted");
        const long soma = (long)ns_sim_spike_compartment(sim, 0);
        CHECK(patch_f64(good, tmp("gate.ckpt"), values + 8 * (n0 * m_index + soma), INFINITY) == 0);
        char what[80];
        snprintf(what, sizeof what, "cell 0, compartment %ld: m_hh = inf (not finite)", soma);
        refused(sim, tmp("gate.ckpt"), NS_ERR_PARSE, what);
        CHECK(patch_f64(good, tmp("v.ckpt"), values, NAN) == 0);
        refused(sim, tmp("v.ckpt"), NS_ERR_PARSE, "cell 0, compartment 0: v = nan (not finite)");
        CHECK(patch_f64(good, tmp("trace.ckpt"), traces + 8, NAN) == 0);
        refused(sim, tmp("trace.ckpt"), NS_ERR_PARSE, "trace sample 0 of site 1 is nan");
        /* cell 0's first spike (it spikes by 5 ms: checked) */
        int64_t n_sp = 0;
        ns_sim_t *chk = make(NS_HINES_SEQUENTIAL, 6.3);
        if (chk) {
            CHECK_OK(ns_sim_restore_state(chk, good));
            ns_sim_spikes(chk, 0, &n_sp);
        }
        ns_sim_destroy(chk);
        CHECK(n_sp > 0);
        CHECK(patch_f64(good, tmp("spike.ckpt"), spikes0 + 8, -1.0) == 0);
        refused(sim, tmp("spike.ckpt"), NS_ERR_PARSE, "cell 0: spike 0 at -1 ms");
        CHECK(patch_f64(good, tmp("spike2.ckpt"), spikes0 + 8, NAN) == 0);
        refused(sim, tmp("spike2.ckpt"), NS_ERR_PARSE, "cell 0: spike 0 at nan ms");
        CHECK(patch_f64(good, tmp("spike3.ckpt"), spikes0 + 8, 6.0) == 0);
        refused(sim, tmp("spike3.ckpt"), NS_ERR_PARSE, "in order in [0, t = 5 ms]");
    }
    /* and the good one still restores into it */
    if (sim) {
        CHECK_OK(ns_sim_restore_state(sim, good));
        CHECK(ns_sim_step_count(sim) == 200);
    }
    ns_sim_destroy(sim);
}

static void test_set_state_and_failure(void) {
    ns_sim_t *sim = make(NS_HINES_SEQUENTIAL, 6.3);
    if (!sim) return;
    const int32_t n = ns_tree_size(ns_cell_tree(cells[0]));
    double *v = calloc((size_t)n, sizeof *v);
    if (v) {
        CHECK_OK(ns_sim_get_state(sim, 0, v));
        v[n / 2] = NAN;
        CHECK(ns_sim_set_state(sim, 0, v) == NS_ERR_NOT_FINITE);
        CHECK(strstr(ns_last_error(), "cell 0") && strstr(ns_last_error(), "v = nan"));
        v[n / 2] = -30.0;
        CHECK_OK(ns_sim_set_state(sim, 0, v));
        double *w = calloc((size_t)n, sizeof *w);
        if (w) {
            CHECK_OK(ns_sim_get_state(sim, 0, w));
            CHECK(w[n / 2] == -30.0);
            free(w);
        }
        CHECK(ns_sim_set_state(sim, CELLS, v) == NS_ERR_INVALID_ARGUMENT);
        /* a stimulus with a non-finite value names its cell and compartment */
        CHECK(ns_sim_add_iclamp(sim, 4, 2, 1.0, NAN, 0.1) == NS_ERR_INVALID_ARGUMENT);
        CHECK_MSG(strstr(ns_last_error(), "IClamp in cell 4, compartment 2: del = 1 ms, dur = nan ms") != NULL, "%s",
                  ns_last_error());
    }
    free(v);
    /* a current that overflows v in cell 1 at t = 2 ms */
    CHECK_OK(ns_sim_add_iclamp(sim, 1, ns_tree_size(ns_cell_tree(cells[1])) - 1, 2.0, 1.0, 1e308));
    CHECK(ns_sim_advance(sim, 400) == NS_ERR_NOT_FINITE);
    CHECK(ns_sim_save_state(sim, tmp("failed.ckpt")) == NS_ERR_NOT_FINITE);
    CHECK(strstr(ns_last_error(), "failed.ckpt") != NULL);
    FILE *f = fopen(tmp("failed.ckpt"), "rb");
    CHECK(f == NULL);
    if (f) fclose(f);
    ns_sim_destroy(sim);
}

/* A NaN in cell 1 at t = 2 ms: the samples and spikes before it are kept and
 * equal those of the same run without the faulty clamp. */
static void test_partial_on_nan(void) {
    ns_sim_t *bad = make(NS_HINES_OPENMP, 6.3), *clean = make(NS_HINES_OPENMP, 6.3);
    if (!bad || !clean) goto out;
    CHECK_OK(ns_sim_advance(clean, 400));
    CHECK_OK(ns_sim_advance(bad, 30));
    CHECK_OK(ns_sim_add_iclamp(bad, 1, ns_tree_size(ns_cell_tree(cells[1])) - 1, 2.0, 1.0, 1e308));
    CHECK(ns_sim_advance(bad, 370) == NS_ERR_NOT_FINITE);
    int64_t samples, s_clean;
    int32_t sites;
    const double *tb = ns_sim_traces(bad, &samples, &sites), *tc = ns_sim_traces(clean, &s_clean, NULL);
    /* the clamp starts in step 81 (t = 2.0125 at its middle): every cell
     * reached step 80, samples 0 .. 80 / 3 */
    CHECK_MSG(samples == 80 / EVERY + 1, "%lld samples kept, expected %d", (long long)samples, 80 / EVERY + 1);
    CHECK(samples <= s_clean && memcmp(tb, tc, (size_t)samples * (size_t)sites * sizeof *tb) == 0);
    for (int64_t c = 0; c < CELLS; ++c) {
        int64_t nb, nc;
        const double *pb = ns_sim_spikes(bad, c, &nb), *pc = ns_sim_spikes(clean, c, &nc);
        int64_t before = 0;
        for (int64_t q = 0; q < nc; ++q) before += pc[q] <= 2.0;
        CHECK_MSG(nb == before && (nb == 0 || memcmp(pb, pc, (size_t)nb * sizeof *pb) == 0),
                  "cell %lld: %lld spikes kept, %lld before t = 2 ms", (long long)c, (long long)nb,
                  (long long)before);
    }
out:
    ns_sim_destroy(bad);
    ns_sim_destroy(clean);
}

int main(void) {
    if (tmpdir_make("ns_checkpoint") != 0) return 1;
    if (ck_read_cells(SHAPES, cells) != 0) return check_summary("test_cable_checkpoint");
    test_resume(NS_HINES_SEQUENTIAL);
    test_resume(NS_HINES_OPENMP);
    test_refusals();
    test_set_state_and_failure();
    test_partial_on_nan();
    for (int k = 0; k < SHAPES; ++k) ns_cell_destroy(cells[k]);
    tmpdir_remove();
    return check_summary("test_cable_checkpoint");
}
