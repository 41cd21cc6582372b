/* Private: the streaming tractogram reader shared by trk.c and tck.c. */
#ifndef NS_LIFE_TRACTS_IMPL_H
#define NS_LIFE_TRACTS_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include "neurosolve/life_io.h"

struct ns_tracts {
    char *path;
    ns_tracts_format format;
    FILE *f;
    uint64_t size, pos;     /* file size and bytes consumed [bytes] */
    uint64_t data_offset;   /* first byte of the first streamline */
    int64_t declared, index;
    int ended;
    double to_world[4][4];
    /* trk */
    int swap;               /* big-endian file */
    int n_scalars, n_props;
    unsigned char header[1000];
    /* tck */
    int f64;                /* Float64 data */
    /* trx (trx.c): the archive's arrays, the offsets and the positions stream */
    struct ns_trx *trx;
    /* buffers */
    unsigned char *raw;     /* the current record as stored */
    size_t raw_len, raw_cap;
    double *pts;
    int64_t pts_cap;
};

ns_status ns_trk_open(ns_tracts_t *t);
ns_status ns_trk_next_raw(ns_tracts_t *t, int64_t *n_points, int *end); /* fills raw */
ns_status ns_trk_decode(ns_tracts_t *t, int64_t n_points);             /* raw -> pts (world) */
ns_status ns_tck_open(ns_tracts_t *t);
ns_status ns_tck_next(ns_tracts_t *t, int64_t *n_points, int *end);
ns_status ns_tck_write_subset(ns_tracts_t *t, const char *out_path, const uint8_t *keep, int64_t n,
                              int64_t *written);

ns_status ns_trx_open(ns_tracts_t *t, int is_dir); /* t->f: the archive (NULL for a folder) */
ns_status ns_trx_next(ns_tracts_t *t, int64_t *n_points, int *end);   /* raw (stored dtype) and pts */
ns_status ns_trx_rewind(ns_tracts_t *t);
void ns_trx_close(ns_tracts_t *t);
ns_status ns_trx_write_subset(ns_tracts_t *t, const char *out_path, const uint8_t *keep, int64_t n,
                              int64_t *written);

/* Grow t->pts to hold n points. */
ns_status ns_tracts_reserve(ns_tracts_t *t, int64_t n);
/* Read exactly n bytes at the current position or fail naming `what`. */
ns_status ns_tracts_read(ns_tracts_t *t, void *dst, size_t n, const char *what, int *eof_at_start);

#endif
