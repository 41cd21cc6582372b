: A gap junction as NEURON's users write it (the construct of ModelDB's
: gap.mod files: a POINT_PROCESS whose POINTER vgap is set with setpointer to
: the other cell's v); written for neurosolve's tests (test_nmodl_pointer.c,
: validation/nmodl_gap_junction.py). Place one on each cell, each pointing at
: the other's v: a symmetric coupling of conductance 1/r.
NEURON {
    POINT_PROCESS gap
    NONSPECIFIC_CURRENT i
    RANGE r, i
    POINTER vgap
}
PARAMETER { r = 1e10 (megohm) }
ASSIGNED {
    v (millivolt)
    vgap (millivolt)
    i (nanoamp)
}
BREAKPOINT { i = (v - vgap) / r }
