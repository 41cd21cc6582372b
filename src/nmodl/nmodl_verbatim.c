/* VERBATIM C in NMODL files, compiled as written for the CPU, as NEURON's
 * nocmodl does (docs/mechanisms.md, "VERBATIM").
 *
 * The translator writes a block's C in place (nmodl_gen_st.c, nm_emit_verbatim)
 * between #define's that give NEURON's names their meaning in this
 * instance layout (a RANGE name is the instance's field, `_lx` the
 * argument or LOCAL x, `_threadargscomma_` the arguments of a call of
 * another block, t and dt the time and step...), #undef'd after it, and
 * writes NEURON's C helpers that real files call (hoc_Exp, mcell_ran4,
 * nrnran123_*, hoc_execerror: nmodl_verbatim.h) into the mechanism's
 * header. What needs NEURON's hoc interpreter (its arguments, Vectors,
 * objects, hoc calls) has no meaning here: a FUNCTION or PROCEDURE whose C
 * uses it and that nothing in the file calls is one only hoc could call
 * and is left out; anywhere else it is refused, naming the file, the line
 * and the function. This file: a scanner of C names and those checks. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "nmodl/nmodl_impl.h"

/* src/nmodl/nmodl_verbatim.h as text (CMake writes it, nmodl_verbatim_text.c) */
extern const char ns_nmodl_verbatim_header[];
const char *nm_verbatim_runtime(void) { return ns_nmodl_verbatim_header; }

int nm_cscan_next(nm_cscan *sc, nm_cident *id) {
    const char *c = sc->c;
    size_t i = sc->pos;
    for (;;) {
        const char ch = c[i];
        if (!ch) {
            sc->pos = i;
            return 0;
        }
        if (ch == '\n') {
            sc->line++;
            sc->bol = 1;
            i++;
            continue;
        }
        if (isspace((unsigned char)ch)) { i++; continue; }
        if (ch == '#' && sc->bol) { /* a preprocessor line (with its continuations) */
            while (c[i] && c[i] != '\n') {
                if (c[i] == '\\' && c[i + 1] == '\n') { sc->line++; i++; }
                i++;
            }
            continue;
        }
        sc->bol = 0;
        if (ch == '/' && c[i + 1] == '*') {
            for (i += 2; c[i] && !(c[i] == '*' && c[i + 1] == '/'); i++) sc->line += c[i] == '\n';
            if (c[i]) i += 2;
            continue;
        }
        if (ch == '/' && c[i + 1] == '/') {
            while (c[i] && c[i] != '\n') i++;
            continue;
        }
        if (ch == '"' || ch == '\'') {
            for (i++; c[i] && c[i] != ch && c[i] != '\n'; i++)
                if (c[i] == '\\' && c[i + 1]) i++;
            if (c[i] == ch) i++;
            sc->member = 0;
            continue;
        }
        if (isdigit((unsigned char)ch) || (ch == '.' && isdigit((unsigned char)c[i + 1]))) { /* 1e5, 0x1f, 2.5f */
            while (isalnum((unsigned char)c[i]) || c[i] == '.' || c[i] == '_' ||
                   ((c[i] == '+' || c[i] == '-') && (c[i - 1] == 'e' || c[i - 1] == 'E')))
                i++;
            sc->member = 0;
            continue;
        }
        if (isalpha((unsigned char)ch) || ch == '_') {
            const size_t b = i;
            while (isalnum((unsigned char)c[i]) || c[i] == '_') i++;
            size_t k = i;
            while (c[k] == ' ' || c[k] == '\t') k++;
            id->s = c + b;
            id->n = i - b;
            id->line = sc->line;
            id->depth = sc->depth;
            id->member = sc->member;
            id->call = c[k] == '(';
            sc->member = 0;
            sc->pos = i;
            return 1;
        }
        sc->member = ch == '.' || (ch == '-' && c[i + 1] == '>');
        if (ch == '-' && c[i + 1] == '>') i++;
        if (ch == '{') sc->depth++;
        if (ch == '}') sc->depth--;
        i++;
    }
}

static int is(const nm_cident *id, const char *s) { return strlen(s) == id->n && !strncmp(id->s, s, id->n); }
static int starts(const nm_cident *id, const char *s) {
    const size_t n = strlen(s);
    return id->n >= n && !strncmp(id->s, s, n);
}

/* NEURON's functions and types that need its hoc interpreter: the arguments
 * of a call from hoc, Vectors and Lists, objects, Random objects, hoc calls */
static int hoc_only(const nm_cident *id) {
    static const char *const names[] = {"ifarg", "getarg", "gargstr", "Object", "IvocVect", "Vect",
                                        "nrn_random_arg", "nrn_get_random_sequence", "nrn_set_random_sequence",
                                        "nrn_random_isran123", "nrn_random123_getseq", "nrn_random123_setseq",
                                        "nrn_mlh_gsort", "nrn_pushsec", "nrn_popsec", "nrn_event_queue_stats",
                                        "nrn_fake_fire", "nrn_patternstim_info_ref", "install_vector_method", "Section",
                                        "Node", "chk_access", "secname", "nrn_secname", "get_node", "get_nnode",
                                        "nrn_sec2cell", "section_length", "nrn_parent_info", NULL};
    for (int i = 0; names[i]; i++)
        if (is(id, names[i])) return 1;
    if (is(id, "hoc_Exp") || is(id, "hoc_execerror") || is(id, "hoc_execerr_ext") || is(id, "hoc_warning") ||
        is(id, "vector_capacity") || is(id, "vector_vec") || is(id, "vector_pobj") || is(id, "hoc_obj_ref") ||
        is(id, "hoc_obj_unref") || is(id, "hoc_Emalloc") || is(id, "hoc_Ecalloc") || is(id, "hoc_malchk") ||
        is(id, "hoc_lookup") || is(id, "hoc_pushx") || is(id, "hoc_call_func")) /* nmodl_verbatim.h's */
        return 0;
    return starts(id, "hoc_") || starts(id, "vector_") || starts(id, "ivoc_") || starts(id, "list_vector") ||
           starts(id, "nrnpy_") || starts(id, "_nrn_mechanism_");
}
/* NEURON's instance data in its own layout, which has no meaning here */
static int raw_instance(const nm_cident *id) {
    static const char *const names[] = {"_p", "_ppvar", "_ml", "_iml", "_prop", "_thread", "_pnt", "_tqitem",
                                        "_args", "_type", "_ml_real", "_NrnThread", "_nrn_thread", NULL};
    for (int i = 0; names[i]; i++)
        if (is(id, names[i])) return 1;
    return 0;
}

static const var *find_var(const struct ns_nmodl *m, const char *s, size_t n) {
    for (int i = 0; i < m->n_vars; i++)
        if (strlen(m->vars[i].name) == n && !strncmp(m->vars[i].name, s, n)) return &m->vars[i];
    return NULL;
}
static int find_block(const struct ns_nmodl *m, const char *s, size_t n) {
    for (int i = 0; i < m->n_blocks; i++)
        if (strlen(m->blocks[i]->name) == n && !strncmp(m->blocks[i]->name, s, n)) return i;
    return -1;
}

/* Is the name at id declared by the C itself (a type word before it)? Then
 * the C means its own variable and gets no #define. */
static int type_word(const char *w, size_t n) {
    static const char *const types[] = {"double", "int", "float", "char", "long", "short", "unsigned", "signed",
                                        "void", "size_t", "uint32_t", "int32_t", "uint64_t", "int64_t", "register",
                                        "static", "const", "extern", "struct", "nrnran123_State",
                                        "nrnran123_array4x32", NULL};
    for (int i = 0; types[i]; i++)
        if (n == strlen(types[i]) && !strncmp(w, types[i], n)) return 1;
    return 0;
}
static int blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }
int nm_c_declares(const char *c, const nm_cident *id) {
    const char *q = id->s;
    while (q > c && (blank(q[-1]) || q[-1] == '*')) q--;
    const char *w = q;
    while (w > c && (isalnum((unsigned char)w[-1]) || w[-1] == '_')) w--;
    if (type_word(w, (size_t)(q - w))) return 1; /* double x */
    if (q == c || q[-1] != ',') return 0;
    /* double a, b, x: after a comma outside parentheses in a statement that starts with a type word */
    const char *b = q - 1;
    int paren = 0;
    while (b > c && b[-1] != ';' && b[-1] != '{' && b[-1] != '}') {
        b--;
        paren += *b == ')' ? 1 : *b == '(' ? -1 : 0;
    }
    if (paren != 0) return 0;
    while (*b && blank(*b)) b++;
    const char *e = b;
    while (isalnum((unsigned char)*e) || *e == '_') e++;
    return type_word(b, (size_t)(e - b));
}

/* How the C from id on calls id's name: 1 with NEURON's thread arguments first (`f(_threadargscomma_
 * x)`), 2 with the NMODL arguments alone (`f(x)`, nocmodl's convention for a file that is not
 * THREADSAFE), 3 both ways */
int nm_c_call_style(const nm_cident *id) {
    nm_cscan sc = {id->s, 0, id->line, 0, 0, 0};
    nm_cident u;
    int style = 0;
    while (nm_cscan_next(&sc, &u)) {
        if (u.n != id->n || strncmp(u.s, id->s, id->n) || u.member || !u.call) continue;
        const char *a = strchr(u.s + u.n, '(') + 1;
        while (blank(*a)) a++;
        style |= strncmp(a, "_threadargs", 11) ? 2 : 1;
    }
    return style;
}

const char *nm_c_macro(const char *c, const char *name, nm_arena *a) {
    const size_t n = strlen(name);
    for (const char *q = c; q && *q; q = strchr(q, '\n'), q = q ? q + 1 : NULL) {
        const char *w = q;
        while (*w == ' ' || *w == '\t') w++;
        if (*w++ != '#') continue;
        while (*w == ' ' || *w == '\t') w++;
        if (strncmp(w, "define", 6) || !blank(w[6])) continue;
        w += 6;
        while (*w == ' ' || *w == '\t') w++;
        if (strncmp(w, name, n) || isalnum((unsigned char)w[n]) || w[n] == '_') continue;
        w += n;
        if (*w == '(') /* a function-like macro: its body after the parameters */
            while (*w && *w++ != ')') {}
        const char *e = w;
        while (*e && (*e != '\n' || e[-1] == '\\')) e++;
        char *body = nm_calloc(a, (size_t)(e - w) + 1, 1);
        if (!body) return NULL;
        for (size_t k = 0; w + k < e; k++) body[k] = w[k] == '\\' || w[k] == '\n' ? ' ' : w[k];
        return body;
    }
    return NULL;
}

/* does C text c write `_p_name` (`_p_x = ...`) or take its address (`&_p_x`, `&(_p_x)`; also in
 * its #define's)? */
static int writes_slot(const char *c, const char *name) {
    char w[136];
    snprintf(w, sizeof w, "_p_%s", name);
    const size_t n = strlen(w);
    for (const char *q = strstr(c, w); q; q = strstr(q + 1, w)) {
        if ((q > c && (isalnum((unsigned char)q[-1]) || q[-1] == '_')) || isalnum((unsigned char)q[n]) || q[n] == '_')
            continue;
        const char *a = q + n, *b = q;
        while (blank(*a) || *a == ')') a++;
        while (b > c && (blank(b[-1]) || b[-1] == '(')) b--;
        if ((a[0] == '=' && a[1] != '=') || (b > c && b[-1] == '&' && (b - 1 == c || b[-2] != '&'))) return 1;
    }
    return 0;
}
static int writes_slot_in(const stlist *l, const char *name) {
    for (int i = 0; l && i < l->n; i++)
        if ((l->s[i]->kind == ST_VERBATIM && writes_slot(l->s[i]->name, name)) || writes_slot_in(l->s[i]->then_, name) ||
            writes_slot_in(l->s[i]->else_, name))
            return 1;
    return 0;
}
int nm_verbatim_pointer_storage(const struct ns_nmodl *m, const char *name) {
    int w = writes_slot_in(m->verbatim_top, name) || writes_slot_in(m->initial, name) ||
            writes_slot_in(m->breakpoint, name) || writes_slot_in(m->net_receive, name) ||
            writes_slot_in(m->net_initial, name);
    for (int h = 0; !w && h < NS_MECH_N_HOOKS; h++) w = writes_slot_in(m->hooks[h], name);
    for (int i = 0; !w && i < m->n_blocks; i++) w = writes_slot_in(m->blocks[i]->body, name);
    return w;
}

char *nm_c_unprototype(const struct ns_nmodl *m, const char *c, nm_arena *a) {
    const size_t len = strlen(c);
    char *out = nm_calloc(a, len + 1, 1);
    if (!out) return NULL;
    memcpy(out, c, len + 1);
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id)) {
        const int k = id.member || !id.call ? -1 : find_block(m, id.s, id.n);
        if (k < 0 || (m->blocks[k]->kind != B_FUNCTION && m->blocks[k]->kind != B_PROCEDURE) || !nm_c_declares(c, &id))
            continue;
        size_t e = nm_c_close(c, (size_t)(strchr(id.s + id.n, '(') - c));
        while (e < len && blank(c[e])) e++;
        if (e >= len || c[e] != ';') continue; /* a definition or a call */
        size_t b = (size_t)(id.s - c);
        while (b > 0 && c[b - 1] != ';' && c[b - 1] != '{' && c[b - 1] != '}') b--;
        for (;;) { /* not the preprocessor lines before it (`#ifndef NRN_VERSION_GTEQ_8_2_0`) */
            while (blank(c[b])) b++;
            if (c[b] != '#') break;
            while (c[b] && c[b] != '\n') b += c[b] == '\\' && c[b + 1] == '\n' ? 2 : 1;
        }
        for (size_t q = b; q <= e; q++)
            if (out[q] != '\n') out[q] = ' ';
    }
    return out;
}

int nm_verbatim_balanced(const char *c) {
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    int low = 0, ret = 0;
    while (nm_cscan_next(&sc, &id)) {
        low = sc.depth < low ? sc.depth : low;
        ret |= is(&id, "return") || is(&id, "goto");
    }
    return low == 0 && sc.depth == 0 && !ret;
}

static int declares(const stlist *l, const char *name) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_VERBATIM) {
            nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
            nm_cident id;
            while (nm_cscan_next(&sc, &id))
                if (is(&id, name) && !id.member && nm_c_declares(s->name, &id)) return 1;
        }
        if (declares(s->then_, name) || declares(s->else_, name)) return 1;
    }
    return 0;
}
int nm_verbatim_declares(const stlist *l, const char *name) { return declares(l, name); }

int nm_verbatim_uses_random(const char *c) {
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id))
        if (!id.member && id.call && (is(&id, "normrand") || is(&id, "exprand") || is(&id, "scop_random") ||
                                      is(&id, "set_seed") || is(&id, "unirand")))
            return 1;
    return 0;
}

/* ---- which blocks the file's own code calls ---- */

typedef struct vcheck {
    struct ns_nmodl *m;
    char *called;        /* per block: 1 when the file's code (not hoc) calls it */
    int changed;
} vcheck;

static void mark_ex(vcheck *v, const ex *e) {
    if (!e) return;
    if (e->kind == EX_CALL) {
        const int b = find_block(v->m, e->text, strlen(e->text));
        if (b >= 0 && !v->called[b]) v->called[b] = 1, v->changed = 1;
        for (int i = 0; i < e->n_args; i++) mark_ex(v, e->args[i]);
    }
    mark_ex(v, e->a);
    mark_ex(v, e->b);
}
static void mark_c(vcheck *v, const char *c) {
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id)) {
        const int b = id.member ? -1 : find_block(v->m, id.s, id.n);
        if (b >= 0 && !v->called[b]) v->called[b] = 1, v->changed = 1;
    }
}
static void mark_list(vcheck *v, const stlist *l) {
    if (!l) return;
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_VERBATIM) mark_c(v, s->name);
        if (s->kind == ST_SOLVE) {
            const int b = find_block(v->m, s->name, strlen(s->name));
            if (b >= 0 && !v->called[b]) v->called[b] = 1, v->changed = 1;
        }
        mark_ex(v, s->e);
        mark_ex(v, s->e2);
        mark_ex(v, s->index);
        mark_ex(v, s->to);
        mark_ex(v, s->by);
        mark_list(v, s->then_);
        mark_list(v, s->else_);
    }
}

/* the first name in the block's C that needs hoc, or NULL */
static const st *hoc_use(const stlist *l, nm_cident *out) {
    if (!l) return NULL;
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_VERBATIM) {
            nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
            while (nm_cscan_next(&sc, out))
                if (!out->member && hoc_only(out)) return s;
        }
        const st *r = hoc_use(s->then_, out);
        if (!r) r = hoc_use(s->else_, out);
        if (r) return r;
    }
    return NULL;
}

static ns_status vfail(const st *s, const nm_cident *id, const char *fmt, const char *a, const char *b) {
    char msg[400];
    snprintf(msg, sizeof msg, fmt, (int)id->n, id->s, a ? a : "", b ? b : "");
    return ns_fail(NS_ERR_UNSUPPORTED, "%s:%d: %s", s->file, s->file_line + id->line, msg);
}

/* the checks of one block of C that stays: what it names must mean something here */
static ns_status check_c(const struct ns_nmodl *m, const st *s, int top, int ctor) {
    nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id)) {
        if (id.member || (ctor && (is(&id, "ifarg") || is(&id, "getarg")))) continue; /* nm_emit_verbatim's */
        if (hoc_only(&id) && (!top || id.depth > 0))
            return vfail(s, &id,
                         "VERBATIM C calls %.*s, which needs NEURON's hoc interpreter (hoc arguments, Vectors, "
                         "objects), which neurosolve does not have%s%s: keep such C in a FUNCTION or PROCEDURE that only "
                         "hoc calls (it is then left out) or replace it",
                         top ? " (in C outside the blocks)" : "", NULL);
        if (raw_instance(&id))
            return vfail(s, &id,
                         "VERBATIM C uses %.*s, NEURON's own instance data, which has no meaning here%s%s: "
                         "use the variables by name (a RANGE x as x, an argument or LOCAL x as _lx)",
                         NULL, NULL);
        const var *v = find_var(m, id.s, id.n);
        if (v && v->size && (v->cls == V_PARAM || v->cls == V_ASSIGNED || v->cls == V_STATE) &&
            (top || !nm_verbatim_balanced(s->name)))
            return vfail(s, &id,
                         "VERBATIM C uses the array %.*s%s%s where it cannot be copied in and out (outside the blocks, "
                         "in C with unbalanced braces, or with a return): an instance's array is not contiguous here; "
                         "use it in NMODL statements",
                         NULL, NULL);
        const int k = id.call && !top ? find_block(m, id.s, id.n) : -1;
        if (k >= 0 && (m->blocks[k]->kind == B_FUNCTION || m->blocks[k]->kind == B_PROCEDURE) &&
            nm_c_call_style(&id) == 3)
            return vfail(s, &id,
                         "VERBATIM C calls %.*s both with NEURON's thread arguments (_threadargscomma_) and without "
                         "them%s%s: call it one way",
                         NULL, NULL);
        if (starts(&id, "_ion_")) {
            const var *iv = find_var(m, id.s + 5, id.n - 5);
            if (!iv || iv->ion < 0)
                return vfail(s, &id, "VERBATIM C uses %.*s, which names no ion variable of this mechanism%s%s", NULL,
                             NULL);
        }
    }
    return NS_OK;
}
/* ctor: a CONSTRUCTOR's C, where ifarg and getarg are the constructor's arguments (nm_emit_verbatim) */
static ns_status check_list(const struct ns_nmodl *m, const stlist *l, int ctor) {
    if (!l) return NS_OK;
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        ns_status r = s->kind == ST_VERBATIM ? check_c(m, s, 0, ctor) : NS_OK;
        if (!r) r = check_list(m, s->then_, ctor);
        if (!r) r = check_list(m, s->else_, ctor);
        if (r) return r;
    }
    return NS_OK;
}
static int has_c(const stlist *l) {
    if (!l) return 0;
    for (int i = 0; i < l->n; i++)
        if (l->s[i]->kind == ST_VERBATIM || has_c(l->s[i]->then_) || has_c(l->s[i]->else_)) return 1;
    return 0;
}

/* ---- C functions outside the blocks that only hoc could call ---- */

/* Past the comment, string or character literal at c[i] (or i + 1) */
static size_t skip_lit(const char *c, size_t i) {
    if (c[i] == '/' && c[i + 1] == '*') {
        for (i += 2; c[i] && !(c[i] == '*' && c[i + 1] == '/'); i++) {}
        return c[i] ? i + 2 : i;
    }
    if (c[i] == '/' && c[i + 1] == '/') {
        while (c[i] && c[i] != '\n') i++;
        return i;
    }
    if (c[i] == '"' || c[i] == '\'') {
        const char q = c[i];
        for (i++; c[i] && c[i] != q && c[i] != '\n'; i++)
            if (c[i] == '\\' && c[i + 1]) i++;
        return c[i] == q ? i + 1 : i;
    }
    return i + 1;
}
/* the position after the bracket that closes the one at c[i] ('(' or '{') */
static size_t close_of(const char *c, size_t i) {
    const char open = c[i], shut = open == '(' ? ')' : '}';
    int depth = 0;
    while (c[i]) {
        if (c[i] == open) depth++;
        if (c[i] == shut && --depth == 0) return i + 1;
        i = skip_lit(c, i);
    }
    return i;
}

typedef nm_cfunc cfunc;

/* the definitions at file scope of block s's C (name( ... ) { ... }, K&R's too) into f */
static int find_funcs(const st *s, cfunc *f, int n, int cap) {
    const char *c = s->name;
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id) && n < cap) {
        if (id.member || !id.call || id.depth != 0) continue;
        size_t i = (size_t)(id.s - c) + id.n;
        while (c[i] == ' ' || c[i] == '\t') i++;
        size_t e = close_of(c, i), b = e;
        while (c[b] && isspace((unsigned char)c[b])) b++;
        if (c[b] != '{') { /* K&R: declarations of the parameters, then the body */
            size_t k = b;
            while (c[k] && c[k] != '{' && c[k] != '(' && c[k] != '}' && c[k] != '=' && c[k] != '#') k++;
            if (c[k] != '{' || k == b || !isalpha((unsigned char)c[b])) continue;
            b = k;
        }
        /* the declaration from the start of its line (its return type) */
        size_t from = (size_t)(id.s - c);
        while (from > 0 && (isalnum((unsigned char)c[from - 1]) || c[from - 1] == '_' || c[from - 1] == ' ' ||
                            c[from - 1] == '\t' || c[from - 1] == '*'))
            from--;
        const size_t to = close_of(c, b);
        f[n] = (cfunc){id.s, id.n, from, to, s, 0, 0};
        nm_cscan body = {c + b, 0, 0, 0, 0, 0};
        nm_cident u;
        while (nm_cscan_next(&body, &u) && (size_t)(u.s - c) < to && !f[n].hoc) f[n].hoc = !u.member && hoc_only(&u);
        n++;
        sc.pos = to; /* the scan goes on after the body */
        sc.depth = 0;
        for (size_t k = (size_t)(id.s - c); k < to; k++) sc.line += c[k] == '\n';
        sc.bol = 0;
    }
    return n;
}

size_t nm_c_close(const char *c, size_t i) { return close_of(c, i); }
int nm_c_funcs(const st *s, nm_cfunc *f, int n, int cap) { return find_funcs(s, f, n, cap); }

/* does name (n bytes) occur as a C name in c[from, to)? */
static int c_uses_in(const char *c, const char *name, size_t n, size_t from, size_t to) {
    nm_cscan sc = {c, from, 0, 0, 0, 0};
    nm_cident id;
    while (nm_cscan_next(&sc, &id) && (size_t)(id.s - c) < to)
        if (!id.member && id.n == n && !strncmp(id.s, name, n)) return 1;
    return 0;
}
static int ex_calls(const ex *e, const char *name, size_t n) {
    if (!e) return 0;
    if (e->kind == EX_CALL && strlen(e->text) == n && !strncmp(e->text, name, n)) return 1;
    for (int i = 0; i < e->n_args; i++)
        if (ex_calls(e->args[i], name, n)) return 1;
    return ex_calls(e->a, name, n) || ex_calls(e->b, name, n);
}
/* is name used by the statements of l (NMODL calls, C) */
static int list_uses(const stlist *l, const char *name, size_t n) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_VERBATIM && c_uses_in(s->name, name, n, 0, SIZE_MAX)) return 1;
        if (ex_calls(s->e, name, n) || ex_calls(s->e2, name, n) || ex_calls(s->index, name, n) ||
            ex_calls(s->to, name, n) || ex_calls(s->by, name, n) || list_uses(s->then_, name, n) ||
            list_uses(s->else_, name, n))
            return 1;
    }
    return 0;
}

/* C functions outside the blocks whose bodies need hoc (Vector methods that install_vector_method
 * registers, hoc-callable helpers) and that nothing kept calls or names: only hoc could call
 * them, so they are left out as hoc-only FUNCTIONs are (blanked, their newlines kept so that the
 * #line numbers stay). Runs after the blocks' hoc_only marks. */
static int drop_hoc_funcs(struct ns_nmodl *m) {
    enum { CAP = 256 };
    cfunc f[CAP];
    int n = 0;
    for (int i = 0; m->verbatim_top && i < m->verbatim_top->n; i++)
        if (m->verbatim_top->s[i]->kind == ST_VERBATIM) n = find_funcs(m->verbatim_top->s[i], f, n, CAP);
    for (int changed = 1; changed;) { /* a function that calls one that needs hoc needs it too */
        changed = 0;
        for (int k = 0; k < n; k++)
            for (int q = 0; q < n && !f[k].hoc; q++)
                if (f[q].hoc && q != k && c_uses_in(f[k].s->name, f[q].name, f[q].n, f[k].from, f[k].to))
                    f[k].hoc = changed = 1;
    }
    int any = 0, dropped = 0;
    for (int k = 0; k < n; k++) f[k].keep = !f[k].hoc, any |= f[k].hoc;
    if (!any) return 0;
    for (int changed = 1; changed;) { /* keep what kept code names */
        changed = 0;
        for (int k = 0; k < n; k++) {
            if (f[k].keep) continue;
            int used = list_uses(m->initial, f[k].name, f[k].n) || list_uses(m->breakpoint, f[k].name, f[k].n) ||
                       list_uses(m->net_receive, f[k].name, f[k].n) || list_uses(m->net_initial, f[k].name, f[k].n);
            for (int h = 0; !used && h < NS_MECH_N_HOOKS; h++) used = list_uses(m->hooks[h], f[k].name, f[k].n);
            for (int i = 0; !used && i < m->n_blocks; i++)
                if (!m->blocks[i]->hoc_only) used = list_uses(m->blocks[i]->body, f[k].name, f[k].n);
            for (int w = 0; !used && w < m->n_watch; w++) used = ex_calls(m->watch_cond[w], f[k].name, f[k].n);
            for (int i = 0; !used && m->verbatim_top && i < m->verbatim_top->n; i++) {
                const st *s = m->verbatim_top->s[i];
                if (s->kind != ST_VERBATIM) continue;
                /* the block's C outside the functions left out, and the kept functions' */
                nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
                nm_cident id;
                while (!used && nm_cscan_next(&sc, &id)) {
                    const size_t at = (size_t)(id.s - s->name);
                    int gone = 0;
                    for (int q = 0; q < n && !gone; q++) gone = !f[q].keep && f[q].s == s && at >= f[q].from && at < f[q].to;
                    used = !gone && !id.member && id.n == f[k].n && !strncmp(id.s, f[k].name, f[k].n) &&
                           id.s != f[k].name;
                }
            }
            if (used) f[k].keep = changed = 1;
        }
    }
    for (int k = 0; k < n; k++)
        if (!f[k].keep) {
            char *c = f[k].s->name;
            for (size_t i = f[k].from; i < f[k].to; i++)
                if (c[i] != '\n') c[i] = ' ';
            dropped++;
        }
    return dropped;
}

/* ---- thread safety: C that keeps state between calls ---- */

/* the start of the statement (or declaration) around position at of c */
static const char *stmt_start(const char *c, const char *at) {
    while (at > c && at[-1] != ';' && at[-1] != '{' && at[-1] != '}') at--;
    return at;
}
/* does the text [b, e) hold the word w? */
static int has_word(const char *b, const char *e, const char *w) {
    const size_t n = strlen(w);
    for (const char *q = b; q + n <= e; q++)
        if (!strncmp(q, w, n) && (q == b || !(isalnum((unsigned char)q[-1]) || q[-1] == '_')) &&
            !(isalnum((unsigned char)q[n]) || q[n] == '_'))
            return 1;
    return 0;
}
/* The first variable with static storage that block s's C writes or may write
 * (a `static` variable, or at file scope any variable that is not const or
 * extern): NEURON's VERBATIM without THREADSAFE is "not thread safe", as its
 * instances on several threads share the variable. Fills why and returns 1. */
static int static_state(const st *s, int top, char *why, size_t n) {
    nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id)) {
        if (id.member) continue;
        const int file_scope = top && id.depth == 0 && !id.call && !type_word(id.s, id.n) && nm_c_declares(s->name, &id);
        if (!file_scope && !(is(&id, "static") && (!top || id.depth > 0))) continue;
        const char *b = stmt_start(s->name, id.s), *e = id.s;
        int paren = 0;
        for (const char *q = b; q < id.s; q++) paren += *q == '(' ? 1 : *q == ')' ? -1 : 0;
        while (*e && *e != ';' && *e != '{' && *e != '(' && *e != '=') e++;
        if (paren > 0 || has_word(b, e, "const") || has_word(b, e, "extern") || has_word(b, e, "typedef") ||
            *e == '(' || *e == '{')
            continue; /* a parameter, read-only, declared elsewhere, a type or a function */
        const char *w = file_scope ? id.s : e; /* the variable's name: the last word before e */
        if (!file_scope) {
            while (w > id.s && (isspace((unsigned char)w[-1]) || w[-1] == ']' || w[-1] == '[' ||
                                isdigit((unsigned char)w[-1])))
                w--;
            const char *we = w;
            while (w > id.s && (isalnum((unsigned char)w[-1]) || w[-1] == '_')) w--;
            snprintf(why, n, "%s:%d: VERBATIM C keeps state in the static variable %.*s (NEURON: not thread safe "
                     "without THREADSAFE)", s->file, s->file_line + id.line, (int)(we - w), w);
        } else {
            snprintf(why, n, "%s:%d: VERBATIM C keeps state in the file-scope variable %.*s (NEURON: not thread "
                     "safe without THREADSAFE)", s->file, s->file_line + id.line, (int)id.n, id.s);
        }
        return 1;
    }
    return 0;
}
int nm_c_next_file_var(const char *c, nm_cscan *sc, nm_cident *id) {
    while (nm_cscan_next(sc, id)) {
        if (id->member || id->depth != 0 || id->call || type_word(id->s, id->n) || !nm_c_declares(c, id)) continue;
        const char *b = stmt_start(c, id->s), *e = id->s;
        int paren = 0;
        for (const char *q = b; q < id->s; q++) paren += *q == '(' ? 1 : *q == ')' ? -1 : 0;
        while (*e && *e != ';' && *e != '{' && *e != '(' && *e != '=') e++;
        if (!paren && *e != '(' && *e != '{' && !has_word(b, e, "static") && !has_word(b, e, "extern") &&
            !has_word(b, e, "const") && !has_word(b, e, "typedef"))
            return 1;
    }
    return 0;
}
static int static_in(const stlist *l, char *why, size_t n) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if ((s->kind == ST_VERBATIM && static_state(s, 0, why, n)) || static_in(s->then_, why, n) ||
            static_in(s->else_, why, n))
            return 1;
    }
    return 0;
}
static void thread_safety(struct ns_nmodl *m) {
    char why[400];
    int found = 0;
    for (int i = 0; !found && m->verbatim_top && i < m->verbatim_top->n; i++)
        found = static_state(m->verbatim_top->s[i], 1, why, sizeof why);
    found = found || static_in(m->initial, why, sizeof why) || static_in(m->breakpoint, why, sizeof why) ||
            static_in(m->net_receive, why, sizeof why) || static_in(m->net_initial, why, sizeof why);
    for (int h = 0; !found && h < NS_MECH_N_HOOKS; h++) found = static_in(m->hooks[h], why, sizeof why);
    for (int i = 0; !found && i < m->n_blocks; i++)
        if (!m->blocks[i]->hoc_only) found = static_in(m->blocks[i]->body, why, sizeof why);
    if (!found) return;
    char *c = nm_calloc(&m->arena, strlen(why) + 1, 1);
    if (c) memcpy(c, why, strlen(why) + 1);
    m->thread_unsafe = c;
}

static void mark_called(vcheck *v);

ns_status nm_verbatim_check(struct ns_nmodl *m) {
    m->verbatim = m->verbatim_top && m->verbatim_top->n;
    m->verbatim |= has_c(m->initial) || has_c(m->breakpoint) || has_c(m->net_receive) || has_c(m->net_initial);
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) m->verbatim |= has_c(m->hooks[h]);
    for (int i = 0; i < m->n_blocks; i++) m->verbatim |= has_c(m->blocks[i]->body);
    if (!m->verbatim) return NS_OK;
    vcheck v = {m, nm_calloc(&m->arena, (size_t)m->n_blocks + 1, 1), 0};
    if (!v.called) return ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    /* the blocks that only hoc could call, then the C functions that only they or hoc name (left
     * out: drop_hoc_funcs), and again while that leaves out more */
    for (int pass = 0; pass < 4; pass++) {
        memset(v.called, 0, (size_t)m->n_blocks + 1);
        mark_called(&v);
        int before = 0, after = 0;
        for (int i = 0; i < m->n_blocks; i++) {
            block *b = m->blocks[i];
            nm_cident id;
            before += b->hoc_only;
            b->hoc_only = !v.called[i] && (b->kind == B_FUNCTION || b->kind == B_PROCEDURE) && hoc_use(b->body, &id);
            after += b->hoc_only;
        }
        if (!drop_hoc_funcs(m) && pass > 0 && before == after) break;
    }
    for (int i = 0; i < m->n_blocks; i++) {
        block *b = m->blocks[i];
        nm_cident id;
        const st *s = hoc_use(b->body, &id);
        if (!s || b->hoc_only) continue;
        return vfail(s, &id,
                     "VERBATIM C calls %.*s, which needs NEURON's hoc interpreter (hoc arguments, Vectors, objects), "
                     "which neurosolve does not have, in %s %s, which this file's own code calls: remove the call "
                     "or move it into a FUNCTION or PROCEDURE that only hoc calls (such a block is left out)",
                     b->kind == B_FUNCTION ? "FUNCTION" : b->kind == B_PROCEDURE ? "PROCEDURE" : "block", b->name);
    }
    ns_status r = NS_OK;
    if (m->verbatim_top)
        for (int i = 0; !r && i < m->verbatim_top->n; i++) r = check_c(m, m->verbatim_top->s[i], 1, 0);
    if (!r) r = check_list(m, m->initial, 0);
    if (!r) r = check_list(m, m->breakpoint, 0);
    if (!r) r = check_list(m, m->net_receive, 0);
    if (!r) r = check_list(m, m->net_initial, 0);
    for (int h = 0; !r && h < NS_MECH_N_HOOKS; h++) r = check_list(m, m->hooks[h], h == NS_MECH_CONSTRUCTOR);
    for (int i = 0; !r && i < m->n_blocks; i++)
        if (!m->blocks[i]->hoc_only) r = check_list(m, m->blocks[i]->body, 0);
    if (!r && !m->threadsafe) thread_safety(m);
    if (!r && nm_verbatim_device(m, m->verbatim_gpu_why, sizeof m->verbatim_gpu_why) < 0)
        r = ns_fail(NS_ERR_OUT_OF_MEMORY, "out of memory");
    return r;
}

/* what the entry points reach, and C outside the blocks (its functions may be called from anywhere) */
static void mark_called(vcheck *v) {
    struct ns_nmodl *m = v->m;
    mark_list(v, m->initial);
    mark_list(v, m->breakpoint);
    mark_list(v, m->net_receive);
    mark_list(v, m->net_initial);
    for (int h = 0; h < NS_MECH_N_HOOKS; h++) mark_list(v, m->hooks[h]);
    mark_list(v, m->verbatim_top);
    for (int k = 0; k < m->n_watch; k++) mark_ex(v, m->watch_cond[k]);
    do {
        v->changed = 0;
        for (int i = 0; i < m->n_blocks; i++)
            if (v->called[i]) mark_list(v, m->blocks[i]->body);
    } while (v->changed);
}

int nm_verbatim_reached(struct ns_nmodl *m, char *called) {
    vcheck v = {m, called, 0};
    memset(called, 0, (size_t)m->n_blocks + 1);
    mark_called(&v);
    return 0;
}

int nm_verbatim_in(const stlist *l) { return has_c(l); }

static const st *first_in(const stlist *l) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i]->kind == ST_VERBATIM ? l->s[i] : first_in(l->s[i]->then_);
        if (!s) s = first_in(l->s[i]->else_);
        if (s) return s;
    }
    return NULL;
}
const st *nm_verbatim_first(const struct ns_nmodl *m) {
    const st *s = first_in(m->verbatim_top);
    if (!s) s = first_in(m->initial);
    if (!s) s = first_in(m->breakpoint);
    if (!s) s = first_in(m->net_receive);
    if (!s) s = first_in(m->net_initial);
    for (int h = 0; !s && h < NS_MECH_N_HOOKS; h++) s = first_in(m->hooks[h]);
    for (int i = 0; !s && i < m->n_blocks; i++) s = first_in(m->blocks[i]->body);
    return s;
}
