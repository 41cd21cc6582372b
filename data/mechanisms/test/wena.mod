: WRITE ena (neurosolve's test file): the sodium reversal potential set by a
: mechanism without a current (NEURON's ion style "e written": no Nernst), read
: by hh. Without currents its BREAKPOINT runs after the step's v update
: (nocmodl's nrn_state).
NEURON {
    SUFFIX wena
    USEION na READ nai, nao WRITE ena
    RANGE shift, depth
}
PARAMETER {
    shift = -5 (mV)
    depth = 10 (mV)
}
ASSIGNED {
    v (mV)
    ena (mV)
    nai (mM)
    nao (mM)
}
INITIAL {
    ena = shift + 25 * log(nao / nai)
}
BREAKPOINT {
    ena = shift + 25 * log(nao / nai) - depth * (1 - exp(-t / 10)) + 0.01 * v
}
