/* Private: the NMODL translator's IR (nmodl_parse.c builds it, nmodl_gen.c
 * writes C and CUDA from it). */
#ifndef NS_NMODL_IMPL_H
#define NS_NMODL_IMPL_H

#include <stddef.h>

#include "neurosolve/nmodl.h"

/* Every allocation of a module's AST, freed at once (nmodl_arena.c). */
typedef struct nm_arena {
    void **p;
    size_t n, cap;
} nm_arena;
void *nm_calloc(nm_arena *a, size_t n, size_t size);
void *nm_realloc(nm_arena *a, void *old, size_t size); /* old: NULL or from this arena */
void nm_arena_free(nm_arena *a);

typedef enum ex_kind { EX_NUM, EX_VAR, EX_CALL, EX_NEG, EX_NOT, EX_BIN } ex_kind;

typedef struct ex {
    ex_kind kind;
    int op;          /* EX_BIN: '+', '-', '*', '/', '^', '<', '>', 'l' (<=), 'g' (>=), 'e' (==), 'n' (!=), '&', '|' */
    double num;      /* EX_NUM */
    char *text;      /* EX_NUM: source text; EX_VAR, EX_CALL: name */
    struct ex *a, *b;
    struct ex **args;
    int n_args;
    int depth;       /* of the tree below (parser: bounded, the passes over it recurse) */
} ex;

typedef enum st_kind {
    ST_ASSIGN, ST_DERIV, ST_IF, ST_CALL, ST_SOLVE,
    ST_REACTION, ST_CONSERVE, ST_COMPARTMENT /* KINETIC only: lowered by nmodl_kinetic.c */
} st_kind;

/* A term of a reaction or CONSERVE: num x name. */
typedef struct rterm {
    char *name;
    int num;
} rterm;

typedef struct st {
    st_kind kind;
    int line;
    char *name;          /* ST_ASSIGN, ST_DERIV: the variable; ST_SOLVE: the block */
    ex *e;               /* value, condition or call */
    struct stlist *then_, *else_;
    int method;          /* ST_SOLVE; ST_CONSERVE: the row it replaces (nm_kinetic_lower) */
    int steady;          /* ST_SOLVE: SOLVE ... STEADYSTATE method (INITIAL) */
    /* ST_REACTION: lhs <-> rhs (e, e2), lhs -> rhs (e), lhs << (e) (react '<->', '->', '<<');
     * ST_CONSERVE: lhs = e; ST_COMPARTMENT: e {lhs} */
    rterm *lhs, *rhs;
    int n_lhs, n_rhs;
    ex *e2;
    int react;           /* 'R' (<->), '>' (->), '<' (<<) */
} st;

typedef struct stlist {
    st **s;
    int n;
    char **locals;       /* LOCAL names of this block */
    int n_locals;
} stlist;

enum { M_NONE, M_CNEXP, M_DERIVIMPLICIT, M_EULER, M_SPARSE };

typedef struct table_decl {
    char **names;        /* PROCEDURE: the tabulated variables; FUNCTION: none */
    int n_names;
    char **depend;
    int n_depend;
    ex *from, *to;
    int with;            /* intervals: n + 1 entries */
    int offset;          /* into ppack.table */
} table_decl;

enum { B_FUNCTION, B_PROCEDURE, B_DERIVATIVE, B_KINETIC };

/* A KINETIC block after nm_kinetic_lower: its body computes, for the states
 * at their current values, each row's flux sum into the LOCAL kinF_<r> and
 * the Jacobian entries -d(flux r)/d(state c) (nocmodl's _MATELM: mass action
 * with the rates held constant, no << flux) into kinJ_<r>_<c>; a CONSERVE row
 * holds total - sum(num cap x) and its coefficients instead. */
typedef struct kinetic {
    char **states;       /* the rows: each STATE a reaction, flux or CONSERVE names */
    int n;
    int linear;          /* nocmodl's _linmat: every reaction first order (one Newton step) */
    int *conserve;       /* per row: 1 where a CONSERVE equation replaces it */
    ex **cap;            /* per row: the COMPARTMENT size, or NULL (1) */
    unsigned char *jac;  /* n x n: 1 where kinJ_<r>_<c> exists */
    int side_effects;    /* the body writes a non-LOCAL or calls a PROCEDURE: run it once more at the result */
} kinetic;

typedef struct block {
    int kind;
    char *name;
    int line;
    char **args;
    int n_args;
    stlist *body;
    table_decl *table;
    kinetic *kin;        /* B_KINETIC, once lowered */
} block;

/* A variable of the mechanism. */
enum { V_PARAM, V_ASSIGNED, V_STATE, V_GLOBAL, V_CONST, V_ION_READ };

typedef struct var {
    char *name;
    int cls;
    double value;        /* default (parameters, globals, constants) */
    int field;           /* index into ppack.field (-1) */
    int global;          /* index into ppack.global (-1) */
    int ion;             /* ion index for ion variables (-1) */
    int ion_what;        /* 'e', 'i', 'c' (ci), 'o' (co) */
    int line;
} var;

typedef struct ion_use {
    char *name;
    int charge;
    unsigned flags;
} ion_use;

struct ns_nmodl {
    char *file;
    char *name;
    int point;
    var *vars;
    int n_vars, cap_vars;
    ion_use ions[8];
    int n_ions;
    char **currents;     /* currents in NEURON block order: ion currents then NONSPECIFIC */
    int n_currents;
    char **range;
    int n_range;
    char **globals_decl;
    int n_globals_decl;
    block **blocks;
    int n_blocks;
    stlist *initial, *breakpoint;
    stlist *net_receive;
    char *net_weight;    /* the NET_RECEIVE argument */
    int n_fields, n_params, n_assigned, n_states, n_globals, table_size;
    nm_arena arena;
};

/* nmodl_kinetic.c: lower KINETIC block b of m (its reactions, CONSERVE and
 * COMPARTMENT statements) into statements and b->kin; errors name m's file
 * and the line. */
ns_status nm_kinetic_lower(struct ns_nmodl *m, block *b);

#endif
