/* The BREAKPOINT's currents affine in v (docs/mechanisms.md, "The conductance"): where every
 * current is g * v + c with g and c free of v, nrn_cur's slope (I(v + .001) - I(v)) / .001 is g up
 * to rounding, so the current() entry point evaluates the currents once and writes g, the
 * symbolic derivative, in the place of the second evaluation (nmodl_gen_entry.c; the derivative
 * code follows it, nmodl_diff.c). Decided by the derivative of each assignment with respect to
 * v: a chain rule over the variables the block computes from v, each partial derivative
 * (nm_sym_diff) free of v and of those variables. Anything else keeps NEURON's two evaluations:
 * an IF, a call of the file's FUNCTIONs or PROCEDUREs (rates(v)) or of anything but the math
 * library (random draws), VERBATIM C, a math call or a division of something computed from v, an
 * array, a variable assigned twice, a slope that would read a LOCAL or a variable assigned after
 * it, a file that writes v. */
#include <stdio.h>
#include <string.h>

#include "nmodl/nmodl_gen.h"

typedef struct slope_state {
    const struct ns_nmodl *m;
    const stlist *l;
    const char **name; /* the variables assigned so far, in order */
    ex **d;            /* d name / dv, NULL where it does not depend on v */
    int *at;           /* the statement that assigned it */
    int n;
} slope_state;

static int assigned(const slope_state *s, const char *name) {
    for (int k = 0; k < s->n; k++)
        if (!strcmp(s->name[k], name)) return k;
    return -1;
}
/* v, or a variable computed from v so far */
static int from_v(const slope_state *s, const char *name) {
    if (!strcmp(name, "v")) return 1;
    const int k = assigned(s, name);
    return k >= 0 && s->d[k] != NULL;
}
static int is_local(const stlist *l, const char *name) {
    for (int k = 0; k < l->n_locals; k++)
        if (!strcmp(l->locals[k], name)) return 1;
    return 0;
}

/* the calls a slope may pass over: the math library's pure functions (not the file's FUNCTIONs,
 * whose bodies may read v, nor random draws, which NEURON's two evaluations draw twice) */
static const char *const PURE = " exp log log10 sqrt fabs sin cos tan tanh sinh cosh atan asin acos atan2 floor ceil "
                                "pow fmin fmax fmod expm1 log1p erf exprelr min max ";

/* e holds nothing the chain rule cannot take: no array element, VERBATIM C name, string or call
 * other than PURE's */
static int plain(const slope_state *s, const ex *e) {
    if (!e) return 1;
    switch (e->kind) {
    case EX_STR: return 0;
    case EX_VAR: return !e->a && e->op != NM_C_NAME;
    case EX_CALL: {
        char key[64];
        if (nm_find_block(s->m, e->text) || strlen(e->text) > 60) return 0;
        snprintf(key, sizeof key, " %s ", e->text);
        if (!strstr(PURE, key)) return 0;
        for (int i = 0; i < e->n_args; i++)
            if (!plain(s, e->args[i])) return 0;
        return 1;
    }
    default: return plain(s, e->a) && plain(s, e->b);
    }
}

/* every variable a slope reads is free of v, no LOCAL, and keeps its value to the block's end:
 * never assigned, or assigned before statement j (each variable is assigned once) */
static int readable(const slope_state *s, const ex *e, int j) {
    if (!e) return 1;
    if (e->kind == EX_VAR) {
        if (from_v(s, e->text) || is_local(s->l, e->text)) return 0;
        const int k = assigned(s, e->text);
        if (k >= 0 && s->at[k] >= j) return 0;
        for (int i = j + 1; k < 0 && i < s->l->n; i++) /* assigned later */
            if (s->l->s[i]->kind == ST_ASSIGN && !strcmp(s->l->s[i]->name, e->text)) return 0;
        return 1;
    }
    if (e->kind == EX_CALL) {
        for (int i = 0; i < e->n_args; i++)
            if (!readable(s, e->args[i], j)) return 0;
        return 1;
    }
    return readable(s, e->a, j) && readable(s, e->b, j);
}

/* the names of e that come from v (each once into out, n_out so far) */
static void collect(const slope_state *s, const ex *e, const char **out, int *n_out, int cap) {
    if (!e) return;
    if (e->kind == EX_VAR) {
        if (!from_v(s, e->text)) return;
        for (int k = 0; k < *n_out; k++)
            if (!strcmp(out[k], e->text)) return;
        if (*n_out < cap) out[(*n_out)++] = e->text;
        return;
    }
    for (int i = 0; e->kind == EX_CALL && i < e->n_args; i++) collect(s, e->args[i], out, n_out, cap);
    collect(s, e->a, out, n_out, cap);
    collect(s, e->b, out, n_out, cap);
}

/* statement j: y = e; its d y / dv into s (NULL: free of v); 0, or 1 where not affine */
static int step(slope_state *s, int j) {
    const st *t = s->l->s[j];
    if (!strcmp(t->name, "v") || t->index || assigned(s, t->name) >= 0 || !plain(s, t->e)) return 1;
    enum { CAP = 64 };
    const char *xs[CAP];
    int n_x = 0;
    collect(s, t->e, xs, &n_x, CAP);
    if (n_x == CAP) return 1;
    ex *dy = NULL;
    for (int k = 0; k < n_x; k++) { /* d y / dv = sum over x of (d e / d x) (d x / dv) */
        int nonlinear = 0;
        ex *part = nm_sym_diff(t->e, xs[k], &nonlinear);
        if (!part || nonlinear || !readable(s, part, j)) return 1;
        const int a = assigned(s, xs[k]);
        ex *term = a < 0 ? part : nm_sym_bin('*', part, s->d[a]);
        dy = dy ? nm_sym_bin('+', dy, term) : term;
        if (!dy) return 1;
    }
    if (dy && nm_sym_is_num(dy, 0)) dy = NULL; /* (x - x: its terms cancel only here) */
    const int k = s->n++;
    s->name[k] = t->name;
    s->d[k] = dy;
    s->at[k] = j;
    return 0;
}

int nm_current_slopes(const struct ns_nmodl *m, ex ***out) {
    const stlist *l = m->breakpoint;
    *out = NULL;
    if (!l || !m->n_currents || !nm_gen_arena) return 0;
    if (nm_find_var(m, "v") || m->verbatim || m->random_field >= 0) return 0;
    slope_state s = {m, l, nm_calloc(nm_gen_arena, (size_t)l->n + 1, sizeof(char *)),
                     nm_calloc(nm_gen_arena, (size_t)l->n + 1, sizeof(ex *)),
                     nm_calloc(nm_gen_arena, (size_t)l->n + 1, sizeof(int)), 0};
    if (!s.name || !s.d || !s.at) return -1;
    for (int j = 0; j < l->n; j++) {
        const st *t = l->s[j];
        if (t->kind == ST_SOLVE) continue; /* nrn_cur does not solve */
        if (t->kind != ST_ASSIGN || step(&s, j)) return 0;
    }
    ex **slope = nm_calloc(nm_gen_arena, (size_t)m->n_currents, sizeof *slope);
    if (!slope) return -1;
    *out = slope;
    for (int c = 0; c < m->n_currents; c++) {
        const int k = assigned(&s, m->currents[c]);
        slope[c] = k < 0 ? NULL : s.d[k]; /* unassigned, or not from v: its slope is 0 */
    }
    return 1;
}
