/* The NMODL parser's declarations (nmodl_parse.h): the NEURON block, PARAMETER, ASSIGNED,
 * STATE, CONSTANT, UNITS, the FUNCTIONs and PROCEDUREs, and the file's top level. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_parse.h"

/* ---- declarations ---- */

var *nm_var(struct ns_nmodl *m, const char *name) {
    for (int i = 0; i < m->n_vars; i++)
        if (!strcmp(m->vars[i].name, name)) return &m->vars[i];
    for (int i = 0; i < m->n_elems; i++)
        if (!strcmp(m->elems[i].name, name)) return &m->elems[i];
    return NULL;
}
int nm_is_special(const char *n) {
    return !strcmp(n, "v") || !strcmp(n, "t") || !strcmp(n, "dt") || !strcmp(n, "celsius") ||
           !strcmp(n, "area") || !strcmp(n, "diam");
}

var *nm_add_var(parser *p, const char *name, int cls, double value, int line) {
    struct ns_nmodl *m = p->m;
    var *old = nm_var(m, name);
    if (old) {
        /* an ion variable may be declared ASSIGNED (or STATE: cai) as well */
        if (old->ion >= 0) {
            if (cls == V_STATE) old->cls = V_STATE;
            return old;
        }
        if (old->implicit) { /* a NONSPECIFIC/ELECTRODE_CURRENT name, declared once anywhere (nocmodl) */
            old->implicit = 0;
            old->cls = cls;
            old->value = value;
            old->line = line;
            return old;
        }
        nm_perr(p, NS_ERR_PARSE, line, "'%s' declared twice", name);
        return NULL;
    }
    if (m->n_vars == m->cap_vars) {
        int cap = m->cap_vars ? 2 * m->cap_vars : 32;
        var *n = realloc(m->vars, (size_t)cap * sizeof *n);
        if (!n) {
            nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
            return NULL;
        }
        m->vars = n;
        m->cap_vars = cap;
    }
    var *v = &m->vars[m->n_vars++];
    memset(v, 0, sizeof *v);
    v->name = nm_dup(name);
    v->cls = cls;
    v->value = value;
    v->field = v->global = v->ion = v->pointer = -1;
    v->line = line;
    return v;
}

static const struct {
    const char *name;
    int charge;
} KNOWN_IONS[] = {{"na", 1}, {"k", 1}, {"ca", 2}, {"cl", -1}};

/* USEION ion [READ names] [WRITE names] [VALENCE z] in the NEURON block */
static int parse_useion(parser *p, const tok *t) {
    struct ns_nmodl *m = p->m;
    char *ion = nm_expect_name(p);
    if (!ion) return -1;
    if (m->n_ions == 8) return nm_perr(p, NS_ERR_UNSUPPORTED, t->line, "more than 8 ions");
    ion_use *u = &m->ions[m->n_ions];
    u->name = nm_ar_dupn(ion, strlen(ion));
    u->charge = 0;
    for (size_t k = 0; k < sizeof KNOWN_IONS / sizeof *KNOWN_IONS; k++)
        if (!strcmp(KNOWN_IONS[k].name, ion)) u->charge = KNOWN_IONS[k].charge;
    int mode = 0; /* 1 READ, 2 WRITE */
    char *names[16];
    int modes[16], n_names = 0;
    for (;;) {
        if (nm_is_name(p, "READ")) { mode = 1; p->pos++; continue; }
        if (nm_is_name(p, "WRITE")) { mode = 2; p->pos++; continue; }
        if (nm_is_name(p, "VALENCE") || nm_is_name(p, "CHARGE")) { /* nocmodl: CHARGE is VALENCE */
            p->pos++;
            int neg = 0;
            if (nm_is_punct(p, '-')) { neg = 1; p->pos++; }
            if (nm_cur(p)->kind != T_NUM) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "%s needs a number", p->toks[p->pos - 1 - neg].text);
            u->charge = (int)p->toks[p->pos++].num * (neg ? -1 : 1);
            continue;
        }
        if (nm_is_punct(p, ',')) { p->pos++; continue; }
        if (mode && nm_cur(p)->kind == T_NAME && n_names < 16) {
            const char *nm = nm_cur(p)->text;
            if (!strcmp(nm, "SUFFIX") || !strcmp(nm, "USEION") || !strcmp(nm, "RANGE") || !strcmp(nm, "GLOBAL") ||
                !strcmp(nm, "NONSPECIFIC_CURRENT") || !strcmp(nm, "POINT_PROCESS") ||
                !strcmp(nm, "ELECTRODE_CURRENT") || !strcmp(nm, "REPRESENTS") || nm_unsupported_name(nm))
                break;
            names[n_names] = p->toks[p->pos].text;
            modes[n_names++] = mode;
            p->pos++;
            continue;
        }
        break;
    }
    if (u->charge == 0) {
        return nm_perr(p, NS_ERR_INVALID_ARGUMENT, t->line,
                    "unknown ion '%s' (known: na, k, ca, cl; give others a VALENCE)", ion);
    }
    size_t il = strlen(ion);
    for (int k = 0; k < n_names; k++) {
        const char *nm = names[k];
        int what = 0;
        if (nm[0] == 'e' && !strcmp(nm + 1, ion)) what = 'e';
        else if (nm[0] == 'i' && !strcmp(nm + 1, ion)) what = 'i';
        else if (!strncmp(nm, ion, il) && !strcmp(nm + il, "i")) what = 'c';
        else if (!strncmp(nm, ion, il) && !strcmp(nm + il, "o")) what = 'o';
        if (!what)
            return nm_perr(p, NS_ERR_PARSE, t->line, "USEION %s: '%s' is not e%s, i%s, %si or %so", ion, nm, ion,
                        ion, ion, ion);
        unsigned f = 0;
        if (modes[k] == 1)
            f = what == 'e' ? NS_MECH_ION_READ_E : what == 'i' ? NS_MECH_ION_READ_I
                : what == 'c' ? NS_MECH_ION_READ_CI : NS_MECH_ION_READ_CO;
        else if (what == 'i') f = NS_MECH_ION_WRITE_I;
        else if (what == 'c') f = NS_MECH_ION_WRITE_CI;
        else if (what == 'o') f = NS_MECH_ION_WRITE_CO;
        else f = NS_MECH_ION_WRITE_E;
        u->flags |= f;
        var *v = nm_var(m, nm);
        if (!v && !(v = nm_add_var(p, nm, modes[k] == 1 ? V_ION_READ : V_ASSIGNED, 0, t->line))) return -1;
        /* declared before the NEURON block (PARAMETER { ek (mV) }, Migliore's files): the ion's
         * value all the same, as nocmodl reads it (the declaration gives only units) */
        if (modes[k] == 1 && v->ion < 0 && (v->cls == V_PARAM || v->cls == V_ASSIGNED)) v->cls = V_ION_READ;
        if (modes[k] == 2) v->cls = V_ASSIGNED;
        v->ion = m->n_ions;
        v->ion_what = what;
        if (modes[k] == 2 && what == 'i' && nm_add_name(&m->currents, &m->n_currents, v->name)) return -1;
    }
    m->n_ions++;
    return 0;
}

static int parse_neuron(parser *p) {
    struct ns_nmodl *m = p->m;
    if (nm_expect(p, '{')) return -1;
    while (!nm_is_punct(p, '}')) {
        tok *t = nm_cur(p);
        if (t->kind != T_NAME) return nm_perr(p, NS_ERR_PARSE, t->line, "NEURON block: unexpected %s", nm_describe(t));
        p->pos++;
        if (!strcmp(t->text, "SUFFIX") || !strcmp(t->text, "POINT_PROCESS") || !strcmp(t->text, "ARTIFICIAL_CELL")) {
            /* a second one replaces the first, as in nocmodl (MyExp2Sid.mod names two POINT_PROCESSes) */
            char *n = nm_expect_name(p);
            if (!n) return -1;
            free(m->name);
            m->name = nm_dup(n);
            m->artificial = !strcmp(t->text, "ARTIFICIAL_CELL"); /* a point process without v (nmodl_events.c) */
            m->point = m->artificial || !strcmp(t->text, "POINT_PROCESS");
        } else if (!strcmp(t->text, "USEION")) {
            if (parse_useion(p, t)) return -1;
        } else if (!strcmp(t->text, "NONSPECIFIC_CURRENT") || !strcmp(t->text, "ELECTRODE_CURRENT")) {
            /* ELECTRODE_CURRENT: a current injected into the cell (nocmodl's
             * electrode_current: the node's rhs gets +I and d -dI/dv) */
            if (t->text[0] == 'E') m->electrode = 1;
            for (;;) {
                char *n = nm_expect_name(p);
                if (!n) return -1;
                var *v = nm_var(m, n);
                if (!v) {
                    if (!(v = nm_add_var(p, n, V_ASSIGNED, 0, t->line))) return -1;
                    v->implicit = 1;
                }
                if (nm_add_name(&m->currents, &m->n_currents, n)) return -1;
                if (!nm_is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "RANGE") || !strcmp(t->text, "GLOBAL")) {
            int range = !strcmp(t->text, "RANGE");
            for (;;) {
                int line = nm_cur(p)->line;
                char *n = nm_expect_name(p);
                if (!n) return -1;
                if (!range) {
                    int *gl = nm_realloc(nm_parse_arena, m->globals_line, (size_t)(m->n_globals_decl + 1) * sizeof *gl);
                    if (!gl) return -1;
                    m->globals_line = gl;
                    gl[m->n_globals_decl] = line;
                }
                if (range ? nm_add_name(&m->range, &m->n_range, n) : nm_add_name(&m->globals_decl, &m->n_globals_decl, n))
                    return -1;
                if (!nm_is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "RANDOM")) { /* NEURON 9: a Random123 stream per instance */
            for (;;) {
                int line = nm_cur(p)->line;
                char *n = nm_expect_name(p);
                if (!n) return -1;
                int *rl = nm_realloc(nm_parse_arena, m->randoms_line, (size_t)(m->n_randoms + 1) * sizeof *rl);
                if (!rl) return -1;
                m->randoms_line = rl;
                rl[m->n_randoms] = line;
                if (nm_add_name(&m->randoms, &m->n_randoms, n)) return -1;
                if (!nm_is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(t->text, "POINTER") || !strcmp(t->text, "BBCOREPOINTER")) {
            /* POINTER: a variable read and written through ppack.pointer (connected by the simulation);
             * BBCOREPOINTER: CoreNEURON's opaque handle, which only VERBATIM C uses: an ASSIGNED field */
            const int bbcore = t->text[0] == 'B';
            for (;;) {
                int line = nm_cur(p)->line;
                char *n = nm_expect_name(p);
                if (!n) return -1;
                if (!bbcore) {
                    int *pl = nm_realloc(nm_parse_arena, m->pointers_line, (size_t)(m->n_pointers + 1) * sizeof *pl);
                    if (!pl) return -1;
                    m->pointers_line = pl;
                    pl[m->n_pointers] = line;
                    if (nm_add_name(&m->pointers, &m->n_pointers, n)) return -1;
                }
                if (!nm_is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (nm_unsupported_name(t->text)) {
            return nm_perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", t->text);
        } else if (!strcmp(t->text, "CONDUCTANCE")) {
            p->pos++; /* a hint for NEURON's CVODE; nothing to do */
        } else if (!strcmp(t->text, "REPRESENTS")) {
            /* an ontology tag, `REPRESENTS NCIT:C17145` (the rest of the line
             * after ':' is a comment): an annotation, as nocmodl 9 ignores it */
            if (!nm_expect_name(p)) return -1;
        } else {
            return nm_perr(p, NS_ERR_PARSE, t->line, "NEURON block: unknown keyword '%s'", t->text);
        }
    }
    p->pos++;
    return 0;
}

/* PARAMETER / ASSIGNED / STATE / CONSTANT: name [= value] [(units)] [<lo,hi>] [FROM a TO b] */
static int parse_decls(parser *p, int cls) {
    if (nm_expect(p, '{')) return -1;
    while (!nm_is_punct(p, '}')) {
        tok *t = nm_cur(p);
        if (t->kind != T_NAME) return nm_perr(p, NS_ERR_PARSE, t->line, "expected a name, found %s", nm_describe(t));
        p->pos++;
        double value = 0, start = 0;
        int has_value = 0, size = 0;
        if (nm_parse_dim(p, &size)) return -1;
        if (size && cls == V_CONST)
            return nm_perr(p, NS_ERR_UNSUPPORTED, t->line,
                           "CONSTANT %s[%d]: a CONSTANT array (nocmodl refuses it too, a syntax error: declare the "
                           "array in PARAMETER or ASSIGNED)", t->text, size);
        if (nm_is_punct(p, '=')) {
            p->pos++;
            int neg = 0;
            if (nm_is_punct(p, '-')) { neg = 1; p->pos++; }
            if (nm_cur(p)->kind != T_NUM) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected a number after '%s ='", t->text);
            value = p->toks[p->pos++].num * (neg ? -1 : 1);
            has_value = 1;
        }
        if (nm_skip_units(p) || nm_skip_limits(p)) return -1;
        if (nm_is_name(p, "FROM")) { /* STATE x FROM 0 TO 1: bounds are ignored by NEURON's solvers */
            for (int k = 0; k < 2; ++k) {
                if (k == 1 && !nm_is_name(p, "TO")) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected TO, found %s", nm_describe(nm_cur(p)));
                p->pos++;
                if (nm_is_punct(p, '-')) p->pos++;
                if (nm_cur(p)->kind != T_NUM)
                    return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected a number after %s, found %s", k ? "TO" : "FROM", nm_describe(nm_cur(p)));
                p->pos++;
            }
        }
        if (cls == V_STATE && nm_is_name(p, "START")) { /* STATE x START 15.7: x's value before INITIAL (nocmodl's x0) */
            p->pos++;
            int neg = 0;
            if (nm_is_punct(p, '-')) { neg = 1; p->pos++; }
            if (nm_cur(p)->kind != T_NUM) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected a number after START");
            start = p->toks[p->pos++].num * (neg ? -1 : 1);
            if (nm_skip_units(p)) return -1;
        }
        if (nm_is_special(t->text)) continue; /* v, celsius, dt, t, area, diam: the loop's */
        if (cls == V_ASSIGNED && nm_var(p->m, t->text)) {
            var *v = nm_var(p->m, t->text);
            if (v->ion >= 0 || v->cls == V_ASSIGNED) {
                v->implicit = 0;
                continue;
            }
        }
        if (cls == V_STATE && has_value) return nm_perr(p, NS_ERR_PARSE, t->line, "STATE '%s' with a value", t->text);
        var *v = nm_add_var(p, t->text, cls, cls == V_STATE ? start : value, t->line);
        if (!v) return -1;
        v->size = size;
    }
    p->pos++;
    return 0;
}

/* The text inside a units annotation "(...)" at the current token (without
 * the parentheses), stepped over; NULL (and an error) where there is none. */
static char *units_text(parser *p) {
    if (!nm_is_punct(p, '(')) {
        nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected units in parentheses, found %s", nm_describe(nm_cur(p)));
        return NULL;
    }
    const tok *open = nm_cur(p);
    if (nm_skip_units(p)) return NULL;
    const tok *close = &p->toks[p->pos - 1];
    if (close->src != open->src) { /* an INCLUDE inside the parentheses */
        nm_perr(p, NS_ERR_PARSE, open->line, "units cut by an INCLUDE");
        return NULL;
    }
    return nm_ar_dupn(open->src + open->end, close->start - open->end);
}

/* UNITS: `(a) = (b)` defines the name a for the constants that follow (the
 * expressions are not converted: NEURON's files are written in consistent
 * units); named constants `NAME = number (units)` (the number), `NAME = (u1)
 * (u2)` and `NAME = (u1) -> (u2)` (u1 in units of u2, from the units
 * database of nmodl_units.c, as nocmodl computes them). */
static int parse_units(parser *p) {
    const char **alias = NULL;
    int n_alias = 0;
    if (nm_expect(p, '{')) return -1;
    while (!nm_is_punct(p, '}')) {
        if (nm_cur(p)->kind == T_EOF) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "missing '}'");
        if (nm_is_punct(p, '(')) { /* (a) = (b): a defined as b, for the constants below */
            char *a = units_text(p), *b;
            if (!a || nm_expect(p, '=') || !(b = units_text(p))) return -1;
            const char **na = nm_realloc(nm_parse_arena, alias, (size_t)(n_alias + 1) * 2 * sizeof *na);
            if (!na) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, nm_cur(p)->line, "out of memory");
            alias = na;
            alias[2 * n_alias] = a;
            alias[2 * n_alias++ + 1] = b;
            continue;
        }
        if (nm_cur(p)->kind == T_NAME) {
            tok *t = &p->toks[p->pos++];
            if (nm_expect(p, '=')) return -1;
            double value;
            if (nm_cur(p)->kind == T_NUM || nm_is_punct(p, '-')) {
                int neg = nm_is_punct(p, '-');
                if (neg) p->pos++;
                if (nm_cur(p)->kind != T_NUM)
                    return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "UNITS %s: expected a number, found %s", t->text,
                                nm_describe(nm_cur(p)));
                value = p->toks[p->pos++].num * (neg ? -1 : 1);
                if (units_text(p) == NULL) return -1;
            } else {
                char *what = units_text(p);
                if (!what) return -1;
                if (nm_is_punct(p, '-') && p->toks[p->pos + 1].kind == T_PUNCT && p->toks[p->pos + 1].punct == '>')
                    p->pos += 2; /* (u1) -> (u2) */
                char *unit = units_text(p);
                if (!unit) return -1;
                char msg[200];
                if (nm_units_convert(what, unit, alias, n_alias, &value, msg, sizeof msg))
                    return nm_perr(p, NS_ERR_UNSUPPORTED, t->line, "UNITS %s = (%.60s) (%.60s): %s", t->text, what, unit,
                                msg);
            }
            if (!nm_add_var(p, t->text, V_CONST, value, t->line)) return -1;
            continue;
        }
        return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "UNITS block: unexpected %s", nm_describe(nm_cur(p)));
    }
    p->pos++;
    return 0;
}

static int add_block(parser *p, block *b) {
    block **n = realloc(p->m->blocks, (size_t)(p->m->n_blocks + 1) * sizeof *n);
    if (!n) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, b->line, "out of memory");
    p->m->blocks = n;
    n[p->m->n_blocks++] = b;
    return 0;
}

static int parse_callable(parser *p, int kind, int alg, int ftable) {
    block *b = nm_calloc(nm_parse_arena, 1, sizeof *b);
    if (!b) return -1;
    b->kind = kind;
    b->alg = alg;
    b->line = nm_cur(p)->line;
    if (!(b->name = nm_expect_name(p))) return -1;
    for (int i = 0; i < p->m->n_blocks; i++)
        if (!strcmp(p->m->blocks[i]->name, b->name))
            return nm_perr(p, NS_ERR_PARSE, b->line, "'%s' defined twice", b->name);
    if (alg && nm_is_name(p, "SOLVEFOR")) { /* LINEAR name SOLVEFOR a, b { } */
        p->pos++;
        for (;;) {
            char *n = nm_expect_name(p);
            if (!n || nm_add_name(&b->unknowns, &b->n_unknowns, n)) return -1;
            if (!nm_is_punct(p, ',')) break;
            p->pos++;
        }
    }
    if (kind != B_DERIVATIVE && kind != B_KINETIC && !alg) {
        if (nm_expect(p, '(')) return -1;
        while (!nm_is_punct(p, ')')) {
            char *a = nm_expect_name(p);
            if (!a || nm_add_name(&b->args, &b->n_args, a) || nm_skip_units(p)) return -1;
            if (nm_is_punct(p, ',')) p->pos++;
            else if (!nm_is_punct(p, ')')) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "expected ',' or ')'");
        }
        p->pos++;
        if (nm_skip_units(p)) return -1;
    }
    if (ftable) { /* FUNCTION_TABLE name(args): its values come from the user (nocmodl: hoc's table_name) */
        if (!b->n_args)
            return nm_perr(p, NS_ERR_PARSE, b->line, "FUNCTION_TABLE %s needs one or more arguments", b->name);
        if (b->n_args > 4)
            return nm_perr(p, NS_ERR_UNSUPPORTED, b->line, "FUNCTION_TABLE %s: %d arguments (at most 4)", b->name,
                        b->n_args);
        if (!(b->body = nm_calloc(nm_parse_arena, 1, sizeof *b->body))) return -1;
        b->ftable = ++p->m->n_ftables; /* on the GPU too: the loop uploads the values (ns_mech_ppack.ftable) */
        return add_block(p, b);
    }
    if (!(b->body = nm_parse_block(p, b))) return -1;
    return add_block(p, b);
}

/* A block into *dst: the first, or a second one of the kind after the first (netcon.inc's
 * BREAKPOINT and the file's, two AFTER SOLVE blocks): nocmodl runs both, in order */
/* Take the SOLVEs out of the statements nested in l (if/else, FROM, WHILE, blocks) into *out,
 * in text order, and remove them there. */
static int take_solves(parser *p, stlist *l, stlist *out) {
    int k = 0;
    for (int i = 0; l && i < l->n; i++) {
        st *s = l->s[i];
        if (s->kind == ST_SOLVE) {
            if (nm_add_st(p, out, s)) return -1;
            continue;
        }
        if (take_solves(p, s->then_, out) || take_solves(p, s->else_, out)) return -1;
        l->s[k++] = s;
    }
    if (l) l->n = k;
    return 0;
}

/* nocmodl moves every SOLVE of a BREAKPOINT, however nested, to nrn_state (solve.cpp,
 * solvequeue): `if (gmax == 0) {g = 0} else {SOLVE states METHOD cnexp ...}` (ModelDB's
 * bg_cvode.inc) integrates the states whatever the condition, and the condition stays in the
 * currents. A nested SOLVE becomes a statement of the block's top level, before the statement
 * it was in (the SOLVEs run before the rest in nocmodl's nrn_state of a mechanism without
 * currents). */
static int hoist_solves(parser *p, stlist *l) {
    stlist out = {0};
    for (int i = 0; i < l->n; i++) {
        st *s = l->s[i];
        if (s->kind != ST_SOLVE && (take_solves(p, s->then_, &out) || take_solves(p, s->else_, &out))) return -1;
        if (nm_add_st(p, &out, s)) return -1;
    }
    l->s = out.s;
    l->n = out.n;
    return 0;
}

static int append_block(parser *p, stlist **dst, stlist *l, const char *k, int line) {
    if (!*dst) {
        *dst = l;
        return 0;
    }
    stlist *d = *dst;
    for (int i = 0; i < l->n; i++)
        if (nm_add_st(p, d, l->s[i])) return -1;
    for (int i = 0; i < l->n_locals; i++) {
        if (nm_in_list(d->locals, d->n_locals, l->locals[i]))
            return nm_perr(p, NS_ERR_PARSE, line, "%s: LOCAL %s in both %s blocks", k, l->locals[i], k);
        int *ns = nm_realloc(nm_parse_arena, d->local_size, (size_t)(d->n_locals + 1) * sizeof *ns);
        if (!ns) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
        d->local_size = ns;
        ns[d->n_locals] = l->local_size ? l->local_size[i] : 0;
        if (nm_add_name(&d->locals, &d->n_locals, l->locals[i])) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, line, "out of memory");
    }
    return 0;
}

int nm_parse_top(parser *p) {
    struct ns_nmodl *m = p->m;
    while (nm_cur(p)->kind != T_EOF) {
        tok *t = nm_cur(p);
        if (t->kind == T_VERBATIM) { /* C at the top: before the file's functions (nmodl_verbatim.c) */
            if (!m->verbatim_top && !(m->verbatim_top = nm_calloc(nm_parse_arena, 1, sizeof *m->verbatim_top))) return -1;
            st *s = nm_parse_statement(p, m->verbatim_top, NULL);
            if (!s || nm_add_st(p, m->verbatim_top, s)) return -1;
            continue;
        }
        if (t->kind != T_NAME) return nm_perr(p, NS_ERR_PARSE, t->line, "expected a block keyword, found %s", nm_describe(t));
        p->pos++;
        const char *k = t->text;
        if (!strcmp(k, "NEURON")) {
            if (parse_neuron(p)) return -1;
        } else if (!strcmp(k, "UNITS")) {
            if (parse_units(p)) return -1;
        } else if (!strcmp(k, "PARAMETER")) {
            if (parse_decls(p, V_PARAM)) return -1;
        } else if (!strcmp(k, "CONSTANT")) {
            if (parse_decls(p, V_CONST)) return -1;
        } else if (!strcmp(k, "ASSIGNED")) {
            if (parse_decls(p, V_ASSIGNED)) return -1;
        } else if (!strcmp(k, "STATE")) {
            if (parse_decls(p, V_STATE)) return -1;
        } else if (!strcmp(k, "INDEPENDENT")) {
            int depth = 0;
            do {
                if (nm_cur(p)->kind == T_EOF) return nm_perr(p, NS_ERR_PARSE, t->line, "unterminated INDEPENDENT");
                if (nm_is_punct(p, '{')) depth++;
                if (nm_is_punct(p, '}')) depth--;
                p->pos++;
            } while (depth > 0);
        } else if (!strcmp(k, "LOCAL")) {
            /* a module-level LOCAL: in NEURON one value per thread, shared by
             * every instance; here a field per instance (the same results
             * wherever an instance writes it before it reads it, and
             * thread-safe) */
            for (;;) {
                tok *n = nm_cur(p);
                char *name = nm_expect_name(p);
                int size = 0;
                if (!name || nm_parse_dim(p, &size)) return -1;
                var *old = nm_var(m, name);
                if (old && old->cls == V_ASSIGNED && old->size == size) { /* also ASSIGNED: nocmodl takes it as one */
                    if (!nm_is_punct(p, ',')) break;
                    p->pos++;
                    continue;
                }
                var *v = nm_add_var(p, name, V_ASSIGNED, 0, n->line);
                if (!v) return -1;
                v->size = size;
                if (!nm_is_punct(p, ',')) break;
                p->pos++;
            }
        } else if (!strcmp(k, "DEFINE")) {
            char *n = nm_expect_name(p);
            if (!n) return -1;
            if (nm_cur(p)->kind != T_NUM) return nm_perr(p, NS_ERR_PARSE, nm_cur(p)->line, "DEFINE needs a number");
            if (!nm_add_var(p, n, V_CONST, p->toks[p->pos++].num, t->line)) return -1;
        } else if (!strcmp(k, "INITIAL") || !strcmp(k, "BREAKPOINT")) {
            stlist **dst = !strcmp(k, "INITIAL") ? &m->initial : &m->breakpoint;
            stlist *l = nm_parse_block(p, NULL);
            if (!l) return -1;
            if (dst == &m->breakpoint && hoist_solves(p, l)) return -1;
            if (append_block(p, dst, l, k, t->line)) return -1;
        } else if (!strcmp(k, "BEFORE") || !strcmp(k, "AFTER") || !strcmp(k, "CONSTRUCTOR") ||
                   !strcmp(k, "DESTRUCTOR")) {
            /* nocmodl's BA blocks: BEFORE BREAKPOINT, BEFORE/AFTER INITIAL, AFTER SOLVE,
             * BEFORE STEP (and the spellings it accepts that NEURON never runs: refused) */
            int h = k[0] == 'C' ? NS_MECH_CONSTRUCTOR : k[0] == 'D' ? NS_MECH_DESTRUCTOR : -1;
            char label[32];
            snprintf(label, sizeof label, "%s", k);
            if (h < 0) {
                const int before = k[0] == 'B';
                const char *w = nm_cur(p)->kind == T_NAME ? nm_cur(p)->text : "";
                h = before && !strcmp(w, "BREAKPOINT") ? NS_MECH_BEFORE_BREAKPOINT
                    : !before && !strcmp(w, "SOLVE")   ? NS_MECH_AFTER_SOLVE
                    : !strcmp(w, "INITIAL")            ? (before ? NS_MECH_BEFORE_INITIAL : NS_MECH_AFTER_INITIAL)
                    : before && !strcmp(w, "STEP")     ? NS_MECH_BEFORE_STEP
                                                       : -1;
                if (h < 0)
                    return nm_perr(p, NS_ERR_UNSUPPORTED, t->line,
                                "%s %s: NEURON runs BEFORE BREAKPOINT, AFTER SOLVE, BEFORE INITIAL, AFTER INITIAL and "
                                "BEFORE STEP",
                                k, *w ? w : nm_describe(nm_cur(p)));
                snprintf(label, sizeof label, "%s %s", k, w);
                p->pos++;
            }
            stlist *l = nm_parse_block(p, NULL);
            if (!l) return -1;
            if (!m->hooks[h]) m->hooks_line[h] = t->line;
            if (append_block(p, &m->hooks[h], l, label, t->line)) return -1;
        } else if (!strcmp(k, "DERIVATIVE")) {
            if (parse_callable(p, B_DERIVATIVE, 0, 0)) return -1;
        } else if (!strcmp(k, "KINETIC")) {
            if (parse_callable(p, B_KINETIC, 0, 0)) return -1;
        } else if (!strcmp(k, "PROCEDURE")) {
            if (parse_callable(p, B_PROCEDURE, 0, 0)) return -1;
        } else if (!strcmp(k, "FUNCTION")) {
            if (parse_callable(p, B_FUNCTION, 0, 0)) return -1;
        } else if (!strcmp(k, "FUNCTION_TABLE")) {
            if (parse_callable(p, B_FUNCTION, 0, 1)) return -1;
        } else if (!strcmp(k, "LINEAR") || !strcmp(k, "NONLINEAR")) {
            if (parse_callable(p, B_PROCEDURE, k[0] == 'L' ? 'L' : 'N', 0)) return -1;
        } else if (!strcmp(k, "NET_RECEIVE")) {
            if (m->net_receive) return nm_perr(p, NS_ERR_PARSE, t->line, "a second NET_RECEIVE");
            if (nm_expect(p, '(')) return -1;
            /* the arguments: the weight vector, weight first (per-connection state after it) */
            for (;;) {
                char *a = nm_expect_name(p);
                if (!a || nm_skip_units(p)) return -1;
                if (nm_in_list(m->net_args, m->n_net_args, a))
                    return nm_perr(p, NS_ERR_PARSE, t->line, "NET_RECEIVE: argument '%s' twice", a);
                if (nm_add_name(&m->net_args, &m->n_net_args, a)) return nm_perr(p, NS_ERR_OUT_OF_MEMORY, t->line, "out of memory");
                if (!nm_is_punct(p, ',')) break;
                p->pos++;
            }
            if (nm_expect(p, ')')) return -1;
            m->net_weight = m->net_args[0];
            p->net_depth = p->depth + 1;
            m->net_receive = nm_parse_block(p, NULL);
            p->net_depth = 0;
            if (!m->net_receive) return -1;
        } else if (nm_unsupported_name(k)) {
            return nm_perr(p, NS_ERR_UNSUPPORTED, t->line, "%s is not supported", k);
        } else {
            return nm_perr(p, NS_ERR_PARSE, t->line, "unknown block '%s'", k);
        }
    }
    return 0;
}
