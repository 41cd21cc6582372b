/* neurosolve: extracellular potentials (docs/extracellular.md).
 *
 * LFPy 2.3's forward models in a homogeneous medium of conductivity sigma
 * [S/m]: the line-source approximation (each compartment a line source
 * along NEURON's segment), the same with the root compartment (the soma's
 * first segment) as a point source, and the point-source approximation;
 * electrodes closer to a segment than its radius are moved out to the radius
 * as LFPy moves them. Electrodes are points or discs averaged over points.
 *
 * An ns_lfp_t attached to a simulation computes, every `every` steps, the
 * transmembrane current of every compartment (ionic + capacitive + point
 * processes: NEURON's i_membrane_, which LFPy records; the current clamps'
 * electrode current is not a membrane current) and reduces it into the
 * electrode potentials [mV] and the current dipole moment [nA um] through a
 * coefficient matrix (electrodes x compartments) built once; per population
 * of cells on request. On a CUDA simulation the sampling runs inside the GPU
 * loop and the samples are reduced in batches (one DGEMM each, cuBLAS loaded
 * at run time).
 *
 * Units: um, nA, mV, S/m. */
#ifndef NEUROSOLVE_LFP_H
#define NEUROSOLVE_LFP_H

#include "neurosolve/export.h"

#include <stddef.h>
#include <stdint.h>
#include "neurosolve/status.h"
#include "neurosolve/morph.h"
#include "neurosolve/cable.h"

#ifdef __cplusplus
extern "C" {
#endif

/* LFPy's `method` of RecExtElectrode. */
typedef enum ns_lfp_method {
    NS_LFP_LINESOURCE = 0,    /* 'linesource': every compartment a line source */
    NS_LFP_ROOT_AS_POINT = 1, /* 'root_as_point': the root compartment a point source at its midpoint */
    NS_LFP_POINTSOURCE = 2    /* 'pointsource': every compartment a point source at its midpoint */
} ns_lfp_method;

NS_API const char *ns_lfp_method_name(ns_lfp_method method);
/* "linesource", "root_as_point", "pointsource"; NS_ERR_INVALID_ARGUMENT otherwise. */
NS_API ns_status ns_lfp_method_from_name(const char *name, ns_lfp_method *out);

/* One contact: a point (r = 0) or a disc of radius r [um] with normal
 * (nx, ny, nz), its potential the mean over n points of the disc (a Vogel
 * spiral: docs/extracellular.md; LFPy draws them at random). */
typedef struct ns_lfp_contact {
    double x, y, z;    /* [um] centre */
    double nx, ny, nz; /* normal (any length > 0) of a disc */
    double r;          /* [um] disc radius; 0: a point */
    int32_t n;         /* points averaged on a disc (>= 1) */
} ns_lfp_contact;

/* The n points of a disc contact (3 * n doubles): point k at radius
 * r sqrt((k + 0.5) / n) and angle k * pi (3 - sqrt 5) in the plane normal to
 * (nx, ny, nz), from the in-plane axis normal x e, e the coordinate axis of
 * the normal's smallest component (the first of equals). A point contact:
 * its centre. */
NS_API ns_status ns_lfp_contact_points(const ns_lfp_contact *contact, double *points);

typedef struct ns_lfp_probe {
    int64_t n;
    ns_lfp_contact *contacts;
} ns_lfp_probe;

/* A probe file (docs/extracellular.md): one contact per line, `x y z` (a
 * point) or `x y z nx ny nz r [n]` (a disc, n points, default_points when
 * not given), or a line electrode `line x0 y0 z0 x1 y1 z1 count` (count
 * point contacts evenly from the first end to the second, both included),
 * blanks or commas between numbers, '#' comments. Errors read
 * "FILE:LINE: reason". Free with ns_lfp_probe_free. */
NS_API ns_status ns_lfp_probe_read(const char *path, int32_t default_points, ns_lfp_probe *out);
NS_API ns_status ns_lfp_probe_parse(const char *text, size_t length, const char *name, int32_t default_points,
                                    ns_lfp_probe *out);
NS_API void ns_lfp_probe_free(ns_lfp_probe *probe);
/* The per-cell files beside a probe: placements (NS_LFP_PLACEMENTS: one cell
 * per line, `x y z rx ry rz` [um, rad], ns_lfp_options.placement) and
 * populations (NS_LFP_POPULATIONS: one population number, a whole number
 * from 0 to 1,000,000, per cell and line, ns_lfp_options.population). Numbers
 * in the grammar of ns_number_parse, blanks or commas between them, '#'
 * comments; exactly n_cells lines. out: n_cells x 6 (placements) or n_cells
 * values (populations), filled only on success. Errors read "FILE:LINE:
 * reason" (a bad number, a wrong count, more lines than cells) or "FILE: K
 * lines for N cells". The same reader as probe files'. */
typedef enum ns_lfp_cell_table { NS_LFP_PLACEMENTS = 0, NS_LFP_POPULATIONS = 1 } ns_lfp_cell_table;
NS_API ns_status ns_lfp_cell_table_read(const char *path, ns_lfp_cell_table kind, int64_t n_cells, double *out);
NS_API ns_status ns_lfp_cell_table_parse(const char *text, size_t length, const char *name, ns_lfp_cell_table kind,
                                         int64_t n_cells, double *out);
/* A line (shank) electrode: count point contacts evenly from start to end
 * (both included, count >= 2). */
NS_API ns_status ns_lfp_probe_line(const double start[3], const double end[3], int64_t count, ns_lfp_probe *out);

/* Segments given directly (LFPy's cell.x/y/z/d): start and end points (3 * n
 * each, [um]), diameters (n, [um]: r_limit = d / 2) and the root segment
 * (ROOT_AS_POINT's point source; LFPy's index 0). */
typedef struct ns_lfp_segments {
    int64_t n;
    const double *start, *end, *diam;
    int64_t root;
} ns_lfp_segments;

/* The coefficient matrix (n_contacts x seg->n, row-major, [mV/nA]): the
 * potential at each contact of a unit current from each segment. */
NS_API ns_status ns_lfp_matrix(const ns_lfp_segments *seg, const ns_lfp_contact *contacts, int64_t n_contacts,
                               ns_lfp_method method, double sigma, double *out);

/* Bytes of the coefficients of a probe of `electrodes` contacts over
 * `compartments` compartments (dense doubles: 8 * electrodes * compartments)
 * plus the dipole's 3 * compartments; -1 on overflow. */
NS_API int64_t ns_lfp_coefficient_bytes(int64_t electrodes, int64_t compartments);

/* Where the coefficients of a CUDA simulation's probe live. */
typedef enum ns_lfp_storage {
    NS_LFP_STORAGE_AUTO = 0,  /* ns_lfp_choose_storage */
    NS_LFP_STORAGE_DENSE = 1, /* electrodes x compartments doubles, on the host and on the GPU */
    NS_LFP_STORAGE_TILES = 2, /* none kept: computed again from the placed segments on the GPU, a tile of
                                 compartments at a time, at every reduction (CUDA only; no host copy:
                                 ns_lfp_coefficients is NULL) */
    NS_LFP_STORAGE_F32 = 3,   /* the electrodes' coefficients rounded to float (4 bytes each; the dipole's
                                 rows stay double), the products and sums in double: on the GPU computed
                                 once in tiles, kept as float and widened a tile at a time at each
                                 reduction (no host copy); on the CPU the rounded values kept as doubles
                                 (the same numbers). Never chosen by AUTO: every sample's error bound
                                 (ns_lfp_error_bound) is checked against ns_lfp_options.tolerance */
    NS_LFP_STORAGE_LOWRANK = 4 /* each cell's block (electrodes x its compartments) as U_k V_k of rank r_k
                                  (Householder QR with column pivoting, stopped where the residual's
                                  Frobenius norm is ns_lfp_options.rank_tolerance of the block's);
                                  8 r_k (E + n_k) bytes per cell (no dense copy: ns_lfp_coefficients is
                                  NULL; ns_lfp_ranks; on the GPU the factors, uploaded once, are applied
                                  as V_k I_k then U W per reduction). Never chosen by AUTO: every
                                  sample's bound max_e sum_k ||(B_k - U_k V_k)_e||_2 ||i_k||_2 is checked
                                  against ns_lfp_options.tolerance (ns_lfp_error_bound) */
} ns_lfp_storage;

NS_API const char *ns_lfp_storage_name(ns_lfp_storage storage);

/* The `auto` rule (no GPU needed): DENSE when the dense coefficients
 * (ns_lfp_coefficient_bytes) take at most max_bytes (<= 0: 4 GiB) and at
 * most half of free_bytes (the GPU's free memory), else TILES. Both give the
 * potentials in double precision (the same formulas). */
NS_API ns_lfp_storage ns_lfp_choose_storage(int64_t electrodes, int64_t compartments, int64_t free_bytes,
                                            int64_t max_bytes);

/* The samples a CUDA simulation buffers per reduction, K (no GPU needed):
 * `asked` when > 0 (ns_lfp_options.batch), else the least of NS_LFP_BATCH_MAX,
 * the samples one launch of the GPU loop can produce at one sample every
 * `every` steps (ceil(2000 / every): the output cadence), and the samples a
 * quarter of free_bytes holds at sample_bytes each (0: not one fits). One
 * DGEMM then serves K samples: the coefficients are read once per K
 * samples; the potentials do not depend on K. */
#define NS_LFP_BATCH_MAX 256
NS_API int64_t ns_lfp_batch_rows(int64_t asked, int64_t every, int64_t free_bytes, int64_t sample_bytes);

typedef struct ns_lfp_options {
    ns_lfp_method method; /* default NS_LFP_LINESOURCE */
    double sigma;         /* [S/m] default 0.3 */
    int64_t every;        /* sample every `every` steps (default 1) */
    /* NULL, or n_cells x 6: cell c placed at (x, y, z) [um] and rotated by
     * (rx, ry, rz) [rad] about its soma(0.5) point: p' = Rz Ry Rx (p - soma) +
     * (x, y, z), right-handed. NULL: every cell in its SWC coordinates. */
    const double *placement;
    int per_cell_dipoles;  /* also keep every cell's dipole moment */
    /* NULL, or n_cells: each cell's population (0 .. populations - 1): the
     * potentials of each population's cells are kept apart as well
     * (ns_lfp_population_potentials; their sum is ns_lfp_potentials) */
    const int32_t *population;
    int64_t batch;         /* CUDA: samples buffered on the GPU per reduction (0: ns_lfp_batch_rows's rule) */
    ns_lfp_storage storage;/* CUDA: the coefficients' storage (default AUTO); a CPU simulation: DENSE */
    int64_t tile_bytes;    /* TILES: bytes of one tile of coefficients on the GPU (0: 256 MiB) */
    int64_t max_bytes;     /* refuse coefficients above this (0: 4 GiB) */
    int32_t threads;       /* OpenMP threads (0: OpenMP's default); the results do not depend on it */
    double tolerance;      /* F32: the largest error bound allowed, relative to each sample's largest
                              |potential| (0: 1e-6); a sample above it fails the advance */
    int device_results;    /* CUDA: also keep every sample's potentials and dipole on the GPU
                              (ns_lfp_device_results; 8 (electrodes + 3) bytes per sample) */
    double rank_tolerance; /* LOWRANK: each block's residual Frobenius norm relative to the block's
                              (0: 1e-10) */
} ns_lfp_options;

NS_API void ns_lfp_options_init(ns_lfp_options *options);

typedef struct ns_lfp ns_lfp_t;

/* Build the coefficients for `probe` and the cells of `sim` (shapes: the
 * cells given to ns_sim_create, in its order) and attach: every `every`
 * steps of each later ns_sim_advance the potentials and dipole moments are
 * sampled (t = every * dt, 2 * every * dt, ...; ns_sim_init starts them
 * again). One ns_lfp_t per simulation; ns_lfp_destroy detaches. */
NS_API ns_status ns_lfp_create(ns_sim_t *sim, int32_t n_shapes, const ns_cell_t *const *shapes,
                               const ns_lfp_probe *probe, const ns_lfp_options *options, ns_lfp_t **out);
NS_API void ns_lfp_destroy(ns_lfp_t *lfp);

NS_API int64_t ns_lfp_samples(const ns_lfp_t *lfp);
NS_API int64_t ns_lfp_electrodes(const ns_lfp_t *lfp);
/* samples x electrodes [mV] */
NS_API const double *ns_lfp_potentials(const ns_lfp_t *lfp);
/* samples: the time of each sample [ms] */
NS_API const double *ns_lfp_times(const ns_lfp_t *lfp);
/* Populations (1 when none were given) and samples x populations x
 * electrodes [mV]: the potentials of each population's cells (NULL when
 * none were given). */
NS_API int32_t ns_lfp_populations(const ns_lfp_t *lfp);
NS_API const double *ns_lfp_population_potentials(const ns_lfp_t *lfp);
/* samples x 3: the summed current dipole moment [nA um] */
NS_API const double *ns_lfp_dipole(const ns_lfp_t *lfp);
/* samples x cells x 3 (NULL unless per_cell_dipoles) */
NS_API const double *ns_lfp_cell_dipoles(const ns_lfp_t *lfp);
/* LOWRANK: each cell's rank r_k (n_cells; NULL for the other storages). */
NS_API const int32_t *ns_lfp_ranks(const ns_lfp_t *lfp);
/* The storage the probe uses (DENSE, TILES, F32 or LOWRANK). */
NS_API ns_lfp_storage ns_lfp_storage_used(const ns_lfp_t *lfp);
/* electrodes x compartments [mV/nA], compartments in ns_sim_cell_offset's
 * order (NULL with TILES) */
NS_API const double *ns_lfp_coefficients(const ns_lfp_t *lfp);
/* The transmembrane currents [nA] of the last sampled step, one per
 * compartment in ns_sim_cell_offset's order (0 at zero-area nodes; of a
 * CUDA simulation only these leave the GPU, at each reduction). */
NS_API const double *ns_lfp_membrane_currents(const ns_lfp_t *lfp);

/* CUDA with ns_lfp_options.device_results: the samples on the simulation's
 * GPU, no copy: ns_lfp_samples rows of *stride doubles, each the electrodes'
 * potentials [mV] then the summed dipole [nA um] (the same values as
 * ns_lfp_potentials and ns_lfp_dipole), on GPU *device; valid until the next
 * ns_sim_advance, ns_sim_init or ns_lfp_destroy. NS_ERR_UNSUPPORTED for a
 * CPU simulation or without device_results. */
NS_API ns_status ns_lfp_device_results(const ns_lfp_t *lfp, const double **data, int64_t *stride, int32_t *device);

/* F32 and LOWRANK storages: the largest over the samples so far of the bound on the
 * potentials' error from the rounded coefficients, relative to the sample's
 * largest |potential|: u / (1 - u) sum_c max_{j in c} |M_ej| sum_{j in c}
 * |i_j| (u = 2^-24; per electrode e, over the cells c and their
 * compartments j) bounds |sum_j (fl(M_ej) - M_ej) i_j|; LOWRANK's (the
 * storage's comment) bounds |sum_k (B_k - U_k V_k)_e i_k|. 0 for the exact
 * storages (DENSE, TILES). */
NS_API double ns_lfp_error_bound(const ns_lfp_t *lfp);

/* Where the probe's time went, summed since ns_lfp_create [ms]. */
typedef struct ns_lfp_timing {
    double setup_ms;    /* ns_lfp_create: the coefficients and, on CUDA, their upload and the warm-up
                           (every kernel and cuBLAS's first call run once on zeros) */
    double sampling_ms; /* host time inside the sampler during the run (CPU: the currents and the
                           passes over the coefficients; CUDA: starting each launch's reduction
                           on the probe's stream and collecting the previous one's results; the
                           reduction itself runs beside the next launch, so the GPU times below
                           are not part of it) */
    /* CUDA only (0 on the CPU), GPU time between events on the probe's stream: */
    int64_t reductions; /* one per launch that had samples */
    double currents_ms; /* the cells' dipoles of the buffered samples (per_cell_dipoles; the membrane
                           currents themselves are written by the loop's step kernels) */
    double gemm_ms;     /* the batched DGEMM of the coefficients (TILES: with the tiles' computation) */
    double sum_ms;      /* the slices' sums and the copies of the results to the host */
} ns_lfp_timing;

NS_API ns_status ns_lfp_timing_of(const ns_lfp_t *lfp, ns_lfp_timing *out);

/* Current source density [uA/mm^3] of potentials phi (samples x stride [mV])
 * at `count` contacts `index` (in order along a line, `spacing` um apart):
 * CSD = -sigma d2phi/dz2 by the second difference, the end contacts
 * duplicated outward (Vaknin et al. 1988: phi[-1] = phi[0], phi[m] =
 * phi[m-1]). out: samples x count. */
NS_API ns_status ns_lfp_csd(const double *phi, int64_t samples, int64_t stride, const int64_t *index,
                            int64_t count, double spacing, double sigma, double *out);

/* EEG: lfpykit's FourSphereVolumeConductor.get_transformation_matrix. The
 * potential [mV] at each electrode (n x 3 positions [um], the head's centre
 * at the origin, inside the scalp and farther out than the dipole) of a unit
 * current dipole [nA um] along x, y and z at `dipole` (inside the brain):
 * out is n x 3. radii [um]: brain, CSF, skull, scalp (lfpykit's default
 * 79000, 80000, 85000, 90000); sigmas [S/m] (0.3, 1.5, 0.015, 0.3); the
 * series are summed as lfpykit sums them, to a term below iter_factor times
 * the sum (<= 0: lfpykit's 2/99 * 1e-6). The EEG of a simulation is this
 * matrix times ns_lfp_dipole's moments (the cells' dipole placed at one point). */
NS_API ns_status ns_lfp_four_sphere(const double radii[4], const double sigmas[4], const double dipole[3],
                                    const double *electrodes, int64_t n, double iter_factor, double *out);

#ifdef __cplusplus
}
#endif
#endif
