: area in a point process (neurosolve's test file, docs/mechanisms.md): a
: conductance given per membrane area, scaled by its segment's area [um2]
NEURON {
    POINT_PROCESS geompp
    NONSPECIFIC_CURRENT i
    RANGE gd, e, i
}
PARAMETER {
    gd = 1e-4 (S/cm2)
    e = 0 (mV)
}
ASSIGNED {
    v (mV)
    i (nA)
    area (um2)
}
BREAKPOINT {
    i = 1e-2 * gd * area * (v - e)
}
