/* libFuzzer target: a simulation checkpoint (ns_sim_restore_state) restored
 * into a fixed small simulation (two cells of a soma and a forked dendrite,
 * a clamp, two recording sites), then 5 steps. The first input byte is a
 * mode: when odd, the target writes the payload's true checksum into the
 * header first, so that mutations reach the payload's parsing instead of
 * stopping at the checksum. The seeds are checkpoints of this simulation
 * (fuzz/corpus/checkpoint/, made by fuzz_checkpoint_seed: docs/fuzzing.md). */

#include "fuzz_file.h" /* first: it sets _POSIX_C_SOURCE */
#include <stdlib.h>
#include <string.h>
#include "neurosolve/neurosolve.h"

static ns_sim_t *fuzz_sim(void) {
    static ns_sim_t *sim = NULL;
    static ns_cell_t *cell = NULL;
    if (sim) return sim;
    ns_morph_point pts[6] = {
        {0, 0, 0, 8.0, NS_SWC_SOMA, -1, 1, 1},      {20, 0, 0, 1.0, NS_SWC_BASAL, 0, 2, 2},
        {40, 0, 0, 0.8, NS_SWC_BASAL, 1, 3, 3},     {60, 10, 0, 0.6, NS_SWC_BASAL, 2, 4, 4},
        {60, -10, 0, 0.6, NS_SWC_BASAL, 2, 5, 5},   {80, 20, 0, 0.5, NS_SWC_BASAL, 3, 6, 6},
    };
    ns_morph_t *m = NULL;
    if (ns_morph_from_points("fuzz", pts, 6, &m) != NS_OK) return NULL;
    ns_status st = ns_discretize(m, NULL, &cell);
    ns_morph_destroy(m);
    if (st != NS_OK) return NULL;
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.method = NS_HINES_SEQUENTIAL;
    o.record_every = 2;
    ns_sim_params p;
    ns_sim_params_init(&p);
    const ns_cell_t *shapes[1] = {cell};
    if (ns_sim_create(1, shapes, 2, NULL, &p, &o, &sim) != NS_OK) return NULL;
    ns_sim_add_iclamp(sim, 0, 0, 0.1, 2.0, 0.5);
    ns_sim_add_recording(sim, 0, 0, NULL);
    ns_sim_add_recording(sim, 1, 1, NULL);
    return sim;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ns_sim_t *sim = fuzz_sim();
    if (!sim || size < 1) return 0;
    const int fix = data[0] & 1;
    ++data, --size;
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    if (fix && size >= 96) { /* FNV-1a 64 of the payload into bytes 32..39 */
        uint64_t h = 0xcbf29ce484222325ULL;
        for (size_t i = 96; i < size; ++i) h = (h ^ copy[i]) * 0x100000001b3ULL;
        memcpy(copy + 32, &h, 8);
    }
    const char *path = fuzz_file("ckpt", ".ckpt", copy, size);
    free(copy);
    if (!path) return 0;
    if (ns_sim_restore_state(sim, path) == NS_OK) (void)ns_sim_advance(sim, 5);
    unlink(path);
    return 0;
}

#ifdef FUZZ_CHECKPOINT_SEED
/* fuzz_checkpoint_seed DIR: writes the seeds (checkpoints of the simulation
 * above at steps 0, 7 and 40, each with mode bytes 0 and 1). */
int main(int argc, char **argv) {
    ns_sim_t *sim = fuzz_sim();
    if (!sim || argc < 2) {
        fprintf(stderr, "fuzz_checkpoint_seed DIR: %s\n", sim ? "no DIR" : ns_last_error());
        return 1;
    }
    const int at[3] = {0, 7, 40};
    for (int k = 0, done = 0; k < 3; ++k) {
        ns_sim_advance(sim, at[k] - done);
        done = at[k];
        char tmp[512], out[512];
        snprintf(tmp, sizeof tmp, "%s/.seed.ckpt", argv[1]);
        if (ns_sim_save_state(sim, tmp) != NS_OK) {
            fprintf(stderr, "fuzz_checkpoint_seed: %s\n", ns_last_error());
            return 1;
        }
        FILE *f = fopen(tmp, "rb");
        if (!f) return 1;
        for (int mode = 0; mode < 2; ++mode) {
            snprintf(out, sizeof out, "%s/step%d_mode%d", argv[1], at[k], mode);
            FILE *g = fopen(out, "wb");
            if (!g) return 1;
            fputc(mode, g);
            rewind(f);
            for (int ch; (ch = fgetc(f)) != EOF;) fputc(ch, g);
            fclose(g);
        }
        fclose(f);
        if (ns_sim_restore_state(sim, tmp) != NS_OK) { /* the seed is a valid checkpoint of it */
            fprintf(stderr, "fuzz_checkpoint_seed: %s\n", ns_last_error());
            return 1;
        }
        unlink(tmp);
    }
    return 0;
}
#endif
