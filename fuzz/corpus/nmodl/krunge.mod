TITLE keuler: a KINETIC scheme by METHOD runge
COMMENT
neurosolve's test file: NEURON's derivative form of a KINETIC block (nocmodl's
kinetic_intmethod): the fluxes into each state over its COMPARTMENT size, a
second-order reaction, a CONSERVE that euler ignores (as nocmodl, which says so),
rates written to RANGE variables (the block runs once more at the new states).
This is keuler.mod with SUFFIX krunge and METHOD runge (fourth-order Runge-Kutta).
ENDCOMMENT

NEURON {
    SUFFIX krunge
    NONSPECIFIC_CURRENT i
    RANGE gbar, e, kf, kb
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gbar = 0.003 (S/cm2)
    e = -20 (mV)
    vol = 2
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    kf (/ms)
    kb (/ms)
}

STATE { c o b }

INITIAL {
    c = 1
    o = 0
    b = 0
}

BREAKPOINT {
    SOLVE k METHOD runge
    i = gbar*o*(v - e)
}

KINETIC k {
    kf = 0.1*exp((v + 40)/15)
    kb = 0.2*exp(-(v + 40)/20)
    COMPARTMENT vol {o}
    ~ c <-> o (kf, kb)
    ~ o + o <-> b (0.5, 0.05)
    CONSERVE c + o + b = 1
}
