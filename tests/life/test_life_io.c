#define _XOPEN_SOURCE 700
/* LiFE model I/O and bad input: NPY round trip, and every kind of bad
 * input failing with its status and a detail naming the array (file) and
 * the first offending entry. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "test_life_common.h"

static char dir[256];

static void path(char *out, const char *name) { snprintf(out, 512, "%s/%s", dir, name); }

/* A raw NPY file with a given descr and 1-D length (data zeros). */
static void write_raw(const char *name, const char *descr, long n, size_t item) {
    char p[512], dict[200];
    path(p, name);
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%ld,), }", descr, n);
    int total = (10 + len + 1 + 63) / 64 * 64;
    FILE *f = fopen(p, "wb");
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc((total - 10) & 0xff, f);
    fputc((total - 10) >> 8, f);
    fwrite(dict, 1, (size_t)len, f);
    for (int i = 10 + len; i < total - 1; ++i) fputc(' ', f);
    fputc('\n', f);
    for (size_t i = 0; i < (size_t)n * item; ++i) fputc(0, f);
    fclose(f);
}

/* Save the model, apply a corruption, load: expect status and detail. */
static void expect_load(ns_life_model_t *m, void (*corrupt)(ns_life_model_t *), ns_status want,
                        const char *detail) {
    CHECK_OK(ns_life_model_save(m, dir));
    corrupt(m);
    ns_life_model_t *back = NULL;
    const ns_status s = ns_life_model_load(dir, &back);
    CHECK_MSG(s == want, "%s: got %s (%s)", detail, ns_status_string(s), ns_last_error());
    CHECK_MSG(strstr(ns_last_error(), detail) != NULL, "detail '%s' not in '%s'", detail, ns_last_error());
    CHECK(back == NULL);
    ns_life_model_destroy(back);
}


static void c_voxel(ns_life_model_t *m) {
    (void)m;
    ns_life_model_t *t = NULL;
    ns_life_model_load(dir, &t);
    ns_life_model_voxel(t)[5] = ns_life_model_n_voxels(t) + 3;
    ns_life_model_save(t, dir);
    ns_life_model_destroy(t);
}
static void c_atom_neg(ns_life_model_t *m) {
    (void)m;
    ns_life_model_t *t = NULL;
    ns_life_model_load(dir, &t);
    ns_life_model_atom(t)[2] = -1;
    ns_life_model_save(t, dir);
    ns_life_model_destroy(t);
}
static void c_nan_dict(ns_life_model_t *m) {
    (void)m;
    ns_life_model_t *t = NULL;
    ns_life_model_load(dir, &t);
    ns_life_model_dictionary(t)[ns_life_model_n_theta(t) * 4 + 1] = NAN;
    ns_life_model_save(t, dir);
    ns_life_model_destroy(t);
}
static void c_inf_signal(ns_life_model_t *m) {
    (void)m;
    ns_life_model_t *t = NULL;
    ns_life_model_load(dir, &t);
    ns_life_model_signal(t)[3] = INFINITY;
    ns_life_model_save(t, dir);
    ns_life_model_destroy(t);
}
static void c_dtype(ns_life_model_t *m) {
    write_raw("phi_atom.npy", "<i8", (long)ns_life_model_n_coeffs(m), 8);
}
static void c_bigendian(ns_life_model_t *m) {
    write_raw("phi_value.npy", ">f8", (long)ns_life_model_n_coeffs(m), 8);
}
static void c_length(ns_life_model_t *m) {
    write_raw("phi_value.npy", "<f8", (long)ns_life_model_n_coeffs(m) - 1, 8);
}
static void c_truncate(ns_life_model_t *m) {
    (void)m;
    char p[512];
    path(p, "signal.npy");
    struct stat st;
    stat(p, &st);
    CHECK(truncate(p, st.st_size - 8) == 0);
}
static void c_magic(ns_life_model_t *m) {
    (void)m;
    char p[512];
    path(p, "dictionary.npy");
    FILE *f = fopen(p, "w");
    fputs("this is not numpy\n", f);
    fclose(f);
}
static void c_missing(ns_life_model_t *m) {
    (void)m;
    char p[512];
    path(p, "phi_fiber.npy");
    remove(p);
}
static void c_signal_1d(ns_life_model_t *m) {
    char p[512];
    path(p, "signal.npy");
    double v[4] = {0, 0, 0, 0};
    (void)m;
    ns_life_vector_save(p, v, 4);
}
static void c_shape_empty(ns_life_model_t *m) {
    (void)m;
    write_raw("phi_shape.npy", "<i8", 3, 8); /* zeros: no atoms */
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/ns_test_life_io_%d", (int)getpid());
    ns_life_model_t *m = tiny_model(20, 6, 30, 6, 0.05, 17);
    CHECK(m != NULL);
    if (!m) return check_summary("test_life_io");


    /* round trip */
    CHECK_OK(ns_life_model_save(m, dir));
    ns_life_model_t *back = NULL;
    CHECK_OK(ns_life_model_load(dir, &back));
    if (back) {
        const int64_t K = ns_life_model_n_coeffs(m);
        CHECK(ns_life_model_n_coeffs(back) == K);
        CHECK(ns_life_model_n_theta(back) == 20 && ns_life_model_n_atoms(back) == 31);
        CHECK(memcmp(ns_life_model_atom(back), ns_life_model_atom(m), (size_t)K * 4) == 0);
        CHECK(memcmp(ns_life_model_voxel(back), ns_life_model_voxel(m), (size_t)K * 4) == 0);
        CHECK(memcmp(ns_life_model_fiber(back), ns_life_model_fiber(m), (size_t)K * 4) == 0);
        CHECK(memcmp(ns_life_model_value(back), ns_life_model_value(m), (size_t)K * 8) == 0);
        CHECK(memcmp(ns_life_model_dictionary(back), ns_life_model_dictionary(m),
                     (size_t)20 * 31 * 8) == 0);
        CHECK(memcmp(ns_life_model_signal(back), ns_life_model_signal(m),
                     (size_t)20 * ns_life_model_n_voxels(m) * 8) == 0);
        CHECK(ns_life_model_true_weights(back) != NULL &&
              memcmp(ns_life_model_true_weights(back), ns_life_model_true_weights(m),
                     (size_t)ns_life_model_n_fibers(m) * 8) == 0);
    }
    ns_life_model_destroy(back);

    /* vectors */
    char p[512];
    path(p, "w.npy");
    double v[5] = {1, 2, 3, 4, 5}, *r = NULL;
    int64_t n = 0;
    CHECK_OK(ns_life_vector_save(p, v, 5));
    CHECK_OK(ns_life_vector_load(p, &r, &n));
    CHECK(n == 5 && r && r[4] == 5.0);
    free(r);
    path(p, "phi_atom.npy");
    CHECK(ns_life_vector_load(p, &r, &n) == NS_ERR_PARSE);

    /* bad files: each names the file and the first bad entry */
    expect_load(m, c_voxel, NS_ERR_PARSE, "phi_voxel[5]");
    expect_load(m, c_atom_neg, NS_ERR_PARSE, "phi_atom[2] = -1");
    expect_load(m, c_nan_dict, NS_ERR_NOT_FINITE, "dictionary[1, 4]");
    expect_load(m, c_inf_signal, NS_ERR_NOT_FINITE, "signal[3, 0]");
    expect_load(m, c_dtype, NS_ERR_PARSE, "phi_atom.npy: expected a 1-dimensional int32 array, found 1-dimensional int64");
    expect_load(m, c_bigendian, NS_ERR_UNSUPPORTED, "phi_value.npy: dtype '>f8' is not supported");
    expect_load(m, c_length, NS_ERR_SIZE, "phi_value.npy");
    expect_load(m, c_truncate, NS_ERR_PARSE, "signal.npy: header says");
    expect_load(m, c_magic, NS_ERR_PARSE, "dictionary.npy: not an NPY file");
    expect_load(m, c_missing, NS_ERR_IO, "phi_fiber.npy: cannot open");
    expect_load(m, c_signal_1d, NS_ERR_PARSE, "signal.npy: expected a 2-dimensional");
    expect_load(m, c_shape_empty, NS_ERR_EMPTY, "n_atoms = 0");
    CHECK(ns_life_model_load("/nonexistent/model", &back) == NS_ERR_IO);

    /* in-memory models */
    ns_life_model_t *e = NULL;
    CHECK(ns_life_model_create(4, 3, 2, 3, 0, &e) == NS_ERR_EMPTY && e == NULL);
    CHECK(ns_life_model_create(0, 3, 2, 3, 4, &e) == NS_ERR_EMPTY);
    CHECK_OK(ns_life_model_create(4, 3, 2, 3, 4, &e));
    if (e) {
        /* fibers 0, 1, 1, 0: fiber 2 has no coefficients */
        const int32_t fib[4] = {0, 1, 1, 0};
        memcpy(ns_life_model_fiber(e), fib, sizeof fib);
        for (int k = 0; k < 4; ++k) ns_life_model_value(e)[k] = 1.0;
        CHECK(ns_life_model_validate(e) == NS_ERR_EMPTY);
        CHECK(strstr(ns_last_error(), "fiber 2 has no coefficients") != NULL);
        ns_life_engine_t *eng = NULL;
        ns_life_model_fiber(e)[3] = 2;
        CHECK_OK(ns_life_model_validate(e));
        ns_life_model_value(e)[1] = NAN;
        CHECK(ns_life_model_validate(e) == NS_ERR_NOT_FINITE);
        CHECK(strstr(ns_last_error(), "phi_value[1]") != NULL);
        ns_life_model_value(e)[1] = 1.0;
        double neg[3] = {1, -1, 0};
        CHECK_OK(ns_life_model_set_true_weights(e, neg));
        CHECK(ns_life_model_validate(e) == NS_ERR_PARSE);
        /* an all-zero dictionary: the preconditioner has nothing to scale by */
        ns_life_options o;
        ns_life_options_init(&o);
        o.backend = NS_BACKEND_CPU;
        CHECK_OK(ns_life_engine_create(e, &o, &eng));
        ns_life_fit_options fo;
        ns_life_fit_options_init(&fo);
        fo.preconditioner = 1;
        double w[3];
        CHECK(ns_life_fit(eng, &fo, w, NULL, NULL) == NS_ERR_SINGULAR);
        /* without it the zero model is solved at once (gradient 0) */
        fo.preconditioner = 0;
        ns_life_fit_result res;
        CHECK_OK(ns_life_fit(eng, &fo, w, NULL, &res));
        CHECK(res.stop == NS_LIFE_STOP_GRADIENT && w[0] == 0.0);
        ns_life_engine_destroy(eng);
        /* the CUDA backend without CUDA or without a GPU */
        o.backend = NS_BACKEND_CUDA;
        const ns_status s = ns_life_engine_create(e, &o, &eng);
        CHECK(s == NS_ERR_UNSUPPORTED || s == NS_ERR_NO_DEVICE || s == NS_OK);
        ns_life_engine_destroy(eng);
        o.backend = NS_BACKEND_CPU;
        o.threads = -2;
        CHECK(ns_life_engine_create(e, &o, &eng) == NS_ERR_INVALID_ARGUMENT);
        ns_life_variant var;
        CHECK(ns_life_variant_from_name("voxel-voxel", &var) == NS_OK && var == NS_LIFE_VOXEL_VOXEL);
        CHECK(ns_life_variant_from_name("fast", &var) == NS_ERR_INVALID_ARGUMENT);
    }
    ns_life_model_destroy(e);
    /* synth options out of range */
    ns_life_synth_options so;
    ns_life_synth_options_init(&so);
    so.n_fibers = 0;
    CHECK(ns_life_synth(&so, &e) == NS_ERR_EMPTY);
    ns_life_synth_options_init(&so);
    so.step = -1;
    CHECK(ns_life_synth(&so, &e) == NS_ERR_INVALID_ARGUMENT);

    ns_life_model_destroy(m);
    /* clean up */
    const char *files[] = {"phi_shape.npy", "phi_atom.npy", "phi_voxel.npy", "phi_fiber.npy",
                           "phi_value.npy", "dictionary.npy", "signal.npy", "w_true.npy", "w.npy"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
        path(p, files[i]);
        remove(p);
    }
    rmdir(dir);
    return check_summary("test_life_io");
}
