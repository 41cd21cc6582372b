/* Private: a small reader and writer of NumPy's NPY format (format versions
 * 1.0-3.0 read, 1.0 written): the magic "\x93NUMPY", a version, a header
 * length, a Python dict literal {'descr': '<f8', 'fortran_order': False,
 * 'shape': (n,), } padded with spaces and a newline to a multiple of 64
 * bytes, then the raw little-endian data. Only the dtypes neurosolve writes
 * are supported: float64 '<f8', int32 '<i4', int64 '<i8'. */
#ifndef NS_LIFE_NPY_H
#define NS_LIFE_NPY_H

#include <stdint.h>
#include <stdio.h>

#include "neurosolve/status.h"

typedef enum ns_npy_dtype { NS_NPY_F8 = 0, NS_NPY_I4 = 1, NS_NPY_I8 = 2 } ns_npy_dtype;

typedef struct ns_npy_header {
    ns_npy_dtype dtype;
    int fortran_order;
    int ndim;          /* 0..2 supported */
    int64_t shape[2];
    int64_t count;     /* product of the shape */
} ns_npy_header;

const char *ns_npy_dtype_name(ns_npy_dtype dtype); /* "float64", ... */
size_t ns_npy_dtype_size(ns_npy_dtype dtype);

/* Write `data` (count = product of shape elements) as an NPY file. */
ns_status ns_npy_write(const char *path, ns_npy_dtype dtype, int fortran_order, int ndim,
                       const int64_t *shape, const void *data);

/* Open and parse the header; on success *file is positioned at the data and
 * the data size has been checked against the file size. */
ns_status ns_npy_open(const char *path, ns_npy_header *header, FILE **file);
/* Read count elements of the header's dtype into dst and close the file. */
ns_status ns_npy_read_data(const char *path, FILE *file, const ns_npy_header *header, void *dst);

#endif
