/* Private to the network files (io/netfile.c: the text format parsed, the
 * description built and read; io/netfile_apply.c: the description applied):
 * the description's statements and groups. */
#ifndef NS_IO_NETFILE_IMPL_H
#define NS_IO_NETFILE_IMPL_H

#include <stdint.h>

#include "io/netfile_apply.h"
#include "io/netfile_build.h"
#include "neurosolve/network.h"

/* Limits that keep a bad file from asking for unbounded memory or work. */
#define NET_MAX_CELLS (INT64_C(1) << 24)
#define NET_MAX_ITEMS (INT64_C(1) << 26)  /* synapses, sources, and the ids all lists hold together */
#define NET_MAX_PAIRS (INT64_C(1) << 40)  /* pairs a connect line with all or p= considers */
#define NET_MAX_CONNS (INT64_C(1) << 30)  /* connections (expected, for p=) of all lines */
#define NET_NAME 64
#define NET_CONNECT_STREAM UINT64_C(0x636f6e6e656374) /* "connect": the rng stream of p= draws */

typedef enum { G_CELLS, G_SYNAPSES, G_SOURCES } gkind;
static const char *const KIND_NAME[] = {"cells", "synapses", "sources"};

typedef struct ids {
    int64_t *v;
    int64_t n, cap;
} ids;

typedef struct group {
    char name[NET_NAME];
    gkind kind;
    int line; /* first line */
    ids m;
} group;

typedef struct loc {
    ns_location at; /* the one location grammar (ns_location_parse) */
    char text[64];
} loc;

typedef enum { S_SYN, S_DET, S_TRAIN, S_POISSON, S_CONNECT, S_EDGES, S_POINTER, S_POINT_SOURCE, S_DPOINTER } skind;

typedef struct stmt {
    skind kind;
    int line;
    ids a, b;             /* cells (synapse, detector) or sources (connect); synapses (connect) */
    loc where;
    loc to;               /* a density mechanism's pointer: the target's LOC */
    char mech[NET_NAME];  /* synapse: the mechanism; pointer: the POINTER's name */
    char var[NET_NAME];   /* pointer: the variable it reaches (v, eX, FIELD_MECH) */
    int n_params;
    char (*pname)[NET_NAME];
    double *pvalue;
    double threshold;
    double *times;
    int64_t n_times;
    int64_t count;        /* poisson */
    double rate, start, stop;
    uint64_t seed;        /* poisson, connect with p= */
    double weight, delay, p;
    int pairs;            /* connect: 0 pairwise (or one of them 1), 1 every pair (all, p=) */
    ns_netbuild_edges *edges; /* S_EDGES (a SONATA edge population: netfile_build.h) */
} stmt;

struct ns_network {
    char name[256];
    int64_t n_cells;
    int32_t *cell_morph;
    int64_t cap_cells;
    char **morph;
    int32_t n_morph, cap_morph;
    char *model_file;     /* resolved path */
    int model_line;
    char *model_text;     /* the model: lines, at their line numbers (others blank) */
    size_t model_len, model_cap;
    int has_inline;
    group *groups;
    int32_t n_groups, cap_groups;
    stmt *stmts;
    int64_t n_stmts, cap_stmts;
    int64_t n_syns, n_sources, n_fixed, n_expected;
    /* SONATA (sonata.c): the node populations, each source's population and
     * node id, and the config's run settings (NaN: not given) */
    char **pops;
    int32_t n_pops;
    int32_t *src_pop;
    int64_t *src_node;
    int has_run;
    double run_tstop, run_dt, run_celsius, run_v_init, run_threshold;
};

#endif
