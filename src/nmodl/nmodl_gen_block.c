/* The NMODL back end's blocks (nmodl_gen.h): FUNCTIONs and PROCEDUREs with their TABLEs,
 * and the solvers of DERIVATIVE (cnexp, derivimplicit, euler, runge), KINETIC (sparse),
 * LINEAR and NONLINEAR blocks, as nocmodl writes them. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_gen.h"

/* The opening of a per-instance function, `NS_MECH_FN void nsm_NAME_TAG_BLOCKSUFFIX(sig PARAMS) {`,
 * the casts that keep its common parameters used, and (arrays) the fields' pointers */
static void open_fn(gen *g, const char *tag, const block *bl, const char *suffix, const char *params, int arrays) {
    nm_put(g->b, "NS_MECH_FN void nsm_%s_%s_%s%s(", g->m->name, tag, bl->name, suffix);
    nm_put_sig(g);
    nm_put(g->b, "%s) {\n    (void)p; (void)i_; (void)node_; (void)v_;\n", params);
    if (arrays) nm_put_arrays(g, 4);
}

/* A TABLE PROCEDURE's table as rows, for a host loop that looks up many
 * instances at once (the CPU loop's fused pass, mech/blocks_fused.c):
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
    const int head = 4 + t->n_depend, n1 = t->with + 1, cols = t->n_cols;
    const int half = (cols + 7) / 8 * 8, lead = (head + 7) / 8 * 8;
    nm_put(b, "#define NSM_%s_%s_COLS %d /* the TABLE's variables */\n", name, bl->name, cols);
    nm_put(b, "#define NSM_%s_%s_ROW %d /* doubles per row: values, then differences */\n", name, bl->name, 2 * half);
    nm_put(b, "#define NSM_%s_%s_LEAD %d /* the header's copy before the rows */\n", name, bl->name, lead);
    nm_put(b, "#define NSM_%s_%s_ROWS %d /* the rows' storage, from a 64-byte boundary */\n", name, bl->name,
        lead + n1 * 2 * half);
    nm_put(b, "NS_MECH_FN int nsm_%s_p_%s_rows(const ns_mech_ppack *p, double *R_) {\n", name, bl->name);
    nm_put(b, "    const double *T_ = p->table + %d;\n    int same_ = 1;\n", t->offset);
    nm_put(b, "    for (int h_ = 0; h_ < %d; ++h_) same_ &= R_[h_] == T_[h_];\n", head);
    nm_put(b, "    if (same_ || T_[0] == 0.0) return 0;\n");
    nm_put(b, "    for (int k_ = 0; k_ < %d; ++k_) {\n        const int k1_ = k_ + (k_ < %d);\n", n1, t->with);
    nm_put(b, "        double *r_ = R_ + %d + k_ * %d;\n", lead, 2 * half);
    nm_put(b, "        for (int c_ = 0; c_ < %d; ++c_) {\n            r_[c_] = 0.0;\n            r_[%d + c_] = 0.0;\n"
           "        }\n", half, half);
    nm_put(b, "        for (int c_ = 0; c_ < %d; ++c_) {\n            const double *col_ = T_ + %d + c_ * %d;\n", cols, head,
        n1);
    nm_put(b, "            r_[c_] = col_[k_];\n            r_[%d + c_] = col_[k1_] - col_[k_];\n        }\n    }\n", half);
    nm_put(b, "    for (int h_ = 0; h_ < %d; ++h_) R_[h_] = T_[h_];\n    return 1;\n}\n\n", head);
    open_fn(g, "p", bl, "_set", ", const double *y_, int s_", 0);
    for (int k = 0; k < cols; k++) nm_put(b, "    (*F%d_) = y_[%d * s_];\n", t->col_field[k], k);
    nm_put(b, "}\n\n");
}

static int emit_alg(gen *g, const block *bl);
int nm_emit_callable(gen *g, const block *bl) {
    if (bl->alg) return emit_alg(g, bl);
    buf *b = g->b;
    if (bl->ftable) { /* FUNCTION_TABLE: a lookup in the user's values (NaN where there are none) */
        nm_emit_proto(g, bl, "");
        nm_put(b, " {\n    const double a_[%d] = {", bl->n_args);
        for (int k = 0; k < bl->n_args; k++) nm_put(b, "%sA_%s", k ? ", " : "", bl->args[k]);
        nm_put(b, "};\n    (void)i_; (void)node_; (void)v_;\n");
        for (int k = 0; k < g->m->n_fields; k++) nm_put(b, "    (void)F%d_;\n", k);
        nm_put(b, "    return nsm_ftable(p->ftable ? &p->ftable[%d] : (const ns_mech_ftable *)0, %d, a_);\n}\n\n",
            bl->ftable - 1, bl->n_args);
        return 0;
    }
    int tab = bl->table != NULL;
    nm_emit_proto(g, bl, tab ? "_exact" : "");
    nm_put(b, " {\n    (void)p; (void)p; (void)i_; (void)node_; (void)v_;\n");
    nm_put_arrays(g, 4);
    if (bl->kind == B_FUNCTION) nm_put(b, "    double ret_ = 0.0;\n");
    g->owner = bl;
    g->n_scope = 0;
    for (int k = 0; k < bl->n_args; k++)
        if (nm_gen_scope_push(g, bl->args[k], 1)) return nm_gfail(g, bl->line, "out of memory");
    if (nm_emit_body(g, bl->body, 4)) return -1;
    if (bl->kind == B_FUNCTION) nm_put(b, "    return ret_;\n");
    if (nm_int_procedure(bl)) nm_put(b, "    return 0;\n");
    nm_put(b, "}\n\n");
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
        nm_put(b, "NS_MECH_FN void nsm_%s_%c_%s_at(const ns_mech_ppack *p, double x_, int *k_, double *t_) {\n",
            g->m->name, kc, bl->name);
        nm_put(b, "    const double *T_ = p->table + %d;\n", t->offset);
        nm_put(b, "    const double xi_ = T_[3] * (x_ - T_[2]);\n");
        nm_put(b, "    const int in_ = (xi_ > 0.) & (xi_ < %d.), hi_ = xi_ >= %d., nan_ = xi_ != xi_;\n", t->with, t->with);
        nm_put(b, "    const double xc_ = xi_ == xi_ ? xi_ : 0.0, xd_ = xc_ < %d. ? xc_ : %d.;\n", t->with + 1, t->with + 1);
        nm_put(b, "    const double xs_ = (xd_ > -1. ? xd_ : -1.) * (double)in_;\n");
        nm_put(b, "    const int j_ = (int)xs_;\n    *k_ = j_ * in_ + %d * hi_;\n", t->with);
        nm_put(b, "    *t_ = (xs_ - (double)j_) + (nan_ ? xi_ : 0.0);\n}\n\n");
        if (t->lazy) /* built at the first call on the CPU (the C file defines it; the mechanism is CPU-only) */
            nm_put(b, "#ifndef __CUDACC__\nstatic int nsm_%s_table_update_(ns_mech_ppack *p, int first);\n#endif\n", g->m->name);
        nm_emit_proto(g, bl, "");
        nm_put(b, " {\n");
        nm_put(b, "    const double *T_ = p->table + %d;\n", t->offset);
        /* the exact procedure when usetable_NAME is 0, else the lookup (the
         * loops hoist the usetable test, emit_loop). The loops run
         * table_update first, so the table is current whenever
         * usetable_NAME is not 0. */
        nm_put(b, "    if (p->global[%d] == 0.0) %s", t->usetable, bl->kind == B_FUNCTION ? "return " : "{\n        ");
        nm_put_call(g, bl->kind == B_FUNCTION ? "f" : "p", bl->name, "_exact");
        nm_put(b, ", A_%s);\n", bl->args[0]);
        if (bl->kind == B_PROCEDURE) nm_put(b, "        return%s;\n    }\n", nm_int_procedure(bl) ? " 0" : "");
        if (t->lazy) nm_put(b, "#ifndef __CUDACC__\n    if (T_[0] == 0.0) nsm_%s_table_update_(p, 1);\n#endif\n", g->m->name);
        nm_put(b, "    int k_;\n    double t_;\n    nsm_%s_%c_%s_at(p, A_%s, &k_, &t_);\n", g->m->name, kc, bl->name,
            bl->args[0]);
        nm_put(b, "    const int k1_ = k_ + (k_ < %d);\n", t->with);
        int cols = bl->kind == B_FUNCTION ? 1 : t->n_cols;
        for (int k = 0; k < cols; k++) {
            int c0 = head + k * n1;

            /* the column as a pointer of its own, indexed by k_ and k1_:
             * the columns then share their index vectors, where gcc
             * emulating the gathers of T_[c0 + k_] extracted each column's
             * own (docs/mechanisms.md, "Speed") */
            nm_put(b, "    {\n        const double *c_ = T_ + %d;\n        const double a_ = c_[k_], b_ = c_[k1_];\n", c0);
            if (bl->kind == B_PROCEDURE) nm_put(b, "        (*F%d_) = ", t->col_field[k]);
            else nm_put(b, "        return ");
            nm_put(b, "a_ + t_ * (b_ - a_);\n    }\n");
        }
        if (nm_int_procedure(bl)) nm_put(b, "    return 0;\n");
        nm_put(b, "}\n\n");
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
 * each stage over a chunk of them (the CPU loop's fused pass, mech/blocks_fused.c),
 * which keeps few values live at once as the hand-written gates do. */
static int cnexp_staged(const stlist *l) {
    int seen = 0;
    if (nm_verbatim_in(l)) return 0; /* C runs per instance, in order */
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_DERIV) {
            int nonlinear = 0;
            ex *a = nm_sym_diff(s->e, s->name, &nonlinear);
            if (!a || nonlinear || nm_sym_depends(a, s->name) || nm_sym_is_num(a, 0)) return 0;
            for (int j = 0; j < i; j++)
                if (l->s[j]->kind == ST_DERIV && nm_sym_depends(s->e, l->s[j]->name)) return 0;
            seen = 1;
        } else if (seen) {
            return 0;
        } else if (s->kind == ST_IF) {
            char **order = NULL;
            int n = 0;
            const int bad = nm_collect_states(s->then_, &order, &n) || (s->else_ && nm_collect_states(s->else_, &order, &n));
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
    const block *bl = nm_find_block(m, call->text);
    if (!bl || bl->kind != B_PROCEDURE || !bl->table || bl->table->lazy || call->n_args != 1 || call->args[0]->kind != EX_VAR ||
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
        ex *a = nm_sym_diff(s->e, s->name, &nonlinear);
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
    nm_put(b, "%*sconst double %s = (p->dt * ", indent, "", d);
    nm_gen_ex(g, num);
    nm_put(b, ") / (");
    for (int k = 0; k < n; k++) nm_put(b, "%s", k < n - 2 ? "(" : "");
    for (int k = 0; k < n; k++) nm_put(b, "%s%c%d_%s", k ? " * " : "", y, k, k > 0 && k < n - 1 ? ")" : "");
    nm_put(b, ");\n");
    for (int k = 0; k < n; k++) {
        nm_put(b, "%*s*a%d_ = %s", indent, "", k, y == 'u' ? "(" : "");
        if (y == 'u') nm_put(b, "x%d_ == x%d_ ? %s : x%d_) * (", k, k, d, k);
        else nm_put(b, "%s * (", d);
        int first = 1, open = 0;
        for (int j = 0; j < n; j++) open += j != k;
        for (int j = 0; j < open - 2; j++) nm_put(b, "(");
        for (int j = 0, m = 0; j < n; j++) {
            if (j == k) continue;
            nm_put(b, "%s%c%d_%s", first ? "" : " * ", y, j, m > 0 && m < open - 1 ? ")" : "");
            first = 0;
            m++;
        }
        nm_put(b, ");\n");
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
    nm_put(b, "    const int in_ = ");
    for (int k = 0; k < n; k++)
        nm_put(b, "%s(fabs(x%d_) >= 1e-%d) & (fabs(x%d_) <= 1e%d)", k ? " & " : "", k, e, k, e);
    nm_put(b, ";\n");
    if (check) {
        nm_put(b, "    return in_;\n");
        return;
    }
    nm_put(b, "    if (!in_) {\n");
    for (int k = 0; k < n; k++)
        nm_put(b, "        const double z%d_ = fabs(x%d_) > 1e-%d ? fabs(x%d_) : 1e-%d;\n"
               "        const double u%d_ = copysign(z%d_ < 1e%d ? z%d_ : 1e%d, x%d_);\n", k, k, e, k, e, k, k, e, k, e, k);
    put_products(g, num, n, 'u', 8);
    nm_put(b, "    }\n");
}

/* Solve J_ r_ = r_ in place (N_ x N_, double J_[N_][N_]): Gaussian
 * elimination with partial pivoting, per instance (the systems are small). */
static void put_gauss(buf *b) {
    nm_put(b, "        for (int c = 0; c < N_; ++c) { /* Gaussian elimination, partial pivoting */\n"
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
int nm_emit_kinetic(gen *g, const block *bl) {
    buf *b = g->b;
    const char *name = g->m->name;
    const kinetic *k = bl->kin;
    const int n = k->n;
    g->owner = bl;
    g->n_scope = 0;
    g->mode = M_SPARSE;
    open_fn(g, "kf", bl, "", ", double *f_, double *J_, double *c_", 1);
    if (nm_emit_list(g, bl->body, 4)) return -1;
    for (int r = 0; r < n; r++) {
        nm_put(b, "    f_[%d] = L_kinF_%d;\n    c_[%d] = ", r, r, r);
        if (k->cap[r]) nm_gen_ex(g, k->cap[r]);
        else nm_put(b, "1.0");
        nm_put(b, ";\n");
        for (int c = 0; c < n; c++) {
            if (k->jac[r * n + c]) nm_put(b, "    J_[%d] = L_kinJ_%d_%d;\n", r * n + c, r, c);
            else nm_put(b, "    J_[%d] = 0.0;\n", r * n + c);
        }
    }
    /* the solver is called, not inlined into the flattened loops (a 13-state
     * scheme inlined into every clone and path took gcc 11 s; its Newton
     * loop does not vectorise over instances anyway) */
    nm_put(b, "}\n\n#ifndef NSM_NOINLINE\n#if defined(__CUDACC__)\n#define NSM_NOINLINE __noinline__\n"
           "#elif defined(__GNUC__) || defined(__clang__)\n#define NSM_NOINLINE __attribute__((noinline))\n"
           "#else\n#define NSM_NOINLINE\n#endif\n#endif\n");
    nm_put(b, "NS_MECH_FN NSM_NOINLINE void nsm_%s_ks_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ", double dt_, int one_) {\n");
    nm_put(b, "    enum { N_ = %d };\n    double x0_[N_], r_[N_], c_[N_], J_[N_][N_];\n    double *x_[N_] = {", n);
    for (int r = 0; r < n; r++) nm_put(b, "%sF%d_", r ? ", " : "", nm_find_var(g->m, k->states[r])->field + k->elem[r]);
    nm_put(b, "};\n    for (int r = 0; r < N_; ++r) x0_[r] = *x_[r];\n");
    nm_put(b, "    for (int it_ = 0; it_ < 22; ++it_) {\n        ");
    nm_put_call(g, "kf", bl->name, "");
    nm_put(b, ", r_, &J_[0][0], c_);\n");
    for (int r = 0; r < n; r++)
        if (!k->conserve[r])
            nm_put(b, "        r_[%d] += -(1.0 / dt_) * (*x_[%d] - x0_[%d]) * c_[%d];\n"
                   "        J_[%d][%d] += (1.0 / dt_) * c_[%d];\n", r, r, r, r, r, r, r);
    put_gauss(b);
    nm_put(b, "        double err_ = 0.0;\n"
           "        for (int r = 0; r < N_; ++r) {\n"
           "            *x_[r] += r_[r];\n"
           "            if (!one_ && *x_[r] < 0.0) *x_[r] = 0.0;\n"
           "            err_ += fabs(r_[r]);\n"
           "        }\n"
           "        if (one_ || !(err_ > 1e-6)) break;\n    }\n");
    if (k->side_effects) { /* NEURON's sparse() ends with the block at the new states */
        nm_put(b, "    ");
        nm_put_call(g, "kf", bl->name, "");
        nm_put(b, ", r_, &J_[0][0], c_);\n");
    }
    nm_put(b, "}\n\n");
    nm_put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ") {\n    ");
    nm_put_call(g, "ks", bl->name, "");
    nm_put(b, ", p->dt, %d);\n}\n\n", k->linear);
    nm_put(b, "NS_MECH_FN void nsm_%s_ss_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ") {\n");
    if (k->linear) {
        nm_put(b, "    ");
        nm_put_call(g, "ks", bl->name, "");
        nm_put(b, ", 1e9, 0);\n");
    } else {
        nm_put(b, "    for (int i = 0; i < 7; ++i) {\n        ");
        nm_put_call(g, "ks", bl->name, "");
        nm_put(b, ", 1e9, 1);\n        int ok_ = 1;\n");
        for (int r = 0; r < n; r++) {
            const int f = nm_find_var(g->m, k->states[r])->field + k->elem[r];
            nm_put(b, "        if (*F%d_ < -1e-6) { *F%d_ = 0.0; ok_ = 0; }\n", f, f);
        }
        nm_put(b, "        if (ok_) {\n            ");
        nm_put_call(g, "ks", bl->name, "");
        nm_put(b, ", 1e9, 0);\n            break;\n        }\n    }\n");
    }
    nm_put(b, "}\n\n");
    g->owner = NULL;
    return 0;
}

/* LINEAR: the rows (emit_equation, numbered as the block runs), then Gaussian elimination with partial pivoting (NEURON's
 * simeq), the unknowns set to the solution. NONLINEAR: nsm_NAME_nl_BLOCK writes the residuals,
 * and the procedure is scopmath's newton as NEURON runs it: the Jacobian by central differences
 * (steps max(|0.02 x|, 1e-6)) rebuilt while the largest relative change exceeds 0.05, stop when
 * that change is at most 1e-6 and every |residual| at most 1e-8, at most 50 iterations (where
 * NEURON stops the run with an error, the last iterate stays). */
static int emit_alg(gen *g, const block *bl) {
    buf *b = g->b;
    const int n = bl->n_unknowns;
    g->owner = bl;
    g->n_scope = 0;
    g->alg = bl;
    if (bl->alg == 'N') {
        open_fn(g, "nl", bl, "", ", double *f_", 1);
        nm_put(b, "    enum { N_ = %d };\n    int e_ = -1; /* the equation's row (emit_equation) */\n", n);
        const int r = nm_emit_list(g, bl->body, 4);
        g->alg = NULL;
        if (r) return -1;
        nm_put(b, "}\n\n");
    }
    nm_emit_proto(g, bl, "");
    nm_put(b, " {\n    (void)p; (void)i_; (void)node_; (void)v_;\n    enum { N_ = %d };\n", n);
    nm_put(b, "    double *const x_[N_] = {");
    for (int k = 0; k < n; k++) nm_put(b, "%sF%d_", k ? ", " : "", nm_find_var(g->m, bl->unknowns[k])->field);
    nm_put(b, "};\n");
    if (bl->alg == 'L') {
        nm_put(b, "    double J_[N_ + 1][N_] = {{0.0}}, r_[N_ + 1] = {0.0}; /* row N_: past the unknowns */\n"
               "    int e_ = -1; /* the equation's row (emit_equation) */\n");
        nm_put_arrays(g, 4);
        const int r = nm_emit_list(g, bl->body, 4);
        g->alg = NULL;
        if (r) return -1;
        nm_put(b, "    {\n");
        put_gauss(b);
        nm_put(b, "    }\n    for (int k = 0; k < N_; ++k) *x_[k] = r_[k];\n}\n\n");
    } else {
        nm_put(b, "    double value_[N_ + 1] = {0.0}, hi_[N_ + 1] = {0.0}, lo_[N_ + 1] = {0.0}, J_[N_][N_], dx_[N_], "
               "change_ = 1.0;\n    int perm_[N_];\n");
        nm_put(b, "    for (int count_ = 1; count_ <= 50; ++count_) {\n        if (change_ > 0.05) {\n"
               "            for (int j = 0; j < N_; ++j) {\n"
               "                const double inc_ = fmax(fabs(0.02 * *x_[j]), 1e-6);\n"
               "                *x_[j] += inc_;\n                ");
        nm_put_call(g, "nl", bl->name, "");
        nm_put(b, ", hi_);\n                *x_[j] -= 2.0 * inc_;\n                ");
        nm_put_call(g, "nl", bl->name, "");
        nm_put(b, ", lo_);\n"
               "                for (int i = 0; i < N_; ++i) J_[i][j] = (hi_[i] - lo_[i]) / (2.0 * inc_);\n"
               "                *x_[j] += inc_;\n                ");
        nm_put_call(g, "nl", bl->name, "");
        nm_put(b, ", value_);\n            }\n"
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
        nm_put_call(g, "nl", bl->name, "");
        nm_put(b, ", value_);\n        double dev_ = 0.0;\n"
               "        for (int i = 0; i < N_; ++i) {\n            value_[i] = -value_[i];\n"
               "            if (fabs(value_[i]) > dev_) dev_ = fabs(value_[i]);\n        }\n"
               "        if (change_ <= 1e-6 && dev_ <= 1e-8) break;\n    }\n}\n\n");
    }
    g->owner = NULL;
    return 0;
}

/* derivimplicit: nsm_NAME_dd_BLOCK, the derivatives, and nsm_NAME_d_BLOCK, NEURON's Newton step */
static int emit_derivimplicit(gen *g, const block *bl, char **order, int n) {
    buf *b = g->b;
    const char *name = g->m->name;
    open_fn(g, "dd", bl, "", ", double *f_", 1);
    g->mode = M_DERIVIMPLICIT;
    if (nm_emit_body(g, bl->body, 4)) return -1;
    nm_put(b, "}\n\n");
    /* backward Euler as NEURON's derivimplicit (scopmath's nrn_newton_thread): Newton on
     * F(x) = f(x) - (x - x0)/dt, the Jacobian by central differences (increment max(0.02 |x|,
     * 1e-6)) rebuilt while an iteration's largest relative change is above 0.05, until that
     * change is at most 1e-6 and max |F| at most 1e-8 (at most 50 iterations): its early stop
     * moves a small concentration by 1e-8 relative from the exact root, test cadn */
    nm_put(b, "NS_MECH_FN void nsm_%s_dF_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ", const double *x0_, double *const *x_, double *F_) {\n    double f_[%d];\n    ", n);
    nm_put_call(g, "dd", bl->name, "");
    nm_put(b, ", f_);\n    for (int r = 0; r < %d; ++r) F_[r] = f_[r] - (*x_[r] - x0_[r]) / p->dt;\n}\n\n", n);
    nm_put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ") {\n");
    nm_put(b, "    enum { N_ = %d };\n    double x0_[N_], F_[N_], hi_[N_], lo_[N_], Jf_[N_][N_], J_[N_][N_], r_[N_];\n", n);
    for (int k = 0; k < n; k++) nm_put(b, "    x0_[%d] = *F%d_;\n", k, nm_find_var(g->m, order[k])->field);
    nm_put(b, "    double *const x_[N_] = {");
    for (int k = 0; k < n; k++) nm_put(b, "%sF%d_", k ? ", " : "", nm_find_var(g->m, order[k])->field);
    nm_put(b, "};\n");
    char call[256];
    snprintf(call, sizeof call, "nsm_%s_dF_%s(p, ", name, bl->name);
    nm_put(b, "    double change_ = 1.0;\n"
           "    for (int it_ = 0; it_ < 50; ++it_) {\n"
           "        if (change_ > 0.05) {\n"
           "            for (int c = 0; c < N_; ++c) {\n"
           "                const double inc_ = fmax(fabs(0.02 * *x_[c]), 1e-6);\n"
           "                *x_[c] += inc_;\n                %s", call);
    nm_put_fargs(g);
    nm_put(b, "i_, node_, v_, x0_, x_, hi_);\n"
           "                *x_[c] -= 2.0 * inc_;\n                %s", call);
    nm_put_fargs(g);
    nm_put(b, "i_, node_, v_, x0_, x_, lo_);\n"
           "                for (int r = 0; r < N_; ++r) Jf_[r][c] = (hi_[r] - lo_[r]) / (2.0 * inc_);\n"
           "                *x_[c] += inc_;\n"
           "            }\n            %s", call);
    nm_put_fargs(g);
    nm_put(b, "i_, node_, v_, x0_, x_, F_);\n"
           "        }\n"
           "        for (int r = 0; r < N_; ++r) {\n"
           "            r_[r] = -F_[r];\n"
           "            for (int c = 0; c < N_; ++c) J_[r][c] = Jf_[r][c];\n"
           "        }\n");
    put_gauss(b);
    nm_put(b, "        change_ = 0.0;\n"
           "        for (int c = 0; c < N_; ++c) {\n"
           "            if (fabs(*x_[c]) > 1e-8 && fabs(r_[c] / *x_[c]) > change_) change_ = fabs(r_[c] / *x_[c]);\n"
           "            *x_[c] += r_[c];\n"
           "        }\n        %s", call);
    nm_put_fargs(g);
    nm_put(b, "i_, node_, v_, x0_, x_, F_);\n"
           "        double dev_ = 0.0;\n"
           "        for (int r = 0; r < N_; ++r) dev_ = fmax(dev_, fabs(F_[r]));\n"
           "        if (change_ <= 1e-6 && dev_ <= 1e-8) break;\n"
           "    }\n}\n\n");
    return 0;
}

/* cnexp in stages (cnexp_staged): _pre, _post, the step, and _pre_set after a TABLE's lookup */
static int emit_cnexp_stages(gen *g, const block *bl, char **order, int n) {
    buf *b = g->b;
    const char *name = g->m->name;
    nm_put(b, "NS_MECH_FN void nsm_%s_d_%s_pre(", name, bl->name);
    nm_put_sig(g);
    for (int k = 0; k < n; k++) nm_put(b, ", double *a%d_, double *t%d_", k, k);
    nm_put(b, ") {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
    nm_put_arrays(g, 4);
    g->mode = M_CNEXP;
    const ex *num = NULL;
    const int one = one_division(bl->body, &num);
    g->staged = one ? 2 : 1;
    const int r = nm_emit_list(g, bl->body, 4);
    g->staged = 0;
    if (r) return -1;
    if (one) emit_one_division(g, num, n, 0);
    nm_put(b, "}\n\nNS_MECH_FN void nsm_%s_d_%s_post(ns_mech_ppack *p, ", name, bl->name);
    nm_put_fparams(g);
    nm_put(b, "int i_");
    for (int k = 0; k < n; k++) nm_put(b, ", double e%d_, double t%d_", k, k);
    nm_put(b, ") {\n    (void)p; (void)i_;\n");
    for (int k = 0; k < n; k++) {
        const int f = nm_find_var(g->m, order[k])->field;
        nm_put(b, "    (*F%d_) = (*F%d_) + (1. - e%d_) * (t%d_ - (*F%d_));\n", f, f, k, k, f);
    }
    nm_put(b, "}\n\nNS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ") {\n    double ");
    for (int k = 0; k < n; k++) nm_put(b, "%sa%d_, t%d_", k ? ", " : "", k, k);
    nm_put(b, ";\n    nsm_%s_d_%s_pre(p, ", name, bl->name);
    nm_put_fargs(g);
    nm_put(b, "i_, node_, v_");
    for (int k = 0; k < n; k++) nm_put(b, ", &a%d_, &t%d_", k, k);
    nm_put(b, ");\n    nsm_%s_d_%s_post(p, ", name, bl->name);
    nm_put_fargs(g);
    nm_put(b, "i_");
    for (int k = 0; k < n; k++) nm_put(b, ", nsm_exp(a%d_), t%d_", k, k);
    nm_put(b, ");\n}\n\n");
    /* the first stage with the TABLE procedure's values set from y_ in
     * the place of its call (tabled_first); 0 where its exponents are
     * out of one division's range: the caller then runs _pre there */
    const block *tb = tabled_first(g->m, bl->body);
    if (tb) {
        nm_put(b, "NS_MECH_FN int nsm_%s_d_%s_pre_set(", name, bl->name);
        nm_put_sig(g);
        nm_put(b, ", const double *y_, int s_");
        for (int k = 0; k < n; k++) nm_put(b, ", double *a%d_, double *t%d_", k, k);
        nm_put(b, ") {\n    (void)p; (void)i_; (void)node_; (void)v_;\n");
        nm_put_arrays(g, 4);
        nm_put(b, "    nsm_%s_p_%s_set(p, ", name, tb->name);
        nm_put_fargs(g);
        nm_put(b, "i_, node_, v_, y_, s_);\n");
        g->staged = one ? 2 : 1;
        const int r2 = nm_emit_list_from(g, bl->body, 4, 1);
        g->staged = 0;
        if (r2) return -1;
        if (one) emit_one_division(g, num, n, 1);
        else nm_put(b, "    return 1;\n");
        nm_put(b, "}\n\n");
    }
    return 0;
}

/* runge: nsm_NAME_dr_BLOCK, the derivatives at t + tofs_, and the four stages */
static int emit_runge(gen *g, const block *bl, char **order, int n) {
    buf *b = g->b;
    const char *name = g->m->name;
    /* the derivatives f_ at the states as they are, at t + tofs_ */
    nm_put(b, "NS_MECH_FN void nsm_%s_dr_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ", double *f_, double tofs_) {\n    (void)p; (void)i_; (void)node_; (void)v_; (void)tofs_;\n");
    nm_put_arrays(g, 4);
    g->mode = M_DERIVIMPLICIT; /* f_[k] = the k-th state's derivative */
    g->t_ofs = 1;
    const int r = nm_emit_list(g, bl->body, 4);
    g->t_ofs = 0;
    if (r) return -1;
    nm_put(b, "}\n\n");
    /* scopmath's runge (NEURON's METHOD runge): fourth-order Runge-Kutta, the states updated in
     * place between the stages, at t, t + dt/2, t + dt/2 and t + dt; then the block once more at
     * the new states (nocmodl's call after the SOLVE) */
    nm_put(b, "NS_MECH_FN void nsm_%s_d_%s(", name, bl->name);
    nm_put_sig(g);
    nm_put(b, ") {\n    enum { N_ = %d };\n    double y0_[N_], acc_[N_], f_[N_];\n    const double h_ = p->dt;\n", n);
    nm_put(b, "    double *x_[N_] = {");
    for (int k = 0; k < n; k++) nm_put(b, "%sF%d_", k ? ", " : "", nm_find_var(g->m, order[k])->field);
    nm_put(b, "};\n");
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
        nm_put(b, "    ");
        nm_put_call(g, "dr", bl->name, "");
        nm_put(b, ", f_, %s);\n", at[q]);
        if (q < 4) nm_put(b, "%s", stage[q]);
    }
    nm_put(b, "}\n\n");
    return 0;
}

/* cnexp in place, euler (D_ temporaries), and a KINETIC block lowered for euler */
static int emit_explicit(gen *g, const block *bl, int method, char **order, int n) {
    buf *b = g->b;
    open_fn(g, "d", bl, "", "", 1);
    g->mode = method;
    if (method == M_EULER) nm_put(b, "    double D_[%d];\n", n);
    if (nm_emit_body(g, bl->body, 4)) return -1;
    if (method == M_EULER)
        for (int k = 0; k < n; k++) {
            int f = nm_find_var(g->m, order[k])->field;
            nm_put(b, "    *F%d_ = *F%d_ + p->dt * D_[%d];\n", f, f, k);
        }
    if (method == M_EULER && bl->rerun) { /* a KINETIC block: once more at the new states (nocmodl) */
        nm_put(b, "    {\n");
        if (nm_emit_list(g, bl->body, 8)) return -1;
        nm_put(b, "    }\n");
    }
    nm_put(b, "}\n\n");
    return 0;
}

int nm_emit_derivative(gen *g, const block *bl, int method) {
    char **order = NULL;
    int n = 0;
    if (nm_collect_states(bl->body, &order, &n)) return nm_gfail(g, bl->line, "out of memory");
    g->states = order;
    g->n_states = n;
    g->owner = bl;
    g->n_scope = 0;
    const int r = method == M_DERIVIMPLICIT                       ? emit_derivimplicit(g, bl, order, n)
                  : method == M_CNEXP && cnexp_staged(bl->body) ? emit_cnexp_stages(g, bl, order, n)
                  : method == M_RUNGE                           ? emit_runge(g, bl, order, n)
                                                                : emit_explicit(g, bl, method, order, n);
    free(order);
    if (r) return -1;
    g->states = NULL;
    g->n_states = 0;
    g->owner = NULL;
    return 0;
}
