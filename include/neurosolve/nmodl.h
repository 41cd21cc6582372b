/* neurosolve: NMODL mechanisms, the translator, the build workflow and the
 * loading of mechanism libraries (docs/mechanisms.md).
 *
 *   ns_nmodl_t *m; ns_nmodl_parse_file("NaTs2_t.mod", &m);   // parse and check
 *   ns_nmodl_emit(m, NS_NMODL_C, &text);                     // C for the CPU
 *   ns_mechanisms_build("mods/", "libmech.so", NULL);         // like nrnivmodl
 *   ns_mech_library_open("libmech.so", &lib);                 // dlopen the catalogue
 *
 * The generated code compiles against neurosolve/mechanism.h (the ABI). */
#ifndef NEUROSOLVE_NMODL_H
#define NEUROSOLVE_NMODL_H

#include "neurosolve/export.h"
#include "neurosolve/mechanism.h"
#include "neurosolve/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ns_nmodl ns_nmodl_t;

/* Parse and check one .mod file. Errors: NS_ERR_IO, NS_ERR_PARSE (syntax:
 * "file.mod:12: ..."), NS_ERR_UNSUPPORTED (construct named, with file and
 * line), NS_ERR_INVALID_ARGUMENT (unknown ion, undefined name). */
NS_API ns_status ns_nmodl_parse_file(const char *path, ns_nmodl_t **out);
/* The same from text; `name` is used in messages in place of a file name. */
NS_API ns_status ns_nmodl_parse_string(const char *text, const char *name, ns_nmodl_t **out);
NS_API void ns_nmodl_destroy(ns_nmodl_t *m);

/* The mechanism's name (SUFFIX or POINT_PROCESS). */
NS_API const char *ns_nmodl_name(const ns_nmodl_t *m);

typedef enum ns_nmodl_target {
    NS_NMODL_HEADER = 0, /* per-instance inline functions (host and device): NAME.h */
    NS_NMODL_C = 1,      /* the loops over instances and the ns_mech_desc: NAME.c (includes NAME.h) */
    NS_NMODL_CUDA = 2    /* the kernels and launchers: NAME.cu (includes NAME.h) */
} ns_nmodl_target;

/* Generated source, malloc'ed into *text (free with ns_nmodl_free). */
NS_API ns_status ns_nmodl_emit(const ns_nmodl_t *m, ns_nmodl_target target, char **text);
NS_API void ns_nmodl_free(void *p);

typedef struct ns_mechanisms_build_options {
    const char *cc;      /* C compiler; NULL: "cc" */
    const char *nvcc;    /* NULL: no CUDA; else the nvcc to compile the kernels with */
    const char *cuda_arch; /* e.g. "sm_90"; NULL: "sm_90" */
    const char *workdir; /* where keep_sources puts the generated sources; NULL: OUT.src/ beside the library */
    int keep_sources;    /* keep the sources of a successful build in workdir, which must not exist (an
                            earlier build's folder is never replaced); else nothing is kept */
    /* Optional: called before each compiler run (one per generated source,
     * then the link) with the step (0-based), the number of steps and what
     * it does ("NaTs2_t.c", "linking"), and once more at the end with step ==
     * steps; the library itself never prints. */
    void (*progress)(void *user, int step, int steps, const char *what);
    void *progress_user;
    /* Compiler runs at once (one per generated source); 0: as many as the
     * cores this process may run on. The library built does not depend on it. */
    int jobs;
} ns_mechanisms_build_options;

/* Translate every DIR/ *.mod (sorted by name) and compile them into the
 * shared library `out_lib` exporting NS_MECH_CATALOGUE_SYMBOL. The library is
 * written under a temporary name and renamed: a failed build leaves no file
 * at out_lib. The sources are generated and compiled in a new private folder
 * (OUT.src.partial-XXXXXX), removed after the build (failed or not) or, with
 * keep_sources, renamed to workdir. The compiler's messages come back in
 * ns_last_error(). */
NS_API ns_status ns_mechanisms_build(const char *dir, const char *out_lib,
                                     const ns_mechanisms_build_options *options);

typedef struct ns_mech_library ns_mech_library_t;

/* dlopen a mechanism library and check its catalogue (ABI version). */
NS_API ns_status ns_mech_library_open(const char *path, ns_mech_library_t **out);
NS_API void ns_mech_library_close(ns_mech_library_t *lib);
NS_API int ns_mech_library_count(const ns_mech_library_t *lib);
NS_API const ns_mech_desc *ns_mech_library_get(const ns_mech_library_t *lib, int index);
/* NS_ERR_INVALID_ARGUMENT naming the mechanisms the library has. */
NS_API ns_status ns_mech_library_find(const ns_mech_library_t *lib, const char *name,
                                      const ns_mech_desc **out);

/* Index of a field (parameter, assigned or state) by name; an unknown name
 * gives NS_ERR_INVALID_ARGUMENT with the names the mechanism has. */
NS_API ns_status ns_mech_field_index(const ns_mech_desc *desc, const char *name, int *index);
/* Index of a GLOBAL by name, as above. */
NS_API ns_status ns_mech_global_index(const ns_mech_desc *desc, const char *name, int *index);

/* NEURON's Nernst potential [mV] (nrn_nernst, with its 2019 SI constants):
 * the loop recomputes e after a mechanism wrote a concentration. */
NS_API double ns_mech_nernst(double ci, double co, int charge, double celsius);

#ifdef __cplusplus
}
#endif
#endif
