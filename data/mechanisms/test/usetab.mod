: usetable read as a name (neurosolve's test file, docs/mechanisms.md): NEURON's one flag of
: the mechanism's TABLEs (usetable_usetab in hoc, 1 by default), here INITIAL's choice of m's
: start, as ModelDB's bg.inc reads it; and a PROCEDURE called as a value
NEURON {
    SUFFIX usetab
    NONSPECIFIC_CURRENT i
    RANGE gbar
}
PARAMETER {
    gbar = 0.002 (S/cm2)
    e = -80 (mV)
}
ASSIGNED {
    v (mV)
    i (mA/cm2)
    minf
    tau (ms)
}
STATE { m }
INITIAL {
    minf = rates(v) : rates sets minf, then the call's value, 0, replaces it (nocmodl's procedures
                    : return 0; ModelDB's NMDA.mod: B = mgblock(v))
    if (usetable == 0) {
        m = 1
    } else {
        m = minf + 0.25
    }
}
BREAKPOINT {
    SOLVE states METHOD cnexp
    i = gbar * m * (v - e)
}
DERIVATIVE states {
    rates(v)
    m' = (minf - m) / tau
}
PROCEDURE rates(v (mV)) {
    TABLE minf, tau FROM -100 TO 100 WITH 200
    minf = 1 / (1 + exp(-(v + 55) / 8))
    tau = 1 + 5 * exp(-((v + 50) / 20)^2)
}
