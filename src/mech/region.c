/* Regions of a cell by SWC type (include/neurosolve/cable.h): where a model
 * inserts a mechanism (model.c) and where the parameters' hh and pas apply
 * (sim/params.c). In mech, the lower of the two modules that name them. */
#include "neurosolve/cable.h"

ns_region ns_region_of_swc_type(int32_t swc_type) {
    switch (swc_type) {
    case NS_SWC_SOMA: return NS_REGION_SOMA;
    case NS_SWC_AXON: return NS_REGION_AXON;
    case NS_SWC_BASAL: return NS_REGION_BASAL;
    case NS_SWC_APICAL: return NS_REGION_APICAL;
    default: return NS_REGION_OTHER;
    }
}

const char *ns_region_name(ns_region region) {
    static const char *names[NS_REGION_COUNT] = {"soma", "axon", "basal", "apical", "other"};
    return region >= 0 && region < NS_REGION_COUNT ? names[region] : "unknown";
}
