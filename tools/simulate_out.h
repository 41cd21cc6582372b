/* neurosolve simulate's outputs (simulate_out.c): the files of --out and
 * --plot, the raster (CSV or a SONATA spikes file), the checkpoints. */
#ifndef NS_TOOLS_SIMULATE_OUT_H
#define NS_TOOLS_SIMULATE_OUT_H

#include <stddef.h>

#include "shapes.h"

/* the stem of the output files of --out and --plot (docs/cli.md): 1, or 0 when it does not fit in n */
int cli_sim_output_stem(const char *out, const char *plot, char *stem, size_t n);
/* the folder of the outputs created (as mkdir -p) and writable: 0, else nonzero (printed) */
int cli_sim_check_output_folder(const char *stem);
/* the traces (CSV, npy), spikes (CSV, SONATA) and raster of a run (tag: a checkpoint's, or "";
 * the traces' CSV path into csv_path); nonzero: an error, printed */
int cli_sim_write_results(const char *stem, const char *tag, int all, ns_sim_t *sim, char **site_names,
                          double every_ms, long long n_cells, const cli_shape_set *set, const int32_t *cell_shape,
                          const ns_network_t *network, char *csv_path, size_t csv_len);
/* the spikes of a network's sources so far, all together */
int64_t cli_sim_source_spike_count(const ns_sim_t *sim);
/* a checkpoint; prints the error */
int cli_sim_save_checkpoint(ns_sim_t *sim, const char *file);

#endif
