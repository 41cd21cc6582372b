/* Private: the built-in mechanism catalogue (builtin.c). */
#ifndef NS_CABLE_BUILTIN_H
#define NS_CABLE_BUILTIN_H

#include "neurosolve/mechanism.h"

const ns_mech_catalogue *ns_mech_builtin(void);

#endif
