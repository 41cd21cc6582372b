/* Discretisation: areas and resistances against hand computations on simple
 * geometries, the soma styles, nseg rules against NEURON's formulas written
 * out independently here, NEURON's own numbers (tests/data/neuron_ref, made
 * by validation/neuron_discretization.py), the matrix against a dense
 * assembly from the definition, and every shared morphology. */
#define _POSIX_C_SOURCE 200809L /* opendir, readdir */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/cable.h"
#include "neurosolve/morph.h"

#define PI 3.14159265358979323846

static ns_morph_point pt(double x, double y, double z, double r, int type, int parent, int64_t id) {
    ns_morph_point p;
    memset(&p, 0, sizeof p);
    p.x = x; p.y = y; p.z = z; p.r = r;
    p.type = type; p.parent = parent; p.id = id; p.line = id;
    return p;
}

static ns_cell_t *make(const ns_morph_point *p, int n, ns_nseg_rule rule, double maxlen,
                       ns_junction_policy junctions) {
    ns_morph_t *m = NULL;
    ns_cell_t *c = NULL;
    CHECK_OK(ns_morph_from_points("test", p, n, &m));
    if (!m) return NULL;
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.rule = rule;
    o.max_length = maxlen;
    o.junctions = junctions;
    CHECK_OK(ns_discretize(m, &o, &c));
    ns_morph_destroy(m);
    return c;
}

/* MOhm of a cylinder: Ra [ohm cm] L [um] / (pi r^2 [um^2]) -> 1e4 ohm -> 1e-2 MOhm */
static double r_cyl(double Ra, double L, double r) { return 1e-2 * Ra * L / (PI * r * r); }

static void test_cylinder(void) {
    const double L = 100.0, r = 1.0, Ra = 35.4;
    ns_morph_point p[2] = {pt(0, 0, 0, r, 3, -1, 1), pt(L, 0, 0, r, 3, 0, 2)};
    ns_cell_t *c = make(p, 2, NS_NSEG_FIXED_LENGTH, 20.0, NS_JUNCTIONS_NEURON);
    if (!c) return;
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    CHECK(info.sections == 1);
    CHECK(info.compartments == 1 + 5 + 1); /* x=0 node, 5 segments, x=1 node */
    CHECK(check_rel(info.total_area, 2 * PI * r * L) < 1e-12);
    const double *A = ns_cell_area(c), *g = ns_cell_axial_conductance(c), *x = ns_cell_position(c);
    CHECK(A[0] == 0.0 && A[6] == 0.0 && x[0] == 0.0 && x[6] == 1.0);
    for (int i = 1; i <= 5; ++i) {
        CHECK(check_rel(A[i], 2 * PI * r * L / 5) < 1e-12);
        CHECK(fabs(x[i] - (i - 0.5) / 5) < 1e-15);
        double ri = i == 1 ? r_cyl(Ra, L / 10, r) : r_cyl(Ra, L / 5, r); /* half, or two halves */
        CHECK_MSG(check_rel(1.0 / g[i], ri) < 1e-12, "node %d ri %g vs %g", i, 1.0 / g[i], ri);
    }
    CHECK(check_rel(1.0 / g[6], r_cyl(Ra, L / 10, r)) < 1e-12);
    ns_section_info s;
    CHECK_OK(ns_cell_get_section(c, 0, &s));
    CHECK(s.nseg == 5 && check_rel(s.length, L) < 1e-15 && check_rel(s.ri_sum, r_cyl(Ra, L, r)) < 1e-12);
    CHECK(ns_cell_get_section(c, 1, &s) == NS_ERR_INVALID_ARGUMENT);
    ns_cell_destroy(c);
    /* minimal policy: both junction nodes fold away, segment 0 is the root */
    c = make(p, 2, NS_NSEG_FIXED_LENGTH, 20.0, NS_JUNCTIONS_MINIMAL);
    if (!c) return;
    ns_cell_get_info(c, &info);
    CHECK(info.compartments == 5);
    CHECK(ns_cell_axial_conductance(c)[0] == 0.0);
    CHECK(check_rel(1.0 / ns_cell_axial_conductance(c)[1], r_cyl(Ra, L / 5, r)) < 1e-12);
    ns_cell_destroy(c);
}

static void test_frustum(void) {
    const double L = 10.0, r1 = 1.0, r2 = 2.0, Ra = 35.4;
    ns_morph_point p[2] = {pt(0, 0, 0, r1, 3, -1, 1), pt(0, L, 0, r2, 3, 0, 2)};
    ns_cell_t *c = make(p, 2, NS_NSEG_ONE, 0, NS_JUNCTIONS_NEURON);
    if (!c) return;
    const double *A = ns_cell_area(c), *g = ns_cell_axial_conductance(c);
    double lateral = PI * (r1 + r2) * sqrt(L * L + (r2 - r1) * (r2 - r1));
    CHECK_MSG(check_rel(A[1], lateral) < 1e-12, "frustum area %g vs %g", A[1], lateral);
    /* rho l / (pi ra rb) for each half, mid radius 1.5 */
    double rm = 0.5 * (r1 + r2);
    CHECK(check_rel(1.0 / g[1], 1e-2 * Ra * (L / 2) / (PI * r1 * rm)) < 1e-12);
    CHECK(check_rel(1.0 / g[2], 1e-2 * Ra * (L / 2) / (PI * rm * r2)) < 1e-12);
    ns_section_info s;
    ns_cell_get_section(c, 0, &s);
    CHECK(check_rel(s.ri_sum, 1e-2 * Ra * L / (PI * r1 * r2)) < 1e-12);
    ns_cell_destroy(c);
}

/* NEURON's segment diam (a mechanism's `diam`): the mean over the segment's
 * length of the diameter, linear between 3D points; 0 at junction nodes */
static double diam_integral(double a, double b) { /* of d(x): 2 at 0, 4 at 4, 2 at 10 */
    const double X[3] = {0, 4, 10}, Y[3] = {2, 4, 2};
    double s = 0;
    for (int k = 0; k < 2; ++k) {
        const double lo = fmax(a, X[k]), hi = fmin(b, X[k + 1]);
        if (hi <= lo) continue;
        const double ylo = Y[k] + (Y[k + 1] - Y[k]) * (lo - X[k]) / (X[k + 1] - X[k]);
        const double yhi = Y[k] + (Y[k + 1] - Y[k]) * (hi - X[k]) / (X[k + 1] - X[k]);
        s += 0.5 * (ylo + yhi) * (hi - lo);
    }
    return s;
}

static void test_segment_diam(void) {
    ns_morph_point p[3] = {pt(0, 0, 0, 1.0, 3, -1, 1), pt(0, 4, 0, 2.0, 3, 0, 2), pt(0, 10, 0, 1.0, 3, 1, 3)};
    ns_cell_t *c = make(p, 3, NS_NSEG_FIXED_LENGTH, 4.0, NS_JUNCTIONS_NEURON); /* 3 segments */
    if (!c) return;
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    CHECK(info.compartments == 5);
    const double *D = ns_cell_diam(c);
    if (info.compartments == 5 && D) {
        const double ds = 10.0 / 3.0;
        for (int k = 0; k < 3; ++k) {
            const double want = diam_integral(k * ds, (k + 1) * ds) / ds;
            CHECK_MSG(check_rel(D[1 + k], want) < 1e-12, "segment %d diam %.17g, want %.17g", k, D[1 + k], want);
        }
        CHECK(D[0] == 0.0 && D[4] == 0.0);
    }
    ns_cell_destroy(c);
}

static void test_y_junction(void) {
    const double Ra = 35.4;
    ns_morph_point p[4] = {pt(0, 0, 0, 1.0, 3, -1, 1), pt(50, 0, 0, 1.0, 3, 0, 2),
                           pt(100, 0, 0, 0.5, 3, 1, 3), pt(50, 30, 0, 0.5, 3, 1, 4)};
    ns_cell_t *c = make(p, 4, NS_NSEG_ONE, 0, NS_JUNCTIONS_MINIMAL);
    if (!c) return;
    /* root segment (0), junction at x=1 of the root section (1), two child
     * segments (2, 3); the x=1 nodes of the leaves and the x=0 node fold away */
    const ns_tree_t *t = ns_cell_tree(c);
    const int32_t *par = ns_tree_parent(t);
    CHECK(ns_tree_size(t) == 4);
    if (ns_tree_size(t) == 4) {
        CHECK(par[1] == 0 && par[2] == 1 && par[3] == 1);
        const double *A = ns_cell_area(c), *g = ns_cell_axial_conductance(c);
        CHECK(A[1] == 0.0);
        CHECK(check_rel(A[0], 2 * PI * 1.0 * 50) < 1e-12);
        /* child sections start at the copied parent point with its diameter
         * (a tapered first piece: radius 1 -> 0.5 over 50 um) */
        double slant = sqrt(50.0 * 50.0 + 0.25);
        CHECK_MSG(check_rel(A[2], PI * 1.5 * slant) < 1e-12, "child area %g", A[2]);
        CHECK(check_rel(1.0 / g[1], r_cyl(Ra, 25, 1.0)) < 1e-12);
        double rq = 0.75; /* radius at the child's centre */
        CHECK(check_rel(1.0 / g[2], 1e-2 * Ra * 25 / (PI * 1.0 * rq)) < 1e-12);
        /* the second child is 30 um long: its left half is 15 um, radius 1 -> 0.75 */
        CHECK(check_rel(1.0 / g[3], 1e-2 * Ra * 15 / (PI * 1.0 * rq)) < 1e-12);
        const int32_t *sec = ns_cell_section(c);
        CHECK(sec[0] == 0 && sec[1] == 0 && sec[2] == 1 && sec[3] == 2);
        CHECK(ns_cell_position(c)[1] == 1.0);
    }
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    CHECK(info.sections == 3 && info.branch_depth == 2);
    ns_cell_destroy(c);
}

/* Soma styles: single point (cylinder L = diam, sphere's area), NeuroMorpho
 * three-point soma (the same), children at 0.5 without their first piece. */
static void test_somas(void) {
    const double rs = 5.0;
    ns_morph_point one[3] = {pt(0, 0, 0, rs, 1, -1, 1), pt(10, 0, 0, 1.0, 3, 0, 2), pt(30, 0, 0, 1.0, 3, 1, 3)};
    ns_morph_point three[5] = {pt(0, 0, 0, rs, 1, -1, 1), pt(0, -rs, 0, rs, 1, 0, 2), pt(0, rs, 0, rs, 1, 0, 3),
                               pt(10, 0, 0, 1.0, 3, 0, 4), pt(30, 0, 0, 1.0, 3, 3, 5)};
    for (int style = 0; style < 2; ++style) {
        ns_cell_t *c = style == 0 ? make(one, 3, NS_NSEG_ONE, 0, NS_JUNCTIONS_NEURON)
                                  : make(three, 5, NS_NSEG_ONE, 0, NS_JUNCTIONS_NEURON);
        if (!c) continue;
        ns_section_info s0, s1;
        CHECK_OK(ns_cell_get_section(c, 0, &s0));
        CHECK_OK(ns_cell_get_section(c, 1, &s1));
        CHECK_MSG(check_rel(s0.area, 4 * PI * rs * rs) < 1e-12, "style %d soma area %g", style, s0.area);
        CHECK(check_rel(s0.length, 2 * rs) < 1e-12 && s0.n3d == 3);
        CHECK(s1.parent == 0 && s1.parent_x == 0.5);
        /* wire: the dendrite keeps only its own two points, 20 um apart */
        CHECK(s1.n3d == 2 && check_rel(s1.length, 20.0) < 1e-12);
        CHECK(check_rel(s1.area, 2 * PI * 1.0 * 20.0) < 1e-12);
        ns_cell_destroy(c);
    }
    /* multi-point soma: one soma section along the chain; a dendrite from an
     * interior soma point at 0.5, one from the last point at 1 with the
     * soma point copied at the dendrite's own diameter */
    ns_morph_point multi[7] = {pt(0, 0, 0, 4, 1, -1, 1), pt(0, 5, 0, 5, 1, 0, 2), pt(0, 10, 0, 4, 1, 1, 3),
                               pt(0, 20, 0, 1, 3, 2, 4), pt(0, 30, 0, 1, 3, 3, 5),
                               pt(10, 5, 0, 1, 3, 1, 6), pt(20, 5, 0, 1, 3, 5, 7)};
    ns_cell_t *c = make(multi, 7, NS_NSEG_ONE, 0, NS_JUNCTIONS_NEURON);
    if (c) {
        ns_cell_info info;
        ns_cell_get_info(c, &info);
        CHECK(info.sections == 3);
        ns_section_info s0, s1, s2;
        ns_cell_get_section(c, 0, &s0);
        ns_cell_get_section(c, 1, &s1);
        ns_cell_get_section(c, 2, &s2);
        double soma = PI * (4 + 5) * sqrt(25 + 1) * 2; /* two frusta 4->5->4 over 5 um each */
        CHECK(check_rel(s0.area, soma) < 1e-12 && s0.n3d == 3);
        CHECK(s1.parent_x == 1.0 && s1.n3d == 3 && check_rel(s1.area, 2 * PI * 20) < 1e-12);
        CHECK(s2.parent_x == 0.5 && s2.n3d == 2 && check_rel(s2.length, 10.0) < 1e-12);
        ns_cell_destroy(c);
    }
}

/* nseg rules against NEURON's formulas written out here: lambda_f for a
 * cylinder is 1e5 sqrt(d / (4 pi f Ra cm)) um (fixnseg.hoc), and
 * nseg = int((L / (d_lambda lambda_f) + 0.9) / 2) * 2 + 1. */
static void test_nseg(void) {
    const double d = 2.0, f = 100.0, Ra = 35.4, cm = 1.0;
    const double lambda = 1e5 * sqrt(d / (4 * PI * f * Ra * cm));
    const double lengths[] = {1.0, 50.0, 150.0, 600.0, 2345.6, 10000.0};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; ++k) {
        double L = lengths[k];
        ns_morph_point p[3] = {pt(0, 0, 0, d / 2, 3, -1, 1), pt(L / 3, 0, 0, d / 2, 3, 0, 2),
                               pt(L, 0, 0, d / 2, 3, 1, 3)};
        ns_cell_t *c = make(p, 3, NS_NSEG_D_LAMBDA, 0, NS_JUNCTIONS_MINIMAL);
        if (!c) continue;
        ns_section_info s;
        ns_cell_get_section(c, 0, &s);
        int expect = (int)((L / (0.1 * lambda) + 0.9) / 2) * 2 + 1;
        CHECK_MSG(s.nseg == expect, "L %g: nseg %d, NEURON's formula %d", L, s.nseg, expect);
        ns_cell_destroy(c);
        c = make(p, 3, NS_NSEG_FIXED_LENGTH, 20.0, NS_JUNCTIONS_MINIMAL);
        if (!c) continue;
        ns_cell_get_section(c, 0, &s);
        int n = (int)ceil(L / 20.0);
        if (n % 2 == 0) ++n;
        CHECK_MSG(s.nseg == n, "fixed: L %g nseg %d vs %d", L, s.nseg, n);
        ns_cell_destroy(c);
    }
}

/* The matrix against a dense assembly from the definition: in the
 * symmetric form every edge (i, p) with conductance g puts -g at (i,p) and
 * (p,i) and +g on both diagonals, and each node with membrane adds
 * 1e-5 cm/dt area [uS]; NEURON's rows are those rows divided by A/100. */
static void check_matrix(const ns_cell_t *c, const char *what) {
    const ns_tree_t *t = ns_cell_tree(c);
    const int32_t n = ns_tree_size(t), *par = ns_tree_parent(t);
    const double *A = ns_cell_area(c), *g = ns_cell_axial_conductance(c);
    const double cm = 1.0, dt = 0.025;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *d = malloc(n * sizeof *d);
    double *as = malloc(n * sizeof *as), *bs = malloc(n * sizeof *bs), *ds = malloc(n * sizeof *ds);
    double *dense_diag = calloc(n, sizeof *dense_diag), *offsum = calloc(n, sizeof *offsum);
    CHECK_OK(ns_cell_matrix(c, cm, dt, NS_FORM_NEURON, a, b, d));
    CHECK_OK(ns_cell_matrix(c, cm, dt, NS_FORM_SYMMETRIC, as, bs, ds));
    for (int32_t i = 0; i < n; ++i) dense_diag[i] = A[i] > 0 ? 1e-5 * cm / dt * A[i] : 0.0;
    for (int32_t i = 1; i < n; ++i) {
        dense_diag[i] += g[i];
        dense_diag[par[i]] += g[i];
    }
    double worst = 0, worst_neuron = 0;
    int dominance = 1;
    for (int32_t i = 0; i < n; ++i) {
        worst = fmax(worst, check_rel(ds[i], dense_diag[i]));
        if (i > 0) worst = fmax(worst, fmax(check_rel(as[i], -g[i]), check_rel(bs[i], -g[i])));
        double Ai = A[i] > 0 ? A[i] : 100.0;
        worst_neuron = fmax(worst_neuron, check_rel(d[i] * Ai / 100.0, ds[i]));
        if (i > 0) {
            double Ap = A[par[i]] > 0 ? A[par[i]] : 100.0;
            worst_neuron = fmax(worst_neuron, check_rel(b[i] * Ai / 100.0, -g[i]));
            worst_neuron = fmax(worst_neuron, check_rel(a[i] * Ap / 100.0, -g[i]));
            offsum[i] += fabs(b[i]);
            offsum[par[i]] += fabs(a[i]);
        }
    }
    /* the margin is exactly 1e-3 cm/dt where there is membrane and 0 at
     * zero-area nodes; only a degenerate section (zero length, so a huge
     * conductance) can push that margin below the rounding of d */
    for (int32_t i = 0; i < n; ++i) {
        double margin = d[i] - offsum[i], cap = 1e-3 * cm / dt;
        if (A[i] > 0 ? !(margin > 0 || cap < 1e-12 * d[i]) : !(margin >= -1e-12 * d[i])) dominance = 0;
        if (A[i] > 0 && cap > 1e-9 * d[i] && check_rel(margin, cap) > 1e-6) dominance = 0;
    }
    CHECK_MSG(worst < 1e-13, "%s: symmetric form vs dense %g", what, worst);
    CHECK_MSG(worst_neuron < 1e-13, "%s: NEURON form vs symmetric %g", what, worst_neuron);
    CHECK_MSG(dominance, "%s: d - |off-diagonals| must be > 0 (>= 0 at zero-area nodes)", what);
    CHECK(a[0] == 0.0 && b[0] == 0.0);
    CHECK(ns_cell_matrix(c, cm, 0.0, NS_FORM_NEURON, a, b, d) == NS_ERR_INVALID_ARGUMENT);
    /* finite cm and dt whose capacitance overflows: refused, no inf returned */
    CHECK(ns_cell_matrix(c, 1e300, 1e-300, NS_FORM_NEURON, a, b, d) == NS_ERR_NOT_FINITE &&
          strstr(ns_last_error(), "overflows the matrix") != NULL);
    free(a); free(b); free(d); free(as); free(bs); free(ds); free(dense_diag); free(offsum);
}

static double f8(double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.8g", v);
    return (double)(float)atof(buf);
}

/* NEURON stores 3D points as float after printing them with %.8g; do the
 * same to our points so that the geometry is the same as NEURON's. */
static ns_morph_t *as_neuron_sees_it(const ns_morph_t *m) {
    int64_t n;
    const ns_morph_point *p = ns_morph_points(m, &n);
    ns_morph_point *q = malloc(n * sizeof *q);
    for (int64_t i = 0; i < n; ++i) {
        q[i] = p[i];
        q[i].x = f8(p[i].x);
        q[i].y = f8(p[i].y);
        q[i].z = f8(p[i].z);
        q[i].r = f8(2 * p[i].r) / 2;
    }
    ns_morph_t *r = NULL;
    CHECK_OK(ns_morph_from_points(ns_morph_name(m), q, n, &r));
    free(q);
    return r;
}

typedef struct ref_row {
    long long key, parent;
    double px, L, area, ri;
    int nseg;
} ref_row;

/* A zero-length soma is a sphere for us and a 1e-9 um section for NEURON
 * (docs/discretisation.md): for those files the root section is compared
 * with the sphere's area 4 pi r^2 instead, the rest with NEURON. */
static int zero_length_soma(const char *name) { return strncmp(name, "celegans_", 9) == 0; }

static void test_neuron_reference(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/neuron_ref/%s.csv", NS_TEST_DATA, name);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    ref_row *rows = NULL;
    int n = 0, cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        ref_row r;
        if (sscanf(line, "%lld,%lld,%lf,%d,%lf,%lf,%lf", &r.key, &r.parent, &r.px, &r.nseg, &r.L, &r.area,
                   &r.ri) != 7)
            continue;
        if (n == cap) rows = realloc(rows, (cap = cap ? 2 * cap : 64) * sizeof *rows);
        rows[n++] = r;
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/%s.swc", NS_MORPHOLOGIES, name);
    ns_morph_t *m0 = NULL;
    CHECK_OK(ns_swc_read(path, NULL, &m0));
    if (!m0) {
        free(rows);
        return;
    }
    ns_morph_t *m = as_neuron_sees_it(m0);
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.junctions = NS_JUNCTIONS_NEURON;
    ns_cell_t *c = NULL, *c0 = NULL;
    CHECK_OK(ns_discretize(m, &o, &c));
    CHECK_OK(ns_discretize(m0, &o, &c0));
    if (c && c0) {
        ns_cell_info info, info0;
        ns_cell_get_info(c, &info);
        ns_cell_get_info(c0, &info0);
        CHECK_MSG(info.sections == n, "%s: %d sections, NEURON %d", name, (int)info.sections, n);
        double worst = 0, total_ref = 0;
        int mismatch = 0;
        for (int k = 0; k < info.sections; ++k) {
            ns_section_info s, ps;
            ns_cell_get_section(c, k, &s);
            long long pkey = -1;
            if (s.parent >= 0 && ns_cell_get_section(c, s.parent, &ps) == NS_OK) pkey = ps.first_point_id;
            const ref_row *r = NULL;
            for (int j = 0; j < n && !r; ++j)
                if (rows[j].key == s.first_point_id) r = &rows[j];
            if (!r || r->parent != pkey || r->px != s.parent_x || r->nseg != s.nseg) {
                ++mismatch;
                continue;
            }
            if (k == 0 && zero_length_soma(name)) {
                int64_t np = 0;
                const ns_morph_point *pt = ns_morph_points(m0, &np);
                const double sphere = 4.0 * PI * pt[0].r * pt[0].r;
                CHECK_MSG(check_rel(s.area, sphere) < 1e-6, "%s: soma area %g, sphere %g", name, s.area, sphere);
                total_ref += sphere - r->area; /* the rest of the total is NEURON's */
                continue;
            }
            if (fabs(s.length - r->L) > 1e-8) worst = fmax(worst, check_rel(s.length, r->L));
            worst = fmax(worst, fmax(check_rel(s.area, r->area), check_rel(s.ri_sum, r->ri)));
        }
        for (int j = 0; j < n; ++j) total_ref += rows[j].area;
        CHECK_MSG(mismatch == 0, "%s: %d sections differ from NEURON in parent, parentx or nseg", name, mismatch);
        CHECK_MSG(worst < 1e-6, "%s: largest relative difference from NEURON %g", name, worst);
        CHECK_MSG(check_rel(info0.total_area, total_ref) < 1e-6, "%s: total area %.10g, NEURON %.10g", name,
                  info0.total_area, total_ref);
        printf("  %-26s %4d sections, max rel diff %.1e, total area %.1e (unrounded points)\n", name, n, worst,
               check_rel(info0.total_area, total_ref));
        check_matrix(c0, name);
    }
    ns_cell_destroy(c);
    ns_cell_destroy(c0);
    ns_morph_destroy(m);
    ns_morph_destroy(m0);
    free(rows);
}

/* Every shared morphology that loads discretises into a valid cell with its
 * sections contiguous, in both junction policies. */
static void test_all_morphologies(void) {
    DIR *dir = opendir(NS_MORPHOLOGIES);
    CHECK(dir != NULL);
    if (!dir) return;
    struct dirent *e;
    int loaded = 0;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".swc") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", NS_MORPHOLOGIES, e->d_name);
        ns_morph_t *m = NULL;
        if (ns_swc_read(path, NULL, &m) != NS_OK) continue; /* rejections are test_swc's business */
        ++loaded;
        for (int pol = 0; pol < 2; ++pol) {
            ns_discretize_options o;
            ns_discretize_options_init(&o);
            o.junctions = pol ? NS_JUNCTIONS_NEURON : NS_JUNCTIONS_MINIMAL;
            ns_cell_t *c = NULL;
            ns_status st = ns_discretize(m, &o, &c);
            CHECK_MSG(st == NS_OK, "%s: %s", e->d_name, ns_last_error());
            if (!c) continue;
            ns_cell_info info;
            ns_cell_get_info(c, &info);
            const int32_t *sec = ns_cell_section(c);
            const double *A = ns_cell_area(c), *g = ns_cell_axial_conductance(c);
            int contiguous = 1, finite = 1;
            double sum = 0;
            for (int32_t i = 0; i < info.compartments; ++i) {
                if (i > 0 && sec[i] < sec[i - 1]) contiguous = 0;
                if (!(A[i] >= 0 && isfinite(A[i])) || (i > 0 && !(g[i] > 0 && isfinite(g[i])))) finite = 0;
                sum += A[i];
            }
            CHECK_MSG(contiguous, "%s: sections not contiguous", e->d_name);
            CHECK_MSG(finite, "%s: non-finite or non-positive area or conductance", e->d_name);
            CHECK(check_rel(sum, info.total_area) < 1e-12);
            if (pol == 0) check_matrix(c, e->d_name);
            ns_cell_destroy(c);
        }
        ns_morph_destroy(m);
    }
    closedir(dir);
    printf("  %d shared morphologies discretised\n", loaded);
    CHECK(loaded >= 45);
}

static void test_bad_input(void) {
    ns_cell_t *c = (ns_cell_t *)1;
    CHECK(ns_discretize(NULL, NULL, &c) == NS_ERR_INVALID_ARGUMENT && c == NULL);
    ns_morph_point p[2] = {pt(0, 0, 0, 1, 3, -1, 1), pt(10, 0, 0, 1, 3, 0, 2)};
    ns_morph_t *m = NULL;
    CHECK_OK(ns_morph_from_points("bad", p, 2, &m));
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.Ra = -1;
    CHECK(ns_discretize(m, &o, &c) == NS_ERR_INVALID_ARGUMENT);
    ns_discretize_options_init(&o);
    o.rule = NS_NSEG_FIXED_LENGTH;
    o.max_length = 0;
    CHECK(ns_discretize(m, &o, &c) == NS_ERR_INVALID_ARGUMENT);
    ns_morph_destroy(m);
    /* an unbranched run that is not contiguous is refused, not mis-cut */
    ns_morph_point q[4] = {pt(0, 0, 0, 1, 3, -1, 1), pt(10, 0, 0, 1, 3, 0, 2), pt(0, 10, 0, 1, 3, 0, 3),
                           pt(20, 0, 0, 1, 3, 1, 4)};
    CHECK_OK(ns_morph_from_points("gap", q, 4, &m));
    ns_discretize_options_init(&o);
    ns_status st = ns_discretize(m, &o, &c);
    CHECK(st == NS_OK || st == NS_ERR_TOPOLOGY);
    ns_cell_destroy(st == NS_OK ? c : NULL);
    ns_morph_destroy(m);
    /* a single point: the sphere alone */
    ns_morph_point s[1] = {pt(0, 0, 0, 3, 1, -1, 1)};
    CHECK_OK(ns_morph_from_points("sphere", s, 1, &m));
    CHECK_OK(ns_discretize(m, NULL, &c));
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    CHECK(info.compartments == 1 && check_rel(info.total_area, 4 * PI * 9) < 1e-12);
    ns_cell_destroy(c);
    ns_morph_destroy(m);
}

/* Geometry past the parser (issue 18): finite numbers whose lengths, areas or
 * conductances overflow, and a neurite of zero length, are refused by the
 * discretisation with the file, line and section, never turned into inf/nan. */
static void expect_geometry_error(const char *name, const char *text, ns_status want, const char *needle) {
    ns_morph_t *m = NULL;
    CHECK_OK(ns_swc_parse(text, strlen(text), name, NULL, &m));
    ns_cell_t *c = (ns_cell_t *)1;
    ns_status st = m ? ns_discretize(m, NULL, &c) : NS_ERR_INTERNAL;
    CHECK_MSG(st == want, "%s: got %s (%s)", name, ns_status_string(st), ns_last_error());
    CHECK_MSG(strstr(ns_last_error(), needle) != NULL, "%s: '%s' lacks '%s'", name, ns_last_error(), needle);
    CHECK(c == NULL);
    ns_morph_destroy(m);
}

static void test_geometry_overflow(void) {
    expect_geometry_error("huge_radius.swc", "1 1 0 0 0 1e308 -1\n2 3 10 0 0 1 1\n", NS_ERR_NOT_FINITE,
                          "huge_radius.swc:1: point id 1: its diameter overflows");
    expect_geometry_error("huge_xyz.swc", "1 1 0 0 0 5 -1\n2 3 1e308 0 0 1 1\n3 3 -1e308 0 0 1 2\n",
                          NS_ERR_NOT_FINITE, "huge_xyz.swc:2: point id 2: its distance to its parent overflows");
    expect_geometry_error("huge_soma.swc", "1 1 0 0 0 1e200 -1\n2 3 1 0 0 1 1\n", NS_ERR_NOT_FINITE,
                          "huge_soma.swc:1: section 0");
    /* a conductance that is finite but whose matrix row 1e2 g / A is not
     * (radii of 1e153 over a 0.1 um neurite; found by fuzz_swc, 2026-11-29) */
    expect_geometry_error("huge_row.swc", "1 1 0 0 0 1e153 -1\n2 3 .1 0 0 1e153 1\n", NS_ERR_NOT_FINITE,
                          "huge_row.swc:2: section 1 (SWC ids 2-2)");
    expect_geometry_error("zero_neurite.swc", "# soma and a neurite of zero length\n1 1 0 0 0 5 -1\n2 3 0 0 0 1 1\n"
                          "3 3 0 0 0 1 2\n4 3 0 0 0 1 3\n", NS_ERR_PARSE,
                          "zero_neurite.swc:3: section 1 (SWC ids 2-4) has zero length");
    /* large but finite geometry still loads */
    ns_morph_t *m = NULL;
    const char *ok = "1 1 0 0 0 1e100 -1\n2 3 1e120 0 0 1e100 1\n";
    CHECK_OK(ns_swc_parse(ok, strlen(ok), "large.swc", NULL, &m));
    ns_cell_t *c = NULL;
    CHECK_OK(ns_discretize(m, NULL, &c));
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    CHECK(isfinite(info.total_length) && isfinite(info.total_area));
    ns_cell_destroy(c);
    ns_morph_destroy(m);
}

/* Per-section statements (ns_discretize_options.sections): nseg by region,
 * sec:K and swc:ID in file order; Ra per section (resistances and d_lambda);
 * the regions' cm in d_lambda; errors naming file and line. The references
 * are the formulas: NEURON's d_lambda with the section's own cm and Ra, and
 * the Y junction's resistances (test_y_junction) scaled by Ra. */
static ns_cell_t *make_spec(const ns_morph_point *p, int n, const char *text, ns_status want) {
    ns_morph_t *m = NULL;
    ns_cell_t *c = NULL;
    CHECK_OK(ns_morph_from_points("test", p, n, &m));
    if (!m) return NULL;
    ns_discretize_options o;
    ns_discretize_options_init(&o);
    o.sections = text;
    o.sections_length = strlen(text);
    o.sections_name = "cell.params";
    ns_status st = ns_discretize(m, &o, &c);
    CHECK_MSG(st == want, "'%s': status %d, expected %d (%s)", text, (int)st, (int)want, ns_last_error());
    ns_morph_destroy(m);
    return c;
}

static void test_section_spec(void) {
    /* soma (1 point) - basal 0 -> 100 um forking into basal (id 4) and apical (id 5) */
    ns_morph_point p[6] = {pt(0, 0, 0, 5.0, 1, -1, 1),     pt(20, 0, 0, 1.0, 3, 0, 2),
                           pt(620, 0, 0, 1.0, 3, 1, 3),    pt(620, 900, 0, 1.0, 3, 2, 4),
                           pt(1220, 0, 0, 1.0, 4, 2, 5),   pt(1820, 0, 0, 1.0, 4, 4, 6)};
    ns_cell_t *c = make_spec(p, 6, "all.nseg = 3\nsec:1.nseg = 7\nswc:5.nseg = 2\n", NS_OK);
    if (c) {
        ns_section_info s[4];
        ns_cell_info info;
        ns_cell_get_info(c, &info);
        CHECK(info.sections == 4);
        for (int k = 0; k < 4 && k < info.sections; ++k) ns_cell_get_section(c, k, &s[k]);
        CHECK_MSG(s[0].nseg == 3 && s[1].nseg == 7 && s[2].nseg == 3 && s[3].nseg == 2,
                  "nseg %d %d %d %d, want 3 7 3 2 (a later statement wins)", s[0].nseg, s[1].nseg, s[2].nseg,
                  s[3].nseg);
        CHECK(s[3].first_point_id == 5);
        ns_cell_destroy(c);
    }
    /* d_lambda with each section's cm and Ra: the parameter file's keys, other keys skipped */
    const double f = 100.0, d = 2.0;
    const char *text = "all.hh = 0  # not ours\nRa = 100\nbasal.cm = 2\napical.cm = 0.5\nswc:4.Ra = 400\n"
                       "celsius = 34\n";
    c = make_spec(p, 6, text, NS_OK);
    if (c) {
        const double cm[4] = {1.0, 2.0, 2.0, 0.5}, Ra[4] = {100, 100, 400, 100};
        for (int k = 1; k < 4; ++k) {
            ns_section_info s;
            ns_cell_get_section(c, k, &s);
            const double lambda = 1e5 * sqrt(d / (4 * PI * f * Ra[k] * cm[k]));
            const int expect = (int)((s.length / (0.1 * lambda) + 0.9) / 2) * 2 + 1;
            CHECK_MSG(s.nseg == expect && s.Ra == Ra[k], "section %d: nseg %d Ra %g, NEURON's formula %d with Ra %g cm %g",
                      k, s.nseg, s.Ra, expect, Ra[k], cm[k]);
            /* a cylinder: the summed resistance is Ra L / (pi r^2) */
            CHECK_MSG(check_rel(s.ri_sum, r_cyl(Ra[k], s.length, 1.0)) < 1e-12, "section %d: ri_sum %g, want %g", k,
                      s.ri_sum, r_cyl(Ra[k], s.length, 1.0));
        }
        ns_cell_destroy(c);
    }
    /* start_diam: the copied parent point's diameter (a frustum 3 -> 2 um over 900 um) */
    c = make_spec(p, 6, "swc:4.start_diam = 3\n", NS_OK);
    if (c) {
        ns_section_info s;
        ns_cell_get_section(c, 2, &s);
        const double want = PI / 2 * (3.0 + 2.0) * sqrt(900.0 * 900.0 + 0.25);
        CHECK_MSG(s.first_point_id == 4 && check_rel(s.area, want) < 1e-12, "start_diam: area %.9g, frustum %.9g",
                  s.area, want);
        ns_cell_destroy(c);
    }
    /* parentx: the apical section (SWC 5-6) hangs from x = 0.25 of the basal section 1 (nseg 3: its
     * first segment, int(0.25 * 3) = 0, as NEURON's node_index), its geometry its own two points
     * (600 um, not 1,200 from the fork's point 3 on) */
    c = make_spec(p, 6, "all.nseg = 3\nswc:5.parentx = 0.25\n", NS_OK);
    if (c) {
        ns_section_info s1, s3;
        ns_cell_get_section(c, 1, &s1);
        ns_cell_get_section(c, 3, &s3);
        const int32_t *par = ns_tree_parent(ns_cell_tree(c));
        CHECK_MSG(s3.parent == 1 && s3.parent_x == 0.25 && s3.n3d == 2 && check_rel(s3.length, 600.0) < 1e-15,
                  "parentx: parent %d at %g, %d points, L %g; want 1 at 0.25, 2, 600", s3.parent, s3.parent_x,
                  s3.n3d, s3.length);
        CHECK_MSG(check_rel(s3.area, 2 * PI * 600.0) < 1e-12 && check_rel(s3.ri_sum, r_cyl(s3.Ra, 600.0, 1.0)) < 1e-12,
                  "parentx: area %g, ri %g", s3.area, s3.ri_sum);
        CHECK_MSG(par[s3.first_node] == s1.first_node, "parentx: first node's parent %d, want %d (section 1's "
                  "first segment)", par[s3.first_node], s1.first_node);
        ns_cell_destroy(c);
    }
    /* bad statements: file and line, the construct */
    const struct { const char *text, *needle; } bad[] = {
        {"soma.nseg = 3\nsec:9.nseg = 3\n", "cell.params:2: sec:9.nseg"},
        {"swc:77.Ra = 10\n", "cell.params:1: swc:77.Ra"},
        {"\nsoma.nseg = 2.5\n", "cell.params:2: soma.nseg = 2.5"},
        {"all.nseg = 0\n", "whole number"},
        {"sec:1.cm = 2\n", "cm is set per region"},
        {"axons.nseg = 3\n", "unknown location"},
        {"soma.Ra = -1\n", "must be > 0"},
        {"soma.nseg = x\n", "not a decimal number"},
        {"Ra = 0\n", "cell.params:1: Ra = 0 ohm cm: must be > 0"},
        {"sec:0.start_diam = 2\n", "does not start with a copy of its parent's point"},
        {"sec:1.start_diam = 2\n", "does not start with a copy"}, /* joined at the soma's middle */
        {"basal.start_diam = 2\n", "start_diam is set per section"},
        {"swc:4.start_diam = 0\n", "must be > 0"},
        {"swc:4.parentx = 1.5\n", "parentx must be in [0, 1]"},
        {"soma.parentx = 0.5\n", "parentx is set per section"},
        {"sec:0.parentx = 0.5\n", "is the root"},
        {"swc:5.parentx = 0.5\nswc:5.start_diam = 2\n", "cell.params:2: swc:5.start_diam"},
        {"swc:4.parentx = 0.5\n", "has one 3-D point of its own"},
        /* sections through the one location grammar (ns_location_parse) */
        {"sec:x.nseg = 3\n", "cell.params:1: sec:x.nseg: 'x' is not a section index or SWC id"},
        {"swc:-4.Ra = 10\n", "'-4' is not a section index or SWC id"},
        {"sec:99999999999.nseg = 3\n", "'99999999999' is not a section index"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        c = make_spec(p, 6, bad[k].text, NS_ERR_PARSE);
        CHECK_MSG(strstr(ns_last_error(), bad[k].needle) != NULL, "'%s': error '%s' lacks '%s'", bad[k].text,
                  ns_last_error(), bad[k].needle);
        ns_cell_destroy(c);
    }
    /* the parameter file accepts the same keys and refuses the same mistakes */
    ns_sim_params sp;
    ns_sim_params_init(&sp);
    const char *ok = "sec:3.nseg = 5\nswc:4.Ra = 200\ndend.nseg = 9\nRa = 80\n";
    CHECK_OK(ns_sim_params_parse(&sp, ok, strlen(ok), "p"));
    CHECK(sp.Ra == 80.0);
    CHECK(ns_sim_params_set(&sp, "sec:1.cm", 2.0) == NS_ERR_INVALID_ARGUMENT);
    CHECK(ns_sim_params_set(&sp, "soma.nseg", 0.5) == NS_ERR_INVALID_ARGUMENT);
}

/* NEURON's define_shape (after Import3d): a neurite on an interior point of a bent soma chain
 * (parentx 0.5, a wire) moves onto the soma's chord midpoint, not the point at half its arc;
 * a child of the last point stays; a second branch from a neurite's first point (parentx 0,
 * connect2prox) moves onto its parent's first 3-D point, and its own child with it. The
 * expected points are NEURON 9.0.2's x3d after h.define_shape() on this file. */
static void test_define_shape(void) {
    ns_morph_point p[9] = {pt(0, 0, 0, 5, 1, -1, 1),  pt(0, 10, 0, 5, 1, 0, 2),  pt(10, 10, 0, 5, 1, 1, 3),
                           pt(0, 15, 0, 1, 3, 1, 4),  pt(0, 25, 0, 1, 3, 3, 5),  pt(20, 10, 0, 1, 3, 2, 6),
                           pt(30, 10, 0, 1, 3, 5, 7), pt(20, 20, 0, 1, 3, 5, 8), pt(20, 30, 0, 1, 3, 7, 9)};
    ns_cell_t *c = make(p, 9, NS_NSEG_ONE, 0, NS_JUNCTIONS_MINIMAL);
    if (!c) return;
    /* per SWC id of a section's first own point: parentx, its start and end points */
    const struct { int64_t id; double px, a[3], b[3]; } want[4] = {
        {1, 0.0, {0, 0, 0}, {10, 10, 0}},
        {4, 0.5, {5, 10, 0}, {5, 20, 0}},
        {6, 1.0, {10, 10, 0}, {30, 10, 0}},
        {8, 0.0, {10, 10, 0}, {10, 30, 0}},
    };
    ns_cell_info info;
    ns_cell_get_info(c, &info);
    CHECK(info.sections == 4);
    const double *seg = ns_cell_segments(c);
    for (int k = 0; k < 4; ++k) {
        int found = 0;
        for (int32_t j = 0; j < info.sections; ++j) {
            ns_section_info si;
            ns_cell_get_section(c, j, &si);
            if (si.first_point_id != want[k].id) continue;
            found = 1;
            CHECK(si.parent_x == want[k].px);
            const double *q = seg + 6 * (size_t)si.first_node;
            for (int d = 0; d < 3; ++d)
                CHECK_MSG(fabs(q[d] - want[k].a[d]) < 1e-12 && fabs(q[3 + d] - want[k].b[d]) < 1e-12,
                          "section from SWC id %lld: (%g %g %g)-(%g %g %g)", (long long)want[k].id, q[0], q[1],
                          q[2], q[3], q[4], q[5]);
        }
        CHECK_MSG(found, "no section starts at SWC id %lld", (long long)want[k].id);
    }
    ns_cell_destroy(c);
}

int main(void) {
    test_define_shape();
    test_geometry_overflow();
    test_cylinder();
    test_frustum();
    test_segment_diam();
    test_y_junction();
    test_somas();
    test_nseg();
    test_section_spec();
    test_bad_input();
    {
        ns_morph_point p[4] = {pt(0, 0, 0, 1.0, 3, -1, 1), pt(50, 0, 0, 1.0, 3, 0, 2),
                               pt(100, 0, 0, 0.5, 3, 1, 3), pt(50, 30, 0, 0.5, 3, 1, 4)};
        for (int pol = 0; pol < 2; ++pol) {
            ns_cell_t *c = make(p, 4, NS_NSEG_FIXED_LENGTH, 7.0, pol ? NS_JUNCTIONS_NEURON : NS_JUNCTIONS_MINIMAL);
            if (c) check_matrix(c, "Y");
            ns_cell_destroy(c);
        }
    }
    const char *refs[] = {"ca1_ko20x-07", "celegans_M5", "dg_granule_1220882a", "purk_SDM_KO3_nosoma",
                          "ca1_h10", "ca3_l22", "ngf_eNGC_contour", "str_lts_noaxon", "hip_970529c"};
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; ++i) test_neuron_reference(refs[i]);
    test_all_morphologies();
    return check_summary("test_discretize");
}
