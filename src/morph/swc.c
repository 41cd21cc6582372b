/* SWC reading: the public entry points. A file is streamed line by line
 * through a growing line buffer (never read whole), each line goes to the
 * lexer, and the records then pass the tree checks, the root policy and the
 * radius policy (docs/swc.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "morph/morph_impl.h"
#include "morph/swc_impl.h"

/* A longer line is not SWC; the cap bounds the line buffer. [bytes] */
#define SWC_LINE_MAX (1u << 20)
/* Read size for streaming. [bytes] */
#define SWC_CHUNK (1u << 16)

void ns_swc_options_init(ns_swc_options *options) {
    if (!options) return;
    options->roots = NS_ROOTS_KEEP_MAIN;
    options->radii = NS_RADIUS_REPAIR;
    options->default_radius = 1.0; /* [um] */
    options->scale = 1.0;
}

static ns_status check_options(const char *name, const ns_swc_options *o) {
    if (o->roots != NS_ROOTS_KEEP_MAIN && o->roots != NS_ROOTS_REJECT)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: unknown root policy %d", name, (int)o->roots);
    if (o->radii != NS_RADIUS_REPAIR && o->radii != NS_RADIUS_REJECT && o->radii != NS_RADIUS_DEFAULT)
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: unknown radius policy %d", name, (int)o->radii);
    if (!(o->scale > 0.0) || !isfinite(o->scale))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: scale %g must be finite and > 0", name, o->scale);
    if (o->radii == NS_RADIUS_DEFAULT && (!(o->default_radius > 0.0) || !isfinite(o->default_radius)))
        return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: default radius %g must be finite and > 0", name,
                       o->default_radius);
    return NS_OK;
}

static ns_status too_long(const swc_records *rec) {
    return ns_fail(NS_ERR_PARSE, "%s:%lld: line longer than %u bytes", rec->name,
                   (long long)rec->line + 1, SWC_LINE_MAX);
}

/* Records -> morphology: tree checks, policies, construction. Consumes rec. */
static ns_status finish(swc_records *rec, const ns_swc_options *o, ns_morph_t **out) {
    if (rec->n == 0) {
        swc_records_free(rec);
        return ns_fail(NS_ERR_EMPTY, "%s: no data lines (%lld lines of comments or blanks)", rec->name,
                       (long long)rec->line);
    }
    int64_t read = rec->n, repaired = 0;
    swc_tree_result tree;
    ns_status st = swc_build_tree(rec, o->roots, &tree);
    if (st == NS_OK) st = swc_apply_radius_policy(rec->name, rec->pts, rec->n, o, &repaired);
    if (st != NS_OK) {
        swc_records_free(rec);
        return st;
    }
    ns_morph_point *pts = rec->pts;
    rec->pts = NULL;
    st = ns_morph_adopt(rec->name, pts, tree.kept, out); /* frees pts on failure */
    if (st != NS_OK) return st;
    (*out)->info.points_read = read;
    (*out)->info.roots = tree.roots;
    (*out)->info.roots_kept = 1;
    (*out)->info.points_dropped = read - tree.kept;
    (*out)->info.radii_repaired = repaired;
    return NS_OK;
}

ns_status ns_swc_parse(const char *text, size_t length, const char *name,
                       const ns_swc_options *options, ns_morph_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_swc_parse: out is NULL");
    *out = NULL;
    if (!name) name = "(memory)";
    if (!text && length > 0) return ns_fail(NS_ERR_INVALID_ARGUMENT, "%s: text is NULL", name);
    ns_swc_options defaults;
    ns_swc_options_init(&defaults);
    const ns_swc_options *o = options ? options : &defaults;
    ns_status st = check_options(name, o);
    if (st != NS_OK) return st;

    swc_records rec;
    swc_records_init(&rec, name, o->scale);
    size_t pos = 0;
    while (pos < length) {
        const char *nl = memchr(text + pos, '\n', length - pos);
        size_t end = nl ? (size_t)(nl - text) : length;
        if (end - pos > SWC_LINE_MAX) st = too_long(&rec);
        else st = swc_lex_line(&rec, text + pos, end - pos);
        if (st != NS_OK) {
            swc_records_free(&rec);
            return st;
        }
        pos = end + 1;
    }
    return finish(&rec, o, out);
}

/* Stream `file` into the lexer: whole lines inside a chunk go straight from
 * the chunk; a line cut by a chunk boundary is assembled in `line`. */
static ns_status stream(FILE *file, swc_records *rec) {
    char *chunk = malloc(SWC_CHUNK);
    char *line = NULL;
    size_t held = 0, cap = 0;
    ns_status st = NS_OK;
    if (!chunk) return ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: read buffer", rec->name);
    for (;;) {
        errno = 0;
        size_t got = fread(chunk, 1, SWC_CHUNK, file);
        if (got == 0) {
            if (ferror(file)) {
                int e = errno;
                st = ns_fail(NS_ERR_IO, "%s: cannot read: %s", rec->name,
                             e ? strerror(e) : "read error");
            }
            break;
        }
        size_t pos = 0;
        while (st == NS_OK && pos < got) {
            const char *nl = memchr(chunk + pos, '\n', got - pos);
            size_t end = nl ? (size_t)(nl - chunk) : got;
            size_t piece = end - pos;
            if (held + piece > SWC_LINE_MAX) {
                st = too_long(rec);
                break;
            }
            if (nl && held == 0) {
                st = swc_lex_line(rec, chunk + pos, piece);
            } else {
                if (held + piece > cap) {
                    size_t want = cap ? cap : 256;
                    while (want < held + piece) want *= 2;
                    char *grown = realloc(line, want);
                    if (!grown) {
                        st = ns_fail(NS_ERR_OUT_OF_MEMORY, "%s: line buffer", rec->name);
                        break;
                    }
                    line = grown;
                    cap = want;
                }
                memcpy(line + held, chunk + pos, piece);
                held += piece;
                if (nl) {
                    st = swc_lex_line(rec, line, held);
                    held = 0;
                }
            }
            pos = end + 1;
        }
        if (st != NS_OK) break;
    }
    if (st == NS_OK && held > 0) st = swc_lex_line(rec, line, held); /* no newline at the end */
    free(chunk);
    free(line);
    return st;
}

ns_status ns_swc_read(const char *path, const ns_swc_options *options, ns_morph_t **out) {
    if (!out) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_swc_read: out is NULL");
    *out = NULL;
    if (!path) return ns_fail(NS_ERR_INVALID_ARGUMENT, "ns_swc_read: path is NULL");
    ns_swc_options defaults;
    ns_swc_options_init(&defaults);
    const ns_swc_options *o = options ? options : &defaults;
    ns_status st = check_options(path, o);
    if (st != NS_OK) return st;

    errno = 0;
    FILE *file = fopen(path, "rb");
    if (!file) {
        int e = errno;
        return ns_fail(NS_ERR_IO, "%s: cannot open: %s", path, e ? strerror(e) : "fopen failed");
    }
    swc_records rec;
    swc_records_init(&rec, path, o->scale);
    st = stream(file, &rec);
    fclose(file);
    if (st != NS_OK) {
        swc_records_free(&rec);
        return st;
    }
    return finish(&rec, o, out);
}
