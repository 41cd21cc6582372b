TITLE A slow conductance whose DERIVATIVE block INITIAL and a PROCEDURE solve

COMMENT
Written for neurosolve's tests (the project's licence). INITIAL starts m at 0 and SOLVEs the
BREAKPOINT's block by derivimplicit: with BREAKPOINT's cnexp, nocmodl runs the block's cnexp
update there (one step of dt); settle(), a PROCEDURE that INITIAL calls, SOLVEs it once more (before
the DERIVATIVE block, as nocmodl requires).
(nocmodl 9.0.2 does not return on a file where INITIAL or a PROCEDURE SOLVEs a second
DERIVATIVE block, one that BREAKPOINT does not solve.)
ENDCOMMENT

NEURON {
    SUFFIX dinit
    NONSPECIFIC_CURRENT i
    RANGE gbar, e, i
}

UNITS {
    (mV) = (millivolt)
    (mA) = (milliamp)
    (S) = (siemens)
}

PARAMETER {
    gbar = 0.002 (S/cm2)
    e = -80 (mV)
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    minf
    mtau (ms)
}

STATE { m }

INITIAL {
    m = 0
    SOLVE states METHOD derivimplicit
    settle()
}

BREAKPOINT {
    SOLVE states METHOD cnexp
    i = gbar * m * (v - e)
}

PROCEDURE settle() {
    SOLVE states METHOD derivimplicit
}

DERIVATIVE states {
    rates(v)
    m' = (minf - m) / mtau
}

PROCEDURE rates(v (mV)) {
    minf = 1 / (1 + exp(-(v + 50) / 8))
    mtau = 2 + 20 / (1 + exp((v + 60) / 10))
}
