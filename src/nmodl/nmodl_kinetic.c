/* KINETIC blocks: the reactions, fluxes, CONSERVE and COMPARTMENT statements
 * of a block lowered into ordinary statements (assignments to LOCALs) that
 * compute, at the states' current values, what NEURON's nocmodl writes into
 * the sparse solver's right-hand side and matrix (docs/mechanisms.md,
 * "Numerics"): per row (a STATE of the scheme) the flux sum kinF_<r> and the
 * entries kinJ_<r>_<c> = -d(flux r)/d(state c) of mass action with the rate
 * expressions held constant (nocmodl's _MATELM terms; a `<<` flux adds no
 * entry); a row that a CONSERVE replaces holds total - sum(num cap x) and the
 * coefficients num cap. The code generator (nmodl_gen_block.c) wraps the body in
 * NEURON's Newton iteration of the implicit Euler step. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_impl.h"

typedef struct lower {
    struct ns_nmodl *m;
    kinetic *k;
    ns_status status;
    int deriv; /* METHOD euler or runge: the derivative form (no matrix, no CONSERVE) */
    const char *blk; /* "KINETIC", or "DERIVATIVE" (nm_deriv_arrays_lower) */
} lower;

static int lfail(lower *L, ns_status s, int line, const char *fmt, ...) NS_PRINTF_LIKE(4, 5);
static int lfail(lower *L, ns_status s, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    nm_vfail(&L->status, s, L->m->file, line, fmt, ap);
    va_end(ap);
    return -1;
}
static int oom(lower *L, int line) { return lfail(L, NS_ERR_OUT_OF_MEMORY, line, "out of memory"); }

static const var *find_var(const struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_vars; i++)
        if (!strcmp(m->vars[i].name, name)) return &m->vars[i];
    return NULL;
}
static int row_of(const kinetic *k, const char *name, int elem) {
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->states[i], name) && k->elem[i] == elem) return i;
    return -1;
}
#define ROW(k, t) row_of((k), (t).name, (t).elem)

/* ---- expressions in the module's arena ---- */

static char *adup(lower *L, const char *s) {
    size_t n = strlen(s) + 1;
    char *r = nm_calloc(&L->m->arena, n, 1);
    if (r) memcpy(r, s, n);
    return r;
}
static ex *mk(lower *L, ex_kind kind, int op, ex *a, ex *b) {
    ex *e = nm_calloc(&L->m->arena, 1, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->op = op;
    e->a = a;
    e->b = b;
    const int da = a ? a->depth : 0, db = b ? b->depth : 0;
    e->depth = 1 + (da > db ? da : db);
    return e;
}
static ex *bin(lower *L, int op, ex *a, ex *b) { return a && b ? mk(L, EX_BIN, op, a, b) : NULL; }
static ex *var_ex(lower *L, const char *name) {
    ex *e = mk(L, EX_VAR, 0, NULL, NULL);
    if (e && !(e->text = adup(L, name))) return NULL;
    return e;
}
static ex *num_ex(lower *L, int v) {
    ex *e = mk(L, EX_NUM, 0, NULL, NULL);
    char t[24];
    snprintf(t, sizeof t, "%d", v);
    if (e) {
        e->num = v;
        if (!(e->text = adup(L, t))) return NULL;
    }
    return e;
}
/* e with the variable name replaced by the number value (a FROM loop's variable, COMPARTMENT's index) */
static ex *subst(lower *L, const ex *e, const char *name, int value) {
    if (!e) return NULL;
    if (e->kind == EX_VAR && !e->a && !strcmp(e->text, name)) return num_ex(L, value);
    ex *c = mk(L, e->kind, e->op, NULL, NULL);
    if (!c) return NULL;
    c->num = e->num;
    c->text = e->text;
    if (e->a && !(c->a = subst(L, e->a, name, value))) return NULL;
    if (e->b && !(c->b = subst(L, e->b, name, value))) return NULL;
    if (e->n_args) {
        if (!(c->args = nm_calloc(&L->m->arena, (size_t)e->n_args, sizeof *c->args))) return NULL;
        for (int k = 0; k < e->n_args; k++)
            if (!(c->args[k] = subst(L, e->args[k], name, value))) return NULL;
    }
    c->n_args = e->n_args;
    c->depth = e->depth;
    return c;
}
/* a constant integer expression (numbers, DEFINEs and CONSTANTs, + - * /): 0, else -1 */
static int const_eval(const struct ns_nmodl *m, const ex *e, double *out) {
    double a, b;
    switch (e->kind) {
    case EX_NUM: *out = e->num; return 0;
    case EX_VAR: {
        if (e->a) return -1;
        const var *v = find_var(m, e->text);
        if (!v || v->cls != V_CONST) return -1;
        *out = v->value;
        return 0;
    }
    case EX_NEG:
        if (const_eval(m, e->a, &a)) return -1;
        *out = -a;
        return 0;
    case EX_BIN:
        if (const_eval(m, e->a, &a) || const_eval(m, e->b, &b)) return -1;
        switch (e->op) {
        case '+': *out = a + b; return 0;
        case '-': *out = a - b; return 0;
        case '*': *out = a * b; return 0;
        case '/': *out = a / b; return 0;
        default: return -1;
        }
    default: return -1;
    }
}

static void fname(char *out, size_t n, int r) { snprintf(out, n, "kinF_%d", r); }
static void jname(char *out, size_t n, int r, int c) { snprintf(out, n, "kinJ_%d_%d", r, c); }

/* ---- FROM loops unrolled (reactions over array states, NEURON's cadifus pattern) ---- */

enum { MAX_UNROLLED = 100000 }; /* statements of a KINETIC block after unrolling */

static stlist *clone_list(lower *L, const stlist *l, const char *name, int value);
static st *clone_st(lower *L, const st *s, const char *name, int value) {
    st *c = nm_calloc(&L->m->arena, 1, sizeof *c);
    if (!c) return NULL;
    *c = *s;
    if (s->kind == ST_ASSIGN && !s->index && !strcmp(s->name, name)) {
        lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is FROM's loop variable", name);
        return NULL;
    }
    if ((s->e && !(c->e = subst(L, s->e, name, value))) || (s->e2 && !(c->e2 = subst(L, s->e2, name, value))) ||
        (s->index && !(c->index = subst(L, s->index, name, value))) || (s->to && !(c->to = subst(L, s->to, name, value))) ||
        (s->by && !(c->by = subst(L, s->by, name, value))))
        return NULL;
    for (int side = 0; side < 2; side++) {
        const rterm *t = side ? s->rhs : s->lhs;
        const int n = side ? s->n_rhs : s->n_lhs;
        if (!n) continue;
        rterm *u = nm_calloc(&L->m->arena, (size_t)n, sizeof *u);
        if (!u) return NULL;
        for (int j = 0; j < n; j++) {
            u[j] = t[j];
            if (t[j].index && !(u[j].index = subst(L, t[j].index, name, value))) return NULL;
        }
        if (side) c->rhs = u;
        else c->lhs = u;
    }
    if ((s->then_ && !(c->then_ = clone_list(L, s->then_, name, value))) ||
        (s->else_ && !(c->else_ = clone_list(L, s->else_, name, value))))
        return NULL;
    return c;
}
static stlist *clone_list(lower *L, const stlist *l, const char *name, int value) {
    stlist *c = nm_calloc(&L->m->arena, 1, sizeof *c);
    if (!c) return NULL;
    *c = *l;
    if (!(c->s = nm_calloc(&L->m->arena, (size_t)(l->n ? l->n : 1), sizeof *c->s))) return NULL;
    for (int i = 0; i < l->n; i++)
        if (!(c->s[i] = clone_st(L, l->s[i], name, value))) return NULL;
    return c;
}
static int append(lower *L, stlist *l, st *s, int *cap, int line) {
    if (l->n == *cap) {
        if (*cap >= MAX_UNROLLED)
            return lfail(L, NS_ERR_SIZE, line, "%s: more than %d statements after its FROM loops", L->blk, MAX_UNROLLED);
        const int nc = *cap ? 2 * *cap : 16;
        st **n = nm_realloc(&L->m->arena, l->s, (size_t)nc * sizeof *n);
        if (!n) return oom(L, line);
        l->s = n;
        *cap = nc;
    }
    l->s[l->n++] = s;
    return 0;
}
/* whether a list holds a reaction, CONSERVE, COMPARTMENT or LONGITUDINAL_DIFFUSION (in its ifs too) */
static int has_scheme(const stlist *l) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_REACTION || s->kind == ST_CONSERVE || s->kind == ST_COMPARTMENT || s->kind == ST_LDIFUS ||
            (s->kind == ST_DERIV && s->index) || has_scheme(s->then_) || has_scheme(s->else_))
            return 1;
    }
    return 0;
}
/* the LOCALs of an unrolled loop's body into the list that receives its copies (nocmodl declares them in
 * the loop's C block; each pass writes them before it reads them, so one declaration serves every copy) */
static int hoist_locals(lower *L, stlist *l, const stlist *body, int line) {
    for (int i = 0; i < body->n_locals; i++) {
        for (int j = 0; j < l->n_locals; j++)
            if (!strcmp(l->locals[j], body->locals[i]))
                return lfail(L, NS_ERR_UNSUPPORTED, line, "LOCAL '%s' of a FROM loop in a KINETIC block has the name "
                             "of a LOCAL around the loop: rename one of them", body->locals[i]);
        if (find_var(L->m, body->locals[i])) /* its declaration moves to the list: it would hide the variable there */
            return lfail(L, NS_ERR_UNSUPPORTED, line, "LOCAL '%s' of a FROM loop in a KINETIC block has the name "
                         "of a variable of the mechanism: rename it", body->locals[i]);
        /* new arrays: a cloned list shares its LOCALs with the original */
        char **n = nm_realloc(&L->m->arena, NULL, (size_t)(l->n_locals + 1) * sizeof *n);
        int *sz = nm_realloc(&L->m->arena, NULL, (size_t)(l->n_locals + 1) * sizeof *sz);
        if (!n || !sz) return oom(L, line);
        for (int j = 0; j < l->n_locals; j++) {
            n[j] = l->locals[j];
            sz[j] = l->local_size ? l->local_size[j] : 0;
        }
        n[l->n_locals] = body->locals[i];
        sz[l->n_locals] = body->local_size ? body->local_size[i] : 0;
        l->locals = n;
        l->local_size = sz;
        l->n_locals++;
    }
    return 0;
}
/* FROM i = a TO b [BY k] { body } with constant bounds: the body once per i, i replaced by its value. Other
 * bounds: a loop without reactions stays a loop; with reactions, NEURON's nocmodl builds the matrix from a
 * loop in C, but CoreNEURON's NMODL (NEURON 9.0.2's nmodl) drops the reactions of such a loop (its nrn_state
 * keeps only the loop's rate assignments), so the form is not portable NEURON: refused. */
static int unroll(lower *L, stlist *l) {
    st **old = l->s;
    const int n = l->n;
    int cap = 0;
    l->s = NULL;
    l->n = 0;
    for (int i = 0; i < n; i++) {
        st *s = old[i];
        if (s->kind == ST_IF) {
            if (unroll(L, s->then_) || (s->else_ && unroll(L, s->else_))) return -1;
        }
        if (s->kind == ST_WHILE && !strcmp(L->blk, "KINETIC") && has_scheme(s->then_))
            return lfail(L, NS_ERR_UNSUPPORTED, s->line, "reactions in a WHILE loop of a KINETIC block: "
                         "CoreNEURON's NMODL counts them once, nocmodl once per pass (use a FROM loop with "
                         "constant bounds)");
        if (s->kind != ST_FROM) {
            if (append(L, l, s, &cap, s->line)) return -1;
            continue;
        }
        double a, b, by = 1;
        const int constant = !const_eval(L->m, s->e, &a) && !const_eval(L->m, s->to, &b) &&
                             !(s->by && const_eval(L->m, s->by, &by)) && a == (int)a && b == (int)b &&
                             by == (int)by && by != 0;
        if (!constant && !has_scheme(s->then_)) { /* statements alone: a loop of the block's code, as nocmodl's */
            if (append(L, l, s, &cap, s->line)) return -1;
            continue;
        }
        if (!constant)
            return lfail(L, NS_ERR_UNSUPPORTED, s->line,
                         "a FROM loop of %s in a %s block needs integer constant bounds (numbers, DEFINEs, "
                         "CONSTANTs)%s", L->blk[0] == 'K' ? "reactions" : "x'[i] equations", L->blk,
                         L->blk[0] == 'K' ? ": CoreNEURON's NMODL drops the reactions of other loops" : "");
        if (s->then_->n_locals && L->blk[0] != 'K') /* a KINETIC block's: hoist_locals below */
            return lfail(L, NS_ERR_UNSUPPORTED, s->line, "LOCAL inside a FROM loop of a %s block is not supported", L->blk);
        for (int v = (int)a; by > 0 ? v <= b : v >= b; v += (int)by) {
            stlist *c = clone_list(L, s->then_, s->name, v);
            if (!c || unroll(L, c)) return L->status ? -1 : oom(L, s->line);
            if (v == (int)a && hoist_locals(L, l, c, s->line)) return -1; /* the copies share them */
            for (int k = 0; k < c->n; k++)
                if (append(L, l, c->s[k], &cap, s->line)) return -1;
        }
    }
    return 0;
}
/* each term's element: an array state's index, a constant in range after unrolling */
static int elements(lower *L, const stlist *l) {
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        if (s->kind == ST_IF && (elements(L, s->then_) || (s->else_ && elements(L, s->else_)))) return -1;
        for (int side = 0; side < 2; side++) {
            rterm *t = side ? s->rhs : s->lhs;
            const int n = side ? s->n_rhs : s->n_lhs;
            for (int j = 0; j < n; j++) {
                const var *v = find_var(L->m, t[j].name);
                const int size = v ? v->size : 0;
                t[j].elem = 0;
                if (s->kind == ST_COMPARTMENT || s->kind == ST_LDIFUS) continue; /* names whole arrays */
                if (!t[j].index) {
                    if (size) return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is an array: it needs an index", t[j].name);
                    continue;
                }
                double e;
                if (!size) return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not an array", t[j].name);
                if (const_eval(L->m, t[j].index, &e) || e != (int)e)
                    return lfail(L, NS_ERR_UNSUPPORTED, s->line,
                                 "%s[...]: the index must be a constant or a FROM loop's variable", t[j].name);
                if (e < 0 || e >= size)
                    return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "%s[%d]: out of 0 .. %d", t[j].name, (int)e, size - 1);
                t[j].elem = (int)e;
            }
        }
    }
    return 0;
}
/* a term's state as an expression: name or name[elem] */
static ex *term_ex(lower *L, const rterm *t) {
    ex *e = var_ex(L, t->name);
    const var *v = find_var(L->m, t->name);
    if (e && v && v->size && !(e->a = num_ex(L, t->elem))) return NULL;
    return e;
}

/* ---- the rows ---- */

static int add_row(lower *L, const char *name, int elem) {
    kinetic *k = L->k;
    if (row_of(k, name, elem) >= 0) return 0;
    char **s = nm_realloc(&L->m->arena, k->states, (size_t)(k->n + 1) * sizeof *s);
    int *e = nm_realloc(&L->m->arena, k->elem, (size_t)(k->n + 1) * sizeof *e);
    if (!s || !e) return -1;
    k->states = s;
    k->elem = e;
    e[k->n] = elem;
    s[k->n++] = (char *)name;
    return 0;
}
/* every STATE a reaction, flux or CONSERVE names, in the order they appear */
static int collect(lower *L, const stlist *l) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_IF) {
            if (collect(L, s->then_) || (s->else_ && collect(L, s->else_))) return -1;
            continue;
        }
        if (s->kind != ST_REACTION && s->kind != ST_CONSERVE) continue;
        for (int side = 0; side < 2; side++) {
            const rterm *t = side ? s->rhs : s->lhs;
            const int n = side ? s->n_rhs : s->n_lhs;
            for (int j = 0; j < n; j++) {
                const var *v = find_var(L->m, t[j].name);
                if (!v) return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is not declared", t[j].name);
                if (v->cls != V_STATE) {
                    if (s->kind == ST_CONSERVE || s->react == '<' || (s->react == '>' && s->n_rhs == 0))
                        return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "%s: '%s' is not a STATE",
                                     s->kind == ST_CONSERVE ? "CONSERVE" : s->react == '<' ? "'<<'" : "'-> (rate)'",
                                     t[j].name);
                    continue; /* a constant factor of the flux (nocmodl's non-state reactant) */
                }
                if (add_row(L, t[j].name, t[j].elem)) return oom(L, s->line);
            }
        }
    }
    return 0;
}

/* LONGITUDINAL_DIFFUSION [i,] flux {states}: each element of each state into m->ldifus with its flux
 * coefficient and its COMPARTMENT size (an earlier statement's, as nocmodl's massageldifus requires),
 * the index replaced by the element as in COMPARTMENT */
static int ldifus(lower *L, const st *s) {
    struct ns_nmodl *m = L->m;
    for (int j = 0; j < s->n_lhs; j++) {
        const var *v = find_var(m, s->lhs[j].name);
        if (!v || v->cls != V_STATE)
            return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "LONGITUDINAL_DIFFUSION: '%s' must be a STATE",
                         s->lhs[j].name);
        for (int e = 0; e < (v->size ? v->size : 1); e++) {
            const int r = row_of(L->k, s->lhs[j].name, e);
            if (r < 0 || !L->k->cap[r])
                return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line,
                             "LONGITUDINAL_DIFFUSION: '%s' must be declared in an earlier COMPARTMENT statement of "
                             "the block and take part in its reactions (nocmodl: \"must be declared in COMPARTMENT\")",
                             s->lhs[j].name);
            struct ldifus *n = nm_realloc(&m->arena, m->ldifus, (size_t)(m->n_ldifus + 1) * sizeof *n);
            if (!n) return oom(L, s->line);
            m->ldifus = n;
            n += m->n_ldifus++;
            n->field = v->field + e;
            n->line = s->line;
            n->vol = L->k->cap[r];
            if (!(n->flux = s->name ? subst(L, s->e, s->name, e) : s->e)) return oom(L, s->line);
        }
    }
    return 0;
}

/* the COMPARTMENT sizes and the rows the CONSERVEs replace (nocmodl: the
 * equation of the last state the statement names, the first of its list) */
static int compartments(lower *L, stlist *l) {
    kinetic *k = L->k;
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        if (s->kind == ST_IF) {
            if (compartments(L, s->then_) || (s->else_ && compartments(L, s->else_))) return -1;
        } else if (s->kind == ST_COMPARTMENT) {
            for (int j = 0; j < s->n_lhs; j++) {
                if (!find_var(L->m, s->lhs[j].name))
                    return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "COMPARTMENT: '%s' is not declared", s->lhs[j].name);
                /* COMPARTMENT i, size(i) {a}: element e of a gets size(e); COMPARTMENT size {a}: every
                 * element the same (a state outside the scheme: nothing to scale) */
                const var *v = find_var(L->m, s->lhs[j].name);
                for (int e = 0; e < (v->size ? v->size : 1); e++) {
                    const int r = row_of(k, s->lhs[j].name, e);
                    if (r < 0) continue;
                    k->cap[r] = s->name ? subst(L, s->e, s->name, e) : s->e;
                    if (!k->cap[r]) return oom(L, s->line);
                }
            }
        } else if (s->kind == ST_LDIFUS) {
            if (ldifus(L, s)) return -1;
        } else if (s->kind == ST_CONSERVE && !L->deriv) {
            int r = -1;
            for (int j = s->n_lhs - 1; j >= 0 && r < 0; j--) {
                const int c = ROW(k, s->lhs[j]);
                if (!k->conserve[c]) r = c;
            }
            if (r < 0) return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "CONSERVE: every state it names is conserved already");
            k->conserve[r] = 1;
            s->method = r; /* the row it replaces, for lower_conserve */
        }
    }
    return 0;
}

/* ---- the statements ---- */

typedef struct out {
    st **s;
    int n;
} out;

static int emit(lower *L, out *o, int line, const char *lhs, ex *e) {
    if (!e) return oom(L, line);
    st *s = nm_calloc(&L->m->arena, 1, sizeof *s);
    st **n = nm_realloc(&L->m->arena, o->s, (size_t)(o->n + 1) * sizeof *n);
    if (!s || !n) return oom(L, line);
    s->kind = ST_ASSIGN;
    s->line = line;
    if (!(s->name = adup(L, lhs))) return oom(L, line);
    s->e = e;
    o->s = n;
    n[o->n++] = s;
    return 0;
}
/* name += e (sign +1) or name -= e (sign -1) */
static int accumulate(lower *L, out *o, int line, const char *name, int sign, ex *e) {
    return emit(L, o, line, name, bin(L, sign > 0 ? '+' : '-', var_ex(L, name), e));
}
/* rate * the product of a side's terms (each num times), one term's count less by `less` */
static ex *mass(lower *L, ex *rate, const rterm *t, int n, int less) {
    ex *e = rate;
    for (int j = 0; j < n && e; j++)
        for (int q = 0; q < t[j].num - (j == less); q++) e = bin(L, '*', e, term_ex(L, &t[j]));
    return e;
}

static int lower_reaction(lower *L, out *o, const st *s) {
    kinetic *k = L->k;
    char nm[64];
    if (s->react == '<') { /* ~ x << (flux): f_flux = 0, b_flux = flux, into x's row */
        const int r = ROW(k, s->lhs[0]);
        if (k->conserve[r]) return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "'%s' is conserved and has a flux", s->lhs[0].name);
        fname(nm, sizeof nm, r);
        if (emit(L, o, s->line, "f_flux", num_ex(L, 0)) || emit(L, o, s->line, "b_flux", s->e) ||
            accumulate(L, o, s->line, nm, 1, var_ex(L, "b_flux")))
            return -1;
        return 0;
    }
    ex *rate[2] = {s->e, s->react == 'R' ? s->e2 : NULL};
    const rterm *side[2] = {s->lhs, s->rhs};
    const int ns[2] = {s->n_lhs, s->n_rhs};
    if (emit(L, o, s->line, "f_flux", mass(L, rate[0], side[0], ns[0], -1)) ||
        emit(L, o, s->line, "b_flux", rate[1] ? mass(L, rate[1], side[1], ns[1], -1) : num_ex(L, 0)))
        return -1;
    /* the rows: the left side loses f - b, the right side gains it */
    for (int j = 0; j < 2; j++)
        for (int q = 0; q < ns[j]; q++) {
            const int r = ROW(k, side[j][q]);
            if (r < 0 || k->conserve[r]) continue;
            fname(nm, sizeof nm, r);
            ex *d = bin(L, '-', var_ex(L, "f_flux"), var_ex(L, "b_flux"));
            if (side[j][q].num != 1) d = bin(L, '*', num_ex(L, side[j][q].num), d);
            if (accumulate(L, o, s->line, nm, j ? 1 : -1, d)) return -1;
        }
    /* the matrix: d(side j's flux)/d(state c) = rate_j num_c prod(others);
     * nocmodl's _linmat is 0 once a side with a state has a second factor */
    for (int j = 0; j < 2 && !L->deriv; j++) {
        if (!rate[j]) continue;
        int factors = 0, states = 0;
        for (int q = 0; q < ns[j]; q++) {
            factors += side[j][q].num;
            states += ROW(k, side[j][q]) >= 0;
        }
        if (states && factors > 1) k->linear = 0;
        for (int q = 0; q < ns[j]; q++) {
            const int c = ROW(k, side[j][q]);
            if (c < 0) continue;
            ex *term = mass(L, rate[j], side[j], ns[j], q);
            if (side[j][q].num != 1) term = bin(L, '*', term, num_ex(L, side[j][q].num));
            if (emit(L, o, s->line, "kinT_", term)) return -1;
            for (int j1 = 0; j1 < 2; j1++)
                for (int q1 = 0; q1 < ns[j1]; q1++) {
                    const int r = ROW(k, side[j1][q1]);
                    if (r < 0 || k->conserve[r]) continue;
                    jname(nm, sizeof nm, r, c);
                    k->jac[r * k->n + c] = 1;
                    ex *t = var_ex(L, "kinT_");
                    if (side[j1][q1].num != 1) t = bin(L, '*', num_ex(L, side[j1][q1].num), t);
                    if (accumulate(L, o, s->line, nm, j == j1 ? 1 : -1, t)) return -1;
                }
        }
    }
    return 0;
}

static int lower_conserve(lower *L, out *o, const st *s) {
    kinetic *k = L->k;
    const int r = s->method;
    char f[64], nm[64];
    fname(f, sizeof f, r);
    if (emit(L, o, s->line, f, s->e)) return -1;
    for (int j = s->n_lhs - 1; j >= 0; j--) { /* nocmodl's order: the last term first */
        const int c = ROW(k, s->lhs[j]);
        ex *coef = num_ex(L, s->lhs[j].num);
        if (k->cap[c]) coef = bin(L, '*', coef, k->cap[c]);
        jname(nm, sizeof nm, r, c);
        k->jac[r * k->n + c] = 1;
        if (emit(L, o, s->line, nm, coef)) return -1;
        ex *x = term_ex(L, &s->lhs[j]);
        if (k->cap[c]) x = bin(L, '*', x, k->cap[c]);
        if (s->lhs[j].num != 1) x = bin(L, '*', x, num_ex(L, s->lhs[j].num));
        if (accumulate(L, o, s->line, f, -1, x)) return -1;
    }
    return 0;
}

static int lower_list(lower *L, stlist *l) {
    out o = {0};
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        switch (s->kind) {
        case ST_REACTION:
            if (lower_reaction(L, &o, s)) return -1;
            break;
        case ST_CONSERVE: /* euler and runge ignore it (nocmodl: "euler method ignores conservation") */
            if (!L->deriv && lower_conserve(L, &o, s)) return -1;
            break;
        case ST_COMPARTMENT:
        case ST_LDIFUS: break;
        case ST_DERIV: return lfail(L, NS_ERR_PARSE, s->line, "%s' = ... in a KINETIC block", s->name);
        case ST_EQUATION: return lfail(L, NS_ERR_PARSE, s->line, "an equation ('~ a = b') in a KINETIC block");
        case ST_SOLVE: return lfail(L, NS_ERR_PARSE, s->line, "SOLVE in a KINETIC block");

        case ST_RETURN: /* VERBATIM `return 0;`: nocmodl's KINETIC function would return before its matrix */
            return lfail(L, NS_ERR_UNSUPPORTED, s->line,
                         "VERBATIM `return` in a KINETIC block (NEURON's function would leave its equations unset)");
        case ST_WHILE:
        case ST_FROM: /* without reactions (unroll): run as written, the bodies lowered as an if's */
            /* fall through */
        case ST_IF:
            if (lower_list(L, s->then_) || (s->else_ && lower_list(L, s->else_))) return -1;
            /* fall through */
        case ST_ASSIGN:
        case ST_VERBATIM: /* C: runs where NEURON's does, at each evaluation of the block (each Newton step) */
        case ST_CALL: {
            st **n = nm_realloc(&L->m->arena, o.s, (size_t)(o.n + 1) * sizeof *n);
            if (!n) return oom(L, s->line);
            o.s = n;
            n[o.n++] = s;
            break;
        }
        }
    }
    l->s = o.s;
    l->n = o.n;
    return 0;
}

/* Does the body write anything but its LOCALs, or call a PROCEDURE? (NEURON
 * runs the block once more at the new states: what it writes is of them.) */
static int side_effects(const struct ns_nmodl *m, const stlist *l, char **locals, int n_locals) {
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_CALL) {
            for (int b = 0; b < m->n_blocks; b++)
                if (!strcmp(m->blocks[b]->name, s->e->text) && m->blocks[b]->kind == B_PROCEDURE) return 1;
        } else if (s->kind == ST_VERBATIM) {
            return 1; /* C may write anything */
        } else if (s->kind == ST_ASSIGN) {
            int local = 0;
            for (int k = 0; k < n_locals && !local; k++) local = !strcmp(locals[k], s->name);
            for (int k = 0; k < l->n_locals && !local; k++) local = !strcmp(l->locals[k], s->name);
            if (!local) return 1;
        } else if (s->kind == ST_IF) {
            if (side_effects(m, s->then_, locals, n_locals) || (s->else_ && side_effects(m, s->else_, locals, n_locals)))
                return 1;
        }
    }
    return 0;
}

static int add_local(lower *L, stlist *l, const char *name) {
    for (int i = 0; i < l->n_locals; i++)
        if (!strcmp(l->locals[i], name)) return 0;
    char **n = nm_realloc(&L->m->arena, l->locals, (size_t)(l->n_locals + 1) * sizeof *n);
    if (!n) return oom(L, 0);
    l->locals = n;
    int *sz = nm_realloc(&L->m->arena, l->local_size, (size_t)(l->n_locals + 1) * sizeof *sz);
    if (!sz) return oom(L, 0);
    l->local_size = sz;
    sz[l->n_locals] = 0; /* a scalar */
    if (!(n[l->n_locals++] = adup(L, name))) return oom(L, 0);
    return 0;
}

int nm_solve_method(const stlist *l, const char *name) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_SOLVE && !s->steady && !strcmp(s->name, name)) return s->method;
        if (s->kind == ST_IF) {
            int r = nm_solve_method(s->then_, name);
            if (r == M_NONE) r = nm_solve_method(s->else_, name);
            if (r != M_NONE) return r;
        }
    }
    return M_NONE;
}

static const char *elem_of(lower *L, const var *v, int k, int line);
/* `x' = kinF_r / size` per row at the end of the body: the derivative form of
 * nocmodl's kinetic_intmethod (the fluxes into each STATE over its COMPARTMENT size);
 * an array STATE's element x[k] as its scalar (m->elems, as a DERIVATIVE's, nm_deriv_arrays_lower) */
static int derivatives(lower *L, stlist *body) {
    kinetic *k = L->k;
    char nm[64];
    for (int r = 0; r < k->n; r++) {
        const var *v = find_var(L->m, k->states[r]);
        const char *name = v->size ? elem_of(L, v, k->elem[r], 0) : adup(L, k->states[r]);
        st *s = nm_calloc(&L->m->arena, 1, sizeof *s);
        st **n = nm_realloc(&L->m->arena, body->s, (size_t)(body->n + 1) * sizeof *n);
        fname(nm, sizeof nm, r);
        ex *e = var_ex(L, nm);
        if (k->cap[r]) e = bin(L, '/', e, k->cap[r]);
        if (!s || !n || !e || !(s->name = (char *)name)) return oom(L, 0);
        s->kind = ST_DERIV;
        s->e = e;
        body->s = n;
        n[body->n++] = s;
    }
    return 0;
}

ns_status nm_kinetic_lower(struct ns_nmodl *m, block *b) {
    lower L = {m, NULL, NS_OK, 0, "KINETIC"};
    const int method = nm_solve_method(m->breakpoint, b->name);
    L.deriv = method == M_EULER || method == M_RUNGE;
    if (unroll(&L, b->body) || elements(&L, b->body)) return L.status;
    kinetic *k = nm_calloc(&m->arena, 1, sizeof *k);
    if (!k) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    L.k = k;
    if (collect(&L, b->body)) return L.status;
    if (k->n == 0) return ns_fail(NS_ERR_PARSE, "%s:%d: KINETIC %s has no reaction", m->file, b->line, b->name);
    k->conserve = nm_calloc(&m->arena, (size_t)k->n, sizeof *k->conserve);
    k->cap = nm_calloc(&m->arena, (size_t)k->n, sizeof *k->cap);
    k->jac = nm_calloc(&m->arena, (size_t)k->n * (size_t)k->n, 1);
    if (!k->conserve || !k->cap || !k->jac) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    if (compartments(&L, b->body)) return L.status;
    k->linear = 1; /* until a reaction says otherwise (lower_reaction) */
    if (lower_list(&L, b->body)) return L.status;
    for (int i = 0; i < b->body->n_locals; i++)
        if (!strncmp(b->body->locals[i], "kinF_", 5) || !strncmp(b->body->locals[i], "kinJ_", 5) ||
            !strcmp(b->body->locals[i], "kinT_"))
            return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s:%d: KINETIC %s: the LOCAL name '%s' is reserved", m->file,
                          b->line, b->name, b->body->locals[i]);
    k->side_effects = side_effects(m, b->body, b->body->locals, b->body->n_locals);
    if (add_local(&L, b->body, "f_flux") || add_local(&L, b->body, "b_flux") ||
        (!L.deriv && add_local(&L, b->body, "kinT_")))
        return L.status;
    if (L.deriv) { /* a DERIVATIVE block from here on, run once more at the new states (nocmodl) */
        for (int r = 0; r < k->n; r++) {
            char nm[64];
            fname(nm, sizeof nm, r);
            if (add_local(&L, b->body, nm)) return L.status;
        }
        if (derivatives(&L, b->body)) return L.status;
        b->kind = B_DERIVATIVE;
        b->rerun = 1;
        return NS_OK;
    }
    char nm[64];
    for (int r = 0; r < k->n; r++) {
        fname(nm, sizeof nm, r);
        if (add_local(&L, b->body, nm)) return L.status;
        for (int c = 0; c < k->n; c++) {
            jname(nm, sizeof nm, r, c);
            if (k->jac[r * k->n + c] && add_local(&L, b->body, nm)) return L.status;
        }
    }
    b->kin = k;
    return NS_OK;
}

/* ---- a DERIVATIVE block's array STATEs ---- */

/* the scalar "x[k]" for element k of array STATE v (m->elems) */
static const char *elem_of(lower *L, const var *v, int k, int line) {
    struct ns_nmodl *m = L->m;
    char nm[160];
    snprintf(nm, sizeof nm, "%s[%d]", v->name, k);
    for (int i = 0; i < m->n_elems; i++)
        if (!strcmp(m->elems[i].name, nm)) return m->elems[i].name;
    var *n = nm_realloc(&m->arena, m->elems, (size_t)(m->n_elems + 1) * sizeof *n);
    if (!n) return oom(L, line), NULL;
    m->elems = n;
    var *e = &n[m->n_elems];
    *e = *v;
    e->size = 0;
    e->field = v->field + k;
    e->start = 0; /* (INITIAL sets the array's elements; the element is never started itself) */
    if (!(e->name = adup(L, nm))) return oom(L, line), NULL;
    m->n_elems++;
    return e->name;
}
/* an array STATE's element with a constant index in range: its scalar; 1 where e is no such element */
static int scalar_ex(lower *L, ex *e, int line) {
    if (!e) return 0;
    const var *v = e->kind == EX_VAR && e->a ? find_var(L->m, e->text) : NULL;
    double k;
    if (v && v->cls == V_STATE && v->size && !const_eval(L->m, e->a, &k)) {
        if (k != (int)k || k < 0 || k >= v->size)
            return lfail(L, NS_ERR_INVALID_ARGUMENT, line, "%s[%g]: out of range (0 to %d)", v->name, k, v->size - 1);
        if (!(e->text = (char *)elem_of(L, v, (int)k, line))) return -1;
        e->a = NULL;
        return 0;
    }
    for (int i = 0; i < e->n_args; i++)
        if (scalar_ex(L, e->args[i], line)) return -1;
    return scalar_ex(L, e->a, line) || scalar_ex(L, e->b, line) ? -1 : 0;
}
static int scalar_list(lower *L, stlist *l) {
    for (int i = 0; l && i < l->n; i++) {
        st *s = l->s[i];
        if (scalar_ex(L, s->e, s->line) || scalar_ex(L, s->to, s->line) || scalar_ex(L, s->index, s->line) ||
            scalar_list(L, s->then_) || scalar_list(L, s->else_))
            return -1;
        const var *v = s->kind == ST_DERIV && s->index ? find_var(L->m, s->name) : NULL;
        double k;
        if (!v || !v->size || const_eval(L->m, s->index, &k)) continue; /* (nm_finish's checks refuse it) */
        if (k != (int)k || k < 0 || k >= v->size)
            return lfail(L, NS_ERR_INVALID_ARGUMENT, s->line, "%s'[%g]: out of range (0 to %d)", v->name, k, v->size - 1);
        if (!(s->name = (char *)elem_of(L, v, (int)k, s->line))) return -1;
        s->index = NULL;
    }
    return 0;
}
ns_status nm_deriv_arrays_lower(struct ns_nmodl *m, block *b) {
    lower L = {m, NULL, NS_OK, 0, "DERIVATIVE"};
    if (!has_scheme(b->body)) return NS_OK;
    const int method = nm_solve_method(m->breakpoint, b->name);
    if (method == M_EULER || method == M_RUNGE) /* (not yet tested against a reference) */
        return ns_fail(NS_ERR_UNSUPPORTED, "%s:%d: METHOD %s on DERIVATIVE %s with array states is not supported (use "
                       "cnexp or derivimplicit)", m->file, b->line, method == M_EULER ? "euler" : "runge", b->name);
    if (unroll(&L, b->body) || scalar_list(&L, b->body)) return L.status;
    return NS_OK;
}
