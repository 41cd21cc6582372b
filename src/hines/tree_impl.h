/* Private: the tree handle. */
#ifndef NS_HINES_TREE_IMPL_H
#define NS_HINES_TREE_IMPL_H

#include "neurosolve/tree.h"

struct ns_tree {
    int32_t size;
    int32_t *parent; /* size entries, parent[0] = -1, parent[i] < i */
};

#endif
