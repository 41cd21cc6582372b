/* NPY reading and writing (npy.h). Every error names the file. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "neurosolve/output.h"
#include "life/npy.h"

static const char *descr_of[] = {"<f8", "<i4", "<i8"};
static const char *names_of[] = {"float64", "int32", "int64"};
static const size_t size_of[] = {8, 4, 8};

const char *ns_npy_dtype_name(ns_npy_dtype t) { return (unsigned)t < 3 ? names_of[t] : "unknown"; }
size_t ns_npy_dtype_size(ns_npy_dtype t) { return (unsigned)t < 3 ? size_of[t] : 0; }

static int little_endian_host(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

ns_status ns_npy_write(const char *path, ns_npy_dtype dtype, int fortran_order, int ndim,
                       const int64_t *shape, const void *data) {
    if (!little_endian_host())
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: NPY writing needs a little-endian host", path);
    if ((unsigned)dtype > 2 || ndim < 1 || ndim > 2)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: NPY dtype %d / ndim %d not supported", path,
                       (int)dtype, ndim);
    char dict[256];
    int len;
    if (ndim == 1)
        len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (%lld,), }",
                       descr_of[dtype], fortran_order ? "True" : "False", (long long)shape[0]);
    else
        len = snprintf(dict, sizeof dict,
                       "{'descr': '%s', 'fortran_order': %s, 'shape': (%lld, %lld), }",
                       descr_of[dtype], fortran_order ? "True" : "False", (long long)shape[0],
                       (long long)shape[1]);
    /* magic (6) + version (2) + length (2) + dict + padding + '\n' = k * 64 */
    const size_t total = ((size_t)10 + (size_t)len + 1 + 63) / 64 * 64;
    const size_t hlen = total - 10;
    char header[320];
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)(hlen & 0xff);
    header[9] = (char)(hlen >> 8);
    memcpy(header + 10, dict, (size_t)len);
    memset(header + 10 + len, ' ', hlen - (size_t)len - 1);
    header[total - 1] = '\n';
    int64_t count = 1;
    for (int d = 0; d < ndim; ++d) count *= shape[d];
    ns_output *o = NULL;
    ns_status s = ns_output_open(path, &o);
    if (s != NS_OK) return s;
    FILE *f = ns_output_stream(o);
    int ok = fwrite(header, 1, total, f) == total;
    if (ok && count > 0) ok = fwrite(data, size_of[dtype], (size_t)count, f) == (size_t)count;
    if (!ok) {
        const int err = errno;
        ns_output_abort(o);
        return ns_fail(NS_ERR_IO, "%s: write failed: %s", path, strerror(err));
    }
    return ns_output_commit(o);
}

/* Value text of `key` in the header dict (points after the colon). */
static const char *find_key(const char *dict, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(dict, pat);
    if (!p) {
        snprintf(pat, sizeof pat, "\"%s\"", key);
        p = strstr(dict, pat);
    }
    if (!p) return NULL;
    p += strlen(pat);
    while (isspace((unsigned char)*p)) ++p;
    if (*p != ':') return NULL;
    ++p;
    while (isspace((unsigned char)*p)) ++p;
    return p;
}

static ns_status parse_header(const char *path, const char *dict, ns_npy_header *h) {
    const char *p = find_key(dict, "descr");
    if (!p || (*p != '\'' && *p != '"'))
        return ns_fail(NS_ERR_PARSE, "%s: NPY header has no 'descr'", path);
    char descr[16] = {0};
    const char quote = *p++;
    size_t n = 0;
    while (*p && *p != quote && n < sizeof descr - 1) descr[n++] = *p++;
    int found = 0;
    for (int t = 0; t < 3; ++t)
        if (strcmp(descr, descr_of[t]) == 0) {
            h->dtype = (ns_npy_dtype)t;
            found = 1;
        }
    if (!found)
        return ns_fail(NS_ERR_UNSUPPORTED,
                       "%s: dtype '%s' is not supported (float64 '<f8', int32 '<i4' or int64 '<i8', "
                       "little-endian)", path, descr);
    p = find_key(dict, "fortran_order");
    if (!p) return ns_fail(NS_ERR_PARSE, "%s: NPY header has no 'fortran_order'", path);
    if (strncmp(p, "True", 4) == 0) h->fortran_order = 1;
    else if (strncmp(p, "False", 5) == 0) h->fortran_order = 0;
    else return ns_fail(NS_ERR_PARSE, "%s: bad 'fortran_order' value", path);
    p = find_key(dict, "shape");
    if (!p || *p != '(') return ns_fail(NS_ERR_PARSE, "%s: NPY header has no 'shape' tuple", path);
    ++p;
    h->ndim = 0;
    h->count = 1;
    for (;;) {
        while (isspace((unsigned char)*p)) ++p;
        if (*p == ')') break;
        if (!isdigit((unsigned char)*p)) return ns_fail(NS_ERR_PARSE, "%s: bad 'shape' tuple", path);
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || v < 0) return ns_fail(NS_ERR_PARSE, "%s: bad dimension in 'shape'", path);
        if (h->ndim >= 2)
            return ns_fail(NS_ERR_UNSUPPORTED, "%s: arrays of more than 2 dimensions are not supported", path);
        h->shape[h->ndim++] = v;
        if (v > 0 && h->count > INT64_MAX / v) return ns_fail(NS_ERR_PARSE, "%s: shape too large", path);
        h->count *= v;
        p = end;
        while (isspace((unsigned char)*p)) ++p;
        if (*p == ',') ++p;
    }
    return NS_OK;
}

ns_status ns_npy_open(const char *path, ns_npy_header *h, FILE **file) {
    *file = NULL;
    memset(h, 0, sizeof *h);
    if (!little_endian_host())
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: NPY reading needs a little-endian host", path);
    FILE *f = fopen(path, "rb");
    if (!f) return ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    unsigned char pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: not an NPY file (bad magic)", path);
    }
    size_t hlen;
    if (pre[6] == 1) {
        hlen = (size_t)pre[8] | ((size_t)pre[9] << 8);
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            fclose(f);
            return ns_fail(NS_ERR_PARSE, "%s: truncated NPY header", path);
        }
        hlen = (size_t)pre[8] | ((size_t)pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
    } else {
        fclose(f);
        return ns_fail(NS_ERR_UNSUPPORTED, "%s: NPY format version %d.%d is not supported", path,
                       pre[6], pre[7]);
    }
    if (hlen > (1u << 20)) {
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: NPY header length %zu is implausible", path, hlen);
    }
    char *dict = malloc(hlen + 1);
    if (!dict) {
        fclose(f);
        return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: NPY header", path);
    }
    if (fread(dict, 1, hlen, f) != hlen) {
        free(dict);
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: truncated NPY header", path);
    }
    dict[hlen] = '\0';
    ns_status s = parse_header(path, dict, h);
    free(dict);
    if (s != NS_OK) {
        fclose(f);
        return s;
    }
    /* The data must be exactly count elements: a short file is truncated,
     * a longer one is not what the header says. */
    const long data_at = ftell(f);
    if (data_at < 0 || fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return ns_fail(NS_ERR_IO, "%s: cannot seek", path);
    }
    const long end = ftell(f);
    const double want = (double)h->count * (double)size_of[h->dtype];
    const double have = (double)(end - data_at);
    if (have != want || fseek(f, data_at, SEEK_SET) != 0) {
        fclose(f);
        return ns_fail(NS_ERR_PARSE, "%s: header says %lld %s elements (%.0f bytes), the file holds %.0f bytes of data",
                       path, (long long)h->count, names_of[h->dtype], want, have);
    }
    *file = f;
    return NS_OK;
}

ns_status ns_npy_read_data(const char *path, FILE *f, const ns_npy_header *h, void *dst) {
    const size_t n = (size_t)h->count;
    const int ok = n == 0 || fread(dst, size_of[h->dtype], n, f) == n;
    fclose(f);
    if (!ok) return ns_fail(NS_ERR_IO, "%s: read failed", path);
    return NS_OK;
}
