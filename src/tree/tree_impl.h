/* Private: the tree handle (src/tree: the module below morph and every solver). */
#ifndef NS_TREE_TREE_IMPL_H
#define NS_TREE_TREE_IMPL_H

#include "neurosolve/tree.h"

struct ns_tree {
    int32_t size;
    int32_t *parent; /* size entries, parent[0] = -1, parent[i] < i */
};

#endif
