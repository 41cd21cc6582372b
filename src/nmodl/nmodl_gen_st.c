/* The NMODL back end's statements (nmodl_gen.h): assignments, calls, loops, SOLVE,
 * equations, VERBATIM C with NEURON's names defined around it, and the per-instance
 * functions' signatures. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_gen.h"

/* ---- statements ---- */

static int state_index(const block *d, const char *name, char **order, int n) {
    (void)d;
    for (int i = 0; i < n; i++)
        if (!strcmp(order[i], name)) return i;
    return -1;
}
/* the states of a DERIVATIVE block, in the order of their equations */
int nm_collect_states(const stlist *l, char ***order, int *n) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_DERIV) {
            if (state_index(NULL, s->name, *order, *n) >= 0) continue;
            char **o = realloc(*order, (size_t)(*n + 1) * sizeof *o);
            if (!o) return -1;
            *order = o;
            o[(*n)++] = s->name;
        } else if (s->kind == ST_IF) {
            if (nm_collect_states(s->then_, order, n)) return -1;
            if (s->else_ && nm_collect_states(s->else_, order, n)) return -1;
        }
    }
    return 0;
}



/* The GPU's target -c/a with the factors and denominators that c and a share cancelled (Ca_LVAst's
 * -((inf qt) / tau) / ((-1 qt) / tau) is inf; NaTa_t's -(qt alpha) / (qt (-rate)) is alpha / rate) and
 * a = +-1 / D a product by D (CaDynamics_E2's -c / -(1 / decay) is c decay), written
 * as NSM_GPU(its form, the host's) where any cancel; 0 where none does (docs/mechanisms.md, "The GPU's
 * arithmetic") */
static int emit_gpu_target(gen *g, const ex *a, const ex *c) {
    int cancelled = 0, neg = -1; /* the target is neg * c / a */
    for (int more = 1; more;) {
        more = 0;
        if (a->kind == EX_NEG) a = a->a, neg = -neg, more = 1;
        else if (c->kind == EX_NEG) c = c->a, neg = -neg, more = 1;
        else if (a->kind == EX_BIN && c->kind == EX_BIN && a->op == c->op && (a->op == '/' || a->op == '*')) {
            if (nm_sym_same(a->b, c->b)) a = a->a, c = c->a, more = cancelled = 1;
            else if (a->op == '*' && nm_sym_same(a->a, c->a)) a = a->b, c = c->b, more = cancelled = 1;
        }
    }
    const ex *times = NULL; /* a = +-1 / D: the target is a product by D */
    if (a->kind == EX_BIN && a->op == '/' && (nm_sym_is_num(a->a, 1) || nm_sym_minus_one(a->a))) {
        if (nm_sym_minus_one(a->a)) neg = -neg;
        times = a->b;
    }
    if (!cancelled && !times) return 0;
    buf *b = g->b;
    double k;
    nm_put(b, "NSM_GPU(");
    if (times) {
        nm_put(b, neg < 0 ? "(-(" : "((");
        nm_gen_ex(g, c);
        nm_put(b, ") * ");
        nm_gen_ex(g, times);
        nm_put(b, ")");
    } else if (nm_sym_is_num(a, 1) || nm_sym_minus_one(a)) {
        nm_put(b, nm_sym_minus_one(a) == (neg < 0) ? "(" : "(-(");
        nm_gen_ex(g, c);
        nm_put(b, nm_sym_minus_one(a) == (neg < 0) ? ")" : "))");
    } else {
        nm_put(b, nm_gen_const(g, a, &k) ? "NSM_DIVC(%s(" : "(%s(", neg < 0 ? "-" : "");
        nm_gen_ex(g, c);
        nm_put(b, nm_gen_const(g, a, &k) ? "), " : ") / ");
        nm_gen_ex(g, a);
        nm_put(b, ")");
    }
    nm_put(b, ", ");
    return 1;
}

/* cnexp's target of x' = a x + c(x = 0): -c/a, nocmodl's form (on the GPU emit_gpu_target's) */
static void emit_cnexp_target(gen *g, const ex *a, const ex *c) {
    buf *b = g->b;
    if (c->kind == EX_BIN && c->op == '/' && a->kind == EX_BIN && a->op == '/' && nm_sym_minus_one(a->a) &&
        nm_sym_same(c->b, a->b)) {
        /* x' = (inf - x)/tau: the target -(inf/tau)/(-1/tau) is inf but for
         * rounding, so it is inf (two divisions fewer per state: the
         * hand-written hh's gates, docs/mechanisms.md) */
        nm_put(b, "(");
        nm_gen_ex(g, c->a);
        nm_put(b, ")");
    } else {
        const int gpu = emit_gpu_target(g, a, c);
        nm_put(b, "-(");
        nm_gen_ex(g, c);
        nm_put(b, ") / (");
        nm_gen_ex(g, a);
        nm_put(b, gpu ? "))" : ")");
    }
}

/* ~ e = e2 of the LINEAR or NONLINEAR block g->alg: NONLINEAR's residual f_[r] = e - e2 (scopmath's
 * newton solves f = 0); LINEAR's row r of J_ x = r_: J_[r][c] = d(e - e2)/d x_c, which must not
 * depend on an unknown, and r_[r] = -(e - e2) at x = 0 (nocmodl's coefficients, by differentiation).
 * The row is numbered when the block runs, as nocmodl's _counte: each '~' the next (e_), '~+' the
 * same; an equation inside an if or a loop counts where it runs. Rows past the unknowns (a loop run
 * more often than its equations were counted, '~+' before any '~') go to row N_, which nothing reads:
 * where nocmodl's C writes past its arrays, the system here stays short of rows, singular. */
static int emit_equation(gen *g, const st *s, int indent) {
    buf *b = g->b;
    const block *bl = g->alg;
    const int add = s->react == '+'; /* ~+: the terms added to the previous equation's (nocmodl's _counte) */
    const char *r = add ? "e_ < 0 ? N_ : e_" : "e_";
    const char *op = add ? "+=" : "=";
    if (!add) nm_put(b, "%*se_ = e_ < N_ ? e_ + 1 : N_;\n", indent, "");
    ex *f = nm_sym_bin('-', s->e, s->e2);
    if (!f) return nm_gfail(g, s->line, "out of memory");
    if (bl->alg == 'N') {
        nm_put(b, "%*sf_[%s] %s ", indent, "", r, op);
        nm_gen_ex(g, f);
        nm_put(b, ";\n");
        return 0;
    }
    ex *z = f;
    for (int c = 0; c < bl->n_unknowns; c++) {
        int nonlinear = 0;
        ex *a = nm_sym_diff(f, bl->unknowns[c], &nonlinear);
        if (!a) return nm_gfail(g, s->line, "out of memory");
        for (int k = 0; k < bl->n_unknowns && !nonlinear; k++) nonlinear = nm_sym_depends(a, bl->unknowns[k]);
        if (nonlinear)
            return nm_gfail(g, s->line, "LINEAR %s: the equation is not linear in %s (use NONLINEAR)", bl->name,
                         bl->unknowns[c]);
        nm_put(b, "%*sJ_[%s][%d] %s ", indent, "", r, c, op);
        nm_gen_ex(g, a);
        nm_put(b, ";\n");
        if (!(z = nm_sym_at_zero(z, bl->unknowns[c]))) return nm_gfail(g, s->line, "out of memory");
    }
    nm_put(b, "%*sr_[%s] %s -(", indent, "", r, op);
    nm_gen_ex(g, z);
    nm_put(b, ");\n");
    return 0;
}

/* a call statement: FOR_NETCONS over the connections, else the call (printf on the host only) */
static int emit_call_st(gen *g, const st *s, int indent) {
    buf *b = g->b;
    if (s->e->op == NM_NETCONS_OP) { /* each connection's weight vector, copied in and back */
        nm_put(b, "%*sfor (int q_ = 0;; ++q_) {\n%*s    double *WN_ = ns_mech_netcon(p, i_, q_);\n"
               "%*s    if (!WN_) break;\n", indent, "", indent, "", indent, "");
        const int base = g->n_scope;
        for (int k = 0; k < s->e->n_args; k++) {
            nm_put(b, "%*s    double A_%s = WN_[%d];\n", indent, "", s->e->args[k]->text, k);
            if (nm_gen_scope_push(g, s->e->args[k]->text, 1)) return nm_gfail(g, s->line, "out of memory");
        }
        const int r = nm_emit_list(g, s->then_, indent + 4);
        g->n_scope = base;
        if (r) return -1;
        for (int k = 0; k < s->e->n_args; k++)
            nm_put(b, "%*s    WN_[%d] = A_%s;\n", indent, "", k, s->e->args[k]->text);
        nm_put(b, "%*s}\n", indent, "");
        return 0;
    }
    const block *bl = nm_find_block(g->m, s->e->text);
    /* printf: the host's, as NEURON's; nothing on the GPU */
    const int host = !bl && !strcmp(s->e->text, "printf");
    if (host) nm_put(b, "#ifndef __CUDA_ARCH__\n");
    nm_put(b, "%*s", indent, "");
    if (!bl || bl->kind == B_FUNCTION) nm_put(b, "(void)");
    g->call_stmt = 1;
    nm_gen_ex(g, s->e);
    nm_put(b, ";\n");
    if (host) nm_put(b, "#endif\n");
    return 0;
}

/* x' = e: derivimplicit's f_[k], euler's D_[k], else cnexp's update (or its first stage) */
static int emit_deriv_st(gen *g, const st *s, int indent) {
    buf *b = g->b;
    int k = state_index(NULL, s->name, g->states, g->n_states);
    if (g->mode == M_DERIVIMPLICIT) {
        nm_put(b, "%*sf_[%d] = ", indent, "", k);
        nm_gen_ex(g, s->e);
        nm_put(b, ";\n");
        return 0;
    }
    if (g->mode == M_EULER) {
        nm_put(b, "%*sD_[%d] = ", indent, "", k);
        nm_gen_ex(g, s->e);
        nm_put(b, ";\n");
        return 0;
    }
    /* cnexp: x' = a x + b  ->  x += (1 - exp(dt a)) (-b/a - x), nocmodl's form */
    int nonlinear = 0;
    ex *a = nm_sym_diff(s->e, s->name, &nonlinear);
    if (!a) return nm_gfail(g, s->line, "out of memory");
    if (nonlinear || nm_sym_depends(a, s->name))
        return nm_gfail(g, s->line, "%s' is not linear in %s: METHOD cnexp needs a linear equation (use derivimplicit)",
                     s->name, s->name);
    ex *c = nm_sym_at_zero(s->e, s->name);
    if (!c) return nm_gfail(g, s->line, "out of memory");
    if (g->staged) {
        /* the first stage (cnexp_staged): the exponent and the target;
         * staged 2: a = C / X's denominator X instead of the exponent
         * (one_division, emit_one_division) */
        if (g->staged == 2) {
            nm_put(b, "%*sconst double x%d_ = ", indent, "", k);
            nm_gen_ex(g, a->b);
        } else {
            nm_put(b, "%*s*a%d_ = p->dt * (", indent, "", k);
            nm_gen_ex(g, a);
            nm_put(b, ")");
        }
        nm_put(b, ";\n%*s*t%d_ = ", indent, "", k);
        emit_cnexp_target(g, a, c);
        nm_put(b, ";\n");
        return 0;
    }
    nm_put(b, "%*s", indent, "");
    nm_gen_var(g, s->name, NULL);
    nm_put(b, " = ");
    nm_gen_var(g, s->name, NULL);
    if (nm_sym_is_num(a, 0)) {
        nm_put(b, " + p->dt * (");
        nm_gen_ex(g, c);
        nm_put(b, ");\n");
    } else {
        nm_put(b, " + (1. - nsm_exp(p->dt * (");
        nm_gen_ex(g, a);
        nm_put(b, "))) * (");
        emit_cnexp_target(g, a, c);
        nm_put(b, " - ");
        nm_gen_var(g, s->name, NULL);
        nm_put(b, ");\n");
    }
    return 0;
}

static int emit_st(gen *g, const st *s, int indent) {
    buf *b = g->b;
    switch (s->kind) {
    case ST_ASSIGN:
        nm_put(b, "%*s", indent, "");
        nm_gen_var(g, s->name, s->index);
        nm_put(b, " = ");
        nm_gen_ex(g, s->e);
        nm_put(b, ";\n");
        return 0;
    case ST_CALL: return emit_call_st(g, s, indent);
    case ST_WHILE:
        nm_put(b, "%*swhile (", indent, "");
        nm_gen_ex(g, s->e);
        nm_put(b, ") {\n");
        if (nm_emit_list(g, s->then_, indent + 4)) return -1;
        nm_put(b, "%*s}\n", indent, "");
        return 0;
    case ST_FROM: {
        /* nocmodl's loop: an int from the first bound, compared with the second
         * (evaluated each time) by <= (>= for a negative step) */
        nm_put(b, "%*sfor (int I_%s = (int)(", indent, "", s->name);
        nm_gen_ex(g, s->e);
        nm_put(b, "); I_%s %s (", s->name, s->method < 0 ? ">=" : "<=");
        nm_gen_ex(g, s->to);
        nm_put(b, "); I_%s += %d) {\n", s->name, s->method);
        if (nm_gen_scope_push(g, s->name, 2)) return nm_gfail(g, s->line, "out of memory");
        const int r = nm_emit_list(g, s->then_, indent + 4);
        g->n_scope--;
        if (r) return -1;
        nm_put(b, "%*s}\n", indent, "");
        return 0;
    }
    case ST_VERBATIM: return nm_emit_verbatim(g, s);
    case ST_RETURN: /* VERBATIM return 0; ENDVERBATIM */
        nm_put(b, "%*sreturn%s;\n", indent, "", g->owner && g->owner->kind == B_FUNCTION ? " 0.0" : "");
        return 0;
    case ST_IF:
        nm_put(b, "%*sif (", indent, "");
        nm_gen_ex(g, s->e);
        nm_put(b, ") {\n");
        if (nm_emit_list(g, s->then_, indent + 4)) return -1;
        if (s->else_) {
            nm_put(b, "%*s} else {\n", indent, "");
            if (nm_emit_list(g, s->else_, indent + 4)) return -1;
        }
        nm_put(b, "%*s}\n", indent, "");
        return 0;
    case ST_SOLVE: /* BREAKPOINT's: state(); INITIAL's STEADYSTATE: here; LINEAR, NONLINEAR: here */
        if (nm_find_block(g->m, s->name)->alg) {
            if (s->here == 3 && !g->solve_here) return 0; /* BREAKPOINT's: state() calls it */
            nm_put(b, "%*s", indent, "");
            nm_put_call(g, "p", s->name, "");
            nm_put(b, ");\n");
            return 0;
        }
        if (s->here == 1 || s->here == 4) { /* a DERIVATIVE's step outside BREAKPOINT; a PROCEDURE in a hook */
            nm_put(b, "%*s", indent, "");
            nm_put_call(g, s->here == 1 ? "d" : "p", s->name, "");
            nm_put(b, ");\n");
            return 0;
        }
        if (s->here == 2) { /* its STEADYSTATE: the step with dt = 1e-9 (scopmath's _ss_derivimplicit_thread) */
            nm_put(b, "%*s{\n%*sns_mech_ppack q_ = *p;\n", indent, "", indent + 4, "");
            nm_put(b, "%*sq_.dt = 1e-9;\n%*snsm_%s_d_%s(&q_, ", indent + 4, "", indent + 4, "", g->m->name, s->name);
            nm_put_fargs(g);
            nm_put(b, "i_, node_, v_);\n%*s}\n", indent, "");
            return 0;
        }
        if (g->solve_here && !s->steady) {
            const block *bl = nm_find_block(g->m, s->name);
            nm_put(b, "%*s", indent, "");
            nm_put_call(g, bl->kind == B_PROCEDURE ? "p" : "d", s->name, "");
            nm_put(b, ");\n");
        }
        if (s->steady) {
            nm_put(b, "%*s", indent, "");
            nm_put_call(g, "ss", s->name, "");
            nm_put(b, ");\n");
        }
        return 0;
    case ST_REACTION:
    case ST_CONSERVE:
    case ST_LDIFUS:
    case ST_COMPARTMENT: return nm_gfail(g, s->line, "a KINETIC statement outside a KINETIC block");
    case ST_EQUATION: return emit_equation(g, s, indent);
    case ST_DERIV: return emit_deriv_st(g, s, indent);
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
        nm_put(b, "#define %s ", nm);
        if (proto) nm_put_sig(g);
        else {
            nm_put(b, "p, ");
            nm_put_fargs(g);
            nm_put(b, "i_, node_, v_");
        }
        nm_put(b, "%s\n", strstr(nm, "comma") ? "," : "");
        return;
    }
    if (!strcmp(nm, "cvode_active_") && !g->top) { /* fixed steps: 0, a constant on the device too */
        nm_put(b, "#define cvode_active_ 0\n");
        return;
    }
    if (g->ctor && (!strcmp(nm, "ifarg") || !strcmp(nm, "getarg"))) { /* the constructor's: none (nmodl_verbatim.h) */
        if (!strcmp(nm, "ifarg")) nm_put(b, "#define ifarg(k) nsv_ctor_ifarg(%d, (int)(k))\n", m->point && !m->artificial);
        else nm_put(b, "#define getarg(k) nsv_ctor_getarg(__FILE__, __LINE__, (int)(k))\n");
        return;
    }
    if (!strcmp(nm, "_nt") || !strcmp(nm, "nrn_threads")) { /* `_nt != nrn_threads`: no other thread's data here */
        nm_put(b, "#define %s (p)\n", nm);
        return;
    }
    if (id->call && m->random_field >= 0 && nm_random_arity(nm) >= 0) { /* the instance's stream 0, as in NMODL */
        nm_put(b, "#define %s(...) nsm_rng_%s(", nm, nm);
        for (int k = 0; k < 4; k++) nm_put(b, "F%d_, ", m->random_field + k);
        nm_put(b, "%uu%s)\n", nm_random_mech_key(m->name), nm_random_arity(nm) ? ", __VA_ARGS__" : "");
        return;
    }
    if (id->call && !g->top && !strcmp(nm, "nrn_ghk")) { /* NEURON's, at the simulation's celsius */
        nm_put(b, "#define nrn_ghk(...) nsv_ghk(p->celsius, __VA_ARGS__)\n");
        return;
    }
    const block *k = nm_find_block(m, nm);
    if (k) {
        if ((k->kind != B_FUNCTION && k->kind != B_PROCEDURE) || k->hoc_only) return;
        if (!id->call || g->top || nm_c_call_style(id) != 2) { /* nmodl_verbatim.c refuses both ways */
            nm_put(b, "#define %s nsm_%s_%c_%s\n", nm, m->name, k->kind == B_FUNCTION ? 'f' : 'p', nm);
            return;
        }
        /* f(x) as nocmodl writes a file that is not THREADSAFE: the instance's arguments added */
        nm_put(b, "#define %s(", nm);
        for (int a = 0; a < k->n_args; a++) nm_put(b, "%sa%d_", a ? ", " : "", a);
        nm_put(b, ") nsm_%s_%c_%s(p, ", m->name, k->kind == B_FUNCTION ? 'f' : 'p', nm);
        nm_put_fargs(g);
        nm_put(b, "i_, node_, v_");
        for (int a = 0; a < k->n_args; a++) nm_put(b, ", a%d_", a);
        nm_put(b, ")\n");
        return;
    }
    if (!strncmp(nm, "_l", 2) && nm[2]) { /* an argument or LOCAL of the block; the FUNCTION's value */
        const int s = nm_scope_find(g, nm + 2);
        if (s >= 0 && g->scope_arg[s] == 2) { /* a FROM loop's counter: nocmodl's `int _lj` */
            nm_put(b, "#define %s I_%s\n", nm, nm + 2);
        } else if (s >= 0 || (g->owner && g->owner->kind == B_FUNCTION && !strcmp(g->owner->name, nm + 2))) {
            nm_put(b, "#define %s ", nm);
            nm_gen_var(g, nm + 2, NULL);
            nm_put(b, "\n");
        }
        return;
    }
    if (!strncmp(nm, "_p_", 3)) { /* a POINTER's address; BBCOREPOINTER: a void * kept in its field */
        const var *v = nm_find_var(m, nm + 3);
        if (v && v->cls == V_POINTER) nm_put(b, "#define %s (P%d_)\n", nm, v->pointer);
        else if (v && v->field >= 0 && !v->size) nm_put(b, "#define %s (*(void **)(F%d_))\n", nm, v->field);
        return;
    }
    if (!strncmp(nm, "_ion_", 5)) { /* the ion's value at the node (not the mechanism's copy) */
        const var *v = nm_find_var(m, nm + 5);
        if (v && v->ion >= 0)
            nm_put(b, "#define %s (p->ion[%d].%s[NSM_ION(%d)])\n", nm, v->ion, nm_ion_array(v), v->ion);
        return;
    }
    const var *v = nm_find_var(m, nm);
    if (v && !strncmp(nm, "__ran", 5)) return;
    if (v || !strcmp(nm, "v") || !strcmp(nm, "t") || !strcmp(nm, "dt") || !strcmp(nm, "celsius")) {
        nm_put(b, "#define %s ", nm);
        if (v && v->size && v->global >= 0) {
            nm_put(b, "(p->global + %d)\n", v->global); /* a GLOBAL array: its first element's address, as NEURON's */
            return;
        }
        if (v && v->size) { /* an instance's array: a copy (in, and out after the C: nm_emit_verbatim) */
            nm_put(b, "nsvA%d_%zu\ndouble nsvA%d_%zu[%d];\nfor (int k_ = 0; k_ < %d; ++k_) nsvA%d_%zu[k_] = *X%d_[k_];\n",
                v->field, uid, v->field, uid, v->size, v->size, v->field, uid, v->field);
            return;
        }
        /* the mechanism's variable, whatever the NMODL scope (C's x is NEURON's x, _lx the LOCAL) */
        const int n_scope = g->n_scope;
        const block *owner = g->owner;
        g->n_scope = 0;
        g->owner = NULL;
        nm_gen_var(g, nm, NULL);
        g->n_scope = n_scope;
        g->owner = owner;
        nm_put(b, "\n");
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
            nm_put(b, "%s", by);
            i += ln;
        } else {
            nm_put(b, "%c", tail[i++]);
        }
    }
    free(tail);
}

/* the #define's of the names that C text c uses (done: those written so far), and of those that the
 * file's C macros it uses name (`#define PRECAST ((PreL *)link)`: link too), depth macros deep */
static int define_names(gen *g, const st *s, const char *c, size_t uid, char ***done, int *n_done, int depth) {
    buf *b = g->b;
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id)) {
        char nm[128];
        if (id.member || id.n >= sizeof nm || nm_c_declares(c, &id)) continue;
        memcpy(nm, id.s, id.n);
        nm[id.n] = 0;
        if (depth < 8) {
            const char *body = NULL;
            for (int i = 0; !body && g->m->verbatim_top && i < g->m->verbatim_top->n; i++)
                body = nm_c_macro(g->m->verbatim_top->s[i]->name, nm, nm_gen_arena);
            if (!body) body = nm_c_macro(s->name, nm, nm_gen_arena);
            if (body && define_names(g, s, body, uid, done, n_done, depth + 1)) return -1;
        }
        int seen = 0;
        for (int k = 0; k < *n_done && !seen; k++) seen = !strcmp((*done)[k], nm);
        if (seen) continue;
        const size_t before = b->n;
        define_name(g, nm, &id, uid);
        if (b->oom) break;
        if (b->n == before) continue;
        char **d = nm_realloc(nm_gen_arena, *done, (size_t)(*n_done + 1) * sizeof *d);
        char *cp = nm_calloc(nm_gen_arena, id.n + 1, 1);
        if (!d || !cp) return nm_gfail(g, s->line, "out of memory");
        memcpy(cp, nm, id.n + 1);
        *done = d;
        d[(*n_done)++] = cp;
    }
    return 0;
}

/* A VERBATIM block: its C as written (with #line, so that the compiler's
 * messages name the .mod file and line), NEURON's names #define'd around
 * it and #undef'd after it. */
int nm_emit_verbatim(gen *g, const st *s) {
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
    if (own_p) nm_put(b, "ns_mech_ppack *const %s = p;\n", alias);
    const size_t from = b->n;
    if (define_names(g, s, s->name, uid, &done, &n_done, g->top ? 8 : 0)) return -1;
    if (own_p) rename_tail(b, from, "p", alias);
    const int line_ok = !strpbrk(s->file, "\"\\\n");
    if (line_ok) nm_put(b, "#line %d \"%s\"\n", s->file_line, s->file);
    const char *text = nm_c_unprototype(g->m, s->name, nm_gen_arena);
    if (!text) return nm_gfail(g, s->line, "out of memory");
    nm_put(b, "%s\n", text);
    if (line_ok && !b->oom) {
        for (; g->nl_at < b->n; g->nl_at++) g->nl += b->s[g->nl_at] == '\n';
        nm_put(b, "#line %d \"%s.h\"\n", g->nl + 2, g->m->name);
    }
    for (int k = 0; k < n_done; k++) {
        const var *v = nm_find_var(g->m, done[k]);
        if (v && v->size && v->field >= 0)
            nm_put(b, "for (int k_ = 0; k_ < %d; ++k_) *X%d_[k_] = nsvA%d_%zu[k_];\n", v->size, v->field, v->field, uid);
        nm_put(b, "#undef %s\n", done[k]);
    }
    return 0;
}

/* the LOCALs of l, then its statements from the from-th */
int nm_emit_list_from(gen *g, const stlist *l, int indent, int from) {
    int base = g->n_scope;
    for (int i = 0; i < l->n_locals; i++) {
        if (l->local_size && l->local_size[i])
            nm_put(g->b, "%*sdouble L_%s[%d] = {0.0};\n", indent, "", l->locals[i], l->local_size[i]);
        else
            nm_put(g->b, "%*sdouble L_%s = 0.0;\n", indent, "", l->locals[i]);
        if (nm_gen_scope_push(g, l->locals[i], 0)) return nm_gfail(g, 0, "out of memory");
    }
    for (int i = from; i < l->n; i++)
        if (emit_st(g, l->s[i], indent)) return -1;
    g->n_scope = base;
    return 0;
}
int nm_emit_list(gen *g, const stlist *l, int indent) { return nm_emit_list_from(g, l, indent, 0); }

/* A function's body: with VERBATIM C, in a C block of its own, so that the C may declare
 * names the function's parameters have (`double p;`: a parameter's scope is the
 * function's outermost block) */
int nm_emit_body(gen *g, const stlist *l, int indent) {
    const int own = nm_verbatim_in(l);
    if (own) nm_put(g->b, "%*s{\n", indent, "");
    if (nm_emit_list(g, l, indent)) return -1;
    if (own) nm_put(g->b, "%*s}\n", indent, "");
    return 0;
}

/* the parameters of every per-instance function: the ppack, the fields'
 * pointers, the instance, its node and v */
void nm_put_sig(gen *g) {
    nm_put(g->b, "ns_mech_ppack *p, ");
    nm_put_fparams(g);
    nm_put(g->b, "int i_, int node_, double v_");
}
/* a call of one, inside another: nsm_MECH_KIND[_BLOCK][SUFFIX](arguments */
void nm_put_call(gen *g, const char *kind, const char *bname, const char *suffix) {
    nm_put(g->b, "nsm_%s_%s%s%s%s(p, ", g->m->name, kind, bname ? "_" : "", bname ? bname : "", suffix);
    nm_put_fargs(g);
    nm_put(g->b, "i_, node_, v_");
}

/* A PROCEDURE with VERBATIM C returns an int, as nocmodl's do (the C's `return 0;`) */
int nm_int_procedure(const block *bl) { return bl->kind == B_PROCEDURE && nm_verbatim_in(bl->body); }

void nm_emit_proto(gen *g, const block *bl, const char *suffix) {
    nm_put(g->b, "NS_MECH_FN %s nsm_%s_%c_%s%s(", bl->kind == B_FUNCTION ? "double" : nm_int_procedure(bl) ? "int" : "void", g->m->name,
        bl->kind == B_FUNCTION ? 'f' : 'p', bl->name, suffix);
    nm_put_sig(g);
    for (int k = 0; k < bl->n_args; k++) nm_put(g->b, ", double A_%s", bl->args[k]);
    nm_put(g->b, ")");
}
