TITLE kbstep: a KINETIC block SOLVEd by sparse in BEFORE STEP and in BREAKPOINT
COMMENT
neurosolve's test file: kinit.mod's scheme, stepped by `SOLVE k METHOD sparse` in a BEFORE STEP
block as well as in BREAKPOINT: nocmodl writes the same sparse_thread call in both, so the
states take two implicit steps of dt per time step (BEFORE STEP also runs once at the end of
finitialize).
ENDCOMMENT

NEURON {
    SUFFIX kbstep
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
    SOLVE k METHOD sparse
    i = gbar*o*(v - e)
}

BEFORE STEP {
    SOLVE k METHOD sparse
}

KINETIC k {
    kf = 0.1*exp((v + 40)/15)
    kb = 0.2*exp(-(v + 40)/20)
    ~ c <-> o (kf, kb)
    ~ o + o <-> b (20, 0.05)
    CONSERVE c + o + b = 1
}
