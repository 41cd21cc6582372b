/* All 54 shared morphologies (data/morphologies): each loads or is
 * rejected as docs/swc.md documents, under every policy.
 *
 * The expected numbers are not the reader's output:
 *   points, roots, soma style and soma points come from SOURCES.md (the
 *   "soma" column: single point -> 1, 3-point -> 3, "3 soma pts" and
 *   "multi-point (N pts)" -> multi-point with 3 or N, "contour (N pts)" ->
 *   contour with N, none -> 0);
 *   radii <= 0 come from the SOURCES.md notes;
 *   kept points of the four files with several roots come from an
 *   independent count (union of each point with its parent, then the tree
 *   with the most type-1 points, ties to the larger; the script is in
 *   docs/swc.md). In frag_17545_289roots.swc each of the 11 soma points is
 *   a root of its own, so the kept tree holds one soma point: single point.
 * Each kept point is also compared with the file itself, read here by a
 * separate line-by-line sscanf parser: same id, same parent id, same
 * coordinates, same positive radius; and the order is checked to be a
 * depth-first preorder (every subtree contiguous, children in file order). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/morph.h"

typedef struct shared_file {
    const char *file;
    int64_t points;      /* data lines (SOURCES.md) */
    int64_t roots;       /* parent -1 lines (SOURCES.md) */
    int64_t kept;        /* points kept under NS_ROOTS_KEEP_MAIN */
    ns_soma_style soma;  /* of the kept tree */
    int64_t soma_points; /* type-1 points in the kept tree */
    int64_t nonpositive; /* radii <= 0 (SOURCES.md notes) */
} shared_file;

static const shared_file files[] = {
    {"celegans_M5.swc", 62, 1, 62, NS_SOMA_MULTI_POINT, 2, 0},
    {"celegans_I5_3roots.swc", 109, 3, 6, NS_SOMA_MULTI_POINT, 2, 0},
    {"ca1_ko20x-07.swc", 152, 1, 152, NS_SOMA_THREE_POINT, 3, 0},
    {"ca1_h10.swc", 204, 1, 204, NS_SOMA_MULTI_POINT, 3, 0},
    {"mouselight_AA0003_dend.swc", 329, 1, 329, NS_SOMA_SINGLE_POINT, 1, 0},
    {"dg_granule_1220882a.swc", 459, 1, 459, NS_SOMA_SINGLE_POINT, 1, 0},
    {"str_lts_noaxon.swc", 491, 1, 491, NS_SOMA_SINGLE_POINT, 1, 0},
    {"moto_v_e_moto1.swc", 562, 1, 562, NS_SOMA_THREE_POINT, 3, 0},
    {"purk_SDM_KO3_nosoma.swc", 842, 1, 842, NS_SOMA_NONE, 0, 0},
    {"hip_K-18.swc", 1186, 1, 1186, NS_SOMA_THREE_POINT, 3, 0},
    {"allen_pvalb_469628681.swc", 1247, 1, 1247, NS_SOMA_SINGLE_POINT, 1, 0},
    {"ca1_c91662.swc", 1510, 1, 1510, NS_SOMA_THREE_POINT, 3, 0},
    {"purk_v_e_purk2.swc", 1521, 1, 1521, NS_SOMA_SINGLE_POINT, 1, 1},
    {"fly_OP1_diadem_axon.swc", 1544, 1, 1544, NS_SOMA_NONE, 0, 0},
    {"ca3_l22.swc", 1602, 1, 1602, NS_SOMA_MULTI_POINT, 10, 0},
    {"str_chin.swc", 1657, 1, 1657, NS_SOMA_SINGLE_POINT, 1, 0},
    {"hip_c10261.swc", 1689, 1, 1689, NS_SOMA_THREE_POINT, 3, 0},
    {"allen_rorb_325404214.swc", 2191, 1, 2191, NS_SOMA_SINGLE_POINT, 1, 0},
    {"ca3_barrionuevo_cell1zr.swc", 2246, 1, 2246, NS_SOMA_SINGLE_POINT, 1, 0},
    {"celegans_PVDL_3roots.swc", 2313, 3, 760, NS_SOMA_MULTI_POINT, 2, 0},
    {"fly_T4_flywire.swc", 2455, 1, 2455, NS_SOMA_SINGLE_POINT, 1, 29},
    {"hip_970529c.swc", 2472, 1, 2472, NS_SOMA_SINGLE_POINT, 1, 0},
    {"allen_ctgf_539748835_id0.swc", 2497, 1, 2497, NS_SOMA_SINGLE_POINT, 1, 0},
    {"ca1_n120.swc", 2630, 1, 2630, NS_SOMA_MULTI_POINT, 12, 0},
    {"purk_deschutter_10-2012-02-09-001.swc", 3187, 1, 3187, NS_SOMA_MULTI_POINT, 17, 0},
    {"purk_dbbs.swc", 3376, 1, 3376, NS_SOMA_MULTI_POINT, 21, 0},
    {"frag_17545_289roots.swc", 3397, 289, 104, NS_SOMA_SINGLE_POINT, 1, 0},
    {"mouselight_AA0013_cng.swc", 3411, 1, 3411, NS_SOMA_THREE_POINT, 3, 0},
    {"allen_rbp4_485574832.swc", 3573, 1, 3573, NS_SOMA_SINGLE_POINT, 1, 0},
    {"allen_scnn1a_473845048.swc", 3783, 1, 3783, NS_SOMA_SINGLE_POINT, 1, 0},
    {"allen_chat_614430666.swc", 4145, 1, 4145, NS_SOMA_SINGLE_POINT, 1, 0},
    {"fly_DA1_1734350788.swc", 4465, 1, 4465, NS_SOMA_SINGLE_POINT, 1, 0},
    {"cereb_golgi_dbbs.swc", 5087, 1, 5087, NS_SOMA_MULTI_POINT, 21, 0},
    {"purk_e4cb2a2.swc", 5728, 1, 5728, NS_SOMA_THREE_POINT, 3, 0},
    {"cereb_basket_dbbs.swc", 6344, 1, 6344, NS_SOMA_MULTI_POINT, 21, 0},
    {"ca1_DHC.swc", 6757, 1, 6757, NS_SOMA_THREE_POINT, 3, 0},
    {"allen_pvalb_491119484.swc", 6772, 1, 6772, NS_SOMA_SINGLE_POINT, 1, 0},
    {"retina_C4_zero_radius.swc", 7213, 1, 7213, NS_SOMA_SINGLE_POINT, 1, 7213},
    {"mouselight_AA0059_rootlast.swc", 7629, 1, 7629, NS_SOMA_SINGLE_POINT, 1, 0},
    {"hip_ri05.swc", 8992, 1, 8992, NS_SOMA_MULTI_POINT, 25, 0},
    {"rgc_Image001-005-01.swc", 9084, 1, 9084, NS_SOMA_THREE_POINT, 3, 0},
    {"l5pc_bbp_axon.swc", 10617, 1, 10617, NS_SOMA_MULTI_POINT, 21, 0},
    {"allen_pvalb_485184849_84roots.swc", 10671, 84, 4594, NS_SOMA_SINGLE_POINT, 1, 0},
    {"ngf_eNGC_contour.swc", 10872, 1, 10872, NS_SOMA_CONTOUR, 32, 0},
    {"glia_Series006ok-2.swc", 12627, 1, 12627, NS_SOMA_THREE_POINT, 3, 0},
    {"purk_alxP.swc", 13875, 1, 13875, NS_SOMA_THREE_POINT, 3, 0},
    {"str_fs_axon.swc", 14346, 1, 14346, NS_SOMA_SINGLE_POINT, 1, 0},
    {"ctx_CTh5080306F.swc", 14681, 1, 14681, NS_SOMA_THREE_POINT, 3, 0},
    {"ctx_041018-zA.swc", 15039, 1, 15039, NS_SOMA_THREE_POINT, 3, 0},
    {"str_dspn_0728MSN01.swc", 16181, 1, 16181, NS_SOMA_SINGLE_POINT, 1, 0},
    {"ec3_80604.swc", 22602, 1, 22602, NS_SOMA_THREE_POINT, 3, 1},
    {"allen_human_579351144.swc", 26161, 1, 26161, NS_SOMA_SINGLE_POINT, 1, 0},
    {"str_ispn_MSN1.swc", 26943, 1, 26943, NS_SOMA_SINGLE_POINT, 1, 0},
    {"dense_Animal_2_Basal_2.swc", 70989, 1, 70989, NS_SOMA_MULTI_POINT, 8, 0},
};

#define N_FILES (sizeof files / sizeof files[0])

/* The file as a second, simple parser sees it: per line number, the id,
 * parent id, coordinates and radius of a data line (line_ok = 0 for
 * comments and blanks). */
typedef struct raw_file {
    int64_t lines;
    unsigned char *line_ok;
    long long *id, *pid;
    double *x, *y, *z, *r;
} raw_file;

static void raw_free(raw_file *f) {
    free(f->line_ok);
    free(f->id);
    free(f->pid);
    free(f->x);
    free(f->y);
    free(f->z);
    free(f->r);
}

static int raw_read(const char *path, raw_file *f) {
    memset(f, 0, sizeof *f);
    FILE *in = fopen(path, "rb");
    if (!in) return 0;
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (!text || fread(text, 1, (size_t)size, in) != (size_t)size) {
        free(text);
        fclose(in);
        return 0;
    }
    fclose(in);
    text[size] = '\0';
    int64_t lines = 1;
    for (long i = 0; i < size; ++i) lines += text[i] == '\n';
    f->lines = lines;
    f->line_ok = calloc((size_t)lines + 1, 1);
    f->id = calloc((size_t)lines + 1, sizeof *f->id);
    f->pid = calloc((size_t)lines + 1, sizeof *f->pid);
    f->x = calloc((size_t)lines + 1, sizeof *f->x);
    f->y = calloc((size_t)lines + 1, sizeof *f->y);
    f->z = calloc((size_t)lines + 1, sizeof *f->z);
    f->r = calloc((size_t)lines + 1, sizeof *f->r);
    char *s = text;
    for (int64_t line = 1; line <= lines; ++line) {
        char *nl = strchr(s, '\n');
        if (nl) *nl = '\0';
        long long id, pid;
        int type;
        double x, y, z, r;
        /* sscanf skips blanks, tabs and CRs alike; comments fail the %lld */
        if (sscanf(s, "%lld %d %lf %lf %lf %lf %lld", &id, &type, &x, &y, &z, &r, &pid) == 7) {
            f->line_ok[line] = 1;
            f->id[line] = id;
            f->pid[line] = pid;
            f->x[line] = x;
            f->y[line] = y;
            f->z[line] = z;
            f->r[line] = r;
        }
        if (!nl) break;
        s = nl + 1;
    }
    free(text);
    return 1;
}

/* Compare the kept points with the file and check the order. */
static void check_points(const shared_file *sf, const ns_morph_t *m, double scale) {
    char path[512];
    snprintf(path, sizeof path, NS_MORPHOLOGIES "/%s", sf->file);
    raw_file f;
    CHECK_MSG(raw_read(path, &f), "%s: cannot read it here", sf->file);
    int64_t n = 0, data_lines = 0;
    const ns_morph_point *p = ns_morph_points(m, &n);
    for (int64_t l = 1; l <= f.lines; ++l) data_lines += f.line_ok[l];
    CHECK_MSG(data_lines == sf->points, "%s: the test's parser sees %lld data lines", sf->file,
              (long long)data_lines);
    int64_t bad = 0, soma = 0, *stack = malloc((size_t)n * sizeof *stack), top = 0;
    int64_t *last_child_line = calloc((size_t)n, sizeof *last_child_line);
    for (int64_t i = 0; i < n && stack && last_child_line; ++i) {
        int64_t l = p[i].line, par = p[i].parent;
        soma += p[i].type == NS_SWC_SOMA;
        int ok = l >= 1 && l <= f.lines && f.line_ok[l] && f.id[l] == p[i].id;
        ok = ok && (i == 0 ? par == -1 && f.pid[l] < 0 : par >= 0 && par < i && f.pid[l] == p[par].id);
        ok = ok && p[i].x == f.x[l] * scale && p[i].y == f.y[l] * scale && p[i].z == f.z[l] * scale;
        ok = ok && (f.r[l] > 0 ? p[i].r == f.r[l] * scale : p[i].r > 0);
        /* preorder: the parent is on the path from the root to point i-1 */
        while (ok && top > 0 && stack[top - 1] != par) --top;
        ok = ok && (i == 0 || top > 0);
        /* children of one parent in file order */
        if (ok && par >= 0) {
            ok = l > last_child_line[par];
            last_child_line[par] = l;
        }
        stack[top++] = i;
        if (!ok && bad++ < 3)
            fprintf(stderr, "%s: point %lld (id %lld, line %lld) does not match the file or the order\n",
                    sf->file, (long long)i, (long long)p[i].id, (long long)l);
    }
    CHECK_MSG(bad == 0, "%s: %lld points differ from the file or break the order", sf->file, (long long)bad);
    CHECK(soma == sf->soma_points);
    free(stack);
    free(last_child_line);
    raw_free(&f);
}

static ns_status read_file(const shared_file *sf, const ns_swc_options *o, ns_morph_t **m) {
    char path[512];
    snprintf(path, sizeof path, NS_MORPHOLOGIES "/%s", sf->file);
    return ns_swc_read(path, o, m);
}

/* Defaults: keep the main tree, repair radii. Only the tracing without
 * diameters is rejected. */
static void test_defaults(void) {
    for (size_t k = 0; k < N_FILES; ++k) {
        const shared_file *sf = &files[k];
        ns_morph_t *m = NULL;
        ns_status s = read_file(sf, NULL, &m);
        if (sf->nonpositive == sf->points) {
            CHECK_MSG(s == NS_ERR_PARSE && m == NULL, "%s: %s", sf->file, ns_status_string(s));
            CHECK_MSG(strstr(ns_last_error(), "no positive radius: a tracing without diameters") != NULL,
                      "%s: %s", sf->file, ns_last_error());
            continue;
        }
        CHECK_MSG(s == NS_OK, "%s: %s: %s", sf->file, ns_status_string(s), ns_last_error());
        if (s != NS_OK) continue;
        ns_morph_info in;
        ns_morph_get_info(m, &in);
        CHECK_MSG(in.points_read == sf->points, "%s: read %lld", sf->file, (long long)in.points_read);
        CHECK_MSG(in.roots == sf->roots, "%s: roots %lld", sf->file, (long long)in.roots);
        CHECK_MSG(in.points == sf->kept, "%s: kept %lld want %lld", sf->file, (long long)in.points,
                  (long long)sf->kept);
        CHECK_MSG(in.points + in.points_dropped == sf->points, "%s: kept + dropped", sf->file);
        CHECK(in.roots_kept == 1);
        CHECK_MSG(in.soma == sf->soma, "%s: soma %s want %s", sf->file, ns_soma_style_name(in.soma),
                  ns_soma_style_name(sf->soma));
        CHECK_MSG(in.soma_points == sf->soma_points, "%s: soma points %lld", sf->file,
                  (long long)in.soma_points);
        CHECK_MSG(in.radii_repaired == sf->nonpositive, "%s: repaired %lld want %lld", sf->file,
                  (long long)in.radii_repaired, (long long)sf->nonpositive);
        check_points(sf, m, 1.0);
        ns_morph_destroy(m);
    }
}

/* NS_ROOTS_REJECT: exactly the files with several roots fail, naming the
 * count; NS_RADIUS_REJECT: exactly the files with radii <= 0 fail. */
static void test_reject_policies(void) {
    ns_swc_options roots, radii;
    ns_swc_options_init(&roots);
    roots.roots = NS_ROOTS_REJECT;
    roots.radii = NS_RADIUS_DEFAULT; /* so that only the root policy can fail */
    ns_swc_options_init(&radii);
    radii.radii = NS_RADIUS_REJECT;
    for (size_t k = 0; k < N_FILES; ++k) {
        const shared_file *sf = &files[k];
        ns_morph_t *m = NULL;
        ns_status s = read_file(sf, &roots, &m);
        if (sf->roots > 1) {
            char want[64];
            snprintf(want, sizeof want, ": %lld roots (parent -1 on lines ", (long long)sf->roots);
            CHECK_MSG(s == NS_ERR_TOPOLOGY && m == NULL, "%s: %s", sf->file, ns_status_string(s));
            CHECK_MSG(strstr(ns_last_error(), want) != NULL, "%s: %s", sf->file, ns_last_error());
        } else {
            CHECK_MSG(s == NS_OK, "%s: %s: %s", sf->file, ns_status_string(s), ns_last_error());
        }
        ns_morph_destroy(m);

        m = NULL;
        s = read_file(sf, &radii, &m);
        if (sf->nonpositive > 0) {
            CHECK_MSG(s == NS_ERR_PARSE && m == NULL, "%s: %s", sf->file, ns_status_string(s));
            CHECK_MSG(strstr(ns_last_error(), "is not positive") != NULL, "%s: %s", sf->file, ns_last_error());
        } else {
            CHECK_MSG(s == NS_OK, "%s: %s: %s", sf->file, ns_status_string(s), ns_last_error());
        }
        ns_morph_destroy(m);
    }
}

static const shared_file *find(const char *name) {
    for (size_t k = 0; k < N_FILES; ++k)
        if (strcmp(files[k].file, name) == 0) return &files[k];
    return NULL;
}

/* The two files that need options: the tracing without diameters loads
 * with a default radius; the FlyWire skeleton in nm is scaled to um. */
static void test_options(void) {
    const shared_file *sf = find("retina_C4_zero_radius.swc");
    ns_swc_options o;
    ns_swc_options_init(&o);
    o.radii = NS_RADIUS_DEFAULT;
    o.default_radius = 0.5;
    ns_morph_t *m = NULL;
    CHECK(sf != NULL);
    if (sf && read_file(sf, &o, &m) == NS_OK) {
        ns_morph_info in;
        ns_morph_get_info(m, &in);
        CHECK(in.points == sf->points && in.radii_repaired == sf->points);
        int64_t n = 0;
        const ns_morph_point *p = ns_morph_points(m, &n);
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) wrong += p[i].r != 0.5;
        CHECK(wrong == 0);
        check_points(sf, m, 1.0);
    } else {
        CHECK_MSG(0, "retina with a default radius: %s", ns_last_error());
    }
    ns_morph_destroy(m);

    sf = find("fly_T4_flywire.swc");
    ns_swc_options_init(&o);
    o.scale = 1e-3; /* nm -> um */
    m = NULL;
    CHECK(sf != NULL);
    if (sf && read_file(sf, &o, &m) == NS_OK) {
        ns_morph_info in;
        ns_morph_get_info(m, &in);
        CHECK(in.points == sf->points && in.radii_repaired == sf->nonpositive);
        check_points(sf, m, 1e-3);
    } else {
        CHECK_MSG(0, "fly_T4 scaled: %s", ns_last_error());
    }
    ns_morph_destroy(m);
}

int main(void) {
    CHECK(N_FILES == 54);
    test_defaults();
    test_reject_policies();
    test_options();
    return check_summary("test_swc_shared");
}
