/* Private: the stages of the SWC reader.
 *
 *   swc_lex.c    lines -> records (fields, numbers, column count)
 *   swc_tree.c   records -> one checked tree in depth-first preorder
 *                (ids, parents, cycles, root policy)
 *   swc_radius.c radius policy on the kept tree
 *   swc.c        the public entry points that chain them
 *
 * Memory stays proportional to the number of points: the file is streamed
 * line by line and every index structure is O(n). */
#ifndef NS_MORPH_SWC_IMPL_H
#define NS_MORPH_SWC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "neurosolve/morph.h"

/* Points as read, in file order. pts[i].parent is unused until
 * swc_build_tree() resolves parent ids; pid[i] holds the parent id of the
 * file (negative = root). */
typedef struct swc_records {
    const char *name;     /* for messages */
    double scale;         /* multiplies x, y, z and r as they are read */
    ns_morph_point *pts;
    int64_t *pid;
    int64_t n, cap;
    int64_t line;         /* lines seen so far (1-based number of the last one) */
    char decimal_point;   /* the C library's decimal point in the current locale */
} swc_records;

/* Start an empty record set (no allocation yet). */
void swc_records_init(swc_records *rec, const char *name, double scale);

/* Parse one line (without its '\n'; CRs and other blanks are allowed
 * anywhere). Returns NS_OK for data, comment and blank lines. */
ns_status swc_lex_line(swc_records *rec, const char *line, size_t length);

void swc_records_free(swc_records *rec);

/* What the tree stage reports back. */
typedef struct swc_tree_result {
    int64_t roots;   /* trees in the file */
    int64_t kept;    /* points in the kept tree (now pts[0 .. kept-1]) */
} swc_tree_result;

/* Check ids and parents, order the kept tree depth-first (children in file
 * order) at the front of rec->pts with parent indices filled in, and shrink
 * the array to it. Frees rec->pid. */
ns_status swc_build_tree(swc_records *rec, ns_root_policy policy, swc_tree_result *result);

/* Apply the radius policy to a checked tree (parents before children).
 * *repaired counts the points whose radius was replaced. */
ns_status swc_apply_radius_policy(const char *name, ns_morph_point *pts, int64_t n,
                                  const ns_swc_options *options, int64_t *repaired);

#endif
