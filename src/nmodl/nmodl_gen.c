/* The NMODL translator's back end: one description, written out as
 *   NAME.h   per-instance static inline functions (host and device),
 *   NAME.c   the host loops over instances, TABLE building and the ns_mech_desc,
 *   NAME.cu  one-thread-per-instance kernels and their launchers,
 * against include/neurosolve/mechanism.h. The arithmetic follows the C that
 * NEURON's nocmodl generates (docs/mechanisms.md, "Numerics"). */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_impl.h"

typedef struct buf {
    char *s;
    size_t n, cap;
    int oom;
} buf;

static void put(buf *b, const char *fmt, ...) NS_PRINTF_LIKE(2, 3);
static void put(buf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if ((size_t)k < room && b->s) { b->n += (size_t)k; return; }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)k + 1) cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) { b->oom = 1; return; }
        b->s = ns;
        b->cap = cap;
    }
}

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
    const block *alg; /* the LINEAR or NONLINEAR block being written: its ST_EQUATIONs are rows eq_row, ... */
    int eq_row;
    int top;          /* writing VERBATIM C outside the blocks (no ppack in scope) */
    size_t nl_at;     /* the newlines of b->s[0 .. nl_at) are nl (emit_verbatim's #line, counted once) */
    int nl;
    ns_status status;
} gen;

/* The per-instance functions reach the instance's fields through one
 * pointer each, F0_ .. F<n-1>_ (parameters, assigned, states: the
 * descriptor's order), ahead of i_ and node_: the _one wrappers pass the
 * addresses in the ppack's arrays, and a loop that keeps an instance's
 * fields in locals (the CPU loop's fused pass, docs/mechanisms.md "ABI")
 * passes theirs, which the compiler then keeps in registers. */
/* An ion variable that is no field (ena, ek, cai read only, ...): the
 * functions reach it through a pointer too, I<k>_ in the order of the
 * model's variables (the wrappers pass the ion slot's address). */
static int is_ion_input(const var *v) { return v->ion >= 0 && v->field < 0; }
static const char *ion_array(const var *v) {
    return v->ion_what == 'e' ? "e" : v->ion_what == 'i' ? "i" : v->ion_what == 'c' ? "ci" : "co";
}
static int ion_input_index(const struct ns_nmodl *m, const var *v) {
    int k = 0;
    for (int i = 0; i < m->n_vars && &m->vars[i] != v; i++) k += is_ion_input(&m->vars[i]);
    return k;
}
/* A POINTER variable: through P<k>_, the address the simulation connected
 * it to (ppack.pointer[k][i_]). */
static void put_fparams(gen *g) {
    for (int k = 0; k < g->m->n_fields; k++) put(g->b, "double *F%d_, ", k);
    for (int i = 0, k = 0; i < g->m->n_vars; i++)
        if (is_ion_input(&g->m->vars[i])) put(g->b, "double *I%d_, ", k++);
    for (int k = 0; k < g->m->n_pointers; k++) put(g->b, "double *P%d_, ", k);
}
static void put_fargs(gen *g) {
    for (int k = 0; k < g->m->n_fields; k++) put(g->b, "F%d_, ", k);
    for (int i = 0, k = 0; i < g->m->n_vars; i++)
        if (is_ion_input(&g->m->vars[i])) put(g->b, "I%d_, ", k++);
    for (int k = 0; k < g->m->n_pointers; k++) put(g->b, "P%d_, ", k);
}
/* the wrappers' arguments: the addresses in the ppack's arrays of instance
 * i_ at node_ (fields: `field` "&p->field[%d][i_]" or, in the TABLE
 * builder, "&s_[%d]"; ion slots at NSM_ION, or there zeros of its own: a
 * table is built on the host, where a GPU loop's ppack has no ions) */
static void put_addresses(gen *g, const char *field, int table) {
    for (int f = 0; f < g->m->n_fields; f++) {
        put(g->b, field, f);
        put(g->b, ", ");
    }
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (!is_ion_input(v)) continue;
        if (table) put(g->b, "&ion_[%d], ", ion_input_index(g->m, v));
        else put(g->b, "&p->ion[%d].%s[NSM_ION(%d)], ", v->ion, ion_array(v), v->ion);
    }
    /* the TABLE builder: a zero of its own per POINTER, as for the ions */
    for (int k = 0; k < g->m->n_pointers; k++)
        if (table) put(g->b, "&ptr_[%d], ", k);
        else put(g->b, "p->pointer[%d][i_], ", k);
}

static int gfail(gen *g, int line, const char *fmt, ...) NS_PRINTF_LIKE(3, 4);
static int gfail(gen *g, int line, const char *fmt, ...) {
    if (g->status) return -1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g->status = ns_fail(NS_ERR_UNSUPPORTED, "%s:%d: %s", g->m->file, line, msg);
    return -1;
}

static const var *find_var(const struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_vars; i++)
        if (!strcmp(m->vars[i].name, name)) return &m->vars[i];
    return NULL;
}
static const block *find_block(const struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_blocks; i++)
        if (!strcmp(m->blocks[i]->name, name)) return m->blocks[i];
    return NULL;
}
static int scope_find(const gen *g, const char *name) {
    for (int i = g->n_scope - 1; i >= 0; i--)
        if (!strcmp(g->scope[i], name)) return i;
    return -1;
}
static int scope_push(gen *g, char *name, int arg) {
    if (g->n_scope == g->cap_scope) {
        int cap = g->cap_scope ? 2 * g->cap_scope : 32;
        char **s = realloc(g->scope, (size_t)cap * sizeof *s);
        int *a = realloc(g->scope_arg, (size_t)cap * sizeof *a);
        if (s) g->scope = s;
        if (a) g->scope_arg = a;
        if (!s || !a) return -1;
        g->cap_scope = cap;
    }
    g->scope[g->n_scope] = name;
    g->scope_arg[g->n_scope++] = arg;
    return 0;
}

/* ---- what the derivative code (nmodl_diff.c) reuses ---- */

void nm_gen_put(gen *g, const char *fmt, ...) {
    if (g->b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    char small[512];
    const int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) { g->b->oom = 1; return; }
    if ((size_t)k < sizeof small) { put(g->b, "%s", small); return; }
    char *big = malloc((size_t)k + 1);
    if (!big) { g->b->oom = 1; return; }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    put(g->b, "%s", big);
    free(big);
}
const struct ns_nmodl *nm_gen_module(const gen *g) { return g->m; }
size_t nm_gen_mark(const gen *g) { return g->b->n; }
void nm_gen_cut(gen *g, size_t at) {
    if (g->b->s && at <= g->b->n) g->b->s[g->b->n = at] = 0;
}
int nm_gen_scope(const gen *g, const char *name) {
    const int s = scope_find(g, name);
    return s < 0 ? -1 : g->scope_arg[s];
}
int nm_gen_scope_push(gen *g, char *name, int arg) { return scope_push(g, name, arg); }
int nm_gen_scope_size(const gen *g) { return g->n_scope; }
void nm_gen_scope_reset(gen *g, int n) { g->n_scope = n; }
void nm_gen_owner(gen *g, const block *bl) { g->owner = bl; }
const var *nm_find_var(const struct ns_nmodl *m, const char *name) { return find_var(m, name); }
const block *nm_find_block(const struct ns_nmodl *m, const char *name) { return find_block(m, name); }

/* ---- symbolic helpers for cnexp ---- */

/* the nodes that the symbolic steps make live in the emit call's arena */
static _Thread_local nm_arena *GAR;
static ex *mk(ex_kind k, int op, ex *a, ex *b) {
    ex *e = nm_calloc(GAR, 1, sizeof *e);
    if (!e) return NULL;
    e->kind = k;
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}
static ex *num(double v) {
    ex *e = mk(EX_NUM, 0, NULL, NULL);
    if (e) {
        e->num = v;
        e->text = v == 0 ? "0.0" : v == 1 ? "1.0" : "-1.0";
    }
    return e;
}
static int is_num(const ex *e, double v) { return e && e->kind == EX_NUM && e->num == v; }

static ex *s_neg(ex *a) {
    if (!a) return NULL;
    if (is_num(a, 0)) return a;
    if (a->kind == EX_NEG) return a->a;
    return mk(EX_NEG, 0, a, NULL);
}
static ex *s_bin(int op, ex *a, ex *b) {
    if (!a || !b) return NULL;
    switch (op) {
    case '+':
        if (is_num(a, 0)) return b;
        if (is_num(b, 0)) return a;
        break;
    case '-':
        if (is_num(b, 0)) return a;
        if (is_num(a, 0)) return s_neg(b);
        break;
    case '*':
        if (is_num(a, 0) || is_num(b, 0)) return num(0);
        if (is_num(a, 1)) return b;
        if (is_num(b, 1)) return a;
        break;
    case '/':
        if (is_num(a, 0)) return num(0);
        if (is_num(b, 1)) return a;
        break;
    }
    return mk(EX_BIN, op, a, b);
}

/* Does e depend on variable x (LOCALs are taken as constants, as nocmodl does)? */
static int depends(const ex *e, const char *x) {
    switch (e->kind) {
    case EX_NUM:
    case EX_STR: return 0;
    case EX_VAR: return !strcmp(e->text, x);
    case EX_CALL:
        for (int i = 0; i < e->n_args; i++)
            if (depends(e->args[i], x)) return 1;
        return 0;
    case EX_NEG:
    case EX_NOT: return depends(e->a, x);
    case EX_BIN: return depends(e->a, x) || depends(e->b, x);
    }
    return 0;
}

/* d e / d x, simplified; *nonlinear set where x enters other than polynomially. */
static ex *diff(ex *e, const char *x, int *nonlinear) {
    if (!depends(e, x)) return num(0);
    switch (e->kind) {
    case EX_VAR: return num(1);
    case EX_NEG: return s_neg(diff(e->a, x, nonlinear));
    case EX_BIN:
        switch (e->op) {
        case '+': return s_bin('+', diff(e->a, x, nonlinear), diff(e->b, x, nonlinear));
        case '-': return s_bin('-', diff(e->a, x, nonlinear), diff(e->b, x, nonlinear));
        case '*':
            if (!depends(e->a, x)) return s_bin('*', e->a, diff(e->b, x, nonlinear));
            if (!depends(e->b, x)) return s_bin('*', diff(e->a, x, nonlinear), e->b);
            *nonlinear = 1;
            return s_bin('+', s_bin('*', diff(e->a, x, nonlinear), e->b), s_bin('*', e->a, diff(e->b, x, nonlinear)));
        case '/':
            if (!depends(e->b, x)) return s_bin('/', diff(e->a, x, nonlinear), e->b);
            *nonlinear = 1;
            return num(0);
        default: *nonlinear = 1; return num(0);
        }
    default: *nonlinear = 1; return num(0);
    }
}
/* Are x and y the same expression (structurally)? */
static int ex_same(const ex *x, const ex *y) {
    if (x == y) return 1;
    if (!x || !y || x->kind != y->kind) return 0;
    switch (x->kind) {
    case EX_NUM: return x->num == y->num;
    case EX_VAR: return !strcmp(x->text, y->text) && (x->a ? y->a && ex_same(x->a, y->a) : !y->a);
    case EX_STR: return !strcmp(x->text, y->text);
    case EX_NEG:
    case EX_NOT: return ex_same(x->a, y->a);
    case EX_BIN: return x->op == y->op && ex_same(x->a, y->a) && ex_same(x->b, y->b);
    case EX_CALL:
        if (strcmp(x->text, y->text) || x->n_args != y->n_args) return 0;
        for (int i = 0; i < x->n_args; i++)
            if (!ex_same(x->args[i], y->args[i])) return 0;
        return 1;
    }
    return 0;
}
static int is_minus_one(const ex *e) { return is_num(e, -1) || (e && e->kind == EX_NEG && is_num(e->a, 1)); }

/* e with x replaced by 0, simplified */
static ex *at_zero(ex *e, const char *x) {
    if (!depends(e, x)) return e;
    switch (e->kind) {
    case EX_VAR: return num(0);
    case EX_NEG: return s_neg(at_zero(e->a, x));
    case EX_BIN: return s_bin(e->op, at_zero(e->a, x), at_zero(e->b, x));
    default: return e; /* only reached for nonlinear equations, refused before */
    }
}

/* ---- expressions ---- */

static void emit_ex(gen *g, const ex *e);
void nm_gen_ex(gen *g, const ex *e) { emit_ex(g, e); }
static void emit_var(gen *g, const char *name, const ex *ix);
void nm_gen_var(gen *g, const char *name, const ex *ix) { emit_var(g, name, ix); }
/* cnexp's x' = a x + c of s: *a, *c, and whether the target -c/a is written as c's numerator
 * (emit_cnexp_target); 0, or -1 when not linear in x (or out of memory) */
int nm_cnexp_parts(const st *s, ex **a, ex **c, int *inf_form) {
    int nonlinear = 0;
    *a = diff(s->e, s->name, &nonlinear);
    if (!*a || nonlinear || depends(*a, s->name)) return -1;
    if (!(*c = at_zero(s->e, s->name))) return -1;
    *inf_form = (*c)->kind == EX_BIN && (*c)->op == '/' && (*a)->kind == EX_BIN && (*a)->op == '/' &&
                is_minus_one((*a)->a) && ex_same((*c)->b, (*a)->b);
    return is_num(*a, 0) ? 1 : 0;
}

static void emit_index(gen *g, const ex *ix) {
    put(g->b, "[(int)(");
    emit_ex(g, ix);
    put(g->b, ")]");
}

/* name, or its element ix (NULL: a scalar) */
static void emit_var(gen *g, const char *name, const ex *ix) {
    buf *b = g->b;
    int s = scope_find(g, name);
    if (s >= 0) {
        if (g->scope_arg[s] == 2) { put(b, "((double)I_%s)", name); return; } /* FROM's integer */
        put(b, "%s_%s", g->scope_arg[s] ? "A" : "L", name);
        if (ix) emit_index(g, ix);
        return;
    }
    if (g->owner && g->owner->kind == B_FUNCTION && !strcmp(g->owner->name, name)) { put(b, "ret_"); return; }
    const var *v = find_var(g->m, name);
    if (!strcmp(name, "v") && !v) { put(b, "v_"); return; } /* (a v that the file writes is a field) */
    if (!strcmp(name, "t")) { put(b, g->t_ofs ? "(p->t + tofs_)" : "p->t"); return; }
    if (!strcmp(name, "dt")) { put(b, "p->dt"); return; }
    if (!strcmp(name, "celsius")) { put(b, "p->celsius"); return; }
    if (!strcmp(name, "area") || !strcmp(name, "diam")) { put(b, "p->%s[node_]", name); return; } /* the node's */
    if (!v) {
        if (!strcmp(name, "FARADAY")) { put(b, "96485.33212331001"); return; }
        put(b, "0.0");
        return;
    }
    if (v->field >= 0) {
        if (ix && g->field_direct) {
            put(b, "p->field[%d + (int)(", v->field);
            emit_ex(g, ix);
            put(b, ")][i_]");
        } else if (ix) {
            put(b, "(*X%d_", v->field);
            emit_index(g, ix);
            put(b, ")");
        } else if (g->field_direct) {
            put(b, "p->field[%d][i_]", v->field);
        } else {
            put(b, "(*F%d_)", v->field);
        }
        return;
    }
    if (v->global >= 0) {
        if (ix) {
            put(b, "p->global[%d + (int)(", v->global);
            emit_ex(g, ix);
            put(b, ")]");
        } else {
            put(b, "p->global[%d]", v->global);
        }
        return;
    }
    if (v->cls == V_POINTER) {
        if (g->field_direct) put(b, "(*p->pointer[%d][i_])", v->pointer);
        else put(b, "(*P%d_)", v->pointer);
        return;
    }
    if (v->cls == V_CONST) { /* a negative one parenthesised: `x / -k` is not C's `--` */
        put(b, signbit(v->value) ? "(%.17g)" : "%.17g", v->value);
        return;
    }
    if (v->ion >= 0) {
        if (g->field_direct) put(b, "p->ion[%d].%s[NSM_ION(%d)]", v->ion, ion_array(v), v->ion);
        else put(b, "(*I%d_)", ion_input_index(g->m, v));
        return;
    }
    put(b, "0.0");
}

/* The pointers to the fields of each array, X<first field>_, for an index
 * known at run time (at the top of a function with the F pointers). */
static void put_arrays(gen *g, int indent) {
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (!v->size || v->field < 0) continue;
        put(g->b, "%*sdouble *const X%d_[%d] = {", indent, "", v->field, v->size);
        for (int k = 0; k < v->size; k++) put(g->b, "%sF%d_", k ? ", " : "", v->field + k);
        put(g->b, "};\n%*s(void)X%d_;\n", indent, "", v->field);
    }
}

/* NEURON's per-instance copies (var.copy_in): v from the node's voltage
 * (v_: `what` 'v'), READ ion variables that the file writes from the ion
 * (`what` 'i'), at an entry point, as nocmodl's `v = _v; ena = _ion_ena;` */
static void load_copies(gen *g, int what) {
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (!v->copy_in) continue;
        if (v->ion < 0 && what == 'v') put(g->b, "    (*F%d_) = v_;\n", v->field);
        if (v->ion >= 0 && what == 'i')
            put(g->b, "    (*F%d_) = p->ion[%d].%s[NSM_ION(%d)];\n", v->field, v->ion, ion_array(v), v->ion);
    }
}

static void emit_num(gen *g, const ex *e) {
    if (e->text && strpbrk(e->text, ".eE")) put(g->b, "%s", e->text);
    else if (e->text && e->text[0] != '-') put(g->b, "%s.0", e->text);
    else put(g->b, "(%.17g)", e->num);
}

static void emit_ex(gen *g, const ex *e) {
    buf *b = g->b;
    switch (e->kind) {
    case EX_NUM: emit_num(g, e); return;
    case EX_VAR:
        if (e->op == NM_C_NAME) put(b, "%s", e->text); /* declared by the block's VERBATIM C */
        else emit_var(g, e->text, e->a);
        return;
    case EX_STR: put(b, "%s", e->text); return;
    case EX_NEG: put(b, "(-"); emit_ex(g, e->a); put(b, ")"); return;
    case EX_NOT: put(b, "((double)!("); emit_ex(g, e->a); put(b, "))"); return;
    case EX_CALL: {
        const block *bl = find_block(g->m, e->text);
        int lead = bl != NULL; /* arguments before the file's */
        if (bl) {
            put(b, "nsm_%s_%c_%s(p, ", g->m->name, bl->kind == B_FUNCTION ? 'f' : 'p', e->text);
            put_fargs(g);
            put(b, "i_, node_, v_");
        } else if (nm_random_arity(e->text) >= 0 && g->m->random_field >= 0) {
            /* the instance's stream 0: its four hidden fields and the mechanism's key (nmodl_random.c) */
            put(b, "nsm_rng_%s(", e->text);
            for (int k = 0; k < 4; k++)
                put(b, g->field_direct ? "&p->field[%d][i_], " : "F%d_, ", g->m->random_field + k);
            put(b, "%uu", nm_random_mech_key(g->m->name));
            lead = 1;
        } else if (nm_random_api(e->text, e->n_args) > 0 && g->m->random_field >= 0) {
            /* NEURON 9's random_*(r, ...): RANDOM r's nrnran123 stream, its four fields (nmodl_random.h) */
            const var *rv = find_var(g->m, e->args[0]->text);
            const char *fn = e->text + 7; /* uniform, negexp, normal, setseq, setids */
            put(b, "nsm_r123_%s%s(", fn, !strcmp(fn, "uniform") && e->n_args == 1 ? "0" : "");
            for (int k = 0; k < 4; k++)
                put(b, g->field_direct ? "%s&p->field[%d][i_]" : "%sF%d_", k ? ", " : "",
                    g->m->random_field + 4 * rv->stream + k);
            for (int i = 1; i < e->n_args; i++) {
                put(b, ", ");
                emit_ex(g, e->args[i]);
            }
            if (e->n_args == 1 && !strcmp(fn, "negexp")) put(b, ", 1.0");
            if (e->n_args == 1 && !strcmp(fn, "normal")) put(b, ", 0.0, 1.0");
            put(b, ")");
            return;
        }
        else if (!strcmp(e->text, "at_time")) {
            /* NEURON's at_time in a fixed step (cvodeobj.cpp): 1 when te -
             * 1e-11 lies in (t - dt, t]; it only stops CVODE there */
            put(b, "nsm_at_time(p->t, p->dt, ");
        }
        else if (e->op == NM_WATCH_OP) { /* WATCH k: activated with its flag (mechanism.h) */
            put(b, "ns_mech_watch(p, i_, %d, ", (int)e->num);
            emit_ex(g, e->args[1]);
            /* and the condition's value now (the device's; the host's queue asks watch_value) */
            const ex *c = e->args[0];
            const int gt = c->op == '>' || c->op == 'g';
            put(b, ", watch_rm_++ == 0, (");
            emit_ex(g, gt ? c->a : c->b);
            put(b, ") - (");
            emit_ex(g, gt ? c->b : c->a);
            put(b, "))");
            return;
        }
        else if (nm_event_call(e->text, NULL, NULL)) { /* mechanism.h's ns_mech_net_*: the loop's queue */
            put(b, "ns_mech_%s(p, i_, ", e->text);
            if (!strcmp(e->text, "net_send")) { /* net_send(delay, flag): at t + delay */
                put(b, "p->t + (");
                emit_ex(g, e->args[0]);
                put(b, "), ");
                emit_ex(g, e->args[1]);
                put(b, ", %s)", g->ev_ctx == NM_EV_RECEIVE ? "W_" : "(double *)0");
            } else {
                emit_ex(g, e->args[0]);
                put(b, ")");
            }
            return;
        }
        else if (!strcmp(e->text, "nrn_ghk") && g->m->verbatim) { /* declared by the file's C: NEURON's */
            put(b, "nsv_ghk(p->celsius");
            lead = 1;
        }
        else if (!strcmp(e->text, "exprelr")) put(b, "nsm_exprelr(");
        else if (!strcmp(e->text, "exp")) put(b, "nsm_exp(");
        else if (!strcmp(e->text, "min") || !strcmp(e->text, "max")) put(b, "f%s(", e->text); /* Arbor's */
        else put(b, "%s(", e->text);
        for (int i = 0; i < e->n_args; i++) {
            if (i || lead) put(b, ", ");
            emit_ex(g, e->args[i]);
        }
        put(b, ")");
        return;
    }
    case EX_BIN:
        if (e->op == '^') {
            put(b, "pow(");
            emit_ex(g, e->a);
            put(b, ", ");
            emit_ex(g, e->b);
            put(b, ")");
            return;
        }
        char o[2];
        const char *op = ns_nmodl_c_op(e->op, o);
        int logical = strchr("<>lgen&|", e->op) != NULL;
        put(b, logical ? "((double)(" : "(");
        emit_ex(g, e->a);
        put(b, " %s ", op);
        emit_ex(g, e->b);
        put(b, logical ? "))" : ")");
        return;
    }
}

/* ---- statements ---- */

static int state_index(const block *d, const char *name, char **order, int n) {
    (void)d;
    for (int i = 0; i < n; i++)
        if (!strcmp(order[i], name)) return i;
    return -1;
}
/* the states of a DERIVATIVE block, in the order of their equations */
static int collect_states(const stlist *l, char ***order, int *n) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_DERIV) {
            if (state_index(NULL, s->name, *order, *n) >= 0) continue;
            char **o = realloc(*order, (size_t)(*n + 1) * sizeof *o);
            if (!o) return -1;
            *order = o;
            o[(*n)++] = s->name;
        } else if (s->kind == ST_IF) {
            if (collect_states(s->then_, order, n)) return -1;
            if (s->else_ && collect_states(s->else_, order, n)) return -1;
        }
    }
    return 0;
}


static int emit_list(gen *g, const stlist *l, int indent);
static int emit_verbatim(gen *g, const st *s);
static void put_sig(gen *g);
static void put_call(gen *g, const char *kind, const char *bname, const char *suffix);

/* cnexp's target of x' = a x + c(x = 0): -c/a, nocmodl's form */
static void emit_cnexp_target(gen *g, const ex *a, const ex *c) {
    buf *b = g->b;
    if (c->kind == EX_BIN && c->op == '/' && a->kind == EX_BIN && a->op == '/' && is_minus_one(a->a) &&
        ex_same(c->b, a->b)) {
        /* x' = (inf - x)/tau: the target -(inf/tau)/(-1/tau) is inf but for
         * rounding, so it is inf (two divisions fewer per state: the
         * hand-written hh's gates, docs/mechanisms.md) */
        put(b, "(");
        emit_ex(g, c->a);
        put(b, ")");
    } else {
        put(b, "-(");
        emit_ex(g, c);
        put(b, ") / (");
        emit_ex(g, a);
        put(b, ")");
    }
}

/* ~ e = e2 of the LINEAR or NONLINEAR block g->alg: NONLINEAR's residual f_[r] = e - e2 (scopmath's
 * newton solves f = 0); LINEAR's row r of J_ x = r_: J_[r][c] = d(e - e2)/d x_c, which must not
 * depend on an unknown, and r_[r] = -(e - e2) at x = 0 (nocmodl's coefficients, by differentiation) */
static int emit_equation(gen *g, const st *s, int indent) {
    buf *b = g->b;
    const block *bl = g->alg;
    const int r = g->eq_row++;
    ex *f = s_bin('-', s->e, s->e2);
    if (!f) return gfail(g, s->line, "out of memory");
    if (bl->alg == 'N') {
        put(b, "%*sf_[%d] = ", indent, "", r);
        emit_ex(g, f);
        put(b, ";\n");
        return 0;
    }
    ex *z = f;
    for (int c = 0; c < bl->n_unknowns; c++) {
        int nonlinear = 0;
        ex *a = diff(f, bl->unknowns[c], &nonlinear);
        if (!a) return gfail(g, s->line, "out of memory");
        for (int k = 0; k < bl->n_unknowns && !nonlinear; k++) nonlinear = depends(a, bl->unknowns[k]);
        if (nonlinear)
            return gfail(g, s->line, "LINEAR %s: the equation is not linear in %s (use NONLINEAR)", bl->name,
                         bl->unknowns[c]);
        put(b, "%*sJ_[%d][%d] = ", indent, "", r, c);
        emit_ex(g, a);
        put(b, ";\n");
        if (!(z = at_zero(z, bl->unknowns[c]))) return gfail(g, s->line, "out of memory");
    }
    put(b, "%*sr_[%d] = -(", indent, "", r);
    emit_ex(g, z);
    put(b, ");\n");
    return 0;
}

static int emit_st(gen *g, const st *s, int indent) {
    buf *b = g->b;
    switch (s->kind) {
    case ST_ASSIGN:
        put(b, "%*s", indent, "");
        emit_var(g, s->name, s->index);
        put(b, " = ");
        emit_ex(g, s->e);
        put(b, ";\n");
        return 0;
    case ST_CALL: {
        if (s->e->op == NM_NETCONS_OP) { /* each connection's weight vector, copied in and back */
            put(b, "%*sfor (int q_ = 0;; ++q_) {\n%*s    double *WN_ = ns_mech_netcon(p, i_, q_);\n"
                   "%*s    if (!WN_) break;\n", indent, "", indent, "", indent, "");
            const int base = g->n_scope;
            for (int k = 0; k < s->e->n_args; k++) {
                put(b, "%*s    double A_%s = WN_[%d];\n", indent, "", s->e->args[k]->text, k);
                if (scope_push(g, s->e->args[k]->text, 1)) return gfail(g, s->line, "out of memory");
            }
            const int r = emit_list(g, s->then_, indent + 4);
            g->n_scope = base;
            if (r) return -1;
            for (int k = 0; k < s->e->n_args; k++)
                put(b, "%*s    WN_[%d] = A_%s;\n", indent, "", k, s->e->args[k]->text);
            put(b, "%*s}\n", indent, "");
            return 0;
        }
        const block *bl = find_block(g->m, s->e->text);
        /* printf: the host's, as NEURON's; nothing on the GPU */
        const int host = !bl && !strcmp(s->e->text, "printf");
        if (host) put(b, "#ifndef __CUDA_ARCH__\n");
        put(b, "%*s", indent, "");
        if (!bl || bl->kind == B_FUNCTION) put(b, "(void)");
        emit_ex(g, s->e);
        put(b, ";\n");
        if (host) put(b, "#endif\n");
        return 0;
    }
    case ST_WHILE:
        put(b, "%*swhile (", indent, "");
        emit_ex(g, s->e);
        put(b, ") {\n");
        if (emit_list(g, s->then_, indent + 4)) return -1;
        put(b, "%*s}\n", indent, "");
        return 0;
    case ST_FROM: {
        /* nocmodl's loop: an int from the first bound, compared with the second
         * (evaluated each time) by <= (>= for a negative step) */
        put(b, "%*sfor (int I_%s = (int)(", indent, "", s->name);
        emit_ex(g, s->e);
        put(b, "); I_%s %s (", s->name, s->method < 0 ? ">=" : "<=");
        emit_ex(g, s->to);
        put(b, "); I_%s += %d) {\n", s->name, s->method);
        if (scope_push(g, s->name, 2)) return gfail(g, s->line, "out of memory");
        const int r = emit_list(g, s->then_, indent + 4);
        g->n_scope--;
        if (r) return -1;
        put(b, "%*s}\n", indent, "");
        return 0;
    }
    case ST_VERBATIM: return emit_verbatim(g, s);
    case ST_RETURN: /* VERBATIM return 0; ENDVERBATIM */
        put(b, "%*sreturn%s;\n", indent, "", g->owner && g->owner->kind == B_FUNCTION ? " 0.0" : "");
        return 0;
    case ST_IF:
        put(b, "%*sif (", indent, "");
        emit_ex(g, s->e);
        put(b, ") {\n");
        if (emit_list(g, s->then_, indent + 4)) return -1;
        if (s->else_) {
            put(b, "%*s} else {\n", indent, "");
            if (emit_list(g, s->else_, indent + 4)) return -1;
        }
        put(b, "%*s}\n", indent, "");
        return 0;
    case ST_SOLVE: /* BREAKPOINT's: state(); INITIAL's STEADYSTATE: here; LINEAR, NONLINEAR: here */
        if (find_block(g->m, s->name)->alg) {
            put(b, "%*s", indent, "");
            put_call(g, "p", s->name, "");
            put(b, ");\n");
            return 0;
        }
        if (g->solve_here && !s->steady) {
            const block *bl = find_block(g->m, s->name);
            put(b, "%*s", indent, "");
            put_call(g, bl->kind == B_PROCEDURE ? "p" : "d", s->name, "");
            put(b, ");\n");
        }
        if (s->steady) {
            put(b, "%*s", indent, "");
            put_call(g, "ss", s->name, "");
            put(b, ");\n");
        }
        return 0;
    case ST_REACTION:
    case ST_CONSERVE:
    case ST_COMPARTMENT: return gfail(g, s->line, "a KINETIC statement outside a KINETIC block");
    case ST_EQUATION: return emit_equation(g, s, indent);
    case ST_DERIV: {
        int k = state_index(NULL, s->name, g->states, g->n_states);
        if (g->mode == M_DERIVIMPLICIT) {
            put(b, "%*sf_[%d] = ", indent, "", k);
            emit_ex(g, s->e);
            put(b, ";\n");
            return 0;
        }
        if (g->mode == M_EULER) {
            put(b, "%*sD_[%d] = ", indent, "", k);
            emit_ex(g, s->e);
            put(b, ";\n");
            return 0;
        }
        /* cnexp: x' = a x + b  ->  x += (1 - exp(dt a)) (-b/a - x), nocmodl's form */
        int nonlinear = 0;
        ex *a = diff(s->e, s->name, &nonlinear);
        if (!a) return gfail(g, s->line, "out of memory");
        if (nonlinear || depends(a, s->name))
            return gfail(g, s->line, "%s' is not linear in %s: METHOD cnexp needs a linear equation (use derivimplicit)",
                         s->name, s->name);
        ex *c = at_zero(s->e, s->name);
        if (!c) return gfail(g, s->line, "out of memory");
        if (g->staged) {
            /* the first stage (cnexp_staged): the exponent and the target;
             * staged 2: a = C / X's denominator X instead of the exponent
             * (one_division, emit_one_division) */
            if (g->staged == 2) {
                put(b, "%*sconst double x%d_ = ", indent, "", k);
                emit_ex(g, a->b);
            } else {
                put(b, "%*s*a%d_ = p->dt * (", indent, "", k);
                emit_ex(g, a);
                put(b, ")");
            }
            put(b, ";\n%*s*t%d_ = ", indent, "", k);
            emit_cnexp_target(g, a, c);
            put(b, ";\n");
            return 0;
        }
        put(b, "%*s", indent, "");
        emit_var(g, s->name, NULL);
        put(b, " = ");
        emit_var(g, s->name, NULL);
        if (is_num(a, 0)) {
            put(b, " + p->dt * (");
            emit_ex(g, c);
            put(b, ");\n");
        } else {
            put(b, " + (1. - nsm_exp(p->dt * (");
            emit_ex(g, a);
            put(b, "))) * (");
            emit_cnexp_target(g, a, c);
            put(b, " - ");
            emit_var(g, s->name, NULL);
            put(b, ");\n");
        }
        return 0;
    }
    }
    return 0;
}

/* ---- VERBATIM C (nmodl_verbatim.c) ---- */

/* the #define of NEURON's name nm (a C name in the block) in this instance
 * layout: "#define nm meaning\n", or nothing where the name is C's own */
static void define_name(gen *g, const char *nm, const nm_cident *id, size_t uid) {
    buf *b = g->b;
    const struct ns_nmodl *m = g->m;
    const int proto = !strcmp(nm, "_threadargsproto_") || !strcmp(nm, "_threadargsprotocomma_");
    if (proto || !strcmp(nm, "_threadargs_") || !strcmp(nm, "_threadargscomma_")) {
        /* a call of another block of the file (or of C that takes the same arguments) */
        put(b, "#define %s ", nm);
        if (proto) put_sig(g);
        else {
            put(b, "p, ");
            put_fargs(g);
            put(b, "i_, node_, v_");
        }
        put(b, "%s\n", strstr(nm, "comma") ? "," : "");
        return;
    }
    if (!strcmp(nm, "cvode_active_") && !g->top) { /* fixed steps: 0, a constant on the device too */
        put(b, "#define cvode_active_ 0\n");
        return;
    }
    if (!strcmp(nm, "_nt") || !strcmp(nm, "nrn_threads")) { /* `_nt != nrn_threads`: no other thread's data here */
        put(b, "#define %s (p)\n", nm);
        return;
    }
    if (id->call && m->random_field >= 0 && nm_random_arity(nm) >= 0) { /* the instance's stream 0, as in NMODL */
        put(b, "#define %s(...) nsm_rng_%s(", nm, nm);
        for (int k = 0; k < 4; k++) put(b, "F%d_, ", m->random_field + k);
        put(b, "%uu%s)\n", nm_random_mech_key(m->name), nm_random_arity(nm) ? ", __VA_ARGS__" : "");
        return;
    }
    if (id->call && !g->top && !strcmp(nm, "nrn_ghk")) { /* NEURON's, at the simulation's celsius */
        put(b, "#define nrn_ghk(...) nsv_ghk(p->celsius, __VA_ARGS__)\n");
        return;
    }
    const block *k = find_block(m, nm);
    if (k) {
        if ((k->kind == B_FUNCTION || k->kind == B_PROCEDURE) && !k->hoc_only)
            put(b, "#define %s nsm_%s_%c_%s\n", nm, m->name, k->kind == B_FUNCTION ? 'f' : 'p', nm);
        return;
    }
    if (!strncmp(nm, "_l", 2) && nm[2]) { /* an argument or LOCAL of the block; the FUNCTION's value */
        if (scope_find(g, nm + 2) >= 0 ||
            (g->owner && g->owner->kind == B_FUNCTION && !strcmp(g->owner->name, nm + 2))) {
            put(b, "#define %s ", nm);
            emit_var(g, nm + 2, NULL);
            put(b, "\n");
        }
        return;
    }
    if (!strncmp(nm, "_p_", 3)) { /* a POINTER's address; BBCOREPOINTER: a void * kept in its field */
        const var *v = find_var(m, nm + 3);
        if (v && v->cls == V_POINTER) put(b, "#define %s (P%d_)\n", nm, v->pointer);
        else if (v && v->field >= 0 && !v->size) put(b, "#define %s (*(void **)(F%d_))\n", nm, v->field);
        return;
    }
    if (!strncmp(nm, "_ion_", 5)) { /* the ion's value at the node (not the mechanism's copy) */
        const var *v = find_var(m, nm + 5);
        if (v && v->ion >= 0)
            put(b, "#define %s (p->ion[%d].%s[NSM_ION(%d)])\n", nm, v->ion, ion_array(v), v->ion);
        return;
    }
    const var *v = find_var(m, nm);
    if (v && !strncmp(nm, "__ran", 5)) return;
    if (v || !strcmp(nm, "v") || !strcmp(nm, "t") || !strcmp(nm, "dt") || !strcmp(nm, "celsius")) {
        put(b, "#define %s ", nm);
        if (v && v->size && v->global >= 0) {
            put(b, "(p->global + %d)\n", v->global); /* a GLOBAL array: its first element's address, as NEURON's */
            return;
        }
        if (v && v->size) { /* an instance's array: a copy (in, and out after the C: emit_verbatim) */
            put(b, "nsvA%d_%zu\ndouble nsvA%d_%zu[%d];\nfor (int k_ = 0; k_ < %d; ++k_) nsvA%d_%zu[k_] = *X%d_[k_];\n",
                v->field, uid, v->field, uid, v->size, v->size, v->field, uid, v->field);
            return;
        }
        /* the mechanism's variable, whatever the NMODL scope (C's x is NEURON's x, _lx the LOCAL) */
        const int n_scope = g->n_scope;
        const block *owner = g->owner;
        g->n_scope = 0;
        g->owner = NULL;
        emit_var(g, nm, NULL);
        g->n_scope = n_scope;
        g->owner = owner;
        put(b, "\n");
    }
}

/* b's text from `from` on with the name `name` (a whole C name) replaced by `by` */
static void rename_tail(buf *b, size_t from, const char *name, const char *by) {
    if (b->oom || from >= b->n) return;
    const size_t n = b->n - from, ln = strlen(name);
    char *tail = malloc(n + 1);
    if (!tail) { b->oom = 1; return; }
    memcpy(tail, b->s + from, n + 1);
    b->n = from;
    for (size_t i = 0; i < n;) {
        const int start = i == 0 || !(isalnum((unsigned char)tail[i - 1]) || tail[i - 1] == '_');
        if (start && !strncmp(tail + i, name, ln) && !(isalnum((unsigned char)tail[i + ln]) || tail[i + ln] == '_')) {
            put(b, "%s", by);
            i += ln;
        } else {
            put(b, "%c", tail[i++]);
        }
    }
    free(tail);
}

/* A VERBATIM block: its C as written (with #line, so that the compiler's
 * messages name the .mod file and line), NEURON's names #define'd around
 * it and #undef'd after it. */
static int emit_verbatim(gen *g, const st *s) {
    buf *b = g->b;
    char **done = NULL;
    int n_done = 0;
    const size_t uid = b->n; /* names the block's array copies (unique in the generated text) */
    nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
    nm_cident id;
    /* C that declares its own p (the generated functions' ppack): the names reach the ppack by another name */
    int own_p = 0;
    while (nm_cscan_next(&sc, &id)) own_p |= id.n == 1 && id.s[0] == 'p' && !id.member && nm_c_declares(s->name, &id);
    char alias[48];
    snprintf(alias, sizeof alias, "nsv_pp%zu_", uid);
    own_p &= !g->top;
    if (own_p) put(b, "ns_mech_ppack *const %s = p;\n", alias);
    const size_t from = b->n;
    sc = (nm_cscan){s->name, 0, 0, 0, 0, 1};
    while (nm_cscan_next(&sc, &id)) {
        char nm[128];
        if (id.member || id.n >= sizeof nm || nm_c_declares(s->name, &id)) continue;
        memcpy(nm, id.s, id.n);
        nm[id.n] = 0;
        int seen = 0;
        for (int k = 0; k < n_done && !seen; k++) seen = !strcmp(done[k], nm);
        if (seen) continue;
        const size_t before = b->n;
        define_name(g, nm, &id, uid);
        if (b->oom) break;
        if (b->n == before) continue;
        char **d = nm_realloc(GAR, done, (size_t)(n_done + 1) * sizeof *d);
        char *c = nm_calloc(GAR, id.n + 1, 1);
        if (!d || !c) return gfail(g, s->line, "out of memory");
        memcpy(c, nm, id.n + 1);
        done = d;
        done[n_done++] = c;
    }
    if (own_p) rename_tail(b, from, "p", alias);
    const int line_ok = !strpbrk(s->file, "\"\\\n");
    if (line_ok) put(b, "#line %d \"%s\"\n", s->file_line, s->file);
    put(b, "%s\n", s->name);
    if (line_ok && !b->oom) {
        for (; g->nl_at < b->n; g->nl_at++) g->nl += b->s[g->nl_at] == '\n';
        put(b, "#line %d \"%s.h\"\n", g->nl + 2, g->m->name);
    }
    for (int k = 0; k < n_done; k++) {
        const var *v = find_var(g->m, done[k]);
        if (v && v->size && v->field >= 0)
            put(b, "for (int k_ = 0; k_ < %d; ++k_) *X%d_[k_] = nsvA%d_%zu[k_];\n", v->size, v->field, v->field, uid);
        put(b, "#undef %s\n", done[k]);
    }
    return 0;
}

/* the LOCALs of l, then its statements from the from-th */
static int emit_list_from(gen *g, const stlist *l, int indent, int from) {
    int base = g->n_scope;
    for (int i = 0; i < l->n_locals; i++) {
        if (l->local_size && l->local_size[i])
            put(g->b, "%*sdouble L_%s[%d] = {0.0};\n", indent, "", l->locals[i], l->local_size[i]);
        else
            put(g->b, "%*sdouble L_%s = 0.0;\n", indent, "", l->locals[i]);
        if (scope_push(g, l->locals[i], 0)) return gfail(g, 0, "out of memory");
    }
    for (int i = from; i < l->n; i++)
        if (emit_st(g, l->s[i], indent)) return -1;
    g->n_scope = base;
    return 0;
}
static int emit_list(gen *g, const stlist *l, int indent) { return emit_list_from(g, l, indent, 0); }

/* A function's body: with VERBATIM C, in a C block of its own, so that the C may declare
 * names the function's parameters have (`double p;`: a parameter's scope is the
 * function's outermost block) */
static int emit_body(gen *g, const stlist *l, int indent) {
    const int own = nm_verbatim_in(l);
    if (own) put(g->b, "%*s{\n", indent, "");
    if (emit_list(g, l, indent)) return -1;
    if (own) put(g->b, "%*s}\n", indent, "");
    return 0;
}

/* the parameters of every per-instance function: the ppack, the fields'
 * pointers, the instance, its node and v */
static void put_sig(gen *g) {
    put(g->b, "ns_mech_ppack *p, ");
    put_fparams(g);
    put(g->b, "int i_, int node_, double v_");
}
/* a call of one, inside another: nsm_MECH_KIND[_BLOCK][SUFFIX](arguments */
static void put_call(gen *g, const char *kind, const char *bname, const char *suffix) {
    put(g->b, "nsm_%s_%s%s%s%s(p, ", g->m->name, kind, bname ? "_" : "", bname ? bname : "", suffix);
    put_fargs(g);
    put(g->b, "i_, node_, v_");
}

/* A PROCEDURE with VERBATIM C returns an int, as nocmodl's do (the C's `return 0;`) */
static int int_procedure(const block *bl) { return bl->kind == B_PROCEDURE && nm_verbatim_in(bl->body); }

static void emit_proto(gen *g, const block *bl, const char *suffix) {
    put(g->b, "NS_MECH_FN %s nsm_%s_%c_%s%s(", bl->kind == B_FUNCTION ? "double" : int_procedure(bl) ? "int" : "void", g->m->name,
        bl->kind == B_FUNCTION ? 'f' : 'p', bl->name, suffix);
    put_sig(g);
    for (int k = 0; k < bl->n_args; k++) put(g->b, ", double A_%s", bl->args[k]);
    put(g->b, ")");
}

/* A TABLE PROCEDURE's table as rows, for a host loop that looks up many
 * instances at once (the CPU loop's fused pass, sim/cpu/mechanisms.c):
 * row k holds the columns' values at entry k (the TABLE's names in order),
 * zeros up to a multiple of 8, then their differences to entry k + 1 (0 at
 * the last entry, where the lookup's k + 1 is k), zeros likewise; so that an
 * instance's values are two loads of whole rows and one multiply-add,
 * c + t d, the same bits as the columns' a + t (b - a), and 8 instances' a
 * transpose of 8 rows. The rows are a copy that the host makes of the
 * table (the table's own layout, which a GPU reads, stays the columns);
 * nsm_M_p_NAME_rows rebuilds it when the table's header changed (a copy of
 * the header leads the rows). nsm_M_p_NAME_set sets the tabulated
 * variables from looked-up values y_[c s_], c in the TABLE's order. */
static void emit_table_rows(gen *g, const block *bl) {
    buf *b = g->b;
    const table_decl *t = bl->table;
    const char *name = g->m->name;
    const int head = 4 + t->n_depend, n1 = t->with + 1, cols = t->n_names;
    const int half = (cols + 7) / 8 * 8, lead = (head + 7) / 8 * 8;
    put(b, "#define NSM_%s_%s_COLS %d /* the TABLE's variables */\n", name, bl->name, cols);
    put(b, "#define NSM_%s_%s_ROW %d /* doubles per row: values, then differences */\n", name, bl->name, 2 * half);
    put(b, "#define NSM_%s_%s_LEAD %d /* the header's copy before the rows */\n", name, bl->name, lead);
    put(b, "#define NSM_%s_%s_ROWS %d /* the rows' storage, from a 64-byte boundary */\n", name, bl->name,
        lead + n1 * 2 * half);
    put(b, "NS_MECH_FN int nsm_%s_p_%s_rows(const ns_mech_ppack *p, double *R_) {\n", name, bl->name);
    put(b, "    const double *T_ = p->table + %d;\n    int same_ = 1;\n", t->offset);
    put(b, "    for (int h_ = 0; h_ < %d; ++h_) same_ &= R_[h_] == T_[h_];\n", head);
    put(b, "    if (same_ || T_[0] == 0.0) return 0;\n");
    put(b, "    for (int k_ = 0; k_ < %d; ++k_) {\n        const int k1_ = k_ + (k_ < %d);\n", n1, t->with);
    put(b, "        double *r_ = R_ + %d + k_ * %d;\n", lead, 2 * half);
    put(b, "        for (int c_ = 0; c_ < %d; ++c_) {\n            r_[c_] = 0.0;\n            r_[%d + c_] = 0.0;\n"
           "        }\n", half, half);
    put(b, "        for (int c_ = 0; c_ < %d; ++c_) {\n            const double *col_ = T_ + %d + c_ * %d;\n", cols, head,
        n1);
    put(b, "            r_[c_] = col_[k_];\n            r_[%d + c_] = col_[k1_] - col_[k_];\n        }\n    }\n", half);
    put(b, "    for (int h_ = 0; h_ < %d; ++h_) R_[h_] = T_[h_];\n    return 1;\n}\n\n", head);
    put(b, "NS_MECH_FN void nsm_%s_p_%s_set(", name, bl->name);
    put_sig(g);
    put(b, ", const double *y_, int s_) {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
    for (int k = 0; k < cols; k++) put(b, "    (*F%d_) = y_[%d * s_];\n", find_var(g->m, t->names[k])->field, k);
    put(b, "}\n\n");
}

static int emit_alg(gen *g, const block *bl);
static int emit_callable(gen *g, const block *bl) {
    if (bl->alg) return emit_alg(g, bl);
    buf *b = g->b;
    if (bl->ftable) { /* FUNCTION_TABLE: a lookup in the user's values (NaN where there are none) */
        emit_proto(g, bl, "");
        put(b, " {\n    const double a_[%d] = {", bl->n_args);
        for (int k = 0; k < bl->n_args; k++) put(b, "%sA_%s", k ? ", " : "", bl->args[k]);
        put(b, "};\n    (void)i_; (void)node_; (void)v_;\n");
        for (int k = 0; k < g->m->n_fields; k++) put(b, "    (void)F%d_;\n", k);
        put(b, "    return nsm_ftable(p->ftable ? &p->ftable[%d] : (const ns_mech_ftable *)0, %d, a_);\n}\n\n",
            bl->ftable - 1, bl->n_args);
        return 0;
    }
    int tab = bl->table != NULL;
    emit_proto(g, bl, tab ? "_exact" : "");
    put(b, " {\n    (void)p; (void)p; (void)i_; (void)node_; (void)v_;\n");
    put_arrays(g, 4);
    if (bl->kind == B_FUNCTION) put(b, "    double ret_ = 0.0;\n");
    g->owner = bl;
    g->n_scope = 0;
    for (int k = 0; k < bl->n_args; k++)
        if (scope_push(g, bl->args[k], 1)) return gfail(g, bl->line, "out of memory");
    if (emit_body(g, bl->body, 4)) return -1;
    if (bl->kind == B_FUNCTION) put(b, "    return ret_;\n");
    if (int_procedure(bl)) put(b, "    return 0;\n");
    put(b, "}\n\n");
    if (tab) {
        const table_decl *t = bl->table;
        int head = 4 + t->n_depend, n1 = t->with + 1;
        const char kc = bl->kind == B_FUNCTION ? 'f' : 'p';
        /* the entry k and the weight t of an argument: nocmodl's lookup (NaN:
         * NaN; xi <= 0: the first entry; xi >= WITH: the last; else linear)
         * without branches, so that the instance loops vectorise: xs = xi
         * when strictly inside, else 0 by a product; then k and t of every
         * case, so that one interpolation a + t (b - a) gives them all with
         * loads that every path uses: inside k = j, t = xs - j; xi >= WITH:
         * k = WITH (b = a), t = 0; xi <= 0: k = 0, t = 0; NaN: t = NaN. No
         * value is selected after a load: gcc 13 sinks such loads into the
         * selected branch and then cannot vectorise them (a masked gather),
         * bench/README.md */
        put(b, "NS_MECH_FN void nsm_%s_%c_%s_at(const ns_mech_ppack *p, double x_, int *k_, double *t_) {\n",
            g->m->name, kc, bl->name);
        put(b, "    const double *T_ = p->table + %d;\n", t->offset);
        put(b, "    const double xi_ = T_[3] * (x_ - T_[2]);\n");
        put(b, "    const int in_ = (xi_ > 0.) & (xi_ < %d.), hi_ = xi_ >= %d., nan_ = xi_ != xi_;\n", t->with, t->with);
        put(b, "    const double xc_ = xi_ == xi_ ? xi_ : 0.0, xd_ = xc_ < %d. ? xc_ : %d.;\n", t->with + 1, t->with + 1);
        put(b, "    const double xs_ = (xd_ > -1. ? xd_ : -1.) * (double)in_;\n");
        put(b, "    const int j_ = (int)xs_;\n    *k_ = j_ * in_ + %d * hi_;\n", t->with);
        put(b, "    *t_ = (xs_ - (double)j_) + (nan_ ? xi_ : 0.0);\n}\n\n");
        emit_proto(g, bl, "");
        put(b, " {\n");
        put(b, "    const double *T_ = p->table + %d;\n", t->offset);
        /* the exact procedure when usetable_NAME is 0, else the lookup (the
         * loops hoist the usetable test, emit_loop). The loops run
         * table_update first, so the table is current whenever
         * usetable_NAME is not 0. */
        put(b, "    if (p->global[%d] == 0.0) %s", t->usetable, bl->kind == B_FUNCTION ? "return " : "{\n        ");
        put_call(g, bl->kind == B_FUNCTION ? "f" : "p", bl->name, "_exact");
        put(b, ", A_%s);\n", bl->args[0]);
        if (bl->kind == B_PROCEDURE) put(b, "        return%s;\n    }\n", int_procedure(bl) ? " 0" : "");
        put(b, "    int k_;\n    double t_;\n    nsm_%s_%c_%s_at(p, A_%s, &k_, &t_);\n", g->m->name, kc, bl->name,
            bl->args[0]);
        put(b, "    const int k1_ = k_ + (k_ < %d);\n", t->with);
        int cols = bl->kind == B_FUNCTION ? 1 : t->n_names;
        for (int k = 0; k < cols; k++) {
            int c0 = head + k * n1;

            /* the column as a pointer of its own, indexed by k_ and k1_:
             * the columns then share their index vectors, where gcc
             * emulating the gathers of T_[c0 + k_] extracted each column's
             * own (docs/mechanisms.md, "Speed") */
            put(b, "    {\n        const double *c_ = T_ + %d;\n        const double a_ = c_[k_], b_ = c_[k1_];\n", c0);
            if (bl->kind == B_PROCEDURE) put(b, "        (*F%d_) = ", find_var(g->m, t->names[k])->field);
            else put(b, "        return ");
            put(b, "a_ + t_ * (b_ - a_);\n    }\n");
        }
        if (int_procedure(bl)) put(b, "    return 0;\n");
        put(b, "}\n\n");
        if (bl->kind == B_PROCEDURE) emit_table_rows(g, bl);
    }
    g->owner = NULL;
    return 0;
}

/* Whether a cnexp DERIVATIVE block runs in stages: its equations after its
 * other statements, none inside an if, each x' = a x + b with a not 0, and
 * none reading a state that an earlier one updates (cnexp updates the
 * states in order). Then nsm_NAME_d_BLOCK is three stages, the same
 * arithmetic as the equations written in place: _pre (the statements, then
 * each equation's exponent dt a and target -b/a), the exponentials, _post
 * (x += (1 - exp(dt a)) (target - x)); a loop over many instances can run
 * each stage over a chunk of them (the CPU loop's fused pass, sim/cpu/mechanisms.c),
 * which keeps few values live at once as the hand-written gates do. */
static int cnexp_staged(const stlist *l) {
    int seen = 0;
    if (nm_verbatim_in(l)) return 0; /* C runs per instance, in order */
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_DERIV) {
            int nonlinear = 0;
            ex *a = diff(s->e, s->name, &nonlinear);
            if (!a || nonlinear || depends(a, s->name) || is_num(a, 0)) return 0;
            for (int j = 0; j < i; j++)
                if (l->s[j]->kind == ST_DERIV && depends(s->e, l->s[j]->name)) return 0;
            seen = 1;
        } else if (seen) {
            return 0;
        } else if (s->kind == ST_IF) {
            char **order = NULL;
            int n = 0;
            const int bad = collect_states(s->then_, &order, &n) || (s->else_ && collect_states(s->else_, &order, &n));
            free(order);
            if (bad || n > 0) return 0;
        }
    }
    return seen;
}

/* The TABLE PROCEDURE that a staged block calls first, at v (rates(v)),
 * or NULL: a loop that looks the table up itself (its rows,
 * emit_table_rows) then runs the rest of the first stage,
 * nsm_M_d_BLOCK_pre_set. */
static const block *tabled_first(const struct ns_nmodl *m, const stlist *l) {
    if (l->n == 0 || l->s[0]->kind != ST_CALL || l->s[0]->e->op == NM_NETCONS_OP) return NULL;
    const ex *call = l->s[0]->e;
    const block *bl = find_block(m, call->text);
    if (!bl || bl->kind != B_PROCEDURE || !bl->table || call->n_args != 1 || call->args[0]->kind != EX_VAR ||
        strcmp(call->args[0]->text, "v"))
        return NULL;
    return bl;
}

/* A number or its negation: its value in *x */
static int constant(const ex *e, double *x) {
    if (e->kind == EX_NUM) return *x = e->num, 1;
    if (e->kind == EX_NEG && e->a->kind == EX_NUM) return *x = -e->a->num, 1;
    return 0;
}

/* Whether the n >= 2 equations of a staged block all have x' = a x + b
 * with a = C / X, one constant C (x' = (inf - x) / tau: C = -1): then their
 * exponents dt C / X_k come from one division, d = dt C / (X_0 X_1 ...),
 * times the other X's (emit_one_division); *num: C as written. */
static int one_division(const stlist *l, const ex **num) {
    int n = 0;
    double c0 = 0.0;
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind != ST_DERIV) continue;
        int nonlinear = 0;
        ex *a = diff(s->e, s->name, &nonlinear);
        double c;
        if (!a || a->kind != EX_BIN || a->op != '/' || !constant(a->a, &c) || c == 0.0) return 0;
        if (n == 0) {
            c0 = c;
            *num = a->a;
        } else if (c != c0) return 0;
        n++;
    }
    return n >= 2;
}

/* d = dt C / (Y_0 Y_1 ...) and the exponents *a<k>_ = d times the other
 * Y's, Y_k named `y`<k>_ (a product's terms left to right, as the
 * hand-written hh's gates: ((Y_0 Y_1) Y_2)); y 'u': the clamped X's, d
 * named du_, and a NaN X's own exponent NaN */
static void put_products(gen *g, const ex *num, int n, char y, int indent) {
    buf *b = g->b;
    const char *d = y == 'u' ? "du_" : "d_";
    put(b, "%*sconst double %s = (p->dt * ", indent, "", d);
    emit_ex(g, num);
    put(b, ") / (");
    for (int k = 0; k < n; k++) put(b, "%s", k < n - 2 ? "(" : "");
    for (int k = 0; k < n; k++) put(b, "%s%c%d_%s", k ? " * " : "", y, k, k > 0 && k < n - 1 ? ")" : "");
    put(b, ");\n");
    for (int k = 0; k < n; k++) {
        put(b, "%*s*a%d_ = %s", indent, "", k, y == 'u' ? "(" : "");
        if (y == 'u') put(b, "x%d_ == x%d_ ? %s : x%d_) * (", k, k, d, k);
        else put(b, "%s * (", d);
        int first = 1, open = 0;
        for (int j = 0; j < n; j++) open += j != k;
        for (int j = 0; j < open - 2; j++) put(b, "(");
        for (int j = 0, m = 0; j < n; j++) {
            if (j == k) continue;
            put(b, "%s%c%d_%s", first ? "" : " * ", y, j, m > 0 && m < open - 1 ? ")" : "");
            first = 0;
            m++;
        }
        put(b, ");\n");
    }
}

/* The exponents dt C / X_k of n equations from one division (x<k>_ their X,
 * *a<k>_ out): d = dt C / (X_0 X_1 ...) times the product of the other X's,
 * within a few ulps of the n divisions while every |X| lies in [1e-B, 1e B],
 * B = 300 / n, where every product is a normal double (a rate's time
 * constant in ms: hh's are 1e-4 to 1e3). Where one does not (X = 0, where
 * the products give NaN, 0 times inf; a product's overflow; NaN), the same
 * with each |X| clamped to that range (its sign kept; NaN as 1e-B, its own
 * exponent NaN): an exponent whose exp is that of the division's (0 or inf
 * where |X| < 1e-B, X = 0 included; 1 where |X| > 1e B) for any time step
 * and C with |dt C| between 1e3 / 1e B and 1e-17 1e B (n = 3: 1e-97 and
 * 1e83). `check`: the clamped form is the caller's (the range as the return
 * value, 1 in range: a loop over many instances then computes the rare
 * lanes out of range again by _pre, outside its vector loop); else it
 * follows under a test. One division for n, the hand-written hh's gates'
 * form (docs/mechanisms.md, "Speed"). */
static void emit_one_division(gen *g, const ex *num, int n, int check) {
    buf *b = g->b;
    const int e = 300 / n;
    put_products(g, num, n, 'x', 4);
    put(b, "    const int in_ = ");
    for (int k = 0; k < n; k++)
        put(b, "%s(fabs(x%d_) >= 1e-%d) & (fabs(x%d_) <= 1e%d)", k ? " & " : "", k, e, k, e);
    put(b, ";\n");
    if (check) {
        put(b, "    return in_;\n");
        return;
    }
    put(b, "    if (!in_) {\n");
    for (int k = 0; k < n; k++)
        put(b, "        const double z%d_ = fabs(x%d_) > 1e-%d ? fabs(x%d_) : 1e-%d;\n"
               "        const double u%d_ = copysign(z%d_ < 1e%d ? z%d_ : 1e%d, x%d_);\n", k, k, e, k, e, k, k, e, k, e, k);
    put_products(g, num, n, 'u', 8);
    put(b, "    }\n");
}

/* Solve J_ r_ = r_ in place (N_ x N_, double J_[N_][N_]): Gaussian
 * elimination with partial pivoting, per instance (the systems are small). */
static void put_gauss(buf *b) {
    put(b, "        for (int c = 0; c < N_; ++c) { /* Gaussian elimination, partial pivoting */\n"
           "            int pv = c;\n"
           "            for (int r = c + 1; r < N_; ++r) if (fabs(J_[r][c]) > fabs(J_[pv][c])) pv = r;\n"
           "            if (pv != c) { for (int k = 0; k < N_; ++k) { double t_ = J_[c][k]; J_[c][k] = J_[pv][k]; J_[pv][k] = t_; } double t_ = r_[c]; r_[c] = r_[pv]; r_[pv] = t_; }\n"
           "            for (int r = c + 1; r < N_; ++r) { const double f_ = J_[r][c] / J_[c][c]; for (int k = c; k < N_; ++k) J_[r][k] -= f_ * J_[c][k]; r_[r] -= f_ * r_[c]; }\n"
           "        }\n"
           "        for (int c = N_ - 1; c >= 0; --c) {\n"
           "            double s_ = r_[c];\n"
           "            for (int k = c + 1; k < N_; ++k) s_ -= J_[c][k] * r_[k];\n"
           "            r_[c] = s_ / J_[c][c];\n"
           "        }\n");
}

/* A KINETIC block (lowered by nmodl_kinetic.c): nsm_NAME_kf_BLOCK writes the
 * rows' fluxes f_, the matrix J_ (-d flux/d state, nocmodl's terms; a
 * CONSERVE row its equation) and the COMPARTMENT sizes c_ at the current
 * states; nsm_NAME_ks_BLOCK is NEURON's sparse(): Newton on the implicit
 * Euler step c (x - x0)/dt = f(x), one iteration where one_ (nocmodl's
 * _linmat), else until the sum of |dx| is at most 1e-6 with negative states
 * set to 0 (at most 22 iterations), then the body once more at the result
 * where it writes more than its LOCALs; nsm_NAME_d_BLOCK a step of dt and
 * nsm_NAME_ss_BLOCK NEURON's _ss_sparse (the same with dt = 1e9). */
static int emit_kinetic(gen *g, const block *bl) {
    buf *b = g->b;
    const char *name = g->m->name;
    const kinetic *k = bl->kin;
    const int n = k->n;
    g->owner = bl;
    g->n_scope = 0;
    g->mode = M_SPARSE;
    put(b, "NS_MECH_FN void nsm_%s_kf_%s(", name, bl->name);
    put_sig(g);
    put(b, ", double *f_, double *J_, double *c_) {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
    put_arrays(g, 4);
    if (emit_list(g, bl->body, 4)) return -1;
    for (int r = 0; r < n; r++) {
        put(b, "    f_[%d] = L_kinF_%d;\n    c_[%d] = ", r, r, r);
        if (k->cap[r]) emit_ex(g, k->cap[r]);
        else put(b, "1.0");
        put(b, ";\n");
        for (int c = 0; c < n; c++) {
            if (k->jac[r * n + c]) put(b, "    J_[%d] = L_kinJ_%d_%d;\n", r * n + c, r, c);
            else put(b, "    J_[%d] = 0.0;\n", r * n + c);
        }
    }
    /* the solver is called, not inlined into the flattened loops (a 13-state
     * scheme inlined into every clone and path took gcc 11 s; its Newton
     * loop does not vectorise over instances anyway) */
    put(b, "}\n\n#ifndef NSM_NOINLINE\n#if defined(__CUDACC__)\n#define NSM_NOINLINE __noinline__\n"
           "#elif defined(__GNUC__) || defined(__clang__)\n#define NSM_NOINLINE __attribute__((noinline))\n"
           "#else\n#define NSM_NOINLINE\n#endif\n#endif\n");
    put(b, "NS_MECH_FN NSM_NOINLINE void nsm_%s_ks_%s(", name, bl->name);
    put_sig(g);
    put(b, ", double dt_, int one_) {\n");
    put(b, "    enum { N_ = %d };\n    double x0_[N_], r_[N_], c_[N_], J_[N_][N_];\n    double *x_[N_] = {", n);
    for (int r = 0; r < n; r++) put(b, "%sF%d_", r ? ", " : "", find_var(g->m, k->states[r])->field + k->elem[r]);
    put(b, "};\n    for (int r = 0; r < N_; ++r) x0_[r] = *x_[r];\n");
    put(b, "    for (int it_ = 0; it_ < 22; ++it_) {\n        ");
    put_call(g, "kf", bl->name, "");
    put(b, ", r_, &J_[0][0], c_);\n");
    for (int r = 0; r < n; r++)
        if (!k->conserve[r])
            put(b, "        r_[%d] += -(1.0 / dt_) * (*x_[%d] - x0_[%d]) * c_[%d];\n"
                   "        J_[%d][%d] += (1.0 / dt_) * c_[%d];\n", r, r, r, r, r, r, r);
    put_gauss(b);
    put(b, "        double err_ = 0.0;\n"
           "        for (int r = 0; r < N_; ++r) {\n"
           "            *x_[r] += r_[r];\n"
           "            if (!one_ && *x_[r] < 0.0) *x_[r] = 0.0;\n"
           "            err_ += fabs(r_[r]);\n"
           "        }\n"
           "        if (one_ || !(err_ > 1e-6)) break;\n    }\n");
    if (k->side_effects) { /* NEURON's sparse() ends with the block at the new states */
        put(b, "    ");
        put_call(g, "kf", bl->name, "");
        put(b, ", r_, &J_[0][0], c_);\n");
    }
    put(b, "}\n\n");
    put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
    put_sig(g);
    put(b, ") {\n    ");
    put_call(g, "ks", bl->name, "");
    put(b, ", p->dt, %d);\n}\n\n", k->linear);
    put(b, "NS_MECH_FN void nsm_%s_ss_%s(", name, bl->name);
    put_sig(g);
    put(b, ") {\n");
    if (k->linear) {
        put(b, "    ");
        put_call(g, "ks", bl->name, "");
        put(b, ", 1e9, 0);\n");
    } else {
        put(b, "    for (int i = 0; i < 7; ++i) {\n        ");
        put_call(g, "ks", bl->name, "");
        put(b, ", 1e9, 1);\n        int ok_ = 1;\n");
        for (int r = 0; r < n; r++) {
            const int f = find_var(g->m, k->states[r])->field + k->elem[r];
            put(b, "        if (*F%d_ < -1e-6) { *F%d_ = 0.0; ok_ = 0; }\n", f, f);
        }
        put(b, "        if (ok_) {\n            ");
        put_call(g, "ks", bl->name, "");
        put(b, ", 1e9, 0);\n            break;\n        }\n    }\n");
    }
    put(b, "}\n\n");
    g->owner = NULL;
    return 0;
}

/* LINEAR: the rows (emit_equation), then Gaussian elimination with partial pivoting (NEURON's
 * simeq), the unknowns set to the solution. NONLINEAR: nsm_NAME_nl_BLOCK writes the residuals,
 * and the procedure is scopmath's newton as NEURON runs it: the Jacobian by central differences
 * (steps max(|0.02 x|, 1e-6)) rebuilt while the largest relative change exceeds 0.05, stop when
 * that change is at most 1e-6 and every |residual| at most 1e-8, at most 50 iterations (where
 * NEURON stops the run with an error, the last iterate stays). */
static int emit_alg(gen *g, const block *bl) {
    buf *b = g->b;
    const char *name = g->m->name;
    const int n = bl->n_unknowns;
    g->owner = bl;
    g->n_scope = 0;
    g->alg = bl;
    g->eq_row = 0;
    if (bl->alg == 'N') {
        put(b, "NS_MECH_FN void nsm_%s_nl_%s(", name, bl->name);
        put_sig(g);
        put(b, ", double *f_) {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
        put_arrays(g, 4);
        const int r = emit_list(g, bl->body, 4);
        g->alg = NULL;
        if (r) return -1;
        put(b, "}\n\n");
    }
    emit_proto(g, bl, "");
    put(b, " {\n    (void)p; (void)i_; (void)node_; (void)v_;\n    enum { N_ = %d };\n", n);
    put(b, "    double *const x_[N_] = {");
    for (int k = 0; k < n; k++) put(b, "%sF%d_", k ? ", " : "", find_var(g->m, bl->unknowns[k])->field);
    put(b, "};\n");
    if (bl->alg == 'L') {
        put(b, "    double J_[N_][N_] = {{0.0}}, r_[N_] = {0.0};\n");
        put_arrays(g, 4);
        const int r = emit_list(g, bl->body, 4);
        g->alg = NULL;
        if (r) return -1;
        put(b, "    {\n");
        put_gauss(b);
        put(b, "    }\n    for (int k = 0; k < N_; ++k) *x_[k] = r_[k];\n}\n\n");
    } else {
        put(b, "    double value_[N_], hi_[N_], lo_[N_], J_[N_][N_], dx_[N_], change_ = 1.0;\n    int perm_[N_];\n");
        put(b, "    for (int count_ = 1; count_ <= 50; ++count_) {\n        if (change_ > 0.05) {\n"
               "            for (int j = 0; j < N_; ++j) {\n"
               "                const double inc_ = fmax(fabs(0.02 * *x_[j]), 1e-6);\n"
               "                *x_[j] += inc_;\n                ");
        put_call(g, "nl", bl->name, "");
        put(b, ", hi_);\n                *x_[j] -= 2.0 * inc_;\n                ");
        put_call(g, "nl", bl->name, "");
        put(b, ", lo_);\n"
               "                for (int i = 0; i < N_; ++i) J_[i][j] = (hi_[i] - lo_[i]) / (2.0 * inc_);\n"
               "                *x_[j] += inc_;\n                ");
        put_call(g, "nl", bl->name, "");
        put(b, ", value_);\n            }\n"
               "            for (int i = 0; i < N_; ++i) value_[i] = -value_[i];\n"
               "            for (int i = 0; i < N_; ++i) perm_[i] = i;\n"
               "            for (int c = 0; c < N_; ++c) { /* LU, partial pivoting */\n"
               "                int pv = c;\n"
               "                for (int r = c + 1; r < N_; ++r) if (fabs(J_[r][c]) > fabs(J_[pv][c])) pv = r;\n"
               "                if (pv != c) {\n"
               "                    for (int k = 0; k < N_; ++k) { const double t_ = J_[c][k]; J_[c][k] = J_[pv][k]; J_[pv][k] = t_; }\n"
               "                    const int t_ = perm_[c]; perm_[c] = perm_[pv]; perm_[pv] = t_;\n"
               "                }\n"
               "                for (int r = c + 1; r < N_; ++r) {\n"
               "                    J_[r][c] /= J_[c][c];\n"
               "                    for (int k = c + 1; k < N_; ++k) J_[r][k] -= J_[r][c] * J_[c][k];\n"
               "                }\n"
               "            }\n        }\n"
               "        for (int i = 0; i < N_; ++i) {\n"
               "            double y_ = value_[perm_[i]];\n"
               "            for (int k = 0; k < i; ++k) y_ -= J_[i][k] * dx_[k];\n"
               "            dx_[i] = y_;\n        }\n"
               "        for (int i = N_ - 1; i >= 0; --i) {\n"
               "            double y_ = dx_[i];\n"
               "            for (int k = i + 1; k < N_; ++k) y_ -= J_[i][k] * dx_[k];\n"
               "            dx_[i] = y_ / J_[i][i];\n        }\n"
               "        change_ = 0.0;\n"
               "        for (int i = 0; i < N_; ++i) {\n"
               "            if (fabs(*x_[i]) > 1e-8 && fabs(dx_[i] / *x_[i]) > change_) change_ = fabs(dx_[i] / *x_[i]);\n"
               "            *x_[i] += dx_[i];\n        }\n        ");
        put_call(g, "nl", bl->name, "");
        put(b, ", value_);\n        double dev_ = 0.0;\n"
               "        for (int i = 0; i < N_; ++i) {\n            value_[i] = -value_[i];\n"
               "            if (fabs(value_[i]) > dev_) dev_ = fabs(value_[i]);\n        }\n"
               "        if (change_ <= 1e-6 && dev_ <= 1e-8) break;\n    }\n}\n\n");
    }
    g->owner = NULL;
    return 0;
}

static int emit_derivative(gen *g, const block *bl, int method) {
    buf *b = g->b;
    const char *name = g->m->name;
    char **order = NULL;
    int n = 0;
    if (collect_states(bl->body, &order, &n)) return gfail(g, bl->line, "out of memory");
    g->states = order;
    g->n_states = n;
    g->owner = bl;
    g->n_scope = 0;
    if (method == M_DERIVIMPLICIT) {
        put(b, "NS_MECH_FN void nsm_%s_dd_%s(", name, bl->name);
        put_sig(g);
        put(b, ", double *f_) {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
        put_arrays(g, 4);
        g->mode = M_DERIVIMPLICIT;
        if (emit_body(g, bl->body, 4)) { free(order); return -1; }
        put(b, "}\n\n");
        /* backward Euler by Newton's method with a finite-difference Jacobian,
         * as NEURON's derivimplicit (one step is exact for linear equations) */
        put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
        put_sig(g);
        put(b, ") {\n");
        put(b, "    enum { N_ = %d };\n    double x0_[N_], f0_[N_], f1_[N_], J_[N_][N_], r_[N_];\n", n);
        for (int k = 0; k < n; k++) put(b, "    x0_[%d] = *F%d_;\n", k, find_var(g->m, order[k])->field);
        put(b, "    double *x_[N_] = {");
        for (int k = 0; k < n; k++) put(b, "%sF%d_", k ? ", " : "", find_var(g->m, order[k])->field);
        put(b, "};\n");
        put(b, "    for (int it_ = 0; it_ < 20; ++it_) {\n        ");
        put_call(g, "dd", bl->name, "");
        put(b, ", f0_);\n"
               "        for (int r = 0; r < N_; ++r) r_[r] = -(*x_[r] - x0_[r] - p->dt * f0_[r]);\n"
               "        for (int c = 0; c < N_; ++c) {\n"
               "            const double xs_ = *x_[c];\n"
               "            const double h_ = 1e-7 * (fabs(xs_) > 1e-6 ? fabs(xs_) : 1e-6);\n"
               "            *x_[c] = xs_ + h_;\n            ");
        put_call(g, "dd", bl->name, "");
        put(b, ", f1_);\n"
               "            *x_[c] = xs_;\n"
               "            for (int r = 0; r < N_; ++r) J_[r][c] = (r == c ? 1.0 : 0.0) - p->dt * (f1_[r] - f0_[r]) / h_;\n"
               "        }\n");
        put_gauss(b);
        put(b, "        double err_ = 0.0;\n"
               "        for (int c = N_ - 1; c >= 0; --c) {\n"
               "            *x_[c] += r_[c];\n"
               "            const double e_ = fabs(r_[c]) / (fabs(*x_[c]) > 1e-9 ? fabs(*x_[c]) : 1e-9);\n"
               "            if (e_ > err_) err_ = e_;\n"
               "        }\n"
               "        if (!(err_ > 1e-12)) break;\n"
               "    }\n}\n\n");
    } else if (method == M_CNEXP && cnexp_staged(bl->body)) {
        put(b, "NS_MECH_FN void nsm_%s_d_%s_pre(", name, bl->name);
        put_sig(g);
        for (int k = 0; k < n; k++) put(b, ", double *a%d_, double *t%d_", k, k);
        put(b, ") {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
        put_arrays(g, 4);
        g->mode = method;
        const ex *num = NULL;
        const int one = one_division(bl->body, &num);
        g->staged = one ? 2 : 1;
        const int r = emit_list(g, bl->body, 4);
        g->staged = 0;
        if (r) { free(order); return -1; }
        if (one) emit_one_division(g, num, n, 0);
        put(b, "}\n\nNS_MECH_FN void nsm_%s_d_%s_post(ns_mech_ppack *p, ", name, bl->name);
        put_fparams(g);
        put(b, "int i_");
        for (int k = 0; k < n; k++) put(b, ", double e%d_, double t%d_", k, k);
        put(b, ") {\n    (void)p; (void)i_;\n");
        for (int k = 0; k < n; k++) {
            const int f = find_var(g->m, order[k])->field;
            put(b, "    (*F%d_) = (*F%d_) + (1. - e%d_) * (t%d_ - (*F%d_));\n", f, f, k, k, f);
        }
        put(b, "}\n\nNS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
        put_sig(g);
        put(b, ") {\n    double ");
        for (int k = 0; k < n; k++) put(b, "%sa%d_, t%d_", k ? ", " : "", k, k);
        put(b, ";\n    nsm_%s_d_%s_pre(p, ", name, bl->name);
        put_fargs(g);
        put(b, "i_, node_, v_");
        for (int k = 0; k < n; k++) put(b, ", &a%d_, &t%d_", k, k);
        put(b, ");\n    nsm_%s_d_%s_post(p, ", name, bl->name);
        put_fargs(g);
        put(b, "i_");
        for (int k = 0; k < n; k++) put(b, ", nsm_exp(a%d_), t%d_", k, k);
        put(b, ");\n}\n\n");
        /* the first stage with the TABLE procedure's values set from y_ in
         * the place of its call (tabled_first); 0 where its exponents are
         * out of one division's range: the caller then runs _pre there */
        const block *tb = tabled_first(g->m, bl->body);
        if (tb) {
            put(b, "NS_MECH_FN int nsm_%s_d_%s_pre_set(", name, bl->name);
            put_sig(g);
            put(b, ", const double *y_, int s_");
            for (int k = 0; k < n; k++) put(b, ", double *a%d_, double *t%d_", k, k);
            put(b, ") {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
            put_arrays(g, 4);
            put(b, "    nsm_%s_p_%s_set(p, ", name, tb->name);
            put_fargs(g);
            put(b, "i_, node_, v_, y_, s_);\n");
            g->staged = one ? 2 : 1;
            const int r2 = emit_list_from(g, bl->body, 4, 1);
            g->staged = 0;
            if (r2) { free(order); return -1; }
            if (one) emit_one_division(g, num, n, 1);
            else put(b, "    return 1;\n");
            put(b, "}\n\n");
        }
    } else if (method == M_RUNGE) {
        /* the derivatives f_ at the states as they are, at t + tofs_ */
        put(b, "NS_MECH_FN void nsm_%s_dr_%s(", name, bl->name);
        put_sig(g);
        put(b, ", double *f_, double tofs_) {\n    (void)p; (void)i_; (void)node_; (void)v_; (void)tofs_;\n");
        put_arrays(g, 4);
        g->mode = M_DERIVIMPLICIT; /* f_[k] = the k-th state's derivative */
        g->t_ofs = 1;
        const int r = emit_list(g, bl->body, 4);
        g->t_ofs = 0;
        if (r) { free(order); return -1; }
        put(b, "}\n\n");
        /* scopmath's runge (NEURON's METHOD runge): fourth-order Runge-Kutta, the states updated in
         * place between the stages, at t, t + dt/2, t + dt/2 and t + dt; then the block once more at
         * the new states (nocmodl's call after the SOLVE) */
        put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
        put_sig(g);
        put(b, ") {\n    enum { N_ = %d };\n    double y0_[N_], acc_[N_], f_[N_];\n    const double h_ = p->dt;\n", n);
        put(b, "    double *x_[N_] = {");
        for (int k = 0; k < n; k++) put(b, "%sF%d_", k ? ", " : "", find_var(g->m, order[k])->field);
        put(b, "};\n");
        static const char *const stage[4] = {
            "    for (int k = 0; k < N_; ++k) {\n        y0_[k] = *x_[k];\n        const double d_ = (h_ / 2.0) * f_[k];\n"
            "        *x_[k] += d_;\n        acc_[k] = y0_[k] + d_ / 3.0;\n    }\n",
            "    for (int k = 0; k < N_; ++k) {\n        const double d_ = h_ * f_[k];\n        *x_[k] = y0_[k] + d_ / 2.0;\n"
            "        acc_[k] += d_ / 3.0;\n    }\n",
            "    for (int k = 0; k < N_; ++k) {\n        const double d_ = h_ * f_[k];\n        *x_[k] = y0_[k] + d_;\n"
            "        acc_[k] += d_ / 3.0;\n    }\n",
            "    for (int k = 0; k < N_; ++k) *x_[k] = acc_[k] + (h_ / 6.0) * f_[k];\n"};
        static const char *const at[5] = {"0.0", "h_ / 2.0", "h_ / 2.0", "h_", "0.0"};
        for (int q = 0; q < 5; q++) {
            put(b, "    ");
            put_call(g, "dr", bl->name, "");
            put(b, ", f_, %s);\n", at[q]);
            if (q < 4) put(b, "%s", stage[q]);
        }
        put(b, "}\n\n");
    } else {
        put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
        put_sig(g);
        put(b, ") {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
        put_arrays(g, 4);
        g->mode = method;
        if (method == M_EULER) put(b, "    double D_[%d];\n", n);
        if (emit_body(g, bl->body, 4)) { free(order); return -1; }
        if (method == M_EULER)
            for (int k = 0; k < n; k++) {
                int f = find_var(g->m, order[k])->field;
                put(b, "    *F%d_ = *F%d_ + p->dt * D_[%d];\n", f, f, k);
            }
        if (method == M_EULER && bl->rerun) { /* a KINETIC block: once more at the new states (nocmodl) */
            put(b, "    {\n");
            if (emit_list(g, bl->body, 8)) { free(order); return -1; }
            put(b, "    }\n");
        }
        put(b, "}\n\n");
    }
    free(order);
    g->states = NULL;
    g->n_states = 0;
    g->owner = NULL;
    return 0;
}

static void load_conc(gen *g, int store) {
    const struct ns_nmodl *m = g->m;
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        if (v->ion < 0 || v->field < 0 || v->copy_in || (v->ion_what != 'c' && v->ion_what != 'o')) continue;
        const char *arr = v->ion_what == 'c' ? "ci" : "co";
        if (store) put(g->b, "    p->ion[%d].%s[NSM_ION(%d)] = *F%d_;\n", v->ion, arr, v->ion, v->field);
        else put(g->b, "    *F%d_ = p->ion[%d].%s[NSM_ION(%d)];\n", v->field, v->ion, arr, v->ion);
    }
}

/* WRITE eX (a written reversal potential, NEURON's ion style "e written":
 * no Nernst): the field to the ion after INITIAL, after the currents' last
 * evaluation, and after a current-less BREAKPOINT (nocmodl's `_ion_ena = ena`) */
static void store_e(gen *g) {
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (v->ion >= 0 && v->ion_what == 'e' && v->field >= 0 && !v->copy_in)
            put(g->b, "    p->ion[%d].e[NSM_ION(%d)] = *F%d_;\n", v->ion, v->ion, v->field);
    }
}

static int emit_header(gen *g) {
    const struct ns_nmodl *m = g->m;
    buf *b = g->b;
    const char *name = m->name;
    put(b, "/* Generated by neurosolve's NMODL translator from %s: do not edit.\n"
           " * Per-instance functions of mechanism %s (host and device). */\n", m->file, name);
    /* VERBATIM C may call POSIX's functions (drand48, ...), as NEURON's C++ build allows */
    if (m->verbatim) put(b, "#ifndef _DEFAULT_SOURCE\n#define _DEFAULT_SOURCE\n#endif\n");
    put(b, "#ifndef NSM_%s_H\n#define NSM_%s_H\n#include <math.h>\n%s#include \"neurosolve/mechanism.h\"\n\n", name, name,
        m->uses_printf ? "#include <stdio.h>\n" : "");
    put(b, "#ifndef NS_MECH_FN\n#ifdef __CUDACC__\n#define NS_MECH_FN static inline __host__ __device__\n"
           "#else\n#define NS_MECH_FN static inline\n#endif\n#endif\n");
    /* exp: the C library's on the GPU; on the host the ABI's ns_mech_exp, a
     * polynomial the compiler vectorises (within 1 ulp of the C library's),
     * so that the loops over instances with an exp vectorise too */
    put(b, "#ifndef NSM_EXP\n#define NSM_EXP\n"
           "/* exp: the C library's on the GPU; on the host ns_mech_exp (mechanism.h), which vectorises */\n"
           "NS_MECH_FN double nsm_exp(double x) {\n#ifdef __CUDA_ARCH__\n    return exp(x);\n#else\n"
           "    return ns_mech_exp(x);\n#endif\n}\n#endif\n");
    if (m->uses_at_time)
        put(b, "#ifndef NSM_AT_TIME\n#define NSM_AT_TIME\n/* NEURON's at_time(te) in a fixed step */\n"
               "NS_MECH_FN double nsm_at_time(double t, double dt, double te) {\n"
               "    const double x = te - 1e-11;\n    return (x <= t && x > t - dt) ? 1.0 : 0.0;\n}\n#endif\n");
    /* a current's slope (I(v + .001) - I(v)) / .001: on the GPU three operations in the place of the
     * division (a double division is a dozen dependent ones there), the same double (Markstein's
     * theorem: q = RN(x * 1000), 1000 = RN(1 / .001), corrected by the exact remainder x - q * .001;
     * tests/nmodl/test_nmodl_cuda.c checks pas's d on the device against the host's, bit for bit) */
    put(b, "#ifndef NSM_SLOPE\n#define NSM_SLOPE\n"
           "/* (I(v + .001) - I(v)) / .001; on the GPU the product by 1000 corrected by its exact remainder: the\n"
           " * same double as the division wherever 2^-960 <= |x| < 2^1013 (Markstein) */\n"
           "NS_MECH_FN double nsm_slope(double x) {\n#ifdef __CUDA_ARCH__\n    const double q = x * 1000.0;\n"
           "    return fma(fma(-q, .001, x), 1000.0, q);\n#else\n    return x / .001;\n#endif\n}\n#endif\n");
    put(b, "#ifndef NSM_EXPRELR\n#define NSM_EXPRELR\n/* Arbor's exprelr: x / (exp(x) - 1), 1 where 1 + x == 1 */\n"
           "NS_MECH_FN double nsm_exprelr(double x) { return (1.0 + x == 1.0) ? 1.0 : x / expm1(x); }\n#endif\n");
    if (m->n_ftables) /* NEURON's hoc_func_table (functabl.cpp), for FUNCTION_TABLEs */
        put(b, "#ifndef NSM_FTABLE\n#define NSM_FTABLE\n"
               "NS_MECH_FN int nsm_ftable_at(const ns_mech_ftable *t, int k, double x, double *frac) {\n"
               "    const int n = t->size[k];\n    *frac = 0.0;\n"
               "    if (t->x[k]) {\n        const double *a = t->x[k];\n"
               "        if (x <= a[0]) return 0;\n        if (x >= a[n - 1]) return n - 1;\n"
               "        int lo = 0, hi = n - 1;\n"
               "        while (lo < hi - 1) {\n            const int j = (lo + hi) / 2;\n"
               "            if (a[j] <= x) lo = j;\n            else hi = j;\n        }\n"
               "        *frac = (x - a[lo]) / (a[lo + 1] - a[lo]);\n        return lo;\n    }\n"
               "    if (x <= t->lo[k]) return 0;\n    if (x >= t->hi[k]) return n - 1;\n"
               "    const double x1 = (x - t->lo[k]) / ((t->hi[k] - t->lo[k]) / (double)(n - 1));\n"
               "    const int j = (int)x1;\n    *frac = x1 - (double)j;\n    return j;\n}\n"
               "NS_MECH_FN double nsm_ftable_inter(double f, const double *v, int j) {\n"
               "    return f > 0.0 ? (1.0 - f) * v[j] + f * v[j + 1] : v[j];\n}\n"
               "NS_MECH_FN double nsm_ftable(const ns_mech_ftable *t, int n, const double *a) {\n"
               "    if (!t || !t->values) return NAN; /* the simulation refuses a model without them */\n"
               "    double f[4] = {0.0, 0.0, 0.0, 0.0};\n    int j = 0;\n"
               "    for (int k = 0; k < n; ++k) j = j * t->size[k] + nsm_ftable_at(t, k, a[k], &f[k]);\n"
               "    if (n == 1) return nsm_ftable_inter(f[0], t->values, j);\n"
               "    if (n == 2) {\n        const double y1 = nsm_ftable_inter(f[1], t->values, j);\n"
               "        if (!(f[0] > 0.0)) return y1;\n"
               "        const double y2 = nsm_ftable_inter(f[1], t->values, j + t->size[1]);\n"
               "        return (1.0 - f[0]) * y1 + f[0] * y2;\n    }\n"
               "    return t->values[j];\n}\n#endif\n");
    if (m->random_field >= 0 || m->verbatim) put(b, "%s", nm_random_runtime());
    if (m->verbatim) put(b, "%s", nm_verbatim_runtime());
    put(b, "#undef NSM_ION\n#define NSM_ION(j) (p->node_index && p->ion[j].index ? p->ion[j].index[i_] : node_)\n");
    put(b, "#undef NSM_ADD\n#if defined(__CUDA_ARCH__) && %d\n#define NSM_ADD(a, x) atomicAdd(&(a), (x))\n#else\n"
           "#define NSM_ADD(a, x) ((a) += (x))\n#endif\n\n", m->point);
    for (int i = 0; i < m->n_blocks; i++) {
        const block *bl = m->blocks[i];
        if (bl->kind == B_DERIVATIVE || bl->kind == B_KINETIC || bl->hoc_only) continue;
        emit_proto(g, bl, "");
        put(b, ";\n");
    }
    put(b, "\n");
    /* VERBATIM C outside the blocks, in file order, after the prototypes (as nocmodl places it) */
    g->top = 1;
    for (int i = 0; m->verbatim_top && i < m->verbatim_top->n; i++)
        if (emit_verbatim(g, m->verbatim_top->s[i])) return -1;
    g->top = 0;
    /* KINETIC blocks next: a PROCEDURE or FUNCTION may SOLVE one STEADYSTATE (cabpump.mod's ss()),
     * and what they call is declared above */
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->kind == B_KINETIC && emit_kinetic(g, m->blocks[i])) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->kind != B_DERIVATIVE && m->blocks[i]->kind != B_KINETIC && !m->blocks[i]->hoc_only &&
            emit_callable(g, m->blocks[i]))
            return -1;
    /* DERIVATIVE blocks, by the method their SOLVE names */
    for (int i = 0; i < m->breakpoint->n; i++) {
        const st *s = m->breakpoint->s[i];
        if (s->kind != ST_SOLVE) continue;
        const block *bl = find_block(m, s->name);
        if (bl->kind == B_DERIVATIVE && emit_derivative(g, bl, s->method)) return -1;
    }
    /* init */
    put(b, "NS_MECH_FN void nsm_%s_init_F(ns_mech_ppack *p, ", name);
    put_fparams(g);
    put(b, "int i_, int node_) {\n    const double v_ = p->v[node_];\n    (void)i_;\n");
    put_arrays(g, 4);
    load_copies(g, 'v');
    load_copies(g, 'i');
    load_conc(g, 0);
    /* every state (each element of an array) at its START value, 0 without one, before INITIAL (NEURON's s0) */
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        if (v->cls != V_STATE || v->ion >= 0) continue;
        for (int e = 0; e < (v->size ? v->size : 1); e++) {
            if (v->value == 0.0) put(b, "    *F%d_ = 0.0;\n", v->field + e);
            else put(b, signbit(v->value) ? "    *F%d_ = (%.17g);\n" : "    *F%d_ = %.17g;\n", v->field + e, v->value);
        }
    }
    g->n_scope = 0;
    g->mode = M_CNEXP;
    g->ev_ctx = NM_EV_INITIAL;
    if (m->initial && emit_body(g, m->initial, 4)) return -1;
    g->ev_ctx = NM_EV_NONE;
    load_conc(g, 1);
    store_e(g);
    put(b, "    (void)v_;\n}\n\n");
    /* the BREAKPOINT's currents at v_ */
    put(b, "NS_MECH_FN double nsm_%s_cur(", name);
    put_sig(g);
    put(b, ") {\n    (void)p; (void)i_; (void)node_;\n");
    put_arrays(g, 4);
    load_copies(g, 'v');
    /* nocmodl: without currents the BREAKPOINT runs in nrn_state (below), nrn_cur does nothing */
    if (m->n_currents && emit_body(g, m->breakpoint, 4)) return -1;
    put(b, "    double c_ = 0.0;\n");
    for (int k = 0; k < m->n_currents; k++) {
        put(b, "    c_ += ");
        emit_var(g, m->currents[k], NULL);
        put(b, ";\n");
    }
    put(b, "    (void)v_;\n    return c_;\n}\n\n");
    /* current: NEURON's nrn_cur */
    put(b, "NS_MECH_FN void nsm_%s_current_F(ns_mech_ppack *p, ", name);
    put_fparams(g);
    put(b, "int i_, int node_) {\n");
    put(b, "    const double v_ = p->v[node_];\n");
    load_copies(g, 'i');
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        if (v->ion >= 0 && v->field >= 0 && !v->copy_in && (v->ion_what == 'c' || v->ion_what == 'o'))
            put(b, "    *F%d_ = p->ion[%d].%s[NSM_ION(%d)];\n", v->field, v->ion,
                v->ion_what == 'c' ? "ci" : "co", v->ion);
    }
    put(b, "    const double w_ = %s;\n", m->point ? "p->weight[i_]" : "1.0");
    put(b, "    double g_ = ");
    put_call(g, "cur", NULL, "");
    put(b, " + .001);\n");
    for (int k = 0; k < m->n_currents; k++) {
        const var *v = find_var(m, m->currents[k]);
        if (v->ion >= 0) put(b, "    const double di%d_ = *F%d_;\n", k, v->field);
    }
    put(b, "    double rhs_ = ");
    put_call(g, "cur", NULL, "");
    put(b, ");\n");
    for (int k = 0; k < m->n_currents; k++) {
        const var *v = find_var(m, m->currents[k]);
        if (v->ion < 0) continue;
        /* a loop passes NULL for an ion current nobody reads (ABI) */
        put(b, "    if (p->ion[%d].didv) NSM_ADD(p->ion[%d].didv[NSM_ION(%d)], nsm_slope(di%d_ - *F%d_) * w_);\n",
            v->ion, v->ion, v->ion, k, v->field);
        put(b, "    if (p->ion[%d].i) NSM_ADD(p->ion[%d].i[NSM_ION(%d)], *F%d_ * w_);\n", v->ion, v->ion,
            v->ion, v->field);
    }
    store_e(g);
    put(b, "    g_ = nsm_slope(g_ - rhs_);\n");
    if (m->point) put(b, "    g_ *= w_;\n    rhs_ *= w_;\n");
    if (m->electrode) /* nocmodl's electrode_current: injected, not a membrane current */
        put(b, "    NSM_ADD(p->rhs[node_], rhs_);\n    NSM_ADD(p->d[node_], -g_);\n    (void)w_;\n}\n\n");
    else
        put(b, "    NSM_ADD(p->rhs[node_], -rhs_);\n    NSM_ADD(p->d[node_], g_);\n    (void)w_;\n}\n\n");
    /* state: NEURON's nrn_state */
    put(b, "NS_MECH_FN void nsm_%s_state_F(ns_mech_ppack *p, ", name);
    put_fparams(g);
    put(b, "int i_, int node_) {\n    const double v_ = p->v[node_];\n    (void)i_;\n");
    load_copies(g, 'v');
    load_copies(g, 'i');
    load_conc(g, 0);
    if (!m->n_currents) { /* the whole BREAKPOINT, its SOLVEs in place (nocmodl's nrn_state) */
        put_arrays(g, 4);
        g->n_scope = 0;
        g->mode = M_CNEXP;
        g->solve_here = 1;
        const int r = emit_body(g, m->breakpoint, 4);
        g->solve_here = 0;
        if (r) return -1;
        store_e(g);
    }
    for (int i = 0; m->n_currents && i < m->breakpoint->n; i++) {
        const st *s = m->breakpoint->s[i];
        if (s->kind != ST_SOLVE) continue;
        const block *bl = find_block(m, s->name);
        put(b, "    ");
        put_call(g, bl->kind == B_PROCEDURE ? "p" : "d", s->name, ""); /* DERIVATIVE, KINETIC: d */
        put(b, ");\n");
    }
    load_conc(g, 1);
    put(b, "    (void)v_;\n}\n\n");
    /* BEFORE/AFTER blocks (nocmodl's BA functions: v and the ions read as in nrn_state), and
     * CONSTRUCTOR/DESTRUCTOR (no v: the loop binds none then) */
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        if (!m->hooks[h]) continue;
        const int ba = h < NS_MECH_CONSTRUCTOR;
        put(b, "NS_MECH_FN void nsm_%s_hook%d_F(ns_mech_ppack *p, ", name, h);
        put_fparams(g);
        put(b, "int i_, int node_) {\n    const double v_ = %s;\n    (void)i_; (void)node_;\n",
            ba ? "p->v[node_]" : "0.0");
        put_arrays(g, 4);
        if (ba) {
            load_copies(g, 'v');
            load_copies(g, 'i');
            load_conc(g, 0);
        }
        g->n_scope = 0;
        if (emit_body(g, m->hooks[h], 4)) return -1;
        if (ba) load_conc(g, 1);
        put(b, "    (void)v_;\n}\n\n");
    }
    /* NET_RECEIVE and its INITIAL: the arguments are the connection's weight
     * vector W_ (copied in, and back: per-connection state), flag the event's */
    for (int k = 0; k < 2; k++) {
        const stlist *body = k ? m->net_initial : m->net_receive;
        if (!body) continue;
        put(b, "NS_MECH_FN void nsm_%s_%s_F(ns_mech_ppack *p, ", name, k ? "net_init" : "net_receive");
        put_fparams(g);
        put(b, "int i_, int node_, double *W_%s) {\n    const double v_ = p->v[node_];\n", k ? "" : ", double A_flag");
        put_arrays(g, 4);
        load_copies(g, 'v');
        load_copies(g, 'i');
        g->n_scope = 0;
        for (int a = 0; a < m->n_net_args; a++) {
            put(b, "    double A_%s = W_[%d];\n", m->net_args[a], a);
            if (scope_push(g, m->net_args[a], 1)) return gfail(g, 0, "out of memory");
        }
        if (!k && scope_push(g, "flag", 1)) return gfail(g, 0, "out of memory");
        if (!k && m->n_watch) put(b, "    int watch_rm_ = 0;\n");
        g->ev_ctx = k ? NM_EV_RECEIVE_INITIAL : NM_EV_RECEIVE;
        const int r = emit_body(g, body, 4);
        g->ev_ctx = NM_EV_NONE;
        if (r) return -1;
        for (int a = 0; a < m->n_net_args; a++) put(b, "    W_[%d] = A_%s;\n", a, m->net_args[a]);
        put(b, "    (void)v_;%s%s\n}\n\n", k ? "" : " (void)A_flag;", !k && m->n_watch ? " (void)watch_rm_;" : "");
    }
    if (m->n_watch) { /* the WATCH conditions' values: a - b for a > b, b - a for a < b (nocmodl's) */
        put(b, "NS_MECH_FN double nsm_%s_watch_F(ns_mech_ppack *p, ", name);
        put_fparams(g);
        put(b, "int i_, int node_, int k_) {\n    const double v_ = p->v[node_];\n    (void)v_;\n");
        put_arrays(g, 4);
        load_copies(g, 'v');
        load_copies(g, 'i');
        g->n_scope = 0;
        put(b, "    switch (k_) {\n");
        for (int k = 0; k < m->n_watch; k++) {
            const ex *c = m->watch_cond[k];
            const int gt = c->op == '>' || c->op == 'g';
            put(b, "    case %d: return (", k);
            emit_ex(g, gt ? c->a : c->b);
            put(b, ") - (");
            emit_ex(g, gt ? c->b : c->a);
            put(b, ");\n");
        }
        put(b, "    default: return -1.0;\n    }\n}\n\n");
    }
    /* the entry points on the ppack's arrays */
    static const char *const entry[] = {"init", "current", "state", "net_receive", "net_init", "watch", "hook0",
                                        "hook1", "hook2", "hook3", "hook4", "hook5", "hook6"};
    for (int k = 0; k < 6 + NS_MECH_N_HOOKS; k++) {
        if ((k == 3 && !m->net_receive) || (k == 4 && !m->net_initial) || (k == 5 && !m->n_watch) ||
            (k >= 6 && !m->hooks[k - 6]))
            continue;
        put(b, "NS_MECH_FN %s nsm_%s_%s_one(ns_mech_ppack *p, int i_, int node_%s) {\n    %snsm_%s_%s_F(p, ",
            k == 5 ? "double" : "void", name, entry[k],
            k == 3 ? ", double *w_, double flag_" : k == 4 ? ", double *w_" : k == 5 ? ", int k_" : "",
            k == 5 ? "return " : "", name, entry[k]);
        put_addresses(g, "&p->field[%d][i_]", 0);
        put(b, "i_, node_%s);\n}\n\n", k == 3 ? ", w_, flag_" : k == 4 ? ", w_" : k == 5 ? ", k_" : "");
    }
    put(b, "#endif\n");
    return 0;
}

/* The two paths of one loop, at indentation ind. The contiguous path:
 * instance i alone touches node node_begin + i, its field entries and its ion
 * slot, so no iteration depends on another (ivdep). The node_index path: a
 * density mechanism has one instance per node in a call, so the same holds
 * (the loops gather v, and the model loop calls state() and init() of a
 * density mechanism that way, docs/mechanisms.md); a point process's
 * instances can share a node, so that loop stays as written. Where the
 * compiler takes OpenMP's simd pragma (-fopenmp or -fopenmp-simd with
 * NSM_OMP_SIMD: the library's build and `mechanisms build` pass both), the
 * loops say so with it, which also overrides the vectoriser's cost model:
 * ivdep alone left the generated hh's state() loop scalar with gcc 13
 * (docs/mechanisms.md, "Speed"). */
static void emit_paths(gen *g, const char *what, const char *ind) {
    const char *name = g->m->name;
    static const char *ivdep = "#if defined(_OPENMP) || defined(NSM_OMP_SIMD)\n#pragma omp simd\n"
                               "#elif defined(__GNUC__) && !defined(__clang__)\n#pragma GCC ivdep\n"
                               "#elif defined(__clang__)\n#pragma clang loop vectorize(assume_safety)\n#endif\n";
    put(g->b, "%sif (!p->node_index) {\n", ind);
    put(g->b, "%s    const int b = p->node_begin;\n", ind);
    put(g->b, "%s    q.node_index = NULL; /* known here: ion slots are the nodes */\n", ind);
    /* VERBATIM C runs as written, one instance after the other: no simd */
    put(g->b, "%s%s    for (int i = 0; i < n; ++i) nsm_%s_%s_one(&q, i, b + i);\n", g->m->verbatim ? "" : ivdep, ind,
        name, what);
    put(g->b, "%s} else {\n%s    const int *ni = p->node_index;\n", ind, ind);
    put(g->b, "%s%s    for (int i = 0; i < n; ++i) nsm_%s_%s_one(&q, i, ni[i]);\n%s}\n", g->m->point || g->m->verbatim ? "" : ivdep, ind,
        name, what, ind);
}

static void emit_loop(gen *g, const char *what) {
    const char *name = g->m->name;
    int ng = g->m->n_globals;
    put(g->b, "NSM_LOOP void nsm_%s_%s(ns_mech_ppack *p) {\n", name, what);
    /* every loop keeps the tables current, so that a tabled call in any of
     * them can read its table without testing it (emit_callable) */
    if (g->m->table_size) put(g->b, "    nsm_%s_table_update(p);\n", name);
    /* A local copy of the ppack lets the compiler keep its pointers in
     * registers, and a local copy of the GLOBALs lets it see that no
     * instance's store changes them. gcc then vectorises the loops without
     * calls to libm. */
    put(g->b, "    const int n = p->n;\n    ns_mech_ppack q = *p;\n");
    if (ng) put(g->b, "    double g_[%d];\n    memcpy(g_, p->global, sizeof g_);\n    q.global = g_;\n", ng);
    /* With TABLEs, the loops twice: where every usetable_NAME is not 0, set
     * to 1 in the local copy for their duration (the value the lookups test
     * is then a constant: no branch left), and for the rest. */
    int nt = 0;
    for (int i = 0; i < g->m->n_blocks; i++) nt += g->m->blocks[i]->table != NULL;
    int *ut = nt ? calloc((size_t)nt, sizeof *ut) : NULL;
    if (nt && !ut) { g->b->oom = 1; return; }
    nt = 0;
    for (int i = 0; i < g->m->n_blocks; i++) {
        const block *bl = g->m->blocks[i];
        if (!bl->table) continue;
        ut[nt++] = bl->table->usetable;
    }
    if (nt) {
        put(g->b, "    if (");
        for (int k = 0; k < nt; k++) put(g->b, "%sg_[%d] != 0.0", k ? " && " : "", ut[k]);
        put(g->b, ") {\n");
        for (int k = 0; k < nt; k++) put(g->b, "        const double u%d_ = g_[%d];\n        g_[%d] = 1.0;\n", k, ut[k], ut[k]);
        emit_paths(g, what, "        ");
        for (int k = 0; k < nt; k++) put(g->b, "        g_[%d] = u%d_;\n", ut[k], k);
        put(g->b, "    } else {\n");
        emit_paths(g, what, "        ");
        put(g->b, "    }\n");
    } else {
        emit_paths(g, what, "    ");
    }
    free(ut);
    if (ng) put(g->b, "    if (memcmp(g_, p->global, sizeof g_)) memcpy(p->global, g_, sizeof g_);\n");
    put(g->b, "}\n\n");
}

static void emit_strs(buf *b, const char *mech, const char *label, const char *const *s, int n) {
    put(b, "static const char *const nsm_%s_%s[] = {", mech, label);
    for (int i = 0; i < n; i++) put(b, "%s\"%s\"", i ? ", " : "", s[i]);
    if (!n) put(b, "NULL");
    put(b, "};\n");
}

static int emit_c(gen *g) {
    const struct ns_nmodl *m = g->m;
    buf *b = g->b;
    const char *name = m->name;
    g->field_direct = 1; /* a DEPEND on a field reads the first instance's, as before */
    if (m->table_size) {
        put(b, "static int nsm_%s_table_update(ns_mech_ppack *p) {\n    int rebuilt = 0;\n    const double v_ = 0.0;\n"
               "    const int i_ = 0, node_ = 0;\n    (void)v_; (void)i_; (void)node_;\n", name);
        for (int i = 0; i < m->n_blocks; i++) {
            const block *bl = m->blocks[i];
            if (!bl->table) continue;
            const table_decl *t = bl->table;
            put(b, "    if (p->global[%d] != 0.0) {\n        double *T_ = p->table + %d;\n", t->usetable, t->offset);
            put(b, "        int need = T_[0] == 0.0 || T_[1] != p->celsius");
            for (int k = 0; k < t->n_depend; k++) {
                put(b, " || T_[%d] != ", 4 + k);
                g->n_scope = 0;
                emit_var(g, t->depend[k], NULL);
            }
            put(b, ";\n        if (need) {\n");
            put(b, "            double s_[%d];\n            double *f_[%d];\n", m->n_fields ? m->n_fields : 1,
                m->n_fields ? m->n_fields : 1);
            int n_ion = 0;
            for (int k = 0; k < m->n_vars; k++) n_ion += is_ion_input(&m->vars[k]);
            if (n_ion) put(b, "            double ion_[%d] = {0.0};\n", n_ion);
            if (m->n_pointers) put(b, "            double ptr_[%d] = {0.0};\n", m->n_pointers);
            put(b, "            for (int k = 0; k < %d; ++k) { s_[k] = nsm_%s_defaults[k]; f_[k] = &s_[k]; }\n", m->n_fields,
                name);
            put(b, "            ns_mech_ppack q_ = *p;\n            q_.n = 1; q_.node_index = NULL; q_.node_begin = 0;"
                   " q_.field = f_;\n            q_.table = NULL;\n");
            put(b, "            const double tmin_ = ");
            emit_ex(g, t->from);
            put(b, ", tmax_ = ");
            emit_ex(g, t->to);
            put(b, ";\n            const double dx_ = (tmax_ - tmin_) / %d.;\n", t->with);
            int head = 4 + t->n_depend, n1 = t->with + 1;
            put(b, "            double x_ = tmin_;\n            for (int j_ = 0; j_ < %d; x_ += dx_, ++j_) {\n", n1);
            if (bl->kind == B_FUNCTION) put(b, "                T_[%d + j_] = nsm_%s_f_%s_exact(&q_, ", head, name, bl->name);
            else put(b, "                nsm_%s_p_%s_exact(&q_, ", name, bl->name);
            put_addresses(g, "&s_[%d]", 1);
            put(b, "0, 0, x_, x_);\n");
            if (bl->kind == B_PROCEDURE) {
                for (int k = 0; k < t->n_names; k++)
                    put(b, "                T_[%d + j_] = s_[%d];\n", head + k * n1, find_var(m, t->names[k])->field);
            }
            put(b, "            }\n            T_[0] = 1.0;\n            T_[1] = p->celsius;\n            T_[2] = tmin_;\n"
                   "            T_[3] = 1. / dx_;\n");
            for (int k = 0; k < t->n_depend; k++) {
                put(b, "            T_[%d] = ", 4 + k);
                emit_var(g, t->depend[k], NULL);
                put(b, ";\n");
            }
            put(b, "            rebuilt = 1;\n        }\n    }\n");
        }
        put(b, "    return rebuilt;\n}\n\n");
    }
    g->field_direct = 0;
    /* the loops: flattened (every call inlined, so that nothing stops the
     * vectoriser; gcc inlines nothing into a clone otherwise) and, with gcc
     * where the toolchain has ifuncs (glibc on x86-64), compiled for
     * AVX-512, AVX2 and the baseline, chosen at load time as the
     * hand-written CPU loop is (src/sim/cpu/step.c, NS_CLONES). No FMA
     * contraction in any of them (-ffp-contract=off), so that the clones
     * compute the same values. Not with clang: it refuses flatten with
     * target_clones, and without flatten inlines too little into a clone. */
    put(b, "#undef NSM_LOOP\n"
           "#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__GNUC__) && \\\n"
           "    !defined(__clang__) && !defined(__INTEL_COMPILER) && !defined(NSM_NO_CLONES)\n"
           "#define NSM_LOOP static __attribute__((target_clones(\"avx512f\", \"avx2\", \"default\"), flatten))\n"
           "#elif defined(__GNUC__) || defined(__clang__)\n"
           "#define NSM_LOOP static __attribute__((flatten))\n"
           "#else\n#define NSM_LOOP static\n#endif\n"
           /* a loop clang does not vectorise despite assume_safety is no error (-Werror builds) */
           "#ifdef __clang__\n#pragma clang diagnostic ignored \"-Wpass-failed\"\n#endif\n\n");
    emit_loop(g, "init");
    emit_loop(g, "current");
    emit_loop(g, "state");
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        char what[16];
        snprintf(what, sizeof what, "hook%d", h);
        if (m->hooks[h]) emit_loop(g, what);
    }
    if (m->net_receive) /* the weight alone (ABI 2's entry), and the weight vector with a flag */
        put(b, "static void nsm_%s_net_receive_w(ns_mech_ppack *p, int i, double *w, double flag) {\n"
               "    nsm_%s_net_receive_one(p, i, p->node_index ? p->node_index[i] : p->node_begin + i, w, flag);\n}\n\n"
               "static void nsm_%s_net_receive(ns_mech_ppack *p, int i, double w) {\n"
               "    double w_[%d] = {w};\n    nsm_%s_net_receive_w(p, i, w_, 0.0);\n}\n\n",
            name, name, name, m->n_net_args, name);
    if (m->n_watch)
        put(b, "static double nsm_%s_watch(ns_mech_ppack *p, int i, int k) {\n"
               "    return nsm_%s_watch_one(p, i, p->node_index ? p->node_index[i] : p->node_begin + i, k);\n}\n\n",
            name, name);
    if (m->net_initial)
        put(b, "static void nsm_%s_net_init(ns_mech_ppack *p, int i, double *w) {\n"
               "    nsm_%s_net_init_one(p, i, p->node_index ? p->node_index[i] : p->node_begin + i, w);\n}\n\n",
            name, name);
    return 0;
}

/* the name of element k of v: "x", or "x[k]" for an array (in the emit call's arena) */
static const char *element_name(const var *v, int k) {
    if (!v->size) return v->name;
    size_t n = strlen(v->name) + 16;
    char *s = nm_calloc(GAR, n, 1);
    if (s) snprintf(s, n, "%s[%d]", v->name, k);
    return s ? s : v->name;
}

/* names and defaults go before the loops (the TABLE builder uses the defaults) */
static void emit_desc_data(gen *g) {
    const struct ns_nmodl *m = g->m;
    buf *b = g->b;
    const char *name = m->name;
    const char **fn = calloc((size_t)m->n_fields + 1, sizeof *fn);
    const char **gn = calloc((size_t)m->n_globals + 1, sizeof *gn);
    double *fd = calloc((size_t)m->n_fields + 1, sizeof *fd), *gd = calloc((size_t)m->n_globals + 1, sizeof *gd);
    if (!fn || !gn || !fd || !gd) { b->oom = 1; free(fn); free(gn); free(fd); free(gd); return; }
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        for (int k = 0; k < (v->size ? v->size : 1); k++) {
            if (v->field >= 0) fn[v->field + k] = element_name(v, k), fd[v->field + k] = v->cls == V_PARAM ? v->value : 0.0;
            if (v->global >= 0) gn[v->global + k] = element_name(v, k), gd[v->global + k] = v->value;
        }
    }
    put(b, "static const double nsm_%s_defaults[] = {", name);
    for (int f = 0; f < m->n_fields; f++) put(b, "%s%.17g", f ? ", " : "", fd[f]);
    if (!m->n_fields) put(b, "0.0");
    put(b, "};\n");
    emit_strs(b, name, "names", fn, m->n_fields);
    put(b, "static const double nsm_%s_gdefaults[] = {", name);
    for (int k = 0; k < m->n_globals; k++) put(b, "%s%.17g", k ? ", " : "", gd[k]);
    if (!m->n_globals) put(b, "0.0");
    put(b, "};\n");
    emit_strs(b, name, "gnames", gn, m->n_globals);
    emit_strs(b, name, "pnames", (const char *const *)m->pointers, m->n_pointers);
    {
        const char **ft = calloc((size_t)m->n_ftables + 1, sizeof *ft);
        if (!ft) { b->oom = 1; free(fn); free(gn); free(fd); free(gd); return; }
        put(b, "static const int nsm_%s_ftdims[] = {", name);
        for (int i = 0, k = 0; i < m->n_blocks; i++)
            if (m->blocks[i]->ftable) {
                ft[m->blocks[i]->ftable - 1] = m->blocks[i]->name;
                put(b, "%s%d", k++ ? ", " : "", m->blocks[i]->n_args);
            }
        put(b, "%s};\n", m->n_ftables ? "" : "0");
        emit_strs(b, name, "ftnames", ft, m->n_ftables);
        free(ft);
    }
    put(b, "static const ns_mech_ion_use nsm_%s_ions[] = {", name);
    for (int k = 0; k < m->n_ions; k++)
        put(b, "%s{\"%s\", %d, %uu}", k ? ", " : "", m->ions[k].name, m->ions[k].charge, m->ions[k].flags);
    if (!m->n_ions) put(b, "{NULL, 0, 0u}");
    put(b, "};\n\n");
    free(fn);
    free(gn);
    free(fd);
    free(gd);
}

/* VERBATIM C's errors (nmodl_verbatim.h, ABI 5): each host entry point in the
 * descriptor is its guard, which runs it under the ppack's error channel */
static void emit_guards(gen *g) {
    const struct ns_nmodl *m = g->m;
    const char *n = m->name;
    const char *what[] = {"init", "current", "state"};
    for (int k = 0; k < 3; k++) put(g->b, "NSV_GUARD(\"%s\", nsm_%s_%s)\n#define nsm_%s_%s nsv_g_nsm_%s_%s\n", n, n, what[k], n, what[k], n, what[k]);
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (m->hooks[h]) put(g->b, "NSV_GUARD(\"%s\", nsm_%s_hook%d)\n#define nsm_%s_hook%d nsv_g_nsm_%s_hook%d\n", n, n, h, n, h, n, h);
    const struct { int on; const char *guard, *fn; } more[] = {{m->net_receive != NULL, "RECV", "net_receive"},
        {m->net_receive != NULL, "RECV_W", "net_receive_w"}, {m->net_initial != NULL, "IW", "net_init"},
        {m->n_watch > 0, "WATCH", "watch"}, {m->table_size > 0, "TABLE", "table_update"}};
    for (int k = 0; k < 5; k++)
        if (more[k].on)
            put(g->b, "NSV_GUARD_%s(\"%s\", nsm_%s_%s)\n#define nsm_%s_%s nsv_g_nsm_%s_%s\n", more[k].guard, n, n,
                more[k].fn, n, more[k].fn, n, more[k].fn);
}

/* a C string literal of s, or NULL */
static void put_cstr(buf *b, const char *s) {
    if (!s) { put(b, "NULL"); return; }
    put(b, "\"");
    for (const char *c = s; *c; c++) put(b, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    put(b, "\"");
}

static void emit_desc(gen *g, const char *why) {
    const struct ns_nmodl *m = g->m;
    const char *n = m->name;
    if (m->verbatim) emit_guards(g);
    put(g->b, "#ifdef NS_MECH_WITH_CUDA\nint nsm_%s_cuda_init(const ns_mech_ppack *, void *);\n"
              "int nsm_%s_cuda_current(const ns_mech_ppack *, void *);\nint nsm_%s_cuda_state(const ns_mech_ppack *, void *);\n",
        n, n, n);
    /* self events, net_event, WATCH, artificial cells, VERBATIM and the hooks
     * stay on the host: no CUDA entry points, and cuda_why_not says where
     * (the GPU loop refuses the mechanism, docs/mechanisms.md "Events");
     * per-connection state and NET_RECEIVE's INITIAL run on the device */
    const int host_only = nm_cuda_host_only(m);
    const int cuda_init = !host_only && m->net_initial;
    if (host_only)
        put(g->b, "#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n#else\n#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n"
                  "#endif\n");
    else if (m->net_receive)
        put(g->b, "int nsm_%s_cuda_net_receive(const ns_mech_ppack *, const ns_mech_event *, const int64_t *, int64_t, "
                  "void *);\n%s%s%s#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init, nsm_##x##_cuda_current, nsm_##x##_cuda_state, "
                  "nsm_##x##_cuda_net_receive\n#else\n#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n#endif\n",
            n, cuda_init ? "int nsm_" : "", cuda_init ? n : "",
            cuda_init ? "_cuda_net_init(const ns_mech_ppack *, const ns_mech_event *, const int64_t *, int64_t, void *);\n" : "");
    else
        put(g->b, "#define NSM_CUDA_FNS(x) nsm_##x##_cuda_init, nsm_##x##_cuda_current, nsm_##x##_cuda_state, NULL\n"
                  "#else\n#define NSM_CUDA_FNS(x) NULL, NULL, NULL, NULL\n#endif\n");
    put(g->b, "const ns_mech_desc nsm_%s_desc = {\n    NS_MECH_ABI_VERSION, \"%s\", %s,\n    %d, %d, %d, %d, nsm_%s_names, nsm_%s_defaults,\n"
              "    %d, nsm_%s_gnames, nsm_%s_gdefaults,\n    %d, nsm_%s_ions,\n    %d, %d,\n"
              "    nsm_%s_init, nsm_%s_current, nsm_%s_state,\n    %s%s%s,\n    %s%s%s,\n    NSM_CUDA_FNS(%s)",
        n, n, m->point ? "NS_MECH_POINT" : "NS_MECH_DENSITY", m->n_fields, m->n_params, m->n_assigned, m->n_states, n, n,
        m->n_globals, n, n, m->n_ions, n, m->table_size, m->net_receive != NULL, n, n, n,
        m->net_receive ? "nsm_" : "NULL", m->net_receive ? n : "", m->net_receive ? "_net_receive" : "",
        m->table_size ? "nsm_" : "NULL", m->table_size ? n : "", m->table_size ? "_table_update" : "", n);
    put(g->b, ",\n    %d, %d", m->n_streams, m->random_field >= 0 ? m->random_field : 0); /* random */
    put(g->b, ",\n    %d, nsm_%s_pnames", m->n_pointers, n);                                       /* POINTER */
    put(g->b, ",\n    %d, %d, %uu, %s%s%s, %s%s%s,\n    %d, %s%s%s", /* events */
        m->n_net_args, m->artificial, m->events, m->net_receive ? "nsm_" : "NULL", m->net_receive ? n : "",
        m->net_receive ? "_net_receive_w" : "", m->net_initial ? "nsm_" : "NULL", m->net_initial ? n : "",
        m->net_initial ? "_net_init" : "", m->n_watch, m->n_watch ? "nsm_" : "NULL", m->n_watch ? n : "",
        m->n_watch ? "_watch" : "");
    put(g->b, ",\n    {"); /* the hooks and FUNCTION_TABLEs (ABI 4) */
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        if (m->hooks[h]) put(g->b, "%snsm_%s_hook%d", h ? ", " : "", n, h);
        else put(g->b, "%sNULL", h ? ", " : "");
    }
    put(g->b, "},\n    %d, nsm_%s_ftnames, nsm_%s_ftdims", m->n_ftables, n, n);
    /* derivatives (ABI 5, nmodl_diff.c): the vector-Jacobian products, or why there are none */
    if (!why) put(g->b, ",\n    nsm_%s_vjp_init, nsm_%s_vjp_current, nsm_%s_vjp_state, ", n, n, n);
    else put(g->b, ",\n    NULL, NULL, NULL, ");
    put_cstr(g->b, why);
    put(g->b, ",\n    "); /* ABI 5: why not thread-safe (nmodl_verbatim.c) */
    put_cstr(g->b, m->thread_unsafe);
    /* ABI 5: NET_RECEIVE's INITIAL on the device; why there is no CUDA code */
    if (cuda_init) put(g->b, ",\n#ifdef NS_MECH_WITH_CUDA\n    nsm_%s_cuda_net_init,\n#else\n    NULL,\n#endif\n    ", n);
    else put(g->b, ",\n    NULL, ");
    put_cstr(g->b, !host_only             ? NULL
                   : m->verbatim_gpu_why[0] ? m->verbatim_gpu_why
                   : m->gpu_why[0]          ? m->gpu_why
                                            : "events run on the CPU loop only");
    put(g->b, "};\n");
}

static void emit_cuda(gen *g) {
    const char *n = g->m->name;
    if (g->m->verbatim_gpu_why[0]) { /* VERBATIM C that is not device C (nmodl_cuda_verbatim.c) */
        g->status = ns_fail(NS_ERR_UNSUPPORTED, "%s: mechanism %s is built for the CPU only (build its library "
                            "without --cuda and run it on the CPU backend)", g->m->verbatim_gpu_why, n);
        return;
    }
    put(g->b, "/* Generated by neurosolve's NMODL translator from %s: do not edit. */\n#include \"%s.h\"\n"
              "#include <cuda_runtime.h>\n\n", g->m->file, n);
    const char *what[] = {"init", "current", "state"};
    for (int k = 0; k < 3; k++) {
        put(g->b, "__global__ void nsm_%s_k_%s(ns_mech_ppack pp) {\n"
                  "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i < pp.n) nsm_%s_%s_one(&pp, i, pp.node_index ? pp.node_index[i] : pp.node_begin + i);\n}\n"
                  "extern \"C\" int nsm_%s_cuda_%s(const ns_mech_ppack *p, void *stream) {\n"
                  "    if (p->n <= 0) return 0;\n    const int threads = 128;\n"
                  "    nsm_%s_k_%s<<<(p->n + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            n, what[k], n, what[k], n, what[k], n, what[k]);
    }
    if (nm_cuda_host_only(g->m)) return;
    /* the events of one step (or the connections of NET_RECEIVE's INITIAL):
     * an instance's are adjacent, in delivery order; the thread at the first
     * of them applies them all; the weight vector is the connection's in
     * pp.wvec (per-connection state, written back) or the event's weight */
    if (g->m->net_receive && (g->m->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH))) {
        /* self events (mechanism.h's ns_mech_dev_events): a thread per instance
         * each step delivers its due connection events (range: the step's,
         * sorted by instance, time, number; NULL: none) and its self events
         * due at *pp.dev.until, merged in NEURON's order (time; at one time a
         * connection's first, self events in send order), those it sends
         * meanwhile included */
        const int nw = g->m->n_net_args;
        put(g->b, "__global__ void nsm_%s_k_net_receive(ns_mech_ppack pp, const ns_mech_event *ev, const int64_t *range) {\n"
                  "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    if (i >= pp.n) return;\n"
                  "    int64_t q = 0, e = 0;\n"
                  "    if (range) {\n"
                  "        int64_t lo = range[0], hi = range[1];\n"
                  "        e = hi;\n"
                  "        while (lo < hi) {\n"
                  "            const int64_t mid = lo + (hi - lo) / 2;\n"
                  "            if (ev[mid].instance < i) lo = mid + 1;\n"
                  "            else hi = mid;\n"
                  "        }\n"
                  "        q = lo;\n"
                  "    }\n"
                  "    const double until = *pp.dev.until;\n"
                  "    const int node = pp.node_index ? pp.node_index[i] : pp.node_begin + i;\n"
                  "    const int S = pp.dev.slots;\n"
                  "    const int64_t at = (int64_t)i * S;\n",
            g->m->name);
        if (g->m->n_watch)
            put(g->b,
                  "    for (int k = 0; pp.dev.w_on && k < pp.dev.n_watch; ++k) { /* WATCH at the step's start, first */\n"
                  "        const int64_t wk = (int64_t)i * pp.dev.n_watch + k;\n"
                  "        if (!pp.dev.w_on[wk]) continue;\n"
                  "        pp.t = *pp.dev.t_step;\n"
                  "        if (!(nsm_%s_watch_one(&pp, i, node, k) > 0.0)) {\n"
                  "            pp.dev.w_above[wk] = 0;\n"
                  "            continue;\n"
                  "        }\n"
                  "        if (pp.dev.w_above[wk]) continue;\n"
                  "        pp.dev.w_above[wk] = 1;\n"
                  "        ns_mech_dev_push(&pp, i, pp.t, pp.dev.w_flag[wk], -1);\n"
                  "    }\n",
                g->m->name);
        put(g->b,
                  "    for (;;) {\n"
                  "        int b = -1;\n"
                  "        for (int s = 0; s < S; ++s) {\n"
                  "            if (pp.dev.q_seq[at + s] < 0 || !(pp.dev.q_t[at + s] <= until)) continue;\n"
                  "            if (b < 0 || pp.dev.q_t[at + s] < pp.dev.q_t[at + b] ||\n"
                  "                (pp.dev.q_t[at + s] == pp.dev.q_t[at + b] && pp.dev.q_seq[at + s] < pp.dev.q_seq[at + b]))\n"
                  "                b = s;\n"
                  "        }\n"
                  "        const int conn = q < e && ev[q].instance == i;\n"
                  "        if (!conn && b < 0) break;\n"
                  "        if (conn && (b < 0 || ev[q].t <= pp.dev.q_t[at + b])) {\n"
                  "            pp.t = ev[q].t;\n"
                  "            double w1 = ev[q].weight;\n"
                  "            double *w = pp.wvec ? pp.wvec + (int64_t)ev[q].conn * %d : &w1;\n"
                  "            nsm_%s_net_receive_one(&pp, i, node, w, 0.0);\n"
                  "            ++q;\n"
                  "        } else {\n"
                  "            pp.t = pp.dev.q_t[at + b];\n"
                  "            const double flag = pp.dev.q_flag[at + b];\n"
                  "            const int32_t c = pp.dev.q_conn[at + b];\n"
                  "            pp.dev.q_seq[at + b] = -1;\n"
                  "            double wz[%d] = {0};\n"
                  "            double *w = c >= 0 && pp.wvec ? pp.wvec + (int64_t)c * %d : wz;\n"
                  "            nsm_%s_net_receive_one(&pp, i, node, w, flag);\n"
                  "        }\n    }\n}\n"
                  "extern \"C\" int nsm_%s_cuda_net_receive(const ns_mech_ppack *p, const ns_mech_event *events, "
                  "const int64_t *range, int64_t max, void *stream) {\n"
                  "    (void)max;\n    if (p->n <= 0) return 0;\n    const int threads = 128;\n"
                  "    nsm_%s_k_net_receive<<<(p->n + threads - 1) / threads, threads, 0, (cudaStream_t)stream>>>(*p, events, range);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            nw, g->m->name, nw, nw, g->m->name, g->m->name, g->m->name);
    }
    for (int k = 0; k < 2; k++) {
        const char *fn = k ? "net_init" : "net_receive";
        if (!(k ? g->m->net_initial : g->m->net_receive) || (!k && (g->m->events & (NS_MECH_EV_SEND | NS_MECH_EV_WATCH))))
            continue;
        put(g->b, "__global__ void nsm_%s_k_%s(ns_mech_ppack pp, const ns_mech_event *ev, const int64_t *range) {\n"
                  "    const int64_t b = range[0], e = range[1];\n"
                  "    for (int64_t k = b + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < e;\n"
                  "         k += (int64_t)gridDim.x * blockDim.x) {\n"
                  "        const int i = ev[k].instance;\n"
                  "        if (k > b && ev[k - 1].instance == i) continue;\n"
                  "        const int node = pp.node_index ? pp.node_index[i] : pp.node_begin + i;\n"
                  "        for (int64_t q = k; q < e && ev[q].instance == i; ++q) {\n"
                  "            pp.t = ev[q].t;\n"
                  "            double w1 = ev[q].weight;\n"
                  "            double *w = pp.wvec ? pp.wvec + (int64_t)ev[q].conn * %d : &w1;\n"
                  "            nsm_%s_%s_one(&pp, i, node, w%s);\n"
                  "        }\n    }\n}\n"
                  "extern \"C\" int nsm_%s_cuda_%s(const ns_mech_ppack *p, const ns_mech_event *events, "
                  "const int64_t *range, int64_t max, void *stream) {\n"
                  "    if (max <= 0) return 0;\n    const int threads = 128;\n"
                  "    const int64_t want = (max + threads - 1) / threads;\n"
                  "    const unsigned blocks = (unsigned)(want < 1024 ? want : 1024);\n"
                  "    nsm_%s_k_%s<<<blocks, threads, 0, (cudaStream_t)stream>>>(*p, events, range);\n"
                  "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n",
            n, fn, g->m->n_net_args, n, fn, k ? "" : ", 0.0", n, fn, n, fn);
    }
}

ns_status ns_nmodl_emit(const ns_nmodl_t *m, ns_nmodl_target target, char **text) {
    if (!m || !text) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_emit: NULL argument");
    *text = NULL;
    buf b = {0};
    gen g = {0};
    nm_arena ar = {0};
    GAR = &ar;
    g.m = m;
    g.b = &b;
    int r = 0;
    switch (target) {
    case NS_NMODL_HEADER: r = emit_header(&g); break;
    case NS_NMODL_C:
        put(&b, "/* Generated by neurosolve's NMODL translator from %s: do not edit. */\n#include \"%s.h\"\n\n", m->file,
            m->name);
        emit_desc_data(&g);
        r = emit_c(&g);
        if (!r) {
            char why[400];
            r = nm_diff_emit(&g, why, sizeof why);
            if (r >= 0) emit_desc(&g, r ? why : NULL);
            r = r < 0;
        }
        break;
    case NS_NMODL_CUDA: emit_cuda(&g); break;
    default: free(b.s); return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_emit: unknown target %d", (int)target);
    }
    free(g.scope);
    free(g.scope_arg);
    nm_arena_free(&ar);
    GAR = NULL;
    if (r || g.status) { free(b.s); return g.status ? g.status : ns_fail(NS_ERR_INTERNAL, "code generation failed"); }
    if (b.oom || !b.s) { free(b.s); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory generating %s", m->name); }
    *text = b.s;
    return NS_OK;
}
