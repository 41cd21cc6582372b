: A synapse whose CONSTRUCTOR keeps a structure of its own (host memory) in a POINTER slot, as
: ModelDB's netrand.inc does (136095: `_p_sop = (double *)ecalloc(...)` behind a #define), and
: sets the conductance scale `made` from it; its DESTRUCTOR reads the structure back, records in
: `freed` whether it still holds what the CONSTRUCTOR wrote, and frees it. On the GPU loop both run
: on the host around the device's copy of the instances (docs/mechanisms.md, "BEFORE, AFTER,
: CONSTRUCTOR"); the device never reaches the structure. Our own test file (the repository's licence).

NEURON {
    POINT_PROCESS CtorSyn
    RANGE gmax, e, made, freed, i
    NONSPECIFIC_CURRENT i
    POINTER sop
}

VERBATIM
typedef struct ctor_store {
    double gmax0; /* gmax when the CONSTRUCTOR ran */
    double scale;
} ctor_store;
#define STORE (*((ctor_store **)&(_p_sop)))
ENDVERBATIM

PARAMETER {
    gmax = 0.002 (uS)
    e = 0 (mV)
    tau = 2 (ms)
}

ASSIGNED {
    v (mV)
    i (nA)
    made
    freed
    sop
}

STATE { g (uS) }

CONSTRUCTOR {
VERBATIM
    _p_sop = (double *)ecalloc(1, sizeof(ctor_store));
    STORE->gmax0 = gmax;
    STORE->scale = 1.5;
    made = STORE->scale * gmax;
ENDVERBATIM
}

DESTRUCTOR {
VERBATIM
    if (STORE) {
        freed = STORE->gmax0 == gmax && STORE->scale == 1.5 ? 1 : -1;
        free(STORE);
        STORE = 0;
    }
ENDVERBATIM
}

INITIAL { g = made }

BREAKPOINT {
    SOLVE state METHOD cnexp
    i = g * (v - e)
}

DERIVATIVE state { g' = -g / tau }

NET_RECEIVE (w (uS)) { g = g + w * made / gmax }
