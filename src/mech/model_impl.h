/* Private: a simulation's mechanisms from a library (ns_sim_model, model.c)
 * resolved per shape, what the CPU and CUDA loops instantiate per cell. */
#ifndef NS_CABLE_MODEL_IMPL_H
#define NS_CABLE_MODEL_IMPL_H

#include <stdint.h>

#include "neurosolve/cable.h"
#include "neurosolve/mechanism.h"
#include "neurosolve/nmodl.h"

#define NS_SIM_IONS_MAX 8      /* ions of one simulation */
#define NS_SIM_MECH_IONS_MAX 8 /* USEIONs of one mechanism */

typedef struct sim_ion {
    char name[16];
    int charge;
    int write_c; /* a mechanism writes its concentration somewhere (see sim_model.written) */
    int read_i;  /* a mechanism reads its current: the loops keep i and didv (else NULL views) */
    int einit;   /* a mechanism reads its concentration somewhere: e by Nernst there at finitialize */
} sim_ion;

/* One mechanism of the simulation, in NEURON's type order. */
typedef struct sim_mech {
    const ns_mech_desc *desc;
    double *globals;                   /* desc->n_globals: the model's values */
    int32_t ion[NS_SIM_MECH_IONS_MAX]; /* the simulation's ion of each desc->ions[k] */
    int writes_c;                      /* writes some ion's concentration */
    int32_t key;                       /* NEURON's type order (ns_sim_model_key) */
    const ns_mech_ftable *ftable;      /* desc->n_ftables tables (ns_mech_ppack.ftable), NULL: none */
} sim_mech;

/* Mechanism m on one shape: the nodes where it is inserted (ascending) and
 * its parameters there. */
typedef struct sim_mech_shape {
    int32_t n;
    int32_t *node;
    double *param; /* desc->n_params * n: parameter k of instance i at [k * n + i] */
} sim_mech_shape;

typedef struct sim_model {
    int32_t n_mechs;
    sim_mech *mechs;
    int32_t n_before_clamp;    /* mechanisms before IClamp in NEURON's type order (pas, the concentration writers) */
    int32_t n_ions;
    sim_ion ions[NS_SIM_IONS_MAX];
    int32_t n_shapes;
    sim_mech_shape *per_shape; /* [s * n_mechs + m] */
    double **ion_init;         /* per shape: 3 * n_ions arrays of n: e, ci, co of ion j at
                                  [(3 * j + q) * n + node] */
    unsigned char **written;   /* per shape: [j * n + node] 1 where a mechanism inserted there writes
                                  ion j's concentration: e follows by Nernst at that node only
                                  (NEURON's ion style is per section) */
    double **geom;             /* per shape: area [um^2] of node i at [i] (NEURON's 100 at zero-area
                                  nodes) and its diam [um] at [n + i]: what ns_mech_ppack.area and
                                  .diam give a mechanism that reads them */
    double **cm;               /* per shape: cm [uF/cm2] per node where a `cm` statement sets it, NaN elsewhere
                                  (the params' cm of the region) */
    int32_t n_descs;           /* the catalogue: the library's mechanisms, then the built-ins */
    const ns_mech_desc **descs; /* it does not shadow (the synapses' types, net.c) */
    ns_mech_ftable **ftables;  /* per catalogue entry: its FUNCTION_TABLEs' values (copies), NULL: none */
    double **ldx;              /* with a LONGITUDINAL_DIFFUSION mechanism, per shape: the section's L / nseg [um]
                                  of node i (0 at zero-area nodes); else NULL */
    int32_t **lpar;            /* likewise: node i's parent at [i], its section's parent section's first
                                  node at [n + i] (-1: none) (mech/ldifus.c) */
} sim_model;

/* The geometry LONGITUDINAL_DIFFUSION reads (sim_model.ldx, .lpar) of each shape's cell, where a
 * mechanism of r has it (mech/ldifus.c) */
ns_status ns_ldifus_geometry(sim_model *r, const ns_cell_t *const *cells);

/* A mechanism's place in NEURON's type order (ascending): pas 0, ExpSyn 1,
 * Exp2Syn 2, hh 3 (IClamp runs between pas and ExpSyn), a library's other
 * mechanisms 4 + their catalogue index. */
int32_t ns_sim_model_key(const sim_model *m, int32_t desc);
/* The values a loop gives random stream q's four fields (ns_mech_desc.random_field + 4 q ..) of
 * an instance at (id1, id2) before INITIAL: ids id1, id2; the third, for stream 0 its seed 0, for
 * a RANDOM variable's nrnran123 stream the mechanism's key plus q (two mechanisms' streams at one
 * place differ); position 0 (src/nmodl/nmodl_random.c, docs/mechanisms.md "Random numbers"). */
void ns_mech_random_stream(const ns_mech_desc *d, int q, int64_t id1, int64_t id2, double out[4]);
/* The catalogue index of a mechanism, -1 when there is none of that name. */
int32_t ns_sim_model_find(const sim_model *m, const char *name);

/* Resolve the models over the simulation's shapes (cells[k] is shape k, n[k]
 * its node count): shape k's model is shape_models[k], or `model` where
 * shape_models or its entry is NULL (one catalogue for all; a GLOBAL set by
 * two models must agree); insertions, parameters and ion values per node. */
/* Catalogue entry desc's FUNCTION_TABLEs all have values; else an error naming the first
 * without and how to give it */
ns_status ns_sim_model_ftables_given(const sim_model *r, int32_t desc);
ns_status ns_sim_model_resolve(const ns_sim_model_t *model, const ns_sim_model_t *const *shape_models,
                               int32_t n_shapes, const ns_cell_t *const *cells, const ns_sim_params *params,
                               sim_model **out);
void ns_sim_model_free(sim_model *m);
/* 1 when every mechanism the model inserts has CUDA launchers (or model is
 * NULL), 0 otherwise (the backend's auto rule, sim/policy.c). */
int ns_sim_model_has_cuda(const ns_sim_model_t *model);

/* ns_sim_get_model_var's name: field `field` of mechanism `mech`, or (ion >=
 * 0) variable q (0 e, 1 ci, 2 co, 3 i) of ion `ion`; errors name the names. */
ns_status ns_sim_model_var_lookup(const sim_model *m, const char *name, int32_t *mech, int *field, int32_t *ion,
                                  int *q);

/* NEURON's Nernst potential over count nodes of one ion (e from ci, co)
 * where written[i] is set. */
static inline void ns_sim_model_nernst(const sim_ion *ion, double celsius, const double *ci, const double *co,
                                       const unsigned char *written, double *e, int64_t count) {
    for (int64_t i = 0; i < count; ++i)
        if (written[i]) e[i] = ns_mech_nernst(ci[i], co[i], ion->charge, celsius);
}

#endif
