TITLE kinit: a KINETIC block SOLVEd by sparse in INITIAL and in a PROCEDURE
COMMENT
neurosolve's test file: nocmodl writes `SOLVE k METHOD sparse` outside BREAKPOINT as the same
sparse_thread call as BREAKPOINT's, one implicit step of dt from the states there: INITIAL takes
two such steps (one through the PROCEDURE settle), so that the scheme starts off its rest.
ENDCOMMENT

NEURON {
    SUFFIX kinit
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
    SOLVE k METHOD sparse
    settle()
}

BREAKPOINT {
    SOLVE k METHOD sparse
    i = gbar*o*(v - e)
}

PROCEDURE settle() {
    SOLVE k METHOD sparse
}

KINETIC k {
    kf = 0.1*exp((v + 40)/15)
    kb = 0.2*exp(-(v + 40)/20)
    ~ c <-> o (kf, kb)
    ~ o + o <-> b (20, 0.05)
    CONSERVE c + o + b = 1
}
