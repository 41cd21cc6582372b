TITLE nonlinbp: a NONLINEAR block SOLVEd in BREAKPOINT
COMMENT
neurosolve's test file (nonlin.mod with the SOLVE directly in BREAKPOINT): nocmodl moves
every SOLVE of BREAKPOINT to nrn_state, so the block is solved once a step after the new v
(in nonlin.mod's PROCEDURE, with the current, at v + 0.001 and v).
ENDCOMMENT

NEURON {
    SUFFIX nonlinbp
    NONSPECIFIC_CURRENT i
    RANGE gbar, e
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gbar = 0.0005 (S/cm2)
    e = 20 (mV)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    c1
}

STATE { xs ys }

INITIAL {
    xs = 1
    ys = 0.5
    SOLVE equilibrium
}

BREAKPOINT {
    SOLVE equilibrium
    i = gbar*xs*ys*(v - e)
}

NONLINEAR equilibrium {
    LOCAL c2
    c1 = 1 + 0.5/(1 + exp(-(v + 50)/5))
    c2 = 0.5
    ~ xs + 0.1*ys*ys = c1
    ~ ys + 0.1*xs*xs*xs = c2 + 0.2*c1
}
