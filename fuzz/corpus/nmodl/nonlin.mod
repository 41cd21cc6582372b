TITLE nonlin: a NONLINEAR block
COMMENT
neurosolve's test file: a NONLINEAR block (NEURON's nonlin.mod pattern: `~ lhs = rhs`
equations solved by scopmath's newton) in INITIAL and in a PROCEDURE that BREAKPOINT
calls, its solution driving a current; LOCALs and an assignment in the block.
ENDCOMMENT

NEURON {
    SUFFIX nonlin
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
    solve()
    i = gbar*xs*ys*(v - e)
}

PROCEDURE solve() {
    SOLVE equilibrium
}

NONLINEAR equilibrium {
    LOCAL c2
    c1 = 1 + 0.5/(1 + exp(-(v + 50)/5))
    c2 = 0.5
    ~ xs + 0.1*ys*ys = c1
    ~ ys + 0.1*xs*xs*xs = c2 + 0.2*c1
}
