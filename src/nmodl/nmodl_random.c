/* Random numbers in NMODL: normrand(mean, sd), exprand(mean), scop_random()
 * and set_seed(seed), as NEURON's translator accepts them, drawn from a
 * counter-based stream per instance (Random123's Philox4x32-10, as
 * CoreNEURON draws its streams), so that a run does not depend on the
 * thread count, the lane blocks, the backend's order or the MPI layout
 * (docs/mechanisms.md, "Random numbers").
 *
 * A mechanism that calls one of them gets four hidden ASSIGNED fields,
 * NM_RANDOM_FIELDS (the instance's stream ids, its seed and its counter);
 * the loops set the ids before INITIAL (ns_mech_desc.random_field); the
 * functions below are written into the mechanism's header (host and
 * device). */
#include <string.h>

#include "nmodl/nmodl_impl.h"

/* src/nmodl/nmodl_random.h as text (CMake writes it, nmodl_random_text.c) */
extern const char ns_nmodl_random_header[];
const char *nm_random_runtime(void) { return ns_nmodl_random_header; }

const char *const nm_random_field_names[4] = {"__ran_id1", "__ran_id2", "__ran_seed", "__ran_count"};
const char *const nm_random_stream_fields[4] = {"id1", "id2", "id3", "seq"};

int nm_random_arity(const char *name) {
    if (!strcmp(name, "normrand")) return 2;
    if (!strcmp(name, "exprand") || !strcmp(name, "set_seed")) return 1;
    if (!strcmp(name, "scop_random")) return 0;
    return -1;
}

int nm_random_api(const char *name, int n) {
    if (!strcmp(name, "random_uniform") || !strcmp(name, "random_normal")) return n == 1 || n == 3;
    if (!strcmp(name, "random_negexp")) return n == 1 || n == 2;
    if (!strcmp(name, "random_setseq")) return n == 2;
    if (!strcmp(name, "random_setids")) return n == 4;
    return -1;
}

static int uses_ex(const ex *e) {
    if (!e) return 0;
    if (e->kind == EX_CALL && (nm_random_arity(e->text) >= 0 || nm_random_api(e->text, e->n_args) >= 0)) return 1;
    for (int i = 0; i < e->n_args; i++)
        if (uses_ex(e->args[i])) return 1;
    return uses_ex(e->a) || uses_ex(e->b);
}
static int uses_list(const stlist *l) {
    if (!l) return 0;
    for (int i = 0; i < l->n; i++) {
        const st *s = l->s[i];
        if (s->kind == ST_VERBATIM && nm_verbatim_uses_random(s->name)) return 1;
        if (uses_ex(s->e) || uses_ex(s->e2) || uses_ex(s->index) || uses_ex(s->to) || uses_ex(s->by) ||
            uses_list(s->then_) || uses_list(s->else_))
            return 1;
    }
    return 0;
}

int nm_random_used(const struct ns_nmodl *m) {
    if (m->n_randoms || uses_list(m->verbatim_top) || uses_list(m->initial) || uses_list(m->breakpoint) || uses_list(m->net_receive)) return 1;
    for (int h = 0; h < NS_MECH_N_HOOKS; h++)
        if (uses_list(m->hooks[h])) return 1;
    for (int i = 0; i < m->n_blocks; i++)
        if (uses_list(m->blocks[i]->body)) return 1;
    return 0;
}

void ns_mech_random_stream(const ns_mech_desc *d, int q, int64_t id1, int64_t id2, double out[4]) {
    out[0] = (double)id1;
    out[1] = (double)id2;
    out[2] = q ? (double)(uint32_t)(nm_random_mech_key(d->name) + (unsigned)q) : 0.0;
    out[3] = 0.0;
}

/* The stream's key: FNV-1a of the mechanism's name (two mechanisms at one
 * node draw from different streams). */
unsigned nm_random_mech_key(const char *name) {
    unsigned h = 2166136261u;
    for (const unsigned char *s = (const unsigned char *)name; *s; s++) h = (h ^ *s) * 16777619u;
    return h;
}

