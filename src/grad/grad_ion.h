/* Private: the ions in the gradient's state (grad_ion.c, docs/gradients.md "Ions").
 *
 * An ion is live where a mechanism writes its concentration or reads its
 * current: its values at each node (e, ci, co, i) are then part of the
 * adjoint's state S, 4 n doubles per live ion after the mechanisms' fields
 * (the "ion part" below: live ion L's value q, 0 e, 1 ci, 2 co, 3 i, of
 * node x at [(4 L + q) n + x]). Other ions' values are constants of the run. */
#ifndef NS_GRAD_ION_H
#define NS_GRAD_ION_H

#include "mech/blocks.h"

typedef struct gion gion;

ns_status gion_create(const sim_model *model, gion **out);
void gion_free(gion *gi);
/* live ions (0: the state has no ion part) */
int32_t gion_live(const gion *gi);
/* 1 where the ion values (e, ci, co) that mechanism k reads are constants of the run: no
 * mechanism of the model writes a concentration or the reversal potential of an ion k uses
 * (its ion currents may be live). Its products may then take them without lanes (ABI 9's
 * vjp_*_n_ci: the same bits on every other row) */
int gion_constant(const sim_model *model, int32_t k);
/* NS_ERR_UNSUPPORTED where mechanism k touches a live ion in a way the
 * derivative code does not follow: a library built before ABI 8 (no ion
 * lanes), a written reversal potential, a point process's ion current */
ns_status gion_refuse(const gion *gi, const sim_model *model, int32_t k);
/* the block's live ions to/from an ion part (n nodes) */
void gion_save(const gion *gi, const model_block *b, int32_t n, double *dst);
void gion_load(const gion *gi, model_block *b, int32_t n, const double *src);
/* mechanism k writes a live ion's concentration (its state() and INITIAL store it) */
int gion_writer(const gion *gi, int32_t k);
/* mechanism k uses a live ion */
int gion_uses(const gion *gi, int32_t k);

/* Before mechanism k's product for `phase` (0 INITIAL, 1 current(), 2 state()): the
 * ion values the phase writes take their adjoints into its outputs' (lo: rows of
 * ni): a stored concentration's (which the store then zeroes: it was overwritten)
 * and an ion current's summand (the sum's adjoint, which stays). */
void gion_out(const gion *gi, int32_t k, int phase, int64_t ni, const int *node, int32_t n, double *lo,
              double *lion);
/* After it: the adjoints of the ion values it read go to the ion part: the rows
 * after the GLOBALs (lgi: 4 per USEION, rows of ni) and the fields loaded from an
 * ion (lF: rows of ni; zeroed: the field's own value was never read). */
void gion_in(const gion *gi, const sim_model *model, int32_t k, int64_t ni, const int *node, int32_t n, double *lF,
             const double *lgi, double *lion);
/* The transpose of Nernst after mechanism k (e from ci and co where k writes a
 * concentration): vals the ion part after it, lion the adjoints. */
void gion_nernst_adj(const gion *gi, const sim_model *model, const model_block *b, int32_t k, double celsius,
                     int32_t n, const double *vals, double *lion);
/* the ion currents' adjoints zeroed (the current phase zeroes i before summing it) */
void gion_zero_i(const gion *gi, int32_t n, double *lion);

#endif
