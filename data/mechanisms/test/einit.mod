: A concentration read (neurosolve's test file; the pattern of ModelDB 267088's CLSTmainen.mod,
: whose Na-K pump reads nai and ko): NEURON's ion style then computes ena from nai and nao by
: Nernst at finitialize (nrn_promote: a concentration read makes e computed, einit), where no
: mechanism writes nai, so the channel runs at ena = 63.6 mV (6.3 degC), not at the default 50.
NEURON {
    SUFFIX einit
    USEION na READ ena, nai WRITE ina
    RANGE g, ipump
}
PARAMETER {
    g = 2e-4 (S/cm2)
    imax = 1e-3 (mA/cm2)
}
ASSIGNED {
    v (mV)
    ena (mV)
    nai (mM)
    ina (mA/cm2)
    ipump (mA/cm2)
}
BREAKPOINT {
    ipump = imax * nai / (nai + 10)
    ina = g * (v - ena) + 3 * ipump
}
