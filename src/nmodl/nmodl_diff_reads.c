/* Which inputs each phase of a mechanism reads: the derivative code's lanes
 * (nmodl_diff.c). An input (0: v, 1 + f: field f, 1 + n_fields + q: GLOBAL q,
 * then 4 per USEION: the ion values read) is read where an expression names it
 * before the phase has surely written it. */
#include <stdlib.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

int nm_diff_ion_row(const var *v) {
    return 4 * v->ion + (v->ion_what == 'e' ? 0 : v->ion_what == 'c' ? 1 : v->ion_what == 'o' ? 2 : 3);
}

/* ---- which inputs a phase reads (its dual lanes) ----
 * An input (0: v, 1 + f: field f, 1 + n_fields + q: GLOBAL q) is read where
 * an expression names it before the phase has surely written it (called
 * FUNCTIONs and PROCEDUREs walked in place, an if's branches both); only
 * those get a lane, so K is the most any phase reads. */
typedef struct rw {
    const struct ns_nmodl *m;
    unsigned char *read, *wrote; /* per input */
    unsigned char *may;          /* per input: written on some path */
    const char *local[256];      /* LOCALs and arguments in scope: not inputs */
    int n_local, depth, n_in;
    const block *owner;
} rw;

static int rw_input(const rw *a, const char *name) {
    for (int i = a->n_local - 1; i >= 0; i--)
        if (!strcmp(a->local[i], name)) return -1;
    if (a->owner && a->owner->kind == B_FUNCTION && !strcmp(a->owner->name, name)) return -1;
    const var *v = nm_find_var(a->m, name);
    if (!v) return strcmp(name, "v") ? -1 : 0;
    if (v->field >= 0) return 1 + v->field;
    if (v->global >= 0) return 1 + a->m->n_fields + v->global;
    if (v->ion >= 0 && v->field < 0) return 1 + a->m->n_fields + a->m->n_globals + nm_diff_ion_row(v);
    return -1;
}
static void rw_all(rw *a) {
    memset(a->read, 1, (size_t)a->n_in);
    memset(a->may, 1, (size_t)a->n_in);
}
static void rw_name(rw *a, const char *name) {
    const int j = rw_input(a, name);
    if (j >= 0 && !a->wrote[j]) a->read[j] = 1;
}
static void rw_list(rw *a, const stlist *l);
static void rw_block(rw *a, const block *bl) {
    if (bl->recursive || a->depth > 16 || a->n_local + bl->n_args > 200) { /* deep or recursive: every input */
        rw_all(a);
        return;
    }
    const int base = a->n_local;
    const block *owner = a->owner;
    a->depth++;
    for (int k = 0; k < bl->n_args; k++) a->local[a->n_local++] = bl->args[k];
    a->owner = bl;
    unsigned char *w = bl->table && bl->kind == B_PROCEDURE ? malloc((size_t)a->n_in) : NULL;
    if (w) {
        /* the lookup writes the tabulated names and reads only the argument (usetable is a
         * switch: no derivative); the exact procedure reads what its body reads */
        memcpy(w, a->wrote, (size_t)a->n_in);
        rw_list(a, bl->body);
        memcpy(a->wrote, w, (size_t)a->n_in);
        free(w);
        for (int k = 0; k < bl->table->n_names; k++) {
            const int j = rw_input(a, bl->table->names[k]);
            if (j >= 0) a->wrote[j] = a->may[j] = 1;
        }
    } else {
        if (bl->table && bl->kind == B_PROCEDURE) rw_all(a); /* out of memory: every input */
        rw_list(a, bl->body);
    }
    a->owner = owner;
    a->n_local = base;
    a->depth--;
}
static void rw_ex(rw *a, const ex *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_VAR: rw_name(a, e->text); rw_ex(a, e->a); return;
    case EX_NEG:
    case EX_NOT: rw_ex(a, e->a); return;
    case EX_BIN: rw_ex(a, e->a); rw_ex(a, e->b); return;
    case EX_CALL: {
        for (int i = 0; i < e->n_args; i++) rw_ex(a, e->args[i]);
        const block *bl = nm_find_block(a->m, e->text);
        if (bl) rw_block(a, bl);
        return;
    }
    default: return;
    }
}
static void rw_st(rw *a, const st *s) {
    switch (s->kind) {
    case ST_ASSIGN: {
        rw_ex(a, s->e);
        const int j = rw_input(a, s->name);
        if (j >= 0) a->wrote[j] = a->may[j] = 1;
        return;
    }
    case ST_DERIV: {
        rw_ex(a, s->e);
        rw_name(a, s->name);
        const int j = rw_input(a, s->name);
        if (j >= 0) a->wrote[j] = a->may[j] = 1;
        return;
    }
    case ST_CALL: rw_ex(a, s->e); return;
    case ST_SOLVE: {
        const block *bl = nm_find_block(a->m, s->name);
        if (bl) rw_block(a, bl);
        return;
    }
    case ST_IF:
    case ST_WHILE:
    case ST_FROM: {
        rw_ex(a, s->e);
        rw_ex(a, s->to);
        unsigned char *w0 = malloc(2 * (size_t)a->n_in);
        if (!w0) { rw_all(a); return; }
        unsigned char *w1 = w0 + a->n_in;
        memcpy(w0, a->wrote, (size_t)a->n_in);
        const int pushed = s->kind == ST_FROM && a->n_local < 250;
        if (pushed) a->local[a->n_local++] = s->name;
        rw_list(a, s->then_);
        if (pushed) a->n_local--;
        memcpy(w1, a->wrote, (size_t)a->n_in);
        memcpy(a->wrote, w0, (size_t)a->n_in);
        if (s->kind == ST_IF && s->else_) {
            rw_list(a, s->else_);
            for (int j = 0; j < a->n_in; j++) a->wrote[j] = a->wrote[j] && w1[j];
        }
        free(w0);
        return;
    }
    default: rw_all(a); return;
    }
}
static void rw_list(rw *a, const stlist *l) {
    const int base = a->n_local;
    for (int i = 0; i < l->n_locals && a->n_local < 250; i++) a->local[a->n_local++] = l->locals[i];
    for (int i = 0; i < l->n; i++) rw_st(a, l->s[i]);
    a->n_local = base;
}

/* the inputs phase (0 init, 1 current, 2 state, 3 NET_RECEIVE) reads into read, the fields it may write into
 * may (n_in each; wrote: room) */
void nm_diff_phase_reads(const struct ns_nmodl *m, int phase, unsigned char *read, unsigned char *wrote,
                         unsigned char *may, int n_in) {
    rw a;
    memset(&a, 0, sizeof a);
    a.m = m;
    a.read = read;
    a.wrote = wrote;
    a.may = may;
    a.n_in = n_in;
    memset(read, 0, (size_t)n_in);
    memset(wrote, 0, (size_t)n_in);
    memset(may, 0, (size_t)n_in);
    read[0] = 1; /* v: the copies, current()'s v + .001, most blocks */
    /* what the entry point sets before the blocks: v's copies and the START values; an ion
     * variable the entry point loads into a field (a concentration, a READ ion variable the
     * file writes) keeps the field's lane, which then stands for the ion's value */
    for (int i = 0; i < m->n_vars; i++) {
        const var *v = &m->vars[i];
        if (v->field < 0) continue;
        if ((v->copy_in && v->ion < 0) || (phase == 0 && v->cls == V_STATE && v->ion < 0))
            wrote[1 + v->field] = may[1 + v->field] = 1;
        if (v->copy_in || (phase != 3 && v->ion >= 0 && (v->ion_what == 'c' || v->ion_what == 'o')))
            may[1 + v->field] = 1;
    }
    if (phase == 0) {
        if (m->initial) rw_list(&a, m->initial);
    } else if (phase == 1) {
        if (m->n_currents) {
            for (int i = 0; i < m->breakpoint->n; i++)
                if (m->breakpoint->s[i]->kind != ST_SOLVE) rw_st(&a, m->breakpoint->s[i]);
            for (int k = 0; k < m->n_currents; k++) rw_name(&a, m->currents[k]);
        }
    } else if (phase == 3) { /* NET_RECEIVE: its arguments and flag are not inputs (the weight has its own lane) */
        for (int k = 0; k < m->n_net_args && a.n_local < 250; k++) a.local[a.n_local++] = m->net_args[k];
        a.local[a.n_local++] = "flag";
        if (m->net_receive) rw_list(&a, m->net_receive);
    } else if (!m->n_currents) {
        rw_list(&a, m->breakpoint);
    } else {
        for (int i = 0; i < m->breakpoint->n; i++)
            if (m->breakpoint->s[i]->kind == ST_SOLVE) rw_st(&a, m->breakpoint->s[i]);
    }
    /* a field written on some paths only passes its input through on the others */
    for (int j = 1; j < 1 + m->n_fields; j++)
        if (may[j] && !wrote[j]) read[j] = 1;
}

