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
#include "nmodl/nmodl_gen.h"

void nm_put(buf *b, const char *fmt, ...) {
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

/* The per-instance functions reach the instance's fields through one
 * pointer each, F0_ .. F<n-1>_ (parameters, assigned, states: the
 * descriptor's order), ahead of i_ and node_: the _one wrappers pass the
 * addresses in the ppack's arrays, and a loop that keeps an instance's
 * fields in locals (the CPU loop's fused pass, docs/mechanisms.md "ABI")
 * passes theirs, which the compiler then keeps in registers. */
/* An ion variable that is no field (ena, ek, cai read only, ...): the
 * functions reach it through a pointer too, I<k>_ in the order of the
 * model's variables (the wrappers pass the ion slot's address). */
int nm_ion_input(const var *v) { return v->ion >= 0 && v->field < 0; }
const char *nm_ion_array(const var *v) {
    return v->ion_what == 'e' ? "e" : v->ion_what == 'i' ? "i" : v->ion_what == 'c' ? "ci" : "co";
}
static int ion_input_index(const struct ns_nmodl *m, const var *v) {
    int k = 0;
    for (int i = 0; i < m->n_vars && &m->vars[i] != v; i++) k += nm_ion_input(&m->vars[i]);
    return k;
}
/* A POINTER variable: through P<k>_, the address the simulation connected
 * it to (ppack.pointer[k][i_]). */
void nm_put_fparams(gen *g) {
    for (int k = 0; k < g->m->n_fields; k++) nm_put(g->b, "double *F%d_, ", k);
    for (int i = 0, k = 0; i < g->m->n_vars; i++)
        if (nm_ion_input(&g->m->vars[i])) nm_put(g->b, "double *I%d_, ", k++);
    for (int k = 0; k < g->m->n_pointers; k++) nm_put(g->b, "double *P%d_, ", k);
}
void nm_put_fargs(gen *g) {
    for (int k = 0; k < g->m->n_fields; k++) nm_put(g->b, "F%d_, ", k);
    for (int i = 0, k = 0; i < g->m->n_vars; i++)
        if (nm_ion_input(&g->m->vars[i])) nm_put(g->b, "I%d_, ", k++);
    for (int k = 0; k < g->m->n_pointers; k++) nm_put(g->b, "P%d_, ", k);
}
/* the wrappers' arguments: the addresses in the ppack's arrays of instance
 * i_ at node_ (fields: `field` "&p->field[%d][i_]" or, in the TABLE
 * builder, "&s_[%d]"; ion slots at NSM_ION, or there zeros of its own: a
 * table is built on the host, where a GPU loop's ppack has no ions) */
void nm_put_addresses(gen *g, const char *field, int table) {
    for (int f = 0; f < g->m->n_fields; f++) {
        nm_put(g->b, field, f);
        nm_put(g->b, ", ");
    }
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (!nm_ion_input(v)) continue;
        if (table) nm_put(g->b, "&ion_[%d], ", ion_input_index(g->m, v));
        else nm_put(g->b, "&p->ion[%d].%s[NSM_ION(%d)], ", v->ion, nm_ion_array(v), v->ion);
    }
    /* the TABLE builder: a zero of its own per POINTER, as for the ions */
    for (int k = 0; k < g->m->n_pointers; k++)
        if (table) nm_put(g->b, "&ptr_[%d], ", k);
        else nm_put(g->b, "p->pointer[%d][i_], ", k);
}

int nm_gfail(gen *g, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    nm_vfail(&g->status, NS_ERR_UNSUPPORTED, g->m->file, line, fmt, ap);
    va_end(ap);
    return -1;
}

const var *nm_find_var(const struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_vars; i++)
        if (!strcmp(m->vars[i].name, name)) return &m->vars[i];
    for (int i = 0; i < m->n_elems; i++)
        if (!strcmp(m->elems[i].name, name)) return &m->elems[i];
    return NULL;
}
const block *nm_find_block(const struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_blocks; i++)
        if (!strcmp(m->blocks[i]->name, name)) return m->blocks[i];
    return NULL;
}
int nm_scope_find(const gen *g, const char *name) {
    for (int i = g->n_scope - 1; i >= 0; i--)
        if (!strcmp(g->scope[i], name)) return i;
    return -1;
}
int nm_gen_scope_push(gen *g, char *name, int arg) {
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
    if ((size_t)k < sizeof small) { nm_put(g->b, "%s", small); return; }
    char *big = malloc((size_t)k + 1);
    if (!big) { g->b->oom = 1; return; }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    nm_put(g->b, "%s", big);
    free(big);
}
const struct ns_nmodl *nm_gen_module(const gen *g) { return g->m; }
size_t nm_gen_mark(const gen *g) { return g->b->n; }
void nm_gen_cut(gen *g, size_t at) {
    if (g->b->s && at <= g->b->n) g->b->s[g->b->n = at] = 0;
}
int nm_gen_scope(const gen *g, const char *name) {
    const int s = nm_scope_find(g, name);
    return s < 0 ? -1 : g->scope_arg[s];
}
int nm_gen_scope_size(const gen *g) { return g->n_scope; }
void nm_gen_scope_reset(gen *g, int n) { g->n_scope = n; }
void nm_gen_owner(gen *g, const block *bl) { g->owner = bl; }

/* ---- symbolic helpers for cnexp ---- */

_Thread_local nm_arena *nm_gen_arena;
static ex *mk(ex_kind k, int op, ex *a, ex *b) {
    ex *e = nm_calloc(nm_gen_arena, 1, sizeof *e);
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
int nm_sym_is_num(const ex *e, double v) { return e && e->kind == EX_NUM && e->num == v; }

static ex *s_neg(ex *a) {
    if (!a) return NULL;
    if (nm_sym_is_num(a, 0)) return a;
    if (a->kind == EX_NEG) return a->a;
    return mk(EX_NEG, 0, a, NULL);
}
ex *nm_sym_bin(int op, ex *a, ex *b) {
    if (!a || !b) return NULL;
    switch (op) {
    case '+':
        if (nm_sym_is_num(a, 0)) return b;
        if (nm_sym_is_num(b, 0)) return a;
        break;
    case '-':
        if (nm_sym_is_num(b, 0)) return a;
        if (nm_sym_is_num(a, 0)) return s_neg(b);
        break;
    case '*':
        if (nm_sym_is_num(a, 0) || nm_sym_is_num(b, 0)) return num(0);
        if (nm_sym_is_num(a, 1)) return b;
        if (nm_sym_is_num(b, 1)) return a;
        break;
    case '/':
        if (nm_sym_is_num(a, 0)) return num(0);
        if (nm_sym_is_num(b, 1)) return a;
        break;
    }
    return mk(EX_BIN, op, a, b);
}

/* Does e depend on variable x (LOCALs are taken as constants, as nocmodl does)? */
int nm_sym_depends(const ex *e, const char *x) {
    switch (e->kind) {
    case EX_NUM:
    case EX_STR: return 0;
    case EX_VAR: return !strcmp(e->text, x);
    case EX_CALL:
        for (int i = 0; i < e->n_args; i++)
            if (nm_sym_depends(e->args[i], x)) return 1;
        return 0;
    case EX_NEG:
    case EX_NOT: return nm_sym_depends(e->a, x);
    case EX_BIN: return nm_sym_depends(e->a, x) || nm_sym_depends(e->b, x);
    }
    return 0;
}

/* d e / d x, simplified; *nonlinear set where x enters other than polynomially. */
ex *nm_sym_diff(ex *e, const char *x, int *nonlinear) {
    if (!nm_sym_depends(e, x)) return num(0);
    switch (e->kind) {
    case EX_VAR: return num(1);
    case EX_NEG: return s_neg(nm_sym_diff(e->a, x, nonlinear));
    case EX_BIN:
        switch (e->op) {
        case '+': return nm_sym_bin('+', nm_sym_diff(e->a, x, nonlinear), nm_sym_diff(e->b, x, nonlinear));
        case '-': return nm_sym_bin('-', nm_sym_diff(e->a, x, nonlinear), nm_sym_diff(e->b, x, nonlinear));
        case '*':
            if (!nm_sym_depends(e->a, x)) return nm_sym_bin('*', e->a, nm_sym_diff(e->b, x, nonlinear));
            if (!nm_sym_depends(e->b, x)) return nm_sym_bin('*', nm_sym_diff(e->a, x, nonlinear), e->b);
            *nonlinear = 1;
            return nm_sym_bin('+', nm_sym_bin('*', nm_sym_diff(e->a, x, nonlinear), e->b), nm_sym_bin('*', e->a, nm_sym_diff(e->b, x, nonlinear)));
        case '/':
            if (!nm_sym_depends(e->b, x)) return nm_sym_bin('/', nm_sym_diff(e->a, x, nonlinear), e->b);
            *nonlinear = 1;
            return num(0);
        default: *nonlinear = 1; return num(0);
        }
    default: *nonlinear = 1; return num(0);
    }
}
/* Are x and y the same expression (structurally)? */
int nm_sym_same(const ex *x, const ex *y) {
    if (x == y) return 1;
    if (!x || !y || x->kind != y->kind) return 0;
    switch (x->kind) {
    case EX_NUM: return x->num == y->num;
    case EX_VAR: return !strcmp(x->text, y->text) && (x->a ? y->a && nm_sym_same(x->a, y->a) : !y->a);
    case EX_STR: return !strcmp(x->text, y->text);
    case EX_NEG:
    case EX_NOT: return nm_sym_same(x->a, y->a);
    case EX_BIN: return x->op == y->op && nm_sym_same(x->a, y->a) && nm_sym_same(x->b, y->b);
    case EX_CALL:
        if (strcmp(x->text, y->text) || x->n_args != y->n_args) return 0;
        for (int i = 0; i < x->n_args; i++)
            if (!nm_sym_same(x->args[i], y->args[i])) return 0;
        return 1;
    }
    return 0;
}
int nm_sym_minus_one(const ex *e) { return nm_sym_is_num(e, -1) || (e && e->kind == EX_NEG && nm_sym_is_num(e->a, 1)); }

/* e with x replaced by 0, simplified */
ex *nm_sym_at_zero(ex *e, const char *x) {
    if (!nm_sym_depends(e, x)) return e;
    switch (e->kind) {
    case EX_VAR: return num(0);
    case EX_NEG: return s_neg(nm_sym_at_zero(e->a, x));
    case EX_BIN: return nm_sym_bin(e->op, nm_sym_at_zero(e->a, x), nm_sym_at_zero(e->b, x));
    default: return e; /* only reached for nonlinear equations, refused before */
    }
}

/* ---- expressions ---- */

/* cnexp's x' = a x + c of s: *a, *c, and whether the target -c/a is written as c's numerator
 * (emit_cnexp_target); 0, or -1 when not linear in x (or out of memory) */
int nm_cnexp_parts(const st *s, ex **a, ex **c, int *inf_form) {
    int nonlinear = 0;
    *a = nm_sym_diff(s->e, s->name, &nonlinear);
    if (!*a || nonlinear || nm_sym_depends(*a, s->name)) return -1;
    if (!(*c = nm_sym_at_zero(s->e, s->name))) return -1;
    *inf_form = (*c)->kind == EX_BIN && (*c)->op == '/' && (*a)->kind == EX_BIN && (*a)->op == '/' &&
                nm_sym_minus_one((*a)->a) && nm_sym_same((*c)->b, (*a)->b);
    return nm_sym_is_num(*a, 0) ? 1 : 0;
}

static void emit_index(gen *g, const ex *ix) {
    nm_put(g->b, "[(int)(");
    nm_gen_ex(g, ix);
    nm_put(g->b, ")]");
}

/* name, or its element ix (NULL: a scalar) */
void nm_gen_var(gen *g, const char *name, const ex *ix) {
    buf *b = g->b;
    int s = nm_scope_find(g, name);
    if (s >= 0) {
        if (g->scope_arg[s] == 2) { nm_put(b, "((double)I_%s)", name); return; } /* FROM's integer */
        nm_put(b, "%s_%s", g->scope_arg[s] ? "A" : "L", name);
        if (ix) emit_index(g, ix);
        return;
    }
    if (g->owner && g->owner->kind == B_FUNCTION && !strcmp(g->owner->name, name)) { nm_put(b, "ret_"); return; }
    const var *v = nm_find_var(g->m, name);
    if (!strcmp(name, "v") && !v) { nm_put(b, "v_"); return; } /* (a v that the file writes is a field) */
    if (!strcmp(name, "t")) { nm_put(b, g->t_ofs ? "(p->t + tofs_)" : "p->t"); return; }
    if (!strcmp(name, "dt")) { nm_put(b, "p->dt"); return; }
    if (!strcmp(name, "celsius")) { nm_put(b, "p->celsius"); return; }
    if (!strcmp(name, "area") || !strcmp(name, "diam")) { nm_put(b, "p->%s[node_]", name); return; } /* the node's */
    if (!v) {
        if (!strcmp(name, "FARADAY")) { nm_put(b, "96485.33212331001"); return; }
        nm_put(b, "0.0");
        return;
    }
    if (v->field >= 0) {
        if (ix && g->field_direct) {
            nm_put(b, "p->field[%d + (int)(", v->field);
            nm_gen_ex(g, ix);
            nm_put(b, ")][i_]");
        } else if (ix) {
            nm_put(b, "(*X%d_", v->field);
            emit_index(g, ix);
            nm_put(b, ")");
        } else if (g->field_direct) {
            nm_put(b, "p->field[%d][i_]", v->field);
        } else {
            nm_put(b, "(*F%d_)", v->field);
        }
        return;
    }
    if (v->global >= 0) {
        if (ix) {
            nm_put(b, "p->global[%d + (int)(", v->global);
            nm_gen_ex(g, ix);
            nm_put(b, ")]");
        } else {
            nm_put(b, "p->global[%d]", v->global);
        }
        return;
    }
    if (v->cls == V_POINTER) {
        if (g->field_direct) nm_put(b, "(*p->pointer[%d][i_])", v->pointer);
        else nm_put(b, "(*P%d_)", v->pointer);
        return;
    }
    if (v->cls == V_CONST) { /* a negative one parenthesised: `x / -k` is not C's `--` */
        nm_put(b, signbit(v->value) ? "(%.17g)" : "%.17g", v->value);
        return;
    }
    if (v->ion >= 0) {
        if (g->field_direct) nm_put(b, "p->ion[%d].%s[NSM_ION(%d)]", v->ion, nm_ion_array(v), v->ion);
        else nm_put(b, "(*I%d_)", ion_input_index(g->m, v));
        return;
    }
    nm_put(b, "0.0");
}

/* The pointers to the fields of each array, X<first field>_, for an index
 * known at run time (at the top of a function with the F pointers). */
void nm_put_arrays(gen *g, int indent) {
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (!v->size || v->field < 0) continue;
        nm_put(g->b, "%*sdouble *const X%d_[%d] = {", indent, "", v->field, v->size);
        for (int k = 0; k < v->size; k++) nm_put(g->b, "%sF%d_", k ? ", " : "", v->field + k);
        nm_put(g->b, "};\n%*s(void)X%d_;\n", indent, "", v->field);
    }
}

/* NEURON's per-instance copies (var.copy_in): v from the node's voltage
 * (v_: `what` 'v'), READ ion variables that the file writes from the ion
 * (`what` 'i'), at an entry point, as nocmodl's `v = _v; ena = _ion_ena;` */
void nm_load_copies(gen *g, int what) {
    for (int i = 0; i < g->m->n_vars; i++) {
        const var *v = &g->m->vars[i];
        if (!v->copy_in) continue;
        if (v->ion < 0 && what == 'v') nm_put(g->b, "    (*F%d_) = v_;\n", v->field);
        if (v->ion >= 0 && what == 'i')
            nm_put(g->b, "    (*F%d_) = p->ion[%d].%s[NSM_ION(%d)];\n", v->field, v->ion, nm_ion_array(v), v->ion);
    }
}

/* Whether e is a compile-time constant: numbers and CONSTANTs (not LOCALs of the same name) under
 * + - * / and negation; its value in *x. */
int nm_gen_const(const gen *g, const ex *e, double *x) {
    double a, b;
    switch (e->kind) {
    case EX_NUM: return *x = e->num, 1;
    case EX_NEG: return nm_gen_const(g, e->a, &a) ? (*x = -a, 1) : 0;
    case EX_VAR: {
        if (e->a || e->op == NM_C_NAME || nm_scope_find(g, e->text) >= 0) return 0;
        const var *v = nm_find_var(g->m, e->text);
        return v && v->cls == V_CONST ? (*x = v->value, 1) : 0;
    }
    case EX_BIN:
        if (!strchr("+-*/", e->op) || !nm_gen_const(g, e->a, &a) || !nm_gen_const(g, e->b, &b)) return 0;
        *x = e->op == '+' ? a + b : e->op == '-' ? a - b : e->op == '*' ? a * b : a / b;
        return 1;
    default: return 0;
    }
}

static void emit_num(gen *g, const ex *e) {
    if (e->text && strpbrk(e->text, ".eE")) nm_put(g->b, "%s", e->text);
    else if (e->text && e->text[0] != '-') nm_put(g->b, "%s.0", e->text);
    else nm_put(g->b, "(%.17g)", e->num);
}

void nm_gen_ex(gen *g, const ex *e) {
    buf *b = g->b;
    switch (e->kind) {
    case EX_NUM: emit_num(g, e); return;
    case EX_VAR:
        if (e->op == NM_C_NAME) nm_put(b, "%s", e->text); /* declared by the block's VERBATIM C */
        else nm_gen_var(g, e->text, e->a);
        return;
    case EX_STR: nm_put(b, "%s", e->text); return;
    case EX_NEG: nm_put(b, "(-"); nm_gen_ex(g, e->a); nm_put(b, ")"); return;
    case EX_NOT: nm_put(b, "((double)!("); nm_gen_ex(g, e->a); nm_put(b, "))"); return;
    case EX_CALL: {
        const block *bl = nm_find_block(g->m, e->text);
        int lead = bl != NULL; /* arguments before the file's */
        /* a PROCEDURE's value: 0, as nocmodl's procedures return 0 (one with VERBATIM C its C's int) */
        const int as_value = bl && bl->kind == B_PROCEDURE && !nm_int_procedure(bl) && !g->call_stmt;
        g->call_stmt = 0;
        if (bl) {
            if (as_value) nm_put(b, "((void)");
            nm_put(b, "nsm_%s_%c_%s(p, ", g->m->name, bl->kind == B_FUNCTION ? 'f' : 'p', e->text);
            nm_put_fargs(g);
            nm_put(b, "i_, node_, v_");
        } else if (nm_random_arity(e->text) >= 0 && g->m->random_field >= 0) {
            /* the instance's stream 0: its four hidden fields and the mechanism's key (nmodl_random.c) */
            nm_put(b, "nsm_rng_%s(", e->text);
            for (int k = 0; k < 4; k++)
                nm_put(b, g->field_direct ? "&p->field[%d][i_], " : "F%d_, ", g->m->random_field + k);
            nm_put(b, "%uu", nm_random_mech_key(g->m->name));
            lead = 1;
        } else if (nm_random_api(e->text, e->n_args) > 0 && g->m->random_field >= 0) {
            /* NEURON 9's random_*(r, ...): RANDOM r's nrnran123 stream, its four fields (nmodl_random.h) */
            const var *rv = nm_find_var(g->m, e->args[0]->text);
            const char *fn = e->text + 7; /* uniform, negexp, normal, setseq, setids */
            nm_put(b, "nsm_r123_%s%s(", fn, !strcmp(fn, "uniform") && e->n_args == 1 ? "0" : "");
            for (int k = 0; k < 4; k++)
                nm_put(b, g->field_direct ? "%s&p->field[%d][i_]" : "%sF%d_", k ? ", " : "",
                    g->m->random_field + 4 * rv->stream + k);
            for (int i = 1; i < e->n_args; i++) {
                nm_put(b, ", ");
                nm_gen_ex(g, e->args[i]);
            }
            if (e->n_args == 1 && !strcmp(fn, "negexp")) nm_put(b, ", 1.0");
            if (e->n_args == 1 && !strcmp(fn, "normal")) nm_put(b, ", 0.0, 1.0");
            nm_put(b, ")");
            return;
        }
        else if (!strcmp(e->text, "at_time")) {
            /* NEURON's at_time in a fixed step (cvodeobj.cpp): 1 when te -
             * 1e-11 lies in (t - dt, t]; it only stops CVODE there */
            nm_put(b, "nsm_at_time(p->t, p->dt, ");
        }
        else if (e->op == NM_WATCH_OP) { /* WATCH k: activated with its flag (mechanism.h) */
            nm_put(b, "ns_mech_watch(p, i_, %d, ", (int)e->num);
            nm_gen_ex(g, e->args[1]);
            /* and the condition's value now (the device's; the host's queue asks watch_value) */
            const ex *c = e->args[0];
            const int gt = c->op == '>' || c->op == 'g';
            nm_put(b, ", watch_rm_++ == 0, (");
            nm_gen_ex(g, gt ? c->a : c->b);
            nm_put(b, ") - (");
            nm_gen_ex(g, gt ? c->b : c->a);
            nm_put(b, "))");
            return;
        }
        else if (nm_event_call(e->text, NULL, NULL)) { /* mechanism.h's ns_mech_net_*: the loop's queue */
            nm_put(b, "ns_mech_%s(p, i_, ", e->text);
            if (!strcmp(e->text, "net_send")) { /* net_send(delay, flag): at t + delay */
                nm_put(b, "p->t + (");
                nm_gen_ex(g, e->args[0]);
                nm_put(b, "), ");
                nm_gen_ex(g, e->args[1]);
                nm_put(b, ", %s)", g->ev_ctx == NM_EV_RECEIVE ? "W_" : "(double *)0");
            } else {
                nm_gen_ex(g, e->args[0]);
                nm_put(b, ")");
            }
            return;
        }
        else if (!strcmp(e->text, "nrn_ghk") && g->m->verbatim) { /* declared by the file's C: NEURON's */
            nm_put(b, "nsv_ghk(p->celsius");
            lead = 1;
        }
        else if (!strcmp(e->text, "exprelr")) nm_put(b, "nsm_exprelr(");
        else if (!strcmp(e->text, "exp")) nm_put(b, "nsm_exp(");
        else if (!strcmp(e->text, "min") || !strcmp(e->text, "max")) nm_put(b, "f%s(", e->text); /* Arbor's */
        else nm_put(b, "%s(", e->text);
        for (int i = 0; i < e->n_args; i++) {
            if (i || lead) nm_put(b, ", ");
            nm_gen_ex(g, e->args[i]);
        }
        nm_put(b, as_value ? "), 0.0)" : ")");
        return;
    }
    case EX_BIN:
        if (e->op == '^') {
            double k;
            const int small = nm_gen_const(g, e->b, &k) && (k == 2.0 || k == 3.0 || k == 4.0);
            nm_put(b, small ? "NSM_POWK(" : "pow("); /* x^2, x^3, x^4: products on the GPU (NSM_POWK) */
            nm_gen_ex(g, e->a);
            nm_put(b, ", ");
            nm_gen_ex(g, e->b);
            nm_put(b, ")");
            return;
        }
        double c;
        /* times the reciprocal on the GPU (NSM_DIVC); a constant over a constant is the compilers' */
        if (e->op == '/' && nm_gen_const(g, e->b, &c) && !nm_gen_const(g, e->a, &c)) {
            nm_put(b, "NSM_DIVC(");
            nm_gen_ex(g, e->a);
            nm_put(b, ", ");
            nm_gen_ex(g, e->b);
            nm_put(b, ")");
            return;
        }
        char o[2];
        const char *op = ns_nmodl_c_op(e->op, o);
        int logical = strchr("<>lgen&|", e->op) != NULL;
        nm_put(b, logical ? "((double)(" : "(");
        nm_gen_ex(g, e->a);
        nm_put(b, " %s ", op);
        nm_gen_ex(g, e->b);
        nm_put(b, logical ? "))" : ")");
        return;
    }
}


ns_status ns_nmodl_emit(const ns_nmodl_t *m, ns_nmodl_target target, char **text) {
    if (!m || !text) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_emit: NULL argument");
    *text = NULL;
    buf b = {0};
    gen g = {0};
    nm_arena ar = {0};
    nm_gen_arena = &ar;
    g.m = m;
    g.b = &b;
    int r = 0;
    switch (target) {
    case NS_NMODL_HEADER: r = nm_emit_header(&g); break;
    case NS_NMODL_C:
        nm_put(&b, "/* Generated by neurosolve's NMODL translator from %s: do not edit. */\n#include \"%s.h\"\n\n", m->file,
            m->name);
        nm_emit_desc_data(&g);
        r = nm_emit_c(&g);
        if (!r) {
            char why[400];
            r = nm_diff_emit(&g, why, sizeof why, 0);
            if (r >= 0) nm_emit_desc(&g, r ? why : NULL);
            r = r < 0;
        }
        break;
    case NS_NMODL_CUDA: nm_emit_cuda(&g); break;
    default: free(b.s); return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_nmodl_emit: unknown target %d", (int)target);
    }
    free(g.scope);
    free(g.scope_arg);
    nm_arena_free(&ar);
    nm_gen_arena = NULL;
    if (r || g.status) { free(b.s); return g.status ? g.status : ns_fail(NS_ERR_INTERNAL, "code generation failed"); }
    if (b.oom || !b.s) { free(b.s); return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory generating %s", m->name); }
    *text = b.s;
    return NS_OK;
}
