TITLE kflow: forms nocmodl accepts that published files use
COMMENT
neurosolve's test file: a KINETIC scheme by METHOD sparse with a flow out of
a state to nothing (`~ g -> (rate)`, ModelDB's alphasynkin.mod), USEION ...
CHARGE (nocmodl's synonym of VALENCE), PROTECT and MUTEXLOCK/MUTEXUNLOCK
(thread-safety markers), and a GLOBAL declared nowhere that this THREADSAFE
file assigns (CLSTmainen.mod's tadj: nocmodl makes it a per-thread global; not
where the assignment is PROTECTed: then it stays a global, which needs a declaration).
ENDCOMMENT

NEURON {
    SUFFIX kflow
    USEION na READ ena WRITE ina CHARGE 1
    RANGE gbar, tau1, tau2, gmax
    GLOBAL tadj
    THREADSAFE
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gbar = 0.001 (S/cm2)
    tau1 = 2 (ms)
    tau2 = 6 (ms)
    kin = 0.02 (/ms)
    q10 = 3
}

ASSIGNED {
    v (mV)
    ena (mV)
    ina (mA/cm2)
    celsius (degC)
    gmax (S/cm2)
}

STATE { a g }

INITIAL {
    a = 0
    g = 0
}

BREAKPOINT {
    SOLVE scheme METHOD sparse
    ina = gmax*g*(v - ena)
}

KINETIC scheme {
    rates()
    ~ a << (kin*tadj/(1 + exp(-(v + 50)/5)))
    ~ a <-> g (tadj/tau1, 0)
    ~ g -> (tadj/tau2)
}

PROCEDURE rates() {
    tadj = q10^((celsius - 6.3)/10)
    MUTEXLOCK
    PROTECT gmax = gbar*tadj
    MUTEXUNLOCK
}
