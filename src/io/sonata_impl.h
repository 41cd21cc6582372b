/* Private to the SONATA reader (io/sonata.c: the config, the nodes, the
 * spikes, the reader's whole run; io/sonata_edges.c: the edges): the
 * reader's state and the HDF5 helpers both use. Only with HDF5. */
#ifndef NS_IO_SONATA_IMPL_H
#define NS_IO_SONATA_IMPL_H
#ifdef NS_HAVE_HDF5

#include <hdf5.h>
#include <stdint.h>

#include "core/json.h"
#include "io/netfile_build.h"
#include "io/sonata_table.h"

#define SON_PATH 4096
#define SON_MAX_ROWS (INT64_C(1) << 26)

/* The library never prints: HDF5's automatic error stack printing is off
 * while a call runs, and restored after. */
typedef struct h5quiet {
    H5E_auto2_t fn;
    void *data;
} h5quiet;

typedef struct manifest {
    int n;
    char **key, **val;
    char dir[SON_PATH]; /* the config's folder: ${configdir} and relative paths */
    char name[SON_PATH];
} manifest;

/* ------------------------------------------------------------ the reader */

typedef struct pop {
    char name[256];
    char where[SON_PATH + 300]; /* "FILE: /nodes/NAME" */
    int64_t n;
    int virtual_;               /* every node virtual (1), every node biophysical (0); mixed: -1 */
    int64_t *kind;              /* per node: 1 biophysical, 2 virtual */
    int64_t *cell;              /* per node: the cell (biophysical) or -1 */
    int64_t *source;            /* per node: the source (detector or train) */
    double **times;             /* virtual: spike times per node */
    int64_t *n_times, *cap_times;
    int has_input;
} pop;

typedef struct reader {
    manifest man;     /* of the config with the networks (the circuit) */
    manifest sim;     /* of the config with run and inputs */
    ns_json *cfg, *circuit;
    char morph_dir[SON_PATH], model_dir[SON_PATH], syn_dir[SON_PATH];
    int has_morph_dir, has_model_dir, has_syn_dir;
    pop *pops;
    int n_pops;
    ns_network_t *net;
    double threshold;
} reader;

/* HDF5's error printing off (on) around a call (the library never prints) */
void ns_son_quiet_on(h5quiet *q);
void ns_son_quiet_off(const h5quiet *q);
/* dir/file into out (len bytes): 0, or -1 when it does not fit */
int ns_son_join(char *out, size_t len, const char *dir, const char *file);
/* a path of the config (its manifest's ${...} and folder applied) */
ns_status ns_son_resolve(const manifest *m, const char *text, const char *what, char *out, size_t len);
/* HDF5 datasets, attributes and groups (`where` names them in errors) */
int ns_son_h5_exists(hid_t loc, const char *name);
ns_status ns_son_h5_read(hid_t g, const char *name, const char *where, int want_int, void **out, int64_t *n);
ns_status ns_son_h5_attr_string(hid_t obj, const char *attr, const char *where, char *out, size_t len);
ns_status ns_son_h5_members(hid_t g, const char *where, char ***names, int *n);
void ns_son_free_names(char **v, int n);
int ns_son_is_group(hid_t loc, const char *name);
ns_status ns_son_h5_open_group(const char *h5path, const char *name, hid_t *f, hid_t *g, char ***names, int *n);
/* fn(arg, G, NAME) for each population NAME of the group /group (nodes or
 * edges) of an HDF5 file, until one fails (at_least_one: none is an error);
 * HDF5's printing off */
typedef ns_status (*ns_son_population_fn)(void *arg, hid_t g, const char *name);
ns_status ns_son_each_population(const char *h5path, const char *group, int at_least_one, ns_son_population_fn fn,
                                 void *arg);
/* the node population by name, NULL when absent */
pop *ns_son_find_pop(reader *r, const char *name);
/* a nodes or edges entry of the config: its HDF5 file and its CSV type table */
ns_status ns_son_open_entry(reader *r, const ns_json *entry, const char *list, int idx, const char *file_key,
                            const char *types_key, const char *id_column, char *h5path, char *csvpath,
                            ns_son_table *types);
/* nodes entry idx of the config (sonata_nodes.c): its populations into the
 * reader, its cells into the network; the one model its types name into
 * model_path (model_from: the type that named it) */
ns_status ns_son_read_nodes(reader *r, const ns_json *entry, int idx, char *model_path, size_t model_len,
                            char *model_from, size_t from_len);
/* edges entry idx of the config (sonata_edges.c) */
ns_status ns_son_read_edges(reader *r, const ns_json *entry, int idx);

#endif
#endif
