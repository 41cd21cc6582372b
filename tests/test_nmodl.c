/* The NMODL translator without a compiler: every .mod file of
 * data/mechanisms/ parses and generates its three sources; the generated C
 * has nocmodl's forms (cnexp, the TABLE lookup, the current's slope); and
 * bad input gets the error the docs promise (docs/mechanisms.md, "Errors"):
 * syntax errors and unsupported constructs with file and line, unknown ions,
 * undeclared names, cnexp on a nonlinear equation. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/nmodl.h"

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
            CHECK_OK(ns_nmodl_emit(m, (ns_nmodl_target)t, &text));
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

int main(void) {
    all_files(MECH_DIR "/neuron");
    all_files(MECH_DIR "/bbp");
    all_files(MECH_DIR "/test");
    all_files(MECH_DIR "/kinetic");
    CHECK(n_files == 23);

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
         * on the GPU, a vectorising polynomial on the host) */
        CHECK(strstr(hh, "*a0_ = p->dt * (((-1.0) / (*F12_)));") && strstr(hh, "*t0_ = ((*F9_));") &&
              strstr(hh, "(*F15_) = (*F15_) + (1. - e0_) * (t0_ - (*F15_));"));
        /* in three stages (nmodl_gen.c, cnexp_staged), joined for one instance */
        CHECK(strstr(hh, "nsm_hh_d_states_post(p, F0_, F1_, F2_, F3_, F4_, F5_, F6_, F7_, F8_, F9_, F10_, F11_, F12_, "
                         "F13_, F14_, F15_, F16_, F17_, I0_, I1_, i_, nsm_exp(a0_), t0_, nsm_exp(a1_), t1_, nsm_exp(a2_), t2_);"));
        /* the slope (I(v + .001) - I(v)) / .001 and the TABLE's clamped ends */
        CHECK(strstr(hh, "nsm_hh_cur(p, F0_, F1_, F2_, F3_, F4_, F5_, F6_, F7_, F8_, F9_, F10_, F11_, F12_, F13_, F14_, F15_, F16_, F17_, I0_, I1_, i_, node_, v_ + .001)") && strstr(hh, "g_ = (g_ - rhs_) / .001;"));
        CHECK(strstr(hh, "hi_ = xi_ >= 200.") && strstr(hh, "const double xi_ = T_[3] * (A_v - T_[2]);"));
        /* the lookup has no branch and selects no loaded value (one
         * interpolation for every case): usetable is the only test, and the
         * loops hoist it */
        CHECK(strstr(hh, "(*F9_) = a_ + t_ * (b_ - a_);") && !strstr(hh, "if (xi_") &&
              !strstr(hh, "? a_") && strstr(hh, "k_ = j_ * in_ + 200 * hi_, k1_ = k_ + (k_ < 200);"));
        CHECK(strstr(hh, "q10 = pow(3.0, ((p->celsius - 6.3) / 10.0));"));
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
    CHECK(strstr(c, "*t0_ = -((p->global[0] / p->global[1])) / (((-2.0) / p->global[1]));"));
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
    CHECK(strstr(c, "nsm_syn_net_receive_F(ns_mech_ppack *p, double *F0_, int i_, int node_, double A_w)"));
    /* the entry points on the ppack's arrays: each field's address */
    CHECK(strstr(c, "nsm_syn_net_receive_one(ns_mech_ppack *p, int i_, int node_, double w_) {\n"
                    "    nsm_syn_net_receive_F(p, &p->field[0][i_], i_, node_, w_);"));
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
    bad("kinit.mod", "NEURON { SUFFIX x }\nSTATE { a b }\nINITIAL {\n SOLVE k METHOD sparse\n}\nKINETIC k {\n"
        "  ~ a <-> b (1, 2)\n}\n", NS_ERR_UNSUPPORTED, "kinit.mod:4:", "STEADYSTATE sparse");
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
    bad("verbatim.mod", "NEURON { SUFFIX x }\nINITIAL {\nVERBATIM\n x = 1;\nENDVERBATIM\n}\n", NS_ERR_UNSUPPORTED,
        "verbatim.mod:3:", "VERBATIM");
    bad("pointer.mod", "NEURON {\n SUFFIX x\n POINTER p\n}\n", NS_ERR_UNSUPPORTED, "pointer.mod:3:", "POINTER");
    bad("electrode.mod", "NEURON {\n POINT_PROCESS x\n ELECTRODE_CURRENT i\n}\n", NS_ERR_UNSUPPORTED,
        "electrode.mod:3:", "ELECTRODE_CURRENT");
    bad("netsend.mod", "NEURON { POINT_PROCESS x }\nNET_RECEIVE(w) {\n  net_send(1, 1)\n}\n", NS_ERR_UNSUPPORTED,
        "netsend.mod:3:", "net_send");
    bad("sparse.mod", "NEURON { SUFFIX x }\nSTATE { s }\nBREAKPOINT {\n SOLVE d METHOD sparse\n}\nDERIVATIVE d { s' = 1 }\n",
        NS_ERR_PARSE, "sparse.mod:4:", "METHOD sparse needs a KINETIC block");
    bad("ion.mod", "NEURON {\n SUFFIX x\n USEION xx READ exx WRITE ixx\n}\n", NS_ERR_INVALID_ARGUMENT, "ion.mod:3:",
        "unknown ion 'xx'");
    bad("undeclared.mod", "NEURON { SUFFIX x NONSPECIFIC_CURRENT i }\nBREAKPOINT {\n  i = gbar*(v - 1)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "undeclared.mod:3:", "'gbar' is not declared");
    bad("function.mod", "NEURON { SUFFIX x NONSPECIFIC_CURRENT i }\nBREAKPOINT {\n  i = nosuch(v)\n}\n",
        NS_ERR_INVALID_ARGUMENT, "function.mod:3:", "unknown function 'nosuch'");
    bad("nonlinear.mod", "NEURON { SUFFIX x }\nSTATE { s }\nBREAKPOINT { SOLVE d METHOD cnexp }\nDERIVATIVE d {\n"
        "  s' = -s*s\n}\n", NS_ERR_UNSUPPORTED, "nonlinear.mod:5:", "not linear");
    bad("voltage.mod", "NEURON {\n VOLTAGE_PROCESS x\n}\n", NS_ERR_UNSUPPORTED, "voltage.mod:2:", "VOLTAGE_PROCESS");
    c = emit("NEURON { SUFFIX mm RANGE y }\nASSIGNED { y }\nBREAKPOINT { SOLVE p\n y = max(v, 1) }\n"
             "PROCEDURE p() { y = min(y, 2) }\n", NS_NMODL_HEADER);
    CHECK(strstr(c, "fmax(v_, 1.0)") && strstr(c, "nsm_mm_p_p(p, F0_, i_, node_, v_);")); /* SOLVE of a PROCEDURE */
    bad("nosuffix.mod", "PARAMETER { g = 1 }\n", NS_ERR_PARSE, "nosuffix.mod", "SUFFIX");
    ns_nmodl_t *m = NULL;
    CHECK(ns_nmodl_parse_file(MECH_DIR "/nosuch.mod", &m) == NS_ERR_IO && m == NULL);
    CHECK(strstr(ns_last_error(), "nosuch.mod"));
    ns_nmodl_free(out);
    return check_summary("test_nmodl");
}
