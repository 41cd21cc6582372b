/* VERBATIM C on the GPU (docs/mechanisms.md, "VERBATIM on the GPU").
 *
 * The translator writes a block's C into the mechanism's header, inside the
 * per-instance functions that are host and device code in a --cuda build
 * (NS_MECH_FN). Whether that C can run on the device is decided here, before
 * nvcc, by a rule on the names it uses: every name in the C that the
 * simulation runs (INITIAL, BREAKPOINT, NET_RECEIVE and its INITIAL, and
 * every FUNCTION and PROCEDURE they reach; not what only hoc could call,
 * which is left out) must be on an allow-list: C's keywords and types,
 * <math.h>, what the C declares itself or #define's, the mechanism's
 * variables and blocks, the translator's names (_lx, _threadargs_, t, dt,
 * v, ...) and NEURON's helpers that have a device version (NSV_HD in
 * nmodl_verbatim.h). The first name that is not names the mechanism's
 * refusal (FILE:LINE), and the mechanism runs on the CPU loop. A function
 * that C outside the blocks defines and that such C calls is checked by the
 * same rule and becomes host and device code (NSV_HD put before its
 * definition); any other name of C outside the blocks (its variables, its
 * functions without a body here) is host C and keeps the mechanism off the
 * GPU; a type it typedef's is a device type. A point process's CONSTRUCTOR
 * runs on the host (nm_hook_on_device): where its C stores what an allocator
 * returns, and the #define's that name that, hold host memory, which device
 * C may not use (host_memory). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nmodl/nmodl_impl.h"

static int is(const nm_cident *id, const char *s) { return strlen(s) == id->n && !strncmp(id->s, s, id->n); }
static int in_list(const nm_cident *id, const char *const *names) {
    for (int i = 0; names[i]; i++)
        if (is(id, names[i])) return 1;
    return 0;
}

/* C's keywords and types, and what the C library gives a device (<math.h>, <stdint.h>, printf) */
static const char *const C_WORDS[] = {
    "if", "else", "for", "while", "do", "return", "break", "continue", "switch", "case", "default", "goto", "sizeof",
    "double", "float", "int", "long", "short", "unsigned", "signed", "char", "void", "const", "volatile", "register",
    "inline", "struct", "union", "enum", "typedef", "size_t", "uint32_t", "int32_t", "uint64_t", "int64_t", "uint8_t",
    "int8_t", "uint16_t", "int16_t", "bool", "true", "false", "NULL", "printf",
    /* fprintf to stdout or stderr, fflush: the device's printf, a no-op (nmodl_verbatim.h); a FILE of the C's
     * own is host C (FILE, fopen: no device version) */
    "fprintf", "stdout", "stderr", "fflush", NULL};
static const char *const C_MATH[] = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sqrt", "cbrt", "hypot", "fabs", "abs", "floor",
    "ceil", "round", "trunc", "rint", "lround", "fmod", "remainder", "fmin", "fmax", "fdim", "fma", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc",
    "lgamma", "tgamma", "ldexp", "frexp", "modf", "copysign", "isnan", "isinf", "isfinite", "signbit", "M_PI",
    "M_E", "M_LN2", "M_SQRT2", "HUGE_VAL", "INFINITY", "NAN", "expf", "logf", "sqrtf", "powf", "fabsf", NULL};
/* NEURON's helpers with a device version (nmodl_verbatim.h's NSV_HD), and the translator's names */
static const char *const DEVICE_HELPERS[] = {
    "hoc_Exp", "nrnRan4int", "nrnRan4dbl", "nrnran123_iran", "nrnran123_iran3", "nrnran123_array4x32", "nrn_ghk",
    /* a Random123 stream's state where it is (CoreNEURON's per-instance streams on the device); making and
     * freeing one (nrnran123_newstream, _deletestream) is host memory */
    "nrnran123_State", "nrnran123_setseq", "nrnran123_getseq", "nrnran123_getids", "nrnran123_getids3",
    "nrnran123_setids", "nrnran123_ipick", "nrnran123_dblpick", "nrnran123_negexp", "nrnran123_uniform",
    "nrnran123_normal", "_threadargs_", "_threadargscomma_", "_threadargsproto_", "_threadargsprotocomma_", "_nt", "nrn_threads", "t",
    "dt", "celsius", "v", NULL};

/* what records an error on the device (nmodl_verbatim.h's nsv_dev_error; hoc_warning only prints): also
 * what needs a hoc Random or Vector, which never exists here (the C tests its handle first: reached,
 * it stops the run, as on the CPU loop) */
static const char *const FAILS[] = {"hoc_execerror", "hoc_execerr_ext", "exit", "abort", "nrn_random_pick",
                                    "vector_capacity", "vector_vec", "vector_pobj", "hoc_obj_ref", "hoc_obj_unref",
                                    NULL};
static int ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }
/* whether C text c names one of FAILS anywhere (preprocessor lines too; a comment may say so
 * needlessly: the loop then reads a word it need not) */
static int mentions_fail(const char *c) {
    for (int i = 0; FAILS[i]; i++) {
        const size_t n = strlen(FAILS[i]);
        for (const char *q = c; (q = strstr(q, FAILS[i])) != NULL; q += n)
            if ((q == c || !ident_char(q[-1])) && !ident_char(q[n])) return 1;
    }
    return 0;
}

typedef struct names {
    const char **s;
    size_t *n;
    int count, cap;
    nm_arena *ar;
} names;
static int names_add(names *d, const char *s, size_t n) {
    if (d->count == d->cap) {
        const int cap = d->cap ? 2 * d->cap : 32;
        const char **ns = nm_realloc(d->ar, d->s, (size_t)cap * sizeof *ns);
        size_t *nn = nm_realloc(d->ar, d->n, (size_t)cap * sizeof *nn);
        if (!ns || !nn) return -1;
        d->s = ns, d->n = nn, d->cap = cap;
    }
    d->s[d->count] = s;
    d->n[d->count++] = n;
    return 0;
}
static int names_has(const names *d, const nm_cident *id) {
    for (int i = 0; i < d->count; i++)
        if (d->n[i] == id->n && !strncmp(d->s[i], id->s, id->n)) return 1;
    return 0;
}

/* the next #define of c from *at on: its name [*b, *e) (maybe empty), *at past it; 0 at the end */
static int next_define(const char *c, const char **at, const char **b, const char **e) {
    for (const char *q = *at; (q = strstr(q, "define")) != NULL; q += 6) {
        const char *h = q;
        while (h > c && (h[-1] == ' ' || h[-1] == '\t')) h--;
        if (h == c || h[-1] != '#') continue;
        *b = q + 6;
        while (**b == ' ' || **b == '\t') (*b)++;
        for (*e = *b; isalnum((unsigned char)**e) || **e == '_'; (*e)++) {}
        *at = q + 6;
        return 1;
    }
    return 0;
}

/* the names c #define's */
static int collect_defines(names *d, const char *c) {
    const char *at = c, *b, *e;
    while (next_define(c, &at, &b, &e))
        if (e > b && names_add(d, b, (size_t)(e - b))) return -1;
    return 0;
}
/* whether id follows a name of types (and *'s): `SynS *psyn;`, a variable of a file's typedef */
static int typed_by(const names *types, const char *c, const nm_cident *id) {
    const char *q = id->s;
    while (q > c && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '*')) q--;
    const char *e = q;
    while (q > c && ident_char(q[-1])) q--;
    const nm_cident t = {q, (size_t)(e - q), 0, 0, 0, 0};
    return e > q && e < id->s && names_has(types, &t);
}
/* the names c declares in [from, to) (a type word, or a type of types, before them: a function's
 * parameters and variables, not those of C outside the functions, which are host storage) or
 * #define's */
static int collect(names *d, const names *types, const char *c, size_t from, size_t to) {
    nm_cscan sc = {c, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id)) {
        const size_t at = (size_t)(id.s - c);
        if (at >= from && at < to && !id.member && (nm_c_declares(c, &id) || typed_by(types, c, &id)) &&
            names_add(d, id.s, id.n))
            return -1;
    }
    return collect_defines(d, c);
}

/* a function that C outside the blocks defines (nm_c_funcs), and whether device C calls it */
typedef struct topfn {
    nm_cfunc f;
    int needed, checked;
} topfn;

typedef struct dcheck {
    struct ns_nmodl *m;
    names top_fns;  /* the functions C outside the blocks declares or calls: host only unless defined */
    names declared; /* what the C declares or #define's */
    topfn *defs;    /* the functions it defines */
    int top;        /* checking such a function */
    int own_p;      /* the block's C declares its own p */
    int n_defs;
    char *why;
    size_t n_why;
    names types;       /* the types that C outside the blocks typedef's (file_types) */
    names hostmem;     /* where the host CONSTRUCTOR keeps host memory (host_memory below) */
    char made_at[160]; /* "FILE:LINE: allocator" of the first such store */
    char hm_why[512];  /* not_on_device's reason for such a name */
} dcheck;

/* the name at id as a C string in buf (empty when longer than the buffer) */
static const char *cname(const nm_cident *id, char *buf, size_t n) {
    buf[0] = 0;
    if (id->n < n) memcpy(buf, id->s, id->n), buf[id->n] = 0;
    return buf;
}

/* C's and NEURON's allocators: what they return is host memory */
static const char *const ALLOCS[] = {"ecalloc", "emalloc", "erealloc", "hoc_Ecalloc", "hoc_Emalloc", "malloc",
                                     "calloc", "realloc", "nrnran123_newstream", "nrnran123_newstream3", NULL};

/* the first name of the C statement in c that holds position at, where the statement assigns
 * (`link = (double)((unsigned long)hoc_Ecalloc(...))`, `_p_sop = (double *)ecalloc(...)`): its
 * length, 0 where none */
static size_t stored_in(const char *c, const char *at, const char **name) {
    const char *b = at;
    while (b > c && b[-1] != ';' && b[-1] != '{' && b[-1] != '}') b--;
    const char *eq = NULL;
    for (const char *q = b; q < at && !eq; q++)
        if (*q == '=' && q[1] != '=' && (q == b || !strchr("=!<>", q[-1]))) eq = q;
    if (!eq) return 0;
    while (b < eq && !(isalpha((unsigned char)*b) || *b == '_')) b++;
    const char *e = b;
    while (e < eq && ident_char(*e)) e++;
    *name = b;
    return (size_t)(e - b);
}

/* whether the #define body [b, e) names one of d's names as a whole word */
static int body_names(const names *d, const char *b, const char *e) {
    for (const char *q = b; q < e; q++) {
        if (!(isalpha((unsigned char)*q) || *q == '_') || (q > b && ident_char(q[-1]))) continue;
        const char *w = q;
        while (w < e && ident_char(*w)) w++;
        const nm_cident id = {q, (size_t)(w - q), 0, 0, 0, 0};
        if (names_has(d, &id)) return 1;
        q = w;
    }
    return 0;
}

/* the names that C c (outside the blocks) typedef's at file scope: `typedef struct SynS {...} SynS;`
 * (presyn.inc's snshead.inc), a type that device C may use (the CUDA unit compiles that C too) */
static int file_types(names *d, const char *c) {
    for (const char *q = c; (q = strstr(q, "typedef")) != NULL; q += 7) {
        if ((q > c && ident_char(q[-1])) || ident_char(q[7])) continue;
        int depth = 0;
        const char *e = q + 7, *last = NULL, *w = NULL;
        for (; *e && !(*e == ';' && depth == 0); e++) {
            depth += (*e == '{' || *e == '(') - (*e == '}' || *e == ')');
            if (depth == 0 && (isalpha((unsigned char)*e) || *e == '_') && !ident_char(e[-1])) last = e;
        }
        for (w = last; w && ident_char(*w); w++) {}
        if (last && names_add(d, last, (size_t)(w - last))) return -1;
        if (!*e) break;
    }
    return 0;
}

/* Host memory in the instance: a point process's CONSTRUCTOR runs on the host on the GPU loop too
 * (nm_hook_on_device), so where its C stores what an allocator returns (netrand.inc's `_p_sop =
 * ecalloc(...)`, presyn.inc's `link = ... hoc_Ecalloc(...)`) holds a host address on the device; those
 * names and the file's #define's that name them (IDP, PRECAST) go into dc->hostmem, which device C
 * may not use. 0, or -1 out of memory. */
static int walk_ctor(dcheck *dc, const stlist *l) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        if (walk_ctor(dc, s->then_) || walk_ctor(dc, s->else_)) return -1;
        if (s->kind != ST_VERBATIM) continue;
        nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
        nm_cident id;
        while (nm_cscan_next(&sc, &id)) {
            const char *name = NULL;
            const size_t n = id.call && in_list(&id, ALLOCS) ? stored_in(s->name, id.s, &name) : 0;
            if (!n) continue;
            if (!dc->made_at[0])
                snprintf(dc->made_at, sizeof dc->made_at, "%s:%d: %.*s", s->file, s->file_line + id.line, (int)id.n,
                         id.s);
            if (names_add(&dc->hostmem, name, n)) return -1;
        }
    }
    return 0;
}
static int host_memory(dcheck *dc) {
    const struct ns_nmodl *m = dc->m;
    if (!m->point || !m->hooks[NS_MECH_CONSTRUCTOR]) return 0;
    if (walk_ctor(dc, m->hooks[NS_MECH_CONSTRUCTOR])) return -1;
    for (int pass = 0; pass < 2 && dc->hostmem.count; pass++) /* a #define of a #define */
        for (int i = 0; m->verbatim_top && i < m->verbatim_top->n; i++) {
            const char *c = m->verbatim_top->s[i]->name, *at = c, *b, *e;
            while (next_define(c, &at, &b, &e)) {
                const char *end = strchr(e, '\n');
                if (!end) end = e + strlen(e);
                const nm_cident mac = {b, (size_t)(e - b), 0, 0, 0, 0};
                if (e > b && !names_has(&dc->hostmem, &mac) && body_names(&dc->hostmem, e, end) &&
                    names_add(&dc->hostmem, b, (size_t)(e - b)))
                    return -1;
            }
        }
    return 0;
}

/* why the name at id keeps the C off the device (NULL: it may run there) */
static const char *not_on_device(dcheck *dc, const nm_cident *id) {
    const struct ns_nmodl *m = dc->m;
    if (!id->member && names_has(&dc->hostmem, id)) {
        snprintf(dc->hm_why, sizeof dc->hm_why,
                 "holds host memory that the CONSTRUCTOR's C makes (%s; a point process's CONSTRUCTOR runs on "
                 "the host), which the device cannot reach",
                 dc->made_at);
        return dc->hm_why;
    }
    if (dc->top && (is(id, "fprintf") || is(id, "fflush"))) /* the device's are defined after that C */
        return "is host C in C outside the blocks (the device's printf reaches only the blocks' C)";
    if (id->member || in_list(id, C_WORDS) || in_list(id, C_MATH) || in_list(id, DEVICE_HELPERS)) return NULL;
    if (in_list(id, FAILS) || is(id, "hoc_warning")) /* the ppack's error, read after each interval */
        return dc->top || dc->own_p ? "needs the entry point's ppack p (C outside the blocks, or C that declares "
                                      "its own p)"
                                    : NULL;
    if (is(id, "cvode_active_")) return dc->top ? "is a host variable outside the blocks" : NULL; /* a 0 in them */
    if (is(id, "static")) return m->thread_unsafe ? "keeps state in static storage, which a device's threads share" : NULL;
    for (int k = 0; k < dc->n_defs; k++)
        if (dc->defs[k].f.n == id->n && !strncmp(dc->defs[k].f.name, id->s, id->n)) {
            dc->defs[k].needed = 1; /* checked, and made host and device code, below */
            return NULL;
        }
    if (names_has(&dc->top_fns, id)) return "is C outside the blocks without a definition here, which is host C";
    if (names_has(&dc->declared, id) || names_has(&dc->types, id)) return NULL;
    if (id->n > 2 && !strncmp(id->s, "_l", 2)) return NULL; /* an argument or LOCAL of the block */
    if (m->random_field >= 0 && (is(id, "normrand") || is(id, "exprand") || is(id, "scop_random") || is(id, "set_seed")))
        return NULL; /* the instance's stream 0, as in NMODL statements (nmodl_random.h: host and device) */
    char nm[128];
    cname(id, nm, sizeof nm);
    if (!strncmp(nm, "_p_", 3) && nm[3]) { /* a POINTER's address, or a void * in the instance's field (a
                                             * BBCOREPOINTER, a slot the C writes): 0 until C that the device
                                             * runs sets it, as the GPU loop runs no host C of the mechanism */
        const var *v = nm_find_var(m, nm + 3);
        return v && (v->cls == V_POINTER || (v->cls == V_ASSIGNED && !v->size)) ? NULL : "has no device version";
    }
    if (!strncmp(nm, "_ion_", 5) && nm[5]) return NULL; /* checked by nm_verbatim_check */
    const block *b = nm_find_block(m, nm);
    if (b && !b->hoc_only && (b->kind == B_FUNCTION || b->kind == B_PROCEDURE)) return NULL;
    const var *v = nm_find_var(m, nm);
    if (v && v->cls != V_RANDOM) return NULL;
    return "has no device version";
}

/* the names of s's C in [from, to) against the allow-list: 0 all allowed, 1 not (dc->why), -1 out of memory */
static int check_c_in(dcheck *dc, const st *s, size_t from, size_t to) {
    dc->declared.count = 0;
    if (collect(&dc->declared, &dc->types, s->name, from, to)) return -1;
    const nm_cident p1 = {"p", 1, 0, 0, 0, 0};
    dc->own_p = names_has(&dc->declared, &p1);
    for (int i = 0; dc->m->verbatim_top && i < dc->m->verbatim_top->n; i++) /* the file's #define's */
        if (collect_defines(&dc->declared, dc->m->verbatim_top->s[i]->name)) return -1;
    dc->m->cuda_may_fail |= mentions_fail(s->name); /* C the device runs: ns_mech_desc.cuda_errors */
    nm_cscan sc = {s->name, 0, 0, 0, 0, 1};
    nm_cident id;
    while (nm_cscan_next(&sc, &id) && (size_t)(id.s - s->name) < to) {
        if ((size_t)(id.s - s->name) < from) continue;
        const char *why = not_on_device(dc, &id);
        if (!why) continue;
        snprintf(dc->why, dc->n_why, "%s:%d: VERBATIM C uses %.*s, which %s (device C: docs/mechanisms.md, "
                 "\"VERBATIM on the GPU\")",
                 s->file, s->file_line + id.line, (int)id.n, id.s, why);
        return 1;
    }
    return 0;
}
static int check_c(dcheck *dc, const st *s) { return check_c_in(dc, s, 0, SIZE_MAX); }
static int check_list(dcheck *dc, const stlist *l) {
    for (int i = 0; l && i < l->n; i++) {
        const st *s = l->s[i];
        int r = s->kind == ST_VERBATIM ? check_c(dc, s) : 0;
        if (!r) r = check_list(dc, s->then_);
        if (!r) r = check_list(dc, s->else_);
        if (r) return r;
    }
    return 0;
}

/* the functions that s's C (outside the blocks) defines, K&R definitions left out (not C++: they
 * stay host C) */
static int find_defs(dcheck *dc, st *s) {
    enum { CAP = 256 };
    nm_cfunc f[CAP];
    const int n = nm_c_funcs(s, f, 0, CAP);
    for (int k = 0; k < n; ++k) {
        size_t i = (size_t)(f[k].name - s->name) + f[k].n;
        while (s->name[i] == ' ' || s->name[i] == '\t') i++;
        size_t b = nm_c_close(s->name, i);
        while (s->name[b] && isspace((unsigned char)s->name[b])) b++;
        if (s->name[b] != '{') continue;
        topfn *d = nm_realloc(&dc->m->arena, dc->defs, (size_t)(dc->n_defs + 1) * sizeof *d);
        if (!d) return -1;
        dc->defs = d;
        dc->defs[dc->n_defs++] = (topfn){f[k], 0, 0};
    }
    return 0;
}

/* NSV_HD before each needed definition of s's C (host and device code; nothing in C) */
static int mark_defs(dcheck *dc, st *s) {
    int n = 0;
    for (int k = 0; k < dc->n_defs; k++) n += dc->defs[k].f.s == s && dc->defs[k].needed;
    if (!n) return 0;
    const size_t len = strlen(s->name);
    char *t = nm_calloc(&dc->m->arena, len + 8 * (size_t)n + 1, 1);
    if (!t) return -1;
    size_t at = 0, w = 0;
    for (int k = 0; k < dc->n_defs; k++) { /* in text order (find_defs') */
        const nm_cfunc *f = &dc->defs[k].f;
        if (f->s != s || !dc->defs[k].needed) continue;
        memcpy(t + w, s->name + at, f->from - at);
        w += f->from - at;
        memcpy(t + w, "NSV_HD ", 7);
        w += 7;
        at = f->from;
    }
    memcpy(t + w, s->name + at, len - at + 1);
    s->name = t;
    return 0;
}

int nm_verbatim_device(struct ns_nmodl *m, char *why, size_t n_why) {
    why[0] = 0;
    if (!m->verbatim) return 0;
    dcheck dc = {m, {NULL, NULL, 0, 0, &m->arena}, {NULL, NULL, 0, 0, &m->arena}, NULL, 0, 0, 0, why, n_why,
                 {NULL, NULL, 0, 0, &m->arena}, {NULL, NULL, 0, 0, &m->arena}, "", ""};
    if (host_memory(&dc)) return -1;
    /* C outside the blocks: the functions it defines, and the names it declares or calls at depth 0 */
    for (int i = 0; m->verbatim_top && i < m->verbatim_top->n; i++) {
        if (m->verbatim_top->s[i]->kind != ST_VERBATIM) continue;
        const char *c = m->verbatim_top->s[i]->name;
        nm_cscan sc = {c, 0, 0, 0, 0, 1};
        nm_cident id;
        char nm[128];
        m->cuda_may_fail |= mentions_fail(c); /* a #define's body, say, may reach device C */
        while (nm_cscan_next(&sc, &id))
            if (!id.member && id.call && id.depth == 0 && !in_list(&id, C_WORDS) && !in_list(&id, C_MATH) &&
                !in_list(&id, DEVICE_HELPERS) && !nm_find_block(m, cname(&id, nm, sizeof nm)) &&
                names_add(&dc.top_fns, id.s, id.n))
                return -1;
        if (find_defs(&dc, m->verbatim_top->s[i]) || file_types(&dc.types, c)) return -1;
    }
    char *called = nm_calloc(&m->arena, (size_t)m->n_blocks + 1, 1);
    if (!called || nm_verbatim_reached(m, called)) return -1;
    int r = check_list(&dc, m->initial);
    if (!r) r = check_list(&dc, m->breakpoint);
    if (!r) r = check_list(&dc, m->net_receive);
    if (!r) r = check_list(&dc, m->net_initial);
    for (int h = 0; !r && h < NS_MECH_N_HOOKS; h++)
        if (nm_hook_on_device(m, h)) r = check_list(&dc, m->hooks[h]);
    for (int i = 0; !r && i < m->n_blocks; i++)
        if (called[i] && !m->blocks[i]->hoc_only) r = check_list(&dc, m->blocks[i]->body);
    /* the functions of C outside the blocks that device C calls, and those they call */
    for (int more = 1; !r && more;) {
        more = 0;
        for (int k = 0; !r && k < dc.n_defs; k++)
            if (dc.defs[k].needed && !dc.defs[k].checked) {
                dc.defs[k].checked = more = dc.top = 1;
                r = check_c_in(&dc, dc.defs[k].f.s, dc.defs[k].f.from, dc.defs[k].f.to);
            }
    }
    for (int i = 0; !r && m->verbatim_top && i < m->verbatim_top->n; i++)
        if (m->verbatim_top->s[i]->kind == ST_VERBATIM && mark_defs(&dc, m->verbatim_top->s[i])) r = -1;
    return r;
}
