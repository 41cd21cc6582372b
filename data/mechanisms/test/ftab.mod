TITLE A potassium channel whose rates are FUNCTION_TABLEs (neurosolve's translator tests)
COMMENT
ninf from a table over v given by its abscissae (uneven), ntau from a table over v and a second
argument given by even ranges: NEURON's two forms of hoc's table_NAME(), interpolated linearly.
ENDCOMMENT

NEURON {
    SUFFIX ftab
    USEION k READ ek WRITE ik
    RANGE gbar, ninf, ntau
}

PARAMETER {
    gbar = 0.01 (S/cm2)
    kq = 2.5
}

ASSIGNED {
    v (mV)
    ek (mV)
    ik (mA/cm2)
    ninf
    ntau (ms)
}

STATE { n }

FUNCTION_TABLE tabninf(v (mV))
FUNCTION_TABLE tabntau(v (mV), q) (ms)

BREAKPOINT {
    SOLVE states METHOD cnexp
    ik = gbar * n * n * n * n * (v - ek)
}

INITIAL {
    rates(v)
    n = ninf
}

DERIVATIVE states {
    rates(v)
    n' = (ninf - n) / ntau
}

PROCEDURE rates(v (mV)) {
    ninf = tabninf(v)
    ntau = tabntau(v, kq)
}
