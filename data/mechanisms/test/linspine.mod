TITLE linspine: a LINEAR block (NEURON's expsynspine.mod pattern, as a density mechanism)
COMMENT
neurosolve's test file: `LINEAR name SOLVEFOR i, vsp` solved in a PROCEDURE that
BREAKPOINT calls (so in the current's evaluations, as in NEURON) and in INITIAL;
the NONSPECIFIC_CURRENT i declared as a STATE (the unknown of the linear system).
A conductance g in series with a spine neck resistance rsp: i = g (vsp - e) and
rsp i = v - vsp.
ENDCOMMENT

NEURON {
    SUFFIX linspine
    NONSPECIFIC_CURRENT i
    RANGE gmax, e, rsp, vsp, g
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gmax = 0.004 (S/cm2)
    e = 0 (mV)
    rsp = 400 (ohm cm2)
    tau = 3 (ms)
}

ASSIGNED {
    v (mV)
}

STATE {
    g (S/cm2)
    i (mA/cm2)
    vsp (mV)
}

INITIAL {
    g = 0
    SOLVE spine
}

BREAKPOINT {
    SOLVE state METHOD cnexp
    linspine()
}

DERIVATIVE state {
    g' = (gmax/(1 + exp(-(v + 55)/4)) - g)/tau
}

PROCEDURE linspine() {
    SOLVE spine
}

LINEAR spine SOLVEFOR i, vsp {
    ~ rsp * i = v - vsp
    ~ i = g*vsp - g*e
}
