: WRITE ena with a current (neurosolve's test file): the reversal potential
: follows v, the mechanism's own sodium current uses it; NEURON stores it to
: the ion after the current's evaluation (nrn_cur), hh reads it a step later.
NEURON {
    SUFFIX wenai
    USEION na READ nai WRITE ena, ina
    RANGE g
}
PARAMETER {
    g = 2e-3 (S/cm2)
}
ASSIGNED {
    v (mV)
    ena (mV)
    nai (mM)
    ina (mA/cm2)
}
INITIAL {
    ena = 45
}
BREAKPOINT {
    ena = 45 + 0.05 * v + 0.01 * nai
    ina = g * (v - ena)
}
