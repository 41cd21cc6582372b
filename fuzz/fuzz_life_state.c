/* libFuzzer target: a LiFE fit's resumable state (ns_life_fit_state_load, src/life/fit_state.c),
 * then the fit it belongs to resumed from it. The first input byte is a mode: bit 0 writes the
 * payload's true checksum into the header, bit 1 the fingerprint of this target's own fit (for
 * the solver the header names), so that mutations reach the values and the resumed solvers
 * instead of stopping at the checksum or at the fingerprint check. A state that loads must save
 * back to the same bytes, and a fit resumed from it must end with finite weights >= 0 or a
 * clear refusal. The fit is a small synthetic model (30 fibers, 8 directions, a 4 x 4 x 4 grid)
 * and its SBBNNLS and group fits (3 groups); the seeds are their states after 2 and 5 updates
 * (fuzz/corpus/life_state/, made by fuzz_life_state_seed: docs/fuzzing.md). */

#include "fuzz_file.h" /* first: it sets _POSIX_C_SOURCE */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "neurosolve/neurosolve.h"

#define HEADER 72 /* fit_state.c's layout */
#define FIBERS 30

typedef struct fixture {
    ns_life_model_t *model;
    ns_life_engine_t *engine;
    int32_t groups[FIBERS];
    uint64_t fingerprint[2]; /* per solver: 0 SBBNNLS, 1 group */
} fixture;

static void fit_options(const fixture *fx, int group, int32_t iters, ns_life_fit_state_t *state,
                        ns_life_fit_options *o) {
    ns_life_fit_options_init(o);
    o->max_iterations = iters;
    o->tol_gradient = o->tol_objective = o->rtol_gradient = o->rtol_objective = 0;
    o->ridge = 0.05;
    if (group) o->group = 0.5, o->groups = fx->groups;
    o->state = state;
}

/* Runs `iters` iterations of a solver into a new state (saved to path when given). */
static ns_status fit_to_state(fixture *fx, int group, int32_t iters, const char *path) {
    ns_life_fit_state_t *state = NULL;
    ns_status s = ns_life_fit_state_create(&state);
    double w[FIBERS], hist[16];
    ns_life_fit_options o;
    fit_options(fx, group, iters, state, &o);
    if (s == NS_OK) s = ns_life_fit(fx->engine, &o, w, hist, NULL);
    if (s == NS_OK && path) s = ns_life_fit_state_save(state, path);
    ns_life_fit_state_destroy(state);
    return s;
}

static fixture *get_fixture(void) {
    static fixture fx;
    static int ready = 0;
    if (ready) return ready > 0 ? &fx : NULL;
    ready = -1;
    ns_life_synth_options so;
    ns_life_synth_options_init(&so);
    so.n_theta = 8, so.dictionary_l = 4, so.n_fibers = FIBERS, so.mean_length = 4;
    so.grid[0] = so.grid[1] = so.grid[2] = 4;
    ns_life_options lo;
    ns_life_options_init(&lo);
    lo.backend = NS_BACKEND_CPU;
    lo.threads = 1;
    if (ns_life_synth(&so, &fx.model) != NS_OK || ns_life_engine_create(fx.model, &lo, &fx.engine) != NS_OK)
        return NULL;
    for (int i = 0; i < FIBERS; ++i) fx.groups[i] = i % 3;
    /* the fingerprints: each solver's state after one update */
    for (int g = 0; g < 2; ++g) {
        const char *path = fuzz_file("lifestate_fp", ".bin", (const uint8_t *)"", 0);
        unsigned char hb[HEADER];
        FILE *f = NULL;
        const int ok = path && fit_to_state(&fx, g, 2, path) == NS_OK && (f = fopen(path, "rb")) &&
                       fread(hb, 1, HEADER, f) == HEADER;
        if (f) fclose(f);
        if (path) unlink(path);
        if (!ok) return NULL;
        memcpy(&fx.fingerprint[g], hb + 40, 8);
    }
    ready = 1;
    return &fx;
}

/* The whole file as bytes; NULL on failure. */
static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t cap = 0;
    *n = 0;
    for (;;) {
        if (*n == cap) {
            uint8_t *b = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!b) break;
            buf = b;
        }
        const size_t got = fread(buf + *n, 1, cap - *n, f);
        if (got == 0) break;
        *n += got;
    }
    fclose(f);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fixture *fx = get_fixture();
    if (!fx || size < 1) return 0;
    const int mode = data[0];
    ++data, --size;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if ((mode & 2) && size >= HEADER) { /* this fit's fingerprint for the solver in the header */
        uint32_t solver = 0;
        memcpy(&solver, copy + 56, 4);
        memcpy(copy + 40, &fx->fingerprint[solver == 1], 8);
    }
    if ((mode & 1) && size >= HEADER) { /* FNV-1a 64 of the payload into bytes 32..39 */
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t i = HEADER; i < size; ++i) h = (h ^ copy[i]) * 0x100000001b3ULL;
        memcpy(copy + 32, &h, 8);
    }
    const char *path = fuzz_file("lifestate", ".bin", copy, size);
    ns_life_fit_state_t *state = NULL;
    if (!path || ns_life_fit_state_load(path, &state) != NS_OK) {
        if (path) unlink(path);
        if (state) abort(); /* nothing returned on a refusal */
        free(copy);
        return 0;
    }
    unlink(path);
    /* a state that loads saves back to the same bytes */
    const char *again = fuzz_file("lifestate_again", ".bin", (const uint8_t *)"", 0);
    size_t n = 0;
    uint8_t *back = NULL;
    if (again && ns_life_fit_state_save(state, again) == NS_OK) back = slurp(again, &n);
    if (again) unlink(again);
    if (!back || n != size || memcmp(back, copy, size) != 0) abort();
    free(back);
    free(copy);
    /* the fit it belongs to, resumed for 2 more updates: refused, or finite weights >= 0 */
    const int32_t updates = ns_life_fit_state_updates(state);
    double w[FIBERS];
    double *hist = malloc(((size_t)updates + 3) * sizeof *hist);
    uint32_t solver = 0;
    memcpy(&solver, data + 56, 4);
    ns_life_fit_options o;
    fit_options(fx, solver == 1, updates + 3, state, &o);
    if (hist && ns_life_fit(fx->engine, &o, w, hist, NULL) == NS_OK) {
        if (ns_life_fit_state_updates(state) < updates) abort();
        for (int i = 0; i < FIBERS; ++i)
            if (!(isfinite(w[i]) && w[i] >= 0)) abort();
    }
    free(hist);
    ns_life_fit_state_destroy(state);
    return 0;
}

#ifdef FUZZ_LIFE_STATE_SEED
/* fuzz_life_state_seed DIR: writes the seeds (each solver's state after 2 and 5 updates, with
 * mode bytes 0 and 3). */
int main(int argc, char **argv) {
    fixture *fx = get_fixture();
    if (!fx || argc < 2) {
        fprintf(stderr, "fuzz_life_state_seed DIR: %s\n", fx ? "no DIR" : ns_last_error());
        return 1;
    }
    static const char *const names[2] = {"sbbnnls", "group"};
    for (int g = 0; g < 2; ++g)
        for (int32_t it = 3; it <= 6; it += 3) { /* max_iterations it: it - 1 updates */
            char tmp[512], out[512];
            snprintf(tmp, sizeof tmp, "%s/.seed.bin", argv[1]);
            if (fit_to_state(fx, g, it, tmp) != NS_OK) {
                fprintf(stderr, "fuzz_life_state_seed: %s\n", ns_last_error());
                return 1;
            }
            size_t n = 0;
            uint8_t *b = slurp(tmp, &n);
            unlink(tmp);
            if (!b) return 1;
            for (int mode = 0; mode < 4; mode += 3) {
                snprintf(out, sizeof out, "%s/%s_%d_mode%d", argv[1], names[g], (int)it - 1, mode);
                FILE *f = fopen(out, "wb");
                if (!f) return 1;
                fputc(mode, f);
                fwrite(b, 1, n, f);
                fclose(f);
            }
            free(b);
        }
    return 0;
}
#endif
