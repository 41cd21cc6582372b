/* life synth DIR --cohort N: a synthetic BIDS derivatives folder for life cohort (ground-truth
 * phantoms and the bundled real case; docs/life.md, "Studies: life cohort"). */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "life_cohort.h"

/* One phantom subject (session): the phantom's files under BIDS names in DIR/KEY-path/dwi. */
static int synth_phantom_unit(const char *root, const char *rel, const char *key, const ns_life_phantom_options *o) {
    char tmp[PATHN], dwi[PATHN], a[PATHN], b[PATHN];
    lc_pathf(tmp, sizeof tmp, "%s/.synth-%s", root, key);
    lc_pathf(dwi, sizeof dwi, "%s/%s/dwi", root, rel);
    lc_remove_tree(tmp);
    ns_status st = ns_life_phantom_write(o, tmp, NULL);
    if (st != NS_OK) return cli_status_error("life synth --cohort", st);
    if (cli_make_dirs(dwi)) return 1;
    static const char *const names[][2] = {
        {"dwi.nii", "space-orig_desc-preproc_dwi.nii"},
        {"dwi.bval", "space-orig_desc-preproc_dwi.bval"},
        {"dwi.bvec", "space-orig_desc-preproc_dwi.bvec"},
        {"tracks.tck", "space-orig_model-phantom_streamlines.tck"},
        {"parcels.nii", "space-orig_seg-phantom_dseg.nii"},
        {"labels.npy", "space-orig_model-phantom_desc-truth_labels.npy"},
        {"kinds.npy", "space-orig_model-phantom_desc-truth_kinds.npy"},
        {"bundles.npy", "space-orig_model-phantom_desc-truth_bundles.npy"}};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof names / sizeof *names; ++i) {
        lc_pathf(a, sizeof a, "%s/%s", tmp, names[i][0]);
        lc_pathf(b, sizeof b, "%s/%s_%s", dwi, key, names[i][1]);
        rc = lc_move_file(a, b);
    }
    lc_remove_tree(tmp);
    return rc;
}

int life_synth_cohort(int argc, char **argv) {
    const char *cmd = "life synth --cohort", *root = argv[1];
    long long subjects = 10, x = 0;
    ns_life_phantom_options o;
    ns_life_phantom_options_init(&o);
    o.n_streamlines = 2000, o.grid = 32;
    for (int i = 2; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (strcmp(a, "--cohort") == 0) ok = cli_parse_long(cmd, a, v, 1, 999, &subjects), ++i;
        else if (strcmp(a, "--streamlines") == 0) ok = cli_parse_long(cmd, a, v, 20, 100000000, &x), o.n_streamlines = (int32_t)x, ++i;
        else if (strcmp(a, "--grid") == 0) ok = cli_parse_long(cmd, a, v, 24, 512, &x), o.grid = (int32_t)x, ++i;
        else if (strcmp(a, "--theta") == 0) ok = cli_parse_long(cmd, a, v, 2, 4096, &x), o.n_directions = (int32_t)x, ++i;
        else if (strcmp(a, "--snr") == 0) ok = cli_parse_double(cmd, a, v, 0, 1e12, &o.snr), ++i;
        else if (strcmp(a, "--seed") == 0) ok = cli_parse_long(cmd, a, v, 0, 1LL << 40, &x), o.seed = (uint64_t)x, ++i;
        else return cli_usage_error(cmd, "unknown option or missing value '%s'", a);
        if (!ok) return 2;
    }
    char data[PATHN], p[PATHN];
    lc_pathf(data, sizeof data, "%s/data/life", NS_SOURCE_DIR);
    const int real = subjects >= 2 && lc_is_dir(data);
    if (cli_make_dirs(root)) return 1;
    const uint64_t seed = o.seed;
    const int32_t base = o.n_streamlines;
    int units = 0;
    for (long long i = 1; i <= subjects; ++i) {
        char sub[32], rel[64], key[64];
        snprintf(sub, sizeof sub, "sub-%02lld", i);
        if (real && i == subjects) { /* the bundled real case (DIPY's small_25, data/life/SOURCES.md) */
            char dwi[PATHN];
            lc_pathf(dwi, sizeof dwi, "%s/%s/dwi", root, sub);
            if (cli_make_dirs(dwi)) return 1;
            static const char *const names[][2] = {{"small_25.nii.gz", "space-orig_desc-preproc_dwi.nii.gz"},
                                                   {"small_25.bval", "space-orig_desc-preproc_dwi.bval"},
                                                   {"small_25.bvec", "space-orig_desc-preproc_dwi.bvec"},
                                                   {"EuDX_small_25.trk", "space-orig_model-eudx_streamlines.trk"}};
            for (size_t k = 0; k < sizeof names / sizeof *names; ++k) {
                char a[PATHN];
                lc_pathf(a, sizeof a, "%s/%s", data, names[k][0]);
                lc_pathf(p, sizeof p, "%s/%s_%s", dwi, sub, names[k][1]);
                if (lc_copy_file(a, p)) return 1;
            }
            ++units;
            continue;
        }
        /* every third subject from the second has two sessions; sizes from 0.75 to 1.25 x --streamlines */
        const int n_ses = i % 3 == 2 ? 2 : 1;
        for (int k = 1; k <= n_ses; ++k) {
            if (n_ses > 1) lc_pathf(rel, sizeof rel, "%s/ses-%d", sub, k), snprintf(key, sizeof key, "%s_ses-%d", sub, k);
            else snprintf(rel, sizeof rel, "%s", sub), snprintf(key, sizeof key, "%s", sub);
            o.seed = seed + 100 * (uint64_t)i + (uint64_t)k;
            const double f = subjects > 2 ? 0.75 + 0.5 * (double)(i - 1) / (double)(subjects - 2) : 1.0;
            o.n_streamlines = (int32_t)fmax(20, floor(base * f));
            if (synth_phantom_unit(root, rel, key, &o)) return 1;
            ++units;
        }
    }
    lc_pathf(p, sizeof p, "%s/dataset_description.json", root);
    ns_output *od = cli_output_open(p);
    FILE *f = ns_output_stream(od);
    if (!f) return 1;
    cli_json j;
    json_begin(&j, f);
    json_string(&j, "Name", "neurosolve synthetic LiFE cohort (ground-truth phantoms and DIPY's small_25)");
    json_string(&j, "BIDSVersion", "1.10.0");
    json_string(&j, "DatasetType", "derivative");
    json_string(&j, "License", "phantoms: generated by neurosolve (src/life/phantom.c); the last subject: DIPY's "
                               "small_25 and EuDX_small_25.trk, BSD 3-clause (data/life/SOURCES.md)");
    lc_json_generated_by(&j, "life synth DIR --cohort N (docs/life.md, \"Studies: life cohort\")");
    json_end(&j);
    if (cli_output_commit(od)) return 1;
    printf("%s: %lld subjects (%d subject-sessions): %lld phantoms of %d-%d streamlines on %d^3 voxels%s\n", root,
           subjects, units, subjects - real, (int)fmax(20, floor(base * (subjects > 2 ? 0.75 : 1.0))),
           (int)fmax(20, floor(base * (subjects > 2 ? 1.25 : 1.0))), (int)o.grid,
           real ? ", and the bundled real case (DIPY's small_25)" : "");
    return 0;
}
