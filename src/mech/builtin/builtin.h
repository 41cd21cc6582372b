/* Private: the built-in mechanism catalogue (builtin.c). */
#ifndef NS_CABLE_BUILTIN_H
#define NS_CABLE_BUILTIN_H

#include "neurosolve/mechanism.h"

const ns_mech_catalogue *ns_mech_builtin(void);
/* the generated descriptors (pas.c, hh.c, ExpSyn.c, Exp2Syn.c) */
extern const ns_mech_desc nsm_pas_desc, nsm_hh_desc, nsm_ExpSyn_desc, nsm_Exp2Syn_desc;

/* The field layouts the fused loops are written for (the GPU's tree kernel,
 * src/sim/cuda/fused.h; the CPU loop's fused pass, mech/blocks_fused.c):
 * parameters, assigned variables, states, the generated descriptors'
 * counts. Both refuse to fuse a descriptor that differs (e.g. after a
 * translator change). */
#define NS_FUSED_PAS_PARAMS 2 /* g, e; then i */
#define NS_FUSED_PAS_FIELDS 3
#define NS_FUSED_HH_PARAMS 4  /* gnabar, gkbar, gl, el; then ina, ik, il, gna, gk, minf .. ntau */
#define NS_FUSED_HH_STATES 3  /* m, h, n */
#define NS_FUSED_HH_FIELDS 18
/* hh's TABLE (doubles) and at most this many GLOBALs: what the onchip kernel
 * copies to shared memory and registers (src/sim/cuda/onchip.cu); a descriptor with another
 * TABLE size runs its model in the tree loop (asserted in tests/core/test_policy.c) */
#define NS_FUSED_HH_TABLE 1211
#define NS_FUSED_HH_GLOBALS 2

#endif
