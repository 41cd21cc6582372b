TITLE drunge: a DERIVATIVE block by METHOD runge
COMMENT
neurosolve's test file: METHOD runge (scopmath's fourth-order Runge-Kutta) on a
nonlinear pair that reads t (the stages at t, t + dt/2 and t + dt) and writes a
RANGE variable (the block runs once more at the new states, as nocmodl's code).
ENDCOMMENT

NEURON {
    SUFFIX drunge
    NONSPECIFIC_CURRENT i
    RANGE gbar, e, rate
}

UNITS {
    (mA) = (milliamp)
    (mV) = (millivolt)
}

PARAMETER {
    gbar = 0.002 (S/cm2)
    e = 0 (mV)
    tau = 4 (ms)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    rate (/ms)
}

STATE { m h }

INITIAL {
    m = 0.1
    h = 0.8
}

BREAKPOINT {
    SOLVE states METHOD runge
    i = gbar*m*m*h*(v - e) + 1e-4*rate
}

DERIVATIVE states {
    rate = (1 + 0.5*sin(t/3))/tau
    m' = rate*(1/(1 + exp(-(v + 50)/6)) - m) - 0.2*m*m
    h' = (1/(1 + exp((v + 60)/5)) - h)/(2*tau)
}
