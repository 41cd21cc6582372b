/* The NMODL translator without a compiler: every .mod file of
 * data/mechanisms/ parses and generates its three sources; the generated C
 * has nocmodl's forms (cnexp, the TABLE lookup, the current's slope); and
 * bad input gets the error the docs promise (docs/mechanisms.md, "Errors"):
 * syntax errors and unsupported constructs with file and line, unknown ions,
 * undeclared names, solver forms NEURON would not run as written. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/nmodl.h"
#include "test_tmpdir.h"

#define MECH_DIR NS_TEST_DATA "/../../data/mechanisms"

static int n_files = 0;

static void all_files(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".mod")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ns_nmodl_t *m = NULL;
        CHECK_OK(ns_nmodl_parse_file(path, &m));
        if (!m) continue;
        for (int t = 0; t < 3; ++t) {
            char *text = NULL;
            const ns_status st = ns_nmodl_emit(m, (ns_nmodl_target)t, &text);
            if (t == NS_NMODL_CUDA && st == NS_ERR_UNSUPPORTED) { /* hocerr.mod, vbstatic.mod: host C */
                CHECK_MSG(strstr(ns_last_error(), "VERBATIM C uses") && strstr(ns_last_error(), "built for the CPU only"),
                          "%s: %s", path, ns_last_error());
                CHECK_MSG(strstr(path, "/hoc/"), "%s: %s", path, ns_last_error());
                continue;
            }
            CHECK_OK(st);
            CHECK(text && strlen(text) > 100);
            ns_nmodl_free(text);
        }
        ns_nmodl_destroy(m);
        n_files++;
    }
    closedir(d);
}

/* parse `text` as NAME; expect `status` and every needle in the message */
static void bad(const char *name, const char *text, ns_status status, const char *n1, const char *n2) {
    ns_nmodl_t *m = NULL;
    ns_status s = ns_nmodl_parse_string(text, name, &m);
    char *out = NULL;
    if (s == NS_OK) { /* some errors come from code generation */
        s = ns_nmodl_emit(m, NS_NMODL_HEADER, &out);
        ns_nmodl_free(out);
        ns_nmodl_destroy(m);
        m = NULL;
    }
    CHECK_MSG(s == status, "%s: got %s (%s)", name, ns_status_string(s), ns_last_error());
    CHECK(m == NULL);
    CHECK_MSG(strstr(ns_last_error(), n1) != NULL, "%s: '%s' not in \"%s\"", name, n1, ns_last_error());
    if (n2) CHECK_MSG(strstr(ns_last_error(), n2) != NULL, "%s: '%s' not in \"%s\"", name, n2, ns_last_error());
}

static char *out = NULL; /* the last emit's text */
static const char *emit(const char *text, ns_nmodl_target t) {
    ns_nmodl_free(out);
    out = NULL;
    ns_nmodl_t *m = NULL;
    CHECK_OK(ns_nmodl_parse_string(text, "t.mod", &m));
    if (m) CHECK_OK(ns_nmodl_emit(m, t, &out));
    ns_nmodl_destroy(m);
    return out ? out : "";
}

/* UNITS constants: NEURON 9.0.2's nocmodl values (validation/nmodl_units_constants.py), after the
 * file's definitions (mM) = (milli/liter) (um) = (micron); like nocmodl, no check of dimensions */
static const struct {
    const char *what, *unit;
    double value;
} UNITS_REF[] = {
    {"(faraday)", "(coulomb)", 0x1.78e555060882cp+16}, /* 96485.33212331001 */
    {"(faraday)", "(coulombs)", 0x1.78e555060882cp+16}, /* 96485.33212331001 */
    {"(faraday)", "(kilocoulombs)", 0x1.81f0fae775425p+6}, /* 96.48533212331002 */
    {"(faraday)", "(coul)", 0x1.78e555060882cp+16}, /* 96485.33212331001 */
    {"(k-mole)", "(joule/degC)", 0x1.0a1013e8990bep+3}, /* 8.31446261815324 */
    {"(R)", "(joule/degC)", 0x1.0a1013e8990bep+3}, /* 8.31446261815324 */
    {"(R)", "(millivolt-coulomb/degC)", 0x1.03d3b37125759p+13}, /* 8314.462618153239 */
    {"(R)", "(joule/kelvin)", 0x1.0a1013e8990bep+3}, /* 8.31446261815324 */
    {"(pi)", "(1)", 0x1.921fb54442d18p+1}, /* 3.141592653589793 */
    {"(e)", "(coulombs)", 0x1.7a4da290c1653p-63}, /* 1.602176634e-19 */
    {"(e)", "(coulomb)", 0x1.7a4da290c1653p-63}, /* 1.602176634e-19 */
    {"(boltzmann)", "(joule/kelvin)", 0x1.0b0e6d55e647cp-76}, /* 1.380649e-23 */
    {"(k)", "(joule/degC)", 0x1.0b0e6d55e647cp-76}, /* 1.380649e-23 */
    {"(mole)", "(1)", 0x1.fe185ca57c517p+78}, /* 6.02214076e+23 */
    {"(planck)", "(joule-sec)", 0x1.b860bde023111p-111}, /* 6.62607015e-34 */
    {"(hbar)", "(joule-sec)", 0x1.185a7057c690dp-113}, /* 1.0545718176461565e-34 */
    {"(faraday)", "(millicoulomb)", 0x1.700ff507e44fbp+26}, /* 96485332.12331001 */
    {"(e)", "(millicoulomb)", 0x1.716fd0c15cdcdp-53}, /* 1.602176634e-16 */
    {"(1)", "(1/mole)", 0x1.fe185ca57c518p+78}, /* 6.0221407600000005e+23 */
    {"(1)", "(mM)", 0x1.0000000000001p+0}, /* 1.0000000000000002 */
    {"(um)", "(m)", 0x1.0c6f7a0b5ed8dp-20}, /* 1e-06 */
    {"(faraday)", "(joule)", 0x1.78e555060882cp+16}, /* 96485.33212331001 */
    {"(1)", "(liter)", 0x1.f3ffffffffffep+9}, /* 999.9999999999998 */
};

static const char *emit(const char *text, ns_nmodl_target t);

static void units_constants(void) {
    int bad = 0;
    for (size_t k = 0; k < sizeof UNITS_REF / sizeof *UNITS_REF; ++k) {
        char mod[300];
        snprintf(mod, sizeof mod, "NEURON { SUFFIX u RANGE x }\nUNITS { (mM) = (milli/liter) (um) = (micron) C = %s %s }\n"
                 "ASSIGNED { x }\nBREAKPOINT { x = C }\n",
                 UNITS_REF[k].what, UNITS_REF[k].unit);
        const char *c = strstr(emit(mod, NS_NMODL_HEADER), "(*F0_) = "); /* written with 17 digits: exact */
        CHECK_MSG(c != NULL, "%s %s", UNITS_REF[k].what, UNITS_REF[k].unit);
        if (!c) continue;
        double got = strtod(c + 9, NULL);
        bad += got != UNITS_REF[k].value;
        CHECK_MSG(got == UNITS_REF[k].value, "UNITS C = %s %s: %.17g, nocmodl %.17g", UNITS_REF[k].what,
                  UNITS_REF[k].unit, got, UNITS_REF[k].value);
    }
    printf("UNITS constants: %zu against nocmodl's, %d differ\n", sizeof UNITS_REF / sizeof *UNITS_REF, bad);
}

/* VERBATIM C (issue 39): NEURON's names #define'd around the C as written, a block only hoc
 * could call left out; on the GPU where the C that the simulation runs is device C by the
 * allow-list (nmodl_cuda_verbatim.c): the C file's function it calls made host and device code */
/* text (as file) emitted for CUDA: built where why is NULL, else refused with why and also */
static void cuda_case(const char *text, const char *file, const char *why, const char *also, size_t k) {
    ns_nmodl_t *m = NULL;
    CHECK_OK(ns_nmodl_parse_string(text, file, &m));
    char *cu = NULL;
    const ns_status st = m ? ns_nmodl_emit(m, NS_NMODL_CUDA, &cu) : NS_ERR_INTERNAL;
    if (!why) CHECK_MSG(st == NS_OK && cu, "%s case %zu: %s", file, k, ns_last_error());
    else
        CHECK_MSG(st == NS_ERR_UNSUPPORTED && !cu && strstr(ns_last_error(), why) && strstr(ns_last_error(), also),
                  "%s case %zu: %s", file, k, ns_last_error());
    ns_nmodl_free(cu);
    ns_nmodl_destroy(m);
}

static void verbatim_emit(void) {
    static const char mod[] =
        "NEURON { SUFFIX vb RANGE g, gl USEION ca READ cai }\nPARAMETER { g = 1 }\nASSIGNED { gl cai }\n"
        "VERBATIM\nstatic double twice(double x) { return 2 * x; }\nENDVERBATIM\n"
        "FUNCTION f(a) {\nVERBATIM\n  _lf = twice(_la) + g + t + _ion_cai;\nENDVERBATIM\n}\n"
        "PROCEDURE fromhoc() {\nVERBATIM\n  if (ifarg(1)) gl = *getarg(1);\n  return 0;\nENDVERBATIM\n}\n"
        "INITIAL { gl = f(1) }\n";
    const char *h = emit(mod, NS_NMODL_HEADER);
    CHECK(strstr(h, "static double twice(double x)") != NULL);
    CHECK(strstr(h, "#define _lf ret_") != NULL);
    CHECK(strstr(h, "#define _la A_a") != NULL);
    CHECK(strstr(h, "#define g (*F0_)") != NULL);
    CHECK(strstr(h, "#define t p->t") != NULL);
    CHECK(strstr(h, "#define _ion_cai (p->ion[0].ci[NSM_ION(0)])") != NULL);
    CHECK(strstr(h, "#line 8 \"t.mod\"") != NULL);
    CHECK(strstr(h, "#undef _lf") != NULL);
    CHECK_MSG(strstr(h, "fromhoc") == NULL, "the PROCEDURE only hoc calls is left out");
    CHECK(strstr(h, "double hoc_Exp(double x)") != NULL); /* NEURON's helpers */
    CHECK(strstr(h, "NSV_HD static double twice(double x)") != NULL);
    CHECK(strstr(emit(mod, NS_NMODL_CUDA), "__global__ void nsm_vb_k_init") != NULL);
    CHECK(strstr(emit(mod, NS_NMODL_C), "nsm_vb_cuda_init") != NULL);
    /* what keeps it on the CPU: the first name outside the allow-list, by FILE:LINE (the refusal of
     * --cuda and the descriptor's cuda_why_not), in the C that the simulation runs only */
    static const struct {
        const char *top, *body, *why; /* C outside the blocks, f's C; NULL: device C */
    } cases[] = {
        {"", "uint32_t k = 3;\n  _lf = hoc_Exp(_la) + exp(g) + nrnRan4dbl(&k, 1);", NULL},
        {"", "_lf = 1;\n  fprintf(stderr, \"x %g\", _la);\n  fflush(stdout);", NULL}, /* the device's printf */
        {"", "FILE *fp = stdout;\n  _lf = 1;\n  fprintf(fp, \"x\");", "vb.mod:7: VERBATIM C uses FILE, which has no device version"},
        {"static void say(double a) { fprintf(stderr, \"%g\", a); }", "say(_la);\n  _lf = 1;",
         "vb.mod:3: VERBATIM C uses fprintf, which is host C in C outside the blocks"},
        /* a hoc Random never exists: reached, the pick stops the run (a prototype of it stays one) */
        {"extern double nrn_random_pick(void *r);", "_lf = g > 0 ? 1 : nrn_random_pick((void *)0);", NULL},
        {"static double pk(void) { return nrn_random_pick((void *)0); }", "_lf = pk();",
         "vb.mod:3: VERBATIM C uses nrn_random_pick, which needs the entry point's ppack p"},
        /* a Random123 stream's state on the device; making one is host memory */
        {"", "nrnran123_State s_ = {{0, 0, 0, 0}, {0, 0, 0, 0}, 0};\n  nrnran123_setseq(&s_, 3, 0);\n"
             "  _lf = nrnran123_dblpick(&s_) + nrnran123_normal(&s_, 0.0, 1.0);", NULL},
        {"", "nrnran123_State *s_ = nrnran123_newstream(1, 2);\n  _lf = 1;",
         "vb.mod:7: VERBATIM C uses nrnran123_newstream, which has no device version"},
        {"", "if (_la < 0) hoc_execerror(\"f\", 0);\n", NULL}, /* the ppack's error channel, density too */
        {"static void chk(double a) { if (a < 0) hoc_execerror(\"f\", 0); }", "chk(_la);\n  _lf = 1;",
         "vb.mod:3: VERBATIM C uses hoc_execerror, which needs the entry point's ppack p"},
        {"static double k0 = 2;", "_lf = k0;", "vb.mod:7: VERBATIM C uses k0, which has no device version"},
        {"double ext(double);", "_lf = ext(1);", "vb.mod:7: VERBATIM C uses ext, which is C outside the blocks"},
        {"static double one(void) { return drand48(); }", "_lf = one();",
         "vb.mod:3: VERBATIM C uses drand48, which has no device version"},
        /* a type of the file's C (presyn.inc's snshead.inc: `typedef struct SynS {...} SynS;`) */
        {"typedef struct pr { double a; } pr;", "pr q_;\n  pr *pq_ = &q_;\n  q_.a = _la;\n  _lf = pq_->a;", NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k) {
        char text[512];
        snprintf(text, sizeof text,
                 "NEURON { SUFFIX vb RANGE g }\nVERBATIM\n%s\nENDVERBATIM\nFUNCTION f(a) {\nVERBATIM\n  %s\n"
                 "ENDVERBATIM\n}\nPROCEDURE unused() {\nVERBATIM\n  fprintf(stderr, \"y\");\nENDVERBATIM\n}\n"
                 "PARAMETER { g = 1 }\nINITIAL { g = f(1) }\n", cases[k].top, cases[k].body);
        cuda_case(text, "vb.mod", cases[k].why, "mechanism vb is built for the CPU only", k);
    }
    /* a point process's CONSTRUCTOR runs on the host: where its C keeps what an allocator returns (a
     * POINTER slot, netrand.inc's; a RANGE variable, presyn.inc's), and the #define's that name it, are
     * host memory that device C may not use; C that never reaches them runs on the device */
    {
        static const struct {
            const char *store, *use, *why;
        } hm[] = {
            {"_p_sop = (double *)ecalloc(1, sizeof(st));", "y = 1;", NULL},
            {"_p_sop = (double *)ecalloc(1, sizeof(st));", "y = IDP ? 1 : 0;",
             "hm.mod:15: VERBATIM C uses IDP, which holds host memory that the CONSTRUCTOR's C makes (hm.mod:10: ecalloc"},
            {"link = (double)((unsigned long)hoc_Ecalloc(1, sizeof(st)));", "y = LNK->a;",
             "hm.mod:15: VERBATIM C uses LNK, which holds host memory that the CONSTRUCTOR's C makes (hm.mod:10: "
             "hoc_Ecalloc"},
            {"link = (double)((unsigned long)hoc_Ecalloc(1, sizeof(st)));", "y = link;",
             "hm.mod:15: VERBATIM C uses link, which holds host memory"},
        };
        for (size_t k = 0; k < sizeof hm / sizeof *hm; ++k) {
            char text[768];
            snprintf(text, sizeof text,
                     "NEURON { POINT_PROCESS hm RANGE y, link POINTER sop }\nASSIGNED { y sop link }\nVERBATIM\n"
                     "typedef struct st { double a; } st;\n#define IDP (*((st **)&(_p_sop)))\n"
                     "#define LNK ((st *)((unsigned long)link))\nENDVERBATIM\nCONSTRUCTOR {\nVERBATIM\n%s\n"
                     "ENDVERBATIM\n}\nBREAKPOINT {\nVERBATIM\n%s\nENDVERBATIM\n}\n",
                     hm[k].store, hm[k].use);
            cuda_case(text, "hm.mod", hm[k].why, "mechanism hm is built for the CPU only", k);
        }
    }
    /* the variables of C outside the blocks: the CUDA unit's copies renamed (the library would define
     * them twice: vecst.mod's iscr); after that C, the device's macros (its prototypes stay ones) */
    {
        static const char top[] =
            "NEURON { SUFFIX vb }\nVERBATIM\nextern double nrn_random_pick(void *r);\nint *scr = 0x0;\n"
            "static int keep;\nunsigned int scrsz = 0, n2;\nconst int k3 = 3;\ntypedef int tint;\n"
            "static int *grow(int n) { (void)n; return scr; }\nENDVERBATIM\nINITIAL { }\n";
        const char *th = emit(top, NS_NMODL_HEADER);
        const char *r = strstr(th, "#if defined(__CUDACC__)\n#define scr nsvcu_scr\n#define scrsz nsvcu_scrsz\n"
                                   "#define n2 nsvcu_n2\n#endif\n");
        const char *proto = strstr(th, "extern double nrn_random_pick(void *r);");
        const char *mac = strstr(th, "#define nrn_random_pick(r) NSV_HOC_ONLY(\"nrn_random_pick\")");
        CHECK_MSG(r && proto && mac && r < proto && proto < mac, "%s", th ? th : "");
    }
    /* the entry points run under the error channel (ABI 5); a static function is no state */
    const char *c = emit(mod, NS_NMODL_C);
    CHECK(strstr(c, "NSV_GUARD(\"vb\", nsm_vb_init)\n#define nsm_vb_init nsv_g_nsm_vb_init") != NULL);
    CHECK_MSG(strstr(c, "no derivative code for VERBATIM C\",\n    NULL,") != NULL, "thread-safe: %s",
              strstr(c, "no derivative code"));
}

/* ns_mech_desc.thread_unsafe: static state in VERBATIM C, unless the file says THREADSAFE */
static void thread_safety(void) {
    static const struct {
        const char *c, *why; /* the C outside the blocks; NULL: thread-safe */
    } cases[] = {
        {"static int calls;", "t.mod:6: VERBATIM C keeps state in the file-scope variable calls"},
        {"double last = 0, seen[4];", "t.mod:6: VERBATIM C keeps state in the file-scope variable last"},
        {"static const double k[2] = {1, 2};\nextern int nrn_nthread;\ntypedef struct { double a; } pair;", NULL},
        {"static double twice(double x);\nstatic double twice(double x) { return 2 * x; }", NULL},
        {"static double f(void) {\n  static int n;\n  return ++n;\n}",
         "t.mod:7: VERBATIM C keeps state in the static variable n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k)
        for (int safe = 0; safe < 2; ++safe) {
            char mod[512];
            snprintf(mod, sizeof mod,
                     "NEURON { SUFFIX ts RANGE g %s}\nPARAMETER { g = 1 }\nASSIGNED { x }\nINITIAL { x = g }\n"
                     "VERBATIM\n%s\nENDVERBATIM\n",
                     safe ? "THREADSAFE " : "", cases[k].c);
            const char *c = emit(mod, NS_NMODL_C);
            const char *at = strstr(c, "no derivative code for VERBATIM C\",\n    ");
            const char *end = at ? at + strlen("no derivative code for VERBATIM C\",\n    ") : "";
            if (cases[k].why && !safe)
                CHECK_MSG(at && end[0] == '"' && !strncmp(end + 1, cases[k].why, strlen(cases[k].why)),
                          "case %zu: %.160s", k, end);
            else
                CHECK_MSG(at && !strncmp(end, "NULL,", 5), "case %zu (THREADSAFE %d): %.160s", k, safe, end);
        }
}

/* A TABLE'd FUNCTION that reads a GLOBAL that INITIAL sets, in a file with VERBATIM and without THREADSAFE
 * (nocmodl: not thread safe; test/tablazy.mod against NEURON in test_nmodl_neuron): built at its first
 * call, on the CPU loop only (cuda_why_not names the TABLE); THREADSAFE, or no VERBATIM: before INITIAL */
static void table_lazy(void) {
    static const char *fmt = "NEURON { SUFFIX tl %s }\nPARAMETER { k }\nASSIGNED { v x }\nINITIAL { k = 2\n x = f(v) }\n"
                             "BREAKPOINT { x = f(v)\n g() }\nFUNCTION f(v) {\n TABLE FROM -1 TO 1 WITH 4\n f = v / k\n}\n"
                             "PROCEDURE g() {\n%s}\n";
    static const char *vb = "VERBATIM\nreturn 0;\nENDVERBATIM\n";
    char mod[400];
    for (int c = 0; c < 3; c++) {
        snprintf(mod, sizeof mod, fmt, c == 1 ? "THREADSAFE" : "", c == 2 ? "" : vb);
        const char *h = emit(mod, NS_NMODL_HEADER);
        const int lazy = strstr(h, "if (T_[0] == 0.0) nsm_tl_table_update_(p, 1);") != NULL;
        CHECK_MSG(lazy == (c == 0), "case %d: the table built at the first call %d", c, lazy);
        const char *why = strstr(emit(mod, NS_NMODL_C), "t.mod:9: a TABLE whose block reads a GLOBAL");
        CHECK_MSG((why != NULL) == (c == 0), "case %d: cuda_why_not names the TABLE", c);
    }
}

int main(void) {
    table_lazy();
    all_files(MECH_DIR "/neuron");
    all_files(MECH_DIR "/bbp");
    all_files(MECH_DIR "/test");
    all_files(MECH_DIR "/kinetic");
    all_files(MECH_DIR "/electrode");
    all_files(MECH_DIR "/events");
    all_files(MECH_DIR "/hoc");
    all_files(NS_TEST_DATA "/nmodl_gpu");
    CHECK(n_files == 72); /* neuron, bbp, test, kinetic, electrode, events, hoc, nmodl_gpu (verbatim: verbatim_emit) */
    units_constants();
    verbatim_emit();
    thread_safety();

    /* the generated forms */
    {
        const char *hh;
        ns_nmodl_t *m = NULL;
        CHECK_OK(ns_nmodl_parse_file(MECH_DIR "/neuron/hh.mod", &m));
        char *text = NULL;
        if (m) CHECK_OK(ns_nmodl_emit(m, NS_NMODL_HEADER, &text));
        hh = text ? text : "";
        /* m' = (minf - m)/mtau by cnexp: nocmodl's arithmetic, with its
         * target -(minf/mtau)/(-1/mtau) as minf (nsm_exp: the C library's exp
         * on the GPU, a vectorising polynomial on the host), the three
         * exponents dt (-1/tau) from one division, of the clamped taus
         * where one is out of its range (emit_one_division;
         * tests/mech/test_table_rows.c its values) */
        CHECK(strstr(hh, "const double x0_ = (*F12_);") && strstr(hh, "*t0_ = ((*F9_));") &&
              strstr(hh, "const double d_ = (p->dt * (-1.0)) / ((x0_ * x1_) * x2_);") &&
              strstr(hh, "*a0_ = d_ * (x1_ * x2_);") && strstr(hh, "*a2_ = d_ * (x0_ * x1_);") &&
              strstr(hh, "        *a0_ = (x0_ == x0_ ? du_ : x0_) * (u1_ * u2_);") &&
              strstr(hh, "(*F15_) = (*F15_) + (1. - e0_) * (t0_ - (*F15_));"));
        /* in three stages (nmodl_gen_block.c, cnexp_staged), joined for one instance */
        CHECK(strstr(hh, "nsm_hh_d_states_post(p, F0_, F1_, F2_, F3_, F4_, F5_, F6_, F7_, F8_, F9_, F10_, F11_, F12_, "
                         "F13_, F14_, F15_, F16_, F17_, I0_, I1_, i_, nsm_exp(a0_), t0_, nsm_exp(a1_), t1_, nsm_exp(a2_), t2_);"));
        /* currents affine in v (nmodl_affine.c): one evaluation, the slope gna + gk + gl (and each ion's
         * didv its own), no second evaluation at v + .001 */
        CHECK(strstr(hh, "double g_ = (*F7_) + (*F8_) + (*F2_);") && !strstr(hh, "v_ + .001") &&
              strstr(hh, "NSM_ADD(p->ion[0].didv[NSM_ION(0)], (*F7_) * w_);"));
        /* the slope (I(v + .001) - I(v)) / .001 elsewhere (nsm_slope: the division on the host; on the GPU the
         * product by 1000 corrected by its remainder, the same double: tests/nmodl/test_nmodl_cuda.c) and the
         * TABLE's clamped ends */
        CHECK(strstr(hh, "#ifdef __CUDA_ARCH__\n    const double q = x * 1000.0;\n    return fma(fma(-q, .001, x), 1000.0, q);\n"
                         "#else\n    return x / .001;\n#endif"));
        CHECK(strstr(hh, "hi_ = xi_ >= 200.") && strstr(hh, "const double xi_ = T_[3] * (x_ - T_[2]);") &&
              strstr(hh, "nsm_hh_p_rates_at(p, A_v, &k_, &t_);"));
        /* the lookup has no branch and selects no loaded value (one
         * interpolation for every case): usetable is the only test, and the
         * loops hoist it */
        CHECK(strstr(hh, "(*F9_) = a_ + t_ * (b_ - a_);") && !strstr(hh, "if (xi_") &&
              !strstr(hh, "? a_") && strstr(hh, "*k_ = j_ * in_ + 200 * hi_;") &&
              strstr(hh, "const int k1_ = k_ + (k_ < 200);"));
        /* the rows (values, then differences to the next entry) and the first
         * stage that takes the values looked up in them in the place of the
         * procedure's call */
        CHECK(strstr(hh, "#define NSM_hh_rates_ROW 16") && strstr(hh, "r_[8 + c_] = col_[k1_] - col_[k_];") &&
              strstr(hh, "(*F12_) = y_[1 * s_];") &&
              strstr(hh, "nsm_hh_p_rates_set(p, F0_, F1_, F2_, F3_, F4_, F5_, F6_, F7_, F8_, F9_, F10_, F11_, F12_, "
                         "F13_, F14_, F15_, F16_, F17_, I0_, I1_, i_, node_, v_, y_, s_);"));
        CHECK(strstr(hh, "q10 = pow(3.0, NSM_DIVC((p->celsius - 6.3), 10.0));")); /* x / 10 on the host, x * 0.1 on the GPU */
        ns_nmodl_free(text);
        ns_nmodl_destroy(m);
    }
    const char *ok = "NEURON { SUFFIX ok USEION ca READ cai, eca WRITE ica RANGE g }\n"
                     "PARAMETER { g = 1 }\nSTATE { s }\n"
                     "BREAKPOINT { SOLVE d METHOD cnexp\n ica = g*s*(v - eca) }\n"
                     "DERIVATIVE d { s' = -s/2 + cai }\n";
    const char *c = emit(ok, NS_NMODL_HEADER);
    CHECK(strstr(c, "p->ion[0].ci[NSM_ION(0)]") && strstr(c, "p->ion[0].e[NSM_ION(0)]"));
    CHECK(strstr(c, "NSM_ADD(p->ion[0].i[NSM_ION(0)]"));
    /* a READ ion variable declared in PARAMETER before the NEURON block (Migliore's kdr, kap,
     * kad: `PARAMETER { ek (mV) }` then `USEION k READ ek`) is the ion's value, as nocmodl
     * reads it: the same code as the file with the NEURON block first, which reads the ion's e */
    {
        const char *body = "BREAKPOINT {\n ik = g * (v - ek)\n}\n";
        char first[512], later[512];
        snprintf(later, sizeof later, "PARAMETER {\n g = 0.01\n ek (mV)\n}\nNEURON {\n SUFFIX kx\n USEION k READ ek "
                 "WRITE ik\n RANGE g\n}\n%s", body);
        snprintf(first, sizeof first, "NEURON {\n SUFFIX kx\n USEION k READ ek WRITE ik\n RANGE g\n}\nPARAMETER {\n "
                 "g = 0.01\n ek (mV)\n}\n%s", body);
        char *a = strdup(emit(first, NS_NMODL_HEADER));
        c = emit(later, NS_NMODL_HEADER);
        CHECK(a && strstr(a, "p->ion[0].e[") && strcmp(a, c) == 0);
        free(a);
    }
    c = emit("NEURON { SUFFIX k2 }\nSTATE { s }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d { s' = 3 }\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "(*F0_) = (*F0_) + p->dt * (3.0);")); /* x' = b: x += dt b */
    /* the target as inf only where the coefficient is -1/tau with the same tau */
    c = emit("NEURON { SUFFIX k3 }\nPARAMETER { a = 1 b = 2 }\nSTATE { s }\nBREAKPOINT { SOLVE d METHOD cnexp }\n"
             "DERIVATIVE d { s' = (a - s)/b }\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "*t0_ = (p->global[0]);"));
    c = emit("NEURON { SUFFIX k4 }\nPARAMETER { a = 1 b = 2 }\nSTATE { s }\nBREAKPOINT { SOLVE d METHOD cnexp }\n"
             "DERIVATIVE d { s' = (a - 2*s)/b }\n",
             NS_NMODL_HEADER);
    /* the host's -c/a as nocmodl's; the GPU's with the common denominator and the signs cancelled: a / 2 */
    CHECK(strstr(c, "*t0_ = NSM_GPU(NSM_DIVC((p->global[0]), 2.0), -((p->global[0] / p->global[1])) / "
                    "(((-2.0) / p->global[1])));"));
    /* an equation reading a state that an earlier one updates: in place, in order (cnexp) */
    c = emit("NEURON { SUFFIX k5 }\nSTATE { x y }\nBREAKPOINT { SOLVE d METHOD cnexp }\n"
             "DERIVATIVE d { x' = -x\n y' = x - y }\n",
             NS_NMODL_HEADER);
    CHECK(!strstr(c, "_pre(") && strstr(c, "(*F1_) = (*F1_) + (1. - nsm_exp(p->dt * ((-1.0)))) * (-((*F0_)) / ((-1.0)) - "
                                           "(*F1_));"));
    c = emit("NEURON { POINT_PROCESS syn }\nSTATE { g }\nBREAKPOINT { SOLVE d METHOD cnexp }\n"
             "DERIVATIVE d { g' = -g }\nNET_RECEIVE(w) { g = g + w }\n", NS_NMODL_CUDA);
    CHECK(strstr(c, "__global__ void nsm_syn_k_current(ns_mech_ppack pp)"));
    c = emit("NEURON { POINT_PROCESS syn }\nSTATE { g }\nBREAKPOINT { SOLVE d METHOD cnexp }\n"
             "DERIVATIVE d { g' = -g }\nNET_RECEIVE(w) { g = g + w }\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "#if defined(__CUDA_ARCH__) && 1\n#define NSM_ADD(a, x) atomicAdd(&(a), (x))")); /* point: atomics */
    CHECK(strstr(c, "nsm_syn_net_receive_F(ns_mech_ppack *p, double *F0_, int i_, int node_, double *W_, double A_flag)"));
    /* the entry points on the ppack's arrays: each field's address */
    CHECK(strstr(c, "nsm_syn_net_receive_one(ns_mech_ppack *p, int i_, int node_, double *w_, double flag_) {\n"
                    "    nsm_syn_net_receive_F(p, &p->field[0][i_], i_, node_, w_, flag_);"));
    c = emit("NEURON { SUFFIX x }\n", NS_NMODL_C); /* a mechanism with nothing in it */
    CHECK(strstr(c, "const ns_mech_desc nsm_x_desc = {"));

    /* errors: file, line, the construct */
    bad("syntax.mod", "NEURON { SUFFIX x }\nPARAMETER { g = 1 }\nBREAKPOINT {\n  g = = 2\n}\n", NS_ERR_PARSE,
        "syntax.mod:4:", "expected an expression");
    /* FROM/TO bounds that are not numbers, or cut by the end of the file (the fuzzer found the latter
     * reading past the tokens) */
    bad("from_eof.mod", "NEURON { SUFFIX x }\nSTATE {\n  z FROM", NS_ERR_PARSE, "from_eof.mod:3:", "after FROM");
    bad("from_to.mod", "NEURON { SUFFIX x }\nSTATE {\n  z FROM 0 TOO 1\n}\n", NS_ERR_PARSE, "from_to.mod:3:", "expected TO");
    bad("to_name.mod", "NEURON { SUFFIX x }\nSTATE {\n  z FROM -1 TO y\n}\n", NS_ERR_PARSE, "to_name.mod:3:", "after TO");
    bad("brace.mod", "NEURON { SUFFIX x }\nINITIAL {\n", NS_ERR_PARSE, "brace.mod:3:", "missing '}'");
    /* LONGITUDINAL_DIFFUSION (the diffusion against NEURON: tests/sim/test_sim_ldifus_neuron.c): its state
     * needs an earlier COMPARTMENT (nocmodl's "must be declared in COMPARTMENT"), must be a STATE, and the
     * statement belongs in a KINETIC block */
    bad("ldifus.mod", "NEURON { SUFFIX x USEION ca READ cai WRITE cai }\nSTATE { cai }\nKINETIC k {\n"
        "  LONGITUDINAL_DIFFUSION 0.6 {cai}\n  ~ cai << (0)\n}\n", NS_ERR_INVALID_ARGUMENT, "ldifus.mod:4:",
        "LONGITUDINAL_DIFFUSION: 'cai' must be declared in an earlier COMPARTMENT statement");
    bad("ldifus_late.mod", "NEURON { SUFFIX x USEION ca READ cai WRITE cai }\nSTATE { cai }\nKINETIC k {\n"
        "  LONGITUDINAL_DIFFUSION 0.6 {cai}\n  COMPARTMENT 2 {cai}\n  ~ cai << (0)\n}\n", NS_ERR_INVALID_ARGUMENT,
        "ldifus_late.mod:4:", "must be declared in an earlier COMPARTMENT statement");
    bad("ldifus_par.mod", "NEURON { SUFFIX x }\nPARAMETER { g = 1 }\nSTATE { a }\nKINETIC k {\n"
        "  COMPARTMENT 2 {a}\n  LONGITUDINAL_DIFFUSION 0.6 {g}\n  ~ a << (0)\n}\n", NS_ERR_INVALID_ARGUMENT,
        "ldifus_par.mod:6:", "LONGITUDINAL_DIFFUSION: 'g' must be a STATE");
    bad("ldifus_out.mod", "NEURON { SUFFIX x }\nSTATE { a }\nINITIAL {\n  LONGITUDINAL_DIFFUSION 0.6 {a}\n}\n",
        NS_ERR_PARSE, "ldifus_out.mod:4:", "LONGITUDINAL_DIFFUSION outside a KINETIC block");
    /* nocmodl's implicit X0 of a STATE X, named GLOBAL (cadifusl.mod's `GLOBAL Buffer0`): a GLOBAL with X's
     * START value, which X takes before INITIAL (each element of an array) */
    {
        const char *s0 = "NEURON { SUFFIX x GLOBAL b0 }\nSTATE { a b[2] START 3 }\nBREAKPOINT { SOLVE k METHOD sparse }\n"
                         "KINETIC k {\n  ~ a <-> b[0] (1, 2)\n  ~ b[0] <-> b[1] (1, 2)\n}\n";
        const char *h = emit(s0, NS_NMODL_HEADER);
        CHECK(strstr(h, "    *F0_ = 0.0;\n    *F1_ = p->global[0];\n    *F2_ = p->global[0];\n"));
        const char *cc = emit(s0, NS_NMODL_C);
        CHECK(strstr(cc, "nsm_x_gdefaults[] = {3") && strstr(cc, "\"b0\""));
        bad("s0.mod", "NEURON { SUFFIX x GLOBAL c0 }\nSTATE { a }\n", NS_ERR_INVALID_ARGUMENT, "s0.mod:1:",
            "GLOBAL c0: not declared");
    }
    bad("partial.mod", "NEURON { SUFFIX x }\nSTATE { a b }\n\nPARTIAL k {\n  a' = 1\n}\n", NS_ERR_UNSUPPORTED,
        "partial.mod:4:", "PARTIAL");
    /* KINETIC: the lowering's errors and decisions (the solver against NEURON: test_nmodl_neuron.c) */
    bad("kcnexp.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nBREAKPOINT {\n SOLVE k METHOD cnexp\n}\nKINETIC k {\n"
        "  ~ a <-> b (1, 2)\n}\n", NS_ERR_UNSUPPORTED, "kcnexp.mod:4:", "needs METHOD sparse");
    bad("kflux.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nKINETIC k {\n  ~ a <-> b (1, 2)\n  ~ b << (1)\n"
        "  CONSERVE a + b = 1\n}\n", NS_ERR_INVALID_ARGUMENT, "kflux.mod:5:", "'b' is conserved and has a flux");
    bad("kcons.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nPARAMETER { c = 1 }\nKINETIC k {\n  ~ a <-> b (1, 2)\n"
        "  CONSERVE a + c = 1\n}\n", NS_ERR_INVALID_ARGUMENT, "kcons.mod:6:", "CONSERVE: 'c' is not a STATE");
    bad("kreact.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nKINETIC k {\n  ~ a <> b (1, 2)\n}\n", NS_ERR_PARSE,
        "kreact.mod:4:", "expected '<->', '->' or '<<'");
    bad("koutside.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nINITIAL {\n  ~ a <-> b (1, 2)\n}\n", NS_ERR_PARSE,
        "koutside.mod:4:", "outside a KINETIC block");
    bad("kss.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nBREAKPOINT {\n SOLVE k STEADYSTATE sparse\n}\nKINETIC k {\n"
        "  ~ a <-> b (1, 2)\n}\n", NS_ERR_UNSUPPORTED, "kss.mod:4:", "only in INITIAL");
    /* SOLVE k METHOD sparse in INITIAL: a step of dt there, BREAKPOINT's step function (test/kinit.mod) */
    c = emit("NEURON { SUFFIX ki }\nSTATE { a b }\nINITIAL {\n SOLVE k METHOD sparse\n}\n"
             "BREAKPOINT { SOLVE k METHOD sparse }\nKINETIC k {\n  ~ a <-> b (1, 2)\n}\n", NS_NMODL_HEADER);
    {
        const char *in = strstr(c, "void nsm_ki_init_F("), *call = in ? strstr(in, "nsm_ki_d_k(p, ") : NULL;
        CHECK(in && call && call < strstr(in, "\n}\n"));
    }
    /* ... where BREAKPOINT's is euler: nocmodl writes the block's derivative form only, and its sparse call in
     * INITIAL would read that as a matrix */
    bad("kmix.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nINITIAL {\n SOLVE k METHOD sparse\n}\n"
        "BREAKPOINT { SOLVE k METHOD euler }\nKINETIC k {\n  ~ a <-> b (1, 2)\n}\n", NS_ERR_UNSUPPORTED, "kmix.mod:4:",
        "BREAKPOINT solves the KINETIC block by euler");
    bad("kcall.mod", "NEURON { SUFFIX x RANGE y }\nASSIGNED { y }\nSTATE { a b }\nBREAKPOINT {\n y = k()\n}\n"
        "KINETIC k {\n  ~ a <-> b (1, 2)\n}\n", NS_ERR_PARSE, "kcall.mod:5:", "KINETIC k called as a function");
    /* a first-order scheme: one Newton step (nocmodl's _linmat 1), CONSERVE replacing the row of its last
     * state, mass action's matrix with the rates held constant; a second-order one iterates */
    c = emit("NEURON { SUFFIX k3 }\nPARAMETER { kf = 1 kb = 2 }\nSTATE { c o }\nINITIAL { SOLVE k STEADYSTATE sparse }\n"
             "BREAKPOINT { SOLVE k METHOD sparse }\nKINETIC k {\n  ~ c <-> o (kf, kb)\n  CONSERVE c + o = 1\n}\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "L_f_flux = (p->global[0] * (*F0_));") && strstr(c, "L_kinF_0 = (L_kinF_0 - (L_f_flux - L_b_flux));"));
    CHECK(strstr(c, "L_kinJ_0_0 = (L_kinJ_0_0 + L_kinT_);") && strstr(c, "L_kinF_1 = 1.0;"));
    CHECK(strstr(c, "L_kinJ_1_1 = 1.0;") && strstr(c, "L_kinF_1 = (L_kinF_1 - (*F1_));"));
    CHECK(strstr(c, "r_[0] += -(1.0 / dt_) * (*x_[0] - x0_[0]) * c_[0];") && !strstr(c, "r_[1] +="));
    CHECK(strstr(c, "_ks_k(p, F0_, F1_, i_, node_, v_, p->dt, 1);"));
    CHECK(strstr(c, "_ks_k(p, F0_, F1_, i_, node_, v_, 1e9, 0);") && strstr(c, "nsm_k3_ss_k(p, F0_, F1_, i_, node_, v_);"));
    c = emit("NEURON { SUFFIX k4 }\nSTATE { a b ab }\nBREAKPOINT { SOLVE k METHOD sparse }\nKINETIC k {\n"
             "  COMPARTMENT 2 {a}\n  ~ a + b <-> ab (3, 4)\n}\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "_ks_k(p, F0_, F1_, F2_, i_, node_, v_, p->dt, 0);") && strstr(c, "c_[0] = 2.0;"));
    CHECK(strstr(c, "L_f_flux = ((3.0 * (*F0_)) * (*F1_));") && strstr(c, "L_kinT_ = (3.0 * (*F1_));"));
    /* VERBATIM C (issue 39): what has no meaning without NEURON's hoc interpreter or its own
     * instance layout is refused at its line, naming the name */
    bad("verbatim.mod", "NEURON { SUFFIX x }\nINITIAL {\nVERBATIM\n double y;\n y = *getarg(1);\nENDVERBATIM\n}\n",
        NS_ERR_UNSUPPORTED, "verbatim.mod:5:", "getarg, which needs NEURON's hoc interpreter");
    bad("vraw.mod", "NEURON { SUFFIX x }\nPROCEDURE f() {\nVERBATIM\n _p[0] = 1;\nENDVERBATIM\n}\nINITIAL { f() }\n",
        NS_ERR_UNSUPPORTED, "vraw.mod:4:", "_p, NEURON's own instance data");
    bad("vcalled.mod", "NEURON { SUFFIX x }\nPROCEDURE f() {\nVERBATIM\n vector_arg(1);\nENDVERBATIM\n}\n"
        "BREAKPOINT { f() }\n", NS_ERR_UNSUPPORTED, "vcalled.mod:4:", "in PROCEDURE f, which this file's own code calls");
    /* BEFORE/AFTER: the five NEURON runs; a SOLVE there is nocmodl's call in place (below), not in a CONSTRUCTOR */
    bad("ba1.mod", "NEURON { SUFFIX x }\nASSIGNED { y }\nAFTER BREAKPOINT { y = 1 }\n", NS_ERR_UNSUPPORTED,
        "ba1.mod:3:", "AFTER BREAKPOINT: NEURON runs BEFORE BREAKPOINT, AFTER SOLVE");
    bad("ba2.mod", "NEURON { SUFFIX x }\nSTATE { y }\nDERIVATIVE d { y' = -y }\nCONSTRUCTOR {\n SOLVE d METHOD cnexp\n}\n",
        NS_ERR_UNSUPPORTED, "ba2.mod:5:", "SOLVE d in a CONSTRUCTOR or DESTRUCTOR");
    bad("ba3.mod", "NEURON { SUFFIX x }\nSTATE { y }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d { y' = -y }\n"
        "BEFORE STEP {\n SOLVE d METHOD euler\n}\n", NS_ERR_UNSUPPORTED, "ba3.mod:6:", "in a BEFORE/AFTER block");
    c = emit("NEURON { SUFFIX bs RANGE u }\nASSIGNED { u }\nSTATE { y }\nBREAKPOINT { SOLVE d METHOD derivimplicit }\n"
             "DERIVATIVE d { y' = -y }\nBEFORE STEP {\n SOLVE d METHOD derivimplicit\n SOLVE q\n}\nPROCEDURE q() { u = u + 1 }\n",
             NS_NMODL_HEADER);
    {   /* both called in the hook, and the step once more in state() */
        const char *h1 = strstr(c, "nsm_bs_d_d(p, "), *h2 = h1 ? strstr(h1 + 1, "nsm_bs_d_d(p, ") : NULL;
        CHECK(h1 && h2 && strstr(c, "nsm_bs_p_q(p, "));
    }
    {   /* two AFTER SOLVE blocks are one, in file order; the hooks are host entry points and, a
         * density mechanism's CONSTRUCTOR too, device launches (ABI 7's cuda_hooks) */
        const char *ba = "NEURON { SUFFIX x RANGE y }\nASSIGNED { y }\nAFTER SOLVE { y = 1 }\n"
                         "AFTER SOLVE { y = y + 2 }\nCONSTRUCTOR { y = 5 }\n";
        const char *o = emit(ba, NS_NMODL_C);
        CHECK(o && strstr(o, "{NULL, nsm_x_hook1, NULL, NULL, NULL, nsm_x_hook5, NULL}"));
        CHECK(o && strstr(o, "#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init,"));
        CHECK(o && strstr(o, "#ifdef NS_MECH_WITH_CUDA\n    {NULL, nsm_x_cuda_hook1, NULL, NULL, NULL, nsm_x_cuda_hook5, "
                             "NULL},\n#else\n    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},\n#endif\n"
                             "    NS_MECH_CUDA_ERRORS_NONE,\n    NULL,\n    0, NULL, NULL,\n")); /* no VERBATIM C: cannot fail on the device */
        CHECK(o && strstr(o, "int nsm_x_cuda_hook1(const ns_mech_ppack *, void *);"));
        const char *cu = emit(ba, NS_NMODL_CUDA);
        CHECK(cu && strstr(cu, "extern \"C\" int nsm_x_cuda_hook1(") && strstr(cu, "extern \"C\" int nsm_x_cuda_hook5(") &&
              strstr(cu, "nsm_x_hook5_one(&pp, i, "));
        /* a DESTRUCTOR, and a point process's CONSTRUCTOR (made on the host with the synapses), run on
         * the host on the GPU loop too: CUDA entry points, no device launch for them, no reason */
        o = emit("NEURON { SUFFIX x RANGE y }\nASSIGNED { y }\nAFTER SOLVE { y = 1 }\nDESTRUCTOR { y = 5 }\n",
                 NS_NMODL_C);
        CHECK(o && strstr(o, "#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init,") &&
              strstr(o, "{NULL, nsm_x_cuda_hook1, NULL, NULL, NULL, NULL, NULL},") && !strstr(o, "nsm_x_cuda_hook6") &&
              !strstr(o, "CPU loop only"));
        o = emit("NEURON { POINT_PROCESS x RANGE y }\nASSIGNED { y }\nCONSTRUCTOR { y = 5 }\n", NS_NMODL_C);
        CHECK(o && strstr(o, "#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init,") && !strstr(o, "nsm_x_cuda_hook5") &&
              !strstr(o, "CPU loop only"));
        const char *h = emit("NEURON { SUFFIX x RANGE y }\nASSIGNED { y }\nAFTER SOLVE { y = 1 }\n"
                             "AFTER SOLVE { y = y + 2 }\n", NS_NMODL_HEADER);
        const char *a = h ? strstr(h, "nsm_x_hook1_F(") : NULL, *b = a ? strstr(a, "1.0") : NULL;
        CHECK(b && strstr(b, "2.0")); /* both bodies, the first first */
    }
    /* C functions outside the blocks that need hoc: left out where nothing kept calls them (g, and h
     * that calls g), refused where INITIAL reaches them */
    {
        const char *top = "NEURON { SUFFIX x }\nVERBATIM\nstatic void g(void) {\n  hoc_oc(0);\n}\n"
                          "static double h(Object *o) { g(); return 1; }\nstatic double k2(double a) { return 2 * a; }\n"
                          "ENDVERBATIM\nINITIAL {\nVERBATIM\n  k2(1);\nENDVERBATIM\n}\n";
        const char *hd = emit(top, NS_NMODL_HEADER);
        CHECK_MSG(!strstr(hd, "hoc_oc(0)") && !strstr(hd, "static double h(") && strstr(hd, "static double k2("),
                  "g and h left out, k2 kept");
        bad("vtop.mod", "NEURON { SUFFIX x }\nVERBATIM\nstatic void g(void) {\n  hoc_oc(0);\n}\n"
            "static void h(void) { g(); }\nENDVERBATIM\nINITIAL {\nVERBATIM\n  h();\nENDVERBATIM\n}\n",
            NS_ERR_UNSUPPORTED, "vtop.mod:4:", "hoc_oc");
    }
    /* a FUNCTION called from C both with NEURON's thread arguments and without (nocmodl's unthreaded calls,
     * f(x), are given the instance's arguments: test_nmodl_neuron.c's vbchan) */
    {   /* such a call's prototype in the C (136095's stats.mod: `double betacf(double,double,double);`) is blanked,
         * its line kept: the translator declares the function */
        const char *h = emit("NEURON { SUFFIX x }\nFUNCTION f(a) { f = a }\nINITIAL {\nVERBATIM\n double f(double);\n"
                             " f(1);\nENDVERBATIM\n}\n", NS_NMODL_HEADER);
        CHECK(h && !strstr(h, "double f(double);") && strstr(h, "#define f(a0_) nsm_x_f_f(p, i_, node_, v_, a0_)") &&
              strstr(h, "\n                  \n f(1);"));
    }
    bad("vmixed.mod", "NEURON { SUFFIX x }\nFUNCTION f(a) { f = a }\nINITIAL {\nVERBATIM\n f(1);\n"
        " f(_threadargscomma_ 2);\nENDVERBATIM\n}\n", NS_ERR_UNSUPPORTED, "vmixed.mod:5:",
        "calls f both with NEURON's thread arguments (_threadargscomma_) and without them: call it one way");
    {   /* a CONSTRUCTOR's ifarg and getarg: a point process's location is its one argument, an artificial
         * cell has none (nsv_ctor_ifarg); elsewhere they stay refused (verbatim.mod above) */
        const char *ctor = "NEURON { POINT_PROCESS x RANGE y }\nASSIGNED { y }\nCONSTRUCTOR {\nVERBATIM\n"
                           " if (ifarg(2)) y = *getarg(2);\nENDVERBATIM\n}\n";
        const char *h = emit(ctor, NS_NMODL_HEADER);
        CHECK(h && strstr(h, "#define ifarg(k) nsv_ctor_ifarg(1, (int)(k))") &&
              strstr(h, "#define getarg(k) nsv_ctor_getarg(__FILE__, __LINE__, (int)(k))"));
        h = emit("NEURON { ARTIFICIAL_CELL x }\nCONSTRUCTOR {\nVERBATIM\n if (ifarg(1)) {}\nENDVERBATIM\n}\n",
                 NS_NMODL_HEADER);
        CHECK(h && strstr(h, "#define ifarg(k) nsv_ctor_ifarg(0, (int)(k))"));
        /* the names a macro of the file's C names are defined where the macro is used; a POINTER whose
         * slot the C writes is the C's storage, a void * in a field (no POINTER of the descriptor) */
        h = emit("NEURON { SUFFIX x RANGE link POINTER sop }\nASSIGNED { link sop }\nVERBATIM\n"
                 "#define LC ((double *)((unsigned long)link))\n#define SP (*((double **)&(_p_sop)))\n"
                 "ENDVERBATIM\nINITIAL {\nVERBATIM\n SP = LC;\nENDVERBATIM\n}\n", NS_NMODL_HEADER);
        CHECK(h && strstr(h, "#define link (*F0_)") && strstr(h, "#define _p_sop (*(void **)(F1_))"));
        const char *cc = emit("NEURON { SUFFIX x POINTER sop }\nASSIGNED { sop }\nINITIAL {\nVERBATIM\n"
                             " _p_sop = 0;\nENDVERBATIM\n}\n", NS_NMODL_C);
        CHECK(cc && strstr(cc, ",\n    0, nsm_x_pnames"));
    }
    bad("vion.mod", "NEURON { SUFFIX x }\nINITIAL {\nVERBATIM\n _ion_cai = 1;\nENDVERBATIM\n}\n", NS_ERR_UNSUPPORTED,
        "vion.mod:4:", "_ion_cai, which names no ion variable");
    bad("vkin.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nBREAKPOINT { SOLVE k METHOD sparse }\nKINETIC k {\n"
        "VERBATIM\n return 0;\nENDVERBATIM\n ~ a <-> b (1, 1)\n}\n", NS_ERR_UNSUPPORTED, "vkin.mod:5:",
        "VERBATIM `return` in a KINETIC block");
    bad("vend.mod", "NEURON { SUFFIX x }\nINITIAL {\nVERBATIM\n int z = 0;\n}\n", NS_ERR_PARSE, "vend.mod:3:",
        "without ENDVERBATIM");
    bad("pointer.mod", "NEURON {\n SUFFIX x\n POINTER p\n}\nSTATE { p }\n", NS_ERR_INVALID_ARGUMENT,
        "pointer.mod:3:", "POINTER p: declared as a STATE");
    /* a POINTER declared in PARAMETER (NEURON's gap.mod): a pointer, as nocmodl takes it */
    c = emit("NEURON {\n POINT_PROCESS gp\n NONSPECIFIC_CURRENT i\n POINTER vgap\n}\nPARAMETER {\n vgap (mV)\n r = 1e10\n}\n"
             "ASSIGNED { i }\nBREAKPOINT { i = (v - vgap)/r }\n", NS_NMODL_C);
    CHECK(strstr(c, "nsm_gp_pnames[] = {\"vgap\"}") && !strstr(c, "\"vgap\", \"r\""));
    /* NEURON 9's RANDOM: a stream, only the first argument of random_* (test_nmodl_random.c runs them) */
    bad("random1.mod", "NEURON {\n SUFFIX x\n RANDOM r\n RANGE y\n}\nASSIGNED { y }\nBREAKPOINT {\n y = r + 1\n}\n",
        NS_ERR_INVALID_ARGUMENT, "random1.mod:8:", "RANDOM r is a stream");
    bad("random2.mod", "NEURON {\n SUFFIX x\n RANDOM r\n RANGE y\n}\nASSIGNED { y }\nBREAKPOINT {\n y = random_normal(r, 1)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "random2.mod:8:", "random_normal: 2 arguments");
    bad("random3.mod", "NEURON {\n SUFFIX x\n RANGE y\n}\nASSIGNED { y }\nBREAKPOINT {\n y = random_uniform(y)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "random3.mod:7:", "must be a RANDOM variable");
    bad("random4.mod", "NEURON {\n SUFFIX x\n RANGE y\n}\nASSIGNED { y }\nBREAKPOINT {\n y = normrand(1)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "random4.mod:7:", "normrand takes 2 arguments");
    /* ELECTRODE_CURRENT: injected (rhs += I, d -= dI/dv); at_time, METHOD after_cvode; REPRESENTS ignored */
    c = emit("NEURON {\n POINT_PROCESS el\n ELECTRODE_CURRENT i\n REPRESENTS NCIT:C17145 : a tag\n"
             " USEION na READ ena REPRESENTS CHEBI:29101\n}\nASSIGNED { i }\n"
             "BREAKPOINT {\n SOLVE q METHOD after_cvode\n at_time(1)\n i = ena\n}\nPROCEDURE q() { i = 0 }\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "NSM_ADD(p->rhs[node_], rhs_);") && strstr(c, "NSM_ADD(p->d[node_], -g_);"));
    CHECK(strstr(c, "nsm_at_time(p->t, p->dt, 1.0)") && strstr(c, "nsm_el_p_q(p, "));
    /* event calls where nocmodl refuses them (tests/net/test_sim_events.c: the rest) */
    bad("netsend.mod", "NEURON { POINT_PROCESS x }\nINITIAL {\n  net_event(t)\n}\nNET_RECEIVE(w) { }\n",
        NS_ERR_INVALID_ARGUMENT, "netsend.mod:3:", "net_event is allowed only in the NET_RECEIVE block");
    bad("sparse.mod", "NEURON { SUFFIX x }\nSTATE { s }\nBREAKPOINT {\n SOLVE d METHOD sparse\n}\nDERIVATIVE d { s' = 1 }\n",
        NS_ERR_PARSE, "sparse.mod:4:", "METHOD sparse needs a KINETIC block");
    bad("ion.mod", "NEURON {\n SUFFIX x\n USEION xx READ exx WRITE ixx\n}\n", NS_ERR_INVALID_ARGUMENT, "ion.mod:3:",
        "unknown ion 'xx'");
    bad("undeclared.mod", "NEURON { SUFFIX x NONSPECIFIC_CURRENT i }\nBREAKPOINT {\n  i = gbar*(v - 1)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "undeclared.mod:3:", "'gbar' is not declared");
    bad("function.mod", "NEURON { SUFFIX x NONSPECIFIC_CURRENT i }\nBREAKPOINT {\n  i = nosuch(v)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "function.mod:3:", "unknown function 'nosuch'");
    /* cnexp on an equation not linear in its state: derivimplicit's Newton step (nocmodl: "Could not translate
     * using cnexp method; using derivimplicit"); a DERIVATIVE in INITIAL (STEADYSTATE: the step with dt 1e-9)
     * and a PROCEDURE, whose step is declared before the PROCEDURE (test_nmodl_neuron's cadn and dinit run them) */
    c = emit("NEURON { SUFFIX nl }\nSTATE { s }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d {\n  s' = -s*s\n}\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "nsm_nl_dd_d(") && strstr(c, "f_[0] = "));
    c = emit("NEURON { SUFFIX si }\nSTATE { s }\nINITIAL { SOLVE d STEADYSTATE derivimplicit\n q() }\n"
             "BREAKPOINT { SOLVE d METHOD cnexp }\nPROCEDURE q() { SOLVE d METHOD derivimplicit }\n"
             "DERIVATIVE d {\n  s' = 1 - s\n}\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "q_.dt = 1e-9;") && strstr(c, "nsm_si_d_d(&q_, ") && !strstr(c, "nsm_si_dd_d("));
    const char *step = strstr(c, "void nsm_si_d_d(ns_mech_ppack *p, double *F0_, int i_, int node_, double v_);");
    const char *proc = strstr(c, "void nsm_si_p_q(ns_mech_ppack *p, double *F0_, int i_, int node_, double v_) {");
    CHECK(step && proc && step < proc);
    bad("sseuler.mod", "NEURON { SUFFIX x }\nSTATE { s }\nINITIAL {\n SOLVE d STEADYSTATE euler\n}\nDERIVATIVE d {\n"
        "  s' = -s\n}\n", NS_ERR_UNSUPPORTED, "sseuler.mod:4:", "_ss_euler_thread");
    bad("ieuler.mod", "NEURON { SUFFIX x }\nSTATE { s }\nINITIAL {\n SOLVE d METHOD euler\n}\n"
        "BREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d {\n  s' = -s\n}\n", NS_ERR_UNSUPPORTED, "ieuler.mod:4:",
        "use METHOD derivimplicit here");
    bad("ssrunge.mod", "NEURON { SUFFIX x }\nSTATE { s }\nINITIAL {\n SOLVE d STEADYSTATE derivimplicit\n}\n"
        "BREAKPOINT { SOLVE d METHOD runge }\nDERIVATIVE d {\n  s' = -s\n}\n", NS_ERR_PARSE, "ssrunge.mod:4:",
        "STEADYSTATE requires all SOLVE's");
    bad("voltage.mod", "NEURON {\n VOLTAGE_PROCESS x\n}\n", NS_ERR_UNSUPPORTED, "voltage.mod:2:", "VOLTAGE_PROCESS");
    c = emit("NEURON { SUFFIX mm RANGE y }\nASSIGNED { y }\nBREAKPOINT { SOLVE p\n y = max(v, 1) }\n"
             "PROCEDURE p() { y = min(y, 2) }\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "fmax(v_, 1.0)") && strstr(c, "nsm_mm_p_p(p, F0_, i_, node_, v_);")); /* SOLVE of a PROCEDURE */
    /* what nocmodl accepts (issue 39's corpus): no NEURON block, no SUFFIX or `SUFFIX nothing`: a density
     * mechanism named after the file; a name that is no identifier is refused */
    {
        static const char *const texts[] = {"PARAMETER { g = 1 }\n", "NEURON { RANGE g }\nPARAMETER { g = 1 }\n",
                                            "NEURON { SUFFIX nothing }\nPARAMETER { g = 1 }\n"};
        for (int k = 0; k < 3; k++) {
            ns_nmodl_t *mn = NULL;
            CHECK_OK(ns_nmodl_parse_string(texts[k], "nosuffix.mod", &mn));
            char *text = NULL;
            if (mn) CHECK_OK(ns_nmodl_emit(mn, NS_NMODL_C, &text));
            CHECK(mn && !strcmp(ns_nmodl_name(mn), "nosuffix") && text && strstr(text, "NS_MECH_DENSITY"));
            ns_nmodl_free(text);
            ns_nmodl_destroy(mn);
        }
    }
    bad("9lives.mod", "PARAMETER { g = 1 }\n", NS_ERR_PARSE, "9lives.mod:1:", "no mechanism name");
    /* two POINT_PROCESS lines: the last names it (nocmodl; MyExp2Sid.mod) */
    {
        ns_nmodl_t *mn = NULL;
        CHECK_OK(ns_nmodl_parse_string("NEURON {\n POINT_PROCESS A\n POINT_PROCESS B\n}\n", "two.mod", &mn));
        CHECK(mn && !strcmp(ns_nmodl_name(mn), "B"));
        ns_nmodl_destroy(mn);
    }
    /* CHARGE is VALENCE; PROTECT before an assignment, MUTEXLOCK/MUTEXUNLOCK: thread-safety markers;
     * a NONSPECIFIC_CURRENT declared once (as a STATE here); an undeclared GLOBAL a THREADSAFE file assigns */
    c = emit("NEURON { SUFFIX ch USEION xx READ exx WRITE ixx CHARGE -1 NONSPECIFIC_CURRENT j GLOBAL tadj THREADSAFE }\n"
             "STATE { j }\nBREAKPOINT {\n tadj = 3\n MUTEXLOCK\n PROTECT j = 2\n MUTEXUNLOCK\n ixx = tadj*(v - exx)\n}\n",
             NS_NMODL_C);
    CHECK(strstr(c, "nsm_ch_names[] = {\"ixx\", \"tadj\", \"j\"}") && strstr(c, "nsm_ch_ions[] = {{\"xx\", -1, "));
    bad("protect.mod", "NEURON { SUFFIX x }\nBREAKPOINT {\n  PROTECT f()\n}\nPROCEDURE f() { }\n", NS_ERR_PARSE,
        "protect.mod:3:", "PROTECT must be followed by an assignment");
    bad("twice.mod", "NEURON { SUFFIX x NONSPECIFIC_CURRENT i }\nSTATE { i }\nASSIGNED {\n i\n}\n", NS_ERR_PARSE,
        "twice.mod:4:", "'i' declared twice");
    bad("tsglobal.mod", "NEURON {\n SUFFIX x\n GLOBAL q\n THREADSAFE\n}\nBREAKPOINT { LOCAL z\n z = q }\n",
        NS_ERR_INVALID_ARGUMENT, "tsglobal.mod:3:", "GLOBAL q: not declared");
    bad("tsprotect.mod", "NEURON {\n SUFFIX x\n GLOBAL q\n THREADSAFE\n}\nBREAKPOINT { PROTECT q = 1 }\n",
        NS_ERR_INVALID_ARGUMENT, "tsprotect.mod:3:", "GLOBAL q: not declared");
    /* STATE x START 3: x before INITIAL (nocmodl's x = x0); every element of an array state */
    c = emit("NEURON { SUFFIX st }\nSTATE { x START -3 (mV) y[2] }\nBREAKPOINT { SOLVE k METHOD sparse }\n"
             "KINETIC k {\n  ~ x <-> y[0] (1, 2)\n  ~ y[0] <-> y[1] (1, 2)\n}\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "*F0_ = (-3);\n    *F1_ = 0.0;\n    *F2_ = 0.0;\n") != NULL);
    /* two BREAKPOINT (and INITIAL) blocks: both, in order (nocmodl; netcon.inc's and NMDA.mod's own) */
    c = emit("NEURON { SUFFIX bb NONSPECIFIC_CURRENT i RANGE g }\nPARAMETER { g = 1 }\nASSIGNED { i }\n"
             "INITIAL { g = 1 }\nINITIAL { g = g*2 }\nBREAKPOINT { LOCAL a\n a = v\n i = g*a }\n"
             "BREAKPOINT { LOCAL b\n b = 2\n i = i*b }\n", NS_NMODL_HEADER);
    {
        const char *x = strstr(c, "(*F0_) = 1.0;"), *y = x ? strstr(x, "(*F0_) = ((*F0_) * 2.0);") : NULL;
        const char *u = strstr(c, "(*F1_) = ((*F0_) * L_a);"), *w = u ? strstr(u, "(*F1_) = ((*F1_) * L_b);") : NULL;
        CHECK(y && w);
    }
    bad("bb2.mod", "NEURON { SUFFIX x }\nBREAKPOINT { LOCAL a\n a = 1 }\nBREAKPOINT { LOCAL a\n a = 2 }\n", NS_ERR_PARSE,
        "bb2.mod:4:", "LOCAL a in both BREAKPOINT blocks");
    /* LINEAR and NONLINEAR: the rows of a LINEAR block by differentiation; what is refused */
    c = emit("NEURON { SUFFIX lin }\nPARAMETER { k = 2 }\nSTATE { a b }\nINITIAL { SOLVE s }\n"
             "LINEAR s {\n  ~ k*a + b = 3\n  ~ a - b = v\n}\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "e_ = e_ < N_ ? e_ + 1 : N_;\n    J_[e_][0] = p->global[0];") && strstr(c, "J_[e_][1] = 1.0;") &&
          strstr(c, "r_[e_] = -((-3.0));") && strstr(c, "J_[e_][1] = (-1.0);") &&
          strstr(c, "nsm_lin_p_s(p, F0_, F1_, i_, node_, v_);"));
    bad("lin1.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nINITIAL { SOLVE s }\nLINEAR s {\n  ~ a*b = 1\n  ~ a = b\n}\n",
        NS_ERR_UNSUPPORTED, "lin1.mod:5:", "not linear in a (use NONLINEAR)");
    bad("lin2.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nLINEAR s {\n  ~ a + b = 1\n}\n", NS_ERR_INVALID_ARGUMENT,
        "lin2.mod:3:", "1 equations for 2 unknown STATEs");
    /* a NONLINEAR block SOLVEd in BREAKPOINT: in state(), not in the current (nocmodl's nrn_state; test nonlinbp) */
    c = emit("NEURON { SUFFIX lb NONSPECIFIC_CURRENT i }\nSTATE { a }\nBREAKPOINT {\n  SOLVE s\n  i = a*v\n}\n"
             "NONLINEAR s {\n  ~ a*a = 2\n}\n", NS_NMODL_HEADER);
    {
        const char *st = strstr(c, "void nsm_lb_state_F("), *call = strstr(c, "nsm_lb_p_s(p, ");
        CHECK(st && call && call > st && !strstr(call + 1, "nsm_lb_p_s(p, "));
    }
    bad("lin4.mod", "NEURON { SUFFIX x }\nPARAMETER { q = 1 }\nSTATE { a }\nLINEAR s SOLVEFOR q {\n  ~ a = 2\n}\n",
        NS_ERR_INVALID_ARGUMENT, "lin4.mod:4:", "SOLVEFOR q is not a STATE");
    /* ~+: its terms added to the previous equation's row (test/linadd.mod against NEURON); '~ +' a unary plus */
    c = emit("NEURON { SUFFIX lin5 }\nSTATE { a }\nINITIAL { SOLVE s }\nLINEAR s {\n  ~ a = 2\n  ~+ a = 1\n}\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "J_[e_][0] = 1.0;") && strstr(c, "J_[e_ < 0 ? N_ : e_][0] += 1.0;") &&
          strstr(c, "r_[e_ < 0 ? N_ : e_] += -("));
    /* equations inside an if and a loop: rows numbered as the block runs (test/linif.mod against NEURON); as
     * many written as unknowns, a '~+' after a '~' in the text */
    c = emit("NEURON { SUFFIX lin7 }\nSTATE { a b }\nINITIAL { SOLVE s }\nNONLINEAR s {\n  if (v > 0) {\n    ~ a*a = 2\n"
             "  }\n  FROM j = 1 TO 2 {\n    ~+ a = j\n  }\n  ~ b = a\n}\n", NS_NMODL_HEADER);
    {
        const char *i = strstr(c, "if ("), *e = i ? strstr(i, "e_ = e_ < N_ ? e_ + 1 : N_;") : NULL;
        CHECK(e && strstr(e, "for (") && strstr(c, "f_[e_ < 0 ? N_ : e_] += ("));
    }
    bad("lin8.mod", "NEURON { SUFFIX x }\nSTATE { a }\nLINEAR s {\n  if (v > 0) {\n    ~ a = 2\n  } else {\n"
        "    ~ a = 1\n  }\n}\n", NS_ERR_INVALID_ARGUMENT, "lin8.mod:3:", "LINEAR s: 2 equations for 1 unknown STATEs");
    bad("lin9.mod", "NEURON { SUFFIX x }\nSTATE { a }\nLINEAR s {\n  if (v > 0) {\n    ~+ a = 2\n  }\n  ~ a = 1\n}\n",
        NS_ERR_PARSE, "lin9.mod:5:", "'~+' adds terms to the previous equation: there is none");
    bad("lin6.mod", "NEURON { SUFFIX x }\nSTATE { a }\nLINEAR s {\n  ~ a = 2\n  ~ + a = 1\n}\n",
        NS_ERR_INVALID_ARGUMENT, "lin6.mod:3:", "LINEAR s: 2 equations for 1 unknown STATEs");
    /* ~ x -> (rate): a flow out of x (nocmodl's flux) */
    c = emit("NEURON { SUFFIX kout }\nSTATE { a }\nBREAKPOINT { SOLVE k METHOD sparse }\nKINETIC k {\n  ~ a -> (3)\n}\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "f_flux = (3.0 * (*F0_));") != NULL);
    bad("kout2.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nKINETIC k {\n  ~ a + b -> (3)\n}\n", NS_ERR_PARSE,
        "kout2.mod:4:", "one state on its left");
    bad("kout3.mod", "NEURON { SUFFIX x }\nPARAMETER { a = 1 }\nSTATE { b }\nKINETIC k {\n  ~ b <-> a (1, 2)\n  ~ a -> (3)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "kout3.mod:6:", "'a' is not a STATE");

    /* the currents' slope: symbolic where every current is affine in v (a chain through the block's
     * variables, the derivative of each free of v), else NEURON's difference at v + .001 */
    static const char *const SLOPE_HEAD = "NEURON { SUFFIX sl NONSPECIFIC_CURRENT i RANGE g, e, x }\n"
                                          "PARAMETER { g = .001 e = -70 }\nASSIGNED { i x }\n";
    static const struct {
        const char *breakpoint, *slope; /* slope: the one evaluation's g_, NULL: two evaluations */
    } SLOPES[] = {
        {"x = v - e\n i = 2*(g*x) + 1", "double g_ = (2.0 * (*F0_));"},        /* chain rule, offset */
        {"x = g*(e - v)\n i = -x", "double g_ = ((-1.0) * ((*F0_) * (-1.0)));"}, /* signs */
        {"x = 3\n i = x*v/2 - e*g", "double g_ = NSM_DIVC((*F3_), 2.0);"},           /* x assigned before: read */
        {"i = g*v*v", NULL},                                                 /* quadratic */
        {"x = v\n i = g*x*v", NULL},                                         /* quadratic through x */
        {"i = g*(v - e)/v", NULL},                                           /* a division by v */
        {"i = g*exp(v/10)", NULL},                                           /* a math call of v */
        {"i = x*(v - e)\n x = g", NULL},                                     /* x assigned after its use */
        {"x = g\n x = 2*g\n i = x*(v - e)", NULL},                          /* assigned twice */
        {"LOCAL k\n k = g\n i = k*(v - e)", NULL},                          /* the slope would read a LOCAL */
        {"if (v > 0) { i = g*v } else { i = 0 }", NULL},                     /* an IF */
        {"x = fabs(g)\n i = x*(v - e)", "double g_ = (*F3_);"},               /* a math call of no v */
        {"i = g*at_time(1)*(v - e)", NULL},                                  /* other calls: two evaluations */
        {"i = f(v)", NULL},                                                  /* a FUNCTION (rates(v) alike) */
        {"x = f(1)\n i = x*(v - e)", NULL},                                  /* a FUNCTION's body may read v */
    };
    for (size_t k = 0; k < sizeof SLOPES / sizeof *SLOPES; k++) {
        char text[600];
        snprintf(text, sizeof text, "%sBREAKPOINT {\n %s\n}\nFUNCTION f(u) { f = g*u }\n", SLOPE_HEAD,
                 SLOPES[k].breakpoint);
        c = emit(text, NS_NMODL_HEADER);
        if (SLOPES[k].slope)
            CHECK_MSG(strstr(c, SLOPES[k].slope) && !strstr(c, "v_ + .001"), "%s: no slope %s", SLOPES[k].breakpoint,
                      SLOPES[k].slope);
        else
            CHECK_MSG(strstr(c, "v_ + .001);") && strstr(c, "g_ = nsm_slope(g_ - rhs_);"), "%s: one evaluation",
                      SLOPES[k].breakpoint);
    }

    /* NMODL's language (issue 39): the generated forms */
    c = emit("NEURON { SUFFIX neg RANGE x }\nCONSTANT { k = -6 }\nASSIGNED { x }\n"
             "BREAKPOINT { x = v / -k + 0.001 (mV) * v }\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "(*F0_) = (NSM_DIVC(v_, (-(-6))) + (0.001 * v_));") && !strstr(c, "--")); /* not C's decrement */
    c = emit("NEURON { SUFFIX pf RANGE x }\nASSIGNED { x }\nBREAKPOINT { x = 1\n printf(\"x %g\\n\", x)\n"
             " printf(\"%s %g\\n\", \"pf.mod $Id$\", x) }\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "#include <stdio.h>") &&
          strstr(c, "#ifndef __CUDA_ARCH__\n    (void)printf(\"x %g\\n\", (*F0_));\n#endif\n")); /* host only */
    /* a string for a %s (ModelDB's infot.mod prints its version so), as nocmodl passes it */
    CHECK(strstr(c, "(void)printf(\"%s %g\\n\", \"pf.mod $Id$\", (*F0_));\n"));
    /* FROM and WHILE; a RANGE array through its pointers, a LOCAL array, a GLOBAL array */
    c = emit("NEURON { SUFFIX ar RANGE a }\nPARAMETER { g[2] = 3 }\nASSIGNED { a[3] }\nLOCAL s[2]\n"
             "BREAKPOINT {\n LOCAL k[2]\n FROM i = 2 TO 0 BY -1 { a[i] = g[1] + i }\n"
             " k[0] = 1\n WHILE (k[0] < 4) { k[0] = k[0] * 2 }\n s[1] = k[0] }\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "double *const X0_[3] = {F0_, F1_, F2_};") &&
          strstr(c, "for (int I_i = (int)(2.0); I_i >= (0.0); I_i += -1) {") &&
          strstr(c, "(*X0_[(int)(((double)I_i))]) = (p->global[0 + (int)(1.0)] + ((double)I_i));") &&
          strstr(c, "double L_k[2] = {0.0};") && strstr(c, "while (((double)(L_k[(int)(0.0)] < 4.0))) {") &&
          strstr(c, "(*X3_[(int)(1.0)]) = L_k[(int)(0.0)];"));
    c = emit("NEURON { SUFFIX ar RANGE a }\nPARAMETER { g[2] = 3 }\nASSIGNED { a[3] }\nBREAKPOINT { a[0] = g[1] }\n",
             NS_NMODL_C);
    CHECK(strstr(c, "nsm_ar_names[] = {\"a[0]\", \"a[1]\", \"a[2]\"}") && strstr(c, "nsm_ar_gdefaults[] = {3, 3}"));
    /* v and a written READ ion variable: the mechanism's copies, set at each entry point */
    c = emit("NEURON { SUFFIX vc USEION na READ ena WRITE ina }\nASSIGNED { ina ena }\n"
             "BREAKPOINT { ena = ena + 5\n rates()\n ina = v - ena }\nPROCEDURE rates() { v = v + 10 }\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "nsm_vc_cur(ns_mech_ppack *p, double *F0_, double *F1_, double *F2_, int i_, int node_, double v_) "
                    "{\n    (void)p; (void)i_; (void)node_;\n    (*F2_) = v_;\n"));
    CHECK(strstr(c, "    const double v_ = p->v[node_];\n    (*F0_) = p->ion[0].e[NSM_ION(0)];\n"));
    CHECK(strstr(c, "(*F2_) = ((*F2_) + 10.0);") && !strstr(c, "p->v[node_] =") && !strstr(c, "p->ion[0].e[NSM_ION(0)] ="));
    /* TABLE DEPEND dt (Mainen's and Migliore's files), a FUNCTION reading its own value, a module LOCAL
     * that is also ASSIGNED (one variable, as in nocmodl) */
    c = emit("NEURON { SUFFIX td RANGE y }\nASSIGNED { y }\nLOCAL y\nBREAKPOINT { r(v) }\n"
             "PROCEDURE r(u) {\n TABLE y DEPEND dt FROM -10 TO 10 WITH 20\n y = f(u)\n}\n"
             "FUNCTION f(x) {\n f = x\n f = 2*f\n}\n", NS_NMODL_C);
    CHECK(strstr(c, "T_[4] != p->dt") && strstr(c, "T_[4] = p->dt;") && strstr(c, "nsm_td_names[] = {\"y\"}"));
    /* INCLUDE "file": relative to the .mod file's folder; errors name the included file and its line */
    if (tmpdir_make("ns_nmodl_inc") == 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "mkdir -p %s", tmp("sub"));
        FILE *f = system(cmd) == 0 ? fopen(tmp("inc.mod"), "w") : NULL;
        if (f) {
            fputs("NEURON { SUFFIX inc RANGE y }\nASSIGNED { y }\nINCLUDE \"sub/body.inc\"\n", f);
            fclose(f);
        }
        for (int k = 0; k < 2; ++k) {
            f = fopen(tmp("sub/body.inc"), "w");
            if (f) {
                fputs(k ? "BREAKPOINT {\n  y = 1\n  y = = 2\n}\n" : "BREAKPOINT {\n  y = 7\n}\n", f);
                fclose(f);
            }
            ns_nmodl_t *mi = NULL;
            ns_status si = ns_nmodl_parse_file(tmp("inc.mod"), &mi);
            if (k == 0) {
                CHECK_OK(si);
                char *text = NULL;
                if (mi) CHECK_OK(ns_nmodl_emit(mi, NS_NMODL_HEADER, &text));
                CHECK(text && strstr(text, "(*F0_) = 7.0;"));
                ns_nmodl_free(text);
            } else {
                CHECK(si == NS_ERR_PARSE && strstr(ns_last_error(), "body.inc:3: expected an expression"));
            }
            ns_nmodl_destroy(mi);
        }
        bad("noinc.mod", "NEURON { SUFFIX x }\nINCLUDE \"a.inc\"\n", NS_ERR_UNSUPPORTED, "noinc.mod:2:", "INCLUDE");
        tmpdir_remove();
    }
    /* a RANGE name never declared: ignored, as nocmodl does */
    c = emit("NEURON {\n SUFFIX rg\n RANGE gCa, g\n}\nPARAMETER { g = 1 }\n", NS_NMODL_C);
    CHECK(strstr(c, "nsm_rg_names[] = {\"g\"}"));
    /* CRLF and CR-only line ends: errors give the right line */
    bad("crlf.mod", "NEURON { SUFFIX x }\r\nPARAMETER { g = 1 }\r\nBREAKPOINT {\r\n  g = = 2\r\n}\r\n", NS_ERR_PARSE,
        "crlf.mod:4:", "expected an expression");
    bad("cr.mod", "NEURON { SUFFIX x }\rPARAMETER { g = 1 }\rCOMMENT\r\rENDCOMMENT\rBREAKPOINT {\r  g = = 2\r}\r",
        NS_ERR_PARSE, "cr.mod:7:", "expected an expression");
    bad("global.mod", "NEURON {\n SUFFIX x\n GLOBAL nope\n}\n", NS_ERR_INVALID_ARGUMENT, "global.mod:3:", "GLOBAL nope");
    /* recursion, direct and through other calls, as NEURON's C: calls of C functions (the dual twins are not
     * forced inline: NSD_TWIN); test/recur.mod runs against NEURON in test_nmodl_neuron */
    {
        static const char *mu = "NEURON { SUFFIX x }\nPROCEDURE a() {\n  b()\n}\nPROCEDURE b() {\n  LOCAL y\n  y = "
                                "c(1)\n}\nFUNCTION c(x) {\n  if (x > 0) {\n    a()\n  }\n  c = x\n}\n"
                                "FUNCTION f(x) {\n  if (x > 0) {\n    f = 1 + f(x - 1)\n  }\n}\n"
                                "FUNCTION g(x) {\n  g = f(x)\n}\n";
        const char *h = emit(mu, NS_NMODL_HEADER);
        CHECK(strstr(h, "NS_MECH_FN double nsm_x_f_c(ns_mech_ppack *p, int i_, int node_, double v_, double A_x);"));
        CHECK(strstr(h, "    nsm_x_p_a(p, i_, node_, v_);"));
        CHECK(strstr(h, "ret_ = (1.0 + nsm_x_f_f(p, i_, node_, v_, (A_x - 1.0)));"));
        const char *cs = emit(mu, NS_NMODL_C);
        CHECK(strstr(cs, "_TWIN void nsd_x_L1_p_a("));
        CHECK(strstr(cs, "_TWIN nsd_x_L1 nsd_x_L1_f_f("));
        CHECK(strstr(cs, "_FN nsd_x_L1 nsd_x_L1_f_g(")); /* g calls f but is on no cycle: inlined */
    }
    /* nocmodl's grammar has no CONSTANT arrays (NEURON 9.0.2: "syntax error ... Illegal block") */
    bad("carr.mod", "NEURON { SUFFIX x }\nCONSTANT {\n  b = 2\n  a[3]\n}\n", NS_ERR_UNSUPPORTED, "carr.mod:4:",
        "CONSTANT a[3]: a CONSTANT array (nocmodl refuses it too");
    bad("inf.mod", "NEURON { SUFFIX x }\nCONSTANT {\n  big = 1e999\n}\n", NS_ERR_PARSE, "inf.mod:3:", "1e999");
    bad("unit.mod", "NEURON { SUFFIX x }\nUNITS {\n  F = (faradays) (coulomb)\n  G = (wibble) (1)\n}\n",
        NS_ERR_UNSUPPORTED, "unit.mod:4:", "unknown unit 'wibble'");
    /* units defined by each other ten times over, eight deep (1e8 lookups), and a name of 150 prefixes:
     * bounded work, then an error */
    {
        char mod[1200];
        size_t n = (size_t)snprintf(mod, sizeof mod, "NEURON { SUFFIX x }\nUNITS {\n");
        for (int k = 0; k < 8; k++)
            n += (size_t)snprintf(mod + n, sizeof mod - n, "  (u%c) = (u%c u%c u%c u%c u%c u%c u%c u%c u%c u%c)\n", 'a' + k,
                                  'b' + k, 'b' + k, 'b' + k, 'b' + k, 'b' + k, 'b' + k, 'b' + k, 'b' + k, 'b' + k, 'b' + k);
        snprintf(mod + n, sizeof mod - n, "  C = (ua) (1)\n}\n");
        bad("bomb.mod", mod, NS_ERR_UNSUPPORTED, "bomb.mod:11:", "more than 100000 steps");
        n = (size_t)snprintf(mod, sizeof mod, "NEURON { SUFFIX x }\nUNITS {\n  C = (");
        for (int k = 0; k < 150; k++) n += (size_t)snprintf(mod + n, sizeof mod - n, "da");
        snprintf(mod + n, sizeof mod - n, "q) (1)\n}\n");
        bad("prefixes.mod", mod, NS_ERR_UNSUPPORTED, "prefixes.mod:3:", "unknown unit 'dadada");
    }
    bad("index.mod", "NEURON { SUFFIX x }\nASSIGNED { a[3] }\nBREAKPOINT {\n  a[3] = 1\n}\n", NS_ERR_INVALID_ARGUMENT,
        "index.mod:4:", "a[3]: out of");
    bad("noindex.mod", "NEURON { SUFFIX x }\nASSIGNED { a[3] }\nBREAKPOINT {\n  a = 1\n}\n", NS_ERR_INVALID_ARGUMENT,
        "noindex.mod:4:", "needs an index");
    bad("statearr.mod", "NEURON { SUFFIX x }\nSTATE { s[2] }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d {\n  s' = 1\n}\n",
        NS_ERR_INVALID_ARGUMENT, "statearr.mod:5:", "s' of an array STATE needs an element");
    /* x'[i] of an array STATE: FROM loops with constant bounds unrolled (test/arrcn.mod, arrdi.mod); others refused */
    bad("statearr2.mod", "NEURON { SUFFIX x }\nPARAMETER { n = 2 }\nSTATE { s[2] }\nBREAKPOINT { SOLVE d METHOD cnexp }\n"
        "DERIVATIVE d {\n  FROM i = 0 TO n - 1 {\n    s'[i] = -s[i]\n  }\n}\n",
        NS_ERR_UNSUPPORTED, "statearr2.mod:6:", "needs integer constant bounds");
    bad("statearr3.mod", "NEURON { SUFFIX x }\nSTATE { s[2] }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d {\n"
        "  FROM i = 0 TO 2 {\n    s'[i] = -s[i]\n  }\n}\n",
        NS_ERR_INVALID_ARGUMENT, "statearr3.mod:6:", "s[2]: out of range (0 to 1)");
    bad("statearr4.mod", "NEURON { SUFFIX x }\nSTATE { s }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d {\n  s'[0] = -s\n}\n",
        NS_ERR_INVALID_ARGUMENT, "statearr4.mod:5:", "s is not an array");
    bad("statearr5.mod", "NEURON { SUFFIX x }\nSTATE { s[2] }\nBREAKPOINT { SOLVE d METHOD euler }\nDERIVATIVE d {\n  s'[0] = -s[0]\n}\n",
        NS_ERR_UNSUPPORTED, "statearr5.mod:4:", "METHOD euler on DERIVATIVE d with array states is not supported");
    /* arrays in reactions: FROM loops unrolled, COMPARTMENT i, size(i) */
    c = emit("NEURON { SUFFIX kar }\nDEFINE N 3\nPARAMETER { d = 2 }\nSTATE { c[N] }\nBREAKPOINT { SOLVE k METHOD sparse }\n"
             "KINETIC k {\n  COMPARTMENT i, d*(i + 1) {c}\n  FROM i = 0 TO N - 2 {\n    ~ c[i] <-> c[i + 1] (1, 2)\n  }\n}\n",
             NS_NMODL_HEADER);
    CHECK(strstr(c, "L_f_flux = (1.0 * (*X0_[(int)(1.0)]));") && strstr(c, "L_b_flux = (2.0 * (*X0_[(int)(2.0)]));") &&
          strstr(c, "c_[2] = (p->global[0] * (2.0 + 1.0));"));
    /* SOLVE ... STEADYSTATE sparse in a FUNCTION (cabpump.mod's ss()): the solver is defined before it */
    c = emit("NEURON { SUFFIX kfn }\nSTATE { a b }\nBREAKPOINT { SOLVE k METHOD sparse }\n"
             "KINETIC k {\n  ~ a <-> b (1, 2)\n}\nFUNCTION ss() {\n  SOLVE k STEADYSTATE sparse\n  ss = a\n}\n",
             NS_NMODL_HEADER);
    {
        const char *def = strstr(c, "NS_MECH_FN void nsm_kfn_ss_k("), *fn = strstr(c, "nsm_kfn_f_ss(ns_mech_ppack *p, double *F0_, double *F1_, int i_, int node_, double v_) {");
        CHECK(def && fn && def < fn && strstr(fn, "nsm_kfn_ss_k(p, "));
    }
    bad("kar1.mod", "NEURON { SUFFIX x }\nSTATE { c[2] }\nKINETIC k {\n  FROM i = 0 TO 1 {\n    ~ c[i] <-> c[i + 1] (1, 2)\n  }\n}\n",
        NS_ERR_INVALID_ARGUMENT, "kar1.mod:5:", "c[2]: out of 0 .. 1");
    bad("kar2.mod", "NEURON { SUFFIX x }\nPARAMETER { n = 2 }\nSTATE { c[2] }\nKINETIC k {\n  FROM i = 0 TO n {\n"
        "    ~ c[i] <-> c[i + 1] (1, 2)\n  }\n}\n", NS_ERR_UNSUPPORTED, "kar2.mod:5:",
        "reactions in a KINETIC block needs integer constant bounds (numbers, DEFINEs, CONSTANTs): CoreNEURON's");
    bad("kar3.mod", "NEURON { SUFFIX x }\nPARAMETER { n = 2 }\nSTATE { a b }\nKINETIC k {\n  LOCAL j\n  j = 0\n"
        "  WHILE (j < n) {\n    ~ a <-> b (1, 2)\n    j = j + 1\n  }\n}\n", NS_ERR_UNSUPPORTED, "kar3.mod:7:",
        "reactions in a WHILE loop of a KINETIC block: CoreNEURON's NMODL counts them once");
    bad("linadd1.mod", "NEURON { SUFFIX x }\nSTATE { a }\nBREAKPOINT { SOLVE q }\nNONLINEAR q {\n  ~+ a = 1\n}\n",
        NS_ERR_PARSE, "linadd1.mod:5:", "NONLINEAR q: '~+' adds terms to the previous equation: there is none");
    /* a LOCAL inside an unrolled FROM loop is declared around it (test/kfloc.mod): names that would merge refused */
    bad("kloc1.mod", "NEURON { SUFFIX x }\nSTATE { c[2] }\nKINETIC k {\n  LOCAL r\n  r = 1\n  FROM i = 0 TO 0 {\n"
        "    LOCAL r\n    r = 2\n    ~ c[i] <-> c[i + 1] (r, r)\n  }\n}\n", NS_ERR_UNSUPPORTED, "kloc1.mod:6:",
        "LOCAL 'r' of a FROM loop in a KINETIC block has the name of a LOCAL around the loop");
    bad("kloc2.mod", "NEURON { SUFFIX x }\nPARAMETER { r = 1 }\nSTATE { c[2] }\nKINETIC k {\n  FROM i = 0 TO 0 {\n"
        "    LOCAL r\n    r = 2\n    ~ c[i] <-> c[i + 1] (r, r)\n  }\n}\n", NS_ERR_UNSUPPORTED, "kloc2.mod:5:",
        "LOCAL 'r' of a FROM loop in a KINETIC block has the name of a variable of the mechanism");
    bad("kar3.mod", "NEURON { SUFFIX x }\nSTATE { c[2] b }\nKINETIC k {\n  ~ c <-> b (1, 2)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "kar3.mod:4:", "'c' is an array");
    bad("by.mod", "NEURON { SUFFIX x }\nBREAKPOINT {\n  FROM i = 0 TO 3 BY 0.5 { }\n}\n", NS_ERR_PARSE, "by.mod:3:",
        "BY needs");
    bad("vreturn.mod", "NEURON { SUFFIX x }\nINITIAL {\nVERBATIM\n return 0;\nENDVERBATIM\n}\n", NS_ERR_UNSUPPORTED,
        "vreturn.mod:3:", "FUNCTION or PROCEDURE");
    /* issue 47: a 140-character PROCEDURE name with a TABLE (fixed buffers crashed the translator) */
    {
        char name[141], mod[1200];
        memset(name, 'p', 140);
        name[140] = 0;
        snprintf(mod, sizeof mod, "NEURON { SUFFIX x RANGE y }\nASSIGNED { y }\nBREAKPOINT { %s(v) }\n"
                 "PROCEDURE %s(u) {\n  TABLE y FROM -100 TO 100 WITH 10\n  y = u\n}\n", name, name);
        char want[200];
        snprintf(want, sizeof want, "\"usetable_%s\"", name);
        CHECK(strstr(emit(mod, NS_NMODL_C), want) != NULL);
        emit(mod, NS_NMODL_HEADER);
        emit(mod, NS_NMODL_CUDA);
    }
    /* issue 47: TABLE sizes (2200 columns of 1000001 overflowed an int) */
    {
        size_t cap = 2200 * 12 + 400;
        char *mod = malloc(cap);
        if (mod) {
            size_t n = (size_t)snprintf(mod, cap, "NEURON { SUFFIX x }\nASSIGNED {");
            for (int k = 0; k < 2200; k++) n += (size_t)snprintf(mod + n, cap - n, " a%d", k);
            n += (size_t)snprintf(mod + n, cap - n, " }\nPROCEDURE r(u) {\n  TABLE");
            for (int k = 0; k < 2200; k++) n += (size_t)snprintf(mod + n, cap - n, "%s a%d", k ? "," : "", k);
            snprintf(mod + n, cap - n, " FROM 0 TO 1 WITH 1000000\n}\n");
            bad("table.mod", mod, NS_ERR_SIZE, "table.mod:4:", "the TABLEs need 2200002204 values");
            free(mod);
        }
    }
    ns_nmodl_t *m = NULL;
    CHECK(ns_nmodl_parse_file(MECH_DIR "/nosuch.mod", &m) == NS_ERR_IO && m == NULL);
    CHECK(strstr(ns_last_error(), "nosuch.mod"));
    ns_nmodl_free(out);
    return check_summary("test_nmodl");
}
