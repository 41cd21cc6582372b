: area and diam in a density mechanism (neurosolve's test file, docs/mechanisms.md):
: a leak whose conductance follows the segment's area and diameter, and a state
: relaxing to a value set by diam (shell-volume style, as calcium pumps use it)
NEURON {
    SUFFIX geom
    NONSPECIFIC_CURRENT i
    RANGE g, e, gs
}
PARAMETER {
    g = 1e-4 (S/cm2)
    e = -70 (mV)
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    area (um2)
    diam (um)
    gs (S/cm2)
}
STATE { s }
INITIAL {
    s = diam / 10
}
BREAKPOINT {
    SOLVE st METHOD cnexp
    gs = g * area / (3.14159 * diam * diam) * s
    i = gs * (v - e)
}
DERIVATIVE st {
    s' = (diam / 20 - s) / 5 + 1e-3 * (v + 65) * area / 1000
}
