/* The NMODL front end's checks after the parse (nmodl_parse.h): every name's class, the
 * calls' arities, recursion (marked), the events' places, and the fields and globals' layout. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_gen.h"
#include "nmodl/nmodl_parse.h"

/* ---- checks: classes, fields and globals ---- */

int nm_in_list(char **l, int n, const char *s) {
    for (int i = 0; i < n; i++)
        if (!strcmp(l[i], s)) return 1;
    return 0;
}
static block *find_block(struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_blocks; i++)
        if (!strcmp(m->blocks[i]->name, name)) return m->blocks[i];
    return NULL;
}

static int check_ex(parser *p, ex *e, char **locals, int n_locals, int line);
static int builtin_arity(const char *f) {
    static const char *one[] = {"exp", "log", "log10", "sqrt", "fabs", "sin", "cos", "tan", "tanh", "sinh", "cosh",
                                "floor", "ceil", "atan", "asin", "acos", "exprelr", "expm1", "log1p", "erf", "at_time", NULL};
    static const char *two[] = {"pow", "fmin", "fmax", "atan2", "fmod", "min", "max", NULL};
    for (int i = 0; one[i]; i++)
        if (!strcmp(one[i], f)) return 1;
    for (int i = 0; two[i]; i++)
        if (!strcmp(two[i], f)) return 2;
    return nm_random_arity(f); /* normrand, exprand, scop_random, set_seed */
}
/* The size of the innermost scope entry `name` (scope_size: 0 a scalar, n an
 * array, -1 a FROM loop's integer), or -2 where it is not in scope. */
static int scope_size_of(parser *p, char **scope, int n_scope, const char *name) {
    for (int i = n_scope - 1; i >= 0; i--)
        if (!strcmp(scope[i], name)) return p->scope_size[i];
    return -2;
}
static int scope_add(parser *p, char ***scope, int *n_scope, char *name, int size) {
    if (*n_scope >= p->cap_scope_size) {
        int cap = p->cap_scope_size ? 2 * p->cap_scope_size : 64;
        int *n = nm_realloc(nm_parse_arena, p->scope_size, (size_t)cap * sizeof *n);
        if (!n) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, 1, "out of memory");
        p->scope_size = n;
        p->cap_scope_size = cap;
    }
    p->scope_size[*n_scope] = size;
    return nm_add_name(scope, n_scope, name);
}
/* a name with or without an index: arrays only with one, the rest only without */
static int check_index(parser *p, const char *name, const ex *index, char **scope, int n_scope, int line) {
    int size = scope_size_of(p, scope, n_scope, name);
    if (size == -2) {
        var *v = nm_var(p->m, name);
        size = v ? v->size : 0;
    }
    if (index && size <= 0) return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "'%s' is not an array", name);
    if (!index && size > 0) return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "the array '%s' needs an index", name);
    if (index && index->kind == EX_NUM && !(index->num >= 0 && index->num < size))
        return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s[%g]: out of the array's %d elements", name, index->num, size);
    return 0;
}
/* Does the file's C outside the blocks #define name, itself or in a header it includes from the
 * file's folder (`#include "misc.h"`, ModelDB's LG2)? nocmodl passes a name it does not know to the C
 * ("declared within VERBATIM?"), which compiles the header from that folder (-I, mechlib.c) */
static int top_c_macro(parser *p, const char *name) {
    const stlist *top = p->m->verbatim_top;
    for (int i = 0; top && i < top->n; i++) {
        const char *c = top->s[i]->kind == ST_VERBATIM ? top->s[i]->name : NULL;
        if (!c) continue;
        if (nm_c_macro(c, name, nm_parse_arena)) return 1;
        for (const char *q = c; p->dir && q; q = strchr(q, '\n'), q = q ? q + 1 : NULL) {
            char hdr[256], path[1024];
            if (sscanf(q, " # include \"%255[^\"\n]\"", hdr) != 1) continue;
            snprintf(path, sizeof path, "%s/%s", hdr[0] == '/' ? "" : p->dir, hdr);
            char *text = NULL;
            ns_status rs;
            if (nm_read_text(path, &text, &rs)) continue; /* a header nobody ships: the compiler names it */
            const int found = nm_c_macro(text, name, nm_parse_arena) != NULL;
            free(text);
            if (found) return 1;
        }
    }
    return 0;
}
static int check_ex(parser *p, ex *e, char **locals, int n_locals, int line) {
    switch (e->kind) {
    case EX_NUM: return 0;
    case EX_STR: return nm_perr(p, NS_ERR_PARSE, line, "a string outside printf");
    case EX_VAR:
        if (e->a && check_ex(p, e->a, locals, n_locals, line)) return -1;
        if (!nm_in_list(locals, n_locals, e->text) && nm_var(p->m, e->text) && nm_var(p->m, e->text)->cls == V_RANDOM)
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "RANDOM %s is a stream, not a value (random_uniform(%s), ...)",
                        e->text, e->text);
        if (nm_in_list(locals, n_locals, e->text) || nm_is_special(e->text) || nm_var(p->m, e->text))
            return check_index(p, e->text, e->a, locals, n_locals, line);
        if (!strcmp(e->text, "FARADAY")) return 0;
        if (!e->a && !strcmp(e->text, "usetable")) { /* NEURON's one flag of the mechanism's TABLEs */
            for (int i = 0; i < p->m->n_blocks; i++)
                if (p->m->blocks[i]->table) { /* usetable_MECH sets every usetable_NAME at once (model.c) */
                    const size_t n = strlen(p->m->blocks[i]->name) + 10;
                    char *name = nm_calloc(nm_parse_arena, n, 1);
                    if (!name) return -1;
                    snprintf(name, n, "usetable_%s", p->m->blocks[i]->name);
                    e->text = name;
                    return 0;
                }
        }
        if (!e->a && ((p->vbody && nm_verbatim_declares(p->vbody, e->text)) || top_c_macro(p, e->text))) {
            /* nocmodl passes it through to the C */
            e->op = NM_C_NAME;
            return 0;
        }
        return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "'%s' is not declared", e->text);
    case EX_CALL: {
        if (!find_block(p->m, e->text) && nm_random_api(e->text, e->n_args) >= 0) {
            /* random_uniform(r[, a, b]), random_negexp(r[, mean]), random_normal(r[, mean, sd]),
             * random_setseq(r, n), random_setids(r, id1, id2, id3): r a RANDOM variable */
            if (!nm_random_api(e->text, e->n_args))
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s: %d arguments (NEURON's forms: random_uniform(r), "
                            "random_uniform(r, a, b), random_negexp(r[, mean]), random_normal(r[, mean, sd]), "
                            "random_setseq(r, n), random_setids(r, id1, id2, id3))", e->text, e->n_args);
            const var *rv = e->args[0]->kind == EX_VAR && !e->args[0]->a ? nm_var(p->m, e->args[0]->text) : NULL;
            if (!rv || rv->cls != V_RANDOM)
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s: the first argument must be a RANDOM variable",
                            e->text);
            for (int i = 1; i < e->n_args; i++)
                if (check_ex(p, e->args[i], locals, n_locals, line)) return -1;
            return 0;
        }
        block *b = find_block(p->m, e->text);
        if (!b && !strcmp(e->text, "printf"))
            return nm_perr(p, NS_ERR_UNSUPPORTED, line, "printf as a value (it is supported as a statement)");
        int ar = builtin_arity(e->text);
        if (!b && !strcmp(e->text, "at_time")) p->m->uses_at_time = 1;
        unsigned evf = 0;
        if (!b && e->op == NM_WATCH_OP) { /* a WATCH statement's (nm_parse_statement) */
            const ex *c = e->args[0];
            if (p->ev_ctx != NM_EV_RECEIVE)
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "WATCH is allowed only in the NET_RECEIVE block");
            if (c->kind != EX_BIN || !strchr("<>lg", c->op))
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "WATCH needs a condition a > b or a < b");
            p->m->events |= NS_MECH_EV_WATCH;
            return check_ex(p, e->args[0], locals, n_locals, line) || check_ex(p, e->args[1], locals, n_locals, line)
                       ? -1 : 0;
        }
        if (!b && nm_event_call(e->text, &ar, &evf)) { /* net_send, net_event, net_move (nmodl_events.c) */
            const char *why = nm_event_misplaced(e->text, p->ev_ctx);
            if (why) return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s %s", e->text, why);
            p->m->events |= evf;
            if (!p->ev_line) p->ev_line = line;

        }
        if (b && (b->kind == B_DERIVATIVE || b->kind == B_KINETIC))
            return nm_perr(p, NS_ERR_PARSE, line, "%s %s called as a function", b->kind == B_KINETIC ? "KINETIC" : "DERIVATIVE",
                        e->text);
        /* a C function that the file's VERBATIM C declares (nocmodl passes the call through) */
        const int c_fn = !b && ar < 0 && (nm_verbatim_declares(p->m->verbatim_top, e->text) ||
                                          (p->vbody && nm_verbatim_declares(p->vbody, e->text)));
        if (!b && ar < 0 && !c_fn) {
            if (nm_unsupported_name(e->text)) return nm_perr(p, NS_ERR_UNSUPPORTED, line, "%s is not supported", e->text);
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "unknown function '%s'", e->text);
        }
        int want = b ? b->n_args : ar;
        if (!c_fn && e->n_args != want) /* (the C compiler checks a C function's arguments) */
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, line, "%s takes %d argument%s, given %d", e->text, want,
                        want == 1 ? "" : "s", e->n_args);
        for (int i = 0; i < e->n_args; i++)
            if (check_ex(p, e->args[i], locals, n_locals, line)) return -1;
        return 0;
    }
    case EX_NEG:
    case EX_NOT: return check_ex(p, e->a, locals, n_locals, line);
    case EX_BIN:
        return check_ex(p, e->a, locals, n_locals, line) || check_ex(p, e->b, locals, n_locals, line) ? -1 : 0;
    }
    return 0;
}

/* scope: the LOCALs of enclosing blocks and the arguments */
/* Whether every x' = e of a DERIVATIVE block (in its ifs and loops too) is linear in x, as
 * nocmodl's cnexp needs (deriv.cpp's cvode_cnexp_possible); -1 out of memory. */
static int cnexp_linear(parser *p, const stlist *l) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_DERIV) {
            nm_arena *const sav = nm_gen_arena;
            nm_gen_arena = &p->m->arena;
            int nonlinear = 0;
            const ex *a = nm_sym_diff(s->e, s->name, &nonlinear);
            nm_gen_arena = sav;
            if (!a) return -1;
            if (nonlinear || nm_sym_depends(a, s->name)) return 0;
        }
        const int r = cnexp_linear(p, s->then_);
        if (r <= 0) return r;
        const int r2 = cnexp_linear(p, s->else_);
        if (r2 <= 0) return r2;
    }
    return 1;
}

static const char *const method_name[] = {"", "cnexp", "derivimplicit", "euler", "sparse", "runge"};

/* SOLVE of a DERIVATIVE in INITIAL, a PROCEDURE or a FUNCTION, as nocmodl's solv_diffeq writes it there:
 * derivimplicit_thread, euler_thread, runge_thread or _ss_derivimplicit_thread driving the block's one
 * C function, whose form its BREAKPOINT SOLVE decides (cnexp's update where cnexp translates, else
 * derivimplicit's Newton step, euler's and runge's derivatives), else this SOLVE; STEADYSTATE: that
 * step with dt = 1e-9 (scopmath's _ss_derivimplicit_thread). Forms where NEURON's driver and the
 * function's form differ are refused. */
static int solve_deriv_here(parser *p, st *s, block *b) {
    const int given = nm_solve_method(p->m->breakpoint, b->name);
    int lin = 1;
    if ((given == M_CNEXP || s->method == M_CNEXP) && (lin = cnexp_linear(p, b->body)) < 0)
        return nm_perr(p, NS_ERR_OUT_OF_MEMORY, s->line, "out of memory");
    const int mb = given == M_CNEXP && !lin ? M_DERIVIMPLICIT : given;
    const int own = s->method == M_CNEXP && !lin ? M_DERIVIMPLICIT : s->method;
    const char *where = p->in_initial ? "INITIAL" : p->in_hook ? "a BEFORE/AFTER block" : "a PROCEDURE or FUNCTION";
    if (s->steady && given != M_NONE && given != M_CNEXP && given != M_DERIVIMPLICIT)
        return nm_perr(p, NS_ERR_PARSE, s->line,
                       "SOLVE %s STEADYSTATE: STEADYSTATE requires all SOLVE's of this DERIVATIVE block to use the "
                       "derivimplicit method (BREAKPOINT's uses %s; nocmodl's message)", s->name, method_name[given]);
    /* with BREAKPOINT's cnexp, derivimplicit here (solve.cpp renames cnexp derivimplicit; a second cnexp SOLVE
     * of the block nocmodl refuses), else BREAKPOINT's METHOD */
    const int fit = given == M_CNEXP ? M_DERIVIMPLICIT : given;
    if (!s->steady && given != M_NONE && s->method != fit)
        return nm_perr(p, NS_ERR_UNSUPPORTED, s->line,
                       "SOLVE %s METHOD %s in %s: BREAKPOINT solves the block by %s, and NEURON would run that "
                       "form under %s's driver, or refuse the file: use METHOD %s here",
                       s->name, method_name[s->method], where, method_name[given], method_name[s->method],
                       method_name[fit]);
    const int form = mb != M_NONE ? mb : own;
    if (given == M_NONE && b->here_method && b->here_method != form)
        return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s by %s and by %s: nocmodl writes the block "
                       "in one form (use one METHOD)", s->name, method_name[b->here_method], method_name[form]);
    if (given == M_NONE) b->here_method = form;
    if (!p->in_initial && !p->in_hook) b->here_proc = 1;
    s->here = s->steady ? 2 : 1;
    s->method = form;
    return 0;
}

/* SOLVE name: the block's kind, its METHOD and where the statement is (nocmodl's solvequeue) */
static int check_solve(parser *p, st *s, block *owner) {
    if (p->in_hook == 2 && !owner)
        return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s in a CONSTRUCTOR or DESTRUCTOR", s->name);
    block *b = find_block(p->m, s->name);
    if (!b) return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "SOLVE %s: no such block", s->name);
    const int outside = owner || p->in_initial || p->in_hook; /* not BREAKPOINT's SOLVE */
    if (outside && b->kind == B_PROCEDURE && !b->alg && !b->n_args)
        s->here = 4; /* a PROCEDURE: called in place (nocmodl) */
    if (b->alg) { /* LINEAR / NONLINEAR: solved in place, wherever the SOLVE is (nocmodl) */
        if (s->method != M_NONE || s->steady)
            return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s: a %s block takes no METHOD", s->name,
                        b->alg == 'L' ? "LINEAR" : "NONLINEAR");
        if (!outside && !p->ev_ctx) s->here = 3; /* BREAKPOINT's: in state() */
        if (owner == b) return nm_perr(p, NS_ERR_PARSE, s->line, "SOLVE %s inside itself", s->name);
        return 0;
    }
    if (b->kind == B_DERIVATIVE && s->method == M_CNEXP && !outside) {
        /* BREAKPOINT's; nocmodl: "Could not translate using cnexp method; using derivimplicit" */
        const int lin = cnexp_linear(p, b->body);
        if (lin < 0) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, s->line, "out of memory");
        if (!lin) s->method = M_DERIVIMPLICIT;
    }
    if (b->kind == B_DERIVATIVE && s->method == M_NONE)
        return nm_perr(p, NS_ERR_PARSE, s->line, "SOLVE %s needs a METHOD", s->name);
    if (b->kind == B_KINETIC && s->method != M_SPARSE)
        return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s: a KINETIC block needs METHOD sparse, euler or runge",
                    s->name);
    if (b->kind == B_DERIVATIVE && s->method == M_SPARSE && b->rerun && outside) /* a KINETIC block, lowered */
        return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "SOLVE %s METHOD sparse: BREAKPOINT solves the KINETIC block by "
                       "%s, and nocmodl writes it in that form only, which its sparse call would misread: use METHOD "
                       "%s here", s->name, method_name[nm_solve_method(p->m->breakpoint, b->name)],
                       method_name[nm_solve_method(p->m->breakpoint, b->name)]);
    if (b->kind == B_DERIVATIVE && s->method == M_SPARSE)
        return nm_perr(p, NS_ERR_PARSE, s->line, "SOLVE %s: METHOD sparse needs a KINETIC block", s->name);
    {
        const int in_initial = p->in_initial;
        if (s->steady && !in_initial && !owner) /* a PROCEDURE or FUNCTION may (cabpump.mod's ss()) */
            return nm_perr(p, NS_ERR_UNSUPPORTED, s->line,
                        "SOLVE %s STEADYSTATE: only in INITIAL, a PROCEDURE or a FUNCTION", s->name);
        if (b->kind == B_DERIVATIVE && outside) {
            if (solve_deriv_here(p, s, b)) return -1;
        } else if (b->kind == B_KINETIC && !s->steady && outside) {
            s->here = 1; /* nocmodl's sparse_thread there: one implicit step of dt, as BREAKPOINT's */
        }
    }
    if (b->kind == B_FUNCTION || (b->kind == B_PROCEDURE && (s->method != M_NONE || b->n_args)))
        return nm_perr(p, NS_ERR_PARSE, s->line, "SOLVE %s: not a DERIVATIVE block", s->name);
    if (p->m->breakpoint == NULL) return nm_perr(p, NS_ERR_PARSE, s->line, "SOLVE outside BREAKPOINT");
    return 0;
}

static int check_list(parser *p, stlist *l, block *owner, char ***scope, int *n_scope) {
    int base = *n_scope;
    for (int i = 0; i < l->n_locals; i++)
        if (scope_add(p, scope, n_scope, l->locals[i], l->local_size ? l->local_size[i] : 0)) return -1;
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        switch (s->kind) {
        case ST_ASSIGN: {
            int fn_ret = owner && owner->kind == B_FUNCTION && !strcmp(owner->name, s->name);
            int local = scope_size_of(p, *scope, *n_scope, s->name);
            if (local == -1) return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is FROM's loop variable", s->name);
            if (!fn_ret && local == -2) {
                var *v = nm_var(p->m, s->name);
                if (!v) {
                    if (nm_is_special(s->name))
                        return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "assigning '%s' is not supported", s->name);
                    return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not declared", s->name);
                }
                if (v->cls == V_CONST || v->cls == V_ION_READ || v->cls == V_RANDOM)
                    return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is read-only here", s->name);
            }
            if (!fn_ret && check_index(p, s->name, s->index, *scope, *n_scope, s->line)) return -1;
            if (s->index && check_ex(p, s->index, *scope, *n_scope, s->line)) return -1;
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_DERIV: {
            var *v = nm_var(p->m, s->name);
            if (!owner || owner->kind != B_DERIVATIVE)
                return nm_perr(p, NS_ERR_PARSE, s->line, "%s' outside a DERIVATIVE block", s->name);
            if (!v || v->cls != V_STATE) return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not a STATE", s->name);
            if (!v->size != !s->index)
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, v->size ? "%s' of an array STATE needs an element: %s'[i]"
                            : "%s' with an index: %s is not an array", s->name, s->name);
            if (s->index) /* one left by nm_deriv_arrays_lower: its index is not a constant */
                return nm_perr(p, NS_ERR_UNSUPPORTED, s->line, "%s'[...] needs an index that is constant after unrolling "
                            "FROM loops with integer constant bounds", s->name);
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_IF:
        case ST_WHILE:
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            if (check_list(p, s->then_, owner, scope, n_scope)) return -1;
            if (s->else_ && check_list(p, s->else_, owner, scope, n_scope)) return -1;
            break;
        case ST_FROM: {
            if (check_ex(p, s->e, *scope, *n_scope, s->line) || check_ex(p, s->to, *scope, *n_scope, s->line))
                return -1;
            /* BY: an integer constant, as nocmodl's grammar has it (the step, in method) */
            const ex *by = s->by && s->by->kind == EX_NEG ? s->by->a : s->by;
            double step = !s->by ? 1 : by->kind == EX_NUM ? (s->by->kind == EX_NEG ? -by->num : by->num) : 0;
            if (step == 0 || step != (int)step || fabs(step) > 1e6)
                return nm_perr(p, NS_ERR_PARSE, s->line, "FROM %s: BY needs a nonzero integer", s->name);
            s->method = (int)step;
            int at = *n_scope;
            if (scope_add(p, scope, n_scope, s->name, -1) || check_list(p, s->then_, owner, scope, n_scope)) return -1;
            *n_scope = at;
            break;
        }
        case ST_VERBATIM: break; /* nm_verbatim_check */
        case ST_RETURN:
            if (!owner || owner->kind == B_DERIVATIVE)
                return nm_perr(p, NS_ERR_UNSUPPORTED, s->line,
                            "VERBATIM return 0; is supported in a FUNCTION or PROCEDURE only");
            break;
        case ST_CALL: {
            const ex *e = s->e;
            if (!find_block(p->m, e->text) && !strcmp(e->text, "printf")) { /* printf("format", args): the host's */
                if (e->n_args < 1 || e->args[0]->kind != EX_STR)
                    return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "printf needs a format string first");
                p->m->uses_printf = 1;
                for (int k = 1; k < e->n_args; k++) /* a string for a %s: C's, as nocmodl writes it */
                    if (e->args[k]->kind != EX_STR && check_ex(p, e->args[k], *scope, *n_scope, s->line)) return -1;
                break;
            }
            if (e->op == NM_NETCONS_OP) { /* FOR_NETCONS: its names for each connection's weight vector */
                if (p->ev_ctx != NM_EV_RECEIVE)
                    return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line, "FOR_NETCONS is allowed only in the NET_RECEIVE block");
                if (e->n_args > p->m->n_net_args)
                    return nm_perr(p, NS_ERR_INVALID_ARGUMENT, s->line,
                                "FOR_NETCONS names %d arguments, NET_RECEIVE has %d", e->n_args, p->m->n_net_args);
                const int at = *n_scope;
                for (int k = 0; k < e->n_args; k++)
                    if (scope_add(p, scope, n_scope, e->args[k]->text, 0)) return -1;
                if (check_list(p, s->then_, owner, scope, n_scope)) return -1;
                *n_scope = at;
                p->m->events |= NS_MECH_EV_NETCONS;
                nm_cpu_only(p, s->line, "FOR_NETCONS runs on the CPU loop only");
                break;
            }
            if (check_ex(p, s->e, *scope, *n_scope, s->line)) return -1;
            break;
        }
        case ST_REACTION:
        case ST_CONSERVE:
        case ST_LDIFUS:
        case ST_COMPARTMENT: /* lowered before the checks (nm_kinetic_lower) */
            return nm_perr(p, NS_ERR_PARSE, s->line, "a KINETIC statement outside a KINETIC block");
        case ST_EQUATION: /* in a LINEAR or NONLINEAR block (nm_parse_statement) */
            if (check_ex(p, s->e, *scope, *n_scope, s->line) || check_ex(p, s->e2, *scope, *n_scope, s->line)) return -1;
            break;
        case ST_SOLVE:
            if (check_solve(p, s, owner)) return -1;
            break;
        }
    }
    *n_scope = base;
    return 0;
}

/* Is name a LOCAL of l or an enclosing list (scope), or an argument? */
typedef struct wscope {
    const stlist *l;
    const struct wscope *up;
} wscope;
static int shadowed(const wscope *w, char **args, int n_args, const char *name) {
    for (; w; w = w->up)
        if (nm_in_list(w->l->locals, w->l->n_locals, name)) return 1;
    return nm_in_list(args, n_args, name);
}
static int mark_writes(parser *p, const stlist *l, const wscope *up, char **args, int n_args) {
    wscope w = {l, up};
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_ASSIGN && !shadowed(&w, args, n_args, s->name)) {
            var *v = nm_var(p->m, s->name);
            if (!v && !strcmp(s->name, "v")) {
                /* v = v + 10 in a PROCEDURE: NEURON's mechanism has its own copy of
                 * v, set from the node's at each entry; the membrane keeps its own */
                if (!(v = nm_add_var(p, "v", V_ASSIGNED, 0, s->line))) return -1;
                v->copy_in = 1;
            } else if (v && v->cls == V_ION_READ) {
                v->cls = V_ASSIGNED; /* written READ ion variable: a copy, set from the ion at each entry */
                v->copy_in = 1;
            }
        }
        if (s->kind == ST_IF || s->kind == ST_WHILE || s->kind == ST_FROM || (s->kind == ST_CALL && s->then_)) {
            if (mark_writes(p, s->then_, &w, args, n_args)) return -1;
            if (s->else_ && mark_writes(p, s->else_, &w, args, n_args)) return -1;
        }
    }
    return 0;
}

/* FUNCTIONs and PROCEDUREs that call themselves, directly or through others,
 * as NEURON's C does: block->recursive marks each block on a cycle of the call
 * graph (the generated code then calls it as a C function of its own rather
 * than inlining it). reach: whether a call in the list leads to `target`;
 * seen: the blocks already followed from the current start. */
static int reach_list(parser *p, const stlist *l, int target, char *seen);
static int reach_ex(parser *p, const ex *e, int target, char *seen) {
    if (!e) return 0;
    if (e->kind == EX_CALL) {
        for (int i = 0; i < p->m->n_blocks; i++) {
            if (strcmp(p->m->blocks[i]->name, e->text) != 0) continue;
            if (i == target) return 1;
            if (!seen[i]) {
                seen[i] = 1;
                if (reach_list(p, p->m->blocks[i]->body, target, seen)) return 1;
            }
        }
        for (int i = 0; i < e->n_args; i++)
            if (reach_ex(p, e->args[i], target, seen)) return 1;
        return 0;
    }
    return reach_ex(p, e->a, target, seen) || reach_ex(p, e->b, target, seen);
}
static int reach_list(parser *p, const stlist *l, int target, char *seen) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (reach_ex(p, s->e, target, seen) || reach_ex(p, s->index, target, seen) ||
            reach_ex(p, s->to, target, seen) || reach_ex(p, s->by, target, seen))
            return 1;
        if (s->then_ && reach_list(p, s->then_, target, seen)) return 1;
        if (s->else_ && reach_list(p, s->else_, target, seen)) return 1;
    }
    return 0;
}
static int mark_recursion(parser *p) {
    char *seen = nm_calloc(nm_parse_arena, (size_t)p->m->n_blocks + 1, 1);
    if (!seen) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, 1, "out of memory");
    for (int i = 0; i < p->m->n_blocks; i++) {
        memset(seen, 0, (size_t)p->m->n_blocks + 1);
        block *b = p->m->blocks[i];
        b->recursive = (b->kind == B_FUNCTION || b->kind == B_PROCEDURE) && reach_list(p, b->body, i, seen);
    }
    return 0;
}

/* the STATEs that e names, appended to b's unknowns in order of first appearance */
static int states_in(parser *p, block *b, const ex *e) {
    if (!e) return 0;
    if (e->kind == EX_VAR) {
        const var *v = nm_var(p->m, e->text);
        if (v && v->cls == V_STATE && !nm_in_list(b->unknowns, b->n_unknowns, e->text)) {
            if (v->size) return nm_perr(p, NS_ERR_UNSUPPORTED, b->line, "%s: array states are not supported", b->name);
            if (nm_add_name(&b->unknowns, &b->n_unknowns, e->text)) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, b->line, "out of memory");
        }
        return 0;
    }
    for (int k = 0; k < e->n_args; k++)
        if (states_in(p, b, e->args[k])) return -1;
    return states_in(p, b, e->a) || states_in(p, b, e->b);
}
/* the equations of l and the lists inside it, in the text's order: their count into *n_eq (a '~+'
 * adds to the one before), their STATEs into b's unknowns unless solvefor */
static int alg_equations(parser *p, block *b, const stlist *l, int solvefor, int *n_eq) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind != ST_EQUATION) {
            if (alg_equations(p, b, s->then_, solvefor, n_eq) || alg_equations(p, b, s->else_, solvefor, n_eq))
                return -1;
            continue;
        }
        if (s->react == '+' && *n_eq == 0) /* nocmodl: "no previous equation for adding terms" */
            return nm_perr(p, NS_ERR_PARSE, s->line, "%s %s: '~+' adds terms to the previous equation: there is none",
                           b->alg == 'L' ? "LINEAR" : "NONLINEAR", b->name);
        *n_eq += s->react != '+';
        if (!solvefor && (states_in(p, b, s->e) || states_in(p, b, s->e2))) return -1;
    }
    return 0;
}
/* LINEAR / NONLINEAR: the unknowns (SOLVEFOR's, else the STATEs of the equations), as many as equations
 * as written (nocmodl's count where no STATE is an array; the rows are numbered as the block runs) */
static int alg_unknowns(parser *p, block *b) {
    const char *what = b->alg == 'L' ? "LINEAR" : "NONLINEAR";
    int n_eq = 0;
    if (alg_equations(p, b, b->body, b->n_unknowns > 0, &n_eq)) return -1;
    for (int k = 0; k < b->n_unknowns; k++) {
        const var *v = nm_var(p->m, b->unknowns[k]);
        if (!v || v->cls != V_STATE)
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, b->line, "%s %s: SOLVEFOR %s is not a STATE", what, b->name,
                        b->unknowns[k]);
    }
    if (n_eq == 0) return nm_perr(p, NS_ERR_PARSE, b->line, "%s %s has no equations", what, b->name);
    if (n_eq != b->n_unknowns)
        return nm_perr(p, NS_ERR_INVALID_ARGUMENT, b->line, "%s %s: %d equations for %d unknown STATEs", what, b->name,
                    n_eq, b->n_unknowns);
    return 0;
}

/* does l (or a block inside it) assign name, other than after PROTECT? */
static int assigns(const stlist *l, const char *name) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_ASSIGN && !s->protect && !strcmp(s->name, name)) return 1;
        if (s->then_ && assigns(s->then_, name)) return 1;
        if (s->else_ && assigns(s->else_, name)) return 1;
    }
    return 0;
}

/* whether INITIAL, BREAKPOINT, a BEFORE/AFTER block or any FUNCTION or PROCEDURE assigns name (not after PROTECT) */
static int assigned_anywhere(const struct ns_nmodl *m, const char *name) {
    int written = (m->initial && assigns(m->initial, name)) || assigns(m->breakpoint, name);
    for (int h = 0; h < NS_MECH_N_HOOKS && !written; h++) written = m->hooks[h] && assigns(m->hooks[h], name);
    for (int b = 0; b < m->n_blocks && !written; b++) written = assigns(m->blocks[b]->body, name);
    return written;
}

/* GLOBAL X0 of a STATE X (not an ion's): nocmodl's implicit X0, X's value before INITIAL (its START value
 * unless set), a GLOBAL here (cadifusl.mod's `GLOBAL Buffer0`). 1 when name is one (p->status on failure) */
static int state0(parser *p, const char *name, int line) {
    struct ns_nmodl *m = p->m;
    const size_t n = strlen(name);
    if (n < 2 || name[n - 1] != '0') return 0;
    char base[128];
    if (n - 1 >= sizeof base) return 0;
    memcpy(base, name, n - 1);
    base[n - 1] = 0;
    const var *x = nm_var(m, base);
    if (!x || x->cls != V_STATE || x->ion >= 0) return 0;
    const double value = x->value;
    const int xi = (int)(x - m->vars);
    var *g = nm_add_var(p, name, V_GLOBAL, value, line); /* may move m->vars */
    if (!g) return 1;
    m->vars[xi].start = (int)(g - m->vars) + 1;
    return 1;
}

/* the mechanism's name, the copies of v and ions, RANGE/GLOBAL/POINTER names' classes */
static int finish_classes(parser *p) {
    struct ns_nmodl *m = p->m;
    if (!m->name || !strcmp(m->name, "nothing")) {
        /* no NEURON block, no SUFFIX in it, or `SUFFIX nothing`: nocmodl names the
         * (density) mechanism after the file, without its extension */
        const char *dot = strrchr(m->file, '.');
        const size_t n = dot ? (size_t)(dot - m->file) : strlen(m->file);
        int ok = n > 0 && (isalpha((unsigned char)m->file[0]) || m->file[0] == '_');
        for (size_t i = 0; ok && i < n; i++) ok = isalnum((unsigned char)m->file[i]) || m->file[i] == '_';
        if (!ok)
            return nm_perr(p, NS_ERR_PARSE, 1,
                        "no SUFFIX or POINT_PROCESS, and the file name '%s' is no mechanism name (a letter, then letters, "
                        "digits or '_', as nocmodl takes it)",
                        m->file);
        free(m->name);
        if (!(m->name = nm_dupn(m->file, n))) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, 1, "out of memory");
    }
    if (!m->breakpoint) {
        m->breakpoint = nm_calloc(nm_parse_arena, 1, sizeof *m->breakpoint);
        if (!m->breakpoint) return -1;
    }
    /* v and READ ion variables that the file assigns: per-instance copies (NEURON's) */
    if (m->initial && mark_writes(p, m->initial, NULL, NULL, 0)) return -1;
    if (mark_writes(p, m->breakpoint, NULL, NULL, 0)) return -1;
    if (m->net_receive && mark_writes(p, m->net_receive, NULL, m->net_args, m->n_net_args)) return -1;
    if (m->net_initial && mark_writes(p, m->net_initial, NULL, m->net_args, m->n_net_args)) return -1;
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (m->hooks[h] && mark_writes(p, m->hooks[h], NULL, NULL, 0)) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (mark_writes(p, m->blocks[i]->body, NULL, m->blocks[i]->args, m->blocks[i]->n_args)) return -1;
    for (int i = 0; i < m->n_vars; i++) {
        var *v = &m->vars[i];
        if (v->cls == V_PARAM && nm_in_list(m->globals_decl, m->n_globals_decl, v->name)) v->cls = V_GLOBAL;
        /* NEURON: a PARAMETER that is not RANGE is GLOBAL */
        if (v->cls == V_PARAM && !nm_in_list(m->range, m->n_range, v->name)) v->cls = V_GLOBAL;
    }
    /* a declared GLOBAL (a PARAMETER not RANGE) X0 of a STATE X is X's value before INITIAL, as nocmodl's
     * initmodel (`pump = pump0;`: NEURON's cabpump.mod, whose INITIAL does not set pump) */
    for (int i = 0; i < m->n_vars; i++) {
        const var *x = &m->vars[i];
        if (x->cls != V_STATE || x->ion >= 0 || x->start) continue;
        char s0[130];
        if (snprintf(s0, sizeof s0, "%s0", x->name) >= (int)sizeof s0) continue;
        const var *g = nm_var(m, s0);
        if (g && g->cls == V_GLOBAL && !g->size) m->vars[i].start = (int)(g - m->vars) + 1;
    }
    /* a RANGE name that is never declared is ignored, as nocmodl does; a GLOBAL one is an error there too,
     * except in a THREADSAFE file that assigns it (not after PROTECT): nocmodl makes it a per-thread global
     * (it warns), which is an ASSIGNED field here, as a module-level LOCAL */
    for (int i = 0; i < m->n_globals_decl; i++) {
        if (nm_var(m, m->globals_decl[i])) continue;
        if (state0(p, m->globals_decl[i], m->globals_line[i])) {
            if (p->status) return -1;
            continue;
        }
        if (!p->threadsafe || !assigned_anywhere(m, m->globals_decl[i]))
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, m->globals_line[i],
                        "GLOBAL %s: not declared in PARAMETER or ASSIGNED%s", m->globals_decl[i],
                        p->threadsafe ? "" : " (nocmodl takes an undeclared GLOBAL only in a THREADSAFE file that assigns it unPROTECTed)");
        if (!nm_add_var(p, m->globals_decl[i], V_ASSIGNED, 0, m->globals_line[i])) return -1;
    }
    /* POINTER names: declared in ASSIGNED (or nowhere, as nocmodl allows), no field; one whose slot the
     * C writes is the C's storage (netrand.inc's `_p_sop = ecalloc(...)`): a field, as a BBCOREPOINTER */
    int kept = 0;
    for (int k = 0; k < m->n_pointers; k++) {
        var *v = nm_var(m, m->pointers[k]);
        if (nm_verbatim_pointer_storage(m, m->pointers[k])) {
            if (!v && !(v = nm_add_var(p, m->pointers[k], V_ASSIGNED, 0, m->pointers_line[k]))) return -1;
            if ((v->cls != V_ASSIGNED && v->cls != V_PARAM && v->cls != V_GLOBAL) || v->size)
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, m->pointers_line[k],
                               "POINTER %s: declared as a STATE, CONSTANT, ion variable or array too", m->pointers[k]);
            v->cls = V_ASSIGNED; /* per instance, as the POINTER's slot (a declared value is ignored) */
            continue;
        }
        m->pointers[kept] = m->pointers[k];
        m->pointers_line[kept++] = m->pointers_line[k];
    }
    m->n_pointers = kept;
    for (int k = 0; k < m->n_pointers; k++) {
        var *v = nm_var(m, m->pointers[k]);
        if (!v && !(v = nm_add_var(p, m->pointers[k], V_POINTER, 0, m->pointers_line[k]))) return -1;
        /* declared in PARAMETER (NEURON's gap.mod: its units; a value is ignored) or ASSIGNED, as nocmodl takes it */
        if (v->cls != V_ASSIGNED && v->cls != V_POINTER && v->cls != V_PARAM && v->cls != V_GLOBAL)
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, m->pointers_line[k],
                        "POINTER %s: declared as a STATE, CONSTANT or ion variable too", m->pointers[k]);
        if (v->size) return nm_perr(p, NS_ERR_UNSUPPORTED, m->pointers_line[k], "POINTER %s: an array", m->pointers[k]);
        if (v->pointer >= 0) return nm_perr(p, NS_ERR_PARSE, m->pointers_line[k], "POINTER %s twice", m->pointers[k]);
        v->cls = V_POINTER;
        v->pointer = k;
    }
    return 0;
}

/* VERBATIM C's names (nm_verbatim_check), then the random streams' hidden fields */
static int finish_streams(parser *p) {
    struct ns_nmodl *m = p->m;
    /* VERBATIM C: what it names must mean something here (before the random
     * streams: its C may draw too) */
    m->threadsafe = p->threadsafe;
    if ((p->status = nm_verbatim_check(m))) return -1;
    /* random numbers: the instance's streams in hidden ASSIGNED fields, numbered last among them:
     * stream 0 for normrand and the like, stream k + 1 for RANDOM variable k */
    m->random_field = -1;
    m->n_streams = 0;
    for (int k = 0; k < m->n_randoms; k++) {
        if (nm_var(m, m->randoms[k]))
            return nm_perr(p, NS_ERR_INVALID_ARGUMENT, m->randoms_line[k], "RANDOM %s: declared elsewhere too",
                        m->randoms[k]);
        var *v = nm_add_var(p, m->randoms[k], V_RANDOM, 0, m->randoms_line[k]);
        if (!v) return -1;
        v->stream = k + 1;
    }
    if (nm_random_used(m)) {
        m->n_streams = 1 + m->n_randoms;
        for (int q = 0; q < m->n_streams; q++)
            for (int k = 0; k < 4; k++) {
                char *name = (char *)nm_random_field_names[k];
                if (q) { /* __ran_<RANDOM>_id1, _id2, _id3, _seq: an nrnran123 stream (nmodl_random.h) */
                    size_t nl = strlen(m->randoms[q - 1]) + 16;
                    if (!(name = nm_calloc(nm_parse_arena, nl, 1))) return -1;
                    snprintf(name, nl, "__ran_%s_%s", m->randoms[q - 1], nm_random_stream_fields[k]);
                }
                if (nm_var(m, name) || !nm_add_var(p, name, V_ASSIGNED, 0, 1))
                    return p->status ? -1 : nm_perr(p, NS_ERR_INVALID_ARGUMENT, 1, "%s is reserved", name);
            }
    }
    return 0;
}
/* A TABLE's block sets more of NEURON's globals than its TABLE names (Mainen's kv.mod: `tadj = ...` in
 * trates, read by BREAKPOINT): in NEURON the table's build runs the block at each point, and the last
 * run's values stay, also while the lookups run instead of the block. Such a variable is an ASSIGNED
 * scalar that is not RANGE (hoc's global; a field per instance here): it becomes a column of the table
 * that holds that last value (n_last), so that the lookup sets it as NEURON's build left it. */
typedef struct side_scope { /* the lists around a statement: their LOCALs shadow the mechanism's names */
    const stlist *l;
    const struct side_scope *up;
} side_scope;
static int table_side_list(parser *p, table_decl *t, const block *b, const side_scope *sc, char *seen);
static int table_side_ex(parser *p, table_decl *t, const ex *e, char *seen) {
    if (!e) return 0;
    if (e->kind == EX_CALL) {
        for (int i = 0; i < p->m->n_blocks; i++) {
            const block *c = p->m->blocks[i];
            if (seen[i] || strcmp(c->name, e->text)) continue;
            seen[i] = 1;
            const side_scope top = {c->body, NULL};
            if (table_side_list(p, t, c, &top, seen)) return -1;
        }
        for (int k = 0; k < e->n_args; k++)
            if (table_side_ex(p, t, e->args[k], seen)) return -1;
    }
    return table_side_ex(p, t, e->a, seen) || table_side_ex(p, t, e->b, seen) ? -1 : 0;
}
static int table_side_list(parser *p, table_decl *t, const block *b, const side_scope *sc, char *seen) {
    for (int i = 0; sc->l && i < sc->l->n; i++) {
        const st *s = sc->l->s[i];
        const side_scope in_then = {s->then_, sc}, in_else = {s->else_, sc};
        if (table_side_ex(p, t, s->e, seen) || table_side_ex(p, t, s->e2, seen) || table_side_ex(p, t, s->to, seen) ||
            table_side_list(p, t, b, &in_then, seen) || table_side_list(p, t, b, &in_else, seen))
            return -1;
        if (s->kind != ST_ASSIGN || s->index || nm_in_list(b->args, b->n_args, s->name) ||
            nm_in_list(t->names, t->n_names, s->name) || nm_in_list(p->m->range, p->m->n_range, s->name))
            continue;
        int local = 0;
        for (const side_scope *u = sc; u && !local; u = u->up)
            local = u->l && nm_in_list(u->l->locals, u->l->n_locals, s->name);
        const var *v = local ? NULL : nm_var(p->m, s->name);
        if (v && v->cls == V_ASSIGNED && !v->size && v->ion < 0 && !v->copy_in && v->field >= 0) {
            if (nm_add_name(&t->names, &t->n_names, s->name)) return -1;
            t->n_last++;
        }
    }
    return 0;
}


/* Whether an expression or a statement list reads name, in the blocks it calls too (seen: per block) */
static int reads_list(const struct ns_nmodl *m, const stlist *l, const char *name, char *seen);
static int reads_ex(const struct ns_nmodl *m, const ex *e, const char *name, char *seen) {
    if (!e) return 0;
    if (e->kind == EX_VAR && !strcmp(e->text, name)) return 1;
    if (e->kind == EX_CALL) {
        for (int i = 0; i < m->n_blocks; i++)
            if (!seen[i] && !strcmp(m->blocks[i]->name, e->text)) {
                seen[i] = 1;
                if (reads_list(m, m->blocks[i]->body, name, seen)) return 1;
            }
        for (int k = 0; k < e->n_args; k++)
            if (reads_ex(m, e->args[k], name, seen)) return 1;
    }
    return reads_ex(m, e->a, name, seen) || reads_ex(m, e->b, name, seen);
}
static int reads_list(const struct ns_nmodl *m, const stlist *l, const char *name, char *seen) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (reads_ex(m, s->e, name, seen) || reads_ex(m, s->e2, name, seen) || reads_ex(m, s->index, name, seen) ||
            reads_ex(m, s->to, name, seen) || reads_ex(m, s->by, name, seen) || reads_list(m, s->then_, name, seen) ||
            reads_list(m, s->else_, name, seen))
            return 1;
    }
    return 0;
}

/* NEURON builds the TABLE of a file that nocmodl finds not thread safe (VERBATIM without THREADSAFE)
 * at the block's first call (nocmodl's _check_NAME() in it), with the GLOBALs as they are then; other
 * files' before INITIAL (_check_table_thread). The two differ where the block reads a GLOBAL that a
 * block writes (My_cat.mod: INITIAL sets k, which the tabled FUNCTIONs divide by): such a table is
 * built at its first call here too (lazy), on the CPU loop (the GPU's tables are built on the host
 * before each phase). */
static int table_lazy(parser *p, const block *b, int index) {
    struct ns_nmodl *m = p->m;
    if (p->threadsafe || !p->any_verbatim) return 0;
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        if (v->cls != V_GLOBAL || !assigned_anywhere(m, v->name)) continue;
        char *seen = nm_calloc(nm_parse_arena, (size_t)m->n_blocks, 1);
        if (!seen) return -1;
        seen[index] = 1;
        if (reads_list(m, b->body, v->name, seen)) {
            nm_cpu_only(p, b->table->line, "a TABLE whose block reads a GLOBAL that the file assigns (NEURON builds it "
                                           "at the first call, in a file that is not THREADSAFE)");
            return 1;
        }
    }
    return 0;
}

/* the fields, the GLOBALs, the TABLEs' storage; KINETIC blocks lowered, LINEAR/NONLINEAR unknowns */
static int finish_layout(parser *p) {
    struct ns_nmodl *m = p->m;
    /* fields: parameters, assigned (GLOBAL assigned are per instance: they
     * are written before they are read, CoreNEURON does the same), states */
    /* an array takes `size` consecutive fields (globals); the sums are bounded by
     * the number of variables times nm_parse_dim's 1e6 */
    long long nf = 0;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_PARAM) m->vars[i].field = (int)nf, nf += m->vars[i].size ? m->vars[i].size : 1;
    m->n_params = (int)nf;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_ASSIGNED) m->vars[i].field = (int)nf, nf += m->vars[i].size ? m->vars[i].size : 1;
    m->n_assigned = (int)nf - m->n_params;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_STATE) m->vars[i].field = (int)nf, nf += m->vars[i].size ? m->vars[i].size : 1;
    long long ng = 0;
    for (int i = 0; i < m->n_vars; i++)
        if (m->vars[i].cls == V_GLOBAL) m->vars[i].global = (int)ng, ng += m->vars[i].size ? m->vars[i].size : 1;
    if (nf > MAX_SLOTS || ng > MAX_SLOTS)
        return nm_perr(p, NS_ERR_SIZE, 1, "%lld fields and %lld GLOBALs per instance: more than %d", nf, ng, MAX_SLOTS);
    m->n_states = (int)nf - m->n_params - m->n_assigned;
    m->n_fields = (int)nf;
    if (nm_var(m, nm_random_field_names[0])) m->random_field = nm_var(m, nm_random_field_names[0])->field;
    long long tsize = 0;
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        if (!b->table) continue;
        table_decl *t = b->table;
        for (int k = 0; k < t->n_names; k++) {
            var *v = nm_var(m, t->names[k]);
            if (!v || v->field < 0 || (v->cls != V_ASSIGNED && v->cls != V_STATE))
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, t->line, "TABLE %s in %s: not an ASSIGNED or STATE variable", t->names[k],
                            b->name);
        }
        for (int k = 0; k < t->n_depend; k++) {
            /* a GLOBAL, celsius, dt, or a RANGE variable (as nocmodl, the table
             * then follows the value of the first instance: the builder's) */
            var *v = nm_var(m, t->depend[k]);
            if (strcmp(t->depend[k], "celsius") && strcmp(t->depend[k], "dt") &&
                (!v || v->size || (v->cls != V_GLOBAL && v->cls != V_PARAM && v->cls != V_ASSIGNED)))
                return nm_perr(p, NS_ERR_INVALID_ARGUMENT, t->line,
                            "TABLE DEPEND %s in %s: not a PARAMETER, an ASSIGNED, celsius or dt", t->depend[k], b->name);
        }
        if (b->kind == B_PROCEDURE) {
            char *seen = nm_calloc(nm_parse_arena, (size_t)m->n_blocks, 1);
            if (!seen) return -1;
            seen[i] = 1;
            const side_scope top = {b->body, NULL};
            if (table_side_list(p, t, b, &top, seen)) return -1;
        }
        if ((t->lazy = table_lazy(p, b, i)) < 0) return -1;
        m->lazy_tables |= t->lazy;
        for (int k = 0; k < t->n_names; k++) { /* the columns: an array's every element, as NEURON's */
            const var *v = nm_var(m, t->names[k]);
            const int n = v->size > 0 ? v->size : 1;
            int *cf = nm_realloc(nm_parse_arena, t->col_field, (size_t)(t->n_cols + n) * sizeof *cf);
            if (!cf) return -1;
            t->col_field = cf;
            for (int e = 0; e < n; e++) t->col_field[t->n_cols++] = v->field + e;
        }
        t->offset = (int)tsize;
        long long cols = b->kind == B_FUNCTION ? 1 : t->n_cols;
        tsize += 4 + t->n_depend + cols * (t->with + 1LL);
        if (tsize > MAX_TABLE)
            return nm_perr(p, NS_ERR_SIZE, t->line, "the TABLEs need %lld values, more than %d (lower WITH)", tsize,
                        MAX_TABLE);
        /* usetable_<name> is a GLOBAL, 1 by default, as NEURON has it */
        size_t nl = strlen(b->name) + 10;
        char *name = nm_calloc(nm_parse_arena, nl, 1);
        if (!name) return -1;
        snprintf(name, nl, "usetable_%s", b->name);
        var *u = nm_add_var(p, name, V_GLOBAL, 1, b->line);
        if (!u) return -1;
        if (ng >= MAX_SLOTS) return nm_perr(p, NS_ERR_SIZE, b->line, "more than %d GLOBALs", MAX_SLOTS);
        t->usetable = u->global = (int)ng++;
    }
    m->n_globals = (int)ng;
    m->table_size = (int)tsize;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->kind == B_KINETIC && (p->status = nm_kinetic_lower(m, m->blocks[i]))) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->kind == B_DERIVATIVE && (p->status = nm_deriv_arrays_lower(m, m->blocks[i]))) return -1;
    for (int i = 0; i < m->n_blocks; i++)
        if (m->blocks[i]->alg && alg_unknowns(p, m->blocks[i])) return -1;
    return 0;
}

/* every block's names and calls (check_list), recursion, and the events' places */
static int finish_names(parser *p) {
    struct ns_nmodl *m = p->m;
    /* names and calls */
    char **scope = NULL;
    int n_scope = 0;
    p->in_initial = 1;
    p->ev_ctx = NM_EV_INITIAL;
    p->vbody = m->initial;
    if (m->initial && check_list(p, m->initial, NULL, &scope, &n_scope)) goto fail;
    p->in_initial = 0;
    p->ev_ctx = NM_EV_NONE;
    p->vbody = m->breakpoint;
    if (check_list(p, m->breakpoint, NULL, &scope, &n_scope)) goto fail;
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) {
        p->in_hook = h == NS_MECH_CONSTRUCTOR || h == NS_MECH_DESTRUCTOR ? 2 : 1;
        p->vbody = m->hooks[h];
        if (m->hooks[h] && check_list(p, m->hooks[h], NULL, &scope, &n_scope)) goto fail;
    }
    p->in_hook = 0;
    if (m->net_receive) {
        if (!m->point) {
            nm_perr(p, NS_ERR_UNSUPPORTED, 1, "NET_RECEIVE in a density mechanism (SUFFIX %s)", m->name);
            goto fail;
        }
        for (int k = 0; k < m->n_net_args; k++)
            if (scope_add(p, &scope, &n_scope, m->net_args[k], 0)) goto fail;
        p->ev_ctx = NM_EV_RECEIVE_INITIAL;
        p->vbody = m->net_initial;
        if (m->net_initial && check_list(p, m->net_initial, NULL, &scope, &n_scope)) goto fail;
        if (m->net_initial) m->events |= NS_MECH_EV_INIT;
        /* flag: the event's (0 for a connection's, net_send's for a self event) */
        if (scope_add(p, &scope, &n_scope, "flag", 0)) goto fail;
        p->ev_ctx = NM_EV_RECEIVE;
        p->vbody = m->net_receive;
        if (check_list(p, m->net_receive, NULL, &scope, &n_scope)) goto fail;
        p->ev_ctx = NM_EV_NONE;
        n_scope = 0;
    }
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        n_scope = 0;
        /* a FUNCTION's name is its value, which its body may read too */
        if (b->kind == B_FUNCTION && scope_add(p, &scope, &n_scope, b->name, 0)) goto fail;
        for (int k = 0; k < b->n_args; k++)
            if (scope_add(p, &scope, &n_scope, b->args[k], 0)) goto fail;
        p->vbody = b->body;
        if (check_list(p, b->body, b, &scope, &n_scope)) goto fail;
    }
    p->vbody = NULL;
    if (mark_recursion(p)) goto fail;
    if (m->events && !m->point) { /* net_send in a SUFFIX's INITIAL: no queue to send to (nocmodl: the same) */
        nm_perr(p, NS_ERR_INVALID_ARGUMENT, p->ev_line,
             "net_send in a density mechanism (SUFFIX %s): events need a POINT_PROCESS or ARTIFICIAL_CELL", m->name);
        goto fail;
    }
    return 0; /* scope lives in the arena */
fail:
    return -1;
}

int nm_finish(parser *p) {
    return finish_classes(p) || finish_streams(p) || finish_layout(p) || finish_names(p) ? -1 : 0;
}
