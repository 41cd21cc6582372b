/* neurosolve: umbrella header. */
#ifndef NEUROSOLVE_H
#define NEUROSOLVE_H

#include "neurosolve/status.h"
#include "neurosolve/version.h"
#include "neurosolve/backend.h"
#include "neurosolve/device.h"
#include "neurosolve/tree.h"
#include "neurosolve/morph.h"
#include "neurosolve/hines.h"
#include "neurosolve/tridiag.h"
#include "neurosolve/dist.h"
#include "neurosolve/cable.h"
#include "neurosolve/network.h"
#include "neurosolve/life.h"
#include "neurosolve/life_io.h"
#include "neurosolve/output.h"
#include "neurosolve/number.h"
#include "neurosolve/mechanism.h"
#include "neurosolve/nmodl.h"
#include "neurosolve/lfp.h"

#endif
