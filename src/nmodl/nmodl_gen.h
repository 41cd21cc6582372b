/* Private: the NMODL translator's back end, shared by its files (nmodl_gen.c: the
 * output buffer, the scope, the symbolic steps and expressions; nmodl_gen_st.c:
 * statements, VERBATIM C and the functions' signatures; nmodl_gen_block.c: the
 * FUNCTIONs, PROCEDUREs and the solvers of the DERIVATIVE, KINETIC, LINEAR and
 * NONLINEAR blocks; nmodl_gen_entry.c: NAME.h's entry points and NAME.c's loops;
 * nmodl_gen_desc.c: the descriptor and NAME.cu). */
#ifndef NS_NMODL_GEN_H
#define NS_NMODL_GEN_H

#include <stddef.h>

#include "nmodl/nmodl_impl.h"

typedef struct buf {
    char *s;
    size_t n, cap;
    int oom;
} buf;

typedef struct gen {
    const struct ns_nmodl *m;
    buf *b;
    char **scope;   /* LOCALs (C name L_x) and arguments (A_x) visible now */
    int *scope_arg;
    int n_scope, cap_scope;
    const block *owner;
    int solve_here; /* ST_SOLVE of BREAKPOINT: the solver's call in place (state() of a mechanism without
                       currents, nocmodl's nrn_state) */
    int mode;       /* statement mode for ST_DERIV: M_CNEXP, M_EULER (D_ temporaries), M_DERIVIMPLICIT (f_[k]) */
    char **states;  /* the states of the DERIVATIVE block being written, in equation order */
    int n_states;
    int field_direct; /* fields as p->field[k][i_] (the TABLE builder), else through the F pointers */
    int staged;       /* cnexp equations as their first stage: *a<k>_ and *t<k>_ (cnexp_staged) */
    int ev_ctx;       /* the block being written for the event calls (NM_EV_*): W_ is the weight vector in NET_RECEIVE */
    int t_ofs;        /* t is p->t + tofs_ (runge's stages) */
    const block *alg; /* the LINEAR or NONLINEAR block being written (its ST_EQUATIONs: emit_equation) */
    int top;          /* writing VERBATIM C outside the blocks (no ppack in scope) */
    int ctor;         /* writing the CONSTRUCTOR (its C's ifarg and getarg: the constructor's arguments) */
    int call_stmt;    /* the EX_CALL being written is a statement (a PROCEDURE called as a value is 0.0) */
    size_t nl_at;     /* the newlines of b->s[0 .. nl_at) are nl (nm_emit_verbatim's #line, counted once) */
    int nl;
    ns_status status;
} gen;

/* the nodes that the symbolic steps and the emission make live in the emit call's arena */
extern _Thread_local nm_arena *nm_gen_arena;

/* nmodl_gen.c */
void nm_put(buf *b, const char *fmt, ...) NS_PRINTF_LIKE(2, 3);
int nm_gfail(gen *g, int line, const char *fmt, ...) NS_PRINTF_LIKE(3, 4); /* FILE:LINE: message; -1 */
int nm_scope_find(const gen *g, const char *name); /* its index in g->scope, -1: not in scope */
int nm_gen_const(const gen *g, const ex *e, double *x); /* a compile-time constant: its value */
/* ion variables that are no field (I<k>_), the fields' and ions' pointer parameters and arguments */
int nm_ion_input(const var *v);
const char *nm_ion_array(const var *v);
void nm_put_fparams(gen *g);
void nm_put_fargs(gen *g);
void nm_put_addresses(gen *g, const char *field, int table);
void nm_put_arrays(gen *g, int indent);
void nm_load_copies(gen *g, int what);
/* symbolic steps (cnexp, LINEAR): simplified sums and products, d e / d x, e at x = 0 */
int nm_sym_is_num(const ex *e, double v);
int nm_sym_minus_one(const ex *e);
ex *nm_sym_bin(int op, ex *a, ex *b);
int nm_sym_depends(const ex *e, const char *x);
ex *nm_sym_diff(ex *e, const char *x, int *nonlinear);
int nm_sym_same(const ex *x, const ex *y);
ex *nm_sym_at_zero(ex *e, const char *x);

/* nmodl_gen_st.c */
int nm_emit_verbatim(gen *g, const st *s);
int nm_emit_list_from(gen *g, const stlist *l, int indent, int from);
int nm_emit_list(gen *g, const stlist *l, int indent);
int nm_emit_body(gen *g, const stlist *l, int indent);
void nm_put_sig(gen *g);
void nm_put_call(gen *g, const char *kind, const char *bname, const char *suffix);
int nm_int_procedure(const block *bl);
void nm_emit_proto(gen *g, const block *bl, const char *suffix);

/* nmodl_gen_block.c */
int nm_emit_callable(gen *g, const block *bl);
int nm_emit_kinetic(gen *g, const block *bl);
int nm_emit_derivative(gen *g, const block *bl, int method);

/* nmodl_gen_entry.c */
int nm_emit_header(gen *g);
int nm_emit_c(gen *g);

/* nmodl_gen_desc.c */
void nm_emit_desc_data(gen *g);
void nm_emit_desc(gen *g, const char *why);
void nm_emit_cuda(gen *g);
#endif
