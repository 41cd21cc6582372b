/* Private to the model files of mech (model.c: statements and the model file;
 * expr.c: parameter expressions; model_resolve.c: the resolution per shape):
 * the model's statements and the compiled expressions. */
#ifndef NS_MECH_MODEL_BUILD_H
#define NS_MECH_MODEL_BUILD_H

#include <string.h>

#include "mech/model_impl.h"

/* ------------------------------------------------------------ expressions
 * Compiled to a postfix program over a value stack (expr.c). */

typedef enum {
    OP_NUM, OP_D, OP_NEG, OP_NOT, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ,
    OP_NE, OP_AND, OP_OR, OP_EXP, OP_LOG, OP_SQRT, OP_FABS, OP_POWF, OP_MIN, OP_MAX
} op_kind;

typedef struct op {
    op_kind kind;
    double value;
} op;

typedef struct expr {
    op *ops;
    int n, cap, depth;
} expr;

/* text compiled into *out (NS_ERR_PARSE with the reason in msg); its value at distance d [um] */
ns_status ns_model_expr_compile(const char *text, expr *out, char *msg, size_t msg_size);
double ns_model_expr_eval(const expr *e, double d);

/* ------------------------------------------------------------ the model */

typedef enum { ST_INSERT, ST_SET, ST_ION, ST_GLOBAL, ST_CM } stmt_kind; /* ST_CM: REGION.cm = EXPR */
enum { ION_E = 0, ION_CI = 1, ION_CO = 2 };

typedef struct stmt {
    stmt_kind kind;
    unsigned regions;  /* bit per ns_region */
    int has_loc;       /* 1: only the section `loc` names (sec:K, swc:ID, dend[3]); with loc.has_x only
                          its segment containing x (NEURON's sec(x)) */
    ns_location loc;
    char loc_text[48]; /* its text, for messages */
    int mech;          /* library index (insert, set, global) */
    int field;         /* parameter index (set), global index (global) */
    char ion[16];      /* ion name (ST_ION) */
    int which;         /* ION_E, ION_CI, ION_CO */
    int e_fixed;       /* eX_fixed: e stays this value where a mechanism writes the concentration (NEURON's
                          ion_style e_style 1 without einit/eadvance) */
    expr value;
    double number;     /* ST_GLOBAL */
    char where[96];    /* "file:line" or the call, for messages */
    char text[96];     /* the statement's name, for messages */
} stmt;

/* FUNCTION_TABLE k of catalogue entry desc: a copy (ftable_copy) */
typedef struct model_ftable {
    int desc, k;
    ns_mech_ftable t;
} model_ftable;

struct ns_sim_model {
    /* the library's mechanisms, then the built-in ones it does not shadow */
    const ns_mech_desc **descs;
    int n_descs;
    stmt *stmts;
    int n, cap;
    model_ftable *ftabs;
    int n_ftabs;
};

/* *dst = src with its arrays in one allocation (dst->values first: free((void *)dst->values)) */
ns_status ns_model_ftable_copy(const ns_mech_ftable *src, ns_mech_ftable *dst);

typedef struct selector {
    unsigned regions;
    int has_loc;
    ns_location loc;
} selector;

/* Is the segment at position pos (its centre, (j + 0.5) / nseg) the one containing x? NEURON's
 * sec(x): segment int(x nseg), the last one for x = 1. */
static inline int in_segment(double pos, int32_t nseg, double x) {
    int32_t j = (int32_t)(x * nseg), jp = (int32_t)(pos * nseg);
    if (j > nseg - 1) j = nseg - 1;
    if (jp > nseg - 1) jp = nseg - 1;
    return j == jp;
}

/* Which of an ion's variables `name` is: 0 eX, 1 Xi, 2 Xo, 3 iX (its
 * current), or -1. */
static inline int ion_var_of(const char *name, const char *ion) {
    const size_t len = strlen(ion);
    if (strlen(name) != len + 1) return -1;
    if (name[0] == 'e' && !strcmp(name + 1, ion)) return 0;
    if (name[0] == 'i' && !strcmp(name + 1, ion)) return 3;
    if (!strncmp(name, ion, len)) return name[len] == 'i' ? 1 : name[len] == 'o' ? 2 : -1;
    return -1;
}

/* The length of the mechanism name `mech` when `name` is FIELD_MECH (a
 * non-empty FIELD, an underscore, then mech), else 0. */
static inline size_t suffix_match(const char *name, const char *mech) {
    const size_t n = strlen(name), ml = strlen(mech);
    return ml + 2 <= n && name[n - ml - 1] == '_' && strcmp(name + n - ml, mech) == 0 ? ml : 0;
}

#endif
