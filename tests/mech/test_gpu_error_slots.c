/* Which mechanisms get a record in the GPU loop's error channel (sim/policy.h,
 * ns_sim_gpu_error_slots), without a GPU (issue 42): the translator's fact
 * (ns_mech_desc.cuda_errors) for .mod files whose device C can and cannot stop the run,
 * and the rule's records for mixes of them. The GPU tests of the channel itself
 * (test_sim_nmodl_neuron's hocerr on the GPU, test_sim_events' VbErr) read the errors
 * through it. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sim/policy.h"
#include "mech/builtin/builtin.h"
#include "neurosolve/mechanism.h"
#include "neurosolve/nmodl.h"

enum { UNKNOWN = NS_MECH_CUDA_ERRORS_UNKNOWN, NONE = NS_MECH_CUDA_ERRORS_NONE, FLAGGED = NS_MECH_CUDA_ERRORS_FLAGGED };

/* The descriptor's cuda_errors in the translator's C for `text` (a file when text is NULL):
 * FLAGGED or NONE as written there, -1 when neither is. */
static int translated(const char *path, const char *text) {
    ns_nmodl_t *m = NULL;
    char *c = NULL;
    const ns_status st = text ? ns_nmodl_parse_string(text, path, &m) : ns_nmodl_parse_file(path, &m);
    CHECK_MSG(st == NS_OK, "%s: %s", path, ns_last_error());
    if (m) CHECK_OK(ns_nmodl_emit(m, NS_NMODL_C, &c));
    ns_nmodl_destroy(m);
    const char *desc = c ? strstr(c, "_desc = {") : NULL;
    const int r = !desc                                          ? -1
                  : strstr(desc, "NS_MECH_CUDA_ERRORS_FLAGGED,\n") ? FLAGGED
                  : strstr(desc, "NS_MECH_CUDA_ERRORS_NONE,\n")    ? NONE
                                                                 : -1;
    ns_nmodl_free(c);
    return r;
}

static void test_translator(void) {
    /* hoc_execerror, exit and abort in BREAKPOINT's and INITIAL's VERBATIM C */
    CHECK(translated(NS_MORPHOLOGIES "/../mechanisms/hoc/hocerr.mod", NULL) == FLAGGED);
    CHECK(translated(NS_MORPHOLOGIES "/../mechanisms/neuron/hh.mod", NULL) == NONE); /* no VERBATIM */
    static const char head[] = "NEURON { SUFFIX x }\nASSIGNED { a }\n";
    char text[512];
    static const struct {
        const char *c;
        int want;
    } cases[] = {
        {"BREAKPOINT {\nVERBATIM\n  a = 1;\nENDVERBATIM\n}\n", NONE},                      /* C that cannot fail */
        {"BREAKPOINT {\nVERBATIM\n  if (a > 1) abort();\nENDVERBATIM\n}\n", FLAGGED},
        {"BREAKPOINT {\nVERBATIM\n  if (a > 1) hoc_warning(\"big\", 0);\nENDVERBATIM\n}\n", NONE}, /* prints */
        {"PROCEDURE f() {\nVERBATIM\n  exit(1);\nENDVERBATIM\n}\nBREAKPOINT { f() }\n", FLAGGED}, /* reached */
        /* a #define outside the blocks that device C uses */
        {"VERBATIM\n#define STOP(s) hoc_execerror(s, 0)\nENDVERBATIM\n"
         "BREAKPOINT {\nVERBATIM\n  if (a > 1) STOP(\"big\");\nENDVERBATIM\n}\n",
         FLAGGED},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        snprintf(text, sizeof text, "%s%s", head, cases[k].c);
        const int got = translated("x.mod", text);
        CHECK_MSG(got == cases[k].want, "case %zu: %d, want %d", k, got, cases[k].want);
    }
}

/* the rule on n kinds: the records and each slot against `want` (-1: none) */
static void slots(const int *kinds, int32_t n, const int32_t *want, int32_t want_records, int32_t want_unflagged,
                  int line) {
    int32_t slot[8], unflagged = -1;
    memset(slot, 0x55, sizeof slot);
    const int32_t records = ns_sim_gpu_error_slots(kinds, n, slot, &unflagged);
    CHECK_MSG(records == want_records && unflagged == want_unflagged, "line %d: %d records, %d unflagged", line,
              (int)records, (int)unflagged);
    for (int32_t k = 0; k < n; ++k)
        CHECK_MSG(slot[k] == want[k], "line %d: mechanism %d: slot %d, want %d", line, (int)k, (int)slot[k],
                  (int)want[k]);
}

static void test_rule(void) {
    /* the built-in mechanisms cannot fail on the device: no records, nothing read */
    const int builtin[4] = {nsm_pas_desc.cuda_errors, nsm_hh_desc.cuda_errors, nsm_ExpSyn_desc.cuda_errors,
                            nsm_Exp2Syn_desc.cuda_errors};
    const int32_t none[4] = {-1, -1, -1, -1};
    slots(builtin, 4, none, 0, 0, __LINE__);
    slots(builtin, 0, none, 0, 0, __LINE__);
    /* pas, hocerr (the translator's FLAGGED), hh: one record, read when the flag is set */
    const int one[3] = {NONE, translated(NS_MORPHOLOGIES "/../mechanisms/hoc/hocerr.mod", NULL), NONE};
    const int32_t one_slots[3] = {-1, 0, -1};
    slots(one, 3, one_slots, 1, 0, __LINE__);
    /* a library built before the field (0) or a value the loop does not know: read after every
     * interval, so first; the flagged after them, each group in the mechanisms' order */
    const int mix[6] = {FLAGGED, NONE, UNKNOWN, FLAGGED, 7, NONE};
    const int32_t mix_slots[6] = {2, -1, 0, 3, 1, -1};
    slots(mix, 6, mix_slots, 4, 2, __LINE__);
    const int old[2] = {UNKNOWN, UNKNOWN};
    const int32_t old_slots[2] = {0, 1};
    slots(old, 2, old_slots, 2, 2, __LINE__);
}

int main(void) {
    test_translator();
    test_rule();
    return check_summary("test_gpu_error_slots");
}
