/* The mechanisms' derivatives (ns_mech_desc.vjp_init, vjp_current,
 * vjp_state; docs/gradients.md): forward-mode dual numbers written from the
 * same AST as the forward C (nmodl_gen.c). Every value is a dual
 * nsd_NAME {v, d[K]}: v computed by the same operations in the same order
 * as the forward code (so bit for bit the same), d its derivatives with
 * respect to the K inputs of an instance: v at its node, the instance's
 * fields, the GLOBALs, the ion values it reads (ABI 8: 4 rows per USEION
 * after the GLOBALs'; a field loaded from an ion stands for the ion's
 * value). Each arithmetic operation and math call is an inline
 * function on duals; each FUNCTION and PROCEDURE gets a dual twin; a TABLE
 * lookup is differentiated as the interpolation it is (the table's entries
 * depend on celsius and DEPEND, constants here). One pass over a block gives
 * its whole Jacobian, which the entry point applies to the outputs'
 * adjoints at once (the vector-Jacobian product, never stored). What has no derivative code yet is refused with its
 * FILE:LINE and construct (ns_mech_desc.vjp_why_not): VERBATIM C, KINETIC,
 * LINEAR and NONLINEAR blocks, STEADYSTATE, METHODs other than cnexp, arrays,
 * POINTERs, random numbers, and in NET_RECEIVE self events, net_event,
 * net_move, WATCH, FOR_NETCONS, its INITIAL and per-connection state. A point
 * process's NET_RECEIVE with a connection's weight gets its own product
 * (nsm_NAME_vjp_net_receive, ABI 8: the weight its last lane). The CUDA file gets a density
 * mechanism's INITIAL, current() and state() products too: the same code as device functions, a
 * kernel of a thread per instance for each (nsm_NAME_cuda_vjp_PHASE, ABI 10). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

typedef struct dx {
    struct gen *g;
    const struct ns_nmodl *m;
    const char *M; /* the mechanism's name */
    char *why;
    size_t n_why;
    int failed;
    int solve_here; /* a BREAKPOINT without currents: its SOLVEs in state() */
    int line;       /* of the statement being written */
    const block *owner; /* the FUNCTION being written: its name is its value (ret_) */
    char **di;          /* writing a derivimplicit block's derivatives: its states (f_[k] = k's) */
    int n_di;
    int call_stmt;      /* the call being written is a statement (a PROCEDURE's value: refused) */
    int K;              /* the lanes of the duals being written (type d->M) */
    const char *mask;   /* writing an IF's branch as selects: its condition's variable (else NULL) */
    int n_mask;         /* the IFs written as selects so far (their variables' names) */
    int gpu;            /* writing the CUDA file's products (nm_diff_emit) */
} dx;

#define P(...) nm_gen_put(d->g, __VA_ARGS__)

static int dfail(dx *d, int line, const char *fmt, ...) NS_PRINTF_LIKE(3, 4);
static int dfail(dx *d, int line, const char *fmt, ...) {
    if (d->failed) return -1;
    d->failed = 1;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(d->why, d->n_why, "%s:%d: no derivative code for %s", d->m->file, line ? line : d->line, msg);
    return -1;
}

static void put_runtime(dx *d, int K) {
    P("\n/* ---- derivatives (nmodl_diff.c): dual numbers, a lane for each input a phase reads (of v, the %d "
      "fields, the %d GLOBALs), %d for the phases that read that many ---- */\nenum { NSD_%s_K = %d };\n",
      d->m->n_fields, d->m->n_globals, K, d->M, K);
    nm_diff_put_runtime(d->g, d->M, K, d->gpu);
}

static int is_ion_input(const var *v) { return v->ion >= 0 && v->field < 0; }
static const char *ion_array(const var *v) {
    return v->ion_what == 'e' ? "e" : v->ion_what == 'i' ? "i" : v->ion_what == 'c' ? "ci" : "co";
}

/* the dual functions' parameters and arguments: the ppack, the fields'
 * duals, the ion inputs (doubles), the GLOBALs' duals, the instance, its
 * node, v */
static void put_sig(dx *d) {
    P("ns_mech_ppack *p, ");
    for (int k = 0; k < d->m->n_fields; k++) P("nsd_%s *F%d_, ", d->M, k);
    for (int i = 0, k = 0; i < d->m->n_vars; i++)
        if (is_ion_input(&d->m->vars[i])) P("nsd_%s *I%d_, ", d->M, k++);
    P("nsd_%s *G_, int i_, int node_, nsd_%s v_", d->M, d->M);
}
static void put_args(dx *d) {
    P("p, ");
    for (int k = 0; k < d->m->n_fields; k++) P("F%d_, ", k);
    for (int i = 0, k = 0; i < d->m->n_vars; i++)
        if (is_ion_input(&d->m->vars[i])) P("I%d_, ", k++);
    P("G_, i_, node_, ");
}

static void dex(dx *d, const ex *e);

/* a variable's dual: LOCALs, arguments, fields, v, the ion inputs (*I<k>_)
 * and a FUNCTION's value are duals; GLOBALs are G_[k]; the rest (t, dt,
 * celsius, constants, FROM's integer) constants */
static void dvar(dx *d, int line, const char *name, const ex *ix) {
    if (ix) {
        dfail(d, line, "an array element (%s)", name);
        return;
    }
    const int sc = nm_gen_scope(d->g, name);
    const var *v = nm_find_var(d->m, name);
    const int ret = sc < 0 && d->owner && d->owner->kind == B_FUNCTION && !strcmp(d->owner->name, name);
    if (sc == 0 || sc == 1 || ret ||
        (sc < 0 && ((!v && !strcmp(name, "v")) || (v && (v->field >= 0 || is_ion_input(v)))))) {
        nm_gen_var(d->g, name, NULL);
        return;
    }
    if (sc < 0 && v && v->global >= 0) {
        P("G_[%d]", v->global);
        return;
    }
    if (sc < 0 && v && (v->cls == V_POINTER || v->cls == V_RANDOM)) {
        dfail(d, line, "%s %s", v->cls == V_POINTER ? "POINTER" : "RANDOM", name);
        return;
    }
    P("nsd_%s_c(", d->M);
    nm_gen_var(d->g, name, NULL);
    P(")");
}

static const char *const math1[] = {"exp", "expm1", "log", "log10", "sqrt", "fabs", "sin", "cos", "tan", "tanh",
                                    "atan", "floor", "ceil", "exprelr"};

static void dcall(dx *d, const ex *e) {
    const block *bl = nm_find_block(d->m, e->text);
    const int stmt = d->call_stmt;
    d->call_stmt = 0;
    if (bl && bl->kind == B_PROCEDURE && !stmt) { /* its value (0, nm_gen_ex) */
        dfail(d, 0, "the PROCEDURE %s called as a value", e->text);
        return;
    }
    if (bl) {
        P("nsd_%s_%c_%s(", d->M, bl->kind == B_FUNCTION ? 'f' : 'p', e->text);
        put_args(d);
        P("v_");
        for (int i = 0; i < e->n_args; i++) {
            P(", ");
            dex(d, e->args[i]);
        }
        P(")");
        return;
    }
    int known = 0;
    for (size_t k = 0; k < sizeof math1 / sizeof *math1; k++) known |= !strcmp(e->text, math1[k]) && e->n_args == 1;
    known |= (!strcmp(e->text, "pow") || !strcmp(e->text, "min") || !strcmp(e->text, "max")) && e->n_args == 2;
    if (!known) {
        dfail(d, 0, "the call %s()", e->text);
        return;
    }
    const char *fn = !strcmp(e->text, "min") ? "fmin" : !strcmp(e->text, "max") ? "fmax" : e->text;
    P("nsd_%s_%s(", d->M, fn);
    for (int i = 0; i < e->n_args; i++) {
        if (i) P(", ");
        dex(d, e->args[i]);
    }
    P(")");
}

/* An expression with no lanes: numbers, and the names dvar makes constants,
 * through the operators and math calls (not FUNCTIONs: their twins read
 * the instance) */
static int is_const(dx *d, const ex *e) {
    switch (e->kind) {
    case EX_NUM: return 1;
    case EX_VAR: {
        if (e->op == NM_C_NAME || e->a) return 0;
        const int sc = nm_gen_scope(d->g, e->text);
        const var *v = nm_find_var(d->m, e->text);
        if (sc >= 0 || (d->owner && d->owner->kind == B_FUNCTION && !strcmp(d->owner->name, e->text))) return 0;
        if (!v) return strcmp(e->text, "v") != 0;
        return v->field < 0 && v->global < 0 && v->ion < 0 && v->cls != V_POINTER && v->cls != V_RANDOM;
    }
    case EX_NEG:
    case EX_NOT: return is_const(d, e->a);
    case EX_BIN: return is_const(d, e->a) && is_const(d, e->b);
    case EX_CALL: {
        if (nm_find_block(d->m, e->text)) return 0;
        int known = 0;
        for (size_t k = 0; k < sizeof math1 / sizeof *math1; k++) known |= !strcmp(e->text, math1[k]) && e->n_args == 1;
        known |= (!strcmp(e->text, "pow") || !strcmp(e->text, "min") || !strcmp(e->text, "max")) && e->n_args == 2;
        for (int i = 0; known && i < e->n_args; i++) known = is_const(d, e->args[i]);
        return known;
    }
    default: return 0;
    }
}

static void dex(dx *d, const ex *e) {
    if (e->kind != EX_NUM && e->kind != EX_VAR && is_const(d, e)) { /* the forward code's double */
        P("nsd_%s_c(", d->M);
        nm_gen_ex(d->g, e);
        P(")");
        return;
    }
    switch (e->kind) {
    case EX_NUM:
        P("nsd_%s_c(", d->M);
        nm_gen_ex(d->g, e);
        P(")");
        return;
    case EX_STR: dfail(d, 0, "a string"); return;
    case EX_VAR:
        if (e->op == NM_C_NAME) dfail(d, 0, "VERBATIM C's %s", e->text);
        else dvar(d, 0, e->text, e->a);
        return;
    case EX_NEG:
        P("nsd_%s_neg(", d->M);
        dex(d, e->a);
        P(")");
        return;
    case EX_NOT:
        P("nsd_%s_c((double)!((", d->M);
        dex(d, e->a);
        P(").v))");
        return;
    case EX_CALL: dcall(d, e); return;
    case EX_BIN: {
        const char *fn = e->op == '+' ? "add" : e->op == '-' ? "sub" : e->op == '*' ? "mul" : e->op == '/' ? "div"
                         : e->op == '^' ? "pow" : NULL;
        if (fn) {
            /* a constant operand as a double (no lanes); a constant ^ a dual is pow_l */
            const int ca = is_const(d, e->a), cb = is_const(d, e->b);
            P("nsd_%s_%s%s(", d->M, fn, cb ? "_r" : ca ? "_l" : "");
            if (ca && !cb) nm_gen_ex(d->g, e->a);
            else dex(d, e->a);
            P(", ");
            if (cb) nm_gen_ex(d->g, e->b);
            else dex(d, e->b);
            P(")");
            return;
        }
        char o[2];
        const char *op = ns_nmodl_c_op(e->op, o);
        P("nsd_%s_c((double)((", d->M);
        dex(d, e->a);
        P(").v %s (", op);
        dex(d, e->b);
        P(").v))");
        return;
    }
    default: dfail(d, 0, "this expression"); return;
    }
}

/* a condition's value */
static void dcond(dx *d, const ex *e) {
    P("(");
    dex(d, e);
    P(").v");
}

static int dlist(dx *d, const stlist *l, int ind);

static void put_solve_call(dx *d, const block *bl) {
    P("nsd_%s_%s_%s(", d->M, bl->kind == B_PROCEDURE ? "p" : "d", bl->name);
    put_args(d);
    P("v_)");
}

/* An expression without calls of FUNCTIONs or PROCEDUREs (their twins may
 * write fields): what a branch written as selects may run on every path */
static int no_block_calls(dx *d, const ex *e) {
    if (!e) return 1;
    if (e->kind == EX_CALL) {
        if (nm_find_block(d->m, e->text)) return 0;
        for (int i = 0; i < e->n_args; i++)
            if (!no_block_calls(d, e->args[i])) return 0;
        return 1;
    }
    return no_block_calls(d, e->a) && no_block_calls(d, e->b);
}

/* the LOCALs of the branches being checked, innermost first */
typedef struct branch_locals {
    const stlist *l;
    const struct branch_locals *up;
} branch_locals;
static int branch_local(const branch_locals *b, const char *name) {
    for (; b; b = b->up)
        for (int i = 0; i < b->l->n_locals; i++)
            if (!strcmp(b->l->locals[i], name)) return 1;
    return 0;
}

static int selectable_list(dx *d, const stlist *l, const branch_locals *up);
/* An IF whose branches only assign duals (LOCALs, arguments, fields, a
 * FUNCTION's value) from expressions without calls of FUNCTIONs or
 * PROCEDUREs, and whose nested IFs are the same */
static int selectable_if(dx *d, const st *s, const branch_locals *up) {
    return no_block_calls(d, s->e) && selectable_list(d, s->then_, up) && (!s->else_ || selectable_list(d, s->else_, up));
}
static int selectable_list(dx *d, const stlist *l, const branch_locals *up) {
    const branch_locals here = {l, up};
    for (int i = 0; i < l->n_locals; i++)
        if (l->local_size && l->local_size[i]) return 0;
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_IF) {
            if (!selectable_if(d, s, &here)) return 0;
            continue;
        }
        if (s->kind != ST_ASSIGN || s->index || !no_block_calls(d, s->e)) return 0;
        const var *v = nm_find_var(d->m, s->name);
        const int sc = nm_gen_scope(d->g, s->name);
        const int ret = d->owner && d->owner->kind == B_FUNCTION && !strcmp(d->owner->name, s->name);
        if (sc < 0 && !ret && !(v && v->field >= 0) && !branch_local(&here, s->name)) return 0;
    }
    return 1;
}

/* An IF as selects (selectable_if): its condition once, then both branches
 * on every instance, each assignment's value computed and kept where the
 * branch is taken (nsd_NAME_sel): the same values as the branch, and no
 * branch left in the loop over the instances, which then vectorises (a
 * branch with floating-point operations is not if-converted: they may trap) */
static int dst_select(dx *d, const st *s, int ind) {
    const char *outer = d->mask;
    char c[32], e[32];
    const int id = d->n_mask++;
    snprintf(c, sizeof c, "c%d_", id);
    snprintf(e, sizeof e, "e%d_", id);
    P("%*s{\n%*s    const int %s = %s%s((", ind, "", ind, "", c, outer ? outer : "", outer ? " & " : "");
    dcond(d, s->e);
    P(") != 0.0), %s = %s%s!%s;\n", e, outer ? outer : "", outer ? " & " : "", c);
    /* each branch in a block of its own (its LOCALs) */
    d->mask = c;
    P("%*s    {\n", ind, "");
    int r = dlist(d, s->then_, ind + 8);
    P("%*s    }\n", ind, "");
    if (!r && s->else_) {
        d->mask = e;
        P("%*s    {\n", ind, "");
        r = dlist(d, s->else_, ind + 8);
        P("%*s    }\n", ind, "");
    }
    d->mask = outer;
    P("%*s    (void)%s; (void)%s;\n%*s}\n", ind, "", c, e, ind, "");
    return r;
}

static int dst(dx *d, const st *s, int ind) {
    d->line = s->line;
    switch (s->kind) {
    case ST_ASSIGN: {
        if (s->index) return dfail(d, s->line, "an array element (%s)", s->name);
        const var *v = nm_find_var(d->m, s->name);
        const int sc = nm_gen_scope(d->g, s->name);
        if (sc < 0 && v && v->field < 0 && v->global < 0)
            return dfail(d, s->line, "the assignment to %s", s->name);
        if (d->mask) { /* in an IF written as selects: the value, then the select */
            P("%*s{\n%*s    const nsd_%s t_ = ", ind, "", ind, "", d->M);
            dex(d, s->e);
            P(";\n%*s    ", ind, "");
            dvar(d, s->line, s->name, NULL);
            P(" = nsd_%s_sel(%s, t_, ", d->M, d->mask);
            dvar(d, s->line, s->name, NULL);
            P(");\n%*s}\n", ind, "");
            return d->failed ? -1 : 0;
        }
        P("%*s", ind, "");
        dvar(d, s->line, s->name, NULL);
        P(" = ");
        dex(d, s->e);
        P(";\n");
        return d->failed ? -1 : 0;
    }
    case ST_CALL: {
        if (s->e->op == NM_NETCONS_OP) return dfail(d, s->line, "FOR_NETCONS");
        if (s->e->op == NM_WATCH_OP) return dfail(d, s->line, "WATCH");
        const block *bl = nm_find_block(d->m, s->e->text);
        if (!bl && !strcmp(s->e->text, "printf")) return 0; /* output: nothing to differentiate */
        if (!bl) return dfail(d, s->line, "the call %s()", s->e->text);
        P("%*s%s", ind, "", bl->kind == B_FUNCTION ? "(void)" : "");
        d->call_stmt = 1;
        dex(d, s->e);
        P(";\n");
        return d->failed ? -1 : 0;
    }
    case ST_WHILE:
        P("%*swhile (", ind, "");
        dcond(d, s->e);
        P(") {\n");
        if (dlist(d, s->then_, ind + 4)) return -1;
        P("%*s}\n", ind, "");
        return 0;
    case ST_FROM: {
        P("%*sfor (int I_%s = (int)(", ind, "", s->name);
        dcond(d, s->e);
        P("); I_%s %s (", s->name, s->method < 0 ? ">=" : "<=");
        dcond(d, s->to);
        P("); I_%s += %d) {\n", s->name, s->method);
        if (nm_gen_scope_push(d->g, s->name, 2)) return dfail(d, s->line, "(out of memory)");
        const int r = dlist(d, s->then_, ind + 4);
        nm_gen_scope_reset(d->g, nm_gen_scope_size(d->g) - 1);
        if (r) return -1;
        P("%*s}\n", ind, "");
        return 0;
    }
    case ST_IF:
        if (selectable_if(d, s, NULL)) return dst_select(d, s, ind);
        P("%*sif (", ind, "");
        dcond(d, s->e);
        P(") {\n");
        if (dlist(d, s->then_, ind + 4)) return -1;
        if (s->else_) {
            P("%*s} else {\n", ind, "");
            if (dlist(d, s->else_, ind + 4)) return -1;
        }
        P("%*s}\n", ind, "");
        return 0;
    case ST_SOLVE: {
        const block *bl = nm_find_block(d->m, s->name);
        if (bl->alg) return dfail(d, s->line, "the %s block %s", bl->alg == 'L' ? "LINEAR" : "NONLINEAR", s->name);
        if (s->steady || s->here) return dfail(d, s->line, "SOLVE %s outside BREAKPOINT", s->name);
        if (d->solve_here) {
            P("%*s", ind, "");
            put_solve_call(d, bl);
            P(";\n");
        }
        return 0;
    }
    case ST_DERIV: {
        if (d->di) { /* derivimplicit: the derivative's dual */
            int k = 0;
            while (k < d->n_di && strcmp(d->di[k], s->name)) ++k;
            P("%*sf_[%d] = ", ind, "", k);
            dex(d, s->e);
            P(";\n");
            return d->failed ? -1 : 0;
        }
        ex *a, *c;
        int inf = 0;
        const int r = nm_cnexp_parts(s, &a, &c, &inf);
        if (r < 0) return dfail(d, s->line, "%s' (not linear in %s)", s->name, s->name);
        /* as nmodl_gen.c's cnexp: x + dt c, or x + (1 - exp(dt a)) (target - x) */
        P("%*s", ind, "");
        dvar(d, s->line, s->name, NULL);
        P(" = nsd_%s_add(", d->M);
        dvar(d, s->line, s->name, NULL);
        if (r == 1) {
            P(", nsd_%s_mul(nsd_%s_c(p->dt), ", d->M, d->M);
            dex(d, c);
            P("));\n");
            return d->failed ? -1 : 0;
        }
        P(", nsd_%s_mul(nsd_%s_sub(nsd_%s_c(1.), nsd_%s_exp(nsd_%s_mul(nsd_%s_c(p->dt), ", d->M, d->M, d->M, d->M,
          d->M, d->M);
        dex(d, a);
        P("))), nsd_%s_sub(", d->M);
        if (inf) {
            dex(d, c->a);
        } else {
            P("nsd_%s_div(nsd_%s_neg(", d->M, d->M);
            dex(d, c);
            P("), ");
            dex(d, a);
            P(")");
        }
        P(", ");
        dvar(d, s->line, s->name, NULL);
        P(")));\n");
        return d->failed ? -1 : 0;
    }
    case ST_VERBATIM:
    case ST_RETURN: return dfail(d, s->line, "VERBATIM C");
    case ST_EQUATION: return dfail(d, s->line, "an equation of a LINEAR or NONLINEAR block");
    case ST_REACTION:
    case ST_CONSERVE:
    case ST_LDIFUS:
    case ST_COMPARTMENT: return dfail(d, s->line, "a KINETIC statement");
    default: return dfail(d, s->line, "this statement");
    }
}

static int dlist(dx *d, const stlist *l, int ind) {
    const int base = nm_gen_scope_size(d->g);
    for (int i = 0; i < l->n_locals; i++) {
        if (l->local_size && l->local_size[i]) return dfail(d, 0, "the LOCAL array %s", l->locals[i]);
        P("%*snsd_%s L_%s = nsd_%s_c(0.0);\n", ind, "", d->M, l->locals[i], d->M);
        if (nm_gen_scope_push(d->g, l->locals[i], 0)) return dfail(d, 0, "(out of memory)");
    }
    for (int i = 0; i < l->n; i++)
        if (dst(d, l->s[i], ind)) return -1;
    nm_gen_scope_reset(d->g, base);
    return d->failed ? -1 : 0;
}

/* A FUNCTION's or PROCEDURE's twin is always inlined (a recursive one, never:
 * NSD_TWIN), into each of the entry points' clones too (a function of
 * another target is inlined only where it must be) */
static void put_proto(dx *d, const block *bl, const char *suffix) {
    P("NSD_%s_%s %s%s nsd_%s_%c_%s%s(", d->M, bl->recursive ? "TWIN" : "FN", bl->kind == B_FUNCTION ? "nsd_" : "void",
      bl->kind == B_FUNCTION ? d->M : "", d->M, bl->kind == B_FUNCTION ? 'f' : 'p', bl->name, suffix);
    put_sig(d);
    for (int k = 0; k < bl->n_args; k++) P(", nsd_%s A_%s", d->M, bl->args[k]);
    P(")");
}

/* a FUNCTION's or PROCEDURE's dual twin; with a TABLE, the exact one and the
 * lookup (nmodl_gen.c's emit_callable: the same arithmetic on the values) */
static int dcallable(dx *d, const block *bl) {
    if (bl->ftable) { /* FUNCTION_TABLE: the lookup and its slopes (nsm_ftable_grad) */
        put_proto(d, bl, "");
        P(" {\n    (void)p; (void)i_; (void)node_; (void)v_; (void)G_;\n    const double a_[%d] = {", bl->n_args);
        for (int k = 0; k < bl->n_args; k++) P("%sA_%s.v", k ? ", " : "", bl->args[k]);
        P("};\n    double g_[%d];\n    const ns_mech_ftable *t_ = p->ftable ? &p->ftable[%d] : (const ns_mech_ftable *)0;\n",
          bl->n_args, bl->ftable - 1);
        P("    nsm_ftable_grad(t_, %d, a_, g_);\n    nsd_%s r_ = nsd_%s_c(nsm_ftable(t_, %d, a_));\n", bl->n_args, d->M,
          d->M, bl->n_args);
        P("    for (int j_ = 0; j_ < NSD_%s_K; ++j_) r_.d[j_] = ", d->M);
        for (int k = 0; k < bl->n_args; k++) P("%sg_[%d] * A_%s.d[j_]", k ? " + " : "", k, bl->args[k]);
        P(";\n    return r_;\n}\n\n");
        return 0;
    }
    const int tab = bl->table != NULL;
    put_proto(d, bl, tab ? "_exact" : "");
    P(" {\n    (void)p; (void)i_; (void)node_; (void)v_; (void)G_;\n");
    if (bl->kind == B_FUNCTION) P("    nsd_%s ret_ = nsd_%s_c(0.0);\n", d->M, d->M);
    nm_gen_owner(d->g, bl);
    d->owner = bl;
    nm_gen_scope_reset(d->g, 0);
    for (int k = 0; k < bl->n_args; k++)
        if (nm_gen_scope_push(d->g, bl->args[k], 1)) return dfail(d, bl->line, "(out of memory)");
    if (dlist(d, bl->body, 4)) return -1;
    nm_gen_owner(d->g, NULL);
    d->owner = NULL;
    nm_gen_scope_reset(d->g, 0);
    if (bl->kind == B_FUNCTION) P("    return ret_;\n");
    P("}\n\n");
    if (!tab) return 0;
    const table_decl *t = bl->table;
    const int head = 4 + t->n_depend, n1 = t->with + 1;
    put_proto(d, bl, "");
    P(" {\n    if (G_[%d].v == 0.0) %s", t->usetable, bl->kind == B_FUNCTION ? "return " : "{\n        ");
    P("nsd_%s_%c_%s_exact(", d->M, bl->kind == B_FUNCTION ? 'f' : 'p', bl->name);
    put_args(d);
    P("v_, A_%s);\n", bl->args[0]);
    if (bl->kind == B_PROCEDURE) P("        return;\n    }\n");
    P("    const double *T_ = p->table + %d;\n", t->offset);
    P("    const double xi_ = T_[3] * (A_%s.v - T_[2]);\n", bl->args[0]);
    P("    const int in_ = (xi_ > 0.) & (xi_ < %d.), hi_ = xi_ >= %d., nan_ = xi_ != xi_;\n", t->with, t->with);
    P("    const double xc_ = xi_ == xi_ ? xi_ : 0.0, xd_ = xc_ < %d. ? xc_ : %d.;\n", t->with + 1, t->with + 1);
    P("    const double xs_ = (xd_ > -1. ? xd_ : -1.) * (double)in_;\n");
    P("    const int j_ = (int)xs_, k_ = j_ * in_ + %d * hi_, k1_ = k_ + (k_ < %d);\n", t->with, t->with);
    P("    const double t_ = (xs_ - (double)j_) + (nan_ ? xi_ : 0.0);\n");
    /* d t / d A = T_[3] inside the table, 0 outside it */
    P("    const double dt_ = in_ ? T_[3] : 0.0;\n");
    const int cols = bl->kind == B_FUNCTION ? 1 : t->n_cols;
    for (int k = 0; k < cols; k++) {
        P("    {\n        const double *c_ = T_ + %d;\n        const double a_ = c_[k_], b_ = c_[k1_];\n",
          head + k * n1);
        P("        nsd_%s r_ = nsd_%s_f1(A_%s, a_ + t_ * (b_ - a_), (b_ - a_) * dt_);\n", d->M, d->M, bl->args[0]);
        if (bl->kind == B_PROCEDURE) P("        (*F%d_) = r_;\n    }\n", t->col_field[k]);
        else P("        return r_;\n    }\n");
    }
    P("}\n\n");
    return 0;
}

/* the arguments of a twin's call with the fields' duals from array Fa (NULL:
 * the twin's own) and the GLOBALs' and v's given */
static void put_args_from(dx *d, const char *Fa, const char *Ga, const char *va, const char *Ia) {
    P("p, ");
    for (int k = 0; k < d->m->n_fields; k++) {
        if (Fa) P("&%s[%d], ", Fa, k);
        else P("F%d_, ", k);
    }
    for (int i = 0, k = 0; i < d->m->n_vars; i++) {
        if (!is_ion_input(&d->m->vars[i])) continue;
        if (Ia) P("&%s[%d], ", Ia, k++);
        else P("I%d_, ", k++);
    }
    P("%s, i_, node_, %s", Ga, va);
}

/* A DERIVATIVE block's twin: cnexp's update in place; derivimplicit's step
 * x = x0 + dt f(x, w) (w: v, the other fields, the GLOBALs), solved again by
 * Newton's method (as nmodl_gen.c's, to the same tolerance, with the
 * Jacobian f_x from the lanes: nsd_NAME_dd_BLOCK with the states as lanes
 * 0 ... N-1 and the rest constants), then differentiated by the implicit
 * function theorem at the solution: (I - dt f_x) dx = dx0 + dt f_w dw, f_w
 * dw the lanes of f with the states constants; the block once more at the
 * solution for what else it writes. K (the lanes) >= N: the state phase
 * reads every state; a group with fewer lanes (another phase's) has no
 * call to it and gets none. */
static int dderivative(dx *d, const block *bl, int method, int K) {
    if (method != M_DERIVIMPLICIT) { /* called once, by SOLVE: inlined (into the entry points' clones too) */
        P("NSD_%s_FN void nsd_%s_d_%s(", d->M, d->M, bl->name);
        put_sig(d);
        P(") {\n    (void)p; (void)i_; (void)node_; (void)v_; (void)G_;\n");
        nm_gen_owner(d->g, bl);
        nm_gen_scope_reset(d->g, 0);
        if (dlist(d, bl->body, 4)) return -1;
        nm_gen_owner(d->g, NULL);
        P("}\n\n");
        return 0;
    }
    char **order = NULL;
    int n = 0;
    if (nm_collect_states(bl->body, &order, &n)) return dfail(d, bl->line, "(out of memory)");
    if (n > K || n == 0) {
        free(order);
        return 0;
    }
    const struct ns_nmodl *m = d->m;
    const int nf = m->n_fields, ng = m->n_globals;
    int *fs = malloc((size_t)n * sizeof *fs);
    if (!fs) {
        free(order);
        return dfail(d, bl->line, "(out of memory)");
    }
    for (int k = 0; k < n; k++) fs[k] = nm_find_var(m, order[k])->field;
    P("NSD_%s_TWIN void nsd_%s_dd_%s(", d->M, d->M, bl->name);
    put_sig(d);
    P(", nsd_%s *f_) {\n    (void)p; (void)i_; (void)node_; (void)v_; (void)G_;\n", d->M);
    nm_gen_owner(d->g, bl);
    nm_gen_scope_reset(d->g, 0);
    d->di = order;
    d->n_di = n;
    const int r = dlist(d, bl->body, 4);
    d->di = NULL;
    nm_gen_owner(d->g, NULL);
    if (r) {
        free(order);
        free(fs);
        return -1;
    }
    P("}\n\n");
    P("NSD_%s_TWIN void nsd_%s_d_%s(", d->M, d->M, bl->name);
    put_sig(d);
    P(") {\n    enum { N_ = %d };\n", n);
    int nio = 0;
    for (int i = 0; i < m->n_vars; i++) nio += is_ion_input(&m->vars[i]);
    P("    nsd_%s Fl_[%d], Gl_[%d], Il_[%d], vl_ = nsd_%s_c(v_.v), f_[N_];\n", d->M, nf, ng ? ng : 1, nio ? nio : 1,
      d->M);
    for (int k = 0; k < nf; k++) P("    Fl_[%d] = nsd_%s_c((*F%d_).v);\n", k, d->M, k);
    for (int k = 0; k < nio; k++) P("    Il_[%d] = nsd_%s_c((*I%d_).v);\n", k, d->M, k);
    if (!nio) P("    (void)Il_;\n"); /* a mechanism without ion inputs (nvcc warns) */
    P("    for (int k = 0; k < %d; ++k) Gl_[k] = nsd_%s_c(G_[k].v);\n", ng, d->M);
    P("    double x0_[N_], x_[N_], J_[N_ * N_], r_[N_], R_[N_ * NSD_%s_K];\n", d->M);
    for (int k = 0; k < n; k++) P("    x0_[%d] = x_[%d] = (*F%d_).v;\n", k, k, fs[k]);
    /* Fl_ with the states at x_ as lanes 0 ... N-1: f_ and J_ = I - dt f_x */
    P("    for (int it_ = 0; it_ <= 20; ++it_) {\n");
    for (int k = 0; k < n; k++) P("        Fl_[%d] = nsd_%s_c(x_[%d]);\n        Fl_[%d].d[%d] = 1.0;\n", fs[k], d->M, k, fs[k], k);
    P("        nsd_%s_dd_%s(", d->M, bl->name);
    put_args_from(d, "Fl_", "Gl_", "vl_", "Il_");
    P(", f_);\n");
    P("        for (int r = 0; r < N_; ++r) {\n"
      "            r_[r] = -(x_[r] - x0_[r] - p->dt * f_[r].v);\n"
      "            for (int c = 0; c < N_; ++c) J_[r * N_ + c] = (r == c ? 1.0 : 0.0) - p->dt * f_[r].d[c];\n"
      "        }\n"
      "        if (it_ == 20) break; /* J_ at the solution */\n"
      "        nsd_%s_gauss(N_, J_, r_, 1);\n"
      "        double err_ = 0.0;\n"
      "        for (int c = N_ - 1; c >= 0; --c) {\n"
      "            x_[c] += r_[c];\n"
      "            const double e_ = fabs(r_[c]) / (fabs(x_[c]) > 1e-9 ? fabs(x_[c]) : 1e-9);\n"
      "            if (e_ > err_) err_ = e_;\n"
      "        }\n"
      "        if (!(err_ > 1e-12)) it_ = 19;\n"
      "    }\n", d->M);
    /* f_w dw: the instance's duals with the states constants at x_ */
    P("    nsd_%s Fw_[%d];\n", d->M, nf);
    for (int k = 0; k < nf; k++) P("    Fw_[%d] = *F%d_;\n", k, k);
    for (int k = 0; k < n; k++) P("    Fw_[%d] = nsd_%s_c(x_[%d]);\n", fs[k], d->M, k);
    P("    nsd_%s_dd_%s(", d->M, bl->name);
    put_args_from(d, "Fw_", "G_", "v_", NULL);
    P(", f_);\n");
    P("    for (int r = 0; r < N_; ++r)\n        for (int k = 0; k < NSD_%s_K; ++k)\n"
      "            R_[r * NSD_%s_K + k] = p->dt * f_[r].d[k];\n", d->M, d->M);
    for (int k = 0; k < n; k++)
        P("    for (int k = 0; k < NSD_%s_K; ++k) R_[%d * NSD_%s_K + k] += (*F%d_).d[k];\n", d->M, k, d->M, fs[k]);
    P("    nsd_%s_gauss(N_, J_, R_, NSD_%s_K);\n", d->M, d->M);
    for (int k = 0; k < n; k++) {
        P("    (*F%d_).v = x_[%d];\n", fs[k], k);
        P("    for (int k = 0; k < NSD_%s_K; ++k) (*F%d_).d[k] = R_[%d * NSD_%s_K + k];\n", d->M, fs[k], k, d->M);
    }
    P("    nsd_%s_dd_%s(", d->M, bl->name);
    put_args_from(d, NULL, "G_", "v_", NULL);
    P(", f_);\n}\n\n");
    free(order);
    free(fs);
    return 0;
}

/* NEURON's per-instance copies into the fields (nmodl_gen.c's load_copies
 * and load_conc): v, READ ion variables the file writes, concentrations.
 * An ion value replaces the field's value and keeps its lane: the field's
 * input adjoint is the ion's (the gradient moves it there, ABI 8). */
static void copies(dx *d, int v_too, int conc) {
    for (int i = 0; i < d->m->n_vars; i++) {
        const var *v = &d->m->vars[i];
        if (v->copy_in && v->ion < 0 && v_too) P("    (*F%d_) = v_;\n", v->field);
        if ((v->copy_in && v->ion >= 0) ||
            (conc && v->ion >= 0 && v->field >= 0 && !v->copy_in && (v->ion_what == 'c' || v->ion_what == 'o')))
            P("    (*F%d_).v = p->ion[%d].%s[NSM_ION(%d)];\n", v->field, v->ion, ion_array(v), v->ion);
    }
}

/* A phase's product at one instance (nsm_NAME_vjpa_PHASE, inlined into the
 * entry points below): the duals of the inputs (a lane each for those the
 * phase reads: lane[j] >= 0; -2: a field it neither reads nor writes), the
 * phase, then l_in += J^T l_out. The adjoints sit s_ apart: output r at
 * lo_[r * s_], field f's at lf_[f * s_], GLOBAL q's at lg_[q * s_]; v's at
 * *lv_ (1 for one instance's vectors, p->n for a block's rows). Each field's
 * dual is a local of its own (Fd<f>_) and no lane loop is left, so that the
 * compiler keeps the lanes in registers (scalar replacement) and the block's
 * loop over the instances is straight-line code it vectorises. */
static void entry_head(dx *d, const char *phase, const int *lane) {
    const struct ns_nmodl *m = d->m;
    const int nf = m->n_fields, ng = m->n_globals, recv = !strcmp(phase, "net_receive");
    P("NSD_%s_FN void nsm_%s_vjpa_%s(ns_mech_ppack *p, int i_, int node_, %sconst double *lo_, int s_, double *lv_, "
      "double *lf_, double *lg_%s) {\n", d->M, d->m->name, phase, recv ? "double w_, " : "", recv ? ", double *lw_" : "");
    P("    nsd_%s G_[%d], v_ = nsd_%s_c(p->v[node_]);\n", d->M, ng ? ng : 1, d->M);
    if (lane[0] >= 0) P("    v_.d[%d] = 1.0;\n", lane[0]);
    for (int k = 0; k < nf; k++)
        P("    nsd_%s Fd%d_ = nsd_%s_c(p->field[%d][i_]), *F%d_ = &Fd%d_; (void)F%d_;\n", d->M, k, d->M, k, k, k, k);
    for (int k = 0; k < ng; k++) P("    G_[%d] = nsd_%s_c(p->global[%d]);\n", k, d->M, k);
    for (int j = 1; j < 1 + nf + ng; j++)
        if (lane[j] >= 0) {
            if (j <= nf) P("    Fd%d_.d[%d] = 1.0;\n", j - 1, lane[j]);
            else P("    G_[%d].d[%d] = 1.0;\n", j - 1 - nf, lane[j]);
        }
    for (int i = 0, k = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        if (!is_ion_input(v)) continue;
        const int j = 1 + nf + ng + nm_diff_ion_row(v);
        P("    nsd_%s Id%d_ = nsd_%s_c(p->ion[%d].%s[NSM_ION(%d)]), *I%d_ = &Id%d_;\n    (void)I%d_;\n", d->M, k, d->M,
          v->ion, ion_array(v), v->ion, k, k, k);
        if (lane[j] >= 0) P("    Id%d_.d[%d] = 1.0;\n", k, lane[j]);
        k++;
    }
    P("    (void)node_; (void)v_; (void)G_; (void)lg_;\n");
    if (!recv) return;
    /* NET_RECEIVE's weight (its last lane) and flag (0: a connection's event) */
    const char *w = m->net_weight ? m->net_weight : "weight_"; /* NET_RECEIVE () without arguments: unread */
    P("    nsd_%s A_%s = nsd_%s_c(w_), A_flag = nsd_%s_c(0.0);\n    A_%s.d[NSD_%s_K - 1] = 1.0;\n"
      "    (void)A_flag; (void)A_%s;\n", d->M, w, d->M, d->M, w, d->M, w);
}

/* a_ += l_ dual.d for each lane where l_ != 0, written out lane by lane as
 * a_ + l_ (l_ != 0 ? d : 0): where l_ is 0 the term is a zero (l_ finite) and
 * a_ is never -0 (it starts at +0 and is only added to), so a_ keeps its
 * bits, and a d that is not finite where l_ is 0 adds nothing. A select of
 * two values, no operation in a branch: the compiler if-converts it (it
 * would not run a + l_ d in a branch where l_ is 0: floating point may trap) */
static void put_sum(dx *d, int K, const char *l, const char *dual, const char *op) {
    P("       ");
    for (int k = 0; k < K; k++) P(" a_[%d] = a_[%d] %s %s * (%s != 0.0 ? %s.d[%d] : 0.0);", k, k, op, l, l, dual, k);
    P("\n");
}

/* the lanes' sums over the outputs with an adjoint (the fields' duals, and
 * rhs_, g_ for current()), each added to its input; a field the phase
 * neither reads nor writes passes its adjoint through. A field the phase
 * never writes (may[1 + f] == 0) keeps its input's dual: 1 at its own lane
 * (if read), 0 at the others, whose terms l_ * 0 leave a_ as it is (a_ is
 * never -0: it starts at +0 and is only added to), so only its own lane's
 * term is written. Then the entry points: nsm_NAME_vjp_PHASE for one
 * instance (ABI 5: l_in one vector) and nsm_NAME_vjpn_PHASE for all p->n
 * (ABI 7), the same operations per instance (the same bits). */
static void entry_tail(dx *d, const char *phase, const int *lane, const unsigned char *may, int current) {
    const int nf = d->m->n_fields, n_in = 1 + nf + d->m->n_globals + 4 * d->m->n_ions, K = d->K;
    const char *M = d->m->name;
    P("    double a_[%d];\n   ", K);
    for (int k = 0; k < K; k++) P(" a_[%d] = 0.0;", k);
    P("\n");
    for (int r = 0; r < nf; r++) {
        if (!may[1 + r] && lane[1 + r] < 0) continue;
        P("    {\n        const double l_ = lo_[%d * s_];\n", r);
        if (may[1 + r]) {
            char dual[32];
            snprintf(dual, sizeof dual, "Fd%d_", r);
            put_sum(d, K, "l_", dual, "+");
        } else {
            P("        a_[%d] = a_[%d] + l_;\n", lane[1 + r], lane[1 + r]);
        }
        P("    }\n");
    }
    if (current) { /* rhs gets -I (+I for an ELECTRODE_CURRENT), d the conductance (its negative) */
        P("    {\n        const double lr_ = lo_[%d * s_], ld_ = lo_[%d * s_];\n", nf, nf + 1);
        put_sum(d, K, "lr_", "rhs_", d->m->electrode ? "+" : "-");
        put_sum(d, K, "ld_", "g_", d->m->electrode ? "-" : "+");
        P("    }\n");
    }
    for (int j = 0; j < n_in; j++) {
        const char *arr = j == 0 ? "lv_" : j <= nf ? "lf_" : "lg_";
        const int at = j == 0 ? 0 : j <= nf ? j - 1 : j - 1 - nf;
        if (lane[j] >= 0) P("    %s[%d * s_] += a_[%d];\n", arr, at, lane[j]);
        else if (lane[j] == -2) P("    %s[%d * s_] += lo_[%d * s_];\n", arr, at, j - 1);
    }
    if (!strcmp(phase, "net_receive")) { /* the weight's lane; one instance per call (an event) */
        P("    *lw_ += a_[%d];\n}\n\n", K - 1);
        P("NSD_%s_ENTRY void nsm_%s_vjp_net_receive(ns_mech_ppack *p, int i_, double w_, const double *lo_, double *li_) {\n"
          "    nsm_%s_vjpa_net_receive(p, i_, p->node_index ? p->node_index[i_] : p->node_begin + i_, w_, lo_, 1, li_, "
          "li_ + 1, li_ + %d, li_ + %d);\n}\n\n",
          d->M, M, M, 1 + nf, n_in);
        return;
    }
    P("}\n\n");
    if (d->gpu) { /* the device's: a kernel and its launch */
        nm_diff_put_kernel(d->g, M, phase);
        return;
    }
    if (strchr(phase, '_')) { /* a variant (current_ci): the block's loop only */
        nm_diff_put_block_loop(d->g, d->m, d->M, phase);
        return;
    }
    P("NSD_%s_ENTRY void nsm_%s_vjp_%s(ns_mech_ppack *p, int i_, const double *lo_, double *li_) {\n"
      "    nsm_%s_vjpa_%s(p, i_, p->node_index ? p->node_index[i_] : p->node_begin + i_, lo_, 1, li_, li_ + 1, "
      "li_ + %d);\n}\n\n",
      d->M, M, phase, M, phase, 1 + nf);
    nm_diff_put_block_loop(d->g, d->m, d->M, phase);
}

static int refuse_upfront(dx *d) {
    const struct ns_nmodl *m = d->m;
    if (m->artificial) return dfail(d, 1, "an ARTIFICIAL_CELL");
    if (m->net_initial)
        return dfail(d, m->net_initial->n ? m->net_initial->s[0]->line : 1, "NET_RECEIVE's INITIAL block");
    if (m->n_net_args > 1)
        return dfail(d, m->net_receive && m->net_receive->n ? m->net_receive->s[0]->line : 1,
                     "NET_RECEIVE's per-connection state (%d arguments; the weight only)", m->n_net_args);
    if (m->verbatim) return dfail(d, nm_verbatim_first(m)->file_line, "VERBATIM C");
    if (m->n_pointers) return dfail(d, m->pointers_line[0], "POINTER %s", m->pointers[0]);
    if (m->random_field >= 0) return dfail(d, 1, "random numbers");
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].size) return dfail(d, m->vars[i].line, "the array %s", m->vars[i].name);
    for (int i = 0; i < m->n_blocks; i++) {
        const block *bl = m->blocks[i];
        if (bl->kind == B_KINETIC) return dfail(d, bl->line, "the KINETIC block %s", bl->name);
        if (bl->alg) return dfail(d, bl->line, "the %s block %s", bl->alg == 'L' ? "LINEAR" : "NONLINEAR", bl->name);
    }
    for (int i = 0; i < m->breakpoint->n; i++) {
        const st *s = m->breakpoint->s[i];
        if (s->kind != ST_SOLVE) continue;
        const block *bl = nm_find_block(m, s->name);
        if (bl->kind == B_DERIVATIVE && s->method != M_CNEXP && s->method != M_DERIVIMPLICIT) {
            static const char *const meth[] = {"", "cnexp", "derivimplicit", "euler", "sparse", "runge"};
            return dfail(d, s->line, "SOLVE %s METHOD %s (cnexp and derivimplicit only)", s->name,
                         s->method >= 0 && s->method <= M_RUNGE ? meth[s->method] : "?");
        }
    }
    return 0;
}

/* the dual runtime with K lanes (type prefix d->M), the FUNCTIONs' and
 * PROCEDUREs' twins, the DERIVATIVE blocks' and the BREAKPOINT's currents */
static void emit_group(dx *d, int K) {
    struct gen *g = d->g;
    const struct ns_nmodl *m = d->m;
    put_runtime(d, K);
    for (int i = 0; i < m->n_blocks; i++) {
        const block *bl = m->blocks[i];
        if (bl->kind != B_FUNCTION && bl->kind != B_PROCEDURE) continue;
        if (bl->hoc_only) continue;
        put_proto(d, bl, "");
        P(";\n");
        if (bl->table) {
            put_proto(d, bl, "_exact");
            P(";\n");
        }
    }
    P("\n");
    for (int i = 0; i < m->n_blocks && !d->failed; i++) {
        const block *bl = m->blocks[i];
        if ((bl->kind == B_FUNCTION || bl->kind == B_PROCEDURE) && !bl->hoc_only) dcallable(d, bl);
    }
    for (int i = 0; i < m->breakpoint->n && !d->failed; i++) {
        const st *s = m->breakpoint->s[i];
        const block *bl = s->kind == ST_SOLVE ? nm_find_block(m, s->name) : NULL;
        if (bl && bl->kind == B_DERIVATIVE) dderivative(d, bl, s->method, K);
    }
    /* the BREAKPOINT's currents at v_ (nmodl_gen.c's nsm_NAME_cur) */
    P("NSD_%s_TWIN nsd_%s nsd_%s_cur(", d->M, d->M, d->M);
    put_sig(d);
    P(") {\n    (void)p; (void)i_; (void)node_; (void)G_;\n");
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].copy_in && m->vars[i].ion < 0) P("    (*F%d_) = v_;\n", m->vars[i].field);
    nm_gen_scope_reset(g, 0);
    if (m->n_currents && !d->failed) dlist(d, m->breakpoint, 4);
    P("    nsd_%s c_ = nsd_%s_c(0.0);\n", d->M, d->M);
    for (int k = 0; k < m->n_currents && !d->failed; k++) {
        P("    c_ = nsd_%s_add(c_, ", d->M);
        dvar(d, 0, m->currents[k], NULL);
        P(");\n");
    }
    P("    return c_;\n}\n\n");
}

/* current()'s rhs_ and g_: g by the difference at v + .001, or where the currents are affine in v
 * the sum of their symbolic slopes after one evaluation, as the forward code (nmodl_gen_entry.c) */
static void current_slope(dx *d) {
    const struct ns_nmodl *m = d->m;
    ex **slope;
    const int affine = nm_current_slopes(m, &slope);
    if (affine < 0) dfail(d, 1, "(out of memory)");
    if (affine <= 0) {
        P("    nsd_%s g_ = nsd_%s_cur(", d->M, d->M);
        put_args(d);
        P("nsd_%s_add(v_, nsd_%s_c(.001)));\n", d->M, d->M);
    }
    P("    nsd_%s rhs_ = nsd_%s_cur(", d->M, d->M);
    put_args(d);
    P("v_);\n");
    if (affine <= 0) {
        P("    g_ = nsd_%s_div(nsd_%s_sub(g_, rhs_), nsd_%s_c(.001));\n", d->M, d->M, d->M);
        return;
    }
    nm_gen_scope_reset(d->g, 0); /* the slopes read no LOCAL */
    P("    nsd_%s g_ = nsd_%s_c(0.0);\n", d->M, d->M);
    for (int c = 0, n = 0; c < m->n_currents; c++) { /* the forward code's a + b + c, as (a + b) + c */
        if (!slope[c]) continue;
        if (n++) P("    g_ = nsd_%s_add(g_, ", d->M);
        else P("    g_ = (");
        dex(d, slope[c]);
        P(");\n");
    }
}

/* One phase's products (ph: 0 INITIAL, 1 current(), 2 state(), 3 NET_RECEIVE) named
 * `phase`, with the duals of K lanes (the group nsd_NAME_L<K>) */
static void emit_phase(dx *d, int ph, const char *phase, int K, const int *lane, const unsigned char *may) {
    const struct ns_nmodl *m = d->m;
    struct gen *g = d->g;
    char T[96];
    snprintf(T, sizeof T, "%s_L%d", m->name, K);
    d->M = T;
    d->K = K;
    entry_head(d, phase, lane);
    if (ph == 0) { /* INITIAL (nsm_NAME_init_F) */
        copies(d, 1, 1);
        for (int i = 0; i < m->n_vars; i++) {
            const var *v = &m->vars[i];
            if (v->cls == V_STATE && v->ion < 0) P("    (*F%d_) = nsd_%s_c(%.17g);\n", v->field, d->M, v->value);
        }
        nm_gen_scope_reset(g, 0);
        if (m->initial && !d->failed) dlist(d, m->initial, 4);
    } else if (ph == 1) { /* current (nsm_NAME_current_F) */
        copies(d, 0, 1);
        current_slope(d);
        if (m->point) /* a point process's nA to the node's mA/cm2: 1e2 / area (the forward code's order) */
            P("    g_ = nsd_%s_mul_r(g_, p->weight[i_]);\n    rhs_ = nsd_%s_mul_r(rhs_, p->weight[i_]);\n", d->M, d->M);
    } else if (ph == 2) { /* state (nsm_NAME_state_F) */
        copies(d, 1, 1);
        nm_gen_scope_reset(g, 0);
        if (!m->n_currents && !d->failed) {
            d->solve_here = 1;
            dlist(d, m->breakpoint, 4);
            d->solve_here = 0;
        }
        for (int i = 0; m->n_currents && i < m->breakpoint->n && !d->failed; i++) {
            const st *s = m->breakpoint->s[i];
            if (s->kind != ST_SOLVE) continue;
            P("    ");
            put_solve_call(d, nm_find_block(m, s->name));
            P(";\n");
        }
    } else { /* NET_RECEIVE (nsm_NAME_net_receive_F) with a connection's weight */
        copies(d, 1, 0);
        nm_gen_scope_reset(g, 0);
        if ((m->net_weight && nm_gen_scope_push(g, m->net_weight, 1)) || nm_gen_scope_push(g, "flag", 1))
            dfail(d, 1, "(out of memory)");
        if (!d->failed) dlist(d, m->net_receive, 4);
        nm_gen_scope_reset(g, 0);
    }
    entry_tail(d, phase, lane, may, ph == 1);
    d->M = m->name;
}

int nm_diff_emit(struct gen *g, char *why, size_t n_why, int gpu) {
    dx dd = {g, nm_gen_module(g), NULL, why, n_why, 0, 0, 0, NULL, NULL, 0, 0, 0, NULL, 0, gpu}, *d = &dd;
    const struct ns_nmodl *m = d->m;
    d->M = m->name;
    const size_t mark = nm_gen_mark(g);
    const int nf = m->n_fields, n_in = 1 + nf + m->n_globals + 4 * m->n_ions;
    if (refuse_upfront(d)) return 1;
    /* the phases: INITIAL, current(), state() and NET_RECEIVE (a point process's; on the host) */
    const int n_ph = m->net_receive && !gpu ? 4 : 3;
    unsigned char *rd = malloc(3 * (size_t)n_in), *may = malloc(4 * (size_t)n_in);
    int *lane = malloc(4 * (size_t)n_in * sizeof *lane);
    if (!rd || !may || !lane) {
        free(rd);
        free(may);
        free(lane);
        return -1;
    }
    int K[4];
    for (int ph = 0; ph < n_ph; ph++) {
        nm_diff_phase_reads(m, ph, rd, rd + n_in, rd + 2 * n_in, n_in);
        memcpy(may + ph * n_in, rd + 2 * n_in, (size_t)n_in);
        int n = 0;
        /* -2: a field the phase never writes nor reads: out = in */
        for (int j = 0; j < n_in; j++)
            lane[ph * n_in + j] = rd[j] ? n++ : (j >= 1 && j <= nf && !rd[2 * n_in + j]) ? -2 : -1;
        K[ph] = ph == 3 ? n + 1 : n > 0 ? n : 1; /* NET_RECEIVE: the weight's lane last */
        /* the currents see an ion current's partial sum (the mechanisms before them): refused */
        for (int i = 0; ph == 1 && i < m->n_vars && !d->failed; i++) {
            const var *v = &m->vars[i];
            if (is_ion_input(v) && v->ion_what == 'i' && rd[1 + nf + m->n_globals + nm_diff_ion_row(v)])
                dfail(d, v->line, "the ion current %s read by the BREAKPOINT's currents", v->name);
        }
    }
    free(rd);
    if (d->failed) {
        free(may);
        free(lane);
        nm_gen_cut(g, mark);
        return 1;
    }
    /* the duals of each phase carry its own lanes: a dual type, its runtime and the twins per
     * lane count (nsd_NAME_L<K>), shared by the phases with the same count; then the
     * constant-ion variants' (ci_lanes) */
    int *cil = malloc(3 * (size_t)n_in * sizeof *cil), Kc[3] = {0, 0, 0};
    if (!cil) {
        free(lane);
        free(may);
        return -1;
    }
    for (int ph = 0; ph < 3 && !gpu; ph++) Kc[ph] = nm_diff_ci_lanes(m, lane + ph * n_in, cil + ph * n_in);
    int Ks[7], nK = 0;
    for (int ph = 0; ph < n_ph + 3; ph++) {
        const int k = ph < n_ph ? K[ph] : Kc[ph - n_ph];
        int seen = !k;
        for (int q = 0; q < nK; q++) seen |= Ks[q] == k;
        if (!seen) Ks[nK++] = k;
    }
    /* GCC: floating point that does not trap and math calls that leave errno, so that it runs
     * both sides of a select (dst_select, put_sum) and takes a call of constant arguments
     * (hh's q10, pow const: NAME.h) out of the loop over the instances; neither changes a value (no contraction,
     * no reassociation: the same bits). clang's default already ignores the exceptions. */
    if (!gpu) P("\n#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC push_options\n"
      "#pragma GCC optimize(\"no-trapping-math\", \"no-math-errno\")\n#endif\n");
    /* pow: the header's const function (nmodl_gen_entry.c), so that hh's q10 leaves the loop here too */
    /* nvcc: the fields' dual pointers a phase leaves unread, (void)-cast, are "set but never used" */
    if (gpu) P("#pragma nv_diag_suppress 550\n");
    char T[96];
    for (int q = 0; q < nK && !d->failed; q++) {
        snprintf(T, sizeof T, "%s_L%d", m->name, Ks[q]);
        d->M = T;
        d->K = Ks[q];
        emit_group(d, Ks[q]);
    }
    static const char *const names[4] = {"init", "current", "state", "net_receive"};
    for (int ph = 0; ph < n_ph && !d->failed; ph++) emit_phase(d, ph, names[ph], K[ph], lane + ph * n_in, may + ph * n_in);
    char nm[32];
    for (int ph = 0; ph < 3 && !d->failed; ph++) {
        if (!Kc[ph]) continue;
        snprintf(nm, sizeof nm, "%s_ci", names[ph]);
        emit_phase(d, ph, nm, Kc[ph], cil + ph * n_in, may + ph * n_in);
    }
    /* the descriptor's constant-ion products (ABI 9; nmodl_gen_desc.c): NULL for a phase without */
    if (!gpu) {
        P("#define NSD_%s_VJPN_CI ", m->name);
        for (int ph = 0; ph < 3; ph++)
            if (Kc[ph]) P("%snsm_%s_vjpn_%s_ci", ph ? ", " : "", m->name, names[ph]);
            else P("%sNULL", ph ? ", " : "");
        P("\n#if defined(__GNUC__) || defined(__clang__)\n#undef pow\n#endif\n"
          "#if defined(__GNUC__) && !defined(__clang__)\n#pragma GCC pop_options\n#endif\n");
    }
    if (gpu) P("#pragma nv_diag_default 550\n");
    free(cil);
    free(lane);
    free(may);
    if (d->failed) {
        nm_gen_cut(g, mark);
        return 1;
    }
    return 0;
}
