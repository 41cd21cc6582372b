/* Private: a mechanism block's vector-Jacobian products over instances at the
 * nodes of a node_index (grad_gather.c, used by grad.c's mech_vjp).
 *
 * A block whose instances sit at the nodes of a node_index: its product's
 * loop would read v and the ions through it and add to l_v through it (a
 * scatter, which AVX2 has not: the loop stays scalar). pk is bound instead
 * to the values the product reads gathered into contiguous arrays (v, the
 * ions' views, area and diam at the instances), node_index NULL, so that it
 * runs the contiguous loop (vectorised where the compiler can) with l_v's
 * rows at gat (zeroed; the caller adds them to l_v at the nodes: each
 * product adds one term to an instance's l_v, so the bits are the same). */
#ifndef NS_GRAD_GATHER_H
#define NS_GRAD_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include "neurosolve/mechanism.h"

/* doubles of gat for blocks of up to max_ni instances and max_ions ions (gview: max_ions views) */
size_t ggather_doubles(int64_t max_ni, int max_ions);
/* pk (bound to a block with node_index) bound to the gathered values in gat and gview;
 * returns l_v's rows, zeroed (the caller adds them to l_v at pk's former node_index).
 * keep: gat holds this block's values from an earlier call: 1, its area and diam (fixed
 * for the simulation) are not gathered again; 2, nor its ions' e, ci and co (constants of
 * the run: gion_constant). v and the ion currents are gathered each call. */
double *ggather(double *gat, ns_mech_ion_view *gview, ns_mech_ppack *pk, const ns_mech_desc *d, int keep);

#endif
