/* Private: the NMODL translator's IR (the front end, nmodl_parse.h, builds it; the back
 * end, nmodl_gen.h, writes C and CUDA from it). */
#ifndef NS_NMODL_IMPL_H
#define NS_NMODL_IMPL_H

#include <stdarg.h>
#include <stddef.h>

#include "neurosolve/mechanism.h"
#include "core/error.h"
#include "neurosolve/nmodl.h"

/* Every allocation of a module's AST, freed at once (nmodl_arena.c). */
typedef struct nm_arena {
    void **p;
    size_t n, cap;
} nm_arena;
void *nm_calloc(nm_arena *a, size_t n, size_t size);
void *nm_realloc(nm_arena *a, void *old, size_t size); /* old: NULL or from this arena */
void nm_arena_free(nm_arena *a);

/* The first error of a pass (parser, back end, kinetic lowering): unless
 * *status is already set, *status = code with "FILE:LINE: message" (the
 * message from fmt and ap). Returns -1, the passes' failure value. */
int nm_vfail(ns_status *status, ns_status code, const char *file, int line, const char *fmt, va_list ap)
    NS_PRINTF_LIKE(5, 0);

/* value = the factor of units `from` over that of units `to` (nmodl_units.c),
 * with the file's definitions alias[2k] = alias[2k + 1]; -1 with a message
 * for an unknown name */
int nm_units_convert(const char *from, const char *to, const char *const *alias, int n_alias, double *value, char *msg,
                     size_t nmsg);

typedef enum ex_kind { EX_NUM, EX_VAR, EX_CALL, EX_NEG, EX_NOT, EX_BIN, EX_STR } ex_kind;

typedef struct ex {
    ex_kind kind;
    int op;          /* EX_BIN: '+', '-', '*', '/', '^', '<', '>', 'l' (<=), 'g' (>=), 'e' (==), 'n' (!=), '&', '|' */
    double num;      /* EX_NUM */
    char *text;      /* EX_NUM: source text; EX_VAR, EX_CALL: name; EX_STR: the literal with its quotes */
    struct ex *a, *b; /* EX_VAR: a is the index of an array element (NULL: a scalar) */
    struct ex **args;
    int n_args;
    int depth;       /* of the tree below (parser: bounded, the passes over it recurse) */
} ex;

/* The C spelling of an EX_BIN operator: the two-character ones from their
 * letters, else the character itself (written into one[]). */
static inline const char *ns_nmodl_c_op(int op, char one[2]) {
    switch (op) {
    case 'l': return "<=";
    case 'g': return ">=";
    case 'e': return "==";
    case 'n': return "!=";
    case '&': return "&&";
    case '|': return "||";
    default: one[0] = (char)op, one[1] = 0; return one;
    }
}

/* ST_WHILE: while (e) then_; ST_FROM: FROM name = e TO to [BY by] then_ (name an
 * integer); ST_RETURN: a VERBATIM block that is only `return 0;` */
typedef enum st_kind {
    ST_ASSIGN, ST_DERIV, ST_IF, ST_CALL, ST_SOLVE, ST_WHILE, ST_FROM, ST_RETURN,
    ST_REACTION, ST_CONSERVE, ST_COMPARTMENT, /* KINETIC only: lowered by nmodl_kinetic.c */
    ST_EQUATION, /* LINEAR and NONLINEAR only: ~ e = e2 */
    ST_VERBATIM, /* VERBATIM C, compiled as written (nmodl_verbatim.c): name is the C */
    ST_LDIFUS /* KINETIC only: LONGITUDINAL_DIFFUSION [i,] flux {states}, as ST_COMPARTMENT (nm_kinetic_lower) */
} st_kind;
/* A term of a reaction or CONSERVE: num x name. */
typedef struct rterm {
    char *name;
    int num;
    ex *index;           /* an array state's element (NULL: a scalar); nm_kinetic_lower evaluates it into elem */
    int elem;
} rterm;

typedef struct st {
    st_kind kind;
    int line;
    char *name;          /* ST_ASSIGN, ST_DERIV: the variable; ST_SOLVE: the block */
    ex *e;               /* value, condition or call */
    ex *index;           /* ST_ASSIGN: the element of an array (NULL: a scalar) */
    ex *to, *by;         /* ST_FROM */
    struct stlist *then_, *else_;
    int method;          /* ST_SOLVE; ST_CONSERVE: the row it replaces (nm_kinetic_lower) */
    int steady;          /* ST_SOLVE: SOLVE ... STEADYSTATE method (INITIAL) */
    int here;            /* ST_SOLVE of a DERIVATIVE outside BREAKPOINT: 1 its step in place, 2 that step
                            with dt = 1e-9 (STEADYSTATE); method is then the block's form (nmodl_check.c);
                            3: of a LINEAR or NONLINEAR block in BREAKPOINT, run in state(); 4: of a
                            PROCEDURE in a BEFORE/AFTER block, called in place */
    /* ST_REACTION: lhs <-> rhs (e, e2), lhs -> rhs (e), lhs << (e) (react '<->', '->', '<<');
     * ST_CONSERVE: lhs = e; ST_COMPARTMENT, ST_LDIFUS: e {lhs} (name: the index, or NULL) */
    rterm *lhs, *rhs;
    int n_lhs, n_rhs;
    ex *e2;
    int react;           /* 'R' (<->), '>' (->), '<' (<<) */
    int protect;         /* ST_ASSIGN after PROTECT (nocmodl's mutex around it) */
    const char *file;    /* ST_VERBATIM: the file its C is in (the .mod, or one it INCLUDEs) */
    int file_line;       /* ST_VERBATIM: the line of VERBATIM in that file */
} st;

typedef struct stlist {
    st **s;
    int n;
    char **locals;       /* LOCAL names of this block */
    int *local_size;     /* per LOCAL: 0 (a scalar) or its array size */
    int n_locals;
} stlist;

enum { M_NONE, M_CNEXP, M_DERIVIMPLICIT, M_EULER, M_SPARSE, M_RUNGE };

typedef struct table_decl {
    char **names;        /* PROCEDURE: the tabulated variables; FUNCTION: none */
    int n_names;
    int n_last;          /* of those, the last n_last: NEURON's globals that the block sets besides (tadj):
                            each column holds the value after the table's last point, as NEURON keeps it */
    int *col_field;      /* PROCEDURE: per column, the field it sets: each element of an array a column */
    int n_cols;
    char **depend;
    int n_depend;
    ex *from, *to;
    int with;            /* intervals: n + 1 entries */
    int offset;          /* into ppack.table */
    int usetable;        /* the GLOBAL usetable_NAME: index into ppack.global */
    int line;            /* of the TABLE statement */
    int lazy;            /* built at the first call, as NEURON builds the table of a file that is not THREADSAFE:
                            its block reads a GLOBAL that a block writes (My_cat.mod: k, set by INITIAL) */
} table_decl;

enum { B_FUNCTION, B_PROCEDURE, B_DERIVATIVE, B_KINETIC };

/* A KINETIC block after nm_kinetic_lower: its body computes, for the states
 * at their current values, each row's flux sum into the LOCAL kinF_<r> and
 * the Jacobian entries -d(flux r)/d(state c) (nocmodl's _MATELM: mass action
 * with the rates held constant, no << flux) into kinJ_<r>_<c>; a CONSERVE row
 * holds total - sum(num cap x) and its coefficients instead. */
typedef struct kinetic {
    char **states;       /* the rows: each STATE a reaction, flux or CONSERVE names */
    int *elem;           /* per row: its element of an array STATE (0: a scalar) */
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
    int rerun;           /* a DERIVATIVE solved by runge, or a KINETIC block by euler or runge (lowered into a
                            DERIVATIVE): run once more at the new states after the step (nocmodl) */
    /* LINEAR ('L') and NONLINEAR ('N') blocks: a PROCEDURE without arguments (what SOLVE name
     * calls) whose ST_EQUATIONs are solved for the unknowns (SOLVEFOR's names, else the STATEs
     * the equations name, in order): Gaussian elimination or scopmath's newton (nmodl_gen_block.c) */
    int alg;
    char **unknowns;
    int n_unknowns;
    int hoc_only;        /* its VERBATIM C needs hoc and nothing in the file calls it: left out (nmodl_verbatim.c) */
    int ftable;          /* a FUNCTION_TABLE (a FUNCTION without a body): 1 + its index in ppack.ftable; 0: none */
    int recursive;       /* a FUNCTION or PROCEDURE on a cycle of calls (nmodl_check.c): never inlined */
    int here_method;     /* a DERIVATIVE that only INITIAL, a PROCEDURE or a FUNCTION solves: its form; 0: none */
    int here_proc;       /* a DERIVATIVE that a PROCEDURE or FUNCTION solves (its step declared before them) */
} block;

/* A variable of the mechanism. */
enum { V_PARAM, V_ASSIGNED, V_STATE, V_GLOBAL, V_CONST, V_ION_READ, V_POINTER /* POINTER: through ppack.pointer */,
       V_RANDOM /* RANDOM: a stream (nmodl_random.c) */ };

typedef struct var {
    char *name;
    int cls;
    double value;        /* default (parameters, globals, constants) */
    int field;           /* index into ppack.field (-1) */
    int global;          /* index into ppack.global (-1) */
    int ion;             /* ion index for ion variables (-1) */
    int ion_what;        /* 'e', 'i', 'c' (ci), 'o' (co) */
    int line;
    int size;            /* an array of this many (fields or globals from field/global on); 0: a scalar */
    int copy_in;         /* a field the entry points set from the node's v (v) or from the ion (a READ ion
                            variable that the file writes): NEURON's per-instance copy */
    int pointer;         /* V_POINTER: index into ppack.pointer, else -1 */
    int stream;          /* V_RANDOM: its stream (1, 2, ...: nmodl_random.c) */
    int implicit;        /* named only by NONSPECIFIC_CURRENT/ELECTRODE_CURRENT so far: a declaration may follow */
    int start;           /* a STATE whose NAME0 the NEURON block names GLOBAL: 1 + that GLOBAL's index in vars,
                            its value before INITIAL (nocmodl's implicit x0); 0: the START value */
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
    /* the elements x[k] of array STATEs that a DERIVATIVE block names by a constant index, each a scalar
     * "x[k]" on field x + k (nm_deriv_arrays_lower); found by name as vars are, never in vars' loops */
    var *elems;
    int n_elems;
    ion_use ions[8];
    int n_ions;
    char **currents;     /* currents in NEURON block order: ion currents then NONSPECIFIC */
    int n_currents;
    char **range;
    int n_range;
    char **globals_decl;
    int *globals_line;   /* the line of each GLOBAL name */
    int n_globals_decl;
    block **blocks;
    int n_blocks;
    stlist *initial, *breakpoint;
    /* BEFORE/AFTER blocks, CONSTRUCTOR, DESTRUCTOR (indexed NS_MECH_BEFORE_BREAKPOINT ...;
     * two of a kind are one list, in file order): NULL none */
    stlist *hooks[NS_MECH_N_HOOKS];
    int n_ftables;       /* FUNCTION_TABLEs (blocks with ftable) */
    int hooks_line[NS_MECH_N_HOOKS];
    stlist *net_receive;
    char *net_weight;    /* the NET_RECEIVE argument */
    /* events (nmodl_events.c): NET_RECEIVE's arguments (net_args[0] = net_weight: the
     * weight vector), its INITIAL block, ARTIFICIAL_CELL, NS_MECH_EV_* of the calls */
    char **net_args;
    int n_net_args;
    stlist *net_initial;
    int artificial;
    unsigned events;
    char gpu_why[256];   /* "FILE:LINE: construct": the first that keeps it off the GPU loop ("" none) */
    ex **watch_cond;     /* WATCH conditions in file order (a > b or a < b) */
    int n_watch;
    int n_fields, n_params, n_assigned, n_states, n_globals, table_size;
    int uses_printf;
    int uses_at_time;    /* calls at_time: the header defines nsm_at_time */
    int electrode;       /* ELECTRODE_CURRENT: the currents are injected (rhs += I, d -= dI/dv) */
    nm_arena arena;
    int random_field;    /* random numbers: the first of 4 hidden fields per stream (nmodl_random.c), -1 none */
    int n_streams;       /* 1 (normrand and the like) + one per RANDOM variable; 0: none */
    char **randoms;      /* RANDOM names (NEURON 9) */
    int *randoms_line;
    int n_randoms;
    stlist *verbatim_top; /* VERBATIM C outside the blocks (ST_VERBATIM), in file order; NULL: none */
    int verbatim;        /* the file has VERBATIM C (nmodl_verbatim.c) */
    char verbatim_gpu_why[400]; /* "FILE:LINE: ...": the VERBATIM C that keeps it off the GPU ("": none;
                                   nmodl_cuda_verbatim.c) */
    int cuda_may_fail;   /* device C calls hoc_execerror, hoc_execerr_ext, exit or abort (ns_mech_desc.cuda_errors) */
    int threadsafe;      /* the NEURON block says THREADSAFE */
    int lazy_tables;     /* a TABLE is lazy (table_decl.lazy) */
    const char *thread_unsafe; /* NULL, or FILE:LINE and why not (static C state; nm_verbatim_check) */
    /* LONGITUDINAL_DIFFUSION (nm_kinetic_lower): one entry per diffusing STATE element, in NEURON's
     * order (the statements', each array's elements ascending): its field, the flux coefficient (the
     * statement's expression) and the volume (the state's COMPARTMENT size) at that element */
    struct ldifus { int field; int line; ex *flux, *vol; } *ldifus;
    int n_ldifus;
    char **pointers;     /* POINTER names in declaration order (BBCOREPOINTER's stay ASSIGNED fields) */
    int *pointers_line;
    int n_pointers;
};

/* m has a BEFORE/AFTER block, CONSTRUCTOR or DESTRUCTOR */
static inline int nm_hooks(const struct ns_nmodl *m) {
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (m->hooks[h]) return 1;
    return 0;
}

/* hook h runs on the device too (ns_mech_desc.cuda_hooks): a BEFORE/AFTER
 * block, a density mechanism's CONSTRUCTOR. A point process's CONSTRUCTOR
 * and a DESTRUCTOR run on the host on the GPU loop too (NEURON with
 * CoreNEURON runs them on the host: CoreNEURON's code has none of them):
 * over the host copy of the instances before it goes to the device,
 * and over the device's copy brought back when the loop frees them
 * (docs/mechanisms.md, "BEFORE, AFTER, CONSTRUCTOR") */
static inline int nm_hook_on_device(const struct ns_nmodl *m, int h) {
    return m->hooks[h] && (h < NS_MECH_CONSTRUCTOR || (h == NS_MECH_CONSTRUCTOR && !m->point));
}

/* A mechanism without CUDA entry points: FOR_NETCONS, VERBATIM C that is
 * not device C (m->verbatim_gpu_why), LONGITUDINAL_DIFFUSION, a TABLE built at
 * its first call (table_decl.lazy; m->gpu_why says where); per-connection state, NET_RECEIVE's INITIAL, self events,
 * net_event, net_move, WATCH, ARTIFICIAL_CELL, the BEFORE/AFTER blocks,
 * CONSTRUCTOR and DESTRUCTOR have them */
static inline int nm_cuda_host_only(const struct ns_nmodl *m) {
    return (m->events & (unsigned)NS_MECH_EV_NETCONS) || m->verbatim_gpu_why[0] || m->n_ldifus || m->lazy_tables;
}

/* a FUNCTION or PROCEDURE on a cycle of calls (block.recursive): on the GPU its kernels' stack is
 * raised (NSM_RECURSION in the generated header) and it has no device products (ABI 10), whose dual
 * twins' frames, tens of times the value's, would need a stack per thread far above any sensible
 * limit (docs/gradients.md, "On the GPU") */
static inline int nm_recursive(const struct ns_nmodl *m) {
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->recursive) return 1;
    return 0;
}

static inline int nm_fused_member(const struct ns_nmodl *m) {
    return !m->point && !nm_cuda_host_only(m) && m->n_pointers == 0 && !m->verbatim && !nm_hooks(m);
}

/* mechlib_fused.c: a CUDA library's fused launches into work/: the header
 * nsm_library_fused.h (each member's NSM_FUSED_INDEX_NAME, the two entry
 * points) and nsm_library_fused.cu (its path into *cu_path, malloc'd), over
 * the n mechanisms names[k] (member[k]: nm_fused_member; n_ions[k]: its USEIONs) */
ns_status nm_write_fused(const char *work, const char *const *names, const int *member, const int *n_ions, size_t n,
                         char **cu_path);

/* nmodl_kinetic.c: lower KINETIC block b of m (its reactions, CONSERVE and
 * COMPARTMENT statements) into statements and b->kin; errors name m's file
 * and the line. */
ns_status nm_kinetic_lower(struct ns_nmodl *m, block *b);
/* a DERIVATIVE block's array STATEs: FROM loops with x'[i] unrolled (constant bounds), each element with a
 * constant index the scalar m->elems "x[k]", as nocmodl's per-element equations */
ns_status nm_deriv_arrays_lower(struct ns_nmodl *m, block *b);

/* nmodl_random.c: normrand, exprand, scop_random, set_seed */
extern const char *const nm_random_field_names[4]; /* the hidden fields: id1, id2, seed, counter */
extern const char *const nm_random_stream_fields[4]; /* a RANDOM R's: __ran_R_id1, _id2, _id3, _seq */
const char *nm_random_runtime(void);               /* the functions (nmodl_random.h), C for the header */
int nm_random_arity(const char *name);             /* -1: not one of them */
/* NEURON 9's functions of a RANDOM variable (random_uniform, ...): -1 not one
 * of them, 0 a wrong count of arguments, 1 fine */
int nm_random_api(const char *name, int n_args);
int nm_random_used(const struct ns_nmodl *m);      /* 1 when the file calls one of them */
unsigned nm_random_mech_key(const char *name);
/* nmodl_events.c: NEURON's event calls net_send(delay, flag), net_event(t),
 * net_move(t). Where a block may call them (ctx: NM_EV_*), their arity and
 * NS_MECH_EV_* flag; a call elsewhere is an error with the reason. */
enum { NM_EV_NONE, NM_EV_INITIAL, NM_EV_RECEIVE, NM_EV_RECEIVE_INITIAL };
int nm_event_call(const char *name, int *arity, unsigned *flag);
/* a WATCH statement's call: EX_CALL "WATCH" with op 'W', args (condition, flag), num its index */
#define NM_WATCH_OP 'W'
/* FOR_NETCONS (a, b) { body }: an ST_CALL whose EX_CALL "FOR_NETCONS" has op 'N',
 * the names as EX_VAR args, and the body in the statement's then_ */
#define NM_NETCONS_OP 'N'
const char *nm_event_misplaced(const char *name, int ctx);


/* nmodl_verbatim.c: VERBATIM C. A scanner of the names in C text (comments,
 * strings, numbers and preprocessor lines skipped): each name with its
 * line (from 0, the VERBATIM line), brace depth, whether it follows `.` or
 * `->` (a member) and whether `(` follows (a call). */
typedef struct nm_cident {
    const char *s;
    size_t n;
    int line, depth, member, call;
} nm_cident;
typedef struct nm_cscan {
    const char *c;
    size_t pos;
    int line, depth, member, bol;
} nm_cscan; /* start as {text, 0, 0, 0, 0, 1} */
int nm_cscan_next(nm_cscan *sc, nm_cident *id); /* 1: *id is the next name; 0: the end */
/* the next variable that C c (outside the blocks) defines at file scope with external linkage (not
 * static, extern, const or typedef; no function or parameter): 1 and *id, 0 at the end */
int nm_c_next_file_var(const char *c, nm_cscan *sc, nm_cident *id);
/* after the parse: sets m->verbatim, leaves out (block.hoc_only) the FUNCTIONs and
 * PROCEDUREs that only hoc could call, refuses the rest of what has no meaning here */
ns_status nm_verbatim_check(struct ns_nmodl *m);
int nm_verbatim_uses_random(const char *c); /* the C calls normrand, exprand, scop_random, set_seed */
int nm_verbatim_in(const stlist *l);        /* the list holds VERBATIM C (nested lists too) */
/* A function defined in C outside the blocks (nm_c_funcs): its name, its text [from, to) from its
 * return type (K&R definitions too), its block; hoc, keep: nmodl_verbatim.c's marks */
typedef struct nm_cfunc {
    const char *name;
    size_t n, from, to;
    const st *s;
    int hoc, keep;
} nm_cfunc;
/* the definitions at file scope of C block s appended to f[n..cap): the new count */
int nm_c_funcs(const st *s, nm_cfunc *f, int n, int cap);
/* the position after the bracket ('(' or '{') at c[i] closes, comments and literals skipped */
size_t nm_c_close(const char *c, size_t i);
/* called[b] = 1 for each block b that the entry points or the C reach (m->n_blocks + 1 bytes) */
int nm_verbatim_reached(struct ns_nmodl *m, char *called);
/* nmodl_cuda_verbatim.c: 1 and why ("FILE:LINE: ...") where the VERBATIM C that the simulation
 * runs is not device C by the allow-list, 0 where it is (or there is none), -1 out of memory */
int nm_verbatim_device(struct ns_nmodl *m, char *why, size_t n_why);
const st *nm_verbatim_first(const struct ns_nmodl *m); /* m->verbatim: its first VERBATIM C */
/* The C at id is a declaration of its name (a type word before it): the C's own variable */
int nm_c_declares(const char *c, const nm_cident *id);
/* the file's C writes POINTER name's slot (`_p_x = ecalloc(...)`, `&_p_x`): NEURON's slot used as the C's
 * storage of its own structure, kept here as a BBCOREPOINTER's (a void * in a field) */
int nm_verbatim_pointer_storage(const struct ns_nmodl *m, const char *name);
/* C text c with its prototypes of the file's FUNCTIONs and PROCEDUREs (`double betacf(double, double,
 * double);`, as C written for nocmodl's unthreaded calls declares them) blanked, its lines kept: the
 * translator declares them, and a call's #define would expand them (a copy in a; NULL: out of memory) */
char *nm_c_unprototype(const struct ns_nmodl *m, const char *c, nm_arena *a);
/* the body of C text c's `#define name ...` (a copy in a, continuation lines joined), or NULL */
const char *nm_c_macro(const char *c, const char *name, nm_arena *a);
/* how the C from id on calls id's name: 1 `f(_threadargscomma_ x)`, 2 `f(x)`, 3 both (nmodl_verbatim.c) */
int nm_c_call_style(const nm_cident *id);
/* a VERBATIM block of the list (nested lists too) declares name: NMODL statements of the
 * block may use it (nocmodl passes names through); such an EX_VAR gets op NM_C_NAME */
int nm_verbatim_declares(const stlist *l, const char *name);
#define NM_C_NAME 'C'
/* the C's braces balance (none closes one it did not open) and it has no return or goto: code
 * put after it runs (an instance's array, copied in before the C and out after it) */
int nm_verbatim_balanced(const char *c);
const char *nm_verbatim_runtime(void);      /* NEURON's helpers (nmodl_verbatim.h), C for the header */

/* The back end's pieces that nmodl_diff.c reuses (nmodl_gen.c, nmodl_gen_st.c): its output, the plain C of an
 * expression or a variable, the scope of LOCALs and arguments (-1: not in scope, else 0 a
 * LOCAL, 1 an argument, 2 FROM's integer), the block being written (a FUNCTION's name is ret_) */
struct gen;
void nm_gen_put(struct gen *g, const char *fmt, ...) NS_PRINTF_LIKE(2, 3);
const struct ns_nmodl *nm_gen_module(const struct gen *g);
size_t nm_gen_mark(const struct gen *g);
void nm_gen_cut(struct gen *g, size_t at);
void nm_gen_ex(struct gen *g, const ex *e);
void nm_gen_var(struct gen *g, const char *name, const ex *ix);
/* the states a DERIVATIVE block's body differentiates, in the order of the generated code (*order: realloc'ed) */
int nm_collect_states(const stlist *l, char ***order, int *n);
int nm_gen_scope(const struct gen *g, const char *name);
int nm_gen_scope_push(struct gen *g, char *name, int arg);
int nm_gen_scope_size(const struct gen *g);
void nm_gen_scope_reset(struct gen *g, int n);
void nm_gen_owner(struct gen *g, const block *bl);
const var *nm_find_var(const struct ns_nmodl *m, const char *name);
const block *nm_find_block(const struct ns_nmodl *m, const char *name);
/* cnexp's x' = a x + c of ST_DERIV s: a and c, and whether the target -c/a is c's numerator
 * (x' = (inf - x)/tau); 0, 1 where a is 0 (x += dt c), -1 when not linear in x */
int nm_cnexp_parts(const st *s, ex **a, ex **c, int *inf_form);
/* The METHOD of BREAKPOINT's (l's) SOLVE of block name, in its ifs too: M_NONE where there is none */
int nm_solve_method(const stlist *l, const char *name);
/* nmodl_affine.c: whether the BREAKPOINT's currents are affine in v (g v + c, g and c free of v):
 * 1 with (*slope)[k] = d current k / dv (NULL: 0; the array and its nodes in the emission's
 * arena), 0 where not (NEURON's two evaluations), -1 out of memory */
int nm_current_slopes(const struct ns_nmodl *m, ex ***slope);

/* nmodl_diff.c: the mechanism's derivative code (ns_mech_desc.vjp_*, forward-mode dual
 * numbers over the same expressions) after NAME.c's loops, or with gpu after NAME.cu's
 * kernels (ns_mech_desc.cuda_vjp_*: a density mechanism's INITIAL, current() and state()
 * products as device functions and their launches): 0 written; 1 not, why says why
 * (FILE:LINE: the construct; nothing written); -1 out of memory */
int nm_diff_emit(struct gen *g, char *why, size_t n_why, int gpu);
/* nmodl_diff_reads.c: the inputs phase (0 init, 1 current, 2 state) reads into read, the
 * fields it may write into may (n_in each; wrote: room): its lanes. An ion value read that is
 * no field (ena, cai read only, ica read) is input 1 + n_fields + n_globals + its row:
 * nm_diff_ion_row, 4 per USEION (e, ci, co, i), so that the gradient knows each row's ion value
 * without a table of its own (ABI 8) */
void nm_diff_phase_reads(const struct ns_nmodl *m, int phase, unsigned char *read, unsigned char *wrote,
                         unsigned char *may, int n_in);
int nm_diff_ion_row(const var *v);
/* nmodl_diff_runtime.c: the dual numbers' runtime for the type nsd_M of K lanes (gpu: device
 * functions); the loop nsm_NAME_vjpn_PHASE over a block's instances (T: the duals' type); the
 * device's kernel and launch nsm_NAME_cuda_vjp_PHASE (M: the mechanism's name); the lanes of a phase's
 * constant-ion variant from its lanes (0: none) */
void nm_diff_put_runtime(struct gen *g, const char *M, int K, int gpu);
void nm_diff_put_block_loop(struct gen *g, const struct ns_nmodl *m, const char *T, const char *phase);
void nm_diff_put_kernel(struct gen *g, const char *M, const char *phase);
int nm_diff_ci_lanes(const struct ns_nmodl *m, const int *lane, int *out);
#endif
